/* exec.h - executes an op graph (parallel/graph.h) on the event engine
 * against the hardware models.
 *
 * Each simulated rank has in-order streams; an op starts when it heads its
 * stream and its dependencies are done; collective members start together
 * when the last one arrives and finish when the network model (hw/coll.h:
 * `analytic` alpha-beta, or `flow` with max-min sharing between everything
 * in flight) says the collective is done.  Not for: building graphs or
 * computing metrics (sim.c). */
#ifndef MM_EXEC_H
#define MM_EXEC_H

#include "engine/engine.h"
#include "hw/cluster.h"
#include "parallel/graph.h"

typedef enum { MM_EXEC_NET_ANALYTIC, MM_EXEC_NET_FLOW } mm_exec_net;

/* Runs the graph starting at the engine's current time.  On return
 * start[i] and end[i] hold every op's times (ns) and *t_end the time the last
 * op finished.  Returns 0, or -MM_EINTERNAL (err filled) when the graph
 * deadlocks (some op never ran) or memory runs out. */
int mm_exec_run(mm_engine *eng, const mm_graph *g, const mm_cluster *c,
                mm_exec_net net, mm_time *start, mm_time *end, mm_time *t_end,
                mm_err *err);

#endif
