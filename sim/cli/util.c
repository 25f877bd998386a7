/* util.c - small printing and file helpers every subcommand shares (JSON
 * strings, the folder of an output file).  Not for: anything a program
 * embedding libmmsim needs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "api/report.h"
#include "cli/cli.h"

void mm_cli_json_string(const char *s)
{
    mm_json_string(stdout, s);
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
