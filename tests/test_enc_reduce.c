/* test_enc_reduce.c - the encoders' gradient reduction as each framework
 * runs it (grad_sync: once per iteration or after every micro-batch's
 * backward, the last one too), in the executed graph and in the
 * planner's pre-score, per placement.  Tolerances are stated at each
 * assertion. */
#include "framework_common.h"

/* ---- the encoders' gradient reduction follows grad_sync ------------------ */

/* LLaVA-1.5-7B (a CLIP tower and its projector; one image of 576 tiles'
 * tokens and 300 text tokens a sample) on 8 H100s, the analytic network,
 * global batch 32, with the encoder placed as `pl`: homogeneous and
 * colocated over the LLM's dp 8 (4 micro-batches), pipeline and disjoint
 * on 4 GPUs of their own at dp 4 beside the LLM's dp 4 (8 micro-batches). */
static void prepare_mm(mm_sim *sim, const char *pl, const char *framework, const char *zero, const char *vision)
{
    bool own = !strcmp(pl, "pipeline") || !strcmp(pl, "disjoint");
    char place[64], fw[64];
    snprintf(place, sizeof place, "parallel.placement=%s", pl);
    snprintf(fw, sizeof fw, "train.framework=%s", framework);
    const char *sets[] = {"model=models/llava-1.5-7b.json",
                          "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}",
                          "cluster.topology=topologies/dgx-h100.yaml", "network=analytic", "train.global_batch=32",
                          place, fw, zero,
                          own ? "parallel.llm={tp: 1, pp: 1, dp: 4}" : "parallel.llm={tp: 1, pp: 1, dp: 8}",
                          vision ? vision : own ? "parallel.vision={tp: 1, pp: 1, dp: 4}"
                                                : "parallel.vision={tp: 1, pp: 1, dp: 8}"};
    prepare(sim, sets, 10);
    ck_assert_int_eq(sim->n_enc, 1);
    ck_assert_int_eq(sim->micro_batches, own ? 8 : 4);
}

/* The encoder's DP reductions on `rank` in the executed graph: the DP ops
 * tagged with the encoder (module 1) that reduce (not the colocated
 * reshard's all-to-all, nor a gather); *ops their count, *blocking those on
 * the compute stream. */
static double enc_reduce_bytes(const mm_graph *g, int rank, int *ops, int *blocking)
{
    double by = 0;
    *ops = *blocking = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        if (op->rank != rank || op->cat != MM_CAT_DP || op->coll < 0 || op->module != 1)
            continue;
        const mm_coll *cl = &g->colls[op->coll];
        if (cl->kind == MM_COLL_ALLGATHER || cl->kind == MM_COLL_ALLTOALL)
            continue;
        by += cl->bytes * cl->count;
        ++*ops;
        *blocking += op->stream == MM_STREAM_COMPUTE;
    }
    return by;
}

/* The encoder reduces as the LLM does under the profile's grad_sync, for
 * its own ZeRO stage on the pipeline it runs in (mm_build_enc_grad_syncs),
 * one encoder GPU's gradients eg each time (bytes to 1e-9):
 *  - homogeneous under fsdp (pp 1: every micro-batch): 4 eg on rank 0, the
 *    3 before the DP tail's tagged with the encoder, on the DP stream,
 *    beside the LLM's 4 x 32 block buckets (4 (g + eg) in all);
 *  - disjoint under fsdp (its own loop, pp 1): 8 eg per encoder rank, one
 *    per micro-batch it takes (dp 4 x 8 / dp_enc 4);
 *  - pipeline under fsdp: once (its stage is a stage of the pipeline, and
 *    torch's PipelineStage syncs after the last backward only); under
 *    megatron-core ZeRO-2 (Megatron-FSDP optim_grads, no pipeline rule) 8,
 *    the 7 before the tail blocking (its overlap is off by default);
 *  - colocated: once (one backward of its rank's share after the LLM's);
 *  - homogeneous under hf-deepspeed ZeRO-2 (overlap_comm off): 4, the 3
 *    before the tail on the compute stream, blocking it;
 *  - homogeneous under fsdp ZeRO-3: 4, all after their backward (the DP
 *    tail reduces nothing under ZeRO-3; before, the tower's gradients were
 *    not reduced at all there);
 *  - pipeline under fsdp ZeRO-3: once, as the LLM's stages on that
 *    pipeline (zero3.keep_gathered_under_pp). */
START_TEST(encoder_reduces_every_microbatch)
{
    static const struct {
        const char *pl, *fw, *zero;
        int rank, syncs, early, want, blocking; /* want: the reduces tagged with the encoder */
    } cases[] = {
        {"homogeneous", "fsdp", "train.zero=1", 0, 4, 3, 3, 0},
        {"disjoint", "fsdp", "train.zero=1", 4, 8, 7, 8, 0},
        {"pipeline", "fsdp", "train.zero=1", 4, 1, 0, 1, 0},
        {"pipeline", "megatron-core", "train.zero=2", 4, 8, 7, 8, 7},
        {"colocated", "fsdp", "train.zero=1", 0, 1, 0, 1, 0},
        {"homogeneous", "hf-deepspeed", "train.zero=2", 0, 4, 3, 3, 3},
        {"homogeneous", "fsdp", "train.zero=3", 0, 4, 4, 4, 0},
        {"pipeline", "fsdp", "train.zero=3", 4, 1, 0, 1, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mm_sim sim = {0};
        prepare_mm(&sim, cases[k].pl, cases[k].fw, cases[k].zero, NULL);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        /* the tail's reduce carries the LLM's leftovers too (module 0) */
        bool homog = !strcmp(cases[k].pl, "homogeneous") && c.spec.zero < 3;
        ck_assert_msg(mm_build_enc_grad_syncs(&c.spec, 0) == cases[k].syncs &&
                          mm_build_enc_early_syncs(&c.spec, 0) == cases[k].early,
                      "%s %s: %d reductions, %d early", cases[k].pl, cases[k].fw, mm_build_enc_grad_syncs(&c.spec, 0),
                      mm_build_enc_early_syncs(&c.spec, 0));
        double eg = c.spec.enc[0].grad_bytes, g = c.stages[0].grad_bytes;
        ck_assert(eg > 0 && g > 0);
        mm_sim_costs_free(&c);
        mm_metrics m;
        mm_sim_timeline tl;
        ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
        int ops, blocking;
        double by = enc_reduce_bytes(&tl.graph, cases[k].rank, &ops, &blocking);
        ck_assert_msg(ops == cases[k].want && blocking == cases[k].blocking, "%s %s: %d ops, %d blocking", cases[k].pl,
                      cases[k].fw, ops, blocking);
        ck_assert_msg(fabs(by - cases[k].want * eg) < 1e-9 * by, "%s %s: %g bytes, %d x %g", cases[k].pl, cases[k].fw,
                      by, cases[k].want, eg);
        if (homog) { /* with the LLM's and the tail's (the encoder's last) */
            by = dp_reduce_bytes(&tl.graph, &ops);
            int llm_ops = !strcmp(cases[k].fw, "fsdp") ? 4 * 32 : 4;
            ck_assert_msg(ops == llm_ops + 4 && fabs(by - 4 * (g + eg)) < 1e-9 * by, "%s: %d ops, %g bytes",
                          cases[k].fw, ops, by);
        }
        mm_sim_timeline_free(&tl);
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
}
END_TEST

/* Where the profile reduces once, nothing moved: megatron-core ZeRO-1 with
 * the encoder pipelined, colocated and homogeneous, the iteration bit for
 * bit as main (37dca64, before the encoders followed grad_sync) simulated
 * it: 0.6282396960000001, 0.385320384 and 0.404193099 s (mmsim run --json
 * on the same keys), with a host that costs nothing (that commit modeled
 * none; profile_without_host).  The host's own launches move them
 * (test_host.c). */
START_TEST(encoder_once_is_unchanged)
{
    static const struct {
        const char *pl;
        double t;
    } cases[] = {{"pipeline", 0.6282396960000001}, {"colocated", 0.385320384}, {"homogeneous", 0.404193099}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mm_sim sim = {0};
        char dir[256], prof[300];
        mmx_tmpdir(dir, sizeof dir, "nohost");
        snprintf(prof, sizeof prof, "%s/megatron-core.yaml", dir);
        ck_assert_int_eq(profile_without_host("frameworks/megatron-core.yaml", prof), 4);
        prepare_mm(&sim, cases[k].pl, prof, "train.zero=1", NULL);
        mmx_rmdir(dir);
        mm_metrics m;
        mm_err err;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        ck_assert_msg(m.exposed_host_s == 0 && m.host_launch_s == 0, "%g s exposed", m.exposed_host_s);
        ck_assert_msg(m.iteration_time_s == cases[k].t, "%s: %.17g s, main %.17g s", cases[k].pl, m.iteration_time_s,
                      cases[k].t);
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
}
END_TEST

/* The pre-score counts the encoder's reductions as the build issues them
 * (mm_build_enc_grad_syncs), the n - 1 before the DP tail's (which the
 * pre-score leaves out, as it always left an encoder's once reduce):
 *  - homogeneous, hf-deepspeed ZeRO-2, all blocking: exposed = the LLM's
 *    4 RS(g) + AG(p) + 3 RS(eg) (1e-9); the simulated stage 0's DP seconds
 *    4 RS(g) + 4 RS(eg) + AG(p + ep), the tail gathering both (1e-6);
 *  - homogeneous, fsdp ZeRO-1, overlapped: the LLM's term (3 earlier
 *    reductions behind the next micro-batch, the last bucket and the first
 *    gather exposed) + 3 mm_overlap_delay(RS(eg)), each encoder reduce
 *    fitting behind the next micro-batch (1e-9);
 *  - disjoint under hf-deepspeed ZeRO-1 with the tower at ZeRO-2 (its own
 *    stage: every micro-batch, the LLM once): 7 RS(eg) over the tower's 4
 *    GPUs more than with the tower at ZeRO-1, and 8 reductions against 1. */
START_TEST(encoder_reductions_in_the_pre_score)
{
    int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int k = 0; k < 2; k++) {
        mm_sim sim = {0};
        prepare_mm(&sim, "homogeneous", k ? "fsdp" : "hf-deepspeed", k ? "train.zero=1" : "train.zero=2", NULL);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(c.spec.overlap_grad_reduce == (k == 1) && mm_build_enc_grad_syncs(&c.spec, 0) == 4);
        const mm_stage_cost *st = &c.stages[0];
        double g = st->grad_bytes, p = st->param_bytes, L = st->chunks, f1 = st->fwd_s, b1 = st->bwd_s;
        double eg = c.spec.enc[0].grad_bytes, ep = c.spec.enc[0].param_bytes;
        mm_sim_costs_free(&c);
#define RS(x) mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, (x))
#define AG(x) mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, (x))
        double rs = RS(g), ag = AG(p), rse = RS(eg), want, dp_s = 4 * rs + 4 * rse + AG(p + ep);
        if (k == 0) {
            want = 4 * rs + ag + 3 * rse;
        } else {
            double rb = rs * (1 - 1 / L), ab = ag * (1 - 1 / L);
            ck_assert(rse < f1 + b1); /* each fits behind the next micro-batch */
            want = 3 * (fmax(0, rs - (f1 + b1)) + odelay(fmin(rs, f1 + b1))) + rs / L + (rb - fmin(rb, b1)) +
                   odelay(fmin(rb, b1)) + ag / L + (ab - fmin(ab, f1)) + odelay(fmin(ab, f1)) +
                   3 * odelay(rse);
        }
#undef RS
#undef AG
        mm_metrics e;
        ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
        ck_assert_msg(fabs(e.exposed_comm_s - want) < 1e-9 * want, "%s: estimate %.9g s, formula %.9g s",
                      k ? "fsdp" : "hf-deepspeed", e.exposed_comm_s, want);
        mm_metrics_free(&e);
        if (k == 0) {
            mm_metrics m;
            ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
            ck_assert_msg(fabs(m.stages[0].comm_s - dp_s) < 1e-6 * dp_s, "DP %.9g s, formula %.9g s",
                          m.stages[0].comm_s, dp_s);
            mm_metrics_free(&m);
        }
        mm_sim_free(&sim);
    }
    double est[2], rse = 0;
    int g4[4] = {0, 1, 2, 3};
    for (int k = 0; k < 2; k++) {
        mm_sim sim = {0};
        prepare_mm(&sim, "disjoint", "hf-deepspeed", "train.zero=1",
                   k ? "parallel.vision={tp: 1, pp: 1, dp: 4, zero: 1}"
                     : "parallel.vision={tp: 1, pp: 1, dp: 4, zero: 2}");
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(!c.spec.grad_every_mb && mm_build_enc_grad_syncs(&c.spec, 0) == (k ? 1 : 8));
        rse = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g4, 4, c.spec.enc[0].grad_bytes);
        mm_sim_costs_free(&c);
        mm_metrics e;
        ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
        est[k] = e.exposed_comm_s;
        mm_metrics_free(&e);
        mm_sim_free(&sim);
    }
    ck_assert_msg(fabs(est[0] - est[1] - 7 * rse) < 1e-9 * 7 * rse, "estimate %.9g - %.9g s, 7 RS(eg) %.9g s", est[0],
                  est[1], 7 * rse);
}
END_TEST

/* An encoder whose DP group is wider than its TP group and than the LLM's
 * groups (disjoint tower tp 2 x dp 3 beside an LLM at tp 1, pp 2, dp 1):
 * the pre-score times its reduce over ranks 0, 2, 4, so its rank array
 * must hold 3 (it was sized by the tower's TP, 2: the ASan build caught
 * nothing until this case).  The LLM has no DP, so the exposed term is the
 * encoder's reductions alone, each blocking (hf-deepspeed ZeRO-2):
 * early syncs x RS(eg) over those ranks (1e-9). */
START_TEST(encoder_dp_wider_than_its_tp_in_the_pre_score)
{
    mm_sim sim = {0};
    const char *sets[] = {"model=models/llava-1.5-7b.json",
                          "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}",
                          "cluster.topology=topologies/dgx-h100.yaml", "network=analytic", "train.global_batch=6",
                          "parallel.placement=disjoint", "train.framework=hf-deepspeed", "train.zero=2",
                          "parallel.llm={tp: 1, pp: 2, dp: 1}", "parallel.vision={tp: 2, pp: 1, dp: 3}",
                          /* unpadded, so that the pipelined LLM fits under the profile's eager memory */
                          "train.padding=longest"};
    prepare(&sim, sets, 11);
    mm_sim_costs c;
    mm_err err;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    int n = mm_build_enc_early_syncs(&c.spec, 0), g3[3] = {0, 2, 4};
    ck_assert(n > 0 && !c.spec.overlap_grad_reduce);
    double want = n * mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g3, 3, c.spec.enc[0].grad_bytes);
    mm_sim_costs_free(&c);
    mm_metrics e;
    ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
    ck_assert_msg(fabs(e.exposed_comm_s - want) < 1e-9 * want, "estimate %.9g s, formula %.9g s", e.exposed_comm_s,
                  want);
    mm_metrics_free(&e);
    mm_sim_free(&sim);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("enc_reduce");
    TCase *tc = tcase_create("enc_reduce");
    tcase_add_test(tc, encoder_reduces_every_microbatch);
    tcase_add_test(tc, encoder_once_is_unchanged);
    tcase_add_test(tc, encoder_reductions_in_the_pre_score);
    tcase_add_test(tc, encoder_dp_wider_than_its_tp_in_the_pre_score);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
