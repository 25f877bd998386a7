/* coll.c - collective algorithms as flows (coll.h), and the one interface
 * the executor and `mmsim collective` use for both network models.
 * Not for: the max-min solver (flow.c), routes (topo.c) and their flows
 * (coll_route.c), or the analytic formulas (net.c). */
#include "hw/coll.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hw/coll_internal.h"
#include "hw/flow.h"

const char *const mm_net_model_names[] = {"flow", "analytic", NULL};

static void on_flow_done(void *ctx, uint64_t arg);

mm_network *mm_network_alloc(const mm_cluster *c, mm_engine *eng, mm_net_model model,
                             mm_err *err)
{
    mm_network *net = calloc(1, sizeof *net);
    if (!net) {
        mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        return NULL;
    }
    net->c = c;
    net->eng = eng;
    net->model = model;
    net->cache.recording = -1;
    net->flow_done = on_flow_done;
    if (mm_topo_build(&net->topo, c, err)) {
        free(net);
        return NULL;
    }
    if (model == MM_NET_MODEL_FLOW) {
        net->fn = mm_flownet_alloc(eng, net->topo.n_links, net->topo.cap);
        net->acoef = calloc((size_t)net->topo.n_links + 1, sizeof *net->acoef);
        net->atouch = malloc(((size_t)net->topo.n_links + 1) * sizeof *net->atouch);
        net->aggregate = 1;
        if (c->sharp) {
            size_t nics = (size_t)c->nodes * (size_t)c->nics_per_node;
            net->sharp_use = calloc(nics, sizeof *net->sharp_use);
            net->sharp_need = calloc(nics, sizeof *net->sharp_need);
        }
        if (!net->fn || !net->acoef || !net->atouch || (c->sharp && (!net->sharp_use || !net->sharp_need))) {
            mm_network_free(net);
            mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory for the flow model");
            return NULL;
        }
    }
    return net;
}

void mm_network_free(mm_network *net)
{
    if (!net)
        return;
    mm_flownet_free(net->fn);
    mm_topo_free(&net->topo);
    free(net->rl);
    free(net->rc);
    free(net->acoef);
    free(net->atouch);
    free(net->sg);
    free(net->hops);
    free(net->symw);
    free(net->symt);
    free(net->sym_blk);
    free(net->sharp_use);
    free(net->sharp_need);
    while (net->sharp_wait) { /* stopped with a collective still waiting for a tree */
        coll_op *op = net->sharp_wait;
        net->sharp_wait = op->next_wait;
        op->next_free = net->free_ops;
        net->free_ops = op;
    }
    coll_cache_free(&net->cache);
    while (net->free_ops) {
        coll_op *op = net->free_ops;
        net->free_ops = op->next_free;
        free(op->g);
        free(op->node_off);
        free(op->nic_off);
        free(op->nics);
        free(op);
    }
    free(net);
}

void mm_network_set_stepwise(mm_network *net, int on)
{
    net->stepwise = on;
    coll_cache_clear(&net->cache); /* the setups it remembers depend on it */
}

void mm_network_set_aggregate(mm_network *net, int on)
{
    net->aggregate = on;
    coll_cache_clear(&net->cache);
}

void mm_network_set_sym_proofs(mm_network *net, int on)
{
    net->sym_noproof = !on;
}

uint32_t mm_network_active(const mm_network *net)
{
    return net->active;
}

const mm_topo *mm_network_topo(const mm_network *net)
{
    return &net->topo;
}

mm_flownet *mm_network_flows(mm_network *net)
{
    return net->fn;
}

/* ---- group layout ------------------------------------------------------ */

/* Index (within node X) where channel c enters: the first member that
 * channel c's NIC serves. */
static int entry_of(const coll_op *op, int X, int c)
{
    const mm_cluster *cl = op->net->c;
    int nic = op->nics[op->nic_off[X] + c];
    for (int j = 0; j < coll_members(op, X); j++)
        if (mm_cluster_nic_of(cl, coll_member(op, X, j)) == nic)
            return j;
    return 0;
}

static int rail(const coll_op *op, int X, int c)
{
    return op->nics[op->nic_off[X] + c];
}

/* node_off, nic_off, nics from the sorted members (arrays of op->cap >= n + 1). */
static int layout(coll_op *op)
{
    const mm_cluster *c = op->net->c;
    int N = op->s.nodes;
    int X = -1, prev = -1, last_nic = -1, nn = 0;
    for (int i = 0; i < op->n; i++) {
        int node = mm_cluster_node_of(c, op->g[i]), k = mm_cluster_nic_of(c, op->g[i]);
        if (node != prev) {
            X++;
            op->node_off[X] = i;
            op->nic_off[X] = nn;
            prev = node;
            last_nic = -1;
        }
        if (k != last_nic)
            op->nics[nn++] = k, last_nic = k;
    }
    op->node_off[N] = op->n;
    op->nic_off[N] = nn;
    return 0;
}

/* ---- algorithms as flows ---------------------------------------------- */

/* Rings over the members of one node (or a single-node group): one flow
 * per ring; on a direct mesh one ring per stride coprime with m. */
static void intra_rings(coll_op *op, const int *mem, int m, double bytes, int open_at)
{
    mm_network *net = op->net;
    int strides[64], ns = 0;
    if (net->c->intra == MM_INTRA_NVLINK_MESH) {
        for (int s = 1; s < m && ns < 64; s++) {
            int a = s, b = m;
            while (b) {
                int t = a % b;
                a = b;
                b = t;
            }
            if (a == 1)
                strides[ns++] = s;
        }
    }
    if (ns == 0)
        strides[ns++] = 1;
    for (int r = 0; r < ns; r++) {
        for (int i = 0; i < m; i++) {
            int d = (i + strides[r]) % m;
            if (mem[d] == open_at)
                continue;
            coll_route_hop(net, mem[i], mem[d], 0, 0, 1.0);
        }
        coll_route_commit(op, bytes / ns);
    }
}

/* Ring channel c across nodes; open_at >= 0 leaves out the hop into that
 * GPU (broadcast).  step_bytes > 0: one flow per hop (a step), else the
 * whole channel as one flow of `bytes`. */
static void ring_channel(coll_op *op, int c, double bytes, int open_at, double step_bytes)
{
    mm_network *net = op->net;
    int N = coll_nodes_of(op), on = net->ring_skip;
    for (int X = 0; X < N; X++) {
        int Y = (X + 1) % N;
        /* a proven ring's hops that load only links its reduction drops
         * are left out: the reduced route, entry for entry, as before */
        int nx = mm_cluster_node_of(net->c, coll_member(op, X, 0)), ny = mm_cluster_node_of(net->c, coll_member(op, Y, 0));
        if (on && !coll_sym_hop_kept(net, on, nx, ny))
            continue;
        int m = coll_members(op, X), e = entry_of(op, X, c);
        for (int j = 0; j < m; j++) {
            int src = coll_member(op, X, (e + j) % m);
            int dst = j + 1 < m ? coll_member(op, X, (e + j + 1) % m) : coll_member(op, Y, entry_of(op, Y, c));
            if (dst == open_at || src == dst)
                continue;
            if (on && !coll_sym_hop_kept(net, on, nx, j + 1 < m ? nx : ny))
                continue;
            if (j + 1 < m)
                coll_route_hop(net, src, dst, 0, 0, 1.0);
            else
                coll_route_hop(net, src, dst, rail(op, X, c), rail(op, Y, c), 1.0);
            if (step_bytes > 0)
                coll_route_commit(op, step_bytes);
        }
    }
    if (step_bytes <= 0)
        coll_route_commit(op, bytes);
}

static double ring_factor(mm_coll_kind kind, int n)
{
    return kind == MM_COLL_BROADCAST ? 1.0 : mm_coll_bus_factor(kind, n);
}

/* The fabric links of ring channel c's hops between nodes, checked as
 * coll_sym_check checks a route (the rest of the route is node links):
 * what the probe of a ring whose node links are proven still checks. */
static void ring_fabric_check(coll_op *op, int c)
{
    mm_network *net = op->net;
    int N = coll_nodes_of(op);
    coll_route_clear(net);
    for (int X = 0; X < N && !net->oom; X++) {
        int Y = (X + 1) % N;
        if (coll_route_fit(net, net->rlen + 2))
            break;
        int k = mm_topo_fabric_path(&net->topo, mm_cluster_node_of(net->c, coll_member(op, X, 0)),
                                    mm_cluster_node_of(net->c, coll_member(op, Y, 0)), rail(op, X, c),
                                    rail(op, Y, c), net->rl + net->rlen);
        for (int i = 0; i < k; i++)
            net->rc[net->rlen++] = 1.0;
    }
    net->sym_bad |= MM_SYM_FABRIC & net->sym_cand & ~coll_sym_check(net);
    coll_route_clear(net);
}

static void ring_flows(coll_op *op, double step_bytes)
{
    double f = ring_factor(op->kind, op->n) * op->bytes;
    int open_at = op->kind == MM_COLL_BROADCAST ? op->root : -1;
    if (op->s.nodes == 1 && step_bytes <= 0) {
        intra_rings(op, op->g, op->n, f, open_at);
        return;
    }
    int k = op->s.nodes == 1 ? 1 : op->s.channels;
    mm_network *net = op->net;
    /* Under the symmetric reduction, a whole-channel ring whose node
     * links the structure proves (coll_sym.c) builds only the hops that
     * load a link the reduction keeps: the reduced route, entry for entry,
     * without laying out the rest.  Its fabric links, where the structure
     * does not prove them, are checked from the hops between nodes alone
     * while probing (outside the probe the reduction in force was
     * checked). */
    int on = net->probing ? net->sym_cand : net->sym, pr = 0;
    if (net->reps > 1) { /* copies: build_flows' proof, every hop of copy 0 built */
        for (int c = 0; c < k; c++)
            ring_channel(op, c, f / k, open_at, step_bytes > 0 ? step_bytes / k : 0);
        return;
    }
    if (on && open_at < 0 && step_bytes <= 0)
        pr = coll_sym_ring_proven(net, op, on);
    if ((on & MM_SYM_NODES) && (pr & MM_SYM_NODES) && (on & MM_SYM_FABRIC) && !(pr & MM_SYM_FABRIC)) {
        for (int c = 0; c < k && net->probing; c++)
            ring_fabric_check(op, c);
        pr = on;
    }
    net->ring_skip = net->sym_proven = pr == on ? on : 0;
    for (int c = 0; c < k; c++)
        ring_channel(op, c, f / k, open_at, step_bytes > 0 ? step_bytes / k : 0);
    net->ring_skip = net->sym_proven = 0;
}

static void tree_flows(coll_op *op)
{
    mm_network *net = op->net;
    int N = coll_nodes_of(op);
    if (N == 1) { /* a chain: reduce toward the first, broadcast back */
        for (int i = 0; i + 1 < op->n; i++) {
            coll_route_hop(net, op->g[i + 1], op->g[i], 0, 0, 1.0);
            coll_route_hop(net, op->g[i], op->g[i + 1], 0, 0, 1.0);
        }
        coll_route_commit(op, op->bytes);
        return;
    }
    int k = op->s.channels;
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < k; c++) {
            for (int X = 0; X < N; X++) {
                int m = coll_members(op, X), e = entry_of(op, X, c);
                for (int j = 0; j + 1 < m; j++) {
                    int a = coll_member(op, X, (e + j) % m), b = coll_member(op, X, (e + j + 1) % m);
                    coll_route_hop(net, b, a, 0, 0, 1.0);
                    coll_route_hop(net, a, b, 0, 0, 1.0);
                }
                int P = mm_dtree_parent(t, X, N);
                if (P >= 0) {
                    int hx = coll_member(op, X, e), hp = coll_member(op, P, entry_of(op, P, c));
                    coll_route_hop(net, hx, hp, rail(op, X, c), rail(op, P, c), 1.0);
                    coll_route_hop(net, hp, hx, rail(op, P, c), rail(op, X, c), 1.0);
                }
            }
            coll_route_commit(op, op->bytes / (2.0 * k));
        }
}

static void hier_flows(coll_op *op)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    int N = coll_nodes_of(op), mmax = op->s.max_per_node;
    if (op->phase != 1) { /* reduce-scatter, then all-gather, in every node */
        for (int X = 0; X < N; X++) {
            int m = coll_members(op, X);
            if (m > 1)
                intra_rings(op, op->g + op->node_off[X], m, (m - 1.0) / m * op->bytes, -1);
        }
        return;
    }
    for (int j = 0; j < mmax; j++) {
        int cnt = 0, first = -1, prev = -1;
        for (int X = 0; X < N; X++) {
            if (coll_members(op, X) <= j)
                continue;
            int gx = coll_member(op, X, j);
            if (prev >= 0)
                coll_route_hop(net, prev, gx, mm_cluster_nic_of(c, prev), mm_cluster_nic_of(c, gx), 1.0);
            else
                first = gx;
            prev = gx;
            cnt++;
        }
        if (cnt > 1) {
            coll_route_hop(net, prev, first, mm_cluster_nic_of(c, prev), mm_cluster_nic_of(c, first), 1.0);
            coll_route_commit(op, 2.0 * (cnt - 1) / cnt * op->bytes / mmax);
        } else {
            coll_route_clear(net);
        }
    }
}

static void nvls_flows(coll_op *op)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    double coef = (1.0 + 1.0 / op->n) * c->nvlink_eff / c->nvls_eff;
    coll_route_clear(net);
    for (int i = 0; i < op->n; i++)
        coll_route_nvls(net, op->g[i], coef);
    coll_route_commit(op, op->bytes);
}

/* In-network all-reduce (net.h, COLLNET): inside each node NVLS (one flow
 * over the node's switch links, as nvls_flows) or a reduce-scatter and
 * all-gather ring, and across nodes one flow per channel through NIC c of
 * every node, each NIC's up and down link once per byte of S / k (the
 * switches reduce; a ring of hops loads every NIC link exactly once), at
 * the SHARP rate (the link runs at net_eff; the coefficient rescales).
 * The halves are concurrent flows of one phase: it ends with the slower. */
static void collnet_flows(coll_op *op)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    int N = coll_nodes_of(op), k = op->s.channels;
    for (int X = 0; X < N; X++) {
        int m = coll_members(op, X);
        const int *mem = op->g + op->node_off[X];
        if (m < 2)
            continue;
        if (c->nvls) {
            double coef = (1.0 + 1.0 / m) * c->nvlink_eff / c->nvls_eff;
            coll_route_clear(net);
            for (int i = 0; i < m; i++)
                coll_route_nvls(net, mem[i], coef);
            coll_route_commit(op, op->bytes);
        } else {
            intra_rings(op, mem, m, 2.0 * (m - 1) / m * op->bytes, -1);
        }
    }
    double coef = c->net_eff / c->sharp_eff;
    for (int ch = 0; ch < k; ch++) {
        coll_route_clear(net);
        for (int X = 0; X < N; X++) {
            int Y = (X + 1) % N;
            coll_route_hop(net, coll_member(op, X, entry_of(op, X, ch)), coll_member(op, Y, entry_of(op, Y, ch)),
                           rail(op, X, ch), rail(op, Y, ch), coef);
        }
        coll_route_commit(op, op->bytes / k);
    }
}

/* ---- SHARP trees ------------------------------------------------------- */

/* The trees a COLLNET op needs per NIC into net->sharp_need (each replica
 * one tree on each NIC its members use), calling f on every NIC once;
 * the need is cleared after. */
static int sharp_walk(coll_op *op, int (*f)(mm_network *, int nic, int need))
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    int ok = 1;
    for (int r = 0; r < op->reps; r++) {
        int last = -1;
        for (int i = 0; i < op->n; i++) {
            int gpu = op->g[i] + r * op->rstride;
            int nic = mm_cluster_node_of(c, gpu) * c->nics_per_node + mm_cluster_nic_of(c, gpu);
            if (nic != last) /* members of one replica on one NIC share its tree */
                net->sharp_need[nic]++;
            last = nic;
        }
    }
    for (int r = 0; r < op->reps; r++)
        for (int i = 0; i < op->n; i++) {
            int gpu = op->g[i] + r * op->rstride;
            int nic = mm_cluster_node_of(c, gpu) * c->nics_per_node + mm_cluster_nic_of(c, gpu);
            if (net->sharp_need[nic]) {
                ok &= f(net, nic, net->sharp_need[nic]);
                net->sharp_need[nic] = 0;
            }
        }
    return ok;
}

/* An op fits when each of its NICs has room for its trees, or carries
 * none (an op needing more than sharp_trees on one NIC runs alone). */
static int sharp_room(mm_network *net, int nic, int need)
{
    return net->sharp_use[nic] == 0 || net->sharp_use[nic] + need <= net->c->sharp_trees;
}

static int sharp_take(mm_network *net, int nic, int need)
{
    net->sharp_use[nic] += need;
    return 1;
}

static int sharp_give(mm_network *net, int nic, int need)
{
    net->sharp_use[nic] -= need;
    return 1;
}

static int uses_sharp(const coll_op *op)
{
    return op->algo == MM_ALGO_COLLNET && op->net->sharp_use;
}

/* ---- the phase machine -------------------------------------------------- */

static double phase_latency(const coll_op *op)
{
    const mm_cluster *c = op->net->c;
    double total = mm_net_latency(c, op->kind, op->algo, &op->s);
    if (op->kind == MM_COLL_SENDRECV) /* the measured p2p curve (net.h) */
        total += mm_net_p2p_extra(c, &op->s, op->bytes);
    total += mm_net_nccl_proto_extra(c, op->kind, op->algo, &op->s, op->bytes);
    if (op->algo == MM_ALGO_HIER && op->n_phases == 3) {
        double ai = c->nvlink_latency_s;
        double side = (op->s.max_per_node - 1) * ai;
        return op->phase == 1 ? total - 2 * side : side;
    }
    return total / op->n_phases;
}

static void phase_start(coll_op *op);

/* Starts, oldest first, the waiting COLLNET ops whose trees are free. */
static void sharp_wake(mm_network *net)
{
    coll_op **pp = &net->sharp_wait;
    while (*pp) {
        coll_op *op = *pp;
        if (!sharp_walk(op, sharp_room)) {
            pp = &op->next_wait;
            continue;
        }
        *pp = op->next_wait;
        sharp_walk(op, sharp_take);
        phase_start(op);
    }
}

/* An op with room for n members, from the pool (its arrays kept) or new. */
static coll_op *op_get(mm_network *net, int n)
{
    coll_op *op = net->free_ops;
    if (op)
        net->free_ops = op->next_free;
    else if (!(op = calloc(1, sizeof *op)))
        return NULL;
    int *g = op->g, *no = op->node_off, *ni = op->nic_off, *nc = op->nics, cap = op->cap;
    if (n + 1 > cap) {
        size_t k = (size_t)n + 1;
        int *a = realloc(g, k * sizeof *a);
        g = a ? a : g;
        int *b = a ? realloc(no, k * sizeof *b) : NULL;
        no = b ? b : no;
        int *d = b ? realloc(ni, k * sizeof *d) : NULL;
        ni = d ? d : ni;
        int *e = d ? realloc(nc, k * sizeof *e) : NULL;
        nc = e ? e : nc;
        if (!e) {
            op->g = g, op->node_off = no, op->nic_off = ni, op->nics = nc; /* kept for freeing */
            op->next_free = net->free_ops;
            net->free_ops = op;
            return NULL;
        }
        cap = n + 1;
    }
    memset(op, 0, sizeof *op);
    op->g = g, op->node_off = no, op->nic_off = ni, op->nics = nc, op->cap = cap;
    return op;
}

static void op_free(coll_op *op)
{
    mm_network *net = op->net;
    op->next_free = net->free_ops;
    net->free_ops = op;
}

static void phase_done(coll_op *op)
{
    mm_network *net = op->net;
    if (++op->phase < op->n_phases) {
        phase_start(op);
        return;
    }
    if (--op->count_left > 0) {
        op->phase = 0;
        phase_start(op);
        return;
    }
    net->active--;
    mm_engine_at(net->eng, mm_engine_now(net->eng), op->done, op->ctx, op->arg);
    int freed = uses_sharp(op);
    if (freed)
        sharp_walk(op, sharp_give);
    op_free(op);
    if (freed)
        sharp_wake(net);
}

static void on_xlat_done(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    phase_done(ctx);
}

/* The flows of a phase have drained; extra latency of perturbed links
 * (topo.h) is paid now, before the next phase (latency and bandwidth terms
 * add, so where it is paid does not change the time). */
static void phase_end(coll_op *op)
{
    if (op->xlat_s > 0)
        mm_engine_after(op->net->eng, mm_time_from_s(op->xlat_s, MM_ROUND_NEAREST), on_xlat_done, op, 0);
    else
        phase_done(op);
}

/* Sequential steps of a phase that each cross the slowest route once:
 * the alpha count of mm_net_latency (net.c). */
static double xsteps(const coll_op *op)
{
    int n = op->n, N = op->s.nodes;
    if (op->kind == MM_COLL_SENDRECV || op->kind == MM_COLL_ALLTOALL || op->n_phases > 1 ||
        op->algo == MM_ALGO_NVLS || op->algo == MM_ALGO_COLLNET)
        return 1;
    if (op->algo == MM_ALGO_TREE)
        return 2.0 * ceil(log2((double)(N > 1 ? N : 2)));
    if (op->algo == MM_ALGO_HIER)
        return 2.0 * (N - 1);
    return op->kind == MM_COLL_ALLREDUCE ? 2.0 * (n - 1) : (double)(n - 1);
}

static void on_flow_done(void *ctx, uint64_t arg)
{
    (void)arg;
    coll_op *op = ctx;
    if (--op->pending == 0)
        phase_end(op);
}

/* The flows of op's current phase (routes built, then started or, while
 * probing, checked). */
static void build_flows(coll_op *op)
{
    mm_network *net = op->net;
    /* a collective inside a node copied as the replicas is proven by its
     * structure (coll_sym.c): replay_replicas leaves out the copies whose
     * links the reduction drops, and the probe does not check it (ring_flows
     * and coll_alltoall_flows set their own proofs) */
    if (net->reps > 1) {
        int on = net->probing ? net->sym_cand : net->sym;
        net->sym_proven = coll_sym_copies_proven(net, op, on) == on ? on : 0;
    }
    switch (op->kind == MM_COLL_SENDRECV ? MM_ALGO_COUNT : op->algo) {
    case MM_ALGO_COUNT:
        coll_route_hop(net, op->g[0], op->g[1], mm_cluster_nic_of(net->c, op->g[0]),
                  mm_cluster_nic_of(net->c, op->g[1]), 1.0);
        coll_route_commit(op, op->bytes);
        break;
    case MM_ALGO_TREE:
        tree_flows(op);
        break;
    case MM_ALGO_HIER:
        hier_flows(op);
        break;
    case MM_ALGO_NVLS:
        nvls_flows(op);
        break;
    case MM_ALGO_COLLNET:
        collnet_flows(op);
        break;
    default:
        if (op->kind == MM_COLL_ALLTOALL)
            coll_alltoall_flows(op);
        else if (op->n_phases > 1) /* stepwise ring */
            ring_flows(op, ring_factor(op->kind, op->n) * op->bytes / op->n_phases);
        else
            ring_flows(op, 0);
    }
    net->sym_proven = 0;
}

/* mm_network_symmetric_probe: every phase's flows of a laid-out op,
 * checked (coll_route_commit), none started. */
static void probe_phases(coll_op *op)
{
    mm_network *net = op->net;
    int np = op->n_phases < MM_COLL_PLAN_PHASES ? op->n_phases : MM_COLL_PLAN_PHASES;
    for (int ph = 0; ph < np; ph++) {
        op->phase = ph;
        net->reps = op->reps, net->rstride = op->rstride;
        coll_route_clear(net);
        net->xmax = 0;
        coll_cache_record_begin(net, op);
        build_flows(op);
        coll_cache_record_end(net);
    }
    net->reps = 1;
    coll_route_clear(net);
}

static void add_flows(coll_op *op)
{
    mm_network *net = op->net;
    net->reps = op->reps, net->rstride = op->rstride;
    coll_route_clear(net);
    net->xmax = 0;
    op->pending = 1; /* held until every flow is added */
    if (coll_cache_replay(net, op, on_flow_done))
        goto added;
    coll_cache_materialize(net, op);
    coll_cache_record_begin(net, op);
    build_flows(op);
    coll_cache_record_end(net);
added:
    net->reps = 1;
    mm_flownet_commit(net->fn);
    op->xlat_s = net->topo.any_xlat ? net->xmax * xsteps(op) : 0;
    if (--op->pending == 0)
        phase_end(op);
}

static void on_latency(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    add_flows(ctx);
}

/* The phase's latency, remembered with the collective's setup. */
static mm_time op_latency(coll_op *op)
{
    coll_plan *p = op->plan >= 0 && op->phase < MM_COLL_PLAN_PHASES ? &op->net->cache.p[op->plan] : NULL;
    if (p && p->lat_ok[op->phase])
        return p->lat[op->phase];
    mm_time lat = mm_time_from_s(phase_latency(op), MM_ROUND_NEAREST);
    if (p) {
        p->lat[op->phase] = lat;
        p->lat_ok[op->phase] = 1;
    }
    return lat;
}

static void phase_start(coll_op *op)
{
    mm_network *net = op->net;
    mm_time lat = op_latency(op);
    if (lat > 0)
        mm_engine_after(net->eng, lat, on_latency, op, 0);
    else
        add_flows(op);
}

int mm_network_start(mm_network *net, const mm_coll_req *req, mm_event_fn done, void *ctx,
                     uint64_t arg, mm_coll_algo *used, mm_err *err)
{
    return mm_network_start_replicated(net, req, 1, 0, done, ctx, arg, used, err);
}

/* The op's fields from the request (members, layout and algorithm are
 * set by the caller). */
/* Counts a laid-out op as active and starts its first phase (a fresh
 * request and a replayed one alike). */
static int op_launch(mm_network *net, coll_op *op, mm_err *err)
{
    net->active++;
    net->oom = 0;
    if (uses_sharp(op)) { /* a tree of the switches on each of its NICs, or wait */
        if (!sharp_walk(op, sharp_room)) {
            coll_op **pp = &net->sharp_wait;
            while (*pp)
                pp = &(*pp)->next_wait;
            op->next_wait = NULL;
            *pp = op;
            return 0;
        }
        sharp_walk(op, sharp_take);
    }
    phase_start(op);
    if (net->oom)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the flow model");
    return 0;
}

static void op_init(mm_network *net, coll_op *op, const mm_coll_req *req, int reps, int stride, mm_event_fn done,
                    void *ctx, uint64_t arg)
{
    op->net = net;
    op->kind = req->kind;
    op->n = req->n;
    op->root = req->gpus[0];
    op->bytes = req->bytes;
    op->count_left = req->count > 0 ? req->count : 1;
    op->reps = reps, op->rstride = stride;
    op->done = done, op->ctx = ctx, op->arg = arg;
}

/* Starts a request set up before (plan k of the cache). */
static int start_planned(mm_network *net, int32_t k, const mm_coll_req *req, int reps, int stride,
                         mm_event_fn done, void *ctx, uint64_t arg, mm_coll_algo *used, mm_err *err)
{
    const coll_plan *p = &net->cache.p[k];
    if (used)
        *used = p->algo;
    mm_time now = mm_engine_now(net->eng);
    if (p->analytic) {
        if (!mm_engine_at(net->eng, mm_time_add(now, mm_time_from_s(p->t_analytic, MM_ROUND_NEAREST)), done, ctx,
                          arg))
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the engine");
        return 0;
    }
    coll_op *op = op_get(net, req->n);
    if (!op)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    op_init(net, op, req, reps, stride, done, ctx, arg);
    coll_cache_apply(net, k, op);
    return op_launch(net, op, err);
}

int mm_network_start_replicated(mm_network *net, const mm_coll_req *req, int replicas, int stride,
                                 mm_event_fn done, void *ctx, uint64_t arg, mm_coll_algo *used, mm_err *err)
{
    const mm_cluster *c = net->c;
    int n = req->n, total = mm_cluster_gpus(c);
    int reps = replicas > 1 ? replicas : 1;
    int32_t k = coll_cache_find(net, req, reps, stride);
    if (k >= 0 && net->probing) /* probed before */
        return 0;
    if (k >= 0) /* the same request succeeded before: same checks, same setup */
        return start_planned(net, k, req, reps, stride, done, ctx, arg, used, err);
    for (int i = 0; i < n; i++)
        if (req->gpus[i] < 0 || req->gpus[i] >= total)
            return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "GPU %d is not in the cluster (%d GPUs)",
                              req->gpus[i], total);
    for (int i = 0; i < n && reps > 1; i++)
        if (req->gpus[i] + (long long)(reps - 1) * stride >= total || stride <= 0)
            return mm_err_set(err, MM_EINPUT, "", 0, "replicas",
                              "%d replicas %d GPUs apart of GPU %d leave the cluster (%d GPUs)", reps, stride,
                              req->gpus[i], total);
    if (req->kind == MM_COLL_SENDRECV && n != 2)
        return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "send/recv takes two GPUs, got %d", n);
    if (n + 1 > net->sg_cap) {
        int *q = realloc(net->sg, ((size_t)n + 1) * sizeof *q);
        if (!q)
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        net->sg = q, net->sg_cap = n + 1;
    }
    int *g = net->sg;
    mm_group_sort_into(req->gpus, n, g);
    for (int i = 1; i < n; i++)
        if (g[i] == g[i - 1])
            return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "GPU %d appears twice in the group", g[i]);
    mm_group_shape s;
    mm_group_shape_of(c, g, n, &s);
    s.comm_ranks = req->comm_ranks, s.comm_nodes = req->comm_nodes;
    mm_coll_algo algo = req->algo;
    char why[200];
    if (algo == MM_ALGO_AUTO)
        algo = mm_coll_auto_except(c, req->kind, &s, req->bytes, req->no_nvls ? 1u << MM_ALGO_NVLS : 0);
    else if ((algo == MM_ALGO_NVLS || (algo == MM_ALGO_COLLNET && c->nvls)) && req->no_nvls)
        return mm_err_set(err, MM_EINPUT, "", 0, "algo",
                          "%s: the switch reduces sums (and min/max of 16-bit and integer types) only",
                          mm_coll_algo_names[algo]);
    else if (mm_coll_algo_check(c, req->kind, algo, &s, why, sizeof why)) {
        return mm_err_set(err, MM_EINPUT, "", 0, "algo", "%s: %s", mm_coll_algo_names[algo], why);
    }
    /* hier on one level is the ring */
    if (algo == MM_ALGO_HIER && (s.nodes < 2 || s.max_per_node < 2))
        algo = MM_ALGO_RING;
    if (used)
        *used = algo;
    int count = req->count > 0 ? req->count : 1;
    mm_time now = mm_engine_now(net->eng);
    if (n < 2 || req->bytes <= 0 || net->model == MM_NET_MODEL_ANALYTIC) {
        if (net->probing) /* no flows */
            return 0;
        double t = n < 2 || req->bytes <= 0 ? 0 : count * mm_net_analytic_shape_time(c, req->kind, algo, &s, req->bytes);
        if (!mm_engine_at(net->eng, mm_time_add(now, mm_time_from_s(t, MM_ROUND_NEAREST)), done, ctx, arg))
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the engine");
        coll_cache_add(net, req, reps, stride, algo, NULL, t);
        return 0;
    }
    coll_op *op = op_get(net, n);
    if (!op)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    memcpy(op->g, g, (size_t)n * sizeof *g);
    op_init(net, op, req, reps, stride, done, ctx, arg);
    op->algo = algo;
    op->s = s;
    op->n_phases = 1;
    if (algo == MM_ALGO_HIER && s.nodes > 1 && s.max_per_node > 1)
        op->n_phases = 3;
    else if (net->stepwise && algo == MM_ALGO_RING && req->kind != MM_COLL_BROADCAST &&
             req->kind != MM_COLL_ALLTOALL && req->kind != MM_COLL_SENDRECV)
        op->n_phases = req->kind == MM_COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
    if (layout(op)) {
        op_free(op);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    if (req->kind == MM_COLL_SENDRECV) /* layout wants sorted ids */
        memcpy(op->g, req->gpus, 2 * sizeof *op->g);
    op->plan = coll_cache_add(net, req, reps, stride, algo, op, 0);
    if (net->probing) {
        probe_phases(op);
        op_free(op);
        return 0;
    }
    return op_launch(net, op, err);
}

void mm_network_symmetric_probe(mm_network *net, const mm_coll_req *req, int replicas, int stride)
{
    mm_err e;
    if (!net->probing)
        return;
    net->oom = 0;
    if (mm_network_start_replicated(net, req, replicas, stride, NULL, NULL, 0, NULL, &e) || net->oom)
        net->sym_bad = net->sym_cand; /* the run reports it; nothing is reduced */
}

static void note_done(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    *(mm_time *)ctx = mm_engine_now(eng);
}

double mm_coll_time(const mm_cluster *c, mm_net_model model, const mm_coll_req *req,
                    mm_coll_algo *used, mm_err *err)
{
    mm_engine *eng = mm_engine_alloc();
    if (!eng) {
        mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        return NAN;
    }
    mm_network *net = mm_network_alloc(c, eng, model, err);
    double t = NAN;
    mm_time end = -1;
    if (net && mm_network_start(net, req, note_done, &end, 0, used, err) == 0) {
        mm_engine_run(eng);
        t = (double)end * 1e-9;
    }
    mm_network_free(net);
    mm_engine_free(eng);
    return t;
}
