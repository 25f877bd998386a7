/* test_store.c - Check suite for the SQLite results store (sim/store/store.h):
 * schema creation and version, migration from schema 6, writing and reading
 * back runs (and their per-DP-rank loads, equal to run --json's), NAN as NULL,
 * the FNV-1a scenario hash, refusals that must leave foreign files untouched,
 * all-or-nothing writes, interrupted writers and parallel writers.
 * Every test works in its own mkdtemp directory, removed afterwards.
 * Not for: the run layer's metrics or the canonical scenario text (the
 * scenario text here is a literal string). */
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

static void setup(void)
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

static void teardown(void)
{
    remove_tree(tmpdir);
}

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Whole file into a malloc'd buffer; *len its size. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* Asserts that the file has exactly the given bytes and that SQLite left no
 * journal, WAL or shared-memory file beside it. */
static void assert_untouched(const char *path, const unsigned char *before, size_t len)
{
    size_t n;
    unsigned char *after = slurp(path, &n);
    ck_assert_uint_eq(n, len);
    ck_assert_int_eq(memcmp(before, after, len), 0);
    free(after);
    const char *suffixes[] = {"-wal", "-shm", "-journal"};
    for (size_t i = 0; i < 3; i++) {
        char side[600];
        snprintf(side, sizeof side, "%s%s", path, suffixes[i]);
        ck_assert_msg(!exists(side), "%s was created", side);
    }
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
static void sample_fill(sample *s, double k)
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

static mm_run_record record(const char *text)
{
    return (mm_run_record){.scenario_text = text,
                           .scenario_source = "<default>",
                           .model = "models/llama-2-7b.json",
                           .topology = "topologies/dgx-h100.yaml",
                           .seed = 7,
                           .version = "0.1.0",
                           .created_at = "2024-05-01T12:00:00Z"};
}

static mm_store *open_ok(const char *path)
{
    mm_store *st = NULL;
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_store_open(&st, path, &err);
    ck_assert_msg(rc == 0, "open %s: %s", path, err.msg);
    ck_assert_ptr_nonnull(st);
    return st;
}

static int64_t write_ok(mm_store *st, const char *text, double k)
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

static int64_t count_runs(mm_store *st)
{
    int64_t n = -1;
    mm_err err;
    ck_assert_int_eq(mm_store_count_runs(st, &n, &err), 0);
    return n;
}

/* One integer from a query on the store's connection. */
static int64_t q_int(mm_store *st, const char *sql)
{
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(mm_store_sqlite(st), sql, -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* ---- hashing ---------------------------------------------------------- */

START_TEST(test_fnv1a_vectors)
{
    /* Test vectors of FNV-1a 64 (Fowler, Noll, Vo; draft-eastlake-fnv). */
    ck_assert_uint_eq(mm_store_hash(""), 0xcbf29ce484222325ULL);
    ck_assert_uint_eq(mm_store_hash("a"), 0xaf63dc4c8601ec8cULL);
    ck_assert_uint_eq(mm_store_hash("foobar"), 0x85944171f73967e8ULL);
    char hex[17];
    mm_store_hash_hex("", hex);
    ck_assert_str_eq(hex, "cbf29ce484222325");
    mm_store_hash_hex("a", hex);
    ck_assert_str_eq(hex, "af63dc4c8601ec8c");
    ck_assert_uint_ne(mm_store_hash(scenario_a), mm_store_hash(scenario_b));
}
END_TEST

/* ---- opening ---------------------------------------------------------- */

START_TEST(test_open_creates_schema_v1)
{
    char db[512];
    path_in(db, sizeof db, "new.db");
    mm_store *st = open_ok(db);
    ck_assert(exists(db));
    ck_assert_int_eq(q_int(st, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    ck_assert_int_eq(MM_STORE_SCHEMA_VERSION, 9);
    ck_assert_int_eq(q_int(st, "PRAGMA foreign_keys"), 1);
    ck_assert_int_eq(q_int(st, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
    ck_assert_int_ge(q_int(st, "PRAGMA busy_timeout"), 1000);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                               " AND name IN ('runs', 'metrics', 'iterations', 'stages')"),
                     4);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                               " AND tbl_name = 'runs' AND sql LIKE '%scenario_hash%'"),
                     1);
    ck_assert_int_eq(count_runs(st), 0);
    mm_store_close(st);

    /* Reopening an up-to-date database changes nothing in its schema. */
    st = open_ok(db);
    ck_assert_int_eq(q_int(st, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"), 11);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'view'"), 2);
    mm_store_close(st);
}
END_TEST

START_TEST(test_open_empty_file_is_new_database)
{
    char db[512];
    path_in(db, sizeof db, "empty.db");
    spit(db, "", 0);
    mm_store *st = open_ok(db);
    ck_assert_int_eq(q_int(st, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    mm_store_close(st);
}
END_TEST

START_TEST(test_open_memory)
{
    mm_store *st = open_ok(":memory:");
    write_ok(st, scenario_a, 0);
    ck_assert_int_eq(count_runs(st), 1);
    mm_store_close(st);
}
END_TEST

START_TEST(test_open_missing_directory)
{
    char db[512];
    path_in(db, sizeof db, "no/such/dir/x.db");
    mm_store *st = (mm_store *)&st; /* must be reset to NULL */
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_store_open(&st, db, &err);
    ck_assert_int_eq(rc, -MM_EINPUT);
    ck_assert_int_eq(err.code, MM_EINPUT);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err.file, db);
    char msg[1024];
    mm_err_format(&err, msg, sizeof msg);
    ck_assert_ptr_nonnull(strstr(msg, db));
    char dir[512];
    path_in(dir, sizeof dir, "no");
    ck_assert(!exists(dir)); /* the store does not create directories */
}
END_TEST

START_TEST(test_open_text_file_refused_untouched)
{
    char path[512];
    path_in(path, sizeof path, "notes.txt");
    static const char text[] = "model: models/llama-2-7b.json\nthis is not a database\n";
    spit(path, text, sizeof text - 1);
    size_t len;
    unsigned char *before = slurp(path, &len);
    mm_store *st = NULL;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_store_open(&st, path, &err), -MM_EINPUT);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err.file, path);
    ck_assert_ptr_nonnull(strstr(err.msg, "not an SQLite database"));
    assert_untouched(path, before, len);
    free(before);
}
END_TEST

/* A file that starts like an SQLite database but is not one gets past the
 * header check and must be refused by SQLite itself, still untouched. */
START_TEST(test_open_fake_header_refused_untouched)
{
    char path[512];
    path_in(path, sizeof path, "fake.db");
    unsigned char junk[4096];
    memcpy(junk, "SQLite format 3", 16);
    for (size_t i = 16; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 7 + 3);
    spit(path, junk, sizeof junk);
    size_t len;
    unsigned char *before = slurp(path, &len);
    mm_store *st = NULL;
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_store_open(&st, path, &err);
    ck_assert_int_lt(rc, 0);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err.file, path);
    assert_untouched(path, before, len);
    free(before);
}
END_TEST

/* Creates an SQLite database with sqlite3 directly (rollback journal, so it
 * is a single file), running `sql`. */
static void make_db(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}

START_TEST(test_open_newer_version_refused_untouched)
{
    char db[512];
    path_in(db, sizeof db, "future.db");
    make_db(db, "CREATE TABLE runs(id INTEGER PRIMARY KEY, future TEXT);"
                "INSERT INTO runs(future) VALUES ('from mmsim 9');"
                "PRAGMA user_version = 99;");
    size_t len;
    unsigned char *before = slurp(db, &len);
    mm_store *st = NULL;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_store_open(&st, db, &err), -MM_EINPUT);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err.file, db);
    ck_assert_ptr_nonnull(strstr(err.msg, "newer"));
    assert_untouched(db, before, len);
    free(before);
}
END_TEST

START_TEST(test_open_foreign_database_refused_untouched)
{
    char db[512];
    path_in(db, sizeof db, "other.db");
    make_db(db, "CREATE TABLE runs(x, y); INSERT INTO runs VALUES (1, 2);");
    size_t len;
    unsigned char *before = slurp(db, &len);
    mm_store *st = NULL;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_store_open(&st, db, &err), -MM_EINPUT);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err.file, db);
    assert_untouched(db, before, len);
    free(before);
}
END_TEST

START_TEST(test_open_read_only_refused)
{
    if (geteuid() == 0)
        return; /* root writes through file permissions */
    char db[512];
    path_in(db, sizeof db, "ro.db");
    mm_store *st = open_ok(db);
    write_ok(st, scenario_a, 0);
    mm_store_close(st);
    ck_assert_int_eq(chmod(db, 0444), 0);
    mm_err err;
    mm_err_clear(&err);
    st = NULL;
    ck_assert_int_eq(mm_store_open(&st, db, &err), -MM_EINPUT);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err.file, db);
    ck_assert_int_eq(chmod(db, 0644), 0);
}
END_TEST

/* ---- writing and reading back ----------------------------------------- */

START_TEST(test_write_reads_back)
{
    char db[512];
    path_in(db, sizeof db, "runs.db");
    mm_store *st = open_ok(db);
    sample s;
    sample_fill(&s, 0);
    mm_run_record rec = record(scenario_a);
    mm_err err;
    int64_t id = 0;
    ck_assert_int_eq(mm_store_write_run(st, &rec, &s.m, &id, &err), 0);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(count_runs(st), 1);

    /* Summary metrics: exact values, one row per name. */
    const double want[] = {1.25, 123456.5, 30.125, 0.42, 0.55, 415.3, 540.1, 0.1, 0.02, NAN, 1.125, 1.5};
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
    ck_assert_uint_eq(n_names, 12);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics WHERE run_id = 1"), 12);
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
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics WHERE value IS NULL"), 1);

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
    m.tflops_per_gpu = m.hw_tflops_per_gpu = m.bubble_fraction = NAN;
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
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics WHERE value IS NULL"), 9);
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
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics"), 12);
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
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics"), 12);
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
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM metrics"), PROCS * RUNS * 12);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM iterations"), PROCS * RUNS * N_ITERS);
    ck_assert_int_eq(q_int(st, "SELECT count(*) FROM stages"), PROCS * RUNS * N_STAGES);
    ck_assert_int_eq(q_int(st, "SELECT count(DISTINCT scenario_hash) FROM runs"), 2);
    ck_assert_int_eq(q_int(st, "PRAGMA user_version"), MM_STORE_SCHEMA_VERSION);
    mm_store_close(st);
}
END_TEST


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
             " --set train.global_batch=16", dir);
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
                                  " DROP TABLE dp_rank_loads; PRAGMA user_version = 6;", NULL, NULL, NULL),
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

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fnv1a_vectors);
    tcase_add_test(tc, test_open_creates_schema_v1);
    tcase_add_test(tc, test_open_empty_file_is_new_database);
    tcase_add_test(tc, test_open_memory);
    tcase_add_test(tc, test_open_missing_directory);
    tcase_add_test(tc, test_open_text_file_refused_untouched);
    tcase_add_test(tc, test_open_fake_header_refused_untouched);
    tcase_add_test(tc, test_open_newer_version_refused_untouched);
    tcase_add_test(tc, test_open_foreign_database_refused_untouched);
    tcase_add_test(tc, test_open_read_only_refused);
    tcase_add_test(tc, test_write_reads_back);
    tcase_add_test(tc, test_oom_run_and_optional_fields);
    tcase_add_test(tc, test_two_runs_and_reopen);
    tcase_add_test(tc, test_find_run_by_scenario);
    tcase_add_test(tc, test_delete_cascades);
    tcase_add_test(tc, test_failed_write_leaves_no_partial_run);
    tcase_add_test(tc, test_bad_arguments_rejected);
    tcase_add_test(tc, test_killed_writer_leaves_earlier_runs);
    tcase_add_test(tc, test_parallel_writers);
    tcase_add_test(tc, test_report_readonly_refusals);
    tcase_add_test(tc, test_report_runs_bound_metrics);
    tcase_add_test(tc, test_report_sweep_keys_bound);
    tcase_add_test(tc, test_dp_loads_read_back);
    tcase_add_test(tc, test_dp_loads_equal_json);
    tcase_add_test(tc, test_schema6_migrates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/mmsim-store-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(root)) {
        perror(root);
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(store_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tree(root);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
