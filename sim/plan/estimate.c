/* estimate.c - the analytic pre-score (mm_sim_estimate): the same stage
 * and encoder costs and memory as mm_sim_run, combined by the pipeline
 * formula documented in estimate.h (with a workload file, over each
 * iteration's drawn micro-batches).
 * Not for: event-level timing (iterate.c). */
#include "cost/cost_internal.h"
#include "cost/loader.h"
#include "cost/outersync.h"
#include "cost/swap.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw/compress.h"
#include "hw/net.h"
#include "exec/dataload.h"
#include "exec/exec.h"
#include "exec/run.h"
#include "plan/estimate.h"
#include "plan/span.h"

/* ranks 0, stride, 2 stride, ...: the group a collective is timed over */
static const int *group(int *ranks, int n, int stride)
{
    for (int i = 0; i < n; i++)
        ranks[i] = i * stride;
    return ranks;
}

/* Exposed seconds of a DP collective of `t` seconds in all, split into
 * `buckets` per-layer buckets, when `on` it overlaps `hide` seconds of one
 * micro-batch's pass: Megatron's overlap_grad_reduce starts a bucket's
 * reduce once its gradients are ready in the last micro-batch's backward,
 * overlap_param_gather waits for a bucket's gather before that layer's
 * forward of the first micro-batch (megatron/core/distributed/
 * param_and_grad_buffer.py), and the build emits them so.  The last (first)
 * bucket stays exposed, whatever does not fit behind the pass too, and the
 * hidden part slows the compute it overlaps (mm_overlap_delay), as the
 * executor charges it.  (The executor sees the schedule; this sees one
 * pass, so it is the pre-score's approximation, corrected by rescoring.) */
static double overlapped_dp(double t, bool on, double hide, int buckets, double slowdown)
{
    if (!on || t <= 0)
        return t;
    double last = t / buckets, behind = t - last;
    double hidden = fmin(behind, hide);
    return last + (behind - hidden) + mm_overlap_delay(hidden, slowdown);
}

/* Exposed seconds of a DP collective of `t` seconds that runs beside
 * `hide` seconds of compute: what does not fit, plus the contention on
 * the compute it overlaps (a non-last micro-batch's reduce under
 * grad_every_mb, behind the next micro-batch's passes). */
static double behind(double t, double hide, double slowdown)
{
    return fmax(0, t - hide) + mm_overlap_delay(fmin(t, hide), slowdown);
}

/* The DP term: the gradient reduce(-scatter) `rs` of the stage's whole
 * gradients and the 16-bit parameter all-gather `ag` (ZeRO), each as
 * often as the build issues it (mm_build_grad_syncs: once, or after every
 * micro-batch), with what the overlap hides.  Under ZeRO-3 without
 * overlap every micro-batch gathers the parameters before its forward and
 * its backward and reduce-scatters the gradients, all on the compute
 * stream (mm_build_z3_gather_passes gathers, n scatters).  With z3_once
 * (FSDP2 on a pipeline) the gathers run once, prefetched behind the first
 * forward, and the reduce-scatters once after the last backward, where no
 * compute of the stage is left to hide them. */
static double dp_sync(const mm_build_spec *sp, double rs, double ag, double fwd1, double bwd1, int chunks,
                      double k)
{
    int n = mm_build_grad_syncs(sp);
    /* the backward's gathers: more under DeepSpeed's full recompute (the
     * recomputed forward's, then what it released) */
    double agb = ag * (1 + (sp->z3_once ? 0 : sp->z3_regather_share));
    if (sp->zero >= 3 && !sp->overlap_grad_reduce)
        return n * rs + (double)mm_build_z3_gather_passes(sp) / 2.0 * (ag + agb); /* 2 a micro-batch, or once */
    if (sp->zero >= 3 && sp->z3_once)
        return rs + overlapped_dp(ag, true, fwd1, chunks, k);
    if (sp->zero >= 3 && sp->z3_no_prefetch) /* the scatters behind the backward, every gather exposed */
        return n * overlapped_dp(rs, true, bwd1, chunks, k) + mm_build_z3_gather_passes(sp) / 2.0 * (ag + agb);
    if (sp->zero >= 3) { /* overlapped, but as often as the build issues them: a reduce-scatter
                          * after every micro-batch's backward, a gather before its forward
                          * and one before its backward, each behind that pass */
        double g = mm_build_z3_gather_passes(sp) / 2.0;
        return n * overlapped_dp(rs, true, bwd1, chunks, k) +
               g * (overlapped_dp(ag, true, fwd1, chunks, k) + overlapped_dp(agb, true, bwd1, chunks, k));
    }
    double grads;
    if (n == 1)
        grads = overlapped_dp(rs, sp->overlap_grad_reduce, bwd1, chunks, k);
    else if (!sp->overlap_grad_reduce)
        grads = n * rs; /* each blocks its micro-batch's compute stream */
    else
        grads = (n - 1) * behind(rs, fwd1 + bwd1, k) + overlapped_dp(rs, true, bwd1, chunks, k);
    return grads + overlapped_dp(ag, sp->overlap_param_gather && sp->zero, fwd1, chunks, k);
}

/* The DP term over the DP group `dg` (of sp->dp ranks): the DP-heaviest
 * stage's `grad` gradient bytes reduced (ZeRO: reduce-scattered), then
 * under ZeRO its 16-bit `params` all-gathered, as the build carries them;
 * fwd1, bwd1: that stage's one micro-batch's passes, over `chunks` layers. */
static double dp_term(const mm_sim *sim, const mm_build_spec *sp, const int *dg, double grad, double params,
                      double fwd1, double bwd1, int chunks)
{
    int n = sp->lay.dp;
    double rs = mm_net_analytic_time(sim->cluster, sp->zero ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE, dg, n, grad);
    double ag = sp->zero ? mm_net_analytic_time(sim->cluster, MM_COLL_ALLGATHER, dg, n, params) : 0;
    if (sp->zero >= 3 && (!sp->overlap_grad_reduce || sp->z3_once || sp->z3_no_prefetch)) {
        /* every one exposed: as the build cuts them, each layer's
         * reduce-scatter and its z3_gathers gathers with their latency
         * (with z3_once the scatters only: the gathers hide but the first) */
        int k = sp->z3_gathers > 1 ? sp->z3_gathers : 1, ks = sp->z3_scatters > 1 ? sp->z3_scatters : 1;
        rs = chunks * ks * mm_net_analytic_time(sim->cluster, MM_COLL_REDUCESCATTER, dg, n, grad / chunks / ks);
        if (!sp->overlap_grad_reduce || sp->z3_no_prefetch)
            ag = chunks * k * mm_net_analytic_time(sim->cluster, MM_COLL_ALLGATHER, dg, n, params / chunks / k);
    }
    return dp_sync(sp, rs, ag, fwd1, bwd1, chunks, sim->cluster->gpu.overlap_slowdown);
}

/* What the encoders' reductions after their backward add, as the build
 * issues them (mm_build_enc_early_syncs: all but the DP tail's), each of
 * one encoder GPU's grad_bytes over its DP group (homogeneous: the LLM's
 * first stage's; on its own GPUs: its first stage's shape, dp_enc GPUs
 * tp_enc apart), blocking the compute stream, or with the overlap beside
 * the rank's next micro-batch `hide` (homogeneous: the slowest stage's
 * F + B; its own: one stage's share of one micro-batch's encoder F + B);
 * one after the last backward (a homogeneous encoder under ZeRO-3) is
 * exposed whole.  The tail's reduce is not in the pre-score, as an
 * encoder's once-per-iteration reduce never was. */
static double enc_sync_term(const mm_sim *sim, const mm_build_spec *sp, int *ranks, double worst)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    double t = 0;
    for (int i = 0; i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        bool homog = e->placement == MM_ENC_HOMOGENEOUS;
        int n = mm_build_enc_early_syncs(sp, i), dp = homog ? L->lay.dp : e->dp;
        if (n < 1 || dp < 2 || e->grad_bytes <= 0)
            continue;
        const int *g = homog ? group(ranks, L->lay.dp, L->lay.tp * L->lay.cp) : group(ranks, e->dp, e->tp);
        double rs = mm_net_analytic_time(sim->cluster, sp->zero ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE, g, dp,
                                         e->grad_bytes);
        double hide = homog ? worst : (e->mb[0].fwd_s + e->mb[0].bwd_s) / e->pp;
        int last = n == mm_build_enc_grad_syncs(sp, i); /* no tail reduce after it */
        t += (n - last) * (sp->overlap_grad_reduce ? behind(rs, hide, sim->cluster->gpu.overlap_slowdown) : rs) +
             last * rs;
    }
    return t;
}

/* ZB-H1's share of a stage's micro-batch of t seconds (its W passes wg of
 * them) in the fill and drain: the zero-bubble schedule's bubble is
 * (p - 1)(T_F + T_B - T_W) where 1F1B's is (p - 1)(T_F + T_B + T_W) (Qi
 * et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Table 2; T_B the
 * input-gradient pass alone): with t = T_F + T_B + T_W, t - 2 wg. */
static double zb_fill(double t, double wg) { return fmax(0, t - 2 * wg); }

/* What the pre-score sums over the LLM's stages and the encoders. */
typedef struct {
    double worst, flops, hw, grad, params, opt;
    double dp_fwd, dp_bwd; /* the DP-heaviest stage's one micro-batch */
    int dp_chunks;
    double worst_w; /* the slowest stage's weight-gradient part of worst */
    double first;   /* stage 0's F + B */
    double tot, tot_zb; /* every stage's F + B; under ZB-H1 its share of the fill (zb_fill) */
} est_sums;

/* Context parallelism's exchanges in one pass of one micro-batch of a
 * stage, what of them the compute stream waits for, as the build emits
 * them (build_llm.c) with the executor's contention on what they overlap
 * (mm_overlap_delay): Ulysses' four all-to-alls per layer block it; the
 * ring's KV (backward: KV and dKV) send/recv of step i + 1 runs beside
 * attention step i (the diagonal step first), so a layer exposes
 * max(0, exchange - step) per step, and recomputation runs the forward's
 * ring again in the backward; without the core's step times the ring's
 * exchanges run beside the layer's op.  Fills f[vs], b[vs] per virtual
 * stage (zero without CP).  Returns 0, or -1 when out of memory. */
static int cp_costs(const mm_sim *sim, const mm_build_spec *sp, const mm_stage_cost *st, double *f, double *b)
{
    int V = sp->lay.pp * sp->lay.vpp, cp = sp->lay.cp, tp = sp->lay.tp;
    for (int vs = 0; vs < V; vs++)
        f[vs] = b[vs] = 0;
    if (cp < 2 || sp->cp_bytes <= 0)
        return 0;
    double k = sim->cluster->gpu.overlap_slowdown, x = 0, a2a = 0;
    int *g = malloc((size_t)cp * sizeof *g);
    if (!g)
        return -1;
    if (sp->cp_ring)
        x = mm_net_analytic_time(sim->cluster, MM_COLL_SENDRECV, group(g, 2, tp), 2, sp->cp_bytes);
    else /* the CP group: tp apart (tp fastest, then cp) */
        a2a = 4 * mm_net_analytic_time(sim->cluster, MM_COLL_ALLTOALL, group(g, cp, tp), cp, sp->cp_bytes);
    free(g);
    for (int vs = 0; vs < V; vs++) {
        const mm_stage_cost *c = &st[vs];
        if (c->no_layers)
            continue;
        double e[2] = {0, 0};
        for (int bw = 0; bw < 2; bw++) {
            double cnt = bw ? 2 : 1; /* backward: KV and dKV */
            if (!sp->cp_ring) {
                e[bw] = a2a;
            } else if (c->cp_diag_s[0] + c->cp_off_s[0] > 0) {
                for (int r = 0; r < (bw && c->recompute_flops > 0 ? 2 : 1); r++) { /* r 1: the recomputed forward's */
                    int q = r ? 0 : bw;
                    double xx = (r ? 1 : cnt) * x;
                    for (int i = 0; i + 1 < cp; i++) {
                        double step = i == 0 ? c->cp_diag_s[q] : c->cp_off_s[q];
                        e[bw] += fmax(0, xx - step) + mm_overlap_delay(fmin(xx, step), k);
                    }
                }
            } else {
                double layer = (bw ? c->bwd_s : c->fwd_s) / c->chunks, xx = cnt * (cp - 1) * x;
                e[bw] = fmax(0, xx - layer) + mm_overlap_delay(fmin(xx, layer), k);
            }
        }
        f[vs] = c->chunks * e[0];
        b[vs] = c->chunks * e[1];
    }
    return 0;
}

/* The LLM's stages: the slowest's F + B with its TP all-reduces (one
 * takes tp_one) and its CP exchanges' exposed part (cpx, per virtual
 * stage: cp_costs' F + B), the FLOPs, and the DP-heaviest stage's gradients and
 * micro-batch; a phase of its own so mm_sim_estimate reads as the sum. */
static void llm_stage_sums(const mm_sim *sim, const mm_build_spec *sp, const mm_stage_cost *st, double tp_one,
                           const double *cpx, est_sums *u)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    int P = L->lay.pp, m = sim->micro_batches;
    double worst = 0, flops = 0, hw = 0, grad = 0, params = 0, opt = 0, worst_w = 0, first = 0, tot = 0, tot_zb = 0;
    double dp_fwd = 0, dp_bwd = 0; /* the DP-heaviest stage's one micro-batch */
    int dp_chunks = 1;
    for (int s = 0; s < P; s++) {
        double t = 0, g = 0, pb = 0, o = 0, f1 = 0, b1 = 0, host = 0, wg = 0;
        int ch = 0;
        for (int c = 0; c < L->lay.vpp; c++) {
            int v = mm_schedule_vstage(sp->schedule, P, s, c);
            const mm_stage_cost *x = &st[v];
            int msgs = L->lay.tp > 1 ? sp->tp_msgs_fwd + sp->tp_msgs_bwd : 0;
            int layer_ops = x->no_layers ? 0 : x->chunks; /* ops with a layer's TP traffic */
            t += x->fwd_s + x->bwd_s + layer_ops * tp_one * msgs + cpx[v];
            /* the host issues the same passes: their kernels and the
             * blocking TP collectives (the executor's host cursor) */
            host += x->fwd_host_s + x->bwd_host_s + layer_ops * msgs * sp->coll_host_s;
            /* DeepSpeed's list collectives: after a device sync, exposed */
            t += layer_ops * mm_build_z3_list_mb_s(sp);
            flops += (x->fwd_flops + x->bwd_flops) * m * L->lay.dp;
            hw += (x->fwd_flops + x->bwd_flops + x->recompute_flops) * m * L->lay.dp;
            g += x->grad_bytes;
            if (x->grad_bytes > 0) /* a frozen stage updates nothing to gather */
                pb += x->param_bytes > 0 ? x->param_bytes : x->grad_bytes;
            /* the step's launches follow the host's wait for the GPU */
            o += x->opt_s + (sp->host_sync_step ? x->opt_host_s : 0);
            f1 += x->fwd_s;
            b1 += x->bwd_s;
            wg += x->wgrad_s;
            ch += x->chunks;
        }
        /* a micro-batch takes at least what its host needs to issue it */
        if (fmax(t, host) > worst)
            worst_w = wg;
        worst = fmax(worst, fmax(t, host));
        first = s == 0 ? fmax(t, host) : first;
        tot += fmax(t, host);
        tot_zb += zb_fill(fmax(t, host), wg);
        if (g > grad) {
            grad = g;
            dp_fwd = f1;
            dp_bwd = b1;
            dp_chunks = ch > 0 ? ch : 1;
        }
        params = fmax(params, pb);
        opt = fmax(opt, o);
    }
    *u = (est_sums){worst, flops, hw, grad, params, opt, dp_fwd, dp_bwd, dp_chunks, worst_w, first, tot, tot_zb};
}

/* The encoders' F + B (with their TP all-reduces) by placement: before the
 * first LLM stage (homogeneous), spread over the LLM's GPUs (colocated),
 * or the slowest stage of their own; their FLOPs are added to u. */
static void enc_compute_terms(const mm_sim *sim, const mm_build_spec *sp, int *ranks, est_sums *u, double *first,
                              double *around, double *stage)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    int m = sim->micro_batches;
    double flops = u->flops, hw = u->hw;
    double enc_first = 0, enc_around = 0, enc_stage = 0;
    for (int i = 0; i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        const mm_enc_mb_cost *c = &e->mb[0];
        double per = c->fwd_s + c->bwd_s;
        if (e->tp > 1 && c->tp_bytes > 0) { /* its layers' TP all-reduces, as the executor runs them */
            per += e->chunks * (e->tp_msgs_fwd + (e->frozen ? 0 : e->tp_msgs_bwd)) *
                   mm_net_analytic_time(sim->cluster, MM_COLL_ALLREDUCE, group(ranks, e->tp, 1), e->tp, c->tp_bytes);
        }
        flops += (c->fwd_flops + c->bwd_flops) * m * L->lay.dp;
        hw += (c->fwd_flops + c->bwd_flops + c->recompute_flops) * m * L->lay.dp;
        switch (e->placement) {
        case MM_ENC_HOMOGENEOUS:
            enc_first += per;
            break;
        case MM_ENC_COLOCATED:
            enc_around += per * m * L->lay.dp * e->tp / (double)mm_layout_gpus(&L->lay);
            break;
        default: /* a stage of its own: its share of the micro-batches */
            enc_stage = fmax(enc_stage, per / e->pp * (double)L->lay.dp / e->dp);
        }
    }
    u->flops = flops;
    u->hw = hw;
    *first = enc_first;
    *around = enc_around;
    *stage = enc_stage;
}

/* The chain before rank s in replica d: the least, over micro-batches
 * (and for pass 1 over chunks), of the forwards (pass 0) or backwards
 * (pass 1) of one chunk on ranks 0..s-1.  A rank's first op is a chunk-0
 * forward, which needs that micro-batch's forwards on the ranks before it;
 * under GPipe and (interleaved) 1F1B its last op is a backward, whose
 * input gradient the ranks before it still have to carry back towards
 * rank 0, through the same chunk there.  P2P transfers only add to either. */
static double chain(const mm_build_spec *spec, const mm_stage_cost *st, const wl_iter *w, int s, int d, int pass)
{
    int P = spec->lay.pp, dp = spec->lay.dp, m = w ? w->m : spec->m;
    double least = INFINITY;
    for (int c = 0; c < (pass ? spec->lay.vpp : 1); c++)
        for (int j = 0; j < (w ? m : 1); j++) {
            double sum = 0;
            for (int r = 0; r < s; r++) {
                int v = mm_schedule_vstage(spec->schedule, P, r, c);
                const mm_mb_cost *x = w ? &w->mb[((size_t)v * dp + d) * m + j] : NULL;
                sum += pass ? (x ? x->bwd_s : st[v].bwd_s) : (x ? x->fwd_s : st[v].fwd_s);
            }
            least = fmin(least, sum);
        }
    return s > 0 ? least : 0;
}

/* One rank's compute in replica d (every chunk and micro-batch, a
 * homogeneous encoder's on rank 0) and its optimizer step. */
static double rank_busy(const mm_build_spec *spec, const mm_stage_cost *st, const wl_iter *w, int s, int d,
                        bool homog, double *opt)
{
    int P = spec->lay.pp, dp = spec->lay.dp, m = w ? w->m : spec->m;
    double busy = 0, o = 0;
    for (int c = 0; c < spec->lay.vpp; c++) {
        int v = mm_schedule_vstage(spec->schedule, P, s, c);
        o += st[v].opt_s;
        if (!w) {
            busy += m * (st[v].fwd_s + st[v].bwd_s);
            continue;
        }
        for (int j = 0; j < m; j++) {
            const mm_mb_cost *x = &w->mb[((size_t)v * dp + d) * m + j];
            busy += x->fwd_s + x->bwd_s;
        }
    }
    for (int i = 0; homog && s == 0 && i < spec->n_enc; i++)
        for (int j = 0; j < m; j++) {
            const mm_enc_mb_cost *e = w ? &w->enc[((size_t)i * dp + d) * m + j] : &spec->enc[i].mb[0];
            busy += e->fwd_s + e->bwd_s;
        }
    *opt = o;
    return busy;
}

/* One iteration's lower bound on its time, from the costs the executor
 * runs it with (a workload's drawn micro-batches in w, else the nominal
 * stage costs st for spec->m micro-batches): no GPU finishes before it has
 * run its compute, one op after another on its compute stream, and then
 * its optimizer step.  So the time is at least, over the LLM's stages and
 * DP replicas, the stage's forwards and backwards (a homogeneous encoder's
 * too, on the first stage) plus its optimizer step, after the forwards
 * that must reach it first and (but under ZB, whose weight gradients may
 * come last) before the backwards that carry its last input gradient back
 * to rank 0 and rank 0's optimizer step (chain); over an encoder on its
 * own GPUs, its work spread evenly over them (the busiest does no less);
 * colocated, every module's GPU-seconds spread evenly over the LLM's GPUs.
 * Communication, bubbles and contention only add to it. */
static double iteration_bound(const mm_build_spec *spec, const mm_stage_cost *st, const wl_iter *w)
{
    int P = spec->lay.pp, dp = spec->lay.dp, m = w ? w->m : spec->m;
    int tpcp = spec->lay.tp * (spec->lay.cp > 0 ? spec->lay.cp : 1);
    bool homog = spec->n_enc && spec->enc[0].placement == MM_ENC_HOMOGENEOUS;
    bool coloc = spec->n_enc && spec->enc[0].placement == MM_ENC_COLOCATED;
    bool tail = !mm_schedule_splits_w(spec->schedule);
    double worst = 0, gpu_s = 0, opt0 = 0;
    rank_busy(spec, st, NULL, 0, 0, false, &opt0);
    for (int s = 0; s < P; s++)
        for (int d = 0; d < (w ? dp : 1); d++) { /* nominal costs: every replica alike */
            double opt, busy = rank_busy(spec, st, w, s, d, false, &opt);
            gpu_s += busy * tpcp * (w ? 1 : dp);
            if (homog && s == 0)
                busy = rank_busy(spec, st, w, s, d, true, &opt);
            double head = chain(spec, st, w, s, d, 0);
            worst = fmax(worst, head + busy + opt);
            if (tail)
                worst = fmax(worst, head + busy + chain(spec, st, w, s, d, 1) + opt0);
        }
    double enc_gpu_s = 0;
    for (int i = 0; i < spec->n_enc && !homog; i++) {
        const mm_enc_spec *es = &spec->enc[i];
        double sum = 0;
        if (!w)
            sum = (double)dp * m * (es->mb[0].fwd_s + es->mb[0].bwd_s);
        for (size_t k = 0; w && k < (size_t)dp * m; k++) {
            const mm_enc_mb_cost *e = &w->enc[(size_t)i * dp * m + k];
            sum += e->fwd_s + e->bwd_s;
        }
        if (coloc)
            enc_gpu_s += sum * es->tp;
        else if (es->dp * es->pp > 0)
            worst = fmax(worst, sum / (es->dp * es->pp) + es->opt_s);
    }
    if (coloc)
        worst = fmax(worst, (gpu_s + enc_gpu_s) / mm_layout_gpus(&spec->lay));
    return worst;
}

/* One TP all-reduce of `bytes` over the first `n` ranks, remembered for
 * the last size asked (a drawn iteration's micro-batches repeat theirs
 * on every virtual stage): the pre-score's rate stays that of one
 * network call per micro-batch, not per layer. */
typedef struct tp_memo {
    double bytes, t;
    int n;
} tp_memo;

static double tp_time(const mm_sim *sim, tp_memo *mo, int *ranks, int n, double bytes)
{
    if (n < 2 || bytes <= 0)
        return 0;
    if (mo->n != n || mo->bytes != bytes) {
        mo->t = mm_net_analytic_time(sim->cluster, MM_COLL_ALLREDUCE, group(ranks, n, 1), n, bytes);
        mo->bytes = bytes, mo->n = n;
    }
    return mo->t;
}

/* A drawn iteration's terms of the pre-score (est_drawn), summed over the
 * scenario's iterations and then averaged: the pipeline of the slowest
 * replica (pipe, its fill and drain in fill) with the encoders on its
 * first stage, on their own GPUs or colocated before and after it (the
 * colocated backwards after its last pass in after, which the LLM's DP
 * reduction runs beside), a colocated encoder spread evenly without a
 * per-rank plan (around), the mean stage micro-batch the DP and encoder
 * reductions hide behind (worst; dp_fwd, dp_bwd of the DP-heaviest
 * stage), the FLOPs (pad, the pad tokens' among them) and the tokens. */
typedef struct est_drawn {
    double pipe, fill, after, around, worst, dp_fwd, dp_bwd, flops, hw, pad, tokens;
    int iters;
} est_drawn;

/* One replica's F + B of micro-batch j on physical stage s (every chunk,
 * with its TP all-reduces and the stage's exposed CP exchanges, cpx, at least what the host needs to issue it; a
 * homogeneous encoder's on stage 0), from the drawn costs in w. */
static double drawn_mb(const mm_sim *sim, const mm_build_spec *sp, const mm_stage_cost *st, const wl_iter *w,
                       int s, int d, int j, int *ranks, tp_memo *mo, const double *cpx, double *wgrad)
{
    int P = sp->lay.pp, dp = sp->lay.dp, m = w->m;
    int msgs = sp->lay.tp > 1 ? sp->tp_msgs_fwd + sp->tp_msgs_bwd : 0;
    double t = 0, host = 0;
    *wgrad = 0;
    for (int c = 0; c < sp->lay.vpp; c++) {
        int v = mm_schedule_vstage(sp->schedule, P, s, c);
        const mm_mb_cost *x = &w->mb[((size_t)v * dp + d) * m + j];
        *wgrad += x->wgrad_s;
        int layer_ops = st[v].no_layers ? 0 : st[v].chunks;
        t += x->fwd_s + x->bwd_s + layer_ops * msgs * tp_time(sim, &mo[0], ranks, sp->lay.tp, x->tp_bytes) + cpx[v];
        host += st[v].fwd_host_s + st[v].bwd_host_s + layer_ops * msgs * sp->coll_host_s;
        t += layer_ops * mm_build_z3_list_mb_s(sp);
    }
    for (int i = 0; s == 0 && i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        if (e->placement != MM_ENC_HOMOGENEOUS)
            continue;
        const mm_enc_mb_cost *x = &w->enc[((size_t)i * dp + d) * m + j];
        int em = e->tp_msgs_fwd + (e->frozen ? 0 : e->tp_msgs_bwd);
        /* on the LLM's TP group (mm_bld_emit_homogeneous) */
        t += x->fwd_s + x->bwd_s + e->chunks * em * tp_time(sim, &mo[1], ranks, sp->lay.tp, x->tp_bytes);
        host += x->fwd_host_s + x->bwd_host_s;
    }
    return fmax(t, host);
}

/* One pipeline transfer of `bytes` (the whole micro-batch's activation)
 * from virtual stage vs to vs + 1, as mm_bld_emit_p2p sends it: each of
 * the tp x cp pairs its share, on the PP group's communicator (the pair's
 * own under the interleaved schedule), between the compressor's kernels
 * under comm.compress.pp; the measured time when one is fed in; nothing
 * where both are on one rank (ZB-V's turn).  Remembered per virtual stage
 * for the last size asked. */
typedef struct hop_memo {
    double bytes, t;
} hop_memo;

static double hop_time(const mm_sim *sim, const mm_build_spec *sp, hop_memo *mo, int vs, double bytes)
{
    int P = sp->lay.pp, from = mm_schedule_vstage_rank(sp->schedule, P, vs);
    int to = mm_schedule_vstage_rank(sp->schedule, P, vs + 1);
    if (from == to)
        return 0;
    if (sp->p2p_s > 0)
        return sp->p2p_s;
    if (mo[vs].bytes == bytes && mo[vs].t >= 0)
        return mo[vs].t;
    int cp = sp->lay.cp > 0 ? sp->lay.cp : 1, next = sp->lay.tp * cp * sp->lay.dp, ranks = 0, nodes = 0;
    if (sp->gpus_per_node > 0 && sp->schedule != MM_SCHEDULE_INTERLEAVED) { /* the PP group's communicator */
        ranks = P;
        for (int s = 0, last = -1; s < P; s++) {
            int node = s * next / sp->gpus_per_node;
            nodes += node != last, last = node;
        }
    }
    double S = bytes / (sp->lay.tp * cp), t = 0;
    if (sp->pp_ratio > 0)
        t = mm_compress_kernel_s(S, sp->pp_compress_gb_s) + mm_compress_kernel_s(S, sp->pp_decompress_gb_s),
        S /= sp->pp_ratio;
    t += mm_net_p2p_pair_time(sim->cluster, from * next, to * next, S, ranks, nodes);
    mo[vs].bytes = bytes, mo[vs].t = t;
    return t;
}

/* Whether the pre-score plays the schedule's order (mm_span) rather than
 * the closed form: the interleaved schedule, whose uneven chunks wait
 * round the loop, and ZB-2p and ZB-V, whose W passes fill the bubble. */
static bool played(const mm_build_spec *sp)
{
    if (sp->lay.pp < 2)
        return false;
    return (sp->schedule == MM_SCHEDULE_INTERLEAVED && sp->lay.vpp > 1) || sp->schedule == MM_SCHEDULE_ZB_2P ||
           sp->schedule == MM_SCHEDULE_ZB_V;
}

/* One pass of virtual stage vs, micro-batch j, as the executor runs it:
 * the forward and the whole backward with their layers' TP all-reduces and
 * exposed CP exchanges (cpf, cpb: cp_costs), at least what the host needs
 * to issue them, a homogeneous encoder's passes with the first chunk's;
 * the weight-gradient part and the transfer to vs + 1.  From the drawn
 * micro-batch of replica d in w, or (w NULL) the stage costs st. */
static void pass_times(const mm_sim *sim, const mm_build_spec *sp, const mm_stage_cost *st, const wl_iter *w, int d,
                       int vs, int j, int *ranks, tp_memo *mo, hop_memo *hm, const double *cpf, const double *cpb,
                       double *f, double *b, double *wg, double *hop)
{
    int V = sp->lay.pp * sp->lay.vpp, dp = sp->lay.dp, m = w ? w->m : sp->m;
    int mf = sp->lay.tp > 1 ? sp->tp_msgs_fwd : 0, mb = sp->lay.tp > 1 ? sp->tp_msgs_bwd : 0;
    const mm_stage_cost *c = &st[vs];
    int ops = c->no_layers ? 0 : c->chunks; /* ops with a layer's TP traffic */
    double hf = c->fwd_host_s + ops * mf * sp->coll_host_s, hb = c->bwd_host_s + ops * mb * sp->coll_host_s;
    const mm_mb_cost *x = w ? &w->mb[((size_t)vs * dp + d) * m + j] : NULL;
    double tp = tp_time(sim, &mo[0], ranks, sp->lay.tp, x ? x->tp_bytes : sp->tp_bytes);
    double ef = 0, eb = 0, ehf = 0, ehb = 0;
    for (int i = 0; vs == 0 && i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        if (e->placement != MM_ENC_HOMOGENEOUS)
            continue;
        const mm_enc_mb_cost *y = w ? &w->enc[((size_t)i * dp + d) * m + j] : &e->mb[0];
        double etp = tp_time(sim, &mo[1], ranks, sp->lay.tp, y->tp_bytes); /* on the LLM's TP group */
        ef += y->fwd_s + e->chunks * e->tp_msgs_fwd * etp;
        eb += y->bwd_s + (e->frozen ? 0 : e->chunks * e->tp_msgs_bwd * etp);
        ehf += y->fwd_host_s, ehb += y->bwd_host_s;
    }
    *f = fmax((x ? x->fwd_s : c->fwd_s) + ops * mf * tp + cpf[vs] + ef, hf + ehf);
    *b = fmax((x ? x->bwd_s : c->bwd_s) + ops * mb * tp + cpb[vs] + eb, hb + ehb);
    *wg = x ? x->wgrad_s : c->wgrad_s;
    *hop = vs + 1 < V ? hop_time(sim, sp, hm, vs, x ? x->p2p_bytes : sp->p2p_bytes) : 0;
}

/* The order and its play on the passes' times (f, b, wg, hop: V x m,
 * indexed vs * m + j) for m micro-batches: -1 when the schedule gives no
 * order, NAN when the host is out of memory. */
static double play(const mm_build_spec *sp, int m, const double *f, const double *b, const double *wg,
                   const double *hop)
{
    int P = sp->lay.pp, v = sp->lay.vpp, len = mm_schedule_len(sp->schedule, m, v);
    mm_sched_step *steps = malloc((size_t)P * len * sizeof *steps);
    if (!steps)
        return NAN;
    mm_build_spec order = *sp; /* the order the executor takes, for this iteration's m */
    order.m = m;
    double span = -1; /* no order (ZB-2p's heuristic can stall): the closed form stands */
    if (mm_build_schedule_steps_all(&order, steps) == len)
        span = mm_span(&(mm_span_in){sp->schedule, P, v, m, len, steps, f, b, wg, hop});
    free(steps);
    return span;
}

/* Spans of stage-cost pipelines (every micro-batch alike) remembered by
 * their exact inputs: the schedule, p, v, m, the p2p time a timed order
 * reads and, per virtual stage, the stage's F, B and W that a timed order
 * (mm_build_schedule_steps_all) is built from and the F, B, W and hop the
 * order is played on.  The span is a function of exactly these, so a hit
 * gives the bits a play would; a planner's candidates that differ only in
 * what the pipeline does not see (ZeRO, the DP width at a given m, the
 * overlap switches) share one play.  A fixed number of slots, each
 * replaced by the next key hashed to it; the memo lives as long as the
 * process (one per process; the planner's workers are processes). */
enum { SPAN_MEMO_SLOTS = 4096, SPAN_KEY_INTS = 5, SPAN_KEY_ARRAYS = 7 };
typedef struct span_slot {
    double *key; /* SPAN_KEY_INTS doubles of the ints, then the arrays */
    size_t n;    /* doubles in key */
    double span;
} span_slot;
static span_slot span_memo[SPAN_MEMO_SLOTS];

static uint64_t span_hash(const double *key, size_t n)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a over the bytes */
    const unsigned char *p = (const unsigned char *)key;
    for (size_t i = 0; i < n * sizeof *key; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

/* The span of the stage costs' pipeline (w NULL in pipeline_span), from
 * the memo or played and remembered. */
static double uniform_span(const mm_sim *sim, const mm_build_spec *sp, const mm_stage_cost *st, int *ranks,
                           tp_memo *mo, const double *cpf, const double *cpb)
{
    enum { ON_STACK = 64 }; /* virtual stages whose key needs no allocation */
    int P = sp->lay.pp, v = sp->lay.vpp, m = sp->m, V = P * v;
    size_t n = SPAN_KEY_INTS + (size_t)SPAN_KEY_ARRAYS * V;
    double kbuf[SPAN_KEY_INTS + SPAN_KEY_ARRAYS * ON_STACK];
    hop_memo hbuf[ON_STACK];
    double *key = V <= ON_STACK ? kbuf : malloc(n * sizeof *key);
    hop_memo *hm = V <= ON_STACK ? hbuf : malloc((size_t)V * sizeof *hm);
    double span = NAN;
    if (!key || !hm)
        goto out;
    key[0] = sp->schedule, key[1] = P, key[2] = v, key[3] = m, key[4] = sp->p2p_s > 0 ? sp->p2p_s : 0;
    double *kf = key + SPAN_KEY_INTS, *kb = kf + V, *kw = kb + V, *kh = kw + V;
    double *sf = kh + V, *sb = sf + V, *sw = sb + V;
    for (int vs = 0; vs < V; vs++)
        hm[vs] = (hop_memo){-1, -1};
    for (int vs = 0; vs < V; vs++) {
        pass_times(sim, sp, st, NULL, 0, vs, 0, ranks, mo, hm, cpf, cpb, &kf[vs], &kb[vs], &kw[vs], &kh[vs]);
        sf[vs] = st[vs].fwd_s, sb[vs] = st[vs].bwd_s, sw[vs] = st[vs].wgrad_s;
    }
    span_slot *slot = &span_memo[span_hash(key, n) % SPAN_MEMO_SLOTS];
    if (slot->key && slot->n == n && !memcmp(slot->key, key, n * sizeof *key)) {
        span = slot->span;
        goto out;
    }
    /* every micro-batch's passes alike */
    double *f = malloc((size_t)4 * V * m * sizeof *f), *kept = malloc(n * sizeof *kept);
    if (f && kept) {
        double *b = f + (size_t)V * m, *wg = b + (size_t)V * m, *hop = wg + (size_t)V * m;
        for (int vs = 0; vs < V; vs++)
            for (int j = 0; j < m; j++) {
                size_t k = (size_t)vs * m + j;
                f[k] = kf[vs], b[k] = kb[vs], wg[k] = kw[vs], hop[k] = kh[vs];
            }
        span = play(sp, m, f, b, wg, hop);
    }
    if (!isnan(span)) {
        memcpy(kept, key, n * sizeof *key);
        free(slot->key);
        *slot = (span_slot){kept, n, span};
        kept = NULL;
    }
    free(f);
    free(kept);
out:
    if (key != kbuf)
        free(key);
    if (hm != hbuf)
        free(hm);
    return span;
}

/* The schedule's span of replica d (mm_span) on the passes the executor
 * runs, in its order (mm_build_schedule_steps): pass_times of each
 * virtual stage and micro-batch, from the drawn micro-batches in w, or
 * (w NULL) the stage costs st for spec->m micro-batches alike
 * (uniform_span, remembered).  -1 when the schedule gives no order for
 * these times (ZB-2p's heuristic can stall), NAN when the host is out of
 * memory. */
static double pipeline_span(const mm_sim *sim, const mm_build_spec *sp, const mm_stage_cost *st, const wl_iter *w,
                            int d, int *ranks, tp_memo *mo, const double *cpf, const double *cpb)
{
    if (!w)
        return uniform_span(sim, sp, st, ranks, mo, cpf, cpb);
    int V = sp->lay.pp * sp->lay.vpp, m = w->m;
    double *f = malloc((size_t)4 * V * m * sizeof *f), *b = f ? f + (size_t)V * m : NULL;
    double *wg = b ? b + (size_t)V * m : NULL, *hop = wg ? wg + (size_t)V * m : NULL;
    hop_memo *hm = malloc((size_t)V * sizeof *hm);
    double span = NAN;
    if (f && hm) {
        for (int vs = 0; vs < V; vs++)
            hm[vs] = (hop_memo){-1, -1};
        for (int vs = 0; vs < V; vs++)
            for (int j = 0; j < m; j++) {
                size_t k = (size_t)vs * m + j;
                pass_times(sim, sp, st, w, d, vs, j, ranks, mo, hm, cpf, cpb, &f[k], &b[k], &wg[k], &hop[k]);
            }
        span = play(sp, m, f, b, wg, hop);
    }
    free(f);
    free(hm);
    return span;
}

/* Whether replicas a and b run the same passes (every virtual stage's
 * micro-batches' times and messages, a homogeneous encoder's): then their
 * pipelines' spans are equal. */
static bool same_passes(const mm_build_spec *sp, const wl_iter *w, int a, int b)
{
    int V = sp->lay.pp * sp->lay.vpp, dp = sp->lay.dp, m = w->m;
    for (int vs = 0; vs < V; vs++)
        for (int j = 0; j < m; j++) {
            const mm_mb_cost *x = &w->mb[((size_t)vs * dp + a) * m + j], *y = &w->mb[((size_t)vs * dp + b) * m + j];
            if (x->fwd_s != y->fwd_s || x->bwd_s != y->bwd_s || x->wgrad_s != y->wgrad_s ||
                x->tp_bytes != y->tp_bytes || x->p2p_bytes != y->p2p_bytes)
                return false;
        }
    for (int i = 0; i < sp->n_enc; i++) {
        if (sp->enc[i].placement != MM_ENC_HOMOGENEOUS)
            continue;
        for (int j = 0; j < m; j++) {
            const mm_enc_mb_cost *x = &w->enc[((size_t)i * dp + a) * m + j], *y = &w->enc[((size_t)i * dp + b) * m + j];
            if (x->fwd_s != y->fwd_s || x->bwd_s != y->bwd_s || x->tp_bytes != y->tp_bytes ||
                x->fwd_host_s != y->fwd_host_s || x->bwd_host_s != y->bwd_host_s)
                return false;
        }
    }
    return true;
}

/* Adds one drawn iteration's terms to *u: per replica, each stage's sum
 * over its micro-batches; the replica's pipeline is, over its stages (an
 * encoder's on its own GPUs among them, with its share of the whole
 * batch), the largest of a stage's sum plus the busiest micro-batch of
 * every other stage over vpp (fill and drain: for P equal stages the
 * uniform formula's (m + (P-1)/vpp) (F + B)); the iteration waits for the
 * slowest replica.  Colocated encoders run each rank's forward before the
 * LLM's passes and its backward after them (build_enc.c): the replica
 * waits for the slowest forward of the ranks on its GPUs or handing it
 * embeddings, and ends with the slowest backward of its ranks.
 * Returns 0, or -1 when the host is out of memory. */
static int drawn_terms(const mm_sim *sim, const mm_build_spec *sp, const mm_stage_cost *st, const wl_iter *w,
                       est_drawn *u)
{
    int P = sp->lay.pp, dp = sp->lay.dp, m = w->m, most = sp->lay.tp;
    for (int i = 0; i < sp->n_enc; i++)
        most = sp->enc[i].tp > most ? sp->enc[i].tp : most;
    int *ranks = malloc((size_t)most * sizeof *ranks);
    int V = P * sp->lay.vpp;
    double *sum = calloc((size_t)2 * P + 1 + 3 * (size_t)V, sizeof *sum), *top = sum + P;
    double *cpf = top + P + 1, *cpb = cpf + V, *cpx = cpb + V; /* CP: F, B, F + B per virtual stage */
    int *home[MM_MAX_ENCODERS] = {0}; /* colocated encoder ranks' LLM replicas */
    int rc = ranks && sum ? cp_costs(sim, sp, st, cpf, cpb) : -1;
    for (int v = 0; rc == 0 && v < V; v++)
        cpx[v] = cpf[v] + cpb[v];
    for (int i = 0; i < sp->n_enc && rc == 0; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        if (e->placement != MM_ENC_COLOCATED || !e->ranks)
            continue;
        home[i] = malloc((size_t)(e->n_ranks > 0 ? e->n_ranks : 1) * sizeof *home[i]);
        rc = home[i] && mm_build_enc_homes(sp, i, home[i], e->n_ranks) == e->n_ranks ? 0 : -1;
    }
    if (rc) {
        free(ranks);
        free(sum);
        for (int i = 0; i < sp->n_enc; i++)
            free(home[i]);
        return -1;
    }
    tp_memo mo[2] = {{0}};
    /* the encoders on their own GPUs: the busiest stage's share of the batch */
    double enc_load = 0, enc_stages = 0;
    for (int i = 0; i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        if (e->placement != MM_ENC_PIPELINE && e->placement != MM_ENC_DISJOINT)
            continue;
        double tot = 0;
        for (size_t k = 0; k < (size_t)dp * m; k++) {
            const mm_enc_mb_cost *x = &w->enc[(size_t)i * dp * m + k];
            int em = e->tp_msgs_fwd + (e->frozen ? 0 : e->tp_msgs_bwd);
            tot += x->fwd_s + x->bwd_s + e->chunks * em * tp_time(sim, &mo[1], ranks, e->tp, x->tp_bytes);
        }
        enc_load = fmax(enc_load, tot / ((double)e->dp * e->pp));
        enc_stages = e->pp;
    }
    double pipe = 0, fill = 0, worst = 0, grad = -1, after = 0;
    int heavy = 0; /* the DP-heaviest stage */
    for (int s = 0; s < P; s++) {
        double g = 0;
        for (int c = 0; c < sp->lay.vpp; c++)
            g += st[mm_schedule_vstage(sp->schedule, P, s, c)].grad_bytes;
        if (g > grad)
            grad = g, heavy = s;
    }
    double hf = 0, hb = 0;
    bool play = played(sp);
    int played_d = -1;
    double played_span = 0;
    for (int d = 0; d < dp; d++) {
        double most_s = 0, tops = 0;
        for (int s = 0; s < P; s++) {
            sum[s] = top[s] = 0;
            for (int j = 0; j < m; j++) {
                double wg, t = drawn_mb(sim, sp, st, w, s, d, j, ranks, mo, cpx, &wg);
                sum[s] += t;
                /* what it adds to the fill and drain (ZB-H1: less its W passes) */
                top[s] = fmax(top[s], sp->schedule == MM_SCHEDULE_ZB_H1 ? zb_fill(t, wg) : t);
            }
            most_s = fmax(most_s, sum[s]);
            tops += top[s];
        }
        /* the encoders' stages on their own GPUs, each its share */
        double etop = m ? enc_load / m : 0;
        double line = enc_stages > 0 ? enc_load + (tops + (enc_stages - 1) * etop) / sp->lay.vpp : 0;
        for (int s = 0; s < P; s++) /* a stage's work, and one micro-batch through every other */
            line = fmax(line, sum[s] + (tops - top[s] + enc_stages * etop) / sp->lay.vpp);
        if (play && enc_stages <= 0) { /* the schedule's order on the passes */
            /* a replica whose passes are those of the last one played
             * (fixed samples: every one) has its span */
            if (played_d < 0 || !same_passes(sp, w, played_d, d))
                played_span = pipeline_span(sim, sp, st, w, d, ranks, mo, cpf, cpb), played_d = d;
            if (isnan(played_span)) {
                rc = -1;
                break;
            }
            line = played_span >= 0 ? played_span : line;
        }
        /* colocated encoders: the forwards of the ranks on this replica's
         * GPUs or handing it embeddings before its passes, its ranks'
         * backwards after them (build_enc.c) */
        double coloc = 0, tail = 0; /* tail: the backwards after the LLM's last pass */
        for (int i = 0; i < sp->n_enc; i++) {
            const mm_enc_spec *e = &sp->enc[i];
            if (e->placement != MM_ENC_COLOCATED || !e->ranks || !home[i])
                continue;
            double f = 0, b = 0;
            for (int k = 0; k < e->n_ranks; k++) {
                if (home[i][k] == d || e->pair_bytes[(size_t)k * dp + d] > 0)
                    f = fmax(f, e->ranks[k].fwd_s);
                if (home[i][k] == d)
                    b = fmax(b, e->ranks[k].bwd_s);
            }
            coloc += f + b;
            tail += b;
        }
        double rep = coloc + line;
        if (rep > pipe)
            pipe = rep, fill = rep - fmax(most_s, enc_load), after = tail;
        worst = fmax(worst, m ? fmax(most_s, enc_load) / m : 0);
        for (int c = 0; c < sp->lay.vpp; c++)
            for (int j = 0; j < m; j++) {
                const mm_mb_cost *x = &w->mb[((size_t)mm_schedule_vstage(sp->schedule, P, heavy, c) * dp + d) * m + j];
                hf += x->fwd_s, hb += x->bwd_s;
            }
    }
    if (rc) {
        free(ranks);
        free(sum);
        for (int i = 0; i < sp->n_enc; i++)
            free(home[i]);
        return -1;
    }
    double around = 0, flops = 0, hw = 0;
    for (int i = 0; i < sp->n_enc; i++) {
        const mm_enc_spec *e = &sp->enc[i];
        bool spread = e->placement == MM_ENC_COLOCATED && !e->ranks; /* no per-rank plan: even over the GPUs */
        for (size_t k = 0; k < (size_t)dp * m; k++) {
            const mm_enc_mb_cost *x = &w->enc[(size_t)i * dp * m + k];
            if (spread)
                around += (x->fwd_s + x->bwd_s) * e->tp / (double)mm_layout_gpus(&sp->lay);
            flops += x->fwd_flops + x->bwd_flops;
            hw += x->fwd_flops + x->bwd_flops + x->recompute_flops;
        }
    }
    for (size_t k = 0; k < (size_t)P * sp->lay.vpp * dp * m; k++) {
        flops += w->mb[k].fwd_flops + w->mb[k].bwd_flops;
        hw += w->mb[k].fwd_flops + w->mb[k].bwd_flops + w->mb[k].recompute_flops;
    }
    double n = (double)dp * (m > 0 ? m : 1);
    u->pipe += pipe, u->fill += fill, u->after += after, u->around += around, u->worst += worst;
    u->dp_fwd += hf / n, u->dp_bwd += hb / n;
    u->flops += flops, u->hw += hw, u->pad += w->pad_flops, u->tokens += w->tokens;
    u->iters++;
    free(ranks);
    free(sum);
    for (int i = 0; i < sp->n_enc; i++)
        free(home[i]);
    return 0;
}

/* Memory that follows the data, decided as mm_sim_run decides it (the
 * same draws, micro-batches and mm_sim_data_memory over the scenario's
 * iterations): mt's per-stage and peak memory become the iterations'
 * peaks, oom and oom_at where a drawn batch first does not fit; *bound
 * gets the mean of the iterations' lower bounds (iteration_bound), *dr
 * the sums of the pre-score's terms over the iterations that fit
 * (drawn_terms).
 * Returns 1 (a batch does not fit), 0 or -code. */
static int data_verdict(const mm_sim *sim, const mm_sim_costs *costs, mm_metrics *mt, double *bound, est_drawn *dr,
                        mm_err *err)
{
    mm_build_spec spec = costs->spec;
    wl_iter wi = {0};
    int P = spec.lay.pp, iters = sim->sc.iterations > 0 ? sim->sc.iterations : 1, rc = 0;
    double *stage_gib = calloc((size_t)P, sizeof *stage_gib), lb = 0;
    if (!stage_gib)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    mt->peak_memory_bound_gib = mt->peak_memory_gib;
    mt->peak_memory_gib = mt->peak_allocated_gib = 0;
    for (int s = 0; s < P && s < mt->n_stages; s++)
        mt->stages[s].memory_gib = 0;
    mt->oom_at.iteration = -1;
    int it;
    for (it = 0; it < iters && rc == 0; it++) {
        if ((rc = mm_sim_iteration_costs(sim, &spec, costs->stages, it, &wi, err)))
            break;
        mm_data_mem dm = {.stage_gib = stage_gib};
        int r = mm_sim_data_memory(sim, &spec, &wi, &dm);
        if (r < 0) {
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the memory model");
            break;
        }
        for (int s = 0; s < P && s < mt->n_stages; s++)
            mt->stages[s].memory_gib = fmax(mt->stages[s].memory_gib, stage_gib[s]);
        mt->peak_memory_gib = fmax(mt->peak_memory_gib, dm.peak_gib);
        mt->peak_allocated_gib = fmax(mt->peak_allocated_gib, dm.peak_alloc_gib);
        lb += iteration_bound(&spec, costs->stages, &wi);
        if (r == 0 && drawn_terms(sim, &spec, costs->stages, &wi, dr)) {
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
            break;
        }
        if (r > 0) {
            mt->oom = true;
            mt->oom_at.iteration = it, mt->oom_at.micro_batch = dm.micro_batch, mt->oom_at.stage = dm.stage;
            mt->oom_at.replica = dm.replica, mt->oom_at.need_gib = dm.need_gib, mt->oom_at.cap_gib = dm.cap_gib;
            rc = 1;
        }
    }
    *bound = lb / iters;
    free(stage_gib);
    mm_sim_wl_iter_free(&wi);
    return rc;
}

/* An iteration's time on a layout that fits, from the stages' costs: the
 * pipeline of the slowest stage, the encoders' terms, the data-parallel
 * synchronisation and the optimizer step; the metrics derived from it.  A
 * part of mm_sim_estimate_bound. */
/* The data loader in the steady state (data.workers >= 0), as a long
 * run settles: each step waits the loader's shortfall against the step T
 * with its copies (mm_sim_loader_short_s) and the copies themselves; the
 * iteration's loading is one micro-batch's (mm_sim_loader_micro_batch,
 * DP replica 0 of iteration 0) times the replica's m.  Returns the
 * seconds the step waits (0 without the loader) and fills mt's data
 * metrics (NAN without it), or -code. */
static int est_data(const mm_sim *sim, int m, double T, mm_metrics *mt, double *wait, mm_err *err)
{
    *wait = 0;
    mt->data_wait_s = mt->data_h2d_s = mt->loader_cpu_s = mt->data_shortfall_s = NAN;
    mt->data_workers_needed = 0;
    int W = sim->sc.data.workers;
    if (W < 0)
        return 0;
    mm_loader_cost c;
    int rc = mm_sim_loader_micro_batch(sim, &c, err);
    if (rc)
        return rc;
    double cpu = c.cpu_s * m, dev = c.dev_s * m, h2d = mm_sim_loader_h2d_s(sim, c.h2d_bytes * m);
    double sh = mm_sim_loader_short_s(sim, W, cpu, dev, T + h2d);
    int one = 1;
    mm_loader_queue q = {.workers = W, .iters = 1, .ranks = 1, .m = &one, .cpu_s = &cpu, .dev_s = &dev, .step_s = &T};
    mt->data_workers_needed = mm_loader_workers_needed(&q);
    mt->data_shortfall_s = sh, mt->data_h2d_s = h2d, mt->loader_cpu_s = cpu;
    mt->data_wait_s = *wait = sh + h2d;
    return 0;
}

static int time_iteration(const mm_sim *sim, const mm_sim_costs *costs, const est_drawn *dr, mm_metrics *mt,
                          mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_stage_cost *st = costs->stages;
    const mm_build_spec spec = costs->spec;
    /* the slowest (physical) stage's F + B per micro-batch, with its TP
     * all-reduces (analytic network time, serialized as in the executor) */
    /* one rank array, as large as the largest group timed below (TP of
     * each module, DP of the LLM): no group is cut short */
    int m = sim->micro_batches, most = L->lay.tp > L->lay.dp ? L->lay.tp : L->lay.dp;
    for (int i = 0; i < spec.n_enc; i++) { /* an encoder's TP and DP groups too */
        most = spec.enc[i].tp > most ? spec.enc[i].tp : most;
        most = spec.enc[i].dp > most ? spec.enc[i].dp : most;
    }
    int *ranks = malloc((size_t)most * sizeof *ranks);
    if (!ranks)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    double tp_one = L->lay.tp > 1 ? mm_net_analytic_time(sim->cluster, MM_COLL_ALLREDUCE, group(ranks, L->lay.tp, 1), L->lay.tp,
                                                     spec.tp_bytes)
                              : 0;
    int V = L->lay.pp * L->lay.vpp;
    double *cpf = malloc((size_t)3 * V * sizeof *cpf), *cpb = cpf ? cpf + V : NULL, *cpx = cpb ? cpb + V : NULL;
    if (!cpf || cp_costs(sim, &spec, st, cpf, cpb)) {
        free(ranks);
        free(cpf);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    for (int v = 0; v < V; v++)
        cpx[v] = cpf[v] + cpb[v];
    est_sums u;
    llm_stage_sums(sim, &spec, st, tp_one, cpx, &u);
    double worst = u.worst, grad = u.grad, params = u.params, opt = u.opt;
    double dp_fwd = u.dp_fwd, dp_bwd = u.dp_bwd;
    int dp_chunks = u.dp_chunks;
    double enc_first, enc_around, enc_stage;
    enc_compute_terms(sim, &spec, ranks, &u, &enc_first, &enc_around, &enc_stage);
    double flops = u.flops, hw = u.hw;
    worst = fmax(worst + enc_first, enc_stage);
    /* the slowest stage's m micro-batches, and one through every other
     * stage (fill and drain, over vpp; a homogeneous encoder with the
     * slowest, an encoder's own stages among the others); under ZB-H1
     * each other stage's zb_fill */
    double fill, pipe;
    {
        bool zb = spec.schedule == MM_SCHEDULE_ZB_H1, llm_worst = worst == u.worst && enc_first <= 0;
        double epp = enc_stage > 0 ? spec.enc[0].pp : 0;
        double all = (zb ? u.tot_zb : u.tot) + enc_first + epp * enc_stage;
        fill = (all - (llm_worst ? (zb ? zb_fill(u.worst, u.worst_w) : u.worst) : worst)) / L->lay.vpp;
        pipe = m * worst + fill;
        if (played(&spec) && enc_stage <= 0 && !(dr && dr->iters > 0)) { /* the schedule's order on the passes */
            tp_memo mo[2] = {{0}};
            double span = pipeline_span(sim, &spec, st, NULL, 0, ranks, mo, cpf, cpb);
            if (isnan(span)) {
                free(ranks);
                free(cpf);
                return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
            }
            if (span >= 0)
                pipe = span, fill = span - m * worst;
        }
    }
    double tokens = (double)sc->train.global_batch * sim->seq;
    /* the stages ran at the padded length: the pad tokens' FLOPs are work,
     * not the model's */
    double pad = mm_sim_nominal_pad_flops(sim, st);
    if (dr && dr->iters > 0) { /* a workload's drawn micro-batches, as mm_sim_run runs them */
        double n = dr->iters;
        pipe = dr->pipe / n, fill = dr->fill / n, enc_around = dr->around / n, worst = dr->worst / n;
        dp_fwd = dr->dp_fwd / n, dp_bwd = dr->dp_bwd / n;
        flops = dr->flops / n, hw = dr->hw / n, tokens = dr->tokens / n, pad = dr->pad / n;
    }
    double dp_t = L->lay.dp > 1 ? dp_term(sim, &spec, group(ranks, L->lay.dp, L->lay.tp * L->lay.cp), grad, params, dp_fwd, dp_bwd,
                                       dp_chunks)
                            : 0;
    /* the LLM's reduction after its last backward runs on the DP stream
     * beside the colocated encoders' backwards (mm_bld_emit_dp_tail after
     * the LLM's last op, mm_bld_emit_colocated's backward on the compute
     * stream): what they hide, with the executor's contention */
    if (dr && dr->iters > 0 && dr->after > 0)
        dp_t = behind(dp_t, dr->after / dr->iters, sim->cluster->gpu.overlap_slowdown);
    double enc_dp = enc_sync_term(sim, &spec, ranks, worst);
    double T = pipe + enc_around + dp_t + enc_dp + opt, data = 0;
    /* the data loader's wait, before the swap and the outer sync, as
     * mm_sim_run adds them */
    int drc = est_data(sim, spec.m, T, mt, &data, err);
    if (drc) {
        free(ranks);
        free(cpf);
        return drc;
    }
    T += data;
    double peak = sim->cluster->gpu.peak_flops[sc->train.precision];
    /* training across sites: every site's work, and each step's share of
     * the outer sync's exposed time, as mm_sim_run adds them
     * (cost/outersync.h) */
    double S = 1, samples = (double)sc->train.global_batch, sync = 0;
    /* atom: the model swapping's exposed time, as mm_sim_run adds it
     * (cost/swap.h), before the outer sync whose step it is part of */
    if (sc->train.outer_sync.present && sc->train.outer_sync.algorithm == MM_OSYNC_ATOM) {
        mm_mem_rank full;
        double room;
        if (mm_sim_swap_room(sim, &full, &room) == 0 &&
            mm_sim_swap(sim, &full, room, costs->stages[0].fwd_s, costs->stages[0].bwd_s, spec.m, &mt->swap) == 0) {
            mm_sim_wan_pipeline(sim, costs->stages[0].fwd_s, costs->stages[0].bwd_s, spec.m, &mt->swap);
            T += mt->swap.exposed_s;
        }
    }
    int rc = mm_sim_outer_sync(sim, T, &mt->outer, err);
    if (rc) {
        free(ranks);
        return rc;
    }
    if (mt->outer.on) {
        S = mt->outer.sites, sync = mt->outer.per_iter_s;
        mt->gpus *= mt->outer.sites;
    }
    T += sync;
    mt->iteration_time_s = T;
    mm_metrics_rates(mt, T, S * tokens, S * samples, S * (flops - pad), S * pad, S * hw, mt->gpus, peak);
    mt->bubble_fraction = fill / pipe;
    mt->exposed_comm_s = dp_t + enc_dp + sync;
    mt->host_launch_s = mt->exposed_host_s = NAN; /* the executor measures them */
    free(ranks);
    free(cpf);
    return 0;
}

int mm_sim_estimate_bound(const mm_sim *sim, mm_metrics *mt, double *bound, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    memset(mt, 0, sizeof *mt);
    int P = L->lay.pp, rc = 0;
    mm_sim_costs costs = {0};
    mt->stages = calloc((size_t)P, sizeof *mt->stages);
    if (!mt->stages) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    mt->n_stages = P;
    if ((rc = mm_sim_stage_times(sim, &costs, err)))
        goto out;
    const mm_stage_cost *st = costs.stages;
    const mm_build_spec spec = costs.spec;
    mt->gpus = mm_cluster_gpus(sim->cluster);
    int fit = mm_sim_metrics_memory(sim, mt, err);
    if (fit < 0) {
        rc = fit;
        goto out;
    }
    double lb = NAN;
    est_drawn dr = {0};
    mt->oom_at.iteration = -1;
    if (sim->wl) { /* the static verdict is a bound: the drawn data decide, as in mm_sim_run */
        fit = data_verdict(sim, &costs, mt, &lb, &dr, err);
        if (fit < 0) {
            rc = fit;
            goto out;
        }
    } else {
        lb = iteration_bound(&spec, st, NULL);
    }
    if (bound)
        *bound = fit > 0 ? NAN : lb;
    if (fit > 0) {
        mt->oom = true;
        mt->iteration_time_s = mt->tokens_per_s = mt->samples_per_s = NAN;
        mt->tflops_per_gpu = mt->hw_tflops_per_gpu = mt->mfu = mt->hfu = mt->padded_flops_fraction = NAN;
        mt->bubble_fraction = mt->exposed_comm_s = mt->host_launch_s = mt->exposed_host_s = NAN;
        goto out;
    }
    rc = time_iteration(sim, &costs, sim->wl ? &dr : NULL, mt, err);
    if (rc == 0 && bound && isfinite(*bound) && mt->outer.on) {
        /* step + exposed(step) / h never falls as the step grows (blocking:
         * + sync / h; overlapped: max(step, sync / h)), so the bound's
         * image bounds the run's */
        mm_outer_sync o;
        if (mt->swap.on) /* a constant the run adds to every step */
            *bound += mt->swap.exposed_s;
        if ((rc = mm_sim_outer_sync(sim, *bound, &o, err)) == 0)
            *bound += o.per_iter_s;
    }
out:
    mm_sim_costs_free(&costs);
    if (rc)
        mm_metrics_free(mt);
    return rc;
}

int mm_sim_estimate(const mm_sim *sim, mm_metrics *mt, mm_err *err) { return mm_sim_estimate_bound(sim, mt, NULL, err); }
