/* span.h - the pre-score's time of one DP replica's pipeline under a
 * schedule whose order a closed form misses (interleaved 1F1B, ZB-2p,
 * ZB-V): each rank's order of forward, backward and weight-gradient chunk
 * passes (mm_build_schedule_steps, the order the executor runs) played on
 * the passes' times, each pass after the one before it on its rank and
 * after its input's pass on the neighbouring virtual stage plus the
 * transfer between them.
 * Not for: the event-level run (exec/), communication other than the
 * pipeline's transfers (the caller adds the passes' TP time to them). */
#ifndef MM_PLAN_SPAN_H
#define MM_PLAN_SPAN_H

#include "parallel/schedule.h"

/* One replica's pipeline: kind, p ranks, v chunks each, m micro-batches;
 * steps holds each rank's len steps (rank s's from steps + s * len); f, b,
 * w and hop hold p*v*m entries indexed vs*m + j (virtual stage vs,
 * micro-batch j): the forward, the whole backward (B + W) and its
 * weight-gradient part (w read only when the schedule splits W off), and
 * the transfer of the activation from vs to vs + 1 (its gradient back
 * takes as long; 0 where both are on one rank). */
typedef struct mm_span_in {
    mm_schedule kind;
    int p, v, m, len;
    const mm_sched_step *steps;
    const double *f, *b, *w, *hop;
} mm_span_in;

/* When the last rank's last pass ends.  Where chunks differ in time the
 * steady state is not each rank's own work: under the interleaved
 * schedule a rank waits for the slowest chunk before it in the loop round
 * the ranks, and the fill and drain of ZB-2p and ZB-V are what their W
 * passes leave uncovered.  For the interleaved schedule with equal chunks
 * and no transfer time it is (m + (p - 1) / v)(F + B), F and B a rank's
 * whole passes (Narayanan et al., SC'21, section 2.2).  Returns the span,
 * or NAN when the host is out of memory or the steps deadlock (a bad
 * order). */
double mm_span(const mm_span_in *in);

#endif
