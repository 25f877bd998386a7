/* moe.h - how many tokens each expert of a mixture-of-experts layer gets,
 * as Megatron-Core routes them, and which expert-parallel rank is the
 * busiest.  The router's top-k picks are drawn per layer from a routing
 * distribution (balanced, auxiliary-loss balanced, skewed), deterministic
 * from the scenario seed; capacity (token dropping, padding) is applied on
 * each source rank as megatron/core/transformer/moe/moe_utils.py
 * apply_router_token_dropping does (NVIDIA/Megatron-LM commit
 * d98e8a64ddf34856e74b24714e3bedb2f5a39553).  The busiest rank's
 * per-expert loads (averaged over layer draws) are what set a layer's pace:
 * the combine all-to-all waits for the slowest rank.
 *
 * Not for: FLOPs or kernel lists (llm.c turns a profile into ops), time
 * (sim/hw), reading scenario keys (sim/scenario). */
#ifndef MM_MOE_H
#define MM_MOE_H

#include <stdbool.h>
#include <stdint.h>

/* moe.routing: where the router sends tokens.
 *  balanced: every expert exactly tokens*k/E (an ideal, forced balance);
 *  aux_loss: expert popularity ~ Dirichlet(alpha, ..., alpha) per layer,
 *            then each rank's tokens drawn multinomially (what an
 *            auxiliary load-balancing loss leaves: imbalance that shrinks
 *            as alpha grows);
 *  skewed:   Zipf popularity p_i ~ (i+1)^-s over a seeded permutation of
 *            the experts per layer (no balancing loss). */
typedef enum { MM_MOE_BALANCED, MM_MOE_AUX_LOSS, MM_MOE_SKEWED } mm_moe_routing;
/* moe.drop_policy (--moe-token-drop-policy): which tokens a full expert
 * drops; both drop the same number, so they cost the same. */
typedef enum { MM_MOE_DROP_PROBS, MM_MOE_DROP_POSITION } mm_moe_drop_policy;
/* moe.dispatcher (--moe-token-dispatcher-type). */
typedef enum { MM_MOE_ALLTOALL, MM_MOE_ALLGATHER } mm_moe_dispatcher;

extern const char *const mm_moe_routing_names[];
extern const char *const mm_moe_drop_names[];
extern const char *const mm_moe_dispatcher_names[];

/* Defaults of moe.routing_param (0 = the mode's default).  Neither is a
 * published measurement: both are assumptions, said so in docs/models.md,
 * to be replaced by a measured per-batch expert-load skew (set
 * moe.routing_param from the run being modeled). */
#define MM_MOE_AUX_ALPHA 16.0
#define MM_MOE_ZIPF_S 0.5
/* Layer draws averaged into one profile (each MoE layer routes anew; the
 * op list is one mean block). */
#define MM_MOE_DRAWS 8
/* Groups the busiest rank's experts are binned into for the kernel list. */
#define MM_MOE_BINS 8

struct mm_moe_cache;

typedef struct mm_moe_cfg {
    int routing;            /* mm_moe_routing */
    double param;           /* Dirichlet alpha (aux_loss) or Zipf s (skewed); <= 0: default */
    double capacity_factor; /* 0: dropless; else --moe-expert-capacity-factor */
    int drop_policy;        /* mm_moe_drop_policy */
    bool pad;               /* --moe-pad-expert-input-to-capacity */
    int dispatcher;         /* mm_moe_dispatcher */
    bool sequential;        /* experts one GEMM after another (SequentialMLP, no --moe-grouped-gemm) */
    uint64_t seed;          /* the scenario seed */
    /* Profiles already drawn (mm_moe_cache_alloc; may be NULL): the
     * planner costs thousands of layouts that share a few profiles.  Owned
     * by whoever set it (the sim: mm_sim_free). */
    struct mm_moe_cache *cache;
} mm_moe_cfg;

/* The load profile of one MoE layer on the busiest expert-parallel rank. */
typedef struct mm_moe_load {
    int64_t local;             /* experts per EP rank, E / ranks */
    int nbins;                 /* the busiest rank's experts, busiest first: */
    double bin_m[MM_MOE_BINS]; /*   mean tokens of each expert in the bin */
    double bin_n[MM_MOE_BINS]; /*   experts in the bin (sum = local) */
    double rank_rows;          /* rows the busiest rank's experts process (sum bin_m x bin_n) */
    double mean_rows;          /* rows per rank on average (= kept copies sent per rank) */
    double max_expert;         /* the busiest expert's rows over all experts */
    double mean_expert;        /* tokens x k x ranks / E */
    double kept;               /* token copies each source rank sends (after drops, with padding) */
    double dropped;            /* fraction of the token copies capacity dropped */
} mm_moe_load;

/* Megatron-Core's get_capacity: ceil(tokens x k / E x capacity_factor). */
int64_t mm_moe_capacity(int64_t tokens, int64_t k, int64_t experts, double capacity_factor);

/* One layer's routing, draw `draw`: per source rank r (ranks of them, each
 * with `tokens` tokens) the token copies it sends to expert e, after
 * capacity, into load[r * experts + e].  Without capacity each row sums to
 * tokens x k and no entry exceeds tokens (top-k picks distinct experts).
 * Returns 0, or -1 on bad sizes or no memory. */
int mm_moe_draw(const mm_moe_cfg *c, int64_t experts, int64_t k, int ranks, int64_t tokens, uint64_t draw,
                int64_t *load);

/* The busiest-rank profile over MM_MOE_DRAWS layer draws (experts split
 * evenly over `ranks` EP ranks, rank j holding experts j*E/ranks ...).
 * `tokens` is rounded to whole tokens.  Returns 0 or -1 (as above). */
int mm_moe_profile(const mm_moe_cfg *c, int64_t experts, int64_t k, int ranks, double tokens, mm_moe_load *out);

/* The busiest expert's rows over the mean expert's, and the busiest EP
 * rank's over the mean rank's (1 when balanced; NAN for an empty profile). */
double mm_moe_expert_imbalance(const mm_moe_load *ld);
double mm_moe_rank_imbalance(const mm_moe_load *ld);

/* A memo of recent profiles, keyed by everything mm_moe_profile reads;
 * a hit returns the same numbers bit for bit.  NULL when out of memory. */
struct mm_moe_cache *mm_moe_cache_alloc(void);
void mm_moe_cache_free(struct mm_moe_cache *cache);

/* Checks a configuration: -1 with a static reason in *why, or 0. */
int mm_moe_check(const mm_moe_cfg *c, const char **why);

#endif
