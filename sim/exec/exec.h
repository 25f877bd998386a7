/* exec.h - executes an op graph (parallel/graph.h) on the event engine
 * against the hardware models.
 *
 * Each simulated rank has in-order streams; an op starts when it heads its
 * stream and its dependencies are done; collective members start together
 * when the last one arrives and finish when the network model (hw/coll.h:
 * `analytic` alpha-beta, or `flow` with max-min sharing between everything
 * in flight) says the collective is done.  The cluster's perturbations
 * (hw/perturb.h) set each compute op's effective duration: its nominal
 * dur_s x the pace of the slowest GPU of its rank (rank_gpus), jitter
 * included; network perturbations live in the link graph.  Each rank's
 * host thread issues its compute-stream ops in order (mm_op.host_s, lead_s,
 * MM_OPF_HOST_SYNC): an op starts no earlier than its launch.  A rank's
 * fill stream (MM_STREAM_FILL) holds kernels of low priority: one starts
 * only while the rank's GPU runs no compute-stream kernel (a compute-stream
 * collective waiting or transferring leaves it free), and a compute kernel
 * that becomes ready meanwhile waits for the fill kernel to end (no
 * preemption), then goes first; fill kernels skip the host cursor.  Not for:
 * building graphs or computing metrics (iterate.c). */
#ifndef MM_EXEC_H
#define MM_EXEC_H

#include "engine/engine.h"
#include "hw/cluster.h"
#include "parallel/graph.h"

typedef enum { MM_EXEC_NET_ANALYTIC, MM_EXEC_NET_FLOW } mm_exec_net;

/* Runs the graph starting at the engine's current time.  On return
 * start[i] and end[i] hold every op's times (ns) and *t_end the time the last
 * op finished.  Returns 0, or -MM_EINTERNAL (err filled) when the graph
 * deadlocks (some op never ran) or memory runs out. */
int mm_exec_run(mm_engine *eng, const mm_graph *g, const mm_cluster *c,
                mm_exec_net net, mm_time *start, mm_time *end, mm_time *t_end,
                mm_err *err);

/* The executor's run-time invariants over one executed graph: every op ran
 * exactly once (runs[i] == 1; runs NULL: not checked), within [t0, t_end]
 * with end >= start, the ops of each stream one after the other (each
 * starts no earlier than the previous one ended), and a rank's fill
 * kernels never beside its compute-stream kernels.  mm_exec_run checks them
 * after every run: a debug build asserts, a release build returns the
 * error.  Returns 0 or -MM_EINTERNAL naming the op, rank and stream. */
int mm_exec_check(const mm_graph *g, const uint8_t *runs, const mm_time *start,
                  const mm_time *end, mm_time t0, mm_time t_end, mm_err *err);

/* What the perturbation model needs per op and per iteration. */
typedef struct mm_exec_opts {
    const double *mem_frac; /* per op: share of its nominal time in memory-bound
                               kernels (HBM perturbations and node groups' GPUs
                               scale that part); NULL: all compute-bound */
    uint64_t iteration;     /* selects the jitter stream (with c->pt.seed) */
    /* A compute op runs 1 + this times longer for as long as its rank has
     * overlapped communication in flight (a collective on the DP or side
     * stream, or a pipeline transfer): NCCL's kernels take SMs and HBM
     * bandwidth from it (gpu.overlap_slowdown of the topology, mm_gpu_spec).
     * 0: free overlap. */
    double overlap_slowdown;
    /* per op, NULL: not recorded.  When the rank's host began issuing the
     * op (compute stream; -1 for others), and the seconds its stream
     * waited for the host (exposed host time). */
    mm_time *host_start;
    double *host_wait;
    /* The graph runs as replica 0 of sym_replicas identical DP replicas,
     * sym_stride GPUs apart (exec/symmetry.h; 0: it is the whole): under
     * `flow` the network reduces its max-min problem by their symmetry
     * where every collective of the graph keeps it exact
     * (hw/coll.h, mm_network_symmetric); -1: not reduced (mm_sym_exec
     * fills 0 in). */
    int sym_replicas, sym_stride;
} mm_exec_opts;

/* Seconds a compute op loses to `overlapped_s` seconds of communication
 * beside it when it runs at 1 / (1 + slowdown) of its pace meanwhile
 * (slowdown: the cluster's gpu.overlap_slowdown, mm_gpu_spec); the
 * planner's pre-score (estimate.c) charges hidden communication the same. */
static inline double mm_overlap_delay(double overlapped_s, double slowdown)
{
    return overlapped_s * slowdown / (1.0 + slowdown);
}

/* mm_exec_run with options (NULL: as mm_exec_run). */
int mm_exec_run_opts(mm_engine *eng, const mm_graph *g, const mm_cluster *c,
                     mm_exec_net net, const mm_exec_opts *opts, mm_time *start, mm_time *end,
                     mm_time *t_end, mm_err *err);

#endif
