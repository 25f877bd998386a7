/* cmd_sweep.c - `mmsim sweep SWEEP.yaml`: expands a sweep spec, runs its
 * points into a database with N worker processes (or across MPI ranks under
 * mpirun, in a build with -Dmpi=enabled), shows progress on stderr and
 * prints a summary.  Parsing, progress display and printing only; the sweep
 * logic is sim/plan (sweep.h, runner.h).
 * Not for: reading results back (cmd_report.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "mmsim_config.h"
#include "plan/runner.h"
#include "plan/sweep.h"



static int bad_arg(const char *what, const char *arg)
{
    return mm_cli_usage_error("sweep", NULL, what, arg);
}

/* Progress on stderr: a bar redrawn in place on a terminal, or a plain line
 * every 10 seconds (and at 25/50/75 %) when stderr is a file or a pipe. */
typedef struct progress_view {
    int tty, quiet;
    double last;      /* elapsed_s of the last line drawn */
    int last_quarter;
    int drawn;        /* a bar is on screen (needs a newline at the end) */
} progress_view;

static void fmt_eta(char *buf, size_t len, double s)
{
    if (!isfinite(s) || s < 0) {
        snprintf(buf, len, "--:--");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void show_progress(const mm_runner_progress *p, void *ctx)
{
    progress_view *v = ctx;
    if (v->quiet || p->total == 0)
        return;
    size_t sim_done = p->done; /* includes points settled before simulating */
    double frac = (double)sim_done / (double)p->total;
    /* rate and ETA over the points simulated in this invocation */
    size_t settled_now = p->ran + p->failed; /* approximately what took time */
    double rate = p->elapsed_s > 0 ? (double)settled_now / p->elapsed_s : 0;
    double eta = rate > 0 ? (double)(p->total - p->done) / rate : NAN;
    char etas[32];
    fmt_eta(etas, sizeof etas, p->final ? 0 : eta);
    if (v->tty) {
        if (!p->final && p->elapsed_s - v->last < 0.1 && v->drawn)
            return;
        v->last = p->elapsed_s;
        char bar[31];
        int fill = (int)(frac * 30);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] %zu/%zu %3.0f%%  %.1f points/s  ETA %s  "
                        "(ran %zu, skipped %zu, failed %zu, oom %zu)\033[K",
                bar, p->done, p->total, 100 * frac, rate, etas, p->ran, p->skipped, p->failed,
                p->oom);
        v->drawn = 1;
        if (p->final)
            fputc('\n', stderr);
        fflush(stderr);
        return;
    }
    int quarter = (int)(frac * 4);
    if (!p->final && p->done != 0 && p->elapsed_s - v->last < 10 && quarter == v->last_quarter)
        return;
    v->last = p->elapsed_s;
    v->last_quarter = quarter;
    fprintf(stderr, "mmsim sweep: %zu/%zu points (%.0f%%), %.1f points/s, ETA %s: "
                    "ran %zu, skipped %zu, failed %zu, oom %zu%s\n",
            p->done, p->total, 100 * frac, rate, etas, p->ran, p->skipped, p->failed, p->oom,
            p->final ? " (done)" : "");
}



static const char *const status_names[] = {"pending", "ran", "skipped", "failed"};

static void print_json(const mm_sweep *sw, const char *db, const mm_runner_progress *s,
                       const mm_sweep_points *pts, const mm_point_result *res)
{
    printf("{\n  \"sweep_id\": %lld,\n  \"name\": ", (long long)s->sweep_id);
    mm_cli_json_string(sw->name);
    printf(",\n  \"db\": ");
    mm_cli_json_string(db);
    printf(",\n  \"resumed\": %s,\n  \"points\": %zu,\n  \"ran\": %zu,\n  \"skipped\": %zu,\n"
           "  \"failed\": %zu,\n  \"oom\": %zu,\n  \"wall_s\": %.3f,\n  \"results\": [",
           s->resumed ? "true" : "false", s->total, s->ran, s->skipped, s->failed, s->oom,
           s->elapsed_s);
    for (size_t i = 0; i < pts->n; i++) {
        const mm_point_result *r = &res[i];
        printf("%s\n    {\"point\": %zu, \"status\": \"%s\", \"run_id\": ", i ? "," : "", i,
               status_names[r->status]);
        if (r->run_id > 0)
            printf("%lld", (long long)r->run_id);
        else
            printf("null");
        printf(", \"oom\": %s, \"axes\": %s, \"error\": ", r->oom ? "true" : "false",
               pts->labels[i]);
        if (r->status == MM_POINT_FAILED)
            mm_cli_json_string(r->error);
        else
            printf("null");
        printf("}");
    }
    printf("\n  ]\n}\n");
}

static void print_summary(const mm_sweep *sw, const char *db, const mm_runner_progress *s,
                          const mm_sweep_points *pts, const mm_point_result *res)
{
    printf("mmsim %s: sweep %lld '%s'%s: %zu points (%d axes, %s) into %s\n", MMSIM_VERSION,
           (long long)s->sweep_id, sw->name, s->resumed ? " (resumed)" : "", s->total,
           sw->n_axes, sw->mode == MM_SWEEP_ZIP ? "zip" : "cartesian", db);
    printf("  ran %zu, skipped %zu (already in the database), failed %zu; %zu out of memory; "
           "%.2f s\n", s->ran, s->skipped, s->failed, s->oom, s->elapsed_s);
    size_t shown = 0;
    for (size_t i = 0; i < pts->n; i++) {
        if (res[i].status != MM_POINT_FAILED)
            continue;
        if (shown++ == 0)
            printf("\n  failed points:\n");
        if (shown > 20) {
            printf("  ... and %zu more (mmsim report %s --sweep %lld)\n", s->failed - 20, db,
                   (long long)s->sweep_id);
            break;
        }
        printf("  %6zu %s\n         %s\n", i, pts->labels[i], res[i].error);
    }
    printf("\n  see: mmsim report %s --sweep %lld\n", db, (long long)s->sweep_id);
}

static int sweep_main(const char *spec, const char *db, int jobs, int json, int quiet,
                      int rank, int size)
{
    mm_err err;
    mm_err_clear(&err);
    mm_sweep sw;
    if (mm_sweep_load(&sw, spec, &err))
        return rank == 0 ? mm_cli_fail(&err) : (err.code == MM_EINPUT ? 2 : 1);
    mm_sweep_points pts;
    if (mm_sweep_expand(&sw, &pts, &err)) {
        mm_sweep_free(&sw);
        return mm_cli_fail(&err);
    }
    char *axes = mm_sweep_axes_json(&sw);
    mm_point_result *res = calloc(pts.n + 1, sizeof *res);
    if (!axes || !res) {
        free(axes);
        free(res);
        mm_sweep_points_free(&pts);
        mm_sweep_free(&sw);
        fprintf(stderr, "mmsim: out of memory\n");
        return 1;
    }
    mm_err dberr;
    if (mm_cli_open_db(db, &dberr)) { /* every rank: all fail alike */
        free(axes);
        free(res);
        mm_sweep_points_free(&pts);
        mm_sweep_free(&sw);
        return mm_cli_fail(&dberr);
    }
    progress_view view = {.tty = isatty(2), .quiet = quiet || rank != 0, .last_quarter = -1};
    mm_runner_opts o = {
        .db = db, .jobs = jobs, .version = MMSIM_VERSION,
        .sweep_name = sw.name, .sweep_spec = sw.spec, .sweep_axes = axes,
        .progress = show_progress, .progress_ctx = &view,
        .mpi_rank = rank, .mpi_size = size,
    };
    mm_runner_progress sum;
    memset(&sum, 0, sizeof sum);
    mm_cli_keep_heap(); /* many points in this process */
    int rc = mm_runner_run(&o, pts.pts, pts.n, res, &sum, &err);
    int status = 0;
    if (rc < 0)
        status = rank == 0 ? mm_cli_fail(&err) : 1;
    else if (rank == 0 && json)
        print_json(&sw, db, &sum, &pts, res);
    else if (rank == 0)
        print_summary(&sw, db, &sum, &pts, res);
    free(axes);
    free(res);
    mm_sweep_points_free(&pts);
    mm_sweep_free(&sw);
    return status;
}

/* The options (cli.h: completion scripts are made from them too). */
const struct option mm_cli_sweep_longopts[] = {
    {"help", no_argument, NULL, 'h'}, {"json", no_argument, NULL, 'J'}, {"quiet", no_argument, NULL, 'q'},
    {"db", required_argument, NULL, 'd'}, {"jobs", required_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
const char mm_cli_sweep_shortopts[] = "hqj:";

int mm_cli_sweep(int argc, char **argv)
{
    const char *spec = NULL, *db = DEFAULT_DB;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = ncpu > 0 ? (int)ncpu : 1, json = 0, quiet = 0;
    int c;
    while ((c = mm_cli_getopt(argc, argv, mm_cli_sweep_shortopts, mm_cli_sweep_longopts)) != -1) {
        switch (c) {
        case 'h': return mm_cli_help("sweep");
        case 'J': json = 1; break;
        case 'q': quiet = 1; break;
        case 'd': db = optarg; break;
        case 'j': if (mm_cli_int("sweep", "--jobs", optarg, 1, 4096, &jobs)) return 2; break;
        default: return 2;
        }
    }
    if (mm_cli_operand("sweep", argc, argv, "sweep file", &spec))
        return 2;
    if (!spec)
        return bad_arg("a sweep file is needed, e.g. mmsim sweep", "sweeps/example.yaml");

    int rank, size;
    int brc = mm_cli_mpi_begin("sweep", &rank, &size);
    if (brc)
        return brc;
    /* under MPI each rank simulates one point at a time (--jobs ignored) */
    return mm_cli_mpi_end(size, sweep_main(spec, db, size > 1 ? 1 : jobs, json, quiet, rank, size));
}
