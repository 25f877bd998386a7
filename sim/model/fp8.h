/* fp8.h - FP8 training as Transformer Engine runs it (NVIDIA/
 * TransformerEngine @ d0067d0da6cb01811b8072a7d304f0e00344ce2b), and the
 * 8-bit model states of FP8-LM (Peng et al., arXiv 2310.18313; Azure/
 * MS-AMP @ 9746ea85289f8e6233646e73ace35f730d1245d5): which GEMMs run in
 * FP8, the quantize / cast-transpose / amax kernels each FP8 GEMM adds and
 * the bytes they move, and the bytes of every tensor FP8 changes.
 *
 * Recipes (transformer_engine/common/recipe/__init__.py):
 *   delayed   DelayedScaling: per-tensor scale from an amax history; the
 *             amax is a by-product of the cast kernel; E4M3 forward, E5M2
 *             gradients (Format.HYBRID, the default).
 *   current   Float8CurrentScaling: per-tensor scale from the tensor's own
 *             amax, so an amax pass precedes every cast.
 *   mxfp8     MXFP8BlockScaling: a 1-byte E8M0 scale per 32 values along
 *             each direction; compute capability 10.0-11.x only
 *             (pytorch/quantization.py _compute_mxfp8_support).
 *   blockwise Float8BlockScaling: fp32 scales per 1x128 (activations,
 *             gradients) and 128x128 (weights) blocks; compute capability
 *             9.0 and up (_compute_fp8_block_scaling_support).
 * Every recipe runs fprop, dgrad and wgrad of the transformer layers'
 * Linear modules in FP8 (linear.py: the three GEMMs take the quantized
 * input, weight and grad-output); attention (fp8_dpa False by default) and
 * Megatron's output layer (a plain ColumnParallelLinear) and MoE router
 * stay BF16.
 * Not for: timing (the cost bridge times the kernels listed here), or
 * whether a GPU has an FP8 peak (the scenario check). */
#ifndef MM_FP8_H
#define MM_FP8_H

#include <stdbool.h>

#include "model/llm.h"

typedef enum {
    MM_FP8_DELAYED,
    MM_FP8_CURRENT,
    MM_FP8_MXFP8,
    MM_FP8_BLOCKWISE,
    MM_FP8_RECIPES
} mm_fp8_recipe;
extern const char *const mm_fp8_recipe_names[]; /* "delayed", "current", "mxfp8", "blockwise" */

/* Megatron-LM's --fp8-amax-history-len default (megatron/training/
 * arguments.py: default=1); TE's own DelayedScaling default is 1024. */
#define MM_FP8_AMAX_HISTORY 1

/* Bytes of the scales stored beside `elems` FP8 values quantized along one
 * direction: mxfp8 one E8M0 byte per 32, blockwise one fp32 per 128 (1x128
 * blocks; weights' 128x128 blocks are negligible and counted the same);
 * per-tensor recipes a single fp32 (counted 0). */
double mm_fp8_scale_bytes(mm_fp8_recipe r, double elems);

/* Bytes of one FP8 copy of a tensor of `elems` values with its scales, in
 * `dirs` directions (1: row-wise only; 2: row-wise and the column-wise
 * copy Hopper's TN-only FP8 GEMM needs for the transposed operand, or
 * MXFP8's column-wise scaling). */
double mm_fp8_tensor_bytes(mm_fp8_recipe r, double elems, int dirs);

/* HBM bytes of quantizing a 16-bit tensor of `elems` values into `dirs`
 * directions: the cast(-transpose) kernel reads 2 B and writes the FP8
 * copies (quantize_transpose kernels of common/transpose and
 * common/util/cast_kernels.cuh), plus current scaling's amax pass over
 * the input first (Float8CurrentScalingQuantizer::quantize: compute_amax,
 * then the cast): 2 B more. */
double mm_fp8_quantize_bytes(mm_fp8_recipe r, double elems, int dirs);

/* Whether op `o` of a layer list runs in FP8: a GEMM with a weight, not the
 * LM head or the MoE router. */
bool mm_fp8_gemm_op(const mm_op_cost *o);

/* Rewrites a forward op list ops[0..n) (capacity cap) as Transformer
 * Engine runs it in FP8 with recipe r: every FP8 GEMM reads 1-byte
 * operands; its input is quantized before it (LayerNormLinear: a GEMM
 * right after a `norm_*` op takes the norm's output, which under delayed
 * scaling the norm kernel writes in FP8 itself, followed by the FP8
 * transpose, layernorm/ln_api.cpp; the other recipes norm in 16 bits and
 * quantize, pytorch/csrc/extensions/normalization.cpp), its output
 * gradient is quantized in the backward (cast-transpose, E5M2).  The
 * weight casts are per step (mm_fp8_weight_cast_bytes) and delayed
 * scaling's amax update per autocast region (mm_fp8_amax_*), not here.
 * norm_frac: the share of a LayerNormLinear's input rows its norm makes on
 * this rank (1/tp under sequence parallelism; outside (0, 1): 1).
 * Returns the new count, or -1 when cap is too small. */
int mm_fp8_rewrite_ops(mm_fp8_recipe r, double norm_frac, mm_op_cost *ops, int n, int cap);

/* Parameters of one (mean) block of `m` that FP8 GEMMs use as weights (the
 * block's Linear weights, experts included; not norms, biases or the
 * router), before tensor parallelism. */
double mm_fp8_layer_weight_params(const mm_llm *m);

/* The FP8 GEMMs of one block of m (mm_fp8_gemm_op). */
int mm_fp8_layer_gemms(const mm_llm *m);

/* Delayed scaling, per autocast region and pass (Megatron-Core wraps a
 * TransformerBlock's pass in one fp8_autocast under delayed scaling:
 * transformer_block.py use_outer_fp8_context; TE quantization.py
 * reduce_and_update_fp8_tensors at the region's exit): the fp32 amaxes of
 * its `gemms` FP8 GEMMs all-reduced (max) over the amax-reduction group
 * (3 tensors per GEMM forward: input, weight, output; 2 backward: grad
 * output, grad input), and the bytes of the fused kernel that then updates
 * their histories (MM_FP8_AMAX_HISTORY fp32 each) and scales, read and
 * written (fused_amax_and_scale_update_after_reduction). */
double mm_fp8_amax_buffer_bytes(int gemms, bool bwd);
double mm_fp8_amax_update_bytes(int gemms, bool bwd);

/* Whether recipe r runs on a GPU of compute capability cc (0: not stated,
 * refused for the block-scaled recipes).  *why receives the reason. */
bool mm_fp8_recipe_supported(mm_fp8_recipe r, double cc, const char **why);

/* FP8 options of a run and the bytes per FP8-weight parameter they imply
 * (memory and DP traffic; non-FP8 parameters keep the framework's). */
typedef struct mm_fp8_cfg {
    bool on;             /* train.precision fp8 */
    mm_fp8_recipe recipe;
    bool param_gather;   /* Megatron --fp8-param-gather: FP8 primary weights */
    bool grads;          /* FP8-LM O1: FP8 weight gradients, reduced in 8 bits */
    bool optimizer;      /* FP8-LM O2: FP8 first moment, FP16 second moment and master */
} mm_fp8_cfg;

/* Weight bytes per FP8-weight parameter: the 16-bit parameter and TE's
 * cached FP8 copy in both directions (module/base.py's FP8 workspace,
 * refreshed on a micro-batch's first forward only), or, with FP8 primary
 * weights, the FP8 parameter and its transpose alone. */
double mm_fp8_weight_bytes(const mm_fp8_cfg *c);
/* Gradient buffer bytes per FP8-weight parameter (grad_default: the
 * framework's); also the element the DP reduce moves. */
double mm_fp8_grad_bytes(const mm_fp8_cfg *c, double grad_default);
/* Bytes per FP8 weight of one unfused gradient accumulation (Megatron-LM
 * --no-gradient-accumulation-fusion: the wgrad GEMM writes a 16-bit
 * gradient, then a kernel adds it to the main gradient): grad_default's
 * main gradient read and written and the 16-bit gradient read
 * (2 x grad_default + 2); under c->grads MS-AMP's add_to_fp8 (Azure/MS-AMP
 * msamp/operators/arithmetic/vectorized_pointwise.h add_to_fp8_kernel,
 * called per weight from msamp/megatron/distributed.py's backward hook):
 * one pass reads the FP8 main gradient and the 16-bit gradient for the
 * sum's amax, a second reads them again and writes the FP8 sum
 * (2 x (1 + 2) + 1 = 7). */
double mm_fp8_grad_accum_bytes(const mm_fp8_cfg *c, double grad_default);
/* Optimizer state bytes per FP8-weight parameter before ZeRO sharding:
 * Megatron's fp32 master, momentum and variance (12), or FP8-LM's FP16
 * master, FP8 momentum and FP16 variance (2 + 1 + 2; MS-AMP
 * msamp/megatron/optimizer/distrib_optimizer.py master_weight_qtype
 * kfloat16, msamp/optim/adamw_base.py exp_avg uint8, exp_avg_sq float16). */
double mm_fp8_optim_bytes(const mm_fp8_cfg *c);
/* Bytes the DP parameter all-gather moves per FP8-weight parameter. */
double mm_fp8_gather_bytes(const mm_fp8_cfg *c);
/* Optimizer-step HBM traffic per FP8-weight parameter: read master,
 * moments and gradient, write master, moments and the model weight. */
double mm_fp8_step_bytes(const mm_fp8_cfg *c, double grad_default);
/* HBM bytes of the per-step weight casts of `params` FP8-weight
 * parameters (none with FP8 primary weights: the optimizer writes them). */
double mm_fp8_weight_cast_bytes(const mm_fp8_cfg *c, double params);
/* HBM bytes of MS-AMP's once-a-step re-quantization of `params` local
 * FP8 gradients under c->grads (Azure/MS-AMP @ 9746ea8
 * msamp/megatron/optimizer/distrib_optimizer.py reduce_model_grads):
 * every FP8 weight's gradient scale is all-reduced (MIN) over the DP
 * group, then each gradient whose scale changed (on every rank but the
 * one that held the minimum) is re-cast to the common scale before the
 * FP8 reduce-scatter, g.copy_(g.float().cast(g.qtype, meta=g.meta)) with
 * in-time scaling off: dequantize (read 1, write 4), quantize (read 4,
 * write 1; msamp/common/tensor/cast.py cast_to_fp8, no amax pass), copy
 * (read 1, write 1): 12 B per parameter, over the rank's whole buffer,
 * not its DP shard.  0 without c->grads.  (The MIN all-reduce itself
 * moves 4 B per weight tensor and is not timed.) */
double mm_fp8_grad_requant_bytes(const mm_fp8_cfg *c, double params);
/* Activation bytes of one element of a Linear input saved for the backward
 * (the column-wise FP8 copy and its scales; 2 without FP8). */
double mm_fp8_saved_input_bytes(const mm_fp8_cfg *c);

#endif
