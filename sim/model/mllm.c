/* mllm.c - multimodal models: the parameters, FLOPs and per-op costs of
 * encoders and projectors, and the visual tokens a tile or a video frame
 * becomes (reading is mllm_read.c).
 * Not for: the LLM decoder itself (llm.c), memory, time, placement. */
#include "model/mllm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


/* ------------------------------------------------------------------------ */
/* Encoder costs                                                             */
/* ------------------------------------------------------------------------ */

static int64_t enc_norm(const mm_encoder *e, int64_t width)
{
    return e->rmsnorm ? width : 2 * width;
}

int64_t mm_encoder_layer_params(const mm_encoder *e)
{
    int64_t h = e->hidden, f = e->ffn;
    int64_t p = 4 * h * h;                                  /* q, k, v, out */
    p += (e->qkv_bias ? 2 * h : 0) + (e->k_bias ? h : 0);   /* q, v biases; k bias */
    p += e->out_bias ? h : 0;
    p += 2 * h * f + (e->mlp_bias ? f + h : 0);
    if (e->gated_mlp) /* Qwen2.5-VL: gate_proj beside up_proj, both biased */
        p += h * f + (e->mlp_bias ? f : 0);
    p += 2 * enc_norm(e, h);
    if (e->qk_norm)
        p += 2 * enc_norm(e, h);
    if (e->layer_scale)
        p += 2 * h;
    return p;
}

int64_t mm_encoder_tokens(const mm_encoder *e)
{
    if (e->kind == MM_ENC_AUDIO)
        return e->frames;
    int64_t g = e->image_size / e->patch_size;
    return g * g + (e->cls_token ? 1 : 0);
}

/* Tokens per input the blocks compute: Mllama pads each tile's to a
 * multiple of token_pad (1025 -> 1032, MllamaVisionModel.forward). */
int64_t mm_encoder_block_tokens(const mm_encoder *e)
{
    int64_t n = mm_encoder_tokens(e);
    return e->token_pad > 1 ? (n + e->token_pad - 1) / e->token_pad * e->token_pad : n;
}

int64_t mm_encoder_stem_params(const mm_encoder *e)
{
    int64_t h = e->hidden;
    if (e->kind == MM_ENC_AUDIO) /* conv1 mel->h k3, conv2 h->h k3, positions */
        return e->mel_bins * h * 3 + h + h * h * 3 + h + e->frames * h;
    int64_t t = e->temporal_patch > 0 ? e->temporal_patch : 1; /* Qwen2-VL's Conv3d spans t frames */
    int64_t p = e->channels * t * e->patch_size * e->patch_size * h + (e->patch_bias ? h : 0);
    if (!e->rope2d)
        p += mm_encoder_tokens(e) * h; /* learned positions */
    p += e->pos_table * h;             /* Qwen3-VL's interpolated table */
    if (e->cls_token)
        p += h;
    if (e->aspect_rows > 0) { /* Mllama: the position table's gate, the tile position table, and
                               * the pre- and post-tile aspect-ratio embeddings with their gates */
        int64_t tg = e->tile_group > 0 ? e->tile_group : 1;
        p += 1 + e->aspect_rows * tg * mm_encoder_tokens(e) * h + 2 * (e->aspect_rows * tg * h + 1);
    }
    return p;
}

int64_t mm_encoder_params(const mm_encoder *e)
{
    return mm_encoder_stem_params(e) + e->layers * mm_encoder_layer_params(e) +
           (e->pre_norm ? enc_norm(e, e->hidden) : 0) + (e->post_norm ? enc_norm(e, e->hidden) : 0) +
           2 * e->global_layers; /* Mllama's gate_attn, gate_ffn */
}

/* Query-key pairs per input of the mean block: n^2, or n x window for
 * Qwen2.5-VL's windowed blocks (all but full_layers of them). */
static double enc_pairs(const mm_encoder *e)
{
    double n = (double)mm_encoder_block_tokens(e);
    if (e->tile_group > 1) /* Mllama: each token attends every tile of its image */
        return n * n * (double)e->tile_group;
    if (e->window <= 0 || e->layers <= 0)
        return n * n;
    double full = (double)e->full_layers / (double)e->layers;
    return full * n * n + (1.0 - full) * n * fmin(n, (double)e->window);
}

double mm_encoder_layer_fwd_flops(const mm_encoder *e, double inputs)
{
    double h = (double)e->hidden, f = (double)e->ffn, n = (double)mm_encoder_block_tokens(e);
    double mlp = (e->gated_mlp ? 3.0 : 2.0) * h * f;
    return inputs * (2.0 * n * (4.0 * h * h + mlp) + 4.0 * enc_pairs(e) * h);
}

double mm_encoder_stem_fwd_flops(const mm_encoder *e, double inputs)
{
    double h = (double)e->hidden;
    if (e->kind == MM_ENC_AUDIO) { /* conv1 over 2*frames input frames, conv2 strided */
        double fr = (double)e->frames;
        return inputs * (2.0 * 2.0 * fr * 3.0 * (double)e->mel_bins * h + 2.0 * fr * 3.0 * h * h);
    }
    double g = (double)(e->image_size / e->patch_size), t = e->temporal_patch > 0 ? (double)e->temporal_patch : 1.0;
    return inputs * 2.0 * g * g * t * (double)(e->channels * e->patch_size * e->patch_size) * h;
}

double mm_encoder_fwd_flops(const mm_encoder *e)
{
    return mm_encoder_stem_fwd_flops(e, 1.0) + (double)e->layers * mm_encoder_layer_fwd_flops(e, 1.0);
}

typedef struct op_list {
    mm_op_cost *ops;
    int n, cap;
} op_list;

static void push(op_list *l, const char *name, mm_op_kind kind, double flops, double bytes, double m,
                 double n, double k, double batch, bool causal)
{
    if (l->n < l->cap)
        l->ops[l->n] = (mm_op_cost){.name = name, .kind = kind, .flops = flops, .bytes = bytes, .m = m, .n = n,
                                    .k = k, .batch = batch, .causal = causal, .pass = MM_OP_F};
    l->n++;
}

static void push_gemm(op_list *l, const char *name, double m, double n, double k, bool bias, double e)
{
    push(l, name, MM_OPK_GEMM, 2.0 * m * n * k, (m * k + k * n + m * n + (bias ? n : 0.0)) * e, m, n, k, 1.0,
         false);
}

static void push_mem(op_list *l, const char *name, double bytes)
{
    push(l, name, MM_OPK_MEM, 0.0, bytes, 0, 0, 0, 0, false);
}

int mm_encoder_layer_ops(const mm_encoder *e, double inputs, int tp, bool sp, int dtype_bytes,
                         mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    op_list l = {ops, 0, cap};
    double t = (double)tp, b = (double)dtype_bytes, h = (double)e->hidden, f = (double)e->ffn / t;
    double n = (double)mm_encoder_block_tokens(e), tok = inputs * n, tn = sp ? tok / t : tok;
    double q = h / t;
    push_mem(&l, "norm_attn", (2.0 * tn * h + (double)enc_norm(e, e->hidden)) * b);
    push_gemm(&l, "qkv", tok, 3.0 * q, h, e->qkv_bias, b);
    if (e->qk_norm)
        push_mem(&l, "qk_norm", 4.0 * tok * q * b);
    /* bidirectional: every token attends to every token of its input (or
     * of its window: the mean block's keys per query) */
    double pairs = enc_pairs(e);
    push(&l, "attn", MM_OPK_ATTN, 4.0 * inputs * pairs * h / t, tok * 4.0 * q * b, n, n > 0 ? pairs / n : 0,
         (double)e->head_dim, inputs * (double)e->heads / t, false);
    push_gemm(&l, "attn_out", tok, h, q, false, b);
    push_mem(&l, "residual_attn", 3.0 * tn * h * b);
    push_mem(&l, "norm_mlp", (2.0 * tn * h + (double)enc_norm(e, e->hidden)) * b);
    double up = e->gated_mlp ? 2.0 * f : f;
    push_gemm(&l, "fc1", tok, up, h, e->mlp_bias, b);
    push_mem(&l, "act", tok * (up + f) * b);
    push_gemm(&l, "fc2", tok, h, f, false, b);
    push_mem(&l, "residual_mlp", 3.0 * tn * h * b);
    return l.n <= l.cap ? l.n : -1;
}

int mm_encoder_stem_ops(const mm_encoder *e, double inputs, int tp, int dtype_bytes, mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    (void)tp; /* the stem is small and replicated over tp (Megatron's ViT) */
    op_list l = {ops, 0, cap};
    double b = (double)dtype_bytes, h = (double)e->hidden;
    if (e->kind == MM_ENC_AUDIO) {
        double fr = (double)e->frames;
        push_gemm(&l, "conv1", inputs * 2.0 * fr, h, 3.0 * (double)e->mel_bins, true, b);
        push_mem(&l, "gelu1", 4.0 * inputs * fr * h * b);
        push_gemm(&l, "conv2", inputs * fr, h, 3.0 * h, true, b);
        push_mem(&l, "pos_embed", 3.0 * inputs * fr * h * b);
    } else {
        double g = (double)(e->image_size / e->patch_size);
        double tp_ = e->temporal_patch > 0 ? (double)e->temporal_patch : 1.0;
        double k = (double)(e->channels * e->patch_size * e->patch_size) * tp_;
        push_gemm(&l, "patch_embed", inputs * g * g, h, k, e->patch_bias, b);
        if (!e->rope2d)
            push_mem(&l, "pos_embed", 3.0 * inputs * (double)mm_encoder_tokens(e) * h * b);
        else /* 2-D rotary embedding on q and k in every block is element-wise; counted once here */
            push_mem(&l, "rope2d", 2.0 * inputs * (double)mm_encoder_tokens(e) * h * b);
        if (e->pos_table > 0) /* bilinear: four table rows gathered per patch, added to it */
            push_mem(&l, "pos_interp", 6.0 * inputs * (double)mm_encoder_tokens(e) * h * b);
    }
    return l.n <= l.cap ? l.n : -1;
}

/* ------------------------------------------------------------------------ */
/* Projectors and the whole model                                            */
/* ------------------------------------------------------------------------ */

/* Idefics2's connector (modeling_idefics2.py, Idefics2Connector): the
 * modality projection gate/up (in x ffn each) and down (ffn x out); the
 * latents (latents x out); per perceiver block input_latents_norm,
 * input_context_norm, post_attention_layernorm (RMSNorm, out each), q
 * (out x heads*d), k and v (out x kv_heads*d), o (heads*d x out), a gated
 * MLP of 4 out; the final norm.  No biases anywhere. */
static int64_t perceiver_params(const mm_projector *p)
{
    int64_t o = p->out, q = p->heads * p->head_dim, kv = p->kv_heads * p->head_dim;
    int64_t block = 3 * o + o * q + 2 * o * kv + q * o + 3 * o * (4 * o);
    return 2 * p->in * p->ffn + p->ffn * o + p->latents * o + (int64_t)p->layers * block + o;
}

/* Forward FLOPs of the connector for `images` images of ctx patches:
 * the modality projection over every patch, then per block the latents'
 * q, o and MLP, k and v over [context; latents], and the core: latents
 * queries x (ctx + latents) keys, bidirectional, counted dense. */
static double perceiver_fwd_flops(const mm_projector *p, double images)
{
    double in = (double)p->in, o = (double)p->out, f = (double)p->ffn, n = (double)p->ctx;
    double L = (double)p->latents, q = (double)(p->heads * p->head_dim), kv = (double)(p->kv_heads * p->head_dim);
    double proj = 2.0 * n * (2.0 * in * f + f * o);
    double block = 2.0 * L * (o * q + q * o + 3.0 * o * 4.0 * o) + 2.0 * (n + L) * o * 2.0 * kv + 4.0 * L * (n + L) * q;
    return images * (proj + (double)p->layers * block);
}

int64_t mm_projector_params(const mm_projector *p)
{
    switch (p->type) {
    case MM_PROJ_NONE: return 0;
    case MM_PROJ_LINEAR: return p->in * p->out + p->out;
    case MM_PROJ_MLP_GELU: return p->in * p->out + p->out + (p->depth - 1) * (p->out * p->out + p->out);
    case MM_PROJ_INTERNVL: return 2 * p->in + p->in * p->out + p->out + p->out * p->out + p->out;
    case MM_PROJ_QWEN_MERGER: /* ln_q, mlp.0 Linear(in, in), mlp.2 Linear(in, out), both biased;
                               * DeepStack mergers: the same with a LayerNorm over in */
        return (p->rmsnorm ? 1 : 2) * p->norm_dim + p->in * p->in + p->in + p->in * p->out + p->out +
               p->deepstack * (2 * p->in + p->in * p->in + p->in + p->in * p->out + p->out);
    case MM_PROJ_IDEFICS3: return p->in * p->out; /* modality_projection, bias=False */
    case MM_PROJ_GEMMA3: return p->norm_dim + p->in * p->out; /* mm_soft_emb_norm, mm_input_projection */
    case MM_PROJ_MISTRAL3: /* norm (RMS), merging_layer, linear_1, linear_2 */
        return p->norm_dim + p->in * p->norm_dim + p->norm_dim * p->out + p->out * p->out +
               (p->bias ? 2 * p->out : 0);
    case MM_PROJ_PERCEIVER: return perceiver_params(p);
    case MM_PROJ_LLAMA4: /* vision_adapter.mlp fc1, fc2; multi_modal_projector.linear_1 */
        return p->in * p->ffn + p->ffn * p->mid + p->mid * p->out;
    case MM_PROJ_MEGATRON: /* [norm], linear_fc1, linear_fc2 */
        return (p->norm ? (p->rmsnorm ? 1 : 2) * p->in : 0) + p->in * p->mid + p->mid * p->out +
               (p->bias ? p->mid + p->out : 0);
    }
    return 0;
}

double mm_projector_fwd_flops(const mm_projector *p, double tokens)
{
    if (p->type == MM_PROJ_NONE)
        return 0.0;
    double in = (double)p->in, out = (double)p->out;
    if (p->type == MM_PROJ_QWEN_MERGER)
        return (1.0 + (double)p->deepstack) * 2.0 * tokens * (in * in + in * out);
    if (p->type == MM_PROJ_PERCEIVER)
        return p->latents > 0 ? perceiver_fwd_flops(p, tokens / (double)p->latents) : 0.0;
    if (p->type == MM_PROJ_LLAMA4) {
        double f = (double)p->ffn, md = (double)p->mid;
        return 2.0 * tokens * (in * f + f * md + md * out);
    }
    if (p->type == MM_PROJ_MISTRAL3) {
        double c = (double)p->norm_dim;
        return 2.0 * tokens * (in * c + c * out + out * out);
    }
    if (p->type == MM_PROJ_MEGATRON)
        return 2.0 * tokens * (double)p->mid * (in + out);
    return 2.0 * tokens * (in * out + (double)(p->depth - 1) * out * out);
}

/* Multiplies the ops pushed since `from` by k (k identical blocks). */
static void repeat_from(op_list *l, int from, double k)
{
    for (int i = from; i < l->n && i < l->cap; i++) {
        l->ops[i].flops *= k;
        l->ops[i].bytes *= k;
        if (l->ops[i].kind != MM_OPK_MEM)
            l->ops[i].batch *= k;
    }
}

/* Idefics2's connector on one TP rank: the modality projection as a
 * Megatron MLP (column- then row-parallel) over every patch, then the
 * perceiver blocks (heads split by tp), one block's ops times `layers`.
 * `tokens` are the latents the LLM receives (images x latents). */
static int perceiver_ops(const mm_projector *p, double tokens, double t, double b, op_list *l)
{
    if (p->latents <= 0)
        return 0;
    double img = tokens / (double)p->latents, n = img * (double)p->ctx, L = tokens, kvt = n + L;
    double in = (double)p->in, o = (double)p->out, f = (double)p->ffn / t, d = (double)p->head_dim;
    double q = (double)p->heads * d / t, kv = (double)p->kv_heads * d / t;
    push_gemm(l, "proj_fc1", n, 2.0 * f, in, false, b);
    push_mem(l, "proj_act", 3.0 * n * f * b);
    push_gemm(l, "proj_fc2", n, o, f, false, b);
    int from = l->n;
    push_mem(l, "perc_norms", (2.0 * kvt * o + 2.0 * o) * b);
    push_gemm(l, "perc_q", L, q, o, false, b);
    push_gemm(l, "perc_kv", kvt, 2.0 * kv, o, false, b);
    push(l, "perc_attn", MM_OPK_ATTN, 4.0 * L * (double)(p->ctx + p->latents) * q, (L * 2.0 * q + kvt * 2.0 * kv) * b,
         (double)p->latents, (double)(p->ctx + p->latents), d, img * (double)p->heads / t, false);
    push_gemm(l, "perc_o", L, o, q, false, b);
    push_mem(l, "perc_residual", 6.0 * L * o * b);
    push_mem(l, "perc_norm_mlp", (2.0 * L * o + o) * b);
    push_gemm(l, "perc_fc1", L, 2.0 * 4.0 * o / t, o, false, b);
    push_mem(l, "perc_act", 3.0 * L * 4.0 * o / t * b);
    push_gemm(l, "perc_fc2", L, o, 4.0 * o / t, false, b);
    repeat_from(l, from, (double)p->layers);
    push_mem(l, "perc_final_norm", (2.0 * L * o + o) * b);
    return l->n <= l->cap ? l->n : -1;
}

int mm_projector_ops(const mm_projector *p, double tokens, int tp, int dtype_bytes, mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    op_list l = {ops, 0, cap};
    if (p->type == MM_PROJ_NONE)
        return 0;
    double b = (double)dtype_bytes, in = (double)p->in, out = (double)p->out, t = (double)tp;
    if (p->type == MM_PROJ_QWEN_MERGER) { /* ln_q over the unmerged patches, then the MLP */
        for (int i = 0; i <= p->deepstack; i++) { /* the merger, then each DeepStack merger */
            push_mem(&l, i ? "deepstack_norm" : "proj_norm", (2.0 * tokens * in + (i ? in : (double)p->norm_dim)) * b);
            push_gemm(&l, i ? "deepstack_fc1" : "proj_fc1", tokens, in / t, in, true, b);
            push_mem(&l, i ? "deepstack_act" : "proj_act", 2.0 * tokens * in / t * b);
            push_gemm(&l, i ? "deepstack_fc2" : "proj_fc2", tokens, out, in / t, false, b);
        }
        /* each DeepStack output added to the visual positions of one early
         * LLM block (read both, write one); timed here, where it is made */
        if (p->deepstack > 0)
            push_mem(&l, "deepstack_add", 3.0 * (double)p->deepstack * tokens * out * b);
        return l.n <= l.cap ? l.n : -1;
    }
    if (p->type == MM_PROJ_PERCEIVER)
        return perceiver_ops(p, tokens, t, b, &l);
    if (p->type == MM_PROJ_LLAMA4) { /* adapter fc1 column-, fc2 row-parallel; linear_1 column-parallel */
        double f = (double)p->ffn, md = (double)p->mid;
        push_gemm(&l, "proj_fc1", tokens, f / t, in, false, b);
        push_mem(&l, "proj_act", 2.0 * tokens * f / t * b);
        push_gemm(&l, "proj_fc2", tokens, md, f / t, false, b);
        push_mem(&l, "proj_act", 2.0 * tokens * md * b);
        push_gemm(&l, "proj_out", tokens, out / t, md, false, b);
        return l.n <= l.cap ? l.n : -1;
    }
    if (p->type == MM_PROJ_GEMMA3) { /* pooled tokens: norm, then one projection */
        push_mem(&l, "proj_norm", (2.0 * tokens * in + in) * b);
        push_gemm(&l, "proj", tokens, out / t, in, false, b);
        return l.n <= l.cap ? l.n : -1;
    }
    if (p->type == MM_PROJ_IDEFICS3) {
        push_gemm(&l, "proj", tokens, out / t, in, false, b);
        return l.n <= l.cap ? l.n : -1;
    }
    if (p->type == MM_PROJ_MISTRAL3) { /* norm over the unmerged patches, merge, then the MLP */
        double c = (double)p->norm_dim;
        push_mem(&l, "proj_norm", (2.0 * tokens * in + c) * b);
        push_gemm(&l, "proj_merge", tokens, c, in, false, b);
        push_gemm(&l, "proj_fc1", tokens, out / t, c, p->bias, b);
        push_mem(&l, "proj_act", 2.0 * tokens * out / t * b);
        push_gemm(&l, "proj_fc2", tokens, out, out / t, false, b);
        return l.n <= l.cap ? l.n : -1;
    }
    if (p->type == MM_PROJ_MEGATRON) { /* column- then row-parallel, as the other MLPs */
        double mid = (double)p->mid;
        if (p->norm)
            push_mem(&l, "proj_norm", (2.0 * tokens * in + (p->rmsnorm ? 1.0 : 2.0) * in) * b);
        push_gemm(&l, "proj_fc1", tokens, mid / t, in, p->bias, b);
        push_mem(&l, "proj_act", 2.0 * tokens * mid / t * b);
        push_gemm(&l, "proj_fc2", tokens, out, mid / t, false, b);
        return l.n <= l.cap ? l.n : -1;
    }
    if (p->type == MM_PROJ_INTERNVL)
        push_mem(&l, "proj_norm", (2.0 * tokens * in + 2.0 * in) * b);
    /* Megatron's MLP projector: column- then row-parallel */
    push_gemm(&l, "proj_fc1", tokens, out / t, in, true, b);
    for (int i = 1; i < p->depth; i++) {
        push_mem(&l, "proj_act", 2.0 * tokens * out / t * b);
        push_gemm(&l, i == p->depth - 1 ? "proj_fc2" : "proj_fc", tokens, i == p->depth - 1 ? out : out / t,
                  out / t, false, b);
    }
    return l.n <= l.cap ? l.n : -1;
}

double mm_projector_in_per_token(const mm_projector *p)
{
    if (p->type == MM_PROJ_PERCEIVER && p->latents > 0)
        return (double)p->in * (double)p->ctx / (double)p->latents;
    return (double)p->in;
}

static int64_t model_params(const mm_model *m, bool active)
{
    int64_t p = m->extra_params;
    if (m->has_llm)
        p += active ? mm_llm_active_params(&m->llm) : mm_llm_params(&m->llm);
    if (m->has_vision)
        p += mm_encoder_params(&m->vision) + mm_projector_params(&m->vision_proj);
    if (m->has_audio)
        p += mm_encoder_params(&m->audio) + mm_projector_params(&m->audio_proj);
    return p;
}

int64_t mm_model_params(const mm_model *m)
{
    return model_params(m, false);
}

int64_t mm_model_active_params(const mm_model *m)
{
    return model_params(m, true);
}

int64_t mm_model_tokens_per_tile(const mm_model *m)
{
    if (!m->has_vision || (m->has_llm && m->llm.cross_tokens > 0)) /* Mllama: cross-attended, not in the sequence */
        return 0;
    double g = (double)(m->vision.image_size / m->vision.patch_size);
    double r = m->pixel_shuffle > 0 ? m->pixel_shuffle : 1.0;
    return (int64_t)llround(g * g * r * r);
}

int64_t mm_model_proj_tokens_per_tile(const mm_model *m)
{
    if (m->has_vision && m->has_llm && m->llm.cross_tokens > 0)
        return mm_encoder_tokens(&m->vision);
    return mm_model_tokens_per_tile(m);
}

/* LLaVA-OneVision (modeling_llava_onevision.py, apply_pooling): each
 * frame's g x g grid is bilinearly resized to ceil(g/2) x ceil(g/2), 27 ->
 * 14 for SigLIP-384/14: 196 tokens (Li et al., arXiv 2408.03326 Sec. 4).
 * Qwen2-VL (Wang et al., arXiv 2409.12191 Sec. 2.1): temporal_patch_size
 * frames share one temporal patch, so a frame gives 1/2 of an image's
 * tokens.  Others (InternVL: 256 per 448-px frame) encode a frame as a
 * tile. */
int64_t mm_model_tokens_per_frame(const mm_model *m)
{
    if (!m->has_vision)
        return 0;
    if (m->frame_pool > 1) {
        int64_t g = m->vision.image_size / m->vision.patch_size, p = (g + m->frame_pool - 1) / m->frame_pool;
        return p * p;
    }
    if (m->vision.temporal_patch > 1)
        return mm_model_tokens_per_tile(m) / m->vision.temporal_patch;
    return mm_model_tokens_per_tile(m);
}

/* anyres_max_N (LLaVA-OneVision's vision_aspect_ratio): when an image's
 * grid features exceed N tiles' worth, they are bilinearly downscaled to
 * about N tiles (llava-onevision's pack_image_features); with the base
 * image that caps an image at N + 1 tiles' tokens. */
int mm_model_tiles_cap(const mm_model *m)
{
    return m->anyres_max > 0 ? m->anyres_max + 1 : 0;
}
