/* test_p2p.c - pipeline send/recv as NCCL runs it (hw/net.c, the
 * p2p section of docs/topology.md).  The channel count follows NCCL
 * 2.18-2.19's scheduling rule for the communicator's size; the per-channel
 * rate and the link ceiling come from the measured nccl-tests curve, whose
 * rows the model must give back; the cross-node path runs at NCCL's
 * network channels up to the NIC's measured rate; both network models
 * agree on a lone transfer; bad topology keys are refused with file, line
 * and key.  Zero Bubble's Table 9 p2p column is checked in test_validate.c
 * (it needs the whole cost bridge).  Tolerances are stated at each
 * assertion. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "hw/cluster.h"
#include "hw/coll.h"
#include "hw/net.h"
#include "mmsim_exe.h"
#include "parallel/build.h"
#include "exec/exec.h"

static mm_cluster load(const char *path, int nodes)
{
    mm_cluster c;
    mm_err err;
    ck_assert_msg(mm_cluster_load(path, nodes, &c, &err) == 0, "%s:%d: %s: %s", err.file, err.line, err.key,
                  err.msg);
    return c;
}

static const double MiB = 1048576.0;

/* NCCL's rule worked by hand for DGX A100 (32 p2p channels, 32 per NVLink
 * peer, 2 per network peer): in one node's communicator of 8 ranks a send
 * starts on 4 channels (4 x 8 = 32) and doubles while a channel's part is
 * over 32 x 512 KiB = 16 MiB, at most 16 (16 x 8 = 4 x 32); a communicator
 * over nodes gives every peer the network's 2; a lone pair gets 16 at once;
 * parts are at least 64 KiB. */
START_TEST(nccl_channel_rule)
{
    mm_cluster c = load("topologies/dgx-a100.yaml", 4);
    ck_assert_int_eq(mm_net_p2p_channels(&c, 8, 1, 1024.0 * 6 * 2304 * 2), 4); /* ZB 1.5B hop */
    ck_assert_int_eq(mm_net_p2p_channels(&c, 8, 1, 128 * MiB), 8);             /* 16 MiB parts */
    ck_assert_int_eq(mm_net_p2p_channels(&c, 8, 1, 256 * MiB), 16);
    ck_assert_int_eq(mm_net_p2p_channels(&c, 8, 1, 1024 * MiB), 16);           /* nmax */
    ck_assert_int_eq(mm_net_p2p_channels(&c, 16, 2, 1024.0 * 5120 * 2), 2);    /* ZB 14.6B */
    ck_assert_int_eq(mm_net_p2p_channels(&c, 32, 4, 1024.0 * 6144 * 2), 2);    /* ZB 28.3B */
    ck_assert_int_eq(mm_net_p2p_channels(&c, 2, 1, 1024.0 * 6 * 2304 * 2), 16);
    ck_assert_int_eq(mm_net_p2p_channels(&c, 8, 1, 100e3), 2);
    ck_assert_int_eq(mm_net_p2p_channels(&c, 8, 1, 8), 1);
    /* a cluster without a curve: one channel, never used for time */
    mm_cluster p = load("topologies/pcie-8gpu.yaml", 1);
    ck_assert_int_eq(mm_net_p2p_channels(&p, 8, 1, 128 * MiB), 1);
    mm_cluster_free(&c);
    mm_cluster_free(&p);
}
END_TEST

/* Channels per network peer by NCCL version (NVIDIA/nccl
 * src/graph/paths.cc at the tags net.c names), worked by hand with
 * p2pnChannels 32:
 *   2.8-2.11: 1.  2.12-2.19: NCCL_NCHANNELS_PER_NET_PEER = 2.
 *   2.20-2.28: 2 halved while 2 x ranks > 4 x 32 (ranks > 64: 1), at least
 *     the NICs needed to match the GPU's PCIe bandwidth (two 200 Gb/s NICs
 *     = 50 GB/s for a 48 GB/s GPU: 2, whatever the ranks).
 *   2.29: max(NICs, ceil(NIC GB/s / 14)) rounded up to a power of two:
 *     400 Gb/s (50 GB/s) 4, 200 Gb/s (25) 2, two 400 Gb/s NICs for a 60
 *     GB/s GPU (100 GB/s) 8; across nodes halved while x ceil(ranks / 8)
 *     > 32: 4 at 64 ranks (4 x 8 = 32), 2 at 128 (2 x 16), 1 at 512.
 * The shipped files: DGX A100 (2.18) 2 on any communicator; DGX H100,
 * HGX H200 (2.20) 2 up to 64 ranks, 1 at 128; an explicit
 * fabric.p2p_channels_per_peer overrides the rule. */
START_TEST(nccl_net_channels_by_version)
{
    static const struct {
        int version, nics;
        double nic, gpu;
        int ranks, nodes, want;
    } cases[] = {
        {208, 1, 50, 63, 16, 2, 1},   {211, 1, 50, 63, 16, 2, 1},   {212, 1, 50, 63, 16, 2, 2},
        {218, 1, 25, 31, 16, 2, 2},   {219, 1, 50, 63, 512, 64, 2}, {220, 1, 50, 63, 16, 2, 2},
        {220, 1, 50, 63, 64, 8, 2},   {220, 1, 50, 63, 65, 9, 1},   {228, 1, 50, 63, 128, 16, 1},
        {224, 2, 25, 48, 16, 2, 2},   {224, 2, 25, 48, 256, 32, 2}, {224, 2, 25, 20, 256, 32, 1},
        {229, 1, 50, 63, 16, 2, 4},   {229, 1, 25, 31, 16, 2, 2},   {229, 2, 50, 60, 16, 2, 8},
        {229, 1, 50, 63, 64, 8, 4},   {229, 1, 50, 63, 65, 9, 2},   {229, 1, 50, 63, 128, 16, 2},
        {229, 1, 50, 63, 512, 64, 1}, {229, 1, 50, 63, 512, 1, 4},  {207, 1, 50, 63, 16, 2, 0},
        {230, 1, 50, 63, 16, 2, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = mm_nccl_net_channels_per_peer(cases[i].version, cases[i].nics, cases[i].nic, cases[i].gpu,
                                              cases[i].ranks, cases[i].nodes, 32);
        ck_assert_msg(n == cases[i].want, "case %zu (NCCL %d): %d channels, want %d", i, cases[i].version, n,
                      cases[i].want);
    }
    /* through the shipped files: the NVLink hops of a communicator over
     * nodes get the network peer's count too (mm_net_p2p_channels) */
    double S = 256 * MiB;
    const char *files[] = {"topologies/dgx-a100.yaml", "topologies/dgx-h100.yaml", "topologies/hgx-h200.yaml"};
    const int want64[] = {2, 2, 2}, want128[] = {2, 1, 1}, version[] = {218, 220, 220};
    for (int f = 0; f < 3; f++) {
        mm_cluster c = load(files[f], 16);
        ck_assert_int_eq(c.nccl_version, version[f]);
        ck_assert_int_eq(c.p2p_net_per_peer, 0); /* no override in the shipped files */
        ck_assert_int_eq(mm_net_p2p_channels(&c, 64, 8, S), want64[f]);
        ck_assert_int_eq(mm_net_p2p_channels(&c, 128, 16, S), want128[f]);
        c.nccl_version = 229; /* what a current NCCL gives the same cluster */
        ck_assert_int_eq(mm_net_p2p_channels(&c, 16, 2, S), f ? 4 : 2);
        c.p2p_net_per_peer = 8; /* fabric.p2p_channels_per_peer: the override */
        ck_assert_int_eq(mm_net_p2p_channels(&c, 16, 2, S), 8);
        mm_cluster_free(&c);
    }
}
END_TEST

static double pair_time(const mm_cluster *c, int a, int b, double S, int ranks, int nodes)
{
    return mm_net_p2p_pair_time(c, a, b, S, ranks, nodes);
}

/* The curve was taken with nccl-tests -g 8 (a communicator of one node's 8
 * GPUs): at its own message sizes the model must return its times.  The
 * per-channel rate is its 128 MiB row over 8 channels, 110.8 / 8 GB/s; the
 * larger rows run on 16 channels into the 195 GB/s link ceiling, so the
 * 256 MiB row (188.6 GB/s) is 3.4 % slower than the ceiling: 4 %. */
START_TEST(curve_rows_reproduced)
{
    mm_cluster c = load("topologies/dgx-a100.yaml", 1);
    ck_assert(c.has_p2p_intra && c.p2p_intra.n == 4);
    for (int i = 0; i < c.p2p_intra.n; i++) {
        double S = c.p2p_intra.bytes[i], measured = S / (c.p2p_intra.eff[i] * c.nvlink_bw);
        double t = pair_time(&c, 0, 1, S, c.gpus_per_node, 1);
        ck_assert_msg(fabs(t / measured - 1) < 0.04, "%g B: %g vs %g s", S, t, measured);
    }
    mm_cluster_free(&c);
}
END_TEST

/* A pipeline hop is channel-bound: 4 channels for ZB's 28.3 MB on 8 stages
 * (one node), 2 for its 10.5 MB on 16 stages over 2 nodes, even between
 * GPUs of one node; the fixed time is node.p2p_latency_us.  Exact to the
 * rounding of a double. */
START_TEST(hop_on_few_channels)
{
    mm_cluster c = load("topologies/dgx-a100.yaml", 2);
    double beta = 0.3694 * 300e9 / 8, lat = 9.85e-6;
    double S8 = 1024.0 * 6 * 2304 * 2, S16 = 1024.0 * 5120 * 2;
    double t8 = pair_time(&c, 2, 3, S8, 8, 1), t16 = pair_time(&c, 2, 3, S16, 16, 2);
    ck_assert_msg(fabs(t8 - (lat + S8 / (4 * beta))) < 1e-12, "%g s", t8);
    ck_assert_msg(fabs(t16 - (lat + S16 / (2 * beta))) < 1e-12, "%g s", t16);
    /* the pair alone (mmsim collective's default) runs on 16 channels into
     * the link ceiling, 195 GB/s */
    double alone = pair_time(&c, 2, 3, S8, 0, 0);
    ck_assert_msg(fabs(alone - (lat + S8 / (0.6503 * 300e9))) < 1e-12, "%g s", alone);
    /* without a curve the wire model stays (alpha + S / all-reduce rate) */
    mm_cluster p = load("topologies/pcie-8gpu.yaml", 1);
    mm_group_shape s;
    int g[2] = {0, 1};
    mm_group_shape_of(&p, g, 2, &s);
    ck_assert(mm_net_p2p_extra(&p, &s, S8) == 0);
    ck_assert(isnan(mm_net_p2p_time(&p, &s, S8)));
    mm_cluster_free(&c);
    mm_cluster_free(&p);
}
END_TEST

/* The derived H100 curves (topologies/kernels/h100-nvlink-sendrecv.csv,
 * ib400-sendrecv.csv): a channel at 0.3971 x 450 / 8 = 22.3 GB/s (the A100
 * rate x 38.7/24.0), the link at 0.6503 x 450 GB/s; across nodes NCCL
 * 2.20's 2 network channels (the files' nccl_version) x 14 GB/s, below the
 * wire model's all-reduce rate (375 / 400 x 50 GB/s), so the channels
 * bound it.  Exact to rounding. */
START_TEST(h100_derived)
{
    const char *files[] = {"topologies/dgx-h100.yaml", "topologies/hgx-h200.yaml",
                           "topologies/dgx-h100-fattree-2to1.yaml"};
    for (int f = 0; f < 3; f++) {
        mm_cluster h = load(files[f], 2);
        double S = 1024.0 * 6 * 2304 * 2, beta = 0.3971 * 450e9 / 8;
        ck_assert_int_eq(mm_net_p2p_channels(&h, 8, 1, S), 4);
        ck_assert_int_eq(mm_net_p2p_channels(&h, 16, 2, S), 2); /* the network's 2 */
        double t = pair_time(&h, 0, 1, S, 8, 1);
        ck_assert_msg(fabs(t - (9.85e-6 + S / (4 * beta))) < 1e-12, "%s: %g s", files[f], t);
        double big = 1024 * MiB;
        ck_assert(fabs(pair_time(&h, 0, 1, big, 8, 1) - (9.85e-6 + big / (0.6503 * 450e9))) < 1e-12);
        double x = pair_time(&h, 0, 8, S, 16, 2);
        ck_assert_msg(fabs(x - (9.85e-6 + 3e-6 + S / (2 * 14e9))) < 1e-12, "%s: %g s", files[f], x);
        mm_cluster_free(&h);
    }
}
END_TEST

/* Across nodes: 2 network channels x 14 GB/s exceed the 200 Gb/s NIC's
 * measured 24.24 GB/s, so the NIC bounds it; the fixed time adds the
 * fabric's per-hop latency (3 us) under one leaf. */
START_TEST(cross_node_hop)
{
    mm_cluster c = load("topologies/dgx-a100.yaml", 2);
    double S = 1024.0 * 5120 * 2, nic = 0.9695 * 25e9;
    double t = pair_time(&c, 7, 15, S, 16, 2); /* one rail: the same leaf */
    ck_assert_msg(fabs(t - (9.85e-6 + 3e-6 + S / nic)) < 1e-12, "%g s", t);
    /* slower than the NVLink hop of the same communicator */
    ck_assert(t > pair_time(&c, 6, 7, S, 16, 2));
    mm_cluster_free(&c);
}
END_TEST

static void note_done(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    *(mm_time *)ctx = mm_engine_now(eng);
}

/* A lone transfer takes the same time in both network models (the flow
 * model adds the p2p model's excess over the wire as latency); the
 * communicator travels with the request.  1 ns: the engine's clock. */
START_TEST(models_agree)
{
    mm_cluster c = load("topologies/dgx-a100.yaml", 2);
    double S = 1024.0 * 3 * 4096 * 2;
    int pairs[2][2] = {{1, 2}, {7, 8}};
    for (int k = 0; k < 2; k++) {
        double t[2];
        for (int m = 0; m < 2; m++) {
            mm_engine *eng = mm_engine_alloc();
            mm_err err;
            mm_network *net = mm_network_alloc(&c, eng, m ? MM_NET_MODEL_ANALYTIC : MM_NET_MODEL_FLOW, &err);
            ck_assert_ptr_nonnull(net);
            mm_coll_req r = {.kind = MM_COLL_SENDRECV, .algo = MM_ALGO_AUTO, .gpus = pairs[k], .n = 2,
                             .bytes = S, .count = 1, .comm_ranks = 16, .comm_nodes = 2};
            mm_time end = -1;
            ck_assert_int_eq(mm_network_start(net, &r, note_done, &end, 0, NULL, &err), 0);
            mm_engine_run(eng);
            t[m] = (double)end * 1e-9;
            mm_network_free(net);
            mm_engine_free(eng);
        }
        double want = pair_time(&c, pairs[k][0], pairs[k][1], S, 16, 2);
        ck_assert_msg(fabs(t[0] - want) < 2e-9 && fabs(t[1] - want) < 2e-9, "%g %g vs %g s", t[0], t[1], want);
    }
    mm_cluster_free(&c);
}
END_TEST

static void bad(const char *file, const char *key)
{
    mm_cluster c;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_cluster_load(file, 0, &c, &err), -MM_EINPUT);
    ck_assert_str_eq(err.file, file);
    ck_assert_str_eq(err.key, key);
    ck_assert_int_gt(err.line, 0);
}

START_TEST(bad_topologies)
{
    bad("tests/data/p2p/missing-channels.yaml", "node.p2p_channels");
    bad("tests/data/p2p/not-pow2.yaml", "node.p2p_channels_per_peer");
    bad("tests/data/p2p/rate-without-curve.yaml", "fabric.p2p_channels_per_peer");
    bad("tests/data/p2p/nccl-version-newer.yaml", "nccl_version");
    bad("tests/data/p2p/nccl-version-text.yaml", "nccl_version");
    bad("tests/data/p2p/no-version-no-count.yaml", "fabric.p2p_channels_per_peer");
}
END_TEST

/* `mmsim collective --op sendrecv --comm-ranks 8` times ZB's 6.2B hop (one
 * activation, 25.2 MB, on an 8-rank communicator: 4 channels) as the
 * library does; --comm-ranks with another collective is refused (exit 2). */
START_TEST(cli_comm_ranks)
{
    char dir[256], out[8192], err[2048];
    mmx_tmpdir(dir, sizeof dir, "p2p");
    ck_assert_int_eq(mmx_run(dir, NULL, "collective --cluster topologies/dgx-a100.yaml --op sendrecv --min 25165824 "
                                        "--max 25165824 --comm-ranks 8 --network analytic --json",
                             out, sizeof out, err, sizeof err), 0);
    const char *t = strstr(out, "\"out_of_place\":{\"time\":");
    ck_assert_ptr_nonnull(t);
    double us = atof(t + 23);
    mm_cluster c = load("topologies/dgx-a100.yaml", 1);
    double want = pair_time(&c, 0, 1, 25165824, 8, 1) * 1e6;
    ck_assert_msg(fabs(us - want) < 0.01, "%g vs %g us", us, want);
    ck_assert_int_eq(mmx_run(dir, NULL, "collective --cluster topologies/dgx-a100.yaml --op allreduce --comm-ranks 8",
                             out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--comm-ranks"));
    ck_assert_int_eq(mmx_run(dir, NULL, "collective --cluster topologies/dgx-a100.yaml --op sendrecv --comm-ranks 9",
                             out, sizeof out, err, sizeof err), 2);
    mmx_rmdir(dir);
    mm_cluster_free(&c);
}
END_TEST

/* The builder gives every pipeline transfer of a batched schedule its PP
 * group (16 ranks on 2 nodes here), and the executed graph charges each the p2p model's time
 * for its pair on that communicator: 2 channels inside a node, the NIC
 * across (stage 7 to 8).  1 ns: the engine's clock. */
START_TEST(run_charges_pp_communicator)
{
    enum { P = 16 };
    mm_stage_cost st[P];
    for (int s = 0; s < P; s++)
        st[s] = (mm_stage_cost){.chunks = 1, .fwd_s = 1e-3, .bwd_s = 2e-3};
    mm_build_spec spec = {.schedule = MM_SCHEDULE_1F1B, .lay.tp = 1, .lay.pp = P, .lay.dp = 1, .lay.vpp = 1, .m = 4,
                          .p2p_bytes = 1024.0 * 5120 * 2, .stages = st, .gpus_per_node = 8};
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(&spec, &g, NULL), 0);
    mm_cluster c = load("topologies/dgx-a100.yaml", 2);
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end), t1;
    mm_err err;
    ck_assert_int_eq(mm_exec_run(eng, &g, &c, MM_EXEC_NET_ANALYTIC, start, end, &t1, &err), 0);
    int hops = 0, cross = 0;
    for (uint32_t i = 0; i < g.n_ops; i++) {
        const mm_op *op = &g.ops[i];
        if (op->cat != MM_CAT_PP)
            continue;
        const mm_coll *cl = &g.colls[op->coll];
        ck_assert_int_eq(cl->comm_ranks, P);
        ck_assert_int_eq(cl->comm_nodes, 2);
        const int *pair = g.gpus + cl->gpu_off;
        double want = pair_time(&c, pair[0], pair[1], spec.p2p_bytes, P, 2);
        double got = (double)(end[i] - start[i]) * 1e-9;
        ck_assert_msg(fabs(got - want) < 1e-9, "%d -> %d: %g vs %g s", pair[0], pair[1], got, want);
        hops++;
        cross += pair[0] / 8 != pair[1] / 8;
    }
    ck_assert_int_eq(hops, 2 * 4 * (P - 1)); /* forward and backward, every micro-batch and boundary */
    ck_assert_int_eq(cross, 2 * 4);
    free(start);
    free(end);
    mm_engine_free(eng);
    mm_graph_free(&g);
    /* the interleaved schedule overlaps its sends: one isend/irecv each, on
     * the pair's own communicator (comm 0) */
    mm_stage_cost st2[2 * P];
    for (int s = 0; s < 2 * P; s++)
        st2[s] = (mm_stage_cost){.chunks = 1, .fwd_s = 1e-3, .bwd_s = 2e-3};
    spec.schedule = MM_SCHEDULE_INTERLEAVED, spec.lay.vpp = 2, spec.m = P, spec.stages = st2;
    ck_assert_int_eq(mm_build_iteration(&spec, &g, NULL), 0);
    hops = 0;
    for (uint32_t i = 0; i < g.n_ops; i++)
        if (g.ops[i].cat == MM_CAT_PP) {
            ck_assert_int_eq(g.colls[g.ops[i].coll].comm_ranks, 0);
            hops++;
        }
    ck_assert_int_gt(hops, 0);
    mm_graph_free(&g);
    mm_cluster_free(&c);
}
END_TEST

static Suite *p2p_suite(void)
{
    Suite *s = suite_create("p2p");
    TCase *tc = tcase_create("p2p");
    tcase_add_test(tc, nccl_channel_rule);
    tcase_add_test(tc, nccl_net_channels_by_version);
    tcase_add_test(tc, curve_rows_reproduced);
    tcase_add_test(tc, hop_on_few_channels);
    tcase_add_test(tc, cross_node_hop);
    tcase_add_test(tc, h100_derived);
    tcase_add_test(tc, models_agree);
    tcase_add_test(tc, bad_topologies);
    tcase_add_test(tc, cli_comm_ranks);
    tcase_add_test(tc, run_charges_pp_communicator);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(p2p_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
