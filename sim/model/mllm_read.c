/* mllm_read.c - reading multimodal models: encoder configs (CLIP, SigLIP,
 * InternViT, Idefics2's and Idefics3's SigLIP, the Qwen2-VL/2.5-VL/3-VL
 * vision towers, Pixtral, Whisper's and Qwen2-Audio's encoders), Hugging
 * Face composites (llava, llava_next, llava_onevision, internvl_chat and
 * internvl, qwen2_vl, qwen2_5_vl and qwen3_vl (DeepStack), idefics2
 * (perceiver resampler), idefics3, mistral3/ministral3, gemma3, phi3_v,
 * qwen2_audio, llama4, mllama (its tower in mllama_read.c)) and our YAML
 * form.
 * Absent keys take their transformers config class's defaults (hf.c);
 * unmodeled keys are refused by name.
 * Not for: costs (mllm.c), the LLM reader itself (llm_read.c). */
#include "model/mllm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/hf.h"
#include "model/mllama_read.h"
#include "util/doc.h"

#define DIM_MAX (INT64_C(1) << 20)

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

static void stem_name(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (n >= len)
        n = len - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

static const char *const vision_types[] = {"clip_vision_model", "siglip_vision_model", "intern_vit_6b",
                                           "internvl_vision", "idefics3_vision", "idefics2_vision", "qwen2_vl",
                                           "qwen2_5_vl", "llama4_vision_model", "mllama_vision_model", NULL};

static bool in_list(const char *s, const char *const *l)
{
    return mm_hf_in(s, l);
}

/* An int that transformers-native InternVL writes as [h, w] (image_size,
 * patch_size): a square pair is read as its side, a non-square one refused. */
static int square_int(const mm_hf *r, const char *key, int64_t *out)
{
    mm_node *n = mm_node_get(r->map, key);
    if (!n || !mm_node_is_sequence(n))
        return mm_hf_need_int(r, key, 1, DIM_MAX, out);
    char kp[160];
    mm_hf_key(r, key, kp, sizeof kp);
    int64_t v[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        int rc = mm_node_as_int(r->doc, mm_node_item(n, i), kp, 1, DIM_MAX, &v[i], r->err);
        if (rc)
            return rc;
    }
    if (mm_node_count(n) != 2 || v[0] != v[1])
        return mm_hf_fail(r, key, "only square [n, n] sizes are modeled");
    *out = v[0];
    return 0;
}

/* Vision-tower keys that change nothing mmsim costs: which layer's features
 * feed the projector (every layer still runs in transformers' forward),
 * SigLIP's pooling head switch (off in every composite), projection dims of
 * the unused contrastive heads, initialisation and dropout. */
static const char *const vit_costless[] = {
    "projection_dim", "vocab_size", "vision_use_head", "use_mask_token", "use_absolute_position_embeddings",
    "layer_scale_init_value", "projection_dropout", "use_mean_pooling", "dropout", "vision_feature_layer",
    "spatial_patch_size", "tokens_per_second", "num_positions", "max_num_patches",
    "architectures", "hidden_act", NULL,
};

/* CLIP / SigLIP (and Idefics3's SigLIP) vision towers, InternViT (remote
 * code) and transformers' InternVLVisionModel. */
/* The keys read_vit accepts beyond its own: vit_costless, InternViT's
 * switched-off experts, Llama 4's adapter and projector sizes; into `out`
 * (NULL-terminated, 64 entries). */
static void vit_accepted(const char *type, mm_node *map, const char **out)
{
    /* InternViT's optional mixture of experts (InternVL3's vision_config):
     * with use_moe off (hf.c) its expert sizes describe nothing built */
    static const char *const intern_moe[] = {
        "capacity_factor", "eval_capacity_factor", "laux_allreduce", "moe_coeff_ratio", "moe_intermediate_size",
        "moe_output_scale", "noisy_gate_policy", "num_experts", "num_routed_experts", "num_shared_experts",
        "shared_expert_intermediate_size", "use_residual", "use_rts", "use_weighted_residual", NULL};
    /* Llama 4's adapter and projector sizes (llama4_projector reads them);
     * its projector's bias switch is unused (every Linear is bias=False) */
    static const char *const llama4_keys[] = {"vision_output_dim", "pixel_shuffle_ratio", "projector_input_dim",
                                              "projector_output_dim", "multi_modal_projector_bias",
                                              "projector_dropout", "norm_eps", "vision_feature_select_strategy", NULL};
    int na = 0;
    for (const char *const *k = vit_costless; *k; k++)
        out[na++] = *k;
    if (!strcmp(type, "intern_vit_6b") && mm_node_get(map, "use_moe")) /* no expert sizes without the switch */
        for (const char *const *k = intern_moe; *k; k++)
            out[na++] = *k;
    if (!strcmp(type, "llama4_vision_model"))
        for (const char *const *k = llama4_keys; *k; k++)
            out[na++] = *k;
    out[na] = NULL;
}

static int read_vit(const mm_doc *d, mm_node *map, const char *prefix, const char *type,
                    mm_encoder *e, mm_err *err)
{
    int rc;
    mm_hf r = {d, map, prefix, type, err};
    static const char *const read[] = {"qkv_bias", "qk_normalization", "norm_type", "attention_bias",
                                       "use_qk_norm", NULL};
    const char *accept[64];
    vit_accepted(type, map, accept);
    e->kind = MM_ENC_VISION;
    snprintf(e->model_type, sizeof e->model_type, "%s", type);
    e->channels = 3;
    char act[32] = "";
    if ((rc = mm_hf_off(&r, "use_moe", "InternViT's mixture of experts (use_moe)")) ||
        (rc = mm_hf_check_keys(&r, read, accept)) ||
        (rc = mm_hf_need_int(&r, "hidden_size", 1, DIM_MAX, &e->hidden)) ||
        (rc = mm_hf_need_int(&r, "intermediate_size", 1, DIM_MAX, &e->ffn)) ||
        (rc = mm_hf_need_int(&r, "num_hidden_layers", 1, DIM_MAX, &e->layers)) ||
        (rc = mm_hf_need_int(&r, "num_attention_heads", 1, DIM_MAX, &e->heads)) ||
        (rc = square_int(&r, "image_size", &e->image_size)) || (rc = square_int(&r, "patch_size", &e->patch_size)) ||
        (rc = mm_hf_int(&r, "num_channels", 1, 64, &e->channels, NULL)) ||
        (rc = mm_hf_str(&r, "hidden_act", act, sizeof act)) || (act[0] && (rc = mm_hf_act(&r, "hidden_act", act))))
        return rc;
    bool intern = !strcmp(type, "intern_vit_6b"), native = !strcmp(type, "internvl_vision");
    /* Llama4VisionModel (modeling_llama4.py @ 63210d0) is built as CLIP's:
     * class token, bias-free patch Linear, learned positions, layernorm_pre
     * and _post, biased q/k/v/o and fc1/fc2; its 2-D RoPE on q and k is
     * element-wise and not timed */
    bool clip = !strcmp(type, "clip_vision_model") || !strcmp(type, "llama4_vision_model");
    /* CLIPVisionEmbeddings: class token, patch conv without bias, learned
     * positions; CLIPVisionTransformer: pre_layrnorm and post_layernorm.
     * SiglipVisionEmbeddings: no class token, conv with bias; a
     * post_layernorm (the attention-pooling head is left out: the
     * composites use the patch features).  InternVisionEmbeddings: class
     * token, conv with bias; blocks with layer scale, optional qk norm. */
    e->cls_token = clip || intern || native;
    e->pre_norm = clip;
    e->post_norm = !intern && !native;
    e->patch_bias = !clip;
    e->qkv_bias = e->out_bias = e->mlp_bias = e->k_bias = true;
    if (intern || native) {
        bool qb = false, qk = intern;
        char norm[32] = "rms_norm";
        if (native)
            snprintf(norm, sizeof norm, "layer_norm"); /* InternVLVisionConfig defaults */
        if ((rc = mm_hf_bool(&r, intern ? "qkv_bias" : "attention_bias", &qb)) ||
            (rc = mm_hf_bool(&r, intern ? "qk_normalization" : "use_qk_norm", &qk)) ||
            (rc = mm_hf_str(&r, "norm_type", norm, sizeof norm)))
            return rc;
        if (strcmp(norm, "rms_norm") && strcmp(norm, "layer_norm"))
            return mm_hf_fail(&r, "norm_type", "unknown norm '%s' (rms_norm, layer_norm)", norm);
        e->qkv_bias = e->k_bias = qb;
        e->qk_norm = qk;
        e->layer_scale = true;
        e->rmsnorm = !strcmp(norm, "rms_norm");
    }
    if (e->hidden % e->heads)
        return mm_hf_fail(&r, "num_attention_heads", "%lld heads do not divide the hidden size %lld",
                          (long long)e->heads, (long long)e->hidden);
    /* The patch conv has stride = kernel and no padding: a remainder is
     * dropped (SigLIP 384/14: 27 x 27 patches). */
    if (e->patch_size > e->image_size)
        return mm_hf_fail(&r, "patch_size", "patch size %lld exceeds the image size %lld", (long long)e->patch_size,
                          (long long)e->image_size);
    e->head_dim = e->hidden / e->heads;
    return 0;
}

/* The accounting tile of Qwen2-VL's dynamic resolution: an image of H x W
 * pixels costs H*W / 448^2 tiles (1024 patches of 14 px, 256 LLM tokens
 * after the 2x2 merger).  448 is our unit, not the processor's: cost and
 * tokens scale with area at dynamic resolution; only the full-attention
 * blocks' quadratic term depends on how large one image really is. */
#define QWEN_TILE 448

/* What the Qwen2-VL, Qwen2.5-VL and Qwen3-VL towers share: heads that
 * divide the width, the accounting tile of whole merged patches, and 2-D
 * RoPE. */
static int qwen_tower_geometry(const mm_hf *r, mm_encoder *e, int64_t merge)
{
    if (e->hidden % e->heads)
        return mm_hf_fail(r, "num_heads", "%lld heads do not divide the width %lld", (long long)e->heads,
                          (long long)e->hidden);
    e->head_dim = e->hidden / e->heads;
    e->image_size = QWEN_TILE;
    if (QWEN_TILE % (e->patch_size * merge))
        return mm_hf_fail(r, "patch_size", "the %d-px accounting tile is not a whole number of %lld-px merged "
                          "patches", QWEN_TILE, (long long)(e->patch_size * merge));
    e->rope2d = true;
    return 0;
}

/* Qwen2VLVisionConfig / Qwen2_5_VLVisionConfig (configuration_qwen2_vl.py,
 * configuration_qwen2_5_vl.py; modeling: PatchEmbed Conv3d without bias,
 * blocks of norm1, qkv (bias), proj (bias), norm2, MLP; PatchMerger). */
static int read_qwen_vit(const mm_hf *r, mm_encoder *e, mm_projector *merger, int64_t *merge)
{
    int rc;
    bool v25 = !strcmp(r->type, "qwen2_5_vl");
    static const char *const read[] = {"depth", "embed_dim", "mlp_ratio", "num_heads", "in_channels",
                                       "temporal_patch_size", "spatial_merge_size", "window_size",
                                       "fullatt_block_indexes", "out_hidden_size", "intermediate_size", "in_chans",
                                       NULL};
    e->kind = MM_ENC_VISION;
    snprintf(e->model_type, sizeof e->model_type, "%s", r->type);
    int64_t ratio = 4, out = 0, win = 0;
    char act[32] = "";
    if ((rc = mm_hf_check_keys(r, read, vit_costless)) ||
        (rc = mm_hf_need_int(r, "depth", 1, DIM_MAX, &e->layers)) ||
        (rc = mm_hf_need_int(r, "num_heads", 1, DIM_MAX, &e->heads)) ||
        (rc = mm_hf_need_int(r, mm_hf_has(r, "in_chans") ? "in_chans" : "in_channels", 1, 64, &e->channels)) ||
        (rc = mm_hf_need_int(r, "patch_size", 1, DIM_MAX, &e->patch_size)) ||
        (rc = mm_hf_need_int(r, "temporal_patch_size", 1, 64, &e->temporal_patch)) ||
        (rc = mm_hf_need_int(r, "spatial_merge_size", 1, 64, merge)) ||
        (rc = mm_hf_str(r, "hidden_act", act, sizeof act)) || (rc = mm_hf_act(r, "hidden_act", act)))
        return rc;
    if (v25) { /* hidden_size is the tower's width, out_hidden_size the LLM's */
        if ((rc = mm_hf_need_int(r, "hidden_size", 1, DIM_MAX, &e->hidden)) ||
            (rc = mm_hf_need_int(r, "intermediate_size", 1, DIM_MAX, &e->ffn)) ||
            (rc = mm_hf_need_int(r, "out_hidden_size", 1, DIM_MAX, &out)) ||
            (rc = mm_hf_need_int(r, "window_size", 1, DIM_MAX, &win)))
            return rc;
    } else { /* embed_dim is the tower's width, hidden_size the LLM's */
        if ((rc = mm_hf_need_int(r, "embed_dim", 1, DIM_MAX, &e->hidden)) ||
            (rc = mm_hf_need_int(r, "mlp_ratio", 1, 64, &ratio)) ||
            (rc = mm_hf_need_int(r, "hidden_size", 1, DIM_MAX, &out)))
            return rc;
        e->ffn = e->hidden * ratio;
    }
    if ((rc = qwen_tower_geometry(r, e, *merge)))
        return rc;
    e->qkv_bias = e->k_bias = e->out_bias = e->mlp_bias = true;
    e->gated_mlp = v25;
    e->rmsnorm = v25; /* Qwen2RMSNorm in 2.5; LayerNorm in Qwen2-VL */
    e->full_layers = e->layers;
    if (v25) {
        /* Window attention (Qwen2.5-VL Sec. 2.1): windows of window_size px,
         * i.e. (112/14)^2 = 64 patches; the blocks listed in
         * fullatt_block_indexes attend over the whole image (Qwen2_5_VLVisionConfig
         * default [7, 15, 23, 31]). */
        int64_t side = win / e->patch_size;
        e->window = side * side;
        e->full_layers = 4;
        mm_node *fl = mm_node_get(r->map, "fullatt_block_indexes");
        if (fl && !mm_node_is_null(fl)) {
            if (!mm_node_is_sequence(fl))
                return mm_hf_fail(r, "fullatt_block_indexes", "expected a list of block indexes");
            e->full_layers = mm_node_count(fl);
        }
        if (e->full_layers > e->layers)
            return mm_hf_fail(r, "fullatt_block_indexes", "%lld full-attention blocks in a %lld-block tower",
                              (long long)e->full_layers, (long long)e->layers);
    }
    *merger = (mm_projector){.type = MM_PROJ_QWEN_MERGER, .depth = 2, .in = 0, .out = out, .rmsnorm = v25, .norm_dim = e->hidden, .bias = false};
    return 0;
}

/* Most DeepStack mergers read (Qwen3-VL publishes three). */
#define DEEPSTACK_MAX 8

/* Qwen3VLVisionConfig (configuration_qwen3_vl.py; modeling_qwen3_vl.py at
 * huggingface/transformers @ 68a7b7e): a Conv3d stem with bias, a learned
 * position table of num_position_embeddings rows interpolated to the grid
 * beside the 2-D RoPE, blocks of LayerNorm, qkv and proj (biased), a
 * plain fc1/fc2 MLP (biased), no final norm; the merger (LayerNorm over
 * the width, then over the merged width for the DeepStack mergers, one
 * per deepstack_visual_indexes entry). */
static int read_qwen3_vit(const mm_hf *r, mm_encoder *e, mm_projector *merger, int64_t *merge)
{
    int rc;
    static const char *const read[] = {"depth", "hidden_size", "intermediate_size", "num_heads", "in_channels",
                                       "patch_size", "temporal_patch_size", "spatial_merge_size", "out_hidden_size",
                                       "num_position_embeddings", "deepstack_visual_indexes", NULL};
    e->kind = MM_ENC_VISION;
    snprintf(e->model_type, sizeof e->model_type, "%s", r->type);
    int64_t out = 0;
    char act[32] = "";
    if ((rc = mm_hf_check_keys(r, read, vit_costless)) || (rc = mm_hf_need_int(r, "depth", 1, DIM_MAX, &e->layers)) ||
        (rc = mm_hf_need_int(r, "hidden_size", 1, DIM_MAX, &e->hidden)) ||
        (rc = mm_hf_need_int(r, "intermediate_size", 1, DIM_MAX, &e->ffn)) ||
        (rc = mm_hf_need_int(r, "num_heads", 1, DIM_MAX, &e->heads)) ||
        (rc = mm_hf_need_int(r, "in_channels", 1, 64, &e->channels)) ||
        (rc = mm_hf_need_int(r, "patch_size", 1, DIM_MAX, &e->patch_size)) ||
        (rc = mm_hf_need_int(r, "temporal_patch_size", 1, 64, &e->temporal_patch)) ||
        (rc = mm_hf_need_int(r, "spatial_merge_size", 1, 64, merge)) ||
        (rc = mm_hf_need_int(r, "out_hidden_size", 1, DIM_MAX, &out)) ||
        (rc = mm_hf_need_int(r, "num_position_embeddings", 1, DIM_MAX, &e->pos_table)) ||
        (rc = mm_hf_str(r, "hidden_act", act, sizeof act)) || (rc = mm_hf_act(r, "hidden_act", act)))
        return rc;
    int ds = 3; /* Qwen3VLVisionConfig: [8, 16, 24] */
    mm_node *dl = mm_node_get(r->map, "deepstack_visual_indexes");
    if (dl && !mm_node_is_null(dl)) {
        if (!mm_node_is_sequence(dl))
            return mm_hf_fail(r, "deepstack_visual_indexes", "expected a list of block indexes");
        ds = mm_node_count(dl);
        char kp[160];
        mm_hf_key(r, "deepstack_visual_indexes", kp, sizeof kp);
        for (int i = 0; i < ds; i++) { /* each a block of the tower */
            int64_t ix = 0;
            if ((rc = mm_node_as_int(r->doc, mm_node_item(dl, i), kp, 0, e->layers - 1, &ix, r->err)))
                return rc;
        }
    }
    if (ds > DEEPSTACK_MAX)
        return mm_hf_fail(r, "deepstack_visual_indexes", "%d DeepStack layers (at most %d modeled)", ds,
                          DEEPSTACK_MAX);
    if ((rc = qwen_tower_geometry(r, e, *merge)))
        return rc;
    e->qkv_bias = e->k_bias = e->out_bias = e->mlp_bias = e->patch_bias = true;
    *merger = (mm_projector){.type = MM_PROJ_QWEN_MERGER, .depth = 2, .in = 0, .out = out, .rmsnorm = false, .norm_dim = e->hidden, .bias = false};
    merger->deepstack = ds;
    return 0;
}

/* PixtralVisionConfig (configuration_pixtral.py; modeling_pixtral.py):
 * patch_conv without bias, ln_pre (RMSNorm), blocks of attention_norm,
 * q/k/v/o without bias, ffn_norm and a SwiGLU feed_forward without bias,
 * 2-D RoPE, no class token and no final norm.  Images are read at their
 * own resolution up to image_size: as for Qwen2-VL, `image_size` becomes a
 * 448-px accounting tile (cost and tokens scale with area). */
static int read_pixtral(const mm_hf *r, mm_encoder *e)
{
    int rc;
    static const char *const read[] = {"head_dim", NULL};
    e->kind = MM_ENC_VISION;
    snprintf(e->model_type, sizeof e->model_type, "pixtral");
    char act[32] = "";
    int64_t hd = 0, maxsize = 0;
    if ((rc = mm_hf_check_keys(r, read, vit_costless)) ||
        (rc = mm_hf_need_int(r, "hidden_size", 1, DIM_MAX, &e->hidden)) ||
        (rc = mm_hf_need_int(r, "intermediate_size", 1, DIM_MAX, &e->ffn)) ||
        (rc = mm_hf_need_int(r, "num_hidden_layers", 1, DIM_MAX, &e->layers)) ||
        (rc = mm_hf_need_int(r, "num_attention_heads", 1, DIM_MAX, &e->heads)) ||
        (rc = mm_hf_need_int(r, "num_channels", 1, 64, &e->channels)) ||
        (rc = mm_hf_need_int(r, "patch_size", 1, DIM_MAX, &e->patch_size)) ||
        (rc = mm_hf_need_int(r, "image_size", 1, DIM_MAX, &maxsize)) ||
        (rc = mm_hf_need_int(r, "head_dim", 1, DIM_MAX, &hd)) || (rc = mm_hf_str(r, "hidden_act", act, sizeof act)) ||
        (rc = mm_hf_act(r, "hidden_act", act)))
        return rc;
    if (hd * e->heads != e->hidden)
        return mm_hf_fail(r, "head_dim", "%lld heads x head_dim %lld differ from the width %lld (not modeled)",
                          (long long)e->heads, (long long)hd, (long long)e->hidden);
    e->head_dim = hd;
    e->image_size = QWEN_TILE;
    if (QWEN_TILE % (2 * e->patch_size))
        return mm_hf_fail(r, "patch_size", "the %d-px accounting tile is not a whole number of 2x2-merged "
                          "%lld-px patches", QWEN_TILE, (long long)e->patch_size);
    e->rope2d = e->gated_mlp = e->rmsnorm = e->pre_norm = true;
    return 0;
}

/* The encoder half of a WhisperConfig (the decoder is not modeled: its
 * keys are costless here, Qwen2-Audio-style models use the encoder only). */
static int read_whisper(const mm_doc *d, mm_node *map, const char *prefix, const char *type, mm_encoder *e,
                        mm_err *err)
{
    int rc;
    mm_hf r = {d, map, prefix, type, err};
    bool whisper = !strcmp(type, "whisper");
    static const char *const costless[] = {
        "decoder_layers", "decoder_attention_heads", "decoder_ffn_dim", "max_target_positions", "vocab_size",
        "activation_function", "scale_embedding", "encoder_layerdrop", "decoder_layerdrop", "num_hidden_layers",
        "apply_spec_augment", "mask_time_prob", "mask_time_length", "mask_time_min_masks", "mask_feature_prob",
        "mask_feature_length", "mask_feature_min_masks", "median_filter_width", "classifier_proj_size",
        "use_weighted_layer_sum", "forced_decoder_ids", "suppress_tokens", "begin_suppress_tokens",
        "alignment_heads", "lang_ids", "max_length", NULL};
    e->kind = MM_ENC_AUDIO;
    snprintf(e->model_type, sizeof e->model_type, "%s", type);
    /* A Whisper config states its encoder: WhisperConfig's defaults are
     * whisper-tiny's, which no file meaning another model should inherit
     * silently (Qwen2AudioEncoderConfig's are Qwen2-Audio's own tower). */
    static const char *const sizes[] = {"d_model", "encoder_layers", "encoder_attention_heads", "encoder_ffn_dim",
                                        NULL};
    for (const char *const *k = sizes; whisper && *k; k++)
        if (!mm_hf_has(&r, *k))
            return mm_hf_fail(&r, *k, "missing required key (a Whisper encoder's sizes must be stated; "
                              "WhisperConfig's defaults are whisper-tiny's)");
    if ((rc = mm_llm_check_architectures(d, map, prefix, err)) || (rc = mm_hf_check_keys(&r, NULL, costless)) ||
        (rc = mm_hf_need_int(&r, "d_model", 1, DIM_MAX, &e->hidden)) ||
        (rc = mm_hf_need_int(&r, "encoder_layers", 1, DIM_MAX, &e->layers)) ||
        (rc = mm_hf_need_int(&r, "encoder_attention_heads", 1, DIM_MAX, &e->heads)) ||
        (rc = mm_hf_need_int(&r, "encoder_ffn_dim", 1, DIM_MAX, &e->ffn)) ||
        (rc = mm_hf_need_int(&r, "num_mel_bins", 1, DIM_MAX, &e->mel_bins)) ||
        (rc = mm_hf_need_int(&r, "max_source_positions", 1, DIM_MAX, &e->frames)))
        return rc;
    if (e->hidden % e->heads)
        return mm_hf_fail(&r, "encoder_attention_heads", "%lld heads do not divide d_model %lld",
                          (long long)e->heads, (long long)e->hidden);
    e->head_dim = e->hidden / e->heads;
    /* WhisperEncoderLayer: q, v and out projections with bias, k without;
     * fc1/fc2 with bias; LayerNorms; a final layer_norm.  Stem: conv1
     * (mel -> d, k 3) and conv2 (d -> d, k 3, stride 2), both with bias. */
    e->qkv_bias = e->out_bias = e->mlp_bias = e->patch_bias = true;
    e->k_bias = false;
    e->post_norm = true;
    return 0;
}

/* An encoder from a mapping; `deftype` names the class when the mapping
 * has no model_type (a composite's default vision_config class). */
static int read_encoder_as(const mm_doc *d, mm_node *map, const char *prefix, const char *deftype,
                           mm_encoder *e, mm_projector *merger, int64_t *merge, mm_err *err)
{
    memset(e, 0, sizeof *e);
    char type[64] = "";
    if (!map || !mm_node_is_mapping(map))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(map), prefix, "expected a mapping");
    mm_hf r = {d, map, prefix, NULL, err};
    int rc = mm_hf_str(&r, "model_type", type, sizeof type);
    if (rc)
        return rc;
    if (!type[0] && deftype)
        snprintf(type, sizeof type, "%s", deftype);
    r.type = type;
    if (!strcmp(type, "whisper") || !strcmp(type, "qwen2_audio_encoder"))
        return read_whisper(d, map, prefix, type, e, err);
    if (!strcmp(type, "idefics2")) /* Idefics2Config builds Idefics2VisionConfig whatever the
                                     * vision_config's model_type (idefics2-8b's says "idefics2") */
        snprintf(type, sizeof type, "idefics2_vision");
    if (!strcmp(type, "qwen2_vl") || !strcmp(type, "qwen2_5_vl") || !strcmp(type, "qwen3_vl")) {
        mm_projector p;
        int64_t mg = 1;
        rc = !strcmp(type, "qwen3_vl") ? read_qwen3_vit(&r, e, merger ? merger : &p, merge ? merge : &mg)
                                       : read_qwen_vit(&r, e, merger ? merger : &p, merge ? merge : &mg);
        return rc;
    }
    if (!strcmp(type, "pixtral"))
        return read_pixtral(&r, e);
    if (!strcmp(type, "mllama_vision_model"))
        return mm_mllama_read_tower(&r, e);
    if (!strcmp(type, "siglip_vision_model") || !strcmp(type, "idefics3_vision"))
        return read_vit(d, map, prefix, type, e, err);
    if (in_list(type, vision_types))
        return read_vit(d, map, prefix, type, e, err);
    return mm_hf_fail(&r, "model_type", "'%s' is not an encoder mmsim knows (clip_vision_model, "
                      "siglip_vision_model, intern_vit_6b, internvl_vision, idefics3_vision, idefics2_vision, "
                      "llama4_vision_model, mllama_vision_model, qwen2_vl, qwen2_5_vl, qwen3_vl, pixtral, whisper)",
                      type[0] ? type : "(none)");
}

static int read_encoder(const mm_doc *d, mm_node *map, const char *prefix, mm_encoder *e, mm_err *err)
{
    return read_encoder_as(d, map, prefix, NULL, e, NULL, NULL, err);
}

static int parse_projector(const mm_doc *d, mm_node *node, const char *key, const char *type,
                           mm_projector *p, mm_err *err)
{
    int depth = 0, used = 0;
    if (!strcmp(type, "linear"))
        p->type = MM_PROJ_LINEAR, p->depth = 1;
    else if (!strcmp(type, "internvl"))
        p->type = MM_PROJ_INTERNVL, p->depth = 2;
    else if (sscanf(type, "mlp%dx_gelu%n", &depth, &used) == 1 && used == (int)strlen(type) && depth >= 1 &&
             depth <= 16)
        p->type = MM_PROJ_MLP_GELU, p->depth = depth;
    else if (!strcmp(type, "megatron_mlp"))
        p->type = MM_PROJ_MEGATRON, p->depth = 2;
    else
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(node), key,
                          "unknown projector type '%s' (linear, mlp2x_gelu, mlpNx_gelu, internvl, megatron_mlp)",
                          type);
    return 0;
}

/* Fills the projector's widths once the modules are known. */
static void size_projector(mm_projector *p, const mm_encoder *e, const mm_llm *l, double shuffle)
{
    if (p->type == MM_PROJ_NONE)
        return;
    double r = shuffle > 0 ? shuffle : 1.0;
    /* pixel shuffle concatenates r^-2 patches; Gemma 3 averages them */
    p->in = p->type == MM_PROJ_GEMMA3 || p->type == MM_PROJ_PERCEIVER ? e->hidden
                                                                       : (int64_t)llround((double)e->hidden / (r * r));
    p->norm_dim = e->hidden;
    if (p->type != MM_PROJ_QWEN_MERGER || p->out == 0)
        p->out = l->hidden;
}

static void finish_grids(mm_model *m)
{
    if (m->max_tiles < 1) {
        int mx = 0;
        for (int i = 0; i < m->n_grids; i++)
            if (m->grids[i][0] * m->grids[i][1] > mx)
                mx = m->grids[i][0] * m->grids[i][1];
        m->max_tiles = m->n_grids ? mx + 1 : 1; /* + the base image */
    }
}

/* anyres pin-points: a list of [height, width] in pixels, multiples of tile. */
static int read_pinpoints(const mm_doc *d, mm_node *list, const char *key, mm_model *m, bool pixels,
                          mm_err *err)
{
    if (!mm_node_is_sequence(list))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(list), key, "expected a list of [rows, cols]");
    int it = 0;
    mm_node *pair;
    while ((pair = mm_node_item(list, it++))) {
        if (!mm_node_is_sequence(pair) || mm_node_count(pair) != 2)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(pair), key, "each entry is a pair [rows, cols]");
        if (m->n_grids == MM_MAX_GRIDS)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(pair), key, "more than %d grids", MM_MAX_GRIDS);
        int64_t v[2];
        for (int i = 0; i < 2; i++) {
            int rc = mm_node_as_int(d, mm_node_item(pair, i), key, 1, 1 << 20, &v[i], err);
            if (rc)
                return rc;
        }
        if (pixels) {
            if (v[0] % m->tile || v[1] % m->tile)
                return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(pair), key,
                                  "%lldx%lld is not a multiple of the %lld-pixel tile", (long long)v[0],
                                  (long long)v[1], (long long)m->tile);
            v[0] /= m->tile;
            v[1] /= m->tile;
        }
        m->grids[m->n_grids][0] = (int)v[0];
        m->grids[m->n_grids][1] = (int)v[1];
        m->n_grids++;
    }
    return 0;
}

/* What each composite model_type is made of (transformers' LlavaConfig,
 * LlavaNextConfig, LlavaOnevisionConfig, InternVLConfig, Qwen2VLConfig,
 * Qwen2_5_VLConfig, Idefics3Config; OpenGVLab's InternVLChatConfig): the
 * key of its LLM mapping (NULL: the LLM keys sit at the root), the classes
 * its sub-configs default to, and the composite keys it reads or knows to
 * be costless. */
typedef struct composite {
    const char *type, *llm_key, *text_type, *vision_type;
} composite;

static const composite composites[] = {
    {"llava", "text_config", "llama", "clip_vision_model"},
    {"llava_next", "text_config", "llama", "clip_vision_model"},
    {"llava_onevision", "text_config", "qwen2", "siglip_vision_model"},
    {"internvl_chat", "llm_config", NULL, "intern_vit_6b"},
    {"internvl", "text_config", "qwen2", "internvl_vision"},
    {"qwen2_vl", NULL, "qwen2_vl_text", "qwen2_vl"},
    {"qwen2_5_vl", NULL, "qwen2_5_vl_text", "qwen2_5_vl"},
    {"idefics3", "text_config", "llama", "idefics3_vision"},
    {"mistral3", "text_config", "mistral", "pixtral"},
    {"ministral3", "text_config", "ministral3", "pixtral"},
    {"gemma3", "text_config", "gemma3_text", "siglip_vision_model"},
    {"qwen3_vl", "text_config", "qwen3_vl_text", "qwen3_vl"},
    {"idefics2", "text_config", "mistral", "idefics2_vision"},
    {"llama4", "text_config", "llama4_text", "llama4_vision_model"},
    {"mllama", "text_config", "mllama_text_model", "mllama_vision_model"},
    {NULL, NULL, NULL, NULL},
};

/* Composite keys that do not change cost: which encoder layer feeds the
 * projector (the whole tower runs either way), whether CLS is dropped (one
 * token in 577), the projector's activation, chat templates and processor
 * settings, LoRA switches of the original InternVL code. */
static const char *const composite_costless[] = {
    "vision_feature_layer", "vision_feature_select_strategy", "projector_hidden_act", "multimodal_projector_bias",
    "image_seq_length", "template", "ps_version", "select_layer", "dynamic_image_size", "min_dynamic_patch",
    "use_backbone_lora", "use_llm_lora", "pad2square", "vocab_size", "tie_word_embeddings", "use_cache",
    "text_config", "vision_config", "llm_config", "hidden_size", "output_attentions",
    "system_message", /* InternVL: the chat template's text */
    "boi_token_index", "eoi_token_index", /* Gemma 3's image delimiters */
    NULL,
};
static const char *const composite_read[] = {"use_image_newline_parameter", "mm_projector_type", "downsample_ratio", "force_image_size",
                                             "max_dynamic_patch", "use_thumbnail", "image_grid_pinpoints",
                                             "vision_aspect_ratio", "scale_factor", "spatial_merge_size", "mm_tokens_per_image", NULL};

/* LlavaOnevisionConfig's default image_grid_pinpoints: every [384 i, 384 j]
 * for i, j in 1..6; LlavaNextConfig's: 336x672, 672x336, 672x672,
 * 1008x336, 336x1008. */
static void default_grids(mm_model *m, bool onevision)
{
    static const int next[5][2] = {{1, 2}, {2, 1}, {2, 2}, {3, 1}, {1, 3}};
    m->n_grids = 0;
    for (int i = 1; i <= (onevision ? 6 : 5); i++)
        for (int j = 1; j <= (onevision ? 6 : 1); j++) {
            m->grids[m->n_grids][0] = onevision ? i : next[i - 1][0];
            m->grids[m->n_grids][1] = onevision ? j : next[i - 1][1];
            m->n_grids++;
        }
}

/* InternVL (both layouts): pixel shuffle by downsample_ratio, tiles up to
 * max_dynamic_patch plus a thumbnail. */
static int read_internvl(const mm_hf *r, mm_model *m)
{
    double ratio = 0.5;
    int64_t maxp = 12, fis = 0;
    bool thumb = true, found = false;
    int rc;
    if ((rc = mm_hf_double(r, "downsample_ratio", 0.01, 1.0, &ratio)) ||
        (rc = mm_hf_int(r, "max_dynamic_patch", 1, 4096, &maxp, NULL)) ||
        (rc = mm_hf_bool(r, "use_thumbnail", &thumb)) ||
        (rc = mm_hf_int(r, "force_image_size", 1, DIM_MAX, &fis, &found)))
        return rc;
    if (found && fis != m->vision.image_size)
        return mm_hf_fail(r, "force_image_size", "%lld differs from the tower's image_size %lld (resized "
                          "position tables are not modeled)", (long long)fis, (long long)m->vision.image_size);
    m->pixel_shuffle = ratio;
    m->max_tiles = (int)maxp + (thumb ? 1 : 0);
    return 0;
}

/* A composite's LLM, validated: the root itself (Qwen2-VL's flat layout),
 * or its mapping; transformers-native Qwen2.5-VL files may nest it in
 * text_config.  Unmodeled keys join those of *keys (the root's); another
 * error returns *keys instead when it holds any.  A part of
 * read_composite. */
static int composite_llm(const mm_doc *d, mm_node *root, const composite *c, bool flat, mm_hf *r, mm_model *m,
                         mm_err *keys, mm_err *err)
{
    int rc;
    const char *lk = flat && mm_node_get(root, "text_config") ? "text_config" : c->llm_key;
    mm_node *lm = lk ? mm_node_get(root, lk) : root;
    if (!lm || !mm_node_is_mapping(lm))
        return keys->code ? (*err = *keys, -MM_EINPUT)
                          : mm_hf_fail(r, lk ? lk : "model_type", "missing the LLM's sub-config (a mapping)");
    char ttype[64] = "";
    mm_hf tr = {d, lm, lk ? lk : "", NULL, err};
    if ((rc = mm_hf_str(&tr, "model_type", ttype, sizeof ttype)))
        return keys->code ? (*err = *keys, -MM_EINPUT) : rc;
    const char *force = flat ? c->text_type : (!ttype[0] ? c->text_type : NULL);
    if ((rc = mm_llm_from_node_typed(d, lm, lk ? lk : "", force, &m->llm, err)) ||
        (rc = mm_llm_validate(&m->llm, err))) {
        if (!mm_hf_is_keys_error(err))
            return keys->code ? (*err = *keys, -MM_EINPUT) : rc;
        mm_hf_join_keys_error(keys, err);
    }
    return 0;
}

/* LLaVA-NeXT's and LLaVA-OneVision's image newline, grids and (OneVision)
 * frame pooling and grid cap; a part of read_composite. */
static int llava_anyres(const mm_doc *d, mm_node *root, const char *type, mm_hf *r, mm_model *m)
{
    int rc;
    mm_err *err = r->err;
    bool next = !strcmp(type, "llava_next"), ov = !strcmp(type, "llava_onevision");
    if (next || ov) {
        m->extra_params = m->llm.hidden; /* image_newline */
        m->max_tiles = 0;                /* the largest grid plus the base image (finish_grids) */
        mm_node *pp = mm_node_get(root, "image_grid_pinpoints");
        if (pp && !mm_node_is_null(pp)) {
            if ((rc = read_pinpoints(d, pp, "image_grid_pinpoints", m, true, err)))
                return rc;
        } else {
            default_grids(m, ov);
        }
    }
    if (ov) {
        /* LLaVA-OneVision: video frames pooled 2x2 (get_video_features,
         * bilinear to ceil(27/2)); anyres_max_9 caps an image's grid. */
        char ar[32] = "anyres_max_9";
        int mx = 0, used = 0;
        if ((rc = mm_hf_str(r, "vision_aspect_ratio", ar, sizeof ar)))
            return rc;
        if (sscanf(ar, "anyres_max_%d%n", &mx, &used) == 1 && used == (int)strlen(ar) && mx >= 1 && mx <= 64)
            m->anyres_max = mx;
        else if (strcmp(ar, "anyres"))
            return mm_hf_fail(r, "vision_aspect_ratio", "unknown '%s' (anyres, anyres_max_N)", ar);
        m->frame_pool = 2;
    }
    return 0;
}

/* A vision-language model_type whose one unmodeled feature is named:
 * refused by that feature's key; 0 for any other type (none at present).
 * A part of read_composite. */
static int refuse_unmodeled(const mm_doc *d, mm_node *root, const char *type, mm_err *err)
{
    /* Vision-language types whose one unmodeled feature is named. */
    static const struct { const char *type, *sub, *key, *why; } named[] = {
        {NULL, NULL, NULL, NULL},
    };
    for (int i = 0; named[i].type; i++)
        if (!strcmp(type, named[i].type)) {
            mm_node *sm = named[i].sub ? mm_node_get(root, named[i].sub) : NULL;
            mm_hf nr = {d, sm && mm_node_is_mapping(sm) ? sm : root, sm ? named[i].sub : "", type, err};
            return mm_hf_fail(&nr, named[i].key, "%s", named[i].why);
        }
    return 0;
}

/* Gemma 3's projector; a part of read_composite. */
static int gemma3_projector(mm_hf *r, mm_model *m)
{
    int rc;
    /* Gemma3MultiModalProjector: the (image/patch)^2 grid averaged in
     * square pools down to mm_tokens_per_image (Gemma3Config: 256; 64 x
     * 64 SigLIP patches at 896 px pooled 4 x 4) */
    int64_t ntok = 256, g = m->vision.image_size / m->vision.patch_size;
    if ((rc = mm_hf_int(r, "mm_tokens_per_image", 1, DIM_MAX, &ntok, NULL)))
        return rc;
    int64_t side = (int64_t)llround(sqrt((double)ntok));
    if (side * side != ntok || g % side)
        return mm_hf_fail(r, "mm_tokens_per_image", "%lld tokens are not a square that divides the %lld x %lld "
                          "patch grid", (long long)ntok, (long long)g, (long long)g);
    m->vision_proj = (mm_projector){.type = MM_PROJ_GEMMA3, .depth = 1, .in = 0, .out = 0, .rmsnorm = true, .norm_dim = 0, .bias = false};
    m->pixel_shuffle = (double)side / (double)g;
    size_projector(&m->vision_proj, &m->vision, &m->llm, m->pixel_shuffle);
    return 0;
}

/* Idefics2's connector (Idefics2PerceiverConfig; modeling_idefics2.py at
 * huggingface/transformers @ f503927): the perceiver_config mapping, or
 * its class defaults when the file has none.  Its hidden_size is the
 * LLM's whatever the file says (Idefics2Config overwrites it with
 * text_config's); qk_layer_norms_perceiver (older files) builds nothing in
 * the current class.  The LLM sees resampler_n_latents tokens per image.
 * A part of composite_projector. */
static int idefics2_projector(const mm_doc *d, mm_node *root, mm_model *m, mm_err *err)
{
    int rc;
    mm_node *pc = mm_node_get(root, "perceiver_config");
    if (pc && !mm_node_is_null(pc) && !mm_node_is_mapping(pc))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(pc), "perceiver_config", "expected a mapping");
    mm_hf r = {d, pc && !mm_node_is_null(pc) ? pc : NULL, "perceiver_config", "idefics2_perceiver", err};
    static const char *const read[] = {"resampler_n_latents", "resampler_depth", "resampler_n_heads",
                                       "resampler_head_dim", "num_key_value_heads", "hidden_act", "hidden_size", NULL};
    static const char *const costless[] = {"qk_layer_norms_perceiver", NULL};
    mm_projector *p = &m->vision_proj;
    *p = (mm_projector){.type = MM_PROJ_PERCEIVER, .depth = 1, .in = 0, .out = 0, .rmsnorm = true, .norm_dim = 0, .bias = false};
    int64_t depth = 0;
    char act[32] = "";
    if ((rc = mm_hf_check_keys(&r, read, costless)) ||
        (rc = mm_hf_need_int(&r, "resampler_n_latents", 1, DIM_MAX, &p->latents)) ||
        (rc = mm_hf_need_int(&r, "resampler_depth", 1, 1024, &depth)) ||
        (rc = mm_hf_need_int(&r, "resampler_n_heads", 1, DIM_MAX, &p->heads)) ||
        (rc = mm_hf_need_int(&r, "resampler_head_dim", 1, DIM_MAX, &p->head_dim)) ||
        (rc = mm_hf_need_int(&r, "num_key_value_heads", 1, DIM_MAX, &p->kv_heads)) ||
        (rc = mm_hf_str(&r, "hidden_act", act, sizeof act)) || (rc = mm_hf_act(&r, "hidden_act", act)))
        return rc;
    if (p->heads % p->kv_heads)
        return mm_hf_fail(&r, "num_key_value_heads", "%lld key/value heads do not divide the %lld heads",
                          (long long)p->kv_heads, (long long)p->heads);
    if (p->heads * p->head_dim > DIM_MAX)
        return mm_hf_fail(&r, "resampler_head_dim", "heads x head_dim exceeds %lld", (long long)DIM_MAX);
    p->layers = (int)depth;
    p->ffn = m->llm.ffn; /* modality_projection: Idefics2MLP(vision width, text intermediate_size, text width) */
    int64_t g = m->vision.image_size / m->vision.patch_size;
    p->ctx = g * g;
    /* tokens per tile come out as g^2 x shuffle^2 = the latents */
    m->pixel_shuffle = sqrt((double)p->latents) / (double)g;
    size_projector(p, &m->vision, &m->llm, m->pixel_shuffle);
    return 0;
}

/* Llama 4's vision adapter and projector (Llama4VisionPixelShuffleMLP,
 * Llama4VisionMLP2, Llama4MultiModalProjector in modeling_llama4.py @
 * 63210d0), sized by the vision_config: pixel_shuffle_ratio (0.5) folds
 * ratio^-2 patches into one token (the class token dropped), fc1 takes
 * intermediate_size inputs (it must be that folded width) to
 * projector_input_dim, fc2 to projector_output_dim, linear_1 from
 * vision_output_dim (the same width) to the LLM's.  A part of
 * composite_projector. */
static int llama4_projector(const mm_doc *d, mm_node *root, mm_model *m, mm_err *err)
{
    int rc;
    mm_hf r = {d, mm_node_get(root, "vision_config"), "vision_config", "llama4_vision_model", err};
    double ratio = 0.5;
    int64_t pin = 0, pout = 0, vout = 0, fin = 0;
    if ((rc = mm_hf_double(&r, "pixel_shuffle_ratio", 0.01, 1.0, &ratio)) ||
        (rc = mm_hf_need_int(&r, "projector_input_dim", 1, DIM_MAX, &pin)) ||
        (rc = mm_hf_need_int(&r, "projector_output_dim", 1, DIM_MAX, &pout)) ||
        (rc = mm_hf_need_int(&r, "vision_output_dim", 1, DIM_MAX, &vout)) ||
        (rc = mm_hf_need_int(&r, "intermediate_size", 1, DIM_MAX, &fin)))
        return rc;
    int64_t g = m->vision.image_size / m->vision.patch_size, side = (int64_t)llround((double)g * ratio);
    int64_t folded = (int64_t)llround((double)m->vision.hidden / (ratio * ratio));
    if (fabs((double)side - (double)g * ratio) > 1e-9 || folded != fin)
        return mm_hf_fail(&r, "pixel_shuffle_ratio", "%g does not fold the %lld x %lld grid of width %lld into "
                          "intermediate_size %lld (the adapter's fc1 input)", ratio, (long long)g, (long long)g,
                          (long long)m->vision.hidden, (long long)fin);
    if (pout != vout)
        return mm_hf_fail(&r, "vision_output_dim", "%lld differs from projector_output_dim %lld (the projector's "
                          "input)", (long long)vout, (long long)pout);
    m->vision_proj = (mm_projector){.type = MM_PROJ_LLAMA4, .depth = 3, .ffn = pin, .mid = pout};
    m->pixel_shuffle = ratio;
    size_projector(&m->vision_proj, &m->vision, &m->llm, m->pixel_shuffle);
    return 0;
}

/* Mistral 3's (and Ministral 3's) projector; a part of read_composite. */
static int mistral3_projector(mm_hf *r, mm_node *root, mm_model *m)
{
    int rc;
    /* Mistral3MultiModalProjector: spatial_merge_size^2 patches merged
     * into one token; vision_feature_layer an int (one layer's
     * features; a list would widen the norm and merger) */
    int64_t merge2 = 2;
    bool pb = false;
    mm_node *vfl = mm_node_get(root, "vision_feature_layer");
    if (vfl && mm_node_is_sequence(vfl))
        return mm_hf_fail(r, "vision_feature_layer", "several feature layers concatenated are not modeled");
    if ((rc = mm_hf_int(r, "spatial_merge_size", 1, 64, &merge2, NULL)) ||
        (rc = mm_hf_bool(r, "multimodal_projector_bias", &pb)))
        return rc;
    m->vision_proj = (mm_projector){.type = MM_PROJ_MISTRAL3, .depth = 3, .in = 0, .out = 0, .rmsnorm = false, .norm_dim = 0, .bias = pb};
    m->pixel_shuffle = 1.0 / (double)merge2;
    m->dynamic = true;
    size_projector(&m->vision_proj, &m->vision, &m->llm, m->pixel_shuffle);
    return 0;
}

/* A composite's projector, once its LLM and tower are read: the tower's
 * own merger (Qwen2-VL), or the projector its model_type or
 * mm_projector_type names, with its grids.  A part of read_composite. */
static int composite_projector(const mm_doc *d, mm_node *root, const char *type, mm_hf *r, const mm_projector *merger,
                               int64_t merge, mm_model *m, mm_err *err)
{
    int rc;
    m->has_vision = m->has_llm = true;
    m->tile = m->vision.image_size;
    m->pixel_shuffle = 1.0;
    m->dynamic = !strcmp(m->vision.model_type, "pixtral"); /* any resolution (Pixtral-12B is a llava) */
    bool internvl = !strcmp(type, "internvl_chat") || !strcmp(type, "internvl");
    if (merger->type == MM_PROJ_QWEN_MERGER) {
        /* The merger concatenates merge x merge neighbouring patches. */
        m->vision_proj = *merger;
        m->pixel_shuffle = 1.0 / (double)merge;
        m->dynamic = true;
        size_projector(&m->vision_proj, &m->vision, &m->llm, m->pixel_shuffle);
        if (merger->out != m->llm.hidden)
            return mm_hf_fail(r, "vision_config", "the merger's output width %lld is not the LLM's %lld",
                              (long long)merger->out, (long long)m->llm.hidden);
        return 0;
    }
    char ptype[64] = "mlp2x_gelu"; /* LlavaMultiModalProjector: linear_1, act, linear_2 */
    if (internvl)
        snprintf(ptype, sizeof ptype, "internvl");
    if ((rc = mm_hf_str(r, "mm_projector_type", ptype, sizeof ptype)))
        return rc;
    if (!strcmp(type, "gemma3"))
        return gemma3_projector(r, m);
    if (!strcmp(type, "idefics2"))
        return idefics2_projector(d, root, m, err);
    if (!strcmp(type, "llama4"))
        return llama4_projector(d, root, m, err);
    if (!strcmp(type, "mllama")) {
        mm_hf vr = {d, mm_node_get(root, "vision_config"), "vision_config", "mllama_vision_model", err};
        return mm_mllama_finish(&vr, m);
    }
    if (!strcmp(type, "mistral3") || !strcmp(type, "ministral3"))
        return mistral3_projector(r, root, m);
    if (!strcmp(type, "idefics3")) {
        int64_t scale = 2; /* Idefics3Config scale_factor */
        if ((rc = mm_hf_int(r, "scale_factor", 1, 64, &scale, NULL)))
            return rc;
        m->vision_proj = (mm_projector){.type = MM_PROJ_IDEFICS3, .depth = 1, .in = 0, .out = 0, .rmsnorm = false, .norm_dim = 0, .bias = false};
        m->pixel_shuffle = 1.0 / (double)scale;
    } else if ((rc = parse_projector(d, mm_node_get(root, "mm_projector_type"), "mm_projector_type", ptype,
                                     &m->vision_proj, err))) {
        return rc;
    }
    if (internvl && (rc = read_internvl(r, m)))
        return rc;
    if ((rc = llava_anyres(d, root, type, r, m)))
        return rc;
    finish_grids(m);
    size_projector(&m->vision_proj, &m->vision, &m->llm, m->pixel_shuffle);
    return 0;
}

/* A Hugging Face composite: its LLM, its vision tower and the projector
 * between them, each from its own sub-config. */
static int read_composite(const mm_doc *d, mm_node *root, const char *type, mm_model *m, mm_err *err)
{
    int rc;
    mm_err scratch; /* the errors are read back below, even when the caller passes none */
    if (!err) {
        mm_err_clear(&scratch);
        err = &scratch;
    }
    const composite *c = composites;
    while (c->type && strcmp(c->type, type))
        c++;
    mm_hf r = {d, root, "", type, err};
    if ((rc = refuse_unmodeled(d, root, type, err)))
        return rc;
    if (!c->type)
        return mm_hf_fail(&r, "model_type", "unknown multimodal model_type '%s' (mmsim reads llava, llava_next, "
                          "llava_onevision, internvl_chat, internvl, qwen2_vl, qwen2_5_vl, qwen3_vl, idefics2, "
                          "idefics3, mistral3, ministral3, gemma3, llama4, mllama, phi3_v, qwen2_audio; "
                          "docs/models.md)",
                          type);
    bool flat = c->llm_key == NULL;
    /* Unmodeled keys of the root, the LLM's and the tower's mappings are
     * reported together: each reader checks its keys first, so on such a
     * refusal the next mapping is still read for its own. */
    mm_err keys;
    mm_err_clear(&keys);
    const char *accept[64]; /* the costless keys, and Idefics2's perceiver (read by idefics2_projector) */
    int na = 0;
    for (const char *const *k = composite_costless; *k && na < 62; k++)
        accept[na++] = *k;
    if (!strcmp(type, "idefics2"))
        accept[na++] = "perceiver_config";
    accept[na] = NULL;
    if (!flat && (rc = mm_hf_check_keys(&r, composite_read, accept))) {
        if (!mm_hf_is_keys_error(err))
            return rc;
        keys = *err;
    }
    if ((rc = mm_llm_check_architectures(d, root, "", err)))
        return keys.code ? (*err = keys, -MM_EINPUT) : rc;
    if ((rc = composite_llm(d, root, c, flat, &r, m, &keys, err)))
        return rc;
    mm_node *vm = mm_node_get(root, "vision_config");
    if (!vm)
        return keys.code ? (*err = keys, -MM_EINPUT)
                         : mm_hf_fail(&r, "vision_config", "missing the vision tower's sub-config");
    int64_t merge = 1;
    mm_projector merger = {.type = MM_PROJ_NONE};
    rc = read_encoder_as(d, vm, "vision_config", c->vision_type, &m->vision, &merger, &merge, err);
    if (rc && mm_hf_is_keys_error(err))
        mm_hf_join_keys_error(&keys, err);
    if (keys.code) { /* every mapping's unmodeled keys in one message */
        *err = keys;
        return -MM_EINPUT;
    }
    if (rc)
        return rc;
    return composite_projector(d, root, type, &r, &merger, merge, m, err);
}

/* Phi-3-vision / Phi-3.5-vision (microsoft/Phi-3.5-vision-instruct, remote
 * code: configuration_phi3_v.py, modeling_phi3_v.py, image_embedding_phi3_v.py):
 * the Phi-3 LLM's keys at the root; img_processor names the CLIP tower by
 * its repository, whose sizes the file does not carry; embd_layer sets the
 * HD transform: each 336-px crop's 24 x 24 patches are concatenated 2 x 2
 * (144 tokens of 4 x image_dim_out), then img_projection Linear(4c, h),
 * GELU, Linear(h, h), with the learned separators glb_GN and sub_GN (4c
 * each) between crops. */
#define PHI3V_CLIP "openai/clip-vit-large-patch14-336"

static int read_phi3v(const mm_doc *d, mm_node *root, mm_model *m, mm_err *err)
{
    int rc;
    mm_hf r = {d, root, "", "phi3_v", err};
    if ((rc = mm_llm_from_node_typed(d, root, "", "phi3_v", &m->llm, err)) || (rc = mm_llm_validate(&m->llm, err)))
        return rc;
    mm_node *ip = mm_node_get(root, "img_processor"), *el = mm_node_get(root, "embd_layer");
    if (!ip || !mm_node_is_mapping(ip))
        return mm_hf_fail(&r, "img_processor", "missing the image processor's mapping (the CLIP tower)");
    if (!el || !mm_node_is_mapping(el))
        return mm_hf_fail(&r, "embd_layer", "missing the image embedding's mapping");
    mm_hf ir = {d, ip, "img_processor", NULL, err}, er = {d, el, "embd_layer", NULL, err};
    static const char *const iread[] = {"image_dim_out", "model_name", "name", "num_img_tokens", NULL};
    static const char *const eread[] = {"embedding_cls", "hd_transform_order", "projection_cls", "use_hd_transform",
                                        "with_learnable_separator", NULL};
    char name[128] = "", cls[32] = "image", proj[32] = "linear";
    int64_t dim = 0, ntok = 0;
    bool hd = false, sep = false, fnt = false;
    if ((rc = mm_hf_check_keys(&ir, iread, NULL)) || (rc = mm_hf_check_keys(&er, eread, NULL)) ||
        (rc = mm_hf_str(&ir, "model_name", name, sizeof name)) ||
        (rc = mm_hf_need_int(&ir, "image_dim_out", 1, DIM_MAX, &dim)) ||
        (rc = mm_hf_int(&ir, "num_img_tokens", 1, DIM_MAX, &ntok, &fnt)) ||
        (rc = mm_hf_str(&er, "embedding_cls", cls, sizeof cls)) ||
        (rc = mm_hf_str(&er, "projection_cls", proj, sizeof proj)) ||
        (rc = mm_hf_bool(&er, "use_hd_transform", &hd)) || (rc = mm_hf_bool(&er, "with_learnable_separator", &sep)))
        return rc;
    if (strcmp(name, PHI3V_CLIP))
        return mm_hf_fail(&ir, "model_name", "'%s': mmsim knows the sizes of %s only", name, PHI3V_CLIP);
    if (strcmp(cls, "image"))
        return mm_hf_fail(&er, "embedding_cls", "'%s' is not modeled (image)", cls);
    if (!hd || strcmp(proj, "mlp"))
        return mm_hf_fail(&er, !hd ? "use_hd_transform" : "projection_cls", "only the HD transform with the "
                          "mlp projection (Phi-3.5-vision's) is modeled");
    /* openai/clip-vit-large-patch14-336 config.json, vision_config:
     * hidden 1024, intermediate 4096, 24 layers, 16 heads, 336 px, 14-px
     * patches, quick_gelu; CLIPVisionModel as read_vit builds it */
    mm_encoder *e = &m->vision;
    memset(e, 0, sizeof *e);
    *e = (mm_encoder){.kind = MM_ENC_VISION, .hidden = 1024, .layers = 24, .heads = 16, .head_dim = 64, .ffn = 4096,
                      .image_size = 336, .patch_size = 14, .channels = 3, .cls_token = true, .pre_norm = true,
                      .post_norm = true, .qkv_bias = true, .out_bias = true, .mlp_bias = true, .k_bias = true};
    snprintf(e->model_type, sizeof e->model_type, "clip_vision_model");
    if (dim != e->hidden)
        return mm_hf_fail(&ir, "image_dim_out", "%lld is not %s's width %lld", (long long)dim, PHI3V_CLIP,
                          (long long)e->hidden);
    if (fnt && ntok != 144)
        return mm_hf_fail(&ir, "num_img_tokens", "%lld: the HD transform makes (336/14)^2 / 4 = 144", (long long)ntok);
    m->has_vision = m->has_llm = true;
    m->tile = e->image_size;
    m->pixel_shuffle = 0.5; /* 2 x 2 patches concatenated */
    m->vision_proj = (mm_projector){.type = MM_PROJ_MLP_GELU, .depth = 2, .in = 0, .out = 0, .rmsnorm = false, .norm_dim = 0, .bias = false};
    m->extra_params = sep ? 2 * 4 * dim : 0; /* glb_GN, sub_GN */
    size_projector(&m->vision_proj, e, &m->llm, m->pixel_shuffle);
    return 0;
}

/* Qwen2-Audio (configuration_qwen2_audio.py, modeling_qwen2_audio.py): a
 * Qwen2 LLM in text_config; audio_config a Qwen2AudioEncoder, Whisper's
 * encoder (conv stem, learned positions, blocks, final LayerNorm) followed
 * by AvgPool1d(2), which has no weights (the workload's 2x audio pooling);
 * multi_modal_projector one Linear(d_model, hidden) with bias. */
static int read_qwen2_audio(const mm_doc *d, mm_node *root, mm_model *m, mm_err *err)
{
    int rc;
    mm_hf r = {d, root, "", "qwen2_audio", err};
    static const char *const read[] = {"text_config", "audio_config", NULL};
    static const char *const costless[] = {"audio_token_index", "vocab_size", NULL};
    if ((rc = mm_hf_check_keys(&r, read, costless)) || (rc = mm_llm_check_architectures(d, root, "", err)))
        return rc;
    mm_node *tc = mm_node_get(root, "text_config"), *ac = mm_node_get(root, "audio_config");
    if (!tc || !mm_node_is_mapping(tc))
        return mm_hf_fail(&r, "text_config", "missing the LLM's sub-config (a mapping)");
    if (!ac || !mm_node_is_mapping(ac))
        return mm_hf_fail(&r, "audio_config", "missing the audio tower's sub-config (a mapping)");
    char ttype[64] = "";
    mm_hf tr = {d, tc, "text_config", NULL, err};
    if ((rc = mm_hf_str(&tr, "model_type", ttype, sizeof ttype)) ||
        (rc = mm_llm_from_node_typed(d, tc, "text_config", ttype[0] ? NULL : "qwen2", &m->llm, err)) ||
        (rc = mm_llm_validate(&m->llm, err)) ||
        (rc = read_encoder_as(d, ac, "audio_config", "qwen2_audio_encoder", &m->audio, NULL, NULL, err)))
        return rc;
    if (m->audio.kind != MM_ENC_AUDIO)
        return mm_hf_fail(&r, "audio_config", "'%s' is not an audio encoder", m->audio.model_type);
    m->has_llm = m->has_audio = true;
    m->audio_proj = (mm_projector){.type = MM_PROJ_LINEAR, .depth = 1, .in = 0, .out = 0, .rmsnorm = false, .norm_dim = 0, .bias = false};
    size_projector(&m->audio_proj, &m->audio, &m->llm, 1.0);
    return 0;
}

/* Resolves a part's path relative to the YAML file's folder. */
static void part_path(const char *yaml, const char *rel, char *out, size_t len)
{
    const char *slash = strrchr(yaml, '/');
    if (rel[0] == '/' || !slash)
        snprintf(out, len, "%s", rel);
    else
        snprintf(out, len, "%.*s/%s", (int)(slash - yaml), yaml, rel);
}

static const char *const yaml_keys[] = {"name", "vision", "audio", "llm", "projector", "audio_projector",
                                        "image", "source", NULL};
static const char *const proj_keys[] = {"type", "hidden", "norm", "bias", NULL};
static const char *const image_keys[] = {"tile", "max_tiles", "pixel_shuffle", "grids", "frame_pool", "anyres_max",
                                         NULL};

static int load_part(const mm_doc *d, mm_node *root, const char *key, mm_model *part, mm_err *err)
{
    mm_node *n = mm_node_get(root, key);
    if (n && mm_node_is_mapping(n)) /* the part's config inline (`mmsim run --megatron-script` writes one) */
        return mm_model_from_node(d, n, key, part, err);
    char rel[512], path[1024];
    int rc = mm_node_str(d, root, key, key, rel, sizeof rel, NULL, err);
    if (rc)
        return rc;
    part_path(d->path, rel, path, sizeof path);
    rc = mm_model_load(path, part, err);
    return rc;
}

/* The parts a YAML form names by path (llm, vision, audio), each loaded
 * and checked to be what its key says; a part of read_yaml_form. */
static int load_parts(const mm_doc *d, mm_node *root, mm_model *m, mm_err *err)
{
    int rc;
    mm_model part;
    if (mm_node_get(root, "llm")) {
        if ((rc = load_part(d, root, "llm", &part, err)))
            return rc;
        if (!part.has_llm || part.has_vision || part.has_audio)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(root, "llm"), "llm",
                              "'%s' is not an LLM config", part.source);
        m->llm = part.llm;
        m->has_llm = true;
    }
    const char *enc_keys[2] = {"vision", "audio"};
    for (int i = 0; i < 2; i++) {
        if (!mm_node_get(root, enc_keys[i]))
            continue;
        if ((rc = load_part(d, root, enc_keys[i], &part, err)))
            return rc;
        bool ok = i == 0 ? part.has_vision && !part.has_llm : part.has_audio && !part.has_llm;
        if (!ok)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(root, enc_keys[i]), enc_keys[i],
                              "'%s' is not a %s encoder config", part.source, enc_keys[i]);
        if (i == 0) {
            m->vision = part.vision;
            m->has_vision = true;
        } else {
            m->audio = part.audio;
            m->has_audio = true;
        }
    }
    return 0;
}

/* The YAML form's image: {tile, max_tiles, pixel_shuffle, frame_pool,
 * anyres_max, grids}; a part of read_yaml_form. */
static int read_image_keys(const mm_doc *d, mm_node *im, mm_model *m, mm_err *err)
{
    int rc;
    int64_t maxt = 0;
    if ((rc = mm_node_check_keys(d, im, "image", image_keys, err)) ||
        (rc = mm_node_int(d, im, "tile", "image.tile", 1, 1 << 20, &m->tile, NULL, err)) ||
        (rc = mm_node_int(d, im, "max_tiles", "image.max_tiles", 1, 4096, &maxt, NULL, err)) ||
        (rc = mm_node_double(d, im, "pixel_shuffle", "image.pixel_shuffle", 0.01, 1.0, &m->pixel_shuffle,
                             NULL, err)))
        return rc;
    m->max_tiles = (int)maxt;
    int64_t pool = 0, amax = 0; /* as llava_onevision's frame pooling and anyres_max_N */
    if ((rc = mm_node_int(d, im, "frame_pool", "image.frame_pool", 1, 16, &pool, NULL, err)) ||
        (rc = mm_node_int(d, im, "anyres_max", "image.anyres_max", 1, 64, &amax, NULL, err)))
        return rc;
    m->frame_pool = (int)pool;
    m->anyres_max = (int)amax;
    mm_node *g = mm_node_get(im, "grids");
    if (g && (rc = read_pinpoints(d, g, "image.grids", m, false, err)))
        return rc;
    return 0;
}

/* megatron_mlp's keys: hidden (its ffn_hidden_size, required), norm
 * (none | layernorm | rmsnorm), bias (add_bias_linear); the other types
 * take none of them.  A part of read_yaml_form. */
static int megatron_projector_keys(const mm_doc *d, mm_node *p, const char *key, mm_projector *pj, mm_err *err)
{
    char k[64], norm[32] = "none";
    const char *extra[] = {"hidden", "norm", "bias"};
    for (int i = 0; i < 3; i++)
        if (pj->type != MM_PROJ_MEGATRON && mm_node_get(p, extra[i])) {
            snprintf(k, sizeof k, "%s.%s", key, extra[i]);
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(p, extra[i]), k,
                              "only a megatron_mlp projector takes it");
        }
    if (pj->type != MM_PROJ_MEGATRON)
        return 0;
    int rc;
    bool found = false;
    snprintf(k, sizeof k, "%s.hidden", key);
    if ((rc = mm_node_int(d, p, "hidden", k, 1, 1 << 20, &pj->mid, &found, err)))
        return rc;
    if (!found)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(p), k, "missing required key");
    snprintf(k, sizeof k, "%s.norm", key);
    if ((rc = mm_node_str(d, p, "norm", k, norm, sizeof norm, NULL, err)))
        return rc;
    if (strcmp(norm, "none") && strcmp(norm, "layernorm") && strcmp(norm, "rmsnorm"))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(p, "norm"), k,
                          "unknown norm '%s' (none, layernorm, rmsnorm)", norm);
    pj->norm = strcmp(norm, "none") != 0;
    pj->rmsnorm = !strcmp(norm, "rmsnorm");
    snprintf(k, sizeof k, "%s.bias", key);
    return mm_node_bool(d, p, "bias", k, &pj->bias, NULL, err);
}

static int read_yaml_form(const mm_doc *d, mm_node *root, mm_model *m, mm_err *err)
{
    int rc = mm_node_check_keys(d, root, "", yaml_keys, err);
    if (rc)
        return rc;
    if ((rc = load_parts(d, root, m, err)))
        return rc;
    if (!m->has_llm && (m->has_vision || m->has_audio) && (mm_node_get(root, "projector") || mm_node_get(root, "audio_projector")))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(root), "llm", "a projector needs an llm");
    m->pixel_shuffle = 1.0;
    m->tile = m->has_vision ? m->vision.image_size : 0;
    const char *pkeys[2] = {"projector", "audio_projector"};
    mm_projector *pj[2] = {&m->vision_proj, &m->audio_proj};
    for (int i = 0; i < 2; i++) {
        mm_node *p = mm_node_get(root, pkeys[i]);
        if (!p)
            continue;
        char type[64] = "", kp[64];
        snprintf(kp, sizeof kp, "%s.type", pkeys[i]);
        bool found = false;
        if ((rc = mm_node_check_keys(d, p, pkeys[i], proj_keys, err)) ||
            (rc = mm_node_str(d, p, "type", kp, type, sizeof type, &found, err)))
            return rc;
        if (!found)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(p), kp, "missing required key");
        if ((rc = parse_projector(d, mm_node_get(p, "type"), kp, type, pj[i], err)) ||
            (rc = megatron_projector_keys(d, p, pkeys[i], pj[i], err)))
            return rc;
    }
    mm_node *im = mm_node_get(root, "image");
    if (im && (rc = read_image_keys(d, im, m, err)))
        return rc;
    if (m->has_vision && m->tile != m->vision.image_size)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(im, "tile"), "image.tile",
                          "tile %lld differs from the vision encoder's image size %lld", (long long)m->tile,
                          (long long)m->vision.image_size);
    finish_grids(m);
    if (m->has_vision && m->vision_proj.type == MM_PROJ_NONE && m->has_llm)
        m->vision_proj = (mm_projector){.type = MM_PROJ_MLP_GELU, .depth = 2, .in = 0, .out = 0, .rmsnorm = false, .norm_dim = 0, .bias = false};
    if (m->has_audio && m->audio_proj.type == MM_PROJ_NONE && m->has_llm)
        m->audio_proj = (mm_projector){.type = MM_PROJ_LINEAR, .depth = 1, .in = 0, .out = 0, .rmsnorm = false, .norm_dim = 0, .bias = false};
    if (m->has_llm) {
        size_projector(&m->vision_proj, &m->vision, &m->llm, m->pixel_shuffle);
        size_projector(&m->audio_proj, &m->audio, &m->llm, 1.0);
    }
    if (!m->has_llm && !m->has_vision && !m->has_audio)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(root), "llm",
                          "a model needs at least one of llm, vision, audio");
    if (mm_node_get(root, "name"))
        return mm_node_str(d, root, "name", "name", m->name, sizeof m->name, NULL, err);
    return 0;
}

/* True when the root is our YAML form: a part named by a path, or given
 * inline as a mapping (no Hugging Face config has these keys). */
static bool is_yaml_form(mm_node *root)
{
    const char *k[] = {"llm", "vision", "audio"};
    for (int i = 0; i < 3; i++) {
        mm_node *n = mm_node_get(root, k[i]);
        if (n && (mm_node_is_scalar(n) || mm_node_is_mapping(n)))
            return true;
    }
    return false;
}

int mm_model_load(const char *path, mm_model *m, mm_err *err)
{
    memset(m, 0, sizeof *m);
    mm_doc d;
    memset(&d, 0, sizeof d);
    int rc = mm_doc_load_file(&d, path, err);
    if (rc)
        return rc;
    rc = mm_model_from_node(&d, mm_doc_root(&d), path, m, err);
    mm_doc_free(&d);
    return rc;
}

int mm_model_from_node(const mm_doc *doc, mm_node *root, const char *name, mm_model *m, mm_err *err)
{
    memset(m, 0, sizeof *m);
    const char *path = name;
    int rc = 0;
    char type[64] = "";
    if (!root || !mm_node_is_mapping(root))
        return mm_err_set(err, MM_EINPUT, doc->path, mm_node_line(root), "", "expected a mapping of config keys");
    if (mm_node_get(root, "model_type") &&
        (rc = mm_node_str(doc, root, "model_type", "model_type", type, sizeof type, NULL, err)))
        return rc;
    m->pixel_shuffle = 1.0;
    m->max_tiles = 1;
    if (is_yaml_form(root)) {
        m->max_tiles = 0;
        rc = read_yaml_form(doc, root, m, err);
    } else if ((!strcmp(type, "clip") || !strcmp(type, "siglip")) && mm_node_get(root, "vision_config")) {
        /* a dual encoder: its vision tower (the text tower is not used) */
        mm_node *vc = mm_node_get(root, "vision_config");
        char vt[64] = "clip_vision_model";
        if (!strcmp(type, "siglip"))
            snprintf(vt, sizeof vt, "siglip_vision_model");
        memset(&m->vision, 0, sizeof m->vision);
        rc = read_vit(doc, vc, "vision_config", vt, &m->vision, err);
        m->has_vision = rc == 0;
        m->tile = m->vision.image_size;
    } else if ((in_list(type, vision_types) && !mm_node_get(root, "vision_config")) || !strcmp(type, "whisper")) {
        rc = read_encoder(doc, root, "", !strcmp(type, "whisper") ? &m->audio : &m->vision, err);
        m->has_audio = !strcmp(type, "whisper");
        m->has_vision = !m->has_audio;
        m->tile = m->vision.image_size;
    } else if (!strcmp(type, "qwen2_audio")) {
        rc = read_qwen2_audio(doc, root, m, err);
    } else if (!strcmp(type, "phi3_v")) {
        rc = read_phi3v(doc, root, m, err);
    } else if (mm_node_get(root, "vision_config")) {
        rc = read_composite(doc, root, type, m, err);
    } else {
        rc = mm_llm_from_node(doc, root, "", &m->llm, err);
        if (rc == 0)
            rc = mm_llm_validate(&m->llm, err);
        m->has_llm = rc == 0;
    }
    if (rc)
        return rc;
    if (!m->name[0])
        stem_name(path, m->name, sizeof m->name);
    snprintf(m->source, sizeof m->source, "%s", path);
    if (m->has_llm) {
        stem_name(path, m->llm.name, sizeof m->llm.name);
        if (!m->llm.source[0])
            snprintf(m->llm.source, sizeof m->llm.source, "%s", path);
    }
    mm_encoder *encs[2] = {m->has_vision ? &m->vision : NULL, m->has_audio ? &m->audio : NULL};
    for (int i = 0; i < 2; i++)
        if (encs[i] && !encs[i]->source[0]) {
            stem_name(path, encs[i]->name, sizeof encs[i]->name);
            snprintf(encs[i]->source, sizeof encs[i]->source, "%s", path);
        }
    return 0;
}

