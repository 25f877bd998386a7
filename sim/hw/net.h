/* net.h - collective kinds and algorithms, group shapes, and the
 * `analytic` network model: alpha-beta per hierarchy level.
 *
 * Hockney's alpha-beta model per level (NVLink/PCIe inside a node, NICs
 * and the fabric across nodes), with the step counts of Thakur,
 * Rabenseifner and Gropp, "Optimization of Collective Communication
 * Operations in MPICH" (IJHPCA 2005) for rings, of Sanders, Speck and
 * Traeff, "Two-tree algorithms for full bandwidth broadcast, reduction and
 * scan" (Parallel Computing 2009) for NCCL's double binary tree, and
 * NVIDIA's NVLink SHARP (in-switch reduction) for NVLS.  Bandwidth terms use
 * the effective link rates of topo.h, so that a large all-reduce reproduces
 * the nccl-tests busbw the topology file cites.  No contention: two
 * collectives on the same links each get the full bandwidth; the `flow`
 * model (coll.h over flow.h) shares them, and with one collective alone
 * both models agree (tests/test_coll.c).  Not for: the asynchronous
 * interface the executor uses (coll.h). */
#ifndef MM_NET_H
#define MM_NET_H

#include "hw/cluster.h"

typedef enum {
    MM_COLL_ALLREDUCE, MM_COLL_ALLGATHER, MM_COLL_REDUCESCATTER,
    MM_COLL_ALLTOALL, MM_COLL_BROADCAST, MM_COLL_SENDRECV, MM_COLL_COUNT
} mm_coll_kind;

extern const char *const mm_coll_names[]; /* "allreduce", ... */

/* Algorithms, as NCCL_ALGO names them.  AUTO picks the fastest that can
 * run the collective on the group (NCCL's tuner does the same with its
 * own latency/bandwidth tables).  COLLNET: in-network reduction across
 * nodes (SHARP in the InfiniBand switches, fabric.sharp), with NVLS inside
 * each node when the node has it (NCCL's NVLS+SHARP), else a reduce-scatter
 * and all-gather over NVLink (CollNet Direct). */
typedef enum {
    MM_ALGO_AUTO, MM_ALGO_RING, MM_ALGO_TREE, MM_ALGO_HIER, MM_ALGO_NVLS, MM_ALGO_COLLNET, MM_ALGO_COUNT
} mm_coll_algo;

extern const char *const mm_coll_algo_names[]; /* "auto", "ring", ... */

/* nccl-tests' bus-bandwidth factor for a group of n (doc/PERFORMANCE.md):
 * all-reduce 2(n-1)/n (for every algorithm, NVLS included, as the
 * published NVLS figures use it), all-gather / reduce-scatter / all-to-all
 * (n-1)/n, broadcast and send/recv 1. */
double mm_coll_bus_factor(mm_coll_kind kind, int n);

/* How a group sits on the cluster (members sorted by GPU id). */
typedef struct mm_group_shape {
    int n;            /* members */
    int nodes;        /* distinct nodes */
    int max_per_node, min_per_node;
    int channels;     /* rings across nodes: NICs serving the members, fewest over nodes */
    int leaf_groups;  /* distinct groups of nodes_per_leaf nodes */
    int crossings;    /* ring hops between consecutive nodes in different leaf groups */
    int p2p_spine;    /* n == 2 on two nodes whose own NICs hang off different leaves */
    /* SENDRECV: the NCCL communicator the transfer is issued on (Megatron's
     * pipeline group), whose rank and node counts set NCCL's channel count
     * (mm_net_p2p_channels); 0: the pair itself.  Set by the caller. */
    int comm_ranks, comm_nodes;
} mm_group_shape;

void mm_group_shape_of(const mm_cluster *c, const int *sorted, int n, mm_group_shape *s);

/* Whether `algo` (not AUTO) can run `kind` on the group: 0, or -1 with a
 * reason in why[len]. */
int mm_coll_algo_check(const mm_cluster *c, mm_coll_kind kind, mm_coll_algo algo,
                       const mm_group_shape *s, char *why, size_t len);

/* The algorithm AUTO resolves to: the one with the smallest analytic time
 * (ties go to the earlier in the enum). */
mm_coll_algo mm_coll_auto(const mm_cluster *c, mm_coll_kind kind, const mm_group_shape *s,
                          double bytes);
/* The same among the algorithms not in `except` (a mask of 1 << algo). */
mm_coll_algo mm_coll_auto_except(const mm_cluster *c, mm_coll_kind kind, const mm_group_shape *s,
                                 double bytes, unsigned except);

/* NCCL's reduction operators and data types as nccl-tests names them
 * (src/common.cu of NVIDIA/nccl-tests: -o, -d), with each type's size. */
typedef enum { MM_REDOP_SUM, MM_REDOP_PROD, MM_REDOP_MAX, MM_REDOP_MIN, MM_REDOP_AVG, MM_REDOP_MULSUM,
               MM_REDOP_COUNT } mm_redop;
extern const char *const mm_redop_names[]; /* "sum", "prod", "max", "min", "avg", "mulsum" */
typedef struct mm_coll_dtype {
    const char *name; /* nccl-tests' name: int8, uint8, int32, uint32, int64, uint64, half,
                         float, double, bfloat16, f8e4m3, f8e5m2 */
    int bytes;
} mm_coll_dtype;
extern const mm_coll_dtype mm_coll_dtypes[]; /* ends with {NULL, 0} */
/* Whether NVLink SHARP has a kernel for this reduction: NCCL's
 * ncclNvlsSupported (src/include/device.h of NVIDIA/nccl): sums of 32- and
 * 64-bit integers, half, bfloat16, float and double, min/max of the
 * integers, half and bfloat16; no product, average (a pre- or post-scaled
 * sum), premultiplied sum, or 8-bit type. */
bool mm_coll_nvls_supports(mm_redop op, const mm_coll_dtype *type);

/* The two halves of an in-network (COLLNET) all-reduce of S bytes, which
 * run pipelined (the time is their max): inside each node (NVLS, or a
 * reduce-scatter + all-gather over NVLink; 0 with one GPU a node), and
 * through the NICs and the switches' reduction (S over the k NICs at
 * line rate x sharp_eff: each NIC sends its share once and receives the
 * sum once, where a ring moves 2(N-1)/N of it). */
double mm_net_collnet_intra_time(const mm_cluster *c, const mm_group_shape *s, double S);
double mm_net_collnet_net_time(const mm_cluster *c, const mm_group_shape *s, double S);

/* Latency term (seconds) of a collective: the alphas of the steps the
 * algorithm takes.  Shared by both network models. */
/* node.nccl_protocols: what a ring all-reduce, all-gather or
 * reduce-scatter of S bytes over the GPUs of one node takes beyond
 * mm_net_latency + the bandwidth term at the ring's busbw, when it runs as
 * NCCL's tuning model times the protocol NCCL picks for it: the least over
 * LL, LL128 and Simple of baseLat + steps x hwLat + bus factor x S / busBw
 * (busBw: the ring's; LL min(87.7 GB/s, a quarter, a third for an
 * all-gather or reduce-scatter), LL128 0.92 of it), NCCL 2.18's constants
 * (NVIDIA/nccl v2.18.6-1 src/graph/tuning.cc: baseLat, hwLat NVLink or
 * PCI ring, llMaxBws Ampere/Hopper-N1, the LL and LL128 factors).  0
 * without the key, across nodes, or for another algorithm or kind; never
 * negative.  Added to the latency in both network modes. */
double mm_net_nccl_proto_extra(const mm_cluster *c, mm_coll_kind kind, mm_coll_algo algo, const mm_group_shape *s,
                               double S);

double mm_net_latency(const mm_cluster *c, mm_coll_kind kind, mm_coll_algo algo,
                      const mm_group_shape *s);

/* NCCL's p2p channels per peer across nodes, in a communicator of `ranks`
 * GPUs on `nodes` nodes, by the rule of NCCL `version` (major x 100 +
 * minor, 208..229; net.c says what each version does): `nics` NICs of
 * `nic_gb_s` GB/s each near a GPU, whose own PCIe path runs `gpu_gb_s`
 * GB/s (0: unknown, one NIC suffices), `p2p_channels` the communicator's
 * p2p channels (p2pnChannels).  A power of two in [1, p2p_channels];
 * 0 for a version outside 2.8..2.29. */
int mm_nccl_net_channels_per_peer(int version, int nics, double nic_gb_s, double gpu_gb_s, int ranks, int nodes,
                                  int p2p_channels);

/* The channels NCCL moves one send of S bytes on, in a communicator of
 * `ranks` GPUs on `nodes` nodes (NCCL 2.18-2.19 scheduleP2pTasksToPlan,
 * net.c); 1 when the cluster has no p2p curve. */
int mm_net_p2p_channels(const mm_cluster *c, int ranks, int nodes, double S);

/* Seconds a lone send/recv of S bytes between the two members of s takes
 * by the p2p model (net.c): the fixed p2p time plus S over the channels'
 * rate, at most the link ceiling of the measured curve.  NAN without a
 * curve for that path (node.p2p_sendrecv, fabric.p2p_sendrecv). */
double mm_net_p2p_time(const mm_cluster *c, const mm_group_shape *s, double S);

/* Seconds that time exceeds the wire model (alpha + S / link rate); 0
 * without a curve or when the wire is slower.  Both network models add it
 * as latency, so a lone transfer takes the p2p time and contention still
 * shares the links. */
double mm_net_p2p_extra(const mm_cluster *c, const mm_group_shape *s, double S);

/* The same lone transfer between GPUs src and dst on a communicator of
 * comm_ranks GPUs over comm_nodes nodes (0, 0: the pair itself), by the
 * analytic network model: what the run charges one pipeline hop alone. */
double mm_net_p2p_pair_time(const mm_cluster *c, int src, int dst, double S, int comm_ranks, int comm_nodes);

/* Analytic time (seconds) of one collective of `bytes` (nccl-tests' S) with
 * a resolved algorithm (not AUTO; SENDRECV and ALLTOALL ignore it). */
double mm_net_analytic_shape_time(const mm_cluster *c, mm_coll_kind kind, mm_coll_algo algo,
                                  const mm_group_shape *s, double bytes);

/* Same over the group of global GPU ids gpus[0..n-1] (any order) with the
 * ring algorithm (direct transfer for SENDRECV, where gpus = {src, dst}).
 * A group of one costs nothing; NAN when out of memory. */
double mm_net_analytic_time(const mm_cluster *c, mm_coll_kind kind,
                            const int *gpus, int n, double bytes);

/* NCCL's double binary tree over N nodes: the parent of node r in tree t
 * (0 or 1; tree 1 mirrors tree 0), -1 for a root.  Tree 0 is the in-order
 * binary tree on labels 1..N. */
int mm_dtree_parent(int t, int r, int N);

/* The most edges any of the N nodes has over both trees of
 * mm_dtree_parent (what bounds a double binary tree's bandwidth term). */
int mm_dtree_max_degree(int N);

/* Sorts a copy of gpus (caller frees); NULL when out of memory. */
int *mm_group_sorted(const int *gpus, int n);
/* The same into out[0..n-1] (no allocation). */
void mm_group_sort_into(const int *gpus, int n, int *out);

#endif
