/* mllama_read.c - Llama 3.2 Vision (model_type mllama): its vision tower
 * (MllamaVisionModel) and what surrounds it in the composite, read from
 * the vision_config of a config.json.
 *
 * Sources: transformers @ befb795 src/transformers/models/mllama/
 * modeling_mllama.py (MllamaVisionModel, MllamaVisionEncoderLayer,
 * MllamaPrecomputedPositionEmbedding, MllamaPrecomputedAspectRatioEmbedding,
 * MllamaForConditionalGeneration.multi_modal_projector) and @ 996a401
 * configuration_mllama.py (MllamaVisionConfig's defaults).
 * Not for: costs (mllm.c), the text model (llm_read.c). */
#include "model/mllama_read.h"

#include <stdio.h>
#include <string.h>

#include "util/doc.h"

#define DIM_MAX (INT64_C(1) << 20)

/* MllamaVisionConfig: supported_aspect_ratios None -> these (max_num_tiles
 * must then be 4); intermediate_layers_indices None -> [3, 7, 15, 23, 30]. */
static const int default_ratios[8][2] = {{1, 1}, {1, 2}, {1, 3}, {1, 4}, {2, 1}, {2, 2}, {3, 1}, {4, 1}};
#define DEFAULT_INTERMEDIATE 5

/* A list key of the mapping: its node, or NULL when absent or null (the
 * class default applies); -1 in *n when it is not a list. */
static mm_node *list_key(const mm_hf *r, const char *key, int *n)
{
    mm_node *x = mm_node_get(r->map, key);
    if (!x || mm_node_is_null(x)) {
        *n = -2;
        return NULL;
    }
    *n = mm_node_is_sequence(x) ? mm_node_count(x) : -1;
    return x;
}

/* The aspect-ratio grids [rows, cols] into grids (may be NULL), their
 * count into *count; each must fit max_num_tiles tiles. */
static int read_ratios(const mm_hf *r, int64_t max_tiles, int grids[][2], int cap, int *count)
{
    int n;
    mm_node *x = list_key(r, "supported_aspect_ratios", &n);
    if (n == -1)
        return mm_hf_fail(r, "supported_aspect_ratios", "expected a list of [rows, cols]");
    if (n == -2) {
        if (max_tiles != 4)
            return mm_hf_fail(r, "max_num_tiles", "%lld tiles need supported_aspect_ratios (MllamaVisionConfig's "
                              "default ratios are for 4)", (long long)max_tiles);
        for (int i = 0; grids && i < 8 && i < cap; i++)
            grids[i][0] = default_ratios[i][0], grids[i][1] = default_ratios[i][1];
        *count = 8;
        return 0;
    }
    if (n < 1 || n > cap)
        return mm_hf_fail(r, "supported_aspect_ratios", "1 to %d ratios are modeled, got %d", cap, n);
    char kp[160];
    mm_hf_key(r, "supported_aspect_ratios", kp, sizeof kp);
    for (int i = 0; i < n; i++) {
        mm_node *pair = mm_node_item(x, i);
        if (!mm_node_is_sequence(pair) || mm_node_count(pair) != 2)
            return mm_hf_fail(r, "supported_aspect_ratios", "entry %d is not a pair [rows, cols]", i);
        int64_t v[2];
        for (int k = 0; k < 2; k++) {
            int rc = mm_node_as_int(r->doc, mm_node_item(pair, k), kp, 1, max_tiles, &v[k], r->err);
            if (rc)
                return rc;
        }
        if (v[0] * v[1] > max_tiles)
            return mm_hf_fail(r, "supported_aspect_ratios", "%lld x %lld tiles exceed max_num_tiles %lld",
                              (long long)v[0], (long long)v[1], (long long)max_tiles);
        if (grids)
            grids[i][0] = (int)v[0], grids[i][1] = (int)v[1];
    }
    *count = n;
    return 0;
}

int mm_mllama_read_tower(const mm_hf *r, mm_encoder *e)
{
    int rc;
    static const char *const read[] = {"num_attention_heads", "intermediate_layers_indices",
                                       "supported_aspect_ratios", NULL};
    /* the tower ties nothing (PretrainedConfig writes tie_word_embeddings) */
    static const char *const costless[] = {"norm_eps", "tie_word_embeddings", NULL};
    int64_t local = 0, global = 0, tiles = 4;
    char act[32] = "";
    memset(e, 0, sizeof *e);
    e->kind = MM_ENC_VISION;
    snprintf(e->model_type, sizeof e->model_type, "mllama_vision_model");
    e->channels = 3;
    /* config.json carries attention_heads (the attribute MllamaVisionConfig
     * stores num_attention_heads under); either is read */
    bool named = false;
    if ((rc = mm_hf_check_keys(r, read, costless)) ||
        (rc = mm_hf_need_int(r, "hidden_size", 1, DIM_MAX, &e->hidden)) ||
        (rc = mm_hf_need_int(r, "intermediate_size", 1, DIM_MAX, &e->ffn)) ||
        (rc = mm_hf_need_int(r, "num_hidden_layers", 1, DIM_MAX, &local)) ||
        (rc = mm_hf_int(r, "num_global_layers", 0, DIM_MAX, &global, NULL)) ||
        (rc = mm_hf_int(r, "num_attention_heads", 1, DIM_MAX, &e->heads, &named)) ||
        (!named && (rc = mm_hf_need_int(r, "attention_heads", 1, DIM_MAX, &e->heads))) ||
        (rc = mm_hf_need_int(r, "image_size", 1, DIM_MAX, &e->image_size)) ||
        (rc = mm_hf_need_int(r, "patch_size", 1, DIM_MAX, &e->patch_size)) ||
        (rc = mm_hf_int(r, "num_channels", 1, 64, &e->channels, NULL)) ||
        (rc = mm_hf_int(r, "max_num_tiles", 1, 64, &tiles, NULL)) ||
        (rc = mm_hf_str(r, "hidden_act", act, sizeof act)) || (act[0] && (rc = mm_hf_act(r, "hidden_act", act))))
        return rc;
    if (named && mm_hf_has(r, "attention_heads"))
        return mm_hf_fail(r, "num_attention_heads", "given beside attention_heads (say one)");
    if (e->hidden % e->heads)
        return mm_hf_fail(r, named ? "num_attention_heads" : "attention_heads", "%lld heads do not divide the "
                          "hidden size %lld", (long long)e->heads, (long long)e->hidden);
    if (e->patch_size > e->image_size)
        return mm_hf_fail(r, "patch_size", "patch size %lld exceeds the image size %lld", (long long)e->patch_size,
                          (long long)e->image_size);
    int ratios = 0;
    if ((rc = read_ratios(r, tiles, NULL, MM_MAX_GRIDS, &ratios)))
        return rc;
    /* MllamaVisionModel: a bias-free patch conv, a class token, the gated
     * position table (num_patches rows and its gate), layernorm_pre and
     * layernorm_post (LayerNorm), `transformer` (num_hidden_layers
     * blocks) then `global_transformer` (num_global_layers, gated); each
     * block: LayerNorms, q/k/v/o without bias, fc1/fc2 with bias. */
    e->layers = local + global;
    e->global_layers = global;
    e->head_dim = e->hidden / e->heads;
    e->cls_token = e->pre_norm = e->post_norm = true;
    e->mlp_bias = true;
    e->qkv_bias = e->k_bias = e->out_bias = e->patch_bias = false;
    e->token_pad = 8; /* num_padding_patches: to a multiple of 8 */
    e->tile_group = tiles;
    e->aspect_rows = ratios + 1; /* max_aspect_ratio_id + 1: id 0 pads */
    return 0;
}

int mm_mllama_finish(const mm_hf *vr, mm_model *m)
{
    int rc, n;
    int64_t vout = 0;
    const mm_encoder *e = &m->vision;
    if ((rc = mm_hf_need_int(vr, "vision_output_dim", 1, DIM_MAX, &vout)))
        return rc;
    /* the projector reads the last block's features and those of
     * intermediate_layers_indices (hidden states of `transformer`:
     * index 0 its input, i block i's output), concatenated */
    mm_node *x = list_key(vr, "intermediate_layers_indices", &n);
    if (n == -1)
        return mm_hf_fail(vr, "intermediate_layers_indices", "expected a list of block indices");
    int64_t local = e->layers - e->global_layers;
    char kp[160];
    mm_hf_key(vr, "intermediate_layers_indices", kp, sizeof kp);
    for (int i = 0; i < n; i++) {
        int64_t v;
        if ((rc = mm_node_as_int(vr->doc, mm_node_item(x, i), kp, 0, local, &v, vr->err)))
            return rc;
    }
    int64_t feats = 1 + (n == -2 ? DEFAULT_INTERMEDIATE : n);
    if (vout != e->hidden * feats)
        return mm_hf_fail(vr, "vision_output_dim", "%lld is not the width of the %lld concatenated features "
                          "(%lld x %lld)", (long long)vout, (long long)feats, (long long)feats,
                          (long long)e->hidden);
    int count = 0;
    if ((rc = read_ratios(vr, e->tile_group, m->grids, MM_MAX_GRIDS, &count)))
        return rc;
    m->n_grids = count;
    m->max_tiles = (int)e->tile_group; /* no base image */
    m->tile = e->image_size;
    m->pixel_shuffle = 1.0;
    m->vision_proj = (mm_projector){.type = MM_PROJ_LINEAR, .depth = 1, .in = vout, .out = m->llm.hidden};
    /* MllamaForConditionalGeneration: the projected tower output of every
     * tile (padding patches removed, class token kept) is the cross
     * attention's k/v input; MllamaImageProcessor pads an image to
     * max_num_tiles tiles.  One image per sequence. */
    m->llm.cross_tokens = e->tile_group * mm_encoder_tokens(e);
    m->llm.cross_images = 1.0; /* the nominal sample; a micro-batch's own mean in the bridge */
    return 0;
}
