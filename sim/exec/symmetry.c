/* symmetry.c - identical DP replicas simulated once (symmetry.h): the
 * replica-0 subgraph, its run, and the times copied back to every replica.
 * Not for: deciding costs or metrics (costs.c, iterate.c). */
#include "exec/symmetry.h"

#include <stdlib.h>
#include <string.h>

bool mm_sym_applies(const mm_sim *sim)
{
    const mm_scenario *sc = &sim->sc;
    bool own = sim->n_enc > 0 &&
               (sc->parallel.placement == MM_PLACE_PIPELINE || sc->parallel.placement == MM_PLACE_DISJOINT);
    return !sim->no_symmetry && !sim->wl && sim->cluster->pt.n == 0 && sim->cluster->n_groups == 0 &&
           sc->parallel.llm.lay.dp > 1 && sc->parallel.llm.lay.ep <= 1 && !own;
}

/* Rails map onto rails when a replica moves by `stride` GPUs. */
static bool rails_kept(const mm_cluster *c, int stride)
{
    return stride > 0 && (stride % c->gpus_per_node == 0 || (long long)stride * c->nics_per_node % c->gpus_per_node == 0);
}

/* Whether replica d's n entries of size sz at base + d * n * sz (d =
 * 1..dp-1) equal replica 0's. */
static bool same_per_replica(const void *base, size_t n, size_t sz, int dp)
{
    const char *p = base;
    for (int d = 1; p && d < dp; d++)
        if (memcmp(p, p + (size_t)d * n * sz, n * sz))
            return false;
    return true;
}

bool mm_sym_build_once(const mm_sim *sim, const mm_build_spec *sp)
{
    int dp = sp->lay.dp, V = sp->lay.pp * sp->lay.vpp;
    if (sim->full_build || !mm_sym_applies(sim) || dp < 2 || sp->enc_a2a_bytes > 0 || sp->pre_a2a_bytes > 0 ||
        sp->post_a2a_bytes > 0 || !rails_kept(sim->cluster, mm_build_gpu(sp, 0, 0, 1, 0) - mm_build_gpu(sp, 0, 0, 0, 0)))
        return false;
    /* mb_costs: (vs dp + d) m + mb */
    for (int v = 0; sp->mb_costs && v < V; v++)
        if (!same_per_replica(sp->mb_costs + (size_t)v * dp * sp->m, (size_t)sp->m, sizeof *sp->mb_costs, dp))
            return false;
    for (int i = 0; i < sp->n_enc; i++)
        if (sp->enc[i].ranks || !same_per_replica(sp->enc[i].mb, (size_t)sp->m, sizeof *sp->enc[i].mb, dp))
            return false;
    return true;
}

/* What the collapse needs to know about g; freed by sym_free. */
typedef struct sym {
    int dp, P;
    uint32_t *pos;   /* op -> its index among its rank's ops */
    uint32_t *off;   /* rank -> first entry in by_rank (CSR) */
    uint32_t *by_rank;
    int64_t *sub;    /* op of replica 0 -> its id in the subgraph; -1 otherwise */
    int stride;      /* GPUs between replica d and d + 1 */
} sym;

static void sym_free(sym *y)
{
    free(y->pos);
    free(y->off);
    free(y->by_rank);
    free(y->sub);
}

static bool in0(const sym *y, int rank)
{
    return rank % y->dp == 0;
}

/* The replica-0 op standing for op o. */
static uint32_t counterpart(const sym *y, const mm_graph *g, uint32_t o)
{
    int r = g->ops[o].rank, r0 = r - r % y->dp;
    return y->by_rank[y->off[r0] + y->pos[o]];
}

/* Ops per rank, and whether every replica's rank has the same ops (kind,
 * cost, stream) and GPUs shifted by one stride per replica. */
static bool sym_index(sym *y, const mm_graph *g)
{
    int R = g->n_ranks;
    y->off = calloc((size_t)R + 1, sizeof *y->off);
    y->pos = malloc(((size_t)g->n_ops + 1) * sizeof *y->pos);
    y->by_rank = malloc(((size_t)g->n_ops + 1) * sizeof *y->by_rank);
    y->sub = malloc(((size_t)g->n_ops + 1) * sizeof *y->sub);
    if (!y->off || !y->pos || !y->by_rank || !y->sub || !g->rank_gpu_off)
        return false;
    for (uint32_t o = 0; o < g->n_ops; o++) {
        if (g->ops[o].rank < 0 || g->ops[o].rank >= R)
            return false;
        y->pos[o] = y->off[g->ops[o].rank + 1]++;
    }
    for (int r = 0; r < R; r++)
        y->off[r + 1] += y->off[r];
    for (uint32_t o = 0; o < g->n_ops; o++)
        y->by_rank[y->off[g->ops[o].rank] + y->pos[o]] = o;
    const uint32_t *go = g->rank_gpu_off;
    y->stride = R > 1 && go[1] > go[0] && go[2] > go[1] ? g->rank_gpus[go[1]] - g->rank_gpus[go[0]] : 0;
    if (y->stride <= 0)
        return false;
    for (int r = 0; r < R; r++) {
        int r0 = r - r % y->dp, d = r % y->dp;
        if (y->off[r + 1] - y->off[r] != y->off[r0 + 1] - y->off[r0] || go[r + 1] - go[r] != go[r0 + 1] - go[r0])
            return false;
        for (uint32_t k = 0; k < go[r + 1] - go[r]; k++)
            if (g->rank_gpus[go[r] + k] != g->rank_gpus[go[r0] + k] + d * y->stride)
                return false;
    }
    for (uint32_t o = 0; o < g->n_ops; o++) {
        const mm_op *a = &g->ops[o], *b = &g->ops[counterpart(y, g, o)];
        if (a->stream != b->stream || a->cat != b->cat || (a->coll < 0) != (b->coll < 0) ||
            memcmp(&a->dur_s, &b->dur_s, sizeof a->dur_s) || (a->peer < 0) != (b->peer < 0))
            return false;
    }
    return true;
}

/* The replica-0 subgraph: its ops in id order (so each stream keeps its
 * order), its edges, its collectives; false when an edge or a transfer
 * crosses replicas, or a collective's members are not dp equal shares. */
static bool sym_build(sym *y, const mm_graph *g, mm_graph *s)
{
    uint32_t *m0 = calloc((size_t)g->n_colls + 1, sizeof *m0), *mall = calloc((size_t)g->n_colls + 1, sizeof *mall);
    int64_t *nc = malloc(((size_t)g->n_colls + 1) * sizeof *nc);
    bool ok = m0 && mall && nc && mm_graph_init(s, y->P) == 0;
    for (uint32_t o = 0; ok && o < g->n_ops; o++)
        if (g->ops[o].coll >= 0) {
            m0[g->ops[o].coll] += in0(y, g->ops[o].rank);
            mall[g->ops[o].coll]++;
        }
    for (uint32_t c = 0; ok && c < g->n_colls; c++)
        nc[c] = -1;
    if (ok) {
        s->n_modules = g->n_modules;
        memcpy(s->module_names, g->module_names, sizeof s->module_names);
    }
    for (int p = 0; ok && p < y->P; p++) {
        int r = p * y->dp;
        ok = mm_graph_rank_gpus(s, p, g->rank_gpus + g->rank_gpu_off[r],
                                (int)(g->rank_gpu_off[r + 1] - g->rank_gpu_off[r])) == 0;
    }
    for (uint32_t o = 0; ok && o < g->n_ops; o++) {
        mm_op op = g->ops[o];
        y->sub[o] = -1;
        if (!in0(y, op.rank))
            continue;
        if (op.coll >= 0 && nc[op.coll] < 0) {
            const mm_coll *cl = &g->colls[op.coll];
            bool local = m0[op.coll] == mall[op.coll];
            if (!local && mall[op.coll] != (uint32_t)y->dp * m0[op.coll])
                ok = false;
            else if ((nc[op.coll] = mm_graph_add_coll(s, cl->kind, (int)m0[op.coll], cl->count, cl->bytes,
                                                      g->gpus + cl->gpu_off, (int)cl->n_gpus)) < 0)
                ok = false;
            else if (local)
                s->colls[nc[op.coll]].replicas = y->dp, s->colls[nc[op.coll]].replica_stride = y->stride;
            if (ok) /* the p2p communicator (graph.h) */
                s->colls[nc[op.coll]].comm_ranks = cl->comm_ranks, s->colls[nc[op.coll]].comm_nodes = cl->comm_nodes;
        }
        if (!ok || (op.peer >= 0 && !in0(y, op.peer)))
            ok = false;
        op.rank /= y->dp;
        op.peer = op.peer >= 0 ? op.peer / y->dp : -1;
        op.coll = op.coll >= 0 ? (int32_t)nc[op.coll] : -1;
        if (ok && (y->sub[o] = mm_graph_add_op(s, &op)) < 0)
            ok = false;
    }
    for (uint32_t o = 0; ok && o < g->n_ops; o++)
        for (uint32_t k = g->ops[o].succ_off; ok && k < g->ops[o].succ_off + g->ops[o].nsucc; k++) {
            uint32_t t = g->succ[k];
            if (in0(y, g->ops[o].rank) != in0(y, g->ops[t].rank))
                ok = false; /* an edge between replicas */
            else if (y->sub[o] >= 0 && mm_graph_dep(s, (uint32_t)y->sub[o], (uint32_t)y->sub[t]))
                ok = false;
        }
    ok = ok && mm_graph_finish(s) == 0;
    free(m0);
    free(mall);
    free(nc);
    return ok;
}

int mm_sym_exec(mm_engine *eng, const mm_graph *g, int dp, const mm_cluster *c, mm_exec_net net,
                const mm_exec_opts *opts, mm_time *start, mm_time *end, mm_time *t_end, mm_err *err)
{
    sym y = {.dp = dp, .P = dp > 0 ? g->n_ranks / dp : 0};
    mm_graph s;
    memset(&s, 0, sizeof s);
    bool ok = dp > 1 && y.P > 0 && g->n_ranks == y.P * dp && sym_index(&y, g);
    /* rails must map onto rails when a replica moves inside a node */
    ok = ok && rails_kept(c, y.stride);
    ok = ok && sym_build(&y, g, &s);
    int rc;
    if (!ok) {
        mm_graph_free(&s);
        sym_free(&y);
        return mm_exec_run_opts(eng, g, c, net, opts, start, end, t_end, err);
    }
    mm_time *ss = malloc(((size_t)s.n_ops + 1) * sizeof *ss), *se = malloc(((size_t)s.n_ops + 1) * sizeof *se);
    /* the host's per-op records, of the reduced graph, mapped back below */
    mm_exec_opts so = opts ? *opts : (mm_exec_opts){0};
    if (so.sym_replicas == 0) /* the network's reduction (exec.h); -1: asked off */
        so.sym_replicas = y.dp, so.sym_stride = y.stride;
    so.host_start = opts && opts->host_start ? malloc(((size_t)s.n_ops + 1) * sizeof *so.host_start) : NULL;
    so.host_wait = opts && opts->host_wait ? malloc(((size_t)s.n_ops + 1) * sizeof *so.host_wait) : NULL;
    if (!ss || !se || (opts && opts->host_start && !so.host_start) || (opts && opts->host_wait && !so.host_wait))
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    else
        rc = mm_exec_run_opts(eng, &s, c, net, &so, ss, se, t_end, err);
    for (uint32_t o = 0; rc == 0 && o < g->n_ops; o++) {
        int64_t k = y.sub[counterpart(&y, g, o)];
        start[o] = ss[k];
        end[o] = se[k];
        if (so.host_start)
            opts->host_start[o] = so.host_start[k];
        if (so.host_wait)
            opts->host_wait[o] = so.host_wait[k];
    }
    free(so.host_start);
    free(so.host_wait);
    free(ss);
    free(se);
    mm_graph_free(&s);
    sym_free(&y);
    return rc;
}
