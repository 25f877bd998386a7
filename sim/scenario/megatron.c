/* megatron.c - reading a Megatron-LM argument list, or the arguments of a
 * launch script's training command (megatron.h).
 *
 * An argument list is read the way bash would split a launch script's
 * argument lines, without running anything: `#` comments, backslash-newline
 * continuations, single and double quotes, `NAME=(` ... `)` array
 * brackets and `NAME=value` assignments are understood; command words
 * (torchrun, python, pretrain_gpt.py) are skipped; a shell variable is
 * never expanded (a launch script's are: scenario/mgscript.c): as the value
 * of a costless argument it is left alone, anywhere else it is refused,
 * naming it.  Which arguments are mapped, costless or not modeled is the
 * table of megatron_args.c; every argument mmsim cannot take is gathered
 * into one error.
 *
 * The defaults are Megatron-LM's (megatron/training/arguments.py at
 * NVIDIA/Megatron-LM d98e8a6): ffn 4h, or int(8h/3 / 64) x 64 with
 * --swiglu; kv_channels h / heads; vocabulary padded to a multiple of
 * make-vocab-size-divisible-by (128) x tp (training/vocab_utils.py); the
 * GPT-2 BPE tokenizer's 50,257 tokens when no --vocab-size is given;
 * learned absolute positions, LayerNorm, biases on; fp32 unless --bf16,
 * --fp16 or --fp8-format (mmsim refuses fp32: it has no fp32 peak tables);
 * tp = pp = cp = ep = 1; no recompute; no distributed optimizer.
 * A launch script of the multimodal example (examples/multimodal/train.py)
 * gives an MLLM instead: its arguments looked up in megatron_mm.c's table
 * first, the tower, projector and language model as its config.py and
 * model.py build them (read_mllm, map_mllm).
 * Not for: scenario validation (the scenario loader checks what this maps). */
#include "scenario/megatron.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fp8.h"
#include "scenario/megatron_args.h"
#include "scenario/megatron_mm.h"
#include "scenario/mgscript.h"
#include "scenario/scenario.h"
#include "scenario/sim.h"
#include "scenario/source.h"

/* ---- splitting the file into words ---------------------------------------- */

typedef mm_mg_word word;
typedef mm_mg_words words;

static int push_word(words *ws, const char *buf, size_t len, int line)
{
    return mm_mg_words_push(ws, buf, len, line);
}

/* Splits text into words as bash does (no expansion). */
static int split(const char *path, const char *text, words *ws, mm_err *err)
{
    char cur[4096];
    size_t len = 0;
    int line = 1, start_line = 1;
    bool in_word = false;
    char quote = 0;
    for (const char *p = text;; p++) {
        char c = *p;
        if (!c) {
            if (quote)
                return mm_err_set(err, MM_EINPUT, path, start_line, "", "unterminated %c quote", quote);
            break;
        }
        if (quote) {
            if (c == quote) {
                quote = 0;
                continue;
            }
            if (c == '\n')
                line++;
            if (quote == '"' && c == '\\' && p[1] && strchr("\"\\$`", p[1]))
                c = *++p;
            if (len + 1 < sizeof cur)
                cur[len++] = c;
            continue;
        }
        if (c == '\\' && p[1] == '\n') { /* continuation */
            p++;
            line++;
            continue;
        }
        if (c == '#' && !in_word) { /* a comment runs to the end of the line */
            while (p[1] && p[1] != '\n')
                p++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';') {
            if (in_word && push_word(ws, cur, len, start_line))
                return mm_err_set(err, MM_EINTERNAL, path, line, "", "out of memory");
            in_word = false;
            len = 0;
            if (c == '\n')
                line++;
            continue;
        }
        if (!in_word) {
            in_word = true;
            start_line = line;
        }
        if (c == '\'' || c == '"') {
            quote = c;
            continue;
        }
        if (c == '\\' && p[1])
            c = *++p;
        if (len + 1 < sizeof cur)
            cur[len++] = c;
    }
    if (in_word && push_word(ws, cur, len, start_line))
        return mm_err_set(err, MM_EINTERNAL, path, line, "", "out of memory");
    return 0;
}

/* ---- the arguments mmsim knows: megatron_args.c ------------------------------ */

/* ---- collecting the values -------------------------------------------------- */

typedef struct seen {
    char name[64];
    char value[160];
    int line;
} seen;

typedef struct reader {
    const char *path;
    seen s[256];
    int n;
    mm_megatron *mg;
    mm_err *err;
    bool mm; /* examples/multimodal/train.py's list: its table first, an MLLM out */
    bool save; /* --save given (a costless path, not kept in s) */
} reader;

/* The run's length and periodic work (map_run): a value the reader cannot
 * know (a shell variable, an undecided branch) leaves that work uncharged,
 * with a note, rather than refusing the list: none changes an iteration. */
static bool run_arg(const char *name)
{
    return !strcmp(name, "--train-iters") || !strcmp(name, "--log-interval") || !strcmp(name, "--eval-interval") ||
           !strcmp(name, "--eval-iters") || !strcmp(name, "--save-interval");
}

static const seen *get(const reader *r, const char *name)
{
    const seen *last = NULL; /* argparse: the last occurrence wins */
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->s[i].name, name))
            last = &r->s[i];
    return last;
}

static int bad(const reader *r, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(const reader *r, const char *name, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const seen *s = get(r, name);
    return mm_err_set(r->err, MM_EINPUT, r->path, s ? s->line : 0, name, "%s", msg);
}

/* An integer argument from lo up, or def when absent. */
static int get_long(const reader *r, const char *name, long lo, long def, long *out)
{
    const seen *s = get(r, name);
    if (!s) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long v = strtol(s->value, &end, 10);
    if (!s->value[0] || *end || errno || v < lo || v > (1L << 40))
        return bad(r, name, "expects a whole number >= %ld, got '%s'", lo, s->value);
    *out = v;
    return 0;
}

static const char *get_str(const reader *r, const char *name, const char *def)
{
    const seen *s = get(r, name);
    return s ? s->value : def;
}

static bool has(const reader *r, const char *name)
{
    return get(r, name) != NULL;
}

static void note(mm_megatron *mg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(mm_megatron *mg, const char *fmt, ...)
{
    if (mg->n_notes == MM_MG_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(mg->notes[mg->n_notes++], sizeof mg->notes[0], fmt, ap);
    va_end(ap);
}

/* An override, noted with the argument it came from (or, when that
 * argument is absent, as Megatron-LM's default for it). */
static void set(const reader *r, const char *from, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set(const reader *r, const char *from, const char *key, const char *fmt, ...)
{
    char v[120];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    mm_megatron *mg = r->mg;
    if (mg->n_sets < MM_MG_MAX_SETS) {
        const seen *sn = from[0] == '-' ? get(r, from) : NULL;
        snprintf(mg->set_from[mg->n_sets], sizeof mg->set_from[0], "%s", sn ? from : "");
        mg->set_line[mg->n_sets] = sn ? sn->line : 0;
        snprintf(mg->sets[mg->n_sets++], sizeof mg->sets[0], "%s=%s", key, v);
    }
    if (from[0] == '(' || has(r, from))
        note(mg, "%s -> %s: %s", from, key, v);
    else
        note(mg, "(no %s: Megatron's default) -> %s: %s", from, key, v);
}

/* Arguments mmsim cannot take, gathered so that one message names them
 * all (a user fixes a launch script once, not once per run). */
typedef struct problems {
    int n;
    int first_line;
    char first[64];
    char text[400];
    size_t used;
    int dropped;
    char last_why[200];
} problems;

static void problem(problems *pb, int line, const char *name, const char *why)
{
    if (pb->n++ == 0) {
        pb->first_line = line;
        snprintf(pb->first, sizeof pb->first, "%s", name);
    }
    char one[320];
    bool same = !strncmp(pb->last_why, why, sizeof pb->last_why - 1);
    snprintf(one, sizeof one, "%sline %d %s%s%s", pb->used ? "; " : "", line, name, same ? "" : ": ",
             same ? " (the same)" : why);
    size_t len = strlen(one);
    if (pb->used + len + 1 >= sizeof pb->text) {
        pb->dropped++;
        return;
    }
    memcpy(pb->text + pb->used, one, len + 1);
    pb->used += len;
    snprintf(pb->last_why, sizeof pb->last_why, "%s", why);
}

static int report(const reader *r, const problems *pb)
{
    if (!pb->n)
        return 0;
    char more[48] = "";
    if (pb->dropped)
        snprintf(more, sizeof more, "; and %d more", pb->dropped);
    return mm_err_set(r->err, MM_EINPUT, r->path, pb->first_line, pb->first, "%d argument%s mmsim cannot take: %s%s",
                      pb->n, pb->n == 1 ? "" : "s", pb->text, more);
}

#define WHY_UNKNOWN                                                                                                    \
    "not in mmsim's table of Megatron-LM's arguments (docs/megatron.md), so whether it changes the cost is unknown"

/* Walks the words: each option is looked up, its value taken, costless
 * ones noted, and every one mmsim cannot take gathered into one error. */
static int collect(reader *r, const words *ws)
{
    problems pb = {0};
    for (int i = 0; i < ws->n; i++) {
        const char *w = ws->w[i].text;
        int line = ws->w[i].line;
        size_t wl = strlen(w);
        if (!strcmp(w, "(") || !strcmp(w, ")") || (wl > 2 && !strcmp(w + wl - 2, "=(")))
            continue; /* bash array brackets */
        if (strncmp(w, "--", 2) != 0) {
            if (w[0] == '$')
                problem(&pb, line, w,
                        "a shell variable standing for arguments is not expanded: write the arguments it holds");
            continue; /* a command word (torchrun, python, pretrain_gpt.py) or NAME=value */
        }
        char name[64];
        const char *eq = strchr(w, '=');
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - w) : (int)wl, w);
        const mm_mg_arg *d = r->mm ? mm_mg_mm_arg_find(name) : NULL;
        if (!d)
            d = mm_mg_arg_find(name);
        const char *value = "";
        int und = ws->w[i].undecided; /* the name's or its value's undecided branch */
        bool takes = d ? d->arity == MG_VALUE : eq != NULL || (i + 1 < ws->n && strncmp(ws->w[i + 1].text, "--", 2));
        if (takes) {
            if (eq)
                value = eq + 1;
            else if (i + 1 < ws->n && strncmp(ws->w[i + 1].text, "--", 2) != 0) {
                value = ws->w[++i].text;
                und = und ? und : ws->w[i].undecided;
            }
            else if (d) {
                problem(&pb, line, name, "needs a value");
                continue;
            }
        } else if (eq) {
            problem(&pb, line, name, "takes no value");
            continue;
        }
        if (!d) {
            problem(&pb, line, name, WHY_UNKNOWN);
            continue;
        }
        if (d->cls == MG_NOT_MODELED) {
            problem(&pb, line, name, d->why);
            continue;
        }
        if (d->cls == MG_COSTLESS) {
            r->save = r->save || !strcmp(name, "--save");
            note(r->mg, "%s: costless, accepted (%s)", name, d->why);
            continue;
        }
        if (run_arg(name) && (und || strchr(value, '$'))) {
            note(r->mg, "%s %.60s: a value mmsim cannot read (a shell variable or an undecided branch): its "
                 "periodic work is not charged", name, value);
            continue;
        }
        if (und) {
            char why[200];
            snprintf(why, sizeof why, "it comes from a branch of the `if` on line %d, whose test mmsim cannot "
                     "decide: write the branch to simulate", und);
            problem(&pb, line, name, why);
            continue;
        }
        if (strchr(value, '$')) {
            char why[200];
            snprintf(why, sizeof why, "its value '%.60s' is a shell variable, which is not expanded: write the value",
                     value);
            problem(&pb, line, name, why);
            continue;
        }
        if (r->n == (int)(sizeof r->s / sizeof r->s[0])) {
            problem(&pb, line, name, "more mapped arguments than mmsim keeps");
            continue;
        }
        seen *s = &r->s[r->n++];
        snprintf(s->name, sizeof s->name, "%s", name);
        snprintf(s->value, sizeof s->value, "%s", value);
        s->line = line;
    }
    return report(r, &pb);
}

/* ---- the model ----------------------------------------------------------------- */

typedef struct shape {
    long layers, hidden, heads, groups, kv, ffn, seq, maxpos, vocab, experts, topk, moe_ffn, shared_ffn;
    bool swiglu, untie, rope, gqa, bias, qkv_bias, shared_gate;
} shape;

/* The vocabulary: --vocab-size, or GPT-2 BPE's for its tokenizer, padded
 * as Megatron-LM pads it (a multiple of --make-vocab-size-divisible-by x
 * tp) unless --no-pad-vocab-size or --padded-vocab-size say otherwise; a
 * part of read_shape. */
static int read_vocab(const reader *r, long tp, long div, shape *m)
{
    int rc;
    long vocab;
    if (has(r, "--vocab-size")) {
        if ((rc = get_long(r, "--vocab-size", 1, 0, &vocab)))
            return rc;
    } else {
        const char *tok = get_str(r, "--tokenizer-type", "GPT2BPETokenizer");
        if (strcmp(tok, "GPT2BPETokenizer") != 0)
            return bad(r, has(r, "--tokenizer-type") ? "--tokenizer-type" : "--vocab-size",
                       "the vocabulary of tokenizer %s is not known without reading its files: give --vocab-size",
                       tok);
        vocab = 50257; /* GPT-2 BPE (Radford et al. 2019, gpt2-vocab.json) */
        note(r->mg, "vocabulary: GPT-2 BPE, 50257 tokens (no --vocab-size)");
    }
    long mult = has(r, "--no-pad-vocab-size") ? 1 : div * tp;
    m->vocab = (vocab + mult - 1) / mult * mult;
    if (has(r, "--padded-vocab-size") && (rc = get_long(r, "--padded-vocab-size", 1, 0, &m->vocab)))
        return rc; /* the padded size given outright */
    if (m->vocab != vocab)
        note(r->mg, "vocabulary padded %ld -> %ld (multiple of %ld x tp %ld, as Megatron-LM pads it)", vocab, m->vocab,
             div, tp);
    return 0;
}

/* Megatron-Core's SharedExpertMLP (megatron/core/transformer/moe/
 * shared_experts.py at d98e8a64): an MLP of --moe-shared-expert-
 * intermediate-size every token passes through, with --moe-shared-expert-
 * gate a sigmoid gate Linear(h, 1) on its output.  Written as the Hugging
 * Face family of the same layout: Qwen2-MoE with the gate, DeepSeek-MoE
 * (n_shared_experts routed-width experts) without it; a part of
 * read_shape. */
static int read_shared(const reader *r, shape *m)
{
    int rc;
    if ((rc = get_long(r, "--moe-shared-expert-intermediate-size", 1, 0, &m->shared_ffn)))
        return rc;
    m->shared_gate = has(r, "--moe-shared-expert-gate");
    if (!m->shared_ffn) {
        if (m->shared_gate)
            return bad(r, "--moe-shared-expert-gate", "without --moe-shared-expert-intermediate-size: no shared "
                       "expert to gate");
        return 0;
    }
    if (!m->experts)
        return bad(r, "--moe-shared-expert-intermediate-size", "without --num-experts: no MoE layer to share");
    long w = m->moe_ffn ? m->moe_ffn : m->ffn;
    if (!m->shared_gate && m->qkv_bias)
        return bad(r, "--add-qkv-bias", "with an ungated shared expert (DeepSeek-MoE's layout, which has no "
                   "Q/K/V-only biases): not modeled");
    if (!m->shared_gate && m->shared_ffn % w)
        return bad(r, "--moe-shared-expert-intermediate-size", "%ld is not a multiple of the routed experts' width "
                   "%ld: without --moe-shared-expert-gate the shared expert is written as DeepSeek-MoE's "
                   "n_shared_experts routed-width experts", m->shared_ffn, w);
    return 0;
}

static int read_shape(const reader *r, long tp, shape *m)
{
    int rc;
    const char *req[] = {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!has(r, req[i]))
            return bad(r, req[i], "is required (Megatron-LM requires it too)");
    long div;
    if ((rc = get_long(r, "--num-layers", 1, 0, &m->layers)) || (rc = get_long(r, "--hidden-size", 1, 0, &m->hidden)) ||
        (rc = get_long(r, "--num-attention-heads", 1, 0, &m->heads)) ||
        (rc = get_long(r, "--seq-length", 1, 0, &m->seq)) ||
        (rc = get_long(r, "--max-position-embeddings", 1, m->seq, &m->maxpos)) ||
        (rc = get_long(r, "--make-vocab-size-divisible-by", 1, 128, &div)))
        return rc;
    m->swiglu = has(r, "--swiglu");
    m->untie = has(r, "--untie-embeddings-and-output-weights");
    m->gqa = has(r, "--group-query-attention");
    long ffn_def = m->swiglu ? (long)((4.0 * (double)m->hidden * 2 / 3) / 64) * 64 : 4 * m->hidden;
    if ((rc = get_long(r, "--ffn-hidden-size", 1, ffn_def, &m->ffn)) ||
        (rc = get_long(r, "--num-query-groups", 1, 1, &m->groups)) ||
        (rc = get_long(r, "--kv-channels", 1, 0, &m->kv)) || (rc = get_long(r, "--num-experts", 1, 0, &m->experts)) ||
        (rc = get_long(r, "--moe-router-topk", 1, 2, &m->topk)) ||
        (rc = get_long(r, "--moe-ffn-hidden-size", 1, 0, &m->moe_ffn)))
        return rc;
    if (!m->gqa)
        m->groups = m->heads;
    else if (has(r, "--num-query-groups") == false)
        note(r->mg, "--group-query-attention without --num-query-groups: 1 group (Megatron's default)");
    if (m->heads % m->groups)
        return bad(r, "--num-query-groups", "%ld groups do not divide the %ld heads", m->groups, m->heads);
    if (!m->kv && m->hidden % m->heads)
        return bad(r, "--num-attention-heads", "%ld heads do not divide hidden %ld (give --kv-channels)", m->heads,
                   m->hidden);
    if (m->kv == m->hidden / m->heads && m->hidden % m->heads == 0)
        m->kv = 0; /* the default */
    if ((rc = read_vocab(r, tp, div, m)))
        return rc;
    /* --use-rotary-position-embeddings: Megatron-LM's older spelling of
     * --position-embedding-type rope */
    const char *pos = get_str(r, "--position-embedding-type",
                              has(r, "--use-rotary-position-embeddings") ? "rope" : "learned_absolute");
    if (strcmp(pos, "rope") && strcmp(pos, "learned_absolute"))
        return bad(r, "--position-embedding-type", "'%s' is not modeled (rope | learned_absolute)", pos);
    m->rope = !strcmp(pos, "rope");
    /* --no-position-embedding drops the learned position table: nothing to
     * drop with RoPE; without it, a GPT with no positions is not built */
    if (has(r, "--no-position-embedding") && !m->rope)
        return bad(r, "--no-position-embedding", "without RoPE: a model with no position information is not modeled");
    const char *norm = get_str(r, "--normalization", "LayerNorm");
    if (strcmp(norm, "LayerNorm") && strcmp(norm, "RMSNorm"))
        return bad(r, "--normalization", "'%s' is not modeled (LayerNorm | RMSNorm)", norm);
    m->bias = !has(r, "--disable-bias-linear");
    m->qkv_bias = has(r, "--add-qkv-bias");
    bool gpt2 = !m->rope && !m->swiglu && m->groups == m->heads && !m->experts && !m->kv;
    if (!gpt2 && !m->rope)
        return bad(r, m->swiglu ? "--swiglu" : m->experts ? "--num-experts" : "--group-query-attention",
                   "with learned absolute positions: mmsim models this shape only Llama-style, with "
                   "--position-embedding-type rope");
    if (gpt2 ? !strcmp(norm, "RMSNorm") : !strcmp(norm, "LayerNorm"))
        note(r->mg, "--normalization %s: costed as %s (norm weights are O(h) of O(h^2) per layer)", norm,
             gpt2 ? "LayerNorm (GPT-2 style)" : "RMSNorm (Llama style)");
    if (gpt2 && !m->bias)
        note(r->mg, "--disable-bias-linear: GPT-2-style layers keep their biases (O(h) of O(h^2) per layer)");
    if (m->experts && m->topk > m->experts)
        return bad(r, "--moe-router-topk", "top-%ld of %ld experts", m->topk, m->experts);
    return read_shared(r, m);
}

/* The name the model goes by in reports: "megatron-" and the argument
 * file's name up to its first dot, in characters a JSON string and a file
 * name take as they are. */
static void model_name(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = (size_t)snprintf(out, len, "megatron-");
    for (const char *p = base; *p && *p != '.' && n + 1 < len; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        out[n++] = ok ? c : '_';
    }
    out[n] = '\0';
}

/* The MoE keys of the config: Mixtral's, or with a shared expert
 * Qwen2-MoE's (gated) or DeepSeek-MoE's (read_shared). */
static size_t write_moe_json(const shape *m, char *out, size_t len, size_t n)
{
#define J(...) (n += (size_t)snprintf(out + n, n < len ? len - n : 0, __VA_ARGS__))
    long w = m->moe_ffn ? m->moe_ffn : m->ffn;
    if (m->shared_ffn && m->shared_gate)
        J("  \"num_experts\": %ld,\n  \"shared_expert_intermediate_size\": %ld,\n  \"decoder_sparse_step\": 1,\n"
          "  \"qkv_bias\": %s,\n",
          m->experts, m->shared_ffn, m->qkv_bias ? "true" : "false");
    else if (m->shared_ffn)
        J("  \"n_routed_experts\": %ld,\n  \"n_shared_experts\": %ld,\n  \"first_k_dense_replace\": 0,\n"
          "  \"moe_layer_freq\": 1,\n",
          m->experts, m->shared_ffn / w);
    else
        J("  \"num_local_experts\": %ld,\n", m->experts);
    J("  \"num_experts_per_tok\": %ld,\n", m->topk);
    if (m->moe_ffn || m->shared_ffn) /* --moe-ffn-hidden-size: each routed expert's width */
        J("  \"moe_intermediate_size\": %ld,\n", w);
#undef J
    return n;
}

static void write_json(const shape *m, const char *name, char *out, size_t len)
{
    size_t n = 0;
#define J(...) (n += (size_t)snprintf(out + n, n < len ? len - n : 0, __VA_ARGS__))
    if (!m->rope) {
        J("{\n  \"_name_or_path\": \"%s\",\n  \"model_type\": \"gpt2\",\n  \"activation_function\": \"gelu\",\n  \"n_embd\": %ld,\n"
          "  \"n_layer\": %ld,\n  \"n_head\": %ld,\n  \"n_inner\": %ld,\n  \"n_positions\": %ld,\n"
          "  \"vocab_size\": %ld,\n  \"tie_word_embeddings\": %s\n}\n",
          name, m->hidden, m->layers, m->heads, m->ffn, m->maxpos, m->vocab, m->untie ? "false" : "true");
        return;
    }
    /* Llama keys; Q/K/V biases without the others is Qwen2's layout */
    bool qwen = m->qkv_bias && !m->bias;
    const char *type = m->shared_ffn ? (m->shared_gate ? "qwen2_moe" : "deepseek") : qwen ? "qwen2" : "llama";
    J("{\n  \"_name_or_path\": \"%s\",\n  \"model_type\": \"%s\",\n  \"hidden_act\": \"%s\",\n  \"hidden_size\": %ld,\n"
      "  \"num_hidden_layers\": %ld,\n  \"num_attention_heads\": %ld,\n  \"num_key_value_heads\": %ld,\n",
      name, type, m->swiglu ? "silu" : "gelu", m->hidden, m->layers, m->heads, m->groups);
    if (m->kv)
        J("  \"head_dim\": %ld,\n", m->kv);
    if (m->experts)
        n = write_moe_json(m, out, len, n);
    J("  \"intermediate_size\": %ld,\n  \"max_position_embeddings\": %ld,\n  \"vocab_size\": %ld,\n"
      "  \"attention_bias\": %s,\n  \"mlp_bias\": %s,\n  \"tie_word_embeddings\": %s\n}\n",
      m->ffn, m->maxpos, m->vocab, m->bias && !qwen ? "true" : "false", m->bias ? "true" : "false",
      m->untie ? "false" : "true");
#undef J
}

/* ---- layout and training ------------------------------------------------------- */

/* --decoder-first/last-pipeline-num-layers: the first (last) stage holds
 * that many layers and the stages between share the rest evenly, as
 * Megatron-Core's get_num_layers_to_build splits them (NVIDIA/Megatron-LM
 * at d98e8a64ddf34856e74b24714e3bedb2f5a39553,
 * megatron/core/transformer/transformer_block.py); with virtual stages
 * every stage's layers split into vpp equal chunks, so each count must
 * divide by vpp (transformer_config.py __post_init__ raises otherwise):
 * parallel.llm.layers_per_stage. */
static int map_uneven(reader *r, const shape *m, long pp, long vpp)
{
    const char *fa = "--decoder-first-pipeline-num-layers", *la = "--decoder-last-pipeline-num-layers";
    bool hf = has(r, fa), hl = has(r, la);
    if (!hf && !hl)
        return 0;
    const char *which = hf ? fa : la;
    long f = 0, l = 0;
    int rc;
    if ((hf && (rc = get_long(r, fa, 1, 0, &f))) || (hl && (rc = get_long(r, la, 1, 0, &l))))
        return rc;
    if (pp < 2)
        return bad(r, which, "needs pipeline parallelism (--pipeline-model-parallel-size of 2 or more)");
    if (has(r, "--account-for-embedding-in-pipeline-split") || has(r, "--account-for-loss-in-pipeline-split"))
        return bad(r, which, "cannot be given with --account-for-embedding/loss-in-pipeline-split (Megatron-LM "
                             "refuses the two ways of an uneven split together)");
    if (vpp > 1 && has(r, "--num-layers-per-virtual-pipeline-stage"))
        return bad(r, which, "with --num-layers-per-virtual-pipeline-stage: Megatron-LM asks for "
                             "--num-virtual-stages-per-pipeline-rank with an uneven split");
    long left = pp - hf - hl, rest = m->layers - f - l;
    if (rest < 0 || (left > 0 && rest % left) || (left == 0 && rest))
        return bad(r, which, "%ld layers left for the %ld other stages do not divide evenly (Megatron-LM refuses it too)", rest, left);
    if (vpp > 1 && (f % vpp || l % vpp || (left > 0 && (rest / left) % vpp)))
        return bad(r, which, "%ld, %ld and %ld layers (first, middle, last stage) must each divide by the %ld "
                             "virtual stages (Megatron-LM splits every stage into equal chunks)",
                   hf ? f : rest / left, left > 0 ? rest / left : 0, hl ? l : rest / left, vpp);
    char list[160];
    size_t n = 0;
    for (long i = 0; i < pp && n < sizeof list; i++) {
        long k = i == 0 && hf ? f : i == pp - 1 && hl ? l : rest / left;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%ld", i ? ", " : "[", k);
    }
    if (n + 2 > sizeof list)
        return bad(r, which, "too many stages to write out (%ld)", pp);
    snprintf(list + n, sizeof list - n, "]");
    set(r, which, "parallel.llm.layers_per_stage", "%s", list);
    return 0;
}

/* --account-for-embedding-in-pipeline-split, --account-for-loss-in-
 * pipeline-split: parallel.llm.embedding_in_split and loss_in_split,
 * checked here with the layout's own checks (model/layout.h: Megatron's)
 * so that the message names the argument. */
static int map_split_options(reader *r, const shape *m, long pp, long vpp)
{
    const char *ea = "--account-for-embedding-in-pipeline-split", *la = "--account-for-loss-in-pipeline-split";
    bool e = has(r, ea), l = has(r, la);
    if (!e && !l)
        return 0;
    mm_layout lay = {.tp = 1, .pp = (int)pp, .vpp = (int)vpp, .dp = 1, .embedding_in_split = e, .loss_in_split = l};
    char why[400];
    if (mm_layout_split_check(&lay, m->layers, why, sizeof why))
        return bad(r, e ? ea : la, "%s", why);
    if (e)
        set(r, ea, "parallel.llm.embedding_in_split", "true");
    if (l)
        set(r, la, "parallel.llm.loss_in_split", "true");
    return 0;
}

/* --num-layers-per-virtual-pipeline-stage: vpp from the layers per stage,
 * the embedding and the loss counted where the split options say so
 * (Megatron-LM's validate_args in megatron/training/arguments.py). */
static int vpp_of_layers(reader *r, const shape *m, long pp, long vpl, long *vpp)
{
    long n = m->layers + has(r, "--account-for-embedding-in-pipeline-split") +
             has(r, "--account-for-loss-in-pipeline-split");
    if (n % pp || (n / pp) % vpl)
        return bad(r, "--num-layers-per-virtual-pipeline-stage",
                   "%ld layers x pp %ld do not divide %ld layers (embedding and loss counted where the split "
                   "options say so; Megatron-LM refuses it too)", vpl, pp, n);
    *vpp = n / (pp * vpl);
    return 0;
}

/* The Zero Bubble fork's schedule arguments (MM_MG_ZB_REPO @
 * MM_MG_ZB_COMMIT: megatron/core/zbpp_utils.py add_zero_bubble_args and
 * validate_arguments, megatron/core/pipeline_parallel/zerobubble/
 * runtime.py get_zero_bubble_forward_backward_func, README's "Zero Bubble
 * Command Line Arguments"):
 *   --zero-bubble-v-schedule (implies --enable-zero-bubble): ZB-V, two
 *     chunks per rank (the fork sets vpp 2 itself and asserts an even
 *     number of layers per stage and no --num-layers-per-virtual-pipeline-
 *     stage), at --zero-bubble-v-schedule-mem-setup zb (its default);
 *   --enable-zero-bubble --zero-bubble-max-pending-backward N: the fork's
 *     scheduler under a memory limit of N forward activations, "setting to
 *     1 x number of pipelines will get a schedule like ZB1P while setting to
 *     2x ... will get ZB2P": N = pp is zb-h1 (ZB-H1's memory), N = 2 pp is
 *     zb-2p.
 * What the fork refuses, or mmsim does not model (auto's adaptive limit,
 * V-Half and V-Min, other N), is refused by name.  *sched is left NULL
 * when no zero-bubble argument is given. */
static int map_zero_bubble(reader *r, const shape *m, long pp, long *vpp, const char **sched)
{
    const char *en = "--enable-zero-bubble", *v = "--zero-bubble-v-schedule", *pe = "--zero-bubble-max-pending-backward",
               *ms = "--zero-bubble-v-schedule-mem-setup";
    bool zbv = has(r, v), zb = zbv || has(r, en);
    *sched = NULL;
    if (!zb) {
        const char *stray = has(r, pe) ? pe : has(r, ms) ? ms : has(r, "--enable-zb-runtime") ? "--enable-zb-runtime" : NULL;
        if (stray)
            return bad(r, stray, "without --enable-zero-bubble or --zero-bubble-v-schedule: the fork's runtime "
                                 "runs no zero-bubble schedule then, and mmsim does not model it apart");
        return 0;
    }
    const char *by = zbv ? v : en;
    if (pp < 2)
        return bad(r, by, "at pp %ld: the fork asserts \"zero bubble must be enabled with pipeline parallelism\"", pp);
    if (strcmp(get_str(r, "--transformer-impl", "transformer_engine"), "local"))
        return bad(r, by, "without --transformer-impl local: the fork runs its schedules on the legacy modules "
                          "(train.framework megatron-local)");
    if (!m->untie)
        return bad(r, by, "without --untie-embeddings-and-output-weights: the fork asserts untied embeddings");
    for (int i = 0; mm_mg_zb_absent[i]; i++)
        if (has(r, mm_mg_zb_absent[i]))
            return bad(r, mm_mg_zb_absent[i], "beside %s: not an argument of the Zero Bubble fork (%s @ %.10s "
                       "megatron/training/arguments.py)", by, MM_MG_ZB_REPO, MM_MG_ZB_COMMIT);
    if (has(r, "--no-gradient-accumulation-fusion"))
        return bad(r, "--no-gradient-accumulation-fusion", "beside %s: the fork raises \"gradient-accumulation-"
                   "fusion should be True for zb runtime\"", by);
    if (has(r, "--use-distributed-optimizer") && (has(r, "--overlap-grad-reduce") || has(r, "--overlap-param-gather")))
        return bad(r, has(r, "--overlap-grad-reduce") ? "--overlap-grad-reduce" : "--overlap-param-gather",
                   "beside %s and --use-distributed-optimizer: the fork asserts neither overlap", by);
    if (zbv) {
        if (has(r, "--num-layers-per-virtual-pipeline-stage"))
            return bad(r, "--num-layers-per-virtual-pipeline-stage", "beside %s: the fork sets two chunks per rank "
                       "itself and asserts this is not set", v);
        if (m->layers % pp || (m->layers / pp) % 2)
            return bad(r, v, "%ld layers over pp %ld: the fork asserts an even number of layers per stage", m->layers,
                       pp);
        if (has(r, pe))
            return bad(r, pe, "beside %s: no effect on the V schedule (the fork's README), so not a ZB-V setting", v);
        const char *mem = get_str(r, ms, "zb");
        if (strcmp(mem, "zb"))
            return bad(r, ms, "'%s': %s", mem, !strcmp(mem, "half") || !strcmp(mem, "min")
                                                 ? "V-Half and V-Min are not modeled (zb, the default, is ZB-V)"
                                                 : "not min, half or zb (the fork asserts one of them)");
        *vpp = 2;
        *sched = "zb-v";
        return 0;
    }
    if (has(r, ms))
        return bad(r, ms, "without %s: the fork reads it for the V schedule only", v);
    if (*vpp > 1)
        return bad(r, en, "with %ld virtual stages and no %s: the fork raises \"got virtual pipeline parallel but "
                   "v_schedule is disabled\"", *vpp, v);
    const char *n = get_str(r, pe, "auto");
    char *end;
    long k = strtol(n, &end, 10);
    if (!strcmp(n, "auto"))
        return bad(r, has(r, pe) ? pe : en, "auto (the fork's default): its adaptive memory limit is not modeled; "
                   "write %ld (ZB-H1's memory, pp) or %ld (ZB-2p's, 2 x pp)", pp, 2 * pp);
    if (!n[0] || *end || (k != pp && k != 2 * pp))
        return bad(r, pe, "'%s' at pp %ld: mmsim models %ld (ZB-H1's memory, pp) and %ld (ZB-2p's, 2 x pp)", n, pp, pp,
                   2 * pp);
    *sched = k == pp ? "zb-h1" : "zb-2p";
    return 0;
}

static int map_layout(reader *r, const shape *m, long tp)
{
    int rc;
    long pp, cp, ep, vpl, vsr;
    if ((rc = get_long(r, "--pipeline-model-parallel-size", 1, 1, &pp)) ||
        (rc = get_long(r, "--context-parallel-size", 1, 1, &cp)) ||
        (rc = get_long(r, "--expert-model-parallel-size", 1, 1, &ep)) ||
        (rc = get_long(r, "--num-layers-per-virtual-pipeline-stage", 1, 0, &vpl)) ||
        (rc = get_long(r, "--num-virtual-stages-per-pipeline-rank", 1, 0, &vsr)))
        return rc;
    long vpp = vsr ? vsr : 1;
    if (vpl && (rc = vpp_of_layers(r, m, pp, vpl, &vpp)))
        return rc;
    const char *zb;
    if ((rc = map_zero_bubble(r, m, pp, &vpp, &zb)))
        return rc;
    set(r, "--tensor-model-parallel-size", "parallel.llm.tp", "%ld", tp);
    set(r, "--pipeline-model-parallel-size", "parallel.llm.pp", "%ld", pp);
    set(r, "--context-parallel-size", "parallel.llm.cp", "%ld", cp);
    set(r, "--expert-model-parallel-size", "parallel.llm.ep", "%ld", ep);
    long etp;
    if ((rc = get_long(r, "--expert-tensor-parallel-size", 1, tp, &etp)))
        return rc;
    if (m->experts) /* Megatron's default: the model's tp (arguments.py) */
        set(r, "--expert-tensor-parallel-size", "moe.expert_tp", "%ld", etp);
    set(r, zb && vpp > 1 ? "--zero-bubble-v-schedule"
           : vpl         ? "--num-layers-per-virtual-pipeline-stage"
                         : "--num-virtual-stages-per-pipeline-rank",
        "parallel.llm.vpp", "%ld", vpp);
    if ((rc = map_uneven(r, m, pp, vpp)) || (rc = map_split_options(r, m, pp, vpp)))
        return rc;
    /* Megatron runs the interleaved 1F1B schedule when there are virtual
     * stages; the Zero Bubble fork what its arguments say */
    if (zb)
        set(r, has(r, "--zero-bubble-v-schedule") ? "--zero-bubble-v-schedule" : "--zero-bubble-max-pending-backward",
            "train.schedule", "%s", zb);
    else
        set(r, "(schedule)", "train.schedule", "%s", vpp > 1 ? "interleaved" : "1f1b");
    return 0;
}

/* --fp8-recipe (megatron/training/arguments.py: tensorwise | delayed |
 * mxfp8 | blockwise, default delayed; tensorwise is TE's
 * Float8CurrentScaling) and --fp8-param-gather, under --fp8-format. */
static int map_fp8(reader *r)
{
    static const char *const mg[] = {"delayed", "tensorwise", "mxfp8", "blockwise"};
    const char *rec = get_str(r, "--fp8-recipe", NULL);
    if (rec) {
        size_t i = 0;
        while (i < sizeof mg / sizeof *mg && strcmp(rec, mg[i]))
            i++;
        if (i == sizeof mg / sizeof *mg)
            return bad(r, "--fp8-recipe", "'%s' is not delayed, tensorwise, mxfp8 or blockwise", rec);
        set(r, "--fp8-recipe", "train.fp8_recipe", "%s", mm_fp8_recipe_names[i]);
    }
    if (has(r, "--fp8-param-gather"))
        set(r, "--fp8-param-gather", "train.fp8_param_gather", "true");
    return 0;
}

static int map_precision(reader *r)
{
    int rc;
    const char *fp8 = get_str(r, "--fp8-format", NULL);
    if (fp8 && strcmp(fp8, "e4m3") && strcmp(fp8, "hybrid"))
        return bad(r, "--fp8-format", "'%s' is not e4m3 or hybrid", fp8);
    if (fp8 && (rc = map_fp8(r)))
        return rc;
    if (fp8)
        set(r, "--fp8-format", "train.precision", "fp8");
    else if (has(r, "--bf16"))
        set(r, "--bf16", "train.precision", "bf16");
    else if (has(r, "--fp16"))
        set(r, "--fp16", "train.precision", "fp16");
    else
        return bad(r, "--bf16", "none of --bf16, --fp16, --fp8-format: Megatron-LM then trains in FP32, which mmsim "
                                "does not model");
    if (has(r, "--bf16") && has(r, "--fp16"))
        return bad(r, "--fp16", "given with --bf16");
    if (!fp8 && (has(r, "--fp8-recipe") || has(r, "--fp8-param-gather")))
        return bad(r, has(r, "--fp8-recipe") ? "--fp8-recipe" : "--fp8-param-gather", "given without --fp8-format");
    return 0;
}

static int map_recompute(reader *r)
{
    const char *g = get_str(r, "--recompute-granularity", has(r, "--recompute-activations") ? "selective" : "none");
    if (strcmp(g, "none") && strcmp(g, "full") && strcmp(g, "selective"))
        return bad(r, "--recompute-granularity", "'%s' is not full or selective", g);
    const char *meth = get_str(r, "--recompute-method", NULL);
    long n;
    int rc = get_long(r, "--recompute-num-layers", 1, 1, &n);
    if (rc)
        return rc;
    if (!strcmp(g, "full")) {
        /* mmsim's full recompute checkpoints every layer: uniform, 1 layer */
        if (meth && strcmp(meth, "uniform"))
            return bad(r, "--recompute-method", "'%s': only uniform recompute of every layer is modeled", meth);
        if (n != 1)
            return bad(r, "--recompute-num-layers", "%ld: only 1 (every layer checkpointed) is modeled", n);
    } else if (meth) {
        return bad(r, "--recompute-method", "applies to --recompute-granularity full only");
    }
    set(r, has(r, "--recompute-activations") && !has(r, "--recompute-granularity") ? "--recompute-activations"
                                                                                 : "--recompute-granularity",
        "train.recompute", "%s", g);
    return 0;
}

/* A kernel name train.attention takes, else its generic fallback (a
 * scenario format from before the kernel list). */
static const char *kernel(const char *name, const char *fallback)
{
    for (int i = 0; mm_attention_names[i]; i++)
        if (!strcmp(mm_attention_names[i], name))
            return name;
    return fallback;
}

/* train.attention for Megatron's attention arguments:
 * --use-flash-attn: the flash-attn package's kernels (FlashAttention-2
 * since flash-attn 2.0); --attention-backend flash: TE's flash-attn
 * backend; fused: TE's FusedAttention, cuDNN; unfused, local: batched
 * GEMMs + softmax; auto (and no flag) under Transformer Engine: what TE
 * picks for the GPU, the framework profile's; the local implementation
 * without flash-attn: its unfused core attention. */
static const char *attention_kernel(const reader *r, const char *be, bool local)
{
    if (has(r, "--use-flash-attn"))
        return kernel("flash2", "flash");
    if (!strcmp(be, "flash"))
        return "flash";
    if (!strcmp(be, "fused"))
        return kernel("cudnn", "flash");
    if (!strcmp(be, "unfused") || !strcmp(be, "local") || local)
        return "unfused";
    return kernel("auto", "flash");
}

/* train.zero: --use-distributed-optimizer is ZeRO-1; --use-megatron-fsdp
 * shards as --data-parallel-sharding-strategy says (Megatron-LM's default
 * optim_grads_params: weights too, ZeRO-3), run by the megatron-core
 * profile like the rest. */
static int map_sharding(reader *r)
{
    static const char *const strategies[] = {"no_shard", "optim", "optim_grads", "optim_grads_params", NULL};
    const char *st = get_str(r, "--data-parallel-sharding-strategy", "optim_grads_params");
    int stage = -1;
    for (int i = 0; strategies[i]; i++)
        if (!strcmp(st, strategies[i]))
            stage = i;
    if (stage < 0)
        return bad(r, "--data-parallel-sharding-strategy", "'%s' is not no_shard, optim, optim_grads or "
                   "optim_grads_params", st);
    if (has(r, "--use-megatron-fsdp")) {
        set(r, has(r, "--data-parallel-sharding-strategy") ? "--data-parallel-sharding-strategy" : "--use-megatron-fsdp",
            "train.zero", "%d", stage);
        return 0;
    }
    if (has(r, "--data-parallel-sharding-strategy"))
        note(r->mg, "--data-parallel-sharding-strategy without --use-megatron-fsdp: unused, as in Megatron-LM");
    set(r, "--use-distributed-optimizer", "train.zero", "%d", has(r, "--use-distributed-optimizer") ? 1 : 0);
    return 0;
}

/* The mapped arguments that select among what mmsim models: the
 * context-parallel exchange, frozen parts, the optimizer and the rerun
 * engine's mode. */
static int map_extras(reader *r)
{
    const char *cpc = get_str(r, "--cp-comm-type", NULL);
    if (cpc) {
        if (strcmp(cpc, "p2p") && strcmp(cpc, "a2a"))
            return bad(r, "--cp-comm-type", "'%s': only p2p (ring) and a2a (Ulysses all-to-all) are modeled", cpc);
        set(r, "--cp-comm-type", "train.cp_comm", "%s", strcmp(cpc, "p2p") ? "ulysses" : "ring");
    }
    const char *freeze = has(r, "--freeze-LM") ? "--freeze-LM" : has(r, "--freeze-all-layers") ? "--freeze-all-layers"
                                                                                                 : NULL;
    if (freeze && !r->mm)
        set(r, freeze, "train.frozen", "[llm]");
    if (has(r, "--freeze-ViT") && !r->mm)
        note(r->mg, "--freeze-ViT: the text-only model has no vision encoder to freeze");
    const char *opt = get_str(r, "--optimizer", "adam");
    if (strcmp(opt, "adam"))
        return bad(r, "--optimizer", "'%s': only Adam's states and step are modeled", opt);
    const char *rerun = get_str(r, "--rerun-mode", "validate_results");
    if (!strcmp(rerun, "report_stats"))
        return bad(r, "--rerun-mode", "report_stats runs iterations again to measure variability: not modeled");
    if (strcmp(rerun, "disabled") && strcmp(rerun, "validate_results"))
        return bad(r, "--rerun-mode", "'%s' is not disabled, validate_results or report_stats", rerun);
    return 0;
}

/* The MoE switches onto the scenario's moe section (model/moe.h), as
 * Megatron-Core runs them (NVIDIA/Megatron-LM d98e8a64,
 * megatron/core/transformer/moe/): --moe-grouped-gemm (TEGroupedMLP; without
 * it SequentialMLP, one GEMM per expert after another), the token dispatcher
 * (alltoall; allgather at ep 1, where both permute locally), capacity and
 * padding (moe_utils.py apply_router_token_dropping) and the load-balancing
 * type: aux_loss and its sequence/global variants leave the imbalance
 * moe.routing aux_loss draws, none the skew of moe.routing skewed. */
static int map_moe(reader *r, const shape *m)
{
    mm_megatron *mg = r->mg;
    if (!m->experts) {
        if (has(r, "--moe-grouped-gemm") || has(r, "--moe-token-dispatcher-type"))
            note(mg, "--moe-grouped-gemm / --moe-token-dispatcher-type: no experts, unused");
        return 0;
    }
    set(r, "--moe-grouped-gemm", "moe.grouped_gemm", "%s", has(r, "--moe-grouped-gemm") ? "true" : "false");
    long ep;
    int rc = get_long(r, "--expert-model-parallel-size", 1, 1, &ep);
    if (rc)
        return rc;
    const char *disp = get_str(r, "--moe-token-dispatcher-type", "allgather");
    if (strcmp(disp, "alltoall") && strcmp(disp, "allgather"))
        return bad(r, "--moe-token-dispatcher-type", "'%s' is not modeled (alltoall and allgather are)", disp);
    if (ep > 1 && strcmp(disp, "alltoall"))
        return bad(r, has(r, "--moe-token-dispatcher-type") ? "--moe-token-dispatcher-type"
                                                             : "--expert-model-parallel-size",
                   "the %s token dispatcher at ep %ld is not modeled (the all-to-all one is: "
                   "--moe-token-dispatcher-type alltoall)", disp, ep);
    set(r, "--moe-token-dispatcher-type", "moe.dispatcher", "%s", disp);
    const char *lb = get_str(r, "--moe-router-load-balancing-type", "aux_loss");
    bool aux = !strcmp(lb, "aux_loss") || !strcmp(lb, "seq_aux_loss") || !strcmp(lb, "global_aux_loss");
    if (!aux && strcmp(lb, "none"))
        return bad(r, "--moe-router-load-balancing-type", "'%s' is not modeled (aux_loss, seq_aux_loss, "
                   "global_aux_loss and none are)", lb);
    /* --moe-router-force-load-balancing: every token's router logits drawn
     * at random (moe_utils.py RandomSTE at core_v0.15.0), the loss still
     * computed: uniform popularity with each rank's picks drawn, the aux_loss
     * draw at the largest concentration moe.routing_param takes */
    if (has(r, "--moe-router-force-load-balancing")) {
        set(r, "--moe-router-force-load-balancing", "moe.routing", "aux_loss");
        set(r, "--moe-router-force-load-balancing", "moe.routing_param", "1e6");
    } else {
        set(r, "--moe-router-load-balancing-type", "moe.routing", "%s", aux ? "aux_loss" : "skewed");
    }
    if (has(r, "--moe-expert-capacity-factor")) {
        const char *cf = get_str(r, "--moe-expert-capacity-factor", "");
        char *end;
        double v = strtod(cf, &end);
        if (!cf[0] || *end || !(v > 0) || v > 1e6)
            return bad(r, "--moe-expert-capacity-factor", "expects a positive number, got '%s'", cf);
        set(r, "--moe-expert-capacity-factor", "moe.capacity_factor", "%.17g", v);
    } else if (has(r, "--moe-pad-expert-input-to-capacity")) {
        return bad(r, "--moe-pad-expert-input-to-capacity", "needs --moe-expert-capacity-factor (Megatron asserts "
                   "the same)");
    }
    if (has(r, "--moe-pad-expert-input-to-capacity"))
        set(r, "--moe-pad-expert-input-to-capacity", "moe.pad_to_capacity", "true");
    const char *dp = get_str(r, "--moe-token-drop-policy", "probs");
    if (strcmp(dp, "probs") && strcmp(dp, "position"))
        return bad(r, "--moe-token-drop-policy", "'%s' is not probs or position", dp);
    if (has(r, "--moe-token-drop-policy"))
        set(r, "--moe-token-drop-policy", "moe.drop_policy", "%s", dp);
    return 0;
}

/* Kernel and dispatch switches that are free or are what mmsim models.
 * --no-masked-softmax-fusion reaches only Megatron-Core's own attention
 * (megatron/core/transformer/dot_product_attention.py builds
 * FusedScaleMaskSoftmax from it; Transformer Engine's attention, the
 * default, never reads it).  MoE: map_moe. */
static int map_kernels(reader *r, const shape *m, bool local_attention)
{
    mm_megatron *mg = r->mg;
    if (has(r, "--no-masked-softmax-fusion")) {
        if (local_attention)
            return bad(r, "--no-masked-softmax-fusion", "an unfused masked softmax in Megatron-Core's own attention "
                       "is not modeled");
        note(mg, "--no-masked-softmax-fusion: costless, accepted (Transformer Engine's attention does not read it; "
             "only Megatron-Core's local attention does)");
    }
    return map_moe(r, m);
}

/* The run's length and its periodic work, onto the train.* run keys
 * (scenario/keys.c): --train-iters, --log-interval, --eval-interval,
 * --eval-iters as written (an argument not written leaves the scenario's
 * key: whether Megatron-LM evaluates at its default interval depends on
 * the data's validation split, which the list does not show).
 * --save-interval writes checkpoints only with --save (as Megatron-LM's
 * training loop does); it is held in mg->save_interval and charged when
 * the user gives the storage's bandwidth (mm_megatron_scenario). */
static int map_run(reader *r)
{
    static const struct {
        const char *arg, *key;
        long lo;
    } run[] = {{"--train-iters", "train.train_iters", 0},
               {"--log-interval", "train.log_interval", 1},
               {"--eval-interval", "train.eval_interval", 1},
               {"--eval-iters", "train.eval_iters", 0}};
    int rc;
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) {
        long v;
        if (!has(r, run[i].arg))
            continue;
        if ((rc = get_long(r, run[i].arg, run[i].lo, 0, &v)))
            return rc;
        set(r, run[i].arg, run[i].key, "%ld", v);
    }
    if (!has(r, "--save-interval"))
        return 0;
    long v;
    if ((rc = get_long(r, "--save-interval", 1, 0, &v)))
        return rc;
    if (!r->save) {
        note(r->mg, "--save-interval %ld: no --save, so Megatron-LM writes no checkpoint: none charged", v);
        return 0;
    }
    r->mg->save_interval = v;
    r->mg->save_line = get(r, "--save-interval")->line;
    return 0;
}

static int map_training(reader *r, const shape *m)
{
    mm_megatron *mg = r->mg;
    int rc;
    long mbs, gbs;
    if ((rc = get_long(r, "--micro-batch-size", 1, 1, &mbs)) || (rc = get_long(r, "--global-batch-size", 1, 0, &gbs)))
        return rc;
    if (!r->mm)
        set(r, "--seq-length", "train.seq_len", "%ld", m->seq);
    set(r, "--micro-batch-size", "train.micro_batch", "%ld", mbs);
    if (gbs)
        set(r, "--global-batch-size", "train.global_batch", "%ld", gbs);
    else
        note(mg, "no --global-batch-size: the scenario's train.global_batch (Megatron's default is mbs x dp)");
    if ((rc = map_precision(r)) || (rc = map_recompute(r)))
        return rc;
    /* Megatron-LM turns sequence parallelism off at tp 1 (validate_args) */
    long tp;
    if ((rc = get_long(r, "--tensor-model-parallel-size", 1, 1, &tp)))
        return rc;
    bool sp = has(r, "--sequence-parallel") && tp > 1;
    if (has(r, "--sequence-parallel") && !sp)
        note(mg, "--sequence-parallel at tp 1: off, as Megatron-LM turns it off");
    if (has(r, "--tp-comm-overlap") && !sp)
        return bad(r, "--tp-comm-overlap", "needs sequence parallelism at tp > 1 (Megatron-LM refuses it too)");
    set(r, "--sequence-parallel", "train.sequence_parallel", "%s", sp ? "true" : "false");
    if ((rc = map_sharding(r)) || (rc = map_extras(r)))
        return rc;
    if (has(r, "--grad-reduce-in-bf16")) /* the gradient buffer and its reduce in bf16 */
        set(r, "--grad-reduce-in-bf16", "train.grad_reduce", "bf16");
    if (has(r, "--no-gradient-accumulation-fusion")) /* a separate main_grad.add_ per weight */
        set(r, "--no-gradient-accumulation-fusion", "train.grad_accum_fusion", "false");
    /* Megatron-FSDP runs its gathers and reduce-scatters on their own
     * streams whatever --overlap-grad-reduce says: the profile's (auto) */
    set(r, "--overlap-grad-reduce", "train.overlap_grad_reduce", "%s",
        has(r, "--overlap-grad-reduce") ? "true" : has(r, "--use-megatron-fsdp") ? "auto" : "false");
    set(r, "--overlap-param-gather", "train.overlap_param_gather", "%s",
        has(r, "--overlap-param-gather") ? "true" : "false");
    set(r, "--tp-comm-overlap", "train.tp_comm_overlap", "%s", has(r, "--tp-comm-overlap") ? "true" : "false");
    /* CUDA graphs: --enable-cuda-graph (per layer) or --cuda-graph-impl
     * local | transformer_engine (per layer) | full_iteration (the whole
     * forward-backward) */
    const char *gimpl = get_str(r, "--cuda-graph-impl", "none");
    if (strcmp(gimpl, "none") && strcmp(gimpl, "local") && strcmp(gimpl, "transformer_engine") &&
        strcmp(gimpl, "full_iteration"))
        return bad(r, "--cuda-graph-impl", "'%s' is not none, local, transformer_engine or full_iteration", gimpl);
    bool full = !strcmp(gimpl, "full_iteration");
    bool graphs = full || strcmp(gimpl, "none") || has(r, "--enable-cuda-graph");
    set(r, has(r, "--cuda-graph-impl") ? "--cuda-graph-impl" : "--enable-cuda-graph", "train.cuda_graphs", "%s",
        full ? "full" : graphs ? "layer" : "none");
    const char *impl = get_str(r, "--transformer-impl", "transformer_engine");
    if (strcmp(impl, "transformer_engine") && strcmp(impl, "local"))
        return bad(r, "--transformer-impl", "'%s' is not transformer_engine or local", impl);
    mg->wants_local = !strcmp(impl, "local");
    const char *be = get_str(r, "--attention-backend", "auto");
    if (strcmp(be, "auto") && strcmp(be, "flash") && strcmp(be, "fused") && strcmp(be, "unfused") && strcmp(be, "local"))
        return bad(r, "--attention-backend", "'%s' is not flash, fused, unfused, local or auto", be);
    const char *from = has(r, "--use-flash-attn")     ? "--use-flash-attn"
                       : has(r, "--attention-backend") ? "--attention-backend"
                                                       : "--transformer-impl";
    set(r, from, "train.attention", "%s", attention_kernel(r, be, mg->wants_local));
    if ((rc = map_kernels(r, m, mg->wants_local || !strcmp(be, "local"))) || (rc = map_run(r)))
        return rc;
    if (!r->mm)
        set(r, "(text-only model)", "workload", "text");
    return 0;
}

/* ---- the multimodal example's MLLM ------------------------------------------ */

/* What examples/multimodal/train.py builds besides the language model
 * (model.py model_provider at d98e8a64dd). */
typedef struct mllm_args {
    const mm_mg_vision *tower;
    const mm_mg_lm *lm;
    long img, patch, tiles, per_tile, decoder;
    long tags; /* --use-tile-tags: text tokens before each tile */
    bool shuffle;
    const char *proj_norm;
} mllm_args;

/* The tower and the language model by type; every problem in one message
 * (a part of read_mllm). */
static int mllm_types(reader *r, mllm_args *a)
{
    problems pb = {0};
    const char *why = NULL;
    const char *vt = get_str(r, "--vision-model-type", "clip"); /* multimodal_args.py's default */
    const char *lt = get_str(r, "--language-model-type", NULL);
    const seen *vs = get(r, "--vision-model-type"), *ls = get(r, "--language-model-type");
    char msg[200];
    if (!(a->tower = mm_mg_vision_find(vt, &why))) {
        snprintf(msg, sizeof msg, "'%s': %s", vt, why);
        problem(&pb, vs ? vs->line : 0, "--vision-model-type", msg);
    }
    if (!lt)
        problem(&pb, 0, "--language-model-type", "is required (multimodal_args.py requires it too)");
    else if (!(a->lm = mm_mg_lm_find(lt, &why))) {
        snprintf(msg, sizeof msg, "'%s': %s", lt, why);
        problem(&pb, ls->line, "--language-model-type", msg);
    }
    const char *pt = get_str(r, "--vision-projection-type", "mlp"); /* LLaVAModel's default */
    if (strcmp(pt, "mlp"))
        problem(&pb, get(r, "--vision-projection-type")->line, "--vision-projection-type",
                "only LLaVAModel's mlp projector is modeled");
    long frames = 1;
    int rc = get_long(r, "--num-frames", 1, 1, &frames);
    if (rc)
        return rc;
    if (frames > 1)
        problem(&pb, get(r, "--num-frames")->line, "--num-frames", "video samples (several frames) are not modeled");
    if (a->tower && a->tower->class_tokens && !has(r, "--disable-vision-class-token"))
        problem(&pb, vs ? vs->line : 0, "--disable-vision-class-token",
                "missing: the tower's class token kept as an image embedding is not modeled (mmsim's tiles drop it)");
    return report(r, &pb);
}

/* The image side and the decoder length, checked as model.py checks them;
 * the language model's MLP as config.py sets it. */
static int read_mllm(reader *r, shape *m, mllm_args *a)
{
    int rc;
    long w;
    if ((rc = mllm_types(r, a)) || (rc = get_long(r, "--img-h", 1, 224, &a->img)) ||
        (rc = get_long(r, "--img-w", 1, 224, &w)) || (rc = get_long(r, "--patch-dim", 1, 16, &a->patch)) ||
        (rc = get_long(r, "--max-num-tiles", 1, 1, &a->tiles)))
        return rc;
    if (w != a->img)
        return bad(r, "--img-w", "%ld x %ld tiles: only square tiles are modeled", a->img, w);
    if (a->patch > a->img)
        return bad(r, "--patch-dim", "patch %ld exceeds the image side %ld", a->patch, a->img);
    /* get_num_image_embeddings: (h/p)(w/p) patches, the class token
     * dropped, a quarter of them after pixel shuffle */
    a->shuffle = has(r, "--pixel-shuffle");
    a->per_tile = (a->img / a->patch) * (a->img / a->patch) / (a->shuffle ? 4 : 1);
    long maxt = a->tiles;
    a->tiles = has(r, "--use-tiling") ? a->tiles + (has(r, "--use-thumbnail") ? 1 : 0) : 1;
    if (has(r, "--use-tile-tags")) { /* get_num_image_embeddings: the tags' tokens by prompt format */
        const char *fmt = get_str(r, "--tokenizer-prompt-format", "");
        bool qwen = !strncmp(fmt, "qwen", 4);
        if (!strcmp(fmt, "llama3p1") || !strcmp(fmt, "chatml") || qwen)
            a->tags = 5 + (qwen && maxt > 10 ? 1 : 0);
        else if (!strncmp(fmt, "nemotron5", 9))
            a->tags = 6;
        else
            return bad(r, "--use-tile-tags", "with prompt format '%s': train.py defines no tile tags for it", fmt);
    }
    if (!has(r, "--decoder-seq-length"))
        return bad(r, "--decoder-seq-length", "is required (model.py asserts it: the language model's length)");
    if ((rc = get_long(r, "--decoder-seq-length", 1, 0, &a->decoder)))
        return rc;
    if (a->decoder <= a->tiles * (a->per_tile + a->tags))
        return bad(r, "--decoder-seq-length", "%ld is not more than the %ld x %ld image embeddings (model.py asserts "
                   "it is)", a->decoder, a->tiles, a->per_tile + a->tags);
    if (m->seq != a->per_tile + a->tags)
        note(r->mg, "--seq-length %ld: train.py sets it to the image embeddings per tile, %ld", m->seq,
             a->per_tile + a->tags);
    if (!m->rope)
        return bad(r, "--position-embedding-type", "the example's language models use RoPE: give rope");
    if (m->ffn != a->lm->ffn || !m->swiglu || m->bias)
        note(r->mg, "--language-model-type %s: SwiGLU %d, no linear biases (config.py sets them)", a->lm->type,
             a->lm->ffn);
    m->ffn = a->lm->ffn, m->swiglu = true, m->bias = false, m->qkv_bias = a->lm->qkv_bias;
    m->seq = a->decoder;
    if (m->maxpos < a->decoder)
        m->maxpos = a->decoder; /* model.py widens it to the decoder length */
    a->proj_norm = a->lm->proj_norm;
    if (!strcmp(a->proj_norm, "inherit"))
        a->proj_norm = strcmp(get_str(r, "--normalization", "LayerNorm"), "RMSNorm") ? "layernorm" : "rmsnorm";
    if (!strcmp(a->tower->type, "internvit"))
        note(r->mg, "--vision-model-type internvit: the 25 real heads are costed; Megatron pads them to a "
                    "multiple of tp with zero heads (nvlm/internvit.py), which mmsim does not cost");
    return 0;
}

/* The model (our YAML form with its parts inline, written as JSON) and the
 * scenario keys of the example's MLLM. */
static int map_mllm(reader *r, const shape *m, const mllm_args *a, const char *name)
{
    mm_megatron *mg = r->mg;
    const mm_mg_vision *t = a->tower;
    char llm[2048];
    write_json(m, name, llm, sizeof llm);
    int n = snprintf(mg->model_json, sizeof mg->model_json,
                     "{\n\"name\": \"%s\",\n\"vision\": {\"model_type\": \"%s\", \"hidden_size\": %d, "
                     "\"intermediate_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
                     "\"image_size\": %ld, \"patch_size\": %ld%s},\n"
                     "\"projector\": {\"type\": \"megatron_mlp\", \"hidden\": %d, \"norm\": \"%s\", \"bias\": %s},\n"
                     "\"image\": {\"tile\": %ld, \"max_tiles\": %ld, \"pixel_shuffle\": %s},\n\"llm\": %s}\n",
                     name, t->hf, t->hidden, t->ffn, t->layers, t->heads, a->img, a->patch,
                     !strcmp(t->hf, "intern_vit_6b")
                         ? (t->rmsnorm ? ", \"norm_type\": \"rms_norm\", \"qkv_bias\": false, \"qk_normalization\": true"
                                       : ", \"norm_type\": \"layer_norm\", \"qkv_bias\": true, \"qk_normalization\": false")
                         : "",
                     a->lm->proj_ffn, a->proj_norm, a->lm->proj_bias ? "true" : "false", a->img, a->tiles,
                     a->shuffle ? "0.5" : "1.0", llm);
    if (n < 0 || (size_t)n >= sizeof mg->model_json)
        return mm_err_set(r->err, MM_EINTERNAL, r->path, 0, "", "the model's text is too long");
    set(r, "--decoder-seq-length", "train.seq_len", "%ld", a->decoder);
    set(r, "(each sample fills the decoder length)", "workload", "{kind: fixed, images: 1, tiles: %ld, text_tokens: %ld}",
        a->tiles, a->decoder - a->tiles * a->per_tile);
    char frozen[64] = "";
    size_t k = 0;
    const char *flag[] = {"--freeze-LM", "--freeze-ViT", "--freeze-vision-projection"};
    const char *mod[] = {"llm", "vision", "projector"};
    for (int i = 0; i < 3; i++)
        if (has(r, flag[i]))
            k += (size_t)snprintf(frozen + k, sizeof frozen - k, "%s%s", k ? ", " : "", mod[i]);
    if (k)
        set(r, "(--freeze-LM, --freeze-ViT, --freeze-vision-projection)", "train.frozen", "[%s]", frozen);
    /* LLaVAModel builds the tower on the first pipeline stage of every
     * replica, with the language model's tp (model.py) */
    set(r, "(the tower on the first stage, the LLM's tp)", "parallel.placement", "homogeneous");
    note(mg, "image: %ld px tiles, patch %ld%s: %ld embeddings per tile, %ld tiles per sample", a->img, a->patch,
         a->shuffle ? ", pixel shuffle (a quarter)" : "", a->per_tile, a->tiles);
    if (a->tags)
        note(mg, "--use-tile-tags: %ld tag tokens before each tile, costed as text tokens of the sample", a->tags);
    if (!has(r, "--use-te")) {
        mg->wants_local = true;
        note(mg, "no --use-te: model.py builds Megatron's local layer specs -> train.framework: megatron-local");
    }
    return 0;
}

/* The entry scripts of Megatron-LM (commit d98e8a64dd) that a launch
 * script may start, and what mmsim makes of each. */
static int check_entry(const char *path, const char *entry, int line, mm_megatron *mg, bool *mm, mm_err *err)
{
    static const struct {
        const char *name, *why;
    } refused[] = {
        {"pretrain_bert.py", "BERT pretraining (bidirectional encoder, masked-LM and binary heads) is not modeled"},
        {"pretrain_t5.py", "T5 pretraining (encoder-decoder) is not modeled"},
        {"pretrain_mamba.py", "Mamba (state-space layers) is not modeled"},
        {"pretrain_hybrid.py", "hybrid Mamba-Transformer models are not modeled"},
        {"pretrain_vlm.py", "the vision-language example's model is not read from arguments by mmsim"},
        {"pretrain_retro.py", "RETRO (retrieval) is not modeled"},
        {"pretrain_ict.py", "ICT (retrieval) pretraining is not modeled"},
        {"pretrain_vision_classify.py", "vision-only pretraining is not modeled"},
        {"pretrain_vision_dino.py", "vision-only pretraining is not modeled"},
        {"pretrain_vision_inpaint.py", "vision-only pretraining is not modeled"},
        {"pretrain_mimo.py", "the MIMO multimodal example is not read from arguments by mmsim"},
    };
    const char *b = strrchr(entry, '/');
    b = b ? b + 1 : entry;
    if (!strcmp(b, "pretrain_gpt.py")) {
        note(mg, "entry script %s (line %d): a GPT-style decoder", entry, line);
        return 0;
    }
    if (!strcmp(b, "train.py") && strstr(entry, "multimodal") && !strstr(entry, "mimo")) {
        note(mg, "entry script %s (line %d): Megatron-LM's multimodal example, an MLLM (vision tower, projector, "
                 "language model) built from its argument list", entry, line);
        *mm = true;
        return 0;
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!strcmp(b, refused[i].name))
            return mm_err_set(err, MM_EINPUT, path, line, entry, "%s: %s", refused[i].name, refused[i].why);
    return mm_err_set(err, MM_EINPUT, path, line, entry,
                      "an entry script mmsim does not know (it reads pretrain_gpt.py's arguments)");
}

/* What an argument list is for, as the entry script decides it for a
 * launch script: a command word naming an entry script (`torchrun
 * examples/multimodal/train.py ...`) is checked as check_entry checks a
 * script's; without one, an argument only examples/multimodal/train.py
 * takes (multimodal_args.py: --vision-model-type, --language-model-type,
 * ...) makes the list the multimodal example's, an MLLM; else a GPT.  A
 * word after an option that takes a value is that value, not an entry. */
static int list_entry(const char *path, const words *ws, mm_megatron *mg, bool *mm, mm_err *err)
{
    for (int i = 0; i < ws->n; i++) {
        const char *w = ws->w[i].text, *prev = i > 0 ? ws->w[i - 1].text : "";
        size_t wl = strlen(w);
        bool value = !strncmp(prev, "--", 2) && !strchr(prev, '=');
        if (strncmp(w, "--", 2) && !value && wl > 3 && !strcmp(w + wl - 3, ".py"))
            return check_entry(path, w, ws->w[i].line, mg, mm, err);
    }
    for (int i = 0; i < ws->n; i++) {
        const char *w = ws->w[i].text;
        if (strncmp(w, "--", 2))
            continue;
        char name[64];
        const char *eq = strchr(w, '=');
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - w) : (int)strlen(w), w);
        if (mm_mg_mm_arg_find(name) && !mm_mg_arg_find(name)) {
            note(mg, "%s (line %d): an argument of Megatron-LM's multimodal example (multimodal_args.py), so the "
                     "list is examples/multimodal/train.py's: an MLLM", name, ws->w[i].line);
            *mm = true;
            return 0;
        }
    }
    return 0;
}

/* The words of FILE: an argument list split as bash splits it, or (a
 * launch script) the arguments after its entry script, expanded. */
static int read_words(const char *path, bool script, mm_megatron *mg, words *ws, bool *mm, mm_err *err)
{
    if (script) {
        char entry[256];
        int line = 0;
        mm_mg_words notes;
        int rc = mm_mg_script_read(path, ws, entry, sizeof entry, &line, &notes, err);
        if (rc)
            return rc;
        for (int i = 0; i < notes.n; i++)
            note(mg, "script: %s", notes.w[i].text);
        mm_mg_words_free(&notes);
        if ((rc = check_entry(path, entry, line, mg, mm, err)))
            mm_mg_words_free(ws);
        return rc;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return mm_err_set(err, MM_EINPUT, path, 0, "--megatron-args", "cannot read: %s", strerror(errno));
    char *text = malloc(1 << 20);
    size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!text)
        return mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    text[n] = '\0';
    int rc = split(path, text, ws, err);
    free(text);
    if (rc == 0 && (rc = list_entry(path, ws, mg, mm, err)))
        mm_mg_words_free(ws);
    return rc;
}

static int read_any(const char *path, bool script, mm_megatron *mg, mm_err *err)
{
    memset(mg, 0, sizeof *mg);
    words ws = {0};
    reader *r = calloc(1, sizeof *r);
    int rc = r ? read_words(path, script, mg, &ws, &r->mm, err)
               : mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    if (!rc) {
        r->path = path;
        r->mg = mg;
        r->err = err;
        rc = collect(r, &ws);
    }
    long tp = 1;
    shape m = {0};
    if (!rc)
        rc = get_long(r, "--tensor-model-parallel-size", 1, 1, &tp);
    if (!rc)
        rc = read_shape(r, tp, &m);
    mllm_args mllm = {0};
    if (!rc && r->mm)
        rc = read_mllm(r, &m, &mllm);
    if (!rc)
        rc = map_layout(r, &m, tp);
    if (!rc)
        rc = map_training(r, &m);
    if (!rc && r->mm) {
        char name[96];
        model_name(path, name, sizeof name);
        rc = map_mllm(r, &m, &mllm, name);
    } else if (!rc) {
        char name[96];
        model_name(path, name, sizeof name);
        write_json(&m, name, mg->model_json, sizeof mg->model_json);
        note(mg, "model -> %s config.json: h %ld, %ld layers, %ld heads (%ld kv), ffn %ld%s, %ld positions, "
                 "vocab %ld, %s%s",
             m.rope ? "Llama-style (RoPE, RMSNorm)" : "GPT-2-style (learned positions, LayerNorm)", m.hidden,
             m.layers, m.heads, m.groups, m.ffn, m.swiglu ? " SwiGLU" : " GeLU", m.maxpos, m.vocab,
             m.untie ? "untied" : "tied", m.experts ? ", MoE" : "");
    }
    mm_mg_words_free(&ws);
    free(r);
    return rc;
}

int mm_megatron_read(const char *path, mm_megatron *mg, mm_err *err)
{
    return read_any(path, false, mg, err);
}

int mm_megatron_read_script(const char *path, mm_megatron *mg, mm_err *err)
{
    return read_any(path, true, mg, err);
}

int mm_megatron_write_model(const mm_megatron *mg, const char *out_path, mm_err *err)
{
    FILE *f = fopen(out_path, "w");
    if (!f)
        return mm_err_set(err, MM_EINPUT, out_path, 0, "--megatron-model", "cannot write: %s", strerror(errno));
    fputs(mg->model_json, f);
    if (ferror(f) | fclose(f))
        return mm_err_set(err, MM_EINPUT, out_path, 0, "--megatron-model", "write failed");
    return 0;
}

void mm_megatron_add(mm_megatron *mg, const char *from, const char *key, const char *value)
{
    if (mg->n_sets < MM_MG_MAX_SETS)
        snprintf(mg->sets[mg->n_sets++], sizeof mg->sets[0], "%s=%s", key, value);
    note(mg, "%s -> %s: %s", from, key, value);
}

void mm_megatron_note(mm_megatron *mg, const char *text)
{
    note(mg, "%s", text);
}

void mm_megatron_repoint(const mm_megatron *mg, const char *path, const char *const *user_sets, int n_user,
                         mm_err *err)
{
    const char *sets[MM_MG_MAX_SETS], *from[MM_MG_MAX_SETS];
    for (int i = 0; i < mg->n_sets; i++) {
        sets[i] = mg->sets[i];
        from[i] = mg->set_from[i][0] ? mg->set_from[i] : NULL;
    }
    mm_scenario_repoint_set(err, path, user_sets, n_user, sets, from, mg->set_line, mg->n_sets);
}

/* True when one of the user's overrides sets `key` or a mapping above it
 * (parallel.llm={...} replaces dp too). */
static bool user_sets(const char *const *sets, int n_sets, const char *key)
{
    for (int i = 0; i < n_sets; i++) {
        size_t n = strcspn(sets[i], "=");
        while (n > 0 && (sets[i][n - 1] == ' ' || sets[i][n - 1] == '\t'))
            n--;
        if (!strncmp(sets[i], key, n) && (key[n] == '\0' || key[n] == '.'))
            return true;
    }
    return false;
}

static int scenario_of(const char *args, bool script, const char *scenario, const char *const *sets, int n_sets,
                       mm_megatron *mg, mm_scenario *sc, mm_err *err)
{
    int rc = read_any(args, script, mg, err);
    if (rc)
        return rc;
    mm_megatron_add(mg, "--transformer-impl", "train.framework", mg->wants_local ? "megatron-local" : "megatron-core");
    if (mg->save_interval > 0) {
        char v[32];
        snprintf(v, sizeof v, "%ld", mg->save_interval);
        if (user_sets(sets, n_sets, "train.save_gb_s")) {
            int at = mg->n_sets;
            mm_megatron_add(mg, "--save-interval", "train.save_interval", v);
            if (at < mg->n_sets) { /* errors on the key point at the argument */
                snprintf(mg->set_from[at], sizeof mg->set_from[0], "--save-interval");
                mg->set_line[at] = mg->save_line;
            }
        } else {
            char text[192];
            snprintf(text, sizeof text,
                     "--save-interval %s: checkpoint saves not charged: the storage's write bandwidth is the "
                     "site's, with no default; --set train.save_gb_s=GB/s charges them", v);
            mm_megatron_note(mg, text);
        }
    }
    snprintf(mg->model_set, sizeof mg->model_set, "model=%s", mg->model_json);
    if (n_sets > MM_MG_MAX_USER_SETS)
        return mm_err_set(err, MM_EINPUT, "--set", 0, "", "more than %d --set overrides", MM_MG_MAX_USER_SETS);
    const char *all[1 + MM_MG_MAX_SETS + MM_MG_MAX_USER_SETS];
    int n = 0;
    all[n++] = mg->model_set;
    for (int i = 0; i < mg->n_sets; i++)
        all[n++] = mg->sets[i];
    for (int i = 0; i < n_sets; i++)
        all[n++] = sets[i];
    if ((rc = mm_scenario_load(sc, scenario, all, n, err)))
        return rc;
    int gpus = 0;
    if ((rc = mm_scenario_cluster_gpus(sc, &gpus, err))) {
        mm_scenario_free(sc);
        return rc;
    }
    /* the degrees as they stand after the user's --set */
    mm_module_layout *L = &sc->parallel.llm;
    int per = L->lay.tp * L->lay.pp * L->lay.cp;
    if (gpus % per) {
        int line = 0; /* the line of --tensor-model-parallel-size, when given */
        for (int i = 0; i < mg->n_sets; i++)
            if (!strncmp(mg->sets[i], "parallel.llm.tp=", 16))
                line = mg->set_line[i];
        rc = mm_err_set(err, MM_EINPUT, args, line, "--tensor-model-parallel-size",
                        "tp x pp x cp = %d x %d x %d = %d does not divide the cluster's %d GPUs (set cluster.nodes)",
                        L->lay.tp, L->lay.pp, L->lay.cp, per, gpus);
        mm_scenario_free(sc);
        return rc;
    }
    /* dp as Megatron-LM derives it from the world size, unless the user's
     * --set gives it; then a global batch nobody gave is Megatron's default
     * for it, mbs x dp (what the reader derives from the dp it read) */
    if (user_sets(sets, n_sets, "parallel.llm.dp")) {
        mm_megatron_note(mg, "(world size) -> parallel.llm.dp: the user's --set");
        return 0;
    }
    L->lay.dp = gpus / per;
    if (!mm_scenario_key_given(sc, "train.global_batch"))
        sc->train.global_batch = sc->train.micro_batch * L->lay.dp;
    char note[96];
    snprintf(note, sizeof note, "(world size %d GPUs) -> parallel.llm.dp: %d", gpus, gpus / per);
    mm_megatron_note(mg, note);
    if (mm_scenario_note_key(sc, "parallel.llm.dp", "--set", 0)) {
        mm_scenario_free(sc);
        return mm_err_set(err, MM_EINTERNAL, args, 0, "", "out of memory");
    }
    return 0;
}

int mm_megatron_scenario(const char *args, const char *scenario, const char *const *sets, int n_sets,
                         mm_megatron *mg, mm_scenario *sc, mm_err *err)
{
    return scenario_of(args, false, scenario, sets, n_sets, mg, sc, err);
}

int mm_megatron_script_scenario(const char *script, const char *scenario, const char *const *sets, int n_sets,
                                mm_megatron *mg, mm_scenario *sc, mm_err *err)
{
    return scenario_of(script, true, scenario, sets, n_sets, mg, sc, err);
}
