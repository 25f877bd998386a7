/* test_host.c - the host as a resource: each rank's host thread issues its
 * compute-stream ops in order and a kernel starts no earlier than its
 * launch (exec.c's host cursor, build_base.c mm_build_op_host).  Closed
 * forms on hand-built graphs (n short kernels of t < L: n L + t; long
 * kernels: L + n t, the host hidden), CUDA graphs (train.cuda_graphs) removing the launches, the
 * planner's pre-score seeing the same host, a published step with and
 * without the optimizer graphed (a named known miss), and bad keys
 * refused. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "parallel/build.h"
#include "framework_common.h"

/* One rank, n compute ops in a chain on its compute stream, each of dur_s
 * with `launches` kernels issued in host_s.  Returns the iteration's time,
 * the seconds the stream waited for the host and the first op's start. */
static double run_chain(int n, double dur_s, double host_s, double launches, double *wait_s, mm_time *start0)
{
    mm_graph g;
    ck_assert_int_eq(mm_graph_init(&g, 1), 0);
    int gpu = 0;
    ck_assert_int_eq(mm_graph_rank_gpus(&g, 0, &gpu, 1), 0);
    int64_t prev = -1;
    for (int i = 0; i < n; i++) {
        mm_op op = {.rank = 0, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .layer = -1, .stage = 0, .mb = i,
                    .coll = -1, .peer = -1, .dur_s = dur_s};
        mm_build_op_host(&op, host_s, launches);
        int64_t id = mm_graph_add_op(&g, &op);
        ck_assert(id >= 0);
        if (prev >= 0)
            ck_assert_int_eq(mm_graph_dep(&g, (uint32_t)prev, (uint32_t)id), 0);
        prev = id;
    }
    ck_assert_int_eq(mm_graph_finish(&g), 0);
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("topologies/dgx-h100.yaml", 1, &c, &err), 0);
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end);
    double *wait = malloc(g.n_ops * sizeof *wait);
    mm_time t1;
    mm_exec_opts xo = {.host_wait = wait};
    ck_assert_int_eq(mm_exec_run_opts(eng, &g, &c, MM_EXEC_NET_ANALYTIC, &xo, start, end, &t1, &err), 0);
    double w = 0;
    for (uint32_t i = 0; i < g.n_ops; i++)
        w += wait[i];
    if (wait_s)
        *wait_s = w;
    if (start0)
        *start0 = start[0];
    free(start);
    free(end);
    free(wait);
    mm_engine_free(eng);
    mm_cluster_free(&c);
    mm_graph_free(&g);
    return (double)t1 * 1e-9;
}

/* n = 100 ops of one kernel each.  Short kernels (t = 2 us < L = 10 us):
 * the GPU waits for every launch, the step is n L + t = 1002 us, of which
 * n t = 200 us compute and 802 us exposed host.  Long kernels (t = 50 us):
 * the host runs ahead, the step is L + n t = 5010 us, only the first
 * launch (10 us) exposed.  No host: n t exactly.  1 ns (the clock). */
START_TEST(chain_of_kernels_closed_form)
{
    double wait, T;
    T = run_chain(100, 2e-6, 10e-6, 1, &wait, NULL);
    ck_assert_msg(fabs(T - 1002e-6) <= 1e-9, "short kernels: %.9f s", T);
    ck_assert_msg(fabs(wait - 802e-6) <= 1e-9, "exposed %.9f s", wait);
    T = run_chain(100, 50e-6, 10e-6, 1, &wait, NULL);
    ck_assert_msg(fabs(T - 5010e-6) <= 1e-9, "long kernels: %.9f s", T);
    ck_assert_msg(fabs(wait - 10e-6) <= 1e-9, "exposed %.9f s", wait);
    T = run_chain(100, 50e-6, 0, 0, &wait, NULL);
    ck_assert(fabs(T - 5000e-6) <= 1e-9 && wait == 0);
}
END_TEST

/* One op of n = 64 kernels (mm_build_op_host: n equal kernels, a two-stage
 * flow shop): t = 1 us < L = 8 us gives n L + t = 513 us; t = 20 us > L
 * gives L + n t = 1288 us.  The op's own lead: max(L, H + G/n - G). */
START_TEST(one_op_of_many_kernels)
{
    double T = run_chain(1, 64e-6, 64 * 8e-6, 64, NULL, NULL);
    ck_assert_msg(fabs(T - 513e-6) <= 1e-9, "%.9f s", T);
    T = run_chain(1, 64 * 20e-6, 64 * 8e-6, 64, NULL, NULL);
    ck_assert_msg(fabs(T - 1288e-6) <= 1e-9, "%.9f s", T);
    mm_op op = {.dur_s = 64e-6};
    mm_build_op_host(&op, 512e-6, 64);
    ck_assert(fabs(op.lead_s - 449e-6) < 1e-9 && fabs(op.host_s - 512e-6) < 1e-9);
    mm_build_op_host(&op, 0, 64); /* no host: nothing to wait for */
    ck_assert(op.lead_s == 0 && op.host_s == 0);
}
END_TEST

static void run_sim(const char *const *extra, int n, mm_metrics *mt)
{
    mm_sim sim;
    prepare(&sim, extra, n);
    mm_err err;
    ck_assert_msg(mm_sim_run(&sim, mt, NULL, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
}

/* GPT-3 1.3B at tp 8 on one DGX H100, 64-token sequences: every kernel is
 * shorter than its launch under Megatron-Core's host, so the GPU waits;
 * per-layer CUDA graphs (train.cuda_graphs: layer) issue a layer's pass in
 * one replay and the TP collectives inside it: the host's work drops by
 * the ratio of launches and the step loses the exposed time.  At 2048
 * tokens the same host is hidden: exposed under 0.1 % of the step (the
 * first launch and the optimizer's after its sync).  The planner's
 * pre-score charges a micro-batch at least its host time: within 25 % of
 * the executed host-bound step. */
START_TEST(cuda_graphs_remove_the_launches)
{
    const char *eager[] = {"model=models/gpt3-1.3b.json", "parallel.llm={tp: 8, pp: 1, dp: 1}",
                           "train.seq_len=64", "train.global_batch=16"};
    const char *graphs[] = {"model=models/gpt3-1.3b.json", "parallel.llm={tp: 8, pp: 1, dp: 1}",
                            "train.seq_len=64", "train.global_batch=16", "train.cuda_graphs=layer"};
    mm_metrics a, b;
    run_sim(eager, 4, &a);
    run_sim(graphs, 5, &b);
    ck_assert_msg(a.exposed_host_s > 0.1 * a.iteration_time_s, "exposed %g of %g s", a.exposed_host_s,
                  a.iteration_time_s);
    ck_assert_msg(b.exposed_host_s < 1e-3 * b.iteration_time_s, "graphs: exposed %g s", b.exposed_host_s);
    ck_assert(b.host_launch_s < 0.2 * a.host_launch_s);
    ck_assert(b.iteration_time_s < a.iteration_time_s - 0.9 * a.exposed_host_s);
    /* the step is at least the host's work (it cannot run ahead of itself) */
    ck_assert(a.iteration_time_s >= a.host_launch_s);
    mm_sim sim;
    prepare(&sim, eager, 4);
    mm_metrics e;
    mm_err err;
    ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
    ck_assert_msg(fabs(e.iteration_time_s - a.iteration_time_s) < 0.25 * a.iteration_time_s, "estimate %g, run %g",
                  e.iteration_time_s, a.iteration_time_s);
    mm_sim_free(&sim);
    mm_metrics_free(&a);
    mm_metrics_free(&b);
    mm_metrics_free(&e);
    const char *longer[] = {"model=models/gpt3-1.3b.json", "parallel.llm={tp: 8, pp: 1, dp: 1}",
                            "train.seq_len=2048", "train.global_batch=16"};
    run_sim(longer, 4, &a);
    ck_assert_msg(a.exposed_host_s < 1e-3 * a.iteration_time_s, "exposed %g of %g s", a.exposed_host_s,
                  a.iteration_time_s);
    ck_assert(a.host_launch_s > 0);
    mm_metrics_free(&a);
}
END_TEST

/* Per-layer graphs' buffers (memcost.c graph_bytes): GPT-3 1.3B (24
 * layers, h 2048) at tp 2 x pp 2 x dp 2, 2048 tokens, no sequence
 * parallelism, 1F1B: stage 0 holds 12 layers and 2 micro-batches in
 * flight, 4 x 2048 x 2048 x 2 bytes each: 805,306,368 bytes more than
 * eager; a full-iteration graph adds nothing.  1 byte. */
START_TEST(cuda_graph_memory)
{
    const char *base[] = {"model=models/gpt3-1.3b.json", "parallel.llm={tp: 2, pp: 2, dp: 2}", "train.seq_len=2048",
                          "train.global_batch=64", "train.sequence_parallel=false", "train.cuda_graphs=none"};
    double gib[3];
    static const char *const modes[] = {"train.cuda_graphs=none", "train.cuda_graphs=layer", "train.cuda_graphs=full"};
    for (int k = 0; k < 3; k++) {
        base[5] = modes[k];
        mm_sim sim;
        prepare(&sim, base, 6);
        mm_sim_memory m;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_memory(&sim, &m, &err), 0);
        gib[k] = m.stage_alloc_gib[0]; /* allocated: the reserve scales what is allocated */
        mm_sim_memory_free(&m);
        mm_sim_free(&sim);
    }
    ck_assert_msg(fabs((gib[1] - gib[0]) * MM_GIB - 805306368.0) < 1.0, "%.3f bytes", (gib[1] - gib[0]) * MM_GIB);
    ck_assert(gib[2] == gib[0]);
}
END_TEST

/* A published step where the host shows (tests/data/host/megatron-pr7446.csv):
 * Megatron-LM's Llama-3-shaped proxy (8 layers, h 1024) on one DGX H100,
 * forward-backward in one CUDA graph, 39.45 ms a step with the optimizer
 * eager and 33.07 ms with it graphed.  A named known miss
 * (docs/validation.md): mmsim runs the eager-optimizer step GPU-bound in
 * 25.8 ms (sim / pub held within 3 points of the CSV's ratio) and its
 * eager optimizer's host time is under a tenth of the 6.4 ms that
 * graphing the optimizer saved, so the with/without pair is not
 * reproduced: Megatron FSDP v2's optimizer step is not modeled. */
START_TEST(megatron_proxy_cuda_graph_step)
{
    FILE *f = fopen("tests/data/host/megatron-pr7446.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    double eager = NAN, graphed = NAN, ratio = NAN;
    bool header = true;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (header) {
            header = false;
            continue;
        }
        char name[64], target[16];
        double ms, r = NAN;
        int k = sscanf(line, "%63[^,],%lf,%15[^,],%lf,", name, &ms, target, &r);
        ck_assert_int_ge(k, 3);
        if (!strcmp(name, "optimizer_eager")) {
            eager = ms, ratio = r;
            ck_assert_str_eq(target, "miss");
        } else if (!strcmp(name, "optimizer_graphed"))
            graphed = ms;
    }
    fclose(f);
    ck_assert(isfinite(eager) && isfinite(graphed) && isfinite(ratio));
    static mm_scenario sc;
    mm_sim sim;
    mm_err err;
    mm_scenario_free(&sc);
    ck_assert_msg(mm_scenario_load(&sc, "tests/data/host/megatron-pr7446.yaml", NULL, 0, &err) == 0, "%s: %s",
                  err.key, err.msg);
    ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
    mm_metrics m;
    ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s", err.msg);
    double got = 1e3 * m.iteration_time_s / eager;
    ck_assert_msg(fabs(got - ratio) <= 0.03, "sim / pub %.3f, recorded %.3f", got, ratio);
    ck_assert_msg(m.exposed_host_s < 0.01 * m.iteration_time_s, "exposed host %g s", m.exposed_host_s);
    ck_assert_msg(1e3 * m.host_launch_s < 0.1 * (eager - graphed), "host %g ms", 1e3 * m.host_launch_s);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
}
END_TEST

/* train.cuda_graphs is refused, naming the key, where the profile has no
 * such scope (hf-deepspeed has none) or the value is no scope at all; a
 * profile without host.cuda_graphs.layer names that key. */
START_TEST(bad_host_keys_refused)
{
    mm_err err;
    const char *hf[] = {"train.framework=hf-deepspeed", "train.cuda_graphs=layer"};
    ck_assert_int_eq(prepare_rc(hf, 2, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.cuda_graphs");
    ck_assert_msg(strstr(err.msg, "host.cuda_graphs"), "%s", err.msg);
    const char *bogus[] = {"train.cuda_graphs=sometimes"};
    ck_assert_int_eq(prepare_rc(bogus, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.cuda_graphs");
    const char *full_ok[] = {"train.cuda_graphs=full"};
    ck_assert_int_eq(prepare_rc(full_ok, 1, &err), 0);
    char tmp[64];
    ck_assert_int_eq(load_edited("cuda_graphs: {layer: true, full: true}", "  cuda_graphs: {full: true}\n", &err,
                                 tmp, sizeof tmp),
                     -MM_EINPUT);
    ck_assert_str_eq(err.key, "host.cuda_graphs.layer");
    ck_assert_int_eq(load_edited("backward_op_us: 6.8", "  backward_op_us: -1\n", &err, tmp, sizeof tmp), -MM_EINPUT);
    ck_assert_str_eq(err.key, "host.backward_op_us");
    ck_assert_int_eq(load_edited("graph_launch_us", "  graph_launch: 3\n", &err, tmp, sizeof tmp), -MM_EINPUT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("host");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, chain_of_kernels_closed_form);
    tcase_add_test(tc, one_op_of_many_kernels);
    tcase_add_test(tc, cuda_graphs_remove_the_launches);
    tcase_add_test(tc, cuda_graph_memory);
    tcase_add_test(tc, megatron_proxy_cuda_graph_step);
    tcase_add_test(tc, bad_host_keys_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
