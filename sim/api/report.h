/* report.h - the JSON (and the figures behind it) that `mmsim run --json`,
 * `mmsim plan --json`, `mmsim model --json`, `mmsim collective --json` and
 * `mmsim workload stats --json` print, written to any FILE:
 * the CLI passes stdout, the C API (api.c) a memory stream, so the command
 * line and the library give one source for each number.
 * Internal to libmmsim (not installed): the embedding API is mmsim.h.
 * Not for: the human-readable tables (the CLI prints those). */
#ifndef MM_API_REPORT_H
#define MM_API_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/memory.h"
#include "model/mllm.h"
#include "plan/planner.h"
#include "cost/costs.h"
#include "hw/coll_sweep.h"
#include "workload/workload.h"
#include "exec/metrics.h"
#include "scenario/scenario.h"
#include "scenario/sim.h"

/* A JSON string literal (quotes and escapes). */
void mm_json_string(FILE *f, const char *s);

/* The object `mmsim run --json` prints.  run_id > 0 adds "db" and
 * "run_id" (the run was stored). */
void mm_report_run_json(FILE *f, const mm_sim *sim, const mm_metrics *m, int64_t run_id, const char *db);

/* The object `mmsim plan --json` prints; db may be NULL; all: every
 * candidate, pruned ones with their reason. */
void mm_report_plan_json(FILE *f, const mm_plan *p, const char *db, bool all);

/* Pruning reasons by kind (the key a reason names, "memory (OOM)" or
 * "other"), most frequent first; returns how many (at most cap). */
typedef struct mm_reason_count {
    char kind[64];
    size_t n;
} mm_reason_count;
int mm_plan_count_reasons(const mm_plan *p, mm_reason_count *rc, int cap);

/* Simulated time of the next simulated candidate over candidate i's, - 1
 * (NAN when either was not simulated). */
double mm_plan_margin(const mm_plan *p, size_t i);

/* What `mmsim model` reports: the model alone (parameters, forward FLOPs
 * at seq tokens and `images` images per sample), then the layout as
 * `mmsim run` with the same overrides prepares it, and the cost bridge's
 * per-stage times and memory for it. */
typedef struct mm_model_report {
    mm_model *model;         /* loaded (owned) */
    mm_scenario *sc;         /* the scenario with model= and seq (owned) */
    char path[512];          /* resolved model file */
    char model_set[600], seq_set[64];
    long long seq, images;
    double llm_fwd_per_token, llm_fwd_per_sample, vision_fwd_per_tile, vision_fwd_per_sample;
    double proj_fwd_per_sample, audio_fwd_per_clip, sample_fwd;
    int tiles;
    int64_t image_tokens;
    /* A Qwen2-VL-style tower (native resolution): LLM tokens per image at
     * the processor's default min/max pixels (native_min/max_tokens, 0 for
     * other models); with mm_model_report_native_image, one H x W image's
     * resized sides, patches and tokens (workload/native.c). */
    int64_t native_min_tokens, native_max_tokens;
    int64_t native_h, native_w, native_rh, native_rw, native_patches, native_tokens;
    mm_sim *sim;             /* the prepared layout (owned); NULL: none to report, note says why */
    mm_sim_costs costs;
    mm_sim_memory mem;
    char note[1200];         /* why no layout: no LLM, or `mmsim run`'s refusal */
} mm_model_report;

/* Loads the model file (resolved like a scenario's paths) and reports it
 * under the scenario `scenario` (a file, or with scenario_text non-NULL the
 * name of that YAML text; NULL and NULL: the built-in default) with the
 * overrides, then model=MODEL and, when seq > 0, train.seq_len=seq, as
 * `mmsim model` does.  Free r with mm_model_report_free, also after an
 * error.  Returns 0 or -code. */
int mm_model_report_make(const char *scenario, const char *scenario_text, const char *model_path,
                         const char *const *sets, int n_sets, long long seq, long long images, mm_model_report *r,
                         mm_err *err);
void mm_model_report_free(mm_model_report *r);
/* Fills r's native_* fields for one h x w image (pixels) as the model's
 * processor resizes it (Qwen2VLImageProcessor defaults).  MM_EINPUT (key
 * "--image") for a model without a Qwen2-VL-style merger or an image the
 * processor refuses. */
int mm_model_report_native_image(mm_model_report *r, int64_t h, int64_t w, mm_err *err);

/* The object `mmsim model --json` prints. */
void mm_report_model_json(FILE *f, const mm_model_report *r);

/* The JSON `mmsim collective --json` (and -J FILE) prints: nccl-tests'
 * file version 3 with mmsim's own "mmsim" object and an "algo" per row;
 * begin, one call per row of the sweep (hw/coll_sweep.h), end.  args[0] is
 * written as "mmsim collective"; warmup, check and blocking are echoed
 * (a simulation has no use for them). */
typedef struct mm_coll_json_info {
    const char *const *args;
    int n_args;
    int warmup, check, blocking;
} mm_coll_json_info;
void mm_report_coll_json_begin(FILE *f, const mm_coll_json_info *ji, const mm_coll_sweep_req *q,
                               const mm_cluster *c, const int *g);
void mm_report_coll_json_row(FILE *f, const mm_coll_row *r, int iters, bool first);
void mm_report_coll_json_end(FILE *f, double avg_bus);

/* What `mmsim workload stats FILE` reports (wlreport.c).  samples 0: the
 * trace's rows, or 10000 draws of a mixture; tokens_per_tile and
 * tokens_per_frame < 0: the model's (or InternVL's 256); model NULL: the
 * default token model; max_tokens 0: no cap. */
typedef struct mm_wl_report_opts {
    const char *file, *model;
    int64_t samples, seed, tokens_per_tile, tokens_per_frame, max_tokens;
} mm_wl_report_opts;

#define MM_WL_HIST_BINS 20
typedef struct mm_wl_hist {
    int used;
    double edges[MM_WL_HIST_BINS + 1];
    int64_t counts[MM_WL_HIST_BINS];
} mm_wl_hist;

typedef struct mm_wl_report {
    char path[512];             /* the resolved file */
    const char *kind;           /* "trace" or "mixture" */
    int64_t n, trace_n;         /* samples drawn; the trace's rows (-1: a mixture) */
    int64_t seed, max_tokens;
    mm_token_model tm;
    char tm_source[300];        /* where the token model came from */
    mm_workload_stats st;
    mm_wl_hist hl, he;          /* LLM tokens; encoder inputs (tiles + frames + clips) */
} mm_wl_report;

/* Draws (or replays) the samples and summarises them.  Returns 0 or -code. */
int mm_wl_report_make(const mm_wl_report_opts *o, mm_wl_report *r, mm_err *err);

/* The object `mmsim workload stats --json` prints. */
void mm_report_workload_json(FILE *f, const mm_wl_report *r);


#endif
