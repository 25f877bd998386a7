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
    /* context parallelism's ring (mm_fw_ctx.cp_ring > 1): the attention
     * core's seconds in its diagonal step and in one off-diagonal step, F
     * and B passes (mm_fw_cp_ring_steps); the executed graph overlaps each
     * step with the KV exchange of the next (parallel/build_llm.c) */
    double cp_diag[2], cp_off[2];
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
    /* context parallelism's p2p ring degree (train.cp_comm ring; 0 or 1:
     * none): a causal attention core runs as cp_ring steps
     * (mm_fw_cp_ring_steps) */
    int cp_ring;
    /* Transformer Engine's userbuffers TP overlap (train.tp_comm_overlap
     * under sequence parallelism): the TP degree its overlapped GEMMs are
     * split by (mm_fw_ub_chunks); 0 or 1: none */
    int ub_tp;
} mm_fw_ctx;

/* Transformer Engine's default userbuffers overlap methods (NVIDIA/
 * TransformerEngine d0067d0da6cb01811b8072a7d304f0e00344ce2b,
 * transformer_engine/pytorch/module/base.py, initialize_ub: `methods` and
 * get_default_config): "ring_exchange" for qkv_fprop, fc1_fprop,
 * proj_dgrad and fc2_dgrad, num_splits = tp_size (the all-gather as tp
 * send/recv steps, one GEMM on each arrived chunk of rows,
 * CommOverlapP2PBase::split_overlap_ag in common/comm_gemm_overlap/
 * comm_gemm_overlap.cpp); "pipeline" for proj_fprop and fc2_fprop,
 * num_splits = 4 (the GEMM in 4 row chunks, each chunk's reduce-scatter
 * behind the next chunk's GEMM); "bulk" for qkv_dgrad, fc1_dgrad and the
 * weight gradients (the GEMM whole, a collective beside it). */
#define MM_UB_PIPELINE_SPLITS 4

/* How many row chunks TE's userbuffers overlap splits GEMM op o (one
 * pass of it, mm_op_pass) into under c->ub_tp: tp for the ring-exchange
 * GEMMs (the forward of "qkv" and "fc1", the input gradient of
 * "attn_out" and "fc2"), MM_UB_PIPELINE_SPLITS for the forward of
 * "attn_out" and "fc2", else 1 (also for grouped and batched GEMMs). */
int mm_fw_ub_chunks(const mm_fw_ctx *c, const mm_op_cost *o);

/* Sum over the passes of one kind / of one pass. */
double mm_pass_breakdown_pass(const mm_pass_breakdown *b, int pass);
double mm_pass_breakdown_kind(const mm_pass_breakdown *b, int pass, int kind);

/* Adds a's seconds times k to *acc. */
void mm_pass_breakdown_add(mm_pass_breakdown *acc, const mm_pass_breakdown *a, double k);

/* A causal attention core op `o` of one CP rank (its s/cp queries of each
 * sequence against all s keys, FLOPs dense) as Transformer Engine's p2p
 * ring runs it with Megatron's causal load balance: the sequence is cut
 * into 2 cp chunks and rank r holds chunks r and 2cp-1-r
 * (Megatron-LM megatron/core/utils.py get_batch_on_this_cp_rank @ 22e030e9);
 * step 0 attends the rank's two chunks to their own keys (causal, query
 * and key length s/cp), each of the other cp-1 steps either all its
 * queries to half a peer's keys or half its queries to all of them
 * (non-causal, s/cp x s/2cp; TransformerEngine transformer_engine/pytorch/
 * attention/dot_product_attention/context_parallel.py
 * AttnFuncWithCPAndKVP2P @ 9c61cd7e).  Each step is its own kernel, timed
 * at its own sequence length (sqrt of query x key length) by the
 * implementation's table, and launched (kernel overhead) on its own.
 * *diag and *off get the diagonal step's and one off-diagonal step's
 * seconds for the pass (forward or backward); cp <= 1 or a non-causal op:
 * *diag the op's whole time, *off 0.  The FLOPs sum to the op's own
 * (diagonal 1/cp of them, causal; each other step 1/2cp, full). */
void mm_fw_cp_ring_steps(const mm_fw_ctx *c, const mm_op_cost *o, int cp, double *diag, double *off);

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
