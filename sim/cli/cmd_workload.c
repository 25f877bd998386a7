/* cmd_workload.c - `mmsim workload stats FILE`: counts, means, percentiles
 * and text histograms of LLM sequence length and encoder load for a
 * mixture spec (N samples drawn with a seed) or a trace (replayed from its
 * first sample).  Parsing and printing only; the numbers come from
 * sim/workload.
 * Not for: batching or timing (mmsim run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/mllm.h"
#include "scenario/sim.h"
#include "workload/workload.h"

#define HIST_BINS 20
#define BAR_WIDTH 50
#define DEFAULT_SAMPLES 10000

static int bad_arg(const char *what, const char *arg)
{
    return mm_cli_usage_error("workload", NULL, what, arg);
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!s[0] || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

typedef struct hist {
    int used;
    double edges[HIST_BINS + 1];
    int64_t counts[HIST_BINS];
} hist;

static void make_hist(const mm_sample *s, int64_t n, const mm_token_model *tm, bool llm, hist *h)
{
    double *v = malloc((size_t)n * sizeof *v);
    h->used = 0;
    if (!v)
        return;
    for (int64_t i = 0; i < n; i++)
        v[i] = llm ? (double)mm_sample_llm_tokens(&s[i], tm)
                   : (double)s[i].tiles + s[i].frames + mm_sample_audio_clips(&s[i], tm);
    h->used = mm_value_histogram(v, n, HIST_BINS, h->edges, h->counts);
    free(v);
}

static void print_hist(const char *title, const hist *h, int64_t n)
{
    int64_t mx = 1;
    for (int b = 0; b < h->used; b++)
        if (h->counts[b] > mx)
            mx = h->counts[b];
    printf("\n  %s\n", title);
    for (int b = 0; b < h->used; b++) {
        int bar = (int)((double)h->counts[b] * BAR_WIDTH / (double)mx + 0.5);
        printf("  %9.0f - %-9.0f %8lld %5.1f%% ", h->edges[b], h->edges[b + 1], (long long)h->counts[b],
               100.0 * (double)h->counts[b] / (double)n);
        for (int k = 0; k < bar; k++)
            putchar('#');
        putchar('\n');
    }
}

static void json_summary(const char *key, const mm_value_summary *v, bool comma)
{
    printf("  \"%s\": {\"mean\": %.17g, \"sd\": %.17g, \"min\": %.17g, \"p50\": %.17g, \"p90\": %.17g, "
           "\"p99\": %.17g, \"max\": %.17g}%s\n",
           key, v->mean, v->sd, v->min, v->p50, v->p90, v->p99, v->max, comma ? "," : "");
}

static void json_hist(const char *key, const hist *h, bool comma)
{
    printf("  \"%s\": {\"edges\": [", key);
    for (int b = 0; b <= h->used; b++)
        printf("%s%.17g", b ? ", " : "", h->edges[b]);
    printf("], \"counts\": [");
    for (int b = 0; b < h->used; b++)
        printf("%s%lld", b ? ", " : "", (long long)h->counts[b]);
    printf("]}%s\n", comma ? "," : "");
}


typedef struct stats_opts {
    const char *file, *model;
    int64_t samples, seed, tpt, tpf, max_tokens;
    int json;
} stats_opts;

/* The options (cli.h: completion scripts are made from them too). */
const struct option mm_cli_workload_longopts[] = {
    {"help", no_argument, NULL, 'h'},          {"json", no_argument, NULL, 'J'},
    {"model", required_argument, NULL, 'm'},   {"samples", required_argument, NULL, 'n'},
    {"seed", required_argument, NULL, 's'},    {"tokens-per-tile", required_argument, NULL, 't'},
    {"tokens-per-frame", required_argument, NULL, 'f'}, {"max-tokens", required_argument, NULL, 'x'},
    {NULL, 0, NULL, 0}};
const char mm_cli_workload_shortopts[] = "h";

/* Returns 0, -1 for --help (done), or the exit status 2. */
static int stats_args(int argc, char **argv, stats_opts *o)
{
    int c;
    while ((c = mm_cli_getopt(argc, argv, mm_cli_workload_shortopts, mm_cli_workload_longopts)) != -1) {
        const char *v = optarg, *flag = "";
        int bad = 0;
        switch (c) {
        case 'h': return mm_cli_help("workload") - 1;
        case 'J': o->json = 1; break;
        case 'm': o->model = v; break;
        case 'n': flag = "--samples", bad = parse_i64(v, 1, 100000000, &o->samples); break;
        case 's': flag = "--seed", bad = parse_i64(v, 0, INT64_MAX, &o->seed); break;
        case 't': flag = "--tokens-per-tile", bad = parse_i64(v, 0, 1000000, &o->tpt); break;
        case 'f': flag = "--tokens-per-frame", bad = parse_i64(v, 0, 1000000, &o->tpf); break;
        case 'x': flag = "--max-tokens", bad = parse_i64(v, 0, INT64_MAX, &o->max_tokens); break;
        default: return 2;
        }
        if (bad)
            return bad_arg("bad value for", flag);
    }
    if (mm_cli_operand("workload", argc, argv, "file", &o->file))
        return 2;
    if (!o->file)
        return bad_arg("missing", "FILE");
    return 0;
}

/* Token model: the model's, else InternVL's 256 per 448 px tile and
 * frame (OpenGVLab/InternVL modeling_internvl_chat.py num_image_token)
 * and Qwen2-Audio's 25 per second (arXiv 2407.10759 Sec. 2); then the
 * command line's overrides.  Returns 0 or -code. */
static int token_model(const char *model, int64_t tpt, int64_t tpf, int64_t max_tokens, mm_token_model *tm,
                       char *source, size_t len, mm_err *err)
{
    *tm = (mm_token_model){.tokens_per_tile = 256, .tokens_per_frame = 256, .tokens_per_audio_s = 25,
                           .audio_clip_s = 30};
    snprintf(source, len, "default: 256 per tile and frame (InternVL), 25 per audio second (Qwen2-Audio)");
    if (model) {
        char path[512];
        mm_sim_resolve_path(model, NULL, path, sizeof path);
        mm_model *m = malloc(sizeof *m);
        if (!m)
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        int rc = mm_model_load(path, m, err);
        if (rc) {
            free(m);
            return rc;
        }
        mm_token_model_from_model(m, tm);
        snprintf(source, len, "from %.250s", path);
        free(m);
    }
    if (tpt >= 0)
        tm->tokens_per_tile = tpt;
    if (tpf >= 0)
        tm->tokens_per_frame = tpf;
    tm->max_tokens = max_tokens;
    return 0;
}

/* What `workload stats` prints, in JSON or as text. */
typedef struct stats_report {
    const char *path, *kind;
    int64_t n, trace_n;   /* samples drawn; the trace's rows (-1: a mixture) */
    int64_t seed, max_tokens;
    const mm_token_model *tm;
    const char *tm_source;
    const mm_workload_stats *st;
    const hist *hl, *he;
} stats_report;

static void print_json(const stats_report *r)
{
    printf("{\n  \"file\": ");
    mm_cli_json_string(r->path);
    printf(",\n  \"kind\": \"%s\",\n  \"samples\": %lld,\n", r->kind, (long long)r->n);
    if (r->trace_n >= 0)
        printf("  \"trace_samples\": %lld,\n", (long long)r->trace_n);
    else
        printf("  \"seed\": %lld,\n", (long long)r->seed);
    printf("  \"token_model\": {\"tokens_per_tile\": %lld, \"tokens_per_frame\": %lld, "
           "\"tokens_per_audio_s\": %.17g, \"max_tokens\": %lld, \"source\": ",
           (long long)r->tm->tokens_per_tile, (long long)r->tm->tokens_per_frame, r->tm->tokens_per_audio_s,
           (long long)r->tm->max_tokens);
    mm_cli_json_string(r->tm_source);
    printf("},\n  \"by_modality\": {");
    for (int k = 0; k < MM_MOD_COUNT; k++)
        printf("%s\"%s\": %lld", k ? ", " : "", mm_modality_names[k], (long long)r->st->by_modality[k]);
    printf("},\n  \"truncated\": %lld,\n", (long long)r->st->truncated);
    printf("  \"llm_tokens_total\": %.17g,\n  \"encoder_inputs_total\": %.17g,\n", r->st->llm_tokens_total,
           r->st->encoder_inputs_total);
    json_summary("text_tokens", &r->st->text_tokens, true);
    json_summary("llm_tokens", &r->st->llm_tokens, true);
    json_summary("encoder_inputs", &r->st->encoder_inputs, true);
    json_summary("images", &r->st->images, true);
    json_summary("tiles", &r->st->tiles, true);
    json_summary("frames", &r->st->frames, true);
    json_summary("audio_s", &r->st->audio_s, true);
    json_hist("llm_tokens_histogram", r->hl, true);
    json_hist("encoder_inputs_histogram", r->he, false);
    printf("}\n");
}

static void print_text(const stats_report *r)
{
    printf("workload %s (%s): %lld samples", r->path, r->kind, (long long)r->n);
    if (r->trace_n >= 0)
        printf(" of %lld, in file order\n", (long long)r->trace_n);
    else
        printf(", seed %lld\n", (long long)r->seed);
    printf("  tokens: %lld per tile, %lld per frame, %g per audio second%s (%s)\n",
           (long long)r->tm->tokens_per_tile, (long long)r->tm->tokens_per_frame, r->tm->tokens_per_audio_s,
           r->max_tokens ? ", capped" : "", r->tm_source);
    printf("\n  modality        samples   share\n");
    for (int k = 0; k < MM_MOD_COUNT; k++)
        printf("  %-12s %10lld %6.1f%%\n", mm_modality_names[k], (long long)r->st->by_modality[k],
               100.0 * (double)r->st->by_modality[k] / (double)r->n);
    if (r->max_tokens)
        printf("  truncated at %lld tokens: %lld samples\n", (long long)r->max_tokens, (long long)r->st->truncated);
    printf("\n  %-16s %10s %10s %8s %8s %8s %8s %8s\n", "per sample", "mean", "sd", "min", "p50", "p90",
           "p99", "max");
    const struct { const char *name; const mm_value_summary *v; } rows[] = {
        {"text tokens", &r->st->text_tokens}, {"LLM tokens", &r->st->llm_tokens},
        {"encoder inputs", &r->st->encoder_inputs}, {"images", &r->st->images}, {"tiles", &r->st->tiles},
        {"frames", &r->st->frames}, {"audio seconds", &r->st->audio_s},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        printf("  %-16s %10.2f %10.2f %8.1f %8.1f %8.1f %8.1f %8.1f\n", rows[i].name, rows[i].v->mean,
               rows[i].v->sd, rows[i].v->min, rows[i].v->p50, rows[i].v->p90, rows[i].v->p99, rows[i].v->max);
    printf("  (encoder inputs = tiles + frames + audio clips; percentiles interpolate between order statistics)\n");
    print_hist("LLM sequence length (tokens)", r->hl, r->n);
    print_hist("encoder load (tiles + frames + audio clips)", r->he, r->n);
}

static int stats(int argc, char **argv)
{
    stats_opts o = {.seed = 1, .tpt = -1, .tpf = -1};
    int prc = stats_args(argc, argv, &o);
    if (prc)
        return prc < 0 ? 0 : prc;
    const char *file = o.file, *model = o.model;
    int64_t samples = o.samples, seed = o.seed, tpt = o.tpt, tpf = o.tpf, max_tokens = o.max_tokens;
    bool json = o.json;

    mm_err err;
    mm_err_clear(&err);
    mm_token_model tm;
    char tm_source[300];
    if (token_model(model, tpt, tpf, max_tokens, &tm, tm_source, sizeof tm_source, &err))
        return mm_cli_fail(&err);

    char path[512];
    mm_sim_resolve_path(file, NULL, path, sizeof path);
    mm_workload w;
    if (mm_workload_load(path, &w, &err))
        return mm_cli_fail(&err);
    int64_t n = samples ? samples : w.source == MM_WLS_TRACE ? w.trace.n : DEFAULT_SAMPLES;
    mm_sample *s = malloc((size_t)n * sizeof *s);
    if (!s) {
        mm_workload_free(&w);
        return mm_cli_fail(&(mm_err){.code = MM_EINTERNAL, .msg = "out of memory"});
    }
    int rc = 0;
    if (mm_workload_draw(&w, (uint64_t)seed, 0, (int)n, s, &err)) {
        rc = mm_cli_fail(&err);
        goto out;
    }
    mm_workload_stats st;
    if (mm_workload_stats_compute(s, n, &tm, &st, &err)) {
        rc = mm_cli_fail(&err);
        goto out;
    }
    hist hl, he;
    make_hist(s, n, &tm, true, &hl);
    make_hist(s, n, &tm, false, &he);
    const stats_report r = {.path = path, .kind = w.source == MM_WLS_TRACE ? "trace" : "mixture", .n = n,
                            .trace_n = w.source == MM_WLS_TRACE ? w.trace.n : -1, .seed = seed, .tm = &tm,
                            .tm_source = tm_source, .max_tokens = max_tokens, .st = &st, .hl = &hl, .he = &he};
    if (json)
        print_json(&r);
    else
        print_text(&r);
out:
    free(s);
    mm_workload_free(&w);
    return rc;
}

int mm_cli_workload(int argc, char **argv)
{
    /* argv[0] is "workload", argv[1] the subcommand */
    if (argc < 2)
        return bad_arg("missing subcommand; expected", "stats");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return mm_cli_help("workload");
    if (!strcmp(argv[1], "stats"))
        return stats(argc - 1, argv + 1);
    return bad_arg("unknown workload subcommand", argv[1]);
}
