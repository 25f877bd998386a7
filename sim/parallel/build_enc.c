/* build_enc.c - the encoders' part of one iteration's graph, per
 * placement: homogeneous (on the LLM's first stage), colocated (on all of
 * the LLM's GPUs, before and after it), and on GPUs of their own (pipeline,
 * disjoint) with their hand-over to the LLM, their DP reductions after
 * each backward where the profile's grad_sync says so, and their DP tail.
 * Not for: the LLM's passes (build_llm.c) or the iteration's order
 * (build.c). */
#include "parallel/build_internal.h"

#include <stdlib.h>
#include <string.h>

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
        mm_build_op_host(&op, (fwd ? c->fwd_host_s : c->bwd_host_s) * share / chunks,
                         (fwd ? c->fwd_launches : c->bwd_launches) * share / chunks);
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
int64_t mm_bld_emit_homogeneous(builder *b, int d, int vs, int pass, int mb, int64_t prev, uint32_t *first)
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

/* ---- gradient reduction after every backward ------------------------------ */

int mm_build_enc_grad_syncs(const mm_build_spec *sp, int i)
{
    const mm_enc_spec *e = &sp->enc[i];
    if (e->frozen)
        return 0;
    /* colocated: one backward of the rank's whole share after the LLM's
     * (the totals of emit_colocated), so one reduce whatever the profile */
    if (!e->grad_every_mb || e->placement == MM_ENC_COLOCATED)
        return 1;
    if (e->placement == MM_ENC_HOMOGENEOUS)
        return sp->m;
    /* replica rep takes micro-batches rep, rep + dp_enc, ... (enc_tasks);
     * a collective needs every replica, so the fewest count (a replica
     * with one more runs it before the tail's reduce) */
    int n = e->dp > 0 ? sp->lay.dp * sp->m / e->dp : 1;
    return n > 1 ? n : 1;
}

int mm_build_enc_early_syncs(const mm_build_spec *sp, int i)
{
    int n = mm_build_enc_grad_syncs(sp, i);
    /* mm_bld_emit_dp_tail reduces a homogeneous encoder's gradients with
     * the LLM's leftovers only under ZeRO 0-2 (ZeRO-3 has none there) */
    bool tail = !(sp->enc[i].placement == MM_ENC_HOMOGENEOUS && sp->zero >= 3);
    return n > 0 && tail ? n - 1 : n;
}

/* Slots of encoder i in b->enc_sync: its stages x its early reduces. */
static size_t enc_sync_count(const mm_build_spec *sp, int i)
{
    int pp = sp->enc[i].pp > 0 ? sp->enc[i].pp : 1;
    return (size_t)pp * (size_t)mm_build_enc_early_syncs(sp, i);
}

size_t mm_bld_enc_sync_slots(const mm_build_spec *sp)
{
    size_t n = 0;
    for (int i = 0; i < sp->n_enc; i++)
        n += enc_sync_count(sp, i);
    return n;
}

/* Encoder i's k-th reduce of its stage se's gradients, on `rank` after
 * `after`, over the n GPUs of that stage's DP group in b->gbuf: the LLM's
 * kind (all-reduce, or reduce-scatter under ZeRO), on the DP stream with
 * the overlap, else on the compute stream, which waits for it (as the
 * LLM's buckets, build.c emit_grad_buckets). */
static int64_t emit_enc_sync(builder *b, int i, int se, int k, int rank, int vs, int mb, int n, int64_t after)
{
    const mm_build_spec *sp = b->sp;
    size_t key = (size_t)se * (size_t)mm_build_enc_early_syncs(sp, i) + (size_t)k;
    for (int j = 0; j < i; j++)
        key += enc_sync_count(sp, j);
    int kind = sp->zero >= 1 ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE;
    int64_t cl = shared_coll(b, &b->enc_sync, key, kind, n, 1, sp->enc[i].grad_bytes, n);
    int stream = sp->overlap_grad_reduce ? MM_STREAM_DP : MM_STREAM_COMPUTE;
    int64_t id = add_comm(b, rank, stream, MM_CAT_DP, vs, mb, -1, cl, after);
    if (id >= 0)
        mm_graph_set_module(b->g, (uint32_t)id, i + 1);
    return id;
}

int mm_bld_emit_homog_sync(builder *b, int d, int mb)
{
    const mm_build_spec *sp = b->sp;
    int done = 0;
    for (int i = 0; i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        /* the B passes of stage 0's chunk 0 run in micro-batch order under
         * every schedule: m reduces, one after each, or 1 after the last;
         * the last is the DP tail's unless ZeRO-3 (early = n then) */
        int n = mm_build_enc_grad_syncs(sp, i), early = mm_build_enc_early_syncs(sp, i);
        int k = n > 1 ? mb : mb - (sp->m - 1);
        if (e->placement != MM_ENC_HOMOGENEOUS || sp->lay.dp < 2 || e->grad_bytes <= 0 || k < 0 || k >= early)
            continue;
        int rank = rank_of(sp, d, 0), g = dp_group(b, 0);
        if (emit_enc_sync(b, i, 0, k, rank, 0, mb, g, b->last_compute[rank]) < 0)
            return -1;
        done = 1;
    }
    return done;
}

/* ---- encoders ------------------------------------------------------------ */

static double enc_total(const builder *b, const mm_enc_spec *e, int what)
{
    double t = 0;
    for (int k = 0; k < b->sp->lay.dp * b->sp->m; k++) {
        const mm_enc_mb_cost *c = &e->mb[k];
        t += what == 0 ? c->fwd_s : what == 1 ? c->bwd_s : what == 2 ? c->fwd_flops
           : what == 3 ? c->bwd_flops : what == 4 ? c->recompute_flops : c->out_bytes;
    }
    return t;
}

static int llm_gpus(const builder *b) { return b->sp->lay.tp * b->cp * b->sp->lay.dp * b->sp->lay.pp; }

/* A collective over all of the LLM's GPUs reached by every LLM rank. */
int64_t mm_bld_all_llm_coll(builder *b, int kind, double bytes)
{
    int n = llm_gpus(b);
    int *all = malloc((size_t)n * sizeof *all);
    if (!all)
        return -1;
    for (int i = 0; i < n; i++)
        all[i] = b->llm_off + i;
    int64_t cl = mm_graph_add_coll(b->g, kind, b->sp->lay.pp * b->sp->lay.dp, 1, bytes, all, n);
    free(all);
    return cl;
}

/* Colocated with per-rank costs: each simulated rank runs, forward, the
 * slowest of the encoder ranks on its GPUs, and its FLOPs' share (each GPU
 * 1/tp_enc of its rank's); the pairs' transfers join on the first stage. */
static int emit_colocated_ranks(builder *b, int i, int pass)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int R = sp->lay.pp * sp->lay.dp, G = llm_gpus(b), K = e->n_ranks;
    bool fwd = pass == MM_PASS_F;
    if (K != G / e->tp || !e->pair_bytes)
        return -1;
    int64_t *op_of = malloc((size_t)R * sizeof *op_of), *tail = malloc((size_t)R * sizeof *tail);
    int rc = op_of && tail ? 0 : -1;
    for (int r = 0; r < R && rc == 0; r++) {
        int d = r % sp->lay.dp, s = r / sp->lay.dp;
        mm_op op = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = fwd ? MM_CAT_FWD : MM_CAT_BWD,
                    .module = (uint8_t)(i + 1), .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1};
        for (int c = 0; c < b->cp; c++)
            for (int t = 0; t < sp->lay.tp; t++) {
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
    for (int d = 0; d < sp->lay.dp && rc == 0 && fwd; d++) {
        mm_op j = {.rank = d, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .module = (uint8_t)(i + 1),
                   .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1};
        tail[d] = add(b, &j, op_of[d]);
        rc = tail[d] < 0 ? -1 : 0;
    }
    for (int k = 0; k < K && rc == 0; k++) {
        int src = mm_bld_rank_of_gpu(sp, b->stride, k * e->tp);
        for (int d = 0; d < sp->lay.dp && rc == 0; d++) {
            double by = e->pair_bytes[(size_t)k * sp->lay.dp + d];
            if (by <= 0 || src == d) /* nothing, or already on the first stage's GPUs */
                continue;
            int pair[2] = {b->llm_off + k * e->tp, gpu(b, 0, 0, d, 0)};
            if (!fwd)
                pair[0] = gpu(b, 0, 0, d, 0), pair[1] = b->llm_off + k * e->tp;
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, by / sp->lay.tp, pair, 2);
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
int mm_bld_emit_colocated(builder *b, int i, int pass)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    if (e->ranks)
        return emit_colocated_ranks(b, i, pass);
    double G = llm_gpus(b), share = e->tp / G, fshare = sp->lay.tp * b->cp / G;
    bool fwd = pass == MM_PASS_F;
    int64_t cl = mm_bld_all_llm_coll(b, MM_COLL_ALLTOALL, enc_total(b, e, 5) / G);
    if (cl < 0)
        return -1;
    /* the encoder's totals over all dp x m micro-batches, once: the same
     * for every rank (computing them per rank made building O(pp dp^2 m)) */
    double t_dur = enc_total(b, e, fwd ? 0 : 1), t_flops = enc_total(b, e, fwd ? 2 : 3);
    double t_re = fwd ? 0 : enc_total(b, e, 4);
    for (int r = 0; r < sp->lay.pp * sp->lay.dp; r++) {
        if (skip_rank(b, r))
            continue;
        mm_op op = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = fwd ? MM_CAT_FWD : MM_CAT_BWD,
                    .module = (uint8_t)(i + 1), .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1,
                    .dur_s = t_dur * share, .flops = t_flops * fshare};
        op.hw_flops = op.flops + (fwd ? 0 : t_re * fshare);
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
        if (z < 0 || mark(b)) /* ranks d + dp s: each stage's are copies */
            return -1;
    }
    return 0;
}

/* Tasks of encoder replica `rep`: LLM micro-batches (d, j) in global order
 * g = j*dp + d with g mod dp_enc == rep. */
static int enc_tasks(const builder *b, const mm_enc_spec *e, int rep, int *out)
{
    int n = 0, total = b->sp->lay.dp * b->sp->m;
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
    int len = mm_schedule_len(sp->schedule, sp->m, sp->lay.vpp);
    mm_sched_step *st = malloc((size_t)len * sizeof *st);
    int *pos = malloc((size_t)2 * sp->m * sizeof *pos);
    int n = st && pos ? mm_build_schedule_steps(sp, 0, st) : -1;
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
        int j = tasks[t] / sp->lay.dp;
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

/* The transfers of encoder i's micro-batches between its own stages and
 * to (and, unless frozen, from) the LLM's first stage, once every pass is
 * emitted (fe, be: the passes' ends, stage-major over `total`). */
static int emit_own_transfers(builder *b, int i, const pass_ends *fe, const pass_ends *be, int total)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int rc = 0;
    for (int g = 0; g < total && rc == 0; g++) {
        int d = g % sp->lay.dp, j = g / sp->lay.dp, rep = g % e->dp;
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
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, c->out_bytes / sp->lay.tp, pair, 2);
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
    return rc;
}

/* Pipeline and disjoint placements: the encoder's own ranks. */
int mm_bld_emit_own_encoder(builder *b, int i)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int total = sp->lay.dp * sp->m;
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
            int ch = enc_stage_chunks(e, se), nb = 0;
            int early = e->dp > 1 && e->grad_bytes > 0 ? mm_build_enc_early_syncs(sp, i) : 0;
            for (int t = 0; t < e->tp; t++)
                tpg[t] = enc_gpu(b, i, t, rep, se);
            for (int k = 0; k < n && rc == 0; k++) {
                int g = tasks[steps[k].mb], d = g % sp->lay.dp, j = g / sp->lay.dp;
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
                    mm_graph_set_module(b->g, (uint32_t)t, i + 1);
                }
                pe->last = (uint32_t)t;
                /* every backward's reduce but the last (the tail's) */
                if (steps[k].pass == MM_PASS_B && nb < early) {
                    for (int r = 0; r < e->dp; r++)
                        b->gbuf[r] = enc_gpu(b, i, 0, r, se);
                    rc = emit_enc_sync(b, i, se, nb++, rank, -(e->pp - se), j, e->dp, t) < 0 ? -1 : 0;
                }
                /* disjoint: a bounded queue between the encoder and the LLM */
                if (rc == 0 && disjoint && se == 0 && steps[k].pass == MM_PASS_F && e->buffer > 0 &&
                    steps[k].mb >= e->buffer) {
                    int g0 = tasks[steps[k].mb - e->buffer];
                    rc = mm_graph_dep(b->g, b->fe[pass_index(b, 0, g0 % sp->lay.dp, g0 / sp->lay.dp)].first, pe->first);
                }
            }
        }
    }
    /* transfers: between encoder stages, and to / from the LLM's first stage */
    if (rc == 0)
        rc = emit_own_transfers(b, i, fe, be, total);
    free(tasks);
    free(fe);
    free(be);
    free(steps);
    free(tpg);
    free(llm_pos);
    return rc;
}

/* A colocated encoder whose layers are split over the LLM's pipeline ranks
 * (in its bubbles, build_bubbles.c): each stage's DP group is every
 * tp_enc-th GPU of its LLM stage, reduced after each rank's last encoder
 * kernel, then the optimizer step. */
static int emit_bubbles_tail(builder *b, int i, int kind)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int n = sp->lay.tp * b->cp * sp->lay.dp / e->tp;
    int *grp = malloc((size_t)(n > 0 ? n : 1) * sizeof *grp);
    if (!grp)
        return -1;
    int rc = 0;
    for (int s = 0; s < sp->lay.pp && rc == 0; s++) {
        int k = 0;
        for (int d = 0; d < sp->lay.dp; d++)
            for (int c = 0; c < b->cp; c++)
                for (int t = 0; t < sp->lay.tp; t += e->tp)
                    grp[k++] = gpu(b, t, c, d, s);
        int64_t cl = n > 1 && e->grad_bytes > 0 ? mm_graph_add_coll(b->g, kind, sp->lay.dp, 1, e->grad_bytes, grp, n)
                                                 : -2;
        rc = cl == -1 ? -1 : 0;
        for (int d = 0; d < sp->lay.dp && rc == 0; d++) {
            int r = d + sp->lay.dp * s;
            if (skip_rank(b, r))
                continue;
            int64_t prev = b->last_fill[r] >= 0 ? b->last_fill[r] : b->last_compute[r];
            if (cl >= 0 && (prev = add_comm(b, r, MM_STREAM_DP, MM_CAT_DP, -1, -1, -1, cl, prev)) < 0)
                rc = -1;
            if (rc == 0 && cl >= 0)
                mm_graph_set_module(b->g, (uint32_t)prev, i + 1);
            mm_op o = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .module = (uint8_t)(i + 1),
                       .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1, .dur_s = e->opt_s};
            if (rc == 0 && add(b, &o, prev) < 0)
                rc = -1;
        }
        rc = rc ? rc : mark(b);
    }
    free(grp);
    return rc;
}

/* Gradient sync and optimizer step of an encoder that is not frozen. */
int mm_bld_emit_enc_tail(builder *b, int i)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    if (e->frozen || e->placement == MM_ENC_HOMOGENEOUS)
        return 0;
    int kind = sp->zero >= 1 ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE;
    if (e->placement == MM_ENC_COLOCATED && sp->enc_bubbles && e->pp > 1)
        return emit_bubbles_tail(b, i, kind);
    if (e->placement == MM_ENC_COLOCATED) {
        /* encoder DP group: every tp_enc-th GPU of the LLM's */
        int G = llm_gpus(b), n = G / e->tp;
        int *grp = malloc((size_t)(n > 0 ? n : 1) * sizeof *grp);
        if (!grp)
            return -1;
        for (int k = 0; k < n; k++)
            grp[k] = b->llm_off + k * e->tp;
        int64_t cl = n > 1 && e->grad_bytes > 0 ? mm_graph_add_coll(b->g, kind, sp->lay.pp * sp->lay.dp, 1, e->grad_bytes, grp, n) : -2;
        free(grp);
        for (int r = 0; r < sp->lay.pp * sp->lay.dp && cl != -1; r++) {
            if (skip_rank(b, r))
                continue;
            /* in the bubbles: after the rank's last encoder kernel */
            int64_t prev = sp->enc_bubbles && b->last_fill[r] >= 0 ? b->last_fill[r] : b->last_compute[r];
            if (cl >= 0 && (prev = add_comm(b, r, MM_STREAM_DP, MM_CAT_DP, -1, -1, -1, cl, prev)) < 0)
                return -1;
            if (cl >= 0)
                mm_graph_set_module(b->g, (uint32_t)prev, i + 1);
            mm_op o = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .module = (uint8_t)(i + 1),
                       .layer = -1, .stage = -1, .mb = -1, .coll = -1, .peer = -1, .dur_s = e->opt_s};
            if (add(b, &o, prev) < 0 || mark(b))
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
                mm_graph_set_module(b->g, (uint32_t)prev, i + 1);
            mm_op o = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .module = (uint8_t)(i + 1),
                       .layer = -1, .stage = -(e->pp - se), .mb = -1, .coll = -1, .peer = -1, .dur_s = e->opt_s};
            if (add(b, &o, prev) < 0)
                return -1;
        }
    }
    return 0;
}

/* One all-to-all of `bytes` per GPU whose members are ranks [r0, r1) on
 * their compute streams, over the GPUs in gl[0..n). */
static int rebalance_coll(builder *b, int r0, int r1, const int *gl, int n, double bytes)
{
    int64_t cl = mm_graph_add_coll(b->g, MM_COLL_ALLTOALL, r1 - r0, 1, bytes, gl, n);
    for (int r = r0; r < r1; r++) {
        mm_op op = {.rank = r, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_DP, .layer = -1, .stage = -1,
                    .mb = -1, .coll = (int32_t)cl, .peer = -1};
        if (cl < 0 || add(b, &op, b->last_compute[r]) < 0)
            return -1;
    }
    return 0;
}

int mm_bld_emit_rebalance(builder *b, int at)
{
    const mm_build_spec *sp = b->sp;
    int R = sp->lay.pp * sp->lay.dp, G = llm_gpus(b), rc = 0;
    int *gl = malloc((size_t)(G > 0 ? G : 1) * sizeof *gl);
    if (!gl)
        return -1;
    for (int k = 0; k < G; k++)
        gl[k] = b->llm_off + k;
    if (at == 0 && sp->enc_a2a_bytes > 0 && sp->n_enc > 0) {
        const mm_enc_spec *e = &sp->enc[0];
        if (e->placement == MM_ENC_PIPELINE || e->placement == MM_ENC_DISJOINT) { /* the encoder's own GPUs, every rank of it */
            int n = e->tp * e->pp * e->dp, *eg = malloc((size_t)n * sizeof *eg);
            for (int k = 0; eg && k < n; k++)
                eg[k] = b->enc_gpu_off[0] + k;
            rc = eg ? rebalance_coll(b, b->enc_rank_off[0], b->enc_rank_off[0] + e->pp * e->dp, eg, n,
                                     sp->enc_a2a_bytes)
                    : -1;
            free(eg);
        } else {
            rc = rebalance_coll(b, 0, R, gl, G, sp->enc_a2a_bytes);
        }
    }
    double llm = at == 0 ? sp->pre_a2a_bytes : sp->post_a2a_bytes;
    if (rc == 0 && llm > 0)
        rc = rebalance_coll(b, 0, R, gl, G, llm);
    free(gl);
    return rc;
}
