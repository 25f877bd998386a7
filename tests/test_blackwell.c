/* test_blackwell.c - the Blackwell topologies (topologies/dgx-b200.yaml,
 * topologies/gb200-nvl72.yaml): their datasheet figures as read, the
 * all-reduce inside an 8-GPU and a 72-GPU NVLink domain against the
 * published nccl-tests bus bandwidths, the derived kernel tables below
 * their peaks, and the default scenario and Llama-3.1-405B running on
 * them with FLOPs and times against closed forms.
 * Tolerances are stated at each assertion. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/run.h"
#include "hw/coll.h"
#include "hw/compute.h"
#include "hw/net.h"
#include "hw/topo.h"
#include "scenario/sim.h"

static const double GiB = 1024.0 * 1024 * 1024;

static mm_cluster load(const char *path, int nodes)
{
    mm_cluster c;
    mm_err err;
    int rc = mm_cluster_load(path, nodes, &c, &err);
    ck_assert_msg(rc == 0, "%s:%d %s: %s", err.file, err.line, err.key, err.msg);
    return c;
}

/* nccl-tests busbw of an all-reduce over the first n GPUs */
static double busbw(const mm_cluster *c, mm_net_model model, mm_coll_algo algo, int n, double bytes,
                    mm_coll_algo *used)
{
    int *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < n; i++)
        g[i] = i;
    mm_coll_req req = {.kind = MM_COLL_ALLREDUCE, .algo = algo, .gpus = g, .n = n, .bytes = bytes, .count = 1};
    mm_err err;
    mm_err_clear(&err);
    double t = mm_coll_time(c, model, &req, used, &err);
    ck_assert_msg(isfinite(t), "%s", err.msg);
    free(g);
    return bytes / t * mm_coll_bus_factor(MM_COLL_ALLREDUCE, n) / 1e9;
}

/* The datasheet figures as the files give them (dense peaks: the DGX B200
 * datasheet's and the GB200 NVL72 page's sparse figures halved; HBM per
 * GPU: 1,440 GB / 8 and 13.4 TB / 72; NVLink 5: 1.8 TB/s bidirectional). */
START_TEST(datasheets)
{
    mm_cluster b = load("topologies/dgx-b200.yaml", 0), g = load("topologies/gb200-nvl72.yaml", 0);
    ck_assert_int_eq(b.gpus_per_node, 8);
    ck_assert_int_eq(g.gpus_per_node, 72);
    ck_assert_int_eq(g.nics_per_node, 72);
    ck_assert(b.intra == MM_INTRA_NVSWITCH && g.intra == MM_INTRA_NVSWITCH && b.nvls && g.nvls);
    const struct {
        const mm_cluster *c;
        double bf16, fp8, hbm_gb, hbm_tb_s;
    } want[] = {{&b, 2250, 4500, 180, 8.0}, {&g, 2500, 5000, 186, 8.0}};
    for (int i = 0; i < 2; i++) {
        const mm_gpu_spec *s = &want[i].c->gpu;
        ck_assert(fabs(s->peak_flops[MM_DTYPE_BF16] - want[i].bf16 * 1e12) < 1);
        ck_assert(fabs(s->peak_flops[MM_DTYPE_FP16] - want[i].bf16 * 1e12) < 1);
        ck_assert(fabs(s->peak_flops[MM_DTYPE_FP8] - want[i].fp8 * 1e12) < 1);
        ck_assert(fabs(s->hbm_bytes - want[i].hbm_gb * 1e9) < 1);
        ck_assert(fabs(s->hbm_bw - want[i].hbm_tb_s * 1e12) < 1);
        ck_assert(fabs(want[i].c->nvlink_bw - 900e9) < 1);
        ck_assert(fabs(want[i].c->nic_bw - 50e9) < 1);
        ck_assert(s->kernels.has_gemm && s->kernels.has_attn && s->kernels.has_mem);
        ck_assert(fabs(s->compute_capability - 10.0) < 1e-12);
    }
    /* every GPU of the rack is one NVSwitch hop from every other: a path
     * from GPU 0 to GPU 71 is up and down, at the NVLink rate */
    mm_topo t;
    mm_err err;
    ck_assert_int_eq(mm_topo_build(&t, &g, &err), 0);
    int links[MM_TOPO_MAX_PATH];
    int n = mm_topo_path(&t, 0, 71, 0, 0, links);
    ck_assert_int_eq(n, 2);
    for (int i = 0; i < n; i++)
        ck_assert(fabs(t.cap[links[i]] - 900e9 * g.nvlink_eff) < 1);
    ck_assert(fabs(mm_topo_path_latency(&t, links, n) - g.nvlink_latency_s) < 1e-15);
    mm_topo_free(&t);
    mm_cluster_free(&b);
    mm_cluster_free(&g);
}
END_TEST

/* All-reduce inside one NVLink domain against nccl-tests, in both network
 * models: 8 x B200 (AWS p6-b200, NCCL 2.27.7; stas00/ml-engineering
 * network/README.md @ 744d01e1): 845.7 GB/s busbw at 16 GiB, NCCL's
 * choice (NVLS); a full GB200 NVL72 rack, 72 GPUs (coreweave/nccl-tests
 * pull request 43): 839.2 at 4 GiB, 834.6 at 8 GiB (out of place).  5 %.
 * The ring (NVLS off) against its closed form: 2 (n - 1) / n x S over
 * the ring's per-GPU rate, nvlink_allreduce_busbw_gb_s (740, derived),
 * within 10 % (the latency of 2 (n - 1) steps on 4 GiB is < 0.1 %). */
START_TEST(allreduce_in_the_nvlink_domain)
{
    mm_cluster b = load("topologies/dgx-b200.yaml", 1), g = load("topologies/gb200-nvl72.yaml", 1);
    const struct {
        const mm_cluster *c;
        int n;
        double bytes, pub;
    } cases[] = {{&b, 8, 16 * GiB, 845.7}, {&g, 72, 4 * GiB, 839.2}, {&g, 72, 8 * GiB, 834.6}};
    for (int model = 0; model < 2; model++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            mm_coll_algo used;
            double bw = busbw(cases[i].c, (mm_net_model)model, MM_ALGO_AUTO, cases[i].n, cases[i].bytes, &used);
            ck_assert_int_eq(used, MM_ALGO_NVLS);
            ck_assert_msg(fabs(bw / cases[i].pub - 1) < 0.05, "%s case %zu: busbw %.1f, published %.1f",
                          mm_net_model_names[model], i, bw, cases[i].pub);
        }
        for (int n = 8; n <= 72; n += 64) {
            const mm_cluster *c = n == 8 ? &b : &g;
            double bw = busbw(c, (mm_net_model)model, MM_ALGO_RING, n, 4 * GiB, NULL);
            ck_assert_msg(fabs(bw / 740 - 1) < 0.10, "ring on %d GPUs: busbw %.1f, closed form 740", n, bw);
        }
    }
    /* NVLS on the 72-GPU switch beats the ring, as NCCL chooses it there */
    ck_assert(busbw(&g, MM_NET_MODEL_FLOW, MM_ALGO_NVLS, 72, 8 * GiB, NULL) >
              busbw(&g, MM_NET_MODEL_FLOW, MM_ALGO_RING, 72, 8 * GiB, NULL));
    mm_cluster_free(&b);
    mm_cluster_free(&g);
}
END_TEST

/* The derived kernel tables stay below peak: every GEMM at most the
 * measured MAMF (B200 1745.0, GB200 1822.0 TFLOP/s BF16), a large GEMM
 * at the table's 4096^3 value (the H100 sweep's 780.2 x MAMF ratio),
 * FP8 at each GPU's FP8 / BF16 MAMF ratio, attention at the
 * FlashAttention-4 forward bound, and the GB200
 * faster than the B200 by its MAMF ratio. */
START_TEST(kernels_below_peak)
{
    mm_cluster b = load("topologies/dgx-b200.yaml", 0), g = load("topologies/gb200-nvl72.yaml", 0);
    const double mamf[] = {1745.0, 1822.0};
    const mm_cluster *cs[] = {&b, &g};
    for (int i = 0; i < 2; i++) {
        const mm_gemm_table *t = &cs[i]->gpu.kernels.gemm;
        int cells = t->nm * t->nn * t->nk;
        ck_assert_int_eq(cells, 125);
        for (int j = 0; j < cells; j++)
            ck_assert(t->tflops[j] > 0 && t->tflops[j] <= mamf[i] + 0.05);
        double m = 4096, flops = 2 * m * m * m;
        double rate = flops / (mm_gemm_time(&cs[i]->gpu, MM_DTYPE_BF16, m, m, m, 1, 3 * m * m * 2) -
                               cs[i]->gpu.kernel_overhead_s) / 1e12;
        double want = 780.2 * mamf[i] / 794.5;
        ck_assert_msg(fabs(rate / want - 1) < 1e-3, "gemm 4096^3: %.1f TFLOP/s, table %.1f", rate, want);
        ck_assert(rate < cs[i]->gpu.peak_flops[MM_DTYPE_BF16] * 1e-12);
        /* FP8 at the GPU's own measured FP8 / BF16 MAMF (3432.5 / 1745.0,
         * 3615.6 / 1822.0; gpu.fp8_gemm_speedup), below the FP8 peak */
        const double fp8_mamf[] = {3432.5, 3615.6};
        double r8 = flops / (mm_gemm_time(&cs[i]->gpu, MM_DTYPE_FP8, m, m, m, 1, 3 * m * m) -
                             cs[i]->gpu.kernel_overhead_s) / 1e12;
        ck_assert_msg(fabs(r8 / (want * fp8_mamf[i] / mamf[i]) - 1) < 1e-3, "fp8 gemm %.1f", r8);
        ck_assert(r8 < cs[i]->gpu.peak_flops[MM_DTYPE_FP8] * 1e-12);
        /* FA forward, head dim 128, 16k, non-causal: FA4's 1613 on B200 */
        double s = 16384, d = 128, af = 4 * s * s * d;
        double at = mm_attn_time(&cs[i]->gpu, MM_DTYPE_BF16, af, s, d, false, MM_ATTN_FWD, 0) -
                    cs[i]->gpu.kernel_overhead_s;
        double arate = af / at / 1e12;
        ck_assert_msg(fabs(arate / (1613 * mamf[i] / 1745.0) - 1) < 2e-3, "attention %.1f", arate);
        ck_assert(arate < cs[i]->gpu.peak_flops[MM_DTYPE_BF16] * 1e-12);
    }
    mm_cluster_free(&b);
    mm_cluster_free(&g);
}
END_TEST

/* Pipeline send/recv on DGX B200, NCCL's p2p model (docs/topology.md) with
 * the derived curve: in an 8-rank communicator, channels by NCCL's rule
 * (mm_net_p2p_channels) at 44.67 GB/s each (the A100's 13.85 x 77.4 /
 * 24.0, NCCL 2.27.7's Simple ceilings), at most the curve's 0.6503 x 900
 * GB/s; across two nodes, 2 network channels of 14 GB/s (NCCL 2.27's rule
 * for 400 Gb/s NICs).  Closed form: 9.85 us + S / rate (+ the fabric's
 * latency across nodes); 1 %. */
START_TEST(sendrecv_closed_form)
{
    mm_cluster b = load("topologies/dgx-b200.yaml", 2);
    const double S[] = {32.0 * 1024 * 1024, 1024.0 * 1024 * 1024};
    for (int i = 0; i < 2; i++) {
        int ch = mm_net_p2p_channels(&b, 8, 1, S[i]);
        ck_assert(ch >= 1 && ch <= 32);
        double rate = fmin(ch * 13.85e9 * 77.4 / 24.0, 0.6503 * 900e9);
        double want = 9.85e-6 + S[i] / rate;
        double got = mm_net_p2p_pair_time(&b, 0, 7, S[i], 8, 1);
        ck_assert_msg(fabs(got / want - 1) < 0.01, "%g B on %d channels: %g s, closed form %g s", S[i], ch, got,
                      want);
        ck_assert_int_eq(mm_net_p2p_channels(&b, 16, 2, S[i]), 2);
        double across = mm_net_p2p_pair_time(&b, 0, 8, S[i], 16, 2);
        double want_x = 9.85e-6 + S[i] / (2 * 14e9);
        ck_assert_msg(across >= want_x && across < want_x * 1.01 + 10e-6, "across nodes %g s, closed form %g s",
                      across, want_x);
    }
    mm_cluster_free(&b);
}
END_TEST

static int load_sim(mm_sim *sim, mm_scenario *sc, const char *const *sets, int n, mm_err *err)
{
    int rc = mm_scenario_load(sc, NULL, sets, n, err);
    return rc ? rc : mm_sim_prepare(sim, sc, err);
}

/* The built-in scenario with only the topology swapped (2 DGX B200), and
 * on one GB200 NVL72 rack (the layout scaled to 72 GPUs): both run, their
 * MFU is below the GEMM efficiency, and the B200 is faster than the same
 * scenario on DGX H100 by no more than its peak ratio (2250 / 989). */
START_TEST(default_scenario_runs)
{
    const char *h100[] = {"iterations=1"};
    const char *b200[] = {"cluster.topology=topologies/dgx-b200.yaml", "iterations=1"};
    const char *nvl72[] = {"cluster.topology=topologies/gb200-nvl72.yaml", "cluster.nodes=1",
                           "parallel.llm={tp: 4, pp: 2, dp: 9}", "parallel.vision.dp=72",
                           "train.global_batch=72", "iterations=1"};
    const char *const *sets[] = {h100, b200, nvl72};
    const int nsets[] = {1, 2, 6};
    double t[3];
    for (int i = 0; i < 3; i++) {
        mm_scenario sc = {0};
        mm_sim sim = {0};
        mm_err err;
        ck_assert_msg(load_sim(&sim, &sc, sets[i], nsets[i], &err) == 0, "%s: %s", err.key, err.msg);
        mm_metrics m;
        ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s", err.msg);
        ck_assert(!m.oom && m.iteration_time_s > 0);
        ck_assert_msg(m.mfu > 0.05 && m.mfu < sim.cluster->gpu.gemm_eff, "mfu %.3f", m.mfu);
        t[i] = m.iteration_time_s;
        if (i == 2)
            ck_assert_int_eq(m.gpus, 72);
        mm_metrics_free(&m);
        mm_sim_free(&sim);
        mm_scenario_free(&sc);
    }
    ck_assert_msg(t[1] < t[0] && t[0] / t[1] < 2250.0 / 989.0, "H100 %.3f s, B200 %.3f s", t[0], t[1]);
}
END_TEST

/* Llama-3.1-405B (models/llama-3.1-405b.json) on two GB200 NVL72 racks
 * and on 18 DGX B200, 144 GPUs each, tp 8 (on the rack's NVLink; one
 * DGX), pp 9, dp 2, full recompute: it fits the 186 / 180 GB (selective
 * recompute needs 169.1 GiB, 181.6 GB: the rack's GPUs hold it, the
 * DGX's do not), its model FLOPs are the closed form
 * for a GQA SwiGLU decoder (Megatron's convention: 3 x forward, attention
 * dense), its time is no shorter than those FLOPs at the GPUs' maximum
 * achievable matmul rate, and the rack, whose pipeline hops and DP
 * all-reduce stay on NVLink, is faster than the DGX B200s. */
START_TEST(llama405b_runs)
{
    const char *topo[] = {"cluster.topology=topologies/gb200-nvl72.yaml", "cluster.topology=topologies/dgx-b200.yaml"};
    const char *nodes[] = {"cluster.nodes=2", "cluster.nodes=18"};
    const double mamf[] = {1822e12, 1745e12}, hbm[] = {186e9, 180e9};
    double t[2];
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"model=models/llama-3.1-405b.json", topo[i], nodes[i],
                              "parallel.llm={tp: 8, pp: 9, dp: 2}", "train.global_batch=36",
                              "train.recompute=full", "iterations=1"};
        mm_scenario sc = {0};
        mm_sim sim = {0};
        mm_err err;
        ck_assert_msg(load_sim(&sim, &sc, sets, 7, &err) == 0, "%s: %s", err.key, err.msg);
        ck_assert_int_eq(mm_llm_params(sim.llm), INT64_C(405853388800)); /* 405.85B from config.json's sizes */
        mm_metrics m;
        ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s", err.msg);
        ck_assert(!m.oom);
        ck_assert(m.peak_memory_gib * GiB < hbm[i]);
        double B = 36, s = 4096, l = 126, h = 16384, f = 53248, V = 128256, kv = 8 * 128;
        double matmul = l * (2 * h * h + 2 * h * kv + 3 * h * f) + V * h; /* weights a token multiplies */
        double fwd = B * s * (2 * matmul + l * 4 * s * h);               /* + QK^T and AV, dense */
        double want = 3 * fwd;
        ck_assert_msg(fabs(m.iters[0].model_flops / want - 1) < 1e-6, "model flops %g, closed form %g",
                      m.iters[0].model_flops, want);
        double floor = want / (144 * mamf[i]);
        ck_assert_msg(m.iteration_time_s > floor, "%.3f s below the MAMF floor %.3f s", m.iteration_time_s, floor);
        ck_assert(m.mfu > 0.1 && m.mfu < sim.cluster->gpu.gemm_eff);
        t[i] = m.iteration_time_s;
        mm_metrics_free(&m);
        mm_sim_free(&sim);
        mm_scenario_free(&sc);
    }
    ck_assert_msg(t[0] < t[1], "NVL72 %.3f s, DGX B200 %.3f s", t[0], t[1]);
}
END_TEST

static Suite *blackwell_suite(void)
{
    Suite *s = suite_create("blackwell");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, datasheets);
    tcase_add_test(tc, allreduce_in_the_nvlink_domain);
    tcase_add_test(tc, kernels_below_peak);
    tcase_add_test(tc, sendrecv_closed_form);
    tcase_add_test(tc, default_scenario_runs);
    tcase_add_test(tc, llama405b_runs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(blackwell_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
