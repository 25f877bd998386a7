/* net_common.h - what the cluster-model suites (test_net.c, test_coll.c)
 * share: loading a topology (kept until the fixture frees it) and one
 * collective's time under either network model.
 * Static inline, so a suite that does not call one does not warn.
 * Not for: assertions of their own. */
#ifndef MM_TEST_NET_COMMON_H
#define MM_TEST_NET_COMMON_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/coll.h"
#include "hw/flow.h"
#include "hw/net.h"
#include "exec/exec.h"

#include "cluster_keep.h"
#include "mmsim_exe.h"

static const double GiB = 1024.0 * 1024 * 1024;

static inline mm_cluster load(const char *path, int nodes)
{
    mm_cluster c;
    mm_err err;
    int rc = mm_cluster_load(path, nodes, &c, &err);
    ck_assert_msg(rc == 0, "%s:%d %s: %s", err.file, err.line, err.key, err.msg);
    return mm_test_keep_cluster(c);
}

/* Seconds for one collective over the first n GPUs (or gpus[]). */
static inline double coll_time(const mm_cluster *c, mm_net_model model, mm_coll_kind kind, mm_coll_algo algo,
                        const int *gpus, int n, double bytes, mm_coll_algo *used)
{
    int *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < n; i++)
        g[i] = gpus ? gpus[i] : i;
    mm_coll_req req = {.kind = kind, .algo = algo, .gpus = g, .n = n, .bytes = bytes, .count = 1};
    mm_err err;
    mm_err_clear(&err);
    double t = mm_coll_time(c, model, &req, used, &err);
    ck_assert_msg(isfinite(t), "%s", err.msg);
    free(g);
    return t;
}

#endif
