/* cmd_collective.c - `mmsim collective`: one collective over a message-size
 * sweep on a topology, under either network model, with nccl-tests' own
 * flags (src/common.cu of NVIDIA/nccl-tests: -b -e -i -f -g -c -n -w -o -d
 * -z -a -J, their meanings) and printed in its own output format
 * (src/util.cu: `#` headers, the size/count/type/redop/root columns,
 * out-of-place and in-place halves, the "# Avg bus bandwidth" footer; -J's
 * JSON, file version 3) so that scripts which run nccl-tests or parse its
 * logs work unchanged.  Parsing and printing only; the rows come from
 * hw/coll_sweep.h and the JSON from api/report.c (what the C API's
 * mmsim_collective_json returns too).
 * What a simulator makes free is accepted and changes nothing: -c (nothing
 * is moved, so nothing is checked: #wrong N/A, nwrong null), -w (no warm-up
 * effect is modeled), -z and -a (the ranks of a simulated collective finish
 * together, so blocking and rank-averaging give the same time), -n (the
 * time of n back-to-back operations over n).  -d sets the element size
 * (the count column, and the 16-byte rounding of a rank's share); -o and
 * -d decide whether NVLS can run a reduction (NCCL's ncclNvlsSupported).
 * Known limits: in-place and out-of-place times are the same (the model has
 * no local copy to tell them apart); the reduction's arithmetic costs
 * nothing (the network model is bandwidth- and latency-bound).
 * Not for: anything a program embedding libmmsim would need. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/report.h"
#include "cli/cli.h"
#include "hw/coll.h"
#include "hw/coll_sweep.h"
#include "mmsim_config.h"
#include "scenario/sim.h"

#define CMD "collective"

/* "8", "1K", "8G", "1.5M" (powers of 1024, as nccl-tests' parsesize reads
 * -b/-e/-i). */
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

/* A collective by our name (allreduce) or by nccl-tests' binary's
 * (all_reduce, all_reduce_perf). */
static int lookup_coll(const char *v)
{
    static const char *const nt[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast",
                                     "sendrecv", NULL};
    int k = lookup(mm_coll_names, v);
    if (k >= 0)
        return k;
    char base[64];
    snprintf(base, sizeof base, "%s", v);
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, "_perf"))
        base[n - 5] = '\0';
    k = lookup(nt, base);
    return k >= 0 ? k : lookup(mm_coll_names, base);
}

static int lookup_dtype(const char *v)
{
    for (int i = 0; mm_coll_dtypes[i].name; i++)
        if (!strcmp(mm_coll_dtypes[i].name, v))
            return i;
    return -1;
}

/* MAX_SIZES: the most sizes one sweep may have (-i 1 from 8 to 8G would be
 * billions of rows). */
enum { MAX_SIZES = MM_COLL_SWEEP_MAX_SIZES };

typedef struct coll_opts {
    const char *cluster, *netname, *json_file;
    int argc;
    char **argv;
    int nodes, gpus, op, algo, comm_ranks;
    int redop;                 /* mm_redop, or -1: all */
    int dtype;                 /* index in mm_coll_dtypes, or -1: all */
    int check, iters, warmup, blocking, average;
    bool json, algo_column, factor_set;
    double lo, hi, factor, step;
} coll_opts;

enum { OPT_MIN = 256, OPT_MAX, OPT_FACTOR, OPT_NETWORK, OPT_JSON, OPT_SHOW_ALGO, OPT_COMM_RANKS, OPT_CLUSTER,
       OPT_NODES, OPT_ALGO, OPT_COLL };

static int set_size(int c, const char *v, coll_opts *o)
{
    const char *flag = c == 'b' || c == OPT_MIN ? "-b/--minbytes" : c == 'e' || c == OPT_MAX ? "-e/--maxbytes"
                                                                                              : "-i/--stepbytes";
    double x;
    if (parse_size(v, &x) || x < 1 || x > 1e15)
        return mm_cli_bad(CMD, flag, "expects a size from 1 byte, such as 8, 64K, 8G; got '%s'", v);
    *(c == 'b' || c == OPT_MIN ? &o->lo : c == 'e' || c == OPT_MAX ? &o->hi : &o->step) = x;
    return 0;
}

/* -o: a reduction operator (or all); a collective's name is taken as the
 * collective, as --op named it before the nccl-tests flags came. */
static int set_op(const char *v, coll_opts *o)
{
    int k = lookup(mm_redop_names, v);
    if (k >= 0 || !strcmp(v, "all")) {
        o->redop = k;
        return 0;
    }
    if ((k = lookup_coll(v)) >= 0) {
        o->op = k;
        return 0;
    }
    return mm_cli_bad(CMD, "-o/--op", "expects a reduction operator (sum, prod, max, min, avg, mulsum, all) "
                                      "or a collective; got '%s'", v);
}

static int set_dtype(const char *v, coll_opts *o)
{
    if (!strcmp(v, "all") || (o->dtype = lookup_dtype(v)) >= 0) {
        o->dtype = strcmp(v, "all") ? o->dtype : -1;
        return 0;
    }
    return mm_cli_bad(CMD, "-d/--datatype", "unknown data type '%s' (int8, uint8, int32, uint32, int64, uint64, "
                                            "half, float, double, bfloat16, f8e4m3, f8e5m2, all)", v);
}

/* The options (cli.h: completion scripts are made from them too). */
const struct option mm_cli_collective_longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {"cluster", required_argument, NULL, OPT_CLUSTER},
    {"nodes", required_argument, NULL, OPT_NODES},
    {"gpus", required_argument, NULL, 'g'},      {"ngpus", required_argument, NULL, 'g'},
    {"op", required_argument, NULL, 'o'},        {"collective", required_argument, NULL, OPT_COLL},
    {"algo", required_argument, NULL, OPT_ALGO},
    {"min", required_argument, NULL, OPT_MIN},   {"minbytes", required_argument, NULL, 'b'},
    {"max", required_argument, NULL, OPT_MAX},   {"maxbytes", required_argument, NULL, 'e'},
    {"factor", required_argument, NULL, OPT_FACTOR}, {"stepfactor", required_argument, NULL, 'f'},
    {"stepbytes", required_argument, NULL, 'i'},
    {"check", required_argument, NULL, 'c'},     {"iters", required_argument, NULL, 'n'},
    {"warmup_iters", required_argument, NULL, 'w'}, {"datatype", required_argument, NULL, 'd'},
    {"blocking", required_argument, NULL, 'z'},  {"average", required_argument, NULL, 'a'},
    {"output_file", required_argument, NULL, 'J'},
    {"network", required_argument, NULL, OPT_NETWORK},
    {"json", no_argument, NULL, OPT_JSON},       {"show-algo", no_argument, NULL, OPT_SHOW_ALGO},
    {"comm-ranks", required_argument, NULL, OPT_COMM_RANKS}, {NULL, 0, NULL, 0}};
const char mm_cli_collective_shortopts[] = "hg:o:b:e:f:i:c:n:w:d:z:a:J:";

/* The operands (the collective, once) and what the options say together:
 * the cluster and the collective given, -b not above -e, and the sizes of
 * an additive sweep at most MAX_SIZES; the end of parse_args. */
static int check_args(int argc, char **argv, coll_opts *o)
{
    for (int i = optind; i < argc; i++) {
        int k = lookup_coll(argv[i]);
        if (k < 0 || (o->op >= 0 && o->op != k))
            return mm_cli_bad(CMD, "<cli>", k < 0 ? "unexpected argument '%s' (a collective is one of allreduce, "
                                                    "allgather, reducescatter, alltoall, broadcast, sendrecv)"
                                                  : "a second collective '%s'", argv[i]);
        o->op = k;
    }
    if (!o->cluster)
        return mm_cli_bad(CMD, "--cluster", "is required");
    if (o->op < 0)
        return mm_cli_bad(CMD, "<collective>", "is required: mmsim collective allreduce --cluster FILE (or --op "
                                               "allreduce)");
    if (o->lo > o->hi)
        return mm_cli_bad(CMD, "-b/--minbytes", "is above -e/--maxbytes");
    /* nccl-tests: a factor above 1 multiplies, else -i adds; giving -i
     * alone asks for the additive sweep */
    if (o->step > 0 && !o->factor_set)
        o->factor = 1;
    if (o->factor <= 1) {
        if (!(o->step > 0))
            o->step = 1024.0 * 1024; /* nccl-tests' default -i */
        if ((o->hi - o->lo) / o->step + 1 > MAX_SIZES)
            return mm_cli_bad(CMD, "-i/--stepbytes", "gives %.0f sizes from -b to -e; at most %d",
                              floor((o->hi - o->lo) / o->step) + 1, MAX_SIZES);
    }
    return 0;
}

static int parse_args(int argc, char **argv, coll_opts *o)
{
    int c;
    while ((c = mm_cli_getopt(argc, argv, mm_cli_collective_shortopts, mm_cli_collective_longopts)) != -1) {
        const char *v = optarg;
        double x;
        char *end;
        switch (c) {
        case 'h': return mm_cli_help(CMD) - 1; /* -1: done, exit 0 */
        case OPT_CLUSTER: o->cluster = v; break;
        case OPT_NODES: if (mm_cli_int(CMD, "--nodes", v, 1, 1 << 22, &o->nodes)) return 2; break;
        case 'g': if (mm_cli_int(CMD, "-g/--ngpus", v, 1, 1 << 22, &o->gpus)) return 2; break;
        case 'o': if (set_op(v, o)) return 2; break;
        case OPT_COLL:
            if ((o->op = lookup_coll(v)) < 0)
                return mm_cli_bad(CMD, "--collective", "unknown collective (allreduce, allgather, reducescatter, "
                                                       "alltoall, broadcast, sendrecv): '%s'", v);
            break;
        case OPT_ALGO:
            if ((o->algo = lookup(mm_coll_algo_names, v)) < 0)
                return mm_cli_bad(CMD, "--algo", "unknown algorithm (auto, ring, tree, hier, nvls, collnet): '%s'", v);
            break;
        case 'b': case OPT_MIN: case 'e': case OPT_MAX: case 'i':
            if (set_size(c, v, o)) return 2;
            break;
        case 'f': case OPT_FACTOR:
            x = strtod(v, &end);
            if (*end || end == v || !(x >= 1) || x > 1e6)
                return mm_cli_bad(CMD, "-f/--stepfactor", "expects a number from 1 (1: add -i/--stepbytes) "
                                                          "to 1e6, got '%s'", v);
            o->factor = x;
            o->factor_set = true;
            break;
        case 'c': if (mm_cli_int(CMD, "-c/--check", v, 0, 1 << 20, &o->check)) return 2; break;
        case 'n': if (mm_cli_int(CMD, "-n/--iters", v, 1, 1 << 20, &o->iters)) return 2; break;
        case 'w': if (mm_cli_int(CMD, "-w/--warmup_iters", v, 0, 1 << 20, &o->warmup)) return 2; break;
        case 'z': if (mm_cli_int(CMD, "-z/--blocking", v, 0, 3, &o->blocking)) return 2; break;
        case 'a': if (mm_cli_int(CMD, "-a/--average", v, 0, 3, &o->average)) return 2; break;
        case 'd': if (set_dtype(v, o)) return 2; break;
        case 'J': {
            size_t n = strlen(v);
            if (n < 6 || strcasecmp(v + n - 5, ".json"))
                return mm_cli_bad(CMD, "-J/--output_file", "writes JSON only (a name ending in .json, as "
                                                           "nccl-tests infers the type), got '%s'", v);
            o->json_file = v;
            break;
        }
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
    return check_args(argc, argv, o);
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

static void print_header(const coll_opts *o, const mm_cluster *c, int gpus)
{
    int op = o->op;
    printf("# nccl-tests output format, simulated by mmsim %s (no GPU ran this)\n", MMSIM_VERSION);
    printf("# Collective test starting: mmsim collective %s\n", mm_coll_names[op]);
    printf("# nThread 1 nGpus %d minBytes %.0f maxBytes %.0f step: ", gpus, o->lo, o->hi);
    if (o->factor > 1)
        printf("%g(factor)", o->factor);
    else
        printf("%.0f(bytes)", o->step);
    printf(" warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0\n", o->warmup, o->iters, o->check);
    printf("#\n# mmsim: %s on %d GPUs of %s (%d x %d), network %s, algo %s\n", mm_coll_names[op], gpus, c->name,
           c->nodes, c->gpus_per_node, o->netname, mm_coll_algo_names[o->algo]);
    printf("# mmsim: busbw = algbw x %.4f (nccl-tests' bus factor for %s); in-place = out-of-place "
           "(no local copy is modeled)\n", mm_coll_bus_factor((mm_coll_kind)op, gpus), mm_coll_names[op]);
    if (o->check)
        printf("# mmsim: -c %d: nothing is moved, so nothing is checked (#wrong N/A)\n", o->check);
    printf("#\n");
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "",
           "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", o->algo_column ? "  algo" : "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static void print_row(const mm_coll_row *r, bool algo_column)
{
    char ts[16], as[16], bs[16];
    float_str(r->t_us, 7, ts, sizeof ts);
    float_str(r->alg, 6, as, sizeof as);
    float_str(r->bus, 6, bs, sizeof bs);
    printf("%12.0f  %12.0f  %8s  %6s  %6d", r->bytes, r->count, r->type, r->redop, r->root);
    for (int half = 0; half < 2; half++)
        printf("  %7s  %6s  %6s    N/A", ts, as, bs);
    if (algo_column)
        printf("  %s", r->algo);
    printf("\n");
    fflush(stdout); /* a row as soon as it is known (docs/reliability.md) */
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
    r->last = NULL;
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
    coll_opts o = {.netname = "flow", .op = -1, .algo = MM_ALGO_AUTO, .lo = 8, .hi = 8.0 * 1024 * 1024 * 1024,
                   .factor = 2, .redop = MM_REDOP_SUM, .iters = 1, .average = 1, .argc = argc, .argv = argv};
    o.dtype = lookup_dtype("float");
    /* the arguments as given, for the JSON's "args" (getopt permutes argv) */
    char **given = malloc(((size_t)argc + 1) * sizeof *given);
    if (!given) {
        mm_err oom;
        mm_err_set(&oom, MM_EINTERNAL, "", 0, "", "out of memory");
        return mm_cli_fail(&oom);
    }
    memcpy(given, argv, (size_t)argc * sizeof *given);
    o.argv = given;
    int prc = parse_args(argc, argv, &o);
    if (prc) {
        free(given);
        return prc < 0 ? 0 : prc;
    }
    char path[1024];
    mm_sim_resolve_path(o.cluster, NULL, path, sizeof path);
    mm_err err;
    mm_err_clear(&err);
    mm_cluster c;
    if (mm_cluster_load(path, o.nodes, &c, &err)) {
        free(given);
        return mm_cli_fail(&err);
    }
    int rc = run_sizes(&o, &c);
    mm_cluster_free(&c);
    free(given);
    return rc;
}

/* The GPUs the collective runs on (--gpus, else 2 for send/recv and the
 * whole cluster otherwise) and --comm-ranks, checked against the cluster;
 * a forced nvls against the reductions asked for: 0, or the CLI's
 * bad-option status. */
static int check_gpus(const coll_opts *o, const mm_cluster *c, int *gpus)
{
    int op = o->op, total = mm_cluster_gpus(c);
    *gpus = o->gpus ? o->gpus : op == MM_COLL_SENDRECV ? 2 : total;
    if (*gpus > total)
        return mm_cli_bad(CMD, "-g/--ngpus", "exceeds the cluster's %d GPUs (use --nodes), got %d", total, *gpus);
    if (op == MM_COLL_SENDRECV && *gpus != 2)
        return mm_cli_bad(CMD, "-g/--ngpus", "send/recv runs between 2 GPUs; got %d", *gpus);
    if (o->comm_ranks && op != MM_COLL_SENDRECV)
        return mm_cli_bad(CMD, "--comm-ranks", "applies to sendrecv only");
    if (o->comm_ranks > total)
        return mm_cli_bad(CMD, "--comm-ranks", "exceeds the cluster's %d GPUs (use --nodes), got %d", total,
                          o->comm_ranks);
    if (o->algo == MM_ALGO_NVLS && mm_coll_reduces((mm_coll_kind)op))
        for (int t = 0; mm_coll_dtypes[t].name; t++)
            for (int r = 0; r < MM_REDOP_COUNT; r++)
                if ((o->dtype < 0 || o->dtype == t) && (o->redop < 0 || o->redop == r) &&
                    !mm_coll_nvls_supports((mm_redop)r, &mm_coll_dtypes[t]))
                    return mm_cli_bad(CMD, "--algo", "nvls has no kernel for -o %s -d %s (NVLink SHARP reduces "
                                                     "sums, and min/max of 16-bit and 32/64-bit integer types)",
                                      mm_redop_names[r], mm_coll_dtypes[t].name);
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
    printf("#\n# Collective test concluded: mmsim collective %s\n#\n", mm_coll_names[op]);
}

/* Writes the JSON built in memory to stdout (--json) and to -J's file. */
static int put_json(const coll_opts *o, const char *text, size_t n)
{
    if (o->json)
        fwrite(text, 1, n, stdout);
    if (!o->json_file)
        return 0;
    FILE *f = fopen(o->json_file, "w");
    if (!f || fwrite(text, 1, n, f) != n) {
        if (f)
            fclose(f);
        return mm_cli_bad(CMD, "-J/--output_file", "cannot write '%s': %s", o->json_file, strerror(errno));
    }
    if (fclose(f))
        return mm_cli_bad(CMD, "-J/--output_file", "cannot write '%s': %s", o->json_file, strerror(errno));
    if (!o->json)
        printf("# Writing JSON output to %s\n", o->json_file);
    return 0;
}

/* What the sweep prints as its rows come (hw/coll_sweep.h). */
typedef struct printing {
    const coll_opts *o;
    FILE *json; /* the JSON being built (memory), or NULL */
    int rows;
    double bus_sum;
    algo_runs runs;
} printing;

static int on_row(const mm_coll_row *row, void *ctx)
{
    printing *pr = ctx;
    if (!pr->o->json)
        print_row(row, pr->o->algo_column);
    if (pr->json)
        mm_report_coll_json_row(pr->json, row, pr->o->iters, pr->rows == 0);
    runs_add(&pr->runs, row->algo, row->bytes);
    pr->bus_sum += row->bus;
    pr->rows++;
    return 0;
}

static int run_sizes(const coll_opts *o, const mm_cluster *c)
{
    mm_err err;
    mm_err_clear(&err);
    int gpus = 0;
    int brc = check_gpus(o, c, &gpus);
    if (brc)
        return brc;
    const mm_coll_sweep_req q = {.op = (mm_coll_kind)o->op, .algo = (mm_coll_algo)o->algo,
                                 .model = (mm_net_model)lookup(mm_net_model_names, o->netname), .gpus = gpus,
                                 .comm_ranks = o->comm_ranks, .iters = o->iters, .redop = o->redop,
                                 .dtype = o->dtype, .lo = o->lo, .hi = o->hi, .factor = o->factor, .step = o->step};
    printing pr = {.o = o, .runs = {.text = ""}};
    char *jtext = NULL;
    size_t jlen = 0;
    int *g = malloc((size_t)gpus * sizeof *g);
    if (!g || ((o->json || o->json_file) && !(pr.json = open_memstream(&jtext, &jlen)))) {
        free(g);
        mm_err_set(&err, MM_EINTERNAL, "", 0, "", "out of memory");
        return mm_cli_fail(&err);
    }
    mm_coll_sweep_ranks(c, &q, g);
    if (!o->json)
        print_header(o, c, gpus);
    if (pr.json) {
        const mm_coll_json_info ji = {.args = (const char *const *)o->argv, .n_args = o->argc, .warmup = o->warmup,
                                      .check = o->check, .blocking = o->blocking};
        mm_report_coll_json_begin(pr.json, &ji, &q, c, g);
    }
    int rc = mm_coll_sweep(c, &q, on_row, &pr, &err);
    if (rc)
        rc = mm_cli_fail(&err);
    double avg = pr.rows ? pr.bus_sum / pr.rows : 0.0;
    if (rc == 0 && !o->json)
        print_footer(o->op, &pr.runs, avg);
    if (pr.json) {
        if (rc == 0)
            mm_report_coll_json_end(pr.json, avg);
        fclose(pr.json);
        if (rc == 0)
            rc = put_json(o, jtext, jlen);
    }
    free(jtext);
    free(g);
    return rc;
}
