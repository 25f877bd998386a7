/* test_api.c - the C API of sim/api/mmsim.h: the JSON of a run is byte for
 * byte what `mmsim run --no-db --json` prints (apart from wall_s), the
 * getters agree with it, errors carry file, line and key, and a bad handle
 * keeps failing instead of crashing. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/mmsim.h"
#include "mmsim_config.h"
#include "mmsim_exe.h"

/* Drops the "wall_s" line (host time differs between two runs). */
static void drop_wall(char *s)
{
    char *w = strstr(s, "  \"wall_s\"");
    if (w) {
        char *e = strchr(w, '\n');
        memmove(w, e + 1, strlen(e + 1) + 1);
    }
}

static char out[1 << 20], errbuf[4096], json[1 << 20];

START_TEST(test_version)
{
    ck_assert_str_eq(mm_version(), MMSIM_VERSION);
}
END_TEST

START_TEST(test_run_json_is_the_cli_json)
{
    mmsim *h = mmsim_open("tests/data/api-scenario.yaml", NULL, 0);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(mmsim_status(h), MMSIM_OK);
    ck_assert_ptr_null(mmsim_run_json(h));
    ck_assert_int_eq(mmsim_run(h), 0);
    snprintf(json, sizeof json, "%s", mmsim_run_json(h));
    char dir[256];
    mmx_tmpdir(dir, sizeof dir, "api");
    ck_assert_int_eq(mmx_run(dir, NULL, "run tests/data/api-scenario.yaml --no-db --json", out, sizeof out, errbuf,
                             sizeof errbuf), 0);
    drop_wall(out);
    drop_wall(json);
    ck_assert_str_eq(json, out);
    /* getters: the same numbers as the JSON (which prints %.17g) */
    char key[64];
    double t = mmsim_metric(h, "iteration_time_s");
    snprintf(key, sizeof key, "\"iteration_time_s\": %.17g,", t);
    ck_assert_ptr_nonnull(strstr(json, key));
    ck_assert(t > 0);
    ck_assert_int_eq((int)mmsim_metric(h, "gpus"), 8);
    ck_assert_int_eq(mmsim_stage_count(h), 2);
    ck_assert(mmsim_stage_metric(h, 0, "busy_s") > 0);
    ck_assert(isnan(mmsim_stage_metric(h, 2, "busy_s")));
    ck_assert(isnan(mmsim_metric(h, "nonsense")));
    /* a second run of the same handle: bit for bit the same numbers */
    ck_assert_int_eq(mmsim_run(h), 0);
    ck_assert(mmsim_metric(h, "iteration_time_s") == t);
    mmsim_close(h);
    mmx_rmdir(dir);
}
END_TEST

START_TEST(test_overrides_and_errors)
{
    const char *bad[] = {"train.recompute=sometimes"};
    mmsim *h = mmsim_open("tests/data/api-scenario.yaml", bad, 1);
    ck_assert_int_eq(mmsim_status(h), MMSIM_EINPUT);
    ck_assert_str_eq(mmsim_error_file(h), "--set");
    ck_assert_str_eq(mmsim_error_key(h), "train.recompute");
    ck_assert_ptr_nonnull(strstr(mmsim_error_message(h), "sometimes"));
    /* every later call fails with the same status, without crashing */
    ck_assert_int_eq(mmsim_run(h), -MMSIM_EINPUT);
    ck_assert_ptr_null(mmsim_run_json(h));
    ck_assert_ptr_null(mmsim_model_json(h, "models/llama-2-7b.json", 0, 1));
    mmsim_close(h);

    h = mmsim_open_text("model: models/llama-2-7b.json\ncluster: {topology: topologies/dgx-h100.yaml}\n"
                        "train: {seq_len: -4}\n",
                        "job.yaml", NULL, 0);
    ck_assert_int_eq(mmsim_status(h), MMSIM_EINPUT);
    ck_assert_str_eq(mmsim_error_file(h), "job.yaml");
    ck_assert_int_eq(mmsim_error_line(h), 3);
    ck_assert_str_eq(mmsim_error_key(h), "train.seq_len");
    mmsim_close(h);

    /* a layout rule is found at run time and names the key */
    const char *tp3[] = {"parallel.llm.tp=3"};
    h = mmsim_open("tests/data/api-scenario.yaml", tp3, 1);
    ck_assert_int_eq(mmsim_status(h), MMSIM_OK);
    ck_assert_int_eq(mmsim_run(h), -MMSIM_EINPUT);
    ck_assert_ptr_nonnull(strstr(mmsim_error_key(h), "parallel.llm"));
    mmsim_close(h);
    mmsim_close(NULL);
}
END_TEST

START_TEST(test_model_json_is_the_cli_json)
{
    mmsim *h = mmsim_open(NULL, NULL, 0);
    const char *j = mmsim_model_json(h, "models/llama-2-7b.json", 2048, 1);
    ck_assert_ptr_nonnull(j);
    char dir[256];
    mmx_tmpdir(dir, sizeof dir, "api");
    ck_assert_int_eq(mmx_run(dir, NULL, "model models/llama-2-7b.json --seq 2048 --json", out, sizeof out, errbuf,
                             sizeof errbuf), 0);
    ck_assert_str_eq(j, out);
    ck_assert_ptr_null(mmsim_model_json(h, "models/none.json", 0, 1));
    ck_assert_int_eq(mmsim_status(h), MMSIM_EINPUT);
    mmsim_close(h);
    mmx_rmdir(dir);
}
END_TEST

/* The part of collective JSON that does not name the time or the command
 * line: from "env" to "end_time". */
static void coll_numbers(const char *j, char *outp, size_t len)
{
    const char *a = strstr(j, ",\"env\":"), *b = strstr(j, ",\"end_time\":");
    ck_assert_msg(a && b && a < b, "%.200s", j);
    snprintf(outp, len, "%.*s", (int)(b - a), a);
}

/* `mmsim collective --json` in process: the same config and rows byte for
 * byte, on the handle's cluster (the default scenario's 2 DGX H100 nodes)
 * or a topology file; errors name the argument. */
START_TEST(test_collective_json_is_the_cli_json)
{
    static char mine[1 << 20], theirs[1 << 20];
    mmsim *h = mmsim_open(NULL, NULL, 0);
    char dir[256];
    mmx_tmpdir(dir, sizeof dir, "api");
    const char *j = mmsim_collective_json(h, "allreduce", NULL, 0, 0, NULL, 1024, 1 << 30, 4, NULL, 0, NULL, NULL, 0);
    ck_assert_ptr_nonnull(j);
    coll_numbers(j, mine, sizeof mine);
    ck_assert_int_eq(mmx_run(dir, NULL, "collective allreduce --cluster topologies/dgx-h100.yaml --nodes 2 "
                                        "-b 1K -e 1G -f 4 --json", out, sizeof out, errbuf, sizeof errbuf), 0);
    coll_numbers(out, theirs, sizeof theirs);
    ck_assert_str_eq(mine, theirs);
    ck_assert_ptr_nonnull(strstr(j, "\"size\":1073741824"));
    ck_assert_ptr_nonnull(strstr(j, "\"args\":[\"mmsim collective\",\"allreduce\""));
    j = mmsim_collective_json(h, "sendrecv", "topologies/dgx-a100.yaml", 4, 0, NULL, 0, 0, 0, "analytic", 32, NULL,
                              NULL, 0);
    ck_assert_ptr_nonnull(j);
    coll_numbers(j, mine, sizeof mine);
    ck_assert_int_eq(mmx_run(dir, NULL, "collective sendrecv --cluster topologies/dgx-a100.yaml --nodes 4 "
                                        "--network analytic --comm-ranks 32 --json", out, sizeof out, errbuf,
                             sizeof errbuf), 0);
    coll_numbers(out, theirs, sizeof theirs);
    ck_assert_str_eq(mine, theirs);
    /* every data type and operator, -n 5 */
    j = mmsim_collective_json(h, "reducescatter", NULL, 1, 8, "ring", 1 << 20, 1 << 22, 2, NULL, 0, "all", "all", 5);
    ck_assert_ptr_nonnull(j);
    coll_numbers(j, mine, sizeof mine);
    ck_assert_int_eq(mmx_run(dir, NULL, "collective reducescatter --cluster topologies/dgx-h100.yaml --nodes 1 "
                                        "-g 8 --algo ring -b 1M -e 4M -d all -o all -n 5 --json", out, sizeof out,
                             errbuf, sizeof errbuf), 0);
    coll_numbers(out, theirs, sizeof theirs);
    ck_assert_str_eq(mine, theirs);
    ck_assert_ptr_null(mmsim_collective_json(h, "allreduce", NULL, 0, 99, NULL, 0, 0, 0, NULL, 0, NULL, NULL, 0));
    ck_assert_str_eq(mmsim_error_key(h), "gpus");
    ck_assert_int_eq(mmsim_status(h), MMSIM_EINPUT);
    ck_assert_ptr_null(mmsim_collective_json(h, "allsum", NULL, 0, 0, NULL, 0, 0, 0, NULL, 0, NULL, NULL, 0));
    ck_assert_str_eq(mmsim_error_key(h), "op");
    ck_assert_ptr_null(mmsim_collective_json(h, "allreduce", NULL, 0, 0, NULL, 0, 0, 1.0, NULL, 0, NULL, NULL, 0));
    ck_assert_str_eq(mmsim_error_key(h), "factor");
    ck_assert_ptr_null(mmsim_collective_json(h, "allreduce", NULL, 0, 0, NULL, 0, 0, 0, NULL, 0, "float7", NULL, 0));
    ck_assert_str_eq(mmsim_error_key(h), "dtype");
    mmsim_close(h);
    mmx_rmdir(dir);
}
END_TEST

/* `mmsim workload stats --json` in process, for a mixture with a model's
 * token counts and for a trace. */
START_TEST(test_workload_stats_json_is_the_cli_json)
{
    mmsim *h = mmsim_open(NULL, NULL, 0);
    char dir[256];
    mmx_tmpdir(dir, sizeof dir, "api");
    const char *j = mmsim_workload_stats_json(h, "workloads/llava-ov-mix.yaml", "models/llava-ov-qwen2.5-7b.yaml",
                                              500, 3, -1, -1, 4096);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(mmx_run(dir, NULL, "workload stats workloads/llava-ov-mix.yaml --model "
                                        "models/llava-ov-qwen2.5-7b.yaml --samples 500 --seed 3 --max-tokens 4096 "
                                        "--json", out, sizeof out, errbuf, sizeof errbuf), 0);
    ck_assert_str_eq(j, out);
    j = mmsim_workload_stats_json(h, "workloads/internvl-1.2-sft.csv", NULL, 0, 1, 128, -1, 0);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(mmx_run(dir, NULL, "workload stats workloads/internvl-1.2-sft.csv --tokens-per-tile 128 --json",
                             out, sizeof out, errbuf, sizeof errbuf), 0);
    ck_assert_str_eq(j, out);
    ck_assert_ptr_null(mmsim_workload_stats_json(h, "workloads/none.yaml", NULL, 0, 1, -1, -1, 0));
    ck_assert_int_eq(mmsim_status(h), MMSIM_EINPUT);
    ck_assert_ptr_null(mmsim_workload_stats_json(h, "workloads/llava-ov-mix.yaml", NULL, -5, 1, -1, -1, 0));
    ck_assert_str_eq(mmsim_error_key(h), "samples");
    mmsim_close(h);
    mmx_rmdir(dir);
}
END_TEST

/* The part of a plan's JSON that does not depend on host time: from
 * "candidates" to "validate_wall_s", and from "pruned_by" on. */
static void plan_numbers(const char *j, char *outp, size_t len)
{
    const char *a = strstr(j, "  \"candidates\""), *b = strstr(j, "  \"validate_wall_s\""),
               *c = strstr(j, "  \"pruned_by\"");
    ck_assert(a && b && c && a < b && b < c);
    snprintf(outp, len, "%.*s%s", (int)(b - a), a, c);
}

/* A handle opened from text plans the scenario it holds, in this process
 * (no file read again): the same candidates, ranks and numbers as
 * `mmsim plan FILE --no-db --json` on the same text in a file. */
START_TEST(test_plan_of_a_scenario_opened_from_text)
{
    FILE *f = fopen("tests/data/api-scenario.yaml", "r");
    ck_assert_ptr_nonnull(f);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *sets[] = {"train.global_batch=32"};
    mmsim *h = mmsim_open_text(text, "job.yaml", sets, 1);
    ck_assert_int_eq(mmsim_status(h), MMSIM_OK);
    const char *j = mmsim_plan_json(h, 8, 2, 1, 0);
    ck_assert_msg(j != NULL, "%s", mmsim_error_message(h));
    ck_assert_ptr_nonnull(strstr(j, "\"scenario\": \"job.yaml\""));
    ck_assert_ptr_nonnull(strstr(j, "\"simulated\": 2,"));
    static char mine[1 << 16], cli[1 << 16];
    plan_numbers(j, mine, sizeof mine);
    mmsim_close(h);
    char dir[256];
    mmx_tmpdir(dir, sizeof dir, "api");
    ck_assert_int_eq(mmx_run(dir, NULL,
                             "plan tests/data/api-scenario.yaml --set train.global_batch=32 --gpus 8 --top 2 "
                             "--iterations 1 --no-db --json",
                             out, sizeof out, errbuf, sizeof errbuf),
                     0);
    plan_numbers(out, cli, sizeof cli);
    ck_assert_str_eq(mine, cli);
    mmx_rmdir(dir);
}
END_TEST

/* A text scenario can carry its model inline (`model:` the config's
 * keys): run and plan give the same numbers, bit for bit, as the same
 * config named by its path, and the canonical text holds the model. */
START_TEST(test_inline_model_in_a_text_scenario)
{
    static char text[8192], cfg[4096], inl[16384];
    FILE *f = fopen("tests/data/api-scenario.yaml", "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    f = fopen("models/llama-2-7b.json", "r");
    ck_assert_ptr_nonnull(f);
    n = fread(cfg, 1, sizeof cfg - 1, f);
    fclose(f);
    cfg[n] = '\0';
    const char *line = "model: models/llama-2-7b.json\n";
    char *at = strstr(text, line);
    ck_assert_ptr_nonnull(at);
    /* the JSON as a YAML flow mapping, then the rest of the scenario */
    snprintf(inl, sizeof inl, "%.*smodel: %s%s", (int)(at - text), text, cfg, at + strlen(line));
    const char *sets[] = {"train.global_batch=32"};
    mmsim *hp = mmsim_open_text(text, "path.yaml", sets, 1), *hi = mmsim_open_text(inl, "inline.yaml", sets, 1);
    ck_assert_msg(mmsim_status(hi) == MMSIM_OK, "%s", mmsim_error_message(hi));
    ck_assert_int_eq(mmsim_status(hp), MMSIM_OK);
    ck_assert_int_eq(mmsim_run(hp), MMSIM_OK);
    ck_assert_int_eq(mmsim_run(hi), MMSIM_OK);
    const char *names[] = {"iteration_time_s", "tokens_per_s", "mfu", "hfu", "bubble_fraction", "exposed_comm_s",
                           "peak_memory_gib"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        double a = mmsim_metric(hp, names[i]), b = mmsim_metric(hi, names[i]);
        ck_assert_msg(a == b && a == a, "%s: %.17g (path) vs %.17g (inline)", names[i], a, b);
    }
    ck_assert_double_gt(mmsim_metric(hi, "iteration_time_s"), 0);
    const char *jp = mmsim_plan_json(hp, 8, 2, 1, 0), *ji = mmsim_plan_json(hi, 8, 2, 1, 0);
    ck_assert_msg(jp && ji, "%s", mmsim_error_message(ji ? hp : hi));
    static char a[1 << 16], b[1 << 16];
    plan_numbers(jp, a, sizeof a);
    plan_numbers(ji, b, sizeof b);
    ck_assert_msg(!strcmp(a, b), "plans differ");
    mmsim_close(hp);
    mmsim_close(hi);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("api");
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_run_json_is_the_cli_json);
    tcase_add_test(tc, test_overrides_and_errors);
    tcase_add_test(tc, test_model_json_is_the_cli_json);
    tcase_add_test(tc, test_plan_of_a_scenario_opened_from_text);
    tcase_add_test(tc, test_inline_model_in_a_text_scenario);
    tcase_add_test(tc, test_collective_json_is_the_cli_json);
    tcase_add_test(tc, test_workload_stats_json_is_the_cli_json);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
