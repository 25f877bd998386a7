/* sim_internal.h - what the files of the scenario-to-metrics path
 * (load.c, layout.c, costs.c, batchcost.c, iterate.c, estimate.c) share:
 * the cost bridge's functions and a workload file's per-iteration costs.
 * Private to sim/run: not installed, not for callers outside this layer
 * (they use run/sim.h). */
#ifndef MM_SIM_INTERNAL_H
#define MM_SIM_INTERNAL_H

#include "parallel/build.h"
#include "run/costs.h"
#include "run/sim.h"
#include "workload/batch.h"

/* load.c: the samples' shape (LLM tokens per sample) and the encoders
 * with work; loads a workload file. */
int mm_sim_check_workload(mm_sim *sim, mm_err *err);

/* costs.c: one encoder's work on one micro-batch of `inputs` tiles or
 * clips; _split hands the projector's work to *projc when it runs on the
 * LLM (parallel.projector: llm).  Return 0 or -1. */
int mm_sim_enc_mb_cost(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                       double *wgrad_params);
int mm_sim_enc_mb_cost_split(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                             double *wgrad_params, mm_enc_mb_cost *projc);

/* costs.c: one LLM micro-batch of T tokens in n sequences (sum of squared
 * lengths S) on every virtual stage, out[v * stride].  Returns 0 or -1. */
int mm_sim_llm_bin_cost(const mm_sim *sim, const mm_stage_cost *st, int V, double T, double S, double n,
                        mm_mb_cost *out, size_t stride);

/* costs.c: mm_sim_stage_memory into mt (stages[].memory_gib, modules[],
 * peak_memory_gib; mt->stages allocated for pp stages).  Returns 1 when
 * some GPU does not fit, 0 when all fit, -code on error. */
int mm_sim_metrics_memory(const mm_sim *sim, mm_metrics *mt, mm_err *err);

/* batchcost.c: one iteration of a workload file, drawn and batched; the
 * arrays are reused across iterations and freed by wl_iter_free. */
typedef struct wl_iter {
    mm_sample *samples;
    mm_mb_cost *mb;           /* V x dp x m */
    mm_enc_mb_cost *enc;      /* dp x m (the vision encoder) */
    double tokens;            /* LLM tokens trained this iteration */
    double load_max, load_mean; /* per-DP-rank LLM work (seconds) */
} wl_iter;

int mm_sim_iteration_costs(const mm_sim *sim, mm_build_spec *spec, const mm_stage_cost *st, int it, wl_iter *w,
                           mm_err *err);
void mm_sim_wl_iter_free(wl_iter *w);

#endif
