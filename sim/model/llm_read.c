/* llm_read.c - reading a decoder-only LLM from a Hugging Face config.json
 * mapping: GPT-2, GPT-NeoX, the Llama family (Llama, Mistral, Mixtral,
 * Qwen2/2-MoE/3/3-MoE, Gemma/Gemma 2, Phi-3, InternLM2, the LLM half of
 * Qwen2-VL/2.5-VL) and DeepSeek-V2/V3 (MLA, fine-grained MoE).
 *
 * A key the file leaves out takes its transformers config class's default
 * (hf.c); an unknown model_type or architecture, an unknown hidden_act, or a
 * key mmsim does not model is refused by name (hf.h), never ignored.
 * Not for: costs (llm.c), encoders and composites (mllm.c). */
#include "model/llm.h"

#include <stdio.h>
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
                                           "qwen2_vl_text", "qwen2_5_vl_text", NULL};
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
    "Idefics3ForConditionalGeneration", "Qwen2_5_VLModel", NULL,
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
    const char *ek = mm_hf_in(r->type, (const char *const[]){"qwen2_moe", "qwen3_moe", NULL}) ? "num_experts"
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
static int read_mla(const mm_hf *r, mm_llm *m)
{
    int rc;
    bool fe = false;
    m->q_lora = 0;
    if ((rc = mm_hf_int(r, "q_lora_rank", 1, WIDTH_MAX, &m->q_lora, NULL)) ||
        (rc = mm_hf_need_int(r, "kv_lora_rank", 1, WIDTH_MAX, &m->kv_lora)) ||
        (rc = mm_hf_need_int(r, "qk_nope_head_dim", 0, WIDTH_MAX, &m->qk_nope)) ||
        (rc = mm_hf_need_int(r, "qk_rope_head_dim", 1, WIDTH_MAX, &m->qk_rope)) ||
        (rc = mm_hf_need_int(r, "v_head_dim", 1, WIDTH_MAX, &m->v_dim)))
        return rc;
    /* q_lora_rank null (DeepSeek-V2-Lite): a plain q_proj, q_lora stays 0 */
    m->head_dim = m->qk_nope + m->qk_rope;
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
    "use_parallel_residual", "rope_interleave", "moe_router_topk",
    "sliding_window_size", /* early Gemma 2 configs: a copy of sliding_window */
    NULL,
};

/* Sliding windows: Mistral/Mixtral/Phi-3 apply sliding_window on every
 * layer when set; Gemma 2 on even layers (layer_types' default); Qwen2/3
 * only with use_sliding_window, which is refused (its max_window_layers
 * split is not modeled). */
/* layer_types (transformers >= 4.54 writes it out): accepted when it says
 * what the model's own rule says (every layer "full_attention", or Gemma
 * 2's sliding even layers); any other per-layer pattern is refused. */
static int check_layer_types(const mm_hf *r, int every)
{
    mm_node *lt = mm_node_get(r->map, "layer_types");
    if (!lt || mm_node_is_null(lt))
        return 0;
    if (!mm_node_is_sequence(lt))
        return mm_hf_fail(r, "layer_types", "expected a list of attention types");
    int it = 0;
    mm_node *e;
    for (int i = 0; (e = mm_node_item(lt, it++)); i++) {
        const char *t = mm_node_scalar(e, NULL);
        bool sliding = every > 0 && i % every == 0;
        if (!t || strcmp(t, sliding ? "sliding_attention" : "full_attention"))
            return mm_hf_fail(r, "layer_types", "entry %d is '%s' where this model's rule gives '%s': "
                              "per-layer attention patterns are not modeled", i, t ? t : "?",
                              sliding ? "sliding_attention" : "full_attention");
    }
    return 0;
}

/* Sliding windows: Mistral/Mixtral/Phi-3 apply sliding_window on every
 * layer when set; Gemma 2 on even layers (layer_types' default); Qwen2/3
 * only with use_sliding_window, which is refused (its max_window_layers
 * split is not modeled). */
static int read_window(const mm_hf *r, mm_llm *m)
{
    int rc;
    bool use = false;
    if ((rc = mm_hf_bool(r, "use_sliding_window", &use)))
        return rc;
    if (mm_hf_in(r->type, (const char *const[]){"qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen2_vl_text",
                                               "qwen2_5_vl_text", NULL})) {
        if (use)
            return mm_hf_fail(r, "use_sliding_window", "sliding-window attention on the layers past "
                              "max_window_layers is not modeled");
        return check_layer_types(r, 0); /* sliding_window is read only when use_sliding_window */
    }
    m->window_every = !strcmp(r->type, "gemma2") ? 2 : 1;
    if ((rc = mm_hf_int(r, "sliding_window", 1, POS_MAX, &m->window, NULL)))
        return rc;
    if (m->window == 0)
        m->window_every = 0;
    return check_layer_types(r, m->window > 0 ? m->window_every : 0);
}

/* Llama/Mistral/Qwen/Gemma/Phi-3/InternLM2 keys (configuration_llama.py and
 * relatives), GPT-NeoX (shares the size keys) and DeepSeek's. */
static int read_llama(const mm_hf *r, mm_llm *m)
{
    int rc;
    bool neox = m->style == MM_LLM_NEOX;
    static const char *const neox_read[] = {"attention_bias", "tie_word_embeddings", "hidden_act", NULL};
    if ((rc = mm_hf_check_keys(r, neox ? neox_read : llama_read, llama_costless)) ||
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
    if (neox) {
        bool ab = true; /* GPTNeoXConfig: attention_bias True; MLP always biased */
        if ((rc = mm_hf_bool(r, "attention_bias", &ab)))
            return rc;
        m->qkv_bias = m->out_bias = ab;
        m->mlp_bias = true;
        return mm_hf_bool(r, "tie_word_embeddings", &m->tied);
    }
    /* Every Llama-family block is a gated MLP (gate, up, down), whatever the
     * activation's name (SwiGLU for silu, GeGLU for Gemma's gelu). */
    m->gated_mlp = m->rmsnorm = true;
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
    m->qk_norm = !strcmp(r->type, "qwen3") || !strcmp(r->type, "qwen3_moe");
    if (!strcmp(r->type, "gemma2")) {
        m->sandwich_norm = true;
        m->attn_softcap = 50.0, m->final_softcap = 30.0; /* Gemma2Config */
        if ((rc = mm_hf_double(r, "attn_logit_softcapping", 0, 1e9, &m->attn_softcap)) ||
            (rc = mm_hf_double(r, "final_logit_softcapping", 0, 1e9, &m->final_softcap)))
            return rc;
    }
    if ((rc = read_window(r, m)))
        return rc;
    if (m->style == MM_LLM_MLA)
        return read_mla(r, m);
    return read_moe(r, m);
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
    else if (!strcmp(m->model_type, "deepseek_v2") || !strcmp(m->model_type, "deepseek_v3"))
        m->style = MM_LLM_MLA;
    else if (mm_hf_in(m->model_type, llama_family))
        m->style = MM_LLM_LLAMA;
    else
        return mm_hf_fail(&r, "model_type", "unknown model_type '%s' (mmsim models gpt2, gpt_neox, llama, "
                          "mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, phi3, "
                          "internlm2, deepseek_v2, deepseek_v3 and the multimodal types of docs/models.md)",
                          m->model_type[0] ? m->model_type : "(none)");
    rc = m->style == MM_LLM_GPT2 ? read_gpt2(&r, m) : read_llama(&r, m);
    if (rc)
        return rc;
    if (m->style == MM_LLM_GPT2 && (rc = mm_hf_bool(&r, "tie_word_embeddings", &m->tied)))
        return rc;
    if (m->head_dim == 0) {
        const char *key = m->style == MM_LLM_GPT2 ? "n_head" : "num_attention_heads";
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
    return mm_llm_from_node_typed(doc, map, prefix, NULL, m, err);
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
