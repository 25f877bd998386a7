/* cmd_plan.c - `mmsim plan [SCENARIO] --gpus N`: parses the flags, runs the
 * planner (sim/plan/planner.h) and prints the ranked layouts as a table or
 * as one JSON object; with --emit FORMAT FILE hands the pick to the
 * emitters (sim/plan/emit.h).  Parsing and printing only.
 * Not for: the enumeration, pruning or scoring (planner.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/report.h"
#include "cli/cli.h"
#include "util/limits.h"
#include "mmsim_config.h"
#include "plan/emit.h"
#include "plan/planner.h"
#include "scenario/scenario.h"
#include "scenario/sim.h"

#define MAX_SETS 256

static int bad_arg(const char *flag, const char *msg)
{
    return mm_cli_usage_error("plan", flag, msg, NULL);
}

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < lo || n > hi) {
        char msg[160];
        snprintf(msg, sizeof msg, "takes a number from %d to %d, not '%.60s'", lo, hi, v);
        return bad_arg(flag, msg);
    }
    *out = (int)n;
    return 0;
}

static int parse_placements(const char *v, unsigned *mask)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    *mask = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int i = 0; mm_placement_names[i]; i++)
            if (!strcmp(t, mm_placement_names[i]))
                found = i;
        if (found < 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "takes pipeline, colocated, disjoint or homogeneous (comma-separated), not '%.60s'",
                     t);
            return bad_arg("--placement", msg);
        }
        *mask |= 1u << found;
    }
    if (!*mask)
        return bad_arg("--placement", "needs at least one placement");
    return 0;
}



static void print_table(const mm_plan *p, const char *db)
{
    printf("mmsim %s: plan for %s on %d GPUs (%d nodes x %d), scenario %s\n", MMSIM_VERSION, p->model, p->gpus,
           p->nodes, p->gpus_per_node, p->base_source);
    printf("  candidates %zu: %zu pruned (%zu out of memory), %zu pre-scored only, %zu simulated "
           "(%d iteration%s each), %zu failed\n",
           p->n, p->pruned, p->oom, p->estimated, p->simulated, p->iterations, p->iterations == 1 ? "" : "s",
           p->failed);
    if (p->tied || p->bounded || p->simulated) {
        printf("  %zu exact ties of the pre-score collapsed; %zu proven slower than the best by their lower bound",
               p->tied, p->bounded);
        if (isfinite(p->optimal_within) && p->open == 0)
            printf("; the pick is optimal (every other candidate proven)\n");
        else if (isfinite(p->optimal_within))
            printf("; the pick is optimal within %.1f %% (%zu unproven)\n", 100 * p->optimal_within, p->open);
        else
            printf("\n");
    }
    if (p->gpus < p->gpus_asked)
        printf("  no layout uses all %d GPUs: planned on the largest count that has one, %d GPUs (%d nodes)\n",
               p->gpus_asked, p->gpus, p->nodes);
    printf("  host time: checks %.2f s, pre-scoring %.2f s (%zu pre-scored, %.0f/s), event-level %.2f s, "
           "total %.2f s\n",
           p->validate_s, p->estimate_s, p->prescored, p->estimate_s > 0 ? (double)p->prescored / p->estimate_s : 0.0,
           p->simulate_s, p->wall_s);
    mm_reason_count rc[64];
    int nr = mm_plan_count_reasons(p, rc, 64);
    if (nr) {
        printf("  pruned by:");
        for (int i = 0; i < nr && i < 8; i++)
            printf("%s %s %zu", i ? "," : "", rc[i].kind, rc[i].n);
        printf("\n");
    }
    int w = 20;
    for (size_t i = 0; i < p->n; i++)
        if (p->c[i].status != MM_CAND_PRUNED && (int)strlen(p->c[i].layout) > w)
            w = (int)strlen(p->c[i].layout);
    printf("\n  %4s  %-*s %8s %8s %8s %6s %7s %7s\n", "rank", w, "layout", "est (s)", "sim (s)", "TFLOP/s", "MFU",
           "mem GiB", "margin");
    for (size_t i = 0; i < p->n; i++) {
        const mm_plan_cand *c = &p->c[i];
        if (c->status != MM_CAND_SIMULATED && c->status != MM_CAND_FAILED)
            continue;
        if (c->status == MM_CAND_FAILED) {
            printf("  %4s  %-*s %8.3f  failed: %s\n", "-", w, c->layout, c->est_s, c->reason ? c->reason : "");
            continue;
        }
        double mg = mm_plan_margin(p, i);
        char mgs[16] = "";
        if (isfinite(mg))
            snprintf(mgs, sizeof mgs, "%+.1f%%", 100 * mg);
        printf("  %4d  %-*s %8.3f %8.3f %8.1f %5.1f%% %7.1f %7s\n", c->rank, w, c->layout, c->est_s, c->sim_s,
               c->sim_tflops, 100 * c->sim_mfu, c->sim_mem_gib, mgs);
    }
    if (!p->simulated && p->n) {
        size_t shown = 0;
        for (size_t i = 0; i < p->n && shown < 10; i++, shown++) {
            const mm_plan_cand *c = &p->c[i];
            if (c->status != MM_CAND_ESTIMATED)
                break;
            printf("  %4d  %-*s %8.3f %8s %8.1f %5.1f%% %7.1f\n", c->rank, w, c->layout, c->est_s, "-",
                   c->est_tflops, 100 * c->est_mfu, c->mem_gib);
        }
    }
    if (!p->simulated && !p->estimated) {
        printf("  no layout fits; the first pruned candidates:\n");
        for (size_t i = 0; i < p->n && i < 5; i++)
            printf("  %s\n      %s\n", p->c[i].layout, p->c[i].reason ? p->c[i].reason : "");
    }
    if (p->plan_id > 0)
        printf("\n  stored as plan %lld in %s (tables plans, plan_candidates)\n", (long long)p->plan_id, db);
}

/* -q: the winner on one line. */
static void print_best(const mm_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->c[i].rank == 1) {
            const mm_plan_cand *c = &p->c[i];
            printf("%s  %.6g s\n", c->layout, c->status == MM_CAND_SIMULATED ? c->sim_s : c->est_s);
            return;
        }
    printf("no layout fits\n");
}

/* --explain: the size of the space, per dimension. */
static void print_space(const mm_plan *p)
{
    printf("\n  the space: %zu candidates; distinct values per dimension:\n   ", p->n);
    for (int d = 0; d < MM_SD_COUNT; d++)
        printf(" %s %zu%s", mm_space_dim_names[d], p->dim_values[d], d + 1 < MM_SD_COUNT ? "," : "\n");
}

/* -v: every candidate with its status and, when pruned or failed, why. */
static void print_all(const mm_plan *p)
{
    printf("\n  every candidate (enumeration index, status, layout, reason):\n");
    for (size_t i = 0; i < p->n; i++) {
        const mm_plan_cand *c = &p->c[i];
        printf("  %5d %-9s %s%s%s\n", c->index, mm_cand_status_names[c->status], c->layout, c->reason ? "  " : "",
               c->reason ? c->reason : "");
    }
}

/* --emit FORMAT FILE: the format (optarg) and the file, the next word,
 * taken off the command line here (getopt skips past it). */
static int parse_emit(int argc, char **argv, const char *v, int *fmt, const char **file)
{
    *fmt = mm_emit_format_find(v);
    if (*fmt < 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "takes a format (megatron, torchtitan or deepspeed) and a file, not '%.60s'", v);
        return bad_arg("--emit", msg);
    }
    if (optind >= argc || !argv[optind][0] || (argv[optind][0] == '-' && argv[optind][1]))
        return bad_arg("--emit", "needs a file after the format: --emit FORMAT FILE");
    *file = argv[optind++];
    mm_err err;
    mm_err_clear(&err);
    return mm_emit_check_path(*file, &err) ? mm_cli_fail(&err) : 0;
}

/* The pick as the format's file(s): its scenario prepared, then written. */
static int emit_pick(const mm_plan_opts *o, const mm_plan *p, int fmt, const char *file)
{
    mm_err err;
    mm_err_clear(&err);
    mm_plan_pick *pick = calloc(1, sizeof *pick);
    mm_sim sim;
    memset(&sim, 0, sizeof sim);
    if (!pick) {
        mm_err_set(&err, MM_EINTERNAL, "", 0, "", "out of memory");
        return mm_cli_fail(&err);
    }
    int rc = mm_plan_pick_load(o, p, pick, &err);
    if (!rc)
        rc = mm_sim_prepare(&sim, &pick->sc, &err);
    if (!rc)
        rc = mm_emit_write((mm_emit_format)fmt, &sim, file, &err);
    mm_sim_free(&sim);
    mm_plan_pick_free(pick);
    free(pick);
    if (rc)
        return mm_cli_fail(&err);
    char comp[1100];
    mm_emit_companion_path((mm_emit_format)fmt, file, comp, sizeof comp);
    fprintf(stderr, "mmsim: wrote the pick's %s configuration to %s%s%s\n", mm_emit_format_names[fmt], file,
            comp[0] ? " and " : "", comp);
    return 0;
}

/* The plan itself, after the options; under MPI on every rank, with only
 * rank 0 printing, storing and emitting (mm_plan_opts). */
static int plan_main(mm_plan_opts *o, int json, int all, int quiet, int verbose, int explain, int emit_fmt,
                     const char *emit_file)
{
    mm_err err;
    mm_err_clear(&err);
    int lead = o->mpi_rank == 0;
    if (o->db && mm_cli_open_db(o->db, &err)) /* every rank: all fail alike */
        return lead ? mm_cli_fail(&err) : 2;
    mm_plan p;
    mm_cli_keep_heap(); /* many rescoring runs in this process */
    /* a status line while it plans, on a terminal only */
    mm_cli_status_start(quiet || json || !lead, "planning (enumerate, prune, pre-score, simulate the best %d)",
                        o->top_k);
    int prc = mm_plan_run(o, &p, &err);
    mm_cli_status_stop();
    if (prc)
        return lead ? mm_cli_fail(&err) : (err.code == MM_EINPUT ? 2 : 1);
    if (!lead) {
        mm_plan_free(&p);
        return 0;
    }
    if (json)
        mm_report_plan_json(stdout, &p, o->db, all);
    else if (quiet)
        print_best(&p);
    else
        print_table(&p, o->db);
    if (explain && !json)
        print_space(&p);
    if (verbose && !json)
        print_all(&p);
    int erc = emit_fmt >= 0 ? emit_pick(o, &p, emit_fmt, emit_file) : 0;
    mm_plan_free(&p);
    return erc;
}

/* The options (cli.h: completion scripts are made from them too). */
const struct option mm_cli_plan_longopts[] = {
    {"help", no_argument, NULL, 'h'},          {"json", no_argument, NULL, 'J'},
    {"all", no_argument, NULL, 'A'},           {"no-db", no_argument, NULL, 'N'},
    {"gpus", required_argument, NULL, 'g'},    {"top", required_argument, NULL, 't'},
    {"iterations", required_argument, NULL, 'i'}, {"jobs", required_argument, NULL, 'j'},
    {"max-pp", required_argument, NULL, 'p'},  {"db", required_argument, NULL, 'd'},
    {"placement", required_argument, NULL, 'P'}, {"set", required_argument, NULL, 's'},
    {"quiet", no_argument, NULL, 'q'},         {"verbose", no_argument, NULL, 'v'},
    {"space", required_argument, NULL, 'S'},   {"explain", no_argument, NULL, 'E'},
    {"prove", required_argument, NULL, 'R'},   {"emit", required_argument, NULL, 'e'},
    {NULL, 0, NULL, 0}};
const char mm_cli_plan_shortopts[] = "hg:j:s:qv";

int mm_cli_plan(int argc, char **argv)
{
    const char *sets[MAX_SETS];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    mm_plan_opts o = {.top_k = 8, .jobs = ncpu > 0 ? (int)ncpu : 1, .db = DEFAULT_DB, .version = MMSIM_VERSION};
    const char *space[MAX_SETS];
    int json = 0, all = 0, no_db = 0, quiet = 0, verbose = 0, explain = 0, emit_fmt = -1;
    const char *emit_file = NULL;
    int c, rc = 0;
    while (rc == 0 && (c = mm_cli_getopt(argc, argv, mm_cli_plan_shortopts, mm_cli_plan_longopts)) != -1) {
        const char *v = optarg;
        switch (c) {
        case 'h': return mm_cli_help("plan");
        case 'J': json = 1; break;
        case 'A': all = 1; break;
        case 'N': no_db = 1; break;
        case 'q': quiet = 1; break;
        case 'v': verbose = 1; break;
        case 'g': rc = parse_int("--gpus", v, 1, 1 << 24, &o.gpus); break;
        case 't': rc = parse_int("--top", v, 0, 100000, &o.top_k); break;
        case 'i': rc = parse_int("--iterations", v, 1, MM_LIMIT_ITERATIONS, &o.iterations); break; /* util/limits.h */
        case 'j': rc = parse_int("--jobs", v, 1, 4096, &o.jobs); break;
        case 'p': rc = parse_int("--max-pp", v, 1, 4096, &o.max_pp); break;
        case 'P': rc = parse_placements(v, &o.placements); break;
        case 'd': o.db = v; break;
        case 'E': explain = 1; break;
        case 'R': rc = parse_int("--prove", v, 0, 1000000, &o.prove); break;
        case 'e': rc = parse_emit(argc, argv, v, &emit_fmt, &emit_file); break;
        case 'S':
            if (o.n_space == MAX_SETS)
                rc = bad_arg("--space", "at most 256 narrowings");
            else
                space[o.n_space++] = v;
            break;
        case 's':
            if (o.n_sets == MAX_SETS)
                rc = bad_arg("--set", "at most 256 overrides");
            else
                sets[o.n_sets++] = v;
            break;
        default: return 2;
        }
    }
    if (rc)
        return rc;
    if (optind < argc)
        o.scenario = argv[optind++];
    if (optind < argc)
        return bad_arg(argv[optind], "more than one scenario given");
    o.sets = sets;
    o.space = space;
    if (no_db)
        o.db = NULL;
    int brc = mm_cli_mpi_begin("plan", &o.mpi_rank, &o.mpi_size);
    if (brc)
        return brc;
    return mm_cli_mpi_end(o.mpi_size, plan_main(&o, json, all, quiet, verbose, explain, emit_fmt, emit_file));
}
