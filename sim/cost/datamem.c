/* datamem.c - memory that follows the data: for a
 * mixture or trace workload, each iteration's per-GPU peak from the
 * micro-batches actually drawn.  Per LLM stage and DP replica the
 * schedule's steps are walked: a forward adds its micro-batch's
 * activations (from its own tokens at the padded length and, on the first
 * stage of a homogeneous layout, its tiles and frames through the
 * encoder), its backward frees them; the peak of that running sum plus the
 * model states and the largest micro-batch's transients is the stage's
 * memory.  A colocated encoder holds its own samples' activations from
 * its forward until its backward at the end of the iteration, so they
 * stand on top for the whole schedule (each colocated encoder's rank its
 * own samples', summed per GPU).  Encoders on their own GPUs hold their pipeline's
 * depth of micro-batches, the largest of the iteration.
 * Known limits: ZB-H1's deferred W passes keep some tensors past B,
 * counted as freed at B (ZB-H1's peak equals 1F1B's, Qi et al. 2024);
 * ZB-2p's activations are counted half freed at B and half at W, as its
 * 2p limit counts them.
 * What a GPU needs is reserved memory (memory.h mm_mem_reserved, with the
 * allocator and runtime of memcost.c's mm_sim_mem_alloc); the allocated
 * peak is reported beside it.
 * Not for: the early check of a layout (costs.c, a bound from the
 * largest sample), or timing. */
#include "cost/cost_internal.h"
#include "cost/outersync.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/schedule.h"

typedef struct enc_mem {
    double states;    /* weights, gradients, optimizer of one of its GPUs */
    double per_input; /* activations kept per tile/frame (0 when frozen) */
    double transient; /* per tile/frame being encoded */
} enc_mem;

static int enc_mem_of(const mm_sim *sim, const mm_build_spec *spec, int i, enc_mem *em)
{
    const mm_scenario *sc = &sim->sc;
    const mm_sim_encoder *e = &sim->enc[i];
    const mm_enc_spec *es = &spec->enc[i];
    int zero = e->layout.zero >= 0 ? e->layout.zero : sc->train.zero, rc = mm_sim_mem_recompute_of(sim, &e->layout);
    bool sp = es->tp > 1 && (es->placement == MM_ENC_HOMOGENEOUS ? (sc->train.sequence_parallel || sc->parallel.llm.sp)
                                                                 : e->layout.sp);
    int edp = es->placement == MM_ENC_HOMOGENEOUS ? spec->lay.dp : es->dp;
    mm_mem_rank r0, r1;
    if (mm_mem_encoder_rank(e->enc, 0, es->tp, sp, edp, zero, rc, 1, e->frozen_tower, &r0) ||
        mm_mem_encoder_rank(e->enc, 1, es->tp, sp, edp, zero, rc, 1, e->frozen_tower, &r1))
        return -1;
    int epp = es->placement == MM_ENC_PIPELINE || es->placement == MM_ENC_DISJOINT ? es->pp : 1;
    em->states = (r0.weights + r0.grads + r0.optimizer) / epp;
    em->per_input = r1.activations / epp;
    em->transient = r1.transient;
    return 0;
}

/* One iteration's memory walk: the LLM's per virtual stage configuration
 * and each encoder's bytes. */
typedef struct dm {
    const mm_sim *sim;
    const mm_build_spec *spec;
    const wl_iter *w;
    mm_mem_config vc;
    enc_mem em[MM_MAX_ENCODERS];
    bool homog, coloc;
} dm;

/* Activations of micro-batch (d, j) (idx = d m + j) on virtual stage vs:
 * the LLM's, and on a homogeneous first stage every encoder's. */
static double mb_act(const dm *x, int vs, size_t idx)
{
    const wl_iter *w = x->w;
    double a = mm_mem_llm_mb_activations(x->sim->llm, &x->vc, vs, w->mb_T[idx], w->mb_S[idx]);
    size_t per = (size_t)x->spec->lay.dp * w->m;
    for (int i = 0; x->homog && vs == 0 && i < x->sim->n_enc; i++)
        a += x->em[i].per_input * w->mb_inputs[i * per + idx];
    return a;
}

/* One stage's peak on replica d: returns the bytes, *at the micro-batch
 * whose forward made it. */
static double stage_peak(const dm *x, int s, int d, const mm_sched_step *steps, int n, int *at)
{
    const mm_build_spec *spec = x->spec;
    double cur = 0, peak = 0;
    *at = -1;
    for (int k = 0; k < n; k++) {
        /* ZB-2p and ZB-V free half at B and half at W, as their memory
         * limits count (schedule.h); the others all at B */
        bool zb2p = spec->schedule == MM_SCHEDULE_ZB_2P || spec->schedule == MM_SCHEDULE_ZB_V;
        if (steps[k].pass == MM_PASS_W && !zb2p)
            continue;
        int vs = mm_schedule_vstage(spec->schedule, spec->lay.pp, s, steps[k].chunk);
        size_t idx = (size_t)d * x->w->m + steps[k].mb;
        double a = mb_act(x, vs, idx);
        cur += steps[k].pass == MM_PASS_F ? a : zb2p ? -a / 2 : -a;
        if (cur > peak) {
            peak = cur;
            *at = steps[k].mb;
        }
    }
    return peak;
}

/* The largest transient of stage s on replica d (memory.h
 * mm_mem_stage_transient, as the early check takes it) at the replica's
 * longest micro-batch. */
static double stage_transient(const mm_sim *sim, const mm_mem_config *c, const wl_iter *w, int s, int d)
{
    double T = 0;
    for (int j = 0; j < w->m; j++)
        T = fmax(T, w->mb_T[(size_t)d * w->m + j]);
    return mm_mem_stage_transient(sim->llm, c, s, T);
}

/* Colocated encoders' activations on simulated rank (d, s): on each of
 * the rank's GPUs every encoder's rank there holds its own samples'
 * activations (they add up: all encoders' forwards run before the LLM's,
 * their backwards after it), and the most loaded GPU counts; an encoder
 * without per-rank inputs gets an even share of the iteration's.  Held
 * for the whole iteration. */
static double coloc_act(const dm *x, int d, int s)
{
    const mm_build_spec *spec = x->spec;
    const wl_iter *w = x->w;
    double mx = 0, even = 0;
    int off = mm_build_gpu(spec, 0, 0, 0, 0), G = mm_build_gpus(spec);
    size_t per = (size_t)spec->lay.dp * w->m;
    for (int i = 0; i < x->sim->n_enc; i++) {
        if (w->enc_rank_inputs[i])
            continue;
        double sum = 0;
        for (size_t k = 0; k < per; k++)
            sum += w->mb_inputs[i * per + k];
        double in = sum / (G / spec->enc[i].tp);
        even += in * x->em[i].per_input + (in > 0 ? x->em[i].transient : 0);
    }
    for (int c = 0; c < (spec->lay.cp > 0 ? spec->lay.cp : 1); c++)
        for (int t = 0; t < spec->lay.tp; t++) {
            double a = 0;
            for (int i = 0; i < x->sim->n_enc; i++) {
                const mm_enc_spec *es = &spec->enc[i];
                int k = (mm_build_gpu(spec, t, c, d, s) - off) / es->tp;
                double in = w->enc_rank_inputs[i] && k < es->n_ranks ? w->enc_rank_inputs[i][k] : 0;
                a += w->enc_rank_inputs[i] ? in * x->em[i].per_input + (in > 0 ? x->em[i].transient : 0) : 0;
            }
            mx = fmax(mx, a);
        }
    return mx + even;
}

/* An encoder on its own GPUs: its pipeline's depth (or its queue) of the
 * iteration's largest micro-batches.  Bytes on one of its GPUs. */
static double own_gpu_need(const dm *x, int i)
{
    const mm_enc_spec *es = &x->spec->enc[i];
    size_t per = (size_t)x->spec->lay.dp * x->w->m;
    double mx = 0;
    for (size_t k = 0; k < per; k++)
        mx = fmax(mx, x->w->mb_inputs[i * per + k]);
    int flight = es->placement == MM_ENC_PIPELINE ? es->pp + x->spec->lay.pp : es->buffer + 1;
    return x->em[i].states + flight * mx * x->em[i].per_input + mx * x->em[i].transient;
}

static int data_memory(const mm_sim *sim, const mm_build_spec *spec, const wl_iter *w, int *per_vstage,
                       mm_data_mem *out)
{
    const mm_scenario *sc = &sim->sc;
    int P = spec->lay.pp;
    double cap = sim->cluster->gpu.hbm_bytes - sc->train.memory_reserve_gib * MM_GIB;
    mm_mem_config c;
    mm_sim_llm_mem_config(sim, &c);
    dm x = {.sim = sim, .spec = spec, .w = w, .vc = c};
    /* per virtual stage: pp * vpp stages of one chunk each, with each
     * chunk's own layers (uneven under Megatron's split options) */
    mm_layout_flatten(&c.lay, sim->llm->layers, per_vstage, &x.vc.lay);
    double enc_states = 0;
    for (int i = 0; i < sim->n_enc; i++) {
        if (enc_mem_of(sim, spec, i, &x.em[i]))
            return -1;
        enc_states += x.em[i].states;
    }
    x.homog = sim->n_enc && spec->enc[0].placement == MM_ENC_HOMOGENEOUS;
    x.coloc = sim->n_enc && spec->enc[0].placement == MM_ENC_COLOCATED;
    mm_sched_step *steps = malloc((size_t)mm_schedule_len(spec->schedule, spec->m, spec->lay.vpp) * sizeof *steps);
    if (!steps)
        return -1;
    int oom = 0;
    out->peak_gib = out->peak_alloc_gib = 0;
    for (int s = 0; s < P; s++) {
        mm_mem_rank r;
        int n = mm_build_schedule_steps(spec, s, steps);
        if (n < 0 || mm_mem_llm_rank(sim->llm, &c, s, &r)) {
            free(steps);
            return -1;
        }
        r.optimizer += mm_sim_outer_state_bytes(sim, r.params); /* as mm_sim_llm_stage_rank */
        double states = r.weights + r.grads + r.optimizer, worst = 0, worst_alloc = 0;
        if ((x.homog && s == 0) || x.coloc)
            states += enc_states;
        mm_mem_alloc a;
        mm_sim_mem_alloc(sim, c.lay.tp, c.lay.cp, c.lay.pp, c.lay.dp, c.lay.ep, c.zero, r.params, &a);
        for (int d = 0; d < spec->lay.dp; d++) {
            int at;
            double dyn = stage_peak(&x, s, d, steps, n, &at) + stage_transient(sim, &c, w, s, d) +
                         (x.coloc ? coloc_act(&x, d, s) : 0);
            double need = mm_mem_reserved(&a, states, dyn);
            worst = fmax(worst, need);
            worst_alloc = fmax(worst_alloc, states + dyn);
            if (need > cap && !oom) {
                oom = 1;
                out->micro_batch = at, out->stage = s, out->replica = d;
                out->need_gib = need / MM_GIB, out->cap_gib = cap / MM_GIB;
            }
        }
        out->stage_gib[s] = worst / MM_GIB;
        out->peak_gib = fmax(out->peak_gib, worst / MM_GIB);
        out->peak_alloc_gib = fmax(out->peak_alloc_gib, worst_alloc / MM_GIB);
    }
    free(steps);
    for (int i = 0; i < sim->n_enc && !x.homog && !x.coloc; i++) {
        const mm_enc_spec *es = &spec->enc[i];
        int zero = sim->enc[i].layout.zero >= 0 ? sim->enc[i].layout.zero : sc->train.zero;
        mm_mem_alloc a;
        mm_sim_mem_alloc(sim, es->tp, 1, es->pp, es->dp, 1, zero,
                         (double)mm_encoder_params(sim->enc[i].enc) / es->tp / es->pp, &a);
        double alloc = own_gpu_need(&x, i), need = mm_mem_reserved(&a, x.em[i].states, alloc - x.em[i].states);
        out->peak_alloc_gib = fmax(out->peak_alloc_gib, alloc / MM_GIB);
        out->peak_gib = fmax(out->peak_gib, need / MM_GIB);
        if (need > cap && !oom) {
            oom = 1;
            out->micro_batch = out->stage = out->replica = -1;
            out->need_gib = need / MM_GIB, out->cap_gib = cap / MM_GIB;
        }
    }
    out->oom = oom;
    return oom;
}

int mm_sim_data_memory(const mm_sim *sim, const mm_build_spec *spec, const wl_iter *w, mm_data_mem *out)
{
    int *per_vstage = malloc((size_t)spec->lay.pp * spec->lay.vpp * sizeof *per_vstage);
    if (!per_vstage)
        return -1;
    int rc = data_memory(sim, spec, w, per_vstage, out);
    free(per_vstage);
    return rc;
}
