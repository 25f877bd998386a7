/* passtimes.c - the pass-times CSV reader (libcsv callbacks into arrays).
 * Not for: using the times (cost/costs.c puts them into the stage costs). */
#include "parallel/passtimes.h"
#include "util/file.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const columns[] = {"stage", "f_ms", "b_ms", "w_ms", "p2p_ms"};
enum { NCOL = 5, MAX_STAGES = 4096 };

typedef struct reader {
    const char *path;
    mm_err *err;
    int rc;
    int line, col;          /* current row (1-based) and column (0-based) */
    double row[NCOL];
    double vals[MAX_STAGES][4];
    unsigned char seen[MAX_STAGES];
    int max_stage;
} reader;

static void on_field(void *s, size_t len, void *data)
{
    reader *r = data;
    if (r->rc)
        return;
    const char *txt = s;
    if (r->line == 1) {
        if (r->col >= NCOL || len != strlen(columns[r->col]) || memcmp(txt, columns[r->col], len))
            r->rc = mm_err_set(r->err, MM_EINPUT, r->path, 1, r->col < NCOL ? columns[r->col] : "",
                               "header must be: stage,f_ms,b_ms,w_ms,p2p_ms (column %d is '%.*s')",
                               r->col + 1, (int)(len > 40 ? 40 : len), txt);
    } else if (r->col >= NCOL) {
        r->rc = mm_err_set(r->err, MM_EINPUT, r->path, r->line, "", "more than %d columns", NCOL);
    } else {
        char *end;
        errno = 0;
        double v = len ? strtod(txt, &end) : NAN;
        if (!len || *end || errno || !isfinite(v) || v < 0)
            r->rc = mm_err_set(r->err, MM_EINPUT, r->path, r->line, columns[r->col],
                               "'%.*s' is not a finite number >= 0", (int)(len > 40 ? 40 : len), txt);
        else
            r->row[r->col] = v;
    }
    r->col++;
}

static void on_row(int c, void *data)
{
    (void)c;
    reader *r = data;
    if (!r->rc && r->line > 1) {
        if (r->col != NCOL) {
            r->rc = mm_err_set(r->err, MM_EINPUT, r->path, r->line, columns[r->col < NCOL ? r->col : 0],
                               "row has %d columns, expected %d", r->col, NCOL);
        } else {
            double st = r->row[0];
            if (st != floor(st) || st >= MAX_STAGES) {
                r->rc = mm_err_set(r->err, MM_EINPUT, r->path, r->line, "stage",
                                   "stage must be an integer in 0..%d", MAX_STAGES - 1);
            } else if (r->seen[(int)st]) {
                r->rc = mm_err_set(r->err, MM_EINPUT, r->path, r->line, "stage", "stage %d is listed twice", (int)st);
            } else {
                int s = (int)st;
                r->seen[s] = 1;
                for (int k = 0; k < 4; k++)
                    r->vals[s][k] = r->row[k + 1] * 1e-3;
                if (s > r->max_stage)
                    r->max_stage = s;
            }
        }
    }
    r->line++;
    r->col = 0;
}

void mm_pass_times_free(mm_pass_times *pt)
{
    free(pt->f_s);
    free(pt->b_s);
    free(pt->w_s);
    free(pt->p2p_s);
    memset(pt, 0, sizeof *pt);
}

int mm_pass_times_load(const char *path, mm_pass_times *pt, mm_err *err)
{
    memset(pt, 0, sizeof *pt);
    /* Only train.pass_times names such a file, so its key goes with the
     * file's own errors (a missing file, a device, a NUL byte). */
    FILE *f = mm_file_open(path, MM_FILE_MAX_CONFIG, err);
    if (!f) {
        if (err && !err->key[0])
            snprintf(err->key, sizeof err->key, "train.pass_times");
        return -MM_EINPUT;
    }
    reader *r = calloc(1, sizeof *r);
    struct csv_parser p;
    if (!r || csv_init(&p, CSV_STRICT | CSV_APPEND_NULL) != 0) {
        free(r);
        fclose(f);
        return mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    }
    r->path = path;
    r->err = err;
    r->line = 1;
    r->max_stage = -1;
    char buf[4096];
    size_t n;
    while (!r->rc && (n = fread(buf, 1, sizeof buf, f)) > 0)
        if (csv_parse(&p, buf, n, on_field, on_row, r) != n && !r->rc)
            r->rc = mm_err_set(err, MM_EINPUT, path, r->line, "", "CSV syntax: %s", csv_strerror(csv_error(&p)));
    if (!r->rc && csv_fini(&p, on_field, on_row, r) != 0)
        r->rc = mm_err_set(err, MM_EINPUT, path, r->line, "", "CSV syntax: %s", csv_strerror(csv_error(&p)));
    csv_free(&p);
    fclose(f);
    int rc = r->rc;
    if (!rc && r->max_stage < 0)
        rc = mm_err_set(err, MM_EINPUT, path, 0, "stage", "no stages listed");
    for (int s = 0; !rc && s <= r->max_stage; s++)
        if (!r->seen[s])
            rc = mm_err_set(err, MM_EINPUT, path, 0, "stage", "stage %d is missing (stages must be 0..%d)", s,
                            r->max_stage);
    if (!rc) {
        int ns = r->max_stage + 1;
        pt->n_stages = ns;
        double **arr[4] = {&pt->f_s, &pt->b_s, &pt->w_s, &pt->p2p_s};
        for (int k = 0; k < 4 && !rc; k++) {
            *arr[k] = malloc((size_t)ns * sizeof(double));
            if (!*arr[k])
                rc = mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
            else
                for (int s = 0; s < ns; s++)
                    (*arr[k])[s] = r->vals[s][k];
        }
        if (rc)
            mm_pass_times_free(pt);
    }
    free(r);
    return rc;
}
