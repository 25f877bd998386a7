/* test_hf_vlm.c - Check suite for the vision-language families whose
 * image path is more than a tower and a projector in front of the LLM:
 * Qwen3-VL's DeepStack mergers, Idefics2's perceiver resampler, Llama 4's
 * interleaved MoE, chunked attention and pixel-shuffle adapter.  Each family's parameters term by term
 * against the closed forms of its transformers modeling file, its total
 * against the published size, its connector FLOPs against their formula
 * and its op list against those FLOPs, and its bad inputs refused with
 * file, line and key.
 *
 * Inputs: tests/data/hf/published (the published hyperparameters; see
 * tests/data/hf/README.md) and tests/data/hf/bad.  Runs from the source
 * root.
 * Not for: the other families (test_hf.c, test_model_hf.c). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model/llm.h"
#include "model/mllm.h"

#define HF "tests/data/hf/"
#define PUB "tests/data/hf/published/"

static double rel_diff(double a, double b)
{
    double d = fabs(a - b), s = fmax(fabs(a), fabs(b));
    return s == 0.0 ? 0.0 : d / s;
}

static void load_ok(const char *path, mm_model *m)
{
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_model_load(path, m, &err);
    char buf[1024];
    mm_err_format(&err, buf, sizeof buf);
    ck_assert_msg(rc == 0, "loading %s: %s", path, buf);
}

static void refused(const char *path, const char *key, int line)
{
    mm_model m;
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_model_load(path, &m, &err);
    char buf[1024];
    mm_err_format(&err, buf, sizeof buf);
    ck_assert_msg(rc == -MM_EINPUT, "%s: rc %d (%s)", path, rc, buf);
    ck_assert_msg(strstr(err.file, path) != NULL, "%s: file '%s'", path, err.file);
    ck_assert_msg(!strcmp(err.key, key), "%s: key '%s', expected '%s' (%s)", path, err.key, key, buf);
    if (line > 0)
        ck_assert_msg(err.line == line, "%s: line %d, expected %d (%s)", path, err.line, line, buf);
}

/* The projector's op list on `tp` ranks sums to its FLOPs (1e-9). */
static void ops_match_flops(const mm_projector *p, double tokens)
{
    for (int tp = 1; tp <= 4; tp *= 2) {
        mm_op_cost ops[MM_LLM_MAX_OPS];
        int n = mm_projector_ops(p, tokens, tp, 2, ops, MM_LLM_MAX_OPS);
        ck_assert_int_gt(n, 0);
        double f = 0;
        for (int i = 0; i < n; i++)
            f += ops[i].flops;
        ck_assert_msg(rel_diff(f * tp, mm_projector_fwd_flops(p, tokens)) < 1e-9, "tp %d: %.6g vs %.6g", tp, f * tp,
                      mm_projector_fwd_flops(p, tokens));
    }
}

/* Qwen3-VL-8B-Instruct (modeling_qwen3_vl.py, huggingface/transformers @
 * 68a7b7e): the LLM is Qwen3-8B's (8,190,735,360, the figure test_hf.c
 * checks for Qwen3-8B); the tower 27 blocks of 15,239,504 (qkv 1152 x 3456
 * + b, proj + b, fc1 1152 x 4304 + b, fc2 + b, two LayerNorms), the Conv3d
 * stem 3 x 2 x 16 x 16 x 1152 + b, the 2304-row position table; the merger
 * (LayerNorm 1152, fc1 4608^2 + b, fc2 4608 x 4096 + b) = 40,119,040 and
 * three DeepStack mergers of 40,125,952 (their LayerNorm over 4608).  Sum
 * 8,767,123,696: Qwen/Qwen3-VL-8B-Instruct's page gives 8.77B. */
START_TEST(qwen3_vl_terms)
{
    mm_model m;
    load_ok(PUB "qwen3-vl-8b-instruct.json", &m);
    ck_assert_int_eq(mm_llm_params(&m.llm), INT64_C(8190735360));
    ck_assert(m.llm.qk_norm && !m.llm.qkv_bias && !m.llm.tied);
    ck_assert_int_eq(mm_encoder_layer_params(&m.vision), 15239504);
    ck_assert_int_eq(mm_encoder_stem_params(&m.vision), 1770624 + 2304 * 1152);
    ck_assert_int_eq(mm_encoder_params(&m.vision), INT64_C(27) * 15239504 + 1770624 + 2304 * 1152);
    ck_assert_int_eq(m.vision_proj.deepstack, 3);
    ck_assert_int_eq(mm_projector_params(&m.vision_proj), 40119040 + 3 * 40125952);
    ck_assert_int_eq(mm_model_params(&m), INT64_C(8767123696));
    ck_assert(rel_diff((double)mm_model_params(&m), 8.77e9) <= 0.01);
    /* 448-px accounting tile: (448/16)^2 patches merged 2 x 2 */
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 196);
    /* four mergers' FLOPs, 2 t (4608^2 + 4608 x 4096) each */
    double t = 196.0, in = 4608.0;
    ck_assert(rel_diff(mm_projector_fwd_flops(&m.vision_proj, t), 4.0 * 2.0 * t * (in * in + in * 4096.0)) < 1e-12);
    ops_match_flops(&m.vision_proj, 3.0 * t);
    ck_assert(mm_projector_in_per_token(&m.vision_proj) == 4608.0); /* 2 x 2 patches of 1152 */
    /* the interpolated table is read per patch: one more stem op than Qwen2.5-VL's */
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_encoder_stem_ops(&m.vision, 1.0, 1, 2, ops, MM_LLM_MAX_OPS);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(ops[2].name, "pos_interp");
}
END_TEST

/* Idefics2-8B (modeling_idefics2.py, huggingface/transformers @ f503927):
 * Mistral-7B with vocab 32,003 (7,241,756,672); SigLIP-so400m at 980 px
 * (27 x 15,239,504 + conv 678,528 + 4,900 x 1152 positions + post norm
 * 2,304 = 417,792,240); the connector: modality projection 2 x 1152 x
 * 14336 + 14336 x 4096 = 91,750,400, latents 64 x 4096, three perceiver
 * blocks of 217,067,520 (norms 3 x 4096, q 4096 x 1536, k and v 4096 x
 * 384, o 1536 x 4096, MLP 3 x 4096 x 16384), final norm 4,096 ->
 * 743,219,200.  Sum 8,402,768,112: HuggingFaceM4/idefics2-8b's page gives
 * 8.4B (two digits: 2 %). */
START_TEST(idefics2_terms)
{
    mm_model m;
    load_ok(PUB "idefics2-8b.json", &m);
    ck_assert_int_eq(mm_llm_params(&m.llm), INT64_C(7241756672));
    ck_assert_int_eq(mm_encoder_params(&m.vision), 417792240);
    const mm_projector *p = &m.vision_proj;
    ck_assert_int_eq(p->type, MM_PROJ_PERCEIVER);
    ck_assert_int_eq(mm_projector_params(p), 743219200);
    ck_assert_int_eq(mm_model_params(&m), INT64_C(8402768112));
    ck_assert(rel_diff((double)mm_model_params(&m), 8.4e9) <= 0.02);
    /* the LLM sees the 64 latents of an image, not its 4,900 patches */
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 64);
    ck_assert_int_eq(p->ctx, 4900);
    /* one image: projection over 4,900 patches, then 3 blocks whose 64
     * queries attend 4,964 keys (16 heads x 96) */
    double n = 4900, L = 64, o = 4096, q = 1536, kv = 384;
    double want = 2 * n * (2 * 1152.0 * 14336 + 14336.0 * 4096) +
                  3 * (2 * L * (2 * o * q + 12 * o * o) + 2 * (n + L) * o * 2 * kv + 4 * L * (n + L) * q);
    ck_assert(rel_diff(mm_projector_fwd_flops(p, 64), want) < 1e-12);
    ck_assert(rel_diff(mm_projector_fwd_flops(p, 3 * 64), 3 * want) < 1e-12);
    ops_match_flops(p, 2 * 64);
    /* a projector on the LLM's GPUs receives the 4,900 patches of width
     * 1152 for an image's 64 tokens */
    ck_assert(rel_diff(mm_projector_in_per_token(p), 1152.0 * 4900 / 64) < 1e-12);
}
END_TEST

/* Llama 4 (modeling_llama4.py, huggingface/transformers @ 63210d0).
 * Maverick: 48 blocks, MoE on the odd ones (interleave_moe_layer_step 2):
 * attention 62,914,560 (q, o 5120 x 5120; k, v 5120 x 1024), two RMSNorms
 * 10,240; a dense block's MLP 3 x 5120 x 16384 (intermediate_size_mlp), an
 * MoE block's 128 experts and a shared expert of 3 x 5120 x 8192 and a
 * router 5120 x 128.  The tower (34 CLIP-like blocks of 23,807,872, a
 * bias-free patch Linear, class token, 577 positions, pre and post
 * LayerNorms) = 811,115,008; the adapter 5632 x 4096 + 4096^2 and the
 * projector 4096 x 5120 = 60,817,408.  Totals 108,641,793,536 (Scout) and
 * 401,583,781,376 (Maverick): the model cards give 109B and 400B; 17B
 * active in the LLM (two digits: 2 %). */
START_TEST(llama4_terms)
{
    mm_model sc, mv;
    load_ok(PUB "llama-4-scout-17b-16e.json", &sc);
    load_ok(PUB "llama-4-maverick-17b-128e.json", &mv);
    ck_assert_int_eq(mm_llm_layer_params_at(&mv.llm, 0), 62914560 + 10240 + 3 * INT64_C(5120) * 16384);
    ck_assert_int_eq(mm_llm_layer_params_at(&mv.llm, 1),
                     62914560 + 10240 + 129 * 3 * INT64_C(5120) * 8192 + 5120 * 128);
    ck_assert_int_eq(mm_llm_moe_layers(&mv.llm), 24);
    ck_assert_int_eq(mm_llm_moe_layers(&sc.llm), 48);
    ck_assert_int_eq(mm_encoder_params(&sc.vision), 811115008);
    ck_assert_int_eq(mm_projector_params(&sc.vision_proj), 60817408);
    ck_assert_int_eq(mm_model_params(&sc), INT64_C(108641793536));
    ck_assert_int_eq(mm_model_params(&mv), INT64_C(401583781376));
    ck_assert(rel_diff((double)mm_model_params(&sc), 109e9) <= 0.01);
    ck_assert(rel_diff((double)mm_model_params(&mv), 400e9) <= 0.01);
    ck_assert(rel_diff((double)mm_llm_active_params(&sc.llm), 17e9) <= 0.02);
    ck_assert(rel_diff((double)mm_llm_active_params(&mv.llm), 17e9) <= 0.02);
    /* (336/14)^2 patches folded 2 x 2: 144 LLM tokens per tile */
    ck_assert_int_eq(mm_model_tokens_per_tile(&sc), 144);
    /* three of four blocks attend within 8192-token chunks: at 12,288
     * tokens a chunked query pair count is 8192^2 + 4096^2, the NoPE
     * block's 12288^2; Megatron's dense count, 4 a d per pair */
    const mm_llm *l = &mv.llm;
    ck_assert(l->chunked && l->window == 8192 && l->window_period == 4 && l->window_mask == 7);
    double s = 12288, pairs = 0.25 * s * s + 0.75 * (8192.0 * 8192 + 4096.0 * 4096);
    ck_assert(rel_diff(mm_llm_layer_attn_fwd_flops(l, 1, s), 4.0 * 40 * 128 * pairs) < 1e-12);
    ck_assert(rel_diff(mm_llm_window_keys(l, s), (8192.0 * 8192 + 4096.0 * 4096) / s) < 1e-12);
    ck_assert(mm_llm_window_keys(l, 8000) == 8000); /* one chunk: causal over all */
    /* the op list sums to the mean block's FLOPs (tp 1: the router is
     * replicated over tp ranks, so its share is not divided) */
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops(l, 1, s, 1, false, 2, ops, MM_LLM_MAX_OPS);
    ck_assert_int_gt(n, 0);
    double f = 0, wk = 0;
    for (int i = 0; i < n; i++) {
        f += ops[i].flops;
        if (!strcmp(ops[i].name, "attn_window"))
            wk = ops[i].n;
    }
    ck_assert(rel_diff(f, mm_llm_layer_fwd_flops(l, 1, s)) < 1e-9);
    ck_assert(rel_diff(wk, mm_llm_window_keys(l, s)) < 1e-12); /* the kernel's keys per query */
    /* the adapter and projector: 2 t (5632 x 4096 + 4096^2 + 4096 x 5120) */
    double t = 144;
    ck_assert(rel_diff(mm_projector_fwd_flops(&sc.vision_proj, t), 2 * t * 60817408.0) < 1e-12);
    ops_match_flops(&sc.vision_proj, t);
}
END_TEST

/* Bad inputs of the new families: a DeepStack index past the tower's
 * blocks, an unknown perceiver key, perceiver kv heads that do not divide
 * its heads. */
START_TEST(vlm_bad)
{
    refused(HF "bad/qwen3_vl_deepstack.json", "vision_config.deepstack_visual_indexes", 7);
    refused(HF "bad/idefics2_perceiver.json", "perceiver_config.resampler_mystery", 4);
    refused(HF "bad/idefics2_kv_heads.json", "perceiver_config.num_key_value_heads", 4);
    /* Llama 4: MoE layers off the interleaving, a no_rope_layers entry not
     * 0 or 1, a pixel shuffle that does not give the adapter's input */
    refused(HF "bad/llama4_chunked.json", "text_config.moe_layers", 8);
    refused(HF "bad/llama4_no_rope.json", "text_config.no_rope_layers", 5);
    refused(HF "bad/llama4_shuffle.json", "vision_config.pixel_shuffle_ratio", 7);
}
END_TEST

static Suite *hf_vlm_suite(void)
{
    Suite *s = suite_create("hf_vlm");
    TCase *tc = tcase_create("families");
    tcase_add_test(tc, qwen3_vl_terms);
    tcase_add_test(tc, idefics2_terms);
    tcase_add_test(tc, llama4_terms);
    tcase_add_test(tc, vlm_bad);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hf_vlm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
