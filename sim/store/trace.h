/* trace.h - the Chrome trace-event JSON timeline of one simulated
 * iteration, which chrome://tracing and Perfetto (ui.perfetto.dev) open.
 * One process per simulated rank (a TP group), one thread per stream
 * (compute, dp, comm for overlapped communication, and pp for transfers the
 * rank sends); ops are complete events ("ph":"X") named by pass, stage,
 * layer and micro-batch, with categories "PASS,MODULE" (e.g. "fwd,vision").
 * Flow events ("ph":"s"/"f") draw every dependency that crosses ranks or
 * modules: a pipeline send to the op that receives it, an encoder's output
 * to the LLM op that consumes it.  Counter tracks ("ph":"C") per rank give
 * the LLM micro-batches in flight (first forward started, last backward not
 * finished) and, when the caller passes the memory model's figures, the
 * memory that implies: model states + in-flight x activations per
 * micro-batch.
 * Not for: reading traces back. */
#ifndef MM_TRACE_H
#define MM_TRACE_H

#include "scenario/sim.h"
#include "exec/run.h"

/* Per LLM pipeline stage: GiB of model states (weights, gradients,
 * optimizer) and of the activations one in-flight micro-batch keeps. */
typedef struct mm_trace_memory {
    int n_stages;
    const double *states_gib;
    const double *act_gib_per_mb;
} mm_trace_memory;

/* Writes the timeline to `path` (replacing it); mem may be NULL (no memory
 * counter).  Errors (cannot write, out of memory) are MM_EINPUT naming the
 * path, or MM_EINTERNAL. */
int mm_trace_write(const char *path, const mm_sim_timeline *tl, const mm_trace_memory *mem, mm_err *err);

#endif
