/* check.c - the layout checked against the cluster, the model and the
 * training keys (mm_sim_prepare, mm_sim_relayout): GPU counts, divisibility
 * of heads, layers and batches, encoder layouts per placement, and what is
 * refused by name (cp/vpp/ep on an encoder, a frozen LLM, an uneven split
 * with the interleaved schedule, batching policies without a workload file).
 * Not for: loading files (prepare.c) or costs (cost/costs.c). */
#include "scenario/sim.h"

#include "parallel/build.h"

#include "hw/compress.h"
#include "model/fp8.h"
#include "model/memory.h"

#include <stdio.h>
#include <string.h>

/* Encoder layouts against the placement and the GPUs left by the LLM. */
static int check_encoders(mm_sim *sim, long long llm_gpus, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    int gpus = mm_cluster_gpus(sim->cluster);
    long long used = llm_gpus;
    for (int i = 0; i < sim->n_enc; i++) {
        mm_sim_encoder *e = &sim->enc[i];
        mm_module_layout *L = &e->layout;
        char key[48];
        snprintf(key, sizeof key, "parallel.%s", e->name);
        if (!L->present) { /* no section: the smallest layout */
            L->present = true;
            L->lay.tp = L->lay.pp = L->lay.dp = L->lay.cp = L->lay.vpp = L->lay.ep = 1;
            L->zero = -1;
        }
        if (L->lay.cp != 1 || L->lay.vpp != 1 || L->lay.ep != 1)
            return mm_scenario_fail(sc, err, key, "encoders take tp, sp, pp, dp and zero (cp, vpp and ep must be 1: "
                                    "an encoder's inputs are short tiles and clips, not long contexts)");
        if (L->lay.embedding_in_split || L->lay.loss_in_split) {
            snprintf(key, sizeof key, "parallel.%s.%s", e->name,
                     L->lay.embedding_in_split ? "embedding_in_split" : "loss_in_split");
            return mm_scenario_fail(sc, err, key, "is the LLM's pipeline-split option (an encoder has no token "
                                    "embedding or loss to count)");
        }
        if (sc->parallel.placement == MM_PLACE_HOMOGENEOUS)
            continue;
        snprintf(key, sizeof key, "parallel.%s.tp", e->name);
        if (e->enc->heads % L->lay.tp)
            return mm_scenario_fail(sc, err, key, "tp = %d does not divide the encoder's %lld heads", L->lay.tp,
                                    (long long)e->enc->heads);
        int tpc = sc->parallel.llm.lay.tp * (sc->parallel.llm.lay.cp > 0 ? sc->parallel.llm.lay.cp : 1);
        if (sc->parallel.placement == MM_PLACE_COLOCATED && sc->train.encoder_schedule == MM_ENCSCHED_BUBBLES &&
            tpc % L->lay.tp)
            return mm_scenario_fail(sc, err, key, "train.encoder_schedule bubbles keeps an encoder TP group on one "
                                    "LLM rank's GPUs, so tp = %d must divide the LLM's tp x cp = %d",
                                    L->lay.tp, tpc);
        bool split = sc->train.encoder_schedule == MM_ENCSCHED_BUBBLES && L->lay.pp > 1;
        if (sc->parallel.placement == MM_PLACE_COLOCATED && split) {
            /* Optimus's plan: the encoder's layers over the LLM's pipeline ranks */
            snprintf(key, sizeof key, "parallel.%s.pp", e->name);
            if (L->lay.pp != sc->parallel.llm.lay.pp || L->lay.pp > e->enc->layers)
                return mm_scenario_fail(sc, err, key, "train.encoder_schedule bubbles splits the encoder's layers over "
                                        "the LLM's pipeline ranks: pp must be 1 or the LLM's %d (and at most the "
                                        "encoder's %lld layers), not %d", sc->parallel.llm.lay.pp,
                                        (long long)e->enc->layers, L->lay.pp);
            snprintf(key, sizeof key, "parallel.%s.dp", e->name);
            if ((long long)L->lay.tp * L->lay.pp * L->lay.dp != llm_gpus)
                return mm_scenario_fail(sc, err, key, "colocated: the encoder spans the LLM's %lld GPUs, so "
                                        "tp*pp*dp must be %lld (got tp %d, pp %d, dp %d)", llm_gpus, llm_gpus,
                                        L->lay.tp, L->lay.pp, L->lay.dp);
            continue;
        }
        if (sc->parallel.placement == MM_PLACE_COLOCATED) {
            snprintf(key, sizeof key, "parallel.%s.dp", e->name);
            if (L->lay.pp != 1 || (long long)L->lay.tp * L->lay.dp != llm_gpus)
                return mm_scenario_fail(sc, err, key,
                                        "colocated: the encoder spans the LLM's %lld GPUs, so tp*dp must be %lld "
                                        "and pp 1 (got tp %d, pp %d, dp %d)", llm_gpus, llm_gpus, L->lay.tp, L->lay.pp, L->lay.dp);
            continue;
        }
        if (L->lay.pp > e->enc->layers) {
            snprintf(key, sizeof key, "parallel.%s.pp", e->name);
            return mm_scenario_fail(sc, err, key, "pp = %d exceeds the encoder's %lld layers", L->lay.pp,
                                    (long long)e->enc->layers);
        }
        used += (long long)L->lay.tp * L->lay.pp * L->lay.dp;
    }
    if (used != gpus) {
        char key[48];
        snprintf(key, sizeof key, "parallel.%s.dp", sim->n_enc ? sim->enc[0].name : "llm");
        return mm_scenario_fail(sc, err, sim->n_enc ? key : "parallel.llm.dp",
                                "the layout uses %lld GPUs (LLM %lld + encoders on their own GPUs %lld), but the "
                                "cluster has %d (%d nodes x %d GPUs)", used, llm_gpus, used - llm_gpus, gpus,
                                sim->cluster->nodes, sim->cluster->gpus_per_node);
    }
    return 0;
}

/* train.frozen: known module names only; an LLM may be frozen when a
 * trainable module lies upstream of it (LLaVA's stage 1 trains the
 * projector alone), never everything. */
static int check_frozen(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    static const char *const known[] = {"vision", "projector", "audio", "audio_projector", "llm"};
    sim->llm_frozen = false;
    for (int i = 0; i < sc->train.n_frozen; i++) {
        bool ok = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            ok |= !strcmp(sc->train.frozen[i], known[k]);
        if (!ok)
            return mm_scenario_fail(sc, err, "train.frozen",
                                    "unknown module '%s' (vision, projector, audio, audio_projector, llm)",
                                    sc->train.frozen[i]);
        sim->llm_frozen |= !strcmp(sc->train.frozen[i], "llm");
    }
    bool upstream = false;
    for (int i = 0; i < sim->n_enc; i++)
        upstream |= !sim->enc[i].frozen_tower || !sim->enc[i].frozen_proj;
    if (sim->llm_frozen && !upstream)
        return mm_scenario_fail(sc, err, "train.frozen", "every module is frozen: nothing to train");
    return 0;
}

/* The LLM's layers over the pipeline: layers_per_stage (one entry a
 * stage, each a multiple of vpp, summing to the model's), Megatron-LM's
 * split options (model/layout.h: its own checks) or an even split of
 * pp*vpp chunks. */
static int check_layer_split(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_llm *m = sim->llm;
    char why[400];
    if (mm_layout_split_check(&L->lay, m->layers, why, sizeof why))
        return mm_scenario_fail(sc, err,
                                L->lay.embedding_in_split ? "parallel.llm.embedding_in_split" : "parallel.llm.loss_in_split",
                                "%s", why);
    if (L->lay.embedding_in_split || L->lay.loss_in_split)
        return 0;
    if (L->lay.n_layers_per_stage) {
        if (L->lay.n_layers_per_stage != L->lay.pp)
            return mm_scenario_fail(sc, err, "parallel.llm.layers_per_stage",
                                    "has %d entries but pp = %d", L->lay.n_layers_per_stage, L->lay.pp);
        long long sum = 0;
        for (int s = 0; s < L->lay.pp; s++) {
            if (L->lay.layers_per_stage[s] < 1)
                return mm_scenario_fail(sc, err, "parallel.llm.layers_per_stage",
                                        "entry %d is %d; every stage needs at least one layer", s, L->lay.layers_per_stage[s]);
            /* interleaved: each stage's layers in vpp equal chunks (Megatron-LM
             * asserts the same of --decoder-first/last-pipeline-num-layers) */
            if (L->lay.layers_per_stage[s] % L->lay.vpp)
                return mm_scenario_fail(sc, err, "parallel.llm.layers_per_stage",
                                        "entry %d is %d layers, not a multiple of vpp = %d (each stage splits its "
                                        "layers into vpp equal model chunks)", s, L->lay.layers_per_stage[s], L->lay.vpp);
            sum += L->lay.layers_per_stage[s];
        }
        if (sum != m->layers)
            return mm_scenario_fail(sc, err, "parallel.llm.layers_per_stage",
                                    "sums to %lld layers, but the model has %lld", sum, (long long)m->layers);
    } else if (m->layers % ((long long)L->lay.pp * L->lay.vpp)) {
        return mm_scenario_fail(sc, err, L->lay.vpp > 1 ? "parallel.llm.vpp" : "parallel.llm.pp",
                                "pp*vpp = %d*%d does not divide the model's %lld layers (give "
                                "parallel.llm.layers_per_stage for an uneven split)",
                                L->lay.pp, L->lay.vpp, (long long)m->layers);
    }
    return 0;
}

/* The batch's micro-batches (global_batch over micro_batch*dp; interleaved:
 * a multiple of pp; sets sim->micro_batches) and the overlap switches that
 * need a ZeRO stage or a framework that has them. */
static int check_batch(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    if (sc->train.global_batch % (sc->train.micro_batch * L->lay.dp))
        return mm_scenario_fail(sc, err, "train.global_batch",
                                "%lld is not divisible by micro_batch*dp = %lld*%d",
                                (long long)sc->train.global_batch, (long long)sc->train.micro_batch, L->lay.dp);
    sim->micro_batches = (int)(sc->train.global_batch / (sc->train.micro_batch * L->lay.dp));
    if (sc->train.schedule == MM_SCHED_INTERLEAVED && sim->micro_batches % L->lay.pp)
        return mm_scenario_fail(sc, err, "train.global_batch",
                                "the interleaved schedule needs micro-batches per DP rank (%d) to be a multiple of "
                                "pp = %d (Megatron-LM's requirement)", sim->micro_batches, L->lay.pp);
    if (sc->train.coexec == MM_COEXEC_DHELIX && sim->micro_batches < 2)
        return mm_scenario_fail(sc, err, "train.coexec",
                                "dhelix pairs micro-batches: %d per DP replica leaves none to pair",
                                sim->micro_batches);
    if (sc->train.overlap_param_gather == MM_TOVL_TRUE && sc->train.zero < 1)
        return mm_scenario_fail(sc, err, "train.overlap_param_gather",
                                "overlaps the distributed optimizer's parameter all-gather: needs train.zero >= 1");
    /* ZeRO-3 without overlap: DeepSpeed's overlap_comm false (gathers and
     * reduce-scatters block the compute stream) is modeled; FSDP2 has no
     * such switch and Megatron-FSDP forces the overlap (the profile's
     * overlap.zero3_blocking says which) */
    /* CUDA graphs only where the framework captures them */
    if ((sc->train.cuda_graphs == MM_GRAPHS_LAYER && !sim->fw->host.graphs_layer) ||
        (sc->train.cuda_graphs == MM_GRAPHS_FULL && !sim->fw->host.graphs_full))
        return mm_scenario_fail(sc, err, "train.cuda_graphs",
                                "'%s' is no configuration of train.framework %s: it captures no such CUDA graphs "
                                "-- %s, host.cuda_graphs; use none",
                                mm_cuda_graphs_names[sc->train.cuda_graphs], sim->fw->name, sim->fw->source);
    int llm_zero = L->zero >= 0 ? L->zero : sc->train.zero;
    if (sc->train.overlap_grad_reduce == MM_TOVL_FALSE && llm_zero >= 3 && !sim->fw->zero3_blocking)
        return mm_scenario_fail(sc, err, "train.overlap_grad_reduce",
                                "false under ZeRO-3 is no configuration of train.framework %s: it always "
                                "all-gathers and reduce-scatters on its own streams (FSDP2's FSDPCommContext; "
                                "Megatron-FSDP asserts overlap_grad_reduce) -- %s, overlap.zero3_blocking; leave "
                                "it auto, or use train.zero <= 2",
                                sim->fw->name, sim->fw->source);
    return 0;
}

/* The zero section (DeepSpeed's stage3_* settings): -1 or a count of
 * parameters, read where the profile gathers module by module (DeepSpeed's
 * coordinator); refused by name under a profile that gathers a layer at
 * once (FSDP2, Megatron-FSDP have no such settings) and where the
 * persistence threshold would keep a whole layer gathered (the layer's
 * weights resident on every rank: not modeled).  Unused below ZeRO-3. */
/* The comm.compress section: each named compressor resolves to a ratio
 * and both kernel throughputs (mm_compress_resolve: the keys, else the
 * table's where its GPU is the topology's), or is refused by the key that
 * is missing; the DP one is modeled where ZeRO 0 reduces the gradients
 * once after the backward, an all-reduce that becomes an all-gather of
 * compressed buffers; under the distributed optimizer (a reduce-scatter),
 * ZeRO-3 or reductions overlapped with the backward it is refused.  The
 * TP one is modeled for blocking all-reduces: sequence parallelism (an
 * all-gather and a reduce-scatter), train.tp_comm_overlap and DHelix's
 * strands (the traffic beside the other strand's compute) are refused. */
static int check_compress(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    if (!sc->compress.present || (!sc->compress.dp && !sc->compress.pp && !sc->compress.tp))
        return 0;
    static const char *const rkeys[] = {"comm.compress.dp_ratio", "comm.compress.pp_ratio", "comm.compress.tp_ratio"};
    for (int side = 0; side < 3; side++) {
        int i = side == 2 ? sc->compress.tp : side ? sc->compress.pp : sc->compress.dp;
        double r = side == 2 ? sc->compress.tp_ratio : side ? sc->compress.pp_ratio : sc->compress.dp_ratio;
        const char *rk = rkeys[side];
        if (!i)
            continue;
        if (r != 0 && r < 1)
            return mm_scenario_fail(sc, err, rk, "%g: a compressor shrinks its input (ratio >= 1), or 0 for the table's",
                                    r);
        mm_compress_use u;
        int miss = mm_compress_resolve(i, r, sc->compress.compress_gb_s, sc->compress.decompress_gb_s,
                                       sim->cluster->gpu.name, &u);
        const mm_compressor *z = mm_compressor_get(i);
        if (miss == 1)
            return mm_scenario_fail(sc, err, rk, "%s's ratio depends on the data and its error bound (%s): give it",
                                    z->name, z->source);
        if (miss)
            return mm_scenario_fail(sc, err, miss == 2 ? "comm.compress.compress_gb_s" : "comm.compress.decompress_gb_s",
                                    "%s has no published %s throughput on %s in the table (%s): give it", z->name,
                                    miss == 2 ? "compress" : "decompress", sim->cluster->gpu.name, z->source);
    }
    if (sc->compress.pp && sc->train.pass_times && *sc->train.pass_times)
        return mm_scenario_fail(sc, err, "comm.compress.pp",
                                "with train.pass_times the pipeline sends take the measured times: not modeled");
    const mm_module_layout *L = &sc->parallel.llm;
    if (sc->compress.tp && (sc->train.sequence_parallel || L->sp) && L->lay.tp > 1)
        return mm_scenario_fail(sc, err, "comm.compress.tp",
                                "with sequence parallelism (an all-gather and a reduce-scatter a layer): not "
                                "modeled; compressed TP is modeled for the all-reduce");
    if (sc->compress.tp && sc->train.tp_comm_overlap)
        return mm_scenario_fail(sc, err, "comm.compress.tp",
                                "with train.tp_comm_overlap (TP traffic overlapped with the GEMMs): not modeled");
    if (sc->compress.tp && sc->train.coexec == MM_COEXEC_DHELIX)
        return mm_scenario_fail(sc, err, "comm.compress.tp",
                                "with train.coexec dhelix (TP traffic beside the other strand's compute): not modeled");
    if (!sc->compress.dp)
        return 0;
    int zero = L->zero >= 0 ? L->zero : sc->train.zero;
    if (zero != 0)
        return mm_scenario_fail(sc, err, "comm.compress.dp",
                                "under ZeRO %d (a reduce-scatter of gradients): not modeled; compressed DP "
                                "reduction is modeled for ZeRO 0's all-reduce",
                                zero);
    bool grad = false, param = false;
    mm_framework_overlap(sim->fw, zero, &grad, &param);
    if (sc->train.overlap_grad_reduce != MM_TOVL_AUTO)
        grad = sc->train.overlap_grad_reduce == MM_TOVL_TRUE;
    int pipe = L->lay.pp;
    for (int i = 0; i < sim->n_enc && sc->parallel.placement == MM_PLACE_PIPELINE; i++)
        pipe += sim->enc[i].layout.lay.pp;
    if (grad || mm_framework_grad_every_microbatch(sim->fw, zero, pipe))
        return mm_scenario_fail(sc, err, "comm.compress.dp",
                                "with the gradient reduction overlapped with the backward or run every "
                                "micro-batch (train.framework %s): not modeled; set train.overlap_grad_reduce: false",
                                sim->fw->name);
    return 0;
}

static int check_zero(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const double v[] = {sc->zero.prefetch_bucket_size, sc->zero.max_live_parameters,
                        sc->zero.param_persistence_threshold, sc->zero.max_reuse_distance};
    static const char *const keys[] = {"zero.prefetch_bucket_size", "zero.max_live_parameters",
                                       "zero.param_persistence_threshold", "zero.max_reuse_distance"};
    for (int i = 0; i < 4; i++) {
        if (v[i] < 0 && v[i] != -1)
            return mm_scenario_fail(sc, err, keys[i], "%g: a count of parameters (>= 0), or -1 for the profile's", v[i]);
        if (v[i] >= 0 && !sim->fw->z3_per_module)
            return mm_scenario_fail(sc, err, keys[i],
                                    "train.framework %s gathers a layer at once (its profile's zero3.gather: layer) and "
                                    "has no DeepSpeed stage3 setting -- %s; leave it -1",
                                    sim->fw->name, sim->fw->source);
    }
    const mm_module_layout *L = &sc->parallel.llm;
    int llm_zero = L->zero >= 0 ? L->zero : sc->train.zero;
    /* the stages the framework runs (its profile's zero_stages), the
     * LLM's and each encoder's */
    for (int i = -1; i < sim->n_enc; i++) {
        int z = i < 0 ? llm_zero : sim->enc[i].layout.zero >= 0 ? sim->enc[i].layout.zero : sc->train.zero;
        if (z < 0 || z > 3 || (sim->fw->zero_stages >> z) & 1u)
            continue;
        char key[64];
        if (i < 0)
            snprintf(key, sizeof key, "%s", L->zero >= 0 ? "parallel.llm.zero" : "train.zero");
        else
            snprintf(key, sizeof key, "%s%s%s", sim->enc[i].layout.zero >= 0 ? "parallel." : "train.zero",
                     sim->enc[i].layout.zero >= 0 ? sim->enc[i].name : "", sim->enc[i].layout.zero >= 0 ? ".zero" : "");
        return mm_scenario_fail(sc, err, key,
                                "ZeRO-%d is not run by train.framework %s (its profile's zero_stages lists what "
                                "it runs) -- %s",
                                z, sim->fw->name, sim->fw->source);
    }
    mm_z3_knobs k = {v[0], v[1], v[2], v[3]};
    mm_z3_gather_plan p;
    if (llm_zero >= 3 && mm_framework_z3_plan(sim->fw, sim->llm, &k, false, &p))
        return mm_scenario_fail(sc, err, "zero.param_persistence_threshold",
                                "every parameter of a layer is at most %g elements, so every layer would stay "
                                "gathered on every rank: not modeled; use a threshold below the layer's largest "
                                "parameter", v[2] >= 0 ? v[2] : sim->fw->z3_persist_params);
    return 0;
}

/* The moe section onto the model (model/moe.h), refused by name where it
 * asks for what is not modeled. */
static int check_moe(mm_sim *sim, int ep, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    mm_moe_cfg c = {.routing = sc->moe.routing, .param = sc->moe.routing_param,
                    .capacity_factor = sc->moe.capacity_factor, .drop_policy = sc->moe.drop_policy,
                    .pad = sc->moe.pad_to_capacity, .dispatcher = sc->moe.dispatcher,
                    .sequential = !sc->moe.grouped_gemm, .seed = sc->seed,
                    .cache = sim->llm->moe.cache}; /* kept over re-checks of the same sim */
    if (c.pad && !(c.capacity_factor > 0))
        return mm_scenario_fail(sc, err, "moe.pad_to_capacity",
                                "padding to capacity needs moe.capacity_factor > 0 (Megatron-Core asserts the same)");
    if (c.routing == MM_MOE_BALANCED && c.param > 0)
        return mm_scenario_fail(sc, err, "moe.routing_param", "routing balanced takes no parameter (%g given)", c.param);
    const char *why = NULL;
    if (mm_moe_check(&c, &why))
        return mm_scenario_fail(sc, err, "moe.routing_param", "%s (%g given)", why, c.param);
    int tp = sc->parallel.llm.lay.tp, etp = tp / (sim->llm->ep_tp > 1 ? sim->llm->ep_tp : 1);
    if (sc->moe.expert_tp > 0 && sc->moe.expert_tp != etp)
        return mm_scenario_fail(sc, err, "moe.expert_tp",
                                "expert TP %d is not modeled with tp %d, ep %d, dp %d: the expert group folds "
                                "gcd(ep, dp) replicas x ep / gcd TP ranks, which leaves the experts tp / that = %d "
                                "ways split (Megatron-Core MoE parallel folding; Megatron's default is tp: give "
                                "--expert-tensor-parallel-size %d)",
                                sc->moe.expert_tp, tp, ep, sc->parallel.llm.lay.dp, etp, etp);
    if (c.dispatcher == MM_MOE_ALLGATHER && ep > 1)
        return mm_scenario_fail(sc, err, "moe.dispatcher",
                                "the allgather token dispatcher at ep %d is not modeled (alltoall is)", ep);
    if (c.routing != MM_MOE_BALANCED && (int64_t)sc->train.micro_batch * sc->train.seq_len *
                                                sim->llm->experts_per_tok > (int64_t)UINT32_MAX)
        return mm_scenario_fail(sc, err, "train.seq_len", "over 2^32 routed token copies per micro-batch");
    if (!c.cache && !(c.cache = mm_moe_cache_alloc()))
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    sim->llm->moe = c;
    return 0;
}

/* The data section (cost/loader.h) against the cluster: what it needs the
 * topology to say, and prefetch without workers (PyTorch refuses it). */
static int check_data(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_cluster *c = sim->cluster;
    if (sc->data.workers < 0)
        return 0;
    if (sc->data.workers == 0 && mm_scenario_key_given(sc, "data.prefetch"))
        return mm_scenario_fail(sc, err, "data.prefetch",
                                "prefetch applies to loader workers only: PyTorch refuses prefetch_factor with "
                                "num_workers 0; set data.workers > 0 or drop data.prefetch");
    if (sc->data.workers > 0 && c->cpu_cores <= 0)
        return mm_scenario_fail(sc, err, "data.workers",
                                "loader workers run on the node's CPU cores, and topology %s gives no "
                                "node.cpu_cores", c->source);
    if (c->pcie_bw <= 0)
        return mm_scenario_fail(sc, err, "data.workers",
                                "batches are copied to the GPU over PCIe, and topology %s gives no node.pcie_gb_s",
                                c->source);
    if (sc->data.video_decoder == MM_VDEC_NVDEC && c->gpu.nvdec <= 0)
        return mm_scenario_fail(sc, err, "data.video_decoder",
                                "nvdec decodes on the GPU's NVDEC engines, and topology %s gives no gpu.nvdec",
                                c->source);
    return 0;
}

/* An eager optimizer (the profile's optimizer.impl foreach or for_loop)
 * launches per parameter tensor: the model must say how many it has. */
static int check_optimizer(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    if (sim->fw->opt_impl != MM_OPT_FUSED && mm_llm_block_tensors(sim->llm) < 0)
        return mm_scenario_fail(sc, err, "train.framework",
                                "the profile's optimizer.impl %s counts the model's parameter tensors, which are "
                                "not modeled for MoE, latent-attention or mixed blocks: use impl fused",
                                mm_opt_impl_names[sim->fw->opt_impl]);
    return 0;
}

/* The run's periodic work (cost/runcost.h): saving needs the storage's
 * bandwidth, which no topology states. */
static int check_run(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    if (sc->train.save_interval > 0 && !(sc->train.save_gb_s > 0))
        return mm_scenario_fail(sc, err, "train.save_interval",
                                "checkpoint saves are written at the storage's bandwidth, which is the site's "
                                "(its shared file system, or the node's NVMe cache), not the topology's: no "
                                "published figure serves as a default; set train.save_gb_s (GB/s per node, as "
                                "fio or gdsio measures a write there) with train.save_interval");
    if (sc->train.save_gb_s > 0 && sc->train.save_interval == 0)
        return mm_scenario_fail(sc, err, "train.save_gb_s",
                                "train.save_gb_s applies to checkpoint saves only: set train.save_interval too");
    return 0;
}

/* atom (cost/swap.h): every GPU of a peer holds a whole copy of the LLM
 * (tp, cp, pp, vpp 1; the peer's GPUs data-parallel), its optimizer and
 * states on the host (zero 0, the outer state not on the GPU), streamed
 * over PCIe (the topology must give its rate); the averaging is
 * asynchronous, always behind the training (overlap is not a choice);
 * memory that follows a workload file's samples is not swapped. */
static int check_atom(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_layout *lay = &sc->parallel.llm.lay;
    if (lay->tp != 1 || lay->pp != 1 || (lay->cp > 1) || lay->vpp > 1)
        return mm_scenario_fail(sc, err, "parallel.llm",
                                "atom: every GPU of a peer trains a whole copy of the model by swapping its layers "
                                "from host memory (tp 1, cp 1, pp 1; the peer's GPUs are data-parallel)");
    if (lay->ep > 1)
        return mm_scenario_fail(sc, err, "parallel.llm.ep", "atom: expert parallelism inside a peer is not modeled");
    if (sc->train.zero != 0)
        return mm_scenario_fail(sc, err, "train.zero",
                                "%d: atom keeps the optimizer and its states on the host (set train.zero 0)",
                                sc->train.zero);
    if (mm_scenario_key_given(sc, "train.outer_sync.overlap"))
        return mm_scenario_fail(sc, err, "train.outer_sync.overlap",
                                "atom averages the peers' models asynchronously, always behind the training");
    if (sc->train.outer_sync.state != 0)
        return mm_scenario_fail(sc, err, "train.outer_sync.state",
                                "atom keeps the model and its optimizer on the host");
    if (sim->cluster->pcie_bw <= 0)
        return mm_scenario_fail(sc, err, "train.outer_sync.algorithm",
                                "atom swaps the layers over PCIe: the topology %s gives no node.pcie_gb_s",
                                sim->cluster->name);
    if (sim->wl)
        return mm_scenario_fail(sc, err, "workload",
                                "atom with a workload file's samples: memory that follows the data is not swapped "
                                "(not modeled); use text or a fixed sample");
    return 0;
}

/* train.outer_sync and the topology's sites go together; atom's own
 * constraints (check_atom); allreduce syncs every step and blocks; a compressor resolves to
 * a ratio and both kernel throughputs (on fp32 values, as the table's
 * ratios are) or is refused by the key that is missing. */
static int check_outer_sync(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_cluster *c = sim->cluster;
    bool on = sc->train.outer_sync.present;
    int rc;
    if (c->sites >= 2 && !on)
        return mm_scenario_fail(sc, err, "train.outer_sync",
                                "the topology %s joins %d sites by a WAN: say how they synchronise "
                                "(train.outer_sync: {algorithm: allreduce}, {algorithm: diloco, h: H} or {algorithm: atom, h: H})",
                                c->name, c->sites);
    if (!on)
        return 0;
    if (c->sites < 2)
        return mm_scenario_fail(sc, err, "train.outer_sync",
                                "the topology %s has no sites: section (sites joined by a WAN)", c->name);
    int algo = sc->train.outer_sync.algorithm;
    if (algo == MM_OSYNC_ATOM && (rc = check_atom(sim, err)))
        return rc;
    if (algo == MM_OSYNC_ALLREDUCE && sc->train.outer_sync.h != 1)
        return mm_scenario_fail(sc, err, "train.outer_sync.h",
                                "%d: allreduce synchronises the gradients after every step (h 1); local steps "
                                "between syncs are diloco's", sc->train.outer_sync.h);
    if (algo == MM_OSYNC_ALLREDUCE && sc->train.outer_sync.overlap)
        return mm_scenario_fail(sc, err, "train.outer_sync.overlap",
                                "allreduce's gradients are applied by the step that made them (the one-step "
                                "delay is diloco's)");
    if (algo == MM_OSYNC_ALLREDUCE && sc->train.outer_sync.state != 0)
        return mm_scenario_fail(sc, err, "train.outer_sync.state",
                                "allreduce has no outer optimizer (its state is diloco's)");
    if (algo == MM_OSYNC_ALLREDUCE && mm_scenario_key_given(sc, "train.outer_sync.dtype"))
        return mm_scenario_fail(sc, err, "train.outer_sync.dtype",
                                "allreduce sends the gradients as the site's DP reduction does (train.grad_reduce)");
    if (algo == MM_OSYNC_ALLREDUCE && sc->train.outer_sync.compress)
        return mm_scenario_fail(sc, err, "train.outer_sync.compress",
                                "compressed gradients across sites every step: not modeled (diloco's "
                                "pseudo-gradient is)");
    int i = sc->train.outer_sync.compress;
    double r = sc->train.outer_sync.compress_ratio;
    if (!i && (r > 0 || sc->train.outer_sync.compress_gb_s > 0 || sc->train.outer_sync.decompress_gb_s > 0))
        return mm_scenario_fail(sc, err, r > 0 ? "train.outer_sync.compress_ratio" : "train.outer_sync.compress_gb_s",
                                "given without train.outer_sync.compress");
    if (!i)
        return 0;
    if (sc->train.outer_sync.dtype != 0)
        return mm_scenario_fail(sc, err, "train.outer_sync.compress",
                                "the compressors' ratios are on fp32 values: set train.outer_sync.dtype fp32");
    if (r != 0 && r < 1)
        return mm_scenario_fail(sc, err, "train.outer_sync.compress_ratio",
                                "%g: a compressor shrinks its input (ratio >= 1), or 0 for the table's", r);
    mm_compress_use u;
    int miss = mm_compress_resolve(i, r, sc->train.outer_sync.compress_gb_s, sc->train.outer_sync.decompress_gb_s,
                                   c->gpu.name, &u);
    const mm_compressor *z = mm_compressor_get(i);
    if (miss == 1)
        return mm_scenario_fail(sc, err, "train.outer_sync.compress_ratio",
                                "%s's ratio depends on the data and its error bound (%s): give it", z->name, z->source);
    if (miss)
        return mm_scenario_fail(sc, err,
                                miss == 2 ? "train.outer_sync.compress_gb_s" : "train.outer_sync.decompress_gb_s",
                                "%s has no published %s throughput on %s in the table (%s): give it", z->name,
                                miss == 2 ? "compress" : "decompress", c->gpu.name, z->source);
    return 0;
}

/* train.grad_accum_fusion false: the per-micro-batch accumulation into an
 * unsharded main gradient (cost/costs.c grad_accum_s); with ZeRO 2-3 the
 * gradients are sharded per micro-batch, not modeled. */
static int check_grad_accum(const mm_scenario *sc, mm_err *err)
{
    int zero = sc->parallel.llm.zero >= 0 ? sc->parallel.llm.zero : sc->train.zero;
    if (!sc->train.grad_accum_fusion && zero >= 2)
        return mm_scenario_fail(sc, err, "train.grad_accum_fusion",
                                "false with ZeRO %d (sharded gradients per micro-batch): not modeled; "
                                "use ZeRO 0-1 or leave it true", zero);
    return 0;
}

/* The FP8 keys: only under train.precision fp8, and a recipe the GPU runs
 * (Transformer Engine refuses the others at start-up). */
static int check_fp8(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    static const char *const keys[] = {"train.fp8_recipe", "train.fp8_param_gather", "train.fp8_grads",
                                       "train.fp8_optimizer"};
    if (sc->train.precision != MM_PREC_FP8) {
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            if (mm_scenario_key_given(sc, keys[i]))
                return mm_scenario_fail(sc, err, keys[i], "applies only with train.precision: fp8 (it is %s)",
                                        mm_precision_names[sc->train.precision]);
        return 0;
    }
    const char *why;
    const mm_gpu_spec *g = &sim->cluster->gpu;
    if (!mm_fp8_recipe_supported((mm_fp8_recipe)sc->train.fp8_recipe, g->compute_capability, &why))
        return mm_scenario_fail(sc, err, "train.fp8_recipe", "%s does not run recipe %s: %s (the GPU states %.1f)",
                                g->name, mm_fp8_recipe_names[sc->train.fp8_recipe], why, g->compute_capability);
    return 0;
}

/* train.coexec dhelix: the pairs' strands hide TP, CP (Ulysses) and EP
 * traffic; what a pair does not run is refused by name. */
static int check_coexec(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const char *k = "train.coexec";
    if (sc->train.coexec == MM_COEXEC_NONE)
        return 0;
    int cp = L->lay.cp > 0 ? L->lay.cp : 1, zero = L->zero >= 0 ? L->zero : sc->train.zero;
    if (L->lay.tp <= 1 && cp <= 1 && L->lay.ep <= 1)
        return mm_scenario_fail(sc, err, k, "dhelix hides TP, CP and EP traffic, and this layout has none "
                                            "(tp 1, cp 1, ep 1)");
    if (sc->train.tp_comm_overlap)
        return mm_scenario_fail(sc, err, k, "dhelix's strands replace train.tp_comm_overlap: set one of them");
    if (cp > 1 && sc->train.cp_comm == MM_CP_RING)
        return mm_scenario_fail(sc, err, k, "the CP ring already overlaps its KV exchange with the attention "
                                            "core; dhelix is modeled with train.cp_comm ulysses");
    if (zero >= 3)
        return mm_scenario_fail(sc, err, k, "dhelix is not modeled under ZeRO-3 (zero = %d)", zero);
    if (sc->train.schedule != MM_SCHED_GPIPE && sc->train.schedule != MM_SCHED_1F1B)
        return mm_scenario_fail(sc, err, k, "dhelix pairs run under train.schedule gpipe or 1f1b (not %s)",
                                mm_schedule_names[sc->train.schedule]);
    if (sc->parallel.placement == MM_PLACE_HOMOGENEOUS && sim->n_enc > 0)
        return mm_scenario_fail(sc, err, k, "dhelix is modeled for the LLM alone: an encoder placed homogeneously "
                                            "runs inside its passes");
    return 0;
}

/* train.encoder_schedule bubbles (Optimus): a colocated encoder's kernels
 * in the LLM's idle time; what it does not model is refused by name. */
static int check_enc_schedule(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const char *k = "train.encoder_schedule";
    if (sc->train.encoder_schedule == MM_ENCSCHED_SERIAL || sim->n_enc == 0)
        return 0; /* a model without an encoder ignores its encoder keys */
    if (sc->parallel.placement != MM_PLACE_COLOCATED)
        return mm_scenario_fail(sc, err, k, "bubbles schedules an encoder colocated with the LLM (parallel.placement "
                                            "colocated), not one placed %s",
                                mm_placement_names[sc->parallel.placement]);
    if (sc->train.coexec != MM_COEXEC_NONE)
        return mm_scenario_fail(sc, err, k, "bubbles is not modeled with train.coexec %s",
                                mm_coexec_names[sc->train.coexec]);
    return 0;
}

/* train.padding's choices after auto are mm_padding's, in its order */
_Static_assert(MM_TPAD_NONE - 1 == MM_PAD_NONE && MM_TPAD_LONGEST - 1 == MM_PAD_LONGEST &&
                   MM_TPAD_MAX_LENGTH - 1 == MM_PAD_MAX_LENGTH,
               "mm_train_padding follows mm_padding");

/* The padding of the LLM's sequences: train.padding unless auto, else the
 * profile's default for this layout, its padding_pipelined when the LLM
 * is pipelined (pp > 1: its sequences cross stages, whose point-to-point
 * shapes are fixed, so every sample is padded to one length; Megatron's
 * LLaVAModel pads when _language_is_pipeline_parallel.  Encoder stages
 * ahead of an unsplit LLM send it image embeddings, not its sequence).
 * train.pad_to with an explicit none or longest is refused: nothing would
 * read it. */
int64_t mm_sim_pad_to(const mm_sim *sim)
{
    return sim->sc.train.pad_to > 0 ? sim->sc.train.pad_to : sim->sc.train.seq_len;
}

static int pick_padding(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    if (sc->train.padding == MM_TPAD_AUTO)
        sim->padding = sc->parallel.llm.lay.pp > 1 ? sim->fw->padding_pipelined : sim->fw->padding;
    else
        sim->padding = (mm_padding)(sc->train.padding - 1);
    if (sc->train.pad_to > 0 && (sc->train.padding == MM_TPAD_NONE || sc->train.padding == MM_TPAD_LONGEST))
        return mm_scenario_fail(sc, err, "train.pad_to",
                                "pads to a fixed length, which train.padding %s does not use (max_length or auto)",
                                mm_train_padding_names[sc->train.padding]);
    return 0;
}

/* The schedules the framework runs (its profile's schedules list): one
 * it has no code for is refused by name, at any pp. */
static int check_schedule(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    int k = (int)sc->train.schedule;
    if ((sim->fw->schedules >> k) & 1u)
        return 0;
    char runs[96] = "";
    size_t n = 0;
    for (int i = 0; mm_schedule_names[i]; i++)
        if ((sim->fw->schedules >> i) & 1u && n < sizeof runs)
            n += (size_t)snprintf(runs + n, sizeof runs - n, "%s%s", n ? ", " : "", mm_schedule_names[i]);
    return mm_scenario_fail(sc, err, "train.schedule",
                            "%s is not run by train.framework %s (its profile's schedules: %s) -- %s",
                            mm_schedule_names[k], sim->fw->name, runs, sim->fw->source);
}

static int check_layout(mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_llm *m = sim->llm;
    int gpus = mm_cluster_gpus(sim->cluster);
    bool moe = m->experts > 0;
    int frc8 = check_fp8(sim, err); /* first: a key that does not apply is named before any layout problem */
    if (frc8)
        return frc8;
    int crc = check_coexec(sim, err);
    if (crc)
        return crc;
    if ((crc = check_grad_accum(sc, err)))
        return crc;
    if (L->lay.ep > 1 && !moe)
        return mm_scenario_fail(sc, err, "parallel.llm.ep", "expert parallelism (ep = %d) needs an MoE model", L->lay.ep);
    int ep_dp = 1, ep_tp = 1;
    if (L->lay.ep > 1 && (mm_mem_ep_fold(L->lay.ep, L->lay.tp, L->lay.dp, &ep_dp, &ep_tp) || m->experts % L->lay.ep))
        return mm_scenario_fail(sc, err, "parallel.llm.ep",
                                "ep = %d must divide the model's %lld experts and fold into dp x tp: gcd(ep, dp) "
                                "replicas times ep/gcd TP ranks, which must divide tp = %d (dp = %d; "
                                "Megatron-Core MoE parallel folding)",
                                L->lay.ep, (long long)m->experts, L->lay.tp, L->lay.dp);
    sim->llm->ep_share = L->lay.ep > 1 ? ep_dp : 1; /* the experts' GEMMs serve the group's replicas */
    sim->llm->ep_tp = L->lay.ep > 1 ? ep_tp : 1;
    int mrc = moe ? check_moe(sim, L->lay.ep, err) : 0;
    if (mrc)
        return mrc;
    if (L->lay.cp > 1 && sc->train.seq_len % (2 * L->lay.cp))
        return mm_scenario_fail(sc, err, "parallel.llm.cp",
                                "seq_len %lld is not divisible by 2*cp = %d (each CP rank takes two load-balanced chunks)",
                                (long long)sc->train.seq_len, 2 * L->lay.cp);
    if ((crc = check_schedule(sim, err)))
        return crc;
    /* ZB-V places exactly two chunks per rank, in a V (arXiv 2405.15362) */
    if (sc->train.schedule == MM_SCHED_ZB_V && L->lay.vpp != 2)
        return mm_scenario_fail(sc, err, "parallel.llm.vpp",
                                "train.schedule zb-v places two model chunks per rank in a V: vpp must be 2, not %d",
                                L->lay.vpp);
    if (L->lay.vpp > 1 && sc->train.schedule != MM_SCHED_INTERLEAVED && sc->train.schedule != MM_SCHED_ZB_V)
        return mm_scenario_fail(sc, err, "parallel.llm.vpp", "vpp = %d needs train.schedule: interleaved (or zb-v at vpp 2)",
                                L->lay.vpp);
    int order[MM_DIM_COUNT];
    if (mm_build_parse_order(sc->parallel.order, order))
        return mm_scenario_fail(sc, err, "parallel.order",
                                "'%s' is not an order of tp, cp, dp and pp (ep may stand right before dp), "
                                "e.g. tp-cp-ep-dp-pp", sc->parallel.order);
    long long need = (long long)L->lay.tp * L->lay.cp * L->lay.pp * L->lay.dp;
    int rc = mm_sim_check_workload(sim, err);
    if (rc)
        return rc;
    bool own = sc->parallel.placement == MM_PLACE_PIPELINE || sc->parallel.placement == MM_PLACE_DISJOINT;
    if (need != gpus && !(own && sim->n_enc > 0))
        return mm_scenario_fail(sc, err, "parallel.llm.dp",
                                "tp*cp*pp*dp = %d*%d*%d*%d = %lld GPUs, but the cluster has %d (%d nodes x %d GPUs)",
                                L->lay.tp, L->lay.cp, L->lay.pp, L->lay.dp, need, gpus, sim->cluster->nodes, sim->cluster->gpus_per_node);
    if ((rc = check_enc_schedule(sim, err)) || (rc = check_encoders(sim, need, err)))
        return rc;
    if ((rc = pick_padding(sim, err)))
        return rc;
    if (sim->cluster->gpus_per_node % L->lay.tp && L->lay.tp < sim->cluster->gpus_per_node)
        return mm_scenario_fail(sc, err, "parallel.llm.tp",
                                "tp = %d does not divide the %d GPUs of a node, so TP groups would straddle nodes",
                                L->lay.tp, sim->cluster->gpus_per_node);
    if (m->heads % L->lay.tp)
        return mm_scenario_fail(sc, err, "parallel.llm.tp", "tp = %d does not divide the model's %lld attention heads",
                                L->lay.tp, (long long)m->heads);
    if ((rc = check_layer_split(sim, err)) || (rc = check_batch(sim, err)) || (rc = check_zero(sim, err)) ||
        (rc = check_compress(sim, err)) ||
        (rc = check_data(sim, err)) || (rc = check_run(sim, err)) || (rc = check_outer_sync(sim, err)) ||
        (rc = check_optimizer(sim, err)))
        return rc;
    int frc = check_frozen(sim, err);
    if (frc)
        return frc;
    if (sc->batching != MM_BATCH_SEQUENTIAL && !sim->wl)
        return mm_scenario_fail(sc, err, "batching",
                                "'%s' needs samples that differ: a mixture or trace file as the workload "
                                "(with `text` or a fixed sample every policy is `sequential`)",
                                mm_batching_names[sc->batching]);
    if (sc->train.seq_len > m->max_pos && m->learned_pos)
        return mm_scenario_fail(sc, err, "train.seq_len", "%lld exceeds the model's %lld learned positions",
                                (long long)sc->train.seq_len, (long long)m->max_pos);
    mm_dtype dt = (mm_dtype)sc->train.precision;
    if (!(sim->cluster->gpu.peak_flops[dt] > 0))
        return mm_scenario_fail(sc, err, "train.precision", "%s has no %s tensor-core peak",
                                sim->cluster->gpu.name, mm_precision_names[sc->train.precision]);
    return 0;
}

int mm_sim_prepare(mm_sim *sim, const mm_scenario *sc, mm_err *err)
{
    int rc = mm_sim_load(sim, sc, err);
    if (rc == 0 && (rc = check_layout(sim, err)))
        mm_sim_free(sim); /* a failed prepare holds nothing */
    return rc;
}

int mm_sim_relayout(mm_sim *sim, mm_err *err)
{
    mm_sim_free_workload(sim); /* a workload file is loaded again by check_layout */
    sim->n_enc = 0;
    sim->micro_batches = 0;
    memset(sim->enc, 0, sizeof sim->enc);
    return check_layout(sim, err);
}
