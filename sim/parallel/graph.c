/* graph.c - the op graph's arrays and its CSR finishing step.
 * A build first runs into a counting graph (nothing stored) and then into
 * a graph whose arrays mm_graph_reserve sized from those counts, so that
 * they are allocated once (docs/performance.md, "Memory"); growing by
 * doubling remains for graphs built without a count (tests, symmetry.c).
 * Not for: deciding which ops exist (build*.c) or running them (exec/exec.c). */
#include "parallel/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mm_op_cat_names[] = {"fwd", "bwd", "wgrad", "optimizer", "tp", "pp", "dp", "cp", "ep", NULL};

static int grow(void **p, uint32_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    if (ncap > UINT32_MAX)
        return -1;
    void *q = realloc(*p, ncap * size);
    if (!q)
        return -1;
    *p = q;
    *cap = (uint32_t)ncap;
    return 0;
}

/* Room for exactly `need` (a reservation: no doubling slack). */
static int exact(void **p, uint32_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    if (need > UINT32_MAX)
        return -1;
    void *q = realloc(*p, need * size);
    if (!q)
        return -1;
    *p = q;
    *cap = (uint32_t)need;
    return 0;
}

int mm_graph_init(mm_graph *g, int n_ranks)
{
    memset(g, 0, sizeof *g);
    g->n_ranks = n_ranks;
    g->replicas = 1;
    g->n_modules = 1;
    snprintf(g->module_names[0], sizeof g->module_names[0], "llm");
    return 0;
}

int mm_graph_init_counting(mm_graph *g, int n_ranks)
{
    mm_graph_init(g, n_ranks);
    g->counting = 1;
    return 0;
}

mm_graph_size mm_graph_size_of(const mm_graph *g)
{
    return (mm_graph_size){.ops = g->n_ops, .colls = g->n_colls, .gpus = g->n_gpus,
                           .rank_gpus = g->counting ? g->n_rank_gpus
                                        : g->rank_gpu_off ? g->rank_gpu_off[g->n_ranks] : 0,
                           .edges = g->n_edges};
}

int mm_graph_reserve(mm_graph *g, const mm_graph_size *sz)
{
    if (g->counting)
        return 0;
    if (exact((void **)&g->ops, &g->cap_ops, (size_t)sz->ops + 1, sizeof *g->ops) ||
        exact((void **)&g->colls, &g->cap_colls, (size_t)sz->colls + 1, sizeof *g->colls) ||
        exact((void **)&g->gpus, &g->cap_gpus, (size_t)sz->gpus + 1, sizeof *g->gpus))
        return -1;
    if (sz->edges + 1 > g->cap_edges) {
        uint32_t *q = realloc(g->edges, (sz->edges + 1) * 2 * sizeof *q);
        if (!q)
            return -1;
        g->edges = q;
        g->cap_edges = sz->edges + 1;
    }
    if (!g->rank_gpus && sz->rank_gpus && !(g->rank_gpus = malloc(((size_t)sz->rank_gpus + 1) * sizeof *g->rank_gpus)))
        return -1;
    g->cap_rank_gpus = g->rank_gpus ? sz->rank_gpus + 1 : 0;
    return 0;
}

int mm_graph_set_replicas(mm_graph *g, int replicas, int stride)
{
    if (replicas < 1 || g->n_ops || g->n_ranks % replicas || (replicas > 1 && stride <= 0))
        return -1;
    g->n_ranks /= replicas;
    g->replicas = replicas;
    g->rep_stride = replicas > 1 ? stride : 0;
    return 0;
}

int mm_graph_mark(mm_graph *g)
{
    if (g->replicas <= 1 || g->n_ops == g->seg_open)
        return 0;
    if (!g->counting) {
        if (grow((void **)&g->seg, &g->cap_seg, 2 * ((size_t)g->n_seg + 1), sizeof *g->seg))
            return -1;
        g->seg[2 * g->n_seg] = g->seg_open;
        g->seg[2 * g->n_seg + 1] = g->n_ops;
    }
    g->n_seg++;
    g->seg_open = g->n_ops;
    return 0;
}

void mm_graph_set_module(mm_graph *g, uint32_t id, int m)
{
    if (!g->counting)
        g->ops[id].module = (uint8_t)m;
}

void mm_graph_set_comm(mm_graph *g, uint32_t c, int ranks, int nodes)
{
    if (!g->counting)
        g->colls[c].comm_ranks = ranks, g->colls[c].comm_nodes = nodes;
}

void mm_graph_free(mm_graph *g)
{
    free(g->ops);
    free(g->colls);
    free(g->gpus);
    free(g->succ);
    free(g->edges);
    free(g->stream_ops);
    free(g->stream_off);
    free(g->rank_gpu_off);
    free(g->rank_gpus);
    free(g->seg);
    memset(g, 0, sizeof *g);
}

int64_t mm_graph_add_op(mm_graph *g, const mm_op *op)
{
    int k = g->replicas;
    if (k > 1 && (op->rank % k || (op->peer >= 0 && op->peer % k)))
        return -1; /* another replica's op in a one-replica graph */
    if (g->counting)
        return g->n_ops++;
    if (grow((void **)&g->ops, &g->cap_ops, (size_t)g->n_ops + 1, sizeof *g->ops))
        return -1;
    g->ops[g->n_ops] = *op;
    if (k > 1) {
        g->ops[g->n_ops].rank /= k;
        g->ops[g->n_ops].peer = op->peer >= 0 ? op->peer / k : -1;
    }
    g->ops[g->n_ops].ndeps = 0;
    g->ops[g->n_ops].nsucc = 0;
    return g->n_ops++;
}

int64_t mm_graph_add_coll(mm_graph *g, int kind, int members, int count,
                          double bytes, const int *gpus, int n)
{
    bool same = g->n_colls > 0 && g->last_n == (uint32_t)n && n > 0 &&
                memcmp(g->last_gpus, gpus, (size_t)n * sizeof *gpus) == 0;
    uint32_t off = same ? g->last_off : g->n_gpus;
    if (!same) {
        g->last_n = n <= 16 ? (uint32_t)n : 0; /* longer groups are not compared */
        g->last_off = off;
        if (g->last_n)
            memcpy(g->last_gpus, gpus, (size_t)n * sizeof *gpus);
    }
    if (g->counting) {
        g->n_gpus += same ? 0 : (uint32_t)n;
        return g->n_colls++;
    }
    if (grow((void **)&g->colls, &g->cap_colls, (size_t)g->n_colls + 1, sizeof *g->colls) ||
        (!same && grow((void **)&g->gpus, &g->cap_gpus, (size_t)g->n_gpus + (size_t)n, sizeof *g->gpus)))
        return -1;
    if (!same) {
        memcpy(g->gpus + g->n_gpus, gpus, (size_t)n * sizeof *gpus);
        g->n_gpus += (uint32_t)n;
    }
    g->colls[g->n_colls] = (mm_coll){kind, members, count, bytes, off, (uint32_t)n, 1, 0, 0, 0};
    return g->n_colls++;
}

int mm_graph_dep(mm_graph *g, uint32_t from, uint32_t to)
{
    if (g->counting) {
        g->n_edges++;
        return 0;
    }
    if (g->n_edges + 1 > g->cap_edges) {
        size_t ncap = g->cap_edges ? g->cap_edges * 2 : 256;
        uint32_t *q = realloc(g->edges, ncap * 2 * sizeof *q);
        if (!q)
            return -1;
        g->edges = q;
        g->cap_edges = ncap;
    }
    g->edges[2 * g->n_edges] = from;
    g->edges[2 * g->n_edges + 1] = to;
    g->n_edges++;
    g->ops[to].ndeps++;
    g->ops[from].nsucc++;
    return 0;
}

int mm_graph_rank_gpus(mm_graph *g, int r, const int *gpus, int n)
{
    if (g->replicas > 1) {
        if (r % g->replicas)
            return -1;
        r /= g->replicas;
    }
    if (g->counting) {
        if (r < 0 || r >= g->n_ranks || n < 0)
            return -1;
        g->n_rank_gpus += (uint32_t)n;
        return 0;
    }
    if (!g->rank_gpu_off) {
        g->rank_gpu_off = calloc((size_t)g->n_ranks + 1, sizeof *g->rank_gpu_off);
        if (!g->rank_gpu_off)
            return -1;
    }
    if (r < 0 || r >= g->n_ranks || n < 0)
        return -1;
    uint32_t at = g->rank_gpu_off[r];
    if ((size_t)at + (size_t)n + 1 > g->cap_rank_gpus) {
        int *q = realloc(g->rank_gpus, ((size_t)at + (size_t)n + 1) * sizeof *q);
        if (!q)
            return -1;
        g->rank_gpus = q;
        g->cap_rank_gpus = at + (uint32_t)n + 1;
    }
    int *q = g->rank_gpus;
    memcpy(q + at, gpus, (size_t)n * sizeof *gpus);
    g->rank_gpu_off[r + 1] = at + (uint32_t)n;
    return 0;
}

/* One replica's collectives (mm_graph.replicas): the members it holds
 * of each; all of them (the collective stands for its copies in every
 * replica) or 1/replicas of them (it spans the replicas).  -1 otherwise. */
static int replica_colls(mm_graph *g)
{
    if (g->replicas <= 1)
        return 0;
    if (mm_graph_mark(g))
        return -1;
    uint32_t *m0 = calloc((size_t)g->n_colls + 1, sizeof *m0);
    if (!m0)
        return -1;
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].coll >= 0)
            m0[g->ops[i].coll]++;
    int rc = 0;
    for (uint32_t c = 0; c < g->n_colls && rc == 0; c++) {
        mm_coll *cl = &g->colls[c];
        if (m0[c] > 0 && m0[c] == (uint32_t)cl->members)
            cl->replicas = g->replicas, cl->replica_stride = g->rep_stride;
        else if (m0[c] > 0 && (uint64_t)m0[c] * (uint64_t)g->replicas == (uint64_t)cl->members)
            cl->members = (int)m0[c];
        else
            rc = -1;
    }
    free(m0);
    return rc;
}

int mm_graph_finish(mm_graph *g)
{
    if (g->counting)
        return 0;
    if (replica_colls(g))
        return -1;
    /* Counting sort of edges by source keeps each op's successors in the
     * order the builder added them: deterministic release order. */
    free(g->succ);
    g->succ = malloc((g->n_edges ? g->n_edges : 1) * sizeof *g->succ);
    size_t nstreams = (size_t)g->n_ranks * MM_STREAM_COUNT;
    free(g->stream_off);
    free(g->stream_ops);
    g->stream_off = calloc(nstreams + 1, sizeof *g->stream_off);
    g->stream_ops = malloc((g->n_ops ? g->n_ops : 1) * sizeof *g->stream_ops);
    if (!g->succ || !g->stream_off || !g->stream_ops)
        return -1;
    uint32_t off = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        g->ops[i].succ_off = off;
        off += g->ops[i].nsucc;
        g->ops[i].nsucc = 0;
    }
    for (size_t e = 0; e < g->n_edges; e++) {
        mm_op *from = &g->ops[g->edges[2 * e]];
        g->succ[from->succ_off + from->nsucc++] = g->edges[2 * e + 1];
    }
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].stream != MM_STREAM_NONE)
            g->stream_off[(size_t)g->ops[i].rank * MM_STREAM_COUNT + g->ops[i].stream + 1]++;
    for (size_t s = 0; s < nstreams; s++)
        g->stream_off[s + 1] += g->stream_off[s];
    uint32_t *fill = calloc(nstreams ? nstreams : 1, sizeof *fill);
    if (!fill)
        return -1;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        if (g->ops[i].stream == MM_STREAM_NONE)
            continue;
        size_t s = (size_t)g->ops[i].rank * MM_STREAM_COUNT + g->ops[i].stream;
        g->stream_ops[g->stream_off[s] + fill[s]++] = i;
    }
    free(fill);
    return 0;
}
