/* mllm.h - a multimodal model as modules: vision encoder, audio encoder,
 * projectors and the LLM decoder (llm.h), read from a Hugging Face
 * config.json (an LLM, an encoder, or a LLaVA/InternVL-style composite) or
 * from our YAML form that composes one from parts:
 *
 *   name: llava-ov-qwen2.5-7b              # optional
 *   vision: siglip-so400m-14-384.json       # paths relative to this file
 *   llm: qwen2.5-7b.json
 *   projector: {type: mlp2x_gelu}           # linear | mlpNx_gelu | internvl
 *   image: {tile: 384, max_tiles: 10, pixel_shuffle: 1.0, grids: [[1,1],[2,2]]}
 *   audio: whisper-large-v3.json            # optional, with audio_projector
 *
 * A part may also be given inline, as a mapping of its config's keys, and
 * the projector may be Megatron-Core's: {type: megatron_mlp, hidden: N,
 * norm: none|layernorm|rmsnorm, bias: false} (mmsim run --megatron-script
 * writes such a model for Megatron-LM's multimodal example).
 *
 * Encoder costs follow the same Megatron conventions as llm.h (matmul
 * FLOPs, 2 per MAC, attention dense), with bidirectional attention.
 * Not for: where encoders run (sim/parallel), memory (memory.h), time. */
#ifndef MM_MLLM_H
#define MM_MLLM_H

#include <stdbool.h>
#include <stdint.h>

#include "model/llm.h"
#include "util/doc.h"
#include "util/err.h"

typedef enum mm_encoder_kind { MM_ENC_VISION, MM_ENC_AUDIO } mm_encoder_kind;

/* A pre-norm transformer encoder with a patch (vision) or conv (audio)
 * stem: CLIP / SigLIP vision towers, InternViT, the Whisper encoder. */
typedef struct mm_encoder {
    char name[128], source[256], model_type[64];
    mm_encoder_kind kind;
    int64_t hidden, layers, heads, head_dim, ffn;
    int64_t image_size, patch_size, channels; /* vision: one tile */
    int64_t mel_bins, frames;  /* audio: mel bins in, positions after the stem
                                * (Whisper max_source_positions: 1500 = 30 s) */
    bool cls_token;            /* CLIP, InternViT: one extra token */
    bool pre_norm;             /* CLIP's pre_layrnorm before the blocks */
    bool post_norm;            /* a norm after the last block */
    bool rmsnorm;              /* InternViT-6B; else LayerNorm (weight + bias) */
    bool qkv_bias, out_bias, mlp_bias, patch_bias;
    bool k_bias;               /* false: key projection without bias (Whisper) */
    bool qk_norm;              /* InternViT-6B qk_normalization */
    bool layer_scale;          /* InternViT ls1/ls2: 2h per block */
    /* Qwen2-VL / Qwen2.5-VL towers: a Conv3d stem over temporal_patch
     * frames, 2-D RoPE (no position table), no class token and no final
     * norm (the merger projector has its own).  gated_mlp: Qwen2.5-VL's
     * SwiGLU MLP (gate, up, down, with biases).  window: patches per
     * attention window (Qwen2.5-VL window_size / patch_size, squared: 64);
     * full_layers: how many blocks attend over the whole tile
     * (fullatt_block_indexes), the others attend within their window. */
    int64_t temporal_patch;
    bool rope2d, gated_mlp;
    int64_t window, full_layers;
    /* Qwen3-VL: beside the 2-D RoPE, a learned table of pos_table rows
     * (num_position_embeddings, 48 x 48) bilinearly interpolated to the
     * patch grid, four rows gathered per patch; 0: none (or, without
     * rope2d, one row per token of the tile). */
    int64_t pos_table;
    /* Mllama's tower (MllamaVisionModel): the last global_layers of the
     * `layers` blocks are the gated global_transformer's (two tanh gates
     * each); a tile's tokens are padded to a multiple of token_pad before
     * the blocks and attention spans tile_group tiles (an image's
     * max_num_tiles, which attend together); aspect_rows rows (the
     * supported aspect ratios + 1) of the precomputed tile position
     * embeddings (one of tile_group x tokens x hidden, two of tile_group x
     * hidden) beside the gated position table.  0: none. */
    int64_t global_layers, token_pad, tile_group, aspect_rows;
} mm_encoder;

typedef enum mm_projector_type {
    MM_PROJ_NONE,
    MM_PROJ_LINEAR,   /* LLaVA-1: one Linear */
    MM_PROJ_MLP_GELU, /* LLaVA-1.5 mlp2x_gelu: Linear, GELU, Linear (depth Linears) */
    MM_PROJ_INTERNVL, /* InternVL mlp1: LayerNorm, Linear, GELU, Linear */
    MM_PROJ_QWEN_MERGER, /* Qwen2-VL PatchMerger: norm over the encoder width, Linear(4c, 4c), GELU,
                          * Linear(4c, llm): part of the vision tower in the checkpoint */
    MM_PROJ_IDEFICS3, /* Idefics3Connector: pixel shuffle, one Linear without bias */
    MM_PROJ_GEMMA3,   /* Gemma3MultiModalProjector: average pool of the patch grid,
                       * RMSNorm over the encoder width, one Linear without bias */
    MM_PROJ_MISTRAL3, /* Mistral3MultiModalProjector: RMSNorm over the encoder width, patch
                       * merger Linear(4c, c) without bias, Linear(c, llm), GELU,
                       * Linear(llm, llm) (biases: `bias`) */
    MM_PROJ_LLAMA4,   /* Llama 4: the vision adapter (pixel shuffle, Linear(in, ffn), GELU,
                       * Linear(ffn, mid), GELU) and multi_modal_projector Linear(mid,
                       * out), none biased */
    MM_PROJ_PERCEIVER, /* Idefics2Connector: a modality projection (gated MLP in -> ffn -> out,
                       * no biases) over every patch, then a perceiver resampler whose
                       * `latents` learned queries cross-attend the image: the LLM sees the
                       * latents only */
    MM_PROJ_MEGATRON  /* Megatron-Core's MultimodalProjector "mlp" (LLaVAModel's default):
                       * optional norm over `in` (LayerNorm or RMSNorm: `norm`, `rmsnorm`),
                       * Linear(in, mid), activation, Linear(mid, out) (biases: `bias`) */
} mm_projector_type;

typedef struct mm_projector {
    mm_projector_type type;
    int depth;          /* Linears (mlpNx_gelu: N) */
    int64_t in, out;    /* in: encoder width (x 1/ratio^2 after pixel shuffle) */
    bool rmsnorm;       /* QWEN_MERGER: Qwen2.5-VL's RMSNorm ln_q (Qwen2-VL: LayerNorm) */
    int64_t norm_dim;   /* QWEN_MERGER, MISTRAL3, GEMMA3: width of the norm (the encoder's) */
    bool bias;          /* MISTRAL3: linear_1 and linear_2 biased (multimodal_projector_bias);
                         * MEGATRON: both Linears biased (add_bias_linear) */
    /* QWEN_MERGER: Qwen3-VL's DeepStack mergers (one per
     * deepstack_visual_indexes entry), each the merger's shape with its
     * LayerNorm over the merged width `in`; their outputs are added to the
     * visual positions of the LLM's first `deepstack` blocks. */
    int deepstack;
    /* PERCEIVER (modeling_idefics2.py): modality projection width ffn (the
     * LLM's intermediate_size); `layers` blocks (resampler_depth), each:
     * RMSNorms on latents and context, q from the latents (heads x
     * head_dim), k and v (kv_heads x head_dim) from [context; latents], o,
     * an RMSNorm and a gated MLP of 4 x out; a final RMSNorm.  ctx: the
     * context tokens of one image (the tower's patches). */
    int64_t ffn, latents, heads, kv_heads, head_dim, ctx;
    int layers;
    int64_t mid; /* LLAMA4: projector_output_dim (= vision_output_dim); ffn: projector_input_dim;
                  * MEGATRON: the hidden width (the projection config's ffn_hidden_size) */
    bool norm;          /* MEGATRON: a norm over `in` before the first Linear */
} mm_projector;

#define MM_MAX_GRIDS 64

typedef struct mm_model {
    char name[128], source[256];
    bool has_llm, has_vision, has_audio;
    mm_llm llm;
    mm_encoder vision, audio;
    mm_projector vision_proj, audio_proj;
    /* Image tiling: each image becomes up to max_tiles tiles of tile x tile
     * pixels (anyres grids plus a base/thumbnail image); each tile gives
     * (tile/patch)^2 * pixel_shuffle^2 LLM tokens. */
    int64_t tile;
    int max_tiles;
    double pixel_shuffle; /* InternVL downsample_ratio (0.5); 1 = none */
    int n_grids;
    int grids[MM_MAX_GRIDS][2]; /* rows, cols of tiles */
    /* Visual tokens as the model makes them (mm_model_tokens_per_frame):
     * frame_pool: LLaVA-OneVision pools each video frame's grid 2x2
     * (bilinear, ceil: 27x27 -> 14x14); anyres_max: its anyres_max_N
     * reduction caps an image at N grid tiles' tokens plus the base tile
     * (0: no cap).  dynamic: Qwen2-VL's dynamic resolution, where `tile` is
     * an accounting unit of area (448 px square), not a crop. */
    int frame_pool;
    int anyres_max;
    bool dynamic;
    int64_t extra_params; /* learned separators: image_newline (LLaVA-NeXT/OneVision, one
                           * LLM-width vector), Phi-3-V's glb_GN and sub_GN */
} mm_model;

/* Loads any of the accepted forms (see the top of this file).  Errors name
 * the file, line and key (MM_EINPUT).  An LLM config.json gives has_llm
 * only, an encoder config has_vision or has_audio only. */
int mm_model_load(const char *path, mm_model *m, mm_err *err);
/* The same from a mapping already parsed (a scenario's inline `model:`):
 * errors name doc's file and the node's lines; `name` gives the model its
 * name (its stem, as a file's) and source; a YAML-form model's part paths
 * are relative to doc's file. */
int mm_model_from_node(const mm_doc *doc, mm_node *root, const char *name, mm_model *m, mm_err *err);

/* ---- encoders ---- */
int64_t mm_encoder_layer_params(const mm_encoder *e);
int64_t mm_encoder_stem_params(const mm_encoder *e); /* patch/conv stem, CLS, positions */
int64_t mm_encoder_params(const mm_encoder *e);
/* Sequence length of one input (tile or clip): patches (+1 CLS) or frames. */
int64_t mm_encoder_tokens(const mm_encoder *e);
/* Tokens per input the blocks compute: mm_encoder_tokens, padded to a
 * multiple of token_pad (Mllama: 1025 -> 1032). */
int64_t mm_encoder_block_tokens(const mm_encoder *e);
/* Forward FLOPs per input: stem + layers (bidirectional attention dense).
 * ViT-L/14 at 336 px: ~382 GFLOP (24 layers of 2 n (4h^2 + 2 h h_mlp) + 4 n^2 h,
 * n 577, h 1024, h_mlp 4096: timm vit_large_patch14_clip_336). */
double mm_encoder_fwd_flops(const mm_encoder *e);
double mm_encoder_layer_fwd_flops(const mm_encoder *e, double inputs);
double mm_encoder_stem_fwd_flops(const mm_encoder *e, double inputs);
/* One block forward for `inputs` tiles/clips on one TP rank (bidirectional
 * attention, no causal mask); as mm_llm_layer_ops otherwise. */
int mm_encoder_layer_ops(const mm_encoder *e, double inputs, int tp, bool sp, int dtype_bytes,
                         mm_op_cost *ops, int cap);
/* The stem: a patch-embedding GEMM (conv with stride = kernel) or Whisper's
 * two 3-wide 1-D convolutions (as GEMMs over im2col), positions added. */
int mm_encoder_stem_ops(const mm_encoder *e, double inputs, int tp, int dtype_bytes,
                        mm_op_cost *ops, int cap);

/* ---- projectors ---- */
int64_t mm_projector_params(const mm_projector *p);
double mm_projector_fwd_flops(const mm_projector *p, double tokens);
int mm_projector_ops(const mm_projector *p, double tokens, int tp, int dtype_bytes,
                     mm_op_cost *ops, int cap);
/* Elements the projector reads per visual LLM token it makes: `in`, or
 * for the perceiver (ctx patches in, latents out) in x ctx / latents; what
 * an encoder hands over when the projector runs on the LLM's GPUs. */
double mm_projector_in_per_token(const mm_projector *p);

/* ---- the whole model ---- */
int64_t mm_model_params(const mm_model *m);
/* LLM tokens one image tile becomes (after pixel shuffle / patch merging). */
int64_t mm_model_tokens_per_tile(const mm_model *m);
/* LLM tokens one video frame becomes: tokens_per_tile, pooled 2x2 for
 * LLaVA-OneVision (729 -> 196 for SigLIP-384/14), halved for Qwen2-VL
 * (temporal_patch_size 2 frames make one temporal patch). */
int64_t mm_model_tokens_per_frame(const mm_model *m);
/* Visual tokens one tile gives the projector: tokens_per_tile, or for a
 * model whose LLM attends the image from cross-attention blocks (Mllama)
 * the tower's tokens (none of which enter the LLM's sequence). */
int64_t mm_model_proj_tokens_per_tile(const mm_model *m);
/* Most tiles of one image that reach the LLM (anyres_max_N: N + 1); 0: no
 * cap. */
int mm_model_tiles_cap(const mm_model *m);
/* Active parameters per token (MoE LLM: top-k experts), all modules. */
int64_t mm_model_active_params(const mm_model *m);

#endif
