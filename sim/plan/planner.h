/* planner.h - the layout planner behind `mmsim plan`: given a scenario
 * (model, cluster, workload, training settings) and a GPU count, find the
 * fastest parallel layout.
 *
 * 1. Enumerate the whole space of layouts the layout arithmetic allows
 *    (plan/space.h names each dimension and its values; README "mmsim
 *    plan"): the encoder's placement, the GPUs it takes on its own
 *    (pipeline, disjoint: every count its tp x pp divides), its tp, pp and
 *    recompute; the LLM's tp, cp, pp (uneven first/last stages where pp x
 *    vpp does not divide the layers: Megatron-LM's
 *    --decoder-first/last-pipeline-num-layers or its
 *    account_for_embedding/loss_in_pipeline_split: per-stage counts at vpp
 *    1, uneven first and last chunks with interleaving), vpp, ep, micro-batch
 *    size, recompute, ZeRO stage and schedule.  A narrowing (--space)
 *    keeps only the values it lists.  Degrees whose product does not give
 *    the GPUs are not candidates.
 * 2. Prune: each candidate goes through the scenario's own validation
 *    (mm_sim_relayout: the message naming the key is the reason) and the
 *    memory model ("OOM: x GiB > y GiB").
 *    When no candidate survives on all the GPUs (no product of degrees gives
 *    them, or none fits), the plan drops one node at a time, down to half
 *    the cluster, and plans on the largest count where one does
 *    (mm_plan.gpus < gpus_asked says so).
 * 3. Pre-score every survivor analytically (mm_sim_estimate).
 * 4. Rescore the best top_k event by event (mm_sim_run, through the runner,
 *    so they are stored as runs and a second plan reuses them), over the
 *    given number of iterations, and rank them by simulated iteration time,
 *    then the others by their estimate.  Ties: the canonical layout string.
 * 5. Store the plan and every candidate (store/planstore.h) when a database
 *    is given.
 *
 * Library code: nothing printed; the caller formats mm_plan.
 * Not for: sweeps over arbitrary keys (sweep.h) or running points (runner.h). */
#ifndef MM_PLANNER_H
#define MM_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "model/layout.h"
#include "plan/space.h"
#include "scenario/scenario.h"
#include "util/err.h"

typedef enum {
    MM_CAND_PRUNED,    /* invalid layout or out of memory: reason */
    MM_CAND_ESTIMATED, /* pre-scored only */
    MM_CAND_SIMULATED, /* rescored event by event: sim_* and run_id */
    MM_CAND_FAILED,    /* the event-level run failed or ran out of memory: reason */
    MM_CAND_TIED,      /* the same pre-score, bit for bit, as a better-placed
                          candidate: not among the K (reason names it) */
    MM_CAND_BOUNDED    /* not simulated: its lower bound exceeds the best
                          simulated time, so it cannot win (reason: margin) */
} mm_cand_status;

extern const char *const mm_cand_status_names[]; /* "pruned", "estimated", "simulated",
                                                    "failed", "tied", "bounded" */

typedef struct mm_plan_cand {
    int index;         /* position in the enumeration order */
    int placement;     /* mm_placement; -1: no encoder in this plan */
    int enc_gpus;      /* GPUs of the encoder's own (pipeline, disjoint) */
    mm_layout llm, vision; /* degrees and Megatron's split options (no
                              per-stage list: first/mid/last below);
                              vision: tp, pp, dp (colocated, pipeline, disjoint) */
    /* Uneven LLM split (Megatron-LM's --decoder-first/last-pipeline-num-layers):
     * first_layers on stage 0, last_layers on stage pp-1, mid_layers on each
     * other; 0: the even split layers / pp. */
    int first_layers, mid_layers, last_layers;
    int micro_batch, micro_batches; /* size in samples; count per DP replica */
    int recompute;     /* enum mm_recompute: the LLM's (and train.recompute) */
    int enc_recompute; /* the vision encoder's; -1: no encoder in this plan */
    int zero;
    int schedule;      /* mm_schedule_kind */
    char layout[192];  /* canonical layout string (ties and display) */
    mm_cand_status status;
    char *reason;      /* pruned / failed: why (owned) */
    double est_s, est_tflops, est_mfu, mem_gib; /* pre-score; mem_gib also for OOM */
    double bound_s;    /* lower bound on the event-level time (mm_sim_estimate_bound) */
    int oom_stage;     /* pruned for memory: the LLM stage that did not fit
                          (-1: an encoder's own GPUs, or not pruned for memory) */
    double oom_gib;    /* and what it needed (NAN: not pruned for memory) */
    double sim_s, sim_tflops, sim_mfu, sim_tokens_s, sim_mem_gib; /* rescored */
    int64_t run_id;    /* runs.id of the event-level run; 0: none */
    int rank;          /* 1 = best; 0: unranked (pruned, failed) */
} mm_plan_cand;

typedef struct mm_plan_opts {
    const char *scenario;        /* file; NULL: the built-in default */
    const char *const *sets;     /* the user's overrides, applied first */
    int n_sets;
    const struct mm_scenario *base; /* non-NULL: this loaded scenario (overrides
                                    applied; borrowed until mm_plan_run returns)
                                    instead of scenario and sets, so a scenario
                                    opened from text is planned as it is */
    int gpus;                    /* > 0: the cluster resized to gpus / (GPUs per node) nodes */
    int top_k;                   /* candidates rescored event by event (0: none) */
    int iterations;              /* of each rescoring run; 0: the scenario's */
    int max_pp;                  /* largest LLM pp tried; 0: 32 */
    unsigned placements;         /* bit mask of 1 << mm_placement; 0: all four */
    const char *const *space;    /* n_space narrowings "DIM=V1,V2,..." (space.h) */
    int n_space;
    int prove;                   /* more event-level runs allowed, after the K, of
                                    the unproven candidates with the lowest bounds */
    int jobs;                    /* runner worker processes */
    int mpi_rank, mpi_size;      /* mpi_size > 1: under mpirun (MPI_Init done by
                                    the caller); every rank plans alike, the
                                    rescoring is shared among the ranks and
                                    rank 0 alone writes the database (db needed) */
    const char *db;              /* database; NULL: no rescoring store; the top
                                    K are then simulated in this process */
    const char *version;         /* written with the runs and the plan */
    const char *created_at;      /* ISO-8601 UTC for the plan row; NULL: now */
} mm_plan_opts;

typedef struct mm_plan {
    mm_plan_cand *c;             /* every candidate, in rank order (see above) */
    size_t n;
    size_t pruned, oom, estimated, simulated, failed, tied, bounded;
    size_t open;                 /* candidates neither simulated nor proven worse */
    double best_s;               /* best simulated iteration time; NAN: none */
    double optimal_within;       /* the pick is optimal within this fraction: the
                                    best an unproven candidate could still be,
                                    1 - lowest open bound / best_s (0: proven) */
    size_t prescored;            /* candidates the analytic estimate ran on (not
                                    those the validation pruned first) */
    int gpus, gpus_per_node, nodes, iterations, top_k;
    int gpus_asked;              /* the cluster's (or --gpus) size; gpus < gpus_asked
                                    when no layout used them all and the plan fell
                                    back to the largest node count with one */
    int has_encoder;
    size_t dim_values[MM_SD_COUNT]; /* distinct values each dimension takes
                                    over the enumerated candidates */
    char model[128];
    char base_source[256];
    int64_t plan_id;             /* plans.id; 0 when not stored */
    double enumerate_s, validate_s, estimate_s, simulate_s, wall_s; /* host seconds:
                                    validate_s the scenario checks of every candidate,
                                    estimate_s the pre-scores alone, simulate_s the
                                    event-level rescoring */
} mm_plan;

/* Runs the plan: out is filled (free with mm_plan_free) unless an error is
 * returned.  Bad options are MM_EINPUT with file "<cli>" and the flag as key
 * (--gpus not a positive multiple of the node size, --top < 0, ...); a bad
 * scenario is MM_EINPUT naming its file, line and key.  A plan with no
 * valid candidate is not an error (every row says why).  Returns 0 or -code. */
int mm_plan_run(const mm_plan_opts *o, mm_plan *out, mm_err *err);

void mm_plan_free(mm_plan *p);

/* Kendall's tau-b of the pre-score's estimates (est_s) against the
 * event-level times (sim_s) over the simulated candidates: how well the
 * pre-score orders what was simulated (bench_plan and the tests report
 * this one number).  NAN with fewer than two comparable candidates. */
double mm_plan_prescore_tau(const mm_plan *p);

/* The pick (the rank-1 candidate) as a scenario: the plan's base (o's
 * scenario and overrides, or o->base) on the nodes it was planned on, with
 * the candidate's layout applied by mm_scenario_apply_layout, the one way
 * a layout is applied; for a caller that hands the pick on (`mmsim plan
 * --emit`, plan/emit.h).  pick->sc borrows from pick->base and pick->lps:
 * keep pick in place, free it with mm_plan_pick_free.  Returns 0, or
 * -MM_EINPUT when no layout fits (nothing ranked). */
typedef struct mm_plan_lps {
    int v[MM_MAX_PP];
} mm_plan_lps;
typedef struct mm_plan_pick {
    mm_scenario base, sc;
    mm_plan_lps lps;
    bool owns_base;
} mm_plan_pick;
int mm_plan_pick_load(const mm_plan_opts *o, const mm_plan *p, mm_plan_pick *pick, mm_err *err);
void mm_plan_pick_free(mm_plan_pick *pick);

/* Writes the --set overrides that turn the (resized) base scenario into the
 * candidate, as a JSON list of strings ("parallel.llm={tp: 8, ...}", ...),
 * into buf; returns the length needed, like snprintf. */
size_t mm_plan_cand_sets_json(const mm_plan_cand *c, char *buf, size_t len);

#endif
