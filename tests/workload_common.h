/* workload_common.h - what the workload suites (test_workload.c,
 * test_batch.c) share: a batch of samples drawn from a mixture.
 * Static inline, so a suite that does not call one does not warn.
 * Not for: assertions of their own. */
#ifndef MM_TEST_WORKLOAD_COMMON_H
#define MM_TEST_WORKLOAD_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "workload/batch.h"
#include "workload/workload.h"

static inline mm_sample *draw(const mm_mixture *mix, uint64_t seed, int64_t it, int n)
{
    mm_sample *s = malloc((size_t)n * sizeof *s);
    ck_assert_ptr_nonnull(s);
    mm_err err;
    ck_assert_int_eq(mm_mixture_draw(mix, seed, it, n, s, &err), 0);
    return s;
}

#endif
