/* loadrun.c - the data loader of a run (loadrun.h): per-iteration,
 * per-replica loader costs gathered as iterate.c draws the samples, then
 * the queue of exec/dataload.c run against the simulated steps.
 * Not for: the per-sample costs (cost/loader.c) or the queue itself. */
#include "exec/loadrun.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost/loader.h"
#include "exec/dataload.h"

int mm_loader_acc_init(const mm_sim *sim, mm_loader_acc *a)
{
    memset(a, 0, sizeof *a);
    if (sim->sc.data.workers < 0)
        return 0;
    int n = sim->sc.iterations, R = sim->sc.parallel.llm.lay.dp;
    size_t cells = (size_t)n * R;
    a->m = calloc((size_t)n, sizeof *a->m);
    a->cpu = calloc(cells, sizeof *a->cpu);
    a->dev = calloc(cells, sizeof *a->dev);
    a->h2d = calloc(cells, sizeof *a->h2d);
    if (!a->m || !a->cpu || !a->dev || !a->h2d) {
        mm_loader_acc_free(a);
        return -1;
    }
    a->iters = n;
    a->ranks = R;
    return 0;
}

void mm_loader_acc_free(mm_loader_acc *a)
{
    free(a->m);
    free(a->cpu);
    free(a->dev);
    free(a->h2d);
    memset(a, 0, sizeof *a);
}

void mm_loader_acc_iter(const mm_sim *sim, mm_loader_acc *a, int it, const mm_sample *samples, int B, int m)
{
    if (it < 0 || it >= a->iters)
        return;
    a->m[it] = m > 0 ? m : 1;
    mm_sample one;
    bool tokenize = mm_sim_loader_fixed_sample(sim, &one) || samples;
    for (int r = 0; r < a->ranks; r++) {
        mm_loader_cost c = {0};
        for (int k = r; k < B; k += a->ranks)
            mm_sim_loader_sample(sim, samples ? &samples[k] : &one, tokenize, &c);
        size_t at = (size_t)it * a->ranks + r;
        a->cpu[at] = c.cpu_s;
        a->dev[at] = c.dev_s;
        a->h2d[at] = mm_sim_loader_h2d_s(sim, c.h2d_bytes);
    }
}

int mm_loader_acc_waits(const mm_sim *sim, const mm_loader_acc *a, const double *step_s, double *wait_s,
                        double *h2d_s, double *cpu_s, int *needed, double *short_s)
{
    int W = sim->sc.data.workers;
    /* recv_s NULL: the frameworks' loaders hand tensors, which cross to
     * the training process in shared memory (cost/loader.h) */
    mm_loader_queue q = {.workers = W, .prefetch = sim->sc.data.prefetch, .iters = a->iters, .ranks = a->ranks,
                         .m = a->m, .cpu_s = a->cpu, .dev_s = a->dev, .step_s = step_s, .recv_s = NULL,
                         .slowdown = mm_sim_loader_slowdown(sim, W)};
    if (mm_loader_waits(&q, wait_s))
        return -1;
    for (int i = 0; i < a->iters; i++) {
        double h = 0, c = 0;
        for (int r = 0; r < a->ranks; r++) {
            h = fmax(h, a->h2d[(size_t)i * a->ranks + r]);
            c = fmax(c, a->cpu[(size_t)i * a->ranks + r]);
        }
        h2d_s[i] = h;
        cpu_s[i] = c;
    }
    *needed = mm_loader_workers_needed(&q);
    /* the steady state: each iteration's busiest loader (the step is
     * synchronous, and the prefetch queue is too short to carry one GPU's
     * heavy iteration into another's light one), averaged, against the
     * mean step with its copies (the training process copies, then steps) */
    double step = 0, h2d = 0, cpu = 0, dev = 0;
    for (int i = 0; i < a->iters; i++) {
        double d = 0;
        for (int r = 0; r < a->ranks; r++)
            d = fmax(d, a->dev[(size_t)i * a->ranks + r]);
        step += step_s[i] / a->iters, h2d += h2d_s[i] / a->iters, cpu += cpu_s[i] / a->iters, dev += d / a->iters;
    }
    *short_s = mm_sim_loader_short_s(sim, W, cpu, dev, step + h2d);
    return 0;
}
