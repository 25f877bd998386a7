/* cmd_model.c - `mmsim model MODEL`: parameters per module and forward
 * FLOPs per token and per sample (the model alone, no layout), then what
 * `mmsim run` with the same --set uses for the model's layout: per-stage
 * pass times and per-GPU memory from the cost bridge (run/costs.h), number
 * for number.  Parsing and printing only.
 * Not for: simulation (mmsim run); any cost of its own (one source). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "mmsim_config.h"
#include "model/memory.h"
#include "model/mllm.h"
#include "run/costs.h"
#include "scenario/scenario.h"
#include "run/sim.h"
#include "workload/workload.h"

#define MAX_SETS 256

static int bad_arg(const char *what, const char *arg)
{
    return mm_cli_usage_error("model", NULL, what, arg);
}

/* The model alone: FLOPs at seq tokens and `images` images per sample. */
typedef struct model_report {
    double llm_fwd_per_token, llm_fwd_per_sample, vision_fwd_per_tile, vision_fwd_per_sample;
    double proj_fwd_per_sample, audio_fwd_per_clip, sample_fwd;
    int tiles;
    int64_t image_tokens;
} model_report;

/* The layout: the scenario prepared as `mmsim run` prepares it, and the
 * cost bridge's answer for it. */
typedef struct layout_report {
    mm_sim *sim;          /* NULL: no layout to report, note says why */
    mm_sim_costs costs;
    mm_sim_memory mem;
    char note[1200];      /* why not: no LLM, or `mmsim run`'s refusal */
} layout_report;

static void layout_free(layout_report *l)
{
    if (l->sim) {
        mm_sim_costs_free(&l->costs);
        mm_sim_memory_free(&l->mem);
        mm_sim_free(l->sim);
        free(l->sim);
    }
    l->sim = NULL;
}

static void model_flops(const mm_model *m, double s, long long images, model_report *r)
{
    memset(r, 0, sizeof *r);
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
 * layout's stage times and memory.  A model without an LLM, or a layout
 * that `mmsim run` refuses (e.g. the default scenario's seq_len past a
 * GPT's learned positions), has none to report: l->sim stays NULL and
 * l->note says why, with run's message (file, line and key), while the
 * model's own report still stands.  Returns 0, or -code for internal
 * errors. */
static int layout_costs(const mm_model *m, const mm_scenario *sc, layout_report *l, mm_err *err)
{
    memset(l, 0, sizeof *l);
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

static void jkey_params(const char *name, int64_t p, bool *first)
{
    printf("%s\"%s\": {\"params\": %lld}", *first ? "" : ", ", name, (long long)p);
    *first = false;
}

static void jval(double v)
{
    if (isfinite(v))
        printf("%.9g", v);
    else
        printf("null");
}

static void jnum(const char *key, double v)
{
    printf("  \"%s\": ", key);
    jval(v);
    printf(",\n");
}

static double module_gib(const layout_report *l, const char *name)
{
    for (int i = 0; l->sim && i < l->mem.n_modules; i++)
        if (!strcmp(l->mem.module_name[i], name))
            return l->mem.module_gib[i];
    return NAN;
}

static void print_json_layout(const layout_report *l)
{
    if (!l->sim) {
        printf("  \"layout\": null,\n  \"layout_note\": ");
        mm_cli_json_string(l->note);
        printf(",\n  \"memory_gib\": [],\n");
        return;
    }
    const mm_sim *sim = l->sim;
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_build_spec *sp = &l->costs.spec;
    printf("  \"layout\": {\"gpus\": %d, \"tp\": %d, \"pp\": %d, \"dp\": %d, \"cp\": %d, \"vpp\": %d, \"ep\": %d, "
           "\"zero\": %d, \"recompute\": \"%s\", \"sequence_parallel\": %s, \"micro_batch\": %lld, "
           "\"micro_batches\": %d, \"llm_tokens_per_sample\": %.9g, \"placement\": \"%s\"},\n",
           mm_cluster_gpus(&sim->cluster), L->tp, L->pp, L->dp, L->cp, L->vpp, L->ep, sp->zero,
           mm_recompute_names[sc->train.recompute], sp->sp ? "true" : "false", (long long)sc->train.micro_batch,
           sim->micro_batches, sim->seq, mm_placement_names[sc->parallel.placement]);
    printf("  \"stage_times_s\": [");
    for (int v = 0; v < l->costs.n_vstages; v++) {
        const mm_stage_cost *c = &l->costs.stages[v];
        printf("%s{\"fwd\": ", v ? ", " : "");
        jval(c->fwd_s);
        printf(", \"bwd\": ");
        jval(c->bwd_s);
        printf(", \"wgrad\": ");
        jval(c->wgrad_s);
        printf(", \"optimizer\": ");
        jval(c->opt_s);
        printf("}");
    }
    printf("],\n  \"encoder_times_s\": {");
    for (int i = 0; i < sp->n_enc; i++) {
        printf("%s\"%s\": {\"fwd\": ", i ? ", " : "", sp->enc[i].name);
        jval(sp->enc[i].mb[0].fwd_s);
        printf(", \"bwd\": ");
        jval(sp->enc[i].mb[0].bwd_s);
        printf(", \"optimizer\": ");
        jval(sp->enc[i].opt_s);
        printf("}");
    }
    printf("},\n  \"memory_gib\": [");
    for (int k = 0; k < l->mem.n_stages; k++) {
        printf("%s", k ? ", " : "");
        jval(l->mem.stage_gib[k]);
    }
    printf("],\n  \"modules_memory_gib\": {");
    for (int i = 0; i < l->mem.n_modules; i++) {
        printf("%s\"%s\": ", i ? ", " : "", l->mem.module_name[i]);
        jval(l->mem.module_gib[i]);
    }
    printf("},\n");
    jnum("peak_memory_gib", l->mem.peak_gib);
}

static void print_json(const mm_model *m, long long seq, long long images, const model_report *r,
                       const layout_report *l)
{
    printf("{\n");
    printf("  \"model\": \"%s\",\n", m->name);
    printf("  \"params\": %lld,\n", (long long)mm_model_params(m));
    printf("  \"active_params\": %lld,\n", (long long)mm_model_active_params(m));
    if (m->has_llm && m->llm.mtp_layers > 0)
        printf("  \"mtp_params\": %lld,\n", (long long)mm_llm_mtp_params(&m->llm));
    if (m->has_vision)
        printf("  \"tokens_per_tile\": %lld,\n  \"tokens_per_frame\": %lld,\n",
               (long long)mm_model_tokens_per_tile(m), (long long)mm_model_tokens_per_frame(m));
    printf("  \"modules\": {");
    bool first = true;
    if (m->has_vision)
        jkey_params("vision", mm_encoder_params(&m->vision), &first);
    if (m->has_vision && m->vision_proj.type != MM_PROJ_NONE)
        jkey_params("projector", mm_projector_params(&m->vision_proj), &first);
    if (m->has_audio)
        jkey_params("audio", mm_encoder_params(&m->audio), &first);
    if (m->has_audio && m->audio_proj.type != MM_PROJ_NONE)
        jkey_params("audio_projector", mm_projector_params(&m->audio_proj), &first);
    if (m->has_llm) {
        printf("%s\"llm\": {\"params\": %lld, \"active_params\": %lld}", first ? "" : ", ",
               (long long)mm_llm_params(&m->llm), (long long)mm_llm_active_params(&m->llm));
        first = false;
    }
    printf("},\n");
    printf("  \"seq\": %lld,\n  \"images\": %lld,\n  \"tiles\": %d,\n  \"image_tokens\": %lld,\n", seq, images,
           r->tiles, (long long)r->image_tokens);
    jnum("flops_fwd_per_token", m->has_llm ? r->llm_fwd_per_token : NAN);
    jnum("flops_fwd_per_sample", r->sample_fwd);
    jnum("vision_flops_fwd_per_tile", m->has_vision ? r->vision_fwd_per_tile : NAN);
    jnum("audio_flops_fwd_per_clip", m->has_audio ? r->audio_fwd_per_clip : NAN);
    print_json_layout(l);
    jnum("vision_memory_gib", module_gib(l, "vision"));
    jnum("hbm_gib", l->sim ? l->mem.hbm_gib : NAN);
    printf("  \"oom\": %s\n}\n", l->sim && l->mem.oom ? "true" : "false");
}

static void print_text_model(const mm_model *m, const char *resolved, long long seq, long long images,
                             const model_report *r)
{
    printf("mmsim %s: model %s (%s)\n", MMSIM_VERSION, m->name, resolved);
    printf("\n  module            parameters\n");
    if (m->has_vision)
        printf("  vision      %16.3f M   %s, %lld layers, h %lld, %lld tokens per %lld px tile\n",
               (double)mm_encoder_params(&m->vision) * 1e-6, m->vision.model_type, (long long)m->vision.layers,
               (long long)m->vision.hidden, (long long)mm_encoder_tokens(&m->vision), (long long)m->vision.image_size);
    if (m->has_vision && m->vision_proj.type != MM_PROJ_NONE)
        printf("  projector   %16.3f M   %lld -> %lld\n", (double)mm_projector_params(&m->vision_proj) * 1e-6,
               (long long)m->vision_proj.in, (long long)m->vision_proj.out);
    if (m->has_audio)
        printf("  audio       %16.3f M   whisper encoder, %lld layers, %lld frames\n",
               (double)mm_encoder_params(&m->audio) * 1e-6, (long long)m->audio.layers, (long long)m->audio.frames);
    if (m->has_llm)
        printf("  llm         %16.3f M   %lld layers, h %lld%s\n", (double)mm_llm_params(&m->llm) * 1e-6,
               (long long)m->llm.layers, (long long)m->llm.hidden, m->llm.experts ? ", MoE" : "");
    if (m->has_llm && m->llm.experts)
        printf("  llm active  %16.3f M   per token (%lld of %lld routed experts)\n",
               (double)mm_llm_active_params(&m->llm) * 1e-6, (long long)m->llm.experts_per_tok,
               (long long)m->llm.experts);
    if (m->has_llm && m->llm.mtp_layers > 0)
        printf("  mtp         %16.3f M   %lld multi-token-prediction module(s), not in the total\n",
               (double)mm_llm_mtp_params(&m->llm) * 1e-6, (long long)m->llm.mtp_layers);
    printf("  total       %16.3f M\n", (double)mm_model_params(m) * 1e-6);
    if (m->has_vision)
        printf("  visual tokens: %lld per tile, %lld per video frame\n", (long long)mm_model_tokens_per_tile(m),
               (long long)mm_model_tokens_per_frame(m));
    printf("\n  forward FLOPs (Megatron convention: matmuls, attention dense)\n");
    if (m->has_llm)
        printf("  llm         %12.4g per token at seq %lld\n", r->llm_fwd_per_token, seq);
    if (m->has_vision)
        printf("  vision      %12.4g per tile; %d tile(s) for %lld image(s) -> %lld LLM tokens\n",
               r->vision_fwd_per_tile, r->tiles, images, (long long)r->image_tokens);
    if (m->has_audio)
        printf("  audio       %12.4g per clip\n", r->audio_fwd_per_clip);
    printf("  per sample  %12.4g\n", r->sample_fwd);
}

static void print_text_layout(const layout_report *l)
{
    if (!l->sim) {
        printf("\n  no layout: %s\n", l->note);
        return;
    }
    const mm_sim *sim = l->sim;
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_build_spec *sp = &l->costs.spec;
    printf("\n  layout (as `mmsim run` with the same --set): %d GPUs, llm tp %d x pp %d x dp %d (cp %d, vpp %d, "
           "ep %d), sp %s, ZeRO %d, recompute %s%s%s\n",
           mm_cluster_gpus(&sim->cluster), L->tp, L->pp, L->dp, L->cp, L->vpp, L->ep, sp->sp ? "on" : "off",
           sp->zero, mm_recompute_names[sc->train.recompute], sp->n_enc ? ", encoders " : "",
           sp->n_enc ? mm_placement_names[sc->parallel.placement] : "");
    printf("  micro-batch: %lld sample(s) of %.0f LLM tokens; %d micro-batches per DP rank\n",
           (long long)sc->train.micro_batch, sim->seq, sim->micro_batches);
    printf("\n  per micro-batch, one GPU   forward ms  backward ms   (W part)  optimizer ms\n");
    for (int v = 0; v < l->costs.n_vstages; v++) {
        const mm_stage_cost *c = &l->costs.stages[v];
        printf("  llm stage %-3d            %11.3f %12.3f %10.3f %13.3f\n", v, c->fwd_s * 1e3, c->bwd_s * 1e3,
               c->wgrad_s * 1e3, c->opt_s * 1e3);
    }
    for (int i = 0; i < sp->n_enc; i++)
        printf("  %-10s               %11.3f %12.3f %10s %13.3f\n", sp->enc[i].name, sp->enc[i].mb[0].fwd_s * 1e3,
               sp->enc[i].mb[0].bwd_s * 1e3, "", sp->enc[i].opt_s * 1e3);
    printf("\n  memory per GPU\n");
    for (int k = 0; k < l->mem.n_stages; k++)
        printf("  llm stage %-3d %10.2f GiB\n", k, l->mem.stage_gib[k]);
    for (int i = 1; i < l->mem.n_modules; i++)
        printf("  %-10s %13.2f GiB%s\n", l->mem.module_name[i], l->mem.module_gib[i],
               sp->enc[i - 1].placement == MM_ENC_COLOCATED     ? " (included in every stage above)"
               : sp->enc[i - 1].placement == MM_ENC_HOMOGENEOUS ? " (included in stage 0 above)"
                                                                : " (on its own GPUs)");
    printf("  %s (HBM %.1f GiB, reserve %.1f GiB)\n", l->mem.oom ? "DOES NOT FIT" : "fits", l->mem.hbm_gib,
           sc->train.memory_reserve_gib);
}

int mm_cli_model(int argc, char **argv)
{
    const char *path = NULL;
    const char *sets[MAX_SETS + 2];
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
    /* the layout: MODEL and --seq as `mmsim run --set model=MODEL --set train.seq_len=N` */
    char model_set[600], seq_set[64];
    if (strlen(path) + 6 >= sizeof model_set)
        return bad_arg("model path too long", path);
    snprintf(model_set, sizeof model_set, "model=%s", path);
    sets[n_sets++] = model_set;
    if (seq > 0) {
        snprintf(seq_set, sizeof seq_set, "train.seq_len=%lld", seq);
        sets[n_sets++] = seq_set;
    }
    static mm_scenario sc;
    if (mm_scenario_load(&sc, NULL, sets, n_sets, &err))
        return mm_cli_fail(&err);
    if (seq == 0) /* the scenario's seq_len, as --set left it */
        seq = (long long)sc.train.seq_len;
    model_report r;
    model_flops(&m, (double)seq, images, &r);
    layout_report l;
    /* Parameters and FLOPs need no layout: one that `mmsim run` refuses
     * (DeepSeek-V3's 61 layers under pp = 2) becomes l.note, not a refusal. */
    if (layout_costs(&m, &sc, &l, &err)) {
        mm_scenario_free(&sc);
        return mm_cli_fail(&err);
    }
    if (json)
        print_json(&m, seq, images, &r, &l);
    else {
        print_text_model(&m, resolved, seq, images, &r);
        print_text_layout(&l);
    }
    layout_free(&l);
    mm_scenario_free(&sc); /* after the sim, which borrows its strings */
    return 0;
}
