/* megatron_mm.c - Megatron-LM's multimodal example as data (megatron_mm.h):
 * its argument list's own arguments, the vision towers and language models
 * its config.py names, at NVIDIA/Megatron-LM d98e8a64dd
 * (MM_MG_ARGS_COMMIT):
 *   examples/multimodal/multimodal_args.py   the arguments train.py adds;
 *   examples/multimodal/config.py            get_vision_model_config,
 *                                            get_language_model_config,
 *                                            get_vision_projection_config;
 *   examples/multimodal/model.py             what the arguments build.
 * The hyperparameters are Megatron-LM's (facts); the classes and reasons
 * are mmsim's judgement, as in megatron_args.c.
 * Not for: reading the arguments or writing the model (megatron.c). */
#include "scenario/megatron_mm.h"

#include <stdlib.h>
#include <string.h>

#define W_MMIO "data, prompt, tokenizer-format or checkpoint setting of the multimodal example: outside the iteration"
#define W_MMLOG "logging or evaluation: outside the simulated iteration"
#define W_MMSEL "which samples or tiles the loader picks: the simulated sample takes the most tiles the arguments allow"
#define W_MMINF "inference only: mmsim simulates a training iteration"
#define C_VIDEO "video and dynamic-resolution input (frames, patches per image, merging) is not read from arguments"
#define C_SOUND "the sound encoder (--sound-model-type) is not read from arguments"
#define C_PACK "sample packing in the multimodal loader is not modeled from arguments"
#define C_RADIO "RADIO vision towers are not modeled"
#define C_VREC "recomputation inside the vision tower or projector alone is not modeled (train.recompute is one switch)"

/* Sorted by name (bytewise, as strcmp and bsearch order them). */
const mm_mg_arg mm_mg_mm_args[] = {
    {"--allow-checkpoint-without-temporal-compression", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--allow-cross-sample-attention", MG_FLAG, MG_NOT_MODELED, C_PACK},
    {"--allow-large-videos", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--allow-missing-conv-merge-checkpoint", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--allow-missing-sound-model-checkpoint", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--allow-missing-sound-projection-checkpoint", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--allow-missing-vision-projection-checkpoint", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--apply-data-augment", MG_FLAG, MG_COSTLESS, "image augmentation on the loader (deprecated at that commit)"},
    {"--class-token-len", MG_VALUE, MG_NOT_MODELED, C_RADIO},
    {"--conv-merging", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--dataloader-save", MG_VALUE, MG_COSTLESS, W_MMIO},
    {"--dataloader-seed", MG_VALUE, MG_COSTLESS, W_MMIO},
    {"--dataloader-seq-length", MG_VALUE, MG_NOT_MODELED,
     "a loader sequence length other than --decoder-seq-length is not modeled"},
    {"--dataloader-type", MG_VALUE, MG_COSTLESS,
     "the multimodal example's loader (external: Megatron-Energon); data loading is costed from the workload"},
    {"--dataset-config", MG_VALUE, MG_COSTLESS, W_MMIO},
    {"--decoder-seq-length", MG_VALUE, MG_MAPPED, NULL},
    {"--decoder-tp-comm-overlap", MG_FLAG, MG_NOT_MODELED, "TP communication overlap of the decoder alone"},
    {"--disable-vision-class-token", MG_FLAG, MG_MAPPED, NULL},
    {"--dynamic-resolution", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--dynamic-resolution-max-patches", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--dynamic-resolution-min-patches", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--dynamic-resolution-min-side", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--dynamic-resolution-no-truncate", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--efficient-video-sampling-variant", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--enable-fusions", MG_FLAG, MG_COSTLESS, "on by default at that commit (store_true, default True)"},
    {"--eos-id", MG_VALUE, MG_COSTLESS, W_MMIO},
    {"--force-system-message", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--freeze-LM", MG_FLAG, MG_MAPPED, NULL},
    {"--freeze-ViT", MG_FLAG, MG_MAPPED, NULL},
    {"--freeze-sound-model", MG_FLAG, MG_NOT_MODELED, C_SOUND},
    {"--freeze-sound-projection", MG_FLAG, MG_NOT_MODELED, C_SOUND},
    {"--freeze-vision-projection", MG_FLAG, MG_MAPPED, NULL},
    {"--image-break-token", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--image-tag-type", MG_VALUE, MG_COSTLESS,
     "text tags around an image's embeddings: text tokens within the decoder length"},
    {"--img-h", MG_VALUE, MG_MAPPED, NULL},
    {"--img-w", MG_VALUE, MG_MAPPED, NULL},
    {"--language-model-type", MG_VALUE, MG_MAPPED, NULL},
    {"--log-model-act-norms", MG_FLAG, MG_COSTLESS, W_MMLOG},
    {"--log-model-grad-norms", MG_FLAG, MG_COSTLESS, W_MMLOG},
    {"--lr-data-range-end", MG_VALUE, MG_COSTLESS, "learning-rate schedule: no effect on an iteration's cost"},
    {"--lr-data-range-start", MG_VALUE, MG_COSTLESS, "learning-rate schedule: no effect on an iteration's cost"},
    {"--masked-tiling-dynamic-resolution", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--match-tiling-dynamic-resolution", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--max-num-tiles", MG_VALUE, MG_MAPPED, NULL},
    {"--no-calculate-per-token-loss", MG_FLAG, MG_COSTLESS, "how the loss is averaged: the same kernels"},
    {"--num-frames", MG_VALUE, MG_MAPPED, NULL},
    {"--online-evaluation-config", MG_VALUE, MG_COSTLESS, W_MMLOG},
    {"--only-keep-samples-with-img", MG_FLAG, MG_COSTLESS, W_MMSEL},
    {"--optimize-broadcast", MG_FLAG, MG_COSTLESS, "on by default at that commit (store_true, default True)"},
    {"--packing-buffer-size", MG_VALUE, MG_NOT_MODELED, C_PACK},
    {"--packing-knapsack-algorithm", MG_VALUE, MG_NOT_MODELED, C_PACK},
    {"--packing-seq-length", MG_VALUE, MG_NOT_MODELED, C_PACK},
    {"--patch-dim", MG_VALUE, MG_MAPPED, NULL},
    {"--pixel-shuffle", MG_FLAG, MG_MAPPED, NULL},
    {"--prompt-path", MG_VALUE, MG_COSTLESS, W_MMIO},
    {"--radio-cpe-aspect-ratio-select", MG_FLAG, MG_NOT_MODELED, C_RADIO},
    {"--radio-disable-cpe", MG_FLAG, MG_NOT_MODELED, C_RADIO},
    {"--radio-force-cpe-eval-mode", MG_FLAG, MG_NOT_MODELED, C_RADIO},
    {"--radio-force-eval-mode", MG_FLAG, MG_NOT_MODELED, C_RADIO},
    {"--radio-interpolate-only-cpe", MG_FLAG, MG_NOT_MODELED, C_RADIO},
    {"--recompute-granularity-vision", MG_VALUE, MG_NOT_MODELED, C_VREC},
    {"--recompute-method-vision", MG_VALUE, MG_NOT_MODELED, C_VREC},
    {"--recompute-sound", MG_FLAG, MG_NOT_MODELED, C_SOUND},
    {"--recompute-sound-projection", MG_FLAG, MG_NOT_MODELED, C_SOUND},
    {"--recompute-vision", MG_FLAG, MG_NOT_MODELED, C_VREC},
    {"--recompute-vision-num-layers", MG_VALUE, MG_NOT_MODELED, C_VREC},
    {"--recompute-vision-projection", MG_FLAG, MG_NOT_MODELED, C_VREC},
    {"--relax-sender-check", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--relax-thinking-trace-check", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--separate-video-embedder", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--sound-batch-split", MG_VALUE, MG_NOT_MODELED, C_SOUND},
    {"--sound-clip-duration", MG_VALUE, MG_NOT_MODELED, C_SOUND},
    {"--sound-embedding-size", MG_VALUE, MG_NOT_MODELED, C_SOUND},
    {"--sound-min-duration", MG_VALUE, MG_NOT_MODELED, C_SOUND},
    {"--sound-model-type", MG_VALUE, MG_NOT_MODELED, C_SOUND},
    {"--sound-pad-to-clip-duration", MG_FLAG, MG_NOT_MODELED, C_SOUND},
    {"--sound-target-rate", MG_VALUE, MG_NOT_MODELED, C_SOUND},
    {"--special-tokens", MG_VALUE, MG_COSTLESS, W_MMIO},
    {"--thumbnail-area-threshold", MG_VALUE, MG_COSTLESS, W_MMSEL},
    {"--tokenizer-keep-history-thinking", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--tokenizer-prompt-format", MG_VALUE, MG_MAPPED, NULL},
    {"--unfreeze-router", MG_FLAG, MG_NOT_MODELED, "an MoE language model is not read from the multimodal example"},
    {"--use-area-weighted-aspect-ratio", MG_FLAG, MG_COSTLESS, W_MMSEL},
    {"--use-loss-scaling", MG_FLAG, MG_COSTLESS, "how the loss is weighted: the same kernels"},
    {"--use-mcore-inference", MG_FLAG, MG_COSTLESS, W_MMINF},
    {"--use-new-dataloader-path", MG_FLAG, MG_COSTLESS, W_MMIO},
    {"--use-te", MG_FLAG, MG_MAPPED, NULL},
    {"--use-thumbnail", MG_FLAG, MG_MAPPED, NULL},
    {"--use-tile-tags", MG_FLAG, MG_MAPPED, NULL},
    {"--use-tiling", MG_FLAG, MG_MAPPED, NULL},
    {"--use-vision-backbone-fp8-arch", MG_FLAG, MG_COSTLESS, W_MMINF},
    {"--video-aug-scale-frames-up", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--video-aug-scale-resolution-only", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--video-aug-scale-resolution-up", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--video-default-fps", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--video-frame-temporal-jitter", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--video-maintain-aspect-ratio", MG_FLAG, MG_NOT_MODELED, C_VIDEO},
    {"--video-max-num-frames", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--video-min-num-frames", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--video-prompt-version", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--video-target-img-size", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--video-target-num-patches", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--video-temporal-patch-size", MG_VALUE, MG_NOT_MODELED, C_VIDEO},
    {"--vision-model-type", MG_VALUE, MG_MAPPED, NULL},
    {"--vision-projection-type", MG_VALUE, MG_MAPPED, NULL},
};

const size_t mm_mg_n_mm_args = sizeof mm_mg_mm_args / sizeof mm_mg_mm_args[0];

static int by_name(const void *key, const void *row)
{
    return strcmp(key, ((const mm_mg_arg *)row)->name);
}

const mm_mg_arg *mm_mg_mm_arg_find(const char *name)
{
    return bsearch(name, mm_mg_mm_args, mm_mg_n_mm_args, sizeof mm_mg_mm_args[0], by_name);
}

/* config.py get_vision_model_config.  InternViT-6B has 25 heads; Megatron
 * pads them to ((24 // tp) + 1) * tp with zero heads so that tp divides
 * them (nvlm/internvit.py): the padding is not costed (megatron.c notes it). */
static const mm_mg_vision towers[] = {
    /* type  hf  layers heads hidden ffn  rmsnorm qkv_bias qk_norm  class */
    {"clip", "clip_vision_model", 24, 16, 1024, 4096, false, true, false, 1},
    {"internvit", "intern_vit_6b", 45, 25, 3200, 12800, true, false, true, 1},
    {"internvit300M", "intern_vit_6b", 24, 16, 1024, 4096, false, true, false, 1},
    {"siglip", "siglip_vision_model", 27, 16, 1152, 4304, false, true, false, 0},
};

const mm_mg_vision *mm_mg_vision_find(const char *type, const char **why)
{
    for (size_t i = 0; i < sizeof towers / sizeof towers[0]; i++)
        if (!strcmp(type, towers[i].type))
            return &towers[i];
    if (!strncmp(type, "radio", 5) || !strcmp(type, "cradio-g"))
        *why = "RADIO towers (several class tokens, cropped position embeddings) are not modeled";
    else if (!strncmp(type, "hf://", 5))
        *why = "a Hugging Face tower by name is not read (its config is not fetched): use clip, siglip, internvit";
    else
        *why = "not a tower mmsim reads from config.py (clip, siglip, internvit, internvit300M)";
    return NULL;
}

/* config.py get_language_model_config (ffn_hidden_size, add_qkv_bias; all
 * of these are gated SiLU MLPs without linear biases) and
 * get_vision_projection_config (ffn_hidden_size, normalization,
 * add_bias_linear).  "inherit": that branch sets no normalization, so the
 * projector keeps the argument list's --normalization. */
static const mm_mg_lm lms[] = {
    /* type  ffn  qkv_bias  proj_ffn  proj_norm  proj_bias */
    {"llama3.1_8b", 14336, false, 4096, "layernorm", true},
    {"llama3.2_1b", 8192, false, 2048, "layernorm", false},
    {"llama3_8b", 14336, false, 14336, "inherit", false},
    {"llama_nemotron_8b", 14336, false, 14336, "layernorm", true},
    {"mistral_7b", 14336, false, 14336, "none", false},
    {"qwen2.0_72B", 29568, true, 29568, "layernorm", false},
    {"qwen2.5_72B", 29568, true, 29568, "layernorm", false},
    {"qwen2.5_7B", 18944, true, 3584, "inherit", false},
    {"yi-34b", 20480, false, 20480, "layernorm", false},
};

const mm_mg_lm *mm_mg_lm_find(const char *type, const char **why)
{
    for (size_t i = 0; i < sizeof lms / sizeof lms[0]; i++)
        if (!strcmp(type, lms[i].type))
            return &lms[i];
    if (!strncmp(type, "nemotron5-hybrid", 16) || !strcmp(type, "nemotron6-moe"))
        *why = "hybrid Mamba-Transformer and MoE language models of the example are not modeled";
    else if (!strcmp(type, "nemotron5-8b"))
        *why = "its squared-ReLU MLP is not modeled";
    else if (!strcmp(type, "llama3.1_70B"))
        *why = "config.py gives it no vision projection at that commit (train.py stops there)";
    else if (!strncmp(type, "hf://", 5))
        *why = "a Hugging Face language model by name is not read (its config is not fetched)";
    else
        *why = "not a language model config.py names";
    return NULL;
}
