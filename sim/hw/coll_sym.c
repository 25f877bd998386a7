/* coll_sym.c - the flow model's max-min problem reduced by the symmetry of
 * identical DP replicas (coll.h, mm_network_symmetric): which links stand
 * for which, the check that a route loads a link as it loads the link's
 * image, and the route cut to the representatives.
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
    if (!net->symw) {
        net->symw = calloc((size_t)t->n_links + 1, sizeof *net->symw);
        net->symt = malloc(((size_t)t->n_links + 1) * sizeof *net->symt);
        net->sym_img = malloc(((size_t)t->n_links + 1) * sizeof *net->sym_img);
        net->sym_rep = malloc((size_t)t->n_links + 1);
    }
    free(net->sym_blk);
    net->sym_blk = calloc((size_t)nb, 1);
    if (!net->symw || !net->symt || !net->sym_img || !net->sym_rep || !net->sym_blk)
        return 0;
    /* each GPU of replica 0 the first of its block, whole blocks in the cluster */
    for (int i = 0; i < n; i++) {
        if (gpus[i] < 0 || gpus[i] % Bg >= stride || gpus[i] / Bg >= nb)
            return 0;
        net->sym_blk[gpus[i] / Bg] = 1;
    }
    net->sym_B = B, net->sym_nb = nb, net->sym_p = p;
    net->sym_cand = MM_SYM_NODES;
    int npl = c->nodes_per_leaf;
    net->sym_lsh = c->fabric == MM_FABRIC_RAIL ? K : 1;
    if (B % npl == 0 && B / npl >= 2 && c->spines > 0 && (long long)B * K % c->spines == 0) {
        net->sym_lg = B / npl;
        net->sym_ssh = (int)((long long)npl * K % c->spines);
        net->sym_cand |= MM_SYM_FABRIC;
    }
    for (int l = 0; l < t->n_links; l++) {
        net->sym_img[l] = image(net, l);
        net->sym_rep[l] = (uint8_t)representative(net, l);
    }
    net->probing = 1;
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
        double a = net->symw[l], b = net->symw[net->sym_img[l]];
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
        if (net->sym_rep[net->rl[i]] || !(net->rl[i] < o_fab ? node : fab)) {
            net->rl[k] = net->rl[i];
            net->rc[k++] = net->rc[i];
        }
    if (k > 0) /* never empty: an invariant route meets every orbit's representative */
        net->rlen = k;
}
