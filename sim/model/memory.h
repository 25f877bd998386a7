/* memory.h - bytes on one GPU during training: model states (weights,
 * gradients, optimizer) under ZeRO / Megatron's distributed optimizer, and
 * activations per layer and micro-batch under each recompute mode, with
 * tensor, sequence and context parallelism, times the micro-batches a
 * pipeline schedule keeps in flight.
 *
 * Conventions (Korthikanti et al., "Reducing Activation
 * Recomputation in Large Transformer Models", MLSys 2023, section 4):
 *   - 16-bit activations, 1-byte dropout masks; per GPT layer
 *     s*b*h*(34 + 5*a*s/h) with no parallelism, s*b*h*(10 + 24/t + 5*a*s/(h*t))
 *     with TP t, s*b*h/t*(34 + 5*a*s/h) with TP and SP; selective recompute
 *     drops the 5*a*s^2*b attention terms; full recompute keeps only the
 *     layer input, 2*s*b*h (/t with SP).  GQA, gated MLPs and MoE are
 *     counted from the actual tensor widths, and reduce to these for a GPT.
 *   - Model states, mixed-precision Adam as Megatron-LM keeps them: 16-bit
 *     weights (2 B), fp32 gradient buffer (4 B), fp32 master weight, momentum
 *     and variance (12 B): 18 bytes per parameter; the distributed optimizer
 *     (ZeRO-1) shards the 12 over DP, 6 + 12/d; ZeRO-2 also the gradients,
 *     2 + 16/d; ZeRO-3 (FSDP) everything, 18/d (Rajbhandari et al., ZeRO,
 *     SC'20, with Megatron's byte counts).
 * Not for: deciding whether a layout is legal (sim/parallel), allocator
 * fragmentation beyond the caller's reserve, or time. */
#ifndef MM_MEMORY_H
#define MM_MEMORY_H

#include <stdbool.h>

#include "model/fp8.h"
#include "model/layout.h"
#include "model/llm.h"
#include "model/mllm.h"

/* Megatron-LM mixed-precision Adam bytes per parameter ("about 18 bytes
 * per parameter": vuiseng9/megatron-tutorials; 2 + 4 + 12 below). */
#define MM_BYTES_WEIGHT 2.0
#define MM_BYTES_GRAD 4.0
#define MM_BYTES_OPTIM 12.0

typedef enum mm_mem_schedule {
    MM_MEM_GPIPE,       /* all m micro-batches in flight */
    MM_MEM_1F1B,        /* stage k of p: min(p - k, m) (Narayanan et al. SC'21) */
    MM_MEM_INTERLEAVED, /* (p - k) + (p - 1 - k)/v stage-equivalents: stage 0 holds
                           Korthikanti's p*(1 + (p-1)/(p*v)) */
    MM_MEM_ZB_H1,       /* as 1F1B: ZB-H1 keeps 1F1B's peak (Qi et al. ICLR 2024) */
    MM_MEM_ZB_2P        /* min(2p, m) on every stage: ZB-2p's memory limit, a
                           micro-batch's activations counted whole from its
                           F, half freed at its B and half at its W (the
                           same paper, section 3.1; the schedule's own limit,
                           parallel/schedule.h mm_schedule_zb2p_cap: the
                           model layer cannot call it, tests/test_sched.c
                           asserts they agree) */
} mm_mem_schedule;

/* What a framework's eager code keeps for the backward beyond the fused
 * kernels Korthikanti's count assumes (frameworks/NAME.yaml `memory`,
 * model/framework.h; all zero: the fused count, as before).  Bytes per
 * element:
 *   norm_extra  per element of each norm's input (h wide, replicated over
 *               TP unless SP): transformers' LlamaRMSNorm keeps the fp32
 *               upcast (pow's input, 4 B) and the normalised 16-bit tensor
 *               (the weight multiply's input, 2 B) instead of a fused
 *               kernel's 16-bit input (2 B): 4 more;
 *   rope_extra  per element of q and of k ((a + g) d wide, split over TP):
 *               apply_rotary_pos_emb's two multiplies keep q and
 *               rotate_half(q) (2 + 2 B), which a fused RoPE does not;
 *   act_extra   per element of a gated MLP's ffn width: LlamaMLP's
 *               act_fn(gate) * up keeps silu(gate) for the multiply (2 B)
 *               on top of the fused SwiGLU's gate and up inputs;
 *   no_dropout  the framework runs no hidden dropout (profile
 *               kernels.hidden_dropout 0): no 1-byte masks (Korthikanti's
 *               2 sbh per layer). */
typedef struct mm_mem_eager {
    double norm_extra, rope_extra, act_extra;
    bool no_dropout;
} mm_mem_eager;

typedef struct mm_mem_config {
    mm_layout lay;       /* the LLM's degrees and split (layout.h) */
    bool sp;
    int zero;            /* 0..3; 1 = Megatron's distributed optimizer */
    int recompute;       /* enum mm_recompute */
    mm_mem_schedule schedule;
    int micro_batches;   /* per DP replica */
    double micro_batch;  /* sequences per micro-batch */
    double seq;          /* tokens per sequence */
    bool frozen;         /* train.frozen names the LLM: its 16-bit weights only
                            (sharded over dp under ZeRO-3), no gradients or
                            optimizer states; activations are still kept, as
                            a trainable module upstream needs its input
                            gradients (LLaVA's stage 1) */
    double grad_bytes;   /* bytes of one gradient buffer element (the
                            framework's reduce dtype); 0: MM_BYTES_GRAD */
    bool z3_keep;        /* ZeRO-3 with the stage's parameters kept gathered
                            across micro-batches and its gradients
                            accumulated unsharded until the last backward
                            (FSDP2 on a pipeline): both whole, not /dp */
    mm_fp8_cfg fp8;      /* FP8 training (fp8.h; .on false: none): FP8
                            Linear inputs saved for the backward, the FP8
                            weight copies, FP8-LM's gradient and optimizer
                            bytes for the blocks' Linear weights */
    bool cp_ring;        /* context parallelism by the p2p ring (lay.cp > 1):
                            the KV blocks in flight (mm_mem_cp_ring_bytes) */
    mm_mem_eager eager;  /* the framework's eager intermediates (above) */
    double loss_bytes;   /* bytes per logit element live at the loss's
                            peak on the last stage (the profile's
                            memory.loss_bytes_per_logit); 0: 4, the fp32
                            logits alone */
    bool dq_accum;       /* a FlashAttention backward's fp32 dq accumulator
                            (4 B per q element) while a layer's backward runs */
    double z3_bytes;     /* ZeRO-3 working set on top of the shards: the
                            16-bit parameters gathered whole (the layer
                            computing and those prefetched,
                            mm_framework_z3_prefetch) and one layer's
                            unsharded gradients being reduce-scattered,
                            this rank's TP share; 0 none */
    bool coexec;         /* DHelix co-execution (train.coexec dhelix): the
                            schedule's units are pairs of micro-batches,
                            both strands' activations kept */
} mm_mem_config;

/* The KV blocks context parallelism's p2p ring holds beyond the kept
 * activations, on one GPU, at its peak (the backward): two receive
 * buffers of K and V of a peer's s/cp tokens and two of their gradients
 * dK and dV (Transformer Engine's AttnFuncWithCPAndKVP2P keeps
 * p2p_comm_buffers and dkv buffers double-buffered so that step i
 * computes on one while the next arrives in the other; context_parallel.py
 * @ 9c61cd7e), 16-bit, KV heads split by tp: 4 x 2 b (s/cp) kv_heads
 * head_dim 2 / tp bytes.  The received blocks are not saved for the
 * backward (it sends them around the ring again).  0 when cp <= 1. */
double mm_mem_cp_ring_bytes(const mm_llm *m, double b, double s, int tp, int cp);

typedef struct mm_mem_rank {
    double params;       /* parameters held by this GPU (its TP/PP shard) */
    double weights, grads, optimizer; /* bytes */
    double activations;  /* bytes kept for backward at the peak */
    double transient;    /* working set on top (logits, a recomputed layer,
                            attention workspace, gathered ZeRO-3 layers) */
    double total;        /* bytes allocated at the peak (torch.cuda.
                            max_memory_allocated); what the caching
                            allocator and the runtime reserve on top is
                            mm_mem_reserved */
} mm_mem_rank;

/* The allocator and runtime around the tensors (frameworks/NAME.yaml
 * `memory`, read by model/framework.h):
 *   fragmentation  the caching allocator's (reserved - allocated) /
 *                  reserved for memory allocated and freed during the
 *                  step (activations, transients); model states are
 *                  allocated once, up front, in a few large buffers and
 *                  fragment nothing;
 *   fixed          bytes on the GPU outside the allocator's tensors: the
 *                  CUDA context and kernel images, library workspaces,
 *                  NCCL's buffers, framework bucket buffers. */
typedef struct mm_mem_alloc {
    double fragmentation;
    double fixed;
} mm_mem_alloc;

/* Bytes reserved on one GPU for `states` allocated once and `dynamic`
 * allocated during the step: states + dynamic / (1 - fragmentation) +
 * fixed.  What the OOM verdict compares with the GPU's memory. */
double mm_mem_reserved(const mm_mem_alloc *a, double states, double dynamic);

/* The same layer activations with the framework's eager intermediates
 * (e may be NULL: the fused count of mm_mem_layer_activations_lb). */
double mm_mem_layer_activations_eager(const mm_llm *m, double b, double s, int tp, bool sp, int cp, int recompute,
                                      double lin_bytes, const mm_mem_eager *e);

/* Bytes the last stage holds for the loss of one micro-batch of T tokens
 * (T / cp on this GPU): loss_bytes (0: 4) per logit element, split over
 * tp by the vocab-parallel head, and the final norm's 16-bit input
 * (with its eager extra). */
double mm_mem_loss_transient(const mm_llm *m, const mm_mem_config *c, double T);

/* The largest working set one micro-batch of T tokens adds on one GPU of stage `stage` beyond its kept activations:
 * a layer rebuilt under full recompute, the attention backward's fp32 dq
 * accumulator, gathered ZeRO-3 parameters, and on the last stage the
 * loss (mm_mem_loss_transient). */
double mm_mem_stage_transient(const mm_llm *m, const mm_mem_config *c, int stage, double T);

/* Activation bytes one transformer layer keeps for one micro-batch of b
 * sequences of s tokens, on one GPU (s split over cp, widths over tp). */
double mm_mem_layer_activations(const mm_llm *m, double b, double s, int tp, bool sp, int cp,
                                int recompute);

/* The same with each Linear input (QKV, output projection, fc1, fc2) kept
 * at lin_bytes per element instead of 2 (FP8: mm_fp8_saved_input_bytes). */
double mm_mem_layer_activations_lb(const mm_llm *m, double b, double s, int tp, bool sp, int cp,
                                   int recompute, double lin_bytes);
double mm_mem_layer_activations_varlen_lb(const mm_llm *m, double T, double S, int tp, bool sp, int cp,
                                          int recompute, double lin_bytes);

/* The same for one micro-batch whose sequences have T tokens in all and
 * sum of squared lengths S (varlen, or padded: n*L and n*L^2): the linear
 * terms scale with T, the attention scores' 5as^2b with S. */
double mm_mem_layer_activations_varlen(const mm_llm *m, double T, double S, int tp, bool sp, int cp,
                                       int recompute);

/* Activation bytes one micro-batch of T tokens (sum of squares S) keeps on
 * one GPU of LLM stage `stage` until its backward: the stage's layers and,
 * on the first stage, the embedding output and its dropout mask. */
double mm_mem_llm_mb_activations(const mm_llm *m, const mm_mem_config *c, int stage, double T, double S);

/* Activation bytes an encoder keeps for `inputs` tiles/clips on one GPU of
 * its TP group (all its layers; 0 when frozen: no backward passes it). */
double mm_mem_encoder_activations(const mm_encoder *e, double inputs, int tp, bool sp, int recompute);

/* Bytes per parameter held for model states under ZeRO stage `zero` with
 * data-parallel degree dp (18, 6 + 12/d, 2 + 16/d, 18/d). */
double mm_mem_state_bytes_per_param(int zero, int dp);

/* Micro-batches (in units of the stage's whole layer set) in flight on
 * stage k at the peak. */
double mm_mem_in_flight(mm_mem_schedule s, int stage, int pp, int vpp, int micro_batches);

/* mm_mem_in_flight of c's schedule on `stage`; with c->coexec the
 * schedule runs ceil(m/2) pairs and each pair in flight holds two
 * micro-batches (DHelix), never more than m. */
double mm_mem_config_in_flight(const mm_mem_config *c, int stage);

/* Everything on one GPU of pipeline stage `stage` of the LLM.  Returns 0,
 * or -1 for a configuration the formulas cannot take (pp < 1, ...). */
int mm_mem_llm_rank(const mm_llm *m, const mm_mem_config *c, int stage, mm_mem_rank *out);

/* An encoder run on `inputs` tiles/clips per micro-batch, all of it on one
 * GPU group with tensor parallelism tp (frozen: its 16-bit weights only,
 * sharded over dp under ZeRO-3, and no activations, since nothing upstream
 * of a tower needs a gradient). */
int mm_mem_encoder_rank(const mm_encoder *e, double inputs, int tp, bool sp, int dp, int zero,
                        int recompute, int in_flight, bool frozen, mm_mem_rank *out);

/* Expert-parallel groups folded over the data- and tensor-parallel ranks
 * (Megatron-Core's MoE parallel folding, Liu et al., arXiv 2504.14960): a
 * group of ep GPUs takes ep_dp = gcd(ep, dp) DP replicas and ep_tp = ep /
 * ep_dp of each replica's TP ranks, so ep need not divide dp (ep 32 over
 * dp 16 x tp 2).  Each GPU then holds 1/(tp x ep_dp) of the experts.
 * Returns 0, or -1 when ep_tp does not divide tp or ep < 1. */
int mm_mem_ep_fold(int ep, int tp, int dp, int *ep_dp, int *ep_tp);

#define MM_GIB (1024.0 * 1024.0 * 1024.0)

#endif
