/* coll_sweep.h - one collective over a message-size sweep on a cluster, as
 * `mmsim collective` tabulates it (nccl-tests' -b/-e/-f sweep): each size
 * started on an otherwise idle network after the previous one ended, its
 * time, algorithm bandwidth, bus bandwidth (nccl-tests' bus factor) and the
 * algorithm the model chose.  The command line's table and JSON and the C
 * API's mmsim_collective_json print these rows: one source for the numbers.
 * Not for: printing (cli/cmd_collective.c, api/report.c). */
#ifndef MM_HW_COLL_SWEEP_H
#define MM_HW_COLL_SWEEP_H

#include "hw/cluster.h"
#include "hw/coll.h"
#include "hw/net.h"
#include "util/err.h"

/* Sizes in one sweep, at most (nccl-tests' -f 2 from 1 B to 1 TiB is 41). */
#define MM_COLL_SWEEP_MAX_ROWS 100000

typedef struct mm_coll_sweep_req {
    mm_coll_kind op;
    mm_coll_algo algo;  /* MM_ALGO_AUTO: the model's choice per size */
    mm_net_model model; /* flow or analytic */
    int gpus;           /* the first `gpus` GPUs; send/recv: GPU 0 and the
                         * first GPU of the last node (2) */
    int comm_ranks;     /* send/recv: the communicator's size (0: 2) */
    double lo, hi, factor; /* bytes: lo, lo*factor, ... up to hi */
} mm_coll_sweep_req;

typedef struct mm_coll_row {
    double bytes, time_s, algbw_gbps, busbw_gbps;
    const char *algo; /* "ring", "tree", ...; "direct" for all-to-all and send/recv */
} mm_coll_row;

/* Checks the request against the cluster: MM_EINPUT naming the argument
 * (key "gpus", "comm_ranks", "min", "factor"), else 0. */
int mm_coll_sweep_check(const mm_cluster *c, const mm_coll_sweep_req *q, mm_err *err);

/* Runs the sweep: *rows (malloc'ed, *n of them; free()) or -code. */
int mm_coll_sweep(const mm_cluster *c, const mm_coll_sweep_req *q, mm_coll_row **rows, int *n, mm_err *err);

#endif
