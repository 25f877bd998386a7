/* test_graph.c - the op graph's storage (parallel/graph.h): a counting
 * graph counts what a build adds without storing it, a graph reserved from
 * those counts never grows, and every iteration's graph (LLM only, a
 * colocated, a pipeline-placed and a disjoint encoder, ZeRO-3, the
 * interleaved schedule) has arrays of exactly its size. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/graph.h"
#include "scenario/sim.h"
#include "exec/run.h"

/* The same adds into any graph: 3 ranks, 5 ops, 3 collectives (the last
 * two over the same pair, stored once), 4 edges. */
static void add_some(mm_graph *g)
{
    int gp[4] = {0, 1, 2, 3};
    for (int r = 0; r < 3; r++)
        ck_assert_int_eq(mm_graph_rank_gpus(g, r, gp + r, r == 2 ? 2 : 1), 0);
    ck_assert_int_eq(mm_graph_add_coll(g, MM_COLL_ALLREDUCE, 2, 1, 1e6, gp, 2), 0);
    ck_assert_int_eq(mm_graph_add_coll(g, MM_COLL_SENDRECV, 2, 1, 1e3, gp + 1, 2), 1);
    int again[2] = {1, 2};
    ck_assert_int_eq(mm_graph_add_coll(g, MM_COLL_ALLREDUCE, 1, 1, 5e3, again, 2), 2);
    for (int i = 0; i < 5; i++) {
        mm_op op = {.rank = i % 3, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .coll = i < 2 ? i : -1,
                    .dur_s = 1e-3 * i};
        ck_assert_int_eq(mm_graph_add_op(g, &op), i);
    }
    for (uint32_t i = 0; i + 1 < 5; i++)
        ck_assert_int_eq(mm_graph_dep(g, i, i + 1), 0);
    mm_graph_set_module(g, 4, 1);
    ck_assert_int_eq(mm_graph_finish(g), 0);
}

START_TEST(counting_then_reserved)
{
    mm_graph c, g;
    ck_assert_int_eq(mm_graph_init_counting(&c, 3), 0);
    add_some(&c);
    mm_graph_size sz = mm_graph_size_of(&c);
    ck_assert_uint_eq(sz.ops, 5);
    ck_assert_uint_eq(sz.colls, 3);
    ck_assert_uint_eq(sz.gpus, 4); /* the repeated pair is not stored again */
    ck_assert_uint_eq(sz.edges, 4);
    ck_assert_uint_eq(sz.rank_gpus, 4);
    ck_assert_ptr_null(c.ops); /* nothing stored */
    ck_assert_ptr_null(c.succ);
    mm_graph_free(&c);

    ck_assert_int_eq(mm_graph_init(&g, 3), 0);
    ck_assert_int_eq(mm_graph_reserve(&g, &sz), 0);
    mm_op *ops = g.ops;
    add_some(&g);
    ck_assert_ptr_eq(g.ops, ops); /* never moved: no growth */
    ck_assert_uint_eq(g.cap_ops, 6);
    ck_assert_uint_eq(g.cap_colls, 4);
    ck_assert_uint_eq(g.cap_gpus, 5);
    ck_assert_uint_eq(g.cap_edges, 5);
    mm_graph_size got = mm_graph_size_of(&g);
    ck_assert(memcmp(&got, &sz, sizeof sz) == 0);
    ck_assert_int_eq(g.ops[4].module, 1);
    ck_assert_uint_eq(g.colls[2].gpu_off, g.colls[1].gpu_off);
    ck_assert_int_eq(g.gpus[g.colls[2].gpu_off + 1], 2);
    ck_assert_int_eq(g.ops[3].ndeps, 1);
    ck_assert_uint_eq(g.succ[g.ops[2].succ_off], 3);
    ck_assert_int_eq(g.rank_gpus[g.rank_gpu_off[2] + 1], 3);
    mm_graph_free(&g);
}
END_TEST

/* One iteration of the scenario with its timeline: its graph. */
static void run_graph(const char *const *sets, int n, mm_sim_timeline *tl)
{
    mm_scenario sc;
    mm_sim sim;
    mm_err err;
    mm_metrics m;
    const char *all[16] = {"iterations=1", "network=analytic"};
    int k = 2;
    for (int i = 0; i < n && k < 16; i++)
        all[k++] = sets[i];
    int rc = mm_scenario_load(&sc, NULL, all, k, &err);
    ck_assert_msg(rc == 0, "%s: %s", err.key, err.msg);
    rc = mm_sim_prepare(&sim, &sc, &err);
    ck_assert_msg(rc == 0, "%s: %s", err.key, err.msg);
    rc = mm_sim_run(&sim, &m, tl, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert(!m.oom);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
    mm_scenario_free(&sc);
}

START_TEST(iteration_graphs_exactly_sized)
{
    static const char *const cases[][8] = {
        {"model=models/llama-2-7b.json", "cluster.nodes=2", "workload=text", "train.global_batch=64",
         "parallel.llm={tp: 4, pp: 2, dp: 2}", NULL},
        {"model=models/llama-2-7b.json", "cluster.nodes=2", "workload=text", "train.global_batch=64",
         "parallel.llm={tp: 2, pp: 2, dp: 4, vpp: 2, zero: 3}", "train.schedule=interleaved", NULL},
        {NULL}, /* the built-in default: colocated encoder */
        {"model=models/llava-ov-qwen2.5-72b.yaml", "cluster.nodes=9", "parallel.placement=pipeline",
         "parallel.llm={tp: 8, pp: 8, dp: 1}", "parallel.vision={tp: 1, pp: 1, dp: 8}", "train.global_batch=16", NULL},
        {"model=models/llava-ov-qwen2.5-72b.yaml", "cluster.nodes=9", "parallel.placement=disjoint",
         "parallel.llm={tp: 8, pp: 8, dp: 1}", "parallel.vision={tp: 1, pp: 1, dp: 8}", "train.global_batch=16", NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int n = 0;
        while (n < 8 && cases[c][n])
            n++;
        mm_sim_timeline tl;
        run_graph(cases[c], n, &tl);
        const mm_graph *g = &tl.graph;
        ck_assert_uint_gt(g->n_ops, 100);
        /* the build counted, then allocated once: room for exactly what it holds (+1) */
        ck_assert_uint_eq(g->cap_ops, g->n_ops + 1);
        ck_assert_uint_eq(g->cap_colls, g->n_colls + 1);
        ck_assert_uint_eq(g->cap_gpus, g->n_gpus + 1);
        ck_assert_uint_eq(g->cap_edges, g->n_edges + 1);
        /* the graph itself, per op (ops, collectives, members, edges,
         * successors, streams): well under the 1 KiB per op */
        double bytes = (double)g->cap_ops * sizeof *g->ops + (double)g->cap_colls * sizeof *g->colls +
                       (double)g->cap_gpus * sizeof *g->gpus + (double)g->cap_edges * 2 * sizeof *g->edges +
                       (double)g->n_edges * sizeof *g->succ + (double)g->n_ops * sizeof *g->stream_ops;
        ck_assert_double_lt(bytes / g->n_ops, 256);
        mm_sim_timeline_free(&tl);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, counting_then_reserved);
    tcase_add_test(tc, iteration_graphs_exactly_sized);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
