/* cli.h - the subcommands of `mmsim`, one file each (main.c dispatches).
 * A subcommand parses its own arguments, calls the library, prints, and
 * returns the process exit status: 0 success, 2 bad input, 1 internal error.
 * Not for: anything a program embedding libmmsim would need. */
#ifndef MM_CLI_H
#define MM_CLI_H

#include "util/err.h"

/* Prints "mmsim: file:line: key 'k': message" to stderr and returns the exit
 * status for the error (2 for MM_EINPUT, 1 otherwise). */
int mm_cli_fail(const mm_err *err);

/* A command-line error, through mm_err_format like every other message:
 * prints "mmsim: <cli>: key 'FLAG': WHAT 'VALUE' (see mmsim help CMD)" and
 * returns 2.  FLAG and VALUE may be NULL or "": that part is left out (no
 * empty quotes); CMD NULL leaves out the pointer to the help. */
int mm_cli_usage_error(const char *cmd, const char *flag, const char *what, const char *value);

/* Prints s as a JSON string literal (quotes and escapes) on stdout. */
void mm_cli_json_string(const char *s);

/* The database first: makes every missing folder above `path` (like
 * mkdir -p, so results/ and a/b/c/ alike), then opens the store once, which
 * creates or migrates it and refuses a directory, a non-SQLite file or a
 * newer schema.  Called before any simulation, so that a bad --db costs
 * nothing.  Returns 0 or -code with err filled. */
int mm_cli_open_db(const char *path, mm_err *err);
/* Only the folders of mm_cli_open_db, errors left for the store's open to
 * report (for callers that open the store themselves). */
void mm_cli_make_parent(const char *path);

int mm_cli_run(int argc, char **argv); /* main.c */
int mm_cli_model(int argc, char **argv); /* cmd_model.c */
int mm_cli_collective(int argc, char **argv); /* cmd_collective.c */
int mm_cli_workload(int argc, char **argv); extern const char mm_cli_workload_usage[]; /* cmd_workload.c */
int mm_cli_sweep(int argc, char **argv); /* cmd_sweep.c */
int mm_cli_report(int argc, char **argv); /* cmd_report.c */
int mm_cli_plan(int argc, char **argv); extern const char mm_cli_plan_usage[]; /* cmd_plan.c */

#endif
