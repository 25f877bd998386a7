/* mixture.c - reading and validating mixture specs (workloads/NAME.yaml):
 * weighted components, each drawing text tokens, images, image resolution
 * -> tiles, video seconds -> frames and audio seconds from GSL
 * distributions. The draw of one iteration's samples from a random stream
 * derived from (seed, iteration) is in mixture_draw.c.
 *
 * Tiling follows the published code: `anyres` is LLaVA-NeXT/OneVision's
 * select_best_resolution (the grid with the largest effective resolution,
 * then the least waste; + 1 base tile), `internvl` is InternVL's
 * dynamic_preprocess (the grid of closest aspect ratio among i*j in
 * [min_tiles, max_tiles], + 1 thumbnail when more than one tile; arXiv
 * 2412.05271 Sec. 3.1), `fixed` draws tiles per image directly.
 * Known limit: one tile count serves both the encoder and the LLM (the
 * sample format has no separate LLM tile count), so OneVision's bilinear
 * shrink of > 9 tiles' tokens is not modeled; the shipped OV mix keeps
 * grids within the paper's 729 x 10 token budget instead.
 * Not for: sampling (mixture_draw.c), traces (trace.c), token counts
 * (workload.c), batching. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_histogram.h>
#include <gsl/gsl_randist.h>

#include "util/doc.h"
#include "util/file.h"
#include "workload/mixture_internal.h"
#include "workload/workload.h"

#define KEYLEN 128

static const char *const dist_names[] = {"fixed", "uniform", "lognormal", "gamma", "discrete",
                                         "histogram", NULL};
static const char *const tiling_names[] = {"fixed", "anyres", "internvl", "native", NULL};

const char *const mm_modality_names[] = {"text", "image", "multi-image", "video", "audio", NULL};

/* dst = a "." b, cut to KEYLEN - 1 characters (error keys only). */
static void keyjoin(char dst[KEYLEN], const char *a, const char *b)
{
    size_t la = strnlen(a, KEYLEN - 1), lb = strnlen(b, KEYLEN - 1);
    char tmp[KEYLEN];
    memcpy(tmp, a, la);
    size_t pos = la;
    if (pos < KEYLEN - 1)
        tmp[pos++] = '.';
    if (lb > KEYLEN - 1 - pos)
        lb = KEYLEN - 1 - pos;
    memcpy(tmp + pos, b, lb);
    tmp[pos + lb] = '\0';
    memcpy(dst, tmp, pos + lb + 1);
}

/* dst = a "[" i "]" (dst may be a). */
static void keyidx(char dst[KEYLEN], const char *a, int i)
{
    char num[16], tmp[KEYLEN];
    int ln = snprintf(num, sizeof num, "[%d]", i);
    size_t la = strnlen(a, KEYLEN - 1);
    if (la + (size_t)ln > KEYLEN - 1)
        la = KEYLEN - 1 - (size_t)ln;
    memcpy(tmp, a, la);
    memcpy(tmp + la, num, (size_t)ln + 1);
    memcpy(dst, tmp, la + (size_t)ln + 1);
}

/* ---- loading ----------------------------------------------------------- */

typedef struct loader {
    mm_doc doc;
    char dir[256]; /* folder of the spec, for histogram files */
} loader;

static void dist_free(dist *d)
{
    free(d->values);
    if (d->table)
        gsl_ran_discrete_free(d->table);
    if (d->pdf)
        gsl_histogram_pdf_free(d->pdf);
    memset(d, 0, sizeof *d);
}

static void set_fixed(dist *d, double v)
{
    memset(d, 0, sizeof *d);
    d->kind = D_FIXED;
    d->a = v;
    d->lo = -HUGE_VAL;
    d->hi = HUGE_VAL;
}

static int fail(const loader *ld, int line, const char *key, mm_err *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(const loader *ld, int line, const char *key, mm_err *err, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mm_err_set(err, MM_EINPUT, ld->doc.path, line, key, "%s", msg);
}

/* A list of numbers -> malloc'd array. */
static int read_numbers(loader *ld, mm_node *list, const char *key, double lo, double hi,
                        double **out, int *n_out, mm_err *err)
{
    if (!list || !mm_node_is_sequence(list) || mm_node_count(list) < 1)
        return fail(ld, list ? mm_node_line(list) : 0, key, err, "expected a non-empty list of numbers");
    int n = mm_node_count(list);
    double *v = calloc((size_t)n, sizeof *v);
    if (!v)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, 0, key, "out of memory");
    int it = 0;
    mm_node *item;
    int i = 0;
    char path[KEYLEN];
    while ((item = mm_node_item(list, it++))) {
        keyidx(path, key, i);
        int rc = mm_node_as_double(&ld->doc, item, path, lo, hi, &v[i], err);
        if (rc) {
            free(v);
            return rc;
        }
        i++;
    }
    *out = v;
    *n_out = n;
    return 0;
}

/* Histogram bins `lo,hi,weight` from a CSV file (header line, '#' comments),
 * contiguous and increasing. */
static int read_histogram_file(loader *ld, const char *file, int keyline, const char *key,
                               double **ranges, double **weights, int *n_out, mm_err *err)
{
    char path[512];
    if (file[0] == '/' || !ld->dir[0])
        snprintf(path, sizeof path, "%s", file);
    else
        snprintf(path, sizeof path, "%s/%s", ld->dir, file);
    mm_err ferr;
    FILE *f = mm_file_open(path, MM_FILE_MAX_CONFIG, &ferr);
    if (!f)
        return fail(ld, keyline, key, err, "histogram file '%s': %s", path, ferr.msg);
    int cap = 64, n = 0, line = 0;
    double *r = malloc((size_t)(cap + 1) * sizeof *r), *w = malloc((size_t)cap * sizeof *w);
    char buf[512];
    bool header = false;
    int rc = 0;
    while (r && w && fgets(buf, sizeof buf, f)) {
        line++;
        if (buf[0] == '#' || buf[0] == '\n' || buf[0] == '\r')
            continue;
        if (!header) {
            header = true;
            continue;
        }
        double lo, hi, wt;
        char extra;
        if (sscanf(buf, "%lf,%lf,%lf %c", &lo, &hi, &wt, &extra) != 3 || !(hi > lo) || !(wt >= 0) ||
            !isfinite(lo) || !isfinite(hi) || !isfinite(wt)) {
            rc = mm_err_set(err, MM_EINPUT, path, line, "lo,hi,weight",
                            "expected 'lo,hi,weight' numbers with hi > lo and weight >= 0");
            break;
        }
        if (n > 0 && lo != r[n]) {
            rc = mm_err_set(err, MM_EINPUT, path, line, "lo",
                            "bins must be contiguous: lo %g differs from the previous hi %g", lo, r[n]);
            break;
        }
        if (n == cap) {
            cap *= 2;
            double *r2 = realloc(r, (size_t)(cap + 1) * sizeof *r);
            if (r2)
                r = r2;
            double *w2 = r2 ? realloc(w, (size_t)cap * sizeof *w) : NULL;
            if (w2)
                w = w2;
            if (!r2 || !w2) {
                rc = mm_err_set(err, MM_EINTERNAL, path, line, "", "out of memory");
                break;
            }
        }
        r[n] = lo;
        r[n + 1] = hi;
        w[n] = wt;
        n++;
    }
    fclose(f);
    if (!rc && (!r || !w))
        rc = mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    if (!rc && n == 0)
        rc = mm_err_set(err, MM_EINPUT, path, line, "", "no bins (expected a header and 'lo,hi,weight' rows)");
    if (rc) {
        free(r);
        free(w);
        return rc;
    }
    *ranges = r;
    *weights = w;
    *n_out = n;
    return 0;
}

static int build_histogram(loader *ld, dist *d, const double *ranges, const double *weights, int n,
                           int line, const char *key, mm_err *err)
{
    double total = 0;
    for (int i = 0; i < n; i++)
        total += weights[i];
    if (!(total > 0))
        return fail(ld, line, key, err, "histogram weights sum to 0");
    gsl_histogram *h = gsl_histogram_alloc((size_t)n);
    d->pdf = h ? gsl_histogram_pdf_alloc((size_t)n) : NULL;
    if (!h || !d->pdf) {
        if (h)
            gsl_histogram_free(h);
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, line, key, "out of memory");
    }
    gsl_histogram_set_ranges(h, ranges, (size_t)n + 1);
    for (int i = 0; i < n; i++)
        h->bin[i] = weights[i];
    gsl_histogram_pdf_init(d->pdf, h);
    gsl_histogram_free(h);
    return 0;
}

/* dist: discrete: values: [...] with weights: [...] of the same length. */
static int read_discrete(loader *ld, mm_node *v, const char *key, int line, double lo_allowed,
                         double hi_allowed, dist *d, mm_err *err)
{
    char k2[KEYLEN];
    double *w = NULL;
    int nv = 0, nw = 0, rc;
    keyjoin(k2, key, "values");
    if ((rc = read_numbers(ld, mm_node_get(v, "values"), k2, lo_allowed, hi_allowed, &d->values, &nv, err)))
        return rc;
    keyjoin(k2, key, "weights");
    if ((rc = read_numbers(ld, mm_node_get(v, "weights"), k2, 0, 1e300, &w, &nw, err)))
        return rc;
    double total = 0;
    for (int i = 0; i < nw; i++)
        total += w[i];
    if (nw != nv || !(total > 0)) {
        free(w);
        return fail(ld, line, k2, err, "needs as many weights as values, not all 0");
    }
    d->table = gsl_ran_discrete_preproc((size_t)nw, w);
    free(w);
    if (!d->table)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, line, key, "out of memory");
    return 0;
}

/* dist: histogram: bins from file: (CSV) or bins: [[lo, hi, weight], ...]. */
static int read_histogram(loader *ld, mm_node *v, const char *key, int line, dist *d, mm_err *err)
{
    char k2[KEYLEN];
    bool found;
    int rc;
    double *ranges = NULL, *weights = NULL;
    int nb = 0;
    char file[256] = "";
    keyjoin(k2, key, "file");
    if ((rc = mm_node_str(&ld->doc, v, "file", k2, file, sizeof file, &found, err)))
        return rc;
    if (found) {
        rc = read_histogram_file(ld, file, mm_node_key_line(v, "file"), k2, &ranges, &weights, &nb, err);
    } else {
        /* bins: [[lo, hi, weight], ...] */
        mm_node *bins = mm_node_get(v, "bins");
        keyjoin(k2, key, "bins");
        if (!bins || !mm_node_is_sequence(bins) || mm_node_count(bins) < 1)
            return fail(ld, line, k2, err, "histogram needs file: or bins: [[lo, hi, weight], ...]");
        nb = mm_node_count(bins);
        ranges = malloc((size_t)(nb + 1) * sizeof *ranges);
        weights = malloc((size_t)nb * sizeof *weights);
        if (!ranges || !weights) {
            free(ranges);
            free(weights);
            return mm_err_set(err, MM_EINTERNAL, ld->doc.path, line, key, "out of memory");
        }
        int it = 0;
        mm_node *b;
        int i = 0;
        while (!rc && (b = mm_node_item(bins, it++))) {
            char bk[KEYLEN];
            keyjoin(bk, key, "bins"), keyidx(bk, bk, i);
            double *row = NULL;
            int nr = 0;
            rc = read_numbers(ld, b, bk, -1e300, 1e300, &row, &nr, err);
            if (!rc && (nr != 3 || !(row[1] > row[0]) || row[2] < 0 || (i > 0 && row[0] != ranges[i])))
                rc = fail(ld, mm_node_line(b), bk, err,
                          "expected [lo, hi, weight] with hi > lo, weight >= 0, lo = the previous hi");
            if (!rc) {
                ranges[i] = row[0];
                ranges[i + 1] = row[1];
                weights[i] = row[2];
            }
            free(row);
            i++;
        }
    }
    if (!rc)
        rc = build_histogram(ld, d, ranges, weights, nb, line, key, err);
    free(ranges);
    free(weights);
    return rc;
}

/* NUM(field, min, max, out, req): reads the number v[field] (key k2) in
 * [min, max] into *out, refused when req and missing; in read_dist_params
 * and read_dist, which hold ld, v, key, k2, line, kind, found, rc, err. */
#define NUM(field, min, max, out, req)                                                       \
    do {                                                                                     \
        keyjoin(k2, key, field);                                        \
        found = false;                                                                       \
        if ((rc = mm_node_double(&ld->doc, v, field, k2, min, max, out, &found, err)))       \
            return rc;                                                                       \
        if ((req) && !found)                                                                 \
            return fail(ld, line, k2, err, "missing (needed by dist %s)", dist_names[kind]); \
    } while (0)

/* The parameters of a {dist: kind, ...} mapping v (at key, line) into d,
 * reset first with no bounds; the first half of read_dist. */
static int read_dist_params(loader *ld, mm_node *v, const char *key, int line, double lo_allowed, double hi_allowed,
                            int kind, dist *d, mm_err *err)
{
    char k2[KEYLEN];
    int rc;
    memset(d, 0, sizeof *d);
    d->kind = (dist_kind)kind;
    d->lo = -HUGE_VAL;
    d->hi = HUGE_VAL;
    bool found;
    double x;
    switch (d->kind) {
    case D_FIXED:
        NUM("value", lo_allowed, hi_allowed, &d->a, 1);
        break;
    case D_UNIFORM:
        NUM("min", lo_allowed, hi_allowed, &d->a, 1);
        NUM("max", lo_allowed, hi_allowed, &d->b, 1);
        if (!(d->b > d->a))
            return fail(ld, line, key, err, "uniform needs max > min");
        break;
    case D_LOGNORMAL:
        NUM("mu", -1e3, 1e3, &d->a, 0);
        if (!found) {
            NUM("median", 1e-300, 1e300, &x, 0);
            if (!found)
                return fail(ld, line, key, err, "lognormal needs mu or median");
            d->a = log(x);
        }
        NUM("sigma", 1e-12, 1e2, &d->b, 1);
        break;
    case D_GAMMA:
        NUM("shape", 1e-12, 1e12, &d->a, 1);
        NUM("scale", 1e-300, 1e300, &d->b, 0);
        if (!found) {
            NUM("mean", 1e-300, 1e300, &x, 0);
            if (!found)
                return fail(ld, line, key, err, "gamma needs scale or mean");
            d->b = x / d->a;
        }
        break;
    case D_DISCRETE:
        if ((rc = read_discrete(ld, v, key, line, lo_allowed, hi_allowed, d, err)))
            return rc;
        break;
    case D_HISTOGRAM:
        if ((rc = read_histogram(ld, v, key, line, d, err)))
            return rc;
        break;
    }
    return 0;
}

/* A distribution: a plain number (fixed) or {dist: kind, ...params, min, max}. */
static int read_dist(loader *ld, mm_node *parent, const char *name, const char *key,
                     double lo_allowed, double hi_allowed, dist *d, mm_err *err)
{
    mm_node *v = mm_node_get(parent, name);
    int line = v ? mm_node_line(v) : mm_node_line(parent);
    if (!v)
        return fail(ld, mm_node_line(parent), key, err, "missing (a number or {dist: ...})");
    if (mm_node_is_scalar(v)) {
        double x;
        int rc = mm_node_as_double(&ld->doc, v, key, lo_allowed, hi_allowed, &x, err);
        if (rc)
            return rc;
        set_fixed(d, x);
        return 0;
    }
    static const char *const keys[] = {"dist", "value", "min", "max", "mu", "median", "sigma",
                                       "shape", "scale", "mean", "values", "weights", "bins",
                                       "file", "source", NULL};
    int rc = mm_node_check_keys(&ld->doc, v, key, keys, err);
    if (rc)
        return rc;
    char k2[KEYLEN];
    int kind = -1;
    keyjoin(k2, key, "dist");
    if ((rc = mm_node_enum(&ld->doc, v, "dist", k2, dist_names, &kind, NULL, err)))
        return rc;
    if (kind < 0)
        return fail(ld, line, k2, err, "missing: one of fixed, uniform, lognormal, gamma, discrete, histogram");
    if ((rc = read_dist_params(ld, v, key, line, lo_allowed, hi_allowed, kind, d, err)))
        return rc;
    bool found;
    NUM("min", lo_allowed, hi_allowed, &d->lo, 0);
    if (!found || d->kind == D_UNIFORM)
        d->lo = -HUGE_VAL;
    NUM("max", lo_allowed, hi_allowed, &d->hi, 0);
    if (!found || d->kind == D_UNIFORM)
        d->hi = HUGE_VAL;
#undef NUM
    if (d->lo > d->hi)
        return fail(ld, line, key, err, "min is above max");
    return 0;
}

static int read_int(loader *ld, mm_node *map, const char *name, const char *prefix, int64_t lo,
                    int64_t hi, int64_t *out, bool required, mm_err *err)
{
    char key[KEYLEN];
    keyjoin(key, prefix, name);
    bool found = false;
    int rc = mm_node_int(&ld->doc, map, name, key, lo, hi, out, &found, err);
    if (!rc && required && !found)
        rc = fail(ld, mm_node_line(map), key, err, "missing");
    return rc;
}

/* anyres: grids: [[rows, cols], ...] or max_grid: N (every a x b, a, b <= N),
 * filtered to rows*cols + 1 <= max_tiles when max_tiles is given; the end
 * of read_image. */
static int read_grids(loader *ld, mm_node *m, const char *prefix, component *c, mm_err *err)
{
    char key[KEYLEN];
    int rc;
    mm_node *g = mm_node_get(m, "grids");
    int64_t maxg = 0;
    if ((rc = read_int(ld, m, "max_grid", prefix, 1, 8, &maxg, false, err)))
        return rc;
    c->n_grids = 0;
    if (g) {
        keyjoin(key, prefix, "grids");
        if (!mm_node_is_sequence(g))
            return fail(ld, mm_node_line(g), key, err, "expected a list of [rows, cols]");
        int it = 0;
        mm_node *p;
        while ((p = mm_node_item(g, it++))) {
            char gk[KEYLEN];
            keyidx(gk, key, c->n_grids);
            double *rc2 = NULL;
            int nr = 0;
            if ((rc = read_numbers(ld, p, gk, 1, 64, &rc2, &nr, err)))
                return rc;
            bool ok = nr == 2 && rc2[0] == floor(rc2[0]) && rc2[1] == floor(rc2[1]) && c->n_grids < MAX_GRIDS;
            if (ok) {
                c->grids[c->n_grids][0] = (int)rc2[0];
                c->grids[c->n_grids][1] = (int)rc2[1];
                c->n_grids++;
            }
            free(rc2);
            if (!ok)
                return fail(ld, mm_node_line(p), gk, err, "expected [rows, cols] integers (at most 64 grids)");
        }
    } else if (maxg) {
        for (int a = 1; a <= maxg; a++)
            for (int b = 1; b <= maxg; b++)
                if (!c->max_tiles || a * b + 1 <= c->max_tiles) {
                    c->grids[c->n_grids][0] = a;
                    c->grids[c->n_grids][1] = b;
                    c->n_grids++;
                }
    }
    if (c->n_grids == 0) {
        keyjoin(key, prefix, "grids");
        return fail(ld, mm_node_line(m), key, err, "anyres needs grids: [[rows, cols], ...] or max_grid: N");
    }
    return 0;
}

/* native (Qwen2-VL dynamic resolution): megapixels and aspect per image,
 * the processor's patch, merge, min_pixels and max_pixels (its defaults:
 * transformers Qwen2VLImageProcessor, 14, 2, 56*56, 28*28*1280); `tile` is
 * the model's accounting tile an image's encoder inputs are counted in. */
static int read_native(loader *ld, mm_node *m, const char *prefix, component *c, mm_err *err)
{
    char key[KEYLEN];
    int rc;
    keyjoin(key, prefix, "megapixels");
    if ((rc = read_dist(ld, m, "megapixels", key, 1e-4, 1e4, &c->megapixels, err)))
        return rc;
    keyjoin(key, prefix, "aspect");
    if (!mm_node_get(m, "aspect"))
        set_fixed(&c->aspect, 1);
    else if ((rc = read_dist(ld, m, "aspect", key, 1.0 / 200, 200, &c->aspect, err)))
        return rc; /* the processor refuses aspect ratios over 200 */
    int64_t v = 14;
    if ((rc = read_int(ld, m, "patch", prefix, 1, 1 << 12, &v, false, err)))
        return rc;
    c->patch = v;
    v = 2;
    if ((rc = read_int(ld, m, "merge", prefix, 1, 64, &v, false, err)))
        return rc;
    c->merge = v;
    v = MM_NATIVE_MIN_PIXELS;
    if ((rc = read_int(ld, m, "min_pixels", prefix, 1, (int64_t)1 << 40, &v, false, err)))
        return rc;
    c->min_pixels = v;
    v = MM_NATIVE_MAX_PIXELS;
    if ((rc = read_int(ld, m, "max_pixels", prefix, 1, (int64_t)1 << 40, &v, false, err)))
        return rc;
    c->max_pixels = v;
    if (c->max_pixels < c->min_pixels) {
        keyjoin(key, prefix, "max_pixels");
        return fail(ld, mm_node_line(m), key, err, "max_pixels %lld is below min_pixels %lld",
                    (long long)c->max_pixels, (long long)c->min_pixels);
    }
    if (c->tile_px % (c->patch * c->merge)) {
        keyjoin(key, prefix, "tile");
        return fail(ld, mm_node_line(m), key, err, "the %lld-px tile is not a whole number of %lld-px merged patches",
                    (long long)c->tile_px, (long long)(c->patch * c->merge));
    }
    return 0;
}

static int read_image(loader *ld, mm_node *m, const char *prefix, component *c, mm_err *err)
{
    static const char *const keys[] = {"tiling", "tiles", "tile", "grids", "max_grid", "width", "aspect",
                                       "min_tiles", "max_tiles", "thumbnail", "split_max_tiles", "megapixels",
                                       "patch", "merge", "min_pixels", "max_pixels", "source", NULL};
    int rc = mm_node_check_keys(&ld->doc, m, prefix, keys, err);
    if (rc)
        return rc;
    char key[KEYLEN];
    int t = TILING_FIXED;
    keyjoin(key, prefix, "tiling");
    if ((rc = mm_node_enum(&ld->doc, m, "tiling", key, tiling_names, &t, NULL, err)))
        return rc;
    c->tiling = (tiling_kind)t;
    /* keys one tiling reads and another would ignore are refused by name */
    static const char *const native_only[] = {"megapixels", "patch", "merge", "min_pixels", "max_pixels", NULL};
    static const char *const not_native[] = {"tiles", "grids", "max_grid", "width", "min_tiles", "max_tiles",
                                             "thumbnail", "split_max_tiles", NULL};
    const char *const *refused = c->tiling == TILING_NATIVE ? not_native : native_only;
    for (int k = 0; refused[k]; k++) {
        mm_node *x = mm_node_get(m, refused[k]);
        if (x) {
            keyjoin(key, prefix, refused[k]);
            return fail(ld, mm_node_line(x), key, err, "not read with tiling: %s", tiling_names[c->tiling]);
        }
    }
    if (c->tiling == TILING_FIXED) {
        keyjoin(key, prefix, "tiles");
        if (!mm_node_get(m, "tiles")) {
            set_fixed(&c->tiles, 1);
            return 0;
        }
        return read_dist(ld, m, "tiles", key, 1, 1e6, &c->tiles, err);
    }
    int64_t v = 0;
    if ((rc = read_int(ld, m, "tile", prefix, 1, 1 << 16, &v, true, err)))
        return rc;
    c->tile_px = v;
    if (c->tiling == TILING_NATIVE)
        return read_native(ld, m, prefix, c, err);
    keyjoin(key, prefix, "width");
    if ((rc = read_dist(ld, m, "width", key, 1, 1e6, &c->width, err)))
        return rc;
    keyjoin(key, prefix, "aspect");
    if ((rc = read_dist(ld, m, "aspect", key, 1e-3, 1e3, &c->aspect, err)))
        return rc;
    v = 0;
    if ((rc = read_int(ld, m, "max_tiles", prefix, 1, 10000, &v, c->tiling == TILING_INTERNVL, err)))
        return rc;
    c->max_tiles = (int)v;
    if (c->tiling == TILING_INTERNVL) {
        v = 1;
        if ((rc = read_int(ld, m, "min_tiles", prefix, 1, c->max_tiles, &v, false, err)))
            return rc;
        c->min_tiles = (int)v;
        c->thumbnail = true;
        keyjoin(key, prefix, "thumbnail");
        if ((rc = mm_node_bool(&ld->doc, m, "thumbnail", key, &c->thumbnail, NULL, err)))
            return rc;
        keyjoin(key, prefix, "split_max_tiles");
        return mm_node_bool(&ld->doc, m, "split_max_tiles", key, &c->split_max_tiles, NULL, err);
    }
    return read_grids(ld, m, prefix, c, err);
}

/* A component's video: {seconds, fps, min_frames, max_frames} at key. */
static int read_video(loader *ld, mm_node *vid, const char *key, component *c, mm_err *err)
{
    int rc;
    bool found;
    static const char *const vkeys[] = {"seconds", "fps", "min_frames", "max_frames", "source", NULL};
    if ((rc = mm_node_check_keys(&ld->doc, vid, key, vkeys, err)))
        return rc;
    char k2[KEYLEN];
    keyjoin(k2, key, "seconds");
    if ((rc = read_dist(ld, vid, "seconds", k2, 0, 1e7, &c->seconds, err)))
        return rc;
    keyjoin(k2, key, "fps");
    found = false;
    if ((rc = mm_node_double(&ld->doc, vid, "fps", k2, 1e-6, 1e3, &c->fps, &found, err)))
        return rc;
    if (!found)
        return fail(ld, mm_node_line(vid), k2, err, "missing (frames sampled per second)");
    int64_t v = 1;
    if ((rc = read_int(ld, vid, "min_frames", key, 0, 1 << 20, &v, false, err)))
        return rc;
    c->min_frames = (int)v;
    v = 0;
    if ((rc = read_int(ld, vid, "max_frames", key, c->min_frames > 0 ? c->min_frames : 1, 1 << 20, &v, true, err)))
        return rc;
    c->max_frames = (int)v;
    c->has_video = true;
    return 0;
}

/* A component's audio: {seconds, max_seconds} at key. */
static int read_audio(loader *ld, mm_node *aud, const char *key, component *c, mm_err *err)
{
    int rc;
    static const char *const akeys[] = {"seconds", "max_seconds", "source", NULL};
    if ((rc = mm_node_check_keys(&ld->doc, aud, key, akeys, err)))
        return rc;
    char k2[KEYLEN];
    keyjoin(k2, key, "seconds");
    if ((rc = read_dist(ld, aud, "seconds", k2, 0, 1e7, &c->audio, err)))
        return rc;
    c->max_audio_s = HUGE_VAL;
    keyjoin(k2, key, "max_seconds");
    if ((rc = mm_node_double(&ld->doc, aud, "max_seconds", k2, 1e-3, 1e7, &c->max_audio_s, NULL, err)))
        return rc;
    c->has_audio = true;
    return 0;
}

static int read_component(loader *ld, mm_node *m, int idx, component *c, mm_err *err)
{
    char prefix[KEYLEN], key[KEYLEN];
    snprintf(prefix, sizeof prefix, "components[%d]", idx);
    static const char *const keys[] = {"name", "modality", "weight", "text_tokens", "images", "image",
                                       "video", "audio", "source", NULL};
    int rc = mm_node_check_keys(&ld->doc, m, prefix, keys, err);
    if (rc)
        return rc;
    snprintf(c->name, sizeof c->name, "component%d", idx);
    keyjoin(key, prefix, "name");
    if ((rc = mm_node_str(&ld->doc, m, "name", key, c->name, sizeof c->name, NULL, err)))
        return rc;
    int mod = -1;
    bool found = false;
    keyjoin(key, prefix, "modality");
    if ((rc = mm_node_enum(&ld->doc, m, "modality", key, mm_modality_names, &mod, &found, err)))
        return rc;
    if (!found)
        return fail(ld, mm_node_line(m), key, err, "missing: one of text, image, multi-image, video, audio");
    c->modality = (mm_modality)mod;
    keyjoin(key, prefix, "weight");
    found = false;
    if ((rc = mm_node_double(&ld->doc, m, "weight", key, 0, 1e300, &c->weight, &found, err)))
        return rc;
    if (!found)
        return fail(ld, mm_node_line(m), key, err, "missing (a share of samples, >= 0)");
    keyjoin(key, prefix, "text_tokens");
    if ((rc = read_dist(ld, m, "text_tokens", key, 0, 1e9, &c->text, err)))
        return rc;

    mm_node *img = mm_node_get(m, "image");
    bool wants_images = c->modality == MM_MOD_IMAGE || c->modality == MM_MOD_MULTI_IMAGE;
    keyjoin(key, prefix, "images");
    if (mm_node_get(m, "images")) {
        if ((rc = read_dist(ld, m, "images", key, 0, 1e4, &c->images, err)))
            return rc;
        c->has_images = true;
    } else if (c->modality == MM_MOD_MULTI_IMAGE) {
        return fail(ld, mm_node_line(m), key, err, "missing: a multi-image component needs images per sample");
    } else if (wants_images || img) {
        set_fixed(&c->images, 1);
        c->has_images = true;
    }
    keyjoin(key, prefix, "image");
    if (c->has_images && !img) {
        c->tiling = TILING_FIXED;
        set_fixed(&c->tiles, 1);
    } else if (img && (rc = read_image(ld, img, key, c, err))) {
        return rc;
    }

    mm_node *vid = mm_node_get(m, "video");
    keyjoin(key, prefix, "video");
    if (c->modality == MM_MOD_VIDEO && !vid)
        return fail(ld, mm_node_line(m), key, err, "missing: {seconds: ..., fps: ..., max_frames: ...}");
    if (vid && (rc = read_video(ld, vid, key, c, err)))
        return rc;

    mm_node *aud = mm_node_get(m, "audio");
    keyjoin(key, prefix, "audio");
    if (c->modality == MM_MOD_AUDIO && !aud)
        return fail(ld, mm_node_line(m), key, err, "missing: {seconds: ..., max_seconds: ...}");
    if (aud && (rc = read_audio(ld, aud, key, c, err)))
        return rc;
    return 0;
}

static int finish_weights(mm_mixture *mix, mm_err *err)
{
    double w[MAX_COMPONENTS], total = 0;
    for (int i = 0; i < mix->n; i++)
        total += (w[i] = mix->comp[i].weight);
    if (!(total > 0))
        return mm_err_set(err, MM_EINPUT, mix->path, 0, "components", "the weights sum to 0");
    for (int i = 0; i < mix->n; i++)
        mix->comp[i].weight /= total;
    if (mix->pick)
        gsl_ran_discrete_free(mix->pick);
    mix->pick = gsl_ran_discrete_preproc((size_t)mix->n, w);
    if (!mix->pick)
        return mm_err_set(err, MM_EINTERNAL, mix->path, 0, "", "out of memory");
    return 0;
}

/* "1:9" or a number. */
static int parse_ratio(loader *ld, mm_node *v, double *ratio, mm_err *err)
{
    char s[64];
    int rc = mm_node_as_str(&ld->doc, v, "image_text_ratio", s, sizeof s, err);
    if (rc)
        return rc;
    double a, b;
    char extra;
    if (sscanf(s, "%lf:%lf %c", &a, &b, &extra) == 2 && a > 0 && b > 0 && isfinite(a / b)) {
        *ratio = a / b;
        return 0;
    }
    return mm_node_as_double(&ld->doc, v, "image_text_ratio", 1e-9, 1e9, ratio, err);
}

static int load(loader *ld, mm_mixture **out, mm_err *err)
{
    mm_node *root = mm_doc_root(&ld->doc);
    static const char *const keys[] = {"name", "source", "description", "components", "image_text_ratio", NULL};
    if (!root || !mm_node_is_mapping(root))
        return mm_err_set(err, MM_EINPUT, ld->doc.path, 1, "", "a mixture spec is a mapping with components:");
    int rc = mm_node_check_keys(&ld->doc, root, "", keys, err);
    if (rc)
        return rc;
    mm_node *list = mm_node_get(root, "components");
    if (!list || !mm_node_is_sequence(list) || mm_node_count(list) < 1)
        return mm_err_set(err, MM_EINPUT, ld->doc.path, list ? mm_node_line(list) : 1, "components",
                          "expected a non-empty list of components");
    if (mm_node_count(list) > MAX_COMPONENTS)
        return mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(list), "components",
                          "at most %d components", MAX_COMPONENTS);
    mm_mixture *mix = calloc(1, sizeof *mix);
    if (!mix)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, 0, "", "out of memory");
    snprintf(mix->path, sizeof mix->path, "%s", ld->doc.path);
    int it = 0;
    mm_node *item;
    while (!rc && (item = mm_node_item(list, it++)))
        rc = read_component(ld, item, mix->n, &mix->comp[mix->n], err), mix->n++;
    if (!rc)
        rc = finish_weights(mix, err);
    mm_node *ratio = mm_node_get(root, "image_text_ratio");
    if (!rc && ratio) {
        double r = 0;
        rc = parse_ratio(ld, ratio, &r, err);
        if (!rc && mm_mixture_set_image_text_ratio(mix, r, err)) {
            err->line = mm_node_line(ratio);
            rc = -MM_EINPUT;
        }
    }
    if (rc) {
        mm_mixture_free(mix);
        return rc;
    }
    *out = mix;
    return 0;
}

int mm_mixture_load(const char *path, mm_mixture **out, mm_err *err)
{
    loader ld;
    memset(&ld, 0, sizeof ld);
    *out = NULL;
    int rc = mm_doc_load_file(&ld.doc, path, err);
    if (rc)
        return rc;
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(ld.dir, sizeof ld.dir, "%.*s", (int)(slash - path), path);
    rc = load(&ld, out, err);
    mm_doc_free(&ld.doc);
    return rc;
}

int mm_mixture_load_string(const char *name, const char *text, mm_mixture **out, mm_err *err)
{
    loader ld;
    memset(&ld, 0, sizeof ld);
    *out = NULL;
    int rc = mm_doc_load_string(&ld.doc, name, text, err);
    if (rc)
        return rc;
    rc = load(&ld, out, err);
    mm_doc_free(&ld.doc);
    return rc;
}

void mm_mixture_free(mm_mixture *mix)
{
    if (!mix)
        return;
    for (int i = 0; i < mix->n; i++) {
        component *c = &mix->comp[i];
        dist_free(&c->text);
        dist_free(&c->images);
        dist_free(&c->tiles);
        dist_free(&c->width);
        dist_free(&c->aspect);
        dist_free(&c->megapixels);
        dist_free(&c->seconds);
        dist_free(&c->audio);
    }
    if (mix->pick)
        gsl_ran_discrete_free(mix->pick);
    free(mix);
}

int mm_mixture_set_image_text_ratio(mm_mixture *mix, double ratio, mm_err *err)
{
    double img = 0, txt = 0;
    for (int i = 0; i < mix->n; i++) {
        mm_modality m = mix->comp[i].modality;
        if (m == MM_MOD_IMAGE || m == MM_MOD_MULTI_IMAGE)
            img += mix->comp[i].weight;
        else if (m == MM_MOD_TEXT)
            txt += mix->comp[i].weight;
    }
    if (!(ratio > 0) || !isfinite(ratio))
        return mm_err_set(err, MM_EINPUT, mix->path, 0, "image_text_ratio", "must be > 0, got %g", ratio);
    if (!(img > 0) || !(txt > 0))
        return mm_err_set(err, MM_EINPUT, mix->path, 0, "image_text_ratio",
                          "needs image (or multi-image) and text components of weight > 0");
    double sum = img + txt;
    double img_new = sum * ratio / (1 + ratio), txt_new = sum / (1 + ratio);
    for (int i = 0; i < mix->n; i++) {
        mm_modality m = mix->comp[i].modality;
        if (m == MM_MOD_IMAGE || m == MM_MOD_MULTI_IMAGE)
            mix->comp[i].weight *= img_new / img;
        else if (m == MM_MOD_TEXT)
            mix->comp[i].weight *= txt_new / txt;
    }
    return finish_weights(mix, err);
}

int mm_mixture_n_components(const mm_mixture *mix)
{
    return mix->n;
}

const char *mm_mixture_component(const mm_mixture *mix, int i, mm_modality *modality, double *weight)
{
    if (i < 0 || i >= mix->n)
        return NULL;
    if (modality)
        *modality = mix->comp[i].modality;
    if (weight)
        *weight = mix->comp[i].weight;
    return mix->comp[i].name;
}
