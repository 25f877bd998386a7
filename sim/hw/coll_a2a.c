/* coll_a2a.c - the all-to-all as flows: one per pair, or, where max-min
 * gives every pair one rate, two aggregate flows whose coefficients count
 * the pairs on each link (docs/performance.md).
 * Not for: the other algorithms or the phase machine (coll.c). */
#include "hw/coll_internal.h"

#include "hw/flow.h"

#include <stdlib.h>

/* Starts the aggregate flow of the sub-flows merged since the last flush:
 * one flow of abytes whose coefficient on each link is the sum of the
 * sub-flows' (so that at rate r it loads the link as they would at r
 * each).  Max-min gives it the rate every sub-flow would get when they all
 * get the same one (symmetry: see can_aggregate). */
static void agg_flush(coll_op *op)
{
    mm_network *net = op->net;
    if (!net->an)
        return;
    net->agg = 0;
    coll_route_clear(net);
    if (coll_route_fit(net, net->an) == 0) {
        for (size_t i = 0; i < net->an; i++) {
            int l = net->atouch[i];
            net->rl[i] = l;
            net->rc[i] = net->acoef[l];
        }
        net->rlen = net->an;
        coll_route_commit(op, net->abytes);
    }
    for (size_t i = 0; i < net->an; i++)
        net->acoef[net->atouch[i]] = 0;
    net->an = 0;
    coll_route_clear(net);
    net->agg = 1;
}

/* Whether the sub-flows of an all-to-all all get one max-min rate, so
 * that they may move as aggregates: the links are unperturbed and of the
 * base node's rates (no node groups, no link perturbation), every node
 * holds the same local GPUs of the group, and every NIC the group uses
 * serves as many of them.  Then the per-pair flows are images of each
 * other under permutations of nodes and rails that map the link graph
 * onto itself, and so are their rates.  (A fat tree whose last leaf is
 * partly filled breaks the symmetry of the uplinks; the aggregate then
 * moves at the pace of its most loaded uplink, which the per-pair
 * all-to-all also waits for, as it ends with its slowest flow.) */
static int can_aggregate(const coll_op *op)
{
    const mm_cluster *c = op->net->c;
    if (!op->net->aggregate || c->n_groups || op->s.min_per_node != op->s.max_per_node)
        return 0;
    for (int i = 0; i < c->pt.n; i++) {
        int k = c->pt.e[i].kind;
        if (k == MM_PT_NIC || k == MM_PT_RAIL || k == MM_PT_SWITCH || k == MM_PT_LINK || k == MM_PT_NODE_GROUP)
            return 0;
    }
    int N = coll_nodes_of(op), m = coll_members(op, 0), G = c->gpus_per_node;
    for (int X = 1; X < N; X++)
        for (int j = 0; j < m; j++)
            if (coll_member(op, X, j) % G != coll_member(op, 0, j) % G)
                return 0;
    int per_nic = -1, run = 0;
    for (int j = 0; j <= m; j++) { /* members are sorted, so a NIC's GPUs are contiguous */
        if (j > 0 && (j == m || mm_cluster_nic_of(c, coll_member(op, 0, j)) != mm_cluster_nic_of(c, coll_member(op, 0, j - 1)))) {
            if (per_nic >= 0 && run != per_nic)
                return 0;
            per_nic = run;
            run = 0;
        }
        run++;
    }
    return 1;
}

/* Adds the route built so far into the aggregate with weight w (w
 * sub-flows take it), keeping only the links of node `node` (>= 0) or of
 * the fabric (node < 0). */
static void agg_add(mm_network *net, int node, double w)
{
    const mm_topo *t = &net->topo;
    int lo = node >= 0 ? node * t->per_node : t->o_fabric, hi = node >= 0 ? lo + t->per_node : t->n_links;
    for (size_t i = 0; i < net->rlen; i++) {
        int l = net->rl[i];
        if (l < lo || l >= hi)
            continue;
        if (net->acoef[l] == 0)
            net->atouch[net->an++] = l;
        net->acoef[l] += net->rc[i] * w;
    }
    coll_route_clear(net);
}

/* The uplinks of leaf group [A, B)'s pass of alltoall_cross_agg past the
 * second: every (destination node Y outside it, member j) reaches the
 * uplink of its NIC k towards spine s(Y, k); the walk adds B - A per
 * route, first touching the uplinks in the order (k, s) first appears
 * over Y ascending.  fc: counts per (k, s) key over all destinations
 * (keys 0 .. keys - 1, fabric_all), over the group's own (keys ..),
 * first-seen stamps (2 keys ..); fc[3 keys] the member index where the
 * later groups start. */
static void fabric_counts(coll_op *op, int *fc, size_t keys, int A, int B, int pass)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    const mm_topo *t = &net->topo;
    int N = coll_nodes_of(op), m = coll_members(op, 0), K = c->nics_per_node, S = c->spines;
    int anode = mm_cluster_node_of(c, coll_member(op, A, 0));
    int *all = fc, *own = fc + keys, *seen = fc + 2 * keys;
    size_t distinct = 0;
    for (size_t q = 0; q < keys; q++)
        distinct += all[q] > 0;
    for (int Y = A; Y < B; Y++)
        for (int j = 0; j < m; j++) {
            int dst = coll_member(op, Y, j), k = mm_cluster_nic_of(c, dst);
            size_t q = (size_t)k * S + (size_t)(((int64_t)(dst / c->gpus_per_node) * K + k) % S);
            if (++own[q] == all[q])
                distinct--; /* a key only the group's own nodes reach */
        }
    for (int Y = 0; Y < N && distinct > 0; Y++) {
        if (Y >= A && Y < B)
            continue;
        for (int j = 0; j < m && distinct > 0; j++) {
            int dst = coll_member(op, Y, j), k = mm_cluster_nic_of(c, dst), fl[2];
            size_t q = (size_t)k * S + (size_t)(((int64_t)(dst / c->gpus_per_node) * K + k) % S);
            if (seen[q] == pass)
                continue;
            seen[q] = pass;
            distinct--;
            if (mm_topo_fabric_path(t, anode, dst / c->gpus_per_node, k, k, fl) != 2)
                continue;
            if (net->acoef[fl[0]] == 0)
                net->atouch[net->an++] = fl[0];
            net->acoef[fl[0]] += (double)(B - A) * (all[q] - own[q]);
        }
    }
    for (int Y = A; Y < B; Y++)
        for (int j = 0; j < m; j++) {
            int dst = coll_member(op, Y, j), k = mm_cluster_nic_of(c, dst);
            own[(size_t)k * S + (size_t)(((int64_t)(dst / c->gpus_per_node) * K + k) % S)] = 0;
        }
}

/* fabric_counts' counts per (NIC, spine) over every destination, and
 * where the groups past the first two start (A). */
static void fabric_all(const coll_op *op, int *fc, size_t keys, int A)
{
    const mm_cluster *c = op->net->c;
    int N = coll_nodes_of(op), m = coll_members(op, 0), K = c->nics_per_node, S = c->spines;
    fc[3 * keys] = A;
    for (int Y = 0; Y < N; Y++)
        for (int j = 0; j < m; j++) {
            int dst = coll_member(op, Y, j), k = mm_cluster_nic_of(c, dst);
            fc[(size_t)k * S + (size_t)(((int64_t)(dst / c->gpus_per_node) * K + k) % S)]++;
        }
}

/* The cross-node sub-flows of a symmetric all-to-all (can_aggregate) as one
 * aggregate, without walking its N (N-1) m routes: a route from node X to
 * member j of node Y is links of node X (proxy GPU, PCIe, NIC k and its
 * leaf port: they depend on X and the rail k = NIC of j only), links of
 * node Y (on Y and j only), and fabric links, which depend only on X's
 * leaf group and on Y, j (D-mod-k picks the spine by the destination; a
 * route inside one leaf group has none).  So N K + N m + (leaf groups) N m
 * routes give every link's count of sub-flows: X's own links carry its
 * (N-1) m_k sub-flows on rail k, Y's links the N-1 that reach j, a fabric
 * link the |a| sources of group a times the destinations routed over it.
 * The counts are the brute-force sums (integers, exact), so the aggregate
 * is the same flow as merging every route one by one.  Under a proven
 * symmetric reduction (net->sym_proven, coll_sym.c) only the links it
 * keeps are summed: the same entries in the same order as reducing the
 * whole aggregate. */
static void alltoall_cross_agg(coll_op *op, double bytes)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    int N = coll_nodes_of(op), m = coll_members(op, 0), G = c->gpus_per_node, npl = c->nodes_per_leaf;
    int on = net->sym_proven;
    coll_route_clear(net);
    net->an = 0;
    for (int X = 0; X < N; X++) {
        int node = mm_cluster_node_of(c, coll_member(op, X, 0)), Y = (X + 1) % N;
        if (on && !coll_sym_node_kept(net, on, node))
            continue;
        for (int j = 0; j < m; j++) { /* the first member on each NIC stands for the rail */
            int k = mm_cluster_nic_of(c, coll_member(op, Y, j)), mk = 1;
            if (j > 0 && mm_cluster_nic_of(c, coll_member(op, Y, j - 1)) == k)
                continue;
            while (j + mk < m && mm_cluster_nic_of(c, coll_member(op, Y, j + mk)) == k)
                mk++;
            coll_route_hop(net, node * G + mm_topo_nic_gpu(c, k), coll_member(op, Y, j), k, k, 1.0);
            agg_add(net, node, (double)(N - 1) * mk);
        }
    }
    for (int Y = 0; Y < N; Y++) {
        int X = (Y + 1) % N, xnode = mm_cluster_node_of(c, coll_member(op, X, 0));
        int ynode = mm_cluster_node_of(c, coll_member(op, Y, 0));
        if (on && !coll_sym_node_kept(net, on, ynode))
            continue;
        for (int j = 0; j < m; j++) {
            int dst = coll_member(op, Y, j), k = mm_cluster_nic_of(c, dst);
            coll_route_hop(net, xnode * G + mm_topo_nic_gpu(c, k), dst, k, k, 1.0);
            agg_add(net, ynode, N - 1.0);
        }
    }
    /* Past the first two leaf groups, a group's pass touches no new
     * downlink (the first pass reached every other group's, the second
     * the first group's), and its uplinks depend only on (NIC k, spine):
     * fabric_counts adds them in their order of first touch with the
     * counts the walk would sum, and the later passes' downlink weights
     * after; all integers, so the same sums. */
    int *fc = NULL;
    size_t keys = (size_t)c->nics_per_node * (size_t)c->spines;
    if (!net->topo.any_dead && keys <= (1u << 20))
        fc = calloc(3 * keys + 1, sizeof *fc);
    int pass = 0;
    double later = 0; /* member-nodes of the groups past the first two */
    for (int A = 0; A < N; pass++) { /* leaf groups: members sorted, so nodes ascend */
        int anode = mm_cluster_node_of(c, coll_member(op, A, 0)), grp = anode / npl, B = A;
        while (B < N && mm_cluster_node_of(c, coll_member(op, B, 0)) / npl == grp)
            B++;
        int up = !on || coll_sym_leaf_kept(net, on, anode); /* its uplinks kept */
        if (fc && pass >= 2) {
            if (pass == 2)
                fabric_all(op, fc, keys, A);
            if (up)
                fabric_counts(op, fc, keys, A, B, pass);
            later += B - A;
            A = B;
            continue;
        }
        for (int Y = 0; Y < N; Y++) {
            if ((Y >= A && Y < B) ||
                (!up && !coll_sym_leaf_kept(net, on, mm_cluster_node_of(c, coll_member(op, Y, 0)))))
                continue; /* neither its uplink nor its downlink kept */
            for (int j = 0; j < m; j++) { /* the fabric links of the route from anode's NIC k to dst */
                int dst = coll_member(op, Y, j), k = mm_cluster_nic_of(c, dst), fl[2];
                int nf = mm_topo_fabric_path(&net->topo, anode, dst / G, k, k, fl);
                for (int i = 0; i < nf; i++) { /* agg_add's sum, 1.0 x (B - A) */
                    if (net->acoef[fl[i]] == 0)
                        net->atouch[net->an++] = fl[i];
                    net->acoef[fl[i]] += 1.0 * (B - A);
                }
            }
        }
        A = B;
    }
    if (fc && pass > 2) /* the later groups' sub-flows into each destination, by its downlink */
        for (int Y = 0; Y < N;) {
            int ynode = mm_cluster_node_of(c, coll_member(op, Y, 0)), grp = ynode / npl, Z = Y;
            while (Z < N && mm_cluster_node_of(c, coll_member(op, Z, 0)) / npl == grp)
                Z++;
            if (on && !coll_sym_leaf_kept(net, on, ynode)) { /* its downlinks dropped */
                Y = Z;
                continue;
            }
            /* the groups past the first two, less Y's own when it is one of them */
            double w = later - (Y >= fc[3 * keys] ? Z - Y : 0);
            for (int X = Y; X < Z; X++)
                for (int j = 0; j < m && w > 0; j++) {
                    int dst = coll_member(op, X, j), k = mm_cluster_nic_of(c, dst), fl[2];
                    int src = Y > 0 ? mm_cluster_node_of(c, coll_member(op, 0, 0))
                                    : mm_cluster_node_of(c, coll_member(op, N - 1, 0));
                    if (mm_topo_fabric_path(&net->topo, src, dst / G, k, k, fl) == 2)
                        net->acoef[fl[1]] += w;
                }
            Y = Z;
        }
    free(fc);
    net->abytes = bytes;
    agg_flush(op);
}

/* One flow per ordered pair inside a node, one per (source node,
 * destination GPU) across nodes; under symmetry (can_aggregate) the
 * intra-node pairs of all nodes move as one aggregate and the cross-node
 * ones as another, so that an all-to-all over G GPUs is two flows instead
 * of G (G/N - 1) + N (N - 1) G/N. */
void coll_alltoall_flows(coll_op *op)
{
    mm_network *net = op->net;
    const mm_cluster *c = net->c;
    int N = coll_nodes_of(op), G = c->gpus_per_node;
    double per = op->bytes / op->n;
    net->agg = can_aggregate(op);
    /* under the symmetric reduction, aggregates proven to keep it exact
     * (coll_sym.c) sum only the links it keeps, and are not checked */
    int on = net->probing ? net->sym_cand : net->sym;
    net->sym_proven = net->agg && on && coll_sym_a2a_proven(net, op, on) == on ? on : 0; /* none for copies */
    for (int X = 0; X < N; X++) {
        if (net->sym_proven && !coll_sym_node_kept(net, net->sym_proven, mm_cluster_node_of(c, coll_member(op, X, 0))))
            continue; /* its pairs load its links alone */
        for (int i = 0; i < coll_members(op, X); i++)
            for (int j = 0; j < coll_members(op, X); j++)
                if (i != j) {
                    coll_route_hop(net, coll_member(op, X, i), coll_member(op, X, j), 0, 0, 1.0);
                    coll_route_commit(op, per);
                }
    }
    if (net->agg) {
        agg_flush(op);
        if (N > 1)
            alltoall_cross_agg(op, coll_members(op, 0) * per);
        net->agg = 0;
        net->sym_proven = 0;
        return;
    }
    net->sym_proven = 0;
    for (int X = 0; X < N; X++)
        for (int Y = 0; Y < N; Y++) {
            if (X == Y)
                continue;
            int node = mm_cluster_node_of(c, coll_member(op, X, 0));
            for (int j = 0; j < coll_members(op, Y); j++) {
                int dst = coll_member(op, Y, j), k = mm_cluster_nic_of(c, dst);
                int src = node * G + mm_topo_nic_gpu(c, k);
                coll_route_hop(net, src, dst, k, k, 1.0);
                coll_route_commit(op, coll_members(op, X) * per);
            }
        }
}

