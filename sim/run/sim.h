/* sim.h - one scenario, end to end: load what it names (load.c), check the
 * layout against the cluster and the model (layout.c), build and execute
 * each iteration and measure it (iterate.c), or estimate it analytically
 * (estimate.c).  The single path `mmsim run`, `mmsim model`, the planner,
 * sweeps and the tests go through; the per-stage costs and memory they
 * all use are the cost bridge's (run/costs.h).
 * Not for: printing, storing (the store layer writes what this returns). */
#ifndef MM_SIM_H
#define MM_SIM_H

#include <stdio.h>

#include "engine/engine.h"
#include "hw/cluster.h"
#include "model/llm.h"
#include "model/framework.h"
#include "run/fwcost.h"
#include "model/mllm.h"
#include "workload/batch.h"
#include "workload/workload.h"
#include "parallel/graph.h"
#include "run/metrics.h"
#include "scenario/scenario.h"

/* Everything a scenario resolves to, kept for the caller (store, trace). */
/* An encoder of a multimodal model as the scenario runs it. */
typedef struct mm_sim_encoder {
    const mm_encoder *enc;
    const mm_projector *proj;
    const char *name;        /* "vision" | "audio": scenario keys and traces */
    mm_module_layout layout; /* parallel.vision / parallel.audio (defaults filled) */
    bool frozen_tower, frozen_proj;
    double inputs_per_sample; /* tiles (vision) or 30-s clips (audio) */
    double tokens_per_input;  /* LLM tokens one tile or clip becomes */
    double max_inputs;        /* workload file: its largest sample's inputs, for
                                 the early memory bound (0: inputs_per_sample) */
} mm_sim_encoder;

typedef struct mm_sim {
    mm_scenario sc;
    mm_llm llm;
    mm_model model;          /* the whole model; llm is its decoder */
    mm_cluster cluster;
    char model_path[512];    /* resolved paths */
    char topology_path[512];
    int micro_batches;       /* per DP replica */
    double seq;              /* LLM tokens per sample (text + visual) */
    int n_enc;               /* encoders with work in this workload */
    bool llm_frozen;         /* train.frozen names llm: the LLM runs forward and
                                its input-gradient pass (a trainable module
                                lies upstream), no weight gradients */
    mm_sim_encoder enc[2];
    /* A mixture or trace workload (workload: FILE): samples differ, so each
     * iteration draws its global batch and forms micro-batches with the
     * scenario's batching policy; NULL for text and fixed workloads. */
    mm_workload *wl;
    mm_token_model tm;
    char workload_path[512];
    /* train.framework's profile, the attention kernel the LLM runs
     * (train.attention, or the profile's choice for this GPU) and the
     * padding of its sequences (train.padding, or the profile's default) */
    mm_framework fw;
    char framework_path[512];
    mm_attn_impl attn;
    mm_padding padding;
    /* Optional, set by the caller after mm_sim_prepare (which clears it):
     * called after each simulated iteration, so that a long run can show
     * its progress (mmsim run draws it on a terminal).  NULL: none. */
    void (*progress)(int done, int total, void *ctx);
    void *progress_ctx;
    /* Set by the caller after mm_sim_prepare: simulate every DP replica even
     * where they are identical (run/symmetry.h); for checking the collapse. */
    bool no_symmetry;
    /* Set by the caller: mm_sim_run measures only what a ranking reads
     * (iteration time and throughput, FLOPs and MFU, bubble, per-stage
     * times, memory); the critical path, exposed communication and
     * per-module compute time are left out (empty, NaN, 0).  The planner's
     * in-process rescoring sets it; every number it keeps is the same. */
    bool headline_only;
} mm_sim;

/* Frees what mm_sim_load / mm_sim_prepare allocated (the workload and the
 * cluster's kernel tables; a failed load or prepare has freed them
 * already); the struct itself is the caller's.  Safe on a zeroed or
 * already freed mm_sim.
 * mm_sim_prepare overwrites *sim without freeing: free a prepared one
 * before preparing it again.  A sim is not copied by assignment (the copy
 * would share the tables). */
void mm_sim_free(mm_sim *sim);

/* Resolves a data path: as given if it exists, else relative to the
 * scenario file's folder, else under $MMSIM_DATADIR, else under the
 * installed data folder.  Writes the first existing candidate (or the path
 * as given) into out. */
void mm_sim_resolve_path(const char *path, const char *scenario_file, char *out, size_t len);

/* Loads the model and topology the scenario names and checks the layout.
 * Errors name the file, line and key (MM_EINPUT).  sim->sc is a struct copy
 * of *sc that borrows its strings and lists: keep *sc loaded until the sim
 * is done, then mm_scenario_free it. */
int mm_sim_prepare(mm_sim *sim, const mm_scenario *sc, mm_err *err);

/* The first half of mm_sim_prepare: loads the model and topology (and
 * applies the perturbations) without checking the layout, for a planner
 * that then tries many layouts with mm_sim_relayout. */
int mm_sim_load(mm_sim *sim, const mm_scenario *sc, mm_err *err);

/* Checks the layout again after the caller changed layout or training keys
 * of sim->sc (parallel.*, train.micro_batch, recompute, zero, schedule ...)
 * in a sim from mm_sim_load or mm_sim_prepare, without reading any file
 * again (except a workload file).  The model, topology, cluster.nodes and
 * perturbations must stay those it was loaded with.  A planner's inner loop:
 * microseconds instead of the milliseconds of mm_sim_prepare.  Returns 0 or
 * -code with err as mm_sim_prepare gives it. */
int mm_sim_relayout(mm_sim *sim, mm_err *err);

/* What one micro-batch costs on one GPU, by layer and pass, as the cost
 * bridge computes it for mm_sim_run (one source): a transformer layer, the
 * embedding (first stage) and the LM head with its loss (last stage) split
 * into GEMM, attention and memory-bound time of the F, B and W passes
 * (fwcost.h); recomputation added to B; and per virtual stage the
 * optimizer phase.  Communication is not in these numbers: the network
 * model times it in the executed graph (exposed_comm_s, per-stage comm_s). */
#define MM_BK_MAX_STAGES 64
typedef struct mm_opt_breakdown {
    double step_s, grad_norm_s, zero_grad_s, total_s;
} mm_opt_breakdown;
/* One drawn micro-batch of a workload file (mm_sim_breakdown.mb). */
#define MM_BK_MAX_MB 64
typedef struct mm_mb_breakdown {
    int index;             /* its place in the replica's order (0 first) */
    double tokens;         /* T, at the padded length the LLM runs */
    double sequences;      /* n */
    double sum_sq;         /* S: sum of the sequences' squared lengths */
    mm_pass_breakdown layer; /* one layer, as `layer` below for this micro-batch */
} mm_mb_breakdown;
typedef struct mm_sim_breakdown {
    mm_pass_breakdown layer, embed, head;
    double recompute_s;   /* per layer per micro-batch, part of B */
    int n_stages;         /* virtual stages; opt[] and pass[] hold the first MM_BK_MAX_STAGES */
    mm_opt_breakdown opt[MM_BK_MAX_STAGES];
    /* Per virtual stage, one micro-batch's whole-stage F, B (input
     * gradient, recomputation included) and W seconds: the stage costs the
     * executed graph runs (mm_sim_stage_times), embedding and head
     * included on the first and last stage. */
    double pass[MM_BK_MAX_STAGES][3];
    /* Communication of one layer and micro-batch, alone on the network
     * (analytic, uncontended; the executed graph's, with contention and
     * overlap, is in the metrics): TP in the forward and in the input-
     * gradient pass, one pipeline transfer, and per stage the DP gradient
     * reduction of the whole stage (one of them: mm_build_grad_syncs says
     * how many an iteration runs, once or per micro-batch); p2p_hop_mean_s:
     * one transfer averaged over the pipeline's boundaries, the quantity
     * Zero Bubble's runtime benchmarks (docs/topology.md, p2p) */
    double tp_fwd_s, tp_bwd_s, p2p_s, p2p_hop_mean_s, dp_grad_s;
    /* With a workload file the micro-batches differ (`layer` above is the
     * nominal one, train.micro_batch x train.seq_len tokens): the
     * micro-batches DP replica 0 runs in iteration 0, in its order, each
     * with its own layer split as mm_sim_run costs it (the same draw, the
     * same batching); n_mb of them listed (the first MM_BK_MAX_MB) of
     * mb_count.  Both 0 without a workload file. */
    int mb_count, n_mb;
    mm_mb_breakdown mb[MM_BK_MAX_MB];
} mm_sim_breakdown;

/* Fills *bk for sim's layout (from mm_sim_prepare).  Returns 0 or -code. */
int mm_sim_get_breakdown(const mm_sim *sim, mm_sim_breakdown *bk, mm_err *err);

/* Writes *bk as a `"breakdown": {...}` JSON member (no trailing comma;
 * lines after the first start with indent), or as a text table
 * (breakdown.c).  Seconds per micro-batch on one GPU. */
void mm_sim_breakdown_write_json(FILE *f, const mm_sim *sim, const mm_sim_breakdown *bk, const char *indent);
void mm_sim_breakdown_write_text(FILE *f, const mm_sim *sim, const mm_sim_breakdown *bk);

struct mm_build_spec;
/* Fills bk's communication times from the layout's build spec (breakdown.c;
 * mm_sim_get_breakdown calls it). */
void mm_sim_breakdown_comm(const mm_sim *sim, const struct mm_build_spec *spec, mm_sim_breakdown *bk);

/* Whether DP communication overlaps compute for a module under ZeRO stage
 * `zero`: train.overlap_grad_reduce and overlap_param_gather when given
 * (true | false), else (auto) the train.framework profile's `overlap`
 * (mm_framework_overlap: the stage decides what there is to overlap). */
void mm_sim_overlap(const mm_sim *sim, int zero, bool *grad_reduce, bool *param_gather);

/* The recompute mode whose activations the memory model counts: train.
 * recompute, except that no recomputation on a flash or cuDNN attention
 * kernel keeps no attention scores (selective's activations). */
int mm_sim_mem_recompute(const mm_sim *sim);

/* Optional per-op timeline of one iteration, for the trace writer. */
typedef struct mm_sim_timeline {
    mm_graph graph;        /* of the last iteration */
    mm_time *start, *end;  /* per op, ns */
    mm_time t0;            /* iteration start */
} mm_sim_timeline;

/* Runs every iteration.  metrics is filled (caller frees with
 * mm_metrics_free); when tl is non-NULL it receives the last iteration's
 * graph and times (free with mm_sim_timeline_free). */
int mm_sim_run(const mm_sim *sim, mm_metrics *metrics, mm_sim_timeline *tl, mm_err *err);

void mm_sim_timeline_free(mm_sim_timeline *tl);

/* The analytic pre-score a planner ranks thousands of layouts with, in
 * microseconds instead of an event-level run: the same per-stage costs as
 * mm_sim_run, combined by the uniform-pipeline formula
 *     T = (m + (p-1)/v) x max over stages (F + B) + exposed TP comm (in the
 *         stage costs) + DP gradient sync + optimizer step,
 * the DP sync being the gradient reduce(-scatter) and, under ZeRO, the
 * 16-bit parameter all-gather, each with what overlap_grad_reduce /
 * overlap_param_gather hide behind one micro-batch's backward / forward
 * (one per-layer bucket stays exposed; the hidden part slows compute by
 * the GPU's gpu.overlap_slowdown, as in the executor), and an encoder's reductions
 * after its backwards where grad_sync reduces every micro-batch
 * (mm_build_enc_early_syncs; its once-per-iteration reduce is left out),
 * with the slowest encoder stage joining the pipeline (pipeline placement),
 * its whole work added to the first stage (homogeneous) or before and after
 * it (colocated), or bounding the rate (disjoint).  Fills iteration time,
 * throughput, TFLOP/s, MFU and memory (oom); no critical path or trace.
 * Returns 0 or -code. */
int mm_sim_estimate(const mm_sim *sim, mm_metrics *metrics, mm_err *err);

/* Iteration metrics from an executed graph (exposed for tests that build
 * graphs by hand).  gpus and peak_flops are the cluster's; tokens and
 * samples the iteration's. */
void mm_sim_measure(const mm_graph *g, const mm_time *start, const mm_time *end,
                    mm_time t0, mm_time t1, mm_iter_metrics *it,
                    mm_stage_metrics *stages, int n_stages, int ranks_per_stage);

#endif
