/* test_fp8.c - FP8 training as Transformer Engine runs it (model/fp8.h):
 * the quantize / cast-transpose / amax kernels' bytes per recipe against
 * the byte counts read from TE's kernels, the op list a GPT layer runs in
 * FP8, the bytes per tensor in memory (FP8 Linear inputs saved for the
 * backward, the FP8 weight copies, FP8-LM's gradients and optimizer
 * states), the optimizer step's bytes, which kernels stay BF16, and the
 * refusals (mxfp8 off Blackwell, the FP8 keys without train.precision
 * fp8) with their file, line and key.
 * Byte counts are exact (tolerance 1e-12 relative); times are compared
 * between two runs of the same code, never against a wall clock. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost/breakdown.h"
#include "cost/costs.h"
#include "cost/fwcost.h"
#include "hw/cluster.h"
#include "hw/compute.h"
#include "model/fp8.h"
#include "model/llm.h"
#include "model/memory.h"
#include "scenario/sim.h"

#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fmax(fabs(a), fabs(b)))
#define ck_rel(a, b)                                                                                          \
    ck_assert_msg(REL((double)(a), (double)(b)), "%s = %.17g, want %s = %.17g", #a, (double)(a), #b, (double)(b))

static mm_llm gpt(void)
{
    mm_llm m;
    mm_err err;
    ck_assert_msg(mm_llm_load("models/gpt3-1.3b.json", &m, &err) == 0, "%s", err.msg);
    return m;
}

/* Per element of a 16-bit tensor: read 2 bytes, write 1 per direction;
 * current scaling reads it once more for its amax; MXFP8 adds an E8M0
 * scale per 32 values per direction, blockwise an fp32 per 128. */
START_TEST(quantize_bytes)
{
    double e = 4096.0 * 8192.0;
    ck_rel(mm_fp8_quantize_bytes(MM_FP8_DELAYED, e, 2), 4.0 * e);
    ck_rel(mm_fp8_quantize_bytes(MM_FP8_DELAYED, e, 1), 3.0 * e);
    ck_rel(mm_fp8_quantize_bytes(MM_FP8_CURRENT, e, 2), 6.0 * e);
    ck_rel(mm_fp8_quantize_bytes(MM_FP8_MXFP8, e, 2), 4.0 * e + 2.0 * e / 32.0);
    ck_rel(mm_fp8_quantize_bytes(MM_FP8_BLOCKWISE, e, 2), 4.0 * e + 2.0 * 4.0 * e / 128.0);
    ck_rel(mm_fp8_tensor_bytes(MM_FP8_MXFP8, e, 1), e * (1.0 + 1.0 / 32.0));
    ck_rel(mm_fp8_tensor_bytes(MM_FP8_DELAYED, e, 2), 2.0 * e);
}
END_TEST

/* A GPT block's Linear weights are 12 h^2 (QKV 3h^2, projection h^2, fc1
 * and fc2 4h^2 each): biases and norms stay 16-bit. */
START_TEST(weight_params)
{
    mm_llm m = gpt();
    double h = (double)m.hidden;
    ck_rel(mm_fp8_layer_weight_params(&m), 12.0 * h * h);
}
END_TEST

static const mm_op_cost *find(const mm_op_cost *ops, int n, const char *name, int nth)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(ops[i].name, name) && nth-- == 0)
            return &ops[i];
    return NULL;
}

static int count(const mm_op_cost *ops, int n, const char *name)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += !strcmp(ops[i].name, name);
    return c;
}

/* Delayed scaling on a GPT block (tp 1, b 2, s 2048): QKV and fc1 take the
 * norm's FP8 output (the norm writes 1 byte less per element; an FP8
 * transpose reads and writes 1 byte each), the projection and fc2 inputs
 * are cast-transposed (4 bytes per element), each GEMM's output gradient
 * is cast-transposed in the backward (4 bytes per element), the GEMMs
 * read 1-byte operands. */
START_TEST(rewrite_delayed)
{
    mm_llm m = gpt();
    mm_op_cost ops[2 * MM_FW_MAX_OPS + 1], base[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops(&m, 2, 2048, 1, false, 2, ops, MM_LLM_MAX_OPS);
    ck_assert_int_gt(n, 0);
    memcpy(base, ops, (size_t)n * sizeof *ops);
    int k = mm_fp8_rewrite_ops(MM_FP8_DELAYED, 1.0, ops, n, (int)(sizeof ops / sizeof *ops));
    ck_assert_int_eq(k, n + 2 + 2 + 4);
    ck_assert_int_eq(count(ops, k, "fp8_transpose"), 2);
    ck_assert_int_eq(count(ops, k, "fp8_cast_input"), 2);
    ck_assert_int_eq(count(ops, k, "fp8_cast_grad"), 4);
    double T = 2.0 * 2048, h = (double)m.hidden, f = (double)m.ffn;
    /* norms: forward 1 byte less per output element, backward unchanged */
    const mm_op_cost *na = find(ops, k, "norm_attn", 0), *na0 = find(base, n, "norm_attn", 0);
    ck_rel(na->bytes, na0->bytes - T * h);
    ck_assert(na->bwd_exact);
    ck_rel(na->bwd_bytes, na0->bwd_exact ? na0->bwd_bytes : 2.0 * na0->bytes);
    ck_rel(find(ops, k, "fp8_transpose", 0)->bytes, 2.0 * T * h);
    /* the projection's input (h wide) and fc2's (f wide) */
    ck_rel(find(ops, k, "fp8_cast_input", 0)->bytes, 4.0 * T * h);
    ck_rel(find(ops, k, "fp8_cast_input", 1)->bytes, 4.0 * T * f);
    /* grad outputs: QKV 3h wide, projection h, fc1 f, fc2 h; backward only */
    const double gw[] = {3.0 * h, h, f, h};
    for (int i = 0; i < 4; i++) {
        const mm_op_cost *g = find(ops, k, "fp8_cast_grad", i);
        ck_rel(g->bytes, 0.0);
        ck_rel(mm_op_pass(g, MM_OP_B).bytes, 4.0 * T * gw[i]);
        ck_rel(mm_op_pass(g, MM_OP_W).bytes, 0.0);
    }
    const mm_op_cost *fc1 = find(ops, k, "fc1", 0);
    ck_rel(fc1->bytes, T * h + h * f + 2.0 * T * f);
    /* delayed scaling, per block pass: 4 GEMMs' fp32 amaxes all-reduced (3
     * tensors each forward, 2 backward), and their history (length 1,
     * Megatron's default) and scale read and written */
    ck_assert_int_eq(mm_fp8_layer_gemms(&m), 4);
    ck_rel(mm_fp8_amax_buffer_bytes(4, false), 4 * 3 * 4.0);
    ck_rel(mm_fp8_amax_buffer_bytes(4, true), 4 * 2 * 4.0);
    ck_rel(mm_fp8_amax_update_bytes(4, false), 4 * 3 * (MM_FP8_AMAX_HISTORY * 8.0 + 8.0));
    ck_assert_int_eq(mm_fp8_rewrite_ops(MM_FP8_DELAYED, 1.0, ops, n, n + 3), -1);
    /* sequence parallelism at tp 4: the norm makes a quarter of the rows
     * (4 bytes per element of its tn = T/4 tokens), the transpose is of the
     * gathered input */
    n = mm_llm_layer_ops(&m, 2, 2048, 4, true, 2, ops, MM_LLM_MAX_OPS);
    memcpy(base, ops, (size_t)n * sizeof *ops);
    k = mm_fp8_rewrite_ops(MM_FP8_DELAYED, 0.25, ops, n, (int)(sizeof ops / sizeof *ops));
    ck_rel(find(ops, k, "norm_attn", 0)->bytes, find(base, n, "norm_attn", 0)->bytes - T / 4 * h);
    ck_assert(find(ops, k, "norm_attn", 0)->bytes > 0.7 * find(base, n, "norm_attn", 0)->bytes);
    ck_rel(find(ops, k, "fp8_transpose", 0)->bytes, 2.0 * T * h);
}
END_TEST

/* Current scaling and the block-scaled recipes norm in 16 bits (the norm's
 * bytes unchanged) and quantize every FP8 GEMM input, with current
 * scaling's amax pass (6 bytes per element). */
START_TEST(rewrite_current_mxfp8)
{
    mm_llm m = gpt();
    double T = 2048, h = (double)m.hidden;
    const mm_fp8_recipe rs[] = {MM_FP8_CURRENT, MM_FP8_MXFP8, MM_FP8_BLOCKWISE};
    for (int r = 0; r < 3; r++) {
        mm_op_cost ops[2 * MM_FW_MAX_OPS + 1], base[MM_LLM_MAX_OPS];
        int n = mm_llm_layer_ops(&m, 1, 2048, 1, false, 2, ops, MM_LLM_MAX_OPS);
        memcpy(base, ops, (size_t)n * sizeof *ops);
        int k = mm_fp8_rewrite_ops(rs[r], 1.0, ops, n, (int)(sizeof ops / sizeof *ops));
        ck_assert_int_eq(count(ops, k, "fp8_cast_input"), 4);
        ck_assert_int_eq(count(ops, k, "fp8_transpose"), 0);
        ck_rel(find(ops, k, "norm_attn", 0)->bytes, find(base, n, "norm_attn", 0)->bytes);
        ck_rel(find(ops, k, "fp8_cast_input", 0)->bytes, mm_fp8_quantize_bytes(rs[r], T * h, 2));
    }
    ck_rel(mm_fp8_quantize_bytes(MM_FP8_CURRENT, T * h, 2), 6.0 * T * h);
}
END_TEST

/* Which kernels stay 16-bit: the LM head, the router and two-activation
 * GEMMs (the unfused attention core) are not FP8 GEMMs; on an H100 the
 * head and the attention core take the same time under fp8 as under bf16,
 * the Linear GEMMs run faster. */
START_TEST(bf16_kernels)
{
    mm_llm m = gpt();
    mm_cluster c;
    mm_err err;
    ck_assert_msg(mm_cluster_load("topologies/dgx-h100.yaml", 1, &c, &err) == 0, "%s", err.msg);
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_head_ops(&m, 1, 2048, 1, false, 2, ops, MM_LLM_MAX_OPS);
    ck_assert(!mm_fp8_gemm_op(find(ops, n, "lm_head", 0)));
    mm_fw_ctx bf = {.gpu = &c.gpu, .dt = MM_DTYPE_BF16, .attn = MM_ATTN_IMPL_FLASH, .dtype_bytes = 2};
    mm_fw_ctx f8 = bf;
    f8.dt = MM_DTYPE_FP8;
    f8.fp8 = (mm_fp8_cfg){.on = true, .recipe = MM_FP8_DELAYED};
    mm_pass_breakdown hb = mm_fw_time_ops(&bf, ops, n), h8 = mm_fw_time_ops(&f8, ops, n);
    ck_rel(h8.s[MM_OP_F][MM_BK_GEMM], hb.s[MM_OP_F][MM_BK_GEMM]);
    n = mm_llm_layer_ops(&m, 1, 2048, 1, false, 2, ops, MM_LLM_MAX_OPS);
    mm_pass_breakdown lb = mm_fw_time_ops(&bf, ops, n), l8 = mm_fw_time_ops(&f8, ops, n);
    for (int p = 0; p < 3; p++) {
        ck_rel(l8.s[p][MM_BK_ATTN], lb.s[p][MM_BK_ATTN]);
        ck_assert(l8.s[p][MM_BK_GEMM] < lb.s[p][MM_BK_GEMM]);
    }
    /* the casts are memory-bound time on top, forward and backward */
    ck_assert(l8.s[MM_OP_F][MM_BK_MEM] > lb.s[MM_OP_F][MM_BK_MEM]);
    ck_assert(l8.s[MM_OP_B][MM_BK_MEM] > lb.s[MM_OP_B][MM_BK_MEM]);
    mm_cluster_free(&c);
}
END_TEST

/* Bytes per tensor in memory for a GPT block (tp 1, selective): the four
 * Linear inputs (QKV 2sbh, projection 2sbh, fc1 2sbh, fc2 8sbh: 14 sbh in
 * Korthikanti's 34) are kept as 1-byte column-wise FP8 (+ scales), so 7
 * (2 - L) sbh less; the states per FP8 weight follow fp8.h. */
START_TEST(memory_bytes)
{
    mm_llm m = gpt();
    double b = 2, s = 2048, h = (double)m.hidden, sbh = b * s * h;
    double a2 = mm_mem_layer_activations(&m, b, s, 1, false, 1, MM_RECOMPUTE_SELECTIVE);
    ck_rel(a2, 34.0 * sbh);
    const mm_fp8_recipe rs[] = {MM_FP8_DELAYED, MM_FP8_MXFP8};
    for (int r = 0; r < 2; r++) {
        mm_fp8_cfg f = {.on = true, .recipe = rs[r]};
        double L = mm_fp8_saved_input_bytes(&f);
        ck_rel(L, rs[r] == MM_FP8_MXFP8 ? 1.0 + 1.0 / 32.0 : 1.0);
        ck_rel(mm_mem_layer_activations_lb(&m, b, s, 1, false, 1, MM_RECOMPUTE_SELECTIVE, L),
               a2 - 7.0 * (2.0 - L) * sbh);
    }
    /* per FP8 weight: the 16-bit parameter + FP8 copy and transpose (4), or
     * the FP8 parameter and transpose alone (2); gradient 4 or 1; states
     * 12 or FP8-LM's 2 + 1 + 2 */
    mm_fp8_cfg te = {.on = true}, o3 = {.on = true, .param_gather = true, .grads = true, .optimizer = true};
    ck_rel(mm_fp8_weight_bytes(&te), 4.0);
    ck_rel(mm_fp8_weight_bytes(&o3), 2.0);
    ck_rel(mm_fp8_grad_bytes(&te, 4.0), 4.0);
    ck_rel(mm_fp8_grad_bytes(&o3, 4.0), 1.0);
    ck_rel(mm_fp8_optim_bytes(&te), 12.0);
    ck_rel(mm_fp8_optim_bytes(&o3), 5.0);
    ck_rel(mm_fp8_gather_bytes(&o3), 1.0);
    /* step: read master, moments, gradient; write master, moments, weight:
     * Megatron's 30, FP8-LM O1 27, O2 13, O3 12 */
    mm_fp8_cfg o1 = {.on = true, .grads = true}, o2 = {.on = true, .grads = true, .optimizer = true};
    ck_rel(mm_fp8_step_bytes(&te, 4.0), 30.0);
    ck_rel(mm_fp8_step_bytes(&o1, 4.0), 27.0);
    ck_rel(mm_fp8_step_bytes(&o2, 4.0), 13.0);
    ck_rel(mm_fp8_step_bytes(&o3, 4.0), 12.0);
    /* per-step weight casts: cast-transpose 4 B, current 6 B, FP8 primary
     * weights only the transpose (2 B) */
    mm_fp8_cfg cur = {.on = true, .recipe = MM_FP8_CURRENT};
    ck_rel(mm_fp8_weight_cast_bytes(&te, 1e9), 4e9);
    ck_rel(mm_fp8_weight_cast_bytes(&cur, 1e9), 6e9);
    ck_rel(mm_fp8_weight_cast_bytes(&o3, 1e9), 2e9);
    /* MS-AMP's per-step re-quantization of the FP8 gradients to the
     * DP-wide (MIN) scale: dequantize 1+4, quantize 4+1, copy 1+1 = 12 B
     * per FP8 weight under FP8 gradients (O1 and up), none without */
    ck_rel(mm_fp8_grad_requant_bytes(&o1, 1e9), 12e9);
    ck_rel(mm_fp8_grad_requant_bytes(&o3, 1e9), 12e9);
    ck_assert(mm_fp8_grad_requant_bytes(&te, 1e9) == 0.0);
    ck_assert(mm_fp8_grad_requant_bytes(&o3, 0.0) == 0.0);
    mm_fp8_cfg off = {.grads = true};
    ck_assert(mm_fp8_grad_requant_bytes(&off, 1e9) == 0.0);
}
END_TEST

/* A stage's model states under FP8 against the BF16 ones: the stage's
 * Linear weights (layers x 12h^2 / tp) change by fp8.h's per-parameter
 * differences, sharded as the distributed optimizer shards them. */
START_TEST(memory_states)
{
    mm_llm m = gpt();
    mm_mem_config c = {.lay = {.tp = 2, .pp = 2, .dp = 4, .cp = 1, .vpp = 1, .ep = 1},
                       .zero = 1,
                       .recompute = MM_RECOMPUTE_SELECTIVE,
                       .schedule = MM_MEM_1F1B,
                       .micro_batches = 8,
                       .micro_batch = 1,
                       .seq = 2048,
                       .grad_bytes = 4};
    mm_mem_rank r0, r1;
    ck_assert_int_eq(mm_mem_llm_rank(&m, &c, 1, &r0), 0);
    c.fp8 = (mm_fp8_cfg){.on = true, .grads = true, .optimizer = true};
    ck_assert_int_eq(mm_mem_llm_rank(&m, &c, 1, &r1), 0);
    double h = (double)m.hidden, lin = (double)m.layers / 2 * 12.0 * h * h / 2;
    ck_assert(fabs(r1.weights - r0.weights - lin * 2.0) <= 1e-9 * r0.weights);
    ck_assert(fabs(r1.grads - r0.grads + lin * 3.0) <= 1e-9 * r0.grads);
    ck_assert(fabs(r1.optimizer - r0.optimizer + lin * 7.0 / 4) <= 1e-9 * r0.optimizer);
    ck_assert(r1.activations < r0.activations);
}
END_TEST

/* A prepared sim borrows its scenario's strings: one scenario per test,
 * freed at its end (sim.h). */
static mm_scenario scn;

static int load(const char *path, const char *const *sets, int n, mm_sim *sim, mm_err *err)
{
    mm_scenario_free(&scn);
    int rc = mm_scenario_load(&scn, path, sets, n, err);
    if (rc)
        memset(&scn, 0, sizeof scn); /* a failed load holds nothing */
    return rc ? rc : mm_sim_prepare(sim, &scn, err);
}

/* mxfp8 needs Blackwell: refused by name on an H100 and an A100, runs on a
 * B200; the block-scaled recipe runs on an H100. */
START_TEST(recipe_refused)
{
    const char *h100[] = {"train.precision=fp8", "train.fp8_recipe=mxfp8"};
    const char *a100[] = {"cluster.topology=topologies/dgx-a100.yaml", "train.precision=fp8", "train.fp8_recipe=mxfp8"};
    const char *b200[] = {"cluster.topology=topologies/dgx-b200.yaml", "train.precision=fp8", "train.fp8_recipe=mxfp8"};
    const char *blk[] = {"train.precision=fp8", "train.fp8_recipe=blockwise"};
    mm_sim sim;
    mm_err err;
    ck_assert_int_eq(load(NULL, h100, 2, &sim, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.fp8_recipe");
    ck_assert_str_eq(err.file, "--set");
    ck_assert_msg(strstr(err.msg, "mxfp8") && strstr(err.msg, "10"), "%s", err.msg);
    ck_assert_int_eq(load(NULL, a100, 3, &sim, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.fp8_recipe");
    ck_assert_msg(load(NULL, b200, 3, &sim, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
    ck_assert_msg(load(NULL, blk, 2, &sim, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
    mm_scenario_free(&scn);
}
END_TEST

/* The FP8 keys without train.precision fp8: refused with the file, the
 * line and the key (not silently ignored), as is an unknown recipe. */
START_TEST(keys_refused)
{
    char path[] = "/tmp/mmsim-fp8-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("model: models/gpt3-1.3b.json\ncluster: {topology: topologies/dgx-h100.yaml}\ntrain:\n"
          "  seq_len: 2048\n  precision: bf16\n  fp8_grads: true\n",
          f);
    fclose(f);
    mm_sim sim;
    mm_err err;
    int rc = load(path, NULL, 0, &sim, &err);
    ck_assert_int_eq(rc, -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.fp8_grads");
    ck_assert_int_eq(err.line, 6);
    ck_assert_msg(strstr(err.file, "mmsim-fp8-") != NULL, "%s", err.file);
    const char *bad[] = {"train.precision=fp8", "train.fp8_recipe=e4m3"};
    ck_assert_int_eq(load(path, bad, 2, &sim, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.fp8_recipe");
    const char *cur[] = {"train.fp8_recipe=current"};
    ck_assert_int_eq(load(NULL, cur, 1, &sim, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.fp8_recipe");
    unlink(path);
    mm_scenario_free(&scn);
}
END_TEST

/* Under FP8 the step carries the weight casts of the stage's Linear
 * weights (4 bytes each per step, once, not per micro-batch). */
START_TEST(step_casts)
{
    const char *sets[] = {"model=models/gpt3-1.3b.json", "train.seq_len=2048", "train.precision=fp8"};
    mm_sim sim;
    mm_err err;
    ck_assert_msg(load(NULL, sets, 3, &sim, &err) == 0, "%s", err.msg);
    mm_sim_breakdown *bk = calloc(1, sizeof *bk);
    ck_assert_msg(mm_sim_get_breakdown(&sim, bk, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert(bk->opt[0].fp8_cast_s > 0);
    ck_assert(bk->opt[0].total_s >= bk->opt[0].step_s + bk->opt[0].fp8_cast_s);
    free(bk);
    mm_sim_free(&sim);
    mm_scenario_free(&scn);
}
END_TEST

/* Under train.fp8_grads the step's casts add MS-AMP's re-quantization of
 * every local FP8 gradient (12 B per FP8 weight, fp8.h) to the weight
 * casts: FP8 primary weights' transpose (2 B) alone, against 2 + 12 with
 * FP8 gradients, over the stage's Linear weights (24 x 12h^2, tp 1). */
START_TEST(step_requant)
{
    const char *sets[] = {"model=models/gpt3-1.3b.json", "train.seq_len=2048", "parallel.llm={tp: 1, pp: 1, dp: 16}",
                          "train.precision=fp8", "train.fp8_param_gather=true", "train.fp8_grads=true"};
    for (int grads = 0; grads < 2; grads++) {
        mm_sim sim;
        mm_err err;
        ck_assert_msg(load(NULL, sets, 5 + grads, &sim, &err) == 0, "%s", err.msg);
        mm_sim_breakdown *bk = calloc(1, sizeof *bk);
        ck_assert_msg(mm_sim_get_breakdown(&sim, bk, &err) == 0, "%s: %s", err.key, err.msg);
        const mm_llm *m = sim.llm;
        double lin = (double)m->layers * mm_fp8_layer_weight_params(m);
        double want = mm_mem_time(&sim.cluster->gpu, lin * (grads ? 2.0 + 12.0 : 2.0));
        ck_assert_msg(fabs(bk->opt[0].fp8_cast_s - want) <= 1e-9 * want, "grads %d: %g s, closed form %g s", grads,
                      bk->opt[0].fp8_cast_s, want);
        free(bk);
        mm_sim_free(&sim);
        mm_scenario_free(&scn);
    }
}
END_TEST

/* The DP traffic of a stage (gpt3-1.3b, tp 4, pp 2: 12 blocks of 12h^2
 * Linear weights per stage, /4 per GPU): FP8-LM's 1-byte gradients take 3
 * bytes off each FP8 weight's fp32 reduce, FP8 primary weights 1 byte off
 * its 16-bit all-gather; the other parameters keep theirs. */
START_TEST(dp_bytes)
{
    const char *te[] = {"model=models/gpt3-1.3b.json", "train.seq_len=2048", "train.precision=fp8"};
    const char *o3[] = {"model=models/gpt3-1.3b.json", "train.seq_len=2048", "train.precision=fp8",
                        "train.fp8_grads=true", "train.fp8_param_gather=true"};
    mm_sim a, b;
    mm_sim_costs ca, cb;
    mm_err err;
    mm_scenario keep;
    ck_assert_msg(load(NULL, te, 3, &a, &err) == 0, "%s", err.msg);
    keep = scn;
    memset(&scn, 0, sizeof scn);
    ck_assert_msg(load(NULL, o3, 5, &b, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(mm_sim_stage_times(&a, &ca, &err), 0);
    ck_assert_int_eq(mm_sim_stage_times(&b, &cb, &err), 0);
    double h = (double)a.llm->hidden, lin = 12.0 * 12.0 * h * h / 4.0;
    for (int k = 0; k < ca.n_vstages; k++) {
        ck_assert(fabs(ca.stages[k].grad_bytes - cb.stages[k].grad_bytes - 3.0 * lin) <= 1e-9 * lin);
        ck_assert(fabs(ca.stages[k].param_bytes - cb.stages[k].param_bytes - 1.0 * lin) <= 1e-9 * lin);
    }
    mm_sim_costs_free(&ca);
    mm_sim_costs_free(&cb);
    mm_sim_free(&a);
    mm_sim_free(&b);
    mm_scenario_free(&keep);
    mm_scenario_free(&scn);
}
END_TEST

/* train.grad_accum_fusion false (Megatron-LM --no-gradient-accumulation-
 * fusion): every micro-batch's backward adds one memory-bound pass over
 * the stage's parameters, main_grad.add_(grad) at 2 x 4 + 2 bytes each
 * (fp32 main gradients), and under train.fp8_grads MS-AMP's add_to_fp8 at
 * 7 bytes per FP8 weight (fp8.h); the fused default adds nothing.  With
 * ZeRO 2 it is refused by name. */
START_TEST(grad_accum_unfused)
{
    const char *base[] = {"model=models/gpt3-1.3b.json", "train.seq_len=2048", "parallel.llm={tp: 1, pp: 1, dp: 16}",
                          "train.precision=bf16", "train.grad_accum_fusion=false"};
    for (int fp8 = 0; fp8 < 2; fp8++) {
        const char *off[] = {base[0], base[1], base[2], fp8 ? "train.precision=fp8" : base[3], "train.fp8_grads=true",
                             base[4]};
        int n = fp8 ? 5 : 4; /* off: the first n; on: those and base[4] */
        const char *on[6];
        memcpy(on, off, sizeof on);
        on[n] = base[4];
        mm_sim a, b;
        mm_sim_costs ca, cb;
        mm_err err;
        mm_scenario keep;
        ck_assert_msg(load(NULL, off, n, &a, &err) == 0, "%s", err.msg);
        keep = scn;
        memset(&scn, 0, sizeof scn);
        ck_assert_msg(load(NULL, on, n + 1, &b, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(mm_sim_stage_times(&a, &ca, &err), 0);
        ck_assert_int_eq(mm_sim_stage_times(&b, &cb, &err), 0);
        const mm_llm *m = a.llm;
        double all = (double)m->layers * (double)mm_llm_layer_params(m) + (double)mm_llm_embedding_params(m) +
                     (double)mm_llm_final_norm_params(m);
        double lin = fp8 ? (double)m->layers * mm_fp8_layer_weight_params(m) : 0.0;
        double want = mm_mem_time(&a.cluster->gpu, (all - lin) * (2.0 * 4 + 2) + lin * 7.0);
        double got = cb.stages[0].bwd_s - ca.stages[0].bwd_s;
        ck_assert_msg(fabs(got - want) <= 1e-9 * want, "fp8 %d: %g s, closed form %g s", fp8, got, want);
        ck_assert(fabs(cb.stages[0].fwd_s - ca.stages[0].fwd_s) <= 1e-12);
        mm_sim_costs_free(&ca);
        mm_sim_costs_free(&cb);
        mm_sim_free(&a);
        mm_sim_free(&b);
        mm_scenario_free(&keep);
        mm_scenario_free(&scn);
    }
    const char *z2[] = {base[0], base[1], "parallel.llm={tp: 1, pp: 1, dp: 16}", "train.zero=2", base[4]};
    mm_sim sim;
    mm_err err;
    ck_assert_int_eq(load(NULL, z2, 5, &sim, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.grad_accum_fusion");
    mm_scenario_free(&scn);
}
END_TEST

/* The FP8 GEMM rate (the BF16 table x gpu.fp8_gemm_speedup) against the
 * only published H100-class FP8 GEMM shapes at a training-sized m:
 * DeepGEMM's block-scaled kernels on an H800 (the H100 SXM's SMs and
 * clocks; tests/data/fp8/deepgemm-h800-m4096.csv, source per row).  The
 * model reads one ratio for every shape and recipe: it is 3 % slower to
 * 33 % faster than these block-scaled kernels (narrow n and short k the
 * most), within 10 % on the largest (n 7168, k 16384); the tolerance
 * states that gap, it is not a fit. */
START_TEST(gemm_vs_deepgemm)
{
    mm_cluster c;
    mm_err err;
    ck_assert_msg(mm_cluster_load("topologies/dgx-h100.yaml", 1, &c, &err) == 0, "%s", err.msg);
    FILE *f = fopen("tests/data/fp8/deepgemm-h800-m4096.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f)); /* header */
    int rows = 0;
    double m, n, k, want;
    while (fgets(line, sizeof line, f) && sscanf(line, "%lf,%lf,%lf,%lf", &m, &n, &k, &want) == 4) {
        double bytes = m * k + k * n + 2.0 * m * n;
        double t = mm_gemm_time(&c.gpu, MM_DTYPE_FP8, m, n, k, 1, bytes) - c.gpu.kernel_overhead_s;
        double got = 2.0 * m * n * k / t / 1e12, r = got / want - 1.0;
        ck_assert_msg(r > -0.10 && r < 0.35, "%g x %g x %g: %.0f TFLOP/s, DeepGEMM %.0f (%+.1f %%)", m, n, k, got,
                      want, 100 * r);
        if (n * k >= 7168.0 * 7168.0)
            ck_assert_msg(fabs(r) < 0.10, "%g x %g x %g: %+.1f %%", m, n, k, 100 * r);
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, 6);
    mm_cluster_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fp8");
    TCase *t = tcase_create("fp8");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, quantize_bytes);
    tcase_add_test(t, weight_params);
    tcase_add_test(t, rewrite_delayed);
    tcase_add_test(t, rewrite_current_mxfp8);
    tcase_add_test(t, bf16_kernels);
    tcase_add_test(t, memory_bytes);
    tcase_add_test(t, memory_states);
    tcase_add_test(t, recipe_refused);
    tcase_add_test(t, keys_refused);
    tcase_add_test(t, step_casts);
    tcase_add_test(t, step_requant);
    tcase_add_test(t, dp_bytes);
    tcase_add_test(t, grad_accum_unfused);
    tcase_add_test(t, gemm_vs_deepgemm);
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
