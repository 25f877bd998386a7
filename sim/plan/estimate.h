/* estimate.h - the planner's analytic pre-score of a prepared scenario.
 * Not for: the event-level run (exec/run.h), which the planner rescores its
 * top candidates with. */
#ifndef MM_ESTIMATE_H
#define MM_ESTIMATE_H

#include "exec/metrics.h"
#include "scenario/sim.h"

/* The analytic pre-score a planner ranks thousands of layouts with, in
 * microseconds instead of an event-level run: the same per-stage costs as
 * mm_sim_run, combined by the uniform-pipeline formula
 *     T = m x max over stages (F + B) + sum over the other stages (F + B) / v
 *         + exposed TP comm (in the stage costs) + DP gradient sync
 *         + optimizer step
 * (for p equal stages the uniform (m + (p-1)/v)(F + B); under ZB-H1 each
 * other stage adds F + B - 2 W, W the weight-gradient part of B: the
 * zero-bubble paper's bubble; under the interleaved schedule, ZB-2p and
 * ZB-V the pipeline term is each rank's order played on the chunks' pass
 * times and transfers instead, plan/span.h; the passes carry the CP
 * exchanges their compute stream waits for),
 * the DP sync being the gradient reduce(-scatter) and, under ZeRO, the
 * 16-bit parameter all-gather, each with what overlap_grad_reduce /
 * overlap_param_gather hide behind one micro-batch's backward / forward
 * (one per-layer bucket stays exposed; the hidden part slows compute by
 * the GPU's gpu.overlap_slowdown, as in the executor), and an encoder's reductions
 * after its backwards where grad_sync reduces every micro-batch
 * (mm_build_enc_early_syncs; its once-per-iteration reduce is left out),
 * with the slowest encoder stage joining the pipeline (pipeline placement),
 * its whole work added to the first stage (homogeneous) or before and after
 * it (colocated), or bounding the rate (disjoint).  With a workload file
 * the pipeline, encoder and FLOP terms come
 * from each iteration's drawn micro-batches instead (estimate.c,
 * drawn_terms), and the LLM's DP reduction runs beside the colocated
 * encoders' backwards.  With the data loader (data.workers >= 0) the
 * step adds the loader's steady-state shortfall (cost/loader.h
 * mm_sim_loader_short_s; one micro-batch's loading as --breakdown prices
 * it, m per replica) and its copies: a layout whose step is shorter than
 * its loader pays for it here, not only after rescoring.  Fills iteration time,
 * throughput, TFLOP/s, MFU and memory (oom); no critical path or trace.
 * Returns 0 or -code. */
int mm_sim_estimate(const mm_sim *sim, mm_metrics *metrics, mm_err *err);

/* The same, deciding memory as mm_sim_run does: with a workload file each
 * of the scenario's iterations draws its batch and forms its micro-batches
 * (mm_sim_iteration_costs) and mm_sim_data_memory walks them (oom and
 * oom_at say where a batch does not fit), not the early check's bound of
 * every micro-batch holding the workload's largest sample.  *bound (when
 * bound is not NULL) gets a lower bound on the event-level iteration time
 * from the same costs: per iteration the busiest GPU's compute plus its
 * optimizer step (estimate.c, iteration_bound), NAN when it does not fit.
 * Returns 0 or -code. */
int mm_sim_estimate_bound(const mm_sim *sim, mm_metrics *metrics, double *bound, mm_err *err);

#endif
