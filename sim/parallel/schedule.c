/* schedule.c - step orders of GPipe, 1F1B, interleaved 1F1B, ZB-H1,
 * ZB-2p and ZB-V.
 * Not for: dependencies or timing of the iteration (build*.c emits the ops
 * in this order; ZB-2p's list schedule only predicts times to choose it). */
#include "parallel/schedule.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

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

/* One run of ZB-V's list schedule (schedule.h), event by event, rank s's
 * steps into out (NULL: none).  Pass times per virtual stage from t (NULL:
 * one each, no transfer time; a transfer between ranks adds t->comm, the
 * turn none).  Per virtual stage and pass the micro-batches run in order;
 * nf, nb, nw: the next one; fe, be: each F's and B's end (-1: not run).
 * A rank is busy until, or waits until, at[r]; a new pass wakes the
 * waiting ranks at its arrival (at the latest).  A chunk-0 forward keeps room for
 * `reserve` chunk-1 forwards: 0, 1, or (2) every one the rank owes, which
 * cannot stall.  Returns the span (the longest rank's first pass start to
 * last pass end), or -1 when the list stalled or out of memory. */
static double zb_v_run(int p, int s, int m, const mm_sched_times *t, int reserve, mm_sched_step *out)
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
        int r = -1; /* the rank of the earliest time, the lowest first */
        for (int q = 0; q < p; q++)
            if (at[q] < INFINITY && (r < 0 || at[q] < at[r]))
                r = q;
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

/* ZB-V's order for rank s: of the three reservations, the one of least
 * span (ties: the larger reservation), the same for every rank. */
static int zb_v(int p, int s, int m, const mm_sched_times *t, mm_sched_step *out)
{
    double best = -1;
    int at = 2;
    for (int reserve = 2; reserve >= 0; reserve--) {
        double x = zb_v_run(p, s, m, t, reserve, NULL);
        if (x >= 0 && (best < 0 || x < best))
            best = x, at = reserve;
    }
    return best >= 0 && zb_v_run(p, s, m, t, at, out) >= 0 ? 6 * m : -1;
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
