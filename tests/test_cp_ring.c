/* test_cp_ring.c - context parallelism's p2p ring as Transformer Engine
 * runs it (transformer_engine/pytorch/attention/dot_product_attention/
 * context_parallel.py AttnFuncWithCPAndKVP2P @ 9c61cd7e) with Megatron's
 * causal load balance (megatron/core/utils.py get_batch_on_this_cp_rank @
 * 22e030e9: 2 cp chunks, rank r holds r and 2cp-1-r), in closed form:
 * the core's steps (a causal diagonal at s/cp, cp-1 non-causal half
 * blocks at s/cp x s/2cp, FLOPs summing to the causal core's), the
 * executed graph's exposed exchange time (max(0, exchange - step) per
 * step but the last, which has no exchange), the bytes of a step (one KV
 * block forward, KV and dKV backward) and the KV buffers in flight.
 * Not for: the kernel tables themselves (test_attn_long.c), Ulysses'
 * all-to-all (test_sched_comm.c). */
#include "sched_common.h"

#include "cost/fwcost.h"
#include "hw/net.h"
#include "model/memory.h"

static mm_gpu_spec flat_gpu(void)
{
    mm_gpu_spec g;
    memset(&g, 0, sizeof g);
    g.peak_flops[MM_DTYPE_BF16] = 1e15;
    g.attn_eff = g.gemm_eff = g.mem_eff = 0.5;
    g.hbm_bw = 1e30;
    g.kernel_overhead_s = 1e-6;
    return g;
}

static mm_op_cost core(double s, double flops, bool causal)
{
    return (mm_op_cost){.name = "attn", .kind = MM_OPK_ATTN, .flops = flops, .m = s, .n = s, .k = 128,
                        .batch = 32, .causal = causal, .pass = MM_OP_F};
}

/* With one rate for every kernel the steps' FLOPs add up to the causal
 * core's (half the dense count): diag + (cp-1) off = F/2 / rate + cp x
 * launch; the diagonal is 1/cp of the dense FLOPs (halved, causal), each
 * other step 1/2cp (full). */
START_TEST(steps_sum_to_causal_core)
{
    mm_gpu_spec g = flat_gpu();
    mm_fw_ctx c = {.gpu = &g, .dt = MM_DTYPE_BF16, .attn = MM_ATTN_IMPL_FLASH, .dtype_bytes = 2};
    double F = 4.0 * 32768.0 * 32768.0 * 128 * 32 / 4, rate = 0.5e15, o = 1e-6;
    for (int cp = 2; cp <= 8; cp *= 2) {
        mm_op_cost x = core(32768, F, true);
        double diag, off;
        mm_fw_cp_ring_steps(&c, &x, cp, &diag, &off);
        ck_assert_double_eq_tol(diag, 0.5 * F / cp / rate + o, 1e-12);
        ck_assert_double_eq_tol(off, F / (2.0 * cp) / rate + o, 1e-12);
        ck_assert_double_eq_tol(diag + (cp - 1) * off, 0.5 * F / rate + cp * o, 1e-12);
        /* the layer's timing uses the same split */
        c.cp_ring = cp;
        mm_pass_breakdown b = mm_fw_time_ops(&c, &x, 1);
        ck_assert_double_eq_tol(b.s[MM_OP_F][MM_BK_ATTN], diag + (cp - 1) * off, 1e-12);
        ck_assert_double_eq_tol(b.cp_diag[0], diag, 1e-12);
        ck_assert_double_eq_tol(b.cp_off[0], off, 1e-12);
        /* backward: 2.5x the forward FLOPs (FlashAttention's count) */
        ck_assert_double_eq_tol(b.cp_diag[1], 2.5 * 0.5 * F / cp / rate + o, 1e-12);
        ck_assert_double_eq_tol(b.cp_off[1], 2.5 * F / (2.0 * cp) / rate + o, 1e-12);
        c.cp_ring = 0;
    }
    /* no ring (cp 1) or a non-causal core: one kernel, no off-diagonal step */
    mm_op_cost x = core(8192, F, false);
    double diag, off;
    mm_fw_cp_ring_steps(&c, &x, 4, &diag, &off);
    ck_assert_double_eq_tol(diag, F / rate + o, 1e-12);
    ck_assert(off == 0.0);
    x.causal = true;
    mm_fw_cp_ring_steps(&c, &x, 1, &diag, &off);
    ck_assert_double_eq_tol(diag, 0.5 * F / rate + o, 1e-12);
    ck_assert(off == 0.0);
}
END_TEST

/* Each step is timed at its own length by the table: the diagonal causal
 * at s/cp, the half blocks non-causal at s/(cp sqrt 2) (the geometric mean
 * of s/cp queries and s/2cp keys). */
START_TEST(steps_at_their_lengths)
{
    mm_gpu_spec g = flat_gpu();
    mm_attn_curve cv[2] = {{.head_dim = 128, .causal = true, .pass = MM_ATTN_FWD, .n = 2,
                            .seq = {1024, 8192}, .tflops = {200, 500}},
                           {.head_dim = 128, .causal = false, .pass = MM_ATTN_FWD, .n = 2,
                            .seq = {1024, 4096}, .tflops = {300, 500}}};
    g.kernels.attn = (mm_attn_table){.n = 2, .c = cv};
    g.kernels.has_attn = true;
    mm_fw_ctx c = {.gpu = &g, .dt = MM_DTYPE_BF16, .attn = MM_ATTN_IMPL_FLASH, .dtype_bytes = 2};
    double s = 8192 * sqrt(2.0), F = 4.0 * s * s * 128, o = 1e-6;
    mm_op_cost x = core(s, F, true);
    double diag, off;
    mm_fw_cp_ring_steps(&c, &x, 2, &diag, &off);
    /* diagonal: s/2 = 2^12.5 on the causal curve, linear in log2 between
     * 2^10 (200) and 2^13 (500): 450; half block: 4096 non-causal: 500 */
    ck_assert_double_eq_tol(diag, 0.5 * (F / 2) / 450e12 + o, 1e-12);
    ck_assert_double_eq_tol(off, (F / 4) / 500e12 + o, 1e-12);
}
END_TEST

/* The graph: one layer per pass, cp 4; its core as 4 compute steps and 3
 * exchanges on the side stream; exposed = max(0, c - diag) + (cp-2)
 * max(0, c - off) per pass, c a step's transfer (backward: KV and dKV, two
 * messages), against the same pass without the ring. */
START_TEST(ring_exposed_per_step)
{
    const int cp = 4;
    mm_stage_cost st[1];
    st[0] = (mm_stage_cost){.chunks = 1, .fwd_s = 2e-3, .bwd_s = 4e-3,
                            .cp_diag_s = {2e-4, 4e-4}, .cp_off_s = {4e-4, 8e-4}};
    mm_cluster cl;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("topologies/dgx-a100.yaml", 64, &cl, &err), 0);
    int pair[2] = {0, 1};
    /* bytes for a 0.3 ms step (the analytic send/recv: latency + B / bw) */
    double c1 = mm_net_analytic_time(&cl, MM_COLL_SENDRECV, pair, 2, 1e6);
    double c2 = mm_net_analytic_time(&cl, MM_COLL_SENDRECV, pair, 2, 2e6);
    double B = 1e6 + (3e-4 - c1) / ((c2 - c1) / 1e6);
    double c = mm_net_analytic_time(&cl, MM_COLL_SENDRECV, pair, 2, B);
    mm_cluster_free(&cl);
    ck_assert_double_eq_tol(c, 3e-4, 1e-9);
    mm_build_spec sp = {.schedule = MM_SCHEDULE_1F1B, .lay.tp = 1, .lay.pp = 1, .lay.dp = 1, .lay.vpp = 1,
                        .lay.cp = cp, .m = 1, .stages = st, .cp_ring = true, .cp_bytes = B};
    mm_graph gr;
    ck_assert_int_eq(mm_build_iteration(&sp, &gr, NULL), 0);
    int side = 0, f_msgs = 0, b_msgs = 0;
    for (uint32_t i = 0; i < gr.n_ops; i++) {
        const mm_op *op = &gr.ops[i];
        if (op->cat != MM_CAT_CP)
            continue;
        ck_assert_int_eq(op->stream, MM_STREAM_SIDE);
        const mm_coll *k = &gr.colls[op->coll];
        ck_assert_int_eq(k->kind, MM_COLL_SENDRECV);
        ck_assert(k->bytes == B);
        side++;
        f_msgs += k->count == 1;
        b_msgs += k->count == 2;
    }
    mm_graph_free(&gr);
    /* one rank (the CP group collapsed), cp-1 exchanges per pass */
    ck_assert_int_eq(side, 2 * (cp - 1));
    ck_assert_int_eq(f_msgs, cp - 1);
    ck_assert_int_eq(b_msgs, cp - 1);
    run_result ring = run_spec(&sp);
    ck_assert(ring.all_once && ring.eager);
    sp.cp_bytes = 0; /* no exchange: the core inside the layer's op */
    run_result none = run_spec(&sp);
    double want = fmax(0, c - 2e-4) + (cp - 2) * fmax(0, c - 4e-4) + fmax(0, 2 * c - 4e-4) +
                  (cp - 2) * fmax(0, 2 * c - 8e-4);
    ck_assert_msg(fabs(ring.time_s - none.time_s - want) < 1e-9, "exposed %.9f, want %.9f",
                  ring.time_s - none.time_s, want);
    /* recomputation (here the core, selective) runs the forward's ring
     * again in the backward: cp-1 more one-block exchanges, exposed as the
     * forward's */
    sp.cp_bytes = B;
    st[0].recompute_flops = 1;
    st[0].bwd_s += 2e-4 + (cp - 1) * 4e-4; /* the stage's backward holds the recomputed core */
    ck_assert_int_eq(mm_build_iteration(&sp, &gr, NULL), 0);
    side = 0;
    for (uint32_t i = 0; i < gr.n_ops; i++)
        side += gr.ops[i].cat == MM_CAT_CP;
    mm_graph_free(&gr);
    ck_assert_int_eq(side, 3 * (cp - 1));
    run_result re = run_spec(&sp);
    sp.cp_bytes = 0;
    run_result re_none = run_spec(&sp);
    double want_re = want + fmax(0, c - 2e-4) + (cp - 2) * fmax(0, c - 4e-4);
    ck_assert_msg(fabs(re.time_s - re_none.time_s - want_re) < 1e-9, "exposed %.9f, want %.9f",
                  re.time_s - re_none.time_s, want_re);
    st[0].recompute_flops = 0;
    st[0].bwd_s = 4e-3;
    /* a step longer than every exchange hides them all */
    sp.cp_bytes = B / 10;
    st[0].cp_diag_s[0] = st[0].cp_off_s[0] = 2e-4;
    st[0].cp_diag_s[1] = st[0].cp_off_s[1] = 2e-4;
    run_result hidden = run_spec(&sp);
    ck_assert_msg(fabs(hidden.time_s - none.time_s) < 1e-9, "%.9f vs %.9f", hidden.time_s, none.time_s);
}
END_TEST

/* Two KV receive buffers and two dKV buffers of a peer's s/cp tokens,
 * 16-bit, KV heads split by tp; nothing without CP. */
START_TEST(kv_buffers_in_flight)
{
    mm_llm m;
    memset(&m, 0, sizeof m);
    m.kv_heads = 8;
    m.head_dim = 128;
    double b = 1, s = 32768;
    ck_assert_double_eq_tol(mm_mem_cp_ring_bytes(&m, b, s, 2, 4), 4.0 * 2.0 * b * (s / 4) * 8 * 128 * 2 / 2, 1e-6);
    ck_assert(mm_mem_cp_ring_bytes(&m, b, s, 2, 1) == 0.0);
    ck_assert(mm_mem_cp_ring_bytes(&m, 0, s, 2, 4) == 0.0);
}
END_TEST

static Suite *cp_ring_suite(void)
{
    Suite *s = suite_create("cp_ring");
    TCase *tc = tcase_create("cp_ring");
    tcase_add_test(tc, steps_sum_to_causal_core);
    tcase_add_test(tc, steps_at_their_lengths);
    tcase_add_test(tc, ring_exposed_per_step);
    tcase_add_test(tc, kv_buffers_in_flight);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cp_ring_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
