/* memory.c - the per-GPU memory model of memory.h: Korthikanti et al.'s
 * activation terms generalised to GQA/gated/MoE widths, Megatron's 18-byte
 * model states with ZeRO sharding, and pipeline in-flight counts.
 * Not for: time, layout legality, or placement of encoders. */
#include "model/memory.h"
#include "model/fp8.h"
#include "util/misc.h"

#include <math.h>
#include <string.h>

double mm_mem_state_bytes_per_param(int zero, int dp)
{
    double d = dp > 0 ? (double)dp : 1.0;
    switch (zero) {
    case 0: return MM_BYTES_WEIGHT + MM_BYTES_GRAD + MM_BYTES_OPTIM;
    case 1: return MM_BYTES_WEIGHT + MM_BYTES_GRAD + MM_BYTES_OPTIM / d;
    case 2: return MM_BYTES_WEIGHT + (MM_BYTES_GRAD + MM_BYTES_OPTIM) / d;
    default: return (MM_BYTES_WEIGHT + MM_BYTES_GRAD + MM_BYTES_OPTIM) / d;
    }
}

/* The rows the routed experts of this GPU keep activations for: the
 * busiest expert-parallel rank's (model/moe.h, the profile its kernels are
 * costed with), tokens x top-k when balanced and dropless. */
static double routed_rows(const mm_llm *m, double tokens)
{
    mm_moe_load ld;
    if (mm_llm_moe_profile(m, tokens, &ld) || !(ld.rank_rows > 0))
        return (double)m->experts_per_tok * tokens;
    /* the split terms are divided by tp; a folded GPU's experts are split
     * only tp / ep_tp ways */
    return ld.rank_rows * (m->ep_tp > 1 ? m->ep_tp : 1);
}

/* Korthikanti section 4.1, term by term, for b sequences of s tokens on one
 * GPU.  "rep" terms are replicated over TP unless SP shards them; the rest
 * are split over tp.  With a = heads, g = kv heads, d = head dim, f = ffn:
 *   attention: QKV input 2sbh (rep), Q/K/V 2sb(a+2g)d, scores
 *     softmax+mask+dropout 5as^2b (none only), output-projection input 2sbad,
 *     dropout mask sbh (rep);
 *   MLP: fc1 input 2sbh (rep), activation input 2sbf (x2 gated: gate and up),
 *     fc2 input 2sbf, dropout mask sbh (rep);  MoE: k copies of the expert
 *     tensors and the router logits;
 *   norms: 2 x 2sbh (rep).
 * For a GPT (g = a, ad = h, f = 4h) this is 34sbh + 5as^2b. */
double mm_mem_layer_activations(const mm_llm *m, double b, double s, int tp, bool sp, int cp,
                                int recompute)
{
    return mm_mem_layer_activations_lb(m, b, s, tp, sp, cp, recompute, 2.0);
}

/* The Linear inputs (QKV, output projection, fc1, fc2) at L bytes each:
 * Transformer Engine saves an FP8 GEMM's input as its FP8 column-wise copy
 * (linear.py and layernorm_linear.py drop the row-wise data after the
 * forward GEMM; model/fp8.h mm_fp8_saved_input_bytes). */
double mm_mem_layer_activations_lb(const mm_llm *m, double b, double s, int tp, bool sp, int cp,
                                   int recompute, double L)
{
    return mm_mem_layer_activations_eager(m, b, s, tp, sp, cp, recompute, L, NULL);
}

/* The eager intermediates (memory.h mm_mem_eager) join the terms they sit
 * beside: the norms' fp32 copies the replicated ones, RoPE's and SwiGLU's
 * the split ones; without hidden dropout the two 1-byte masks go. */
double mm_mem_layer_activations_eager(const mm_llm *m, double b, double s, int tp, bool sp, int cp, int recompute,
                                      double L, const mm_mem_eager *e)
{
    static const mm_mem_eager fused = {0};
    if (!e)
        e = &fused;
    double t = tp > 0 ? (double)tp : 1.0, c = cp > 0 ? (double)cp : 1.0;
    double sl = s / c; /* tokens of each sequence held on this GPU */
    double h = (double)m->hidden, a = (double)m->heads, g = (double)m->kv_heads;
    double d = (double)m->head_dim, f = (double)m->ffn;
    double rep_div = sp ? t : 1.0;
    if (recompute == MM_RECOMPUTE_FULL) /* only the block input is kept */
        return 2.0 * sl * b * h / rep_div;
    double masks = e->no_dropout ? 0.0 : 2.0;
    double rep = sl * b * h * (L + L + masks + 4.0); /* 10 sbh */
    double norms = m->sandwich_norm ? 4.0 : m->parallel_block ? 1.0 : 2.0;
    if (m->sandwich_norm) /* Gemma 2's post-attention and post-MLP norms */
        rep += 4.0 * sl * b * h;
    if (m->parallel_block) /* Phi-2, Cohere: one norm, whose output both halves read */
        rep -= (2.0 + L) * sl * b * h;
    rep += norms * e->norm_extra * sl * b * h;
    double attn = 2.0 * sl * b * (a + 2.0 * g) * d + L * sl * b * a * d;
    if (m->kv_lora > 0) { /* MLA: q and k of nope+rope, v of v_dim per head, and the latents */
        double qk = (double)(m->qk_nope + m->qk_rope), v = (double)m->v_dim;
        attn = 2.0 * sl * b * a * (2.0 * qk + v) + 2.0 * sl * b * a * v +
               2.0 * sl * b * (double)(m->kv_lora + m->q_lora) * t; /* latents: replicated */
    }
    if (m->rope) /* q and k before RoPE and their rotate_half */
        attn += e->rope_extra * sl * b * (a + g) * d;
    double gate = m->gated_mlp ? 2.0 : 1.0, act_x = m->gated_mlp ? e->act_extra : 0.0;
    double mlp = 2.0 * sl * b * f * gate + L * sl * b * f + act_x * sl * b * f;
    if (m->experts > 0) { /* the mean block: routed top-k copies, router logits, shared experts */
        double fe = (double)m->moe_ffn, fs = (double)m->shared_ffn;
        double moe = routed_rows(m, sl * b) * (2.0 * fe * gate + L * fe + act_x * fe) +
                     4.0 * sl * b * (double)m->experts + (2.0 * sl * b * fs * gate + (L + act_x) * sl * b * fs);
        double w = (double)mm_llm_moe_layers(m) / (double)m->layers;
        mlp = (1.0 - w) * mlp + w * moe;
    }
    double split = attn + mlp;
    /* unfused scores: window blocks keep s x their keys per query of them */
    double keys = s;
    if (m->window > 0) {
        double ws = mm_llm_sliding_fraction(m);
        keys = (1.0 - ws) * s + ws * mm_llm_window_keys(m, s);
    }
    if (m->cross_tokens > 0 && m->layers > 0) { /* Mllama's cross blocks: cross_tokens keys per query */
        double xs = (double)mm_llm_cross_layers(m) / (double)m->layers;
        keys = (1.0 - xs) * keys + xs * m->cross_images * (double)m->cross_tokens;
    }
    double scores = recompute == MM_RECOMPUTE_NONE ? 5.0 * a * sl * keys * b : 0.0;
    return rep / rep_div + (split + scores) / t;
}

double mm_mem_layer_activations_varlen(const mm_llm *m, double T, double S, int tp, bool sp, int cp,
                                       int recompute)
{
    return mm_mem_layer_activations_varlen_lb(m, T, S, tp, sp, cp, recompute, 2.0);
}

static double varlen_eager(const mm_llm *m, double T, double S, int tp, bool sp, int cp, int recompute, double L,
                           const mm_mem_eager *e)
{
    /* one "sequence" of T tokens, less its T^2 scores, plus the scores of S */
    double all = mm_mem_layer_activations_eager(m, 1.0, T, tp, sp, cp, recompute, L, e);
    if (recompute != MM_RECOMPUTE_NONE)
        return all;
    double t = tp > 0 ? (double)tp : 1.0, c = cp > 0 ? (double)cp : 1.0, a = (double)m->heads;
    return all - 5.0 * a * (T / c) * T / t + 5.0 * a * S / (c * t);
}

double mm_mem_layer_activations_varlen_lb(const mm_llm *m, double T, double S, int tp, bool sp, int cp,
                                          int recompute, double L)
{
    return varlen_eager(m, T, S, tp, sp, cp, recompute, L, NULL);
}

/* Known limit: the model's mean block (mm_mem_llm_rank takes a stage's own
 * blocks for non-uniform models such as Gemma 2). */
double mm_mem_llm_mb_activations(const mm_llm *m, const mm_mem_config *c, int stage, double T, double S)
{
    int nl = mm_layout_stage_layers(&c->lay, m->layers, stage);
    double cp = c->lay.cp > 0 ? (double)c->lay.cp : 1.0, t = c->lay.tp > 0 ? (double)c->lay.tp : 1.0;
    double act = (double)nl * varlen_eager(m, T, S, c->lay.tp, c->sp, c->lay.cp, c->recompute,
                                           mm_fp8_saved_input_bytes(&c->fp8), &c->eager);
    if (stage == 0)
        act += 3.0 * (T / cp) * (double)m->hidden / (c->sp ? t : 1.0);
    return act;
}

static void encoder_as_llm(const mm_encoder *e, mm_llm *as_llm)
{
    memset(as_llm, 0, sizeof *as_llm);
    as_llm->hidden = e->hidden;
    as_llm->heads = as_llm->kv_heads = e->heads;
    as_llm->head_dim = e->head_dim;
    as_llm->ffn = e->ffn;
    as_llm->gated_mlp = e->gated_mlp; /* Qwen2.5-VL's SwiGLU tower */
}

double mm_mem_encoder_activations(const mm_encoder *e, double inputs, int tp, bool sp, int recompute)
{
    mm_llm as_llm;
    encoder_as_llm(e, &as_llm);
    double n = (double)mm_encoder_block_tokens(e);
    return (double)e->layers * mm_mem_layer_activations(&as_llm, inputs, n, tp, sp, 1, recompute);
}

/* Interleaved 1F1B: rank k runs 2 (p - k - 1) + (v - 1) p warm-up chunk
 * forwards (Megatron-Core's get_pp_rank_microbatches, NVIDIA/Megatron-LM
 * at d98e8a64ddf34856e74b24714e3bedb2f5a39553,
 * megatron/core/pipeline_parallel/schedules.py; parallel/schedule.c runs
 * the same order, all of it warm-up when m == p), and its first steady
 * step adds one more forward before the first backward: that many chunks
 * in flight at the peak, in units of the stage (v chunks).  Every rank, the
 * last included, holds close to p micro-batches' worth: the chunk
 * forwards of the whole first round come before any backward. */
static double interleaved_in_flight(int k, int p, int v, int m)
{
    long total = (long)m * v, warm = 2L * (p - k - 1) + (long)(v - 1) * p;
    long chunks = (m == p || warm >= total) ? total : warm + 1;
    return (double)chunks / v;
}

double mm_mem_in_flight(mm_mem_schedule s, int stage, int pp, int vpp, int micro_batches)
{
    double m = (double)micro_batches, k = (double)stage, p = (double)pp;
    switch (s) {
    case MM_MEM_GPIPE: return m;
    case MM_MEM_INTERLEAVED:
        return vpp > 1 ? interleaved_in_flight(stage, pp, vpp, micro_batches) : fmin(m, p - k);
    case MM_MEM_ZB_2P: return fmin(m, 2 * p);
    case MM_MEM_1F1B:
    case MM_MEM_ZB_H1:
    default: return fmin(m, p - k);
    }
}

double mm_mem_config_in_flight(const mm_mem_config *c, int stage)
{
    if (!c->coexec)
        return mm_mem_in_flight(c->schedule, stage, c->lay.pp, c->lay.vpp, c->micro_batches);
    double units = mm_mem_in_flight(c->schedule, stage, c->lay.pp, c->lay.vpp, (c->micro_batches + 1) / 2);
    return fmin(2.0 * units, (double)c->micro_batches);
}

static int stage_layers(const mm_llm *m, const mm_mem_config *c, int stage)
{
    return mm_layout_stage_layers(&c->lay, m->layers, stage);
}

/* FP8 (c->fp8): the stage's FP8-weight parameters (its blocks' Linear
 * weights, fp8.h) hold fp8.h's weight, gradient and optimizer bytes
 * instead of Megatron's 2, grad_bytes and 12, sharded as ZeRO shards
 * those; a part of model_states. */
static void fp8_states(const mm_llm *sm, const mm_mem_config *c, int nl, int ep_dp, mm_mem_rank *out)
{
    if (!c->fp8.on)
        return;
    double t = (double)c->lay.tp, dp = (double)c->lay.dp;
    double layer = (double)mm_llm_layer_params(sm), expert_part = (double)mm_llm_layer_expert_params(sm);
    if (!(layer > 0))
        return;
    double frac = fmin(1.0, mm_fp8_layer_weight_params(sm) / layer);
    double lin = (double)nl * ((layer - expert_part) / t + expert_part / (t * ep_dp)) * frac;
    double gb = c->grad_bytes > 0 ? c->grad_bytes : MM_BYTES_GRAD;
    out->weights += lin * (mm_fp8_weight_bytes(&c->fp8) - MM_BYTES_WEIGHT) / (c->zero >= 3 && !c->z3_keep ? dp : 1.0);
    out->grads += lin * (mm_fp8_grad_bytes(&c->fp8, gb) - gb) / (c->zero >= 2 && !c->z3_keep ? dp : 1.0);
    out->optimizer += lin * (mm_fp8_optim_bytes(&c->fp8) - MM_BYTES_OPTIM) / (c->zero >= 1 ? dp : 1.0);
}

/* The model states of a stage of nl blocks like sm (with the embedding
 * when first, the final norm and head when last) on one rank: parameters,
 * weights, gradients and optimizer states into out; a part of
 * mm_mem_llm_rank. */
static void model_states(const mm_llm *m, const mm_llm *sm, const mm_mem_config *c, int nl, bool first, bool last,
                         int ep_dp, mm_mem_rank *out)
{
    double t = (double)c->lay.tp, h = (double)m->hidden;
    /* mean block (llm.h): routed experts split over the expert group's
     * ep_dp replicas as well as tp */
    double layer = (double)mm_llm_layer_params(sm);
    double expert_part = (double)mm_llm_layer_expert_params(sm);
    double dense = (double)nl * (layer - expert_part) / t;
    double experts = (double)nl * expert_part / (t * ep_dp);
    if (first)
        dense += (double)mm_llm_embedding_params(m) / t;
    if (last)
        dense += (double)mm_llm_final_norm_params(m) / t +
                 (m->tied ? (c->lay.pp > 1 ? (double)m->vocab * h : 0.0) : (double)mm_llm_head_params(m)) / t;
    out->params = dense + experts;
    /* Experts are data-parallel over the replicas outside their group:
     * Megatron's expert DP group is dp*tp/(ep*etp), here dp/ep_dp. */
    double exp_dp = (double)c->lay.dp / (double)ep_dp;
    if (exp_dp < 1.0)
        exp_dp = 1.0;
    double bpp_dense = mm_mem_state_bytes_per_param(c->zero, c->lay.dp);
    double bpp_exp = mm_mem_state_bytes_per_param(c->zero, (int)exp_dp);
    double all = dense * bpp_dense + experts * bpp_exp;
    out->weights = c->zero >= 3 ? out->params * MM_BYTES_WEIGHT / c->lay.dp : out->params * MM_BYTES_WEIGHT;
    out->grads = c->zero >= 2 ? out->params * MM_BYTES_GRAD / c->lay.dp : out->params * MM_BYTES_GRAD;
    out->optimizer = all - out->weights - out->grads;
    if (out->optimizer < 0) /* rounding across the two DP groups */
        out->optimizer = 0;
    /* the framework's gradient buffer element (Megatron's main_grad is fp32
     * only with accumulate_allreduce_grads_in_fp32; DeepSpeed keeps 16-bit
     * gradients): the 4 bytes above scaled, the other states unchanged */
    if (c->grad_bytes > 0)
        out->grads *= c->grad_bytes / MM_BYTES_GRAD;
    /* FSDP2 on a pipeline (z3_keep): the all-gathered 16-bit parameters of
     * every block stay from the first forward to the last backward
     * (reshard_after_forward False, no reshard after a backward but the
     * last), and each block's gradient accumulates unsharded in the reduce
     * dtype (FSDPParam.to_accumulated_grad_if_needed) until the one
     * reduce-scatter: both the whole stage's, in place of the 1/dp shards
     * (the sharded fp32 copy stays in the optimizer term) */
    if (c->zero >= 3 && c->z3_keep) {
        out->weights = out->params * MM_BYTES_WEIGHT;
        out->grads = out->params * (c->grad_bytes > 0 ? c->grad_bytes : MM_BYTES_GRAD);
    }
    fp8_states(sm, c, nl, ep_dp, out);
    if (c->frozen)
        out->grads = out->optimizer = 0;
}

/* Interleaved 1F1B on `stage`, chunk by chunk: the most transformer
 * layers whose activations are held at once (*layers) and, then, how many
 * of the held chunk forwards are chunk 0 (*first_chunks: the embedding's
 * output on stage 0).  The step order is parallel/schedule.c's, Megatron-
 * Core's (interleaved_in_flight above): forward k runs chunk (k mod pv) / p,
 * backward k chunk v - 1 - (k mod pv) / p.  With equal chunks this is
 * interleaved_in_flight x the stage's layers; with Megatron's split options
 * (model/layout.h) the short first or last chunk counts for what it holds.
 * The steady phase repeats every pv steps, so two periods find the peak. */
static void interleaved_peak(const mm_llm *m, const mm_mem_config *c, int stage, double *layers,
                             double *first_chunks)
{
    int p = c->lay.pp, v = c->lay.vpp, mb = c->micro_batches;
    long total = (long)mb * v, warm = 2L * (p - stage - 1) + (long)(v - 1) * p, g = (long)p * v;
#define CHUNK_LAYERS(ch) ((double)mm_layout_chunk_layers(&c->lay, m->layers, stage, (ch)))
    if (mb == p || warm >= total) { /* every forward before any backward */
        *layers = (double)mb * mm_layout_stage_layers(&c->lay, m->layers, stage);
        *first_chunks = mb;
        return;
    }
    double cur = 0, c0 = 0;
    for (long f = 0; f <= warm; f++) {
        int ch = (int)((f % g) / p);
        cur += CHUNK_LAYERS(ch);
        c0 += ch == 0;
    }
    *layers = cur, *first_chunks = c0;
    long steady = total - warm - 1, lim = steady < 2 * g ? steady : 2 * g;
    for (long i = 0; i < lim; i++) {
        int cb = v - 1 - (int)((i % g) / p), cf = (int)(((warm + 1 + i) % g) / p);
        cur += CHUNK_LAYERS(cf) - CHUNK_LAYERS(cb);
        c0 += (cf == 0) - (cb == 0);
        if (cur > *layers)
            *layers = cur, *first_chunks = c0;
    }
#undef CHUNK_LAYERS
}

double mm_mem_cp_ring_bytes(const mm_llm *m, double b, double s, int tp, int cp)
{
    if (cp <= 1 || !(b > 0) || !(s > 0))
        return 0.0;
    double kv_block = 2.0 * b * (s / cp) * (double)m->kv_heads * (double)m->head_dim * 2.0 / (tp > 0 ? tp : 1);
    return 4.0 * kv_block;
}

int mm_mem_llm_rank(const mm_llm *m, const mm_mem_config *c, int stage, mm_mem_rank *out)
{
    memset(out, 0, sizeof *out);
    if (c->lay.pp < 1 || c->lay.tp < 1 || c->lay.dp < 1 || stage < 0 || stage >= c->lay.pp || c->micro_batches < 1)
        return -1;
    int nl = stage_layers(m, c, stage);
    bool first = stage == 0, last = stage == c->lay.pp - 1;
    double t = (double)c->lay.tp, b = c->micro_batch, s = c->seq, h = (double)m->hidden;
    double cp = c->lay.cp > 0 ? (double)c->lay.cp : 1.0;
    int ep_dp = 1, ep_tp = 1;
    if (mm_mem_ep_fold(c->lay.ep > 0 ? c->lay.ep : 1, c->lay.tp, c->lay.dp, &ep_dp, &ep_tp))
        return -1;

    /* The stage's own blocks (DeepSeek's dense first ones, Gemma 2's mix)
     * when its layers are contiguous (vpp 1); else the model's mean block. */
    mm_llm view = *m;
    if ((c->lay.vpp <= 1) && !mm_llm_blocks_uniform(m)) {
        int l0 = 0;
        for (int k = 0; k < stage; k++)
            l0 += stage_layers(m, c, k);
        /* a stage of the embedding or the loss alone: one block's view,
         * multiplied by its 0 layers (no mean over zero blocks) */
        view = nl > 0 ? mm_llm_stage_view(m, l0, nl) : mm_llm_stage_view(m, l0 < m->layers ? l0 : m->layers - 1, 1);
    }
    const mm_llm *sm = &view;

    /* ---- model states ---- */
    model_states(m, sm, c, nl, first, last, ep_dp, out);

    /* ---- activations ---- */
    double per_layer = mm_mem_layer_activations_eager(sm, b, s, c->lay.tp, c->sp, c->lay.cp, c->recompute,
                                                      mm_fp8_saved_input_bytes(&c->fp8), &c->eager);
    double inflight = mm_mem_config_in_flight(c, stage);
    /* Embedding output (2sbh) and its dropout mask (sbh) on the first
     * stage, per micro-batch in flight (Korthikanti 4.2: sbhp/t with SP). */
    double sl = s / cp, embed = first ? 3.0 * sl * b * h / (c->sp ? t : 1.0) : 0.0;
    if (c->schedule == MM_MEM_INTERLEAVED && c->lay.vpp > 1) {
        double layers_in, first_chunks;
        interleaved_peak(m, c, stage, &layers_in, &first_chunks);
        out->activations = layers_in * per_layer + first_chunks * embed;
    } else {
        out->activations = inflight * ((double)nl * per_layer + embed);
    }
    out->transient = mm_mem_stage_transient(sm, c, stage, b * s);
    out->total = out->weights + out->grads + out->optimizer + out->activations + out->transient;
    return 0;
}

/* Megatron-Core's vocab-parallel cross-entropy keeps the fp32 softmax
 * (4 B) beside the 16-bit logits (2 B); transformers' ForCausalLMLoss
 * upcasts (logits.float()) and keeps log_softmax's fp32 output: the
 * profile's memory.loss_bytes_per_logit says how many bytes per logit
 * element are live at the peak. */
double mm_mem_loss_transient(const mm_llm *m, const mm_mem_config *c, double T)
{
    double t = c->lay.tp > 0 ? (double)c->lay.tp : 1.0, cp = c->lay.cp > 0 ? (double)c->lay.cp : 1.0;
    double per = c->loss_bytes > 0 ? c->loss_bytes : 4.0, tok = T / cp;
    return per * tok * (double)m->vocab / t + (2.0 + c->eager.norm_extra) * tok * (double)m->hidden / (c->sp ? t : 1.0);
}

/* The loss's buffers live from the last forward to the head's backward,
 * before any layer's backward starts; a rebuilt layer (full recompute)
 * and the attention's dq accumulator live during a layer's backward:
 * the larger of the two, with the gathered ZeRO-3 parameters under both. */
double mm_mem_stage_transient(const mm_llm *m, const mm_mem_config *c, int stage, double T)
{
    double t = c->lay.tp > 0 ? (double)c->lay.tp : 1.0, cp = c->lay.cp > 0 ? (double)c->lay.cp : 1.0;
    double layer = 0.0;
    if (c->recompute == MM_RECOMPUTE_FULL)
        layer += mm_mem_layer_activations_eager(m, 1.0, T, c->lay.tp, c->sp, c->lay.cp, MM_RECOMPUTE_SELECTIVE,
                                                mm_fp8_saved_input_bytes(&c->fp8), &c->eager);
    /* FlashAttention-2's mha_bwd: dq_accum, float, (b, s, heads, d) */
    if (c->dq_accum && mm_layout_stage_layers(&c->lay, m->layers, stage) > 0)
        layer += 4.0 * (T / cp) * (double)m->heads * (double)m->head_dim / t;
    /* context parallelism's p2p ring: the KV blocks in flight while a
     * layer's attention runs (mm_mem_cp_ring_bytes) */
    if (c->cp_ring && mm_layout_stage_layers(&c->lay, m->layers, stage) > 0)
        layer += mm_mem_cp_ring_bytes(m, 1.0, T, c->lay.tp, c->lay.cp);
    double loss = stage == c->lay.pp - 1 ? mm_mem_loss_transient(m, c, T) : 0.0;
    return c->z3_bytes + fmax(layer, loss);
}

double mm_mem_reserved(const mm_mem_alloc *a, double states, double dynamic)
{
    double f = a && a->fragmentation > 0 && a->fragmentation < 1 ? a->fragmentation : 0.0;
    return states + dynamic / (1.0 - f) + (a ? a->fixed : 0.0);
}

int mm_mem_encoder_rank(const mm_encoder *e, double inputs, int tp, bool sp, int dp, int zero, int recompute,
                        int in_flight, bool frozen, mm_mem_rank *out)
{
    memset(out, 0, sizeof *out);
    if (tp < 1 || dp < 1 || in_flight < 0)
        return -1;
    double t = (double)tp;
    out->params = (double)mm_encoder_params(e) / t;
    if (frozen) {
        out->weights = zero >= 3 ? out->params * MM_BYTES_WEIGHT / dp : out->params * MM_BYTES_WEIGHT;
    } else {
        out->weights = zero >= 3 ? out->params * MM_BYTES_WEIGHT / dp : out->params * MM_BYTES_WEIGHT;
        out->grads = zero >= 2 ? out->params * MM_BYTES_GRAD / dp : out->params * MM_BYTES_GRAD;
        out->optimizer = out->params * mm_mem_state_bytes_per_param(zero, dp) - out->weights - out->grads;
    }
    /* The encoder block is a non-causal GPT block: the same terms with
     * s = tokens per input and b = inputs (an MLP of width ffn, MHA). */
    double n = (double)mm_encoder_tokens(e);
    out->activations = frozen ? 0.0 : (double)in_flight * mm_mem_encoder_activations(e, inputs, tp, sp, recompute);
    /* a frozen encoder runs forward only: one layer's output at a time */
    out->transient = 2.0 * 2.0 * inputs * n * (double)e->hidden / t;
    out->total = out->weights + out->grads + out->optimizer + out->activations + out->transient;
    return 0;
}

int mm_mem_ep_fold(int ep, int tp, int dp, int *ep_dp, int *ep_tp)
{
    if (ep < 1 || tp < 1 || dp < 1)
        return -1;
    int d = mm_gcd(ep, dp), t = ep / d;
    if (tp % t)
        return -1;
    *ep_dp = d;
    *ep_tp = t;
    return 0;
}
