/* test_sweep.c - Check suite for sweeps (sim/plan/sweep.h, runner.h), the
 * sweeps tables of the store, and `mmsim sweep` / `mmsim report`: expansion
 * order and ranges, errors naming file, line and key, identical rows with 1
 * and 2 workers, resuming, a sweep killed with SIGKILL and restarted, and
 * PRAGMA integrity_check.  Sweeps here are tiny (the default scenario, one
 * or two iterations, short sequences) so that the suite stays fast under
 * ASan.  The binary's path comes from meson (MMSIM_EXE).
 * Not for: the simulation's numbers (test_run) or the store's own writes
 * (test_store). */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "mmsim_config.h"
#include "plan/runner.h"
#include "plan/sweep.h"
#include "store/store.h"
#include "store/store_private.h" /* mm_store_sqlite: the tables, read directly */

#include "mmsim_exe.h"
#include "exec/metrics.h"

static char tmpdir[256];
static char out[1 << 16], errtxt[1 << 14];

static void setup(void)
{
    mmx_tmpdir(tmpdir, sizeof tmpdir, "sweep");
}

static void teardown(void)
{
    mmx_rmdir(tmpdir);
}

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}


static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Runs mmsim with `args`; returns its exit status, fills out and errtxt. */
static int mmsim(const char *args)
{
    return mmx_run(tmpdir, NULL, args, out, sizeof out, errtxt, sizeof errtxt);
}

/* All rows of a query as text, one line per row ("|" between columns). */
static char *dump(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(h, 10000);
    sqlite3_stmt *s = NULL;
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(h));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    buf[0] = '\0';
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(s); c++) {
            const char *v = (const char *)sqlite3_column_text(s, c);
            size_t need = len + (v ? strlen(v) : 4) + 4;
            if (need > cap) {
                cap = 2 * need;
                buf = realloc(buf, cap);
            }
            len += (size_t)sprintf(buf + len, "%s%s", c ? "|" : "", v ? v : "NULL");
        }
        buf[len++] = '\n';
        buf[len] = '\0';
    }
    ck_assert_int_eq(rc, SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(h);
    return buf;
}

static long q_long(const char *db, const char *sql)
{
    char *d = dump(db, sql);
    long v = strtol(d, NULL, 10);
    free(d);
    return v;
}

/* Everything a run measured, keyed by its canonical scenario (run ids and
 * times of day differ between databases; wall_s is host time). */
static const char *const sql_rows[] = {
    "SELECT r.scenario, r.gpus, r.oom, r.events, m.name, quote(m.value) FROM runs r"
    " JOIN metrics m ON m.run_id = r.id ORDER BY r.scenario, m.name",
    "SELECT r.scenario, i.iteration, quote(i.time_s), quote(i.bubble_fraction),"
    " quote(i.exposed_comm_s), quote(i.model_flops), quote(i.tokens) FROM runs r"
    " JOIN iterations i ON i.run_id = r.id ORDER BY r.scenario, i.iteration",
    "SELECT r.scenario, g.stage, quote(g.busy_s), quote(g.idle_s), quote(g.comm_s),"
    " quote(g.memory_gib) FROM runs r JOIN stages g ON g.run_id = r.id"
    " ORDER BY r.scenario, g.stage",
    "SELECT sr.point, sr.status, sr.axis_values, r.scenario FROM sweep_runs sr"
    " LEFT JOIN runs r ON r.id = sr.run_id ORDER BY sr.point",
    NULL};

static void assert_same_rows(const char *a, const char *b)
{
    for (int i = 0; sql_rows[i]; i++) {
        char *x = dump(a, sql_rows[i]), *y = dump(b, sql_rows[i]);
        ck_assert_msg(strlen(x) > 0, "no rows for %s", sql_rows[i]);
        ck_assert_msg(strcmp(x, y) == 0, "rows differ for %s", sql_rows[i]);
        free(x);
        free(y);
    }
}

static void assert_integrity(const char *db)
{
    char *d = dump(db, "PRAGMA integrity_check");
    ck_assert_str_eq(d, "ok\n");
    free(d);
    d = dump(db, "PRAGMA foreign_key_check");
    ck_assert_str_eq(d, "");
    free(d);
}

/* ---- expansion -------------------------------------------------------- */

static void load_ok(mm_sweep *sw, const char *text)
{
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_sweep_load_string(sw, "t.yaml", text, &err);
    ck_assert_msg(rc == 0, "%s:%d: %s: %s", err.file, err.line, err.key, err.msg);
}

START_TEST(cartesian_order)
{
    mm_sweep sw;
    load_ok(&sw, "name: grid\n"
                 "set: {iterations: 1}\n"
                 "axes:\n"
                 "  - {key: parallel.llm.tp, values: [2, 4, 8]}\n"
                 "  - {key: train.schedule, values: [gpipe, 1f1b]}\n");
    ck_assert_str_eq(sw.name, "grid");
    ck_assert_int_eq((int)sw.n_points, 6);
    ck_assert_int_eq(sw.mode, MM_SWEEP_CARTESIAN);
    mm_sweep_points p;
    mm_err err;
    ck_assert_int_eq(mm_sweep_expand(&sw, &p, &err), 0);
    ck_assert_int_eq((int)p.n, 6);
    /* the last axis varies fastest */
    const char *want[6][2] = {{"parallel.llm.tp=2", "train.schedule=gpipe"},
                              {"parallel.llm.tp=2", "train.schedule=1f1b"},
                              {"parallel.llm.tp=4", "train.schedule=gpipe"},
                              {"parallel.llm.tp=4", "train.schedule=1f1b"},
                              {"parallel.llm.tp=8", "train.schedule=gpipe"},
                              {"parallel.llm.tp=8", "train.schedule=1f1b"}};
    for (int i = 0; i < 6; i++) {
        ck_assert_ptr_null(p.pts[i].scenario);
        ck_assert_int_eq(p.pts[i].n_sets, 3);
        ck_assert_str_eq(p.pts[i].sets[0], "iterations=1");
        ck_assert_str_eq(p.pts[i].sets[1], want[i][0]);
        ck_assert_str_eq(p.pts[i].sets[2], want[i][1]);
    }
    ck_assert_str_eq(p.pts[3].label, "{\"parallel.llm.tp\": 4, \"train.schedule\": \"1f1b\"}");
    char *axes = mm_sweep_axes_json(&sw);
    ck_assert_str_eq(axes, "[\"parallel.llm.tp\",\"train.schedule\"]");
    free(axes);
    mm_sweep_points_free(&p);
    mm_sweep_free(&sw);
}
END_TEST

START_TEST(zip_and_structured_values)
{
    mm_sweep sw;
    load_ok(&sw, "mode: zip\n"
                 "axes:\n"
                 "  - key: parallel.llm\n"
                 "    values: [{tp: 4, pp: 2, dp: 2}, {tp: 8, pp: 1, dp: 2}]\n"
                 "  - key: parallel.llm.layers_per_stage\n"
                 "    values: [[14, 18], []]\n");
    ck_assert_str_eq(sw.name, "t"); /* from the file name */
    ck_assert_int_eq((int)sw.n_points, 2);
    mm_sweep_points p;
    mm_err err;
    ck_assert_int_eq(mm_sweep_expand(&sw, &p, &err), 0);
    ck_assert_str_eq(p.pts[0].sets[0], "parallel.llm={tp: 4, pp: 2, dp: 2}");
    ck_assert_str_eq(p.pts[0].sets[1], "parallel.llm.layers_per_stage=[14, 18]");
    ck_assert_str_eq(p.pts[1].sets[0], "parallel.llm={tp: 8, pp: 1, dp: 2}");
    ck_assert_str_eq(p.pts[1].label,
                     "{\"parallel.llm\": {\"tp\": 8, \"pp\": 1, \"dp\": 2}, "
                     "\"parallel.llm.layers_per_stage\": []}");
    mm_sweep_points_free(&p);
    mm_sweep_free(&sw);
}
END_TEST

static void axis_values(const char *range, const char *const *want, int n)
{
    char text[512];
    snprintf(text, sizeof text, "axes:\n  - key: train.memory_reserve_gib\n    range: %s\n", range);
    mm_sweep sw;
    load_ok(&sw, text);
    ck_assert_int_eq(sw.axes[0].n_values, n);
    for (int i = 0; i < n; i++)
        ck_assert_str_eq(sw.axes[0].values[i], want[i]);
    mm_sweep_free(&sw);
}

START_TEST(ranges)
{
    const char *lin[] = {"1024", "2048", "3072", "4096"};
    axis_values("{from: 1024, to: 4096, step: 1024}", lin, 4);
    const char *lin2[] = {"1024", "2048", "3072"}; /* `to` not reached exactly */
    axis_values("{from: 1024, to: 4000, step: 1024}", lin2, 3);
    const char *down[] = {"8", "6", "4", "2"};
    axis_values("{from: 8, to: 2, step: -2}", down, 4);
    const char *frac[] = {"0.1", "0.2", "0.3"};
    axis_values("{from: 0.1, to: 0.3, step: 0.1}", frac, 3);
    const char *geo[] = {"16", "32", "64", "128"};
    axis_values("{from: 16, to: 128, factor: 2}", geo, 4);
    const char *logp[] = {"1", "10", "100"};
    axis_values("{from: 1, to: 100, points: 3, scale: log}", logp, 3);
    const char *linp[] = {"0", "2.5", "5"};
    axis_values("{from: 0, to: 5, points: 3}", linp, 3);
    const char *one[] = {"7"};
    axis_values("{from: 7, to: 7, step: 1}", one, 1);
}
END_TEST

/* A bad spec gives MM_EINPUT naming file, line and key. */
static void bad_spec(const char *text, int line, const char *key, const char *msg_part)
{
    char path[512];
    path_in(path, sizeof path, "bad.yaml");
    spit(path, text);
    mm_sweep sw;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_sweep_load(&sw, path, &err), -MM_EINPUT);
    ck_assert_int_eq(err.code, MM_EINPUT);
    ck_assert_str_eq(err.file, path);
    ck_assert_msg(err.line == line, "line %d, wanted %d (%s)", err.line, line, err.msg);
    ck_assert_str_eq(err.key, key);
    ck_assert_msg(strstr(err.msg, msg_part), "message '%s' lacks '%s'", err.msg, msg_part);
    mm_sweep_free(&sw); /* a no-op on failure */
}

START_TEST(bad_specs)
{
    bad_spec("name: x\naxes:\n  - key: train.seq_len\n    range: {from: 1, to: 4, stp: 1}\n",
             4, "axes[0].range.stp", "did you mean 'step'");
    bad_spec("axis:\n  - {key: iterations, values: [1]}\n", 1, "axis", "did you mean 'axes'");
    bad_spec("name: x\nmode: zip\naxes:\n  - {key: iterations, values: [1, 2]}\n"
             "  - {key: seed, values: [1, 2, 3]}\n",
             5, "axes[1]", "equal length");
    bad_spec("name: x\n", 1, "axes", "needs 'axes'");
    bad_spec("axes:\n  - {key: iterations}\n", 2, "axes[0]", "exactly one of");
    bad_spec("axes:\n  - {values: [1]}\n", 2, "axes[0].key", "needs the scenario key");
    bad_spec("axes:\n  - key: iterations\n    values: []\n", 3, "axes[0].values", "empty");
    bad_spec("axes:\n  - {key: iterations, range: {from: 1, to: 4}}\n", 2, "axes[0].range",
             "exactly one of 'step'");
    bad_spec("axes:\n  - {key: iterations, range: {from: 1, to: 4, step: -1}}\n", 2,
             "axes[0].range.step", "does not lead");
    bad_spec("axes:\n  - {key: iterations, range: {from: 1, to: 4, step: x}}\n", 2,
             "axes[0].range.step", "");
    bad_spec("mode: diagonal\naxes:\n  - {key: iterations, values: [1]}\n", 1, "mode", "");
    bad_spec("base: no/such/scenario.yaml\naxes:\n  - {key: iterations, values: [1]}\n", 1,
             "base", "not found");
    bad_spec("axes:\n  - {key: seed, values: [1]}\n  - {key: seed, values: [2]}\n", 3,
             "axes[1].key", "swept twice");
    /* a YAML syntax error names the file and the line */
    char path[512];
    path_in(path, sizeof path, "syntax.yaml");
    spit(path, "axes:\n  - {key: seed, values: [1, 2}\n");
    mm_sweep sw;
    mm_err err;
    ck_assert_int_eq(mm_sweep_load(&sw, path, &err), -MM_EINPUT);
    ck_assert_str_eq(err.file, path);
    ck_assert_int_eq(err.line, 2);
    /* the CLI: exit status 2 and the message */
    char args[1400];
    path_in(path, sizeof path, "bad.yaml");
    spit(path, "name: x\naxes:\n  - key: train.seq_len\n    range: {from: 1, to: 4, stp: 1}\n");
    snprintf(args, sizeof args, "sweep %s --db %s/x.db", path, tmpdir);
    ck_assert_int_eq(mmsim(args), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "bad.yaml:4: key 'axes[0].range.stp'"));
    ck_assert_int_eq(mmsim("sweep"), 2);
    ck_assert_int_eq(mmsim("sweep tests/data/sweep/small.yaml --jobs 0"), 2);
}
END_TEST

START_TEST(base_file_and_inline)
{
    char path[512], scen[512];
    path_in(scen, sizeof scen, "scen.yaml");
    /* a base scenario beside the sweep file, named relatively */
    char text[1024];
    snprintf(text, sizeof text,
             "model: %s/models/llama-2-7b.json\n"
             "cluster: {topology: %s/topologies/dgx-h100.yaml, nodes: 1}\n"
             "parallel: {llm: {tp: 4, pp: 2, dp: 1}}\n"
             "train: {global_batch: 4, seq_len: 512}\niterations: 1\n",
             getenv("MMSIM_SRCDIR") ? getenv("MMSIM_SRCDIR") : ".",
             getenv("MMSIM_SRCDIR") ? getenv("MMSIM_SRCDIR") : ".");
    spit(scen, text);
    path_in(path, sizeof path, "sw.yaml");
    spit(path, "base: scen.yaml\naxes:\n  - {key: train.micro_batch, values: [1, 2]}\n");
    mm_sweep sw;
    mm_err err;
    ck_assert_int_eq(mm_sweep_load(&sw, path, &err), 0);
    ck_assert_str_eq(sw.base, scen);
    mm_sweep_free(&sw);
    char args[1200];
    snprintf(args, sizeof args, "sweep %s --db %s/b.db --jobs 1 --json", path, tmpdir);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "\"ran\": 2"));
    /* an inline base is applied on top of the built-in default */
    load_ok(&sw, "base: {iterations: 1, cluster: {topology: topologies/dgx-a100.yaml, nodes: 2}}\n"
                 "axes:\n  - {key: seed, values: [1]}\n");
    ck_assert_str_eq(sw.base, "");
    ck_assert_int_eq(sw.n_base_sets, 2);
    ck_assert_str_eq(sw.base_sets[0], "iterations=1");
    ck_assert_str_eq(sw.base_sets[1],
                     "cluster={topology: topologies/dgx-a100.yaml, nodes: 2}");
    mm_sweep_free(&sw);
}
END_TEST

/* ---- running ---------------------------------------------------------- */

START_TEST(jobs_1_and_2_identical_then_resume)
{
    char db1[512], db2[512], args[1200];
    path_in(db1, sizeof db1, "j1.db");
    path_in(db2, sizeof db2, "j2.db");
    snprintf(args, sizeof args, "sweep tests/data/sweep/small.yaml --jobs 1 --db %s", db1);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "ran 6, skipped 0"));
    snprintf(args, sizeof args, "sweep tests/data/sweep/small.yaml --jobs 2 --db %s", db2);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    assert_same_rows(db1, db2);
    ck_assert_int_eq(q_long(db1, "SELECT count(*) FROM runs"), 6);
    ck_assert_int_eq(q_long(db2, "SELECT count(*) FROM sweep_runs WHERE status = 'done'"), 6);

    /* run again: everything is skipped, nothing is added */
    snprintf(args, sizeof args, "sweep tests/data/sweep/small.yaml --jobs 2 --db %s --json",
             db2);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "\"resumed\": true"));
    ck_assert_ptr_nonnull(strstr(out, "\"ran\": 0"));
    ck_assert_ptr_nonnull(strstr(out, "\"skipped\": 6"));
    ck_assert_int_eq(q_long(db2, "SELECT count(*) FROM runs"), 6);
    ck_assert_int_eq(q_long(db2, "SELECT count(*) FROM sweeps"), 1);
    ck_assert_int_eq(q_long(db2, "SELECT count(*) FROM sweep_runs"), 6);
    assert_same_rows(db1, db2);
    assert_integrity(db1);
    assert_integrity(db2);

    /* a run stored by `mmsim run` is a done point too */
    char db3[512];
    path_in(db3, sizeof db3, "j3.db");
    snprintf(args, sizeof args,
             "run --set model=models/llama-2-7b.json --set workload=text --set network=analytic"
             " --set iterations=1 --set train.seq_len=1024 --set train.global_batch=8 --db %s",
             db3);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    snprintf(args, sizeof args, "sweep tests/data/sweep/small.yaml --jobs 2 --db %s --json",
             db3);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "\"ran\": 5"));
    ck_assert_ptr_nonnull(strstr(out, "\"skipped\": 1"));
    ck_assert_int_eq(q_long(db3, "SELECT count(*) FROM runs"), 6);
}
END_TEST

START_TEST(failed_points_and_duplicates)
{
    char path[512], db[512], args[1200];
    path_in(path, sizeof path, "f.yaml");
    path_in(db, sizeof db, "f.db");
    /* tp 1 and 8 do not fit 16 GPUs with pp 2 x dp 2 (failed points with
     * the layout's message); the two `iterations: 1` points of tp 4 are the
     * same scenario, simulated once */
    spit(path, "set: {model: models/llama-2-7b.json, workload: text, network: analytic,\n"
               "      iterations: 1, train.seq_len: 512, train.global_batch: 4}\n"
               "axes:\n"
               "  - {key: parallel.llm.tp, values: [1, 4, 8]}\n"
               "  - {key: iterations, values: [1, 1, 2]}\n");
    snprintf(args, sizeof args, "sweep %s --jobs 2 --db %s --json", path, db);
    int rc = mmsim(args);
    ck_assert_msg(rc == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "\"failed\": 6"));
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM sweep_runs"), 9);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM sweep_runs WHERE status = 'failed'"
                                " AND run_id IS NULL AND error LIKE '%parallel.llm.dp%'"),
                     6);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM sweep_runs WHERE status = 'done'"), 3);
    ck_assert_int_eq(q_long(db, "SELECT count(DISTINCT run_id) FROM sweep_runs"
                                " WHERE status = 'done'"), 2);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM runs"), 2);

    /* a key the scenario does not know, a value of the wrong type: each
     * point fails with the loader's message, the sweep finishes */
    spit(path, "axes:\n  - {key: train.seq_lenn, values: [512, 1024]}\n");
    snprintf(args, sizeof args, "sweep %s --jobs 1 --db %s", path, db);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "failed 2"));
    ck_assert_ptr_nonnull(strstr(out, "did you mean 'train.seq_len'"));
    spit(path, "axes:\n  - {key: iterations, values: ['1']}\n");
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "key 'iterations': expected an integer"));
    assert_integrity(db);
}
END_TEST

static long count_runs(const char *db)
{
    sqlite3 *h = NULL;
    long n = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(h, 1000);
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(h, "SELECT count(*) FROM runs", -1, &s, NULL) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            n = (long)sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(h);
    return n;
}

START_TEST(killed_sweep_resumes)
{
    char path[512], db[512], ref[512], args[1200];
    path_in(path, sizeof path, "k.yaml");
    path_in(db, sizeof db, "k.db");
    path_in(ref, sizeof ref, "ref.db");
    /* 48 distinct small scenarios (the seed changes the canonical text) */
    spit(path, "name: killme\n"
               "set: {model: models/llama-2-7b.json, workload: text, network: analytic,\n"
               "      iterations: 2, train.seq_len: 2048, train.global_batch: 32, train.framework: fsdp}\n"
               "axes:\n"
               "  - {key: seed, range: {from: 1, to: 24, step: 1}}\n"
               "  - {key: train.schedule, values: [gpipe, 1f1b]}\n");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open("/dev/null", 1);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(MMSIM_EXE, MMSIM_EXE, "sweep", path, "--jobs", "2", "--db", db, (char *)NULL);
        _exit(127);
    }
    /* kill -9 once a few runs are in, while the rest are not */
    long n = 0;
    for (int i = 0; i < 20000 && n < 4; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        n = count_runs(db);
    }
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* give the workers, which die with the parent, a moment */
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    assert_integrity(db);
    long before = count_runs(db);
    ck_assert_int_ge(before, 4);
    ck_assert_int_lt(before, 48); /* killed mid-way, not after the end */
    char *kept = dump(db, "SELECT r.id, r.scenario, m.name, quote(m.value) FROM runs r"
                          " JOIN metrics m ON m.run_id = r.id ORDER BY r.id, m.name");
    /* every run that is there is whole */
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM runs r WHERE"
                                " (SELECT count(*) FROM metrics m WHERE m.run_id = r.id) != 22"
                                " OR (SELECT count(*) FROM iterations i WHERE i.run_id = r.id) != 2"),
                     0);

    /* restart: it finishes, runs none twice, keeps what was there */
    snprintf(args, sizeof args, "sweep %s --jobs 2 --db %s --json", path, db);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM runs"), 48);
    ck_assert_int_eq(q_long(db, "SELECT count(DISTINCT scenario) FROM runs"), 48);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM sweeps"), 1);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM sweep_runs WHERE status = 'done'"), 48);
    char *after = dump(db, "SELECT r.id, r.scenario, m.name, quote(m.value) FROM runs r"
                           " JOIN metrics m ON m.run_id = r.id ORDER BY r.id, m.name");
    ck_assert_msg(strncmp(kept, after, strlen(kept)) == 0, "runs stored before the kill changed");
    free(kept);
    free(after);
    assert_integrity(db);
    /* and the result is the one an uninterrupted sweep gives */
    snprintf(args, sizeof args, "sweep %s --jobs 1 --db %s", path, ref);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    assert_same_rows(ref, db);
}
END_TEST

START_TEST(runner_api_and_progress)
{
    /* the library path the planner will use: points without a sweep */
    char db[512];
    path_in(db, sizeof db, "api.db");
    const char *s1[] = {"model=models/llama-2-7b.json", "workload=text", "network=analytic",
                        "iterations=1", "train.seq_len=512", "train.global_batch=4"};
    const char *s2[] = {"model=models/llama-2-7b.json", "workload=text", "network=analytic",
                        "iterations=1", "train.seq_len=512", "train.global_batch=8"};
    const char *s3[] = {"iterations=x"};
    mm_point pts[] = {{.sets = s1, .n_sets = 6}, {.sets = s2, .n_sets = 6},
                      {.sets = s3, .n_sets = 1}, {.sets = s1, .n_sets = 6}};
    mm_point_result res[4];
    mm_runner_opts o = {.db = db, .jobs = 2, .version = "test"};
    mm_runner_progress sum;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_runner_run(&o, pts, 4, res, &sum, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(res[0].status, MM_POINT_RAN);
    ck_assert_int_eq(res[1].status, MM_POINT_RAN);
    ck_assert_int_eq(res[2].status, MM_POINT_FAILED);
    ck_assert_ptr_nonnull(strstr(res[2].error, "iterations"));
    ck_assert_int_eq(res[3].status, MM_POINT_SKIPPED);
    ck_assert_int_eq(res[3].run_id, res[0].run_id);
    ck_assert_int_eq((int)sum.total, 4);
    ck_assert_int_eq((int)sum.done, 4);
    ck_assert_int_eq((int)sum.ran, 2);
    ck_assert_int_eq((int)sum.failed, 1);
    ck_assert_int_eq((int)sum.skipped, 1);
    ck_assert_int_eq((int)sum.sweep_id, 0);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM sweep_runs"), 0);
    ck_assert_int_eq(mm_runner_have_mpi(), MMSIM_MPI);
    /* MPI mode in a build without MPI is refused */
    if (!mm_runner_have_mpi()) {
        o.mpi_size = 3;
        ck_assert_int_eq(mm_runner_run(&o, pts, 4, res, NULL, &err), -MM_EINPUT);
    }
}
END_TEST

START_TEST(schema_v1_migrates)
{
    char db[512];
    path_in(db, sizeof db, "v1.db");
    mm_store *st = NULL;
    mm_err err;
    ck_assert_int_eq(mm_store_open(&st, db, &err), 0);
    mm_metrics m;
    memset(&m, 0, sizeof m);
    m.iteration_time_s = 1;
    m.gpus = 8;
    mm_run_record rec = {.scenario_text = "x: 1\n", .version = "0.1.0",
                         .created_at = "2024-01-01T00:00:00Z"};
    int64_t id = 0;
    ck_assert_int_eq(mm_store_write_run(st, &rec, &m, &id, &err), 0);
    ck_assert_int_eq(sqlite3_exec(mm_store_sqlite(st),
                                  "DROP VIEW sweep_summary; DROP VIEW run_summary; DROP TABLE run_layouts;"
                                  " ALTER TABLE runs DROP COLUMN workload;"
                                  " DROP TABLE sweep_runs; DROP TABLE sweeps;"
                                  " ALTER TABLE iterations DROP COLUMN load_imbalance;"
                                  " ALTER TABLE iterations DROP COLUMN stage_spread_s;"
                                  " ALTER TABLE iterations DROP COLUMN encoder_load_imbalance;"
                                  " ALTER TABLE iterations DROP COLUMN padded_fraction;"
                                  " ALTER TABLE iterations DROP COLUMN peak_memory_gib;"
                                  " ALTER TABLE iterations DROP COLUMN pad_flops;"
                                  " ALTER TABLE stages DROP COLUMN host_s; ALTER TABLE stages DROP COLUMN exposed_host_s;"
                                  " ALTER TABLE stages DROP COLUMN data_wait_s; ALTER TABLE iterations DROP COLUMN data_wait_s;"
                                  " ALTER TABLE iterations DROP COLUMN data_h2d_s;" /* version 11's */
                                  " PRAGMA user_version = 1;", NULL, NULL, NULL), SQLITE_OK);
    mm_store_close(st);
    ck_assert_int_eq(mm_store_open(&st, db, &err), 0);
    mm_store_close(st);
    ck_assert_int_eq(q_long(db, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM runs"), 1);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM sweeps"), 0);
    assert_integrity(db);
}
END_TEST

START_TEST(report_tables_and_csv)
{
    char db[512], args[1200];
    path_in(db, sizeof db, "r.db");
    snprintf(args, sizeof args, "sweep tests/data/sweep/small.yaml --jobs 2 --db %s -q", db);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_str_eq(errtxt, "");
    snprintf(args, sizeof args, "report %s", db);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "sweeps (1)"));
    ck_assert_ptr_nonnull(strstr(out, "runs (6)"));
    ck_assert_ptr_nonnull(strstr(out, "iteration_time_s"));
    snprintf(args, sizeof args, "report %s --sweep last --csv --metrics tokens_per_s,mfu", db);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "point,status,run,train.global_batch,parallel.llm,oom,"
                                      "tokens_per_s,mfu,error\n"));
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, 7);
    ck_assert_ptr_nonnull(strstr(out, "\n0,done,"));
    ck_assert_ptr_nonnull(strstr(out, ",16,\"{\"\"tp\"\":2,\"\"pp\"\":2,\"\"dp\"\":4}\",0,"));
    snprintf(args, sizeof args, "report %s --sweep 1", db);
    ck_assert_int_eq(mmsim(args), 0);
    ck_assert_ptr_nonnull(strstr(out, "sweep 1: points (6)"));
    snprintf(args, sizeof args, "report %s --sweep 9", db);
    ck_assert_int_eq(mmsim(args), 2);
    snprintf(args, sizeof args, "report %s --metrics mfuu", db);
    ck_assert_int_eq(mmsim(args), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "did you mean 'mfu'"));
    snprintf(args, sizeof args, "report %s/none.db", tmpdir);
    ck_assert_int_eq(mmsim(args), 2);
    ck_assert_int_eq(mmsim("report tests/data/sweep/small.yaml"), 2);
    /* progress lines on a non-terminal stderr */
    snprintf(args, sizeof args, "sweep tests/data/sweep/small.yaml --db %s/p.db", tmpdir);
    ck_assert_int_eq(mmsim(args), 0);
    ck_assert_ptr_nonnull(strstr(errtxt, "mmsim sweep: 6/6 points (100%)"));
    ck_assert_ptr_nonnull(strstr(errtxt, "(done)"));
}
END_TEST

static Suite *sweep_suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("sweep");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cartesian_order);
    tcase_add_test(tc, zip_and_structured_values);
    tcase_add_test(tc, ranges);
    tcase_add_test(tc, bad_specs);
    tcase_add_test(tc, base_file_and_inline);
    tcase_add_test(tc, jobs_1_and_2_identical_then_resume);
    tcase_add_test(tc, failed_points_and_duplicates);
    tcase_add_test(tc, killed_sweep_resumes);
    tcase_add_test(tc, runner_api_and_progress);
    tcase_add_test(tc, schema_v1_migrates);
    tcase_add_test(tc, report_tables_and_csv);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sweep_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
