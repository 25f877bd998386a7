/* cmd_plan.c - `mmsim plan [SCENARIO] --gpus N`: parses the flags, runs the
 * planner (sim/plan/planner.h) and prints the ranked layouts as a table or
 * as one JSON object.  Parsing and printing only.
 * Not for: the enumeration, pruning or scoring (planner.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/limits.h"
#include "mmsim_config.h"
#include "plan/planner.h"
#include "scenario/scenario.h"

#define DEFAULT_DB "results/mmsim.db"
#define MAX_SETS 256

const char mm_cli_plan_usage[] =
    "usage: mmsim plan [SCENARIO.yaml] [--gpus N] [--top K] [--json] [--all]\n"
    "                  [--db FILE | --no-db] [--iterations I] [--jobs N]\n"
    "                  [--placement LIST] [--max-pp N] [--set KEY=VALUE]...\n"
    "\n"
    "Finds the fastest parallel layout of the scenario's model, workload and\n"
    "training settings on N GPUs: enumerates the encoder's placement and GPU\n"
    "share and each module's tp, pp, vpp, cp, dp (ep for MoE), the micro-batch\n"
    "size, recompute mode and ZeRO stage; prunes what does not validate or fit\n"
    "in memory (saying why); pre-scores the rest analytically; simulates the\n"
    "best K event by event; prints them ranked with the margin to the next.\n"
    "\n"
    "  --gpus N         GPUs (the cluster is resized to N / GPUs-per-node nodes;\n"
    "                   default: the scenario's cluster)\n"
    "  --top K          candidates simulated event by event (default 8)\n"
    "  --iterations I   iterations of each event-level run (default: the scenario's)\n"
    "  --json           one JSON object on stdout\n"
    "  --all            with --json: every candidate, pruned ones with the reason\n"
    "  --db FILE        database for the runs and the plan (default " DEFAULT_DB ")\n"
    "  --no-db          store nothing (the K runs happen in this process)\n"
    "  --jobs N         worker processes for the K runs (default: the CPUs)\n"
    "  --placement L    encoder placements to try, comma-separated (default all:\n"
    "                   pipeline,colocated,disjoint,homogeneous)\n"
    "  --max-pp N       largest LLM pipeline depth tried (default 32)\n"
    "  --set KEY=VALUE  scenario override, as for mmsim run\n";

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



static void json_num(double v)
{
    if (isfinite(v))
        printf("%.9g", v);
    else
        printf("null");
}

/* The kind of a pruning reason: the key it names, or "memory" for OOM. */
static void reason_kind(const char *r, char *out, size_t len)
{
    const char *k = r ? strstr(r, "key '") : NULL;
    if (r && !strncmp(r, "OOM", 3)) {
        snprintf(out, len, "memory (OOM)");
    } else if (k) {
        k += 5;
        const char *e = strchr(k, '\'');
        snprintf(out, len, "%.*s", e ? (int)(e - k) : (int)strlen(k), k);
    } else {
        snprintf(out, len, "other");
    }
}

typedef struct reason_count {
    char kind[64];
    size_t n;
} reason_count;

static int cmp_count(const void *a, const void *b)
{
    const reason_count *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return strcmp(x->kind, y->kind);
}

static int count_reasons(const mm_plan *p, reason_count *rc, int cap)
{
    int n = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->c[i].status != MM_CAND_PRUNED)
            continue;
        char kind[64];
        reason_kind(p->c[i].reason, kind, sizeof kind);
        int j = 0;
        while (j < n && strcmp(rc[j].kind, kind))
            j++;
        if (j == n) {
            if (n == cap)
                continue;
            snprintf(rc[n].kind, sizeof rc[n].kind, "%s", kind);
            rc[n++].n = 0;
        }
        rc[j].n++;
    }
    qsort(rc, (size_t)n, sizeof *rc, cmp_count);
    return n;
}

/* Simulated time of the next simulated candidate over this one's, - 1. */
static double margin(const mm_plan *p, size_t i)
{
    if (p->c[i].status != MM_CAND_SIMULATED || i + 1 >= p->n || p->c[i + 1].status != MM_CAND_SIMULATED)
        return NAN;
    return p->c[i + 1].sim_s / p->c[i].sim_s - 1;
}

static void print_dims(const char *name, const mm_plan_dims *d, int llm)
{
    printf("\"%s\": {\"tp\": %d, \"pp\": %d, ", name, d->tp, d->pp);
    if (llm)
        printf("\"vpp\": %d, \"cp\": %d, ", d->vpp, d->cp);
    printf("\"dp\": %d", d->dp);
    if (llm)
        printf(", \"ep\": %d", d->ep);
    printf("}");
}

static void print_cand_json(const mm_plan *p, size_t i)
{
    const mm_plan_cand *c = &p->c[i];
    printf("    {\"rank\": ");
    if (c->rank)
        printf("%d", c->rank);
    else
        printf("null");
    printf(", \"candidate\": %d, \"status\": \"%s\", \"layout\": ", c->index, mm_cand_status_names[c->status]);
    mm_cli_json_string(c->layout);
    printf(", \"placement\": ");
    if (c->placement >= 0)
        mm_cli_json_string(mm_placement_names[c->placement]);
    else
        printf("null");
    printf(", \"encoder_gpus\": %d, ", c->enc_gpus);
    print_dims("llm", &c->llm, 1);
    printf(", ");
    if (c->placement >= 0 && c->placement != MM_PLACE_HOMOGENEOUS)
        print_dims("vision", &c->vision, 0);
    else
        printf("\"vision\": null");
    printf(", \"micro_batch\": %d, \"micro_batches\": ", c->micro_batch);
    if (c->micro_batches)
        printf("%d", c->micro_batches);
    else
        printf("null");
    printf(", \"recompute\": \"%s\", \"zero\": %d, \"schedule\": \"%s\"", mm_recompute_names[c->recompute], c->zero,
           mm_schedule_names[c->schedule]);
    printf(", \"estimate_s\": ");
    json_num(c->est_s);
    printf(", \"estimate_tflops_per_gpu\": ");
    json_num(c->est_tflops);
    printf(", \"iteration_time_s\": ");
    json_num(c->sim_s);
    printf(", \"tokens_per_s\": ");
    json_num(c->sim_tokens_s);
    printf(", \"tflops_per_gpu\": ");
    json_num(c->status == MM_CAND_SIMULATED ? c->sim_tflops : NAN);
    printf(", \"mfu\": ");
    json_num(c->status == MM_CAND_SIMULATED ? c->sim_mfu : NAN);
    printf(", \"peak_memory_gib\": ");
    json_num(c->status == MM_CAND_SIMULATED ? c->sim_mem_gib : c->mem_gib);
    printf(", \"margin\": ");
    json_num(margin(p, i));
    printf(", \"run_id\": ");
    if (c->run_id > 0)
        printf("%lld", (long long)c->run_id);
    else
        printf("null");
    printf(", \"reason\": ");
    if (c->reason)
        mm_cli_json_string(c->reason);
    else
        printf("null");
    size_t need = mm_plan_cand_sets_json(c, NULL, 0) + 1;
    char *sets = malloc(need);
    if (sets)
        mm_plan_cand_sets_json(c, sets, need);
    printf(", \"sets\": %s}", sets ? sets : "null");
    free(sets);
}

static void print_json(const mm_plan *p, const char *db, int all)
{
    printf("{\n  \"mmsim_version\": \"%s\",\n  \"scenario\": ", MMSIM_VERSION);
    mm_cli_json_string(p->base_source);
    printf(",\n  \"model\": ");
    mm_cli_json_string(p->model);
    printf(",\n  \"gpus\": %d,\n  \"nodes\": %d,\n  \"gpus_per_node\": %d,\n  \"has_encoder\": %s,\n"
           "  \"top_k\": %d,\n  \"iterations\": %d,\n  \"db\": ",
           p->gpus, p->nodes, p->gpus_per_node, p->has_encoder ? "true" : "false", p->top_k, p->iterations);
    if (db)
        mm_cli_json_string(db);
    else
        printf("null");
    printf(",\n  \"plan_id\": ");
    if (p->plan_id > 0)
        printf("%lld", (long long)p->plan_id);
    else
        printf("null");
    printf(",\n  \"candidates\": %zu,\n  \"pruned\": %zu,\n  \"oom\": %zu,\n  \"estimated\": %zu,\n"
           "  \"simulated\": %zu,\n  \"failed\": %zu,\n",
           p->n, p->pruned, p->oom, p->estimated, p->simulated, p->failed);
    printf("  \"gpus_asked\": %d,\n  \"prescored\": %zu,\n  \"validate_wall_s\": %.6f,\n"
           "  \"prescore_wall_s\": %.6f,\n  \"prescores_per_s\": ",
           p->gpus_asked, p->prescored, p->validate_s, p->estimate_s);
    json_num(p->estimate_s > 0 ? (double)p->prescored / p->estimate_s : NAN);
    printf(",\n  \"simulate_wall_s\": %.6f,\n  \"wall_s\": %.6f,\n  \"pruned_by\": [", p->simulate_s, p->wall_s);
    reason_count rc[64];
    int nr = count_reasons(p, rc, 64);
    for (int i = 0; i < nr; i++) {
        printf("%s{\"reason\": ", i ? ", " : "");
        mm_cli_json_string(rc[i].kind);
        printf(", \"count\": %zu}", rc[i].n);
    }
    printf("],\n  \"ranked\": [");
    size_t shown = 0;
    for (size_t i = 0; i < p->n; i++) {
        const mm_plan_cand *c = &p->c[i];
        if (!all && c->status != MM_CAND_SIMULATED)
            continue;
        printf("%s\n", shown++ ? "," : "");
        print_cand_json(p, i);
    }
    printf("%s]\n}\n", shown ? "\n  " : "");
}

static void print_table(const mm_plan *p, const char *db)
{
    printf("mmsim %s: plan for %s on %d GPUs (%d nodes x %d), scenario %s\n", MMSIM_VERSION, p->model, p->gpus,
           p->nodes, p->gpus_per_node, p->base_source);
    printf("  candidates %zu: %zu pruned (%zu out of memory), %zu pre-scored only, %zu simulated "
           "(%d iteration%s each), %zu failed\n",
           p->n, p->pruned, p->oom, p->estimated, p->simulated, p->iterations, p->iterations == 1 ? "" : "s",
           p->failed);
    if (p->gpus < p->gpus_asked)
        printf("  no layout uses all %d GPUs: planned on the largest count that has one, %d GPUs (%d nodes)\n",
               p->gpus_asked, p->gpus, p->nodes);
    printf("  host time: checks %.2f s, pre-scoring %.2f s (%zu pre-scored, %.0f/s), event-level %.2f s, "
           "total %.2f s\n",
           p->validate_s, p->estimate_s, p->prescored, p->estimate_s > 0 ? (double)p->prescored / p->estimate_s : 0.0,
           p->simulate_s, p->wall_s);
    reason_count rc[64];
    int nr = count_reasons(p, rc, 64);
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
        double mg = margin(p, i);
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

int mm_cli_plan(int argc, char **argv)
{
    const char *sets[MAX_SETS];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    mm_plan_opts o = {.top_k = 8, .jobs = ncpu > 0 ? (int)ncpu : 1, .db = DEFAULT_DB, .version = MMSIM_VERSION};
    int json = 0, all = 0, no_db = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(mm_cli_plan_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--all")) {
            all = 1;
        } else if (!strcmp(a, "--no-db")) {
            no_db = 1;
        } else if (!strcmp(a, "--gpus") || !strcmp(a, "--top") || !strcmp(a, "--iterations") ||
                   !strcmp(a, "--jobs") || !strcmp(a, "--max-pp") || !strcmp(a, "--db") ||
                   !strcmp(a, "--placement") || !strcmp(a, "--set")) {
            if (i + 1 >= argc)
                return bad_arg(a, "needs a value");
            const char *v = argv[++i];
            int rc = 0;
            if (!strcmp(a, "--gpus"))
                rc = parse_int(a, v, 1, 1 << 24, &o.gpus);
            else if (!strcmp(a, "--top"))
                rc = parse_int(a, v, 0, 100000, &o.top_k);
            else if (!strcmp(a, "--iterations"))
                rc = parse_int(a, v, 1, MM_LIMIT_ITERATIONS, &o.iterations); /* util/limits.h */
            else if (!strcmp(a, "--jobs"))
                rc = parse_int(a, v, 1, 4096, &o.jobs);
            else if (!strcmp(a, "--max-pp"))
                rc = parse_int(a, v, 1, 4096, &o.max_pp);
            else if (!strcmp(a, "--placement"))
                rc = parse_placements(v, &o.placements);
            else if (!strcmp(a, "--db"))
                o.db = v;
            else if (o.n_sets == MAX_SETS)
                rc = bad_arg(a, "at most 256 overrides");
            else
                sets[o.n_sets++] = v;
            if (rc)
                return rc;
        } else if (a[0] == '-' && a[1]) {
            return bad_arg(a, "unknown option");
        } else if (!o.scenario) {
            o.scenario = a;
        } else {
            return bad_arg(a, "more than one scenario given");
        }
    }
    o.sets = sets;
    if (no_db)
        o.db = NULL;
    mm_err err;
    mm_err_clear(&err);
    if (o.db && mm_cli_open_db(o.db, &err))
        return mm_cli_fail(&err);
    mm_plan p;
    if (mm_plan_run(&o, &p, &err))
        return mm_cli_fail(&err);
    if (json)
        print_json(&p, o.db, all);
    else
        print_table(&p, o.db);
    mm_plan_free(&p);
    return 0;
}
