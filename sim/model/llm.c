/* llm.c - decoder-only LLM: reading Hugging Face config.json files, and the
 * parameter counts, FLOPs and per-op costs of the model they describe.
 *
 * The config reader follows transformers' own defaults where a key is
 * absent, so a file Hugging Face loads means the same thing here; it only
 * insists on the keys that size the model.  The cost functions are closed
 * forms over the shape (Megatron-LM's conventions, see llm.h).
 * Not for: encoders, memory, timing, or layout checks. */
#include "model/llm.h"

#include <libfyaml.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/doc.h"

/* ------------------------------------------------------------------------ */
/* Reading config.json                                                       */
/* ------------------------------------------------------------------------ */

/* Upper bounds, far above any published model, that keep every count below
 * in int64 range: a block has at most ~7 * WIDTH_MAX^2 = 2^43 parameters,
 * times LAYERS_MAX = 2^59; embedding tables at most VOCAB_MAX * WIDTH_MAX.
 * heads * head_dim is held to WIDTH_MAX as well. */
#define WIDTH_MAX (INT64_C(1) << 20)
#define LAYERS_MAX (INT64_C(1) << 16)
#define VOCAB_MAX (INT64_C(1) << 24)
#define POS_MAX (INT64_C(1) << 40) /* RoPE models: only a stated limit */

typedef struct reader {
    const mm_doc *doc;
    struct fy_node *map;
    const char *prefix;
    mm_err *err;
} reader;

static void key_path(const reader *r, const char *key, char *buf, size_t len)
{
    if (r->prefix && r->prefix[0])
        snprintf(buf, len, "%s.%s", r->prefix, key);
    else
        snprintf(buf, len, "%s", key);
}

/* Present, non-null child, else NULL.  Hugging Face reads JSON null as
 * "use the default", e.g. GPT-2's "n_inner": null. */
static struct fy_node *child(const reader *r, const char *key)
{
    struct fy_node *n = mm_node_get(r->map, key);
    return mm_node_is_null(n) ? NULL : n;
}

static int missing(const reader *r, const char *key, const char *what)
{
    char kp[128];
    key_path(r, key, kp, sizeof kp);
    return mm_err_set(r->err, MM_EINPUT, r->doc->path, mm_node_line(r->map), kp,
                      "missing required key (%s)", what);
}

/* An integer in [min, max]; a quoted "4096" is a string and refused, as
 * Hugging Face would.  Absent or null: *found false, *out untouched. */
static int get_int(const reader *r, const char *key, int64_t min, int64_t max,
                   int64_t *out, bool *found)
{
    char kp[128];
    key_path(r, key, kp, sizeof kp);
    *found = false;
    if (!child(r, key))
        return 0;
    return mm_node_int(r->doc, r->map, key, kp, min, max, out, found, r->err);
}

static int need_int(const reader *r, const char *key, int64_t min, int64_t max,
                    int64_t *out, const char *what)
{
    bool found = false;
    int rc = get_int(r, key, min, max, out, &found);
    if (rc < 0)
        return rc;
    return found ? 0 : missing(r, key, what);
}

static int get_bool(const reader *r, const char *key, bool *out)
{
    char kp[128];
    key_path(r, key, kp, sizeof kp);
    if (!child(r, key))
        return 0;
    return mm_node_bool(r->doc, r->map, key, kp, out, NULL, r->err);
}

static int get_str(const reader *r, const char *key, char *out, size_t len)
{
    char kp[128];
    key_path(r, key, kp, sizeof kp);
    if (!child(r, key))
        return 0;
    return mm_node_str(r->doc, r->map, key, kp, out, len, NULL, r->err);
}

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

/* model_types whose transformers config class defaults tie_word_embeddings
 * to False (configuration_llama.py, configuration_mistral.py,
 * configuration_mixtral.py, configuration_qwen2.py, configuration_qwen2_moe.py,
 * configuration_qwen3.py, configuration_gpt_neox.py).  Every other class
 * inherits PretrainedConfig's default, True. */
static const char *const untied_by_default[] = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "gpt_neox", NULL
};

/* Gated MLP activations (SwiGLU: Shazeer 2020, "GLU Variants Improve
 * Transformer"); Gemma's GeGLU uses a gelu name, so it goes by model_type. */
static const char *const gated_acts[] = { "silu", "swish", "swiglu", NULL };
static const char *const gated_types[] = { "gemma", "gemma2", NULL };

/* GPT-2 keys (transformers configuration_gpt2.py).  n_inner null -> 4h. */
static int read_gpt2(const reader *r, mm_llm *m)
{
    int rc;
    bool found;
    if ((rc = need_int(r, "n_embd", 1, WIDTH_MAX, &m->hidden, "hidden size")) < 0 ||
        (rc = need_int(r, "n_layer", 1, LAYERS_MAX, &m->layers, "number of layers")) < 0 ||
        (rc = need_int(r, "n_head", 1, WIDTH_MAX, &m->heads, "attention heads")) < 0 ||
        (rc = need_int(r, "vocab_size", 1, VOCAB_MAX, &m->vocab, "vocabulary size")) < 0 ||
        (rc = need_int(r, "n_positions", 1, VOCAB_MAX, &m->max_pos,
                       "rows of the learned position table")) < 0)
        return rc;
    m->ffn = 4 * m->hidden;
    if ((rc = get_int(r, "n_inner", 1, WIDTH_MAX, &m->ffn, &found)) < 0)
        return rc;
    /* activation_function (gelu_new, gelu, relu, ...) only names the
     * element-wise op; GPT-2 blocks are never gated.  Read it to type-check. */
    char act[64] = "";
    if ((rc = get_str(r, "activation_function", act, sizeof act)) < 0)
        return rc;
    m->kv_heads = m->heads;
    m->gated_mlp = false;
    m->tied = true;
    m->learned_pos = true;
    m->rope = false;
    m->qkv_bias = m->out_bias = m->mlp_bias = true;
    m->rmsnorm = false;
    return 0;
}

/* Llama/Mistral/Qwen2 keys (configuration_llama.py and relatives), and
 * GPT-NeoX (configuration_gpt_neox.py), which shares the size keys. */
static int read_llama(const reader *r, mm_llm *m)
{
    int rc;
    bool found;
    bool neox = m->style == MM_LLM_NEOX;
    if ((rc = need_int(r, "hidden_size", 1, WIDTH_MAX, &m->hidden, "hidden size")) < 0 ||
        (rc = need_int(r, "num_hidden_layers", 1, LAYERS_MAX, &m->layers,
                       "number of layers")) < 0 ||
        (rc = need_int(r, "num_attention_heads", 1, WIDTH_MAX, &m->heads,
                       "attention heads")) < 0 ||
        (rc = need_int(r, "intermediate_size", 1, WIDTH_MAX, &m->ffn, "MLP width")) < 0 ||
        (rc = need_int(r, "vocab_size", 1, VOCAB_MAX, &m->vocab, "vocabulary size")) < 0)
        return rc;
    m->kv_heads = m->heads; /* absent -> MHA, as LlamaConfig does */
    if (!neox && (rc = get_int(r, "num_key_value_heads", 1, WIDTH_MAX, &m->kv_heads,
                               &found)) < 0)
        return rc;
    m->head_dim = 0;
    if ((rc = get_int(r, "head_dim", 1, WIDTH_MAX, &m->head_dim, &found)) < 0)
        return rc;
    if (m->head_dim > 0 && m->heads * m->head_dim > WIDTH_MAX) {
        char kp[128];
        key_path(r, "head_dim", kp, sizeof kp);
        return mm_err_set(r->err, MM_EINPUT, r->doc->path,
                          mm_node_key_line(r->map, "head_dim"), kp,
                          "heads x head_dim = %lld exceeds %lld",
                          (long long)(m->heads * m->head_dim), (long long)WIDTH_MAX);
    }
    m->max_pos = 0;
    if ((rc = get_int(r, "max_position_embeddings", 1, POS_MAX, &m->max_pos, &found)) < 0)
        return rc;

    char act[64] = "";
    if ((rc = get_str(r, "hidden_act", act, sizeof act)) < 0)
        return rc;
    if (neox) {
        m->gated_mlp = false;
        m->rmsnorm = false;
        /* GPTNeoXConfig: attention_bias defaults to True (query_key_value
         * and dense); the MLP always has biases. */
        bool ab = true;
        if ((rc = get_bool(r, "attention_bias", &ab)) < 0)
            return rc;
        m->qkv_bias = m->out_bias = ab;
        m->mlp_bias = true;
    } else {
        if (!act[0])
            snprintf(act, sizeof act, "silu"); /* LlamaConfig's default */
        m->gated_mlp = in_list(act, gated_acts) || in_list(m->model_type, gated_types);
        m->rmsnorm = true;
        /* LlamaConfig: attention_bias (q, k, v, o) and mlp_bias, default
         * False.  Qwen2Attention hard-codes bias=True on q, k, v only
         * (modeling_qwen2.py), with no key for it. */
        bool ab = false, mb = false;
        if ((rc = get_bool(r, "attention_bias", &ab)) < 0 ||
            (rc = get_bool(r, "mlp_bias", &mb)) < 0)
            return rc;
        m->qkv_bias = ab || strcmp(m->model_type, "qwen2") == 0;
        m->out_bias = ab;
        m->mlp_bias = mb;
    }
    m->tied = !in_list(m->model_type, untied_by_default);
    m->learned_pos = false;
    m->rope = true;
    /* MixtralConfig: num_local_experts (default 8), num_experts_per_tok
     * (default 2); only a mixtral model_type or an explicit key makes an MoE. */
    bool fe = false, fk = false;
    if (strcmp(m->model_type, "mixtral") == 0) {
        m->experts = 8;
        m->experts_per_tok = 2;
    }
    if ((rc = get_int(r, "num_local_experts", 1, 1 << 16, &m->experts, &fe)) < 0 ||
        (rc = get_int(r, "num_experts_per_tok", 1, 1 << 16, &m->experts_per_tok, &fk)) < 0)
        return rc;
    if (fe && !fk && m->experts_per_tok == 0)
        m->experts_per_tok = 2;
    if (m->experts > 0 && m->experts_per_tok > m->experts) {
        char kp[128];
        key_path(r, "num_experts_per_tok", kp, sizeof kp);
        return mm_err_set(r->err, MM_EINPUT, r->doc->path, mm_node_key_line(r->map, "num_experts_per_tok"),
                          kp, "%lld experts per token exceed the %lld experts",
                          (long long)m->experts_per_tok, (long long)m->experts);
    }
    return 0;
}

int mm_llm_from_node(const mm_doc *doc, struct fy_node *map, const char *prefix,
                     mm_llm *m, mm_err *err)
{
    reader r = { doc, map, prefix ? prefix : "", err };
    int rc;

    memset(m, 0, sizeof *m);

    if (!map || !fy_node_is_mapping(map))
        return mm_err_set(err, MM_EINPUT, doc->path, mm_node_line(map), r.prefix,
                          "expected a mapping of config.json keys");
    if ((rc = get_str(&r, "model_type", m->model_type, sizeof m->model_type)) < 0)
        return rc;

    if (mm_node_get(map, "n_embd") || strcmp(m->model_type, "gpt2") == 0)
        m->style = MM_LLM_GPT2;
    else if (strcmp(m->model_type, "gpt_neox") == 0)
        m->style = MM_LLM_NEOX;
    else
        m->style = MM_LLM_LLAMA;

    rc = m->style == MM_LLM_GPT2 ? read_gpt2(&r, m) : read_llama(&r, m);
    if (rc < 0)
        return rc;

    /* tie_word_embeddings overrides the per-class default in every style. */
    if ((rc = get_bool(&r, "tie_word_embeddings", &m->tied)) < 0)
        return rc;

    char kp[128];
    if (m->head_dim == 0) {
        if (m->hidden % m->heads != 0) {
            const char *key = m->style == MM_LLM_GPT2 ? "n_head" : "num_attention_heads";
            key_path(&r, key, kp, sizeof kp);
            return mm_err_set(err, MM_EINPUT, doc->path, mm_node_key_line(map, key), kp,
                              "%lld heads do not divide the hidden size %lld "
                              "(give head_dim to decouple them)",
                              (long long)m->heads, (long long)m->hidden);
        }
        m->head_dim = m->hidden / m->heads;
    }
    if (m->heads % m->kv_heads != 0) {
        key_path(&r, "num_key_value_heads", kp, sizeof kp);
        return mm_err_set(err, MM_EINPUT, doc->path,
                          mm_node_key_line(map, "num_key_value_heads"), kp,
                          "%lld key/value heads do not divide the %lld attention heads",
                          (long long)m->kv_heads, (long long)m->heads);
    }
    return 0;
}

int mm_llm_load(const char *path, mm_llm *m, mm_err *err)
{
    mm_doc doc;
    memset(&doc, 0, sizeof doc);
    int rc = mm_doc_load_file(&doc, path, err);
    if (rc < 0)
        return rc;
    rc = mm_llm_from_node(&doc, mm_doc_root(&doc), "", m, err);
    mm_doc_free(&doc);
    if (rc < 0)
        return rc;

    /* name = file name without folders and extension */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.'); /* "qwen2.5-7b.json": last dot only */
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (n >= sizeof m->name)
        n = sizeof m->name - 1;
    memcpy(m->name, base, n);
    m->name[n] = '\0';
    snprintf(m->source, sizeof m->source, "%s", path);
    return 0;
}

void mm_llm_init_gpt(mm_llm *m, int64_t hidden, int64_t layers, int64_t heads,
                     int64_t vocab, int64_t seq)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "gpt-h%lld-l%lld", (long long)hidden,
             (long long)layers);
    snprintf(m->model_type, sizeof m->model_type, "gpt2");
    m->style = MM_LLM_GPT2;
    m->hidden = hidden;
    m->layers = layers;
    m->heads = heads;
    m->kv_heads = heads;
    m->head_dim = heads > 0 ? hidden / heads : 0;
    m->ffn = 4 * hidden;
    m->vocab = vocab;
    m->max_pos = seq;
    m->tied = true;
    m->learned_pos = true;
    m->qkv_bias = m->out_bias = m->mlp_bias = true;
}

int mm_llm_validate(const mm_llm *m, mm_err *err)
{
    const struct { const char *key; int64_t v, max; } dims[] = {
        { "hidden", m->hidden, WIDTH_MAX }, { "layers", m->layers, LAYERS_MAX },
        { "heads", m->heads, WIDTH_MAX }, { "kv_heads", m->kv_heads, WIDTH_MAX },
        { "head_dim", m->head_dim, WIDTH_MAX }, { "ffn", m->ffn, WIDTH_MAX },
        { "vocab", m->vocab, VOCAB_MAX },
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v < 1 || dims[i].v > dims[i].max)
            return mm_err_set(err, MM_EINPUT, m->source, 0, dims[i].key,
                              "must be in [1, %lld], got %lld",
                              (long long)dims[i].max, (long long)dims[i].v);
    if (m->heads * m->head_dim > WIDTH_MAX)
        return mm_err_set(err, MM_EINPUT, m->source, 0, "head_dim",
                          "heads x head_dim = %lld exceeds %lld",
                          (long long)(m->heads * m->head_dim), (long long)WIDTH_MAX);
    if (m->heads % m->kv_heads != 0)
        return mm_err_set(err, MM_EINPUT, m->source, 0, "kv_heads",
                          "%lld key/value heads do not divide %lld heads",
                          (long long)m->kv_heads, (long long)m->heads);
    if (m->learned_pos && (m->max_pos < 1 || m->max_pos > VOCAB_MAX))
        return mm_err_set(err, MM_EINPUT, m->source, 0, "max_pos",
                          "a learned position table needs 1 to %lld rows, got %lld",
                          (long long)VOCAB_MAX, (long long)m->max_pos);
    if (m->max_pos < 0 || m->max_pos > POS_MAX)
        return mm_err_set(err, MM_EINPUT, m->source, 0, "max_pos",
                          "must be in [0, %lld], got %lld", (long long)POS_MAX,
                          (long long)m->max_pos);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Parameters                                                                */
/* ------------------------------------------------------------------------ */

static int64_t norm_params(const mm_llm *m)
{
    return m->rmsnorm ? m->hidden : 2 * m->hidden;
}

int64_t mm_llm_layer_params(const mm_llm *m)
{
    int64_t h = m->hidden, q = m->heads * m->head_dim, kv = m->kv_heads * m->head_dim;
    int64_t attn = h * (q + 2 * kv) + q * h;
    if (m->qkv_bias)
        attn += q + 2 * kv;
    if (m->out_bias)
        attn += h;
    int64_t up = m->gated_mlp ? 2 * m->ffn : m->ffn; /* gate + up, or fc1 */
    int64_t mlp = h * up + m->ffn * h;
    if (m->mlp_bias)
        mlp += up + h;
    if (m->experts > 0) /* every expert an MLP, plus the router (no bias) */
        mlp = m->experts * mlp + h * m->experts;
    return attn + mlp + 2 * norm_params(m);
}

int64_t mm_llm_layer_expert_params(const mm_llm *m)
{
    if (m->experts <= 0)
        return 0;
    int64_t h = m->hidden, up = m->gated_mlp ? 2 * m->ffn : m->ffn;
    int64_t mlp = h * up + m->ffn * h + (m->mlp_bias ? up + h : 0);
    return m->experts * mlp;
}

int64_t mm_llm_embedding_params(const mm_llm *m)
{
    return m->vocab * m->hidden + (m->learned_pos ? m->max_pos * m->hidden : 0);
}

int64_t mm_llm_head_params(const mm_llm *m)
{
    return m->tied ? 0 : m->vocab * m->hidden; /* GPT-2, Llama, NeoX: no bias */
}

int64_t mm_llm_final_norm_params(const mm_llm *m)
{
    return norm_params(m);
}

/* For the Megatron GPTs this is Narayanan et al.'s
 * P = 12lh^2(1 + 13/12h + (V+s)/12lh) (formulas.md 8.1) plus the final
 * LayerNorm's 2h, which that closed form leaves out. */
int64_t mm_llm_params(const mm_llm *m)
{
    return m->layers * mm_llm_layer_params(m) + mm_llm_embedding_params(m) +
           mm_llm_final_norm_params(m) + mm_llm_head_params(m);
}

/* ------------------------------------------------------------------------ */
/* FLOPs                                                                     */
/* ------------------------------------------------------------------------ */

/* The matmul FLOPs of one block that scale with tokens (everything but the
 * attention core), per token: 2h(a+2g)d + 2*a*d*h + 2hf*(gated ? 3 : 2). */
static double layer_linear_flops_per_token(const mm_llm *m)
{
    double h = (double)m->hidden, q = (double)(m->heads * m->head_dim);
    double kv = (double)(m->kv_heads * m->head_dim), f = (double)m->ffn;
    double mlp = 2.0 * h * f * (m->gated_mlp ? 3.0 : 2.0);
    if (m->experts > 0) /* top-k experts per token, plus the router */
        mlp = (double)m->experts_per_tok * mlp + 2.0 * h * (double)m->experts;
    return 2.0 * h * (q + 2.0 * kv) + 2.0 * q * h + mlp;
}

/* Q K^T and P V: 2 matmuls of 2*s^2*d FLOPs per head per sequence. */
static double attn_flops(const mm_llm *m, double sum_sq)
{
    return 4.0 * sum_sq * (double)(m->heads * m->head_dim);
}

double mm_llm_layer_fwd_flops_packed(const mm_llm *m, double tokens, double sum_sq)
{
    return tokens * layer_linear_flops_per_token(m) + attn_flops(m, sum_sq);
}

double mm_llm_layer_fwd_flops(const mm_llm *m, double b, double s)
{
    return mm_llm_layer_fwd_flops_packed(m, b * s, b * s * s);
}

double mm_llm_layer_attn_fwd_flops(const mm_llm *m, double b, double s)
{
    return attn_flops(m, b * s * s);
}

double mm_llm_head_fwd_flops(const mm_llm *m, double b, double s)
{
    return 2.0 * b * s * (double)m->hidden * (double)m->vocab;
}

/* Backward is two matmuls per forward matmul (input and weight gradients),
 * hence 3x forward (Narayanan et al. SC'21 appendix; Megatron-LM
 * num_floating_point_operations, forward_backward_expansion_factor = 3). */
double mm_llm_model_flops(const mm_llm *m, double B, double s)
{
    return 3.0 * ((double)m->layers * mm_llm_layer_fwd_flops(m, B, s) +
                  mm_llm_head_fwd_flops(m, B, s));
}

double mm_llm_hw_flops(const mm_llm *m, double B, double s, int recompute)
{
    double extra;
    switch (recompute) {
    case MM_RECOMPUTE_NONE: extra = 0.0; break;
    /* Korthikanti et al. 2022 section 5: selective recomputation redoes only
     * the attention core (softmax(QK^T) V and what feeds it). */
    case MM_RECOMPUTE_SELECTIVE: extra = mm_llm_layer_attn_fwd_flops(m, B, s); break;
    /* Full: every block's forward runs again before its backward; the LM head
     * is outside the checkpointed blocks, so 96 not 72 on the layer terms
     * only: 96Bslh^2(1 + s/6h + V/16lh) (Narayanan et al. SC'21 eq. 3). */
    case MM_RECOMPUTE_FULL: extra = mm_llm_layer_fwd_flops(m, B, s); break;
    default: return NAN;
    }
    return mm_llm_model_flops(m, B, s) + (double)m->layers * extra;
}

/* ------------------------------------------------------------------------ */
/* Per-op costs                                                              */
/* ------------------------------------------------------------------------ */

typedef struct op_list {
    mm_op_cost *ops;
    int n, cap;
} op_list;

static void push(op_list *l, const char *name, mm_op_kind kind, double flops,
                 double bytes, double m, double n, double k, double batch, bool causal)
{
    if (l->n < l->cap)
        l->ops[l->n] = (mm_op_cost){ name, kind, flops, bytes, m, n, k, batch, causal, MM_OP_F };
    l->n++;
}

/* `batch` GEMMs C[m x n] = A[m x k] W[k x n] (+ bias[n]), each with its
 * own weight (MoE experts): reads A and W, writes C. */
static void push_gemm_n(op_list *l, const char *name, double m, double n, double k,
                        double batch, bool bias, double e)
{
    double bytes = batch * (m * k + k * n + m * n + (bias ? n : 0.0)) * e;
    push(l, name, MM_OPK_GEMM, 2.0 * m * n * k * batch, bytes, m, n, k, batch, false);
}

static void push_gemm(op_list *l, const char *name, double m, double n, double k,
                      bool bias, double e)
{
    push_gemm_n(l, name, m, n, k, 1.0, bias, e);
}

mm_op_cost mm_op_pass(const mm_op_cost *f, mm_op_pass_kind p)
{
    mm_op_cost o = *f;
    o.pass = (int)p;
    if (p == MM_OP_F)
        return o;
    switch (f->kind) {
    case MM_OPK_GEMM:
        if (p == MM_OP_B) { /* dA[m x k] = dC[m x n] W^T[n x k] */
            o.n = f->k;
            o.k = f->n;
        } else {              /* dW[k x n] = A^T[k x m] dC[m x n] */
            o.m = f->k;
            o.n = f->n;
            o.k = f->m;
        }
        return o;
    case MM_OPK_ATTN:
        if (p == MM_OP_B) {
            o.flops = 2.0 * f->flops;
            o.bytes = 2.0 * f->bytes;
            return o;
        }
        break;
    case MM_OPK_MEM:
        if (p == MM_OP_B) {
            o.bytes = 2.0 * f->bytes;
            return o;
        }
        break;
    }
    o.kind = MM_OPK_MEM;
    o.flops = o.bytes = o.m = o.n = o.k = o.batch = 0.0;
    o.causal = false;
    return o;
}

int mm_llm_attn_unfused(const mm_op_cost *attn, int dtype_bytes, mm_op_cost *out, int cap)
{
    if (cap < 4 || attn->kind != MM_OPK_ATTN || dtype_bytes < 1)
        return -1;
    double e = dtype_bytes, B = attn->batch, sq = attn->m, sk = attn->n, d = attn->k;
    double scores = B * sq * sk;
    mm_op_cost base = {.pass = attn->pass};
    out[0] = base;
    out[0].name = "attn_score";
    out[0].kind = MM_OPK_GEMM;
    out[0].m = sq, out[0].n = sk, out[0].k = d, out[0].batch = B;
    out[0].flops = 2 * scores * d;
    out[0].bytes = B * (sq * d + sk * d) * e + scores * e;
    out[1] = base;
    out[1].name = "attn_softmax"; /* scale + causal mask + softmax, one fused kernel */
    out[1].kind = MM_OPK_MEM;
    out[1].bytes = 2 * scores * e;
    out[2] = base;
    out[2].name = "attn_dropout"; /* read, write, and a one-byte mask */
    out[2].kind = MM_OPK_MEM;
    out[2].bytes = scores * (2 * e + 1);
    out[3] = base;
    out[3].name = "attn_value";
    out[3].kind = MM_OPK_GEMM;
    out[3].m = sq, out[3].n = d, out[3].k = sk, out[3].batch = B;
    out[3].flops = 2 * scores * d;
    out[3].bytes = scores * e + B * (sk * d + sq * d) * e;
    return 4;
}

/* A norm over `tok` tokens: read x and the weights (and bias), write y. */
static void push_norm(op_list *l, const char *name, const mm_llm *m, double tok, double e)
{
    double h = (double)m->hidden;
    push(l, name, MM_OPK_MEM, 0.0, (2.0 * tok * h + (double)norm_params(m)) * e,
         0, 0, 0, 0, false);
}

static int finish(const op_list *l)
{
    return l->n <= l->cap ? l->n : -1;
}

int mm_llm_layer_ops_packed(const mm_llm *m, double tokens, double sum_sq,
                            double seqs, int tp, bool sp, int dtype_bytes,
                            mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    op_list l = { ops, 0, cap };
    double t = (double)tp, e = (double)dtype_bytes, h = (double)m->hidden;
    double d = (double)m->head_dim;
    double q = (double)m->heads * d / t;     /* query width on this rank */
    double kv = (double)m->kv_heads * d / t; /* key (= value) width on this rank */
    double f = (double)m->ffn / t;
    double up = m->gated_mlp ? 2.0 * f : f;
    /* Sequence parallelism shards the token dimension of the regions outside
     * the tensor-parallel matmuls (Korthikanti et al. 2022 section 4.2.2). */
    double tn = sp ? tokens / t : tokens;
    double slen = tokens > 0 ? sum_sq / tokens : 0.0; /* mean attended length */

    push_norm(&l, "norm_attn", m, tn, e);
    /* Column-parallel fused QKV (Megatron ColumnParallelLinear): the input
     * is the full token set (all-gathered when sp). */
    push_gemm(&l, "qkv", tokens, q + 2.0 * kv, h, m->qkv_bias, e);
    if (m->rope) /* read and write q and k */
        push(&l, "rope", MM_OPK_MEM, 0.0, 2.0 * tokens * (q + kv) * e, 0, 0, 0, 0, false);
    /* FlashAttention-style core: reads q, k, v, writes o; scores stay on
     * chip.  FLOPs dense (Megatron convention) even though causal. */
    push(&l, "attn", MM_OPK_ATTN, attn_flops(m, sum_sq) / t,
         tokens * (2.0 * q + 2.0 * kv) * e, slen, slen, d,
         seqs * (double)m->heads / t, true);
    /* Row-parallel output projection; its bias is added after the
     * all-reduce, fused with the residual add below. */
    push_gemm(&l, "attn_out", tokens, h, q, false, e);
    /* bias + residual add: read two h-wide inputs (+ bias), write one */
    push(&l, "residual_attn", MM_OPK_MEM, 0.0,
         (3.0 * tn * h + (m->out_bias ? h : 0.0)) * e, 0, 0, 0, 0, false);
    push_norm(&l, "norm_mlp", m, tn, e);
    if (m->experts > 0) {
        /* Router: every token scores every expert (replicated over tp, fp32
         * softmax and top-k are small and folded into the permute). */
        double E = (double)m->experts, k = (double)m->experts_per_tok;
        push_gemm(&l, "router", tokens, E, h, false, e);
        /* Tokens per expert: the mean load, or the capacity when set. */
        double cf = m->capacity_factor > 0 ? m->capacity_factor : 1.0;
        double te = cf * tokens * k / E;
        /* dispatch (permute) and combine (unpermute, weighted sum): each
         * reads and writes k copies of the token activations */
        push(&l, "moe_dispatch", MM_OPK_MEM, 0.0, 2.0 * tokens * k * h * e, 0, 0, 0, 0, false);
        push_gemm_n(&l, "expert_fc1", te, up, h, E, m->mlp_bias, e);
        push(&l, "act", MM_OPK_MEM, 0.0, E * te * (up + f) * e, 0, 0, 0, 0, false);
        push_gemm_n(&l, "expert_fc2", te, h, f, E, false, e);
        push(&l, "moe_combine", MM_OPK_MEM, 0.0, 2.0 * tokens * k * h * e, 0, 0, 0, 0, false);
    } else {
        push_gemm(&l, "fc1", tokens, up, h, m->mlp_bias, e);
        /* gated: act(gate) * up, reads 2f writes f; else act(x), reads f writes f */
        push(&l, "act", MM_OPK_MEM, 0.0, tokens * (up + f) * e, 0, 0, 0, 0, false);
        push_gemm(&l, "fc2", tokens, h, f, false, e);
    }
    push(&l, "residual_mlp", MM_OPK_MEM, 0.0,
         (3.0 * tn * h + (m->mlp_bias ? h : 0.0)) * e, 0, 0, 0, 0, false);
    return finish(&l);
}

int mm_llm_layer_ops(const mm_llm *m, double b, double s, int tp, bool sp,
                     int dtype_bytes, mm_op_cost *ops, int cap)
{
    return mm_llm_layer_ops_packed(m, b * s, b * s * s, b, tp, sp, dtype_bytes, ops, cap);
}

int mm_llm_embed_ops(const mm_llm *m, double b, double s, int tp, bool sp,
                     int dtype_bytes, mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    (void)sp; /* the lookup writes all tokens; the reduce-scatter is comm */
    op_list l = { ops, 0, cap };
    double t = (double)tp, e = (double)dtype_bytes, h = (double)m->hidden;
    double tokens = b * s;
    /* Megatron VocabParallelEmbedding: each rank gathers the rows of the
     * tokens in its vocab shard (about 1/tp of them) into a zero-filled
     * full-size output, then the ranks all-reduce.  Token ids: int64. */
    push(&l, "embed", MM_OPK_MEM, 0.0, tokens * h * e / t + tokens * h * e + tokens * 8.0,
         0, 0, 0, 0, false);
    if (m->learned_pos) /* read position rows and the embedding, write the sum */
        push(&l, "pos_embed", MM_OPK_MEM, 0.0, 3.0 * tokens * h * e, 0, 0, 0, 0, false);
    return finish(&l);
}

int mm_llm_head_ops(const mm_llm *m, double b, double s, int tp, bool sp,
                    int dtype_bytes, mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    op_list l = { ops, 0, cap };
    double t = (double)tp, e = (double)dtype_bytes, h = (double)m->hidden;
    double tokens = b * s, v = (double)m->vocab / t;
    push_norm(&l, "final_norm", m, sp ? tokens / t : tokens, e);
    push_gemm(&l, "lm_head", tokens, v, h, false, e);
    /* Megatron's vocab_parallel_cross_entropy: the logits are read once in
     * dtype and processed in fp32 in about three passes (max, exp and sum,
     * normalise and keep the softmax for backward).  An estimate: fused
     * cross-entropy kernels move less. */
    push(&l, "cross_entropy", MM_OPK_MEM, 0.0, tokens * v * (e + 3.0 * 4.0), 0, 0, 0, 0,
         false);
    return finish(&l);
}

double mm_llm_tp_allreduce_bytes(const mm_llm *m, double b, double s, int dtype_bytes)
{
    return b * s * (double)m->hidden * (double)dtype_bytes;
}
