/* wlreport.c - what `mmsim workload stats` reports of a mixture or a
 * trace: the token model, the samples drawn, their summary statistics and
 * the histograms of LLM sequence length and encoder load; and its JSON,
 * which the command line prints and the C API (mmsim_workload_stats_json)
 * returns: one source for each number.
 * Not for: the text table (cli/cmd_workload.c prints it from the report). */
#include "api/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SAMPLES 10000

static void make_hist(const mm_sample *s, int64_t n, const mm_token_model *tm, bool llm, mm_wl_hist *h)
{
    double *v = malloc((size_t)n * sizeof *v);
    h->used = 0;
    if (!v)
        return;
    for (int64_t i = 0; i < n; i++)
        v[i] = llm ? (double)mm_sample_llm_tokens(&s[i], tm)
                   : (double)s[i].tiles + s[i].frames + mm_sample_audio_clips(&s[i], tm);
    h->used = mm_value_histogram(v, n, MM_WL_HIST_BINS, h->edges, h->counts);
    free(v);
}

/* Token model: the model's, else InternVL's 256 per 448 px tile and
 * frame (OpenGVLab/InternVL modeling_internvl_chat.py num_image_token)
 * and Qwen2-Audio's 25 per second (arXiv 2407.10759 Sec. 2); then the
 * caller's overrides (>= 0).  Returns 0 or -code. */
static int token_model(const mm_wl_report_opts *o, mm_wl_report *r, mm_err *err)
{
    mm_token_model *tm = &r->tm;
    *tm = (mm_token_model){.tokens_per_tile = 256, .tokens_per_frame = 256, .tokens_per_audio_s = 25,
                           .audio_clip_s = 30};
    snprintf(r->tm_source, sizeof r->tm_source,
             "default: 256 per tile and frame (InternVL), 25 per audio second (Qwen2-Audio)");
    if (o->model) {
        char path[512];
        mm_sim_resolve_path(o->model, NULL, path, sizeof path);
        mm_model *m = malloc(sizeof *m);
        if (!m)
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        int rc = mm_model_load(path, m, err);
        if (rc) {
            free(m);
            return rc;
        }
        mm_token_model_from_model(m, tm);
        snprintf(r->tm_source, sizeof r->tm_source, "from %.250s", path);
        free(m);
    }
    if (o->tokens_per_tile >= 0)
        tm->tokens_per_tile = o->tokens_per_tile;
    if (o->tokens_per_frame >= 0)
        tm->tokens_per_frame = o->tokens_per_frame;
    tm->max_tokens = o->max_tokens;
    return 0;
}

int mm_wl_report_make(const mm_wl_report_opts *o, mm_wl_report *r, mm_err *err)
{
    memset(r, 0, sizeof *r);
    if (!o->file || o->samples < 0 || o->samples > 100000000 || o->seed < 0 || o->max_tokens < 0)
        return mm_err_set(err, MM_EINPUT, "<api>", 0, !o->file ? "file" : o->samples < 0 || o->samples > 100000000
                                                                             ? "samples"
                                                                         : o->seed < 0 ? "seed"
                                                                                       : "max_tokens",
                          "needs a workload file, 0 <= samples <= 100000000, seed >= 0, max_tokens >= 0");
    int rc = token_model(o, r, err);
    if (rc)
        return rc;
    mm_sim_resolve_path(o->file, NULL, r->path, sizeof r->path);
    mm_workload w;
    if ((rc = mm_workload_load(r->path, &w, err)))
        return rc;
    bool trace = w.source == MM_WLS_TRACE;
    r->n = o->samples ? o->samples : trace ? w.trace.n : DEFAULT_SAMPLES;
    r->kind = trace ? "trace" : "mixture";
    r->trace_n = trace ? w.trace.n : -1;
    r->seed = o->seed;
    r->max_tokens = o->max_tokens;
    mm_sample *s = malloc((size_t)(r->n ? r->n : 1) * sizeof *s);
    if (!s) {
        mm_workload_free(&w);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    if (!(rc = mm_workload_draw(&w, (uint64_t)o->seed, 0, (int)r->n, s, err)) &&
        !(rc = mm_workload_stats_compute(s, r->n, &r->tm, &r->st, err))) {
        make_hist(s, r->n, &r->tm, true, &r->hl);
        make_hist(s, r->n, &r->tm, false, &r->he);
    }
    free(s);
    mm_workload_free(&w);
    return rc;
}

static void json_summary(FILE *f, const char *key, const mm_value_summary *v, bool comma)
{
    fprintf(f, "  \"%s\": {\"mean\": %.17g, \"sd\": %.17g, \"min\": %.17g, \"p50\": %.17g, \"p90\": %.17g, "
               "\"p99\": %.17g, \"max\": %.17g}%s\n",
            key, v->mean, v->sd, v->min, v->p50, v->p90, v->p99, v->max, comma ? "," : "");
}

static void json_hist(FILE *f, const char *key, const mm_wl_hist *h, bool comma)
{
    fprintf(f, "  \"%s\": {\"edges\": [", key);
    for (int b = 0; b <= h->used; b++)
        fprintf(f, "%s%.17g", b ? ", " : "", h->edges[b]);
    fprintf(f, "], \"counts\": [");
    for (int b = 0; b < h->used; b++)
        fprintf(f, "%s%lld", b ? ", " : "", (long long)h->counts[b]);
    fprintf(f, "]}%s\n", comma ? "," : "");
}

void mm_report_workload_json(FILE *f, const mm_wl_report *r)
{
    fprintf(f, "{\n  \"file\": ");
    mm_json_string(f, r->path);
    fprintf(f, ",\n  \"kind\": \"%s\",\n  \"samples\": %lld,\n", r->kind, (long long)r->n);
    if (r->trace_n >= 0)
        fprintf(f, "  \"trace_samples\": %lld,\n", (long long)r->trace_n);
    else
        fprintf(f, "  \"seed\": %lld,\n", (long long)r->seed);
    fprintf(f, "  \"token_model\": {\"tokens_per_tile\": %lld, \"tokens_per_frame\": %lld, "
               "\"tokens_per_audio_s\": %.17g, \"max_tokens\": %lld, \"source\": ",
            (long long)r->tm.tokens_per_tile, (long long)r->tm.tokens_per_frame, r->tm.tokens_per_audio_s,
            (long long)r->tm.max_tokens);
    mm_json_string(f, r->tm_source);
    fprintf(f, "},\n  \"by_modality\": {");
    for (int k = 0; k < MM_MOD_COUNT; k++)
        fprintf(f, "%s\"%s\": %lld", k ? ", " : "", mm_modality_names[k], (long long)r->st.by_modality[k]);
    fprintf(f, "},\n  \"truncated\": %lld,\n", (long long)r->st.truncated);
    fprintf(f, "  \"llm_tokens_total\": %.17g,\n  \"encoder_inputs_total\": %.17g,\n", r->st.llm_tokens_total,
            r->st.encoder_inputs_total);
    json_summary(f, "text_tokens", &r->st.text_tokens, true);
    json_summary(f, "llm_tokens", &r->st.llm_tokens, true);
    json_summary(f, "encoder_inputs", &r->st.encoder_inputs, true);
    json_summary(f, "images", &r->st.images, true);
    json_summary(f, "tiles", &r->st.tiles, true);
    json_summary(f, "frames", &r->st.frames, true);
    json_summary(f, "audio_s", &r->st.audio_s, true);
    json_hist(f, "llm_tokens_histogram", &r->hl, true);
    json_hist(f, "encoder_inputs_histogram", &r->he, false);
    fprintf(f, "}\n");
}
