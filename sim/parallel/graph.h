/* graph.h - one training iteration as a graph of ops on simulated ranks.
 *
 * The builder (build.h) emits ops; the executor (exec/exec.h) runs them.  A simulated
 * rank stands for one tensor-parallel group (TP peers see the same data, so
 * they are collapsed: their collectives still cost what the whole TP group's
 * network costs).  Each rank has in-order streams, like CUDA streams: an op
 * starts when it is at the head of its stream and every op it depends on has
 * finished.  Ops of a collective (`coll` >= 0) start together, when every
 * member has reached it.  Point-to-point transfers live on no stream: they
 * start as soon as the data they carry exists (eager sends into buffers the
 * receiver posted ahead, as NCCL's p2p with Megatron's batched isend/irecv).
 * Not for: timing or metrics (exec layer). */
#ifndef MM_GRAPH_H
#define MM_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "hw/net.h"

/* compute: kernels and blocking communication; dp: data-parallel
 * collectives; side: communication overlapped with the compute stream
 * (TP overlap, ring attention); fill: kernels that run only while the
 * rank's GPU has no compute-stream kernel to run (an encoder in the LLM's
 * bubbles, train.encoder_schedule bubbles: exec/exec.h says how). */
enum { MM_STREAM_COMPUTE, MM_STREAM_DP, MM_STREAM_SIDE, MM_STREAM_FILL, MM_STREAM_COUNT, MM_STREAM_NONE = 255 };

/* What an op is, for metrics and timelines. */
typedef enum {
    MM_CAT_FWD, MM_CAT_BWD, MM_CAT_WGRAD, MM_CAT_OPT, /* compute */
    MM_CAT_TP, MM_CAT_PP, MM_CAT_DP, MM_CAT_CP, MM_CAT_EP, /* communication */
    MM_CAT_COUNT
} mm_op_cat;

extern const char *const mm_op_cat_names[];

static inline int mm_cat_is_comm(int cat) { return cat >= MM_CAT_TP; }

typedef struct mm_op {
    int32_t rank;      /* simulated rank */
    uint8_t stream;    /* MM_STREAM_* */
    uint8_t cat;       /* mm_op_cat */
    uint8_t module;    /* index into mm_graph.module_names (0: the LLM) */
    uint8_t flags;     /* MM_OPF_* */
    int16_t layer;     /* first layer of a compute chunk, -1 if none */
    int32_t stage, mb; /* pipeline stage and micro-batch, -1 if none */
    int32_t coll;      /* collective instance, -1 for compute */
    int32_t peer;      /* receiving rank of a transfer, else -1 */
    float host_s;      /* compute-stream ops: host seconds to issue it */
    double dur_s;      /* compute ops: duration; comm ops: set at start */
    double flops;      /* model FLOPs of this op on its TP group (metrics) */
    double hw_flops;   /* + recomputation */
    uint32_t ndeps;    /* number of ops this one waits for */
    uint32_t succ_off, nsucc; /* successors in mm_graph.succ */
    /* compute-stream ops: seconds after the host starts issuing it before
     * its kernels can run back to back (mm_build_op_host); the executor
     * starts it no earlier than that (exec.h) */
    float lead_s;
} mm_op;

/* mm_op.flags */
enum { MM_OPF_HOST_SYNC = 1 /* the host waits for the GPU to reach this op before issuing it */ };

/* One collective or transfer: `members` ops (of as many ranks) must reach
 * it; it moves `bytes` (nccl-tests' S) `count` times back to back over the
 * GPUs gpus[gpu_off .. gpu_off + n_gpus - 1]. */
typedef struct mm_coll {
    int kind;          /* mm_coll_kind */
    int members;
    int count;
    double bytes;
    uint32_t gpu_off, n_gpus;
    /* exec/symmetry.c: the collective stands for `replicas` copies of itself,
     * copy r on the GPUs + r x replica_stride (0 or 1: itself alone) */
    int replicas, replica_stride;
    /* SENDRECV: the NCCL communicator it runs on (hw/net.h mm_group_shape;
     * the builder sets it after mm_graph_add_coll), 0: the pair itself */
    int comm_ranks, comm_nodes;
} mm_coll;

#define MM_MAX_MODULES 4

typedef struct mm_graph {
    int n_ranks;
    int n_modules;                        /* "llm" and the encoders */
    char module_names[MM_MAX_MODULES][16];
    mm_op *ops;
    uint32_t n_ops, cap_ops;
    mm_coll *colls;
    uint32_t n_colls, cap_colls;
    int *gpus;               /* group members of every collective */
    uint32_t n_gpus, cap_gpus;
    uint32_t *succ;          /* CSR successor lists, built by mm_graph_finish */
    /* Edges while building: (from, to) pairs. */
    uint32_t *edges;
    size_t n_edges, cap_edges;
    /* GPUs of each simulated rank (its TP x CP group), CSR: rank r holds
     * rank_gpus[rank_gpu_off[r] .. rank_gpu_off[r+1]). */
    uint32_t *rank_gpu_off;
    int *rank_gpus;
    /* Program order per (rank, stream): op ids, CSR after finish. */
    uint32_t *stream_ops;
    uint32_t *stream_off;    /* n_ranks * MM_STREAM_COUNT + 1 */
    /* A counting graph (mm_graph_init_counting) stores nothing: its adds
     * only count ops, collectives, group members, edges and rank GPUs, so
     * that a build can be run once to size the real graph's arrays. */
    int counting;
    uint32_t n_rank_gpus;    /* counting: rank GPUs recorded */
    uint32_t cap_rank_gpus;  /* room in rank_gpus */
    /* the last collective's group (up to 16 GPUs): a collective over the
     * same GPUs shares its gpu_off (a rank's TP collectives follow one
     * another), in counting and real graphs alike */
    int last_gpus[16];
    uint32_t last_n, last_off;
    /* One DP replica standing for `replicas` identical ones (1: the whole
     * graph; mm_build_spec.one_replica, exec/symmetry.h).  Its ranks are
     * the whole graph's ranks 0, replicas, 2 replicas, ... (rank r of the
     * whole graph is r / replicas here); an op of another replica is
     * refused.  mm_graph_finish makes its collectives what running replica
     * 0 alone needs: one inside a replica stands for its `replicas` copies
     * (mm_coll.replicas, replica_stride = rep_stride GPUs apart), one
     * across them keeps replica 0's members of its group.  seg holds
     * n_seg (first, end) op ranges: the whole graph's ops, in id order,
     * are each range repeated `replicas` times (copy k: replica k's ops). */
    int replicas, rep_stride;
    uint32_t *seg, n_seg, cap_seg, seg_open;
} mm_graph;

/* What a graph holds, to reserve its arrays once (mm_graph_reserve). */
typedef struct mm_graph_size {
    uint32_t ops, colls, gpus, rank_gpus;
    size_t edges;
} mm_graph_size;

int mm_graph_init(mm_graph *g, int n_ranks);
/* A graph that only counts (see mm_graph.counting); mm_graph_finish and
 * mm_graph_free leave it as it is. */
int mm_graph_init_counting(mm_graph *g, int n_ranks);
/* What a (counting or real) graph holds so far. */
mm_graph_size mm_graph_size_of(const mm_graph *g);
/* Allocates the arrays for sz at once (an empty graph, after init), so that
 * building into it never grows them.  Returns 0 or -1. */
int mm_graph_reserve(mm_graph *g, const mm_graph_size *sz);
/* Makes g (after init, before any add) one replica standing for
 * `replicas` (see mm_graph.replicas) of ranks/replicas ranks, whose
 * copies lie `stride` GPUs apart.  Returns 0 or -1. */
int mm_graph_set_replicas(mm_graph *g, int replicas, int stride);
/* One replica's graph: the ops added since the last mark are followed, in
 * the whole graph, by their copies in replicas 1, 2, ... (a segment);
 * no-op on a whole graph.  Returns 0 or -1. */
int mm_graph_mark(mm_graph *g);
/* Tags op `id` with module m (no-op on a counting graph). */
void mm_graph_set_module(mm_graph *g, uint32_t id, int m);
/* Sets collective c's send communicator (mm_coll.comm_ranks, comm_nodes;
 * no-op on a counting graph).  The builder writes a graph only through
 * these functions, so that it can run into a counting one. */
void mm_graph_set_comm(mm_graph *g, uint32_t c, int ranks, int nodes);
void mm_graph_free(mm_graph *g);
/* Appends an op; program order on its stream is the order of appending.
 * Returns the op id, or -1 when out of memory. */
int64_t mm_graph_add_op(mm_graph *g, const mm_op *op);
/* Adds a collective over n gpus; returns its id or -1.  A group equal to
 * the previous collective's is not stored again: both name the same
 * gpus[gpu_off ..] (readers only read it). */
int64_t mm_graph_add_coll(mm_graph *g, int kind, int members, int count,
                          double bytes, const int *gpus, int n);
/* `to` waits for `from`. Returns 0 or -1. */
int mm_graph_dep(mm_graph *g, uint32_t from, uint32_t to);
/* Records the GPUs of rank r (ranks must be given in order 0, 1, ...).
 * Returns 0 or -1. */
int mm_graph_rank_gpus(mm_graph *g, int r, const int *gpus, int n);
/* Builds successor and stream lists (and, for one replica, its
 * collectives' members: -1 when a collective's members are neither all in
 * replica 0 nor replica 0's equal share).  Returns 0 or -1. */
int mm_graph_finish(mm_graph *g);

#endif
