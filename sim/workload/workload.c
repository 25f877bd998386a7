/* workload.c - what a sample costs in tokens under a token model, the
 * workload source that hides whether samples come from a mixture, a trace
 * or a fixed shape, and summary statistics (means, percentiles,
 * histograms) of a set of samples.
 * Not for: drawing (mixture.c), reading traces (trace.c), batching. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "workload/workload.h"

/* Qwen2-Audio: the encoder's positions are average-pooled by 2 before the
 * LLM (AvgPool1d(2,2), arXiv 2407.10759 Sec. 2): 1500 per 30 s -> 25/s. */
#define AUDIO_POOL 2.0
/* Whisper pads every clip to a 30 s window (3000 mel frames at 100/s;
 * transformers models/qwen2_audio/modeling_qwen2_audio.py @ 01ae98a). */
#define AUDIO_WINDOW_S 30.0

mm_modality mm_sample_modality(const mm_sample *s)
{
    if (s->audio_s > 0)
        return MM_MOD_AUDIO;
    if (s->frames > 0)
        return MM_MOD_VIDEO;
    if (s->images > 1)
        return MM_MOD_MULTI_IMAGE;
    if (s->images > 0 || s->tiles > 0)
        return MM_MOD_IMAGE;
    return MM_MOD_TEXT;
}

void mm_token_model_from_model(const mm_model *m, mm_token_model *tm)
{
    memset(tm, 0, sizeof *tm);
    tm->tokens_per_tile = mm_model_tokens_per_tile(m);
    tm->tokens_per_frame = mm_model_tokens_per_frame(m); /* pooled / merged as the model does */
    tm->tiles_per_image_cap = mm_model_tiles_cap(m);
    tm->audio_clip_s = AUDIO_WINDOW_S;
    if (m->has_audio && m->audio.frames > 0)
        tm->tokens_per_audio_s = (double)m->audio.frames / AUDIO_WINDOW_S / AUDIO_POOL;
}

int64_t mm_sample_audio_tokens(const mm_sample *s, const mm_token_model *tm)
{
    return s->audio_s > 0 ? (int64_t)floor(s->audio_s * tm->tokens_per_audio_s) : 0;
}

int32_t mm_sample_audio_clips(const mm_sample *s, const mm_token_model *tm)
{
    double win = tm->audio_clip_s > 0 ? tm->audio_clip_s : AUDIO_WINDOW_S;
    return s->audio_s > 0 ? (int32_t)ceil(s->audio_s / win - 1e-12) : 0;
}

int64_t mm_sample_mm_tokens(const mm_sample *s, const mm_token_model *tm)
{
    /* anyres_max_N: no image reaches the LLM with more than N + 1 tiles'
     * tokens (the encoder still sees every tile) */
    int64_t tiles = s->tiles;
    if (tm->tiles_per_image_cap > 0 && s->images > 0 && tiles > (int64_t)s->images * tm->tiles_per_image_cap)
        tiles = (int64_t)s->images * tm->tiles_per_image_cap;
    return tiles * tm->tokens_per_tile + (int64_t)s->frames * tm->tokens_per_frame + mm_sample_audio_tokens(s, tm);
}

int64_t mm_sample_llm_tokens(const mm_sample *s, const mm_token_model *tm)
{
    int64_t n = s->text_tokens + mm_sample_mm_tokens(s, tm);
    return tm->max_tokens > 0 && n > tm->max_tokens ? tm->max_tokens : n;
}

/* ---- workload sources ----------------------------------------------- */

int mm_workload_load(const char *path, mm_workload *w, mm_err *err)
{
    memset(w, 0, sizeof *w);
    size_t n = strlen(path);
    if (n >= 4 && !strcmp(path + n - 4, ".csv")) {
        w->source = MM_WLS_TRACE;
        return mm_sample_trace_load(path, &w->trace, err);
    }
    w->source = MM_WLS_MIXTURE;
    return mm_mixture_load(path, &w->mixture, err);
}

void mm_workload_init_fixed(mm_workload *w, const mm_sample *s)
{
    memset(w, 0, sizeof *w);
    w->source = MM_WLS_FIXED;
    w->fixed = *s;
}

int mm_workload_draw(const mm_workload *w, uint64_t seed, int64_t iteration, int n, mm_sample *out,
                     mm_err *err)
{
    switch (w->source) {
    case MM_WLS_MIXTURE:
        return mm_mixture_draw(w->mixture, seed, iteration, n, out, err);
    case MM_WLS_TRACE:
        mm_sample_trace_draw(&w->trace, iteration, n, out);
        return 0;
    case MM_WLS_FIXED:
        for (int k = 0; k < n; k++) {
            out[k] = w->fixed;
            out[k].id = iteration * n + k;
        }
        return 0;
    }
    return mm_err_set(err, MM_EINTERNAL, "", 0, "workload", "unknown workload source");
}

void mm_workload_free(mm_workload *w)
{
    if (w->source == MM_WLS_MIXTURE)
        mm_mixture_free(w->mixture);
    else if (w->source == MM_WLS_TRACE)
        mm_sample_trace_free(&w->trace);
    memset(w, 0, sizeof *w);
}

/* ---- statistics -------------------------------------------------------- */

/* Sorts v in place and summarizes it. */
static void summarize(double *v, int64_t n, mm_value_summary *out)
{
    gsl_sort(v, 1, (size_t)n);
    out->mean = gsl_stats_mean(v, 1, (size_t)n);
    out->sd = n > 1 ? gsl_stats_sd_m(v, 1, (size_t)n, out->mean) : 0;
    out->min = v[0];
    out->max = v[n - 1];
    out->p50 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.50);
    out->p90 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.90);
    out->p99 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.99);
}

int mm_workload_stats_compute(const mm_sample *s, int64_t n, const mm_token_model *tm,
                              mm_workload_stats *st, mm_err *err)
{
    memset(st, 0, sizeof *st);
    if (n <= 0)
        return mm_err_set(err, MM_EINPUT, "", 0, "samples", "no samples");
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    st->samples = n;
    for (int64_t i = 0; i < n; i++) {
        st->by_modality[mm_sample_modality(&s[i])]++;
        int64_t raw = s[i].text_tokens + mm_sample_mm_tokens(&s[i], tm);
        st->truncated += tm->max_tokens > 0 && raw > tm->max_tokens;
    }
    mm_value_summary *dst[] = {&st->text_tokens, &st->llm_tokens, &st->encoder_inputs, &st->images,
                               &st->tiles, &st->frames, &st->audio_s};
    for (int f = 0; f < 7; f++) {
        double total = 0;
        for (int64_t i = 0; i < n; i++) {
            const mm_sample *x = &s[i];
            double val = 0;
            switch (f) {
            case 0: val = (double)x->text_tokens; break;
            case 1: val = (double)mm_sample_llm_tokens(x, tm); break;
            case 2: val = (double)x->tiles + x->frames + mm_sample_audio_clips(x, tm); break;
            case 3: val = x->images; break;
            case 4: val = x->tiles; break;
            case 5: val = x->frames; break;
            default: val = x->audio_s; break;
            }
            v[i] = val;
            total += val;
        }
        if (f == 1)
            st->llm_tokens_total = total;
        if (f == 2)
            st->encoder_inputs_total = total;
        summarize(v, n, dst[f]);
    }
    free(v);
    return 0;
}

/* The round width (1, 2 or 5 x 10^k) at or above w. */
static double round_width(double w)
{
    if (!(w > 0))
        return 1;
    double p = pow(10, floor(log10(w)));
    double steps[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (steps[i] * p >= w * (1 - 1e-12))
            return steps[i] * p;
    return 10 * p;
}

int mm_value_histogram(const double *v, int64_t n, int bins, double *edges, int64_t *counts)
{
    if (n <= 0 || bins < 1)
        return 0;
    double lo = v[0], hi = v[0];
    for (int64_t i = 1; i < n; i++) {
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
    }
    double w = round_width((hi - lo) / bins);
    if (w < 1 && lo == floor(lo) && hi == floor(hi))
        w = 1; /* integer data: no bins narrower than 1 */
    lo = floor(lo / w) * w;
    int used = (int)ceil((hi - lo) / w + 1e-9);
    if (hi >= lo + used * w)
        used++;
    if (used > bins) { /* rounding outward can need one more bin: widen */
        w = round_width(w * 1.0000001);
        lo = floor(v[0] / w) * w;
        for (int64_t i = 1; i < n; i++)
            lo = fmin(lo, floor(v[i] / w) * w);
        used = (int)ceil((hi - lo) / w + 1e-9);
        if (hi >= lo + used * w)
            used++;
        if (used > bins)
            used = bins;
    }
    if (used < 1)
        used = 1;
    for (int b = 0; b <= used; b++)
        edges[b] = lo + b * w;
    memset(counts, 0, (size_t)used * sizeof *counts);
    for (int64_t i = 0; i < n; i++) {
        int b = (int)floor((v[i] - lo) / w);
        counts[b < 0 ? 0 : b >= used ? used - 1 : b]++;
    }
    return used;
}

double mm_workload_max_inputs(const mm_workload *w)
{
    switch (w->source) {
    case MM_WLS_MIXTURE:
        return mm_mixture_max_inputs(w->mixture);
    case MM_WLS_TRACE: {
        double mx = 0;
        for (int64_t i = 0; i < w->trace.n; i++)
            mx = fmax(mx, (double)w->trace.samples[i].tiles + w->trace.samples[i].frames);
        return mx;
    }
    default:
        return (double)w->fixed.tiles + w->fixed.frames;
    }
}
