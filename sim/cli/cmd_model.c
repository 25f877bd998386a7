/* cmd_model.c - `mmsim model MODEL`: parameters per module and forward
 * FLOPs per token and per sample (the model alone, no layout), then what
 * `mmsim run` with the same --set uses for the model's layout: per-stage
 * pass times and per-GPU memory from the cost bridge (cost/costs.h), number
 * for number.  Parsing and printing only: the report (and its JSON, which
 * the C API returns too) is sim/api/modelreport.c's.
 * Not for: simulation (mmsim run); any cost of its own (one source). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/report.h"
#include "workload/workload.h"
#include "cli/cli.h"
#include "mmsim_config.h"

#define MAX_SETS 256

static int bad_arg(const char *what, const char *arg)
{
    return mm_cli_usage_error("model", NULL, what, arg);
}

static void print_text_model(const mm_model_report *r)
{
    const mm_model *m = r->model;
    const char *resolved = r->path;
    long long seq = r->seq, images = r->images;
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
    if (r->native_max_tokens > 0)
        printf("  native resolution: %lld to %lld tokens per image (smart_resize, min/max pixels %d/%d)\n",
               (long long)r->native_min_tokens, (long long)r->native_max_tokens, MM_NATIVE_MIN_PIXELS,
               MM_NATIVE_MAX_PIXELS);
    if (r->native_h > 0)
        printf("  image %lldx%lld: resized to %lldx%lld, %lld patches, %lld LLM tokens\n", (long long)r->native_h,
               (long long)r->native_w, (long long)r->native_rh, (long long)r->native_rw, (long long)r->native_patches,
               (long long)r->native_tokens);
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

static void print_text_layout(const mm_model_report *l)
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
           mm_cluster_gpus(sim->cluster), L->lay.tp, L->lay.pp, L->lay.dp, L->lay.cp, L->lay.vpp, L->lay.ep, sp->sp ? "on" : "off",
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

/* The options (cli.h: completion scripts are made from them too). */
const struct option mm_cli_model_longopts[] = {
    {"help", no_argument, NULL, 'h'},      {"json", no_argument, NULL, 'J'},
    {"set", required_argument, NULL, 's'}, {"seq", required_argument, NULL, 'S'},
    {"images", required_argument, NULL, 'i'}, {"image", required_argument, NULL, 'I'},
    {NULL, 0, NULL, 0}};
const char mm_cli_model_shortopts[] = "hs:";

int mm_cli_model(int argc, char **argv)
{
    const char *path = NULL;
    const char *sets[MAX_SETS];
    int n_sets = 0;
    bool json = false;
    long long seq = 0, images = 1, img_h = 0, img_w = 0;
    int c, x;
    while ((c = mm_cli_getopt(argc, argv, mm_cli_model_shortopts, mm_cli_model_longopts)) != -1) {
        switch (c) {
        case 'h': return mm_cli_help("model");
        case 'J': json = true; break;
        case 's':
            if (n_sets == MAX_SETS)
                return bad_arg("too many --set options at", optarg);
            sets[n_sets++] = optarg;
            break;
        case 'S':
            if (mm_cli_int("model", "--seq", optarg, 1, 1L << 30, &x))
                return 2;
            seq = x;
            break;
        case 'i':
            if (mm_cli_int("model", "--images", optarg, 0, 1L << 30, &x))
                return 2;
            images = x;
            break;
        case 'I': {
            char tail = 0;
            if (sscanf(optarg, "%lldx%lld%c", &img_h, &img_w, &tail) != 2 || img_h < 1 || img_w < 1 ||
                img_h > (1LL << 20) || img_w > (1LL << 20))
                return bad_arg("--image wants HEIGHTxWIDTH in pixels (1 to 1048576), got", optarg);
            break;
        }
        default: return 2;
        }
    }
    if (mm_cli_operand("model", argc, argv, "model", &path))
        return 2;
    if (!path) {
        fprintf(stderr, "mmsim: <cli>: missing MODEL (see mmsim help model)\n");
        return 2;
    }
    mm_err err;
    mm_err_clear(&err);
    mm_model_report r;
    int rc = mm_model_report_make(NULL, NULL, path, sets, n_sets, seq, images, &r, &err);
    if (!rc && img_h > 0)
        rc = mm_model_report_native_image(&r, img_h, img_w, &err);
    if (rc) {
        mm_model_report_free(&r);
        return mm_cli_fail(&err);
    }
    if (json) {
        mm_report_model_json(stdout, &r);
    } else {
        print_text_model(&r);
        print_text_layout(&r);
    }
    mm_model_report_free(&r);
    return 0;
}
