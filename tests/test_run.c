/* test_run.c - the pipeline builder, the executor and the scenario path:
 * bubble formulas in the uniform case, every op run once, FLOP totals
 * against Megatron's formulas, determinism, and the layout checks that
 * need both the scenario and the model/cluster. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/build.h"
#include "exec/exec.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "plan/estimate.h"

#include "cluster_keep.h"

static mm_cluster test_cluster(void)
{
    mm_cluster c;
    mm_err err;
    int rc = mm_cluster_load("topologies/dgx-h100.yaml", 8, &c, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    return mm_test_keep_cluster(c);
}

/* Runs a uniform pipeline (F = tf, B = tb per stage, no communication) and
 * returns the measured iteration. */
static mm_iter_metrics uniform_pipeline(mm_schedule kind, int p, int m, double tf, double tb,
                                        uint32_t *n_ops, int *all_ran)
{
    mm_stage_cost *st = calloc((size_t)p, sizeof *st);
    for (int s = 0; s < p; s++)
        st[s] = (mm_stage_cost){.chunks = 1, .fwd_s = tf, .bwd_s = tb};
    mm_build_spec spec = {.schedule = kind, .lay.tp = 1, .lay.pp = p, .lay.dp = 1, .lay.vpp = 1, .m = m, .stages = st};
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(&spec, &g, NULL), 0);
    mm_cluster c = test_cluster();
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end);
    mm_time t1;
    mm_err err;
    ck_assert_int_eq(mm_exec_run(eng, &g, &c, MM_EXEC_NET_ANALYTIC, start, end, &t1, &err), 0);
    mm_iter_metrics it = {0};
    mm_stage_metrics *sm = calloc((size_t)p, sizeof *sm);
    mm_sim_measure(&g, start, end, 0, t1, &it, sm, p, 1);
    /* with equal stages every stage idles (p-1)(tf+tb) inside the pipeline */
    for (int k = 0; k < p; k++)
        ck_assert_msg(fabs(sm[k].bubble_s - (p - 1) * (tf + tb)) < 1e-9, "stage %d bubble %.9f", k, sm[k].bubble_s);
    *all_ran = 1;
    for (uint32_t i = 0; i < g.n_ops; i++)
        if (start[i] < 0 || end[i] < start[i])
            *all_ran = 0;
    *n_ops = g.n_ops;
    free(sm);
    free(start);
    free(end);
    mm_engine_free(eng);
    mm_graph_free(&g);
    free(st);
    return it;
}

static const int Ps[] = {2, 4, 8};
static const int Ms[] = {1, 4, 16, 64};

/* Narayanan et al. SC'21 §2.2: with equal stage times the bubble is
 * (p-1)/(m+p-1) of the iteration for GPipe and 1F1B alike. */
START_TEST(bubble_matches_formula)
{
    int p = Ps[_i / 4], m = Ms[_i % 4];
    for (int kind = 0; kind < 2; kind++) {
        uint32_t n_ops;
        int all_ran;
        mm_iter_metrics it = uniform_pipeline((mm_schedule)kind, p, m, 1e-3, 2e-3, &n_ops, &all_ran);
        double expect = (double)(p - 1) / (m + p - 1);
        ck_assert_msg(fabs(it.bubble_fraction - expect) < 1e-9, "%s p=%d m=%d: bubble %.12f, formula %.12f",
                      kind ? "1f1b" : "gpipe", p, m, it.bubble_fraction, expect);
        /* iteration = (m + p - 1)(tf + tb) */
        ck_assert(fabs(it.time_s - (m + p - 1) * 3e-3) < 1e-9);
        ck_assert(all_ran);
        ck_assert(it.exposed_comm_s == 0);
        /* per stage: m F + m B + 1 optimizer op; 2 transfers per micro-batch per boundary */
        ck_assert_uint_eq(n_ops, (uint32_t)(p * (2 * m + 1) + 2 * m * (p - 1)));
    }
}
END_TEST

START_TEST(schedule_orders)
{
    mm_sched_step st[16];
    /* 1F1B, p = 4, m = 4, stage 1: two warm-up forwards */
    ck_assert_int_eq(mm_schedule_steps(MM_SCHEDULE_1F1B, 4, 1, 4, 1, st), 8);
    const int pass[] = {0, 0, 0, 1, 0, 1, 1, 1}, mb[] = {0, 1, 2, 0, 3, 1, 2, 3};
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(st[i].pass, pass[i]);
        ck_assert_int_eq(st[i].mb, mb[i]);
    }
    ck_assert_int_eq(mm_schedule_steps(MM_SCHEDULE_1F1B, 4, 4, 4, 1, st), -1);
    ck_assert_int_eq(mm_schedule_steps(MM_SCHEDULE_GPIPE, 2, 0, 0, 1, st), -1);
}
END_TEST

/* Loads a scenario; without a file, the built-in default with its LLM
 * swapped for Llama-2-7B (32 layers, 32 heads: the numbers below assume
 * it; design.md: any LLM runs on top of the default scenario). */
static int load_sim(mm_sim *sim, const char *path, const char *const *sets, int n, mm_err *err)
{
    static mm_scenario sc;
    const char *all[16] = {"model=models/llama-2-7b.json"};
    int k = path ? 0 : 1;
    for (int i = 0; i < n && k < 16; i++)
        all[k++] = sets[i];
    mm_sim_free(sim); /* the caller's sim, prepared before or zeroed */
    mm_scenario_free(&sc); /* the previous load of this static (no-op when none) */
    int rc = mm_scenario_load(&sc, path, all, k, err);
    if (rc)
        return rc;
    return mm_sim_prepare(sim, &sc, err);
}

START_TEST(default_is_deterministic)
{
    mm_sim a = {0}, b = {0};
    mm_err err;
    static mm_scenario sa, sb;
    mm_scenario_free(&sa); /* the previous load of this static (no-op when none) */
    ck_assert_msg(mm_scenario_load(&sa, NULL, NULL, 0, &err) == 0 && mm_sim_prepare(&a, &sa, &err) == 0, "%s",
                  err.msg);
    mm_scenario_free(&sb); /* the previous load of this static (no-op when none) */
    ck_assert_msg(mm_scenario_load(&sb, NULL, NULL, 0, &err) == 0 && mm_sim_prepare(&b, &sb, &err) == 0, "%s",
                  err.msg);
    mm_metrics ma, mb;
    ck_assert_int_eq(mm_sim_run(&a, &ma, NULL, &err), 0);
    ck_assert_int_eq(mm_sim_run(&b, &mb, NULL, &err), 0);
    ck_assert(ma.iteration_time_s > 0);
    ck_assert(memcmp(&ma.iteration_time_s, &mb.iteration_time_s, sizeof(double)) == 0);
    ck_assert(memcmp(&ma.mfu, &mb.mfu, sizeof(double)) == 0);
    ck_assert(memcmp(&ma.bubble_fraction, &mb.bubble_fraction, sizeof(double)) == 0);
    ck_assert(memcmp(&ma.exposed_comm_s, &mb.exposed_comm_s, sizeof(double)) == 0);
    ck_assert_uint_eq(ma.events, mb.events);
    ck_assert_int_eq(ma.n_iters, mb.n_iters);
    ck_assert(memcmp(ma.iters, mb.iters, (size_t)ma.n_iters * sizeof *ma.iters) == 0);
    ck_assert(memcmp(ma.stages, mb.stages, (size_t)ma.n_stages * sizeof *ma.stages) == 0);
    mm_metrics_free(&ma);
    mm_metrics_free(&mb);
    mm_sim_free(&a);
    mm_sim_free(&b);
}
END_TEST

/* The simulated FLOP totals are Megatron's: 72BslH^2(1 + s/6h + V/12lh)
 * without recomputation (Korthikanti et al., arXiv 2205.05198) and
 * 96BslH^2(1 + s/6h + V/16lh) with full recomputation (Narayanan et al.,
 * SC'21, arXiv 2104.04473, Sec. 5.1); metrics divide them by time and GPUs. */
START_TEST(flops_follow_megatron)
{
    const char *sets[] = {"model=models/megatron-gpt-1.7b.json", "cluster.topology=topologies/dgx-a100.yaml",
                          "cluster.nodes=1", "parallel.llm={tp: 2, pp: 2, dp: 2}",
                          "train.global_batch=16", "train.seq_len=2048", "train.recompute=full"};
    mm_sim sim = {0};
    mm_err err;
    ck_assert_msg(load_sim(&sim, NULL, sets, 7, &err) == 0, "%s: %s", err.key, err.msg);
    mm_metrics m;
    ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
    double B = 16, s = 2048, l = 24, h = 2304, V = 51200;
    double f72 = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    double f96 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    ck_assert_msg(fabs(m.iters[0].model_flops / f72 - 1) < 1e-9, "model flops %g vs %g", m.iters[0].model_flops, f72);
    ck_assert_msg(fabs(m.iters[0].hw_flops / f96 - 1) < 1e-9, "hw flops %g vs %g", m.iters[0].hw_flops, f96);
    double T = m.iteration_time_s;
    ck_assert(fabs(m.tflops_per_gpu - f72 / (T * 8) * 1e-12) < 1e-9 * m.tflops_per_gpu);
    ck_assert(fabs(m.mfu - f72 / (T * 8 * 312e12)) < 1e-12);
    ck_assert(fabs(m.hfu - f96 / (T * 8 * 312e12)) < 1e-12);
    ck_assert(fabs(m.tokens_per_s - B * s / T) < 1e-6 * m.tokens_per_s);
    ck_assert(m.hfu > m.mfu && m.mfu > 0.05 && m.hfu < 1.0);
    ck_assert(m.bubble_fraction > 0 && m.bubble_fraction < 1);
    /* tp = 2: TP all-reduces are on the compute stream and not hidden */
    ck_assert(m.exposed_comm_s > 0);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
}
END_TEST

/* Communication takes exactly what the analytic network says: one DP
 * all-reduce of stage gradients, on a 2-replica group across nodes. */
START_TEST(dp_allreduce_costs_network_time)
{
    const char *sets[] = {"cluster.nodes=2", "parallel.llm={tp: 8, pp: 1, dp: 2}", "train.global_batch=2",
                          "train.zero=0"};
    mm_sim sim = {0};
    mm_err err;
    ck_assert_msg(load_sim(&sim, NULL, sets, 4, &err) == 0, "%s: %s", err.key, err.msg);
    mm_metrics m;
    mm_sim_timeline tl;
    ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
    int found = 0;
    for (uint32_t i = 0; i < tl.graph.n_ops; i++) {
        const mm_op *op = &tl.graph.ops[i];
        if (op->cat != MM_CAT_DP)
            continue;
        const mm_coll *c = &tl.graph.colls[op->coll];
        ck_assert_int_eq(c->kind, MM_COLL_ALLREDUCE);
        /* GPUs 0 and 8: one per node, so one 400 Gb/s NIC */
        ck_assert_int_eq(tl.graph.gpus[c->gpu_off + 1], 8);
        double params = (double)mm_llm_params(sim.llm);
        /* bf16 training under megatron-core reduces fp32 gradients
         * (frameworks/megatron-core.yaml: accumulate_allreduce_grads_in_fp32) */
        ck_assert(fabs(c->bytes - params / 8 * 4) < 1e-6 * c->bytes);
        double expect = 2 * 3e-6 + c->bytes / (50e9 * 375.0 / 400.0);
        double got = (double)(tl.end[i] - tl.start[i]) * 1e-9;
        ck_assert_msg(fabs(got - expect) < 1e-8 + 1e-9 * expect, "dp all-reduce %g s, expected %g", got, expect);
        found++;
    }
    ck_assert_int_eq(found, 2);
    mm_sim_timeline_free(&tl);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
}
END_TEST

static void expect_input_error(const char *path, const char *const *sets, int n, const char *file,
                               int line, const char *key)
{
    mm_sim sim = {0};
    mm_err err;
    mm_err_clear(&err);
    int rc = load_sim(&sim, path, sets, n, &err);
    ck_assert_int_eq(rc, -MM_EINPUT);
    ck_assert_int_eq(err.code, MM_EINPUT);
    ck_assert_str_eq(err.file, file);
    ck_assert_str_eq(err.key, key);
    if (line >= 0)
        ck_assert_int_eq(err.line, line);
    mm_sim_free(&sim);
}

START_TEST(layout_errors)
{
    const char *gpus[] = {"parallel.llm.dp=3"};
    expect_input_error(NULL, gpus, 1, "--set", 0, "parallel.llm.dp");
    const char *layers[] = {"parallel.llm={tp: 4, pp: 3, dp: 1}", "cluster.nodes=3", "cluster.topology=tests/data/run/four-gpu.yaml"};
    expect_input_error(NULL, layers, 3, "--set", 0, "parallel.llm.pp");
    const char *batch[] = {"train.global_batch=63"};
    expect_input_error(NULL, batch, 1, "--set", 0, "train.global_batch");
    const char *heads[] = {"parallel.llm={tp: 12, pp: 1, dp: 1}", "cluster.nodes=3",
                           "cluster.topology=tests/data/run/four-gpu.yaml"};
    expect_input_error(NULL, heads, 3, "--set", 0, "parallel.llm.tp");
    const char *lps[] = {"parallel.llm.layers_per_stage=[10, 10]"};
    expect_input_error(NULL, lps, 1, "--set", 0, "parallel.llm.layers_per_stage");
    const char *model[] = {"model=models/no-such-model.json"};
    expect_input_error(NULL, model, 1, "--set", 0, "model");
    /* In a file, the error points at the line of the offending key. */
    expect_input_error("tests/data/run/bad-gpus.yaml", NULL, 0, "tests/data/run/bad-gpus.yaml", 7, "parallel.llm.dp");
    expect_input_error("tests/data/run/bad-batch.yaml", NULL, 0, "tests/data/run/bad-batch.yaml", 5, "train.global_batch");
}
END_TEST

START_TEST(uneven_stages_run)
{
    const char *sets[] = {"parallel.llm.layers_per_stage=[14, 18]"};
    mm_sim sim = {0};
    mm_err err;
    ck_assert_msg(load_sim(&sim, NULL, sets, 1, &err) == 0, "%s: %s", err.key, err.msg);
    mm_metrics m;
    ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
    ck_assert(m.stages[1].busy_s > m.stages[0].busy_s);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
}
END_TEST

/* The analytic pre-score ranks layouts like the event-level run and stays
 * within 10 % of its time on uniform workloads (measured: 0.5-5 %). */
START_TEST(estimate_tracks_run)
{
    const char *layouts[] = {"parallel.llm={tp: 4, pp: 2, dp: 2}", "parallel.llm={tp: 2, pp: 4, dp: 2}",
                             "parallel.llm={tp: 8, pp: 1, dp: 2}", "parallel.llm={tp: 1, pp: 2, dp: 8}"};
    for (int i = 0; i < 4; i++) {
        const char *sets[] = {layouts[i]};
        mm_sim sim = {0};
        mm_err err;
        ck_assert_msg(load_sim(&sim, NULL, sets, 1, &err) == 0, "%s", err.msg);
        mm_metrics a, b;
        ck_assert_int_eq(mm_sim_estimate(&sim, &a, &err), 0);
        ck_assert_int_eq(mm_sim_run(&sim, &b, NULL, &err), 0);
        ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.10, "%s: estimate %.4f run %.4f",
                      layouts[i], a.iteration_time_s, b.iteration_time_s);
        ck_assert(a.mfu > 0 && a.mfu < 1 && !a.oom);
        mm_metrics_free(&a);
        mm_metrics_free(&b);
        mm_sim_free(&sim);
    }
}
END_TEST

/* An audio encoder (Whisper) in front of the LLM: 45 s of audio is two
 * 30-s clips for the encoder and 45 x 25 tokens for the LLM; it costs time
 * under every placement and shows as its own module. */
START_TEST(audio_encoder_runs)
{
    static mm_scenario sc;
    mm_sim sim = {0};
    mm_err err;
    const char *base[] = {"model=models/qwen2-audio-like-7b.yaml",
                          "workload={kind: fixed, audio_seconds: 45, text_tokens: 200}",
                          "parallel.audio={tp: 1, pp: 1, dp: 16}", "train.global_batch=32", "iterations=1"};
    mm_scenario_free(&sc); /* the previous load of this static (no-op when none) */
    ck_assert_msg(mm_scenario_load(&sc, NULL, base, 5, &err) == 0 && mm_sim_prepare(&sim, &sc, &err) == 0, "%s: %s",
                  err.key, err.msg);
    ck_assert_int_eq(sim.n_enc, 1);
    ck_assert_str_eq(sim.enc[0].name, "audio");
    ck_assert(fabs(sim.enc[0].inputs_per_sample - 2) < 1e-12);
    ck_assert(fabs(sim.seq - (200 + 45 * 25)) < 1e-9);
    mm_metrics m;
    ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
    ck_assert_int_eq(m.n_modules, 2);
    ck_assert_str_eq(m.modules[1].name, "audio");
    ck_assert(m.modules[1].compute_s > 0);
    double with_audio = m.iteration_time_s;
    mm_metrics_free(&m);
    /* the same LLM sequence without the encoder's work: text only */
    const char *text[] = {"model=models/qwen2.5-7b.json", "train.seq_len=1325", "train.global_batch=32",
                          "iterations=1"};
    static mm_scenario sc2;
    mm_sim sim2 = {0};
    mm_scenario_free(&sc2); /* the previous load of this static (no-op when none) */
    ck_assert(mm_scenario_load(&sc2, NULL, text, 4, &err) == 0 && mm_sim_prepare(&sim2, &sc2, &err) == 0);
    ck_assert_int_eq(mm_sim_run(&sim2, &m, NULL, &err), 0);
    ck_assert_msg(with_audio > m.iteration_time_s * 1.05, "%.4f vs %.4f", with_audio, m.iteration_time_s);
    mm_metrics_free(&m);
    /* the encoder's own sequence parallelism splits its norms' and
     * activations' tokens over its TP group: less memory per GPU */
    double mem[2];
    for (int sp = 0; sp < 2; sp++) {
        const char *tp2[] = {base[0], base[1], sp ? "parallel.audio={tp: 2, pp: 1, dp: 8, sp: true}"
                                                  : "parallel.audio={tp: 2, pp: 1, dp: 8}",
                             base[3], base[4]};
        mm_sim_free(&sim); /* and its sim (no-op when none) */
        mm_scenario_free(&sc); /* the previous load of this static (no-op when none) */
        ck_assert(mm_scenario_load(&sc, NULL, tp2, 5, &err) == 0 && mm_sim_prepare(&sim, &sc, &err) == 0);
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        mem[sp] = m.modules[1].memory_gib;
        mm_metrics_free(&m);
    }
    ck_assert_msg(mem[1] < mem[0], "sp %.3f GiB vs %.3f GiB", mem[1], mem[0]);
    mm_sim_free(&sim);
    mm_sim_free(&sim2);
}
END_TEST

/* parallel.projector: llm moves the projector from the encoder side to the
 * LLM's first stage: the same FLOPs, more work on stage 0. */
START_TEST(projector_side)
{
    static mm_scenario sc;
    mm_sim sim = {0};
    mm_err err;
    double flops[2], stage0[2];
    for (int side = 0; side < 2; side++) {
        const char *sets[] = {side ? "parallel.projector=llm" : "parallel.projector=encoder", "iterations=1"};
        mm_sim_free(&sim); /* and its sim (no-op when none) */
        mm_scenario_free(&sc); /* the previous load of this static (no-op when none) */
        ck_assert_msg(mm_scenario_load(&sc, NULL, sets, 2, &err) == 0 && mm_sim_prepare(&sim, &sc, &err) == 0,
                      "%s: %s", err.key, err.msg);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        flops[side] = m.iters[0].model_flops;
        stage0[side] = m.stages[0].busy_s;
        mm_metrics_free(&m);
    }
    ck_assert_msg(fabs(flops[1] / flops[0] - 1) < 1e-9, "%g vs %g", flops[1], flops[0]);
    ck_assert(stage0[1] > stage0[0]);
    mm_sim_free(&sim);
}
END_TEST

static Suite *run_suite(void)
{
    Suite *s = suite_create("run");
    TCase *tc = tcase_create("pipeline");
    tcase_add_checked_fixture(tc, NULL, mm_test_free_clusters);
    tcase_add_loop_test(tc, bubble_matches_formula, 0, 12);
    tcase_add_test(tc, schedule_orders);
    suite_add_tcase(s, tc);
    tc = tcase_create("scenario");
    tcase_add_checked_fixture(tc, NULL, mm_test_free_clusters);
    tcase_add_test(tc, default_is_deterministic);
    tcase_add_test(tc, flops_follow_megatron);
    tcase_add_test(tc, dp_allreduce_costs_network_time);
    tcase_add_test(tc, layout_errors);
    tcase_add_test(tc, uneven_stages_run);
    tcase_add_test(tc, estimate_tracks_run);
    tcase_add_test(tc, audio_encoder_runs);
    tcase_add_test(tc, projector_side);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(run_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
