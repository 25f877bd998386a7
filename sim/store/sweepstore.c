/* sweepstore.c - the sweeps and sweep_runs tables (store.h, "sweeps"):
 * opening or resuming a sweep, and writing a point with its run in one
 * transaction, so that after an interruption a point is done with its run
 * or absent.
 * Not for: the schema (store.c's migrations) or reading reports (report.c). */
#include <string.h>

#include "store/store_private.h"
#include "exec/metrics.h"

int mm_store_sweep_open(mm_store *st, const char *name, const char *spec, int64_t points,
                        const char *axes, const char *created_at, int64_t *sweep_id,
                        int *resumed, mm_err *err)
{
    *sweep_id = 0;
    if (resumed)
        *resumed = 0;
    if (!name || !spec || !created_at)
        return mm_err_set(err, MM_EINTERNAL, st->path, 0, NULL,
                          "mm_store_sweep_open: name, spec and created_at are required");
    int rc = mm_store_exec(st, "BEGIN IMMEDIATE", "locking the database", err);
    if (rc < 0)
        return rc;
    sqlite3_stmt *s = NULL;
    rc = mm_store_prepare(st,
        "SELECT id FROM sweeps WHERE name = ?1 AND spec = ?2 AND points = ?3"
        " ORDER BY id DESC LIMIT 1", &s, err);
    if (rc == 0) {
        int b = sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        if (b == SQLITE_OK) b = sqlite3_bind_text(s, 2, spec, -1, SQLITE_STATIC);
        if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 3, points);
        int step = b == SQLITE_OK ? sqlite3_step(s) : b;
        if (step == SQLITE_ROW) {
            *sweep_id = sqlite3_column_int64(s, 0);
            if (resumed)
                *resumed = 1;
        } else if (step != SQLITE_DONE) {
            rc = mm_store_fail(st, err, MM_EINTERNAL, "finding a sweep");
        }
        sqlite3_finalize(s);
    }
    if (rc == 0 && *sweep_id == 0) {
        rc = mm_store_prepare(st,
            "INSERT INTO sweeps(name, spec, created_at, points, axes)"
            " VALUES (?1, ?2, ?3, ?4, ?5)", &s, err);
        if (rc == 0) {
            int b = sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
            if (b == SQLITE_OK) b = sqlite3_bind_text(s, 2, spec, -1, SQLITE_STATIC);
            if (b == SQLITE_OK) b = sqlite3_bind_text(s, 3, created_at, -1, SQLITE_STATIC);
            if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 4, points);
            if (b == SQLITE_OK) b = sqlite3_bind_text(s, 5, axes, -1, SQLITE_STATIC);
            rc = mm_store_step_insert(st, s, b, "writing the sweep", err);
            if (rc == 0)
                *sweep_id = sqlite3_last_insert_rowid(st->db);
            sqlite3_finalize(s);
        }
    }
    if (rc == 0)
        rc = mm_store_exec(st, "COMMIT", "committing the sweep", err);
    if (rc < 0) {
        mm_store_rollback(st);
        *sweep_id = 0;
    }
    return rc;
}

/* INSERT OR REPLACE of one sweep_runs row, inside the caller's transaction:
 * a point that failed before and succeeds now replaces its row. */
static int mm_store_put_link(mm_store *st, const mm_sweep_link *link, int64_t run_id,
                             const char *error, mm_err *err)
{
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "INSERT OR REPLACE INTO sweep_runs(sweep_id, point, run_id, axis_values, status, error)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &s, err);
    if (rc < 0)
        return rc;
    int b = sqlite3_bind_int64(s, 1, link->sweep_id);
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 2, link->point);
    if (b == SQLITE_OK)
        b = run_id > 0 ? sqlite3_bind_int64(s, 3, run_id) : sqlite3_bind_null(s, 3);
    if (b == SQLITE_OK)
        b = sqlite3_bind_text(s, 4, link->axis_values ? link->axis_values : "{}", -1,
                              SQLITE_STATIC);
    if (b == SQLITE_OK)
        b = sqlite3_bind_text(s, 5, error ? "failed" : "done", -1, SQLITE_STATIC);
    if (b == SQLITE_OK) b = sqlite3_bind_text(s, 6, error, -1, SQLITE_STATIC);
    rc = mm_store_step_insert(st, s, b, "writing a sweep point", err);
    sqlite3_finalize(s);
    return rc;
}

int mm_store_write_sweep_run(mm_store *st, const mm_sweep_link *link, const mm_run_record *rec,
                             const mm_metrics *m, int64_t *run_id, int *reused, mm_err *err)
{
    if (reused)
        *reused = 0;
    int rc = mm_store_check_args(st, rec, m, err);
    if (rc < 0)
        return rc;
    rc = mm_store_exec(st, "BEGIN IMMEDIATE", "locking the database", err);
    if (rc < 0)
        return rc;
    /* Looked up under the write lock: a run another process committed since
     * the caller last looked is linked, not written twice. */
    int64_t id = 0;
    rc = mm_store_find_run(st, rec->scenario_text, &id, err);
    if (rc == 0 && id > 0 && reused)
        *reused = 1;
    if (rc == 0 && id == 0)
        rc = mm_store_insert_all(st, rec, m, &id, err);
    if (rc == 0 && link)
        rc = mm_store_put_link(st, link, id, NULL, err);
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

int mm_store_link_sweep_run(mm_store *st, const mm_sweep_link *link, int64_t run_id,
                            const char *error, mm_err *err)
{
    int rc = mm_store_exec(st, "BEGIN IMMEDIATE", "locking the database", err);
    if (rc < 0)
        return rc;
    rc = mm_store_put_link(st, link, run_id, error, err);
    if (rc == 0)
        rc = mm_store_exec(st, "COMMIT", "committing a sweep point", err);
    if (rc < 0)
        mm_store_rollback(st);
    return rc;
}

int mm_store_sweep_point(mm_store *st, int64_t sweep_id, int64_t point, int64_t *run_id,
                         int *status, mm_err *err)
{
    *run_id = 0;
    *status = 0;
    sqlite3_stmt *s = NULL;
    int rc = mm_store_prepare(st,
        "SELECT status, run_id FROM sweep_runs WHERE sweep_id = ?1 AND point = ?2", &s, err);
    if (rc < 0)
        return rc;
    int b = sqlite3_bind_int64(s, 1, sweep_id);
    if (b == SQLITE_OK)
        b = sqlite3_bind_int64(s, 2, point);
    int step = b == SQLITE_OK ? sqlite3_step(s) : b;
    if (step == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(s, 0);
        *status = t && !strcmp((const char *)t, "done") ? 1 : 2;
        *run_id = sqlite3_column_type(s, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 1);
    } else if (step != SQLITE_DONE) {
        rc = mm_store_fail(st, err, MM_EINTERNAL, "reading a sweep point");
    }
    sqlite3_finalize(s);
    return rc;
}

