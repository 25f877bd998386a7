/* framework_ops.h - what framework X runs per layer: the kernels of the
 * model's op list under a framework profile, the ops it adds, and the
 * unfused attention cores (framework_ops.c).  The cost bridge times these
 * (cost/fwcost.c).
 * Not for: reading a profile (framework.h) or timing. */
#ifndef MM_FRAMEWORK_OPS_H
#define MM_FRAMEWORK_OPS_H

#include <stdbool.h>

#include "model/framework.h"
#include "model/llm.h"

/* Kernels the framework launches for one op of llm.h's lists, found by its
 * name ("norm_attn", "rope", "act", "residual_mlp", "cross_entropy", ...):
 * the group's count, 1 for anything else. */
int mm_framework_op_kernels(const mm_framework *fw, const char *op_name);

/* The nn.Module calls the framework makes for one op of a forward list: 1
 * for a GEMM with a weight (a Linear), an attention core (the fused kernel,
 * or the first op of an unfused one) and a norm; 0 for the functional
 * rest (activation, residual, rope, copies). */
int mm_framework_op_modules(const char *op_name, int kind, bool weightless);

/* Scales the bytes of every memory-bound op of a list (layer, embedding or
 * head) by its group's traffic, in place. */
void mm_framework_scale_ops(const mm_framework *fw, mm_op_cost *ops, int n);

/* Appends to a layer's forward list ops[0..n) what the framework runs on
 * top of it: the QKV bias kernel, the copies into and out of the attention
 * kernel's layout (`unfused`: the count for an expanded core) and the
 * dropout masks of the residual branches (a 1-byte mask written per
 * element).  `tokens` are the micro-batch's tokens on this rank, `tn` those
 * of the residual region (tokens / tp under sequence parallelism).  Returns
 * the new count, or -1 when cap is too small. */
int mm_framework_layer_extras(const mm_framework *fw, const mm_llm *m, double tokens, double tn, int tp,
                              bool unfused, int dtype_bytes, mm_op_cost *ops, int n, int cap);

/* The attention core as frameworks ran it before fused (flash) kernels,
 * e.g. Megatron-LM in 2021 (Narayanan et al. SC'21; FlashAttention came in
 * 2022): a batched QK^T GEMM writing the b*a*s^2 scores to HBM, one fused
 * scale-mask-softmax kernel, attention dropout, and a batched GEMM with V.
 * Replaces one MM_OPK_ATTN op (its m, n, k, batch) by 4 ops with the same
 * total FLOPs (the two GEMMs weightless); returns 4, or -1 (cap < 4 or not
 * an attention op). */
int mm_framework_attn_unfused(const mm_op_cost *attn, int dtype_bytes, mm_op_cost *out, int cap);

/* The same core as PyTorch eager ops run it (flash-attn's SelfAttention,
 * Dao-AILab/flash-attention flash_attn/modules/mha.py, the FlashAttention
 * papers' baseline): k scaled by 1/sqrt(d), the score einsum, the causal
 * mask built with torch.triu and added to the scores as its own s^2
 * kernel, torch.softmax, dropout and the value einsum.  Returns 6 ops
 * (score GEMM, k scale, mask add, softmax, dropout, value GEMM), or -1
 * (cap < 6 or not an attention op). */
int mm_framework_attn_unfused_eager(const mm_op_cost *attn, int dtype_bytes, mm_op_cost *out, int cap);

#endif
