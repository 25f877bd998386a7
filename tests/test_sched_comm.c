/* test_sched_comm.c - the communication in an iteration's graph: sequence
 * parallelism's bytes, TP and gradient-reduce overlap, ZeRO-3's
 * collectives (FSDP2 on a pipeline gathers once and keeps the parameters,
 * under every schedule), CP and EP traffic, and the rank order of the
 * parallel dimensions.
 * Not for: the schedules' bubbles (test_sched.c), encoder placements
 * (test_placement.c). */
#include "sched_common.h"

static int count_cat(const mm_build_spec *sp, int cat, int stream)
{
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(sp, &g, NULL), 0);
    int n = 0;
    for (uint32_t i = 0; i < g.n_ops; i++)
        n += g.ops[i].cat == cat && (stream < 0 || g.ops[i].stream == stream);
    mm_graph_free(&g);
    return n;
}

/* With the analytic model (nccl-tests' bus factors), an all-gather plus a
 * reduce-scatter of S costs what an all-reduce of S costs, so sequence
 * parallelism changes the kind of TP traffic but not the time. */
START_TEST(sequence_parallel_same_bytes)
{
    mm_stage_cost st[2];
    mm_build_spec sp = comm_spec(st);
    run_result a = run_spec(&sp);
    sp.sp = true;
    run_result b = run_spec(&sp);
    ck_assert_msg(fabs(a.time_s - b.time_s) < 1e-6 * a.time_s, "%.9f vs %.9f", a.time_s, b.time_s);
    ck_assert(b.all_once && b.eager);
    /* 8 ranks x 4 layers x 4 micro-batches x 2 passes x (gather + scatter) */
    ck_assert_int_eq(count_cat(&sp, MM_CAT_TP, MM_STREAM_COMPUTE), 8 * 4 * 4 * 2 * 2);
}
END_TEST

/* tp_comm_overlap: a layer takes max(compute, communication) instead of
 * their sum; here compute is longer, so TP traffic disappears from the
 * iteration time. */
START_TEST(tp_overlap_hides_tp)
{
    mm_stage_cost st[2];
    mm_build_spec sp = comm_spec(st);
    run_result blocking = run_spec(&sp);
    sp.tp_overlap = true;
    run_result over = run_spec(&sp);
    sp.tp_bytes = 0;
    run_result none = run_spec(&sp);
    ck_assert(blocking.time_s > none.time_s * 1.001);
    ck_assert_msg(fabs(over.time_s - none.time_s) < 1e-9, "%.9f vs %.9f", over.time_s, none.time_s);
    ck_assert(over.all_once && over.eager);
}
END_TEST

/* overlap_grad_reduce: buckets leave during the last backward, so at most
 * the last bucket's reduction stays exposed. */
START_TEST(grad_reduce_overlap)
{
    mm_stage_cost st[2];
    mm_build_spec sp = comm_spec(st);
    run_result plain = run_spec(&sp);
    sp.overlap_grad_reduce = true;
    sp.bucket_bytes = 100e6; /* one layer per bucket */
    run_result over = run_spec(&sp);
    ck_assert(over.all_once && over.eager);
    ck_assert_int_eq(count_cat(&sp, MM_CAT_DP, MM_STREAM_DP), 8 * 4);
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("topologies/dgx-a100.yaml", 64, &c, &err), 0);
    int g4[4] = {0, 4, 8, 12};
    double whole = mm_net_analytic_time(&c, MM_COLL_ALLREDUCE, g4, 4, 400e6);
    double bucket = mm_net_analytic_time(&c, MM_COLL_ALLREDUCE, g4, 4, 100e6);
    mm_cluster_free(&c);
    /* plain: the whole reduction follows the last backward; overlapped:
     * the first bucket leaves once the last backward's first layer has
     * computed (2 ms a layer, plus its TP all-reduces), so the other three
     * layers hide at least 6 ms of reduction, and at most all but the last
     * bucket can hide */
    double saved = plain.time_s - over.time_s;
    ck_assert_msg(saved >= 6e-3 && saved <= whole - bucket + 1e-9, "saved %.6f whole %.6f bucket %.6f", saved,
                  whole, bucket);
    /* distributed optimizer: reduce-scatter buckets, then a parameter
     * all-gather; overlapping the gather moves it to the iteration start */
    sp.zero = 1;
    sp.overlap_param_gather = true;
    run_result z1 = run_spec(&sp);
    ck_assert(z1.all_once && z1.eager);
    ck_assert_int_eq(count_cat(&sp, MM_CAT_DP, MM_STREAM_DP), 8 * 4 * 2);
}
END_TEST

/* ZeRO-3: every layer's parameters gathered before each forward and
 * backward of every micro-batch, gradients scattered after each backward. */
START_TEST(zero3_collectives)
{
    mm_stage_cost st[2];
    mm_build_spec sp = comm_spec(st);
    sp.zero = 3;
    sp.overlap_grad_reduce = true; /* ZeRO-3's default (mm_framework_overlap); false blocks the compute stream */
    /* per rank: 4 layers x 4 micro-batches x (gather F, gather B, scatter) */
    ck_assert_int_eq(count_cat(&sp, MM_CAT_DP, MM_STREAM_DP), 8 * 4 * 4 * 3);
    run_result r = run_spec(&sp);
    ck_assert(r.all_once && r.eager);
    sp.zero = 0;
    run_result z0 = run_spec(&sp);
    ck_assert(r.time_s > z0.time_s);
}
END_TEST

START_TEST(cp_and_ep_traffic)
{
    mm_stage_cost st[2];
    mm_build_spec sp = comm_spec(st);
    sp.lay.tp = 2;
    sp.lay.cp = 2;
    sp.cp_ring = true;
    sp.cp_bytes = 4e6;
    /* ring attention: one side op per layer and pass */
    ck_assert_int_eq(count_cat(&sp, MM_CAT_CP, MM_STREAM_SIDE), 8 * 4 * 4 * 2);
    run_result r = run_spec(&sp);
    ck_assert(r.all_once && r.eager);
    sp.cp_ring = false;
    ck_assert_int_eq(count_cat(&sp, MM_CAT_CP, MM_STREAM_COMPUTE), 8 * 4 * 4 * 2);
    sp.lay.cp = 1;
    sp.lay.ep = 2;
    sp.ep_bytes = 8e6;
    st[0].moe_chunks = st[1].moe_chunks = 4;
    ck_assert_int_eq(count_cat(&sp, MM_CAT_EP, MM_STREAM_COMPUTE), 8 * 4 * 4 * 2);
    r = run_spec(&sp);
    ck_assert(r.all_once && r.eager);
    sp.lay.ep = 3; /* must fold into dp x tp (gcd(3, dp 4) = 1 replica x 3 TP ranks: tp 2 does not take 3) */
    mm_graph g;
    mm_err e;
    mm_err_clear(&e);
    ck_assert_int_eq(mm_build_iteration(&sp, &g, &e), -1);
    ck_assert_int_eq(e.code, MM_EINTERNAL); /* the message names the field */
    ck_assert_msg(strstr(e.msg, "ep 3 must fold into dp"), "%s", e.msg);
}
END_TEST

START_TEST(placement_order)
{
    int o[MM_DIM_COUNT];
    ck_assert_int_eq(mm_build_parse_order("tp-cp-ep-dp-pp", o), 0);
    ck_assert(o[0] == MM_DIM_TP && o[1] == MM_DIM_CP && o[2] == MM_DIM_DP && o[3] == MM_DIM_PP);
    ck_assert_int_eq(mm_build_parse_order("tp-pp-dp-cp", o), 0);
    ck_assert_int_eq(mm_build_parse_order("tp-ep-cp-dp-pp", o), -1);
    ck_assert_int_eq(mm_build_parse_order("tp-tp-dp-pp", o), -1);
    ck_assert_int_eq(mm_build_parse_order("tp-cp-dp", o), -1);
    ck_assert_int_eq(mm_build_parse_order("tp-cp-dp-pp-xx", o), -1);
    mm_build_spec sp = {.lay.tp = 4, .lay.cp = 2, .lay.dp = 3, .lay.pp = 2};
    ck_assert_int_eq(mm_build_gpu(&sp, 1, 1, 2, 1), 1 + 4 * (1 + 2 * (2 + 3 * 1)));
    ck_assert_int_eq(mm_build_parse_order("dp-tp-cp-pp", sp.order), 0);
    ck_assert_int_eq(mm_build_gpu(&sp, 1, 1, 2, 1), 2 + 3 * (1 + 4 * (1 + 2 * 1)));
}
END_TEST

/* Llama-2-7B on one DGX H100 (8 GPUs), the analytic network, fsdp ZeRO-3,
 * 4 micro-batches per replica, `framework` and `llm` (a parallel.llm
 * value) given. */
static void prepare_z3(mm_sim *sim, const char *framework, const char *llm)
{
    char fw[64], lay[96];
    snprintf(fw, sizeof fw, "train.framework=%s", framework);
    snprintf(lay, sizeof lay, "parallel.llm=%s", llm);
    const char *sets[] = {"model=models/llama-2-7b.json", "workload=text", "parallel.vision=null", "cluster.nodes=1",
                          "cluster.topology=topologies/dgx-h100.yaml", "network=analytic", "train.zero=3", fw, lay,
                          strstr(llm, "pp: 2") ? "train.global_batch=16" : "train.global_batch=32"};
    static mm_scenario sc;
    mm_err err;
    mm_scenario_free(&sc);
    ck_assert_msg(mm_scenario_load(&sc, NULL, sets, 10, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_msg(mm_sim_prepare(sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_int_eq(sim->micro_batches, 4);
}

/* rank's DP all-gathers and reduce-scatters in the executed graph, with
 * their bytes (each collective's count x bytes) */
static void count_z3(const mm_graph *g, int rank, int *ag, int *rs, double *ag_bytes, double *rs_bytes)
{
    *ag = *rs = 0;
    *ag_bytes = *rs_bytes = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        if (op->rank != rank || op->cat != MM_CAT_DP || op->coll < 0)
            continue;
        const mm_coll *cl = &g->colls[op->coll];
        if (cl->kind == MM_COLL_ALLGATHER)
            ++*ag, *ag_bytes += cl->bytes * cl->count;
        else if (cl->kind == MM_COLL_REDUCESCATTER)
            ++*rs, *rs_bytes += cl->bytes * cl->count;
    }
}

/* fsdp ZeRO-3 on a pipeline (pp 2, dp 4, 4 micro-batches): torchtitan keeps
 * the blocks gathered between micro-batches (reshard_after_forward False
 * under PP) and torch's PipelineStage reduce-scatters once after the last
 * backward, so every rank of either stage gathers each of its 16 layers
 * once (the first forward) and reduce-scatters each once: 16 and 16 per
 * iteration, the stage's whole parameters and gradients once (1e-9), not
 * 2 m L = 128 and m L = 64.  At pp 1 (dp 8) the count per micro-batch
 * stays: 32 layers x 4 micro-batches x 2 gathers, x 1 reduce-scatter.
 * hf-deepspeed ZeRO-3 at pp 2 keeps gathering every pass (its pipeline
 * engine has no ZeRO-3: nothing to follow).  On the pipeline the
 * reduce-scatters follow the last backward, so stage 0's 16 (and the
 * first layer's gather) stay exposed: the DP ops on the critical path take
 * 16 RS(g/16) + AG(p/16) (1e-6), and the pre-score's DP term
 * counts the same 16 reduce-scatters in full (at least 16 RS(g/16), at
 * most that plus AG(p)). */
START_TEST(fsdp_zero3_pipeline_gathers_once)
{
    static const struct {
        const char *fw, *llm;
        int layers, ag, rs; /* per rank of either stage, from the mechanism (one
                               op a layer and pass, of z3_gathers collectives) */
    } cases[] = {
        {"fsdp", "{tp: 1, pp: 2, dp: 4}", 16, 16, 16},
        {"fsdp", "{tp: 1, pp: 1, dp: 8}", 32, 32 * 4 * 2, 32 * 4},
        {"hf-deepspeed", "{tp: 1, pp: 2, dp: 4}", 16, 16 * 4 * 2, 16 * 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_sim sim = {0};
        prepare_z3(&sim, cases[i].fw, cases[i].llm);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_build_spec *sp = &c.spec;
        bool once = i == 0;
        ck_assert_msg(sp->z3_once == once, "case %zu", i);
        int L = cases[i].layers;
        ck_assert_int_eq(c.stages[0].chunks, L);
        /* the counting rule the pre-score shares */
        ck_assert_int_eq(mm_build_z3_gather_passes(sp), once ? 1 : 2 * sp->m);
        ck_assert_int_eq(mm_build_grad_syncs(sp), once ? 1 : sp->m);
        double grad = c.stages[0].grad_bytes, params = c.stages[0].param_bytes;
        mm_metrics m;
        mm_sim_timeline tl;
        ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
        for (int s = 0; s < sp->lay.pp; s++) {
            int ag, rs;
            double agb, rsb;
            count_z3(&tl.graph, s * sp->lay.dp, &ag, &rs, &agb, &rsb);
            ck_assert_msg(ag == cases[i].ag && rs == cases[i].rs, "case %zu stage %d: %d gathers, %d scatters", i, s,
                          ag, rs);
            double g = c.stages[s].grad_bytes, p = c.stages[s].param_bytes;
            double passes = (double)cases[i].ag / L, syncs = (double)cases[i].rs / L;
            ck_assert_msg(fabs(agb - passes * p) < 1e-9 * passes * p, "case %zu: gathered %g B", i, agb);
            ck_assert_msg(fabs(rsb - syncs * g) < 1e-9 * syncs * g, "case %zu: scattered %g B", i, rsb);
        }
        if (once) {
            int g4[4] = {0, 1, 2, 3};
            double rs1 = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g4, 4, grad / L);
            double ag1 = mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g4, 4, params / L);
            double want = L * rs1 + ag1, dp = 0;
            for (int k = 0; k < m.crit.n; k++)
                if (!strcmp(m.crit.e[k].what, "dp"))
                    dp += m.crit.e[k].seconds;
            ck_assert_msg(fabs(dp - want) < 1e-6 * want, "DP on the critical path %g s, formula %g s", dp, want);
            mm_metrics e;
            ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
            double agall = mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g4, 4, params);
            ck_assert_msg(e.exposed_comm_s >= L * rs1 * (1 - 1e-9) && e.exposed_comm_s <= L * rs1 + agall,
                          "pre-score DP %g s, %d RS %g s, AG %g s", e.exposed_comm_s, L, L * rs1, agall);
            mm_metrics_free(&e);
        }
        mm_sim_timeline_free(&tl);
        mm_metrics_free(&m);
        mm_sim_costs_free(&c);
        mm_sim_free(&sim);
    }
}
END_TEST

/* The memory of fsdp ZeRO-3 on a pipeline: each GPU holds its stage's
 * gathered 16-bit parameters (2 B) and unsharded fp32 gradient
 * accumulators (torchtitan's reduce dtype, 4 B) whole, where ZeRO-3
 * elsewhere holds 1/dp of each: the difference is 6 P (1 - 1/dp) for the
 * stage's P parameters (stage 0: 16 layers and the embedding; stage 1: 16
 * layers, the final norm and the head), to 1e-6 GiB.  At pp 1 nothing is
 * kept (the profile's key has no effect). */
START_TEST(fsdp_zero3_pipeline_keeps_parameters)
{
    mm_sim sim = {0};
    prepare_z3(&sim, "fsdp", "{tp: 1, pp: 2, dp: 4}");
    mm_mem_config cfg;
    mm_sim_llm_mem_config(&sim, &cfg);
    ck_assert(cfg.z3_keep && cfg.grad_bytes == 4);
    mm_sim_memory kept, sharded;
    mm_err err;
    ck_assert_int_eq(mm_sim_stage_memory(&sim, &kept, &err), 0);
    sim.fw->z3_keep_under_pp = false; /* as if the blocks were resharded */
    ck_assert_int_eq(mm_sim_stage_memory(&sim, &sharded, &err), 0);
    const mm_llm *m = sim.llm;
    double layer = (double)mm_llm_layer_params(m);
    double P[2] = {16 * layer + (double)mm_llm_embedding_params(m),
                   16 * layer + (double)mm_llm_final_norm_params(m) + (double)mm_llm_head_params(m)};
    for (int s = 0; s < 2; s++) {
        double want = (MM_BYTES_WEIGHT + 4.0) * P[s] * (1 - 1.0 / 4) / MM_GIB;
        double got = kept.states_gib[s] - sharded.states_gib[s]; /* the states (the sharded run's gathered
                                                                  * layers are a transient of its own) */
        ck_assert_msg(fabs(got - want) < 1e-6, "stage %d: %.9f GiB more, formula %.9f GiB", s, got, want);
    }
    mm_sim_memory_free(&kept);
    mm_sim_memory_free(&sharded);
    mm_sim_free(&sim);
    prepare_z3(&sim, "fsdp", "{tp: 1, pp: 1, dp: 8}");
    mm_sim_llm_mem_config(&sim, &cfg);
    ck_assert(!cfg.z3_keep);
    mm_sim_free(&sim);
}
END_TEST

/* z3_once under every schedule (comm_spec: pp 2, dp 4, 4 layers, 4
 * micro-batches; interleaved with 2 chunks of 2 layers): each rank gathers
 * and reduce-scatters each of its layers once, the reduce-scatters after
 * the chunk's last backward (the ZB-H1 W pass), and every op runs once,
 * as soon as it can; the DP stream of the last backward's chunk carries
 * the whole stage's gradients. */
START_TEST(z3_once_every_schedule)
{
    static const mm_schedule kinds[] = {MM_SCHEDULE_GPIPE, MM_SCHEDULE_1F1B, MM_SCHEDULE_INTERLEAVED,
                                        MM_SCHEDULE_ZB_H1};
    for (int i = 0; i < 4; i++) {
        mm_stage_cost st[4];
        mm_build_spec sp = comm_spec(st);
        sp.schedule = kinds[i];
        if (kinds[i] == MM_SCHEDULE_INTERLEAVED) {
            sp.lay.vpp = 2;
            for (int v = 0; v < 4; v++)
                st[v] = (mm_stage_cost){.chunks = 2, .fwd_s = 2e-3, .bwd_s = 4e-3, .grad_bytes = 200e6,
                                        .opt_s = 0.5e-3};
        }
        if (kinds[i] == MM_SCHEDULE_ZB_H1)
            for (int v = 0; v < 2; v++)
                st[v].wgrad_s = 3e-3;
        sp.zero = 3;
        sp.overlap_grad_reduce = true;
        sp.z3_once = true;
        ck_assert_int_eq(mm_build_z3_gather_passes(&sp), 1);
        ck_assert_int_eq(mm_build_grad_syncs(&sp), 1);
        /* 8 ranks x 4 layers x (1 gather + 1 reduce-scatter) */
        ck_assert_int_eq(count_cat(&sp, MM_CAT_DP, MM_STREAM_DP), 8 * 4 * 2);
        mm_graph g;
        ck_assert_int_eq(mm_build_iteration(&sp, &g, NULL), 0);
        for (uint32_t k = 0; k < g.n_ops; k++) /* a scatter waits for micro-batch m-1 */
            if (g.ops[k].cat == MM_CAT_DP && g.ops[k].coll >= 0 &&
                g.colls[g.ops[k].coll].kind == MM_COLL_REDUCESCATTER)
                ck_assert_int_eq(g.ops[k].mb, sp.m - 1);
        mm_graph_free(&g);
        run_result r = run_spec(&sp);
        ck_assert_msg(r.all_once && r.eager, "schedule %d", i);
    }
}
END_TEST

/* zero3.keep_gathered_under_pp by profile (fsdp alone keeps the blocks
 * gathered; DeepSpeed's pipeline engine has no ZeRO-3, Megatron-FSDP
 * gathers every micro-batch), mm_framework_z3_keep_gathered only at
 * ZeRO-3 on pp > 1, and a bad or missing value refused naming the file,
 * its line and the key. */
START_TEST(keep_gathered_is_a_profile_key)
{
    static const char *const names[] = {"megatron-core", "megatron-local", "hf-deepspeed", "fsdp"};
    for (int i = 0; i < 4; i++) {
        char path[64];
        snprintf(path, sizeof path, "frameworks/%s.yaml", names[i]);
        mm_framework fw;
        mm_err err;
        ck_assert_msg(mm_framework_load(path, &fw, &err) == 0, "%s: %s", path, err.msg);
        ck_assert_msg(fw.z3_keep_under_pp == (i == 3), "%s", names[i]);
        for (int zero = 0; zero <= 3; zero++)
            for (int pp = 1; pp <= 2; pp++)
                ck_assert(mm_framework_z3_keep_gathered(&fw, zero, pp) == (i == 3 && zero == 3 && pp == 2));
    }
    static const char *const edits[] = {"  keep_gathered_under_pp: sometimes\n", "\n"};
    for (int k = 0; k < 2; k++) {
        FILE *in = fopen("frameworks/fsdp.yaml", "r");
        ck_assert_ptr_nonnull(in);
        char tmp[64] = "/tmp/mmsim-z3pp-XXXXXX", line[1024];
        int fd = mkstemp(tmp), at = 0, n = 0;
        ck_assert(fd >= 0);
        FILE *out = fdopen(fd, "w");
        while (fgets(line, sizeof line, in)) {
            n++;
            bool hit = !at && strstr(line, "  keep_gathered_under_pp:");
            fputs(hit ? edits[k] : line, out);
            at = hit ? n : at;
        }
        fclose(in);
        fclose(out);
        ck_assert(at > 0);
        mm_framework fw;
        mm_err err;
        int rc = mm_framework_load(tmp, &fw, &err);
        unlink(tmp);
        ck_assert_int_eq(rc, -MM_EINPUT);
        ck_assert_str_eq(err.key, "zero3.keep_gathered_under_pp");
        ck_assert_str_eq(err.file, tmp);
        if (k == 0) /* the bad value's own line; a missing key: its section's */
            ck_assert_int_eq(err.line, at);
        else
            ck_assert(err.line > 0);
    }
}
END_TEST

static Suite *sched_comm_suite(void)
{
    Suite *s = suite_create("sched_comm");
    TCase *tc = tcase_create("sched");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, sequence_parallel_same_bytes);
    tcase_add_test(tc, tp_overlap_hides_tp);
    tcase_add_test(tc, grad_reduce_overlap);
    tcase_add_test(tc, zero3_collectives);
    tcase_add_test(tc, cp_and_ep_traffic);
    tcase_add_test(tc, placement_order);
    tcase_add_test(tc, fsdp_zero3_pipeline_gathers_once);
    tcase_add_test(tc, fsdp_zero3_pipeline_keeps_parameters);
    tcase_add_test(tc, keep_gathered_is_a_profile_key);
    tcase_add_test(tc, z3_once_every_schedule);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sched_comm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
