/* wan.h - collectives across sites joined by a wide-area link (the
 * topology's `sites:`, cluster.h): the time of an all-reduce or an
 * all-gather among the sites, each site one member that reaches the next
 * through its own uplink.
 * Not for: traffic inside a site (net.h, coll.h: the flow and analytic
 * models of the NICs and switches), or when a sync happens and what it
 * hides (cost/outersync.h). */
#ifndef MM_WAN_H
#define MM_WAN_H

#include "hw/cluster.h"

/* Seconds of a ring all-reduce of `bytes` (each site's buffer) among the
 * cluster's c->sites sites: 2 (S - 1) steps, each moving bytes / S over a
 * site's uplink and paying the one-way latency, so
 *   2 (S - 1) / S x bytes / wan_bw + 2 (S - 1) x wan_latency
 * (the ring's alpha-beta cost: Thakur, Rabenseifner and Gropp,
 * "Optimization of Collective Communication Operations in MPICH", IJHPCA
 * 19(1), 2005, section 4.4).  Two sites: bytes / wan_bw + 2 latency.
 * 0 without sites. */
double mm_wan_allreduce_s(const mm_cluster *c, double bytes);

/* Seconds of a ring all-gather of `bytes` from each site (each ends with
 * all S buffers): S - 1 steps of bytes each,
 *   (S - 1) x bytes / wan_bw + (S - 1) x wan_latency
 * (the same paper's ring all-gather).  What a lossy compressor's buffers
 * need, since they cannot be summed on the way (hw/compress.h). */
double mm_wan_allgather_s(const mm_cluster *c, double bytes);

/* Seconds of one transfer of `bytes` from a site to the next over its
 * uplink: bytes / wan_bw + wan_latency (the same alpha-beta link; a
 * pipeline's activations or their gradients crossing the WAN).  0 without
 * sites. */
double mm_wan_p2p_s(const mm_cluster *c, double bytes);

#endif
