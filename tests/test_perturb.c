/* test_perturb.c - what-if perturbations (hw/perturb.h) and the critical
 * path they show in: a straggler in a DP group and in a pipeline stage,
 * NICs halved on half the nodes (perturbation and topology node groups), a
 * failed spine link of an oversubscribed fat-tree, jitter against its
 * distribution, periodic stalls, HBM capacity and bandwidth, the uniform
 * 1F1B critical path, --set and canonical text, bad input. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "hw/coll.h"
#include "hw/perturb.h"
#include "parallel/build.h"
#include "exec/critpath.h"
#include "exec/exec.h"
#include "scenario/sim.h"
#include "exec/run.h"

#include "cluster_keep.h"

/* A small LLM alone on one DGX H100 (8 GPUs). */
#define SMALL "model=models/megatron-gpt-1.7b.json", "cluster.nodes=1", "workload=text", \
              "train.seq_len=2048", "parallel.vision=null", "parallel.placement=pipeline", "iterations=1"

static void run_sets(const char *const *sets, int n, mm_metrics *mt, mm_sim_timeline *tl)
{
    mm_scenario sc;
    mm_err err;
    int rc = mm_scenario_load(&sc, NULL, sets, n, &err);
    ck_assert_msg(rc == 0, "%s:%d: %s: %s", err.file, err.line, err.key, err.msg);
    mm_sim *sim = malloc(sizeof *sim);
    rc = mm_sim_prepare(sim, &sc, &err);
    ck_assert_msg(rc == 0, "%s:%d: %s: %s", err.file, err.line, err.key, err.msg);
    rc = mm_sim_run(sim, mt, tl, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    mm_sim_free(sim);
    free(sim);
    mm_scenario_free(&sc);
}

#define RUN(mt, tl, ...)                                                          \
    do {                                                                          \
        const char *const s_[] = {__VA_ARGS__};                                   \
        run_sets(s_, (int)(sizeof s_ / sizeof s_[0]), (mt), (tl));                \
    } while (0)

static int is_compute(const char *what)
{
    return !strcmp(what, "fwd") || !strcmp(what, "bwd") || !strcmp(what, "wgrad") || !strcmp(what, "optimizer");
}

/* Seconds of compute of one rank (-1: any) on the critical path. */
static double crit_compute(const mm_critpath *cp, int rank, int stage)
{
    double s = 0;
    for (int i = 0; i < cp->n; i++)
        if (is_compute(cp->e[i].what) && (rank < 0 || cp->e[i].rank == rank) &&
            (stage < 0 || cp->e[i].stage == stage))
            s += cp->e[i].seconds;
    return s;
}

/* Slowing one GPU by f in a DP group of a synchronous iteration (DP
 * collectives wait for every replica) lengthens it by (f - 1) x the
 * compute that rank has on the critical path: its compute ops are the
 * path's, stretched; communication is not.  Tolerance 1 % of the change. */
START_TEST(dp_straggler)
{
    mm_metrics base, slow;
    RUN(&base, NULL, SMALL, "parallel.llm={tp: 2, pp: 1, dp: 4}", "train.global_batch=8");
    const double f = 1.3;
    RUN(&slow, NULL, SMALL, "parallel.llm={tp: 2, pp: 1, dp: 4}", "train.global_batch=8",
        "perturb=[{kind: slow_gpu, gpus: [3], factor: 1.3}]");
    double c = crit_compute(&base.crit, -1, -1);
    double want = (f - 1) * c, got = slow.iteration_time_s - base.iteration_time_s;
    ck_assert_msg(c > 0.5 * base.iteration_time_s, "compute share %g of %g", c, base.iteration_time_s);
    ck_assert_msg(fabs(got - want) <= 0.01 * want, "lengthened by %g s, expected (f-1) x %g = %g", got, c, want);
    /* GPU 3 is in TP group 1 (GPUs 2, 3): rank 1 is now on the path */
    ck_assert_msg(crit_compute(&slow.crit, 1, -1) > 0.9 * crit_compute(&slow.crit, -1, -1),
                  "rank 1 holds %g of %g s of compute on the path", crit_compute(&slow.crit, 1, -1),
                  crit_compute(&slow.crit, -1, -1));
    mm_metrics_free(&base);
    mm_metrics_free(&slow);
}
END_TEST

/* The same kind of straggler in a pipeline: in a middle stage it becomes
 * the stage that paces 1F1B's steady state, so the critical path moves from
 * the last stage (the heaviest one: it holds the LM head) onto it; in the
 * last stage it stays there, longer. */
START_TEST(pp_straggler)
{
    mm_metrics base, mid, last;
    RUN(&base, NULL, SMALL, "parallel.llm={tp: 2, pp: 4, dp: 1}", "train.global_batch=8");
    /* factor 2: the last stage (LM head and Megatron's fp32 vocab-parallel
     * cross-entropy) is 1.44x a middle one */
    RUN(&mid, NULL, SMALL, "parallel.llm={tp: 2, pp: 4, dp: 1}", "train.global_batch=8",
        "perturb=[{kind: slow_gpu, gpus: [3], factor: 2.0}]");
    RUN(&last, NULL, SMALL, "parallel.llm={tp: 2, pp: 4, dp: 1}", "train.global_batch=8",
        "perturb=[{kind: slow_gpu, gpus: [7], factor: 1.5}]");
    double T = base.iteration_time_s;
    ck_assert_msg(crit_compute(&base.crit, 3, 3) > 0.6 * T, "last stage %g of %g", crit_compute(&base.crit, 3, 3), T);
    ck_assert_msg(crit_compute(&base.crit, 1, 1) < 0.1 * T, "stage 1 %g of %g", crit_compute(&base.crit, 1, 1), T);
    ck_assert(mid.iteration_time_s > T);
    ck_assert_msg(crit_compute(&mid.crit, 1, 1) > 0.5 * mid.iteration_time_s, "stage 1 %g of %g",
                  crit_compute(&mid.crit, 1, 1), mid.iteration_time_s);
    ck_assert_int_eq(mid.crit.e[0].rank, 1);
    ck_assert_int_eq(last.crit.e[0].rank, 3);
    ck_assert_msg(crit_compute(&last.crit, 3, 3) > 1.4 * crit_compute(&base.crit, 3, 3), "last stage %g vs %g",
                  crit_compute(&last.crit, 3, 3), crit_compute(&base.crit, 3, 3));
    mm_metrics_free(&base);
    mm_metrics_free(&mid);
    mm_metrics_free(&last);
}
END_TEST

static mm_cluster load(const char *path, int nodes)
{
    mm_cluster c;
    mm_err err;
    int rc = mm_cluster_load(path, nodes, &c, &err);
    ck_assert_msg(rc == 0, "%s:%d %s: %s", err.file, err.line, err.key, err.msg);
    return mm_test_keep_cluster(c);
}

static double busbw(const mm_cluster *c, mm_net_model model, mm_coll_algo algo, int n, double bytes)
{
    int *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < n; i++)
        g[i] = i;
    mm_coll_req req = {.kind = MM_COLL_ALLREDUCE, .algo = algo, .gpus = g, .n = n, .bytes = bytes, .count = 1};
    mm_err err;
    double t = mm_coll_time(c, model, &req, NULL, &err);
    free(g);
    ck_assert_msg(isfinite(t), "%s", err.msg);
    return mm_coll_bus_factor(MM_COLL_ALLREDUCE, n) * bytes / t;
}

/* Halving the NICs of half the nodes: a multi-node all-reduce runs at the
 * pace of its slowest rail, so its bus bandwidth halves (within 3 %: the
 * latency terms do not scale), whether the halving is a perturbation or a
 * node group of the topology file; a node_group perturbation that gives the
 * group back 400 Gb/s restores it. */
START_TEST(half_nics)
{
    mm_cluster *c = malloc(sizeof *c);
    *c = load("topologies/dgx-h100.yaml", 4);
    const double S = 1 << 30;
    for (int m = 0; m < 2; m++) {
        mm_net_model model = m ? MM_NET_MODEL_ANALYTIC : MM_NET_MODEL_FLOW;
        double b0 = busbw(c, model, MM_ALGO_RING, 32, S);
        mm_cluster *g = malloc(sizeof *g);
        *g = load("tests/data/perturb/mixed-nics.yaml", 4);
        double bg = busbw(g, model, MM_ALGO_RING, 32, S);
        ck_assert_msg(fabs(bg / b0 - 0.5) < 0.015, "node group: %g of %g GB/s", bg * 1e-9, b0 * 1e-9);
        g->groups[0].nic_bw = 400e9 / 8; /* what a node_group perturbation does (scenario/prepare.c) */
        ck_assert_double_eq_tol(busbw(g, model, MM_ALGO_RING, 32, S), b0, 1e-6 * b0);
        if (model == MM_NET_MODEL_FLOW) {
            mm_cluster *p = malloc(sizeof *p);
            *p = *c;
            mm_perturb_entry one[1];
            p->pt.n = 1;
            p->pt.e = one;
            p->pt.e[0] = (mm_perturb_entry){.kind = MM_PT_NIC, .n_nodes = 2, .nodes = {0, 1}, .factor = 0.5};
            double bp = busbw(p, model, MM_ALGO_RING, 32, S);
            ck_assert_msg(fabs(bp / b0 - 0.5) < 0.015, "perturbed: %g of %g GB/s", bp * 1e-9, b0 * 1e-9);
            double a0 = busbw(c, model, MM_ALGO_AUTO, 32, S), ap = busbw(p, model, MM_ALGO_AUTO, 32, S);
            ck_assert_msg(ap < 0.53 * a0, "auto: %g of %g GB/s", ap * 1e-9, a0 * 1e-9);
            free(p);
        }
        free(g);
    }
    free(c);
}
END_TEST

typedef struct done_log {
    mm_time *t;
} done_log;

static void on_done(mm_engine *eng, void *ctx, uint64_t arg)
{
    done_log *d = ctx;
    d->t[arg] = mm_engine_now(eng);
}

/* 32 transfers (every GPU of the 4 nodes under leaf 0 to its peer under
 * leaf 1) at once; finishing times in t[]. */
static void cross_leaf(const mm_cluster *c, mm_time *t)
{
    mm_engine *eng = mm_engine_alloc();
    mm_err err;
    mm_network *net = mm_network_alloc(c, eng, MM_NET_MODEL_FLOW, &err);
    ck_assert_ptr_nonnull(net);
    done_log d = {.t = t};
    for (int i = 0; i < 32; i++) {
        int g[2] = {i, i + 32};
        mm_coll_req req = {.kind = MM_COLL_SENDRECV, .gpus = g, .n = 2, .bytes = 256e6, .count = 1};
        ck_assert_int_eq(mm_network_start(net, &req, on_done, &d, (uint64_t)i, NULL, &err), 0);
    }
    mm_engine_run(eng);
    mm_network_free(net);
    mm_engine_free(eng);
}

/* A failed leaf-spine cable of the 2:1 fat-tree: routing avoids it (the
 * flows D-mod-k sent through it take the next spine), so the flows that
 * used it, and the ones they now share the detour with, slow down; every
 * other flow keeps its time to the nanosecond. */
START_TEST(failed_spine_link)
{
    mm_cluster *c = malloc(sizeof *c);
    *c = load("topologies/dgx-h100-fattree-2to1.yaml", 8);
    ck_assert_int_eq(c->nodes_per_leaf, 4);
    mm_topo t;
    mm_err err;
    ck_assert_int_eq(mm_topo_build(&t, c, &err), 0);
    int spine_of[32], links[MM_TOPO_MAX_PATH];
    for (int i = 0; i < 32; i++) {
        int k = mm_cluster_nic_of(c, i), n = mm_topo_path(&t, i, i + 32, k, k, links);
        spine_of[i] = -1;
        for (int j = 0; j < n; j++)
            for (int s = 0; s < c->spines; s++)
                if (links[j] == t.o_fabric + 2 * s) /* leaf 0 -> spine s */
                    spine_of[i] = s;
        ck_assert_int_ge(spine_of[i], 0);
    }
    mm_topo_free(&t);
    mm_time base[32], cut[32];
    cross_leaf(c, base);
    const int dead = spine_of[5], detour = (dead + 1) % c->spines;
    mm_perturb_entry entries[MM_PERTURB_MAX];
    c->pt.e = entries;
    c->pt.n = 1;
    c->pt.e[0] = (mm_perturb_entry){.kind = MM_PT_LINK, .n_leaves = 1, .leaves = {0}, .n_spines = 1,
                                    .spines = {dead}, .factor = 1, .failed = true};
    char key[32], msg[128];
    ck_assert_int_eq(mm_perturb_check(&c->pt, c, key, sizeof key, msg, sizeof msg), -1);
    cross_leaf(c, cut);
    int slowed = 0;
    for (int i = 0; i < 32; i++) {
        if (spine_of[i] == dead) {
            ck_assert_msg((double)cut[i] > 1.5 * (double)base[i], "flow %d via the dead link: %lld vs %lld ns", i, (long long)cut[i],
                          (long long)base[i]);
            slowed++;
        } else if (spine_of[i] == detour) {
            ck_assert(cut[i] > base[i]);
        } else {
            ck_assert_msg(cut[i] == base[i], "flow %d (spine %d) changed: %lld vs %lld", i, spine_of[i],
                          (long long)cut[i], (long long)base[i]);
        }
    }
    ck_assert_int_ge(slowed, 1);
    /* failing every uplink of a leaf is refused */
    c->pt.n = 0;
    for (int s = 0; s < c->spines && s < MM_PERTURB_MAX; s++)
        c->pt.e[c->pt.n++] = (mm_perturb_entry){.kind = MM_PT_LINK, .n_leaves = 1, .leaves = {1}, .n_spines = 1,
                                                .spines = {s}, .factor = 1, .failed = true};
    if (c->spines <= MM_PERTURB_MAX) {
        ck_assert_int_ge(mm_perturb_check(&c->pt, c, key, sizeof key, msg, sizeof msg), 0);
        ck_assert_str_eq(key, "failed");
    }
    free(c);
}
END_TEST

/* One GPU, one rank, no communication: an iteration is the sum of its ops'
 * times d_i X_i with X_i lognormal (mean 1, CV c) and the GPU's wait for
 * its first launch (a constant; the host is ahead after it), so its mean is sum d_i
 * and its sd c sqrt(sum d_i^2); the p99 is taken from 200,000 direct draws
 * of that sum.  Over 1,000 simulated iterations: mean within 4 standard
 * errors, sd within 10 %, p99 within 0.4 sd (the p99 of 1,000 samples has
 * a standard error of about 0.12 sd). */
START_TEST(jitter_spread)
{
#define ONE "model=models/megatron-gpt-1.7b.json", "cluster.topology=tests/data/perturb/one-gpu.yaml", \
            "cluster.nodes=1", "workload=text", "train.seq_len=2048", "parallel.vision=null", \
            "parallel.placement=pipeline", "parallel.llm={tp: 1, pp: 1, dp: 1}", "train.global_batch=2"
    mm_metrics base, jit;
    mm_sim_timeline tl;
    RUN(&base, &tl, ONE, "iterations=1");
    const double cv = 0.1;
    RUN(&jit, NULL, ONE, "iterations=1000", "perturb=[{kind: jitter, cv: 0.1}]");
    double *d = malloc(tl.graph.n_ops * sizeof *d);
    int n = 0;
    double sum = 0, sum2 = 0, comm = 0;
    for (uint32_t i = 0; i < tl.graph.n_ops; i++) {
        double s = (double)(tl.end[i] - tl.start[i]) * 1e-9;
        if (tl.graph.ops[i].coll >= 0 || mm_cat_is_comm(tl.graph.ops[i].cat)) {
            comm += s;
            continue;
        }
        d[n++] = s;
        sum += s;
        sum2 += s * s;
    }
    ck_assert_msg(comm < 1e-3 * sum, "communication %g s", comm);
    /* ... and the GPU's wait for its host (the step's first launch) */
    ck_assert_msg(base.exposed_host_s < 1e-3 * sum, "exposed host %g s", base.exposed_host_s);
    ck_assert_msg(fabs(base.iteration_time_s - sum - base.exposed_host_s) < 1e-6 * sum, "%g vs %g + %g",
                  base.iteration_time_s, sum, base.exposed_host_s);
    double sd = cv * sqrt(sum2);
    double *t = malloc(1000 * sizeof *t);
    for (int i = 0; i < 1000; i++)
        t[i] = jit.iters[i].time_s;
    double mean = gsl_stats_mean(t, 1, 1000), ssd = gsl_stats_sd(t, 1, 1000);
    gsl_sort(t, 1, 1000);
    double p99 = gsl_stats_quantile_from_sorted_data(t, 1, 1000, 0.99);
    /* direct draws of the sum */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 12345);
    const int N = 200000;
    double *ref = malloc((size_t)N * sizeof *ref), s2 = log1p(cv * cv);
    for (int k = 0; k < N; k++) {
        double x = 0;
        for (int i = 0; i < n; i++)
            x += d[i] * gsl_ran_lognormal(r, -0.5 * s2, sqrt(s2));
        ref[k] = x;
    }
    gsl_sort(ref, 1, (size_t)N);
    double ref99 = gsl_stats_quantile_from_sorted_data(ref, 1, (size_t)N, 0.99);
    ck_assert_msg(fabs(mean - sum) < 4 * sd / sqrt(1000.0), "mean %g vs %g (sd %g)", mean, sum, sd);
    ck_assert_msg(fabs(ssd / sd - 1) < 0.1, "sd %g vs %g", ssd, sd);
    ck_assert_msg(fabs(p99 - ref99) < 0.4 * sd, "p99 %g vs %g (sd %g)", p99, ref99, sd);
    /* the same seed gives the same numbers, bit for bit; another seed others */
    mm_metrics again, other;
    RUN(&again, NULL, ONE, "iterations=5", "perturb=[{kind: jitter, cv: 0.1}]");
    RUN(&other, NULL, ONE, "iterations=5", "seed=2", "perturb=[{kind: jitter, cv: 0.1}]");
    for (int i = 0; i < 5; i++) {
        ck_assert(again.iters[i].time_s == jit.iters[i].time_s);
        ck_assert(other.iters[i].time_s != jit.iters[i].time_s);
    }
    gsl_rng_free(r);
    free(ref);
    free(t);
    free(d);
    mm_metrics_free(&again);
    mm_metrics_free(&other);
    mm_metrics_free(&base);
    mm_metrics_free(&jit);
    mm_sim_timeline_free(&tl);
}
END_TEST

/* Uniform 1F1B (F = f, B = b on every stage, instantaneous transfers):
 * T = (m + p - 1)(f + b), and theory's critical path is micro-batch 0's
 * forward through every stage, the last stage's m forwards and m
 * backwards, and the last micro-batch's backward back to stage 0: one F and
 * one B on each other stage, 2(p - 1) pipeline sends between them.  (Every
 * stage is tight in the uniform case, so other paths of the same length
 * exist; ties go to the rank's own stream, critpath.c.  With transfers
 * that take time the path zigzags between neighbouring stages, as the
 * F(k) <- B(k-2) dependency of 1F1B makes it.) */
START_TEST(uniform_1f1b_path)
{
    const int p = 4, m = 8;
    const double f = 1e-3, b = 2e-3, x = 1e-12; /* rounds to 0 ns: instantaneous */
    mm_stage_cost st[4];
    for (int s = 0; s < p; s++)
        st[s] = (mm_stage_cost){.chunks = 1, .fwd_s = f, .bwd_s = b};
    mm_build_spec spec = {.schedule = MM_SCHEDULE_1F1B, .lay.tp = 1, .lay.pp = p, .lay.dp = 1, .lay.vpp = 1, .m = m,
                          .stages = st, .p2p_s = x, .p2p_bytes = 1};
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(&spec, &g, NULL), 0);
    mm_cluster *c = malloc(sizeof *c);
    *c = load("topologies/dgx-h100.yaml", 1);
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end), t1;
    mm_err err;
    ck_assert_int_eq(mm_exec_run(eng, &g, c, MM_EXEC_NET_ANALYTIC, start, end, &t1, &err), 0);
    double T = (m + p - 1) * (f + b);
    ck_assert_msg(fabs((double)t1 * 1e-9 - T) < 1e-8, "T %g vs %g", (double)t1 * 1e-9, T);
    mm_critpath cp;
    ck_assert_int_eq(mm_critpath_compute(&g, start, end, 0, t1, &cp), 0);
    int fwd[4] = {0}, bwd[4] = {0};
    double other = 0;
    for (int i = 0; i < cp.n; i++) {
        const mm_crit_entry *e = &cp.e[i];
        if (!strcmp(e->what, "fwd") && e->rank >= 0)
            fwd[e->rank] += e->ops;
        else if (!strcmp(e->what, "bwd") && e->rank >= 0)
            bwd[e->rank] += e->ops;
        else
            other += e->seconds;
    }
    ck_assert_int_eq(fwd[p - 1], m);
    ck_assert_int_eq(bwd[p - 1], m);
    for (int s = 0; s < p - 1; s++) {
        ck_assert_int_eq(fwd[s], 1);
        ck_assert_int_eq(bwd[s], 1);
    }
    ck_assert_msg(other < 1e-9, "%g s elsewhere", other);
    /* the rest of the path: the 2(p - 1) sends, of no duration (so listed
     * in path_ops, not as entries) */
    ck_assert_int_eq(cp.path_ops, 2 * m + 2 * (p - 1) + 2 * (p - 1));
    mm_critpath_free(&cp);
    free(start);
    free(end);
    free(c);
    mm_engine_free(eng);
    mm_graph_free(&g);
}
END_TEST

/* A checkpoint every 2 iterations adds its seconds to those iterations
 * alone, and shows on the critical path. */
START_TEST(stall_every)
{
    mm_metrics base, st;
    RUN(&base, NULL, SMALL, "parallel.llm={tp: 2, pp: 1, dp: 4}", "train.global_batch=8", "iterations=4");
    RUN(&st, NULL, SMALL, "parallel.llm={tp: 2, pp: 1, dp: 4}", "train.global_batch=8", "iterations=4",
        "perturb=[{kind: stall, every: 2, seconds: 0.5}]");
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol(st.iters[i].time_s - base.iters[i].time_s, i % 2 ? 0.5 : 0.0, 1e-12);
    int found = 0;
    for (int i = 0; i < st.crit.n; i++)
        found |= !strcmp(st.crit.e[i].what, "stall") && st.crit.e[i].seconds == 0.5;
    ck_assert(found);
    mm_metrics_free(&base);
    mm_metrics_free(&st);
}
END_TEST

/* HBM: a GPU with 10 % of its capacity makes the layout OOM; half the
 * bandwidth on every GPU slows the memory-bound kernels, not more than
 * everything. */
START_TEST(hbm)
{
    mm_metrics base, cap, bw;
    RUN(&base, NULL, SMALL, "parallel.llm={tp: 2, pp: 1, dp: 4}", "train.global_batch=8");
    RUN(&cap, NULL, SMALL, "parallel.llm={tp: 2, pp: 1, dp: 4}", "train.global_batch=8",
        "perturb=[{kind: hbm, gpus: [5], capacity: 0.1}]");
    RUN(&bw, NULL, SMALL, "parallel.llm={tp: 2, pp: 1, dp: 4}", "train.global_batch=8",
        "perturb=[{kind: hbm, bandwidth: 0.5}]");
    ck_assert(!base.oom);
    ck_assert_msg(base.peak_memory_gib + 2 > 0.1 * 80e9 / (1 << 30), "peak %g GiB", base.peak_memory_gib);
    ck_assert(cap.oom);
    ck_assert(bw.iteration_time_s > base.iteration_time_s * 1.01);
    ck_assert(bw.iteration_time_s < base.iteration_time_s * 2.0);
    mm_metrics_free(&base);
    mm_metrics_free(&cap);
    mm_metrics_free(&bw);
}
END_TEST

static void load_err(const char *path, const char *const *sets, int n, int stage, mm_err *err)
{
    mm_scenario sc;
    int rc = mm_scenario_load(&sc, path, sets, n, err);
    if (stage == 0) {
        ck_assert_int_eq(rc, -MM_EINPUT);
        return;
    }
    ck_assert_msg(rc == 0, "%s", err->msg);
    mm_sim *sim = malloc(sizeof *sim);
    rc = mm_sim_prepare(sim, &sc, err);
    free(sim);
    mm_scenario_free(&sc);
    ck_assert_int_eq(rc, -MM_EINPUT);
}

/* Bad perturbations: MM_EINPUT naming the file, the line and the key. */
START_TEST(bad_input)
{
    mm_err err;
    load_err("tests/data/perturb/bad-kind.yaml", NULL, 0, 0, &err);
    ck_assert_str_eq(err.file, "tests/data/perturb/bad-kind.yaml");
    ck_assert_int_eq(err.line, 9);
    ck_assert_str_eq(err.key, "perturb[1].kind");
    ck_assert_ptr_nonnull(strstr(err.msg, "slow_gpu"));
    load_err("tests/data/perturb/bad-gpu.yaml", NULL, 0, 1, &err);
    ck_assert_str_eq(err.file, "tests/data/perturb/bad-gpu.yaml");
    ck_assert_int_eq(err.line, 9);
    ck_assert_str_eq(err.key, "perturb[1].gpus");
    ck_assert_ptr_nonnull(strstr(err.msg, "GPU 8"));
    load_err("tests/data/perturb/bad-factor.yaml", NULL, 0, 0, &err);
    ck_assert_str_eq(err.file, "tests/data/perturb/bad-factor.yaml");
    ck_assert_int_eq(err.line, 11);
    ck_assert_str_eq(err.key, "perturb[1].factor");
    const char *const zero[] = {"perturb=[{kind: slow_gpu, gpus: [3], factor: 0}]"};
    load_err(NULL, zero, 1, 0, &err);
    ck_assert_str_eq(err.file, "--set");
    ck_assert_str_eq(err.key, "perturb[0].factor");
    const char *const dotted[] = {"perturb=[{kind: slow_gpu, gpus: [3], factor: 1.3}]", "perturb.0.factor=-2"};
    load_err(NULL, dotted, 2, 0, &err);
    ck_assert_str_eq(err.file, "--set");
    ck_assert_str_eq(err.key, "perturb[0].factor");
    const char *const unknown[] = {"perturb=[{kind: nic, nodes: [0], factor: 0.5, rails: [1]}]"};
    load_err(NULL, unknown, 1, 0, &err);
    ck_assert_str_eq(err.key, "perturb[0].rails");
    const char *const node[] = {"perturb=[{kind: nic, nodes: [7], factor: 0.5}]"};
    load_err(NULL, node, 1, 1, &err);
    ck_assert_str_eq(err.key, "perturb[0].nodes");
    const char *const analytic[] = {"network=analytic", "perturb=[{kind: rail, rails: [0], factor: 0.5}]"};
    load_err(NULL, analytic, 2, 1, &err);
    ck_assert_str_eq(err.key, "perturb[0].kind");
    const char *const group[] = {"perturb=[{kind: node_group, group: fast, nic_gbit_s: 800}]"};
    load_err(NULL, group, 1, 1, &err);
    ck_assert_str_eq(err.key, "perturb[0].group");
}
END_TEST

/* Every kind through --set, in the canonical text, which reads back to the
 * same text; a dotted key into a list entry changes that entry only. */
START_TEST(set_and_canonical)
{
    const char *const sets[] = {
        "perturb=[{kind: slow_gpu, gpus: [3], factor: 1.3}, {kind: jitter, fraction: 0.25, cv: 0.05},"
        " {kind: hbm, nodes: [1], bandwidth: 0.5, capacity: 0.75}, {kind: nic, nodes: [0], nics: [2], factor: 0.5},"
        " {kind: rail, rails: [1], latency_us: 5}, {kind: switch, spines: [0], factor: 0.5},"
        " {kind: link, leaf: 0, spine: 0, failed: true}, {kind: stall, every: 10, seconds: 30}]",
        "perturb.0.factor=1.5"};
    mm_scenario a, b;
    mm_err err;
    ck_assert_int_eq(mm_scenario_load(&a, NULL, sets, 2, &err), 0);
    ck_assert_int_eq(a.perturb.n, 8);
    ck_assert_double_eq(a.perturb.e[0].factor, 1.5);
    ck_assert(a.perturb.e[6].failed);
    size_t n = mm_scenario_canonical(&a, NULL, 0);
    char *text = malloc(n + 1);
    mm_scenario_canonical(&a, text, n + 1);
    ck_assert_ptr_nonnull(strstr(text, "kind: slow_gpu, gpus: [3], nodes: [], fraction: 0, factor: 1.5"));
    FILE *fp = fopen("tests/data/perturb/.canonical.yaml", "w");
    ck_assert_ptr_nonnull(fp);
    fputs(text, fp);
    fclose(fp);
    ck_assert_int_eq(mm_scenario_load(&b, "tests/data/perturb/.canonical.yaml", NULL, 0, &err), 0);
    remove("tests/data/perturb/.canonical.yaml");
    char *again = malloc(n + 1);
    ck_assert_uint_eq(mm_scenario_canonical(&b, again, n + 1), n);
    ck_assert_str_eq(text, again);
    /* unperturbed: an empty list, still in the text */
    mm_scenario_free(&b);
    ck_assert_int_eq(mm_scenario_load(&b, NULL, NULL, 0, &err), 0);
    size_t m = mm_scenario_canonical(&b, again, n + 1);
    ck_assert(m <= n);
    ck_assert_ptr_nonnull(strstr(again, "perturb: []"));
    free(text);
    free(again);
    mm_scenario_free(&a);
    mm_scenario_free(&b);
    /* and the whole scenario runs (network perturbations on the default 2 nodes) */
    mm_metrics mt;
    RUN(&mt, NULL, "iterations=1", "perturb=[{kind: slow_gpu, fraction: 0.25, factor: 1.2}, {kind: rail, rails: [1], "
                                   "factor: 0.5, latency_us: 5}, {kind: nic, nodes: [1], factor: 0.5}]");
    ck_assert(isfinite(mt.iteration_time_s) && mt.iteration_time_s > 0);
    mm_metrics_free(&mt);
}
END_TEST

static Suite *perturb_suite(void)
{
    Suite *s = suite_create("perturb");
    TCase *tc = tcase_create("perturb");
    tcase_add_checked_fixture(tc, NULL, mm_test_free_clusters);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, dp_straggler);
    tcase_add_test(tc, pp_straggler);
    tcase_add_test(tc, half_nics);
    tcase_add_test(tc, failed_spine_link);
    tcase_add_test(tc, jitter_spread);
    tcase_add_test(tc, uniform_1f1b_path);
    tcase_add_test(tc, stall_every);
    tcase_add_test(tc, hbm);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, set_and_canonical);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(perturb_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
