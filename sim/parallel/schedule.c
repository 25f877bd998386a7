/* schedule.c - step orders of GPipe, 1F1B, interleaved 1F1B, ZB-H1,
 * ZB-2p and ZB-V.
 * Not for: dependencies or timing of the iteration (build*.c emits the ops
 * in this order; ZB-2p's and ZB-V's heuristics only predict times to
 * choose it). */
#include "parallel/schedule.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int mm_schedule_len(mm_schedule kind, int m, int v)
{
    return mm_schedule_splits_w(kind) ? 3 * m * v : 2 * m * v;
}

int mm_schedule_zbv_cap_halves(int p, int m)
{
    return 4 * (p < m ? p : m);
}

int mm_schedule_zb2p_cap(int p, int m)
{
    return 2 * p < m ? 2 * p : m;
}

static int one_f_one_b(int p, int s, int m, mm_sched_step *out)
{
    int k = 0, warm = p - s - 1 < m ? p - s - 1 : m, f = 0, b = 0;
    for (; f < warm; f++)
        out[k++] = (mm_sched_step){MM_PASS_F, f, 0};
    while (f < m) {
        out[k++] = (mm_sched_step){MM_PASS_F, f++, 0};
        out[k++] = (mm_sched_step){MM_PASS_B, b++, 0};
    }
    while (b < m)
        out[k++] = (mm_sched_step){MM_PASS_B, b++, 0};
    return k;
}

/* Megatron-LM's mapping of the k-th forward (backward) step to a chunk and
 * a micro-batch. */
static mm_sched_step interleaved_step(int pass, int k, int p, int v)
{
    int in_group = k % (p * v);
    int chunk = in_group / p;
    if (pass == MM_PASS_B)
        chunk = v - 1 - chunk;
    return (mm_sched_step){pass, (k / (p * v)) * p + k % p, chunk};
}

static int interleaved(int p, int s, int m, int v, mm_sched_step *out)
{
    int total = m * v, k = 0;
    int warm = (p - s - 1) * 2 + (v - 1) * p;
    if (m == p || warm > total)
        warm = total; /* Megatron: all warm-up when m == p */
    for (int f = 0; f < warm; f++)
        out[k++] = interleaved_step(MM_PASS_F, f, p, v);
    for (int i = 0; i < total - warm; i++) {
        out[k++] = interleaved_step(MM_PASS_F, warm + i, p, v);
        out[k++] = interleaved_step(MM_PASS_B, i, p, v);
    }
    for (int b = total - warm; b < total; b++)
        out[k++] = interleaved_step(MM_PASS_B, b, p, v);
    return k;
}

/* 1F1B's F/B order with each W deferred until s more backwards ran. */
static int zb_h1(int p, int s, int m, mm_sched_step *out)
{
    int k = 0, warm = p - s - 1 < m ? p - s - 1 : m, f = 0, b = 0, w = 0;
    for (; f < warm; f++)
        out[k++] = (mm_sched_step){MM_PASS_F, f, 0};
    while (b < m) {
        if (f < m)
            out[k++] = (mm_sched_step){MM_PASS_F, f++, 0};
        out[k++] = (mm_sched_step){MM_PASS_B, b, 0};
        if (b++ >= s)
            out[k++] = (mm_sched_step){MM_PASS_W, w++, 0};
    }
    while (w < m)
        out[k++] = (mm_sched_step){MM_PASS_W, w++, 0};
    return k;
}

/* ZB-2p (schedule.h): the paper's heuristic (Qi et al. section 3.1) run
 * on all stages at once, predicting each pass's end.  Memory in halves of
 * a micro-batch's activations: F takes 2, B frees 1, W frees 1 (the
 * authors' mem_f 2, mem_b -1, mem_w -1), at most 2 * 2p.  Stage j's
 * passes: tf/tb/tw[j * m + mb] their predicted ends. */
typedef struct zb_state {
    int p, m, cap2, *f, *b, *w, *mem, *order_n, s; /* s < 0: every rank's order, rank j's at out + j * 3m */
    double *tf, *tb, *tw, *e, *bub, maxbub, comm;
    const double *cf, *cb, *cw;
    mm_sched_step *out;
} zb_state;

static double zb_cost(const zb_state *z, int j, int pass)
{
    return pass == MM_PASS_F ? z->cf[j] : pass == MM_PASS_B ? z->cb[j] : z->cw[j];
}

/* Places stage j's next pass of the kind: after the stage's last and, for
 * F and B, after its input arrives from the neighbour. */
static void zb_put(zb_state *z, int j, int pass)
{
    int m = z->m, *n = pass == MM_PASS_F ? z->f : pass == MM_PASS_B ? z->b : z->w, mb = n[j];
    double c = zb_cost(z, j, pass), end = z->e[j] + c;
    if (pass == MM_PASS_F && j > 0 && z->tf[(size_t)(j - 1) * m + mb] + z->comm + c > end)
        end = z->tf[(size_t)(j - 1) * m + mb] + z->comm + c;
    if (pass == MM_PASS_B && j < z->p - 1 && z->tb[(size_t)(j + 1) * m + mb] + z->comm + c > end)
        end = z->tb[(size_t)(j + 1) * m + mb] + z->comm + c;
    if (z->f[j] > 0) {
        z->bub[j] += end - (z->e[j] + c);
        z->maxbub = z->bub[j] > z->maxbub ? z->bub[j] : z->maxbub;
    }
    z->e[j] = end;
    (pass == MM_PASS_F ? z->tf : pass == MM_PASS_B ? z->tb : z->tw)[(size_t)j * m + mb] = end;
    z->mem[j] += pass == MM_PASS_F ? 2 : -1;
    n[j]++;
    if (z->out && z->s < 0)
        z->out[(size_t)j * 3 * m + (size_t)(z->f[j] + z->b[j] + z->w[j] - 1)] = (mm_sched_step){pass, mb, 0};
    else if (j == z->s && z->out)
        z->out[z->order_n[0]++] = (mm_sched_step){pass, mb, 0};
}

/* Before a pass whose input arrives at `at`: deferred W passes that end
 * by then, and one more that overruns it when the gap is larger than the
 * stage's slack to the worst stage's bubble, or always (greedy). */
static void zb_fill(zb_state *z, int j, double at, int greedy)
{
    while (z->w[j] < z->b[j] && z->e[j] + z->cw[j] <= at)
        zb_put(z, j, MM_PASS_W);
    if (z->w[j] < z->b[j] && z->e[j] < at && (greedy || at - z->e[j] > z->maxbub - z->bub[j]))
        zb_put(z, j, MM_PASS_W);
}

/* One run of the heuristic: bubble_first lets the warm-up's last forward
 * end past the first B's arrival; greedy as zb_fill.  Returns the cost
 * the paper minimizes, the longest stage's first F start to last W end. */
static double zb_run(zb_state *z, int bubble_first, int greedy)
{
    int p = z->p, m = z->m;
    for (int j = 0; j < p; j++)
        z->f[j] = z->b[j] = z->w[j] = z->mem[j] = 0, z->e[j] = z->bub[j] = 0;
    z->order_n[0] = 0, z->maxbub = 0;
    /* warm-up: one forward everywhere, then per stage (last to first) the
     * forwards that fit before its first B can run, fewer than the stage
     * before it takes, then the first B up the pipeline */
    for (int j = 0; j < p; j++)
        zb_put(z, j, MM_PASS_F);
    int *req = z->order_n + 1;
    double last = 0;
    for (int j = p - 1; j >= 0; j--) {
        req[j] = 0;
        if (j == p - 1) {
            last = z->tf[(size_t)j * m] + z->cb[j];
            continue;
        }
        int mem = z->mem[j];
        double cost = z->e[j];
        while (z->f[j] + req[j] < m && mem + 2 <= z->cap2) {
            if (bubble_first ? cost + z->cf[j] > last + z->comm : cost >= last + z->comm)
                break;
            mem += 2, cost += z->cf[j], req[j]++;
        }
        last = (cost > last + z->comm ? cost : last + z->comm) + z->cb[j];
    }
    for (int j = 1; j < p; j++)
        while (req[j] > 0 && req[j] >= req[j - 1] && z->f[j] + req[j] < m)
            req[j]--;
    for (int j = 0; j < p; j++)
        for (int k = 0; k < req[j]; k++)
            zb_put(z, j, MM_PASS_F);
    for (int j = p - 1; j >= 0; j--)
        zb_put(z, j, MM_PASS_B);
    /* steady state: a forward on every stage that has one left (none on a
     * stage whose successor has run out), then micro-batch i's B up the
     * pipeline; W passes where memory needs them or a gap fits them */
    for (int i = 1; i < m; i++) {
        for (int j = 0; j < p; j++)
            req[j] = z->f[j] < m;
        for (int j = p - 2; j >= 0; j--)
            req[j] = req[j] < req[j + 1] ? req[j] : req[j + 1];
        for (int j = 0; j < p; j++) {
            if (!req[j])
                continue;
            while (z->mem[j] + 2 > z->cap2 && z->w[j] < z->b[j])
                zb_put(z, j, MM_PASS_W);
            if (j > 0)
                zb_fill(z, j, z->tf[(size_t)(j - 1) * m + z->f[j]] + z->comm, greedy);
            zb_put(z, j, MM_PASS_F);
        }
        for (int j = p - 1; j >= 0; j--) {
            if (j < p - 1)
                zb_fill(z, j, z->tb[(size_t)(j + 1) * m + i] + z->comm, greedy);
            if (j == 0 && z->f[j] == m)
                while (z->w[j] < z->b[j])
                    zb_put(z, j, MM_PASS_W);
            zb_put(z, j, MM_PASS_B);
        }
    }
    double span = 0;
    for (int j = 0; j < p; j++) {
        while (z->w[j] < m)
            zb_put(z, j, MM_PASS_W);
        double x = z->tw[(size_t)j * m + m - 1] - z->tf[(size_t)j * m] + z->cf[j];
        span = x > span ? x : span;
    }
    return span;
}

/* ZB-2p: four variants of the heuristic (of the eight the authors'
 * initial solution tries: not those that hold a forward back), the
 * cheapest kept (the first on a tie); stage
 * s's order of it into out. */
static int zb_2p(int p, int s, int m, const mm_sched_times *t, mm_sched_step *out)
{
    size_t pm = (size_t)p * m;
    double *d = malloc(sizeof *d * (3 * pm + 5 * (size_t)p));
    int *n = malloc(sizeof *n * (5 * (size_t)p + 1 + (size_t)p));
    if (!d || !n) {
        free(d), free(n);
        return -1;
    }
    zb_state z = {.p = p, .m = m, .cap2 = 4 * p, .f = n, .b = n + p, .w = n + 2 * p, .mem = n + 3 * p,
                  .order_n = n + 4 * p, .s = s, .tf = d, .tb = d + pm, .tw = d + 2 * pm, .e = d + 3 * pm,
                  .bub = d + 3 * pm + p, .comm = t ? t->comm : 0};
    double *unit = d + 3 * pm + 2 * (size_t)p;
    for (int j = 0; j < 3 * p; j++)
        unit[j] = 1;
    z.cf = t ? t->f : unit, z.cb = t ? t->b : unit + p, z.cw = t ? t->w : unit + 2 * p;
    double best = -1;
    int bf = 1, gr = 1;
    for (int a = 1; a >= 0; a--)
        for (int g = 1; g >= 0; g--) {
            double x = zb_run(&z, a, g);
            if (best < 0 || x < best)
                best = x, bf = a, gr = g;
        }
    z.out = out;
    zb_run(&z, bf, gr);
    int k = z.order_n[0];
    if (s < 0) { /* every rank's: each ran its 3m passes */
        k = 3 * m;
        for (int j = 0; j < p; j++)
            if (z.f[j] + z.b[j] + z.w[j] != 3 * m)
                k = -1;
    }
    free(d), free(n);
    return k == 3 * m ? k : -1;
}

/* ZB-V's heuristic (schedule.h) on all ranks at once, predicting each
 * pass's end as zb_run does ZB-2p's.  Virtual stage vs of 2p: rank
 * mm_schedule_vstage_rank, chunk 1 on vs >= p; per virtual stage and pass
 * the micro-batches run in order: n[3 * vs + pass] the next, te[(3 * vs +
 * pass) * m + j] each pass's end (-1: not placed).  Per rank: e its
 * predicted busy-until, mem its held halves, bub its bubble, wq its
 * deferred W passes (virtual stages, in B order) from wq_h to wq_t. */
typedef struct zv_state {
    int p, m, cap, s, k, fill_f, fill_b, *n, *mem, *wq, *wq_h, *wq_t, *ord;
    int *kr; /* s < 0: steps written per rank, rank r's at out + r * 6m */
    double *te, *e, *bub, *first, maxbub, comm;
    const mm_sched_times *t;
    mm_sched_step *out;
} zv_state;

static int zv_vs(const zv_state *z, int r, int c)
{
    return mm_schedule_vstage(MM_SCHEDULE_ZB_V, z->p, r, c);
}

static double zv_end(const zv_state *z, int vs, int pass, int j)
{
    return j < z->m ? z->te[((size_t)3 * vs + pass) * z->m + j] : -1;
}

/* When the input of rank r's next pass of the kind on chunk c can start
 * there (its predecessor's end plus a transfer between ranks, none at the
 * turn), or -1 while that predecessor is not placed. */
static double zv_ready(const zv_state *z, int r, int c, int pass)
{
    int vs = zv_vs(z, r, c), V = 2 * z->p, j = z->n[3 * vs + pass], from;
    if (j >= z->m)
        return -1;
    if (pass == MM_PASS_F) {
        if (vs == 0)
            return 0;
        from = vs - 1;
    } else if (vs == V - 1) {
        from = -1; /* the last virtual stage's B follows its own F */
    } else {
        from = vs + 1;
    }
    double own = zv_end(z, vs, MM_PASS_F, j); /* a B needs its own F too */
    if (pass == MM_PASS_B && own < 0)
        return -1;
    if (from < 0)
        return own;
    double x = zv_end(z, from, pass, j);
    if (x < 0)
        return -1;
    x += mm_schedule_vstage_rank(MM_SCHEDULE_ZB_V, z->p, from) == r ? 0 : z->comm;
    return pass == MM_PASS_B && own > x ? own : x;
}

static double zv_cost(const zv_state *z, int vs, int pass)
{
    const double *d = !z->t ? NULL : pass == MM_PASS_F ? z->t->f : pass == MM_PASS_B ? z->t->b : z->t->w;
    return d ? d[vs] : 1;
}

/* Places rank r's next pass of the kind on chunk c (a W: the oldest
 * deferred one, c ignored) at its predicted time. */
static void zv_put(zv_state *z, int r, int c, int pass)
{
    int vs = pass == MM_PASS_W ? z->wq[(size_t)r * 2 * z->m + z->wq_h[r]++] : zv_vs(z, r, c);
    double ready = pass == MM_PASS_W ? 0 : zv_ready(z, r, vs >= z->p, pass);
    double start = ready > z->e[r] ? ready : z->e[r];
    if (z->first[r] >= 0) {
        z->bub[r] += start - z->e[r];
        z->maxbub = z->bub[r] > z->maxbub ? z->bub[r] : z->maxbub;
    } else {
        z->first[r] = start;
    }
    int j = z->n[3 * vs + pass]++;
    z->e[r] = start + zv_cost(z, vs, pass);
    z->te[((size_t)3 * vs + pass) * z->m + j] = z->e[r];
    z->mem[r] += pass == MM_PASS_F ? 2 : -1;
    if (pass == MM_PASS_B)
        z->wq[(size_t)r * 2 * z->m + z->wq_t[r]++] = vs;
    if (z->out && z->s < 0)
        z->out[(size_t)r * 6 * z->m + (size_t)z->kr[r]++] = (mm_sched_step){pass, j, vs >= z->p};
    else if (r == z->s && z->out)
        z->out[z->k++] = (mm_sched_step){pass, j, vs >= z->p};
}

/* Before rank r's next pass of the kind on chunk c, whose input arrives
 * at `at`: the deferred W passes that end by then, and one that overruns
 * it when the wait is larger than the rank's slack to the worst rank's
 * bubble and `fill` (zb_fill's rule). */
static void zv_fill(zv_state *z, int r, double at, int fill)
{
    int cw = z->wq_h[r] < z->wq_t[r] ? z->wq[(size_t)r * 2 * z->m + z->wq_h[r]] : -1;
    while (cw >= 0 && z->e[r] + zv_cost(z, cw, MM_PASS_W) <= at) {
        zv_put(z, r, 0, MM_PASS_W);
        cw = z->wq_h[r] < z->wq_t[r] ? z->wq[(size_t)r * 2 * z->m + z->wq_h[r]] : -1;
    }
    if (cw >= 0 && fill && at - z->e[r] > z->maxbub - z->bub[r])
        zv_put(z, r, 0, MM_PASS_W);
}

/* Places rank r's next pass of the kind on chunk c when its input is
 * placed (returns 1), W passes first where memory needs them or they fit
 * the wait; 0 when it cannot run yet. */
static int zv_try(zv_state *z, int r, int c, int pass, int fill)
{
    double at = zv_ready(z, r, c, pass);
    if (at < 0)
        return 0;
    while (pass == MM_PASS_F && z->mem[r] + 2 > z->cap && z->wq_h[r] < z->wq_t[r])
        zv_put(z, r, 0, MM_PASS_W);
    if (pass == MM_PASS_F && z->mem[r] + 2 > z->cap)
        return 0;
    zv_fill(z, r, at, fill);
    zv_put(z, r, c, pass);
    return 1;
}

/* One run of the heuristic; returns the span (the longest rank's first
 * pass start to last pass end) or -1 where it stalls. */
static double zv_run(zv_state *z)
{
    int p = z->p, m = z->m, V = 2 * p;
    for (size_t i = 0; i < (size_t)3 * V * m; i++)
        z->te[i] = -1;
    for (int i = 0; i < 3 * V; i++)
        z->n[i] = 0;
    for (int r = 0; r < p; r++)
        z->mem[r] = z->wq_h[r] = z->wq_t[r] = z->kr[r] = 0, z->e[r] = z->bub[r] = 0, z->first[r] = -1;
    z->maxbub = 0, z->k = 0;
#define ZV_N(r, c, pass) (z->n[3 * zv_vs(z, r, c) + (pass)])
    /* warm-up, 1: a chunk-0 forward down the ranks; then from the last
     * rank up, each rank's first chunk-1 forward, rank r preceded by the
     * chunk-0 forwards (run on ranks 0..r) that end before that forward's
     * input arrives from rank r+1 and leave room for 2r+1 more */
    for (int r = 0; r < p; r++)
        zv_put(z, r, 0, MM_PASS_F);
    for (int r = p - 1; r >= 0; r--) {
        if (r < p - 1) {
            double at = zv_ready(z, r, 1, MM_PASS_F);
            for (;;) {
                int ok = ZV_N(r, 0, MM_PASS_F) < m && z->e[r] + zv_cost(z, zv_vs(z, r, 0), MM_PASS_F) <= at &&
                         z->mem[r] + 2 * (2 + 2 * r) <= z->cap;
                for (int q = 0; q < r; q++)
                    ok = ok && z->mem[q] + 4 <= z->cap;
                if (!ok)
                    break;
                for (int q = 0; q <= r; q++)
                    zv_put(z, q, 0, MM_PASS_F);
            }
        }
        zv_put(z, r, 1, MM_PASS_F);
    }
    /* 2: each rank from the second on takes as many forwards as the rank
     * before it, alternately chunk 0 and 1, placed on the ranks from the
     * last down to it where their input is placed and memory allows */
    for (int r = 1, c = 0; r < p; r++) {
        int tot_prev = ZV_N(r - 1, 0, MM_PASS_F) + ZV_N(r - 1, 1, MM_PASS_F);
        for (int idle = 0; idle < 2 && ZV_N(r, 0, MM_PASS_F) + ZV_N(r, 1, MM_PASS_F) < tot_prev; c = 1 - c) {
            int placed = 0;
            for (int q = p - 1; q >= r; q--) {
                if (c == 1 && ZV_N(q, 1, MM_PASS_F) >= ZV_N(q, 0, MM_PASS_F))
                    continue;
                if (z->mem[q] + 2 <= z->cap && zv_ready(z, q, c, MM_PASS_F) >= 0)
                    zv_put(z, q, c, MM_PASS_F), placed = 1;
            }
            idle = placed ? 0 : idle + 1;
        }
    }
    /* rounds: each rank one B, then one F, where their inputs are placed;
     * B: chunk 1 (first of the two on the way back) unless chunk 0 has one
     * owed whose input is placed, or at the turn; the chunk-1 ranks in
     * the order chunk 1's gradients flow (0 up), then the chunk-0 ranks
     * (down).  F: chunk 1 where its input is placed, else chunk 0. */
    int *b1 = z->ord, *b0 = z->ord + p, nb1 = 0, nb0 = 0;
    for (int stall = 0; stall < 2;) {
        int placed = 0, left = 0;
        nb1 = nb0 = 0;
        for (int r = 0; r < p; r++) {
            int x1 = ZV_N(r, 1, MM_PASS_B), x0 = ZV_N(r, 0, MM_PASS_B);
            if (x0 >= m)
                continue;
            left = 1;
            if (x1 < m && (x1 == x0 || (r < p - 1 && zv_ready(z, r, 0, MM_PASS_B) < 0)))
                b1[nb1++] = r;
            else
                b0[nb0++] = r;
        }
        for (int i = 0; i < nb1; i++)
            placed += zv_try(z, b1[i], 1, MM_PASS_B, 1);
        for (int i = nb0 - 1; i >= 0; i--)
            placed += zv_try(z, b0[i], 0, MM_PASS_B, z->fill_b);
        for (int r = 0; r < p; r++) {
            int f1 = ZV_N(r, 1, MM_PASS_F), f0 = ZV_N(r, 0, MM_PASS_F);
            if (f1 >= m)
                continue;
            left = 1;
            if (f1 < f0 && zv_try(z, r, 1, MM_PASS_F, z->fill_f))
                placed++;
            else if (f0 < m)
                placed += zv_try(z, r, 0, MM_PASS_F, z->fill_f);
        }
        if (!left)
            break;
        stall = placed ? 0 : stall + 1;
    }
#undef ZV_N
    double span = 0;
    for (int r = 0; r < p; r++) {
        while (z->wq_h[r] < z->wq_t[r])
            zv_put(z, r, 0, MM_PASS_W);
        span = fmax(span, z->e[r] - z->first[r]);
    }
    for (int vs = 0; vs < V; vs++)
        if (z->n[3 * vs + MM_PASS_W] < m)
            return -1;
    return span;
}

/* The heuristic's four variants (a W that overruns a forward's or a
 * chunk-0 B's wait, or not), the one of least span (the first on a tie)
 * into *pick (2 fill_f + fill_b), and with out rank s's order of it into
 * out; pick >= 0 on the way in: that variant alone (it was the least
 * span of an earlier call on the same times, and a run starts afresh). */
static double zb_v_heur(int p, int s, int m, const mm_sched_times *t, int *pick, mm_sched_step *out)
{
    int V = 2 * p;
    size_t nd = (size_t)3 * V * m + 3 * (size_t)p, ni = (size_t)3 * V + (size_t)p * (2 * (size_t)m + 6);
    double *d = malloc(sizeof *d * nd);
    int *n = malloc(sizeof *n * ni);
    if (!d || !n) {
        free(d), free(n);
        return -1;
    }
    zv_state z = {.p = p, .m = m, .cap = mm_schedule_zbv_cap_halves(p, m), .s = s, .n = n, .mem = n + 3 * V,
                  .wq = n + 3 * V + p, .t = t, .comm = t ? t->comm : 0, .te = d,
                  .e = d + (size_t)3 * V * m};
    z.wq_h = z.wq + (size_t)2 * p * m, z.wq_t = z.wq_h + p, z.ord = z.wq_t + p;
    z.kr = n + (ni - (size_t)p);
    z.bub = z.e + p, z.first = z.bub + p;
    double best = -1;
    int bf = 1, bb = 1;
    if (*pick >= 0) {
        bf = *pick / 2, bb = *pick % 2, best = 0;
    } else {
        for (int a = 1; a >= 0; a--)
            for (int b = 1; b >= 0; b--) {
                z.fill_f = a, z.fill_b = b;
                double x = zv_run(&z);
                if (x >= 0 && (best < 0 || x < best))
                    best = x, bf = a, bb = b;
            }
        *pick = 2 * bf + bb;
    }
    if (best >= 0 && out) {
        z.fill_f = bf, z.fill_b = bb, z.out = out;
        if ((best = zv_run(&z)) < 0)
            best = -1;
        for (int r = 0; best >= 0 && r < p; r++) /* every order whole */
            if ((s < 0 ? z.kr[r] : r == s ? z.k : 6 * m) != 6 * m)
                best = -1;
    }
    free(d), free(n);
    return best;
}

/* One run of ZB-V's list schedule (schedule.h), event by event, rank s's
 * steps into out (NULL: none).  Pass times per virtual stage from t (NULL:
 * one each, no transfer time; a transfer between ranks adds t->comm, the
 * turn none).  Per virtual stage and pass the micro-batches run in order;
 * nf, nb, nw: the next one; fe, be: each F's and B's end (-1: not run).
 * A rank is busy until, or waits until, at[r]; a new pass wakes the
 * waiting ranks at its arrival (at the latest).  A chunk-0 forward keeps room for
 * `reserve` chunk-1 forwards: 0, 1, or (2) every one the rank owes, which
 * cannot stall.  Returns the span (the longest rank's first pass start to
 * last pass end), -1 when the list stalled or out of memory, or -2 as soon
 * as the span is sure to exceed `cutoff` (a rank's first start to its
 * latest end only grows; INFINITY: never). */
static double zb_v_run(int p, int s, int m, const mm_sched_times *t, int reserve, double cutoff, mm_sched_step *out)
{
    int V = 2 * p, cap = mm_schedule_zbv_cap_halves(p, m);
    int *nf = calloc((size_t)V * 3, sizeof *nf), *nb = nf ? nf + V : NULL, *nw = nf ? nf + 2 * V : NULL;
    int *rk = calloc((size_t)p * 4, sizeof *rk); /* per rank: held halves, owed chunk-1 forwards, waiting; */
    int *nr = rk ? rk + 3 * p : NULL;              /* steps written (s < 0) */
    double *fe = malloc((size_t)V * m * 2 * sizeof *fe), *be = fe ? fe + (size_t)V * m : NULL;
    double *at = calloc((size_t)p * 3, sizeof *at), *first = at ? at + p : NULL, *last = at ? at + 2 * p : NULL;
    if (!nf || !fe || !rk || !at) {
        free(nf), free(fe), free(rk), free(at);
        return -1;
    }
    for (size_t i = 0; i < (size_t)V * m * 2; i++)
        fe[i] = -1;
    for (int r = 0; r < p; r++)
        first[r] = -1;
    double comm = t ? t->comm : 0;
    int k = 0, left = 3 * V * m;
    while (left > 0) {
        int r = -1; /* the rank of the earliest time (below INFINITY), the lowest first */
        double soon = INFINITY;
        for (int q = 0; q < p; q++)
            if (at[q] < soon)
                soon = at[q], r = q;
        if (r < 0)
            break; /* every rank waits for another: stalled */
        double now = at[r];
        int *held = &rk[3 * r], *owed = &rk[3 * r + 1];
        int vs0 = mm_schedule_vstage(MM_SCHEDULE_ZB_V, p, r, 0);
        int vs1 = mm_schedule_vstage(MM_SCHEDULE_ZB_V, p, r, 1);
        int pick = -1, pass = -1;
        double wake = INFINITY; /* the earliest a waiting pass's input arrives */
#define ZBV_ARRIVE(e, from) ((e) < 0 ? INFINITY : (e) + (mm_schedule_vstage_rank(MM_SCHEDULE_ZB_V, p, from) == r ? 0 : comm))
        /* a ready B: the oldest micro-batch, the later chunk first */
        for (int c = 1; c >= 0; c--) {
            int vs = c ? vs1 : vs0, j = nb[vs];
            if (j >= m)
                continue;
            double ready = fe[vs * m + j] < 0 ? INFINITY : fe[vs * m + j];
            if (vs < V - 1)
                ready = fmax(ready, ZBV_ARRIVE(be[(vs + 1) * m + j], vs + 1));
            if (ready <= now && (pick < 0 || j < nb[pick]))
                pick = vs, pass = MM_PASS_B;
            else if (ready > now)
                wake = fmin(wake, ready);
        }
        /* else a forward within the limit, the later chunk first */
        for (int c = 1; pick < 0 && c >= 0; c--) {
            int vs = c ? vs1 : vs0, j = nf[vs];
            if (j >= m)
                continue;
            double ready = vs == 0 ? 0 : ZBV_ARRIVE(fe[(vs - 1) * m + j], vs - 1);
            int need = c ? 2 : 2 + 2 * (reserve == 2 ? *owed + 1 : reserve);
            if (ready <= now && *held + need <= cap)
                pick = vs, pass = MM_PASS_F;
            else if (ready > now)
                wake = fmin(wake, ready);
        }
#undef ZBV_ARRIVE
        /* else the oldest deferred W */
        for (int c = 0; pick < 0 && c < 2; c++) {
            int vs = c ? vs1 : vs0, o = c ? vs0 : vs1, j = nw[vs];
            bool ready = j < m && be[vs * m + j] >= 0 && be[vs * m + j] <= now;
            bool other = nw[o] < m && be[o * m + nw[o]] >= 0 && be[o * m + nw[o]] <= now && nw[o] < j;
            if (ready && !other)
                pick = vs, pass = MM_PASS_W;
        }
        if (pick < 0) {
            at[r] = wake, rk[3 * r + 2] = 1; /* INFINITY: until another rank runs a pass */
            continue;
        }
        rk[3 * r + 2] = 0;
        int c = pick == vs0 ? 0 : 1;
        int j = pass == MM_PASS_F ? nf[pick]++ : pass == MM_PASS_B ? nb[pick]++ : nw[pick]++;
        const double *d = !t ? NULL : pass == MM_PASS_F ? t->f : pass == MM_PASS_B ? t->b : t->w;
        double end = now + (d ? d[pick] : 1);
        if (pass == MM_PASS_F) {
            fe[pick * m + j] = end, *held += 2;
            *owed += c ? -1 : 1;
        } else {
            *held -= 1;
            if (pass == MM_PASS_B)
                be[pick * m + j] = end;
        }
        if (first[r] < 0)
            first[r] = now;
        last[r] = end, at[r] = end;
        /* the span only grows: past the cutoff for good; and a rank runs
         * its passes one after another (the times picked never fall), so
         * its end is at least this end plus the passes it has left, the
         * sum taken with a slack well above its rounding */
        double rest = 0;
        if (cutoff < INFINITY && end - first[r] <= cutoff) {
            for (int cc = 0; cc < 2; cc++) {
                int v2 = cc ? vs1 : vs0;
                rest += t ? (m - nf[v2]) * t->f[v2] + (m - nb[v2]) * t->b[v2] + (m - nw[v2]) * t->w[v2]
                          : (double)(3 * m - nf[v2] - nb[v2] - nw[v2]);
            }
            rest = rest * (1 - 1e-9) - 1e-10 * (end + rest);
        }
        if (end - first[r] > cutoff || (rest > 0 && end - first[r] + rest > cutoff)) {
            free(nf), free(fe), free(rk), free(at);
            return -2;
        }
        /* the rank this pass's output feeds (the next virtual stage's for
         * F, the previous one's for B) looks again once it can reach it;
         * no other rank's inputs changed, and held memory is each rank's
         * own, so a look by any other would find what it found before */
        int to = pass == MM_PASS_F ? pick + 1 : pass == MM_PASS_B ? pick - 1 : -1;
        if (to >= 0 && to < V) {
            int q = mm_schedule_vstage_rank(MM_SCHEDULE_ZB_V, p, to);
            if (rk[3 * q + 2])
                at[q] = fmin(at[q], end + (q == r ? 0 : comm));
        }
        if (s < 0 && out) /* every rank's, rank r's at out + r * 6m */
            out[(size_t)r * 6 * m + (size_t)nr[r]++] = (mm_sched_step){pass, j, c};
        else if (r == s && out)
            out[k++] = (mm_sched_step){pass, j, c};
        left--;
    }
    double span = 0;
    for (int r = 0; r < p; r++)
        span = fmax(span, last[r] - first[r]);
    free(nf), free(fe), free(rk), free(at);
    return left == 0 ? span : -1;
}

/* ZB-V's order for rank s: the heuristic's, or the list schedule's (of
 * its three reservations the one of least span, ties: the larger
 * reservation) where that is shorter or the heuristic stalls; the same
 * for every rank. */
static int zb_v(int p, int s, int m, const mm_sched_times *t, mm_sched_step *out)
{
    /* the heuristic first: a list run that would lose to it (or to a list
     * run before it) stops as soon as its span passes that, which changes
     * no choice (the chosen list run, and every span compared, are whole) */
    int pick = -1;
    double h = zb_v_heur(p, s, m, t, &pick, NULL), best = -1;
    int at = 2;
    /* with out: each list run writes its order into a scratch of its own,
     * the best whole one kept (a run is the same whatever its cutoff
     * until it stops), so the pick needs no second run */
    size_t n_out = (size_t)(s < 0 ? p : 1) * 6 * (size_t)m;
    mm_sched_step *keep = out ? malloc(2 * n_out * sizeof *keep) : NULL, *cur = keep ? keep + n_out : NULL;
    for (int reserve = 2; reserve >= 0; reserve--) {
        double cut = h >= 0 ? h - 1e-12 : INFINITY;
        if (best >= 0 && best < cut)
            cut = best;
        double x = zb_v_run(p, s, m, t, reserve, cut, cur);
        if (x >= 0 && (best < 0 || x < best)) {
            best = x, at = reserve;
            mm_sched_step *sw = keep;
            keep = cur, cur = sw;
        }
    }
    if (h >= 0 && (best < 0 || h <= best + 1e-12)) {
        free(keep < cur ? keep : cur);
        return zb_v_heur(p, s, m, t, &pick, out) >= 0 ? 6 * m : -1;
    }
    int len = -1;
    if (best >= 0 && keep) {
        memcpy(out, keep, n_out * sizeof *out);
        len = 6 * m;
    } else if (best >= 0) { /* no scratch (out NULL, or the host out of memory): run it again */
        len = zb_v_run(p, s, m, t, at, INFINITY, out) >= 0 ? 6 * m : -1;
    }
    free(keep < cur ? keep : cur);
    return len;
}

int mm_schedule_steps_all(mm_schedule kind, int p, int m, int v, const mm_sched_times *t, mm_sched_step *out)
{
    int len = mm_schedule_len(kind, m, v);
    if (p < 1 || m < 1)
        return -1;
    if (kind == MM_SCHEDULE_ZB_2P && v == 1) /* one run of the list schedule for every rank */
        return zb_2p(p, -1, m, t, out) == len ? len : -1;
    if (kind == MM_SCHEDULE_ZB_V && v == 2)
        return zb_v(p, -1, m, t, out) == len ? len : -1;
    for (int s = 0; s < p; s++)
        if (mm_schedule_steps_timed(kind, p, s, m, v, t, out + (size_t)s * len) != len)
            return -1;
    return len;
}

int mm_schedule_steps(mm_schedule kind, int p, int s, int m, int v, mm_sched_step *out)
{
    return mm_schedule_steps_timed(kind, p, s, m, v, NULL, out);
}

int mm_schedule_steps_timed(mm_schedule kind, int p, int s, int m, int v, const mm_sched_times *t,
                            mm_sched_step *out)
{
    if (p < 1 || s < 0 || s >= p || m < 1 || v < 1)
        return -1;
    switch (kind) {
    case MM_SCHEDULE_GPIPE: {
        if (v != 1)
            return -1;
        int k = 0;
        for (int j = 0; j < m; j++)
            out[k++] = (mm_sched_step){MM_PASS_F, j, 0};
        for (int j = 0; j < m; j++)
            out[k++] = (mm_sched_step){MM_PASS_B, j, 0};
        return k;
    }
    case MM_SCHEDULE_1F1B:
        return v == 1 ? one_f_one_b(p, s, m, out) : -1;
    case MM_SCHEDULE_INTERLEAVED:
        if (m % p)
            return -1;
        return interleaved(p, s, m, v, out);
    case MM_SCHEDULE_ZB_H1:
        return v == 1 ? zb_h1(p, s, m, out) : -1;
    case MM_SCHEDULE_ZB_2P:
        return v == 1 ? zb_2p(p, s, m, t, out) : -1;
    case MM_SCHEDULE_ZB_V:
        return v == 2 ? zb_v(p, s, m, t, out) : -1;
    }
    return -1;
}
