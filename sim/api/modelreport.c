/* modelreport.c - what `mmsim model` reports about a model file: parameters
 * per module, forward FLOPs per token, tile and sample, and per-GPU memory
 * under a scenario's layout (report.h).  The CLI's table and the JSON of
 * the CLI and the C API all read this one mm_model_report.
 * Not for: simulation (mmsim run) or the memory model itself (model/memory.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/report.h"
#include "hw/cluster.h"
#include "model/memory.h"

static const mm_mem_schedule sched_of[] = {[MM_SCHED_GPIPE] = MM_MEM_GPIPE, [MM_SCHED_1F1B] = MM_MEM_1F1B,
                                           [MM_SCHED_INTERLEAVED] = MM_MEM_INTERLEAVED,
                                           [MM_SCHED_ZB_H1] = MM_MEM_ZB_H1};

/* The memory model's configuration for the scenario's LLM layout. */
static mm_mem_config mem_config(const mm_scenario *sc)
{
    const mm_module_layout *L = &sc->parallel.llm;
    return (mm_mem_config){
        .tp = L->tp, .pp = L->pp, .dp = L->dp, .cp = L->cp, .vpp = L->vpp, .ep = L->ep,
        .sp = sc->train.sequence_parallel && L->tp > 1,
        .zero = L->zero >= 0 ? L->zero : sc->train.zero,
        .recompute = (int)sc->train.recompute, .schedule = sched_of[sc->train.schedule],
        .micro_batches = (int)(sc->train.global_batch / (sc->train.micro_batch * L->dp)),
        .micro_batch = (double)sc->train.micro_batch, .seq = (double)sc->train.seq_len,
        .layers_per_stage = L->n_layers_per_stage ? L->layers_per_stage : NULL,
    };
}

int mm_report_llm_stage_memory(const mm_llm *llm, const mm_scenario *sc, int stage, mm_mem_rank *out,
                               double *in_flight)
{
    mm_mem_config c = mem_config(sc);
    if (in_flight)
        *in_flight = mm_mem_in_flight(c.schedule, stage, c.pp, c.vpp, c.micro_batches);
    return mm_mem_llm_rank(llm, &c, stage, out);
}

/* Memory of each LLM stage (and of the vision encoder on its own GPUs)
 * under the scenario's layout. */
static int llm_memory(const mm_model *m, const mm_scenario *sc, double cap, mm_model_report *r, mm_err *err)
{
    const mm_module_layout *L = &sc->parallel.llm;
    if (sc->train.global_batch % (sc->train.micro_batch * L->dp))
        return mm_scenario_fail(sc, err, "train.global_batch", "%lld is not divisible by micro_batch*dp = %lld*%d",
                                (long long)sc->train.global_batch, (long long)sc->train.micro_batch, L->dp);
    if (!L->n_layers_per_stage && m->llm.layers % L->pp)
        return mm_scenario_fail(sc, err, "parallel.llm.pp", "pp = %d does not divide the model's %lld layers", L->pp,
                                (long long)m->llm.layers);
    r->n_stages = L->pp;
    for (int k = 0; k < L->pp; k++) {
        mm_mem_rank mr;
        if (mm_report_llm_stage_memory(&m->llm, sc, k, &mr, NULL))
            return mm_scenario_fail(sc, err, "parallel.llm", "layout outside the memory model");
        r->stage_gib[k] = mr.total / MM_GIB;
        if (mr.total > cap)
            r->oom = true;
    }
    return 0;
}

static void vision_memory(const mm_model *m, const mm_scenario *sc, double cap, mm_model_report *r)
{
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_module_layout *V = sc->parallel.vision.present ? &sc->parallel.vision : NULL;
    bool frozen = false;
    for (int i = 0; i < sc->train.n_frozen; i++)
        if (!strcmp(sc->train.frozen[i], "vision"))
            frozen = true;
    int tp = V ? V->tp : 1, dp = V ? V->dp : L->dp;
    double inputs = (double)sc->train.micro_batch * (double)r->images * (m->max_tiles > 0 ? m->max_tiles : 1);
    mm_mem_rank vr;
    if (mm_mem_encoder_rank(&m->vision, inputs, tp, sc->train.sequence_parallel && tp > 1, dp, sc->train.zero,
                            (int)sc->train.recompute, 1, frozen, &vr) == 0) {
        r->vision_gib = vr.total / MM_GIB;
        if (vr.total > cap)
            r->oom = true;
    }
}

static int memory(const mm_model *m, const mm_scenario *sc, mm_model_report *r, mm_err *err)
{
    char topo[512];
    mm_sim_resolve_path(sc->topology, sc->source, topo, sizeof topo);
    mm_cluster *cl = malloc(sizeof *cl);
    if (!cl)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = mm_cluster_load(topo, sc->nodes, cl, err);
    if (rc) {
        free(cl);
        return rc;
    }
    double cap = cl->gpu.hbm_bytes - sc->train.memory_reserve_gib * MM_GIB;
    r->cap_gib = cl->gpu.hbm_bytes / MM_GIB;
    free(cl);
    r->vision_gib = NAN;
    if (m->has_llm && (rc = llm_memory(m, sc, cap, r, err)))
        return rc;
    if (m->has_vision)
        vision_memory(m, sc, cap, r);
    return 0;
}

int mm_model_report_make(const char *model_path, mm_scenario *sc, long long seq, long long images,
                         mm_model_report *r, mm_err *err)
{
    memset(r, 0, sizeof *r);
    mm_sim_resolve_path(model_path, NULL, r->path, sizeof r->path);
    r->model = malloc(sizeof *r->model);
    if (!r->model)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    const mm_model *m = r->model;
    int rc = mm_model_load(r->path, r->model, err);
    if (rc)
        return rc;
    if (seq == 0)
        seq = (long long)sc->train.seq_len;
    else
        sc->train.seq_len = seq;
    r->seq = seq;
    r->images = images;
    double s = (double)seq;
    r->tiles = (int)images * (m->max_tiles > 0 ? m->max_tiles : 1);
    r->image_tokens = m->has_vision ? (int64_t)r->tiles * mm_model_tokens_per_tile(m) : 0;
    if (m->has_llm) {
        double f = (double)m->llm.layers * mm_llm_layer_fwd_flops(&m->llm, 1, s) + mm_llm_head_fwd_flops(&m->llm, 1, s);
        r->llm_fwd_per_sample = f;
        r->llm_fwd_per_token = f / s;
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
    return memory(m, sc, r, err);
}

void mm_model_report_free(mm_model_report *r)
{
    free(r->model);
    r->model = NULL;
}

static void jkey_params(FILE *f, const char *name, int64_t p, bool *first)
{
    fprintf(f, "%s\"%s\": {\"params\": %lld}", *first ? "" : ", ", name, (long long)p);
    *first = false;
}

static void jnum(FILE *f, const char *key, double v)
{
    if (isfinite(v))
        fprintf(f, "  \"%s\": %.17g,\n", key, v);
    else
        fprintf(f, "  \"%s\": null,\n", key);
}

void mm_report_model_json(FILE *f, const mm_model_report *r, const mm_scenario *sc)
{
    const mm_model *m = r->model;
    const mm_module_layout *L = &sc->parallel.llm;
    fprintf(f, "{\n  \"model\": ");
    mm_json_string(f, m->name);
    fprintf(f, ",\n  \"params\": %lld,\n", (long long)mm_model_params(m));
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
    if (m->has_llm)
        jkey_params(f, "llm", mm_llm_params(&m->llm), &first);
    fprintf(f, "},\n");
    fprintf(f, "  \"seq\": %lld,\n  \"images\": %lld,\n  \"tiles\": %d,\n  \"image_tokens\": %lld,\n", r->seq,
            r->images, r->tiles, (long long)r->image_tokens);
    jnum(f, "flops_fwd_per_token", m->has_llm ? r->llm_fwd_per_token : NAN);
    jnum(f, "flops_fwd_per_sample", r->sample_fwd);
    jnum(f, "vision_flops_fwd_per_tile", m->has_vision ? r->vision_fwd_per_tile : NAN);
    jnum(f, "audio_flops_fwd_per_clip", m->has_audio ? r->audio_fwd_per_clip : NAN);
    fprintf(f, "  \"layout\": {\"tp\": %d, \"pp\": %d, \"dp\": %d, \"cp\": %d, \"zero\": %d, \"recompute\": \"%s\", "
               "\"sequence_parallel\": %s, \"micro_batch\": %lld},\n",
            L->tp, L->pp, L->dp, L->cp, sc->train.zero, mm_recompute_names[sc->train.recompute],
            sc->train.sequence_parallel ? "true" : "false", (long long)sc->train.micro_batch);
    fprintf(f, "  \"memory_gib\": [");
    for (int k = 0; k < r->n_stages; k++)
        fprintf(f, "%s%.6g", k ? ", " : "", r->stage_gib[k]);
    fprintf(f, "],\n");
    jnum(f, "vision_memory_gib", r->vision_gib);
    jnum(f, "hbm_gib", r->cap_gib);
    fprintf(f, "  \"oom\": %s\n}\n", r->oom ? "true" : "false");
}
