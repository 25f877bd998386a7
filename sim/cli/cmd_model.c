/* cmd_model.c - `mmsim model MODEL`: parameters per module, forward FLOPs
 * per token and per sample, and per-GPU memory under a layout (the default
 * scenario's, changed with --set like `mmsim run`).  Parsing and printing
 * only; the numbers come from sim/model and the scenario loader.
 * Not for: simulation (mmsim run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "mmsim_config.h"
#include "hw/cluster.h"
#include "model/memory.h"
#include "model/mllm.h"
#include "run/scenario.h"
#include "run/sim.h"

#define MAX_SETS 256

static int bad_arg(const char *what, const char *arg)
{
    return mm_cli_usage_error("model", NULL, what, arg);
}

typedef struct model_report {
    double llm_fwd_per_token, llm_fwd_per_sample, vision_fwd_per_tile, vision_fwd_per_sample;
    double proj_fwd_per_sample, audio_fwd_per_clip, sample_fwd;
    int tiles;
    int64_t image_tokens;
    int n_stages;
    double stage_gib[MM_MAX_PP];
    double vision_gib;
    bool oom;
    double cap_gib;
} model_report;

static void jkey_params(const char *name, int64_t p, bool *first)
{
    printf("%s\"%s\": {\"params\": %lld}", *first ? "" : ", ", name, (long long)p);
    *first = false;
}

static void jnum(const char *key, double v)
{
    if (isfinite(v))
        printf("  \"%s\": %.17g,\n", key, v);
    else
        printf("  \"%s\": null,\n", key);
}

/* Memory of each LLM stage (and of the vision encoder on its own GPUs)
 * under the scenario's layout. */
static int memory(const mm_model *m, const mm_scenario *sc, int images, model_report *r, mm_err *err)
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
    const mm_module_layout *L = &sc->parallel.llm;
    if (m->has_llm) {
        if (sc->train.global_batch % (sc->train.micro_batch * L->dp))
            return mm_scenario_fail(sc, err, "train.global_batch", "%lld is not divisible by micro_batch*dp = %lld*%d",
                                    (long long)sc->train.global_batch, (long long)sc->train.micro_batch, L->dp);
        if (!L->n_layers_per_stage && m->llm.layers % L->pp)
            return mm_scenario_fail(sc, err, "parallel.llm.pp", "pp = %d does not divide the model's %lld layers",
                                    L->pp, (long long)m->llm.layers);
        static const mm_mem_schedule sched[] = {[MM_SCHED_GPIPE] = MM_MEM_GPIPE, [MM_SCHED_1F1B] = MM_MEM_1F1B,
                                                [MM_SCHED_INTERLEAVED] = MM_MEM_INTERLEAVED,
                                                [MM_SCHED_ZB_H1] = MM_MEM_ZB_H1};
        mm_mem_config c = {
            .tp = L->tp, .pp = L->pp, .dp = L->dp, .cp = L->cp, .vpp = L->vpp, .ep = L->ep,
            .sp = sc->train.sequence_parallel && L->tp > 1,
            .zero = L->zero >= 0 ? L->zero : sc->train.zero,
            .recompute = (int)sc->train.recompute, .schedule = sched[sc->train.schedule],
            .micro_batches = (int)(sc->train.global_batch / (sc->train.micro_batch * L->dp)),
            .micro_batch = (double)sc->train.micro_batch, .seq = (double)sc->train.seq_len,
            .layers_per_stage = L->n_layers_per_stage ? L->layers_per_stage : NULL,
        };
        r->n_stages = L->pp;
        for (int k = 0; k < L->pp; k++) {
            mm_mem_rank mr;
            if (mm_mem_llm_rank(&m->llm, &c, k, &mr))
                return mm_scenario_fail(sc, err, "parallel.llm", "layout outside the memory model");
            r->stage_gib[k] = mr.total / MM_GIB;
            if (mr.total > cap)
                r->oom = true;
        }
    }
    r->vision_gib = NAN;
    if (m->has_vision) {
        const mm_module_layout *V = sc->parallel.vision.present ? &sc->parallel.vision : NULL;
        bool frozen = false;
        for (int i = 0; i < sc->train.n_frozen; i++)
            if (!strcmp(sc->train.frozen[i], "vision"))
                frozen = true;
        int tp = V ? V->tp : 1, dp = V ? V->dp : L->dp;
        double inputs = (double)sc->train.micro_batch * images * (m->max_tiles > 0 ? m->max_tiles : 1);
        mm_mem_rank vr;
        if (mm_mem_encoder_rank(&m->vision, inputs, tp, sc->train.sequence_parallel && tp > 1, dp,
                                sc->train.zero, (int)sc->train.recompute, 1, frozen, &vr) == 0) {
            r->vision_gib = vr.total / MM_GIB;
            if (vr.total > cap)
                r->oom = true;
        }
    }
    return 0;
}

int mm_cli_model(int argc, char **argv)
{
    const char *path = NULL;
    const char *sets[MAX_SETS + 1];
    int n_sets = 0;
    bool json = false;
    long long seq = 0, images = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--set") || !strcmp(a, "--seq") || !strcmp(a, "--images")) {
            if (i + 1 >= argc)
                return bad_arg("missing value after", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--set")) {
                if (n_sets == MAX_SETS)
                    return bad_arg("too many --set options at", v);
                sets[n_sets++] = v;
            } else {
                char *end;
                long long x = strtoll(v, &end, 10);
                if (*end || x < (a[2] == 's' ? 1 : 0) || x > (1LL << 30))
                    return bad_arg(a[2] == 's' ? "--seq needs a positive integer, got" : "--images needs an integer >= 0, got", v);
                if (a[2] == 's')
                    seq = x;
                else
                    images = x;
            }
        } else if (a[0] == '-' && a[1]) {
            return bad_arg("unknown option", a);
        } else if (!path) {
            path = a;
        } else {
            return bad_arg("more than one model given; extra", a);
        }
    }
    if (!path) {
        fprintf(stderr, "mmsim: <cli>: missing MODEL (see mmsim help model)\n");
        return 2;
    }
    mm_err err;
    mm_err_clear(&err);
    char resolved[512];
    mm_sim_resolve_path(path, NULL, resolved, sizeof resolved);
    static mm_model m;
    if (mm_model_load(resolved, &m, &err))
        return mm_cli_fail(&err);
    static mm_scenario sc;
    if (mm_scenario_load(&sc, NULL, sets, n_sets, &err))
        return mm_cli_fail(&err);
    if (seq == 0)
        seq = (long long)sc.train.seq_len;
    else
        sc.train.seq_len = seq;

    model_report r;
    memset(&r, 0, sizeof r);
    double s = (double)seq;
    r.tiles = (int)images * (m.max_tiles > 0 ? m.max_tiles : 1);
    r.image_tokens = m.has_vision ? (int64_t)r.tiles * mm_model_tokens_per_tile(&m) : 0;
    if (m.has_llm) {
        double f = (double)m.llm.layers * mm_llm_layer_fwd_flops(&m.llm, 1, s) + mm_llm_head_fwd_flops(&m.llm, 1, s);
        r.llm_fwd_per_sample = f;
        r.llm_fwd_per_token = f / s;
    }
    if (m.has_vision) {
        r.vision_fwd_per_tile = mm_encoder_fwd_flops(&m.vision);
        r.vision_fwd_per_sample = r.tiles * r.vision_fwd_per_tile;
        r.proj_fwd_per_sample = mm_projector_fwd_flops(&m.vision_proj, (double)r.image_tokens);
    }
    if (m.has_audio)
        r.audio_fwd_per_clip = mm_encoder_fwd_flops(&m.audio) + mm_projector_fwd_flops(&m.audio_proj, (double)m.audio.frames);
    r.sample_fwd = r.llm_fwd_per_sample + r.vision_fwd_per_sample + r.proj_fwd_per_sample + r.audio_fwd_per_clip;
    if (memory(&m, &sc, (int)images, &r, &err))
        return mm_cli_fail(&err);

    const mm_module_layout *L = &sc.parallel.llm;
    if (json) {
        printf("{\n");
        printf("  \"model\": \"%s\",\n", m.name);
        printf("  \"params\": %lld,\n", (long long)mm_model_params(&m));
        printf("  \"modules\": {");
        bool first = true;
        if (m.has_vision)
            jkey_params("vision", mm_encoder_params(&m.vision), &first);
        if (m.has_vision && m.vision_proj.type != MM_PROJ_NONE)
            jkey_params("projector", mm_projector_params(&m.vision_proj), &first);
        if (m.has_audio)
            jkey_params("audio", mm_encoder_params(&m.audio), &first);
        if (m.has_audio && m.audio_proj.type != MM_PROJ_NONE)
            jkey_params("audio_projector", mm_projector_params(&m.audio_proj), &first);
        if (m.has_llm)
            jkey_params("llm", mm_llm_params(&m.llm), &first);
        printf("},\n");
        printf("  \"seq\": %lld,\n  \"images\": %lld,\n  \"tiles\": %d,\n  \"image_tokens\": %lld,\n", seq, images,
               r.tiles, (long long)r.image_tokens);
        jnum("flops_fwd_per_token", m.has_llm ? r.llm_fwd_per_token : NAN);
        jnum("flops_fwd_per_sample", r.sample_fwd);
        jnum("vision_flops_fwd_per_tile", m.has_vision ? r.vision_fwd_per_tile : NAN);
        jnum("audio_flops_fwd_per_clip", m.has_audio ? r.audio_fwd_per_clip : NAN);
        printf("  \"layout\": {\"tp\": %d, \"pp\": %d, \"dp\": %d, \"cp\": %d, \"zero\": %d, \"recompute\": \"%s\", "
               "\"sequence_parallel\": %s, \"micro_batch\": %lld},\n",
               L->tp, L->pp, L->dp, L->cp, sc.train.zero, mm_recompute_names[sc.train.recompute],
               sc.train.sequence_parallel ? "true" : "false", (long long)sc.train.micro_batch);
        printf("  \"memory_gib\": [");
        for (int k = 0; k < r.n_stages; k++)
            printf("%s%.6g", k ? ", " : "", r.stage_gib[k]);
        printf("],\n");
        jnum("vision_memory_gib", r.vision_gib);
        jnum("hbm_gib", r.cap_gib);
        printf("  \"oom\": %s\n}\n", r.oom ? "true" : "false");
        return 0;
    }
    printf("mmsim %s: model %s (%s)\n", MMSIM_VERSION, m.name, resolved);
    printf("\n  module            parameters\n");
    if (m.has_vision)
        printf("  vision      %16.3f M   %s, %lld layers, h %lld, %lld tokens per %lld px tile\n",
               (double)mm_encoder_params(&m.vision) * 1e-6, m.vision.model_type, (long long)m.vision.layers,
               (long long)m.vision.hidden, (long long)mm_encoder_tokens(&m.vision), (long long)m.vision.image_size);
    if (m.has_vision && m.vision_proj.type != MM_PROJ_NONE)
        printf("  projector   %16.3f M   %lld -> %lld\n", (double)mm_projector_params(&m.vision_proj) * 1e-6,
               (long long)m.vision_proj.in, (long long)m.vision_proj.out);
    if (m.has_audio)
        printf("  audio       %16.3f M   whisper encoder, %lld layers, %lld frames\n",
               (double)mm_encoder_params(&m.audio) * 1e-6, (long long)m.audio.layers, (long long)m.audio.frames);
    if (m.has_llm)
        printf("  llm         %16.3f M   %lld layers, h %lld%s\n", (double)mm_llm_params(&m.llm) * 1e-6,
               (long long)m.llm.layers, (long long)m.llm.hidden, m.llm.experts ? ", MoE" : "");
    printf("  total       %16.3f M\n", (double)mm_model_params(&m) * 1e-6);
    printf("\n  forward FLOPs (Megatron convention: matmuls, attention dense)\n");
    if (m.has_llm)
        printf("  llm         %12.4g per token at seq %lld\n", r.llm_fwd_per_token, seq);
    if (m.has_vision)
        printf("  vision      %12.4g per tile; %d tile(s) for %lld image(s) -> %lld LLM tokens\n",
               r.vision_fwd_per_tile, r.tiles, images, (long long)r.image_tokens);
    if (m.has_audio)
        printf("  audio       %12.4g per clip\n", r.audio_fwd_per_clip);
    printf("  per sample  %12.4g\n", r.sample_fwd);
    printf("\n  memory per GPU: tp %d x pp %d x dp %d, ZeRO %d, recompute %s, micro-batch %lld x %lld\n", L->tp,
           L->pp, L->dp, sc.train.zero, mm_recompute_names[sc.train.recompute], (long long)sc.train.micro_batch,
           seq);
    for (int k = 0; k < r.n_stages; k++)
        printf("  llm stage %-3d %10.2f GiB\n", k, r.stage_gib[k]);
    if (isfinite(r.vision_gib))
        printf("  vision      %12.2f GiB\n", r.vision_gib);
    printf("  %s (HBM %.1f GiB, reserve %.1f GiB)\n", r.oom ? "DOES NOT FIT" : "fits", r.cap_gib,
           sc.train.memory_reserve_gib);
    return 0;
}
