/* coll_route.c - building the routes of a collective's flows (coll_internal.h):
 * the links of each hop, a GPU's NVLS switch links, the other replicas'
 * copies, and turning a route into a flow (or into a sub-flow of the
 * all-to-all's aggregate).  coll.c's algorithms and coll_a2a.c call it; it
 * calls neither (a finished flow goes to net->flow_done, which coll.c sets).
 * Not for: the algorithms, the phase machine (coll.c) or paths (topo.c). */
#include "hw/coll_internal.h"

#include <stdlib.h>

#include "hw/flow.h"

/* Room for `need` route entries. */
int coll_route_fit(mm_network *net, size_t need)
{
    if (need > net->rcap) {
        size_t nc = net->rcap ? 2 * net->rcap : 256;
        while (nc < need)
            nc *= 2;
        int *a = realloc(net->rl, nc * sizeof *a);
        if (a)
            net->rl = a;
        double *b = realloc(net->rc, nc * sizeof *b);
        if (b)
            net->rc = b;
        if (!a || !b) {
            net->oom = 1;
            return -1;
        }
        net->rcap = nc;
    }
    return 0;
}

static void log_hop(mm_network *net, coll_hop h)
{
    if (net->nhops == net->hcap) {
        size_t nc = net->hcap ? 2 * net->hcap : 64;
        coll_hop *q = realloc(net->hops, nc * sizeof *q);
        if (!q) {
            net->oom = 1;
            return;
        }
        net->hops = q, net->hcap = nc;
    }
    net->hops[net->nhops++] = h;
}

void coll_route_hop(mm_network *net, int src, int dst, int rail_out, int rail_in, double coef)
{
    if (coll_route_fit(net, net->rlen + MM_TOPO_MAX_PATH))
        return;
    int k = mm_topo_path(&net->topo, src, dst, rail_out, rail_in, net->rl + net->rlen);
    double x = 0;
    for (int i = 0; i < k; i++) {
        net->rc[net->rlen + (size_t)i] = coef;
        x += net->topo.xlat[net->rl[net->rlen + (size_t)i]];
    }
    if (x > net->xmax)
        net->xmax = x;
    net->rlen += (size_t)k;
    if (k > 0 && net->reps > 1)
        log_hop(net, (coll_hop){src, dst, rail_out, rail_in, 0, coef});
}

void coll_route_nvls(mm_network *net, int gpu, double coef)
{
    const mm_cluster *c = net->c;
    const mm_topo *t = &net->topo;
    if (coll_route_fit(net, net->rlen + 2))
        return;
    int node = mm_cluster_node_of(c, gpu), local = gpu % c->gpus_per_node;
    net->rl[net->rlen] = node * t->per_node + t->o_up + local;
    net->rc[net->rlen++] = coef;
    net->rl[net->rlen] = node * t->per_node + t->o_down + local;
    net->rc[net->rlen++] = coef;
    if (net->reps > 1)
        log_hop(net, (coll_hop){gpu, gpu, 0, 0, 1, coef});
}

/* The NIC that serves, for the copy of a GPU shifted by r replicas, what
 * `rail` served for the GPU: shifted by the GPU's move inside its node
 * (whole when replica_stride x NICs is a multiple of the node's GPUs, as
 * exec/symmetry.c requires). */
static int shift_rail(const mm_cluster *c, int gpu, int shifted, int rail)
{
    int G = c->gpus_per_node;
    return rail + (shifted % G - gpu % G) * c->nics_per_node / G;
}

/* Appends the route of the other replicas: every logged hop again, shifted
 * by r x stride GPUs, for r = 1 .. reps - 1. */
static void replay_replicas(mm_network *net)
{
    const mm_cluster *c = net->c;
    int on = net->sym_proven;
    for (int r = 1; r < net->reps; r++) {
        int kept = 0;
        for (size_t i = 0; i < net->nhops; i++) {
            coll_hop h = net->hops[i];
            int d = r * net->rstride, src = h.src + d, dst = h.dst + d;
            if (on && !coll_sym_hop_kept(net, on, mm_cluster_node_of(c, src), mm_cluster_node_of(c, dst)))
                continue; /* a copy on links the proven reduction drops (coll.c build_flows) */
            kept = 1;
            if (h.nvls) {
                int keep = net->reps;
                net->reps = 1; /* not logged again */
                coll_route_nvls(net, src, h.coef);
                net->reps = keep;
                continue;
            }
            if (coll_route_fit(net, net->rlen + MM_TOPO_MAX_PATH))
                return;
            int k = mm_topo_path(&net->topo, src, dst, shift_rail(c, h.src, src, h.rail_out),
                                 shift_rail(c, h.dst, dst, h.rail_in), net->rl + net->rlen);
            for (int j = 0; j < k; j++)
                net->rc[net->rlen + (size_t)j] = h.coef;
            net->rlen += (size_t)k;
        }
        /* each copy's ends lie further into their blocks than the last's
         * (replica 0 leads them, no copy wraps): once the reductions drop
         * every hop of a copy (its nodes past the first p, its leaves past
         * the first group), they drop every later copy's */
        if (on && !kept)
            break;
    }
    net->nhops = 0;
}

/* Turns the route built so far into a flow of `bytes` (or, aggregating,
 * into a sub-flow of the aggregate). */
void coll_route_commit(coll_op *op, double bytes)
{
    mm_network *net = op->net;
    if (net->rlen == 0 || bytes <= 0 || net->oom)
        return;
    if (net->reps > 1 && net->nhops) /* the other replicas' copies load the links with this one */
        replay_replicas(net);
    /* sub-flows of one aggregate move equal bytes; another size goes alone */
    if (net->agg && (!net->an || bytes == net->abytes)) {
        net->abytes = bytes;
        for (size_t i = 0; i < net->rlen; i++) {
            int l = net->rl[i];
            if (net->acoef[l] == 0)
                net->atouch[net->an++] = l;
            net->acoef[l] += net->rc[i];
        }
        coll_route_clear(net);
        return;
    }
    if (net->probing) { /* mm_network_symmetric_probe: checked, recorded reduced, not started */
        if (!net->sym_proven) /* a ring proven by its structure needs no check (coll_sym.c) */
            net->sym_bad |= net->sym_cand & ~coll_sym_check(net);
        net->sym = net->sym_cand;
        coll_sym_reduce(net);
        net->sym = 0;
        coll_cache_note(net, net->rl, net->rc, net->rlen, bytes);
        coll_route_clear(net);
        return;
    }
    if (net->sym)
        coll_sym_reduce(net);
    if (mm_flownet_add(net->fn, net->rl, net->rc, (int)net->rlen, bytes, net->flow_done, op, 0) < 0) {
        net->oom = 1;
        return;
    }
    coll_cache_note(net, net->rl, net->rc, net->rlen, bytes);
    op->pending++;
    coll_route_clear(net);
}
