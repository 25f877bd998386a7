/* build_bubbles.c - a colocated encoder in the LLM's bubbles
 * (train.encoder_schedule bubbles), after Optimus (Feng et al., "Optimus:
 * Accelerating Large-Scale Multi-Modal LLM Training by Bubble
 * Exploitation", arXiv 2408.03505): the encoder keeps its own plan and its
 * kernels run where the LLM's GPUs would otherwise idle.  Its plan: TP
 * tp_enc inside an LLM rank (whose tp x cp GPUs hold k = tp x cp / tp_enc
 * encoder groups), and either
 *  - pp_enc 1: the whole encoder on every GPU; the images of LLM
 *    micro-batch j of replica d spread evenly over the replica's pp ranks
 *    (1 / (pp k) per group), each rank's share sent to the first stage; or
 *  - pp_enc = the LLM's pp: the encoder's layers split over the replica's
 *    ranks, its stage se on LLM stage pp-1-se, so that its first layers
 *    run where the warm-up bubble is longest and its last on the first
 *    stage, which takes the output where it is made; a micro-batch's
 *    images spread over a rank's k groups, activations passed down the
 *    ranks.
 * Each rank runs one kernel per encoder layer of its share on its fill
 * stream, forward before the first stage's LLM forward of j, backward
 * after the first stage's LLM backward of j (gradients go back the way the
 * outputs came).  The executor (exec/exec.h) starts a fill kernel only
 * when the rank's GPU has no LLM kernel to run, so the encoder fills the
 * pipeline's warm-up, cool-down and waiting time, and what does not fit
 * delays the LLM by at most one layer kernel per gap.
 * Not for: the serial colocated placement (build_enc.c), the LLM's
 * passes (build_llm.c), the encoder's gradient reduction (build_enc.c's
 * tail, after each rank's last fill kernel). */
#include "parallel/build_internal.h"

/* Whether encoder i's layers are split over the LLM's pipeline ranks. */
static bool split_layers(const builder *b, int i) { return b->sp->enc[i].pp > 1; }

/* LLM stage s's kernels of micro-batch j's encoder pass: its layers [lo,
 * hi) of the encoder's `n`, over `share` of the images on each of its
 * encoder groups.  Returns the last op, or -1; *first: the first. */
static int64_t fill_pass(builder *b, int i, int d, int s, int j, int pass, int lo, int hi, double share,
                         uint32_t *first)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    const mm_enc_mb_cost *c = &e->mb[(size_t)d * sp->m + j];
    bool fwd = pass == MM_PASS_F;
    int n = e->chunks;
    /* time: one group's (mm_enc_mb_cost is one encoder TP group's whole
     * pass) on `share` of the images, per layer; FLOPs: the rank's GPUs do
     * `share` x k of the micro-batch's */
    double k = (double)sp->lay.tp * b->cp / e->tp;
    double dur = (fwd ? c->fwd_s : c->bwd_s) * share / n, fl = (fwd ? c->fwd_flops : c->bwd_flops) * share * k / n;
    double hw = fl + (fwd ? 0 : c->recompute_flops * share * k / n);
    int64_t tail = -1;
    for (int q = 0; q < hi - lo; q++) {
        int layer = fwd ? lo + q : hi - 1 - q;
        mm_op op = {.rank = d + sp->lay.dp * s, .stream = MM_STREAM_FILL, .cat = fwd ? MM_CAT_FWD : MM_CAT_BWD,
                    .module = (uint8_t)(i + 1), .layer = (int16_t)layer, .stage = -1, .mb = j, .coll = -1,
                    .peer = -1, .dur_s = dur, .flops = fl, .hw_flops = hw};
        if ((tail = add(b, &op, tail)) < 0)
            return -1;
        if (q == 0)
            *first = (uint32_t)tail;
    }
    return tail;
}

/* Micro-batch j's transfer of `by` bytes (each LLM TP pair's) from LLM
 * stage sa to sb of replica d, between ops `from` and `to`; an edge when
 * nothing moves. */
static int hand_over(builder *b, int i, int d, int sa, int sb, int j, double by, uint32_t from, uint32_t to)
{
    const mm_build_spec *sp = b->sp;
    if (sa == sb || by <= 0)
        return mm_graph_dep(b->g, from, to) ? -1 : 0;
    int ra = d + sp->lay.dp * sa, rb = d + sp->lay.dp * sb;
    int pair[2] = {gpu(b, 0, 0, d, sa), gpu(b, 0, 0, d, sb)};
    int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, by, pair, 2);
    mm_op op = {.rank = ra, .stream = MM_STREAM_NONE, .cat = MM_CAT_PP, .module = (uint8_t)(i + 1), .layer = -1,
                .stage = -1, .mb = j, .coll = (int32_t)cl, .peer = rb};
    int64_t id = cl < 0 ? -1 : mm_graph_add_op(b->g, &op);
    if (id < 0 || mm_graph_dep(b->g, from, (uint32_t)id) || mm_graph_dep(b->g, (uint32_t)id, to))
        return -1;
    return 0;
}

/* pp_enc 1: every rank encodes 1/(pp k) of each micro-batch's images with
 * all layers and hands its output to the first stage. */
static int emit_split_images(builder *b, int i, int d, int s)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    double share = (double)e->tp / ((double)sp->lay.tp * b->cp * sp->lay.pp);
    uint32_t first = 0;
    int rc = 0;
    /* every forward first (the fill stream runs in order, and a forward
     * needs nothing), then the backwards as their gradients come back */
    for (int j = 0; j < sp->m && rc == 0; j++) {
        double by = e->mb[(size_t)d * sp->m + j].out_bytes / sp->lay.pp / sp->lay.tp;
        int64_t t = fill_pass(b, i, d, s, j, MM_PASS_F, 0, e->chunks, share, &first);
        rc = t < 0 ? -1 : hand_over(b, i, d, s, 0, j, by, (uint32_t)t, b->fe[pass_index(b, 0, d, j)].first);
    }
    for (int j = 0; j < sp->m && rc == 0 && !e->frozen; j++) {
        double by = e->mb[(size_t)d * sp->m + j].out_bytes / sp->lay.pp / sp->lay.tp;
        int64_t t = fill_pass(b, i, d, s, j, MM_PASS_B, 0, e->chunks, share, &first);
        rc = t < 0 ? -1 : hand_over(b, i, d, 0, s, j, by, b->be[pass_index(b, 0, d, j)].last, first);
    }
    return rc;
}

/* pp_enc = pp: encoder stage se (layers [lo, hi)) on LLM stage pp-1-se,
 * every rank's k groups on 1/k of each micro-batch's images; the passes of
 * one micro-batch chained down the ranks (forward: from the last LLM
 * stage to the first; backward: back up); prev_f[j], prev_b[j]: the last
 * op of the pass of micro-batch j on the rank emitted before. */
static int emit_split_layers(builder *b, int i, int d, uint32_t *prev_f, uint32_t *prev_b)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int P = sp->lay.pp, lo = 0, rc = 0;
    double share = (double)e->tp / ((double)sp->lay.tp * b->cp);
    for (int se = 0; se < P && rc == 0; se++) {
        int s = P - 1 - se, n = e->chunks / P + (se < e->chunks % P), hi = lo + n;
        uint32_t first = 0;
        for (int j = 0; j < sp->m && rc == 0; j++) {
            int64_t t = fill_pass(b, i, d, s, j, MM_PASS_F, lo, hi, share, &first);
            if (t >= 0 && se > 0) /* the previous encoder stage's activations, one stage up */
                rc = hand_over(b, i, d, s + 1, s, j, e->mb[(size_t)d * sp->m + j].act_bytes / sp->lay.tp / b->cp,
                               prev_f[j], first);
            if (t >= 0 && se == P - 1 && rc == 0) /* the first stage takes the output */
                rc = mm_graph_dep(b->g, (uint32_t)t, b->fe[pass_index(b, 0, d, j)].first) ? -1 : 0;
            rc = t < 0 ? -1 : rc;
            prev_f[j] = (uint32_t)t;
        }
        lo = hi;
    }
    /* backward: from the encoder's last stage (LLM stage 0) to its first */
    int hi = e->chunks;
    for (int se = P - 1; se >= 0 && rc == 0 && !e->frozen; se--) {
        int s = P - 1 - se, n = e->chunks / P + (se < e->chunks % P);
        for (int j = 0; j < sp->m && rc == 0; j++) {
            uint32_t first = 0;
            int64_t t = fill_pass(b, i, d, s, j, MM_PASS_B, hi - n, hi, share, &first);
            if (t >= 0 && se == P - 1)
                rc = mm_graph_dep(b->g, b->be[pass_index(b, 0, d, j)].last, first) ? -1 : 0;
            else if (t >= 0) /* the next encoder stage's input gradient, one stage down */
                rc = hand_over(b, i, d, s - 1, s, j, e->mb[(size_t)d * sp->m + j].act_bytes / sp->lay.tp / b->cp,
                               prev_b[j], first);
            rc = t < 0 ? -1 : rc;
            prev_b[j] = (uint32_t)t;
        }
        hi -= n;
    }
    return rc;
}

int mm_bld_emit_bubbles(builder *b, int i)
{
    const mm_build_spec *sp = b->sp;
    uint32_t *prev = split_layers(b, i) ? malloc(2 * (size_t)sp->m * sizeof *prev) : NULL;
    if (split_layers(b, i) && !prev)
        return -1;
    int rc = 0;
    for (int d = 0; d < b->D && rc == 0; d++) {
        if (split_layers(b, i))
            rc = emit_split_layers(b, i, d, prev, prev + sp->m);
        for (int s = 0; s < sp->lay.pp && rc == 0 && !split_layers(b, i); s++)
            rc = emit_split_images(b, i, d, s);
    }
    free(prev);
    return rc ? rc : mark(b);
}
