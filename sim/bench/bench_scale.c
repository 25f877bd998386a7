/* bench_scale.c - one scenario run for scripts/bench: host CPU seconds,
 * peak resident memory and ops of the graph, so that the bench can print
 * bytes per op next to the times.  Not a test: it asserts nothing.
 *
 *   bench_scale [--no-symmetry | --full-build] [--full-routes] [--set KEY=VALUE]...
 *       (the built-in default scenario; --no-symmetry simulates every DP
 *       replica, --full-build builds every replica's ops and collapses
 *       them where they are identical: exec/symmetry.h; --full-routes keeps
 *       every link in the flow model's routes: hw/coll.h
 *       mm_network_symmetric)
 *
 * Prints one line: cpu_s wall_s peak_rss_mib ops events bytes_per_op
 * iteration_time_s.  CPU time and peak RSS come from getrusage (the whole
 * process: loading, building, running); ops are those built for the last
 * iteration (one replica's where identical replicas are built once,
 * mm_metrics.graph_ops), and bytes/op is peak RSS over them: meaningful
 * for a whole graph (--full-build, or replicas that differ). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "scenario/sim.h"
#include "exec/run.h"

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

int main(int argc, char **argv)
{
    const char *sets[256];
    int n = 0;
    bool no_sym = false, full = false, full_routes = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-symmetry")) {
            no_sym = true;
        } else if (!strcmp(argv[i], "--full-build")) {
            full = true;
        } else if (!strcmp(argv[i], "--full-routes")) {
            full_routes = true;
        } else if (!strcmp(argv[i], "--set") && i + 1 < argc && n < 256) {
            sets[n++] = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_scale [--no-symmetry | --full-build] [--full-routes] [--set KEY=VALUE]...\n");
            return 2;
        }
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static mm_scenario sc;
    mm_sim sim = {0};
    mm_err err;
    mm_err_clear(&err);
    if (mm_scenario_load(&sc, NULL, sets, n, &err) || mm_sim_prepare(&sim, &sc, &err)) {
        fprintf(stderr, "bench_scale: %s:%d %s: %s\n", err.file, err.line, err.key, err.msg);
        return 2;
    }
    sim.no_symmetry = no_sym;
    sim.full_build = full;
    sim.full_routes = full_routes;
    mm_metrics m;
    if (mm_sim_run(&sim, &m, NULL, &err)) {
        fprintf(stderr, "bench_scale: %s\n", err.msg);
        mm_sim_free(&sim);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss = (double)ru.ru_maxrss * 1024.0; /* Linux: kilobytes */
    uint64_t ops = m.graph_ops;
    printf("%.3f %.3f %.1f %llu %llu %.0f %.9g\n", cpu_s(),
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), rss / (1 << 20), (unsigned long long)ops,
           (unsigned long long)m.events, ops ? rss / (double)ops : 0.0, m.iteration_time_s);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
    mm_scenario_free(&sc);
    return 0;
}
