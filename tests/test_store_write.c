/* test_store_write.c - Check suite for writing runs into the SQLite results
 * store (sim/store/store.h): reading them back (NAN as NULL, an OOM run,
 * optional fields), finding and deleting them, all-or-nothing writes,
 * refused arguments, interrupted writers and parallel writers.
 * Every test works in its own mkdtemp directory, removed afterwards.
 * Not for: opening and refusing files (test_store.c), the report queries
 * and the per-DP-rank loads (test_store_report.c). */
#include "store_common.h"

/* ---- writing and reading back ----------------------------------------- */

START_TEST(test_write_reads_back)
{
    char db[512];
    path_in(db, sizeof db, "runs.db");
    mm_store *st = open_ok(db);
    sample s;
    sample_fill(&s, 0);
    s.m.host_launch_s = 0.5, s.m.data_shortfall_s = 0.375, s.m.data_workers_needed = 3;
    mm_run_record rec = record(scenario_a);
    mm_err err;
    int64_t id = 0;
    ck_assert_int_eq(mm_store_write_run(st, &rec, &s.m, &id, &err), 0);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(count_runs(st), 1);

    /* Summary metrics: exact values, one row per name. */
    const double want[] = {1.25, 123456.5, 30.125, 0.42, 0.55, 415.3, 540.1, 0.1, 0.02, NAN, 1.125, 1.5, 0.25};
    size_t n_names = 0;
    for (; mm_store_metric_names[n_names]; n_names++) {
        double v = -1;
        ck_assert_int_eq(mm_store_get_metric(st, id, mm_store_metric_names[n_names], &v, &err),
                         0);
        if (isnan(want[n_names]))
            ck_assert(isnan(v));
        else
            ck_assert_double_eq(v, want[n_names]);
    }
    ck_assert_uint_eq(n_names, 13);
    /* and peak_reserved_gib, peak_allocated_gib, and the host's and the
     * loader's seven (schema version 11) */
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics WHERE run_id = 1"), 22);
    double hv = 0;
    ck_assert_int_eq(mm_store_get_metric(st, id, "host_launch_s", &hv, &err), 0);
    ck_assert(hv == 0.5);
    ck_assert_int_eq(mm_store_get_metric(st, id, "data_shortfall_s", &hv, &err), 0);
    ck_assert(hv == 0.375);
    ck_assert_int_eq(mm_store_get_metric(st, id, "data_workers_needed", &hv, &err), 0);
    ck_assert(hv == 3);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages WHERE run_id = 1 AND host_s IS NOT NULL"
                               " AND exposed_host_s IS NOT NULL AND data_wait_s IS NOT NULL"), N_STAGES);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations WHERE run_id = 1 AND data_wait_s IS NOT NULL"),
                     N_ITERS);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics WHERE run_id = 1"
                               " AND name IN ('iteration_time_s', 'tokens_per_s',"
                               " 'samples_per_s', 'mfu', 'hfu', 'tflops_per_gpu',"
                               " 'hw_tflops_per_gpu', 'bubble_fraction', 'exposed_comm_s',"
                               " 'peak_memory_gib')"),
                     10);
    /* NAN is stored as SQL NULL, not as a REAL. */
    ck_assert_int_eq(q_int(st, "SELECT value IS NULL FROM metrics"
                               " WHERE run_id = 1 AND name = 'peak_memory_gib'"),
                     1);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics WHERE value IS NULL"), 2); /* peak_memory_gib, peak_reserved_gib */

    /* A metric or run that is not there. */
    double v;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_store_get_metric(st, id, "no_such_metric", &v, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "no_such_metric");
    ck_assert_int_eq(mm_store_get_metric(st, 99, "mfu", &v, &err), -MM_EINPUT);

    /* The runs row. */
    sqlite3_stmt *q = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(mm_store_sqlite(st),
                                        "SELECT created_at, mmsim_version, scenario_hash,"
                                        " scenario_source, scenario, model, topology, seed,"
                                        " gpus, oom, events, wall_s FROM runs WHERE id = 1",
                                        -1, &q, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    char hex[17];
    mm_store_hash_hex(scenario_a, hex);
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 0), "2024-05-01T12:00:00Z");
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 1), "0.1.0");
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 2), hex);
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 3), "<default>");
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 4), scenario_a);
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 5), "models/llama-2-7b.json");
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 6), "topologies/dgx-h100.yaml");
    ck_assert_int_eq(sqlite3_column_int64(q, 7), 7);
    ck_assert_int_eq(sqlite3_column_int(q, 8), 8);
    ck_assert_int_eq(sqlite3_column_int(q, 9), 0);
    ck_assert_int_eq(sqlite3_column_int64(q, 10), 12345);
    ck_assert_double_eq(sqlite3_column_double(q, 11), 0.5);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);

    /* Iterations: count, values, NAN -> NULL. */
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations WHERE run_id = 1"), N_ITERS);
    ck_assert_int_eq(sqlite3_prepare_v2(mm_store_sqlite(st),
                                        "SELECT iteration, time_s, bubble_fraction,"
                                        " exposed_comm_s, model_flops, hw_flops, tokens,"
                                        " samples FROM iterations WHERE run_id = 1"
                                        " ORDER BY iteration",
                                        -1, &q, NULL),
                     SQLITE_OK);
    for (int i = 0; i < N_ITERS; i++) {
        const mm_iter_metrics *it = &s.iters[i];
        ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
        ck_assert_int_eq(sqlite3_column_int(q, 0), it->iteration);
        ck_assert_double_eq(sqlite3_column_double(q, 1), it->time_s);
        ck_assert_double_eq(sqlite3_column_double(q, 2), it->bubble_fraction);
        if (isnan(it->exposed_comm_s))
            ck_assert_int_eq(sqlite3_column_type(q, 3), SQLITE_NULL);
        else
            ck_assert_double_eq(sqlite3_column_double(q, 3), it->exposed_comm_s);
        ck_assert_double_eq(sqlite3_column_double(q, 4), it->model_flops);
        ck_assert_double_eq(sqlite3_column_double(q, 5), it->hw_flops);
        ck_assert_double_eq(sqlite3_column_double(q, 6), it->tokens);
        ck_assert_double_eq(sqlite3_column_double(q, 7), it->samples);
    }
    ck_assert_int_eq(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations WHERE exposed_comm_s IS NULL"),
                     1);

    /* Stages. */
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages WHERE run_id = 1"), N_STAGES);
    ck_assert_int_eq(sqlite3_prepare_v2(mm_store_sqlite(st),
                                        "SELECT stage, busy_s, idle_s, comm_s, memory_gib"
                                        " FROM stages WHERE run_id = 1 ORDER BY stage",
                                        -1, &q, NULL),
                     SQLITE_OK);
    for (int i = 0; i < N_STAGES; i++) {
        const mm_stage_metrics *sg = &s.stages[i];
        ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
        ck_assert_int_eq(sqlite3_column_int(q, 0), sg->stage);
        ck_assert_double_eq(sqlite3_column_double(q, 1), sg->busy_s);
        ck_assert_double_eq(sqlite3_column_double(q, 2), sg->idle_s);
        ck_assert_double_eq(sqlite3_column_double(q, 3), sg->comm_s);
        if (isnan(sg->memory_gib))
            ck_assert_int_eq(sqlite3_column_type(q, 4), SQLITE_NULL);
        else
            ck_assert_double_eq(sqlite3_column_double(q, 4), sg->memory_gib);
    }
    ck_assert_int_eq(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    mm_store_close(st);
}
END_TEST

START_TEST(test_oom_run_and_optional_fields)
{
    mm_store *st = open_ok(":memory:");
    mm_metrics m;
    memset(&m, 0, sizeof m);
    m.iteration_time_s = m.tokens_per_s = m.samples_per_s = m.mfu = m.hfu = NAN;
    m.tflops_per_gpu = m.hw_tflops_per_gpu = m.bubble_fraction = m.padded_flops_fraction = NAN;
    m.exposed_comm_s = m.wall_s = NAN;
    m.peak_memory_gib = 97.25;
    m.oom = true;
    m.gpus = 64;
    mm_run_record rec = {.scenario_text = scenario_b, .seed = UINT64_MAX,
                         .version = "0.1.0", .created_at = "2024-05-01T12:00:01Z"};
    mm_err err;
    int64_t id = 0;
    ck_assert_int_eq(mm_store_write_run(st, &rec, &m, &id, &err), 0);
    ck_assert_int_eq(q_int(st, "SELECT oom FROM runs"), 1);
    ck_assert_int_eq(q_int(st, "SELECT wall_s IS NULL AND model IS NULL AND topology IS NULL"
                               " AND scenario_source IS NULL FROM runs"),
                     1);
    /* uint64 seeds above INT64_MAX keep their bit pattern. */
    ck_assert_uint_eq((uint64_t)q_int(st, "SELECT seed FROM runs"), UINT64_MAX);
    /* and the host's and the loader's seven: an OOM run has none */
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics WHERE value IS NULL"), 17);
    double v = 0;
    ck_assert_int_eq(mm_store_get_metric(st, id, "iteration_time_s", &v, &err), 0);
    ck_assert(isnan(v));
    ck_assert_int_eq(mm_store_get_metric(st, id, "peak_memory_gib", &v, &err), 0);
    ck_assert_double_eq(v, 97.25);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations"), 0);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages"), 0);
    mm_store_close(st);
}
END_TEST

START_TEST(test_two_runs_and_reopen)
{
    char db[512];
    path_in(db, sizeof db, "two.db");
    mm_store *st = open_ok(db);
    int64_t a = write_ok(st, scenario_a, 0);
    int64_t b = write_ok(st, scenario_b, 1);
    ck_assert_int_ne(a, b);
    ck_assert_int_eq(count_runs(st), 2);
    mm_store_close(st);

    st = open_ok(db);
    ck_assert_int_eq(count_runs(st), 2);
    mm_err err;
    double v = 0;
    ck_assert_int_eq(mm_store_get_metric(st, b, "iteration_time_s", &v, &err), 0);
    ck_assert_double_eq(v, 2.25);
    ck_assert_int_eq(mm_store_get_metric(st, a, "iteration_time_s", &v, &err), 0);
    ck_assert_double_eq(v, 1.25);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations"), 2 * N_ITERS);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages"), 2 * N_STAGES);
    ck_assert_int_eq(write_ok(st, scenario_a, 2), 3);
    ck_assert_int_eq(count_runs(st), 3);
    mm_store_close(st);
}
END_TEST

START_TEST(test_find_run_by_scenario)
{
    mm_store *st = open_ok(":memory:");
    mm_err err;
    int64_t id = -1;
    ck_assert_int_eq(mm_store_find_run(st, scenario_a, &id, &err), 0);
    ck_assert_int_eq(id, 0);
    int64_t a1 = write_ok(st, scenario_a, 0);
    int64_t b = write_ok(st, scenario_b, 0);
    ck_assert_int_eq(mm_store_find_run(st, scenario_a, &id, &err), 0);
    ck_assert_int_eq(id, a1);
    int64_t a2 = write_ok(st, scenario_a, 1);
    ck_assert_int_eq(mm_store_find_run(st, scenario_a, &id, &err), 0);
    ck_assert_int_eq(id, a2); /* the newest */
    ck_assert_int_eq(mm_store_find_run(st, scenario_b, &id, &err), 0);
    ck_assert_int_eq(id, b);
    ck_assert_int_eq(mm_store_find_run(st, "iterations: 3\n", &id, &err), 0);
    ck_assert_int_eq(id, 0);
    mm_store_close(st);
}
END_TEST

START_TEST(test_delete_cascades)
{
    mm_store *st = open_ok(":memory:");
    write_ok(st, scenario_a, 0);
    int64_t b = write_ok(st, scenario_b, 0);
    char sql[128];
    snprintf(sql, sizeof sql, "DELETE FROM runs WHERE id = %lld", (long long)b);
    ck_assert_int_eq(sqlite3_exec(mm_store_sqlite(st), sql, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics"), 22);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations"), N_ITERS);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages"), N_STAGES);
    /* Foreign keys are enforced: no metric rows for a run that is not there. */
    ck_assert_int_ne(sqlite3_exec(mm_store_sqlite(st),
                                  "INSERT INTO metrics VALUES (999, 'mfu', 0.5)", NULL, NULL,
                                  NULL),
                     SQLITE_OK);
    mm_store_close(st);
}
END_TEST

/* ---- failures leave nothing behind ------------------------------------ */

static void assert_no_orphans(mm_store *st)
{
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics WHERE run_id NOT IN"
                               " (SELECT id FROM runs)"),
                     0);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations WHERE run_id NOT IN"
                               " (SELECT id FROM runs)"),
                     0);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages WHERE run_id NOT IN"
                               " (SELECT id FROM runs)"),
                     0);
}

START_TEST(test_failed_write_leaves_no_partial_run)
{
    char db[512];
    path_in(db, sizeof db, "partial.db");
    mm_store *st = open_ok(db);
    write_ok(st, scenario_a, 0);

    /* Duplicate iteration numbers: the run row, its metrics and the first
     * iteration are inserted before the PRIMARY KEY fails on the second. */
    sample s;
    sample_fill(&s, 5);
    s.iters[1].iteration = 0;
    mm_run_record rec = record(scenario_b);
    mm_err err;
    mm_err_clear(&err);
    int64_t id = -7;
    int rc = mm_store_write_run(st, &rec, &s.m, &id, &err);
    ck_assert_int_eq(rc, -MM_EINTERNAL);
    ck_assert_int_eq(id, -7);
    ck_assert_str_eq(err.file, db);
    ck_assert_ptr_nonnull(strstr(err.msg, "iteration"));
    ck_assert_int_eq(count_runs(st), 1);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics"), 22);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations"), N_ITERS);
    assert_no_orphans(st);

    /* The same with a bad stage (the last table written). */
    sample_fill(&s, 6);
    s.stages[1].stage = 0;
    ck_assert_int_eq(mm_store_write_run(st, &rec, &s.m, &id, &err), -MM_EINTERNAL);
    ck_assert_int_eq(count_runs(st), 1);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages"), N_STAGES);
    assert_no_orphans(st);

    /* No transaction was left open: the store still writes, and the data
     * survives a reopen. */
    ck_assert_int_eq(sqlite3_get_autocommit(mm_store_sqlite(st)), 1);
    write_ok(st, scenario_b, 7);
    mm_store_close(st);
    st = open_ok(db);
    ck_assert_int_eq(count_runs(st), 2);
    assert_no_orphans(st);
    mm_store_close(st);
}
END_TEST

START_TEST(test_bad_arguments_rejected)
{
    mm_store *st = open_ok(":memory:");
    sample s;
    sample_fill(&s, 0);
    mm_run_record rec = record(scenario_a);
    mm_err err;
    ck_assert_int_eq(mm_store_write_run(st, NULL, &s.m, NULL, &err), -MM_EINTERNAL);
    ck_assert_int_eq(mm_store_write_run(st, &rec, NULL, NULL, &err), -MM_EINTERNAL);
    rec.scenario_text = NULL;
    ck_assert_int_eq(mm_store_write_run(st, &rec, &s.m, NULL, &err), -MM_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "scenario_text"));
    rec = record(scenario_a);
    rec.created_at = NULL;
    ck_assert_int_eq(mm_store_write_run(st, &rec, &s.m, NULL, &err), -MM_EINTERNAL);
    rec = record(scenario_a);
    s.m.iters = NULL;
    ck_assert_int_eq(mm_store_write_run(st, &rec, &s.m, NULL, &err), -MM_EINTERNAL);
    ck_assert_int_eq(count_runs(st), 0);
    /* err may be NULL. */
    ck_assert_int_eq(mm_store_write_run(st, &rec, &s.m, NULL, NULL), -MM_EINTERNAL);
    mm_store_close(NULL);
    mm_store_close(st);
}
END_TEST

/* A writer killed in the middle of its transaction (after its rows are in
 * the WAL, before COMMIT) leaves the earlier runs intact and none of its own. */
START_TEST(test_killed_writer_leaves_earlier_runs)
{
    char db[512];
    path_in(db, sizeof db, "killed.db");
    mm_store *st = open_ok(db);
    write_ok(st, scenario_a, 0);
    write_ok(st, scenario_b, 1);
    mm_store_close(st);

    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        mm_store *cst = NULL;
        if (mm_store_open(&cst, db, NULL) != 0)
            _exit(3);
        sqlite3 *c = mm_store_sqlite(cst);
        /* What mm_store_write_run does, stopped before COMMIT; enough rows
         * that the page cache spills into the WAL file. */
        if (sqlite3_exec(c, "PRAGMA cache_size = 10; BEGIN IMMEDIATE;"
                            "INSERT INTO runs(created_at, mmsim_version, scenario_hash,"
                            " scenario, seed, oom) VALUES ('t', 'v', 'h', 's', 1, 0);"
                            "WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i"
                            " WHERE n < 20000) INSERT INTO iterations(run_id, iteration,"
                            " time_s) SELECT (SELECT max(id) FROM runs), n, n * 0.5 FROM i;",
                         NULL, NULL, NULL) != SQLITE_OK)
            _exit(4);
        raise(SIGKILL);
        _exit(5);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "child did not die by SIGKILL (status %d)", status);
    /* Its uncommitted rows did reach the WAL file, which recovery ignores. */
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", db);
    struct stat sb;
    ck_assert_int_eq(stat(wal, &sb), 0);
    ck_assert_int_gt(sb.st_size, 64 * 1024);

    st = open_ok(db);
    ck_assert_int_eq(count_runs(st), 2);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations"), 2 * N_ITERS);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM pragma_integrity_check"
                               " WHERE integrity_check = 'ok'"),
                     1);
    write_ok(st, scenario_a, 9);
    ck_assert_int_eq(count_runs(st), 3);
    mm_store_close(st);
}
END_TEST

/* Several processes open one new file at once and write runs concurrently,
 * as a parallel sweep does: every run arrives, none is torn. */
START_TEST(test_parallel_writers)
{
    enum { PROCS = 4, RUNS = 10 };
    char db[512];
    path_in(db, sizeof db, "sweep.db");
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        ck_assert_int_ge(pids[p], 0);
        if (pids[p] == 0) {
            mm_store *cst = NULL;
            mm_err cerr;
            if (mm_store_open(&cst, db, &cerr) != 0) {
                fprintf(stderr, "writer %d: open: %s\n", p, cerr.msg);
                _exit(3);
            }
            sample s;
            for (int r = 0; r < RUNS; r++) {
                sample_fill(&s, p * 100 + r);
                mm_run_record rec = record(r % 2 ? scenario_a : scenario_b);
                if (mm_store_write_run(cst, &rec, &s.m, NULL, NULL) != 0)
                    _exit(4);
            }
            mm_store_close(cst);
            _exit(0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[p], &status, 0), pids[p]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "writer %d failed (status %d)", p, status);
    }
    mm_store *st = open_ok(db);
    ck_assert_int_eq(count_runs(st), PROCS * RUNS);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics"), PROCS * RUNS * 22);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations"), PROCS * RUNS * N_ITERS);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages"), PROCS * RUNS * N_STAGES);
    ck_assert_int_eq(q_int(st, "SELECT count(DISTINCT scenario_hash) FROM runs"), 2);
    ck_assert_int_eq(q_int(st, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    mm_store_close(st);
}
END_TEST

static Suite *store_write_suite(void)
{
    Suite *s = suite_create("store_write");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_write_reads_back);
    tcase_add_test(tc, test_oom_run_and_optional_fields);
    tcase_add_test(tc, test_two_runs_and_reopen);
    tcase_add_test(tc, test_find_run_by_scenario);
    tcase_add_test(tc, test_delete_cascades);
    tcase_add_test(tc, test_failed_write_leaves_no_partial_run);
    tcase_add_test(tc, test_bad_arguments_rejected);
    tcase_add_test(tc, test_killed_writer_leaves_earlier_runs);
    tcase_add_test(tc, test_parallel_writers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_store_suite(store_write_suite()); }
