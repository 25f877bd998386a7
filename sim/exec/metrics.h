/* metrics.h - what one simulated run measured, as the executor (run.h) and the
 * planner's pre-score (plan/estimate.h) hand it to
 * the store and the CLI.  Plain data; its one behaviour is the rates
 * (mm_metrics_rates), so that both fillers compute them alike.
 *
 * Values that a later layer or issue fills in are NAN ("null" in JSON/SQL)
 * until then.  Times are seconds (double) here; the engine's clock is int64
 * nanoseconds and is converted only at this boundary.
 * Not for: computing anything but the rates (mm_metrics_rates; iterate.c
 * and estimate.c fill it, the cost
 * bridge cost/costs.h gives the memory) or formatting (cli, store). */
#ifndef MM_METRICS_H
#define MM_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "cost/outersync.h"
#include "cost/runcost.h"
#include "cost/swap.h"
#include "exec/critpath.h"

/* One simulated iteration. */
typedef struct mm_iter_metrics {
    int iteration;          /* 0-based */
    double time_s;          /* wall time of the iteration */
    double bubble_fraction; /* mean idle share of pipeline compute streams */
    double exposed_comm_s;  /* communication not hidden behind compute */
    double host_launch_s;   /* host seconds issuing compute-stream ops, mean
                               over ranks (the host cursor, exec.h) */
    double exposed_host_s;  /* compute stream ready but waiting for its
                               launch, mean over ranks */
    double model_flops;     /* Megatron convention, whole cluster, on the
                               real (non-pad) tokens */
    double hw_flops;        /* what the GPUs ran: + the pad tokens' FLOPs
                               + recomputation */
    double pad_flops;       /* model FLOPs spent on pad tokens (in
                               hw_flops, not in model_flops) */
    double tokens, samples; /* trained this iteration, whole cluster */
    double load_imbalance;  /* max / mean LLM work over DP ranks (1 = even) */
    double stage_spread_s;  /* slowest minus fastest stage's compute */
    double encoder_load_imbalance; /* max / mean over encoder ranks of their
                                      compute seconds (1 = even; NAN without
                                      an encoder) */
    double padded_fraction; /* padding tokens / tokens the LLM ran on */
    double peak_memory_gib; /* the largest GPU's peak in this iteration */
    double encoder_excess_s; /* the slowest encoder rank's compute minus the
                                ranks' mean: what the imbalance costs when
                                the others wait for it (colocated) */
    /* the data loader (exec/dataload.h; NAN when data.workers is -1) */
    double data_wait_s;     /* the step waiting for its micro-batches, and
                               their host-to-device copies (in time_s) */
    double data_h2d_s;      /* of which the copies (the slowest GPU's) */
    double loader_cpu_s;    /* the most CPU seconds one GPU's loader spent
                               on the step's samples (one core) */
} mm_iter_metrics;

/* Per pipeline stage, averaged over iterations and over the DP replicas. */
typedef struct mm_stage_metrics {
    int stage;
    double busy_s;   /* compute stream busy time per iteration */
    double idle_s;   /* compute stream idle time per iteration */
    double comm_s;   /* communication stream busy time per iteration */
    double host_s;   /* host seconds issuing its compute-stream ops */
    double exposed_host_s; /* its compute stream waiting for the host */
    double data_wait_s;    /* the stage idle while the step waits for data
                              (the whole step waits: every stage alike) */
    double bubble_s; /* compute stream idle inside the pipeline phase (from
                        the iteration's start to its last forward/backward
                        op): the stage's share of the pipeline bubble */
    double memory_gib;
} mm_stage_metrics;

/* Per module (the LLM and each encoder), averaged over iterations. */
typedef struct mm_module_metrics {
    char name[16];
    int gpus;          /* GPUs holding it (shared ones counted for each) */
    double compute_s;  /* compute per iteration on one of its GPUs */
    double memory_gib; /* its share of the peak on one of its GPUs */
} mm_module_metrics;

typedef struct mm_metrics {
    /* summary over all iterations (means) */
    double iteration_time_s;              /* mean over iterations */
    double iteration_time_p50_s, iteration_time_p99_s;
    double tokens_per_s, samples_per_s;
    /* mm_metrics_rates: tokens_per_s, mfu and tflops_per_gpu count the
     * real tokens and their model FLOPs; hfu and hw_tflops_per_gpu what
     * the GPUs ran (pad tokens, recomputation) */
    double mfu, hfu;                       /* fraction of dense peak */
    double tflops_per_gpu, hw_tflops_per_gpu;
    double padded_flops_fraction;          /* pad FLOPs / (model + pad FLOPs) */
    double bubble_fraction;
    double exposed_comm_s;
    double host_launch_s;  /* per rank and iteration (mm_iter_metrics) */
    double exposed_host_s; /* per rank and iteration */
    /* the data loader, per iteration (NAN when data.workers is -1) */
    double data_wait_s, data_h2d_s, loader_cpu_s;
    int data_workers_needed; /* workers per GPU that keep up on average
                                (mm_loader_workers_needed); -1: none can */
    double data_shortfall_s; /* seconds per iteration the step waits for
                                its loader in the steady state, the
                                prefetched batches spent (cost/loader.h
                                mm_sim_loader_short_s); 0: it keeps ahead */
    double peak_memory_gib; /* the peak over every GPU and iteration, as
                               reserved (cost/costs.h mm_sim_memory.peak_gib):
                               what the OOM verdict compares with HBM */
    double peak_allocated_gib; /* allocated at that peak (tensors alone) */
    double peak_memory_bound_gib;  /* workload file: the early check's bound
                                      (every micro-batch its largest sample) */
    mm_run_costs run;       /* the run's periodic work (cost/runcost.h;
                               run.on false: none asked for) */
    mm_outer_sync outer;    /* training across sites (cost/outersync.h;
                               outer.on false: none asked for); its
                               per_iter_s is in every iteration's time and
                               exposed communication, and tokens, samples,
                               FLOPs and gpus count every site */
    mm_swap swap;           /* ATOM's model swapping (cost/swap.h; swap.on
                               false: none); its exposed_s is in every
                               iteration's time, before outer's step_s */
    double encoder_load_imbalance; /* mean over iterations (NAN: no encoder) */
    double encoder_excess_s;       /* mean over iterations */
    double padded_fraction;        /* over all iterations' tokens */
    bool oom;
    /* memory that follows the data: where a drawn batch first did not fit
     * (iteration -1: the layout itself did not, or it fit) */
    struct {
        int iteration, micro_batch, stage, replica;
        double need_gib, cap_gib;
    } oom_at;
    int gpus;
    uint64_t events;   /* engine events dispatched, all iterations */
    uint64_t graph_ops; /* ops built for the last iteration (one replica's
                           where identical replicas are built once) */
    double wall_s;     /* host seconds spent simulating (not stored in
                          deterministic comparisons) */

    int n_iters;
    mm_iter_metrics *iters;   /* n_iters entries, owned */
    int n_stages;
    mm_stage_metrics *stages; /* n_stages entries, owned */
    int dp_ranks;             /* the LLM's DP degree */
    double *dp_rank_load_s;   /* n_iters x dp_ranks, owned: each DP rank's
                                 LLM compute seconds (F + B of its
                                 micro-batches over every virtual stage) in
                                 each iteration; iters[i].load_imbalance is
                                 max / mean of row i.  NULL when not measured
                                 (the estimate, an outcome sent over MPI) */
    mm_critpath crit;         /* critical path of the last iteration, owned */
    int n_modules;
    mm_module_metrics modules[4];
} mm_metrics;

void mm_metrics_free(mm_metrics *m); /* frees the arrays; m itself is the caller's */

/* The rates of T seconds that trained `tokens` real tokens and `samples`
 * samples on `gpus` GPUs of `peak` FLOP/s: tokens_per_s, samples_per_s,
 * tflops_per_gpu and mfu from model_flops (the real tokens'), hw_tflops_
 * per_gpu and hfu from hw_flops (everything run), padded_flops_fraction
 * = pad_flops / (model_flops + pad_flops).  The one place each of these
 * numbers is computed (the executor's summary and the planner's pre-score
 * both call it; exec/iterate.c). */
void mm_metrics_rates(mm_metrics *mt, double T, double tokens, double samples, double model_flops, double pad_flops,
                      double hw_flops, int gpus, double peak);

#endif
