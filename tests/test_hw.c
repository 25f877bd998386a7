/* test_hw.c - topology files, the roofline compute model and the analytic
 * network model against the vendor's nccl-tests figures (NVIDIA GTC24
 * session S62129 slide "Collective Communication Bandwidth", as in
 * stas00/ml-engineering network/benchmarks/images/
 * all-reduce-multi-node-bandwidth.png @ 744d01e1; the figures each
 * topology file cites). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hw/compute.h"
#include "hw/net.h"

#include "cluster_keep.h"

static mm_cluster load(const char *path, int nodes)
{
    mm_cluster c;
    mm_err err;
    int rc = mm_cluster_load(path, nodes, &c, &err);
    ck_assert_msg(rc == 0, "%s:%d %s %s", err.file, err.line, err.key, err.msg);
    return mm_test_keep_cluster(c);
}

START_TEST(topologies_load)
{
    mm_cluster a = load("topologies/dgx-a100.yaml", 4);
    ck_assert_int_eq(a.nodes, 4);
    ck_assert_int_eq(a.gpus_per_node, 8);
    ck_assert_int_eq(mm_cluster_gpus(&a), 32);
    ck_assert(fabs(a.gpu.peak_flops[MM_DTYPE_BF16] - 312e12) < 1);
    ck_assert(isnan(a.gpu.peak_flops[MM_DTYPE_FP8]));
    ck_assert(fabs(a.nic_bw - 25e9) < 1);
    ck_assert(fabs(a.gpu.hbm_bytes - 80e9) < 1);
    mm_cluster h = load("topologies/dgx-h100.yaml", 0);
    ck_assert_int_eq(h.nodes, 1);
    ck_assert(fabs(h.gpu.peak_flops[MM_DTYPE_FP8] - 1979e12) < 1);
    ck_assert(fabs(h.nic_bw - 50e9) < 1);
    mm_cluster h2 = load("topologies/hgx-h200.yaml", 2);
    ck_assert(fabs(h2.gpu.hbm_bytes - 141e9) < 1);
    ck_assert(fabs(h2.gpu.hbm_bw - 4.8e12) < 1);
    /* gpu.overlap_slowdown as the files state it (Lee et al.'s average),
     * the same average where a file leaves it out */
    ck_assert(a.gpu.overlap_slowdown == 0.189 && h.gpu.overlap_slowdown == 0.189 && h2.gpu.overlap_slowdown == 0.189);
    mm_cluster t = load("tests/data/mm/two-gpu.yaml", 1);
    ck_assert(t.gpu.overlap_slowdown == MM_OVERLAP_SLOWDOWN_DEFAULT);
}
END_TEST

/* busbw of an all-reduce of `bytes` over the first n GPUs. */
static double allreduce_busbw(const mm_cluster *c, int n, double bytes)
{
    int *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < n; i++)
        g[i] = i;
    double t = mm_net_analytic_time(c, MM_COLL_ALLREDUCE, g, n, bytes);
    free(g);
    return bytes / t * mm_coll_bus_factor(MM_COLL_ALLREDUCE, n) / 1e9;
}

/* Large all-reduce reproduces the published busbw within 2 %. */
START_TEST(allreduce_busbw_matches_vendor)
{
    const double G = 1 << 30;
    mm_cluster a = load("topologies/dgx-a100.yaml", 4);
    mm_cluster h = load("topologies/dgx-h100.yaml", 4);
    struct { const mm_cluster *c; int n; double expect; } cases[] = {
        {&a, 8, 232}, {&a, 32, 192}, {&h, 8, 370}, {&h, 32, 375},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double bw = allreduce_busbw(cases[i].c, cases[i].n, 4 * G);
        ck_assert_msg(fabs(bw / cases[i].expect - 1) < 0.02, "case %zu: busbw %.1f, published %.0f", i, bw,
                      cases[i].expect);
    }
    /* small messages are latency-bound: 2(n-1) steps of alpha */
    int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double t = mm_net_analytic_time(&h, MM_COLL_ALLREDUCE, g8, 8, 8);
    ck_assert(fabs(t - 14 * 1e-6) < 1e-8);
}
END_TEST

START_TEST(rails_limit_sparse_groups)
{
    /* one GPU per node uses one NIC: busbw is one NIC's worth */
    mm_cluster h = load("topologies/dgx-h100.yaml", 4);
    int g[4] = {0, 8, 16, 24};
    double S = 1e10;
    double t = mm_net_analytic_time(&h, MM_COLL_ALLREDUCE, g, 4, S);
    double bus = S * 1.5 / t / 1e9;
    ck_assert_msg(fabs(bus - 50 * 375.0 / 400.0) < 0.1, "busbw %.2f", bus);
    /* send/recv across nodes: NCCL 2.20's 2 network channels x 14 GB/s
     * (nccl_version, tests/test_p2p.c) are below the wire's 375 / 400 x 50
     * GB/s, so the channels bound it: fixed time + alpha + S / 28 GB/s */
    int p[2] = {0, 8};
    ck_assert(fabs(mm_net_analytic_time(&h, MM_COLL_SENDRECV, p, 2, 1e9) - (9.85e-6 + 3e-6 + 1e9 / 28e9)) < 1e-12);
    /* inside a node the p2p model's link ceiling, 0.6503 x 450 GB/s, plus
     * its fixed time (tests/test_p2p.c) */
    int q[2] = {0, 1};
    ck_assert(fabs(mm_net_analytic_time(&h, MM_COLL_SENDRECV, q, 2, 1e9) - (9.85e-6 + 1e9 / (0.6503 * 450e9))) <
              1e-12);
    ck_assert(mm_net_analytic_time(&h, MM_COLL_ALLREDUCE, g, 1, S) == 0);
    ck_assert(fabs(mm_coll_bus_factor(MM_COLL_ALLGATHER, 8) - 7.0 / 8) < 1e-15);
    ck_assert(fabs(mm_coll_bus_factor(MM_COLL_BROADCAST, 8) - 1) < 1e-15);
}
END_TEST

START_TEST(roofline)
{
    mm_cluster a = load("topologies/dgx-a100.yaml", 1);
    const mm_gpu_spec *g = &a.gpu;
    double f = 1e12;
    ck_assert(fabs(mm_compute_time(g, MM_DTYPE_BF16, MM_KERNEL_GEMM, f, 1e6) - (f / (312e12 * 0.869) + 3e-6)) < 1e-12);
    ck_assert(fabs(mm_compute_time(g, MM_DTYPE_BF16, MM_KERNEL_ATTN, f, 1e6) - (f / (312e12 * 0.65) + 3e-6)) < 1e-12);
    /* memory-bound: bytes at 82 % of 2039 GB/s */
    ck_assert(fabs(mm_compute_time(g, MM_DTYPE_BF16, MM_KERNEL_MEM, 0, 1e9) - (1e9 / (2039e9 * 0.82) + 3e-6)) < 1e-12);
    /* a GEMM with few FLOPs and many bytes is memory-bound */
    ck_assert(fabs(mm_compute_time(g, MM_DTYPE_BF16, MM_KERNEL_GEMM, 1e6, 1e9) - (1e9 / (2039e9 * 0.82) + 3e-6)) < 1e-12);
    /* FP8 falls back to the BF16 peak on a GPU without FP8 */
    ck_assert(mm_compute_time(g, MM_DTYPE_FP8, MM_KERNEL_GEMM, f, 0) == mm_compute_time(g, MM_DTYPE_BF16, MM_KERNEL_GEMM, f, 0));
}
END_TEST

static void bad(const char *file, int line, const char *key)
{
    mm_cluster c;
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_cluster_load(file, 0, &c, &err);
    ck_assert_int_eq(rc, -MM_EINPUT);
    ck_assert_str_eq(err.file, file);
    ck_assert_str_eq(err.key, key);
    ck_assert_int_eq(err.line, line);
}

START_TEST(bad_topologies)
{
    bad("tests/data/hw/missing-key.yaml", 4, "node.nic_gbit_s");
    bad("tests/data/hw/wrong-type.yaml", 5, "gpu.hbm_gb");
    bad("tests/data/hw/efficiency.yaml", 7, "gpu.gemm_efficiency");
    bad("tests/data/hw/unknown-key.yaml", 3, "node.nvlnk_gb_s");
    bad("tests/data/hw/dropout-rate.yaml", 11, "gpu.dropout_gelems_s");
    bad("tests/data/hw/jit-rate.yaml", 11, "gpu.jit_memory_efficiency");
    bad("tests/data/hw/overlap-slowdown-high.yaml", 11, "gpu.overlap_slowdown");
    bad("tests/data/hw/overlap-slowdown-negative.yaml", 11, "gpu.overlap_slowdown");
    bad("tests/data/hw/fp8-speedup-no-peak.yaml", 11, "gpu.fp8_gemm_speedup");
    bad("tests/data/hw/fp8-speedup-range.yaml", 11, "gpu.fp8_gemm_speedup");
    bad("tests/data/hw/sustained-clock-high.yaml", 11, "gpu.sustained_clock_ratio");
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("tests/data/hw/no-such-file.yaml", 0, &c, &err), -MM_EINPUT);
    ck_assert_str_eq(err.file, "tests/data/hw/no-such-file.yaml");
}
END_TEST

/* The kernel tables are the cluster's, on the heap and sized to their
 * files: the H100 GEMM grid's every listed shape reads back exactly;
 * mm_cluster_free empties them and may be called again; a topology whose
 * second table is bad fails naming that file and leaves nothing allocated
 * (the sanitizer build's leak check sees the GEMM table read before it). */
START_TEST(kernel_tables_owned)
{
    /* the tables' values are not inside the structs (they were 98,576
     * bytes of every mm_gpu_spec, and so of every mm_cluster and mm_sim) */
    ck_assert_uint_lt(sizeof(mm_kernel_tables), 2048);
    ck_assert_uint_lt(sizeof(mm_cluster), 8192);
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("topologies/dgx-h100.yaml", 1, &c, &err), 0);
    const mm_gemm_table *g = &c.gpu.kernels.gemm;
    ck_assert(c.gpu.kernels.has_gemm && g->tflops && g->nm > 1 && g->nn > 1 && g->nk > 1);
    ck_assert(c.gpu.kernels.has_attn && c.gpu.kernels.attn.n > 0 && c.gpu.kernels.attn.c);
    for (int i = 0; i < g->nm; i++)
        for (int j = 0; j < g->nn; j++)
            for (int l = 0; l < g->nk; l++) {
                double v = g->tflops[((size_t)i * g->nn + j) * g->nk + l];
                ck_assert(v > 0 && v == mm_gemm_table_tflops(g, g->m[i], g->n[j], g->k[l]));
            }
    mm_cluster_free(&c);
    ck_assert(!c.gpu.kernels.has_gemm && !c.gpu.kernels.gemm.tflops && !c.gpu.kernels.attn.c);
    mm_cluster_free(&c);
    ck_assert_int_eq(mm_cluster_load("tests/data/hw/bad-second-table.yaml", 1, &c, &err), -MM_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.file, "attn-bad-pass.csv"));
    ck_assert_str_eq(err.key, "pass");
    ck_assert(!c.gpu.kernels.gemm.tflops && !c.gpu.kernels.attn.c);
}
END_TEST

/* gpu.sustained_clock_ratio: what the SM clock bounds (tensor-core GEMMs
 * from the table or the factor, attention, dropout's Philox draws) takes
 * 1 / c times as long, launch overhead apart; HBM-bound kernels, and a GEMM
 * its bytes bound, do not move.  Unstated: 1, the tables as measured. */
START_TEST(sustained_clock)
{
    mm_cluster h = load("topologies/dgx-h100.yaml", 1);
    ck_assert(h.gpu.sustained_clock_ratio == 1.0);
    mm_gpu_spec s = h.gpu; /* shares h's tables; only h is freed */
    s.sustained_clock_ratio = 0.9;
    double o = h.gpu.kernel_overhead_s;
    double g1 = mm_gemm_time(&h.gpu, MM_DTYPE_BF16, 4096, 4096, 4096, 1, 0) - o;
    double g9 = mm_gemm_time(&s, MM_DTYPE_BF16, 4096, 4096, 4096, 1, 0) - o;
    ck_assert(fabs(g9 - g1 / 0.9) < 1e-12 * g1 + 1e-15);
    /* the FP8 rate scales as the BF16 table it derives from */
    double f1 = mm_gemm_time(&h.gpu, MM_DTYPE_FP8, 4096, 4096, 4096, 1, 0) - o;
    double f9 = mm_gemm_time(&s, MM_DTYPE_FP8, 4096, 4096, 4096, 1, 0) - o;
    ck_assert(fabs(f9 - f1 / 0.9) < 1e-9 * f1);
    double a1 = mm_attn_time(&h.gpu, MM_DTYPE_BF16, 1e12, 8192, 128, true, MM_ATTN_FWD, 0) - o;
    double a9 = mm_attn_time(&s, MM_DTYPE_BF16, 1e12, 8192, 128, true, MM_ATTN_FWD, 0) - o;
    ck_assert(fabs(a9 - a1 / 0.9) < 1e-9 * a1);
    /* HBM-bound: unchanged */
    ck_assert(mm_mem_time(&s, 1e9) == mm_mem_time(&h.gpu, 1e9));
    ck_assert(mm_gemm_time(&s, MM_DTYPE_BF16, 1, 1, 1, 1, 1e9) == mm_gemm_time(&h.gpu, MM_DTYPE_BF16, 1, 1, 1, 1, 1e9));
    /* dropout: 1e9 draws at 355 G/s x 0.9 bound the 1e6 bytes */
    ck_assert(fabs(mm_dropout_time(&s, 1e6, 1e9) - (1e9 / (355e9 * 0.9) + o)) < 1e-12);
    /* the factor path and the topology key */
    mm_cluster x = load("tests/data/hw/sustained-clock.yaml", 1);
    ck_assert(x.gpu.sustained_clock_ratio == 0.9);
    ck_assert(fabs(mm_compute_time(&x.gpu, MM_DTYPE_BF16, MM_KERNEL_GEMM, 1e12, 0) - (1e12 / (100e12 * 0.8 * 0.9) + 3e-6)) <
              1e-12);
    ck_assert(mm_compute_time(&x.gpu, MM_DTYPE_BF16, MM_KERNEL_MEM, 0, 1e9) == 1e9 / (1000e9 * 0.8) + 3e-6);
}
END_TEST

static Suite *hw_suite(void)
{
    Suite *s = suite_create("hw");
    TCase *tc = tcase_create("hw");
    tcase_add_checked_fixture(tc, NULL, mm_test_free_clusters);
    tcase_add_test(tc, topologies_load);
    tcase_add_test(tc, allreduce_busbw_matches_vendor);
    tcase_add_test(tc, rails_limit_sparse_groups);
    tcase_add_test(tc, roofline);
    tcase_add_test(tc, bad_topologies);
    tcase_add_test(tc, kernel_tables_owned);
    tcase_add_test(tc, sustained_clock);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hw_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
