/* critpath.c - backward walk over an executed op graph.
 *
 * Cost: one pass to invert the successor lists, then O(path length x
 * in-degree).  Ties (two predecessors ending at the same instant) go to
 * the op's stream predecessor, else to the lower op id, so the path is
 * deterministic and stays on a rank unless another rank made it wait (in a
 * uniform 1F1B pipeline every stage is tight; theory's path is the one
 * that stays on the last stage).
 * Not for: executing or measuring (exec.c, iterate.c). */
#include "exec/critpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct walk {
    const mm_graph *g;
    const mm_time *start, *end;
    uint32_t *pred_off, *pred;   /* CSR: predecessors of each op */
    uint32_t *stream_prev;       /* previous op on the same stream, or UINT32_MAX */
    uint32_t *coll_off, *coll_ops;
} walk;

/* The predecessor whose end is latest (the one the op waited for last). */
static uint32_t latest_pred(const walk *w, uint32_t id)
{
    uint32_t best = UINT32_MAX;
    mm_time t = -1;
    for (uint32_t k = w->pred_off[id]; k < w->pred_off[id + 1]; k++) {
        uint32_t p = w->pred[k];
        if (w->end[p] > t || (w->end[p] == t && p < best)) {
            t = w->end[p];
            best = p;
        }
    }
    uint32_t sp = w->stream_prev[id];
    if (sp != UINT32_MAX && w->end[sp] >= t)
        best = sp;
    return best;
}

static int build_walk(walk *w, const mm_graph *g)
{
    uint32_t n = g->n_ops;
    w->pred_off = calloc((size_t)n + 1, sizeof *w->pred_off);
    w->pred = malloc(((size_t)g->n_edges + 1) * sizeof *w->pred);
    w->stream_prev = malloc(((size_t)n + 1) * sizeof *w->stream_prev);
    w->coll_off = calloc((size_t)g->n_colls + 2, sizeof *w->coll_off);
    w->coll_ops = malloc(((size_t)n + 1) * sizeof *w->coll_ops);
    uint32_t *fill = calloc((size_t)n + (size_t)g->n_colls + 1, sizeof *fill);
    if (!w->pred_off || !w->pred || !w->stream_prev || !w->coll_off || !w->coll_ops || !fill) {
        free(fill);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = g->ops[i].succ_off; k < g->ops[i].succ_off + g->ops[i].nsucc; k++)
            w->pred_off[g->succ[k] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        w->pred_off[i + 1] += w->pred_off[i];
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = g->ops[i].succ_off; k < g->ops[i].succ_off + g->ops[i].nsucc; k++) {
            uint32_t s = g->succ[k];
            w->pred[w->pred_off[s] + fill[s]++] = i;
        }
    for (uint32_t i = 0; i < n; i++)
        w->stream_prev[i] = UINT32_MAX;
    size_t nstreams = (size_t)g->n_ranks * MM_STREAM_COUNT;
    for (size_t s = 0; s < nstreams; s++)
        for (uint32_t k = g->stream_off[s] + 1; k < g->stream_off[s + 1]; k++)
            w->stream_prev[g->stream_ops[k]] = g->stream_ops[k - 1];
    uint32_t *cf = fill + n;
    for (uint32_t i = 0; i < n; i++)
        if (g->ops[i].coll >= 0)
            w->coll_off[g->ops[i].coll + 1]++;
    for (uint32_t c = 0; c < g->n_colls; c++)
        w->coll_off[c + 1] += w->coll_off[c];
    memset(cf, 0, (size_t)g->n_colls * sizeof *cf);
    for (uint32_t i = 0; i < n; i++)
        if (g->ops[i].coll >= 0) {
            uint32_t c = (uint32_t)g->ops[i].coll;
            w->coll_ops[w->coll_off[c] + cf[c]++] = i;
        }
    free(fill);
    return 0;
}

static void free_walk(walk *w)
{
    free(w->pred_off);
    free(w->pred);
    free(w->stream_prev);
    free(w->coll_off);
    free(w->coll_ops);
}

/* Accumulates one stretch of the path. */
static int add_entry(mm_critpath *cp, int *cap, int rank, int stage, const char *what, double sec)
{
    for (int i = 0; i < cp->n; i++)
        if (cp->e[i].rank == rank && !strcmp(cp->e[i].what, what)) {
            cp->e[i].seconds += sec;
            cp->e[i].ops++;
            if (cp->e[i].stage != stage)
                cp->e[i].stage = -1;
            return 0;
        }
    if (cp->n == *cap) {
        int nc = *cap ? *cap * 2 : 32;
        mm_crit_entry *q = realloc(cp->e, (size_t)nc * sizeof *q);
        if (!q)
            return -1;
        cp->e = q;
        *cap = nc;
    }
    mm_crit_entry *e = &cp->e[cp->n++];
    memset(e, 0, sizeof *e);
    e->rank = rank;
    e->stage = stage;
    snprintf(e->what, sizeof e->what, "%s", what);
    e->seconds = sec;
    e->ops = 1;
    return 0;
}

static int by_seconds(const void *a, const void *b)
{
    const mm_crit_entry *x = a, *y = b;
    if (x->seconds != y->seconds)
        return x->seconds > y->seconds ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->what, y->what);
}

int mm_critpath_compute(const mm_graph *g, const mm_time *start, const mm_time *end, mm_time t0,
                        mm_time t1, mm_critpath *cp)
{
    memset(cp, 0, sizeof *cp);
    if (g->n_ops == 0)
        return 0;
    walk w = {.g = g, .start = start, .end = end};
    if (build_walk(&w, g)) {
        free_walk(&w);
        return -1;
    }
    uint32_t cur = 0;
    for (uint32_t i = 1; i < g->n_ops; i++)
        if (end[i] > end[cur])
            cur = i;
    int cap = 0, rc = 0;
    double total = (double)(t1 - t0);
    mm_time covered_until = t1;
    if (end[cur] < t1)
        rc = add_entry(cp, &cap, -1, -1, "wait", (double)(t1 - end[cur]) * 1e-9);
    while (rc == 0 && cur != UINT32_MAX) {
        const mm_op *op = &g->ops[cur];
        double dur = (double)(end[cur] - start[cur]) * 1e-9;
        if (dur > 0) {
            char what[24];
            if (op->module > 0 && op->module < g->n_modules) /* an encoder's op: "vision:fwd" */
                snprintf(what, sizeof what, "%s:%s", g->module_names[op->module], mm_op_cat_names[op->cat]);
            else
                snprintf(what, sizeof what, "%s", mm_op_cat_names[op->cat]);
            rc = add_entry(cp, &cap, op->rank, op->stage, what, dur);
        }
        cp->path_ops++;
        covered_until = start[cur];
        uint32_t from = cur;
        if (op->coll >= 0) {
            /* the collective started when its last member was ready */
            uint32_t c = (uint32_t)op->coll;
            mm_time latest = -1;
            for (uint32_t k = w.coll_off[c]; k < w.coll_off[c + 1]; k++) {
                uint32_t mbr = w.coll_ops[k], p = latest_pred(&w, mbr);
                mm_time ready = p == UINT32_MAX ? t0 : end[p];
                if (ready > latest) {
                    latest = ready;
                    from = mbr;
                }
            }
        }
        uint32_t prev = latest_pred(&w, from);
        if (prev != UINT32_MAX && end[prev] < start[cur] && rc == 0)
            rc = add_entry(cp, &cap, -1, -1, "wait", (double)(start[cur] - end[prev]) * 1e-9);
        cur = prev;
    }
    if (rc == 0 && covered_until > t0)
        rc = add_entry(cp, &cap, -1, -1, "wait", (double)(covered_until - t0) * 1e-9);
    free_walk(&w);
    if (rc) {
        mm_critpath_free(cp);
        return -1;
    }
    for (int i = 0; i < cp->n; i++)
        cp->e[i].share = total > 0 ? cp->e[i].seconds / (total * 1e-9) : 0;
    qsort(cp->e, (size_t)cp->n, sizeof *cp->e, by_seconds);
    return 0;
}

void mm_critpath_free(mm_critpath *cp)
{
    free(cp->e);
    memset(cp, 0, sizeof *cp);
}
