/* breakdown.h - `mmsim run --breakdown`: one micro-batch's cost by layer
 * and pass, from the same functions the cost bridge times the run with
 * (costs.h), and its JSON and text writers (breakdown.c).
 * Not for: the executed graph's times (exec/run.h). */
#ifndef MM_BREAKDOWN_H
#define MM_BREAKDOWN_H

#include <stdio.h>

#include "cost/fwcost.h"
#include "cost/outersync.h"
#include "cost/runcost.h"
#include "cost/swap.h"
#include "scenario/sim.h"

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
    double fp8_cast_s; /* FP8: the step's casts (weights, cached across micro-batches; FP8 gradients' re-quantization), in total_s */
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
    /* the host's seconds to issue each stage's F, B, W of one micro-batch
     * and its optimizer step, and the kernels they launch (mm_stage_cost) */
    double host[MM_BK_MAX_STAGES][4], launches[MM_BK_MAX_STAGES][4];
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
    /* The data loader (data.workers >= 0; loader false otherwise): one
     * micro-batch's loading on one core, its NVDEC seconds and its copy to
     * the GPU (mm_sim_loader_micro_batch) */
    bool loader;
    double loader_cpu_s, loader_dev_s, loader_h2d_s;
    /* ... and what the run made of it, when the caller holds a run (NAN
     * from mm_sim_get_breakdown; `mmsim run --breakdown` and --json set
     * them from the run's data_wait_s and data_shortfall_s): the step's
     * wait per iteration, and its steady-state shortfall */
    double run_data_wait_s, run_data_short_s;
    /* The host's syncs with the GPU in every step (the build spec's
     * host_sync_step): gradient clipping's norm read, fp16's found-inf
     * flag read; and the run's periodic work (cost/runcost.h, run.on
     * false: none asked for; run.total_s NAN here: the step's time is the
     * executed run's) */
    bool sync_grad_norm, sync_found_inf;
    mm_run_costs run;
    /* One outer sync across the topology's sites (cost/outersync.h;
     * outer.on false: none): its bytes, WAN and kernel seconds; what it
     * exposes depends on the executed step (the run's metrics) */
    mm_outer_sync outer;
    /* ATOM's model swapping of one GPU (cost/swap.h; swap.on false: none):
     * its groups, link, and the step's passes with and without the swaps */
    mm_swap swap;
} mm_sim_breakdown;

/* Fills *bk for sim's layout (from mm_sim_prepare).  Returns 0 or -code. */
int mm_sim_get_breakdown(const mm_sim *sim, mm_sim_breakdown *bk, mm_err *err);

/* Writes *bk as a `"breakdown": {...}` JSON member (no trailing comma;
 * lines after the first start with indent), or as a text table
 * (breakdown.c).  Seconds per micro-batch on one GPU. */
void mm_sim_breakdown_write_json(FILE *f, const mm_sim *sim, const mm_sim_breakdown *bk, const char *indent);
void mm_sim_breakdown_write_text(FILE *f, const mm_sim *sim, const mm_sim_breakdown *bk);

#endif
