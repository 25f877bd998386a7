/* test_store.c - Check suite for opening the SQLite results store
 * (sim/store/store.h): schema creation and version, the FNV-1a scenario
 * hash, and refusals (a text file, a fake header, a newer schema, a
 * foreign database, a read-only one) that must leave the file untouched.
 * Every test works in its own mkdtemp directory, removed afterwards.
 * Not for: writing runs (test_store_write.c), the report queries and the
 * per-DP-rank loads (test_store_report.c), the run layer's metrics or the
 * canonical scenario text (the scenario text here is a literal string). */
#include "store_common.h"

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
    ck_assert_int_eq(MM_STORE_SCHEMA_VERSION, 11);
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_store_suite(store_suite()); }
