/* loadrun.h - the data loader of a run (iterate.c's side of
 * exec/dataload.h): each iteration's samples priced per GPU as they are
 * drawn (cost/loader.h), and after the last one every step's wait.
 * Not installed; the executor's iteration loop is its only caller. */
#ifndef MM_EXEC_LOADRUN_H
#define MM_EXEC_LOADRUN_H

#include "scenario/sim.h"
#include "workload/workload.h"

typedef struct mm_loader_acc {
    int iters, ranks;     /* ranks: the LLM's DP replicas, one loader each */
    int *m;               /* iters: micro-batches per step */
    double *cpu, *dev, *h2d; /* iters x ranks: CPU s, NVDEC s, copy s */
} mm_loader_acc;

/* Allocates for the scenario's iterations (nothing when data.workers is
 * -1: a->iters 0).  Returns 0 or -1 (out of memory). */
int mm_loader_acc_init(const mm_sim *sim, mm_loader_acc *a);
void mm_loader_acc_free(mm_loader_acc *a);

/* Iteration it's B samples (NULL: `workload: text`, B sequences of
 * train.seq_len pre-tokenised tokens) in m micro-batches per replica:
 * sample k is loaded by replica k mod dp (PyTorch's DistributedSampler
 * hands rank r the indices r, r + dp, ...). */
void mm_loader_acc_iter(const mm_sim *sim, mm_loader_acc *a, int it, const mm_sample *samples, int B, int m);

/* Each step's wait (wait_s, h2d_s: iters), the most CPU seconds a GPU's
 * loader spent per step (cpu_s: iters), the workers needed
 * (mm_loader_workers_needed) for steps of step_s seconds, and the
 * steady-state shortfall (*short_s: mm_sim_loader_short_s of each
 * iteration's busiest loader, its CPU and NVDEC seconds averaged over the
 * iterations, against the mean step with its copies).
 * 0 or -1. */
int mm_loader_acc_waits(const mm_sim *sim, const mm_loader_acc *a, const double *step_s, double *wait_s,
                        double *h2d_s, double *cpu_s, int *needed, double *short_s);

#endif
