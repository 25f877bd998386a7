/* test_validate.c - the public end-to-end check: Megatron-LM's weak-scaling
 * table (Narayanan et al., SC'21, Table 1; tests/data/megatron/table1.csv).
 * Each row is simulated as scripts/validate/megatron does (its header
 * explains every choice); hardware TFLOP/s per GPU must be within 15 % of
 * the published value on every row and within 8 % on average.  Built only
 * without sanitizers: the ten largest scenarios of the suite. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/sim.h"

static double simulate(const char *name, int tp, int pp, int dp, int gpus, int B, int s, int mb)
{
    char sets[12][128];
    snprintf(sets[0], 128, "model=models/megatron-gpt-%s.json", name);
    snprintf(sets[1], 128, "cluster.topology=topologies/dgx-a100.yaml");
    snprintf(sets[2], 128, "cluster.nodes=%d", gpus / 8);
    snprintf(sets[3], 128, "parallel.llm={tp: %d, pp: %d, dp: %d}", tp, pp, dp);
    snprintf(sets[4], 128, "train.global_batch=%d", B);
    snprintf(sets[5], 128, "train.micro_batch=%d", mb);
    snprintf(sets[6], 128, "train.seq_len=%d", s);
    snprintf(sets[7], 128, "train.recompute=full");
    snprintf(sets[8], 128, "train.attention=unfused");
    snprintf(sets[9], 128, "train.zero=1");
    snprintf(sets[10], 128, "iterations=1");
    snprintf(sets[11], 128, "network=analytic");
    const char *p[12];
    for (int i = 0; i < 12; i++)
        p[i] = sets[i];
    static mm_scenario sc;
    static mm_sim sim;
    mm_err err;
    mm_scenario_free(&sc); /* the previous load of this static (no-op when none) */
    ck_assert_msg(mm_scenario_load(&sc, NULL, p, 12, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
    mm_metrics m;
    ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
    double hw = m.oom ? NAN : m.hw_tflops_per_gpu;
    mm_metrics_free(&m);
    return hw;
}

START_TEST(megatron_weak_scaling)
{
    FILE *f = fopen("tests/data/megatron/table1.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    double sum = 0, worst = 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char model[16];
        double pb, pub;
        int h, l, tp, pp, dp, gpus, B, s, V;
        ck_assert_int_eq(sscanf(line, "%15[^,],%lf,%d,%d,%d,%d,%d,%d,%d,%d,%d,%lf", model, &pb, &h, &l, &tp, &pp,
                                &dp, &gpus, &B, &s, &V, &pub),
                         12);
        char name[16];
        for (int i = 0; i < 16; i++)
            name[i] = (char)(model[i] >= 'A' && model[i] <= 'Z' ? model[i] + 32 : model[i]);
        /* the planner's choice: the fastest micro-batch that fits */
        double best = NAN;
        int best_mb = 0;
        for (int mb = 1; mb <= 8; mb *= 2) {
            if ((B / dp) % mb)
                continue;
            double hw = simulate(name, tp, pp, dp, gpus, B, s, mb);
            if (isfinite(hw) && !(hw <= best)) {
                best = hw;
                best_mb = mb;
            }
        }
        double err = (best - pub) / pub;
        printf("%-5s mb %d: published %.0f, simulated %.1f TFLOP/s per GPU (%+.1f%%)\n", model, best_mb, pub, best,
               100 * err);
        ck_assert_msg(fabs(err) <= 0.15, "%s: simulated %.1f vs published %.0f", model, best, pub);
        sum += fabs(err);
        worst = fmax(worst, fabs(err));
        n++;
    }
    fclose(f);
    ck_assert_int_eq(n, 10);
    printf("mean |error| %.1f%%, largest %.1f%%\n", 100 * sum / n, 100 * worst);
    ck_assert_msg(sum / n <= 0.08, "mean error %.1f%%", 100 * sum / n);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("validate");
    TCase *tc = tcase_create("megatron");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, megatron_weak_scaling);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
