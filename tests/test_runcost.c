/* test_runcost.c - the run's periodic work (cost/runcost.h): checkpoint
 * saves, evaluations and the loss report's sync against closed forms, the
 * run total, nothing changed when the keys are off, and bad input refused
 * by file, line and key with exit status 2. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/runcost.h"
#include "exec/run.h"
#include "framework_common.h"
#include "mmsim_exe.h"

/* Llama-2-7B's parameters from its config.json (models/llama-2-7b.json:
 * vocab 32000, hidden 4096, 32 layers, FFN 11008, untied embedding, RMSNorm
 * weights): 2 V h + L (4 h^2 + 3 h f + 2 h) + h. */
static double llama2_7b_params(void)
{
    const double V = 32000, h = 4096, L = 32, f = 11008;
    return 2 * V * h + L * (4 * h * h + 3 * h * f + 2 * h) + h;
}

/* A checkpoint every K iterations adds bytes / bw / K per iteration.  At
 * tp 1, pp 1, dp 8 under ZeRO-1 each GPU writes 1/8 of the bf16 weights
 * (2 bytes, spread over DP) and its optimizer shard (fp32 master weight and
 * Adam's two moments, 12 bytes over 8): a node of 8 writes 14 P bytes. */
START_TEST(checkpoint_closed_form)
{
    mm_sim sim = {0};
    const char *sets[] = {"train.zero=1", "train.save_interval=50", "train.save_gb_s=4"};
    prepare(&sim, sets, 3);
    mm_sim_costs c;
    mm_err err;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    mm_run_costs r;
    ck_assert_int_eq(mm_sim_run_costs(&sim, c.stages, c.n_vstages, c.spec.m, 2.0, &r, &err), 0);
    double P = llama2_7b_params(), bytes = 14 * P, save = bytes / 4e9;
    ck_assert_msg(r.on && rel(r.ckpt_node_bytes, bytes) < 1e-6, "%.6g bytes against %.6g", r.ckpt_node_bytes, bytes);
    ck_assert_msg(rel(r.save_s, save) < 1e-6, "save %.6g s against %.6g", r.save_s, save);
    ck_assert_msg(rel(r.per_iter_s, save / 50) < 1e-9, "per iteration %.6g s", r.per_iter_s);
    ck_assert(isnan(r.total_s) && r.saves == 0);
    /* ZeRO-0: the optimizer state replicated over DP, spread by the save:
     * the same bytes */
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
    const char *z0[] = {"train.zero=0", "train.save_interval=50", "train.save_gb_s=4"};
    prepare(&sim, z0, 3);
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert_int_eq(mm_sim_run_costs(&sim, c.stages, c.n_vstages, c.spec.m, 2.0, &r, &err), 0);
    ck_assert_msg(rel(r.ckpt_node_bytes, bytes) < 1e-6, "zero 0: %.6g bytes", r.ckpt_node_bytes);
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
}
END_TEST

/* An evaluation of E forward-only iterations of m micro-batches on one
 * stage: E m F, F the stage's forward per micro-batch; every N iterations,
 * E m F / N per iteration.  On two stages of forwards F0, F1:
 * (F0 + F1) + (m - 1) max(F0, F1). */
START_TEST(evaluation_closed_form)
{
    mm_sim sim = {0};
    const char *sets[] = {"train.global_batch=64", "train.eval_interval=200", "train.eval_iters=10"};
    prepare(&sim, sets, 3);
    mm_sim_costs c;
    mm_err err;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert_int_eq(c.spec.m, 8);
    mm_run_costs r;
    ck_assert_int_eq(mm_sim_run_costs(&sim, c.stages, c.n_vstages, c.spec.m, 2.0, &r, &err), 0);
    double F = c.stages[0].fwd_s;
    ck_assert(F > 0);
    ck_assert_msg(rel(r.eval_s, 10 * 8 * F) < 1e-12, "eval %.9g s against %.9g", r.eval_s, 80 * F);
    ck_assert(rel(r.per_iter_s, 80 * F / 200) < 1e-12 && r.save_s == 0 && r.log_sync_s == 0);
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
    const char *pp2[] = {"parallel.llm={tp: 1, pp: 2, dp: 4}", "train.global_batch=32", "train.eval_interval=100",
                         "train.eval_iters=1"};
    prepare(&sim, pp2, 4);
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert_int_eq(mm_sim_run_costs(&sim, c.stages, c.n_vstages, c.spec.m, 2.0, &r, &err), 0);
    double F0 = c.stages[0].fwd_s, F1 = c.stages[1].fwd_s;
    double want = F0 + F1 + (c.spec.m - 1) * fmax(F0, F1);
    ck_assert_msg(rel(r.eval_s, want) < 1e-12, "pp 2: %.9g s against %.9g", r.eval_s, want);
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
}
END_TEST

/* The loss report's sync exposes one eager kernel's host time (the
 * profile's launch + per-op: 3.0 + 6.8 us for megatron-core); the run
 * total is n T + floor(n/K_save) save + floor(n/K_eval) eval +
 * floor(n/K_log) sync, with T the run's iteration time, and the keys leave
 * the iteration time alone. */
START_TEST(run_total_and_nothing_else_moves)
{
    mm_sim sim = {0};
    mm_err err;
    prepare(&sim, NULL, 0);
    mm_metrics m0;
    ck_assert_msg(mm_sim_run(&sim, &m0, NULL, &err) == 0, "%s", err.msg);
    ck_assert(!m0.run.on);
    mm_sim_free(&sim);
    const char *sets[] = {"train.train_iters=1005", "train.log_interval=10", "train.save_interval=100",
                          "train.save_gb_s=2", "train.eval_interval=500", "train.eval_iters=5"};
    prepare(&sim, sets, 6);
    mm_metrics m;
    ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s", err.msg);
    ck_assert(m.iteration_time_s == m0.iteration_time_s);
    const mm_run_costs *r = &m.run;
    ck_assert_msg(fabs(r->log_sync_s - 9.8e-6) < 1e-12, "log sync %.9g s", r->log_sync_s);
    ck_assert(r->saves == 10 && r->evals == 2 && r->logs == 100);
    double want = 1005 * m.iteration_time_s + 10 * r->save_s + 2 * r->eval_s + 100 * r->log_sync_s;
    ck_assert_msg(rel(r->total_s, want) < 1e-12, "total %.9g s against %.9g", r->total_s, want);
    double avg = r->save_s / 100 + r->eval_s / 500 + r->log_sync_s / 10;
    ck_assert(rel(r->per_iter_s, avg) < 1e-12);
    ck_assert(mm_run_events(99, 100) == 0 && mm_run_events(100, 100) == 1 && mm_run_events(5, 0) == 0);
    mm_metrics_free(&m0);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
}
END_TEST

/* Bad input: saving without the storage's bandwidth (file, line, key; exit
 * 2), the bandwidth without saving, negative intervals. */
START_TEST(bad_run_keys_refused)
{
    mm_err err;
    const char *no_bw[] = {"train.save_interval=10"};
    ck_assert_int_eq(prepare_rc(no_bw, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.save_interval");
    ck_assert_msg(strstr(err.msg, "train.save_gb_s") && strstr(err.msg, "no published figure serves as a default"),
                  "%s", err.msg);
    const char *no_save[] = {"train.save_gb_s=5"};
    ck_assert_int_eq(prepare_rc(no_save, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.save_gb_s");
    const char *neg[] = {"train.eval_interval=-5"};
    ck_assert_int_eq(prepare_rc(neg, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.eval_interval");
    const char *neg_bw[] = {"train.save_interval=5", "train.save_gb_s=-1"};
    ck_assert_int_eq(prepare_rc(neg_bw, 2, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.save_gb_s");
    char dir[256], path[300], args[640], out[8192], errs[8192];
    mmx_tmpdir(dir, sizeof dir, "runcost");
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("model: models/llama-2-7b.json\ncluster: {topology: topologies/dgx-h100.yaml, nodes: 1}\nworkload: text\n"
          "parallel:\n  llm: {tp: 1, pp: 1, dp: 8}\ntrain:\n  global_batch: 8\n  save_interval: 10\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "run %s --db %s/db", path, dir);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errs, sizeof errs), 2);
    ck_assert_msg(strstr(errs, "s.yaml:8") && strstr(errs, "train.save_interval"), "%s", errs);
    mmx_rmdir(dir);
}
END_TEST

/* The step's launches by optimizer.impl, on Llama-2-7B at tp 1, pp 1 (N =
 * 32 x 9 + 3 = 291 parameter tensors: q, k, v, o, gate, up, down and two
 * RMSNorms per block; the embedding, the final norm, the LM head) under
 * the fsdp profile (3.0 us launch, 6.8 us per eager op, gradient
 * clipping, no memset), ZeRO-1 over 8: P/8 parameters per rank, c =
 * ceil(P/8 / (320 x 65536)) multi-tensor launches per pass.  fused: c for
 * the step + 2c for the clipping; for_loop: 8 N eager kernels, each a
 * launch and a Python op; foreach: for each of the 8 foreach ops
 * max(ceil(N / max_tensors), c) launches, one Python op each. */
static void step_launches(const char *impl, mm_stage_cost *out)
{
    char dir[256], prof[300], fw[320], repl[64];
    snprintf(repl, sizeof repl, "  impl: %s\n", impl);
    ck_assert(profile_with_line("frameworks/fsdp.yaml", "  impl: fused", repl, "opt", dir, sizeof dir, prof,
                                sizeof prof) > 0);
    char rates[600];
    snprintf(rates, sizeof rates, "cp frameworks/loader-rates.yaml %s/", dir);
    ck_assert_int_eq(system(rates), 0);
    snprintf(fw, sizeof fw, "train.framework=%s", prof);
    const char *sets[] = {fw, "train.zero=1"};
    mm_sim sim = {0};
    prepare(&sim, sets, 2);
    mm_sim_costs c;
    mm_err err;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    *out = c.stages[0];
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
    mmx_rmdir(dir);
}

START_TEST(optimizer_launches_closed_form)
{
    const double N = 32 * 9 + 3, P = llama2_7b_params(), L = 3.0e-6, op = 6.8e-6;
    const double cl = ceil(P / 8 / (320.0 * 65536.0));
    mm_stage_cost f, e, l;
    step_launches("fused", &f);
    ck_assert_msg(f.opt_launches == 3 * cl, "fused: %.0f launches, %.0f expected", f.opt_launches, 3 * cl);
    ck_assert(fabs(f.opt_host_s - (3 * cl * L + 3 * op)) < 1e-12);
    step_launches("for_loop", &l);
    ck_assert_msg(l.opt_launches == 8 * N + 2 * cl, "for_loop: %.0f launches", l.opt_launches);
    ck_assert_msg(fabs(l.opt_host_s - (8 * N * (L + op) + 2 * cl * L + 2 * op)) < 1e-12, "for_loop host %.9g s",
                  l.opt_host_s);
    step_launches("foreach", &e);
    const double T[8] = {110, 64, 110, 48, 64, 96, 64, 48};
    double k = 0;
    for (int i = 0; i < 8; i++)
        k += fmax(ceil(N / T[i]), cl);
    ck_assert_msg(e.opt_launches == k + 2 * cl, "foreach: %.0f launches, %.0f expected", e.opt_launches, k + 2 * cl);
    ck_assert(fabs(e.opt_host_s - ((k + 2 * cl) * L + 10 * op)) < 1e-12);
    /* eager per-tensor launches cost the host about 8 N x 9.8 us = 23 ms */
    ck_assert(l.opt_host_s > 20e-3 && e.opt_host_s < l.opt_host_s && f.opt_host_s < e.opt_host_s);
}
END_TEST

/* optimizer.impl: a value outside fused | foreach | for_loop names the
 * profile's line and key; an eager optimizer on a model whose tensors are
 * not counted (MoE) is refused naming train.framework. */
START_TEST(bad_optimizer_impl_refused)
{
    mm_err err;
    char tmp[64];
    ck_assert_int_eq(load_edited("  impl: fused", "  impl: adamw\n", &err, tmp, sizeof tmp), -MM_EINPUT);
    ck_assert_str_eq(err.key, "optimizer.impl");
    ck_assert_msg(!strcmp(err.file, tmp) && err.line > 0, "%s:%d", err.file, err.line);
    char dir[256], prof[300], fw[320], cp[600];
    ck_assert(profile_with_line("frameworks/fsdp.yaml", "  impl: fused", "  impl: for_loop\n", "moe", dir, sizeof dir,
                                prof, sizeof prof) > 0);
    snprintf(cp, sizeof cp, "cp frameworks/loader-rates.yaml %s/", dir);
    ck_assert_int_eq(system(cp), 0);
    snprintf(fw, sizeof fw, "train.framework=%s", prof);
    const char *moe[] = {fw, "model=models/mixtral-8x7b.json"};
    ck_assert_int_eq(prepare_rc(moe, 2, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.framework");
    ck_assert_msg(strstr(err.msg, "optimizer.impl for_loop"), "%s", err.msg);
    mmx_rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runcost");
    TCase *tc = tcase_create("runcost");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, checkpoint_closed_form);
    tcase_add_test(tc, evaluation_closed_form);
    tcase_add_test(tc, run_total_and_nothing_else_moves);
    tcase_add_test(tc, bad_run_keys_refused);
    tcase_add_test(tc, optimizer_launches_closed_form);
    tcase_add_test(tc, bad_optimizer_impl_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
