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
 * and DP tail (build_llm.c), the encoders (build_enc.c), failures and the
 * spec's counts that they share (build_base.c). */
#include "parallel/build_internal.h"

#include "model/memory.h"

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
    int n = sp->lay.tp * (sp->lay.cp > 0 ? sp->lay.cp : 1) * sp->lay.dp * sp->lay.pp;
    for (int i = 0; i < sp->n_enc; i++)
        n += enc_gpus(&sp->enc[i]);
    return n;
}

static void strides(const mm_build_spec *sp, int cp, int out[MM_DIM_COUNT])
{
    static const int def[MM_DIM_COUNT] = {MM_DIM_TP, MM_DIM_CP, MM_DIM_DP, MM_DIM_PP};
    const int *ord = sp->order[0] || sp->order[1] || sp->order[2] || sp->order[3] ? sp->order : def;
    int size[MM_DIM_COUNT] = {sp->lay.tp, cp, sp->lay.dp, sp->lay.pp}, st = 1;
    for (int i = 0; i < MM_DIM_COUNT; i++) {
        out[ord[i]] = st;
        st *= size[ord[i]];
    }
}

int mm_build_enc_homes(const mm_build_spec *sp, int i, int *home, int max)
{
    if (i < 0 || i >= sp->n_enc || sp->enc[i].tp < 1)
        return -1;
    int st[MM_DIM_COUNT], G = sp->lay.tp * (sp->lay.cp > 0 ? sp->lay.cp : 1) * sp->lay.dp * sp->lay.pp, n = G / sp->enc[i].tp;
    strides(sp, sp->lay.cp > 0 ? sp->lay.cp : 1, st);
    if (n > max)
        return -1;
    for (int k = 0; k < n; k++)
        home[k] = mm_bld_rank_of_gpu(sp, st, k * sp->enc[i].tp) % sp->lay.dp;
    return n;
}

int mm_build_gpu(const mm_build_spec *sp, int t, int c, int d, int s)
{
    int st[MM_DIM_COUNT], off = 0;
    strides(sp, sp->lay.cp > 0 ? sp->lay.cp : 1, st);
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

static const char *const sched_names[] = {[MM_SCHEDULE_GPIPE] = "gpipe", [MM_SCHEDULE_1F1B] = "1f1b",
                                          [MM_SCHEDULE_INTERLEAVED] = "interleaved", [MM_SCHEDULE_ZB_H1] = "zb-h1",
                                          [MM_SCHEDULE_ZB_2P] = "zb-2p", [MM_SCHEDULE_ZB_V] = "zb-v"};

static int check_enc(builder *b, int i)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int G = sp->lay.tp * (sp->lay.cp > 0 ? sp->lay.cp : 1) * sp->lay.dp * sp->lay.pp;
    if (!e->mb || e->chunks < 1 || e->placement < MM_ENC_PIPELINE || e->placement > MM_ENC_HOMOGENEOUS)
        return mm_bld_fail(b, "encoder %d ('%s'): needs per-micro-batch costs, at least one layer and a known "
                           "placement", i, e->name);
    if (own_gpus(e) && (e->tp < 1 || e->pp < 1 || e->dp < 1 || e->pp > e->chunks || e->tp > 4096 || e->dp > 4096))
        return mm_bld_fail(b, "encoder '%s' on its own GPUs: tp %d, pp %d, dp %d must be >= 1 (tp, dp <= 4096) "
                           "and pp at most its %d layers", e->name, e->tp, e->pp, e->dp, e->chunks);
    if (e->placement == MM_ENC_COLOCATED && (e->tp < 1 || G % e->tp))
        return mm_bld_fail(b, "colocated encoder '%s': tp %d must divide the LLM's %d GPUs", e->name, e->tp, G);
    int tpc = sp->lay.tp * (sp->lay.cp > 0 ? sp->lay.cp : 1);
    if (sp->enc_bubbles && e->placement == MM_ENC_COLOCATED && tpc % e->tp)
        return mm_bld_fail(b, "encoder '%s' in the LLM's bubbles: tp %d must divide the %d GPUs of an LLM rank "
                           "(tp x cp)", e->name, e->tp, tpc);
    if (sp->enc_bubbles && e->placement == MM_ENC_COLOCATED && e->pp != 1 &&
        (e->pp != sp->lay.pp || e->pp > e->chunks))
        return mm_bld_fail(b, "encoder '%s' in the LLM's bubbles: pp %d must be 1 or the LLM's %d (at most its %d "
                           "layers)", e->name, e->pp, sp->lay.pp, e->chunks);
    return 0;
}

static int check_spec(builder *b)
{
    const mm_build_spec *sp = b->sp;
    int cp = sp->lay.cp > 0 ? sp->lay.cp : 1, ep = sp->lay.ep > 0 ? sp->lay.ep : 1;
    if (sp->n_enc < 0 || sp->n_enc > MM_MAX_ENCODERS)
        return mm_bld_fail(b, "%d encoders (at most %d)", sp->n_enc, MM_MAX_ENCODERS);
    for (int i = 0; i < sp->n_enc; i++)
        if (check_enc(b, i))
            return -1;
    if (sp->lay.tp < 1 || sp->lay.pp < 1 || sp->lay.dp < 1 || sp->m < 1 || sp->lay.vpp < 1 || !sp->stages)
        return mm_bld_fail(b, "tp %d, pp %d, dp %d, vpp %d and micro-batches %d must be >= 1, with stage costs",
                           sp->lay.tp, sp->lay.pp, sp->lay.dp, sp->lay.vpp, sp->m);
    if (sp->lay.tp > 4096 || cp > 4096 || ep > 4096)
        return mm_bld_fail(b, "tp %d, cp %d and ep %d must be at most 4096", sp->lay.tp, cp, ep);
    int ep_dp, ep_tp;
    if (mm_mem_ep_fold(ep, sp->lay.tp, sp->lay.dp, &ep_dp, &ep_tp))
        return mm_bld_fail(b, "ep %d must fold into dp %d x tp %d (gcd(ep, dp) replicas x ep/gcd TP ranks)", ep,
                           sp->lay.dp, sp->lay.tp);
    if (sp->zero < 0 || sp->zero > 3)
        return mm_bld_fail(b, "zero %d must be 0-3", sp->zero);
    if (sp->schedule == MM_SCHEDULE_ZB_V ? sp->lay.vpp != 2
                                         : sp->lay.vpp > 1 && sp->schedule != MM_SCHEDULE_INTERLEAVED)
        return mm_bld_fail(b, "vpp %d needs the interleaved schedule (or zb-v at vpp 2)", sp->lay.vpp);
    bool own = false, ranks = false;
    for (int i = 0; i < sp->n_enc; i++)
        own |= own_gpus(&sp->enc[i]), ranks |= sp->enc[i].ranks != NULL;
    if (sp->one_replica && (own || ranks || ep > 1 || sp->lay.dp < 2 || sp->enc_a2a_bytes > 0 ||
                            sp->pre_a2a_bytes > 0 || sp->post_a2a_bytes > 0))
        return mm_bld_fail(b, "one replica of dp %d with encoders on their own GPUs or per-rank work, ep %d or "
                           "post-balancing: the replicas are not one replica's copies", sp->lay.dp, ep);
    for (int v = 0; v < sp->lay.pp * sp->lay.vpp; v++)
        if (sp->stages[v].chunks < 1 || sp->stages[v].moe_chunks > sp->stages[v].chunks)
            return mm_bld_fail(b, "virtual stage %d: %d layers (>= 1 needed), %d of them MoE", v,
                               sp->stages[v].chunks, sp->stages[v].moe_chunks);
    return 0;
}

/* The builder's scratch arrays and the iteration's working state. */
typedef struct work {
    mm_sched_step *steps;
    uint32_t *last;       /* per rank: its last compute op of the pipeline phase */
    int *bucket_of;       /* per (vpp chunk, layer) of the current stage: its DP bucket */
    int64_t *param_gather; /* per (rank, vpp chunk, layer): gather op; NULL without overlap_param_gather */
} work;

static void builder_free(builder *b, work *w)
{
    free(b->fe);
    free(b->be);
    free(b->last_compute);
    free(b->gbuf);
    free(b->z3.id);
    free(b->epc.id);
    free(b->bucket.id);
    free(b->enc_sync.id);
    free(w->steps);
    free(w->last);
    free(w->bucket_of);
    free(b->last_dp);
    free(b->last_fill);
    free(b->layer_ops);
    free(b->layer_ops2);
    free(w->param_gather);
}

/* GPU and rank offsets, module names and every array the build needs;
 * the graph counting (size NULL) or reserved to *size. */
static int builder_init(builder *b, work *w, const mm_graph_size *size)
{
    const mm_build_spec *sp = b->sp;
    int n_ranks = sp->lay.pp * sp->lay.dp;
    strides(sp, b->cp, b->stride);
    mm_mem_ep_fold(b->ep, sp->lay.tp, sp->lay.dp, &b->ep_dp, &b->ep_tp);
    int gmax = sp->lay.tp > sp->lay.dp ? sp->lay.tp : sp->lay.dp;
    gmax = gmax > b->cp ? gmax : b->cp;
    gmax = gmax > b->ep ? gmax : b->ep;
    for (int i = 0; i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        if (own_gpus(e)) {
            b->enc_gpu_off[i] = b->llm_off;
            b->llm_off += enc_gpus(e);
            b->enc_rank_off[i] = n_ranks;
            n_ranks += e->pp * e->dp;
            gmax = e->dp > gmax ? e->dp : gmax;
        }
        gmax = e->tp > gmax ? e->tp : gmax;
    }
    b->n_ranks = n_ranks;
    for (int v = 0; v < b->V; v++)
        if (sp->stages[v].chunks > b->max_chunks)
            b->max_chunks = sp->stages[v].chunks;
    if (size ? mm_graph_init(b->g, n_ranks) || mm_graph_reserve(b->g, size) : mm_graph_init_counting(b->g, n_ranks))
        return mm_bld_fail(b, "out of memory for the graph of %u ops", size ? size->ops : 0);
    if (b->D < sp->lay.dp && mm_graph_set_replicas(b->g, sp->lay.dp, b->stride[MM_DIM_DP]))
        return mm_bld_fail(b, "one replica of %d ranks, %d replicas", n_ranks, sp->lay.dp);
    for (int i = 0; i < sp->n_enc; i++)
        snprintf(b->g->module_names[b->g->n_modules++], sizeof b->g->module_names[0], "%s",
                 sp->enc[i].name[0] ? sp->enc[i].name : "encoder");
    size_t npass = (size_t)b->V * sp->lay.dp * sp->m;
    int nsteps = mm_schedule_len(sp->schedule, sp->m, sp->lay.vpp);
    b->fe = calloc(npass, sizeof *b->fe);
    b->be = calloc(npass, sizeof *b->be);
    b->last_compute = malloc((size_t)n_ranks * sizeof *b->last_compute);
    b->gbuf = malloc((size_t)(gmax + 2) * sizeof *b->gbuf);
    w->steps = malloc((size_t)nsteps * sizeof *w->steps);
    w->last = calloc((size_t)n_ranks, sizeof *w->last);
    w->bucket_of = malloc((size_t)sp->lay.vpp * b->max_chunks * sizeof *w->bucket_of);
    b->last_dp = malloc((size_t)n_ranks * sizeof *b->last_dp);
    b->last_fill = malloc((size_t)n_ranks * sizeof *b->last_fill);
    b->layer_ops = malloc((size_t)b->max_chunks * sizeof *b->layer_ops);
    b->layer_ops2 = malloc((size_t)b->max_chunks * sizeof *b->layer_ops2);
    size_t z3n = sp->zero >= 3 ? (size_t)b->V * sp->m * 3 * b->max_chunks * 2 : 0;
    size_t epn = b->ep > 1 ? (size_t)(sp->lay.dp / b->ep_dp) * b->V * sp->m * 2 * b->max_chunks : 0;
    if (!(b->fe && b->be && b->last_compute && b->gbuf && w->steps && w->last && w->bucket_of && b->last_dp &&
          b->last_fill && b->layer_ops && b->layer_ops2 && cache_init(&b->z3, z3n) == 0 && cache_init(&b->epc, epn) == 0 &&
          cache_init(&b->bucket, (size_t)(sp->zero < 3 ? mm_build_grad_syncs(sp) : 1) * sp->lay.pp * b->max_chunks *
                                     sp->lay.vpp * 2) == 0 &&
          cache_init(&b->enc_sync, mm_bld_enc_sync_slots(sp)) == 0))
        return mm_bld_fail(b, "out of memory for %d ranks, %zu passes", n_ranks, npass);
    for (int r = 0; r < n_ranks; r++)
        b->last_compute[r] = b->last_dp[r] = b->last_fill[r] = -1;
    return 0;
}

/* 0. With overlap_param_gather the distributed optimizer's parameter
 * all-gathers open the iteration, bucket by bucket in forward order. */
static int emit_param_gathers(builder *b, work *w)
{
    const mm_build_spec *sp = b->sp;
    if (!(sp->overlap_param_gather && sp->zero >= 1 && sp->zero <= 2 && sp->lay.dp > 1))
        return 0;
    w->param_gather = malloc((size_t)b->n_ranks * sp->lay.vpp * b->max_chunks * sizeof *w->param_gather);
    int rc = w->param_gather ? 0 : mm_bld_fail(b, "out of memory for the parameter gathers");
    for (int s = 0; s < sp->lay.pp && rc == 0; s++) {
        int nb = mm_bld_buckets(b, s, w->bucket_of);
        for (int d = 0; d < b->D && rc == 0; d++) {
            int rank = d + sp->lay.dp * s;
            int64_t *ops = calloc((size_t)nb, sizeof *ops);
            rc = ops ? 0 : mm_bld_fail(b, "out of memory for stage %d's parameter gathers", s);
            for (int q = nb - 1; q >= 0 && rc == 0; q--) { /* forward order: last bucket first */
                int n = dp_group(b, s);
                double by = mm_bld_bucket_bytes_of(b, s, w->bucket_of, q, 1);
                int64_t cl = shared_coll(b, &b->bucket, ((size_t)s * b->max_chunks * sp->lay.vpp + q) * 2 + 1,
                                         MM_COLL_ALLGATHER, sp->lay.dp, 1, by, n);
                ops[q] = add_comm(b, rank, MM_STREAM_DP, MM_CAT_DP, s, -1, -1, cl, -1);
                if (ops[q] < 0)
                    rc = -1;
            }
            for (int v = 0; v < sp->lay.vpp && rc == 0; v++)
                for (int k = 0; k < sp->stages[mm_schedule_vstage(sp->schedule, sp->lay.pp, s, v)].chunks; k++)
                    w->param_gather[((size_t)rank * sp->lay.vpp + v) * b->max_chunks + k] =
                        ops[w->bucket_of[v * b->max_chunks + k]];
            free(ops);
        }
        rc = rc ? rc : mark(b);
    }
    return rc;
}

/* Which GPUs each simulated rank stands for (perturbations use it). */
static int map_rank_gpus(builder *b)
{
    const mm_build_spec *sp = b->sp;
    int rc = 0;
    for (int r = 0; r < sp->lay.pp * sp->lay.dp && rc == 0; r++) {
        int d = r % sp->lay.dp, s = r / sp->lay.dp, k = 0;
        if (skip_rank(b, r))
            continue;
        int *gl = malloc((size_t)(sp->lay.tp * b->cp) * sizeof *gl);
        if (!gl)
            return mm_bld_fail(b, "out of memory for rank %d's GPU list", r);
        for (int c = 0; c < b->cp; c++)
            for (int t = 0; t < sp->lay.tp; t++)
                gl[k++] = gpu(b, t, c, d, s);
        rc = mm_graph_rank_gpus(b->g, r, gl, k);
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
                    gl[t] = enc_gpu(b, i, t, rep, se);
                rc = mm_graph_rank_gpus(b->g, b->enc_rank_off[i] + rep + e->dp * se, gl, e->tp);
            }
        if (!gl)
            rc = -1;
        free(gl);
    }
    return rc ? mm_bld_fail(b, "out of memory for the ranks' GPU lists") : 0;
}

/* Gradient reduction after rank's pass of chunk c on stage s, of the last
 * micro-batch (overlap_grad_reduce) or of every one (grad_every_mb; `slot`
 * its micro-batch, else -1): a bucket leaves when that backward has
 * produced all of it, on the DP stream with the overlap, else on the
 * compute stream, which waits for it (DeepSpeed's overlap_comm false:
 * reduce_ipg_grads on the current stream, stage_1_and_2.py). */
static int emit_grad_buckets(builder *b, work *w, int s, int rank, int c, int slot)
{
    const mm_build_spec *sp = b->sp;
    int nl = sp->stages[mm_schedule_vstage(sp->schedule, sp->lay.pp, s, c)].chunks;
    for (int k = nl - 1; k >= 0; k--) {
        int q = w->bucket_of[c * b->max_chunks + k];
        /* a bucket is complete at its lowest layer (backward runs downwards) */
        bool closes = k == 0 ? (c == 0 || w->bucket_of[(c - 1) * b->max_chunks +
                                                       sp->stages[mm_schedule_vstage(sp->schedule, sp->lay.pp, s, c - 1)].chunks - 1] != q)
                             : w->bucket_of[c * b->max_chunks + k - 1] != q;
        if (!closes)
            continue;
        int gn = dp_group(b, s);
        int dist = sp->zero >= 1;
        double by = mm_bld_bucket_bytes_of(b, s, w->bucket_of, q, 0);
        size_t key = (((size_t)(slot > 0 ? slot : 0) * sp->lay.pp + s) * b->max_chunks * sp->lay.vpp + q) * 2;
        int64_t cl =
            shared_coll(b, &b->bucket, key, dist ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE, sp->lay.dp, 1, by, gn);
        int stream = sp->overlap_grad_reduce ? MM_STREAM_DP : MM_STREAM_COMPUTE;
        if (add_comm(b, rank, stream, MM_CAT_DP, s, slot, -1, cl, b->layer_ops[k]) < 0)
            return -1;
    }
    if (!sp->overlap_grad_reduce) /* the DP tail follows the blocking reduce */
        w->last[rank] = (uint32_t)b->last_compute[rank];
    return 0;
}

/* 1. Stage s's compute streams in schedule order, on every DP rank. */
static int emit_stage(builder *b, work *w, int s)
{
    const mm_build_spec *sp = b->sp;
    /* co-execution: the schedule runs pairs of micro-batches as its units
     * (1F1B over pairs); an odd last micro-batch is a unit alone */
    mm_build_spec units = *sp;
    units.m = sp->coexec ? (sp->m + 1) / 2 : sp->m;
    int n = mm_build_schedule_steps(&units, s, w->steps);
    mm_bld_buckets(b, s, w->bucket_of);
    if (n < 0)
        return mm_bld_fail(b, "the %s schedule does not take stage %d of pp %d with %d micro-batches and vpp %d",
                           sched_names[sp->schedule], s, sp->lay.pp, sp->m, sp->lay.vpp);
    int rc = 0;
    for (int d = 0; d < b->D && rc == 0; d++) {
        int rank = d + sp->lay.dp * s;
        for (int i = 0; i < n && rc == 0; i++) {
            int vs = mm_schedule_vstage(sp->schedule, sp->lay.pp, s, w->steps[i].chunk), pass = w->steps[i].pass,
                mb = w->steps[i].mb;
            bool pair = sp->coexec && 2 * mb + 1 < sp->m;
            mb = sp->coexec ? 2 * mb : mb;
            pass_ends tmp, *pe = pass == MM_PASS_F   ? &b->fe[pass_index(b, vs, d, mb)]
                                 : pass == MM_PASS_B ? &b->be[pass_index(b, vs, d, mb)]
                                                     : &tmp;
            int c = w->steps[i].chunk, nl = sp->stages[vs].chunks;
            if (pair) {
                pass_ends *pe1 = pass == MM_PASS_F ? &b->fe[pass_index(b, vs, d, mb + 1)]
                                                   : &b->be[pass_index(b, vs, d, mb + 1)];
                rc = mm_bld_emit_pair(b, d, vs, pass, mb, pe, pe1);
                w->last[rank] = pe1->last;
            } else {
                rc = mm_bld_emit_pass(b, d, vs, pass, mb, pe);
                w->last[rank] = pe->last;
            }
            /* first forward of each layer waits for its parameters */
            if (rc == 0 && w->param_gather && pass == MM_PASS_F && mb == 0)
                for (int k = 0; k < nl && rc == 0; k++)
                    rc = mm_graph_dep(b->g,
                                      (uint32_t)w->param_gather[((size_t)rank * sp->lay.vpp + c) * b->max_chunks + k],
                                      b->layer_ops[k])
                             ? mm_bld_fail(b, "out of memory in stage %d's parameter-gather edges", s)
                             : 0;
            bool grads_done = mm_schedule_splits_w(sp->schedule) ? pass == MM_PASS_W : pass == MM_PASS_B;
            bool every = sp->zero < 3 && mm_build_grad_syncs(sp) > 1;
            /* a pair's buckets follow its second strand's layers */
            uint32_t *own = b->layer_ops;
            for (int j = 0; j <= (int)pair && rc == 0; j++) {
                b->layer_ops = j ? b->layer_ops2 : own;
                if ((sp->overlap_grad_reduce || every) && sp->zero < 3 && sp->lay.dp > 1 && grads_done &&
                    (every || mb + j == sp->m - 1))
                    rc = emit_grad_buckets(b, w, s, rank, c, every ? mb + j : -1);
            }
            b->layer_ops = own;
            /* a homogeneous encoder's, after its backward (the last of
             * the pass) and behind the LLM's buckets, as FSDP2 issues them
             * in post-backward order */
            int hs = rc == 0 && vs == 0 && pass == MM_PASS_B ? mm_bld_emit_homog_sync(b, d, mb) : 0;
            if (hs > 0 && !sp->overlap_grad_reduce) /* the DP tail follows the blocking reduce */
                w->last[rank] = (uint32_t)b->last_compute[rank];
            rc = hs < 0 ? -1 : rc;
        }
    }
    return rc ? rc : mark(b);
}

/* 2. Pipeline transfers between consecutive virtual stages: forward
 * activations down, input gradients up.  A W pass follows its B on the
 * same in-order stream, so it needs no edge. */
static int emit_transfers(builder *b)
{
    const mm_build_spec *sp = b->sp;
    int rc = 0;
    for (int vs = 0; vs + 1 < b->V && rc == 0; vs++) {
        for (int d = 0; d < b->D && rc == 0; d++)
            for (int j = 0; j < sp->m && rc == 0; j++) {
                size_t x = pass_index(b, vs, d, j), y = pass_index(b, vs + 1, d, j);
                rc = mm_bld_emit_p2p(b, d, vs, vs + 1, j, b->fe[x].last, b->fe[y].first);
                if (rc == 0)
                    rc = mm_bld_emit_p2p(b, d, vs + 1, vs, j, b->be[y].last, b->be[x].first);
            }
        rc = rc ? rc : mark(b);
    }
    return rc;
}

/* One build into g: counting (size NULL) or into arrays reserved to *size. */
static int build(const mm_build_spec *sp, mm_graph *g, const mm_graph_size *size, mm_err *err)
{
    builder b = {.sp = sp, .g = g, .V = sp->lay.pp * sp->lay.vpp, .cp = sp->lay.cp > 0 ? sp->lay.cp : 1,
                 .ep = sp->lay.ep > 0 ? sp->lay.ep : 1, .err = err, .D = sp->one_replica ? 1 : sp->lay.dp};
    work w = {0};
    if (check_spec(&b))
        return -1;
    int rc = builder_init(&b, &w, size);
    if (rc == 0)
        rc = emit_param_gathers(&b, &w);
    if (rc == 0)
        rc = map_rank_gpus(&b);
    /* Post-balancing moves samples between ranks before anything runs. */
    if (rc == 0 && (rc = mm_bld_emit_rebalance(&b, 0)))
        mm_bld_fail(&b, "the post-balance all-to-alls could not be created");
    /* Colocated encoders encode the whole iteration's input first. */
    for (int i = 0; i < sp->n_enc && rc == 0; i++)
        if (sp->enc[i].placement == MM_ENC_COLOCATED && !sp->enc_bubbles &&
            (rc = mm_bld_emit_colocated(&b, i, MM_PASS_F)))
            mm_bld_fail(&b, "encoder '%s' colocated, forward: out of memory", sp->enc[i].name);
    for (int s = 0; s < sp->lay.pp && rc == 0; s++)
        if ((rc = emit_stage(&b, &w, s)))
            mm_bld_fail(&b, "stage %d's passes: out of memory", s);
    /* 1b. Encoders on their own GPUs, and colocated encoders' backward. */
    for (int i = 0; i < sp->n_enc && rc == 0; i++) {
        if (own_gpus(&sp->enc[i]))
            rc = mm_bld_emit_own_encoder(&b, i);
        else if (sp->enc[i].placement == MM_ENC_COLOCATED && sp->enc_bubbles)
            rc = mm_bld_emit_bubbles(&b, i);
        else if (sp->enc[i].placement == MM_ENC_COLOCATED && !sp->enc[i].frozen)
            rc = mm_bld_emit_colocated(&b, i, MM_PASS_B);
        if (rc)
            mm_bld_fail(&b, "encoder '%s' (%s): out of memory", sp->enc[i].name,
                        own_gpus(&sp->enc[i]) ? "on its own GPUs"
                        : sp->enc_bubbles     ? "in the LLM's bubbles"
                                              : "colocated, backward");
    }
    if (rc == 0 && (rc = emit_transfers(&b)))
        mm_bld_fail(&b, "pipeline transfers: out of memory");
    /* 2b. Post-balancing's gradients go back before the optimizer step. */
    if (rc == 0 && (rc = mm_bld_emit_rebalance(&b, 1)))
        mm_bld_fail(&b, "the post-balance gradient all-to-all could not be created");
    /* 3. Gradient synchronisation and the optimizer step. */
    for (int s = 0; s < sp->lay.pp && rc == 0; s++)
        if ((rc = mm_bld_emit_dp_tail(&b, s, w.last)))
            mm_bld_fail(&b, "stage %d's gradient synchronisation and optimizer step: out of memory", s);
    for (int i = 0; i < sp->n_enc && rc == 0; i++)
        if ((rc = mm_bld_emit_enc_tail(&b, i)))
            mm_bld_fail(&b, "encoder '%s''s gradient synchronisation and optimizer step: out of memory",
                        sp->enc[i].name);
    if (rc == 0 && (rc = mm_graph_finish(g)))
        mm_bld_fail(&b, "out of memory in the graph's successor lists");
    builder_free(&b, &w);
    if (rc)
        mm_graph_free(g);
    return rc ? -1 : 0;
}

/* The build runs twice: first into a counting graph, which stores nothing,
 * then into arrays allocated once at the counted sizes (no growth, no
 * copies, no slack).  The counting pass is the builder's control flow
 * without the stores: a few per cent of an iteration. */
int mm_build_iteration(const mm_build_spec *sp, mm_graph *g, mm_err *err)
{
    mm_graph cnt;
    if (build(sp, &cnt, NULL, err))
        return -1;
    mm_graph_size size = mm_graph_size_of(&cnt);
    mm_graph_free(&cnt);
    return build(sp, g, &size, err);
}
