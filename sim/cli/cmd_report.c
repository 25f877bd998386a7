/* cmd_report.c - `mmsim report DB`: tables of the runs in a database, of
 * the points of one sweep with their swept values, or of one run's
 * per-DP-rank loads, printed aligned or as CSV.
 * The queries are the store's (store/report.h: read-only, bound
 * parameters); this file parses the arguments and formats the cells.
 * Not for: running anything, SQL, or figures (scripts/plot sweep). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "store/report.h"
#include "store/store.h"

#define MAX_METRICS 32

static int bad_arg(const char *what, const char *arg)
{
    return mm_cli_usage_error("report", NULL, what, arg);
}

/* One cell as text: integers whole, reals with 6 digits (17 in CSV, which
 * round-trips a double), NULL as NULL. */
static const char *cell_text(const mm_cell *c, int csv, char *buf, size_t len)
{
    switch (c->type) {
    case MM_CELL_INT:
        snprintf(buf, len, "%lld", (long long)c->i);
        return buf;
    case MM_CELL_REAL:
        snprintf(buf, len, csv ? "%.17g" : "%.6g", c->r);
        return buf;
    case MM_CELL_TEXT:
        return c->text;
    default:
        return NULL;
    }
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

static void print_csv(const mm_table *t)
{
    char buf[64];
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
            csv_cell(cell_text(&t->cells[r * (size_t)t->ncols + c], 1, buf, sizeof buf));
        }
        putchar('\n');
    }
}

/* Aligned columns: numbers to the right, text to the left; NULL is "-". */
static void print_aligned(const mm_table *t)
{
    int *w = calloc((size_t)t->ncols, sizeof *w);
    if (!w)
        return;
    char buf[64];
    for (int c = 0; c < t->ncols; c++) {
        int numeric = 1;
        w[c] = (int)strlen(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            const mm_cell *cell = &t->cells[r * (size_t)t->ncols + c];
            const char *v = cell_text(cell, 0, buf, sizeof buf);
            int len = v ? (int)strlen(v) : 1;
            numeric &= cell->type != MM_CELL_TEXT;
            if (len > w[c])
                w[c] = len;
        }
        /* a left-aligned last column is not padded (no trailing blanks) */
        w[c] = numeric ? w[c] : c == t->ncols - 1 ? 0 : -w[c];
    }
    for (int c = 0; c < t->ncols; c++)
        printf("%s%*s", c ? "  " : "", w[c], t->head[c]);
    putchar('\n');
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *v = cell_text(&t->cells[r * (size_t)t->ncols + c], 0, buf, sizeof buf);
            printf("%s%*s", c ? "  " : "", w[c], v ? v : "-");
        }
        putchar('\n');
    }
    free(w);
}

static void print_table(const mm_table *t, int csv, const char *title)
{
    if (csv) {
        print_csv(t);
        return;
    }
    if (title)
        printf("%s (%zu)\n", title, t->nrows);
    print_aligned(t);
}

/* Splits "a,b,c" into metric names (the store checks them). */
static int parse_metrics(char *list, const char **out, int *n)
{
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_METRICS)
            return bad_arg("too many metrics; at most 32, extra", tok);
        out[(*n)++] = tok;
    }
    return *n ? 0 : bad_arg("--metrics needs names, e.g.", "iteration_time_s,mfu");
}

/* --dp-load RUN|last: one run's per-DP-rank loads, one row per
 * (iteration, rank). */
static int report_dp_load(mm_store *st, const char *run, int csv)
{
    int64_t id = 0;
    if (strcmp(run, "last")) {
        char *end;
        id = strtoll(run, &end, 10);
        if (*end || id <= 0)
            return bad_arg("--dp-load takes a run id or 'last', not", run);
    }
    mm_err err;
    mm_table t;
    if (mm_store_report_dp_load(st, id, &t, &err) < 0)
        return mm_cli_fail(&err);
    print_table(&t, csv, "DP rank loads (s)");
    mm_table_free(&t);
    return 0;
}

static int report(mm_store *st, const char *path, const char *sweep, int csv,
                  const char *const *metrics, int n_metrics)
{
    mm_err err;
    mm_table t;
    int rc = 0;
    if (sweep) {
        int64_t id = 0;
        if (!strcmp(sweep, "last")) {
            rc = mm_store_last_sweep(st, &id, &err);
        } else {
            char *end;
            id = strtoll(sweep, &end, 10);
            if (*end || id <= 0)
                return bad_arg("--sweep takes a sweep id or 'last', not", sweep);
        }
        if (rc == 0 && id == 0)
            rc = mm_err_set(&err, MM_EINPUT, path, 0, "--sweep", "no sweep in this database");
        if (rc == 0)
            rc = mm_store_report_sweep(st, id, metrics, n_metrics, &t, &err);
        if (rc < 0)
            return mm_cli_fail(&err);
        char title[160];
        snprintf(title, sizeof title, "sweep %lld: points", (long long)id);
        print_table(&t, csv, title);
        mm_table_free(&t);
        return 0;
    }
    if (!csv) {
        if (mm_store_report_sweeps(st, &t, &err) < 0)
            return mm_cli_fail(&err);
        if (t.nrows > 0) {
            print_table(&t, csv, "sweeps");
            printf("\n");
        }
        mm_table_free(&t);
    }
    if (mm_store_report_runs(st, metrics, n_metrics, &t, &err) < 0)
        return mm_cli_fail(&err);
    print_table(&t, csv, "runs");
    mm_table_free(&t);
    return 0;
}

/* The options (cli.h: completion scripts are made from them too). */
const struct option mm_cli_report_longopts[] = {
    {"help", no_argument, NULL, 'h'}, {"csv", no_argument, NULL, 'c'},
    {"sweep", required_argument, NULL, 's'}, {"metrics", required_argument, NULL, 'm'},
    {"dp-load", required_argument, NULL, 'd'}, {NULL, 0, NULL, 0}};
const char mm_cli_report_shortopts[] = "h";

int mm_cli_report(int argc, char **argv)
{
    const char *path = NULL, *sweep = NULL, *dp_load = NULL;
    char *mlist = NULL;
    int csv = 0;
    int c;
    while ((c = mm_cli_getopt(argc, argv, mm_cli_report_shortopts, mm_cli_report_longopts)) != -1) {
        switch (c) {
        case 'h': return mm_cli_help("report");
        case 'c': csv = 1; break;
        case 's': sweep = optarg; break;
        case 'm': mlist = optarg; break;
        case 'd': dp_load = optarg; break;
        default: return 2;
        }
    }
    if (mm_cli_operand("report", argc, argv, "database", &path))
        return 2;
    if (!path)
        return bad_arg("a database is needed, e.g. mmsim report", "results/mmsim.db");
    if (dp_load && (sweep || mlist))
        return bad_arg("--dp-load shows one run's loads; it takes no", sweep ? "--sweep" : "--metrics");
    char dflt[] = "iteration_time_s,tokens_per_s,mfu,peak_memory_gib";
    char *copy = strdup(mlist ? mlist : dflt);
    const char *metrics[MAX_METRICS];
    int n_metrics = 0;
    int rc = copy ? parse_metrics(copy, metrics, &n_metrics) : 1;
    if (rc) {
        free(copy);
        return rc;
    }
    mm_store *st = NULL;
    mm_err err;
    if (mm_store_open_readonly(&st, path, &err) < 0)
        rc = mm_cli_fail(&err);
    else if (dp_load)
        rc = report_dp_load(st, dp_load, csv);
    else
        rc = report(st, path, sweep, csv, metrics, n_metrics);
    mm_store_close(st);
    free(copy);
    return rc;
}
