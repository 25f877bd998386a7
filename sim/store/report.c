/* report.c - the read-only queries of `mmsim report` (report.h).  Column
 * names come from the caller's lists, values are bound parameters; the SQL
 * text only grows by placeholders, one per swept key or metric.
 * Not for: writing, or formatting numbers (the CLI does). */
#include "store/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_private.h"

enum { MAX_AXES = 64, MAX_METRICS = 32 };

void mm_table_free(mm_table *t)
{
    if (!t)
        return;
    for (int c = 0; c < t->ncols && t->head; c++)
        free(t->head[c]);
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols && t->cells; i++)
        free(t->cells[i].text);
    free(t->head);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

int mm_store_open_readonly(mm_store **out, const char *path, mm_err *err)
{
    *out = NULL;
    int rc = mm_store_check_path(path, 1, err);
    if (rc < 0)
        return rc;
    mm_store *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return mm_err_set(err, MM_EINTERNAL, path, 0, NULL, "out of memory");
    }
    if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = st->db ? mm_store_fail(st, err, MM_EINPUT, "cannot open the database")
                    : mm_err_set(err, MM_EINTERNAL, path, 0, NULL, "out of memory");
        mm_store_close(st);
        return rc;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, MM_STORE_BUSY_MS);
    sqlite3_stmt *s = NULL;
    rc = mm_store_prepare(st, "PRAGMA user_version", &s, err);
    int64_t version = 0;
    if (rc == 0) {
        int step = sqlite3_step(s);
        if (step == SQLITE_ROW)
            version = sqlite3_column_int64(s, 0);
        else
            rc = mm_store_fail(st, err, (step & 0xff) == SQLITE_NOTADB ? MM_EINPUT : MM_EINTERNAL,
                               "reading the database");
        sqlite3_finalize(s);
    }
    if (rc == 0 && version < 1)
        rc = mm_err_set(err, MM_EINPUT, path, 0, NULL, "not an mmsim database (no schema version)");
    if (rc == 0 && version > MM_STORE_SCHEMA_VERSION)
        rc = mm_err_set(err, MM_EINPUT, path, 0, NULL,
                        "schema version %lld is newer than this mmsim knows (%d)",
                        (long long)version, MM_STORE_SCHEMA_VERSION);
    if (rc < 0) {
        mm_store_close(st);
        return rc;
    }
    *out = st;
    return 0;
}

static int set_heads(mm_table *t, const char *const *names, int n, mm_err *err)
{
    t->head = calloc((size_t)n, sizeof *t->head);
    if (!t->head)
        return mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    t->ncols = n;
    for (int c = 0; c < n; c++)
        if (!(t->head[c] = strdup(names[c])))
            return mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    return 0;
}

/* Reads every row of a prepared, bound statement into t (heads set). */
static int fill(mm_store *st, sqlite3_stmt *s, mm_table *t, mm_err *err)
{
    size_t cap = 0;
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (t->nrows == cap) {
            cap = cap ? 2 * cap : 64;
            mm_cell *cells = realloc(t->cells, cap * (size_t)t->ncols * sizeof *cells);
            if (!cells)
                return mm_err_set(err, MM_EINTERNAL, st->path, 0, NULL, "out of memory");
            t->cells = cells;
        }
        mm_cell *row = t->cells + t->nrows * (size_t)t->ncols;
        memset(row, 0, (size_t)t->ncols * sizeof *row);
        t->nrows++;
        for (int c = 0; c < t->ncols && c < sqlite3_column_count(s); c++) {
            switch (sqlite3_column_type(s, c)) {
            case SQLITE_NULL:
                break;
            case SQLITE_INTEGER:
                row[c].type = MM_CELL_INT;
                row[c].i = sqlite3_column_int64(s, c);
                break;
            case SQLITE_FLOAT:
                row[c].type = MM_CELL_REAL;
                row[c].r = sqlite3_column_double(s, c);
                break;
            default: {
                const unsigned char *v = sqlite3_column_text(s, c);
                row[c].type = MM_CELL_TEXT;
                if (!(row[c].text = strdup(v ? (const char *)v : "")))
                    return mm_err_set(err, MM_EINTERNAL, st->path, 0, NULL, "out of memory");
            }
            }
        }
    }
    return step == SQLITE_DONE ? 0 : mm_store_fail(st, err, MM_EINTERNAL, "reading the database");
}

static int check_metrics(const mm_store *st, const char *const *metrics, int n, mm_err *err)
{
    if (n > MAX_METRICS)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--metrics", "at most %d metrics", MAX_METRICS);
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int k = 0; mm_store_metric_names[k] && !known; k++)
            known = !strcmp(metrics[i], mm_store_metric_names[k]);
        if (!known) {
            const char *near = mm_nearest(metrics[i], mm_store_metric_names);
            return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--metrics", "unknown metric '%s'%s%s%s",
                              metrics[i], near ? " (did you mean '" : "", near ? near : "",
                              near ? "'?)" : "");
        }
    }
    (void)st;
    return 0;
}

/* Appends to a growing SQL text (placeholders only, never values). */
static int sql_add(char *sql, size_t len, const char *text)
{
    size_t n = strlen(sql);
    if (n + strlen(text) + 1 > len)
        return -1;
    memcpy(sql + n, text, strlen(text) + 1);
    return 0;
}

static int version_of(mm_store *st, int64_t *v, mm_err *err)
{
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st, "PRAGMA user_version", &s, err);
    if (rc == 0 && sqlite3_step(s) == SQLITE_ROW)
        *v = sqlite3_column_int64(s, 0);
    else if (rc == 0)
        rc = mm_store_fail(st, err, MM_EINTERNAL, "reading the database");
    sqlite3_finalize(s);
    return rc;
}

int mm_store_report_sweeps(mm_store *st, mm_table *t, mm_err *err)
{
    static const char *const heads[] = {"sweep", "name", "points", "done", "failed",
                                        "created_at", "axes"};
    memset(t, 0, sizeof *t);
    int rc = set_heads(t, heads, 7, err);
    int64_t version = 0;
    if (rc == 0)
        rc = version_of(st, &version, err);
    if (rc < 0 || version < 2)
        return rc;
    sqlite3_stmt *s = NULL;
    rc = mm_store_prepare(st,
        "SELECT s.id, s.name, s.points,"
        " (SELECT count(*) FROM sweep_runs sr WHERE sr.sweep_id = s.id AND sr.status = 'done'),"
        " (SELECT count(*) FROM sweep_runs sr WHERE sr.sweep_id = s.id AND sr.status = 'failed'),"
        " s.created_at, s.axes FROM sweeps s ORDER BY s.id", &s, err);
    if (rc == 0)
        rc = fill(st, s, t, err);
    sqlite3_finalize(s);
    return rc;
}

/* ", (SELECT value FROM metrics WHERE run_id = RUNCOL AND name = ?k)" for
 * each metric, numbered from `first`. */
static int add_metric_cols(char *sql, size_t len, const char *run_col, int n, int first)
{
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char col[160];
        snprintf(col, sizeof col, ", (SELECT value FROM metrics WHERE run_id = %s AND name = ?%d)",
                 run_col, first + i);
        rc = sql_add(sql, len, col);
    }
    return rc;
}

static int bind_names(sqlite3_stmt *s, const char *const *names, int n, int first)
{
    int b = SQLITE_OK;
    for (int i = 0; i < n && b == SQLITE_OK; i++)
        b = sqlite3_bind_text(s, first + i, names[i], -1, SQLITE_STATIC);
    return b;
}

int mm_store_report_runs(mm_store *st, const char *const *metrics, int n_metrics, mm_table *t,
                         mm_err *err)
{
    memset(t, 0, sizeof *t);
    int rc = check_metrics(st, metrics, n_metrics, err);
    if (rc < 0)
        return rc;
    const char *heads[5 + MAX_METRICS] = {"run", "created_at", "model", "gpus", "oom"};
    for (int i = 0; i < n_metrics; i++)
        heads[5 + i] = metrics[i];
    rc = set_heads(t, heads, 5 + n_metrics, err);
    char sql[8192] = "SELECT r.id, r.created_at, r.model, r.gpus, r.oom";
    if (rc == 0 && (add_metric_cols(sql, sizeof sql, "r.id", n_metrics, 1) != 0 ||
                    sql_add(sql, sizeof sql, " FROM runs r ORDER BY r.id") != 0))
        rc = mm_err_set(err, MM_EINTERNAL, st->path, 0, NULL, "report query too long");
    sqlite3_stmt *s = NULL;
    if (rc == 0)
        rc = mm_store_prepare(st, sql, &s, err);
    if (rc == 0 && bind_names(s, metrics, n_metrics, 1) != SQLITE_OK)
        rc = mm_store_fail(st, err, MM_EINTERNAL, "binding the metric names");
    if (rc == 0)
        rc = fill(st, s, t, err);
    sqlite3_finalize(s);
    return rc;
}

int mm_store_last_sweep(mm_store *st, int64_t *id, mm_err *err)
{
    *id = 0;
    int64_t version = 0;
    int rc = version_of(st, &version, err);
    if (rc < 0 || version < 2)
        return rc;
    sqlite3_stmt *s = NULL;
    rc = mm_store_prepare(st, "SELECT max(id) FROM sweeps", &s, err);
    if (rc == 0 && sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        *id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc;
}

/* The swept keys of a sweep, from its JSON list; *found 0 when the sweep is
 * not there.  Keys with a double quote cannot be a JSON path and are left
 * out. */
static int sweep_keys(mm_store *st, int64_t id, char **keys, int *n, int *found, mm_err *err)
{
    *n = 0;
    *found = 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "SELECT 1, NULL FROM sweeps WHERE id = ?1"
        " UNION ALL SELECT 2, j.value FROM sweeps, json_each(sweeps.axes) j"
        " WHERE sweeps.id = ?1 AND json_valid(sweeps.axes) AND j.type = 'text'", &s, err);
    if (rc < 0)
        return rc;
    int step = sqlite3_bind_int64(s, 1, id);
    while (step == SQLITE_OK && (step = sqlite3_step(s)) == SQLITE_ROW) {
        step = SQLITE_OK;
        if (sqlite3_column_int(s, 0) == 1) {
            *found = 1;
            continue;
        }
        const char *k = (const char *)sqlite3_column_text(s, 1);
        if (k && !strchr(k, '"') && *n < MAX_AXES && !(keys[*n] = strdup(k)))
            step = SQLITE_NOMEM;
        else if (k && !strchr(k, '"') && *n < MAX_AXES)
            (*n)++;
    }
    if (step != SQLITE_DONE)
        rc = mm_store_fail(st, err, MM_EINTERNAL, "reading the sweep");
    sqlite3_finalize(s);
    return rc;
}

int mm_store_report_sweep(mm_store *st, int64_t id, const char *const *metrics, int n_metrics,
                          mm_table *t, mm_err *err)
{
    memset(t, 0, sizeof *t);
    int rc = check_metrics(st, metrics, n_metrics, err);
    int64_t version = 0;
    if (rc == 0)
        rc = version_of(st, &version, err);
    char *keys[MAX_AXES];
    int n_keys = 0, found = 0;
    if (rc == 0 && version >= 2 && id > 0)
        rc = sweep_keys(st, id, keys, &n_keys, &found, err);
    if (rc == 0 && !found)
        rc = mm_err_set(err, MM_EINPUT, st->path, 0, "--sweep",
                        "no sweep %lld in this database (mmsim report %s lists them)",
                        (long long)id, st->path);
    const char *heads[5 + MAX_AXES + MAX_METRICS];
    char paths[MAX_AXES][160];
    int nh = 0;
    heads[nh++] = "point";
    heads[nh++] = "status";
    heads[nh++] = "run";
    for (int i = 0; i < n_keys; i++) {
        heads[nh++] = keys[i];
        snprintf(paths[i], sizeof paths[i], "$.\"%s\"", keys[i]);
    }
    heads[nh++] = "oom";
    for (int i = 0; i < n_metrics; i++)
        heads[nh++] = metrics[i];
    heads[nh++] = "error";
    if (rc == 0)
        rc = set_heads(t, heads, nh, err);
    char sql[16384] = "SELECT sr.point, sr.status, sr.run_id";
    for (int i = 0; rc == 0 && i < n_keys; i++) {
        char col[96];
        snprintf(col, sizeof col, ", json_extract(sr.axis_values, ?%d)", 2 + i);
        if (sql_add(sql, sizeof sql, col) != 0)
            rc = -1;
    }
    if (rc == 0 && (sql_add(sql, sizeof sql, ", r.oom") != 0 ||
                    add_metric_cols(sql, sizeof sql, "sr.run_id", n_metrics, 2 + n_keys) != 0 ||
                    sql_add(sql, sizeof sql, ", sr.error FROM sweep_runs sr LEFT JOIN runs r"
                                             " ON r.id = sr.run_id WHERE sr.sweep_id = ?1"
                                             " ORDER BY sr.point") != 0))
        rc = -1;
    if (rc == -1)
        rc = mm_err_set(err, MM_EINTERNAL, st->path, 0, NULL, "report query too long");
    sqlite3_stmt *s = NULL;
    if (rc == 0)
        rc = mm_store_prepare(st, sql, &s, err);
    if (rc == 0) {
        int b = sqlite3_bind_int64(s, 1, id);
        for (int i = 0; i < n_keys && b == SQLITE_OK; i++)
            b = sqlite3_bind_text(s, 2 + i, paths[i], -1, SQLITE_STATIC);
        if (b == SQLITE_OK)
            b = bind_names(s, metrics, n_metrics, 2 + n_keys);
        rc = b == SQLITE_OK ? fill(st, s, t, err)
                            : mm_store_fail(st, err, MM_EINTERNAL, "binding the report query");
    }
    sqlite3_finalize(s);
    for (int i = 0; i < n_keys; i++)
        free(keys[i]);
    if (rc < 0)
        mm_table_free(t);
    return rc;
}

/* The newest run's id, 0 when there is none. */
static int last_run(mm_store *st, int64_t *id, mm_err *err)
{
    *id = 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st, "SELECT max(id) FROM runs", &s, err);
    if (rc == 0 && sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        *id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc;
}

int mm_store_report_dp_load(mm_store *st, int64_t run_id, mm_table *t, mm_err *err)
{
    static const char *const heads[] = {"iteration", "dp_rank", "load_s"};
    memset(t, 0, sizeof *t);
    int64_t version = 0, found = 0;
    int rc = version_of(st, &version, err);
    if (rc == 0 && version < 7)
        rc = mm_err_set(err, MM_EINPUT, st->path, 0, "--dp-load",
                        "schema version %lld has no per-DP-rank loads (stored from version 7 on; "
                        "rerun the scenario with this mmsim)", (long long)version);
    if (rc == 0 && run_id == 0)
        rc = last_run(st, &run_id, err);
    sqlite3_stmt *s = NULL;
    if (rc == 0)
        rc = mm_store_prepare(st, "SELECT count(*) FROM runs WHERE id = ?1", &s, err);
    if (rc == 0 && sqlite3_bind_int64(s, 1, run_id) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        found = sqlite3_column_int64(s, 0);
    else if (rc == 0)
        rc = mm_store_fail(st, err, MM_EINTERNAL, "reading the runs");
    sqlite3_finalize(s);
    s = NULL;
    if (rc == 0 && !found && run_id == 0)
        rc = mm_err_set(err, MM_EINPUT, st->path, 0, "--dp-load", "no run in this database");
    else if (rc == 0 && !found)
        rc = mm_err_set(err, MM_EINPUT, st->path, 0, "--dp-load",
                        "no run %lld in this database (mmsim report %s lists them)", (long long)run_id, st->path);
    if (rc == 0)
        rc = set_heads(t, heads, 3, err);
    if (rc == 0)
        rc = mm_store_prepare(st, "SELECT iteration, dp_rank, load_s FROM dp_rank_loads WHERE run_id = ?1"
                                  " ORDER BY iteration, dp_rank", &s, err);
    if (rc == 0)
        rc = sqlite3_bind_int64(s, 1, run_id) == SQLITE_OK ? fill(st, s, t, err)
                                                           : mm_store_fail(st, err, MM_EINTERNAL, "binding the run");
    sqlite3_finalize(s);
    if (rc < 0)
        mm_table_free(t);
    return rc;
}
