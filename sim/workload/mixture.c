/* mixture.c - mixture specs (workloads/NAME.yaml): weighted components, each
 * drawing text tokens, images, image resolution -> tiles, video seconds ->
 * frames and audio seconds from GSL distributions; and the draw of one
 * iteration's samples from a random stream derived from (seed, iteration).
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
 * Not for: traces (trace.c), token counts (workload.c), batching. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_histogram.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <libfyaml.h>

#include "util/doc.h"
#include "util/file.h"
#include "workload/workload.h"

#define MAX_GRIDS 64
#define MAX_COMPONENTS 64
#define KEYLEN 128

typedef enum { D_FIXED, D_UNIFORM, D_LOGNORMAL, D_GAMMA, D_DISCRETE, D_HISTOGRAM } dist_kind;
static const char *const dist_names[] = {"fixed", "uniform", "lognormal", "gamma", "discrete",
                                         "histogram", NULL};

/* One distribution; draws are clamped to [lo, hi]. */
typedef struct dist {
    dist_kind kind;
    double a, b;           /* fixed: a; uniform: [a, b); lognormal: mu, sigma; gamma: shape, scale */
    double lo, hi;
    double *values;        /* discrete */
    gsl_ran_discrete_t *table;
    gsl_histogram_pdf *pdf; /* histogram */
} dist;

typedef enum { TILING_FIXED, TILING_ANYRES, TILING_INTERNVL } tiling_kind;
static const char *const tiling_names[] = {"fixed", "anyres", "internvl", NULL};

typedef struct component {
    char name[64];
    mm_modality modality;
    double weight;
    dist text;
    bool has_images;
    dist images;           /* images per sample */
    tiling_kind tiling;
    dist tiles;            /* TILING_FIXED: tiles per image */
    dist width, aspect;    /* anyres / internvl: pixels, height / width */
    int64_t tile_px;
    int n_grids;
    int grids[MAX_GRIDS][2]; /* anyres: rows, cols */
    int min_tiles, max_tiles;
    bool thumbnail, split_max_tiles;
    bool has_video;
    dist seconds;
    double fps;
    int min_frames, max_frames;
    bool has_audio;
    dist audio;
    double max_audio_s;
} component;

struct mm_mixture {
    char path[256];
    int n;
    component comp[MAX_COMPONENTS];
    gsl_ran_discrete_t *pick; /* over comp[].weight */
};

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
static int read_numbers(loader *ld, struct fy_node *list, const char *key, double lo, double hi,
                        double **out, int *n_out, mm_err *err)
{
    if (!list || !fy_node_is_sequence(list) || fy_node_sequence_item_count(list) < 1)
        return fail(ld, list ? mm_node_line(list) : 0, key, err, "expected a non-empty list of numbers");
    int n = fy_node_sequence_item_count(list);
    double *v = calloc((size_t)n, sizeof *v);
    if (!v)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, 0, key, "out of memory");
    void *it = NULL;
    struct fy_node *item;
    int i = 0;
    char path[KEYLEN];
    while ((item = fy_node_sequence_iterate(list, &it))) {
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

/* A distribution: a plain number (fixed) or {dist: kind, ...params, min, max}. */
static int read_dist(loader *ld, struct fy_node *parent, const char *name, const char *key,
                     double lo_allowed, double hi_allowed, dist *d, mm_err *err)
{
    struct fy_node *v = mm_node_get(parent, name);
    int line = v ? mm_node_line(v) : mm_node_line(parent);
    if (!v)
        return fail(ld, mm_node_line(parent), key, err, "missing (a number or {dist: ...})");
    if (fy_node_is_scalar(v)) {
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
    memset(d, 0, sizeof *d);
    d->kind = (dist_kind)kind;
    d->lo = -HUGE_VAL;
    d->hi = HUGE_VAL;
    bool found;
    double x;
#define NUM(field, min, max, out, req)                                                       \
    do {                                                                                     \
        keyjoin(k2, key, field);                                        \
        found = false;                                                                       \
        if ((rc = mm_node_double(&ld->doc, v, field, k2, min, max, out, &found, err)))       \
            return rc;                                                                       \
        if ((req) && !found)                                                                 \
            return fail(ld, line, k2, err, "missing (needed by dist %s)", dist_names[kind]); \
    } while (0)
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
    case D_DISCRETE: {
        double *w = NULL;
        int nv = 0, nw = 0;
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
        break;
    }
    case D_HISTOGRAM: {
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
            struct fy_node *bins = mm_node_get(v, "bins");
            keyjoin(k2, key, "bins");
            if (!bins || !fy_node_is_sequence(bins) || fy_node_sequence_item_count(bins) < 1)
                return fail(ld, line, k2, err, "histogram needs file: or bins: [[lo, hi, weight], ...]");
            nb = fy_node_sequence_item_count(bins);
            ranges = malloc((size_t)(nb + 1) * sizeof *ranges);
            weights = malloc((size_t)nb * sizeof *weights);
            if (!ranges || !weights) {
                free(ranges);
                free(weights);
                return mm_err_set(err, MM_EINTERNAL, ld->doc.path, line, key, "out of memory");
            }
            void *it = NULL;
            struct fy_node *b;
            int i = 0;
            while (!rc && (b = fy_node_sequence_iterate(bins, &it))) {
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
        if (rc)
            return rc;
        break;
    }
    }
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

static int read_int(loader *ld, struct fy_node *map, const char *name, const char *prefix, int64_t lo,
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

static int read_image(loader *ld, struct fy_node *m, const char *prefix, component *c, mm_err *err)
{
    static const char *const keys[] = {"tiling", "tiles", "tile", "grids", "max_grid", "width", "aspect",
                                       "min_tiles", "max_tiles", "thumbnail", "split_max_tiles", "source", NULL};
    int rc = mm_node_check_keys(&ld->doc, m, prefix, keys, err);
    if (rc)
        return rc;
    char key[KEYLEN];
    int t = TILING_FIXED;
    keyjoin(key, prefix, "tiling");
    if ((rc = mm_node_enum(&ld->doc, m, "tiling", key, tiling_names, &t, NULL, err)))
        return rc;
    c->tiling = (tiling_kind)t;
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
    /* anyres: grids: [[rows, cols], ...] or max_grid: N (every a x b, a, b <= N),
     * filtered to rows*cols + 1 <= max_tiles when max_tiles is given. */
    struct fy_node *g = mm_node_get(m, "grids");
    int64_t maxg = 0;
    if ((rc = read_int(ld, m, "max_grid", prefix, 1, 8, &maxg, false, err)))
        return rc;
    c->n_grids = 0;
    if (g) {
        keyjoin(key, prefix, "grids");
        if (!fy_node_is_sequence(g))
            return fail(ld, mm_node_line(g), key, err, "expected a list of [rows, cols]");
        void *it = NULL;
        struct fy_node *p;
        while ((p = fy_node_sequence_iterate(g, &it))) {
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

static int read_component(loader *ld, struct fy_node *m, int idx, component *c, mm_err *err)
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

    struct fy_node *img = mm_node_get(m, "image");
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

    struct fy_node *vid = mm_node_get(m, "video");
    keyjoin(key, prefix, "video");
    if (c->modality == MM_MOD_VIDEO && !vid)
        return fail(ld, mm_node_line(m), key, err, "missing: {seconds: ..., fps: ..., max_frames: ...}");
    if (vid) {
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
    }

    struct fy_node *aud = mm_node_get(m, "audio");
    keyjoin(key, prefix, "audio");
    if (c->modality == MM_MOD_AUDIO && !aud)
        return fail(ld, mm_node_line(m), key, err, "missing: {seconds: ..., max_seconds: ...}");
    if (aud) {
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
    }
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
static int parse_ratio(loader *ld, struct fy_node *v, double *ratio, mm_err *err)
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
    struct fy_node *root = mm_doc_root(&ld->doc);
    static const char *const keys[] = {"name", "source", "description", "components", "image_text_ratio", NULL};
    if (!root || !fy_node_is_mapping(root))
        return mm_err_set(err, MM_EINPUT, ld->doc.path, 1, "", "a mixture spec is a mapping with components:");
    int rc = mm_node_check_keys(&ld->doc, root, "", keys, err);
    if (rc)
        return rc;
    struct fy_node *list = mm_node_get(root, "components");
    if (!list || !fy_node_is_sequence(list) || fy_node_sequence_item_count(list) < 1)
        return mm_err_set(err, MM_EINPUT, ld->doc.path, list ? mm_node_line(list) : 1, "components",
                          "expected a non-empty list of components");
    if (fy_node_sequence_item_count(list) > MAX_COMPONENTS)
        return mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(list), "components",
                          "at most %d components", MAX_COMPONENTS);
    mm_mixture *mix = calloc(1, sizeof *mix);
    if (!mix)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, 0, "", "out of memory");
    snprintf(mix->path, sizeof mix->path, "%s", ld->doc.path);
    void *it = NULL;
    struct fy_node *item;
    while (!rc && (item = fy_node_sequence_iterate(list, &it)))
        rc = read_component(ld, item, mix->n, &mix->comp[mix->n], err), mix->n++;
    if (!rc)
        rc = finish_weights(mix, err);
    struct fy_node *ratio = mm_node_get(root, "image_text_ratio");
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

/* ---- drawing ----------------------------------------------------------- */

static double draw(const dist *d, gsl_rng *r)
{
    double x = 0;
    switch (d->kind) {
    case D_FIXED:
        x = d->a;
        break;
    case D_UNIFORM:
        x = d->a + (d->b - d->a) * gsl_rng_uniform(r);
        break;
    case D_LOGNORMAL:
        x = gsl_ran_lognormal(r, d->a, d->b);
        break;
    case D_GAMMA:
        x = gsl_ran_gamma(r, d->a, d->b);
        break;
    case D_DISCRETE:
        x = d->values[gsl_ran_discrete(r, d->table)];
        break;
    case D_HISTOGRAM:
        x = gsl_histogram_pdf_sample(d->pdf, gsl_rng_uniform(r));
        break;
    }
    return x < d->lo ? d->lo : x > d->hi ? d->hi : x;
}

/* Non-negative integer from a draw, rounded half up. */
static int64_t draw_count(const dist *d, gsl_rng *r)
{
    double x = floor(draw(d, r) + 0.5);
    return x < 0 ? 0 : x > 1e15 ? (int64_t)1e15 : (int64_t)x;
}

/* LLaVA-NeXT mm_utils.select_best_resolution (LLaVA-VL/LLaVA-NeXT): the
 * grid whose downscaled image keeps the most pixels, then the least
 * padding; tiles = rows * cols + 1 base image. */
static int anyres_tiles(const component *c, double w, double h)
{
    double best_eff = -1, best_waste = HUGE_VAL;
    int best = 0;
    for (int g = 0; g < c->n_grids; g++) {
        double gh = (double)(c->grids[g][0] * c->tile_px), gw = (double)(c->grids[g][1] * c->tile_px);
        double scale = fmin(gw / w, gh / h);
        double dw = floor(w * scale), dh = floor(h * scale);
        double eff = fmin(dw * dh, w * h), waste = gw * gh - eff;
        if (eff > best_eff || (eff == best_eff && waste < best_waste)) {
            best_eff = eff;
            best_waste = waste;
            best = g;
        }
    }
    return c->grids[best][0] * c->grids[best][1] + 1;
}

/* InternVL dynamic_preprocess / find_closest_aspect_ratio
 * (OpenGVLab/InternVL internvl_chat/internvl/train/dataset.py): grids i x j
 * with min <= i*j <= max in order of i*j; the closest aspect ratio wins, a
 * tie goes to the larger grid when the image covers half of it. */
static int internvl_tiles(const component *c, double w, double h, int max_tiles)
{
    double aspect = w / h, area = w * h, best_diff = HUGE_VAL;
    int bi = 1, bj = 1;
    for (int prod = c->min_tiles; prod <= max_tiles; prod++)
        for (int i = 1; i <= prod; i++) {
            if (prod % i)
                continue;
            int j = prod / i;
            double diff = fabs(aspect - (double)i / j);
            if (diff < best_diff) {
                best_diff = diff;
                bi = i;
                bj = j;
            } else if (diff == best_diff &&
                       area > 0.5 * (double)(c->tile_px * c->tile_px) * i * j) {
                bi = i;
                bj = j;
            }
        }
    int blocks = bi * bj;
    return blocks + (c->thumbnail && blocks != 1 ? 1 : 0);
}

static int32_t clamp32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

static void draw_sample(const component *c, gsl_rng *r, mm_sample *s)
{
    s->text_tokens = draw_count(&c->text, r);
    if (c->has_images) {
        int64_t n = draw_count(&c->images, r), tiles = 0;
        for (int64_t k = 0; k < n; k++) {
            if (c->tiling == TILING_FIXED) {
                tiles += draw_count(&c->tiles, r);
                continue;
            }
            double w = fmax(1, floor(draw(&c->width, r) + 0.5));
            double h = fmax(1, floor(w * draw(&c->aspect, r) + 0.5));
            if (c->tiling == TILING_ANYRES) {
                tiles += anyres_tiles(c, w, h);
            } else {
                int mt = c->max_tiles;
                if (c->split_max_tiles) /* n_max,i = max(1, n_max / N_image) (2412.05271 Sec. 3.1) */
                    mt = n > 0 && c->max_tiles / n > 1 ? (int)(c->max_tiles / n) : 1;
                tiles += internvl_tiles(c, w, h, mt < c->min_tiles ? c->min_tiles : mt);
            }
        }
        s->images = clamp32(n);
        s->tiles = clamp32(tiles);
    }
    if (c->has_video) {
        double sec = draw(&c->seconds, r);
        double f = ceil(sec * c->fps - 1e-9);
        if (f < c->min_frames)
            f = c->min_frames;
        if (f > c->max_frames)
            f = c->max_frames;
        s->frames = (int32_t)f;
    }
    if (c->has_audio) {
        double a = draw(&c->audio, r);
        s->audio_s = a < 0 ? 0 : a > c->max_audio_s ? c->max_audio_s : a;
    }
}

/* splitmix64 (Steele, Lea, Flood 2014): a well-mixed 64-bit value per
 * (seed, iteration), so each iteration has its own stream. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int mm_mixture_draw(const mm_mixture *mix, uint64_t seed, int64_t iteration, int n, mm_sample *out,
                    mm_err *err)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return mm_err_set(err, MM_EINTERNAL, mix->path, 0, "", "out of memory");
    uint64_t s = splitmix64(seed ^ splitmix64((uint64_t)iteration));
    /* mt19937's seed is 32 bits wide; fold the 64. */
    gsl_rng_set(r, (unsigned long)((s ^ (s >> 32)) & 0xffffffffULL));
    for (int k = 0; k < n; k++) {
        mm_sample *x = &out[k];
        memset(x, 0, sizeof *x);
        x->id = iteration * n + k;
        draw_sample(&mix->comp[gsl_ran_discrete(r, mix->pick)], r, x);
    }
    gsl_rng_free(r);
    return 0;
}

/* The largest value a distribution draws: its max (clamp), the largest
 * discrete value or histogram edge, a fixed value; HUGE_VAL when unbounded. */
static double dist_max(const dist *d)
{
    double x = d->hi;
    if (d->kind == D_FIXED)
        x = fmin(x, d->a);
    else if (d->kind == D_UNIFORM)
        x = fmin(x, d->b);
    else if (d->kind == D_HISTOGRAM && d->pdf)
        x = fmin(x, d->pdf->range[d->pdf->n]);
    else if (d->kind == D_DISCRETE && d->table) {
        double m = -HUGE_VAL;
        for (size_t k = 0; k < d->table->K; k++)
            m = fmax(m, d->values[k]);
        x = fmin(x, m);
    }
    return floor(x + 0.5);
}

double mm_mixture_max_inputs(const mm_mixture *mix)
{
    double mx = 0;
    for (int i = 0; i < mix->n; i++) {
        const component *c = &mix->comp[i];
        double per = 0;
        if (c->has_images) {
            double n = dist_max(&c->images), t = 0;
            if (c->tiling == TILING_FIXED) {
                t = dist_max(&c->tiles);
            } else if (c->tiling == TILING_ANYRES) {
                for (int g = 0; g < c->n_grids; g++)
                    t = fmax(t, (double)(c->grids[g][0] * c->grids[g][1] + 1));
            } else {
                t = (double)c->max_tiles + (c->thumbnail ? 1 : 0);
            }
            per += n * t;
        }
        if (c->has_video)
            per += (double)c->max_frames;
        mx = fmax(mx, per);
    }
    return isfinite(mx) ? mx : -1;
}
