/* test_limits.c - the bounds of docs/reliability.md, one test each, and the
 * messages of the reliability issue: alias bombs and deep documents, device
 * files, directories, NUL bytes, invalid UTF-8 and oversized files; absurd
 * cluster, iteration and batch sizes; the database path checked before any
 * simulation, missing folders at every depth, a full disk (RLIMIT_FSIZE in a
 * forked child) leaving the database intact, Ctrl-C during a sweep; and the
 * messages that must name their key, index or file.  Library calls where the
 * library decides, the mmsim binary where the CLI does.
 * Not for: the parsers' normal answers (test_config.c and friends). */
#include <check.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mmsim_exe.h"
#include "exec/exec.h"
#include "store/store.h"
#include "store/store_private.h"
#include "util/doc.h"
#include "util/file.h"
#include "util/limits.h"
#include "exec/metrics.h"

static char dir[256];
static char out[1 << 16], errbuf[1 << 16];

static void setup(void) { mmx_tmpdir(dir, sizeof dir, "limits"); }
static void teardown(void) { mmx_rmdir(dir); }

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

static int run(const char *args) { return mmx_run(dir, NULL, args, out, sizeof out, errbuf, sizeof errbuf); }

/* Nine levels, each a list of nine aliases of the level below: 9^9 nodes
 * once expanded, about 300 bytes.  `indent` puts it under a key. */
static void bomb(char *buf, size_t len, int levels, const char *indent)
{
    size_t n = (size_t)snprintf(buf, len, "%sa: &a [x,x,x,x,x,x,x,x,x]\n", indent);
    for (int l = 1; l < levels; l++) {
        char c = (char)('a' + l), p = (char)('a' + l - 1);
        n += (size_t)snprintf(buf + n, len - n, "%s%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n",
                              indent, c, c, p, p, p, p, p, p, p, p, p);
    }
}

/* ---- documents ---------------------------------------------------------- */

START_TEST(test_alias_bomb_refused)
{
    char text[2048];
    bomb(text, sizeof text, 9, "");
    ck_assert_uint_lt(strlen(text), 400);
    mm_doc doc;
    mm_err err;
    ck_assert_int_eq(mm_doc_load_string(&doc, "bomb.yaml", text, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "once aliases are expanded"));
    ck_assert_int_gt(err.line, 0); /* the alias where the count ran out */
    /* Eight levels (43 million nodes) too, which took 30 s and 6.8 GB. */
    bomb(text, sizeof text, 8, "");
    ck_assert_int_eq(mm_doc_load_string(&doc, "bomb.yaml", text, &err), -MM_EINPUT);
}
END_TEST

/* Wherever the aliases sit: at the top (unknown keys), under `perturb` (a
 * known key whose reader walks the list), under `train`. */
START_TEST(test_alias_bomb_cli_anywhere)
{
    static const char *const heads[] = {"", "perturb:\n  - kind: slow_gpu\n    x:\n", "train:\n"};
    static const char *const indents[] = {"", "      ", "  "};
    for (int i = 0; i < 3; i++) {
        char text[4096], path[600], args[700];
        size_t n = (size_t)snprintf(text, sizeof text, "%s", heads[i]);
        bomb(text + n, sizeof text - n, 9, indents[i]);
        path_in(path, sizeof path, "bomb.yaml");
        write_file(path, text, strlen(text));
        snprintf(args, sizeof args, "run --no-db %s", path);
        ck_assert_int_eq(run(args), 2);
        ck_assert_msg(strstr(errbuf, "once aliases are expanded"), "case %d: %s", i, errbuf);
    }
}
END_TEST

START_TEST(test_alias_node_count_and_depth)
{
    /* 99 aliases of a 1,001-item list: 1,006 + 99 x 1,003 = 100,303 nodes,
     * just past the bound. */
    size_t cap = 1 << 16;
    char *text = malloc(cap);
    size_t n = (size_t)snprintf(text, cap, "l: &l [");
    for (int i = 0; i < 1001; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s0", i ? "," : "");
    n += (size_t)snprintf(text + n, cap - n, "]\nm: [");
    for (int i = 0; i < 99; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s*l", i ? "," : "");
    snprintf(text + n, cap - n, "]\n");
    mm_doc doc;
    mm_err err;
    ck_assert_int_eq(mm_doc_load_string(&doc, "many.yaml", text, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than 100000 nodes"));
    /* 98 aliases (99,300 nodes) stay under it and load. */
    char *cut = strstr(text, "m: [");
    n = (size_t)(cut - text) + 4;
    for (int i = 0; i < 98; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s*l", i ? "," : "");
    snprintf(text + n, cap - n, "]\n");
    ck_assert_int_eq(mm_doc_load_string(&doc, "many.yaml", text, &err), 0);
    mm_doc_free(&doc);
    /* Depth through aliases: six anchors, each 50 lists deep around the
     * previous one, expand to 300 levels (the bound is 256). */
    n = 0;
    for (int a = 0; a < 6; a++) {
        n += (size_t)snprintf(text + n, cap - n, "k%d: &k%d ", a, a);
        for (int d = 0; d < 50; d++)
            text[n++] = '[';
        n += (size_t)snprintf(text + n, cap - n, a ? "*k%d" : "x", a - 1);
        for (int d = 0; d < 50; d++)
            text[n++] = ']';
        text[n++] = '\n';
    }
    text[n] = '\0';
    ck_assert_int_eq(mm_doc_load_string(&doc, "deep.yaml", text, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "nested deeper than 256 levels"));
    free(text);
}
END_TEST

START_TEST(test_device_files_refused_by_name)
{
    ck_assert_int_eq(run("run --no-db --set model=/dev/zero"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "/dev/zero: a character device, not a regular file"));
    ck_assert_int_eq(run("run --no-db --set cluster.topology=/dev/urandom"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "/dev/urandom: a character device"));
    char args[700];
    snprintf(args, sizeof args, "run --no-db %s", dir);
    ck_assert_int_eq(run(args), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "a directory, not a regular file"));
    /* A FIFO does not block the open. */
    char fifo[600];
    path_in(fifo, sizeof fifo, "pipe.yaml");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    snprintf(args, sizeof args, "run --no-db %s", fifo);
    ck_assert_int_eq(run(args), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "a FIFO"));
}
END_TEST

START_TEST(test_nul_byte_and_utf8_refused_with_line)
{
    char path[600], args[700];
    path_in(path, sizeof path, "nul.yaml");
    write_file(path, "seed: 1\niterations: 1\nnetwork: fl\0ow\n", 35);
    snprintf(args, sizeof args, "run --no-db %s", path);
    ck_assert_int_eq(run(args), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "nul.yaml:3: a NUL byte"));
    /* The same in a CSV (a trace). */
    mm_err err;
    path_in(path, sizeof path, "nul.csv");
    write_file(path, "id,text_tokens\n0,1\n1,\0\n", 23);
    FILE *f = mm_file_open(path, MM_FILE_MAX_TRACE, &err);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(err.line, 3);
    /* A byte that is not UTF-8, in a '%' directive line (a fuzzer finding:
     * the previous YAML library looped forever on it). */
    path_in(path, sizeof path, "utf8.yaml");
    write_file(path, "seed: 1\n% x\xff\xff\n", 13);
    snprintf(args, sizeof args, "run --no-db %s", path);
    ck_assert_int_eq(run(args), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "utf8.yaml:2: byte 0xff is not valid UTF-8"));
}
END_TEST

START_TEST(test_file_size_limits)
{
    /* Sparse files: the size is refused before a byte is read. */
    char path[600];
    path_in(path, sizeof path, "big.yaml");
    FILE *f = fopen(path, "w");
    ck_assert_int_eq(ftruncate(fileno(f), MM_FILE_MAX_CONFIG + 1), 0);
    fclose(f);
    mm_doc doc;
    mm_err err;
    ck_assert_int_eq(mm_doc_load_file(&doc, path, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "limit of 64 MiB"));
    path_in(path, sizeof path, "big.csv");
    f = fopen(path, "w");
    ck_assert_int_eq(ftruncate(fileno(f), MM_FILE_MAX_TRACE + 1), 0);
    fclose(f);
    ck_assert_ptr_null(mm_file_open(path, MM_FILE_MAX_TRACE, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "limit of 1 GiB"));
    /* A trace may be larger than a config. */
    f = fopen(path, "w");
    ck_assert_int_eq(ftruncate(fileno(f), MM_FILE_MAX_CONFIG + 1), 0);
    fclose(f);
    ck_assert_ptr_null(mm_file_open(path, MM_FILE_MAX_CONFIG, &err));
    /* (its zeros are NUL bytes: refused for that, at line 1) */
    ck_assert_ptr_null(mm_file_open(path, MM_FILE_MAX_TRACE, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "NUL byte"));
}
END_TEST


/* A tab before a block indicator on a key's line (once a crash of the
 * previous YAML library, kept in tests/data/fuzz/) is a syntax error at its
 * line; the same characters in a quoted string or a comment stay valid. */
START_TEST(test_tab_before_block_indicator_refused)
{
    mm_doc doc;
    mm_err err;
    ck_assert_int_eq(mm_doc_load_string(&doc, "t.yaml", "seed: 1\n? : x:\t-\n", &err), -MM_EINPUT);
    ck_assert_int_eq(err.line, 2);
    ck_assert_str_eq(err.file, "t.yaml");
    ck_assert_ptr_nonnull(strstr(err.msg, "did not find expected key"));
    ck_assert_int_eq(mm_doc_load_string(&doc, "t.yaml", "a: \"x:\t- y\"\nb: 1 # c:\t- d\n", &err), 0);
    mm_doc_free(&doc);
}
END_TEST

/* ---- sizes -------------------------------------------------------------- */

START_TEST(test_absurd_sizes_refused)
{
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --op allreduce --nodes 100000"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "key 'nodes': 100000 nodes (as asked: cluster.nodes or --nodes) x 8 GPUs = 800000 GPUs, above the limit of 65536"));
    ck_assert_int_eq(run("run --no-db --set cluster.nodes=8193"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "above the limit of 65536 GPUs"));
    ck_assert_int_eq(run("run --no-db --set iterations=100000"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "--set: key 'iterations': 100000 iterations are above the limit of 10000"));
    ck_assert_int_eq(run("run --no-db --set model=models/llama-2-7b.json --set workload=text"
                         " --set train.global_batch=65536"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "key 'train.global_batch': 32768 micro-batches per DP replica"));
    ck_assert_int_eq(run("run --no-db --set train.global_batch=100000000"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "above the limit of 16777216"));
    ck_assert_int_eq(run("plan --iterations 20000 --no-db"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "key '--iterations'"));
}
END_TEST

/* ---- the database path -------------------------------------------------- */

START_TEST(test_db_checked_before_simulation)
{
    /* The timeline is written after the simulation: with a bad --db it
     * must not be there, since nothing was simulated. */
    char trace[600], args[1400];
    path_in(trace, sizeof trace, "t.json");
    const char *const bad[] = {"README.md", "/", dir};
    static const char *const why[] = {"not an SQLite database", "a directory", "a directory"};
    for (int i = 0; i < 3; i++) {
        const char *db = bad[i];
        snprintf(args, sizeof args, "run --set iterations=1 --db %s --trace %s", db, trace);
        ck_assert_int_eq(run(args), 2);
        ck_assert_msg(strstr(errbuf, why[i]), "%s: %s", db, errbuf);
        ck_assert_int_ne(access(trace, F_OK), 0);
    }
    /* A newer schema: refused, the file untouched, nothing simulated. */
    char db[600];
    path_in(db, sizeof db, "new.db");
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    snprintf(args, sizeof args, "run --set iterations=1 --db %s --trace %s", db, trace);
    ck_assert_int_eq(run(args), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "schema version 99 is newer"));
    ck_assert_int_ne(access(trace, F_OK), 0);
    snprintf(args, sizeof args, "sweep tests/data/sweep/small.yaml --db %s", db);
    ck_assert_int_eq(run(args), 2);
    snprintf(args, sizeof args, "plan --gpus 16 --db %s", db);
    ck_assert_int_eq(run(args), 2);
}
END_TEST

START_TEST(test_db_missing_folders_every_depth)
{
    /* One rule for every depth: every missing folder is made. */
    static const char *const rel[] = {"a.db", "one/a.db", "x/y/z/a.db"};
    for (int i = 0; i < 3; i++) {
        char db[700], args[900];
        snprintf(db, sizeof db, "%s/%s", dir, rel[i]);
        snprintf(args, sizeof args,
                 "run --set model=models/llama-2-7b.json --set workload=text --set iterations=1"
                 " --set train.seq_len=512 --set train.global_batch=8 --db %s", db);
        ck_assert_msg(run(args) == 0, "%s: %s", db, errbuf);
        struct stat sb;
        ck_assert_int_eq(stat(db, &sb), 0);
    }
    /* A file in the way of a folder is refused by name. */
    char args[900];
    snprintf(args, sizeof args, "run --set iterations=1 --db %s/a.db/b.db", dir);
    ck_assert_int_eq(run(args), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "is not a folder"));
}
END_TEST

static int count_runs(const char *db)
{
    mm_store *st = NULL;
    mm_err err;
    ck_assert_int_eq(mm_store_open(&st, db, &err), 0);
    int64_t n = -1;
    ck_assert_int_eq(mm_store_count_runs(st, &n, &err), 0);
    sqlite3_stmt *s;
    ck_assert_int_eq(sqlite3_prepare_v2(mm_store_sqlite(st), "PRAGMA integrity_check", -1, &s, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    mm_store_close(st);
    return (int)n;
}

/* A run too large for the file-size limit: the write fails with a message
 * (MM_EINTERNAL: exit 1) and the database keeps what it had. */
START_TEST(test_full_disk_leaves_database_intact)
{
    char db[600];
    path_in(db, sizeof db, "full.db");
    char args[900];
    snprintf(args, sizeof args,
             "run --set model=models/llama-2-7b.json --set workload=text --set iterations=1"
             " --set train.seq_len=512 --set train.global_batch=8 --db %s", db);
    ck_assert_int_eq(run(args), 0);
    ck_assert_int_eq(count_runs(db), 1);
    /* In a forked child, the library: 10,000 iteration rows do not fit in
     * a 64 KiB file-size limit. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        mm_store *st = NULL;
        mm_err err;
        if (mm_store_open(&st, db, &err) != 0)
            _exit(3);
        struct rlimit rl = {.rlim_cur = 64 << 10, .rlim_max = 64 << 10};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(4);
        enum { N = 10000 };
        mm_iter_metrics *it = calloc(N, sizeof *it);
        for (int i = 0; i < N; i++) {
            it[i].iteration = i;
            it[i].time_s = 1.0 + i;
        }
        mm_metrics m;
        memset(&m, 0, sizeof m);
        m.iters = it;
        m.n_iters = N;
        mm_run_record rec = {.scenario_text = "seed: 9\n", .version = "t",
                             .created_at = "2026-01-01T00:00:00Z"};
        int rc = mm_store_write_run(st, &rec, &m, NULL, &err);
        mm_store_close(st);
        _exit(rc == -MM_EINTERNAL && (strstr(err.msg, "I/O error") || strstr(err.msg, "full")) ? 0 : 5);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    ck_assert_int_eq(count_runs(db), 1);
    /* The CLI under the same limit: exit 1, a message, the database intact. */
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "(ulimit -f 64; %s run --set iterations=300 --set network=analytic"
             " --set model=models/llama-2-7b.json --set workload=text --set train.seq_len=512"
             " --set train.global_batch=8 --db %s) >%s/out 2>%s/err", MMSIM_EXE, db, dir, dir);
    int st = system(cmd);
    char p[700];
    snprintf(p, sizeof p, "%s/err", dir);
    mmx_slurp(p, errbuf, sizeof errbuf);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d: %s", st, errbuf);
    ck_assert_msg(strstr(errbuf, "the database was left as it was"), "%s", errbuf);
    ck_assert_int_eq(count_runs(db), 1);
}
END_TEST

/* Ctrl-C in the middle of a sweep: every run committed before it is there
 * whole, every point is either done with its run or absent, and running
 * the sweep again completes it.  (If the sweep ends before the signal, the
 * same holds; nothing here depends on speed.) */
START_TEST(test_sigint_during_sweep_leaves_database_consistent)
{
    char db[600], spec[600];
    path_in(db, sizeof db, "int.db");
    path_in(spec, sizeof spec, "int.yaml");
    const char *text = "name: int\n"
                       "set: {model: models/llama-2-7b.json, workload: text, iterations: 1,"
                       " train.global_batch: 128}\n"
                       "axes:\n  - key: seed\n    values: [1, 2, 3, 4, 5, 6]\n";
    write_file(spec, text, strlen(text));
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setpgid(0, 0); /* its own process group, as a shell job: Ctrl-C reaches all of it */
        execl(MMSIM_EXE, MMSIM_EXE, "sweep", spec, "--jobs", "1", "--quiet", "--db", db, (char *)NULL);
        _exit(127);
    }
    /* Wait for the first committed point (or the end), then interrupt. */
    for (int i = 0; i < 6000; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            pid = 0;
            break;
        }
        if (access(db, F_OK) == 0) {
            sqlite3 *h;
            int n = 0;
            if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
                sqlite3_stmt *s;
                if (sqlite3_prepare_v2(h, "SELECT count(*) FROM sweep_runs", -1, &s, NULL) == SQLITE_OK &&
                    sqlite3_step(s) == SQLITE_ROW)
                    n = sqlite3_column_int(s, 0);
                sqlite3_finalize(s);
            }
            sqlite3_close(h);
            if (n > 0)
                break;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int interrupted = 0;
    if (pid > 0) {
        kill(-pid, SIGINT);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        interrupted = WIFSIGNALED(status) && WTERMSIG(status) == SIGINT;
    }
    int runs = count_runs(db); /* integrity_check: ok */
    mm_store *st = NULL;
    mm_err err;
    ck_assert_int_eq(mm_store_open(&st, db, &err), 0);
    sqlite3_stmt *s;
    ck_assert_int_eq(sqlite3_prepare_v2(mm_store_sqlite(st),
                                        "SELECT count(*) FROM sweep_runs sr LEFT JOIN runs r ON r.id = sr.run_id"
                                        " WHERE sr.status = 'done' AND r.id IS NULL", -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), 0); /* no point without its run */
    sqlite3_finalize(s);
    mm_store_close(st);
    ck_assert_int_le(runs, 6);
    if (interrupted)
        ck_assert_int_lt(runs, 6);
    char args[1400];
    snprintf(args, sizeof args, "sweep %s --jobs 1 --quiet --db %s", spec, db);
    ck_assert_msg(run(args) == 0, "%s", errbuf);
    ck_assert_int_eq(count_runs(db), 6);
}
END_TEST

/* ---- run-time invariants ------------------------------------------------- */

START_TEST(test_exec_invariants_detected)
{
    mm_graph g;
    ck_assert_int_eq(mm_graph_init(&g, 1), 0);
    mm_op op = {.rank = 0, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .layer = -1,
                .stage = 0, .mb = -1, .coll = -1, .peer = -1, .dur_s = 1e-6};
    ck_assert_int_ge(mm_graph_add_op(&g, &op), 0);
    ck_assert_int_ge(mm_graph_add_op(&g, &op), 0);
    ck_assert_int_eq(mm_graph_finish(&g), 0);
    uint8_t once[2] = {1, 1}, twice[2] = {1, 2};
    mm_time start[2] = {0, 10}, end[2] = {10, 20};
    mm_err err;
    ck_assert_int_eq(mm_exec_check(&g, once, start, end, 0, 20, &err), 0);
    ck_assert_int_eq(mm_exec_check(&g, twice, start, end, 0, 20, &err), -MM_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "op 1 (rank 0) ran 2 times"));
    mm_time overlap[2] = {0, 5};
    ck_assert_int_eq(mm_exec_check(&g, once, overlap, end, 0, 20, &err), -MM_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "ran ops 0 and 1 at once"));
    mm_time back[2] = {10, 20}, back_end[2] = {5, 20};
    ck_assert_int_eq(mm_exec_check(&g, once, back, back_end, 0, 20, &err), -MM_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "time went backwards at op 0"));
    mm_graph_free(&g);
}
END_TEST

/* ---- messages ----------------------------------------------------------- */

START_TEST(test_duplicate_key_named)
{
    mm_doc doc;
    mm_err err;
    ck_assert_int_eq(mm_doc_load_string(&doc, "d.yaml", "seed: 1\niterations: 2\nseed: 3\n", &err),
                     -MM_EINPUT);
    ck_assert_str_eq(err.key, "seed");
    ck_assert_int_eq(err.line, 3);
    ck_assert_ptr_nonnull(strstr(err.msg, "duplicate key"));
    ck_assert_int_eq(mm_doc_load_string(&doc, "d.json", "{\"hidden_size\": 1,\n \"hidden_size\": 2}",
                                        &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "hidden_size");
    ck_assert_int_eq(mm_doc_load_string(&doc, "d.yaml", "a:\n  'b c': 1\n  'b c': 2\n", &err),
                     -MM_EINPUT);
    ck_assert_str_eq(err.key, "b c");
}
END_TEST

START_TEST(test_set_index_out_of_range)
{
    ck_assert_int_eq(run("run --no-db --set perturb.0.factor=1.5"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "key 'perturb.0.factor': index 0 is out of range"));
    ck_assert_int_eq(run("run --no-db --set perturb=[] --set perturb.2.factor=1.5"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "index 2 is out of range"));
    ck_assert_ptr_nonnull(strstr(errbuf, "0 entries"));
}
END_TEST

START_TEST(test_cli_messages_without_stray_quotes)
{
    ck_assert_int_eq(run("collective --op allreduce"), 2);
    ck_assert_str_eq(errbuf, "mmsim: <cli>: key '--cluster': is required (see mmsim help collective)\n");
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --op allreduce --min 8G --max 1K"), 2);
    ck_assert_str_eq(errbuf, "mmsim: <cli>: key '-b/--minbytes': is above -e/--maxbytes (see mmsim help collective)\n");
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --op bogus"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "'bogus'"));
    ck_assert_ptr_null(strstr(errbuf, "''"));
}
END_TEST

START_TEST(test_missing_pass_times_names_key)
{
    ck_assert_int_eq(run("run --no-db --set model=models/llama-2-7b.json --set train.pass_times=/nonexistent.csv"), 2);
    ck_assert_ptr_nonnull(strstr(errbuf, "/nonexistent.csv: key 'train.pass_times': cannot open"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_alias_bomb_refused);
    tcase_add_test(tc, test_alias_bomb_cli_anywhere);
    tcase_add_test(tc, test_alias_node_count_and_depth);
    tcase_add_test(tc, test_device_files_refused_by_name);
    tcase_add_test(tc, test_nul_byte_and_utf8_refused_with_line);
    tcase_add_test(tc, test_file_size_limits);
    tcase_add_test(tc, test_tab_before_block_indicator_refused);
    tcase_add_test(tc, test_absurd_sizes_refused);
    tcase_add_test(tc, test_db_checked_before_simulation);
    tcase_add_test(tc, test_db_missing_folders_every_depth);
    tcase_add_test(tc, test_full_disk_leaves_database_intact);
    tcase_add_test(tc, test_sigint_during_sweep_leaves_database_consistent);
    tcase_add_test(tc, test_exec_invariants_detected);
    tcase_add_test(tc, test_duplicate_key_named);
    tcase_add_test(tc, test_set_index_out_of_range);
    tcase_add_test(tc, test_cli_messages_without_stray_quotes);
    tcase_add_test(tc, test_missing_pass_times_names_key);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
