/* util.c - small printing and file helpers every subcommand shares (JSON
 * strings, the folder of an output file).  Not for: anything a program
 * embedding libmmsim needs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "store/store.h"

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

/* mkdir -p of the folder that holds `path`: every missing level, or none
 * (the first that cannot be made is reported). */
static int make_parents(const char *path, mm_err *err)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    if ((size_t)(slash - path) >= sizeof dir)
        return mm_err_set(err, MM_EINPUT, path, 0, "--db", "path too long");
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    for (char *p = dir + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        struct stat sb;
        if (stat(dir, &sb) != 0 && mkdir(dir, 0777) != 0 && errno != EEXIST)
            return mm_err_set(err, MM_EINPUT, path, 0, "--db", "cannot create the folder '%s': %s",
                              dir, strerror(errno));
        if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
            return mm_err_set(err, MM_EINPUT, path, 0, "--db", "'%s' is not a folder", dir);
        *p = c;
        if (c == '\0')
            return 0;
    }
}

void mm_cli_make_parent(const char *path)
{
    mm_err ignored;
    (void)make_parents(path, &ignored); /* the store's open reports the real error */
}

int mm_cli_open_db(const char *path, mm_err *err)
{
    int rc = make_parents(path, err);
    if (rc < 0)
        return rc;
    mm_store *st = NULL;
    rc = mm_store_open(&st, path, err);
    mm_store_close(st);
    return rc;
}
