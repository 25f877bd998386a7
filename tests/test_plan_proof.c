/* test_plan_proof.c - Check suite for what the planner proves
 * (sim/plan/planner.h): on small spaces (8-16 GPUs, a text model and an
 * MLLM with a drawn mixture) every candidate is simulated event by event,
 * and
 *   - the planner's pick with K = 2 and its proof (--prove) is the
 *     exhaustive best, reported "optimal within 0";
 *   - no candidate's lower bound exceeds its event-level time (the bound
 *     is a bound), so nothing the proof skips could have won;
 *   - memory: every candidate pruned for memory is OOM when `mmsim run`'s
 *     path runs it, and every candidate that is not pruned fits (the same
 *     draws and mm_sim_data_memory over the same iterations);
 *   - the pre-score orders the MLLM space as the event-level runs do
 *     (Kendall's tau, the workload's drawn micro-batches timed);
 *   - exact ties of the pre-score are collapsed before the top K;
 *   - --space narrows and bad --space input is refused naming the flag.
 * Not for: the Megatron-LM rows and the CLI's output (test_plan). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "cost/costs.h"
#include "exec/run.h"
#include "plan/estimate.h"
#include "plan/planner.h"
#include "plan/space.h"
#include "plan/span.h"
#include "scenario/sim.h"

/* Text: GPT-3 1.3B on 8 H100s, every LLM dimension left open but the
 * micro-batch size and ZeRO stage, which only multiply the count here. */
static const char *const text_sets[] = {"model=models/gpt3-1.3b.json", "train.global_batch=16", "train.seq_len=2048",
                                        "iterations=1"};
static const char *const text_space[] = {"micro_batch=1,2", "zero=1", "pp=1,2,4", "cp=1,2"};

/* MLLM: the default LLaVA-OV-7B-like model with the LLaVA-OV mixture
 * (drawn samples), 16 GPUs, two iterations of its data. */
static const char *const mllm_sets[] = {"workload=workloads/llava-ov-mix.yaml", "train.global_batch=32",
                                        "iterations=2"};
static const char *const mllm_space[] = {"micro_batch=1,2", "zero=1", "pp=1,2", "cp=1", "tp=2,4",
                                         "enc_tp=1,2", "enc_pp=1", "enc_gpus=2,4", "schedule=1f1b,interleaved",
                                         "vpp=1,2"};

typedef struct space_case {
    const char *const *sets;
    int n_sets, gpus, iterations;
    const char *const *space;
    int n_space;
} space_case;

static const space_case cases[] = {
    {text_sets, 4, 8, 1, text_space, 4},
    {mllm_sets, 3, 16, 2, mllm_space, 10},
};

static void plan(const space_case *k, int top, int prove, mm_plan *p)
{
    mm_plan_opts o = {.sets = k->sets, .n_sets = k->n_sets, .gpus = k->gpus, .top_k = top, .prove = prove,
                      .iterations = k->iterations, .jobs = 1, .space = k->space, .n_space = k->n_space};
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_plan_run(&o, p, &err) == 0, "%s", err.msg);
}

START_TEST(pick_is_exhaustive_best)
{
    const space_case *k = &cases[_i];
    mm_plan all, pick;
    plan(k, 100000, 0, &all); /* every survivor simulated */
    ck_assert_int_gt((int)all.simulated, 4);
    ck_assert_int_eq((int)all.estimated, 0);
    double best = INFINITY;
    for (size_t i = 0; i < all.n; i++) {
        const mm_plan_cand *c = &all.c[i];
        ck_assert(c->status != MM_CAND_BOUNDED);
        if (c->status != MM_CAND_SIMULATED)
            continue;
        best = fmin(best, c->sim_s);
        /* the bound is a bound: no event-level time below it */
        ck_assert_msg(c->bound_s <= c->sim_s * (1 + 1e-12), "%s: bound %.6g s > simulated %.6g s", c->layout,
                      c->bound_s, c->sim_s);
    }
    ck_assert_double_eq(all.c[0].sim_s, best);
    /* the pre-score orders the space as the event-level runs do: the
     * planner's target, tau >= 0.9 (GPT-3 1.3B 0.984, the MLLM 0.963;
     * 0.791 and 0.954 before the interleaved, ZB-2p and ZB-V orders were
     * played on the passes and the CP exchanges counted) */
    double tau = mm_plan_prescore_tau(&all);
    ck_assert_msg(tau >= 0.9, "case %d: Kendall tau of the pre-score vs event-level %.3f < 0.9", _i, tau);
    plan(k, 2, 100000, &pick); /* two by the estimate, then the proof */
    ck_assert_int_eq(pick.c[0].status, MM_CAND_SIMULATED);
    ck_assert_msg(pick.c[0].sim_s == best, "pick %s %.6g s, exhaustive best %s %.6g s", pick.c[0].layout,
                  pick.c[0].sim_s, all.c[0].layout, best);
    ck_assert_double_eq(pick.optimal_within, 0);
    ck_assert_int_eq((int)pick.open, 0);
    /* the proof simulated fewer than everything, or the space had no slack */
    ck_assert_int_le((int)pick.simulated, (int)(all.simulated + all.tied));
    for (size_t i = 0; i < pick.n; i++)
        if (pick.c[i].status == MM_CAND_BOUNDED)
            ck_assert(pick.c[i].bound_s > best && pick.c[i].reason && !strncmp(pick.c[i].reason, "bound: ", 7));
    mm_plan_free(&all);
    mm_plan_free(&pick);
}
END_TEST

/* The candidate's layout through mm_sim_run's path. */
static int run_cand(const space_case *k, const mm_plan_cand *c, mm_metrics *m)
{
    char json[4096];
    ck_assert_uint_lt(mm_plan_cand_sets_json(c, json, sizeof json), sizeof json);
    char sets[64][160];
    const char *ptr[80];
    int n = 0;
    for (; n < k->n_sets; n++)
        ptr[n] = k->sets[n];
    snprintf(sets[0], sizeof sets[0], "cluster.nodes=%d", k->gpus / 8);
    ptr[n++] = sets[0];
    snprintf(sets[1], sizeof sets[1], "iterations=%d", k->iterations);
    ptr[n++] = sets[1];
    int j = 2;
    for (char *q = strchr(json, '"'); q && j < 64; q = strchr(q + 1, '"')) {
        char *e = strchr(q + 1, '"');
        snprintf(sets[j], sizeof sets[j], "%.*s", (int)(e - q - 1), q + 1);
        ptr[n++] = sets[j++];
        q = e;
    }
    mm_scenario sc;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_scenario_load(&sc, NULL, ptr, n, &err) == 0, "%s", err.msg);
    mm_sim *sim = calloc(1, sizeof *sim);
    int rc = mm_sim_prepare(sim, &sc, &err);
    if (rc == 0)
        rc = mm_sim_run(sim, m, NULL, &err);
    ck_assert_msg(rc == 0, "%s: %s", c->layout, err.msg);
    mm_sim_free(sim);
    free(sim);
    mm_scenario_free(&sc);
    return 0;
}

START_TEST(memory_prune_agrees_with_run)
{
    const space_case *k = &cases[1]; /* drawn samples: memory follows the data */
    static const char *const wide[] = {"micro_batch=1,2,4,8", "zero=0,1", "pp=1,2", "cp=1", "tp=1,2,4",
                                       "placement=homogeneous,colocated", "enc_tp=1", "schedule=1f1b"};
    space_case w = *k;
    w.space = wide;
    w.n_space = 8;
    mm_plan p;
    plan(&w, 0, 0, &p);
    int oom = 0, fit = 0;
    for (size_t i = 0; i < p.n; i++) {
        const mm_plan_cand *c = &p.c[i];
        bool mem = c->status == MM_CAND_PRUNED && c->reason && !strncmp(c->reason, "OOM", 3);
        bool est = c->status == MM_CAND_ESTIMATED || c->status == MM_CAND_TIED;
        if (!mem && !est)
            continue;
        if ((mem && oom >= 12) || (est && fit >= 12) || i % 3) /* a spread sample: each run costs */
            continue;
        mm_metrics m;
        run_cand(&w, c, &m);
        ck_assert_msg(m.oom == mem, "%s: planner %s, run %s (%.2f GiB)", c->layout, mem ? "pruned for memory" : "kept",
                      m.oom ? "OOM" : "fits", m.peak_memory_gib);
        if (!mem) /* the same peak, number for number */
            ck_assert_double_eq_tol(m.peak_memory_gib, c->mem_gib, 1e-9 * c->mem_gib);
        oom += mem, fit += !mem;
        mm_metrics_free(&m);
    }
    ck_assert_int_gt(oom, 0);
    ck_assert_int_gt(fit, 0);
    mm_plan_free(&p);
}
END_TEST

START_TEST(ties_collapsed_before_top_k)
{
    /* tp 8 on 8 GPUs leaves dp 1: ZeRO 0 and 1 shard nothing, so each
     * pair pre-scores the same, bit for bit */
    static const char *const dp1[] = {"zero=0,1", "tp=8", "micro_batch=1,2"};
    space_case k = cases[0];
    k.space = dp1;
    k.n_space = 3;
    mm_plan p;
    plan(&k, 2, 0, &p);
    ck_assert_int_gt((int)p.tied, 0);
    for (size_t i = 0; i < p.n; i++) {
        if (p.c[i].status != MM_CAND_SIMULATED)
            continue;
        for (size_t j = 0; j < i; j++)
            if (p.c[j].status == MM_CAND_SIMULATED)
                ck_assert(p.c[j].est_s != p.c[i].est_s || p.c[j].mem_gib != p.c[i].mem_gib);
    }
    for (size_t i = 0; i < p.n; i++)
        if (p.c[i].status == MM_CAND_TIED)
            ck_assert(p.c[i].reason && !strncmp(p.c[i].reason, "tie: ", 5));
    mm_plan_free(&p);
}
END_TEST

START_TEST(space_narrows_and_refuses)
{
    mm_plan_space s;
    memset(&s, 0, sizeof s);
    mm_err err;
    ck_assert_int_eq(mm_plan_space_parse(&s, "tp=2,4", &err), 0);
    ck_assert(mm_plan_space_allows(&s, MM_SD_TP, 4) && !mm_plan_space_allows(&s, MM_SD_TP, 8));
    ck_assert(mm_plan_space_allows(&s, MM_SD_PP, 8)); /* not named: open */
    ck_assert_int_eq(mm_plan_space_parse(&s, "recompute=none,full", &err), 0);
    ck_assert(mm_plan_space_allows(&s, MM_SD_RECOMPUTE, 0) && !mm_plan_space_allows(&s, MM_SD_RECOMPUTE, 1));
    static const char *const bad[] = {"tp", "tq=1", "tp=", "tp=0", "tp=x", "zero=4", "recompute=some",
                                      "schedule=1f1b,", "placement=far"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mm_err_clear(&err);
        ck_assert_msg(mm_plan_space_parse(&s, bad[i], &err) == -MM_EINPUT || !strcmp(bad[i], "schedule=1f1b,"),
                      "%s accepted", bad[i]);
        if (strcmp(bad[i], "schedule=1f1b,"))
            ck_assert_str_eq(err.key, "--space");
    }
    /* a narrowed plan enumerates only what it keeps */
    mm_plan p;
    plan(&cases[0], 0, 0, &p);
    for (size_t i = 0; i < p.n; i++) {
        ck_assert(p.c[i].micro_batch <= 2 && p.c[i].zero == 1 && p.c[i].llm.cp <= 2);
        ck_assert(p.c[i].llm.pp == 1 || p.c[i].llm.pp == 2 || p.c[i].llm.pp == 4);
    }
    ck_assert_int_eq((int)p.dim_values[MM_SD_RECOMPUTE], 3); /* none, selective, full: all offered */
    ck_assert_int_eq((int)p.dim_values[MM_SD_ZERO], 1);
    mm_plan_free(&p);
}
END_TEST

/* The bound of a pipelined text layout, against its formula from the
 * stage costs the executor runs (mm_sim_stage_times): rank s starts after
 * micro-batch 1's forwards on the ranks before it, runs its m forwards and
 * backwards, and under 1F1B its last input gradient still goes back
 * through the backwards of the ranks before it before rank 0's optimizer
 * step; under ZB-H1 and ZB-2p the weight gradients may come last, so only
 * the first chain counts.  For P equal stages this is (m + P - 1)(F + B) +
 * opt, the 1F1B time without communication (Narayanan et al., SC'21,
 * section 2.2).  *run: the iteration the executor simulates, which the
 * bound may not pass. */
static double pipeline_bound(const char *schedule, double *formula, double *run)
{
    char sched[64];
    snprintf(sched, sizeof sched, "train.schedule=%s", schedule);
    bool v = strcmp(schedule, "zb-v") == 0; /* two chunks per rank, in a V */
    /* megatron-local: it runs 1F1B and the Zero Bubble fork's schedules */
    const char *sets[] = {"model=models/gpt3-1.3b.json", "train.global_batch=16", "train.seq_len=2048",
                          "iterations=1", "parallel.llm.pp=4", "parallel.llm.tp=1", "train.micro_batch=1", "cluster.nodes=1",
                          "train.framework=megatron-local", sched, "parallel.llm.vpp=2"};
    mm_scenario sc;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_scenario_load(&sc, NULL, sets, v ? 11 : 10, &err) == 0, "%s", err.msg);
    mm_sim *sim = calloc(1, sizeof *sim);
    ck_assert_msg(mm_sim_prepare(sim, &sc, &err) == 0, "%s", err.msg);
    mm_sim_costs c;
    ck_assert_msg(mm_sim_stage_times(sim, &c, &err) == 0, "%s", err.msg);
    int P = 4, m = sim->micro_batches;
    bool tail = strcmp(schedule, "zb-h1") != 0 && strcmp(schedule, "zb-2p") != 0 && !v;
    double f = 0, b = 0, best = 0, opt0 = c.stages[0].opt_s;
    for (int s = 0; s < P; s++) {
        const mm_stage_cost *x = &c.stages[s];
        double busy = m * (x->fwd_s + x->bwd_s), opt = x->opt_s;
        if (v) { /* rank s also holds chunk 2P-1-s */
            const mm_stage_cost *y = &c.stages[2 * P - 1 - s];
            busy += m * (y->fwd_s + y->bwd_s), opt += y->opt_s;
        }
        best = fmax(best, f + busy + opt);
        if (tail)
            best = fmax(best, f + busy + b + opt0);
        f += x->fwd_s;
        b += x->bwd_s;
    }
    *formula = best;
    mm_metrics mt;
    double bound = 0;
    ck_assert_msg(mm_sim_estimate_bound(sim, &mt, &bound, &err) == 0, "%s", err.msg);
    mm_metrics_free(&mt);
    ck_assert_msg(mm_sim_run(sim, &mt, NULL, &err) == 0, "%s", err.msg);
    *run = mt.iteration_time_s;
    mm_metrics_free(&mt);
    mm_sim_costs_free(&c);
    mm_sim_free(sim);
    free(sim);
    mm_scenario_free(&sc);
    return bound;
}

/* The pre-score's pipeline bubble (bubble_fraction = fill / pipeline) of
 * GPT-3 1.3B on 4 stages (the first and last heavier: embedding, head)
 * under `schedule`; *formula gets the one the pre-score states from the
 * same stage costs: m micro-batches of the slowest stage plus one through
 * every other, F + B + W each under 1F1B, F + B - W under ZB-H1 (the Zero
 * Bubble paper's bubbles, Table 2: (p-1)(T_F+T_B+T_W), (p-1)(T_F+T_B-T_W)
 * for equal stages). */
static double prescore_bubble(const char *schedule, double *formula)
{
    char sched[64];
    snprintf(sched, sizeof sched, "train.schedule=%s", schedule);
    const char *sets[] = {"model=models/gpt3-1.3b.json", "train.global_batch=16", "train.seq_len=2048",
                          "iterations=1", "parallel.llm.pp=4", "parallel.llm.tp=1", "train.micro_batch=1", "cluster.nodes=1",
                          "train.framework=megatron-local", sched};
    mm_scenario sc;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_scenario_load(&sc, NULL, sets, 10, &err) == 0, "%s", err.msg);
    mm_sim *sim = calloc(1, sizeof *sim);
    ck_assert_msg(mm_sim_prepare(sim, &sc, &err) == 0, "%s", err.msg);
    mm_sim_costs c;
    ck_assert_msg(mm_sim_stage_times(sim, &c, &err) == 0, "%s", err.msg);
    int P = 4, m = sim->micro_batches;
    double worst = 0, w = 0, all = 0;
    bool zb = !strcmp(schedule, "zb-h1");
    for (int s = 0; s < P; s++) {
        const mm_stage_cost *x = &c.stages[s];
        if (x->fwd_s + x->bwd_s > worst)
            worst = x->fwd_s + x->bwd_s, w = x->wgrad_s;
        all += x->fwd_s + x->bwd_s - (zb ? 2 * x->wgrad_s : 0);
    }
    ck_assert(w > 0 && w < worst / 2);
    double fill = all - (zb ? worst - 2 * w : worst);
    *formula = fill / (m * worst + fill);
    mm_metrics mt;
    ck_assert_msg(mm_sim_estimate(sim, &mt, &err) == 0, "%s", err.msg);
    double bubble = mt.bubble_fraction;
    mm_metrics_free(&mt);
    mm_sim_costs_free(&c);
    mm_sim_free(sim);
    free(sim);
    mm_scenario_free(&sc);
    return bubble;
}

START_TEST(prescore_fill_by_schedule)
{
    double f1, fz;
    double b1 = prescore_bubble("1f1b", &f1), bz = prescore_bubble("zb-h1", &fz);
    ck_assert_msg(fabs(b1 - f1) <= 1e-9 * f1, "1f1b pre-score bubble %.9g, formula %.9g", b1, f1);
    ck_assert_msg(fabs(bz - fz) <= 1e-9 * fz, "zb-h1 pre-score bubble %.9g, formula %.9g", bz, fz);
    ck_assert(bz < b1);
}
END_TEST

/* The MLLM space (colocated and homogeneous layouts of a drawn mixture):
 * the pre-score times each candidate on the workload's drawn
 * micro-batches, so its order follows the event-level order: the
 * planner's target, tau >= 0.9 (it reaches 0.915; 0.525 when every
 * micro-batch was timed at the nominal length). */
START_TEST(prescore_orders_mllm_space)
{
    mm_plan all;
    plan(&cases[1], 100000, 0, &all);
    ck_assert_int_gt((int)all.simulated, 100);
    double tau = mm_plan_prescore_tau(&all);
    ck_assert_msg(tau >= 0.9, "Kendall tau of the pre-score vs event-level %.3f < 0.9", tau);
    mm_plan_free(&all);
}
END_TEST

START_TEST(bound_counts_pipeline_fill)
{
    double f1, fz, f2, r1, rz, r2;
    double b1 = pipeline_bound("1f1b", &f1, &r1), bz = pipeline_bound("zb-h1", &fz, &rz);
    double b2 = pipeline_bound("zb-2p", &f2, &r2), fv, rv, bv = pipeline_bound("zb-v", &fv, &rv);
    ck_assert_msg(fabs(b1 - f1) <= 1e-12 * f1, "1f1b bound %.9g s, formula %.9g s", b1, f1);
    ck_assert_msg(fabs(bz - fz) <= 1e-12 * fz, "zb-h1 bound %.9g s, formula %.9g s", bz, fz);
    ck_assert_msg(fabs(b2 - f2) <= 1e-12 * f2, "zb-2p bound %.9g s, formula %.9g s", b2, f2);
    ck_assert(b1 > bz); /* the drain chain counts only without the B/W split */
    ck_assert_msg(b1 <= r1 && bz <= rz && b2 <= r2, "bounds %.6g %.6g %.6g, runs %.6g %.6g %.6g", b1, bz, b2, r1, rz,
                  r2);
    ck_assert(r2 < r1); /* ZB-2p fills 1F1B's bubble */
    ck_assert_msg(fabs(bv - fv) <= 1e-12 * fv, "zb-v bound %.9g s, formula %.9g s", bv, fv);
    ck_assert_msg(bv <= rv, "zb-v bound %.6g, run %.6g", bv, rv);
    ck_assert(rv < r1); /* ZB-V, at 1F1B's memory, fills its bubble too */
}
END_TEST

/* The played span (plan/span.h) against the schedules' closed forms for
 * equal chunks and no transfer time: interleaved (m + (p-1)/v)(F + B),
 * F and B a rank's whole passes (Narayanan et al., SC'21, section
 * 2.2.2); 1F1B (m + p - 1)(F + B); and a transfer of h seconds on each
 * hop adds at least 2 (p - 1) h to 1F1B's (the first forward down, the
 * last backward up).  Every rank's steps at once (mm_schedule_steps_all) are
 * each rank's own (mm_schedule_steps_timed), for every schedule. */
START_TEST(span_closed_forms)
{
    enum { P = 4, M = 8, V = 2 };
    double f[P * V * M], b[P * V * M], w[P * V * M], hop[P * V * M];
    mm_sched_step all[P * 3 * V * M], one[3 * V * M];
    const double F = 3e-3, B = 6e-3; /* a rank's whole forward and backward */
    for (int v = 1; v <= V; v++) {
        for (int k = 0; k < P * v * M; k++)
            f[k] = F / v, b[k] = B / v, w[k] = B / v / 3, hop[k] = 0;
        mm_schedule kind = v > 1 ? MM_SCHEDULE_INTERLEAVED : MM_SCHEDULE_1F1B;
        int len = mm_schedule_steps_all(kind, P, M, v, NULL, all);
        ck_assert_int_eq(len, 2 * M * v);
        double span = mm_span(&(mm_span_in){kind, P, v, M, len, all, f, b, w, hop});
        double want = (M + (P - 1.0) / v) * (F + B);
        ck_assert_msg(fabs(span - want) <= 1e-12 * want, "v %d: span %.9g, closed form %.9g", v, span, want);
        if (v == 1) {
            for (int k = 0; k < P * M; k++)
                hop[k] = 1e-4;
            span = mm_span(&(mm_span_in){kind, P, v, M, len, all, f, b, w, hop});
            /* at least the first forward's way down and the last
             * backward's way up; the steady state's round trips may add */
            ck_assert_msg(span >= want + 2 * (P - 1) * 1e-4 - 1e-12, "with transfers: span %.9g, at least %.9g", span,
                          want + 2 * (P - 1) * 1e-4);
        }
    }
    /* unequal chunks (the first and last heavier): interleaving waits for
     * them round the loop, so its span exceeds every rank's own work plus
     * the equal-chunk bubble of its mean chunk */
    double tf[2 * P], tb[2 * P], tw[2 * P];
    for (int k = 0; k < 2 * P; k++)
        tf[k] = k == 0 || k == 2 * P - 1 ? 2e-3 : 1e-3, tb[k] = 2 * tf[k], tw[k] = tf[k] * 0.8;
    mm_sched_times t = {tf, tb, tw, 0};
    static const mm_schedule kinds[] = {MM_SCHEDULE_GPIPE, MM_SCHEDULE_1F1B, MM_SCHEDULE_INTERLEAVED,
                                        MM_SCHEDULE_ZB_H1, MM_SCHEDULE_ZB_2P, MM_SCHEDULE_ZB_V};
    /* without and with a transfer time (ZB-V's round heuristic wins over its
     * list schedule with one: the orders at once must be its too) */
    for (size_t i = 0; i < 2 * (sizeof kinds / sizeof kinds[0]); i++) {
        size_t n_k = sizeof kinds / sizeof kinds[0];
        t.comm = i < n_k ? 0 : 4e-5;
        mm_schedule kind_i = kinds[i % n_k];
        int v = kind_i == MM_SCHEDULE_INTERLEAVED || kind_i == MM_SCHEDULE_ZB_V ? 2 : 1;
        int len = mm_schedule_steps_all(kind_i, P, M, v, &t, all);
        ck_assert_int_eq(len, mm_schedule_len(kind_i, M, v));
        for (int r = 0; r < P; r++) {
            ck_assert_int_eq(mm_schedule_steps_timed(kind_i, P, r, M, v, &t, one), len);
            for (int k = 0; k < len; k++)
                ck_assert_msg(one[k].pass == all[r * len + k].pass && one[k].mb == all[r * len + k].mb &&
                                  one[k].chunk == all[r * len + k].chunk,
                              "schedule %d comm %g rank %d step %d", (int)kind_i, t.comm, r, k);
        }
    }
    t.comm = 0;
    int len = mm_schedule_steps_all(MM_SCHEDULE_INTERLEAVED, P, M, V, NULL, all);
    double own = 0, mean = 0;
    for (int vs = 0; vs < P * V; vs++) {
        for (int j = 0; j < M; j++)
            f[vs * M + j] = tf[vs], b[vs * M + j] = tb[vs] + tw[vs], w[vs * M + j] = tw[vs], hop[vs * M + j] = 0;
        mean += (tf[vs] + tb[vs] + tw[vs]) / (P * V);
        if (vs % P == 0) /* rank 0 holds chunks 0 and P */
            own += M * (tf[vs] + tb[vs] + tw[vs]);
    }
    double span = mm_span(&(mm_span_in){MM_SCHEDULE_INTERLEAVED, P, V, M, len, all, f, b, w, hop});
    ck_assert_msg(span > own + (P - 1) * mean, "span %.9g, rank 0's work %.9g + the mean bubble %.9g", span, own,
                  (P - 1) * mean);
}
END_TEST

static Suite *proof_suite(void)
{
    Suite *s = suite_create("plan_proof");
    TCase *tc = tcase_create("plan_proof");
    tcase_set_timeout(tc, 1200);
    tcase_add_loop_test(tc, pick_is_exhaustive_best, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, memory_prune_agrees_with_run);
    tcase_add_test(tc, ties_collapsed_before_top_k);
    tcase_add_test(tc, space_narrows_and_refuses);
    tcase_add_test(tc, bound_counts_pipeline_fill);
    tcase_add_test(tc, prescore_orders_mllm_space);
    tcase_add_test(tc, prescore_fill_by_schedule);
    tcase_add_test(tc, span_closed_forms);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(proof_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
