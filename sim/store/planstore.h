/* planstore.h - writing a layout plan (`mmsim plan`, plan/planner.h) into
 * the results store: one row in `plans` and one row per candidate layout in
 * `plan_candidates`, pruned ones with the reason, simulated ones linked to
 * their run (schema version 4, store.h):
 *
 *   plans(id INTEGER PRIMARY KEY, created_at TEXT NOT NULL,
 *        mmsim_version TEXT NOT NULL, scenario_source TEXT,
 *        scenario TEXT NOT NULL (canonical text of the base scenario, the
 *        cluster resized to the plan's GPUs), gpus, top_k, iterations
 *        (of each event-level rescoring), candidates, pruned INTEGER NOT NULL)
 *   plan_candidates(plan_id -> plans(id) ON DELETE CASCADE,
 *        candidate INTEGER (index in the enumeration order),
 *        layout TEXT NOT NULL (the canonical layout string),
 *        sets TEXT NOT NULL (JSON list of the --set overrides that turn the
 *        base scenario into this candidate),
 *        status TEXT NOT NULL: 'pruned' (invalid layout or out of memory;
 *        reason says why), 'estimated' (analytic pre-score only),
 *        'simulated' (rescored event by event: run_id), 'failed' (the
 *        event-level run failed; reason), 'tied' (the same pre-score as a
 *        better-placed candidate; reason names it), 'bounded' (not
 *        simulated: its lower bound exceeds the best simulated time;
 *        reason gives the margin),
 *        reason TEXT, rank INTEGER (1 = best; NULL when pruned or failed),
 *        estimate_s, estimate_tflops_per_gpu, estimate_mfu, peak_memory_gib
 *        REAL (the analytic pre-score; peak memory also for OOM ones),
 *        run_id -> runs(id) ON DELETE SET NULL,
 *        lower_bound_s REAL (the lower bound on its event-level time; from
 *        schema version 8),
 *        PRIMARY KEY(plan_id, candidate))
 *
 * The simulated metrics of a candidate are its run's (join metrics on
 * run_id).  A plan is written in one transaction: all of it or nothing.
 * Not for: choosing layouts (plan/planner.h) or running scenarios. */
#ifndef MM_PLANSTORE_H
#define MM_PLANSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct mm_plan_record {
    const char *created_at;      /* ISO-8601 UTC; required */
    const char *version;         /* mmsim version; required */
    const char *scenario_source; /* optional */
    const char *scenario_text;   /* canonical base scenario; required */
    int gpus, top_k, iterations;
} mm_plan_record;

typedef struct mm_plan_row {
    int64_t candidate;
    const char *layout, *sets; /* required */
    const char *status;        /* "pruned" | "estimated" | "simulated" | "failed" */
    const char *reason;        /* NULL stores NULL */
    int64_t rank;              /* 0 stores NULL */
    double estimate_s, estimate_tflops_per_gpu, estimate_mfu, peak_memory_gib; /* NAN: NULL */
    double lower_bound_s;  /* the candidate's lower bound on its time; NAN: NULL */
    int64_t run_id;            /* 0 stores NULL */
} mm_plan_row;

/* Writes the plan and its n candidate rows in one transaction; *plan_id
 * (may be NULL) receives plans.id.  Returns 0 or -code (MM_EINTERNAL). */
int mm_store_write_plan(mm_store *st, const mm_plan_record *rec, const mm_plan_row *rows, size_t n,
                        int64_t *plan_id, mm_err *err);

#endif
