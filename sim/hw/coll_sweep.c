/* coll_sweep.c - the size sweep of coll_sweep.h: one engine and one
 * network for the whole sweep, each size run to its end before the next
 * starts (so no size sees another's traffic), as `mmsim collective` times
 * them.
 * Not for: choosing algorithms or timing flows (coll.c, flow.c). */
#include "hw/coll_sweep.h"

#include <math.h>
#include <stdlib.h>

#include "engine/engine.h"

bool mm_coll_reduces(mm_coll_kind op)
{
    return op == MM_COLL_ALLREDUCE || op == MM_COLL_REDUCESCATTER;
}

void mm_coll_sweep_ranks(const mm_cluster *c, const mm_coll_sweep_req *q, int *g)
{
    for (int i = 0; i < q->gpus; i++)
        g[i] = i;
    if (q->op == MM_COLL_SENDRECV && q->gpus >= 2)
        g[1] = c->nodes > 1 ? (c->nodes - 1) * c->gpus_per_node : 1;
}

static int n_dtypes(void)
{
    int n = 0;
    while (mm_coll_dtypes[n].name)
        n++;
    return n;
}

int mm_coll_sweep_check(const mm_cluster *c, const mm_coll_sweep_req *q, mm_err *err)
{
    int total = mm_cluster_gpus(c);
    if ((int)q->op < 0 || q->op >= MM_COLL_COUNT)
        return mm_err_set(err, MM_EINPUT, "", 0, "op", "unknown collective %d", (int)q->op);
    if ((int)q->algo < 0 || q->algo >= MM_ALGO_COUNT)
        return mm_err_set(err, MM_EINPUT, "", 0, "algo", "unknown algorithm %d", (int)q->algo);
    if (q->gpus < 1 || q->gpus > total)
        return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "%d GPUs: the cluster has %d (add nodes)", q->gpus, total);
    if (q->op == MM_COLL_SENDRECV && q->gpus != 2)
        return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "send/recv runs between 2 GPUs; got %d", q->gpus);
    if (q->comm_ranks && q->op != MM_COLL_SENDRECV)
        return mm_err_set(err, MM_EINPUT, "", 0, "comm_ranks", "applies to sendrecv only");
    if (q->comm_ranks < 0 || q->comm_ranks == 1 || q->comm_ranks > total)
        return mm_err_set(err, MM_EINPUT, "", 0, "comm_ranks", "%d: from 2 to the cluster's %d GPUs", q->comm_ranks,
                          total);
    if (q->iters < 1)
        return mm_err_set(err, MM_EINPUT, "", 0, "iters", "%d: at least 1", q->iters);
    if (q->redop < -1 || q->redop >= MM_REDOP_COUNT || q->dtype < -1 || q->dtype >= n_dtypes())
        return mm_err_set(err, MM_EINPUT, "", 0, q->dtype < -1 || q->dtype >= n_dtypes() ? "dtype" : "redop",
                          "out of range");
    if (!(q->lo >= 1) || !(q->hi >= q->lo) || !(q->hi <= 1e15))
        return mm_err_set(err, MM_EINPUT, "", 0, "min_bytes", "sizes from %g to %g bytes: 1 <= min <= max <= 1e15",
                          q->lo, q->hi);
    if (q->factor > 1 ? !(q->factor <= 1e6) || log(q->hi / q->lo) / log(q->factor) + 1 > MM_COLL_SWEEP_MAX_SIZES
                      : !(q->step >= 1) || (q->hi - q->lo) / q->step + 1 > MM_COLL_SWEEP_MAX_SIZES)
        return mm_err_set(err, MM_EINPUT, "", 0, "factor", "from %g to %g bytes by %s %g: more than %d sizes", q->lo,
                          q->hi, q->factor > 1 ? "factor" : "step", q->factor > 1 ? q->factor : q->step,
                          MM_COLL_SWEEP_MAX_SIZES);
    if (q->algo == MM_ALGO_NVLS && mm_coll_reduces(q->op))
        for (int t = 0; mm_coll_dtypes[t].name; t++)
            for (int r = 0; r < MM_REDOP_COUNT; r++)
                if ((q->dtype < 0 || q->dtype == t) && (q->redop < 0 || q->redop == r) &&
                    !mm_coll_nvls_supports((mm_redop)r, &mm_coll_dtypes[t]))
                    return mm_err_set(err, MM_EINPUT, "", 0, "algo", "nvls has no kernel for -o %s -d %s (NVLink "
                                      "SHARP reduces sums, and min/max of 16-bit and 32/64-bit integer types)",
                                      mm_redop_names[r], mm_coll_dtypes[t].name);
    return 0;
}

/* One size as nccl-tests sets it up (src/common.cu setupArgs and each
 * test's GetCollByteCount): count = S / element size, a rank's share for
 * all-gather, reduce-scatter and all-to-all rounded down to a multiple of
 * 16 bytes; `bytes` is what the size column prints (the larger of the send
 * and receive buffers) and what algbw divides, `count` the count column. */
static void size_of(int op, double S, int w, int gpus, double *bytes, double *count)
{
    double e = floor(S / w);
    if (op == MM_COLL_ALLGATHER || op == MM_COLL_REDUCESCATTER || op == MM_COLL_ALLTOALL) {
        double align = 16 / w > 1 ? 16 / w : 1;
        double base = floor(floor(e / gpus) / align) * align;
        *count = base;
        *bytes = base * gpus * w;
    } else {
        *count = e;
        *bytes = e * w;
    }
}

static void note_end(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    *(mm_time *)ctx = mm_engine_now(eng);
}

typedef struct sweep {
    const mm_coll_sweep_req *q;
    mm_engine *eng;
    mm_network *net;
    int *g, comm_nodes;
    mm_coll_row_fn fn;
    void *ctx;
} sweep;

/* Every size for one data type and operator. */
static int sweep_sizes(sweep *sw, int t, int r, mm_err *err)
{
    const mm_coll_sweep_req *q = sw->q;
    int op = (int)q->op;
    const mm_coll_dtype *dt = &mm_coll_dtypes[t];
    for (double S = q->lo; S <= q->hi * (1 + 1e-12); S = q->factor > 1 ? S * q->factor : S + q->step) {
        mm_coll_row row = {.type = dt->name, .redop = mm_coll_reduces(q->op) ? mm_redop_names[r] : "none",
                           .root = op == MM_COLL_BROADCAST ? 0 : -1};
        size_of(op, S, dt->bytes, q->gpus, &row.bytes, &row.count);
        /* -n back-to-back operations, timed together, as nccl-tests times
         * its iterations; the time is per operation */
        mm_coll_req req = {.kind = q->op, .algo = q->algo, .gpus = sw->g, .n = q->gpus, .bytes = row.bytes,
                           .count = q->iters, .comm_ranks = q->comm_ranks, .comm_nodes = sw->comm_nodes,
                           .no_nvls = mm_coll_reduces(q->op) && !mm_coll_nvls_supports((mm_redop)r, dt)};
        mm_time t0 = mm_engine_now(sw->eng), t1 = -1;
        mm_coll_algo used = MM_ALGO_RING;
        int rc = mm_network_start(sw->net, &req, note_end, &t1, 0, &used, err);
        if (rc)
            return rc;
        mm_engine_run(sw->eng);
        double sec = (double)(t1 - t0) * 1e-9 / q->iters;
        /* all-to-all and send/recv have one algorithm: direct transfers */
        row.algo = op == MM_COLL_ALLTOALL || op == MM_COLL_SENDRECV ? "direct" : mm_coll_algo_names[used];
        row.t_us = sec * 1e6;
        row.alg = sec > 0 ? row.bytes / sec / 1e9 : INFINITY;
        row.bus = row.alg * mm_coll_bus_factor(q->op, q->gpus);
        if ((rc = sw->fn(&row, sw->ctx)))
            return rc;
    }
    return 0;
}

int mm_coll_sweep(const mm_cluster *c, const mm_coll_sweep_req *q, mm_coll_row_fn fn, void *ctx, mm_err *err)
{
    int rc = mm_coll_sweep_check(c, q, err);
    if (rc)
        return rc;
    /* the communicator: the first comm_ranks GPUs, on the nodes they fill */
    sweep sw = {.q = q, .fn = fn, .ctx = ctx,
                .comm_nodes = q->comm_ranks ? (q->comm_ranks + c->gpus_per_node - 1) / c->gpus_per_node : 0};
    sw.g = malloc((size_t)q->gpus * sizeof *sw.g);
    sw.eng = mm_engine_alloc();
    sw.net = sw.g && sw.eng ? mm_network_alloc(c, sw.eng, q->model, err) : NULL;
    if (!sw.net) {
        rc = err && err->code != MM_OK ? -err->code : mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    } else {
        mm_coll_sweep_ranks(c, q, sw.g);
        /* nccl-tests' order: each data type, each operator (reductions
         * only), every size */
        for (int t = 0; rc == 0 && mm_coll_dtypes[t].name; t++)
            for (int r = 0; rc == 0 && r < (mm_coll_reduces(q->op) ? MM_REDOP_COUNT : 1); r++)
                if ((q->dtype < 0 || q->dtype == t) && (!mm_coll_reduces(q->op) || q->redop < 0 || q->redop == r))
                    rc = sweep_sizes(&sw, t, r, err);
    }
    mm_network_free(sw.net);
    mm_engine_free(sw.eng);
    free(sw.g);
    return rc;
}
