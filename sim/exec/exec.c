/* exec.c - the op-graph executor: streams, dependencies, collectives.
 *
 * A compute op costs two engine events' worth of work: it becomes ready
 * (no event), starts (schedules its completion) and completes (one event).
 * Collective members wait in an arrival count; the last arrival starts the
 * collective on the network interface (hw/coll.h), which calls back when it
 * is done: at a fixed time under `analytic`, when its flows have drained
 * under `flow`, where TP, PP and DP traffic in flight share links.
 * Not for: building graphs (parallel/) or metrics (iterate.c). */
#include "exec/exec.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hw/coll.h"
#include "hw/perturb.h"

/* What the run reads and writes of an op, packed in 32 bytes: an op is
 * touched when it becomes ready and again when it completes, long after,
 * so each touch is a cache miss; the graph's 72-byte ops and five per-op
 * arrays cost several lines per touch (docs/performance.md). */
typedef struct xop {
    double dur_s;    /* mm_op.dur_s times its perturbation multiplier */
    int32_t rank, coll;
    uint32_t succ_off, nsucc; /* nsucc 1: succ_off is the successor itself (no
                                 read of the graph's list when it completes) */
    uint32_t deps;   /* remaining dependencies */
    uint8_t stream, cat;
    uint8_t arrived; /* reached its collective / was started */
    uint8_t runs;    /* completions (saturating at 255) */
} xop;

/* The compute op a stream runs, paced by the communication beside it: it
 * runs at 1 / (1 + overlap) of its pace while its rank has overlapped
 * communication in flight and at full pace otherwise, so its end moves
 * when that starts or stops (the event scheduled before is then stale:
 * its generation no longer matches). */
typedef struct run_slot {
    uint32_t id;   /* UINT32_MAX: none */
    uint32_t gen;  /* of the end event that counts */
    double left;   /* nominal seconds of work left at `since` */
    mm_time since;
    bool slow;
} run_slot;

typedef struct exec_state {
    mm_engine *eng;
    const mm_graph *g;
    const mm_cluster *c;
    mm_time *start, *end;
    xop *x;              /* per op */
    uint32_t *head;      /* next op index per stream */
    uint32_t *coll_arrived;
    uint32_t *coll_off;  /* CSR: member ops per collective */
    uint32_t *coll_ops;
    int32_t *coll_orank; /* beside coll_ops: the member's rank if it is
                            overlapped (overlapped()), else -1, so a
                            collective's start and end read no member's xop */
    uint32_t done;
    mm_time last;        /* time of the latest completion seen */
    int backwards;       /* a completion came before an earlier one */
    mm_network *net;
    double *scale;       /* per op: perturbation multiplier of dur_s; NULL: none */
    uint32_t *comm_active; /* per rank: overlapped communication ops in flight */
    double overlap;      /* mm_exec_opts.overlap_slowdown */
    struct run_slot *slot; /* per stream: its running compute op's pace (overlap > 0) */
    mm_time *host_t;     /* per rank: when its host thread is free to issue
                            the next compute-stream op (the host cursor) */
    mm_time *host_start; /* per op, NULL: when the host began issuing it */
    double *host_wait;   /* per op, NULL: seconds its GPU stream waited for
                            the host (ready, but not yet issued) */
    bool fill;           /* the graph has fill-stream ops (below) */
    uint32_t *gpu_op;    /* per rank, with fill: the kernel (compute-stream
                            op that is not a collective, or fill op) its
                            GPU runs; UINT32_MAX: none */
    uint32_t *deferred;  /* per rank, with fill: a compute-stream kernel
                            that arrived while a fill kernel ran */
    uint8_t *fill_asked; /* per rank, with fill: in fill_list */
    int32_t *fill_list;  /* ranks whose fill stream waits for the end of
                            the instant, in the order they asked */
    int32_t n_fill;
    bool fill_queued;    /* the end-of-instant sweep is scheduled */
    int32_t fill_now;    /* the rank the sweep tries, or -1 */
    int rc;
    mm_err *err;
} exec_state;

static void on_complete(mm_engine *eng, void *ctx, uint64_t arg);

/* A collective member that runs beside the compute stream rather than on it
 * (a blocking one leaves no compute to slow, unless fill kernels run
 * beside it: then it slows them as any overlapped traffic does). */
static bool overlapped(const exec_state *st, uint32_t id)
{
    const xop *op = &st->x[id];
    return st->overlap > 0 && (op->stream != MM_STREAM_COMPUTE || st->fill) && op->rank >= 0 &&
           op->rank < st->g->n_ranks;
}
static void on_coll_done(mm_engine *eng, void *ctx, uint64_t arg);
static size_t stream_of(const xop *op);

/* Schedules op id's end dur_s from now; gen tags the event (run_slot). */
static void end_in(exec_state *st, uint32_t id, double dur_s, uint32_t gen)
{
    mm_time now = mm_engine_now(st->eng);
    mm_time at = mm_time_add(now, mm_time_from_s(dur_s, MM_ROUND_NEAREST));
    /* The queue allocates only when the pool grows, and refuses a time in
     * the past (a negative duration): either stops the run with its op. */
    if (!mm_engine_at(st->eng, at, on_complete, st, (uint64_t)id | (uint64_t)gen << 32) && st->rc == 0) {
        const mm_op *op = &st->g->ops[id];
        st->rc = mm_err_set(st->err, MM_EINTERNAL, "", 0, "",
                            "cannot schedule the end of op %u (%s, rank %d, stage %d) after %g s: %s", id,
                            mm_op_cat_names[op->cat], op->rank, op->stage, dur_s,
                            dur_s < 0 ? "negative duration" : "out of memory in the engine");
        mm_engine_stop(st->eng);
    }
}

static void start_op(exec_state *st, uint32_t id, double dur_s)
{
    st->start[id] = mm_engine_now(st->eng);
    end_in(st, id, dur_s, 0);
}

/* A compute op that communication beside it slows (hw/exec.h). */
static bool paced(const exec_state *st, const xop *op)
{
    return st->slot && op->coll < 0 && op->stream < MM_STREAM_COUNT && op->rank >= 0 &&
           op->rank < st->g->n_ranks && !mm_cat_is_comm(op->cat);
}

/* Rank r's overlapped communication started (slow) or stopped: the
 * compute ops its streams run change pace from now. */
static void repace(exec_state *st, int32_t r, bool slow)
{
    mm_time now = mm_engine_now(st->eng);
    for (size_t k = 0; k < MM_STREAM_COUNT; k++) {
        run_slot *s = &st->slot[(size_t)r * MM_STREAM_COUNT + k];
        if (s->id == UINT32_MAX || s->slow == slow)
            continue;
        double ran = (double)(now - s->since) / (double)MM_NS_PER_S;
        s->left = fmax(0.0, s->left - (s->slow ? ran / (1.0 + st->overlap) : ran));
        s->since = now;
        s->slow = slow;
        end_in(st, s->id, s->slow ? s->left * (1.0 + st->overlap) : s->left, ++s->gen);
    }
}

/* A kernel that the fill rule orders on its rank's GPU: a compute-stream
 * op that is not a collective, or a fill-stream op.  A fill kernel starts
 * only when its GPU runs no kernel; a compute kernel that arrives while a
 * fill kernel runs waits for it (kernels are not preempted), and has the
 * GPU first when it ends.  Compute-stream collectives (TP, blocking DP)
 * leave the GPU to fill kernels while they wait and transfer. */
static bool gpu_kernel(const exec_state *st, const xop *op)
{
    return st->fill && op->coll < 0 && (op->stream == MM_STREAM_COMPUTE || op->stream == MM_STREAM_FILL) &&
           op->rank >= 0 && op->rank < st->g->n_ranks;
}

static void start_kernel(exec_state *st, uint32_t id);

/* The op's dependencies are met, it heads its stream (or has none) and
 * the host has issued it. */
static void arrive_now(exec_state *st, uint32_t id)
{
    xop *op = &st->x[id];
    op->arrived = 1;
    if (gpu_kernel(st, op)) {
        if (st->gpu_op[op->rank] != UINT32_MAX) { /* a fill kernel runs */
            st->deferred[op->rank] = id;
            return;
        }
        st->gpu_op[op->rank] = id;
    }
    start_kernel(st, id);
}

static void start_kernel(exec_state *st, uint32_t id)
{
    xop *op = &st->x[id];
    if (op->coll < 0) {
        if (!paced(st, op)) {
            start_op(st, id, op->dur_s);
            return;
        }
        run_slot *s = &st->slot[stream_of(op)];
        s->id = id;
        s->left = op->dur_s;
        s->since = st->start[id] = mm_engine_now(st->eng);
        s->slow = st->comm_active[op->rank] > 0;
        end_in(st, id, s->slow ? s->left * (1.0 + st->overlap) : s->left, ++s->gen);
        return;
    }
    uint32_t c = (uint32_t)op->coll;
    const mm_coll *cl = &st->g->colls[c];
    if (++st->coll_arrived[c] < (uint32_t)cl->members)
        return;
    mm_time now = mm_engine_now(st->eng);
    for (uint32_t k = st->coll_off[c]; k < st->coll_off[c + 1]; k++) {
        st->start[st->coll_ops[k]] = now;
        int32_t r = st->coll_orank[k];
        if (r >= 0 && st->comm_active[r]++ == 0 && st->slot)
            repace(st, r, true);
    }
    mm_coll_req req = {.kind = (mm_coll_kind)cl->kind, .algo = MM_ALGO_AUTO,
                       .gpus = st->g->gpus + cl->gpu_off, .n = (int)cl->n_gpus,
                       .bytes = cl->bytes, .count = cl->count,
                       .comm_ranks = cl->comm_ranks, .comm_nodes = cl->comm_nodes};
    /* A failure leaves the members unfinished: reported as a deadlock
     * unless the error below is kept first. */
    if (st->rc == 0)
        st->rc = mm_network_start_replicated(st->net, &req, cl->replicas, cl->replica_stride, on_coll_done, st, c,
                                             NULL, st->err);
}

static void on_host_ready(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    arrive_now(ctx, (uint32_t)arg);
}

/* The op's dependencies are met and it heads its stream (or has none).  A
 * compute-stream op goes through its rank's host cursor first: the host
 * issues the rank's compute-stream ops in stream order, each taking its
 * host_s, and does not wait for the GPU (launches are asynchronous) except
 * at a sync point (MM_OPF_HOST_SYNC: it waits until the GPU reaches the op).
 * The GPU may start the op lead_s after the host began issuing it
 * (mm_build_op_host); until then it waits, and the wait is the exposed
 * host time.  A host that is ahead (or costs nothing) delays nothing. */
static void arrive(exec_state *st, uint32_t id)
{
    xop *op = &st->x[id];
    if (op->stream != MM_STREAM_COMPUTE || op->rank < 0 || op->rank >= st->g->n_ranks) {
        arrive_now(st, id);
        return;
    }
    const mm_op *go = &st->g->ops[id];
    mm_time now = mm_engine_now(st->eng), *ht = &st->host_t[op->rank];
    mm_time h0 = (go->flags & MM_OPF_HOST_SYNC) && now > *ht ? now : *ht;
    mm_time ready = mm_time_add(h0, mm_time_from_s(go->lead_s, MM_ROUND_NEAREST));
    *ht = mm_time_add(h0, mm_time_from_s(go->host_s, MM_ROUND_NEAREST));
    if (st->host_start)
        st->host_start[id] = h0;
    if (ready <= now) {
        arrive_now(st, id);
        return;
    }
    if (st->host_wait)
        st->host_wait[id] = (double)(ready - now) / (double)MM_NS_PER_S;
    op->arrived = 2; /* waiting for its launch: not to be arrived again */
    if (!mm_engine_at(st->eng, ready, on_host_ready, st, id) && st->rc == 0) {
        st->rc = mm_err_set(st->err, MM_EINTERNAL, "", 0, "", "out of memory in the engine (op %u)", id);
        mm_engine_stop(st->eng);
    }
}

static void try_stream(exec_state *st, size_t s);

static void queue_sweep(exec_state *st);

/* The end of an instant: once nothing else is due now (what becomes ready
 * at the same time, through however many zero-time steps, goes first),
 * the ranks that asked try their fill streams, in the order they asked. */
static void on_fill_sweep(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    exec_state *st = ctx;
    st->fill_queued = false;
    if (mm_engine_due_now(eng)) {
        queue_sweep(st);
        return;
    }
    int32_t n = st->n_fill;
    st->n_fill = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t r = st->fill_list[k];
        st->fill_asked[r] = 0;
        st->fill_now = r;
        try_stream(st, (size_t)r * MM_STREAM_COUNT + MM_STREAM_FILL);
        st->fill_now = -1;
    }
}

static void queue_sweep(exec_state *st)
{
    if (st->fill_queued)
        return;
    st->fill_queued = true;
    if (!mm_engine_at(st->eng, mm_engine_now(st->eng), on_fill_sweep, st, 0) && st->rc == 0) {
        st->rc = mm_err_set(st->err, MM_EINTERNAL, "", 0, "", "out of memory in the engine (fill sweep)");
        mm_engine_stop(st->eng);
    }
}

/* Rank r's fill stream is tried at the end of the current instant. */
static void ask_fill(exec_state *st, int32_t r)
{
    if (!st->fill_asked[r]) {
        st->fill_asked[r] = 1;
        st->fill_list[st->n_fill++] = r;
    }
    queue_sweep(st);
}

static void try_stream(exec_state *st, size_t s)
{
    const mm_graph *g = st->g;
    uint32_t pos = g->stream_off[s] + st->head[s];
    if (pos >= g->stream_off[s + 1])
        return;
    /* a fill kernel waits for its GPU to be free, and for the end of the
     * instant: what becomes ready at the same time goes first */
    if (st->fill && s % MM_STREAM_COUNT == MM_STREAM_FILL) {
        int32_t r = (int32_t)(s / MM_STREAM_COUNT);
        if (st->gpu_op[r] != UINT32_MAX)
            return;
        if (st->fill_now != r) {
            ask_fill(st, r);
            return;
        }
    }
    uint32_t id = g->stream_ops[pos];
    if (!st->x[id].arrived && st->x[id].deps == 0)
        arrive(st, id);
}

static size_t stream_of(const xop *op)
{
    return (size_t)op->rank * MM_STREAM_COUNT + op->stream;
}

static void release(exec_state *st, uint32_t id)
{
    const xop *op = &st->x[id];
    if (op->stream == MM_STREAM_NONE) {
        if (!op->arrived)
            arrive(st, id);
    } else {
        try_stream(st, stream_of(op));
    }
}

static void on_complete(mm_engine *eng, void *ctx, uint64_t arg)
{
    exec_state *st = ctx;
    uint32_t id = (uint32_t)arg;
    xop *op = &st->x[id];
    if (paced(st, op)) {
        run_slot *s = &st->slot[stream_of(op)];
        if (s->id != id || s->gen != (uint32_t)(arg >> 32))
            return; /* its end moved (repace) */
        s->id = UINT32_MAX;
    }
    mm_time now = mm_engine_now(eng);
    st->end[id] = now;
    st->done++;
    if (op->runs < 255)
        op->runs++;
    st->backwards |= now < st->last;
    st->last = now;
    bool kernel = gpu_kernel(st, op);
    if (kernel) { /* the GPU is free: a deferred compute kernel first */
        uint32_t q = st->deferred[op->rank];
        st->gpu_op[op->rank] = q;
        st->deferred[op->rank] = UINT32_MAX;
        if (q != UINT32_MAX)
            start_kernel(st, q);
    }
    if (op->stream != MM_STREAM_NONE) {
        size_t s = stream_of(op);
        st->head[s]++;
        /* the stream's next ops are touched soon (ready, started, done):
         * fetch their records ahead, as the rank's cursor is one of
         * hundreds that the hardware prefetcher does not follow */
        uint32_t pos = st->g->stream_off[s] + st->head[s] + 2;
        if (pos < st->g->stream_off[s + 1]) {
            uint32_t ahead = st->g->stream_ops[pos];
            __builtin_prefetch(&st->x[ahead], 1);
            __builtin_prefetch(&st->start[ahead], 1);
            __builtin_prefetch(&st->end[ahead], 1);
            __builtin_prefetch(&st->g->stream_ops[pos + 16], 0);
            int32_t c = st->x[st->g->stream_ops[pos - 1]].coll;
            if (c >= 0) {
                __builtin_prefetch(&st->g->colls[c], 0);
                __builtin_prefetch((const char *)&st->g->colls[c] + sizeof(mm_coll) - 1, 0); /* it may straddle two lines */
                __builtin_prefetch(&st->coll_arrived[c], 1);
            }
        }
        if (!kernel || op->stream != MM_STREAM_FILL) /* a fill stream's next: below */
            try_stream(st, s);
    }
    if (op->nsucc == 1) {
        if (--st->x[op->succ_off].deps == 0)
            release(st, op->succ_off);
    } else {
        for (uint32_t k = op->succ_off; k < op->succ_off + op->nsucc; k++) {
            uint32_t nx = st->g->succ[k];
            if (--st->x[nx].deps == 0)
                release(st, nx);
        }
    }
    /* what became ready at this instant had the GPU first; a fill kernel
     * takes it if it is still free */
    if (kernel)
        try_stream(st, (size_t)op->rank * MM_STREAM_COUNT + MM_STREAM_FILL);
}

/* The network finished collective `arg`: its members complete together. */
static void on_coll_done(mm_engine *eng, void *ctx, uint64_t arg)
{
    exec_state *st = ctx;
    uint32_t c = (uint32_t)arg;
    for (uint32_t k = st->coll_off[c]; k < st->coll_off[c + 1]; k++) {
        int32_t r = st->coll_orank[k];
        if (r >= 0 && --st->comm_active[r] == 0 && st->slot)
            repace(st, r, false);
    }
    for (uint32_t k = st->coll_off[c]; k < st->coll_off[c + 1]; k++)
        on_complete(eng, st, st->coll_ops[k]);
}

/* Each compute op's multiplier from the GPUs' pace (hw/perturb.h): the
 * slowest GPU of its rank.  Jitter is drawn in op order from the
 * iteration's own stream, so it does not depend on the order ops run in. */
static int op_scales(exec_state *st, const mm_exec_opts *opts)
{
    const mm_graph *g = st->g;
    const mm_cluster *c = st->c;
    if ((c->pt.n == 0 && c->n_groups == 0) || !g->rank_gpu_off)
        return 0;
    mm_gpu_pace pace;
    int rc = mm_gpu_pace_build(&pace, c, st->err);
    if (rc)
        return rc;
    if (!pace.any_time) {
        mm_gpu_pace_free(&pace);
        return 0;
    }
    bool jitter = false;
    for (int i = 0; i < pace.n; i++)
        jitter |= pace.cv[i] > 0;
    gsl_rng *rng = jitter ? mm_perturb_rng(c->pt.seed, opts ? opts->iteration : 0) : NULL;
    st->scale = malloc((g->n_ops + 1) * sizeof *st->scale);
    if (!st->scale || (jitter && !rng)) {
        if (rng)
            gsl_rng_free(rng);
        mm_gpu_pace_free(&pace);
        return mm_err_set(st->err, MM_EINTERNAL, "", 0, "", "out of memory in the executor");
    }
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        st->scale[i] = 1.0;
        if (op->coll >= 0 || mm_cat_is_comm(op->cat) || op->rank < 0 || op->rank >= g->n_ranks)
            continue;
        uint32_t a = g->rank_gpu_off[op->rank], b = g->rank_gpu_off[op->rank + 1];
        double m = opts && opts->mem_frac ? opts->mem_frac[i] : 0.0;
        st->scale[i] = mm_gpu_pace_op(&pace, g->rank_gpus + a, (int)(b - a), m, rng);
    }
    if (rng)
        gsl_rng_free(rng);
    mm_gpu_pace_free(&pace);
    return 0;
}

int mm_exec_check(const mm_graph *g, const uint8_t *runs, const mm_time *start,
                  const mm_time *end, mm_time t0, mm_time t_end, mm_err *err)
{
    for (uint32_t i = 0; i < g->n_ops; i++) {
        if (runs && runs[i] != 1)
            return mm_err_set(err, MM_EINTERNAL, "", 0, "",
                              "internal error: op %u (rank %d) ran %d times, not once", i,
                              g->ops[i].rank, runs[i]);
        if (start[i] < t0 || end[i] < start[i] || end[i] > t_end)
            return mm_err_set(err, MM_EINTERNAL, "", 0, "",
                              "internal error: simulated time went backwards at op %u (rank %d):"
                              " start %lld ns, end %lld ns, iteration %lld..%lld ns",
                              i, g->ops[i].rank, (long long)start[i], (long long)end[i],
                              (long long)t0, (long long)t_end);
    }
    /* A stream runs its ops in order, one at a time: each starts after the
     * one before it ended. */
    size_t nstreams = (size_t)g->n_ranks * MM_STREAM_COUNT;
    for (size_t s = 0; s < nstreams; s++)
        for (uint32_t p = g->stream_off[s] + 1; p < g->stream_off[s + 1]; p++) {
            uint32_t a = g->stream_ops[p - 1], b = g->stream_ops[p];
            if (start[b] < end[a])
                return mm_err_set(err, MM_EINTERNAL, "", 0, "",
                                  "internal error: stream %zu of rank %zu ran ops %u and %u at "
                                  "once (%lld < %lld ns)", s % MM_STREAM_COUNT,
                                  s / MM_STREAM_COUNT, a, b, (long long)start[b],
                                  (long long)end[a]);
        }
    /* A GPU runs one kernel at a time: a rank's fill kernels and its
     * compute-stream kernels (not its collectives) never overlap.  Both
     * streams run in order, so one merge walk per rank finds any. */
    for (int r = 0; r < g->n_ranks; r++) {
        size_t sc = (size_t)r * MM_STREAM_COUNT + MM_STREAM_COMPUTE, sf = (size_t)r * MM_STREAM_COUNT + MM_STREAM_FILL;
        uint32_t a = g->stream_off[sc], ae = g->stream_off[sc + 1], f = g->stream_off[sf], fe = g->stream_off[sf + 1];
        while (a < ae && f < fe) {
            uint32_t x = g->stream_ops[a], y = g->stream_ops[f];
            if (g->ops[x].coll >= 0) {
                a++;
                continue;
            }
            if (start[x] < end[y] && start[y] < end[x])
                return mm_err_set(err, MM_EINTERNAL, "", 0, "",
                                  "internal error: rank %d's GPU ran compute op %u and fill op %u at once", r, x, y);
            if (end[x] <= end[y])
                a++;
            else
                f++;
        }
    }
    return 0;
}

int mm_exec_run(mm_engine *eng, const mm_graph *g, const mm_cluster *c,
                mm_exec_net net, mm_time *start, mm_time *end, mm_time *t_end,
                mm_err *err)
{
    return mm_exec_run_opts(eng, g, c, net, NULL, start, end, t_end, err);
}

/* Under `flow`, a graph standing for identical replicas: the network
 * probes every distinct collective of it and reduces its problem by the
 * replicas' symmetry where all of them keep it exact (hw/coll.h). */
static void sym_setup(exec_state *st, const mm_exec_opts *opts)
{
    const mm_graph *g = st->g;
    if (!opts || opts->sym_replicas < 2 || !mm_network_flows(st->net) || !g->rank_gpu_off || !g->n_ranks)
        return;
    if (!mm_network_symmetric(st->net, opts->sym_replicas, opts->sym_stride, g->rank_gpus,
                              (int)g->rank_gpu_off[g->n_ranks]))
        return;
    for (uint32_t c = 0; c < g->n_colls; c++) {
        const mm_coll *cl = &g->colls[c];
        mm_coll_req req = {.kind = (mm_coll_kind)cl->kind, .algo = MM_ALGO_AUTO,
                           .gpus = g->gpus + cl->gpu_off, .n = (int)cl->n_gpus,
                           .bytes = cl->bytes, .count = cl->count,
                           .comm_ranks = cl->comm_ranks, .comm_nodes = cl->comm_nodes};
        mm_network_symmetric_probe(st->net, &req, cl->replicas, cl->replica_stride);
    }
    mm_network_symmetric_done(st->net);
}

/* The executor's arrays for g (st->g, ->c, ->eng set): 0, or -code with
 * st->err set (what was allocated is freed by state_free). */
static int state_alloc(exec_state *st, mm_exec_net net, const mm_exec_opts *opts)
{
    const mm_graph *g = st->g;
    size_t nstreams = (size_t)g->n_ranks * MM_STREAM_COUNT;
    st->net = mm_network_alloc(st->c, st->eng, net == MM_EXEC_NET_FLOW ? MM_NET_MODEL_FLOW : MM_NET_MODEL_ANALYTIC,
                               st->err);
    if (!st->net)
        return -MM_EINTERNAL;
    st->x = malloc((g->n_ops + 1) * sizeof *st->x);
    st->head = calloc(nstreams + 1, sizeof *st->head);
    st->coll_arrived = calloc(g->n_colls + 1, sizeof *st->coll_arrived);
    st->coll_off = calloc(g->n_colls + 2, sizeof *st->coll_off);
    st->coll_ops = malloc((g->n_ops + 1) * sizeof *st->coll_ops);
    st->coll_orank = malloc((g->n_ops + 1) * sizeof *st->coll_orank);
    st->comm_active = calloc((size_t)g->n_ranks + 1, sizeof *st->comm_active);
    st->host_t = malloc(((size_t)g->n_ranks + 1) * sizeof *st->host_t);
    for (int r = 0; st->host_t && r <= g->n_ranks; r++)
        st->host_t[r] = mm_engine_now(st->eng);
    for (uint32_t i = 0; i < g->n_ops && !st->fill; i++)
        st->fill = g->ops[i].stream == MM_STREAM_FILL;
    if (st->fill) {
        st->gpu_op = malloc(((size_t)g->n_ranks + 1) * sizeof *st->gpu_op);
        st->deferred = malloc(((size_t)g->n_ranks + 1) * sizeof *st->deferred);
        st->fill_asked = calloc((size_t)g->n_ranks + 1, 1);
        st->fill_list = malloc(((size_t)g->n_ranks + 1) * sizeof *st->fill_list);
        for (int r = 0; st->gpu_op && st->deferred && r <= g->n_ranks; r++)
            st->gpu_op[r] = st->deferred[r] = UINT32_MAX;
    }
    st->host_start = opts ? opts->host_start : NULL;
    st->host_wait = opts ? opts->host_wait : NULL;
    st->overlap = opts ? opts->overlap_slowdown : 0.0;
    if (st->overlap > 0 && (st->slot = malloc((nstreams + 1) * sizeof *st->slot)))
        for (size_t s = 0; s <= nstreams; s++)
            st->slot[s] = (run_slot){.id = UINT32_MAX};
    if (!st->x || !st->head || !st->coll_arrived || !st->coll_off || !st->coll_ops || !st->coll_orank ||
        !st->comm_active || !st->host_t || (st->overlap > 0 && !st->slot) ||
        (st->fill && (!st->gpu_op || !st->deferred || !st->fill_asked || !st->fill_list)))
        return mm_err_set(st->err, MM_EINTERNAL, "", 0, "", "out of memory in the executor");
    sym_setup(st, opts);
    return op_scales(st, opts);
}

static void state_free(exec_state *st)
{
    mm_network_free(st->net);
    free(st->x);
    free(st->head);
    free(st->coll_arrived);
    free(st->coll_off);
    free(st->coll_ops);
    free(st->coll_orank);
    free(st->comm_active);
    free(st->host_t);
    free(st->slot);
    free(st->scale);
    free(st->gpu_op);
    free(st->deferred);
    free(st->fill_asked);
    free(st->fill_list);
}

/* The graph's ops packed into the executor's records, and each
 * collective's members (with the ranks whose overlap it paces) in one
 * array: the later passes read these, not the graph's ops. */
static void pack_ops(exec_state *st)
{
    const mm_graph *g = st->g;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        st->x[i] = (xop){.dur_s = st->scale ? op->dur_s * st->scale[i] : op->dur_s, .rank = op->rank,
                         .coll = op->coll, .succ_off = op->nsucc == 1 ? g->succ[op->succ_off] : op->succ_off,
                         .nsucc = op->nsucc, .deps = op->ndeps,
                         .stream = op->stream, .cat = op->cat};
        st->start[i] = st->end[i] = -1;
        if (st->host_start)
            st->host_start[i] = -1;
        if (st->host_wait)
            st->host_wait[i] = 0.0;
        if (op->coll >= 0)
            st->coll_off[op->coll + 1]++;
    }
    for (uint32_t k = 0; k < g->n_colls; k++)
        st->coll_off[k + 1] += st->coll_off[k];
    uint32_t *fill = st->coll_arrived; /* reused as a cursor, reset below */
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (st->x[i].coll >= 0) {
            uint32_t k = (uint32_t)st->x[i].coll;
            uint32_t at = st->coll_off[k] + fill[k]++;
            st->coll_ops[at] = i;
            st->coll_orank[at] = overlapped(st, i) ? st->x[i].rank : -1;
        }
    memset(fill, 0, (g->n_colls + 1) * sizeof *fill);
}

/* The run-time invariants, after every iteration: each op ran exactly
 * once, no stream ran two ops at once, time never went backwards.  A
 * debug build stops at the first broken one; a release build reports it
 * as an internal error (exit 1), never as a number. */
static int check_run(const exec_state *st, mm_time t0, mm_time t_end)
{
    const mm_graph *g = st->g;
    uint8_t *runs = malloc(g->n_ops + 1);
    if (!runs)
        return mm_err_set(st->err, MM_EINTERNAL, "", 0, "", "out of memory in the executor");
    for (uint32_t i = 0; i < g->n_ops; i++)
        runs[i] = st->x[i].runs;
    int broken = st->backwards ? mm_err_set(st->err, MM_EINTERNAL, "", 0, "",
                                            "internal error: an op completed before one "
                                            "that completed earlier")
                               : mm_exec_check(g, runs, st->start, st->end, t0, t_end, st->err);
    assert(broken == 0 && "executor invariant broken (mm_exec_check)");
    free(runs);
    return broken;
}

int mm_exec_run_opts(mm_engine *eng, const mm_graph *g, const mm_cluster *c,
                     mm_exec_net net, const mm_exec_opts *opts, mm_time *start, mm_time *end,
                     mm_time *t_end, mm_err *err)
{
    size_t nstreams = (size_t)g->n_ranks * MM_STREAM_COUNT;
    exec_state st = {.eng = eng, .g = g, .c = c, .start = start, .end = end, .err = err, .fill_now = -1};
    mm_time t0 = mm_engine_now(eng);
    st.last = t0;
    int rc = state_alloc(&st, net, opts);
    if (rc) {
        state_free(&st);
        return rc;
    }
    pack_ops(&st);
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (st.x[i].stream == MM_STREAM_NONE && st.x[i].deps == 0)
            arrive(&st, i);
    for (size_t s = 0; s < nstreams; s++)
        try_stream(&st, s);
    mm_engine_run(eng);
    /* The run ends at its last op's end, not at the engine's last event:
     * a compute op re-paced when overlapped traffic stopped leaves its
     * earlier end event behind (stale, ignored by on_complete), and that
     * event may be the engine's last. */
    *t_end = t0;
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (end[i] > *t_end)
            *t_end = end[i];
    if (st.rc)
        rc = st.rc;
    else if (st.done != g->n_ops)
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "",
                        "schedule deadlock: %u of %u ops never ran", g->n_ops - st.done,
                        g->n_ops);
    if (rc == 0)
        rc = check_run(&st, t0, *t_end);
    state_free(&st);
    return rc;
}
