/* test_bridge.c - the cost bridge (run/costs.h) is the one source of a
 * layout's per-stage memory: `mmsim run`, the planner's pre-score and
 * `mmsim model` report the same numbers, checked through the library calls
 * and through the binary's --json output, for layouts covering tp/pp/dp,
 * per-module and global sequence parallelism, ZeRO 0-3, every recompute
 * mode and encoders colocated, homogeneous and on their own GPUs.  Also the
 * direction of each knob (ZeRO and recomputation save memory, sp saves
 * activations) and bad layouts refused alike by both commands.
 * Not for: the memory model's formulas themselves (test_model.c). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "run/costs.h"
#include "util/doc.h"
#include "scenario/scenario.h"
#include "run/sim.h"

#include "mmsim_exe.h"

/* A layout: the --set strings after model=... */
typedef struct layout {
    const char *model;
    const char *sets[8];
} layout;

static const layout layouts[] = {
    /* the issue's case: per-module sp after a whole-mapping set */
    {"models/llama-2-7b.json", {"parallel.llm={tp: 4, pp: 2, dp: 2}", "parallel.llm.sp=true"}},
    {"models/llama-2-7b.json", {"parallel.llm={tp: 2, pp: 4, dp: 2}", "train.zero=0", "train.recompute=none"}},
    {"models/llama-2-7b.json", {"parallel.llm={tp: 1, pp: 2, dp: 8}", "train.recompute=selective"}},
    {"models/llama-2-7b.json",
     {"parallel.llm={tp: 8, pp: 1, dp: 2}", "train.zero=2", "train.recompute=full", "train.sequence_parallel=true"}},
    {"models/llama-2-7b.json", {"parallel.llm={tp: 4, pp: 1, dp: 4, zero: 3}"}},
    /* the default multimodal scenario: vision colocated, then with its own sp */
    {"models/llava-ov-qwen2.5-7b.yaml", {NULL}},
    {"models/llava-ov-qwen2.5-7b.yaml",
     {"parallel.vision={tp: 2, pp: 1, dp: 8, sp: true}", "train.recompute=full", "parallel.llm.zero=0"}},
    {"models/llava-ov-qwen2.5-7b.yaml", {"parallel.placement=homogeneous", "parallel.llm.sp=true"}},
    {"models/llava-ov-qwen2.5-7b.yaml",
     {"parallel.placement=pipeline", "parallel.llm={tp: 4, pp: 2, dp: 1}", "parallel.vision={tp: 1, pp: 2, dp: 4}",
      "train.global_batch=32", "train.recompute=none"}},
};
#define N_LAYOUTS (sizeof layouts / sizeof layouts[0])

/* Loads and prepares layout i with extra sets appended. */
static void prepare(const layout *l, mm_scenario *sc, mm_sim *sim, const char *extra)
{
    const char *sets[16];
    char model[256];
    int n = 0;
    snprintf(model, sizeof model, "model=%s", l->model);
    sets[n++] = model;
    for (int k = 0; k < 8 && l->sets[k]; k++)
        sets[n++] = l->sets[k];
    sets[n++] = "iterations=1";
    sets[n++] = "network=analytic";
    if (extra)
        sets[n++] = extra;
    mm_err err;
    mm_err_clear(&err);
    mm_scenario_free(sc); /* the previous load of this static (no-op when none); its sim is freed */
    ck_assert_msg(mm_scenario_load(sc, NULL, sets, n, &err) == 0, "%s", err.msg);
    ck_assert_msg(mm_sim_prepare(sim, sc, &err) == 0, "%s: %s", err.key, err.msg);
}

static mm_scenario sc;
static mm_sim sim;

/* The bridge's memory equals what mm_sim_run and mm_sim_estimate report,
 * bit for bit, stage by stage and module by module. */
START_TEST(run_and_estimate_use_the_bridge)
{
    const layout *l = &layouts[_i];
    prepare(l, &sc, &sim, NULL);
    mm_err err;
    mm_sim_memory mem;
    ck_assert_int_eq(mm_sim_stage_memory(&sim, &mem, &err), 0);
    mm_metrics run, est;
    ck_assert_msg(mm_sim_run(&sim, &run, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(mm_sim_estimate(&sim, &est, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(mem.n_stages, sc.parallel.llm.pp);
    ck_assert_int_eq(run.n_stages, mem.n_stages);
    ck_assert(!mem.oom && !run.oom && !est.oom);
    for (int k = 0; k < mem.n_stages; k++) {
        ck_assert_msg(isfinite(mem.stage_gib[k]) && mem.stage_gib[k] > 1.0, "layout %d stage %d: %g", _i, k,
                      mem.stage_gib[k]);
        ck_assert_msg(mem.stage_gib[k] == run.stages[k].memory_gib, "layout %d stage %d: bridge %.17g run %.17g", _i,
                      k, mem.stage_gib[k], run.stages[k].memory_gib);
        ck_assert(mem.stage_gib[k] == est.stages[k].memory_gib);
    }
    ck_assert(mem.peak_gib == run.peak_memory_gib && mem.peak_gib == est.peak_memory_gib);
    ck_assert_int_eq(mem.n_modules, run.n_modules);
    for (int i = 0; i < mem.n_modules; i++) {
        ck_assert_str_eq(mem.module_name[i], run.modules[i].name);
        ck_assert(mem.module_gib[i] == run.modules[i].memory_gib);
    }
    /* the stage times are the ones the run executed: one micro-batch per
     * stage per DP rank forward, so the busy time is at least m of them */
    mm_sim_costs c;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert_int_eq(c.n_vstages, sc.parallel.llm.pp * sc.parallel.llm.vpp);
    for (int k = 0; k < mem.n_stages; k++)
        ck_assert_msg(run.stages[k].busy_s >= sim.micro_batches * (c.stages[k].fwd_s + c.stages[k].bwd_s) * 0.999,
                      "layout %d stage %d: busy %g < %d x %g", _i, k, run.stages[k].busy_s, sim.micro_batches,
                      c.stages[k].fwd_s + c.stages[k].bwd_s);
    mm_sim_costs_free(&c);
    mm_sim_memory_free(&mem);
    mm_metrics_free(&run);
    mm_metrics_free(&est);
    mm_sim_free(&sim);
}
END_TEST

static double peak_of(const layout *l, const char *extra)
{
    prepare(l, &sc, &sim, extra);
    mm_err err;
    mm_sim_memory mem;
    ck_assert_int_eq(mm_sim_stage_memory(&sim, &mem, &err), 0);
    double p = mem.peak_gib;
    mm_sim_memory_free(&mem);
    mm_sim_free(&sim);
    return p;
}

/* Each knob moves memory the way Megatron's does: ZeRO stages shard more
 * model state (Rajbhandari et al.), recomputation keeps fewer activations,
 * sequence parallelism splits the norm/dropout activations over TP
 * (Korthikanti et al.). */
START_TEST(knobs_move_memory_the_right_way)
{
    const layout base = {"models/llama-2-7b.json", {"parallel.llm={tp: 2, pp: 2, dp: 4}", "train.recompute=none"}};
    double z[4];
    const char *zs[] = {"train.zero=0", "train.zero=1", "train.zero=2", "train.zero=3"};
    for (int i = 0; i < 4; i++)
        z[i] = peak_of(&base, zs[i]);
    ck_assert_msg(z[0] > z[1] && z[1] > z[2] && z[2] > z[3], "zero 0..3: %g %g %g %g", z[0], z[1], z[2], z[3]);
    /* ZeRO-1 shards the 12 bytes/param of fp32 master + Adam states over dp 4:
     * stage 0 holds about 6.74e9/2/2 params -> 12 x 3/4 x 1.68e9 B = 14.1 GiB */
    ck_assert_msg(fabs((z[0] - z[1]) - 12.0 * 0.75 * 6.738e9 / 4 / 1073741824.0) < 1.5, "zero0-zero1 %g", z[0] - z[1]);
    const layout rb = {"models/llama-2-7b.json", {"parallel.llm={tp: 2, pp: 2, dp: 4}"}};
    double none = peak_of(&rb, "train.recompute=none"), sel = peak_of(&rb, "train.recompute=selective"),
           full = peak_of(&rb, "train.recompute=full");
    /* a flash/cuDNN kernel (megatron-core's default) keeps no attention
     * scores, so none holds what selective holds; the unfused core keeps them */
    ck_assert_msg(none == sel && sel > full, "recompute none %g selective %g full %g", none, sel, full);
    const layout ru = {"models/llama-2-7b.json", {"parallel.llm={tp: 2, pp: 2, dp: 4}", "train.attention=unfused"}};
    double unone = peak_of(&ru, "train.recompute=none"), usel = peak_of(&ru, "train.recompute=selective");
    ck_assert_msg(unone > usel && usel == sel, "unfused: recompute none %g selective %g", unone, usel);
    double nosp = peak_of(&rb, "parallel.llm.sp=false"), sp = peak_of(&rb, "parallel.llm.sp=true");
    ck_assert_msg(sp < nosp, "sp %g vs %g", sp, nosp);
    ck_assert(peak_of(&rb, "train.sequence_parallel=true") == sp); /* global or per module: one meaning */
}
END_TEST

/* ---- through the binary ---- */

static char tmpdir[256];
static char out[1 << 16], errtxt[1 << 14];

static void setup(void) { mmx_tmpdir(tmpdir, sizeof tmpdir, "bridge"); }
static void teardown(void) { mmx_rmdir(tmpdir); }

/* The layout's sets as shell words. */
static void set_words(const layout *l, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < 8 && l->sets[k]; k++) {
        int w = snprintf(buf + n, len - n, " --set '%s'", l->sets[k]);
        ck_assert(w > 0 && (size_t)w < len - n);
        n += (size_t)w;
    }
}

/* Per-stage memory from a --json document: `memory_gib` (model) or
 * `stages[].memory_gib` (run). */
static int json_memory(const char *text, bool run, double *gib, int max)
{
    mm_doc d;
    mm_err derr;
    ck_assert_msg(mm_doc_load_string(&d, "out.json", text, &derr) == 0, "%s", derr.msg);
    mm_node *root = mm_doc_root(&d);
    mm_node *seq = mm_node_get(root, run ? "stages" : "memory_gib");
    ck_assert_ptr_nonnull(seq);
    int n = mm_node_count(seq);
    for (int k = 0; k < n && k < max; k++) {
        mm_node *x = mm_node_item(seq, k);
        if (run)
            x = mm_node_get(x, "memory_gib");
        ck_assert_ptr_nonnull(x);
        gib[k] = atof(mm_node_scalar(x, NULL));
    }
    mm_doc_free(&d);
    return n;
}

START_TEST(model_and_run_json_agree)
{
    const layout *l = &layouts[_i];
    char words[1024], args[2048];
    set_words(l, words, sizeof words);
    double a[64], b[64];
    snprintf(args, sizeof args, "model %s --json%s", l->model, words);
    ck_assert_msg(mmx_run(tmpdir, NULL, args, out, sizeof out, errtxt, sizeof errtxt) == 0, "%s: %s", args, errtxt);
    int na = json_memory(out, false, a, 64);
    snprintf(args, sizeof args, "run --no-db --json --set model=%s%s --set iterations=1 --set network=analytic",
             l->model, words);
    ck_assert_msg(mmx_run(tmpdir, NULL, args, out, sizeof out, errtxt, sizeof errtxt) == 0, "%s: %s", args, errtxt);
    int nb = json_memory(out, true, b, 64);
    ck_assert_int_eq(na, nb);
    ck_assert(na >= 1);
    for (int k = 0; k < na; k++) /* both print %.9g */
        ck_assert_msg(a[k] == b[k], "layout %d stage %d: model %.9g run %.9g", _i, k, a[k], b[k]);
}
END_TEST

/* The issue's numbers: `mmsim run` gave [13.70, 11.68] GiB while `mmsim
 * model` gave [17.52, 13.57] (it ignored per-module sp); now both print
 * the run's. */
START_TEST(issue_case_numbers)
{
    ck_assert_int_eq(mmx_run(tmpdir, NULL,
                             "model models/llama-2-7b.json --json --set 'parallel.llm={tp: 4, pp: 2, dp: 2}' "
                             "--set parallel.llm.sp=true",
                             out, sizeof out, errtxt, sizeof errtxt),
                     0);
    double g[4];
    ck_assert_int_eq(json_memory(out, false, g, 4), 2);
    ck_assert_msg(fabs(g[0] - 13.70) < 0.01 && fabs(g[1] - 11.68) < 0.01, "%g %g", g[0], g[1]);
}
END_TEST

/* A layout that `mmsim run` refuses (exit 2, naming the key) is shown by
 * `mmsim model` as run's message in a note, after the model's own report
 * (exit 0: the model is fine, the layout is what run would refuse). */
START_TEST(bad_layouts_refused_alike)
{
    const char *bad[] = {"--set 'parallel.llm={tp: 4, pp: 2, dp: 8}'", "--set 'parallel.llm.layers_per_stage=[10, 10]'",
                         "--set train.global_batch=63"};
    const char *key[] = {"parallel.llm.dp", "parallel.llm.layers_per_stage", "train.global_batch"};
    for (int i = 0; i < 3; i++) {
        char args[512];
        static char run_err[sizeof errtxt];
        snprintf(args, sizeof args, "run --no-db --set model=models/llama-2-7b.json %s", bad[i]);
        ck_assert_int_eq(mmx_run(tmpdir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
        ck_assert_msg(strstr(errtxt, key[i]), "%s: %s", args, errtxt);
        ck_assert(strncmp(errtxt, "mmsim: ", 7) == 0);
        snprintf(run_err, sizeof run_err, "%s", errtxt + 7);
        run_err[strcspn(run_err, "\n")] = '\0';
        snprintf(args, sizeof args, "model models/llama-2-7b.json %s", bad[i]);
        ck_assert_int_eq(mmx_run(tmpdir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 0);
        ck_assert_ptr_nonnull(strstr(out, "6738.416 M")); /* the model's report stands */
        ck_assert_msg(strstr(out, run_err), "model's note lacks run's message '%s':\n%s", run_err, out);
        ck_assert_ptr_null(strstr(out, "memory per GPU"));
        snprintf(args, sizeof args, "model models/llama-2-7b.json --json %s", bad[i]);
        ck_assert_int_eq(mmx_run(tmpdir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 0);
        ck_assert_ptr_nonnull(strstr(out, "\"layout\": null"));
        ck_assert_ptr_nonnull(strstr(out, "\"layout_note\""));
        ck_assert_ptr_nonnull(strstr(out, key[i]));
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bridge");
    TCase *lib = tcase_create("library");
    tcase_add_loop_test(lib, run_and_estimate_use_the_bridge, 0, (int)N_LAYOUTS);
    tcase_add_test(lib, knobs_move_memory_the_right_way);
    suite_add_tcase(s, lib);
    TCase *cli = tcase_create("cli");
    tcase_add_checked_fixture(cli, setup, teardown);
    tcase_add_loop_test(cli, model_and_run_json_agree, 0, (int)N_LAYOUTS);
    tcase_add_test(cli, issue_case_numbers);
    tcase_add_test(cli, bad_layouts_refused_alike);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
