/* moe.c - per-expert token loads of an MoE layer (moe.h): the routing
 * draw, Megatron-Core's capacity rule, and the busiest expert-parallel
 * rank's profile.
 * Not for: kernels, FLOPs or time (llm.c, sim/hw). */
#include "model/moe.h"

typedef struct mm_moe_cache mm_moe_cache;

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const mm_moe_routing_names[] = {"balanced", "aux_loss", "skewed", NULL};
const char *const mm_moe_drop_names[] = {"probs", "position", NULL};
const char *const mm_moe_dispatcher_names[] = {"alltoall", "allgather", NULL};

/* splitmix64 (Steele, Lea and Flood, "Fast Splittable Pseudorandom Number
 * Generators", OOPSLA 2014): one well-mixed seed per (scenario seed,
 * shape, layer draw). */
static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

int64_t mm_moe_capacity(int64_t tokens, int64_t k, int64_t experts, double capacity_factor)
{
    /* moe_utils.py get_capacity: math.ceil((num_tokens / num_experts) *
     * capacity_factor), num_tokens being the rank's tokens x topk
     * (apply_router_token_dropping) */
    if (experts <= 0)
        return 0;
    return (int64_t)ceil((double)(tokens * k) / (double)experts * capacity_factor);
}

int mm_moe_check(const mm_moe_cfg *c, const char **why)
{
    if (c->routing < MM_MOE_BALANCED || c->routing > MM_MOE_SKEWED)
        return *why = "unknown routing", -1;
    if (c->capacity_factor < 0 || !isfinite(c->capacity_factor))
        return *why = "capacity_factor must be 0 (dropless) or positive", -1;
    if (c->pad && !(c->capacity_factor > 0))
        return *why = "padding to capacity needs a capacity_factor (Megatron asserts the same)", -1;
    if (c->routing == MM_MOE_AUX_LOSS && c->param > 1e6)
        return *why = "a Dirichlet concentration above 1e6 is balanced routing: use routing balanced", -1;
    if (c->routing == MM_MOE_SKEWED && c->param > 8)
        return *why = "a Zipf exponent above 8 sends every token to the same k experts", -1;
    return 0;
}

/* Caps every share at `cap` (a token picks k distinct experts, so one
 * expert gets at most 1/k of the picks), spreading what is cut over the
 * uncapped experts in proportion: water-filling, at most E rounds. */
static void clip_shares(double *p, int64_t E, double cap)
{
    for (int64_t round = 0; round < E; round++) {
        double over = 0, free_mass = 0;
        for (int64_t e = 0; e < E; e++) {
            if (p[e] > cap) {
                over += p[e] - cap;
                p[e] = cap;
            } else if (p[e] < cap) {
                free_mass += p[e];
            }
        }
        if (over <= 1e-15 || free_mass <= 0)
            return;
        for (int64_t e = 0; e < E; e++)
            if (p[e] < cap)
                p[e] += over * p[e] / free_mass;
    }
}

/* One layer's expert popularity p (sums to 1, each <= 1/k). */
static int popularity(const mm_moe_cfg *c, int64_t E, int64_t k, gsl_rng *r, double *p)
{
    if (c->routing == MM_MOE_AUX_LOSS) {
        double alpha = c->param > 0 ? c->param : MM_MOE_AUX_ALPHA;
        double *a = malloc((size_t)E * sizeof *a);
        if (!a)
            return -1;
        for (int64_t e = 0; e < E; e++)
            a[e] = alpha;
        gsl_ran_dirichlet(r, (size_t)E, a, p);
        free(a);
    } else if (c->routing == MM_MOE_SKEWED) {
        double s = c->param > 0 ? c->param : MM_MOE_ZIPF_S, sum = 0;
        for (int64_t e = 0; e < E; e++)
            sum += p[e] = pow((double)(e + 1), -s);
        for (int64_t e = 0; e < E; e++)
            p[e] /= sum;
        gsl_ran_shuffle(r, p, (size_t)E, sizeof *p); /* which experts are hot: a draw */
    } else {
        for (int64_t e = 0; e < E; e++)
            p[e] = 1.0 / (double)E;
    }
    clip_shares(p, E, 1.0 / (double)k);
    return 0;
}

/* Source rank `rank`'s N = tokens x k picks over the experts.  Balanced:
 * an exact even split, the remainder rotated by rank.  Otherwise
 * multinomial; an expert drawn above `tokens` (a token cannot pick it
 * twice) gives the excess to the least-loaded experts, so the sum stays N. */
static void draw_rank(const mm_moe_cfg *c, const double *p, int64_t E, int64_t k, int64_t tokens, int rank,
                      gsl_rng *r, unsigned int *n, int64_t *out)
{
    int64_t N = tokens * k;
    if (c->routing == MM_MOE_BALANCED) {
        for (int64_t e = 0; e < E; e++)
            out[e] = N / E + (((e + rank) % E) < N % E);
        return;
    }
    gsl_ran_multinomial(r, (size_t)E, (unsigned int)N, p, n);
    int64_t excess = 0;
    for (int64_t e = 0; e < E; e++) {
        out[e] = n[e];
        if (out[e] > tokens) {
            excess += out[e] - tokens;
            out[e] = tokens;
        }
    }
    while (excess > 0) {
        int64_t lo = 0;
        for (int64_t e = 1; e < E; e++)
            if (out[e] < out[lo])
                lo = e;
        out[lo]++;
        excess--;
    }
}

/* Capacity on the source rank (apply_router_token_dropping): an expert
 * keeps at most `cap` of this rank's picks; padded, it gets exactly cap
 * rows.  Megatron drops nothing when cap exceeds the rank's tokens. */
static void apply_capacity(const mm_moe_cfg *c, int64_t E, int64_t k, int64_t tokens, int64_t *row)
{
    if (!(c->capacity_factor > 0))
        return;
    int64_t cap = mm_moe_capacity(tokens, k, E, c->capacity_factor);
    for (int64_t e = 0; e < E; e++) {
        if (c->pad)
            row[e] = cap;
        else if (cap <= tokens && row[e] > cap)
            row[e] = cap;
    }
}

int mm_moe_draw(const mm_moe_cfg *c, int64_t experts, int64_t k, int ranks, int64_t tokens, uint64_t draw,
                int64_t *load)
{
    if (experts < 1 || k < 1 || k > experts || ranks < 1 || tokens < 0 || tokens * k > (int64_t)UINT32_MAX)
        return -1;
    double *p = malloc((size_t)experts * sizeof *p);
    unsigned int *n = malloc((size_t)experts * sizeof *n);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    int rc = -1;
    if (p && n && r) {
        uint64_t s = mix64(c->seed ^ mix64((uint64_t)tokens ^ mix64((uint64_t)experts * 131u + (uint64_t)k) ^
                                           mix64(draw * 1009u + (uint64_t)ranks)));
        gsl_rng_set(r, (unsigned long)((s ^ (s >> 32)) & 0xffffffffUL));
        rc = popularity(c, experts, k, r, p);
        for (int j = 0; rc == 0 && j < ranks; j++) {
            draw_rank(c, p, experts, k, tokens, j, r, n, load + (size_t)j * (size_t)experts);
            apply_capacity(c, experts, k, tokens, load + (size_t)j * (size_t)experts);
        }
    }
    gsl_rng_free(r);
    free(n);
    free(p);
    return rc;
}

static int desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

/* Folds one draw into the profile: the destination rank whose experts get
 * the most rows (ties: the lowest index), its experts' rows sorted
 * descending, added to acc[local]; the largest expert and all kept rows. */
static void fold_draw(const int64_t *load, int64_t E, int ranks, int64_t *dest, int64_t *tmp, double *acc,
                      double *max_expert, double *kept)
{
    int64_t L = E / ranks, best = -1;
    int bj = 0;
    memset(dest, 0, (size_t)E * sizeof *dest);
    for (int j = 0; j < ranks; j++)
        for (int64_t e = 0; e < E; e++)
            dest[e] += load[(size_t)j * (size_t)E + (size_t)e];
    int64_t mx = 0, all = 0;
    for (int j = 0; j < ranks; j++) {
        int64_t sum = 0;
        for (int64_t e = j * L; e < (j + 1) * L; e++) {
            sum += dest[e];
            mx = dest[e] > mx ? dest[e] : mx;
        }
        all += sum;
        if (sum > best)
            best = sum, bj = j;
    }
    memcpy(tmp, dest + (size_t)bj * (size_t)L, (size_t)L * sizeof *tmp);
    qsort(tmp, (size_t)L, sizeof *tmp, desc);
    for (int64_t i = 0; i < L; i++)
        acc[i] += (double)tmp[i];
    *max_expert += (double)mx;
    *kept += (double)all;
}

/* Bins the sorted loads: the busiest expert alone, the rest in equal
 * contiguous groups (each at its mean). */
static void bin_profile(const double *acc, int64_t L, mm_moe_load *out)
{
    int nb = L <= MM_MOE_BINS ? (int)L : MM_MOE_BINS;
    out->nbins = nb;
    out->rank_rows = 0;
    for (int b = 0; b < nb; b++) {
        int64_t lo = b == 0 ? 0 : 1 + (L - 1) * (b - 1) / (nb - 1);
        int64_t hi = b == 0 ? 1 : 1 + (L - 1) * b / (nb - 1);
        if (nb == L)
            lo = b, hi = b + 1;
        double s = 0;
        for (int64_t i = lo; i < hi; i++)
            s += acc[i];
        out->bin_n[b] = (double)(hi - lo);
        out->bin_m[b] = hi > lo ? s / (double)(hi - lo) : 0.0;
        out->rank_rows += s;
    }
}

#define CACHE_SLOTS 64

typedef struct cache_key {
    int routing, ranks;
    bool pad;
    double param, capacity_factor;
    uint64_t seed;
    int64_t experts, k, tokens;
} cache_key;

struct mm_moe_cache {
    int n, next;
    cache_key key[CACHE_SLOTS];
    mm_moe_load load[CACHE_SLOTS];
};

mm_moe_cache *mm_moe_cache_alloc(void)
{
    return calloc(1, sizeof(mm_moe_cache));
}

void mm_moe_cache_free(mm_moe_cache *cache)
{
    free(cache);
}

static bool same_key(const cache_key *a, const cache_key *b)
{
    return a->routing == b->routing && a->ranks == b->ranks && a->pad == b->pad && a->param == b->param &&
           a->capacity_factor == b->capacity_factor && a->seed == b->seed && a->experts == b->experts &&
           a->k == b->k && a->tokens == b->tokens;
}

static int profile_uncached(const mm_moe_cfg *c, int64_t experts, int64_t k, int ranks, int64_t T,
                            mm_moe_load *out);

int mm_moe_profile(const mm_moe_cfg *c, int64_t experts, int64_t k, int ranks, double tokens, mm_moe_load *out)
{
    memset(out, 0, sizeof *out);
    if (ranks < 1 || experts < 1 || experts % ranks || !(tokens >= 0) || tokens > 1e15)
        return -1;
    int64_t T = llround(tokens);
    mm_moe_cache *mc = c->cache;
    cache_key key = {c->routing, ranks, c->pad, c->param, c->capacity_factor, c->seed, experts, k, T};
    for (int i = 0; mc && i < mc->n; i++)
        if (same_key(&mc->key[i], &key)) {
            *out = mc->load[i];
            return 0;
        }
    int rc = profile_uncached(c, experts, k, ranks, T, out);
    if (rc == 0 && mc) {
        mc->key[mc->next] = key;
        mc->load[mc->next] = *out;
        mc->next = (mc->next + 1) % CACHE_SLOTS;
        mc->n = mc->n < CACHE_SLOTS ? mc->n + 1 : CACHE_SLOTS;
    }
    return rc;
}

static int profile_uncached(const mm_moe_cfg *c, int64_t experts, int64_t k, int ranks, int64_t T,
                            mm_moe_load *out)
{
    int64_t E = experts, L = E / ranks;
    int64_t *load = malloc((size_t)ranks * (size_t)E * sizeof *load);
    int64_t *dest = malloc((size_t)E * 2 * sizeof *dest);
    double *acc = calloc((size_t)L, sizeof *acc);
    int rc = load && dest && acc ? 0 : -1;
    double mx = 0, kept = 0;
    for (int d = 0; rc == 0 && d < MM_MOE_DRAWS; d++) {
        rc = mm_moe_draw(c, E, k, ranks, T, (uint64_t)d, load);
        if (rc == 0)
            fold_draw(load, E, ranks, dest, dest + E, acc, &mx, &kept);
    }
    if (rc == 0) {
        for (int64_t i = 0; i < L; i++)
            acc[i] /= MM_MOE_DRAWS;
        out->local = L;
        bin_profile(acc, L, out);
        out->max_expert = mx / MM_MOE_DRAWS;
        out->mean_rows = kept / MM_MOE_DRAWS / ranks;
        out->kept = out->mean_rows; /* every source rank sends what the ranks receive on average */
        out->mean_expert = (double)(T * k) * ranks / (double)E;
        double picks = (double)(T * k);
        out->dropped = picks > 0 && !c->pad ? fmax(0.0, 1.0 - out->kept / picks) : 0.0;
    }
    free(acc);
    free(dest);
    free(load);
    return rc;
}

double mm_moe_expert_imbalance(const mm_moe_load *ld)
{
    return ld->mean_expert > 0 ? ld->max_expert / ld->mean_expert : NAN;
}

double mm_moe_rank_imbalance(const mm_moe_load *ld)
{
    return ld->mean_rows > 0 ? ld->rank_rows / ld->mean_rows : NAN;
}
