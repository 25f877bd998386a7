/* trace.c - writing mm_sim_timeline as Chrome trace-event JSON
 * ("Trace Event Format", Google, 2016; timestamps in microseconds): slices,
 * flow arrows and counter tracks (trace.h).
 * Known limits: the in-flight count takes a micro-batch as in flight on a
 * rank from its first forward op to its last backward op there, so with
 * interleaving (vpp > 1) it counts a micro-batch whose chunks are only
 * partly done as whole; the memory counter's activations follow that
 * count linearly (the stage's peak over its most in flight), not each
 * micro-batch's own size. */
#include "store/trace.h"
#include "exec/run.h"
#include "cost/costs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Threads: the rank's streams, its outgoing pipeline transfers, its
 * host thread issuing the compute stream's launches, and its fill stream
 * (named only in a graph that has fill ops). */
static const char *const stream_names[] = {"compute", "dp", "comm", "pp", "host", "fill"};
enum { N_THREADS = 5, TID_HOST = 4, TID_PP = 3, TID_FILL = 5 };

static int tid_of(const mm_op *op)
{
    return op->stream == MM_STREAM_NONE ? TID_PP : op->stream == MM_STREAM_FILL ? TID_FILL : op->stream;
}

static double us(const mm_sim_timeline *tl, mm_time t)
{
    return (double)(t - tl->t0) * 1e-3;
}

static const char *module_of(const mm_graph *g, const mm_op *op)
{
    return op->module < g->n_modules ? g->module_names[op->module] : "llm";
}

static void write_meta(FILE *f, const mm_graph *g)
{
    bool fill = false;
    for (uint32_t i = 0; i < g->n_ops && !fill; i++)
        fill = g->ops[i].stream == MM_STREAM_FILL;
    for (int r = 0; r < g->n_ranks; r++)
        for (int t = 0; t < N_THREADS + fill; t++) {
            if (t == 0)
                fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}}",
                        r ? ",\n" : "", r, r);
            fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                    r, t, stream_names[t]);
        }
}

static void write_slices(FILE *f, const mm_sim_timeline *tl)
{
    const mm_graph *g = &tl->graph;
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
        const char *module = module_of(g, op);
        fprintf(f, ",\n{\"name\":\"%s%s%s\",\"cat\":\"%s,%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                   "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"module\":\"%s\",\"stage\":%d,\"mb\":%d,\"layer\":%d}}",
                op->module ? module : "", op->module ? " " : "", name, cat, module, op->rank, tid_of(op),
                us(tl, tl->start[i]), us(tl, tl->end[i]) - us(tl, tl->start[i]), module, op->stage, op->mb,
                op->layer);
        /* the host's slice: from when it began issuing the op, for host_s */
        if (tl->host_start && tl->host_start[i] >= 0 && op->host_s > 0)
            fprintf(f, ",\n{\"name\":\"launch %s%s%s\",\"cat\":\"host,%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                       "\"ts\":%.3f,\"dur\":%.3f}",
                    op->module ? module : "", op->module ? " " : "", name, module, op->rank, TID_HOST,
                    us(tl, tl->host_start[i]), (double)op->host_s * 1e6);
    }
}

/* One arrow per dependency between ranks (pipeline transfers) or between
 * modules (encoder output into the LLM): from the producer's slice to the
 * consumer's, bound to the slices that enclose the two timestamps. */
static void write_flows(FILE *f, const mm_sim_timeline *tl)
{
    const mm_graph *g = &tl->graph;
    unsigned long id = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *a = &g->ops[i];
        for (uint32_t k = 0; k < a->nsucc; k++) {
            uint32_t j = g->succ[a->succ_off + k];
            const mm_op *b = &g->ops[j];
            if (a->rank == b->rank && a->module == b->module)
                continue;
            const char *what = a->module != b->module ? "encoder to llm" : "pp send to recv";
            id++;
            fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%lu,\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
                    what, id, a->rank, tid_of(a), us(tl, tl->start[i]));
            fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%lu,\"pid\":%d,"
                       "\"tid\":%d,\"ts\":%.3f}",
                    what, id, b->rank, tid_of(b), us(tl, tl->start[j]));
        }
    }
}

/* A +1 / -1 step of a rank's in-flight count. */
typedef struct step {
    mm_time t;
    int rank, delta;
} step;

static int cmp_step(const void *x, const void *y)
{
    const step *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->delta - b->delta; /* a release before an arrival at the same time */
}

/* Counter tracks: LLM micro-batches in flight per rank, and the memory
 * they imply (trace.h).  Returns 0 or -1 (out of memory). */
static int write_counters(FILE *f, const mm_sim_timeline *tl, const mm_trace_memory *mem)
{
    const mm_graph *g = &tl->graph;
    int max_mb = -1;
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].module == 0 && g->ops[i].mb > max_mb)
            max_mb = g->ops[i].mb;
    if (max_mb < 0)
        return 0;
    size_t n = (size_t)g->n_ranks * (size_t)(max_mb + 1);
    mm_time *first = malloc(n * sizeof *first), *last = malloc(n * sizeof *last);
    int *stage = malloc((size_t)g->n_ranks * sizeof *stage), *most = calloc((size_t)g->n_ranks, sizeof *most);
    step *st = malloc(2 * n * sizeof *st);
    int rc = first && last && stage && most && st ? 0 : -1;
    for (size_t k = 0; !rc && k < n; k++)
        first[k] = last[k] = -1;
    for (int r = 0; !rc && r < g->n_ranks; r++)
        stage[r] = -1;
    for (uint32_t i = 0; !rc && i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        if (op->module != 0 || op->mb < 0 || (op->cat != MM_CAT_FWD && op->cat != MM_CAT_BWD))
            continue;
        size_t k = (size_t)op->rank * (size_t)(max_mb + 1) + (size_t)op->mb;
        stage[op->rank] = op->stage;
        if (op->cat == MM_CAT_FWD && (first[k] < 0 || tl->start[i] < first[k]))
            first[k] = tl->start[i];
        if (op->cat == MM_CAT_BWD && tl->end[i] > last[k])
            last[k] = tl->end[i];
    }
    size_t ns = 0;
    for (size_t k = 0; !rc && k < n; k++)
        if (first[k] >= 0 && last[k] >= first[k]) {
            int r = (int)(k / (size_t)(max_mb + 1));
            st[ns++] = (step){first[k], r, +1};
            st[ns++] = (step){last[k], r, -1};
        }
    if (!rc)
        qsort(st, ns, sizeof *st, cmp_step);
    int level = 0;
    for (size_t k = 0; !rc && k < ns; k++) { /* the most in flight on each rank */
        if (k == 0 || st[k].rank != st[k - 1].rank)
            level = 0;
        level += st[k].delta;
        if (level > most[st[k].rank])
            most[st[k].rank] = level;
    }
    level = 0;
    for (size_t k = 0; !rc && k < ns; k++) {
        if (k == 0 || st[k].rank != st[k - 1].rank)
            level = 0;
        level += st[k].delta;
        if (k + 1 < ns && st[k + 1].rank == st[k].rank && st[k + 1].t == st[k].t)
            continue; /* one sample per instant */
        int r = st[k].rank;
        fprintf(f, ",\n{\"name\":\"micro-batches in flight\",\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,"
                   "\"args\":{\"llm\":%d}}",
                r, us(tl, st[k].t), level);
        /* the rank's physical stage: it holds virtual stages c*pp + s */
        int s = mem && mem->n_stages > 0 && stage[r] >= 0 ? stage[r] % mem->n_stages : -1;
        if (s >= 0) {
            double states = mem->states_gib[s], rest = mem->peak_gib[s] - states;
            /* at the most in flight exactly the peak (no rounding of rest * 1) */
            double act = level == most[r] ? rest : most[r] > 0 ? rest * level / most[r] : 0;
            fprintf(f, ",\n{\"name\":\"llm memory (GiB)\",\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,"
                       "\"args\":{\"states\":%.17g,\"activations\":%.17g}}",
                    r, us(tl, st[k].t), states, act);
        }
    }
    free(most);
    free(first);
    free(last);
    free(stage);
    free(st);
    return rc;
}

void mm_trace_memory_free(mm_trace_memory *mem)
{
    free(mem->states_gib);
    free(mem->peak_gib);
    memset(mem, 0, sizeof *mem);
}

int mm_trace_memory_of(const mm_sim *sim, const mm_metrics *m, mm_trace_memory *mem, mm_err *err)
{
    memset(mem, 0, sizeof *mem);
    mm_sim_memory sm;
    int rc = mm_sim_stage_memory(sim, &sm, err);
    if (rc)
        return rc;
    int n = sm.n_stages < m->n_stages ? sm.n_stages : m->n_stages;
    mem->states_gib = malloc((size_t)(n > 0 ? n : 1) * sizeof *mem->states_gib);
    mem->peak_gib = malloc((size_t)(n > 0 ? n : 1) * sizeof *mem->peak_gib);
    if (!mem->states_gib || !mem->peak_gib) {
        mm_sim_memory_free(&sm);
        mm_trace_memory_free(mem);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    rc = n > 0 ? 0 : 1;
    for (int k = 0; k < n; k++) {
        mem->states_gib[k] = sm.states_gib[k];
        mem->peak_gib[k] = m->stages[k].memory_gib;
        if (!isfinite(mem->states_gib[k]) || !isfinite(mem->peak_gib[k]))
            rc = 1; /* outside the memory model */
    }
    mem->n_stages = n;
    mm_sim_memory_free(&sm);
    if (rc)
        mm_trace_memory_free(mem);
    return rc;
}

int mm_trace_write(const char *path, const mm_sim_timeline *tl, const mm_trace_memory *mem, mm_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return mm_err_set(err, MM_EINPUT, path, 0, "--trace", "cannot write: %s", strerror(errno));
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    write_meta(f, &tl->graph);
    write_slices(f, tl);
    write_flows(f, tl);
    int rc = write_counters(f, tl, mem);
    fputs("\n]}\n", f);
    if (ferror(f) | fclose(f))
        return mm_err_set(err, MM_EINPUT, path, 0, "--trace", "write failed");
    if (rc)
        return mm_err_set(err, MM_EINTERNAL, path, 0, "--trace", "out of memory");
    return 0;
}
