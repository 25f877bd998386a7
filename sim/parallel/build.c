/* build.c - emitting the ops, collectives and dependencies of one iteration. */
#include "parallel/build.h"

#include <stdlib.h>
#include <string.h>

typedef struct pass_ends {
    uint32_t first, last; /* first and last op of a pass on a rank */
} pass_ends;

typedef struct builder {
    const mm_build_spec *sp;
    mm_graph *g;
    int V;                /* virtual stages: pp * vpp */
    pass_ends *fe, *be;   /* by (virtual stage, dp replica, micro-batch) */
} builder;

static int rank_of(const mm_build_spec *sp, int d, int vs) { return d + sp->dp * (vs % sp->pp); }

static size_t pass_index(const builder *b, int vs, int d, int mb)
{
    return ((size_t)vs * b->sp->dp + d) * b->sp->m + mb;
}

/* Emits one pass of micro-batch mb of virtual stage vs on DP replica d:
 * `chunks` compute ops (one per layer), each followed by that layer's TP
 * all-reduces.  W passes have no TP traffic. */
static int emit_pass(builder *b, int d, int vs, int pass, int mb, pass_ends *pe)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    int s = vs % sp->pp, rank = rank_of(sp, d, vs), chunks = c->chunks;
    int zb = sp->schedule == MM_SCHEDULE_ZB_H1;
    double dur, flops, hw;
    int msgs, cat;
    if (pass == MM_PASS_F) {
        dur = c->fwd_s, flops = c->fwd_flops, hw = flops, msgs = sp->tp_msgs_fwd, cat = MM_CAT_FWD;
    } else if (pass == MM_PASS_B) {
        dur = zb ? c->bwd_s - c->wgrad_s : c->bwd_s;
        flops = zb ? c->bwd_flops - c->wgrad_flops : c->bwd_flops;
        hw = flops + c->recompute_flops, msgs = sp->tp_msgs_bwd, cat = MM_CAT_BWD;
    } else {
        dur = c->wgrad_s, flops = c->wgrad_flops, hw = flops, msgs = 0, cat = MM_CAT_WGRAD;
    }
    int tpgpus[1024];
    for (int t = 0; t < sp->tp; t++)
        tpgpus[t] = mm_build_gpu(sp, t, d, s);
    int64_t prev = -1;
    for (int k = 0; k < chunks; k++) {
        mm_op op = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = (uint8_t)cat,
                    .layer = (int16_t)k, .stage = vs, .mb = mb, .coll = -1, .peer = -1,
                    .dur_s = dur / chunks, .flops = flops / chunks, .hw_flops = hw / chunks};
        int64_t id = mm_graph_add_op(b->g, &op);
        if (id < 0 || (prev >= 0 && mm_graph_dep(b->g, (uint32_t)prev, (uint32_t)id)))
            return -1;
        if (k == 0)
            pe->first = (uint32_t)id;
        prev = id;
        if (sp->tp > 1 && sp->tp_bytes > 0 && msgs > 0) {
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_ALLREDUCE, 1, msgs, sp->tp_bytes, tpgpus, sp->tp);
            mm_op cop = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_TP,
                         .layer = (int16_t)k, .stage = vs, .mb = mb, .coll = (int32_t)cl, .peer = -1};
            int64_t cid = cl < 0 ? -1 : mm_graph_add_op(b->g, &cop);
            if (cid < 0 || mm_graph_dep(b->g, (uint32_t)prev, (uint32_t)cid))
                return -1;
            prev = cid;
        }
    }
    pe->last = (uint32_t)prev;
    return 0;
}

/* A transfer of one micro-batch's activation (or gradient) between the same
 * DP replica of two adjacent virtual stages.  With Megatron's scatter-gather
 * optimisation each of the tp GPU pairs carries 1/tp of it in parallel, so
 * one representative pair is timed with bytes/tp.  With measured times fed
 * in (p2p_s > 0) the transfer is a fixed delay. */
static int emit_p2p(builder *b, int d, int from_vs, int to_vs, int mb, uint32_t after, uint32_t before)
{
    const mm_build_spec *sp = b->sp;
    mm_op op = {.rank = rank_of(sp, d, from_vs), .stream = MM_STREAM_NONE, .cat = MM_CAT_PP,
                .layer = -1, .stage = from_vs, .mb = mb, .coll = -1, .peer = rank_of(sp, d, to_vs)};
    if (sp->p2p_s > 0) {
        op.dur_s = sp->p2p_s;
    } else {
        int pair[2] = {mm_build_gpu(sp, 0, d, from_vs % sp->pp), mm_build_gpu(sp, 0, d, to_vs % sp->pp)};
        int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, sp->p2p_bytes / sp->tp, pair, 2);
        if (cl < 0)
            return -1;
        op.coll = (int32_t)cl;
    }
    int64_t id = mm_graph_add_op(b->g, &op);
    if (id < 0 || mm_graph_dep(b->g, after, (uint32_t)id) || mm_graph_dep(b->g, (uint32_t)id, before))
        return -1;
    return 0;
}

/* Gradient synchronisation of physical stage s (all its chunks' gradients
 * in one bucket), the optimizer step, and with the distributed optimizer
 * the parameter all-gather. */
static int emit_dp_tail(builder *b, int s, const uint32_t *last_op)
{
    const mm_build_spec *sp = b->sp;
    double grad = 0, opt = 0;
    for (int c = 0; c < sp->vpp; c++) {
        grad += sp->stages[c * sp->pp + s].grad_bytes;
        opt += sp->stages[c * sp->pp + s].opt_s;
    }
    int *dpgpus = malloc((size_t)sp->dp * sizeof *dpgpus);
    if (!dpgpus)
        return -1;
    for (int d = 0; d < sp->dp; d++)
        dpgpus[d] = mm_build_gpu(sp, 0, d, s);
    int rc = 0;
    int64_t rs = -1, ag = -1;
    if (sp->dp > 1 && grad > 0) {
        rs = mm_graph_add_coll(b->g, sp->zero ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE, sp->dp, 1,
                               grad, dpgpus, sp->dp);
        if (sp->zero)
            ag = mm_graph_add_coll(b->g, MM_COLL_ALLGATHER, sp->dp, 1, grad, dpgpus, sp->dp);
        if (rs < 0 || (sp->zero && ag < 0))
            rc = -1;
    }
    for (int d = 0; d < sp->dp && rc == 0; d++) {
        int rank = d + sp->dp * s;
        uint32_t prev = last_op[rank];
        if (rs >= 0) {
            mm_op op = {.rank = rank, .stream = MM_STREAM_DP, .cat = MM_CAT_DP, .layer = -1,
                        .stage = s, .mb = -1, .coll = (int32_t)rs, .peer = -1};
            int64_t id = mm_graph_add_op(b->g, &op);
            if (id < 0 || mm_graph_dep(b->g, prev, (uint32_t)id)) {
                rc = -1;
                break;
            }
            prev = (uint32_t)id;
        }
        mm_op o = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .layer = -1,
                   .stage = s, .mb = -1, .coll = -1, .peer = -1, .dur_s = opt};
        int64_t oid = mm_graph_add_op(b->g, &o);
        if (oid < 0 || mm_graph_dep(b->g, prev, (uint32_t)oid)) {
            rc = -1;
            break;
        }
        if (ag >= 0) {
            mm_op op = {.rank = rank, .stream = MM_STREAM_DP, .cat = MM_CAT_DP, .layer = -1,
                        .stage = s, .mb = -1, .coll = (int32_t)ag, .peer = -1};
            int64_t id = mm_graph_add_op(b->g, &op);
            if (id < 0 || mm_graph_dep(b->g, (uint32_t)oid, (uint32_t)id))
                rc = -1;
        }
    }
    free(dpgpus);
    return rc;
}

static int check_spec(const mm_build_spec *sp)
{
    if (sp->tp < 1 || sp->pp < 1 || sp->dp < 1 || sp->m < 1 || sp->vpp < 1 || sp->tp > 1024 || !sp->stages)
        return -1;
    if (sp->vpp > 1 && sp->schedule != MM_SCHEDULE_INTERLEAVED)
        return -1;
    for (int v = 0; v < sp->pp * sp->vpp; v++)
        if (sp->stages[v].chunks < 1)
            return -1;
    return 0;
}

int mm_build_iteration(const mm_build_spec *sp, mm_graph *g)
{
    if (check_spec(sp))
        return -1;
    int n_ranks = sp->pp * sp->dp;
    builder b = {.sp = sp, .g = g, .V = sp->pp * sp->vpp};
    mm_graph_init(g, n_ranks);
    size_t npass = (size_t)b.V * sp->dp * sp->m;
    int nsteps = mm_schedule_len(sp->schedule, sp->m, sp->vpp);
    b.fe = calloc(npass, sizeof *b.fe);
    b.be = calloc(npass, sizeof *b.be);
    mm_sched_step *steps = malloc((size_t)nsteps * sizeof *steps);
    uint32_t *last = calloc((size_t)n_ranks, sizeof *last);
    int rc = (b.fe && b.be && steps && last) ? 0 : -1;

    /* 1. Every rank's compute stream in schedule order. */
    for (int s = 0; s < sp->pp && rc == 0; s++) {
        int n = mm_schedule_steps(sp->schedule, sp->pp, s, sp->m, sp->vpp, steps);
        if (n < 0)
            rc = -1;
        for (int d = 0; d < sp->dp && rc == 0; d++)
            for (int i = 0; i < n && rc == 0; i++) {
                int vs = steps[i].chunk * sp->pp + s;
                pass_ends tmp, *pe = steps[i].pass == MM_PASS_F   ? &b.fe[pass_index(&b, vs, d, steps[i].mb)]
                                     : steps[i].pass == MM_PASS_B ? &b.be[pass_index(&b, vs, d, steps[i].mb)]
                                                                  : &tmp;
                rc = emit_pass(&b, d, vs, steps[i].pass, steps[i].mb, pe);
                last[d + sp->dp * s] = pe->last;
            }
    }
    /* 2. Pipeline transfers between consecutive virtual stages: forward
     * activations down, input gradients up.  A W pass follows its B on the
     * same in-order stream, so it needs no edge. */
    for (int vs = 0; vs + 1 < b.V && rc == 0; vs++)
        for (int d = 0; d < sp->dp && rc == 0; d++)
            for (int j = 0; j < sp->m && rc == 0; j++) {
                size_t x = pass_index(&b, vs, d, j), y = pass_index(&b, vs + 1, d, j);
                rc = emit_p2p(&b, d, vs, vs + 1, j, b.fe[x].last, b.fe[y].first);
                if (rc == 0)
                    rc = emit_p2p(&b, d, vs + 1, vs, j, b.be[y].last, b.be[x].first);
            }
    /* 3. Gradient synchronisation and the optimizer step. */
    for (int s = 0; s < sp->pp && rc == 0; s++)
        rc = emit_dp_tail(&b, s, last);
    if (rc == 0)
        rc = mm_graph_finish(g);
    free(b.fe);
    free(b.be);
    free(steps);
    free(last);
    if (rc)
        mm_graph_free(g);
    return rc;
}
