/* err.c - filling, formatting and "did you mean" for mm_err. */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void mm_err_clear(mm_err *err)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
}

int mm_err_set(mm_err *err, int code, const char *file, int line,
               const char *key, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        snprintf(err->file, sizeof err->file, "%s", file ? file : "");
        err->line = line;
        snprintf(err->key, sizeof err->key, "%s", key ? key : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -code;
}

void mm_err_format(const mm_err *err, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (err->file[0]) {
        if (err->line > 0)
            n += (size_t)snprintf(buf + n, len - n, "%s:%d: ", err->file, err->line);
        else
            n += (size_t)snprintf(buf + n, len - n, "%s: ", err->file);
    }
    if (n < len && err->key[0])
        n += (size_t)snprintf(buf + n, len - n, "key '%s': ", err->key);
    if (n < len)
        snprintf(buf + n, len - n, "%s", err->msg);
}

int mm_edit_distance(const char *a, const char *b)
{
    /* Two-row dynamic programme; keys are short, so a fixed bound is fine. */
    enum { MAXL = 128 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAXL || lb >= MAXL)
        return (int)(la > lb ? la : lb);
    int prev[MAXL], cur[MAXL];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            int m = sub < del ? sub : del;
            cur[j] = m < ins ? m : ins;
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

const char *mm_nearest(const char *key, const char *const *candidates)
{
    int limit = (int)strlen(key) / 3;
    if (limit < 2)
        limit = 2;
    const char *best = NULL;
    int bestd = limit + 1;
    for (size_t i = 0; candidates[i]; i++) {
        int d = mm_edit_distance(key, candidates[i]);
        if (d < bestd) {
            bestd = d;
            best = candidates[i];
        }
    }
    return best;
}
