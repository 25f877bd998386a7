/* flow.h - flow-level network: max-min fair sharing of link capacity.
 *
 * The model of SimGrid's CM02 network model (Casanova and Marchal, "A
 * Network Model for Simulation of Grid Application", INRIA RR-2002-40; the
 * flow-level family validated by Velho and Legrand, "Accuracy Study and
 * Improvement of Network Simulation in the SimGrid Framework", SIMUTools
 * 2009): every transfer is a flow over a fixed route of links; the rates of
 * the flows are the max-min fair allocation of the links' capacities, found
 * by progressive filling in its bottleneck form (Bertsekas and Gallager,
 * "Data Networks", 2nd ed., section 6.5.2): repeatedly take the link whose
 * remaining capacity per unfrozen flow is the smallest, give that share to
 * its unfrozen flows and freeze them.  Unlike SimGrid's LV08 we apply no
 * bandwidth or latency correction factors: capacities are already the
 * effective ones NCCL reaches (topo.h), and latencies are added by the
 * collective layer.
 *
 * A route entry has a coefficient: a flow progressing at rate r loads the
 * link with coef * r (a ring channel crosses a link several times; an NVLS
 * reduction moves (1 + 1/n) bytes per byte of result).
 *
 * Rates are recomputed only when flows start or end, and only for the
 * connected component (flows linked through shared links) the change
 * touches.  The set keeps one pending engine event, at the earliest flow
 * completion, and moves it on every change.  Deterministic: flows are
 * ordered by their creation number, links by index; no pointer order.
 * Not for: routes (topo.h) or collective algorithms (coll.h). */
#ifndef MM_FLOW_H
#define MM_FLOW_H

#include <stdint.h>

#include "engine/engine.h"

/* The max-min fair rates of n_flows flows over n_links links with
 * capacities cap[]: flow f uses links lk[off[f] .. off[f+1]-1] with
 * coefficients cf[...].  Every flow must use at least one link.  Writes
 * rate[f].  Returns 0, or -1 when out of memory. */
int mm_maxmin_solve(int n_links, const double *cap, int n_flows, const uint32_t *off,
                    const int32_t *lk, const double *cf, double *rate);

typedef struct mm_flownet mm_flownet;
/* Called when a flow has moved all its bytes (from an engine event). */
typedef void (*mm_flow_done_fn)(void *ctx, uint64_t arg);

mm_flownet *mm_flownet_alloc(mm_engine *eng, int n_links, const double *cap);
void mm_flownet_free(mm_flownet *fn);

/* Adds a flow of `bytes` (> 0) over len >= 1 links.  Its rate is set by the
 * next mm_flownet_commit, which must follow before control returns to the
 * engine.  Returns the flow's id, or -1 when out of memory. */
int32_t mm_flownet_add(mm_flownet *fn, const int *links, const double *coef, int len,
                       double bytes, mm_flow_done_fn done, void *ctx, uint64_t arg);

/* Recomputes the rates of the components touched since the last commit and
 * reschedules the next completion.  Returns 0, or -1 when out of memory. */
int mm_flownet_commit(mm_flownet *fn);

double mm_flownet_rate(const mm_flownet *fn, int32_t id); /* bytes/s; 0 when done */
uint32_t mm_flownet_active(const mm_flownet *fn);
uint64_t mm_flownet_solves(const mm_flownet *fn); /* component recomputations */

#endif
