/* trace.h - the Chrome trace-event JSON timeline of one simulated
 * iteration, which chrome://tracing and Perfetto (ui.perfetto.dev) open.
 * One process per simulated rank (a TP group), one thread per stream
 * (compute, dp, comm for overlapped communication, and pp for transfers the
 * rank sends); ops are complete
 * events ("ph":"X") named by pass, stage, layer and micro-batch.
 * Not for: reading traces back. */
#ifndef MM_TRACE_H
#define MM_TRACE_H

#include "run/sim.h"

/* Writes the timeline to `path` (replacing it).  Errors (cannot write)
 * are MM_EINPUT naming the path. */
int mm_trace_write(const char *path, const mm_sim_timeline *tl, mm_err *err);

#endif
