/* compute.h - time of one kernel on one GPU: the roofline of design.md §4,
 *   t = max(FLOPs / (peak x eff_kind), bytes / (HBM bw x eff_mem)) + overhead,
 * with one efficiency per kernel kind taken from public microbenchmarks (see
 * the topology files).  Not for: shape-dependent efficiency tables (the
 * model-costs issue replaces the single factors with interpolated CSVs
 * behind this same interface). */
#ifndef MM_COMPUTE_H
#define MM_COMPUTE_H

#include "hw/cluster.h"

typedef enum {
    MM_KERNEL_GEMM, /* dense matmul: tensor cores */
    MM_KERNEL_ATTN, /* fused (flash) attention */
    MM_KERNEL_MEM   /* norms, activations, residual adds, optimizer: HBM-bound */
} mm_kernel_kind;

/* Seconds for one kernel; flops may be 0 for memory-bound kernels.  A dtype
 * the GPU has no peak for (FP8 on A100) falls back to the BF16 peak, as
 * frameworks do when FP8 is unavailable. */
double mm_compute_time(const mm_gpu_spec *g, mm_dtype dt, mm_kernel_kind kind,
                       double flops, double bytes);

#endif
