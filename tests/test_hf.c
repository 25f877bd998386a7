/* test_hf.c - Check suite for the Hugging Face config families: every
 * published config of the acceptance table reads within its tolerance of
 * the published parameter count, or is refused naming the one feature
 * mmsim does not model; each family's block structure (norms, biases, MLP
 * type, q/k norms, parallel blocks, sliding-window patterns, attention
 * sinks) pinned to its closed form; bad files refused with file, line and
 * key, every unknown key of a file named at once.
 *
 * The inputs are the files of tests/data/hf/published: the architecture keys of
 * each model's published config.json with the published values (and the
 * costless keys those files carry that mmsim once refused); see
 * tests/data/hf/README.md.  Runs from the source root.
 *
 * Not for: FLOPs and op lists of the older families (test_model.c). */
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

static void load_model_ok(const char *path, mm_model *m)
{
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_model_load(path, m, &err);
    char buf[1024];
    mm_err_format(&err, buf, sizeof buf);
    ck_assert_msg(rc == 0, "loading %s: %s", path, buf);
}

/* Refused with MM_EINPUT, naming this file and key (and line, when > 0). */
static void load_refused(const char *path, const char *key, int line, mm_err *err)
{
    mm_model m;
    mm_err_clear(err);
    int rc = mm_model_load(path, &m, err);
    char buf[1024];
    mm_err_format(err, buf, sizeof buf);
    ck_assert_msg(rc == -MM_EINPUT, "%s: rc %d (%s)", path, rc, buf);
    ck_assert_msg(strstr(err->file, path) != NULL, "%s: file '%s'", path, err->file);
    ck_assert_msg(!strcmp(err->key, key), "%s: key '%s', expected '%s' (%s)", path, err->key, key, buf);
    if (line > 0)
        ck_assert_msg(err->line == line, "%s: line %d, expected %d", path, err->line, line);
}

/* ---- the acceptance table ------------------------------------------------ */

/* Published sizes.  tol 0: the published figure is the tensor-shape sum of
 * the checkpoint and must come out exactly; 0.01 for a figure rounded to
 * three significant digits, 0.02 for two.  `refused`: the key naming the
 * one feature not modeled.  `noembed`: the source counts parameters without
 * the embedding (MiniCPM's convention: Hu et al., arXiv 2404.06395, reports
 * non-embedding sizes).  published < 0: none stated (the test checks the
 * closed form instead, below). */
typedef struct pub_row {
    const char *file;
    double published, tol;
    const char *source, *refused;
    bool noembed;
} pub_row;

static const pub_row table[] = {
    {PUB "aya-23-8b.json", 8.03e9, 0.01, "CohereForAI/aya-23-8B page: 8.03B", NULL, false},
    {PUB "codellama-34b.json", 33744232448.0, 0, "mlc-ai/mlc-llm @ 79d603f python/mlc_llm/model/model_preset.py "
     "(vocab 32,016 as that preset): tensor sum", NULL, false},
    {PUB "deepseek-moe-16b.json", 16.4e9, 0.01, "deepseek-ai/deepseek-moe-16b-base card: 16.4B", NULL, false},
    {HF "deepseek-v2.json", 236e9, 0.01, "DeepSeek-V2 (arXiv 2405.04434): 236B", NULL, false},
    {HF "deepseek-v3.json", 671e9, 0.01, "DeepSeek-V3 (arXiv 2412.19437): 671B, MTP apart", NULL, false},
    {PUB "gemma-2-27b.json", 27227128320.0, 0, "google/gemma-2-27b: tensor sum", NULL, false},
    {HF "gemma-2-9b.json", 9241705984.0, 0, "google/gemma-2-9b: tensor sum", NULL, false},
    {PUB "gemma-3-1b-it.json", 1.0e9, 0.02, "google/gemma-3-1b-it card: 1B (Gemma 3 report Table 1)", NULL, false},
    {PUB "internlm2.5-7b.json", 7737708544.0, 0, "internlm/internlm2_5-7b-chat: tensor sum", NULL, false},
    {PUB "internvl3-1b.json", 0.938e9, 0.01, "OpenGVLab/InternVL3-1B page: 0.938B", NULL, false},
    {PUB "llama-2-70b.json", 68976648192.0, 0, "meta-llama/Llama-2-70b-hf: tensor sum", NULL, false},
    {HF "llama-3.1-70b.json", 70.55e9, 0.01, "meta-llama/Llama-3.1-70B page: 70.6B", NULL, false},
    {PUB "llama-3.2-11b-vision.json", 10.6e9, 0.01, "meta-llama/Llama-3.2-11B-Vision card: 11B (10.6); "
     "NVIDIA/TensorRT-LLM @ 191b07a test_modeling_mllama.py: 10.67B", NULL, false},
    {PUB "llama-3.2-90b-vision.json", 88.8e9, 0.01, "meta-llama/Llama-3.2-90B-Vision card: 90B (88.8)", NULL,
     false},
    {PUB "llama-3.2-3b.json", 3212749824.0, 0, "citsjtu2020/LLM-Prof @ 8434c8d sglang/Model_Config.md", NULL, false},
    {HF "llava-1.5-7b-hf.json", 7.063e9, 0.01, "llava-hf/llava-1.5-7b-hf page: 7.06B", NULL, false},
    {PUB "minicpm-moe-8x2b.json", 13.6e9, 0.01, "openbmb/MiniCPM-MoE-8x2B card: 13.6B (non-embedding)", NULL, true},
    {PUB "ministral-3-3b-2512.json", -1, 0, "no published figure in the config's source", NULL, false},
    {PUB "mistral-small-3.1-24b.json", 24.0e9, 0.01, "mistralai/Mistral-Small-3.1-24B-Instruct-2503: 24B "
     "(NVIDIA/TensorRT-LLM @ 0373e5a test_modeling_mistral.py)", NULL, false},
    {PUB "olmo-2-32b.json", 32.2e9, 0.01, "allenai/OLMo-2-0325-32B page: 32.2B", NULL, false},
    {HF "phi-3.5-mini.json", 3.821e9, 0.01, "microsoft/Phi-3.5-mini-instruct page: 3.82B", NULL, false},
    {PUB "phi-3.5-vision-instruct.json", 4.15e9, 0.01, "microsoft/Phi-3.5-vision-instruct page: 4.15B", NULL, false},
    {PUB "phi-4-mini-instruct.json", 3836021760.0, 0, "microsoft/Phi-4-mini-instruct: tensor sum", NULL, false},
    {PUB "qwen1.5-moe-a2.7b.json", 14315784192.0, 0, "Qwen/Qwen1.5-MoE-A2.7B: tensor sum", NULL, false},
    {PUB "qwen2.5-32b.json", 32763876352.0, 0, "citsjtu2020/LLM-Prof @ 8434c8d sglang/Model_Config.md", NULL, false},
    {HF "qwen2.5-vl-7b.json", 8.29e9, 0.01, "Qwen/Qwen2.5-VL-7B-Instruct page: 8.29B", NULL, false},
    {PUB "qwen3-32b.json", 32762123264.0, 0, "citsjtu2020/LLM-Prof @ 8434c8d sglang/Model_Config.md", NULL, false},
    {PUB "qwen3-4b.json", 4022468096.0, 0, "citsjtu2020/LLM-Prof @ 8434c8d sglang/Model_Config.md", NULL, false},
    {PUB "qwen3-8b.json", 8190735360.0, 0, "citsjtu2020/LLM-Prof @ 8434c8d sglang/Model_Config.md", NULL, false},
    {PUB "starcoder2-7b.json", 7.17e9, 0.01, "bigcode/starcoder2-7b page: 7.17B", NULL, false},
    /* families beyond the thirty, written from their published configs */
    {PUB "phi-2.json", 2.78e9, 0.01, "microsoft/phi-2 page: 2.78B", NULL, false},
    {PUB "stablelm-2-1.6b.json", 1.64e9, 0.01, "stabilityai/stablelm-2-1_6b page: 1.64B", NULL, false},
    {PUB "mpt-7b.json", 6.65e9, 0.01, "mosaicml/mpt-7b page: 6.65B", NULL, false},
    {PUB "gpt-oss-20b.json", 20.9e9, 0.01, "gpt-oss model card (arXiv 2508.10925): 20.9B", NULL, false},
    {PUB "gemma-3-4b-it.json", 4.3e9, 0.02, "google/gemma-3-4b-it page: 4.3B", NULL, false},
    {PUB "qwen2-audio-7b.json", 8.4e9, 0.02, "Qwen/Qwen2-Audio-7B page: 8.4B", NULL, false},
    {PUB "qwen3-vl-8b-instruct.json", 8767123696.0, 0, "Qwen/Qwen3-VL-8B-Instruct: tensor sum of the checkpoint's "
     "750 tensors, 8,767,123,696 (page: 8.77B); tests/data/hf/README.md", NULL, false},
    {PUB "idefics2-8b.json", 8.4e9, 0.02, "HuggingFaceM4/idefics2-8b page: 8.4B", NULL, false},
    {PUB "llama-4-scout-17b-16e.json", 109e9, 0.01, "meta-llama/Llama-4-Scout-17B-16E card: 109B total", NULL,
     false},
    {PUB "llama-4-maverick-17b-128e.json", 400e9, 0.01, "meta-llama/Llama-4-Maverick-17B-128E card: 400B total "
     "(its config as NVIDIA/TensorRT-LLM's LLAMA_4_MAVERICK_TWO_LAYER_CONFIG has it, 48 layers)", NULL, false},
};

START_TEST(published_sizes)
{
    const pub_row *t = &table[_i];
    mm_model m;
    if (t->refused) {
        mm_err err;
        load_refused(t->file, t->refused, 0, &err);
        return;
    }
    load_model_ok(t->file, &m);
    if (t->published < 0)
        return; /* checked term by term below */
    double p = (double)mm_model_params(&m);
    if (t->noembed)
        p -= (double)mm_llm_embedding_params(&m.llm);
    ck_assert_msg(rel_diff(p, t->published) <= t->tol, "%s: %.0f vs %.0f (%s; rel %.4f > %.4f)", t->file, p,
                  t->published, t->source, rel_diff(p, t->published), t->tol);
}
END_TEST

/* ---- families, block by block -------------------------------------------- */

/* OLMo 2 (modeling_olmo2.py): q_norm over a*d = 5120, k_norm over g*d = 1024,
 * post-attention and post-feedforward RMSNorms, no biases, untied. */
START_TEST(olmo2_block)
{
    mm_model m;
    load_model_ok(PUB "olmo-2-32b.json", &m);
    const mm_llm *l = &m.llm;
    ck_assert(l->qk_norm && l->qk_norm_full && l->rmsnorm && !l->tied && !l->qkv_bias && l->gated_mlp);
    int64_t h = 5120, attn = h * 5120 + 2 * h * 1024 + 5120 * h + 5120 + 1024, mlp = 3 * h * INT64_C(27648);
    ck_assert_int_eq(mm_llm_layer_params_at(l, 0), attn + mlp + 2 * h);
}
END_TEST

/* Cohere (modeling_cohere.py): one CohereLayerNorm (weight only) per block,
 * attention and MLP in parallel on its output, tied embeddings; the op list
 * has one norm and one residual add. */
START_TEST(cohere_parallel_block)
{
    mm_model m;
    load_model_ok(PUB "aya-23-8b.json", &m);
    const mm_llm *l = &m.llm;
    ck_assert(l->parallel_block && l->norm_no_bias && !l->rmsnorm && l->tied && !l->qk_norm);
    int64_t h = 4096, attn = 2 * h * h + 2 * h * 1024, mlp = 3 * h * INT64_C(14336);
    ck_assert_int_eq(mm_llm_layer_params_at(l, 0), attn + mlp + h);
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops(l, 1, 2048, 2, true, 2, ops, MM_LLM_MAX_OPS);
    int norms = 0, res = 0;
    for (int i = 0; i < n; i++) {
        norms += !strncmp(ops[i].name, "norm", 4);
        res += !strncmp(ops[i].name, "residual", 8);
    }
    ck_assert_int_eq(norms, 1);
    ck_assert_int_eq(res, 1);
}
END_TEST

/* Phi-2 (modeling_phi.py): parallel block, LayerNorm with bias, biases on
 * q/k/v/dense and fc1/fc2, plain GELU MLP, a biased lm_head, untied:
 * 32 x 78,671,360 + 2 x 131,072,000 + 51,200 + 5,120 = 2,779,683,840. */
START_TEST(phi2_exact)
{
    mm_model m;
    load_model_ok(PUB "phi-2.json", &m);
    const mm_llm *l = &m.llm;
    ck_assert(l->parallel_block && l->head_bias && !l->gated_mlp && !l->rmsnorm && l->mlp_bias);
    ck_assert_int_eq(mm_llm_layer_params_at(l, 0), INT64_C(78671360));
    ck_assert_int_eq(mm_llm_head_params(l), INT64_C(131072000) + 51200);
    ck_assert_int_eq(mm_llm_params(l), INT64_C(2779683840));
}
END_TEST

/* Starcoder2-7B: use_bias on every Linear, LayerNorm with bias, c_fc/c_proj
 * (not gated), tied (Starcoder2Config), a 4096-token window on every layer:
 * 32 x 217,106,944 + 226,492,416 + 9,216 = 7,173,923,840. */
START_TEST(starcoder2_exact)
{
    mm_model m;
    load_model_ok(PUB "starcoder2-7b.json", &m);
    const mm_llm *l = &m.llm;
    ck_assert(l->tied && !l->gated_mlp && l->qkv_bias && l->out_bias && l->mlp_bias && !l->rmsnorm);
    ck_assert_int_eq(mm_llm_layer_params_at(l, 0), INT64_C(217106944));
    ck_assert_int_eq(mm_llm_params(l), INT64_C(7173923840));
    ck_assert(mm_llm_layer_is_sliding(l, 0) && mm_llm_layer_is_sliding(l, 31));
}
END_TEST

/* Gemma 3 (modeling_gemma3.py): sandwich norms, q/k RMSNorm over head_dim,
 * no soft-capping (null), layer i global when (i + 1) % 6 == 0: 22 of the
 * 26 layers slide over 512 tokens. */
START_TEST(gemma3_pattern)
{
    mm_model m;
    load_model_ok(PUB "gemma-3-1b-it.json", &m);
    const mm_llm *l = &m.llm;
    ck_assert(l->sandwich_norm && l->qk_norm && !l->qk_norm_full && l->tied);
    ck_assert(l->attn_softcap == 0.0 && l->final_softcap == 0.0);
    int sliding = 0;
    for (int64_t i = 0; i < l->layers; i++) {
        ck_assert_int_eq(mm_llm_layer_is_sliding(l, i), (i + 1) % 6 != 0);
        sliding += mm_llm_layer_is_sliding(l, i);
    }
    ck_assert_int_eq(sliding, 22);
    ck_assert_double_eq_tol(mm_llm_sliding_fraction(l), 22.0 / 26.0, 1e-15);
    /* attention core at s = 4096: 4 global layers of s^2 pairs, 22 of s x 512 */
    double s = 4096, H = 4, d = 256;
    double want = 2.0 * H * 2.0 * d * (4.0 / 26 * s * s + 22.0 / 26 * s * 512);
    ck_assert_double_eq_tol(mm_llm_layer_attn_fwd_flops(l, 1, s) / want, 1.0, 1e-12);
}
END_TEST

/* gpt-oss-20b (modeling_gpt_oss.py): biased q/k/v/o, one sink per head, 32
 * experts with biased gate_up (2 x 2880) and down projections, a biased
 * router, layer_types alternating from a sliding layer 0 (read as a period-2
 * pattern).  Active per token, embedding lookup aside: the model card's
 * 3.6B (arXiv 2508.10925; 2 figures: 2 %). */
START_TEST(gpt_oss_blocks)
{
    mm_model m;
    load_model_ok(PUB "gpt-oss-20b.json", &m);
    const mm_llm *l = &m.llm;
    ck_assert(l->attn_sinks && l->router_bias && l->mlp_bias && l->qkv_bias && l->out_bias);
    ck_assert_int_eq(l->window_period, 2);
    ck_assert(mm_llm_layer_is_sliding(l, 0) && !mm_llm_layer_is_sliding(l, 1));
    int64_t h = 2880, attn = 2 * h * 4096 + 2 * h * 512 + 4096 + 2 * 512 + h + 64;
    int64_t expert = 2 * h * h + 2 * h + h * h + h; /* gate_up (2f = 5760 wide) and down, biased */
    ck_assert_int_eq(mm_llm_layer_params_at(l, 0), attn + 32 * expert + h * 32 + 32 + 2 * h);
    double active = (double)(mm_llm_active_params(l) - mm_llm_embedding_params(l));
    ck_assert_msg(rel_diff(active, 3.6e9) <= 0.02, "active %.0f", active);
}
END_TEST

/* layer_types is the pattern: a made-up Gemma 2 of 7 layers, two sliding
 * then one global, repeating, is read as period 3 (its own rule would give
 * even layers); attn_logit_softcapping null switches the cap off. */
START_TEST(layer_types_pattern)
{
    mm_model m;
    load_model_ok(HF "layer-types-period3.json", &m);
    const mm_llm *l = &m.llm;
    ck_assert_int_eq(l->window_period, 3);
    for (int64_t i = 0; i < 7; i++)
        ck_assert_int_eq(mm_llm_layer_is_sliding(l, i), i % 3 != 2);
    ck_assert_double_eq_tol(mm_llm_sliding_fraction(l), 5.0 / 7.0, 1e-15);
    ck_assert(l->attn_softcap == 0.0 && l->final_softcap == 30.0); /* Gemma2Config's 30 kept */
    /* a stage of layers 2..4 (global, sliding, sliding) is costed from its own */
    mm_llm v = mm_llm_stage_view(l, 2, 3);
    ck_assert_double_eq_tol(mm_llm_sliding_fraction(&v), 2.0 / 3.0, 1e-15);
}
END_TEST

/* DeepSeek-MoE 16B (deepseek-ai/deepseek-moe-16b-base modeling_deepseek.py):
 * Llama attention, block 0 dense (10944), blocks 1..27 64 routed experts of
 * 1408 (6 per token) plus 2 shared. */
START_TEST(deepseek_moe_blocks)
{
    mm_model m;
    load_model_ok(PUB "deepseek-moe-16b.json", &m);
    const mm_llm *l = &m.llm;
    ck_assert_int_eq(l->kv_lora, 0);
    ck_assert_int_eq(mm_llm_moe_layers(l), 27);
    int64_t h = 2048, attn = 4 * h * h;
    ck_assert_int_eq(mm_llm_layer_params_at(l, 0), attn + 3 * h * 10944 + 2 * h);
    ck_assert_int_eq(mm_llm_layer_params_at(l, 1), attn + 64 * 3 * h * INT64_C(1408) + 3 * h * 2816 + h * 64 + 2 * h);
    ck_assert_int_eq(mm_llm_params(l), INT64_C(16375728128));
}
END_TEST

/* MPT-7B (modeling_mpt.py): fused Wqkv and out_proj without bias, LayerNorm
 * without bias, up/down MLP of 4h, ALiBi, tied: 32 x 201,334,784 +
 * 206,569,472 + 4,096 = 6,649,286,656.  Nemotron (modeling_nemotron.py, a
 * made-up small config): squared ReLU, up/down only, LayerNorm1P with bias,
 * q of heads x head_dim wider than hidden, untied. */
START_TEST(mpt_nemotron_exact)
{
    mm_model m;
    load_model_ok(PUB "mpt-7b.json", &m);
    ck_assert(m.llm.tied && m.llm.norm_no_bias && !m.llm.rope && !m.llm.gated_mlp);
    ck_assert_int_eq(mm_llm_params(&m.llm), INT64_C(6649286656));
    load_model_ok(HF "nemotron-small.json", &m);
    ck_assert(!m.llm.gated_mlp && !m.llm.rmsnorm && !m.llm.mlp_bias && !m.llm.tied);
    int64_t h = 512;
    ck_assert_int_eq(mm_llm_layer_params_at(&m.llm, 0), 2 * h * 512 + 2 * h * 128 + 2 * h * 1536 + 4 * h);
    ck_assert_int_eq(mm_llm_params(&m.llm), 4 * mm_llm_layer_params_at(&m.llm, 0) + 2 * 1000 * h + 2 * h);
    load_model_ok(PUB "stablelm-2-1.6b.json", &m); /* q/k/v biases, gated MLP, LayerNorm with bias */
    ck_assert_int_eq(mm_llm_layer_params_at(&m.llm, 0), 4 * 2048 * 2048 + 3 * 2048 + 3 * 2048 * 5632 + 4 * 2048);
}
END_TEST

/* Mistral 3 (modeling_mistral3.py, modeling_pixtral.py) term by term:
 * Pixtral tower: patch_conv 3 x 14 x 14 x 1024 (no bias), ln_pre, 24 blocks
 * of 4h^2 + SwiGLU 3 h 4096 + two RMSNorms = 403,305,472; projector: norm
 * 1024, merging_layer 4096 x 1024, linear_1 1024 x llm, linear_2 llm x llm
 * (no biases).  Ministral-3-3B: the same tower, a 26-layer LLM (3,072 wide,
 * tied): 3,429,006,336 + 403,305,472 + 16,778,240. */
START_TEST(mistral3_terms)
{
    mm_model m;
    load_model_ok(PUB "mistral-small-3.1-24b.json", &m);
    int64_t c = 1024;
    int64_t tower = 3 * 14 * 14 * c + c + 24 * (4 * c * c + 3 * c * 4096 + 2 * c);
    ck_assert_int_eq(tower, INT64_C(403305472));
    ck_assert_int_eq(mm_encoder_params(&m.vision), tower);
    ck_assert_int_eq(mm_projector_params(&m.vision_proj), c + 4 * c * c + c * 5120 + INT64_C(5120) * 5120);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 256); /* 448-px unit: 32 x 32 patches, merged 2 x 2 */
    load_model_ok(PUB "ministral-3-3b-2512.json", &m);
    int64_t h = 3072, llm = 26 * (h * 4096 + 2 * h * 1024 + 4096 * h + 3 * h * 9216 + 2 * h) + 131072 * h + h;
    ck_assert_int_eq(mm_llm_params(&m.llm), llm);
    ck_assert(m.llm.tied);
    ck_assert_int_eq(mm_model_params(&m), llm + tower + c + 4 * c * c + c * h + h * h);
}
END_TEST

/* Phi-3.5-vision: Phi-3.5-mini's LLM, CLIP ViT-L/14-336 (303,507,456 with
 * its class token, positions and two LayerNorms outside the blocks), 144
 * tokens per crop (24 x 24 patches concatenated 2 x 2), img_projection 4096
 * -> 3072 -> 3072 with biases, glb_GN and sub_GN of 4096. */
START_TEST(phi3v_terms)
{
    mm_model m;
    load_model_ok(PUB "phi-3.5-vision-instruct.json", &m);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 144);
    ck_assert_int_eq(mm_encoder_params(&m.vision), INT64_C(303507456));
    ck_assert_int_eq(mm_projector_params(&m.vision_proj), 4096 * 3072 + 3072 + 3072 * 3072 + 3072);
    ck_assert_int_eq(m.extra_params, 2 * 4096);
    ck_assert_int_eq(mm_llm_params(&m.llm), INT64_C(3821079552)); /* = Phi-3.5-mini */
}
END_TEST

/* Gemma 3 (modeling_gemma3.py): SigLIP-So400m at 896 px (64 x 64 patches of
 * 14, no class token), average-pooled 4 x 4 to mm_tokens_per_image 256, then
 * mm_soft_emb_norm (1152) and mm_input_projection_weight (1152 x 2560, no
 * bias).  Qwen2-Audio (modeling_qwen2_audio.py): Whisper-large-like encoder
 * (conv 128 -> 1280 and 1280 -> 1280, 1500 positions, 32 blocks with q/v/o
 * and MLP biases, k without, final LayerNorm), Linear(1280, 4096) with bias,
 * a Qwen2 LLM with vocab 156,032. */
START_TEST(gemma3_qwen2_audio_terms)
{
    mm_model m;
    load_model_ok(PUB "gemma-3-4b-it.json", &m);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 256);
    ck_assert_int_eq(mm_encoder_tokens(&m.vision), 4096);
    ck_assert_int_eq(mm_projector_params(&m.vision_proj), 1152 + 1152 * 2560);
    ck_assert_double_eq_tol(mm_projector_fwd_flops(&m.vision_proj, 256), 2.0 * 256 * 1152 * 2560, 1.0);
    ck_assert(m.llm.qk_norm && m.llm.sandwich_norm && m.llm.tied);
    load_model_ok(PUB "qwen2-audio-7b.json", &m);
    ck_assert(m.has_audio && !m.has_vision && m.has_llm);
    int64_t d = 1280, blk = 4 * d * d + 3 * d + 2 * d * 5120 + 5120 + d + 4 * d;
    int64_t stem = 128 * d * 3 + d + d * d * 3 + d + 1500 * d;
    ck_assert_int_eq(mm_encoder_params(&m.audio), 32 * blk + stem + 2 * d);
    ck_assert_int_eq(mm_projector_params(&m.audio_proj), d * 4096 + 4096);
    ck_assert(m.llm.qkv_bias); /* Qwen2 */
}
END_TEST

/* ---- refusals -------------------------------------------------------------- */

/* Every unknown key of a mapping in one message, each with its line. */
START_TEST(all_unknown_keys_at_once)
{
    mm_err err;
    load_refused(HF "bad/many_unknown.json", "num_mystery_layers", 8, &err);
    ck_assert_msg(strstr(err.msg, "3 keys") && strstr(err.msg, "'num_mystery_layers' (line 8)") &&
                      strstr(err.msg, "'mystery_gate' (line 10)") && strstr(err.msg, "'mystery_width' (line 12)"),
                  "%s", err.msg);
    ck_assert(strstr(err.msg, "use_cache") == NULL && strstr(err.msg, "rms_norm_eps") == NULL);
    /* a composite: the root's, the LLM's and the tower's keys together */
    load_refused(HF "bad/composite_many.json", "mystery_resampler_queries", 3, &err);
    ck_assert_msg(strstr(err.msg, "'text_config.num_mystery_layers' (line 11)") &&
                      strstr(err.msg, "'vision_config.num_registers' (line 16)"), "%s", err.msg);
}
END_TEST

START_TEST(refusals)
{
    static const struct { const char *file, *key; int line; } t[] = {
        {"image_fold_on.json", "image_fold", 4},
        {"vit_moe_on.json", "vision_config.use_moe", 8},
        {"whisper_no_sizes.json", "d_model", 0},
        {"whisper_unknown_arch.json", "architectures", 2},
        {"layer_types_chunked.json", "layer_types", 11},
        {"layer_types_length.json", "layer_types", 11},
        {"mpt_no_alibi.json", "attn_config.alibi", 7},
        {"starcoder2_rms.json", "norm_type", 9},
        {"llama_use_bias.json", "use_bias", 8}, /* Starcoder2's key, not Llama's */
    };
    char path[256];
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        mm_err err;
        snprintf(path, sizeof path, HF "bad/%s", t[i].file);
        load_refused(path, t[i].key, t[i].line, &err);
    }
    /* through the CLI: exit 2, file and key named */
    char dir[256], out[4096], errs[4096];
    mmx_tmpdir(dir, sizeof dir, "hf");
    int rc = mmx_run(dir, NULL, "model " HF "bad/mllama_text_alone.json", out, sizeof out, errs, sizeof errs);
    ck_assert_int_eq(rc, 2);
    ck_assert_msg(strstr(errs, "mllama_text_alone.json") && strstr(errs, "cross_attention_layers"), "%s", errs);
    mmx_rmdir(dir);
}
END_TEST

/* Keys that cost nothing, accepted per family (they were refused one per
 * run): Gemma-2-27B's _attn_implementation, Phi-4-mini's full_attn_mod,
 * interpolate_factor and lm_head_bias (false), InternVL3-1B's image_fold
 * null and its tower's switched-off experts. */
START_TEST(costless_accepted)
{
    mm_model m;
    load_model_ok(PUB "gemma-2-27b.json", &m);
    load_model_ok(PUB "phi-4-mini-instruct.json", &m);
    ck_assert(!m.llm.head_bias);
    load_model_ok(PUB "internvl3-1b.json", &m);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 256);
}
END_TEST

static Suite *hf_suite(void)
{
    Suite *s = suite_create("hf");
    TCase *tp = tcase_create("published");
    tcase_add_loop_test(tp, published_sizes, 0, (int)(sizeof table / sizeof table[0]));
    suite_add_tcase(s, tp);
    TCase *tf = tcase_create("families");
    tcase_add_test(tf, olmo2_block);
    tcase_add_test(tf, cohere_parallel_block);
    tcase_add_test(tf, phi2_exact);
    tcase_add_test(tf, starcoder2_exact);
    tcase_add_test(tf, gemma3_pattern);
    tcase_add_test(tf, gpt_oss_blocks);
    tcase_add_test(tf, layer_types_pattern);
    tcase_add_test(tf, deepseek_moe_blocks);
    tcase_add_test(tf, mpt_nemotron_exact);
    tcase_add_test(tf, mistral3_terms);
    tcase_add_test(tf, phi3v_terms);
    tcase_add_test(tf, gemma3_qwen2_audio_terms);
    suite_add_tcase(s, tf);
    TCase *tb = tcase_create("bad");
    tcase_add_test(tb, all_unknown_keys_at_once);
    tcase_add_test(tb, refusals);
    tcase_add_test(tb, costless_accepted);
    suite_add_tcase(s, tb);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hf_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
