/* util.c - small printing and file helpers every subcommand shares (JSON
 * strings, the folder of an output file).  Not for: anything a program
 * embedding libmmsim needs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

int mm_cli_usage_error(const char *cmd, const char *flag, const char *what, const char *value)
{
    mm_err err;
    char help[64] = "";
    if (cmd)
        snprintf(help, sizeof help, " (see mmsim help %s)", cmd);
    if (value && value[0])
        mm_err_set(&err, MM_EINPUT, "<cli>", 0, flag, "%s '%s'%s", what, value, help);
    else
        mm_err_set(&err, MM_EINPUT, "<cli>", 0, flag, "%s%s", what, help);
    return mm_cli_fail(&err);
}

void mm_cli_json_string(const char *s)
{
    putchar('"');
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

void mm_cli_make_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return;
    char dir[512];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return; /* the store's open reports the real error */
}
