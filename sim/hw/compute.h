/* compute.h - time of one kernel on one GPU: the roofline of design.md §4,
 *   t = max(FLOPs / (peak x eff(op, shape) x c), bytes / (HBM bw x eff_mem(bytes)))
 *       + launch overhead,
 * where eff comes from the GPU's measured throughput tables (efficiency.h)
 * when the topology file names them, and from its single per-kind factor
 * otherwise (the documented fallback for a GPU without tables), and c is
 * the sustained over the measured SM clock (gpu.sustained_clock_ratio,
 * cluster.h; 1 unless the topology states it).
 * Not for: which kernels an op runs or their FLOPs (sim/model). */
#ifndef MM_COMPUTE_H
#define MM_COMPUTE_H

#include <stdbool.h>

#include "hw/cluster.h"

typedef enum {
    MM_KERNEL_GEMM, /* dense matmul: tensor cores */
    MM_KERNEL_ATTN, /* fused (flash) attention */
    MM_KERNEL_MEM   /* norms, activations, residual adds, optimizer: HBM-bound */
} mm_kernel_kind;

/* Seconds for one kernel with the single-factor roofline; flops may be 0
 * for memory-bound kernels.  A dtype the GPU has no peak for (FP8 on A100)
 * falls back to the BF16 peak, as frameworks do when FP8 is unavailable. */
double mm_compute_time(const mm_gpu_spec *g, mm_dtype dt, mm_kernel_kind kind,
                       double flops, double bytes);

/* One GEMM shape of a grouped GEMM: `count` problems C[m x n] = A[m x k] B[k x n]. */
typedef struct mm_gemm_shape {
    double m, n, k, count;
} mm_gemm_shape;

/* Concurrent streams of Transformer Engine's grouped GEMM (NVIDIA/
 * TransformerEngine commit 312ff1796a781b4e3915637b2036abba89e114e1,
 * transformer_engine/common/include/transformer_engine/multi_streams.h:
 * num_streams = 4): the experts' GEMMs are spread over that many CUDA
 * streams. */
#define MM_GROUPED_GEMM_STREAMS 4

/* A grouped GEMM over `n` shapes (MoE experts, each at the rows it really
 * gets), moving `bytes` in all.  Each problem alone runs at the table's
 * throughput for its own shape (a small m is slow); `streams` of them run
 * at once (1: one after another, Megatron's SequentialMLP), but the whole
 * never beats the single GEMM of the same total work at its mean shape
 * filling the GPU (mm_gemm_time's batched rule), nor its busiest problem,
 * nor the bytes at HBM bandwidth.  One launch. */
double mm_grouped_gemm_time(const mm_gpu_spec *g, mm_dtype dt, const mm_gemm_shape *s, int n, int streams,
                            double bytes);

/* `batch` independent GEMMs C[m x n] = A[m x k] B[k x n], moving `bytes` of
 * HBM traffic in all.  Table throughput (or peak x gemm_efficiency), never
 * above the dtype's peak; plus one launch. */
double mm_gemm_time(const mm_gpu_spec *g, mm_dtype dt, double m, double n, double k,
                    double batch, double bytes);

/* Flash attention with `flops` dense forward FLOPs (4 s_q s_k d per head and
 * sequence, no causal halving) over sequences of `seqlen` (geometric mean of
 * query and key lengths; the mean sample length for packed varlen batches),
 * head dim `head_dim`.  Causal kernels skip half the tiles; backward does
 * 2.5x the forward FLOPs (the FlashAttention papers' accounting). */
double mm_attn_time(const mm_gpu_spec *g, mm_dtype dt, double flops, double seqlen,
                    double head_dim, bool causal, mm_attn_pass pass, double bytes);

/* Same with the table of one attention implementation (efficiency.h:
 * mm_kernel_attn_table); a GPU without that table uses its single
 * attention_efficiency factor.  mm_attn_time is impl MM_ATTN_IMPL_FLASH. */
double mm_attn_time_impl(const mm_gpu_spec *g, mm_attn_impl impl, mm_dtype dt, double flops, double seqlen,
                         double head_dim, bool causal, mm_attn_pass pass, double bytes);

/* A memory-bound kernel moving `bytes`. */
double mm_mem_time(const mm_gpu_spec *g, double bytes);

/* Seconds of a dropout kernel that moves `bytes` and draws `draws` mask
 * elements: the slower of its memory time and the draws at the GPU's
 * dropout_elems_s (its bytes alone where the file states no rate). */
double mm_dropout_time(const mm_gpu_spec *g, double bytes, double draws);

/* A TorchScript-fused elementwise kernel moving `bytes`: at the GPU's
 * jit_mem_eff of HBM peak where the topology states it, else as
 * mm_mem_time. */
double mm_jit_mem_time(const mm_gpu_spec *g, double bytes);

/* Achieved fraction of HBM peak for a kernel of that size (table or factor). */
double mm_mem_eff(const mm_gpu_spec *g, double bytes);

#endif
