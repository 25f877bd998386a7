/* build_internal.h - what the files of the graph builder (build.c,
 * build_llm.c, build_enc.c, build_base.c) share: the builder's state, its
 * small helpers (rank and GPU numbering, appending ops, shared
 * collectives) and the emitters each file provides to mm_build_iteration.
 * build.c calls the emitters (build_bubbles.c's too), build_llm.c those
 * of build_enc.c, and all call build_base.c; none calls back.
 * Private to sim/parallel: not installed, not for callers (they use
 * parallel/build.h). */
#ifndef MM_BUILD_INTERNAL_H
#define MM_BUILD_INTERNAL_H

#include "parallel/build.h"

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
    int ep_dp, ep_tp; /* an expert group: ep_dp DP replicas x ep_tp TP ranks (mm_mem_ep_fold) */
    int stride[MM_DIM_COUNT];
    pass_ends *fe, *be;   /* by (virtual stage, dp replica, micro-batch) */
    int64_t *last_compute; /* per rank: last op on its compute stream */
    int64_t *last_dp;     /* per rank: last op on its DP stream */
    int64_t *last_fill;   /* per rank: last op on its fill stream */
    uint32_t *layer_ops;  /* compute op of each layer of the last pass */
    uint32_t *layer_ops2; /* a co-executed pair's: the second strand's */
    bool strand_comm;     /* co-execution: blocking traffic on the side stream */
    coll_cache z3;        /* ZeRO-3: (vs, mb, pass, layer) -> gather / scatter */
    coll_cache epc;       /* EP: (group, vs, mb, pass, layer, k) */
    coll_cache bucket;    /* DP buckets: (stage, bucket) for grads and params */
    coll_cache enc_sync;  /* encoders' per-micro-batch reduces: (encoder, stage, k) */
    int max_chunks;
    int *gbuf;            /* scratch GPU list */
    int llm_off;          /* first GPU of the LLM */
    int enc_gpu_off[MM_MAX_ENCODERS];  /* first GPU of an encoder on its own GPUs */
    int enc_rank_off[MM_MAX_ENCODERS]; /* first simulated rank of such an encoder */
    int n_ranks;
    int D;                /* DP replicas emitted: dp, or 1 (one_replica) */
    mm_err *err;          /* the first failure, naming its op (may be NULL) */
    bool failed;          /* err holds a message */
} builder;

/* build_base.c.  Records the first failure of the build in b->err; returns -1. */
int mm_bld_fail(builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* mm_bld_fail naming op (its kind, stage, micro-batch, layer and rank). */
int mm_bld_fail_op(builder *b, const mm_op *op, const char *what);

/* The rank of virtual stage vs in replica d: its pipeline stage by the
 * schedule's placement (parallel/schedule.h: a loop, or ZB-V's V). */
static inline int stage_of(const mm_build_spec *sp, int vs) { return mm_schedule_vstage_rank(sp->schedule, sp->lay.pp, vs); }
static inline int rank_of(const mm_build_spec *sp, int d, int vs) { return d + sp->lay.dp * stage_of(sp, vs); }

static inline size_t pass_index(const builder *b, int vs, int d, int mb)
{
    return ((size_t)vs * b->sp->lay.dp + d) * b->sp->m + mb;
}

static inline int gpu(const builder *b, int t, int c, int d, int s)
{
    return b->llm_off + t * b->stride[MM_DIM_TP] + c * b->stride[MM_DIM_CP] + d * b->stride[MM_DIM_DP] +
           s * b->stride[MM_DIM_PP];
}

/* Encoder GPUs: tp fastest, then dp, then pp, like the LLM's default. */
static inline int enc_gpu(const builder *b, int i, int t, int e, int s)
{
    const mm_enc_spec *en = &b->sp->enc[i];
    return b->enc_gpu_off[i] + t + en->tp * (e + en->dp * s);
}

/* Looks a shared collective up, creating it (kind, members, count, bytes
 * over the GPUs in b->gbuf[0..n)) on first use. */
static inline int64_t shared_coll(builder *b, coll_cache *cc, size_t key, int kind, int members, int count,
                                  double bytes, int n)
{
    if (key >= cc->n)
        return -1;
    if (cc->id[key] < 0)
        cc->id[key] = mm_graph_add_coll(b->g, kind, members, count, bytes, b->gbuf, n);
    return cc->id[key];
}

/* Appends an op that waits for `after` (if >= 0); returns its id or -1. */
static inline int64_t add(builder *b, const mm_op *op, int64_t after)
{
    mm_op hosted;
    if (op->stream == MM_STREAM_COMPUTE && op->coll >= 0 && b->sp->coll_host_s > 0) {
        hosted = *op; /* a blocking collective: the host issues its launch */
        mm_build_op_host(&hosted, b->sp->coll_host_s, 1);
        op = &hosted;
    }
    int64_t id = mm_graph_add_op(b->g, op);
    if (id < 0 || (after >= 0 && mm_graph_dep(b->g, (uint32_t)after, (uint32_t)id)))
        return mm_bld_fail_op(b, op, "out of memory");
    if (op->stream == MM_STREAM_COMPUTE)
        b->last_compute[op->rank] = id;
    else if (op->stream == MM_STREAM_DP)
        b->last_dp[op->rank] = id;
    else if (op->stream == MM_STREAM_FILL)
        b->last_fill[op->rank] = id;
    return id;
}

/* A communication op of rank `rank` on `stream` in collective `cl`. */
static inline int64_t add_comm(builder *b, int rank, int stream, int cat, int vs, int mb, int layer,
                               int64_t cl, int64_t after)
{
    mm_op op = {.rank = rank, .stream = (uint8_t)stream, .cat = (uint8_t)cat, .layer = (int16_t)layer,
                .stage = vs, .mb = mb, .coll = (int32_t)cl, .peer = -1};
    if (cl < 0)
        return mm_bld_fail_op(b, &op, "its collective could not be created (out of memory, or past the "
                                      "builder's collective table)");
    return add(b, &op, after);
}

/* TP group of DP replica d, stage s (all CP ranks' TP peers are collapsed
 * with it; the TP collective runs over the tp GPUs of CP rank 0). */
/* The simulated LLM rank (d + dp s) holding LLM-relative GPU g. */
static inline int mm_bld_rank_of_gpu(const mm_build_spec *sp, const int stride[MM_DIM_COUNT], int g)
{
    int d = g / stride[MM_DIM_DP] % sp->lay.dp, s = g / stride[MM_DIM_PP] % sp->lay.pp;
    return d + sp->lay.dp * s;
}

static inline int tp_group(builder *b, int d, int s)
{
    for (int t = 0; t < b->sp->lay.tp; t++)
        b->gbuf[t] = gpu(b, t, 0, d, s);
    return b->sp->lay.tp;
}

static inline int dp_group(builder *b, int s)
{
    for (int d = 0; d < b->sp->lay.dp; d++)
        b->gbuf[d] = gpu(b, 0, 0, d, s);
    return b->sp->lay.dp;
}

/* One replica's build (mm_build_spec.one_replica): whether rank r (of
 * the whole graph's numbering, d + dp s) is left out, and the end of a
 * stretch of ops that the other replicas repeat (mm_graph_mark). */
static inline bool skip_rank(const builder *b, int r) { return b->D < b->sp->lay.dp && r % b->sp->lay.dp != 0; }

static inline int mark(builder *b) { return mm_graph_mark(b->g) ? mm_bld_fail(b, "out of memory (segments)") : 0; }

/* build_bubbles.c: colocated encoder i's passes in the LLM's bubbles
 * (mm_build_spec.enc_bubbles), once the LLM's passes are emitted. */
int mm_bld_emit_bubbles(builder *b, int i);

/* build_llm.c */
int mm_bld_emit_pass(builder *b, int d, int vs, int pass, int mb, pass_ends *pe);
int mm_bld_emit_pair(builder *b, int d, int vs, int pass, int mb0, pass_ends *pe0, pass_ends *pe1);
int mm_bld_emit_p2p(builder *b, int d, int from_vs, int to_vs, int mb, uint32_t after, uint32_t before);
int mm_bld_buckets(const builder *b, int s, int *bucket_of);
double mm_bld_bucket_bytes_of(const builder *b, int s, const int *bucket_of, int bucket, int params);
int mm_bld_emit_dp_tail(builder *b, int s, const uint32_t *last_op);

/* build_enc.c */
int64_t mm_bld_emit_homogeneous(builder *b, int d, int vs, int pass, int mb, int64_t prev, uint32_t *first);
int64_t mm_bld_all_llm_coll(builder *b, int kind, double bytes);
int mm_bld_emit_colocated(builder *b, int i, int pass);
int mm_bld_emit_own_encoder(builder *b, int i);
int mm_bld_emit_enc_tail(builder *b, int i);
/* A homogeneous encoder's reduce after micro-batch mb's backward of
 * replica d's first stage, where mm_build_enc_early_syncs has one there
 * (every micro-batch but the last, which the DP tail carries, or under
 * ZeRO-3 the last too); 1 when it issued one, 0, or -1. */
int mm_bld_emit_homog_sync(builder *b, int d, int mb);
/* Size of b->enc_sync: every encoder's stages x its early reduces. */
size_t mm_bld_enc_sync_slots(const mm_build_spec *sp);
/* post-balance's all-to-alls: at = 0 the encoder phase's and the LLM
 * phase's forward ones (opening the iteration), at = 1 the gradients'. */
int mm_bld_emit_rebalance(builder *b, int at);

#endif
