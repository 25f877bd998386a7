/* fp8.c - Transformer Engine's FP8 kernels and FP8-LM's byte counts
 * (fp8.h).  Every byte count below is read from the kernels' code at the
 * commits fp8.h names; nothing is fitted to an iteration time.
 * Not for: kernel times (sim/hw), scenario keys (sim/scenario). */
#include "model/fp8.h"

#include <math.h>
#include <string.h>

const char *const mm_fp8_recipe_names[] = {"delayed", "current", "mxfp8", "blockwise", NULL};

double mm_fp8_scale_bytes(mm_fp8_recipe r, double elems)
{
    switch (r) {
    case MM_FP8_MXFP8: return elems / 32.0;       /* E8M0 per 32 (MXFP8BlockScaling) */
    case MM_FP8_BLOCKWISE: return elems * 4.0 / 128.0; /* fp32 per 1x128 block */
    default: return 0.0;                          /* one fp32 per tensor */
    }
}

double mm_fp8_tensor_bytes(mm_fp8_recipe r, double elems, int dirs)
{
    return dirs * (elems + mm_fp8_scale_bytes(r, elems));
}

double mm_fp8_quantize_bytes(mm_fp8_recipe r, double elems, int dirs)
{
    double amax = r == MM_FP8_CURRENT ? 2.0 * elems : 0.0;
    return amax + 2.0 * elems + mm_fp8_tensor_bytes(r, elems, dirs);
}

bool mm_fp8_gemm_op(const mm_op_cost *o)
{
    return o->kind == MM_OPK_GEMM && !o->weightless && o->name && strcmp(o->name, "lm_head") &&
           strcmp(o->name, "router");
}

static bool is_block_norm(const mm_op_cost *o)
{
    return o->kind == MM_OPK_MEM && o->name && !strncmp(o->name, "norm_", 5);
}

/* A memory-bound op of `fwd` forward bytes and exactly `bwd` backward
 * bytes (0: none). */
static mm_op_cost mem_op(const char *name, double fwd, double bwd)
{
    return (mm_op_cost){.name = name, .kind = MM_OPK_MEM, .bytes = fwd, .pass = MM_OP_F, .bwd_exact = true,
                        .bwd_bytes = bwd};
}

/* The kernels of one FP8 GEMM g (its input after op prev, may be NULL) into
 * out[0..2); prev is adjusted when the norm writes FP8 itself.  The norm
 * produces norm_frac of the GEMM's input rows on this rank (1/tp under
 * sequence parallelism: the rest arrive by the all-gather). */
static int gemm_kernels(mm_fp8_recipe r, double norm_frac, mm_op_cost *prev, mm_op_cost *g, mm_op_cost *out)
{
    double in = g->m * g->k * g->batch, dout = g->m * g->n * g->batch;
    int k = 0;
    if (prev && is_block_norm(prev) && r == MM_FP8_DELAYED) {
        /* the norm writes 1-byte values instead of 2 (its backward keeps
         * its own bytes); the FP8 transpose reads and writes 1 byte, of
         * the gathered input under sequence parallelism (TE gathers the
         * row-wise FP8 and transposes it in the backward: layernorm_linear.py
         * ln_out_needs_gather) */
        double bwd = prev->bwd_exact ? prev->bwd_bytes : 2.0 * prev->bytes;
        prev->bytes -= in * norm_frac;
        prev->bwd_exact = true;
        prev->bwd_bytes = bwd;
        out[k++] = mem_op("fp8_transpose", mm_fp8_tensor_bytes(r, in, 2), 0.0);
    } else {
        out[k++] = mem_op("fp8_cast_input", mm_fp8_quantize_bytes(r, in, 2), 0.0);
    }
    /* output gradient: cast-transpose to E5M2 in the backward */
    out[k++] = mem_op("fp8_cast_grad", 0.0, mm_fp8_quantize_bytes(r, dout, 2));
    /* the GEMM reads 1-byte operands and writes 16 bits */
    g->bytes = g->batch * (g->m * g->k + g->k * g->n) + 2.0 * dout;
    /* a grouped GEMM's input and output gradient are quantized expert by
     * expert (GroupedLinear: tex.split_quantize over m_splits) */
    if (g->groups > 0)
        for (int i = 0; i < k; i++)
            out[i].splits = (int)g->batch;
    return k;
}

/* Whether every expert of grouped GEMM g gets a row count FP8 GEMMs take
 * as is: a multiple of 16 (MXFP8: 32), Transformer Engine's Fp8Padding
 * align_size (pytorch/module/fp8_padding.py at v2.8).  A bin's mean rows
 * that are not such a whole number stand for experts that are not. */
static bool rows_aligned(mm_fp8_recipe r, const mm_op_cost *g)
{
    double a = r == MM_FP8_MXFP8 ? 32.0 : 16.0;
    for (int i = 0; i < g->groups && i < MM_MOE_BINS; i++)
        if (g->group_n[i] > 0 && fmod(g->group_m[i], a) != 0.0)
            return false;
    return true;
}

/* Megatron-Core's TEGroupedMLP under FP8 pads each expert's rows to the
 * alignment before the first grouped GEMM (Fp8Padding: the hidden states
 * and the probabilities) and unpads the output after the second
 * (Fp8Unpadding; core/transformer/moe/experts.py at core_v0.15.0); TE
 * copies only when some expert's rows are not aligned (fp8_padding.py:
 * m_splits == padded_m_splits returns the input), one
 * fused_multi_row_padding kernel each way, its backward the reverse
 * copy.  A copy reads and writes the 16-bit rows. */
static int pad_kernels(mm_fp8_recipe r, const mm_op_cost *g, mm_op_cost *out)
{
    if (g->groups <= 0 || !g->name || rows_aligned(r, g))
        return 0;
    double rows = g->m * g->batch;
    if (!strcmp(g->name, "expert_fc1")) {
        out[0] = mem_op("fp8_pad", 4.0 * rows * g->k, 4.0 * rows * g->k);
        out[1] = mem_op("fp8_pad_probs", 8.0 * rows, 8.0 * rows); /* fp32 probabilities */
        return 2;
    }
    if (!strcmp(g->name, "expert_fc2")) {
        out[0] = mem_op("fp8_unpad", 4.0 * rows * g->n, 4.0 * rows * g->n);
        return 1;
    }
    return 0;
}

int mm_fp8_rewrite_ops(mm_fp8_recipe r, double norm_frac, mm_op_cost *ops, int n, int cap)
{
    mm_op_cost extra[2 * MM_LLM_MAX_OPS];
    int ne = 0;
    for (int i = 0; i < n && ne + 4 <= (int)(sizeof extra / sizeof *extra); i++) {
        if (!mm_fp8_gemm_op(&ops[i]))
            continue;
        ne += pad_kernels(r, &ops[i], extra + ne);
        ne += gemm_kernels(r, norm_frac > 0 && norm_frac < 1 ? norm_frac : 1.0, i > 0 ? &ops[i - 1] : NULL, &ops[i],
                          extra + ne);
    }
    if (n + ne > cap)
        return -1;
    memcpy(ops + n, extra, (size_t)ne * sizeof *extra);
    return n + ne;
}

/* The FP8 GEMMs of one block of m: their count into *gemms, their weight
 * parameters returned. */
static double layer_gemms(const mm_llm *m, int *gemms)
{
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops(m, 1.0, 1.0, 1, false, 2, ops, MM_LLM_MAX_OPS);
    double p = 0;
    *gemms = 0;
    for (int i = 0; i < n; i++)
        if (mm_fp8_gemm_op(&ops[i])) {
            p += ops[i].n * ops[i].k * ops[i].batch;
            (*gemms)++;
        }
    return p;
}

double mm_fp8_layer_weight_params(const mm_llm *m)
{
    int g;
    return layer_gemms(m, &g);
}

int mm_fp8_layer_gemms(const mm_llm *m)
{
    int g;
    layer_gemms(m, &g);
    return g;
}

double mm_fp8_amax_buffer_bytes(int gemms, bool bwd)
{
    return gemms * (bwd ? 2.0 : 3.0) * 4.0;
}

double mm_fp8_amax_update_bytes(int gemms, bool bwd)
{
    return gemms * (bwd ? 2.0 : 3.0) * (MM_FP8_AMAX_HISTORY * 4.0 * 2.0 + 4.0 * 2.0);
}

bool mm_fp8_recipe_supported(mm_fp8_recipe r, double cc, const char **why)
{
    *why = "";
    if (r == MM_FP8_MXFP8 && !(cc >= 10.0 && cc < 12.0)) {
        *why = "MXFP8 needs compute capability 10.x (Blackwell; TE _compute_mxfp8_support)";
        return false;
    }
    if (r == MM_FP8_BLOCKWISE && !(cc >= 9.0)) {
        *why = "FP8 block scaling needs compute capability 9.0 or higher (TE _compute_fp8_block_scaling_support)";
        return false;
    }
    return true;
}

double mm_fp8_weight_bytes(const mm_fp8_cfg *c)
{
    double fp8 = mm_fp8_tensor_bytes(c->recipe, 1.0, 2);
    return c->param_gather ? fp8 : 2.0 + fp8;
}

double mm_fp8_grad_bytes(const mm_fp8_cfg *c, double grad_default)
{
    return c->grads ? 1.0 : grad_default;
}

double mm_fp8_grad_accum_bytes(const mm_fp8_cfg *c, double grad_default)
{
    return c->on && c->grads ? 2.0 * (1.0 + 2.0) + 1.0 : 2.0 * grad_default + 2.0;
}

double mm_fp8_optim_bytes(const mm_fp8_cfg *c)
{
    return c->optimizer ? 2.0 + 1.0 + 2.0 : 4.0 + 4.0 + 4.0;
}

double mm_fp8_gather_bytes(const mm_fp8_cfg *c)
{
    return c->param_gather ? 1.0 : 2.0;
}

double mm_fp8_step_bytes(const mm_fp8_cfg *c, double grad_default)
{
    double states = mm_fp8_optim_bytes(c);
    return states + mm_fp8_grad_bytes(c, grad_default) + states + (c->param_gather ? 1.0 : 2.0);
}

double mm_fp8_weight_cast_bytes(const mm_fp8_cfg *c, double params)
{
    if (!c->on)
        return 0.0;
    if (c->param_gather) /* the transpose of the gathered FP8 weight: read 1, write 1 */
        return mm_fp8_tensor_bytes(c->recipe, params, 2);
    return mm_fp8_quantize_bytes(c->recipe, params, 2);
}

double mm_fp8_grad_requant_bytes(const mm_fp8_cfg *c, double params)
{
    if (!c->on || !c->grads || !(params > 0))
        return 0.0;
    return params * ((1.0 + 4.0) + (4.0 + 1.0) + (1.0 + 1.0));
}

double mm_fp8_saved_input_bytes(const mm_fp8_cfg *c)
{
    return c && c->on ? mm_fp8_tensor_bytes(c->recipe, 1.0, 1) : 2.0;
}
