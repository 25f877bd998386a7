/* build_bubbles.c - a colocated encoder in the LLM's bubbles
 * (train.encoder_schedule bubbles), after Optimus (Feng et al., "Optimus:
 * Accelerating Large-Scale Multi-Modal LLM Training by Bubble
 * Exploitation", arXiv 2408.03505): the encoder keeps its own plan (its
 * TP degree, its DP over all of the LLM's GPUs) and its kernels run where
 * the LLM's GPUs would otherwise idle.  The images of LLM micro-batch j of
 * replica d are spread evenly over that replica's pp ranks (a rank's
 * tp x cp GPUs hold tp x cp / tp_enc encoder replicas); each rank runs
 * its share's forward as one kernel per encoder layer on its fill stream
 * and sends the output to the first stage, where the LLM's forward of j
 * waits for every share; after the LLM's backward of j on the first
 * stage the gradients go back and each rank runs its share's backward
 * kernels.  The executor (exec/exec.h) starts a fill kernel only when the
 * rank's GPU has no LLM kernel to run, so the encoder fills the
 * pipeline's warm-up, cool-down and waiting time, and what does not fit
 * delays the LLM by at most one layer kernel per gap.
 * Not for: the serial colocated placement (build_enc.c), the LLM's
 * passes (build_llm.c), the encoder's gradient reduction (build_enc.c's
 * tail, after each rank's last fill kernel). */
#include "parallel/build_internal.h"

/* Rank (d, s)'s layer kernels of its share of micro-batch j's encoder
 * pass.  Returns the last, or -1; *first: the first. */
static int64_t fill_pass(builder *b, int i, int d, int s, int j, int pass, uint32_t *first)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    const mm_enc_mb_cost *c = &e->mb[(size_t)d * sp->m + j];
    bool fwd = pass == MM_PASS_F;
    /* time: 1/pp of the images on each of the rank's tp*cp/tp_enc encoder
     * groups, each as fast as one (mm_enc_mb_cost is one group's);
     * FLOPs: the rank's GPUs do 1/pp of the micro-batch's */
    double share = (double)e->tp / ((double)sp->lay.tp * b->cp * sp->lay.pp), fshare = 1.0 / sp->lay.pp;
    double dur = (fwd ? c->fwd_s : c->bwd_s) * share, fl = (fwd ? c->fwd_flops : c->bwd_flops) * fshare;
    double hw = fl + (fwd ? 0 : c->recompute_flops * fshare);
    int n = e->chunks;
    int64_t tail = -1;
    for (int k = 0; k < n; k++) {
        mm_op op = {.rank = d + sp->lay.dp * s, .stream = MM_STREAM_FILL, .cat = fwd ? MM_CAT_FWD : MM_CAT_BWD,
                    .module = (uint8_t)(i + 1), .layer = (int16_t)(fwd ? k : n - 1 - k), .stage = -1, .mb = j,
                    .coll = -1, .peer = -1, .dur_s = dur / n, .flops = fl / n, .hw_flops = hw / n};
        if ((tail = add(b, &op, tail)) < 0)
            return -1;
        if (k == 0)
            *first = (uint32_t)tail;
    }
    return tail;
}

/* Stage s's share of micro-batch j between the encoder and the first
 * stage (fwd: its output there; else its gradient back): a transfer of
 * out_bytes / pp over each TP pair, or an edge when s is the first stage
 * or nothing moves.  `from` and `to` are op ids. */
static int hand_over(builder *b, int i, int d, int s, int j, bool fwd, uint32_t from, uint32_t to)
{
    const mm_build_spec *sp = b->sp;
    double by = b->sp->enc[i].mb[(size_t)d * sp->m + j].out_bytes / sp->lay.pp / sp->lay.tp;
    if (s == 0 || by <= 0)
        return mm_graph_dep(b->g, from, to) ? -1 : 0;
    int rs = d + sp->lay.dp * s, r0 = d;
    int pair[2] = {gpu(b, 0, 0, d, s), gpu(b, 0, 0, d, 0)};
    if (!fwd)
        pair[0] = gpu(b, 0, 0, d, 0), pair[1] = gpu(b, 0, 0, d, s);
    int64_t cl = mm_graph_add_coll(b->g, MM_COLL_SENDRECV, 1, 1, by, pair, 2);
    mm_op op = {.rank = fwd ? rs : r0, .stream = MM_STREAM_NONE, .cat = MM_CAT_PP, .module = (uint8_t)(i + 1),
                .layer = -1, .stage = -1, .mb = j, .coll = (int32_t)cl, .peer = fwd ? r0 : rs};
    int64_t id = cl < 0 ? -1 : mm_graph_add_op(b->g, &op);
    if (id < 0 || mm_graph_dep(b->g, from, (uint32_t)id) || mm_graph_dep(b->g, (uint32_t)id, to))
        return -1;
    return 0;
}

int mm_bld_emit_bubbles(builder *b, int i)
{
    const mm_build_spec *sp = b->sp;
    const mm_enc_spec *e = &sp->enc[i];
    int rc = 0;
    for (int d = 0; d < b->D && rc == 0; d++)
        for (int s = 0; s < sp->lay.pp && rc == 0; s++) {
            /* every forward first (the fill stream runs in order, and a
             * forward needs nothing), then the backwards as their
             * gradients come back */
            uint32_t first = 0;
            for (int j = 0; j < sp->m && rc == 0; j++) {
                int64_t t = fill_pass(b, i, d, s, j, MM_PASS_F, &first);
                rc = t < 0 ? -1 : hand_over(b, i, d, s, j, true, (uint32_t)t, b->fe[pass_index(b, 0, d, j)].first);
            }
            for (int j = 0; j < sp->m && rc == 0 && !e->frozen; j++) {
                int64_t t = fill_pass(b, i, d, s, j, MM_PASS_B, &first);
                rc = t < 0 ? -1 : hand_over(b, i, d, s, j, false, b->be[pass_index(b, 0, d, j)].last, first);
            }
        }
    return rc ? rc : mark(b);
}
