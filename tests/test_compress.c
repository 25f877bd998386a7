/* test_compress.c - compressed communication (comm.compress): the DP
 * gradient all-reduce turned into an all-gather of compressed buffers
 * between a compress kernel and dp - 1 decompressions, and the pipeline
 * send of compressed activations, each against its closed form from the
 * table's ratio, the kernels' GB/s and the network model's collective
 * times; the keys' refusals and bad input (file, line, key, exit 2).
 * 1 ns: the engine's clock. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "exec/exec.h"
#include "hw/cluster.h"
#include "hw/compress.h"
#include "hw/net.h"
#include "mmsim_exe.h"
#include "parallel/build.h"

static mm_cluster load(const char *path, int nodes)
{
    mm_cluster c;
    mm_err err;
    ck_assert_msg(mm_cluster_load(path, nodes, &c, &err) == 0, "%s:%d: %s: %s", err.file, err.line, err.key,
                  err.msg);
    return c;
}

/* Runs spec on c; the iteration's seconds, and the first op of category
 * cat on rank 0 whose collective is of kind `kind` (-1: none wanted) into
 * *op_s (its seconds), its bytes into *bytes. */
static double run(const mm_build_spec *spec, const mm_cluster *c, int kind, double *op_s, double *bytes,
                  double *kernels_s)
{
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(spec, &g, NULL), 0);
    mm_engine *eng = mm_engine_alloc();
    mm_time *st = malloc(g.n_ops * sizeof *st), *en = malloc(g.n_ops * sizeof *en), t1;
    mm_err err;
    ck_assert_int_eq(mm_exec_run(eng, &g, c, MM_EXEC_NET_ANALYTIC, st, en, &t1, &err), 0);
    *op_s = 0, *bytes = 0, *kernels_s = 0;
    for (uint32_t i = 0; i < g.n_ops; i++) {
        const mm_op *op = &g.ops[i];
        if (op->rank != 0)
            continue;
        if (op->coll >= 0 && (int)g.colls[op->coll].kind == kind && *op_s == 0) {
            *op_s = (double)(en[i] - st[i]) * 1e-9;
            *bytes = g.colls[op->coll].bytes;
        }
    }
    for (uint32_t i = 0; i < g.n_ops; i++) /* every rank's kernels outside the passes */
        if (g.ops[i].cat == MM_CAT_OPT && g.ops[i].rank == 0)
            *kernels_s += (double)(en[i] - st[i]) * 1e-9;
    free(st);
    free(en);
    mm_engine_free(eng);
    mm_graph_free(&g);
    return (double)t1 * 1e-9;
}

/* DP 4 on one DGX A100, one stage, ZeRO 0, G = 1 GB of gradients reduced
 * after the backward.  zfp-r8 (ratio 4, fp32 at 8 bits a value): the
 * all-reduce of G becomes an all-gather whose nccl-tests S is 4 x G/4,
 * after a compress kernel of G / 100 GB/s and before 3 decompressions of
 * G / 200 GB/s each, so the iteration changes by exactly
 * G/100e9 + 3 G/200e9 + t_AG(4 G/4) - t_AR(G), the two collective times
 * the analytic network model's for those GPUs. */
START_TEST(dp_allgather_closed_form)
{
    mm_cluster c = load("topologies/dgx-a100.yaml", 1);
    const double G = 1e9;
    mm_stage_cost st = {.chunks = 1, .fwd_s = 1e-3, .bwd_s = 2e-3, .grad_bytes = G, .opt_s = 1e-3};
    mm_build_spec spec = {.schedule = MM_SCHEDULE_1F1B, .lay.tp = 1, .lay.pp = 1, .lay.dp = 4, .lay.vpp = 1,
                          .m = 2, .stages = &st};
    double ar_s, ar_b, k0, ag_s, ag_b, k1;
    double t0 = run(&spec, &c, MM_COLL_ALLREDUCE, &ar_s, &ar_b, &k0);
    const mm_compressor *z = mm_compressor_get(2);
    ck_assert_str_eq(z->name, "zfp-r8");
    ck_assert(z->ratio == 4.0 && z->lossy);
    spec.dp_ratio = z->ratio, spec.dp_compress_gb_s = 100, spec.dp_decompress_gb_s = 200;
    double t1 = run(&spec, &c, MM_COLL_ALLGATHER, &ag_s, &ag_b, &k1);
    int gpus[4] = {0, 1, 2, 3};
    ck_assert(ar_b == G);
    ck_assert_msg(fabs(ag_b - 4 * G / 4) < 1e-3, "all-gather S %g", ag_b);
    double want_ar = mm_net_analytic_time(&c, MM_COLL_ALLREDUCE, gpus, 4, G);
    double want_ag = mm_net_analytic_time(&c, MM_COLL_ALLGATHER, gpus, 4, G);
    ck_assert_msg(fabs(ar_s - want_ar) < 2e-9 && fabs(ag_s - want_ag) < 2e-9, "AR %g vs %g, AG %g vs %g", ar_s,
                  want_ar, ag_s, want_ag);
    double kern = G / 100e9 + 3 * G / 200e9; /* 10 ms + 15 ms */
    ck_assert_msg(fabs((k1 - k0) - kern) < 2e-9, "kernels %g s", k1 - k0);
    double want = t0 + kern + want_ag - want_ar;
    ck_assert_msg(fabs(t1 - want) < 5e-9, "iteration %.9f s, closed form %.9f s", t1, want);
    /* a ratio overriding the table's: 8 halves the all-gather's S */
    spec.dp_ratio = 8;
    run(&spec, &c, MM_COLL_ALLGATHER, &ag_s, &ag_b, &k1);
    ck_assert(fabs(ag_b - 4 * G / 8) < 1e-3);
    mm_cluster_free(&c);
}
END_TEST

/* Two stages on one node, one micro-batch: each pipeline send carries
 * A / R between a compress kernel on the sender (A / 50 GB/s) and a
 * decompress one on the receiver (A / 80 GB/s); the forward's and the
 * backward's hop each change by those kernels plus the pair's time at
 * A / R less its time at A, so the iteration by twice that. */
START_TEST(pp_send_closed_form)
{
    mm_cluster c = load("topologies/dgx-a100.yaml", 1);
    const double A = 64e6;
    mm_stage_cost st[2];
    for (int s = 0; s < 2; s++)
        st[s] = (mm_stage_cost){.chunks = 1, .fwd_s = 1e-3, .bwd_s = 2e-3};
    mm_build_spec spec = {.schedule = MM_SCHEDULE_1F1B, .lay.tp = 1, .lay.pp = 2, .lay.dp = 1, .lay.vpp = 1, .m = 1,
                          .p2p_bytes = A, .stages = st};
    double s0, b0, k, s1, b1;
    double t0 = run(&spec, &c, MM_COLL_SENDRECV, &s0, &b0, &k);
    spec.pp_ratio = 2, spec.pp_compress_gb_s = 50, spec.pp_decompress_gb_s = 80;
    double t1 = run(&spec, &c, MM_COLL_SENDRECV, &s1, &b1, &k);
    ck_assert(b0 == A && b1 == A / 2);
    double p0 = mm_net_p2p_pair_time(&c, 0, 1, A, 0, 0), p1 = mm_net_p2p_pair_time(&c, 0, 1, A / 2, 0, 0);
    ck_assert_msg(fabs(s0 - p0) < 2e-9 && fabs(s1 - p1) < 2e-9, "%g vs %g, %g vs %g", s0, p0, s1, p1);
    double want = t0 + 2 * (A / 50e9 + A / 80e9 + p1 - p0);
    ck_assert_msg(fabs(t1 - want) < 1e-8, "iteration %.9f s, closed form %.9f s", t1, want);
    mm_cluster_free(&c);
}
END_TEST

/* TP 4 on one DGX A100, one stage, one micro-batch, two all-reduces of
 * T = 32 MB a pass (Megatron's forward and backward): compressed at R = 4
 * each pass's pair becomes a compress kernel over 2 T (at 100 GB/s), an
 * all-gather of the 4 ranks' T / R (nccl-tests' S = 4 T / 4, two of them)
 * and the decompression of 3 x 2 T (at 200 GB/s), on the compute stream;
 * the iteration changes by exactly twice (kernels + t_AG - t_AR), the op
 * times the analytic network model's for 2 collectives of those sizes.
 * Sequence parallelism keeps its uncompressed all-gather and
 * reduce-scatter (the scenario refuses the pair). */
START_TEST(tp_allgather_closed_form)
{
    mm_cluster c = load("topologies/dgx-a100.yaml", 1);
    const double T = 32e6;
    mm_stage_cost st = {.chunks = 1, .fwd_s = 1e-3, .bwd_s = 2e-3, .opt_s = 1e-3};
    mm_build_spec spec = {.schedule = MM_SCHEDULE_1F1B, .lay.tp = 4, .lay.pp = 1, .lay.dp = 1, .lay.vpp = 1,
                          .m = 1, .tp_bytes = T, .tp_msgs_fwd = 2, .tp_msgs_bwd = 2, .stages = &st};
    double ar_s, ar_b, k, ag_s, ag_b;
    double t0 = run(&spec, &c, MM_COLL_ALLREDUCE, &ar_s, &ar_b, &k);
    spec.tp_ratio = 4, spec.tp_compress_gb_s = 100, spec.tp_decompress_gb_s = 200;
    double t1 = run(&spec, &c, MM_COLL_ALLGATHER, &ag_s, &ag_b, &k);
    int gpus[4] = {0, 1, 2, 3};
    ck_assert(ar_b == T);
    ck_assert_msg(fabs(ag_b - 4 * T / 4) < 1e-3, "all-gather S %g", ag_b);
    double want_ar = 2 * mm_net_analytic_time(&c, MM_COLL_ALLREDUCE, gpus, 4, T);
    double want_ag = 2 * mm_net_analytic_time(&c, MM_COLL_ALLGATHER, gpus, 4, T);
    ck_assert_msg(fabs(ar_s - want_ar) < 2e-9 && fabs(ag_s - want_ag) < 2e-9, "AR %g vs %g, AG %g vs %g", ar_s,
                  want_ar, ag_s, want_ag);
    double kern = 2 * T / 100e9 + 3 * 2 * T / 200e9;
    double want = t0 + 2 * (kern + want_ag - want_ar);
    ck_assert_msg(fabs(t1 - want) < 1e-8, "iteration %.9f s, closed form %.9f s", t1, want);
    spec.sp = true;
    run(&spec, &c, MM_COLL_ALLGATHER, &ag_s, &ag_b, &k);
    ck_assert(ag_b == T);
    mm_cluster_free(&c);
}
END_TEST

/* The table: names in order, none first, unknown rows NULL; what a
 * choice resolves to (keys over the table, the table's throughputs only on
 * its GPU); the kernel time bytes / (GB/s 1e9), 0 for no throughput. */
START_TEST(table)
{
    ck_assert_str_eq(mm_compressor_names[0], "none");
    ck_assert_ptr_null(mm_compressor_get(0));
    int n = 0;
    for (int i = 1; mm_compressor_names[i]; i++, n++) {
        const mm_compressor *z = mm_compressor_get(i);
        ck_assert_ptr_nonnull(z);
        ck_assert_str_eq(z->name, mm_compressor_names[i]);
        ck_assert(z->ratio == 0 || z->ratio > 1);
        ck_assert(z->source && *z->source);
        ck_assert(!z->compress_gb_s == !z->gpu); /* a throughput names its GPU */
    }
    ck_assert_ptr_null(mm_compressor_get(n + 1));
    ck_assert(mm_compressor_get(1)->ratio == 8 && mm_compressor_get(3)->ratio == 2);
    mm_compress_use u;
    ck_assert_int_eq(mm_compress_resolve(2, 0, 0, 0, "A100 SXM4 80GB", &u), 2); /* zfp: no throughput */
    ck_assert_int_eq(mm_compress_resolve(2, 0, 100, 0, "A100 SXM4 80GB", &u), 3);
    ck_assert_int_eq(mm_compress_resolve(2, 6, 100, 120, "A100 SXM4 80GB", &u), 0);
    ck_assert(u.ratio == 6 && u.compress_gb_s == 100 && u.decompress_gb_s == 120);
    ck_assert_int_eq(mm_compress_resolve(4, 0, 0, 0, "A100 SXM4 80GB", &u), 1); /* cuszp2: the ratio */
    ck_assert_int_eq(mm_compress_resolve(4, 5, 0, 0, "A100 SXM4 80GB", &u), 0);
    ck_assert(u.compress_gb_s == 332.42 && u.decompress_gb_s == 513.04); /* cuSZp2 SC'24 abstract */
    ck_assert_int_eq(mm_compress_resolve(4, 5, 0, 0, "H100 SXM5 80GB", &u), 2); /* not measured there */
    ck_assert(fabs(mm_compress_kernel_s(2e9, 400) - 0.005) < 1e-15);
    ck_assert(mm_compress_kernel_s(2e9, 0) == 0);
}
END_TEST

/* Scenario files: an unknown compressor, missing throughputs, a ratio
 * below 1, DP compression under ZeRO 1 and with overlapped reductions are
 * refused with file, line and key (exit 2); without the section the run
 * prints what it printed before, and with it the run is slower or faster
 * but runs. */
static int scen(const char *dir, const char *extra, char *out, size_t n, char *err, size_t m)
{
    char path[512], args[1024];
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "model: models/llama-2-7b.json\ncluster: {topology: topologies/dgx-a100.yaml, nodes: 1}\n"
               "train:\n  global_batch: 8\n  zero: 0\n  overlap_grad_reduce: false\nworkload: text\n"
               "parallel:\n  llm: {tp: 2, pp: 2, dp: 2}\n  vision: null\n%s",
            extra);
    fclose(f);
    snprintf(args, sizeof args, "run --no-db %s", path);
    return mmx_run(dir, NULL, args, out, n, err, m);
}

START_TEST(bad_input)
{
    char dir[256], out[16384], err[4096];
    mmx_tmpdir(dir, sizeof dir, "compress");
    static const struct {
        const char *text, *key, *what;
    } bad[] = {
        {"comm:\n  compress: {dp: lz4, compress_gb_s: 1, decompress_gb_s: 1}\n", "comm.compress.dp", "lz4"},
        {"comm:\n  compress: {pp: zfp-r8}\n", "comm.compress.compress_gb_s", "zfp-r8"},
        {"comm:\n  compress: {pp: zfp-r8, compress_gb_s: 10}\n", "comm.compress.decompress_gb_s", "zfp-r8"},
        {"comm:\n  compress: {dp: cuszp2}\n", "comm.compress.dp_ratio", "cuszp2"},
        {"comm:\n  compress: {pp: zfp-r8, pp_ratio: 0.5, compress_gb_s: 10, decompress_gb_s: 10}\n",
         "comm.compress.pp_ratio", "0.5"},
        {"comm:\n  compress: {pp: zfp-r8, pp_ratio: -1, compress_gb_s: 10, decompress_gb_s: 10}\n",
         "comm.compress.pp_ratio", ""},
        {"comm:\n  compress: {pp: zfp-r8, compress_gb_s: 10, decompress_gb_s: 10, level: 3}\n",
         "comm.compress.level", ""},
        {"comm:\n  compress: {dp: zfp-r4, compress_gb_s: 10, decompress_gb_s: 10}\n  zero: 1\n", "comm.zero", ""},
        {"comm:\n  compress: {dp: zfp-r4, compress_gb_s: ten, decompress_gb_s: 10}\n",
         "comm.compress.compress_gb_s", ""},
        {"comm:\n  compress: {tp: zfp-r8, tp_ratio: 0.5, compress_gb_s: 10, decompress_gb_s: 10}\n",
         "comm.compress.tp_ratio", "0.5"},
        {"comm:\n  compress: {tp: cuszp2}\n", "comm.compress.tp_ratio", "cuszp2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(scen(dir, bad[i].text, out, sizeof out, err, sizeof err), 2);
        ck_assert_msg(strstr(err, bad[i].key) && strstr(err, bad[i].what) && strstr(err, "s.yaml:"), "%zu: %s", i,
                      err);
    }
    /* ZeRO 1's reduce-scatter, and the reduction overlapped with the backward */
    char path[512], args[1024];
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    const char *c = "comm:\n  compress: {dp: zfp-r4, compress_gb_s: 10, decompress_gb_s: 10}\n";
    ck_assert_int_eq(scen(dir, c, out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "run --no-db %s --set train.zero=1", path);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "comm.compress.dp") && strstr(err, "ZeRO 1"), "%s", err);
    /* cuSZp2's table throughputs are the A100's: used there, refused on an H100 */
    ck_assert_int_eq(scen(dir, "comm:\n  compress: {dp: cuszp2, dp_ratio: 8}\n", out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "run --no-db %s --set cluster.topology=topologies/dgx-h100.yaml", path);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "comm.compress.compress_gb_s") && strstr(err, "H100"), "%s", err);
    ck_assert_int_eq(scen(dir, c, out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "run --no-db %s --set 'comm.compress.pp=zfp-r8' --set train.pass_times=p.csv", path);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "comm.compress.pp") && strstr(err, "pass_times"), "%s", err);
    /* compressed TP: the all-reduce only (not sequence-parallel, not overlapped) */
    const char *t = "comm:\n  compress: {tp: zfp-r4, compress_gb_s: 10, decompress_gb_s: 10}\n";
    ck_assert_int_eq(scen(dir, t, out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "run --no-db %s --set train.sequence_parallel=true", path);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "comm.compress.tp") && strstr(err, "sequence parallelism"), "%s", err);
    snprintf(args, sizeof args, "run --no-db %s --set train.tp_comm_overlap=true", path);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "comm.compress.tp") && strstr(err, "tp_comm_overlap"), "%s", err);
    ck_assert_int_eq(scen(dir, c, out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "run --no-db %s --set train.overlap_grad_reduce=true", path);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "comm.compress.dp") && strstr(err, "overlapped"), "%s", err);
    mmx_rmdir(dir);
}
END_TEST

/* The section at none (or null) runs the scenario as without it, bit for
 * bit in what it prints; a compressor with slow kernels slows the run. */
START_TEST(absent_is_unchanged)
{
    char dir[256], out0[16384], out1[16384], out2[16384], err[4096];
    mmx_tmpdir(dir, sizeof dir, "compress");
    ck_assert_int_eq(scen(dir, "", out0, sizeof out0, err, sizeof err), 0);
    ck_assert_int_eq(scen(dir, "comm:\n  compress: {dp: none, pp: none}\n", out1, sizeof out1, err, sizeof err), 0);
    const char *a = strstr(out0, "iteration time"), *b = strstr(out1, "iteration time");
    ck_assert(a && b);
    ck_assert_msg(strncmp(a, b, 60) == 0, "%.60s vs %.60s", a, b);
    ck_assert_int_eq(scen(dir, "comm:\n  compress: {dp: zfp-r4, pp: zfp-r16, compress_gb_s: 5, decompress_gb_s: 5}\n",
                          out2, sizeof out2, err, sizeof err), 0);
    double t0 = atof(strstr(out0, "iteration time") + 14), t2 = atof(strstr(out2, "iteration time") + 14);
    ck_assert_msg(t2 > t0, "%g vs %g", t2, t0);
    mmx_rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("compress");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, dp_allgather_closed_form);
    tcase_add_test(tc, pp_send_closed_form);
    tcase_add_test(tc, tp_allgather_closed_form);
    tcase_add_test(tc, table);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, absent_is_unchanged);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
