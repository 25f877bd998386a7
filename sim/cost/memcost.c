/* memcost.c - the cost bridge's memory side: the peak bytes on one GPU of
 * every pipeline stage and module (the LLM's stages from memory.h's model
 * with this scenario's layout, schedule, recompute and framework; each
 * encoder's states and in-flight activations), and whether some GPU plus
 * train.memory_reserve_gib exceeds its HBM.  Split from costs.c, whose
 * time side it shares the encoder layouts with (mm_sim_enc_layout).
 * Not for: memory that follows the data per iteration (datamem.c), the
 * memory formulas themselves (model/memory.c), pass times (costs.c). */
#include "cost/costs.h"

#include "cost/cost_internal.h"
#include "cost/outersync.h"
#include "cost/swap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/memory.h"
#include "model/mllm.h"

/* The recompute mode the memory model sees.  Flash and cuDNN fused
 * attention never write the 5as^2b scores, softmax and dropout mask that
 * Korthikanti's count keeps without recomputation (the kernel keeps a
 * per-row log-sum-exp, a*s fp32, and regenerates dropout from the RNG
 * seed): exactly the terms selective recomputation drops, so a run without
 * recomputation on a fused kernel holds selective's activations. */
int mm_sim_mem_recompute_of(const mm_sim *sim, const mm_module_layout *lay)
{
    int rc = mm_sim_recompute(sim, lay);
    return rc == MM_RECOMPUTE_NONE && !mm_attn_impl_unfused(sim->attn) ? MM_RECOMPUTE_SELECTIVE : rc;
}

int mm_sim_mem_recompute(const mm_sim *sim) { return mm_sim_mem_recompute_of(sim, &sim->sc.parallel.llm); }


/* Peak bytes on one GPU of each pipeline stage (memory.h) into
 * m->stage_gib and m->peak_gib (llm_memory below); true when some stage
 * plus train.memory_reserve_gib exceeds the GPU's HBM.  The configuration
 * is shared with memory that follows the data (datamem.c). */
void mm_sim_llm_mem_config(const mm_sim *sim, mm_mem_config *c)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    static const mm_mem_schedule sched[] = {
        [MM_SCHED_GPIPE] = MM_MEM_GPIPE, [MM_SCHED_1F1B] = MM_MEM_1F1B,
        [MM_SCHED_INTERLEAVED] = MM_MEM_INTERLEAVED, [MM_SCHED_ZB_H1] = MM_MEM_ZB_H1,
        [MM_SCHED_ZB_2P] = MM_MEM_ZB_2P, [MM_SCHED_ZB_V] = MM_MEM_ZB_V};
    *c = (mm_mem_config){
        .lay = L->lay,
        .sp = (sc->train.sequence_parallel || L->sp) && L->lay.tp > 1,
        .zero = L->zero >= 0 ? L->zero : sc->train.zero,
        .recompute = mm_sim_mem_recompute_of(sim, L),
        .frozen = sim->llm_frozen,
        .grad_bytes = mm_framework_grad_bytes(sim->fw, (mm_dtype)sc->train.precision),
        .z3_keep = mm_framework_z3_keep_gathered(sim->fw, L->zero >= 0 ? L->zero : sc->train.zero,
                                                 mm_sim_pipe_stages(sim)),
        .schedule = sched[sc->train.schedule],
        .micro_batches = sim->micro_batches,
        .micro_batch = (double)sc->train.micro_batch,
        .seq = mm_sim_cost_seq(sim),
        .fp8 = mm_sim_fp8(sim),
        .cp_ring = L->lay.cp > 1 && sc->train.cp_comm == MM_CP_RING,
        .coexec = sc->train.coexec == MM_COEXEC_DHELIX,
    };
    const mm_framework *fw = sim->fw;
    if (!fw)
        return;
    c->eager = (mm_mem_eager){.norm_extra = fw->mem.norm_extra, .rope_extra = fw->mem.rope_extra,
                              .act_extra = fw->mem.act_extra, .no_dropout = !(fw->hidden_dropout > 0)};
    c->loss_bytes = fw->mem.loss_bytes;
    /* FlashAttention-2/3's backward accumulates dq in fp32 (Dao-AILab/
     * flash-attention csrc/flash_attn/flash_api.cpp mha_bwd: dq_accum,
     * float, (b, s, h, d)); cuDNN's and the unfused core are not counted */
    c->dq_accum = sim->attn == MM_ATTN_IMPL_FLASH || sim->attn == MM_ATTN_IMPL_FLASH2 ||
                  sim->attn == MM_ATTN_IMPL_FLASH3;
    if (c->zero >= 3 && !c->z3_keep) {
        double layer = (double)mm_llm_layer_params(sim->llm) / (double)(L->lay.tp > 0 ? L->lay.tp : 1);
        double gb = c->grad_bytes > 0 ? c->grad_bytes : MM_BYTES_GRAD;
        c->z3_bytes = (1.0 + mm_framework_z3_prefetch(fw, sim->llm)) * layer * MM_BYTES_WEIGHT + layer * gb;
    }
}

void mm_sim_mem_alloc(const mm_sim *sim, int tp, int cp, int pp, int dp, int ep, int zero, double params,
                      mm_mem_alloc *a)
{
    *a = (mm_mem_alloc){0};
    const mm_framework *fw = sim->fw;
    if (!fw)
        return;
    const mm_fw_memory *x = &fw->mem;
    int comms = (tp > 1) + (cp > 1) + (dp > 1) + (ep > 1) + (pp > 1);
    a->fragmentation = x->fragmentation;
    a->fixed = x->context_bytes + x->workspace_bytes + (double)comms * 2.0 * x->nccl_channels * x->nccl_bytes;
    if (zero >= 1 && zero <= 2 && x->bucket_buffers > 0 && dp > 1) {
        bool ovl_grad, ovl_param;
        mm_framework_overlap(fw, zero, &ovl_grad, &ovl_param);
        if (sim->sc.train.overlap_grad_reduce != MM_TOVL_AUTO)
            ovl_grad = sim->sc.train.overlap_grad_reduce == MM_TOVL_TRUE;
        double bucket = fmax(fw->bucket_params, fw->bucket_per_dp * dp);
        double gb = mm_framework_grad_bytes(fw, (mm_dtype)sim->sc.train.precision);
        a->fixed += (ovl_grad ? 2.0 : 1.0) * x->bucket_buffers * fmin(bucket, params) * gb;
    }
}

/* Per-layer CUDA graphs' own buffers on one GPU of stage k (train.
 * cuda_graphs: layer): Megatron-Core's CudaGraphManager keeps a runner per
 * layer and micro-batch in flight, each holding the static input and
 * output of its forward graph and of its backward graph
 * (megatron/core/transformer/cuda_graphs.py: fwd_graph_input_surface,
 * fwd_graph_output_surface, static_grad_outputs, static_grad_inputs): four
 * hidden-state tensors of the layer's tokens in 16 bits, a TP shard under
 * sequence parallelism.  A full-iteration graph replays into the
 * allocator's own pool: nothing counted. */
static double graph_bytes(const mm_sim *sim, const mm_mem_config *c, int k)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    if (sim->sc.train.cuda_graphs != MM_GRAPHS_LAYER || sim->sc.train.pass_times[0])
        return 0.0;
    double layers = mm_layout_stage_layers(&L->lay, sim->llm->layers, k);
    double flight = mm_mem_config_in_flight(c, k);
    int cp = L->lay.cp > 0 ? L->lay.cp : 1;
    double tokens = c->micro_batch * c->seq / cp / (c->sp ? L->lay.tp : 1);
    return layers * flight * 4.0 * tokens * (double)sim->llm->hidden * 2.0;
}

/* The stage's rank as the memory model counts it with every state on the
 * GPU (mm_sim_llm_stage_rank before ATOM's swapping). */
static int llm_rank_resident(const mm_sim *sim, int k, mm_mem_rank *r)
{
    mm_mem_config c;
    mm_sim_llm_mem_config(sim, &c);
    if (mm_mem_llm_rank(sim->llm, &c, k, r))
        return -1;
    r->transient += graph_bytes(sim, &c, k); /* allocated during the step */
    r->total += graph_bytes(sim, &c, k);
    double outer = mm_sim_outer_state_bytes(sim, r->params); /* diloco's, on the GPU: a model state */
    r->optimizer += outer;
    r->total += outer;
    return 0;
}

static bool atom_on(const mm_sim *sim)
{
    return sim->sc.train.outer_sync.present && sim->sc.train.outer_sync.algorithm == MM_OSYNC_ATOM;
}

int mm_sim_swap_room(const mm_sim *sim, mm_mem_rank *full, double *room)
{
    if (llm_rank_resident(sim, 0, full))
        return -1;
    const mm_module_layout *L = &sim->sc.parallel.llm;
    double dyn = full->total - (full->weights + full->grads + full->optimizer);
    mm_mem_alloc a;
    mm_sim_mem_alloc(sim, L->lay.tp, L->lay.cp, L->lay.pp, L->lay.dp, L->lay.ep, 0, full->params, &a);
    double cap = sim->cluster->gpu.hbm_bytes - sim->sc.train.memory_reserve_gib * MM_GIB;
    *room = cap - mm_mem_reserved(&a, 0, dyn);
    return 0;
}

int mm_sim_llm_stage_rank(const mm_sim *sim, int k, mm_mem_rank *r)
{
    if (!atom_on(sim))
        return llm_rank_resident(sim, k, r);
    /* ATOM: the model lives in host memory with its optimizer; the GPU
     * holds two groups' weights and gradients beside the activations
     * (cost/swap.h).  When not even that fits, every state stays counted,
     * so the verdict is OOM. */
    double room;
    mm_swap s;
    if (mm_sim_swap_room(sim, r, &room))
        return -1;
    if (mm_sim_swap(sim, r, room, 0, 0, 0, &s))
        return 0;
    double dyn = r->total - (r->weights + r->grads + r->optimizer);
    double w = s.layer_weight_bytes / (s.layer_weight_bytes + s.layer_grad_bytes);
    r->weights = s.resident_bytes * w;
    r->grads = s.resident_bytes - r->weights;
    r->optimizer = 0;
    r->total = r->weights + r->grads + dyn;
    return 0;
}

static bool llm_memory(const mm_sim *sim, mm_sim_memory *mt)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    mm_mem_config c;
    mm_sim_llm_mem_config(sim, &c);
    double cap = sim->cluster->gpu.hbm_bytes - sc->train.memory_reserve_gib * MM_GIB;
    bool oom = false;
    mt->peak_gib = mt->peak_alloc_gib = 0;
    for (int k = 0; k < L->lay.pp; k++) {
        mm_mem_rank r;
        if (mm_sim_llm_stage_rank(sim, k, &r)) {
            mt->stage_gib[k] = mt->states_gib[k] = mt->stage_alloc_gib[k] = NAN;
            mt->peak_gib = mt->peak_alloc_gib = NAN;
            continue;
        }
        double states = r.weights + r.grads + r.optimizer, dyn = r.total - states;
        mm_mem_alloc a;
        mm_sim_mem_alloc(sim, L->lay.tp, L->lay.cp, L->lay.pp, L->lay.dp, L->lay.ep, c.zero, r.params, &a);
        double reserved = mm_mem_reserved(&a, states, dyn);
        mt->stage_gib[k] = reserved / MM_GIB;
        mt->stage_alloc_gib[k] = (states + dyn) / MM_GIB;
        mt->states_gib[k] = states / MM_GIB;
        mt->peak_gib = fmax(mt->peak_gib, mt->stage_gib[k]);
        mt->peak_alloc_gib = fmax(mt->peak_alloc_gib, mt->stage_alloc_gib[k]);
        if (reserved > cap)
            oom = true;
    }
    return oom;
}

/* An encoder's bytes on one of its GPUs: model states, and activations of
 * the micro-batches it holds at once (its pipeline's depth; a colocated
 * encoder keeps every micro-batch it encoded until the LLM's backward; a
 * disjoint one its queue). */
static double enc_memory(const mm_sim *sim, const mm_enc_spec *es, int i, double *states, double *dyn)
{
    const mm_scenario *sc = &sim->sc;
    const mm_sim_encoder *e = &sim->enc[i];
    int dp = sc->parallel.llm.lay.dp, m = sim->micro_batches, flight;
    switch (es->placement) {
    case MM_ENC_PIPELINE:
        flight = es->pp + sc->parallel.llm.lay.pp;
        break;
    case MM_ENC_COLOCATED:
        flight = (dp * m + es->dp - 1) / es->dp;
        break;
    case MM_ENC_DISJOINT:
        flight = es->buffer + 1;
        break;
    default:
        flight = sc->parallel.llm.lay.pp;
    }
    if (flight > m * dp)
        flight = m * dp;
    mm_mem_rank r;
    double inputs = e->max_inputs > 0 ? e->max_inputs : e->inputs_per_sample;
    if (mm_sim_enc_rank_memory(sim, i, es, inputs * (double)sc->train.micro_batch, flight, &r)) {
        *states = *dyn = NAN;
        return NAN;
    }
    *states = r.weights + r.grads + r.optimizer;
    *dyn = r.activations + r.transient;
    return r.total;
}

int mm_sim_enc_rank_memory(const mm_sim *sim, int i, const mm_enc_spec *es, double inputs, int flight,
                           mm_mem_rank *r)
{
    const mm_scenario *sc = &sim->sc;
    const mm_sim_encoder *e = &sim->enc[i];
    int zero = e->layout.zero >= 0 ? e->layout.zero : sc->train.zero;
    bool sp = es->tp > 1 && (es->placement == MM_ENC_HOMOGENEOUS
                                 ? (sc->train.sequence_parallel || sc->parallel.llm.sp)
                                 : e->layout.sp);
    if (mm_mem_encoder_rank(e->enc, inputs, es->tp, sp, es->dp, zero, mm_sim_mem_recompute_of(sim, &e->layout),
                            flight, e->frozen_tower, r))
        return -1;
    /* the encoder's layers spread over its es->pp stages, each stage's GPU
     * holding its share */
    r->params /= es->pp;
    r->weights /= es->pp;
    r->grads /= es->pp;
    r->optimizer /= es->pp;
    r->activations /= es->pp;
    r->transient /= es->pp;
    r->total /= es->pp;
    return 0;
}

void mm_sim_memory_free(mm_sim_memory *m)
{
    free(m->stage_gib);
    free(m->states_gib);
    free(m->stage_alloc_gib);
    m->stage_gib = m->states_gib = m->stage_alloc_gib = NULL;
    m->n_stages = 0;
}

int mm_sim_stage_memory(const mm_sim *sim, mm_sim_memory *mt, mm_err *err)
{
    memset(mt, 0, sizeof *mt);
    mt->n_stages = sim->sc.parallel.llm.lay.pp;
    mt->stage_gib = calloc((size_t)mt->n_stages, sizeof *mt->stage_gib);
    mt->states_gib = calloc((size_t)mt->n_stages, sizeof *mt->states_gib);
    mt->stage_alloc_gib = calloc((size_t)mt->n_stages, sizeof *mt->stage_alloc_gib);
    if (!mt->stage_gib || !mt->states_gib || !mt->stage_alloc_gib) {
        mm_sim_memory_free(mt);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    bool oom = llm_memory(sim, mt);
    mt->hbm_gib = sim->cluster->gpu.hbm_bytes / MM_GIB;
    double cap = (sim->cluster->gpu.hbm_bytes - sim->sc.train.memory_reserve_gib * MM_GIB) / MM_GIB;
    mt->cap_gib = cap;
    mt->n_modules = 1 + sim->n_enc;
    snprintf(mt->module_name[0], sizeof mt->module_name[0], "llm");
    mt->module_gib[0] = mt->peak_gib;
    for (int i = 0; i < sim->n_enc; i++) {
        mm_enc_spec es = {0};
        mm_sim_enc_layout(sim, i, &es);
        double st = 0, dyn = 0, alloc = enc_memory(sim, &es, i, &st, &dyn);
        int zero = sim->enc[i].layout.zero >= 0 ? sim->enc[i].layout.zero : sim->sc.train.zero;
        snprintf(mt->module_name[1 + i], sizeof mt->module_name[0], "%s", es.name);
        if (es.placement == MM_ENC_HOMOGENEOUS || es.placement == MM_ENC_COLOCATED) {
            /* on the LLM's GPUs: the first stage, or every stage; their
             * runtime and buffers are the LLM's, counted there */
            mm_mem_alloc a = {.fragmentation = sim->fw ? sim->fw->mem.fragmentation : 0.0};
            double gib = mm_mem_reserved(&a, st, dyn) / MM_GIB;
            mt->module_gib[1 + i] = gib;
            for (int k = 0; k < mt->n_stages; k++)
                if (k == 0 || es.placement == MM_ENC_COLOCATED) {
                    mt->stage_gib[k] += gib;
                    mt->stage_alloc_gib[k] += alloc / MM_GIB;
                }
            mt->peak_gib = mt->peak_alloc_gib = 0;
            for (int k = 0; k < mt->n_stages; k++) {
                mt->peak_gib = fmax(mt->peak_gib, mt->stage_gib[k]);
                mt->peak_alloc_gib = fmax(mt->peak_alloc_gib, mt->stage_alloc_gib[k]);
                oom |= mt->stage_gib[k] > cap;
            }
        } else {
            mm_mem_alloc a;
            mm_sim_mem_alloc(sim, es.tp, 1, es.pp, es.dp, 1, zero,
                             (double)mm_encoder_params(sim->enc[i].enc) / es.tp / es.pp, &a);
            double gib = mm_mem_reserved(&a, st, dyn) / MM_GIB;
            mt->module_gib[1 + i] = gib;
            mt->peak_gib = fmax(mt->peak_gib, gib);
            mt->peak_alloc_gib = fmax(mt->peak_alloc_gib, alloc / MM_GIB);
            oom |= gib > cap;
        }
    }
    mt->oom = oom;
    return 0;
}
