/* coll_internal.h - what the files of the flow-model collectives (coll.c,
 * coll_a2a.c) share: the network's and a collective's state, and building
 * routes into flows.  Private to sim/hw; callers use coll.h.
 * Not for: the solver (flow.h) or routes themselves (topo.h). */
#ifndef MM_COLL_INTERNAL_H
#define MM_COLL_INTERNAL_H

#include "hw/coll.h"

struct mm_network {
    const mm_cluster *c;
    mm_engine *eng;
    mm_net_model model;
    int stepwise;
    mm_topo topo;
    mm_flownet *fn;
    uint32_t active;
    int *rl;       /* route being built */
    double *rc;
    size_t rlen, rcap;
    int oom;
    double xmax;   /* largest perturbation latency over the routes of a phase */
    /* aggregation (alltoall_flows): while `agg` is set, route_commit adds the
     * route's coefficients into acoef[] instead of starting a flow */
    int aggregate; /* allowed (mm_network_set_aggregate; on by default) */
    int agg;
    double *acoef; /* per link; 0 when untouched */
    int *atouch;   /* links touched, in first-touch order */
    size_t an;
    double abytes; /* bytes of each merged sub-flow */
    struct coll_op *free_ops; /* finished ops, reused: no allocation per collective once warm */
    int *sg;           /* sorted group scratch */
    int sg_cap;
    /* replicas of the collective being laid out (mm_coll_req.replicas):
     * the hops of the route being built, replayed shifted at commit */
    int reps, rstride;
    struct coll_hop *hops;
    size_t nhops, hcap;
};

/* A hop of a route (coll_route_hop), or a GPU's switch links (NVLS). */
typedef struct coll_hop {
    int src, dst, rail_out, rail_in, nvls;
    double coef;
} coll_hop;

typedef struct coll_op {
    mm_network *net;
    mm_coll_kind kind;
    mm_coll_algo algo;
    int *g;        /* members sorted by id (SENDRECV: {src, dst}) */
    int n, root;
    mm_group_shape s;
    double bytes;
    int count_left, phase, n_phases;
    uint32_t pending;
    double xlat_s; /* perturbation latency this phase pays after its flows */
    int *node_off; /* members of node X: g[node_off[X] .. node_off[X+1]-1] */
    int *nic_off;  /* distinct NICs of node X: nics[nic_off[X] ..] */
    int *nics;
    int cap;       /* room in g, node_off, nic_off, nics (pooled ops keep it) */
    int reps, rstride; /* mm_coll_req.replicas (>= 1), replica_stride */
    struct coll_op *next_free;
    mm_event_fn done;
    void *ctx;
    uint64_t arg;
} coll_op;

static inline void coll_route_clear(mm_network *net)
{
    net->rlen = 0;
    net->nhops = 0;
}

static inline int coll_nodes_of(const coll_op *op)
{
    return op->s.nodes;
}

static inline int coll_members(const coll_op *op, int X)
{
    return op->node_off[X + 1] - op->node_off[X];
}

static inline int coll_member(const coll_op *op, int X, int j)
{
    return op->g[op->node_off[X] + j];
}

/* Room for `need` route entries: 0, or -1 (and net->oom) when out of memory. */
int coll_route_fit(mm_network *net, size_t need);

/* Appends the links from GPU src to dst (rails across nodes) with coef. */
void coll_route_hop(mm_network *net, int src, int dst, int rail_out, int rail_in, double coef);

/* Appends GPU gpu's two switch links (NVLS) with coef. */
void coll_route_nvls(mm_network *net, int gpu, double coef);

/* Turns the route built so far into a flow of `bytes` (or, while
 * net->agg is set, into a sub-flow of the aggregate being merged). */
void coll_route_commit(coll_op *op, double bytes);

/* The flows of an all-to-all (coll_a2a.c): per pair, or as aggregates
 * where the group and the links are symmetric. */
void coll_alltoall_flows(coll_op *op);

#endif
