/* test_atom.c - ATOM across sites (train.outer_sync.algorithm atom; arXiv
 * 2403.10504): the model swapping's recurrence against its closed forms
 * (compute covering the transfers: the first load and the last gradients
 * exposed; the link the bottleneck: (n + 1) loads, n gradients out and one
 * forward group's compute), the groups sized by the room two groups have,
 * the link shared behind a PCIe switch; a run whose step is the one-site
 * run's plus the swaps' exposed time plus the asynchronous averaging's
 * share, a model that does not fit one GPU without swapping and does with
 * it; the pipeline across the sites it is compared with; bad input (file,
 * line, key; exit 2) and the --json fields. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/breakdown.h"
#include "cost/cost_internal.h"
#include "cost/costs.h"
#include "cost/outersync.h"
#include "cost/swap.h"
#include "exec/run.h"
#include "hw/cluster.h"
#include "hw/wan.h"
#include "api/mmsim.h"
#include "mmsim_exe.h"
#include "plan/estimate.h"

static const char *const SITES = "topologies/dgx-a100-2sites-wan1g.yaml";

static double rel(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-300);
}

/* A prepared scenario on `topo` with `n` more settings. */
static void prep(const char *topo, const char *const *extra, int n, mm_scenario *sc, mm_sim *sim)
{
    char t[256];
    snprintf(t, sizeof t, "cluster.topology=%s", topo);
    const char *sets[16] = {t, "model=models/gpt3-1.3b.json", "cluster.nodes=2", "iterations=2", "train.zero=0",
                            "parallel.llm={tp: 1, pp: 1, dp: 16}", "train.global_batch=32", "train.seq_len=2048"};
    int k = 8;
    for (int i = 0; i < n; i++)
        sets[k++] = extra[i];
    mm_err err;
    ck_assert_msg(mm_scenario_load(sc, NULL, sets, k, &err) == 0, "%s: %s", err.key, err.msg);
    memset(sim, 0, sizeof *sim);
    ck_assert_msg(mm_sim_prepare(sim, sc, &err) == 0, "%s: %s", err.key, err.msg);
}

/* The recurrence of swap.c on uniform groups, m micro-batches: with t_w a
 * group's load, t_g its gradients out, c_f and c_b its passes,
 *   compute covers the link:  t_w + m n (c_f + c_b) + t_g
 *   the link is the bottleneck (m 1): (n + 1) t_w + c_f + n t_g. */
START_TEST(swap_closed_form)
{
    mm_scenario sc;
    mm_sim sim;
    const char *x[] = {"train.outer_sync={algorithm: atom, h: 10}"};
    prep(SITES, x, 1, &sc, &sim);
    int L = (int)sim.llm->layers; /* 24 */
    ck_assert_int_eq(L, 24);
    mm_mem_rank full = {.params = 24e8, .weights = 2 * 24e8, .grads = 4 * 24e8};
    double per = 6e8; /* a layer's weights (2e8) and gradients (4e8) */
    /* the link: 31 GB/s x 0.88, two GPUs behind each of the 4 switches (dp 16 > 8 a node) */
    double bw = 31e9 * sim.cluster->pcie_eff / 2;
    ck_assert(rel(mm_sim_swap_link_bw(&sim), bw) < 1e-12);
    struct {
        double room; /* bytes for states */
        int g, n;
    } r[] = {{2 * 4 * per, 4, 6}, {2 * 4 * per + per, 4, 6}, {2 * 6 * per, 6, 4}, {2 * 12 * per, 12, 2}};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        mm_swap s;
        ck_assert_int_eq(mm_sim_swap(&sim, &full, r[i].room, 0, 0, 0, &s), 0);
        ck_assert_int_eq(s.group_layers, r[i].g);
        ck_assert_int_eq(s.groups, r[i].n);
        ck_assert(rel(s.resident_bytes, 2 * r[i].g * per) < 1e-12);
        int n = s.groups;
        double tw = r[i].g * 2e8 / bw, tg = r[i].g * 4e8 / bw;
        ck_assert(rel(s.load_s, tw) < 1e-12 && rel(s.grads_out_s, tg) < 1e-12);
        /* compute-bound: the whole model's passes, each group's >= its transfers */
        double F = 10 * tg * n, B = 20 * tg * n;
        for (int m = 1; m <= 3; m++) {
            ck_assert_int_eq(mm_sim_swap(&sim, &full, r[i].room, F, B, m, &s), 0);
            double T = tw + m * (F + B) + tg;
            ck_assert_msg(rel(s.swap_step_s, T) < 1e-12, "g %d m %d: %.9g s, closed form %.9g", r[i].g, m,
                          s.swap_step_s, T);
            ck_assert(rel(s.exposed_s, tw + tg) < 1e-9);
        }
        /* link-bound: each group's passes shorter than a load */
        F = 0.1 * tw * n, B = 0.2 * tw * n;
        ck_assert_int_eq(mm_sim_swap(&sim, &full, r[i].room, F, B, 1, &s), 0);
        double T = (n + 1) * tw + F / n + n * tg;
        ck_assert_msg(rel(s.swap_step_s, T) < 1e-12, "g %d: %.9g s, closed form %.9g", r[i].g, s.swap_step_s, T);
    }
    /* the whole model fits twice over: one group, loaded once, its
     * gradients accumulated on the GPU and sent out once */
    mm_swap s;
    ck_assert_int_eq(mm_sim_swap(&sim, &full, 100 * L * per, 0.1, 0.2, 2, &s), 0);
    ck_assert(s.groups == 1 && rel(s.swap_step_s, L * 2e8 / bw + 0.6 + L * 4e8 / bw) < 1e-12);
    ck_assert_int_eq(mm_sim_swap(&sim, &full, 100 * L * per, 1.0, 2.0, 2, &s), 0);
    ck_assert(s.groups == 1 && s.group_layers == L && rel(s.resident_bytes, L * per) < 1e-12);
    ck_assert(rel(s.swap_step_s, L * 2e8 / bw + 6.0 + L * 4e8 / bw) < 1e-12);
    /* not two layers' room: no plan */
    ck_assert_int_eq(mm_sim_swap(&sim, &full, 1.9 * per, 1, 1, 1, &s), -1);
    mm_sim_free(&sim);
    mm_scenario_free(&sc);
}
END_TEST

/* A run: the site's step is the one-site run's (same layout, every state
 * resident) plus the swaps' exposed time; the averaging (4 P bytes, fp32,
 * bytes / 125 MB/s + 20 ms on two sites) is asynchronous, exposing
 * max(0, sync - h step) every h steps; tokens double.  The GPU holds two
 * groups' weights and gradients instead of the whole model and its
 * optimizer, sized by train.memory_reserve_gib's squeeze (66 of 74.5 GiB
 * kept back: the step's time does not depend on it). */
START_TEST(atom_run)
{
    const char *one[] = {"train.memory_reserve_gib=0"};
    const char *at[] = {"train.memory_reserve_gib=66", "train.outer_sync={algorithm: atom, h: 4}"};
    mm_scenario sc1, sc;
    mm_sim s1, s;
    mm_err err;
    prep("topologies/dgx-a100.yaml", one, 1, &sc1, &s1);
    prep(SITES, at, 2, &sc, &s);
    mm_metrics m1, m;
    ck_assert_msg(mm_sim_run(&s1, &m1, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(mm_sim_run(&s, &m, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(!m1.oom && !m.oom && !m1.swap.on && m.swap.on, "oom %d %d", m1.oom, m.oom);
    const mm_swap *w = &m.swap;
    ck_assert_msg(w->groups > 2 && w->group_layers < 12, "%d groups of %d", w->groups, w->group_layers);
    /* the passes the swaps hide behind: the cost bridge's */
    mm_sim_costs c;
    ck_assert_msg(mm_sim_stage_times(&s, &c, &err) == 0, "%s", err.msg);
    ck_assert(rel(w->compute_s, c.spec.m * (c.stages[0].fwd_s + c.stages[0].bwd_s)) < 1e-12);
    ck_assert(w->exposed_s > 0 && rel(w->exposed_s, w->swap_step_s - w->compute_s) < 1e-12);
    double step = m1.iteration_time_s + w->exposed_s;
    ck_assert_msg(rel(m.outer.step_s, step) < 1e-12, "step %.9g, one site %.9g + swap %.9g", m.outer.step_s,
                  m1.iteration_time_s, w->exposed_s);
    double P = m.outer.params, sync = 4 * P / 125e6 + 0.020;
    ck_assert(m.outer.overlap && m.outer.h == 4 && rel(m.outer.sync_s, sync) < 1e-12);
    ck_assert(rel(m.outer.exposed_s, fmax(0, sync - 4 * step)) < 1e-9);
    double T = step + m.outer.exposed_s / 4;
    ck_assert(rel(m.iteration_time_s, T) < 1e-12);
    ck_assert(rel(m.tokens_per_s, 2 * m1.tokens_per_s * m1.iteration_time_s / T) < 1e-12);
    /* memory: two groups' weights and gradients, no optimizer on the GPU */
    mm_mem_rank r1, r;
    ck_assert_int_eq(mm_sim_llm_stage_rank(&s1, 0, &r1), 0);
    ck_assert_int_eq(mm_sim_llm_stage_rank(&s, 0, &r), 0);
    ck_assert(r.optimizer == 0 && rel(r.weights + r.grads, w->resident_bytes) < 1e-12);
    ck_assert(rel(r.total - r.weights - r.grads, r1.total - r1.weights - r1.grads - r1.optimizer) < 1e-12);
    ck_assert(m.peak_memory_gib < m1.peak_memory_gib);
    /* the pipeline across the two sites: the closed form of swap.h */
    double act = 1.0 * 2048 * (double)s.llm->hidden * 2, x = 16 * act / 125e6 + 0.010;
    double fb = (c.stages[0].fwd_s + c.stages[0].bwd_s) / 2;
    ck_assert(rel(w->pp_hop_s, x) < 1e-12);
    ck_assert(rel(w->pp_step_s, 2 * fb + 2 * x + (2 * c.spec.m - 1) * fmax(fb, x)) < 1e-12);
    /* the planner's pre-score adds the same swap, and its bound stays below the run */
    mm_metrics e;
    double bound;
    ck_assert_msg(mm_sim_estimate_bound(&s, &e, &bound, &err) == 0, "%s", err.msg);
    ck_assert(e.swap.on && e.swap.exposed_s == w->exposed_s && e.swap.pp_step_s == w->pp_step_s);
    ck_assert_msg(rel(e.iteration_time_s, m.iteration_time_s) < 0.05, "est %.6g s, run %.6g s", e.iteration_time_s,
                  m.iteration_time_s);
    ck_assert(bound >= w->exposed_s && bound <= m.iteration_time_s * (1 + 1e-9));
    mm_metrics_free(&e);
    /* --breakdown's swap is the run's (one function) */
    mm_sim_breakdown *bk = calloc(1, sizeof *bk);
    ck_assert_ptr_nonnull(bk);
    ck_assert_msg(mm_sim_get_breakdown(&s, bk, &err) == 0, "%s", err.msg);
    ck_assert(bk->swap.on && bk->swap.exposed_s == w->exposed_s && bk->swap.groups == w->groups);
    free(bk);
    mm_sim_costs_free(&c);
    mm_metrics_free(&m);
    mm_metrics_free(&m1);
    mm_sim_free(&s1);
    mm_sim_free(&s);
    mm_scenario_free(&sc1);
    mm_scenario_free(&sc);
}
END_TEST

/* A 7B model's weights, gradients and Adam states (16 bytes a parameter)
 * do not fit an 80 GB A100; swapped, they need not. */
START_TEST(swap_fits)
{
    const char *x[] = {"model=models/llama-2-7b.json", "train.outer_sync={algorithm: atom, h: 10}"};
    const char *y[] = {"model=models/llama-2-7b.json"};
    mm_scenario sc, sc1;
    mm_sim s, s1;
    mm_err err;
    prep(SITES, x, 2, &sc, &s);
    prep("topologies/dgx-a100.yaml", y, 1, &sc1, &s1);
    mm_metrics m, m1;
    ck_assert_msg(mm_sim_run(&s1, &m1, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(mm_sim_run(&s, &m, NULL, &err) == 0, "%s", err.msg);
    ck_assert(m1.oom && !m.oom && m.iteration_time_s > 0 && m.swap.groups >= 1);
    mm_metrics_free(&m);
    mm_metrics_free(&m1);
    mm_sim_free(&s);
    mm_sim_free(&s1);
    mm_scenario_free(&sc);
    mm_scenario_free(&sc1);
}
END_TEST

START_TEST(bad_input)
{
    char dir[256], out[8192], err[4096], args[1024];
    mmx_tmpdir(dir, sizeof dir, "atom");
    const char *S = "--set model=models/gpt3-1.3b.json --set cluster.nodes=2 --set cluster.topology="
                    "topologies/dgx-a100-2sites-wan1g.yaml";
    struct {
        const char *set, *key, *what;
    } bad[] = {
        {"--set 'train.outer_sync={algorithm: atom}'", "parallel.llm", "whole copy"},
        {"--set train.zero=0 --set 'train.outer_sync={algorithm: atom}'", "parallel.llm", "tp 1"},
        {"--set 'parallel.llm={tp: 1, pp: 1, dp: 16}' --set 'train.outer_sync={algorithm: atom}'", "train.zero",
         "host"},
        {"--set train.zero=0 --set 'parallel.llm={tp: 1, pp: 1, dp: 16}' "
         "--set 'train.outer_sync={algorithm: atom, overlap: true}'",
         "train.outer_sync.overlap", "asynchronously"},
        {"--set train.zero=0 --set 'parallel.llm={tp: 1, pp: 1, dp: 16}' "
         "--set 'train.outer_sync={algorithm: atom, state: gpu}'",
         "train.outer_sync.state", "host"},
        {"--set train.zero=0 --set 'parallel.llm={tp: 1, pp: 1, dp: 16}' "
         "--set 'train.outer_sync={algorithm: atom, h: 0}'",
         "train.outer_sync.h", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "run --no-db %s %s", S, bad[i].set);
        ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
        ck_assert_msg(strstr(err, bad[i].key) && strstr(err, bad[i].what), "%zu: %s", i, err);
    }
    /* in a file: its name and the key's line */
    char p[512];
    snprintf(p, sizeof p, "%s/s.yaml", dir);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "model: models/gpt3-1.3b.json\ncluster: {topology: %s, nodes: 2}\ntrain:\n  zero: 0\n  outer_sync: "
               "{algorithm: atom, h: 10}\nparallel:\n  llm: {tp: 1, pp: 2, dp: 8}\n",
            "topologies/dgx-a100-2sites-wan1g.yaml");
    fclose(f);
    snprintf(args, sizeof args, "run --no-db %s", p);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "s.yaml:7") && strstr(err, "parallel.llm"), "%s", err);
    mmx_rmdir(dir);
}
END_TEST

/* The C API's metrics by name are the run's (NAN without atom). */
START_TEST(api_metrics)
{
    const char *sets[] = {"cluster.topology=topologies/dgx-a100-2sites-wan1g.yaml", "model=models/gpt3-1.3b.json",
                          "cluster.nodes=2", "iterations=1", "train.zero=0", "parallel.llm={tp: 1, pp: 1, dp: 16}",
                          "train.outer_sync={algorithm: atom, h: 10}"};
    mmsim *h = mmsim_open(NULL, sets, 7);
    ck_assert_ptr_nonnull(h);
    ck_assert_msg(mmsim_run(h) == 0, "%s", mmsim_error_message(h));
    double sw = mmsim_metric(h, "swap_exposed_s"), step = mmsim_metric(h, "inner_step_s");
    ck_assert(sw > 0 && step > sw && mmsim_metric(h, "wan_pipeline_step_s") > 0);
    ck_assert(mmsim_metric(h, "swap_step_s") > sw);
    mmsim_close(h);
    const char *d[] = {"cluster.topology=topologies/dgx-a100-2sites-wan1g.yaml", "model=models/gpt3-1.3b.json",
                       "cluster.nodes=2", "iterations=1", "train.outer_sync={algorithm: diloco, h: 10}"};
    h = mmsim_open(NULL, d, 5);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(mmsim_run(h), 0);
    ck_assert(isnan(mmsim_metric(h, "swap_exposed_s")) && isnan(mmsim_metric(h, "wan_pipeline_step_s")));
    mmsim_close(h);
}
END_TEST

/* --json names the swap's numbers and the pipeline it is compared with. */
START_TEST(json_fields)
{
    char dir[256], out[65536], err[4096];
    mmx_tmpdir(dir, sizeof dir, "atomj");
    ck_assert_int_eq(mmx_run(dir, NULL,
                             "run --no-db --json --set model=models/gpt3-1.3b.json --set cluster.nodes=2 --set "
                             "cluster.topology=topologies/dgx-a100-2sites-wan1g.yaml --set train.zero=0 --set "
                             "'parallel.llm={tp: 1, pp: 1, dp: 16}' --set 'train.outer_sync={algorithm: atom, h: 10}'",
                             out, sizeof out, err, sizeof err),
                     0);
    const char *keys[] = {"\"outer_sync_algorithm\": \"atom\"", "\"swap_groups\"", "\"swap_exposed_s\"",
                          "\"swap_link_gb_s\"", "\"wan_pipeline_step_s\"", "\"outer_sync_overlap\": true"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(strstr(out, keys[i]), "%s missing: %s", keys[i], err);
    mmx_rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("atom");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, swap_closed_form);
    tcase_add_test(tc, atom_run);
    tcase_add_test(tc, swap_fits);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, api_metrics);
    tcase_add_test(tc, json_fields);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
