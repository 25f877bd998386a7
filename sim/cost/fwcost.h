/* fwcost.h - a layer's kernels as a training framework runs them, timed on
 * one GPU, with the breakdown a user holds against an Nsight Systems
 * profile: GEMM, attention and memory-bound time of the forward (F),
 * input-gradient (B) and weight-gradient (W) passes.
 *
 * The op list of a layer comes from the model (llm.h); the framework
 * profile (model/framework.h) rewrites it (unfused attention expanded,
 * memory-bound groups scaled, extra kernels appended) and picks the
 * attention kernel; compute.h times each kernel.  Each pass also counts
 * its kernel launches and the host seconds to issue them (the profile's
 * host section): the executor runs those on the host cursor (exec.h), so
 * short kernels wait for their launch and long ones hide it.
 * Not for: communication (the network model times it in the executed
 * graph), memory, or the pipeline. */
#ifndef MM_FWCOST_H
#define MM_FWCOST_H

#include "hw/cluster.h"
#include "model/fp8.h"
#include "model/framework.h"
#include "model/llm.h"

enum { MM_BK_GEMM, MM_BK_ATTN, MM_BK_MEM, MM_BK_KINDS };
extern const char *const mm_bk_kind_names[]; /* "gemm", "attention", "memory" */
extern const char *const mm_bk_pass_names[]; /* "fwd", "bgrad", "wgrad" */

/* Seconds by pass (mm_op_pass_kind F, B, W) and kernel kind. */
typedef struct mm_pass_breakdown {
    double s[3][MM_BK_KINDS];
    double attn_core_fwd; /* forward time of the attention core alone (what
                             selective recomputation runs again) */
    double launches[3];   /* kernels launched by pass (F, B, W) */
    double host_s[3];     /* host seconds to issue them (no host: 0) */
    double attn_core_launches, attn_core_host_s; /* the core's forward alone */
} mm_pass_breakdown;

/* How one layer is run: the GPU, precision, framework and the attention
 * kernel it resolved to. */
typedef struct mm_fw_ctx {
    const mm_gpu_spec *gpu;
    mm_dtype dt;
    const mm_framework *fw;
    mm_attn_impl attn;
    int dtype_bytes; /* activations between kernels (16-bit) */
    const mm_fw_host *host; /* the host that issues the kernels (NULL: none) */
    /* FP8 (fp8.on when dt is FP8): the recipe's kernels are added to every
     * op list (mm_fp8_rewrite_ops); GEMMs that stay 16-bit (the LM head,
     * the router) and attention run at the BF16 rate */
    mm_fp8_cfg fp8;
    /* the share of a Linear's input rows its norm makes on this rank (1/tp
     * under sequence parallelism; 0: 1), for the FP8 norm output */
    double norm_rows;
} mm_fw_ctx;

/* Sum over the passes of one kind / of one pass. */
double mm_pass_breakdown_pass(const mm_pass_breakdown *b, int pass);
double mm_pass_breakdown_kind(const mm_pass_breakdown *b, int pass, int kind);

/* Adds a's seconds times k to *acc. */
void mm_pass_breakdown_add(mm_pass_breakdown *acc, const mm_pass_breakdown *a, double k);

/* Times a forward op list (each op's B and W passes from mm_op_pass):
 * memory-bound groups scaled by the framework; every pass with work
 * launches the op's kernels (its group's count), each costing the host
 * mm_fw_host_kernel_s. */
mm_pass_breakdown mm_fw_time_ops(const mm_fw_ctx *c, const mm_op_cost *ops, int n);

/* One transformer layer's forward list ops[0..n) (mm_llm_layer_ops*) as the
 * framework runs it: the attention core expanded when the implementation
 * is unfused, the framework's extra kernels appended (tokens on this rank,
 * tn in the residual region), then timed.  Returns 0, or -1 when the list
 * does not fit MM_FW_MAX_OPS. */
#define MM_FW_MAX_OPS (MM_LLM_MAX_OPS + 12)
int mm_fw_time_layer(const mm_fw_ctx *c, const mm_llm *m, const mm_op_cost *ops, int n, double tokens, double tn,
                     int tp, mm_pass_breakdown *out);

/* The weight-gradient work of a (vocab-parallel) embedding table on one
 * rank, absent from the op list because it has no forward counterpart:
 * the dense V/tp x h gradient (embedding_dense_backward zero-fills it and
 * scatters the tokens' gradients into it) accumulated into the fp32 grad
 * buffer: V h / tp x (2 + 2 + 4 + 4) bytes plus tokens x h x 6.  Seconds. */
double mm_fw_embed_wgrad_time(const mm_fw_ctx *c, const mm_llm *m, double tokens, int tp);

#endif
