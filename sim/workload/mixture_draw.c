/* mixture_draw.c - sampling from a loaded mixture spec: one iteration's
 * samples from a random stream derived from (seed, iteration), with the
 * published tiling rules (anyres: LLaVA-NeXT select_best_resolution;
 * internvl: InternVL dynamic_preprocess; see mixture.c's opening comment
 * for the known limits), and the largest input count a spec can draw.
 * Not for: reading or validating specs (mixture.c), traces (trace.c),
 * token counts (workload.c), batching. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <gsl/gsl_histogram.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "workload/mixture_internal.h"
#include "workload/workload.h"

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

/* The accounting tiles a native-resolution image counts as: its resized
 * area (mm_native_resize) over tile^2, rounded up to whole tiles.  The
 * image is drawn as an area and an aspect ratio, its sides rounded to
 * pixels, at least 10 and within the processor's 200:1. */
static int64_t native_tile_count(const component *c, int64_t h, int64_t w)
{
    int64_t rh = 0, rw = 0;
    if (mm_native_resize(h, w, c->patch * c->merge, c->min_pixels, c->max_pixels, &rh, &rw))
        return 1; /* not reached: the sides are kept within what the processor takes */
    int64_t t2 = c->tile_px * c->tile_px;
    return (rh * rw + t2 - 1) / t2;
}

static int64_t native_tiles(const component *c, gsl_rng *r)
{
    double px = draw(&c->megapixels, r) * 1e6, a = draw(&c->aspect, r);
    double w = fmax(10, floor(sqrt(px / a) + 0.5));
    double h = fmax(10, floor(w * a + 0.5));
    if (h > 200 * w)
        h = 200 * w;
    if (w > 200 * h)
        w = 200 * h;
    return native_tile_count(c, (int64_t)h, (int64_t)w);
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
            if (c->tiling == TILING_NATIVE) {
                tiles += native_tiles(c, r);
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
            } else if (c->tiling == TILING_NATIVE) {
                /* the floor path stays within max_pixels (a side clamped
                 * up to one factor: f * sqrt(200 max_pixels)); the ceil
                 * path adds at most a factor to each side of an area of
                 * min_pixels whose sides differ at most 200-fold */
                double f = (double)(c->patch * c->merge), t2 = (double)(c->tile_px * c->tile_px);
                double mnp = (double)c->min_pixels, mxp = (double)c->max_pixels;
                double top = fmax(mxp, f * sqrt(200 * mxp));
                top = fmax(top, mnp + f * sqrt(mnp) * (sqrt(200.0) + 1 / sqrt(200.0)) + f * f);
                t = ceil(top / t2);
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
