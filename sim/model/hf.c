/* hf.c - transformers' config-class defaults, the keys known to cost
 * nothing, and typed reads of a config.json mapping that fall back to those
 * defaults (hf.h).
 *
 * The defaults were read from the configuration_*.py files of
 * huggingface/transformers at MM_HF_TRANSFORMERS_VERSION (the dataclass
 * fields of LlamaConfig, MistralConfig, ...), and for the remote-code
 * classes from their model repositories' configuration files
 * (InternLM2Config: internlm/internlm2_5-7b-chat; InternVisionConfig:
 * OpenGVLab/InternViT-300M-448px-V2_5; DeepseekConfig:
 * deepseek-ai/deepseek-moe-16b-base; MiniCPMConfig: openbmb/MiniCPM-2B-sft-bf16;
 * Phi3VConfig: microsoft/Phi-3.5-vision-instruct).  Only the keys that size or shape
 * a model are listed; a key absent here and absent from the file is a
 * "missing required key" error.
 * Not for: deciding what a key means (the readers do). */
#include "model/hf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum { KI, KB, KS } kind;

/* What every refusal of unmodeled keys says (mm_hf_is_keys_error). */
#define KEYS_MARK "not modeled by mmsim for model_type"

typedef struct def_row {
    const char *type, *key;
    kind k;
    int64_t i;
    const char *s;
} def_row;

typedef struct class_row {
    const char *type, *cls;
} class_row;

static const class_row classes[] = {
    {"gpt2", "GPT2Config"}, {"gpt_neox", "GPTNeoXConfig"}, {"llama", "LlamaConfig"},
    {"mistral", "MistralConfig"}, {"mixtral", "MixtralConfig"}, {"qwen2", "Qwen2Config"},
    {"qwen2_moe", "Qwen2MoeConfig"}, {"qwen3", "Qwen3Config"}, {"qwen3_moe", "Qwen3MoeConfig"},
    {"gemma", "GemmaConfig"}, {"gemma2", "Gemma2Config"}, {"phi3", "Phi3Config"},
    {"deepseek_v2", "DeepseekV2Config"}, {"deepseek_v3", "DeepseekV3Config"},
    {"internlm2", "InternLM2Config (remote code)"}, {"qwen2_vl_text", "Qwen2VLTextConfig"},
    {"qwen2_5_vl_text", "Qwen2_5_VLTextConfig"},
    {"clip_vision_model", "CLIPVisionConfig"}, {"siglip_vision_model", "SiglipVisionConfig"},
    {"intern_vit_6b", "InternVisionConfig (remote code)"}, {"internvl_vision", "InternVLVisionConfig"},
    {"idefics3_vision", "Idefics3VisionConfig"}, {"qwen2_vl", "Qwen2VLVisionConfig"},
    {"qwen2_5_vl", "Qwen2_5_VLVisionConfig"}, {"whisper", "WhisperConfig"},
    {"olmo2", "Olmo2Config"}, {"cohere", "CohereConfig"}, {"starcoder2", "Starcoder2Config"},
    {"deepseek", "DeepseekConfig (remote code)"}, {"minicpm", "MiniCPMConfig (remote code)"},
    {"gemma3_text", "Gemma3TextConfig"}, {"gpt_oss", "GptOssConfig"}, {"phi", "PhiConfig"},
    {"stablelm", "StableLmConfig"}, {"mpt", "MptConfig"}, {"mpt_attn", "MptAttentionConfig"},
    {"nemotron", "NemotronConfig"}, {"pixtral", "PixtralVisionConfig"}, {"ministral3", "Ministral3Config"},
    {"phi3_v", "Phi3VConfig (remote code)"}, {"qwen2_audio_encoder", "Qwen2AudioEncoderConfig"},
    {"qwen3_vl_text", "Qwen3VLTextConfig"}, {"qwen3_vl", "Qwen3VLVisionConfig"},
    {"idefics2_vision", "Idefics2VisionConfig"}, {"idefics2_perceiver", "Idefics2PerceiverConfig"},
    {"llama4_text", "Llama4TextConfig"}, {"llama4_vision_model", "Llama4VisionConfig"},
    {"mllama_text_model", "MllamaTextConfig"}, {"mllama_vision_model", "MllamaVisionConfig"},
    {NULL, NULL},
};

#define I(t, k, v) {t, k, KI, v, NULL}
#define B(t, k, v) {t, k, KB, v, NULL}
#define S(t, k, v) {t, k, KS, 0, v}
/* LlamaConfig-shaped rows: vocab, hidden, ffn, layers, heads, max positions, tie. */
#define LL(t, V, H, F, L, A, P, T)                                                                   \
    I(t, "vocab_size", V), I(t, "hidden_size", H), I(t, "intermediate_size", F),                   \
        I(t, "num_hidden_layers", L), I(t, "num_attention_heads", A),                              \
        I(t, "max_position_embeddings", P), B(t, "tie_word_embeddings", T)

static const def_row defs[] = {
    /* GPT2Config: n_inner None -> 4h, learned positions, tied */
    I("gpt2", "vocab_size", 50257), I("gpt2", "n_positions", 1024), I("gpt2", "n_embd", 768),
    I("gpt2", "n_layer", 12), I("gpt2", "n_head", 12), S("gpt2", "activation_function", "gelu_new"),
    LL("gpt_neox", 50432, 6144, 24576, 44, 64, 2048, false), S("gpt_neox", "hidden_act", "gelu"),
    LL("llama", 32000, 4096, 11008, 32, 32, 2048, false), S("llama", "hidden_act", "silu"),
    LL("mistral", 32000, 4096, 14336, 32, 32, 131072, false), I("mistral", "num_key_value_heads", 8),
    S("mistral", "hidden_act", "silu"),
    /* Ministral3Config (transformers 5): Mistral's sizes; its Llama-4
     * attention scaling sits in rope_parameters (a position rescaling) */
    LL("ministral3", 131072, 4096, 14336, 34, 32, 262144, false), I("ministral3", "num_key_value_heads", 8),
    I("ministral3", "head_dim", 128), S("ministral3", "hidden_act", "silu"),
    LL("mixtral", 32000, 4096, 14336, 32, 32, 131072, false), I("mixtral", "num_key_value_heads", 8),
    S("mixtral", "hidden_act", "silu"), I("mixtral", "num_local_experts", 8),
    I("mixtral", "num_experts_per_tok", 2),
    LL("qwen2", 151936, 4096, 22016, 32, 32, 32768, false), I("qwen2", "num_key_value_heads", 32),
    S("qwen2", "hidden_act", "silu"), B("qwen2", "use_sliding_window", false),
    LL("qwen2_moe", 151936, 2048, 5632, 24, 16, 32768, false), I("qwen2_moe", "num_key_value_heads", 16),
    S("qwen2_moe", "hidden_act", "silu"), I("qwen2_moe", "decoder_sparse_step", 1),
    I("qwen2_moe", "moe_intermediate_size", 1408), I("qwen2_moe", "shared_expert_intermediate_size", 5632),
    I("qwen2_moe", "num_experts_per_tok", 4), I("qwen2_moe", "num_experts", 60),
    B("qwen2_moe", "use_sliding_window", false), B("qwen2_moe", "qkv_bias", true),
    LL("qwen3", 151936, 4096, 22016, 32, 32, 32768, false), I("qwen3", "num_key_value_heads", 32),
    I("qwen3", "head_dim", 128), S("qwen3", "hidden_act", "silu"), B("qwen3", "use_sliding_window", false),
    LL("qwen3_moe", 151936, 2048, 6144, 24, 32, 32768, false), I("qwen3_moe", "num_key_value_heads", 4),
    S("qwen3_moe", "hidden_act", "silu"), I("qwen3_moe", "decoder_sparse_step", 1),
    I("qwen3_moe", "moe_intermediate_size", 768), I("qwen3_moe", "num_experts_per_tok", 8),
    I("qwen3_moe", "num_experts", 128), B("qwen3_moe", "use_sliding_window", false),
    LL("gemma", 256000, 3072, 24576, 28, 16, 8192, true), I("gemma", "num_key_value_heads", 16),
    I("gemma", "head_dim", 256), S("gemma", "hidden_act", "gelu_pytorch_tanh"),
    LL("gemma2", 256000, 2304, 9216, 26, 8, 8192, true), I("gemma2", "num_key_value_heads", 4),
    I("gemma2", "head_dim", 256), S("gemma2", "hidden_activation", "gelu_pytorch_tanh"),
    I("gemma2", "sliding_window", 4096),
    LL("phi3", 32064, 3072, 8192, 32, 32, 4096, false), S("phi3", "hidden_act", "silu"),
    /* Phi3VConfig (microsoft/Phi-3.5-vision-instruct, remote code): Phi3Config's sizes */
    LL("phi3_v", 32064, 3072, 8192, 32, 32, 4096, false), S("phi3_v", "hidden_act", "silu"),
    /* DeepseekV2Config's sizes are LlamaConfig's; q_lora_rank 1536, 64
     * routed + 2 shared experts of width 1407, no dense layers first. */
    LL("deepseek_v2", 32000, 4096, 11008, 32, 32, 2048, false), S("deepseek_v2", "hidden_act", "silu"),
    I("deepseek_v2", "first_k_dense_replace", 0), I("deepseek_v2", "kv_lora_rank", 512),
    I("deepseek_v2", "q_lora_rank", 1536), I("deepseek_v2", "n_routed_experts", 64),
    I("deepseek_v2", "n_shared_experts", 2), I("deepseek_v2", "qk_nope_head_dim", 128),
    I("deepseek_v2", "qk_rope_head_dim", 64), I("deepseek_v2", "v_head_dim", 128),
    I("deepseek_v2", "moe_intermediate_size", 1407), I("deepseek_v2", "moe_layer_freq", 1),
    S("deepseek_v2", "topk_method", "greedy"),
    LL("deepseek_v3", 129280, 7168, 18432, 61, 128, 4096, false), I("deepseek_v3", "num_key_value_heads", 128),
    S("deepseek_v3", "hidden_act", "silu"), I("deepseek_v3", "moe_intermediate_size", 2048),
    I("deepseek_v3", "n_shared_experts", 1), I("deepseek_v3", "n_routed_experts", 256),
    I("deepseek_v3", "kv_lora_rank", 512), I("deepseek_v3", "q_lora_rank", 1536),
    I("deepseek_v3", "qk_rope_head_dim", 64), I("deepseek_v3", "v_head_dim", 128),
    I("deepseek_v3", "qk_nope_head_dim", 128), I("deepseek_v3", "num_experts_per_tok", 8),
    I("deepseek_v3", "first_k_dense_replace", 3), I("deepseek_v3", "moe_layer_freq", 1),
    I("deepseek_v3", "num_nextn_predict_layers", 1), S("deepseek_v3", "topk_method", "noaux_tc"),
    LL("internlm2", 103168, 4096, 11008, 32, 32, 2048, false), S("internlm2", "hidden_act", "silu"),
    B("internlm2", "bias", true),
    /* Qwen2-VL's text part (flat keys of Qwen2VLConfig / its text_config) */
    LL("qwen2_vl_text", 152064, 8192, 29568, 80, 64, 32768, false),
    I("qwen2_vl_text", "num_key_value_heads", 8), S("qwen2_vl_text", "hidden_act", "silu"),
    LL("qwen2_5_vl_text", 152064, 8192, 29568, 80, 64, 32768, false),
    I("qwen2_5_vl_text", "num_key_value_heads", 8), S("qwen2_5_vl_text", "hidden_act", "silu"),
    /* encoders */
    I("clip_vision_model", "hidden_size", 768), I("clip_vision_model", "intermediate_size", 3072),
    I("clip_vision_model", "num_hidden_layers", 12), I("clip_vision_model", "num_attention_heads", 12),
    I("clip_vision_model", "num_channels", 3), I("clip_vision_model", "image_size", 224),
    I("clip_vision_model", "patch_size", 32), S("clip_vision_model", "hidden_act", "quick_gelu"),
    I("siglip_vision_model", "hidden_size", 768), I("siglip_vision_model", "intermediate_size", 3072),
    I("siglip_vision_model", "num_hidden_layers", 12), I("siglip_vision_model", "num_attention_heads", 12),
    I("siglip_vision_model", "num_channels", 3), I("siglip_vision_model", "image_size", 224),
    I("siglip_vision_model", "patch_size", 16), S("siglip_vision_model", "hidden_act", "gelu_pytorch_tanh"),
    I("idefics3_vision", "hidden_size", 1152), I("idefics3_vision", "intermediate_size", 3072),
    I("idefics3_vision", "num_hidden_layers", 12), I("idefics3_vision", "num_attention_heads", 16),
    I("idefics3_vision", "num_channels", 3), I("idefics3_vision", "image_size", 224),
    I("idefics3_vision", "patch_size", 32), S("idefics3_vision", "hidden_act", "gelu_pytorch_tanh"),
    I("intern_vit_6b", "hidden_size", 3200), I("intern_vit_6b", "intermediate_size", 12800),
    I("intern_vit_6b", "num_hidden_layers", 48), I("intern_vit_6b", "num_attention_heads", 25),
    I("intern_vit_6b", "num_channels", 3), I("intern_vit_6b", "image_size", 224),
    I("intern_vit_6b", "patch_size", 14), B("intern_vit_6b", "qkv_bias", false),
    B("intern_vit_6b", "qk_normalization", true), S("intern_vit_6b", "norm_type", "rms_norm"),
    S("intern_vit_6b", "hidden_act", "gelu"),
    /* InternVLVisionConfig (transformers-native InternVL): InternViT-300M */
    I("internvl_vision", "hidden_size", 1024), I("internvl_vision", "intermediate_size", 4096),
    I("internvl_vision", "num_hidden_layers", 24), I("internvl_vision", "num_attention_heads", 16),
    I("internvl_vision", "num_channels", 3), I("internvl_vision", "image_size", 448),
    I("internvl_vision", "patch_size", 14), B("internvl_vision", "attention_bias", false),
    B("internvl_vision", "use_qk_norm", false), S("internvl_vision", "norm_type", "layer_norm"),
    S("internvl_vision", "hidden_act", "gelu"),
    I("qwen2_vl", "depth", 32), I("qwen2_vl", "embed_dim", 1280), I("qwen2_vl", "hidden_size", 3584),
    I("qwen2_vl", "mlp_ratio", 4), I("qwen2_vl", "num_heads", 16), I("qwen2_vl", "in_channels", 3),
    I("qwen2_vl", "patch_size", 14), I("qwen2_vl", "spatial_merge_size", 2),
    I("qwen2_vl", "temporal_patch_size", 2), S("qwen2_vl", "hidden_act", "quick_gelu"),
    I("qwen2_5_vl", "depth", 32), I("qwen2_5_vl", "hidden_size", 3584), I("qwen2_5_vl", "intermediate_size", 3420),
    I("qwen2_5_vl", "num_heads", 16), I("qwen2_5_vl", "in_channels", 3), I("qwen2_5_vl", "patch_size", 14),
    I("qwen2_5_vl", "spatial_merge_size", 2), I("qwen2_5_vl", "temporal_patch_size", 2),
    I("qwen2_5_vl", "window_size", 112), I("qwen2_5_vl", "out_hidden_size", 3584),
    S("qwen2_5_vl", "hidden_act", "silu"),
    /* Text families added with their transformers classes (remote code:
     * DeepseekConfig from deepseek-ai/deepseek-moe-16b-base, MiniCPMConfig
     * from openbmb/MiniCPM-2B-sft-bf16). */
    LL("olmo2", 50304, 4096, 11008, 32, 32, 2048, false), S("olmo2", "hidden_act", "silu"),
    LL("cohere", 256000, 8192, 22528, 40, 64, 8192, true), S("cohere", "hidden_act", "silu"),
    B("cohere", "use_qk_norm", false),
    LL("starcoder2", 49152, 3072, 12288, 30, 24, 4096, true), I("starcoder2", "num_key_value_heads", 2),
    S("starcoder2", "hidden_act", "gelu_pytorch_tanh"), B("starcoder2", "use_bias", true),
    LL("deepseek", 102400, 4096, 11008, 30, 32, 2048, false), S("deepseek", "hidden_act", "silu"),
    I("deepseek", "moe_intermediate_size", 1407), I("deepseek", "moe_layer_freq", 1),
    I("deepseek", "first_k_dense_replace", 0),
    LL("minicpm", 32000, 4096, 11008, 32, 32, 2048, false), S("minicpm", "hidden_act", "silu"),
    LL("gemma3_text", 262208, 2304, 9216, 26, 8, 131072, true), I("gemma3_text", "num_key_value_heads", 4),
    I("gemma3_text", "head_dim", 256), S("gemma3_text", "hidden_activation", "gelu_pytorch_tanh"),
    I("gemma3_text", "sliding_window", 4096), I("gemma3_text", "sliding_window_pattern", 6),
    LL("gpt_oss", 201088, 2880, 2880, 36, 64, 131072, false), I("gpt_oss", "num_key_value_heads", 8),
    I("gpt_oss", "head_dim", 64), I("gpt_oss", "num_local_experts", 128), I("gpt_oss", "num_experts_per_tok", 4),
    I("gpt_oss", "sliding_window", 128), B("gpt_oss", "attention_bias", true), S("gpt_oss", "hidden_act", "silu"),
    LL("phi", 51200, 2048, 8192, 24, 32, 2048, false), S("phi", "hidden_act", "gelu_new"),
    LL("stablelm", 50304, 2560, 6912, 32, 32, 4096, false), I("stablelm", "num_key_value_heads", 32),
    S("stablelm", "hidden_act", "silu"),
    LL("nemotron", 256000, 6144, 24576, 32, 48, 4096, false), S("nemotron", "hidden_act", "relu2"),
    I("mpt", "d_model", 2048), I("mpt", "n_heads", 16), I("mpt", "n_layers", 24), I("mpt", "expansion_ratio", 4),
    I("mpt", "max_seq_len", 2048), I("mpt", "vocab_size", 50368), B("mpt", "no_bias", true),
    S("mpt", "norm_type", "low_precision_layernorm"), B("mpt_attn", "alibi", false), B("mpt_attn", "qk_ln", false),
    S("mpt_attn", "attn_type", "multihead_attention"),
    /* PixtralVisionConfig (Mistral 3's tower) */
    I("pixtral", "hidden_size", 1024), I("pixtral", "intermediate_size", 4096), I("pixtral", "num_hidden_layers", 24),
    I("pixtral", "num_attention_heads", 16), I("pixtral", "num_channels", 3), I("pixtral", "image_size", 1024),
    I("pixtral", "patch_size", 16), S("pixtral", "hidden_act", "gelu"), I("pixtral", "head_dim", 64),
    /* Qwen2AudioEncoderConfig: Qwen2-Audio's Whisper-large-like tower */
    I("qwen2_audio_encoder", "num_mel_bins", 128), I("qwen2_audio_encoder", "encoder_layers", 32),
    I("qwen2_audio_encoder", "encoder_attention_heads", 20), I("qwen2_audio_encoder", "encoder_ffn_dim", 5120),
    I("qwen2_audio_encoder", "d_model", 1280), I("qwen2_audio_encoder", "max_source_positions", 1500),
    /* Qwen3VLTextConfig, Qwen3VLVisionConfig (configuration_qwen3_vl.py @ e1b5516; the
     * vision default deepstack_visual_indexes [8, 16, 24] is mllm_read.c's) */
    LL("qwen3_vl_text", 151936, 4096, 22016, 32, 32, 128000, false), I("qwen3_vl_text", "num_key_value_heads", 32),
    I("qwen3_vl_text", "head_dim", 128), S("qwen3_vl_text", "hidden_act", "silu"),
    I("qwen3_vl", "depth", 27), I("qwen3_vl", "hidden_size", 1152), I("qwen3_vl", "intermediate_size", 4304),
    I("qwen3_vl", "num_heads", 16), I("qwen3_vl", "in_channels", 3), I("qwen3_vl", "patch_size", 16),
    I("qwen3_vl", "spatial_merge_size", 2), I("qwen3_vl", "temporal_patch_size", 2),
    I("qwen3_vl", "out_hidden_size", 3584), I("qwen3_vl", "num_position_embeddings", 2304),
    S("qwen3_vl", "hidden_act", "gelu_pytorch_tanh"),
    /* Idefics2VisionConfig, Idefics2PerceiverConfig (configuration_idefics2.py @ 6a17388) */
    I("idefics2_vision", "hidden_size", 768), I("idefics2_vision", "intermediate_size", 3072),
    I("idefics2_vision", "num_hidden_layers", 12), I("idefics2_vision", "num_attention_heads", 12),
    I("idefics2_vision", "num_channels", 3), I("idefics2_vision", "image_size", 224),
    I("idefics2_vision", "patch_size", 32), S("idefics2_vision", "hidden_act", "gelu_pytorch_tanh"),
    I("idefics2_perceiver", "hidden_size", 4096), S("idefics2_perceiver", "hidden_act", "silu"),
    I("idefics2_perceiver", "resampler_n_latents", 64), I("idefics2_perceiver", "resampler_depth", 3),
    I("idefics2_perceiver", "resampler_n_heads", 16), I("idefics2_perceiver", "resampler_head_dim", 96),
    I("idefics2_perceiver", "num_key_value_heads", 4),
    /* Llama4TextConfig, Llama4VisionConfig (configuration_llama4.py @ b17cfe4; the
     * vision pixel_shuffle_ratio default 0.5 is mllm_read.c's) */
    LL("llama4_text", 202048, 5120, 8192, 48, 40, 131072, false), I("llama4_text", "num_key_value_heads", 8),
    I("llama4_text", "head_dim", 128), S("llama4_text", "hidden_act", "silu"),
    I("llama4_text", "intermediate_size_mlp", 16384), I("llama4_text", "num_local_experts", 16),
    I("llama4_text", "num_experts_per_tok", 1), I("llama4_text", "interleave_moe_layer_step", 1),
    I("llama4_text", "attention_chunk_size", 8192), I("llama4_text", "no_rope_layer_interval", 4),
    I("llama4_vision_model", "hidden_size", 768), I("llama4_vision_model", "intermediate_size", 5632),
    I("llama4_vision_model", "num_hidden_layers", 34), I("llama4_vision_model", "num_attention_heads", 16),
    I("llama4_vision_model", "num_channels", 3), I("llama4_vision_model", "image_size", 448),
    I("llama4_vision_model", "patch_size", 14), S("llama4_vision_model", "hidden_act", "gelu"),
    I("llama4_vision_model", "vision_output_dim", 7680), I("llama4_vision_model", "projector_input_dim", 4096),
    I("llama4_vision_model", "projector_output_dim", 4096),
    /* MllamaTextConfig, MllamaVisionConfig (configuration_mllama.py @ 996a401; the
     * list defaults, cross_attention_layers, intermediate_layers_indices and
     * supported_aspect_ratios, are llm_read.c's and mllm_read.c's) */
    LL("mllama_text_model", 128256, 4096, 14336, 40, 32, 131072, false),
    I("mllama_text_model", "num_key_value_heads", 8), S("mllama_text_model", "hidden_act", "silu"),
    I("mllama_vision_model", "hidden_size", 1280), I("mllama_vision_model", "intermediate_size", 5120),
    I("mllama_vision_model", "num_hidden_layers", 32), I("mllama_vision_model", "num_global_layers", 8),
    I("mllama_vision_model", "attention_heads", 16), I("mllama_vision_model", "num_channels", 3),
    I("mllama_vision_model", "image_size", 448), I("mllama_vision_model", "patch_size", 14),
    I("mllama_vision_model", "max_num_tiles", 4), I("mllama_vision_model", "vision_output_dim", 7680),
    S("mllama_vision_model", "hidden_act", "gelu"),
    I("whisper", "num_mel_bins", 80), I("whisper", "encoder_layers", 4), I("whisper", "encoder_attention_heads", 6),
    I("whisper", "encoder_ffn_dim", 1536), I("whisper", "d_model", 384), I("whisper", "max_source_positions", 1500),
    {NULL, NULL, KI, 0, NULL},
};

const char *mm_hf_class(const char *type)
{
    for (const class_row *c = classes; c->type; c++)
        if (!strcmp(c->type, type))
            return c->cls;
    return NULL;
}

static const def_row *find_def(const char *type, const char *key)
{
    if (!type)
        return NULL;
    for (const def_row *d = defs; d->type; d++)
        if (!strcmp(d->type, type) && !strcmp(d->key, key))
            return d;
    return NULL;
}

bool mm_hf_in(const char *s, const char *const *list)
{
    for (; list && *list; list++)
        if (!strcmp(s, *list))
            return true;
    return false;
}

void mm_hf_key(const mm_hf *r, const char *key, char *buf, size_t len)
{
    if (r->prefix && r->prefix[0])
        snprintf(buf, len, "%s.%s", r->prefix, key);
    else
        snprintf(buf, len, "%s", key);
}

bool mm_hf_has(const mm_hf *r, const char *key)
{
    mm_node *n = mm_node_get(r->map, key);
    return n && !mm_node_is_null(n);
}

int mm_hf_fail(const mm_hf *r, const char *key, const char *fmt, ...)
{
    char kp[160], msg[400];
    mm_hf_key(r, key, kp, sizeof kp);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = mm_node_key_line(r->map, key);
    return mm_err_set(r->err, MM_EINPUT, r->doc->path, line > 0 ? line : mm_node_line(r->map), kp, "%s", msg);
}

/* JSON null is Python's None: no value, and not the default either
 * (q_lora_rank null means no query compression). */
static bool is_null(const mm_hf *r, const char *key)
{
    mm_node *n = mm_node_get(r->map, key);
    return n && mm_node_is_null(n);
}

int mm_hf_int(const mm_hf *r, const char *key, int64_t min, int64_t max, int64_t *out, bool *found)
{
    bool f = false;
    if (found)
        *found = false;
    if (is_null(r, key))
        return 0;
    if (mm_hf_has(r, key)) {
        char kp[160];
        mm_hf_key(r, key, kp, sizeof kp);
        int rc = mm_node_int(r->doc, r->map, key, kp, min, max, out, &f, r->err);
        if (found)
            *found = f;
        return rc;
    }
    const def_row *d = find_def(r->type, key);
    if (d && d->k == KI) {
        *out = d->i;
        if (found)
            *found = true;
    }
    return 0;
}

int mm_hf_need_int(const mm_hf *r, const char *key, int64_t min, int64_t max, int64_t *out)
{
    bool f = false;
    int rc = mm_hf_int(r, key, min, max, out, &f);
    if (rc)
        return rc;
    if (!f)
        return mm_hf_fail(r, key, "missing required key (and %s has no default for it)",
                          mm_hf_class(r->type ? r->type : "") ? mm_hf_class(r->type) : "its config class");
    return 0;
}

int mm_hf_bool(const mm_hf *r, const char *key, bool *out)
{
    if (is_null(r, key)) { /* None: the switch is off, whatever the default */
        *out = false;
        return 0;
    }
    if (mm_hf_has(r, key)) {
        char kp[160];
        mm_hf_key(r, key, kp, sizeof kp);
        return mm_node_bool(r->doc, r->map, key, kp, out, NULL, r->err);
    }
    const def_row *d = find_def(r->type, key);
    if (d && d->k == KB)
        *out = d->i != 0;
    return 0;
}

int mm_hf_str(const mm_hf *r, const char *key, char *out, size_t len)
{
    if (is_null(r, key))
        return 0;
    if (mm_hf_has(r, key)) {
        char kp[160];
        mm_hf_key(r, key, kp, sizeof kp);
        return mm_node_str(r->doc, r->map, key, kp, out, len, NULL, r->err);
    }
    const def_row *d = find_def(r->type, key);
    if (d && d->k == KS)
        snprintf(out, len, "%s", d->s);
    return 0;
}

int mm_hf_double(const mm_hf *r, const char *key, double min, double max, double *out)
{
    if (!mm_hf_has(r, key))
        return 0;
    char kp[160];
    mm_hf_key(r, key, kp, sizeof kp);
    return mm_node_double(r->doc, r->map, key, kp, min, max, out, NULL, r->err);
}

/* Keys of PretrainedConfig and of every family that do not change what a
 * training step computes or holds: token ids, dtypes and bookkeeping,
 * dropout and initialisation, norm epsilons, RoPE bases and scaling (a
 * position rescaling costs no FLOPs here), quantization of the published
 * checkpoint (mmsim trains in train.precision), inference-only switches. */
static const char *const costless_generic[] = {
    "_name_or_path", "architectures", "auto_map", "torch_dtype", "dtype", "transformers_version",
    "use_cache", "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id",
    "decoder_start_token_id", "initializer_range", "initializer_factor", "rms_norm_eps",
    "layer_norm_eps", "layer_norm_epsilon", "attention_dropout", "dropout", "hidden_dropout",
    "attention_probs_dropout_prob", "hidden_dropout_prob", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "activation_dropout", "rope_theta", "rope_scaling", "rope_parameters", "rope_interleave",
    "quantization_config", "id2label", "label2id", "output_attentions", "output_hidden_states",
    "return_dict", "problem_type", "tokenizer_class", "task_specific_params", "pretraining_tp",
    "use_flash_attn", "attn_implementation", "_attn_implementation_autoset", "torchscript",
    "chunk_size_feed_forward", "model_type", "max_position_embeddings", "original_max_position_embeddings",
    "use_return_dict", "is_decoder", "add_cross_attention", "tie_encoder_decoder",
    "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "aux_loss_alpha", "seq_aux",
    "norm_topk_prob", "ep_size", "drop_path_rate", "layerdrop", "vision_start_token_id",
    "vision_end_token_id", "vision_token_id", "image_token_id", "video_token_id", "image_token_index",
    "video_token_index", "ignore_index", "tokens_per_second", "num_labels", "finetuning_task",
    "prefix", "forced_eos_token_id", "forced_bos_token_id", "suppress_tokens", "begin_suppress_tokens",
    "max_length", "min_length", "do_sample", "num_beams", "temperature", "top_k", "top_p",
    "repetition_penalty", "length_penalty", "no_repeat_ngram_size", "early_stopping",
    "bad_words_ids", "diversity_penalty", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "remove_invalid_values", "exponential_decay_length_penalty",
    "typical_p", "encoder_no_repeat_ngram_size", "num_beam_groups", "tf_legacy_loss",
    "pruned_heads", "cross_attention_hidden_size", "is_encoder_decoder", "use_bfloat16",
    "_commit_hash", "mrope_section", "rope_type",
    /* written by from_pretrained into some published files (Gemma-2-27B,
     * Phi-3.5-vision): which attention kernel, not what it computes */
    "_attn_implementation", NULL,
};

/* Keys one family's config class (or its published files) carries that do
 * not change what a training step computes or holds, per model_type: the
 * reason is beside each.  A key here is accepted only for that type. */
typedef struct typed_key {
    const char *type, *key;
} typed_key;

static const typed_key costless_typed[] = {
    /* Phi-4-mini (microsoft/Phi-4-mini-instruct config.json): full_attn_mod
     * and interpolate_factor belong to its LongRoPE setup (a position
     * rescaling); lm_head_bias is read (llm_read.c). */
    {"phi3", "full_attn_mod"}, {"phi3", "interpolate_factor"},
    /* CohereConfig: logit_scale multiplies the logits (one scalar) */
    {"cohere", "logit_scale"},
    /* MiniCPM (openbmb, remote code): muP scalings of embeddings, residuals
     * and logits (scalars, no weights) */
    {"minicpm", "scale_emb"}, {"minicpm", "dim_model_base"}, {"minicpm", "scale_depth"},
    /* Gemma 3: the RoPE base of its local layers */
    {"gemma3_text", "rope_local_base_freq"},
    /* Starcoder2Config: softmax precision flags and dropouts; the original
     * BigCode checkpoint's activation_function is not read by transformers
     * (hidden_act is) */
    {"starcoder2", "attention_softmax_in_fp32"}, {"starcoder2", "scale_attention_softmax_in_fp32"},
    {"starcoder2", "scale_attn_weights"}, {"starcoder2", "embedding_dropout"}, {"starcoder2", "residual_dropout"},
    {"starcoder2", "norm_epsilon"}, {"starcoder2", "activation_function"},
    /* GPTNeoXConfig: the parallel residual keeps two LayerNorms (input and
     * post_attention), the same weights and kernels as the sequential form */
    {"gpt_neox", "use_parallel_residual"},
    /* NemotronConfig: the norm's epsilon */
    {"nemotron", "norm_eps"},
    /* GptOssConfig: the router's and experts' numeric details */
    {"gpt_oss", "swiglu_limit"}, {"gpt_oss", "experts_per_token"}, {"gpt_oss", "initial_context_length"},
    /* MptConfig: numerics and initialisation; learned_pos_emb builds no
     * table in transformers' MPT (ALiBi only, modeling_mpt.py) */
    {"mpt", "init_device"}, {"mpt", "verbose"}, {"mpt", "logit_scale"}, {"mpt", "embedding_fraction"},
    {"mpt", "init_config"}, {"mpt", "emb_pdrop"}, {"mpt", "learned_pos_emb"},
    {NULL, NULL},
};

static bool typed_costless(const char *type, const char *key)
{
    for (const typed_key *t = costless_typed; type && t->type; t++)
        if (!strcmp(t->type, type) && !strcmp(t->key, key))
            return true;
    return false;
}

/* Optional features mmsim does not model, which published files write out
 * switched off: null (None), false or 0 reads as off and costs nothing; any
 * other value is refused by name.  InternVL's image_fold (InternVL3-1B:
 * null), InternVL's Qwen2 llm_config moe_config (null), InternViT's use_moe
 * (false; its expert sizes are then costless, mllm_read.c). */
static const char *const off_features[] = {"image_fold", "moe_config", "use_moe", NULL};

static bool is_off(const mm_node *n)
{
    if (!n || mm_node_is_null(n))
        return true;
    const char *s = mm_node_scalar(n, NULL);
    return s && !mm_node_is_quoted(n) && (!strcmp(s, "false") || !strcmp(s, "0"));
}

/* Every key the check refuses is named in one message: the first in the
 * error's key and line, all of them (line each) in its text. */
int mm_hf_check_keys(const mm_hf *r, const char *const *read, const char *const *costless)
{
    const char *first = NULL;
    char list[300] = "";
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < mm_node_count(r->map); i++) {
        const char *k = mm_node_scalar(mm_node_pair_key(r->map, i), NULL);
        if (!k)
            continue;
        static const char *const nested[] = {"text_config", "vision_config", "llm_config", NULL};
        if (mm_hf_in(k, nested)) /* read by the composite reader, each with its own checks */
            continue;
        if (mm_hf_in(k, read) || find_def(r->type, k) || mm_hf_in(k, costless_generic) ||
            mm_hf_in(k, costless) || typed_costless(r->type, k) ||
            (mm_hf_in(k, off_features) && is_off(mm_node_get(r->map, k))))
            continue;
        if (!first)
            first = k;
        char kp[160];
        mm_hf_key(r, k, kp, sizeof kp);
        int w = snprintf(list + used, sizeof list - used, "%s'%s' (line %d)", n ? ", " : "", kp,
                         mm_node_key_line(r->map, k));
        if (w > 0 && (size_t)w < sizeof list - used)
            used += (size_t)w;
        else if (used + 4 < sizeof list)
            snprintf(list + used, sizeof list - used, ", ..."), used = sizeof list - 1;
        n++;
    }
    if (!first)
        return 0;
    if (n == 1 && mm_hf_in(first, off_features))
        return mm_hf_fail(r, first, "an optional feature " KEYS_MARK " '%s' (only null, false or 0: off)", r->type ? r->type : "");
    if (n == 1)
        return mm_hf_fail(r, first, "key " KEYS_MARK " '%s' (not a size it reads, nor one known to leave "
                          "the cost unchanged)", r->type ? r->type : "");
    return mm_hf_fail(r, first, "%d keys " KEYS_MARK " '%s' (neither sizes it reads nor "
                      "known to leave the cost unchanged): %s", n, r->type ? r->type : "", list);
}

bool mm_hf_is_keys_error(const mm_err *err)
{
    return err && err->code == MM_EINPUT && strstr(err->msg, KEYS_MARK) != NULL;
}

void mm_hf_join_keys_error(mm_err *into, const mm_err *more)
{
    if (!into || !more || !more->code)
        return;
    if (!into->code) {
        *into = *more;
        return;
    }
    size_t n = strlen(into->msg);
    if (n + 8 >= sizeof into->msg)
        return;
    /* the other mapping's keys as its own message lists them ("...): 'a'
     * (line 3), 'b' (line 9)"), or its one key */
    const char *list = strstr(more->msg, "): '");
    int w = list ? snprintf(into->msg + n, sizeof into->msg - n, "; also %s", list + 3)
                 : snprintf(into->msg + n, sizeof into->msg - n, "; also '%s' (line %d)", more->key, more->line);
    if (w > 0 && (size_t)w >= sizeof into->msg - n && sizeof into->msg > 5)
        memcpy(into->msg + sizeof into->msg - 5, "...", 4); /* cut: the first keys stay whole */
}

int mm_hf_off(const mm_hf *r, const char *key, const char *what)
{
    if (is_off(mm_node_get(r->map, key)))
        return 0;
    return mm_hf_fail(r, key, "%s is not modeled (only null or false: off)", what);
}

/* Activation names of transformers' ACT2FN. */
static const char *const acts[] = {
    "silu", "swish", "swiglu", "gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python",
    "gelu_accurate", "quick_gelu", "relu", "relu2", "relu6", "tanh", "sigmoid", "leaky_relu", "mish", NULL,
};

int mm_hf_act(const mm_hf *r, const char *key, const char *act)
{
    if (mm_hf_in(act, acts))
        return 0;
    return mm_hf_fail(r, key, "unknown activation '%s' (silu, swish, gelu, gelu_new, gelu_pytorch_tanh, "
                      "quick_gelu, relu, ...)", act);
}
