/* test_lassen.c - the Lassen-like V100 topology (topologies/lassen-v100.yaml):
 * what it reads against the figures it cites (V100 SXM2 datasheet,
 * nccl-tests busbw per EDR NIC), an all-reduce inside a node and across
 * nodes against its closed form, a bad key refused with file, line and
 * key (exit 2), a BF16 run and a fused attention kernel refused (Volta has
 * neither; auto runs the unfused core), and a compressed run refused where
 * the compressor has no V100 throughput. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cluster.h"
#include "hw/net.h"
#include "mmsim_exe.h"

static mm_cluster load(const char *path, int nodes)
{
    mm_cluster c;
    mm_err err;
    ck_assert_msg(mm_cluster_load(path, nodes, &c, &err) == 0, "%s:%d: %s: %s", err.file, err.line, err.key,
                  err.msg);
    return c;
}

/* The file as cited: 4 GPUs, FP16 125 TFLOP/s and no BF16, 16 GB at
 * 900 GB/s, GPU to GPU at the X bus's 32 GB/s a direction (64 GB/s
 * bidirectional, WikiChip) at 26/32 (the DGX-1 ring's 122/150), two
 * 12.5 GB/s EDR NICs at
 * 24.4 / 25 (12.2 GB/s busbw a NIC), a 2:1 fat tree of 12 nodes a leaf. */
START_TEST(reads)
{
    mm_cluster c = load("topologies/lassen-v100.yaml", 48);
    ck_assert_int_eq(c.nodes, 48);
    ck_assert_int_eq(c.gpus_per_node, 4);
    ck_assert_int_eq(mm_cluster_gpus(&c), 192);
    ck_assert(fabs(c.gpu.peak_flops[MM_DTYPE_FP16] - 125e12) < 1);
    ck_assert(isnan(c.gpu.peak_flops[MM_DTYPE_BF16]));
    ck_assert(fabs(c.gpu.hbm_bytes - 16e9) < 1 && fabs(c.gpu.hbm_bw - 900e9) < 1);
    ck_assert(fabs(c.nvlink_bw - 32e9) < 1 && fabs(c.nvlink_eff - 26.0 / 32) < 1e-12);
    ck_assert_int_eq(c.nics_per_node, 2);
    ck_assert(fabs(c.nic_bw - 12.5e9) < 1 && fabs(c.net_eff - 24.4 / 25) < 1e-12);
    ck_assert_int_eq(c.fabric, MM_FABRIC_FAT_TREE);
    ck_assert_int_eq(c.nodes_per_leaf, 12);
    ck_assert(c.oversub == 2);
    mm_cluster_free(&c);
}
END_TEST

static double allreduce_s(const mm_cluster *c, int n, double bytes)
{
    int *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < n; i++)
        g[i] = i;
    double t = mm_net_analytic_time(c, MM_COLL_ALLREDUCE, g, n, bytes);
    free(g);
    return t;
}

/* A 1 GiB all-reduce over one node's 4 GPUs runs at the file's busbw,
 * 26 GB/s (bus factor 2 (n-1)/n), within 3 % (the ring steps' latency is
 * small against the transfer); across 2 nodes (8 GPUs) the ring crosses
 * the 12.5 GB/s EDR ports and takes longer. */
START_TEST(allreduce_closed_form)
{
    mm_cluster c = load("topologies/lassen-v100.yaml", 2);
    const double S = 1024.0 * 1024 * 1024;
    double t4 = allreduce_s(&c, 4, S);
    double bus4 = S / t4 * 2.0 * 3 / 4 / 1e9;
    ck_assert_msg(fabs(bus4 / 26.0 - 1) < 0.03, "node busbw %.2f GB/s, file 26", bus4);
    double t8 = allreduce_s(&c, 8, S);
    ck_assert_msg(t8 > t4, "across nodes %.4f s not slower than inside %.4f s", t8, t4);
    mm_cluster_free(&c);
}
END_TEST

static void write_copy(const char *dst, const char *from, const char *to, int *line)
{
    FILE *in = fopen("topologies/lassen-v100.yaml", "r"), *out = fopen(dst, "w");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    char buf[1024];
    int n = 0;
    *line = 0;
    while (fgets(buf, sizeof buf, in)) {
        n++;
        char *p = strstr(buf, from);
        if (p && !*line) {
            *line = n;
            fprintf(out, "%.*s%s%s", (int)(p - buf), buf, to, p + strlen(from));
        } else
            fputs(buf, out);
    }
    fclose(in);
    fclose(out);
    ck_assert_int_gt(*line, 0);
}

static int scen(const char *dir, const char *topo, const char *extra, char *out, size_t n, char *err, size_t m)
{
    char path[512], args[1024];
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "model: models/megatron-gpt-1.7b.json\ncluster: {topology: %s, nodes: 2}\n"
               "train:\n  global_batch: 8\n  seq_len: 2048\n  precision: fp16\n  attention: unfused\n  recompute: full\n"
               "  zero: 0\n  overlap_grad_reduce: false\nworkload: text\n"
               "parallel:\n  llm: {tp: 2, pp: 4, dp: 1}\n  vision: null\n%s",
            topo, extra);
    fclose(f);
    snprintf(args, sizeof args, "run --no-db %s", path);
    return mmx_run(dir, NULL, args, out, n, err, m);
}

/* A misspelt key (nic_gbits) is refused with the file, its line and the
 * key, exit 2; BF16 on Volta is refused; cuSZp2's table throughputs are
 * the A100's, so on the V100 a compressed run without its own is refused
 * by comm.compress.compress_gb_s naming the V100, and runs with them. */
START_TEST(bad_input)
{
    char dir[256], out[16384], err[4096], topo[512], want[64];
    mmx_tmpdir(dir, sizeof dir, "lassen");
    int line;
    snprintf(topo, sizeof topo, "%s/t.yaml", dir);
    write_copy(topo, "nic_gbit_s: 100", "nic_gbits: 100", &line);
    ck_assert_int_eq(scen(dir, topo, "", out, sizeof out, err, sizeof err), 2);
    snprintf(want, sizeof want, "t.yaml:%d", line);
    ck_assert_msg(strstr(err, want) && strstr(err, "nic_gbits"), "%s", err);
    ck_assert_int_eq(scen(dir, "topologies/lassen-v100.yaml", "", out, sizeof out, err, sizeof err), 0);
    char args[1024];
    /* below sm_75 no fused attention: auto runs the unfused core, a fused kind is refused */
    char out2[16384];
    snprintf(args, sizeof args, "run --no-db %s/s.yaml --set train.attention=auto", dir);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out2, sizeof out2, err, sizeof err), 0);
    const char *a = strstr(out, "iteration time"), *u = strstr(out2, "iteration time");
    ck_assert_msg(a && u && !strncmp(a, u, 40), "unfused %.40s, auto %.40s", a ? a : "", u ? u : "");
    snprintf(args, sizeof args, "run --no-db %s/s.yaml --set train.attention=flash2", dir);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out2, sizeof out2, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "train.attention") && strstr(err, "sm_75"), "%s", err);
    snprintf(args, sizeof args, "run --no-db %s/s.yaml --set train.precision=bf16", dir);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "train.precision") && strstr(err, "bf16") && strstr(err, "V100"), "%s", err);
    ck_assert_int_eq(scen(dir, "topologies/lassen-v100.yaml", "comm:\n  compress: {pp: cuszp2, pp_ratio: 2}\n", out,
                          sizeof out, err, sizeof err),
                     2);
    ck_assert_msg(strstr(err, "comm.compress.compress_gb_s") && strstr(err, "V100"), "%s", err);
    ck_assert_int_eq(scen(dir, "topologies/lassen-v100.yaml",
                          "comm:\n  compress: {pp: cuszp2, pp_ratio: 2, compress_gb_s: 146.7, decompress_gb_s: "
                          "226.4}\n",
                          out, sizeof out, err, sizeof err),
                     0);
    mmx_rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("lassen");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, reads);
    tcase_add_test(tc, allreduce_closed_form);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
