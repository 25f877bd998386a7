/* test_framework.c - framework profiles (the frameworks/ folder) and
 * what they change.  The loader refuses bad profiles with file, line and
 * key; the profiles say what their framework's code says; the cost bridge
 * applies them: attention kernel by profile and GPU, activation memory by
 * kernel, gradient-reduce dtype, eager kernels, the optimizer phase, the
 * padding default, and a breakdown that adds up to the stage times
 * mm_sim_run executes (the send/recv model is tests/test_p2p.c).
 * Tolerances are stated at each assertion. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/compute.h"
#include "hw/net.h"
#include "model/framework_ops.h"
#include "model/framework.h"
#include "model/memory.h"
#include "cost/costs.h"
#include "exec/exec.h"
#include "cost/fwcost.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "plan/estimate.h"
#include "cost/breakdown.h"
#include "mmsim_exe.h"

static double rel(double a, double b) { return fabs(a - b) / fabs(b); }

static const char *const profiles[] = {"megatron-core", "megatron-local", "hf-deepspeed", "fsdp"};

static void load_profile(const char *name, mm_framework *fw)
{
    char path[256];
    snprintf(path, sizeof path, "frameworks/%s.yaml", name);
    mm_err err;
    ck_assert_msg(mm_framework_load(path, fw, &err) == 0, "%s:%d: %s: %s", err.file, err.line, err.key, err.msg);
}

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
    ck_assert(fw.host_overhead_s > 0 && !fw.zero_grad_buffer);
    load_profile("fsdp", &fw);
    ck_assert_int_eq(mm_framework_grad_bytes(&fw, MM_DTYPE_BF16), 4);
    ck_assert(fw.bucket_params == 0 && fw.bucket_per_dp == 0);
}
END_TEST

/* mm_overlap_delay at the slowdown the shipped topologies state (the
 * paper's average, MM_OVERLAP_SLOWDOWN_DEFAULT: topologies/dgx-*.yaml). */
static double odelay(double overlapped_s)
{
    return mm_overlap_delay(overlapped_s, MM_OVERLAP_SLOWDOWN_DEFAULT);
}

/* Copies in to out with the first line holding `match` replaced by
 * `repl` (closing both); returns that line's number, 0 when none held it. */
static int copy_with_line(FILE *in, FILE *out, const char *match, const char *repl)
{
    ck_assert(in && out);
    char line[1024];
    int n = 0, hit = 0;
    while (fgets(line, sizeof line, in)) {
        n++;
        if (!hit && strstr(line, match)) {
            fputs(repl, out);
            hit = n;
        } else {
            fputs(line, out);
        }
    }
    fclose(in);
    fclose(out);
    return hit;
}

/* A copy of megatron-core.yaml with one line replaced, loaded. */
static int load_edited(const char *from, const char *to, mm_err *err, char *tmp, size_t len)
{
    snprintf(tmp, len, "/tmp/mmsim-fw-XXXXXX");
    int fd = mkstemp(tmp);
    ck_assert(fd >= 0);
    int done = copy_with_line(fopen("frameworks/megatron-core.yaml", "r"), fdopen(fd, "w"), from, to);
    ck_assert_msg(done, "no line with '%s'", from);
    mm_framework fw;
    int rc = mm_framework_load(tmp, &fw, err);
    unlink(tmp);
    return rc;
}

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

static void prepare(mm_sim *sim, const char *const *extra, int n_extra)
{
    const char *sets[24];
    int n = 0;
    sets[n++] = "model=models/llama-2-7b.json";
    sets[n++] = "workload=text";
    sets[n++] = "parallel.vision=null";
    sets[n++] = "cluster.nodes=1";
    sets[n++] = "parallel.llm={tp: 1, pp: 1, dp: 8}";
    sets[n++] = "train.global_batch=8";
    for (int i = 0; i < n_extra; i++)
        sets[n++] = extra[i];
    static mm_scenario sc;
    mm_err err;
    mm_scenario_free(&sc);
    ck_assert_msg(mm_scenario_load(&sc, NULL, sets, n, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_msg(mm_sim_prepare(sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
}

/* prepare() under framework profile `fw` at ZeRO stage `zero`, plus one
 * more scenario key when `extra` is not NULL. */
static void prepare_fw_zero(mm_sim *sim, const char *fw, int zero, const char *extra)
{
    char fwk[64], zs[32];
    snprintf(fwk, sizeof fwk, "train.framework=%s", fw);
    snprintf(zs, sizeof zs, "train.zero=%d", zero);
    const char *sets[] = {fwk, zs, extra};
    prepare(sim, sets, extra ? 3 : 2);
}

static int prepare_rc(const char *const *extra, int n_extra, mm_err *err)
{
    const char *sets[24];
    int n = 0;
    sets[n++] = "model=models/llama-2-7b.json";
    sets[n++] = "workload=text";
    sets[n++] = "parallel.vision=null";
    sets[n++] = "cluster.nodes=1";
    sets[n++] = "parallel.llm={tp: 1, pp: 1, dp: 8}";
    sets[n++] = "train.global_batch=8";
    for (int i = 0; i < n_extra; i++)
        sets[n++] = extra[i];
    static mm_scenario sc;
    static mm_sim sim;
    mm_scenario_free(&sc);
    int rc = mm_scenario_load(&sc, NULL, sets, n, err);
    if (!rc)
        rc = mm_sim_prepare(&sim, &sc, err);
    mm_sim_free(&sim);
    return rc;
}

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
    static mm_sim sim;
    const char *h100[] = {"cluster.topology=topologies/dgx-h100.yaml"};
    prepare(&sim, h100, 1);
    ck_assert_str_eq(sim.fw.name, "megatron-core"); /* the default */
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
        static mm_sim sim;
        prepare(&sim, base, 8);
        mm_sim_memory mem;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_memory(&sim, &mem, &err), 0);
        gib[u] = mem.peak_gib;
        oom[u] = mem.oom;
        mm_sim_memory_free(&mem);
        mm_sim_free(&sim);
    }
    ck_assert_msg(!oom[0] && oom[1], "fused %g GiB, unfused %g GiB", gib[0], gib[1]);
    ck_assert_msg(fabs(gib[1] - gib[0] - 80.0) < 1e-9, "difference %g GiB", gib[1] - gib[0]);
    ck_assert_msg(fabs(gib[0] - 64.7) < 0.05, "fused %g GiB", gib[0]);
    /* the eager core (flash-attn's SelfAttention) keeps the same scores */
    ck_assert_msg(oom[2] && gib[2] == gib[1], "eager %g GiB, unfused %g GiB", gib[2], gib[1]);
    /* every profile on its own kernel: megatron-local's default is the
     * unfused core (no --use-flash-attn), OOM at the same 144.7 GiB; fsdp's
     * FlashAttention-2 with fp32 gradients holds megatron-core's 64.7;
     * hf-deepspeed's 16-bit gradients 2 bytes per parameter less */
    static const bool fits[] = {true, false, true, true};
    for (int i = 0; i < 4; i++) {
        char fwk[64];
        snprintf(fwk, sizeof fwk, "train.framework=%s", profiles[i]);
        base[7] = fwk;
        static mm_sim sim;
        prepare(&sim, base, 8);
        mm_sim_memory mem;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_memory(&sim, &mem, &err), 0);
        double params = (double)mm_llm_params(&sim.llm);
        double want = i == 1 ? gib[1] : i == 2 ? gib[0] - 2.0 * params / MM_GIB : gib[0];
        ck_assert_msg(mem.oom == !fits[i] && fabs(mem.peak_gib - want) < 1e-9, "%s: %g GiB, oom %d", profiles[i],
                      mem.peak_gib, mem.oom);
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
        static mm_sim sim;
        prepare(&sim, sets, 4);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        bytes[i] = c.stages[0].grad_bytes;
        ck_assert(fabs(c.stages[0].param_bytes - (double)mm_llm_params(&sim.llm) * 2) < 1);
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
        static mm_sim sim;
        prepare(&sim, sets, 4);
        mm_sim_memory mem;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_memory(&sim, &mem, &err), 0);
        gib[i] = mem.peak_gib;
        params = (double)mm_llm_params(&sim.llm);
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
        static mm_sim sim;
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
    static mm_sim sim;
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
    double ar = mm_net_analytic_time(&sim.cluster, MM_COLL_ALLREDUCE, g2, 2, c.spec.tp_bytes);
    ck_assert(fabs(bk.tp_fwd_s - 2 * ar) < 1e-15 && fabs(bk.tp_bwd_s - 2 * ar) < 1e-15);
    ck_assert(bk.p2p_s > 0 && bk.dp_grad_s > 0);
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
}
END_TEST

/* Overlap contention: rank 0 runs a 10 ms compute op while a 1 GiB DP
 * all-reduce with rank 1 is in flight on its DP stream (some 4.6 ms of it
 * left).  With the executor's slowdown the compute runs at 1 / (1 + 0.189)
 * of its pace (Lee et al. 2025) while the all-reduce runs and at full
 * pace after it: 10 ms + overlapped x 0.189 / 1.189 (mm_overlap_delay),
 * not the whole 10 ms slowed; without it 10 ms; a compute op that starts
 * after the communication ended is not slowed, and the communication
 * itself is untouched. */
START_TEST(overlap_contention)
{
    mm_cluster c;
    mm_err err;
    ck_assert(mm_cluster_load("topologies/dgx-a100.yaml", 1, &c, &err) == 0);
    double comp_s[2][2], comm_s[2], overlapped_s = 0;
    for (int k = 0; k < 2; k++) {
        mm_graph g;
        ck_assert_int_eq(mm_graph_init(&g, 2), 0);
        for (int r = 0; r < 2; r++) {
            int gp = r;
            ck_assert_int_eq(mm_graph_rank_gpus(&g, r, &gp, 1), 0);
        }
        int gpus[2] = {0, 1};
        int64_t cl = mm_graph_add_coll(&g, MM_COLL_ALLREDUCE, 2, 1, 1073741824.0, gpus, 2);
        mm_op dp = {.stream = MM_STREAM_DP, .cat = MM_CAT_DP, .layer = -1, .stage = 0, .mb = -1, .coll = (int32_t)cl,
                    .peer = -1};
        mm_op comp = {.stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .layer = 0, .stage = 0, .mb = 0, .coll = -1,
                      .peer = -1, .dur_s = 0.010};
        uint32_t dps[2];
        for (int r = 0; r < 2; r++) {
            dp.rank = r;
            dps[r] = (uint32_t)mm_graph_add_op(&g, &dp);
        }
        comp.rank = 0;
        mm_op z = comp;
        z.dur_s = 1e-6; /* a starts 1 us in, the all-reduce in flight */
        ck_assert(mm_graph_add_op(&g, &z) >= 0);
        int64_t a = mm_graph_add_op(&g, &comp);
        int64_t b = mm_graph_add_op(&g, &comp); /* after it, and after a */
        ck_assert(a >= 0 && b >= 0);
        ck_assert_int_eq(mm_graph_dep(&g, dps[0], (uint32_t)b), 0);
        ck_assert_int_eq(mm_graph_finish(&g), 0);
        mm_engine *eng = mm_engine_alloc();
        ck_assert_ptr_nonnull(eng);
        mm_time *st = calloc(g.n_ops, sizeof *st), *en = calloc(g.n_ops, sizeof *en), t1;
        mm_exec_opts o = {.overlap_slowdown = k ? c.gpu.overlap_slowdown : 0};
        ck_assert_int_eq(mm_exec_run_opts(eng, &g, &c, MM_EXEC_NET_ANALYTIC, &o, st, en, &t1, &err), 0);
        comp_s[k][0] = (double)(en[a] - st[a]) * 1e-9;
        comp_s[k][1] = (double)(en[b] - st[b]) * 1e-9;
        comm_s[k] = (double)(en[dps[0]] - st[dps[0]]) * 1e-9;
        overlapped_s = (double)(en[dps[0]] - st[a]) * 1e-9;
        ck_assert(st[b] >= en[dps[0]]);
        free(st);
        free(en);
        mm_engine_free(eng);
        mm_graph_free(&g);
    }
    ck_assert(fabs(comp_s[0][0] - 0.010) < 1e-9 && fabs(comp_s[0][1] - 0.010) < 1e-9);
    ck_assert(overlapped_s > 0.001 && overlapped_s < 0.010);
    ck_assert(c.gpu.overlap_slowdown == 0.189); /* dgx-a100.yaml */
    ck_assert_msg(fabs(comp_s[1][0] - (0.010 + mm_overlap_delay(overlapped_s, 0.189))) < 2e-9,
                  "overlapped compute %g s", comp_s[1][0]);
    ck_assert(fabs(mm_overlap_delay(1.0, 0.189) - 0.189 / 1.189) < 1e-15);
    ck_assert(fabs(comp_s[1][1] - 0.010) < 1e-9);
    ck_assert(comm_s[0] == comm_s[1] && comm_s[0] > 0.001);
    mm_cluster_free(&c);
}
END_TEST

/* ZeRO-3 gathers by framework: DeepSpeed fetches a Llama layer module by
 * module (two norms, q, k, v, o, gate, up, down: 9 all-gathers, each with
 * its latency), FSDP2 a block at once; the bytes per layer are the same. */
START_TEST(zero3_gathers_by_framework)
{
    const char *fwk[] = {"train.framework=hf-deepspeed", "train.framework=fsdp"};
    int counts[2] = {0, 0};
    double bytes[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"train.zero=3", "train.attention=flash2", fwk[i]};
        static mm_sim sim;
        prepare(&sim, sets, 3);
        mm_metrics m;
        mm_sim_timeline tl;
        mm_err err;
        ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
        for (uint32_t k = 0; k < tl.graph.n_colls; k++) {
            const mm_coll *c = &tl.graph.colls[k];
            if (c->kind == MM_COLL_ALLGATHER && c->members == 8 && counts[i] == 0) {
                counts[i] = c->count;
                bytes[i] = c->bytes * c->count;
            }
        }
        mm_sim_timeline_free(&tl);
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
    ck_assert_int_eq(counts[0], 9);
    ck_assert_int_eq(counts[1], 1);
    ck_assert(bytes[0] > 0 && fabs(bytes[0] - bytes[1]) < 1e-6 * bytes[1]);
    mm_framework fw;
    mm_llm m;
    mm_err err;
    ck_assert(mm_llm_load("models/llama-2-7b.json", &m, &err) == 0);
    load_profile("hf-deepspeed", &fw);
    ck_assert(fw.z3_prefetch_params == 5e7 && fw.z3_max_live_params == 1e9);
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), 1); /* 5e7 < one 202M-parameter layer */
    /* a 1e9 prefetch bucket: DeepSpeed prefetches min(max_live - live,
     * bucket) = 1e9 - 202.4M = 797.6M parameters, 3 layers of 202.4M (4
     * without the live limit, 1 under a 5e8 limit) */
    double layer = (double)mm_llm_layer_params(&m);
    ck_assert(fabs(layer - 202383360) < 1);
    fw.z3_prefetch_params = 1e9;
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), (int)floor((1e9 - layer) / layer));
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), 3);
    fw.z3_max_live_params = 0;
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), 4);
    fw.z3_max_live_params = 5e8;
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), 1);
}
END_TEST

/* How much the prefetch hides, as the builder says: a gather may start once
 * the compute depth + 1 layers back is done and is queued on the DP stream
 * ahead of the reduce-scatters of the layers still computing.  Llama-2-7B
 * on 8 H100s, ZeRO-3, one micro-batch, the analytic network: a layer's
 * gather G (its z3_gathers collectives, each with its latency) is shorter
 * than its compute, so only the first gather of the forward and of the
 * backward and the last layer's gradient reduce-scatter RS are exposed:
 * exposed = 2 G + RS (1 %: the first backward gather also waits for the
 * head's).  Queued behind the reduce-scatters (the builder before this
 * test), every backward gather was exposed: ~67 ms instead of ~3. */
START_TEST(zero3_prefetch_hides_all_but_the_first_gather)
{
    const char *fwk[] = {"train.framework=hf-deepspeed", "train.framework=fsdp"};
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"train.zero=3", "cluster.topology=topologies/dgx-h100.yaml", "network=analytic", fwk[i]};
        static mm_sim sim;
        prepare(&sim, sets, 4);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_stage_cost *st = &c.stages[0];
        int n = c.spec.z3_gathers, g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        double per = st->param_bytes / st->chunks / n;
        double G = n * mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, per);
        double RS = mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes / st->chunks);
        ck_assert(G < st->fwd_s / st->chunks); /* the case the formula covers */
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        double want = 2 * G + RS;
        ck_assert_msg(fabs(m.exposed_comm_s - want) < 0.01 * want, "%s: exposed %g s, 2G + RS = %g s (G %g, RS %g)",
                      fwk[i], m.exposed_comm_s, want, G, RS);
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
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
    static mm_sim sim;
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
    static mm_sim sim;
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

/* Whether DP communication overlaps compute is a profile default: each
 * profile states its framework's (Megatron-Core's DistributedDataParallel-
 * Config and Megatron-LM's --overlap-grad-reduce / --overlap-param-gather:
 * off; DeepSpeed's overlap_comm: on for stage 3 only, the ZeRO-1/2
 * partitions all-gathered after the step; FSDP2: reduce-scatter and
 * all-gather on their own streams, always), the stage decides what there is
 * to overlap (gradient buckets under ZeRO 0-2, the distributed optimizer's
 * gather under 1-2; ZeRO-3's per-layer reduce-scatters always), auto (the
 * default) takes the profile's and true / false override it.  An explicit
 * false under ZeRO-3 is refused by name under fsdp (no such FSDP2
 * configuration; modeled under hf-deepspeed:
 * zero3_without_overlap_exposes_its_collectives). */
START_TEST(overlap_is_a_profile_default)
{
    static const bool grad[] = {false, false, false, true}, param[] = {false, false, false, true};
    mm_framework fw;
    for (int i = 0; i < 4; i++) {
        load_profile(profiles[i], &fw);
        ck_assert_msg(fw.overlap_grad_reduce == grad[i] && fw.overlap_param_gather == param[i], "%s", profiles[i]);
        for (int z = 0; z <= 3; z++) {
            bool g, p;
            mm_framework_overlap(&fw, z, &g, &p);
            ck_assert_msg(g == (z == 3 || grad[i]) && p == (z >= 1 && z <= 2 && param[i]), "%s zero %d: %d %d",
                          profiles[i], z, g, p);
        }
    }
    /* DeepSpeed's overlap_comm default is stage == 3 (zero/config.py) */
    load_profile("hf-deepspeed", &fw);
    for (int z = 0; z <= 3; z++) {
        bool g, p;
        mm_framework_overlap(&fw, z, &g, &p);
        ck_assert(g == (z == 3) && !p);
    }
    /* the scenario: auto by default; the resolved value reaches the build spec */
    static mm_sim sim;
    mm_err err;
    for (int i = 0; i < 4; i++) {
        char fwk[64];
        snprintf(fwk, sizeof fwk, "train.framework=%s", profiles[i]);
        for (int z = 0; z <= 3; z++) {
            prepare_fw_zero(&sim, profiles[i], z, NULL);
            ck_assert_int_eq(sim.sc.train.overlap_grad_reduce, MM_TOVL_AUTO);
            ck_assert_int_eq(sim.sc.train.overlap_param_gather, MM_TOVL_AUTO);
            mm_sim_costs c;
            ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
            ck_assert(c.spec.overlap_grad_reduce == (z == 3 || grad[i]));
            ck_assert(c.spec.overlap_param_gather == (z >= 1 && z <= 2 && param[i]));
            mm_sim_costs_free(&c);
            mm_sim_free(&sim);
        }
        /* an explicit value overrides the profile either way */
        const char *on[] = {fwk, "train.zero=1", "train.overlap_grad_reduce=true", "train.overlap_param_gather=true"};
        const char *off[] = {fwk, "train.zero=1", "train.overlap_grad_reduce=false",
                             "train.overlap_param_gather=false"};
        for (int k = 0; k < 2; k++) {
            prepare(&sim, k ? off : on, 4);
            bool g, p;
            mm_sim_overlap(&sim, 1, &g, &p);
            ck_assert(g == !k && p == !k);
            mm_sim_free(&sim);
        }
    }
    /* refused by name: false under ZeRO-3 under fsdp, a parameter
     * gather to overlap without the distributed optimizer */
    const char *z3[] = {"train.framework=fsdp", "train.zero=3", "train.overlap_grad_reduce=false"};
    ck_assert_int_eq(prepare_rc(z3, 3, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.overlap_grad_reduce");
    const char *z0[] = {"train.framework=fsdp", "train.zero=0", "train.overlap_param_gather=true"};
    ck_assert_int_eq(prepare_rc(z0, 3, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.overlap_param_gather");
    const char *bad[] = {"train.overlap_grad_reduce=maybe"};
    ck_assert_int_eq(prepare_rc(bad, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.overlap_grad_reduce");
}
END_TEST

/* What the overlap moves, by formula.  Llama-2-7B on 8 H100s, ZeRO-1, one
 * micro-batch, the analytic network, fsdp's fp32 reduce: with the overlaps
 * off (the key set false) the whole stage's gradients are reduce-scattered
 * after the backward and its 16-bit parameters all-gathered after the
 * step: exposed = RS(grad) + AG(params) (1e-6).  Under fsdp's default
 * (auto: both on) buckets of one layer (FSDP2: one reduce-scatter per
 * block) leave during the backward and the gathers open the iteration, so
 * only the last bucket's reduce-scatter and the first one's gather are
 * exposed: RS(grad / L) + AG(params / L) (1 %).  The iteration gains the
 * hidden communication less the contention of the overlapped compute
 * (exec.h: mm_overlap_delay of the time it overlaps, which is the hidden
 * communication's, 2 %). */
START_TEST(overlap_hides_dp_communication)
{
    double exposed[2], t[2], rs_all = 0, ag_all = 0, layers = 0;
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"train.framework=fsdp", "train.zero=1", "cluster.topology=topologies/dgx-h100.yaml",
                              "network=analytic", k ? "train.overlap_grad_reduce=false" : "train.overlap_grad_reduce=auto",
                              k ? "train.overlap_param_gather=false" : "train.overlap_param_gather=auto"};
        static mm_sim sim;
        prepare(&sim, sets, 6);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_stage_cost *st = &c.stages[0];
        int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        rs_all = mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes);
        ag_all = mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes);
        layers = st->chunks;
        double rs1 = mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes / layers);
        double ag1 = mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes / layers);
        /* the formula's case: a bucket's traffic is shorter than its layer's compute */
        ck_assert(rs1 < st->bwd_s / layers && ag1 < st->fwd_s / layers);
        ck_assert(fabs(st->param_bytes * 2 - st->grad_bytes) < 1); /* fp32 reduce, bf16 gathers */
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        exposed[k] = m.exposed_comm_s;
        t[k] = m.iteration_time_s;
        double want = k ? rs_all + ag_all : rs1 + ag1;
        ck_assert_msg(fabs(exposed[k] - want) < (k ? 1e-6 : 0.01) * want, "%s: exposed %g s, formula %g s",
                      k ? "off" : "auto", exposed[k], want);
        mm_metrics_free(&m);
        /* the planner's pre-score: off, the whole RS + AG; auto, one
         * bucket of each plus the overlap slowdown on the rest (which fits
         * behind one micro-batch's backward and forward here) */
        mm_metrics e;
        ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
        double ewant = k ? rs_all + ag_all
                         : (rs_all + ag_all) / layers + mm_overlap_delay((rs_all + ag_all) * (1 - 1 / layers), 0.189);
        ck_assert_msg(fabs(e.exposed_comm_s - ewant) < 1e-9 * ewant, "%s: estimate %g s, formula %g s",
                      k ? "off" : "auto", e.exposed_comm_s, ewant);
        mm_metrics_free(&e);
        mm_sim_free(&sim);
    }
    double hidden = exposed[1] - exposed[0];
    ck_assert(layers == 32 && hidden > 0.9 * (rs_all + ag_all));
    ck_assert_msg(t[1] - t[0] <= hidden * (1 + 1e-9) && t[1] - t[0] >= hidden - 1.02 * mm_overlap_delay(hidden, 0.189),
                  "iteration %g -> %g s, hidden %g s", t[1], t[0], hidden);
}
END_TEST

/* A copy of topologies/dgx-h100.yaml whose gpu.overlap_slowdown line says
 * `value`, in a fresh folder beside a link to the shipped kernel tables
 * (the file names them relative to its own folder); dir gets the folder. */
static void h100_with_slowdown(const char *value, char *dir, size_t dlen, char *path, size_t plen)
{
    char cwd[512], link[600], repl[96];
    const char *src = getenv("MMSIM_SRCDIR");
    if (!src)
        src = getcwd(cwd, sizeof cwd);
    ck_assert_ptr_nonnull(src);
    snprintf(dir, dlen, "/tmp/mmsim-ovl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char kernels[600], topo[600];
    snprintf(kernels, sizeof kernels, "%s/topologies/kernels", src);
    snprintf(link, sizeof link, "%s/kernels", dir);
    ck_assert_int_eq(symlink(kernels, link), 0);
    snprintf(topo, sizeof topo, "%s/topologies/dgx-h100.yaml", src);
    snprintf(path, plen, "%s/topo.yaml", dir);
    snprintf(repl, sizeof repl, "  overlap_slowdown: %s\n", value);
    ck_assert(copy_with_line(fopen(topo, "r"), fopen(path, "w"), "  overlap_slowdown:", repl) > 0);
}

static void h100_with_slowdown_free(const char *dir, const char *path)
{
    char link[600];
    snprintf(link, sizeof link, "%s/kernels", dir);
    unlink(link);
    unlink(path);
    rmdir(dir);
}

/* The topology's gpu.overlap_slowdown reaches the executor and the
 * pre-score.  The fsdp scenario of overlap_hides_dp_communication (its
 * one-layer buckets leave during the backward, the gathers open the
 * iteration, H = (1 - 1/L) of RS + AG hidden behind compute) on copies of
 * dgx-h100.yaml that say s = 0, 0.189 (the shipped value) and 0.4: the
 * overlapped compute runs at 1 / (1 + s) of its pace, so the iteration
 * grows by mm_overlap_delay(H, s) = H s / (1 + s) over s = 0 (within 1 %:
 * a bucket's reduce can outlast its layer's compute at the backward's end),
 * the communication is untouched (exposed time equal to 1e-9), and the
 * pre-score charges exactly that delay (1e-9). */
START_TEST(overlap_slowdown_from_topology)
{
    static const char *const values[] = {"0", "0.189", "0.4"};
    double t[3], exposed[3], est[3], hidden = 0;
    for (int k = 0; k < 3; k++) {
        char dir[64], path[128], set[160];
        h100_with_slowdown(values[k], dir, sizeof dir, path, sizeof path);
        snprintf(set, sizeof set, "cluster.topology=%s", path);
        const char *sets[] = {"train.framework=fsdp", "train.zero=1", set, "network=analytic"};
        static mm_sim sim;
        prepare(&sim, sets, 4);
        h100_with_slowdown_free(dir, path);
        ck_assert(sim.cluster.gpu.overlap_slowdown == atof(values[k]));
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_stage_cost *st = &c.stages[0];
        int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        double rs = mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes);
        double ag = mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes);
        hidden = (rs + ag) * (1 - 1.0 / st->chunks);
        mm_sim_costs_free(&c);
        mm_metrics m, e;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        t[k] = m.iteration_time_s;
        exposed[k] = m.exposed_comm_s;
        mm_metrics_free(&m);
        ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
        est[k] = e.exposed_comm_s;
        mm_metrics_free(&e);
        mm_sim_free(&sim);
    }
    for (int k = 1; k < 3; k++) {
        double s = atof(values[k]), want = mm_overlap_delay(hidden, s);
        ck_assert_msg(fabs((t[k] - t[0]) - want) < 0.01 * want, "s = %g: iteration +%g s, formula %g s", s,
                      t[k] - t[0], want);
        ck_assert(fabs(exposed[k] - exposed[0]) < 1e-9 * exposed[0]);
        ck_assert_msg(fabs((est[k] - est[0]) - want) < 1e-9 * est[0], "s = %g: pre-score +%g s, formula %g s", s,
                      est[k] - est[0], want);
    }
    ck_assert(t[2] > t[1] && t[1] > t[0] && hidden > 0);
}
END_TEST

/* A homogeneous encoder's DP traffic: its gradients and parameters are not
 * in the LLM's buckets, so they leave in the tail, overlap or not, and the
 * distributed optimizer gathers 16-bit parameters (the gradients are fp32
 * under fsdp).  LLaVA-1.5-7B (CLIP ViT-L/14-336 in stage 0), dp 8, ZeRO-1,
 * the analytic network: the DP stream carries, per rank,
 *   off: RS(g + eg) + AG(p + ep)
 *   on:  L x (RS(g / L) + AG(p / L)) + RS(eg) + AG(ep)
 * (g, p the LLM stage's gradient and parameter bytes, eg, ep the
 * encoder's, L = 32 one-layer buckets), 1e-6 relative.  Under overlap the
 * encoder's share was left out before (its gradients never reduced). */
START_TEST(homogeneous_encoder_in_the_dp_tail)
{
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"model=models/llava-1.5-7b.json",
                              "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}",
                              "cluster.topology=topologies/dgx-h100.yaml", "cluster.nodes=1",
                              "parallel.placement=homogeneous", "parallel.llm={tp: 1, pp: 1, dp: 8}",
                              "train.global_batch=8", "train.zero=1", "network=analytic", "train.framework=fsdp",
                              k ? "train.overlap_grad_reduce=true" : "train.overlap_grad_reduce=false",
                              k ? "train.overlap_param_gather=true" : "train.overlap_param_gather=false"};
        static mm_scenario sc;
        static mm_sim sim;
        mm_err err;
        mm_scenario_free(&sc);
        ck_assert_msg(mm_scenario_load(&sc, NULL, sets, 12, &err) == 0, "%s: %s", err.key, err.msg);
        ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
        mm_sim_costs c;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_stage_cost *st = &c.stages[0];
        ck_assert_int_eq(c.spec.n_enc, 1);
        double g = st->grad_bytes, p = st->param_bytes, eg = c.spec.enc[0].grad_bytes,
               ep = c.spec.enc[0].param_bytes, L = st->chunks;
        ck_assert(eg > 0 && fabs(2 * ep - eg) < 1 && L == 32);
        int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
#define RS(x) mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, (x))
#define AG(x) mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, (x))
        double want = k ? L * (RS(g / L) + AG(p / L)) + RS(eg) + AG(ep) : RS(g + eg) + AG(p + ep);
        double enc_tail = RS(eg) + AG(ep);
#undef RS
#undef AG
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        ck_assert_msg(fabs(m.stages[0].comm_s - want) < 1e-6 * want, "%s: DP %g s, formula %g s", k ? "on" : "off",
                      m.stages[0].comm_s, want);
        ck_assert(m.exposed_comm_s >= enc_tail * (1 - 1e-9)); /* after the last backward, after the step */
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
}
END_TEST

/* Host dispatch per kernel (kernels.host_overhead_us): an eager framework
 * cannot issue a kernel faster than its host, so a group of k launches
 * lasts at least k x host_overhead.  HF's RMSNorm (8 kernels, 9x the bytes)
 * on a 1 kB tensor: forward 8 x 3.6 us = 28.8 us, input gradient the same
 * (twice the bytes, still host-bound), weight gradient nothing; under
 * megatron-core (host runs ahead) the HBM time alone.  A 1 GB tensor is
 * bandwidth-bound either way: 9 GB at HBM speed.  Exact (1e-15 s). */
START_TEST(host_overhead_floors_each_kernel)
{
    mm_cluster c;
    mm_err err;
    ck_assert(mm_cluster_load("topologies/dgx-h100.yaml", 1, &c, &err) == 0);
    mm_framework hf, core;
    load_profile("hf-deepspeed", &hf);
    load_profile("megatron-core", &core);
    ck_assert(fabs(hf.host_overhead_s - 3.6e-6) < 1e-18 && core.host_overhead_s == 0);
    mm_op_cost op = {.name = "norm_attn", .kind = MM_OPK_MEM, .bytes = 1000, .pass = MM_OP_F};
    mm_fw_ctx ch = {&c.gpu, MM_DTYPE_BF16, &hf, MM_ATTN_IMPL_FLASH2, 2};
    mm_fw_ctx cc = {&c.gpu, MM_DTYPE_BF16, &core, MM_ATTN_IMPL_FLASH2, 2};
    mm_pass_breakdown h = mm_fw_time_ops(&ch, &op, 1), k = mm_fw_time_ops(&cc, &op, 1);
    ck_assert(mm_mem_time(&c.gpu, 9000) < 8 * 3.6e-6 && mm_mem_time(&c.gpu, 18000) < 8 * 3.6e-6);
    ck_assert_msg(fabs(h.s[MM_OP_F][MM_BK_MEM] - 8 * 3.6e-6) < 1e-15, "%g s", h.s[MM_OP_F][MM_BK_MEM]);
    ck_assert(fabs(h.s[MM_OP_B][MM_BK_MEM] - 8 * 3.6e-6) < 1e-15);
    ck_assert(h.s[MM_OP_W][MM_BK_MEM] == 0);
    ck_assert(fabs(k.s[MM_OP_F][MM_BK_MEM] - mm_mem_time(&c.gpu, 1000)) < 1e-15);
    op.bytes = 1e9;
    h = mm_fw_time_ops(&ch, &op, 1);
    ck_assert(fabs(h.s[MM_OP_F][MM_BK_MEM] - mm_mem_time(&c.gpu, 9e9)) < 1e-15);
    ck_assert(h.s[MM_OP_F][MM_BK_MEM] > 8 * 3.6e-6);
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
        static mm_sim sim;
        prepare(&sim, sets, 4);
        static mm_sim_breakdown bk;
        mm_err err;
        ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk, &err), 0);
        const mm_gpu_spec *g = &sim.cluster.gpu;
        double P = (double)mm_llm_params(&sim.llm);
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
        static mm_sim sim;
        prepare(&sim, sets, 5);
        static mm_sim_breakdown bk;
        mm_err err;
        ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk, &err), 0);
        step[i] = bk.opt[0].step_s;
        P = (double)mm_llm_params(&sim.llm);
        t14 = mm_mem_time(&sim.cluster.gpu, P / 8 * 14);
        mm_sim_free(&sim);
    }
    double extra = step[1] - step[0];
    ck_assert_msg(extra > t14 && extra < t14 + 100e-6, "fp16 step %g s over bf16's, want %g + latency", extra, t14);
}
END_TEST

/* Copies the profile `src` into a fresh temporary folder `dir` (tag names
 * it), the first line holding `match` replaced by `repl`; `path` gets the
 * copy's name.  Returns the replaced line's number (0: no line matched). */
static int profile_with_line(const char *src, const char *match, const char *repl, const char *tag, char *dir,
                             size_t dcap, char *path, size_t cap)
{
    mmx_tmpdir(dir, dcap, tag);
    snprintf(path, cap, "%s/bad.yaml", dir);
    return copy_with_line(fopen(src, "r"), fopen(path, "w"), match, repl);
}

/* The binary: a bad profile exits 2 with "FILE:LINE: key 'KEY'", and the
 * --json `breakdown` object carries mm_sim_get_breakdown's numbers (%.9g:
 * 1e-8 relative). */
static char out[1 << 17], errtxt[1 << 14];

START_TEST(cli_bad_profile_and_json_breakdown)
{
    char dir[256], prof[300], args[1024];
    int bad = profile_with_line("frameworks/hf-deepspeed.yaml", "  host_overhead_us: 3.6", "  host_overhead_us: fast\n",
                                "fw", dir, sizeof dir, prof, sizeof prof);
    ck_assert(bad > 0);
    const char *base = "--set model=models/llama-2-7b.json --set workload=text --set parallel.vision=null "
                       "--set cluster.nodes=1 --set 'parallel.llm={tp: 2, pp: 2, dp: 2}' --set train.global_batch=16";
    snprintf(args, sizeof args, "run --no-db %s --set train.framework=%s", base, prof);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    char want[400];
    snprintf(want, sizeof want, "%s:%d: key 'kernels.host_overhead_us'", prof, bad);
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
    static mm_sim sim;
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
    static mm_sim sim;
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
            static mm_sim text;
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
    mm_fw_ctx fc = {&c.gpu, MM_DTYPE_BF16, &fw, MM_ATTN_IMPL_FLASH2, 2};
    double V = (double)m.vocab;
    ck_assert(mm_fw_embed_wgrad_time(&fc, &m, T, 2) == mm_mem_time(&c.gpu, V * h / 2 * 12 + T * h * 6));
    mm_cluster_free(&c);
    double msgs[2];
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"parallel.llm={tp: 2, pp: 1, dp: 4}", i ? "train.sequence_parallel=true"
                                                                       : "train.sequence_parallel=false"};
        static mm_sim sim;
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

/* How often each profile reduces the DP gradients (grad_sync), as its
 * framework's code does: DeepSpeed ZeRO-2's gradient hooks reduce every
 * backward, ZeRO 0-1 at the accumulation boundary; Megatron's DDP and
 * distributed optimizer once (no_sync around the other micro-batches,
 * finalize_model_grads), its ZeRO-2 (Megatron-FSDP optim_grads) every
 * backward; torchtitan every backward; under pp > 1 torch's pipelining and
 * DeepSpeed's pipeline engine once.  ZeRO-3 every micro-batch throughout.
 * The resolved rule reaches the build spec, and mm_build_grad_syncs counts
 * m reductions (m = 4 here) or 1. */
START_TEST(grad_sync_is_a_profile_default)
{
    static const bool every[4][3] = {
        {false, false, true}, {false, false, true}, {false, false, true}, {true, true, true}};
    static const bool once_pp[4] = {false, false, true, true};
    mm_framework fw;
    for (int i = 0; i < 4; i++) {
        load_profile(profiles[i], &fw);
        ck_assert_msg(fw.once_under_pp == once_pp[i], "%s", profiles[i]);
        for (int z = 0; z <= 3; z++)
            for (int pp = 1; pp <= 2; pp++) {
                bool want = z == 3 || (every[i][z] && !(pp > 1 && once_pp[i]));
                ck_assert_msg(mm_framework_grad_every_microbatch(&fw, z, pp) == want, "%s zero %d pp %d", profiles[i],
                              z, pp);
            }
    }
    static mm_sim sim;
    mm_err err;
    for (int i = 0; i < 4; i++) {
        for (int z = 0; z <= 3; z++) {
            prepare_fw_zero(&sim, profiles[i], z, "train.global_batch=32");
            ck_assert_int_eq(sim.micro_batches, 4);
            mm_sim_costs c;
            ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
            bool want = z == 3 || every[i][z];
            ck_assert_msg(c.spec.grad_every_mb == want, "%s zero %d", profiles[i], z);
            ck_assert_int_eq(mm_build_grad_syncs(&c.spec), want ? 4 : 1);
            mm_sim_costs_free(&c);
            mm_sim_free(&sim);
        }
    }
    /* fsdp on a pipeline: torch's PipelineStage syncs after the last backward */
    const char *pp[] = {"train.framework=fsdp", "train.zero=1", "parallel.llm={tp: 1, pp: 2, dp: 4}",
                        "train.global_batch=32"};
    prepare(&sim, pp, 4);
    mm_sim_costs c;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert(!c.spec.grad_every_mb && mm_build_grad_syncs(&c.spec) == 1 && c.spec.m == 8);
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
    /* ... and so does an LLM of one stage behind the encoder's own stage
     * (placement pipeline, DFLOP's layouts): the schedule is a pipeline;
     * homogeneous (the tower inside the LLM's stage), every micro-batch */
    for (int k = 0; k < 2; k++) {
        const char *enc[] = {"model=models/llava-1.5-7b.json",
                             "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}",
                             k ? "parallel.placement=homogeneous" : "parallel.placement=pipeline",
                             k ? "parallel.llm={tp: 1, pp: 1, dp: 8}" : "parallel.llm={tp: 1, pp: 1, dp: 4}",
                             k ? "parallel.vision={tp: 1, pp: 1, dp: 8}" : "parallel.vision={tp: 1, pp: 1, dp: 4}",
                             "train.global_batch=32", "train.framework=fsdp", "train.zero=1"};
        prepare(&sim, enc, 8);
        ck_assert_int_eq(sim.n_enc, 1);
        ck_assert_int_eq(sim.micro_batches, k ? 4 : 8);
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert_msg(c.spec.grad_every_mb == (k == 1), "placement %s", k ? "homogeneous" : "pipeline");
        mm_sim_costs_free(&c);
        mm_sim_free(&sim);
    }
}
END_TEST

/* Bytes each rank reduce-scatters (all-reduces) for the DP gradients, from
 * the executed graph: the DP ops of rank 0 that are not all-gathers. */
static double dp_reduce_bytes(const mm_graph *g, int *ops)
{
    double by = 0;
    *ops = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        if (op->rank != 0 || op->cat != MM_CAT_DP || op->coll < 0)
            continue;
        const mm_coll *cl = &g->colls[op->coll];
        if (cl->kind == MM_COLL_ALLGATHER)
            continue;
        by += cl->bytes * cl->count;
        ++*ops;
    }
    return by;
}

/* Per-micro-batch reduction multiplies the DP traffic by the micro-batches.
 * Llama-2-7B on 8 H100s, dp 8, 4 micro-batches, the analytic network.
 * hf-deepspeed ZeRO-2 (every micro-batch, overlap_comm off by default: the
 * stage's gradients reduce-scattered after each backward on the compute
 * stream) against ZeRO-1 (once, at the boundary): the reduced bytes are
 * 4 g against g (1e-9), the DP seconds and the exposed communication
 * 4 RS(g) + AG(p) against RS(g) + AG(p) (1e-6; all blocking), and the
 * pre-score's DP term the same (1e-9, the same reductions by
 * mm_build_grad_syncs).  fsdp ZeRO-1 (every micro-batch, overlapped, one
 * bucket per block): the DP stream carries 4 L RS(g/L) + L AG(p/L) (1e-6)
 * while only the last bucket's reduce and the first gather stay exposed
 * (2 %); its pre-score hides the three earlier reductions behind the next
 * micro-batch (mm_overlap_delay of them exposed) and stays within 5 %
 * of the simulated iteration. */
START_TEST(every_microbatch_multiplies_dp_traffic)
{
    const char *base[] = {"cluster.topology=topologies/dgx-h100.yaml", "network=analytic", "train.global_batch=32"};
    int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double bytes[2], grad = 0;
    for (int k = 0; k < 2; k++) { /* hf-deepspeed ZeRO-2, then ZeRO-1 */
        const char *sets[] = {base[0], base[1], base[2], "train.framework=hf-deepspeed",
                              k ? "train.zero=1" : "train.zero=2"};
        static mm_sim sim;
        prepare(&sim, sets, 5);
        ck_assert_int_eq(sim.micro_batches, 4);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(!c.spec.overlap_grad_reduce);
        const mm_stage_cost *st = &c.stages[0];
        grad = st->grad_bytes;
        double rs = mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes);
        double ag = mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes);
        double n = k ? 1 : 4, want = n * rs + ag;
        mm_sim_costs_free(&c);
        mm_metrics m;
        mm_sim_timeline tl;
        ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
        int ops;
        bytes[k] = dp_reduce_bytes(&tl.graph, &ops);
        ck_assert_int_eq(ops, (int)n);
        ck_assert_msg(fabs(m.stages[0].comm_s - want) < 1e-6 * want, "zero %d: DP %g s, %g RS + AG = %g s", 2 - k,
                      m.stages[0].comm_s, n, want);
        ck_assert_msg(fabs(m.exposed_comm_s - want) < 1e-6 * want, "zero %d: exposed %g s, formula %g s", 2 - k,
                      m.exposed_comm_s, want);
        mm_sim_timeline_free(&tl);
        mm_metrics_free(&m);
        mm_metrics e;
        ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
        ck_assert_msg(fabs(e.exposed_comm_s - want) < 1e-9 * want, "zero %d: estimate %g s, formula %g s", 2 - k,
                      e.exposed_comm_s, want);
        mm_metrics_free(&e);
        mm_sim_free(&sim);
    }
    ck_assert(fabs(bytes[0] - 4 * grad) < 1e-9 * grad && fabs(bytes[1] - grad) < 1e-9 * grad);
    /* fsdp: every micro-batch, overlapped bucket by bucket */
    const char *sets[] = {base[0], base[1], base[2], "train.framework=fsdp", "train.zero=1"};
    static mm_sim sim;
    prepare(&sim, sets, 5);
    mm_sim_costs c;
    mm_err err;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert(c.spec.overlap_grad_reduce && c.spec.overlap_param_gather && mm_build_grad_syncs(&c.spec) == 4);
    const mm_stage_cost *st = &c.stages[0];
    double L = st->chunks, f1 = st->fwd_s, b1 = st->bwd_s, g = st->grad_bytes;
#define RS(x) mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, (x))
#define AG(x) mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, (x))
    double on_stream = 4 * L * RS(st->grad_bytes / L) + L * AG(st->param_bytes / L);
    double last = RS(st->grad_bytes / L) + AG(st->param_bytes / L);
    double rs = RS(st->grad_bytes), ag = AG(st->param_bytes);
#undef RS
#undef AG
    ck_assert(rs < f1 + b1); /* each earlier reduce fits behind the next micro-batch */
    double est = 3 * odelay(rs) + (rs / L + odelay(rs * (1 - 1 / L))) +
                 (ag / L + odelay(ag * (1 - 1 / L)));
    mm_sim_costs_free(&c);
    mm_metrics m;
    mm_sim_timeline tl;
    ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
    int ops;
    double by = dp_reduce_bytes(&tl.graph, &ops);
    ck_assert(ops == 4 * 32 && fabs(by - 4 * g) < 1e-9 * by);
    ck_assert_msg(fabs(m.stages[0].comm_s - on_stream) < 1e-6 * on_stream, "fsdp: DP %g s, formula %g s",
                  m.stages[0].comm_s, on_stream);
    ck_assert_msg(fabs(m.exposed_comm_s - last) < 0.02 * last, "fsdp: exposed %g s, last RS + first AG %g s",
                  m.exposed_comm_s, last);
    mm_metrics e;
    ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
    ck_assert_msg(fabs(e.exposed_comm_s - est) < 1e-9 * est, "fsdp: estimate %g s, formula %g s", e.exposed_comm_s,
                  est);
    ck_assert_msg(fabs(e.iteration_time_s - m.iteration_time_s) < 0.05 * m.iteration_time_s,
                  "fsdp: estimate %g s, simulated %g s", e.iteration_time_s, m.iteration_time_s);
    mm_metrics_free(&e);
    mm_sim_timeline_free(&tl);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
}
END_TEST

/* ZeRO-3 with the overlap off, as DeepSpeed runs overlap_comm false: every
 * all-gather (the prefetch too) and every reduce-scatter on the compute
 * stream, so all of them are exposed.  Llama-2-7B on 8 H100s, 2
 * micro-batches, the analytic network, hf-deepspeed: per micro-batch and
 * layer a forward and a backward gather G = n AG(p / L / n) (its n = 9
 * module gathers) and RS = RS(g / L): exposed = 2 L (2 G + RS) (1e-6),
 * where the overlapped default exposes about 2 G + RS per micro-batch; the
 * pre-score's DP term is the same sum (1e-9).  Under fsdp and megatron-core
 * no such configuration exists (FSDP2 has no switch, Megatron-FSDP forces
 * the overlap): refused by key, naming the framework. */
START_TEST(zero3_without_overlap_exposes_its_collectives)
{
    double exposed[2], t[2], want = 0;
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"train.framework=hf-deepspeed", "train.zero=3", "cluster.topology=topologies/dgx-h100.yaml",
                              "network=analytic", "train.global_batch=16",
                              k ? "train.overlap_grad_reduce=auto" : "train.overlap_grad_reduce=false"};
        static mm_sim sim;
        prepare(&sim, sets, 6);
        ck_assert_int_eq(sim.micro_batches, 2);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(c.spec.overlap_grad_reduce == (k == 1));
        const mm_stage_cost *st = &c.stages[0];
        int n = c.spec.z3_gathers, g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        double L = st->chunks;
        ck_assert(n == 9 && L == 32);
        double G = n * mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes / L / n);
        double RS = mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes / L);
        want = 2 * L * (2 * G + RS);
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        exposed[k] = m.exposed_comm_s;
        t[k] = m.iteration_time_s;
        if (k == 0) {
            ck_assert_msg(fabs(m.exposed_comm_s - want) < 1e-6 * want, "exposed %g s, 2 L (2 G + RS) = %g s",
                          m.exposed_comm_s, want);
            mm_metrics e;
            ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
            ck_assert_msg(fabs(e.exposed_comm_s - want) < 1e-9 * want, "estimate %g s, formula %g s",
                          e.exposed_comm_s, want);
            mm_metrics_free(&e);
        }
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
    /* the overlap hides all but a few layers' worth, and the iteration
     * gains what it hid less the contention on the compute it overlaps:
     * mm_overlap_delay of the time it runs beside it, at most the hidden
     * communication's */
    double hidden = exposed[0] - exposed[1];
    ck_assert_msg(exposed[1] < 0.1 * exposed[0] && t[0] - t[1] <= hidden * (1 + 1e-9) &&
                      t[0] - t[1] >= hidden - 1.02 * odelay(hidden),
                  "exposed off %g s, on %g s; iteration %g -> %g s", exposed[0], exposed[1], t[0], t[1]);
    const char *refused[] = {"fsdp", "megatron-core"};
    for (int i = 0; i < 2; i++) {
        char fwk[64];
        snprintf(fwk, sizeof fwk, "train.framework=%s", refused[i]);
        const char *sets[] = {fwk, "train.zero=3", "train.overlap_grad_reduce=false"};
        mm_err err;
        ck_assert_int_eq(prepare_rc(sets, 3, &err), -MM_EINPUT);
        ck_assert_str_eq(err.key, "train.overlap_grad_reduce");
        ck_assert_msg(strstr(err.msg, refused[i]) && strstr(err.msg, "zero3_blocking"), "%s", err.msg);
    }
}
END_TEST

/* A bad grad_sync or overlap.zero3_blocking value: the loader names file,
 * line and key, and `mmsim run` exits 2 with that message. */
START_TEST(bad_grad_sync_is_refused)
{
    static const struct {
        const char *from, *to, *key;
    } cases[] = {
        {"  every_microbatch:", "  every_microbatch: {zero0: false, zero1: false, zero2: often}\n",
         "grad_sync.every_microbatch.zero2"},
        {"  every_microbatch:", "  every_microbatch: {zero0: false, zero2: true}\n", "grad_sync.every_microbatch.zero1"},
        {"  every_microbatch:", "  every_microbatch: {zero0: false, zero1: false, zero2: true, zero3: true}\n",
         "grad_sync.every_microbatch.zero3"},
        {"  every_microbatch:", "  every_microbatch: true\n", "grad_sync.every_microbatch"},
        {"  once_under_pp:", "  once_under_pp: 2\n", "grad_sync.once_under_pp"},
        {"  once_under_pp:", "\n", "grad_sync.once_under_pp"},
        {"grad_sync:", "grad_sync:\n  per_layer: true\n", "grad_sync.per_layer"},
        {"  zero3_blocking:", "  zero3_blocking: perhaps\n", "overlap.zero3_blocking"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_err err;
        char tmp[64];
        int rc = load_edited(cases[i].from, cases[i].to, &err, tmp, sizeof tmp);
        ck_assert_msg(rc == -MM_EINPUT, "case %zu: rc %d", i, rc);
        ck_assert_msg(!strcmp(err.key, cases[i].key), "case %zu: key '%s', expected '%s'", i, err.key, cases[i].key);
        ck_assert_msg(!strcmp(err.file, tmp) && err.line > 0, "case %zu: %s:%d", i, err.file, err.line);
    }
    char dir[256], prof[300], args[1024];
    int bad = profile_with_line("frameworks/fsdp.yaml", "  once_under_pp: true", "  once_under_pp: yes please\n", "gs",
                                dir, sizeof dir, prof, sizeof prof);
    ck_assert(bad > 0);
    snprintf(args, sizeof args,
             "run --no-db --set model=models/llama-2-7b.json --set workload=text --set parallel.vision=null "
             "--set cluster.nodes=1 --set 'parallel.llm={tp: 1, pp: 1, dp: 8}' --set train.global_batch=8 "
             "--set train.framework=%s",
             prof);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    char want[400];
    snprintf(want, sizeof want, "%s:%d: key 'grad_sync.once_under_pp'", prof, bad);
    ck_assert_msg(strstr(errtxt, want), "stderr: %s (want %s)", errtxt, want);
    mmx_rmdir(dir);
}
END_TEST

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
        static mm_sim sim;
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
 * on the same keys). */
START_TEST(encoder_once_is_unchanged)
{
    static const struct {
        const char *pl;
        double t;
    } cases[] = {{"pipeline", 0.6282396960000001}, {"colocated", 0.385320384}, {"homogeneous", 0.404193099}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        static mm_sim sim;
        prepare_mm(&sim, cases[k].pl, "megatron-core", "train.zero=1", NULL);
        mm_metrics m;
        mm_err err;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
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
        static mm_sim sim;
        prepare_mm(&sim, "homogeneous", k ? "fsdp" : "hf-deepspeed", k ? "train.zero=1" : "train.zero=2", NULL);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(c.spec.overlap_grad_reduce == (k == 1) && mm_build_enc_grad_syncs(&c.spec, 0) == 4);
        const mm_stage_cost *st = &c.stages[0];
        double g = st->grad_bytes, p = st->param_bytes, L = st->chunks, f1 = st->fwd_s, b1 = st->bwd_s;
        double eg = c.spec.enc[0].grad_bytes, ep = c.spec.enc[0].param_bytes;
        mm_sim_costs_free(&c);
#define RS(x) mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, (x))
#define AG(x) mm_net_analytic_time(&sim.cluster, MM_COLL_ALLGATHER, g8, 8, (x))
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
        static mm_sim sim;
        prepare_mm(&sim, "disjoint", "hf-deepspeed", "train.zero=1",
                   k ? "parallel.vision={tp: 1, pp: 1, dp: 4, zero: 1}"
                     : "parallel.vision={tp: 1, pp: 1, dp: 4, zero: 2}");
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(!c.spec.grad_every_mb && mm_build_enc_grad_syncs(&c.spec, 0) == (k ? 1 : 8));
        rse = mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g4, 4, c.spec.enc[0].grad_bytes);
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
    static mm_sim sim;
    const char *sets[] = {"model=models/llava-1.5-7b.json",
                          "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}",
                          "cluster.topology=topologies/dgx-h100.yaml", "network=analytic", "train.global_batch=6",
                          "parallel.placement=disjoint", "train.framework=hf-deepspeed", "train.zero=2",
                          "parallel.llm={tp: 1, pp: 2, dp: 1}", "parallel.vision={tp: 2, pp: 1, dp: 3}"};
    prepare(&sim, sets, 10);
    mm_sim_costs c;
    mm_err err;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    int n = mm_build_enc_early_syncs(&c.spec, 0), g3[3] = {0, 2, 4};
    ck_assert(n > 0 && !c.spec.overlap_grad_reduce);
    double want = n * mm_net_analytic_time(&sim.cluster, MM_COLL_REDUCESCATTER, g3, 3, c.spec.enc[0].grad_bytes);
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
    Suite *s = suite_create("framework");
    TCase *tc = tcase_create("framework");
    tcase_add_test(tc, profiles_say_what_the_code_does);
    tcase_add_test(tc, bad_profiles_are_refused_by_file_line_and_key);
    tcase_add_test(tc, scenario_keys);
    tcase_add_test(tc, activation_memory_by_attention_kernel);
    tcase_add_test(tc, grad_reduce_dtype);
    tcase_add_test(tc, eager_kernels_cost_more);
    tcase_add_test(tc, breakdown_adds_up);
    tcase_add_test(tc, overlap_contention);
    tcase_add_test(tc, overlap_slowdown_from_topology);
    tcase_add_test(tc, zero3_gathers_by_framework);
    tcase_add_test(tc, padding_is_a_profile_default);
    tcase_add_test(tc, overlap_is_a_profile_default);
    tcase_add_test(tc, overlap_hides_dp_communication);
    tcase_add_test(tc, homogeneous_encoder_in_the_dp_tail);
    tcase_add_test(tc, zero3_prefetch_hides_all_but_the_first_gather);
    tcase_add_test(tc, host_overhead_floors_each_kernel);
    tcase_add_test(tc, optimizer_phase_term_by_term);
    tcase_add_test(tc, optimizer_fp16_loss_scale);
    tcase_add_test(tc, cli_bad_profile_and_json_breakdown);
    tcase_add_test(tc, breakdown_lists_the_drawn_micro_batches);
    tcase_add_test(tc, extra_kernels_by_formula);
    tcase_add_test(tc, per_token_backward_counted_from_code);
    tcase_add_test(tc, grad_sync_is_a_profile_default);
    tcase_add_test(tc, every_microbatch_multiplies_dp_traffic);
    tcase_add_test(tc, zero3_without_overlap_exposes_its_collectives);
    tcase_add_test(tc, bad_grad_sync_is_refused);
    tcase_add_test(tc, encoder_reduces_every_microbatch);
    tcase_add_test(tc, encoder_once_is_unchanged);
    tcase_add_test(tc, encoder_reductions_in_the_pre_score);
    tcase_add_test(tc, encoder_dp_wider_than_its_tp_in_the_pre_score);
    tcase_add_test(tc, jit_kernels_are_timed_at_the_gpus_jit_rate);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
