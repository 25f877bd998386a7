/* prepare.c - what a scenario names, loaded: data-path lookup, the model and
 * topology files, the workload (a mixture or trace file, or the fixed
 * sample's shape and the encoders it gives work) and the perturbations
 * handed to the hardware layer.
 * Not for: checking the layout (check.c) or any cost (cost/costs.c). */
#include "scenario/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mmsim_config.h"

static int readable(const char *p) { return p[0] && access(p, R_OK) == 0; }

/* snprintf that reports truncation: a cut path would name another file. */
static bool fits(int n, size_t len) { return n >= 0 && (size_t)n < len; }

/* The data folders, in the order they are tried: $MMSIM_DATADIR, the
 * installed one (PREFIX/share/mmsim, compiled in), then two beside the
 * running program, for an installation moved after it was built: a
 * Python wheel's commands (VENV/bin/mmsim; pip puts the data files at
 * VENV/mmsim, docs/python.md) and a prefix copied elsewhere
 * (PREFIX/bin/../share/mmsim).  "" where there is none. */
enum { N_DATA_DIRS = 4 };
typedef struct data_dirs {
    const char *dirs[N_DATA_DIRS];
    char beside[2][1100];
} data_dirs;

static const char *const *data_dirs_get(data_dirs *dd)
{
    const char *env = getenv("MMSIM_DATADIR");
    dd->dirs[0] = env ? env : "";
    dd->dirs[1] = MMSIM_DATADIR;
    dd->beside[0][0] = dd->beside[1][0] = '\0';
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = '\0'; /* the program's folder */
        if (!fits(snprintf(dd->beside[0], sizeof dd->beside[0], "%s/../mmsim", exe), sizeof dd->beside[0]))
            dd->beside[0][0] = '\0';
        if (!fits(snprintf(dd->beside[1], sizeof dd->beside[1], "%s/../share/mmsim", exe), sizeof dd->beside[1]))
            dd->beside[1][0] = '\0';
    }
    dd->dirs[2] = dd->beside[0];
    dd->dirs[3] = dd->beside[1];
    return dd->dirs;
}

void mm_sim_resolve_path(const char *path, const char *scenario_file, char *out, size_t len)
{
    char cand[1024];
    if (!fits(snprintf(out, len, "%s", path), len))
        out[0] = '\0'; /* too long for the caller: names no file, so "cannot open" follows */
    if (readable(path) || path[0] == '/')
        return;
    if (scenario_file && scenario_file[0] && scenario_file[0] != '<') {
        const char *slash = strrchr(scenario_file, '/');
        if (slash && fits(snprintf(cand, sizeof cand, "%.*s/%s", (int)(slash - scenario_file), scenario_file, path),
                          sizeof cand) &&
            readable(cand) && fits(snprintf(out, len, "%s", cand), len))
            return;
    }
    data_dirs dd;
    const char *const *dirs = data_dirs_get(&dd);
    for (size_t i = 0; i < N_DATA_DIRS; i++) {
        if (!dirs[i][0])
            continue;
        if (fits(snprintf(cand, sizeof cand, "%s/%s", dirs[i], path), sizeof cand) && readable(cand) &&
            fits(snprintf(out, len, "%s", cand), len))
            return;
    }
    if (!fits(snprintf(out, len, "%s", path), len))
        out[0] = '\0';
}

/* Is p under dir ("dir/..."), and where does the rest start? */
static const char *under_dir(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--; /* "DIR/" names the same folder as "DIR" */
    if (n == 0 || strncmp(p, dir, n) || p[n] != '/')
        return NULL;
    while (p[n] == '/')
        n++;
    return p[n] ? p + n : NULL;
}

void mm_sim_data_relative(const char *resolved, char *out, size_t len)
{
    data_dirs dd;
    const char *const *dirs = data_dirs_get(&dd);
    const char *rel = resolved;
    for (size_t i = 0; i < N_DATA_DIRS && rel == resolved; i++) {
        const char *r = dirs[i][0] ? under_dir(resolved, dirs[i]) : NULL;
        if (r)
            rel = r;
    }
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2; /* "./models/x.yaml" is "models/x.yaml" */
    if (!fits(snprintf(out, len, "%s", rel), len))
        out[0] = '\0';
}

/* Adds the vision or audio encoder of the model to the scenario's run. */
static mm_sim_encoder *add_encoder(mm_sim *sim, bool audio, double inputs)
{
    const mm_scenario *sc = &sim->sc;
    const mm_model *mo = sim->model;
    mm_token_model tm;
    mm_token_model_from_model(mo, &tm);
    mm_sim_encoder *e = &sim->enc[sim->n_enc++];
    e->enc = audio ? &mo->audio : &mo->vision;
    e->proj = audio ? &mo->audio_proj : &mo->vision_proj;
    e->name = audio ? "audio" : "vision";
    e->layout = audio ? sc->parallel.audio : sc->parallel.vision;
    e->inputs_per_sample = inputs;
    double clip = tm.audio_clip_s > 0 ? tm.audio_clip_s : 30.0;
    e->tokens_per_input = audio ? tm.tokens_per_audio_s * clip : (double)mm_model_proj_tokens_per_tile(mo);
    for (int i = 0; i < sc->train.n_frozen; i++) {
        e->frozen_tower |= !strcmp(sc->train.frozen[i], e->name);
        e->frozen_proj |= !strcmp(sc->train.frozen[i], audio ? "audio_projector" : "projector");
    }
    return e;
}

void mm_sim_free_workload(mm_sim *sim)
{
    if (sim->wl) {
        mm_workload_free(sim->wl);
        free(sim->wl);
        sim->wl = NULL;
    }
    if (sim->workload_path)
        sim->workload_path[0] = '\0';
}

void mm_sim_free(mm_sim *sim)
{
    mm_sim_free_workload(sim);
    mm_cluster_free(sim->cluster); /* NULL: nothing */
    free(sim->cluster);
    if (sim->model)
        mm_moe_cache_free(sim->model->llm.moe.cache); /* check.c's */
    free(sim->model);
    free(sim->fw);
    free(sim->paths);
    sim->paths = NULL;
    sim->cluster = NULL;
    sim->model = NULL;
    sim->llm = NULL;
    sim->fw = NULL;
    sim->model_path = sim->topology_path = sim->workload_path = sim->framework_path = NULL;
}

/* A mixture or trace file: samples are drawn per iteration.  The LLM's
 * sequences are at most train.seq_len tokens (longer samples are cut, as
 * model_max_length does); the vision encoder (if the model has one) gets
 * each micro-batch's tiles and frames. */
static int load_workload_file(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_model *mo = sim->model;
    mm_sim_resolve_path(sc->workload.path, sc->source, sim->workload_path, MM_SIM_PATH_MAX);
    if (!readable(sim->workload_path))
        return mm_scenario_fail(sc, err, "workload", "cannot open workload file '%s'", sc->workload.path);
    sim->wl = calloc(1, sizeof *sim->wl);
    if (!sim->wl)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = mm_workload_load(sim->workload_path, sim->wl, err);
    if (rc) {
        free(sim->wl);
        sim->wl = NULL;
        return rc;
    }
    mm_token_model_from_model(mo, &sim->tm);
    sim->tm.max_tokens = sc->train.seq_len;
    /* the early memory check is a bound: every micro-batch of the largest
     * sample the workload can hold (its own maxima; the model's max_tiles
     * when a mixture's draw is unbounded), one clip; each iteration's own
     * data decides (datamem.c) */
    double inputs = mm_workload_max_inputs(sim->wl);
    if (inputs < 1)
        inputs = mo->max_tiles > 0 ? mo->max_tiles : 1;
    if (mo->has_vision) /* costs (planner pre-scores) keep the model's max_tiles */
        add_encoder(sim, false, mo->max_tiles > 0 ? mo->max_tiles : 1)->max_inputs = inputs;
    if (mo->has_audio)
        add_encoder(sim, true, 1);
    return 0;
}

/* The samples' shape: LLM tokens per sample, and the encoders that have
 * work.  A model without an encoder ignores the encoder sections and the
 * images (its samples are train.seq_len text tokens, as with `text`), so
 * any LLM runs on top of the default multimodal scenario; a text workload
 * gives an encoder nothing to do. */
int mm_sim_check_workload(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_model *mo = sim->model;
    sim->seq = (double)sc->train.seq_len;
    sim->n_enc = 0;
    if (sc->workload.kind == MM_WORKLOAD_FILE)
        return load_workload_file(sim, err);
    if (sc->workload.kind != MM_WORKLOAD_FIXED)
        return 0;
    double tiles = (double)sc->workload.images * sc->workload.tiles, audio_s = sc->workload.audio_seconds;
    if (!mo->has_vision && !mo->has_audio)
        return 0; /* design.md: a model without an encoder runs on top of a
                     multimodal scenario; its samples are train.seq_len text.
                     A model with only one kind of encoder ignores the other
                     modality's part of the sample. */
    mm_token_model tm;
    mm_token_model_from_model(mo, &tm);
    double clip = tm.audio_clip_s > 0 ? tm.audio_clip_s : 30.0;
    double clips = audio_s > 0 && mo->has_audio ? ceil(audio_s / clip - 1e-12) : 0;
    /* the workload's own count: anyres_max caps what reaches the LLM */
    mm_sample img = {.images = (int32_t)sc->workload.images, .tiles = (int32_t)tiles};
    double visual = mo->has_vision ? (double)mm_sample_mm_tokens(&img, &tm) : 0;
    double aural = clips > 0 ? audio_s * tm.tokens_per_audio_s : 0;
    double tokens = (double)sc->workload.text_tokens + visual + aural;
    if (tokens > (double)sc->train.seq_len)
        return mm_scenario_fail(sc, err, "train.seq_len",
                                "a sample is %.0f LLM tokens (%lld text + %.0f visual), more than seq_len %lld",
                                tokens, (long long)sc->workload.text_tokens, visual, (long long)sc->train.seq_len);
    if (tokens < 1)
        return mm_scenario_fail(sc, err, "workload", "a sample has no tokens");
    sim->seq = tokens;
    if (tiles > 0 && mo->has_vision)
        add_encoder(sim, false, tiles);
    if (clips > 0)
        add_encoder(sim, true, clips);
    return 0;
}


/* The scenario's perturbations, checked against the cluster and handed to
 * the hardware layer (the cluster carries them, hw/perturb.h); a
 * node_group entry rewrites its group's NIC rate here. */
static int apply_perturb(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    mm_cluster *c = sim->cluster;
    char key[32], msg[200], path[64];
    int bad = mm_perturb_check(&sc->perturb, c, key, sizeof key, msg, sizeof msg);
    if (bad >= 0) {
        snprintf(path, sizeof path, "perturb[%d].%s", bad, key);
        return mm_scenario_fail(sc, err, path, "%s", msg);
    }
    for (int i = 0; i < sc->perturb.n; i++) {
        const mm_perturb_entry *e = &sc->perturb.e[i];
        int k = e->kind;
        if (sc->network == MM_NET_ANALYTIC && (k == MM_PT_NIC || k == MM_PT_RAIL || k == MM_PT_SWITCH || k == MM_PT_LINK)) {
            snprintf(path, sizeof path, "perturb[%d].kind", i);
            return mm_scenario_fail(sc, err, path, "%s perturbs links, which only network: flow models "
                                    "(the analytic model has no link graph)", mm_perturb_kind_names[k]);
        }
        if (k == MM_PT_NODE_GROUP)
            for (int g = 0; g < c->n_groups; g++)
                if (!strcmp(c->groups[g].name, e->group))
                    c->groups[g].nic_bw = e->nic_gbit_s * 1e9 / 8.0;
    }
    c->pt = sc->perturb;
    return 0;
}

/* The profile's loader.rates, relative to the profile's folder (as given
 * when absolute), into sim->rates. */
static int load_loader_rates(mm_sim *sim, mm_err *err)
{
    const char *rates = sim->fw->loader_rates, *slash = strrchr(sim->framework_path, '/');
    char path[MM_SIM_PATH_MAX + 256];
    if (rates[0] == '/' || !slash)
        snprintf(path, sizeof path, "%s", rates);
    else
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - sim->framework_path), sim->framework_path, rates);
    return mm_loader_rates_load(path, &sim->rates, err);
}

/* train.framework: a profile name (frameworks/NAME.yaml, found like any
 * data file) or a profile file (the padding, which depends on the layout,
 * is check.c's); then the attention kernel: train.attention
 * unless auto, else the profile's for this GPU's compute capability.  A GPU
 * with attention tables must have one for that kernel: a missing table is
 * refused by name, not replaced by another kernel's. */
static int load_framework(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    char rel[600];
    bool file = strchr(sc->train.framework, '/') || strstr(sc->train.framework, ".yaml");
    snprintf(rel, sizeof rel, file ? "%s" : "frameworks/%s.yaml", sc->train.framework);
    mm_sim_resolve_path(rel, sc->source, sim->framework_path, MM_SIM_PATH_MAX);
    if (!readable(sim->framework_path))
        return mm_scenario_fail(sc, err, "train.framework",
                                "no framework profile '%s' (frameworks/: megatron-core, megatron-local, "
                                "hf-deepspeed, fsdp; or a profile file)", sc->train.framework);
    int rc = mm_framework_load(sim->framework_path, sim->fw, err);
    if (!rc && sc->data.workers >= 0)
        rc = load_loader_rates(sim, err);
    if (rc)
        return rc;
    /* train.grad_reduce overrides the profile's element for this precision,
     * so every reader of mm_framework_grad_bytes (gradient memory, bucket
     * and reduce sizes, the optimizer's copies) sees the one value */
    if (sc->train.grad_reduce != MM_TGRAD_AUTO && (int)sc->train.precision < (int)MM_DTYPE_COUNT)
        sim->fw->grad_reduce_bytes[sc->train.precision] = sc->train.grad_reduce == MM_TGRAD_FP32 ? 4 : 2;
    static const mm_attn_impl from_key[] = {
        [MM_ATTN_FLASH] = MM_ATTN_IMPL_FLASH,   [MM_ATTN_UNFUSED] = MM_ATTN_IMPL_UNFUSED,
        [MM_ATTN_FLASH1] = MM_ATTN_IMPL_FLASH1, [MM_ATTN_FLASH2] = MM_ATTN_IMPL_FLASH2,
        [MM_ATTN_FLASH3] = MM_ATTN_IMPL_FLASH3, [MM_ATTN_CUDNN] = MM_ATTN_IMPL_CUDNN,
        [MM_ATTN_UNFUSED_EAGER] = MM_ATTN_IMPL_UNFUSED_EAGER};
    const mm_gpu_spec *g = &sim->cluster->gpu;
    bool from_fw = sc->train.attention == MM_ATTN_AUTO;
    sim->attn = from_fw ? mm_framework_attention(sim->fw, g->compute_capability) : from_key[sc->train.attention];
    /* No fused attention kernel runs below sm_75: FlashAttention targets
     * Turing and Ampere (its first README lists SM70, the V100, as not yet
     * supported), FlashAttention-2 Ampere and newer (Dao-AILab/
     * flash-attention README).  A framework's choice falls back to its
     * unfused core there; a fused kind asked for by name is refused. */
    if (g->compute_capability > 0 && g->compute_capability < 7.5 && !mm_attn_impl_unfused(sim->attn)) {
        if (!from_fw)
            return mm_scenario_fail(sc, err, "train.attention",
                                    "%s attention does not run on %s (compute capability %.1f): no fused attention "
                                    "kernel below sm_75; use unfused or unfused-eager",
                                    mm_attn_impl_names[sim->attn], g->name, g->compute_capability);
        sim->attn = MM_ATTN_IMPL_UNFUSED;
    }
    const mm_kernel_tables *k = &g->kernels;
    bool any = k->has_attn;
    for (int i = 0; i < MM_ATTN_NAMED_TABLES; i++)
        any = any || k->has_impl[i];
    if (any && !mm_attn_impl_unfused(sim->attn) && !mm_kernel_attn_table(k, sim->attn))
        return mm_scenario_fail(sc, err, from_fw ? "train.framework" : "train.attention",
                                "%s runs %s attention on %s (compute capability %.1f) and '%s' has no table for it "
                                "(gpu.kernels.%s)", from_fw ? sim->fw->name : "train.attention",
                                mm_attn_impl_names[sim->attn], g->name, g->compute_capability, sc->topology,
                                mm_attn_impl_names[sim->attn]);
    return 0;
}

int mm_sim_load(mm_sim *sim, const mm_scenario *sc, mm_err *err)
{
    memset(sim, 0, sizeof *sim); /* callers free a previous sim first (mm_sim_free) */
    sim->sc = *sc;
    sim->paths = calloc(1, sizeof *sim->paths);
    sim->model = calloc(1, sizeof *sim->model); /* zeroed: mm_sim_free reads its MoE cache */
    sim->cluster = calloc(1, sizeof *sim->cluster);
    sim->fw = malloc(sizeof *sim->fw);
    int rc = 0;
    bool inline_model = mm_scenario_model_inline(sc);
    if (!sim->paths || !sim->model || !sim->cluster || !sim->fw) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    } else {
        sim->model_path = sim->paths->model;
        sim->topology_path = sim->paths->topology;
        sim->workload_path = sim->paths->workload;
        sim->framework_path = sim->paths->framework;
        mm_sim_resolve_path(sc->model, sc->source, sim->model_path, MM_SIM_PATH_MAX);
        mm_sim_resolve_path(sc->topology, sc->source, sim->topology_path, MM_SIM_PATH_MAX);
        if (inline_model)
            snprintf(sim->model_path, MM_SIM_PATH_MAX, "inline model of %s", sc->source);
    }
    if (rc == 0 && !inline_model && !readable(sim->model_path))
        rc = mm_scenario_fail(sc, err, "model", "cannot open model file '%s'", sc->model);
    else if (rc == 0 && !readable(sim->topology_path))
        rc = mm_scenario_fail(sc, err, "cluster.topology", "cannot open topology file '%s'", sc->topology);
    if (rc == 0)
        rc = mm_scenario_load_model(sc, sim->model_path, sim->model, err);
    if (rc == 0 && inline_model) /* what runs store and reports name it by */
        snprintf(sim->model_path, MM_SIM_PATH_MAX, "inline:%s", sim->model->name);
    if (rc == 0 && !sim->model->has_llm)
        rc = mm_scenario_fail(sc, err, "model", "'%s' has no LLM decoder; `mmsim run` trains a model with one "
                              "(`mmsim model` reports an encoder's costs)", sc->model);
    if (rc == 0) {
        sim->llm = &sim->model->llm;
        rc = mm_cluster_load(sim->topology_path, sc->nodes, sim->cluster, err); /* frees its own on error */
    }
    if (rc == 0)
        rc = load_framework(sim, err);
    if (rc == 0)
        rc = apply_perturb(sim, err);
    if (rc)
        mm_sim_free(sim); /* a failed load holds nothing */
    return rc;
}
