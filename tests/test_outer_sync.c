/* test_outer_sync.c - training across sites (the topology's sites:,
 * train.outer_sync): the WAN ring collectives against their alpha-beta
 * closed forms; a diloco run's sync (bytes / WAN bandwidth + 2 latencies
 * on two sites), its exposed time (the whole sync when blocking, max(0,
 * sync - H step) overlapped one round behind) and the rates it gives,
 * against the same site run alone; allreduce every step; a compressed
 * sync (an all-gather of compressed buffers and its kernels); and bad
 * input: the topology's new keys and the scenario's refusals (file, line,
 * key; exit 2).  The site's own step is the one-site run's to the bit. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/breakdown.h"
#include "cost/cost_internal.h"
#include "cost/outersync.h"
#include "exec/run.h"
#include "hw/cluster.h"
#include "hw/wan.h"
#include "model/framework.h"
#include "model/llm.h"
#include "api/mmsim.h"
#include "mmsim_exe.h"
#include "plan/estimate.h"

static const char *const SITES = "topologies/dgx-a100-2sites-wan1g.yaml";

static double rel(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-300);
}

/* One scenario (the built-in default on llama-2-7b, 2 nodes a site, tp 4
 * pp 2 dp 2, 2 iterations) on `topo`, plus `extra`; its metrics. */
static void run(const char *topo, const char *extra, mm_metrics *m, double *params, double *grad_bytes)
{
    char t[256];
    snprintf(t, sizeof t, "cluster.topology=%s", topo);
    const char *sets[] = {t, "model=models/llama-2-7b.json", "cluster.nodes=2", "iterations=2", extra};
    mm_scenario sc;
    mm_err err;
    ck_assert_msg(mm_scenario_load(&sc, NULL, sets, extra ? 5 : 4, &err) == 0, "%s: %s", err.key, err.msg);
    mm_sim sim = {0};
    ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_msg(mm_sim_run(&sim, m, NULL, &err) == 0, "%s", err.msg);
    if (params)
        *params = (double)mm_llm_params(sim.llm);
    if (grad_bytes)
        *grad_bytes = mm_framework_grad_bytes(sim.fw, (mm_dtype)sim.sc.train.precision);
    mm_sim_free(&sim);
    mm_scenario_free(&sc);
}

/* Ring all-reduce among S sites: 2(S-1)/S B/bw + 2(S-1) a; all-gather of
 * B from each: (S-1) B/bw + (S-1) a (Thakur et al. 2005).  The example
 * topology: 2 sites, 1 Gb/s = 125 MB/s, 10 ms. */
START_TEST(wan_closed_form)
{
    mm_cluster c;
    mm_err err;
    ck_assert_msg(mm_cluster_load(SITES, 2, &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.sites, 2);
    ck_assert(c.wan_bw == 125e6 && fabs(c.wan_latency_s - 0.010) < 1e-15);
    const double B = 1e9;
    ck_assert_msg(rel(mm_wan_allreduce_s(&c, B), B / 125e6 + 0.020) < 1e-12, "%.9g", mm_wan_allreduce_s(&c, B));
    ck_assert(rel(mm_wan_allgather_s(&c, B), B / 125e6 + 0.010) < 1e-12);
    c.sites = 3;
    ck_assert(rel(mm_wan_allreduce_s(&c, B), 4.0 / 3 * B / 125e6 + 0.040) < 1e-12);
    ck_assert(rel(mm_wan_allgather_s(&c, B), 2 * B / 125e6 + 0.020) < 1e-12);
    c.sites = 0;
    ck_assert(mm_wan_allreduce_s(&c, B) == 0 && mm_wan_allgather_s(&c, B) == 0);
    mm_cluster_free(&c);
    /* no sites in the existing files */
    ck_assert(mm_cluster_load("topologies/dgx-a100.yaml", 1, &c, &err) == 0 && c.sites == 0);
    mm_cluster_free(&c);
}
END_TEST

/* DiLoCo on two sites: the pseudo-gradient (4 P bytes, fp32) all-reduced
 * every H steps, sync = 4P / 125e6 + 0.02 s.  The site's step is the
 * one-site run's (dgx-a100.yaml, same layout) exactly; tokens and GPUs
 * double; each step carries exposed / H.  Blocking: exposed = sync.
 * Overlapped one round behind: max(0, sync - H step), which vanishes once
 * H step covers the sync (then twice the one site's tokens/s, its MFU). */
START_TEST(diloco_closed_form)
{
    mm_metrics m1, m;
    double P;
    run("topologies/dgx-a100.yaml", NULL, &m1, &P, NULL);
    ck_assert(!m1.outer.on && m1.gpus == 16);
    const double step = m1.iteration_time_s, sync = 4 * P / 125e6 + 0.020;
    struct {
        const char *set;
        int h;
        double exposed;
    } c[] = {
        {"train.outer_sync={algorithm: diloco, h: 10}", 10, sync},
        {"train.outer_sync={algorithm: diloco, h: 10, overlap: true}", 10, fmax(0, sync - 10 * step)},
        {"train.outer_sync={algorithm: diloco, h: 500, overlap: true}", 500, 0},
    };
    ck_assert(sync - 10 * step > 0 && 500 * step > sync); /* the cases mean what they say */
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        run(SITES, c[i].set, &m, NULL, NULL);
        const mm_outer_sync *o = &m.outer;
        ck_assert(o->on && o->sites == 2 && o->h == c[i].h && m.gpus == 32);
        ck_assert(o->bytes == 4 * P && o->wire_bytes == o->bytes && o->kernel_s == 0);
        ck_assert_msg(rel(o->sync_s, sync) < 1e-12, "%zu: sync %.9g s, closed form %.9g", i, o->sync_s, sync);
        ck_assert_msg(o->step_s == step, "%zu: the site's step %.9g s moved from %.9g", i, o->step_s, step);
        ck_assert_msg(fabs(o->exposed_s - c[i].exposed) < 1e-9, "%zu: exposed %.9g s, closed form %.9g", i,
                      o->exposed_s, c[i].exposed);
        double T = step + c[i].exposed / c[i].h;
        ck_assert(rel(m.iteration_time_s, T) < 1e-12);
        ck_assert_msg(rel(m.tokens_per_s, 2 * m1.tokens_per_s * step / T) < 1e-12, "%zu: %.9g tokens/s", i,
                      m.tokens_per_s);
        ck_assert(rel(m.mfu, m1.mfu * step / T) < 1e-12);
        ck_assert(rel(m.exposed_comm_s, m1.exposed_comm_s + c[i].exposed / c[i].h) < 1e-12);
        ck_assert(m.peak_memory_gib == m1.peak_memory_gib);
        mm_metrics_free(&m);
    }
    mm_metrics_free(&m1);
}
END_TEST

/* Plain data parallelism across sites: the gradients (P x the framework's
 * reduce size) all-reduced after every step, all of it exposed. */
START_TEST(allreduce_every_step)
{
    mm_metrics m1, m;
    double P, gb;
    run("topologies/dgx-a100.yaml", NULL, &m1, &P, &gb);
    run(SITES, "train.outer_sync={algorithm: allreduce}", &m, NULL, NULL);
    double sync = gb * P / 125e6 + 0.020;
    ck_assert(m.outer.h == 1 && !m.outer.overlap && m.outer.bytes == gb * P);
    ck_assert(rel(m.outer.exposed_s, sync) < 1e-12 && rel(m.outer.per_iter_s, sync) < 1e-12);
    ck_assert(rel(m.iteration_time_s, m1.iteration_time_s + sync) < 1e-12);
    ck_assert(rel(m.tokens_per_s, 2 * m1.tokens_per_s * m1.iteration_time_s / (m1.iteration_time_s + sync)) < 1e-12);
    mm_metrics_free(&m);
    mm_metrics_free(&m1);
}
END_TEST

/* A lossy compressor (zfp-r8: ratio 4 on fp32) with given kernel rates:
 * the compressed buffers (4P/4) all-gathered, (S-1) x that / bw + (S-1) a,
 * after a compress kernel of the GPU's shard (4P/16 at 100 GB/s) and
 * before S-1 decompressions (at 200 GB/s). */
START_TEST(compressed_sync)
{
    mm_metrics m;
    double P;
    run(SITES, "train.outer_sync={algorithm: diloco, h: 50, compress: zfp-r8, compress_gb_s: 100, decompress_gb_s: 200}",
        &m, &P, NULL);
    double shard = 4 * P / 16, wire = 4 * P / 4;
    double kern = shard / 100e9 + shard / 200e9, wan = wire / 125e6 + 0.010;
    ck_assert(rel(m.outer.wire_bytes, wire) < 1e-12);
    ck_assert_msg(rel(m.outer.kernel_s, kern) < 1e-12, "kernels %.9g s", m.outer.kernel_s);
    ck_assert(rel(m.outer.wan_s, wan) < 1e-12 && rel(m.outer.sync_s, kern + wan) < 1e-12);
    ck_assert(rel(m.outer.exposed_s, kern + wan) < 1e-12);
    mm_metrics_free(&m);
}
END_TEST

/* The planner's pre-score adds the sync as the run does (its own step,
 * blocking: + sync / h) over both sites, and its lower bound, with the
 * sync, stays below the run; --breakdown's sync is the run's. */
START_TEST(estimate_adds_sync)
{
    const char *sets[] = {"cluster.topology=topologies/dgx-a100-2sites-wan1g.yaml", "model=models/llama-2-7b.json",
                          "cluster.nodes=2", "iterations=1", "train.outer_sync={algorithm: diloco, h: 10}"};
    mm_scenario sc;
    mm_err err;
    ck_assert_msg(mm_scenario_load(&sc, NULL, sets, 5, &err) == 0, "%s", err.msg);
    mm_sim sim = {0};
    ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s", err.msg);
    mm_metrics e, m;
    double bound;
    ck_assert_msg(mm_sim_estimate_bound(&sim, &e, &bound, &err) == 0, "%s", err.msg);
    ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s", err.msg);
    double sync = 4 * (double)mm_llm_params(sim.llm) / 125e6 + 0.020;
    ck_assert(e.outer.on && e.gpus == 32 && rel(e.outer.sync_s, sync) < 1e-12);
    ck_assert(rel(e.iteration_time_s, e.outer.step_s + sync / 10) < 1e-12);
    ck_assert_msg(rel(e.iteration_time_s, m.iteration_time_s) < 0.05, "est %.6g s, run %.6g s", e.iteration_time_s,
                  m.iteration_time_s);
    ck_assert_msg(bound > sync / 10 && bound <= m.iteration_time_s * (1 + 1e-9), "bound %.6g s, run %.6g s", bound,
                  m.iteration_time_s);
    /* --breakdown's sync is the run's (one function) */
    mm_sim_breakdown *bk = calloc(1, sizeof *bk);
    ck_assert_ptr_nonnull(bk);
    ck_assert_msg(mm_sim_get_breakdown(&sim, bk, &err) == 0, "%s", err.msg);
    ck_assert(bk->outer.on && bk->outer.sync_s == m.outer.sync_s && bk->outer.wire_bytes == m.outer.wire_bytes);
    free(bk);
    mm_metrics_free(&e);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
    mm_scenario_free(&sc);
}
END_TEST

/* The C API's metrics by name are the run's numbers (NAN without sites). */
START_TEST(api_metrics)
{
    const char *sets[] = {"cluster.topology=topologies/dgx-a100-2sites-wan1g.yaml", "model=models/llama-2-7b.json",
                          "cluster.nodes=2", "iterations=1", "train.outer_sync={h: 10}"};
    mmsim *h = mmsim_open(NULL, sets, 5);
    ck_assert_ptr_nonnull(h);
    ck_assert_msg(mmsim_run(h) == 0, "%s", mmsim_error_message(h));
    double step = mmsim_metric(h, "inner_step_s"), sync = mmsim_metric(h, "outer_sync_s");
    ck_assert(mmsim_metric(h, "sites") == 2 && step > 0 && sync > 0);
    ck_assert(mmsim_metric(h, "outer_sync_exposed_s") == sync);
    ck_assert(rel(mmsim_metric(h, "iteration_time_s"), step + sync / 10) < 1e-12);
    mmsim_close(h);
    h = mmsim_open(NULL, sets + 1, 3);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(mmsim_run(h), 0);
    ck_assert(isnan(mmsim_metric(h, "sites")) && isnan(mmsim_metric(h, "outer_sync_s")));
    mmsim_close(h);
}
END_TEST

/* train.outer_sync.state gpu: each GPU holds its share of the outer
 * optimizer, P_rank x (8 + 4 with the overlap, fp32) / dp bytes more model
 * state (memory only: the step's time does not move); host: nothing. */
START_TEST(outer_state_memory)
{
    const char *base[] = {"cluster.topology=topologies/dgx-a100-2sites-wan1g.yaml", "model=models/llama-2-7b.json",
                          "cluster.nodes=2", "iterations=1", NULL};
    const char *opt[] = {"train.outer_sync={h: 10, overlap: true}", "train.outer_sync={h: 10, overlap: true, state: gpu}",
                         "train.outer_sync={h: 10, state: gpu}"};
    mm_mem_rank r[3][2];
    double t[3];
    for (int i = 0; i < 3; i++) {
        base[4] = opt[i];
        mm_scenario sc;
        mm_err err;
        ck_assert_msg(mm_scenario_load(&sc, NULL, base, 5, &err) == 0, "%s", err.msg);
        mm_sim sim = {0};
        ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s", err.msg);
        for (int k = 0; k < 2; k++)
            ck_assert_int_eq(mm_sim_llm_stage_rank(&sim, k, &r[i][k]), 0);
        mm_metrics m;
        ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s", err.msg);
        t[i] = m.iteration_time_s;
        mm_metrics_free(&m);
        mm_sim_free(&sim);
        mm_scenario_free(&sc);
    }
    for (int k = 0; k < 2; k++) {
        double P = r[0][k].params; /* tp 4 x pp 2 x dp 2: the stage's TP shard */
        ck_assert(P > 0 && r[1][k].params == P);
        ck_assert_msg(rel(r[1][k].optimizer - r[0][k].optimizer, P * 12 / 2) < 1e-12, "stage %d: %.6g bytes", k,
                      r[1][k].optimizer - r[0][k].optimizer);
        ck_assert(rel(r[1][k].total - r[0][k].total, P * 12 / 2) < 1e-12);
        ck_assert(rel(r[2][k].optimizer - r[0][k].optimizer, P * 8 / 2) < 1e-12);
    }
    ck_assert(t[1] == t[0]);
}
END_TEST

/* Writes dir/t.yaml: dgx-a100.yaml's text plus `tail`, its kernel tables
 * reached through a link. */
static void topo(const char *dir, const char *tail)
{
    static char base[16384];
    mmx_slurp("topologies/dgx-a100.yaml", base, sizeof base);
    ck_assert(strlen(base) > 1000);
    char p[512], cmd[1024];
    snprintf(cmd, sizeof cmd, "ln -sfn '%s/topologies/kernels' '%s/kernels'", getenv("MMSIM_SRCDIR") ? getenv("MMSIM_SRCDIR") : ".",
             dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(p, sizeof p, "%s/t.yaml", dir);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s%s", base, tail);
    fclose(f);
}

START_TEST(bad_input)
{
    char dir[256], out[8192], err[4096], args[1024];
    mmx_tmpdir(dir, sizeof dir, "osync");
    /* the topology's sites: file, line, key */
    struct {
        const char *tail, *key, *what;
    } bad_topo[] = {
        {"sites: {count: 1, wan_gbps: 1, wan_latency_ms: 10}\n", "sites.count", "t.yaml:"},
        {"sites:\n  count: 2\n  wan_latency_ms: 10\n", "sites.wan_gbps", "missing"},
        {"sites:\n  count: 2\n  wan_gbps: 1\n", "sites.wan_latency_ms", "missing"},
        {"sites:\n  count: 2\n  wan_gbps: 1\n  wan_latency_ms: 10\n  wan_gbit_s: 1\n", "wan_gbit_s", "t.yaml:"},
        {"sites:\n  count: 2\n  wan_gbps: -1\n  wan_latency_ms: 10\n", "sites.wan_gbps", "t.yaml:"},
        {"sites:\n  wan_gbps: 1\n  wan_latency_ms: 10\n", "sites.count", "missing"},
    };
    for (size_t i = 0; i < sizeof bad_topo / sizeof bad_topo[0]; i++) {
        topo(dir, bad_topo[i].tail);
        snprintf(args, sizeof args, "run --no-db --set cluster.topology=%s/t.yaml", dir);
        ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
        ck_assert_msg(strstr(err, bad_topo[i].key) && strstr(err, bad_topo[i].what) && strstr(err, "t.yaml:"),
                      "%zu: %s", i, err);
    }
    /* the scenario: refused by key */
    const char *S = "--set model=models/llama-2-7b.json --set cluster.nodes=2";
    struct {
        const char *topo, *set, *key, *what;
    } bad[] = {
        {SITES, "", "train.outer_sync", "joins 2 sites"},
        {"topologies/dgx-a100.yaml", "'train.outer_sync={algorithm: diloco, h: 10}'", "train.outer_sync",
         "no sites"},
        {SITES, "'train.outer_sync={algorithm: atom}'", "parallel.llm", "whole copy"},
        {SITES, "'train.outer_sync={algorithm: allreduce, h: 5}'", "train.outer_sync.h", "every step"},
        {SITES, "'train.outer_sync={algorithm: allreduce, overlap: true}'", "train.outer_sync.overlap", "diloco"},
        {SITES, "'train.outer_sync={algorithm: allreduce, compress: zfp-r8}'", "train.outer_sync.compress",
         "not modeled"},
        {SITES, "'train.outer_sync={h: 10, dtype: bf16, compress: zfp-r8, compress_gb_s: 9}'",
         "train.outer_sync.compress", "fp32"},
        {SITES, "'train.outer_sync={h: 10, compress: cuszp2}'", "train.outer_sync.compress_ratio", "give it"},
        {SITES, "'train.outer_sync={h: 10, compress: zfp-r8}'", "train.outer_sync.compress_gb_s", "give it"},
        {SITES, "'train.outer_sync={h: 10, compress_ratio: 4}'", "train.outer_sync.compress_ratio", "without"},
        {SITES, "'train.outer_sync={h: 0}'", "train.outer_sync.h", ""},
        {SITES, "'train.outer_sync={algorithm: allreduce, state: gpu}'", "train.outer_sync.state", "diloco"},
        {SITES, "'train.outer_sync={algorithm: swap}'", "train.outer_sync.algorithm", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "run --no-db %s --set cluster.topology=%s%s%s", S, bad[i].topo,
                 *bad[i].set ? " --set " : "", bad[i].set);
        ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
        ck_assert_msg(strstr(err, bad[i].key) && strstr(err, bad[i].what), "%zu: %s", i, err);
    }
    /* in a file: its name and the key's line */
    char p[512];
    snprintf(p, sizeof p, "%s/s.yaml", dir);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "model: models/llama-2-7b.json\ncluster: {topology: %s, nodes: 2}\ntrain:\n  outer_sync: {algorithm: "
               "gossip}\nparallel:\n  llm: {tp: 4, pp: 2, dp: 2}\n",
            SITES);
    fclose(f);
    snprintf(args, sizeof args, "run --no-db %s", p);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "s.yaml:4") && strstr(err, "train.outer_sync.algorithm"), "%s", err);
    mmx_rmdir(dir);
}
END_TEST

/* --json names the sync's numbers; a run without sites prints none. */
START_TEST(json_fields)
{
    char dir[256], out[65536], err[4096];
    mmx_tmpdir(dir, sizeof dir, "osyncj");
    char args[512];
    snprintf(args, sizeof args,
             "run --no-db --json --set model=models/llama-2-7b.json --set cluster.nodes=2 --set cluster.topology=%s "
             "--set 'train.outer_sync={h: 100, overlap: true}'",
             SITES);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 0);
    const char *keys[] = {"\"sites\": 2", "\"outer_sync_s\"", "\"outer_sync_exposed_s\"", "\"inner_step_s\"",
                          "\"outer_sync_per_iteration_s\"", "\"outer_sync_overlap\": true"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(strstr(out, keys[i]), "%s missing", keys[i]);
    ck_assert_int_eq(mmx_run(dir, NULL, "run --no-db --json --set model=models/llama-2-7b.json --set cluster.nodes=2",
                             out, sizeof out, err, sizeof err), 0);
    ck_assert(!strstr(out, "outer_sync") && !strstr(out, "\"sites\""));
    mmx_rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("outer_sync");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, wan_closed_form);
    tcase_add_test(tc, diloco_closed_form);
    tcase_add_test(tc, allreduce_every_step);
    tcase_add_test(tc, compressed_sync);
    tcase_add_test(tc, estimate_adds_sync);
    tcase_add_test(tc, api_metrics);
    tcase_add_test(tc, outer_state_memory);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, json_fields);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
