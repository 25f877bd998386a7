/* run.h - a prepared scenario run event by event: every iteration drawn,
 * costed (cost/costs.h), built into a graph (parallel/build.h), executed on
 * the engine (exec.h, symmetry.h) and measured (iterate.c).  The path
 * `mmsim run`, sweeps, the planner's rescoring and the tests go through.
 * Not for: the analytic estimate (plan/estimate.h), printing, storing. */
#ifndef MM_EXEC_RUN_H
#define MM_EXEC_RUN_H

#include "engine/engine.h"
#include "exec/metrics.h"
#include "parallel/graph.h"
#include "scenario/sim.h"

/* Optional per-op timeline of one iteration, for the trace writer. */
typedef struct mm_sim_timeline {
    mm_graph graph;        /* of the last iteration */
    mm_time *start, *end;  /* per op, ns */
    mm_time t0;            /* iteration start */
    mm_time *host_start;   /* per op: when its rank's host began issuing
                              it (-1: not a compute-stream op); may be NULL */
} mm_sim_timeline;

/* Runs every iteration.  metrics is filled (caller frees with
 * mm_metrics_free); when tl is non-NULL it receives the last iteration's
 * graph and times (free with mm_sim_timeline_free). */
int mm_sim_run(const mm_sim *sim, mm_metrics *metrics, mm_sim_timeline *tl, mm_err *err);

void mm_sim_timeline_free(mm_sim_timeline *tl);

/* Iteration metrics from an executed graph (exposed for tests that build
 * graphs by hand).  gpus and peak_flops are the cluster's; tokens and
 * samples the iteration's. */
void mm_sim_measure(const mm_graph *g, const mm_time *start, const mm_time *end,
                    mm_time t0, mm_time t1, mm_iter_metrics *it,
                    mm_stage_metrics *stages, int n_stages, int ranks_per_stage);

/* The per-stage and per-module memory of the cost bridge
 * (mm_sim_stage_memory) into mt (stages[].memory_gib, modules[],
 * peak_memory_gib; mt->stages allocated for pp stages).  Returns 1 when
 * some GPU does not fit, 0 when all fit, -code on error. */
int mm_sim_metrics_memory(const mm_sim *sim, mm_metrics *mt, mm_err *err);

#endif
