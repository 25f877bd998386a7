/* test_fuzz.c - replays every input in tests/data/fuzz/NAME/ through the
 * fuzz target NAME (tests/fuzz/), so that what a fuzzer once found (a crash,
 * a leak, a hang, an alias bomb) stays fixed, and through the built `mmsim`
 * as a user would meet it (`mmsim model`, `run`, `workload stats`, `sweep`
 * as fits the target): every run must exit 0 or 2, never by a signal.
 * Under the sanitizer build of scripts/test a leak or a bad access fails the
 * suite; in every build a replay must finish within the test's timeout.
 * The inputs are plain files and the targets plain C: no clang is needed
 * (scripts/fuzz, which finds new inputs, does need it). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "mmsim_exe.h"

typedef int (*target_fn)(const uint8_t *, size_t);

static const struct {
    const char *name;
    target_fn fn;
} targets[] = {
    {"scenario", mm_fuzz_scenario}, {"set", mm_fuzz_set},         {"hf_json", mm_fuzz_hf_json},
    {"topology", mm_fuzz_topology}, {"kernels", mm_fuzz_kernels}, {"mixture", mm_fuzz_mixture},
    {"trace", mm_fuzz_trace},       {"sweep", mm_fuzz_sweep},       {"megatron", mm_fuzz_megatron},
    {"torchtitan", mm_fuzz_torchtitan}, {"framework", mm_fuzz_framework}, {"loadrates", mm_fuzz_loadrates},
};

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    ck_assert_ptr_nonnull(buf);
    *len = n;
    return buf;
}

/* Replays one target's folder; returns the number of inputs. */
static int replay(int t)
{
    char dir[1024];
    const char *src = getenv("MMSIM_SRCDIR");
    snprintf(dir, sizeof dir, "%s/tests/data/fuzz/%s", src && *src ? src : ".", targets[t].name);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        size_t len = 0;
        uint8_t *buf = read_all(path, &len);
        ck_assert_int_eq(targets[t].fn(buf, len), 0);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(test_replay)
{
    int n = replay(_i);
    /* Every target has at least its hand-made hostile inputs. */
    ck_assert_msg(n > 0, "no inputs in tests/data/fuzz/%s", targets[_i].name);
}
END_TEST

/* ---- the same inputs through the CLI ------------------------------------ */

/* How each target's input reaches the CLI: `pre` FILE `post` (a sweep's
 * database goes into the scratch folder).  The `set` target's lines become
 * --set arguments (set_args). */
static const struct {
    const char *target, *pre, *post;
} cli_cmds[] = {
    {"scenario", "run --no-db --set iterations=1 ", ""},
    {"hf_json", "model ", ""},
    {"mixture", "run --no-db ", ""},
    {"mixture", "workload stats --samples 64 ", ""},
    {"mixture", "run --no-db --set iterations=1 --set workload=", ""},
    {"topology", "run --no-db --set iterations=1 --set cluster.topology=", ""},
    {"kernels", "run --no-db --set iterations=1 --set train.pass_times=", ""},
    {"trace", "workload stats --samples 64 ", ""},
    {"trace", "run --no-db --set iterations=1 --set workload=", ""},
    {"sweep", "sweep ", " --jobs 1 --quiet --db "},
    {"megatron", "run --no-db --set iterations=1 --print-scenario --megatron-script ", ""},
    {"megatron", "run --no-db --set iterations=1 --print-scenario --megatron-args ", ""},
    {"torchtitan", "run --no-db --set iterations=1 --torchtitan ", ""},
    {"framework", "run --no-db --set iterations=1 --set train.framework=", ""},
    {"set", NULL, NULL},
};

static char tmp[256], out[1 << 16], errtxt[1 << 14];

/* The first 8 lines of a `set` input as --set words, shell-quoted. */
static void set_args(const char *path, char *buf, size_t len)
{
    size_t flen = 0;
    uint8_t *text = read_all(path, &flen);
    size_t n = (size_t)snprintf(buf, len, "run --no-db --set iterations=1");
    int lines = 0;
    for (size_t i = 0; i < flen && lines < 8 && n + 16 < len; lines++) {
        n += (size_t)snprintf(buf + n, len - n, " --set '");
        for (; i < flen && text[i] != '\n' && n + 8 < len; i++) {
            if (text[i] == '\'')
                n += (size_t)snprintf(buf + n, len - n, "'\\''");
            else if (text[i] != '\0')
                buf[n++] = (char)text[i];
        }
        i++;
        buf[n++] = '\'';
        buf[n] = '\0';
    }
    free(text);
}

START_TEST(test_cli_never_crashes)
{
    const char *target = cli_cmds[_i].target;
    char dir[1024];
    const char *src = getenv("MMSIM_SRCDIR");
    snprintf(dir, sizeof dir, "%s/tests/data/fuzz/%s", src && *src ? src : ".", target);
    mmx_tmpdir(tmp, sizeof tmp, "fuzz-cli");
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "no folder %s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[1400], args[3200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (e->d_name[0] == '.' || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (cli_cmds[_i].pre)
            snprintf(args, sizeof args, "%s'%s'%s%s%s", cli_cmds[_i].pre, path, cli_cmds[_i].post,
                     cli_cmds[_i].post[0] ? tmp : "", cli_cmds[_i].post[0] ? "/sweep.db" : "");
        else
            set_args(path, args, sizeof args);
        int rc = mmx_run(tmp, NULL, args, out, sizeof out, errtxt, sizeof errtxt);
        ck_assert_msg(rc == 0 || rc == 2, "mmsim %s: exit %d (0 or 2 expected)\n%s", args, rc,
                      errtxt);
        /* What once crashed the YAML library (libfyaml-*) is invalid YAML:
         * refused, saying where (the file and a line). */
        if (cli_cmds[_i].pre && strncmp(e->d_name, "libfyaml-", 9) == 0) {
            ck_assert_msg(rc == 2, "mmsim %s: exit %d, 2 expected", args, rc);
            char where[1500];
            snprintf(where, sizeof where, "%s:", path);
            const char *at = strstr(errtxt, where);
            ck_assert_msg(at && at[strlen(where)] >= '1' && at[strlen(where)] <= '9',
                          "mmsim %s: no FILE:LINE in\n%s", args, errtxt);
        }
        n++;
    }
    closedir(d);
    mmx_rmdir(tmp);
    ck_assert_int_gt(n, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_replay, 0, (int)(sizeof targets / sizeof targets[0]));
    suite_add_tcase(s, tc);
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(cli, 600);
    tcase_add_loop_test(cli, test_cli_never_crashes, 0, (int)(sizeof cli_cmds / sizeof cli_cmds[0]));
    suite_add_tcase(s, cli);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
