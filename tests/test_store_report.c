/* test_store_report.c - Check suite for what is read out of the SQLite
 * results store: the report queries (store/report.h: read-only refusals,
 * bound metrics and sweep keys), the per-DP-rank loads (read back bit for
 * bit, equal to run --json's) and the migration from schema 6.
 * Every test works in its own mkdtemp directory, removed afterwards.
 * Not for: opening (test_store.c) or writing runs (test_store_write.c). */
#include "store_common.h"

/* ---- the report queries (store/report.h) ---- */

START_TEST(test_report_readonly_refusals)
{
    char path[512];
    mm_store *st = NULL;
    mm_err err;
    path_in(path, sizeof path, "missing.db");
    ck_assert_int_eq(mm_store_open_readonly(&st, path, &err), -MM_EINPUT);
    ck_assert(!exists(path)); /* never created */
    ck_assert_int_eq(mm_store_open_readonly(&st, tmpdir, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "a directory"));
    path_in(path, sizeof path, "text.db");
    spit(path, "hello\n", 6);
    ck_assert_int_eq(mm_store_open_readonly(&st, path, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "not an SQLite database"));
    path_in(path, sizeof path, "foreign.db");
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    ck_assert_int_eq(mm_store_open_readonly(&st, path, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "no schema version"));
    ck_assert_ptr_null(st);
}
END_TEST

START_TEST(test_report_runs_bound_metrics)
{
    char path[512];
    path_in(path, sizeof path, "report.db");
    mm_store *st = open_ok(path);
    int64_t a = write_ok(st, scenario_a, 1);
    write_ok(st, scenario_b, 2);
    int oom = -1;
    mm_err err;
    ck_assert_int_eq(mm_store_run_oom(st, a, &oom, &err), 0);
    ck_assert_int_eq(oom, 0);
    ck_assert_int_eq(mm_store_run_oom(st, 999, &oom, &err), -MM_EINPUT);
    mm_store_close(st);

    ck_assert_int_eq(mm_store_open_readonly(&st, path, &err), 0);
    const char *metrics[] = {"iteration_time_s", "mfu"};
    mm_table t;
    ck_assert_int_eq(mm_store_report_runs(st, metrics, 2, &t, &err), 0);
    ck_assert_int_eq(t.ncols, 7);
    ck_assert_str_eq(t.head[5], "iteration_time_s");
    ck_assert_uint_eq(t.nrows, 2);
    double expect = 0;
    mm_store *rw = open_ok(path);
    ck_assert_int_eq(mm_store_get_metric(rw, a, "mfu", &expect, &err), 0);
    mm_store_close(rw);
    ck_assert_int_eq(t.cells[6].type, MM_CELL_REAL);
    ck_assert_double_eq(t.cells[6].r, expect);
    mm_table_free(&t);
    /* A name that would change the query if it were spliced into SQL is
     * just an unknown metric, and the tables are untouched. */
    const char *evil[] = {"mfu') AS x FROM runs; DROP TABLE runs; --"};
    ck_assert_int_eq(mm_store_report_runs(st, evil, 1, &t, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "--metrics");
    ck_assert_int_eq(mm_store_report_sweeps(st, &t, &err), 0);
    ck_assert_uint_eq(t.nrows, 0);
    mm_table_free(&t);
    int64_t last = -1;
    ck_assert_int_eq(mm_store_last_sweep(st, &last, &err), 0);
    ck_assert_int_eq(last, 0);
    ck_assert_int_eq(mm_store_report_sweep(st, 1, metrics, 2, &t, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "--sweep");
    mm_store_close(st);
    st = open_ok(path);
    ck_assert_int_eq(count_runs(st), 2);
    mm_store_close(st);
}
END_TEST

START_TEST(test_report_sweep_keys_bound)
{
    char path[512];
    path_in(path, sizeof path, "sweep-report.db");
    mm_store *st = open_ok(path);
    mm_err err;
    int64_t sid = 0;
    /* A key with a quote and SQL in it: bound as a JSON path, not spliced. */
    ck_assert_int_eq(mm_store_sweep_open(st, "s", "spec", 2, "[\"seed\", \"it's; DROP TABLE runs\"]",
                                         "2026-01-01T00:00:00Z", &sid, NULL, &err), 0);
    sample s;
    for (int p = 0; p < 2; p++) {
        sample_fill(&s, p + 1);
        mm_run_record rec = record(p ? scenario_b : scenario_a);
        char axis[128];
        snprintf(axis, sizeof axis, "{\"seed\": %d, \"it's; DROP TABLE runs\": \"v%d\"}", p + 7, p);
        mm_sweep_link link = {.sweep_id = sid, .point = p, .axis_values = axis};
        ck_assert_int_eq(mm_store_write_sweep_run(st, &link, &rec, &s.m, NULL, NULL, &err), 0);
    }
    mm_store_close(st);
    ck_assert_int_eq(mm_store_open_readonly(&st, path, &err), 0);
    int64_t last = 0;
    ck_assert_int_eq(mm_store_last_sweep(st, &last, &err), 0);
    ck_assert_int_eq(last, sid);
    const char *metrics[] = {"tokens_per_s"};
    mm_table t;
    ck_assert_int_eq(mm_store_report_sweep(st, sid, metrics, 1, &t, &err), 0);
    ck_assert_int_eq(t.ncols, 8); /* point status run seed key oom tokens_per_s error */
    ck_assert_str_eq(t.head[4], "it's; DROP TABLE runs");
    ck_assert_uint_eq(t.nrows, 2);
    ck_assert_int_eq(t.cells[3].type, MM_CELL_INT);
    ck_assert_int_eq(t.cells[3].i, 7);
    ck_assert_int_eq(t.cells[8 + 4].type, MM_CELL_TEXT);
    ck_assert_str_eq(t.cells[8 + 4].text, "v1");
    mm_table_free(&t);
    ck_assert_int_eq(mm_store_report_sweeps(st, &t, &err), 0);
    ck_assert_uint_eq(t.nrows, 1);
    ck_assert_int_eq(t.cells[3].i, 2); /* done */
    mm_table_free(&t);
    mm_store_close(st);
}
END_TEST

/* ---- per-DP-rank loads (schema 7) ------------------------------------ */

/* The library's round trip: every (iteration, rank) of the array comes
 * back bit for bit, the unknown one as NULL, in iteration-rank order. */
START_TEST(test_dp_loads_read_back)
{
    char path[512];
    path_in(path, sizeof path, "dp.db");
    mm_store *st = open_ok(path);
    write_ok(st, scenario_a, 0);
    int64_t b = write_ok(st, scenario_b, 2);
    mm_store_close(st);
    mm_err err;
    ck_assert_int_eq(mm_store_open_readonly(&st, path, &err), 0);
    mm_table t;
    sample s;
    sample_fill(&s, 2);
    ck_assert_int_eq(mm_store_report_dp_load(st, 0, &t, &err), 0); /* 0: the newest, run b */
    ck_assert_int_eq(t.ncols, 3);
    ck_assert_str_eq(t.head[2], "load_s");
    ck_assert_uint_eq(t.nrows, N_ITERS * N_DP);
    for (size_t r = 0; r < t.nrows; r++) {
        const mm_cell *c = &t.cells[r * 3];
        ck_assert_int_eq(c[0].i, (int64_t)r / N_DP);
        ck_assert_int_eq(c[1].i, (int64_t)r % N_DP);
        if (isnan(s.dp_load[r]))
            ck_assert_int_eq(c[2].type, MM_CELL_NULL);
        else
            ck_assert(c[2].type == MM_CELL_REAL && c[2].r == s.dp_load[r]);
    }
    mm_table_free(&t);
    ck_assert_int_eq(mm_store_report_dp_load(st, b + 1, &t, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "--dp-load");
    mm_store_close(st);
    st = open_ok(path); /* deleting a run deletes its loads */
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM dp_rank_loads"), 2 * N_ITERS * N_DP);
    ck_assert_int_eq(sqlite3_exec(mm_store_sqlite(st), "DELETE FROM runs WHERE id = 1", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM dp_rank_loads"), N_ITERS * N_DP);
    mm_store_close(st);
}
END_TEST

/* Numbers after `"dp_rank_load_s": [` in run --json (rows of n), or the
 * load_s column of report --dp-load --csv, into v; returns how many. */
static int json_loads(const char *json, double *v, int max)
{
    const char *p = strstr(json, "\"dp_rank_load_s\": [");
    ck_assert_ptr_nonnull(p);
    p += strlen("\"dp_rank_load_s\": [");
    int n = 0;
    while (*p && *p != '\n' && n < max) {
        char *end;
        if (*p == '[' || *p == ',' || *p == ' ' || *p == ']') {
            p++;
            continue;
        }
        v[n++] = strtod(p, &end);
        ck_assert_ptr_ne(end, p);
        p = end;
    }
    return n;
}

static int csv_loads(const char *csv, double *v, int max)
{
    ck_assert_ptr_eq(strstr(csv, "iteration,dp_rank,load_s\n"), csv);
    int n = 0;
    for (const char *p = strchr(csv, '\n'); p && p[1] && n < max; p = strchr(p + 1, '\n')) {
        int it, rank;
        ck_assert_int_eq(sscanf(p + 1, "%d,%d,%lf", &it, &rank, &v[n]), 3);
        n++;
    }
    return n;
}

/* `mmsim run --json --db` and `mmsim report --dp-load --csv`: the stored
 * loads are the --json ones, exactly (both print 17 digits), on a mix
 * whose DP ranks differ (4 ranks, 2 iterations). */
START_TEST(test_dp_loads_equal_json)
{
    char dir[256], args[1024], out[65536], errs[4096];
    mmx_tmpdir(dir, sizeof dir, "dpload");
    snprintf(args, sizeof args,
             "run --json --db %s/r.db --set workload=workloads/llava-ov-mix.yaml --set iterations=2"
             " --set parallel.placement=homogeneous --set 'parallel.llm={tp: 2, pp: 2, dp: 4}'"
             " --set train.global_batch=16 --set train.padding=longest", dir); /* not a fixed shape: loads differ */
    ck_assert_msg(mmx_run(dir, NULL, args, out, sizeof out, errs, sizeof errs) == 0, "%s", errs);
    double js[16], db[16];
    int n = json_loads(out, js, 16);
    ck_assert_int_eq(n, 8);
    ck_assert(js[0] != js[1]);
    snprintf(args, sizeof args, "report %s/r.db --dp-load last --csv", dir);
    ck_assert_msg(mmx_run(dir, NULL, args, out, sizeof out, errs, sizeof errs) == 0, "%s", errs);
    ck_assert_int_eq(csv_loads(out, db, 16), n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(db[i] == js[i], "row %d: stored %.17g, --json %.17g", i, db[i], js[i]);
    snprintf(args, sizeof args, "report %s/r.db --dp-load 2", dir);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errs, sizeof errs), 2);
    ck_assert_ptr_nonnull(strstr(errs, "no run 2"));
    snprintf(args, sizeof args, "report %s/r.db --dp-load -1", dir);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errs, sizeof errs), 2);
    mmx_rmdir(dir);
}
END_TEST

/* A schema-6 database (this schema less dp_rank_loads and what version 8
 * added, user_version 6,
 * one run): read-only, --dp-load is refused by name and the runs still
 * list; opened for writing it migrates to the newest, keeps its run (no loads) and
 * stores the next run's. */
START_TEST(test_schema6_migrates)
{
    char path[512];
    path_in(path, sizeof path, "v6.db");
    mm_store *st = open_ok(path);
    int64_t old = write_ok(st, scenario_a, 0);
    ck_assert_int_eq(sqlite3_exec(mm_store_sqlite(st),
                                  "DROP VIEW sweep_summary; DROP VIEW run_summary; DROP TABLE run_layouts;"
                                  " ALTER TABLE runs DROP COLUMN workload;" /* what version 8 added */
                                  " DROP TABLE dp_rank_loads;"
                                  " ALTER TABLE iterations DROP COLUMN pad_flops;" /* version 10's */
                                  " ALTER TABLE stages DROP COLUMN host_s; ALTER TABLE stages DROP COLUMN exposed_host_s;"
                                  " ALTER TABLE stages DROP COLUMN data_wait_s; ALTER TABLE iterations DROP COLUMN data_wait_s;"
                                  " ALTER TABLE iterations DROP COLUMN data_h2d_s;" /* version 11's */
                                  " PRAGMA user_version = 6;", NULL, NULL, NULL),
                     SQLITE_OK);
    mm_store_close(st);
    mm_err err;
    mm_table t;
    ck_assert_int_eq(mm_store_open_readonly(&st, path, &err), 0);
    ck_assert_int_eq(mm_store_report_dp_load(st, old, &t, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "schema version 6"));
    const char *metrics[] = {"mfu"};
    ck_assert_int_eq(mm_store_report_runs(st, metrics, 1, &t, &err), 0);
    ck_assert_uint_eq(t.nrows, 1);
    mm_table_free(&t);
    mm_store_close(st);
    st = open_ok(path);
    ck_assert_int_eq(q_int(st, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    ck_assert_int_eq(count_runs(st), 1);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM dp_rank_loads"), 0);
    int64_t id = write_ok(st, scenario_b, 1);
    mm_store_close(st);
    ck_assert_int_eq(mm_store_open_readonly(&st, path, &err), 0);
    ck_assert_int_eq(mm_store_report_dp_load(st, old, &t, &err), 0);
    ck_assert_uint_eq(t.nrows, 0); /* written before schema 7 */
    mm_table_free(&t);
    ck_assert_int_eq(mm_store_report_dp_load(st, id, &t, &err), 0);
    ck_assert_uint_eq(t.nrows, N_ITERS * N_DP);
    ck_assert(t.cells[2].type == MM_CELL_REAL && fabs(t.cells[2].r - (0.1 + 1 / 3.0)) < 1e-15);
    mm_table_free(&t);
    mm_store_close(st);
}
END_TEST

static Suite *store_report_suite(void)
{
    Suite *s = suite_create("store_report");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_report_readonly_refusals);
    tcase_add_test(tc, test_report_runs_bound_metrics);
    tcase_add_test(tc, test_report_sweep_keys_bound);
    tcase_add_test(tc, test_dp_loads_read_back);
    tcase_add_test(tc, test_dp_loads_equal_json);
    tcase_add_test(tc, test_schema6_migrates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_store_suite(store_report_suite()); }
