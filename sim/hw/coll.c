/* coll.c - collective algorithms as flows (coll.h), and the one interface
 * the executor and `mmsim collective` use for both network models.
 * Not for: the max-min solver (flow.c), routes (topo.c) or the analytic
 * formulas (net.c). */
#include "hw/coll.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hw/flow.h"

const char *const mm_net_model_names[] = {"flow", "analytic", NULL};

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
};

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
    mm_event_fn done;
    void *ctx;
    uint64_t arg;
} coll_op;

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
    if (mm_topo_build(&net->topo, c, err)) {
        free(net);
        return NULL;
    }
    if (model == MM_NET_MODEL_FLOW) {
        net->fn = mm_flownet_alloc(eng, net->topo.n_links, net->topo.cap);
        if (!net->fn) {
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
    free(net);
}

void mm_network_set_stepwise(mm_network *net, int on)
{
    net->stepwise = on;
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

/* ---- building routes ------------------------------------------------- */

static void route_clear(mm_network *net)
{
    net->rlen = 0;
}

static void route_hop(mm_network *net, int src, int dst, int rail_out, int rail_in, double coef)
{
    if (net->rlen + MM_TOPO_MAX_PATH > net->rcap) {
        size_t nc = net->rcap ? 2 * net->rcap : 256;
        while (nc < net->rlen + MM_TOPO_MAX_PATH)
            nc *= 2;
        int *a = realloc(net->rl, nc * sizeof *a);
        if (a)
            net->rl = a;
        double *b = realloc(net->rc, nc * sizeof *b);
        if (b)
            net->rc = b;
        if (!a || !b) {
            net->oom = 1;
            return;
        }
        net->rcap = nc;
    }
    int k = mm_topo_path(&net->topo, src, dst, rail_out, rail_in, net->rl + net->rlen);
    double x = 0;
    for (int i = 0; i < k; i++) {
        net->rc[net->rlen + (size_t)i] = coef;
        x += net->topo.xlat[net->rl[net->rlen + (size_t)i]];
    }
    if (x > net->xmax)
        net->xmax = x;
    net->rlen += (size_t)k;
}

static void on_flow_done(void *ctx, uint64_t arg);

/* Turns the route built so far into a flow of `bytes`. */
static void route_commit(coll_op *op, double bytes)
{
    mm_network *net = op->net;
    if (net->rlen == 0 || bytes <= 0 || net->oom)
        return;
    if (mm_flownet_add(net->fn, net->rl, net->rc, (int)net->rlen, bytes, on_flow_done, op, 0) < 0) {
        net->oom = 1;
        return;
    }
    op->pending++;
    route_clear(net);
}

/* ---- group layout ------------------------------------------------------ */

static int nodes_of(const coll_op *op)
{
    return op->s.nodes;
}

static int members(const coll_op *op, int X)
{
    return op->node_off[X + 1] - op->node_off[X];
}

static int member(const coll_op *op, int X, int j)
{
    return op->g[op->node_off[X] + j];
}

/* Index (within node X) where channel c enters: the first member that
 * channel c's NIC serves. */
static int entry_of(const coll_op *op, int X, int c)
{
    const mm_cluster *cl = op->net->c;
    int nic = op->nics[op->nic_off[X] + c];
    for (int j = 0; j < members(op, X); j++)
        if (mm_cluster_nic_of(cl, member(op, X, j)) == nic)
            return j;
    return 0;
}

static int rail(const coll_op *op, int X, int c)
{
    return op->nics[op->nic_off[X] + c];
}

static int layout(coll_op *op)
{
    const mm_cluster *c = op->net->c;
    int N = op->s.nodes;
    op->node_off = malloc(((size_t)N + 1) * sizeof *op->node_off);
    op->nic_off = malloc(((size_t)N + 1) * sizeof *op->nic_off);
    op->nics = malloc(((size_t)op->n + 1) * sizeof *op->nics);
    if (!op->node_off || !op->nic_off || !op->nics)
        return -1;
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
            route_hop(net, mem[i], mem[d], 0, 0, 1.0);
        }
        route_commit(op, bytes / ns);
    }
}

/* Ring channel c across nodes; open_at >= 0 leaves out the hop into that
 * GPU (broadcast).  step_bytes > 0: one flow per hop (a step), else the
 * whole channel as one flow of `bytes`. */
static void ring_channel(coll_op *op, int c, double bytes, int open_at, double step_bytes)
{
    mm_network *net = op->net;
    int N = nodes_of(op);
    for (int X = 0; X < N; X++) {
        int m = members(op, X), e = entry_of(op, X, c);
        int Y = (X + 1) % N;
        for (int j = 0; j < m; j++) {
            int src = member(op, X, (e + j) % m);
            int dst = j + 1 < m ? member(op, X, (e + j + 1) % m) : member(op, Y, entry_of(op, Y, c));
            if (dst == open_at || src == dst)
                continue;
            if (j + 1 < m)
                route_hop(net, src, dst, 0, 0, 1.0);
            else
                route_hop(net, src, dst, rail(op, X, c), rail(op, Y, c), 1.0);
            if (step_bytes > 0)
                route_commit(op, step_bytes);
        }
    }
    if (step_bytes <= 0)
        route_commit(op, bytes);
}

static double ring_factor(mm_coll_kind kind, int n)
{
    return kind == MM_COLL_BROADCAST ? 1.0 : mm_coll_bus_factor(kind, n);
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
    for (int c = 0; c < k; c++)
        ring_channel(op, c, f / k, open_at, step_bytes > 0 ? step_bytes / k : 0);
}

static void tree_flows(coll_op *op)
{
    mm_network *net = op->net;
    int N = nodes_of(op);
    if (N == 1) { /* a chain: reduce toward the first, broadcast back */
        for (int i = 0; i + 1 < op->n; i++) {
            route_hop(net, op->g[i + 1], op->g[i], 0, 0, 1.0);
            route_hop(net, op->g[i], op->g[i + 1], 0, 0, 1.0);
        }
        route_commit(op, op->bytes);
        return;
    }
    int k = op->s.channels;
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < k; c++) {
            for (int X = 0; X < N; X++) {
                int m = members(op, X), e = entry_of(op, X, c);
                for (int j = 0; j + 1 < m; j++) {
                    int a = member(op, X, (e + j) % m), b = member(op, X, (e + j + 1) % m);
                    route_hop(net, b, a, 0, 0, 1.0);
                    route_hop(net, a, b, 0, 0, 1.0);
                }
                int P = mm_dtree_parent(t, X, N);
                if (P >= 0) {
                    int hx = member(op, X, e), hp = member(op, P, entry_of(op, P, c));
                    route_hop(net, hx, hp, rail(op, X, c), rail(op, P, c), 1.0);
                    route_hop(net, hp, hx, rail(op, P, c), rail(op, X, c), 1.0);
                }
            }
            route_commit(op, op->bytes / (2.0 * k));
        }
}

static void hier_flows(coll_op *op)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    int N = nodes_of(op), mmax = op->s.max_per_node;
    if (op->phase != 1) { /* reduce-scatter, then all-gather, in every node */
        for (int X = 0; X < N; X++) {
            int m = members(op, X);
            if (m > 1)
                intra_rings(op, op->g + op->node_off[X], m, (m - 1.0) / m * op->bytes, -1);
        }
        return;
    }
    for (int j = 0; j < mmax; j++) {
        int cnt = 0, first = -1, prev = -1;
        for (int X = 0; X < N; X++) {
            if (members(op, X) <= j)
                continue;
            int gx = member(op, X, j);
            if (prev >= 0)
                route_hop(net, prev, gx, mm_cluster_nic_of(c, prev), mm_cluster_nic_of(c, gx), 1.0);
            else
                first = gx;
            prev = gx;
            cnt++;
        }
        if (cnt > 1) {
            route_hop(net, prev, first, mm_cluster_nic_of(c, prev), mm_cluster_nic_of(c, first), 1.0);
            route_commit(op, 2.0 * (cnt - 1) / cnt * op->bytes / mmax);
        } else {
            route_clear(net);
        }
    }
}

static void nvls_flows(coll_op *op)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    const mm_topo *t = &net->topo;
    double coef = (1.0 + 1.0 / op->n) * c->nvlink_eff / c->nvls_eff;
    route_clear(net);
    for (int i = 0; i < op->n; i++) {
        int node = mm_cluster_node_of(c, op->g[i]), local = op->g[i] % c->gpus_per_node;
        int links[2] = {node * t->per_node + t->o_up + local, node * t->per_node + t->o_down + local};
        for (int k = 0; k < 2; k++) {
            route_hop(net, 0, 0, 0, 0, 0); /* ensures room; adds nothing */
            net->rl[net->rlen] = links[k];
            net->rc[net->rlen++] = coef;
        }
    }
    route_commit(op, op->bytes);
}

static void alltoall_flows(coll_op *op)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    int N = nodes_of(op), G = c->gpus_per_node;
    double per = op->bytes / op->n;
    for (int X = 0; X < N; X++)
        for (int i = 0; i < members(op, X); i++)
            for (int j = 0; j < members(op, X); j++)
                if (i != j) {
                    route_hop(net, member(op, X, i), member(op, X, j), 0, 0, 1.0);
                    route_commit(op, per);
                }
    for (int X = 0; X < N; X++)
        for (int Y = 0; Y < N; Y++) {
            if (X == Y)
                continue;
            int node = mm_cluster_node_of(c, member(op, X, 0));
            for (int j = 0; j < members(op, Y); j++) {
                int dst = member(op, Y, j), k = mm_cluster_nic_of(c, dst);
                int src = node * G + mm_topo_nic_gpu(c, k);
                route_hop(net, src, dst, k, k, 1.0);
                route_commit(op, members(op, X) * per);
            }
        }
}

/* ---- the phase machine -------------------------------------------------- */

static double phase_latency(const coll_op *op)
{
    const mm_cluster *c = op->net->c;
    double total = mm_net_latency(c, op->kind, op->algo, &op->s);
    if (op->kind == MM_COLL_SENDRECV) /* the measured p2p curve (net.h) */
        total += mm_net_p2p_extra(c, &op->s, op->bytes);
    if (op->algo == MM_ALGO_HIER && op->n_phases == 3) {
        double ai = c->nvlink_latency_s;
        double side = (op->s.max_per_node - 1) * ai;
        return op->phase == 1 ? total - 2 * side : side;
    }
    return total / op->n_phases;
}

static void phase_start(coll_op *op);

static void op_free(coll_op *op)
{
    free(op->g);
    free(op->node_off);
    free(op->nic_off);
    free(op->nics);
    free(op);
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
    op_free(op);
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
        op->algo == MM_ALGO_NVLS)
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

static void add_flows(coll_op *op)
{
    mm_network *net = op->net;
    route_clear(net);
    net->xmax = 0;
    op->pending = 1; /* held until every flow is added */
    switch (op->kind == MM_COLL_SENDRECV ? MM_ALGO_COUNT : op->algo) {
    case MM_ALGO_COUNT:
        route_hop(net, op->g[0], op->g[1], mm_cluster_nic_of(net->c, op->g[0]),
                  mm_cluster_nic_of(net->c, op->g[1]), 1.0);
        route_commit(op, op->bytes);
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
    default:
        if (op->kind == MM_COLL_ALLTOALL)
            alltoall_flows(op);
        else if (op->n_phases > 1) /* stepwise ring */
            ring_flows(op, ring_factor(op->kind, op->n) * op->bytes / op->n_phases);
        else
            ring_flows(op, 0);
    }
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

static void phase_start(coll_op *op)
{
    mm_network *net = op->net;
    mm_time lat = mm_time_from_s(phase_latency(op), MM_ROUND_NEAREST);
    if (lat > 0)
        mm_engine_after(net->eng, lat, on_latency, op, 0);
    else
        add_flows(op);
}

int mm_network_start(mm_network *net, const mm_coll_req *req, mm_event_fn done, void *ctx,
                     uint64_t arg, mm_coll_algo *used, mm_err *err)
{
    const mm_cluster *c = net->c;
    int n = req->n, total = mm_cluster_gpus(c);
    for (int i = 0; i < n; i++)
        if (req->gpus[i] < 0 || req->gpus[i] >= total)
            return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "GPU %d is not in the cluster (%d GPUs)",
                              req->gpus[i], total);
    if (req->kind == MM_COLL_SENDRECV && n != 2)
        return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "send/recv takes two GPUs, got %d", n);
    int *g = mm_group_sorted(req->gpus, n);
    if (!g)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    for (int i = 1; i < n; i++)
        if (g[i] == g[i - 1]) {
            int dup = g[i];
            free(g);
            return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "GPU %d appears twice in the group", dup);
        }
    mm_group_shape s;
    mm_group_shape_of(c, g, n, &s);
    mm_coll_algo algo = req->algo;
    char why[200];
    if (algo == MM_ALGO_AUTO)
        algo = mm_coll_auto(c, req->kind, &s, req->bytes);
    else if (mm_coll_algo_check(c, req->kind, algo, &s, why, sizeof why)) {
        free(g);
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
        double t = n < 2 || req->bytes <= 0 ? 0 : count * mm_net_analytic_shape_time(c, req->kind, algo, &s, req->bytes);
        free(g);
        if (!mm_engine_at(net->eng, mm_time_add(now, mm_time_from_s(t, MM_ROUND_NEAREST)), done, ctx, arg))
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the engine");
        return 0;
    }
    coll_op *op = calloc(1, sizeof *op);
    if (!op) {
        free(g);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    op->net = net;
    op->kind = req->kind;
    op->algo = algo;
    op->g = g;
    op->n = n;
    op->root = req->gpus[0];
    op->s = s;
    op->bytes = req->bytes;
    op->count_left = count;
    op->done = done, op->ctx = ctx, op->arg = arg;
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
    net->active++;
    net->oom = 0;
    phase_start(op);
    if (net->oom)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the flow model");
    return 0;
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
