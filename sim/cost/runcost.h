/* runcost.h - a training run's periodic work beside the steady step:
 * checkpoint saves, evaluations and the loss report's host sync, each at
 * its train.* interval, per event, averaged over the iterations, and the
 * whole run's total (train.train_iters).  Off (on = false) unless one of
 * the keys is set, so that per-iteration figures stay the step's.
 * Not for: the step's own fixed costs (the optimizer's launches and the
 * gradient norm's sync are in every iteration: costs.c optimizer_host,
 * build spec host_sync_step), or running anything (exec/iterate.c calls
 * mm_sim_run_costs once the step's time is known). */
#ifndef MM_RUNCOST_H
#define MM_RUNCOST_H

#include <stdbool.h>

#include "parallel/build.h"
#include "scenario/sim.h"

typedef struct mm_run_costs {
    bool on;              /* some train.* run key is set */
    double ckpt_rank_bytes; /* the largest bytes one GPU writes per save */
    double ckpt_node_bytes; /* what one node writes per save (its GPUs) */
    double save_s;        /* one checkpoint save (0: no saves) */
    double eval_iter_s;   /* one forward-only iteration of the evaluation */
    double eval_s;        /* one evaluation: train.eval_iters of them (0: none) */
    double log_sync_s;    /* one loss report's device-to-host sync (0: none) */
    double per_iter_s;    /* the three averaged over their intervals */
    long long saves, evals, logs; /* in train.train_iters iterations */
    double total_s;       /* train.train_iters x (step) + the events; NAN
                             without train.train_iters */
} mm_run_costs;

/* Fills *out for sim's layout from its V virtual stages' costs st
 * (mm_sim_stage_times), m micro-batches per DP replica, and the steady
 * step's time iteration_s (NAN: no run total).  Returns 0, or -code with
 * err set (outside the memory model when saving). */
int mm_sim_run_costs(const mm_sim *sim, const mm_stage_cost *st, int V, int m, double iteration_s,
                     mm_run_costs *out, mm_err *err);

/* The same events for n iterations: saves, evaluations and log syncs as
 * Megatron-LM's train loop counts them (iteration % interval == 0, the
 * iteration counted from 1): floor(n / interval). */
long long mm_run_events(long long n, int interval);

#endif
