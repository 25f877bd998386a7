/* test_framework.c - framework profiles (the frameworks/ folder) and
 * what they change in a layer's cost.  The loader refuses bad profiles with
 * file, line and key; the profiles say what their framework's code says;
 * the cost bridge applies them: attention kernel by profile and GPU,
 * activation memory by kernel, gradient-reduce dtype, eager and added
 * kernels, the optimizer phase, the padding default, and a breakdown that
 * adds up to the stage times mm_sim_run executes (how each framework
 * reduces and gathers across DP is tests/test_dp_comm.c; the send/recv
 * model tests/test_p2p.c).  Tolerances are stated at each assertion. */
#include "framework_common.h"

/* Every profile loads, names itself, and states what its code does. */
START_TEST(profiles_say_what_the_code_does)
{
    mm_framework fw;
    for (int i = 0; i < 4; i++) {
        load_profile(profiles[i], &fw);
        ck_assert_str_eq(fw.name, profiles[i]);
    }
    load_profile("megatron-core", &fw);
    /* TE prefers cuDNN fused attention from compute capability 9.0 */
    ck_assert_int_eq(mm_framework_attention(&fw, 8.0), MM_ATTN_IMPL_FLASH2);
    ck_assert_int_eq(mm_framework_attention(&fw, 9.0), MM_ATTN_IMPL_CUDNN);
    /* accumulate_allreduce_grads_in_fp32 for bf16; fp16 keeps 16 bits */
    ck_assert_int_eq(mm_framework_grad_bytes(&fw, MM_DTYPE_BF16), 4);
    ck_assert_int_eq(mm_framework_grad_bytes(&fw, MM_DTYPE_FP16), 2);
    ck_assert(fw.bucket_params == 40e6 && fw.bucket_per_dp == 1e6);
    load_profile("megatron-local", &fw);
    ck_assert_int_eq(mm_framework_attention(&fw, 9.0), MM_ATTN_IMPL_UNFUSED);
    ck_assert(fw.qkv_bias_separate && fw.layout_copies_fused == 4);
    load_profile("hf-deepspeed", &fw);
    ck_assert_int_eq(mm_framework_grad_bytes(&fw, MM_DTYPE_BF16), 2);
    ck_assert(fw.group[MM_FW_NORM].kernels == 8 && fw.group[MM_FW_NORM].traffic == 9);
    ck_assert(fw.host.fwd_op_s > 0 && !fw.host.graphs_layer && !fw.zero_grad_buffer);
    load_profile("fsdp", &fw);
    ck_assert_int_eq(mm_framework_grad_bytes(&fw, MM_DTYPE_BF16), 4);
    ck_assert(fw.bucket_params == 0 && fw.bucket_per_dp == 0);
}
END_TEST

START_TEST(bad_profiles_are_refused_by_file_line_and_key)
{
    static const struct {
        const char *from, *to, *key;
        int line; /* 0: not checked */
    } cases[] = {
        {"  norm: {kernels: 1", "  nrom: {kernels: 1, traffic: 1}\n", "kernels.nrom", 0},
        {"  sm90: cudnn", "  sm90: cudnn9\n", "attention.sm90", 0},
        {"  sm90: cudnn", "  sm90: flash\n", "attention.sm90", 0},
        {"  bf16: fp32", "  bf16: fp64\n", "grad_reduce.bf16", 0},
        {"  step_bytes_per_param: 30", "  step_bytes_per_param: -1\n", "optimizer.step_bytes_per_param", 0},
        {"  hidden_dropout: 0.1", "\n", "kernels.hidden_dropout", 0},
        {"  rope: {kernels: 1", "  rope: {kernels: 0, traffic: 1}\n", "kernels.rope.kernels", 0},
        {"name: megatron-core", "name: megatron-core\nspeed: fast\n", "speed", 0},
        {"padding: longest", "padding: left\n", "padding", 0},
        {"padding: longest", "\n", "padding", 0},
        {"  max_live_mparams: 0", "  max_live_mparams: -1\n", "zero3.max_live_mparams", 0},
        {"  grad_reduce: false", "  grad_reduce: sometimes\n", "overlap.grad_reduce", 0},
        {"  param_gather: false", "\n", "overlap.param_gather", 0},
        {"overlap:", "overlap:\n  tp: true\n", "overlap.tp", 0},
        {"  norm: {kernels: 1", "  norm: {kernels: 1, traffic: 1, bwd_traffic: 0}\n", "kernels.norm.bwd_traffic", 0},
        {"  layout_copies:", "  layout_copies: {fused: 0, unfused: 0, split_qkv: 3}\n", "kernels.layout_copies.split_qkv",
         0},
        {"  act: {kernels: 1", "  act: {kernels: 1, traffic: 1, jit: maybe}\n", "kernels.act.jit", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_err err;
        char tmp[64];
        int rc = load_edited(cases[i].from, cases[i].to, &err, tmp, sizeof tmp);
        ck_assert_msg(rc == -MM_EINPUT, "case %zu: rc %d", i, rc);
        ck_assert_msg(!strcmp(err.key, cases[i].key), "case %zu: key '%s', expected '%s'", i, err.key, cases[i].key);
        ck_assert_msg(!strcmp(err.file, tmp), "case %zu: file '%s'", i, err.file);
        ck_assert_msg(err.line > 0, "case %zu: no line", i);
    }
}
END_TEST

/* The scenario keys: train.framework names a profile (unknown: refused by
 * key), train.attention overrides the profile, and a topology that names
 * its tables refuses a kernel it has no table for. */
START_TEST(scenario_keys)
{
    mm_err err;
    const char *bad[] = {"train.framework=megatron-lm"};
    ck_assert_int_eq(prepare_rc(bad, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.framework");
    const char *fa3_a100[] = {"cluster.topology=topologies/dgx-a100.yaml", "train.attention=flash3"};
    ck_assert_int_eq(prepare_rc(fa3_a100, 2, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.attention");
    ck_assert_ptr_nonnull(strstr(err.msg, "gpu.kernels.flash3"));
    mm_sim sim = {0};
    const char *h100[] = {"cluster.topology=topologies/dgx-h100.yaml"};
    prepare(&sim, h100, 1);
    ck_assert_str_eq(sim.fw->name, "megatron-core"); /* the default */
    ck_assert_int_eq(sim.attn, MM_ATTN_IMPL_CUDNN);
    mm_sim_free(&sim);
    const char *a100[] = {"cluster.topology=topologies/dgx-a100.yaml"};
    prepare(&sim, a100, 1);
    ck_assert_int_eq(sim.attn, MM_ATTN_IMPL_FLASH2);
    mm_sim_free(&sim);
    const char *over[] = {"cluster.topology=topologies/dgx-h100.yaml", "train.attention=flash3"};
    prepare(&sim, over, 2);
    ck_assert_int_eq(sim.attn, MM_ATTN_IMPL_FLASH3);
    mm_sim_free(&sim);
}
END_TEST

/* The framework audit's case: Llama-2-7B, seq 4096, micro-batch 1, dp 8, distributed
 * optimizer, no recomputation, DGX H100.  A flash/cuDNN kernel keeps no
 * 5as^2b scores: 64.7 GiB per GPU (fits); the unfused core keeps them,
 * 80 GiB more: 144.7 GiB (OOM).  The difference is 32 layers x 5 a s^2 b
 * bytes = 32 x 5 x 32 x 4096^2 = 80 GiB exactly. */
START_TEST(activation_memory_by_attention_kernel)
{
    const char *base[] = {"cluster.topology=topologies/dgx-h100.yaml", "parallel.llm={tp: 1, pp: 1, dp: 8}",
                          "train.seq_len=4096", "train.micro_batch=1", "train.global_batch=64",
                          "train.zero=1", "train.recompute=none", NULL};
    double gib[3];
    bool oom[3];
    static const char *const attn[] = {"train.attention=auto", "train.attention=unfused",
                                       "train.attention=unfused-eager"};
    for (int u = 0; u < 3; u++) {
        base[7] = attn[u];
        mm_sim sim = {0};
        prepare(&sim, base, 8);
        mm_sim_memory mem;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_memory(&sim, &mem, &err), 0);
        gib[u] = mem.peak_alloc_gib; /* allocated: the reserve scales the difference */
        oom[u] = mem.oom;
        mm_sim_memory_free(&mem);
        mm_sim_free(&sim);
    }
    ck_assert_msg(!oom[0] && oom[1], "fused %g GiB, unfused %g GiB", gib[0], gib[1]);
    ck_assert_msg(fabs(gib[1] - gib[0] - 80.0) < 1e-9, "difference %g GiB", gib[1] - gib[0]);
    /* 64.7 GiB and Megatron's 16-bit logits beside the fp32 softmax,
     * 2 B x 32000 x 4096 = 0.244 GiB (megatron-core.yaml
     * loss_bytes_per_logit 6 against the fp32 logits' 4) */
    ck_assert_msg(fabs(gib[0] - 64.94) < 0.05, "fused %g GiB", gib[0]);
    /* the eager core (flash-attn's SelfAttention) keeps the same scores */
    ck_assert_msg(oom[2] && gib[2] == gib[1], "eager %g GiB, unfused %g GiB", gib[2], gib[1]);
    /* every profile on its own kernel: megatron-local's default is the
     * unfused core (no --use-flash-attn), OOM at the same 144.7 GiB; fsdp's
     * FlashAttention-2 with fp32 gradients holds megatron-core's 64.7;
     * hf-deepspeed's 16-bit gradients 2 bytes per parameter less */
    /* fsdp: torchtitan's eager norms, RoPE and SwiGLU keep 21 sbh more per
     * layer than the fused count and its fp32 gradients 2 B per parameter
     * more than hf-deepspeed's: 82 GiB reserved, out of memory */
    static const bool fits[] = {true, false, true, false};
    for (int i = 0; i < 4; i++) {
        char fwk[64];
        snprintf(fwk, sizeof fwk, "train.framework=%s", profiles[i]);
        base[7] = fwk;
        mm_sim sim = {0};
        prepare(&sim, base, 8);
        mm_sim_memory mem;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_memory(&sim, &mem, &err), 0);
        double params = (double)mm_llm_params(sim.llm);
        /* the scores by kernel: megatron-local's unfused core keeps the
         * 80 GiB (and its eager RoPE's q and k, 32 layers x 4 B x s x
         * (a + g) d); the eager stacks' own intermediates are
         * test_memory_fw.c's */
        double rope = i == 1 ? 32.0 * 4.0 * 4096.0 * 2.0 * 4096.0 / MM_GIB : 0.0;
        double want = i == 1 ? gib[1] + rope : gib[0];
        if (i == 0 || i == 1)
            ck_assert_msg(fabs(mem.peak_alloc_gib - want) < 1e-9, "%s: %g GiB allocated, want %g", profiles[i],
                          mem.peak_alloc_gib, want);
        double st0 = 0;
        if (i == 0)
            st0 = mem.states_gib[0];
        (void)st0;
        ck_assert_msg(mem.oom == !fits[i], "%s: %g GiB reserved, oom %d", profiles[i], mem.peak_gib, mem.oom);
        (void)params;
        mm_sim_memory_free(&mem);
        mm_sim_free(&sim);
    }
}
END_TEST

/* DP gradients reduce in the profile's dtype: megatron-core bf16 4 bytes,
 * hf-deepspeed 2; the bucket follows the framework. */
START_TEST(grad_reduce_dtype)
{
    double bytes[2];
    const char *fwk[] = {"train.framework=megatron-core", "train.framework=hf-deepspeed"};
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"parallel.llm={tp: 1, pp: 1, dp: 8}", "train.global_batch=8", "train.zero=0", fwk[i]};
        mm_sim sim = {0};
        prepare(&sim, sets, 4);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        bytes[i] = c.stages[0].grad_bytes;
        ck_assert(fabs(c.stages[0].param_bytes - (double)mm_llm_params(sim.llm) * 2) < 1);
        if (i == 0)
            ck_assert(fabs(c.spec.bucket_bytes - 40e6 * 4) < 1);
        else
            ck_assert(fabs(c.spec.bucket_bytes - 500e6 * 2) < 1);
        mm_sim_costs_free(&c);
        mm_sim_free(&sim);
    }
    ck_assert(fabs(bytes[0] - 2 * bytes[1]) < 1e-6 * bytes[0]);
    /* and the gradient buffer is held in that dtype: 2 bytes less per
     * parameter under DeepSpeed's 16-bit gradients (ZeRO-1: unsharded) */
    double gib[2], params = 0;
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"parallel.llm={tp: 1, pp: 1, dp: 8}", "train.global_batch=8", "train.zero=1", fwk[i]};
        mm_sim sim = {0};
        prepare(&sim, sets, 4);
        mm_sim_memory mem;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_memory(&sim, &mem, &err), 0);
        gib[i] = mem.states_gib[0]; /* the states: activations differ by profile too */
        params = (double)mm_llm_params(sim.llm);
        mm_sim_memory_free(&mem);
        mm_sim_free(&sim);
    }
    ck_assert_msg(fabs((gib[0] - gib[1]) - 2.0 * params / MM_GIB) < 1e-6, "%g - %g GiB", gib[0], gib[1]);
}
END_TEST

/* What a framework runs: HF's eager RMSNorm, RoPE and SwiGLU move more
 * bytes in more kernels than Transformer Engine's fused ones, so the same
 * layer's memory-bound time is larger; GEMMs do not change. */
START_TEST(eager_kernels_cost_more)
{
    mm_sim_breakdown bk[2];
    const char *fwk[] = {"train.framework=megatron-core", "train.framework=hf-deepspeed"};
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"parallel.llm={tp: 1, pp: 1, dp: 8}", "train.global_batch=8", "train.attention=flash2",
                              fwk[i]};
        mm_sim sim = {0};
        prepare(&sim, sets, 4);
        mm_err err;
        ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk[i], &err), 0);
        mm_sim_free(&sim);
    }
    for (int p = 0; p < 3; p++)
        ck_assert(fabs(bk[0].layer.s[p][MM_BK_GEMM] - bk[1].layer.s[p][MM_BK_GEMM]) < 1e-12);
    ck_assert_msg(bk[1].layer.s[MM_OP_F][MM_BK_MEM] > 2 * bk[0].layer.s[MM_OP_F][MM_BK_MEM], "hf %g vs core %g",
                  bk[1].layer.s[MM_OP_F][MM_BK_MEM], bk[0].layer.s[MM_OP_F][MM_BK_MEM]);
    /* megatron zeroes its fp32 grad buffer, DeepSpeed sets grads to None */
    ck_assert(bk[0].opt[0].zero_grad_s > 0 && bk[1].opt[0].zero_grad_s == 0);
}
END_TEST

/* The breakdown is the cost bridge's own numbers: per stage F, B, W equal
 * layers x layer + embedding (first) + head (last), + recomputation in B,
 * and the optimizer phase is the stage's opt_s. */
START_TEST(breakdown_adds_up)
{
    const char *sets[] = {"parallel.llm={tp: 2, pp: 2, dp: 2}", "train.global_batch=16", "train.recompute=selective"};
    mm_sim sim = {0};
    prepare(&sim, sets, 3);
    mm_err err;
    static mm_sim_breakdown bk;
    ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk, &err), 0);
    mm_sim_costs c;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert_int_eq(bk.n_stages, 2);
    for (int v = 0; v < 2; v++) {
        const mm_stage_cost *st = &c.stages[v];
        double nl = st->chunks;
        double F = nl * mm_pass_breakdown_pass(&bk.layer, MM_OP_F), W = nl * mm_pass_breakdown_pass(&bk.layer, MM_OP_W);
        double B = nl * (mm_pass_breakdown_pass(&bk.layer, MM_OP_B) + bk.recompute_s) + W;
        const mm_pass_breakdown *end = v == 0 ? &bk.embed : &bk.head;
        F += mm_pass_breakdown_pass(end, MM_OP_F);
        W += mm_pass_breakdown_pass(end, MM_OP_W);
        B += mm_pass_breakdown_pass(end, MM_OP_B) + mm_pass_breakdown_pass(end, MM_OP_W);
        ck_assert_msg(fabs(F - st->fwd_s) < 1e-12 && fabs(B - st->bwd_s) < 1e-12 && fabs(W - st->wgrad_s) < 1e-12,
                      "stage %d: %g %g %g vs %g %g %g", v, F, B, W, st->fwd_s, st->bwd_s, st->wgrad_s);
        ck_assert(fabs(bk.opt[v].total_s - st->opt_s) < 1e-15);
    }
    ck_assert(bk.recompute_s > 0 && bk.recompute_s == bk.layer.attn_core_fwd);
    /* communication alone on the network: two TP all-reduces of the layer's
     * activations forward and backward, one transfer, the DP reduction */
    int g2[2] = {0, 1};
    double ar = mm_net_analytic_time(sim.cluster, MM_COLL_ALLREDUCE, g2, 2, c.spec.tp_bytes);
    ck_assert(fabs(bk.tp_fwd_s - 2 * ar) < 1e-15 && fabs(bk.tp_bwd_s - 2 * ar) < 1e-15);
    ck_assert(bk.p2p_s > 0 && bk.dp_grad_s > 0);
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
}
END_TEST

/* train.padding is a profile default: each profile states what its
 * framework's data pipeline does (megatron-core's multimodal TaskEncoder
 * and the HF collators pad to the micro-batch's longest sample, the
 * legacy GPTDataset's samples are --seq-length tokens, torchtitan packs),
 * the run takes it when the key is auto (the default), and any other value
 * of the key overrides it.  End to end on LLaVA-1.5's data, micro-batch 4:
 * auto under hf-deepspeed is bit for bit the explicit `longest`, under
 * fsdp the explicit `none`; the two differ (padding costs time). */
static void run_padded(const char *framework, const char *padding, double *t, double *frac, mm_padding *mode)
{
    const char *sets[] = {"workload=workloads/llava-1.5-665k.yaml", "model=models/llava-1.5-7b.json",
                          "cluster.topology=topologies/dgx-a100.yaml", "cluster.nodes=1",
                          "parallel.placement=homogeneous", "parallel.llm={tp: 1, pp: 1, dp: 8}",
                          "train.micro_batch=4", "train.global_batch=64", "iterations=1", "train.seq_len=2048",
                          "train.zero=1", "train.recompute=full", framework, padding};
    static mm_scenario sc;
    mm_sim sim = {0};
    mm_err err;
    mm_scenario_free(&sc);
    ck_assert_msg(mm_scenario_load(&sc, NULL, sets, 14, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
    *mode = sim.padding;
    mm_metrics m;
    ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s: %s", err.key, err.msg);
    *t = m.iteration_time_s;
    *frac = m.padded_fraction;
    mm_metrics_free(&m);
    mm_sim_free(&sim);
}

START_TEST(padding_is_a_profile_default)
{
    static const mm_padding want[] = {MM_PAD_LONGEST, MM_PAD_MAX_LENGTH, MM_PAD_LONGEST, MM_PAD_NONE};
    mm_framework fw;
    for (int i = 0; i < 4; i++) {
        load_profile(profiles[i], &fw);
        ck_assert_msg(fw.padding == want[i], "%s: %s", profiles[i], mm_padding_names[fw.padding]);
    }
    /* the key unset (auto) takes the profile's; set, it overrides */
    mm_sim sim = {0};
    for (int i = 0; i < 4; i++) {
        char fwk[64];
        snprintf(fwk, sizeof fwk, "train.framework=%s", profiles[i]);
        const char *sets[] = {fwk};
        prepare(&sim, sets, 1);
        ck_assert_int_eq(sim.padding, want[i]);
        mm_sim_free(&sim);
        const char *over[] = {fwk, "train.padding=none"};
        prepare(&sim, over, 2);
        ck_assert_int_eq(sim.padding, MM_PAD_NONE);
        mm_sim_free(&sim);
    }
    const char *ml[] = {"train.framework=fsdp", "train.padding=max_length"};
    prepare(&sim, ml, 2);
    ck_assert_int_eq(sim.padding, MM_PAD_MAX_LENGTH);
    mm_sim_free(&sim);
    double t[4], f[4];
    mm_padding mode[4];
    run_padded("train.framework=hf-deepspeed", "train.padding=auto", &t[0], &f[0], &mode[0]);
    run_padded("train.framework=hf-deepspeed", "train.padding=longest", &t[1], &f[1], &mode[1]);
    run_padded("train.framework=fsdp", "train.padding=auto", &t[2], &f[2], &mode[2]);
    run_padded("train.framework=fsdp", "train.padding=none", &t[3], &f[3], &mode[3]);
    ck_assert(mode[0] == MM_PAD_LONGEST && mode[2] == MM_PAD_NONE);
    ck_assert(t[0] == t[1] && f[0] == f[1]); /* bit for bit: the same run */
    ck_assert(t[2] == t[3] && f[2] == 0 && f[3] == 0);
    ck_assert_msg(f[0] > 0.05 && f[0] < 0.9, "padded fraction %g", f[0]);
    /* hf-deepspeed also differs from fsdp in its kernels; the padding alone: */
    double tn, fn;
    mm_padding mn;
    run_padded("train.framework=hf-deepspeed", "train.padding=none", &tn, &fn, &mn);
    ck_assert_msg(t[0] > tn && fn == 0, "longest %g s, none %g s", t[0], tn);
}
END_TEST

/* The host's work per pass (fwcost.c, the profile's host section): each
 * kernel a pass launches costs host.launch_us plus forward_op_us (forward)
 * or backward_op_us (backward), and the GPU time is the kernels' own, with
 * no floor (the executor makes short kernels wait for the host).  HF's
 * RMSNorm, 8 kernels: forward 8 x (3.0 + 6.8) us and the module's 5 us,
 * input gradient 8 x (3.0 + 1.0) us, weight gradient nothing;
 * Megatron-Core's fused norm: one kernel of 3.0 + 6.8 us and the module's
 * 5 forward, 3.0 + 6.8 backward (TE's backward is Python).  Exact
 * (1e-15 s). */
START_TEST(host_work_per_kernel_and_pass)
{
    mm_cluster c;
    mm_err err;
    ck_assert(mm_cluster_load("topologies/dgx-h100.yaml", 1, &c, &err) == 0);
    mm_framework hf, core;
    load_profile("hf-deepspeed", &hf);
    load_profile("megatron-core", &core);
    ck_assert(fabs(hf.host.launch_s - 3.0e-6) < 1e-18 && fabs(hf.host.fwd_op_s - 6.8e-6) < 1e-18 &&
              fabs(hf.host.bwd_op_s - 1.0e-6) < 1e-18 && fabs(core.host.bwd_op_s - 6.8e-6) < 1e-18);
    ck_assert(core.host.graphs_layer && core.host.graphs_full);
    mm_op_cost op = {.name = "norm_attn", .kind = MM_OPK_MEM, .bytes = 1000, .pass = MM_OP_F};
    mm_fw_ctx ch = {&c.gpu, MM_DTYPE_BF16, &hf, MM_ATTN_IMPL_FLASH2, 2, &hf.host, {0}, 0, 0, 0};
    mm_fw_ctx cc = {&c.gpu, MM_DTYPE_BF16, &core, MM_ATTN_IMPL_FLASH2, 2, &core.host, {0}, 0, 0, 0};
    mm_pass_breakdown h = mm_fw_time_ops(&ch, &op, 1), k = mm_fw_time_ops(&cc, &op, 1);
    ck_assert(fabs(h.s[MM_OP_F][MM_BK_MEM] - mm_mem_time(&c.gpu, 9000)) < 1e-15);
    ck_assert(h.launches[MM_OP_F] == 8 && h.launches[MM_OP_B] == 8 && h.launches[MM_OP_W] == 0);
    ck_assert_msg(fabs(h.host_s[MM_OP_F] - (8 * 9.8e-6 + 5e-6)) < 1e-15, "%g s", h.host_s[MM_OP_F]);
    ck_assert(fabs(h.host_s[MM_OP_B] - 8 * 4.0e-6) < 1e-15 && h.host_s[MM_OP_W] == 0);
    ck_assert(k.launches[MM_OP_F] == 1 && fabs(k.host_s[MM_OP_F] - 14.8e-6) < 1e-15);
    ck_assert(fabs(k.host_s[MM_OP_B] - 9.8e-6) < 1e-15);
    ck_assert(fabs(k.s[MM_OP_F][MM_BK_MEM] - mm_mem_time(&c.gpu, 1000)) < 1e-15);
    /* no host: nothing counted */
    ch.host = NULL;
    h = mm_fw_time_ops(&ch, &op, 1);
    ck_assert(h.host_s[MM_OP_F] == 0 && h.launches[MM_OP_F] == 8);
    mm_cluster_free(&c);
}
END_TEST

/* The optimizer phase, term by term (costs.c optimizer_phase): Llama-2-7B,
 * dp 8, ZeRO-1 (the distributed optimizer: each rank updates P/8), on
 * DGX H100.  step = HBM time of P/8 x step_bytes_per_param (30 Megatron
 * and DeepSpeed, 28 FSDP); gradient clipping = one fp32 read of the shard
 * (P/8 x 4 bytes) + a 4-byte all-reduce over the job (latency, < 100 us);
 * zeroing = a memset of the rank's whole fp32 buffer (P x 4) under
 * Megatron, none under DeepSpeed and FSDP (set_to_none).  Exact (1e-12
 * relative) but the all-reduce's bound. */
START_TEST(optimizer_phase_term_by_term)
{
    static const double step_bytes[] = {30, 30, 30, 28};
    static const bool zeroes[] = {true, true, false, false};
    for (int i = 0; i < 4; i++) {
        char fwk[64];
        snprintf(fwk, sizeof fwk, "train.framework=%s", profiles[i]);
        const char *sets[] = {"cluster.topology=topologies/dgx-h100.yaml", "train.zero=1", "train.attention=flash2",
                              fwk};
        mm_sim sim = {0};
        prepare(&sim, sets, 4);
        static mm_sim_breakdown bk;
        mm_err err;
        ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk, &err), 0);
        const mm_gpu_spec *g = &sim.cluster->gpu;
        double P = (double)mm_llm_params(sim.llm);
        const mm_opt_breakdown *o = &bk.opt[0];
        double step = mm_mem_time(g, P / 8 * step_bytes[i]), norm = mm_mem_time(g, P / 8 * 4);
        double zero = zeroes[i] ? mm_mem_time(g, P * 4) : 0;
        ck_assert_msg(fabs(o->step_s - step) < 1e-12 * step, "%s: step %g s, want %g", profiles[i], o->step_s, step);
        ck_assert_msg(o->grad_norm_s - norm > 0 && o->grad_norm_s - norm < 100e-6, "%s: norm %g s, read %g",
                      profiles[i], o->grad_norm_s, norm);
        ck_assert_msg(fabs(o->zero_grad_s - zero) <= 1e-12 * zero, "%s: zero %g s, want %g", profiles[i],
                      o->zero_grad_s, zero);
        ck_assert(fabs(o->total_s - (o->step_s + o->grad_norm_s + o->zero_grad_s)) < 1e-15);
        mm_sim_free(&sim);
    }
}
END_TEST

/* fp16's dynamic loss scaling in the step (costs.c loss_scale_s):
 * megatron-local keeps fp16 gradients, so the step copies them to fp32
 * (6 bytes a parameter) and unscales them with the inf/NaN check (8), plus
 * the found-inf all-reduce (latency, < 100 us); bf16 runs no scaler. */
START_TEST(optimizer_fp16_loss_scale)
{
    double step[2];
    static const char *const prec[] = {"train.precision=bf16", "train.precision=fp16"};
    double P = 0, t14 = 0;
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"cluster.topology=topologies/dgx-h100.yaml", "train.zero=1", "train.attention=flash2",
                              "train.framework=megatron-local", prec[i]};
        mm_sim sim = {0};
        prepare(&sim, sets, 5);
        static mm_sim_breakdown bk;
        mm_err err;
        ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk, &err), 0);
        step[i] = bk.opt[0].step_s;
        P = (double)mm_llm_params(sim.llm);
        t14 = mm_mem_time(&sim.cluster->gpu, P / 8 * 14);
        mm_sim_free(&sim);
    }
    double extra = step[1] - step[0];
    ck_assert_msg(extra > t14 && extra < t14 + 100e-6, "fp16 step %g s over bf16's, want %g + latency", extra, t14);
}
END_TEST

/* The binary: a bad profile exits 2 with "FILE:LINE: key 'KEY'", and the
 * --json `breakdown` object carries mm_sim_get_breakdown's numbers (%.9g:
 * 1e-8 relative). */
static char out[1 << 17], errtxt[1 << 14];

START_TEST(cli_bad_profile_and_json_breakdown)
{
    char dir[256], prof[300], args[1024];
    int bad = profile_with_line("frameworks/hf-deepspeed.yaml", "  launch_us: 3.0", "  launch_us: fast\n",
                                "fw", dir, sizeof dir, prof, sizeof prof);
    ck_assert(bad > 0);
    const char *base = "--set model=models/llama-2-7b.json --set workload=text --set parallel.vision=null "
                       "--set cluster.nodes=1 --set 'parallel.llm={tp: 2, pp: 2, dp: 2}' --set train.global_batch=16";
    snprintf(args, sizeof args, "run --no-db %s --set train.framework=%s", base, prof);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    char want[400];
    snprintf(want, sizeof want, "%s:%d: key 'host.launch_us'", prof, bad);
    ck_assert_msg(strstr(errtxt, want), "stderr: %s (want %s)", errtxt, want);
    snprintf(args, sizeof args, "run --no-db --json %s", base);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 0);
    mmx_rmdir(dir);
    const char *b = strstr(out, "\"breakdown\": {\"framework\": \"megatron-core\"");
    ck_assert_msg(b, "no breakdown object");
    double gemm = 0, step = 0, p2p = 0;
    const char *l = strstr(b, "\"layer\": {\"fwd\": {\"gemm_s\": "), *s = strstr(b, "\"step_s\": ");
    const char *q = strstr(b, "\"p2p_s\": ");
    ck_assert(l && s && q);
    ck_assert(sscanf(l + strlen("\"layer\": {\"fwd\": {\"gemm_s\": "), "%lf", &gemm) == 1);
    ck_assert(sscanf(s + strlen("\"step_s\": "), "%lf", &step) == 1);
    ck_assert(sscanf(q + strlen("\"p2p_s\": "), "%lf", &p2p) == 1);
    const char *sets[] = {"parallel.llm={tp: 2, pp: 2, dp: 2}", "train.global_batch=16"};
    mm_sim sim = {0};
    prepare(&sim, sets, 2);
    static mm_sim_breakdown bk;
    mm_err err;
    ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk, &err), 0);
    ck_assert_msg(fabs(gemm - bk.layer.s[MM_OP_F][MM_BK_GEMM]) < 1e-8 * gemm, "%g vs %g", gemm,
                  bk.layer.s[MM_OP_F][MM_BK_GEMM]);
    ck_assert(fabs(step - bk.opt[0].step_s) < 1e-8 * step);
    ck_assert(p2p > 0 && fabs(p2p - bk.p2p_s) < 1e-8 * p2p);
    mm_sim_free(&sim);
}
END_TEST

/* With a workload file the breakdown lists the micro-batches DP replica 0
 * runs in iteration 0 (mm_sim_breakdown.mb), each costed as the run costs
 * it: Llama-2-7B on the synthetic text mixture, 2 sequences per
 * micro-batch padded to the longer (train.padding longest), 16
 * micro-batches per replica.  A bin of n sequences padded to L gives the
 * layer a text run at micro-batch n and seq_len L gives as its nominal one
 * (the packed op list against the batched one: two code paths, 1e-9); a
 * bin 1.25x longer or more costs more in every pass and in attention
 * (not per token: flash attention's rate falls at short lengths, 22 ns
 * per token at 2 x 452 against 19 at 2 x 797); the --json object carries
 * the same numbers (%.9g: 1e-8). */
START_TEST(breakdown_lists_the_drawn_micro_batches)
{
    const char *sets[] = {"workload=workloads/text-only.yaml", "train.micro_batch=2", "train.padding=longest",
                          "train.global_batch=256"};
    mm_sim sim = {0};
    prepare(&sim, sets, 4);
    static mm_sim_breakdown bk, nom;
    mm_err err;
    ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk, &err), 0);
    ck_assert_int_eq(bk.mb_count, 16);
    ck_assert_int_eq(bk.n_mb, 16);
    int checked = 0;
    for (int j = 0; j < bk.n_mb; j++) {
        const mm_mb_breakdown *e = &bk.mb[j];
        ck_assert_int_eq(e->index, j);
        ck_assert(e->tokens > 0 && e->sequences == 2 && fmod(e->tokens, 2) == 0);
        double L = e->tokens / 2;
        ck_assert_msg(fabs(e->sum_sq - 2 * L * L) <= 1e-9 * e->sum_sq, "S %g for 2 x %g", e->sum_sq, L);
        for (int k = 0; k < bk.n_mb; k++) {
            const mm_mb_breakdown *o = &bk.mb[k];
            if (o->tokens < 1.25 * e->tokens)
                continue;
            for (int p = 0; p < 3; p++)
                ck_assert(mm_pass_breakdown_pass(&o->layer, p) > mm_pass_breakdown_pass(&e->layer, p));
            ck_assert_msg(o->layer.s[MM_OP_F][MM_BK_ATTN] > e->layer.s[MM_OP_F][MM_BK_ATTN],
                          "attention at %g tokens vs %g", o->tokens, e->tokens);
        }
        if (checked < 2) { /* the same shape as a text run's nominal micro-batch */
            char seq[64];
            snprintf(seq, sizeof seq, "train.seq_len=%.0f", L);
            const char *tsets[] = {"train.micro_batch=2", seq, "train.global_batch=256"};
            mm_sim text = {0};
            prepare(&text, tsets, 3);
            ck_assert_int_eq(mm_sim_get_breakdown(&text, &nom, &err), 0);
            ck_assert_int_eq(nom.mb_count, 0); /* no workload file: nothing drawn */
            for (int p = 0; p < 3; p++)
                for (int q = 0; q < MM_BK_KINDS; q++)
                    ck_assert_msg(fabs(e->layer.s[p][q] - nom.layer.s[p][q]) <= 1e-9 * fmax(nom.layer.s[p][q], 1e-12),
                                  "mb %d (2 x %g) pass %d kind %d: %g vs nominal %g", j, L, p, q, e->layer.s[p][q],
                                  nom.layer.s[p][q]);
            mm_sim_free(&text);
            checked++;
        }
    }
    char dir[256], args[1024];
    mmx_tmpdir(dir, sizeof dir, "mbbk");
    snprintf(args, sizeof args,
             "run --no-db --json --set model=models/llama-2-7b.json --set parallel.vision=null --set cluster.nodes=1 "
             "--set 'parallel.llm={tp: 1, pp: 1, dp: 8}' --set workload=workloads/text-only.yaml "
             "--set train.micro_batch=2 --set train.padding=longest --set train.global_batch=256");
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 0);
    mmx_rmdir(dir);
    const char *mb = strstr(out, "\"micro_batches\": {\"iteration\": 0, \"replica\": 0, \"count\": ");
    ck_assert_msg(mb, "no micro_batches in the breakdown");
    int count = 0;
    double gemm = 0;
    ck_assert(sscanf(mb + strlen("\"micro_batches\": {\"iteration\": 0, \"replica\": 0, \"count\": "), "%d", &count) == 1);
    ck_assert_int_eq(count, bk.mb_count);
    const char *g = strstr(mb, "\"layer\": {\"fwd\": {\"gemm_s\": ");
    ck_assert(g && sscanf(g + strlen("\"layer\": {\"fwd\": {\"gemm_s\": "), "%lf", &gemm) == 1);
    ck_assert_msg(fabs(gemm - bk.mb[0].layer.s[MM_OP_F][MM_BK_GEMM]) <= 1e-8 * gemm, "%g vs %g", gemm,
                  bk.mb[0].layer.s[MM_OP_F][MM_BK_GEMM]);
    mm_sim_free(&sim);
}
END_TEST

/* The kernels a framework adds to a layer (mm_framework_layer_extras), by
 * formula: GPT-3 1.3B (h 2048, 16 heads of 128, QKV bias), 2048 tokens on
 * a rank of tp 2 (q = kv = 1024 wide), 16-bit.  megatron-local with
 * --use-flash-attn: the separate QKV bias add 2 T (q + 2kv) e, the four
 * rearrange copies (q, k, v in, the output back) 2 T 4q e, and the 1-byte
 * dropout masks of the two residual branches 2 T h; megatron-core: the
 * masks only; hf-deepspeed: one output transpose 2 T q e, no masks.  The
 * embedding's weight gradient (first stage): a dense V/tp x h gradient
 * zero-filled, scattered into and accumulated in fp32, 12 bytes per table
 * element + 6 per token-hidden element.  Sequence parallelism adds one
 * AG + RS pair to the backward's TP messages (the input all-gathered again
 * for the weight gradient).  Exact. */
START_TEST(extra_kernels_by_formula)
{
    mm_llm m;
    mm_err err;
    ck_assert(mm_llm_load("models/gpt3-1.3b.json", &m, &err) == 0);
    ck_assert(m.qkv_bias && m.hidden == 2048 && m.heads * m.head_dim == 2048);
    double T = 2048, q = 1024, e = 2, h = 2048;
    mm_op_cost ops[8];
    mm_framework fw;
    load_profile("megatron-local", &fw);
    int n = mm_framework_layer_extras(&fw, &m, T, T, 2, false, 2, ops, 0, 8);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(ops[0].name, "qkv_bias");
    ck_assert(ops[0].bytes == 2 * T * 3 * q * e);
    ck_assert_str_eq(ops[1].name, "attn_layout");
    ck_assert(ops[1].bytes == 2 * T * 4 * q * e);
    ck_assert_str_eq(ops[2].name, "dropout_mask");
    ck_assert(ops[2].bytes == 2 * T * h);
    ck_assert_int_eq(mm_framework_layer_extras(&fw, &m, T, T, 2, false, 2, ops, 0, 2), -1); /* cap */
    load_profile("megatron-core", &fw);
    n = mm_framework_layer_extras(&fw, &m, T, T / 2, 2, false, 2, ops, 0, 8);
    ck_assert(n == 1 && !strcmp(ops[0].name, "dropout_mask") && ops[0].bytes == 2 * (T / 2) * h);
    load_profile("hf-deepspeed", &fw);
    n = mm_framework_layer_extras(&fw, &m, T, T, 2, false, 2, ops, 0, 8);
    ck_assert(n == 1 && !strcmp(ops[0].name, "attn_layout") && ops[0].bytes == 2 * T * q * e);
    mm_cluster c;
    ck_assert(mm_cluster_load("topologies/dgx-a100.yaml", 1, &c, &err) == 0);
    mm_fw_ctx fc = {&c.gpu, MM_DTYPE_BF16, &fw, MM_ATTN_IMPL_FLASH2, 2, NULL, {0}, 0, 0, 0};
    double V = (double)m.vocab;
    ck_assert(mm_fw_embed_wgrad_time(&fc, &m, T, 2) == mm_mem_time(&c.gpu, V * h / 2 * 12 + T * h * 6));
    mm_cluster_free(&c);
    double msgs[2];
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"parallel.llm={tp: 2, pp: 1, dp: 4}", i ? "train.sequence_parallel=true"
                                                                       : "train.sequence_parallel=false"};
        mm_sim sim = {0};
        prepare(&sim, sets, 2);
        mm_sim_costs cs;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &cs, &err), 0);
        msgs[i] = cs.spec.tp_msgs_bwd;
        ck_assert_int_eq(cs.spec.tp_msgs_fwd, 2);
        mm_sim_costs_free(&cs);
        mm_sim_free(&sim);
    }
    ck_assert(msgs[0] == 2 && msgs[1] == 3);
}
END_TEST

/* megatron-local's per-token kernels' backward bytes, as its profile counts
 * them from the kernels' code (GPT-3 1.3B, 2048 tokens, tp 2, 16-bit, as
 * above): apex LayerNorm 2.5x the forward's bytes (5 passes against 2),
 * bias-GeLU and bias-dropout-add the generic 2x (4 and 6 passes), the
 * separate QKV bias add's backward one read of the gradient (half the
 * forward's), the layout copy none but the cat of the q, k, v gradients
 * (2 T (q + 2kv) e), the dropout masks read once (the forward's bytes).
 * hf-deepspeed counts none exactly: every backward is the generic 2x. */
START_TEST(per_token_backward_counted_from_code)
{
    mm_llm m;
    mm_err err;
    ck_assert(mm_llm_load("models/gpt3-1.3b.json", &m, &err) == 0);
    double T = 2048, q = 1024, e = 2, h = 2048;
    mm_framework fw;
    load_profile("megatron-local", &fw);
    mm_op_cost ops[8] = {
        {.name = "norm_attn", .kind = MM_OPK_MEM, .bytes = 2 * T * h * e},
        {.name = "act", .kind = MM_OPK_MEM, .bytes = 2 * T * 4 * q * e},
        {.name = "residual_mlp", .kind = MM_OPK_MEM, .bytes = 3 * T * h * e},
    };
    mm_framework_scale_ops(&fw, ops, 3);
    ck_assert(mm_op_pass(&ops[0], MM_OP_B).bytes == 5 * T * h * e);
    ck_assert(mm_op_pass(&ops[1], MM_OP_B).bytes == 4 * T * 4 * q * e);
    ck_assert(mm_op_pass(&ops[2], MM_OP_B).bytes == 6 * T * h * e);
    for (int unfused = 0; unfused < 2; unfused++) {
        int n = mm_framework_layer_extras(&fw, &m, T, T, 2, unfused, 2, ops, 0, 8);
        ck_assert_int_eq(n, 3);
        ck_assert(mm_op_pass(&ops[0], MM_OP_B).bytes == T * 3 * q * e);
        ck_assert(mm_op_pass(&ops[1], MM_OP_B).bytes == 2 * T * 3 * q * e);
        ck_assert(mm_op_pass(&ops[2], MM_OP_B).bytes == 2 * T * h);
        for (int i = 0; i < 3; i++)
            ck_assert(mm_op_pass(&ops[i], MM_OP_W).bytes == 0);
    }
    load_profile("hf-deepspeed", &fw);
    mm_op_cost norm = {.name = "norm_attn", .kind = MM_OPK_MEM, .bytes = 2 * T * h * e};
    mm_framework_scale_ops(&fw, &norm, 1);
    ck_assert(mm_op_pass(&norm, MM_OP_B).bytes == 2 * norm.bytes);
    int n = mm_framework_layer_extras(&fw, &m, T, T, 2, false, 2, ops, 0, 8);
    ck_assert(n == 1 && mm_op_pass(&ops[0], MM_OP_B).bytes == 2 * ops[0].bytes);
    (void)err;
}
END_TEST

/* megatron-local's bias-GeLU and bias-dropout-add are TorchScript
 * functions (kernels.act.jit, kernels.residual.jit; the dropout mask is
 * theirs): forward and backward timed at the GPU's jit rate
 * (mm_jit_mem_time), the norms by the memory table; the other profiles
 * fuse no kernel that way. */
START_TEST(jit_kernels_are_timed_at_the_gpus_jit_rate)
{
    mm_framework fw;
    for (int i = 0; i < 4; i++) {
        load_profile(profiles[i], &fw);
        bool local = !strcmp(profiles[i], "megatron-local");
        ck_assert(fw.group[MM_FW_ACT].jit == local && fw.group[MM_FW_RESIDUAL].jit == local);
        ck_assert(!fw.group[MM_FW_NORM].jit && !fw.group[MM_FW_XENT].jit && !fw.group[MM_FW_ROPE].jit);
    }
    load_profile("megatron-local", &fw);
    static mm_cluster c;
    mm_err err;
    ck_assert(mm_cluster_load("topologies/dgx-a100.yaml", 1, &c, &err) == 0);
    mm_fw_ctx ctx = {.gpu = &c.gpu, .dt = MM_DTYPE_FP16, .fw = &fw, .attn = MM_ATTN_IMPL_UNFUSED, .dtype_bytes = 2};
    double T = 4096, h = 2048, e = 2;
    mm_op_cost ops[3] = {{.name = "act", .kind = MM_OPK_MEM, .bytes = 8 * T * h * e},
                         {.name = "residual_mlp", .kind = MM_OPK_MEM, .bytes = 3 * T * h * e},
                         {.name = "norm_mlp", .kind = MM_OPK_MEM, .bytes = 2 * T * h * e}};
    /* each alone: forward, and backward at bwd_traffic (2 and 2) or twice */
    double want_f[3] = {mm_jit_mem_time(&c.gpu, ops[0].bytes), mm_jit_mem_time(&c.gpu, ops[1].bytes),
                        mm_mem_time(&c.gpu, ops[2].bytes)};
    double want_b[3] = {mm_jit_mem_time(&c.gpu, 2 * ops[0].bytes), mm_jit_mem_time(&c.gpu, 2 * ops[1].bytes),
                        mm_mem_time(&c.gpu, 2.5 * ops[2].bytes)};
    for (int i = 0; i < 3; i++) {
        mm_pass_breakdown t = mm_fw_time_ops(&ctx, &ops[i], 1);
        ck_assert_msg(rel(t.s[MM_OP_F][MM_BK_MEM], want_f[i]) < 1e-12, "%s fwd", ops[i].name);
        ck_assert_msg(rel(t.s[MM_OP_B][MM_BK_MEM], want_b[i]) < 1e-12, "%s bwd", ops[i].name);
    }
    ck_assert(want_f[0] > 1.4 * mm_mem_time(&c.gpu, ops[0].bytes));
    mm_llm m = {.hidden = 2048, .heads = 16, .kv_heads = 16, .head_dim = 128, .ffn = 8192};
    mm_op_cost x[4];
    int n = mm_framework_layer_extras(&fw, &m, T, T, 1, true, 2, x, 0, 4);
    ck_assert(n > 0 && !strcmp(x[n - 1].name, "dropout_mask") && x[n - 1].jit);
    ck_assert(!x[0].jit); /* the layout copy */
    load_profile("megatron-core", &fw);
    mm_pass_breakdown t = mm_fw_time_ops(&ctx, &ops[0], 1);
    ck_assert(t.s[MM_OP_F][MM_BK_MEM] == mm_mem_time(&c.gpu, ops[0].bytes));
    mm_cluster_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("framework");
    TCase *tc = tcase_create("framework");
    tcase_add_test(tc, profiles_say_what_the_code_does);
    tcase_add_test(tc, bad_profiles_are_refused_by_file_line_and_key);
    tcase_add_test(tc, scenario_keys);
    tcase_add_test(tc, activation_memory_by_attention_kernel);
    tcase_add_test(tc, grad_reduce_dtype);
    tcase_add_test(tc, eager_kernels_cost_more);
    tcase_add_test(tc, breakdown_adds_up);
    tcase_add_test(tc, padding_is_a_profile_default);
    tcase_add_test(tc, host_work_per_kernel_and_pass);
    tcase_add_test(tc, optimizer_phase_term_by_term);
    tcase_add_test(tc, optimizer_fp16_loss_scale);
    tcase_add_test(tc, cli_bad_profile_and_json_breakdown);
    tcase_add_test(tc, breakdown_lists_the_drawn_micro_batches);
    tcase_add_test(tc, extra_kernels_by_formula);
    tcase_add_test(tc, per_token_backward_counted_from_code);
    tcase_add_test(tc, jit_kernels_are_timed_at_the_gpus_jit_rate);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
