/* planstore.c - the `plans` and `plan_candidates` tables (planstore.h):
 * one transaction per plan, one prepared statement reused for every
 * candidate row, so a plan of 100,000 candidates is written in well under a
 * second.  Not for: the schema itself (store.c's migrations create it). */
#include "store/planstore.h"

#include <math.h>
#include <stdio.h>

#include "store/store_private.h"

static int db_fail(const mm_store *st, mm_err *err, const char *what)
{
    char w[64];
    snprintf(w, sizeof w, "writing the plan (%s)", what);
    return mm_store_fail(st, err, MM_EINTERNAL, w);
}

static void bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static void bind_id(sqlite3_stmt *s, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

int mm_store_write_plan(mm_store *st, const mm_plan_record *rec, const mm_plan_row *rows, size_t n,
                        int64_t *plan_id, mm_err *err)
{
    sqlite3 *db = st->db;
    if (!rec->created_at || !rec->version || !rec->scenario_text)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "writing the plan: a required field is missing");
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(st, err, "begin");
    sqlite3_stmt *p = NULL, *c = NULL;
    int rc = 0;
    size_t pruned = 0;
    for (size_t i = 0; i < n; i++)
        pruned += rows[i].status && rows[i].status[0] == 'p';
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO plans(created_at, mmsim_version, scenario_source, scenario, gpus, top_k,"
                           " iterations, candidates, pruned) VALUES (?,?,?,?,?,?,?,?,?)",
                           -1, &p, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO plan_candidates(plan_id, candidate, layout, sets, status, reason, rank,"
                           " estimate_s, estimate_tflops_per_gpu, estimate_mfu, peak_memory_gib, run_id,"
                           " lower_bound_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &c, NULL) != SQLITE_OK) {
        rc = db_fail(st, err, "prepare");
        goto out;
    }
    bind_text(p, 1, rec->created_at);
    bind_text(p, 2, rec->version);
    bind_text(p, 3, rec->scenario_source);
    bind_text(p, 4, rec->scenario_text);
    sqlite3_bind_int(p, 5, rec->gpus);
    sqlite3_bind_int(p, 6, rec->top_k);
    sqlite3_bind_int(p, 7, rec->iterations);
    sqlite3_bind_int64(p, 8, (sqlite3_int64)n);
    sqlite3_bind_int64(p, 9, (sqlite3_int64)pruned);
    if (sqlite3_step(p) != SQLITE_DONE) {
        rc = db_fail(st, err, "plans");
        goto out;
    }
    int64_t id = sqlite3_last_insert_rowid(db);
    for (size_t i = 0; i < n; i++) {
        const mm_plan_row *r = &rows[i];
        sqlite3_reset(c);
        sqlite3_bind_int64(c, 1, id);
        sqlite3_bind_int64(c, 2, r->candidate);
        bind_text(c, 3, r->layout);
        bind_text(c, 4, r->sets);
        bind_text(c, 5, r->status);
        bind_text(c, 6, r->reason);
        bind_id(c, 7, r->rank);
        bind_real(c, 8, r->estimate_s);
        bind_real(c, 9, r->estimate_tflops_per_gpu);
        bind_real(c, 10, r->estimate_mfu);
        bind_real(c, 11, r->peak_memory_gib);
        bind_id(c, 12, r->run_id);
        bind_real(c, 13, r->lower_bound_s);
        if (sqlite3_step(c) != SQLITE_DONE) {
            rc = db_fail(st, err, "plan_candidates");
            goto out;
        }
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        rc = db_fail(st, err, "commit");
        goto out;
    }
    if (plan_id)
        *plan_id = id;
out:
    sqlite3_finalize(p);
    sqlite3_finalize(c);
    if (rc)
        mm_store_rollback(st);
    return rc;
}
