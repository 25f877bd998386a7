/* main.c - the `mmsim` command line: the usage texts and the dispatch to
 * the subcommands (cmd_*.c), which parse their arguments with getopt_long,
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

#define DEFAULT_DB "results/mmsim.db"

static const char usage_main[] =
    "usage: mmsim <command> [arguments]\n"
    "\n"
    "Discrete-event simulator of (multimodal) LLM training on GPU clusters.\n"
    "\n"
    "commands:\n"
    "  run [SCENARIO.yaml]   simulate training iterations of a scenario\n"
    "  model MODEL           parameters, FLOPs and per-GPU memory of a model\n"
    "  collective            nccl-tests-style table of one collective on a topology\n"
    "  workload stats FILE   statistics of a mixture spec or sample trace\n"
    "  sweep SWEEP.yaml      run a grid of scenarios into one database\n"
    "  report DB             tables (or CSV) of the runs and sweeps in a database\n"
    "  plan [SCENARIO.yaml]  rank parallel layouts of a scenario on N GPUs by simulated cost\n"
    "  help [COMMAND]        show help for a command (mmsim help help: about help)\n"
    "  help scenario         every scenario key: type, default, built-in value, doc\n"
    "\n"
    "options:\n"
    "  -h, --help            show this help\n"
    "  --version             print the version\n"
    "\n"
    "Every command takes -h/--help, and its options as --opt VALUE or --opt=VALUE,\n"
    "before or after its operands.\n"
    "Exit status: 0 success, 2 bad input, 1 internal error.\n";

static const char usage_help[] =
    "usage: mmsim help [COMMAND]\n"
    "\n"
    "Prints the usage of COMMAND (run, model, collective, workload, sweep, report,\n"
    "plan, help), or the list of commands without one.  `mmsim COMMAND --help`\n"
    "prints the same.  `mmsim help scenario` lists every scenario key with its\n"
    "type, default, built-in value and doc.  Exit status 2 for a command that\n"
    "does not exist.\n";

static const char usage_run[] =
    "usage: mmsim run [SCENARIO.yaml] [--set KEY=VALUE]... [--json] [--db FILE]\n"
    "                 [--no-db] [--trace FILE] [--breakdown] [--no-symmetry] [-q | -v]\n"
    "       mmsim run [SCENARIO.yaml] --megatron-args FILE [--megatron-model OUT.json]\n"
    "                 [--print-scenario] [--set KEY=VALUE]... [...]\n"
    "\n"
    "Simulates the scenario's iterations and prints a summary (or, with --json,\n"
    "one JSON object).  Without SCENARIO the built-in default runs.\n"
    "\n"
    "  -s, --set KEY=VALUE  override a dotted key of the scenario; VALUE is YAML,\n"
    "                   e.g. --set parallel.llm.tp=8 --set cluster.nodes=4\n"
    "                        --set parallel.llm.layers_per_stage=[2,3,3,2]\n"
    "  --json           print the metrics as one JSON object on stdout\n"
    "  --db FILE        SQLite database to append the run to\n"
    "                   (default " DEFAULT_DB ")\n"
    "  --no-db          do not store the run\n"
    "  --trace FILE     write the last iteration's timeline as Chrome-trace JSON\n"
    "                   (open in chrome://tracing or ui.perfetto.dev)\n"
    "  --breakdown      also print per layer and micro-batch the GEMM, attention\n"
    "                   and memory-bound time of the forward, input-gradient and\n"
    "                   weight-gradient passes, and the optimizer phase (--json\n"
    "                   always has it as \"breakdown\")\n"
    "  --no-symmetry    simulate every DP replica even where they are identical\n"
    "                   (docs/performance.md): the same metrics bit for bit under\n"
    "                   the analytic network, within 0.5 % under flow; slower\n"
    "  -q, --quiet      one line: iteration_time_s, tokens_per_s, mfu\n"
    "  -v, --verbose    also every iteration (and the Megatron mapping, on stderr)\n"
    "  --megatron-args FILE  a Megatron-LM argument list (as in a launch script)\n"
    "                   replaces the model by the GPT/Llama it describes, sets the\n"
    "                   layout, training keys and `workload: text`; dp comes from\n"
    "                   the cluster; --set still applies after it (docs/megatron.md)\n"
    "  --megatron-model OUT.json  where to write the model's config.json\n"
    "                   (default results/megatron-<FILE stem>.json)\n"
    "  --print-scenario print the scenario --megatron-args made (YAML, with the\n"
    "                   mapping of each argument in comments) instead of running\n"
    "\n"
    "A progress line (iterations done, elapsed time) is drawn on stderr while it\n"
    "runs, when stderr is a terminal and neither -q nor --json is given.\n";

static const char usage_model[] =
    "usage: mmsim model MODEL [--seq N] [--images K] [--set KEY=VALUE]... [--json]\n"
    "\n"
    "Parameters per module and in total, forward FLOPs per token and per sample,\n"
    "and per-GPU memory under a layout.  MODEL is an HF config.json (LLM,\n"
    "encoder or composite) or a model YAML (models/README.md).\n"
    "\n"
    "  --seq N          LLM tokens per sample (default train.seq_len)\n"
    "  --images K       images per sample for a vision model (default 1)\n"
    "  --set KEY=VALUE  scenario key setting the layout, as for mmsim run,\n"
    "                   e.g. --set parallel.llm.tp=8 --set train.recompute=full\n"
    "  --json           one JSON object: params, modules, flops_fwd_per_token,\n"
    "                   memory_gib (per pipeline stage), oom, ...\n";

static const char usage_sweep[] =
    "usage: mmsim sweep SWEEP.yaml [--jobs N] [--db FILE] [--json] [--quiet]\n"
    "\n"
    "Runs every point of a sweep (a base scenario plus axes of --set style\n"
    "overrides, cartesian or zipped; see README) into one database.  Resumable:\n"
    "a point whose scenario is already in the database is skipped.  Progress\n"
    "goes to stderr.  Under mpirun (a build with -Dmpi=enabled) the points are\n"
    "shared among the ranks and rank 0 writes every result.\n"
    "\n"
    "  --jobs N    worker processes (default: the number of CPUs)\n"
    "  --db FILE   SQLite database (default " DEFAULT_DB ")\n"
    "  --json      print the sweep id, counts and each point's result as JSON\n"
    "  --quiet     no progress display\n";

static const char usage_report[] =
    "usage: mmsim report DB [--sweep ID|last] [--csv] [--metrics a,b,c]\n"
    "       mmsim report DB --dp-load RUN|last [--csv]\n"
    "\n"
    "Prints the runs of a database as a table (the sweeps first, when there\n"
    "are any); with --sweep, the points of one sweep with their swept values;\n"
    "with --dp-load, each LLM DP rank's compute seconds per iteration of one\n"
    "run (run --json's dp_rank_load_s).\n"
    "\n"
    "  --sweep ID   one sweep (its id, or 'last')\n"
    "  --dp-load R  one run's per-DP-rank loads (its id, or 'last')\n"
    "  --csv        comma-separated values with a header row, on stdout\n"
    "  --metrics L  metrics to show, e.g. iteration_time_s,tokens_per_s,mfu\n"
    "               (default iteration_time_s,tokens_per_s,mfu,peak_memory_gib)\n";

static const char usage_collective[] =
    "usage: mmsim collective --cluster FILE [--nodes N] [--gpus N] --op OP [--algo ALGO]\n"
    "                        [--min 8] [--max 8G] [--factor 2] [--network flow|analytic]\n"
    "                        [--show-algo] [--json] [--comm-ranks N]\n"
    "\n"
    "Time of one collective over the first N GPUs of a topology, for sizes from\n"
    "--min to --max (K, M, G = powers of 1024) multiplied by --factor, printed in\n"
    "nccl-tests' output format (so its parsers read it): '#' headers; columns\n"
    "size, count, type, redop, root, then out-of-place and in-place time (us),\n"
    "algbw = size/time, busbw = algbw x the nccl-tests bus factor (all-reduce\n"
    "2(n-1)/n for every algorithm, NVLS too) and #wrong (N/A: simulated); the\n"
    "'# Avg bus bandwidth' footer.  The algorithm chosen per size is in a '#'\n"
    "line at the end.  -b/-e/-f are nccl-tests' spellings of --min/--max/--factor.\n"
    "\n"
    "  --op OP          allreduce | allgather | reducescatter | alltoall |\n"
    "                   broadcast | sendrecv (GPU 0 to the last node's first GPU)\n"
    "  --algo ALGO      auto (default) | ring | tree | hier | nvls\n"
    "  --nodes N        nodes (default: the file's); --gpus N (default: all)\n"
    "  --network M      flow (default: max-min sharing) | analytic (alpha-beta)\n"
    "  --show-algo      add the algorithm as a last column of each row\n"
    "  --comm-ranks N   sendrecv: on a communicator of the first N GPUs (Megatron's\n"
    "                   batched pipeline sends use the PP group's), which sets NCCL's\n"
    "                   p2p channel count; default: the pair alone\n"
    "  --json           {\"rows\":[{\"bytes\",\"time_us\",\"algbw_gbps\",\"busbw_gbps\",\"algo\"}]}\n";

int mm_cli_fail(const mm_err *err)
{
    char buf[1200];
    mm_err_format(err, buf, sizeof buf);
    fprintf(stderr, "mmsim: %s\n", buf);
    return err->code == MM_EINPUT ? 2 : 1;
}

/* One entry per subcommand; each lives in its own cmd_*.c file (cli.h). */
static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *usage;
} commands[] = {
    {"run", mm_cli_run, usage_run},
    {"model", mm_cli_model, usage_model},
    {"collective", mm_cli_collective, usage_collective},
    {"workload", mm_cli_workload, mm_cli_workload_usage},
    {"sweep", mm_cli_sweep, usage_sweep},
    {"report", mm_cli_report, usage_report},
    {"plan", mm_cli_plan, mm_cli_plan_usage},
    {"help", NULL, usage_help},
};

int mm_cli_help(const char *cmd)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name)) {
            fputs(commands[i].usage, stdout);
            return 0;
        }
    fputs(usage_main, stdout);
    return 0;
}

static int help(int argc, char **argv)
{
    if (argc < 3) {
        fputs(usage_main, stdout);
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
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[2], commands[i].name)) {
            fputs(commands[i].usage, stdout);
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
        fputs(usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage_main, stdout);
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
        if (commands[i].fn && !strcmp(cmd, commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "mmsim: unknown command '%s' (see mmsim --help)\n", cmd);
    return 2;
}
