/* build.c - emitting the ops, collectives and dependencies of one iteration. */
#include "parallel/build.h"

#include <stdlib.h>
#include <string.h>

typedef struct pass_ends {
    uint32_t first, last; /* first and last op of a pass on a rank */
} pass_ends;

/* Emits one pass (F or B) of micro-batch mb on rank (d, s): `chunks` compute
 * ops, each followed by the TP all-reduces of that chunk. */
static int emit_pass(const mm_build_spec *sp, mm_graph *g, int d, int s, int pass,
                     int mb, pass_ends *pe)
{
    const mm_stage_cost *c = &sp->stages[s];
    int rank = d + sp->dp * s;
    int chunks = c->chunks;
    int fwd = pass == MM_PASS_F;
    int msgs = fwd ? sp->tp_msgs_fwd : sp->tp_msgs_bwd;
    int tpgpus[1024];
    int tp = sp->tp < 1024 ? sp->tp : 1024;
    for (int t = 0; t < tp; t++)
        tpgpus[t] = mm_build_gpu(sp, t, d, s);
    int64_t prev = -1;
    for (int k = 0; k < chunks; k++) {
        mm_op op = {
            .rank = rank, .stream = MM_STREAM_COMPUTE, .cat = fwd ? MM_CAT_FWD : MM_CAT_BWD,
            .layer = (int16_t)k, .stage = s, .mb = mb, .coll = -1,
            .peer = -1, .dur_s = (fwd ? c->fwd_s : c->bwd_s) / chunks,
            .flops = (fwd ? c->fwd_flops : c->bwd_flops) / chunks,
        };
        op.hw_flops = op.flops + (fwd ? 0.0 : c->recompute_flops / chunks);
        int64_t id = mm_graph_add_op(g, &op);
        if (id < 0 || (prev >= 0 && mm_graph_dep(g, (uint32_t)prev, (uint32_t)id)))
            return -1;
        if (k == 0)
            pe->first = (uint32_t)id;
        prev = id;
        if (sp->tp > 1 && sp->tp_bytes > 0 && msgs > 0) {
            int64_t cl = mm_graph_add_coll(g, MM_COLL_ALLREDUCE, 1, msgs, sp->tp_bytes, tpgpus, tp);
            mm_op cop = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_TP,
                         .layer = (int16_t)k, .stage = s, .mb = mb, .coll = (int32_t)cl, .peer = -1};
            int64_t cid = cl < 0 ? -1 : mm_graph_add_op(g, &cop);
            if (cid < 0 || mm_graph_dep(g, (uint32_t)prev, (uint32_t)cid))
                return -1;
            prev = cid;
        }
    }
    pe->last = (uint32_t)prev;
    return 0;
}

/* A transfer of one micro-batch's activation (or gradient) between the same
 * DP replica of two adjacent stages.  With Megatron's scatter-gather
 * optimisation each of the tp GPU pairs carries 1/tp of it in parallel, so
 * one representative pair is timed with bytes/tp. */
static int emit_p2p(const mm_build_spec *sp, mm_graph *g, int d, int from_s, int to_s,
                    int mb, uint32_t after, uint32_t before)
{
    int pair[2] = {mm_build_gpu(sp, 0, d, from_s), mm_build_gpu(sp, 0, d, to_s)};
    int64_t cl = mm_graph_add_coll(g, MM_COLL_SENDRECV, 1, 1, sp->p2p_bytes / sp->tp, pair, 2);
    mm_op op = {.rank = d + sp->dp * from_s, .stream = MM_STREAM_NONE, .cat = MM_CAT_PP,
                .layer = -1, .stage = from_s, .mb = mb, .coll = (int32_t)cl,
                .peer = d + sp->dp * to_s};
    int64_t id = cl < 0 ? -1 : mm_graph_add_op(g, &op);
    if (id < 0 || mm_graph_dep(g, after, (uint32_t)id) || mm_graph_dep(g, (uint32_t)id, before))
        return -1;
    return 0;
}

static int emit_dp_tail(const mm_build_spec *sp, mm_graph *g, int s, const uint32_t *last_op)
{
    const mm_stage_cost *c = &sp->stages[s];
    int *dpgpus = malloc((size_t)sp->dp * sizeof *dpgpus);
    if (!dpgpus)
        return -1;
    for (int d = 0; d < sp->dp; d++)
        dpgpus[d] = mm_build_gpu(sp, 0, d, s);
    int rc = 0;
    int64_t rs = -1, ag = -1;
    if (sp->dp > 1 && c->grad_bytes > 0) {
        rs = mm_graph_add_coll(g, sp->zero ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE,
                               sp->dp, 1, c->grad_bytes, dpgpus, sp->dp);
        if (sp->zero)
            ag = mm_graph_add_coll(g, MM_COLL_ALLGATHER, sp->dp, 1, c->grad_bytes, dpgpus, sp->dp);
        if (rs < 0 || (sp->zero && ag < 0))
            rc = -1;
    }
    for (int d = 0; d < sp->dp && rc == 0; d++) {
        int rank = d + sp->dp * s;
        uint32_t prev = last_op[rank];
        if (rs >= 0) {
            mm_op op = {.rank = rank, .stream = MM_STREAM_DP, .cat = MM_CAT_DP, .layer = -1,
                        .stage = s, .mb = -1, .coll = (int32_t)rs, .peer = -1};
            int64_t id = mm_graph_add_op(g, &op);
            if (id < 0 || mm_graph_dep(g, prev, (uint32_t)id)) {
                rc = -1;
                break;
            }
            prev = (uint32_t)id;
        }
        mm_op opt = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .layer = -1,
                     .stage = s, .mb = -1, .coll = -1, .peer = -1, .dur_s = c->opt_s};
        int64_t oid = mm_graph_add_op(g, &opt);
        if (oid < 0 || mm_graph_dep(g, prev, (uint32_t)oid)) {
            rc = -1;
            break;
        }
        if (ag >= 0) {
            mm_op op = {.rank = rank, .stream = MM_STREAM_DP, .cat = MM_CAT_DP, .layer = -1,
                        .stage = s, .mb = -1, .coll = (int32_t)ag, .peer = -1};
            int64_t id = mm_graph_add_op(g, &op);
            if (id < 0 || mm_graph_dep(g, (uint32_t)oid, (uint32_t)id))
                rc = -1;
        }
    }
    free(dpgpus);
    return rc;
}

int mm_build_iteration(const mm_build_spec *sp, mm_graph *g)
{
    if (sp->tp < 1 || sp->pp < 1 || sp->dp < 1 || sp->m < 1 || sp->tp > 1024 || !sp->stages)
        return -1;
    for (int s = 0; s < sp->pp; s++)
        if (sp->stages[s].chunks < 1)
            return -1;
    int n_ranks = sp->pp * sp->dp;
    mm_graph_init(g, n_ranks);
    size_t npass = (size_t)n_ranks * (size_t)sp->m;
    pass_ends *fe = calloc(npass, sizeof *fe), *be = calloc(npass, sizeof *be);
    mm_sched_step *steps = malloc(2 * (size_t)sp->m * sizeof *steps);
    uint32_t *last = calloc((size_t)n_ranks, sizeof *last);
    int rc = (fe && be && steps && last) ? 0 : -1;

    /* 1. Every rank's compute stream in schedule order. */
    for (int s = 0; s < sp->pp && rc == 0; s++) {
        int n = mm_schedule_steps(sp->schedule, sp->pp, s, sp->m, steps);
        for (int d = 0; d < sp->dp && rc == 0; d++) {
            int rank = d + sp->dp * s;
            for (int i = 0; i < n && rc == 0; i++) {
                pass_ends *pe = (steps[i].pass == MM_PASS_F ? fe : be) +
                                (size_t)rank * sp->m + steps[i].mb;
                rc = emit_pass(sp, g, d, s, steps[i].pass, steps[i].mb, pe);
                last[rank] = pe->last;
            }
        }
    }
    /* 2. Pipeline transfers: forward activations down, gradients up.  The
     * last stage's backward of a micro-batch follows its own forward in
     * program order; other stages' backwards also need that (the F comes
     * earlier on the same in-order stream). */
    for (int s = 0; s + 1 < sp->pp && rc == 0; s++)
        for (int d = 0; d < sp->dp && rc == 0; d++)
            for (int j = 0; j < sp->m && rc == 0; j++) {
                size_t a = (size_t)(d + sp->dp * s) * sp->m + j;
                size_t b = (size_t)(d + sp->dp * (s + 1)) * sp->m + j;
                rc = emit_p2p(sp, g, d, s, s + 1, j, fe[a].last, fe[b].first);
                if (rc == 0)
                    rc = emit_p2p(sp, g, d, s + 1, s, j, be[b].last, be[a].first);
            }
    /* 3. Gradient synchronisation and the optimizer step. */
    for (int s = 0; s < sp->pp && rc == 0; s++)
        rc = emit_dp_tail(sp, g, s, last);
    if (rc == 0)
        rc = mm_graph_finish(g);
    free(fe);
    free(be);
    free(steps);
    free(last);
    if (rc)
        mm_graph_free(g);
    return rc;
}
