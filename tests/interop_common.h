/* interop_common.h - what the suites of mmsim where users already are
 * (test_interop.c, test_megatron.c) share: the fixture (a fresh temporary
 * folder per test, removed afterwards), mmsim run into out and errtxt, a
 * number read from JSON output and a file written into the folder.
 * Static inline, so a suite that does not call one does not warn.
 * Not for: assertions of their own. */
#ifndef MM_TEST_INTEROP_COMMON_H
#define MM_TEST_INTEROP_COMMON_H

#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "mmsim_exe.h"

static char dir[256], out[1 << 20], errtxt[1 << 16];

static inline void setup(void)
{
    mmx_tmpdir(dir, sizeof dir, "interop");
}

static inline void teardown(void)
{
    mmx_rmdir(dir);
}

static inline int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int run(const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt);
}

/* The number after `"key": ` in a JSON text; NAN when absent. */
static inline double jget(const char *json, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(json, pat);
    return p ? atof(p + strlen(pat)) : NAN;
}

static inline void write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

#endif
