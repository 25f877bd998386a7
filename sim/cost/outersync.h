/* outersync.h - training across the topology's sites (train.outer_sync):
 * what one synchronisation over the WAN sends and costs, and what the
 * sites wait for it per step.  allreduce all-reduces the gradients across
 * sites after every step; diloco (DiLoCo, Douillard et al., arXiv
 * 2311.08105; DiLoCoX, Qi et al., arXiv 2506.21263) trains H local steps,
 * then all-reduces the pseudo-gradient (the H steps' change of the
 * weights), blocking, or, with DiLoCoX's one-step-delay overlap, during
 * the next round's H steps, so that only what outlasts them is exposed.
 * Not for: the step inside a site (the executed graph: every site runs
 * the same, so one is simulated), the WAN collectives' times (hw/wan.h),
 * or adding the result to the run's metrics (exec/iterate.c). */
#ifndef MM_OUTERSYNC_H
#define MM_OUTERSYNC_H

#include <stdbool.h>

#include "scenario/sim.h"

typedef struct mm_outer_sync {
    bool on;             /* train.outer_sync given (the topology has sites) */
    int sites;           /* S */
    int algorithm;       /* mm_outer_sync_algo */
    int h;               /* inner steps per sync (allreduce: 1) */
    bool overlap;        /* one-step-delay overlap */
    double params;       /* trainable parameters synced */
    double bytes;        /* one site's values: params x 4 (fp32) or 2 (bf16);
                            allreduce: x the framework's gradient reduce size */
    double wire_bytes;   /* one site's buffer on the WAN (bytes / the compressor's ratio) */
    double kernel_s;     /* compress and S - 1 decompress kernels on each GPU's shard */
    double wan_s;        /* the all-reduce (or a lossy compressor's all-gather) across sites */
    double sync_s;       /* one sync: kernel_s + wan_s */
    double step_s;       /* one inner step: the simulated iteration's mean */
    double exposed_s;    /* what the sites wait per sync: sync_s, or with
                            the overlap max(0, sync_s - h step_s) */
    double per_iter_s;   /* exposed_s / h: added to every step */
} mm_outer_sync;

/* Fills *out for sim's train.outer_sync given the mean inner step step_s
 * (out->on false, and nothing else, when the section is absent).  The
 * synced values are every trainable parameter's, sharded over the site's
 * GPUs for the compress kernels (DiLoCoX's distributed outer optimizer);
 * 0, or -code with err set. */
int mm_sim_outer_sync(const mm_sim *sim, double step_s, mm_outer_sync *out, mm_err *err);

/* Bytes of diloco's outer optimizer state on one GPU that holds
 * rank_params parameters of the LLM, with train.outer_sync.state gpu
 * (0 otherwise): an fp32 copy of the weights the last sync agreed on and
 * the outer Nesterov momentum (DiLoCo's outer optimizer, arXiv 2311.08105),
 * 8 bytes a parameter, and with the overlap the previous round's
 * pseudo-gradient while it travels (4 or 2: train.outer_sync.dtype),
 * sharded over the stage's dp ranks as DiLoCoX's distributed outer
 * optimizer holds it (arXiv 2506.21263, its Fig. 1). */
double mm_sim_outer_state_bytes(const mm_sim *sim, double rank_params);

/* The trainable parameters of sim's model (the LLM unless train.frozen
 * names it; each encoder's tower and projector unless frozen). */
double mm_sim_trainable_params(const mm_sim *sim);

#endif
