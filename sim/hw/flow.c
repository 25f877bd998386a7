/* flow.c - max-min fair flow sharing (flow.h): a set of flows driven by the
 * engine with component-local recomputation (the solver: maxmin.c).
 *
 * Cost of a change: a breadth-first walk over the component it touches,
 * then the solver on that component: each level found by scanning the
 * unfrozen links (components freeze in a few levels), past a budget
 * O((L + E) log(L + E)) for L links and E route entries (a binary heap of
 * links keyed by remaining capacity per unfrozen flow, lazy deletion); a flow alone on its links takes its
 * tightest link's share without the solver (the same divisions).  This is
 * the granularity of SimGrid's lmm selective update (Donassolo, Casanova,
 * Legrand and Velho, LSAP 2010: only the constraints reachable from a
 * modified one are re-solved).  A cluster-wide collective is one
 * component; independent collectives on disjoint links never recompute
 * each other.  Known limit: a change inside a huge component recomputes
 * all of it; re-solving only the links a rate change propagates to is not
 * done.  Every array (solver scratch, routes, completion list) is kept and
 * reused, so a warm set of flows allocates nothing per event. */
#include "hw/flow_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- flows on the engine --------------------------------------------- */

/* Memory layout: the walk of a commit touches, per link, its flow list,
 * capacity, stamp and local index, and per flow its route: each kept in
 * one record (structure of arrays cost a cache miss per field on clusters
 * of 10^5 links).  The completion heap holds its keys, so that sifting
 * does not reach into the flows. */

typedef struct lref {
    int32_t flow, entry;
} lref;

typedef struct flink {
    lref *v; /* flows on the link */
    uint32_t n, cap;
    double capacity;
    uint32_t stamp; /* of the last commit that reached it */
    int32_t idx;    /* its index in the solver's problem, -1 outside */
} flink;

typedef struct rent {
    int32_t lk;   /* link */
    uint32_t pos; /* index of this flow in the link's list */
    double cf;    /* coefficient */
} rent;

typedef struct flow {
    rent *r;
    int len, lcap; /* route length; room in r (kept when the slot is reused) */
    double remaining, rate;
    mm_time t_last, finish;
    uint64_t seq;
    mm_flow_done_fn done;
    void *ctx;
    uint64_t arg;
    int32_t heap; /* position in the completion heap, -1 if none */
    uint32_t stamp;
    int active;
} flow;

typedef struct fdone {
    mm_flow_done_fn fn;
    void *ctx;
    uint64_t arg;
} fdone;

typedef struct ivec {
    int32_t *v;
    uint32_t n, cap;
} ivec;

typedef struct hent {
    mm_time finish;
    uint64_t seq;
    int32_t id;
} hent;

struct mm_flownet {
    mm_engine *eng;
    int n_links;
    flink *l;
    flow *f;
    int32_t nf, capf;
    ivec freel, dirty, cl, cfl;
    hent *heap; /* completions, keyed by (finish, seq) */
    uint32_t hn, hcap;
    uint32_t stamp;
    mm_event_id ev;
    mm_time ev_at;
    uint64_t seq, solves;
    uint32_t active;
    /* solver scratch, reused: no allocation per event once warm */
    mm_solve_buf sb;
    fdone *dl; /* flows finishing at one event */
    size_t dl_cap;
    uint32_t *soff;
    int32_t *slk;
    double *scf, *scap, *srate;
    size_t c_off, c_rate, c_lk, c_cf, c_cap;
};

static int ivec_push(ivec *v, int32_t x)
{
    if (v->n == v->cap) {
        uint32_t nc = v->cap ? 2 * v->cap : 64;
        int32_t *p = realloc(v->v, nc * sizeof *p);
        if (!p)
            return -1;
        v->v = p, v->cap = nc;
    }
    v->v[v->n++] = x;
    return 0;
}

mm_flownet *mm_flownet_alloc(mm_engine *eng, int n_links, const double *cap)
{
    mm_flownet *fn = calloc(1, sizeof *fn);
    if (!fn)
        return NULL;
    fn->eng = eng;
    fn->n_links = n_links;
    fn->l = calloc((size_t)n_links + 1, sizeof *fn->l);
    if (!fn->l) {
        mm_flownet_free(fn);
        return NULL;
    }
    for (int i = 0; i < n_links; i++) {
        fn->l[i].capacity = cap[i];
        fn->l[i].idx = -1;
    }
    return fn;
}

void mm_flownet_free(mm_flownet *fn)
{
    if (!fn)
        return;
    if (fn->ev)
        mm_engine_cancel(fn->eng, fn->ev);
    for (int32_t i = 0; i < fn->nf; i++)
        free(fn->f[i].r);
    if (fn->l)
        for (int i = 0; i < fn->n_links; i++)
            free(fn->l[i].v);
    free(fn->f);
    free(fn->l);
    free(fn->freel.v);
    free(fn->heap);
    free(fn->dirty.v);
    free(fn->cl.v);
    free(fn->cfl.v);
    free(fn->soff);
    free(fn->slk);
    free(fn->scf);
    free(fn->scap);
    free(fn->srate);
    free(fn->dl);
    mm_solve_buf_free(&fn->sb);
    free(fn);
}

/* completion heap */
static int hless(const hent *x, const hent *y)
{
    return x->finish < y->finish || (x->finish == y->finish && x->seq < y->seq);
}

static void hset(mm_flownet *fn, uint32_t i, hent e)
{
    fn->heap[i] = e;
    fn->f[e.id].heap = (int32_t)i;
}

/* Places entry e, whose slot is i, up or down where its key belongs.  The
 * entry comes in a register: reading it back from the slot just written
 * with a narrower store stalls on store forwarding. */
static void hplace(mm_flownet *fn, uint32_t i, hent e)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!hless(&e, &fn->heap[p]))
            break;
        hset(fn, i, fn->heap[p]);
        i = p;
    }
    uint32_t n = fn->hn;
    for (;;) {
        uint32_t c = 2 * i + 1, m = i;
        const hent *best = &e;
        if (c < n && hless(&fn->heap[c], best))
            m = c, best = &fn->heap[c];
        if (c + 1 < n && hless(&fn->heap[c + 1], best))
            m = c + 1;
        if (m == i)
            break;
        hset(fn, i, fn->heap[m]);
        i = m;
    }
    hset(fn, i, e);
}

static int hpush(mm_flownet *fn, int32_t id)
{
    if (fn->hn == fn->hcap) {
        uint32_t nc = fn->hcap ? 2 * fn->hcap : 64;
        if (mm_flow_regrow((void **)&fn->heap, nc, sizeof *fn->heap))
            return -1;
        fn->hcap = nc;
    }
    fn->hn++;
    hplace(fn, fn->hn - 1, (hent){fn->f[id].finish, fn->f[id].seq, id});
    return 0;
}

static void hremove(mm_flownet *fn, int32_t id)
{
    uint32_t i = (uint32_t)fn->f[id].heap;
    hent last = fn->heap[--fn->hn];
    fn->f[id].heap = -1;
    if (last.id == id)
        return;
    hplace(fn, i, last);
}

static void on_event(mm_engine *eng, void *ctx, uint64_t arg);

static void reschedule(mm_flownet *fn)
{
    mm_time at = fn->hn ? fn->heap[0].finish : MM_TIME_MAX;
    if (fn->ev && at == fn->ev_at)
        return;
    if (fn->ev)
        mm_engine_cancel(fn->eng, fn->ev);
    fn->ev = 0;
    if (at != MM_TIME_MAX) {
        fn->ev = mm_engine_at(fn->eng, at, on_event, fn, 0);
        fn->ev_at = at;
    }
}

int32_t mm_flownet_add(mm_flownet *fn, const int *links, const double *coef, int len,
                       double bytes, mm_flow_done_fn done, void *ctx, uint64_t arg)
{
    int32_t id;
    if (fn->freel.n) {
        id = fn->freel.v[--fn->freel.n];
    } else {
        if (fn->nf == fn->capf) {
            int32_t nc = fn->capf ? 2 * fn->capf : 64;
            flow *p = realloc(fn->f, (size_t)nc * sizeof *p);
            if (!p)
                return -1;
            memset(p + fn->capf, 0, (size_t)(nc - fn->capf) * sizeof *p);
            fn->f = p, fn->capf = nc;
        }
        id = fn->nf++;
    }
    flow *f = &fn->f[id];
    if (len > f->lcap) { /* a reused slot keeps its route array when it is big enough */
        int nc = len < 8 ? 8 : len;
        if (mm_flow_regrow((void **)&f->r, (size_t)nc, sizeof *f->r))
            return -1;
        f->lcap = nc;
    }
    f->len = len;
    f->remaining = bytes;
    f->rate = 0;
    f->t_last = mm_engine_now(fn->eng);
    f->finish = MM_TIME_MAX;
    f->seq = fn->seq++;
    f->done = done, f->ctx = ctx, f->arg = arg;
    f->heap = -1;
    f->stamp = 0;
    f->active = 1;
    for (int i = 0; i < len; i++) {
        flink *lv = &fn->l[links[i]];
        if (lv->n == lv->cap) {
            uint32_t nc = lv->cap ? 2 * lv->cap : 4;
            lref *p = realloc(lv->v, nc * sizeof *p);
            if (!p)
                return -1;
            lv->v = p, lv->cap = nc;
        }
        f->r[i] = (rent){links[i], lv->n, coef ? coef[i] : 1.0};
        lv->v[lv->n++] = (lref){id, i};
        if (ivec_push(&fn->dirty, links[i]))
            return -1;
    }
    /* park it in the heap so that it is found even before its rate is set */
    if (hpush(fn, id))
        return -1;
    fn->active++;
    return id;
}

/* Takes a finished flow off its links (marking them dirty). */
static int detach(mm_flownet *fn, int32_t id)
{
    flow *f = &fn->f[id];
    for (int i = 0; i < f->len; i++) {
        flink *lv = &fn->l[f->r[i].lk];
        uint32_t p = f->r[i].pos;
        lref last = lv->v[--lv->n];
        if (p != lv->n) {
            lv->v[p] = last;
            fn->f[last.flow].r[last.entry].pos = p;
        }
        if (ivec_push(&fn->dirty, f->r[i].lk))
            return -1;
    }
    if (f->heap >= 0)
        hremove(fn, id);
    f->active = 0;
    f->rate = 0;
    fn->active--;
    return ivec_push(&fn->freel, id);
}

static int grow(void **p, size_t *have, size_t need, size_t elem)
{
    if (need <= *have)
        return 0;
    size_t n = need * 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *have = n;
    return 0;
}

/* The component the dirty links touch: links into cl, flows into cfl
 * (breadth-first over links -> flows -> links). */
static int component(mm_flownet *fn, uint32_t st)
{
    fn->cl.n = fn->cfl.n = 0;
    for (uint32_t i = 0; i < fn->dirty.n; i++) {
        int32_t l = fn->dirty.v[i];
        if (fn->l[l].stamp != st) {
            fn->l[l].stamp = st;
            if (ivec_push(&fn->cl, l))
                return -1;
        }
    }
    fn->dirty.n = 0;
    for (uint32_t q = 0; q < fn->cl.n; q++) {
        const flink *lv = &fn->l[fn->cl.v[q]];
        for (uint32_t j = 0; j < lv->n; j++) {
            flow *f = &fn->f[lv->v[j].flow];
            if (f->stamp == st)
                continue;
            f->stamp = st;
            if (ivec_push(&fn->cfl, lv->v[j].flow))
                return -1;
            for (int k = 0; k < f->len; k++) {
                flink *m = &fn->l[f->r[k].lk];
                if (m->stamp != st) {
                    m->stamp = st;
                    if (ivec_push(&fn->cl, f->r[k].lk))
                        return -1;
                }
            }
        }
    }
    return 0;
}

/* The rate of a flow alone in its component: its tightest link, cap / (its
 * coefficients there): the value the solver's first pop gives, computed
 * the same way. */
static int lone_rate(mm_flownet *fn, size_t L, uint32_t E)
{
    if (mm_solve_buf_fit(&fn->sb, L, E, 1))
        return -1;
    double *W = fn->sb.W, best = INFINITY;
    for (size_t i = 0; i < L; i++)
        W[i] = 0;
    for (uint32_t k = 0; k < E; k++)
        W[fn->slk[k]] += fn->scf[k];
    for (size_t i = 0; i < L; i++)
        if (W[i] > 0 && fn->scap[i] / W[i] < best)
            best = fn->scap[i] / W[i];
    fn->srate[0] = best;
    return 0;
}

/* Sets flow id's finish from its rate (the completion heap follows). */
static void set_finish(mm_flownet *fn, int32_t id, mm_time now)
{
    flow *f = &fn->f[id];
    double left = f->remaining > 0 ? f->remaining : 0;
    f->finish = mm_time_add(now, mm_time_from_s(f->rate > 0 ? left / f->rate : INFINITY, MM_ROUND_UP));
    hplace(fn, (uint32_t)f->heap, (hent){f->finish, f->seq, id});
}

/* The component the dirty links reach, when it is trivial, without the
 * walk: -1 when no dirty link holds a flow (nothing to solve), the flow's
 * id when one flow alone holds every dirty link that has one and is alone
 * on each of its own links (so none of them twice in its route), else -2
 * (walk).  Any route length: a replicated collective's flow (its dp
 * copies' routes, hw/coll.h) is often alone on thousands of links. */
static int32_t trivial_component(const mm_flownet *fn)
{
    int32_t lone = -1;
    for (uint32_t i = 0; i < fn->dirty.n; i++) {
        const flink *lv = &fn->l[fn->dirty.v[i]];
        if (lv->n == 0)
            continue;
        if (lv->n > 1 || (lone >= 0 && lv->v[0].flow != lone))
            return -2;
        lone = lv->v[0].flow;
    }
    if (lone >= 0) {
        const flow *f = &fn->f[lone];
        for (int k = 0; k < f->len; k++)
            if (fn->l[f->r[k].lk].n != 1)
                return -2;
    }
    return lone;
}

/* A flow alone on its links: its tightest link's share, as lone_rate
 * computes it (each link's coefficients summed in route order, then the
 * smallest cap / W over the links with W > 0). */
static void commit_lone(mm_flownet *fn, int32_t id, mm_time now)
{
    flow *f = &fn->f[id];
    f->remaining -= f->rate * (double)(now - f->t_last) * 1e-9;
    f->t_last = now;
    if (f->len > 64) {
        /* alone on each of its links, each once in the route
         * (trivial_component): W of a link is its one coefficient */
        double best = INFINITY;
        for (int k = 0; k < f->len; k++) {
            double cap = fn->l[f->r[k].lk].capacity, cf = f->r[k].cf;
            if (cf > 0 && cap / cf < best)
                best = cap / cf;
        }
        f->rate = best;
        set_finish(fn, id, now);
        return;
    }
    int32_t uniq[64];
    double w[64], best = INFINITY;
    int nu = 0;
    for (int k = 0; k < f->len; k++) {
        int j = 0;
        while (j < nu && uniq[j] != f->r[k].lk)
            j++;
        if (j == nu) {
            uniq[nu] = f->r[k].lk;
            w[nu++] = 0;
        }
        w[j] += f->r[k].cf;
    }
    for (int j = 0; j < nu; j++) {
        double cap = fn->l[uniq[j]].capacity;
        if (w[j] > 0 && cap / w[j] < best)
            best = cap / w[j];
    }
    f->rate = best;
    set_finish(fn, id, now);
}

int mm_flownet_commit(mm_flownet *fn)
{
    if (!fn->dirty.n) {
        reschedule(fn);
        return 0;
    }
    mm_time now = mm_engine_now(fn->eng);
    /* the common changes: a flow that ran alone ended, or one starts alone */
    int32_t lone = trivial_component(fn);
    if (lone != -2) {
        ++fn->stamp;
        fn->dirty.n = 0;
        if (lone >= 0)
            commit_lone(fn, lone, now);
        fn->solves++;
        reschedule(fn);
        return 0;
    }
    uint32_t st = ++fn->stamp;
    if (component(fn, st))
        return -1;
    size_t F = fn->cfl.n, L = fn->cl.n, E = 0;
    for (size_t i = 0; i < F; i++)
        E += (size_t)fn->f[fn->cfl.v[i]].len;
    if (grow((void **)&fn->soff, &fn->c_off, F + 1, sizeof *fn->soff) ||
        grow((void **)&fn->srate, &fn->c_rate, F + 1, sizeof *fn->srate) ||
        grow((void **)&fn->slk, &fn->c_lk, E + 1, sizeof *fn->slk) ||
        grow((void **)&fn->scf, &fn->c_cf, E + 1, sizeof *fn->scf) ||
        grow((void **)&fn->scap, &fn->c_cap, L + 1, sizeof *fn->scap))
        return -1;
    for (size_t i = 0; i < L; i++) {
        flink *lv = &fn->l[fn->cl.v[i]];
        lv->idx = (int32_t)i;
        fn->scap[i] = lv->capacity;
    }
    uint32_t e = 0;
    for (size_t i = 0; i < F; i++) {
        flow *f = &fn->f[fn->cfl.v[i]];
        /* bring the flow's progress up to now at its old rate */
        f->remaining -= f->rate * (double)(now - f->t_last) * 1e-9;
        f->t_last = now;
        fn->soff[i] = e;
        for (int k = 0; k < f->len; k++, e++) {
            fn->slk[e] = fn->l[f->r[k].lk].idx;
            fn->scf[e] = f->r[k].cf;
        }
    }
    fn->soff[F] = e;
    int rc = 0;
    if (F == 1) /* one flow alone (most changes: a transfer, a node-local ring) */
        rc = lone_rate(fn, L, e);
    else if (F)
        rc = mm_solve_buf_solve(&fn->sb, (int)L, fn->scap, (int)F, fn->soff, fn->slk, fn->scf, fn->srate);
    for (size_t i = 0; i < L; i++)
        fn->l[fn->cl.v[i]].idx = -1;
    if (rc)
        return -1;
    fn->solves++;
    for (size_t i = 0; i < F; i++) {
        int32_t id = fn->cfl.v[i];
        flow *f = &fn->f[id];
        f->rate = fn->srate[i];
        set_finish(fn, id, now);
    }
    reschedule(fn);
    return 0;
}

static void on_event(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    mm_flownet *fn = ctx;
    mm_time now = mm_engine_now(eng);
    fn->ev = 0;
    size_t n = 0;
    while (fn->hn && fn->heap[0].finish <= now) {
        int32_t id = fn->heap[0].id;
        if (n == fn->dl_cap) {
            size_t nc = fn->dl_cap ? 2 * fn->dl_cap : 64;
            if (mm_flow_regrow((void **)&fn->dl, nc, sizeof *fn->dl))
                break; /* the rest finish at the next event */
            fn->dl_cap = nc;
        }
        fn->dl[n++] = (fdone){fn->f[id].done, fn->f[id].ctx, fn->f[id].arg};
        detach(fn, id);
    }
    mm_flownet_commit(fn);
    /* the callbacks may add flows but do not run this handler again before
     * returning (the next completion is a later engine event), so dl holds */
    for (size_t i = 0; i < n; i++)
        if (fn->dl[i].fn)
            fn->dl[i].fn(fn->dl[i].ctx, fn->dl[i].arg);
}

double mm_flownet_rate(const mm_flownet *fn, int32_t id)
{
    return id >= 0 && id < fn->nf && fn->f[id].active ? fn->f[id].rate : 0;
}

uint32_t mm_flownet_active(const mm_flownet *fn)
{
    return fn->active;
}

uint64_t mm_flownet_solves(const mm_flownet *fn)
{
    return fn->solves;
}
