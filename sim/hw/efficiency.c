/* efficiency.c - reading kernel throughput tables (CSV through libcsv) and
 * interpolating them with GSL.  The scheme is described in efficiency.h.
 * Not for: turning throughput into time (compute.c). */
#include "hw/efficiency.h"
#include "util/file.h"

#include <csv.h>
#include <gsl/gsl_interp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mm_attn_impl_names[] = {"flash", "flash1", "flash2", "flash3", "cudnn", "unfused", "unfused-eager", NULL};

bool mm_attn_impl_unfused(mm_attn_impl impl)
{
    return impl == MM_ATTN_IMPL_UNFUSED || impl == MM_ATTN_IMPL_UNFUSED_EAGER;
}

const mm_attn_table *mm_kernel_attn_table(const mm_kernel_tables *k, mm_attn_impl impl)
{
    if (mm_attn_impl_unfused(impl) || impl < 0 || impl >= MM_ATTN_IMPL_COUNT)
        return NULL;
    if (impl != MM_ATTN_IMPL_FLASH && k->has_impl[impl - MM_ATTN_IMPL_FLASH1])
        return &k->impl[impl - MM_ATTN_IMPL_FLASH1];
    /* a generic table that does not say which kernel it measured stands
     * for whichever fused kernel runs; one that names its kernel serves
     * that kernel only */
    if (k->has_attn && (impl == MM_ATTN_IMPL_FLASH || k->attn_is == impl || k->attn_is == MM_ATTN_IMPL_FLASH))
        return &k->attn;
    return NULL;
}

/* ---- a whole CSV file as rows of strings ---- */

typedef struct csv_rows {
    char ***rows;   /* rows[r][f] */
    int *nf;        /* fields per row */
    int n, cap;
    char **cur;     /* row being filled */
    int cur_n, cur_cap;
    int oom;
} csv_rows;

static void on_field(void *s, size_t len, void *data)
{
    csv_rows *c = data;
    if (c->oom)
        return;
    if (c->cur_n == c->cur_cap) {
        int nc = c->cur_cap ? 2 * c->cur_cap : 8;
        char **p = realloc(c->cur, (size_t)nc * sizeof *p);
        if (!p) {
            c->oom = 1;
            return;
        }
        c->cur = p;
        c->cur_cap = nc;
    }
    char *f = malloc(len + 1);
    if (!f) {
        c->oom = 1;
        return;
    }
    memcpy(f, s, len);
    f[len] = '\0';
    c->cur[c->cur_n++] = f;
}

static void on_row(int ch, void *data)
{
    (void)ch;
    csv_rows *c = data;
    if (c->oom)
        return;
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 64;
        char ***r = realloc(c->rows, (size_t)nc * sizeof *r);
        int *nf = realloc(c->nf, (size_t)nc * sizeof *nf);
        if (r)
            c->rows = r;
        if (nf)
            c->nf = nf;
        if (!r || !nf) {
            c->oom = 1;
            return;
        }
        c->cap = nc;
    }
    c->rows[c->n] = c->cur;
    c->nf[c->n] = c->cur_n;
    c->n++;
    c->cur = NULL;
    c->cur_n = c->cur_cap = 0;
}

static void csv_rows_free(csv_rows *c)
{
    for (int r = 0; r < c->n; r++) {
        for (int f = 0; f < c->nf[r]; f++)
            free(c->rows[r][f]);
        free(c->rows[r]);
    }
    for (int f = 0; f < c->cur_n; f++)
        free(c->cur[f]);
    free(c->cur);
    free(c->rows);
    free(c->nf);
    memset(c, 0, sizeof *c);
}

/* Reads the file; blank lines are skipped by libcsv.  Line numbers below are
 * row numbers (1 = header), which equal file lines unless a quoted field
 * spans lines. */
static int csv_read(const char *path, csv_rows *c, mm_err *err)
{
    memset(c, 0, sizeof *c);
    FILE *fp = mm_file_open(path, MM_FILE_MAX_CONFIG, err);
    if (!fp)
        return -MM_EINPUT;
    struct csv_parser p;
    if (csv_init(&p, CSV_APPEND_NULL | CSV_STRICT | CSV_STRICT_FINI) != 0) {
        fclose(fp);
        return mm_err_set(err, MM_EINTERNAL, path, 0, "", "cannot initialise libcsv");
    }
    char buf[8192];
    size_t got;
    int rc = 0;
    while ((got = fread(buf, 1, sizeof buf, fp)) > 0) {
        if (csv_parse(&p, buf, got, on_field, on_row, c) != got) {
            rc = mm_err_set(err, MM_EINPUT, path, c->n + 1, "", "malformed CSV: %s",
                            csv_strerror(csv_error(&p)));
            break;
        }
    }
    if (rc == 0 && csv_fini(&p, on_field, on_row, c) != 0)
        rc = mm_err_set(err, MM_EINPUT, path, c->n + 1, "", "malformed CSV: %s",
                        csv_strerror(csv_error(&p)));
    csv_free(&p);
    fclose(fp);
    if (rc == 0 && c->oom)
        rc = mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    if (rc == 0 && c->n < 2)
        rc = mm_err_set(err, MM_EINPUT, path, c->n, "", "a header row and at least one data row are needed");
    if (rc)
        csv_rows_free(c);
    return rc;
}

/* Index of a header column, or a negative status naming it. */
static int column(const csv_rows *c, const char *path, const char *name, mm_err *err)
{
    for (int f = 0; f < c->nf[0]; f++)
        if (strcmp(c->rows[0][f], name) == 0)
            return f;
    return mm_err_set(err, MM_EINPUT, path, 1, name, "missing column '%s'", name);
}

static int field(const csv_rows *c, int r, int col, const char **out, const char *path,
                 const char *name, mm_err *err)
{
    if (col >= c->nf[r])
        return mm_err_set(err, MM_EINPUT, path, r + 1, name, "row has %d fields; column '%s' is missing",
                          c->nf[r], name);
    *out = c->rows[r][col];
    return 0;
}

/* A positive finite number in row r, column col. */
static int num(const csv_rows *c, int r, int col, const char *path, const char *name,
               double *out, mm_err *err)
{
    const char *s = "";
    int rc = field(c, r, col, &s, path, name, err);
    if (rc)
        return rc;
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ')
        end++;
    if (!s[0] || *end || !isfinite(v) || !(v > 0))
        return mm_err_set(err, MM_EINPUT, path, r + 1, name, "expected a positive number, got '%s'", s);
    *out = v;
    return 0;
}

static int need_source(const csv_rows *c, int r, int col, const char *path, mm_err *err)
{
    const char *s = "";
    int rc = field(c, r, col, &s, path, "source", err);
    if (rc)
        return rc;
    if (!s[0])
        return mm_err_set(err, MM_EINPUT, path, r + 1, "source", "every row must name its source");
    return 0;
}

/* Inserts v into the ascending set a[0..*n); returns its index or -1 when full. */
static int axis_add(double *a, int *n, double v)
{
    int i = 0;
    while (i < *n && a[i] < v)
        i++;
    if (i < *n && a[i] == v)
        return i;
    if (*n == MM_GEMM_AXIS_MAX)
        return -1;
    memmove(a + i + 1, a + i, (size_t)(*n - i) * sizeof *a);
    a[i] = v;
    (*n)++;
    return i;
}

/* Inserts the point (x, y) into the curve xs[0..*n), ys[0..*n) kept
 * ascending in x: 0, or 1 when x is already there, 2 when the curve holds
 * cap points (the caller names the file, row and key). */
static int point_add(double *xs, double *ys, int *n, int cap, double x, double y)
{
    int i = 0;
    while (i < *n && xs[i] < x)
        i++;
    if (i < *n && xs[i] == x)
        return 1;
    if (*n == cap)
        return 2;
    memmove(xs + i + 1, xs + i, (size_t)(*n - i) * sizeof(double));
    memmove(ys + i + 1, ys + i, (size_t)(*n - i) * sizeof(double));
    xs[i] = x;
    ys[i] = y;
    (*n)++;
    return 0;
}

/* Cell (i, j, l) of a GEMM grid: its tflops are one nm x nn x nk block. */
static inline double *gemm_cell(const mm_gemm_table *t, int i, int j, int l)
{
    return &t->tflops[((size_t)i * (size_t)t->nn + (size_t)j) * (size_t)t->nk + (size_t)l];
}

void mm_gemm_table_free(mm_gemm_table *t)
{
    if (t) {
        free(t->tflops);
        memset(t, 0, sizeof *t);
    }
}

void mm_attn_table_free(mm_attn_table *t)
{
    if (t) {
        free(t->c);
        memset(t, 0, sizeof *t);
    }
}

void mm_kernel_tables_free(mm_kernel_tables *k)
{
    if (!k)
        return;
    mm_gemm_table_free(&k->gemm);
    mm_attn_table_free(&k->attn);
    for (int i = 0; i < MM_ATTN_NAMED_TABLES; i++)
        mm_attn_table_free(&k->impl[i]);
    memset(k, 0, sizeof *k);
}

static int axis_find(const double *a, int n, double v)
{
    for (int i = 0; i < n; i++)
        if (a[i] == v)
            return i;
    return -1;
}

int mm_gemm_table_load(const char *path, mm_gemm_table *t, mm_err *err)
{
    memset(t, 0, sizeof *t);
    csv_rows c;
    int rc = csv_read(path, &c, err);
    if (rc)
        return rc;
    int cm, cn, ck, ct, cs;
    if ((rc = cm = column(&c, path, "m", err)) < 0 || (rc = cn = column(&c, path, "n", err)) < 0 ||
        (rc = ck = column(&c, path, "k", err)) < 0 || (rc = ct = column(&c, path, "tflops", err)) < 0 ||
        (rc = cs = column(&c, path, "source", err)) < 0)
        goto out;
    rc = 0;
    /* first pass: the axes */
    for (int r = 1; r < c.n && !rc; r++) {
        double v[3];
        const char *nm[3] = {"m", "n", "k"};
        int col[3] = {cm, cn, ck};
        double *ax[3] = {t->m, t->n, t->k};
        int *na[3] = {&t->nm, &t->nn, &t->nk};
        for (int a = 0; a < 3 && !rc; a++) {
            if ((rc = num(&c, r, col[a], path, nm[a], &v[a], err)))
                break;
            if (axis_add(ax[a], na[a], v[a]) < 0)
                rc = mm_err_set(err, MM_EINPUT, path, r + 1, nm[a], "more than %d distinct values of %s",
                                MM_GEMM_AXIS_MAX, nm[a]);
        }
    }
    if (rc)
        goto out;
    /* second pass: the values, in a grid of the axes' size; NAN marks an empty cell */
    size_t cells = (size_t)t->nm * (size_t)t->nn * (size_t)t->nk;
    if (!(t->tflops = malloc((cells ? cells : 1) * sizeof *t->tflops))) {
        rc = mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
        goto out;
    }
    for (size_t x = 0; x < cells; x++)
        t->tflops[x] = NAN;
    for (int r = 1; r < c.n; r++) {
        double m, n, k, tf;
        if ((rc = num(&c, r, cm, path, "m", &m, err)) || (rc = num(&c, r, cn, path, "n", &n, err)) ||
            (rc = num(&c, r, ck, path, "k", &k, err)) || (rc = num(&c, r, ct, path, "tflops", &tf, err)) ||
            (rc = need_source(&c, r, cs, path, err)))
            goto out;
        int i = axis_find(t->m, t->nm, m), j = axis_find(t->n, t->nn, n), l = axis_find(t->k, t->nk, k);
        if (!isnan(*gemm_cell(t, i, j, l))) {
            rc = mm_err_set(err, MM_EINPUT, path, r + 1, "m", "shape %gx%gx%g is listed twice", m, n, k);
            goto out;
        }
        *gemm_cell(t, i, j, l) = tf;
    }
    for (int i = 0; i < t->nm; i++)
        for (int j = 0; j < t->nn; j++)
            for (int l = 0; l < t->nk; l++)
                if (isnan(*gemm_cell(t, i, j, l))) {
                    rc = mm_err_set(err, MM_EINPUT, path, 0, "m",
                                    "the table is not a full grid: shape m=%g n=%g k=%g is missing",
                                    t->m[i], t->n[j], t->k[l]);
                    goto out;
                }
out:
    csv_rows_free(&c);
    if (rc < 0)
        mm_gemm_table_free(t);
    return rc < 0 ? rc : 0;
}

static int parse_pass(const char *s, mm_attn_pass *p)
{
    if (!strcmp(s, "fwd"))
        *p = MM_ATTN_FWD;
    else if (!strcmp(s, "bwd"))
        *p = MM_ATTN_BWD;
    else if (!strcmp(s, "fwd+bwd"))
        *p = MM_ATTN_FWDBWD;
    else
        return -1;
    return 0;
}

int mm_attn_table_load(const char *path, mm_attn_table *t, mm_err *err)
{
    memset(t, 0, sizeof *t);
    csv_rows c;
    int rc = csv_read(path, &c, err);
    if (rc)
        return rc;
    int cq, cd, cc, cp, ct, cs;
    if ((rc = cq = column(&c, path, "seqlen", err)) < 0 ||
        (rc = cd = column(&c, path, "head_dim", err)) < 0 ||
        (rc = cc = column(&c, path, "causal", err)) < 0 || (rc = cp = column(&c, path, "pass", err)) < 0 ||
        (rc = ct = column(&c, path, "tflops", err)) < 0 || (rc = cs = column(&c, path, "source", err)) < 0)
        goto out;
    rc = 0;
    for (int r = 1; r < c.n; r++) {
        double s, d, tf;
        const char *cstr = "", *pstr = "";
        mm_attn_pass pass;
        if ((rc = num(&c, r, cq, path, "seqlen", &s, err)) ||
            (rc = num(&c, r, cd, path, "head_dim", &d, err)) ||
            (rc = num(&c, r, ct, path, "tflops", &tf, err)) ||
            (rc = field(&c, r, cc, &cstr, path, "causal", err)) ||
            (rc = field(&c, r, cp, &pstr, path, "pass", err)) || (rc = need_source(&c, r, cs, path, err)))
            goto out;
        bool causal;
        if (!strcmp(cstr, "1") || !strcmp(cstr, "true") || !strcmp(cstr, "True"))
            causal = true;
        else if (!strcmp(cstr, "0") || !strcmp(cstr, "false") || !strcmp(cstr, "False"))
            causal = false;
        else {
            rc = mm_err_set(err, MM_EINPUT, path, r + 1, "causal", "expected 0 or 1, got '%s'", cstr);
            goto out;
        }
        if (parse_pass(pstr, &pass)) {
            rc = mm_err_set(err, MM_EINPUT, path, r + 1, "pass", "expected fwd, bwd or fwd+bwd, got '%s'", pstr);
            goto out;
        }
        int ci = 0;
        while (ci < t->n && !(t->c[ci].head_dim == d && t->c[ci].causal == causal && t->c[ci].pass == pass))
            ci++;
        if (ci == t->n) {
            if (t->n == MM_ATTN_CURVES_MAX) {
                rc = mm_err_set(err, MM_EINPUT, path, r + 1, "head_dim",
                                "more than %d (head_dim, causal, pass) curves", MM_ATTN_CURVES_MAX);
                goto out;
            }
            mm_attn_curve *grown = realloc(t->c, (size_t)(t->n + 1) * sizeof *grown); /* to size */
            if (!grown) {
                rc = mm_err_set(err, MM_EINTERNAL, path, r + 1, "", "out of memory");
                goto out;
            }
            t->c = grown;
            t->c[t->n++] = (mm_attn_curve){.head_dim = d, .causal = causal, .pass = pass};
        }
        mm_attn_curve *cv = &t->c[ci];
        int added = point_add(cv->seq, cv->tflops, &cv->n, MM_ATTN_POINTS_MAX, s, tf);
        if (added == 1) {
            rc = mm_err_set(err, MM_EINPUT, path, r + 1, "seqlen", "seqlen %g is listed twice for this curve", s);
            goto out;
        }
        if (added == 2) {
            rc = mm_err_set(err, MM_EINPUT, path, r + 1, "seqlen", "more than %d points on one curve",
                            MM_ATTN_POINTS_MAX);
            goto out;
        }
    }
out:
    csv_rows_free(&c);
    if (rc < 0)
        mm_attn_table_free(t);
    return rc < 0 ? rc : 0;
}

int mm_mem_table_load(const char *path, mm_mem_table *t, mm_err *err)
{
    memset(t, 0, sizeof *t);
    csv_rows c;
    int rc = csv_read(path, &c, err);
    if (rc)
        return rc;
    int cb, ce, cs;
    if ((rc = cb = column(&c, path, "bytes", err)) < 0 || (rc = ce = column(&c, path, "efficiency", err)) < 0 ||
        (rc = cs = column(&c, path, "source", err)) < 0)
        goto out;
    rc = 0;
    for (int r = 1; r < c.n; r++) {
        double b, e;
        if ((rc = num(&c, r, cb, path, "bytes", &b, err)) || (rc = num(&c, r, ce, path, "efficiency", &e, err)) ||
            (rc = need_source(&c, r, cs, path, err)))
            goto out;
        if (e > 1.0) {
            rc = mm_err_set(err, MM_EINPUT, path, r + 1, "efficiency", "a fraction of peak in (0, 1], got %g", e);
            goto out;
        }
        int added = point_add(t->bytes, t->eff, &t->n, MM_MEM_POINTS_MAX, b, e);
        if (added == 1) {
            rc = mm_err_set(err, MM_EINPUT, path, r + 1, "bytes", "%g bytes is listed twice", b);
            goto out;
        }
        if (added == 2) {
            rc = mm_err_set(err, MM_EINPUT, path, r + 1, "bytes", "more than %d rows", MM_MEM_POINTS_MAX);
            goto out;
        }
    }
out:
    csv_rows_free(&c);
    return rc < 0 ? rc : 0;
}

/* ---- interpolation ---- */

/* y(x) by linear interpolation in log2 x over ascending xs, clamped to the
 * end values outside.  One point: that value. */
static double interp_log(const double *xs, const double *ys, int n, double x)
{
    if (n == 1 || x <= xs[0])
        return ys[0];
    if (x >= xs[n - 1])
        return ys[n - 1];
    double lx[MM_MEM_POINTS_MAX];
    for (int i = 0; i < n; i++)
        lx[i] = log2(xs[i]);
    gsl_interp *g = gsl_interp_alloc(gsl_interp_linear, (size_t)n);
    if (!g) { /* allocation failed: a direct linear evaluation, same answer */
        size_t i = gsl_interp_bsearch(lx, log2(x), 0, (size_t)n - 1);
        double w = (log2(x) - lx[i]) / (lx[i + 1] - lx[i]);
        return ys[i] + w * (ys[i + 1] - ys[i]);
    }
    gsl_interp_init(g, lx, ys, (size_t)n);
    double y = gsl_interp_eval(g, lx, ys, log2(x), NULL);
    gsl_interp_free(g);
    return y;
}

/* Cell index and weight along one grid axis (log2 space), clamped; *scale
 * gets the below-range factor x/min (1 inside or above). */
static void axis_cell(const double *a, int n, double x, int *i, double *w, double *scale)
{
    *scale = 1.0;
    if (n == 1 || x <= a[0]) {
        *i = 0;
        *w = 0.0;
        if (x < a[0])
            *scale = x / a[0];
        return;
    }
    if (x >= a[n - 1]) {
        *i = n - 2;
        *w = 1.0;
        return;
    }
    /* the cell by the values themselves (log2 keeps their order), then
     * the three logarithms the weight needs, not one per axis point: the
     * same operands, so the same weight to the bit */
    size_t c = gsl_interp_bsearch(a, x, 0, (size_t)n - 1);
    double lo = log2(a[c]), hi = log2(a[c + 1]);
    *i = (int)c;
    *w = (log2(x) - lo) / (hi - lo);
}

static double gemm_grid_tflops(const mm_gemm_table *t, double m, double n, double k)
{
    int i[3];
    double w[3], sc[3];
    axis_cell(t->m, t->nm, m, &i[0], &w[0], &sc[0]);
    axis_cell(t->n, t->nn, n, &i[1], &w[1], &sc[1]);
    axis_cell(t->k, t->nk, k, &i[2], &w[2], &sc[2]);
    int lim[3] = {t->nm, t->nn, t->nk};
    double v = 0.0;
    for (int c = 0; c < 8; c++) {
        int ix[3];
        double wt = 1.0;
        for (int a = 0; a < 3; a++) {
            int hi = (c >> a) & 1;
            ix[a] = i[a] + hi;
            if (ix[a] >= lim[a]) /* a one-value axis */
                ix[a] = lim[a] - 1;
            wt *= hi ? w[a] : 1.0 - w[a];
        }
        if (wt > 0)
            v += wt * *gemm_cell(t, ix[0], ix[1], ix[2]);
    }
    return v * sc[0] * sc[1] * sc[2];
}

double mm_short_k_factor(const mm_gemm_table *t, double m, double n, double k)
{
    /* Below the table's shortest k a tile's main loop (k / k_tile
     * iterations) shrinks while its fixed part (the software pipeline's
     * fill and drain, the epilogue writing the tile) does not: time per
     * tile ~ k + c, throughput R k / (k + c).  c is read off the table's
     * own first two k at this (m, n): r0 (k0 + c) / k0 = r1 (k1 + c) / k1.
     * Where the table does not rise with k there (r1 <= r0, or c not
     * finite and positive) the time stays that of k0, as on the m and n
     * axes below the grid. */
    if (!(t->nk > 0) || !(k > 0) || k >= t->k[0])
        return 1.0;
    double k0 = t->k[0];
    if (t->nk < 2)
        return k / k0;
    double k1 = t->k[1];
    double r0 = gemm_grid_tflops(t, m, n, k0), r1 = gemm_grid_tflops(t, m, n, k1);
    double den = r0 / k0 - r1 / k1;
    if (!(r1 > r0) || !(den > 0))
        return k / k0;
    double c = (r1 - r0) / den;
    return (k / k0) * (k0 + c) / (k + c);
}

double mm_gemm_table_tflops(const mm_gemm_table *t, double m, double n, double k)
{
    if (t->nk > 0 && k > 0 && k < t->k[0])
        return gemm_grid_tflops(t, m, n, t->k[0]) * mm_short_k_factor(t, m, n, k);
    return gemm_grid_tflops(t, m, n, k);
}

static double curve_eval(const mm_attn_curve *c, double s)
{
    if (s >= c->seq[0] || c->n < 2)
        return interp_log(c->seq, c->tflops, c->n, s) * (c->n < 2 && s < c->seq[0] ? s / c->seq[0] : 1.0);
    double slope = (c->tflops[1] - c->tflops[0]) / (log2(c->seq[1]) - log2(c->seq[0]));
    double ext = c->tflops[0] + slope * (log2(s) - log2(c->seq[0]));
    double floor_ = c->tflops[0] * s / c->seq[0];
    return fmax(ext, floor_);
}

/* Value at `seqlen` for (causal, pass), interpolated across head dims;
 * NaN when no curve matches. */
static double attn_lookup(const mm_attn_table *t, double seqlen, double d, bool causal, mm_attn_pass pass)
{
    const mm_attn_curve *lo = NULL, *hi = NULL;
    for (int i = 0; i < t->n; i++) {
        const mm_attn_curve *c = &t->c[i];
        if (c->causal != causal || c->pass != pass)
            continue;
        if (c->head_dim <= d && (!lo || c->head_dim > lo->head_dim))
            lo = c;
        if (c->head_dim >= d && (!hi || c->head_dim < hi->head_dim))
            hi = c;
    }
    if (!lo && !hi)
        return NAN;
    if (!lo)
        return curve_eval(hi, seqlen);
    if (!hi || hi == lo)
        return curve_eval(lo, seqlen);
    double w = (log2(d) - log2(lo->head_dim)) / (log2(hi->head_dim) - log2(lo->head_dim));
    return (1.0 - w) * curve_eval(lo, seqlen) + w * curve_eval(hi, seqlen);
}

double mm_attn_table_tflops(const mm_attn_table *t, double seqlen, double head_dim, bool causal,
                            mm_attn_pass pass)
{
    const bool flags[2] = {causal, !causal};
    for (int f = 0; f < 2; f++) {
        double v = attn_lookup(t, seqlen, head_dim, flags[f], pass);
        if (isnan(v) && pass != MM_ATTN_FWDBWD)
            v = attn_lookup(t, seqlen, head_dim, flags[f], MM_ATTN_FWDBWD);
        if (!isnan(v))
            return v;
    }
    return NAN;
}

double mm_mem_table_eff(const mm_mem_table *t, double bytes)
{
    if (t->n == 0)
        return NAN;
    return interp_log(t->bytes, t->eff, t->n, bytes);
}
