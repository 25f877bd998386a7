/* runner_internal.h - what the runner's parts share (internal to sim/plan):
 * the state of one mm_runner_run, one point's outcome, and the steps the
 * serial, forked and MPI paths all take (runner_point.c).  runner.c plans
 * and runs points in this process or in forked workers; runner_mpi.c
 * spreads them over MPI ranks.
 * Not for: use outside the runner (runner.h is the interface). */
#ifndef MM_RUNNER_INTERNAL_H
#define MM_RUNNER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "plan/runner.h"
#include "exec/metrics.h"
#include "scenario/scenario.h"
#include "store/store.h"

/* State shared by the phases of one mm_runner_run. */
typedef struct runner {
    const mm_runner_opts *o;
    const mm_point *pts;
    size_t n;
    mm_point_result *res;
    char **canon;       /* per point: canonical text, NULL when it did not load */
    long *follows;      /* per point: earlier point with the same text, or -1 */
    size_t *pending;    /* points to simulate, in order */
    size_t n_pending;
    mm_runner_progress prog;
    double t0;
    int64_t sweep_id;   /* o->sweep_id, or the sweep opened by plan_store */
} runner;

/* What simulating one point gave, before it is stored. */
typedef struct outcome {
    int ok;            /* 1: metrics valid; 0: failed (err) */
    mm_err err;
    mm_metrics m;
    char *canon;       /* canonical text (owned) */
    char source[256];
    mm_run_desc desc;  /* model, topology, workload, layouts (plain data) */
    uint64_t seed;
} outcome;

/* A failed point's result: its message from e. */
static inline void mm_rn_set_failed(mm_point_result *p, const mm_err *e)
{
    p->status = MM_POINT_FAILED;
    p->run_id = 0;
    p->oom = 0;
    mm_err_format(e, p->error, sizeof p->error);
}

/* The sweep link of point i (its sweep, index and axis values). */
static inline mm_sweep_link mm_rn_link_of(const runner *r, size_t i)
{
    return (mm_sweep_link){.sweep_id = r->sweep_id, .point = (int64_t)i,
                           .axis_values = r->pts[i].label};
}

/* runner_point.c: the steps of one point that the serial, forked and MPI
 * paths all take.
 * Progress: one more point finished (mm_rn_count), tell the callback. */
void mm_rn_report(runner *r, int final);
void mm_rn_count(runner *r, size_t i);
void mm_rn_outcome_free(outcome *oc);
/* Loads a point's scenario into *sc (a struct copy of pt->sc, borrowing
 * its strings and lists, when the point comes loaded) and writes its
 * canonical text into a new string (*canon); 0, or -code with err set.
 * Free *sc with mm_rn_free_point. */
int mm_rn_load_point(const mm_point *pt, mm_scenario *sc, char **canon, mm_err *err);
/* Frees what mm_rn_load_point loaded (nothing of a borrowed scenario). */
void mm_rn_free_point(const mm_point *pt, mm_scenario *sc);
/* Simulates one point; never touches the store. */
void mm_rn_simulate(const mm_point *pt, outcome *oc);
/* Stores one outcome and fills r->res[i]; -code when the store fails. */
int mm_rn_store_outcome(const runner *r, mm_store *st, size_t i, const outcome *oc, mm_err *err);
/* Simulates and stores point i. */
int mm_rn_run_one(const runner *r, mm_store *st, size_t i, mm_err *err);
/* The MPI path (runner_mpi.c, only with MMSIM_MPI): rank 0 got plan_rc from
 * planning; returns 0 or -code. */
int mm_rn_run_mpi(runner *r, int plan_rc, mm_err *err);

#endif
