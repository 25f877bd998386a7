/* net.h - time of a collective or a point-to-point transfer.
 *
 * The foundation ships the `analytic` model: alpha-beta per hierarchy level
 * (Hockney's model; Thakur, Rabenseifner and Gropp, "Optimization of
 * Collective Communication Operations in MPICH", IJHPCA 2005, for the ring
 * step counts), with the bandwidth term taken at nccl-tests' measured bus
 * bandwidth so that a large all-reduce on one node or across nodes reproduces
 * the vendor busbw figures.  No contention: two collectives on the same links
 * each get the full bandwidth.  Not for: flows, routing or max-min sharing
 * (the network issue adds the `flow` model behind this interface). */
#ifndef MM_NET_H
#define MM_NET_H

#include "hw/cluster.h"

typedef enum {
    MM_COLL_ALLREDUCE, MM_COLL_ALLGATHER, MM_COLL_REDUCESCATTER,
    MM_COLL_ALLTOALL, MM_COLL_BROADCAST, MM_COLL_SENDRECV, MM_COLL_COUNT
} mm_coll_kind;

extern const char *const mm_coll_names[]; /* "allreduce", ... */

/* nccl-tests' bus-bandwidth factor for a group of n (doc/PERFORMANCE.md):
 * all-reduce 2(n-1)/n, all-gather / reduce-scatter / all-to-all (n-1)/n,
 * broadcast and send/recv 1. */
double mm_coll_bus_factor(mm_coll_kind kind, int n);

/* Seconds for a collective of `bytes` (nccl-tests' S: the full buffer, the
 * gathered output for all-gather, the input for reduce-scatter) over the
 * group of global GPU ids gpus[0..n-1].  For MM_COLL_SENDRECV, n is 2 and
 * gpus = {src, dst}.  A group of one costs nothing. */
double mm_net_analytic_time(const mm_cluster *c, mm_coll_kind kind,
                            const int *gpus, int n, double bytes);

#endif
