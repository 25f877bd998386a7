/* cmd_report.c - `mmsim report DB`: tables of the runs in a database, or of
 * the points of one sweep with their swept values, printed aligned or as CSV.
 * Opens the database read-only (a report never migrates or writes it) and
 * reads it with plain SQL.  Parsing, querying and printing only.
 * Not for: running anything, or figures (scripts/plot sweep). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libfyaml.h>
#include <sqlite3.h>

#include "cli/cli.h"
#include "store/store.h"
#include "util/doc.h"

#define MAX_METRICS 32
#define MAX_AXES 64
#define MAX_COLS (MAX_METRICS + MAX_AXES + 8)

static int bad_arg(const char *what, const char *arg)
{
    fprintf(stderr, "mmsim: <cli>: %s '%s' (see mmsim help report)\n", what, arg);
    return 2;
}

/* A table of strings, kept whole so that columns can be aligned. */
typedef struct table {
    int ncols;
    char *head[MAX_COLS];
    int numeric[MAX_COLS]; /* every non-empty cell is a number */
    size_t nrows, cap;
    char **cells;          /* nrows x ncols; NULL = SQL NULL */
} table;

static void table_free(table *t)
{
    for (int c = 0; c < t->ncols; c++)
        free(t->head[c]);
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
}

/* Reads every row of a prepared statement into t; the column names are the
 * statement's unless t already has them. */
static int table_fill(table *t, sqlite3_stmt *s, int csv)
{
    int n = sqlite3_column_count(s);
    if (n > MAX_COLS)
        n = MAX_COLS;
    if (t->ncols == 0) {
        t->ncols = n;
        for (int c = 0; c < n; c++) {
            t->head[c] = strdup(sqlite3_column_name(s, c));
            t->numeric[c] = 1;
        }
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (t->nrows == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 64;
            char **cells = realloc(t->cells, cap * (size_t)t->ncols * sizeof *cells);
            if (!cells)
                return SQLITE_NOMEM;
            t->cells = cells;
            t->cap = cap;
        }
        char **row = t->cells + t->nrows * (size_t)t->ncols;
        for (int c = 0; c < t->ncols; c++) {
            char buf[64];
            const char *v = NULL;
            switch (sqlite3_column_type(s, c)) {
            case SQLITE_NULL:
                break;
            case SQLITE_INTEGER:
                snprintf(buf, sizeof buf, "%lld", (long long)sqlite3_column_int64(s, c));
                v = buf;
                break;
            case SQLITE_FLOAT:
                snprintf(buf, sizeof buf, csv ? "%.17g" : "%.6g", sqlite3_column_double(s, c));
                v = buf;
                break;
            default:
                v = (const char *)sqlite3_column_text(s, c);
                t->numeric[c] = 0;
            }
            row[c] = v ? strdup(v) : NULL;
        }
        t->nrows++;
    }
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void csv_cell(const char *v)
{
    if (!v)
        return;
    if (!strpbrk(v, ",\"\n\r")) {
        fputs(v, stdout);
        return;
    }
    putchar('"');
    for (; *v; v++) {
        if (*v == '"')
            putchar('"');
        putchar(*v);
    }
    putchar('"');
}

static void table_print(const table *t, int csv)
{
    if (csv) {
        for (int c = 0; c < t->ncols; c++) {
            if (c)
                putchar(',');
            csv_cell(t->head[c]);
        }
        putchar('\n');
        for (size_t r = 0; r < t->nrows; r++) {
            for (int c = 0; c < t->ncols; c++) {
                if (c)
                    putchar(',');
                csv_cell(t->cells[r * (size_t)t->ncols + c]);
            }
            putchar('\n');
        }
        return;
    }
    int w[MAX_COLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            const char *v = t->cells[r * (size_t)t->ncols + c];
            int len = v ? (int)strlen(v) : 1;
            if (len > w[c])
                w[c] = len;
        }
    }
    for (int c = 0; c < t->ncols; c++) {
        /* a left-aligned last column is not padded (no trailing blanks) */
        int last = c == t->ncols - 1;
        w[c] = t->numeric[c] ? w[c] : last ? 0 : -w[c];
    }
    for (int c = 0; c < t->ncols; c++)
        printf("%s%*s", c ? "  " : "", w[c], t->head[c]);
    putchar('\n');
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *v = t->cells[r * (size_t)t->ncols + c];
            printf("%s%*s", c ? "  " : "", w[c], v ? v : "-");
        }
        putchar('\n');
    }
}

static int db_fail(sqlite3 *db, const char *path, const char *what)
{
    mm_err err;
    int code = (sqlite3_errcode(db) & 0xff) == SQLITE_NOTADB ? MM_EINPUT : MM_EINTERNAL;
    mm_err_set(&err, code, path, 0, NULL, "%s: %s", what, sqlite3_errmsg(db));
    return mm_cli_fail(&err);
}

static int64_t query_int(sqlite3 *db, const char *sql, int64_t dflt, int *ok)
{
    sqlite3_stmt *s = NULL;
    int64_t v = dflt;
    *ok = sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK;
    if (*ok) {
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
            v = sqlite3_column_int64(s, 0);
        *ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
    }
    sqlite3_finalize(s);
    return v;
}

/* Appends printf text to a growing SQL string. */
static void sql_add(char **sql, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sql_add(char **sql, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = *sql ? realloc(*sql, *len + (size_t)n + 1) : NULL;
    if (!s) {
        free(*sql);
        *sql = NULL;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s + *len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *len += (size_t)n;
    *sql = s;
}

/* The metric columns: (SELECT value ...) AS "name" for each. */
static void add_metrics(char **sql, size_t *len, const char *run_col, char **metrics, int n)
{
    for (int i = 0; i < n; i++)
        sql_add(sql, len, ", (SELECT value FROM metrics WHERE run_id = %s AND name = '%s') AS \"%s\"",
                run_col, metrics[i], metrics[i]);
}

/* Reads the sweep's axis keys from its JSON list. */
static int sweep_axes(sqlite3 *db, int64_t id, char **keys, int *n)
{
    *n = 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT axes FROM sweeps WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(s, 1, id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(s);
        return rc == SQLITE_DONE ? 1 : -1;
    }
    const char *axes = (const char *)sqlite3_column_text(s, 0);
    mm_doc doc;
    mm_err err;
    if (axes && mm_doc_load_string(&doc, "sweeps.axes", axes, &err) == 0) {
        struct fy_node *root = mm_doc_root(&doc);
        int k = root && fy_node_is_sequence(root) ? fy_node_sequence_item_count(root) : 0;
        for (int i = 0; i < k && *n < MAX_AXES; i++) {
            char key[128];
            if (mm_node_as_str(&doc, fy_node_sequence_get_by_index(root, i), "axes", key,
                               sizeof key, &err) == 0 && !strchr(key, '"') && !strchr(key, '\''))
                keys[(*n)++] = strdup(key);
        }
        mm_doc_free(&doc);
    }
    sqlite3_finalize(s);
    return 0;
}

static int run_query(sqlite3 *db, const char *path, const char *sql, int64_t bind, int csv,
                     const char *title)
{
    sqlite3_stmt *s = NULL;
    if (!sql || sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return db_fail(db, path, "querying the database");
    if (bind)
        sqlite3_bind_int64(s, 1, bind);
    table t;
    memset(&t, 0, sizeof t);
    int rc = table_fill(&t, s, csv);
    sqlite3_finalize(s);
    if (rc != SQLITE_OK) {
        table_free(&t);
        return db_fail(db, path, "reading the database");
    }
    if (title && !csv)
        printf("%s (%zu)\n", title, t.nrows);
    table_print(&t, csv);
    table_free(&t);
    return 0;
}

/* Splits "a,b,c" into checked metric names. */
static int parse_metrics(char *list, char **out, int *n)
{
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int known = 0;
        for (int i = 0; mm_store_metric_names[i]; i++)
            known |= !strcmp(tok, mm_store_metric_names[i]);
        if (!known) {
            mm_err err;
            const char *near = mm_nearest(tok, mm_store_metric_names);
            mm_err_set(&err, MM_EINPUT, "<cli>", 0, "--metrics", "unknown metric '%s'%s%s%s",
                       tok, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
            return mm_cli_fail(&err);
        }
        if (*n == MAX_METRICS)
            return bad_arg("too many metrics; at most 32, extra", tok);
        out[(*n)++] = tok;
    }
    return *n ? 0 : bad_arg("--metrics needs names, e.g.", "iteration_time_s,mfu");
}

static int report(sqlite3 *db, const char *path, const char *sweep, int csv, char **metrics,
                  int n_metrics)
{
    int ok;
    int64_t version = query_int(db, "PRAGMA user_version", 0, &ok);
    if (!ok)
        return db_fail(db, path, "reading the database");
    if (version < 1 || version > MM_STORE_SCHEMA_VERSION) {
        mm_err err;
        mm_err_set(&err, MM_EINPUT, path, 0, NULL,
                   version < 1 ? "not an mmsim database (no schema version)"
                               : "schema version %lld is newer than this mmsim knows",
                   (long long)version);
        return mm_cli_fail(&err);
    }
    char *sql = strdup("");
    size_t len = 0;
    int rc = 0;
    if (sweep) {
        int64_t id = 0;
        if (version < 2) {
            id = 0;
        } else if (!strcmp(sweep, "last")) {
            id = query_int(db, "SELECT max(id) FROM sweeps", 0, &ok);
        } else {
            char *end;
            id = strtoll(sweep, &end, 10);
            if (*end || id <= 0) {
                free(sql);
                return bad_arg("--sweep takes a sweep id or 'last', not", sweep);
            }
        }
        char *keys[MAX_AXES];
        int n_keys = 0;
        int found = id > 0 ? sweep_axes(db, id, keys, &n_keys) : 1;
        if (found != 0) {
            free(sql);
            mm_err err;
            mm_err_set(&err, MM_EINPUT, path, 0, "--sweep", "no sweep %s in this database "
                       "(mmsim report %s lists them)", sweep, path);
            return found < 0 ? db_fail(db, path, "reading the sweep") : mm_cli_fail(&err);
        }
        sql_add(&sql, &len, "SELECT sr.point AS point, sr.status AS status, sr.run_id AS run");
        for (int i = 0; i < n_keys; i++)
            sql_add(&sql, &len, ", json_extract(sr.axis_values, '$.\"%s\"') AS \"%s\"", keys[i],
                    keys[i]);
        sql_add(&sql, &len, ", r.oom AS oom");
        add_metrics(&sql, &len, "sr.run_id", metrics, n_metrics);
        sql_add(&sql, &len, ", sr.error AS error FROM sweep_runs sr LEFT JOIN runs r"
                            " ON r.id = sr.run_id WHERE sr.sweep_id = ?1 ORDER BY sr.point");
        for (int i = 0; i < n_keys; i++)
            free(keys[i]);
        if (!csv) {
            char title[160];
            snprintf(title, sizeof title, "sweep %lld: points", (long long)id);
            rc = run_query(db, path, sql, id, csv, title);
        } else {
            rc = run_query(db, path, sql, id, csv, NULL);
        }
        free(sql);
        return rc;
    }
    if (version >= 2 && !csv &&
        query_int(db, "SELECT count(*) FROM sweeps", 0, &ok) > 0) {
        rc = run_query(db, path,
                       "SELECT s.id AS sweep, s.name AS name, s.points AS points,"
                       " (SELECT count(*) FROM sweep_runs sr WHERE sr.sweep_id = s.id"
                       "  AND sr.status = 'done') AS done,"
                       " (SELECT count(*) FROM sweep_runs sr WHERE sr.sweep_id = s.id"
                       "  AND sr.status = 'failed') AS failed,"
                       " s.created_at AS created_at, s.axes AS axes"
                       " FROM sweeps s ORDER BY s.id", 0, csv, "sweeps");
        if (rc) {
            free(sql);
            return rc;
        }
        printf("\n");
    }
    sql_add(&sql, &len, "SELECT r.id AS run, r.created_at AS created_at, r.model AS model,"
                        " r.gpus AS gpus, r.oom AS oom");
    add_metrics(&sql, &len, "r.id", metrics, n_metrics);
    sql_add(&sql, &len, " FROM runs r ORDER BY r.id");
    rc = run_query(db, path, sql, 0, csv, "runs");
    free(sql);
    return rc;
}

int mm_cli_report(int argc, char **argv)
{
    const char *path = NULL, *sweep = NULL;
    char *mlist = NULL;
    int csv = 0;
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'}, {"csv", no_argument, NULL, 'c'},
        {"sweep", required_argument, NULL, 's'}, {"metrics", required_argument, NULL, 'm'}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = mm_cli_getopt(argc, argv, "h", longopts)) != -1) {
        switch (c) {
        case 'h': return mm_cli_help("report");
        case 'c': csv = 1; break;
        case 's': sweep = optarg; break;
        case 'm': mlist = optarg; break;
        default: return 2;
        }
    }
    if (optind < argc)
        path = argv[optind++];
    if (optind < argc)
        return bad_arg("more than one database given; extra", argv[optind]);
    if (!path)
        return bad_arg("a database is needed, e.g. mmsim report", "results/mmsim.db");
    char dflt[] = "iteration_time_s,tokens_per_s,mfu,peak_memory_gib";
    char *copy = strdup(mlist ? mlist : dflt);
    char *metrics[MAX_METRICS];
    int n_metrics = 0;
    int rc = copy ? parse_metrics(copy, metrics, &n_metrics) : 1;
    if (rc) {
        free(copy);
        return rc;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        free(copy);
        mm_err err;
        mm_err_set(&err, MM_EINPUT, path, 0, NULL, "cannot read the database");
        return mm_cli_fail(&err);
    }
    fclose(f);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = db_fail(db, path, "cannot open the database");
    } else {
        sqlite3_busy_timeout(db, MM_STORE_BUSY_MS);
        rc = report(db, path, sweep, csv, metrics, n_metrics);
    }
    sqlite3_close(db);
    free(copy);
    return rc;
}
