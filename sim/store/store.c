/* store.c - the SQLite results store: opening (with refusals that leave
 * foreign files untouched), schema creation and migration, and writing one
 * run per transaction.  See store.h for the schema and the guarantees.
 *
 * Opening is ordered so that nothing is written before we know the file is
 * ours: first the 16-byte SQLite header is checked by hand, then the schema
 * version and the table list are read, and only then is the journal mode
 * changed (which rewrites the header) and the schema created.
 * Not for: sweeps' tables (sweepstore.c), plans (planstore.c), report
 * queries (report.c), timelines or CSV. */
#include "store/store.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_private.h"
#include "store/runinfo.h"
#include "exec/metrics.h"

const char *const mm_store_metric_names[] = {
    "iteration_time_s", "tokens_per_s", "samples_per_s", "mfu", "hfu",
    "tflops_per_gpu", "hw_tflops_per_gpu", "bubble_fraction", "exposed_comm_s",
    "peak_memory_gib", "iteration_time_p50_s", "iteration_time_p99_s", "padded_flops_fraction", NULL};

/* Schema migrations: entry i takes a database from version i to i + 1 and is
 * run inside the migration transaction.  To change the schema, append an
 * entry (ALTER TABLE ... / CREATE ...) and bump MM_STORE_SCHEMA_VERSION;
 * never edit an entry that has shipped. */
static const char *const mm_store_migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE runs("
    " id INTEGER PRIMARY KEY,"
    " created_at TEXT NOT NULL,"
    " mmsim_version TEXT NOT NULL,"
    " scenario_hash TEXT NOT NULL,"
    " scenario_source TEXT,"
    " scenario TEXT NOT NULL,"
    " model TEXT,"
    " topology TEXT,"
    " seed INTEGER NOT NULL,"
    " gpus INTEGER,"
    " oom INTEGER NOT NULL CHECK (oom IN (0, 1)),"
    " events INTEGER,"
    " wall_s REAL);"
    "CREATE INDEX runs_scenario_hash ON runs(scenario_hash);"
    "CREATE TABLE metrics("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL,"
    " value REAL,"
    " PRIMARY KEY (run_id, name));"
    "CREATE TABLE iterations("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " iteration INTEGER NOT NULL,"
    " time_s REAL, bubble_fraction REAL, exposed_comm_s REAL,"
    " model_flops REAL, hw_flops REAL, tokens REAL, samples REAL,"
    " PRIMARY KEY (run_id, iteration));"
    "CREATE TABLE stages("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " stage INTEGER NOT NULL,"
    " busy_s REAL, idle_s REAL, comm_s REAL, memory_gib REAL,"
    " PRIMARY KEY (run_id, stage));",
    /* 1 -> 2: sweeps and the runs of each of their points */
    "CREATE TABLE sweeps("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " spec TEXT NOT NULL,"
    " created_at TEXT NOT NULL,"
    " points INTEGER NOT NULL,"
    " axes TEXT);"
    "CREATE TABLE sweep_runs("
    " sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,"
    " point INTEGER NOT NULL,"
    " run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,"
    " axis_values TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('done', 'failed')),"
    " error TEXT,"
    " PRIMARY KEY (sweep_id, point));"
    "CREATE INDEX sweep_runs_run ON sweep_runs(run_id);",
    /* 2 -> 3: the critical path of a run's last iteration */
    "CREATE TABLE IF NOT EXISTS critical_path("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " position INTEGER NOT NULL,"
    " rank INTEGER, stage INTEGER, what TEXT NOT NULL,"
    " seconds REAL, share REAL, ops INTEGER,"
    " PRIMARY KEY (run_id, position));",
    /* 3 -> 4: layout plans (`mmsim plan`, sim/store/planstore.h) and every
     * candidate each considered, pruned ones with the reason */
    "CREATE TABLE IF NOT EXISTS plans("
    " id INTEGER PRIMARY KEY,"
    " created_at TEXT NOT NULL,"
    " mmsim_version TEXT NOT NULL,"
    " scenario_source TEXT,"
    " scenario TEXT NOT NULL,"
    " gpus INTEGER NOT NULL,"
    " top_k INTEGER NOT NULL,"
    " iterations INTEGER NOT NULL,"
    " candidates INTEGER NOT NULL,"
    " pruned INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS plan_candidates("
    " plan_id INTEGER NOT NULL REFERENCES plans(id) ON DELETE CASCADE,"
    " candidate INTEGER NOT NULL,"
    " layout TEXT NOT NULL,"
    " sets TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('pruned', 'estimated', 'simulated', 'failed')),"
    " reason TEXT,"
    " rank INTEGER,"
    " estimate_s REAL, estimate_tflops_per_gpu REAL, estimate_mfu REAL, peak_memory_gib REAL,"
    " run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,"
    " PRIMARY KEY (plan_id, candidate));"
    "CREATE INDEX IF NOT EXISTS plan_candidates_run ON plan_candidates(run_id);",
    /* 4 -> 5: why an iteration of a modality-mixed workload took its time
     * (the load balancing metrics): DP load max/mean and the spread of the stages' compute */
    ("ALTER TABLE iterations ADD COLUMN load_imbalance REAL;"
     "ALTER TABLE iterations ADD COLUMN stage_spread_s REAL;"), /* one entry (clang asks) */
    /* 5 -> 6: multimodal fidelity: encoder ranks' max/mean
     * compute, the padded-token fraction, the iteration's memory peak */
    ("ALTER TABLE iterations ADD COLUMN encoder_load_imbalance REAL;"
     "ALTER TABLE iterations ADD COLUMN padded_fraction REAL;"
     "ALTER TABLE iterations ADD COLUMN peak_memory_gib REAL;"), /* one entry */
    /* 6 -> 7: each LLM DP rank's load per iteration (run --json's
     * dp_rank_load_s; iterations.load_imbalance is max / mean of a row) */
    "CREATE TABLE IF NOT EXISTS dp_rank_loads("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " iteration INTEGER NOT NULL,"
    " dp_rank INTEGER NOT NULL,"
    " load_s REAL,"
    " PRIMARY KEY (run_id, iteration, dp_rank));",
    /* 7 -> 8: what a run is of, queryable: its workload file, each
     * module's layout (run_layouts, filled in for older runs from their
     * scenario text by mm_store_backfill_v8), and the views a user queries,
     * one row per run (run_summary) and per sweep point (sweep_summary) */
    "ALTER TABLE runs ADD COLUMN workload TEXT;"
    "CREATE TABLE IF NOT EXISTS run_layouts("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " module TEXT NOT NULL CHECK (module IN ('llm', 'vision', 'audio')),"
    " tp INTEGER, pp INTEGER, vpp INTEGER, cp INTEGER, dp INTEGER, ep INTEGER, zero INTEGER,"
    " PRIMARY KEY (run_id, module));"
    "CREATE VIEW IF NOT EXISTS run_summary AS SELECT"
    " r.id AS run_id, r.created_at, r.mmsim_version, r.scenario_source, r.model, r.topology,"
    " r.workload, r.seed, r.gpus, r.oom,"
    " l.tp AS llm_tp, l.pp AS llm_pp, l.vpp AS llm_vpp, l.cp AS llm_cp,"
    " l.dp AS llm_dp, l.ep AS llm_ep, l.zero AS llm_zero, v.tp AS vision_tp,"
    " v.pp AS vision_pp, v.vpp AS vision_vpp, v.cp AS vision_cp, v.dp AS vision_dp,"
    " v.ep AS vision_ep, v.zero AS vision_zero, a.tp AS audio_tp, a.pp AS audio_pp,"
    " a.vpp AS audio_vpp, a.cp AS audio_cp, a.dp AS audio_dp, a.ep AS audio_ep,"
    " a.zero AS audio_zero"
    " , m.iteration_time_s, m.tokens_per_s, m.samples_per_s, m.mfu, m.hfu, m.tflops_per_gpu,"
    " m.hw_tflops_per_gpu, m.bubble_fraction, m.exposed_comm_s, m.peak_memory_gib,"
    " m.iteration_time_p50_s, m.iteration_time_p99_s, r.events, r.wall_s, r.scenario_hash"
    " FROM runs r"
    " LEFT JOIN run_layouts l ON l.run_id = r.id AND l.module = 'llm'"
    " LEFT JOIN run_layouts v ON v.run_id = r.id AND v.module = 'vision'"
    " LEFT JOIN run_layouts a ON a.run_id = r.id AND a.module = 'audio'"
    " LEFT JOIN (SELECT run_id,"
    " max(CASE name WHEN 'iteration_time_s' THEN value END) AS iteration_time_s,"
    " max(CASE name WHEN 'tokens_per_s' THEN value END) AS tokens_per_s,"
    " max(CASE name WHEN 'samples_per_s' THEN value END) AS samples_per_s,"
    " max(CASE name WHEN 'mfu' THEN value END) AS mfu,"
    " max(CASE name WHEN 'hfu' THEN value END) AS hfu,"
    " max(CASE name WHEN 'tflops_per_gpu' THEN value END) AS tflops_per_gpu,"
    " max(CASE name WHEN 'hw_tflops_per_gpu' THEN value END) AS hw_tflops_per_gpu,"
    " max(CASE name WHEN 'bubble_fraction' THEN value END) AS bubble_fraction,"
    " max(CASE name WHEN 'exposed_comm_s' THEN value END) AS exposed_comm_s,"
    " max(CASE name WHEN 'peak_memory_gib' THEN value END) AS peak_memory_gib,"
    " max(CASE name WHEN 'iteration_time_p50_s' THEN value END) AS iteration_time_p50_s,"
    " max(CASE name WHEN 'iteration_time_p99_s' THEN value END) AS iteration_time_p99_s"
    " FROM metrics GROUP BY run_id) m ON m.run_id = r.id;"
    "CREATE VIEW IF NOT EXISTS sweep_summary AS SELECT"
    " sr.sweep_id, s.name AS sweep_name, sr.point, sr.axis_values, sr.status, sr.error, rs.*"
    " FROM sweep_runs sr JOIN sweeps s ON s.id = sr.sweep_id"
    " LEFT JOIN run_summary rs ON rs.run_id = sr.run_id;",
    /* 8 -> 9: a plan's candidates may be 'tied' (the same pre-score as a
     * better-placed one) or 'bounded' (proven slower by a lower bound,
     * lower_bound_s): SQLite cannot change a CHECK, so the table is copied */
    "CREATE TABLE plan_candidates_v9("
    " plan_id INTEGER NOT NULL REFERENCES plans(id) ON DELETE CASCADE,"
    " candidate INTEGER NOT NULL,"
    " layout TEXT NOT NULL,"
    " sets TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('pruned', 'estimated', 'simulated', 'failed', 'tied', 'bounded')),"
    " reason TEXT,"
    " rank INTEGER,"
    " estimate_s REAL, estimate_tflops_per_gpu REAL, estimate_mfu REAL, peak_memory_gib REAL,"
    " run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,"
    " lower_bound_s REAL,"
    " PRIMARY KEY (plan_id, candidate));"
    "INSERT INTO plan_candidates_v9(plan_id, candidate, layout, sets, status, reason, rank, estimate_s,"
    " estimate_tflops_per_gpu, estimate_mfu, peak_memory_gib, run_id)"
    " SELECT plan_id, candidate, layout, sets, status, reason, rank, estimate_s, estimate_tflops_per_gpu,"
    " estimate_mfu, peak_memory_gib, run_id FROM plan_candidates;"
    "DROP TABLE plan_candidates;"
    "ALTER TABLE plan_candidates_v9 RENAME TO plan_candidates;"
    "CREATE INDEX IF NOT EXISTS plan_candidates_run ON plan_candidates(run_id);",
    /* 9 -> 10: an iteration's model FLOPs count the real tokens only; the
     * pad tokens' (in hw_flops) get their own column, and the summary views
     * the padded_flops_fraction metric */
    "ALTER TABLE iterations ADD COLUMN pad_flops REAL;"
    /* and the summary views carry padded_flops_fraction */
    "DROP VIEW IF EXISTS sweep_summary;"
    "DROP VIEW IF EXISTS run_summary;"
    "CREATE VIEW run_summary AS SELECT"
    " r.id AS run_id, r.created_at, r.mmsim_version, r.scenario_source, r.model, r.topology,"
    " r.workload, r.seed, r.gpus, r.oom,"
    " l.tp AS llm_tp, l.pp AS llm_pp, l.vpp AS llm_vpp, l.cp AS llm_cp,"
    " l.dp AS llm_dp, l.ep AS llm_ep, l.zero AS llm_zero, v.tp AS vision_tp,"
    " v.pp AS vision_pp, v.vpp AS vision_vpp, v.cp AS vision_cp, v.dp AS vision_dp,"
    " v.ep AS vision_ep, v.zero AS vision_zero, a.tp AS audio_tp, a.pp AS audio_pp,"
    " a.vpp AS audio_vpp, a.cp AS audio_cp, a.dp AS audio_dp, a.ep AS audio_ep,"
    " a.zero AS audio_zero"
    " , m.iteration_time_s, m.tokens_per_s, m.samples_per_s, m.mfu, m.hfu, m.tflops_per_gpu,"
    " m.hw_tflops_per_gpu, m.bubble_fraction, m.exposed_comm_s, m.peak_memory_gib,"
    " m.iteration_time_p50_s, m.iteration_time_p99_s, m.padded_flops_fraction, r.events, r.wall_s, r.scenario_hash"
    " FROM runs r"
    " LEFT JOIN run_layouts l ON l.run_id = r.id AND l.module = 'llm'"
    " LEFT JOIN run_layouts v ON v.run_id = r.id AND v.module = 'vision'"
    " LEFT JOIN run_layouts a ON a.run_id = r.id AND a.module = 'audio'"
    " LEFT JOIN (SELECT run_id,"
    " max(CASE name WHEN 'iteration_time_s' THEN value END) AS iteration_time_s,"
    " max(CASE name WHEN 'tokens_per_s' THEN value END) AS tokens_per_s,"
    " max(CASE name WHEN 'samples_per_s' THEN value END) AS samples_per_s,"
    " max(CASE name WHEN 'mfu' THEN value END) AS mfu,"
    " max(CASE name WHEN 'hfu' THEN value END) AS hfu,"
    " max(CASE name WHEN 'tflops_per_gpu' THEN value END) AS tflops_per_gpu,"
    " max(CASE name WHEN 'hw_tflops_per_gpu' THEN value END) AS hw_tflops_per_gpu,"
    " max(CASE name WHEN 'bubble_fraction' THEN value END) AS bubble_fraction,"
    " max(CASE name WHEN 'exposed_comm_s' THEN value END) AS exposed_comm_s,"
    " max(CASE name WHEN 'peak_memory_gib' THEN value END) AS peak_memory_gib,"
    " max(CASE name WHEN 'iteration_time_p50_s' THEN value END) AS iteration_time_p50_s,"
    " max(CASE name WHEN 'iteration_time_p99_s' THEN value END) AS iteration_time_p99_s,"
    " max(CASE name WHEN 'padded_flops_fraction' THEN value END) AS padded_flops_fraction"
    " FROM metrics GROUP BY run_id) m ON m.run_id = r.id;"
    "CREATE VIEW sweep_summary AS SELECT"
    " sr.sweep_id, s.name AS sweep_name, sr.point, sr.axis_values, sr.status, sr.error, rs.*"
    " FROM sweep_runs sr JOIN sweeps s ON s.id = sr.sweep_id"
    " LEFT JOIN run_summary rs ON rs.run_id = sr.run_id;",
    /* 10 -> 11: the host and the data loader per stage and per iteration
     * (their summaries are rows of metrics, no column) */
    "ALTER TABLE stages ADD COLUMN host_s REAL;"
    "ALTER TABLE stages ADD COLUMN exposed_host_s REAL;"
    "ALTER TABLE stages ADD COLUMN data_wait_s REAL;"
    "ALTER TABLE iterations ADD COLUMN data_wait_s REAL;"
    "ALTER TABLE iterations ADD COLUMN data_h2d_s REAL;",
};
_Static_assert(sizeof mm_store_migrations / sizeof mm_store_migrations[0] ==
                   MM_STORE_SCHEMA_VERSION,
               "one migration per schema version");

uint64_t mm_store_hash(const char *text)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

void mm_store_hash_hex(const char *text, char out[17])
{
    static const char digits[] = "0123456789abcdef";
    uint64_t h = mm_store_hash(text);
    for (int i = 15; i >= 0; i--) {
        out[i] = digits[h & 0xf];
        h >>= 4;
    }
    out[16] = '\0';
}

int mm_store_fail(const mm_store *st, mm_err *err, int code, const char *what)
{
    int ext = sqlite3_extended_errcode(st->db), prim = ext & 0xff;
    const char *hint = prim == SQLITE_FULL    ? " (the disk or a file-size limit is full; "
                                                "the database was left as it was)"
                       : prim == SQLITE_IOERR ? " (an I/O error; the database was left as it was)"
                                              : "";
    return mm_err_set(err, code, st->path, 0, NULL, "%s: %s%s", what, sqlite3_errmsg(st->db), hint);
}

/* Does the file start like an SQLite database?  Compares as many bytes of
 * the 16-byte magic as the file has, so a missing or empty file (which
 * SQLite turns into a new database) passes, and so does a file another
 * process is creating right now.  An unreadable path passes too: opening it
 * then fails with SQLite's own message. */
static int mm_store_header_ok(const char *path)
{
    static const char magic[16] = "SQLite format 3"; /* and its NUL */
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1;
    char buf[16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return memcmp(buf, magic, n) == 0;
}

int mm_store_check_path(const char *path, int must_exist, mm_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT && !must_exist) {
            /* A new database: its folder must be there (the CLI makes it,
             * every missing level, before it opens the store). */
            const char *slash = strrchr(path, '/');
            char dir[1024];
            if (!slash || slash == path)
                snprintf(dir, sizeof dir, "%s", slash ? "/" : ".");
            else
                snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
            if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
                return mm_err_set(err, MM_EINPUT, path, 0, NULL,
                                  "cannot create the database: its folder '%s' does not exist",
                                  dir);
            return 0;
        }
        return mm_err_set(err, MM_EINPUT, path, 0, NULL, "cannot open the database: %s",
                          strerror(errno));
    }
    if (S_ISDIR(sb.st_mode))
        return mm_err_set(err, MM_EINPUT, path, 0, NULL,
                          "a directory, not a database file (give a file name, e.g. %s/mmsim.db)",
                          path);
    if (!S_ISREG(sb.st_mode))
        return mm_err_set(err, MM_EINPUT, path, 0, NULL,
                          "not a regular file (a device, FIFO or socket); refused");
    if (!mm_store_header_ok(path))
        return mm_err_set(err, MM_EINPUT, path, 0, NULL,
                          "not an SQLite database (left untouched)");
    return 0;
}

/* Runs a statement returning one row of n integers (a pragma, a count). */
static int mm_store_query_ints(mm_store *st, const char *sql, int64_t *v, int n, mm_err *err)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            for (int i = 0; i < n; i++)
                v[i] = sqlite3_column_int64(s, i);
            rc = SQLITE_OK;
        }
    }
    int ret = 0;
    if (rc != SQLITE_OK && (rc & 0xff) == SQLITE_NOTADB)
        ret = mm_err_set(err, MM_EINPUT, st->path, 0, NULL,
                         "not an SQLite database (left untouched)");
    else if (rc != SQLITE_OK)
        ret = mm_store_fail(st, err, MM_EINTERNAL, "reading the database");
    sqlite3_finalize(s);
    return ret;
}

int mm_store_exec(mm_store *st, const char *sql, const char *what, mm_err *err)
{
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return mm_store_fail(st, err, MM_EINTERNAL, what);
    return 0;
}

void mm_store_rollback(mm_store *st)
{
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Checks that an existing database is one we may use, before anything is
 * written to it. */
static int mm_store_check_version(mm_store *st, mm_err *err)
{
    /* One statement, so one snapshot: another process may be creating the
     * schema right now, and must not be caught between its tables and its
     * version. */
    int64_t v[2] = {0, 0};
    int rc = mm_store_query_ints(st,
                                 "SELECT (SELECT user_version FROM pragma_user_version),"
                                 " (SELECT count(*) FROM sqlite_master)", v, 2, err);
    if (rc < 0)
        return rc;
    int64_t version = v[0], tables = v[1];
    if (version > MM_STORE_SCHEMA_VERSION)
        return mm_err_set(err, MM_EINPUT, st->path, 0, NULL,
                          "schema version %lld is newer than this mmsim knows (%d); "
                          "use a newer mmsim (the file was left untouched)",
                          (long long)version, MM_STORE_SCHEMA_VERSION);
    if (version < 0)
        return mm_err_set(err, MM_EINPUT, st->path, 0, NULL,
                          "schema version %lld is not one of mmsim's (left untouched)",
                          (long long)version);
    if (version == 0 && tables > 0)
        return mm_err_set(err, MM_EINPUT, st->path, 0, NULL,
                          "an SQLite database without an mmsim schema version "
                          "(someone else's?); left untouched");
    return 0;
}

/* Creates or migrates the schema in one transaction.  The version is read
 * again under the write lock: another process may have migrated the file
 * since mm_store_check_version looked. */
static int mm_store_migrate(mm_store *st, mm_err *err)
{
    int rc = mm_store_exec(st, "BEGIN IMMEDIATE", "locking the database", err);
    if (rc < 0)
        return rc;
    int64_t version = 0;
    rc = mm_store_query_ints(st, "PRAGMA user_version", &version, 1, err);
    if (rc == 0 && version > MM_STORE_SCHEMA_VERSION)
        rc = mm_err_set(err, MM_EINPUT, st->path, 0, NULL,
                        "schema version %lld is newer than this mmsim knows (%d)",
                        (long long)version, MM_STORE_SCHEMA_VERSION);
    for (int64_t v = version; rc == 0 && v >= 0 && v < MM_STORE_SCHEMA_VERSION; v++) {
        char pragma[64];
        rc = mm_store_exec(st, mm_store_migrations[v], "creating the schema", err);
        /* the rows version 8 adds, for the runs already there */
        if (rc == 0 && v == 7 && mm_store_backfill_v8(st->db) != SQLITE_OK)
            rc = mm_store_fail(st, err, MM_EINTERNAL, "filling in the runs' layouts");
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %lld", (long long)(v + 1));
        if (rc == 0)
            rc = mm_store_exec(st, pragma, "setting the schema version", err);
    }
    if (rc == 0)
        rc = mm_store_exec(st, "COMMIT", "committing the schema", err);
    if (rc < 0)
        mm_store_rollback(st);
    return rc;
}

/* Puts the database in WAL mode.  Changing the journal mode needs an
 * exclusive lock, and SQLite answers SQLITE_BUSY at once, without calling
 * the busy handler, when waiting could deadlock (another connection of a
 * parallel sweep holds a shared lock while it converts the same file): so
 * the busy timeout alone does not cover it, and the switch is retried here
 * until MM_STORE_BUSY_MS have passed.  A database already in WAL mode (every
 * opening but the first) is left alone.  The mode SQLite reports back may
 * differ from "wal" (":memory:", or a file system without shared memory);
 * the store works either way, only parallel writers are then serialised more
 * coarsely. */
static int mm_store_set_wal(mm_store *st, mm_err *err)
{
    enum { NAP_MS = 5 };
    for (int waited = 0;; waited += NAP_MS) {
        sqlite3_stmt *s = NULL;
        int src = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode", -1, &s, NULL);
        int is_wal = 0;
        if (src == SQLITE_OK && (src = sqlite3_step(s)) == SQLITE_ROW) {
            const unsigned char *mode = sqlite3_column_text(s, 0);
            is_wal = mode && strcmp((const char *)mode, "wal") == 0;
        }
        sqlite3_finalize(s);
        if (is_wal)
            return 0;
        if (src == SQLITE_ROW || src == SQLITE_DONE) {
            src = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s, NULL);
            if (src == SQLITE_OK)
                src = sqlite3_step(s);
            sqlite3_finalize(s);
            if (src == SQLITE_ROW || src == SQLITE_DONE)
                return 0;
        }
        int prim = src & 0xff;
        if ((prim != SQLITE_BUSY && prim != SQLITE_LOCKED) || waited >= MM_STORE_BUSY_MS)
            return mm_store_fail(st, err, MM_EINTERNAL, "setting WAL journal mode");
        sqlite3_sleep(NAP_MS);
    }
}

/* Everything of mm_store_open after the connection exists. */
static int mm_store_setup(mm_store *st, mm_err *err)
{
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, MM_STORE_BUSY_MS);
    /* SQLite falls back to read-only when the file is not writable, and
     * knows it as soon as the file is open; say so before a read of a WAL
     * database fails for want of a writable -shm file. */
    if (sqlite3_db_readonly(st->db, "main") == 1)
        return mm_err_set(err, MM_EINPUT, st->path, 0, NULL,
                          "database is read-only (check the file's permissions)");
    int rc = mm_store_check_version(st, err);
    if (rc < 0)
        return rc;

    rc = mm_store_set_wal(st, err);
    if (rc < 0)
        return rc;
    rc = mm_store_exec(st, "PRAGMA foreign_keys = ON", "enabling foreign keys", err);
    if (rc < 0)
        return rc;
    return mm_store_migrate(st, err);
}

int mm_store_open(mm_store **out, const char *path, mm_err *err)
{
    *out = NULL;
    if (!path)
        return mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "mm_store_open: no path");
    int memory = path[0] == '\0' || strcmp(path, ":memory:") == 0;
    if (!memory) {
        int crc = mm_store_check_path(path, 0, err);
        if (crc < 0)
            return crc;
    }

    mm_store *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return mm_err_set(err, MM_EINTERNAL, path, 0, NULL, "out of memory");
    }
    int rc = sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             NULL);
    if (rc != SQLITE_OK) {
        int ret = st->db ? mm_err_set(err, MM_EINPUT, path, 0, NULL,
                                      "cannot open database: %s (does its directory exist?)",
                                      sqlite3_errmsg(st->db))
                         : mm_err_set(err, MM_EINTERNAL, path, 0, NULL,
                                      "cannot open database: out of memory");
        mm_store_close(st);
        return ret;
    }
    rc = mm_store_setup(st, err);
    if (rc < 0) {
        mm_store_close(st);
        return rc;
    }
    *out = st;
    return 0;
}

void mm_store_close(mm_store *st)
{
    if (!st)
        return;
    sqlite3_close(st->db); /* every statement is finalized by its user */
    free(st->path);
    free(st);
}

sqlite3 *mm_store_sqlite(mm_store *st)
{
    return st->db;
}

/* ---- writing ---------------------------------------------------------- */

int mm_store_bind_real(sqlite3_stmt *s, int i, double v)
{
    return isnan(v) ? sqlite3_bind_null(s, i) : sqlite3_bind_double(s, i, v);
}

/* Steps an INSERT once and resets it for the next row.  The message is taken
 * before the reset, which would otherwise be the one to report it. */
int mm_store_step_insert(mm_store *st, sqlite3_stmt *s, int bind_rc,
                                const char *what, mm_err *err)
{
    int rc = bind_rc == SQLITE_OK ? sqlite3_step(s) : bind_rc;
    int ret = rc == SQLITE_DONE ? 0 : mm_store_fail(st, err, MM_EINTERNAL, what);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return ret;
}

int mm_store_prepare(mm_store *st, const char *sql, sqlite3_stmt **s, mm_err *err)
{
    if (sqlite3_prepare_v2(st->db, sql, -1, s, NULL) != SQLITE_OK)
        return mm_store_fail(st, err, MM_EINTERNAL, "preparing a statement");
    return 0;
}

static int mm_store_insert_run(mm_store *st, const mm_run_record *rec, const mm_metrics *m,
                               int64_t *id, mm_err *err)
{
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "INSERT INTO runs(created_at, mmsim_version, scenario_hash, scenario_source,"
        " scenario, model, topology, seed, gpus, oom, events, wall_s, workload)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)", &s, err);
    if (rc < 0)
        return rc;
    char hash[17];
    mm_store_hash_hex(rec->scenario_text, hash);
    int b = sqlite3_bind_text(s, 1, rec->created_at, -1, SQLITE_STATIC);
    if (b == SQLITE_OK) b = sqlite3_bind_text(s, 2, rec->version, -1, SQLITE_STATIC);
    if (b == SQLITE_OK) b = sqlite3_bind_text(s, 3, hash, -1, SQLITE_STATIC);
    if (b == SQLITE_OK) b = sqlite3_bind_text(s, 4, rec->scenario_source, -1, SQLITE_STATIC);
    if (b == SQLITE_OK) b = sqlite3_bind_text(s, 5, rec->scenario_text, -1, SQLITE_STATIC);
    const mm_run_desc *d = rec->desc;
    if (b == SQLITE_OK) b = sqlite3_bind_text(s, 6, d ? d->model : rec->model, -1, SQLITE_STATIC);
    if (b == SQLITE_OK) b = sqlite3_bind_text(s, 7, d ? d->topology : rec->topology, -1, SQLITE_STATIC);
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 8, (sqlite3_int64)rec->seed);
    if (b == SQLITE_OK) b = sqlite3_bind_int(s, 9, m->gpus);
    if (b == SQLITE_OK) b = sqlite3_bind_int(s, 10, m->oom ? 1 : 0);
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 11, (sqlite3_int64)m->events);
    if (b == SQLITE_OK) b = mm_store_bind_real(s, 12, m->wall_s);
    if (b == SQLITE_OK)
        b = d && d->workload[0] ? sqlite3_bind_text(s, 13, d->workload, -1, SQLITE_STATIC) : sqlite3_bind_null(s, 13);
    rc = mm_store_step_insert(st, s, b, "writing the run", err);
    if (rc == 0)
        *id = sqlite3_last_insert_rowid(st->db);
    sqlite3_finalize(s);
    return rc;
}

static int mm_store_insert_metrics(mm_store *st, int64_t id, const mm_metrics *m, mm_err *err)
{
    /* Same order as mm_store_metric_names. */
    const double values[] = {
        m->iteration_time_s, m->tokens_per_s, m->samples_per_s, m->mfu, m->hfu,
        m->tflops_per_gpu, m->hw_tflops_per_gpu, m->bubble_fraction, m->exposed_comm_s,
        m->peak_memory_gib, m->iteration_time_p50_s, m->iteration_time_p99_s, m->padded_flops_fraction};
    _Static_assert(sizeof values / sizeof values[0] ==
                       sizeof mm_store_metric_names / sizeof mm_store_metric_names[0] - 1,
                   "one value per metric name");
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st, "INSERT INTO metrics(run_id, name, value) VALUES (?1, ?2, ?3)",
                              &s, err);
    for (size_t i = 0; rc == 0 && mm_store_metric_names[i]; i++) {
        int b = sqlite3_bind_int64(s, 1, id);
        if (b == SQLITE_OK)
            b = sqlite3_bind_text(s, 2, mm_store_metric_names[i], -1, SQLITE_STATIC);
        if (b == SQLITE_OK)
            b = mm_store_bind_real(s, 3, values[i]);
        rc = mm_store_step_insert(st, s, b, "writing a metric", err);
    }
    /* memory as allocated and as reserved (peak_memory_gib is the
     * reserved figure), the host's and the loader's figures: rows of the
     * metrics table, not columns of run_summary (docs/schema.md) */
    const struct {
        const char *name;
        double v;
    } mem[] = {{"peak_reserved_gib", m->peak_memory_gib},
               {"peak_allocated_gib", m->peak_allocated_gib},
               /* the host and the data loader (NULL where not modeled) */
               {"host_launch_s", m->oom ? NAN : m->host_launch_s},
               {"exposed_host_s", m->oom ? NAN : m->exposed_host_s},
               {"data_wait_s", m->oom ? NAN : m->data_wait_s},
               {"data_h2d_s", m->oom ? NAN : m->data_h2d_s},
               {"loader_cpu_s", m->oom ? NAN : m->loader_cpu_s},
               {"data_shortfall_s", m->oom ? NAN : m->data_shortfall_s},
               {"data_workers_needed",
                m->oom || isnan(m->data_wait_s) ? NAN : (double)m->data_workers_needed}};
    for (size_t i = 0; rc == 0 && i < sizeof mem / sizeof mem[0]; i++) {
        sqlite3_reset(s);
        int b = sqlite3_bind_int64(s, 1, id);
        if (b == SQLITE_OK)
            b = sqlite3_bind_text(s, 2, mem[i].name, -1, SQLITE_STATIC);
        if (b == SQLITE_OK)
            b = mm_store_bind_real(s, 3, mem[i].v);
        rc = mm_store_step_insert(st, s, b, "writing a metric", err);
    }
    sqlite3_finalize(s);
    return rc;
}

static int mm_store_insert_iters(mm_store *st, int64_t id, const mm_metrics *m, mm_err *err)
{
    if (m->n_iters == 0)
        return 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "INSERT INTO iterations(run_id, iteration, time_s, bubble_fraction, exposed_comm_s,"
        " model_flops, hw_flops, tokens, samples, load_imbalance, stage_spread_s,"
        " encoder_load_imbalance, padded_fraction, peak_memory_gib, pad_flops, data_wait_s, data_h2d_s)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)", &s, err);
    for (int i = 0; rc == 0 && i < m->n_iters; i++) {
        const mm_iter_metrics *it = &m->iters[i];
        int b = sqlite3_bind_int64(s, 1, id);
        if (b == SQLITE_OK) b = sqlite3_bind_int(s, 2, it->iteration);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 3, it->time_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 4, it->bubble_fraction);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 5, it->exposed_comm_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 6, it->model_flops);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 7, it->hw_flops);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 8, it->tokens);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 9, it->samples);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 10, it->load_imbalance);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 11, it->stage_spread_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 12, it->encoder_load_imbalance);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 13, it->padded_fraction);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 14, it->peak_memory_gib);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 15, it->pad_flops);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 16, it->data_wait_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 17, it->data_h2d_s);
        rc = mm_store_step_insert(st, s, b, "writing an iteration", err);
    }
    sqlite3_finalize(s);
    return rc;
}

static int mm_store_insert_stages(mm_store *st, int64_t id, const mm_metrics *m, mm_err *err)
{
    if (m->n_stages == 0)
        return 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "INSERT INTO stages(run_id, stage, busy_s, idle_s, comm_s, memory_gib, host_s, exposed_host_s, data_wait_s)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", &s, err);
    for (int i = 0; rc == 0 && i < m->n_stages; i++) {
        const mm_stage_metrics *sg = &m->stages[i];
        int b = sqlite3_bind_int64(s, 1, id);
        if (b == SQLITE_OK) b = sqlite3_bind_int(s, 2, sg->stage);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 3, sg->busy_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 4, sg->idle_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 5, sg->comm_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 6, sg->memory_gib);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 7, sg->host_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 8, sg->exposed_host_s);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 9, sg->data_wait_s);
        rc = mm_store_step_insert(st, s, b, "writing a stage", err);
    }
    sqlite3_finalize(s);
    return rc;
}

/* Each DP rank's LLM load per iteration (m->dp_rank_load_s, n_iters x
 * dp_ranks), the numbers `run --json` prints as dp_rank_load_s. */
static int mm_store_insert_dp_loads(mm_store *st, int64_t id, const mm_metrics *m, mm_err *err)
{
    if (!m->dp_rank_load_s || m->n_iters <= 0 || m->dp_ranks <= 0)
        return 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "INSERT INTO dp_rank_loads(run_id, iteration, dp_rank, load_s) VALUES (?1, ?2, ?3, ?4)", &s, err);
    for (int i = 0; rc == 0 && i < m->n_iters; i++)
        for (int r = 0; rc == 0 && r < m->dp_ranks; r++) {
            int b = sqlite3_bind_int64(s, 1, id);
            if (b == SQLITE_OK) b = sqlite3_bind_int(s, 2, m->iters[i].iteration);
            if (b == SQLITE_OK) b = sqlite3_bind_int(s, 3, r);
            if (b == SQLITE_OK) b = mm_store_bind_real(s, 4, m->dp_rank_load_s[(size_t)i * m->dp_ranks + r]);
            rc = mm_store_step_insert(st, s, b, "writing a DP rank's load", err);
        }
    sqlite3_finalize(s);
    return rc;
}

/* Critical-path entries, largest first (position 0); rank and stage NULL
 * where the entry has none (-1: waiting, a stall, mixed stages). */
static int mm_store_insert_crit(mm_store *st, int64_t id, const mm_metrics *m, mm_err *err)
{
    if (m->crit.n == 0 || !m->crit.e)
        return 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "INSERT INTO critical_path(run_id, position, rank, stage, what, seconds, share, ops)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &s, err);
    for (int i = 0; rc == 0 && i < m->crit.n; i++) {
        const mm_crit_entry *e = &m->crit.e[i];
        int b = sqlite3_bind_int64(s, 1, id);
        if (b == SQLITE_OK) b = sqlite3_bind_int(s, 2, i);
        if (b == SQLITE_OK) b = e->rank >= 0 ? sqlite3_bind_int(s, 3, e->rank) : sqlite3_bind_null(s, 3);
        if (b == SQLITE_OK) b = e->stage >= 0 ? sqlite3_bind_int(s, 4, e->stage) : sqlite3_bind_null(s, 4);
        if (b == SQLITE_OK) b = sqlite3_bind_text(s, 5, e->what, -1, SQLITE_TRANSIENT);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 6, e->seconds);
        if (b == SQLITE_OK) b = mm_store_bind_real(s, 7, e->share);
        if (b == SQLITE_OK) b = sqlite3_bind_int(s, 8, e->ops);
        rc = mm_store_step_insert(st, s, b, "writing the critical path", err);
    }
    sqlite3_finalize(s);
    return rc;
}

int mm_store_insert_all(mm_store *st, const mm_run_record *rec, const mm_metrics *m,
                               int64_t *id, mm_err *err)
{
    int rc = mm_store_insert_run(st, rec, m, id, err);
    if (rc == 0)
        rc = mm_store_insert_metrics(st, *id, m, err);
    if (rc == 0)
        rc = mm_store_insert_iters(st, *id, m, err);
    if (rc == 0)
        rc = mm_store_insert_stages(st, *id, m, err);
    if (rc == 0)
        rc = mm_store_insert_crit(st, *id, m, err);
    if (rc == 0)
        rc = mm_store_insert_dp_loads(st, *id, m, err);
    if (rc == 0 && mm_store_insert_layouts(st->db, *id, rec->desc) != SQLITE_OK)
        rc = mm_store_fail(st, err, MM_EINTERNAL, "writing the layouts");
    return rc;
}

/* Caller bugs are caught before the transaction starts. */
int mm_store_check_args(const mm_store *st, const mm_run_record *rec,
                               const mm_metrics *m, mm_err *err)
{
    const char *missing = !rec                  ? "rec"
                          : !m                  ? "metrics"
                          : !rec->scenario_text ? "scenario_text"
                          : !rec->version       ? "version"
                          : !rec->created_at    ? "created_at"
                                                : NULL;
    if (missing)
        return mm_err_set(err, MM_EINTERNAL, st->path, 0, NULL,
                          "mm_store_write_run: %s is missing", missing);
    if (m->n_iters < 0 || (m->n_iters > 0 && !m->iters) || m->n_stages < 0 ||
        (m->n_stages > 0 && !m->stages))
        return mm_err_set(err, MM_EINTERNAL, st->path, 0, NULL,
                          "mm_store_write_run: bad iteration or stage arrays");
    return 0;
}

int mm_store_write_run(mm_store *st, const mm_run_record *rec, const mm_metrics *m,
                       int64_t *run_id, mm_err *err)
{
    int rc = mm_store_check_args(st, rec, m, err);
    if (rc < 0)
        return rc;
    rc = mm_store_exec(st, "BEGIN IMMEDIATE", "locking the database", err);
    if (rc < 0)
        return rc;
    int64_t id = 0;
    rc = mm_store_insert_all(st, rec, m, &id, err);
    if (rc == 0)
        rc = mm_store_exec(st, "COMMIT", "committing the run", err);
    if (rc < 0) {
        mm_store_rollback(st);
        return rc;
    }
    if (run_id)
        *run_id = id;
    return 0;
}

/* ---- reading ---------------------------------------------------------- */

int mm_store_count_runs(mm_store *st, int64_t *n, mm_err *err)
{
    return mm_store_query_ints(st, "SELECT count(*) FROM runs", n, 1, err);
}

int mm_store_get_metric(mm_store *st, int64_t run_id, const char *name, double *value,
                        mm_err *err)
{
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st, "SELECT value FROM metrics WHERE run_id = ?1 AND name = ?2",
                              &s, err);
    if (rc < 0)
        return rc;
    int b = sqlite3_bind_int64(s, 1, run_id);
    if (b == SQLITE_OK)
        b = sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
    int step = b == SQLITE_OK ? sqlite3_step(s) : b;
    if (step == SQLITE_ROW)
        *value = sqlite3_column_type(s, 0) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 0);
    else if (step == SQLITE_DONE)
        rc = mm_err_set(err, MM_EINPUT, st->path, 0, name, "run %lld has no metric '%s'",
                        (long long)run_id, name);
    else
        rc = mm_store_fail(st, err, MM_EINTERNAL, "reading a metric");
    sqlite3_finalize(s);
    return rc;
}

int mm_store_find_run(mm_store *st, const char *scenario_text, int64_t *run_id, mm_err *err)
{
    *run_id = 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "SELECT id FROM runs WHERE scenario_hash = ?1 AND scenario = ?2"
        " ORDER BY id DESC LIMIT 1", &s, err);
    if (rc < 0)
        return rc;
    char hash[17];
    mm_store_hash_hex(scenario_text, hash);
    int b = sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
    if (b == SQLITE_OK)
        b = sqlite3_bind_text(s, 2, scenario_text, -1, SQLITE_STATIC);
    int step = b == SQLITE_OK ? sqlite3_step(s) : b;
    if (step == SQLITE_ROW)
        *run_id = sqlite3_column_int64(s, 0);
    else if (step != SQLITE_DONE)
        rc = mm_store_fail(st, err, MM_EINTERNAL, "finding a run");
    sqlite3_finalize(s);
    return rc;
}

int mm_store_run_oom(mm_store *st, int64_t run_id, int *oom, mm_err *err)
{
    *oom = 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st, "SELECT oom FROM runs WHERE id = ?1", &s, err);
    if (rc < 0)
        return rc;
    int step = sqlite3_bind_int64(s, 1, run_id);
    if (step == SQLITE_OK)
        step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        *oom = sqlite3_column_int(s, 0) != 0;
    else if (step == SQLITE_DONE)
        rc = mm_err_set(err, MM_EINPUT, st->path, 0, NULL, "no run %lld", (long long)run_id);
    else
        rc = mm_store_fail(st, err, MM_EINTERNAL, "reading a run");
    sqlite3_finalize(s);
    return rc;
}
