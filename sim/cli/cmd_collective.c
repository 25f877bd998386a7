/* cmd_collective.c - `mmsim collective`: one collective over a message-size
 * sweep on a topology, under either network model, printed in nccl-tests'
 * own output format (src/util.cu of NVIDIA/nccl-tests: `#` headers, the
 * size/count/type/redop/root columns, out-of-place and in-place halves,
 * the "# Avg bus bandwidth" footer) so that scripts which parse nccl-tests
 * logs read it unchanged.  Parsing and printing only; the times come from
 * hw/coll_sweep.h (the rows the C API's mmsim_collective_json gives too).
 * Known limits of the imitation: the simulated in-place and out-of-place
 * times are the same (the model has no local copy to tell them apart);
 * #wrong is N/A (as nccl-tests prints with -c 0: nothing is checked);
 * counts are not rounded to nccl-tests' 16-byte multiples per rank.
 * Not for: anything a program embedding libmmsim would need. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "api/report.h"
#include "hw/coll.h"
#include "hw/coll_sweep.h"
#include "mmsim_config.h"
#include "scenario/sim.h"

#define CMD "collective"

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

typedef struct coll_opts {
    const char *cluster, *netname;
    int nodes, gpus, op, algo, comm_ranks;
    bool json, algo_column;
    double lo, hi, factor;
} coll_opts;

enum { OPT_MIN = 256, OPT_MAX, OPT_FACTOR, OPT_NETWORK, OPT_JSON, OPT_SHOW_ALGO, OPT_COMM_RANKS };

static int parse_args(int argc, char **argv, coll_opts *o)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},          {"cluster", required_argument, NULL, 'c'},
        {"nodes", required_argument, NULL, 'N'},   {"gpus", required_argument, NULL, 'g'},
        {"op", required_argument, NULL, 'o'},      {"algo", required_argument, NULL, 'a'},
        {"min", required_argument, NULL, OPT_MIN}, {"max", required_argument, NULL, OPT_MAX},
        {"factor", required_argument, NULL, OPT_FACTOR}, {"network", required_argument, NULL, OPT_NETWORK},
        {"json", no_argument, NULL, OPT_JSON},     {"show-algo", no_argument, NULL, OPT_SHOW_ALGO},
        {"comm-ranks", required_argument, NULL, OPT_COMM_RANKS}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = mm_cli_getopt(argc, argv, "hc:N:g:o:a:b:e:f:", longopts)) != -1) {
        const char *v = optarg;
        double x;
        char *end;
        switch (c) {
        case 'h': return mm_cli_help(CMD) - 1; /* -1: done, exit 0 */
        case 'c': o->cluster = v; break;
        case 'N': if (mm_cli_int(CMD, "--nodes", v, 1, 1 << 22, &o->nodes)) return 2; break;
        case 'g': if (mm_cli_int(CMD, "--gpus", v, 1, 1 << 22, &o->gpus)) return 2; break;
        case 'o':
            if ((o->op = lookup(mm_coll_names, v)) < 0)
                return mm_cli_bad(CMD, "--op", "unknown collective (allreduce, allgather, reducescatter, alltoall, "
                                               "broadcast, sendrecv): '%s'", v);
            break;
        case 'a':
            if ((o->algo = lookup(mm_coll_algo_names, v)) < 0)
                return mm_cli_bad(CMD, "--algo", "unknown algorithm (auto, ring, tree, hier, nvls): '%s'", v);
            break;
        case 'b': case OPT_MIN: case 'e': case OPT_MAX:
            if (parse_size(v, &x) || x < 1)
                return mm_cli_bad(CMD, c == 'b' || c == OPT_MIN ? "--min" : "--max",
                                  "expects a size such as 8, 64K, 8G; got '%s'", v);
            *(c == 'b' || c == OPT_MIN ? &o->lo : &o->hi) = x;
            break;
        case 'f': case OPT_FACTOR:
            x = strtod(v, &end);
            if (*end || end == v || !(x > 1))
                return mm_cli_bad(CMD, "--factor", "expects a number above 1, got '%s'", v);
            o->factor = x;
            break;
        case OPT_NETWORK:
            if (lookup(mm_net_model_names, v) < 0)
                return mm_cli_bad(CMD, "--network", "expects flow or analytic, got '%s'", v);
            o->netname = v;
            break;
        case OPT_JSON: o->json = true; break;
        case OPT_SHOW_ALGO: o->algo_column = true; break;
        case OPT_COMM_RANKS: if (mm_cli_int(CMD, "--comm-ranks", v, 2, 1 << 22, &o->comm_ranks)) return 2; break;
        default: return 2;
        }
    }
    if (optind < argc)
        return mm_cli_bad(CMD, "<cli>", "unexpected argument '%s'", argv[optind]);
    if (!o->cluster)
        return mm_cli_bad(CMD, "--cluster", "is required");
    if (o->op < 0)
        return mm_cli_bad(CMD, "--op", "is required");
    if (o->lo > o->hi)
        return mm_cli_bad(CMD, "--min", "is above --max");
    return 0;
}

/* nccl-tests' number field (util.cu getFloatStr): the most decimals that
 * fit the width. */
static void float_str(double v, int width, char *out, size_t len)
{
    for (int prec = 2; prec >= 0; prec--)
        if (snprintf(out, len, "%*.*f", width, prec, v) <= width)
            return;
    snprintf(out, len, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

/* Elements per rank as nccl-tests counts them (4-byte floats): the whole
 * buffer for all-reduce, broadcast, send/recv; a rank's share otherwise. */
static double elements(int op, double bytes, int gpus)
{
    double e = floor(bytes / 4);
    return op == MM_COLL_ALLGATHER || op == MM_COLL_REDUCESCATTER || op == MM_COLL_ALLTOALL ? floor(e / gpus) : e;
}

static void print_header(const coll_opts *o, const mm_cluster *c, int gpus)
{
    int op = o->op;
    printf("# nccl-tests output format, simulated by mmsim %s (no GPU ran this)\n", MMSIM_VERSION);
    printf("# Collective test starting: mmsim collective --op %s\n", mm_coll_names[op]);
    printf("# nThread 1 nGpus %d minBytes %.0f maxBytes %.0f step: %g(factor) warmup iters: 0 iters: 1 "
           "agg iters: 1 validation: 0 graph: 0\n", gpus, o->lo, o->hi, o->factor);
    printf("#\n# mmsim: %s on %d GPUs of %s (%d x %d), network %s, algo %s\n", mm_coll_names[op], gpus, c->name,
           c->nodes, c->gpus_per_node, o->netname, mm_coll_algo_names[o->algo]);
    printf("# mmsim: busbw = algbw x %.4f (nccl-tests' bus factor for %s); in-place = out-of-place "
           "(no local copy is modeled)\n", mm_coll_bus_factor((mm_coll_kind)op, gpus), mm_coll_names[op]);
    printf("#\n");
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "",
           "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", o->algo_column ? "  algo" : "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

/* redop and root as nccl-tests' tests pass them (sum for the reducing
 * ones and send/recv, none otherwise; root 0 for broadcast, else -1). */
static void print_row(int op, double bytes, int gpus, double t_us, double alg, double bus, const char *algo)
{
    static const char *const redop[] = {"sum", "none", "sum", "none", "none", "sum"};
    char ts[16], as[16], bs[16];
    float_str(t_us, 7, ts, sizeof ts);
    float_str(alg, 6, as, sizeof as);
    float_str(bus, 6, bs, sizeof bs);
    printf("%12.0f  %12.0f  %8s  %6s  %6d", bytes, elements(op, bytes, gpus), "float", redop[op],
           op == MM_COLL_BROADCAST ? 0 : -1);
    for (int half = 0; half < 2; half++)
        printf("  %7s  %6s  %6s    N/A", ts, as, bs);
    if (algo)
        printf("  %s", algo);
    printf("\n");
}

/* The algorithm chosen per size, as ranges: "ring 8..1048576, nvls 2097152..". */
typedef struct algo_runs {
    char text[1024];
    const char *last;
    double from, to;
} algo_runs;

static void runs_flush(algo_runs *r)
{
    if (!r->last)
        return;
    size_t n = strlen(r->text);
    snprintf(r->text + n, sizeof r->text - n, "%s%s %.0f-%.0f B", n ? ", " : "", r->last, r->from, r->to);
}

static void runs_add(algo_runs *r, const char *algo, double bytes)
{
    if (r->last && !strcmp(r->last, algo)) {
        r->to = bytes;
        return;
    }
    runs_flush(r);
    r->last = algo;
    r->from = r->to = bytes;
}

static int run_sizes(const coll_opts *po, const mm_cluster *c);

int mm_cli_collective(int argc, char **argv)
{
    coll_opts o = {.netname = "flow", .op = -1, .algo = MM_ALGO_AUTO, .lo = 8,
                   .hi = 8.0 * 1024 * 1024 * 1024, .factor = 2};
    int prc = parse_args(argc, argv, &o);
    if (prc)
        return prc < 0 ? 0 : prc;
    char path[1024];
    mm_sim_resolve_path(o.cluster, NULL, path, sizeof path);
    mm_err err;
    mm_err_clear(&err);
    mm_cluster c;
    if (mm_cluster_load(path, o.nodes, &c, &err))
        return mm_cli_fail(&err);
    int rc = run_sizes(&o, &c);
    mm_cluster_free(&c);
    return rc;
}

/* The table (or JSON rows) of one collective over the sizes asked for. */
/* The GPUs the collective runs on (--gpus, else 2 for send/recv and the
 * whole cluster otherwise) and --comm-ranks, checked against the cluster:
 * 0, or the CLI's bad-option status. */
static int check_gpus(const coll_opts *o, const mm_cluster *c, int *gpus)
{
    int op = o->op, total = mm_cluster_gpus(c);
    *gpus = o->gpus ? o->gpus : op == MM_COLL_SENDRECV ? 2 : total;
    if (*gpus > total)
        return mm_cli_bad(CMD, "--gpus", "exceeds the cluster's %d GPUs (use --nodes), got %d", total, *gpus);
    if (op == MM_COLL_SENDRECV && *gpus != 2)
        return mm_cli_bad(CMD, "--gpus", "send/recv runs between 2 GPUs; got %d", *gpus);
    if (o->comm_ranks && op != MM_COLL_SENDRECV)
        return mm_cli_bad(CMD, "--comm-ranks", "applies to --op sendrecv only");
    if (o->comm_ranks > total)
        return mm_cli_bad(CMD, "--comm-ranks", "exceeds the cluster's %d GPUs (use --nodes), got %d", total,
                          o->comm_ranks);
    return 0;
}

/* nccl-tests' closing lines (the text table), with the algorithm per size
 * range; avg_bus: busbw averaged over the rows, as nccl-tests does over
 * every out-of-place and in-place row. */
static void print_footer(int op, algo_runs *runs, double avg_bus)
{
    runs_flush(runs);
    printf("# mmsim algorithm: %s\n", runs->text);
    printf("# %-20s : %d %s\n", "Out of bounds values", 0, "OK");
    printf("# %-20s : %g \n", "Avg bus bandwidth", avg_bus);
    printf("#\n# Collective test concluded: mmsim collective --op %s\n#\n", mm_coll_names[op]);
}

static int run_sizes(const coll_opts *po, const mm_cluster *c)
{
    const coll_opts o = *po;
    mm_err err;
    mm_err_clear(&err);
    int op = o.op, gpus = 0;
    int brc = check_gpus(&o, c, &gpus);
    if (brc)
        return brc;
    mm_coll_sweep_req q = {.op = (mm_coll_kind)op, .algo = (mm_coll_algo)o.algo,
                           .model = (mm_net_model)lookup(mm_net_model_names, o.netname), .gpus = gpus,
                           .comm_ranks = o.comm_ranks, .lo = o.lo, .hi = o.hi, .factor = o.factor};
    mm_coll_row *rows;
    int n;
    if (mm_coll_sweep(c, &q, &rows, &n, &err))
        return mm_cli_fail(&err);
    if (o.json) {
        mm_report_coll_json(stdout, rows, n);
    } else {
        print_header(&o, c, gpus);
        double bus_sum = 0;
        algo_runs runs = {.text = ""};
        for (int i = 0; i < n; i++) {
            print_row(op, rows[i].bytes, gpus, rows[i].time_s * 1e6, rows[i].algbw_gbps, rows[i].busbw_gbps,
                      o.algo_column ? rows[i].algo : NULL);
            runs_add(&runs, rows[i].algo, rows[i].bytes);
            bus_sum += rows[i].busbw_gbps;
        }
        print_footer(op, &runs, n ? bus_sum / n : 0.0);
    }
    free(rows);
    return 0;
}
