/* report.h - the queries behind `mmsim report`: the runs of a database,
 * its sweeps, and the points of one sweep with their swept values, each as
 * a table of typed cells that the CLI prints; and one run's per-DP-rank
 * loads.  Every value is a bound
 * parameter (metric names, axis keys, the sweep id): no SQL is spliced
 * from strings.
 * Not for: printing (cli/cmd_report.c) or writing (store.h). */
#ifndef MM_STORE_REPORT_H
#define MM_STORE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/err.h"

typedef enum mm_cell_type { MM_CELL_NULL, MM_CELL_INT, MM_CELL_REAL, MM_CELL_TEXT } mm_cell_type;

typedef struct mm_cell {
    mm_cell_type type;
    int64_t i;  /* MM_CELL_INT */
    double r;   /* MM_CELL_REAL */
    char *text; /* MM_CELL_TEXT (owned) */
} mm_cell;

typedef struct mm_table {
    int ncols;
    char **head;    /* ncols column names (owned) */
    size_t nrows;
    mm_cell *cells; /* nrows x ncols, row by row */
} mm_table;

void mm_table_free(mm_table *t);

/* Opens a database for reading only: it is never created, migrated or
 * written.  Not an SQLite file, a directory, no mmsim schema version, or a
 * newer one -> MM_EINPUT naming the file. */
int mm_store_open_readonly(mm_store **out, const char *path, mm_err *err);

/* The sweeps: sweep, name, points, done, failed, created_at, axes (no rows
 * in a database without sweeps). */
int mm_store_report_sweeps(mm_store *st, mm_table *t, mm_err *err);

/* The runs: run, created_at, model, gpus, oom, then one column per metric
 * (names from mm_store_metric_names; another name -> MM_EINPUT, key
 * --metrics). */
int mm_store_report_runs(mm_store *st, const char *const *metrics, int n_metrics, mm_table *t,
                         mm_err *err);

/* The newest sweep's id, 0 when there is none. */
int mm_store_last_sweep(mm_store *st, int64_t *id, mm_err *err);

/* The points of sweep `id`: point, status, run, one column per swept key,
 * oom, the metrics, error.  No such sweep -> MM_EINPUT (key --sweep). */
int mm_store_report_sweep(mm_store *st, int64_t id, const char *const *metrics, int n_metrics,
                          mm_table *t, mm_err *err);

/* Each LLM DP rank's load per iteration of run `run_id` (0: the newest
 * run): iteration, dp_rank, load_s (seconds, full precision), the
 * numbers `mmsim run --json` prints as dp_rank_load_s.  No such run, or
 * a database older than schema 7 (its runs have no such rows) ->
 * MM_EINPUT (key --dp-load).  A run without the array has no rows. */
int mm_store_report_dp_load(mm_store *st, int64_t run_id, mm_table *t, mm_err *err);

#endif
