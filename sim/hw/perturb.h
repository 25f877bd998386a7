/* perturb.h - what-if perturbations of the hardware: slow or jittery GPUs,
 * degraded HBM, slower, laggier or failed links, NICs, rails and switches,
 * node groups with other NICs, periodic stalls.
 *
 * A perturbation is plain data (mm_perturb, filled by the scenario layer
 * from its `perturb:` list) that a cluster carries (mm_cluster.pt).  The
 * hardware layer applies it where the quantity lives, so that nothing above
 * it changes:
 *   - link capacities, extra latencies and failed links when the link graph
 *     is built (topo.c); routing steps around a failed spine link (the next
 *     live spine, as a subnet manager re-routes), so its lost capacity shows
 *     up as contention on the others;
 *   - the pace of each GPU (mm_gpu_pace): a compute op of a simulated rank
 *     takes its nominal time x the largest multiplier over the rank's GPUs
 *     (TP and CP peers are synchronous, so the group runs at its slowest
 *     member's pace);
 *   - HBM capacity per GPU, for the OOM verdict;
 *   - periodic stalls (mm_perturb_stall_s).
 * Not for: reading YAML (scenario/perturb.c), checking ids against the cluster
 * (mm_perturb_check does the arithmetic; the scenario layer names the key). */
#ifndef MM_PERTURB_H
#define MM_PERTURB_H

#include <stdbool.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "util/err.h"

#define MM_PERTURB_MAX 16 /* entries of a scenario's perturb list (an input bound) */
#define MM_PERTURB_IDS 64 /* ids per selector list */

typedef enum {
    MM_PT_SLOW_GPU,   /* compute slowdown factor for chosen GPUs */
    MM_PT_JITTER,     /* per-op lognormal noise with a coefficient of variation */
    MM_PT_HBM,        /* HBM bandwidth and/or capacity factor */
    MM_PT_NIC,        /* NICs of chosen nodes: bandwidth factor, extra latency */
    MM_PT_RAIL,       /* NIC index k of every node (and a rail fabric's rail-k leaves' uplinks) */
    MM_PT_SWITCH,     /* leaf or spine switches: every link they terminate */
    MM_PT_LINK,       /* one leaf-spine cable (both directions) */
    MM_PT_NODE_GROUP, /* a topology node group's NIC rate */
    MM_PT_STALL,      /* every N iterations, T seconds on every rank */
    MM_PT_COUNT
} mm_perturb_kind;

/* "slow_gpu", "jitter", "hbm", "nic", "rail", "switch", "link", "node_group", "stall" */
extern const char *const mm_perturb_kind_names[];

typedef struct mm_perturb_entry {
    int kind; /* mm_perturb_kind */
    /* GPU selection (slow_gpu, jitter, hbm): the union of gpus, the GPUs of
     * nodes, and a random `fraction` of all GPUs (drawn with the seed and
     * the entry's index); none given: every GPU. */
    int n_gpus, gpus[MM_PERTURB_IDS];
    int n_nodes, nodes[MM_PERTURB_IDS]; /* also nic: the nodes (none: all) */
    double fraction;
    /* nic: NIC indices in the node (none: all); rail: the rails */
    int n_nics, nics[MM_PERTURB_IDS];
    /* switch: leaves and spines; link: one leaf and one spine */
    int n_leaves, leaves[MM_PERTURB_IDS];
    int n_spines, spines[MM_PERTURB_IDS];
    double factor;     /* slow_gpu: time x factor; network kinds: bandwidth x factor */
    double latency_s;  /* network kinds: extra latency per link crossed */
    double latency_us; /* the same as written (canonical text) */
    bool failed;       /* switch (spines) and link: carries nothing */
    double cv;         /* jitter: coefficient of variation of the lognormal */
    double hbm_bw;     /* hbm: bandwidth factor (1: unchanged) */
    double hbm_cap;    /* hbm: capacity factor (1: unchanged) */
    char group[32];    /* node_group: the group's name */
    double nic_gbit_s; /* node_group: new NIC line rate */
    int every;         /* stall: after every `every`-th iteration */
    double seconds;    /* stall: its length */
} mm_perturb_entry;

typedef struct mm_perturb {
    int n;
    uint64_t seed; /* the scenario's seed: fraction draws and jitter */
    /* n entries, allocated to size by whoever filled them (the scenario
     * owns its list; a cluster's copy borrows it) */
    mm_perturb_entry *e;
} mm_perturb;

struct mm_cluster;

/* Checks every entry against the cluster: ids in range, factors > 0, a
 * failed set of links that leaves every leaf a live spine.  On a problem
 * returns the entry's index and writes the offending key (e.g. "gpus",
 * "factor") and a message; returns -1 when all is well. */
int mm_perturb_check(const mm_perturb *pt, const struct mm_cluster *c, char *key, size_t key_len,
                     char *msg, size_t msg_len);

/* Per-GPU view of the perturbations, for the executor.  For GPU g:
 *   time multiplier = slow[g] x ((1 - m) x flop_scale[g] + m x mem_scale[g])
 *                     x jitter draw (mean 1, CV cv[g]),
 * where m is the share of the op's nominal time spent in memory-bound
 * kernels, flop_scale the ratio of the base GPU's peak to the node
 * group's GPU peak, mem_scale the same for HBM bandwidth divided by the hbm
 * bandwidth factor. */
typedef struct mm_gpu_pace {
    int n;                /* GPUs */
    double *slow, *flop_scale, *mem_scale, *cv;
    double *hbm_bytes;    /* capacity after group GPU and hbm factor */
    bool any_time;        /* some multiplier differs from 1 or some cv > 0 */
} mm_gpu_pace;

/* Resolves c->pt (and c's node groups) per GPU.  Returns 0 or
 * -MM_EINTERNAL when out of memory. */
int mm_gpu_pace_build(mm_gpu_pace *p, const struct mm_cluster *c, mm_err *err);
void mm_gpu_pace_free(mm_gpu_pace *p);

/* The multiplier of one op run by the GPUs gpus[0..n-1] in lockstep: the
 * largest over them.  rng (may be NULL: no jitter) is drawn once per GPU
 * with cv > 0, in the order given, so equal inputs give equal draws. */
double mm_gpu_pace_op(const mm_gpu_pace *p, const int *gpus, int n, double mem_frac, gsl_rng *rng);

/* A GSL generator for the jitter of one iteration: Mersenne Twister seeded
 * from (seed, iteration), so every iteration has its own stream and a run
 * is reproducible bit for bit.  NULL when out of memory. */
gsl_rng *mm_perturb_rng(uint64_t seed, uint64_t iteration);

/* Seconds of stall after iteration `iteration` (0-based): the sum of every
 * stall entry with (iteration + 1) % every == 0. */
double mm_perturb_stall_s(const mm_perturb *pt, int iteration);

/* The slowest NIC line rate over the cluster's nodes, bytes/s (node groups
 * included); the analytic network model's pace for rings across nodes. */
double mm_cluster_nic_bw_min(const struct mm_cluster *c);

/* NIC line rate (bytes/s) of one node: its node group's, else the base. */
double mm_cluster_node_nic_bw(const struct mm_cluster *c, int node);

/* Index of the node group holding `node`, or -1. */
int mm_cluster_group_of(const struct mm_cluster *c, int node);

#endif
