/* test_model.c - Check suite for sim/model/llm: config.json reading,
 * parameter counts, FLOPs and the per-op cost lists.
 *
 * What it is for: pinning the LLM cost model to published numbers (Hugging
 * Face parameter counts, Megatron-LM's GPT table and FLOPs formulas) and to
 * its own invariants (per-op FLOPs add up to the layer total at every tp),
 * and checking that bad config files are refused with file, line and key.
 * Runs from the source root (meson sets workdir), so paths are relative.
 *
 * Not for: the memory model, timing or layouts (their own suites). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmsim_exe.h"
#include "model/llm.h"
#include "model/mllm.h"
#include "util/doc.h"
#include "workload/workload.h"

#define DATA "tests/data/model/"
/* Hugging Face configs as published (tests/data/hf/README.md says what
 * each file is and where its keys come from). */
#define HF "tests/data/hf/"

/* ---- helpers ------------------------------------------------------------ */

static double rel_diff(double a, double b)
{
    double d = fabs(a - b), s = fmax(fabs(a), fabs(b));
    return s == 0.0 ? 0.0 : d / s;
}

#define ck_assert_rel(a, b, tol)                                                  \
    do {                                                                          \
        double a_ = (double)(a), b_ = (double)(b);                                \
        ck_assert_msg(rel_diff(a_, b_) <= (tol), "%s = %.17g vs %s = %.17g "      \
                      "(rel %.3g > %.3g)", #a, a_, #b, b_, rel_diff(a_, b_),      \
                      (double)(tol));                                             \
    } while (0)

static void load_ok(const char *path, mm_llm *m)
{
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_llm_load(path, m, &err);
    char buf[1024];
    mm_err_format(&err, buf, sizeof buf);
    ck_assert_msg(rc == 0, "loading %s: %s", path, buf);
    ck_assert_int_eq(mm_llm_validate(m, &err), 0);
}

static void load_bad(const char *path, const char *key, int line, mm_err *err)
{
    mm_llm m;
    mm_err_clear(err);
    int rc = mm_llm_load(path, &m, err);
    char buf[1024];
    mm_err_format(err, buf, sizeof buf);
    ck_assert_msg(rc == -MM_EINPUT, "%s: rc %d (%s)", path, rc, buf);
    ck_assert_int_eq(err->code, MM_EINPUT);
    ck_assert_msg(strstr(err->file, path) != NULL, "file '%s' lacks %s", err->file, path);
    ck_assert_str_eq(err->key, key);
    if (line > 0)
        ck_assert_msg(err->line == line, "%s: line %d, expected %d (%s)", path,
                      err->line, line, buf);
    ck_assert_msg(err->msg[0] != '\0', "empty message");
}

static double sum_flops(const mm_op_cost *ops, int n)
{
    double f = 0.0;
    for (int i = 0; i < n; i++)
        f += ops[i].flops;
    return f;
}

/* The model's FLOPs from one TP rank's list: sharded ops count tp times,
 * the ones every rank runs whole (MoE routers, MLA's down-projections to
 * the latents, as Megatron-Core duplicates them) once. */
static double model_flops_of(const mm_op_cost *ops, int n, int tp)
{
    double f = 0.0;
    for (int i = 0; i < n; i++) {
        bool whole = !strcmp(ops[i].name, "router") || !strcmp(ops[i].name, "q_down") ||
                     !strcmp(ops[i].name, "kv_down") || !strcmp(ops[i].name, "shared_gate");
        f += ops[i].flops * (whole ? 1.0 : (double)tp);
    }
    return f;
}

static const mm_op_cost *find_op(const mm_op_cost *ops, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ops[i].name, name) == 0)
            return &ops[i];
    return NULL;
}

/* ---- published parameter counts ----------------------------------------- */

/* Totals as counted by Hugging Face (sum of the safetensors shapes) and as
 * stated on the model cards: Llama-2-7B 6.74B (meta-llama/Llama-2-7b-hf),
 * Llama-3-8B 8.03B, Llama-3-70B 70.6B (meta-llama/Meta-Llama-3-*), Llama-3.1-405B
 * 405B (meta-llama/Llama-3.1-405B: 405,853,388,800 from its config's sizes), Qwen2.5-7B
 * 7.62B (7,615,616,512 rounded; its card truncates to 7.61B), Qwen2.5-72B
 * 72.7B (Qwen/Qwen2.5-*, "Number of Parameters"),
 * Mistral-7B 7.24B (mistralai/Mistral-7B-v0.1), GPT-2 XL 1.56B
 * (openai-community/gpt2-xl: 1,557,611,200).  Tolerance 0.5% for the rounded
 * card figures; the exact counts are the tensor-shape sums. */
START_TEST(params_published)
{
    static const struct {
        const char *file;
        double card;      /* billions, as published */
        int64_t exact;    /* sum of tensor shapes */
    } rows[] = {
        { "models/llama-2-7b.json", 6.74, INT64_C(6738415616) },
        { "models/llama-3-8b.json", 8.03, INT64_C(8030261248) },
        { "models/llama-3-70b.json", 70.6, INT64_C(70553706496) },
        { "models/llama-3.1-405b.json", 405, INT64_C(405853388800) },
        { "models/qwen2.5-7b.json", 7.62, INT64_C(7615616512) },
        { "models/qwen2.5-72b.json", 72.7, INT64_C(72706203648) },
        { "models/mistral-7b.json", 7.24, INT64_C(7241732096) },
        { "models/gpt2-xl.json", 1.56, INT64_C(1557611200) },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mm_llm m;
        load_ok(rows[i].file, &m);
        int64_t p = mm_llm_params(&m);
        ck_assert_msg(rel_diff((double)p, rows[i].card * 1e9) <= 0.005,
                      "%s: %lld params vs published %.2fB", rows[i].file,
                      (long long)p, rows[i].card);
        ck_assert_msg(p == rows[i].exact, "%s: %lld params, tensor sum %lld",
                      rows[i].file, (long long)p, (long long)rows[i].exact);
        /* the parts add up */
        ck_assert(p == m.layers * mm_llm_layer_params(&m) + mm_llm_embedding_params(&m) +
                           mm_llm_final_norm_params(&m) + mm_llm_head_params(&m));
    }
}
END_TEST

START_TEST(loaded_shapes)
{
    mm_llm m;
    load_ok("models/llama-3-8b.json", &m);
    ck_assert_str_eq(m.name, "llama-3-8b");
    ck_assert_str_eq(m.source, "models/llama-3-8b.json");
    ck_assert_str_eq(m.model_type, "llama");
    ck_assert_int_eq(m.style, MM_LLM_LLAMA);
    ck_assert_int_eq(m.hidden, 4096);
    ck_assert_int_eq(m.layers, 32);
    ck_assert_int_eq(m.heads, 32);
    ck_assert_int_eq(m.kv_heads, 8);
    ck_assert_int_eq(m.head_dim, 128);
    ck_assert_int_eq(m.ffn, 14336);
    ck_assert_int_eq(m.vocab, 128256);
    ck_assert_int_eq(m.max_pos, 8192);
    ck_assert(m.gated_mlp && !m.tied && m.rope && !m.learned_pos && m.rmsnorm);
    ck_assert(!m.qkv_bias && !m.out_bias && !m.mlp_bias);

    load_ok("models/qwen2.5-7b.json", &m);
    ck_assert_str_eq(m.name, "qwen2.5-7b"); /* only the last dot is the extension */
    ck_assert(m.qkv_bias && !m.out_bias && !m.mlp_bias && m.gated_mlp);

    load_ok("models/gpt2-xl.json", &m);
    ck_assert_int_eq(m.style, MM_LLM_GPT2);
    ck_assert_int_eq(m.ffn, 4 * 1600); /* n_inner absent -> 4h */
    ck_assert_int_eq(m.head_dim, 64);
    ck_assert_int_eq(m.max_pos, 1024);
    ck_assert(!m.gated_mlp && m.tied && m.learned_pos && !m.rope && !m.rmsnorm);
    ck_assert(m.qkv_bias && m.out_bias && m.mlp_bias);
}
END_TEST

/* GPT-2 small (openai-community/gpt2): 124,439,808 parameters; here with
 * "n_inner": null, which Hugging Face reads as 4h. */
START_TEST(gpt2_small_null_inner)
{
    mm_llm m;
    load_ok(DATA "tie_default_gpt2.json", &m);
    ck_assert_int_eq(m.ffn, 4 * 768);
    ck_assert_int_eq(mm_llm_params(&m), INT64_C(124439808));
}
END_TEST

/* Pythia-70M (EleutherAI/pythia README: 70,426,624 total parameters):
 * GPT-NeoX keys, untied by default, biases and LayerNorms. */
START_TEST(neox_pythia_70m)
{
    mm_llm m;
    load_ok(DATA "neox.json", &m);
    ck_assert_int_eq(m.style, MM_LLM_NEOX);
    ck_assert(!m.tied && !m.gated_mlp && m.rope && !m.rmsnorm);
    ck_assert(m.qkv_bias && m.out_bias && m.mlp_bias);
    ck_assert_int_eq(mm_llm_params(&m), INT64_C(70426624));
}
END_TEST

/* Qwen2.5-0.5B (Qwen/Qwen2.5-0.5B): tied, 494,032,768 parameters (0.49B). */
START_TEST(qwen2_tied_small)
{
    mm_llm m;
    load_ok(DATA "tie_true_qwen2.json", &m);
    ck_assert(m.tied && m.qkv_bias);
    ck_assert_int_eq(mm_llm_head_params(&m), 0);
    ck_assert_int_eq(mm_llm_params(&m), INT64_C(494032768));
}
END_TEST

/* Gemma-7B's shape (google/gemma-7b config.json; 8.54B on its card,
 * 8,537,680,896 by tensor shapes): head_dim 256 decouples heads x head_dim
 * (4096) from hidden (3072); GeGLU is gated although named gelu; tied by
 * PretrainedConfig's default. */
START_TEST(explicit_head_dim)
{
    mm_llm m;
    load_ok(DATA "gemma_head_dim.json", &m);
    ck_assert_int_eq(m.head_dim, 256);
    ck_assert(m.gated_mlp && m.tied && m.rmsnorm);
    ck_assert_int_eq(mm_llm_params(&m), INT64_C(8537680896));
    double b = 1, s = 8192, h = 3072, q = 16 * 256;
    double want = 2 * b * s * h * 3 * q + 4 * b * s * s * q + 2 * b * s * q * h +
                  2 * b * s * h * 24576 * 3;
    ck_assert_rel(mm_llm_layer_fwd_flops(&m, b, s), want, 1e-12);
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops(&m, b, s, 2, true, 2, ops, MM_LLM_MAX_OPS);
    ck_assert_rel(sum_flops(ops, n) * 2, want, 1e-12);
    ck_assert(find_op(ops, n, "attn_out")->k == q / 2);
}
END_TEST

/* ---- tie_word_embeddings ------------------------------------------------- */

/* Absent key: PretrainedConfig's default is True (GPT-2 keys, or Llama-style
 * keys with no model_type); LlamaConfig, Qwen2Config, MistralConfig and
 * GPTNeoXConfig override it to False.  Explicit false unties in every style,
 * adding exactly V*h. */
START_TEST(tie_defaults)
{
    mm_llm a, b;
    load_ok(DATA "tie_default_gpt2.json", &a);
    ck_assert(a.tied);
    load_ok(DATA "tie_false_gpt2.json", &b);
    ck_assert(!b.tied);
    ck_assert_int_eq(mm_llm_params(&b) - mm_llm_params(&a), a.vocab * a.hidden);
    ck_assert_int_eq(mm_llm_head_params(&b), a.vocab * a.hidden);

    /* Without model_type transformers' AutoConfig cannot pick a class, and
     * neither can mmsim: refused by name. */
    mm_err err;
    load_bad(DATA "tie_default_llama_keys.json", "model_type", 2, &err);
    load_ok(DATA "tie_false_llama_keys.json", &b);
    ck_assert(!b.tied);
    /* TinyLlama-1.1B's shape untied: 1,100,048,384 (TinyLlama/TinyLlama-1.1B) */
    ck_assert_int_eq(mm_llm_params(&b), INT64_C(1100048384));

    load_ok(DATA "tie_default_llama_type.json", &a);
    ck_assert(!a.tied); /* LlamaConfig(tie_word_embeddings=False) */
    ck_assert_int_eq(mm_llm_params(&a), mm_llm_params(&b));
}
END_TEST

/* ---- Megatron-LM GPT table ------------------------------------------------ */

/* Narayanan et al. SC'21 Table 1 (weak scaling on A100s), as transcribed in
 * the project's reference CSV from NVIDIA/Megatron-LM
 * images/cases_april2021.png @ 50a4b5f: hidden, layers, global batch,
 * params_billion, and the derived per-iteration PFLOP column
 * 96Bslh^2(1 + s/6h + V/16lh).  Heads from the paper's Table 1.
 * V = 51200, s = 2048 for all. */
static const struct {
    const char *file;
    int64_t h, l, a, batch;
    double params_b, pflop;
} megatron[] = {
    { "models/megatron-gpt-1.7b.json", 2304, 24, 24, 512, 1.7, 15.5 },
    { "models/megatron-gpt-3.6b.json", 3072, 30, 32, 512, 3.6, 32.7 },
    { "models/megatron-gpt-7.5b.json", 4096, 36, 32, 512, 7.5, 67.2 },
    { "models/megatron-gpt-18b.json", 6144, 40, 48, 1024, 18.4, 324.8 },
    { "models/megatron-gpt-39b.json", 8192, 48, 64, 1536, 39.1, 1021.2 },
    { "models/megatron-gpt-76b.json", 10240, 60, 80, 1792, 76.1, 2302.0 },
    { "models/megatron-gpt-145b.json", 12288, 80, 96, 2304, 145.6, 5641.7 },
    { "models/megatron-gpt-310b.json", 16384, 96, 128, 2160, 310.1, 11194.0 },
    { "models/megatron-gpt-530b.json", 20480, 105, 128, 2520, 529.6, 22215.9 },
    { "models/megatron-gpt-1t.json", 25600, 128, 160, 3072, 1008.0, 51390.5 },
};
#define MEG_V 51200
#define MEG_S 2048

START_TEST(megatron_params)
{
    int i = _i;
    mm_llm m;
    load_ok(megatron[i].file, &m);
    ck_assert_int_eq(m.hidden, megatron[i].h);
    ck_assert_int_eq(m.layers, megatron[i].l);
    ck_assert_int_eq(m.heads, megatron[i].a);
    ck_assert_int_eq(m.vocab, MEG_V);
    ck_assert_int_eq(m.max_pos, MEG_S);
    ck_assert(m.tied && m.learned_pos && !m.gated_mlp && m.ffn == 4 * m.hidden);

    /* P = 12lh^2(1 + 13/12h + (V+s)/12lh) (Narayanan et al., SC'21,
     * arXiv 2104.04473, Sec. 5.1) = 12lh^2 + 13lh + (V+s)h: tied embedding, positions, biases and
     * the two LayerNorms of each block.  It omits the final LayerNorm (2h),
     * which Megatron's GPT has; mm_llm_params counts it. */
    double h = (double)m.hidden, l = (double)m.layers, V = MEG_V, s = MEG_S;
    double P = 12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (V + s) / (12.0 * l * h));
    int64_t p = mm_llm_params(&m);
    ck_assert_rel((double)(p - mm_llm_final_norm_params(&m)), P, 1e-12);
    ck_assert_int_eq(mm_llm_final_norm_params(&m), 2 * m.hidden);
    /* The same in integers, exactly. */
    ck_assert(p - 2 * m.hidden ==
              12 * m.layers * m.hidden * m.hidden + 13 * m.layers * m.hidden +
                  (MEG_V + MEG_S) * m.hidden);

    /* Published figure, rounded to 0.1B: within 2%, or within the rounding
     * (1.7B is 1.652B by the formula: "1.7" is that rounded, 2.8% off). */
    double pub = megatron[i].params_b * 1e9;
    ck_assert_msg(fabs((double)p - pub) <= fmax(0.02 * pub, 0.05e9),
                  "%s: %lld vs published %.1fB", megatron[i].file, (long long)p,
                  megatron[i].params_b);

    /* mm_llm_init_gpt builds the same model in code */
    mm_llm g;
    mm_llm_init_gpt(&g, megatron[i].h, megatron[i].l, megatron[i].a, MEG_V, MEG_S);
    ck_assert_int_eq(mm_llm_validate(&g, NULL), 0);
    ck_assert_int_eq(mm_llm_params(&g), p);
}
END_TEST

START_TEST(megatron_flops)
{
    int i = _i;
    mm_llm m;
    load_ok(megatron[i].file, &m);
    double h = (double)m.hidden, l = (double)m.layers, V = MEG_V, s = MEG_S;
    double B = (double)megatron[i].batch;

    /* Korthikanti et al. 2022 (model FLOPs, no recompute), arXiv 2205.05198 */
    double f72 = 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
    /* Narayanan et al. SC'21 (full recompute), arXiv 2104.04473, Sec. 5.1 */
    double f96 = 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
    double model = mm_llm_model_flops(&m, B, s);
    ck_assert_rel(model, f72, 1e-12);
    ck_assert_rel(mm_llm_hw_flops(&m, B, s, MM_RECOMPUTE_NONE), f72, 1e-12);
    ck_assert_rel(mm_llm_hw_flops(&m, B, s, MM_RECOMPUTE_FULL), f96, 1e-12);
    /* selective: only the attention core again, 4Bs^2h per layer
     * (Korthikanti et al. 2022 section 5) */
    ck_assert_rel(mm_llm_hw_flops(&m, B, s, MM_RECOMPUTE_SELECTIVE) - model,
                  4.0 * B * s * s * h * l, 1e-9);
    ck_assert(isnan(mm_llm_hw_flops(&m, B, s, 7)));

    /* the reference table's derived PFLOP column (1 decimal) */
    double pf = mm_llm_hw_flops(&m, B, s, MM_RECOMPUTE_FULL) / 1e15;
    ck_assert_msg(fabs(pf - megatron[i].pflop) <= 0.05 + 1e-6 * megatron[i].pflop,
                  "%s: %.2f PFLOP vs table %.1f", megatron[i].file, pf, megatron[i].pflop);

    /* Zero Bubble Table 1, per layer forward: s*b*h*(24h + 4s) */
    ck_assert_rel(mm_llm_layer_fwd_flops(&m, 1.0, s), s * h * (24.0 * h + 4.0 * s), 1e-12);
}
END_TEST

/* ---- GQA ----------------------------------------------------------------- */

START_TEST(gqa_flops)
{
    mm_llm gqa, mha;
    load_ok("models/llama-3-8b.json", &gqa);
    mha = gqa;
    mha.kv_heads = mha.heads;
    double b = 2, s = 4096, h = 4096, d = 128;
    /* QKV: 2bsh(a d + 2 g d); only the K and V columns change */
    double diff = mm_llm_layer_fwd_flops(&mha, b, s) - mm_llm_layer_fwd_flops(&gqa, b, s);
    ck_assert_rel(diff, 2.0 * b * s * h * 2.0 * (32.0 - 8.0) * d, 1e-12);
    /* and the whole layer, spelled out */
    double want = 2 * b * s * h * (32 * d + 2 * 8 * d) + 4 * b * s * s * 32 * d +
                  2 * b * s * 32 * d * h + 2 * b * s * h * 14336 * 3;
    ck_assert_rel(mm_llm_layer_fwd_flops(&gqa, b, s), want, 1e-12);
    /* parameters: K and V shrink by the same factor */
    ck_assert_int_eq(mm_llm_layer_params(&mha) - mm_llm_layer_params(&gqa),
                     2 * 4096 * (32 - 8) * 128);
}
END_TEST

/* Megatron-LM num_floating_point_operations (NVIDIA/Megatron-LM, commit
 * 2748e7c7d4), GQA-aware: 60*B*s*l*h^2*(1 + g/5a + s/5h + V/10lh) for ffn = 4h. */
START_TEST(gqa_megatron_60_form)
{
    static const int64_t groups[] = { 1, 2, 4, 8, 16, 32 };
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        mm_llm m;
        mm_llm_init_gpt(&m, 4096, 32, 32, 50304, 4096);
        m.kv_heads = groups[i];
        double B = 64, s = 4096, l = 32, h = 4096, a = 32, V = 50304;
        double g = (double)groups[i];
        double f = 60.0 * B * s * l * h * h *
                   (1.0 + g / (5.0 * a) + s / (5.0 * h) + V / (10.0 * l * h));
        ck_assert_rel(mm_llm_model_flops(&m, B, s), f, 1e-12);
    }
}
END_TEST

/* ---- per-op lists ------------------------------------------------------- */

START_TEST(ops_sum_to_layer)
{
    static const char *const files[] = {
        "models/llama-2-7b.json", "models/llama-3-8b.json", "models/qwen2.5-72b.json",
        "models/gpt2-xl.json", "models/megatron-gpt-530b.json", DATA "neox.json",
        "models/mixtral-8x7b.json", HF "deepseek-v2-lite.json", HF "deepseek-v3.json",
        HF "gemma-2-9b.json", HF "qwen3-30b-a3b.json", HF "phi-3.5-mini.json",
    };
    static const int tps[] = { 1, 2, 4, 8 };
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        mm_llm m;
        load_ok(files[f], &m);
        for (size_t t = 0; t < sizeof tps / sizeof tps[0]; t++) {
            for (int sp = 0; sp < 2; sp++) {
                mm_op_cost ops[MM_LLM_MAX_OPS];
                double b = 3, s = 2048;
                int n = mm_llm_layer_ops(&m, b, s, tps[t], sp, 2, ops, MM_LLM_MAX_OPS);
                ck_assert_int_gt(n, 0);
                ck_assert_rel(model_flops_of(ops, n, tps[t]), mm_llm_layer_fwd_flops(&m, b, s), 1e-12);
                for (int i = 0; i < n; i++) {
                    ck_assert(ops[i].bytes > 0.0);
                    if (ops[i].kind == MM_OPK_GEMM)
                        ck_assert_rel(ops[i].flops, 2.0 * ops[i].m * ops[i].n * ops[i].k * ops[i].batch,
                                      1e-15);
                    else if (ops[i].kind == MM_OPK_MEM)
                        ck_assert(ops[i].flops == 0.0);
                }
                n = mm_llm_head_ops(&m, b, s, tps[t], sp, 2, ops, MM_LLM_MAX_OPS);
                ck_assert_int_gt(n, 0);
                ck_assert_rel(sum_flops(ops, n) * tps[t], mm_llm_head_fwd_flops(&m, b, s),
                              1e-12);
                n = mm_llm_embed_ops(&m, b, s, tps[t], sp, 2, ops, MM_LLM_MAX_OPS);
                ck_assert_int_gt(n, 0);
                ck_assert(sum_flops(ops, n) == 0.0);
            }
        }
    }
}
END_TEST

START_TEST(ops_shapes_and_bytes)
{
    mm_llm m;
    load_ok("models/llama-3-8b.json", &m);
    mm_op_cost ops[MM_LLM_MAX_OPS], sp_ops[MM_LLM_MAX_OPS];
    double b = 1, s = 4096, e = 2;
    int n = mm_llm_layer_ops(&m, b, s, 4, false, 2, ops, MM_LLM_MAX_OPS);
    int nsp = mm_llm_layer_ops(&m, b, s, 4, true, 2, sp_ops, MM_LLM_MAX_OPS);
    ck_assert_int_eq(n, nsp);

    /* column-parallel QKV: (32 + 2*8)*128/4 output columns per rank */
    const mm_op_cost *qkv = find_op(ops, n, "qkv");
    ck_assert_ptr_nonnull(qkv);
    ck_assert(qkv->kind == MM_OPK_GEMM && qkv->m == 4096 && qkv->n == 1536 &&
              qkv->k == 4096 && qkv->batch == 1);
    ck_assert_rel(qkv->bytes, (4096.0 * 4096 + 4096.0 * 1536 + 4096.0 * 1536) * e, 1e-15);
    /* row-parallel output projection and fc2: k sharded, n = h */
    const mm_op_cost *o = find_op(ops, n, "attn_out");
    ck_assert(o->m == 4096 && o->n == 4096 && o->k == 1024);
    const mm_op_cost *fc1 = find_op(ops, n, "fc1");
    ck_assert(fc1->n == 2.0 * 14336 / 4 && fc1->k == 4096); /* gate + up */
    const mm_op_cost *fc2 = find_op(ops, n, "fc2");
    ck_assert(fc2->n == 4096 && fc2->k == 14336.0 / 4);
    /* attention core: 8 query heads per rank, causal, head_dim 128 */
    const mm_op_cost *at = find_op(ops, n, "attn");
    ck_assert(at->kind == MM_OPK_ATTN && at->causal && at->k == 128 && at->m == s &&
              at->n == s && at->batch == 8);
    ck_assert_rel(at->flops, 4.0 * s * s * 8 * 128, 1e-15);
    ck_assert_ptr_nonnull(find_op(ops, n, "rope"));

    /* sequence parallelism: norms and residual adds see s/tp tokens; GEMMs
     * and the attention core are unchanged */
    for (int i = 0; i < n; i++) {
        ck_assert_str_eq(ops[i].name, sp_ops[i].name);
        ck_assert(ops[i].flops == sp_ops[i].flops);
        const char *nm = ops[i].name;
        bool token_sharded = strncmp(nm, "norm", 4) == 0 || strncmp(nm, "residual", 8) == 0;
        if (token_sharded)
            ck_assert_msg(sp_ops[i].bytes < ops[i].bytes / 3.9, "%s: %g vs %g", nm,
                          sp_ops[i].bytes, ops[i].bytes);
        else
            ck_assert(sp_ops[i].bytes == ops[i].bytes);
    }
    const mm_op_cost *ln = find_op(ops, n, "norm_attn");
    ck_assert_rel(ln->bytes, (2.0 * s * 4096 + 4096) * e, 1e-15); /* RMSNorm: h weights */

    /* GPT-2: learned positions, no rope, non-gated fc1 */
    load_ok("models/gpt2-xl.json", &m);
    n = mm_llm_layer_ops(&m, b, 1024, 1, false, 2, ops, MM_LLM_MAX_OPS);
    ck_assert_ptr_null(find_op(ops, n, "rope"));
    ck_assert(find_op(ops, n, "fc1")->n == 6400);
    n = mm_llm_embed_ops(&m, b, 1024, 1, false, 2, ops, MM_LLM_MAX_OPS);
    ck_assert_ptr_nonnull(find_op(ops, n, "pos_embed"));

    /* head: vocab split over tp */
    load_ok("models/llama-3-8b.json", &m);
    n = mm_llm_head_ops(&m, b, s, 8, true, 2, ops, MM_LLM_MAX_OPS);
    const mm_op_cost *lm = find_op(ops, n, "lm_head");
    ck_assert(lm->m == s && lm->n == 128256.0 / 8 && lm->k == 4096);
    ck_assert(find_op(ops, n, "cross_entropy")->kind == MM_OPK_MEM);
    ck_assert(find_op(ops, n, "final_norm")->kind == MM_OPK_MEM);
}
END_TEST

START_TEST(ops_cap_and_args)
{
    mm_llm m;
    load_ok("models/llama-2-7b.json", &m);
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops(&m, 1, 128, 1, false, 2, ops, MM_LLM_MAX_OPS);
    ck_assert_int_gt(n, 1);
    ck_assert_int_le(n, MM_LLM_MAX_OPS);
    ck_assert_int_eq(mm_llm_layer_ops(&m, 1, 128, 1, false, 2, ops, n), n);
    ck_assert_int_eq(mm_llm_layer_ops(&m, 1, 128, 1, false, 2, ops, n - 1), -1);
    ck_assert_int_eq(mm_llm_layer_ops(&m, 1, 128, 0, false, 2, ops, n), -1);
    ck_assert_int_eq(mm_llm_layer_ops(&m, 1, 128, 1, false, 0, ops, n), -1);
    ck_assert_int_eq(mm_llm_head_ops(&m, 1, 128, 1, false, 2, ops, 0), -1);
    ck_assert_int_eq(mm_llm_embed_ops(&m, 1, 128, 1, false, 2, ops, 0), -1);
    ck_assert_int_le(mm_llm_head_ops(&m, 1, 128, 1, false, 2, ops, MM_LLM_MAX_OPS),
                     MM_LLM_MAX_OPS);
}
END_TEST

/* Packed micro-batches: attention costs sum s_i^2 (design.md section 4). */
START_TEST(packed_attention)
{
    mm_llm m;
    load_ok("models/qwen2.5-7b.json", &m);
    /* samples of 1000, 3000 and 96 tokens packed into 4096 */
    double lens[] = { 1000, 3000, 96 }, tokens = 0, sq = 0, sep = 0;
    for (int i = 0; i < 3; i++) {
        tokens += lens[i];
        sq += lens[i] * lens[i];
        sep += mm_llm_layer_fwd_flops(&m, 1, lens[i]);
    }
    ck_assert_rel(mm_llm_layer_fwd_flops_packed(&m, tokens, sq), sep, 1e-12);
    ck_assert(mm_llm_layer_fwd_flops_packed(&m, tokens, sq) <
              mm_llm_layer_fwd_flops(&m, 1, tokens));
    ck_assert_rel(mm_llm_layer_fwd_flops_packed(&m, 5 * 512.0, 5 * 512.0 * 512.0),
                  mm_llm_layer_fwd_flops(&m, 5, 512), 1e-15);
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops_packed(&m, tokens, sq, 3, 2, true, 2, ops, MM_LLM_MAX_OPS);
    ck_assert_rel(sum_flops(ops, n) * 2, sep, 1e-12);
    ck_assert(find_op(ops, n, "attn")->batch == 3.0 * 28 / 2);
}
END_TEST

START_TEST(tp_allreduce)
{
    mm_llm m;
    load_ok("models/llama-2-7b.json", &m);
    ck_assert(mm_llm_tp_allreduce_bytes(&m, 2, 4096, 2) == 2.0 * 4096 * 4096 * 2);
}
END_TEST

/* ---- bad input ---------------------------------------------------------- */

/* A key the file leaves out takes its transformers class's default
 * (sim/model/hf.c): LlamaConfig num_hidden_layers = 32, GPT2Config
 * n_positions = 1024. */
START_TEST(bad_missing_key)
{
    mm_llm m;
    load_ok(DATA "missing_layers.json", &m);
    ck_assert_int_eq(m.layers, 32);
    load_ok(DATA "missing_gpt2_positions.json", &m);
    ck_assert_int_eq(m.max_pos, 1024);
}
END_TEST

START_TEST(bad_wrong_type)
{
    mm_err err;
    load_bad(DATA "string_hidden.json", "hidden_size", 3, &err);
}
END_TEST

START_TEST(bad_zero_hidden)
{
    mm_err err;
    load_bad(DATA "zero_hidden.json", "hidden_size", 3, &err);
}
END_TEST

START_TEST(bad_kv_heads)
{
    mm_err err;
    load_bad(DATA "kv_not_dividing.json", "num_key_value_heads", 7, &err);
    ck_assert(strstr(err.msg, "divide") != NULL);
}
END_TEST

START_TEST(bad_heads_not_dividing_hidden)
{
    mm_err err;
    load_bad(DATA "heads_not_dividing.json", "n_head", 4, &err);
}
END_TEST

START_TEST(bad_missing_file)
{
    mm_llm m;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_llm_load(DATA "no-such-model.json", &m, &err), -MM_EINPUT);
    ck_assert(strstr(err.file, "no-such-model.json") != NULL);
}
END_TEST

/* A config embedded in a YAML document: errors carry the prefix. */
START_TEST(from_node_prefix)
{
    static const char text[] =
        "llm:\n"
        "  model_type: llama\n"
        "  hidden_size: 256\n"
        "  num_hidden_layers: 2\n"
        "  num_attention_heads: 4\n"
        "  intermediate_size: 688\n"
        "  vocab_size: 1000\n"
        "bad:\n"
        "  model_type: llama\n"
        "  hidden_size: 256\n"
        "  num_hidden_layers: 0\n"
        "  intermediate_size: 688\n"
        "  vocab_size: 1000\n";
    mm_doc doc;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_doc_load_string(&doc, "inline.yaml", text, &err), 0);
    mm_llm m;
    mm_node *root = mm_doc_root(&doc);
    ck_assert_int_eq(mm_llm_from_node(&doc, mm_node_get(root, "llm"), "llm", &m, &err), 0);
    ck_assert_int_eq(m.hidden, 256);
    ck_assert_int_eq(m.kv_heads, 4);
    ck_assert(!m.tied);
    ck_assert_int_eq(mm_llm_from_node(&doc, mm_node_get(root, "bad"), "bad", &m, &err),
                     -MM_EINPUT);
    ck_assert_str_eq(err.key, "bad.num_hidden_layers");
    ck_assert_str_eq(err.file, "inline.yaml");
    ck_assert_int_eq(err.line, 11);
    mm_doc_free(&doc);
}
END_TEST

START_TEST(validate_rejects)
{
    mm_llm m;
    mm_err err;
    mm_llm_init_gpt(&m, 1024, 4, 16, 1000, 512);
    ck_assert_int_eq(mm_llm_validate(&m, &err), 0);
    m.kv_heads = 5;
    ck_assert_int_eq(mm_llm_validate(&m, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "kv_heads");
    mm_llm_init_gpt(&m, 1024, 0, 16, 1000, 512);
    ck_assert_int_eq(mm_llm_validate(&m, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "layers");
    mm_llm_init_gpt(&m, 1024, 4, 16, 1000, 0);
    ck_assert_int_eq(mm_llm_validate(&m, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "max_pos");
}
END_TEST

/* ---- Hugging Face configs as published ---------------------------------- */

static void load_model_ok(const char *path, mm_model *m)
{
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_model_load(path, m, &err);
    char buf[1024];
    mm_err_format(&err, buf, sizeof buf);
    ck_assert_msg(rc == 0, "loading %s: %s", path, buf);
}

/* Total parameters within 0.5 % of the published count.  Sources: the
 * Hugging Face model pages' parameter counts (safetensors metadata) and
 * the model cards or papers named beside each figure. */
START_TEST(hf_published_totals)
{
    static const struct { const char *file; double published; const char *source; } t[] = {
        { HF "llama-3.1-8b.json", 8.03e9, "meta-llama/Llama-3.1-8B page: 8.03B" },
        { HF "llama-3.1-70b.json", 70.6e9, "meta-llama/Llama-3.1-70B page: 70.6B" },
        { HF "qwen2.5-vl-7b.json", 8.29e9, "Qwen/Qwen2.5-VL-7B-Instruct page: 8.29B" },
        { HF "llava-1.5-7b-hf.json", 7.06e9, "llava-hf/llava-1.5-7b-hf page: 7.06B" },
        { HF "llava-onevision-qwen2-7b-ov-hf.json", 8.03e9, "llava-hf/llava-onevision-qwen2-7b-ov-hf page: 8.03B" },
        { HF "internvl2.5-8b.json", 8.08e9, "OpenGVLab/InternVL2_5-8B page: 8.08B" },
        { HF "deepseek-v2-lite.json", 15.7e9, "DeepSeek-V2-Lite card: 15.7B total" },
        { HF "deepseek-v2.json", 236e9, "DeepSeek-V2 paper (arXiv 2405.04434): 236B total (was read as 18.7B dense)" },
        { HF "deepseek-v3.json", 671e9, "DeepSeek-V3 report (arXiv 2412.19437): 671B total, MTP apart" },
        { HF "qwen3-30b-a3b.json", 30.5e9, "Qwen/Qwen3-30B-A3B card: 30.5B total" },
        { HF "gemma-2-9b.json", 9.24e9, "google/gemma-2-9b page: 9.24B" },
        { HF "phi-3.5-mini.json", 3.82e9, "microsoft/Phi-3.5-mini-instruct page: 3.82B" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        mm_model m;
        load_model_ok(t[i].file, &m);
        double p = (double)mm_model_params(&m);
        ck_assert_msg(rel_diff(p, t[i].published) <= 0.005, "%s: %.0f vs %s", t[i].file, p, t[i].source);
    }
}
END_TEST

/* Gemma-2-9B exactly: 42 x (attention 44,040,192 + GeGLU MLP 154,140,672 +
 * four RMSNorms 14,336) + tied embedding 917,504,000 + final norm 3,584 =
 * 9,241,705,984, the checkpoint's tensor total (google/gemma-2-9b). */
START_TEST(hf_gemma2_exact)
{
    mm_llm m;
    load_ok(HF "gemma-2-9b.json", &m);
    ck_assert_int_eq(mm_llm_params(&m), INT64_C(9241705984));
    ck_assert(m.sandwich_norm && m.tied && m.gated_mlp);
    ck_assert_int_eq(m.head_dim, 256); /* explicit: 16 x 256 = 4096 != hidden 3584 */
    ck_assert_int_eq(m.window, 4096);
    ck_assert(mm_llm_layer_is_sliding(&m, 0) && !mm_llm_layer_is_sliding(&m, 1));
    /* half the layers attend 4096 keys: at s = 8192 the mean block's core is
     * 2*H*(d+d)*(s^2/2 + s*4096/2) */
    double s = 8192, H = 16, d = 256;
    double want = 2.0 * H * 2.0 * d * (0.5 * s * s + 0.5 * s * 4096);
    ck_assert_rel(mm_llm_layer_attn_fwd_flops(&m, 1, s), want, 1e-12);
    /* two pipeline stages of 21 blocks: 11 and 10 sliding ones, each stage
     * costed from its own (the model's mean is 21 of 42) */
    mm_llm g0 = mm_llm_stage_view(&m, 0, 21), g1 = mm_llm_stage_view(&m, 21, 21);
    double a0 = mm_llm_layer_attn_fwd_flops(&g0, 1, s), a1 = mm_llm_layer_attn_fwd_flops(&g1, 1, s);
    ck_assert_rel(a0, 2.0 * H * 2.0 * d * (10.0 / 21 * s * s + 11.0 / 21 * s * 4096), 1e-12);
    ck_assert_rel(21 * (a0 + a1), 42 * mm_llm_layer_attn_fwd_flops(&m, 1, s), 1e-12);
    /* the soft-capped logits cost one more pass over them */
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_head_ops(&m, 1, 4096, 1, false, 2, ops, MM_LLM_MAX_OPS);
    bool cap = false;
    for (int i = 0; i < n; i++)
        cap |= !strcmp(ops[i].name, "logit_softcap");
    ck_assert(cap);
}
END_TEST

/* MoE models: active parameters per token.  Qwen3-30B-A3B card: 3.3B
 * activated (2 significant figures: 2 %).  DeepSeek count activated
 * parameters without the input embedding (a lookup): DeepSeek-V3
 * README_WEIGHTS.md 36.6B; DeepSeek-V2-Lite card 2.4B (2 figures: 3 %). */
START_TEST(hf_moe_active)
{
    mm_llm q, v2, v3;
    load_ok(HF "qwen3-30b-a3b.json", &q);
    ck_assert_rel(mm_llm_active_params(&q), 3.3e9, 0.02);
    load_ok(HF "deepseek-v2-lite.json", &v2);
    ck_assert_rel(mm_llm_active_params(&v2) - mm_llm_embedding_params(&v2), 2.4e9, 0.03);
    load_ok(HF "deepseek-v3.json", &v3);
    ck_assert_rel(mm_llm_active_params(&v3) - mm_llm_embedding_params(&v3), 36.6e9, 0.005);
    mm_llm v2f; /* DeepSeek-V2 paper: "21B are activated for each token" (2 figures: 2 %) */
    load_ok(HF "deepseek-v2.json", &v2f);
    ck_assert_rel(mm_llm_active_params(&v2f) - mm_llm_embedding_params(&v2f), 21e9, 0.02);
    /* V3's MTP module, apart: README_WEIGHTS.md "11.5B unique parameters"
     * (rounded; eh_proj's 0.10B makes ours 11.61B) */
    ck_assert_int_eq(v3.mtp_layers, 1);
    ck_assert_rel(mm_llm_mtp_params(&v3), 11.5e9, 0.01);
    ck_assert_int_eq(mm_llm_moe_layers(&v3), 58); /* first_k_dense_replace 3 of 61 */
    ck_assert(v3.router_bias);
    /* a pipeline stage of the first 3 blocks is dense, the rest MoE: each
     * stage's mean block is its own */
    ck_assert(!mm_llm_blocks_uniform(&v3));
    mm_llm s0 = mm_llm_stage_view(&v3, 0, 3), s1 = mm_llm_stage_view(&v3, 3, 58);
    ck_assert_int_eq(mm_llm_moe_layers(&s0), 0);
    ck_assert_int_eq(mm_llm_moe_layers(&s1), 58);
    ck_assert_int_eq(mm_llm_layer_params(&s0), mm_llm_layer_params_at(&v3, 0));
    ck_assert_int_eq(mm_llm_layer_params(&s1), mm_llm_layer_params_at(&v3, 3));
    ck_assert_int_eq(3 * mm_llm_layer_params(&s0) + 58 * mm_llm_layer_params(&s1),
                     mm_llm_params(&v3) - mm_llm_embedding_params(&v3) - mm_llm_head_params(&v3) -
                         mm_llm_final_norm_params(&v3));
    ck_assert_rel(3 * mm_llm_layer_fwd_flops(&s0, 1, 4096) + 58 * mm_llm_layer_fwd_flops(&s1, 1, 4096),
                  61 * mm_llm_layer_fwd_flops(&v3, 1, 4096), 1e-12);
}
END_TEST

/* DeepSeek-V2-Lite block by block (modeling_deepseek.py shapes): MLA with
 * q_lora_rank null -> q_proj 2048 x 16*192, kv_a 2048 x (512+64), its norm,
 * kv_b 512 x 16*(128+128), o 16*128 x 2048: 13,763,072; block 0 dense
 * (3 x 2048 x 10944), blocks 1..26 MoE: 64 routed + 2 shared experts of
 * 1408, router 2048 x 64; two norms each.  Sum 15,706,484,224. */
START_TEST(hf_mla_blocks)
{
    mm_llm m;
    load_ok(HF "deepseek-v2-lite.json", &m);
    ck_assert_int_eq(m.q_lora, 0);
    ck_assert_int_eq(m.shared_ffn, 2 * 1408);
    int64_t attn = 2048 * 16 * 192 + 2048 * 576 + 512 + 512 * 16 * 256 + 16 * 128 * 2048;
    ck_assert_int_eq(attn, 13763072);
    ck_assert_int_eq(mm_llm_layer_params_at(&m, 0), attn + 3 * 2048 * 10944 + 2 * 2048);
    int64_t moe = 64 * 3 * 2048 * INT64_C(1408) + 2048 * 64 + 3 * 2048 * 2816;
    ck_assert_int_eq(mm_llm_layer_params_at(&m, 1), attn + moe + 2 * 2048);
    ck_assert_int_eq(mm_llm_params(&m), INT64_C(15706484224));
    /* active FLOPs per token of the MoE blocks: 2 x (attention matmuls + 6
     * routed + 2 shared experts + router); block 0 dense */
    double lin_moe = 2.0 * (double)(attn - 512) + 2.0 * (6.0 * 3 * 2048 * 1408 + 3.0 * 2048 * 2816 + 2048 * 64);
    double lin_dense = 2.0 * (double)(attn - 512) + 2.0 * 3 * 2048 * 10944;
    double want = (lin_dense + 26 * lin_moe) / 27;
    ck_assert_rel(mm_llm_layer_fwd_flops_packed(&m, 1, 0), want, 1e-12);
    /* the executor's ops: MLA's projections, routed and shared experts */
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops(&m, 1, 4096, 2, true, 2, ops, MM_LLM_MAX_OPS);
    /* EP: a GPU's 64/4 experts each take 4 replicas' mean load in one GEMM;
     * the same FLOPs */
    mm_llm e4 = m;
    e4.ep_share = 4;
    mm_op_cost ops4[MM_LLM_MAX_OPS];
    int n4 = mm_llm_layer_ops(&e4, 1, 4096, 2, true, 2, ops4, MM_LLM_MAX_OPS);
    ck_assert_int_eq(n4, n);
    const mm_op_cost *x1 = find_op(ops, n, "expert_fc1"), *x4 = find_op(ops4, n4, "expert_fc1");
    ck_assert_rel(x4->m, 4 * x1->m, 1e-12);
    ck_assert_rel(x4->batch, x1->batch / 4, 1e-12);
    ck_assert_rel(sum_flops(ops4, n4), sum_flops(ops, n), 1e-12);
    const char *need[] = { "q", "kv_down", "kv_norm", "kv_up", "attn", "expert_fc1", "expert_fc2",
                           "shared_fc1", "shared_fc2", "fc1", "router" };
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++) {
        bool found = false;
        for (int i = 0; i < n; i++)
            found |= !strcmp(ops[i].name, need[k]);
        ck_assert_msg(found, "op %s missing", need[k]);
    }
}
END_TEST

/* Keys a config leaves out take the class defaults: llava-1.5-7b-hf's
 * text_config names only what differs from LlamaConfig, and comes out as
 * the hand-completed models/llava-1.5-7b.json; Qwen2.5-VL's flat LLM keys
 * keep Qwen2's Q/K/V biases. */
START_TEST(hf_defaults_and_layouts)
{
    mm_model a, b;
    load_model_ok(HF "llava-1.5-7b-hf.json", &a);
    load_model_ok("models/llava-1.5-7b.json", &b);
    ck_assert_int_eq(a.llm.hidden, 4096);
    ck_assert_int_eq(a.llm.layers, 32);
    ck_assert_int_eq(a.llm.ffn, 11008);
    ck_assert_int_eq(mm_model_params(&a), mm_model_params(&b));
    ck_assert_int_eq(mm_model_params(&b), INT64_C(7063427072));

    mm_model q;
    load_model_ok(HF "qwen2.5-vl-7b.json", &q);
    ck_assert(q.has_vision && q.has_llm && q.llm.qkv_bias);
    ck_assert_int_eq(mm_llm_params(&q.llm), INT64_C(7615616512)); /* = Qwen2.5-7B */
    ck_assert_int_eq(q.vision.layers, 32);
    ck_assert_int_eq(q.vision.full_layers, 4); /* fullatt_block_indexes */
    ck_assert_int_eq(q.vision.window, 64);      /* (112 / 14)^2 patches */
    ck_assert_int_eq(q.vision_proj.type, MM_PROJ_QWEN_MERGER);
    /* Conv3d 3x2x14x14 -> 1280; 32 blocks; merger 5120 -> 5120 -> 3584 */
    ck_assert_int_eq(mm_encoder_params(&q.vision) + mm_projector_params(&q.vision_proj), INT64_C(676550144));
    /* a 448x448 unit: 1024 patches; 4 of 32 blocks attend all of them, 28
     * within 64-patch windows; SwiGLU MLP of 3420 */
    double np = 1024, h = 1280, f = 3420, pairs = (4.0 / 32) * np * np + (28.0 / 32) * np * 64;
    ck_assert_rel(mm_encoder_layer_fwd_flops(&q.vision, 1), 2 * np * (4 * h * h + 3 * h * f) + 4 * pairs * h, 1e-12);
    mm_op_cost eops[MM_LLM_MAX_OPS];
    int ne = mm_encoder_layer_ops(&q.vision, 3, 2, false, 2, eops, MM_LLM_MAX_OPS);
    ck_assert_int_gt(ne, 0);
    ck_assert_rel(sum_flops(eops, ne) * 2, mm_encoder_layer_fwd_flops(&q.vision, 3), 1e-12);

    /* InternVL: the transformers-native layout's tower equals the original's */
    mm_model o, n;
    load_model_ok(HF "internvl2.5-8b.json", &o);
    load_model_ok(HF "internvl-native-small.json", &n);
    ck_assert_int_eq(mm_encoder_params(&o.vision), mm_encoder_params(&n.vision));
    ck_assert_int_eq(mm_model_tokens_per_tile(&n), 256);

    /* llava_next without image_grid_pinpoints: LlavaNextConfig's grids
     * (336x672 ... 672x672: at most 2x2) plus the base tile; image_newline */
    mm_model nx;
    load_model_ok(HF "llava-next-small.json", &nx);
    ck_assert_int_eq(nx.n_grids, 5);
    ck_assert_int_eq(nx.max_tiles, 5);
    ck_assert_int_eq(nx.extra_params, 512);

    mm_llm c;
    load_ok(HF "costless-keys.json", &c); /* token ids, dropout, rope_scaling, quantization_config */
}
END_TEST

/* Visual tokens as the models make them.  LLaVA-OneVision (arXiv
 * 2408.03326 Sec. 4): 729 per SigLIP-384/14 tile, 196 per video frame
 * after 2x2 pooling, anyres_max_9: at most 9 grid tiles + the base image.
 * InternVL2.5: 256 per 448-px tile (pixel shuffle 0.5).  Qwen2.5-VL: 2x2
 * merger, 256 per 448x448 of image, 128 per frame (2 frames per temporal
 * patch).  LLaVA-1.5: 576. */
START_TEST(hf_visual_tokens)
{
    mm_model m;
    load_model_ok(HF "llava-onevision-qwen2-7b-ov-hf.json", &m);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 729);
    ck_assert_int_eq(mm_model_tokens_per_frame(&m), 196);
    ck_assert_int_eq(mm_model_tiles_cap(&m), 10);
    mm_token_model tm;
    mm_token_model_from_model(&m, &tm);
    ck_assert_int_eq(tm.tokens_per_frame, 196);
    mm_sample big = { .images = 1, .tiles = 37 }, vid = { .frames = 32 };
    ck_assert_int_eq(mm_sample_mm_tokens(&big, &tm), 10 * 729);
    ck_assert_int_eq(mm_sample_mm_tokens(&vid, &tm), 32 * 196);
    load_model_ok("models/llava-ov-qwen2.5-7b.yaml", &m); /* our YAML form says the same */
    ck_assert_int_eq(mm_model_tokens_per_frame(&m), 196);
    load_model_ok(HF "internvl2.5-8b.json", &m);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 256);
    ck_assert_int_eq(mm_model_tokens_per_frame(&m), 256);
    load_model_ok(HF "qwen2.5-vl-7b.json", &m);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 256);
    ck_assert_int_eq(mm_model_tokens_per_frame(&m), 128);
    load_model_ok(HF "llava-1.5-7b-hf.json", &m);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 576);
    /* Idefics3: pixel shuffle by scale_factor 2, then one Linear without
     * bias (Idefics3Connector): (512/16)^2 / 4 = 256 tokens, 768*4 x 576 */
    load_model_ok(HF "idefics3-small.json", &m);
    ck_assert_int_eq(mm_model_tokens_per_tile(&m), 256);
    ck_assert_int_eq(mm_projector_params(&m.vision_proj), 768 * 4 * 576);
}
END_TEST

/* Refusal, never silence: exit 2 with the key named. */
START_TEST(hf_refusals)
{
    static const struct { const char *file, *key; } t[] = {
        { "unknown_type.json", "key 'model_type'" },
        { "unknown_arch.json", "key 'architectures'" },
        { "unknown_act.json", "key 'hidden_act'" },
        { "unmodeled_key.json", "key 'num_mystery_layers'" },
        { "qwen2_sliding.json", "key 'use_sliding_window'" },
        { "qwen3_moe_mlp_only.json", "key 'mlp_only_layers'" },
        { "nested_act.json", "key 'text_config.hidden_act'" },
        { "vision_unmodeled.json", "key 'vision_config.num_registers'" },
        { "composite_unmodeled.json", "key 'mystery_resampler_queries'" },
        { "layer_types.json", "key 'layer_types'" },
        { "composite_audio.json", "key 'audio_config'" },
    };
    char dir[256], out[8192], err[4096], args[512];
    mmx_tmpdir(dir, sizeof dir, "hf");
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        snprintf(args, sizeof args, "model %sbad/%s", HF, t[i].file);
        int rc = mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2, "%s: exit %d (%s)", t[i].file, rc, err);
        ck_assert_msg(strstr(err, t[i].key) && strstr(err, t[i].file), "%s: %s", t[i].file, err);
    }
    mmx_rmdir(dir);
}
END_TEST

/* `mmsim model` needs no layout that fits: DeepSeek-V3's 61 layers under
 * the default pp = 2 are a note; --json reports active and MTP parameters
 * and the visual tokens. */
START_TEST(hf_model_cli)
{
    char dir[256], out[16384], err[4096];
    mmx_tmpdir(dir, sizeof dir, "hfcli");
    ck_assert_int_eq(mmx_run(dir, NULL, "model " HF "deepseek-v3.json --json", out, sizeof out, err, sizeof err), 0);
    ck_assert_msg(strstr(out, "\"layout_note\": \"`mmsim run` refuses it") != NULL &&
                      strstr(out, "parallel.llm.pp") != NULL, "%s", out);
    ck_assert(strstr(out, "\"active_params\": ") && strstr(out, "\"mtp_params\": "));
    ck_assert_int_eq(mmx_run(dir, NULL, "model " HF "llava-onevision-qwen2-7b-ov-hf.json --json", out, sizeof out,
                             err, sizeof err), 0);
    ck_assert(strstr(out, "\"tokens_per_tile\": 729") && strstr(out, "\"tokens_per_frame\": 196"));
    mmx_rmdir(dir);
}
END_TEST

/* `mmsim run` of DeepSeek-V2-Lite with ep > 1 runs and its all-to-all is in
 * the timeline; an expert group may span TP and DP ranks (ep 16 over dp 8
 * x tp 2); ep that folds into neither is refused.  llava-1.5-7b-hf and
 * Qwen2.5-VL-7B as published run with their encoders. */
START_TEST(hf_runs)
{
    char dir[256], out[65536], err[4096], args[1024], trace[512], buf[1 << 16];
    mmx_tmpdir(dir, sizeof dir, "hfrun");
    snprintf(trace, sizeof trace, "%s/t.json", dir);
    snprintf(args, sizeof args, "run --no-db --set model=" HF "deepseek-v2-lite.json "
             "--set 'parallel.llm={tp: 2, pp: 1, dp: 8, ep: 4}' --set iterations=1 --trace %s", trace);
    ck_assert_msg(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    mmx_slurp(trace, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "\"name\":\"ep s0 L1 mb0\"") != NULL, "no EP all-to-all in the trace");
    ck_assert_int_eq(mmx_run(dir, NULL, "run --no-db --json --set model=" HF "deepseek-v2-lite.json "
                             "--set 'parallel.llm={tp: 2, pp: 1, dp: 8, ep: 16}' --set iterations=1",
                             out, sizeof out, err, sizeof err), 0);
    /* the case: ep 32 over dp 16 (x tp 2) was refused */
    ck_assert_int_eq(mmx_run(dir, NULL, "run --no-db --set model=" HF "deepseek-v2-lite.json --set cluster.nodes=4 "
                             "--set 'parallel.llm={tp: 2, pp: 1, dp: 16, ep: 32}' --set train.global_batch=64 "
                             "--set iterations=1", out, sizeof out, err, sizeof err), 0);
    ck_assert_int_eq(mmx_run(dir, NULL, "run --no-db --set model=" HF "deepseek-v2-lite.json "
                             "--set 'parallel.llm={tp: 2, pp: 1, dp: 8, ep: 3}' --set iterations=1",
                             out, sizeof out, err, sizeof err), 2);
    ck_assert(strstr(err, "parallel.llm.ep") != NULL);
    static const char *const mm[] = { "llava-1.5-7b-hf.json", "qwen2.5-vl-7b.json" };
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "run --no-db --set model=%s%s --set iterations=1", HF, mm[i]);
        ck_assert_msg(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err) == 0, "%s: %s", mm[i], err);
        ck_assert_msg(strstr(out, "vision:fwd") != NULL, "%s: no encoder work\n%s", mm[i], out);
    }
    mmx_rmdir(dir);
}
END_TEST

/* ---- suite -------------------------------------------------------------- */

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tp = tcase_create("params");
    tcase_add_test(tp, params_published);
    tcase_add_test(tp, loaded_shapes);
    tcase_add_test(tp, gpt2_small_null_inner);
    tcase_add_test(tp, neox_pythia_70m);
    tcase_add_test(tp, qwen2_tied_small);
    tcase_add_test(tp, explicit_head_dim);
    tcase_add_test(tp, tie_defaults);
    suite_add_tcase(s, tp);

    int nmeg = (int)(sizeof megatron / sizeof megatron[0]);
    TCase *tm = tcase_create("megatron");
    tcase_add_loop_test(tm, megatron_params, 0, nmeg);
    tcase_add_loop_test(tm, megatron_flops, 0, nmeg);
    suite_add_tcase(s, tm);

    TCase *tf = tcase_create("flops");
    tcase_add_test(tf, gqa_flops);
    tcase_add_test(tf, gqa_megatron_60_form);
    tcase_add_test(tf, ops_sum_to_layer);
    tcase_add_test(tf, ops_shapes_and_bytes);
    tcase_add_test(tf, ops_cap_and_args);
    tcase_add_test(tf, packed_attention);
    tcase_add_test(tf, tp_allreduce);
    suite_add_tcase(s, tf);

    TCase *th = tcase_create("hf");
    tcase_add_test(th, hf_published_totals);
    tcase_add_test(th, hf_gemma2_exact);
    tcase_add_test(th, hf_moe_active);
    tcase_add_test(th, hf_mla_blocks);
    tcase_add_test(th, hf_defaults_and_layouts);
    tcase_add_test(th, hf_visual_tokens);
    tcase_add_test(th, hf_refusals);
    tcase_add_test(th, hf_model_cli);
    tcase_add_test(th, hf_runs);
    suite_add_tcase(s, th);

    TCase *tb = tcase_create("bad_input");
    tcase_add_test(tb, bad_missing_key);
    tcase_add_test(tb, bad_wrong_type);
    tcase_add_test(tb, bad_zero_hidden);
    tcase_add_test(tb, bad_kv_heads);
    tcase_add_test(tb, bad_heads_not_dividing_hidden);
    tcase_add_test(tb, bad_missing_file);
    tcase_add_test(tb, from_node_prefix);
    tcase_add_test(tb, validate_rejects);
    suite_add_tcase(s, tb);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(model_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
