/* coll_cache.c - a flow network's memory of the collectives it has set up
 * (coll_internal.h: coll_plan): per distinct request, the setup
 * mm_network_start derives from it and, per phase, the latency and the
 * flows add_flows started.  An iteration repeats a few hundred requests
 * (a TP group's all-reduce of one size, a pipeline pair's send) hundreds
 * of thousands of times; each repetition then starts the same flows, in
 * the same order, from the record, instead of sorting the group, finding
 * its shape and algorithm and walking its routes again.  Exact: all of
 * that is a function of the request (every field of mm_coll_req is in the
 * key, a send's communicator too), the cluster and the topology, which
 * do not change during the network's life (the stepwise and aggregate
 * switches clear the cache).
 * Not for: the flows themselves (flow.c) or which flows a collective makes
 * (coll.c, coll_a2a.c).  Limits: groups of at most 64 GPUs (any size
 * while the network reduces its problem by identical replicas' symmetry,
 * coll.h mm_network_symmetric: its probes record every distinct request
 * once, spanning groups of thousands of GPUs included) and phases of
 * at most 2^18 route entries are remembered (a replica-local collective
 * standing for dp copies, exec/symmetry.h, has dp times its own route:
 * 8,000 entries for a TP ring at dp 1,024; larger ones are set up each
 * time), and the whole cache stops growing at about 2 million route
 * entries. */
#include "hw/coll_internal.h"

#include <stdlib.h>
#include <string.h>

/* Every field of a request is part of the key: one added to mm_coll_req
 * must join key_hash and same_key (this fails to compile until then). */
_Static_assert(sizeof(mm_coll_req) == 48, "a new mm_coll_req field must join the collective cache's key");

#define MAX_N 64
#define MAX_PHASE_ENTRIES (1u << 18)
#define MAX_ENTRIES (1u << 21)

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

/* The requested algorithm as the cache keys it: a request that may not use
 * nvls is another key than one that may. */
static int algo_key(const mm_coll_req *req)
{
    return (int)req->algo + (req->no_nvls ? MM_ALGO_COUNT : 0);
}

static uint64_t key_hash(const mm_coll_req *req, int reps, int stride)
{
    uint64_t b;
    memcpy(&b, &req->bytes, sizeof b);
    uint64_t h = mix(mix(mix(0, (uint64_t)req->kind), (uint64_t)algo_key(req)), (uint64_t)(uint32_t)req->n);
    h = mix(mix(mix(mix(h, (uint64_t)(uint32_t)req->count), (uint64_t)(uint32_t)reps), (uint64_t)(uint32_t)stride), b);
    h = mix(mix(h, (uint64_t)(uint32_t)req->comm_ranks), (uint64_t)(uint32_t)req->comm_nodes);
    /* the first two and the last member: enough to spread the groups of
     * an iteration (a lookup compares the whole list) */
    if (req->n > 0)
        h = mix(mix(mix(h, (uint64_t)(uint32_t)req->gpus[0]), (uint64_t)(uint32_t)req->gpus[req->n > 1]),
                (uint64_t)(uint32_t)req->gpus[req->n - 1]);
    return h;
}

/* Inline loops, not memcmp: the lists are a few GPUs long and the call
 * cost more than the compare. */
static int same_key(const coll_cache *cc, const coll_plan *p, uint64_t h, const mm_coll_req *req, int reps,
                    int stride)
{
    uint64_t x, y;
    memcpy(&x, &p->bytes, sizeof x);
    memcpy(&y, &req->bytes, sizeof y);
    if (p->hash != h || p->kind != (int)req->kind || p->algo_req != algo_key(req) || p->n != req->n ||
        p->count != req->count || p->reps != reps || p->stride != stride || x != y ||
        p->comm_ranks != req->comm_ranks || p->comm_nodes != req->comm_nodes)
        return 0;
    const int *k = cc->ip + p->key_off;
    for (int i = 0; i < req->n; i++)
        if (k[i] != req->gpus[i])
            return 0;
    return 1;
}

int32_t coll_cache_find(mm_network *net, const mm_coll_req *req, int reps, int stride)
{
    const coll_cache *cc = &net->cache;
    if (!cc->nslot || (req->n > MAX_N && !net->sym_cand) || req->n < 0)
        return -1;
    uint64_t h = key_hash(req, reps, stride);
    for (uint32_t i = (uint32_t)h & (cc->nslot - 1);; i = (i + 1) & (cc->nslot - 1)) {
        int32_t k = cc->slot[i];
        if (k < 0)
            return -1;
        if (same_key(cc, &cc->p[k], h, req, reps, stride))
            return k;
    }
}

/* Room for `more` elements of `size` in *v (n used of *cap); 0 or -1. */
static int fit(void **v, size_t n, size_t *cap, size_t more, size_t size)
{
    if (n + more <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < n + more)
        c *= 2;
    void *q = realloc(*v, c * size);
    if (!q)
        return -1;
    *v = q;
    *cap = c;
    return 0;
}

static int rehash(coll_cache *cc)
{
    uint32_t ns = cc->nslot ? 2 * cc->nslot : 1024;
    int32_t *s = malloc(ns * sizeof *s);
    if (!s)
        return -1;
    memset(s, 0xff, ns * sizeof *s);
    for (uint32_t k = 0; k < cc->np; k++) {
        uint32_t i = (uint32_t)cc->p[k].hash & (ns - 1);
        while (s[i] >= 0)
            i = (i + 1) & (ns - 1);
        s[i] = (int32_t)k;
    }
    free(cc->slot);
    cc->slot = s;
    cc->nslot = ns;
    return 0;
}

int32_t coll_cache_add(mm_network *net, const mm_coll_req *req, int reps, int stride, mm_coll_algo algo,
                       const coll_op *op, double t_analytic)
{
    coll_cache *cc = &net->cache;
    int n = req->n, N = op ? op->s.nodes : 0, nn = op ? op->nic_off[N] : 0;
    size_t need = (size_t)n * 2 + (size_t)(2 * (N + 1) + nn);
    if (cc->full || (n > MAX_N && !net->sym_cand) || n < 0)
        return -1;
    if (cc->nip + need > MAX_ENTRIES) {
        cc->full = 1;
        return -1;
    }
    if ((2 * (cc->np + 1) > cc->nslot && rehash(cc)) || fit((void **)&cc->p, cc->np, &cc->capp, 1, sizeof *cc->p) ||
        fit((void **)&cc->ip, cc->nip, &cc->capip, need, sizeof *cc->ip))
        return -1;
    coll_plan *p = &cc->p[cc->np];
    memset(p, 0, sizeof *p);
    p->hash = key_hash(req, reps, stride);
    p->kind = (int)req->kind, p->algo_req = algo_key(req), p->n = n, p->count = req->count;
    p->reps = reps, p->stride = stride;
    p->comm_ranks = req->comm_ranks, p->comm_nodes = req->comm_nodes;
    p->bytes = req->bytes;
    p->algo = algo;
    p->key_off = (uint32_t)cc->nip;
    memcpy(cc->ip + cc->nip, req->gpus, (size_t)n * sizeof *cc->ip);
    cc->nip += (size_t)n;
    p->analytic = !op;
    p->t_analytic = t_analytic;
    if (op) {
        p->s = op->s;
        p->n_phases = op->n_phases;
        p->nn = nn;
        p->g_off = (uint32_t)cc->nip;
        memcpy(cc->ip + cc->nip, op->g, (size_t)n * sizeof *cc->ip);
        cc->nip += (size_t)n;
        p->lay_off = (uint32_t)cc->nip;
        memcpy(cc->ip + cc->nip, op->node_off, (size_t)(N + 1) * sizeof *cc->ip);
        memcpy(cc->ip + cc->nip + N + 1, op->nic_off, (size_t)(N + 1) * sizeof *cc->ip);
        memcpy(cc->ip + cc->nip + 2 * (N + 1), op->nics, (size_t)nn * sizeof *cc->ip);
        cc->nip += (size_t)(2 * (N + 1) + nn);
    }
    uint32_t i = (uint32_t)p->hash & (cc->nslot - 1);
    while (cc->slot[i] >= 0)
        i = (i + 1) & (cc->nslot - 1);
    cc->slot[i] = (int32_t)cc->np;
    return (int32_t)cc->np++;
}

void coll_cache_apply(const mm_network *net, int32_t k, coll_op *op)
{
    const coll_plan *p = &net->cache.p[k];
    op->algo = p->algo;
    op->s = p->s;
    op->n_phases = p->n_phases;
    op->plan = k;
    op->lazy = 1; /* members and layout copied only if a phase is built */
}

void coll_cache_materialize(const mm_network *net, coll_op *op)
{
    if (!op->lazy)
        return;
    const coll_cache *cc = &net->cache;
    const coll_plan *p = &cc->p[op->plan];
    int n = p->n, N = p->s.nodes;
    memcpy(op->g, cc->ip + p->g_off, (size_t)n * sizeof *op->g);
    memcpy(op->node_off, cc->ip + p->lay_off, (size_t)(N + 1) * sizeof *op->node_off);
    memcpy(op->nic_off, cc->ip + p->lay_off + N + 1, (size_t)(N + 1) * sizeof *op->nic_off);
    memcpy(op->nics, cc->ip + p->lay_off + 2 * (N + 1), (size_t)p->nn * sizeof *op->nics);
    op->lazy = 0;
}

void coll_cache_record_begin(mm_network *net, const coll_op *op)
{
    coll_cache *cc = &net->cache;
    cc->recording = -1;
    if (op->plan < 0 || op->phase >= MM_COLL_PLAN_PHASES || cc->full)
        return;
    coll_plan *p = &cc->p[op->plan];
    if (p->rec[op->phase])
        return;
    cc->recording = op->plan;
    cc->rec_phase = op->phase;
    p->rec_off[op->phase] = (uint32_t)cc->nfr;
    p->rec_n[op->phase] = 0;
}

/* Drops the phase being recorded (too large, or out of memory). */
static void record_abort(coll_cache *cc)
{
    coll_plan *p = &cc->p[cc->recording];
    size_t f0 = p->rec_off[cc->rec_phase];
    if (cc->nfr > f0)
        cc->nlk = cc->fr[f0].off;
    cc->nfr = f0;
    p->rec[cc->rec_phase] = 2;
    cc->recording = -1;
}

void coll_cache_note(mm_network *net, const int *links, const double *coef, size_t len, double bytes)
{
    coll_cache *cc = &net->cache;
    if (cc->recording < 0)
        return;
    coll_plan *p = &cc->p[cc->recording];
    size_t f0 = p->rec_off[cc->rec_phase];
    size_t used = cc->nfr > f0 ? cc->nlk - cc->fr[f0].off : 0;
    if (used + len > MAX_PHASE_ENTRIES || cc->nlk + len > MAX_ENTRIES) {
        cc->full |= cc->nlk + len > MAX_ENTRIES;
        record_abort(cc);
        return;
    }
    if (fit((void **)&cc->fr, cc->nfr, &cc->capfr, 1, sizeof *cc->fr) ||
        fit((void **)&cc->lk, cc->nlk, &cc->caplk, len, sizeof *cc->lk) ||
        fit((void **)&cc->cf, cc->nlk, &cc->capcf, len, sizeof *cc->cf)) {
        record_abort(cc);
        return;
    }
    memcpy(cc->lk + cc->nlk, links, len * sizeof *links);
    memcpy(cc->cf + cc->nlk, coef, len * sizeof *coef);
    cc->fr[cc->nfr++] = (coll_flowrec){(uint32_t)cc->nlk, (uint32_t)len, bytes};
    cc->nlk += len;
    p->rec_n[cc->rec_phase]++;
}

void coll_cache_record_end(mm_network *net)
{
    coll_cache *cc = &net->cache;
    if (cc->recording < 0)
        return;
    if (net->oom) {
        record_abort(cc);
        return;
    }
    coll_plan *p = &cc->p[cc->recording];
    p->rec[cc->rec_phase] = 1;
    p->xmax[cc->rec_phase] = net->xmax;
    cc->recording = -1;
}

int coll_cache_replay(mm_network *net, coll_op *op, mm_flow_done_fn done)
{
    coll_cache *cc = &net->cache;
    if (op->plan < 0 || op->phase >= MM_COLL_PLAN_PHASES)
        return 0;
    const coll_plan *p = &cc->p[op->plan];
    int ph = op->phase;
    if (p->rec[ph] != 1)
        return 0;
    for (uint32_t i = 0; i < p->rec_n[ph]; i++) {
        const coll_flowrec *f = &cc->fr[p->rec_off[ph] + i];
        if (mm_flownet_add(net->fn, cc->lk + f->off, cc->cf + f->off, (int)f->len, f->bytes, done, op, 0) < 0) {
            net->oom = 1;
            break;
        }
        op->pending++;
    }
    net->xmax = p->xmax[ph];
    return 1;
}

void coll_cache_forget_flows(coll_cache *cc)
{
    for (size_t k = 0; k < cc->np; k++)
        memset(cc->p[k].rec, 0, sizeof cc->p[k].rec);
    cc->nfr = 0;
    cc->nlk = 0;
    cc->recording = -1;
}

void coll_cache_clear(coll_cache *cc)
{
    cc->np = 0;
    cc->nip = 0;
    cc->nfr = 0;
    cc->nlk = 0;
    cc->full = 0;
    cc->recording = -1;
    if (cc->slot)
        memset(cc->slot, 0xff, cc->nslot * sizeof *cc->slot);
}

void coll_cache_free(coll_cache *cc)
{
    free(cc->p);
    free(cc->slot);
    free(cc->ip);
    free(cc->fr);
    free(cc->lk);
    free(cc->cf);
    memset(cc, 0, sizeof *cc);
    cc->recording = -1;
}
