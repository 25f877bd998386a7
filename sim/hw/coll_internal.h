/* coll_internal.h - what the files of the flow-model collectives (coll.c,
 * coll_a2a.c, coll_route.c, coll_cache.c) share: the network's and a
 * collective's state, and building routes into flows (coll_route.c).  Private to sim/hw; callers use coll.h.
 * Not for: the solver (flow.h) or routes themselves (topo.h). */
#ifndef MM_COLL_INTERNAL_H
#define MM_COLL_INTERNAL_H

#include "hw/coll.h"

/* A collective's setup, remembered per distinct request (coll_cache.c):
 * what mm_network_start derives from the request before anything moves
 * (the sorted members, their shape, the algorithm, the node and NIC
 * layout, the analytic time) and, per phase, its latency and the flows
 * add_flows started (route, coefficients, bytes).  A TP group or a
 * pipeline pair repeats the same request thousands of times an iteration:
 * replaying the record starts the same flows in the same order as
 * building them again (every step of it is a function of the request and
 * the fixed topology), without the sort, the shape, the algorithm's
 * choice and the route walks. */
#define MM_COLL_PLAN_PHASES 3 /* phases recorded (hier has 3); later ones are built */
typedef struct coll_flowrec {
    uint32_t off, len; /* route entries in the cache's link and coefficient pools */
    double bytes;
} coll_flowrec;

typedef struct coll_plan {
    uint64_t hash;
    int kind, algo_req, n, count, reps, stride;
    int comm_ranks, comm_nodes; /* mm_coll_req: a send's communicator */
    double bytes;
    uint32_t key_off;  /* the request's GPUs as given (ip pool) */
    uint32_t g_off;    /* coll_op.g once set up: n ints (ip pool) */
    uint32_t lay_off;  /* node_off (nodes + 1), nic_off (nodes + 1), nics (nn) (ip pool) */
    int nn;            /* distinct NICs (nics entries) */
    mm_coll_algo algo;
    mm_group_shape s;
    int n_phases;
    double t_analytic; /* count x analytic time (the analytic path), or 0 */
    int analytic;      /* the request completes at now + t_analytic */
    mm_time lat[MM_COLL_PLAN_PHASES];
    uint8_t lat_ok[MM_COLL_PLAN_PHASES];
    uint8_t rec[MM_COLL_PLAN_PHASES]; /* 0 not yet, 1 recorded, 2 not recordable */
    uint32_t rec_off[MM_COLL_PLAN_PHASES], rec_n[MM_COLL_PLAN_PHASES]; /* in fr */
    double xmax[MM_COLL_PLAN_PHASES];
} coll_plan;

typedef struct coll_cache {
    coll_plan *p;
    size_t np, capp;
    int32_t *slot;     /* open addressing: plan index, -1 empty */
    uint32_t nslot;    /* power of two (0: not allocated yet) */
    int *ip;           /* requests' GPU lists, set-up members and layouts */
    size_t nip, capip;
    coll_flowrec *fr;  /* recorded flows */
    size_t nfr, capfr;
    int *lk;           /* their routes */
    double *cf;
    size_t nlk, caplk, capcf;
    int32_t recording; /* plan whose phase add_flows is recording, -1 none */
    int rec_phase;
    int full;          /* past its size limit: nothing more is remembered */
} coll_cache;

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
    mm_flow_done_fn flow_done; /* a route_commit flow's end: coll.c's phase machine */
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
    coll_cache cache;
    /* the symmetric reduction (coll_sym.c, coll.h mm_network_symmetric) */
    int sym;      /* reductions in force (MM_SYM_*) */
    int sym_cand; /* what the topology allows, while probing */
    int sym_bad;  /* what a probed flow broke */
    int probing;  /* lay out and check flows, start none */
    int sym_proven; /* the route being built is invariant by its structure: not checked */
    int ring_skip;  /* ring_channel: the proven ring's reductions, its hops left out where they drop every link */
    int sym_noproof; /* mm_network_set_sym_proofs off: every route laid out and checked */
    int sym_B, sym_nb, sym_p;  /* nodes of a block (dp x stride GPUs), blocks; period p nodes */
    int sym_reps, sym_stride;  /* the replicas and their GPU stride */
    uint8_t *sym_blk;          /* per block: the job's (replica 0's GPUs and their copies) */
    int sym_lg, sym_lsh, sym_ssh; /* leaf groups per block; a group's shift: leaves, spines */
    double *symw;              /* per link: a route's coefficients, 0 when untouched */
    int *symt;                 /* links touched */
    /* SHARP trees (fabric.sharp_trees): trees in use per NIC (node x
     * nics_per_node + nic), one op's need per NIC (scratch), and the
     * COLLNET ops waiting for a tree, oldest first */
    int *sharp_use, *sharp_need;
    struct coll_op *sharp_wait;
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
    int32_t plan;      /* its coll_plan (coll_cache.c), -1 none */
    int lazy;          /* g and the layout not copied from the plan yet */
    struct coll_op *next_free;
    struct coll_op *next_wait; /* net->sharp_wait */
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

/* coll_route.c.  Room for `need` route entries: 0, or -1 (and net->oom)
 * when out of memory. */
int coll_route_fit(mm_network *net, size_t need);

/* Appends the links from GPU src to dst (rails across nodes) with coef. */
void coll_route_hop(mm_network *net, int src, int dst, int rail_out, int rail_in, double coef);

/* Appends GPU gpu's two switch links (NVLS) with coef. */
void coll_route_nvls(mm_network *net, int gpu, double coef);

/* Turns the route built so far into a flow of `bytes` (or, while
 * net->agg is set, into a sub-flow of the aggregate being merged). */
void coll_route_commit(coll_op *op, double bytes);

/* coll_sym.c.  Which reductions the route built so far (rl, rc) keeps
 * exact: the MM_SYM_* of net->sym_cand whose images it loads alike. */
int coll_sym_check(mm_network *net);
/* Drops from the route built so far the links net->sym leaves out. */
void coll_sym_reduce(mm_network *net);
/* The reductions of `on` (MM_SYM_*) that a ring over op's members (one
 * flow per channel, every hop, coll.c ring_channel) keeps exact by its
 * structure, proven without laying it out (coll_sym.c). */
int coll_sym_ring_proven(const mm_network *net, const coll_op *op, int on);
/* The same for an all-to-all moving as aggregates (coll_a2a.c); for a
 * collective copied as the replicas (replay_replicas). */
int coll_sym_a2a_proven(const mm_network *net, const coll_op *op, int on);
int coll_sym_copies_proven(const mm_network *net, const coll_op *op, int on);
/* Whether the reductions `on` keep node X's links; the fabric links of
 * X's leaves; some link of a hop from node X to node Y (a representative
 * or a link outside the job). */
int coll_sym_node_kept(const mm_network *net, int on, int X);
int coll_sym_leaf_kept(const mm_network *net, int on, int X);
int coll_sym_hop_kept(const mm_network *net, int on, int X, int Y);

/* coll_cache.c.  The plan of this request (replicas >= 1), or -1. */
int32_t coll_cache_find(mm_network *net, const mm_coll_req *req, int reps, int stride);
/* Remembers the setup of this request: `op` just laid out, or (op NULL)
 * the analytic path's algorithm and time.  Returns its plan index or -1
 * (not remembered: too large, or out of memory). */
int32_t coll_cache_add(mm_network *net, const mm_coll_req *req, int reps, int stride, mm_coll_algo algo,
                       const coll_op *op, double t_analytic);
/* Sets op up from plan pl (op's arrays have room for pl's n); its member
 * and layout arrays are filled by coll_cache_materialize, which whatever
 * builds routes calls first (a replayed phase needs neither). */
void coll_cache_apply(const mm_network *net, int32_t pl, coll_op *op);
void coll_cache_materialize(const mm_network *net, coll_op *op);
/* Recording the flows of op's current phase: begin before building them,
 * coll_cache_note for each flow started, end after (xmax of the phase). */
void coll_cache_record_begin(mm_network *net, const coll_op *op);
void coll_cache_note(mm_network *net, const int *links, const double *coef, size_t len, double bytes);
void coll_cache_record_end(mm_network *net);
/* Starts the recorded flows of op's current phase (1), or returns 0 when
 * there is no record to replay. */
int coll_cache_replay(mm_network *net, coll_op *op, mm_flow_done_fn done);
/* Forgets the recorded flows, keeping the setups (the next start of each
 * request builds and records its flows again). */
void coll_cache_forget_flows(coll_cache *cc);
void coll_cache_clear(coll_cache *cc);
void coll_cache_free(coll_cache *cc);

/* The flows of an all-to-all (coll_a2a.c): per pair, or as aggregates
 * where the group and the links are symmetric. */
void coll_alltoall_flows(coll_op *op);

#endif
