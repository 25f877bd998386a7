/* symmetry.h - identical data-parallel replicas simulated once.
 *
 * With a text or fixed workload every DP replica gets the same
 * micro-batches, so (without perturbations, which may slow one GPU) its
 * ops take the same times as replica 0's.  The iteration's graph is then
 * run as replica 0 alone: its own ops and edges, its collectives that
 * span the replicas (DP gradient sync, the colocated encoder's reshard)
 * still over their whole groups with replica 0's share of the members,
 * and, under `flow`, its replica-local collectives (TP, pipeline
 * transfers, CP) standing for their copies in every replica, whose flows
 * load the links beside its own (hw/coll.h, mm_network_start_replicated).
 * Every op of the graph then takes its replica-0 counterpart's times, so
 * metrics, stages and the critical path are computed on the whole graph
 * as before.  Under `analytic` the result is the full run's bit for bit;
 * under `flow` within the symmetry of the fabric (tests/test_scale.c).
 * Not for: mixture or trace workloads (replicas differ), perturbed
 * clusters, own-GPU encoders, expert parallelism. */
#ifndef MM_SYMMETRY_H
#define MM_SYMMETRY_H

#include "exec/exec.h"
#include "parallel/build.h"
#include "scenario/sim.h"

/* Whether the scenario's replicas are identical and collapsible (and
 * sim->no_symmetry is not set). */
bool mm_sym_applies(const mm_sim *sim);

/* Whether the iteration can be built as replica 0 alone
 * (mm_build_spec.one_replica), its collapse never built: the replicas are
 * identical and collapsible (mm_sym_applies), sim->full_build is not set,
 * a replica moved by its GPU stride keeps its rails (as mm_sym_exec
 * requires), every replica's micro-batch and encoder costs are replica
 * 0's, and no colocated encoder has per-rank work or post-balancing its
 * all-to-alls.  The graph's sums then follow the whole graph's order
 * (mm_graph.seg), so that every metric keeps its bits. */
bool mm_sym_build_once(const mm_sim *sim, const mm_build_spec *spec);

/* Runs g (ranks d + dp x s, dp replicas) as its replica 0, as above, and
 * fills start/end for every op of g and *t_end.  A graph that is not dp
 * identical replicas (op counts, costs, edges or GPU strides differ) runs
 * whole, as mm_exec_run_opts.  Returns 0 or -MM_EINTERNAL. */
int mm_sym_exec(mm_engine *eng, const mm_graph *g, int dp, const mm_cluster *c, mm_exec_net net,
                const mm_exec_opts *opts, mm_time *start, mm_time *end, mm_time *t_end, mm_err *err);

#endif
