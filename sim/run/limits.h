/* limits.h (run) - the size bounds of util/limits.h applied to a prepared
 * scenario.  mmsim run, sweep points and plans call it after
 * mm_sim_prepare / mm_sim_load, before anything is simulated.
 * Not for: the bounds themselves (util/limits.h). */
#ifndef MM_RUN_LIMITS_H
#define MM_RUN_LIMITS_H

#include "run/sim.h"

/* Iterations, global batch and micro-batches per DP replica within the
 * bounds, else MM_EINPUT naming the key.  Returns 0 or -code. */
int mm_sim_check_limits(const mm_sim *sim, mm_err *err);

#endif
