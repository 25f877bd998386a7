/* framework.h - a training framework as it executes a transformer layer,
 * read from a profile file (frameworks/NAME.yaml): which attention kernel
 * it runs, which memory-bound work it fuses and which it runs as separate
 * eager kernels, in which dtype it reduces gradients, what its optimizer
 * step reads and writes, and how it buckets the gradient reduce.  Every
 * value in a profile cites the framework's code; the cost bridge (sim/cost)
 * turns it into kernels and bytes.
 *
 * Scenario keys still override a profile: train.attention (when not auto)
 * replaces the profile's attention choice, train.padding (when not auto)
 * its padding default, train.overlap_grad_reduce and overlap_param_gather
 * (when not auto) its overlap.
 * Not for: timing (sim/hw), the base op list of a layer (llm.h), or
 * deciding a layout (sim/parallel). */
#ifndef MM_FRAMEWORK_H
#define MM_FRAMEWORK_H

#include <stdbool.h>

#include "hw/cluster.h"
#include "hw/efficiency.h"
#include "model/llm.h"
#include "model/padding.h"
#include "util/err.h"

/* A group of memory-bound work in a layer, relative to the one fused
 * kernel llm.h lists for it: `kernels` launches instead of one, moving
 * `traffic` times its HBM bytes (1, 1 for a fused kernel). */
typedef struct mm_fw_group {
    int kernels;
    double traffic;
    double bwd_traffic; /* > 0: its backward moves this times the (scaled)
                         * forward's bytes, counted from the kernels' code;
                         * 0 (key absent): the generic twice (mm_op_pass) */
    bool jit;           /* a TorchScript-scripted function: its fused forward
                         * and backward kernels are timed at the GPU's jit
                         * rate (mm_jit_mem_time); key absent: false */
} mm_fw_group;

/* The host side of a framework (the profile's `host` section): what the
 * host thread spends issuing one kernel, by where the call comes from, and
 * which CUDA-graph scopes the framework can capture.  Seconds.  The
 * executor runs these on a per-rank host cursor (exec/exec.h): a kernel
 * starts no earlier than the host has issued it. */
/* How the optimizer step launches its kernels (the profile's
 * optimizer.impl): one multi-tensor kernel per chunk of the parameters
 * (fused: apex/TE FusedAdam, torch.optim fused=True), a multi-tensor
 * launch per elementwise op (foreach: torch.optim's _multi_tensor_adam),
 * or each op on each tensor (for_loop: _single_tensor_adam). */
typedef enum { MM_OPT_FUSED, MM_OPT_FOREACH, MM_OPT_FOR_LOOP } mm_opt_impl;
extern const char *const mm_opt_impl_names[];

typedef struct mm_fw_host {
    double launch_s;       /* the CUDA runtime's launch call, per kernel */
    double fwd_op_s;       /* the framework's code per forward kernel on top
                              (Python, the op dispatcher, autograd's record) */
    double bwd_op_s;       /* per backward kernel on top (autograd's engine) */
    double module_s;       /* per nn.Module call of a forward (Python) */
    double graph_launch_s; /* one CUDA-graph replay (cudaGraphLaunch) */
    bool graphs_layer;     /* per-layer graphs can be captured */
    bool graphs_full;      /* the whole forward-backward can be captured */
} mm_fw_host;

/* Host seconds to issue one kernel of a forward (bwd false) or backward
 * pass from eager code: the framework's per-op code plus the launch. */
static inline double mm_fw_host_kernel_s(const mm_fw_host *h, bool bwd)
{
    return h->launch_s + (bwd ? h->bwd_op_s : h->fwd_op_s);
}

/* The profile's `memory` section: what the framework's eager code keeps
 * for the backward beyond the fused kernels Korthikanti's count assumes,
 * the loss's buffers, and what the allocator and runtime hold around the
 * tensors (model/memory.h mm_mem_eager, mm_mem_alloc).  Bytes per element
 * unless named otherwise. */
typedef struct mm_fw_memory {
    double norm_extra;     /* memory.norm_extra_bytes, per norm-input element */
    double rope_extra;     /* memory.rope_extra_bytes, per q and k element */
    double act_extra;      /* memory.act_extra_bytes, per gated-MLP ffn element */
    double loss_bytes;     /* memory.loss_bytes_per_logit at the loss's peak */
    double fragmentation;  /* memory.fragmentation: (reserved - allocated) / reserved
                              of what is allocated and freed during the step */
    double context_bytes;  /* memory.context_mib: CUDA context and kernel images */
    double workspace_bytes;/* memory.workspace_mib: cuBLAS/cuBLASLt workspaces */
    double nccl_bytes;     /* memory.nccl_buffer_mib: NCCL_BUFFSIZE, per channel per peer */
    int nccl_channels;     /* memory.nccl_channels per communicator */
    int bucket_buffers;    /* memory.grad_bucket_buffers: reduce-bucket-sized
                              buffers ZeRO 1-2 allocates beside the gradients
                              (doubled under overlap_grad_reduce); 0: buckets
                              are views of the gradient buffer */
} mm_fw_memory;

enum { MM_FW_NORM, MM_FW_ROPE, MM_FW_ACT, MM_FW_RESIDUAL, MM_FW_XENT, MM_FW_GROUPS };
extern const char *const mm_fw_group_names[]; /* "norm", "rope", "act", "residual", "cross_entropy" */

typedef struct mm_framework {
    char name[32];
    char source[512];           /* the profile file */
    /* attention core: before compute capability 9.0, and from 9.0 (Hopper) */
    mm_attn_impl attn, attn_sm90;
    mm_fw_group group[MM_FW_GROUPS];
    bool qkv_bias_separate;     /* the QKV bias added by its own kernel after the GEMM */
    /* h-wide tensors copied into / out of the attention kernel's layout per
     * layer forward: with a flash/cuDNN kernel, with the unfused core */
    int layout_copies_fused, layout_copies_unfused;
    bool split_qkv; /* layout_copies.split_qkv: the copies' backward counted
                     * exactly (no kernel, plus the cat of the q, k, v
                     * gradients); false: the generic twice the forward */
    double hidden_dropout;      /* dropout rate on the two residual branches (0: none) */
    mm_fw_host host;            /* the host thread that issues the kernels */
    char loader[48];            /* its data loader (the profile's loader.name) */
    int loader_workers;         /* its default loader workers per GPU */
    char loader_rates[256];     /* its rates file, relative to the profile
                                   (model/loadrates.h; loader.rates) */
    int grad_reduce_bytes[MM_DTYPE_COUNT]; /* DP gradient reduce element size, by train.precision */
    double step_bytes_per_param; /* optimizer step HBM traffic per parameter on this rank */
    bool grad_norm;             /* gradient clipping: an L2 norm over every gradient + all-reduce */
    bool zero_grad_buffer;      /* the gradient buffer is zeroed (memset) every iteration */
    int opt_impl;               /* mm_opt_impl: how the step's kernels are launched */
    /* DP gradient bucket: max(bucket_params, bucket_per_dp x dp) parameters;
     * both 0: one bucket per transformer layer (FSDP2 fully_shard per block) */
    double bucket_params;
    double bucket_per_dp;
    /* ZeRO-3 / FSDP parameter gathers: one per module of a layer (DeepSpeed's
     * per-submodule fetch) or one per layer (FSDP2's fully_shard per
     * block); prefetched this many parameters ahead (0: one layer ahead) */
    bool z3_per_module;
    double z3_prefetch_params;
    /* parameters that may be gathered at once (DeepSpeed's
     * stage3_max_live_parameters), bounding the prefetch: 0 none */
    double z3_max_live_params;
    /* zero3.persistence_mparams: a parameter of at most this many elements
     * stays gathered on every rank (DeepSpeed's
     * stage3_param_persistence_threshold); a module all of whose
     * parameters persist is never gathered.  zero3.max_reuse_mparams: a
     * gathered parameter used again within this many parameters of the
     * trace is not released (stage3_max_reuse_distance).  Both 0 when the
     * profile leaves them out; read under gather: module only. */
    double z3_persist_params;
    double z3_max_reuse_params;
    /* zero3.keep_gathered_under_pp: on a pipeline the parameters stay
     * gathered from the first micro-batch's forward to the last one's
     * backward and the gradients accumulate unsharded, reduce-scattered
     * once after the stage's last backward (torchtitan's
     * fsdp_reshard_after_forward "default" is False under PP, and torch's
     * PipelineStage sets reshard_after_backward and requires_gradient_sync
     * False for every backward but the last) */
    bool z3_keep_under_pp;
    /* zero3.list_collectives: each gathered parameter is all-gathered (and
     * its gradient reduce-scattered) through torch.distributed's list form,
     * as DeepSpeed did before its flat _all_gather_base (microsoft/DeepSpeed
     * c0eeb69d, 2021-10-31): per collective the host builds one view per DP
     * rank in Python and ProcessGroupNCCL copies each rank's piece out of
     * (or into) its flattened buffer, and every fetch synchronizes the
     * device (mm_framework_z3_list_host_s).  False when the profile leaves
     * it out. */
    bool z3_list_collectives;
    /* how its data pipeline lays out a micro-batch's sequences (the
     * collator or dataset the framework's training scripts use): padding
     * without a pipeline, padding_pipelined when the LLM is pipelined
     * (pp > 1: its sequences cross stages, whose point-to-point transfers
     * may need one fixed shape; model/padding.h) */
    mm_padding padding, padding_pipelined;
    /* DP communication behind compute by default (train.overlap_grad_reduce
     * and overlap_param_gather override): ZeRO 0-2 gradient buckets reduced
     * during the last backward; ZeRO 1-2 parameter all-gathers issued at
     * the iteration start, each layer's first forward waiting for its own */
    bool overlap_grad_reduce, overlap_param_gather;
    /* overlap.zero3_blocking: the framework can run ZeRO-3 without overlap
     * (DeepSpeed's overlap_comm false: gathers and reduce-scatters on the
     * compute stream), so train.overlap_grad_reduce false under ZeRO-3 is
     * modeled; false: it has no such configuration and the key is refused */
    bool zero3_blocking;
    /* grad_sync: whether the DP gradient reduce of ZeRO stage 0, 1, 2 runs
     * after every micro-batch's backward (DeepSpeed ZeRO-2's hooks, FSDP2's
     * post-backward) or once, after the last (Megatron's no_sync around
     * the others, DeepSpeed ZeRO 0-1 at the accumulation boundary); under
     * pipeline parallelism (pp > 1) once whatever the stage when
     * once_under_pp (torch.distributed.pipelining and DeepSpeed's pipeline
     * engine sync after the last backward only).  ZeRO-3 reduce-scatters
     * every micro-batch unless zero3.keep_gathered_under_pp applies. */
    bool every_microbatch[3];
    bool once_under_pp;
    /* zero_stages: the ZeRO stages (train.zero) the stack runs, bit z for
     * stage z (0 always); validation refuses the others by name and the
     * planner does not offer them */
    unsigned zero_stages;
    /* schedules: the pipeline schedules (train.schedule) the stack runs,
     * bit k for mm_schedule_names[k] (model/layout.h; 1f1b always);
     * validation refuses the others by name and the planner does not
     * offer them */
    unsigned schedules;
    mm_fw_memory mem;           /* the memory section (above) */
} mm_framework;

/* A module of a transformer layer as DeepSpeed's coordinator fetches it:
 * its parameters and its largest parameter's (what the persistence
 * threshold compares), in forward order. */
enum { MM_Z3_MAX_MODULES = 12 };
typedef struct mm_z3_module {
    double params, largest;
} mm_z3_module;

/* The parameter-holding modules of one dense layer as Hugging Face builds
 * them (input norm; q, k, v, or GPT-2's fused c_attn; the output
 * projection; the post-attention norm; two or three MLP matrices), into
 * mod[MM_Z3_MAX_MODULES]; returns their count.  Their parameters add up to
 * mm_llm_layer_params for a dense, non-MLA layer without qk-norms. */
int mm_framework_z3_modules(const mm_llm *m, mm_z3_module *mod);

/* The scenario's DeepSpeed settings (zero.*), in parameters; < 0: the
 * profile's zero3 values. */
typedef struct mm_z3_knobs {
    double prefetch_bucket; /* stage3_prefetch_bucket_size */
    double max_live;        /* stage3_max_live_parameters */
    double persistence;     /* stage3_param_persistence_threshold */
    double max_reuse;       /* stage3_max_reuse_distance */
} mm_z3_knobs;

/* How ZeRO-3 gathers one layer under the framework and the knobs (NULL:
 * the profile's): `gathers` all-gathers per layer and pass (1 under
 * gather: layer; else the modules with a parameter above the persistence
 * threshold); under full recomputation (DeepSpeed only) the backward's
 * `regathers` more, of `regather_share` of the layer's parameters (the
 * checkpointed forward's fetches released before the backward's use);
 * `prefetch` layers ahead (mm_framework_z3_prefetch; 0: none, a DeepSpeed
 * prefetch bucket of 0); `scatters` gradient reduce-scatters per layer
 * (DeepSpeed's IPG buckets of the profile's grad_bucket.mparams, as its
 * reduce_bucket_size, filled module by module in backward order: 4 for a
 * GPT-3 175B layer at 5e8; 1 where a bucket spans layers, and under
 * gather: layer).  Returns -1 when every module of the layer persists
 * (nothing left to gather: not modeled). */
typedef struct mm_z3_gather_plan {
    int gathers, regathers, prefetch, scatters;
    double regather_share;
} mm_z3_gather_plan;
int mm_framework_z3_plan(const mm_framework *fw, const mm_llm *m, const mm_z3_knobs *k, bool full_recompute,
                         mm_z3_gather_plan *out);

/* ZeRO-3 all-gathers per transformer layer under the framework: 1, or the
 * layer's parameter-holding modules as Hugging Face builds them (two norms,
 * q/k/v separate except GPT-2's fused c_attn, the output projection, and
 * two or three MLP matrices). */
int mm_framework_z3_gathers(const mm_framework *fw, const mm_llm *m);

/* Layers a ZeRO-3 gather runs ahead: max(1, floor(min(prefetch, max_live -
 * layer) / layer)) with layer = one layer's parameters (no max_live: the
 * prefetch alone), at most 15.  A bucket smaller than a layer (DeepSpeed's
 * 5e7 against a 7B layer's 202M) is taken as one layer ahead: DeepSpeed
 * keeps that many parameters (at least the next module) in flight as the
 * modules run, which hides the same gathers while a module's gather is
 * shorter than its compute; the start of a pass differs. */
int mm_framework_z3_prefetch(const mm_framework *fw, const mm_llm *m);

/* Host seconds of one ZeRO-3 list collective over `dp` ranks under
 * zero3.list_collectives (0 otherwise): per rank one Python view
 * (DeepSpeed's partition loop: an eager op, host.forward_op_us) and one
 * C++ copy_ (ProcessGroupNCCL's per-output copy: host.backward_op_us,
 * the dispatcher without Python, plus host.launch_us). */
double mm_framework_z3_list_host_s(const mm_framework *fw, int dp);

/* The profile's overlap under ZeRO stage `zero`: gradient buckets for
 * 0-2 (always on under 3: ZeRO-3's per-layer gathers and reduce-scatters
 * run on their own stream, as DeepSpeed's stage-3 overlap_comm default
 * and FSDP2 do; only an explicit train.overlap_grad_reduce false turns it
 * off, where the profile's zero3_blocking allows), the parameter
 * all-gather for 1-2 (none to overlap under 0 and 3, where the gathers
 * are per layer). */
void mm_framework_overlap(const mm_framework *fw, int zero, bool *grad_reduce, bool *param_gather);

/* Whether ZeRO stage `zero` on a pipeline of `pp` stages (an encoder's
 * stages ahead of the LLM's count) keeps the parameters gathered across
 * micro-batches and reduce-scatters once after the last backward: zero 3,
 * pp > 1 and the profile's zero3.keep_gathered_under_pp. */
bool mm_framework_z3_keep_gathered(const mm_framework *fw, int zero, int pp);

/* Whether the profile reduces the DP gradients of ZeRO stage `zero` (0-3)
 * after every micro-batch's backward on a pipeline of `pp` stages (an
 * encoder's stages ahead of the LLM's count): its
 * grad_sync.every_microbatch for 0-2, unless pp > 1 and once_under_pp;
 * always under 3 (mm_framework_z3_keep_gathered says when only once). */
bool mm_framework_grad_every_microbatch(const mm_framework *fw, int zero, int pp);

/* Reads a profile.  Unknown keys, missing keys, wrong types and values out
 * of range give MM_EINPUT naming the file, line and key. */
int mm_framework_load(const char *path, mm_framework *fw, mm_err *err);

/* The attention implementation the framework runs on a GPU of that compute
 * capability (0: unknown, taken as pre-Hopper). */
mm_attn_impl mm_framework_attention(const mm_framework *fw, double compute_capability);

/* Bytes of one gradient element in the DP reduce under `precision`. */
int mm_framework_grad_bytes(const mm_framework *fw, mm_dtype precision);

#endif
