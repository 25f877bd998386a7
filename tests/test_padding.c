/* test_padding.c - padding as each framework does it, and the metrics on
 * real tokens.  The profile's default depends on whether the micro-batches
 * are pipelined, the LLM pp > 1 (padding / padding_pipelined); train.pad_to sets
 * max_length's length.  One 2-sample micro-batch of 300 and 700 tokens on
 * two GPUs in closed form: the padded tokens, the model FLOPs of the real
 * tokens (mm_llm_model_flops per sample), the pad tokens' FLOPs, and mfu
 * (real) against hfu (everything run) by formula.  Bad input: file, line,
 * key and exit status 2. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmsim_exe.h"
#include "model/framework.h"
#include "model/llm.h"
#include "plan/estimate.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "config_common.h"

static const char *const profiles[] = {"megatron-core", "megatron-local", "hf-deepspeed", "fsdp"};

static void load(mm_sim *sim, mm_scenario *sc, const char *const *sets, int n)
{
    mm_err err;
    int rc = mm_scenario_load(sc, NULL, sets, n, &err);
    ck_assert_msg(rc == 0, "%s: %s", err.key, err.msg);
    rc = mm_sim_prepare(sim, sc, &err);
    ck_assert_msg(rc == 0, "%s: %s", err.key, err.msg);
}

static void done(mm_sim *sim, mm_scenario *sc)
{
    mm_sim_free(sim);
    mm_scenario_free(sc);
}

/* Every profile's two defaults, each as its comment's code decides it:
 * without a pipeline megatron-core and hf-deepspeed pad to the longest
 * sample, megatron-local's GPTDataset to seq_len, torchtitan packs; with
 * one, each pads to one fixed length (Megatron's LLaVAModel, DeepSpeed's
 * PipelineEngine, torch.distributed.pipelining's PipelineStage). */
START_TEST(profile_defaults_by_pipelining)
{
    static const mm_padding flat[] = {MM_PAD_LONGEST, MM_PAD_MAX_LENGTH, MM_PAD_LONGEST, MM_PAD_NONE};
    for (int i = 0; i < 4; i++) {
        char path[128];
        snprintf(path, sizeof path, "frameworks/%s.yaml", profiles[i]);
        mm_framework fw;
        mm_err err;
        ck_assert_msg(mm_framework_load(path, &fw, &err) == 0, "%s: %s", path, err.msg);
        ck_assert_msg(fw.padding == flat[i], "%s: %s", profiles[i], mm_padding_names[fw.padding]);
        ck_assert_msg(fw.padding_pipelined == MM_PAD_MAX_LENGTH, "%s pipelined: %s", profiles[i],
                      mm_padding_names[fw.padding_pipelined]);
    }
    /* a run takes the one its layout asks for; train.padding overrides both */
    static const struct {
        const char *fw, *llm, *pad;
        mm_padding want;
    } cases[] = {
        {"train.framework=megatron-core", "parallel.llm={tp: 1, pp: 1, dp: 2}", "train.padding=auto", MM_PAD_LONGEST},
        {"train.framework=megatron-core", "parallel.llm={tp: 1, pp: 2, dp: 1}", "train.padding=auto", MM_PAD_MAX_LENGTH},
        {"train.framework=fsdp", "parallel.llm={tp: 1, pp: 1, dp: 2}", "train.padding=auto", MM_PAD_NONE},
        {"train.framework=fsdp", "parallel.llm={tp: 1, pp: 2, dp: 1}", "train.padding=auto", MM_PAD_MAX_LENGTH},
        {"train.framework=fsdp", "parallel.llm={tp: 1, pp: 2, dp: 1}", "train.padding=none", MM_PAD_NONE},
        {"train.framework=megatron-core", "parallel.llm={tp: 1, pp: 2, dp: 1}", "train.padding=longest", MM_PAD_LONGEST},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[] = {"cluster.topology=tests/data/mm/two-gpu.yaml", "cluster.nodes=1",
                              "model=models/llama-2-7b.json", "parallel.vision=null", cases[i].llm,
                              "train.global_batch=2", "train.micro_batch=1", cases[i].fw, cases[i].pad,
                              "workload=tests/data/padding/two-texts.csv"};
        mm_sim sim;
        mm_scenario sc = {0};
        load(&sim, &sc, sets, 10);
        ck_assert_msg(sim.padding == cases[i].want, "case %zu: %s", i, mm_padding_names[sim.padding]);
        done(&sim, &sc);
    }
    /* An encoder stage on its own GPUs in front of an unsplit LLM sends it
     * image embeddings, not its token sequence: the LLM is not pipelined
     * (Megatron's _language_is_pipeline_parallel looks at the language
     * model's pipeline alone), so the flat default holds. */
    const char *mm[] = {"cluster.topology=tests/data/mm/two-gpu.yaml", "cluster.nodes=1",
                        "model=models/llava-1.5-7b.json",
                        "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}",
                        "parallel.placement=pipeline", "parallel.llm={tp: 1, pp: 1, dp: 1}",
                        "parallel.vision={tp: 1, pp: 1, dp: 1}", "train.global_batch=2", "train.micro_batch=1",
                        "train.framework=megatron-core"};
    mm_sim sim;
    mm_scenario sc = {0};
    load(&sim, &sc, mm, 10);
    ck_assert_int_eq(sim.n_enc, 1);
    ck_assert_msg(sim.padding == MM_PAD_LONGEST, "encoder stage + LLM pp 1: %s", mm_padding_names[sim.padding]);
    done(&sim, &sc);
}
END_TEST

/* One micro-batch of the two samples (300 and 700 tokens) on two GPUs, no
 * recomputation, so that the executed FLOPs are the model's at the padded
 * lengths.  Closed form, F(b, s) = mm_llm_model_flops (3 (l layer + head)):
 *   real   = F(1, 300) + F(1, 700)       (the attention per sample)
 *   padded = F(2, L)                      (both samples at L tokens)
 *   padded_flops_fraction = 1 - real / padded,  mfu / hfu = real / padded,
 *   padded_fraction = 1 - 1000 / (2 L), tokens_per_s = 1000 / T.
 * megatron-core at pp 2 pads to seq_len 1024 (L = 1024), or to
 * train.pad_to; at pp 1 (dp 2: one sample per replica, micro-batch 1
 * each) longest pads nothing; dp 1 pp 1 with micro-batch 2 pads to 700. */
static void run_two(const char *llm, const char *mb, const char *extra, mm_metrics *m, mm_sim *sim, mm_scenario *sc)
{
    const char *sets[] = {"cluster.topology=tests/data/mm/two-gpu.yaml", "cluster.nodes=1",
                          "model=models/llama-2-7b.json", "parallel.vision=null", llm,
                          "train.global_batch=2", mb, "train.recompute=none", "train.seq_len=1024",
                          "iterations=1", "workload=tests/data/padding/two-texts.csv", extra};
    load(sim, sc, sets, 12);
    mm_err err;
    ck_assert_msg(mm_sim_run(sim, m, NULL, &err) == 0, "%s", err.msg);
    ck_assert(!m->oom);
}

static void check_closed_form(const mm_sim *sim, const mm_metrics *m, double L)
{
    const mm_llm *llm = sim->llm;
    double real = mm_llm_model_flops(llm, 1, 300) + mm_llm_model_flops(llm, 1, 700);
    double padded = L > 0 ? mm_llm_model_flops(llm, 2, L) : real;
    double T = m->iteration_time_s, peak = sim->cluster->gpu.peak_flops[sim->sc.train.precision];
    const double tol = 1e-9;
    ck_assert_msg(fabs(m->iters[0].model_flops - real) <= tol * real, "model %.9g vs %.9g", m->iters[0].model_flops,
                  real);
    ck_assert_msg(fabs(m->iters[0].pad_flops - (padded - real)) <= tol * padded, "pad %.9g vs %.9g",
                  m->iters[0].pad_flops, padded - real);
    ck_assert_msg(fabs(m->iters[0].hw_flops - padded) <= tol * padded, "hw %.9g vs %.9g", m->iters[0].hw_flops, padded);
    double pff = 1 - real / padded;
    ck_assert_msg(fabs(m->padded_flops_fraction - pff) <= tol, "padded_flops_fraction %.12f vs %.12f",
                  m->padded_flops_fraction, pff);
    ck_assert(fabs(m->mfu - real / (T * 2 * peak)) <= tol * m->mfu);
    ck_assert(fabs(m->hfu - padded / (T * 2 * peak)) <= tol * m->hfu);
    ck_assert(fabs(m->mfu / m->hfu - real / padded) <= tol);
    ck_assert(fabs(m->tflops_per_gpu - real / (T * 2) * 1e-12) <= tol * m->tflops_per_gpu);
    ck_assert(fabs(m->tokens_per_s - 1000 / T) <= tol * m->tokens_per_s);
    double pf = L > 0 ? 1 - 1000 / (2 * L) : 0;
    ck_assert_msg(fabs(m->padded_fraction - pf) <= tol, "padded_fraction %.12f vs %.12f", m->padded_fraction, pf);
}

START_TEST(two_samples_in_closed_form)
{
    mm_sim sim;
    mm_scenario sc = {0};
    mm_metrics m;
    /* pp 2 under megatron-core: to seq_len, by the profile's default */
    run_two("parallel.llm={tp: 1, pp: 2, dp: 1}", "train.micro_batch=2", "train.framework=megatron-core", &m, &sim,
            &sc);
    ck_assert_int_eq(sim.padding, MM_PAD_MAX_LENGTH);
    check_closed_form(&sim, &m, 1024);
    /* about half the FLOPs run on pad tokens, as 51 % of the tokens are */
    ck_assert_msg(m.padded_flops_fraction > 0.4 && m.padded_flops_fraction < 0.6, "%g", m.padded_flops_fraction);
    double t_pad = m.iteration_time_s;
    mm_metrics_free(&m);
    done(&sim, &sc);
    /* train.pad_to moves the length */
    run_two("parallel.llm={tp: 1, pp: 2, dp: 1}", "train.micro_batch=2", "train.pad_to=2048", &m, &sim, &sc);
    check_closed_form(&sim, &m, 2048);
    ck_assert(m.iteration_time_s > t_pad);
    mm_metrics_free(&m);
    done(&sim, &sc);
    /* the same pipeline without padding: the real FLOPs are the same */
    run_two("parallel.llm={tp: 1, pp: 2, dp: 1}", "train.micro_batch=2", "train.padding=none", &m, &sim, &sc);
    check_closed_form(&sim, &m, 0);
    ck_assert(m.padded_flops_fraction == 0 && m.mfu == m.hfu && m.iteration_time_s < t_pad);
    mm_metrics_free(&m);
    done(&sim, &sc);
    /* pp 1, one replica: megatron-core pads to the longest, 700 */
    run_two("parallel.llm={tp: 1, pp: 1, dp: 2}", "train.micro_batch=1", "train.framework=megatron-core", &m, &sim,
            &sc);
    ck_assert_int_eq(sim.padding, MM_PAD_LONGEST);
    check_closed_form(&sim, &m, 0); /* one sample per micro-batch: nothing to pad */
    mm_metrics_free(&m);
    done(&sim, &sc);
}
END_TEST

/* A fixed (text) workload padded to train.pad_to: the nominal micro-batch's
 * pad FLOPs, the same in the run and the planner's pre-score (one
 * function computes both rates). */
START_TEST(text_padded_to_pad_to)
{
    const char *sets[] = {"cluster.topology=tests/data/mm/two-gpu.yaml", "cluster.nodes=1",
                          "model=models/llama-2-7b.json", "parallel.vision=null", "parallel.llm={tp: 1, pp: 2, dp: 1}",
                          "train.global_batch=4", "train.micro_batch=1", "train.recompute=none", "train.seq_len=512",
                          "iterations=1", "train.pad_to=1024"};
    mm_sim sim;
    mm_scenario sc = {0};
    load(&sim, &sc, sets, 11);
    ck_assert_int_eq(sim.padding, MM_PAD_MAX_LENGTH);
    mm_metrics m, e;
    mm_err err;
    ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(mm_sim_estimate(&sim, &e, &err) == 0, "%s", err.msg);
    double real = mm_llm_model_flops(sim.llm, 4, 512), padded = mm_llm_model_flops(sim.llm, 4, 1024);
    ck_assert_msg(fabs(m.iters[0].model_flops - real) <= 1e-9 * real, "%.9g vs %.9g", m.iters[0].model_flops, real);
    ck_assert(fabs(m.padded_flops_fraction - (1 - real / padded)) <= 1e-9);
    ck_assert(fabs(e.padded_flops_fraction - m.padded_flops_fraction) <= 1e-12);
    ck_assert(fabs(m.padded_fraction - 0.5) <= 1e-12);
    ck_assert(fabs(m.tokens_per_s * m.iteration_time_s - 4 * 512) <= 1e-6);
    mm_metrics_free(&m);
    mm_metrics_free(&e);
    done(&sim, &sc);
}
END_TEST

/* The planner's pre-score pads as the run does: the LLaVA-OV mixture's
 * drawn micro-batches on a pipelined LLM (the profile's
 * padding_pipelined, max_length: every sample to seq_len), padded to
 * train.pad_to, to the longest sample, and unpadded.  Its memory is the
 * run's (the same draws through mm_sim_data_memory: equal to 1e-9), its
 * pad FLOPs' share the run's (one function: 1e-12), and its time the
 * run's within 2 % where padding makes every micro-batch alike (0.9 %
 * here), 5 % on the drawn lengths unpadded (3.6 %: the closed-form fill
 * of uneven micro-batches). */
START_TEST(prescore_pads_as_the_run)
{
    static const char *const pads[] = {"train.padding=auto", "train.pad_to=6144", "train.padding=longest",
                                       "train.padding=none"};
    double t_run[4], t_pre[4];
    for (int i = 0; i < 4; i++) {
        const char *sets[] = {"workload=workloads/llava-ov-mix.yaml", "train.global_batch=16", "iterations=2",
                              "cluster.nodes=1", "parallel.llm={tp: 2, pp: 2, dp: 2}",
                              "parallel.vision={tp: 1, pp: 1, dp: 8}", "train.micro_batch=1", pads[i]};
        mm_sim sim;
        mm_scenario sc = {0};
        load(&sim, &sc, sets, 8);
        if (i < 2)
            ck_assert_int_eq(sim.padding, MM_PAD_MAX_LENGTH);
        mm_metrics m, e;
        mm_err err;
        ck_assert_msg(mm_sim_run(&sim, &m, NULL, &err) == 0, "%s", err.msg);
        ck_assert_msg(mm_sim_estimate(&sim, &e, &err) == 0, "%s", err.msg);
        ck_assert(!m.oom && !e.oom);
        ck_assert_msg(fabs(e.peak_memory_gib - m.peak_memory_gib) <= 1e-9 * m.peak_memory_gib,
                      "%s: pre-score %.9g GiB, run %.9g GiB", pads[i], e.peak_memory_gib, m.peak_memory_gib);
        ck_assert_msg(fabs(e.padded_flops_fraction - m.padded_flops_fraction) <= 1e-12, "%s: %.12g vs %.12g",
                      pads[i], e.padded_flops_fraction, m.padded_flops_fraction);
        t_run[i] = m.iteration_time_s, t_pre[i] = e.iteration_time_s;
        mm_metrics_free(&m);
        mm_metrics_free(&e);
        done(&sim, &sc);
    }
    ck_assert(t_run[0] > t_run[3] && t_run[1] > t_run[0]); /* padding costs; to 6144 more than to 4096 */
    ck_assert(t_run[2] == t_run[3]); /* one sample a micro-batch: its longest is itself */
    for (int i = 0; i < 4; i++) { /* padded: every micro-batch alike, 0.9 % here; drawn lengths: 3.6 % */
        double tol = i < 2 ? 0.02 : 0.05;
        ck_assert_msg(fabs(t_pre[i] / t_run[i] - 1) <= tol, "%s: pre-score %.6g s, run %.6g s", pads[i], t_pre[i],
                      t_run[i]);
    }
}
END_TEST

/* Bad input: train.pad_to below 0 (file, line, key), with an explicit
 * none or longest (nothing would read it), and a profile without
 * padding_pipelined or with an unknown value; the CLI exits 2. */
/* a small scenario file's first 7 lines (train: is line 8) */
#define SCEN                                                                                                  \
    "model: models/llama-2-7b.json\ncluster:\n  topology: topologies/dgx-h100.yaml\n  nodes: 1\nparallel:\n" \
    "  llm: {tp: 1, pp: 1, dp: 8}\niterations: 1\n"

START_TEST(bad_input_is_refused)
{
    char dir[256], path[512], out[8192], errtxt[8192];
    mmx_tmpdir(dir, sizeof dir, "pad");
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(SCEN "train:\n  seq_len: 1024\n  pad_to: -5\n", f);
    fclose(f);
    mm_err e = load_fail(path, NULL, 0);
    assert_err(&e, path, 10, "train.pad_to", "must be >= 0");
    char args[1024];
    snprintf(args, sizeof args, "run --no-db %s", path);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "train.pad_to"));
    /* with an explicit none: refused when the layout is checked */
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(SCEN "train:\n  padding: none\n  pad_to: 2048\n", f);
    fclose(f);
    mm_scenario sc = {0};
    mm_sim sim;
    mm_err err;
    ck_assert_int_eq(mm_scenario_load(&sc, path, NULL, 0, &err), 0);
    ck_assert_int_eq(mm_sim_prepare(&sim, &sc, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.pad_to");
    ck_assert_str_eq(err.file, path);
    ck_assert_int_eq(err.line, 10);
    mm_scenario_free(&sc);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "train.pad_to"));
    /* a profile: padding_pipelined unknown, then missing */
    static const char *const bad[][2] = {{"padding_pipelined: max_length", "padding_pipelined: fixed\n"},
                                         {"padding_pipelined: max_length", "\n"}};
    for (int k = 0; k < 2; k++) {
        FILE *in = fopen("frameworks/fsdp.yaml", "r");
        snprintf(path, sizeof path, "%s/fw.yaml", dir);
        FILE *o = fopen(path, "w");
        ck_assert(in && o);
        char line[4096];
        int at = 0, n = 0;
        while (fgets(line, sizeof line, in)) {
            n++;
            if (!strncmp(line, bad[k][0], strlen(bad[k][0]))) {
                fputs(bad[k][1], o);
                at = n;
            } else {
                fputs(line, o);
            }
        }
        fclose(in);
        fclose(o);
        ck_assert(at > 0);
        mm_framework fw;
        ck_assert_int_eq(mm_framework_load(path, &fw, &err), -MM_EINPUT);
        ck_assert_str_eq(err.key, "padding_pipelined");
        ck_assert_str_eq(err.file, path);
        if (k == 0)
            ck_assert_int_eq(err.line, at);
        else
            ck_assert(err.line > 0);
    }
    mmx_rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("padding");
    TCase *t = tcase_create("padding");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, profile_defaults_by_pipelining);
    tcase_add_test(t, two_samples_in_closed_form);
    tcase_add_test(t, text_padded_to_pad_to);
    tcase_add_test(t, prescore_pads_as_the_run);
    tcase_add_test(t, bad_input_is_refused);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
