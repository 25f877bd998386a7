/* dataload.c - the loader's queue against the step (dataload.h): a small
 * recurrence over micro-batches, run after the iterations are simulated,
 * since the loader only delays a step's start and stalls it, never
 * changes its work.  The cost is O(iterations x micro-batches x ranks).
 * Not for: per-sample costs (cost/loader.c), printing. */
#include "exec/dataload.h"

#include <math.h>
#include <stdlib.h>

/* long before the first step: the queue filled during setup */
#define MM_LOADER_PAST (-1e30)

typedef struct lq_state {
    double *free_at; /* ranks x W: when each worker is free */
    double *dec_at;  /* ranks: when each GPU's decoder is free */
    double *cons;    /* consumption time of every micro-batch so far */
} lq_state;

/* Micro-batch j (global index k) of rank r ready at: its worker starts it
 * when free and when its index was handed out. */
static double ready_at(const mm_loader_queue *q, lq_state *s, int i, int r, long k)
{
    int W = q->workers;
    double cpu = q->cpu_s[(size_t)i * q->ranks + r] * q->slowdown / q->m[i];
    double dev = q->dev_s[(size_t)i * q->ranks + r] / q->m[i];
    long ahead = (long)q->prefetch * W;
    double put = k < ahead ? MM_LOADER_PAST : s->cons[k - ahead];
    double *w = &s->free_at[(size_t)r * W + (size_t)(k % W)];
    double t = fmax(*w, put) + cpu;
    *w = t;
    if (dev > 0) {
        s->dec_at[r] = fmax(s->dec_at[r], t) + dev;
        t = s->dec_at[r];
    }
    return t;
}

/* One step with workers: returns its wait; *clock is its start, moved to
 * its end. */
static double step_wait(const mm_loader_queue *q, lq_state *s, int i, long base, double *clock)
{
    int m = q->m[i];
    double stall = 0, T = q->step_s[i], recv = 0;
    for (int r = 0; q->recv_s && r < q->ranks; r++)
        recv = fmax(recv, q->recv_s[(size_t)i * q->ranks + r] / m);
    for (int j = 0; j < m; j++) {
        double need = *clock + stall + T * j / m, ready = need;
        for (int r = 0; r < q->ranks; r++)
            ready = fmax(ready, ready_at(q, s, i, r, base + j));
        /* the training process receives it before the step goes on */
        stall += ready - need + recv;
        s->cons[base + j] = ready + recv;
    }
    *clock += stall + T;
    return stall;
}

/* Without workers the training process loads each micro-batch when it
 * needs it: the slowest rank's load, every micro-batch, exposed. */
static double serial_wait(const mm_loader_queue *q, int i)
{
    double worst = 0;
    for (int r = 0; r < q->ranks; r++)
        worst = fmax(worst, q->cpu_s[(size_t)i * q->ranks + r] + q->dev_s[(size_t)i * q->ranks + r]);
    return worst;
}

int mm_loader_waits(const mm_loader_queue *q, double *wait_s)
{
    if (q->workers <= 0) {
        for (int i = 0; i < q->iters; i++)
            wait_s[i] = serial_wait(q, i);
        return 0;
    }
    long total = 0;
    for (int i = 0; i < q->iters; i++)
        total += q->m[i];
    lq_state s = {calloc((size_t)q->ranks * q->workers, sizeof(double)), calloc((size_t)q->ranks, sizeof(double)),
                  calloc((size_t)total + 1, sizeof(double))};
    int rc = s.free_at && s.dec_at && s.cons ? 0 : -1;
    for (size_t k = 0; rc == 0 && k < (size_t)q->ranks * q->workers; k++)
        s.free_at[k] = MM_LOADER_PAST;
    for (int r = 0; rc == 0 && r < q->ranks; r++)
        s.dec_at[r] = MM_LOADER_PAST;
    double clock = 0;
    long base = 0;
    for (int i = 0; rc == 0 && i < q->iters; i++) {
        wait_s[i] = step_wait(q, &s, i, base, &clock);
        base += q->m[i];
    }
    free(s.free_at);
    free(s.dec_at);
    free(s.cons);
    return rc;
}

int mm_loader_workers_needed(const mm_loader_queue *q)
{
    double steps = 0, need = 0;
    for (int i = 0; i < q->iters; i++)
        steps += q->step_s[i];
    for (int r = 0; r < q->ranks; r++) {
        double cpu = 0, dev = 0;
        for (int i = 0; i < q->iters; i++) {
            cpu += q->cpu_s[(size_t)i * q->ranks + r];
            dev += q->dev_s[(size_t)i * q->ranks + r];
        }
        if (dev > steps)
            return -1;
        need = fmax(need, cpu / steps);
    }
    return need > 0 ? (int)ceil(need - 1e-12) : 0;
}
