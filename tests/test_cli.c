/* test_cli.c - the `mmsim` binary as a user runs it: exit statuses, error
 * messages naming file, line and key, --json keys, the database and the
 * trace file.  The binary's path comes from meson (MMSIM_EXE). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenario/scenario.h"
#include "store/store.h"
#include "util/doc.h"

#include "mmsim_exe.h"

static char tmpdir[256];
static char out[1 << 16], errtxt[1 << 14];


/* Runs mmsim with `args` (shell words); returns its exit status and fills
 * out / errtxt with its stdout and stderr. */
static int mmsim(const char *args)
{
    return mmx_run(tmpdir, NULL, args, out, sizeof out, errtxt, sizeof errtxt);
}

static void setup(void)
{
    mmx_tmpdir(tmpdir, sizeof tmpdir, "cli");
}

static void teardown(void)
{
    mmx_rmdir(tmpdir);
}

START_TEST(version_and_help)
{
    ck_assert_int_eq(mmsim("--version"), 0);
    ck_assert_ptr_nonnull(strstr(out, "mmsim 0."));
    ck_assert_int_eq(mmsim("--help"), 0);
    ck_assert_ptr_nonnull(strstr(out, "run [SCENARIO.yaml]"));
    ck_assert_int_eq(mmsim("help run"), 0);
    ck_assert_ptr_nonnull(strstr(out, "--set KEY=VALUE"));
    /* help scenario: the key table's listing, exactly */
    ck_assert_int_eq(mmsim("help scenario"), 0);
    char *keys = mm_scenario_help_text();
    ck_assert_ptr_nonnull(keys);
    ck_assert_str_eq(out, keys);
    free(keys);
    ck_assert_int_eq(mmsim("help nosuch"), 2);
    ck_assert_int_eq(mmsim("frobnicate"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "frobnicate"));
    ck_assert_int_eq(mmsim(""), 2);
}
END_TEST

START_TEST(json_has_design_keys)
{
    ck_assert_int_eq(mmsim("run --no-db --json"), 0);
    const char *keys[] = {"iteration_time_s", "tokens_per_s", "samples_per_s", "mfu", "hfu",
                          "tflops_per_gpu", "hw_tflops_per_gpu", "bubble_fraction", "exposed_comm_s",
                          "peak_memory_gib", "oom", "gpus", "events", "wall_s"};
    /* parse it as JSON and look every key up */
    mm_doc d;
    mm_err derr;
    ck_assert_msg(mm_doc_load_string(&d, "out.json", out, &derr) == 0, "%s", derr.msg);
    mm_node *root = mm_doc_root(&d);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(mm_node_get(root, keys[i]) != NULL, "missing %s", keys[i]);
    const char *gpus = mm_node_scalar(mm_node_get(root, "gpus"), NULL);
    ck_assert_str_eq(gpus, "16");
    const char *mem = mm_node_scalar(mm_node_get(root, "peak_memory_gib"), NULL);
    ck_assert_msg(atof(mem) > 5 && atof(mem) < 70, "peak_memory_gib %s", mem);
    const char *oom = mm_node_scalar(mm_node_get(root, "oom"), NULL);
    ck_assert_str_eq(oom, "false");
    mm_doc_free(&d);
}
END_TEST

/* A layout that cannot fit is an answer: oom true, no time, per-stage
 * memory, exit 0 (design.md section 5).  Llama-3-70B on tp 4 x pp 2 needs
 * ~140 GiB on stage 0 (17.6B parameters x 6 + 12/2 bytes alone > 80 GB). */
START_TEST(oom_reports_memory)
{
    ck_assert_int_eq(mmsim("run --no-db --json --set model=models/llama-3-70b.json --set train.global_batch=32"), 0);
    mm_doc d;
    mm_err derr;
    ck_assert_msg(mm_doc_load_string(&d, "out.json", out, &derr) == 0, "%s", derr.msg);
    mm_node *root = mm_doc_root(&d);
    ck_assert_str_eq(mm_node_scalar(mm_node_get(root, "oom"), NULL), "true");
    ck_assert_str_eq(mm_node_scalar(mm_node_get(root, "iteration_time_s"), NULL), "null");
    ck_assert(atof(mm_node_scalar(mm_node_get(root, "peak_memory_gib"), NULL)) > 80);
    mm_node *st = mm_node_get(root, "stages");
    ck_assert_int_eq(mm_node_count(st), 2);
    for (int i = 0; i < 2; i++) {
        mm_node *m = mm_node_get(mm_node_item(st, i), "memory_gib");
        ck_assert(atof(mm_node_scalar(m, NULL)) > 50);
    }
    mm_doc_free(&d);
    ck_assert_int_eq(mmsim("run --no-db --set model=models/llama-3-70b.json --set train.global_batch=32"), 0);
    ck_assert_ptr_nonnull(strstr(out, "OUT OF MEMORY"));
}
END_TEST

START_TEST(model_command)
{
    ck_assert_int_eq(mmsim("model models/llava-1.5-7b.json --json --set parallel.llm.tp=8 --set parallel.llm.pp=1"), 0);
    mm_doc d;
    mm_err derr;
    ck_assert_msg(mm_doc_load_string(&d, "out.json", out, &derr) == 0, "%s", derr.msg);
    mm_node *root = mm_doc_root(&d);
    double params = atof(mm_node_scalar(mm_node_get(root, "params"), NULL));
    ck_assert_msg(fabs(params - 7.063e9) < 0.01e9, "params %g", params);
    mm_node *mods = mm_node_get(root, "modules");
    const char *names[] = {"vision", "projector", "llm"};
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_nonnull(mm_node_get(mm_node_get(mods, names[i]), "params"));
    ck_assert(atof(mm_node_scalar(mm_node_get(root, "flops_fwd_per_token"), NULL)) > 1e10);
    mm_node *mem = mm_node_get(root, "memory_gib");
    ck_assert_int_eq(mm_node_count(mem), 1);
    mm_doc_free(&d);
    ck_assert_int_eq(mmsim("model models/llava-ov-qwen2.5-7b.yaml"), 0);
    ck_assert_ptr_nonnull(strstr(out, "projector"));
    ck_assert_int_eq(mmsim("help model"), 0);
    /* bad input: exit 2, naming the file or key */
    ck_assert_int_eq(mmsim("model models/no-such.json"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "models/no-such.json"));
    ck_assert_int_eq(mmsim("model models/llama-2-7b.json --set parallel.llm.tpp=2"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "parallel.llm.tpp"));
    ck_assert_int_eq(mmsim("model models/llama-2-7b.json --seq x"), 2);
    ck_assert_int_eq(mmsim("model tests/data/model/bad-projector.yaml"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "bad-projector.yaml:3"));
    ck_assert_ptr_nonnull(strstr(errtxt, "projector.type"));
}
END_TEST

START_TEST(bad_input_exits_2)
{
    ck_assert_int_eq(mmsim("run --no-db tests/data/cli/nope.yaml"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "tests/data/cli/nope.yaml"));
    ck_assert_int_eq(mmsim("run --no-db tests/data/cli/syntax.yaml"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "tests/data/cli/syntax.yaml:4"));
    ck_assert_int_eq(mmsim("run --no-db tests/data/cli/unknown-key.yaml"), 2);
    ck_assert_msg(strstr(errtxt, "tests/data/cli/unknown-key.yaml:4") && strstr(errtxt, "global_bach") &&
                      strstr(errtxt, "global_batch"),
                  "%s", errtxt);
    ck_assert_int_eq(mmsim("run --no-db --set parallel.llm.tp=0"), 2);
    ck_assert_msg(strstr(errtxt, "--set") && strstr(errtxt, "parallel.llm.tp"), "%s", errtxt);
    ck_assert_int_eq(mmsim("run --no-db --set parallel.llm.pp=-1"), 2);
    ck_assert_int_eq(mmsim("run --no-db --set train.seq_len=abc"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "train.seq_len"));
    ck_assert_int_eq(mmsim("run --no-db --set parallel.llm.dp=4"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "16"));
    ck_assert_int_eq(mmsim("run --no-db --set train.global_batch=5"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "train.global_batch"));
    ck_assert_int_eq(mmsim("run --no-db --bogus"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "--bogus"));
    ck_assert_int_eq(mmsim("run --no-db --set"), 2);
    ck_assert_int_eq(mmsim("run a.yaml b.yaml"), 2);
}
END_TEST

START_TEST(runs_accumulate_in_db)
{
    char args[512], db[300];
    snprintf(db, sizeof db, "%s/r.db", tmpdir);
    snprintf(args, sizeof args, "run --db %s --set iterations=1", db);
    ck_assert_int_eq(mmsim(args), 0);
    ck_assert_ptr_nonnull(strstr(out, "stored as run 1"));
    ck_assert_int_eq(mmsim(args), 0);
    mm_store *st;
    mm_err err;
    ck_assert_int_eq(mm_store_open(&st, db, &err), 0);
    int64_t n = 0;
    ck_assert_int_eq(mm_store_count_runs(st, &n, &err), 0);
    ck_assert_int_eq(n, 2);
    double v = 0;
    ck_assert_int_eq(mm_store_get_metric(st, 2, "iteration_time_s", &v, &err), 0);
    ck_assert(v > 0);
    mm_store_close(st);
    /* a bad run leaves the database as it was */
    snprintf(args, sizeof args, "run --db %s --set parallel.llm.tp=3", db);
    ck_assert_int_eq(mmsim(args), 2);
    ck_assert_int_eq(mm_store_open(&st, db, &err), 0);
    ck_assert_int_eq(mm_store_count_runs(st, &n, &err), 0);
    ck_assert_int_eq(n, 2);
    mm_store_close(st);
}
END_TEST

/* The trace is valid JSON in Chrome's trace-event format: a traceEvents
 * list whose complete events carry name, ph, pid, tid, ts and dur.  A
 * quarter of the default batch keeps the file (about 2,300 events, 55,000
 * nodes with their keys) inside the document reader's bound
 * (MM_DOC_MAX_NODES) that reads it back here. */
START_TEST(trace_structure)
{
    char args[512], path[300];
    snprintf(path, sizeof path, "%s/t.json", tmpdir);
    snprintf(args, sizeof args,
             "run --no-db --trace %s --set iterations=1 --set model=models/llama-2-7b.json --set train.global_batch=16",
             path);
    ck_assert_int_eq(mmsim(args), 0);
    mm_doc d;
    mm_err derr;
    ck_assert_msg(mm_doc_load_file(&d, path, &derr) == 0, "%s", derr.msg);
    mm_node *ev = mm_node_get(mm_doc_root(&d), "traceEvents");
    ck_assert(ev && mm_node_is_sequence(ev));
    int it = 0;
    mm_node *e;
    int complete = 0, fwd = 0, bwd = 0;
    while ((e = mm_node_item(ev, it++))) {
        const char *ph = mm_node_scalar(mm_node_get(e, "ph"), NULL);
        ck_assert_ptr_nonnull(ph);
        if (strcmp(ph, "X"))
            continue;
        complete++;
        const char *need[] = {"name", "cat", "pid", "tid", "ts", "dur"};
        for (int k = 0; k < 6; k++)
            ck_assert_ptr_nonnull(mm_node_get(e, need[k]));
        const char *cat = mm_node_scalar(mm_node_get(e, "cat"), NULL);
        /* categories "PASS,MODULE" */
        fwd += !strcmp(cat, "fwd,llm");
        bwd += !strcmp(cat, "bwd,llm");
        ck_assert(atof(mm_node_scalar(mm_node_get(e, "dur"), NULL)) >= 0);
    }
    /* 2 stages x 16 layers x 8 micro-batches (16 samples, micro-batch 1,
     * dp 2) x 2 DP replicas */
    ck_assert_int_eq(fwd, 2 * 16 * 8 * 2);
    ck_assert_int_eq(bwd, fwd);
    ck_assert(complete > fwd + bwd);
    mm_doc_free(&d);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, version_and_help);
    tcase_add_test(tc, json_has_design_keys);
    tcase_add_test(tc, oom_reports_memory);
    tcase_add_test(tc, model_command);
    tcase_add_test(tc, bad_input_exits_2);
    tcase_add_test(tc, runs_accumulate_in_db);
    tcase_add_test(tc, trace_structure);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cli_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
