/* cmd_workload.c - `mmsim workload stats FILE`: counts, means, percentiles
 * and text histograms of LLM sequence length and encoder load for a
 * mixture spec (N samples drawn with a seed) or a trace (replayed from its
 * first sample).  Parsing and printing only; the numbers come from
 * api/wlreport.c (mm_wl_report_make, also the C API's
 * mmsim_workload_stats_json) over sim/workload.
 * Not for: batching or timing (mmsim run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/report.h"
#include "cli/cli.h"
#include "workload/workload.h"

#define BAR_WIDTH 50

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

static void print_hist(const char *title, const mm_wl_hist *h, int64_t n)
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

static void print_text(const mm_wl_report *r)
{
    printf("workload %s (%s): %lld samples", r->path, r->kind, (long long)r->n);
    if (r->trace_n >= 0)
        printf(" of %lld, in file order\n", (long long)r->trace_n);
    else
        printf(", seed %lld\n", (long long)r->seed);
    printf("  tokens: %lld per tile, %lld per frame, %g per audio second%s (%s)\n",
           (long long)r->tm.tokens_per_tile, (long long)r->tm.tokens_per_frame, r->tm.tokens_per_audio_s,
           r->max_tokens ? ", capped" : "", r->tm_source);
    printf("\n  modality        samples   share\n");
    for (int k = 0; k < MM_MOD_COUNT; k++)
        printf("  %-12s %10lld %6.1f%%\n", mm_modality_names[k], (long long)r->st.by_modality[k],
               100.0 * (double)r->st.by_modality[k] / (double)r->n);
    if (r->max_tokens)
        printf("  truncated at %lld tokens: %lld samples\n", (long long)r->max_tokens, (long long)r->st.truncated);
    printf("\n  %-16s %10s %10s %8s %8s %8s %8s %8s\n", "per sample", "mean", "sd", "min", "p50", "p90",
           "p99", "max");
    const struct { const char *name; const mm_value_summary *v; } rows[] = {
        {"text tokens", &r->st.text_tokens}, {"LLM tokens", &r->st.llm_tokens},
        {"encoder inputs", &r->st.encoder_inputs}, {"images", &r->st.images}, {"tiles", &r->st.tiles},
        {"frames", &r->st.frames}, {"audio seconds", &r->st.audio_s},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        printf("  %-16s %10.2f %10.2f %8.1f %8.1f %8.1f %8.1f %8.1f\n", rows[i].name, rows[i].v->mean,
               rows[i].v->sd, rows[i].v->min, rows[i].v->p50, rows[i].v->p90, rows[i].v->p99, rows[i].v->max);
    printf("  (encoder inputs = tiles + frames + audio clips; percentiles interpolate between order statistics)\n");
    print_hist("LLM sequence length (tokens)", &r->hl, r->n);
    print_hist("encoder load (tiles + frames + audio clips)", &r->he, r->n);
}

static int stats(int argc, char **argv)
{
    stats_opts o = {.seed = 1, .tpt = -1, .tpf = -1};
    int prc = stats_args(argc, argv, &o);
    if (prc)
        return prc < 0 ? 0 : prc;
    mm_err err;
    mm_err_clear(&err);
    const mm_wl_report_opts ro = {.file = o.file, .model = o.model, .samples = o.samples, .seed = o.seed,
                                  .tokens_per_tile = o.tpt, .tokens_per_frame = o.tpf, .max_tokens = o.max_tokens};
    static mm_wl_report r;
    if (mm_wl_report_make(&ro, &r, &err))
        return mm_cli_fail(&err);
    if (o.json)
        mm_report_workload_json(stdout, &r);
    else
        print_text(&r);
    return 0;
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
