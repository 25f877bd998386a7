/* efficiency.h - measured kernel throughput tables of one GPU, read from CSV
 * files, and their interpolation.
 *
 * Three tables, each a CSV with a header row and a `source` column on every
 * row (the topology file names them under gpu.kernels):
 *   gemm:      m,n,k,tflops,source       achieved TFLOP/s of C[m x n] = A[m x k] B[k x n]
 *                                        (16-bit inputs); a full grid over the
 *                                        distinct m, n and k values it lists
 *   attention: seqlen,head_dim,causal,pass,tflops,source
 *                                        flash-attention TFLOP/s, FLOPs counted as
 *                                        the FlashAttention papers do (causal
 *                                        halved, backward 2.5x forward); pass is
 *                                        fwd, bwd or fwd+bwd (one figure for both)
 *   memory:    bytes,efficiency,source   achieved / peak HBM bandwidth of a fused
 *                                        memory-bound kernel moving `bytes`
 * Columns may come in any order; extra columns are ignored.
 *
 * Interpolation (GSL, linear, so values between table points stay between
 * their neighbours and the table points are reproduced exactly):
 *   gemm:      trilinear in (log2 m, log2 n, log2 k) on the grid (gsl_interp_bsearch
 *              finds the cell).  Above the largest value of an axis the
 *              throughput of the largest is kept (large GEMMs saturate); below
 *              the smallest m or n, throughput scales with the dimension (a
 *              kernel that small is latency-bound: its time stays that of
 *              the smallest measured shape); below the smallest k a tile
 *              pays its fixed cost (mm_short_k_factor).
 *   attention: gsl_interp linear in log2(seqlen) along each (head_dim, causal,
 *              pass) curve, then linear in log2(head_dim) between the two
 *              nearest head dims (clamped outside).  Above the longest sequence
 *              the last value is kept; below the shortest the first segment's
 *              slope is extrapolated, floored at the latency bound
 *              T(s0) * s/s0.  A pass without its own curve uses the fwd+bwd
 *              curve; a causal flag without curves uses the other flag's.
 *   memory:    gsl_interp linear in log2(bytes), clamped at both ends.
 * Not for: the kernel-time formula (compute.h), nor deciding which kernels an
 * op runs (the model layer lists ops). */
#ifndef MM_EFFICIENCY_H
#define MM_EFFICIENCY_H

#include <stdbool.h>

#include "util/err.h"

#define MM_GEMM_AXIS_MAX 16   /* distinct values per axis of a GEMM grid */
#define MM_ATTN_CURVES_MAX 24 /* (head_dim, causal, pass) combinations */
#define MM_ATTN_POINTS_MAX 32 /* sequence lengths per curve */
#define MM_MEM_POINTS_MAX 64

typedef enum mm_attn_pass { MM_ATTN_FWD = 0, MM_ATTN_BWD = 1, MM_ATTN_FWDBWD = 2 } mm_attn_pass;

/* Which kernel runs the attention core.  FLASH is the topology's generic
 * `attention` table (the best flash kernel it cites for that GPU); the
 * others name one implementation, each with its own optional table
 * (gpu.kernels.flash1 / flash2 / flash3 / cudnn); UNFUSED and UNFUSED_EAGER
 * have no table: the cost bridge expands them into batched GEMMs and
 * softmax kernels (model/framework_ops.h, mm_framework_attn_unfused). */
typedef enum mm_attn_impl {
    MM_ATTN_IMPL_FLASH = 0,
    MM_ATTN_IMPL_FLASH1, /* FlashAttention (Dao et al. 2022) */
    MM_ATTN_IMPL_FLASH2, /* FlashAttention-2 (Dao 2023) */
    MM_ATTN_IMPL_FLASH3, /* FlashAttention-3 (Shah et al. 2024), Hopper only */
    MM_ATTN_IMPL_CUDNN,  /* cuDNN fused attention (Transformer Engine's FusedAttention) */
    MM_ATTN_IMPL_UNFUSED,       /* batched GEMMs, Megatron's fused scale-mask-softmax, dropout */
    MM_ATTN_IMPL_UNFUSED_EAGER, /* PyTorch eager ops: GEMMs, a causal-mask add, softmax, dropout */
    MM_ATTN_IMPL_COUNT
} mm_attn_impl;

/* "flash", "flash1", "flash2", "flash3", "cudnn", "unfused", "unfused-eager";
 * NULL-terminated. */
extern const char *const mm_attn_impl_names[];
/* Whether `impl` is expanded into separate kernels (no attention table). */
bool mm_attn_impl_unfused(mm_attn_impl impl);
#define MM_ATTN_NAMED_TABLES 4 /* flash1 .. cudnn */

/* The tables own their values, allocated to the size the file gives
 * (the GEMM grid nm x nn x nk, the attention table's curves), and are
 * freed by their _free function (a cluster's by mm_cluster_free).  A
 * struct copy would share them: tables are not copied, only pointed to. */
typedef struct mm_gemm_table {
    int nm, nn, nk;
    double m[MM_GEMM_AXIS_MAX], n[MM_GEMM_AXIS_MAX], k[MM_GEMM_AXIS_MAX]; /* ascending */
    double *tflops; /* owned, nm x nn x nk: cell (im, in, ik) at (im nn + in) nk + ik */
} mm_gemm_table;

typedef struct mm_attn_curve {
    double head_dim;
    bool causal;
    mm_attn_pass pass;
    int n;
    double seq[MM_ATTN_POINTS_MAX]; /* ascending */
    double tflops[MM_ATTN_POINTS_MAX];
} mm_attn_curve;

typedef struct mm_attn_table {
    int n;
    mm_attn_curve *c; /* owned, n curves (at most MM_ATTN_CURVES_MAX) */
} mm_attn_table;

typedef struct mm_mem_table {
    int n;
    double bytes[MM_MEM_POINTS_MAX]; /* ascending */
    double eff[MM_MEM_POINTS_MAX];
} mm_mem_table;

/* A GPU's tables; a table with has_* false is absent and the caller falls
 * back to the topology's single efficiency factor. */
typedef struct mm_kernel_tables {
    bool has_gemm, has_attn, has_mem;
    mm_gemm_table gemm;
    mm_attn_table attn;
    mm_mem_table mem;
    /* What the generic `attention` table measures (gpu.kernels.attention_is;
     * MM_ATTN_IMPL_FLASH when unstated), and one table per named
     * implementation, index impl - MM_ATTN_IMPL_FLASH1. */
    mm_attn_impl attn_is;
    bool has_impl[MM_ATTN_NAMED_TABLES];
    mm_attn_table impl[MM_ATTN_NAMED_TABLES];
} mm_kernel_tables;

/* The table for one attention implementation: its own table, else the
 * generic one when attention_is names it, is unstated, or impl is FLASH;
 * NULL when the GPU has none for it (and always for UNFUSED). */
const mm_attn_table *mm_kernel_attn_table(const mm_kernel_tables *k, mm_attn_impl impl);

/* Loaders, into a table that holds nothing (zeroed or freed: it is
 * overwritten).  A missing file, a missing column, a non-numeric or
 * non-positive value, a row without a source, a repeated point or a GEMM
 * grid with holes give MM_EINPUT naming the file, the line and the column;
 * on any error the table is left empty (nothing to free). */
int mm_gemm_table_load(const char *path, mm_gemm_table *t, mm_err *err);
int mm_attn_table_load(const char *path, mm_attn_table *t, mm_err *err);
int mm_mem_table_load(const char *path, mm_mem_table *t, mm_err *err);

/* Free what a loader allocated and leave the table empty; NULL and empty
 * tables are fine.  mm_kernel_tables_free frees every table of a GPU. */
void mm_gemm_table_free(mm_gemm_table *t);
void mm_attn_table_free(mm_attn_table *t);
void mm_kernel_tables_free(mm_kernel_tables *k);

/* Interpolated TFLOP/s of one GEMM (16-bit) of that shape. */
double mm_gemm_table_tflops(const mm_gemm_table *t, double m, double n, double k);

/* The throughput factor below table t's shortest k0, at (m, n), against
 * the k0 value: (k / k0) (k0 + c) / (k + c), a tile's fixed cost c (in k)
 * read off the table's first two k at (m, n) (the attention core's head-dim
 * products, k = 64-160, below both tables' 256); 1 at or above k0; k / k0
 * (k0's time) where the table does not rise with k there. */
double mm_short_k_factor(const mm_gemm_table *t, double m, double n, double k);
/* Interpolated TFLOP/s of flash attention (FlashAttention papers' FLOP
 * count); NaN when the table has no curve for the pass at all. */
double mm_attn_table_tflops(const mm_attn_table *t, double seqlen, double head_dim,
                            bool causal, mm_attn_pass pass);
/* Interpolated achieved fraction of peak HBM bandwidth. */
double mm_mem_table_eff(const mm_mem_table *t, double bytes);

#endif
