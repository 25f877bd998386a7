/* batchcost.c - a mixture or trace workload's costs, per iteration: draw
 * the global batch, form micro-batches with the scenario's batching policy
 * (per-sample costs fitted to the model's own op costs) and turn every
 * micro-batch into LLM and encoder costs.
 * Not for: the costs themselves (costs.c) or the batching policies
 * (workload/batch.c). */
#include "cost/cost_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- workload files: costs that differ per micro-batch ---- */

typedef struct cost_ctx {
    double per_tile;          /* vision encoder: seconds per tile/frame, F + B */
    double per_clip;          /* audio encoder: seconds per 30 s clip, F + B */
    bool vision, audio;       /* which encoders run (a sample's encoder cost is
                                 the sum of theirs) */
    double llm_a, llm_b;      /* seconds per token and per token^2 (attention), F + B */
    bool shared;              /* the encoders run on the LLM's GPUs */
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
    *enc = c->vision ? c->per_tile * (double)(smp->tiles + smp->frames) : 0;
    if (c->audio)
        *enc += c->per_clip * (double)mm_sample_audio_clips(smp, tm);
    *llm = c->llm_a * t + c->llm_b * t * t;
    if (c->shared) {
        *llm += *enc;
        *enc = 0;
    }
}

static const mm_batch_policy bpolicy[] = {
    [MM_BATCH_SEQUENTIAL] = MM_BP_SEQUENTIAL, [MM_BATCH_GROUPED] = MM_BP_GROUPED, [MM_BATCH_PACKED] = MM_BP_PACKED,
    [MM_BATCH_BALANCED] = MM_BP_BALANCED, [MM_BATCH_POST_BALANCE] = MM_BP_POST_BALANCE};

double mm_sim_load_imbalance(const double *load, int dp)
{
    double max = 0, sum = 0;
    for (int r = 0; r < dp; r++) {
        max = fmax(max, load[r]);
        sum += load[r];
    }
    return sum > 0 ? max / (sum / dp) : 1.0;
}

/* The LLM's costs of every bin at its padded length, the tokens trained,
 * the DP load, and the per micro-batch tokens for memory. */
static int llm_bins(const mm_sim *sim, const mm_stage_cost *st, const mm_batch_plan *plan, wl_iter *w)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    int V = L->lay.pp * L->lay.vpp, dp = L->lay.dp, m = w->m, rc = 0;
    for (int r = 0; r < dp && rc == 0; r++) {
        double load = 0;
        for (int k = plan->rank_first[r]; k < plan->rank_first[r + 1] && rc == 0; k++) {
            const mm_bin *bn = &plan->bins[k];
            int j = k - plan->rank_first[r];
            size_t at = (size_t)r * m + j;
            /* the LLM runs at the padded length; it trains the real tokens */
            rc = mm_sim_llm_bin_cost(sim, st, V, (double)bn->padded_tokens, bn->padded_sum_sq, bn->n,
                                     (double)bn->images, &w->mb[at],
                                     (size_t)dp * m);
            w->tokens += (double)bn->llm_tokens;
            w->padded_tokens += (double)bn->padded_tokens;
            if (rc == 0 && bn->padded_tokens > bn->llm_tokens)
                w->pad_flops += mm_sim_llm_mb_flops(sim, st, V, (double)bn->padded_tokens, bn->padded_sum_sq, bn->n) -
                                mm_sim_llm_mb_flops(sim, st, V, (double)bn->llm_tokens, bn->sum_sq_tokens, bn->n);
            w->mb_T[at] = (double)bn->padded_tokens;
            w->mb_S[at] = bn->padded_sum_sq;
            w->mb_n[at] = bn->n;
            for (int v = 0; v < V; v++)
                load += w->mb[at + (size_t)v * dp * m].fwd_s + w->mb[at + (size_t)v * dp * m].bwd_s;
        }
        w->load_rank[r] = load;
    }
    return rc;
}

/* The encoders' costs per micro-batch: the LLM's bins, or post-balance's
 * own encoder phase; a projector run by the LLM joins its first stage. */
static int enc_bins(const mm_sim *sim, mm_build_spec *spec, const mm_batch_plan *plan, wl_iter *w, mm_err *err)
{
    int dp = sim->sc.parallel.llm.lay.dp, m = w->m, rc = 0;
    /* the encoder: the LLM's bins, or post-balance's own encoder phase */
    for (int i = 0; i < sim->n_enc && rc == 0; i++) {
        const mm_bin *eb = plan->enc_bins ? plan->enc_bins : plan->bins;
        const int *ef = plan->enc_bins ? plan->enc_rank_first : plan->rank_first;
        bool audio = !strcmp(sim->enc[i].name, "audio");
        mm_enc_mb_cost *arr = w->enc + (size_t)i * dp * m;
        for (int r = 0; r < dp && rc == 0; r++)
            for (int k = ef[r]; k < ef[r + 1] && k - ef[r] < m && rc == 0; k++) {
                double params, inputs = audio ? (double)eb[k].audio_clips : (double)(eb[k].tiles + eb[k].frames);
                mm_enc_mb_cost projc;
                rc = mm_sim_enc_mb_cost_split(sim, &sim->enc[i], inputs, spec->enc[i].tp, &arr[(size_t)r * m + (k - ef[r])],
                                       &params, &projc);
                w->mb_inputs[(size_t)i * dp * m + (size_t)r * m + (k - ef[r])] = inputs;
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
    return rc;
}

/* Post-balance: each phase's all-to-all on its own GPUs (the raw inputs
 * forward only; the embeddings forward and their gradients backward,
 * unless a colocated encoder's pairwise reshard carries them already). */
static void rebalance_bytes(const mm_sim *sim, mm_build_spec *spec, const mm_batch_plan *plan, bool coloc)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    spec->pre_a2a_bytes = spec->post_a2a_bytes = spec->enc_a2a_bytes = 0;
    if (plan->enc_bins && sim->n_enc) {
        int enc_g = coloc ? mm_build_gpus(spec) : sim->n_enc ? spec->enc[0].tp * spec->enc[0].pp * spec->enc[0].dp : 0;
        if (spec->enc[0].placement == MM_ENC_HOMOGENEOUS)
            enc_g = mm_build_gpus(spec);
        spec->enc_a2a_bytes = enc_g > 0 ? plan->a2a_enc_total / enc_g : 0;
        if (!coloc) {
            spec->pre_a2a_bytes = plan->a2a_llm_total / mm_layout_gpus(&L->lay);
            spec->post_a2a_bytes = spec->pre_a2a_bytes;
        }
    }
}

/* Every colocated encoder's ranks encode their own samples.  The plan's
 * enc_rank_bins are for the first encoder's rank count (LLM GPUs / its
 * tp); an encoder of another tp gets a plan formed again with its own
 * count (the same samples, policy and costs, so the same LLM bins: only
 * its enc_rank_bins are taken). */
static int coloc_ranks(const mm_sim *sim, mm_build_spec *spec, const mm_batch_opts *o, const mm_batch_plan *plan,
                       wl_iter *w, mm_err *err)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    int G = mm_layout_gpus(&L->lay), rc = 0;
    for (int i = 0; i < sim->n_enc && rc == 0; i++) {
        int K = G / spec->enc[i].tp;
        if (K == plan->n_enc_ranks) {
            rc = mm_sim_enc_ranks(sim, spec, i, plan, w->samples, w, err);
            continue;
        }
        mm_batch_opts oi = *o;
        oi.enc_ranks = K;
        mm_batch_plan own;
        if ((rc = mm_batch_form(w->samples, plan->n_samples, &oi, &own, err)))
            break;
        rc = mm_sim_enc_ranks(sim, spec, i, &own, w->samples, w, err);
        mm_batch_plan_free(&own);
    }
    return rc;
}

/* The per-sample costs for the balancing policies (*ccp): fitted to the
 * model's own op costs at two lengths (linear + attention's quadratic
 * term), and each encoder's cost of a tile or a clip; a part of
 * mm_sim_iteration_costs. */
static int fit_sample_costs(const mm_sim *sim, const mm_build_spec *spec, const mm_stage_cost *st, int V,
                            cost_ctx *ccp, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    int rc;
    /* post-balance runs the encoder phase and the LLM phase one after the
     * other and balances each on its own cost, shared GPUs or not */
    *ccp = (cost_ctx){.shared = (sc->parallel.placement == MM_PLACE_COLOCATED ||
                                 sc->parallel.placement == MM_PLACE_HOMOGENEOUS) &&
                                sc->batching != MM_BATCH_POST_BALANCE};
    mm_mb_cost *probe = calloc((size_t)V, sizeof *probe);
    double L1 = 1024, L2 = 2048, t1 = 0, t2 = 0;
    rc = probe ? mm_sim_llm_bin_cost(sim, st, V, L1, L1 * L1, 1, -1, probe, 1) : -1;
    for (int v = 0; v < V && rc == 0; v++)
        t1 += probe[v].fwd_s + probe[v].bwd_s;
    if (rc == 0)
        rc = mm_sim_llm_bin_cost(sim, st, V, L2, L2 * L2, 1, -1, probe, 1);
    for (int v = 0; v < V && rc == 0; v++)
        t2 += probe[v].fwd_s + probe[v].bwd_s;
    free(probe);
    if (rc)
        return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive op costs for this model");
    ccp->llm_b = fmax(0, (t2 / L2 - t1 / L1) / (L2 - L1));
    ccp->llm_a = fmax(0, t1 / L1 - ccp->llm_b * L1);
    for (int i = 0; i < sim->n_enc; i++) { /* a tile, a clip */
        mm_enc_mb_cost one;
        double params;
        bool audio = !strcmp(sim->enc[i].name, "audio");
        *(audio ? &ccp->audio : &ccp->vision) = true;
        if (mm_sim_enc_mb_cost(sim, &sim->enc[i], 1, spec->enc[i].tp, &one, &params) == 0)
            *(audio ? &ccp->per_clip : &ccp->per_tile) = one.fwd_s + one.bwd_s;
    }
    return 0;
}

/* Draws iteration `it`'s global batch, forms its micro-batches with the
 * scenario's policy and turns every micro-batch into costs.  Sets spec->m
 * (packing may give ranks different counts: the others get empty ones). */
int mm_sim_iteration_costs(const mm_sim *sim, mm_build_spec *spec, const mm_stage_cost *st, int it, wl_iter *w,
                           mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    int B = (int)sc->train.global_batch, V = L->lay.pp * L->lay.vpp, dp = L->lay.dp;
    free(w->samples);
    w->samples = malloc((size_t)B * sizeof *w->samples);
    if (!w->samples)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = mm_workload_draw(sim->wl, sc->seed, it, B, w->samples, err);
    if (rc)
        return rc;
    cost_ctx cc;
    if ((rc = fit_sample_costs(sim, spec, st, V, &cc, err)))
        return rc;
    mm_batch_opts o = {.policy = bpolicy[sc->batching], .dp = dp, .micro_batches = sim->micro_batches,
                       .seq_len = sc->train.seq_len, .tokens = sim->tm, .cost = sample_cost, .cost_ctx = &cc,
                       .enc_bytes_per_input = 3.0 * (double)(sim->model->tile * sim->model->tile),
                       .bytes_per_token = 2.0 * (double)sim->llm->hidden, .padding = sim->padding,
                       .pad_to = mm_sim_pad_to(sim)};
    bool coloc = sim->n_enc && sc->parallel.placement == MM_PLACE_COLOCATED;
    if (coloc) /* the colocated encoder's own DP ranks */
        o.enc_ranks = mm_layout_gpus(&L->lay) / spec->enc[0].tp;
    mm_batch_plan plan;
    if ((rc = mm_batch_form(w->samples, B, &o, &plan, err)))
        return rc;
    int m = 0;
    for (int r = 0; r < dp; r++)
        m = plan.rank_first[r + 1] - plan.rank_first[r] > m ? plan.rank_first[r + 1] - plan.rank_first[r] : m;
    if (spec->schedule == MM_SCHEDULE_INTERLEAVED && m % L->lay.pp)
        m += L->lay.pp - m % L->lay.pp; /* interleaving needs a multiple of pp: pad with empty ones */
    spec->m = m;
    free(w->mb);
    free(w->enc);
    w->mb = calloc((size_t)V * dp * m, sizeof *w->mb);
    w->enc = calloc((size_t)(sim->n_enc ? sim->n_enc : 1) * dp * m + 1, sizeof *w->enc);
    if (!w->mb || !w->enc) {
        mm_batch_plan_free(&plan);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    w->tokens = w->padded_tokens = w->pad_flops = 0;
    w->m = m;
    free(w->mb_T), free(w->mb_S), free(w->mb_n), free(w->mb_inputs), free(w->load_rank);
    w->load_rank = calloc((size_t)dp, sizeof *w->load_rank);
    w->mb_T = calloc((size_t)dp * m + 1, sizeof *w->mb_T);
    w->mb_S = calloc((size_t)dp * m + 1, sizeof *w->mb_S);
    w->mb_n = calloc((size_t)dp * m + 1, sizeof *w->mb_n);
    w->mb_inputs = calloc((size_t)(sim->n_enc ? sim->n_enc : 1) * dp * m + 1, sizeof *w->mb_inputs);
    if (!w->mb_T || !w->mb_S || !w->mb_n || !w->mb_inputs || !w->load_rank) {
        mm_batch_plan_free(&plan);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    if ((rc = llm_bins(sim, st, &plan, w)))
        rc = mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive the LLM's op costs");
    if (rc == 0)
        rc = enc_bins(sim, spec, &plan, w, err);
    if (rc == 0 && coloc)
        rc = coloc_ranks(sim, spec, &o, &plan, w, err);
    rebalance_bytes(sim, spec, &plan, coloc);
    spec->mb_costs = w->mb;
    mm_batch_plan_free(&plan);
    return rc;
}

void mm_sim_wl_iter_free(wl_iter *w)
{
    free(w->samples);
    free(w->mb);
    free(w->enc);
    for (int i = 0; i < MM_MAX_ENCODERS; i++) {
        free(w->enc_ranks[i]);
        free(w->pair_bytes[i]);
        free(w->enc_rank_inputs[i]);
    }
    free(w->mb_T);
    free(w->mb_S);
    free(w->mb_n);
    free(w->mb_inputs);
    free(w->load_rank);
    memset(w, 0, sizeof *w);
}
