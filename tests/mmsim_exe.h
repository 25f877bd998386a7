/* mmsim_exe.h - what the suites that run the `mmsim` binary share: a
 * scratch folder per test, and running the binary (optionally behind a
 * prefix such as mpirun) with its stdout and stderr captured.  A header
 * of static functions, one copy per suite; MMSIM_EXE comes from meson.
 * Not for: anything the library offers (tests call it directly). */
#ifndef MMSIM_EXE_H
#define MMSIM_EXE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifndef MMSIM_EXE
#error "MMSIM_EXE must name the mmsim binary"
#endif

/* Makes a fresh folder $TMPDIR/mmsim-TAG-XXXXXX into dir. */
static inline void mmx_tmpdir(char *dir, size_t len, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, len, "%s/mmsim-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static inline void mmx_rmdir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Reads a whole (small) file into buf, terminated; "" when missing. */
static inline void mmx_slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Runs `prefix MMSIM_EXE args` (shell words) with stdout and stderr into
 * dir/out and dir/err, read back into out and err; returns the exit status
 * (-1 when it did not exit). */
static inline int mmx_run(const char *dir, const char *prefix, const char *args, char *out, size_t out_len,
                          char *err, size_t err_len)
{
    char cmd[4096], p[512];
    snprintf(cmd, sizeof cmd, "%s %s %s >%s/out 2>%s/err", prefix ? prefix : "", MMSIM_EXE, args, dir, dir);
    int st = system(cmd);
    snprintf(p, sizeof p, "%s/out", dir);
    mmx_slurp(p, out, out_len);
    snprintf(p, sizeof p, "%s/err", dir);
    mmx_slurp(p, err, err_len);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
