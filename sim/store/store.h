/* store.h - the SQLite results store: one row per simulated run in `runs`,
 * with its summary metrics, per-iteration and per-stage rows beside it.
 *
 * Schema (version MM_STORE_SCHEMA_VERSION, kept in PRAGMA user_version;
 * foreign keys are ON for every connection opened here):
 *
 *   runs(id INTEGER PRIMARY KEY, created_at TEXT NOT NULL,
 *        mmsim_version TEXT NOT NULL, scenario_hash TEXT NOT NULL,
 *        scenario_source TEXT, scenario TEXT NOT NULL, model TEXT,
 *        topology TEXT, seed INTEGER NOT NULL, gpus INTEGER,
 *        oom INTEGER NOT NULL, events INTEGER, wall_s REAL)
 *        index runs_scenario_hash on runs(scenario_hash)
 *   metrics(run_id -> runs(id) ON DELETE CASCADE, name TEXT NOT NULL,
 *        value REAL, PRIMARY KEY(run_id, name))
 *        one row per summary metric, named as in mm_store_metric_names
 *   iterations(run_id -> runs(id) ON DELETE CASCADE, iteration INTEGER,
 *        time_s, bubble_fraction, exposed_comm_s, model_flops, hw_flops,
 *        tokens, samples REAL, PRIMARY KEY(run_id, iteration)); version 5
 *        adds load_imbalance, stage_spread_s, version 6 encoder_load_imbalance,
 *        padded_fraction, peak_memory_gib
 *   stages(run_id -> runs(id) ON DELETE CASCADE, stage INTEGER,
 *        busy_s, idle_s, comm_s, memory_gib REAL, PRIMARY KEY(run_id, stage))
 *   (version 2)
 *   sweeps(id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL,
 *        created_at TEXT NOT NULL, points INTEGER NOT NULL, axes TEXT)
 *        spec is the sweep file's text; axes a JSON list of the swept keys
 *   sweep_runs(sweep_id -> sweeps(id) ON DELETE CASCADE, point INTEGER,
 *        run_id -> runs(id) ON DELETE SET NULL (NULL for a failed point),
 *        axis_values TEXT NOT NULL (JSON object: swept key -> value),
 *        status TEXT NOT NULL ('done' | 'failed'), error TEXT,
 *        PRIMARY KEY(sweep_id, point))  index sweep_runs_run on (run_id)
 *        several points (of one or several sweeps) may share a run: a
 *        scenario is simulated once per database
 *   (version 3)
 *   critical_path(run_id -> runs(id) ON DELETE CASCADE, position INTEGER,
 *        rank INTEGER, stage INTEGER, what TEXT NOT NULL, seconds REAL,
 *        share REAL, ops INTEGER, PRIMARY KEY(run_id, position))
 *        the last iteration's critical path (exec/critpath.h), largest
 *        entry first; rank/stage NULL where none (wait, stall)
 *   (version 4)
 *   plans(id, created_at, mmsim_version, scenario_source, scenario, gpus,
 *        top_k, iterations, candidates, pruned) and
 *   plan_candidates(plan_id -> plans(id) ON DELETE CASCADE, candidate,
 *        layout, sets, status, reason, rank, estimate_s,
 *        estimate_tflops_per_gpu, estimate_mfu, peak_memory_gib,
 *        run_id -> runs(id) ON DELETE SET NULL): see store/planstore.h
 *   (version 7)
 *   dp_rank_loads(run_id -> runs(id) ON DELETE CASCADE, iteration INTEGER,
 *        dp_rank INTEGER, load_s REAL, PRIMARY KEY(run_id, iteration,
 *        dp_rank)): each LLM DP rank's compute seconds per iteration
 *        (mm_metrics.dp_rank_load_s); a run without the array has no rows
 *   (version 8)
 *   runs.workload TEXT: the workload file (or "text", "fixed");
 *        runs.model, runs.topology and runs.workload are written relative
 *        to the data folder they were found in (mm_sim_data_relative)
 *   run_layouts(run_id -> runs(id) ON DELETE CASCADE, module TEXT NOT NULL
 *        ('llm' | 'vision' | 'audio'), tp, pp, vpp, cp, dp, ep, zero
 *        INTEGER, PRIMARY KEY(run_id, module)): each module's layout as the
 *        run used it (an encoder without a layout of its own has no row)
 *   views run_summary (one row per run: paths, the layouts as llm_tp ...
 *        audio_zero, the summary metrics as columns) and sweep_summary (one
 *        row per sweep point: the point and its run's run_summary columns);
 *        docs/schema.md lists their columns
 *   (version 10)
 *   iterations.pad_flops REAL: the model FLOPs spent on pad tokens (in
 *        hw_flops; model_flops counts the real tokens only); the metric
 *        padded_flops_fraction, also a run_summary column
 *   (version 11)
 *   stages.host_s, stages.exposed_host_s, stages.data_wait_s and
 *        iterations.data_wait_s, iterations.data_h2d_s REAL: the host's
 *        issue time and the data loader (NULL where not modeled); the
 *        metrics rows host_launch_s, exposed_host_s, data_wait_s,
 *        data_h2d_s, loader_cpu_s, data_shortfall_s, data_workers_needed
 *
 * Every NAN in the metrics ("not known yet", or "no answer" for an OOM
 * layout) is stored as SQL NULL and read back as NAN.  scenario_hash is the
 * 64-bit FNV-1a of the canonical scenario text, as 16 lower-case hex digits;
 * it is an index for finding equal scenarios, not a proof of equality (compare
 * the `scenario` text too, as mm_store_find_run does).  seed and events are
 * uint64 in C and INTEGER (int64) in SQL: values above INT64_MAX are stored
 * as their two's-complement bit pattern, so a cast back to uint64 restores
 * them.
 *
 * Concurrency and interruption: the database is put in WAL mode with a busy
 * timeout of MM_STORE_BUSY_MS, so several processes of a sweep may write to
 * one file at once (each write waits its turn).  Each run is written in ONE
 * transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any error), so a run
 * is either all there or not there at all: a process killed in the middle of
 * a write (Ctrl-C, OOM killer, power loss) leaves the runs committed before
 * it intact and no partial run, because WAL frames without a commit record
 * are ignored when the database is next opened.
 *
 * Refusals (MM_EINPUT, naming the file, which is left byte-for-byte as it
 * was): a file that is not an SQLite database; a database whose schema
 * version is newer than this code knows; an SQLite database with tables but
 * no mmsim schema version (someone else's database); a read-only file; a path
 * that cannot be opened (e.g. its directory does not exist: the store does
 * not create directories).
 *
 * One mm_store is one connection: use it from one thread at a time; open one
 * per process or thread for parallel writers.
 * Every SQL statement of mmsim is in sim/store: the report queries are in
 * store/report.h, the plans in store/planstore.h; the connection itself is
 * not handed out.
 * Not for: timelines (Chrome trace JSON) or CSV export. */
#ifndef MM_STORE_H
#define MM_STORE_H

#include <stdint.h>

#include "exec/metrics.h"
#include "util/err.h"

#define MM_STORE_SCHEMA_VERSION 11
#define MM_STORE_BUSY_MS 60000 /* how long a writer waits for another */

typedef struct mm_store mm_store;

/* What describes a run, besides its metrics.  Strings are copied into the
 * database; NULL for an optional field stores SQL NULL. */
/* One module's layout as a run used it (a row of run_layouts). */
typedef struct mm_run_module {
    char name[8]; /* "llm" | "vision" | "audio" */
    int tp, pp, vpp, cp, dp, ep, zero;
} mm_run_module;

/* What a run is of, besides its scenario text: the files it read, relative
 * to their data folder, and each module's layout.  Plain data (no
 * pointers), so that a sweep worker can send it whole. */
typedef struct mm_run_desc {
    char model[512], topology[512], workload[512];
    int n_modules;
    mm_run_module modules[3];
} mm_run_desc;

typedef struct mm_run_record {
    const char *scenario_text;   /* canonical YAML (mm_scenario_canonical); required */
    const char *scenario_source; /* scenario file, or "<default>"; optional */
    const mm_run_desc *desc;     /* model, topology, workload and layouts
                                    (mm_store_describe_sim); optional: NULL
                                    takes model and topology below and
                                    writes no layouts */
    const char *model;           /* model path, when desc is NULL; optional */
    const char *topology;        /* topology path, when desc is NULL; optional */
    uint64_t seed;
    const char *version;         /* mmsim version (MMSIM_VERSION); required */
    const char *created_at;      /* ISO-8601 UTC, e.g. "2024-05-01T12:00:00Z";
                                    required; the caller supplies it so that
                                    tests are deterministic */
} mm_run_record;

/* Fills d from a prepared simulation: its model, topology and workload
 * files relative to the data folder (mm_sim_data_relative; "text" or
 * "fixed" for a workload without a file) and the layout of the LLM and of
 * each encoder that has one of its own (its zero resolved from
 * train.zero). */
struct mm_sim;
void mm_store_describe_sim(const struct mm_sim *sim, mm_run_desc *d);

/* Names of the summary metrics written to the `metrics` table, in the order
 * of mm_metrics' fields; NULL-terminated. */
extern const char *const mm_store_metric_names[];

/* 64-bit FNV-1a of the NUL-terminated text (offset basis 0xcbf29ce484222325,
 * prime 0x100000001b3). */
uint64_t mm_store_hash(const char *text);
/* The same as 16 lower-case hex digits and a NUL, as stored in scenario_hash. */
void mm_store_hash_hex(const char *text, char out[17]);

/* Opens or creates the database at `path`, sets WAL mode, the busy timeout
 * and foreign keys, and creates or migrates the schema to
 * MM_STORE_SCHEMA_VERSION.  On success *out is the new store; on failure
 * *out is NULL and err says why (see "Refusals" above).  Returns 0 or -code. */
int mm_store_open(mm_store **out, const char *path, mm_err *err);

/* Closes the store (NULL is accepted).  Closing the last connection
 * checkpoints the WAL into the database file. */
void mm_store_close(mm_store *st);

/* Writes one run (rec, and m's summary, iteration and stage rows) in one
 * transaction; on success *run_id (if not NULL) is the new runs.id.  On
 * failure nothing of the run is left in the database and err says why
 * (MM_EINTERNAL: a missing required field, a constraint failure such as two
 * iterations with the same number, a lock held past the busy timeout, I/O).
 * Returns 0 or -code. */
int mm_store_write_run(mm_store *st, const mm_run_record *rec, const mm_metrics *m,
                       int64_t *run_id, mm_err *err);

/* Number of runs in the database. */
int mm_store_count_runs(mm_store *st, int64_t *n, mm_err *err);

/* Reads one summary metric of a run; a stored NULL reads back as NAN.  A run
 * or metric that is not there -> MM_EINPUT with the metric name as key. */
int mm_store_get_metric(mm_store *st, int64_t run_id, const char *name, double *value,
                        mm_err *err);

/* Finds the newest run whose canonical scenario text equals scenario_text
 * (by hash, then by text): *run_id is its id, or 0 when there is none.  For
 * resuming sweeps. */
int mm_store_find_run(mm_store *st, const char *scenario_text, int64_t *run_id,
                      mm_err *err);

/* ---- sweeps (schema version 2) ----
 * A sweep is a named list of points; each point is one scenario.  Its row in
 * sweep_runs is written in the same transaction as its run, so after an
 * interruption a point is either done (with its run) or absent. */

/* Which point of which sweep a run answers. */
typedef struct mm_sweep_link {
    int64_t sweep_id;
    int64_t point;           /* 0-based index in the sweep's expansion */
    const char *axis_values; /* JSON object text; NULL stores "{}" */
} mm_sweep_link;

/* Finds the newest sweep with this name, spec text and point count (*resumed
 * = 1), or creates it (*resumed = 0).  axes may be NULL. */
int mm_store_sweep_open(mm_store *st, const char *name, const char *spec, int64_t points,
                        const char *axes, const char *created_at, int64_t *sweep_id,
                        int *resumed, mm_err *err);

/* In one transaction: if a run with the same canonical scenario text is
 * already there (another process may have committed it meanwhile) it is
 * linked and *reused = 1; otherwise the run is written as mm_store_write_run
 * does; then the point's sweep_runs row (link may be NULL: no row) is set to
 * 'done'.  *run_id is the linked run. */
int mm_store_write_sweep_run(mm_store *st, const mm_sweep_link *link, const mm_run_record *rec,
                             const mm_metrics *m, int64_t *run_id, int *reused, mm_err *err);

/* Sets a point's row: 'done' with run_id when error is NULL, else 'failed'
 * with the message (run_id 0 stores NULL). */
int mm_store_link_sweep_run(mm_store *st, const mm_sweep_link *link, int64_t run_id,
                            const char *error, mm_err *err);

/* A point's row: *status 0 (none), 1 (done; *run_id, 0 if its run was
 * deleted) or 2 (failed). */
int mm_store_sweep_point(mm_store *st, int64_t sweep_id, int64_t point, int64_t *run_id,
                         int *status, mm_err *err);

/* The oom flag of a stored run: *oom 0 or 1; a run that is not there ->
 * MM_EINPUT. */
int mm_store_run_oom(mm_store *st, int64_t run_id, int *oom, mm_err *err);

#endif
