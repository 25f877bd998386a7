/* build.c - emitting the ops, collectives and dependencies of one iteration.
 *
 * Collectives that span simulated ranks (DP buckets, ZeRO-3 gathers, EP
 * all-to-alls) are created by the first member that emits them and looked
 * up by the others: every rank of a group runs the same schedule, so they
 * reach their collectives in the same order and the lookup key (virtual
 * stage, micro-batch, pass, layer, group) is enough.
 *
 * This file: the spec's checks, GPU numbering and mm_build_iteration, which
 * lays the iteration out in order.  Not here: the LLM's passes, transfers
 * and DP tail (build_llm.c), the encoders (build_enc.c). */
#include "parallel/build_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mm_build_parse_order(const char *text, int order[MM_DIM_COUNT])
{
    static const char *const names[] = {"tp", "cp", "dp", "pp"};
    int seen[MM_DIM_COUNT] = {0}, n = 0, ep_pending = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, "-");
        if (len == 2 && !strncmp(p, "ep", 2)) {
            if (ep_pending)
                return -1;
            ep_pending = 1;
        } else {
            int k = -1;
            for (int i = 0; i < MM_DIM_COUNT; i++)
                if (len == 2 && !strncmp(p, names[i], 2))
                    k = i;
            if (k < 0 || seen[k] || n == MM_DIM_COUNT || (ep_pending && k != MM_DIM_DP))
                return -1;
            ep_pending = 0;
            seen[k] = 1;
            order[n++] = k;
        }
        p += len;
        if (*p == '-')
            p++;
    }
    return n == MM_DIM_COUNT && !ep_pending ? 0 : -1;
}

static bool own_gpus(const mm_enc_spec *e)
{
    return e->placement == MM_ENC_PIPELINE || e->placement == MM_ENC_DISJOINT;
}

static int enc_gpus(const mm_enc_spec *e) { return own_gpus(e) ? e->tp * e->pp * e->dp : 0; }

int mm_build_gpus(const mm_build_spec *sp)
{
    int n = sp->tp * (sp->cp > 0 ? sp->cp : 1) * sp->dp * sp->pp;
    for (int i = 0; i < sp->n_enc; i++)
        n += enc_gpus(&sp->enc[i]);
    return n;
}

static void strides(const mm_build_spec *sp, int cp, int out[MM_DIM_COUNT])
{
    static const int def[MM_DIM_COUNT] = {MM_DIM_TP, MM_DIM_CP, MM_DIM_DP, MM_DIM_PP};
    const int *ord = sp->order[0] || sp->order[1] || sp->order[2] || sp->order[3] ? sp->order : def;
    int size[MM_DIM_COUNT] = {sp->tp, cp, sp->dp, sp->pp}, st = 1;
    for (int i = 0; i < MM_DIM_COUNT; i++) {
        out[ord[i]] = st;
        st *= size[ord[i]];
    }
}

int mm_build_gpu(const mm_build_spec *sp, int t, int c, int d, int s)
{
    int st[MM_DIM_COUNT], off = 0;
    strides(sp, sp->cp > 0 ? sp->cp : 1, st);
    for (int i = 0; i < sp->n_enc; i++)
        off += enc_gpus(&sp->enc[i]);
    return off + t * st[MM_DIM_TP] + c * st[MM_DIM_CP] + d * st[MM_DIM_DP] + s * st[MM_DIM_PP];
}

static int cache_init(coll_cache *cc, size_t n)
{
    cc->n = n;
    cc->id = malloc((n ? n : 1) * sizeof *cc->id);
    if (!cc->id)
        return -1;
    for (size_t i = 0; i < n; i++)
        cc->id[i] = -1;
    return 0;
}

static int check_enc(const mm_build_spec *sp, const mm_enc_spec *e)
{
    int G = sp->tp * (sp->cp > 0 ? sp->cp : 1) * sp->dp * sp->pp;
    if (!e->mb || e->chunks < 1 || e->placement < MM_ENC_PIPELINE || e->placement > MM_ENC_HOMOGENEOUS)
        return -1;
    if (own_gpus(e) && (e->tp < 1 || e->pp < 1 || e->dp < 1 || e->pp > e->chunks || e->tp > 4096 || e->dp > 4096))
        return -1;
    if (e->placement == MM_ENC_COLOCATED && (e->tp < 1 || G % e->tp))
        return -1;
    return 0;
}

static int check_spec(const mm_build_spec *sp)
{
    int cp = sp->cp > 0 ? sp->cp : 1, ep = sp->ep > 0 ? sp->ep : 1;
    if (sp->n_enc < 0 || sp->n_enc > MM_MAX_ENCODERS)
        return -1;
    for (int i = 0; i < sp->n_enc; i++)
        if (check_enc(sp, &sp->enc[i]))
            return -1;
    if (sp->tp < 1 || sp->pp < 1 || sp->dp < 1 || sp->m < 1 || sp->vpp < 1 || !sp->stages)
        return -1;
    if (sp->tp > 4096 || cp > 4096 || ep > 4096 || sp->dp % ep || sp->zero < 0 || sp->zero > 3)
        return -1;
    if (sp->vpp > 1 && sp->schedule != MM_SCHEDULE_INTERLEAVED)
        return -1;
    for (int v = 0; v < sp->pp * sp->vpp; v++)
        if (sp->stages[v].chunks < 1 || sp->stages[v].moe_chunks > sp->stages[v].chunks)
            return -1;
    return 0;
}

int mm_build_iteration(const mm_build_spec *sp, mm_graph *g)
{
    if (check_spec(sp))
        return -1;
    int n_ranks = sp->pp * sp->dp;
    builder b = {.sp = sp, .g = g, .V = sp->pp * sp->vpp, .cp = sp->cp > 0 ? sp->cp : 1,
                 .ep = sp->ep > 0 ? sp->ep : 1};
    strides(sp, b.cp, b.stride);
    int gmax = sp->tp > sp->dp ? sp->tp : sp->dp;
    gmax = gmax > b.cp ? gmax : b.cp;
    for (int i = 0; i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        if (own_gpus(e)) {
            b.enc_gpu_off[i] = b.llm_off;
            b.llm_off += enc_gpus(e);
            b.enc_rank_off[i] = n_ranks;
            n_ranks += e->pp * e->dp;
            gmax = e->dp > gmax ? e->dp : gmax;
        }
        gmax = e->tp > gmax ? e->tp : gmax;
    }
    b.n_ranks = n_ranks;
    for (int v = 0; v < b.V; v++)
        if (sp->stages[v].chunks > b.max_chunks)
            b.max_chunks = sp->stages[v].chunks;
    mm_graph_init(g, n_ranks);
    for (int i = 0; i < sp->n_enc; i++)
        snprintf(g->module_names[g->n_modules++], sizeof g->module_names[0], "%s",
                 sp->enc[i].name[0] ? sp->enc[i].name : "encoder");
    size_t npass = (size_t)b.V * sp->dp * sp->m;
    int nsteps = mm_schedule_len(sp->schedule, sp->m, sp->vpp);
    b.fe = calloc(npass, sizeof *b.fe);
    b.be = calloc(npass, sizeof *b.be);
    b.last_compute = malloc((size_t)n_ranks * sizeof *b.last_compute);
    b.gbuf = malloc((size_t)(gmax + 2) * sizeof *b.gbuf);
    mm_sched_step *steps = malloc((size_t)nsteps * sizeof *steps);
    uint32_t *last = calloc((size_t)n_ranks, sizeof *last);
    int *bucket_of = malloc((size_t)sp->vpp * b.max_chunks * sizeof *bucket_of);
    b.last_dp = malloc((size_t)n_ranks * sizeof *b.last_dp);
    b.layer_ops = malloc((size_t)b.max_chunks * sizeof *b.layer_ops);
    size_t z3n = sp->zero >= 3 ? (size_t)b.V * sp->m * 3 * b.max_chunks * 2 : 0;
    size_t epn = b.ep > 1 ? (size_t)(sp->dp / b.ep) * b.V * sp->m * 2 * b.max_chunks : 0;
    int rc = (b.fe && b.be && b.last_compute && b.gbuf && steps && last && bucket_of && b.last_dp &&
              b.layer_ops && cache_init(&b.z3, z3n) == 0 && cache_init(&b.epc, epn) == 0 &&
              cache_init(&b.bucket, (size_t)sp->pp * b.max_chunks * sp->vpp * 2) == 0)
                 ? 0
                 : -1;
    for (int r = 0; r < n_ranks && rc == 0; r++)
        b.last_compute[r] = b.last_dp[r] = -1;

    /* 0. With overlap_param_gather the distributed optimizer's parameter
     * all-gathers open the iteration, bucket by bucket in forward order. */
    int64_t *param_gather = NULL; /* per (rank, vpp chunk, layer): gather op */
    if (rc == 0 && sp->overlap_param_gather && sp->zero >= 1 && sp->zero <= 2 && sp->dp > 1) {
        param_gather = malloc((size_t)n_ranks * sp->vpp * b.max_chunks * sizeof *param_gather);
        rc = param_gather ? 0 : -1;
        for (int s = 0; s < sp->pp && rc == 0; s++) {
            int nb = mm_bld_buckets(&b, s, bucket_of);
            for (int d = 0; d < sp->dp && rc == 0; d++) {
                int rank = d + sp->dp * s;
                int64_t *ops = calloc((size_t)nb, sizeof *ops);
                rc = ops ? 0 : -1;
                for (int q = nb - 1; q >= 0 && rc == 0; q--) { /* forward order: last bucket first */
                    int n = dp_group(&b, s);
                    double by = mm_bld_bucket_bytes_of(&b, s, bucket_of, q, 1);
                    int64_t cl = shared_coll(&b, &b.bucket, ((size_t)s * b.max_chunks * sp->vpp + q) * 2 + 1,
                                             MM_COLL_ALLGATHER, sp->dp, 1, by, n);
                    ops[q] = add_comm(&b, rank, MM_STREAM_DP, MM_CAT_DP, s, -1, -1, cl, -1);
                    if (ops[q] < 0)
                        rc = -1;
                }
                for (int v = 0; v < sp->vpp && rc == 0; v++)
                    for (int k = 0; k < sp->stages[v * sp->pp + s].chunks; k++)
                        param_gather[((size_t)rank * sp->vpp + v) * b.max_chunks + k] =
                            ops[bucket_of[v * b.max_chunks + k]];
                free(ops);
            }
        }
    }

    /* Which GPUs each simulated rank stands for (perturbations use it). */
    for (int r = 0; r < sp->pp * sp->dp && rc == 0; r++) {
        int d = r % sp->dp, s = r / sp->dp, k = 0;
        int *gl = malloc((size_t)(sp->tp * b.cp) * sizeof *gl);
        if (!gl) {
            rc = -1;
            break;
        }
        for (int c = 0; c < b.cp; c++)
            for (int t = 0; t < sp->tp; t++)
                gl[k++] = gpu(&b, t, c, d, s);
        rc = mm_graph_rank_gpus(g, r, gl, k);
        free(gl);
    }
    for (int i = 0; i < sp->n_enc && rc == 0; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        if (!own_gpus(e))
            continue;
        int *gl = malloc((size_t)e->tp * sizeof *gl);
        for (int se = 0; se < e->pp && rc == 0 && gl; se++)
            for (int rep = 0; rep < e->dp && rc == 0; rep++) {
                for (int t = 0; t < e->tp; t++)
                    gl[t] = enc_gpu(&b, i, t, rep, se);
                rc = mm_graph_rank_gpus(g, b.enc_rank_off[i] + rep + e->dp * se, gl, e->tp);
            }
        if (!gl)
            rc = -1;
        free(gl);
    }

    /* Post-balancing moves samples between DP ranks before anything runs. */
    if (rc == 0 && sp->pre_a2a_bytes > 0) {
        int64_t cl = mm_bld_all_llm_coll(&b, MM_COLL_ALLTOALL, sp->pre_a2a_bytes);
        for (int r = 0; r < sp->pp * sp->dp && rc == 0; r++) {
            mm_op op = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_DP, .layer = -1, .stage = -1,
                        .mb = -1, .coll = (int32_t)cl, .peer = -1};
            if (cl < 0 || add(&b, &op, b.last_compute[r]) < 0)
                rc = -1;
        }
    }

    /* Colocated encoders encode the whole iteration's input first. */
    for (int i = 0; i < sp->n_enc && rc == 0; i++)
        if (sp->enc[i].placement == MM_ENC_COLOCATED)
            rc = mm_bld_emit_colocated(&b, i, MM_PASS_F);

    /* 1. Every rank's compute stream in schedule order. */
    for (int s = 0; s < sp->pp && rc == 0; s++) {
        int n = mm_schedule_steps(sp->schedule, sp->pp, s, sp->m, sp->vpp, steps);
        mm_bld_buckets(&b, s, bucket_of);
        if (n < 0)
            rc = -1;
        for (int d = 0; d < sp->dp && rc == 0; d++) {
            int rank = d + sp->dp * s;
            for (int i = 0; i < n && rc == 0; i++) {
                int vs = steps[i].chunk * sp->pp + s, pass = steps[i].pass, mb = steps[i].mb;
                pass_ends tmp, *pe = pass == MM_PASS_F   ? &b.fe[pass_index(&b, vs, d, mb)]
                                     : pass == MM_PASS_B ? &b.be[pass_index(&b, vs, d, mb)]
                                                         : &tmp;
                int c = steps[i].chunk, nl = sp->stages[vs].chunks;
                rc = mm_bld_emit_pass(&b, d, vs, pass, mb, pe);
                last[rank] = pe->last;
                /* first forward of each layer waits for its parameters */
                if (rc == 0 && param_gather && pass == MM_PASS_F && mb == 0)
                    for (int k = 0; k < nl && rc == 0; k++)
                        rc = mm_graph_dep(g, (uint32_t)param_gather[((size_t)rank * sp->vpp + c) * b.max_chunks + k],
                                          b.layer_ops[k]);
                /* overlapped gradient reduction: a bucket leaves when the
                 * last micro-batch's backward has produced all of it */
                bool grads_done = sp->schedule == MM_SCHEDULE_ZB_H1 ? pass == MM_PASS_W : pass == MM_PASS_B;
                if (rc == 0 && sp->overlap_grad_reduce && sp->zero < 3 && sp->dp > 1 && grads_done &&
                    mb == sp->m - 1) {
                    for (int k = nl - 1; k >= 0 && rc == 0; k--) {
                        int q = bucket_of[c * b.max_chunks + k];
                        /* a bucket is complete at its lowest layer (backward runs downwards) */
                        bool closes = k == 0 ? (c == 0 || bucket_of[(c - 1) * b.max_chunks +
                                                                   sp->stages[(c - 1) * sp->pp + s].chunks - 1] != q)
                                             : bucket_of[c * b.max_chunks + k - 1] != q;
                        if (!closes)
                            continue;
                        int gn = dp_group(&b, s);
                        int dist = sp->zero >= 1;
                        double by = mm_bld_bucket_bytes_of(&b, s, bucket_of, q, 0);
                        int64_t cl = shared_coll(&b, &b.bucket, ((size_t)s * b.max_chunks * sp->vpp + q) * 2,
                                                 dist ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE, sp->dp, 1, by, gn);
                        if (add_comm(&b, rank, MM_STREAM_DP, MM_CAT_DP, s, -1, -1, cl, b.layer_ops[k]) < 0)
                            rc = -1;
                    }
                }
            }
        }
    }
    /* 1b. Encoders on their own GPUs, and colocated encoders' backward. */
    for (int i = 0; i < sp->n_enc && rc == 0; i++) {
        if (own_gpus(&sp->enc[i]))
            rc = mm_bld_emit_own_encoder(&b, i);
        else if (sp->enc[i].placement == MM_ENC_COLOCATED && !sp->enc[i].frozen)
            rc = mm_bld_emit_colocated(&b, i, MM_PASS_B);
    }
    /* 2. Pipeline transfers between consecutive virtual stages: forward
     * activations down, input gradients up.  A W pass follows its B on the
     * same in-order stream, so it needs no edge. */
    for (int vs = 0; vs + 1 < b.V && rc == 0; vs++)
        for (int d = 0; d < sp->dp && rc == 0; d++)
            for (int j = 0; j < sp->m && rc == 0; j++) {
                size_t x = pass_index(&b, vs, d, j), y = pass_index(&b, vs + 1, d, j);
                rc = mm_bld_emit_p2p(&b, d, vs, vs + 1, j, b.fe[x].last, b.fe[y].first);
                if (rc == 0)
                    rc = mm_bld_emit_p2p(&b, d, vs + 1, vs, j, b.be[y].last, b.be[x].first);
            }
    /* 3. Gradient synchronisation and the optimizer step. */
    for (int s = 0; s < sp->pp && rc == 0; s++)
        rc = mm_bld_emit_dp_tail(&b, s, last);
    for (int i = 0; i < sp->n_enc && rc == 0; i++)
        rc = mm_bld_emit_enc_tail(&b, i);
    if (rc == 0)
        rc = mm_graph_finish(g);
    free(b.fe);
    free(b.be);
    free(b.last_compute);
    free(b.gbuf);
    free(b.z3.id);
    free(b.epc.id);
    free(b.bucket.id);
    free(steps);
    free(last);
    free(bucket_of);
    free(b.last_dp);
    free(b.layer_ops);
    free(param_gather);
    if (rc)
        mm_graph_free(g);
    return rc;
}
