/* modelreport.c - what `mmsim model` reports about a model file (report.h):
 * parameters per module and forward FLOPs (the model alone), then what
 * `mmsim run` with the same --set uses for its layout: per-stage pass times
 * and per-GPU memory from the cost bridge (cost/costs.h), number for number.
 * The CLI's table and the JSON of the CLI and of the C API all read this
 * one mm_model_report.
 * Not for: simulation (mmsim run); any cost of its own (one source). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/report.h"
#include "workload/workload.h"
#include "cost/costs.h"

/* Whether the model reads images at native resolution as Qwen2-VL does
 * (its merger of merge x merge patches); its patch and merge. */
static bool native_geometry(const mm_model *m, int64_t *patch, int64_t *merge)
{
    if (!m->has_vision || !m->dynamic || m->vision_proj.type != MM_PROJ_QWEN_MERGER || m->pixel_shuffle <= 0)
        return false;
    if (patch)
        *patch = m->vision.patch_size;
    if (merge)
        *merge = (int64_t)floor(1.0 / m->pixel_shuffle + 0.5);
    return true;
}

int mm_model_report_native_image(mm_model_report *r, int64_t h, int64_t w, mm_err *err)
{
    int64_t patch, merge, rh, rw;
    if (!r->model || !native_geometry(r->model, &patch, &merge))
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--image",
                          "native-resolution images are modeled for Qwen2-VL-style towers only (a patch merger)");
    if (mm_native_resize(h, w, patch * merge, MM_NATIVE_MIN_PIXELS, MM_NATIVE_MAX_PIXELS, &rh, &rw))
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--image",
                          "%lldx%lld: the processor takes sides of 10 px or more and aspect ratios up to 200",
                          (long long)h, (long long)w);
    r->native_h = h;
    r->native_w = w;
    r->native_rh = rh;
    r->native_rw = rw;
    r->native_patches = (rh / patch) * (rw / patch);
    r->native_tokens = mm_native_image_tokens(h, w, patch, merge, MM_NATIVE_MIN_PIXELS, MM_NATIVE_MAX_PIXELS);
    return 0;
}

static void model_flops(const mm_model *m, double s, long long images, mm_model_report *r)
{
    r->tiles = (int)images * (m->max_tiles > 0 ? m->max_tiles : 1);
    /* as the workload counts them (anyres_max caps what reaches the LLM) */
    mm_token_model tm;
    mm_token_model_from_model(m, &tm);
    mm_sample img = {.images = (int32_t)images, .tiles = r->tiles};
    r->image_tokens = m->has_vision ? mm_sample_mm_tokens(&img, &tm) : 0;
    if (m->has_llm) {
        double f = (double)m->llm.layers * mm_llm_layer_fwd_flops(&m->llm, 1, s) + mm_llm_head_fwd_flops(&m->llm, 1, s);
        r->llm_fwd_per_sample = f;
        r->llm_fwd_per_token = f / s;
    }
    if (native_geometry(m, NULL, NULL)) {
        int64_t patch, merge;
        native_geometry(m, &patch, &merge);
        /* the smallest and largest images the processor makes */
        r->native_min_tokens = (int64_t)MM_NATIVE_MIN_PIXELS / (patch * patch * merge * merge);
        r->native_max_tokens = (int64_t)MM_NATIVE_MAX_PIXELS / (patch * patch * merge * merge);
    }
    if (m->has_vision) {
        r->vision_fwd_per_tile = mm_encoder_fwd_flops(&m->vision);
        r->vision_fwd_per_sample = r->tiles * r->vision_fwd_per_tile;
        r->proj_fwd_per_sample = mm_projector_fwd_flops(&m->vision_proj, (double)r->image_tokens);
    }
    if (m->has_audio)
        r->audio_fwd_per_clip =
            mm_encoder_fwd_flops(&m->audio) + mm_projector_fwd_flops(&m->audio_proj, (double)m->audio.frames);
    r->sample_fwd = r->llm_fwd_per_sample + r->vision_fwd_per_sample + r->proj_fwd_per_sample + r->audio_fwd_per_clip;
}

/* Prepares sc with `mmsim run`'s checks and asks the cost bridge for the
 * layout's stage times and memory.  A model without an LLM has no layout
 * to report (`mmsim run` refuses it): l->sim stays NULL. */
static int layout_costs(const mm_model *m, const mm_scenario *sc, mm_model_report *l, mm_err *err)
{
    if (!m->has_llm) {
        snprintf(l->note, sizeof l->note, "the model has no LLM decoder (`mmsim run` trains a model with one)");
        return 0;
    }
    l->sim = calloc(1, sizeof *l->sim);
    if (!l->sim)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = mm_sim_prepare(l->sim, sc, err);
    if (rc == -MM_EINPUT) {
        char msg[sizeof l->note - 40];
        mm_err_format(err, msg, sizeof msg);
        snprintf(l->note, sizeof l->note, "`mmsim run` refuses it: %s", msg);
        mm_err_clear(err);
        mm_sim_free(l->sim);
        free(l->sim);
        l->sim = NULL;
        return 0;
    }
    if (rc == 0)
        rc = mm_sim_stage_times(l->sim, &l->costs, err);
    if (rc == 0 && (rc = mm_sim_stage_memory(l->sim, &l->mem, err)))
        mm_sim_costs_free(&l->costs);
    if (rc) {
        mm_sim_free(l->sim);
        free(l->sim);
        l->sim = NULL;
    }
    return rc;
}


int mm_model_report_make(const char *scenario, const char *scenario_text, const char *model_path,
                         const char *const *sets, int n_sets, long long seq, long long images, mm_model_report *r,
                         mm_err *err)
{
    memset(r, 0, sizeof *r);
    mm_sim_resolve_path(model_path, NULL, r->path, sizeof r->path);
    r->model = malloc(sizeof *r->model);
    r->sc = calloc(1, sizeof *r->sc);
    const char **all = malloc(((size_t)n_sets + 2) * sizeof *all);
    int rc = 0;
    if (!r->model || !r->sc || !all || strlen(model_path) + 7 > sizeof r->model_set)
        rc = mm_err_set(err, r->model && r->sc && all ? MM_EINPUT : MM_EINTERNAL, "<cli>", 0, "MODEL", "%s",
                        r->model && r->sc && all ? "model path too long" : "out of memory");
    if (!rc)
        rc = mm_model_load(r->path, r->model, err);
    /* the layout: MODEL and --seq as `mmsim run --set model=MODEL --set train.seq_len=N` */
    int n = 0;
    for (int i = 0; !rc && i < n_sets; i++)
        all[n++] = sets[i];
    if (!rc) {
        snprintf(r->model_set, sizeof r->model_set, "model=%s", model_path);
        all[n++] = r->model_set;
        if (seq > 0) {
            snprintf(r->seq_set, sizeof r->seq_set, "train.seq_len=%lld", seq);
            all[n++] = r->seq_set;
        }
        rc = scenario_text ? mm_scenario_load_text(r->sc, scenario, scenario_text, all, n, err)
                           : mm_scenario_load(r->sc, scenario, all, n, err);
    }
    free(all);
    if (rc)
        return rc;
    r->seq = seq > 0 ? seq : (long long)r->sc->train.seq_len; /* as --set left it */
    r->images = images;
    model_flops(r->model, (double)r->seq, images, r);
    return layout_costs(r->model, r->sc, r, err);
}

void mm_model_report_free(mm_model_report *r)
{
    if (r->sim) {
        mm_sim_costs_free(&r->costs);
        mm_sim_memory_free(&r->mem);
        mm_sim_free(r->sim);
        free(r->sim);
    }
    r->sim = NULL;
    free(r->model);
    if (r->sc)
        mm_scenario_free(r->sc);
    free(r->sc);
    r->model = NULL;
    r->sc = NULL;
}

static void jkey_params(FILE *f, const char *name, int64_t p, bool *first)
{
    fprintf(f, "%s\"%s\": {\"params\": %lld}", *first ? "" : ", ", name, (long long)p);
    *first = false;
}

static void jval(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

static void jnum(FILE *f, const char *key, double v)
{
    fprintf(f, "  \"%s\": ", key);
    jval(f, v);
    fputs(",\n", f);
}

static double module_gib(const mm_model_report *l, const char *name)
{
    for (int i = 0; l->sim && i < l->mem.n_modules; i++)
        if (!strcmp(l->mem.module_name[i], name))
            return l->mem.module_gib[i];
    return NAN;
}

static void json_layout(FILE *f, const mm_model_report *l)
{
    if (!l->sim) {
        fprintf(f, "  \"layout\": null,\n  \"layout_note\": ");
        mm_json_string(f, l->note);
        fprintf(f, ",\n  \"memory_gib\": [],\n");
        return;
    }
    const mm_sim *sim = l->sim;
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_build_spec *sp = &l->costs.spec;
    fprintf(f, "  \"layout\": {\"gpus\": %d, \"tp\": %d, \"pp\": %d, \"dp\": %d, \"cp\": %d, \"vpp\": %d, \"ep\": %d, "
           "\"zero\": %d, \"recompute\": \"%s\", \"sequence_parallel\": %s, \"micro_batch\": %lld, "
           "\"micro_batches\": %d, \"llm_tokens_per_sample\": %.9g, \"placement\": \"%s\"},\n",
           mm_cluster_gpus(sim->cluster), L->lay.tp, L->lay.pp, L->lay.dp, L->lay.cp, L->lay.vpp, L->lay.ep, sp->zero,
           mm_recompute_names[sc->train.recompute], sp->sp ? "true" : "false", (long long)sc->train.micro_batch,
           sim->micro_batches, sim->seq, mm_placement_names[sc->parallel.placement]);
    fprintf(f, "  \"stage_times_s\": [");
    for (int v = 0; v < l->costs.n_vstages; v++) {
        const mm_stage_cost *c = &l->costs.stages[v];
        fprintf(f, "%s{\"fwd\": ", v ? ", " : "");
        jval(f, c->fwd_s);
        fprintf(f, ", \"bwd\": ");
        jval(f, c->bwd_s);
        fprintf(f, ", \"wgrad\": ");
        jval(f, c->wgrad_s);
        fprintf(f, ", \"optimizer\": ");
        jval(f, c->opt_s);
        fprintf(f, "}");
    }
    fprintf(f, "],\n  \"encoder_times_s\": {");
    for (int i = 0; i < sp->n_enc; i++) {
        fprintf(f, "%s\"%s\": {\"fwd\": ", i ? ", " : "", sp->enc[i].name);
        jval(f, sp->enc[i].mb[0].fwd_s);
        fprintf(f, ", \"bwd\": ");
        jval(f, sp->enc[i].mb[0].bwd_s);
        fprintf(f, ", \"optimizer\": ");
        jval(f, sp->enc[i].opt_s);
        fprintf(f, "}");
    }
    fprintf(f, "},\n  \"memory_gib\": [");
    for (int k = 0; k < l->mem.n_stages; k++) {
        fputs(k ? ", " : "", f);
        jval(f, l->mem.stage_gib[k]);
    }
    fprintf(f, "],\n  \"modules_memory_gib\": {");
    for (int i = 0; i < l->mem.n_modules; i++) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", l->mem.module_name[i]);
        jval(f, l->mem.module_gib[i]);
    }
    fprintf(f, "},\n");
    jnum(f, "peak_memory_gib", l->mem.peak_gib);
    jnum(f, "peak_allocated_gib", l->mem.peak_alloc_gib);
}

void mm_report_model_json(FILE *f, const mm_model_report *r)
{
    const mm_model *m = r->model;
    const mm_model_report *l = r;
    long long seq = r->seq, images = r->images;
    fprintf(f, "{\n");
    fputs("  \"model\": ", f);
    mm_json_string(f, m->name);
    fputs(",\n", f);
    fprintf(f, "  \"params\": %lld,\n", (long long)mm_model_params(m));
    fprintf(f, "  \"active_params\": %lld,\n", (long long)mm_model_active_params(m));
    if (m->has_llm && m->llm.mtp_layers > 0)
        fprintf(f, "  \"mtp_params\": %lld,\n", (long long)mm_llm_mtp_params(&m->llm));
    if (m->has_vision)
        fprintf(f, "  \"tokens_per_tile\": %lld,\n  \"tokens_per_frame\": %lld,\n",
                (long long)mm_model_tokens_per_tile(m), (long long)mm_model_tokens_per_frame(m));
    fprintf(f, "  \"modules\": {");
    bool first = true;
    if (m->has_vision)
        jkey_params(f, "vision", mm_encoder_params(&m->vision), &first);
    if (m->has_vision && m->vision_proj.type != MM_PROJ_NONE)
        jkey_params(f, "projector", mm_projector_params(&m->vision_proj), &first);
    if (m->has_audio)
        jkey_params(f, "audio", mm_encoder_params(&m->audio), &first);
    if (m->has_audio && m->audio_proj.type != MM_PROJ_NONE)
        jkey_params(f, "audio_projector", mm_projector_params(&m->audio_proj), &first);
    if (m->has_llm) {
        fprintf(f, "%s\"llm\": {\"params\": %lld, \"active_params\": %lld}", first ? "" : ", ",
                (long long)mm_llm_params(&m->llm), (long long)mm_llm_active_params(&m->llm));
        first = false;
    }
    fprintf(f, "},\n");
    fprintf(f, "  \"seq\": %lld,\n  \"images\": %lld,\n  \"tiles\": %d,\n  \"image_tokens\": %lld,\n", seq, images,
           r->tiles, (long long)r->image_tokens);
    if (r->native_max_tokens > 0)
        fprintf(f, "  \"native_tokens_per_image\": {\"min\": %lld, \"max\": %lld},\n",
                (long long)r->native_min_tokens, (long long)r->native_max_tokens);
    if (r->native_h > 0)
        fprintf(f,
                "  \"native_image\": {\"height\": %lld, \"width\": %lld, \"resized_height\": %lld, "
                "\"resized_width\": %lld, \"patches\": %lld, \"tokens\": %lld},\n",
                (long long)r->native_h, (long long)r->native_w, (long long)r->native_rh, (long long)r->native_rw,
                (long long)r->native_patches, (long long)r->native_tokens);
    jnum(f, "flops_fwd_per_token", m->has_llm ? r->llm_fwd_per_token : NAN);
    jnum(f, "flops_fwd_per_sample", r->sample_fwd);
    jnum(f, "vision_flops_fwd_per_tile", m->has_vision ? r->vision_fwd_per_tile : NAN);
    jnum(f, "audio_flops_fwd_per_clip", m->has_audio ? r->audio_fwd_per_clip : NAN);
    json_layout(f, l);
    jnum(f, "vision_memory_gib", module_gib(l, "vision"));
    jnum(f, "hbm_gib", l->sim ? l->mem.hbm_gib : NAN);
    fprintf(f, "  \"oom\": %s\n}\n", l->sim && l->mem.oom ? "true" : "false");
}

