/* main.c - the `mmsim` command line: parsing arguments, calling the
 * library, printing results and choosing the exit status (0 success,
 * 2 bad input, 1 internal error).  Nothing here models anything.
 * Not for: logic a planner embedding libmmsim would also need. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "mmsim_config.h"
#include "run/limits.h"
#include "run/sim.h"
#include "store/store.h"
#include "store/trace.h"

#define DEFAULT_DB "results/mmsim.db"
#define MAX_SETS 256

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
    "  help [COMMAND]        show help for a command\n"
    "  help scenario         every scenario key: type, default, built-in value, doc\n"
    "\n"
    "options:\n"
    "  --help                show this help\n"
    "  --version             print the version\n"
    "\n"
    "Exit status: 0 success, 2 bad input, 1 internal error.\n";

static const char usage_run[] =
    "usage: mmsim run [SCENARIO.yaml] [--set KEY=VALUE]... [--json] [--db FILE]\n"
    "                 [--no-db] [--trace FILE] [--breakdown]\n"
    "\n"
    "Simulates the scenario's iterations and prints a summary (or, with --json,\n"
    "one JSON object).  Without SCENARIO the built-in default runs.\n"
    "\n"
    "  --set KEY=VALUE  override a dotted key of the scenario; VALUE is YAML,\n"
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
    "                   always has it as \"breakdown\")\n";

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
    "\n"
    "Prints the runs of a database as a table (the sweeps first, when there\n"
    "are any); with --sweep, the points of one sweep with their swept values.\n"
    "\n"
    "  --sweep ID   one sweep (its id, or 'last')\n"
    "  --csv        comma-separated values with a header row, on stdout\n"
    "  --metrics L  metrics to show, e.g. iteration_time_s,tokens_per_s,mfu\n"
    "               (default iteration_time_s,tokens_per_s,mfu,peak_memory_gib)\n";

static const char usage_collective[] =
    "usage: mmsim collective --cluster FILE [--nodes N] [--gpus N] --op OP [--algo ALGO]\n"
    "                        [--min 8] [--max 8G] [--factor 2] [--network flow|analytic] [--json]\n"
    "\n"
    "Time of one collective over the first N GPUs of a topology, for sizes from\n"
    "--min to --max (K, M, G = powers of 1024) multiplied by --factor, as an\n"
    "nccl-tests table: size, time, algbw = size/time, busbw = algbw x the\n"
    "nccl-tests bus factor (all-reduce 2(n-1)/n for every algorithm, NVLS too).\n"
    "\n"
    "  --op OP          allreduce | allgather | reducescatter | alltoall |\n"
    "                   broadcast | sendrecv (GPU 0 to the last node's first GPU)\n"
    "  --algo ALGO      auto (default) | ring | tree | hier | nvls\n"
    "  --nodes N        nodes (default: the file's); --gpus N (default: all)\n"
    "  --network M      flow (default: max-min sharing) | analytic (alpha-beta)\n"
    "  --json           {\"rows\":[{\"bytes\",\"time_us\",\"algbw_gbps\",\"busbw_gbps\",\"algo\"}]}\n";

int mm_cli_fail(const mm_err *err)
{
    char buf[1200];
    mm_err_format(err, buf, sizeof buf);
    fprintf(stderr, "mmsim: %s\n", buf);
    return err->code == MM_EINPUT ? 2 : 1;
}

/* A command-line error: exit status 2, naming the argument. */
static int bad_usage(const char *what, const char *arg)
{
    return mm_cli_usage_error("run", NULL, what, arg);
}

/* JSON number, or null for NaN/inf. */
static void jnum(const char *key, double v, int last)
{
    if (isfinite(v))
        printf("  \"%s\": %.17g%s\n", key, v, last ? "" : ",");
    else
        printf("  \"%s\": null%s\n", key, last ? "" : ",");
}

static void jstr(const char *key, const char *v)
{
    printf("  \"%s\": ", key);
    mm_cli_json_string(v);
    printf(",\n");
}

static void print_json(const mm_sim *sim, const mm_metrics *m, int64_t run_id, const char *db)
{
    printf("{\n");
    jstr("mmsim_version", MMSIM_VERSION);
    jstr("scenario", sim->sc.source);
    jstr("model", sim->llm.name);
    jstr("topology", sim->cluster.name);
    if (run_id > 0) {
        jstr("db", db);
        printf("  \"run_id\": %lld,\n", (long long)run_id);
    }
    jnum("iteration_time_s", m->oom ? NAN : m->iteration_time_s, 0);
    jnum("iteration_time_p50_s", m->oom ? NAN : m->iteration_time_p50_s, 0);
    jnum("iteration_time_p99_s", m->oom ? NAN : m->iteration_time_p99_s, 0);
    jnum("tokens_per_s", m->tokens_per_s, 0);
    jnum("samples_per_s", m->samples_per_s, 0);
    jnum("mfu", m->mfu, 0);
    jnum("hfu", m->hfu, 0);
    jnum("tflops_per_gpu", m->tflops_per_gpu, 0);
    jnum("hw_tflops_per_gpu", m->hw_tflops_per_gpu, 0);
    jnum("bubble_fraction", m->bubble_fraction, 0);
    jnum("exposed_comm_s", m->exposed_comm_s, 0);
    jnum("peak_memory_gib", m->peak_memory_gib, 0);
    printf("  \"oom\": %s,\n", m->oom ? "true" : "false");
    printf("  \"gpus\": %d,\n", m->gpus);
    printf("  \"micro_batches\": %d,\n", sim->micro_batches);
    printf("  \"events\": %llu,\n", (unsigned long long)m->events);
    printf("  \"stages\": [");
    for (int s = 0; s < m->n_stages; s++) {
        const mm_stage_metrics *st = &m->stages[s];
        printf("%s{\"stage\": %d", s ? ", " : "", s);
        const char *names[] = {"busy_s", "idle_s", "bubble_s", "comm_s", "memory_gib"};
        const double vals[] = {st->busy_s, st->idle_s, st->bubble_s, st->comm_s, st->memory_gib};
        for (int k = 0; k < 5; k++) {
            if (isfinite(vals[k]))
                printf(", \"%s\": %.9g", names[k], vals[k]);
            else
                printf(", \"%s\": null", names[k]);
        }
        printf("}");
    }
    printf("],\n");
    printf("  \"modules\": [");
    for (int i = 0; i < m->n_modules; i++) {
        const mm_module_metrics *md = &m->modules[i];
        printf("%s{\"name\": \"%s\", \"gpus\": %d, \"compute_s\": ", i ? ", " : "", md->name, md->gpus);
        if (isfinite(md->compute_s) && !m->oom)
            printf("%.9g", md->compute_s);
        else
            printf("null");
        printf(", \"memory_gib\": ");
        if (isfinite(md->memory_gib))
            printf("%.9g}", md->memory_gib);
        else
            printf("null}");
    }
    printf("],\n");
    printf("  \"critical_path\": [");
    for (int i = 0; i < m->crit.n; i++) {
        const mm_crit_entry *e = &m->crit.e[i];
        printf("%s{\"rank\": %d, \"stage\": %d, \"what\": \"%s\", \"seconds\": %.9g, \"share\": %.6g, \"ops\": %d}",
               i ? ", " : "", e->rank, e->stage, e->what, e->seconds, e->share, e->ops);
    }
    printf("],\n");
    mm_sim_breakdown *bk = calloc(1, sizeof *bk);
    mm_err berr;
    if (bk && mm_sim_get_breakdown(sim, bk, &berr) == 0) {
        mm_sim_breakdown_write_json(stdout, sim, bk, "  ");
        printf(",\n");
    }
    free(bk);
    jnum("wall_s", m->wall_s, 1);
    printf("}\n");
}

/* The critical path by kind of work, then its largest entries by rank. */
static void print_critical_path(const mm_metrics *m)
{
    if (!m->crit.n)
        return;
    const char *kinds[] = {"fwd", "bwd", "wgrad", "optimizer", "tp", "pp", "dp", "cp", "ep", "wait"};
    printf("\n  critical path (%d ops):", m->crit.path_ops);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        double share = 0;
        for (int i = 0; i < m->crit.n; i++) {
            const char *w = strchr(m->crit.e[i].what, ':'); /* "vision:fwd" counts as fwd */
            if (!strcmp(w ? w + 1 : m->crit.e[i].what, kinds[k]))
                share += m->crit.e[i].share;
        }
        if (share > 0.0005)
            printf(" %s %.1f%%", kinds[k], 100 * share);
    }
    printf("\n  %-6s %-6s %-10s %10s %7s\n", "rank", "stage", "what", "seconds", "share");
    for (int i = 0; i < m->crit.n && i < 5; i++) {
        const mm_crit_entry *e = &m->crit.e[i];
        printf("  %-6d %-6d %-10s %10.4f %6.1f%%\n", e->rank, e->stage, e->what, e->seconds, 100 * e->share);
    }
}

static void print_summary(const mm_sim *sim, const mm_metrics *m, int64_t run_id, const char *db)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    printf("mmsim %s: scenario %s\n", MMSIM_VERSION, sc->source);
    printf("  model       %s, %.2f B parameters (%s)\n", sim->model.name[0] ? sim->model.name : sim->llm.name,
           (double)mm_model_params(&sim->model) * 1e-9, sim->model_path);
    printf("  cluster     %s: %d nodes x %d %s = %d GPUs (%s)\n", sim->cluster.name,
           sim->cluster.nodes, sim->cluster.gpus_per_node, sim->cluster.gpu.name, m->gpus,
           sim->topology_path);
    printf("  layout      tp %d x cp %d x pp %d x dp %d, %s, %d micro-batches of %lld x %.0f tokens per DP rank\n",
           L->tp, L->cp, L->pp, L->dp, mm_schedule_names[sc->train.schedule], sim->micro_batches,
           (long long)sc->train.micro_batch, sim->seq);
    for (int i = 0; i < sim->n_enc; i++) {
        const mm_sim_encoder *e = &sim->enc[i];
        const char *frozen = e->frozen_tower ? (e->frozen_proj ? ", frozen" : ", tower frozen") : "";
        if (sc->parallel.placement == MM_PLACE_HOMOGENEOUS)
            printf("  %-11s homogeneous (the LLM's layout, first stage), %.0f inputs per sample%s\n", e->name,
                   e->inputs_per_sample, frozen);
        else
            printf("  %-11s %s, tp %d x pp %d x dp %d, %.0f inputs per sample%s\n", e->name,
                   mm_placement_names[sc->parallel.placement], e->layout.tp, e->layout.pp, e->layout.dp,
                   e->inputs_per_sample, frozen);
    }
    printf("  training    %s, recompute %s, ZeRO %d, network %s, %d iteration(s), seed %llu\n",
           mm_precision_names[sc->train.precision], mm_recompute_names[sc->train.recompute],
           sc->train.zero, mm_network_names[sc->network], sc->iterations,
           (unsigned long long)sc->seed);
    printf("\n");
    if (m->oom) {
        printf("  OUT OF MEMORY: peak %.1f GiB per GPU + %.1f GiB reserve > %.1f GiB of HBM\n",
               m->peak_memory_gib, sc->train.memory_reserve_gib, sim->cluster.gpu.hbm_bytes / 1073741824.0);
        printf("\n  stage   memory (GiB)\n");
        for (int s = 0; s < m->n_stages; s++)
            printf("  %5d %12.2f\n", s, m->stages[s].memory_gib);
        if (run_id > 0)
            printf("\n  stored as run %lld in %s\n", (long long)run_id, db);
        return;
    }
    printf("  iteration time     %10.4f s", m->iteration_time_s);
    if (m->n_iters > 1)
        printf("  (mean of %d; p50 %.4f, p99 %.4f)", m->n_iters, m->iteration_time_p50_s, m->iteration_time_p99_s);
    printf("\n");
    if (sim->wl) {
        double imb = 0, spread = 0;
        for (int i = 0; i < m->n_iters; i++) {
            imb += m->iters[i].load_imbalance / m->n_iters;
            spread += m->iters[i].stage_spread_s / m->n_iters;
        }
        printf("  batching           %s: DP load max/mean %.3f, stage spread %.4f s (means)\n",
               mm_batching_names[sc->batching], imb, spread);
    }
    printf("  throughput         %10.0f tokens/s  %8.2f samples/s\n", m->tokens_per_s, m->samples_per_s);
    printf("  per GPU            %10.1f model TFLOP/s  %6.1f hardware TFLOP/s\n",
           m->tflops_per_gpu, m->hw_tflops_per_gpu);
    printf("  MFU / HFU          %9.1f %%  %9.1f %%\n", 100 * m->mfu, 100 * m->hfu);
    printf("  pipeline bubble    %9.1f %%\n", 100 * m->bubble_fraction);
    printf("  exposed comm       %10.4f s per rank\n", m->exposed_comm_s);
    printf("  peak memory        %10.2f GiB per GPU (of %.1f; reserve %.1f)\n", m->peak_memory_gib,
           sim->cluster.gpu.hbm_bytes / 1073741824.0, sc->train.memory_reserve_gib);
    printf("\n  stage   busy (s)   idle (s) bubble (s)   comm (s)  memory (GiB)\n");
    for (int s = 0; s < m->n_stages; s++)
        printf("  %5d %10.4f %10.4f %10.4f %10.4f %13.2f\n", s, m->stages[s].busy_s, m->stages[s].idle_s,
               m->stages[s].bubble_s, m->stages[s].comm_s, m->stages[s].memory_gib);
    if (m->n_modules > 1) {
        printf("\n  module      GPUs  compute (s)  memory (GiB)\n");
        for (int i = 0; i < m->n_modules; i++)
            printf("  %-10s %5d %12.4f %13.2f\n", m->modules[i].name, m->modules[i].gpus, m->modules[i].compute_s,
                   m->modules[i].memory_gib);
    }
    print_critical_path(m);
    printf("\n  %llu events simulated in %.3f s\n", (unsigned long long)m->events, m->wall_s);
    if (run_id > 0)
        printf("  stored as run %lld in %s\n", (long long)run_id, db);
}


static int store_run(const char *db, const mm_sim *sim, const mm_metrics *m, int64_t *run_id,
                     mm_err *err)
{
    char *text = mm_scenario_canonical_alloc(&sim->sc); /* what the store hashes: whole, never cut */
    if (!text)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    char created[32];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    mm_run_record rec = {
        .scenario_text = text, .scenario_source = sim->sc.source,
        .model = sim->model_path, .topology = sim->topology_path,
        .seed = sim->sc.seed, .version = MMSIM_VERSION, .created_at = created,
    };
    mm_store *st = NULL;
    int rc = mm_store_open(&st, db, err);
    if (rc == 0)
        rc = mm_store_write_run(st, &rec, m, run_id, err);
    mm_store_close(st);
    free(text);
    return rc;
}

/* Progress of a long run on a terminal: "iteration 12 of 100" on stderr,
 * redrawn in place, once the run has taken a second (short runs, pipes and
 * files see nothing), and cleared at the end. */
typedef struct run_progress {
    struct timespec t0;
    int shown;
} run_progress;

static void show_run_progress(int done, int total, void *ctx)
{
    run_progress *p = ctx;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double s = (double)(now.tv_sec - p->t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - p->t0.tv_nsec);
    if (done < total && (p->shown || s >= 1.0)) {
        fprintf(stderr, "\rmmsim: iteration %d of %d (%.0f s)", done, total, s);
        p->shown = 1;
    } else if (done == total && p->shown) {
        fprintf(stderr, "\r%*s\r", 60, "");
    }
}

int mm_cli_run(int argc, char **argv)
{
    const char *scenario = NULL, *db = DEFAULT_DB, *trace = NULL;
    const char *sets[MAX_SETS];
    int n_sets = 0, json = 0, no_db = 0, breakdown = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_run, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--no-db")) {
            no_db = 1;
        } else if (!strcmp(a, "--breakdown")) {
            breakdown = 1;
        } else if (!strcmp(a, "--set") || !strcmp(a, "--db") || !strcmp(a, "--trace")) {
            if (i + 1 >= argc)
                return bad_usage("option needs a value:", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--set")) {
                if (n_sets == MAX_SETS)
                    return bad_usage("too many --set options, at most", "256");
                sets[n_sets++] = v;
            } else if (!strcmp(a, "--db")) {
                db = v;
            } else {
                trace = v;
            }
        } else if (!strncmp(a, "--set=", 6)) {
            if (n_sets == MAX_SETS)
                return bad_usage("too many --set options, at most", "256");
            sets[n_sets++] = a + 6;
        } else if (a[0] == '-' && a[1]) {
            return bad_usage("unknown option", a);
        } else if (!scenario) {
            scenario = a;
        } else {
            return bad_usage("more than one scenario given; extra", a);
        }
    }
    mm_err err;
    mm_err_clear(&err);
    static mm_scenario sc;
    static mm_sim sim;
    if (mm_scenario_load(&sc, scenario, sets, n_sets, &err))
        return mm_cli_fail(&err);
    if (mm_sim_prepare(&sim, &sc, &err) || mm_sim_check_limits(&sim, &err))
        return mm_cli_fail(&err);
    if (!no_db && mm_cli_open_db(db, &err))
        return mm_cli_fail(&err);
    run_progress progress = {.shown = 0};
    if (isatty(2)) {
        clock_gettime(CLOCK_MONOTONIC, &progress.t0);
        sim.progress = show_run_progress;
        sim.progress_ctx = &progress;
    }
    mm_metrics m;
    mm_sim_timeline tl;
    if (mm_sim_run(&sim, &m, trace ? &tl : NULL, &err))
        return mm_cli_fail(&err);
    int rc = 0;
    int64_t run_id = 0;
    if (trace && mm_trace_write(trace, &tl, &err))
        rc = mm_cli_fail(&err);
    if (rc == 0 && !no_db && store_run(db, &sim, &m, &run_id, &err))
        rc = mm_cli_fail(&err);
    if (rc == 0) {
        if (json)
            print_json(&sim, &m, run_id, db);
        else
            print_summary(&sim, &m, run_id, db);
        if (!json && breakdown) {
            static mm_sim_breakdown bk;
            if (mm_sim_get_breakdown(&sim, &bk, &err))
                rc = mm_cli_fail(&err);
            else
                mm_sim_breakdown_write_text(stdout, &sim, &bk);
        }
    }
    if (trace)
        mm_sim_timeline_free(&tl);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
    mm_scenario_free(&sc); /* after the sim, which borrows its strings */
    return rc;
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
};

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
        printf("mmsim %s\n", MMSIM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help")) {
        if (argc < 3) {
            fputs(usage_main, stdout);
            return 0;
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
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].fn(argc - 2, argv + 2);
    fprintf(stderr, "mmsim: unknown command '%s' (see mmsim --help)\n", cmd);
    return 2;
}
