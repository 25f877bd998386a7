/* encrank.c - every colocated encoder's work per encoder DP rank, from
 * the samples each rank encodes (MegatronMIMO's and FlagScale's colocated
 * MIMO: an encoder is data-parallel over the LLM's GPUs and each rank
 * encodes its share of the batch; a second encoder, e.g. audio beside
 * vision, has ranks of its own tp), the bytes its embeddings carry to each
 * LLM replica, and the encoder_load_imbalance / encoder_excess_s metrics
 * of any placement over the combined work of the encoders.
 * Not for: which samples a rank gets (workload/batch.c, enc_rank_bins) or
 * emitting the ops (parallel/build_enc.c). */
#include "cost/cost_internal.h"
#include "util/misc.h"

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
    for (int d = 0; d < spec->lay.dp; d++)
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
    int K = plan->n_enc_ranks, dp = spec->lay.dp;
    free(w->enc_ranks[i]);
    free(w->pair_bytes[i]);
    free(w->enc_rank_inputs[i]);
    double *inputs_of = w->enc_rank_inputs[i] = calloc((size_t)K + 1, sizeof *w->enc_rank_inputs[i]);
    mm_enc_rank_cost *ranks = w->enc_ranks[i] = calloc((size_t)K + 1, sizeof *w->enc_ranks[i]);
    double *pair = w->pair_bytes[i] = calloc((size_t)K * dp + 1, sizeof *w->pair_bytes[i]);
    int *perm = malloc((size_t)K * sizeof *perm + 1), *llm_of = malloc((size_t)plan->n_samples * sizeof *llm_of + 1);
    int rc = ranks && pair && perm && llm_of && inputs_of ? 0 : -1;
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
    double per_tok = 2.0 * (llm_side ? mm_projector_in_per_token(e->proj) : (double)sim->llm->hidden);
    for (int q = 0; q < K && rc == 0; q++) {
        const mm_bin *bn = &plan->enc_rank_bins[q];
        int k = perm[q];
        mm_enc_mb_cost c, projc;
        double params, inputs = audio ? (double)bn->audio_clips : (double)(bn->tiles + bn->frames);
        rc = mm_sim_enc_mb_cost_split(sim, e, inputs, spec->enc[i].tp, &c, &params, &projc);
        inputs_of[k] = inputs;
        ranks[k] = (mm_enc_rank_cost){.fwd_s = c.fwd_s, .bwd_s = c.bwd_s, .fwd_flops = c.fwd_flops,
                                             .bwd_flops = c.bwd_flops, .recompute_flops = c.recompute_flops};
        for (int t = 0; t < bn->n; t++) {
            const mm_sample *s = &samples[bn->idx[t]];
            double aud = (double)mm_sample_audio_tokens(s, &sim->tm);
            /* Mllama: the image is not in the LLM's sequence; its cross
             * blocks read the projected states of every tile */
            double tok = audio                      ? aud
                         : sim->llm->cross_tokens > 0 ? (double)(s->tiles + s->frames) * e->tokens_per_input
                                                      : (double)mm_sample_mm_tokens(s, &sim->tm) - aud;
            pair[(size_t)k * dp + llm_of[bn->idx[t]]] += tok * per_tok;
        }
    }
    free(perm), free(llm_of);
    if (rc)
        return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive the encoder's op costs");
    spec->enc[i].n_ranks = K;
    spec->enc[i].ranks = ranks;
    spec->enc[i].pair_bytes = pair;
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

/* Colocated encoders with per-rank work share the LLM's GPUs: their work
 * adds up per GPU.  Counted per unit of gcd(tp_i) GPUs (every rank of
 * every encoder covers whole units), so one encoder's units are its ranks
 * and its numbers are those of its ranks alone.  t[] has G / unit slots. */
static int coloc_units(const mm_build_spec *spec, double **out)
{
    int unit = 0, G = mm_build_gpus(spec);
    for (int i = 0; i < spec->n_enc; i++)
        unit = mm_gcd(unit, spec->enc[i].tp);
    int n = unit > 0 ? G / unit : 0;
    double *t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
    if (!t || n < 1) {
        free(t);
        return -1;
    }
    for (int i = 0; i < spec->n_enc; i++) {
        const mm_enc_spec *e = &spec->enc[i];
        for (int u = 0; u < n; u++) {
            int k = u * unit / e->tp;
            t[u] += k < e->n_ranks ? e->ranks[k].fwd_s + e->ranks[k].bwd_s : 0;
        }
    }
    *out = t;
    return n;
}

/* One encoder's (or, homogeneous, every encoder's) compute seconds per
 * replica: micro-batch (d, j) runs on replica d (homogeneous, even
 * colocated) or (j dp + d) mod dp_enc (pipeline, disjoint). */
static void replica_work(const mm_build_spec *spec, const mm_enc_spec *e, int n, double *t)
{
    bool by_llm = e->placement == MM_ENC_HOMOGENEOUS || e->placement == MM_ENC_COLOCATED;
    for (int d = 0; d < spec->lay.dp; d++)
        for (int j = 0; j < spec->m; j++) {
            const mm_enc_mb_cost *c = &e->mb[(size_t)d * spec->m + j];
            t[by_llm ? d : (j * spec->lay.dp + d) % n] += c->fwd_s + c->bwd_s;
        }
}

/* The encoders' work per encoder rank (docs/multimodal.md, "Each encoder
 * rank encodes its own samples"): on the LLM's GPUs (colocated, homogeneous) every encoder's
 * work on a GPU adds up and the statistic is over GPUs (units of gcd tp,
 * or LLM replicas); on GPUs of their own (pipeline, disjoint) each encoder
 * has its own ranks and the statistic is the largest over encoders. */
static double enc_rank_stat(const mm_build_spec *spec, int what)
{
    if (spec->n_enc < 1)
        return what ? 0.0 : 1.0;
    const mm_enc_spec *e0 = &spec->enc[0];
    bool shared = e0->placement == MM_ENC_HOMOGENEOUS || e0->placement == MM_ENC_COLOCATED;
    bool per_rank = e0->placement == MM_ENC_COLOCATED;
    for (int i = 0; i < spec->n_enc; i++)
        per_rank &= spec->enc[i].ranks != NULL;
    double *t = NULL, r = what ? 0.0 : 1.0;
    if (per_rank) {
        int n = coloc_units(spec, &t);
        r = n > 0 ? max_vs_mean(t, n, what) : NAN;
    } else if (shared) { /* LLM replicas: every encoder's micro-batches of replica d */
        t = calloc((size_t)(spec->lay.dp > 0 ? spec->lay.dp : 1), sizeof *t);
        for (int i = 0; t && i < spec->n_enc; i++)
            replica_work(spec, &spec->enc[i], spec->lay.dp, t);
        r = t && spec->lay.dp > 0 ? max_vs_mean(t, spec->lay.dp, what) : NAN;
    } else {
        for (int i = 0; i < spec->n_enc && !isnan(r); i++) {
            const mm_enc_spec *e = &spec->enc[i];
            t = e->dp > 0 ? calloc((size_t)e->dp, sizeof *t) : NULL;
            if (!t) {
                r = NAN;
                break;
            }
            replica_work(spec, e, e->dp, t);
            double v = max_vs_mean(t, e->dp, what);
            r = i == 0 || v > r ? v : r;
            free(t);
            t = NULL;
        }
    }
    free(t);
    return r;
}

double mm_sim_enc_imbalance(const mm_build_spec *spec) { return enc_rank_stat(spec, 0); }

double mm_sim_enc_excess_s(const mm_build_spec *spec) { return enc_rank_stat(spec, 1); }
