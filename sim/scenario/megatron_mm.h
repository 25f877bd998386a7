/* megatron_mm.h - what Megatron-LM's multimodal example
 * (examples/multimodal/train.py at NVIDIA/Megatron-LM d98e8a64dd) builds
 * from its argument list, as data (megatron_mm.c): its own arguments
 * (multimodal_args.py) classified as megatron_args.h classifies the core
 * ones, the vision towers --vision-model-type names and the language
 * models --language-model-type names (config.py), and the image
 * embeddings a tile becomes (clip_vit_model.py get_num_image_embeddings).
 * Not for: reading an argument list or writing a scenario (megatron.c). */
#ifndef MM_SCENARIO_MEGATRON_MM_H
#define MM_SCENARIO_MEGATRON_MM_H

#include <stdbool.h>

#include "scenario/megatron_args.h"

/* The row of an argument as train.py reads it: its own arguments and the
 * core ones whose meaning it changes (--img-h, --decoder-seq-length, ...);
 * NULL: the core table's row stands (mm_mg_arg_find). */
const mm_mg_arg *mm_mg_mm_arg_find(const char *name);
/* Its rows, sorted by name (bytewise), and their count. */
extern const mm_mg_arg mm_mg_mm_args[];
extern const size_t mm_mg_n_mm_args;

/* A vision tower of config.py get_vision_model_config. */
typedef struct mm_mg_vision {
    const char *type;   /* --vision-model-type */
    const char *hf;     /* the model_type mmsim reads it as */
    int layers, heads, hidden, ffn;
    bool rmsnorm, qkv_bias, qk_norm;
    int class_tokens;   /* class_token_len */
} mm_mg_vision;

/* A language model of config.py get_language_model_config and its
 * projector (get_vision_projection_config). */
typedef struct mm_mg_lm {
    const char *type;   /* --language-model-type */
    int ffn;            /* ffn_hidden_size config.py sets */
    bool qkv_bias;      /* add_qkv_bias */
    int proj_ffn;       /* the projector's ffn_hidden_size */
    const char *proj_norm; /* "none" | "layernorm" */
    bool proj_bias;     /* the projector's add_bias_linear */
} mm_mg_lm;

/* NULL when config.py does not name it or mmsim does not model it; *why
 * then says which (for the refusal). */
const mm_mg_vision *mm_mg_vision_find(const char *type, const char **why);
const mm_mg_lm *mm_mg_lm_find(const char *type, const char **why);

#endif
