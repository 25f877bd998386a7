/* test_torchtitan.c - the TOML reader (util/toml.c) and torchtitan train
 * configs as scenarios (scenario/torchtitan.c, `mmsim run --torchtitan`):
 * values and syntax errors with their lines; the Llama 3 8B preset read to
 * the layout torchtitan runs (FSDP over every GPU: ZeRO-3 under the fsdp
 * profile); torchtitan's pipeline split and world-size arithmetic; refused
 * keys all reported at once with file, line and key; exit status 2. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmsim_exe.h"
#include "model/fp8.h"
#include "scenario/torchtitan.h"
#include "util/toml.h"

#define PRESET "tests/data/torchtitan/llama3_8b.toml"

static char tmp[256], out[1 << 16], errtxt[1 << 14];

/* ---- the TOML subset ----------------------------------------------------- */

START_TEST(toml_values)
{
    const char *text = "# comment\n"
                       "top = 'lit\\eral'\n"
                       "[a]\n"
                       "i = 1_000  # trailing comment\n"
                       "h = 0xff\n"
                       "n = -17\n"
                       "f = 3e-4\n"
                       "g = -inf\n"
                       "b = true\n"
                       "s = \"q\\\"\\u00e9\\t\"\n"
                       "arr = [\n  [1, 2],\n  [\"x\"],  # inner\n]\n"
                       "[b.c]\n"
                       "d.e = false\n"
                       "inl = {x = 1, y.z = \"w\"}\n";
    mm_toml t;
    mm_err err;
    ck_assert_int_eq(mm_toml_load_string(&t, "t.toml", text, &err), 0);
    const mm_toml_entry *e = mm_toml_get(&t, "top");
    ck_assert_str_eq(e->v.s, "lit\\eral");
    ck_assert_int_eq(e->line, 2);
    ck_assert_int_eq(mm_toml_get(&t, "a.i")->v.i, 1000);
    ck_assert_int_eq(mm_toml_get(&t, "a.h")->v.i, 255);
    ck_assert_int_eq(mm_toml_get(&t, "a.n")->v.i, -17);
    ck_assert_double_eq(mm_toml_get(&t, "a.f")->v.d, 3e-4);
    ck_assert(isinf(mm_toml_get(&t, "a.g")->v.d) && mm_toml_get(&t, "a.g")->v.d < 0);
    ck_assert(mm_toml_get(&t, "a.b")->v.b);
    ck_assert_str_eq(mm_toml_get(&t, "a.s")->v.s, "q\"\xc3\xa9\t");
    e = mm_toml_get(&t, "a.arr");
    ck_assert_int_eq(e->v.kind, MM_TOML_ARRAY);
    ck_assert_int_eq(e->v.n, 2);
    ck_assert_int_eq(e->v.items[0].n, 2);
    ck_assert_int_eq(e->v.items[0].items[1].i, 2);
    ck_assert_str_eq(e->v.items[1].items[0].s, "x");
    ck_assert_int_eq(e->line, 11);
    ck_assert(!mm_toml_get(&t, "b.c.d.e")->v.b);
    ck_assert_int_eq(mm_toml_get(&t, "b.c.inl.x")->v.i, 1);
    ck_assert_str_eq(mm_toml_get(&t, "b.c.inl.y.z")->v.s, "w");
    ck_assert_int_eq(mm_toml_get(&t, "b.c.inl.y.z")->line, 17);
    ck_assert_ptr_null(mm_toml_get(&t, "a"));
    ck_assert_int_eq(t.n, 12);
    mm_toml_free(&t);
}
END_TEST

/* Syntax errors: the line and the key being read. */
static const struct {
    const char *text, *key, *what;
    int line;
} bad_toml[] = {
    {"[a]\nx = \"open\n", "a.x", "not closed", 2},
    {"x = 1\nx = 2\n", "x", "defined twice (first on line 1)", 2},
    {"[t]\ny = 1\n[t]\n", "t", "given twice", 3},
    {"a = [1,\n 2\n", "a", "array not closed", 3},
    {"d = 1979-05-27\n", "d", "dates", 1},
    {"[[x]]\n", "", "arrays of tables", 1},
    {"m = \"\"\"\nx\"\"\"\n", "m", "multi-line", 1},
    {"n = 1 2\n", "n", "unexpected '2'", 1},
    {"z = 00\n", "z", "leading zeros", 1},
    {"w = 1__0\n", "w", "'_'", 1},
    {"[s]\nq = \"\\x\"\n", "s.q", "unknown escape", 2},
    {"v = \n", "v", "value is missing", 1},
    {"big = 9223372036854775808\n", "big", "64 bits", 1},
    {"a.b = 1\na = 2\n", "a", "defined twice", 2},
    {"k = bare\n", "k", "needs quotes", 1},
};

START_TEST(toml_errors)
{
    mm_toml t;
    mm_err err;
    ck_assert_int_eq(mm_toml_load_string(&t, "bad.toml", bad_toml[_i].text, &err), -MM_EINPUT);
    ck_assert_str_eq(err.file, "bad.toml");
    ck_assert_int_eq(err.line, bad_toml[_i].line);
    ck_assert_str_eq(err.key, bad_toml[_i].key);
    ck_assert_msg(strstr(err.msg, bad_toml[_i].what), "%s: %s", bad_toml[_i].text, err.msg);
    ck_assert_ptr_null(t.e); /* freed on error */
}
END_TEST

/* ---- torchtitan configs --------------------------------------------------- */

/* FILE (in the scratch folder) holding text; its path into path. */
static void write_file(const char *name, const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    mmx_tmpdir(tmp, sizeof tmp, "torchtitan");
}

static void teardown(void)
{
    mmx_rmdir(tmp);
}

/* torchtitan's Llama 3 8B preset on the default cluster (2 DGX H100 nodes,
 * 16 GPUs): data_parallel_shard_degree -1 takes every GPU, so FSDP shards
 * over 16 (ZeRO-3 under the fsdp profile), one sample of 8192 tokens a GPU. */
START_TEST(llama3_8b_preset)
{
    static mm_torchtitan tt;
    static mm_scenario sc;
    mm_err err;
    int rc = mm_torchtitan_scenario(PRESET, NULL, NULL, 0, &tt, &sc, &err);
    ck_assert_msg(rc == 0, "%s:%d %s: %s", err.file, err.line, err.key, err.msg);
    ck_assert_str_eq(sc.model, "models/llama-3-8b.json");
    ck_assert_str_eq(sc.train.framework, "fsdp");
    ck_assert_int_eq(sc.train.zero, 3);
    ck_assert_int_eq(sc.parallel.llm.lay.tp, 1);
    ck_assert_int_eq(sc.parallel.llm.lay.pp, 1);
    ck_assert_int_eq(sc.parallel.llm.lay.cp, 1);
    ck_assert_int_eq(sc.parallel.llm.lay.dp, 16);
    ck_assert_int_eq(sc.train.micro_batch, 1);
    ck_assert_int_eq(sc.train.global_batch, 16);
    ck_assert_int_eq(sc.train.seq_len, 8192);
    ck_assert_int_eq(sc.train.recompute, MM_RECOMPUTE_FULL);
    ck_assert_int_eq(sc.train.precision, MM_PREC_BF16);
    ck_assert(!sc.train.sequence_parallel);
    ck_assert_int_eq(sc.workload.kind, MM_WORKLOAD_TEXT);
    mm_scenario_free(&sc);
    /* the preset's 64 GPUs (8 nodes): dp 64, the global batch with it;
     * the user's --set wins over the file */
    const char *sets[] = {"cluster.nodes=8", "train.seq_len=4096"};
    rc = mm_torchtitan_scenario(PRESET, NULL, sets, 2, &tt, &sc, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert_int_eq(sc.parallel.llm.lay.dp, 64);
    ck_assert_int_eq(sc.train.global_batch, 64);
    ck_assert_int_eq(sc.train.seq_len, 4096);
    mm_scenario_free(&sc);
}
END_TEST

static int load(const char *text, mm_torchtitan *tt, mm_scenario *sc, mm_err *err)
{
    char path[512];
    write_file("c.toml", text, path, sizeof path);
    return mm_torchtitan_scenario(path, NULL, NULL, 0, tt, sc, err);
}

#define MODEL8B "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[activation_checkpoint]\nmode = \"none\"\n"

/* 32 layers over 4 stages as torchtitan splits them
 * (generate_llm_fqn_per_model_part): 34 effective layers (embedding and
 * output count one each), 9 9 8 8, less the embedding on the first and the
 * output on the last: 8 9 8 7.  TP 2: sequence parallel; dp = 16/(2*4). */
START_TEST(pipeline_split)
{
    static mm_torchtitan tt;
    static mm_scenario sc;
    mm_err err;
    int rc = load(MODEL8B "[parallelism]\ntensor_parallel_degree = 2\npipeline_parallel_degree = 4\n"
                          "pipeline_parallel_microbatch_size = 1\n[training]\nlocal_batch_size = 8\n",
                  &tt, &sc, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert_int_eq(sc.parallel.llm.lay.pp, 4);
    ck_assert_int_eq(sc.parallel.llm.lay.dp, 2);
    ck_assert_int_eq(sc.parallel.llm.lay.n_layers_per_stage, 4);
    const int want[] = {8, 9, 8, 7};
    for (int s = 0; s < 4; s++)
        ck_assert_int_eq(sc.parallel.llm.lay.layers_per_stage[s], want[s]);
    ck_assert_int_eq(sc.train.schedule, MM_SCHED_1F1B);
    ck_assert(sc.train.sequence_parallel);
    ck_assert_int_eq(sc.train.micro_batch, 1);
    ck_assert_int_eq(sc.train.global_batch, 16); /* 8 local x dp 2 */
    mm_scenario_free(&sc);
    /* Interleaved1F1B: 2 virtual stages a rank; with no less layers 32
     * layers split 8 a chunk, 16 a rank */
    rc = load(MODEL8B "[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                      "pipeline_parallel_first_stage_less_layers = 0\npipeline_parallel_last_stage_less_layers = 0\n"
                      "[training]\nlocal_batch_size = 4\n",
              &tt, &sc, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert_int_eq(sc.train.schedule, MM_SCHED_INTERLEAVED);
    ck_assert_int_eq(sc.parallel.llm.lay.vpp, 2);
    ck_assert_int_eq(sc.parallel.llm.lay.layers_per_stage[0], 16);
    ck_assert_int_eq(sc.parallel.llm.lay.layers_per_stage[1], 16);
    mm_scenario_free(&sc);
    /* with the default less layers, rank 1's chunks are 9 and 7 layers:
     * refused, naming the key */
    rc = load(MODEL8B "[parallelism]\npipeline_parallel_degree = 2\n"
                      "pipeline_parallel_schedule = \"interleaved1f1b\"\n[training]\nlocal_batch_size = 4\n",
              &tt, &sc, &err);
    ck_assert_int_eq(rc, -MM_EINPUT);
    ck_assert_int_eq(err.line, 8);
    ck_assert_str_eq(err.key, "parallelism.pipeline_parallel_schedule");
    ck_assert_ptr_nonnull(strstr(err.msg, "unequal model chunks"));
}
END_TEST

/* Only replicas: DDP (ZeRO 0); shard and replicas together (HSDP) is
 * refused; a shard degree that does not fill the cluster is refused. */
START_TEST(data_parallel_kinds)
{
    static mm_torchtitan tt;
    static mm_scenario sc;
    mm_err err;
    ck_assert_int_eq(load(MODEL8B "[parallelism]\ndata_parallel_replicate_degree = 16\n"
                                  "data_parallel_shard_degree = 1\n", &tt, &sc, &err), 0);
    ck_assert_int_eq(sc.train.zero, 0);
    ck_assert_int_eq(sc.parallel.llm.lay.dp, 16);
    ck_assert_int_eq(sc.train.global_batch, 8 * 16); /* torchtitan's default local batch 8 */
    mm_scenario_free(&sc);
    ck_assert_int_eq(load(MODEL8B "[parallelism]\ndata_parallel_replicate_degree = 2\n", &tt, &sc, &err),
                     -MM_EINPUT);
    ck_assert_str_eq(err.key, "parallelism.data_parallel_shard_degree");
    ck_assert_ptr_nonnull(strstr(err.msg, "HSDP"));
    ck_assert_int_eq(load(MODEL8B "\n[parallelism]\ndata_parallel_shard_degree = 4\n", &tt, &sc, &err), -MM_EINPUT);
    ck_assert_int_eq(err.line, 8);
    ck_assert_ptr_nonnull(strstr(err.msg, "16 GPUs"));
    /* gradient accumulation: global 64 over local 1 x dp 16 */
    ck_assert_int_eq(load(MODEL8B "[training]\nlocal_batch_size = 1\nglobal_batch_size = 64\n", &tt, &sc, &err), 0);
    ck_assert_int_eq(sc.train.global_batch, 64);
    ck_assert_int_eq(sc.train.micro_batch, 1);
    mm_scenario_free(&sc);
}
END_TEST

START_TEST(float8_converter)
{
    static mm_torchtitan tt;
    static mm_scenario sc;
    mm_err err;
    ck_assert_int_eq(load("[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"float8\"]\n"
                          "[float8]\nfilter_fqns = [\"output\"]\n[activation_checkpoint]\nmode = \"full\"\n",
                          &tt, &sc, &err), 0);
    ck_assert_int_eq(sc.train.precision, MM_PREC_FP8);
    ck_assert_int_eq(sc.train.fp8_recipe, MM_FP8_CURRENT); /* torchao tensorwise: dynamic per-tensor scales */
    mm_scenario_free(&sc);
    ck_assert_int_eq(load("[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"quantize.linear.float8\"]\n"
                          "[quantize.linear.float8]\nrecipe_name = \"rowwise\"\n"
                          "enable_fsdp_float8_all_gather = true\n[activation_checkpoint]\nmode = \"full\"\n",
                          &tt, &sc, &err), -MM_EINPUT);
    ck_assert_int_eq(err.line, 6);
    ck_assert_str_eq(err.key, "quantize.linear.float8.recipe_name");
    ck_assert_ptr_nonnull(strstr(err.msg, "enable_fsdp_float8_all_gather (line 7)"));
}
END_TEST

/* Every refused key of a file in one error, in file order: the first with
 * its line as the error's, each other with its own. */
START_TEST(refused_all_at_once)
{
    static mm_torchtitan tt;
    static mm_scenario sc;
    mm_err err;
    int rc = load("[model]\nname = \"llama3\"\nflavor = \"405B\"\n"       /* line 3 */
                  "[training]\nseq_len = \"long\"\n"                      /* 5 */
                  "[parallelism]\ncontext_parallel_degree = 2\n"         /* 7 */
                  "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n" /* 10 */
                  "[compile]\nenable = true\n"                            /* 12 */
                  "[foo]\nbar = 1\n"                                      /* 14 */
                  "[optimizer]\nlr = 1e-4\n",                             /* accepted */
                  &tt, &sc, &err);
    ck_assert_int_eq(rc, -MM_EINPUT);
    ck_assert_int_eq(err.line, 3);
    ck_assert_str_eq(err.key, "model.flavor");
    ck_assert_ptr_nonnull(strstr(err.msg, "'405B'"));
    const char *later[] = {"training.seq_len (line 5)", "parallelism.context_parallel_degree (line 7)",
                           "activation_checkpoint.selective_ac_option (line 10)", "compile.enable (line 12)",
                           "foo.bar (line 14)"};
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)
        ck_assert_msg(strstr(err.msg, later[i]), "missing %s in: %s", later[i], err.msg);
    ck_assert_ptr_null(strstr(err.msg, "optimizer.lr"));
    /* torchtitan's default AC (selective, every second layer) is not
     * modeled: refused by key when the file leaves it out */
    ck_assert_int_eq(load("[model]\nname = \"llama3\"\nflavor = \"8B\"\n", &tt, &sc, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "activation_checkpoint.selective_ac_option");
    ck_assert_int_eq(err.line, 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "torchtitan's default"));
    /* a model other than llama3, by name */
    ck_assert_int_eq(load("[model]\nname = \"deepseek_v3\"\nflavor = \"16B\"\n", &tt, &sc, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "model.name");
    ck_assert_ptr_nonnull(strstr(err.msg, "deepseek_v3"));
}
END_TEST

/* Through the CLI: exit 2 with file:line: key, and a layout error the
 * scenario's checks find (tp 3 does not divide the 8 GPUs of a node)
 * pointed back at the TOML line it came from. */
START_TEST(cli_bad_input)
{
    char path[512], args[1024];
    write_file("bad.toml", "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\nreplicate = 2\n"
                           "[activation_checkpoint]\nmode = \"none\"\n", path, sizeof path);
    snprintf(args, sizeof args, "run --no-db --torchtitan %s", path);
    ck_assert_int_eq(mmx_run(tmp, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    char want[700];
    snprintf(want, sizeof want, "%s:5: key 'parallelism.replicate': not a torchtitan key", path);
    ck_assert_msg(strstr(errtxt, want), "%s", errtxt);
    write_file("tp.toml", "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\ntensor_parallel_degree = 3\n"
                          "data_parallel_shard_degree = 40\n[activation_checkpoint]\nmode = \"none\"\n",
               path, sizeof path);
    snprintf(args, sizeof args, "run --no-db --set cluster.nodes=15 --torchtitan %s", path);
    ck_assert_int_eq(mmx_run(tmp, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    snprintf(want, sizeof want, "%s:5: key 'parallel.llm.tp'", path);
    ck_assert_msg(strstr(errtxt, want) && strstr(errtxt, "(from parallelism.tensor_parallel_degree)"), "%s", errtxt);
    ck_assert_int_eq(mmx_run(tmp, NULL, "run --torchtitan " PRESET " --megatron-args x", out, sizeof out, errtxt,
                             sizeof errtxt), 2);
}
END_TEST

/* The preset simulated: a finite step, FSDP's all-gathers in it, and the
 * same numbers as the scenario written out by hand. */
START_TEST(cli_runs_preset)
{
    ck_assert_int_eq(mmx_run(tmp, NULL, "run --no-db --json --set iterations=1 --torchtitan " PRESET, out,
                             sizeof out, errtxt, sizeof errtxt), 0);
    char mine[1 << 16];
    snprintf(mine, sizeof mine, "%s", out);
    ck_assert_int_eq(mmx_run(tmp, NULL,
                             "run --no-db --json --set iterations=1 --set model=models/llama-3-8b.json "
                             "--set workload=text --set train.framework=fsdp --set train.zero=3 "
                             "--set 'parallel.llm={tp: 1, pp: 1, cp: 1, dp: 16}' --set train.micro_batch=1 "
                             "--set train.global_batch=16 --set train.seq_len=8192 --set train.recompute=full "
                             "--set train.sequence_parallel=false --set train.precision=bf16",
                             out, sizeof out, errtxt, sizeof errtxt), 0);
    const char *a = strstr(mine, "\"iteration_time_s\""), *b = strstr(out, "\"iteration_time_s\"");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(strncmp(a, b, 40), 0);
    double t = strtod(a + strlen("\"iteration_time_s\":"), NULL);
    ck_assert_msg(t > 0 && isfinite(t), "%s", a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("torchtitan");
    TCase *tc = tcase_create("toml");
    tcase_add_test(tc, toml_values);
    tcase_add_loop_test(tc, toml_errors, 0, (int)(sizeof bad_toml / sizeof bad_toml[0]));
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("torchtitan");
    tcase_add_checked_fixture(tt, setup, teardown);
    tcase_set_timeout(tt, 600);
    tcase_add_test(tt, llama3_8b_preset);
    tcase_add_test(tt, pipeline_split);
    tcase_add_test(tt, data_parallel_kinds);
    tcase_add_test(tt, float8_converter);
    tcase_add_test(tt, refused_all_at_once);
    tcase_add_test(tt, cli_bad_input);
    tcase_add_test(tt, cli_runs_preset);
    suite_add_tcase(s, tt);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
