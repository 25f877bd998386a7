/* maxmin.c - the max-min solver behind flow.c: the Bertsekas-Gallager
 * bottleneck form of progressive filling on one component (flow.h,
 * mm_maxmin_solve), with its scratch kept between calls (flow_internal.h).
 * Not for: flows on the engine, components or completions (flow.c). */
#include "hw/flow_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the solver ------------------------------------------------------ */

static int lheap_less(const lheap_ent *a, const lheap_ent *b)
{
    return a->ratio < b->ratio || (a->ratio == b->ratio && a->link < b->link);
}

static void lheap_push(lheap_ent *h, size_t *n, lheap_ent e)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!lheap_less(&e, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static lheap_ent lheap_pop(lheap_ent *h, size_t *n)
{
    lheap_ent top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const lheap_ent *best = &last;
        if (l < *n && lheap_less(&h[l], best))
            m = l, best = &h[l];
        if (l + 1 < *n && lheap_less(&h[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        h[i] = h[m];
        i = m;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}


void mm_solve_buf_free(mm_solve_buf *b)
{
    free(b->C);
    free(b->W);
    free(b->unf);
    free(b->loff);
    free(b->fill);
    free(b->lf);
    free(b->act);
    free(b->frozen);
    free(b->h);
    memset(b, 0, sizeof *b);
}

int mm_flow_regrow(void **p, size_t n, size_t elem)
{
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

/* Makes room for L links, E entries, F flows (doubling, so amortized). */
int mm_solve_buf_fit(mm_solve_buf *b, size_t L, size_t E, size_t F)
{
    if (L + 2 > b->cl) {
        size_t n = 2 * (L + 2);
        if (mm_flow_regrow((void **)&b->C, n, sizeof *b->C) || mm_flow_regrow((void **)&b->W, n, sizeof *b->W) ||
            mm_flow_regrow((void **)&b->unf, n, sizeof *b->unf) || mm_flow_regrow((void **)&b->loff, n, sizeof *b->loff) ||
            mm_flow_regrow((void **)&b->fill, n, sizeof *b->fill) || mm_flow_regrow((void **)&b->act, n, sizeof *b->act))
            return -1;
        b->cl = n;
    }
    if (L + E + 1 > b->ce) {
        size_t n = 2 * (L + E + 1);
        if (mm_flow_regrow((void **)&b->lf, n, sizeof *b->lf) || mm_flow_regrow((void **)&b->h, n, sizeof *b->h))
            return -1;
        b->ce = n;
    }
    if (F + 1 > b->cf) {
        size_t n = 2 * (F + 1);
        if (mm_flow_regrow((void **)&b->frozen, n, sizeof *b->frozen))
            return -1;
        b->cf = n;
    }
    return 0;
}

/* The problem's state before the first level: remaining capacity C,
 * weight W and unfrozen count per link, and each link's flows (CSR lf). */
static void solve_init(mm_solve_buf *b, int L, const double *cap, int F, const uint32_t *off, const int32_t *lk,
                       const double *cf)
{
    size_t E = off[F];
    double *C = b->C, *W = b->W;
    uint32_t *unf = b->unf, *loff = b->loff, *fill = b->fill;
    memset(unf, 0, (size_t)L * sizeof *unf);
    memset(loff, 0, ((size_t)L + 1) * sizeof *loff);
    memset(fill, 0, (size_t)L * sizeof *fill);
    memset(b->frozen, 0, (size_t)F);
    for (int l = 0; l < L; l++)
        C[l] = cap[l], W[l] = 0;
    for (size_t e = 0; e < E; e++) {
        W[lk[e]] += cf[e];
        unf[lk[e]]++;
        loff[lk[e] + 1]++;
    }
    for (int l = 0; l < L; l++)
        loff[l + 1] += loff[l];
    for (int f = 0; f < F; f++)
        for (uint32_t e = off[f]; e < off[f + 1]; e++)
            b->lf[loff[lk[e]] + fill[lk[e]]++] = f;
}

/* The next bottleneck by a scan of the links still unfrozen (act, n of
 * them, compacted as links freeze): the smallest (fmax(C, 0) / W, link),
 * which is what the heap's first valid entry is.  -1: none left; -2: a
 * ratio is NaN (the heap's order is then undefined: the caller starts over
 * with the heap, to give its bits). */
static int32_t scan_next(mm_solve_buf *b, uint32_t *n, double *s)
{
    int32_t best = -1, *act = b->act;
    double bs = 0;
    for (uint32_t i = 0; i < *n;) {
        int32_t l = act[i];
        if (!b->unf[l]) {
            act[i] = act[--*n];
            continue;
        }
        double r = fmax(b->C[l], 0) / b->W[l];
        if (r != r)
            return -2;
        if (best < 0 || r < bs || (r == bs && l < best))
            best = l, bs = r;
        i++;
    }
    *s = bs;
    return best;
}

/* Links 0..L-1 local; flows 0..F-1 in CSR.  Bertsekas-Gallager bottleneck
 * form of progressive filling: the level only rises, so a link's ratio
 * C/W never drops below the level just frozen, and stale heap entries
 * (ratio no longer current) are skipped when they surface.
 * The heap's first valid entry is always the unfrozen link of smallest
 * (current ratio, index): every unfrozen link has an entry at its current
 * ratio.  A component typically freezes in a couple of levels while its
 * heap sees about one entry per route entry (LLaVA-OV-72B at 8,192 GPUs:
 * 2 levels, 91 pops per solve), so the levels are first found by scanning
 * the unfrozen links, the same choice with the same divisions; past a
 * budget of scanned links (many levels) the rest goes to the heap.  Exact
 * when every capacity is positive (the heap's first entries are C / W,
 * not fmax(C, 0) / W) and no ratio is NaN; otherwise the heap alone. */
int mm_solve_buf_solve(mm_solve_buf *b, int L, const double *cap, int F, const uint32_t *off,
                 const int32_t *lk, const double *cf, double *rate)
{
    size_t E = off[F];
    if (mm_solve_buf_fit(b, (size_t)L, E, (size_t)F))
        return -1;
    int scan = 1, switched = 0;
    for (int l = 0; l < L && scan; l++)
        scan = cap[l] > 0;
restart:
    solve_init(b, L, cap, F, off, lk, cf);
    double *C = b->C, *W = b->W;
    uint32_t *unf = b->unf, *loff = b->loff;
    int32_t *lf = b->lf;
    uint8_t *frozen = b->frozen;
    lheap_ent *h = b->h;
    size_t nh = 0, work = 0, budget = 4 * (E + (size_t)L) + 64;
    uint32_t na = 0;
    for (int l = 0; l < L; l++)
        if (unf[l] && scan)
            b->act[na++] = l;
        else if (unf[l])
            lheap_push(h, &nh, (lheap_ent){C[l] / W[l], l});
    for (;;) {
        int32_t l;
        double s;
        if (scan && work > budget) { /* many levels: the heap from here */
            scan = 0, switched = 1;
            for (uint32_t i = 0; i < na; i++)
                if (unf[b->act[i]])
                    lheap_push(h, &nh, (lheap_ent){fmax(C[b->act[i]], 0) / W[b->act[i]], b->act[i]});
        }
        if (scan) {
            work += na;
            if ((l = scan_next(b, &na, &s)) == -2) {
                scan = switched = 0;
                goto restart;
            }
            if (l < 0)
                break;
        } else {
            if (nh == 0)
                break;
            lheap_ent top = lheap_pop(h, &nh);
            l = top.link;
            if (!unf[l] || fmax(C[l], 0) / W[l] != top.ratio)
                continue; /* stale */
            s = top.ratio;
        }
        for (uint32_t i = loff[l]; i < loff[l + 1]; i++) {
            int32_t f = lf[i];
            if (frozen[f])
                continue;
            frozen[f] = 1;
            rate[f] = s;
            for (uint32_t e = off[f]; e < off[f + 1]; e++) {
                int32_t m = lk[e];
                C[m] -= cf[e] * s;
                W[m] -= cf[e];
                if (--unf[m] > 0 && m != l && !scan) {
                    double r = fmax(C[m], 0) / W[m];
                    if (r != r && switched) { /* the heap's own history decides NaNs */
                        switched = 0;
                        goto restart;
                    }
                    lheap_push(h, &nh, (lheap_ent){r, m});
                }
            }
        }
    }
    return 0;
}

int mm_maxmin_solve(int L, const double *cap, int F, const uint32_t *off, const int32_t *lk,
                    const double *cf, double *rate)
{
    mm_solve_buf b = {0};
    int rc = mm_solve_buf_solve(&b, L, cap, F, off, lk, cf, rate);
    mm_solve_buf_free(&b);
    return rc;
}
