/* planner.c - `mmsim plan`: enumerate layouts, prune, pre-score, rescore
 * the best K event by event, rank (see planner.h for the steps and the
 * bounds of the enumeration).
 *
 * Speed: the base scenario's model and topology are loaded once
 * (mm_sim_load); each candidate only rewrites the layout and training
 * fields of that one mm_sim and checks it again (mm_sim_relayout) before
 * mm_sim_estimate, so a candidate costs microseconds, not the milliseconds
 * of reading the files.  The K rescorings run in this process, or through
 * the runner (forked workers, results in the store, reused by a later plan
 * of the same scenario), which gets each candidate as a loaded scenario
 * (no text is written or parsed; its canonical text keys the store).  All
 * three apply a candidate the one way the scenario layer has
 * (mm_scenario_apply_layout, on the base each time), so they agree.
 * Not for: printing (the CLI formats mm_plan) or sweeps (sweep.h). */
#include "plan/planner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cluster.h"
#include "model/memory.h"
#include "plan/runner.h"
#include "scenario/sim.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "plan/estimate.h"
#include "plan/space.h"
#include "store/planstore.h"
#include "store/store.h"
#include "util/misc.h"

const char *const mm_cand_status_names[] = {"pruned", "estimated", "simulated", "failed", "tied", "bounded", NULL};

/* ---- the candidate list ---- */

typedef struct cand_vec {
    mm_plan_cand *c;
    size_t n, cap;
} cand_vec;

static mm_plan_cand *cand_push(cand_vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 1024;
        mm_plan_cand *c = realloc(v->c, cap * sizeof *c);
        if (!c)
            return NULL;
        v->c = c;
        v->cap = cap;
    }
    mm_plan_cand *c = &v->c[v->n++];
    memset(c, 0, sizeof *c);
    c->index = (int)(v->n - 1);
    return c;
}

/* The canonical layout string: what a reader needs to rebuild the layout,
 * in a fixed order, so that equal layouts give equal strings. */
static void cand_layout(mm_plan_cand *c)
{
    char enc[80] = "";
    if (c->placement >= 0 && mm_layout_has_vision(c->placement))
        snprintf(enc, sizeof enc, " vision tp%d pp%d dp%d %s |", c->vision.tp, c->vision.pp, c->vision.dp,
                 mm_recompute_names[c->enc_recompute >= 0 ? c->enc_recompute : 0]);
    else if (c->placement >= 0 && c->enc_recompute >= 0)
        snprintf(enc, sizeof enc, " vision %s |", mm_recompute_names[c->enc_recompute]);
    char pl[32] = "";
    if (c->placement >= 0)
        snprintf(pl, sizeof pl, "%s |", mm_placement_names[c->placement]);
    char split[48] = "";
    if (c->first_layers)
        snprintf(split, sizeof split, " layers %d+%dx%d+%d", c->first_layers, c->mid_layers, c->llm.pp - 2,
                 c->last_layers);
    else if (c->llm.embedding_in_split || c->llm.loss_in_split)
        snprintf(split, sizeof split, " split%s%s", c->llm.embedding_in_split ? " +emb" : "",
                 c->llm.loss_in_split ? " +loss" : "");
    char sched[24] = "";
    if (c->llm.pp > 1 && c->schedule != MM_SCHED_INTERLEAVED)
        snprintf(sched, sizeof sched, " %s", mm_schedule_names[c->schedule]);
    int n = snprintf(c->layout, sizeof c->layout, "%s%s llm tp%d pp%d vpp%d cp%d dp%d ep%d%s | mb%d %s zero%d%s",
                     pl, enc, c->llm.tp, c->llm.pp, c->llm.vpp, c->llm.cp, c->llm.dp, c->llm.ep, split,
                     c->micro_batch, mm_recompute_names[c->recompute], c->zero, sched);
    if (n < 0 || (size_t)n >= sizeof c->layout) /* cannot happen with these widths; keep it terminated */
        c->layout[sizeof c->layout - 1] = '\0';
    if (c->layout[0] == ' ')
        memmove(c->layout, c->layout + 1, strlen(c->layout));
}

/* Room for an uneven split's layers per stage, which a layout borrows
 * (scenario.h): it must outlive the scenario the layout is applied to. */
typedef mm_plan_lps lps_buf;

/* The candidate as a layout of the scenario layer, which applies it
 * (mm_scenario_apply_layout) the same way for the pre-score, the in-process
 * reruns and the stored reruns; an uneven split is written into *lps. */
static mm_relayout layout_of(const mm_plan_cand *c, lps_buf *lps)
{
    mm_relayout lay = {.placement = c->placement, .llm = c->llm, .vision = c->vision,
                       .vision_recompute = c->placement >= 0 ? c->enc_recompute : -1,
                       .micro_batch = c->micro_batch, .recompute = c->recompute, .zero = c->zero,
                       .schedule = c->schedule};
    if (c->first_layers && c->llm.pp <= MM_MAX_PP) {
        for (int st = 0; st < c->llm.pp; st++)
            lps->v[st] = st == 0 ? c->first_layers : st + 1 < c->llm.pp ? c->mid_layers : c->last_layers;
        lay.llm.n_layers_per_stage = c->llm.pp;
        lay.llm.layers_per_stage = lps->v;
    }
    return lay;
}

/* The shared sim's scenario becomes the base with the candidate applied:
 * from the base each time, so that nothing one candidate set (an encoder
 * layout a homogeneous candidate leaves alone) leaks into the next. */
static void relay(mm_sim *sim, const mm_scenario *base, const mm_plan_cand *c, lps_buf *lps)
{
    mm_relayout lay = layout_of(c, lps);
    mm_scenario_reset_layout(&sim->sc, base);
    sim->sc.iterations = base->iterations;
    mm_scenario_apply_layout(&sim->sc, &lay);
}

size_t mm_plan_cand_sets_json(const mm_plan_cand *c, char *buf, size_t len)
{
    lps_buf lps;
    mm_relayout lay = layout_of(c, &lps);
    return mm_layout_sets_json(&lay, buf, len);
}

/* ---- enumeration ---- */

/* Walks the space (space.h) in a fixed order: placement, the encoder's
 * layout (GPUs, tp, pp, recompute), then the LLM's degrees and the
 * training choices.  The narrowing o->space keeps its listed values. */
typedef struct walker {
    const mm_space_facts *f;
    const mm_plan_space *keep;
    cand_vec *v;
} walker;

static bool keep(const walker *w, mm_space_dim d, int v) { return mm_plan_space_allows(w->keep, d, v); }

/* The schedules of a pipeline of pp stages and vpp chunks: every one the
 * executor runs at vpp 1 (gpipe, 1f1b, zb-h1, zb-2p), interleaved at vpp > 1
 * and zb-v at vpp 2 (the layers already divide into the pp*vpp chunks), the
 * scenario's own at pp 1 (one stage: no schedule differs); of these, those
 * the framework runs (its profile's schedules). */
static int schedules(const walker *w, int pp, int vpp, int *out)
{
    int n = 0;
    if (vpp > 1) {
        out[n++] = MM_SCHED_INTERLEAVED;
        if (vpp == 2 && pp > 1)
            out[n++] = MM_SCHED_ZB_V;
    } else if (pp == 1) {
        out[n++] = w->f->base_schedule;
    } else {
        static const int s1[] = {MM_SCHED_GPIPE, MM_SCHED_1F1B, MM_SCHED_ZB_H1, MM_SCHED_ZB_2P};
        for (int i = 0; i < 4; i++)
            out[n++] = s1[i];
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if ((w->f->schedules >> out[i]) & 1u && keep(w, MM_SD_SCHEDULE, out[i]))
            out[k++] = out[i];
    return k;
}

/* The training choices of one LLM layout: micro-batch sizes (divisors of
 * global_batch / dp), the LLM's recompute, ZeRO, the schedule. */
static int enum_choices(const walker *w, const mm_plan_cand *proto)
{
    const mm_space_facts *f = w->f;
    int64_t per = f->global_batch / proto->llm.dp;
    if (per < 1 || f->global_batch % proto->llm.dp)
        return 0;
    int sch[4], ns = schedules(w, proto->llm.pp, proto->llm.vpp, sch);
    for (int64_t mb = 1; mb <= per; mb++) {
        if (per % mb || !keep(w, MM_SD_MB, (int)mb))
            continue;
        if (proto->llm.vpp > 1 && (per / mb) % proto->llm.pp)
            continue; /* interleaving needs micro-batches in multiples of pp (the validation's rule) */
        for (int r = 0; r < 3; r++) {
            if (!keep(w, MM_SD_RECOMPUTE, r))
                continue;
            for (int z = 0; z < 4; z++) {
                if (!((f->zero_stages >> z) & 1u) || !keep(w, MM_SD_ZERO, z))
                    continue;
                for (int k = 0; k < ns; k++) {
                    mm_plan_cand *c = cand_push(w->v);
                    if (!c)
                        return -1;
                    int idx = c->index;
                    *c = *proto;
                    c->index = idx;
                    c->micro_batch = (int)mb;
                    c->recompute = r;
                    c->zero = z;
                    c->schedule = sch[k];
                    cand_layout(c);
                }
            }
        }
    }
    return 0;
}

/* The LLM's degrees on gllm GPUs (tp, cp, pp, vpp with its split, ep),
 * crossed with the training choices. */
static int enum_llm(const walker *w, const mm_plan_cand *proto0, int gllm)
{
    const mm_space_facts *f = w->f;
    int tps[64], ntp = mm_space_tp_values(gllm, f->gpn, f->heads, tps, 64);
    mm_plan_cand proto = *proto0;
    for (int a = 0; a < ntp; a++) {
        if (!keep(w, MM_SD_TP, tps[a]))
            continue;
        for (int cp = 1; (long long)tps[a] * cp <= gllm; cp++) {
            if (gllm % (tps[a] * cp) || (cp > 1 && f->seq % (2 * cp)) || !keep(w, MM_SD_CP, cp))
                continue;
            for (int pp = 1; pp <= f->max_pp && pp <= f->layers; pp++) {
                long long mp = (long long)tps[a] * cp * pp;
                if (gllm % mp || !keep(w, MM_SD_PP, pp))
                    continue;
                int dp = (int)(gllm / mp);
                if (f->global_batch % dp)
                    continue; /* no micro-batch size divides the batch */
                for (int vpp = 1; vpp == 1 || (pp > 1 && (int64_t)pp * vpp <= f->layers); vpp++) {
                    int fl, ml, ll, how;
                    if (!keep(w, MM_SD_VPP, vpp) || (how = mm_space_split_layers(f->layers, pp, vpp, &fl, &ml, &ll)) < 0)
                        continue;
                    bool opts = how == 2; /* Megatron's split options: no per-stage list */
                    if (opts)
                        fl = ml = ll = 0;
                    for (int ep = 1; ep == 1 || (f->experts > 0 && ep <= f->experts); ep++) {
                        if ((ep > 1 && f->experts % ep) || !keep(w, MM_SD_EP, ep))
                            continue;
                        proto.llm = (mm_layout){.tp = tps[a], .pp = pp, .vpp = vpp, .cp = cp, .dp = dp, .ep = ep,
                                                .embedding_in_split = opts, .loss_in_split = opts};
                        proto.first_layers = fl, proto.mid_layers = ml, proto.last_layers = ll;
                        if (enum_choices(w, &proto))
                            return -1;
                    }
                }
            }
        }
    }
    return 0;
}

/* The encoder's recompute modes crossed with the LLM's layouts. */
static int enum_enc_rc(const walker *w, mm_plan_cand *proto, int gllm)
{
    for (int r = 0; r < 3; r++) {
        if (!keep(w, MM_SD_ENC_RECOMPUTE, r))
            continue;
        proto->enc_recompute = r;
        if (enum_llm(w, proto, gllm))
            return -1;
    }
    return 0;
}

static int enumerate(const mm_space_facts *f, const mm_plan_space *narrow, unsigned placements, cand_vec *v)
{
    walker w = {.f = f, .keep = narrow, .v = v};
    mm_plan_cand proto;
    memset(&proto, 0, sizeof proto);
    proto.placement = -1;
    proto.enc_recompute = -1;
    if (!f->encoder)
        return enum_llm(&w, &proto, f->G);
    /* placements in the enum's order: pipeline, colocated, disjoint, homogeneous */
    for (int pl = 0; pl < 4; pl++) {
        if (!(placements & (1u << pl)) || !keep(&w, MM_SD_PLACEMENT, pl))
            continue;
        proto.placement = pl;
        proto.enc_gpus = 0;
        if (pl == MM_PLACE_HOMOGENEOUS) {
            proto.vision = (mm_layout){0};
            if (enum_enc_rc(&w, &proto, f->G))
                return -1;
            continue;
        }
        if (pl == MM_PLACE_COLOCATED) {
            int tps[64], ntp = mm_space_tp_values(f->G, f->gpn, f->enc_heads, tps, 64);
            for (int a = 0; a < ntp; a++) {
                if (!keep(&w, MM_SD_ENC_TP, tps[a]))
                    continue;
                proto.vision = (mm_layout){.tp = tps[a], .pp = 1, .dp = f->G / tps[a], .vpp = 1, .cp = 1, .ep = 1};
                if (enum_enc_rc(&w, &proto, f->G))
                    return -1;
            }
            continue;
        }
        /* the encoder's own GPUs: every count that its tp x pp divides */
        for (int ge = 1; ge < f->G; ge++) {
            if (!keep(&w, MM_SD_ENC_GPUS, ge))
                continue;
            proto.enc_gpus = ge;
            int tps[64], ntp = mm_space_tp_values(ge, f->gpn, f->enc_heads, tps, 64);
            for (int a = 0; a < ntp; a++) {
                if (!keep(&w, MM_SD_ENC_TP, tps[a]))
                    continue;
                for (int pp = 1; pp <= f->enc_layers && (long long)tps[a] * pp <= ge; pp++) {
                    if (f->enc_layers % pp || ge % (tps[a] * pp) || !keep(&w, MM_SD_ENC_PP, pp))
                        continue;
                    proto.vision = (mm_layout){.tp = tps[a], .pp = pp, .dp = ge / (tps[a] * pp), .vpp = 1, .cp = 1,
                                               .ep = 1};
                    if (enum_enc_rc(&w, &proto, f->G - ge))
                        return -1;
                }
            }
        }
        proto.enc_gpus = 0;
    }
    return 0;
}

/* How many values of each dimension the candidates take (--explain). */
static void count_dims(const cand_vec *v, mm_plan *p)
{
    for (int d = 0; d < MM_SD_COUNT; d++) {
        int seen[4096], n = 0;
        for (size_t i = 0; i < v->n; i++) {
            const mm_plan_cand *c = &v->c[i];
            int x;
            switch ((mm_space_dim)d) {
            case MM_SD_PLACEMENT: x = c->placement; break;
            case MM_SD_ENC_GPUS: x = c->enc_gpus; break;
            case MM_SD_ENC_TP: x = c->vision.tp; break;
            case MM_SD_ENC_PP: x = c->vision.pp; break;
            case MM_SD_ENC_RECOMPUTE: x = c->enc_recompute; break;
            case MM_SD_TP: x = c->llm.tp; break;
            case MM_SD_CP: x = c->llm.cp; break;
            case MM_SD_PP: x = c->llm.pp; break;
            case MM_SD_VPP: x = c->llm.vpp; break;
            case MM_SD_EP: x = c->llm.ep; break;
            case MM_SD_MB: x = c->micro_batch; break;
            case MM_SD_RECOMPUTE: x = c->recompute; break;
            case MM_SD_ZERO: x = c->zero; break;
            default: x = c->schedule; break;
            }
            bool found = false;
            for (int k = 0; k < n && !found; k++)
                found = seen[k] == x;
            if (!found && n < 4096)
                seen[n++] = x;
        }
        p->dim_values[d] = n;
    }
}

/* ---- pruning and pre-scoring ---- */

static int set_reason(mm_plan_cand *c, const char *fmt_key, const char *msg)
{
    size_t n = strlen(fmt_key) + strlen(msg) + 16;
    c->reason = malloc(n);
    if (!c->reason)
        return -1;
    if (fmt_key[0])
        snprintf(c->reason, n, "%s: %s", fmt_key, msg);
    else
        snprintf(c->reason, n, "%s", msg);
    return 0;
}

/* Why a candidate does not fit, as the run would say it: the drawn
 * batch's stage, replica, iteration and micro-batch (memory that follows
 * the data), else the stage whose memory is largest (the layout itself). */
static void oom_reason(const mm_sim *sim, const mm_metrics *m, char *msg, size_t len, mm_plan_cand *c)
{
    double cap = sim->cluster->gpu.hbm_bytes / MM_GIB - sim->sc.train.memory_reserve_gib;
    c->oom_stage = m->oom_at.iteration >= 0 ? m->oom_at.stage : -1;
    c->oom_gib = m->oom_at.iteration >= 0 ? m->oom_at.need_gib : m->peak_memory_gib;
    if (m->oom_at.iteration < 0)
        for (int s = 0; s < m->n_stages; s++)
            if (m->stages[s].memory_gib > cap && (c->oom_stage < 0 || m->stages[s].memory_gib > m->stages[c->oom_stage].memory_gib))
                c->oom_stage = s;
    if (m->oom_at.iteration >= 0 && m->oom_at.stage >= 0) {
        snprintf(msg, len, "OOM: %.1f GiB > %.1f GiB on stage %d, DP replica %d (iteration %d, micro-batch %d)",
                 m->oom_at.need_gib, m->oom_at.cap_gib, m->oom_at.stage, m->oom_at.replica, m->oom_at.iteration,
                 m->oom_at.micro_batch);
        return;
    }
    if (m->oom_at.iteration >= 0) {
        snprintf(msg, len, "OOM: %.1f GiB > %.1f GiB on the encoder's own GPUs (iteration %d)", m->oom_at.need_gib,
                 m->oom_at.cap_gib, m->oom_at.iteration);
        return;
    }
    int at = -1;
    double worst = 0;
    for (int s = 0; s < m->n_stages; s++)
        if (m->stages[s].memory_gib > worst)
            worst = m->stages[s].memory_gib, at = s;
    if (at >= 0 && worst > cap)
        snprintf(msg, len, "OOM: %.1f GiB > %.1f GiB on stage %d", m->peak_memory_gib, cap, at);
    else
        snprintf(msg, len, "OOM: %.1f GiB > %.1f GiB on an encoder's GPUs", m->peak_memory_gib, cap);
}

/* Validation, memory, estimate of one candidate in the shared sim; the
 * host time of the validation and of the estimate go to p apart, and p
 * counts the candidates the estimate ran on. */
static int score(mm_sim *sim, const mm_scenario *base, mm_plan_cand *c, lps_buf *lps, mm_plan *p, mm_err *err)
{
    mm_err e;
    mm_err_clear(&e);
    relay(sim, base, c, lps);
    c->est_s = c->est_tflops = c->est_mfu = c->mem_gib = c->bound_s = c->oom_gib = NAN;
    c->oom_stage = -1;
    c->sim_s = c->sim_tflops = c->sim_mfu = c->sim_tokens_s = c->sim_mem_gib = NAN;
    sim->sc.iterations = p->iterations; /* memory walks the rescoring run's iterations */
    double t0 = mm_host_seconds();
    int rc = mm_sim_relayout(sim, &e);
    double t1 = mm_host_seconds();
    p->validate_s += t1 - t0;
    if (rc == 0) {
        c->micro_batches = sim->micro_batches;
        mm_metrics m;
        double lb = NAN;
        rc = mm_sim_estimate_bound(sim, &m, &lb, &e);
        p->estimate_s += mm_host_seconds() - t1;
        p->prescored++;
        if (rc == 0) {
            c->mem_gib = m.peak_memory_gib;
            c->bound_s = lb;
            if (m.oom) {
                char msg[200];
                oom_reason(sim, &m, msg, sizeof msg, c);
                c->status = MM_CAND_PRUNED;
                mm_metrics_free(&m);
                return set_reason(c, "", msg) ? mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory") : 1;
            }
            c->est_s = m.iteration_time_s;
            c->est_tflops = m.tflops_per_gpu;
            c->est_mfu = m.mfu;
            c->status = MM_CAND_ESTIMATED;
            mm_metrics_free(&m);
            return 0;
        }
    }
    if (e.code == MM_EINTERNAL && strstr(e.msg, "out of memory"))
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "%s", e.msg);
    char key[160];
    snprintf(key, sizeof key, "%s%s%s", e.key[0] ? "key '" : "", e.key, e.key[0] ? "'" : "");
    c->status = MM_CAND_PRUNED;
    return set_reason(c, key, e.msg) ? mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory") : 1;
}

/* ---- ranking ---- */

static int cmp_double(double a, double b)
{
    bool fa = isfinite(a), fb = isfinite(b);
    if (fa != fb)
        return fa ? -1 : 1;
    if (fa && a != b)
        return a < b ? -1 : 1;
    return 0;
}

/* Simulated (by simulated time), then estimated (by estimate), then failed,
 * then pruned; ties by the layout string, then the enumeration index. */
static int cmp_rank(const void *pa, const void *pb)
{
    const mm_plan_cand *a = pa, *b = pb;
    static const int order[] = {[MM_CAND_SIMULATED] = 0, [MM_CAND_ESTIMATED] = 1, [MM_CAND_TIED] = 2,
                                [MM_CAND_BOUNDED] = 3, [MM_CAND_FAILED] = 4, [MM_CAND_PRUNED] = 5};
    if (order[a->status] != order[b->status])
        return order[a->status] - order[b->status];
    int c = 0;
    if (a->status == MM_CAND_SIMULATED)
        c = cmp_double(a->sim_s, b->sim_s);
    if (c == 0 && a->status != MM_CAND_FAILED && a->status != MM_CAND_PRUNED)
        c = cmp_double(a->est_s, b->est_s);
    if (c == 0)
        c = strcmp(a->layout, b->layout);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* By estimate only (choosing the K to rescore). */
static int cmp_estimate(const void *pa, const void *pb)
{
    const mm_plan_cand *a = pa, *b = pb;
    bool ea = a->status == MM_CAND_ESTIMATED, eb = b->status == MM_CAND_ESTIMATED;
    if (ea != eb)
        return ea ? -1 : 1;
    int c = ea ? cmp_double(a->est_s, b->est_s) : 0;
    if (c == 0)
        c = strcmp(a->layout, b->layout);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* Exact ties of the pre-score (est_s, bound and memory bit for bit
 * equal), in v sorted by estimate: all but the first (the canonical
 * layout string's) become MM_CAND_TIED, so that K rescorings see K
 * different estimates; the proof (prove) still covers them by their
 * bound.  Returns 0, or -1 when the host is out of memory. */
static int collapse_ties(cand_vec *v)
{
    const mm_plan_cand *rep = NULL;
    for (size_t i = 0; i < v->n; i++) {
        mm_plan_cand *c = &v->c[i];
        if (c->status != MM_CAND_ESTIMATED)
            break;
        if (rep && c->est_s == rep->est_s && c->mem_gib == rep->mem_gib &&
            (c->bound_s == rep->bound_s || (isnan(c->bound_s) && isnan(rep->bound_s)))) {
            char msg[256];
            snprintf(msg, sizeof msg, "tie: the same pre-score as %s", rep->layout);
            c->status = MM_CAND_TIED;
            free(c->reason);
            c->reason = NULL;
            if (set_reason(c, "", msg))
                return -1;
            continue;
        }
        rep = c;
    }
    return 0;
}

/* After rescoring: the best simulated time, and every candidate not
 * simulated whose lower bound exceeds it is MM_CAND_BOUNDED (it cannot
 * win: proven, with the margin in its reason).  p->best_s, p->open (the
 * unproven) and p->optimal_within (how much faster than the best an
 * unproven candidate could still be, as a fraction; 0 when none can) are
 * set.  Returns the number unproven. */
static size_t prove(cand_vec *v, mm_plan *p)
{
    double best = INFINITY;
    for (size_t i = 0; i < v->n; i++)
        if (v->c[i].status == MM_CAND_SIMULATED && v->c[i].sim_s < best)
            best = v->c[i].sim_s;
    p->best_s = isfinite(best) ? best : NAN;
    size_t open = 0;
    double lowest = INFINITY;
    for (size_t i = 0; i < v->n; i++) {
        mm_plan_cand *c = &v->c[i];
        if (c->status != MM_CAND_ESTIMATED && c->status != MM_CAND_TIED)
            continue;
        if (isfinite(best) && isfinite(c->bound_s) && c->bound_s > best) {
            char msg[128];
            snprintf(msg, sizeof msg, "bound: at least %.4g s > best simulated %.4g s (+%.1f%%)", c->bound_s, best,
                     100 * (c->bound_s / best - 1));
            free(c->reason);
            c->reason = NULL;
            c->status = MM_CAND_BOUNDED;
            if (set_reason(c, "", msg))
                c->reason = NULL; /* the status says it; the margin is lost */
            continue;
        }
        open++;
        lowest = fmin(lowest, isfinite(c->bound_s) ? c->bound_s : 0);
    }
    p->open = open;
    p->optimal_within = !isfinite(best) ? NAN : open ? fmax(0, 1 - lowest / best) : 0;
    return open;
}

/* Unproven candidates first, by lower bound (then estimate, layout). */
static int cmp_bound(const void *pa, const void *pb)
{
    const mm_plan_cand *a = pa, *b = pb;
    bool oa = a->status == MM_CAND_ESTIMATED || a->status == MM_CAND_TIED;
    bool ob = b->status == MM_CAND_ESTIMATED || b->status == MM_CAND_TIED;
    if (oa != ob)
        return oa ? -1 : 1;
    int c = oa ? cmp_double(a->bound_s, b->bound_s) : 0;
    if (c == 0 && oa)
        c = cmp_double(a->est_s, b->est_s);
    if (c == 0)
        c = strcmp(a->layout, b->layout);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* ---- rescoring ---- */

/* A rerun as the runner takes it: the (resized) base scenario with the
 * candidate applied, over the rescoring iterations, as a loaded scenario
 * (a struct copy borrowing the base's strings and lists; its uneven split
 * in *lps), so the runner parses no text.  Its canonical text is complete
 * (every key, global_batch included), so the run is the in-process
 * rerun's scenario exactly, and a later plan of the same scenario finds
 * it in the store. */
static void point_scenario(const mm_scenario *base, int iterations, const mm_plan_cand *c, mm_scenario *sc,
                           lps_buf *lps)
{
    *sc = *base; /* apply_layout changes only numbers: a struct copy will do */
    mm_relayout lay = layout_of(c, lps);
    mm_scenario_apply_layout(sc, &lay);
    sc->iterations = iterations;
}

static void take_metrics(mm_plan_cand *c, const mm_metrics *m)
{
    c->sim_s = m->iteration_time_s;
    c->sim_tflops = m->tflops_per_gpu;
    c->sim_mfu = m->mfu;
    c->sim_tokens_s = m->tokens_per_s;
    c->sim_mem_gib = m->peak_memory_gib;
}

/* In this process, without a store: the shared sim, relaid out. */
static int rescore_local(mm_sim *sim, const mm_scenario *base, mm_plan_cand *top, size_t k, int iterations,
                         lps_buf *lps, mm_err *err)
{
    for (size_t i = 0; i < k; i++) {
        mm_plan_cand *c = &top[i];
        mm_err e;
        mm_err_clear(&e);
        relay(sim, base, c, lps);
        sim->sc.iterations = iterations;
        mm_metrics m;
        bool ran = false;
        int rc = mm_sim_relayout(sim, &e);
        sim->headline_only = true; /* the ranking reads take_metrics' numbers only */
        if (rc == 0)
            ran = (rc = mm_sim_run(sim, &m, NULL, &e)) == 0;
        sim->headline_only = false;
        if (ran && !m.oom) {
            take_metrics(c, &m);
            c->status = MM_CAND_SIMULATED;
        } else {
            char msg[700];
            if (rc)
                mm_err_format(&e, msg, sizeof msg);
            else
                snprintf(msg, sizeof msg, "OOM in the event-level run: %.1f GiB", m.peak_memory_gib);
            c->status = MM_CAND_FAILED;
            free(c->reason);
            c->reason = NULL;
            /* one candidate's failure (a deadlock, a cost the model cannot
             * derive) is that candidate's answer, recorded with its reason;
             * only the host running out of memory stops the plan */
            if (set_reason(c, "", msg))
                rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
            else if (rc && e.code == MM_EINTERNAL && strstr(e.msg, "out of memory"))
                rc = mm_err_set(err, MM_EINTERNAL, e.file, e.line, e.key, "%s", e.msg);
            else
                rc = 0;
        }
        if (ran)
            mm_metrics_free(&m);
        if (rc)
            return rc;
    }
    return 0;
}

/* One rescored candidate as rank 0 read it from the store, the same on
 * every MPI rank after mm_runner_bcast (plain bytes: no pointers). */
typedef struct rescored {
    int32_t ok, oom;
    int64_t run_id;
    double s, tflops, mfu, tokens_s, mem_gib;
    char reason[512];
} rescored;

/* Rank 0 (or the only process): each point's outcome read from the store. */
static int read_rescored(const mm_plan_opts *o, const mm_point_result *res, rescored *out, size_t k, mm_err *err)
{
    mm_store *st = NULL;
    int rc = mm_store_open(&st, o->db, err);
    for (size_t i = 0; i < k && rc == 0; i++) {
        rescored *x = &out[i];
        x->run_id = res[i].run_id;
        x->oom = res[i].oom;
        x->ok = (res[i].status == MM_POINT_RAN || res[i].status == MM_POINT_SKIPPED) && !res[i].oom;
        if (!x->ok) {
            snprintf(x->reason, sizeof x->reason, "%s", res[i].oom ? "OOM in the event-level run" : res[i].error);
            continue;
        }
        rc = mm_store_get_metric(st, x->run_id, "iteration_time_s", &x->s, err);
        if (!rc)
            rc = mm_store_get_metric(st, x->run_id, "tflops_per_gpu", &x->tflops, err);
        if (!rc)
            rc = mm_store_get_metric(st, x->run_id, "mfu", &x->mfu, err);
        if (!rc)
            rc = mm_store_get_metric(st, x->run_id, "tokens_per_s", &x->tokens_s, err);
        if (!rc)
            rc = mm_store_get_metric(st, x->run_id, "peak_memory_gib", &x->mem_gib, err);
    }
    mm_store_close(st);
    return rc;
}

/* Through the runner (forked workers, or MPI ranks), into the store.
 * Under MPI every rank runs the same plan: the runner shares the points
 * among the ranks, rank 0 stores them and reads them back, and every rank
 * gets rank 0's reading, so that all take the same next step. */
static int rescore_store(const mm_plan_opts *o, const mm_scenario *base, mm_plan_cand *top, size_t k,
                         int iterations, mm_err *err)
{
    mm_scenario *scs = calloc(k + 1, sizeof *scs);
    lps_buf *lps = calloc(k + 1, sizeof *lps);
    mm_point *pts = calloc(k + 1, sizeof *pts);
    mm_point_result *res = calloc(k + 1, sizeof *res);
    rescored *got = calloc(k + 1, sizeof *got);
    int rc = 0;
    if (!scs || !lps || !pts || !res || !got) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < k; i++) {
        point_scenario(base, iterations, &top[i], &scs[i], &lps[i]);
        pts[i] = (mm_point){.scenario = base->source, .sc = &scs[i]};
    }
    mm_runner_opts ro = {.db = o->db, .jobs = o->jobs, .version = o->version ? o->version : "?",
                         .mpi_rank = o->mpi_rank, .mpi_size = o->mpi_size};
    if ((rc = mm_runner_run(&ro, pts, k, res, NULL, err)))
        goto out;
    int32_t read_rc = 0;
    if (o->mpi_rank == 0)
        read_rc = read_rescored(o, res, got, k, err);
    if ((rc = mm_runner_bcast(&ro, &read_rc, sizeof read_rc, err)))
        goto out;
    if (read_rc) { /* rank 0's error; the others say only that it failed */
        rc = o->mpi_rank == 0 ? read_rc
                              : mm_err_set(err, MM_EINTERNAL, "", 0, "", "MPI rank 0 could not read the rescored runs");
        goto out;
    }
    if ((rc = mm_runner_bcast(&ro, got, k * sizeof *got, err)))
        goto out;
    for (size_t i = 0; i < k && rc == 0; i++) {
        mm_plan_cand *c = &top[i];
        const rescored *x = &got[i];
        c->run_id = x->run_id;
        if (x->ok) {
            mm_metrics m;
            memset(&m, 0, sizeof m);
            m.iteration_time_s = x->s;
            m.tflops_per_gpu = x->tflops;
            m.mfu = x->mfu;
            m.tokens_per_s = x->tokens_s;
            m.peak_memory_gib = x->mem_gib;
            take_metrics(c, &m);
            c->status = MM_CAND_SIMULATED;
        } else {
            c->status = MM_CAND_FAILED;
            free(c->reason);
            c->reason = NULL;
            if (set_reason(c, "", x->reason))
                rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        }
    }
out:
    free(scs); /* borrowed copies: nothing of theirs to free */
    free(lps);
    free(pts);
    free(res);
    free(got);
    return rc;
}

/* ---- storing ---- */

static int store_plan(const mm_plan_opts *o, const mm_scenario *base, mm_plan *p, mm_err *err)
{
    char *text = mm_scenario_canonical_alloc(base);
    if (!text)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    char created[32];
    if (o->created_at) {
        snprintf(created, sizeof created, "%s", o->created_at);
    } else {
        mm_runner_now(created, sizeof created);
    }
    mm_plan_record rec = {.created_at = created, .version = o->version ? o->version : "?",
                          .scenario_source = base->source, .scenario_text = text, .gpus = p->gpus,
                          .top_k = p->top_k, .iterations = p->iterations};
    mm_plan_row *rows = calloc(p->n + 1, sizeof *rows);
    size_t total = 1;
    for (size_t i = 0; i < p->n; i++)
        total += mm_plan_cand_sets_json(&p->c[i], NULL, 0) + 1;
    char *sets = malloc(total);
    if (!rows || !sets) {
        free(rows);
        free(sets);
        free(text);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    size_t at = 0;
    for (size_t i = 0; i < p->n; i++) {
        const mm_plan_cand *c = &p->c[i];
        size_t n = mm_plan_cand_sets_json(c, sets + at, total - at) + 1;
        rows[i] = (mm_plan_row){.candidate = c->index, .layout = c->layout, .sets = sets + at,
                                .status = mm_cand_status_names[c->status], .reason = c->reason, .rank = c->rank,
                                .estimate_s = c->est_s, .estimate_tflops_per_gpu = c->est_tflops,
                                .estimate_mfu = c->est_mfu, .peak_memory_gib = c->mem_gib, .run_id = c->run_id,
                                .lower_bound_s = c->bound_s};
        at += n;
    }
    mm_store *st = NULL;
    int rc = mm_store_open(&st, o->db, err);
    if (rc == 0)
        rc = mm_store_write_plan(st, &rec, rows, p->n, &p->plan_id, err);
    mm_store_close(st);
    free(rows);
    free(sets);
    free(text);
    return rc;
}

/* ---- the whole plan ---- */

static int check_opts(const mm_plan_opts *o, mm_err *err)
{
    if (o->gpus < 0)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--gpus", "must be a positive number of GPUs, not %d", o->gpus);
    if (o->top_k < 0)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--top", "must be 0 or more, not %d", o->top_k);
    if (o->iterations < 0)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--iterations", "must be 1 or more, not %d", o->iterations);
    if (o->max_pp < 0)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--max-pp", "must be 1 or more, not %d", o->max_pp);
    if (o->mpi_size > 1 && !o->db)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--no-db",
                          "under mpirun the rescoring is shared among the ranks through rank 0's database; "
                          "give --db FILE (or run without mpirun)");
    return 0;
}

/* Loads the base scenario as it stands (base->nodes), enumerates and
 * scores every candidate into v; p gets the counts, host times and the
 * description of the cluster. */
static int plan_on(const mm_plan_opts *o, const mm_plan_space *space, mm_scenario *base, mm_sim *sim, cand_vec *v,
                   lps_buf *lps, mm_plan *p, mm_err *err)
{
    double t0 = mm_host_seconds();
    int rc = mm_sim_load(sim, base, err);
    if (rc || (rc = mm_sim_check_limits(sim, err)))
        return rc;
    const mm_model *mo = sim->model;
    mm_space_facts sp = {
        .G = mm_cluster_gpus(sim->cluster), .gpn = sim->cluster->gpus_per_node,
        .layers = sim->llm->layers, .heads = sim->llm->heads, .experts = sim->llm->experts, .seq = base->train.seq_len,
        .global_batch = base->train.global_batch,
        .max_pp = o->max_pp > 0 ? o->max_pp : 32, .zero_stages = sim->fw ? sim->fw->zero_stages : 0xfu,
        .schedules = sim->fw ? sim->fw->schedules : ~0u,
        .base_schedule = base->train.schedule == MM_SCHED_INTERLEAVED || base->train.schedule == MM_SCHED_ZB_V
                             ? MM_SCHED_1F1B
                             : (int)base->train.schedule,
    };
    sp.encoder = mo->has_vision && (base->workload.kind == MM_WORKLOAD_FILE ||
                                    (base->workload.kind == MM_WORKLOAD_FIXED &&
                                     base->workload.images * base->workload.tiles > 0));
    if (sp.encoder) { /* the vision encoder's (sim->enc is filled by validation) */
        sp.enc_layers = mo->vision.layers;
        sp.enc_heads = mo->vision.heads;
    }
    p->gpus = sp.G;
    p->gpus_per_node = sp.gpn;
    p->nodes = sim->cluster->nodes;
    p->has_encoder = sp.encoder;
    p->iterations = o->iterations > 0 ? o->iterations : base->iterations;
    snprintf(p->model, sizeof p->model, "%s", sim->llm->name);
    snprintf(p->base_source, sizeof p->base_source, "%s", base->source);
    if (enumerate(&sp, space, o->placements ? o->placements : 0xfu, v))
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    count_dims(v, p);
    p->enumerate_s += mm_host_seconds() - t0;
    /* a node count given up on (no layout) counts as enumeration time */
    p->enumerate_s += p->validate_s + p->estimate_s;
    p->validate_s = p->estimate_s = 0;
    p->pruned = p->oom = p->estimated = p->prescored = 0;
    for (size_t i = 0; i < v->n; i++) {
        int s = score(sim, base, &v->c[i], lps, p, err);
        if (s < 0)
            return s;
        if (v->c[i].status == MM_CAND_PRUNED) {
            p->pruned++;
            p->oom += v->c[i].reason && !strncmp(v->c[i].reason, "OOM", 3);
        } else {
            p->estimated++;
        }
    }
    return 0;
}

/* --gpus: the cluster resized to o->gpus / (the topology's GPUs per node)
 * nodes; the node size comes from the topology, loaded once to resize. */
static int resize_nodes(const mm_plan_opts *o, mm_scenario *base, mm_err *err)
{
    char topo[512];
    mm_cluster *cl = malloc(sizeof *cl);
    if (!cl)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    mm_sim_resolve_path(base->topology, base->source, topo, sizeof topo);
    int rc = mm_cluster_load(topo, 1, cl, err);
    int gpn = cl->gpus_per_node;
    mm_cluster_free(cl);
    free(cl);
    if (rc)
        return rc;
    if (o->gpus % gpn) {
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--gpus",
                          "%d GPUs are not whole nodes of %d GPUs (%s); the cluster is resized to --gpus / %d nodes",
                          o->gpus, gpn, base->topology, gpn);
    }
    base->nodes = o->gpus / gpn;
    return 0;
}

/* The candidates in their final order, ranked (simulated and estimated
 * ones), with the plan's counts of simulated, failed and estimated ones. */
static void rank_cands(cand_vec *v, mm_plan *p)
{
    qsort(v->c, v->n, sizeof *v->c, cmp_rank);
    int rank = 0;
    p->estimated = 0;
    for (size_t i = 0; i < v->n; i++) {
        mm_plan_cand *c = &v->c[i];
        p->simulated += c->status == MM_CAND_SIMULATED;
        p->failed += c->status == MM_CAND_FAILED;
        p->estimated += c->status == MM_CAND_ESTIMATED;
        p->tied += c->status == MM_CAND_TIED;
        p->bounded += c->status == MM_CAND_BOUNDED;
        if (c->status != MM_CAND_PRUNED && c->status != MM_CAND_FAILED)
            c->rank = ++rank;
    }
}

/* The node search: the candidates on the cluster, then on one node fewer
 * while none is estimated, down to half the nodes asked; when none is
 * anywhere, the full cluster's reasons (planner.h, step 2).  A part of
 * mm_plan_run. */
static int search_nodes(const mm_plan_opts *o, const mm_plan_space *space, mm_scenario *base, mm_sim *sim, cand_vec *v,
                        lps_buf *lps, mm_plan *p, mm_err *err)
{
    int rc, min_nodes = 0;
    for (;;) {
        if ((rc = plan_on(o, space, base, sim, v, lps, p, err)))
            return rc;
        if (!p->gpus_asked)
            p->gpus_asked = p->gpus, min_nodes = (p->nodes + 1) / 2;
        if (p->estimated > 0 || base->nodes <= min_nodes) {
            if (p->estimated > 0 || p->gpus == p->gpus_asked)
                break;
            base->nodes = p->gpus_asked / p->gpus_per_node; /* none anywhere: report the full cluster */
            min_nodes = base->nodes + 1;
        } else {
            base->nodes--; /* no layout on these GPUs: one node fewer (planner.h, step 2) */
        }
        for (size_t i = 0; i < v->n; i++)
            free(v->c[i].reason);
        v->n = 0;
        mm_sim_free(sim);
        memset(sim, 0, sizeof *sim);
    }
    return 0;
}

/* The estimated candidates' ties collapsed, then the top ones simulated,
 * and (--prove) the unproven with the lowest bounds after them.  A part of
 * mm_plan_run. */
static int simulate_top(const mm_plan_opts *o, mm_scenario *base, mm_sim *sim, cand_vec *v, lps_buf *lps, mm_plan *p,
                        mm_err *err)
{
    double t2 = mm_host_seconds();
    qsort(v->c, v->n, sizeof *v->c, cmp_estimate);
    if (collapse_ties(v))
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    qsort(v->c, v->n, sizeof *v->c, cmp_estimate); /* the tied ones after the estimated */
    size_t live = 0;
    while (live < v->n && v->c[live].status == MM_CAND_ESTIMATED)
        live++;
    size_t k = (size_t)o->top_k < live ? (size_t)o->top_k : live;
    p->top_k = o->top_k;
    size_t extra = (size_t)o->prove;
    for (;;) {
        if (k > 0) {
            int rc = o->db ? rescore_store(o, base, v->c, k, p->iterations, err)
                           : rescore_local(sim, base, v->c, k, p->iterations, lps, err);
            if (rc)
                return rc;
        }
        size_t open = prove(v, p);
        if (!open || !extra || !isfinite(p->best_s))
            break;
        /* the unproven with the lowest bounds next: they are the ones that could still win */
        qsort(v->c, v->n, sizeof *v->c, cmp_bound);
        k = open < extra ? open : extra;
        if (o->top_k > 0 && k > (size_t)o->top_k)
            k = (size_t)o->top_k;
        extra -= k;
    }
    p->simulate_s = mm_host_seconds() - t2;
    return 0;
}

int mm_plan_run(const mm_plan_opts *o, mm_plan *p, mm_err *err)
{
    double t0 = mm_host_seconds();
    memset(p, 0, sizeof *p);
    int rc = check_opts(o, err);
    if (rc)
        return rc;
    mm_plan_space space;
    memset(&space, 0, sizeof space);
    for (int i = 0; i < o->n_space; i++)
        if ((rc = mm_plan_space_parse(&space, o->space[i], err)))
            return rc;
    mm_scenario *base = calloc(1, sizeof *base);
    mm_sim *sim = calloc(1, sizeof *sim);
    lps_buf *lps = malloc(sizeof *lps);
    cand_vec v = {0};
    if (!base || !sim || !lps) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    if (o->base)
        *base = *o->base; /* borrowed: only numbers (nodes, the layout) change */
    else if ((rc = mm_scenario_load(base, o->scenario, o->sets, o->n_sets, err)))
        goto out;
    if (o->gpus > 0 && (rc = resize_nodes(o, base, err)))
        goto out;
    if ((rc = search_nodes(o, &space, base, sim, &v, lps, p, err)) ||
        (rc = simulate_top(o, base, sim, &v, lps, p, err)))
        goto out;
    rank_cands(&v, p);
    p->c = v.c;
    p->n = v.n;
    v.c = NULL;
    if (o->db && o->mpi_rank == 0 && (rc = store_plan(o, base, p, err)))
        goto out;
    p->wall_s = mm_host_seconds() - t0;
out:
    if (rc && p->c) {
        mm_plan_free(p);
    }
    for (size_t i = 0; v.c && i < v.n; i++)
        free(v.c[i].reason);
    free(v.c);
    mm_sim_free(sim);
    free(sim);
    if (base && !o->base)
        mm_scenario_free(base);
    free(base);
    free(lps);
    return rc;
}

int mm_plan_pick_load(const mm_plan_opts *o, const mm_plan *p, mm_plan_pick *pick, mm_err *err)
{
    memset(pick, 0, sizeof *pick);
    const mm_plan_cand *best = NULL;
    for (size_t i = 0; i < p->n && !best; i++)
        if (p->c[i].rank == 1)
            best = &p->c[i];
    if (!best)
        return mm_err_set(err, MM_EINPUT, o->scenario ? o->scenario : "<default>", 0, "parallel",
                          "no layout fits on %d GPUs: there is no pick to hand on", p->gpus_asked);
    if (o->base) {
        pick->base = *o->base; /* borrowed, as mm_plan_run borrows it */
    } else {
        int rc = mm_scenario_load(&pick->base, o->scenario, o->sets, o->n_sets, err);
        if (rc)
            return rc;
        pick->owns_base = true;
    }
    pick->base.nodes = p->nodes;
    point_scenario(&pick->base, pick->base.iterations, best, &pick->sc, &pick->lps);
    return 0;
}

void mm_plan_pick_free(mm_plan_pick *pick)
{
    if (pick->owns_base)
        mm_scenario_free(&pick->base);
    memset(pick, 0, sizeof *pick);
}

double mm_plan_prescore_tau(const mm_plan *p)
{
    double conc = 0, disc = 0, tx = 0, ty = 0;
    for (size_t i = 0; i < p->n; i++) {
        const mm_plan_cand *a = &p->c[i];
        if (a->status != MM_CAND_SIMULATED)
            continue;
        for (size_t j = i + 1; j < p->n; j++) {
            const mm_plan_cand *b = &p->c[j];
            if (b->status != MM_CAND_SIMULATED)
                continue;
            double dx = a->est_s - b->est_s, dy = a->sim_s - b->sim_s;
            if (dx == 0 && dy == 0)
                continue;
            if (dx == 0)
                tx++;
            else if (dy == 0)
                ty++;
            else if ((dx > 0) == (dy > 0))
                conc++;
            else
                disc++;
        }
    }
    double d = sqrt((conc + disc + tx) * (conc + disc + ty));
    return d > 0 ? (conc - disc) / d : NAN;
}

void mm_plan_free(mm_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->c && i < p->n; i++)
        free(p->c[i].reason);
    free(p->c);
    p->c = NULL;
    p->n = 0;
}
