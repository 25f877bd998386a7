/* test_mpi.c - Check suite for `mpirun -np 3 mmsim sweep` and `mmsim plan` (built only with
 * -Dmpi=enabled): the grid is shared among 3 ranks on this machine
 * (--oversubscribe) and rank 0 writes every result; the rows must be those of
 * `--jobs 1`, a failed point must be recorded, and a second run must skip
 * everything.  Not for: the sweep logic itself (test_sweep). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "mmsim_exe.h"

static char tmpdir[256];
static char out[1 << 16], errtxt[1 << 14];

static void setup(void)
{
    mmx_tmpdir(tmpdir, sizeof tmpdir, "mpi");
}

static void teardown(void)
{
    mmx_rmdir(tmpdir);
}


/* Runs `prefix MMSIM_EXE args`; returns the exit status. */
static int sh(const char *prefix, const char *args)
{
    return mmx_run(tmpdir, prefix, args, out, sizeof out, errtxt, sizeof errtxt);
}

#define MPIRUN "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " \
               "OMPI_MCA_btl_vader_single_copy_mechanism=none " \
               "mpirun --allow-run-as-root --oversubscribe -np 3"

static char *dump(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK);
    size_t cap = 1 << 20, len = 0;
    char *buf = calloc(1, cap);
    while (sqlite3_step(s) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(s); c++) {
            const char *v = (const char *)sqlite3_column_text(s, c);
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", c ? "|" : "", v ? v : "NULL");
        }
        len += (size_t)snprintf(buf + len, cap - len, "\n");
    }
    sqlite3_finalize(s);
    sqlite3_close(h);
    return buf;
}

static const char *const sql_rows[] = {
    "SELECT r.scenario, r.gpus, r.oom, r.events, m.name, quote(m.value) FROM runs r"
    " JOIN metrics m ON m.run_id = r.id ORDER BY r.scenario, m.name",
    "SELECT r.scenario, i.iteration, quote(i.time_s), quote(i.bubble_fraction),"
    " quote(i.exposed_comm_s), quote(i.model_flops), quote(i.tokens) FROM runs r"
    " JOIN iterations i ON i.run_id = r.id ORDER BY r.scenario, i.iteration",
    "SELECT r.scenario, g.stage, quote(g.busy_s), quote(g.idle_s), quote(g.comm_s),"
    " quote(g.memory_gib) FROM runs r JOIN stages g ON g.run_id = r.id"
    " ORDER BY r.scenario, g.stage",
    "SELECT sr.point, sr.status, sr.axis_values, sr.error, r.scenario FROM sweep_runs sr"
    " LEFT JOIN runs r ON r.id = sr.run_id ORDER BY sr.point",
    "SELECT count(*), count(DISTINCT scenario) FROM runs",
    "PRAGMA integrity_check",
    NULL};

START_TEST(mpi_3_ranks_equal_jobs_1)
{
    char spec[512], db1[512], db3[512], args[1400];
    snprintf(spec, sizeof spec, "%s/s.yaml", tmpdir);
    snprintf(db1, sizeof db1, "%s/one.db", tmpdir);
    snprintf(db3, sizeof db3, "%s/mpi.db", tmpdir);
    FILE *f = fopen(spec, "w");
    ck_assert_ptr_nonnull(f);
    /* 8 points: tp 1 does not fit (failed), the rest run */
    fputs("name: mpi\nset: {model: models/llama-2-7b.json, workload: text, network: analytic,"
          " iterations: 1, train.seq_len: 1024}\naxes:\n"
          "  - {key: train.global_batch, values: [8, 16]}\n"
          "  - key: parallel.llm\n"
          "    values: [{tp: 1, pp: 2, dp: 2}, {tp: 2, pp: 2, dp: 4}, {tp: 4, pp: 2, dp: 2},\n"
          "             {tp: 8, pp: 1, dp: 2}]\n", f);
    fclose(f);
    snprintf(args, sizeof args, "sweep %s --jobs 1 --db %s", spec, db1);
    ck_assert_msg(sh("", args) == 0, "%s", errtxt);
    snprintf(args, sizeof args, "sweep %s --db %s --json", spec, db3);
    ck_assert_msg(sh(MPIRUN, args) == 0, "%s", errtxt);
    /* one JSON object (rank 0 prints, the others do not) */
    ck_assert_ptr_nonnull(strstr(out, "\"points\": 8"));
    ck_assert_ptr_null(strstr(strstr(out, "\"points\": 8") + 1, "\"points\": 8"));
    for (int i = 0; sql_rows[i]; i++) {
        char *a = dump(db1, sql_rows[i]), *b = dump(db3, sql_rows[i]);
        ck_assert_msg(strlen(a) > 0 && strcmp(a, b) == 0, "rows differ: %s", sql_rows[i]);
        free(a);
        free(b);
    }
    char *n = dump(db3, "SELECT count(*) FROM sweep_runs WHERE status = 'failed'");
    ck_assert_str_eq(n, "2\n");
    free(n);
    /* again under MPI: everything is skipped */
    ck_assert_msg(sh(MPIRUN, args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "\"ran\": 0"));
    ck_assert_ptr_nonnull(strstr(out, "\"skipped\": 6"));
    n = dump(db3, "SELECT count(*) FROM runs");
    ck_assert_str_eq(n, "6\n");
    free(n);
}
END_TEST

/* `mpirun -np 3 mmsim plan`: every rank plans alike, the rescored runs are
 * shared among the ranks (the top K, then --prove's rounds, each round a
 * collective step) and rank 0 alone prints and stores: the plan's rows and
 * runs are those of --jobs 1. */
static const char *const sql_plan[] = {
    "SELECT c.candidate, c.layout, c.sets, c.status, c.reason, c.rank, quote(c.estimate_s),"
    " quote(c.peak_memory_gib), quote(c.lower_bound_s), r.scenario FROM plan_candidates c"
    " LEFT JOIN runs r ON r.id = c.run_id WHERE c.status NOT IN ('pruned', 'bounded') ORDER BY c.candidate",
    "SELECT status, count(*), quote(sum(estimate_s)), quote(sum(lower_bound_s)) FROM plan_candidates"
    " GROUP BY status ORDER BY status",
    "SELECT r.scenario, m.name, quote(m.value) FROM runs r JOIN metrics m ON m.run_id = r.id"
    " ORDER BY r.scenario, m.name",
    "SELECT count(*), count(DISTINCT scenario) FROM runs",
    "SELECT gpus, top_k, iterations FROM plans",
    NULL};

START_TEST(mpi_plan_equals_jobs_1)
{
    char db1[512], db3[512], args[1400];
    snprintf(db1, sizeof db1, "%s/plan1.db", tmpdir);
    snprintf(db3, sizeof db3, "%s/plan3.db", tmpdir);
    const char *plan = "plan --gpus 16 --set model=models/llama-2-7b.json --set network=analytic"
                       " --set train.global_batch=32 --top 4 --prove 3 --json";
    snprintf(args, sizeof args, "%s --jobs 1 --db %s", plan, db1);
    ck_assert_msg(sh("", args) == 0, "%s", errtxt);
    snprintf(args, sizeof args, "%s --db %s", plan, db3);
    ck_assert_msg(sh(MPIRUN, args) == 0, "%s", errtxt);
    /* one JSON document: rank 0 alone prints */
    const char *first = strstr(out, "\"best_s\"");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_null(strstr(first + 1, "\"best_s\""));
    for (int i = 0; sql_plan[i]; i++) {
        char *a = dump(db1, sql_plan[i]), *b = dump(db3, sql_plan[i]);
        ck_assert_msg(strlen(a) > 0 && strcmp(a, b) == 0, "rows differ: %s\n%s\n---\n%s", sql_plan[i], a, b);
        free(a);
        free(b);
    }
    char *n = dump(db3, "SELECT count(*) > 4 FROM plan_candidates WHERE status = 'simulated'");
    ck_assert_str_eq(n, "1\n"); /* --prove ran rounds after the top 4 */
    free(n);
    /* --no-db cannot share the rescoring: refused by name, exit 2 */
    snprintf(args, sizeof args, "%s --no-db", plan);
    ck_assert_int_eq(sh(MPIRUN, args), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "--no-db"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mpi");
    TCase *tc = tcase_create("mpi");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, mpi_3_ranks_equal_jobs_1);
    tcase_add_test(tc, mpi_plan_equals_jobs_1);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
