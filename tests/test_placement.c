/* test_placement.c - the encoder's placements executed event by event: a
 * zero-cost encoder is the LLM alone, pipeline placement is a deeper
 * pipeline with its bottleneck stage, homogeneous and colocated encoders
 * share the LLM's GPUs, a disjoint one runs on its own.
 * Not for: the schedules' bubbles (test_sched.c), the communication a pass
 * carries (test_sched_comm.c). */
#include "sched_common.h"

/* A uniform LLM of p stages (F = 1 ms, B = 2 ms per micro-batch) on dp
 * replicas, with one encoder whose whole forward per micro-batch takes
 * ef and backward eb. */
static mm_enc_mb_cost enc_mb[4096];

static mm_build_spec mm_spec(mm_stage_cost *st, int p, int dp, int m, mm_enc_placement place, double ef,
                             double eb, int etp, int epp, int edp)
{
    for (int i = 0; i < p; i++)
        st[i] = (mm_stage_cost){.chunks = 2, .fwd_s = 1e-3, .bwd_s = 2e-3};
    for (int k = 0; k < dp * m; k++)
        enc_mb[k] = (mm_enc_mb_cost){.fwd_s = ef, .bwd_s = eb, .fwd_flops = 1e12, .bwd_flops = 2e12};
    mm_build_spec sp = {.schedule = MM_SCHEDULE_1F1B, .lay.tp = 1, .lay.pp = p, .lay.dp = dp, .lay.vpp = 1, .m = m, .stages = st,
                        .n_enc = 1};
    sp.enc[0] = (mm_enc_spec){.name = "vision", .placement = place, .tp = etp, .pp = epp, .dp = edp, .chunks = 4,
                              .mb = enc_mb, .buffer = 2};
    return sp;
}

/* design: with encoder cost set to zero, every placement gives the
 * LLM-only result */
START_TEST(zero_cost_encoder_is_llm_only)
{
    mm_stage_cost st[4];
    mm_build_spec llm = mm_spec(st, 4, 2, 8, MM_ENC_HOMOGENEOUS, 0, 0, 1, 1, 1);
    llm.n_enc = 0;
    run_result base = run_spec(&llm);
    const mm_enc_placement pl[] = {MM_ENC_PIPELINE, MM_ENC_COLOCATED, MM_ENC_DISJOINT, MM_ENC_HOMOGENEOUS};
    for (int i = 0; i < 4; i++)
        for (int frozen = 0; frozen < 2; frozen++) {
            mm_build_spec sp = mm_spec(st, 4, 2, 8, pl[i], 0, 0, 1, 2, 4);
            sp.enc[0].frozen = frozen;
            run_result r = run_spec(&sp);
            ck_assert_msg(fabs(r.time_s - base.time_s) < 1e-12, "placement %d frozen %d: %.9f vs %.9f", i, frozen,
                          r.time_s, base.time_s);
            ck_assert(r.all_once && r.eager);
        }
}
END_TEST

/* Pipeline placement with the encoder split into stages as long as the
 * LLM's is a deeper 1F1B pipeline: (m + P - 1)(F + B) with P = 2 + 2. */
START_TEST(pipeline_placement_is_deeper_pipeline)
{
    mm_stage_cost st[2];
    for (int m = 4; m <= 16; m *= 2) {
        mm_build_spec sp = mm_spec(st, 2, 2, m, MM_ENC_PIPELINE, 2e-3, 4e-3, 1, 2, 2);
        run_result r = run_spec(&sp);
        ck_assert_msg(fabs(r.time_s - (m + 3) * 3e-3) < 1e-9, "m=%d: %.9f", m, r.time_s);
        ck_assert(r.all_once && r.eager);
        ck_assert(fabs(r.bubble - 3.0 / (m + 3)) < 1e-9);
    }
    /* more and fewer encoder replicas than LLM replicas: no deadlock */
    int edps[] = {1, 3, 4, 8};
    for (int i = 0; i < 4; i++) {
        mm_build_spec sp = mm_spec(st, 2, 2, 8, MM_ENC_PIPELINE, 2e-3, 4e-3, 2, 2, edps[i]);
        run_result r = run_spec(&sp);
        ck_assert(r.all_once && r.eager);
        ck_assert(r.time_s >= 11 * 3e-3 - 1e-9);
    }
}
END_TEST

/* Pipeline placement bottlenecks on its slowest stage: an encoder stage of
 * 3 ms forward and 6 ms backward ahead of two LLM stages of 1 + 2 ms runs
 * without a gap from time 0 (its first backward can start after 3 + 1 + 1
 * + 2 + 2 = 9 ms, when its three warm-up forwards are done), so the
 * iteration takes exactly m x 9 ms. */
START_TEST(pipeline_bottleneck_stage)
{
    mm_stage_cost st[2];
    for (int m = 4; m <= 16; m *= 2) { /* m >= the pipeline's 3 stages */
        mm_build_spec sp = mm_spec(st, 2, 1, m, MM_ENC_PIPELINE, 3e-3, 6e-3, 1, 1, 1);
        run_result r = run_spec(&sp);
        ck_assert(r.all_once && r.eager);
        ck_assert_msg(fabs(r.time_s - m * 9e-3) < 1e-9, "m=%d: %.9f", m, r.time_s);
    }
}
END_TEST

/* Homogeneous: stage 0 does the encoding; colocated: every rank spends the
 * iteration's encoder work x tp_enc / GPUs before the pipeline starts and
 * after it ends. */
START_TEST(homogeneous_and_colocated)
{
    mm_stage_cost st[4];
    mm_build_spec llm = mm_spec(st, 4, 2, 8, MM_ENC_HOMOGENEOUS, 0, 0, 1, 1, 1);
    llm.n_enc = 0;
    run_result base = run_spec(&llm);
    /* homogeneous, F_enc = 1 ms, B_enc = 2 ms: stage 0 (F 2 ms, B 4 ms)
     * becomes the bottleneck.  Its first backward can start at 2 + 3 x 1
     * (forwards down) + 3 x 2 (backwards up) = 11 ms, when it has done 8 ms
     * of forwards; from then on it never waits: 11 + (48 - 8) = 51 ms */
    mm_build_spec h = mm_spec(st, 4, 2, 8, MM_ENC_HOMOGENEOUS, 1e-3, 2e-3, 1, 1, 1);
    run_result rh = run_spec(&h);
    ck_assert(rh.all_once && rh.eager);
    ck_assert_msg(fabs(rh.time_s - 51e-3) < 1e-9, "base %.6f homogeneous %.6f", base.time_s, rh.time_s);
    /* colocated on 8 GPUs with tp_enc = 2: 16 micro-batch encodings of
     * 1 ms forward and 2 ms backward, each rank's share 16 * 2 / 8 */
    mm_build_spec c = mm_spec(st, 4, 2, 8, MM_ENC_COLOCATED, 1e-3, 2e-3, 2, 1, 4);
    run_result rc = run_spec(&c);
    ck_assert(rc.all_once && rc.eager);
    ck_assert_msg(fabs(rc.time_s - (base.time_s + 16 * 2.0 / 8 * 3e-3)) < 1e-9, "%.9f", rc.time_s);
    c.enc[0].frozen = true;
    run_result rf = run_spec(&c);
    ck_assert(fabs(rf.time_s - (base.time_s + 16 * 2.0 / 8 * 1e-3)) < 1e-9);
}
END_TEST

/* Disjoint: the encoder runs ahead through a bounded queue; a tiny
 * encoder is hidden behind the LLM, a slow one sets the pace. */
START_TEST(disjoint_placement)
{
    mm_stage_cost st[2];
    mm_build_spec llm = mm_spec(st, 2, 1, 8, MM_ENC_DISJOINT, 0, 0, 1, 1, 1);
    llm.n_enc = 0;
    run_result base = run_spec(&llm);
    mm_build_spec fast = mm_spec(st, 2, 1, 8, MM_ENC_DISJOINT, 0.1e-3, 0.2e-3, 1, 1, 1);
    fast.enc[0].frozen = true;
    run_result rf = run_spec(&fast);
    ck_assert(rf.all_once && rf.eager);
    ck_assert(fabs(rf.time_s - (base.time_s + 0.1e-3)) < 1e-9); /* only the first encoding shows */
    mm_build_spec slow = mm_spec(st, 2, 1, 8, MM_ENC_DISJOINT, 5e-3, 10e-3, 1, 1, 1);
    slow.enc[0].frozen = true;
    run_result rs = run_spec(&slow);
    ck_assert(rs.all_once && rs.eager);
    ck_assert(rs.time_s >= 8 * 5e-3); /* the encoder is the bottleneck */
    slow.enc[0].frozen = false;
    rs = run_spec(&slow);
    ck_assert(rs.all_once && rs.eager);
}
END_TEST

static Suite *placement_suite(void)
{
    Suite *s = suite_create("placement");
    TCase *tc = tcase_create("sched");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, zero_cost_encoder_is_llm_only);
    tcase_add_test(tc, pipeline_placement_is_deeper_pipeline);
    tcase_add_test(tc, homogeneous_and_colocated);
    tcase_add_test(tc, pipeline_bottleneck_stage);
    tcase_add_test(tc, disjoint_placement);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(placement_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
