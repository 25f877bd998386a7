/* build_llm.c - the LLM's part of one iteration's graph: each pass of a
 * virtual stage with its TP, CP, EP and ZeRO-3 communication, pipeline
 * transfers between stages, and the DP tail (gradient buckets, their
 * reduction and the optimizer step).
 * Not for: encoders (build_enc.c) or the iteration's order (build.c). */
#include "parallel/build_internal.h"
#include "hw/compress.h"

#include <stdlib.h>
#include <string.h>

/* ZeRO-3 all-gather of one layer's parameters before a pass, in
 * z3_gathers collectives of equal size (each pays its latency), prefetched
 * z3_prefetch layers ahead: it may start once the compute before the layer
 * that many places earlier is done (`prev`; the DP stream keeps the gathers
 * in order).  Without overlap (`stream` the compute stream) it runs right
 * before its layer's compute instead. */
static int64_t zero3_gather(builder *b, int d, int vs, int mb, int pass, int layer, int64_t prev, int stream)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    double bytes = (c->param_bytes > 0 ? c->param_bytes : c->grad_bytes) / c->chunks;
    size_t key = (((size_t)vs * sp->m + mb) * 3 + pass) * b->max_chunks + layer;
    int n = dp_group(b, stage_of(sp, vs));
    int count = sp->z3_gathers > 1 ? sp->z3_gathers : 1;
    /* DeepSpeed under full recompute: the recomputed forward fetches
     * the layer, and the backward fetches again what it released (its
     * gathers and the backward's in one op, before the pass) */
    if (pass == MM_PASS_B && sp->z3_regathers > 0 && !sp->z3_once) {
        count += sp->z3_regathers;
        bytes *= 1 + sp->z3_regather_share;
    }
    int64_t cl = shared_coll(b, &b->z3, 2 * key, MM_COLL_ALLGATHER, sp->lay.dp, count, bytes / count, n);
    return add_comm(b, rank_of(sp, d, vs), stream, MM_CAT_DP, vs, mb, layer, cl, prev);
}

/* ZeRO-3 reduce-scatter of one layer's gradients after `after` (its last
 * backward work), in z3_scatters collectives of equal size: on the DP
 * stream, or with `block` (no overlap) on the compute stream, which then
 * waits for it.  Returns the op or -1. */
static int64_t zero3_scatter(builder *b, int d, int vs, int mb, int pass, int layer, int64_t after, bool block)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    size_t key = ((((size_t)vs * sp->m + mb) * 3 + pass) * b->max_chunks + layer) * 2 + 1;
    int n = dp_group(b, stage_of(sp, vs));
    int count = sp->z3_scatters > 1 ? sp->z3_scatters : 1; /* equal pieces, each with its latency */
    int64_t cl = shared_coll(b, &b->z3, key, MM_COLL_REDUCESCATTER, sp->lay.dp, count,
                             c->grad_bytes / c->chunks / count, n);
    return add_comm(b, rank_of(sp, d, vs), block ? MM_STREAM_COMPUTE : MM_STREAM_DP, MM_CAT_DP, vs, mb, layer, cl,
                    after);
}

/* Whether virtual stage vs runs its layers' attention core as the CP
 * ring's steps (emit_cp_ring): a p2p ring with the core's step times */
static bool ring_steps(const builder *b, int vs)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    return b->cp > 1 && sp->cp_ring && sp->cp_bytes > 0 && !c->no_layers && c->cp_diag_s[0] + c->cp_off_s[0] > 0;
}

/* The attention core of one layer under context parallelism's p2p ring, as
 * Transformer Engine runs it (transformer_engine/pytorch/attention/
 * dot_product_attention/context_parallel.py AttnFuncWithCPAndKVP2P @
 * 9c61cd7e): cp compute steps on the compute stream (step 0 the diagonal,
 * `diag` seconds; the others `off`), and before each step i < cp-1 the
 * send/recv of the KV block step i+1 needs on the side stream, so that it
 * overlaps step i.  Step i+1 waits for that exchange; the exchange of step
 * i waits for step i-1, which read the buffer it receives into (two KV
 * buffers in flight).  A step's exposed time is max(0, exchange - step i).
 * Forward moves one KV block per step (cp_bytes), backward a KV and a dKV
 * block.  *tail: the op before the core in, the last step out. */
static int emit_cp_ring(builder *b, int d, int vs, int mb, int pass, int layer, int cat, double diag, double off,
                        int64_t *tail)
{
    const mm_build_spec *sp = b->sp;
    int s = stage_of(sp, vs), rank = rank_of(sp, d, vs);
    int64_t before = *tail, comm = -1;
    for (int i = 0; i < b->cp; i++) {
        int64_t waited = comm;
        if (i < b->cp - 1) {
            b->gbuf[0] = gpu(b, 0, 0, d, s);
            b->gbuf[1] = gpu(b, 0, 1, d, s);
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, pass == MM_PASS_F ? 1 : 2, sp->cp_bytes,
                                           b->gbuf, 2);
            if ((comm = add_comm(b, rank, MM_STREAM_SIDE, MM_CAT_CP, vs, mb, layer, cl, before)) < 0)
                return -1;
        }
        mm_op op = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = (uint8_t)cat, .layer = (int16_t)layer,
                    .stage = vs, .mb = mb, .coll = -1, .peer = -1, .dur_s = i == 0 ? diag : off};
        int64_t id = add(b, &op, before);
        if (id < 0 || (waited >= 0 && mm_graph_dep(b->g, (uint32_t)waited, (uint32_t)id)))
            return -1;
        before = id;
    }
    *tail = before;
    return 0;
}

/* A TP compress or decompress kernel (comm.compress.tp) of rank `rank` on
 * its compute stream after `after`: `bytes` of uncompressed activations at
 * `gb_s` GB/s, counted as TP time. */
static int64_t tp_kernel(builder *b, int rank, int vs, int mb, int layer, double bytes, double gb_s, int64_t after)
{
    mm_op o = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_TP, .layer = (int16_t)layer, .stage = vs,
               .mb = mb, .coll = -1, .peer = -1, .dur_s = mm_compress_kernel_s(bytes, gb_s)};
    return add(b, &o, after);
}

/* A layer's TP, CP and EP communication after its compute op (a pass with
 * communication: F or B): blocking ones extend *tail on the compute
 * stream, overlapped ones (tp_comm_overlap, the CP ring) run on the side
 * stream from layer_start and set *side_end. */
static int emit_layer_comm(builder *b, int d, int vs, int mb, int pass, int layer, double tp_bytes, int msgs,
                           int64_t layer_start, int64_t *tail, int64_t *side_end)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    int s = stage_of(sp, vs), rank = rank_of(sp, d, vs);
    /* a co-executed strand's traffic runs beside the other strand's compute */
    int blk = b->strand_comm ? MM_STREAM_SIDE : MM_STREAM_COMPUTE;
    /* comm.compress.tp: the blocking all-reduces (check.c refuses sequence
     * parallelism, overlap and strands) become a compress kernel over the
     * msgs messages, an all-gather of the tp ranks' compressed buffers and
     * the decompression of the tp - 1 others', as the DP reduction does */
    bool squeeze = sp->tp_ratio > 0 && !sp->sp && !sp->tp_overlap && !b->strand_comm;
    if (sp->lay.tp > 1 && tp_bytes > 0 && msgs > 0 && squeeze) {
        int n = tp_group(b, d, s);
        int64_t cl = mm_graph_add_coll(b->g, MM_COLL_ALLGATHER, 1, msgs, sp->lay.tp * tp_bytes / sp->tp_ratio,
                                       b->gbuf, n);
        if ((*tail = tp_kernel(b, rank, vs, mb, layer, msgs * tp_bytes, sp->tp_compress_gb_s, *tail)) < 0 ||
            (*tail = add_comm(b, rank, blk, MM_CAT_TP, vs, mb, layer, cl, *tail)) < 0 ||
            (*tail = tp_kernel(b, rank, vs, mb, layer, (sp->lay.tp - 1) * msgs * tp_bytes, sp->tp_decompress_gb_s,
                               *tail)) < 0)
            return -1;
    } else if (sp->lay.tp > 1 && tp_bytes > 0 && msgs > 0) {
        int n = tp_group(b, d, s);
        int kinds[2] = {sp->sp ? MM_COLL_ALLGATHER : MM_COLL_ALLREDUCE, MM_COLL_REDUCESCATTER};
        for (int q = 0; q < (sp->sp ? 2 : 1); q++) {
            int64_t cl = mm_graph_add_coll(b->g, kinds[q], 1, msgs, tp_bytes, b->gbuf, n);
            if (sp->tp_overlap) {
                int64_t o = add_comm(b, rank, MM_STREAM_SIDE, MM_CAT_TP, vs, mb, layer, cl, layer_start);
                if (o < 0)
                    return -1;
                *side_end = o;
            } else if ((*tail = add_comm(b, rank, blk, MM_CAT_TP, vs, mb, layer, cl, *tail)) < 0) {
                return -1;
            }
        }
    }
    if (b->cp > 1 && sp->cp_bytes > 0 && !ring_steps(b, vs)) {
        if (sp->cp_ring) {
            /* KV blocks around the ring while attention computes */
            b->gbuf[0] = gpu(b, 0, 0, d, s);
            b->gbuf[1] = gpu(b, 0, 1, d, s);
            int steps = (pass == MM_PASS_F ? 1 : 2) * (b->cp - 1);
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, steps, sp->cp_bytes, b->gbuf, 2);
            int64_t o = add_comm(b, rank, MM_STREAM_SIDE, MM_CAT_CP, vs, mb, layer, cl, layer_start);
            if (o < 0)
                return -1;
            *side_end = o;
        } else {
            for (int t = 0; t < b->cp; t++)
                b->gbuf[t] = gpu(b, 0, t, d, s);
            int64_t cl = mm_graph_add_coll(b->g, MM_COLL_ALLTOALL, 1, 4, sp->cp_bytes, b->gbuf, b->cp);
            if ((*tail = add_comm(b, rank, blk, MM_CAT_CP, vs, mb, layer, cl, *tail)) < 0)
                return -1;
        }
    }
    if (b->ep > 1 && sp->ep_bytes > 0 && layer < c->moe_chunks) {
        /* the expert group: ep_dp DP replicas x ep_tp of their TP ranks
         * (folded EP); the replicas are its members, the TP peers
         * collapsed into them move their own tokens over the network */
        int g0 = d - d % b->ep_dp, n = 0;
        for (int e = 0; e < b->ep_dp; e++)
            for (int t = 0; t < b->ep_tp; t++)
                b->gbuf[n++] = gpu(b, t, 0, g0 + e, s);
        size_t key = ((((size_t)(d / b->ep_dp) * b->V + vs) * sp->m + mb) * 2 + (pass == MM_PASS_B)) *
                     b->max_chunks + layer;
        int64_t cl = shared_coll(b, &b->epc, key, MM_COLL_ALLTOALL, b->ep_dp, 2, sp->ep_bytes, n);
        if (cl < 0)
            return mm_bld_fail(b, "the EP all-to-all of layer %d could not be created", layer);
        /* dropless: the forward's dispatch waits on the host for the token
         * counts (costs.c, ep_dispatch_sync); the host issues nothing more
         * until the GPU gets here */
        mm_op op = {.rank = rank, .stream = (uint8_t)blk, .cat = MM_CAT_EP, .layer = (int16_t)layer, .stage = vs,
                    .mb = mb, .coll = (int32_t)cl, .peer = -1,
                    .flags = pass == MM_PASS_F && sp->ep_dispatch_sync ? MM_OPF_HOST_SYNC : 0};
        if ((*tail = add(b, &op, *tail)) < 0)
            return -1;
    }
    return 0;
}

/* One pass's compute time, FLOPs (hw: with recomputation), TP message
 * bytes and count and op category, from the stage's or the micro-batch's
 * costs (ZB-H1 and ZB-2p split B into B and W); the setup of mm_bld_emit_pass. */
static void pass_work(const builder *b, int d, int vs, int pass, int mb, double *dur, double *flops, double *hw,
                      double *tp_bytes, int *msgs, int *cat)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    int zb = mm_schedule_splits_w(sp->schedule);
    /* per-micro-batch costs, when micro-batches differ */
    const mm_mb_cost *mc = sp->mb_costs ? &sp->mb_costs[pass_index(b, vs, d, mb)] : NULL;
    double fwd_s = mc ? mc->fwd_s : c->fwd_s, bwd_s = mc ? mc->bwd_s : c->bwd_s;
    double wgrad_s = mc ? mc->wgrad_s : c->wgrad_s;
    double fwd_fl = mc ? mc->fwd_flops : c->fwd_flops, bwd_fl = mc ? mc->bwd_flops : c->bwd_flops;
    double wgrad_fl = mc ? mc->wgrad_flops : c->wgrad_flops;
    double re_fl = mc ? mc->recompute_flops : c->recompute_flops;
    *tp_bytes = mc ? mc->tp_bytes : sp->tp_bytes;
    if (pass == MM_PASS_F) {
        *dur = fwd_s, *flops = fwd_fl, *hw = *flops, *msgs = sp->tp_msgs_fwd, *cat = MM_CAT_FWD;
    } else if (pass == MM_PASS_B) {
        *dur = zb ? bwd_s - wgrad_s : bwd_s;
        *flops = zb ? bwd_fl - wgrad_fl : bwd_fl;
        *hw = *flops + re_fl, *msgs = sp->tp_msgs_bwd, *cat = MM_CAT_BWD;
    } else {
        *dur = wgrad_s, *flops = wgrad_fl, *hw = *flops, *msgs = 0, *cat = MM_CAT_WGRAD;
    }
}

/* A layer's overlapped traffic (side_end) joins the compute stream in a
 * zero-time op after *tail, so the next layer keeps one predecessor. */
static int join_side(builder *b, int rank, int cat, int layer, int vs, int mb, int64_t side_end, int64_t *tail)
{
    mm_op join = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = (uint8_t)cat,
                  .layer = (int16_t)layer, .stage = vs, .mb = mb, .coll = -1, .peer = -1};
    int64_t j = add(b, &join, *tail);
    if (j < 0 || mm_graph_dep(b->g, (uint32_t)side_end, (uint32_t)j))
        return -1;
    *tail = j;
    return 0;
}

/* ZeRO-3: layer k's gather may start once layer k-depth-1's compute is
 * done (it runs while layers k-depth .. k-1 compute).  It is issued on
 * the DP stream right then, ahead of the gradient reduce-scatters of
 * the layers still computing, as FSDP2 and DeepSpeed issue the next
 * all-gather before the current reduce-scatter: the DP stream runs in
 * order, so a gather queued behind layer k-1's reduce-scatter would wait
 * for layer k-1's compute and no prefetch could hide it.  mm_bld_emit_pass's
 * `gathers` holds the depth + 1 issued ahead. */
enum { Z3_RING = 16 };

/* A pass's ZeRO-3 plan: the gathers' prefetch depth, whether it gathers
 * (z3), scatters gradients (z3_rs) and blocks the compute (z3_block); the
 * setup of mm_bld_emit_pass. */
static void z3_plan(const builder *b, int vs, int pass, int mb, bool comm_pass, int *depth, bool *z3, bool *z3_rs,
                    bool *z3_block)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    int zb = mm_schedule_splits_w(sp->schedule);
    *depth = sp->z3_no_prefetch    ? 0
             : sp->z3_prefetch > 1 ? (sp->z3_prefetch < Z3_RING ? sp->z3_prefetch : Z3_RING - 1)
                                   : 1;
    /* z3_once (FSDP2 on a pipeline, reshard_after_forward False and no
     * reshard after a backward but the last): only the first micro-batch's
     * forward gathers, every later pass finds the layers gathered */
    *z3 = sp->zero >= 3 && comm_pass && sp->lay.dp > 1 && (!sp->z3_once || (pass == MM_PASS_F && mb == 0));
    /* ZeRO-3's gradients leave after a layer's last backward work */
    bool grads_done = zb ? pass == MM_PASS_W : pass == MM_PASS_B;
    *z3_rs = sp->zero >= 3 && grads_done && sp->lay.dp > 1 && c->grad_bytes > 0; /* none when frozen */
    /* DeepSpeed's overlap_comm false: the gathers and reduce-scatters run
     * on the default stream (parameter_offload.py __allgather_stream,
     * stage3.py reduce_and_partition_stream), so each blocks the compute;
     * a prefetch is issued there too, ahead of the layer's compute, and
     * hides nothing */
    *z3_block = sp->zero >= 3 && !sp->overlap_grad_reduce;
}

/* z3_once: the gradients accumulated unsharded over the micro-batches
 * leave after the chunk's last backward, every layer's at once
 * (PipelineStage._post_backward runs each FSDP state's post_backward,
 * in module order); the schedules run micro-batch m-1's last.  *prev: the
 * pass's last op, moved past the scatters when they block. */
static int z3_once_scatter(builder *b, int d, int vs, int pass, int mb, int chunks, bool z3_block, int64_t *prev)
{
    const mm_build_spec *sp = b->sp;
    for (int k = 0; sp->z3_once && mb == sp->m - 1 && k < chunks; k++) {
        int64_t o = zero3_scatter(b, d, vs, mb, pass, k, *prev, z3_block);
        if (o < 0)
            return -1;
        *prev = z3_block ? o : *prev;
    }
    return 0;
}

/* ZeRO-3 under zero3.list_collectives: the host's views and copies of a
 * layer's collectives of this pass (mm_build_z3_list_count), after it has
 * waited for the GPU to reach the layer, all before the layer's first
 * kernel: DeepSpeed synchronizes the device before each gather
 * (partition_parameters.py _allgather_param: torch.cuda.synchronize())
 * and at each fetch (stage3.py _synchronize_communication), and
 * prefetches before it launches the module's forward (fetch_sub_module,
 * then prefetch_next_sub_modules, @ c83e49f9). */
static void z3_list_host(const mm_build_spec *sp, int pass, bool z3, bool z3_rs, mm_op *op)
{
    double extra = mm_build_z3_list_count(sp, pass, z3, z3_rs) * sp->z3_list_host_s;
    if (!(extra > 0))
        return;
    op->host_s = (float)(op->host_s + extra);
    op->lead_s = (float)(op->lead_s + extra);
    op->flags |= MM_OPF_HOST_SYNC;
}

/* Emits one pass of micro-batch mb of virtual stage vs on DP replica d:
 * one compute op per layer with the layer's TP, CP, EP and ZeRO-3
 * communication.  W passes have none but ZeRO-3's gradient scatter. */
int mm_bld_emit_pass(builder *b, int d, int vs, int pass, int mb, pass_ends *pe)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    int rank = rank_of(sp, d, vs), chunks = c->chunks;
    int zb = mm_schedule_splits_w(sp->schedule);
    double dur, flops, hw, tp_bytes;
    int msgs, cat;
    pass_work(b, d, vs, pass, mb, &dur, &flops, &hw, &tp_bytes, &msgs, &cat);
    /* the host issues the same kernels whatever the micro-batch's shape */
    double host = pass == MM_PASS_F ? c->fwd_host_s
                  : pass == MM_PASS_B ? (zb ? c->bwd_host_s - c->wgrad_host_s : c->bwd_host_s)
                                      : c->wgrad_host_s;
    double launches = pass == MM_PASS_F ? c->fwd_launches
                      : pass == MM_PASS_B ? (zb ? c->bwd_launches - c->wgrad_launches : c->bwd_launches)
                                          : c->wgrad_launches;
    bool comm_pass = pass != MM_PASS_W;
    /* the CP ring's core steps, out of the layer's op (their share of this
     * micro-batch's pass as of the stage's) */
    double ring_diag = 0, ring_off = 0, re_diag = 0, re_off = 0;
    if (comm_pass && ring_steps(b, vs)) {
        double stage_dur = pass == MM_PASS_F ? c->fwd_s : zb ? c->bwd_s - c->wgrad_s : c->bwd_s;
        double k = stage_dur > 0 ? dur / stage_dur : 0.0;
        int bw = pass == MM_PASS_B;
        /* recomputation (full, or selective: the core) runs the forward's
         * core again in the backward, ring and all (TE's forward is what
         * the checkpoint re-runs) */
        bool re = bw && c->recompute_flops > 0;
        double core = k * (c->cp_diag_s[bw] + (b->cp - 1) * c->cp_off_s[bw] +
                           (re ? c->cp_diag_s[0] + (b->cp - 1) * c->cp_off_s[0] : 0.0));
        double cap = dur / chunks;
        double fit = core > cap && core > 0 ? cap / core : 1.0; /* never more than the layer */
        ring_diag = fit * k * c->cp_diag_s[bw];
        ring_off = fit * k * c->cp_off_s[bw];
        re_diag = re ? fit * k * c->cp_diag_s[0] : 0.0;
        re_off = re ? fit * k * c->cp_off_s[0] : 0.0;
        dur -= chunks * (ring_diag + re_diag + (b->cp - 1) * (ring_off + re_off));
        if (dur < 0)
            dur = 0;
    }
    pe->first = UINT32_MAX;
    int64_t prev = b->last_compute[rank];
    if (pass == MM_PASS_F && (prev = mm_bld_emit_homogeneous(b, d, vs, pass, mb, prev, &pe->first)) < -1)
        return -1;
    int depth;
    bool z3, z3_rs, z3_block;
    z3_plan(b, vs, pass, mb, comm_pass, &depth, &z3, &z3_rs, &z3_block);
    int64_t gathers[Z3_RING];
    /* backward visits the layers from the last to the first */
#define LAYER_AT(k) (pass == MM_PASS_F ? (k) : chunks - 1 - (k))
    for (int j = 0; z3 && !z3_block && j <= depth && j < chunks; j++)
        if ((gathers[j % Z3_RING] = zero3_gather(b, d, vs, mb, pass, LAYER_AT(j), prev, MM_STREAM_DP)) < 0)
            return -1;
    for (int k = 0; k < chunks; k++) {
        int layer = LAYER_AT(k);
        int64_t gather = z3 && !z3_block ? gathers[k % Z3_RING] : -1;
        if (z3 && z3_block && (prev = zero3_gather(b, d, vs, mb, pass, layer, prev, MM_STREAM_COMPUTE)) < 0)
            return -1;
        mm_op op = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = (uint8_t)cat,
                    .layer = (int16_t)layer, .stage = vs, .mb = mb, .coll = -1, .peer = -1,
                    .dur_s = dur / chunks, .flops = flops / chunks, .hw_flops = hw / chunks};
        mm_build_op_host(&op, host / chunks, launches / chunks);
        z3_list_host(sp, pass, z3, z3_rs, &op);
        int64_t layer_start = prev;
        int64_t id = add(b, &op, prev);
        if (id < 0 || (gather >= 0 && mm_graph_dep(b->g, (uint32_t)gather, (uint32_t)id)))
            return -1;
        if (pe->first == UINT32_MAX)
            pe->first = (uint32_t)id;
        b->layer_ops[layer] = (uint32_t)id;
        int64_t tail = id;      /* what the next layer waits for */
        int64_t side_end = -1;  /* overlapped communication of this layer */
        if (comm_pass && !c->no_layers &&
            emit_layer_comm(b, d, vs, mb, pass, layer, tp_bytes, msgs, layer_start, &tail, &side_end))
            return -1;
        if (side_end >= 0 && join_side(b, rank, cat, layer, vs, mb, side_end, &tail))
            return -1;
        if (re_diag + re_off > 0 && emit_cp_ring(b, d, vs, mb, MM_PASS_F, layer, cat, re_diag, re_off, &tail))
            return -1;
        if (ring_diag + ring_off > 0 && emit_cp_ring(b, d, vs, mb, pass, layer, cat, ring_diag, ring_off, &tail))
            return -1;
        if (z3 && !z3_block && k + depth + 1 < chunks &&
            (gathers[(k + depth + 1) % Z3_RING] =
                 zero3_gather(b, d, vs, mb, pass, LAYER_AT(k + depth + 1), tail, MM_STREAM_DP)) < 0)
            return -1;
        if (z3_rs && !sp->z3_once) { /* every micro-batch; blocking, the next layer waits */
            int64_t o = zero3_scatter(b, d, vs, mb, pass, layer, tail, z3_block);
            if (o < 0)
                return -1;
            tail = z3_block ? o : tail;
        }
        prev = tail;
    }
#undef LAYER_AT
    if (pass == MM_PASS_B && (prev = mm_bld_emit_homogeneous(b, d, vs, pass, mb, prev, NULL)) < -1)
        return -1;
    if (z3_rs && z3_once_scatter(b, d, vs, pass, mb, chunks, z3_block, &prev))
        return -1;
    pe->last = (uint32_t)prev;
    return 0;
}

/* DHelix's co-execution (Wang et al., arXiv 2411.15871, its strand
 * interleaving): one pass of micro-batches mb0 and mb0 + 1 as two
 * strands.  The compute stream alternates the strands layer by layer
 * (mb0's layer k, then mb0 + 1's); each layer's TP, CP and EP traffic
 * goes on the side stream after its strand's compute, and the strand's
 * next layer waits for it, so one strand's traffic runs while the other
 * computes (and slows it: gpu.overlap_slowdown).  On return layer_ops
 * holds mb0's layers and layer_ops2 mb0 + 1's.  The spec checks refuse
 * what a pair does not run (ZeRO-3, the CP ring's steps, W passes,
 * homogeneous encoders: check.c). */
int mm_bld_emit_pair(builder *b, int d, int vs, int pass, int mb0, pass_ends *pe0, pass_ends *pe1)
{
    const mm_build_spec *sp = b->sp;
    const mm_stage_cost *c = &sp->stages[vs];
    int rank = rank_of(sp, d, vs), chunks = c->chunks;
    double host = pass == MM_PASS_F ? c->fwd_host_s : c->bwd_host_s;
    double launches = pass == MM_PASS_F ? c->fwd_launches : c->bwd_launches;
    pass_ends *pe[2] = {pe0, pe1};
    uint32_t *ops[2] = {b->layer_ops, b->layer_ops2};
    double dur[2], flops[2], hw[2], tp_bytes[2];
    int msgs[2], cat[2];
    int64_t tail[2];
    for (int i = 0; i < 2; i++) {
        pass_work(b, d, vs, pass, mb0 + i, &dur[i], &flops[i], &hw[i], &tp_bytes[i], &msgs[i], &cat[i]);
        pe[i]->first = UINT32_MAX;
        tail[i] = b->last_compute[rank];
    }
    b->strand_comm = true;
    int rc = 0;
    for (int k = 0; k < chunks && rc == 0; k++) {
        int layer = pass == MM_PASS_F ? k : chunks - 1 - k;
        for (int i = 0; i < 2 && rc == 0; i++) {
            mm_op op = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = (uint8_t)cat[i],
                        .layer = (int16_t)layer, .stage = vs, .mb = mb0 + i, .coll = -1, .peer = -1,
                        .dur_s = dur[i] / chunks, .flops = flops[i] / chunks, .hw_flops = hw[i] / chunks};
            mm_build_op_host(&op, host / chunks, launches / chunks);
            int64_t id = add(b, &op, tail[i]), side_end = -1;
            if (id < 0) {
                rc = -1;
                break;
            }
            if (pe[i]->first == UINT32_MAX)
                pe[i]->first = (uint32_t)id;
            ops[i][layer] = (uint32_t)id;
            tail[i] = id;
            if (!c->no_layers)
                rc = emit_layer_comm(b, d, vs, mb0 + i, pass, layer, tp_bytes[i], msgs[i], id, &tail[i], &side_end);
        }
    }
    b->strand_comm = false;
    pe0->last = (uint32_t)tail[0];
    pe1->last = (uint32_t)tail[1];
    return rc;
}

/* A compress or decompress kernel (comm.compress) of rank `rank` on its
 * compute stream: `bytes` of uncompressed data at `gb_s` GB/s. */
static int64_t compress_kernel(builder *b, int rank, int vs, int mb, double bytes, double gb_s, int64_t after)
{
    mm_op o = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .layer = -1, .stage = vs, .mb = mb,
               .coll = -1, .peer = -1, .dur_s = mm_compress_kernel_s(bytes, gb_s)};
    return add(b, &o, after);
}

/* A transfer of one micro-batch's activation (or gradient) between the same
 * DP replica of two adjacent virtual stages.  With Megatron's scatter-gather
 * optimisation each of the tp x cp GPU pairs carries its share in parallel,
 * so one representative pair is timed with bytes/(tp cp).  With measured
 * times fed in (p2p_s > 0) the transfer is a fixed delay. */
int mm_bld_emit_p2p(builder *b, int d, int from_vs, int to_vs, int mb, uint32_t after, uint32_t before)
{
    const mm_build_spec *sp = b->sp;
    /* ZB-V's turn (chunk p-1 to chunk p) stays on rank p-1: no send, the
     * pass waits for the other chunk's alone */
    if (sp->schedule == MM_SCHEDULE_ZB_V && stage_of(sp, from_vs) == stage_of(sp, to_vs))
        return mm_graph_dep(b->g, after, before) ? -1 : 0;
    mm_op op = {.rank = rank_of(sp, d, from_vs), .stream = MM_STREAM_NONE, .cat = MM_CAT_PP,
                .layer = -1, .stage = from_vs, .mb = mb, .coll = -1, .peer = rank_of(sp, d, to_vs)};
    double raw = 0; /* comm.compress.pp: the uncompressed bytes of the sender's share */
    if (sp->p2p_s > 0) {
        op.dur_s = sp->p2p_s;
    } else {
        int pair[2] = {gpu(b, 0, 0, d, stage_of(sp, from_vs)), gpu(b, 0, 0, d, stage_of(sp, to_vs))};
        int up = from_vs < to_vs ? from_vs : to_vs; /* the boundary's upper stage */
        double bytes = sp->mb_costs ? sp->mb_costs[pass_index(b, up, d, mb)].p2p_bytes : sp->p2p_bytes;
        if (sp->pp_ratio > 0) {
            raw = bytes / (sp->lay.tp * b->cp);
            bytes /= sp->pp_ratio;
        }
        int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, bytes / (sp->lay.tp * b->cp), pair, 2);
        if (cl < 0)
            return -1;
        op.coll = (int32_t)cl;
        /* Megatron batches the sends (batch_isend_irecv: the PP group's
         * communicator) unless the interleaved schedule overlaps them
         * (overlap_p2p_comm, its default there): single isend/irecv, which
         * PyTorch runs on a communicator of the pair (ProcessGroupNCCL
         * pointToPoint), so those keep comm 0. */
        if (sp->gpus_per_node > 0 && sp->schedule != MM_SCHEDULE_INTERLEAVED) {
            int nodes = 0, last = -1;
            for (int s = 0; s < sp->lay.pp; s++) {
                int node = gpu(b, 0, 0, d, s) / sp->gpus_per_node;
                nodes += node != last, last = node; /* stages ascend in GPU id under any order */
            }
            mm_graph_set_comm(b->g, (uint32_t)cl, sp->lay.pp, nodes); /* this replica's GPUs */
        }
    }
    if (raw > 0) { /* compressed on the sender before, decompressed on the receiver after */
        mm_op k = {.rank = op.rank, .stream = MM_STREAM_NONE, .cat = MM_CAT_PP, .layer = -1, .stage = from_vs,
                   .mb = mb, .coll = -1, .peer = -1, .dur_s = mm_compress_kernel_s(raw, sp->pp_compress_gb_s)};
        int64_t c = mm_graph_add_op(b->g, &k);
        if (c < 0 || mm_graph_dep(b->g, after, (uint32_t)c))
            return -1;
        after = (uint32_t)c;
        k.rank = op.peer, k.stage = to_vs, k.dur_s = mm_compress_kernel_s(raw, sp->pp_decompress_gb_s);
        int64_t dc = mm_graph_add_op(b->g, &k);
        if (dc < 0 || mm_graph_dep(b->g, (uint32_t)dc, before))
            return -1;
        before = (uint32_t)dc;
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
int mm_bld_buckets(const builder *b, int s, int *bucket_of)
{
    const mm_build_spec *sp = b->sp;
    int nb = 0;
    double fill = 0;
    bool split = sp->bucket_bytes > 0 && (sp->overlap_grad_reduce || sp->overlap_param_gather);
    for (int v = sp->lay.vpp - 1; v >= 0; v--) {
        const mm_stage_cost *c = &sp->stages[mm_schedule_vstage(sp->schedule, sp->lay.pp, s, v)];
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

double mm_bld_bucket_bytes_of(const builder *b, int s, const int *bucket_of, int bucket, int params)
{
    const mm_build_spec *sp = b->sp;
    double sum = 0;
    for (int v = 0; v < sp->lay.vpp; v++) {
        const mm_stage_cost *c = &sp->stages[mm_schedule_vstage(sp->schedule, sp->lay.pp, s, v)];
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
 * (or grad_every_mb) the buckets' reductions were emitted during the
 * backward already.  A
 * homogeneous encoder's share is not in the buckets (they hold the LLM's
 * layers): its gradients are reduced here after its backward, the last
 * of stage 0's, and its parameters gathered after the step, overlap or
 * not. */
int mm_bld_emit_dp_tail(builder *b, int s, const uint32_t *last_op)
{
    const mm_build_spec *sp = b->sp;
    double grad = 0, opt = 0, params = 0, enc_grad = 0, enc_params = 0, opt_host = 0, opt_launches = 0;
    for (int v = 0; v < sp->lay.vpp; v++) {
        const mm_stage_cost *c = &sp->stages[mm_schedule_vstage(sp->schedule, sp->lay.pp, s, v)];
        grad += c->grad_bytes;
        opt_host += c->opt_host_s;
        opt_launches += c->opt_launches;
        /* the updated parameters are gathered in their own 16-bit dtype,
         * not the gradients' (fp32 under Megatron's bf16 default), as the
         * overlapped gathers are (mm_bld_bucket_bytes_of) */
        if (c->grad_bytes > 0) /* a frozen stage updates nothing to gather */
            params += c->param_bytes > 0 ? c->param_bytes : c->grad_bytes;
        opt += c->opt_s;
    }
    for (int i = 0; i < sp->n_enc && s == 0; i++)
        if (sp->enc[i].placement == MM_ENC_HOMOGENEOUS && !sp->enc[i].frozen) {
            enc_grad += sp->enc[i].grad_bytes; /* one bucket with stage 0's */
            enc_params += sp->enc[i].param_bytes > 0 ? sp->enc[i].param_bytes : sp->enc[i].grad_bytes;
            opt += sp->enc[i].opt_s;
        }
    /* the LLM's buckets left during the backward with the overlap, or
     * after every micro-batch's (grad_every_mb, build.c) */
    bool early = sp->overlap_grad_reduce || (sp->zero < 3 && mm_build_grad_syncs(sp) > 1);
    double rs_bytes = (early ? 0 : grad) + enc_grad;
    double ag_bytes = (sp->overlap_param_gather ? 0 : params) + enc_params;
    int rc = 0;
    bool dist = sp->zero >= 1 && sp->zero <= 2;
    int64_t rs = -1, ag = -1;
    int n = dp_group(b, s);
    /* comm.compress.dp: a lossy compressor's buffers cannot be summed on
     * the way, so the all-reduce becomes an all-gather of every rank's
     * compressed gradients (nccl-tests' S: dp of them), between a compress
     * kernel and the decompression of the dp - 1 others' (Xu et al., arXiv
     * 2409.02423, compression-assisted MPI collectives) */
    bool squeeze = sp->dp_ratio > 0 && !dist && sp->zero < 3 && sp->lay.dp > 1 && rs_bytes > 0;
    if (squeeze)
        rs = mm_graph_add_coll(b->g, MM_COLL_ALLGATHER, sp->lay.dp, 1, sp->lay.dp * rs_bytes / sp->dp_ratio, b->gbuf, n);
    else if (sp->lay.dp > 1 && rs_bytes > 0 && sp->zero < 3)
        rs = mm_graph_add_coll(b->g, dist ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE, sp->lay.dp, 1, rs_bytes, b->gbuf,
                               n);
    if (sp->lay.dp > 1 && ag_bytes > 0 && dist)
        ag = mm_graph_add_coll(b->g, MM_COLL_ALLGATHER, sp->lay.dp, 1, ag_bytes, b->gbuf, n);
    for (int d = 0; d < b->D && rc == 0; d++) {
        int rank = d + sp->lay.dp * s;
        int64_t prev = last_op[rank];
        if (squeeze && (prev = compress_kernel(b, rank, s, -1, rs_bytes, sp->dp_compress_gb_s, prev)) < 0)
            return -1;
        if (rs >= 0 && (prev = add_comm(b, rank, MM_STREAM_DP, MM_CAT_DP, s, -1, -1, rs, prev)) < 0)
            return -1;
        if (squeeze && (prev = compress_kernel(b, rank, s, -1, (sp->lay.dp - 1) * rs_bytes, sp->dp_decompress_gb_s,
                                               prev)) < 0)
            return -1;
        int64_t dp_before = b->last_dp[rank];
        mm_op o = {.rank = rank, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_OPT, .layer = -1,
                   .stage = s, .mb = -1, .coll = -1, .peer = -1, .dur_s = opt,
                   .flags = sp->host_sync_step ? MM_OPF_HOST_SYNC : 0};
        mm_build_op_host(&o, opt_host, opt_launches);
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
    return rc ? rc : mark(b);
}
