/* cmd_model.c - `mmsim model MODEL`: parameters per module, forward FLOPs
 * per token and per sample, and per-GPU memory under a layout (the default
 * scenario's, changed with --set like `mmsim run`).  Parsing and printing
 * only; the numbers come from sim/model and the scenario loader.
 * Not for: simulation (mmsim run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/report.h"
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
    fprintf(stderr, "mmsim: <cli>: %s '%s' (see mmsim help model)\n", what, arg);
    return 2;
}

int mm_cli_model(int argc, char **argv)
{
    const char *path = NULL;
    const char *sets[MAX_SETS + 1];
    int n_sets = 0;
    bool json = false;
    long long seq = 0, images = 1;
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},      {"json", no_argument, NULL, 'J'},
        {"set", required_argument, NULL, 's'}, {"seq", required_argument, NULL, 'S'},
        {"images", required_argument, NULL, 'i'}, {NULL, 0, NULL, 0}};
    int c, x;
    while ((c = mm_cli_getopt(argc, argv, "hs:", longopts)) != -1) {
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
        default: return 2;
        }
    }
    if (optind < argc)
        path = argv[optind++];
    if (optind < argc)
        return bad_arg("more than one model given; extra", argv[optind]);
    if (!path) {
        fprintf(stderr, "mmsim: <cli>: missing MODEL (see mmsim help model)\n");
        return 2;
    }
    mm_err err;
    mm_err_clear(&err);
    static mm_scenario sc;
    if (mm_scenario_load(&sc, NULL, sets, n_sets, &err))
        return mm_cli_fail(&err);
    mm_model_report r;
    if (mm_model_report_make(path, &sc, seq, images, &r, &err)) {
        mm_model_report_free(&r);
        return mm_cli_fail(&err);
    }
    const mm_model *mp = r.model;
    seq = r.seq;
    const mm_module_layout *L = &sc.parallel.llm;
    if (json) {
        mm_report_model_json(stdout, &r, &sc);
        mm_model_report_free(&r);
        return 0;
    }
    printf("mmsim %s: model %s (%s)\n", MMSIM_VERSION, mp->name, r.path);
    printf("\n  module            parameters\n");
    if (mp->has_vision)
        printf("  vision      %16.3f M   %s, %lld layers, h %lld, %lld tokens per %lld px tile\n",
               (double)mm_encoder_params(&mp->vision) * 1e-6, mp->vision.model_type, (long long)mp->vision.layers,
               (long long)mp->vision.hidden, (long long)mm_encoder_tokens(&mp->vision), (long long)mp->vision.image_size);
    if (mp->has_vision && mp->vision_proj.type != MM_PROJ_NONE)
        printf("  projector   %16.3f M   %lld -> %lld\n", (double)mm_projector_params(&mp->vision_proj) * 1e-6,
               (long long)mp->vision_proj.in, (long long)mp->vision_proj.out);
    if (mp->has_audio)
        printf("  audio       %16.3f M   whisper encoder, %lld layers, %lld frames\n",
               (double)mm_encoder_params(&mp->audio) * 1e-6, (long long)mp->audio.layers, (long long)mp->audio.frames);
    if (mp->has_llm)
        printf("  llm         %16.3f M   %lld layers, h %lld%s\n", (double)mm_llm_params(&mp->llm) * 1e-6,
               (long long)mp->llm.layers, (long long)mp->llm.hidden, mp->llm.experts ? ", MoE" : "");
    printf("  total       %16.3f M\n", (double)mm_model_params(mp) * 1e-6);
    printf("\n  forward FLOPs (Megatron convention: matmuls, attention dense)\n");
    if (mp->has_llm)
        printf("  llm         %12.4g per token at seq %lld\n", r.llm_fwd_per_token, seq);
    if (mp->has_vision)
        printf("  vision      %12.4g per tile; %d tile(s) for %lld image(s) -> %lld LLM tokens\n",
               r.vision_fwd_per_tile, r.tiles, images, (long long)r.image_tokens);
    if (mp->has_audio)
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
    mm_model_report_free(&r);
    return 0;
}
