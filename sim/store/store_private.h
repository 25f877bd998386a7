/* store_private.h - what the files of sim/store share about a connection;
 * not installed, not for other layers (they call the functions of store.h,
 * planstore.h and report.h, which own every SQL statement).  The tests of
 * tests/ include it to look at the tables directly.
 * Not for: anything outside sim/store and tests/. */
#ifndef MM_STORE_PRIVATE_H
#define MM_STORE_PRIVATE_H

#include <sqlite3.h>

#include "store/store.h"
#include "exec/metrics.h"

struct mm_store {
    sqlite3 *db;
    char *path; /* for error messages */
};

/* Fills err from the connection's last error ("WHAT: sqlite's words");
 * returns -code.  A full disk or another I/O error says so. */
int mm_store_fail(const mm_store *st, mm_err *err, int code, const char *what);
int mm_store_prepare(mm_store *st, const char *sql, sqlite3_stmt **s, mm_err *err);
int mm_store_exec(mm_store *st, const char *sql, const char *what, mm_err *err);
/* Rolls back the open transaction, if SQLite has not already done so. */
void mm_store_rollback(mm_store *st);
/* NAN -> NULL. */
int mm_store_bind_real(sqlite3_stmt *s, int i, double v);

/* Steps an INSERT once (after binds that returned bind_rc) and resets it
 * for the next row; returns 0 or -MM_EINTERNAL naming `what`. */
int mm_store_step_insert(mm_store *st, sqlite3_stmt *s, int bind_rc, const char *what,
                         mm_err *err);
/* The rows of one run, inside the caller's transaction; *id is its runs.id. */
int mm_store_insert_all(mm_store *st, const mm_run_record *rec, const mm_metrics *m,
                        int64_t *id, mm_err *err);
/* Caller bugs (missing fields, bad arrays), caught before a transaction. */
int mm_store_check_args(const mm_store *st, const mm_run_record *rec, const mm_metrics *m,
                        mm_err *err);

/* Checks a database path before SQLite sees it: an existing path must be a
 * regular file starting like an SQLite database (a directory, a device or
 * a text file is refused, and left untouched); a missing one is refused
 * when must_exist, else its folder must exist.  Returns 0 or -MM_EINPUT. */
int mm_store_check_path(const char *path, int must_exist, mm_err *err);

/* The underlying connection, for tests that read the tables directly.  Do
 * not begin transactions or change pragmas on it. */
sqlite3 *mm_store_sqlite(mm_store *st);

#endif
