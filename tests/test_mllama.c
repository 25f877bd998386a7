/* test_mllama.c - Check suite for Llama 3.2 Vision (model_type mllama):
 * its tower (local and gated global blocks, tile position tables, tiles
 * padded to 8 tokens and attending together), its projector, and the
 * LLM's cross-attention blocks, each term against the closed forms of
 * transformers' modeling_mllama.py (@ befb795); both published sizes
 * (tests/data/hf: 11B and 90B); the cross-attention block's FLOPs and op
 * list against their closed form; bad inputs refused with file, line and
 * key; `mmsim run` and `mmsim model` with the model.
 *
 * Runs from the source root.
 * Not for: the other families (test_hf.c, test_hf_vlm.c). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mmsim_exe.h"
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

/* Llama-3.2-11B-Vision term by term.  Text (MllamaTextModel): a
 * self-attention block is q/k/v/o h(a + 2g)d + a d h, the gated MLP 3hf,
 * two RMSNorms; a cross-attention block (MllamaCrossAttentionDecoderLayer)
 * the same plus q_norm and k_norm (d each) and two gates; embed_tokens
 * (V + 8) h, lm_head V h, the final norm.  Tower (MllamaVisionModel):
 * blocks 4c^2 + 2cF + F + c (fc biases) + 4c (two LayerNorms), the 8
 * global ones two gates more; patch conv 3 x 14 x 14 x c, class token,
 * position table 1025 c and its gate, tile position table 9 x 4 x 1025 c,
 * the two aspect-ratio tables 9 x 4 c and their gates, layernorm_pre and
 * _post.  Projector: Linear(7680, h) with bias. */
START_TEST(mllama_terms)
{
    mm_model m;
    load_ok(PUB "llama-3.2-11b-vision.json", &m);
    const int64_t h = 4096, a = 32, g = 8, d = 128, f = 14336, V = 128256;
    int64_t self = h * (a + 2 * g) * d + a * d * h + 3 * h * f + 2 * h, cross = self + 2 * d + 2;
    ck_assert_int_eq(mm_llm_cross_layers(&m.llm), 8);
    for (int64_t i = 0; i < 40; i++)
        ck_assert_int_eq(mm_llm_layer_params_at(&m.llm, i), i % 5 == 3 ? cross : self);
    ck_assert_int_eq(mm_llm_embedding_params(&m.llm), (V + 8) * h);
    ck_assert_int_eq(mm_llm_params(&m.llm), 32 * self + 8 * cross + (V + 8) * h + V * h + h);
    const int64_t c = 1280, F = 5120, n = 1025;
    int64_t block = 4 * c * c + 2 * c * F + F + c + 4 * c;
    ck_assert_int_eq(mm_encoder_layer_params(&m.vision), block);
    int64_t stem = 3 * 14 * 14 * c + c + n * c + 1 + 9 * 4 * n * c + 2 * (9 * 4 * c + 1);
    ck_assert_int_eq(mm_encoder_stem_params(&m.vision), stem);
    ck_assert_int_eq(mm_encoder_params(&m.vision), stem + 40 * block + 2 * 2 * c + 2 * 8);
    ck_assert_int_eq(mm_projector_params(&m.vision_proj), 7680 * h + h);
    /* the image is cross-attended, not in the LLM's sequence: one image's
     * four tiles of 1025 states per sequence; the projector sees 1025 per tile */
    ck_assert_int_eq(m.llm.cross_tokens, 4 * n);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 0);
    ck_assert_int_eq(mm_model_proj_tokens_per_tile(&m), n);
    ck_assert_int_eq(m.max_tiles, 4);
    ck_assert_int_eq(m.n_grids, 8);
    /* published sizes: Meta's model cards give 11B (10.6) and 90B (88.8),
     * rounded to three digits (tests/data/hf/README.md) */
    ck_assert_msg(rel_diff((double)mm_model_params(&m), 10.6e9) < 0.01, "11B: %lld",
                  (long long)mm_model_params(&m));
    mm_model big;
    load_ok(PUB "llama-3.2-90b-vision.json", &big);
    ck_assert_int_eq(mm_llm_cross_layers(&big.llm), 20);
    ck_assert_msg(rel_diff((double)mm_model_params(&big), 88.8e9) < 0.01, "90B: %lld",
                  (long long)mm_model_params(&big));
}
END_TEST

/* The op list of the mean block over `seqs` sequences of s tokens sums,
 * times tp, to its FLOPs. */
static void ops_match(const mm_llm *l, double seqs, double s)
{
    for (int tp = 1; tp <= 8; tp *= 2) {
        mm_op_cost ops[MM_LLM_MAX_OPS];
        int k = mm_llm_layer_ops(l, seqs, s, tp, tp > 1, 2, ops, MM_LLM_MAX_OPS);
        ck_assert_int_gt(k, 0);
        double sum = 0;
        for (int i = 0; i < k; i++)
            sum += ops[i].flops;
        ck_assert_msg(rel_diff(sum * tp, mm_llm_layer_fwd_flops(l, seqs, s)) < 1e-12, "tp %d: %g vs %g", tp,
                      sum * tp, mm_llm_layer_fwd_flops(l, seqs, s));
    }
}

/* A cross-attention block forward over b sequences of s text tokens, each
 * with c = 4100 image states: q 2bs h a d, k and v 2bc h 2g d, the core
 * 4bs c a d (every token attends every state), o 2bs a d h, the MLP
 * 2bs h f x 3.  A self-attention block is the usual form; the model's
 * mean block is their 32:8 mix.  The tower's block per tile: 1032 tokens
 * (1025 padded to a multiple of 8) through the Linears, attention over
 * the image's four tiles: 1032 x 4128 pairs. */
START_TEST(mllama_cross_flops)
{
    mm_model m;
    load_ok(PUB "llama-3.2-11b-vision.json", &m);
    const double h = 4096, a = 32, g = 8, d = 128, f = 14336, c = 4100, b = 2, s = 1000;
    double cross = 2 * b * s * h * a * d + 2 * b * c * h * 2 * g * d + 4 * b * s * c * a * d + 2 * b * s * a * d * h +
                   2 * b * s * h * f * 3;
    double self = 2 * b * s * h * (a + 2 * g) * d + 4 * b * s * s * a * d + 2 * b * s * a * d * h +
                  2 * b * s * h * f * 3;
    mm_llm xv = mm_llm_stage_view(&m.llm, 3, 1), sv = mm_llm_stage_view(&m.llm, 0, 1);
    ck_assert_msg(rel_diff(mm_llm_layer_fwd_flops(&xv, b, s), cross) < 1e-12, "%g vs %g",
                  mm_llm_layer_fwd_flops(&xv, b, s), cross);
    ck_assert(rel_diff(mm_llm_layer_attn_fwd_flops(&xv, b, s), 4 * b * s * c * a * d) < 1e-12);
    ck_assert(rel_diff(mm_llm_layer_fwd_flops(&sv, b, s), self) < 1e-12);
    ck_assert(rel_diff(40 * mm_llm_layer_fwd_flops(&m.llm, b, s), 32 * self + 8 * cross) < 1e-12);
    ck_assert(!mm_llm_blocks_uniform(&m.llm));
    /* the packed form with its sequence count is the same */
    ck_assert(rel_diff(mm_llm_layer_fwd_flops_seqs(&xv, b * s, b * s * s, b), cross) < 1e-12);
    ops_match(&xv, b, s);
    ops_match(&sv, b, s);
    ops_match(&m.llm, b, s);
    /* the cross block's core: not causal, s queries x c keys per head */
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int k = mm_llm_layer_ops(&xv, b, s, 1, false, 2, ops, MM_LLM_MAX_OPS);
    int seen = 0;
    for (int i = 0; i < k; i++)
        if (!strcmp(ops[i].name, "xattn")) {
            seen++;
            ck_assert(!ops[i].causal);
            ck_assert(ops[i].m == s && ops[i].n == c && ops[i].batch == b * a);
        } else {
            ck_assert_msg(strcmp(ops[i].name, "qkv") && strcmp(ops[i].name, "attn"), "%s in a cross block",
                          ops[i].name);
        }
    ck_assert_int_eq(seen, 1);
    /* a micro-batch with two images per sequence: k, v and the core twice */
    mm_llm x2 = xv;
    x2.cross_images = 2;
    ck_assert(rel_diff(mm_llm_layer_fwd_flops(&x2, b, s) - mm_llm_layer_fwd_flops(&xv, b, s),
                       2 * b * c * h * 2 * g * d + 4 * b * s * c * a * d) < 1e-12);
    ops_match(&x2, b, s);
    const double vc = 1280, vf = 5120, np = 1032;
    double tower = 2 * np * (4 * vc * vc + 2 * vc * vf) + 4 * np * (4 * np) * vc;
    ck_assert(rel_diff(mm_encoder_layer_fwd_flops(&m.vision, 1), tower) < 1e-12);
}
END_TEST

/* Bad inputs: a vision_output_dim that is not the concatenated features'
 * width, a cross-attention block past the last, an aspect ratio with more
 * tiles than max_num_tiles, the text model alone (nothing to attend). */
START_TEST(mllama_bad)
{
    refused(HF "bad/mllama_output_dim.json", "vision_config.vision_output_dim", 43);
    refused(HF "bad/mllama_cross_past_end.json", "text_config.cross_attention_layers", 8);
    refused(HF "bad/mllama_ratio.json", "vision_config.supported_aspect_ratios", 43);
    refused(HF "bad/mllama_text_alone.json", "cross_attention_layers", 3);
}
END_TEST

/* `mmsim run` on the default scenario with the 11B model runs and fits;
 * `mmsim model` names no visual tokens per tile (the image is attended). */
START_TEST(mllama_cli)
{
    char dir[256], out[16384], errs[4096], args[512];
    mmx_tmpdir(dir, sizeof dir, "mllama");
    snprintf(args, sizeof args, "run --set model=" PUB "llama-3.2-11b-vision.json --db %s/r.db --json", dir);
    int rc = mmx_run(dir, NULL, args, out, sizeof out, errs, sizeof errs);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, errs);
    ck_assert_msg(strstr(out, "\"iteration_time_s\": ") && strstr(out, "\"oom\": false"), "%s", out);
    rc = mmx_run(dir, NULL, "model " PUB "llama-3.2-90b-vision.json --json", out, sizeof out, errs, sizeof errs);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, errs);
    ck_assert_msg(strstr(out, "\"tokens_per_tile\": 0"), "%s", out);
    mmx_rmdir(dir);
}
END_TEST

static Suite *mllama_suite(void)
{
    Suite *s = suite_create("mllama");
    TCase *tc = tcase_create("mllama");
    tcase_add_test(tc, mllama_terms);
    tcase_add_test(tc, mllama_cross_flops);
    tcase_add_test(tc, mllama_bad);
    tcase_add_test(tc, mllama_cli);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(mllama_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
