/* megatron.c - reading a Megatron-LM argument list (megatron.h).
 *
 * The file is read the way bash would split a launch script's argument
 * lines, without running anything: `#` comments, backslash-newline
 * continuations, single and double quotes, `NAME=(` ... `)` array
 * brackets and `NAME=value` assignments are understood; command words
 * (torchrun, python, pretrain_gpt.py) are skipped; a shell variable is
 * never expanded: as the value of an argument that is ignored it is left
 * alone, anywhere else it is refused, naming it.
 *
 * The defaults are Megatron-LM's (megatron/training/arguments.py at
 * NVIDIA/Megatron-LM d98e8a6): ffn 4h, or int(8h/3 / 64) x 64 with
 * --swiglu; kv_channels h / heads; vocabulary padded to a multiple of
 * make-vocab-size-divisible-by (128) x tp (training/vocab_utils.py); the
 * GPT-2 BPE tokenizer's 50,257 tokens when no --vocab-size is given;
 * learned absolute positions, LayerNorm, biases on; fp32 unless --bf16,
 * --fp16 or --fp8-format (mmsim refuses fp32: it has no fp32 peak tables);
 * tp = pp = cp = ep = 1; no recompute; no distributed optimizer.
 * Not for: scenario validation (the scenario loader checks what this maps). */
#include "scenario/megatron.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cluster.h"
#include "scenario/scenario.h"
#include "scenario/sim.h"

/* ---- splitting the file into words ---------------------------------------- */

typedef struct word {
    char *text;
    int line;
} word;

typedef struct words {
    word *w;
    int n, cap;
} words;

static int push_word(words *ws, const char *buf, size_t len, int line)
{
    if (ws->n == ws->cap) {
        int cap = ws->cap ? 2 * ws->cap : 256;
        word *p = realloc(ws->w, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        ws->w = p;
        ws->cap = cap;
    }
    char *t = malloc(len + 1);
    if (!t)
        return -1;
    memcpy(t, buf, len);
    t[len] = '\0';
    ws->w[ws->n++] = (word){t, line};
    return 0;
}

static void free_words(words *ws)
{
    for (int i = 0; i < ws->n; i++)
        free(ws->w[i].text);
    free(ws->w);
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

/* ---- the arguments mmsim knows -------------------------------------------- */

typedef enum { A_FLAG, A_VALUE } arity;
typedef enum { K_MAP, K_IGNORE, K_REFUSE } kind;

typedef struct argdef {
    const char *name;
    arity ar;
    kind k;
    const char *why; /* ignored / refused: the reason shown */
} argdef;

#define IGN_OPT "optimizer or schedule hyper-parameter: no effect on an iteration's cost"
#define IGN_IO "data, checkpoint or logging path/interval: not simulated"
#define IGN_LAUNCH "launcher argument: the GPUs come from the scenario's cluster"

static const argdef defs[] = {
    /* model shape */
    {"--num-layers", A_VALUE, K_MAP, NULL}, {"--hidden-size", A_VALUE, K_MAP, NULL},
    {"--ffn-hidden-size", A_VALUE, K_MAP, NULL}, {"--num-attention-heads", A_VALUE, K_MAP, NULL},
    {"--group-query-attention", A_FLAG, K_MAP, NULL}, {"--num-query-groups", A_VALUE, K_MAP, NULL},
    {"--kv-channels", A_VALUE, K_MAP, NULL}, {"--seq-length", A_VALUE, K_MAP, NULL},
    {"--max-position-embeddings", A_VALUE, K_MAP, NULL}, {"--swiglu", A_FLAG, K_MAP, NULL},
    {"--untie-embeddings-and-output-weights", A_FLAG, K_MAP, NULL}, {"--vocab-size", A_VALUE, K_MAP, NULL},
    {"--make-vocab-size-divisible-by", A_VALUE, K_MAP, NULL}, {"--tokenizer-type", A_VALUE, K_MAP, NULL},
    {"--num-experts", A_VALUE, K_MAP, NULL}, {"--moe-router-topk", A_VALUE, K_MAP, NULL},
    {"--position-embedding-type", A_VALUE, K_MAP, NULL}, {"--normalization", A_VALUE, K_MAP, NULL},
    {"--disable-bias-linear", A_FLAG, K_MAP, NULL}, {"--add-qkv-bias", A_FLAG, K_MAP, NULL},
    /* layout */
    {"--tensor-model-parallel-size", A_VALUE, K_MAP, NULL}, {"--pipeline-model-parallel-size", A_VALUE, K_MAP, NULL},
    {"--num-layers-per-virtual-pipeline-stage", A_VALUE, K_MAP, NULL},
    {"--num-virtual-stages-per-pipeline-rank", A_VALUE, K_MAP, NULL},
    {"--context-parallel-size", A_VALUE, K_MAP, NULL}, {"--expert-model-parallel-size", A_VALUE, K_MAP, NULL},
    /* training */
    {"--micro-batch-size", A_VALUE, K_MAP, NULL}, {"--global-batch-size", A_VALUE, K_MAP, NULL},
    {"--bf16", A_FLAG, K_MAP, NULL}, {"--fp16", A_FLAG, K_MAP, NULL}, {"--fp8-format", A_VALUE, K_MAP, NULL},
    {"--recompute-granularity", A_VALUE, K_MAP, NULL}, {"--recompute-method", A_VALUE, K_MAP, NULL},
    {"--recompute-num-layers", A_VALUE, K_MAP, NULL}, {"--recompute-activations", A_FLAG, K_MAP, NULL},
    {"--sequence-parallel", A_FLAG, K_MAP, NULL}, {"--use-distributed-optimizer", A_FLAG, K_MAP, NULL},
    {"--overlap-grad-reduce", A_FLAG, K_MAP, NULL}, {"--overlap-param-gather", A_FLAG, K_MAP, NULL},
    {"--tp-comm-overlap", A_FLAG, K_MAP, NULL}, {"--use-flash-attn", A_FLAG, K_MAP, NULL},
    {"--attention-backend", A_VALUE, K_MAP, NULL}, {"--transformer-impl", A_VALUE, K_MAP, NULL},
    {"--enable-cuda-graph", A_FLAG, K_MAP, NULL}, {"--cuda-graph-scope", A_VALUE, K_MAP, NULL},
    {"--cuda-graph-impl", A_VALUE, K_MAP, NULL},
    {"--use-mcore-models", A_FLAG, K_IGNORE, "Megatron-Core models are the default (--transformer-impl)"},
    {"--use-legacy-models", A_FLAG, K_REFUSE, "the legacy (non-core) model code is not modeled"},
    /* ignored: no effect on the cost of an iteration */
    {"--train-iters", A_VALUE, K_IGNORE, "length of training: mmsim simulates `iterations`"},
    {"--train-samples", A_VALUE, K_IGNORE, "length of training: mmsim simulates `iterations`"},
    {"--step-batch-size-schedule", A_VALUE, K_IGNORE, "batch ramp-up: the steady --global-batch-size is simulated"},
    {"--rampup-batch-size", A_VALUE, K_IGNORE, "batch ramp-up: the steady --global-batch-size is simulated"},
    {"--lr", A_VALUE, K_IGNORE, IGN_OPT}, {"--min-lr", A_VALUE, K_IGNORE, IGN_OPT},
    {"--lr-decay-style", A_VALUE, K_IGNORE, IGN_OPT}, {"--lr-decay-iters", A_VALUE, K_IGNORE, IGN_OPT},
    {"--lr-decay-samples", A_VALUE, K_IGNORE, IGN_OPT}, {"--lr-warmup-fraction", A_VALUE, K_IGNORE, IGN_OPT},
    {"--lr-warmup-iters", A_VALUE, K_IGNORE, IGN_OPT}, {"--lr-warmup-samples", A_VALUE, K_IGNORE, IGN_OPT},
    {"--decoupled-lr", A_VALUE, K_IGNORE, IGN_OPT}, {"--decoupled-min-lr", A_VALUE, K_IGNORE, IGN_OPT},
    {"--weight-decay", A_VALUE, K_IGNORE, IGN_OPT}, {"--clip-grad", A_VALUE, K_IGNORE, IGN_OPT},
    {"--adam-beta1", A_VALUE, K_IGNORE, IGN_OPT}, {"--adam-beta2", A_VALUE, K_IGNORE, IGN_OPT},
    {"--adam-eps", A_VALUE, K_IGNORE, IGN_OPT}, {"--init-method-std", A_VALUE, K_IGNORE, IGN_OPT},
    {"--attention-dropout", A_VALUE, K_IGNORE, "dropout probability: the masks are not costed apart"},
    {"--hidden-dropout", A_VALUE, K_IGNORE, "dropout probability: the masks are not costed apart"},
    {"--seed", A_VALUE, K_IGNORE, "training seed (mmsim's `seed` draws the workload)"},
    {"--rotary-base", A_VALUE, K_IGNORE, "RoPE frequency base: same cost"},
    {"--rotary-percent", A_VALUE, K_IGNORE, "share of head dims rotated: RoPE is costed on all of q and k"},
    {"--norm-epsilon", A_VALUE, K_IGNORE, "numerics only"}, {"--apply-layernorm-1p", A_FLAG, K_IGNORE, "numerics only"},
    {"--fp8-amax-history-len", A_VALUE, K_IGNORE, "FP8 scaling recipe: numerics only"},
    {"--fp8-amax-compute-algo", A_VALUE, K_IGNORE, "FP8 scaling recipe: numerics only"},
    {"--data-path", A_VALUE, K_IGNORE, IGN_IO}, {"--vocab-file", A_VALUE, K_IGNORE, IGN_IO},
    {"--merge-file", A_VALUE, K_IGNORE, IGN_IO}, {"--tokenizer-model", A_VALUE, K_IGNORE, IGN_IO},
    {"--split", A_VALUE, K_IGNORE, IGN_IO}, {"--data-cache-path", A_VALUE, K_IGNORE, IGN_IO},
    {"--mock-data", A_FLAG, K_IGNORE, IGN_IO}, {"--num-workers", A_VALUE, K_IGNORE, IGN_IO},
    {"--save", A_VALUE, K_IGNORE, IGN_IO}, {"--load", A_VALUE, K_IGNORE, IGN_IO},
    {"--save-interval", A_VALUE, K_IGNORE, IGN_IO}, {"--ckpt-format", A_VALUE, K_IGNORE, IGN_IO},
    {"--eval-interval", A_VALUE, K_IGNORE, IGN_IO}, {"--eval-iters", A_VALUE, K_IGNORE, IGN_IO},
    {"--log-interval", A_VALUE, K_IGNORE, IGN_IO}, {"--tensorboard-dir", A_VALUE, K_IGNORE, IGN_IO},
    {"--log-throughput", A_FLAG, K_IGNORE, IGN_IO}, {"--wandb-project", A_VALUE, K_IGNORE, IGN_IO},
    {"--wandb-exp-name", A_VALUE, K_IGNORE, IGN_IO}, {"--exit-duration-in-mins", A_VALUE, K_IGNORE, IGN_IO},
    {"--exit-interval", A_VALUE, K_IGNORE, IGN_IO}, {"--distributed-backend", A_VALUE, K_IGNORE, IGN_LAUNCH},
    {"--distributed-timeout-minutes", A_VALUE, K_IGNORE, IGN_LAUNCH},
    {"--manual-gc", A_FLAG, K_IGNORE, "host garbage collection: not simulated"},
    {"--empty-unused-memory-level", A_VALUE, K_IGNORE, "allocator cache release: covered by train.memory_reserve_gib"},
    {"--calculate-per-token-loss", A_FLAG, K_IGNORE, "loss normalisation: same work"},
    {"--cross-entropy-loss-fusion", A_FLAG, K_IGNORE, "the loss is not costed apart from the LM head"},
    /* torchrun's own arguments, when the whole command line is given */
    {"--nproc_per_node", A_VALUE, K_IGNORE, IGN_LAUNCH}, {"--nnodes", A_VALUE, K_IGNORE, IGN_LAUNCH},
    {"--node_rank", A_VALUE, K_IGNORE, IGN_LAUNCH}, {"--master_addr", A_VALUE, K_IGNORE, IGN_LAUNCH},
    {"--master_port", A_VALUE, K_IGNORE, IGN_LAUNCH},
    /* refused: they change the cost in ways mmsim does not model */
    {"--fp8-param-gather", A_FLAG, K_REFUSE, "FP8 parameter all-gather (half the bytes) is not modeled"},
    {"--grad-reduce-in-bf16", A_FLAG, K_REFUSE, "gradient reduction in BF16 instead of FP32 is not modeled"},
    {"--decoder-first-pipeline-num-layers", A_VALUE, K_REFUSE,
     "uneven stages: use --set parallel.llm.layers_per_stage=[...] instead"},
    {"--decoder-last-pipeline-num-layers", A_VALUE, K_REFUSE,
     "uneven stages: use --set parallel.llm.layers_per_stage=[...] instead"},
    {"--account-for-embedding-in-pipeline-split", A_FLAG, K_REFUSE, "uneven stages: use parallel.llm.layers_per_stage"},
    {"--account-for-loss-in-pipeline-split", A_FLAG, K_REFUSE, "uneven stages: use parallel.llm.layers_per_stage"},
    {"--expert-tensor-parallel-size", A_VALUE, K_REFUSE, "a TP degree of the experts apart from the model's"},
    {"--moe-ffn-hidden-size", A_VALUE, K_REFUSE, "experts narrower than the dense MLP"},
    {"--moe-shared-expert-intermediate-size", A_VALUE, K_REFUSE, "shared experts"},
    {"--moe-layer-freq", A_VALUE, K_REFUSE, "a mix of dense and MoE layers"},
    {"--moe-grouped-gemm", A_FLAG, K_REFUSE, "grouped-GEMM expert kernels"},
    {"--multi-latent-attention", A_FLAG, K_REFUSE, "multi-latent attention (DeepSeek)"},
    {"--use-torch-fsdp2", A_FLAG, K_REFUSE, "FSDP2 instead of Megatron's data parallelism"},
    {"--cpu-offloading", A_FLAG, K_REFUSE, "activation/weight offloading to the host"},
    {"--distribute-saved-activations", A_FLAG, K_REFUSE, "saved activations split over TP ranks"},
    {"--no-gradient-accumulation-fusion", A_FLAG, K_REFUSE, "unfused weight-gradient accumulation"},
    {"--fp4-format", A_VALUE, K_REFUSE, "FP4 training"},
};

static const argdef *find_def(const char *name)
{
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        if (!strcmp(defs[i].name, name))
            return &defs[i];
    return NULL;
}

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
} reader;

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

/* Walks the words: each option is looked up, its value taken, ignored and
 * refused ones dealt with here. */
static int collect(reader *r, const words *ws)
{
    for (int i = 0; i < ws->n; i++) {
        const char *w = ws->w[i].text;
        int line = ws->w[i].line;
        size_t wl = strlen(w);
        if (!strcmp(w, "(") || !strcmp(w, ")") || (wl > 2 && !strcmp(w + wl - 2, "=(")))
            continue; /* bash array brackets */
        if (strncmp(w, "--", 2) != 0) {
            if (w[0] == '$')
                return mm_err_set(r->err, MM_EINPUT, r->path, line, w,
                                  "a shell variable standing for arguments is not expanded: write the arguments "
                                  "it holds into the file");
            continue; /* a command word (torchrun, python, pretrain_gpt.py) or NAME=value */
        }
        char name[64];
        const char *eq = strchr(w, '=');
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - w) : (int)wl, w);
        const argdef *d = find_def(name);
        if (!d)
            return mm_err_set(r->err, MM_EINPUT, r->path, line, name,
                              "not in mmsim's Megatron-LM mapping (docs/megatron.md), so whether it changes the "
                              "cost is unknown: remove it, or ask for it to be modeled");
        const char *value = "";
        if (d->ar == A_VALUE) {
            if (eq)
                value = eq + 1;
            else if (i + 1 < ws->n && strncmp(ws->w[i + 1].text, "--", 2) != 0)
                value = ws->w[++i].text;
            else
                return mm_err_set(r->err, MM_EINPUT, r->path, line, name, "needs a value");
        } else if (eq) {
            return mm_err_set(r->err, MM_EINPUT, r->path, line, name, "takes no value, got '%s'", eq + 1);
        }
        if (d->k == K_REFUSE)
            return mm_err_set(r->err, MM_EINPUT, r->path, line, name, "changes the cost, and mmsim does not model it: %s",
                              d->why);
        if (d->k == K_IGNORE) {
            note(r->mg, "%s: ignored (%s)", name, d->why);
            continue;
        }
        if (strchr(value, '$'))
            return mm_err_set(r->err, MM_EINPUT, r->path, line, name,
                              "value '%s' is a shell variable, which mmsim does not expand: write the value", value);
        if (r->n == (int)(sizeof r->s / sizeof r->s[0]))
            return mm_err_set(r->err, MM_EINPUT, r->path, line, name, "more than %d mapped arguments", r->n);
        seen *s = &r->s[r->n++];
        snprintf(s->name, sizeof s->name, "%s", name);
        snprintf(s->value, sizeof s->value, "%s", value);
        s->line = line;
    }
    return 0;
}

/* ---- the model ----------------------------------------------------------------- */

typedef struct shape {
    long layers, hidden, heads, groups, kv, ffn, seq, maxpos, vocab, experts, topk;
    bool swiglu, untie, rope, gqa, bias, qkv_bias;
} shape;

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
        (rc = get_long(r, "--moe-router-topk", 1, 2, &m->topk)))
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
    long mult = div * tp;
    m->vocab = (vocab + mult - 1) / mult * mult;
    if (m->vocab != vocab)
        note(r->mg, "vocabulary padded %ld -> %ld (multiple of %ld x tp %ld, as Megatron-LM pads it)", vocab, m->vocab,
             div, tp);
    const char *pos = get_str(r, "--position-embedding-type", "learned_absolute");
    if (strcmp(pos, "rope") && strcmp(pos, "learned_absolute"))
        return bad(r, "--position-embedding-type", "'%s' is not modeled (rope | learned_absolute)", pos);
    m->rope = !strcmp(pos, "rope");
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
    return 0;
}

static void write_json(const shape *m, char *out, size_t len)
{
    size_t n = 0;
#define J(...) (n += (size_t)snprintf(out + n, n < len ? len - n : 0, __VA_ARGS__))
    if (!m->rope) {
        J("{\n  \"model_type\": \"gpt2\",\n  \"activation_function\": \"gelu\",\n  \"n_embd\": %ld,\n"
          "  \"n_layer\": %ld,\n  \"n_head\": %ld,\n  \"n_inner\": %ld,\n  \"n_positions\": %ld,\n"
          "  \"vocab_size\": %ld,\n  \"tie_word_embeddings\": %s\n}\n",
          m->hidden, m->layers, m->heads, m->ffn, m->maxpos, m->vocab, m->untie ? "false" : "true");
        return;
    }
    /* Llama keys; Q/K/V biases without the others is Qwen2's layout */
    bool qwen = m->qkv_bias && !m->bias;
    J("{\n  \"model_type\": \"%s\",\n  \"hidden_act\": \"%s\",\n  \"hidden_size\": %ld,\n"
      "  \"num_hidden_layers\": %ld,\n  \"num_attention_heads\": %ld,\n  \"num_key_value_heads\": %ld,\n",
      qwen ? "qwen2" : "llama", m->swiglu ? "silu" : "gelu", m->hidden, m->layers, m->heads, m->groups);
    if (m->kv)
        J("  \"head_dim\": %ld,\n", m->kv);
    if (m->experts)
        J("  \"num_local_experts\": %ld,\n  \"num_experts_per_tok\": %ld,\n", m->experts, m->topk);
    J("  \"intermediate_size\": %ld,\n  \"max_position_embeddings\": %ld,\n  \"vocab_size\": %ld,\n"
      "  \"attention_bias\": %s,\n  \"mlp_bias\": %s,\n  \"tie_word_embeddings\": %s\n}\n",
      m->ffn, m->maxpos, m->vocab, m->bias && !qwen ? "true" : "false", m->bias ? "true" : "false",
      m->untie ? "false" : "true");
#undef J
}

/* ---- layout and training ------------------------------------------------------- */

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
    if (vpl) {
        if (m->layers % (pp * vpl))
            return bad(r, "--num-layers-per-virtual-pipeline-stage", "%ld layers x pp %ld do not divide %ld layers",
                       vpl, pp, m->layers);
        vpp = m->layers / (pp * vpl);
    }
    set(r, "--tensor-model-parallel-size", "parallel.llm.tp", "%ld", tp);
    set(r, "--pipeline-model-parallel-size", "parallel.llm.pp", "%ld", pp);
    set(r, "--context-parallel-size", "parallel.llm.cp", "%ld", cp);
    set(r, "--expert-model-parallel-size", "parallel.llm.ep", "%ld", ep);
    set(r, vpl ? "--num-layers-per-virtual-pipeline-stage" : "--num-virtual-stages-per-pipeline-rank",
        "parallel.llm.vpp", "%ld", vpp);
    /* Megatron runs the interleaved 1F1B schedule when there are virtual stages */
    set(r, "(schedule)", "train.schedule", "%s", vpp > 1 ? "interleaved" : "1f1b");
    return 0;
}

static int map_precision(reader *r)
{
    const char *fp8 = get_str(r, "--fp8-format", NULL);
    if (fp8 && strcmp(fp8, "e4m3") && strcmp(fp8, "hybrid"))
        return bad(r, "--fp8-format", "'%s' is not e4m3 or hybrid", fp8);
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

static int map_training(reader *r, const shape *m)
{
    mm_megatron *mg = r->mg;
    int rc;
    long mbs, gbs;
    if ((rc = get_long(r, "--micro-batch-size", 1, 1, &mbs)) || (rc = get_long(r, "--global-batch-size", 1, 0, &gbs)))
        return rc;
    set(r, "--seq-length", "train.seq_len", "%ld", m->seq);
    set(r, "--micro-batch-size", "train.micro_batch", "%ld", mbs);
    if (gbs)
        set(r, "--global-batch-size", "train.global_batch", "%ld", gbs);
    else
        note(mg, "no --global-batch-size: the scenario's train.global_batch (Megatron's default is mbs x dp)");
    if ((rc = map_precision(r)) || (rc = map_recompute(r)))
        return rc;
    set(r, "--sequence-parallel", "train.sequence_parallel", "%s", has(r, "--sequence-parallel") ? "true" : "false");
    set(r, "--use-distributed-optimizer", "train.zero", "%d", has(r, "--use-distributed-optimizer") ? 1 : 0);
    set(r, "--overlap-grad-reduce", "train.overlap_grad_reduce", "%s",
        has(r, "--overlap-grad-reduce") ? "true" : "false");
    set(r, "--overlap-param-gather", "train.overlap_param_gather", "%s",
        has(r, "--overlap-param-gather") ? "true" : "false");
    set(r, "--tp-comm-overlap", "train.tp_comm_overlap", "%s", has(r, "--tp-comm-overlap") ? "true" : "false");
    /* CUDA graphs: --enable-cuda-graph (per layer; --cuda-graph-scope
     * full_iteration: the whole forward-backward) or, in later versions,
     * --cuda-graph-impl local | transformer_engine (per layer) |
     * full_iteration */
    const char *gimpl = get_str(r, "--cuda-graph-impl", "none"), *gscope = get_str(r, "--cuda-graph-scope", "");
    if (strcmp(gimpl, "none") && strcmp(gimpl, "local") && strcmp(gimpl, "transformer_engine") &&
        strcmp(gimpl, "full_iteration"))
        return bad(r, "--cuda-graph-impl", "'%s' is not none, local, transformer_engine or full_iteration", gimpl);
    bool full = !strcmp(gimpl, "full_iteration") || !strcmp(gscope, "full_iteration");
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
    set(r, "(text-only model)", "workload", "text");
    return 0;
}

int mm_megatron_read(const char *path, mm_megatron *mg, mm_err *err)
{
    memset(mg, 0, sizeof *mg);
    FILE *f = fopen(path, "r");
    if (!f)
        return mm_err_set(err, MM_EINPUT, path, 0, "--megatron-args", "cannot read: %s", strerror(errno));
    char *text = malloc(1 << 20);
    size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!text)
        return mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    text[n] = '\0';
    words ws = {0};
    reader *r = calloc(1, sizeof *r);
    int rc = r ? split(path, text, &ws, err) : mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    free(text);
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
    if (!rc)
        rc = map_layout(r, &m, tp);
    if (!rc)
        rc = map_training(r, &m);
    if (!rc) {
        write_json(&m, mg->model_json, sizeof mg->model_json);
        note(mg, "model -> %s config.json: h %ld, %ld layers, %ld heads (%ld kv), ffn %ld%s, %ld positions, "
                 "vocab %ld, %s%s",
             m.rope ? "Llama-style (RoPE, RMSNorm)" : "GPT-2-style (learned positions, LayerNorm)", m.hidden,
             m.layers, m.heads, m.groups, m.ffn, m.swiglu ? " SwiGLU" : " GeLU", m.maxpos, m.vocab,
             m.untie ? "untied" : "tied", m.experts ? ", MoE" : "");
    }
    free_words(&ws);
    free(r);
    return rc;
}

int mm_megatron_write_model(mm_megatron *mg, const char *out_path, mm_err *err)
{
    FILE *f = fopen(out_path, "w");
    if (!f)
        return mm_err_set(err, MM_EINPUT, out_path, 0, "--megatron-model", "cannot write: %s", strerror(errno));
    fputs(mg->model_json, f);
    if (ferror(f) | fclose(f))
        return mm_err_set(err, MM_EINPUT, out_path, 0, "--megatron-model", "write failed");
    if (mg->n_sets == MM_MG_MAX_SETS)
        return mm_err_set(err, MM_EINTERNAL, out_path, 0, "", "too many overrides");
    /* the model first, so that a later --set model=... of the user wins */
    memmove(mg->sets[1], mg->sets[0], (size_t)mg->n_sets * sizeof mg->sets[0]);
    memmove(mg->set_from[1], mg->set_from[0], (size_t)mg->n_sets * sizeof mg->set_from[0]);
    memmove(mg->set_line + 1, mg->set_line, (size_t)mg->n_sets * sizeof mg->set_line[0]);
    mg->set_from[0][0] = '\0';
    mg->set_line[0] = 0;
    snprintf(mg->sets[0], sizeof mg->sets[0], "model=%s", out_path);
    mg->n_sets++;
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

/* True when override "key=value" sets exactly `key`. */
static bool sets_key(const char *set, const char *key)
{
    size_t n = strlen(key);
    return !strncmp(set, key, n) && set[n] == '=';
}

void mm_megatron_repoint(const mm_megatron *mg, const char *path, const char *const *user_sets, int n_user,
                         mm_err *err)
{
    if (!err || err->code != MM_EINPUT || strcmp(err->file, "--set") != 0)
        return;
    for (int i = 0; i < n_user; i++)
        if (sets_key(user_sets[i], err->key))
            return; /* the user's own --set */
    for (int i = mg->n_sets - 1; i >= 0; i--) {
        if (!sets_key(mg->sets[i], err->key) || !mg->set_from[i][0])
            continue;
        size_t n = strlen(err->msg);
        if (n + strlen(mg->set_from[i]) + 8 < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - n, " (from %s)", mg->set_from[i]);
        snprintf(err->file, sizeof err->file, "%s", path);
        err->line = mg->set_line[i];
        return;
    }
}

/* The GPUs of the cluster the scenario (with the overrides) names. */
static int cluster_gpus(const mm_scenario *sc, int *gpus, mm_err *err)
{
    char topo[1024];
    mm_sim_resolve_path(sc->topology, sc->source, topo, sizeof topo);
    mm_cluster *cl = malloc(sizeof *cl);
    if (!cl)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = mm_cluster_load(topo, sc->nodes, cl, err);
    if (!rc)
        *gpus = mm_cluster_gpus(cl);
    mm_cluster_free(cl);
    free(cl);
    return rc;
}

int mm_megatron_scenario(const char *args, const char *scenario, const char *const *sets, int n_sets,
                         const char *model_path, mm_megatron *mg, mm_scenario *sc, mm_err *err)
{
    int rc = mm_megatron_read(args, mg, err);
    if (rc)
        return rc;
    mm_megatron_add(mg, "--transformer-impl", "train.framework", mg->wants_local ? "megatron-local" : "megatron-core");
    if ((rc = mm_megatron_write_model(mg, model_path, err)))
        return rc;
    if (mg->n_sets + 1 + n_sets > MM_MG_MAX_SETS + 1 + MM_MG_MAX_USER_SETS)
        return mm_err_set(err, MM_EINPUT, "--set", 0, "", "more than %d --set overrides", MM_MG_MAX_USER_SETS);
    const char *all[MM_MG_MAX_SETS + 1 + MM_MG_MAX_USER_SETS];
    int n = 0;
    for (int i = 0; i < mg->n_sets; i++)
        all[n++] = mg->sets[i];
    for (int i = 0; i < n_sets; i++)
        all[n++] = sets[i];
    if ((rc = mm_scenario_load(sc, scenario, all, n, err)))
        return rc;
    int gpus = 0;
    if ((rc = cluster_gpus(sc, &gpus, err))) {
        mm_scenario_free(sc);
        return rc;
    }
    /* the degrees as they stand after the user's --set */
    const mm_module_layout *L = &sc->parallel.llm;
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
    /* dp as Megatron-LM derives it from the world size, between the
     * argument list's overrides and the user's --set (which win): the
     * scenario is read once more with it, so every key keeps where it came
     * from for the layout checks' messages */
    snprintf(mg->dp_set, sizeof mg->dp_set, "parallel.llm.dp=%d", gpus / per);
    char note[96];
    snprintf(note, sizeof note, "(world size %d GPUs) -> parallel.llm.dp: %d", gpus, gpus / per);
    mm_megatron_note(mg, note);
    memmove(all + mg->n_sets + 1, all + mg->n_sets, (size_t)n_sets * sizeof *all);
    all[mg->n_sets] = mg->dp_set;
    mm_scenario_free(sc);
    return mm_scenario_load(sc, scenario, all, n + 1, err);
}
