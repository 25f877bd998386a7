/* test_coexec.c - DHelix micro-batch co-execution (train.coexec dhelix;
 * Wang et al., arXiv 2411.15871): a pair's iteration time against the
 * closed form the executor's overlap model implies, the activations of
 * two micro-batches in flight per pair, and the keys it refuses.
 * Not for: TP overlap by side stream (test_sched_comm.c). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec/exec.h"
#include "hw/cluster.h"
#include "model/memory.h"
#include "parallel/build.h"
#include "scenario/sim.h"

/* One stage, one replica, tp 4, L layers: the makespan of one iteration
 * with the executor's compute slowdown beside overlapped traffic. */
static double makespan(const mm_build_spec *sp, double slowdown)
{
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(sp, &g, NULL), 0);
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("topologies/dgx-a100.yaml", 64, &c, &err), 0);
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end);
    mm_time t1;
    mm_exec_opts o = {.overlap_slowdown = slowdown};
    ck_assert_int_eq(mm_exec_run_opts(eng, &g, &c, MM_EXEC_NET_ANALYTIC, &o, start, end, &t1, &err), 0);
    /* the last op's end (t1 may be a paced op's stale end event) */
    mm_time last = 0;
    for (uint32_t i = 0; i < g.n_ops; i++)
        last = end[i] > last ? end[i] : last;
    free(start);
    free(end);
    mm_engine_free(eng);
    mm_graph_free(&g);
    mm_cluster_free(&c);
    return (double)last * 1e-9;
}

enum { L = 4 };

static mm_build_spec one_stage(mm_stage_cost *st, double tp_bytes)
{
    *st = (mm_stage_cost){.chunks = L, .fwd_s = 8e-3, .bwd_s = 16e-3, .opt_s = 1e-3};
    return (mm_build_spec){.schedule = MM_SCHEDULE_1F1B, .lay.tp = 4, .lay.pp = 1, .lay.dp = 1, .lay.vpp = 1,
                           .m = 2, .tp_bytes = tp_bytes, .tp_msgs_fwd = 2, .tp_msgs_bwd = 2, .stages = st};
}

/* Two micro-batches, L layers, forward X_F = F/L and backward X_B = B/L
 * per layer, one TP all-reduce of C per layer and pass (C < X: every
 * exchange fits beside the other strand's layer).  Megatron-LM style
 * (none): 2(F + B) + 4 L C + opt, every exchange on the compute stream.
 * DHelix: the 4L compute ops run back to back; each but the first runs
 * beside one strand exchange of C and loses d = C s / (1 + s) to it
 * (mm_overlap_delay), and the last exchange is exposed:
 * 2(F + B) + (4L - 1) d + C + opt.  C is measured from the baseline. */
START_TEST(pair_closed_form)
{
    mm_stage_cost st;
    mm_build_spec sp = one_stage(&st, 0);
    double bare = makespan(&sp, 0);
    ck_assert(fabs(bare - (2 * (8e-3 + 16e-3) + 1e-3)) < 1e-6);
    sp = one_stage(&st, 4e6);
    double none = makespan(&sp, 0);
    double C = (none - bare) / (4 * L);
    ck_assert_msg(C > 1e-5 && C < 8e-3 / L, "C = %g s", C); /* below X_F = 2 ms */
    sp.coexec = true;
    for (int i = 0; i < 3; i++) {
        double s = i * 0.2, d = mm_overlap_delay(C, s);
        double want = bare + (4 * L - 1) * d + C, got = makespan(&sp, s);
        ck_assert_msg(fabs(got - want) < 1e-6 * want + 2e-9 * 4 * L, "slowdown %.1f: %.9f s, closed form %.9f s (C %g)", s,
                      got, want, C);
        ck_assert(got < none);
    }
    /* no TP traffic: a pair is its two micro-batches' compute */
    sp.tp_bytes = 0;
    ck_assert(fabs(makespan(&sp, 0.2) - bare) < 1e-6);
}
END_TEST

/* An odd micro-batch count: the last runs alone, as Megatron-LM would:
 * three micro-batches cost a pair plus one blocking micro-batch (2 L C
 * exposed), whose first layer hides the pair's last exchange. */
START_TEST(odd_last_alone)
{
    mm_stage_cost st;
    mm_build_spec sp = one_stage(&st, 4e6);
    sp.m = 3;
    double none = makespan(&sp, 0);
    mm_stage_cost st0;
    mm_build_spec z = one_stage(&st0, 0);
    z.m = 3;
    double bare = makespan(&z, 0), C = (none - bare) / (6 * L);
    sp.coexec = true;
    double want = bare + 2 * L * C, got = makespan(&sp, 0);
    ck_assert_msg(fabs(got - want) < 1e-6 * want, "%.9f vs %.9f", got, want);
}
END_TEST

/* Memory: the schedule's units are pairs, each holding two micro-batches'
 * activations: 1F1B on pp 4 with 8 micro-batches keeps 4 units on stage
 * 0 (8 micro-batches), 1 on stage 3 (2); never more than m. */
START_TEST(two_in_flight)
{
    mm_mem_config c = {.lay = {.tp = 1, .pp = 4, .dp = 1, .cp = 1, .vpp = 1, .ep = 1},
                       .schedule = MM_MEM_1F1B, .micro_batches = 8};
    ck_assert(mm_mem_config_in_flight(&c, 0) == 4 && mm_mem_config_in_flight(&c, 3) == 1);
    c.coexec = true;
    ck_assert(mm_mem_config_in_flight(&c, 0) == 8 && mm_mem_config_in_flight(&c, 3) == 2);
    c.micro_batches = 3;
    ck_assert(mm_mem_config_in_flight(&c, 3) == 2 && mm_mem_config_in_flight(&c, 0) == 3);
    c.schedule = MM_MEM_GPIPE, c.micro_batches = 5;
    ck_assert(mm_mem_config_in_flight(&c, 0) == 5);
}
END_TEST

/* Pipelines and the other traffic: 1F1B over pairs on pp 2 x dp 4 with
 * TP all-reduces, EP all-to-alls on every layer (ep 4 over the replicas)
 * and the gradient buckets during the last backward: every op runs once,
 * all TP and EP traffic is on the side stream, each rank's compute stream
 * alternates the strands layer by layer (2k, 2k+1, 2k, ...), and the
 * iteration is faster than without co-execution. */
START_TEST(pipeline_pairs)
{
    mm_stage_cost st[2];
    for (int i = 0; i < 2; i++)
        st[i] = (mm_stage_cost){.chunks = 4, .moe_chunks = 4, .fwd_s = 4e-3, .bwd_s = 8e-3, .grad_bytes = 400e6,
                                .opt_s = 1e-3};
    mm_build_spec sp = {.schedule = MM_SCHEDULE_1F1B, .lay = {.tp = 4, .pp = 2, .dp = 4, .vpp = 1, .cp = 1, .ep = 4},
                        .m = 4, .tp_bytes = 8e6, .tp_msgs_fwd = 2, .tp_msgs_bwd = 2, .p2p_bytes = 16e6,
                        .ep_bytes = 4e6, .overlap_grad_reduce = true, .bucket_bytes = 100e6, .stages = st};
    double none = makespan(&sp, 0.189);
    sp.coexec = true;
    double pair = makespan(&sp, 0.189);
    ck_assert_msg(pair < none, "%.6f vs %.6f", pair, none);
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(&sp, &g, NULL), 0);
    int tp = 0, ep = 0, side = 0, last_mb = -1, last_layer = -1, alternations = 0;
    for (uint32_t i = 0; i < g.n_ops; i++) {
        const mm_op *o = &g.ops[i];
        tp += o->cat == MM_CAT_TP, ep += o->cat == MM_CAT_EP;
        side += (o->cat == MM_CAT_TP || o->cat == MM_CAT_EP) && o->stream == MM_STREAM_SIDE;
        if (o->rank == 0 && o->stream == MM_STREAM_COMPUTE && (o->cat == MM_CAT_FWD || o->cat == MM_CAT_BWD)) {
            if (last_mb >= 0 && o->layer == last_layer && o->mb == last_mb + 1 && o->mb % 2 == 1)
                alternations++;
            last_mb = o->mb, last_layer = o->layer;
        }
    }
    /* 8 ranks x 4 micro-batches x 2 passes x 4 layers of each */
    ck_assert_int_eq(tp, 8 * 4 * 2 * 4);
    ck_assert_int_eq(ep, 8 * 4 * 2 * 4);
    ck_assert_int_eq(side, tp + ep);
    /* rank 0: 2 pairs x 2 passes x 4 layers, the second strand right behind the first */
    ck_assert_int_eq(alternations, 2 * 2 * 4);
    mm_graph_free(&g);
}
END_TEST

static mm_scenario scn;

static int load(const char *const *sets, int n, mm_sim *sim, mm_err *err)
{
    mm_scenario_free(&scn);
    int rc = mm_scenario_load(&scn, NULL, sets, n, err);
    if (rc)
        memset(&scn, 0, sizeof scn);
    return rc ? rc : mm_sim_prepare(sim, &scn, err);
}

/* Bad input: nothing to hide (tp 1, no cp or ep), one micro-batch,
 * tp_comm_overlap, ZeRO-3, the interleaved schedule and an unknown value
 * are refused with the key; a TP layout with micro-batches to pair runs,
 * and its activations are two micro-batches' */
START_TEST(refused)
{
    mm_sim sim;
    mm_err err;
#define BASE "model=models/llama-2-7b.json", "workload=text", "parallel.vision=null", "cluster.nodes=1", \
             "parallel.llm.pp=1"
    const char *tp1[] = {BASE, "parallel.llm.tp=1", "parallel.llm.dp=8", "train.global_batch=16",
                         "train.coexec=dhelix"};
    const char *one[] = {BASE, "parallel.llm.tp=8", "parallel.llm.dp=1", "train.global_batch=1",
                         "train.coexec=dhelix"};
    const char *ovl[] = {BASE, "parallel.llm.tp=8", "parallel.llm.dp=1", "train.global_batch=4",
                         "train.tp_comm_overlap=true", "train.coexec=dhelix"};
    const char *z3[] = {BASE, "parallel.llm.tp=8", "parallel.llm.dp=1", "train.global_batch=4", "train.zero=3",
                        "train.coexec=dhelix"};
    const char *bad[] = {BASE, "train.coexec=helix"};
    const char *const *cases[] = {tp1, one, ovl, z3, bad};
    int ns[] = {9, 9, 10, 10, 6};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(load(cases[i], ns[i], &sim, &err), -MM_EINPUT);
        ck_assert_msg(!strcmp(err.key, "train.coexec"), "case %d: %s: %s", i, err.key, err.msg);
        ck_assert_str_eq(err.file, "--set");
    }
    const char *ok[] = {BASE, "parallel.llm.tp=8", "parallel.llm.dp=1", "train.global_batch=4",
                        "train.coexec=dhelix"};
    ck_assert_msg(load(ok, 9, &sim, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
    mm_scenario_free(&scn);
#undef BASE
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coexec");
    TCase *t = tcase_create("coexec");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, pair_closed_form);
    tcase_add_test(t, odd_last_alone);
    tcase_add_test(t, two_in_flight);
    tcase_add_test(t, pipeline_pairs);
    tcase_add_test(t, refused);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
