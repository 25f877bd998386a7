/* main.c - the `mmsim` command line: the dispatch to the subcommands
 * (cmd_*.c; their usage texts are usage.c's), which parse their arguments with getopt_long,
 * call the library, print, and choose the exit status (0 success, 2 bad
 * input, 1 internal error).  Nothing here models anything.
 * Not for: logic a planner embedding libmmsim would also need. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "mmsim_config.h"
#include "scenario/scenario.h"


/* One entry per subcommand; each lives in its own cmd_*.c file (cli.h),
 * its usage text in usage.c. */
static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} commands[] = {
    {"run", mm_cli_run}, {"model", mm_cli_model}, {"collective", mm_cli_collective},
    {"workload", mm_cli_workload}, {"sweep", mm_cli_sweep}, {"report", mm_cli_report},
    {"plan", mm_cli_plan}, {"profile", mm_cli_profile}, {"completion", mm_cli_completion},
};

static int help(int argc, char **argv)
{
    if (argc < 3) {
        fputs(mm_cli_usage_main, stdout);
        return 0;
    }
    if (argc > 3) {
        fprintf(stderr, "mmsim: <cli>: help takes one command, got also '%s' (see mmsim help help)\n", argv[3]);
        return 2;
    }
    if (!strcmp(argv[2], "scenario")) { /* the key table's own listing */
        char *text = mm_scenario_help_text();
        if (text)
            fputs(text, stdout);
        free(text);
        return text ? 0 : 1;
    }
    const char *usage = mm_cli_usage_of(argv[2]);
    if (usage) {
        fputs(usage, stdout);
        return 0;
    }
    fprintf(stderr, "mmsim: no command '%s' (see mmsim --help)\n", argv[2]);
    return 2;
}

int main(int argc, char **argv)
{
    /* Past a file-size limit (ulimit -f) write() fails with EFBIG, which
     * the store reports (exit 1, the database intact), instead of the
     * signal killing the process in the middle of a write. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        fputs(mm_cli_usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(mm_cli_usage_main, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        if (argc > 2) {
            fprintf(stderr, "mmsim: <cli>: --version takes no arguments, got '%s'\n", argv[2]);
            return 2;
        }
        printf("mmsim %s\n", MMSIM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help"))
        return help(argc, argv);
    /* a subcommand sees its own name as argv[0], as getopt_long expects */
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "mmsim: unknown command '%s' (see mmsim --help)\n", cmd);
    return 2;
}
