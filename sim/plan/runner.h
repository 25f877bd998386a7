/* runner.h - simulating a list of scenarios ("points") into one SQLite store,
 * with N worker processes on this machine or across MPI ranks, resumably.
 *
 * This is what `mmsim sweep` runs and what the planner's rescoring will run:
 * a point is a scenario file (or the built-in default) plus `--set`-style
 * overrides; the runner loads each point's scenario, skips it when a run
 * with the same canonical text is already in the database (so a restarted
 * sweep resumes where it stopped and never simulates a scenario twice), and
 * simulates the rest.  Each result (run and, for a sweep, its sweep_runs row)
 * is committed in one transaction as soon as it is known, so an interruption
 * (Ctrl-C, kill -9, a crash) loses only the points in flight.
 *
 * Points with equal canonical text are simulated once and share the run.
 * A point whose scenario is invalid (bad key, layout that does not fit the
 * cluster) is a failed point with its message, not an error of the whole
 * batch; an OOM layout is a done point (an answer).  Results do not depend on
 * the number of workers: each scenario is simulated deterministically.
 *
 * Workers (jobs > 1) are fork()ed children, each with its own store
 * connection (WAL, busy timeout); the parent hands out points one at a time
 * over a socket, so slow points do not hold up the rest, and reads results
 * back over a pipe.  On Linux a worker dies with its parent
 * (PR_SET_PDEATHSIG), so a killed sweep leaves no orphan that could write
 * later.  With MPI (mpi_size > 1; only in a build with -Dmpi=enabled) rank 0
 * reads the database and broadcasts the pending points; rank r simulates
 * pending points r, r + size, ...; the other ranks send their results to rank
 * 0, which alone writes the database, so it needs no shared file system.
 *
 * Library code: nothing is printed; progress goes to a callback.
 * Not for: expanding sweep specs (sweep.h) or choosing layouts (the planner). */
#ifndef MM_RUNNER_H
#define MM_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* One scenario to simulate.  Strings belong to whoever built the array.
 * Either a file and overrides (a sweep's points), or the scenario's whole
 * text (the planner's reruns: canonical text, mm_scenario_canonical). */
typedef struct mm_point {
    const char *scenario;     /* scenario file; NULL: the built-in default.  With
                                 text: the name the text is loaded as (errors,
                                 relative paths, runs.scenario_source) */
    const char *const *sets;  /* "dotted.key=YAML value" overrides, in order (after text) */
    int n_sets;
    const char *text;         /* the scenario as YAML text; NULL: read `scenario` */
    /* An already loaded scenario (borrowed; the caller keeps it until
     * mm_runner_run returns): no file or text is read, scenario, sets and
     * text are ignored, and its canonical text still keys the store.  The
     * planner's rescoring passes its candidates this way; forked workers
     * inherit it, and MPI ranks build their own points. */
    const struct mm_scenario *sc;
    const char *label;        /* JSON object of the swept values (sweep_runs.axis_values) */
} mm_point;

typedef enum {
    MM_POINT_PENDING = 0, /* not reached (the batch stopped on an internal error) */
    MM_POINT_RAN,         /* simulated now and stored */
    MM_POINT_SKIPPED,     /* its scenario was already in the database */
    MM_POINT_FAILED       /* invalid scenario or failed simulation; see error */
} mm_point_status;

typedef struct mm_point_result {
    mm_point_status status;
    int64_t run_id;   /* runs.id (RAN, SKIPPED), 0 otherwise */
    int oom;          /* the run's layout did not fit in memory */
    char error[512];  /* FAILED: "file:line: key 'k': message" */
} mm_point_result;

/* What the progress callback sees; counts are over all points. */
typedef struct mm_runner_progress {
    size_t total;    /* points */
    size_t done;     /* finished: ran + skipped + failed */
    size_t ran, skipped, failed, oom;
    size_t to_run;   /* points that need a simulation in this invocation */
    double elapsed_s; /* since the simulations started */
    int final;       /* 1 on the last call */
    int64_t sweep_id; /* the sweep the points are linked to (0: none) */
    int resumed;     /* the sweep was found in the database, not created */
} mm_runner_progress;

typedef void (*mm_runner_progress_fn)(const mm_runner_progress *p, void *ctx);

typedef struct mm_runner_opts {
    const char *db;      /* database file (created when missing) */
    int jobs;            /* worker processes; <= 1 runs in this process */
    int64_t sweep_id;    /* > 0: each point gets a row in this sweep; 0: see below */
    /* With sweep_id 0 and sweep_name set, the sweep with this name, spec and
     * point count is resumed, or created (mm_store_sweep_open); with both
     * unset the points get no sweep_runs rows. */
    const char *sweep_name, *sweep_spec, *sweep_axes;
    const char *version; /* mmsim version written with each run */
    mm_runner_progress_fn progress; /* may be NULL; called after each point */
    void *progress_ctx;
    int mpi_rank, mpi_size; /* mpi_size > 1: MPI mode (MPI_Init done by the caller) */
} mm_runner_opts;

/* Runs the n points: res[0..n) gets each point's result (in MPI mode only
 * on rank 0; other ranks' res stays PENDING) and *summary (may be NULL) the
 * final counts, as the last progress call sees them.  Returns 0 when the
 * batch completed (failed points included), or -code on an internal error
 * (the database cannot be opened or written, no worker can be started);
 * what was committed before stays. */
int mm_runner_run(const mm_runner_opts *o, const mm_point *pts, size_t n,
                  mm_point_result *res, mm_runner_progress *summary, mm_err *err);

/* In MPI mode (o->mpi_size > 1), rank 0's len bytes at buf copied into
 * every rank's buf (collective: every rank calls it with the same len);
 * otherwise nothing happens.  Returns 0, or -MM_EINTERNAL (err set) when
 * MPI mode is asked of a build without MPI.  The planner shares rank 0's
 * reading of the rescored runs this way, so that every rank takes the same
 * next step. */
int mm_runner_bcast(const mm_runner_opts *o, void *buf, size_t len, mm_err *err);

/* True when this library was built with MPI support. */
int mm_runner_have_mpi(void);

/* Current UTC time as ISO-8601 ("2024-05-01T12:00:00Z"); out has >= 21 bytes. */
void mm_runner_now(char *out, size_t len);

#endif
