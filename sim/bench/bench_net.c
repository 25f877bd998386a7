/* bench_net.c - wall time of one ring all-reduce on large clusters under
 * both network models.
 *
 * What it is for: `scripts/bench` figures for the cost of the network
 * models at scale.  For 1,024, 8,192 and 32,768 GPUs of DGX H100 nodes
 * (rail-optimized fabric, 32 nodes per leaf group, so the ring crosses
 * spines), it times: building the link graph; a ring all-reduce of 1 GiB
 * over every GPU under `analytic`; the same under `flow` (8 channel flows
 * whose routes cover every link of the ring, one max-min solve at the
 * start, one completion); and, under `flow`, 8 all-reduces at once over
 * the 8 rails' DP groups (GPU i of every node: 8 x N/8-GPU rings sharing
 * nothing but the spines).  Simulated times are printed too, so that the
 * two models can be compared.  The target is the flow model on 8,192 GPUs
 * in under 1 s.
 *
 * Not for: a test (it asserts nothing).  Build with --buildtype=release. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench_common.h"
#include "hw/coll.h"

static void note_end(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    *(mm_time *)ctx = mm_engine_now(eng);
}

/* Runs `k` collectives together; returns the simulated end, -1 on error. */
static double run(const mm_cluster *c, mm_net_model model, const mm_coll_req *req, int k, double *setup_s,
                  double *run_s)
{
    double t0 = bench_now();
    mm_engine *eng = mm_engine_alloc();
    mm_err err;
    mm_network *net = mm_network_alloc(c, eng, model, &err);
    if (!net) {
        fprintf(stderr, "bench_net: %s\n", err.msg);
        return -1;
    }
    double t1 = bench_now();
    mm_time end = -1;
    for (int i = 0; i < k; i++)
        if (mm_network_start(net, &req[i], note_end, &end, 0, NULL, &err)) {
            fprintf(stderr, "bench_net: %s\n", err.msg);
            return -1;
        }
    mm_engine_run(eng);
    double t2 = bench_now();
    mm_network_free(net);
    mm_engine_free(eng);
    *setup_s = t1 - t0;
    *run_s = t2 - t1;
    return (double)end * 1e-9;
}

int main(int argc, char **argv)
{
    const char *topo = argc > 1 ? argv[1] : "topologies/dgx-h100.yaml";
    const int sizes[] = {1024, 8192, 32768};
    const double S = 1024.0 * 1024 * 1024;
    printf("%8s %-9s %10s %10s %12s %10s\n", "GPUs", "model", "graph (s)", "run (s)", "sim (ms)", "busbw");
    for (int si = 0; si < 3; si++) {
        int n = sizes[si];
        mm_cluster c;
        mm_err err;
        if (mm_cluster_load(topo, n / 8, &c, &err)) {
            fprintf(stderr, "bench_net: %s:%d: %s\n", err.file, err.line, err.msg);
            return 1;
        }
        int *g = malloc((size_t)n * sizeof *g);
        for (int i = 0; i < n; i++)
            g[i] = i;
        mm_coll_req one = {MM_COLL_ALLREDUCE, MM_ALGO_RING, g, n, S, 1, 0, 0, false};
        for (int model = 1; model >= 0; model--) {
            double setup = 0, rs = 0, t = run(&c, (mm_net_model)model, &one, 1, &setup, &rs);
            printf("%8d %-9s %10.4f %10.4f %12.3f %10.1f\n", n, mm_net_model_names[model], setup, rs, t * 1e3,
                   S / t * mm_coll_bus_factor(MM_COLL_ALLREDUCE, n) / 1e9);
        }
        /* 8 rail-aligned DP rings at once (flow) */
        int *rg = malloc((size_t)n * sizeof *rg);
        mm_coll_req reqs[8];
        int per = n / 8;
        for (int r = 0; r < 8; r++) {
            for (int j = 0; j < per; j++)
                rg[r * per + j] = j * 8 + r;
            reqs[r] = (mm_coll_req){MM_COLL_ALLREDUCE, MM_ALGO_RING, rg + r * per, per, S / 8, 1, 0, 0, false};
        }
        double setup = 0, rs = 0, t = run(&c, MM_NET_MODEL_FLOW, reqs, 8, &setup, &rs);
        printf("%8d %-9s %10.4f %10.4f %12.3f %10s  (8 concurrent rail rings)\n", n, "flow", setup, rs, t * 1e3, "");
        free(rg);
        free(g);
        mm_cluster_free(&c);
    }
    return 0;
}
