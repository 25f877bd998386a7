/* mllm.c - multimodal models: reading encoder, composite and YAML-form
 * configs, and the parameters, FLOPs and per-op costs of encoders and
 * projectors.  Key names and defaults follow transformers' config classes
 * (CLIPVisionConfig, SiglipVisionConfig, WhisperConfig, LlavaConfig,
 * LlavaOnevisionConfig) and OpenGVLab's InternVisionConfig/InternVLChatConfig.
 * Not for: the LLM decoder itself (llm.c), memory, time, placement. */
#include "model/mllm.h"

#include <libfyaml.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/doc.h"

#define DIM_MAX (INT64_C(1) << 20)

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

static void kpath(const char *prefix, const char *key, char *buf, size_t len)
{
    if (prefix && prefix[0])
        snprintf(buf, len, "%s.%s", prefix, key);
    else
        snprintf(buf, len, "%s", key);
}

static int opt_int(const mm_doc *d, struct fy_node *map, const char *prefix, const char *key,
                   int64_t *out, bool *found, mm_err *err)
{
    char kp[160];
    kpath(prefix, key, kp, sizeof kp);
    bool f = false;
    if (mm_node_is_null(mm_node_get(map, key))) {
        if (found)
            *found = false;
        return 0;
    }
    int rc = mm_node_int(d, map, key, kp, 1, DIM_MAX, out, &f, err);
    if (found)
        *found = f;
    return rc;
}

static int need_int(const mm_doc *d, struct fy_node *map, const char *prefix, const char *key,
                    int64_t *out, mm_err *err)
{
    bool f = false;
    int rc = opt_int(d, map, prefix, key, out, &f, err);
    if (rc)
        return rc;
    if (!f) {
        char kp[160];
        kpath(prefix, key, kp, sizeof kp);
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(map), kp, "missing required key");
    }
    return 0;
}

static int opt_bool(const mm_doc *d, struct fy_node *map, const char *prefix, const char *key,
                    bool *out, mm_err *err)
{
    char kp[160];
    kpath(prefix, key, kp, sizeof kp);
    if (mm_node_is_null(mm_node_get(map, key)))
        return 0;
    return mm_node_bool(d, map, key, kp, out, NULL, err);
}

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

static const char *const vision_types[] = {"clip_vision_model", "siglip_vision_model", "intern_vit_6b", NULL};

static bool in_list(const char *s, const char *const *l)
{
    for (; *l; l++)
        if (!strcmp(s, *l))
            return true;
    return false;
}

/* CLIP / SigLIP vision towers and InternViT. */
static int read_vit(const mm_doc *d, struct fy_node *map, const char *prefix, const char *type,
                    mm_encoder *e, mm_err *err)
{
    int rc;
    e->kind = MM_ENC_VISION;
    snprintf(e->model_type, sizeof e->model_type, "%s", type);
    e->channels = 3;
    if ((rc = need_int(d, map, prefix, "hidden_size", &e->hidden, err)) ||
        (rc = need_int(d, map, prefix, "intermediate_size", &e->ffn, err)) ||
        (rc = need_int(d, map, prefix, "num_hidden_layers", &e->layers, err)) ||
        (rc = need_int(d, map, prefix, "num_attention_heads", &e->heads, err)) ||
        (rc = need_int(d, map, prefix, "image_size", &e->image_size, err)) ||
        (rc = need_int(d, map, prefix, "patch_size", &e->patch_size, err)) ||
        (rc = opt_int(d, map, prefix, "num_channels", &e->channels, NULL, err)))
        return rc;
    bool intern = !strcmp(type, "intern_vit_6b");
    bool clip = !strcmp(type, "clip_vision_model");
    /* CLIPVisionEmbeddings: class token, patch conv without bias, learned
     * positions; CLIPVisionTransformer: pre_layrnorm and post_layernorm.
     * SiglipVisionEmbeddings: no class token, conv with bias; a
     * post_layernorm (the attention-pooling head is left out: LLaVA-OV uses
     * the patch features).  InternVisionEmbeddings: class token, conv with
     * bias; blocks with layer scale, optional qk norm, RMSNorm. */
    e->cls_token = clip || intern;
    e->pre_norm = clip;
    e->post_norm = !intern;
    e->patch_bias = !clip;
    e->qkv_bias = e->out_bias = e->mlp_bias = e->k_bias = true;
    if (intern) {
        e->qkv_bias = false;
        e->k_bias = false;
        e->qk_norm = true;
        e->layer_scale = true;
        char norm[32] = "rms_norm";
        char kp[160];
        kpath(prefix, "norm_type", kp, sizeof kp);
        if ((rc = opt_bool(d, map, prefix, "qkv_bias", &e->qkv_bias, err)) ||
            (rc = opt_bool(d, map, prefix, "qk_normalization", &e->qk_norm, err)) ||
            (!mm_node_is_null(mm_node_get(map, "norm_type")) &&
             (rc = mm_node_str(d, map, "norm_type", kp, norm, sizeof norm, NULL, err))))
            return rc;
        e->k_bias = e->qkv_bias;
        e->rmsnorm = strcmp(norm, "layer_norm") != 0;
    }
    char kp[160];
    if (e->hidden % e->heads) {
        kpath(prefix, "num_attention_heads", kp, sizeof kp);
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(map, "num_attention_heads"), kp,
                          "%lld heads do not divide the hidden size %lld", (long long)e->heads,
                          (long long)e->hidden);
    }
    /* The patch conv has stride = kernel and no padding: a remainder is
     * dropped (SigLIP 384/14: 27 x 27 patches). */
    if (e->patch_size > e->image_size) {
        kpath(prefix, "patch_size", kp, sizeof kp);
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(map, "patch_size"), kp,
                          "patch size %lld exceeds the image size %lld", (long long)e->patch_size,
                          (long long)e->image_size);
    }
    e->head_dim = e->hidden / e->heads;
    return 0;
}

/* The encoder half of a WhisperConfig. */
static int read_whisper(const mm_doc *d, struct fy_node *map, const char *prefix, mm_encoder *e,
                        mm_err *err)
{
    int rc;
    e->kind = MM_ENC_AUDIO;
    snprintf(e->model_type, sizeof e->model_type, "whisper");
    e->mel_bins = 80;     /* WhisperConfig defaults */
    e->frames = 1500;
    if ((rc = need_int(d, map, prefix, "d_model", &e->hidden, err)) ||
        (rc = need_int(d, map, prefix, "encoder_layers", &e->layers, err)) ||
        (rc = need_int(d, map, prefix, "encoder_attention_heads", &e->heads, err)) ||
        (rc = need_int(d, map, prefix, "encoder_ffn_dim", &e->ffn, err)) ||
        (rc = opt_int(d, map, prefix, "num_mel_bins", &e->mel_bins, NULL, err)) ||
        (rc = opt_int(d, map, prefix, "max_source_positions", &e->frames, NULL, err)))
        return rc;
    if (e->hidden % e->heads) {
        char kp[160];
        kpath(prefix, "encoder_attention_heads", kp, sizeof kp);
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(map, "encoder_attention_heads"), kp,
                          "%lld heads do not divide d_model %lld", (long long)e->heads, (long long)e->hidden);
    }
    e->head_dim = e->hidden / e->heads;
    /* WhisperEncoderLayer: q, v and out projections with bias, k without;
     * fc1/fc2 with bias; LayerNorms; a final layer_norm.  Stem: conv1
     * (mel -> d, k 3) and conv2 (d -> d, k 3, stride 2), both with bias. */
    e->qkv_bias = e->out_bias = e->mlp_bias = e->patch_bias = true;
    e->k_bias = false;
    e->post_norm = true;
    return 0;
}

/* An encoder from a mapping whose model_type is known to be one. */
static int read_encoder(const mm_doc *d, struct fy_node *map, const char *prefix, mm_encoder *e,
                        mm_err *err)
{
    memset(e, 0, sizeof *e);
    char type[64] = "", kp[160];
    kpath(prefix, "model_type", kp, sizeof kp);
    if (!map || !fy_node_is_mapping(map))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(map), prefix, "expected a mapping");
    if (mm_node_get(map, "model_type")) {
        int rc = mm_node_str(d, map, "model_type", kp, type, sizeof type, NULL, err);
        if (rc)
            return rc;
    }
    if (!strcmp(type, "whisper"))
        return read_whisper(d, map, prefix, e, err);
    if (in_list(type, vision_types))
        return read_vit(d, map, prefix, type, e, err);
    return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(map, "model_type"), kp,
                      "'%s' is not an encoder mmsim knows (clip_vision_model, siglip_vision_model, "
                      "intern_vit_6b, whisper)", type);
}

static int parse_projector(const mm_doc *d, struct fy_node *node, const char *key, const char *type,
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
    else
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(node), key,
                          "unknown projector type '%s' (linear, mlp2x_gelu, mlpNx_gelu, internvl)", type);
    return 0;
}

/* Fills the projector's widths once the modules are known. */
static void size_projector(mm_projector *p, const mm_encoder *e, const mm_llm *l, double shuffle)
{
    if (p->type == MM_PROJ_NONE)
        return;
    double r = shuffle > 0 ? shuffle : 1.0;
    p->in = (int64_t)llround((double)e->hidden / (r * r));
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
static int read_pinpoints(const mm_doc *d, struct fy_node *list, const char *key, mm_model *m, bool pixels,
                          mm_err *err)
{
    if (!fy_node_is_sequence(list))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(list), key, "expected a list of [rows, cols]");
    void *it = NULL;
    struct fy_node *pair;
    while ((pair = fy_node_sequence_iterate(list, &it))) {
        if (!fy_node_is_sequence(pair) || fy_node_sequence_item_count(pair) != 2)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(pair), key, "each entry is a pair [rows, cols]");
        if (m->n_grids == MM_MAX_GRIDS)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(pair), key, "more than %d grids", MM_MAX_GRIDS);
        int64_t v[2];
        for (int i = 0; i < 2; i++) {
            int rc = mm_node_as_int(d, fy_node_sequence_get_by_index(pair, i), key, 1, 1 << 20, &v[i], err);
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

/* A Hugging Face composite: vision_config + text_config (LLaVA family) or
 * llm_config (InternVL). */
static int read_composite(const mm_doc *d, struct fy_node *root, const char *type, mm_model *m, mm_err *err)
{
    int rc;
    const char *tkey = mm_node_get(root, "text_config") ? "text_config" : "llm_config";
    if ((rc = read_encoder(d, mm_node_get(root, "vision_config"), "vision_config", &m->vision, err)) ||
        (rc = mm_llm_from_node(d, mm_node_get(root, tkey), tkey, &m->llm, err)) ||
        (rc = mm_llm_validate(&m->llm, err)))
        return rc;
    m->has_vision = m->has_llm = true;
    m->tile = m->vision.image_size;
    m->pixel_shuffle = 1.0;
    bool internvl = !strcmp(type, "internvl_chat");
    char ptype[64] = "mlp2x_gelu"; /* LlavaMultiModalProjector: linear_1, act, linear_2 */
    if (internvl)
        snprintf(ptype, sizeof ptype, "internvl");
    if (mm_node_get(root, "mm_projector_type") &&
        (rc = mm_node_str(d, root, "mm_projector_type", "mm_projector_type", ptype, sizeof ptype, NULL, err)))
        return rc;
    if ((rc = parse_projector(d, mm_node_get(root, "mm_projector_type"), "mm_projector_type", ptype,
                              &m->vision_proj, err)))
        return rc;
    if (internvl) {
        /* InternVLChatConfig: downsample_ratio (pixel shuffle),
         * max_dynamic_patch tiles plus a thumbnail when use_thumbnail. */
        double ratio = 0.5;
        int64_t maxp = 12;
        bool thumb = true;
        if ((rc = mm_node_double(d, root, "downsample_ratio", "downsample_ratio", 0.01, 1.0, &ratio, NULL, err)) ||
            (rc = opt_int(d, root, "", "max_dynamic_patch", &maxp, NULL, err)) ||
            (rc = opt_bool(d, root, "", "use_thumbnail", &thumb, err)))
            return rc;
        int64_t fis = 0;
        bool found = false;
        if ((rc = opt_int(d, root, "", "force_image_size", &fis, &found, err)))
            return rc;
        if (found)
            m->tile = fis;
        m->pixel_shuffle = ratio;
        m->max_tiles = (int)maxp + (thumb ? 1 : 0);
    }
    struct fy_node *pp = mm_node_get(root, "image_grid_pinpoints");
    if (pp && !mm_node_is_null(pp) && (rc = read_pinpoints(d, pp, "image_grid_pinpoints", m, true, err)))
        return rc;
    finish_grids(m);
    size_projector(&m->vision_proj, &m->vision, &m->llm, m->pixel_shuffle);
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
static const char *const proj_keys[] = {"type", NULL};
static const char *const image_keys[] = {"tile", "max_tiles", "pixel_shuffle", "grids", NULL};

static int load_part(const mm_doc *d, struct fy_node *root, const char *key, mm_model *part, mm_err *err)
{
    char rel[512], path[1024];
    int rc = mm_node_str(d, root, key, key, rel, sizeof rel, NULL, err);
    if (rc)
        return rc;
    part_path(d->path, rel, path, sizeof path);
    rc = mm_model_load(path, part, err);
    return rc;
}

static int read_yaml_form(const mm_doc *d, struct fy_node *root, mm_model *m, mm_err *err)
{
    int rc = mm_node_check_keys(d, root, "", yaml_keys, err);
    if (rc)
        return rc;
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
    if (!m->has_llm && (m->has_vision || m->has_audio) && (mm_node_get(root, "projector") || mm_node_get(root, "audio_projector")))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(root), "llm", "a projector needs an llm");
    m->pixel_shuffle = 1.0;
    m->tile = m->has_vision ? m->vision.image_size : 0;
    const char *pkeys[2] = {"projector", "audio_projector"};
    mm_projector *pj[2] = {&m->vision_proj, &m->audio_proj};
    for (int i = 0; i < 2; i++) {
        struct fy_node *p = mm_node_get(root, pkeys[i]);
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
        if ((rc = parse_projector(d, mm_node_get(p, "type"), kp, type, pj[i], err)))
            return rc;
    }
    struct fy_node *im = mm_node_get(root, "image");
    if (im) {
        int64_t maxt = 0;
        if ((rc = mm_node_check_keys(d, im, "image", image_keys, err)) ||
            (rc = mm_node_int(d, im, "tile", "image.tile", 1, 1 << 20, &m->tile, NULL, err)) ||
            (rc = mm_node_int(d, im, "max_tiles", "image.max_tiles", 1, 4096, &maxt, NULL, err)) ||
            (rc = mm_node_double(d, im, "pixel_shuffle", "image.pixel_shuffle", 0.01, 1.0, &m->pixel_shuffle,
                                 NULL, err)))
            return rc;
        m->max_tiles = (int)maxt;
        struct fy_node *g = mm_node_get(im, "grids");
        if (g && (rc = read_pinpoints(d, g, "image.grids", m, false, err)))
            return rc;
    }
    if (m->has_vision && m->tile != m->vision.image_size)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(im, "tile"), "image.tile",
                          "tile %lld differs from the vision encoder's image size %lld", (long long)m->tile,
                          (long long)m->vision.image_size);
    finish_grids(m);
    if (m->has_vision && m->vision_proj.type == MM_PROJ_NONE && m->has_llm)
        m->vision_proj = (mm_projector){MM_PROJ_MLP_GELU, 2, 0, 0};
    if (m->has_audio && m->audio_proj.type == MM_PROJ_NONE && m->has_llm)
        m->audio_proj = (mm_projector){MM_PROJ_LINEAR, 1, 0, 0};
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

/* True when the root is our YAML form: a part named by a path. */
static bool is_yaml_form(struct fy_node *root)
{
    const char *k[] = {"llm", "vision", "audio"};
    for (int i = 0; i < 3; i++) {
        struct fy_node *n = mm_node_get(root, k[i]);
        if (n && fy_node_is_scalar(n))
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
    struct fy_node *root = mm_doc_root(&d);
    char type[64] = "";
    if (!root || !fy_node_is_mapping(root)) {
        rc = mm_err_set(err, MM_EINPUT, path, mm_node_line(root), "", "expected a mapping of config keys");
        goto out;
    }
    if (mm_node_get(root, "model_type") &&
        (rc = mm_node_str(&d, root, "model_type", "model_type", type, sizeof type, NULL, err)))
        goto out;
    m->pixel_shuffle = 1.0;
    m->max_tiles = 1;
    if (is_yaml_form(root)) {
        m->max_tiles = 0;
        rc = read_yaml_form(&d, root, m, err);
    } else if ((!strcmp(type, "clip") || !strcmp(type, "siglip")) && mm_node_get(root, "vision_config")) {
        /* a dual encoder: its vision tower (the text tower is not used) */
        struct fy_node *vc = mm_node_get(root, "vision_config");
        char vt[64] = "clip_vision_model";
        if (!strcmp(type, "siglip"))
            snprintf(vt, sizeof vt, "siglip_vision_model");
        memset(&m->vision, 0, sizeof m->vision);
        rc = read_vit(&d, vc, "vision_config", vt, &m->vision, err);
        m->has_vision = rc == 0;
        m->tile = m->vision.image_size;
    } else if (in_list(type, vision_types) || !strcmp(type, "whisper")) {
        rc = read_encoder(&d, root, "", !strcmp(type, "whisper") ? &m->audio : &m->vision, err);
        m->has_audio = !strcmp(type, "whisper");
        m->has_vision = !m->has_audio;
        m->tile = m->vision.image_size;
    } else if (mm_node_get(root, "vision_config") &&
               (mm_node_get(root, "text_config") || mm_node_get(root, "llm_config"))) {
        rc = read_composite(&d, root, type, m, err);
    } else {
        rc = mm_llm_from_node(&d, root, "", &m->llm, err);
        if (rc == 0)
            rc = mm_llm_validate(&m->llm, err);
        m->has_llm = rc == 0;
    }
    if (rc)
        goto out;
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
out:
    mm_doc_free(&d);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Encoder costs                                                             */
/* ------------------------------------------------------------------------ */

static int64_t enc_norm(const mm_encoder *e, int64_t width)
{
    return e->rmsnorm ? width : 2 * width;
}

int64_t mm_encoder_layer_params(const mm_encoder *e)
{
    int64_t h = e->hidden, f = e->ffn;
    int64_t p = 4 * h * h;                                  /* q, k, v, out */
    p += (e->qkv_bias ? 2 * h : 0) + (e->k_bias ? h : 0);   /* q, v biases; k bias */
    p += e->out_bias ? h : 0;
    p += 2 * h * f + (e->mlp_bias ? f + h : 0);
    p += 2 * enc_norm(e, h);
    if (e->qk_norm)
        p += 2 * enc_norm(e, h);
    if (e->layer_scale)
        p += 2 * h;
    return p;
}

int64_t mm_encoder_tokens(const mm_encoder *e)
{
    if (e->kind == MM_ENC_AUDIO)
        return e->frames;
    int64_t g = e->image_size / e->patch_size;
    return g * g + (e->cls_token ? 1 : 0);
}

int64_t mm_encoder_stem_params(const mm_encoder *e)
{
    int64_t h = e->hidden;
    if (e->kind == MM_ENC_AUDIO) /* conv1 mel->h k3, conv2 h->h k3, positions */
        return e->mel_bins * h * 3 + h + h * h * 3 + h + e->frames * h;
    int64_t p = e->channels * e->patch_size * e->patch_size * h + (e->patch_bias ? h : 0);
    p += mm_encoder_tokens(e) * h; /* learned positions */
    if (e->cls_token)
        p += h;
    return p;
}

int64_t mm_encoder_params(const mm_encoder *e)
{
    return mm_encoder_stem_params(e) + e->layers * mm_encoder_layer_params(e) +
           (e->pre_norm ? enc_norm(e, e->hidden) : 0) + (e->post_norm ? enc_norm(e, e->hidden) : 0);
}

double mm_encoder_layer_fwd_flops(const mm_encoder *e, double inputs)
{
    double h = (double)e->hidden, f = (double)e->ffn, n = (double)mm_encoder_tokens(e);
    return inputs * (2.0 * n * (4.0 * h * h + 2.0 * h * f) + 4.0 * n * n * h);
}

double mm_encoder_stem_fwd_flops(const mm_encoder *e, double inputs)
{
    double h = (double)e->hidden;
    if (e->kind == MM_ENC_AUDIO) { /* conv1 over 2*frames input frames, conv2 strided */
        double fr = (double)e->frames;
        return inputs * (2.0 * 2.0 * fr * 3.0 * (double)e->mel_bins * h + 2.0 * fr * 3.0 * h * h);
    }
    double g = (double)(e->image_size / e->patch_size);
    return inputs * 2.0 * g * g * (double)(e->channels * e->patch_size * e->patch_size) * h;
}

double mm_encoder_fwd_flops(const mm_encoder *e)
{
    return mm_encoder_stem_fwd_flops(e, 1.0) + (double)e->layers * mm_encoder_layer_fwd_flops(e, 1.0);
}

typedef struct op_list {
    mm_op_cost *ops;
    int n, cap;
} op_list;

static void push(op_list *l, const char *name, mm_op_kind kind, double flops, double bytes, double m,
                 double n, double k, double batch, bool causal)
{
    if (l->n < l->cap)
        l->ops[l->n] = (mm_op_cost){name, kind, flops, bytes, m, n, k, batch, causal, MM_OP_F};
    l->n++;
}

static void push_gemm(op_list *l, const char *name, double m, double n, double k, bool bias, double e)
{
    push(l, name, MM_OPK_GEMM, 2.0 * m * n * k, (m * k + k * n + m * n + (bias ? n : 0.0)) * e, m, n, k, 1.0,
         false);
}

static void push_mem(op_list *l, const char *name, double bytes)
{
    push(l, name, MM_OPK_MEM, 0.0, bytes, 0, 0, 0, 0, false);
}

int mm_encoder_layer_ops(const mm_encoder *e, double inputs, int tp, bool sp, int dtype_bytes,
                         mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    op_list l = {ops, 0, cap};
    double t = (double)tp, b = (double)dtype_bytes, h = (double)e->hidden, f = (double)e->ffn / t;
    double n = (double)mm_encoder_tokens(e), tok = inputs * n, tn = sp ? tok / t : tok;
    double q = h / t;
    push_mem(&l, "norm_attn", (2.0 * tn * h + (double)enc_norm(e, e->hidden)) * b);
    push_gemm(&l, "qkv", tok, 3.0 * q, h, e->qkv_bias, b);
    if (e->qk_norm)
        push_mem(&l, "qk_norm", 4.0 * tok * q * b);
    /* bidirectional: every token attends to every token of its input */
    push(&l, "attn", MM_OPK_ATTN, 4.0 * inputs * n * n * h / t, tok * 4.0 * q * b, n, n, (double)e->head_dim,
         inputs * (double)e->heads / t, false);
    push_gemm(&l, "attn_out", tok, h, q, false, b);
    push_mem(&l, "residual_attn", 3.0 * tn * h * b);
    push_mem(&l, "norm_mlp", (2.0 * tn * h + (double)enc_norm(e, e->hidden)) * b);
    push_gemm(&l, "fc1", tok, f, h, e->mlp_bias, b);
    push_mem(&l, "act", 2.0 * tok * f * b);
    push_gemm(&l, "fc2", tok, h, f, false, b);
    push_mem(&l, "residual_mlp", 3.0 * tn * h * b);
    return l.n <= l.cap ? l.n : -1;
}

int mm_encoder_stem_ops(const mm_encoder *e, double inputs, int tp, int dtype_bytes, mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    (void)tp; /* the stem is small and replicated over tp (Megatron's ViT) */
    op_list l = {ops, 0, cap};
    double b = (double)dtype_bytes, h = (double)e->hidden;
    if (e->kind == MM_ENC_AUDIO) {
        double fr = (double)e->frames;
        push_gemm(&l, "conv1", inputs * 2.0 * fr, h, 3.0 * (double)e->mel_bins, true, b);
        push_mem(&l, "gelu1", 4.0 * inputs * fr * h * b);
        push_gemm(&l, "conv2", inputs * fr, h, 3.0 * h, true, b);
        push_mem(&l, "pos_embed", 3.0 * inputs * fr * h * b);
    } else {
        double g = (double)(e->image_size / e->patch_size);
        double k = (double)(e->channels * e->patch_size * e->patch_size);
        push_gemm(&l, "patch_embed", inputs * g * g, h, k, e->patch_bias, b);
        push_mem(&l, "pos_embed", 3.0 * inputs * (double)mm_encoder_tokens(e) * h * b);
    }
    return l.n <= l.cap ? l.n : -1;
}

/* ------------------------------------------------------------------------ */
/* Projectors and the whole model                                            */
/* ------------------------------------------------------------------------ */

int64_t mm_projector_params(const mm_projector *p)
{
    switch (p->type) {
    case MM_PROJ_NONE: return 0;
    case MM_PROJ_LINEAR: return p->in * p->out + p->out;
    case MM_PROJ_MLP_GELU: return p->in * p->out + p->out + (p->depth - 1) * (p->out * p->out + p->out);
    case MM_PROJ_INTERNVL: return 2 * p->in + p->in * p->out + p->out + p->out * p->out + p->out;
    }
    return 0;
}

double mm_projector_fwd_flops(const mm_projector *p, double tokens)
{
    if (p->type == MM_PROJ_NONE)
        return 0.0;
    double in = (double)p->in, out = (double)p->out;
    return 2.0 * tokens * (in * out + (double)(p->depth - 1) * out * out);
}

int mm_projector_ops(const mm_projector *p, double tokens, int tp, int dtype_bytes, mm_op_cost *ops, int cap)
{
    if (tp < 1 || dtype_bytes < 1 || cap < 0)
        return -1;
    op_list l = {ops, 0, cap};
    if (p->type == MM_PROJ_NONE)
        return 0;
    double b = (double)dtype_bytes, in = (double)p->in, out = (double)p->out, t = (double)tp;
    if (p->type == MM_PROJ_INTERNVL)
        push_mem(&l, "proj_norm", (2.0 * tokens * in + 2.0 * in) * b);
    /* Megatron's MLP projector: column- then row-parallel */
    push_gemm(&l, "proj_fc1", tokens, out / t, in, true, b);
    for (int i = 1; i < p->depth; i++) {
        push_mem(&l, "proj_act", 2.0 * tokens * out / t * b);
        push_gemm(&l, i == p->depth - 1 ? "proj_fc2" : "proj_fc", tokens, i == p->depth - 1 ? out : out / t,
                  out / t, false, b);
    }
    return l.n <= l.cap ? l.n : -1;
}

int64_t mm_model_params(const mm_model *m)
{
    int64_t p = 0;
    if (m->has_llm)
        p += mm_llm_params(&m->llm);
    if (m->has_vision)
        p += mm_encoder_params(&m->vision) + mm_projector_params(&m->vision_proj);
    if (m->has_audio)
        p += mm_encoder_params(&m->audio) + mm_projector_params(&m->audio_proj);
    return p;
}

int64_t mm_model_tokens_per_tile(const mm_model *m)
{
    if (!m->has_vision)
        return 0;
    double g = (double)(m->vision.image_size / m->vision.patch_size);
    double r = m->pixel_shuffle > 0 ? m->pixel_shuffle : 1.0;
    return (int64_t)llround(g * g * r * r);
}
