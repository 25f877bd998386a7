/* test_fuzz.c - replays every input in tests/data/fuzz/NAME/ through the
 * fuzz target NAME (tests/fuzz/), so that what a fuzzer once found (a crash,
 * a leak, a hang, an alias bomb) stays fixed.  Under the sanitizer build of
 * scripts/test a leak or a bad access fails the suite; in every build a
 * replay must finish within the test's timeout.  The inputs are plain files
 * and the targets plain C: no clang is needed (scripts/fuzz, which finds
 * new inputs, does need it). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

typedef int (*target_fn)(const uint8_t *, size_t);

static const struct {
    const char *name;
    target_fn fn;
} targets[] = {
    {"scenario", mm_fuzz_scenario}, {"set", mm_fuzz_set},         {"hf_json", mm_fuzz_hf_json},
    {"topology", mm_fuzz_topology}, {"kernels", mm_fuzz_kernels}, {"mixture", mm_fuzz_mixture},
    {"trace", mm_fuzz_trace},       {"sweep", mm_fuzz_sweep},
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

int main(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_replay, 0, (int)(sizeof targets / sizeof targets[0]));
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
