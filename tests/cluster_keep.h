/* cluster_keep.h - for suites whose helper returns a loaded mm_cluster by
 * value (the tests then use that value and never free it): the helper
 * hands each loaded cluster to mm_test_keep_cluster, and the fixture
 * mm_test_free_clusters (tcase_add_checked_fixture(tc, NULL, ...)) frees
 * their kernel tables after every test, once each.  The kept copy and the
 * test's share the tables (hw/cluster.h: not copied by assignment, except
 * here, where only the kept one frees them).
 * Not for: library code, which passes clusters by pointer. */
#ifndef MM_TEST_CLUSTER_KEEP_H
#define MM_TEST_CLUSTER_KEEP_H

#include <check.h>

#include "hw/cluster.h"

enum { MM_TEST_KEEP_MAX = 64 };
static mm_kernel_tables mm_test_kept[MM_TEST_KEEP_MAX];
static int mm_test_n_kept;

static inline mm_cluster mm_test_keep_cluster(mm_cluster c)
{
    ck_assert_int_lt(mm_test_n_kept, MM_TEST_KEEP_MAX);
    mm_test_kept[mm_test_n_kept++] = c.gpu.kernels;
    return c;
}

static inline void mm_test_free_clusters(void)
{
    for (int i = 0; i < mm_test_n_kept; i++)
        mm_kernel_tables_free(&mm_test_kept[i]);
    mm_test_n_kept = 0;
}

#endif
