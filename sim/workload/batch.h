/* batch.h - micro-batch formation: how one global batch of samples is
 * split over DP ranks and micro-batches (the scenario's `batching:`).
 *
 *   sequential    as sampled, in Megatron-LM's order: micro-batch j of DP
 *                 rank r holds samples [(j*dp + r)*b, (j*dp + r + 1)*b)
 *                 (MegatronPretrainingSampler), b = n / (dp * m)
 *   grouped       LLaVA's group_by_modality_length: multimodal and
 *                 text-only samples form separate mega-batches of dp*b
 *                 samples, each sorted by length and dealt longest-first to
 *                 the rank with the fewest tokens (haotian-liu/LLaVA
 *                 llava/train/llava_trainer.py)
 *   packed        each DP rank's n/dp consecutive samples packed first-fit
 *                 decreasing into sequences of at most seq_len LLM tokens,
 *                 one packed sequence per micro-batch (varlen attention); the
 *                 number of micro-batches then differs between ranks
 *   balanced      DFLOP (arXiv 2603.25120): samples assigned to dp*m bins,
 *                 minimizing the largest bin's max(encoder cost, LLM cost),
 *                 an integer program solved by GLPK under a node limit with
 *                 LPT as the incumbent and the fallback
 *   post-balance  OrchMLLM (arXiv 2503.23830): after the sequential split,
 *                 samples are re-dealt across DP ranks per phase (encoder,
 *                 then LLM) by LPT on that phase's cost; the plan reports
 *                 the bytes the all-to-all of each phase moves
 *
 * Costs are the caller's (a callback giving encoder and LLM cost per
 * sample, e.g. seconds from the model's FLOPs); without one, a sample costs
 * its visual/audio tokens (encoder) and its LLM tokens (LLM).
 * Everything here is deterministic: ties are broken by sample index, GLPK
 * is bounded by a node count, never by wall-clock time.
 * Not for: timing the micro-batches (run layer), drawing samples. */
#ifndef MM_BATCH_H
#define MM_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "model/padding.h"
#include "util/err.h"
#include "workload/workload.h"

typedef enum mm_batch_policy {
    MM_BP_SEQUENTIAL, MM_BP_GROUPED, MM_BP_PACKED, MM_BP_BALANCED, MM_BP_POST_BALANCE
} mm_batch_policy;
/* "sequential", "grouped", "packed", "balanced", "post-balance", NULL */
extern const char *const mm_batch_policy_names[];

/* How a micro-batch's sequences are laid out for the LLM (train.padding):
 * model/padding.h. */

/* Encoder and LLM cost of one sample (any unit, the same for both). */
typedef void (*mm_sample_cost_fn)(const mm_sample *s, const mm_token_model *tm, void *ctx,
                                  double *enc_cost, double *llm_cost);

typedef struct mm_batch_opts {
    mm_batch_policy policy;
    int dp;                  /* DP ranks (>= 1) */
    int micro_batches;       /* per DP rank; unused by packed */
    int64_t seq_len;         /* packed: target LLM tokens per packed sequence */
    int64_t pad_to;          /* max_length: the length each sample is padded
                                to (a longer one keeps its own) */
    mm_token_model tokens;
    mm_sample_cost_fn cost;  /* NULL: tokens (see the top of this file) */
    void *cost_ctx;
    int64_t ilp_node_limit;  /* balanced: branch-and-bound nodes GLPK may open; 0 = 50; < 0 = LPT only */
    double enc_bytes_per_input; /* post-balance: bytes moved per tile/frame/clip to the encoder rank */
    double bytes_per_token;  /* post-balance: bytes per visual/audio token sent encoder -> LLM rank */
    mm_padding padding;      /* how bins' padded_tokens are counted (not packed) */
    int enc_ranks;           /* > 0: also split the batch over this many encoder
                                DP ranks (a colocated encoder's own DP): see
                                mm_batch_plan.enc_rank_bins */
} mm_batch_opts;

/* One micro-batch of one DP rank and its aggregates. */
typedef struct mm_bin {
    int rank, micro;
    int n;                 /* samples */
    int *idx;              /* indices into the batch's sample array */
    int64_t llm_tokens;    /* sum of LLM tokens (packed: of the packed sequence) */
    double sum_sq_tokens;  /* sum over samples of s_i^2: varlen attention work */
    int64_t text_tokens, images, tiles, frames, audio_clips;
    double audio_s;
    double enc_cost, llm_cost;
    int64_t max_tokens;    /* its longest sample's LLM tokens */
    int64_t padded_tokens; /* tokens the LLM runs on under the padding mode
                              (= llm_tokens for none and for packed) */
    double padded_sum_sq;  /* attention work at the padded length */
} mm_bin;

typedef struct mm_batch_plan {
    mm_batch_policy policy;
    int dp;
    int n_samples;
    int n_bins;            /* sum over ranks of their micro-batches */
    mm_bin *bins;          /* LLM phase; sorted by rank, then micro */
    int *rank_first;       /* [dp + 1]: bins of rank r are [rank_first[r], rank_first[r+1]) */
    /* post-balance: the encoder phase's own assignment (same shape as bins);
     * NULL for the other policies (the encoder sees the LLM's bins). */
    mm_bin *enc_bins;
    int n_enc_bins;
    int *enc_rank_first;
    double *a2a_enc_bytes; /* [dp * dp] src * dp + dst: inputs moved sampling rank -> encoder rank */
    double *a2a_llm_bytes; /* [dp * dp]: encoder outputs moved encoder rank -> LLM rank */
    double a2a_enc_total, a2a_llm_total;
    int moved_enc, moved_llm; /* samples that changed rank in each phase */
    /* enc_ranks > 0: the samples each encoder DP rank encodes, one bin per
     * rank (micro = 0).  As drawn, the LLM's bins in rank-major order are
     * cut into enc_ranks consecutive runs of (almost) equal sample counts,
     * so that encoder rank k serves LLM rank k * dp / enc_ranks when
     * enc_ranks is a multiple of dp; post-balance instead deals them by LPT
     * on the encoder cost (its encoder phase), n / enc_ranks per rank. */
    mm_bin *enc_rank_bins;
    int n_enc_ranks;
    int64_t tokens_total, padded_total; /* over the LLM's bins */
    /* quality of the largest bin, cost = max(enc, llm) */
    double max_bin_cost;
    double lower_bound;    /* max(largest sample, total enc / bins, total llm / bins) or GLPK's bound */
    double gap;            /* (max_bin_cost - lower_bound) / max_bin_cost */
    double lpt_max_bin_cost; /* balanced: LPT's value (the fallback) */
    bool ilp_used, ilp_optimal;
    int64_t ilp_nodes;
    int64_t ilp_columns;   /* balanced: columns of its program (mm_balance_ilp_columns) */
    bool ilp_too_large;    /* ... above MM_BALANCE_ILP_MAX_COLUMNS: never built, the local search's answer stands */
    int truncated;         /* packed: samples longer than seq_len, cut to it */
    int *store_;           /* owns the idx arrays */
} mm_batch_plan;

/* Forms the micro-batches of one global batch of n samples.  Bad options
 * (n not divisible by dp * micro_batches where needed, n < bins, seq_len
 * < 1 for packed) give MM_EINPUT naming the scenario key
 * (train.global_batch, train.seq_len, ...). */
int mm_batch_form(const mm_sample *s, int n, const mm_batch_opts *o, mm_batch_plan *plan, mm_err *err);
void mm_batch_plan_free(mm_batch_plan *plan);

/* Padded-token fraction of a plan: (padded - real) / padded, 0 for none. */
double mm_batch_padded_fraction(const mm_batch_plan *plan);

/* LPT (longest processing time first; Graham 1969) over k bins of
 * two-dimensional costs: items sorted by max(enc, llm) descending (ties by
 * index), each to the bin whose max(enc, llm) grows least (ties: the lower
 * bin).  assign[i] = bin of item i.  Returns the largest bin's cost.  With
 * one dimension zero this is Graham's LPT: at most (4/3 - 1/(3k)) OPT. */
double mm_lpt_assign(const double *enc, const double *llm, int n, int k, int *assign);

/* A lower bound on the largest bin of any assignment of n items to k
 * bins: per dimension the average, the largest item and Dell'Amico and
 * Martello's L_j (some bin holds j+1 of the jk+1 largest items). */
double mm_balance_lower_bound(const double *enc, const double *llm, int n, int k);

/* The integer program of `balanced` on its own: x_ik binary, every item in
 * one bin, every bin non-empty, minimize z >= each bin's enc and llm sum.
 * `assign` holds a starting solution on entry (given to GLPK as its first
 * incumbent) and the best found on return.  Returns 0 with *best, *bound
 * (a proven lower bound), *nodes and *optimal filled; -MM_EINTERNAL if
 * GLPK fails (assign is then unchanged). */
int mm_balance_ilp(const double *enc, const double *llm, int n, int k, int64_t node_limit, int *assign,
                   double *best, double *bound, int64_t *nodes, bool *optimal, mm_err *err);

/* The columns of that program: z and x_ik for bins k <= i (the symmetry
 * cut), 1 + sum_i min(i + 1, k); its cost grows with them (GLPK's LP
 * relaxation and every node re-solve it whole: 1.13 M columns, 2016
 * samples in 672 bins: the pre-score ran past 39 CPU-s and ~600 MB, over
 * 90 % of it in GLPK, and in 5 nodes the solve neither improved the
 * incumbent nor raised the bound). */
int64_t mm_balance_ilp_columns(int n, int k);

/* Above this many columns mm_balance_ilp builds no program: it returns
 * the local search's assignment with the lower bound
 * (mm_balance_lower_bound) as its bound, *nodes 0, not optimal.  The
 * largest programs of the measured workloads (InternVL-1.2 trace, 448
 * samples in 224 bins: 75,377 columns) stay under it. */
#define MM_BALANCE_ILP_MAX_COLUMNS 200000

#endif
