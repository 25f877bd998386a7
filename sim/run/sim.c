/* sim.c - the scenario-to-metrics path: resolve files, validate the layout,
 * derive per-stage costs from the model and the GPU, build, execute and
 * measure each iteration.
 *
 * Known limits of the foundation, refused with a clear error rather than
 * approximated: cp/vpp/ep > 1, interleaved and zero-bubble schedules,
 * ZeRO-3, Megatron's overlap switches, non-text workloads and
 * batching policies other than `sequential` (later issues add each). */
#include "run/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "hw/compute.h"
#include "hw/net.h"
#include "model/memory.h"
#include "model/mllm.h"
#include "mmsim_config.h"
#include "parallel/build.h"
#include "parallel/passtimes.h"
#include "run/exec.h"

void mm_metrics_free(mm_metrics *m)
{
    if (!m)
        return;
    free(m->iters);
    free(m->stages);
    mm_critpath_free(&m->crit);
    m->iters = NULL;
    m->stages = NULL;
    m->n_iters = m->n_stages = 0;
}

void mm_sim_timeline_free(mm_sim_timeline *tl)
{
    if (!tl)
        return;
    mm_graph_free(&tl->graph);
    free(tl->start);
    free(tl->end);
    tl->start = tl->end = NULL;
}

static int readable(const char *p) { return p[0] && access(p, R_OK) == 0; }

void mm_sim_resolve_path(const char *path, const char *scenario_file, char *out, size_t len)
{
    char cand[1024];
    snprintf(out, len, "%s", path);
    if (readable(path) || path[0] == '/')
        return;
    if (scenario_file && scenario_file[0] && scenario_file[0] != '<') {
        const char *slash = strrchr(scenario_file, '/');
        if (slash) {
            snprintf(cand, sizeof cand, "%.*s/%s", (int)(slash - scenario_file), scenario_file, path);
            if (readable(cand)) {
                snprintf(out, len, "%s", cand);
                return;
            }
        }
    }
    const char *env = getenv("MMSIM_DATADIR");
    const char *dirs[] = {env ? env : "", MMSIM_DATADIR};
    for (size_t i = 0; i < 2; i++) {
        if (!dirs[i][0])
            continue;
        snprintf(cand, sizeof cand, "%s/%s", dirs[i], path);
        if (readable(cand)) {
            snprintf(out, len, "%s", cand);
            return;
        }
    }
}

/* Adds the vision or audio encoder of the model to the scenario's run. */
static mm_sim_encoder *add_encoder(mm_sim *sim, bool audio, double inputs)
{
    const mm_scenario *sc = &sim->sc;
    const mm_model *mo = &sim->model;
    mm_token_model tm;
    mm_token_model_from_model(mo, &tm);
    mm_sim_encoder *e = &sim->enc[sim->n_enc++];
    e->enc = audio ? &mo->audio : &mo->vision;
    e->proj = audio ? &mo->audio_proj : &mo->vision_proj;
    e->name = audio ? "audio" : "vision";
    e->layout = audio ? sc->parallel.audio : sc->parallel.vision;
    e->inputs_per_sample = inputs;
    double clip = tm.audio_clip_s > 0 ? tm.audio_clip_s : 30.0;
    e->tokens_per_input = audio ? tm.tokens_per_audio_s * clip : (double)mm_model_tokens_per_tile(mo);
    for (int i = 0; i < sc->train.n_frozen; i++) {
        e->frozen_tower |= !strcmp(sc->train.frozen[i], e->name);
        e->frozen_proj |= !strcmp(sc->train.frozen[i], audio ? "audio_projector" : "projector");
    }
    return e;
}

void mm_sim_free(mm_sim *sim)
{
    if (sim->wl) {
        mm_workload_free(sim->wl);
        free(sim->wl);
        sim->wl = NULL;
    }
}

/* A mixture or trace file: samples are drawn per iteration.  The LLM's
 * sequences are at most train.seq_len tokens (longer samples are cut, as
 * model_max_length does); the vision encoder (if the model has one) gets
 * each micro-batch's tiles and frames. */
static int load_workload_file(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_model *mo = &sim->model;
    mm_sim_resolve_path(sc->workload.path, sc->source, sim->workload_path, sizeof sim->workload_path);
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
    /* memory is checked for the largest sample: the model's most tiles, one clip */
    if (mo->has_vision)
        add_encoder(sim, false, mo->max_tiles > 0 ? mo->max_tiles : 1);
    if (mo->has_audio)
        add_encoder(sim, true, 1);
    return 0;
}

/* The samples' shape: LLM tokens per sample, and the encoders that have
 * work.  A model without an encoder ignores the encoder sections and the
 * images (its samples are train.seq_len text tokens, as with `text`), so
 * any LLM runs on top of the default multimodal scenario; a text workload
 * gives an encoder nothing to do. */
static int check_workload(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_model *mo = &sim->model;
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
    double visual = mo->has_vision ? tiles * (double)mm_model_tokens_per_tile(mo) : 0;
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

/* Encoder layouts against the placement and the GPUs left by the LLM. */
static int check_encoders(mm_sim *sim, long long llm_gpus, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    int gpus = mm_cluster_gpus(&sim->cluster);
    long long used = llm_gpus;
    for (int i = 0; i < sim->n_enc; i++) {
        mm_sim_encoder *e = &sim->enc[i];
        mm_module_layout *L = &e->layout;
        char key[48];
        snprintf(key, sizeof key, "parallel.%s", e->name);
        if (!L->present) { /* no section: the smallest layout */
            L->present = true;
            L->tp = L->pp = L->dp = L->cp = L->vpp = L->ep = 1;
            L->zero = -1;
        }
        if (L->cp != 1 || L->vpp != 1 || L->ep != 1)
            return mm_scenario_fail(sc, err, key, "encoders take tp, sp, pp, dp and zero (cp, vpp and ep must be 1: "
                                    "an encoder's inputs are short tiles and clips, not long contexts)");
        if (sc->parallel.placement == MM_PLACE_HOMOGENEOUS)
            continue;
        snprintf(key, sizeof key, "parallel.%s.tp", e->name);
        if (e->enc->heads % L->tp)
            return mm_scenario_fail(sc, err, key, "tp = %d does not divide the encoder's %lld heads", L->tp,
                                    (long long)e->enc->heads);
        if (sc->parallel.placement == MM_PLACE_COLOCATED) {
            snprintf(key, sizeof key, "parallel.%s.dp", e->name);
            if (L->pp != 1 || (long long)L->tp * L->dp != llm_gpus)
                return mm_scenario_fail(sc, err, key,
                                        "colocated: the encoder spans the LLM's %lld GPUs, so tp*dp must be %lld "
                                        "and pp 1 (got tp %d, pp %d, dp %d)", llm_gpus, llm_gpus, L->tp, L->pp, L->dp);
            continue;
        }
        if (L->pp > e->enc->layers) {
            snprintf(key, sizeof key, "parallel.%s.pp", e->name);
            return mm_scenario_fail(sc, err, key, "pp = %d exceeds the encoder's %lld layers", L->pp,
                                    (long long)e->enc->layers);
        }
        used += (long long)L->tp * L->pp * L->dp;
    }
    if (used != gpus) {
        char key[48];
        snprintf(key, sizeof key, "parallel.%s.dp", sim->n_enc ? sim->enc[0].name : "llm");
        return mm_scenario_fail(sc, err, sim->n_enc ? key : "parallel.llm.dp",
                                "the layout uses %lld GPUs (LLM %lld + encoders on their own GPUs %lld), but the "
                                "cluster has %d (%d nodes x %d GPUs)", used, llm_gpus, used - llm_gpus, gpus,
                                sim->cluster.nodes, sim->cluster.gpus_per_node);
    }
    return 0;
}

static int check_layout(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_llm *m = &sim->llm;
    int gpus = mm_cluster_gpus(&sim->cluster);
    bool moe = m->experts > 0;
    if (L->ep > 1 && !moe)
        return mm_scenario_fail(sc, err, "parallel.llm.ep", "expert parallelism (ep = %d) needs an MoE model", L->ep);
    if (L->ep > 1 && (L->dp % L->ep || m->experts % L->ep))
        return mm_scenario_fail(sc, err, "parallel.llm.ep",
                                "ep = %d must divide dp = %d and the model's %lld experts (Megatron folds expert "
                                "groups into data parallelism)", L->ep, L->dp, (long long)m->experts);
    if (L->cp > 1 && sc->train.seq_len % (2 * L->cp))
        return mm_scenario_fail(sc, err, "parallel.llm.cp",
                                "seq_len %lld is not divisible by 2*cp = %d (each CP rank takes two load-balanced chunks)",
                                (long long)sc->train.seq_len, 2 * L->cp);
    if (L->vpp > 1 && sc->train.schedule != MM_SCHED_INTERLEAVED)
        return mm_scenario_fail(sc, err, "parallel.llm.vpp", "vpp = %d needs train.schedule: interleaved", L->vpp);
    int order[MM_DIM_COUNT];
    if (mm_build_parse_order(sc->parallel.order, order))
        return mm_scenario_fail(sc, err, "parallel.order",
                                "'%s' is not an order of tp, cp, dp and pp (ep may stand right before dp), "
                                "e.g. tp-cp-ep-dp-pp", sc->parallel.order);
    long long need = (long long)L->tp * L->cp * L->pp * L->dp;
    int rc = check_workload(sim, err);
    if (rc)
        return rc;
    bool own = sc->parallel.placement == MM_PLACE_PIPELINE || sc->parallel.placement == MM_PLACE_DISJOINT;
    if (need != gpus && !(own && sim->n_enc > 0))
        return mm_scenario_fail(sc, err, "parallel.llm.dp",
                                "tp*cp*pp*dp = %d*%d*%d*%d = %lld GPUs, but the cluster has %d (%d nodes x %d GPUs)",
                                L->tp, L->cp, L->pp, L->dp, need, gpus, sim->cluster.nodes, sim->cluster.gpus_per_node);
    if ((rc = check_encoders(sim, need, err)))
        return rc;
    if (sim->cluster.gpus_per_node % L->tp && L->tp < sim->cluster.gpus_per_node)
        return mm_scenario_fail(sc, err, "parallel.llm.tp",
                                "tp = %d does not divide the %d GPUs of a node, so TP groups would straddle nodes",
                                L->tp, sim->cluster.gpus_per_node);
    if (m->heads % L->tp)
        return mm_scenario_fail(sc, err, "parallel.llm.tp", "tp = %d does not divide the model's %lld attention heads",
                                L->tp, (long long)m->heads);
    if (L->n_layers_per_stage) {
        if (L->n_layers_per_stage != L->pp)
            return mm_scenario_fail(sc, err, "parallel.llm.layers_per_stage",
                                    "has %d entries but pp = %d", L->n_layers_per_stage, L->pp);
        long long sum = 0;
        for (int s = 0; s < L->pp; s++) {
            if (L->layers_per_stage[s] < 1)
                return mm_scenario_fail(sc, err, "parallel.llm.layers_per_stage",
                                        "entry %d is %d; every stage needs at least one layer", s, L->layers_per_stage[s]);
            /* interleaved: each stage's layers in vpp equal chunks (Megatron-LM
             * asserts the same of --decoder-first/last-pipeline-num-layers) */
            if (L->layers_per_stage[s] % L->vpp)
                return mm_scenario_fail(sc, err, "parallel.llm.layers_per_stage",
                                        "entry %d is %d layers, not a multiple of vpp = %d (each stage splits its "
                                        "layers into vpp equal model chunks)", s, L->layers_per_stage[s], L->vpp);
            sum += L->layers_per_stage[s];
        }
        if (sum != m->layers)
            return mm_scenario_fail(sc, err, "parallel.llm.layers_per_stage",
                                    "sums to %lld layers, but the model has %lld", sum, (long long)m->layers);
    } else if (m->layers % ((long long)L->pp * L->vpp)) {
        return mm_scenario_fail(sc, err, L->vpp > 1 ? "parallel.llm.vpp" : "parallel.llm.pp",
                                "pp*vpp = %d*%d does not divide the model's %lld layers (give "
                                "parallel.llm.layers_per_stage for an uneven split)",
                                L->pp, L->vpp, (long long)m->layers);
    }
    if (sc->train.global_batch % (sc->train.micro_batch * L->dp))
        return mm_scenario_fail(sc, err, "train.global_batch",
                                "%lld is not divisible by micro_batch*dp = %lld*%d",
                                (long long)sc->train.global_batch, (long long)sc->train.micro_batch, L->dp);
    sim->micro_batches = (int)(sc->train.global_batch / (sc->train.micro_batch * L->dp));
    if (sc->train.schedule == MM_SCHED_INTERLEAVED && sim->micro_batches % L->pp)
        return mm_scenario_fail(sc, err, "train.global_batch",
                                "the interleaved schedule needs micro-batches per DP rank (%d) to be a multiple of "
                                "pp = %d (Megatron-LM's requirement)", sim->micro_batches, L->pp);
    if (sc->train.overlap_param_gather && sc->train.zero < 1)
        return mm_scenario_fail(sc, err, "train.overlap_param_gather",
                                "overlaps the distributed optimizer's parameter all-gather: needs train.zero >= 1");
    for (int i = 0; i < sc->train.n_frozen; i++)
        if (!strcmp(sc->train.frozen[i], "llm"))
            return mm_scenario_fail(sc, err, "train.frozen", "a frozen LLM is not modeled yet");
    if (sc->batching != MM_BATCH_SEQUENTIAL && !sim->wl)
        return mm_scenario_fail(sc, err, "batching",
                                "'%s' needs samples that differ: a mixture or trace file as the workload "
                                "(with `text` or a fixed sample every policy is `sequential`)",
                                mm_batching_names[sc->batching]);
    if (sc->train.seq_len > m->max_pos && m->learned_pos)
        return mm_scenario_fail(sc, err, "train.seq_len", "%lld exceeds the model's %lld learned positions",
                                (long long)sc->train.seq_len, (long long)m->max_pos);
    mm_dtype dt = (mm_dtype)sc->train.precision;
    if (!(sim->cluster.gpu.peak_flops[dt] > 0))
        return mm_scenario_fail(sc, err, "train.precision", "%s has no %s tensor-core peak",
                                sim->cluster.gpu.name, mm_precision_names[sc->train.precision]);
    return 0;
}

/* The scenario's perturbations, checked against the cluster and handed to
 * the hardware layer (the cluster carries them, hw/perturb.h); a
 * node_group entry rewrites its group's NIC rate here. */
static int apply_perturb(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    mm_cluster *c = &sim->cluster;
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

int mm_sim_load(mm_sim *sim, const mm_scenario *sc, mm_err *err)
{
    memset(sim, 0, sizeof *sim); /* callers free a previous workload first */
    sim->sc = *sc;
    mm_sim_resolve_path(sc->model, sc->source, sim->model_path, sizeof sim->model_path);
    mm_sim_resolve_path(sc->topology, sc->source, sim->topology_path, sizeof sim->topology_path);
    if (!readable(sim->model_path))
        return mm_scenario_fail(sc, err, "model", "cannot open model file '%s'", sc->model);
    if (!readable(sim->topology_path))
        return mm_scenario_fail(sc, err, "cluster.topology", "cannot open topology file '%s'", sc->topology);
    int rc = mm_model_load(sim->model_path, &sim->model, err);
    if (rc == 0 && !sim->model.has_llm)
        rc = mm_scenario_fail(sc, err, "model", "'%s' has no LLM decoder; `mmsim run` trains a model with one "
                              "(`mmsim model` reports an encoder's costs)", sc->model);
    if (rc)
        return rc;
    sim->llm = sim->model.llm;
    rc = mm_cluster_load(sim->topology_path, sc->nodes, &sim->cluster, err);
    if (rc)
        return rc;
    return apply_perturb(sim, err);
}

int mm_sim_prepare(mm_sim *sim, const mm_scenario *sc, mm_err *err)
{
    int rc = mm_sim_load(sim, sc, err);
    return rc ? rc : check_layout(sim, err);
}

int mm_sim_relayout(mm_sim *sim, mm_err *err)
{
    mm_sim_free(sim); /* a workload file is loaded again by check_layout */
    sim->n_enc = 0;
    sim->micro_batches = 0;
    memset(sim->enc, 0, sizeof sim->enc);
    return check_layout(sim, err);
}

/* ---- costs ---- */

typedef struct pass_times {
    double fwd, bwd, attn_fwd; /* seconds */
    double wgrad;              /* the weight-gradient part of bwd */
    double mem_fwd, mem_bwd, mem_wgrad; /* of which memory-bound kernels (MM_OPK_MEM) */
} pass_times;

/* Seconds of one op on the GPU: GEMMs from the GEMM table by shape,
 * attention from the flash-attention table (sequence length = geometric
 * mean of query and key lengths), memory-bound kernels from the bandwidth
 * table by bytes (compute.h; single factors where a GPU has no tables).
 * Empty ops (a pass with nothing to do) cost nothing. */
static double op_time(const mm_gpu_spec *g, mm_dtype dt, const mm_op_cost *o)
{
    switch (o->kind) {
    case MM_OPK_GEMM:
        return mm_gemm_time(g, dt, o->m, o->n, o->k, o->batch, o->bytes);
    case MM_OPK_ATTN: {
        bool bwd = o->pass == MM_OP_B; /* its flops are 2x forward (Megatron) */
        return mm_attn_time(g, dt, bwd ? 0.5 * o->flops : o->flops, sqrt(o->m * o->n), o->k, o->causal,
                            bwd ? MM_ATTN_BWD : MM_ATTN_FWD, o->bytes);
    }
    case MM_OPK_MEM:
        return o->bytes > 0 ? mm_mem_time(g, o->bytes) : 0.0;
    }
    return 0.0;
}

/* Forward, backward and weight-gradient time of a list of forward kernels:
 * each op's B (input gradient) and W (weight gradient) passes come from
 * mm_op_pass (llm.h), so a GEMM's backward is two GEMMs of transposed
 * shapes, flash attention's backward runs 2.5x its forward FLOPs at the
 * table's backward throughput, and memory-bound kernels move twice the
 * bytes backward. */
static pass_times time_ops(const mm_gpu_spec *g, mm_dtype dt, const mm_op_cost *ops, int n);

/* With train.attention: unfused each attention core becomes the GEMMs and
 * memory-bound kernels that frameworks ran before flash attention. */
static pass_times time_layer(const mm_gpu_spec *g, mm_dtype dt, const mm_op_cost *ops, int n, bool unfused)
{
    if (!unfused)
        return time_ops(g, dt, ops, n);
    mm_op_cost x[MM_LLM_MAX_OPS + 8];
    memset(x, 0, sizeof x);
    int k = 0;
    for (int i = 0; i < n; i++) {
        int got = ops[i].kind == MM_OPK_ATTN ? mm_llm_attn_unfused(&ops[i], 2, x + k, MM_LLM_MAX_OPS + 8 - k) : -1;
        if (got > 0)
            k += got;
        else
            x[k++] = ops[i];
    }
    pass_times t = time_ops(g, dt, x, k);
    /* what selective recomputation re-runs: the whole core */
    t.attn_fwd = 0;
    for (int i = 0; i < k; i++)
        if (!strncmp(x[i].name, "attn_", 5) && strcmp(x[i].name, "attn_out"))
            t.attn_fwd += time_ops(g, dt, &x[i], 1).fwd;
    return t;
}

static pass_times time_ops(const mm_gpu_spec *g, mm_dtype dt, const mm_op_cost *ops, int n)
{
    pass_times t = {.fwd = 0};
    for (int i = 0; i < n; i++) {
        mm_op_cost b = mm_op_pass(&ops[i], MM_OP_B), w = mm_op_pass(&ops[i], MM_OP_W);
        double tf = op_time(g, dt, &ops[i]), tw = op_time(g, dt, &w);
        t.fwd += tf;
        t.bwd += op_time(g, dt, &b) + tw;
        t.wgrad += tw;
        if (ops[i].kind == MM_OPK_ATTN)
            t.attn_fwd += tf;
        if (ops[i].kind == MM_OPK_MEM) {
            t.mem_fwd += tf;
            t.mem_bwd += op_time(g, dt, &b) + tw;
            t.mem_wgrad += tw;
        }
    }
    return t;
}

/* Bytes of HBM traffic per parameter of a mixed-precision Adam step as
 * Megatron runs it: read fp32 master weight, momentum, variance and
 * gradient (16), write master, momentum, variance (12) and the bf16 copy
 * (2) -- Kingma and Ba's update, Micikevicius et al.'s mixed-precision
 * master weights. */
#define MM_ADAM_BYTES_PER_PARAM 30.0

/* Megatron-LM's DDP bucket: max(40M, 1M x dp) parameters
 * (DistributedDataParallelConfig.bucket_size default). */
static double bucket_params(int dp) { return dp * 1e6 > 40e6 ? dp * 1e6 : 40e6; }

/* Per-stage pass times measured elsewhere (train.pass_times): they replace
 * the compute model for F, B and W, and the network for pipeline transfers. */
static int apply_pass_times(const mm_sim *sim, mm_stage_cost *st, int V, mm_build_spec *spec, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    char path[512];
    mm_sim_resolve_path(sc->train.pass_times, sc->source, path, sizeof path);
    mm_pass_times pt;
    int rc = mm_pass_times_load(path, &pt, err);
    if (rc)
        return rc;
    if (pt.n_stages != V) {
        mm_pass_times_free(&pt);
        return mm_scenario_fail(sc, err, "train.pass_times", "'%s' lists %d stages, the layout has pp*vpp = %d",
                                sc->train.pass_times, pt.n_stages, V);
    }
    double p2p = 0;
    for (int v = 0; v < V; v++) {
        st[v].fwd_s = pt.f_s[v];
        st[v].bwd_s = pt.b_s[v] + pt.w_s[v];
        st[v].wgrad_s = pt.w_s[v];
        p2p += pt.p2p_s[v] / V;
    }
    spec->p2p_s = p2p > 0 ? p2p : 1e-12; /* a fixed delay, even when tiny */
    mm_pass_times_free(&pt);
    return 0;
}

/* stage_costs, and per virtual stage the share of the F, B and W passes'
 * nominal time spent in memory-bound kernels (mem_frac[3 v + 0..2], may be
 * NULL): HBM perturbations and node groups' GPUs scale that share by the
 * bandwidth ratio and the rest by the peak ratio (hw/perturb.h), since
 * the executor sees a pass as one op, not its kernels. */
static int stage_costs_mem(const mm_sim *sim, mm_stage_cost *st, mm_build_spec *spec, double *mem_frac, mm_err *err);

static int stage_costs(const mm_sim *sim, mm_stage_cost *st, mm_build_spec *spec, mm_err *err)
{
    return stage_costs_mem(sim, st, spec, NULL, err);
}

static int stage_costs_mem(const mm_sim *sim, mm_stage_cost *st, mm_build_spec *spec, double *mem_frac, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_llm *m = &sim->llm;
    const mm_gpu_spec *g = &sim->cluster.gpu;
    mm_dtype dt = (mm_dtype)sc->train.precision;
    double b = (double)sc->train.micro_batch, s = sim->seq;
    int cp = L->cp, V = L->pp * L->vpp;
    bool sp = (sc->train.sequence_parallel || L->sp) && L->tp > 1;
    const int wbytes = 2; /* bf16/fp16 activations and weights; FP8 changes
                             only the GEMM peak (Transformer Engine keeps
                             activations in 16 bits between kernels) */
    mm_op_cost ops[MM_LLM_MAX_OPS];
    /* With context parallelism a rank holds s/cp tokens of each sequence
     * and attends over all s keys (ring attention): its attention work is
     * (s/cp) x s per sequence, written as a packed batch with that sum. */
    int n = cp > 1 ? mm_llm_layer_ops_packed(m, b * s / cp, b * s * s / cp, b, L->tp, sp, wbytes, ops, MM_LLM_MAX_OPS)
                   : mm_llm_layer_ops(m, b, s, L->tp, sp, wbytes, ops, MM_LLM_MAX_OPS);
    if (n < 0)
        return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive op costs for this model");
    pass_times layer = time_layer(g, dt, ops, n, sc->train.attention == MM_ATTN_UNFUSED);
    n = mm_llm_embed_ops(m, b, s / cp, L->tp, sp, wbytes, ops, MM_LLM_MAX_OPS);
    pass_times emb = n < 0 ? (pass_times){.fwd = 0} : time_ops(g, dt, ops, n);
    n = mm_llm_head_ops(m, b, s / cp, L->tp, sp, wbytes, ops, MM_LLM_MAX_OPS);
    pass_times head = n < 0 ? (pass_times){.fwd = 0} : time_ops(g, dt, ops, n);

    int rc = (int)sc->train.recompute;
    double layer_flops = mm_llm_layer_fwd_flops(m, b, s);
    double re_flops = rc == MM_RECOMPUTE_FULL ? layer_flops
                      : rc == MM_RECOMPUTE_SELECTIVE ? mm_llm_layer_attn_fwd_flops(m, b, s)
                                                     : 0.0;
    double re_time = rc == MM_RECOMPUTE_FULL ? layer.fwd
                     : rc == MM_RECOMPUTE_SELECTIVE ? layer.attn_fwd
                                                    : 0.0;
    int zero = L->zero >= 0 ? L->zero : sc->train.zero;
    int per_vs = (int)(m->layers / V);
    for (int k = 0; k < V; k++) {
        /* virtual stage k = chunk k / pp of physical stage k % pp (build.c) */
        int nl = L->n_layers_per_stage ? L->layers_per_stage[k % L->pp] / L->vpp : per_vs;
        bool first = k == 0, last = k == V - 1;
        mm_stage_cost *c = &st[k];
        c->chunks = nl;
        c->moe_chunks = m->experts > 0 ? nl : 0;
        c->fwd_s = nl * layer.fwd + (first ? emb.fwd : 0) + (last ? head.fwd : 0);
        c->bwd_s = nl * (layer.bwd + re_time) + (first ? emb.bwd : 0) + (last ? head.bwd : 0);
        c->fwd_flops = nl * layer_flops + (last ? mm_llm_head_fwd_flops(m, b, s) : 0);
        c->bwd_flops = 2 * c->fwd_flops;
        c->wgrad_s = nl * layer.wgrad + (first ? emb.wgrad : 0) + (last ? head.wgrad : 0);
        if (mem_frac) {
            double mf = nl * layer.mem_fwd + (first ? emb.mem_fwd : 0) + (last ? head.mem_fwd : 0);
            double mb = nl * layer.mem_bwd + (first ? emb.mem_bwd : 0) + (last ? head.mem_bwd : 0);
            double mw = nl * layer.mem_wgrad + (first ? emb.mem_wgrad : 0) + (last ? head.mem_wgrad : 0);
            mem_frac[3 * k + 0] = c->fwd_s > 0 ? mf / c->fwd_s : 0;
            mem_frac[3 * k + 1] = c->bwd_s > 0 ? mb / c->bwd_s : 0;
            mem_frac[3 * k + 2] = c->wgrad_s > 0 ? mw / c->wgrad_s : 0;
        }
        /* weight gradients: every matmul but the attention core, once */
        c->wgrad_flops = c->fwd_flops - nl * mm_llm_layer_attn_fwd_flops(m, b, s);
        c->recompute_flops = nl * re_flops;
        /* Megatron keeps the (tied) embedding on the first stage and a copy
         * for the LM head on the last.  Experts are split over ep. */
        double layer_params = (double)mm_llm_layer_params(m);
        if (m->experts > 0 && L->ep > 1)
            layer_params -= (double)mm_llm_layer_expert_params(m) * (1.0 - 1.0 / L->ep);
        double params = (double)nl * layer_params;
        if (first)
            params += (double)mm_llm_embedding_params(m);
        if (last)
            params += (double)mm_llm_final_norm_params(m) +
                      (m->tied ? (V > 1 ? (double)m->vocab * (double)m->hidden : 0.0)
                               : (double)mm_llm_head_params(m));
        double local = params / L->tp;
        c->grad_bytes = local * wbytes;
        c->param_bytes = local * wbytes;
        double opt_params = zero >= 1 ? local / L->dp : local;
        c->opt_s = mm_mem_time(g, opt_params * MM_ADAM_BYTES_PER_PARAM);
    }
    static const mm_schedule sched[] = {[MM_SCHED_GPIPE] = MM_SCHEDULE_GPIPE, [MM_SCHED_1F1B] = MM_SCHEDULE_1F1B,
                                        [MM_SCHED_INTERLEAVED] = MM_SCHEDULE_INTERLEAVED,
                                        [MM_SCHED_ZB_H1] = MM_SCHEDULE_ZB_H1};
    spec->schedule = sched[sc->train.schedule];
    spec->tp = L->tp;
    spec->cp = cp;
    spec->ep = L->ep;
    spec->pp = L->pp;
    spec->vpp = L->vpp;
    spec->dp = L->dp;
    spec->m = sim->micro_batches;
    mm_build_parse_order(sc->parallel.order, spec->order);
    spec->zero = zero;
    spec->sp = sp;
    spec->tp_overlap = sc->train.tp_comm_overlap;
    spec->overlap_grad_reduce = sc->train.overlap_grad_reduce;
    spec->overlap_param_gather = sc->train.overlap_param_gather;
    spec->bucket_bytes = bucket_params(L->dp) * wbytes;
    /* one TP message: the rank's s/cp tokens of activations */
    spec->tp_bytes = mm_llm_tp_allreduce_bytes(m, b, s / cp, wbytes);
    spec->tp_msgs_fwd = 2;
    spec->tp_msgs_bwd = rc == MM_RECOMPUTE_FULL ? 4 : 2; /* the recomputed forward all-reduces too */
    spec->cp_ring = sc->train.cp_comm == MM_CP_RING;
    /* ring: one K and one V block of the local s/cp tokens per step, heads
     * split by TP; Ulysses: one all-to-all of the local activations */
    spec->cp_bytes = spec->cp_ring ? 2.0 * b * (s / cp) * (double)(m->kv_heads * m->head_dim) * wbytes / L->tp
                                   : b * (s / cp) * (double)m->hidden * wbytes / L->tp;
    /* EP: each token's hidden state goes to experts_per_tok experts and
     * comes back (Megatron's all-to-all token dispatcher) */
    spec->ep_bytes = m->experts > 0 ? b * (s / cp) * (double)m->experts_per_tok * (double)m->hidden * wbytes / L->tp : 0;
    spec->p2p_bytes = b * s * (double)m->hidden * wbytes;
    spec->stages = st;
    if (sc->train.pass_times[0]) {
        if (mem_frac) /* measured pass times: no kernel breakdown */
            memset(mem_frac, 0, (size_t)(3 * V) * sizeof *mem_frac);
        return apply_pass_times(sim, st, V, spec, err);
    }
    return 0;
}


/* ---- encoders ---- */

/* An encoder's (and its projector's) work on one micro-batch of `inputs`
 * tiles, on one GPU group of tensor parallelism tp: the stem, every layer
 * and the projector, timed like the LLM's ops. */
/* With parallel.projector: llm the projector's work and weights belong to
 * the LLM's first stage (timed with the LLM's TP) and the encoder hands over
 * its unprojected output; *projc (may be NULL) receives that work, and the
 * projector's parameters are left out of *wgrad_params. */
static int enc_mb_cost_split(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                             double *wgrad_params, mm_enc_mb_cost *projc);

static int enc_mb_cost(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                       double *wgrad_params)
{
    return enc_mb_cost_split(sim, e, inputs, tp, c, wgrad_params, NULL);
}

static int enc_mb_cost_split(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                             double *wgrad_params, mm_enc_mb_cost *projc)
{
    const mm_scenario *sc = &sim->sc;
    const mm_gpu_spec *g = &sim->cluster.gpu;
    mm_dtype dt = (mm_dtype)sc->train.precision;
    const int wbytes = 2;
    mm_op_cost ops[MM_LLM_MAX_OPS];
    memset(c, 0, sizeof *c);
    if (projc)
        memset(projc, 0, sizeof *projc);
    *wgrad_params = 0;
    if (inputs <= 0)
        return 0;
    bool llm_side = sc->parallel.projector_on_llm;
    /* homogeneous: the LLM's TP and sequence parallelism; else the encoder's own */
    const mm_module_layout *ll = &sc->parallel.llm;
    bool sp = tp > 1 && (sc->parallel.placement == MM_PLACE_HOMOGENEOUS ? (sc->train.sequence_parallel || ll->sp)
                                                                        : e->layout.sp);
    int n = mm_encoder_layer_ops(e->enc, inputs, tp, sp, wbytes, ops, MM_LLM_MAX_OPS);
    if (n < 0)
        return -1;
    pass_times layer = time_ops(g, dt, ops, n);
    n = mm_encoder_stem_ops(e->enc, inputs, tp, wbytes, ops, MM_LLM_MAX_OPS);
    pass_times stem = n < 0 ? (pass_times){.fwd = 0} : time_ops(g, dt, ops, n);
    double ptok = inputs * e->tokens_per_input;
    n = mm_projector_ops(e->proj, ptok, llm_side ? sc->parallel.llm.tp : tp, wbytes, ops, MM_LLM_MAX_OPS);
    pass_times proj = n < 0 ? (pass_times){.fwd = 0} : time_ops(g, dt, ops, n);
    double L = (double)e->enc->layers;
    int rc = (int)sc->train.recompute;
    double re_t = rc == MM_RECOMPUTE_FULL ? layer.fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer.attn_fwd : 0;
    double tower_f = mm_encoder_fwd_flops(e->enc) * inputs, proj_f = mm_projector_fwd_flops(e->proj, ptok);
    double pb = e->frozen_proj ? 0 : proj.bwd, pbf = e->frozen_proj ? 0 : 2 * proj_f;
    if (llm_side && projc) {
        projc->fwd_s = proj.fwd;
        projc->bwd_s = pb;
        projc->fwd_flops = proj_f;
        projc->bwd_flops = pbf;
    }
    c->fwd_s = L * layer.fwd + stem.fwd + (llm_side ? 0 : proj.fwd);
    c->fwd_flops = tower_f + (llm_side ? 0 : proj_f);
    c->bwd_s = (e->frozen_tower ? 0 : L * (layer.bwd + re_t) + stem.bwd) + (llm_side ? 0 : pb);
    c->bwd_flops = 2 * (e->frozen_tower ? 0 : tower_f) + (llm_side ? 0 : pbf);
    c->recompute_flops = e->frozen_tower ? 0
                         : rc == MM_RECOMPUTE_FULL ? mm_encoder_layer_fwd_flops(e->enc, inputs) * L
                                                   : 0;
    double tokens = inputs * (double)mm_encoder_tokens(e->enc);
    c->tp_bytes = tokens * (double)e->enc->hidden * wbytes;
    c->act_bytes = c->tp_bytes;
    c->out_bytes = ptok * (double)(llm_side ? e->proj->in : sim->llm.hidden) * wbytes;
    *wgrad_params = (e->frozen_tower ? 0 : (double)mm_encoder_params(e->enc)) +
                    (e->frozen_proj || llm_side ? 0 : (double)mm_projector_params(e->proj));
    return 0;
}

static const mm_enc_placement enc_place[] = {
    [MM_PLACE_PIPELINE] = MM_ENC_PIPELINE, [MM_PLACE_COLOCATED] = MM_ENC_COLOCATED,
    [MM_PLACE_DISJOINT] = MM_ENC_DISJOINT, [MM_PLACE_HOMOGENEOUS] = MM_ENC_HOMOGENEOUS};

/* Fills spec->enc[] (costs of every LLM micro-batch; all equal for a fixed
 * workload).  *mb_out receives the allocated per-micro-batch arrays. */
static int enc_costs(const mm_sim *sim, mm_build_spec *spec, mm_stage_cost *st, mm_enc_mb_cost **mb_out,
                     mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    int nmb = L->dp * sim->micro_batches;
    spec->n_enc = sim->n_enc;
    for (int i = 0; i < sim->n_enc; i++) {
        const mm_sim_encoder *e = &sim->enc[i];
        mm_enc_spec *es = &spec->enc[i];
        bool homog = sc->parallel.placement == MM_PLACE_HOMOGENEOUS;
        int tp = homog ? L->tp : e->layout.tp;
        mb_out[i] = calloc((size_t)nmb, sizeof *mb_out[i]);
        if (!mb_out[i])
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        double inputs = e->inputs_per_sample * (double)sc->train.micro_batch, params = 0;
        mm_enc_mb_cost one, projc;
        if (enc_mb_cost_split(sim, e, inputs, tp, &one, &params, &projc))
            return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive the encoder's op costs");
        if (sc->parallel.projector_on_llm) { /* the LLM's first stage runs it */
            st[0].fwd_s += projc.fwd_s;
            st[0].bwd_s += projc.bwd_s;
            st[0].fwd_flops += projc.fwd_flops;
            st[0].bwd_flops += projc.bwd_flops;
            double pp = e->frozen_proj ? 0 : (double)mm_projector_params(e->proj) / L->tp;
            st[0].grad_bytes += pp * 2;
            st[0].param_bytes += pp * 2;
        }
        for (int k = 0; k < nmb; k++)
            mb_out[i][k] = one;
        snprintf(es->name, sizeof es->name, "%s", e->name);
        es->placement = enc_place[sc->parallel.placement];
        es->tp = tp;
        es->pp = homog ? 1 : e->layout.pp;
        es->dp = homog ? L->dp : e->layout.dp;
        es->chunks = (int)e->enc->layers;
        es->frozen = e->frozen_tower && e->frozen_proj;
        es->tp_msgs_fwd = 2;
        es->tp_msgs_bwd = 2;
        int zero = e->layout.zero >= 0 ? e->layout.zero : sc->train.zero;
        double local = params / tp / es->pp;
        es->grad_bytes = local * 2;
        es->opt_s = mm_mem_time(&sim->cluster.gpu, (zero >= 1 ? local / es->dp : local) * MM_ADAM_BYTES_PER_PARAM);
        es->buffer = 2 * sim->micro_batches > 4 ? 4 : 2; /* DistTrain-style queue of a few micro-batches */
        es->mb = mb_out[i];
    }
    return 0;
}


/* ---- workload files: costs that differ per micro-batch ---- */

typedef struct wl_iter {
    mm_sample *samples;
    mm_mb_cost *mb;           /* V x dp x m */
    mm_enc_mb_cost *enc;      /* dp x m (the vision encoder) */
    double tokens;            /* LLM tokens trained this iteration */
    double load_max, load_mean; /* per-DP-rank LLM work (seconds) */
} wl_iter;

typedef struct cost_ctx {
    double enc_per_input;     /* seconds per tile/frame, whole encoder, F + B */
    double llm_a, llm_b;      /* seconds per token and per token^2 (attention), F + B */
    bool shared;              /* the encoder runs on the LLM's GPUs */
} cost_ctx;

/* A sample's encoder and LLM seconds.  The balancers minimize the largest
 * bin's max(encoder, LLM), which is right when the two run on different
 * GPUs (pipeline, disjoint: DFLOP's setting); when they share GPUs
 * (colocated, homogeneous) a bin's time is their sum, so the sum is
 * handed over as the LLM cost. */
static void sample_cost(const mm_sample *smp, const mm_token_model *tm, void *ctx, double *enc, double *llm)
{
    const cost_ctx *c = ctx;
    double t = (double)mm_sample_llm_tokens(smp, tm);
    *enc = c->enc_per_input * (double)(smp->tiles + smp->frames);
    *llm = c->llm_a * t + c->llm_b * t * t;
    if (c->shared) {
        *llm += *enc;
        *enc = 0;
    }
}

static const mm_batch_policy bpolicy[] = {
    [MM_BATCH_SEQUENTIAL] = MM_BP_SEQUENTIAL, [MM_BATCH_GROUPED] = MM_BP_GROUPED, [MM_BATCH_PACKED] = MM_BP_PACKED,
    [MM_BATCH_BALANCED] = MM_BP_BALANCED, [MM_BATCH_POST_BALANCE] = MM_BP_POST_BALANCE};

/* One LLM micro-batch of T tokens in n sequences with sum of squared lengths
 * S, on every virtual stage. */
static int llm_bin_cost(const mm_sim *sim, const mm_stage_cost *st, int V, double T, double S, double n,
                        mm_mb_cost *out, size_t stride)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_llm *m = &sim->llm;
    const mm_gpu_spec *g = &sim->cluster.gpu;
    mm_dtype dt = (mm_dtype)sc->train.precision;
    bool sp = (sc->train.sequence_parallel || L->sp) && L->tp > 1;
    for (int v = 0; v < V; v++)
        memset(&out[(size_t)v * stride], 0, sizeof *out);
    if (T <= 0)
        return 0;
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int cp = L->cp, k = mm_llm_layer_ops_packed(m, T / cp, S / cp, n, L->tp, sp, 2, ops, MM_LLM_MAX_OPS);
    if (k < 0)
        return -1;
    pass_times layer = time_layer(g, dt, ops, k, sc->train.attention == MM_ATTN_UNFUSED);
    k = mm_llm_embed_ops(m, 1, T / cp, L->tp, sp, 2, ops, MM_LLM_MAX_OPS);
    pass_times emb = k < 0 ? (pass_times){0} : time_ops(g, dt, ops, k);
    k = mm_llm_head_ops(m, 1, T / cp, L->tp, sp, 2, ops, MM_LLM_MAX_OPS);
    pass_times head = k < 0 ? (pass_times){0} : time_ops(g, dt, ops, k);
    int rc = (int)sc->train.recompute;
    double lf = mm_llm_layer_fwd_flops_packed(m, T, S), af = lf - mm_llm_layer_fwd_flops_packed(m, T, 0);
    double re_f = rc == MM_RECOMPUTE_FULL ? lf : rc == MM_RECOMPUTE_SELECTIVE ? af : 0;
    double re_t = rc == MM_RECOMPUTE_FULL ? layer.fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer.attn_fwd : 0;
    for (int v = 0; v < V; v++) {
        mm_mb_cost *c = &out[(size_t)v * stride];
        int nl = st[v].chunks;
        bool first = v == 0, last = v == V - 1;
        c->fwd_s = nl * layer.fwd + (first ? emb.fwd : 0) + (last ? head.fwd : 0);
        c->bwd_s = nl * (layer.bwd + re_t) + (first ? emb.bwd : 0) + (last ? head.bwd : 0);
        c->wgrad_s = nl * layer.wgrad + (first ? emb.wgrad : 0) + (last ? head.wgrad : 0);
        c->fwd_flops = nl * lf + (last ? mm_llm_head_fwd_flops(m, 1, T) : 0);
        c->bwd_flops = 2 * c->fwd_flops;
        c->wgrad_flops = c->fwd_flops - nl * af;
        c->recompute_flops = nl * re_f;
        c->tp_bytes = mm_llm_tp_allreduce_bytes(m, 1, T / cp, 2);
        c->p2p_bytes = T * (double)m->hidden * 2;
    }
    return 0;
}

/* Draws iteration `it`'s global batch, forms its micro-batches with the
 * scenario's policy and turns every micro-batch into costs.  Sets spec->m
 * (packing may give ranks different counts: the others get empty ones). */
static int iteration_costs(const mm_sim *sim, mm_build_spec *spec, const mm_stage_cost *st, int it, wl_iter *w,
                           mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    int B = (int)sc->train.global_batch, V = L->pp * L->vpp, dp = L->dp;
    free(w->samples);
    w->samples = malloc((size_t)B * sizeof *w->samples);
    if (!w->samples)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = mm_workload_draw(sim->wl, sc->seed, it, B, w->samples, err);
    if (rc)
        return rc;
    /* per-sample costs for the balancing policies: fitted to the model's
     * own op costs at two lengths (linear + attention's quadratic term) */
    cost_ctx cc = {.shared = sc->parallel.placement == MM_PLACE_COLOCATED ||
                             sc->parallel.placement == MM_PLACE_HOMOGENEOUS};
    mm_mb_cost *probe = calloc((size_t)V, sizeof *probe);
    double L1 = 1024, L2 = 2048, t1 = 0, t2 = 0;
    rc = probe ? llm_bin_cost(sim, st, V, L1, L1 * L1, 1, probe, 1) : -1;
    for (int v = 0; v < V && rc == 0; v++)
        t1 += probe[v].fwd_s + probe[v].bwd_s;
    if (rc == 0)
        rc = llm_bin_cost(sim, st, V, L2, L2 * L2, 1, probe, 1);
    for (int v = 0; v < V && rc == 0; v++)
        t2 += probe[v].fwd_s + probe[v].bwd_s;
    free(probe);
    if (rc)
        return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive op costs for this model");
    cc.llm_b = fmax(0, (t2 / L2 - t1 / L1) / (L2 - L1));
    cc.llm_a = fmax(0, t1 / L1 - cc.llm_b * L1);
    if (sim->n_enc) { /* a tile (or a clip, for an audio-only model) */
        mm_enc_mb_cost one;
        double params;
        if (enc_mb_cost(sim, &sim->enc[0], 1, spec->enc[0].tp, &one, &params) == 0)
            cc.enc_per_input = one.fwd_s + one.bwd_s;
    }
    mm_batch_opts o = {.policy = bpolicy[sc->batching], .dp = dp, .micro_batches = sim->micro_batches,
                       .seq_len = sc->train.seq_len, .tokens = sim->tm, .cost = sample_cost, .cost_ctx = &cc,
                       .ilp_node_limit = 10,
                       .enc_bytes_per_input = 3.0 * (double)(sim->model.tile * sim->model.tile),
                       .bytes_per_token = 2.0 * (double)sim->llm.hidden};
    mm_batch_plan plan;
    if ((rc = mm_batch_form(w->samples, B, &o, &plan, err)))
        return rc;
    int m = 0;
    for (int r = 0; r < dp; r++)
        m = plan.rank_first[r + 1] - plan.rank_first[r] > m ? plan.rank_first[r + 1] - plan.rank_first[r] : m;
    if (spec->schedule == MM_SCHEDULE_INTERLEAVED && m % L->pp)
        m += L->pp - m % L->pp; /* interleaving needs a multiple of pp: pad with empty ones */
    spec->m = m;
    free(w->mb);
    free(w->enc);
    w->mb = calloc((size_t)V * dp * m, sizeof *w->mb);
    w->enc = calloc((size_t)(sim->n_enc ? sim->n_enc : 1) * dp * m + 1, sizeof *w->enc);
    if (!w->mb || !w->enc) {
        mm_batch_plan_free(&plan);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    w->tokens = 0;
    w->load_max = 0;
    double load_sum = 0;
    for (int r = 0; r < dp && rc == 0; r++) {
        double load = 0;
        for (int k = plan.rank_first[r]; k < plan.rank_first[r + 1] && rc == 0; k++) {
            const mm_bin *bn = &plan.bins[k];
            int j = k - plan.rank_first[r];
            size_t at = ((size_t)0 * dp + r) * m + j;
            rc = llm_bin_cost(sim, st, V, (double)bn->llm_tokens, bn->sum_sq_tokens, bn->n, &w->mb[at],
                              (size_t)dp * m);
            w->tokens += (double)bn->llm_tokens;
            for (int v = 0; v < V; v++)
                load += w->mb[at + (size_t)v * dp * m].fwd_s + w->mb[at + (size_t)v * dp * m].bwd_s;
        }
        w->load_max = fmax(w->load_max, load);
        load_sum += load;
    }
    w->load_mean = load_sum / dp;
    /* the encoder: the LLM's bins, or post-balance's own encoder phase */
    for (int i = 0; i < sim->n_enc && rc == 0; i++) {
        const mm_bin *eb = plan.enc_bins ? plan.enc_bins : plan.bins;
        const int *ef = plan.enc_bins ? plan.enc_rank_first : plan.rank_first;
        bool audio = !strcmp(sim->enc[i].name, "audio");
        mm_enc_mb_cost *arr = w->enc + (size_t)i * dp * m;
        for (int r = 0; r < dp && rc == 0; r++)
            for (int k = ef[r]; k < ef[r + 1] && k - ef[r] < m && rc == 0; k++) {
                double params, inputs = audio ? (double)eb[k].audio_clips : (double)(eb[k].tiles + eb[k].frames);
                mm_enc_mb_cost projc;
                rc = enc_mb_cost_split(sim, &sim->enc[i], inputs, spec->enc[i].tp, &arr[(size_t)r * m + (k - ef[r])],
                                       &params, &projc);
                mm_mb_cost *first = &w->mb[(size_t)r * m + (k - ef[r])]; /* virtual stage 0 */
                first->fwd_s += projc.fwd_s;
                first->bwd_s += projc.bwd_s;
                first->fwd_flops += projc.fwd_flops;
                first->bwd_flops += projc.bwd_flops;
            }
        spec->enc[i].mb = arr;
        if (rc)
            rc = mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive the encoder's op costs");
    }
    /* post-balance: its all-to-alls open the iteration */
    spec->pre_a2a_bytes = plan.enc_bins ? (plan.a2a_enc_total + plan.a2a_llm_total) / mm_build_gpus(spec) : 0;
    spec->mb_costs = w->mb;
    mm_batch_plan_free(&plan);
    return rc;
}
/* ---- memory ---- */

/* Peak bytes on one GPU of each pipeline stage (memory.h) into
 * mt->stages[].memory_gib and mt->peak_memory_gib; true when some stage
 * plus train.memory_reserve_gib exceeds the GPU's HBM. */
static bool llm_memory(const mm_sim *sim, mm_metrics *mt)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    static const mm_mem_schedule sched[] = {
        [MM_SCHED_GPIPE] = MM_MEM_GPIPE, [MM_SCHED_1F1B] = MM_MEM_1F1B,
        [MM_SCHED_INTERLEAVED] = MM_MEM_INTERLEAVED, [MM_SCHED_ZB_H1] = MM_MEM_ZB_H1};
    mm_mem_config c = {
        .tp = L->tp, .pp = L->pp, .dp = L->dp, .cp = L->cp, .vpp = L->vpp, .ep = L->ep,
        .sp = (sc->train.sequence_parallel || L->sp) && L->tp > 1,
        .zero = L->zero >= 0 ? L->zero : sc->train.zero,
        .recompute = (int)sc->train.recompute,
        .schedule = sched[sc->train.schedule],
        .micro_batches = sim->micro_batches,
        .micro_batch = (double)sc->train.micro_batch,
        .seq = sim->seq,
        .layers_per_stage = L->n_layers_per_stage ? L->layers_per_stage : NULL,
    };
    double cap = sim->cluster.gpu.hbm_bytes - sc->train.memory_reserve_gib * MM_GIB;
    bool oom = false;
    mt->peak_memory_gib = 0;
    for (int k = 0; k < L->pp; k++) {
        mm_mem_rank r;
        if (mm_mem_llm_rank(&sim->llm, &c, k, &r)) {
            mt->stages[k].memory_gib = NAN;
            mt->peak_memory_gib = NAN;
            continue;
        }
        mt->stages[k].stage = k;
        mt->stages[k].memory_gib = r.total / MM_GIB;
        if (mt->stages[k].memory_gib > mt->peak_memory_gib)
            mt->peak_memory_gib = mt->stages[k].memory_gib;
        if (r.total > cap)
            oom = true;
    }
    return oom;
}

/* An encoder's bytes on one of its GPUs: model states, and activations of
 * the micro-batches it holds at once (its pipeline's depth; a colocated
 * encoder keeps every micro-batch it encoded until the LLM's backward; a
 * disjoint one its queue). */
static double enc_memory(const mm_sim *sim, const mm_build_spec *spec, int i)
{
    const mm_scenario *sc = &sim->sc;
    const mm_sim_encoder *e = &sim->enc[i];
    const mm_enc_spec *es = &spec->enc[i];
    int flight;
    switch (es->placement) {
    case MM_ENC_PIPELINE:
        flight = es->pp + sc->parallel.llm.pp;
        break;
    case MM_ENC_COLOCATED:
        flight = (spec->dp * spec->m + es->dp - 1) / es->dp;
        break;
    case MM_ENC_DISJOINT:
        flight = es->buffer + 1;
        break;
    default:
        flight = spec->pp;
    }
    if (flight > spec->m * spec->dp)
        flight = spec->m * spec->dp;
    int zero = e->layout.zero >= 0 ? e->layout.zero : sc->train.zero;
    mm_mem_rank r;
    bool sp = es->tp > 1 && (es->placement == MM_ENC_HOMOGENEOUS
                                 ? (sc->train.sequence_parallel || sc->parallel.llm.sp)
                                 : e->layout.sp);
    if (mm_mem_encoder_rank(e->enc, e->inputs_per_sample * (double)sc->train.micro_batch, es->tp, sp, es->dp, zero,
                            (int)sc->train.recompute, flight, es->frozen, &r))
        return NAN;
    return r.total / es->pp;
}

/* Peak memory per stage and per module; true when some GPU does not fit. */
static bool stage_memory(const mm_sim *sim, const mm_build_spec *spec, mm_metrics *mt)
{
    bool oom = llm_memory(sim, mt);
    double cap = (sim->cluster.gpu.hbm_bytes - sim->sc.train.memory_reserve_gib * MM_GIB) / MM_GIB;
    mt->n_modules = 1 + sim->n_enc;
    snprintf(mt->modules[0].name, sizeof mt->modules[0].name, "llm");
    mt->modules[0].memory_gib = mt->peak_memory_gib;
    for (int i = 0; i < sim->n_enc; i++) {
        const mm_enc_spec *es = &spec->enc[i];
        double gib = enc_memory(sim, spec, i) / MM_GIB;
        mm_module_metrics *mm = &mt->modules[1 + i];
        snprintf(mm->name, sizeof mm->name, "%s", es->name);
        mm->memory_gib = gib;
        if (es->placement == MM_ENC_HOMOGENEOUS || es->placement == MM_ENC_COLOCATED) {
            /* on the LLM's GPUs: the first stage, or every stage */
            for (int k = 0; k < mt->n_stages; k++)
                if (k == 0 || es->placement == MM_ENC_COLOCATED)
                    mt->stages[k].memory_gib += gib;
            mt->peak_memory_gib = 0;
            for (int k = 0; k < mt->n_stages; k++) {
                mt->peak_memory_gib = fmax(mt->peak_memory_gib, mt->stages[k].memory_gib);
                oom |= mt->stages[k].memory_gib > cap;
            }
        } else {
            mt->peak_memory_gib = fmax(mt->peak_memory_gib, gib);
            oom |= gib > cap;
        }
    }
    return oom;
}

/* Compute seconds of each module on one of its GPUs, from the executed
 * graph (all kernels on compute streams, averaged over the ranks that run
 * the module). */
static void module_time(const mm_graph *g, const mm_time *start, const mm_time *end, const mm_build_spec *spec,
                        mm_metrics *mt)
{
    double busy[MM_MAX_MODULES] = {0};
    int ranks[MM_MAX_MODULES] = {0};
    unsigned char *seen = calloc((size_t)g->n_ranks * MM_MAX_MODULES, 1);
    if (!seen)
        return;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        if (op->stream != MM_STREAM_COMPUTE || mm_cat_is_comm(op->cat) || op->module >= MM_MAX_MODULES)
            continue;
        busy[op->module] += (double)(end[i] - start[i]) * 1e-9;
        unsigned char *f = &seen[(size_t)op->rank * MM_MAX_MODULES + op->module];
        if (!*f) {
            *f = 1;
            ranks[op->module]++;
        }
    }
    free(seen);
    int tpcp = spec->tp * (spec->cp > 0 ? spec->cp : 1);
    for (int m = 0; m < mt->n_modules && m <= MM_MAX_ENCODERS; m++) {
        mt->modules[m].compute_s += ranks[m] ? busy[m] / ranks[m] : 0;
        int per = m == 0 ? tpcp : spec->enc[m - 1].placement == MM_ENC_PIPELINE ||
                                          spec->enc[m - 1].placement == MM_ENC_DISJOINT
                                      ? spec->enc[m - 1].tp
                                      : tpcp;
        mt->modules[m].gpus = ranks[m] * per;
    }
}

/* ---- measurement ---- */

typedef struct span {
    mm_time t;
    int comp, comm; /* +1 opens, -1 closes */
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    /* closes before opens at the same instant: touching intervals do not overlap */
    int dx = x->comp + x->comm, dy = y->comp + y->comm;
    return (dx > dy) - (dx < dy);
}

/* Time during which some communication of the rank runs and none of its
 * compute does. */
static double exposed_ns(span *sp, size_t n)
{
    qsort(sp, n, sizeof *sp, span_cmp);
    int comp = 0, comm = 0;
    double exposed = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && comm > 0 && comp == 0)
            exposed += (double)(sp[i].t - sp[i - 1].t);
        comp += sp[i].comp;
        comm += sp[i].comm;
    }
    return exposed;
}

void mm_sim_measure(const mm_graph *g, const mm_time *start, const mm_time *end,
                    mm_time t0, mm_time t1, mm_iter_metrics *it,
                    mm_stage_metrics *stages, int n_stages, int ranks_per_stage)
{
    int R = g->n_ranks;
    mm_time t_pipe = t0;
    double mflops = 0, hflops = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        if (op->mb >= 0 && op->stream == MM_STREAM_COMPUTE && end[i] > t_pipe)
            t_pipe = end[i];
        mflops += op->flops;
        hflops += op->hw_flops;
    }
    double *busy_pipe = calloc((size_t)R, sizeof *busy_pipe);
    double *busy = calloc((size_t)R, sizeof *busy);
    double *comm = calloc((size_t)R, sizeof *comm);
    size_t *cnt = calloc((size_t)R + 1, sizeof *cnt);
    span *sp = malloc((4 * (size_t)g->n_ops + 1) * sizeof *sp);
    if (!busy_pipe || !busy || !comm || !cnt || !sp)
        goto out;
    /* Bucket interval endpoints by rank (a transfer counts for both ends). */
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        cnt[op->rank + 1] += 2;
        if (op->peer >= 0)
            cnt[op->peer + 1] += 2;
    }
    for (int r = 0; r < R; r++)
        cnt[r + 1] += cnt[r];
    size_t *fill = calloc((size_t)R, sizeof *fill);
    if (!fill)
        goto out;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        double d = (double)(end[i] - start[i]);
        int is_comm = mm_cat_is_comm(op->cat);
        if (op->stream == MM_STREAM_COMPUTE) {
            busy[op->rank] += d;
            if (op->mb >= 0)
                busy_pipe[op->rank] += d;
        }
        if (is_comm)
            comm[op->rank] += d;
        int ranks[2] = {op->rank, op->peer};
        for (int k = 0; k < 2; k++) {
            if (ranks[k] < 0)
                continue;
            span *base = sp + cnt[ranks[k]] + fill[ranks[k]];
            base[0] = (span){start[i], is_comm ? 0 : 1, is_comm ? 1 : 0};
            base[1] = (span){end[i], is_comm ? 0 : -1, is_comm ? -1 : 0};
            fill[ranks[k]] += 2;
        }
    }
    free(fill);
    double pipe = (double)(t_pipe - t0), total = (double)(t1 - t0);
    double bubble = 0, exposed = 0;
    for (int r = 0; r < R; r++) {
        bubble += pipe > 0 ? (pipe - busy_pipe[r]) / pipe : 0;
        exposed += exposed_ns(sp + cnt[r], cnt[r + 1] - cnt[r]);
    }
    it->time_s = total * 1e-9;
    it->bubble_fraction = bubble / R;
    it->exposed_comm_s = exposed / R * 1e-9;
    it->model_flops = mflops;
    it->hw_flops = hflops;
    for (int s = 0; s < n_stages && stages; s++) {
        double b = 0, c = 0, bp = 0;
        for (int d = 0; d < ranks_per_stage; d++) {
            b += busy[d + ranks_per_stage * s];
            c += comm[d + ranks_per_stage * s];
            bp += busy_pipe[d + ranks_per_stage * s];
        }
        stages[s].stage = s;
        stages[s].bubble_s += (pipe - bp / ranks_per_stage) * 1e-9;
        stages[s].busy_s += b / ranks_per_stage * 1e-9;
        stages[s].idle_s += (total - b / ranks_per_stage) * 1e-9;
        stages[s].comm_s += c / ranks_per_stage * 1e-9;
    }
out:
    free(busy_pipe);
    free(busy);
    free(comm);
    free(cnt);
    free(sp);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double host_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- perturbations ---- */

/* Per op of a built graph: the memory-bound share of its nominal time
 * (LLM passes from the stage costs, every optimizer step 1, encoder passes
 * 0), for the executor's pace model.  NULL when out of memory. */
static double *op_mem_frac(const mm_graph *g, const double *frac, int V)
{
    double *m = malloc((g->n_ops + 1) * sizeof *m);
    if (!m)
        return NULL;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        int c = op->cat == MM_CAT_FWD ? 0 : op->cat == MM_CAT_BWD ? 1 : op->cat == MM_CAT_WGRAD ? 2 : -1;
        if (op->cat == MM_CAT_OPT)
            m[i] = 1.0; /* Adam streams its states through HBM (MM_ADAM_BYTES_PER_PARAM) */
        else if (op->module == 0 && c >= 0 && op->stage >= 0 && op->stage < V)
            m[i] = frac[3 * op->stage + c];
        else
            m[i] = 0.0;
    }
    return m;
}

/* HBM capacity per GPU after node groups' GPUs and hbm perturbations: a
 * rank whose GPU holds less than its stage's (or its encoder's) peak plus
 * the reserve makes the run OOM, like any layout that does not fit. */
static bool capacity_oom(const mm_sim *sim, const mm_build_spec *spec, const mm_metrics *mt)
{
    const mm_cluster *c = &sim->cluster;
    const mm_module_layout *L = &sim->sc.parallel.llm;
    bool changed = false;
    for (int i = 0; i < c->n_groups; i++)
        changed |= c->groups[i].has_gpu;
    for (int i = 0; i < c->pt.n; i++)
        changed |= c->pt.e[i].kind == MM_PT_HBM && c->pt.e[i].hbm_cap != 1.0;
    if (!changed)
        return false;
    mm_graph g;
    mm_gpu_pace pace;
    mm_err e;
    if (mm_build_iteration(spec, &g))
        return false;
    int *module = malloc((size_t)(g.n_ranks + 1) * sizeof *module);
    if (!module || !g.rank_gpu_off || mm_gpu_pace_build(&pace, c, &e)) {
        free(module);
        mm_graph_free(&g);
        return false;
    }
    for (int r = 0; r < g.n_ranks; r++)
        module[r] = -1;
    for (uint32_t i = 0; i < g.n_ops; i++)
        if (module[g.ops[i].rank] < 0)
            module[g.ops[i].rank] = g.ops[i].module;
    double reserve = sim->sc.train.memory_reserve_gib * MM_GIB;
    bool oom = false;
    for (int r = 0; r < g.n_ranks && !oom; r++) {
        double gib = r < L->pp * L->dp ? mt->stages[r / L->dp].memory_gib
                     : module[r] > 0 && module[r] < mt->n_modules ? mt->modules[module[r]].memory_gib
                                                                 : 0;
        for (uint32_t k = g.rank_gpu_off[r]; k < g.rank_gpu_off[r + 1]; k++)
            oom |= gib * MM_GIB + reserve > pace.hbm_bytes[g.rank_gpus[k]];
    }
    mm_gpu_pace_free(&pace);
    free(module);
    mm_graph_free(&g);
    return oom;
}

/* A periodic stall (checkpoint write) ends the iteration on every rank:
 * it joins the critical path as its own entry. */
static int crit_add_stall(mm_critpath *cp, double stall_s, double total_s)
{
    mm_crit_entry *e = realloc(cp->e, (size_t)(cp->n + 1) * sizeof *e);
    if (!e)
        return -1;
    cp->e = e;
    for (int i = 0; i < cp->n; i++)
        e[i].share = e[i].seconds / total_s;
    mm_crit_entry x = {.rank = -1, .stage = -1, .seconds = stall_s, .share = stall_s / total_s, .ops = 0};
    snprintf(x.what, sizeof x.what, "stall");
    int at = cp->n;
    while (at > 0 && e[at - 1].seconds < stall_s) {
        e[at] = e[at - 1];
        at--;
    }
    e[at] = x;
    cp->n++;
    return 0;
}

int mm_sim_run(const mm_sim *sim, mm_metrics *mt, mm_sim_timeline *tl, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    double t_host = host_seconds();
    memset(mt, 0, sizeof *mt);
    if (tl)
        memset(tl, 0, sizeof *tl);
    int P = L->pp, iters = sc->iterations;
    mm_stage_cost *st = calloc((size_t)P * (size_t)L->vpp, sizeof *st);
    mt->iters = calloc((size_t)iters, sizeof *mt->iters);
    mt->stages = calloc((size_t)P, sizeof *mt->stages);
    mm_engine *eng = mm_engine_alloc();
    mm_build_spec spec = {0};
    mm_enc_mb_cost *enc_mb[2] = {NULL, NULL};
    int rc = 0;
    bool perturbed = sim->cluster.pt.n > 0 || sim->cluster.n_groups > 0;
    double *mfrac = calloc((size_t)(3 * P * L->vpp), sizeof *mfrac);
    if (!st || !mt->iters || !mt->stages || !eng || !mfrac) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    mt->n_iters = iters;
    mt->n_stages = P;
    if ((rc = stage_costs_mem(sim, st, &spec, mfrac, err)) || (rc = enc_costs(sim, &spec, st, enc_mb, err)))
        goto out;
    /* A layout that does not fit is an answer (design.md section 5): the
     * per-stage memory, oom = true, and no time. */
    if (stage_memory(sim, &spec, mt) || capacity_oom(sim, &spec, mt)) {
        mt->oom = true;
        mt->n_iters = 0;
        mt->gpus = mm_cluster_gpus(&sim->cluster);
        mt->iteration_time_s = mt->tokens_per_s = mt->samples_per_s = NAN;
        mt->tflops_per_gpu = mt->hw_tflops_per_gpu = mt->mfu = mt->hfu = NAN;
        mt->bubble_fraction = mt->exposed_comm_s = NAN;
        for (int s = 0; s < P; s++)
            mt->stages[s].busy_s = mt->stages[s].idle_s = mt->stages[s].comm_s = NAN;
        goto out;
    }
    double tokens = (double)sc->train.global_batch * sim->seq;
    wl_iter wi = {0};
    for (int it = 0; it < iters && rc == 0; it++) {
        if (sim->wl && (rc = iteration_costs(sim, &spec, st, it, &wi, err)))
            break;
        double busy_before[MM_MAX_PP];
        for (int s = 0; s < P && s < MM_MAX_PP; s++)
            busy_before[s] = mt->stages[s].busy_s;
        mm_graph g;
        if (mm_build_iteration(&spec, &g)) {
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "cannot build the iteration graph");
            break;
        }
        mm_time *start = malloc((g.n_ops + 1) * sizeof *start);
        mm_time *end = malloc((g.n_ops + 1) * sizeof *end);
        mm_time t0 = mm_engine_now(eng), t1 = t0;
        mm_exec_opts xo = {.mem_frac = perturbed ? op_mem_frac(&g, mfrac, P * L->vpp) : NULL,
                           .iteration = (uint64_t)it};
        if (!start || !end || (perturbed && !xo.mem_frac))
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        else
            rc = mm_exec_run_opts(eng, &g, &sim->cluster,
                                  sc->network == MM_NET_FLOW ? MM_EXEC_NET_FLOW : MM_EXEC_NET_ANALYTIC,
                                  &xo, start, end, &t1, err);
        free((void *)xo.mem_frac);
        if (rc == 0) {
            mm_iter_metrics *im = &mt->iters[it];
            im->iteration = it;
            im->tokens = sim->wl ? wi.tokens : tokens;
            im->samples = (double)sc->train.global_batch;
            im->load_imbalance = sim->wl && wi.load_mean > 0 ? wi.load_max / wi.load_mean : 1.0;
            mm_sim_measure(&g, start, end, t0, t1, im, mt->stages, P, L->dp);
            double lo = INFINITY, hi = 0;
            for (int s = 0; s < P && s < MM_MAX_PP; s++) {
                double b = mt->stages[s].busy_s - busy_before[s];
                lo = fmin(lo, b);
                hi = fmax(hi, b);
            }
            im->stage_spread_s = P > 0 ? hi - lo : 0;
            module_time(&g, start, end, &spec, mt);
            if (it == iters - 1 && mm_critpath_compute(&g, start, end, t0, t1, &mt->crit))
                rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the critical path");
            double stall = mm_perturb_stall_s(&sim->cluster.pt, it);
            if (stall > 0) {
                im->time_s += stall;
                for (int s = 0; s < P; s++)
                    mt->stages[s].idle_s += stall;
                if (rc == 0 && it == iters - 1 && crit_add_stall(&mt->crit, stall, im->time_s))
                    rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the critical path");
            }
        }
        if (rc == 0 && tl && it == iters - 1) {
            tl->graph = g;
            tl->start = start;
            tl->end = end;
            tl->t0 = t0;
        } else {
            mm_graph_free(&g);
            free(start);
            free(end);
        }
    }
    if (rc)
        goto out;
    int gpus = mm_cluster_gpus(&sim->cluster);
    double peak = sim->cluster.gpu.peak_flops[sc->train.precision];
    double T = 0, bub = 0, exp = 0, mf = 0, hf = 0, tok = 0, smp = 0;
    for (int i = 0; i < iters; i++) {
        T += mt->iters[i].time_s;
        bub += mt->iters[i].bubble_fraction;
        exp += mt->iters[i].exposed_comm_s;
        mf += mt->iters[i].model_flops;
        hf += mt->iters[i].hw_flops;
        tok += mt->iters[i].tokens;
        smp += mt->iters[i].samples;
    }
    for (int k = 0; k < mt->n_modules; k++)
        mt->modules[k].compute_s /= iters;
    for (int s = 0; s < P; s++) {
        mt->stages[s].busy_s /= iters;
        mt->stages[s].idle_s /= iters;
        mt->stages[s].bubble_s /= iters;
        mt->stages[s].comm_s /= iters;
    }
    mt->iteration_time_s = T / iters;
    {
        double *ts = malloc((size_t)iters * sizeof *ts);
        if (ts) {
            for (int i = 0; i < iters; i++)
                ts[i] = mt->iters[i].time_s;
            qsort(ts, (size_t)iters, sizeof *ts, cmp_double);
            /* nearest-rank percentiles */
            mt->iteration_time_p50_s = ts[(int)ceil(0.50 * iters) - 1];
            mt->iteration_time_p99_s = ts[(int)ceil(0.99 * iters) - 1];
            free(ts);
        }
    }
    mt->tokens_per_s = tok / T;
    mt->samples_per_s = smp / T;
    mt->tflops_per_gpu = mf / (T * gpus) * 1e-12;
    mt->hw_tflops_per_gpu = hf / (T * gpus) * 1e-12;
    mt->mfu = mf / (T * gpus * peak);
    mt->hfu = hf / (T * gpus * peak);
    mt->bubble_fraction = bub / iters;
    mt->exposed_comm_s = exp / iters;
    mt->oom = false; /* peak_memory_gib and stages[].memory_gib: stage_memory() */
    mt->gpus = gpus;
    mt->events = mm_engine_dispatched(eng);
out:
    mt->wall_s = host_seconds() - t_host;
    free(mfrac);
    free(st);
    free(enc_mb[0]);
    free(enc_mb[1]);
    mm_engine_free(eng);
    if (rc)
        mm_metrics_free(mt);
    return rc;
}

int mm_sim_estimate(const mm_sim *sim, mm_metrics *mt, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    memset(mt, 0, sizeof *mt);
    int P = L->pp, V = L->pp * L->vpp, rc = 0;
    mm_stage_cost *st = calloc((size_t)V, sizeof *st);
    mt->stages = calloc((size_t)P, sizeof *mt->stages);
    mm_build_spec spec = {0};
    mm_enc_mb_cost *enc_mb[2] = {NULL, NULL};
    if (!st || !mt->stages) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    mt->n_stages = P;
    if ((rc = stage_costs(sim, st, &spec, err)) || (rc = enc_costs(sim, &spec, st, enc_mb, err)))
        goto out;
    mt->gpus = mm_cluster_gpus(&sim->cluster);
    if (stage_memory(sim, &spec, mt)) {
        mt->oom = true;
        mt->iteration_time_s = mt->tokens_per_s = mt->samples_per_s = NAN;
        mt->tflops_per_gpu = mt->hw_tflops_per_gpu = mt->mfu = mt->hfu = NAN;
        mt->bubble_fraction = mt->exposed_comm_s = NAN;
        goto out;
    }
    /* the slowest (physical) stage's F + B per micro-batch, with its TP
     * all-reduces (analytic network time, serialized as in the executor) */
    int m = sim->micro_batches, tpg[1024];
    for (int t = 0; t < L->tp && t < 1024; t++)
        tpg[t] = t;
    double tp_one = L->tp > 1 ? mm_net_analytic_time(&sim->cluster, MM_COLL_ALLREDUCE, tpg, L->tp < 1024 ? L->tp : 1024,
                                                     spec.tp_bytes)
                              : 0;
    double worst = 0, flops = 0, hw = 0, grad = 0, opt = 0;
    for (int s = 0; s < P; s++) {
        double t = 0, g = 0, o = 0;
        for (int c = 0; c < L->vpp; c++) {
            const mm_stage_cost *x = &st[c * P + s];
            t += x->fwd_s + x->bwd_s + x->chunks * tp_one * (spec.tp_msgs_fwd + spec.tp_msgs_bwd);
            flops += (x->fwd_flops + x->bwd_flops) * m * L->dp;
            hw += (x->fwd_flops + x->bwd_flops + x->recompute_flops) * m * L->dp;
            g += x->grad_bytes;
            o += x->opt_s;
        }
        worst = fmax(worst, t);
        grad = fmax(grad, g);
        opt = fmax(opt, o);
    }
    double enc_first = 0, enc_around = 0, enc_stage = 0;
    for (int i = 0; i < spec.n_enc; i++) {
        const mm_enc_spec *e = &spec.enc[i];
        const mm_enc_mb_cost *c = &e->mb[0];
        double per = c->fwd_s + c->bwd_s;
        if (e->tp > 1 && c->tp_bytes > 0) { /* its layers' TP all-reduces, as the executor runs them */
            int g8[1024], nt = e->tp < 1024 ? e->tp : 1024;
            for (int t = 0; t < nt; t++)
                g8[t] = t;
            per += e->chunks * (e->tp_msgs_fwd + (e->frozen ? 0 : e->tp_msgs_bwd)) *
                   mm_net_analytic_time(&sim->cluster, MM_COLL_ALLREDUCE, g8, nt, c->tp_bytes);
        }
        flops += (c->fwd_flops + c->bwd_flops) * m * L->dp;
        hw += (c->fwd_flops + c->bwd_flops + c->recompute_flops) * m * L->dp;
        switch (e->placement) {
        case MM_ENC_HOMOGENEOUS:
            enc_first += per;
            break;
        case MM_ENC_COLOCATED:
            enc_around += per * m * L->dp * e->tp / (double)(L->tp * L->cp * L->dp * L->pp);
            break;
        default: /* a stage of its own: its share of the micro-batches */
            enc_stage = fmax(enc_stage, per / e->pp * (double)L->dp / e->dp);
        }
    }
    worst = fmax(worst + enc_first, enc_stage);
    double stages = P + (enc_stage > 0 ? spec.enc[0].pp : 0);
    double pipe = (m + (stages - 1) / L->vpp) * worst;
    int dpg[4096], n = L->dp < 4096 ? L->dp : 4096;
    for (int d = 0; d < n; d++)
        dpg[d] = d * L->tp * L->cp;
    double dp_t = n > 1 ? mm_net_analytic_time(&sim->cluster, spec.zero ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE,
                                               dpg, n, grad) * (spec.zero ? 2 : 1)
                        : 0;
    if (spec.overlap_grad_reduce)
        dp_t *= 0.5; /* about half hides behind the last backward */
    double T = pipe + enc_around + dp_t + opt;
    double peak = sim->cluster.gpu.peak_flops[sc->train.precision];
    mt->iteration_time_s = T;
    mt->tokens_per_s = (double)sc->train.global_batch * sim->seq / T;
    mt->samples_per_s = (double)sc->train.global_batch / T;
    mt->tflops_per_gpu = flops / (T * mt->gpus) * 1e-12;
    mt->hw_tflops_per_gpu = hw / (T * mt->gpus) * 1e-12;
    mt->mfu = flops / (T * mt->gpus * peak);
    mt->hfu = hw / (T * mt->gpus * peak);
    mt->bubble_fraction = (stages - 1) / L->vpp * worst / pipe;
    mt->exposed_comm_s = dp_t;
out:
    free(st);
    free(enc_mb[0]);
    free(enc_mb[1]);
    if (rc)
        mm_metrics_free(mt);
    return rc;
}
