/* cli.h - the subcommands of `mmsim`, one file each (main.c dispatches).
 * A subcommand parses its own arguments, calls the library, prints, and
 * returns the process exit status: 0 success, 2 bad input, 1 internal error.
 * Not for: anything a program embedding libmmsim would need. */
#ifndef MM_CLI_H
#define MM_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "util/err.h"

/* Each command's options as its getopt_long reads them, defined beside
 * its parser; `mmsim completion` makes the shell scripts from them. */
extern const struct option mm_cli_run_longopts[];
extern const char mm_cli_run_shortopts[];
extern const struct option mm_cli_model_longopts[];
extern const char mm_cli_model_shortopts[];
extern const struct option mm_cli_collective_longopts[];
extern const char mm_cli_collective_shortopts[];
extern const struct option mm_cli_workload_longopts[];
extern const char mm_cli_workload_shortopts[];
extern const struct option mm_cli_sweep_longopts[];
extern const char mm_cli_sweep_shortopts[];
extern const struct option mm_cli_report_longopts[];
extern const char mm_cli_report_shortopts[];
extern const struct option mm_cli_plan_longopts[];
extern const char mm_cli_plan_shortopts[];
extern const struct option mm_cli_profile_longopts[];
extern const char mm_cli_profile_shortopts[];

/* The database run, sweep and plan write to when --db is not given. */
#define DEFAULT_DB "results/mmsim.db"

/* Prints "mmsim: file:line: key 'k': message" to stderr and returns the exit
 * status for the error (2 for MM_EINPUT, 1 otherwise). */
int mm_cli_fail(const mm_err *err);

/* A command-line error, through mm_err_format like every other message:
 * prints "mmsim: <cli>: key 'FLAG': WHAT 'VALUE' (see mmsim help CMD)" and
 * returns 2.  FLAG and VALUE may be NULL or "": that part is left out (no
 * empty quotes); CMD NULL leaves out the pointer to the help. */
int mm_cli_usage_error(const char *cmd, const char *flag, const char *what, const char *value);

/* The command's one operand (after getopt): argv[optind] into *out when
 * there is one (*out untouched otherwise); a second one is a usage error,
 * "more than one WHAT given; extra 'ARG'" (returns 2), else 0. */
int mm_cli_operand(const char *cmd, int argc, char **argv, const char *what, const char **out);

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

/* getopt_long over a subcommand's arguments, argv[0] being the command's
 * name ("run"): `--opt=value` and `--opt value` alike, options and operands
 * in any order (GNU permutes; operands are then argv[optind..argc-1]).
 * Returns the option's val, -1 at the end, or '?' after printing
 * "mmsim: <cli>: key '--opt': unknown option|needs a value (see mmsim help
 * CMD)" (the caller returns 2).  A new argv starts a new scan. */
int mm_cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);

/* "mmsim: <cli>: key 'FLAG': MSG (see mmsim help CMD)" on stderr; returns 2. */
int mm_cli_bad(const char *cmd, const char *flag, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* An integer option from lo to hi, else mm_cli_bad; returns 0 or 2. */
int mm_cli_int(const char *cmd, const char *flag, const char *v, long lo, long hi, int *out);

/* Prints the usage of a command (usage.c; mmsim's own for an unknown one)
 * on stdout; returns 0. */
int mm_cli_help(const char *cmd);
/* The usage text of a command, NULL for none; mmsim's own (usage.c). */
const char *mm_cli_usage_of(const char *cmd);
extern const char mm_cli_usage_main[];

/* True when progress lines may be drawn: stderr is a terminal and the user
 * did not ask for -q. */
bool mm_cli_progress_ok(bool quiet);

/* A status line on stderr while something long runs, when
 * mm_cli_progress_ok(quiet): "mmsim: WHAT ... 12 s", the elapsed time
 * redrawn twice a second, and how far when the caller says
 * (mm_cli_status_detail); erased by mm_cli_status_stop. */
void mm_cli_status_start(bool quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mm_cli_status_stop(void);
/* What the status line adds after WHAT ("iteration 3 of 8"). */
void mm_cli_status_detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Keeps freed memory in the process for the next simulation of a batch
 * (glibc; a no-op elsewhere). */
void mm_cli_keep_heap(void);

/* Under mpirun or srun (Open MPI, PMIx and PMI set their variables): in
 * an MPI build MPI_Init, *rank and *size from MPI_COMM_WORLD, and 0; in a
 * build without MPI, exit status 2 with a message when more than one rank
 * was started (each would do the whole work), else 0 as one process.
 * Outside a launcher *rank = 0, *size = 1 and 0. */
int mm_cli_mpi_begin(const char *cmd, int *rank, int *size);
/* After mm_cli_mpi_begin with *size > 1: every rank agrees on the worst exit
 * status, MPI_Finalize, and that status; otherwise rc. */
int mm_cli_mpi_end(int size, int rc);

int mm_cli_run(int argc, char **argv); /* cmd_run.c */
int mm_cli_model(int argc, char **argv); /* cmd_model.c */
int mm_cli_collective(int argc, char **argv); /* cmd_collective.c */
int mm_cli_workload(int argc, char **argv); /* cmd_workload.c */
int mm_cli_sweep(int argc, char **argv); /* cmd_sweep.c */
int mm_cli_report(int argc, char **argv); /* cmd_report.c */
int mm_cli_plan(int argc, char **argv); /* cmd_plan.c */
int mm_cli_profile(int argc, char **argv); /* cmd_profile.c */
int mm_cli_completion(int argc, char **argv); /* cmd_completion.c: mmsim completion bash|zsh */

#endif
