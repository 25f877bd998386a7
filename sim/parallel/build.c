/* build.c - emitting the ops, collectives and dependencies of one iteration.
 *
 * Collectives that span simulated ranks (DP buckets, ZeRO-3 gathers, EP
 * all-to-alls) are created by the first member that emits them and looked
 * up by the others: every rank of a group runs the same schedule, so they
 * reach their collectives in the same order and the lookup key (virtual
 * stage, micro-batch, pass, layer, group) is enough. */
#include "parallel/build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pass_ends {
    uint32_t first, last; /* first and last op of a pass on a rank */
} pass_ends;

/* A collective shared by several ranks, keyed by position. */
typedef struct coll_cache {
    int64_t *id; /* -1: not created yet */
    size_t n;
} coll_cache;

typedef struct builder {
    const mm_build_spec *sp;
    mm_graph *g;
    int V;                /* virtual stages: pp * vpp */
    int cp, ep;
    int stride[MM_DIM_COUNT];
    pass_ends *fe, *be;   /* by (virtual stage, dp replica, micro-batch) */
    int64_t *last_compute; /* per rank: last op on its compute stream */
    int64_t *last_dp;     /* per rank: last op on its DP stream */
    uint32_t *layer_ops;  /* compute op of each layer of the last pass */
    coll_cache z3;        /* ZeRO-3: (vs, mb, pass, layer) -> gather / scatter */
    coll_cache epc;       /* EP: (group, vs, mb, pass, layer, k) */
    coll_cache bucket;    /* DP buckets: (stage, bucket) for grads and params */
    int max_chunks;
    int *gbuf;            /* scratch GPU list */
    int llm_off;          /* first GPU of the LLM */
    int enc_gpu_off[MM_MAX_ENCODERS];  /* first GPU of an encoder on its own GPUs */
    int enc_rank_off[MM_MAX_ENCODERS]; /* first simulated rank of such an encoder */
    int n_ranks;
} builder;

static int rank_of(const mm_build_spec *sp, int d, int vs) { return d + sp->dp * (vs % sp->pp); }

static size_t pass_index(const builder *b, int vs, int d, int mb)
{
    return ((size_t)vs * b->sp->dp + d) * b->sp->m + mb;
}

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

static int gpu(const builder *b, int t, int c, int d, int s)
{
    return b->llm_off + t * b->stride[MM_DIM_TP] + c * b->stride[MM_DIM_CP] + d * b->stride[MM_DIM_DP] +
           s * b->stride[MM_DIM_PP];
}

/* Encoder GPUs: tp fastest, then dp, then pp, like the LLM's default. */
static int enc_gpu(const builder *b, int i, int t, int e, int s)
{
    const mm_enc_spec *en = &b->sp->enc[i];
    return b->enc_gpu_off[i] + t + en->tp * (e + en->dp * s);
}

/* Looks a shared collective up, creating it (kind, members, count, bytes
 * over the GPUs in b->gbuf[0..n)) on first use. */
static int64_t shared_coll(builder *b, coll_cache *cc, size_t key, int kind, int members, int count,
                           double bytes, int n)
{
    if (key >= cc->n)
        return -1;
    if (cc->id[key] < 0)
        cc->id[key] = mm_graph_add_coll(b->g, kind, members, count, bytes, b->gbuf, n);
    return cc->id[key];
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

/* Appends an op that waits for `after` (if >= 0); returns its id or -1. */
static int64_t add(builder *b, const mm_op *op, int64_t after)
{
    int64_t id = mm_graph_add_op(b->g, op);
    if (id < 0 || (after >= 0 && mm_graph_dep(b->g, (uint32_t)after, (uint32_t)id)))
        return -1;
    if (op->stream == MM_STREAM_COMPUTE)
        b->last_compute[op->rank] = id;
    else if (op->stream == MM_STREAM_DP)
        b->last_dp[op->rank] = id;
    return id;
}

/* A communication op of rank `rank` on `stream` in collective `cl`. */
static int64_t add_comm(builder *b, int rank, int stream, int cat, int vs, int mb, int layer, int64_t cl,
                        int64_t after)
{
    if (cl < 0)
        return -1;
    mm_op op = {.rank = rank, .stream = (uint8_t)stream, .cat = (uint8_t)cat, .layer = (int16_t)layer,
                .stage = vs, .mb = mb, .coll = (int32_t)cl, .peer = -1};
    return add(b, &op, after);
}

/* TP group of DP replica d, stage s (all CP ranks' TP peers are collapsed
 * with it; the TP collective runs over the tp GPUs of CP rank 0). */
static int tp_group(builder *b, int d, int s)
{
    for (int t = 0; t < b->sp->tp; t++)
        b->gbuf[t] = gpu(b, t, 0, d, s);
    return b->sp->tp;
}

static int dp_group(builder *b, int s)
{
    for (int d = 0; d < b->sp->dp; d++)
        b->gbuf[d] = gpu(b, 0, 0, d, s);
    return b->sp->dp;
}

/* ZeRO-3 all-gather of one layer's parameters before a pass, prefetched one
 * layer ahead: it may start once the compute before the previous layer is
 * done (the DP stream keeps the gathers in order). */
static int64_t zero3_gather(builder *b, int d, int vs, int mb, int pass, int layer, int64_t prev)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    double bytes = (c->param_bytes > 0 ? c->param_bytes : c->grad_bytes) / c->chunks;
    size_t key = (((size_t)vs * sp->m + mb) * 3 + pass) * b->max_chunks + layer;
    int n = dp_group(b, vs % sp->pp);
    int64_t cl = shared_coll(b, &b->z3, 2 * key, MM_COLL_ALLGATHER, sp->dp, 1, bytes, n);
    return add_comm(b, rank_of(sp, d, vs), MM_STREAM_DP, MM_CAT_DP, vs, mb, layer, cl, prev);
}

/* Emits one pass of micro-batch mb of virtual stage vs on DP replica d:
 * one compute op per layer with the layer's TP, CP, EP and ZeRO-3
 * communication.  W passes have none but ZeRO-3's gradient scatter. */
/* Encoder layers of micro-batch mb of DP replica d run on `rank`: `chunks`
 * compute ops for the pass (`share` of the whole encoder's work), each
 * followed by its TP all-reduces over the n GPUs in b->gbuf, starting
 * after `prev` (-1: nothing).  Returns the last op (prev when chunks is
 * 0), or -2 on error. */
static int64_t emit_enc_chunks(builder *b, int i, int rank, int stage, int d, int mb, int pass, int chunks,
                               double share, int64_t prev, int n, uint32_t *first)
{
    const mm_enc_spec *e = &b->sp->enc[i];
    const mm_enc_mb_cost *c = &e->mb[(size_t)d * b->sp->m + mb];
    bool fwd = pass == MM_PASS_F;
    double dur = (fwd ? c->fwd_s : c->bwd_s) * share, fl = (fwd ? c->fwd_flops : c->bwd_flops) * share;
    double hw = fl + (fwd ? 0 : c->recompute_flops * share);
    int msgs = fwd ? e->tp_msgs_fwd : e->tp_msgs_bwd;
    int *tpg = malloc((size_t)(n > 0 ? n : 1) * sizeof *tpg);
    if (!tpg)
        return -2;
    memcpy(tpg, b->gbuf, (size_t)n * sizeof *tpg);
    int64_t tail = prev;
    for (int k = 0; k < chunks && tail >= -1; k++) {
        int layer = fwd ? k : chunks - 1 - k;
        mm_op op = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = fwd ? MM_CAT_FWD : MM_CAT_BWD,
                    .module = (uint8_t)(i + 1), .layer = (int16_t)layer, .stage = stage, .mb = mb,
                    .coll = -1, .peer = -1, .dur_s = dur / chunks, .flops = fl / chunks, .hw_flops = hw / chunks};
        int64_t id = add(b, &op, tail);
        if (id < 0) {
            tail = -2;
            break;
        }
        if (first && *first == UINT32_MAX)
            *first = (uint32_t)id;
        tail = id;
        if (n > 1 && c->tp_bytes > 0 && msgs > 0) {
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_ALLREDUCE, 1, msgs, c->tp_bytes, tpg, n);
            mm_op cop = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_TP, .module = (uint8_t)(i + 1),
                         .layer = (int16_t)layer, .stage = stage, .mb = mb, .coll = (int32_t)cl, .peer = -1};
            tail = cl < 0 ? -2 : add(b, &cop, tail);
            if (tail < 0)
                tail = -2;
        }
    }
    free(tpg);
    return tail;
}

/* Homogeneous placement: stage 0 runs the encoders of its micro-batch
 * before the LLM layers (forward) or after them (backward). */
static int64_t emit_homogeneous(builder *b, int d, int vs, int pass, int mb, int64_t prev, uint32_t *first)
{
    if (vs != 0 || pass == MM_PASS_W)
        return prev;
    for (int i = 0; i < b->sp->n_enc && prev >= -1; i++) {
        const mm_enc_spec *e = &b->sp->enc[i];
        if (e->placement != MM_ENC_HOMOGENEOUS || (pass == MM_PASS_B && e->frozen))
            continue;
        int n = tp_group(b, d, 0);
        prev = emit_enc_chunks(b, i, rank_of(b->sp, d, vs), vs, d, mb, pass, e->chunks, 1.0, prev, n, first);
    }
    return prev; /* -2 on error */
}

/* Emits one pass of micro-batch mb of virtual stage vs on DP replica d:
 * one compute op per layer with the layer's TP, CP, EP and ZeRO-3
 * communication.  W passes have none but ZeRO-3's gradient scatter. */
static int emit_pass(builder *b, int d, int vs, int pass, int mb, pass_ends *pe)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    int s = vs % sp->pp, rank = rank_of(sp, d, vs), chunks = c->chunks;
    int zb = sp->schedule == MM_SCHEDULE_ZB_H1;
    /* per-micro-batch costs, when micro-batches differ */
    const mm_mb_cost *mc = sp->mb_costs ? &sp->mb_costs[pass_index(b, vs, d, mb)] : NULL;
    double fwd_s = mc ? mc->fwd_s : c->fwd_s, bwd_s = mc ? mc->bwd_s : c->bwd_s;
    double wgrad_s = mc ? mc->wgrad_s : c->wgrad_s;
    double fwd_fl = mc ? mc->fwd_flops : c->fwd_flops, bwd_fl = mc ? mc->bwd_flops : c->bwd_flops;
    double wgrad_fl = mc ? mc->wgrad_flops : c->wgrad_flops;
    double re_fl = mc ? mc->recompute_flops : c->recompute_flops;
    double tp_bytes = mc ? mc->tp_bytes : sp->tp_bytes;
    double dur, flops, hw;
    int msgs, cat;
    if (pass == MM_PASS_F) {
        dur = fwd_s, flops = fwd_fl, hw = flops, msgs = sp->tp_msgs_fwd, cat = MM_CAT_FWD;
    } else if (pass == MM_PASS_B) {
        dur = zb ? bwd_s - wgrad_s : bwd_s;
        flops = zb ? bwd_fl - wgrad_fl : bwd_fl;
        hw = flops + re_fl, msgs = sp->tp_msgs_bwd, cat = MM_CAT_BWD;
    } else {
        dur = wgrad_s, flops = wgrad_fl, hw = flops, msgs = 0, cat = MM_CAT_WGRAD;
    }
    bool comm_pass = pass != MM_PASS_W;
    pe->first = UINT32_MAX;
    int64_t prev = b->last_compute[rank];
    if (pass == MM_PASS_F && (prev = emit_homogeneous(b, d, vs, pass, mb, prev, &pe->first)) < -1)
        return -1;
    int64_t prev2 = prev; /* tail of the layer before the previous one */
    for (int k = 0; k < chunks; k++) {
        /* backward visits the layers from the last to the first */
        int layer = pass == MM_PASS_F ? k : chunks - 1 - k;
        int64_t gather = -1;
        if (sp->zero >= 3 && comm_pass && sp->dp > 1) {
            /* prefetch depth one: gather layer k while layer k-1 computes */
            gather = zero3_gather(b, d, vs, mb, pass, layer, prev2);
            if (gather < 0)
                return -1;
        }
        mm_op op = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = (uint8_t)cat,
                    .layer = (int16_t)layer, .stage = vs, .mb = mb, .coll = -1, .peer = -1,
                    .dur_s = dur / chunks, .flops = flops / chunks, .hw_flops = hw / chunks};
        int64_t layer_start = prev;
        int64_t id = add(b, &op, prev);
        if (id < 0 || (gather >= 0 && mm_graph_dep(b->g, (uint32_t)gather, (uint32_t)id)))
            return -1;
        if (pe->first == UINT32_MAX)
            pe->first = (uint32_t)id;
        b->layer_ops[layer] = (uint32_t)id;
        int64_t tail = id;      /* what the next layer waits for */
        int64_t side_end = -1;  /* overlapped communication of this layer */
        if (comm_pass && sp->tp > 1 && tp_bytes > 0 && msgs > 0) {
            int n = tp_group(b, d, s);
            int kinds[2] = {sp->sp ? MM_COLL_ALLGATHER : MM_COLL_ALLREDUCE, MM_COLL_REDUCESCATTER};
            for (int q = 0; q < (sp->sp ? 2 : 1); q++) {
                int64_t cl = mm_graph_add_coll(b->g, kinds[q], 1, msgs, tp_bytes, b->gbuf, n);
                if (sp->tp_overlap) {
                    int64_t o = add_comm(b, rank, MM_STREAM_SIDE, MM_CAT_TP, vs, mb, layer, cl, layer_start);
                    if (o < 0)
                        return -1;
                    side_end = o;
                } else if ((tail = add_comm(b, rank, MM_STREAM_COMPUTE, MM_CAT_TP, vs, mb, layer, cl, tail)) < 0) {
                    return -1;
                }
            }
        }
        if (comm_pass && b->cp > 1 && sp->cp_bytes > 0) {
            if (sp->cp_ring) {
                /* KV blocks around the ring while attention computes */
                b->gbuf[0] = gpu(b, 0, 0, d, s);
                b->gbuf[1] = gpu(b, 0, 1, d, s);
                int steps = (pass == MM_PASS_F ? 1 : 2) * (b->cp - 1);
                int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, steps, sp->cp_bytes, b->gbuf, 2);
                int64_t o = add_comm(b, rank, MM_STREAM_SIDE, MM_CAT_CP, vs, mb, layer, cl, layer_start);
                if (o < 0)
                    return -1;
                side_end = o;
            } else {
                for (int t = 0; t < b->cp; t++)
                    b->gbuf[t] = gpu(b, 0, t, d, s);
                int64_t cl = mm_graph_add_coll(b->g, MM_COLL_ALLTOALL, 1, 4, sp->cp_bytes, b->gbuf, b->cp);
                if ((tail = add_comm(b, rank, MM_STREAM_COMPUTE, MM_CAT_CP, vs, mb, layer, cl, tail)) < 0)
                    return -1;
            }
        }
        if (comm_pass && b->ep > 1 && sp->ep_bytes > 0 && layer < c->moe_chunks) {
            int g0 = d - d % b->ep; /* first DP replica of the expert group */
            for (int e = 0; e < b->ep; e++)
                b->gbuf[e] = gpu(b, 0, 0, g0 + e, s);
            size_t key = ((((size_t)(d / b->ep) * b->V + vs) * sp->m + mb) * 2 + (pass == MM_PASS_B)) *
                         b->max_chunks + layer;
            int64_t cl = shared_coll(b, &b->epc, key, MM_COLL_ALLTOALL, b->ep, 2, sp->ep_bytes, b->ep);
            if ((tail = add_comm(b, rank, MM_STREAM_COMPUTE, MM_CAT_EP, vs, mb, layer, cl, tail)) < 0)
                return -1;
        }
        if (side_end >= 0) {
            /* the next layer needs this layer's overlapped traffic too: a
             * zero-time join keeps one predecessor per layer */
            mm_op join = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = (uint8_t)cat,
                          .layer = (int16_t)layer, .stage = vs, .mb = mb, .coll = -1, .peer = -1};
            int64_t j = add(b, &join, tail);
            if (j < 0 || mm_graph_dep(b->g, (uint32_t)side_end, (uint32_t)j))
                return -1;
            tail = j;
        }
        /* ZeRO-3: this layer's gradients leave after its last backward work */
        bool grads_done = zb ? pass == MM_PASS_W : pass == MM_PASS_B;
        if (sp->zero >= 3 && grads_done && sp->dp > 1) {
            size_t key = ((((size_t)vs * sp->m + mb) * 3 + pass) * b->max_chunks + layer) * 2 + 1;
            int n = dp_group(b, s);
            int64_t cl = shared_coll(b, &b->z3, key, MM_COLL_REDUCESCATTER, sp->dp, 1, c->grad_bytes / chunks, n);
            if (add_comm(b, rank, MM_STREAM_DP, MM_CAT_DP, vs, mb, layer, cl, tail) < 0)
                return -1;
        }
        prev2 = prev;
        prev = tail;
    }
    if (pass == MM_PASS_B && (prev = emit_homogeneous(b, d, vs, pass, mb, prev, NULL)) < -1)
        return -1;
    pe->last = (uint32_t)prev;
    return 0;
}

/* A transfer of one micro-batch's activation (or gradient) between the same
 * DP replica of two adjacent virtual stages.  With Megatron's scatter-gather
 * optimisation each of the tp x cp GPU pairs carries its share in parallel,
 * so one representative pair is timed with bytes/(tp cp).  With measured
 * times fed in (p2p_s > 0) the transfer is a fixed delay. */
static int emit_p2p(builder *b, int d, int from_vs, int to_vs, int mb, uint32_t after, uint32_t before)
{
    const mm_build_spec *sp = b->sp;
    mm_op op = {.rank = rank_of(sp, d, from_vs), .stream = MM_STREAM_NONE, .cat = MM_CAT_PP,
                .layer = -1, .stage = from_vs, .mb = mb, .coll = -1, .peer = rank_of(sp, d, to_vs)};
    if (sp->p2p_s > 0) {
        op.dur_s = sp->p2p_s;
    } else {
        int pair[2] = {gpu(b, 0, 0, d, from_vs % sp->pp), gpu(b, 0, 0, d, to_vs % sp->pp)};
        int up = from_vs < to_vs ? from_vs : to_vs; /* the boundary's upper stage */
        double bytes = sp->mb_costs ? sp->mb_costs[pass_index(b, up, d, mb)].p2p_bytes : sp->p2p_bytes;
        int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, bytes / (sp->tp * b->cp), pair, 2);
        if (cl < 0)
            return -1;
        op.coll = (int32_t)cl;
    }
    int64_t id = mm_graph_add_op(b->g, &op);
    if (id < 0 || mm_graph_dep(b->g, after, (uint32_t)id) || mm_graph_dep(b->g, (uint32_t)id, before))
        return -1;
    return 0;
}

/* Bucket boundaries of physical stage s: layers are visited from the last
 * chunk's last layer backwards (the order backward produces gradients);
 * a bucket closes when it holds bucket_bytes or at the stage's end.  Fills
 * bucket_of[v][layer] and returns the number of buckets. */
static int buckets(const builder *b, int s, int *bucket_of)
{
    const mm_build_spec *sp = b->sp;
    int nb = 0;
    double fill = 0;
    bool split = sp->bucket_bytes > 0 && (sp->overlap_grad_reduce || sp->overlap_param_gather);
    for (int v = sp->vpp - 1; v >= 0; v--) {
        const mm_stage_cost *c = &sp->stages[v * sp->pp + s];
        for (int k = c->chunks - 1; k >= 0; k--) {
            bucket_of[v * b->max_chunks + k] = nb;
            fill += c->grad_bytes / c->chunks;
            if (split && fill >= sp->bucket_bytes) {
                nb++;
                fill = 0;
            }
        }
    }
    return fill > 0 || nb == 0 ? nb + 1 : nb;
}

static double bucket_bytes_of(const builder *b, int s, const int *bucket_of, int bucket, int params)
{
    const mm_build_spec *sp = b->sp;
    double sum = 0;
    for (int v = 0; v < sp->vpp; v++) {
        const mm_stage_cost *c = &sp->stages[v * sp->pp + s];
        double per = (params && c->param_bytes > 0 ? c->param_bytes : c->grad_bytes) / c->chunks;
        for (int k = 0; k < c->chunks; k++)
            if (bucket_of[v * b->max_chunks + k] == bucket)
                sum += per;
    }
    return sum;
}

/* Gradient synchronisation of physical stage s, the optimizer step, and
 * with the distributed optimizer the parameter all-gather (unless it was
 * overlapped with this iteration's forward).  With overlap_grad_reduce
 * the buckets' reductions were emitted during the backward already. */
static int emit_dp_tail(builder *b, int s, const uint32_t *last_op)
{
    const mm_build_spec *sp = b->sp;
    double grad = 0, opt = 0;
    for (int v = 0; v < sp->vpp; v++) {
        grad += sp->stages[v * sp->pp + s].grad_bytes;
        opt += sp->stages[v * sp->pp + s].opt_s;
    }
    for (int i = 0; i < sp->n_enc && s == 0; i++)
        if (sp->enc[i].placement == MM_ENC_HOMOGENEOUS && !sp->enc[i].frozen) {
            grad += sp->enc[i].grad_bytes; /* one bucket with stage 0's */
            opt += sp->enc[i].opt_s;
        }
    int rc = 0;
    bool dist = sp->zero >= 1 && sp->zero <= 2;
    int64_t rs = -1, ag = -1;
    int n = dp_group(b, s);
    if (sp->dp > 1 && grad > 0 && sp->zero < 3 && !sp->overlap_grad_reduce)
        rs = mm_graph_add_coll(b->g, dist ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE, sp->dp, 1, grad, b->gbuf, n);
    if (sp->dp > 1 && grad > 0 && dist && !sp->overlap_param_gather)
        ag = mm_graph_add_coll(b->g, MM_COLL_ALLGATHER, sp->dp, 1, grad, b->gbuf, n);
    for (int d = 0; d < sp->dp && rc == 0; d++) {
        int rank = d + sp->dp * s;
        int64_t prev = last_op[rank];
        if (rs >= 0 && (prev = add_comm(b, rank, MM_STREAM_DP, MM_CAT_DP, s, -1, -1, rs, prev)) < 0)
            return -1;
        int64_t dp_before = b->last_dp[rank];
        mm_op o = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .layer = -1,
                   .stage = s, .mb = -1, .coll = -1, .peer = -1, .dur_s = opt};
        int64_t oid = add(b, &o, prev);
        if (oid < 0)
            return -1;
        /* the step needs every gradient: the DP stream's last op (buckets,
         * ZeRO-3 scatters) is done when all of them are */
        if (dp_before >= 0 && dp_before != prev && mm_graph_dep(b->g, (uint32_t)dp_before, (uint32_t)oid))
            return -1;
        if (ag >= 0 && add_comm(b, rank, MM_STREAM_DP, MM_CAT_DP, s, -1, -1, ag, oid) < 0)
            return -1;
    }
    return rc;
}


/* ---- encoders ------------------------------------------------------------ */

static double enc_total(const builder *b, const mm_enc_spec *e, int what)
{
    double t = 0;
    for (int k = 0; k < b->sp->dp * b->sp->m; k++) {
        const mm_enc_mb_cost *c = &e->mb[k];
        t += what == 0 ? c->fwd_s : what == 1 ? c->bwd_s : what == 2 ? c->fwd_flops
           : what == 3 ? c->bwd_flops : what == 4 ? c->recompute_flops : c->out_bytes;
    }
    return t;
}

static int llm_gpus(const builder *b) { return b->sp->tp * b->cp * b->sp->dp * b->sp->pp; }

/* A collective over all of the LLM's GPUs reached by every LLM rank. */
static int64_t all_llm_coll(builder *b, int kind, double bytes)
{
    int n = llm_gpus(b);
    int *all = malloc((size_t)n * sizeof *all);
    if (!all)
        return -1;
    for (int i = 0; i < n; i++)
        all[i] = b->llm_off + i;
    int64_t cl = mm_graph_add_coll(b->g, kind, b->sp->pp * b->sp->dp, 1, bytes, all, n);
    free(all);
    return cl;
}

/* The simulated LLM rank (d + dp s) holding LLM-relative GPU g. */
static int rank_of_gpu(const mm_build_spec *sp, const int stride[MM_DIM_COUNT], int g)
{
    int d = g / stride[MM_DIM_DP] % sp->dp, s = g / stride[MM_DIM_PP] % sp->pp;
    return d + sp->dp * s;
}

int mm_build_enc_homes(const mm_build_spec *sp, int i, int *home, int max)
{
    if (i < 0 || i >= sp->n_enc || sp->enc[i].tp < 1)
        return -1;
    int st[MM_DIM_COUNT], G = sp->tp * (sp->cp > 0 ? sp->cp : 1) * sp->dp * sp->pp, n = G / sp->enc[i].tp;
    strides(sp, sp->cp > 0 ? sp->cp : 1, st);
    if (n > max)
        return -1;
    for (int k = 0; k < n; k++)
        home[k] = rank_of_gpu(sp, st, k * sp->enc[i].tp) % sp->dp;
    return n;
}

/* Colocated with per-rank costs: each simulated rank runs, forward, the
 * slowest of the encoder ranks on its GPUs, and its FLOPs' share (each GPU
 * 1/tp_enc of its rank's); the pairs' transfers join on the first stage. */
static int emit_colocated_ranks(builder *b, int i, int pass)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int R = sp->pp * sp->dp, G = llm_gpus(b), K = e->n_ranks;
    bool fwd = pass == MM_PASS_F;
    if (K != G / e->tp || !e->pair_bytes)
        return -1;
    int64_t *op_of = malloc((size_t)R * sizeof *op_of), *tail = malloc((size_t)R * sizeof *tail);
    int rc = op_of && tail ? 0 : -1;
    for (int r = 0; r < R && rc == 0; r++) {
        int d = r % sp->dp, s = r / sp->dp;
        mm_op op = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = fwd ? MM_CAT_FWD : MM_CAT_BWD,
                    .module = (uint8_t)(i + 1), .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1};
        for (int c = 0; c < b->cp; c++)
            for (int t = 0; t < sp->tp; t++) {
                const mm_enc_rank_cost *k = &e->ranks[(gpu(b, t, c, d, s) - b->llm_off) / e->tp];
                double dur = fwd ? k->fwd_s : k->bwd_s, fl = fwd ? k->fwd_flops : k->bwd_flops;
                op.dur_s = dur > op.dur_s ? dur : op.dur_s;
                op.flops += fl / e->tp;
                op.hw_flops += (fl + (fwd ? 0 : k->recompute_flops)) / e->tp;
            }
        tail[r] = b->last_compute[r]; /* backward: the LLM's last op of this rank */
        op_of[r] = add(b, &op, b->last_compute[r]);
        rc = op_of[r] < 0 ? -1 : 0;
    }
    /* forward: a zero-time join on each first-stage rank gathers its pairs */
    for (int d = 0; d < sp->dp && rc == 0 && fwd; d++) {
        mm_op j = {.rank = d, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .module = (uint8_t)(i + 1),
                   .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1};
        tail[d] = add(b, &j, op_of[d]);
        rc = tail[d] < 0 ? -1 : 0;
    }
    for (int k = 0; k < K && rc == 0; k++) {
        int src = rank_of_gpu(sp, b->stride, k * e->tp);
        for (int d = 0; d < sp->dp && rc == 0; d++) {
            double by = e->pair_bytes[(size_t)k * sp->dp + d];
            if (by <= 0 || src == d) /* nothing, or already on the first stage's GPUs */
                continue;
            int pair[2] = {b->llm_off + k * e->tp, gpu(b, 0, 0, d, 0)};
            if (!fwd)
                pair[0] = gpu(b, 0, 0, d, 0), pair[1] = b->llm_off + k * e->tp;
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, by / sp->tp, pair, 2);
            mm_op op = {.rank = fwd ? src : d, .stream = MM_STREAM_NONE, .cat = MM_CAT_PP,
                        .module = (uint8_t)(i + 1), .layer = -1, .stage = -1, .mb = -1, .coll = (int32_t)cl,
                        .peer = fwd ? d : src};
            int64_t id = cl < 0 ? -1 : mm_graph_add_op(b->g, &op);
            int64_t from = fwd ? op_of[src] : tail[d], to = fwd ? tail[d] : op_of[src];
            if (id < 0 || (from >= 0 && mm_graph_dep(b->g, (uint32_t)from, (uint32_t)id)) ||
                mm_graph_dep(b->g, (uint32_t)id, (uint32_t)to))
                rc = -1;
        }
    }
    free(op_of);
    free(tail);
    return rc;
}

/* Colocated: each LLM rank (tp x cp GPUs) holds tp*cp/tp_enc encoder TP
 * groups out of G/tp_enc, so it spends total * tp_enc / G encoding; then
 * the outputs are resharded to the first stage, an all-to-all over all
 * GPUs of total_out/G bytes each.  Backward mirrors it. */
static int emit_colocated(builder *b, int i, int pass)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    if (e->ranks)
        return emit_colocated_ranks(b, i, pass);
    double G = llm_gpus(b), share = e->tp / G, fshare = sp->tp * b->cp / G;
    bool fwd = pass == MM_PASS_F;
    int64_t cl = all_llm_coll(b, MM_COLL_ALLTOALL, enc_total(b, e, 5) / G);
    if (cl < 0)
        return -1;
    for (int r = 0; r < sp->pp * sp->dp; r++) {
        mm_op op = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = fwd ? MM_CAT_FWD : MM_CAT_BWD,
                    .module = (uint8_t)(i + 1), .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1,
                    .dur_s = enc_total(b, e, fwd ? 0 : 1) * share, .flops = enc_total(b, e, fwd ? 2 : 3) * fshare};
        op.hw_flops = op.flops + (fwd ? 0 : enc_total(b, e, 4) * fshare);
        mm_op rs = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_DP, .module = (uint8_t)(i + 1),
                    .layer = -1, .stage = -1, .mb = -1, .coll = (int32_t)cl, .peer = -1};
        int64_t a, z;
        if (fwd) { /* encode, then reshard to the first stage */
            a = add(b, &op, b->last_compute[r]);
            z = a < 0 ? -1 : add(b, &rs, a);
        } else { /* gradients back, then the encoder's backward */
            a = add(b, &rs, b->last_compute[r]);
            z = a < 0 ? -1 : add(b, &op, a);
        }
        if (z < 0)
            return -1;
    }
    return 0;
}

/* Tasks of encoder replica `rep`: LLM micro-batches (d, j) in global order
 * g = j*dp + d with g mod dp_enc == rep. */
static int enc_tasks(const builder *b, const mm_enc_spec *e, int rep, int *out)
{
    int n = 0, total = b->sp->dp * b->sp->m;
    for (int g = rep; g < total; g += e->dp)
        out[n++] = g;
    return n;
}

static int enc_stage_chunks(const mm_enc_spec *e, int se)
{
    return e->chunks / e->pp + (se < e->chunks % e->pp);
}

/* Where the LLM's first stage runs chunk 0's forward and backward of each
 * micro-batch in its schedule: pos[2j] and pos[2j + 1] (every replica runs
 * the same order).  NULL when out of memory. */
static int *llm_stage0_positions(const builder *b)
{
    const mm_build_spec *sp = b->sp;
    int len = mm_schedule_len(sp->schedule, sp->m, sp->vpp);
    mm_sched_step *st = malloc((size_t)len * sizeof *st);
    int *pos = malloc((size_t)2 * sp->m * sizeof *pos);
    int n = st && pos ? mm_schedule_steps(sp->schedule, sp->pp, 0, sp->m, sp->vpp, st) : -1;
    if (n < 0) {
        free(st);
        free(pos);
        return NULL;
    }
    for (int j = 0; j < 2 * sp->m; j++)
        pos[j] = n; /* a frozen LLM's schedule has no B: never needed */
    for (int k = 0; k < n; k++)
        if (st[k].chunk == 0 && st[k].pass != MM_PASS_W)
            pos[2 * st[k].mb + (st[k].pass == MM_PASS_B)] = k;
    free(st);
    return pos;
}

typedef struct enc_event {
    int key, kind, t; /* kind 0: B, 1: F (B first on equal keys) */
} enc_event;

static int enc_event_cmp(const void *a, const void *b)
{
    const enc_event *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/* The order of encoder stage se's passes over its mt tasks.  Each task's
 * forward is keyed by the LLM step that consumes it, moved `lead` steps
 * earlier (2 per encoder stage from this one to the LLM: 1F1B warm-up
 * plus the steady phase's forward, so that the encoder pipeline
 * fills), each backward by the LLM step that produces its gradient; sorted
 * by key this is deadlock-free under any LLM schedule, since a backward is
 * issued only after every forward the LLM needs before producing it (the
 * old count of warm-up forwards, pp micro-batches per replica, ignored
 * interleaving's (v-1)p extra ones).  Disjoint encoders and frozen ones
 * run every forward first.  Returns the number of steps. */
static int enc_order(const builder *b, const mm_enc_spec *e, int se, const int *tasks, int mt, const int *pos,
                     mm_sched_step *steps)
{
    const mm_build_spec *sp = b->sp;
    bool all_f_first = e->placement == MM_ENC_DISJOINT || e->frozen;
    enc_event *ev = malloc((size_t)(2 * mt + 1) * sizeof *ev);
    int n = 0, lead = 2 * (e->pp - se);
    if (!ev)
        return -1;
    for (int t = 0; t < mt; t++) {
        int j = tasks[t] / sp->dp;
        ev[n++] = (enc_event){all_f_first ? t - 2 * mt : pos[2 * j] - lead, 1, t};
        if (!e->frozen)
            ev[n++] = (enc_event){all_f_first ? t : pos[2 * j + 1], 0, t};
    }
    qsort(ev, (size_t)n, sizeof *ev, enc_event_cmp);
    for (int k = 0; k < n; k++)
        steps[k] = (mm_sched_step){ev[k].kind ? MM_PASS_F : MM_PASS_B, ev[k].t, 0};
    free(ev);
    return n;
}

/* Pipeline and disjoint placements: the encoder's own ranks. */
static int emit_own_encoder(builder *b, int i)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int total = sp->dp * sp->m;
    int *tasks = malloc((size_t)total * sizeof *tasks);
    size_t nf = (size_t)e->pp * total;
    pass_ends *fe = calloc(nf, sizeof *fe), *be = calloc(nf, sizeof *be);
    mm_sched_step *steps = malloc(2 * (size_t)total * sizeof *steps);
    int *tpg = malloc((size_t)e->tp * sizeof *tpg);
    int *llm_pos = llm_stage0_positions(b);
    int rc = tasks && fe && be && steps && tpg && llm_pos ? 0 : -1;
    bool disjoint = e->placement == MM_ENC_DISJOINT;
    for (int rep = 0; rep < e->dp && rc == 0; rep++) {
        int mt = enc_tasks(b, e, rep, tasks);
        for (int se = 0; se < e->pp && rc == 0; se++) {
            int rank = b->enc_rank_off[i] + rep + e->dp * se;
            int n = enc_order(b, e, se, tasks, mt, llm_pos, steps);
            if (n < 0) {
                rc = -1;
                break;
            }
            int ch = enc_stage_chunks(e, se);
            for (int t = 0; t < e->tp; t++)
                tpg[t] = enc_gpu(b, i, t, rep, se);
            for (int k = 0; k < n && rc == 0; k++) {
                int g = tasks[steps[k].mb], d = g % sp->dp, j = g / sp->dp;
                pass_ends *pe = (steps[k].pass == MM_PASS_F ? fe : be) + (size_t)se * total + g;
                pe->first = UINT32_MAX;
                memcpy(b->gbuf, tpg, (size_t)e->tp * sizeof *tpg);
                int64_t t = emit_enc_chunks(b, i, rank, -(e->pp - se), d, j, steps[k].pass, ch,
                                            (double)ch / e->chunks, b->last_compute[rank], e->tp, &pe->first);
                if (t < 0) {
                    rc = -1;
                    break;
                }
                /* the boundary: gather the TP-split output, then hand it on */
                if (se == e->pp - 1 && steps[k].pass == MM_PASS_F && e->tp > 1) {
                    memcpy(b->gbuf, tpg, (size_t)e->tp * sizeof *tpg);
                    int64_t cl = mm_graph_add_coll(b->g, MM_COLL_ALLGATHER, 1, 1, e->mb[(size_t)d * sp->m + j].out_bytes,
                                                   b->gbuf, e->tp);
                    t = add_comm(b, rank, MM_STREAM_COMPUTE, MM_CAT_PP, -(e->pp - se), j, -1, cl, t);
                    if (t < 0) {
                        rc = -1;
                        break;
                    }
                    b->g->ops[t].module = (uint8_t)(i + 1);
                }
                pe->last = (uint32_t)t;
                /* disjoint: a bounded queue between the encoder and the LLM */
                if (disjoint && se == 0 && steps[k].pass == MM_PASS_F && e->buffer > 0 && steps[k].mb >= e->buffer) {
                    int g0 = tasks[steps[k].mb - e->buffer];
                    rc = mm_graph_dep(b->g, b->fe[pass_index(b, 0, g0 % sp->dp, g0 / sp->dp)].first, pe->first);
                }
            }
        }
    }
    /* transfers: between encoder stages, and to / from the LLM's first stage */
    for (int g = 0; g < total && rc == 0; g++) {
        int d = g % sp->dp, j = g / sp->dp, rep = g % e->dp;
        const mm_enc_mb_cost *c = &e->mb[(size_t)d * sp->m + j];
        for (int se = 0; se + 1 < e->pp && rc == 0; se++) {
            int ra = b->enc_rank_off[i] + rep + e->dp * se, rb = ra + e->dp;
            int pair[2] = {enc_gpu(b, i, 0, rep, se), enc_gpu(b, i, 0, rep, se + 1)};
            for (int dir = 0; dir < (e->frozen ? 1 : 2) && rc == 0; dir++) {
                int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, c->act_bytes / e->tp, pair, 2);
                mm_op op = {.rank = dir ? rb : ra, .stream = MM_STREAM_NONE, .cat = MM_CAT_PP,
                            .module = (uint8_t)(i + 1), .layer = -1, .stage = -(e->pp - se), .mb = j,
                            .coll = (int32_t)cl, .peer = dir ? ra : rb};
                uint32_t from = dir ? be[(size_t)(se + 1) * total + g].last : fe[(size_t)se * total + g].last;
                uint32_t to = dir ? be[(size_t)se * total + g].first : fe[(size_t)(se + 1) * total + g].first;
                int64_t id = cl < 0 ? -1 : mm_graph_add_op(b->g, &op);
                if (id < 0 || mm_graph_dep(b->g, from, (uint32_t)id) || mm_graph_dep(b->g, (uint32_t)id, to))
                    rc = -1;
            }
        }
        int last_enc = b->enc_rank_off[i] + rep + e->dp * (e->pp - 1), llm0 = rank_of(sp, d, 0);
        int pair[2] = {enc_gpu(b, i, 0, rep, e->pp - 1), gpu(b, 0, 0, d, 0)};
        for (int dir = 0; dir < (e->frozen ? 1 : 2) && rc == 0; dir++) {
            /* each LLM TP rank receives its slice of the embeddings */
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, c->out_bytes / sp->tp, pair, 2);
            mm_op op = {.rank = dir ? llm0 : last_enc, .stream = MM_STREAM_NONE, .cat = MM_CAT_PP,
                        .module = (uint8_t)(i + 1), .layer = -1, .stage = dir ? 0 : -1, .mb = j,
                        .coll = (int32_t)cl, .peer = dir ? last_enc : llm0};
            uint32_t from = dir ? b->be[pass_index(b, 0, d, j)].last : fe[(size_t)(e->pp - 1) * total + g].last;
            uint32_t to = dir ? be[(size_t)(e->pp - 1) * total + g].first : b->fe[pass_index(b, 0, d, j)].first;
            int64_t id = cl < 0 ? -1 : mm_graph_add_op(b->g, &op);
            if (id < 0 || mm_graph_dep(b->g, from, (uint32_t)id) || mm_graph_dep(b->g, (uint32_t)id, to))
                rc = -1;
        }
    }
    free(tasks);
    free(fe);
    free(be);
    free(steps);
    free(tpg);
    free(llm_pos);
    return rc;
}

/* Gradient sync and optimizer step of an encoder that is not frozen. */
static int emit_enc_tail(builder *b, int i)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    if (e->frozen || e->placement == MM_ENC_HOMOGENEOUS)
        return 0;
    int kind = sp->zero >= 1 ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE;
    if (e->placement == MM_ENC_COLOCATED) {
        /* encoder DP group: every tp_enc-th GPU of the LLM's */
        int G = llm_gpus(b), n = G / e->tp;
        int *grp = malloc((size_t)(n > 0 ? n : 1) * sizeof *grp);
        if (!grp)
            return -1;
        for (int k = 0; k < n; k++)
            grp[k] = b->llm_off + k * e->tp;
        int64_t cl = n > 1 && e->grad_bytes > 0 ? mm_graph_add_coll(b->g, kind, sp->pp * sp->dp, 1, e->grad_bytes, grp, n) : -2;
        free(grp);
        for (int r = 0; r < sp->pp * sp->dp && cl != -1; r++) {
            int64_t prev = b->last_compute[r];
            if (cl >= 0 && (prev = add_comm(b, r, MM_STREAM_DP, MM_CAT_DP, -1, -1, -1, cl, prev)) < 0)
                return -1;
            if (cl >= 0)
                b->g->ops[prev].module = (uint8_t)(i + 1);
            mm_op o = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .module = (uint8_t)(i + 1),
                       .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1, .dur_s = e->opt_s};
            if (add(b, &o, prev) < 0)
                return -1;
        }
        return cl == -1 ? -1 : 0;
    }
    for (int se = 0; se < e->pp; se++) {
        for (int rep = 0; rep < e->dp; rep++)
            b->gbuf[rep] = enc_gpu(b, i, 0, rep, se);
        int64_t cl = e->dp > 1 && e->grad_bytes > 0 ? mm_graph_add_coll(b->g, kind, e->dp, 1, e->grad_bytes, b->gbuf, e->dp) : -2;
        if (cl == -1)
            return -1;
        for (int rep = 0; rep < e->dp; rep++) {
            int r = b->enc_rank_off[i] + rep + e->dp * se;
            int64_t prev = b->last_compute[r];
            if (cl >= 0 && (prev = add_comm(b, r, MM_STREAM_DP, MM_CAT_DP, -(e->pp - se), -1, -1, cl, prev)) < 0)
                return -1;
            if (cl >= 0)
                b->g->ops[prev].module = (uint8_t)(i + 1);
            mm_op o = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .module = (uint8_t)(i + 1),
                       .layer = -1, .stage = -(e->pp - se), .mb = -1, .coll = -1, .peer = -1, .dur_s = e->opt_s};
            if (add(b, &o, prev) < 0)
                return -1;
        }
    }
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
            int nb = buckets(&b, s, bucket_of);
            for (int d = 0; d < sp->dp && rc == 0; d++) {
                int rank = d + sp->dp * s;
                int64_t *ops = calloc((size_t)nb, sizeof *ops);
                rc = ops ? 0 : -1;
                for (int q = nb - 1; q >= 0 && rc == 0; q--) { /* forward order: last bucket first */
                    int n = dp_group(&b, s);
                    double by = bucket_bytes_of(&b, s, bucket_of, q, 1);
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
        int64_t cl = all_llm_coll(&b, MM_COLL_ALLTOALL, sp->pre_a2a_bytes);
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
            rc = emit_colocated(&b, i, MM_PASS_F);

    /* 1. Every rank's compute stream in schedule order. */
    for (int s = 0; s < sp->pp && rc == 0; s++) {
        int n = mm_schedule_steps(sp->schedule, sp->pp, s, sp->m, sp->vpp, steps);
        buckets(&b, s, bucket_of);
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
                rc = emit_pass(&b, d, vs, pass, mb, pe);
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
                        double by = bucket_bytes_of(&b, s, bucket_of, q, 0);
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
            rc = emit_own_encoder(&b, i);
        else if (sp->enc[i].placement == MM_ENC_COLOCATED && !sp->enc[i].frozen)
            rc = emit_colocated(&b, i, MM_PASS_B);
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
    for (int i = 0; i < sp->n_enc && rc == 0; i++)
        rc = emit_enc_tail(&b, i);
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
