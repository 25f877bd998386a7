/* test_memory_fw.c - memory as the framework allocates it: what eager
 * code keeps beyond the fused count (model/memory.h mm_mem_eager, the
 * profiles' `memory` section), the loss's buffers on the last stage, the
 * allocator's reserve around the tensors (mm_mem_reserved, cost/memcost.c
 * mm_sim_mem_alloc) and the OOM verdict on reserved memory that run and
 * estimate (the planner's pre-score) share.  Each term is checked against
 * its closed form; tolerances are 1e-12 relative (the same sums) unless
 * stated. */
#include "framework_common.h"

#include "cost/cost_internal.h"

static const mm_llm *llama7b(mm_llm *m)
{
    mm_err err;
    ck_assert_msg(mm_llm_load("models/llama-2-7b.json", m, &err) == 0, "%s", err.msg);
    return m;
}

/* The eager terms, one at a time, for Llama-2-7B (h 4096, a = g 32, d
 * 128, f 11008, gated, RoPE) at s 4096, b 2, tp 4 with and without SP:
 * each adds exactly its closed form to the fused count. */
START_TEST(eager_terms_closed_form)
{
    mm_llm m;
    llama7b(&m);
    const double s = 4096, b = 2, h = 4096, a = 32, g = 32, d = 128, f = 11008;
    for (int sp = 0; sp < 2; sp++) {
        const int t = 4;
        double rep = sp ? t : 1; /* replicated terms: split over TP by SP only */
        double fused = mm_mem_layer_activations_eager(&m, b, s, t, sp, 1, MM_RECOMPUTE_SELECTIVE, 2.0, NULL);
        ck_assert(fused == mm_mem_layer_activations_lb(&m, b, s, t, sp, 1, MM_RECOMPUTE_SELECTIVE, 2.0));
        /* eager RMSNorm: fp32 copy (4) + normalised 16-bit (2) against the
         * fused norm's 16-bit input (2): 4 B x sbh per norm, two norms */
        mm_mem_eager e = {.norm_extra = 4};
        double x = mm_mem_layer_activations_eager(&m, b, s, t, sp, 1, MM_RECOMPUTE_SELECTIVE, 2.0, &e);
        ck_assert_msg(rel(x - fused, 2 * 4 * s * b * h / rep) < 1e-12, "norm: %g", x - fused);
        /* eager RoPE: q, k and their rotate_half, 4 B per q and k element */
        e = (mm_mem_eager){.rope_extra = 4};
        x = mm_mem_layer_activations_eager(&m, b, s, t, sp, 1, MM_RECOMPUTE_SELECTIVE, 2.0, &e);
        ck_assert_msg(rel(x - fused, 4 * s * b * (a + g) * d / t) < 1e-12, "rope: %g", x - fused);
        /* eager SwiGLU: silu(gate), 2 B per ffn element */
        e = (mm_mem_eager){.act_extra = 2};
        x = mm_mem_layer_activations_eager(&m, b, s, t, sp, 1, MM_RECOMPUTE_SELECTIVE, 2.0, &e);
        ck_assert_msg(rel(x - fused, 2 * s * b * f / t) < 1e-12, "act: %g", x - fused);
        /* no hidden dropout: Korthikanti's two 1-byte masks go */
        e = (mm_mem_eager){.no_dropout = true};
        x = mm_mem_layer_activations_eager(&m, b, s, t, sp, 1, MM_RECOMPUTE_SELECTIVE, 2.0, &e);
        ck_assert_msg(rel(fused - x, 2 * s * b * h / rep) < 1e-12, "dropout: %g", fused - x);
        /* full recompute keeps the block input whatever the stack */
        e = (mm_mem_eager){.norm_extra = 4, .rope_extra = 4, .act_extra = 2};
        ck_assert(mm_mem_layer_activations_eager(&m, b, s, t, sp, 1, MM_RECOMPUTE_FULL, 2.0, &e) ==
                  2 * s * b * h / rep);
    }
    /* the eager stack against Korthikanti's GPT count, tp 1: (34 - 2
     * masks + 8 norm + 8 rope) sbh + 8 sbf gated (fc1 in, gate and up,
     * silu, fc2 in) for Llama: 1.6 x the fused count at s 4096 */
    mm_mem_eager e = {.norm_extra = 4, .rope_extra = 4, .act_extra = 2, .no_dropout = true};
    double fused = mm_mem_layer_activations_eager(&m, 1, s, 1, false, 1, MM_RECOMPUTE_SELECTIVE, 2.0, NULL);
    double eager = mm_mem_layer_activations_eager(&m, 1, s, 1, false, 1, MM_RECOMPUTE_SELECTIVE, 2.0, &e);
    ck_assert_msg(eager / fused > 1.5 && eager / fused < 1.7, "eager / fused %g", eager / fused);
}
END_TEST

/* The loss on the last stage: loss_bytes per logit element of V x s x b,
 * split over tp (vocab-parallel) and cp, and the final norm's input;
 * absent (0), the fp32 logits alone: 4 V s b / tp. */
START_TEST(loss_buffers_closed_form)
{
    mm_llm m;
    llama7b(&m);
    const double V = 32000, s = 4096, b = 2, h = 4096;
    mm_mem_config c = {.lay = {.tp = 4, .pp = 2, .dp = 1, .cp = 1, .vpp = 1, .ep = 1}, .sp = true};
    double base = mm_mem_loss_transient(&m, &c, s * b);
    ck_assert_msg(rel(base, 4 * V * s * b / 4 + 2 * s * b * h / 4) < 1e-12, "fp32 logits %g", base);
    c.loss_bytes = 12; /* transformers' ForCausalLMLoss at its backward peak */
    ck_assert(rel(mm_mem_loss_transient(&m, &c, s * b) - base, 8 * V * s * b / 4) < 1e-12);
    c.loss_bytes = 6; /* Megatron's fp32 softmax beside the 16-bit logits */
    ck_assert(rel(mm_mem_loss_transient(&m, &c, s * b) - base, 2 * V * s * b / 4) < 1e-12);
    /* only the last stage holds it; the first stage's transient is the
     * attention backward's fp32 dq accumulator, 4 B per q element */
    c.dq_accum = true;
    double last = mm_mem_stage_transient(&m, &c, 1, s * b), first = mm_mem_stage_transient(&m, &c, 0, s * b);
    ck_assert(rel(last, mm_mem_loss_transient(&m, &c, s * b)) < 1e-12);
    ck_assert_msg(rel(first, 4 * s * b * 32 * 128 / 4) < 1e-12, "dq_accum %g", first);
    /* ZeRO-3's gathered layers sit under both */
    c.z3_bytes = 1e9;
    ck_assert(rel(mm_mem_stage_transient(&m, &c, 0, s * b), first + 1e9) < 1e-12);
}
END_TEST

/* Reserved = states + dynamic / (1 - fragmentation) + fixed; the fixed
 * part from the profile: context + workspace + 2 peers x channels x
 * NCCL_BUFFSIZE per communicator, and DeepSpeed's IPG bucket buffer. */
START_TEST(reserve_closed_form)
{
    mm_mem_alloc a = {.fragmentation = 0.15, .fixed = 3e9};
    ck_assert(rel(mm_mem_reserved(&a, 10e9, 17e9), 10e9 + 17e9 / 0.85 + 3e9) < 1e-12);
    ck_assert(mm_mem_reserved(NULL, 10e9, 17e9) == 27e9);
    mm_sim sim = {0};
    prepare_fw_zero(&sim, "megatron-core", 1, NULL); /* dp 8: one communicator */
    const mm_fw_memory *x = &sim.fw->mem;
    /* no published fragmentation of a Megatron run: 0 */
    ck_assert(x->fragmentation == 0 && x->nccl_bytes == 4194304.0 && x->nccl_channels == 32);
    mm_sim_mem_alloc(&sim, 1, 1, 1, 8, 1, 1, 7e9, &a);
    double want = 1343.0 * 1048576 + 12.125 * 1048576 + 1 * 2 * 32 * 4194304.0;
    ck_assert_msg(rel(a.fixed, want) < 1e-12, "megatron-core fixed %g, want %g", a.fixed, want);
    mm_sim_mem_alloc(&sim, 2, 2, 2, 8, 1, 1, 7e9, &a); /* tp, cp, dp, pp: four */
    ck_assert(rel(a.fixed, want + 3 * 2 * 32 * 4194304.0) < 1e-12);
    mm_sim_free(&sim);
    /* DeepSpeed ZeRO-1: one reduce_bucket_size (5e8) 16-bit buffer, two
     * under overlap_comm; none under ZeRO-3 or dp 1 */
    prepare_fw_zero(&sim, "hf-deepspeed", 1, NULL);
    ck_assert(sim.fw->mem.fragmentation == 0.15); /* GMLake's measurement */
    mm_sim_mem_alloc(&sim, 1, 1, 1, 8, 1, 1, 7e9, &a);
    double fixed = 1343.0 * 1048576 + 8.125 * 1048576 + 2 * 32 * 4194304.0;
    ck_assert_msg(rel(a.fixed, fixed + 5e8 * 2) < 1e-12, "hf-deepspeed fixed %g", a.fixed);
    mm_sim_mem_alloc(&sim, 1, 1, 1, 8, 1, 3, 7e9, &a);
    ck_assert(rel(a.fixed, fixed) < 1e-12);
    mm_sim_free(&sim);
    prepare_fw_zero(&sim, "hf-deepspeed", 1, "train.overlap_grad_reduce=true");
    mm_sim_mem_alloc(&sim, 1, 1, 1, 8, 1, 1, 7e9, &a);
    ck_assert(rel(a.fixed, fixed + 2 * 5e8 * 2) < 1e-12);
    mm_sim_free(&sim);
}
END_TEST

/* The profile switch: the same layout under megatron-core (fused) and
 * hf-deepspeed (eager) holds, per layer and micro-batch in flight,
 * exactly the eager terms more, less the dropout masks Megatron's hidden
 * dropout keeps; the configuration carries the profile's numbers. */
START_TEST(profile_switch)
{
    double act[2];
    mm_mem_config cf[2];
    const char *fw[] = {"megatron-core", "hf-deepspeed"};
    mm_llm m;
    for (int i = 0; i < 2; i++) {
        mm_sim sim = {0};
        prepare_fw_zero(&sim, fw[i], 1, "train.recompute=selective");
        mm_sim_llm_mem_config(&sim, &cf[i]);
        mm_mem_rank r;
        ck_assert(mm_mem_llm_rank(sim.llm, &cf[i], 0, &r) == 0);
        act[i] = r.activations;
        m = *sim.llm;
        mm_sim_free(&sim);
    }
    ck_assert(cf[0].eager.norm_extra == 0 && !cf[0].eager.no_dropout && cf[0].loss_bytes == 6);
    ck_assert(cf[1].eager.norm_extra == 4 && cf[1].eager.rope_extra == 4 && cf[1].eager.act_extra == 2);
    ck_assert(cf[1].eager.no_dropout && cf[1].loss_bytes == 12);
    double s = cf[0].seq, b = cf[0].micro_batch, h = (double)m.hidden, f = (double)m.ffn;
    double per_layer = 2 * 4 * s * b * h + 4 * s * b * 2 * h + 2 * s * b * f - 2 * s * b * h;
    double want = (double)m.layers * per_layer; /* pp 1: one micro-batch in flight */
    ck_assert_msg(rel(act[1] - act[0], want) < 1e-12, "eager - fused %g, want %g", act[1] - act[0], want);
}
END_TEST

/* The verdict is on reserved memory: Llama-2-7B under hf-deepspeed at 5120
 * tokens, no recomputation, dp 8 on 80 GB (74.5 GiB) allocates 70.0 GiB,
 * which fits, and reserves 78.7 GiB, which does not.  mm_sim_run and
 * mm_sim_estimate (the planner's pre-score) give the same numbers and
 * verdict. */
START_TEST(oom_on_reserved)
{
    const char *sets[] = {"train.zero=1", "train.recompute=none", "train.seq_len=5120", "train.framework=hf-deepspeed"};
    mm_sim sim = {0};
    prepare(&sim, sets, 4);
    mm_err err;
    mm_metrics run, est;
    ck_assert_int_eq(mm_sim_run(&sim, &run, NULL, &err), 0);
    ck_assert_int_eq(mm_sim_estimate(&sim, &est, &err), 0);
    double hbm = sim.cluster->gpu.hbm_bytes / MM_GIB;
    ck_assert_msg(run.peak_allocated_gib < hbm && run.peak_memory_gib > hbm && run.oom, "%g allocated, %g reserved",
                  run.peak_allocated_gib, run.peak_memory_gib);
    ck_assert(est.oom && est.peak_memory_gib == run.peak_memory_gib &&
              est.peak_allocated_gib == run.peak_allocated_gib);
    mm_metrics_free(&run);
    mm_metrics_free(&est);
    mm_sim_free(&sim);
}
END_TEST

/* Bad memory keys are refused by file, line and key. */
START_TEST(bad_memory_keys)
{
    static const struct {
        const char *from, *to, *key;
    } cases[] = {
        {"  fragmentation: 0", "  fragmentation: 1.5\n", "memory.fragmentation"},
        {"  fragmentation: 0", "\n", "memory.fragmentation"},
        {"  nccl_channels: 32", "  nccl_channels: -1\n", "memory.nccl_channels"},
        {"  norm_extra_bytes: 0", "  norm_extra_bytes: lots\n", "memory.norm_extra_bytes"},
        {"  loss_bytes_per_logit: 6", "  loss_bytes_per_logit: 0\n", "memory.loss_bytes_per_logit"},
        {"  grad_bucket_buffers: 0", "  grad_bucket_buffers: 0\n  pinned_mib: 4\n", "memory.pinned_mib"},
        {"memory:", "memory_model:\n", "memory_model"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_err err;
        char tmp[64];
        int rc = load_edited(cases[i].from, cases[i].to, &err, tmp, sizeof tmp);
        ck_assert_msg(rc == -MM_EINPUT, "case %zu: rc %d", i, rc);
        ck_assert_msg(!strcmp(err.key, cases[i].key), "case %zu: key '%s', expected '%s'", i, err.key,
                      cases[i].key);
        ck_assert_msg(err.line > 0, "case %zu: no line", i);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("memory_fw");
    TCase *tc = tcase_create("memory_fw");
    tcase_add_test(tc, eager_terms_closed_form);
    tcase_add_test(tc, loss_buffers_closed_form);
    tcase_add_test(tc, reserve_closed_form);
    tcase_add_test(tc, profile_switch);
    tcase_add_test(tc, oom_on_reserved);
    tcase_add_test(tc, bad_memory_keys);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
