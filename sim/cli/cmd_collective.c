/* cmd_collective.c - `mmsim collective`: one collective over a message-size
 * sweep on a topology, under either network model, with nccl-tests' own
 * flags (src/common.cu of NVIDIA/nccl-tests: -b -e -i -f -g -c -n -w -o -d
 * -z -a -J, their meanings) and printed in its own output format
 * (src/util.cu: `#` headers, the size/count/type/redop/root columns,
 * out-of-place and in-place halves, the "# Avg bus bandwidth" footer; -J's
 * JSON, file version 3) so that scripts which run nccl-tests or parse its
 * logs work unchanged.  Parsing and printing only; the times come from
 * hw/coll.h.
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
#include <time.h>

#include "cli/cli.h"
#include "hw/coll.h"
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

static void note_end(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    *(mm_time *)ctx = mm_engine_now(eng);
}

/* MAX_SIZES: the most sizes one sweep may have (-i 1 from 8 to 8G would be
 * billions of rows). */
enum { MAX_SIZES = 100000 };

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
                return mm_cli_bad(CMD, "--algo", "unknown algorithm (auto, ring, tree, hier, nvls): '%s'", v);
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

/* One size of the sweep as nccl-tests sets it up (src/common.cu setupArgs
 * and each test's GetCollByteCount): count = S / element size, a rank's
 * share for all-gather, reduce-scatter and all-to-all rounded down to a
 * multiple of 16 bytes; `bytes` is what the size column prints (the larger
 * of the send and receive buffers) and what algbw divides, `count` the
 * count column. */
static void size_of(int op, double S, int w, int gpus, double *bytes, double *count)
{
    double e = floor(S / w);
    if (op == MM_COLL_ALLGATHER || op == MM_COLL_REDUCESCATTER || op == MM_COLL_ALLTOALL) {
        double align = 16 / w > 1 ? 16 / w : 1;
        double base = floor(floor(e / gpus) / align) * align;
        *count = base;
        *bytes = base * gpus * w;
    } else {
        *count = e;
        *bytes = e * w;
    }
}

static bool reduces(int op)
{
    return op == MM_COLL_ALLREDUCE || op == MM_COLL_REDUCESCATTER;
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

/* One row's numbers. */
typedef struct coll_row {
    double bytes, count, t_us, alg, bus;
    const char *type, *redop, *algo;
    int root;
} coll_row;

static void print_row(const coll_row *r, bool algo_column)
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

/* ---- nccl-tests' -J JSON (src/util.cu of NVIDIA/nccl-tests, its file
 * version 3): the same keys, nesting and value forms, booleans included,
 * which nccl-tests writes as the strings "true" and "false" ------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_double(FILE *f, double v)
{
    if (v != v)
        fputs("\"nan\"", f);
    else
        fprintf(f, "%lf", v);
}

static void now_str(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tmv;
    localtime_r(&now, &tmv);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tmv);
}

static void json_begin(FILE *f, const coll_opts *o, const mm_cluster *c, int gpus, const int *g)
{
    char t[64];
    now_str(t, sizeof t);
    fprintf(f, "{\"version\":3,\"start_time\":");
    json_str(f, t);
    fprintf(f, ",\"args\":[");
    for (int i = 0; i < o->argc; i++) {
        if (i)
            fputc(',', f);
        json_str(f, i ? o->argv[i] : "mmsim collective");
    }
    /* no environment (nccl-tests copies the whole of it) and no NCCL */
    fprintf(f, "],\"env\":[],\"nccl_version\":0,\"config\":{\"nthreads\":1,\"ngpus\":%d,"
               "\"minimum_bytes\":%.0f,\"maximum_bytes\":%.0f,", gpus, o->lo, o->hi);
    if (o->factor > 1)
        fprintf(f, "\"step_factor\":%.0f,", o->factor);
    else
        fprintf(f, "\"step_bytes\":%.0f,", o->step);
    fprintf(f, "\"warmup_iters\":%d,\"iterations\":%d,\"aggregated_iterations\":1,\"validation\":%d,"
               "\"graph\":0,\"blocking_collectives\":\"%s\",\"per_iter_timing\":\"false\",\"per_iter_skip\":0,"
               "\"parallel_init\":\"false\",\"devices\":[",
            o->warmup, o->iters, o->check, o->blocking ? "true" : "false");
    for (int i = 0; i < gpus; i++) {
        char host[32], info[160];
        snprintf(host, sizeof host, "node%d", g[i] / c->gpus_per_node);
        snprintf(info, sizeof info, "%s (simulated by mmsim)", c->gpu.name);
        fprintf(f, "%s{\"rank\":%d,\"group\":0,\"pid\":0,\"hostname\":", i ? "," : "", i);
        json_str(f, host);
        fprintf(f, ",\"device\":%d,\"device_hex\":\"\",\"device_info\":", g[i] % c->gpus_per_node);
        json_str(f, info);
        fputc('}', f);
    }
    fprintf(f, "]},\"mmsim\":{\"version\":\"%s\",\"collective\":\"%s\",\"cluster\":", MMSIM_VERSION,
            mm_coll_names[o->op]);
    json_str(f, c->name);
    fprintf(f, ",\"network\":\"%s\",\"algo\":\"%s\"},\"results\":[", o->netname, mm_coll_algo_names[o->algo]);
}

static void json_row(FILE *f, const coll_row *r, int iters, bool first)
{
    fprintf(f, "%s{\"size\":%.0f,\"count\":%.0f,\"type\":", first ? "" : ",", r->bytes, r->count);
    json_str(f, r->type);
    fprintf(f, ",\"redop\":");
    json_str(f, r->redop);
    fprintf(f, ",\"root\":\"%6d\"", r->root);
    for (int half = 0; half < 2; half++) {
        fprintf(f, ",\"%s\":{\"time\":", half ? "in_place" : "out_of_place");
        json_double(f, r->t_us);
        fprintf(f, ",\"alg_bw\":");
        json_double(f, r->alg);
        fprintf(f, ",\"bus_bw\":");
        json_double(f, r->bus);
        fprintf(f, ",\"nwrong\":null}");
    }
    fprintf(f, ",\"actual_iterations\":%d,\"experiment_name\":\"\",\"algo\":\"%s\"}", iters, r->algo);
}

static void json_end(FILE *f, double avg_bus)
{
    char t[64];
    now_str(t, sizeof t);
    fprintf(f, "],\"out_of_bounds\":{\"count\":0,\"okay\":\"true\"},\"average_bus_bandwidth\":{\"bandwidth\":");
    json_double(f, avg_bus);
    fprintf(f, ",\"okay\":\"unchecked\"},\"errors\":[],\"end_time\":");
    json_str(f, t);
    fprintf(f, "}\n");
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
    if (o->algo == MM_ALGO_NVLS && reduces(op))
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

/* The sweep's state: the network it runs on and what it has printed. */
typedef struct sweep {
    const coll_opts *o;
    const mm_cluster *c;
    mm_engine *eng;
    mm_network *net;
    int *g, gpus, comm_nodes, rows;
    double bus_sum;
    FILE *json; /* the JSON being built (memory), or NULL */
    algo_runs runs;
} sweep;

/* Every size for one data type and operator.  Returns 0 or the CLI's status. */
static int sweep_sizes(sweep *sw, int t, int r)
{
    const coll_opts *o = sw->o;
    int op = o->op;
    const mm_coll_dtype *dt = &mm_coll_dtypes[t];
    mm_err err;
    mm_err_clear(&err);
    for (double S = o->lo; S <= o->hi * (1 + 1e-12); S = o->factor > 1 ? S * o->factor : S + o->step) {
        coll_row row = {.type = dt->name, .redop = reduces(op) ? mm_redop_names[r] : "none",
                        .root = op == MM_COLL_BROADCAST ? 0 : -1};
        size_of(op, S, dt->bytes, sw->gpus, &row.bytes, &row.count);
        /* -n back-to-back operations, timed together, as nccl-tests times
         * its iterations; the time is per operation */
        mm_coll_req req = {.kind = (mm_coll_kind)op, .algo = (mm_coll_algo)o->algo, .gpus = sw->g, .n = sw->gpus,
                           .bytes = row.bytes, .count = o->iters, .comm_ranks = o->comm_ranks,
                           .comm_nodes = sw->comm_nodes,
                           .no_nvls = reduces(op) && !mm_coll_nvls_supports((mm_redop)r, dt)};
        mm_time t0 = mm_engine_now(sw->eng), t1 = -1;
        mm_coll_algo used = MM_ALGO_RING;
        if (mm_network_start(sw->net, &req, note_end, &t1, 0, &used, &err))
            return mm_cli_fail(&err);
        mm_engine_run(sw->eng);
        double sec = (double)(t1 - t0) * 1e-9 / o->iters;
        /* all-to-all and send/recv have one algorithm: direct transfers */
        row.algo = op == MM_COLL_ALLTOALL || op == MM_COLL_SENDRECV ? "direct" : mm_coll_algo_names[used];
        row.t_us = sec * 1e6;
        row.alg = sec > 0 ? row.bytes / sec / 1e9 : INFINITY;
        row.bus = row.alg * mm_coll_bus_factor((mm_coll_kind)op, sw->gpus);
        if (!o->json)
            print_row(&row, o->algo_column);
        if (sw->json)
            json_row(sw->json, &row, o->iters, sw->rows == 0);
        runs_add(&sw->runs, row.algo, row.bytes);
        sw->bus_sum += row.bus;
        sw->rows++;
    }
    return 0;
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

static int run_sizes(const coll_opts *o, const mm_cluster *c)
{
    mm_err err;
    mm_err_clear(&err);
    sweep sw = {.o = o, .c = c, .runs = {.text = ""}};
    int brc = check_gpus(o, c, &sw.gpus);
    if (brc)
        return brc;
    /* the communicator: the first comm_ranks GPUs, on the nodes they fill */
    sw.comm_nodes = o->comm_ranks ? (o->comm_ranks + c->gpus_per_node - 1) / c->gpus_per_node : 0;
    sw.g = malloc((size_t)sw.gpus * sizeof *sw.g);
    sw.eng = mm_engine_alloc();
    mm_net_model model = (mm_net_model)lookup(mm_net_model_names, o->netname);
    sw.net = sw.g && sw.eng ? mm_network_alloc(c, sw.eng, model, &err) : NULL;
    char *jtext = NULL;
    size_t jlen = 0;
    if (sw.net && (o->json || o->json_file) && !(sw.json = open_memstream(&jtext, &jlen)))
        mm_err_set(&err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = 0;
    if (!sw.net || ((o->json || o->json_file) && !sw.json)) {
        if (err.code == MM_OK)
            mm_err_set(&err, MM_EINTERNAL, "", 0, "", "out of memory");
        rc = mm_cli_fail(&err);
    } else {
        /* The first `gpus` GPUs; send/recv goes from GPU 0 to the first
         * GPU of the last node (across nodes when there are several). */
        for (int i = 0; i < sw.gpus; i++)
            sw.g[i] = i;
        if (o->op == MM_COLL_SENDRECV)
            sw.g[1] = c->nodes > 1 ? (c->nodes - 1) * c->gpus_per_node : 1;
        if (!o->json)
            print_header(o, c, sw.gpus);
        if (sw.json)
            json_begin(sw.json, o, c, sw.gpus, sw.g);
        /* nccl-tests' order: each data type, each operator (reductions
         * only), every size */
        for (int t = 0; rc == 0 && mm_coll_dtypes[t].name; t++)
            for (int r = 0; rc == 0 && r < (reduces(o->op) ? MM_REDOP_COUNT : 1); r++)
                if ((o->dtype < 0 || o->dtype == t) && (!reduces(o->op) || o->redop < 0 || o->redop == r))
                    rc = sweep_sizes(&sw, t, r);
        double avg = sw.rows ? sw.bus_sum / sw.rows : 0.0;
        if (rc == 0 && !o->json)
            print_footer(o->op, &sw.runs, avg);
        if (sw.json) {
            if (rc == 0)
                json_end(sw.json, avg);
            fclose(sw.json);
            if (rc == 0)
                rc = put_json(o, jtext, jlen);
        }
    }
    free(jtext);
    mm_network_free(sw.net);
    mm_engine_free(sw.eng);
    free(sw.g);
    return rc;
}
