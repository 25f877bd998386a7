/* store_common.h - what the results-store suites (test_store.c,
 * test_store_write.c, test_store_report.c) share: the two literal
 * scenarios, the fixture (a fresh mkdtemp directory per test, removed
 * afterwards), files read and written whole, a sample run record, and
 * opening, writing and counting runs that must succeed.
 * Static inline, so a suite that does not call one does not warn; but
 * remove_tree and run_store_suite, which every suite's main calls, are
 * plain static (remove_tree inlined into its own recursion, gcc
 * -Wformat-truncation sees a longer path).
 * Not for: assertions of their own. */
#ifndef MM_TEST_STORE_COMMON_H
#define MM_TEST_STORE_COMMON_H

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "store/report.h"
#include "store/store.h"
#include "store/store_private.h" /* mm_store_sqlite: the tables, read directly */

#include "mmsim_exe.h"
#include "exec/metrics.h"

static const char scenario_a[] =
    "model: models/llama-2-7b.json\ncluster: {topology: topologies/dgx-h100.yaml, nodes: 1}\n"
    "iterations: 2\nseed: 1\n";

static const char scenario_b[] =
    "model: models/llama-2-7b.json\ncluster: {topology: topologies/dgx-h100.yaml, nodes: 2}\n"
    "iterations: 2\nseed: 1\n";

/* ---- fixture: a fresh temporary directory per test -------------------- */

/* main() makes `root` (in the parent process) and removes it with all it
 * holds at the end, so a failing test, whose teardown Check skips, leaves
 * nothing behind either.  Each test works in its own `tmpdir` under it. */
static char root[256];

static char tmpdir[300];

static inline void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/t-XXXXXX", root);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

/* Removes a directory tree (no symbolic links are followed: lstat). */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[1024];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
                remove_tree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* A suite's main: the scratch root under $TMPDIR, the suite run, the root
 * removed.  Returns the process's exit status. */
static int run_store_suite(Suite *suite)
{
    const char *base = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/mmsim-store-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(root)) {
        perror(root);
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tree(root);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static inline void teardown(void)
{
    remove_tree(tmpdir);
}

static inline void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

static inline int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static inline void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- sample data ------------------------------------------------------ */

enum { N_ITERS = 3, N_STAGES = 2, N_DP = 2 };

typedef struct sample {
    mm_metrics m;
    mm_iter_metrics iters[N_ITERS];
    mm_stage_metrics stages[N_STAGES];
    double dp_load[N_ITERS * N_DP];
} sample;

/* Fills a sample run; `k` shifts every value so two runs differ. */
static inline void sample_fill(sample *s, double k)
{
    memset(s, 0, sizeof *s);
    s->m.iteration_time_s = 1.25 + k;
    s->m.tokens_per_s = 123456.5 + k;
    s->m.samples_per_s = 30.125 + k;
    s->m.mfu = 0.42;
    s->m.hfu = 0.55;
    s->m.tflops_per_gpu = 415.3 + k;
    s->m.hw_tflops_per_gpu = 540.1 + k;
    s->m.bubble_fraction = 0.1;
    s->m.exposed_comm_s = 0.02;
    s->m.peak_memory_gib = NAN; /* not modelled yet: must become NULL */
    s->m.iteration_time_p50_s = 1.125;
    s->m.iteration_time_p99_s = 1.5;
    s->m.padded_flops_fraction = 0.25;
    s->m.oom = false;
    s->m.gpus = 8;
    s->m.events = 12345;
    s->m.wall_s = 0.5;
    for (int i = 0; i < N_ITERS; i++) {
        s->iters[i] = (mm_iter_metrics){
            .iteration = i, .time_s = 1.0 + i, .bubble_fraction = 0.125 * i,
            .exposed_comm_s = i == 1 ? NAN : 0.01 * i, .model_flops = 1e15 * (i + 1),
            .hw_flops = 1.3e15 * (i + 1), .tokens = 4096.0 * 8, .samples = 8};
    }
    for (int i = 0; i < N_STAGES; i++) {
        s->stages[i] = (mm_stage_metrics){.stage = i, .busy_s = 0.9 - 0.1 * i,
                                          .idle_s = 0.1 + 0.1 * i, .comm_s = 0.05,
                                          .memory_gib = i == 0 ? 61.5 : NAN};
    }
    for (int i = 0; i < N_ITERS * N_DP; i++) /* one unknown: NULL */
        s->dp_load[i] = i == 3 ? NAN : 0.1 * (i + 1) + k / 3.0;
    s->m.dp_ranks = N_DP;
    s->m.dp_rank_load_s = s->dp_load;
    s->m.n_iters = N_ITERS;
    s->m.iters = s->iters;
    s->m.n_stages = N_STAGES;
    s->m.stages = s->stages;
}

static inline mm_run_record record(const char *text)
{
    return (mm_run_record){.scenario_text = text,
                           .scenario_source = "<default>",
                           .model = "models/llama-2-7b.json",
                           .topology = "topologies/dgx-h100.yaml",
                           .seed = 7,
                           .version = "0.1.0",
                           .created_at = "2024-05-01T12:00:00Z"};
}

static inline mm_store *open_ok(const char *path)
{
    mm_store *st = NULL;
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_store_open(&st, path, &err);
    ck_assert_msg(rc == 0, "open %s: %s", path, err.msg);
    ck_assert_ptr_nonnull(st);
    return st;
}

static inline int64_t write_ok(mm_store *st, const char *text, double k)
{
    sample s;
    sample_fill(&s, k);
    mm_run_record rec = record(text);
    mm_err err;
    int64_t id = -1;
    int rc = mm_store_write_run(st, &rec, &s.m, &id, &err);
    ck_assert_msg(rc == 0, "write: %s", err.msg);
    ck_assert_int_gt(id, 0);
    return id;
}

static inline int64_t count_runs(mm_store *st)
{
    int64_t n = -1;
    mm_err err;
    ck_assert_int_eq(mm_store_count_runs(st, &n, &err), 0);
    return n;
}

/* One integer from a query on the store's connection. */
static inline int64_t q_int(mm_store *st, const char *sql)
{
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(mm_store_sqlite(st), sql, -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

#endif
