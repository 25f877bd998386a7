/* trace.c - writing mm_sim_timeline as Chrome trace-event JSON
 * ("Trace Event Format", Google, 2016; timestamps in microseconds). */
#include "store/trace.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Threads: the rank's streams, then its outgoing pipeline transfers. */
static const char *const stream_names[] = {"compute", "dp", "comm", "pp"};
enum { N_THREADS = 4 };

static int tid_of(const mm_op *op)
{
    return op->stream == MM_STREAM_NONE ? MM_STREAM_COUNT : op->stream;
}

int mm_trace_write(const char *path, const mm_sim_timeline *tl, mm_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return mm_err_set(err, MM_EINPUT, path, 0, "--trace", "cannot write: %s", strerror(errno));
    const mm_graph *g = &tl->graph;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    int first = 1;
    for (int r = 0; r < g->n_ranks; r++)
        for (int t = 0; t < N_THREADS; t++) {
            if (t == 0)
                fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}}",
                        first ? "" : ",\n", r, r);
            first = 0;
            fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                    r, t, stream_names[t]);
        }
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        char name[96];
        const char *cat = mm_op_cat_names[op->cat];
        if (op->mb >= 0 && op->layer >= 0)
            snprintf(name, sizeof name, "%s s%d L%d mb%d", cat, op->stage, op->layer, op->mb);
        else if (op->mb >= 0)
            snprintf(name, sizeof name, "%s s%d mb%d to rank %d", cat, op->stage, op->mb, op->peer);
        else
            snprintf(name, sizeof name, "%s s%d", cat, op->stage);
        double ts = (double)(tl->start[i] - tl->t0) * 1e-3;
        double dur = (double)(tl->end[i] - tl->start[i]) * 1e-3;
        const char *module = op->module < g->n_modules ? g->module_names[op->module] : "llm";
        fprintf(f, ",\n{\"name\":\"%s%s%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                   "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"module\":\"%s\",\"stage\":%d,\"mb\":%d,\"layer\":%d}}",
                op->module ? module : "", op->module ? " " : "", name, cat, op->rank, tid_of(op), ts, dur, module,
                op->stage, op->mb, op->layer);
    }
    fputs("\n]}\n", f);
    if (ferror(f) | fclose(f))
        return mm_err_set(err, MM_EINPUT, path, 0, "--trace", "write failed");
    return 0;
}
