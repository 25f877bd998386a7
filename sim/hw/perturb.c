/* perturb.c - resolving what-if perturbations (perturb.h) against a
 * cluster: checks, the per-GPU pace, the jitter generator, stalls, node
 * group NIC rates.  Link perturbations are applied by topo.c when it builds
 * the link graph.  Not for: parsing (scenario/perturb.c). */
#include "hw/perturb.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "hw/cluster.h"

const char *const mm_perturb_kind_names[] = {"slow_gpu", "jitter", "hbm",        "nic",   "rail",
                                             "switch",   "link",   "node_group", "stall", NULL};

/* splitmix64 (Steele, Lea and Flood, "Fast Splittable Pseudorandom Number
 * Generators", OOPSLA 2014): spreads (seed, stream) over the seed space so
 * that neighbouring seeds give unrelated Mersenne Twister states. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

gsl_rng *mm_perturb_rng(uint64_t seed, uint64_t iteration)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (r)
        gsl_rng_set(r, (unsigned long)(mix64(seed ^ mix64(iteration)) & 0xffffffffUL));
    return r;
}

int mm_cluster_group_of(const mm_cluster *c, int node)
{
    for (int i = 0; i < c->n_groups; i++)
        if (node >= c->groups[i].first && node < c->groups[i].first + c->groups[i].count)
            return i;
    return -1;
}

double mm_cluster_node_nic_bw(const mm_cluster *c, int node)
{
    int g = mm_cluster_group_of(c, node);
    return g >= 0 ? c->groups[g].nic_bw : c->nic_bw;
}

double mm_cluster_nic_bw_min(const mm_cluster *c)
{
    int covered = 0;
    double m = INFINITY;
    for (int i = 0; i < c->n_groups; i++) {
        covered += c->groups[i].count;
        m = fmin(m, c->groups[i].nic_bw);
    }
    return covered < c->nodes ? fmin(m, c->nic_bw) : m; /* some node keeps the base rate */
}

double mm_perturb_stall_s(const mm_perturb *pt, int iteration)
{
    double s = 0;
    for (int i = 0; i < pt->n; i++)
        if (pt->e[i].kind == MM_PT_STALL && pt->e[i].every > 0 && (iteration + 1) % pt->e[i].every == 0)
            s += pt->e[i].seconds;
    return s;
}

static int leaves_of(const mm_cluster *c)
{
    int groups = (c->nodes + c->nodes_per_leaf - 1) / c->nodes_per_leaf;
    return groups * (c->fabric == MM_FABRIC_RAIL ? c->nics_per_node : 1);
}

static void say(char *key, size_t kl, char *msg, size_t ml, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void say(char *key, size_t kl, char *msg, size_t ml, const char *k, const char *fmt, ...)
{
    snprintf(key, kl, "%s", k);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, ml, fmt, ap);
    va_end(ap);
}

int mm_perturb_check(const mm_perturb *pt, const mm_cluster *c, char *key, size_t kl, char *msg, size_t ml)
{
    int gpus = mm_cluster_gpus(c), leaves = leaves_of(c);
    for (int i = 0; i < pt->n; i++) {
        const mm_perturb_entry *e = &pt->e[i];
        for (int j = 0; j < e->n_gpus; j++)
            if (e->gpus[j] >= gpus)
                return say(key, kl, msg, ml, "gpus", "GPU %d is out of range: the cluster has %d GPUs", e->gpus[j],
                           gpus), i;
        for (int j = 0; j < e->n_nodes; j++)
            if (e->nodes[j] >= c->nodes)
                return say(key, kl, msg, ml, "nodes", "node %d is out of range: the cluster has %d nodes",
                           e->nodes[j], c->nodes), i;
        const char *nk = e->kind == MM_PT_RAIL ? "rails" : "nics";
        for (int j = 0; j < e->n_nics; j++)
            if (e->nics[j] >= c->nics_per_node)
                return say(key, kl, msg, ml, nk, "NIC %d is out of range: a node has %d NICs", e->nics[j],
                           c->nics_per_node), i;
        for (int j = 0; j < e->n_leaves; j++)
            if (e->leaves[j] >= leaves)
                return say(key, kl, msg, ml, e->kind == MM_PT_LINK ? "leaf" : "leaves",
                           "leaf %d is out of range: the fabric has %d leaf switches", e->leaves[j], leaves), i;
        for (int j = 0; j < e->n_spines; j++)
            if (e->spines[j] >= c->spines)
                return say(key, kl, msg, ml, e->kind == MM_PT_LINK ? "spine" : "spines",
                           "spine %d is out of range: each leaf has %d spine uplinks", e->spines[j], c->spines), i;
        if (e->kind == MM_PT_NODE_GROUP) {
            int found = -1;
            for (int g = 0; g < c->n_groups; g++)
                if (!strcmp(c->groups[g].name, e->group))
                    found = g;
            if (found < 0) {
                snprintf(key, kl, "group");
                snprintf(msg, ml, "the topology has no node group '%s' (%d groups under node_groups:)", e->group,
                         c->n_groups);
                return i;
            }
        }
        if (e->failed && e->kind == MM_PT_SWITCH && e->n_leaves > 0) {
            snprintf(key, kl, "failed");
            snprintf(msg, ml, "a failed leaf switch would cut its nodes off; fail spines or leaf-spine links");
            return i;
        }
    }
    /* Every leaf must keep a live spine uplink, or routing has nowhere to go. */
    if (c->nodes > c->nodes_per_leaf || leaves > 1) {
        for (int l = 0; l < leaves; l++) {
            int live = 0, last = -1;
            for (int s = 0; s < c->spines; s++) {
                bool dead = false;
                for (int i = 0; i < pt->n && !dead; i++) {
                    const mm_perturb_entry *e = &pt->e[i];
                    if (!e->failed)
                        continue;
                    bool sp = false, lf = e->kind == MM_PT_SWITCH;
                    for (int j = 0; j < e->n_spines; j++)
                        sp |= e->spines[j] == s;
                    if (e->kind == MM_PT_LINK)
                        lf = e->n_leaves > 0 && e->leaves[0] == l;
                    if (sp && lf) {
                        dead = true;
                        last = i;
                    }
                }
                live += !dead;
            }
            if (live == 0 && last >= 0) {
                snprintf(key, kl, "failed");
                snprintf(msg, ml, "leaf %d would have no live spine uplink left", l);
                return last;
            }
        }
    }
    return -1;
}

void mm_gpu_pace_free(mm_gpu_pace *p)
{
    free(p->slow);
    free(p->flop_scale);
    free(p->mem_scale);
    free(p->cv);
    free(p->hbm_bytes);
    memset(p, 0, sizeof *p);
}

/* Marks the GPUs an entry selects in sel[] (1 = chosen). */
static int select_gpus(const mm_perturb *pt, int idx, const mm_cluster *c, unsigned char *sel)
{
    const mm_perturb_entry *e = &pt->e[idx];
    int n = mm_cluster_gpus(c), G = c->gpus_per_node;
    bool any = e->n_gpus > 0 || e->n_nodes > 0 || e->fraction > 0;
    memset(sel, any ? 0 : 1, (size_t)n);
    for (int j = 0; j < e->n_gpus; j++)
        if (e->gpus[j] >= 0 && e->gpus[j] < n)
            sel[e->gpus[j]] = 1;
    for (int j = 0; j < e->n_nodes; j++)
        for (int g = 0; g < G && e->nodes[j] < c->nodes; g++)
            sel[e->nodes[j] * G + g] = 1;
    if (e->fraction > 0) {
        /* k of the n GPUs, uniformly without replacement (gsl_ran_choose),
         * from a stream of its own: the same GPUs every iteration. */
        size_t k = (size_t)llround(e->fraction * n);
        if (k > (size_t)n)
            k = (size_t)n;
        if (k == 0)
            return 0;
        int *all = malloc((size_t)n * sizeof *all), *pick = malloc(k * sizeof *pick);
        gsl_rng *r = mm_perturb_rng(pt->seed, 0x8000000000000000ULL + (uint64_t)idx);
        if (!all || !pick || !r) {
            free(all);
            free(pick);
            if (r)
                gsl_rng_free(r);
            return -1;
        }
        for (int g = 0; g < n; g++)
            all[g] = g;
        gsl_ran_choose(r, pick, k, all, (size_t)n, sizeof *all);
        for (size_t j = 0; j < k; j++)
            sel[pick[j]] = 1;
        free(all);
        free(pick);
        gsl_rng_free(r);
    }
    return 0;
}

int mm_gpu_pace_build(mm_gpu_pace *p, const mm_cluster *c, mm_err *err)
{
    int n = mm_cluster_gpus(c), G = c->gpus_per_node;
    memset(p, 0, sizeof *p);
    p->n = n;
    p->slow = malloc((size_t)n * sizeof *p->slow);
    p->flop_scale = malloc((size_t)n * sizeof *p->flop_scale);
    p->mem_scale = malloc((size_t)n * sizeof *p->mem_scale);
    p->cv = malloc((size_t)n * sizeof *p->cv);
    p->hbm_bytes = malloc((size_t)n * sizeof *p->hbm_bytes);
    unsigned char *sel = malloc((size_t)n + 1);
    if (!p->slow || !p->flop_scale || !p->mem_scale || !p->cv || !p->hbm_bytes || !sel) {
        free(sel);
        mm_gpu_pace_free(p);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory for the GPU pace");
    }
    for (int g = 0; g < n; g++) {
        int gi = mm_cluster_group_of(c, g / G);
        const mm_node_group *ng = gi >= 0 && c->groups[gi].has_gpu ? &c->groups[gi] : NULL;
        p->slow[g] = 1;
        p->cv[g] = 0;
        p->flop_scale[g] = ng ? c->gpu.peak_flops[MM_DTYPE_BF16] / ng->peak_flops[MM_DTYPE_BF16] : 1;
        p->mem_scale[g] = ng ? c->gpu.hbm_bw / ng->hbm_bw : 1;
        p->hbm_bytes[g] = ng ? ng->hbm_bytes : c->gpu.hbm_bytes;
    }
    for (int i = 0; i < c->pt.n; i++) {
        const mm_perturb_entry *e = &c->pt.e[i];
        if (e->kind != MM_PT_SLOW_GPU && e->kind != MM_PT_JITTER && e->kind != MM_PT_HBM)
            continue;
        if (select_gpus(&c->pt, i, c, sel)) {
            free(sel);
            mm_gpu_pace_free(p);
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory for the GPU pace");
        }
        for (int g = 0; g < n; g++) {
            if (!sel[g])
                continue;
            if (e->kind == MM_PT_SLOW_GPU)
                p->slow[g] *= e->factor;
            else if (e->kind == MM_PT_JITTER)
                p->cv[g] = e->cv; /* the last entry naming a GPU wins */
            else {
                p->mem_scale[g] /= e->hbm_bw;
                p->hbm_bytes[g] *= e->hbm_cap;
            }
        }
    }
    free(sel);
    for (int g = 0; g < n; g++)
        if (p->slow[g] != 1 || p->flop_scale[g] != 1 || p->mem_scale[g] != 1 || p->cv[g] > 0)
            p->any_time = true;
    return 0;
}

double mm_gpu_pace_op(const mm_gpu_pace *p, const int *gpus, int n, double mem_frac, gsl_rng *rng)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        int g = gpus[i];
        if (g < 0 || g >= p->n)
            continue;
        double m = p->slow[g] * ((1 - mem_frac) * p->flop_scale[g] + mem_frac * p->mem_scale[g]);
        if (p->cv[g] > 0 && rng) {
            /* lognormal with mean 1 and CV cv: sigma^2 = ln(1 + cv^2),
             * zeta = -sigma^2 / 2 (E = exp(zeta + sigma^2/2) = 1) */
            double s2 = log1p(p->cv[g] * p->cv[g]);
            m *= gsl_ran_lognormal(rng, -0.5 * s2, sqrt(s2));
        }
        if (m > worst)
            worst = m;
    }
    return n > 0 ? worst : 1.0;
}
