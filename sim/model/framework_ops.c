/* framework_ops.c - what a framework runs per layer on top of the model's
 * op list (framework_ops.h): the kernels each memory-bound op becomes and
 * their traffic (the profile's groups), the kernels a framework adds (the
 * QKV bias, layout copies, dropout masks), and the attention core as the
 * unfused frameworks run it (Megatron's batched GEMMs and fused softmax,
 * PyTorch eager's ops).  The one room that says which kernels framework X
 * runs; the cost bridge (cost/fwcost.c) times them on the GPU's tables.
 * Not for: reading a profile (framework.c) or timing (cost/fwcost.c). */
#include "model/framework_ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Which group an op of llm.h's lists belongs to, by its name; -1 none. */
static int group_of(const char *name)
{
    if (!name)
        return -1;
    if (!strncmp(name, "norm_", 5) || !strcmp(name, "final_norm"))
        return MM_FW_NORM;
    if (!strcmp(name, "rope"))
        return MM_FW_ROPE;
    if (!strcmp(name, "act"))
        return MM_FW_ACT;
    if (!strncmp(name, "residual_", 9))
        return MM_FW_RESIDUAL;
    if (!strcmp(name, "cross_entropy"))
        return MM_FW_XENT;
    return -1;
}

int mm_framework_op_kernels(const mm_framework *fw, const char *op_name)
{
    int g = group_of(op_name);
    return g < 0 ? 1 : fw->group[g].kernels;
}

int mm_framework_op_modules(const char *op_name, int kind, bool weightless)
{
    if (kind == MM_OPK_GEMM)
        return !weightless || (op_name && !strcmp(op_name, "attn_score"));
    if (kind == MM_OPK_ATTN)
        return 1;
    return group_of(op_name) == MM_FW_NORM;
}

void mm_framework_scale_ops(const mm_framework *fw, mm_op_cost *ops, int n)
{
    for (int i = 0; i < n; i++) {
        int g = group_of(ops[i].name);
        if (g < 0 || ops[i].kind != MM_OPK_MEM)
            continue;
        ops[i].bytes *= fw->group[g].traffic;
        ops[i].jit = fw->group[g].jit;
        if (ops[i].bwd_exact)
            ops[i].bwd_bytes *= fw->group[g].traffic;
        if (fw->group[g].bwd_traffic > 0) { /* counted from the kernels' code */
            ops[i].bwd_exact = true;
            ops[i].bwd_bytes = fw->group[g].bwd_traffic * ops[i].bytes;
        }
    }
}

static int add_mem(mm_op_cost *ops, int n, int cap, const char *name, double bytes)
{
    if (n >= cap)
        return -1;
    ops[n] = (mm_op_cost){.name = name, .kind = MM_OPK_MEM, .bytes = bytes, .pass = MM_OP_F};
    return n + 1;
}

int mm_framework_layer_extras(const mm_framework *fw, const mm_llm *m, double tokens, double tn, int tp,
                              bool unfused, int dtype_bytes, mm_op_cost *ops, int n, int cap)
{
    double e = dtype_bytes, t = tp > 0 ? tp : 1, h = (double)m->hidden;
    double q = (double)(m->heads * m->head_dim) / t, kv = (double)(m->kv_heads * m->head_dim) / t;
    /* Megatron's legacy ColumnParallelLinear: output = matmul + bias, a
     * separate add that reads and writes the QKV output */
    if (n >= 0 && fw->qkv_bias_separate && m->qkv_bias)
        n = add_mem(ops, n, cap, "qkv_bias", 2.0 * tokens * (q + 2.0 * kv) * e);
    /* its backward: the add passes the gradient through (no kernel) and
     * LinearWithGradAccumulationAndAsyncCommunication.backward's
     * grad_output.sum(dim=0) reads it once for the bias gradient
     * (megatron/core/tensor_parallel/layers.py, Zero Bubble 3a91d0c8) */
    if (n > 0 && fw->qkv_bias_separate && m->qkv_bias)
        ops[n - 1].bwd_exact = true, ops[n - 1].bwd_bytes = 0.5 * ops[n - 1].bytes;
    /* rearrange(...).contiguous() of q, k, v into the kernel's layout and of
     * its output back: each reads and writes one tensor of that width */
    int copies = unfused ? fw->layout_copies_unfused : fw->layout_copies_fused;
    if (n >= 0 && copies > 0) {
        double width = copies >= 4 ? (q + 2.0 * kv) + q * (copies - 3) : q * copies;
        n = add_mem(ops, n, cap, "attn_layout", 2.0 * tokens * width * e);
        /* split_qkv: the copies' backward is the identity (contiguous())
         * and a view (permute, rearrange), and the next kernel reads the
         * strided gradient in place; q, k and v are torch.split views of
         * the fused QKV output, so autograd concatenates their gradients
         * (SplitWithSizesBackward: read and write the QKV width) */
        if (n > 0 && fw->split_qkv)
            ops[n - 1].bwd_exact = true, ops[n - 1].bwd_bytes = 2.0 * tokens * (q + 2.0 * kv) * e;
    }
    /* dropout on both residual branches, fused into bias-dropout-add: the
     * kernel also writes a 1-byte mask per element (read again backward) */
    if (n >= 0 && fw->hidden_dropout > 0)
        n = add_mem(ops, n, cap, "dropout_mask", 2.0 * tn * h);
    /* backward reads each mask once (the dropout's gradient is g * mask *
     * scale, in bias_dropout_add's autodiff): the forward's bytes, not twice */
    if (n > 0 && fw->hidden_dropout > 0)
        ops[n - 1].bwd_exact = true, ops[n - 1].bwd_bytes = ops[n - 1].bytes;
    /* the mask is written and read by the bias-dropout-add kernels
     * themselves, at their rate */
    if (n > 0 && fw->hidden_dropout > 0)
        ops[n - 1].jit = fw->group[MM_FW_RESIDUAL].jit;
    return n;
}

int mm_framework_attn_unfused(const mm_op_cost *attn, int dtype_bytes, mm_op_cost *out, int cap)
{
    if (cap < 4 || attn->kind != MM_OPK_ATTN || dtype_bytes < 1)
        return -1;
    double e = dtype_bytes, B = attn->batch, sq = attn->m, sk = attn->n, d = attn->k;
    double scores = B * sq * sk;
    mm_op_cost base = {.pass = attn->pass};
    out[0] = base;
    out[0].name = "attn_score";
    out[0].kind = MM_OPK_GEMM;
    out[0].weightless = true;
    out[0].m = sq, out[0].n = sk, out[0].k = d, out[0].batch = B;
    out[0].flops = 2 * scores * d;
    out[0].bytes = B * (sq * d + sk * d) * e + scores * e;
    out[1] = base;
    /* scale + causal mask + softmax, one fused kernel (Megatron's
     * scaled_upper_triang_masked_softmax, megatron/fused_kernels; apex
     * csrc/megatron/scaled_upper_triang_masked_softmax.h): forward reads
     * the scores and writes the probabilities; backward reads the saved
     * probabilities and the output gradient and writes the input gradient
     * in place.  Causal (sq = sk), row r's warp loads only its first r + 1
     * elements (`element_index < local_seq`, in both kernels) and writes
     * the whole row, the masked part as zeros: forward half a pass read
     * and one written, backward two half passes read and one written.
     * Without the causal mask (the padding-mask kernel) every element is
     * read: 2 and 3 passes. */
    double rd = attn->causal && sq == sk ? 0.5 * (1.0 + 1.0 / sk) : 1.0;
    out[1].name = "attn_softmax";
    out[1].kind = MM_OPK_MEM;
    out[1].bytes = (rd + 1) * scores * e;
    out[1].bwd_exact = true;
    out[1].bwd_bytes = (2 * rd + 1) * scores * e;
    /* torch native_dropout: reads, writes and a one-byte mask;
     * native_dropout_backward reads the gradient and the mask and writes
     * the gradient: the forward's bytes again */
    out[2] = base;
    out[2].name = "attn_dropout";
    out[2].kind = MM_OPK_MEM;
    out[2].bytes = scores * (2 * e + 1);
    out[2].draws = scores;
    out[2].bwd_exact = true;
    out[2].bwd_bytes = out[2].bytes;
    out[3] = base;
    out[3].name = "attn_value";
    out[3].kind = MM_OPK_GEMM;
    out[3].weightless = true;
    out[3].m = sq, out[3].n = d, out[3].k = sk, out[3].batch = B;
    out[3].flops = 2 * scores * d;
    out[3].bytes = scores * e + B * (sk * d + sq * d) * e;
    return 4;
}

int mm_framework_attn_unfused_eager(const mm_op_cost *attn, int dtype_bytes, mm_op_cost *out, int cap)
{
    mm_op_cost core[4]; /* score GEMM, softmax, dropout, value GEMM */
    if (cap < 6 || mm_framework_attn_unfused(attn, dtype_bytes, core, 4) != 4)
        return -1;
    double e = dtype_bytes, B = attn->batch, sq = attn->m, sk = attn->n, d = attn->k;
    mm_op_cost base = {.pass = attn->pass, .kind = MM_OPK_MEM, .bwd_exact = true};
    /* k * softmax_scale before the score einsum: read and write k; its
     * backward scales the gradient the same way */
    out[0] = base;
    out[0].name = "attn_kscale";
    out[0].bytes = 2 * B * sk * d * e;
    out[0].bwd_bytes = out[0].bytes;
    out[1] = core[0];
    /* scores + causal_mask: the (s, s) mask built each call in fp32
     * (torch.full writes 4 bytes, torch.triu reads and writes 8,
     * .to(fp16) reads 4 and writes 2), then the add reads the scores and
     * the mask broadcast over batch and heads (counted from HBM at every
     * use: an upper bound where the mask fits in L2) and writes the sum;
     * the add's backward passes the gradient through (no kernel) */
    out[2] = base;
    out[2].name = "attn_mask";
    out[2].bytes = 3 * B * sq * sk * e + sq * sk * 18;
    out[2].bwd_bytes = 0;
    /* torch.softmax (dim -1, 16-bit out) reads the scores and writes the
     * probabilities; _softmax_backward_data reads the output and its
     * gradient and writes the input gradient, every element (the mask
     * was added above): 2 and 3 passes.  Dropout and the value einsum as
     * Megatron's core. */
    out[3] = core[1];
    out[3].bytes = 2 * B * sq * sk * e;
    out[3].bwd_bytes = 3 * B * sq * sk * e;
    out[4] = core[2];
    out[5] = core[3];
    return 6;
}
