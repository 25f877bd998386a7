/* build.h - turns one training iteration of a TP x PP x DP layout into an
 * op graph (graph.h) under a pipeline schedule.
 *
 * Costs come in already computed (seconds per pass per stage, bytes per
 * message), so this layer knows the layout and the schedule but neither the
 * GPU nor the model: tests can feed uniform costs and check the schedule,
 * and the run layer feeds the cost model's numbers.
 *
 * Rank placement follows Megatron-LM's default order (tp fastest, then dp,
 * then pp): GPU = t + tp * (d + dp * s), so TP groups sit inside a node when
 * tp divides the GPUs per node.  Simulated rank = d + dp * s.
 * With interleaving (vpp = v > 1) rank s holds model chunks c = 0..v-1,
 * which are virtual stages c*pp + s; costs are given per virtual stage.
 * Not for: multimodal placements, nor per-micro-batch cost differences yet. */
#ifndef MM_BUILD_H
#define MM_BUILD_H

#include "parallel/graph.h"
#include "parallel/schedule.h"

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
    double opt_s;            /* optimizer step seconds on one GPU */
} mm_stage_cost;

typedef struct mm_build_spec {
    mm_schedule schedule;
    int tp, pp, dp;
    int vpp;                 /* model chunks per rank (1 unless interleaved) */
    int m;                   /* micro-batches per DP replica */
    int zero;                /* 0: all-reduce grads; >= 1: distributed optimizer
                                (reduce-scatter grads, all-gather params) */
    double tp_bytes;         /* one TP all-reduce message (0: no TP traffic) */
    int tp_msgs_fwd, tp_msgs_bwd; /* TP all-reduces per chunk and pass */
    double p2p_bytes;        /* activation (or its gradient) per micro-batch */
    double p2p_s;            /* > 0: every pipeline transfer takes this long
                                (measured times fed in); else the network's */
    const mm_stage_cost *stages; /* pp * vpp entries, by virtual stage */
} mm_build_spec;

/* GPU id of TP rank t, DP rank d, stage s. */
static inline int mm_build_gpu(const mm_build_spec *sp, int t, int d, int s)
{
    return t + sp->tp * (d + sp->dp * s);
}

/* Builds the iteration into g (initialised here). Returns 0, or -1 on bad
 * arguments or out of memory (g is then freed). */
int mm_build_iteration(const mm_build_spec *spec, mm_graph *g);

#endif
