/* coll.h - collectives on the engine: one asynchronous interface over both
 * network models.
 *
 *   mm_network_alloc(cluster, engine, model)   builds the link graph
 *   mm_network_start(net, request, done, ...)  starts a collective now;
 *                                              done(eng, ctx, arg) runs on
 *                                              the engine when it finishes
 *
 * `analytic` (net.h): the completion is scheduled at now + the alpha-beta
 * time; nothing else is shared.  `flow` (flow.h): the collective becomes
 * the concurrent flows of its steady state on routes of topo.h, plus the
 * same latency terms as the analytic model, paid before the data moves.
 * Flows share links max-min fairly with every other collective in flight,
 * so contention is modeled.
 *
 * Steady state, per algorithm (S = message size, k = channels):
 *   ring      one flow per channel whose route is every hop of the ring
 *             (intra-node hops over NVLink/PCIe, one hop per node boundary
 *             through NIC c of both nodes, NCCL's PXN when the exiting GPU
 *             is not the one NIC c serves); it moves f S / k bytes
 *             (f = 2(n-1)/n all-reduce, (n-1)/n all-gather/reduce-scatter,
 *             1 broadcast, whose ring is open at the root).  A chunked,
 *             pipelined ring moves f S / k through every hop at the rate of
 *             its slowest hop: that is this flow.
 *   tree      across nodes two binary trees (mirror images), k channels
 *             each, one flow per (tree, channel) of S / 2k bytes over the
 *             reduce and broadcast edges and the chains inside the nodes.
 *   hier      three phases in sequence: reduce-scatter in every node (one
 *             ring flow per node), all-reduce across nodes of each local
 *             GPU's 1/m share (one ring flow per local index, rail-aligned),
 *             all-gather in every node.
 *   nvls      one flow through every member's switch links, loading each
 *             with (1 + 1/n) bytes per byte (reduce in the switch, then
 *             multicast), at the NVLS efficiency.
 *   alltoall  one flow per ordered pair inside a node (S/n); across nodes
 *             one flow per (source node, destination GPU) of m S / n bytes,
 *             rail-aligned (the NVLink hop of PXN is not modeled).  When
 *             the group and the links are symmetric these move as two
 *             aggregate flows (intra-node, cross-node) whose coefficient on
 *             a link counts the pairs crossing it: the same max-min rates
 *             with O(1) flows instead of O(n^2/m) (mm_network_set_aggregate).
 *   sendrecv  one flow, source's NIC to destination's NIC.
 * The step-by-step ring (every step its own set of flows, one per hop, and
 * its own alpha) is available for checking (mm_network_set_stepwise); with
 * a single collective both give the same time (tests/test_coll.c).
 * Not for: choosing what to communicate (the run layer does that). */
#ifndef MM_COLL_H
#define MM_COLL_H

#include "engine/engine.h"
#include "hw/flow.h"
#include "hw/net.h"
#include "hw/topo.h"

typedef enum { MM_NET_MODEL_FLOW, MM_NET_MODEL_ANALYTIC } mm_net_model;

extern const char *const mm_net_model_names[]; /* "flow", "analytic" */

typedef struct mm_coll_req {
    mm_coll_kind kind;
    mm_coll_algo algo;  /* AUTO, or forced */
    const int *gpus;    /* global GPU ids; SENDRECV: {src, dst}; BROADCAST: root first */
    int n;
    double bytes;       /* nccl-tests' S */
    int count;          /* run back to back this many times (>= 1) */
    /* SENDRECV: the communicator it is issued on (mm_group_shape), 0: the
     * pair itself */
    int comm_ranks, comm_nodes;
    /* The reduction has no NVLS kernel (its operator or data type; NCCL's
     * ncclNvlsSupported, mm_coll_nvls_supports): AUTO never resolves to
     * nvls and a forced nvls is refused.  false for every request the run
     * layer makes (bf16/fp32 sums). */
    bool no_nvls;
} mm_coll_req;

typedef struct mm_network mm_network;

mm_network *mm_network_alloc(const mm_cluster *c, mm_engine *eng, mm_net_model model,
                             mm_err *err);
void mm_network_free(mm_network *net);

/* Ring collectives step by step instead of in steady state (flow model). */
void mm_network_set_stepwise(mm_network *net, int on);

/* Dense collectives (all-to-all) as aggregate flows where max-min gives
 * all their per-pair flows one rate (coll.c, can_aggregate); on by
 * default.  Off: one flow per pair, for checking (tests/test_net.c). */
void mm_network_set_aggregate(mm_network *net, int on);

/* Starts the collective now.  Returns 0, -MM_EINPUT when a forced
 * algorithm cannot run it (message says why), -MM_EINTERNAL when out of
 * memory.  *used (may be NULL) receives the algorithm that runs. */
int mm_network_start(mm_network *net, const mm_coll_req *req, mm_event_fn done, void *ctx,
                     uint64_t arg, mm_coll_algo *used, mm_err *err);

/* The same, with the collective running at the same time on `replicas`
 * copies of the group, copy r on gpus + r x stride (identical DP replicas
 * simulated once, exec/symmetry.h): under `flow` their flows load the links
 * as aggregates with this one's (one flow for a flow of every copy, its
 * coefficients the copies' summed), which max-min gives this one's rate
 * when the copies are symmetric.  replicas <= 1: mm_network_start. */
int mm_network_start_replicated(mm_network *net, const mm_coll_req *req, int replicas, int stride,
                                 mm_event_fn done, void *ctx, uint64_t arg, mm_coll_algo *used, mm_err *err);

/* Identical DP replicas simulated once (exec/symmetry.h), under `flow`:
 * the max-min problem reduced by the replicas' symmetry.  When every flow
 * loads node X's links as it loads node X + p's (p: the nodes of one
 * replica, or 1 when several replicas share a node), the constraints of
 * those links are the same inequality, and keeping one of each set (the
 * first p nodes of the job) gives every flow the same rate; likewise a
 * fabric link and its image under a shift by one leaf group (the
 * D-mod-k spine moving with it) when every flow loads them alike.
 * Routes then hold the representative links only: a ring across every
 * node costs what one across p nodes does.  Proven per request, not
 * assumed: mm_network_symmetric says which reductions the topology allows
 * (no perturbation, no node groups, whole nodes; the fabric one when the
 * job fills whole leaf groups and the spine shift wraps) for the job of
 * `replicas` copies `stride` GPUs apart of replica 0's n GPUs, and starts
 * probing; mm_network_symmetric_probe lays out every phase's flows of a
 * request (replicated as mm_network_start_replicated would) without
 * starting them and checks each flow's per-link coefficients against
 * their images; mm_network_symmetric_done keeps the reductions no probed
 * flow broke and returns them (MM_SYM_NODES | MM_SYM_FABRIC, 0: full
 * routes).  Every request started afterwards must have been probed. */
#define MM_SYM_NODES 1
#define MM_SYM_FABRIC 2
int mm_network_symmetric(mm_network *net, int replicas, int stride, const int *gpus, int n);
void mm_network_symmetric_probe(mm_network *net, const mm_coll_req *req, int replicas, int stride);
int mm_network_symmetric_done(mm_network *net);
/* Where a request's structure proves the reductions exact (coll_sym.c: a
 * ring whose nodes the permutations map onto themselves, an aggregate
 * all-to-all likewise, a collective inside a node copied as the
 * replicas), the probe neither lays it out in full nor checks it, and its
 * routes are built from the hops the reductions keep (the same entries).
 * On by default; off (before mm_network_symmetric): every request laid
 * out and checked, for checking (tests/test_net.c). */
void mm_network_set_sym_proofs(mm_network *net, int on);

/* Collectives in flight. */
uint32_t mm_network_active(const mm_network *net);
const mm_topo *mm_network_topo(const mm_network *net);
mm_flownet *mm_network_flows(mm_network *net); /* NULL under analytic */

/* Seconds one collective takes alone on an otherwise idle network, under
 * the given model (runs a private engine for `flow`).  NAN on error. */
double mm_coll_time(const mm_cluster *c, mm_net_model model, const mm_coll_req *req,
                    mm_coll_algo *used, mm_err *err);

#endif
