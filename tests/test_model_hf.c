/* test_model_hf.c - Check suite for Hugging Face configs as published
 * (sim/model/llm, sim/model/mllm): total and active parameters, Gemma 2,
 * MoE and MLA blocks, defaults and layouts, visual tokens, refusals, and
 * `mmsim model` and runs on them.
 * Runs from the source root (meson sets workdir), so paths are relative.
 *
 * Not for: our own config files (test_model.c), FLOPs and the per-op cost
 * lists (test_model_flops.c). */
#include "model_common.h"

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
    /* EP: a GPU's 64/4 experts each take 4 replicas' mean load (balanced
     * routing) in one grouped GEMM, the same FLOPs; the received rows are
     * sorted by local expert and back (two more kernels) */
    mm_llm e4 = m;
    e4.ep_share = 4;
    mm_op_cost ops4[MM_LLM_MAX_OPS];
    int n4 = mm_llm_layer_ops(&e4, 1, 4096, 2, true, 2, ops4, MM_LLM_MAX_OPS);
    ck_assert_int_eq(n4, n + 2);
    ck_assert_ptr_nonnull(find_op(ops4, n4, "moe_sort"));
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
        ck_assert_msg(strstr(out, "vision:") != NULL, "%s: no encoder work\n%s", mm[i], out);
    }
    mmx_rmdir(dir);
}
END_TEST

static Suite *model_hf_suite(void)
{
    Suite *s = suite_create("model_hf");

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
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(model_hf_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
