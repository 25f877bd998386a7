/* costs.h - the cost bridge: what one layout of a prepared scenario
 * (mm_sim) costs on its hardware, as two functions, per-stage times and
 * per-stage memory.  `mmsim run` (mm_sim_run), the planner's pre-score
 * (mm_sim_estimate, and through it `mmsim plan`) and `mmsim model` all call
 * these two, so each number has one source.
 *
 * Times come from the model's op costs (model/llm.h, model/mllm.h) timed on
 * the GPU's kernel tables (hw/compute.h), or from measured pass times
 * (train.pass_times); memory from model/memory.h with the micro-batches in
 * flight that the schedule and the encoder placement give.  Times are
 * implemented in costs.c, memory in memcost.c.
 *
 * Not for: a workload file's per-micro-batch costs (they change every
 * iteration: batchcost.c), building or executing the graph (iterate.c),
 * and the capacity check against node groups' and perturbed GPUs' HBM,
 * which needs the built graph's rank-to-GPU map (mm_sim_run only). */
#ifndef MM_COSTS_H
#define MM_COSTS_H

#include "parallel/build.h"
#include "parallel/graph.h"
#include "scenario/sim.h"

/* The per-stage times of a layout, and the build spec they form. */
typedef struct mm_sim_costs {
    int n_vstages;          /* virtual stages: pp x vpp */
    mm_stage_cost *stages;  /* per virtual stage, one micro-batch of train.micro_batch
                               samples of sim->seq tokens (owned) */
    double *mem_frac;       /* per virtual stage, the memory-bound share of the F, B
                               and W passes: [3 v + 0..2] (owned) */
    mm_enc_mb_cost *enc_mb[MM_MAX_ENCODERS]; /* per encoder, its dp x m micro-batches (owned) */
    mm_build_spec spec;     /* the graph builder's input; spec.stages and
                               spec.enc[i].mb point at the arrays above */
} mm_sim_costs;

/* Fills *c for sim's layout (sim from mm_sim_prepare or mm_sim_relayout).
 * With parallel.projector: llm the projector's work is in stage 0.  Returns
 * 0, or -code with err set (c is then freed). */
int mm_sim_stage_times(const mm_sim *sim, mm_sim_costs *c, mm_err *err);
void mm_sim_costs_free(mm_sim_costs *c);

/* The per-stage memory of a layout: peak bytes on one GPU of each pipeline
 * stage and of each module (the largest sample of a workload file). */
typedef struct mm_sim_memory {
    int n_stages;          /* the LLM's pipeline stages (pp) */
    double *stage_gib;     /* one GPU of each stage as reserved, encoders on
                              the LLM's GPUs included; NaN outside the
                              memory model (owned) */
    double *states_gib;    /* of that, the LLM's model states (weights,
                              gradients, optimizer) on one GPU of each stage;
                              NaN outside the memory model (owned) */
    int n_modules;         /* the LLM, then each encoder with work */
    char module_name[MM_MAX_MODULES][16];
    double module_gib[MM_MAX_MODULES]; /* one of its GPUs: the LLM's peak stage
                                          alone, an encoder's own share */
    double *stage_alloc_gib; /* of stage_gib, what the tensors allocate
                              (torch.cuda.max_memory_allocated; owned) */
    double peak_gib;       /* largest per-GPU reserved total (mm_mem_reserved:
                              allocated + the allocator's fragmentation +
                              context, workspaces, NCCL and bucket buffers),
                              what the OOM verdict compares */
    double peak_alloc_gib; /* largest per-GPU allocated total */
    double hbm_gib;        /* the GPU's HBM */
    double cap_gib;        /* HBM less train.memory_reserve_gib */
    bool oom;              /* some GPU's total exceeds cap_gib */
} mm_sim_memory;

/* Fills *m for sim's layout.  Returns 0, or -code (out of memory) with err
 * set.  A layout that does not fit is not an error: m->oom. */
int mm_sim_stage_memory(const mm_sim *sim, mm_sim_memory *m, mm_err *err);
void mm_sim_memory_free(mm_sim_memory *m);

/* Whether DP communication overlaps compute for a module under ZeRO stage
 * `zero`: train.overlap_grad_reduce and overlap_param_gather when given
 * (true | false), else (auto) the train.framework profile's `overlap`
 * (mm_framework_overlap: the stage decides what there is to overlap). */
void mm_sim_overlap(const mm_sim *sim, int zero, bool *grad_reduce, bool *param_gather);

/* A module's recompute mode: parallel.<module>.recompute when given,
 * else train.recompute (mm_recompute); what the stage costs recompute and
 * what plan/emit.h writes. */
int mm_sim_recompute(const mm_sim *sim, const mm_module_layout *lay);

/* The recompute mode whose activations the memory model counts: train.
 * recompute, except that no recomputation on a flash or cuDNN attention
 * kernel keeps no attention scores (selective's activations). */
int mm_sim_mem_recompute(const mm_sim *sim);

/* The MoE load profile of one micro-batch of train.micro_batch x seq_len /
 * cp tokens per TP group (model/moe.h): what the EP all-to-all's volume,
 * the run's moe_* metrics and the layer's kernels use.  Returns 0, 1 for
 * a dense model (*out zeroed), or -1 (no memory). */
int mm_sim_moe_load(const mm_sim *sim, mm_moe_load *out);

#endif
