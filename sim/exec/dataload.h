/* dataload.h - the data loader against the step: each GPU's loader workers
 * (PyTorch DataLoader semantics) turn its micro-batches into tensors ahead
 * of the training loop, and the step waits when a micro-batch it needs is
 * not ready.  Worker k mod W builds micro-batch k (DataLoader's round
 * robin); at most prefetch x W micro-batches are outstanding: the index of
 * micro-batch k is handed out when micro-batch k - prefetch x W is consumed
 * (_try_put_index after each batch returned, prefetch_factor x num_workers
 * put at the start).  The queue is full when the first step starts (the
 * iterator starts loading when it is created, before the training loop).
 * Micro-batch j of a step is consumed j/m of the way through it; a late
 * one stalls the step (every GPU: the step is synchronous) by its lateness.
 * The training process receives each micro-batch itself, one at a time
 * (recv_s): a micro-batch is consumed that long after it is ready and
 * needed, and the step waits for it, so one process for all W workers
 * caps the loader at a micro-batch per receive.
 * With W = 0 (num_workers 0) the training process loads each micro-batch
 * itself when it needs it: all of it is exposed.  NVDEC seconds queue on
 * the GPU's decoder after the worker's CPU part.
 * Not for: the per-sample costs (cost/loader.h). */
#ifndef MM_EXEC_DATALOAD_H
#define MM_EXEC_DATALOAD_H

typedef struct mm_loader_queue {
    int workers;          /* W >= 0 */
    int prefetch;         /* prefetch_factor >= 1 */
    int iters, ranks;     /* iterations; GPUs with a loader each */
    const int *m;         /* iters: micro-batches per step */
    const double *cpu_s;  /* iters x ranks: one core's CPU seconds for rank
                             r's micro-batches of iteration i, split evenly
                             over them */
    double slowdown;      /* a worker's CPU time factor on a shared node
                             (cost/loader.h mm_sim_loader_slowdown) */
    const double *dev_s;  /* iters x ranks: NVDEC seconds, likewise */
    const double *step_s; /* iters: the step without waiting for data */
    const double *recv_s; /* iters x ranks, or NULL: the training process's
                             seconds to receive rank r's micro-batches of
                             iteration i from the workers, split evenly
                             (cost/loader.h mm_loader_pipe_recv_s) */
} mm_loader_queue;

/* Seconds each iteration's step waits for its data (wait_s[iters]).
 * Returns 0, or -1 when out of memory. */
int mm_loader_waits(const mm_loader_queue *q, double *wait_s);

/* Workers per GPU that keep up with the steps on average (the prefetch
 * queue absorbs the variation between iterations): the smallest W with
 * W x sum_i step_s >= sum_i cpu_s of every rank (no slowdown: as many
 * cores as workers);
 * 0 when no CPU work, -1 when the NVDEC part alone exceeds the steps (no
 * worker count hides it). */
int mm_loader_workers_needed(const mm_loader_queue *q);

#endif
