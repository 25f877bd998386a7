/* llm_read.c - reading a decoder-only LLM from a Hugging Face config.json
 * mapping: GPT-2, GPT-NeoX, MPT, the Llama family (Llama, Mistral,
 * Ministral 3, Mixtral, Qwen2/2-MoE/3/3-MoE, Gemma/Gemma 2/Gemma 3, Phi-2,
 * Phi-3, InternLM2, OLMo 2, Cohere, Starcoder2, StableLM, Nemotron,
 * MiniCPM, DeepSeek-MoE, gpt-oss, Llama 4's text model (interleaved MoE,
 * chunked attention), the LLM half of Qwen2-VL/2.5-VL/3-VL and Phi-3-V)
 * and DeepSeek-V2/V3 (MLA, fine-grained MoE).
 *
 * A key the file leaves out takes its transformers config class's default
 * (hf.c); an unknown model_type or architecture, an unknown hidden_act, or a
 * key mmsim does not model is refused by name (hf.h), never ignored.
 * Not for: costs (llm.c), encoders and composites (mllm.c). */
#include "model/llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/hf.h"
#include "util/doc.h"

/* Bounds far above any published model that keep every count in int64
 * (llm.c's cost functions rely on them). */
#define WIDTH_MAX (INT64_C(1) << 20)
#define LAYERS_MAX (INT64_C(1) << 16)
#define VOCAB_MAX (INT64_C(1) << 24)
#define POS_MAX (INT64_C(1) << 40)
#define EXPERTS_MAX (INT64_C(1) << 16)

static const char *const llama_family[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
                                           "qwen3_moe", "gemma", "gemma2", "phi3", "internlm2",
                                           "qwen2_vl_text", "qwen2_5_vl_text", "olmo2", "cohere",
                                           "starcoder2", "deepseek", "minicpm", "gemma3_text", "gpt_oss",
                                           "phi", "stablelm", "nemotron", "ministral3", "phi3_v", "qwen3_vl_text",
                                           "llama4_text", "mllama_text_model", NULL};
static const char *const qwen2_types[] = {"qwen2", "qwen2_moe", "qwen2_vl_text", "qwen2_5_vl_text", NULL};

/* Architectures of the supported types (config.json "architectures"). */
static const char *const known_archs[] = {
    "GPT2LMHeadModel", "GPT2Model", "GPTNeoXForCausalLM", "LlamaForCausalLM", "LlamaModel",
    "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM", "Qwen2MoeForCausalLM",
    "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "GemmaForCausalLM", "Gemma2ForCausalLM",
    "Phi3ForCausalLM", "InternLM2ForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM",
    "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
    "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration",
    "LlavaOnevisionForConditionalGeneration", "InternVLChatModel", "InternVLForConditionalGeneration",
    "Idefics3ForConditionalGeneration", "Qwen2_5_VLModel", "Olmo2ForCausalLM", "CohereForCausalLM",
    "Starcoder2ForCausalLM", "DeepseekForCausalLM", "MiniCPMForCausalLM", "Gemma3ForCausalLM",
    "GptOssForCausalLM", "PhiForCausalLM", "StableLmForCausalLM", "MptForCausalLM", "NemotronForCausalLM",
    "Mistral3ForConditionalGeneration", "Phi3VForCausalLM",
    /* Whisper checkpoints: mmsim reads their encoder (mllm_read.c) */
    "WhisperForConditionalGeneration", "WhisperModel", "WhisperForAudioClassification",
    "Gemma3ForConditionalGeneration", "Qwen2AudioForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "Idefics2ForConditionalGeneration", "Llama4ForConditionalGeneration", "Llama4ForCausalLM",
    "MllamaForConditionalGeneration", NULL,
};

int mm_llm_check_architectures(const mm_doc *doc, mm_node *map, const char *prefix, mm_err *err)
{
    mm_node *a = mm_node_get(map, "architectures");
    if (!a || mm_node_is_null(a) || !mm_node_is_sequence(a))
        return 0;
    mm_hf r = {doc, map, prefix, NULL, err};
    int it = 0;
    mm_node *e;
    while ((e = mm_node_item(a, it++))) {
        const char *s = mm_node_scalar(e, NULL);
        if (s && !mm_hf_in(s, known_archs))
            return mm_hf_fail(&r, "architectures", "unknown architecture '%s': mmsim does not model it", s);
    }
    return 0;
}

/* GPT-2 keys (GPT2Config).  n_inner null -> 4h; never gated. */
static int read_gpt2(const mm_hf *r, mm_llm *m)
{
    int rc;
    bool found;
    static const char *const costless[] = {"n_ctx", "summary_type", "summary_use_proj", "summary_activation",
                                           "summary_proj_to_labels", "summary_first_dropout", "scale_attn_weights",
                                           "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx",
                                           "output_past", NULL};
    static const char *const read[] = {"n_inner", "tie_word_embeddings", NULL};
    if ((rc = mm_hf_check_keys(r, read, costless)) ||
        (rc = mm_hf_need_int(r, "n_embd", 1, WIDTH_MAX, &m->hidden)) ||
        (rc = mm_hf_need_int(r, "n_layer", 1, LAYERS_MAX, &m->layers)) ||
        (rc = mm_hf_need_int(r, "n_head", 1, WIDTH_MAX, &m->heads)) ||
        (rc = mm_hf_need_int(r, "vocab_size", 1, VOCAB_MAX, &m->vocab)) ||
        (rc = mm_hf_need_int(r, "n_positions", 1, VOCAB_MAX, &m->max_pos)))
        return rc;
    m->ffn = 4 * m->hidden;
    char act[64] = "";
    if ((rc = mm_hf_int(r, "n_inner", 1, WIDTH_MAX, &m->ffn, &found)) ||
        (rc = mm_hf_str(r, "activation_function", act, sizeof act)) ||
        (rc = mm_hf_act(r, "activation_function", act)))
        return rc;
    m->kv_heads = m->heads;
    m->tied = m->learned_pos = true;
    m->qkv_bias = m->out_bias = m->mlp_bias = true;
    return 0;
}

/* The MoE keys of Mixtral, Qwen2-MoE and Qwen3-MoE. */
static int read_moe(const mm_hf *r, mm_llm *m)
{
    int rc;
    bool fe = false;
    const char *ek = mm_hf_in(r->type, (const char *const[]){"qwen2_moe", "qwen3_moe", "minicpm", NULL})
                         ? "num_experts"
                         : "num_local_experts";
    if ((rc = mm_hf_int(r, ek, 1, EXPERTS_MAX, &m->experts, &fe)))
        return rc;
    if (!fe)
        return 0;
    m->experts_per_tok = 2;
    m->moe_ffn = m->ffn;
    m->moe_every = 1;
    if ((rc = mm_hf_int(r, "num_experts_per_tok", 1, EXPERTS_MAX, &m->experts_per_tok, NULL)) ||
        (rc = mm_hf_int(r, "moe_intermediate_size", 1, WIDTH_MAX, &m->moe_ffn, NULL)) ||
        (rc = mm_hf_int(r, "decoder_sparse_step", 1, LAYERS_MAX, &m->moe_every, NULL)))
        return rc;
    m->moe_offset = 1; /* Qwen: layer i is sparse when (i + 1) % step == 0 */
    /* GptOssMLP: router Linear(h, experts) with bias; experts' gate_up and
     * down projections with biases (modeling_gpt_oss.py) */
    if (!strcmp(r->type, "gpt_oss"))
        m->router_bias = m->mlp_bias = true;
    if (!strcmp(r->type, "qwen2_moe")) {
        if ((rc = mm_hf_int(r, "shared_expert_intermediate_size", 1, WIDTH_MAX, &m->shared_ffn, NULL)))
            return rc;
        m->shared_gate = true;
    }
    mm_node *only = mm_node_get(r->map, "mlp_only_layers");
    if (only && !mm_node_is_null(only) && (!mm_node_is_sequence(only) || mm_node_count(only) > 0))
        return mm_hf_fail(r, "mlp_only_layers", "dense layers chosen by list are not modeled (only "
                          "decoder_sparse_step); leave it empty");
    if (m->experts_per_tok > m->experts)
        return mm_hf_fail(r, "num_experts_per_tok", "%lld experts per token exceed the %lld experts",
                          (long long)m->experts_per_tok, (long long)m->experts);
    return 0;
}

/* DeepSeek-V2/V3: multi-head latent attention and DeepSeekMoE
 * (configuration_deepseek_v2/v3.py; modeling: q_a_proj, q_a_layernorm,
 * q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; a gate
 * over n_routed_experts, shared_experts of n_shared x moe width). */
static int read_deepseek_moe(const mm_hf *r, mm_llm *m);
static int read_llama4(const mm_hf *r, mm_llm *m);

static int read_mla(const mm_hf *r, mm_llm *m)
{
    int rc;
    m->q_lora = 0;
    if ((rc = mm_hf_int(r, "q_lora_rank", 1, WIDTH_MAX, &m->q_lora, NULL)) ||
        (rc = mm_hf_need_int(r, "kv_lora_rank", 1, WIDTH_MAX, &m->kv_lora)) ||
        (rc = mm_hf_need_int(r, "qk_nope_head_dim", 0, WIDTH_MAX, &m->qk_nope)) ||
        (rc = mm_hf_need_int(r, "qk_rope_head_dim", 1, WIDTH_MAX, &m->qk_rope)) ||
        (rc = mm_hf_need_int(r, "v_head_dim", 1, WIDTH_MAX, &m->v_dim)))
        return rc;
    /* q_lora_rank null (DeepSeek-V2-Lite): a plain q_proj, q_lora stays 0 */
    m->head_dim = m->qk_nope + m->qk_rope;
    return read_deepseek_moe(r, m);
}

/* DeepSeekMoE (DeepSeek-MoE's `deepseek` and V2/V3): routed experts of
 * moe_intermediate_size, n_shared_experts always-on ones, dense first
 * first_k_dense_replace blocks, then every moe_layer_freq-th. */
static int read_deepseek_moe(const mm_hf *r, mm_llm *m)
{
    int rc;
    bool fe = false;
    if ((rc = mm_hf_int(r, "n_routed_experts", 1, EXPERTS_MAX, &m->experts, &fe)))
        return rc;
    if (!fe)
        return 0;
    int64_t shared = 0;
    char method[32] = "";
    m->moe_every = 1;
    if ((rc = mm_hf_need_int(r, "num_experts_per_tok", 1, EXPERTS_MAX, &m->experts_per_tok)) ||
        (rc = mm_hf_need_int(r, "moe_intermediate_size", 1, WIDTH_MAX, &m->moe_ffn)) ||
        (rc = mm_hf_int(r, "n_shared_experts", 0, EXPERTS_MAX, &shared, NULL)) ||
        (rc = mm_hf_int(r, "first_k_dense_replace", 0, LAYERS_MAX, &m->first_dense, NULL)) ||
        (rc = mm_hf_int(r, "moe_layer_freq", 1, LAYERS_MAX, &m->moe_every, NULL)) ||
        (rc = mm_hf_int(r, "num_nextn_predict_layers", 0, 64, &m->mtp_layers, NULL)) ||
        (rc = mm_hf_str(r, "topk_method", method, sizeof method)))
        return rc;
    m->shared_ffn = shared * m->moe_ffn;
    m->router_bias = !strcmp(method, "noaux_tc"); /* gate.e_score_correction_bias */
    if (m->experts_per_tok > m->experts)
        return mm_hf_fail(r, "num_experts_per_tok", "%lld experts per token exceed the %lld experts",
                          (long long)m->experts_per_tok, (long long)m->experts);
    return 0;
}

/* Keys read by the Llama-family reader, and the ones known to be costless
 * per family (beyond hf.c's generic list). */
static const char *const llama_read[] = {
    "num_key_value_heads", "head_dim", "hidden_act", "hidden_activation", "attention_bias", "mlp_bias",
    "tie_word_embeddings", "num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
    "decoder_sparse_step", "shared_expert_intermediate_size", "mlp_only_layers", "sliding_window",
    "use_sliding_window", "attn_logit_softcapping", "final_logit_softcapping", "bias", "q_lora_rank",
    "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts",
    "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "num_nextn_predict_layers", "topk_method",
    "qkv_bias", "layer_types", NULL,
};
/* max_window_layers: only with use_sliding_window; query_pre_attn_scalar:
 * a scale; n_group/topk_group/scoring_func/routed_scaling_factor: routing
 * details (which experts, not how many); partial rotary: RoPE is costed as
 * an element-wise pass either way. */
static const char *const llama_costless[] = {
    "max_window_layers", "query_pre_attn_scalar", "cache_implementation", "n_group", "topk_group",
    "scoring_func", "routed_scaling_factor", "partial_rotary_factor", "rotary_pct", "rotary_emb_base",
    "rope_interleave", "moe_router_topk",
    "sliding_window_size", /* early Gemma 2 configs: a copy of sliding_window */
    NULL,
};

#define PERIOD_MAX 64

static bool is_null_key(const mm_hf *r, const char *key)
{
    mm_node *n = mm_node_get(r->map, key);
    return n && mm_node_is_null(n);
}

/* layer_types (transformers >= 4.54 writes it out) is the pattern itself:
 * one "sliding_attention" or "full_attention" per layer, read as the
 * shortest period (at most 64 layers) it repeats with.  A list of another
 * length, another attention kind, or no repeat within 64 layers is refused
 * (per-layer patterns beyond that are not modeled). */
static int read_layer_types(const mm_hf *r, const mm_llm *m, int *period, uint64_t *mask, bool *given)
{
    mm_node *lt = mm_node_get(r->map, "layer_types");
    *given = false;
    if (!lt || mm_node_is_null(lt))
        return 0;
    if (!mm_node_is_sequence(lt))
        return mm_hf_fail(r, "layer_types", "expected a list of attention types");
    int n = mm_node_count(lt);
    if (n != m->layers)
        return mm_hf_fail(r, "layer_types", "%d entries for %lld layers", n, (long long)m->layers);
    for (int p = 1; p <= PERIOD_MAX && p <= n; p++) {
        uint64_t mk = 0;
        bool ok = true;
        for (int i = 0; i < n && ok; i++) {
            const char *t = mm_node_scalar(mm_node_item(lt, i), NULL);
            bool sl = t && !strcmp(t, "sliding_attention");
            if (!t || (!sl && strcmp(t, "full_attention")))
                return mm_hf_fail(r, "layer_types", "entry %d is '%s': only sliding_attention and "
                                  "full_attention are modeled", i, t ? t : "?");
            if (i < p)
                mk |= (uint64_t)sl << i;
            else
                ok = ((mk >> (i % p)) & 1u) == sl;
        }
        if (ok) {
            *period = p, *mask = mk, *given = true;
            return 0;
        }
    }
    return mm_hf_fail(r, "layer_types", "the pattern does not repeat within %d layers: per-layer attention "
                      "patterns are not modeled", PERIOD_MAX);
}

/* Sliding windows: Mistral/Mixtral/Phi-3/Starcoder2 apply sliding_window on
 * every layer when set; Gemma 2 and gpt-oss on even layers; Gemma 3 on all
 * but every sliding_window_pattern-th (Gemma3TextConfig: 6); Qwen2/3 only
 * with use_sliding_window, which is refused (its max_window_layers split is
 * not modeled).  layer_types, when written out, is the pattern. */
static int read_window(const mm_hf *r, mm_llm *m)
{
    int rc, period = 1;
    uint64_t mask = 1;
    bool use = false, given = false;
    if (!strcmp(r->type, "llama4_text"))
        return 0; /* chunked attention: read_llama4 */
    if ((rc = mm_hf_bool(r, "use_sliding_window", &use)) || (rc = read_layer_types(r, m, &period, &mask, &given)))
        return rc;
    if (mm_hf_in(r->type, (const char *const[]){"qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen2_vl_text",
                                               "qwen2_5_vl_text", "qwen3_vl_text", NULL})) {
        if (use)
            return mm_hf_fail(r, "use_sliding_window", "sliding-window attention on the layers past "
                              "max_window_layers is not modeled");
        if (given && mask)
            return mm_hf_fail(r, "layer_types", "sliding layers without use_sliding_window: per-layer "
                              "attention patterns are not modeled for model_type '%s'", r->type);
        return 0; /* sliding_window is read only when use_sliding_window */
    }
    if ((rc = mm_hf_int(r, "sliding_window", 1, POS_MAX, &m->window, NULL)))
        return rc;
    if (!given) {
        if (!strcmp(r->type, "gemma2") || !strcmp(r->type, "gpt_oss"))
            period = 2, mask = 1; /* layers 0, 2, 4, ... */
        if (!strcmp(r->type, "gemma3_text")) {
            int64_t pat = 6;
            if ((rc = mm_hf_int(r, "sliding_window_pattern", 1, PERIOD_MAX, &pat, NULL)))
                return rc;
            period = (int)pat; /* layer i global when (i + 1) % pattern == 0 */
            mask = (pat >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << pat) - 1) >> 1;
            if (pat == 1)
                mask = 0;
        }
    }
    if (m->window == 0 && given && mask)
        return mm_hf_fail(r, "layer_types", "sliding layers without a sliding_window");
    m->window_period = m->window > 0 ? period : 0;
    m->window_mask = m->window > 0 ? mask : 0;
    return 0;
}

/* Llama 4's RoPE layers, the chunked ones: no_rope_layers (1: RoPE) when
 * the file lists it, as its shortest period (at most 64 layers); else
 * Llama4TextConfig's default, all but every no_rope_layer_interval-th.
 * layer_types, when written out, must say the same (chunked_attention on
 * exactly those layers).  A part of read_llama4. */
static int llama4_rope_layers(const mm_hf *r, const mm_llm *m, int *period, uint64_t *mask)
{
    int rc;
    int64_t every = 4;
    if ((rc = mm_hf_int(r, "no_rope_layer_interval", 1, PERIOD_MAX, &every, NULL)))
        return rc;
    *period = (int)every;
    *mask = ((every >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << every) - 1) >> 1); /* layer i NoPE when (i+1) % every == 0 */
    mm_node *nr = mm_node_get(r->map, "no_rope_layers"), *lt = mm_node_get(r->map, "layer_types");
    int n = nr && mm_node_is_sequence(nr) ? mm_node_count(nr) : 0; /* [] and null: the default */
    if (nr && !mm_node_is_null(nr) && !mm_node_is_sequence(nr))
        return mm_hf_fail(r, "no_rope_layers", "expected a list of 0 (NoPE) and 1 (RoPE), one per layer");
    if (n > 0 && n != m->layers)
        return mm_hf_fail(r, "no_rope_layers", "%d entries for %lld layers", n, (long long)m->layers);
    for (int p = 1; n > 0 && p <= PERIOD_MAX; p++) {
        bool ok = true;
        uint64_t mk = 0;
        for (int i = 0; i < n && ok; i++) {
            const char *t = mm_node_scalar(mm_node_item(nr, i), NULL);
            if (!t || (strcmp(t, "0") && strcmp(t, "1")))
                return mm_hf_fail(r, "no_rope_layers", "entry %d is not 0 or 1", i);
            bool rope = t[0] == '1';
            if (i < p)
                mk |= (uint64_t)rope << i;
            else
                ok = ((mk >> (i % p)) & 1u) == rope;
        }
        if (ok) {
            *period = p, *mask = mk;
            break;
        }
        if (p == PERIOD_MAX)
            return mm_hf_fail(r, "no_rope_layers", "the pattern does not repeat within %d layers", PERIOD_MAX);
    }
    for (int i = 0; lt && mm_node_is_sequence(lt) && i < mm_node_count(lt); i++) {
        const char *t = mm_node_scalar(mm_node_item(lt, i), NULL);
        bool chunked = (*mask >> (i % *period)) & 1u;
        if (!t || strcmp(t, chunked ? "chunked_attention" : "full_attention") || mm_node_count(lt) != m->layers)
            return mm_hf_fail(r, "layer_types", "entry %d is not '%s' as the RoPE layers say (per-layer patterns "
                              "beyond those are not modeled)", i, chunked ? "chunked_attention" : "full_attention");
    }
    return 0;
}

/* Llama 4's text model (Llama4TextConfig; modeling_llama4.py at
 * huggingface/transformers @ 63210d0): MoE blocks (Llama4TextMoe: a router
 * Linear(h, E) without bias, E experts of width intermediate_size, top-k,
 * and a shared expert of that width) at moe_layers, by default every
 * interleave_moe_layer_step-th (step - 1, 2 step - 1, ...); dense blocks of
 * width intermediate_size_mlp between; chunked attention
 * (attention_chunk_size; null: none) on the RoPE layers, full attention on
 * the NoPE ones.  A part of read_llama. */
static int read_llama4(const mm_hf *r, mm_llm *m)
{
    int rc;
    int64_t step = 1, fmlp = 0, chunk = 0;
    bool fc = false;
    if ((rc = mm_hf_int(r, "interleave_moe_layer_step", 1, LAYERS_MAX, &step, NULL)) ||
        (rc = mm_hf_need_int(r, "intermediate_size_mlp", 1, WIDTH_MAX, &fmlp)) ||
        (rc = mm_hf_int(r, "attention_chunk_size", 1, POS_MAX, &chunk, &fc)))
        return rc;
    m->moe_ffn = m->shared_ffn = m->ffn; /* routed and shared experts: intermediate_size */
    m->ffn = fmlp;
    m->moe_every = step, m->moe_offset = 1, m->first_dense = 0;
    mm_node *ml = mm_node_get(r->map, "moe_layers");
    if (ml && !mm_node_is_null(ml)) { /* must be the interleaving's own list */
        int n = mm_node_is_sequence(ml) ? mm_node_count(ml) : -1;
        bool ok = n == (int)mm_llm_moe_layers(m);
        for (int i = 0; ok && i < n; i++) {
            const char *t = mm_node_scalar(mm_node_item(ml, i), NULL);
            ok = t && strtoll(t, NULL, 10) == (long long)(step - 1 + (int64_t)i * step);
        }
        if (!ok)
            return mm_hf_fail(r, "moe_layers", "only every interleave_moe_layer_step-th layer (%lld) as MoE is "
                              "modeled", (long long)step);
    }
    int period = 1;
    uint64_t mask = 0;
    if ((rc = llama4_rope_layers(r, m, &period, &mask)))
        return rc;
    m->window = fc ? chunk : 0;
    m->chunked = fc;
    m->window_period = fc ? period : 0;
    m->window_mask = fc ? mask : 0;
    return 0;
}

/* MllamaTextModel (modeling_mllama.py @ befb795): the blocks listed in
 * cross_attention_layers (MllamaTextConfig's default [3, 8, ..., 38]) are
 * cross-attention blocks; embed_tokens holds vocab_size + 8 rows.  How many
 * image states those blocks attend is the vision tower's (the composite
 * reader sets cross_tokens). */
static int read_mllama_text(const mm_hf *r, mm_llm *m)
{
    static const int64_t defaults[] = {3, 8, 13, 18, 23, 28, 33, 38};
    memset(m->cross_mask, 0, sizeof m->cross_mask);
    m->embed_extra = 8;
    if (m->layers > MM_LLM_CROSS_MAX)
        return mm_hf_fail(r, "num_hidden_layers", "%lld blocks: cross-attention patterns of more than %d blocks "
                          "are not modeled", (long long)m->layers, MM_LLM_CROSS_MAX);
    mm_node *xl = mm_node_get(r->map, "cross_attention_layers");
    int n = xl && !mm_node_is_null(xl) ? (mm_node_is_sequence(xl) ? mm_node_count(xl) : -1) : -2;
    if (n == -1)
        return mm_hf_fail(r, "cross_attention_layers", "expected a list of block indices");
    int count = n == -2 ? (int)(sizeof defaults / sizeof defaults[0]) : n;
    char kp[160];
    mm_hf_key(r, "cross_attention_layers", kp, sizeof kp);
    for (int i = 0; i < count; i++) {
        int64_t v = defaults[i < 8 ? i : 7];
        if (n >= 0) {
            int rc = mm_node_as_int(r->doc, mm_node_item(xl, i), kp, 0, LAYERS_MAX, &v, r->err);
            if (rc)
                return rc;
        }
        if (v >= m->layers)
            return mm_hf_fail(r, "cross_attention_layers", "block %lld is past the last of %lld blocks", (long long)v,
                              (long long)m->layers);
        if (mm_llm_layer_is_cross(m, v))
            return mm_hf_fail(r, "cross_attention_layers", "block %lld is listed twice", (long long)v);
        m->cross_mask[v / 64] |= UINT64_C(1) << (v % 64);
    }
    if (mm_llm_cross_layers(m) == m->layers)
        return mm_hf_fail(r, "cross_attention_layers", "every block is a cross-attention block (no self-attention "
                          "left to read the text)");
    return 0;
}

static int read_neox_tail(const mm_hf *r, mm_llm *m);

static const char *const plain_mlp[] = {"starcoder2", "phi", "nemotron", NULL};

/* Keys only one family reads (beside llama_read's). */
typedef struct family_keys {
    const char *type;
    const char *const *keys;
} family_keys;

static const family_keys family_read[] = {
    {"gemma3_text", (const char *const[]){"sliding_window_pattern", NULL}},
    {"cohere", (const char *const[]){"use_qk_norm", NULL}},
    {"starcoder2", (const char *const[]){"use_bias", "norm_type", "mlp_type", NULL}},
    {"phi", (const char *const[]){"qk_layernorm", NULL}},
    {"stablelm", (const char *const[]){"use_qkv_bias", "qk_layernorm", "use_parallel_residual", NULL}},
    {"phi3", (const char *const[]){"lm_head_bias", NULL}},
    /* Phi-3-vision's image keys, read by mllm_read.c */
    {"phi3_v", (const char *const[]){"embd_layer", "img_processor", NULL}},
    /* Llama 4 (read_llama4); attn_temperature_tuning, floor_scale and
     * attn_scale scale the NoPE layers' queries (element-wise), use_qk_norm
     * is a weightless L2 norm on q and k (element-wise, not timed) */
    {"llama4_text", (const char *const[]){"intermediate_size_mlp", "interleave_moe_layer_step", "moe_layers",
                                          "no_rope_layers", "no_rope_layer_interval", "attention_chunk_size",
                                          "use_qk_norm", "attn_temperature_tuning", "floor_scale", "attn_scale",
                                          NULL}},
    /* Mllama's text model (read_mllama_text) */
    {"mllama_text_model", (const char *const[]){"cross_attention_layers", NULL}},
    {NULL, NULL},
};

/* llama_costless plus the family's own keys, into `out` (NULL-terminated;
 * 64 entries hold both lists with room to spare). */
static void accepted_keys(const char *type, const char **out, int cap)
{
    int n = 0;
    for (const char *const *k = llama_costless; *k && n < cap - 1; k++)
        out[n++] = *k;
    for (const family_keys *f = family_read; f->type; f++)
        if (!strcmp(f->type, type))
            for (const char *const *k = f->keys; *k && n < cap - 1; k++)
                out[n++] = *k;
    out[n] = NULL;
}

/* What each family adds to the Llama block (modeling_<type>.py of
 * transformers at MM_HF_TRANSFORMERS_VERSION; DeepSeek-MoE and MiniCPM from
 * their model repositories' modeling files). */
static int read_family(const mm_hf *r, mm_llm *m)
{
    int rc;
    const char *t = r->type;
    if (!strcmp(t, "qwen3") || !strcmp(t, "qwen3_moe") || !strcmp(t, "qwen3_vl_text"))
        m->qk_norm = true; /* q_norm, k_norm: RMSNorm(head_dim) (Qwen3VLTextAttention's too) */
    if (!strcmp(t, "olmo2")) /* q_norm over a*d, k_norm over g*d; norms after attention and MLP */
        m->qk_norm = m->qk_norm_full = true;
    if (!strcmp(t, "cohere")) { /* CohereDecoderLayer: one input_layernorm, attention + MLP in parallel */
        bool qk = false;
        if ((rc = mm_hf_bool(r, "use_qk_norm", &qk)))
            return rc;
        m->parallel_block = true;
        m->qk_norm = m->qk_norm_full = qk; /* CohereLayerNorm over (heads, head_dim) */
    }
    if (!strcmp(t, "starcoder2")) { /* use_bias on every Linear; LayerNorm; c_fc, act, c_proj */
        bool ub = true;
        char norm[32] = "layer_norm", mlp[32] = "default";
        if ((rc = mm_hf_bool(r, "use_bias", &ub)) || (rc = mm_hf_str(r, "norm_type", norm, sizeof norm)) ||
            (rc = mm_hf_str(r, "mlp_type", mlp, sizeof mlp)))
            return rc;
        if (strcmp(norm, "layer_norm"))
            return mm_hf_fail(r, "norm_type", "'%s' is not modeled (Starcoder2 uses layer_norm)", norm);
        if (strcmp(mlp, "default"))
            return mm_hf_fail(r, "mlp_type", "'%s' is not modeled (Starcoder2's default MLP)", mlp);
        m->qkv_bias = m->out_bias = m->mlp_bias = ub;
    }
    if (!strcmp(t, "phi")) { /* PhiDecoderLayer: input_layernorm, attention and MLP in parallel */
        bool qk = false;
        if ((rc = mm_hf_bool(r, "qk_layernorm", &qk)))
            return rc;
        m->parallel_block = m->head_bias = true; /* lm_head bias=True */
        m->qkv_bias = m->out_bias = m->mlp_bias = true;
        m->qk_norm = m->qk_norm_bias = qk; /* LayerNorm(hidden / heads) on q and k, shared by heads */
    }
    if (!strcmp(t, "stablelm")) {
        bool qb = false, qk = false, par = false;
        if ((rc = mm_hf_bool(r, "use_qkv_bias", &qb)) || (rc = mm_hf_bool(r, "qk_layernorm", &qk)) ||
            (rc = mm_hf_bool(r, "use_parallel_residual", &par)))
            return rc;
        m->qkv_bias = qb;
        m->qk_norm = m->qk_norm_full = qk; /* StableLmLayerNormPerHead, bias=False */
        m->parallel_block = par;
    }
    if ((!strcmp(t, "phi3") || !strcmp(t, "phi3_v")) && (rc = mm_hf_bool(r, "lm_head_bias", &m->head_bias)))
        return rc;
    if (!strcmp(t, "gpt_oss"))
        m->attn_sinks = true; /* GptOssAttention.sinks: one logit per head */
    if (!strcmp(t, "deepseek") && mm_hf_has(r, "kv_lora_rank"))
        return mm_hf_fail(r, "kv_lora_rank", "model_type 'deepseek' (DeepSeek-MoE) has no latent attention; "
                          "say deepseek_v2 or deepseek_v3");
    if (!strcmp(t, "gemma2") || !strcmp(t, "gemma3_text")) {
        bool g3 = !strcmp(t, "gemma3_text");
        m->sandwich_norm = true;
        m->qk_norm = g3; /* Gemma3Attention q_norm, k_norm over head_dim */
        /* Gemma2Config caps at 50 and 30; Gemma3TextConfig's are None */
        m->attn_softcap = g3 ? 0.0 : 50.0, m->final_softcap = g3 ? 0.0 : 30.0;
        if ((rc = mm_hf_double(r, "attn_logit_softcapping", 0, 1e9, &m->attn_softcap)) ||
            (rc = mm_hf_double(r, "final_logit_softcapping", 0, 1e9, &m->final_softcap)))
            return rc;
        if (is_null_key(r, "attn_logit_softcapping"))
            m->attn_softcap = 0.0;
        if (is_null_key(r, "final_logit_softcapping"))
            m->final_softcap = 0.0;
    }
    return 0;
}

/* Llama/Mistral/Qwen/Gemma/Phi-3/InternLM2 keys (configuration_llama.py and
 * relatives), GPT-NeoX (shares the size keys) and DeepSeek's. */
static int read_llama(const mm_hf *r, mm_llm *m)
{
    int rc;
    bool neox = m->style == MM_LLM_NEOX;
    static const char *const neox_read[] = {"attention_bias", "tie_word_embeddings", "hidden_act", NULL};
    const char *accept[64];
    accepted_keys(r->type, accept, 64);
    if ((rc = mm_hf_check_keys(r, neox ? neox_read : llama_read, accept)) ||
        (rc = mm_hf_need_int(r, "hidden_size", 1, WIDTH_MAX, &m->hidden)) ||
        (rc = mm_hf_need_int(r, "num_hidden_layers", 1, LAYERS_MAX, &m->layers)) ||
        (rc = mm_hf_need_int(r, "num_attention_heads", 1, WIDTH_MAX, &m->heads)) ||
        (rc = mm_hf_need_int(r, "intermediate_size", 1, WIDTH_MAX, &m->ffn)) ||
        (rc = mm_hf_need_int(r, "vocab_size", 1, VOCAB_MAX, &m->vocab)))
        return rc;
    m->kv_heads = m->heads; /* absent and no class default -> MHA */
    m->head_dim = 0;
    m->max_pos = 0;
    if ((!neox && (rc = mm_hf_int(r, "num_key_value_heads", 1, WIDTH_MAX, &m->kv_heads, NULL))) ||
        (rc = mm_hf_int(r, "head_dim", 1, WIDTH_MAX, &m->head_dim, NULL)) ||
        (rc = mm_hf_int(r, "max_position_embeddings", 1, POS_MAX, &m->max_pos, NULL)))
        return rc;
    if (m->head_dim > 0 && m->heads * m->head_dim > WIDTH_MAX)
        return mm_hf_fail(r, "head_dim", "heads x head_dim = %lld exceeds %lld",
                          (long long)(m->heads * m->head_dim), (long long)WIDTH_MAX);
    /* hidden_act, and Gemma 2's hidden_activation (its MLP's; published
     * configs carry both): every name given must be one mmsim knows; the
     * MLP's shape does not depend on which (Llama-family MLPs are gated). */
    static const char *const act_keys[] = {"hidden_act", "hidden_activation"};
    for (int k = 0; k < 2; k++) {
        char act[64] = "";
        if ((rc = mm_hf_str(r, act_keys[k], act, sizeof act)) || (act[0] && (rc = mm_hf_act(r, act_keys[k], act))))
            return rc;
    }
    m->rope = true;
    if (neox)
        return read_neox_tail(r, m);
    /* Llama-family blocks are gated MLPs (gate, up, down) whatever the
     * activation's name (SwiGLU for silu, GeGLU for Gemma's gelu);
     * Starcoder2 (c_fc, c_proj), Phi-2 (fc1, fc2) and Nemotron (up_proj,
     * squared ReLU, down_proj) have plain two-matrix MLPs.  Cohere, Phi-2,
     * StableLM, Starcoder2 and Nemotron use LayerNorm (Nemotron's
     * LayerNorm1P and Starcoder2's with bias, Cohere's without). */
    m->gated_mlp = !mm_hf_in(r->type, plain_mlp);
    m->rmsnorm = !mm_hf_in(r->type, (const char *const[]){"cohere", "starcoder2", "phi", "stablelm", "nemotron",
                                                          NULL});
    m->norm_no_bias = !strcmp(r->type, "cohere"); /* CohereLayerNorm: weight only */
    bool ab = false, mb = false;
    if ((rc = mm_hf_bool(r, "attention_bias", &ab)) || (rc = mm_hf_bool(r, "mlp_bias", &mb)) ||
        (rc = mm_hf_bool(r, "tie_word_embeddings", &m->tied)))
        return rc;
    /* Qwen2Attention hard-codes bias=True on q, k, v (modeling_qwen2.py), in
     * every Qwen2-derived family; InternLM2's `bias` covers wqkv and wo. */
    m->qkv_bias = ab || mm_hf_in(r->type, qwen2_types);
    m->out_bias = ab;
    m->mlp_bias = mb;
    if (!strcmp(r->type, "qwen2_moe") && (rc = mm_hf_bool(r, "qkv_bias", &m->qkv_bias)))
        return rc; /* Qwen2MoeConfig qkv_bias, default True */
    if (!strcmp(r->type, "internlm2")) {
        bool b = true;
        if ((rc = mm_hf_bool(r, "bias", &b)))
            return rc;
        m->qkv_bias = m->out_bias = b;
    }
    if ((rc = read_family(r, m)) || (rc = read_window(r, m)))
        return rc;
    if (m->style == MM_LLM_MLA)
        return read_mla(r, m);
    if (!strcmp(r->type, "deepseek"))
        return read_deepseek_moe(r, m);
    if ((rc = read_moe(r, m)))
        return rc;
    if (!strcmp(r->type, "mllama_text_model"))
        return read_mllama_text(r, m);
    return !strcmp(r->type, "llama4_text") ? read_llama4(r, m) : 0;
}

/* GPT-NeoX's keys (GPTNeoXConfig): Llama's sizes, GPT-like blocks. */
static int read_neox_tail(const mm_hf *r, mm_llm *m)
{
    bool ab = true; /* GPTNeoXConfig: attention_bias True; MLP always biased */
    int rc = mm_hf_bool(r, "attention_bias", &ab);
    if (rc)
        return rc;
    m->qkv_bias = m->out_bias = ab;
    m->mlp_bias = true;
    return mm_hf_bool(r, "tie_word_embeddings", &m->tied);
}

/* MptConfig (configuration_mpt.py; modeling_mpt.py): d_model, n_heads,
 * n_layers, expansion_ratio x d_model MLP (up_proj, GELU, down_proj), a
 * fused Wqkv and out_proj, LayerNorms, biases off with no_bias, ALiBi (no
 * position table), the LM head tied to wte.  attn_config's keys: alibi
 * must be on (transformers' MPT has no other positions); qk_ln adds
 * LayerNorms over q and k; the rest is numerics. */
static int read_mpt(const mm_hf *r, mm_llm *m)
{
    int rc;
    static const char *const read[] = {"d_model", "n_heads", "n_layers", "expansion_ratio", "max_seq_len",
                                       "vocab_size", "no_bias", "norm_type", "attn_config", "ffn_config", NULL};
    int64_t ratio = 4;
    bool nobias = true;
    char norm[48] = "low_precision_layernorm";
    if ((rc = mm_hf_check_keys(r, read, NULL)) || (rc = mm_hf_need_int(r, "d_model", 1, WIDTH_MAX, &m->hidden)) ||
        (rc = mm_hf_need_int(r, "n_layers", 1, LAYERS_MAX, &m->layers)) ||
        (rc = mm_hf_need_int(r, "n_heads", 1, WIDTH_MAX, &m->heads)) ||
        (rc = mm_hf_need_int(r, "vocab_size", 1, VOCAB_MAX, &m->vocab)) ||
        (rc = mm_hf_int(r, "expansion_ratio", 1, 64, &ratio, NULL)) ||
        (rc = mm_hf_int(r, "max_seq_len", 1, POS_MAX, &m->max_pos, NULL)) ||
        (rc = mm_hf_bool(r, "no_bias", &nobias)) || (rc = mm_hf_str(r, "norm_type", norm, sizeof norm)))
        return rc;
    if (strcmp(norm, "low_precision_layernorm") && strcmp(norm, "layernorm"))
        return mm_hf_fail(r, "norm_type", "unknown norm '%s' (low_precision_layernorm, layernorm)", norm);
    mm_node *fc = mm_node_get(r->map, "ffn_config");
    if (fc && !mm_node_is_null(fc) && mm_node_is_mapping(fc) && mm_node_count(fc) > 0)
        return mm_hf_fail(r, "ffn_config", "MPT's alternative MLPs (ffn_config) are not modeled");
    mm_node *ac = mm_node_get(r->map, "attn_config");
    if (ac && !mm_node_is_null(ac)) {
        char kp[160];
        mm_hf_key(r, "attn_config", kp, sizeof kp);
        mm_hf a = {r->doc, ac, kp, "mpt_attn", r->err};
        static const char *const aread[] = {"alibi", "qk_ln", NULL};
        static const char *const acostless[] = {"attn_type", "attn_pdrop", "attn_impl", "clip_qkv", "softmax_scale",
                                                "prefix_lm", "attn_uses_sequence_id", "alibi_bias_max", "rope",
                                                "sliding_window_size", NULL};
        bool alibi = true, qkln = false;
        char at[32] = "multihead_attention";
        if (!mm_node_is_mapping(ac))
            return mm_hf_fail(r, "attn_config", "expected a mapping");
        if ((rc = mm_hf_check_keys(&a, aread, acostless)) || (rc = mm_hf_bool(&a, "alibi", &alibi)) ||
            (rc = mm_hf_bool(&a, "qk_ln", &qkln)) || (rc = mm_hf_str(&a, "attn_type", at, sizeof at)))
            return rc;
        if (!alibi)
            return mm_hf_fail(&a, "alibi", "MPT without ALiBi is not modeled (transformers' MPT has no other "
                              "position encoding)");
        if (strcmp(at, "multihead_attention"))
            return mm_hf_fail(&a, "attn_type", "'%s' is not modeled (multihead_attention)", at);
        /* qk_ln: LayerNorm(d_model) on q and on k, with bias unless no_bias */
        m->qk_norm = m->qk_norm_full = qkln;
        m->qk_norm_bias = qkln && !nobias;
    }
    m->ffn = ratio * m->hidden;
    m->kv_heads = m->heads;
    m->tied = true;
    m->rmsnorm = false;
    m->norm_no_bias = nobias;
    m->qkv_bias = m->out_bias = m->mlp_bias = !nobias;
    return 0;
}

int mm_llm_from_node_typed(const mm_doc *doc, mm_node *map, const char *prefix, const char *type,
                           mm_llm *m, mm_err *err)
{
    memset(m, 0, sizeof *m);
    mm_hf r = {doc, map, prefix ? prefix : "", NULL, err};
    int rc;
    if (!map || !mm_node_is_mapping(map))
        return mm_err_set(err, MM_EINPUT, doc->path, mm_node_line(map), r.prefix,
                          "expected a mapping of config.json keys");
    if ((rc = mm_hf_str(&r, "model_type", m->model_type, sizeof m->model_type)) ||
        (rc = mm_llm_check_architectures(doc, map, r.prefix, err)))
        return rc;
    if (type)
        snprintf(m->model_type, sizeof m->model_type, "%s", type);
    else if (!m->model_type[0] && mm_node_get(map, "n_embd"))
        snprintf(m->model_type, sizeof m->model_type, "gpt2");
    r.type = m->model_type;
    if (!strcmp(m->model_type, "gpt2"))
        m->style = MM_LLM_GPT2;
    else if (!strcmp(m->model_type, "gpt_neox"))
        m->style = MM_LLM_NEOX;
    else if (!strcmp(m->model_type, "mpt"))
        m->style = MM_LLM_MPT;
    else if (!strcmp(m->model_type, "deepseek_v2") || !strcmp(m->model_type, "deepseek_v3"))
        m->style = MM_LLM_MLA;
    else if (mm_hf_in(m->model_type, llama_family))
        m->style = MM_LLM_LLAMA;
    else
        return mm_hf_fail(&r, "model_type", "unknown model_type '%s' (mmsim models gpt2, gpt_neox, mpt, llama, "
                          "mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3_text, phi, "
                          "phi3, internlm2, olmo2, cohere, starcoder2, stablelm, nemotron, minicpm, deepseek, "
                          "deepseek_v2, deepseek_v3, gpt_oss and the multimodal types of docs/models.md)",
                          m->model_type[0] ? m->model_type : "(none)");
    rc = m->style == MM_LLM_GPT2 ? read_gpt2(&r, m) : m->style == MM_LLM_MPT ? read_mpt(&r, m) : read_llama(&r, m);
    if (rc)
        return rc;
    if (m->style == MM_LLM_GPT2 && (rc = mm_hf_bool(&r, "tie_word_embeddings", &m->tied)))
        return rc;
    if (m->head_dim == 0) {
        const char *key = m->style == MM_LLM_GPT2 ? "n_head" : m->style == MM_LLM_MPT ? "n_heads" : "num_attention_heads";
        if (m->hidden % m->heads != 0)
            return mm_hf_fail(&r, key, "%lld heads do not divide the hidden size %lld (give head_dim to "
                              "decouple them)", (long long)m->heads, (long long)m->hidden);
        m->head_dim = m->hidden / m->heads;
    }
    if (m->style == MM_LLM_MLA)
        m->kv_heads = m->heads; /* MLA: every head has its own k and v from the latent */
    if (m->heads % m->kv_heads != 0)
        return mm_hf_fail(&r, "num_key_value_heads", "%lld key/value heads do not divide the %lld attention heads",
                          (long long)m->kv_heads, (long long)m->heads);
    return 0;
}

int mm_llm_from_node(const mm_doc *doc, mm_node *map, const char *prefix, mm_llm *m, mm_err *err)
{
    int rc = mm_llm_from_node_typed(doc, map, prefix, NULL, m, err);
    if (rc == 0 && mm_llm_cross_layers(m) > 0) { /* an LLM alone: nothing to cross-attend */
        mm_hf r = {doc, map, prefix ? prefix : "", m->model_type, err};
        return mm_hf_fail(&r, "cross_attention_layers", "cross-attention blocks attend a vision tower's image "
                          "states: read the mllama composite (model_type mllama), not its text model alone");
    }
    return rc;
}

int mm_llm_load(const char *path, mm_llm *m, mm_err *err)
{
    mm_doc doc;
    memset(&doc, 0, sizeof doc);
    int rc = mm_doc_load_file(&doc, path, err);
    if (rc < 0)
        return rc;
    rc = mm_llm_from_node(&doc, mm_doc_root(&doc), "", m, err);
    mm_doc_free(&doc);
    if (rc < 0)
        return rc;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.'); /* "qwen2.5-7b.json": last dot only */
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (n >= sizeof m->name)
        n = sizeof m->name - 1;
    memcpy(m->name, base, n);
    m->name[n] = '\0';
    snprintf(m->source, sizeof m->source, "%s", path);
    return 0;
}
