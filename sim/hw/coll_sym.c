/* coll_sym.c - the flow model's max-min problem reduced by the symmetry of
 * identical DP replicas (coll.h, mm_network_symmetric): which links stand
 * for which, the check that a route loads a link as it loads the link's
 * image, the proofs of that from a collective's shape (rings, aggregate
 * all-to-alls, copies of the replicas: the end of this file), which
 * nodes' links a reduction keeps, and the route cut to the
 * representatives.
 *
 * Why it is exact.  Max-min fairness over links with constraints
 * sum_f a(f, l) r_f <= cap(l): two links with the same capacity and the
 * same coefficient for every flow are one constraint written twice, and
 * dropping one changes no rate.  Given a permutation T of the links that
 * keeps capacities, a flow whose coefficients satisfy a(f, T l) = a(f, l)
 * on every link it uses satisfies it on every link (T permutes the finite
 * set of links it uses); when every flow does, each link carries the
 * constraint of every link of its T-orbit, and one link per orbit is
 * enough.  Two such permutations are used, on disjoint links, each
 * cyclic inside a *block* (a GPU of replica 0 and its replicas - 1 copies:
 * replicas x stride GPUs; a pipeline's stages are separate blocks):
 * node X's links to node X + p's (p the nodes one replica moves by, 1
 * when replicas share a node), keeping each block's first p nodes; and a
 * fabric link (leaf l, spine s) to (l + one leaf group, s +
 * nodes_per_leaf x NICs mod spines), the image of a route moved by one
 * leaf group's nodes under D-mod-k routing, keeping each block's first
 * leaf group (only where blocks are whole leaf groups and block x NICs is
 * a multiple of the spines, so that the spine shift wraps with the
 * block).  Links outside the job's blocks are their own images.  The
 * check is exact whatever the permutation: a reduction is kept only if
 * every flow of the run passed it.
 * Capacities are equal under both when nothing is perturbed and no node
 * group has its own NICs (mm_network_symmetric refuses otherwise).  The
 * coefficients are compared to 1e-12 relative: a link's sum may add the
 * same terms in another order than its image's.
 * Not for: which flows a collective makes (coll.c) or the solver (flow.c). */
#include "hw/coll_internal.h"

#include <math.h>
#include <stdlib.h>

/* The block of node X in the job, or -1. */
static int block_of(const mm_network *net, int X)
{
    int b = X / net->sym_B;
    return b < net->sym_nb && net->sym_blk[b] ? b : -1;
}

/* The image of link l: a node link one period on and a fabric link one
 * leaf group on, cyclically inside its block; links outside the job are
 * their own. */
static int image(const mm_network *net, int l)
{
    const mm_topo *t = &net->topo;
    int B = net->sym_B;
    if (l < t->o_fabric) {
        int X = l / t->per_node, b = block_of(net, X);
        if (b < 0)
            return l;
        int Y = b * B + (X - b * B + net->sym_p) % B;
        return l + (Y - X) * t->per_node;
    }
    if (!(net->sym_cand & MM_SYM_FABRIC))
        return l;
    int S = net->c->spines, f = l - t->o_fabric, dir = f % 2, lf = f / 2 / S, s = f / 2 % S;
    int lsh = net->sym_lsh, gr = lf / lsh, b = block_of(net, gr * net->c->nodes_per_leaf);
    if (b < 0)
        return l;
    int g0 = b * net->sym_lg, g2 = g0 + (gr - g0 + 1) % net->sym_lg;
    s = (s + net->sym_ssh) % S;
    return t->o_fabric + 2 * ((g2 * lsh + lf % lsh) * S + s) + dir;
}

/* Whether link l stands for its orbit: a node link of its block's first
 * period, a fabric link of its block's first leaf group, or a link
 * outside the job (its own image). */
static int representative(const mm_network *net, int l)
{
    const mm_topo *t = &net->topo;
    if (l < t->o_fabric) {
        int X = l / t->per_node;
        return block_of(net, X) < 0 || X % net->sym_B < net->sym_p;
    }
    if (!(net->sym_cand & MM_SYM_FABRIC))
        return 1;
    int gr = (l - t->o_fabric) / 2 / net->c->spines / net->sym_lsh, npl = net->c->nodes_per_leaf;
    return block_of(net, gr * npl) < 0 || gr % net->sym_lg == 0;
}

int mm_network_symmetric(mm_network *net, int replicas, int stride, const int *gpus, int n)
{
    const mm_cluster *c = net->c;
    const mm_topo *t = &net->topo;
    int G = c->gpus_per_node, K = c->nics_per_node, p;
    long long Bg = (long long)replicas * stride; /* GPUs of a block: a GPU of replica 0 and its copies */
    net->sym = net->sym_cand = net->sym_bad = 0;
    net->probing = 0;
    if (!net->fn || replicas < 2 || stride <= 0 || n < 1 || Bg % G || c->pt.n || c->n_groups || t->any_dead ||
        t->any_xlat)
        return 0;
    if (stride % G == 0)
        p = stride / G;
    else if (G % stride == 0)
        p = 1;
    else
        return 0;
    int B = (int)(Bg / G), nb = c->nodes / B;
    if (B < 2 * p || nb < 1)
        return 0;
    if (!net->symw) { /* zeroed pages: only the links a checked route touches are ever written */
        net->symw = calloc((size_t)t->n_links + 1, sizeof *net->symw);
        net->symt = malloc(((size_t)t->n_links + 1) * sizeof *net->symt);
    }
    free(net->sym_blk);
    net->sym_blk = calloc((size_t)nb, 1);
    if (!net->symw || !net->symt || !net->sym_blk)
        return 0;
    /* each GPU of replica 0 the first of its block, whole blocks in the cluster */
    for (int i = 0; i < n; i++) {
        if (gpus[i] < 0 || gpus[i] % Bg >= stride || gpus[i] / Bg >= nb)
            return 0;
        net->sym_blk[gpus[i] / Bg] = 1;
    }
    net->sym_B = B, net->sym_nb = nb, net->sym_p = p, net->sym_reps = replicas, net->sym_stride = stride;
    net->sym_cand = MM_SYM_NODES;
    int npl = c->nodes_per_leaf;
    net->sym_lsh = c->fabric == MM_FABRIC_RAIL ? K : 1;
    if (B % npl == 0 && B / npl >= 2 && c->spines > 0 && (long long)B * K % c->spines == 0) {
        net->sym_lg = B / npl;
        net->sym_ssh = (int)((long long)npl * K % c->spines);
        net->sym_cand |= MM_SYM_FABRIC;
    }
    net->probing = 1; /* a link's image and class are computed where asked (image, representative) */
    return net->sym_cand;
}

int mm_network_symmetric_done(mm_network *net)
{
    net->probing = 0;
    net->sym = net->sym_cand & ~net->sym_bad;
    if (net->sym_bad) /* the probes recorded routes reduced by what a later one broke */
        coll_cache_forget_flows(&net->cache);
    return net->sym;
}

int coll_sym_check(mm_network *net)
{
    const mm_topo *t = &net->topo;
    size_t nt = 0;
    for (size_t i = 0; i < net->rlen; i++) {
        int l = net->rl[i];
        if (net->symw[l] == 0)
            net->symt[nt++] = l;
        net->symw[l] += net->rc[i];
    }
    int ok = net->sym_cand;
    for (size_t i = 0; i < nt; i++) {
        int l = net->symt[i], bit = l < t->o_fabric ? MM_SYM_NODES : MM_SYM_FABRIC;
        if (!(ok & bit))
            continue;
        double a = net->symw[l], b = net->symw[image(net, l)];
        if (fabs(a - b) > 1e-12 * fabs(a))
            ok &= ~bit;
    }
    for (size_t i = 0; i < nt; i++)
        net->symw[net->symt[i]] = 0;
    return ok;
}

void coll_sym_reduce(mm_network *net)
{
    size_t k = 0;
    int o_fab = net->topo.o_fabric, node = net->sym & MM_SYM_NODES, fab = net->sym & MM_SYM_FABRIC;
    for (size_t i = 0; i < net->rlen; i++)
        if (!(net->rl[i] < o_fab ? node : fab) || representative(net, net->rl[i])) {
            net->rl[k] = net->rl[i];
            net->rc[k++] = net->rc[i];
        }
    if (k > 0) /* never empty: an invariant route meets every orbit's representative */
        net->rlen = k;
}

/* Whether the reductions `on` keep node X's links (representative()'s
 * rule for a node link), and the fabric links of X's leaves (its rule for
 * a fabric link). */
int coll_sym_node_kept(const mm_network *net, int on, int X)
{
    return !(on & MM_SYM_NODES) || block_of(net, X) < 0 || X % net->sym_B < net->sym_p;
}

int coll_sym_leaf_kept(const mm_network *net, int on, int X)
{
    int gr = X / net->c->nodes_per_leaf;
    return !(on & MM_SYM_FABRIC) || block_of(net, gr * net->c->nodes_per_leaf) < 0 || gr % net->sym_lg == 0;
}

int coll_sym_hop_kept(const mm_network *net, int on, int X, int Y)
{
    if (coll_sym_node_kept(net, on, X) || coll_sym_node_kept(net, on, Y))
        return 1;
    return X != Y && (coll_sym_leaf_kept(net, on, X) || coll_sym_leaf_kept(net, on, Y));
}

/* Whether moving every node of op's group d nodes on, cyclically inside
 * its block, maps the group onto itself with each node's members at the
 * same local indices (every node in a block of the job).  Inside a block
 * the move keeps the sorted nodes' cyclic order, rotated: the nodes
 * d from the block's end wrap to its front. */
static int rotates(const mm_network *net, const coll_op *op, int d)
{
    const mm_cluster *c = net->c;
    int N = coll_nodes_of(op), B = net->sym_B, G = c->gpus_per_node;
    for (int i0 = 0, i1; i0 < N; i0 = i1) {
        int b = block_of(net, mm_cluster_node_of(c, coll_member(op, i0, 0))), w = 0;
        if (b < 0)
            return 0;
        for (i1 = i0; i1 < N && mm_cluster_node_of(c, coll_member(op, i1, 0)) / B == b; i1++)
            w += mm_cluster_node_of(c, coll_member(op, i1, 0)) - b * B >= B - d;
        int len = i1 - i0;
        for (int j = i0; j < i1; j++) {
            int i = i0 + (j - i0 + len - w) % len, m = coll_members(op, i);
            int Xi = mm_cluster_node_of(c, coll_member(op, i, 0)), Xj = mm_cluster_node_of(c, coll_member(op, j, 0));
            if (b * B + (Xi - b * B + d) % B != Xj || coll_members(op, j) != m)
                return 0;
            for (int k = 0; k < m; k++)
                if (coll_member(op, i, k) % G != coll_member(op, j, k) % G)
                    return 0;
        }
    }
    return 1;
}

/* The ring of coll.c (ring_channel: within each node from the entry of
 * the channel's NIC, then to the next node's entry on that rail, the last
 * node back to the first).  Node links: a node's links carry the hops
 * inside it and the node's ends of the hops in and out, all functions of
 * its members' local indices and the rail (no node groups, no
 * perturbation, as mm_network_symmetric requires), whichever node the
 * hops come from or go to.  So when the node permutation (X to X + p,
 * cyclically in each block) maps the group's nodes onto themselves with
 * members at the same local indices, every node link is loaded as its
 * image: what coll_sym_check would find.  Fabric links: they depend on
 * the pairs of nodes a hop joins.  When the group lies in one block and X
 * to X + nodes_per_leaf maps it onto itself likewise, that move rotates
 * the sorted nodes' cyclic order and so the ring (hop h to hop R h); a
 * hop moved by one leaf group leaves from the next leaf group on the same
 * rail and D-mod-k moves its spine by nodes_per_leaf x NICs
 * (mm_topo_fabric_path), the fabric image, and at the block's end the
 * shift is block x NICs, a multiple of the spines (the fabric
 * candidate's condition).  So the fabric links too are loaded as their
 * images.  A group over several blocks gets no fabric proof here. */
int coll_sym_ring_proven(const mm_network *net, const coll_op *op, int on)
{
    const mm_cluster *c = net->c;
    int N = coll_nodes_of(op), pr = 0;
    if (!on || net->sym_noproof || net->reps > 1 || N < 2 || (on & ~net->sym_cand))
        return 0;
    if ((on & MM_SYM_NODES) && rotates(net, op, net->sym_p))
        pr |= MM_SYM_NODES;
    int B = net->sym_B, b = mm_cluster_node_of(c, op->g[0]) / B;
    if ((on & MM_SYM_FABRIC) && mm_cluster_node_of(c, op->g[op->n - 1]) / B == b && /* sorted: one block */
        rotates(net, op, c->nodes_per_leaf))
        pr |= MM_SYM_FABRIC;
    return pr;
}

/* The aggregate all-to-all (coll_a2a.c, its two flows under
 * can_aggregate): its coefficients count the ordered pairs (source node,
 * destination GPU) over each link, every node holding the group's
 * members at the same local indices.  Any permutation of the group's
 * nodes maps those pairs onto themselves; the node permutation (X to
 * X + p in each block) maps each pair's node links to their images, and
 * X to X + nodes_per_leaf in each block its fabric links (the next leaf
 * group on the same rail; D-mod-k moves the spine by nodes_per_leaf x
 * NICs, or by that less block x NICs where the destination wraps, a
 * multiple of the spines).  So each reduction whose move maps the group's
 * nodes onto themselves keeps both flows exact, over any number of
 * blocks. */
int coll_sym_a2a_proven(const mm_network *net, const coll_op *op, int on)
{
    int pr = 0;
    if (!on || net->sym_noproof || net->reps > 1 || (on & ~net->sym_cand))
        return 0;
    if ((on & MM_SYM_NODES) && rotates(net, op, net->sym_p))
        pr |= MM_SYM_NODES;
    if ((on & MM_SYM_FABRIC) && rotates(net, op, net->c->nodes_per_leaf))
        pr |= MM_SYM_FABRIC;
    return pr;
}

/* A collective replicated as the symmetry's replicas (coll_route.c
 * replay_replicas: copy r is copy 0's route with every GPU moved by r x
 * stride) whose members are GPUs of replica 0 (each first in its block):
 * every copy moves each member inside its own block, so copy r's hops are
 * copy 0's moved by r x stride GPUs, whatever the algorithm.  Moving one
 * node on (p nodes: one copy when stride is whole nodes, G / stride
 * copies when replicas share a node) takes each copy's hops to the next
 * copy's at the same local indices and rails, the last copy's to the
 * first's (a block is replicas x stride GPUs): the node permutation maps
 * the copies' node links onto each other.  Moving one leaf group on
 * (nodes_per_leaf x G / stride copies, when whole) does the same for the
 * fabric links: each end moves a leaf group inside its block and D-mod-k
 * moves the spine by nodes_per_leaf x NICs (less block x NICs, a multiple
 * of the spines, where it wraps).  A group inside one node touches no
 * fabric link at all.  SHARP's trees (collnet) are left to the check. */
int coll_sym_copies_proven(const mm_network *net, const coll_op *op, int on)
{
    const mm_cluster *c = net->c;
    long long Bg = (long long)net->sym_reps * net->sym_stride;
    if (!on || net->sym_noproof || (on & ~net->sym_cand) || net->reps != net->sym_reps ||
        net->rstride != net->sym_stride || op->algo == MM_ALGO_COLLNET)
        return 0;
    for (int i = 0; i < op->n; i++)
        if (op->g[i] % Bg >= net->sym_stride || block_of(net, mm_cluster_node_of(c, op->g[i])) < 0)
            return 0;
    int pr = on & MM_SYM_NODES;
    if ((on & MM_SYM_FABRIC) &&
        (op->s.nodes == 1 || (long long)c->nodes_per_leaf * c->gpus_per_node % net->sym_stride == 0))
        pr |= MM_SYM_FABRIC;
    return pr;
}
