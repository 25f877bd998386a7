/* test_views.c - Check suite for the results a user queries (schema version
 * 8, docs/schema.md "Views"): run_summary and sweep_summary hold one row per
 * run or sweep point with each module's layout and the summary metrics as
 * columns, equal to what the tables hold; model, topology and workload are
 * stored relative to the data folder, not as the host's absolute path; the
 * example queries of docs/schema.md, read from the page itself, run on a new
 * database and on one migrated from schema version 7, with the same answers.
 * Not for: the tables themselves (test_store.c) or the metrics' values
 * (test_run.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <sqlite3.h>

#include "mmsim_config.h"
#include "scenario/sim.h"
#include "store/store.h"
#include "store/store_private.h" /* mm_store_sqlite: the views, read directly */

#include "mmsim_exe.h"

/* Three runs written by `mmsim run` from an empty folder, the data found
 * through MMSIM_DATADIR (an absolute path): an LLM alone, the multimodal
 * default, and an LLM layout that does not fit. */
static const char *const run_sets[] = {
    "--set model=models/llama-2-7b.json --set cluster.nodes=1 --set 'parallel.llm={tp: 2, pp: 2, dp: 2}'"
    " --set workload=text",
    "",
    "--set model=models/llama-2-7b.json --set cluster.nodes=1 --set 'parallel.llm={tp: 1, pp: 1, dp: 8}'"
    " --set train.zero=0 --set train.recompute=none --set train.seq_len=16384 --set workload=text",
};
enum { N_RUNS = 3 };

static const char *srcdir(void)
{
    const char *s = getenv("MMSIM_SRCDIR");
    ck_assert_msg(s && s[0] == '/', "MMSIM_SRCDIR must be the absolute source folder");
    return s;
}

static void write_runs(const char *dir, const char *db)
{
    char args[2048], prefix[1024], out[8192], errs[8192];
    /* from the scratch folder, so that nothing is found relative to the
     * current folder: every file comes from MMSIM_DATADIR */
    snprintf(prefix, sizeof prefix, "cd '%s' && MMSIM_DATADIR='%s'", dir, srcdir());
    for (int i = 0; i < N_RUNS; i++) {
        snprintf(args, sizeof args, "run -q --db '%s' --set iterations=2 %s", db, run_sets[i]);
        ck_assert_msg(mmx_run(dir, prefix, args, out, sizeof out, errs, sizeof errs) == 0, "%s: %s", args, errs);
    }
}

/* The first column of the first row of sql, as text ("" for none / NULL). */
static void q_text(mm_store *st, const char *sql, char *out, size_t len)
{
    sqlite3_stmt *s = NULL;
    ck_assert_msg(sqlite3_prepare_v2(mm_store_sqlite(st), sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(mm_store_sqlite(st)));
    out[0] = '\0';
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
}

static double q_real(mm_store *st, const char *sql)
{
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(mm_store_sqlite(st), sql, -1, &s, NULL), SQLITE_OK);
    double v = NAN;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        v = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Every row of sql as text, cells joined by '|', rows by '\n'; the count of
 * rows in *rows. */
static char *q_all(mm_store *st, const char *sql, int *rows)
{
    sqlite3_stmt *s = NULL;
    ck_assert_msg(sqlite3_prepare_v2(mm_store_sqlite(st), sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(mm_store_sqlite(st)));
    size_t cap = 1 << 16, n = 0;
    char *buf = calloc(cap, 1);
    ck_assert_ptr_nonnull(buf);
    *rows = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(s); c++) {
            const unsigned char *t = sqlite3_column_text(s, c);
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", c ? "|" : "", t ? (const char *)t : "NULL");
            ck_assert_uint_lt(n, cap - 1);
        }
        n += (size_t)snprintf(buf + n, cap - n, "\n");
        (*rows)++;
    }
    ck_assert_int_eq(rc, SQLITE_DONE);
    sqlite3_finalize(s);
    return buf;
}

/* The ```sql blocks of docs/schema.md's "## Views" section. */
enum { MAX_Q = 8 };
static int doc_queries(char *q[MAX_Q])
{
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/schema.md", srcdir());
    static char text[1 << 17];
    mmx_slurp(path, text, sizeof text);
    const char *sec = strstr(text, "\n## Views");
    ck_assert_ptr_nonnull(sec);
    const char *end = strstr(sec + 1, "\n## ");
    int n = 0;
    for (const char *p = strstr(sec, "```sql\n"); p && (!end || p < end) && n < MAX_Q;
         p = strstr(p, "```sql\n")) {
        p += 7;
        const char *e = strstr(p, "```");
        ck_assert_ptr_nonnull(e);
        q[n] = strndup(p, (size_t)(e - p));
        ck_assert_ptr_nonnull(q[n]);
        n++;
        p = e + 3;
    }
    return n;
}

/* Links every run to a two-point sweep (the second point failed), as
 * `mmsim sweep` would have. */
static void add_sweep(mm_store *st)
{
    mm_err err;
    int64_t sw = 0;
    int resumed = 0;
    ck_assert_int_eq(mm_store_sweep_open(st, "tp", "axes: ...", 2, "[\"parallel.llm.tp\"]",
                                         "2024-01-01T00:00:00Z", &sw, &resumed, &err), 0);
    mm_sweep_link a = {.sweep_id = sw, .point = 0, .axis_values = "{\"parallel.llm.tp\": 2}"};
    mm_sweep_link b = {.sweep_id = sw, .point = 1, .axis_values = "{\"parallel.llm.tp\": 3}"};
    ck_assert_int_eq(mm_store_link_sweep_run(st, &a, 1, NULL, &err), 0);
    ck_assert_int_eq(mm_store_link_sweep_run(st, &b, 0, "parallel.llm.tp: 3 does not divide", &err), 0);
}

/* What the fresh database must say, checked against its own tables. */
static void check_summary(mm_store *st)
{
    char t[1024];
    ck_assert_int_eq((int)q_real(st, "SELECT count(*) FROM run_summary"), N_RUNS);
    /* paths relative to the data folder, though found under an absolute one */
    q_text(st, "SELECT group_concat(model || ' ' || topology || ' ' || workload, ', ') FROM "
               "(SELECT * FROM run_summary ORDER BY run_id)", t, sizeof t);
    ck_assert_str_eq(t, "models/llama-2-7b.json topologies/dgx-h100.yaml text, "
                        "models/llava-ov-qwen2.5-7b.yaml topologies/dgx-h100.yaml fixed, "
                        "models/llama-2-7b.json topologies/dgx-h100.yaml text");
    ck_assert_int_eq((int)q_real(st, "SELECT count(*) FROM runs WHERE model LIKE '/%' OR topology LIKE '/%'"), 0);
    /* the layouts as --set gave them (cp, vpp, ep 1; zero from train.zero) */
    q_text(st, "SELECT llm_tp||','||llm_pp||','||llm_vpp||','||llm_cp||','||llm_dp||','||llm_ep||','||llm_zero"
               " FROM run_summary WHERE run_id = 1", t, sizeof t);
    ck_assert_str_eq(t, "2,2,1,1,2,1,1");
    q_text(st, "SELECT llm_tp||','||llm_pp||','||llm_dp||','||llm_zero FROM run_summary WHERE run_id = 3", t,
           sizeof t);
    ck_assert_str_eq(t, "1,1,8,0");
    /* an LLM alone has no encoder layout; the multimodal default has one */
    ck_assert(isnan(q_real(st, "SELECT vision_tp FROM run_summary WHERE run_id = 1")));
    ck_assert(q_real(st, "SELECT vision_dp FROM run_summary WHERE run_id = 2") >= 1);
    ck_assert_int_eq((int)q_real(st, "SELECT count(*) FROM run_layouts WHERE module = 'audio'"), 0);
    /* every metric column is the metrics table's value, bit for bit */
    for (size_t i = 0; mm_store_metric_names[i]; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM run_summary v JOIN metrics m ON m.run_id = v.run_id AND m.name = '%s'"
                 " WHERE v.%s IS m.value", mm_store_metric_names[i], mm_store_metric_names[i]);
        ck_assert_msg((int)q_real(st, sql) == N_RUNS, "%s", mm_store_metric_names[i]);
    }
    /* the OOM verdict: no time, the memory it would need */
    ck_assert_int_eq((int)q_real(st, "SELECT oom FROM run_summary WHERE run_id = 3"), 1);
    ck_assert(isnan(q_real(st, "SELECT iteration_time_s FROM run_summary WHERE run_id = 3")));
    ck_assert(q_real(st, "SELECT peak_memory_gib FROM run_summary WHERE run_id = 3") > 80);
    ck_assert(q_real(st, "SELECT iteration_time_s FROM run_summary WHERE run_id = 1") > 0);
    ck_assert_int_eq((int)q_real(st, "SELECT gpus FROM run_summary WHERE run_id = 1"),
                     2 * 2 * 2);
}

START_TEST(test_views_fresh_and_migrated)
{
    char dir[256], db[512], old[512], cmd[1200];
    mmx_tmpdir(dir, sizeof dir, "views");
    snprintf(db, sizeof db, "%s/new.db", dir);
    snprintf(old, sizeof old, "%s/old.db", dir);
    write_runs(dir, db);

    mm_err err;
    mm_store *st = NULL;
    ck_assert_int_eq(mm_store_open(&st, db, &err), 0);
    ck_assert_int_eq((int)q_real(st, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    add_sweep(st);
    check_summary(st);
    char *q[MAX_Q];
    int nq = doc_queries(q);
    ck_assert_int_eq(nq, 3);
    char *fresh[MAX_Q];
    for (int i = 0; i < nq; i++) {
        int rows = 0;
        fresh[i] = q_all(st, q[i], &rows);
        ck_assert_msg(rows >= 2, "query %d gave %d rows:\n%s", i + 1, rows, fresh[i]);
    }
    /* the fastest run that fits comes first; the OOM one is not listed */
    ck_assert_msg(!strncmp(fresh[0], "2|", 2), "%s", fresh[0]);
    ck_assert_ptr_null(strstr(fresh[0], "\n3|"));
    /* the sweep's failed point is listed with no run */
    ck_assert_ptr_nonnull(strstr(fresh[2], "|failed|NULL|NULL|NULL|NULL|NULL|NULL"));
    mm_store_close(st);

    /* The same database as schema version 7 wrote it: no workload column,
     * no layouts, no views, and the model as an older mmsim stored it,
     * the absolute path it was found at under its data folder. */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", db, old);
    ck_assert_int_eq(system(cmd), 0);
    sqlite3 *raw = NULL;
    ck_assert_int_eq(sqlite3_open(old, &raw), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(raw,
                                  "DROP VIEW sweep_summary; DROP VIEW run_summary; DROP TABLE run_layouts;"
                                  "ALTER TABLE runs DROP COLUMN workload;"
                                  "ALTER TABLE iterations DROP COLUMN pad_flops;"
                                  " ALTER TABLE stages DROP COLUMN host_s; ALTER TABLE stages DROP COLUMN exposed_host_s;"
                                  " ALTER TABLE stages DROP COLUMN data_wait_s; ALTER TABLE iterations DROP COLUMN data_wait_s;"
                                  " ALTER TABLE iterations DROP COLUMN data_h2d_s;" /* version 11's */
                                  "UPDATE runs SET model = '/srv/mmsim-data/' || model,"
                                  " topology = '/srv/mmsim-data/' || topology;"
                                  "PRAGMA user_version = 7;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    const char *saved = getenv("MMSIM_DATADIR");
    char *keep = saved ? strdup(saved) : NULL;
    setenv("MMSIM_DATADIR", "/srv/mmsim-data/", 1);
    ck_assert_int_eq(mm_store_open(&st, old, &err), 0);
    if (keep)
        setenv("MMSIM_DATADIR", keep, 1);
    else
        unsetenv("MMSIM_DATADIR");
    free(keep);
    ck_assert_int_eq((int)q_real(st, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    char t[1024];
    q_text(st, "SELECT group_concat(model || ' ' || topology || ' ' || workload, ', ') FROM "
               "(SELECT * FROM run_summary ORDER BY run_id)", t, sizeof t);
    ck_assert_str_eq(t, "models/llama-2-7b.json topologies/dgx-h100.yaml text, "
                        "models/llava-ov-qwen2.5-7b.yaml topologies/dgx-h100.yaml fixed, "
                        "models/llama-2-7b.json topologies/dgx-h100.yaml text");
    /* the layouts, read back from the scenario text, are those written at
     * run time; the LLM-only runs' texts also state the default scenario's
     * vision section, which they ignored (docs/schema.md says so) */
    int rows = 0;
    char *lay = q_all(st, "SELECT run_id, module, tp, pp, vpp, cp, dp, ep, zero FROM run_layouts"
                          " WHERE module = 'llm' OR run_id = 2 ORDER BY run_id, module", &rows);
    ck_assert_int_eq(rows, 4);
    mm_store *fst = NULL;
    ck_assert_int_eq(mm_store_open(&fst, db, &err), 0);
    char *lay_fresh = q_all(fst, "SELECT run_id, module, tp, pp, vpp, cp, dp, ep, zero FROM run_layouts"
                                 " ORDER BY run_id, module", &rows);
    ck_assert_str_eq(lay, lay_fresh);
    mm_store_close(fst);
    free(lay);
    free(lay_fresh);
    ck_assert_int_eq((int)q_real(st, "SELECT count(*) FROM run_layouts WHERE module = 'vision'"), 3);
    /* the documented queries: same answers as on the new database, but for
     * the vision columns of the LLM-only runs (the first query lists them) */
    for (int i = 0; i < nq; i++) {
        char *mig = q_all(st, q[i], &rows);
        if (i > 0)
            ck_assert_msg(!strcmp(mig, fresh[i]), "query %d:\nmigrated\n%s\nnew\n%s", i + 1, mig, fresh[i]);
        else
            ck_assert_msg(!strncmp(mig, fresh[i], strcspn(fresh[i], "\n")), "query 1:\n%s\n%s", mig, fresh[i]);
        free(mig);
        free(fresh[i]);
        free(q[i]);
    }
    /* a run written after the migration gets its rows as a new one does */
    mm_store_close(st);
    write_runs(dir, old);
    ck_assert_int_eq(mm_store_open(&st, old, &err), 0);
    ck_assert_int_eq((int)q_real(st, "SELECT count(*) FROM run_summary WHERE run_id > 3 AND vision_tp IS NULL"),
                     2);
    mm_store_close(st);
    mmx_rmdir(dir);
}
END_TEST

/* mm_sim_data_relative on its own: under MMSIM_DATADIR, with and without
 * the trailing slash; a folder whose name only starts like it; "./". */
START_TEST(test_data_relative)
{
    char out[256];
    setenv("MMSIM_DATADIR", "/data/mm/", 1);
    mm_sim_data_relative("/data/mm/models/x.yaml", out, sizeof out);
    ck_assert_str_eq(out, "models/x.yaml");
    mm_sim_data_relative("/data/mm//topologies/y.yaml", out, sizeof out);
    ck_assert_str_eq(out, "topologies/y.yaml");
    mm_sim_data_relative("/data/mmx/models/x.yaml", out, sizeof out); /* not under it */
    ck_assert_str_eq(out, "/data/mmx/models/x.yaml");
    mm_sim_data_relative("/data/mm", out, sizeof out); /* the folder itself names no file */
    ck_assert_str_eq(out, "/data/mm");
    mm_sim_data_relative("./models/x.yaml", out, sizeof out);
    ck_assert_str_eq(out, "models/x.yaml");
    setenv("MMSIM_DATADIR", "/data/mm", 1);
    mm_sim_data_relative("/data/mm/models/x.yaml", out, sizeof out);
    ck_assert_str_eq(out, "models/x.yaml");
    unsetenv("MMSIM_DATADIR");
    /* the installed data folder, with no MMSIM_DATADIR */
    mm_sim_data_relative(MMSIM_DATADIR "/workloads/w.yaml", out, sizeof out);
    ck_assert_str_eq(out, "workloads/w.yaml");
    mm_sim_data_relative("/home/u/exp/my-model.json", out, sizeof out); /* the user's own file */
    ck_assert_str_eq(out, "/home/u/exp/my-model.json");
}
END_TEST

static Suite *views_suite(void)
{
    Suite *s = suite_create("views");
    TCase *tc = tcase_create("views");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_views_fresh_and_migrated);
    tcase_add_test(tc, test_data_relative);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(views_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
