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
 * finished) and, when the caller passes the run's memory (mm_trace_memory_of),
 * the memory that implies on one GPU of the rank's stage: the model states
 * (weights, gradients, optimizer) and on top of them the rest of the
 * stage's peak (activations, working set, an encoder sharing the GPU),
 * in proportion to the micro-batches in flight over the most the rank
 * holds at once, so the counter's peak is the stage memory `mmsim run`
 * reports (the cost bridge's, cost/costs.h) and it falls to the states
 * when nothing is in flight.
 * Not for: reading traces back. */
#ifndef MM_TRACE_H
#define MM_TRACE_H

#include "scenario/sim.h"
#include "exec/metrics.h"
#include "exec/run.h"

/* Per LLM pipeline stage, on one GPU of the stage: GiB of model states and
 * the stage's peak memory, states included. */
typedef struct mm_trace_memory {
    int n_stages;
    double *states_gib; /* the cost bridge's (mm_sim_memory.states_gib) (owned) */
    double *peak_gib;   /* the run's: m->stages[k].memory_gib (owned) */
} mm_trace_memory;

/* The memory counter's figures for a run of sim that gave metrics m.
 * Returns 0; 1 when the layout is outside the memory model (no counter:
 * *mem is then empty); or -code (out of memory) with err set.  Free with
 * mm_trace_memory_free. */
int mm_trace_memory_of(const mm_sim *sim, const mm_metrics *m, mm_trace_memory *mem, mm_err *err);
void mm_trace_memory_free(mm_trace_memory *mem);

/* Writes the timeline to `path` (replacing it); mem may be NULL (no memory
 * counter).  Errors (cannot write, out of memory) are MM_EINPUT naming the
 * path, or MM_EINTERNAL. */
int mm_trace_write(const char *path, const mm_sim_timeline *tl, const mm_trace_memory *mem, mm_err *err);

#endif
