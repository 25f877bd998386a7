/* cost_internal.h - the cost bridge's finer functions: a module's
 * recompute mode, the pipeline's stages, the encoders' and the LLM's
 * per-micro-batch costs, the memory configuration, and a workload file's
 * per-iteration costs (wl_iter), which the executor's iteration loop
 * (exec/iterate.c) and the planner's pre-score (plan/estimate.c) call
 * beside costs.h.
 * Not installed; callers that only price a layout use costs.h. */
#ifndef MM_COST_INTERNAL_H
#define MM_COST_INTERNAL_H

#include "parallel/build.h"
#include "cost/breakdown.h"
#include "cost/costs.h"
#include "scenario/sim.h"
#include "model/fp8.h"
#include "model/memory.h"
#include "workload/batch.h"

/* costs.c: the pipeline the LLM's schedule runs: its stages and, placed
 * as stages ahead of it, the encoders' (DFLOP's layouts: a pipeline even
 * when the LLM has one stage).  The time (grad_sync, ZeRO-3's gathers) and
 * the memory (ZeRO-3's gathered parameters) both ask it. */
int mm_sim_pipe_stages(const mm_sim *sim);
/* costs.c: the scenario's FP8 options (model/fp8.h); on only under
 * train.precision fp8. */
mm_fp8_cfg mm_sim_fp8(const mm_sim *sim);
/* costs.c: the FP8-weight parameters (fp8.h) one GPU of the LLM holds of a
 * stage of nl blocks like sv: its blocks' Linear weights over tp, experts
 * over their EP fold, as stage_params splits them. */
double mm_sim_fp8_stage_params(const mm_sim *sim, const mm_llm *sv, int nl);
/* memcost.c: the same as the memory model keeps it (mm_sim_mem_recompute,
 * sim.h: a fused attention kernel never stores the scores) for one module. */
int mm_sim_mem_recompute_of(const mm_sim *sim, const mm_module_layout *lay);

/* costs.c: a frozen LLM (sim->llm_frozen) keeps its forward and its
 * input-gradient pass; its weight-gradient pass, gradients and optimizer
 * step go.  Applied to a stage's costs and to a micro-batch's. */
void mm_sim_freeze_stage(const mm_sim *sim, mm_stage_cost *c);
void mm_sim_freeze_mb(const mm_sim *sim, mm_mb_cost *c);

/* costs.c: one encoder's work on one micro-batch of `inputs` tiles or
 * clips; _split hands the projector's work to *projc when it runs on the
 * LLM (parallel.projector: llm).  Return 0 or -1. */
int mm_sim_enc_mb_cost(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                       double *wgrad_params);
int mm_sim_enc_mb_cost_split(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                             double *wgrad_params, mm_enc_mb_cost *projc);

/* costs.c: one LLM micro-batch of T tokens in n sequences (sum of squared
 * lengths S) holding `images` images (< 0: the nominal one per sequence;
 * what Mllama's cross-attention blocks attend) on every virtual stage,
 * out[v * stride].  Returns 0 or -1. */
int mm_sim_llm_bin_cost(const mm_sim *sim, const mm_stage_cost *st, int V, double T, double S, double n,
                        double images, mm_mb_cost *out, size_t stride);

/* costs.c: encoder i's layout as the graph builder takes it (placement,
 * tp, pp, dp, layers, frozen, the disjoint queue's depth); costs and
 * memory (memcost.c) both read it from here. */
void mm_sim_enc_layout(const mm_sim *sim, int i, mm_enc_spec *es);

/* memcost.c: the LLM's memory configuration (memory.h) for this scenario. */
void mm_sim_llm_mem_config(const mm_sim *sim, mm_mem_config *c);

/* memcost.c: the allocator and runtime around the tensors on a GPU of a
 * module with these degrees (model/memory.h mm_mem_alloc) under the
 * scenario's framework: its fragmentation, and the CUDA context, library
 * workspaces, NCCL buffers of each communicator the GPU is in (tp, cp,
 * dp, ep, and the pipeline's send/recv when pp > 1) and ZeRO 1-2 bucket
 * buffers of `params` parameters at most.  The one place both the early
 * check (memcost.c) and the memory that follows the data (datamem.c) take
 * it from. */
void mm_sim_mem_alloc(const mm_sim *sim, int tp, int cp, int pp, int dp, int ep, int zero, double params,
                      mm_mem_alloc *a);

/* memcost.c: the bytes on one GPU of the LLM's pipeline stage k, by kind,
 * as mm_sim_stage_memory counts them (its stage_gib is this total).
 * Returns 0, or -1 outside the memory model. */
int mm_sim_llm_stage_rank(const mm_sim *sim, int k, mm_mem_rank *r);

/* memcost.c: under train.outer_sync.algorithm atom, the LLM's rank on one
 * GPU with every state resident (*full: the whole model, pp 1) and the
 * bytes its activations and the runtime leave for model states (*room):
 * what cost/swap.h sizes the groups by.  0, or -1 outside the memory
 * model. */
int mm_sim_swap_room(const mm_sim *sim, mm_mem_rank *full, double *room);

/* memcost.c: the bytes on one GPU of encoder i under layout *es
 * (mm_sim_enc_layout) holding `flight` micro-batches of `inputs` tiles or
 * clips each, by kind: what mm_sim_stage_memory's module_gib counts (its
 * own flight and largest sample), divided over the encoder's pp stages.
 * Returns 0, or -1 outside the memory model. */
int mm_sim_enc_rank_memory(const mm_sim *sim, int i, const mm_enc_spec *es, double inputs, int flight,
                           mm_mem_rank *r);

/* batchcost.c: one iteration of a workload file, drawn and batched; the
 * arrays are reused across iterations and freed by wl_iter_free. */
typedef struct wl_iter {
    mm_sample *samples;
    mm_mb_cost *mb;           /* V x dp x m */
    mm_enc_mb_cost *enc;      /* n_enc x dp x m: encoder i's at i dp m + d m + j */
    double tokens;            /* LLM tokens trained this iteration */
    double padded_tokens;     /* tokens the LLM ran on (train.padding) */
    double pad_flops;         /* model FLOPs the LLM spent on pad tokens */
    double *load_rank;        /* dp: each DP rank's LLM work (seconds, F + B of
                                 its micro-batches, every virtual stage):
                                 the load_imbalance metric and the
                                 dp_rank_load_s output both read it */
    /* colocated, per encoder i: per encoder DP rank (GPU order) costs and
     * the bytes each (encoder rank, LLM replica) pair moves (encrank.c) */
    mm_enc_rank_cost *enc_ranks[MM_MAX_ENCODERS];
    double *pair_bytes[MM_MAX_ENCODERS];
    /* per (replica d, micro-batch j), d*m + j: the LLM tokens (T, at the
     * padded length) and sum of squares (S) it runs on, and (i dp m + d m
     * + j) encoder i's inputs, for memory that follows the data */
    double *mb_T, *mb_S, *mb_inputs;
    double *mb_n;             /* per (d, j): the sequences it holds */
    double *enc_rank_inputs[MM_MAX_ENCODERS]; /* colocated, per encoder i: its inputs
                                 (tiles + frames, or clips) per rank (GPU order) */
    int m;                    /* micro-batches per replica this iteration */
} wl_iter;

/* encrank.c: colocated encoder i's per-rank work from the plan's
 * enc_rank_bins (plan encoder rank q serves the q-th GPU rank when ranks
 * are ordered by the LLM replica they sit on; the plan was formed with
 * enc_ranks = LLM GPUs / tp of encoder i), and the pairs' bytes; sets
 * spec->enc[i].ranks / pair_bytes.  Returns 0 or -code. */
int mm_sim_enc_ranks(const mm_sim *sim, mm_build_spec *spec, int i, const mm_batch_plan *plan,
                     const mm_sample *samples, wl_iter *w, mm_err *err);

/* batchcost.c: max / mean of the dp per-rank loads (1 when they are all
 * zero): the one place load_imbalance is computed. */
double mm_sim_load_imbalance(const double *load, int dp);

/* encrank.c: encoder_load_imbalance of one iteration's spec: max / mean
 * over encoder ranks of their compute seconds (forward + backward), every
 * encoder's work combined where they share GPUs: colocated ranks (per unit
 * of gcd(tp) GPUs, the sum of every encoder's rank there), homogeneous DP
 * replicas (their first stage, all encoders), pipeline/disjoint replicas
 * (their tasks; each encoder on its own GPUs, the largest over encoders).
 * 1 without encoders. */
double mm_sim_enc_imbalance(const mm_build_spec *spec);
/* The same ranks' max minus mean compute seconds: how much longer the
 * slowest encoder rank works than an even split would (0 without one). */
double mm_sim_enc_excess_s(const mm_build_spec *spec);

/* costs.c: LLM tokens per sample the costs run on: train.seq_len under
 * padding max_length for a fixed or text workload, else sim->seq. */
double mm_sim_cost_seq(const mm_sim *sim);

/* costs.c: the model FLOPs (forward + backward over every virtual stage,
 * as the executor's ops carry them) of one LLM micro-batch of T tokens in
 * n sequences whose squared lengths sum to S: what mm_sim_llm_bin_cost
 * gives, without the times.  Padding's FLOPs are this at the padded
 * length less this at the real one. */
double mm_sim_llm_mb_flops(const mm_sim *sim, const mm_stage_cost *st, int V, double T, double S, double n);
/* costs.c: a fixed or text workload's model FLOPs spent on pad tokens in
 * one iteration (padding max_length to train.pad_to: every micro-batch of
 * every replica), 0 when nothing is padded or for a workload file (whose
 * drawn micro-batches count their own, wl_iter.pad_flops). */
double mm_sim_nominal_pad_flops(const mm_sim *sim, const mm_stage_cost *st);

int mm_sim_iteration_costs(const mm_sim *sim, mm_build_spec *spec, const mm_stage_cost *st, int it, wl_iter *w,
                           mm_err *err);
void mm_sim_wl_iter_free(wl_iter *w);

/* datamem.c: memory that follows the data: per stage and DP replica, the
 * model states plus the activations of the micro-batches the schedule
 * holds in flight (each from its own tokens, tiles and frames), peaked
 * over the schedule's steps, plus the encoders' share on the same GPUs.
 * stage_gib (the caller's array of pp) gets each stage's worst replica,
 * peak_gib the largest GPU's; when a GPU does not fit, oom is set with
 * where (the micro-batch whose forward made the peak, the stage and the
 * replica; -1 on an encoder's own GPUs) and the bytes. */
typedef struct mm_data_mem {
    double *stage_gib;  /* in: the caller's array of pp; out: per stage, reserved */
    double peak_gib;    /* reserved (mm_mem_reserved): what the verdict compares */
    double peak_alloc_gib; /* allocated at the same peaks */
    bool oom;
    int micro_batch, stage, replica;
    double need_gib, cap_gib;
} mm_data_mem;
/* Returns 1 when a GPU does not fit, 0 when all fit, -1 out of memory (the
 * host's). */
int mm_sim_data_memory(const mm_sim *sim, const mm_build_spec *spec, const wl_iter *w, mm_data_mem *out);

/* costs.c: the stage costs with the breakdown of their layer, embedding
 * and head filled in (spec's layout fields too), and one micro-batch's
 * layer of T tokens in n sequences (sum of squares S) split by pass and
 * kind, as mm_sim_stage_times and mm_sim_llm_bin_cost cost them: what
 * breakdown.c lists.  Return 0 or -code / -1. */
int mm_sim_stage_costs_breakdown(const mm_sim *sim, mm_stage_cost *st, mm_build_spec *spec, mm_sim_breakdown *bk,
                                 mm_err *err);
int mm_sim_bin_layer_breakdown(const mm_sim *sim, double T, double S, double n, mm_pass_breakdown *bk);

#endif
