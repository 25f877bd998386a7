/* sched_common.h - what the schedule and graph suites (test_sched.c,
 * test_sched_comm.c, test_placement.c) share: running a build spec on the
 * engine (run_result: iteration time, bubble, critical path) and a uniform
 * pipeline of given pass times.
 * Static inline, so a suite that does not call one does not warn.
 * Not for: assertions of their own. */
#ifndef MM_TEST_SCHED_COMMON_H
#define MM_TEST_SCHED_COMMON_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/framework.h"
#include "model/memory.h"
#include "parallel/build.h"
#include "parallel/passtimes.h"
#include "cost/costs.h"
#include "exec/critpath.h"
#include "exec/exec.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "plan/estimate.h"
#include "cost/cost_internal.h"

typedef struct run_result {
    double time_s, bubble;
    int all_once, eager;
    double crit_sum, crit_wait, crit_share[MM_CAT_COUNT];
    int crit_top_rank;
    double span_s; /* the longest rank's first pass start to last pass end:
                      the Zero Bubble paper's cost (its bubble rates divide
                      by it; auto_schedule.py, max over stages) */
} run_result;

/* Executes a spec; checks that every op ran exactly once and started the
 * moment it could (at the later of its stream predecessor's end and its
 * dependencies' ends), i.e. no stream sat idle with a ready op. */
static inline run_result run_spec(const mm_build_spec *sp)
{
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(sp, &g, NULL), 0);
    /* every GPU of the layout belongs to exactly one simulated rank (colocated
     * and homogeneous encoders share the LLM's) */
    int ng = mm_build_gpus(sp);
    int *owner = calloc((size_t)ng, sizeof *owner);
    ck_assert_ptr_nonnull(g.rank_gpu_off);
    for (int rk = 0; rk < g.n_ranks; rk++)
        for (uint32_t k = g.rank_gpu_off[rk]; k < g.rank_gpu_off[rk + 1]; k++) {
            ck_assert(g.rank_gpus[k] >= 0 && g.rank_gpus[k] < ng);
            owner[g.rank_gpus[k]]++;
        }
    for (int k = 0; k < ng; k++)
        ck_assert_int_eq(owner[k], 1);
    free(owner);
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("topologies/dgx-a100.yaml", 64, &c, &err), 0);
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end);
    mm_time t1;
    ck_assert_int_eq(mm_exec_run(eng, &g, &c, MM_EXEC_NET_ANALYTIC, start, end, &t1, &err), 0);
    mm_iter_metrics it = {0};
    mm_sim_measure(&g, start, end, 0, t1, &it, NULL, 0, sp->lay.dp);
    run_result r = {it.time_s, it.bubble_fraction, 1, 1, 0, 0, {0}, -1, 0};
    for (int rk = 0; rk < g.n_ranks; rk++) {
        mm_time lo = -1, hi = -1;
        for (uint32_t i = 0; i < g.n_ops; i++)
            if (g.ops[i].rank == rk &&
                (g.ops[i].cat == MM_CAT_FWD || g.ops[i].cat == MM_CAT_BWD || g.ops[i].cat == MM_CAT_WGRAD)) {
                lo = lo < 0 || start[i] < lo ? start[i] : lo;
                hi = end[i] > hi ? end[i] : hi;
            }
        if (lo >= 0 && (double)(hi - lo) * 1e-9 > r.span_s)
            r.span_s = (double)(hi - lo) * 1e-9;
    }
    mm_critpath cp;
    ck_assert_int_eq(mm_critpath_compute(&g, start, end, 0, t1, &cp), 0);
    for (int i = 0; i < cp.n; i++) {
        r.crit_sum += cp.e[i].share;
        if (!strcmp(cp.e[i].what, "wait"))
            r.crit_wait += cp.e[i].share;
        for (int k = 0; k < MM_CAT_COUNT; k++)
            if (!strcmp(cp.e[i].what, mm_op_cat_names[k]))
                r.crit_share[k] += cp.e[i].share;
    }
    r.crit_top_rank = cp.n ? cp.e[0].rank : -1;
    mm_critpath_free(&cp);
    mm_time *ready = calloc(g.n_ops, sizeof *ready);
    for (uint32_t i = 0; i < g.n_ops; i++) {
        if (start[i] < 0 || end[i] < start[i])
            r.all_once = 0;
        for (uint32_t k = g.ops[i].succ_off; k < g.ops[i].succ_off + g.ops[i].nsucc; k++)
            if (end[i] > ready[g.succ[k]])
                ready[g.succ[k]] = end[i];
    }
    size_t nstreams = (size_t)g.n_ranks * MM_STREAM_COUNT;
    for (size_t s = 0; s < nstreams; s++)
        for (uint32_t k = g.stream_off[s]; k < g.stream_off[s + 1]; k++) {
            uint32_t id = g.stream_ops[k];
            mm_time at = ready[id];
            if (k > g.stream_off[s] && end[g.stream_ops[k - 1]] > at)
                at = end[g.stream_ops[k - 1]];
            if (g.ops[id].coll < 0 && start[id] != at)
                r.eager = 0;
        }
    free(ready);
    free(start);
    free(end);
    mm_engine_free(eng);
    mm_graph_free(&g);
    mm_cluster_free(&c);
    return r;
}

/* A 2-stage, 4-replica, tp 4 layout with 4 layers per stage and costs
 * where each layer computes longer than its communication. */
static inline mm_build_spec comm_spec(mm_stage_cost *st)
{
    for (int i = 0; i < 2; i++)
        st[i] = (mm_stage_cost){.chunks = 4, .fwd_s = 4e-3, .bwd_s = 8e-3, .grad_bytes = 400e6, .opt_s = 1e-3};
    return (mm_build_spec){.schedule = MM_SCHEDULE_1F1B, .lay.tp = 4, .lay.pp = 2, .lay.dp = 4, .lay.vpp = 1, .m = 4,
                           .zero = 0, .tp_bytes = 8e6, .tp_msgs_fwd = 2, .tp_msgs_bwd = 2, .p2p_bytes = 16e6,
                           .stages = st};
}

#endif
