/* cmd_collective.c - `mmsim collective`: an nccl-tests-style table of one
 * collective over a message-size sweep on a topology, under either network
 * model.  Parsing and printing only; the times come from hw/coll.h.
 * Not for: anything a program embedding libmmsim would need. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "hw/coll.h"
#include "run/sim.h"

static int bad_flag(const char *flag, const char *what, const char *val)
{
    return mm_cli_usage_error("collective", flag, what, val);
}

/* "8", "1K", "8G", "1.5M" (powers of 1024, as nccl-tests reads -b/-e). */
static int parse_size(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0))
        return -1;
    double mul = 1;
    switch (*end) {
    case 'K': case 'k': mul = 1024.0, end++; break;
    case 'M': case 'm': mul = 1024.0 * 1024, end++; break;
    case 'G': case 'g': mul = 1024.0 * 1024 * 1024, end++; break;
    case 'T': case 't': mul = 1024.0 * 1024 * 1024 * 1024, end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return -1;
    *out = v * mul;
    return 0;
}

static int lookup(const char *const *names, const char *v)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], v))
            return i;
    return -1;
}

static void note_end(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    *(mm_time *)ctx = mm_engine_now(eng);
}

int mm_cli_collective(int argc, char **argv)
{
    const char *cluster = NULL, *netname = "flow";
    int nodes = 0, gpus = 0, op = -1, algo = MM_ALGO_AUTO, json = 0;
    double lo = 8, hi = 8.0 * 1024 * 1024 * 1024, factor = 2;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("see: mmsim help collective\n");
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (a[0] != '-' || a[1] != '-')
            return bad_flag("<cli>", "unexpected argument", a);
        if (!v)
            return bad_flag(a, "option needs a value:", a);
        i++;
        char *end;
        if (!strcmp(a, "--cluster")) {
            cluster = v;
        } else if (!strcmp(a, "--nodes") || !strcmp(a, "--gpus")) {
            long x = strtol(v, &end, 10);
            if (*end || end == v || x < 1 || x > (1 << 22))
                return bad_flag(a, "expects a positive integer, got", v);
            *(a[2] == 'n' ? &nodes : &gpus) = (int)x;
        } else if (!strcmp(a, "--op")) {
            if ((op = lookup(mm_coll_names, v)) < 0)
                return bad_flag(a, "unknown collective (allreduce, allgather, reducescatter, alltoall, "
                                   "broadcast, sendrecv):", v);
        } else if (!strcmp(a, "--algo")) {
            if ((algo = lookup(mm_coll_algo_names, v)) < 0)
                return bad_flag(a, "unknown algorithm (auto, ring, tree, hier, nvls):", v);
        } else if (!strcmp(a, "--min") || !strcmp(a, "--max")) {
            double x;
            if (parse_size(v, &x) || x < 1)
                return bad_flag(a, "expects a size such as 8, 64K, 8G; got", v);
            *(a[3] == 'i' ? &lo : &hi) = x;
        } else if (!strcmp(a, "--factor")) {
            double x = strtod(v, &end);
            if (*end || end == v || !(x > 1))
                return bad_flag(a, "expects a number above 1, got", v);
            factor = x;
        } else if (!strcmp(a, "--network")) {
            if (lookup(mm_net_model_names, v) < 0)
                return bad_flag(a, "expects flow or analytic, got", v);
            netname = v;
        } else {
            return bad_flag(a, "unknown option", a);
        }
    }
    if (!cluster)
        return bad_flag("--cluster", "is required", "");
    if (op < 0)
        return bad_flag("--op", "is required", "");
    if (lo > hi)
        return bad_flag("--min", "is above --max", "");
    char path[1024];
    mm_sim_resolve_path(cluster, NULL, path, sizeof path);
    mm_err err;
    mm_err_clear(&err);
    mm_cluster c;
    if (mm_cluster_load(path, nodes, &c, &err))
        return mm_cli_fail(&err);
    int total = mm_cluster_gpus(&c);
    if (gpus == 0)
        gpus = op == MM_COLL_SENDRECV ? 2 : total;
    if (gpus > total) {
        char v[64];
        snprintf(v, sizeof v, "%d", gpus);
        return bad_flag("--gpus", "exceeds the cluster's GPUs (use --nodes), got", v);
    }
    if (op == MM_COLL_SENDRECV && gpus != 2)
    {
        char v[64];
        snprintf(v, sizeof v, "%d", gpus);
        return bad_flag("--gpus", "send/recv runs between 2 GPUs; got", v);
    }
    int *g = malloc((size_t)gpus * sizeof *g);
    mm_engine *eng = mm_engine_alloc();
    mm_net_model model = (mm_net_model)lookup(mm_net_model_names, netname);
    mm_network *net = g && eng ? mm_network_alloc(&c, eng, model, &err) : NULL;
    if (!net) {
        if (err.code == MM_OK)
            mm_err_set(&err, MM_EINTERNAL, "", 0, "", "out of memory");
        free(g);
        mm_engine_free(eng);
        return mm_cli_fail(&err);
    }
    /* The first `gpus` GPUs; send/recv goes from GPU 0 to the first GPU
     * of the last node (across nodes when there are several). */
    for (int i = 0; i < gpus; i++)
        g[i] = i;
    if (op == MM_COLL_SENDRECV)
        g[1] = c.nodes > 1 ? (c.nodes - 1) * c.gpus_per_node : 1;
    if (!json) {
        printf("# mmsim collective: %s on %d GPUs of %s (%d x %d), network %s, algo %s\n",
               mm_coll_names[op], gpus, c.name, c.nodes, c.gpus_per_node, netname,
               mm_coll_algo_names[algo]);
        printf("# busbw = algbw x %.4f (nccl-tests' bus factor for %s)\n",
               mm_coll_bus_factor((mm_coll_kind)op, gpus), mm_coll_names[op]);
        printf("%14s %12s %10s %10s  %s\n", "size (B)", "time (us)", "algbw", "busbw", "algo");
        printf("%14s %12s %10s %10s\n", "", "", "(GB/s)", "(GB/s)");
    } else {
        printf("{\"rows\":[");
    }
    int rc = 0, row = 0;
    for (double S = lo; S <= hi * (1 + 1e-12); S *= factor) {
        double bytes = floor(S);
        mm_coll_req req = {.kind = (mm_coll_kind)op, .algo = (mm_coll_algo)algo, .gpus = g,
                           .n = gpus, .bytes = bytes, .count = 1};
        mm_time t0 = mm_engine_now(eng), t1 = -1;
        mm_coll_algo used = MM_ALGO_RING;
        if (mm_network_start(net, &req, note_end, &t1, 0, &used, &err)) {
            if (json)
                printf("]}\n");
            rc = mm_cli_fail(&err);
            break;
        }
        mm_engine_run(eng);
        double t = (double)(t1 - t0) * 1e-9;
        /* all-to-all and send/recv have one algorithm: direct transfers */
        const char *aname = op == MM_COLL_ALLTOALL || op == MM_COLL_SENDRECV ? "direct"
                                                                             : mm_coll_algo_names[used];
        double alg = t > 0 ? bytes / t / 1e9 : INFINITY;
        double bus = alg * mm_coll_bus_factor((mm_coll_kind)op, gpus);
        if (json)
            printf("%s{\"bytes\":%.0f,\"time_us\":%.6g,\"algbw_gbps\":%.6g,\"busbw_gbps\":%.6g,"
                   "\"algo\":\"%s\"}",
                   row ? "," : "", bytes, t * 1e6, alg, bus, aname);
        else
            printf("%14.0f %12.2f %10.2f %10.2f  %s\n", bytes, t * 1e6, alg, bus, aname);
        row++;
    }
    if (json && rc == 0)
        printf("]}\n");
    mm_network_free(net);
    mm_engine_free(eng);
    free(g);
    return rc;
}
