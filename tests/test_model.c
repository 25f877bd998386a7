/* test_model.c - Check suite for reading LLM configs (sim/model/llm):
 * config.json reading, parameter counts, tie_word_embeddings, and bad
 * config files refused with file, line and key.
 *
 * What it is for: pinning the LLM model's parameters to published numbers
 * (Hugging Face parameter counts) and checking that bad config files are
 * refused with file, line and key.
 * Runs from the source root (meson sets workdir), so paths are relative.
 *
 * Not for: FLOPs and the per-op cost lists (test_model_flops.c), Hugging
 * Face configs as published (test_model_hf.c), the memory model, timing or
 * layouts (their own suites). */
#include "model_common.h"

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
