/* build.h - turns one training iteration of a TP x CP x PP x DP (x EP)
 * layout into an op graph (graph.h) under a pipeline schedule, with the
 * communication of every parallelism.
 *
 * Costs come in already computed (seconds per pass per stage, bytes per
 * message), so this layer knows the layout and the schedule but neither the
 * GPU nor the model: tests can feed uniform costs and check the schedule,
 * and the cost bridge feeds the cost model's numbers.
 *
 * Rank placement follows an order of dimensions, fastest first; Megatron-
 * LM's default is tp-cp-ep-dp-pp: GPU = t + tp*(c + cp*(d + dp*s)), where
 * the expert-parallel index is the fastest part of d (ep divides dp).  TP
 * groups therefore sit inside a node when tp divides the GPUs per node.
 * A simulated rank is one TP x CP group (its members see the same amount of
 * work; their collectives still cost what the whole group's network costs):
 * rank = d + dp * s.  With interleaving (vpp = v > 1) rank s holds model
 * chunks c = 0..v-1, which are virtual stages c*pp + s.
 *
 * Communication, per layer unless said otherwise:
 *  - TP: all-reduces after attention and MLP (2 forward, 2 backward), or
 *    with sequence parallelism an all-gather and a reduce-scatter for each;
 *    on the compute stream (blocking), or with tp_overlap on a side stream
 *    running concurrently with the layer's compute (the layer ends when
 *    both have: Megatron's userbuffer overlap, taken as perfect);
 *  - CP: ring attention's cp-1 KV exchanges concurrent with the layer
 *    (2(cp-1) in backward), or Ulysses all-to-alls on the compute stream;
 *  - EP: all-to-all dispatch and combine around each MoE layer (2 forward,
 *    2 backward) over the ep DP replicas of an expert group;
 *  - PP: one transfer per micro-batch per stage boundary and direction;
 *  - DP: gradient all-reduce (ZeRO 0) or reduce-scatter (ZeRO >= 1) after
 *    the last micro-batch's backward, in buckets as soon as each bucket's
 *    layers are done with overlap_grad_reduce (with grad_every_mb after
 *    every micro-batch's backward, blocking the compute stream without
 *    overlap_grad_reduce); the optimizer step; the
 *    distributed optimizer's parameter all-gather after it, or with
 *    overlap_param_gather at the start of the iteration, each layer's first
 *    forward waiting for its bucket; with ZeRO-3 every layer's parameters
 *    are all-gathered before each forward and backward (prefetched one
 *    layer ahead) and its gradients reduce-scattered after each backward,
 *    both on the DP stream, or without overlap_grad_reduce (DeepSpeed's
 *    overlap_comm false) both on the compute stream, blocking it; with
 *    z3_once (FSDP2 on a pipeline) each layer is gathered before the first
 *    micro-batch's forward only and reduce-scattered after the last
 *    backward only.
 *
 * Micro-batches may differ (modality-mixed samples): per-micro-batch costs
 * (mb_costs) replace the stage's uniform ones.
 *
 * Encoders (vision, audio) and their projector are placed as DFLOP,
 * Megatron's heterogeneous parallelism and DistTrain place them:
 *  - homogeneous: the encoder inherits the LLM's layout and runs in the
 *    first stage, before the LLM layers in forward and after them in
 *    backward (the LLM-centric baseline);
 *  - colocated: the encoder is sharded over the LLM's GPUs with its own TP
 *    and DP (MegatronMIMO's and FlagScale's colocated MIMO); every encoder
 *    DP rank encodes the images of its own samples first (ranks[]; a
 *    simulated LLM rank whose GPUs hold several encoder ranks waits for the
 *    slowest), then each (encoder rank, LLM replica) pair sends the first
 *    LLM stage the bytes of its samples' embeddings (one transfer per pair,
 *    bytes / tp to the replica's first TP GPU, free when the encoder rank
 *    sits on that stage's GPUs), and after the LLM's backward the
 *    gradients come back pair by pair for the encoder's backward;
 *  - pipeline: the encoder's own GPUs (tp x pp x dp of its own, numbered
 *    before the LLM's) form pipeline stages ahead of the LLM's under the
 *    same 1F1B order; micro-batch j of LLM replica d is encoded by encoder
 *    replica (j*dp + d) mod dp_enc; at the boundary the encoder's last
 *    stage all-gathers over its TP group and sends each LLM TP rank its
 *    slice, and gradients come back the same way;
 *  - disjoint: the encoder's own GPUs run ahead of the LLM, all forwards
 *    in order, each waiting until the LLM has taken the output `buffer`
 *    micro-batches earlier (a bounded queue), then the backwards.
 * Frozen encoders have no backward, gradient sync or optimizer step.
 *
 * Not for: costs (the cost bridge, cost/costs.h), checking a
 * layout against a cluster or model (scenario/check.c: a bad spec here is a
 * bug, reported as MM_EINTERNAL), or timing (exec/exec.h). */
#ifndef MM_BUILD_H
#define MM_BUILD_H

#include "model/layout.h"
#include "parallel/graph.h"
#include "parallel/schedule.h"
#include "util/err.h"

typedef struct mm_stage_cost {
    int chunks;              /* compute ops per pass (one per layer); >= 1 */
    double fwd_s, bwd_s;     /* compute seconds per micro-batch, whole stage;
                                bwd_s is the whole backward (B + W) */
    double wgrad_s;          /* the weight-gradient part of bwd_s: zero-bubble
                                schedules run it as a separate W pass */
    double fwd_flops;        /* model FLOPs per micro-batch forward, TP group */
    double bwd_flops;        /* model FLOPs backward (2x forward, Megatron) */
    double wgrad_flops;      /* the weight-gradient part of bwd_flops */
    double recompute_flops;  /* FLOPs executed again in backward (HFU) */
    double grad_bytes;       /* gradient buffer of one GPU of this stage */
    double param_bytes;      /* parameters of one GPU of this stage, in the
                                dtype ZeRO gathers them (0: = grad_bytes) */
    double opt_s;            /* optimizer step seconds on one GPU */
    /* the host: seconds to issue the kernels of a pass (whole stage, per
     * micro-batch, as fwd_s, bwd_s and wgrad_s) and how many kernels that
     * is; the optimizer step's.  All 0: a host that costs nothing. */
    double fwd_host_s, bwd_host_s, wgrad_host_s, opt_host_s;
    double fwd_launches, bwd_launches, wgrad_launches, opt_launches;
    /* context parallelism's p2p ring (build spec cp_ring): one layer's
     * attention core in its diagonal step and in one of its cp-1
     * off-diagonal steps, forward [0] and backward [1] (cost/fwcost.h
     * mm_fw_cp_ring_steps); all 0: the core is not split into steps */
    double cp_diag_s[2], cp_off_s[2];
    int moe_chunks;          /* how many of the chunks are MoE layers */
    bool no_layers;          /* a chunk of the embedding or the loss alone
                                (Megatron's split options): its one op has
                                no layer's TP, CP or EP communication */
} mm_stage_cost;

/* One micro-batch of one (virtual) stage of one DP replica, when costs
 * differ between micro-batches. */
typedef struct mm_mb_cost {
    double fwd_s, bwd_s, wgrad_s;
    double fwd_flops, bwd_flops, wgrad_flops, recompute_flops;
    double tp_bytes;  /* one TP message of this micro-batch */
    double p2p_bytes; /* its activation at the stage's output boundary */
} mm_mb_cost;

/* The whole encoder's (and projector's) work on one LLM micro-batch, on one
 * encoder TP group (the LLM's TP group for homogeneous placement). */
typedef struct mm_enc_mb_cost {
    double fwd_s, bwd_s;
    double fwd_host_s, bwd_host_s;     /* the host's, as mm_stage_cost's */
    double fwd_launches, bwd_launches;
    double fwd_flops, bwd_flops, recompute_flops;
    double tp_bytes;  /* one TP message of the encoder layers */
    double act_bytes; /* activation between two encoder pipeline stages */
    double out_bytes; /* projected embeddings handed to the LLM */
} mm_enc_mb_cost;

typedef enum {
    MM_ENC_PIPELINE, MM_ENC_COLOCATED, MM_ENC_DISJOINT, MM_ENC_HOMOGENEOUS
} mm_enc_placement;

/* A colocated encoder's work on one of its DP ranks (tp_enc consecutive
 * GPUs of the LLM's, rank k = LLM GPUs [k tp_enc, (k+1) tp_enc) counted
 * from the LLM's first GPU): the images of its own samples. */
typedef struct mm_enc_rank_cost {
    double fwd_s, bwd_s;
    double fwd_flops, bwd_flops, recompute_flops;
} mm_enc_rank_cost;

typedef struct mm_enc_spec {
    char name[16];            /* "vision", "audio": module name in traces */
    mm_enc_placement placement;
    int tp, pp, dp;           /* pipeline/disjoint: its own GPUs; colocated:
                                 tp*dp = the LLM's GPUs, pp = 1;
                                 homogeneous: ignored */
    int chunks;               /* layers: compute ops per pass, all stages */
    bool frozen;
    int tp_msgs_fwd, tp_msgs_bwd;
    double grad_bytes;        /* one encoder GPU's gradients (whole encoder
                                 / pp); homogeneous: added to stage 0's */
    double param_bytes;       /* its 16-bit parameters, as the distributed
                                 optimizer gathers them (0: = grad_bytes) */
    double opt_s;             /* one encoder GPU's optimizer step */
    int buffer;               /* disjoint: queue length in micro-batches */
    /* the profile's grad_sync for the encoder's own ZeRO stage on the
     * pipeline it runs in (mm_framework_grad_every_microbatch): its DP
     * reduce after every backward it runs, else once after the last
     * (mm_build_enc_grad_syncs counts them) */
    bool grad_every_mb;
    const mm_enc_mb_cost *mb; /* dp * m entries, index d*m + mb */
    /* colocated, per encoder DP rank (NULL: the iteration's work spread
     * evenly, resharded by one uniform all-to-all): n_ranks = LLM GPUs /
     * tp entries, and pair_bytes[k * dp + d], the embeddings rank k hands
     * LLM replica d (forward; their gradients come back the same way). */
    int n_ranks;
    const mm_enc_rank_cost *ranks;
    const double *pair_bytes;
} mm_enc_spec;

enum { MM_DIM_TP, MM_DIM_CP, MM_DIM_DP, MM_DIM_PP, MM_DIM_COUNT };
#define MM_MAX_ENCODERS 2

typedef struct mm_build_spec {
    mm_schedule schedule;
    mm_layout lay;           /* the LLM's degrees (cp, ep: 0 is taken as 1;
                                vpp: model chunks per rank, 1 unless
                                interleaved); its split is in stages[].chunks */
    int m;                   /* micro-batches per DP replica */
    int order[MM_DIM_COUNT]; /* placement, fastest first; all zero: default
                                tp-cp-(ep-)dp-pp */
    int zero;                /* 0: all-reduce grads; 1, 2: distributed
                                optimizer; 3: + per-layer parameter gathers */
    int z3_gathers;          /* ZeRO-3: all-gathers per layer and pass, each
                                with its latency (DeepSpeed gathers module by
                                module, FSDP2 a block at once); 0 is taken as 1 */
    int z3_prefetch;         /* ZeRO-3: layers a gather runs ahead of its
                                compute; 0 is taken as 1 */
    int z3_scatters;         /* ZeRO-3: gradient reduce-scatters per layer
                                (DeepSpeed's IPG buckets); 0 is taken as 1 */
    bool z3_no_prefetch;     /* ZeRO-3: none ahead (DeepSpeed's prefetch
                                bucket 0): a layer's gather is issued when
                                the layer before it is done */
    int z3_regathers;        /* ZeRO-3 under full recompute (DeepSpeed):
                                more all-gathers in a layer's backward, of */
    double z3_regather_share; /* this share of the layer's parameters (the
                                recomputed forward's fetches released before
                                the backward uses them) */
    double z3_list_host_s;   /* ZeRO-3 under zero3.list_collectives: host
                                seconds of each gather and reduce-scatter
                                (its per-rank views and copies), spent
                                after the host has waited for the GPU
                                (DeepSpeed synchronizes the device at each
                                fetch), before the layer's kernels; 0: none */
    bool sp;                 /* sequence parallel TP traffic */
    bool tp_overlap, overlap_grad_reduce, overlap_param_gather;
    /* DHelix co-execution (train.coexec dhelix): micro-batches 2k and 2k+1
     * form a pair the schedule runs as one unit; each pass of a pair
     * emits the two strands' layers alternately on the compute stream,
     * each layer's TP, CP and EP traffic on the side stream, so one
     * strand's traffic runs beside the other's compute */
    bool coexec;
    /* Optimus's bubble exploitation (train.encoder_schedule bubbles): a
     * colocated encoder's work of LLM micro-batch j of replica d, split
     * evenly over that replica's pipeline ranks, runs there on the fill
     * stream (exec/exec.h), forward before the LLM's forward of j on the
     * first stage, backward after its backward there
     * (build_bubbles.c) */
    bool enc_bubbles;
    /* under ZeRO 0-2: the gradient buckets reduced after every
     * micro-batch's backward (DeepSpeed ZeRO-2, FSDP2), on the DP stream
     * with overlap_grad_reduce, else blocking the compute stream; false:
     * once, after the last.  ZeRO-3 reduce-scatters every micro-batch's
     * gradients layer by layer either way (mm_build_grad_syncs). */
    bool grad_every_mb;
    /* ZeRO-3 on a pipeline as FSDP2 runs it under torch pipelining
     * (mm_framework_z3_keep_gathered): each layer's parameters gathered
     * once, ahead of the first micro-batch's forward, and kept until the
     * last backward; its gradients reduce-scattered once, after the
     * chunk's last backward (mm_build_grad_syncs, mm_build_z3_gather_passes) */
    bool z3_once;
    double bucket_bytes;     /* DP bucket size (0: one bucket per stage) */
    double tp_bytes;         /* one TP message (0: no TP traffic) */
    int tp_msgs_fwd, tp_msgs_bwd; /* TP all-reduces per chunk and pass */
    bool cp_ring;            /* ring attention (else Ulysses all-to-all) */
    double cp_bytes;         /* ring: KV bytes per step; Ulysses: one
                                all-to-all's bytes (4 forward, 4 backward) */
    double ep_bytes;         /* one EP all-to-all's bytes */
    double p2p_bytes;        /* activation (or its gradient) per micro-batch */
    /* Compressed communication (hw/compress.h; 0: none): the DP gradient
     * all-reduce becomes a compress kernel, an all-gather of the dp ranks'
     * compressed buffers (bytes / dp_ratio each) and the decompression of
     * the dp - 1 others'; a pipeline send carries bytes / pp_ratio between
     * a compress kernel on the sender and a decompress one on the receiver;
     * a blocking TP all-reduce of the LLM (not sequence-parallel, not
     * overlapped) becomes a compress kernel, an all-gather of the tp
     * ranks' compressed buffers (bytes / tp_ratio each) and the
     * decompression of the tp - 1 others', all on the compute stream.
     * Kernel times: mm_compress_kernel_s at each side's GB/s. */
    double dp_ratio, dp_compress_gb_s, dp_decompress_gb_s;
    double pp_ratio, pp_compress_gb_s, pp_decompress_gb_s;
    double tp_ratio, tp_compress_gb_s, tp_decompress_gb_s;
    double p2p_s;            /* > 0: every pipeline transfer takes this long
                                (measured times fed in); else the network's */
    int gpus_per_node;       /* the cluster's: pipeline transfers run on the
                                PP group's NCCL communicator, whose node count
                                sets NCCL's p2p channels (0: the pair alone) */
    double coll_host_s;      /* host seconds to issue one collective on the
                                compute stream (a blocking TP, CP or EP one) */
    bool host_sync_step;     /* the host waits for the GPU before the
                                optimizer step (a grad-norm or overflow
                                .item()): the step's launches are exposed */
    bool ep_dispatch_sync;   /* the host waits for the GPU before each
                                forward EP all-to-all (Megatron-Core's
                                dropless dispatchers read the token counts
                                on the host): what it issues next is exposed */
    const mm_stage_cost *stages; /* pp * vpp entries, by virtual stage */
    const mm_mb_cost *mb_costs;  /* NULL, or pp*vpp * dp * m entries, index
                                    (vs*dp + d)*m + mb: override the stage's
                                    time, FLOPs and message sizes */
    int n_enc;
    mm_enc_spec enc[MM_MAX_ENCODERS];
    /* OrchMLLM's post-balancing re-deal, per phase on the GPUs of that
     * phase (bytes per GPU; 0: none): */
    double enc_a2a_bytes;    /* raw inputs to the encoder phase's ranks: an
                                all-to-all over the first encoder's GPUs (the
                                LLM's when it shares them) opening the iteration */
    double pre_a2a_bytes;    /* embeddings to the LLM phase's ranks: over all
                                the LLM's GPUs, before the LLM starts */
    double post_a2a_bytes;   /* their gradients back: over the LLM's GPUs
                                after its last backward */
    /* Build DP replica 0 alone, standing for dp identical replicas
     * (mm_graph.replicas; exec/symmetry.h says when they are): its ops,
     * edges and collectives as a whole build has them, the others' never
     * emitted.  The caller vouches that every replica's costs are the
     * same; the build fails for encoders on their own GPUs, expert
     * parallelism, per-rank colocated work and post-balancing, and when a
     * collective's members do not split evenly over the replicas. */
    bool one_replica;
} mm_build_spec;

/* Sets a compute op's host: `host_s` seconds to issue its `launches`
 * kernels, and its lead (mm_op.lead_s) with its kernels taken as equal in
 * length: n kernels of t = dur/n each, issued every L = host/n, end at
 * max(L + n t, n L + t) after the host starts, so the GPU, starting when
 * the host does, can run them back to back from max(L, n L + t - n t) on. */
void mm_build_op_host(mm_op *op, double host_s, double launches);

/* ZeRO-3 under zero3.list_collectives (sp->z3_list_host_s > 0, not
 * z3_once): how many list collectives a layer's pass costs the host, its
 * gathers (`gathers`: in a backward the recomputed forward's and the
 * re-gathers too) and its reduce-scatters (`scatters`); 0 otherwise.
 * mm_build_z3_list_mb_s: the host seconds of one layer's forward and
 * backward of one micro-batch (0 below ZeRO-3 or without DP), for the
 * planner's pre-score. */
int mm_build_z3_list_count(const mm_build_spec *sp, int pass, bool gathers, bool scatters);
double mm_build_z3_list_mb_s(const mm_build_spec *sp);

/* Parses "tp-cp-ep-dp-pp" (any order of tp, cp, dp, pp; "ep" may appear
 * only right before "dp", as Megatron folds expert groups into DP) into
 * order[], fastest first.  Returns 0, or -1 for a malformed string. */
int mm_build_parse_order(const char *text, int order[MM_DIM_COUNT]);

/* GPU id of the LLM's TP rank t, CP rank c, DP rank d (expert rank =
 * d mod ep), stage s under the spec's order; encoders placed on their own
 * GPUs (pipeline, disjoint) come first, so the LLM's ids start after them. */
int mm_build_gpu(const mm_build_spec *sp, int t, int c, int d, int s);

/* Colocated encoder i's DP ranks (LLM GPUs / enc tp): home[k] = the LLM DP
 * replica of rank k's first GPU.  Returns the number of ranks, or -1. */
int mm_build_enc_homes(const mm_build_spec *sp, int i, int *home, int max);

/* GPUs the layout occupies: the LLM's plus encoders on their own GPUs. */
int mm_build_gpus(const mm_build_spec *sp);

/* DP gradient reductions per iteration of one stage's gradients: m when
 * they are reduced after every micro-batch (ZeRO-3 unless z3_once, or
 * grad_every_mb), else 1.  The builder and the pre-score (mm_sim_estimate)
 * both count with it; each carries the stage's whole gradient bytes. */
int mm_build_grad_syncs(const mm_build_spec *sp);

/* The same count for encoder i's gradients (one encoder GPU's grad_bytes
 * each): 0 when frozen; 1 unless grad_every_mb; with it, one per backward
 * the encoder runs: m on the LLM's first stage (homogeneous), the fewest
 * micro-batches a replica of its own GPUs takes, dp m / dp_enc (pipeline,
 * disjoint), and 1 colocated (one backward over its whole share of the
 * batch, after the LLM's).  The builder issues them after their
 * backward, on the DP stream with overlap_grad_reduce, else blocking the
 * compute stream, the last in the DP tail (mm_build_enc_early_syncs). */
int mm_build_enc_grad_syncs(const mm_build_spec *sp, int i);

/* Of those, the ones the builder issues after their backward, before the
 * DP tail: all but the tail's last (all of them for a homogeneous encoder
 * under ZeRO-3, whose DP tail reduces no gradients).  The pre-score
 * charges these. */
int mm_build_enc_early_syncs(const mm_build_spec *sp, int i);

/* ZeRO-3: passes per iteration before which a stage's parameters are
 * all-gathered, layer by layer: 1 with z3_once (the first micro-batch's
 * forward), else 2 m (every forward and backward); 0 below ZeRO-3.  The
 * builder and the pre-score both count with it. */
int mm_build_z3_gather_passes(const mm_build_spec *sp);

/* Stage s's schedule steps (parallel/schedule.h) into out, which holds
 * mm_schedule_len() steps: ZB-2p ordered by the spec's stage pass times
 * (forward, backward less its weight gradient, weight gradient) and its
 * p2p_s (none when the network times transfers).  The builder, the
 * encoder's placement and the memory that follows the data all take the
 * order from here.  Returns the count, or -1. */
int mm_build_schedule_steps(const mm_build_spec *sp, int s, mm_sched_step *out);
/* Every stage's at once (mm_schedule_steps_all: a timed schedule's list
 * run once), stage s's at out + s * mm_schedule_len(). Returns one
 * stage's length or -1. */
int mm_build_schedule_steps_all(const mm_build_spec *sp, mm_sched_step *out);

/* Builds the iteration into g (initialised here). Returns 0, or -1 on bad
 * arguments or out of memory (g is then freed) with err (may be NULL) set
 * to MM_EINTERNAL and a message naming the op or spec field and the stage:
 * a spec that the cost bridge built wrong is a bug, not bad input. */
int mm_build_iteration(const mm_build_spec *spec, mm_graph *g, mm_err *err);

#endif
