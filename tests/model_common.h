/* model_common.h - what the LLM model suites (test_model.c,
 * test_model_flops.c, test_model_hf.c) share: the data folders, a relative
 * difference and its assertion, loading a config that must load, and sums
 * and look-ups over per-op cost lists.
 * Static inline, so a suite that does not call one does not warn.
 * Not for: assertions of their own. */
#ifndef MM_TEST_MODEL_COMMON_H
#define MM_TEST_MODEL_COMMON_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmsim_exe.h"
#include "model/llm.h"
#include "model/mllm.h"
#include "util/doc.h"
#include "workload/workload.h"

#define DATA "tests/data/model/"

/* Hugging Face configs as published (tests/data/hf/README.md says what
 * each file is and where its keys come from). */
#define HF "tests/data/hf/"

/* ---- helpers ------------------------------------------------------------ */

static inline double rel_diff(double a, double b)
{
    double d = fabs(a - b), s = fmax(fabs(a), fabs(b));
    return s == 0.0 ? 0.0 : d / s;
}

#define ck_assert_rel(a, b, tol)                                                  \
    do {                                                                          \
        double a_ = (double)(a), b_ = (double)(b);                                \
        ck_assert_msg(rel_diff(a_, b_) <= (tol), "%s = %.17g vs %s = %.17g "      \
                      "(rel %.3g > %.3g)", #a, a_, #b, b_, rel_diff(a_, b_),      \
                      (double)(tol));                                             \
    } while (0)

static inline void load_ok(const char *path, mm_llm *m)
{
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_llm_load(path, m, &err);
    char buf[1024];
    mm_err_format(&err, buf, sizeof buf);
    ck_assert_msg(rc == 0, "loading %s: %s", path, buf);
    ck_assert_int_eq(mm_llm_validate(m, &err), 0);
}

static inline double sum_flops(const mm_op_cost *ops, int n)
{
    double f = 0.0;
    for (int i = 0; i < n; i++)
        f += ops[i].flops;
    return f;
}

static const mm_op_cost *find_op(const mm_op_cost *ops, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ops[i].name, name) == 0)
            return &ops[i];
    return NULL;
}

#endif
