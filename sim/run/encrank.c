/* encrank.c - a colocated encoder's work per encoder DP rank, from the
 * samples each rank encodes (MegatronMIMO's and FlagScale's colocated
 * MIMO: the encoder is data-parallel over the LLM's GPUs and each rank
 * encodes its share of the batch), the bytes its embeddings carry to each
 * LLM replica, and the encoder_load_imbalance metric of any placement.
 * Not for: which samples a rank gets (workload/batch.c, enc_rank_bins) or
 * emitting the ops (parallel/build_enc.c). */
#include "run/sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* GPU-ordered encoder ranks sorted by (LLM replica of their first GPU,
 * rank): perm[q] = the GPU rank that plan rank q's samples run on. */
static int enc_rank_perm(const mm_build_spec *spec, int i, int n, int *perm)
{
    int *home = malloc((size_t)n * sizeof *home);
    if (!home || mm_build_enc_homes(spec, i, home, n) != n) {
        free(home);
        return -1;
    }
    int q = 0;
    for (int d = 0; d < spec->dp; d++)
        for (int k = 0; k < n; k++)
            if (home[k] == d)
                perm[q++] = k;
    free(home);
    return q == n ? 0 : -1;
}

int mm_sim_enc_ranks(const mm_sim *sim, mm_build_spec *spec, int i, const mm_batch_plan *plan,
                     const mm_sample *samples, wl_iter *w, mm_err *err)
{
    const mm_sim_encoder *e = &sim->enc[i];
    int K = plan->n_enc_ranks, dp = spec->dp;
    free(w->enc_ranks);
    free(w->pair_bytes);
    free(w->enc_rank_inputs);
    w->enc_rank_inputs = calloc((size_t)K + 1, sizeof *w->enc_rank_inputs);
    w->enc_ranks = calloc((size_t)K + 1, sizeof *w->enc_ranks);
    w->pair_bytes = calloc((size_t)K * dp + 1, sizeof *w->pair_bytes);
    int *perm = malloc((size_t)K * sizeof *perm + 1), *llm_of = malloc((size_t)plan->n_samples * sizeof *llm_of + 1);
    int rc = w->enc_ranks && w->pair_bytes && perm && llm_of && w->enc_rank_inputs ? 0 : -1;
    if (rc == 0 && enc_rank_perm(spec, i, K, perm))
        rc = -1;
    if (rc) {
        free(perm), free(llm_of);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory or a bad colocated layout");
    }
    for (int g = 0; g < plan->n_bins; g++)
        for (int t = 0; t < plan->bins[g].n; t++)
            llm_of[plan->bins[g].idx[t]] = plan->bins[g].rank;
    /* embeddings per visual token as the encoder hands them over */
    bool llm_side = sim->sc.parallel.projector_on_llm, audio = !strcmp(e->name, "audio");
    double per_tok = 2.0 * (double)(llm_side ? e->proj->in : sim->llm.hidden);
    for (int q = 0; q < K && rc == 0; q++) {
        const mm_bin *bn = &plan->enc_rank_bins[q];
        int k = perm[q];
        mm_enc_mb_cost c, projc;
        double params, inputs = audio ? (double)bn->audio_clips : (double)(bn->tiles + bn->frames);
        rc = mm_sim_enc_mb_cost_split(sim, e, inputs, spec->enc[i].tp, &c, &params, &projc);
        w->enc_rank_inputs[k] = inputs;
        w->enc_ranks[k] = (mm_enc_rank_cost){.fwd_s = c.fwd_s, .bwd_s = c.bwd_s, .fwd_flops = c.fwd_flops,
                                             .bwd_flops = c.bwd_flops, .recompute_flops = c.recompute_flops};
        for (int t = 0; t < bn->n; t++) {
            const mm_sample *s = &samples[bn->idx[t]];
            double aud = (double)mm_sample_audio_tokens(s, &sim->tm);
            double tok = audio ? aud : (double)mm_sample_mm_tokens(s, &sim->tm) - aud;
            w->pair_bytes[(size_t)k * dp + llm_of[bn->idx[t]]] += tok * per_tok;
        }
    }
    free(perm), free(llm_of);
    if (rc)
        return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive the encoder's op costs");
    spec->enc[i].n_ranks = K;
    spec->enc[i].ranks = w->enc_ranks;
    spec->enc[i].pair_bytes = w->pair_bytes;
    return 0;
}

/* what = 0: max / mean; 1: max - mean */
static double max_vs_mean(const double *v, int n, int what)
{
    double mx = 0, sum = 0;
    for (int k = 0; k < n; k++) {
        mx = fmax(mx, v[k]);
        sum += v[k];
    }
    if (what)
        return mx - sum / n;
    return sum > 0 ? mx / (sum / n) : 1.0;
}

static double enc_rank_stat(const mm_build_spec *spec, int what)
{
    if (spec->n_enc < 1)
        return what ? 0.0 : 1.0;
    const mm_enc_spec *e = &spec->enc[0];
    int n = e->placement == MM_ENC_COLOCATED && e->ranks ? e->n_ranks
            : e->placement == MM_ENC_HOMOGENEOUS || e->placement == MM_ENC_COLOCATED ? spec->dp
                                                                                      : e->dp;
    double *t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
    if (!t || n < 1) {
        free(t);
        return NAN;
    }
    if (e->placement == MM_ENC_COLOCATED && e->ranks) {
        for (int k = 0; k < n; k++)
            t[k] = e->ranks[k].fwd_s + e->ranks[k].bwd_s;
    } else { /* micro-batch (d, j) runs on replica d (homogeneous, even colocated) or (j dp + d) mod dp_enc */
        bool by_llm = e->placement == MM_ENC_HOMOGENEOUS || e->placement == MM_ENC_COLOCATED;
        for (int d = 0; d < spec->dp; d++)
            for (int j = 0; j < spec->m; j++) {
                const mm_enc_mb_cost *c = &e->mb[(size_t)d * spec->m + j];
                t[by_llm ? d : (j * spec->dp + d) % n] += c->fwd_s + c->bwd_s;
            }
    }
    double r = max_vs_mean(t, n, what);
    free(t);
    return r;
}

double mm_sim_enc_imbalance(const mm_build_spec *spec) { return enc_rank_stat(spec, 0); }

double mm_sim_enc_excess_s(const mm_build_spec *spec) { return enc_rank_stat(spec, 1); }
