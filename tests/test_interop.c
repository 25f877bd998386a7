/* test_interop.c - mmsim where users already are: nccl-tests' output
 * format out (read back by a parser written to nccl-tests' src/util.cu
 * format), the command-line conventions (getopt_long forms, -h on every
 * command, help help, --version), the data files from any folder, the
 * Perfetto trace and the plot script.  Megatron-LM's argument lists and
 * launch scripts are test_megatron.c's. */
#include "mmsim_config.h"
#include "interop_common.h"

/* ---- nccl-tests output ------------------------------------------------------- */

/* A row as nccl-tests prints it (src/util.cu writeBenchmarkLinePreamble
 * and writeBenchmarkLineBody): size count type redop root, then time
 * algbw busbw #wrong twice (out-of-place, in-place). */
typedef struct nt_row {
    double size, count;
    char type[16], redop[16];
    int root;
    double t[2], alg[2], bus[2];
    char wrong[2][16];
} nt_row;

/* Reads nccl-tests output the way published parsers do: lines starting
 * with '#' are comments, except the column header and "# Avg bus
 * bandwidth : X"; every other non-empty line is a row of 13 fields. */
static int nt_parse(const char *text, nt_row *rows, int cap, double *avg, int *header_ok)
{
    int n = 0;
    *avg = NAN;
    *header_ok = 0;
    char line[1024];
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        p += len + (p[len] == '\n');
        if (line[0] == '#') {
            const char *a = strstr(line, "Avg bus bandwidth");
            if (a) {
                const char *c = strchr(a, ':');
                ck_assert_ptr_nonnull(c);
                *avg = atof(c + 1);
            }
            char f[13][16];
            if (sscanf(line, "# %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s", f[0], f[1], f[2],
                       f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12]) == 13 &&
                !strcmp(f[0], "size") && !strcmp(f[1], "count") && !strcmp(f[2], "type") && !strcmp(f[3], "redop") &&
                !strcmp(f[4], "root") && !strcmp(f[5], "time") && !strcmp(f[6], "algbw") && !strcmp(f[8], "#wrong") &&
                !strcmp(f[12], "#wrong"))
                *header_ok = 1;
            continue;
        }
        if (!line[0])
            continue;
        ck_assert_int_lt(n, cap);
        nt_row *r = &rows[n];
        int k = sscanf(line, "%lf %lf %15s %15s %d %lf %lf %lf %15s %lf %lf %lf %15s", &r->size, &r->count, r->type,
                       r->redop, &r->root, &r->t[0], &r->alg[0], &r->bus[0], r->wrong[0], &r->t[1], &r->alg[1],
                       &r->bus[1], r->wrong[1]);
        ck_assert_msg(k == 13, "not an nccl-tests row (%d fields): %s", k, line);
        n++;
    }
    return n;
}

START_TEST(nccl_tests_format)
{
    /* --opt=value works everywhere, --cluster=FILE included */
    ck_assert_int_eq(run("collective --cluster=topologies/dgx-h100.yaml --nodes=2 --op=allreduce -b 1K -e 1G -f 4"),
                     0);
    static nt_row rows[64];
    double avg;
    int header;
    int n = nt_parse(out, rows, 64, &avg, &header);
    ck_assert_int_eq(n, 11); /* 1K, 4K, ..., 1G */
    ck_assert(header);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        nt_row *r = &rows[i];
        ck_assert_double_eq(r->size, 1024.0 * pow(4, i));
        ck_assert_double_eq(r->count, r->size / 4); /* float elements */
        ck_assert_str_eq(r->type, "float");
        ck_assert_str_eq(r->redop, "sum");
        ck_assert_int_eq(r->root, -1);
        for (int h = 0; h < 2; h++) {
            /* algbw = size / time (GB/s from bytes and microseconds), to
             * the 2 decimals (or 3 digits) printed; busbw = algbw x 2(n-1)/n */
            double alg = r->size / (r->t[h] * 1e3);
            ck_assert_double_eq_tol(r->alg[h], alg, 0.006 + 0.01 * alg * (r->t[h] < 10));
            ck_assert_double_eq_tol(r->bus[h], r->alg[h] * 2 * 15 / 16, 0.02);
            ck_assert_str_eq(r->wrong[h], "N/A");
            sum += r->bus[h];
        }
        ck_assert_double_eq(r->t[0], r->t[1]);
    }
    /* nccl-tests' footer: the mean busbw over every row and half */
    ck_assert_double_eq_tol(avg, sum / (2 * n), 0.01);
    /* the same times as the JSON form */
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --nodes 2 --op allreduce --min 1G --max 1G "
                         "--json"),
                     0);
    const char *tj = strstr(out, "\"out_of_place\":{\"time\":");
    ck_assert_ptr_nonnull(tj);
    ck_assert_double_eq_tol(atof(tj + 23), rows[n - 1].t[0], 0.01);
    /* all-gather: a rank's share as the count, redop none; broadcast: root 0 */
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --op allgather --min 1M --max 1M "
                         "--show-algo"),
                     0);
    n = nt_parse(out, rows, 64, &avg, &header);
    ck_assert_int_eq(n, 1);
    ck_assert_double_eq(rows[0].count, 1048576.0 / 4 / 8);
    ck_assert_str_eq(rows[0].redop, "none");
    ck_assert_ptr_nonnull(strstr(out, "# mmsim algorithm:"));
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --op broadcast --min 1M --max 1M"), 0);
    n = nt_parse(out, rows, 64, &avg, &header);
    ck_assert_int_eq(rows[0].root, 0);
}
END_TEST

/* ---- command-line conventions -------------------------------------------------- */

START_TEST(cli_conventions)
{
    const char *cmds[] = {"run", "model", "collective", "workload", "sweep", "report", "plan", "completion"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "usage: mmsim %s", cmds[i]);
        ck_assert_int_eq(run("%s --help", cmds[i]), 0);
        ck_assert_msg(strstr(out, want), "%s --help: %s", cmds[i], out);
        ck_assert_int_eq(run("%s -h", cmds[i]), 0);
        ck_assert_msg(strstr(out, want), "%s -h: %s", cmds[i], out);
        ck_assert_int_eq(run("help %s", cmds[i]), 0);
        ck_assert_msg(strstr(out, want), "help %s: %s", cmds[i], out);
    }
    ck_assert_int_eq(run("completion fish"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "'fish'"));
    ck_assert_int_eq(run("completion"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "bash or zsh"));
    ck_assert_int_eq(run("help help"), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: mmsim help"));
    ck_assert_int_eq(run("help nope"), 2);
    ck_assert_int_eq(run("--version"), 0);
    ck_assert_int_eq(run("--version extra"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "extra"));
    /* --opt=value and --opt value give the same run, options after operands too */
    ck_assert_int_eq(run("run tests/data/api-scenario.yaml --set=parallel.llm.tp=4 --set parallel.llm.dp=1 --no-db -q"),
                     0);
    char a[256];
    snprintf(a, sizeof a, "%.200s", out);
    ck_assert_int_eq(run("run --no-db --set parallel.llm.tp=4 -s parallel.llm.dp=1 tests/data/api-scenario.yaml -q"),
                     0);
    ck_assert_str_eq(out, a);
    ck_assert_ptr_nonnull(strstr(out, "iteration_time_s "));
    ck_assert_int_eq(run("model --seq=1024 models/llama-2-7b.json --json"), 0);
    snprintf(a, sizeof a, "%.200s", out);
    ck_assert_int_eq(run("model models/llama-2-7b.json --seq 1024 --json"), 0);
    ck_assert(!strncmp(out, a, strlen(a)));
    /* errors name the option */
    ck_assert_int_eq(run("run --trace"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "'--trace': needs a value"));
    ck_assert_int_eq(run("model models/llama-2-7b.json --seq=zero"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "--seq"));
    ck_assert_int_eq(run("collective --op allreduce --cluster=topologies/dgx-h100.yaml --bogus=1"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "'--bogus'"));
    /* -v adds the per-iteration table */
    ck_assert_int_eq(run("run tests/data/api-scenario.yaml --no-db -v"), 0);
    ck_assert_ptr_nonnull(strstr(out, "iteration   time (s)"));
}
END_TEST

/* ---- data files from any folder ------------------------------------------------------ */

/* From a folder without models/ or topologies/, the relative paths of the
 * default scenario resolve under $MMSIM_DATADIR.  The data folder here holds
 * exactly the folders meson.build installs into share/mmsim
 * (MMSIM_DATA_DIRS, from the same list), each a link into the checkout, so
 * that a folder the default scenario needs and the install leaves out fails
 * here; scripts/test also installs a build and runs the installed mmsim
 * with MMSIM_DATADIR unset. */
START_TEST(datadir_from_any_folder)
{
    const char *src = getenv("MMSIM_SRCDIR"), *dirs = getenv("MMSIM_DATA_DIRS");
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(dirs);
    char prefix[1024], share[512], from[1024], to[1024];
    snprintf(prefix, sizeof prefix, "cd %s && MMSIM_DATADIR=/nonexistent", dir);
    if (access(MMSIM_DATADIR "/models", F_OK) != 0) { /* no installed copy to fall back on */
        ck_assert_int_eq(mmx_run(dir, prefix, "run --no-db -q", out, sizeof out, errtxt, sizeof errtxt), 2);
        ck_assert_ptr_nonnull(strstr(errtxt, "models/llava-ov-qwen2.5-7b.yaml"));
    }
    snprintf(share, sizeof share, "%s/share", dir);
    ck_assert_int_eq(mkdir(share, 0755), 0);
    int n = 0;
    for (const char *p = dirs; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(from, sizeof from, "%s/%.*s", src, (int)len, p);
        snprintf(to, sizeof to, "%s/%.*s", share, (int)len, p);
        ck_assert_int_eq(symlink(from, to), 0);
        n++;
        p += len + (p[len] == ':');
    }
    ck_assert_int_gt(n, 0);
    snprintf(prefix, sizeof prefix, "cd %s && MMSIM_DATADIR=%s", dir, share);
    /* the default scenario: model, topology and its kernel tables, workload,
     * framework profile */
    ck_assert_int_eq(mmx_run(dir, prefix, "run --no-db -q --set iterations=1", out, sizeof out, errtxt,
                             sizeof errtxt),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "iteration_time_s "));
    ck_assert_int_eq(mmx_run(dir, prefix, "run --no-db -q --set model=models/llama-2-7b.json", out, sizeof out,
                             errtxt, sizeof errtxt),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "iteration_time_s "));
    ck_assert_int_eq(mmx_run(dir, prefix, "collective --cluster=topologies/dgx-h100.yaml --op allreduce --min 1M --max 1M",
                             out, sizeof out, errtxt, sizeof errtxt),
                     0);
    ck_assert_int_eq(mmx_run(dir, prefix, "model models/llama-2-7b.json --json", out, sizeof out, errtxt,
                             sizeof errtxt),
                     0);
}
END_TEST

/* ---- the Perfetto trace ----------------------------------------------------------- */

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Flow arrows pair up (one per pipeline transfer, each "s" with its "f"),
 * the module is a category, and the in-flight counter peaks at pp on the
 * first stage under 1F1B (Narayanan et al. SC'21 Sec. 2.2: stage s holds
 * min(pp - s, m) micro-batches). */
START_TEST(trace_flows_and_counters)
{
    char path[512];
    snprintf(path, sizeof path, "%s/t.json", dir);
    ck_assert_int_eq(run("run --no-db --json --trace %s --set model=models/llama-2-7b.json --set iterations=1 "
                         "--set 'parallel.llm={tp: 2, pp: 4, dp: 2}' --set train.global_batch=16",
                         path),
                     0);
    const char *st0 = strstr(out, "\"stage\": 0,");
    ck_assert_ptr_nonnull(st0);
    double stage0_gib = jget(st0, "memory_gib");
    static char t[1 << 22];
    mmx_slurp(path, t, sizeof t);
    int s = count(t, "\"ph\":\"s\""), f = count(t, "\"ph\":\"f\""), pp = count(t, "\"cat\":\"pp,llm\"");
    ck_assert_int_gt(pp, 0);
    ck_assert_int_eq(s, pp);
    ck_assert_int_eq(f, pp);
    ck_assert_int_gt(count(t, "\"cat\":\"fwd,llm\""), 0);
    ck_assert_int_gt(count(t, "\"name\":\"llm memory (GiB)\""), 0);
    /* the peak of rank 0's (stage 0's) in-flight counter */
    int peak = 0;
    for (const char *p = t; (p = strstr(p, "\"micro-batches in flight\",\"ph\":\"C\",\"pid\":0,")); p++) {
        const char *v = strstr(p, "\"llm\":");
        if (v && atoi(v + 6) > peak)
            peak = atoi(v + 6);
    }
    ck_assert_int_eq(peak, 4);
    /* at that peak the memory counter is the run's stage-0 memory (the
     * same memory model: states + 4 micro-batches of activations) */
    double peak_gib = 0;
    for (const char *p = t; (p = strstr(p, "\"llm memory (GiB)\",\"ph\":\"C\",\"pid\":0,")); p++) {
        const char *a = strstr(p, "\"states\":"), *b = strstr(p, "\"activations\":");
        if (a && b && atof(a + 9) + atof(b + 14) > peak_gib)
            peak_gib = atof(a + 9) + atof(b + 14);
    }
    ck_assert_double_eq_tol(peak_gib, stage0_gib, 2e-4);
    /* the multimodal default: encoder outputs flow into the LLM */
    ck_assert_int_eq(run("run --no-db --trace %s --set iterations=1", path), 0);
    mmx_slurp(path, t, sizeof t);
    ck_assert_int_gt(count(t, "\"name\":\"encoder to llm\""), 0);
    ck_assert_int_gt(count(t, "\"cat\":\"fwd,vision\""), 0);
}
END_TEST

/* ---- scripts/plot ------------------------------------------------------------------------ */

/* The sweep plot filters with --where and refuses an axis the sweep does
 * not have; the timeline plot draws a trace (when gnuplot is installed). */
START_TEST(plot_script)
{
    if (system("command -v gnuplot >/dev/null 2>&1 && command -v sqlite3 >/dev/null 2>&1") != 0)
        return; /* scripts/test installs both; a bare machine skips */
    const char *src = getenv("MMSIM_SRCDIR");
    ck_assert_ptr_nonnull(src);
    write_file("s.yaml", "name: tiny\nset: {model: models/llama-2-7b.json, workload: text, iterations: 1}\n"
                         "axes:\n  - key: train.global_batch\n    values: [16, 32, 64]\n"
                         "  - key: train.seq_len\n    values: [1024, 2048]\n");
    ck_assert_int_eq(run("sweep %s/s.yaml --db %s/s.db --jobs 1 -q", dir, dir), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s/scripts/plot sweep %s/s.db --x train.global_batch --y tokens_per_s --where train.seq_len=2048 "
             "%s/a.png >%s/plot.out 2>&1",
             src, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/a.png", dir);
    ck_assert_int_eq(access(p, R_OK), 0);
    snprintf(cmd, sizeof cmd,
             "%s/scripts/plot sweep %s/s.db --x train.global_batch --y tokens_per_s --where nope=1 %s/b.png "
             ">%s/plot.out 2>&1",
             src, dir, dir, dir);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
    ck_assert_int_eq(run("run --no-db --trace %s/t.json --set model=models/llama-2-7b.json --set iterations=1 -q",
                         dir),
                     0);
    snprintf(cmd, sizeof cmd, "%s/scripts/plot timeline %s/t.json %s/t.png --ranks 2 >%s/plot.out 2>&1", src, dir,
             dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(p, sizeof p, "%s/t.png", dir);
    ck_assert_int_eq(access(p, R_OK), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("interop");
    TCase *tc = tcase_create("interop");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, nccl_tests_format);
    tcase_add_test(tc, cli_conventions);
    tcase_add_test(tc, trace_flows_and_counters);
    tcase_add_test(tc, datadir_from_any_folder);
    tcase_add_test(tc, plot_script);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
