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
#include "store/planstore.h"
#include "store/store.h"
#include "util/misc.h"

const char *const mm_cand_status_names[] = {"pruned", "estimated", "simulated", "failed", NULL};

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
    char enc[64] = "";
    if (c->placement >= 0 && mm_layout_has_vision(c->placement))
        snprintf(enc, sizeof enc, " vision tp%d pp%d dp%d |", c->vision.tp, c->vision.pp, c->vision.dp);
    char pl[32] = "";
    if (c->placement >= 0)
        snprintf(pl, sizeof pl, "%s |", mm_placement_names[c->placement]);
    char split[48] = "";
    if (c->first_layers)
        snprintf(split, sizeof split, " layers %d+%dx%d+%d", c->first_layers, c->mid_layers, c->llm.pp - 2,
                 c->last_layers);
    int n = snprintf(c->layout, sizeof c->layout, "%s%s llm tp%d pp%d vpp%d cp%d dp%d ep%d%s | mb%d %s zero%d",
                     pl, enc, c->llm.tp, c->llm.pp, c->llm.vpp, c->llm.cp, c->llm.dp, c->llm.ep, split,
                     c->micro_batch, mm_recompute_names[c->recompute], c->zero);
    if (n < 0 || (size_t)n >= sizeof c->layout) /* cannot happen with these widths; keep it terminated */
        c->layout[sizeof c->layout - 1] = '\0';
    if (c->layout[0] == ' ')
        memmove(c->layout, c->layout + 1, strlen(c->layout));
}

/* Room for an uneven split's layers per stage, which a layout borrows
 * (scenario.h): it must outlive the scenario the layout is applied to. */
typedef struct lps_buf {
    int v[MM_MAX_PP];
} lps_buf;

/* The candidate as a layout of the scenario layer, which applies it
 * (mm_scenario_apply_layout) the same way for the pre-score, the in-process
 * reruns and the stored reruns; an uneven split is written into *lps. */
static mm_relayout layout_of(const mm_plan_cand *c, lps_buf *lps)
{
    mm_relayout lay = {.placement = c->placement, .llm = c->llm, .vision = c->vision,
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

typedef struct space {
    int G, gpn;
    int64_t layers, experts;
    int64_t seq;
    int max_pp;
    int base_schedule; /* used when vpp = 1 (1f1b if it was interleaved) */
    unsigned placements;
    bool encoder;
} space;

static int divisors(int n, int max, int *out, int cap)
{
    int k = 0;
    for (int d = 1; d <= n && d <= max && k < cap; d++)
        if (n % d == 0)
            out[k++] = d;
    return k;
}

/* How L layers go on pp stages of vpp chunks each, following Megatron-LM
 * (megatron/core/transformer/transformer_block.py, the layer offsets of
 * get_num_layers_to_build and its pipeline-split options):
 *   - even: L / (pp vpp) per chunk when that divides (returns 1);
 *   - account_for_embedding_in_pipeline_split + ..._loss_...: the
 *     embedding and the loss count as a layer of the first and the last
 *     stage, so (L + 2) / pp per stage and one transformer layer fewer on
 *     those two (vpp 1 only: with chunks the first chunk alone would be
 *     short, which per-stage counts cannot say);
 *   - --decoder-first/last-pipeline-num-layers f, l: the pp - 2 middle
 *     stages take (L - f - l) / (pp - 2) each; with vpp every stage's count
 *     must divide by vpp.  We pick the middle count that minimizes the
 *     largest stage, the first stage taking the odd vpp-multiple (the last
 *     one carries the output layer and the loss).
 * Returns 0 with *f, *m, *l set (uneven), 1 (even), -1 (no split). */
static int split_layers(int64_t L, int pp, int vpp, int *f, int *m, int *l)
{
    *f = *m = *l = 0;
    if (L % ((int64_t)pp * vpp) == 0)
        return 1;
    if (pp < 2 || L % vpp)
        return -1;
    if (vpp == 1 && (L + 2) % pp == 0 && (L + 2) / pp >= 2) {
        int per = (int)((L + 2) / pp);
        *f = *l = per - 1;
        *m = per;
        return 0;
    }
    int best = -1;
    for (int64_t mid = pp > 2 ? vpp : 0; (pp - 2) * mid <= L - 2 * vpp; mid += vpp) {
        int64_t rest = L - (pp - 2) * mid, last = vpp * (rest / (2 * vpp)), first = rest - last;
        int64_t worst = first > mid ? first : mid;
        if (last >= vpp && (best < 0 || worst <= best)) {
            best = (int)worst;
            *f = (int)first, *m = (int)mid, *l = (int)last;
        }
        if (pp == 2)
            break;
    }
    return best < 0 ? -1 : 0;
}

/* The LLM's degrees on gllm GPUs, crossed with the training choices. */
static int enum_llm(const space *sp, cand_vec *v, const mm_plan_cand *proto, int gllm)
{
    int tps[16], pps[64];
    int ntp = divisors(sp->gpn, sp->gpn, tps, 16);
    int npp = 0; /* every depth up to max_pp: uneven splits cover what does not divide */
    for (int p = 1; p <= sp->max_pp && p <= sp->layers && npp < 64; p++)
        pps[npp++] = p;
    int cps[3] = {1, 2, 4}, ncp = sp->seq >= 32768 ? 3 : sp->seq >= 8192 ? 2 : 1;
    int eps[8] = {1}, nep = 1;
    for (int e = 2; e <= 8 && sp->experts > 0; e *= 2)
        if (sp->experts % e == 0)
            eps[nep++] = e;
    static const int mbs[] = {1, 2, 4, 8};
    static const int rcs[] = {MM_RECOMPUTE_SELECTIVE, MM_RECOMPUTE_FULL};
    static const int zeros[] = {1, 0};
    for (int a = 0; a < ntp; a++)
        for (int b = 0; b < ncp; b++)
            for (int p = 0; p < npp; p++) {
                long long mp = (long long)tps[a] * cps[b] * pps[p];
                if (gllm % mp)
                    continue;
                int dp = (int)(gllm / mp);
                for (int vpp = 1; vpp <= (pps[p] > 1 ? 2 : 1); vpp++) {
                    int fl, ml, ll;
                    if (split_layers(sp->layers, pps[p], vpp, &fl, &ml, &ll) < 0)
                        continue;
                    for (int e = 0; e < nep; e++)
                        for (int m = 0; m < 4; m++)
                            for (int r = 0; r < 2; r++)
                                for (int z = 0; z < 2; z++) {
                                    mm_plan_cand *c = cand_push(v);
                                    if (!c)
                                        return -1;
                                    int idx = c->index;
                                    *c = *proto;
                                    c->index = idx;
                                    c->llm = (mm_layout){.tp = tps[a], .pp = pps[p], .vpp = vpp, .cp = cps[b],
                                                            .dp = dp, .ep = eps[e]};
                                    c->micro_batch = mbs[m];
                                    c->recompute = rcs[r];
                                    c->zero = zeros[z];
                                    c->schedule = vpp > 1 ? MM_SCHED_INTERLEAVED : sp->base_schedule;
                                    c->first_layers = fl, c->mid_layers = ml, c->last_layers = ll;
                                    cand_layout(c);
                                }
                }
            }
    return 0;
}

static int enumerate(const space *sp, cand_vec *v)
{
    mm_plan_cand proto;
    memset(&proto, 0, sizeof proto);
    proto.placement = -1;
    if (!sp->encoder)
        return enum_llm(sp, v, &proto, sp->G);
    /* placements in the enum's order: pipeline, colocated, disjoint, homogeneous */
    for (int pl = 0; pl < 4; pl++) {
        if (!(sp->placements & (1u << pl)))
            continue;
        proto.placement = pl;
        if (pl == MM_PLACE_HOMOGENEOUS) {
            proto.vision = (mm_layout){0};
            if (enum_llm(sp, v, &proto, sp->G))
                return -1;
            continue;
        }
        int tps[16], ntp = divisors(sp->gpn, sp->gpn, tps, 16);
        if (pl == MM_PLACE_COLOCATED) {
            for (int a = 0; a < ntp; a++) {
                proto.vision = (mm_layout){.tp = tps[a], .pp = 1, .dp = sp->G / tps[a], .vpp = 1, .cp = 1, .ep = 1};
                if (enum_llm(sp, v, &proto, sp->G))
                    return -1;
            }
            continue;
        }
        /* the encoder's own GPUs: G/128 ... G/4 */
        static const int num[] = {1, 1, 1, 1, 1, 3, 1}, den[] = {128, 64, 32, 16, 8, 16, 4};
        int last = 0;
        for (int f = 0; f < 7; f++) {
            if ((long long)sp->G * num[f] % den[f])
                continue;
            int ge = (int)((long long)sp->G * num[f] / den[f]);
            if (ge < 1 || ge == last || ge >= sp->G)
                continue;
            last = ge;
            proto.enc_gpus = ge;
            for (int a = 0; a < ntp; a++) {
                if (ge % tps[a])
                    continue;
                proto.vision = (mm_layout){.tp = tps[a], .pp = 1, .dp = ge / tps[a], .vpp = 1, .cp = 1, .ep = 1};
                if (enum_llm(sp, v, &proto, sp->G - ge))
                    return -1;
            }
        }
        proto.enc_gpus = 0;
    }
    return 0;
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

/* Validation, memory, estimate of one candidate in the shared sim; the
 * host time of the validation and of the estimate go to p apart, and p
 * counts the candidates the estimate ran on. */
static int score(mm_sim *sim, const mm_scenario *base, mm_plan_cand *c, lps_buf *lps, mm_plan *p, mm_err *err)
{
    mm_err e;
    mm_err_clear(&e);
    relay(sim, base, c, lps);
    c->est_s = c->est_tflops = c->est_mfu = c->mem_gib = NAN;
    c->sim_s = c->sim_tflops = c->sim_mfu = c->sim_tokens_s = c->sim_mem_gib = NAN;
    double t0 = mm_host_seconds();
    int rc = mm_sim_relayout(sim, &e);
    double t1 = mm_host_seconds();
    p->validate_s += t1 - t0;
    if (rc == 0) {
        c->micro_batches = sim->micro_batches;
        mm_metrics m;
        rc = mm_sim_estimate(sim, &m, &e);
        p->estimate_s += mm_host_seconds() - t1;
        p->prescored++;
        if (rc == 0) {
            c->mem_gib = m.peak_memory_gib;
            if (m.oom) {
                char msg[96];
                double cap = sim->cluster->gpu.hbm_bytes / MM_GIB - sim->sc.train.memory_reserve_gib;
                snprintf(msg, sizeof msg, "OOM: %.1f GiB > %.1f GiB", m.peak_memory_gib, cap);
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
    static const int order[] = {[MM_CAND_SIMULATED] = 0, [MM_CAND_ESTIMATED] = 1, [MM_CAND_FAILED] = 2,
                                [MM_CAND_PRUNED] = 3};
    if (order[a->status] != order[b->status])
        return order[a->status] - order[b->status];
    int c = 0;
    if (a->status == MM_CAND_SIMULATED)
        c = cmp_double(a->sim_s, b->sim_s);
    if (c == 0 && (a->status == MM_CAND_SIMULATED || a->status == MM_CAND_ESTIMATED))
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

/* Through the runner (forked workers), into the store. */
static int rescore_store(const mm_plan_opts *o, const mm_scenario *base, mm_plan_cand *top, size_t k,
                         int iterations, mm_err *err)
{
    mm_scenario *scs = calloc(k + 1, sizeof *scs);
    lps_buf *lps = calloc(k + 1, sizeof *lps);
    mm_point *pts = calloc(k + 1, sizeof *pts);
    mm_point_result *res = calloc(k + 1, sizeof *res);
    int rc = 0;
    if (!scs || !lps || !pts || !res) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < k; i++) {
        point_scenario(base, iterations, &top[i], &scs[i], &lps[i]);
        pts[i] = (mm_point){.scenario = base->source, .sc = &scs[i]};
    }
    mm_runner_opts ro = {.db = o->db, .jobs = o->jobs, .version = o->version ? o->version : "?"};
    if ((rc = mm_runner_run(&ro, pts, k, res, NULL, err)))
        goto out;
    mm_store *st = NULL;
    if ((rc = mm_store_open(&st, o->db, err)))
        goto out;
    for (size_t i = 0; i < k && rc == 0; i++) {
        mm_plan_cand *c = &top[i];
        if ((res[i].status == MM_POINT_RAN || res[i].status == MM_POINT_SKIPPED) && !res[i].oom) {
            mm_metrics m;
            memset(&m, 0, sizeof m);
            c->run_id = res[i].run_id;
            rc = mm_store_get_metric(st, c->run_id, "iteration_time_s", &m.iteration_time_s, err);
            if (!rc)
                rc = mm_store_get_metric(st, c->run_id, "tflops_per_gpu", &m.tflops_per_gpu, err);
            if (!rc)
                rc = mm_store_get_metric(st, c->run_id, "mfu", &m.mfu, err);
            if (!rc)
                rc = mm_store_get_metric(st, c->run_id, "tokens_per_s", &m.tokens_per_s, err);
            if (!rc)
                rc = mm_store_get_metric(st, c->run_id, "peak_memory_gib", &m.peak_memory_gib, err);
            take_metrics(c, &m);
            c->status = MM_CAND_SIMULATED;
        } else {
            c->run_id = res[i].run_id;
            c->status = MM_CAND_FAILED;
            free(c->reason);
            c->reason = NULL;
            if (set_reason(c, "", res[i].oom ? "OOM in the event-level run" : res[i].error))
                rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        }
    }
    mm_store_close(st);
out:
    free(scs); /* borrowed copies: nothing of theirs to free */
    free(lps);
    free(pts);
    free(res);
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
                                .estimate_mfu = c->est_mfu, .peak_memory_gib = c->mem_gib, .run_id = c->run_id};
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
    return 0;
}

/* Loads the base scenario as it stands (base->nodes), enumerates and
 * scores every candidate into v; p gets the counts, host times and the
 * description of the cluster. */
static int plan_on(const mm_plan_opts *o, mm_scenario *base, mm_sim *sim, cand_vec *v, lps_buf *lps, mm_plan *p,
                   mm_err *err)
{
    double t0 = mm_host_seconds();
    int rc = mm_sim_load(sim, base, err);
    if (rc || (rc = mm_sim_check_limits(sim, err)))
        return rc;
    const mm_model *mo = sim->model;
    space sp = {
        .G = mm_cluster_gpus(sim->cluster), .gpn = sim->cluster->gpus_per_node,
        .layers = sim->llm->layers, .experts = sim->llm->experts, .seq = base->train.seq_len,
        .max_pp = o->max_pp > 0 ? o->max_pp : 32,
        .base_schedule = base->train.schedule == MM_SCHED_INTERLEAVED ? MM_SCHED_1F1B : (int)base->train.schedule,
        .placements = o->placements ? o->placements : 0xfu,
    };
    sp.encoder = mo->has_vision && (base->workload.kind == MM_WORKLOAD_FILE ||
                                    (base->workload.kind == MM_WORKLOAD_FIXED &&
                                     base->workload.images * base->workload.tiles > 0));
    p->gpus = sp.G;
    p->gpus_per_node = sp.gpn;
    p->nodes = sim->cluster->nodes;
    p->has_encoder = sp.encoder;
    p->iterations = o->iterations > 0 ? o->iterations : base->iterations;
    snprintf(p->model, sizeof p->model, "%s", sim->llm->name);
    snprintf(p->base_source, sizeof p->base_source, "%s", base->source);
    if (enumerate(&sp, v))
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
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
    for (size_t i = 0; i < v->n; i++) {
        mm_plan_cand *c = &v->c[i];
        p->simulated += c->status == MM_CAND_SIMULATED;
        p->failed += c->status == MM_CAND_FAILED;
        if (c->status == MM_CAND_SIMULATED || c->status == MM_CAND_ESTIMATED)
            c->rank = ++rank;
    }
    p->estimated -= p->simulated + p->failed;
}

int mm_plan_run(const mm_plan_opts *o, mm_plan *p, mm_err *err)
{
    double t0 = mm_host_seconds();
    memset(p, 0, sizeof *p);
    int rc = check_opts(o, err);
    if (rc)
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
    int min_nodes = 0;
    for (;;) {
        if ((rc = plan_on(o, base, sim, &v, lps, p, err)))
            goto out;
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
        for (size_t i = 0; i < v.n; i++)
            free(v.c[i].reason);
        v.n = 0;
        mm_sim_free(sim);
        memset(sim, 0, sizeof *sim);
    }
    double t2 = mm_host_seconds();
    qsort(v.c, v.n, sizeof *v.c, cmp_estimate);
    size_t k = (size_t)o->top_k < p->estimated ? (size_t)o->top_k : p->estimated;
    p->top_k = o->top_k;
    if (k > 0) {
        rc = o->db ? rescore_store(o, base, v.c, k, p->iterations, err)
                   : rescore_local(sim, base, v.c, k, p->iterations, lps, err);
        if (rc)
            goto out;
    }
    p->simulate_s = mm_host_seconds() - t2;
    rank_cands(&v, p);
    p->c = v.c;
    p->n = v.n;
    v.c = NULL;
    if (o->db && (rc = store_plan(o, base, p, err)))
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
