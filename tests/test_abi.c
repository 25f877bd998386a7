/* test_abi.c - a program that sees only the installed header (mmsim.h) and
 * links only the shared library libmmsim.so.1, as an embedding program or
 * a binding does: the API is enough to run a scenario and read it back,
 * and the internals are not exported (dlsym cannot find them). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mmsim.h"
#include "mmsim_config.h"

START_TEST(shared_library_runs)
{
    ck_assert_str_eq(mm_version(), MMSIM_VERSION);
    const char *sets[] = {"iterations=1"};
    mmsim *h = mmsim_open("tests/data/api-scenario.yaml", sets, 1);
    ck_assert_int_eq(mmsim_status(h), MMSIM_OK);
    ck_assert_int_eq(mmsim_run(h), 0);
    double t = mmsim_metric(h, "iteration_time_s");
    ck_assert(t > 0);
    /* tokens per second is what the iteration trains over its time:
     * global batch 16 x seq 2048 tokens */
    ck_assert_double_eq_tol(mmsim_metric(h, "tokens_per_s"), 16 * 2048 / t, 1e-6 * 16 * 2048 / t);
    const char *json = mmsim_run_json(h);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_nonnull(strstr(json, "\"iteration_time_s\": "));
    mmsim_close(h);
}
END_TEST

START_TEST(internals_hidden)
{
    ck_assert_ptr_nonnull(dlsym(RTLD_DEFAULT, "mmsim_open"));
    ck_assert_ptr_null(dlsym(RTLD_DEFAULT, "mm_sim_prepare"));
    ck_assert_ptr_null(dlsym(RTLD_DEFAULT, "mm_scenario_load"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("abi");
    TCase *tc = tcase_create("abi");
    tcase_add_test(tc, shared_library_runs);
    tcase_add_test(tc, internals_hidden);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
