/* coll_sweep.c - the size sweep of coll_sweep.h: one engine and one
 * network for the whole sweep, each size run to its end before the next
 * starts (so no size sees another's traffic), exactly as `mmsim
 * collective` has always timed them.
 * Not for: choosing algorithms or timing flows (coll.c, flow.c). */
#include "hw/coll_sweep.h"

#include <math.h>
#include <stdlib.h>

#include "engine/engine.h"

int mm_coll_sweep_check(const mm_cluster *c, const mm_coll_sweep_req *q, mm_err *err)
{
    int total = mm_cluster_gpus(c);
    if ((int)q->op < 0 || q->op > MM_COLL_SENDRECV)
        return mm_err_set(err, MM_EINPUT, "", 0, "op", "unknown collective %d", (int)q->op);
    if (q->gpus < 1 || q->gpus > total)
        return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "%d GPUs: the cluster has %d (add nodes)", q->gpus, total);
    if (q->op == MM_COLL_SENDRECV && q->gpus != 2)
        return mm_err_set(err, MM_EINPUT, "", 0, "gpus", "send/recv runs between 2 GPUs; got %d", q->gpus);
    if (q->comm_ranks && q->op != MM_COLL_SENDRECV)
        return mm_err_set(err, MM_EINPUT, "", 0, "comm_ranks", "applies to send/recv only");
    if (q->comm_ranks < 0 || q->comm_ranks == 1 || q->comm_ranks > total)
        return mm_err_set(err, MM_EINPUT, "", 0, "comm_ranks", "%d: from 2 to the cluster's %d GPUs", q->comm_ranks,
                          total);
    if (!(q->lo >= 1) || !(q->hi >= q->lo) || !isfinite(q->hi))
        return mm_err_set(err, MM_EINPUT, "", 0, "min", "sizes from %g to %g bytes: 1 <= min <= max", q->lo, q->hi);
    if (!(q->factor > 1) || !isfinite(q->factor))
        return mm_err_set(err, MM_EINPUT, "", 0, "factor", "%g: a factor above 1", q->factor);
    if (log(q->hi / q->lo) / log(q->factor) > MM_COLL_SWEEP_MAX_ROWS)
        return mm_err_set(err, MM_EINPUT, "", 0, "factor", "%g from %g to %g bytes: more than %d sizes", q->factor,
                          q->lo, q->hi, MM_COLL_SWEEP_MAX_ROWS);
    return 0;
}

static void note_end(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    *(mm_time *)ctx = mm_engine_now(eng);
}

int mm_coll_sweep(const mm_cluster *c, const mm_coll_sweep_req *q, mm_coll_row **rows, int *n, mm_err *err)
{
    *rows = NULL;
    *n = 0;
    int rc = mm_coll_sweep_check(c, q, err);
    if (rc)
        return rc;
    int op = (int)q->op, gpus = q->gpus;
    /* the communicator: the first comm_ranks GPUs, on the nodes they fill */
    int comm_nodes = q->comm_ranks ? (q->comm_ranks + c->gpus_per_node - 1) / c->gpus_per_node : 0;
    int cap = 0;
    for (double S = q->lo; S <= q->hi * (1 + 1e-12); S *= q->factor)
        cap++;
    int *g = malloc((size_t)gpus * sizeof *g);
    mm_coll_row *out = malloc((size_t)(cap ? cap : 1) * sizeof *out);
    mm_engine *eng = mm_engine_alloc();
    mm_network *net = g && out && eng ? mm_network_alloc(c, eng, q->model, err) : NULL;
    if (!net) {
        if (!err || err->code == MM_OK)
            mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        free(g);
        free(out);
        mm_engine_free(eng);
        return -(err ? err->code : MM_EINTERNAL);
    }
    /* The first `gpus` GPUs; send/recv goes from GPU 0 to the first GPU
     * of the last node (across nodes when there are several). */
    for (int i = 0; i < gpus; i++)
        g[i] = i;
    if (op == MM_COLL_SENDRECV)
        g[1] = c->nodes > 1 ? (c->nodes - 1) * c->gpus_per_node : 1;
    int row = 0;
    for (double S = q->lo; S <= q->hi * (1 + 1e-12) && row < cap; S *= q->factor) {
        double bytes = floor(S);
        mm_coll_req req = {.kind = (mm_coll_kind)op, .algo = q->algo, .gpus = g, .n = gpus, .bytes = bytes,
                           .count = 1, .comm_ranks = q->comm_ranks, .comm_nodes = comm_nodes};
        mm_time t0 = mm_engine_now(eng), t1 = -1;
        mm_coll_algo used = MM_ALGO_RING;
        if ((rc = mm_network_start(net, &req, note_end, &t1, 0, &used, err)))
            break;
        mm_engine_run(eng);
        double t = (double)(t1 - t0) * 1e-9;
        double alg = t > 0 ? bytes / t / 1e9 : INFINITY;
        /* all-to-all and send/recv have one algorithm: direct transfers */
        out[row++] = (mm_coll_row){.bytes = bytes, .time_s = t, .algbw_gbps = alg,
                                   .busbw_gbps = alg * mm_coll_bus_factor((mm_coll_kind)op, gpus),
                                   .algo = op == MM_COLL_ALLTOALL || op == MM_COLL_SENDRECV ? "direct"
                                                                                            : mm_coll_algo_names[used]};
    }
    mm_network_free(net);
    mm_engine_free(eng);
    free(g);
    if (rc) {
        free(out);
        return rc;
    }
    *rows = out;
    *n = row;
    return 0;
}
