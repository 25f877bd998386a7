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
        [MM_SCHED_ZB_2P] = MM_MEM_ZB_2P};
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
    };
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
    double flight = mm_mem_in_flight(c->schedule, k, L->lay.pp, L->lay.vpp, c->micro_batches);
    int cp = L->lay.cp > 0 ? L->lay.cp : 1;
    double tokens = c->micro_batch * c->seq / cp / (c->sp ? L->lay.tp : 1);
    return layers * flight * 4.0 * tokens * (double)sim->llm->hidden * 2.0;
}

int mm_sim_llm_stage_rank(const mm_sim *sim, int k, mm_mem_rank *r)
{
    mm_mem_config c;
    mm_sim_llm_mem_config(sim, &c);
    if (mm_mem_llm_rank(sim->llm, &c, k, r))
        return -1;
    r->total += graph_bytes(sim, &c, k);
    return 0;
}

static bool llm_memory(const mm_sim *sim, mm_sim_memory *mt)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    double cap = sim->cluster->gpu.hbm_bytes - sc->train.memory_reserve_gib * MM_GIB;
    bool oom = false;
    mt->peak_gib = 0;
    for (int k = 0; k < L->lay.pp; k++) {
        mm_mem_rank r;
        if (mm_sim_llm_stage_rank(sim, k, &r)) {
            mt->stage_gib[k] = mt->states_gib[k] = NAN;
            mt->peak_gib = NAN;
            continue;
        }
        mt->stage_gib[k] = r.total / MM_GIB;
        mt->states_gib[k] = (r.weights + r.grads + r.optimizer) / MM_GIB;
        if (mt->stage_gib[k] > mt->peak_gib)
            mt->peak_gib = mt->stage_gib[k];
        if (r.total > cap)
            oom = true;
    }
    return oom;
}

/* An encoder's bytes on one of its GPUs: model states, and activations of
 * the micro-batches it holds at once (its pipeline's depth; a colocated
 * encoder keeps every micro-batch it encoded until the LLM's backward; a
 * disjoint one its queue). */
static double enc_memory(const mm_sim *sim, const mm_enc_spec *es, int i)
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
    double inputs = e->max_inputs > 0 ? e->max_inputs : e->inputs_per_sample;
    mm_mem_rank r;
    if (mm_sim_enc_rank_memory(sim, i, es, inputs * (double)sc->train.micro_batch, flight, &r))
        return NAN;
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
    m->stage_gib = m->states_gib = NULL;
    m->n_stages = 0;
}

int mm_sim_stage_memory(const mm_sim *sim, mm_sim_memory *mt, mm_err *err)
{
    memset(mt, 0, sizeof *mt);
    mt->n_stages = sim->sc.parallel.llm.lay.pp;
    mt->stage_gib = calloc((size_t)mt->n_stages, sizeof *mt->stage_gib);
    mt->states_gib = calloc((size_t)mt->n_stages, sizeof *mt->states_gib);
    if (!mt->stage_gib || !mt->states_gib) {
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
        double gib = enc_memory(sim, &es, i) / MM_GIB;
        snprintf(mt->module_name[1 + i], sizeof mt->module_name[0], "%s", es.name);
        mt->module_gib[1 + i] = gib;
        if (es.placement == MM_ENC_HOMOGENEOUS || es.placement == MM_ENC_COLOCATED) {
            /* on the LLM's GPUs: the first stage, or every stage */
            for (int k = 0; k < mt->n_stages; k++)
                if (k == 0 || es.placement == MM_ENC_COLOCATED)
                    mt->stage_gib[k] += gib;
            mt->peak_gib = 0;
            for (int k = 0; k < mt->n_stages; k++) {
                mt->peak_gib = fmax(mt->peak_gib, mt->stage_gib[k]);
                oom |= mt->stage_gib[k] > cap;
            }
        } else {
            mt->peak_gib = fmax(mt->peak_gib, gib);
            oom |= gib > cap;
        }
    }
    mt->oom = oom;
    return 0;
}
