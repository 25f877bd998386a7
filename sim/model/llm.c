/* llm.c - decoder-only LLM costs: parameter counts, FLOPs and per-op costs
 * of the model a config describes (reading is llm_read.c).
 *
 * Closed forms over the shape, Megatron-LM's conventions (see llm.h).
 * Blocks may differ (DeepSeek's dense first layers, Gemma 2's alternating
 * sliding-window layers): parameters are summed block by block, FLOPs and op
 * lists describe the mean block, weighted by each kind's share.
 * Not for: encoders, memory, timing, or layout checks. */
#include "model/llm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Upper bounds, far above any published model, that keep every count below
 * in int64 range (the reader enforces the same ones). */
#define WIDTH_MAX (INT64_C(1) << 20)
#define LAYERS_MAX (INT64_C(1) << 16)
#define VOCAB_MAX (INT64_C(1) << 24)
#define POS_MAX (INT64_C(1) << 40) /* RoPE models: only a stated limit */

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
    int64_t nx = mm_llm_cross_layers(m);
    /* 0 until the composite reader knows the tower (mllama_read.c) */
    if (!(m->cross_images >= 0 && m->cross_images <= 1e6))
        return mm_err_set(err, MM_EINPUT, m->source, 0, "cross_images", "must be in [0, 1e6], got %g",
                          m->cross_images);
    if (m->cross_tokens < 0 || m->cross_tokens > VOCAB_MAX)
        return mm_err_set(err, MM_EINPUT, m->source, 0, "cross_tokens", "must be in [0, %lld], got %lld",
                          (long long)VOCAB_MAX, (long long)m->cross_tokens);
    if (nx > 0 && (m->kv_lora > 0 || m->experts > 0))
        return mm_err_set(err, MM_EINPUT, m->source, 0, "cross_attention_layers",
                          "cross-attention blocks are modeled on dense blocks with standard attention only");
    if (m->embed_extra < 0 || m->embed_extra > VOCAB_MAX)
        return mm_err_set(err, MM_EINPUT, m->source, 0, "embed_extra", "must be in [0, %lld], got %lld",
                          (long long)VOCAB_MAX, (long long)m->embed_extra);
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
    return m->rmsnorm || m->norm_no_bias ? m->hidden : 2 * m->hidden;
}

/* Norms per block: one before the fused attention + MLP of a parallel
 * block, two pre-norms (OLMo 2: two post-norms), four with Gemma's
 * post-norms as well. */
static int64_t block_norms(const mm_llm *m)
{
    return m->parallel_block ? 1 : m->sandwich_norm ? 4 : 2;
}

bool mm_llm_layer_is_moe(const mm_llm *m, int64_t i)
{
    if (m->experts <= 0 || i < m->first_dense)
        return false;
    int64_t every = m->moe_every > 0 ? m->moe_every : 1;
    return (i + m->moe_offset) % every == 0;
}

bool mm_llm_layer_is_sliding(const mm_llm *m, int64_t i)
{
    if (m->window <= 0 || m->window_period <= 0)
        return false;
    return (m->window_mask >> (i % m->window_period)) & 1u;
}

bool mm_llm_layer_is_cross(const mm_llm *m, int64_t i)
{
    if (i < 0 || i >= MM_LLM_CROSS_MAX)
        return false;
    return (m->cross_mask[i / 64] >> (i % 64)) & 1u;
}

/* Whether any layer is a cross-attention one: the counts and sums below
 * skip their per-layer loops when none is (the planner asks them for
 * every candidate). */
static bool any_cross(const mm_llm *m)
{
    for (int w = 0; w < MM_LLM_CROSS_WORDS; w++)
        if (m->cross_mask[w])
            return true;
    return false;
}

int64_t mm_llm_cross_layers(const mm_llm *m)
{
    if (!any_cross(m))
        return 0;
    int64_t n = 0;
    for (int64_t i = m->layer0; i < m->layer0 + m->layers && i < MM_LLM_CROSS_MAX; i++)
        n += mm_llm_layer_is_cross(m, i);
    return n;
}

int64_t mm_llm_moe_layers(const mm_llm *m)
{
    if (m->experts <= 0)
        return 0;
    int64_t n = 0;
    for (int64_t i = m->layer0; i < m->layer0 + m->layers; i++)
        n += mm_llm_layer_is_moe(m, i);
    return n;
}

static int64_t sliding_layers(const mm_llm *m)
{
    if (m->window <= 0 || m->window_period <= 0)
        return 0;
    int64_t n = 0;
    for (int64_t i = m->layer0; i < m->layer0 + m->layers; i++)
        n += mm_llm_layer_is_sliding(m, i);
    return n;
}

static int64_t sliding_layers(const mm_llm *m);

static bool mla(const mm_llm *m)
{
    return m->kv_lora > 0;
}

/* Matmul weights of the attention (no biases, no norms). */
static int64_t attn_matmul_params(const mm_llm *m)
{
    int64_t h = m->hidden, H = m->heads;
    if (mla(m)) { /* q_a/q_b or q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj */
        int64_t qd = m->qk_nope + m->qk_rope;
        int64_t q = m->q_lora > 0 ? h * m->q_lora + m->q_lora * H * qd : h * H * qd;
        return q + h * (m->kv_lora + m->qk_rope) + m->kv_lora * H * (m->qk_nope + m->v_dim) + H * m->v_dim * h;
    }
    int64_t q = H * m->head_dim, kv = m->kv_heads * m->head_dim;
    return h * (q + 2 * kv) + q * h;
}

static int64_t attn_params(const mm_llm *m)
{
    int64_t p = attn_matmul_params(m), h = m->hidden;
    if (mla(m)) { /* q_a_layernorm, kv_a_layernorm; biases on q_a (or q), kv_a, o */
        p += (m->q_lora > 0 ? m->q_lora : 0) + m->kv_lora;
        if (m->qkv_bias)
            p += (m->q_lora > 0 ? m->q_lora : m->heads * (m->qk_nope + m->qk_rope)) + m->kv_lora + m->qk_rope;
    } else {
        if (m->qkv_bias)
            p += (m->heads + 2 * m->kv_heads) * m->head_dim;
        if (m->qk_norm)
            p += (m->qk_norm_full ? m->heads + m->kv_heads : 2) * m->head_dim * (m->qk_norm_bias ? 2 : 1);
    }
    if (m->attn_sinks)
        p += m->heads;
    return p + (m->out_bias ? h : 0);
}

/* An MLP of inner width f (gated: gate + up, then down). */
static int64_t mlp_params(const mm_llm *m, int64_t f)
{
    int64_t h = m->hidden, up = m->gated_mlp ? 2 * f : f;
    return h * up + f * h + (m->mlp_bias ? up + h : 0);
}

/* The MoE MLP with `routed` of its experts (all of them, or the top-k). */
static int64_t moe_params(const mm_llm *m, int64_t routed)
{
    int64_t h = m->hidden, p = routed * mlp_params(m, m->moe_ffn) + h * m->experts;
    if (m->router_bias)
        p += m->experts;
    if (m->shared_ffn > 0)
        p += mlp_params(m, m->shared_ffn) + (m->shared_gate ? h : 0);
    return p;
}

static int64_t kind_params(const mm_llm *m, bool moe, bool active)
{
    int64_t mlp = moe ? moe_params(m, active ? m->experts_per_tok : m->experts) : mlp_params(m, m->ffn);
    return attn_params(m) + mlp + block_norms(m) * norm_params(m);
}

/* MllamaCrossAttentionDecoderLayer (modeling_mllama.py): cross_attn's
 * q/k/v/o (no biases) and its q_norm, k_norm (RMSNorm over head_dim),
 * cross_attn_attn_gate and cross_attn_mlp_gate (one scalar each),
 * input_layernorm, post_attention_layernorm and the MLP. */
static int64_t cross_params(const mm_llm *m)
{
    return attn_matmul_params(m) + 2 * m->head_dim + 2 + mlp_params(m, m->ffn) + block_norms(m) * norm_params(m);
}

static int64_t block_params(const mm_llm *m, int64_t i, bool active)
{
    if (mm_llm_layer_is_cross(m, i))
        return cross_params(m);
    return kind_params(m, mm_llm_layer_is_moe(m, i), active);
}

int64_t mm_llm_layer_params_at(const mm_llm *m, int64_t i)
{
    return block_params(m, i, false);
}

bool mm_llm_blocks_uniform(const mm_llm *m)
{
    if (m->experts <= 0 && (m->window <= 0 || m->window_period <= 0) && !any_cross(m))
        return true; /* no MoE, sliding or cross block: the counts below are all 0 */
    int64_t moe = mm_llm_moe_layers(m), sl = sliding_layers(m), x = mm_llm_cross_layers(m);
    return (moe == 0 || moe == m->layers) && (sl == 0 || sl == m->layers) && (x == 0 || x == m->layers);
}

mm_llm mm_llm_stage_view(const mm_llm *m, int64_t first, int64_t n)
{
    mm_llm v = *m;
    v.layer0 = m->layer0 + first;
    v.layers = n;
    return v;
}

static int64_t blocks_params(const mm_llm *m, bool active)
{
    if (m->experts <= 0 && !any_cross(m)) /* every block a dense self-attention one: the same count */
        return m->layers > 0 ? m->layers * kind_params(m, false, active) : 0;
    int64_t p = 0;
    for (int64_t i = m->layer0; i < m->layer0 + m->layers; i++)
        p += block_params(m, i, active);
    return p;
}

int64_t mm_llm_layer_params(const mm_llm *m)
{
    return m->layers > 0 ? (blocks_params(m, false) + m->layers / 2) / m->layers : 0;
}

/* One norm's tensors: RMSNorm and bias-free LayerNorm a weight, LayerNorm
 * a weight and a bias. */
static int64_t norm_tensors(const mm_llm *m)
{
    return m->rmsnorm || m->norm_no_bias ? 1 : 2;
}

int64_t mm_llm_block_tensors(const mm_llm *m)
{
    if (m->experts > 0 || m->kv_lora > 0 || m->layers <= 0 || !mm_llm_blocks_uniform(m))
        return -1;
    int64_t norms = m->sandwich_norm ? 4 : m->parallel_block ? 1 : 2;
    int64_t t = 4 + (m->qkv_bias ? 3 : 0) + (m->out_bias ? 1 : 0);
    int64_t mats = m->gated_mlp ? 3 : 2;
    t += mats * (m->mlp_bias ? 2 : 1) + norms * norm_tensors(m);
    if (m->qk_norm)
        t += 2 * (m->qk_norm_bias ? 2 : 1);
    return t + (m->attn_sinks ? 1 : 0);
}

int64_t mm_llm_edge_tensors(const mm_llm *m, bool first, bool last)
{
    int64_t t = 0;
    if (first)
        t += 1 + (m->learned_pos ? 1 : 0);
    if (last)
        t += norm_tensors(m) + (m->tied ? 0 : 1) + (m->head_bias ? 1 : 0);
    return t;
}

int64_t mm_llm_layer_expert_params(const mm_llm *m)
{
    if (m->experts <= 0 || m->layers <= 0)
        return 0;
    int64_t all = m->experts * mlp_params(m, m->moe_ffn) * mm_llm_moe_layers(m);
    return (all + m->layers / 2) / m->layers;
}

int64_t mm_llm_embedding_params(const mm_llm *m)
{
    return (m->vocab + m->embed_extra) * m->hidden + (m->learned_pos ? m->max_pos * m->hidden : 0);
}

int64_t mm_llm_head_params(const mm_llm *m)
{
    return (m->tied ? 0 : m->vocab * m->hidden) + (m->head_bias ? m->vocab : 0);
}

int64_t mm_llm_final_norm_params(const mm_llm *m)
{
    return norm_params(m);
}

/* For the Megatron GPTs this is Narayanan et al.'s
 * P = 12lh^2(1 + 13/12h + (V+s)/12lh) (SC'21, arXiv 2104.04473, Sec. 5.1) plus the final
 * LayerNorm's 2h, which that closed form leaves out. */
int64_t mm_llm_params(const mm_llm *m)
{
    return blocks_params(m, false) + mm_llm_embedding_params(m) + mm_llm_final_norm_params(m) +
           mm_llm_head_params(m);
}

int64_t mm_llm_active_params(const mm_llm *m)
{
    return blocks_params(m, true) + mm_llm_embedding_params(m) + mm_llm_final_norm_params(m) +
           mm_llm_head_params(m);
}

/* DeepSeek-V3 README_WEIGHTS.md: each MTP module is enorm, hnorm, eh_proj
 * (2h -> h), one transformer block "identical to the main model's" (an MoE
 * block) and shared_head.norm; embedding and output head are shared. */
int64_t mm_llm_mtp_params(const mm_llm *m)
{
    if (m->mtp_layers <= 0)
        return 0;
    int64_t h = m->hidden;
    return m->mtp_layers * (3 * norm_params(m) + 2 * h * h + kind_params(m, m->experts > 0, false));
}

/* ------------------------------------------------------------------------ */
/* FLOPs                                                                     */
/* ------------------------------------------------------------------------ */

/* Shares of the blocks that are MoE / sliding-window. */
static double moe_share(const mm_llm *m)
{
    return m->experts > 0 && m->layers > 0 ? (double)mm_llm_moe_layers(m) / (double)m->layers : 0.0;
}

static double sliding_share(const mm_llm *m)
{
    return m->window > 0 && m->layers > 0 ? (double)sliding_layers(m) / (double)m->layers : 0.0;
}

double mm_llm_sliding_fraction(const mm_llm *m)
{
    return sliding_share(m);
}

/* Image states each text token's cross blocks attend. */
static double cross_keys(const mm_llm *m)
{
    return (m->cross_images > 0 ? m->cross_images : 0.0) * (double)m->cross_tokens;
}

static double cross_share(const mm_llm *m)
{
    return m->cross_tokens > 0 && m->layers > 0 ? (double)mm_llm_cross_layers(m) / (double)m->layers : 0.0;
}

/* q and o of a cross-attention block, the matmul weights a text token
 * passes through there (k and v read the image states instead). */
static double cross_qo_params(const mm_llm *m)
{
    return 2.0 * (double)m->heads * (double)m->head_dim * (double)m->hidden;
}

/* Matmul FLOPs per token of the mean block outside the attention core:
 * 2 x the matmul weights a token passes through (top-k experts, router and
 * shared experts for MoE blocks). */
static double layer_linear_flops_per_token(const mm_llm *m)
{
    double h = (double)m->hidden, g = m->gated_mlp ? 3.0 : 2.0;
    double dense = 2.0 * h * (double)m->ffn * g;
    double moe = 0.0;
    if (m->experts > 0) {
        moe = (double)m->experts_per_tok * 2.0 * h * (double)m->moe_ffn * g + 2.0 * h * (double)m->experts;
        if (m->shared_ffn > 0)
            moe += 2.0 * h * (double)m->shared_ffn * g + (m->shared_gate ? 2.0 * h : 0.0);
    }
    double w = moe_share(m), c = cross_share(m);
    return 2.0 * ((1.0 - c) * (double)attn_matmul_params(m) + c * cross_qo_params(m)) + (1.0 - w) * dense +
           w * moe;
}

/* Query-key and value widths of one head. */
static double qk_dim(const mm_llm *m)
{
    return mla(m) ? (double)(m->qk_nope + m->qk_rope) : (double)m->head_dim;
}

static double v_dim(const mm_llm *m)
{
    return mla(m) ? (double)m->v_dim : (double)m->head_dim;
}

/* Q K^T and P V over `pairs` query-key pairs: 2*pairs*(dqk + dv) per head
 * (4*pairs*d for standard attention). */
static double core_flops(const mm_llm *m, double pairs)
{
    return 2.0 * pairs * (double)m->heads * (qk_dim(m) + v_dim(m));
}

double mm_llm_window_keys(const mm_llm *m, double s)
{
    double w = (double)m->window;
    if (m->window <= 0 || s <= w)
        return s;
    if (!m->chunked)
        return w;
    /* chunked (Llama 4, transformers' create_chunked_causal_mask): whole
     * chunks of c keys, then the remainder's own */
    double full = floor(s / w), rest = s - full * w;
    return (full * w * w + rest * rest) / s;
}

/* Query-key pairs of a window layer: each query sees at most `window`
 * keys (sliding) or its chunk's (chunked); over packed samples of mean
 * length sum_sq/tokens that is tokens x the mean length's keys per query
 * (an estimate when lengths spread). */
static double window_pairs(const mm_llm *m, double tokens, double sum_sq)
{
    double slen = tokens > 0 ? sum_sq / tokens : 0.0;
    return slen > (double)m->window ? tokens * mm_llm_window_keys(m, slen) : sum_sq;
}

/* The mean block's attention cores: the self-attention blocks' (their
 * share of the blocks) and the cross-attention blocks', whose every text
 * token attends cross_tokens image states. */
static double attn_flops(const mm_llm *m, double tokens, double sum_sq)
{
    double w = sliding_share(m), c = cross_share(m);
    double pairs = (1.0 - w) * sum_sq + (w > 0 ? w * window_pairs(m, tokens, sum_sq) : 0.0);
    return (1.0 - c) * core_flops(m, pairs) + c * core_flops(m, tokens * cross_keys(m));
}

/* The cross-attention blocks' k and v over the image states of `seqs`
 * sequences, weighted by their share. */
static double cross_kv_flops(const mm_llm *m, double seqs)
{
    double c = cross_share(m);
    if (!(c > 0))
        return 0.0;
    double kv = 2.0 * (double)m->hidden * (double)m->kv_heads * (double)m->head_dim;
    return c * 2.0 * seqs * cross_keys(m) * kv;
}

double mm_llm_layer_fwd_flops_seqs(const mm_llm *m, double tokens, double sum_sq, double seqs)
{
    return tokens * layer_linear_flops_per_token(m) + attn_flops(m, tokens, sum_sq) + cross_kv_flops(m, seqs);
}

double mm_llm_layer_attn_fwd_flops_seqs(const mm_llm *m, double tokens, double sum_sq, double seqs)
{
    (void)seqs; /* the cores see the text tokens' queries only */
    return attn_flops(m, tokens, sum_sq);
}

double mm_llm_layer_fwd_flops_packed(const mm_llm *m, double tokens, double sum_sq)
{
    return mm_llm_layer_fwd_flops_seqs(m, tokens, sum_sq, sum_sq > 0 ? tokens * tokens / sum_sq : 0.0);
}

double mm_llm_layer_fwd_flops(const mm_llm *m, double b, double s)
{
    return mm_llm_layer_fwd_flops_seqs(m, b * s, b * s * s, b);
}

double mm_llm_layer_attn_fwd_flops(const mm_llm *m, double b, double s)
{
    return mm_llm_layer_attn_fwd_flops_seqs(m, b * s, b * s * s, b);
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
        l->ops[l->n] = (mm_op_cost){.name = name, .kind = kind, .flops = flops, .bytes = bytes, .m = m, .n = n,
                                    .k = k, .batch = batch, .causal = causal, .pass = MM_OP_F};
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
    o.draws = 0.0; /* masks are drawn once, in the forward */
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
        if (p == MM_OP_B && (!f->bwd_exact || f->bwd_bytes > 0)) {
            o.bytes = f->bwd_exact ? f->bwd_bytes : 2.0 * f->bytes;
            return o;
        }
        break;
    }
    o.kind = MM_OPK_MEM;
    o.flops = o.bytes = o.m = o.n = o.k = o.batch = 0.0;
    o.causal = false;
    return o;
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

/* Scales the ops pushed since `from` by the share w of the blocks they
 * belong to (work, bytes and GEMM batch: the compute model times a GEMM
 * from its shape times batch), so the list's sums stay the mean block's. */
static void scale_from(op_list *l, int from, double w)
{
    if (w >= 1.0)
        return;
    if (w <= 0.0) {
        l->n = from;
        return;
    }
    for (int i = from; i < l->n && i < l->cap; i++) {
        l->ops[i].flops *= w;
        l->ops[i].bytes *= w;
        if (l->ops[i].kind != MM_OPK_MEM)
            l->ops[i].batch *= w;
        for (int j = 0; j < l->ops[i].groups; j++)
            l->ops[i].group_n[j] *= w;
    }
}

static void push_mem(op_list *l, const char *name, double bytes)
{
    push(l, name, MM_OPK_MEM, 0.0, bytes, 0, 0, 0, 0, false);
}

/* The attention projections of one block on one TP rank (heads split by
 * tp).  MLA (DeepSeek-V2 section 2.1): the down-projections to the q and
 * kv latents are replicated over tp (Megatron-Core's MLA shards only the
 * up-projections), then q_b / kv_b column-parallel. */
static void push_attn_proj(op_list *l, const mm_llm *m, double tokens, double t, double e)
{
    double h = (double)m->hidden, H = (double)m->heads / t;
    if (mla(m)) {
        double qd = qk_dim(m), kvl = (double)m->kv_lora, rope = (double)m->qk_rope;
        if (m->q_lora > 0) {
            double ql = (double)m->q_lora;
            push_gemm(l, "q_down", tokens, ql, h, m->qkv_bias, e);
            push_mem(l, "q_norm", (2.0 * tokens * ql + ql) * e);
            push_gemm(l, "q_up", tokens, H * qd, ql, false, e);
        } else {
            push_gemm(l, "q", tokens, H * qd, h, m->qkv_bias, e);
        }
        push_gemm(l, "kv_down", tokens, kvl + rope, h, m->qkv_bias, e);
        push_mem(l, "kv_norm", (2.0 * tokens * kvl + kvl) * e);
        push_gemm(l, "kv_up", tokens, H * ((double)m->qk_nope + v_dim(m)), kvl, false, e);
        /* RoPE on the decoupled parts: q's rope slice and the shared key */
        push_mem(l, "rope", 2.0 * tokens * (H + 1.0) * rope * e);
        return;
    }
    double d = (double)m->head_dim, q = (double)m->heads * d / t, kv = (double)m->kv_heads * d / t;
    /* Column-parallel fused QKV (Megatron ColumnParallelLinear): the input
     * is the full token set (all-gathered when sp). */
    push_gemm(l, "qkv", tokens, q + 2.0 * kv, h, m->qkv_bias, e);
    if (m->qk_norm) /* Qwen3 q_norm, k_norm: read and write q and k */
        push_mem(l, "qk_norm", 2.0 * tokens * (q + kv) * e);
    if (m->rope) /* read and write q and k */
        push_mem(l, "rope", 2.0 * tokens * (q + kv) * e);
}

/* The attention core: FlashAttention-style, reads q, k, v, writes o;
 * scores stay on chip.  FLOPs dense (Megatron convention) even though
 * causal.  Window blocks attend min(length, window) keys (Gemma 2,
 * Mistral; FlashAttention's window_size), or their chunk's (Llama 4's
 * chunked attention, mm_llm_window_keys), each kind weighted by its share. */
static void push_attn_core(op_list *l, const mm_llm *m, double tokens, double sum_sq, double seqs, double t,
                           double e)
{
    double H = (double)m->heads / t, kvh = mla(m) ? H : (double)m->kv_heads / t;
    double io = tokens * (H * (qk_dim(m) + v_dim(m)) + kvh * (qk_dim(m) + v_dim(m))) * e;
    double slen = tokens > 0 ? sum_sq / tokens : 0.0, ws = sliding_share(m);
    int from = l->n;
    push(l, "attn", MM_OPK_ATTN, core_flops(m, sum_sq) / t, io, slen, slen, qk_dim(m), seqs * H, true);
    scale_from(l, from, 1.0 - ws);
    if (ws > 0) {
        from = l->n;
        double wk = mm_llm_window_keys(m, slen);
        push(l, "attn_window", MM_OPK_ATTN, core_flops(m, window_pairs(m, tokens, sum_sq)) / t, io, slen, wk,
             qk_dim(m), seqs * H, true);
        scale_from(l, from, ws);
    }
}

/* A cross-attention block's attention (MllamaTextCrossAttention) on one
 * TP rank: q from the text tokens, k and v from the seqs x cross_tokens
 * image states (column-parallel like QKV), q_norm and k_norm (read and
 * write q and k), and the core, not causal: every text token of a
 * sequence attends all its image states.  Its output projection is the
 * block's attn_out. */
static void push_cross(op_list *l, const mm_llm *m, double tokens, double seqs, double t, double e)
{
    double h = (double)m->hidden, d = (double)m->head_dim, H = (double)m->heads / t;
    double q = H * d, kv = (double)m->kv_heads * d / t, K = seqs * cross_keys(m);
    push_gemm(l, "xattn_q", tokens, q, h, false, e);
    push_gemm(l, "xattn_kv", K, 2.0 * kv, h, false, e);
    push_mem(l, "xattn_qk_norm", 2.0 * (tokens * q + K * kv) * e);
    double io = (2.0 * tokens * q + 2.0 * K * kv) * e, slen = seqs > 0 ? tokens / seqs : 0.0;
    push(l, "xattn", MM_OPK_ATTN, core_flops(m, tokens * cross_keys(m)) / t, io, slen, cross_keys(m), d,
         seqs * H, false);
}

/* A gated (or plain) MLP of inner width f on this rank. */
static void push_mlp(op_list *l, const mm_llm *m, const char *up_name, const char *down_name, double tokens,
                     double f, double e)
{
    double h = (double)m->hidden, up = m->gated_mlp ? 2.0 * f : f;
    push_gemm(l, up_name, tokens, up, h, m->mlp_bias, e);
    /* gated: act(gate) * up, reads 2f writes f; else act(x), reads f writes f */
    push_mem(l, "act", tokens * (up + f) * e);
    push_gemm(l, down_name, tokens, h, f, false, e);
}

/* The routed experts' GEMMs on the busiest EP rank: one grouped GEMM of
 * C_i[m_i x n] = A_i[m_i x k] W_i[k x n] per projection, binned by load
 * (moe.h); FLOPs and bytes are the sums over the experts. */
static void push_grouped(op_list *l, const char *name, const mm_moe_load *ld, double n, double k, bool bias,
                         bool sequential, double e)
{
    double rows = ld->rank_rows, E = (double)ld->local, m = E > 0 ? rows / E : 0.0;
    double bytes = (rows * k + E * k * n + rows * n + (bias ? E * n : 0.0)) * e;
    int at = l->n;
    push(l, name, MM_OPK_GEMM, 2.0 * rows * n * k, bytes, m, n, k, E, false);
    if (at >= l->cap)
        return;
    mm_op_cost *o = &l->ops[at];
    o->groups = ld->nbins;
    o->sequential = sequential;
    for (int i = 0; i < ld->nbins; i++) {
        o->group_m[i] = ld->bin_m[i];
        o->group_n[i] = ld->bin_n[i];
    }
}

/* The router (megatron/core/transformer/moe/router.py TopKRouter at
 * Megatron-LM d98e8a64): the gating GEMM, then over the [tokens x E]
 * logits: softmax in fp32 (read the logits, write the scores), top-k
 * (read the scores, write k fp32 probs and k int64 indices), the routing
 * map (bool) and the probs scattered back to [tokens x E] fp32; with the
 * auxiliary loss (moe_utils.py switch_load_balancing_loss_func) the scores
 * again for the loss and a sum over tokens of them and of the map. */
static void push_router(op_list *l, const mm_llm *m, double tokens, double e)
{
    double h = (double)m->hidden, E = (double)m->experts, k = (double)m->experts_per_tok;
    push_gemm(l, "router", tokens, E, h, false, e);
    push_mem(l, "router_topk", tokens * E * (e + 4.0 + 4.0 + 1.0 + 4.0) + tokens * k * (4.0 + 8.0));
    if (m->moe.routing == MM_MOE_AUX_LOSS)
        push_mem(l, "router_aux_loss", tokens * E * (e + 4.0 + 4.0 + 1.0));
}

int mm_llm_moe_profile(const mm_llm *m, double tokens, mm_moe_load *out)
{
    if (m->experts <= 0)
        return -1;
    int d = m->ep_share > 1 ? m->ep_share : 1, t = m->ep_tp > 1 ? m->ep_tp : 1;
    return mm_moe_profile(&m->moe, m->experts, m->experts_per_tok, d * t, tokens / t, out);
}

/* The MoE MLP on the busiest expert-parallel rank (the combine waits for
 * it): router, permute (token_dispatcher.py MoEAlltoAllTokenDispatcher:
 * moe_utils.permute gathers each kept token copy's row), the
 * all-to-all (the build's), the sort of the received rows by local expert
 * and back (sort_chunks_by_idxs, when the rank holds more than one
 * expert), the routed experts as grouped GEMMs at the loads they really
 * get, unpermute (a scatter-add of the copies into a zeroed [tokens x h]),
 * and the shared expert(s) every token passes through.  Memory-bound
 * kernels move their bytes at HBM bandwidth (the compute model). */
static void push_moe(op_list *l, const mm_llm *m, double tokens, double t, double e)
{
    double h = (double)m->hidden;
    int etp_div = m->ep_tp > 1 ? m->ep_tp : 1; /* the experts' TP degree is t / ep_tp */
    double f = (double)m->moe_ffn * etp_div / t, up = m->gated_mlp ? 2.0 * f : f;
    int g = (m->ep_share > 1 ? m->ep_share : 1) * etp_div;
    mm_moe_load ld;
    if (mm_llm_moe_profile(m, tokens, &ld)) {
        l->n = l->cap + 1; /* the list reports failure */
        return;
    }
    push_router(l, m, tokens, e);
    double rows = ld.rank_rows;
    push_mem(l, "moe_permute", 2.0 * ld.kept * h * e);
    if (g > 1 && ld.local > 1)
        push_mem(l, "moe_sort", 2.0 * rows * h * e);
    push_grouped(l, "expert_fc1", &ld, up, h, m->mlp_bias, m->moe.sequential, e);
    push_mem(l, "act", rows * (up + f) * e);
    push_grouped(l, "expert_fc2", &ld, h, f, false, m->moe.sequential, e);
    if (g > 1 && ld.local > 1)
        push_mem(l, "moe_unsort", 2.0 * rows * h * e);
    push_mem(l, "moe_unpermute", (ld.kept + 2.0 * tokens / etp_div) * h * e);
    if (m->shared_ffn > 0) {
        push_mlp(l, m, "shared_fc1", "shared_fc2", tokens, (double)m->shared_ffn / t, e);
        if (m->shared_gate) /* Qwen2-MoE: sigmoid(x W_g) scales the shared output */
            push_gemm(l, "shared_gate", tokens, 1.0, h, false, e);
    }
}

int mm_llm_layer_ops_packed(const mm_llm *m, double tokens, double sum_sq,
                            double seqs, int tp, bool sp, int dtype_bytes,
                            mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    op_list l = { ops, 0, cap };
    double t = (double)tp, e = (double)dtype_bytes, h = (double)m->hidden;
    /* Sequence parallelism shards the token dimension of the regions outside
     * the tensor-parallel matmuls (Korthikanti et al. 2022 section 4.2.2). */
    double tn = sp ? tokens / t : tokens;

    push_norm(&l, "norm_attn", m, tn, e);
    double c = cross_share(m);
    int at = l.n;
    push_attn_proj(&l, m, tokens, t, e);
    push_attn_core(&l, m, tokens, sum_sq, seqs, t, e);
    scale_from(&l, at, 1.0 - c);
    if (c > 0) { /* Mllama's cross-attention blocks, their share of the mean block */
        at = l.n;
        push_cross(&l, m, tokens, seqs, t, e);
        scale_from(&l, at, c);
    }
    /* Row-parallel output projection; its bias is added after the
     * all-reduce, fused with the residual add below. */
    push_gemm(&l, "attn_out", tokens, h, (double)m->heads * v_dim(m) / t, false, e);
    if (m->sandwich_norm) /* Gemma 2 post_attention_layernorm */
        push_norm(&l, "norm_post_attn", m, tn, e);
    /* bias + residual add: read two h-wide inputs (+ bias), write one; a
     * parallel block adds the attention output with the MLP's, below */
    if (!m->parallel_block)
        push_mem(&l, "residual_attn", (3.0 * tn * h + (m->out_bias ? h : 0.0)) * e);
    if (!m->parallel_block) /* a parallel block's MLP reads the attention's normed input */
        push_norm(&l, "norm_mlp", m, tn, e);
    double w = moe_share(m);
    int from = l.n;
    push_mlp(&l, m, "fc1", "fc2", tokens, (double)m->ffn / t, e);
    scale_from(&l, from, 1.0 - w);
    if (w > 0) {
        from = l.n;
        push_moe(&l, m, tokens, t, e);
        scale_from(&l, from, w);
    }
    if (m->sandwich_norm) /* Gemma 2 post_feedforward_layernorm */
        push_norm(&l, "norm_post_mlp", m, tn, e);
    if (m->parallel_block) /* x + attn + mlp (+ biases): three reads, one write */
        push_mem(&l, "residual", (4.0 * tn * h + (m->out_bias ? h : 0.0) + (m->mlp_bias ? h : 0.0)) * e);
    else
        push_mem(&l, "residual_mlp", (3.0 * tn * h + (m->mlp_bias ? h : 0.0)) * e);
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
    if (m->final_softcap > 0) /* Gemma 2: logits = c * tanh(logits / c), read and write */
        push_mem(&l, "logit_softcap", 2.0 * tokens * v * e);
    push(&l, "cross_entropy", MM_OPK_MEM, 0.0, tokens * v * (e + 3.0 * 4.0), 0, 0, 0, 0,
         false);
    return finish(&l);
}

double mm_llm_tp_allreduce_bytes(const mm_llm *m, double b, double s, int dtype_bytes)
{
    return b * s * (double)m->hidden * (double)dtype_bytes;
}
