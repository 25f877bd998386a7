/* critpath.h - which ops an executed iteration waited on.
 *
 * Walks back from the op that finished last along the dependency that
 * determined each start time: the latest-ending of the op's dependencies
 * and its stream predecessor; for a collective, the member that arrived
 * last, and then what that member waited for.  The ops met on the way,
 * with their durations, partition the iteration (plus any waiting the
 * executor could not attribute to an op, reported as "wait").
 * Not for: what-if questions (perturbations change the inputs; this only
 * reads the result). */
#ifndef MM_CRITPATH_H
#define MM_CRITPATH_H

#include "engine/engine.h"
#include "parallel/graph.h"

typedef struct mm_crit_entry {
    int rank;        /* simulated rank, -1 for "wait" */
    int stage;       /* pipeline (virtual) stage of the ops, -1 if mixed/none */
    char what[24];   /* op category: fwd, bwd, wgrad, optimizer, tp, pp, dp,
                        cp, ep, or wait; an encoder's ops are prefixed with
                        its module, e.g. "vision:fwd" */
    double seconds;  /* time on the critical path */
    double share;    /* seconds / iteration time */
    int ops;         /* ops of this kind and rank on the path */
} mm_crit_entry;

typedef struct mm_critpath {
    int n;
    mm_crit_entry *e; /* sorted by seconds, largest first */
    int path_ops;     /* ops on the path */
} mm_critpath;

/* Computes the critical path of one executed graph (start/end per op, the
 * iteration from t0 to t1).  Returns 0 or -1 when out of memory. */
int mm_critpath_compute(const mm_graph *g, const mm_time *start, const mm_time *end, mm_time t0,
                        mm_time t1, mm_critpath *cp);
void mm_critpath_free(mm_critpath *cp);

#endif
