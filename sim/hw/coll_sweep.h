/* coll_sweep.h - one collective over a message-size sweep on a cluster, as
 * `mmsim collective` runs it with nccl-tests' flags (src/common.cu of
 * NVIDIA/nccl-tests): for each data type, each reduction operator (for the
 * reducing collectives) and each size, the size and count as nccl-tests
 * sets them up, -n back-to-back operations timed together on an otherwise
 * idle network, and the time per operation, algorithm bandwidth, bus
 * bandwidth (nccl-tests' bus factor) and the algorithm the model chose.
 * The command line's table and JSON and the C API's mmsim_collective_json
 * print these rows: one source for the numbers.
 * Not for: printing (cli/cmd_collective.c, api/report.c). */
#ifndef MM_HW_COLL_SWEEP_H
#define MM_HW_COLL_SWEEP_H

#include <stdbool.h>

#include "hw/cluster.h"
#include "hw/coll.h"
#include "hw/net.h"
#include "util/err.h"

/* Sizes in one sweep, at most (-i 1 from 8 to 8G would be billions). */
#define MM_COLL_SWEEP_MAX_SIZES 100000

typedef struct mm_coll_sweep_req {
    mm_coll_kind op;
    mm_coll_algo algo;  /* MM_ALGO_AUTO: the model's choice per size */
    mm_net_model model; /* flow or analytic */
    int gpus;           /* the first `gpus` GPUs (mm_coll_sweep_ranks) */
    int comm_ranks;     /* send/recv: the communicator's size (0: 2) */
    int iters;          /* -n: operations timed together (>= 1) */
    int redop;          /* mm_redop, or -1: every one (reducing collectives) */
    int dtype;          /* index in mm_coll_dtypes, or -1: every one */
    double lo, hi;      /* bytes */
    double factor, step; /* factor > 1 multiplies, else step bytes add */
} mm_coll_sweep_req;

/* One row of the sweep (nccl-tests' columns). */
typedef struct mm_coll_row {
    double bytes, count;   /* the size column (larger buffer) and elements */
    double t_us, alg, bus; /* time per operation (us), algbw and busbw (GB/s) */
    const char *type, *redop, *algo; /* algo: "direct" for all-to-all and send/recv */
    int root;              /* 0 for broadcast, else -1 */
} mm_coll_row;

/* Called for each row as soon as it is timed; nonzero stops the sweep and
 * is returned. */
typedef int (*mm_coll_row_fn)(const mm_coll_row *row, void *ctx);

/* All-reduce and reduce-scatter reduce (they have operators). */
bool mm_coll_reduces(mm_coll_kind op);

/* The GPUs of the sweep into g (q->gpus of them): the first ones; send/recv
 * from GPU 0 to the first GPU of the last node (across nodes when there
 * are several). */
void mm_coll_sweep_ranks(const mm_cluster *c, const mm_coll_sweep_req *q, int *g);

/* Checks the request against the cluster: MM_EINPUT naming the argument
 * (key "op", "gpus", "comm_ranks", "min_bytes", "factor", "iters",
 * "algo"), else 0. */
int mm_coll_sweep_check(const mm_cluster *c, const mm_coll_sweep_req *q, mm_err *err);

/* Runs the sweep, nccl-tests' order (each data type, each operator, every
 * size), calling fn for each row.  Returns 0, fn's nonzero value, or -code. */
int mm_coll_sweep(const mm_cluster *c, const mm_coll_sweep_req *q, mm_coll_row_fn fn, void *ctx, mm_err *err);

#endif
