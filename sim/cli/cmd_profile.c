/* cmd_profile.c - `mmsim profile [SCENARIO] --format dflop DIR`: another
 * tool's profiler tables written from simulated costs, so that its own
 * planner can plan a cluster that is not there.  One format: DFLOP's
 * (sim/plan/dflop.h says which files and what each number is).  Parsing
 * and printing only.
 * Not for: the tables' numbers (plan/dflop.c, from the cost bridge). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "plan/dflop.h"

#define MAX_SETS 256

static const char *const formats[] = {"dflop", NULL};

static int bad_arg(const char *flag, const char *what, const char *value)
{
    return mm_cli_usage_error("profile", flag, what, value);
}

/* --format FORMAT DIR: the format (optarg) and the folder, the next word,
 * taken off the command line here (getopt skips past it). */
static int parse_format(int argc, char **argv, const char *v, const char **dir)
{
    if (strcmp(v, formats[0]))
        return bad_arg("--format", "takes dflop (the only format) and a folder, not", v);
    if (optind >= argc || !argv[optind][0] || (argv[optind][0] == '-' && argv[optind][1]))
        return bad_arg("--format", "needs a folder after the format: --format dflop DIR", NULL);
    *dir = argv[optind++];
    return 0;
}

/* --names MLLM,VISION,VSIZE,LLM,LSIZE into buf (split in place). */
static int parse_names(const char *v, char *buf, size_t len, mm_dflop_names *n)
{
    const char **f[5] = {&n->mllm, &n->vision, &n->vision_size, &n->llm, &n->llm_size};
    if (strlen(v) >= len)
        return bad_arg("--names", "is too long:", v);
    snprintf(buf, len, "%s", v);
    char *p = buf;
    for (int i = 0; i < 5; i++) {
        char *comma = strchr(p, ',');
        if ((i < 4) != (comma != NULL))
            return bad_arg("--names", "takes five comma-separated names MLLM,VISION,VSIZE,LLM,LSIZE, not", v);
        if (comma)
            *comma = '\0';
        *f[i] = p;
        p = comma ? comma + 1 : p;
    }
    mm_err err;
    mm_err_clear(&err);
    return mm_dflop_names_check(n, &err) ? mm_cli_fail(&err) : 0;
}

static void print_written(const mm_dflop_profile *p, const mm_dflop_names *n, const char *dir)
{
    char f[5][400];
    snprintf(f[0], sizeof f[0], "thr_%s_%s_%s.csv", n->mllm, n->vision, n->vision_size);
    snprintf(f[1], sizeof f[1], "thr_%s_%s_%s.csv", n->mllm, n->llm, n->llm_size);
    snprintf(f[2], sizeof f[2], "thr_%s_%s_%s_skip_attn.csv", n->mllm, n->llm, n->llm_size);
    snprintf(f[3], sizeof f[3], "mem_%s_%s_%s.csv", n->mllm, n->vision, n->vision_size);
    snprintf(f[4], sizeof f[4], "mem_%s_%s_%s.csv", n->mllm, n->llm, n->llm_size);
    printf("mmsim: DFLOP profile in %s (times in ms per step, memory in GiB)\n", dir);
    printf("  %-40s %5d rows: tp x images, %d layers\n", f[0], p->n_vthr, MM_DFLOP_VISION_THR_LAYERS);
    printf("  %-40s %5d rows: tp x seq_len, %d layers\n", f[1], p->n_lthr, MM_DFLOP_LLM_THR_LAYERS);
    printf("  %-40s %5d rows: the same, attention kernels taken out\n", f[2], p->n_lthr);
    printf("  %-40s %5d rows: tp x layers, %d images\n", f[3], p->n_vmem, MM_DFLOP_VISION_MEM_IMAGES);
    printf("  %-40s %5d rows: tp x layers, %d tokens\n", f[4], p->n_lmem, MM_DFLOP_LLM_MEM_SEQ);
    snprintf(f[0], sizeof f[0], "%s_%s_%s.pkl", n->mllm, n->vision, n->llm);
    if (p->n_samples > 0)
        printf("  %-40s %5d samples: images and LLM tokens each, from the workload\n", f[0], p->n_samples);
    else
        printf("  not written: %s (a text workload has no images)\n", f[0]);
}

/* The options (cli.h: completion scripts are made from them too). */
const struct option mm_cli_profile_longopts[] = {
    {"help", no_argument, NULL, 'h'},         {"format", required_argument, NULL, 'f'},
    {"set", required_argument, NULL, 's'},    {"names", required_argument, NULL, 'n'},
    {"quiet", no_argument, NULL, 'q'},        {NULL, 0, NULL, 0}};
const char mm_cli_profile_shortopts[] = "hs:q";

int mm_cli_profile(int argc, char **argv)
{
    const char *sets[MAX_SETS];
    int n_sets = 0, c, rc = 0;
    bool quiet = false;
    const char *dir = NULL, *scenario = NULL;
    /* DFLOP's shipped configs/dflop_config.yaml */
    mm_dflop_names names = {"llavaov", "siglip", "6b", "qwen2.5", "7b"};
    char nbuf[400];
    while (rc == 0 && (c = mm_cli_getopt(argc, argv, mm_cli_profile_shortopts, mm_cli_profile_longopts)) != -1) {
        switch (c) {
        case 'h': return mm_cli_help("profile");
        case 'q': quiet = true; break;
        case 'f': rc = parse_format(argc, argv, optarg, &dir); break;
        case 'n': rc = parse_names(optarg, nbuf, sizeof nbuf, &names); break;
        case 's':
            if (n_sets == MAX_SETS)
                rc = bad_arg("--set", "at most 256 overrides", NULL);
            else
                sets[n_sets++] = optarg;
            break;
        default: return 2;
        }
    }
    if (rc)
        return rc;
    if (mm_cli_operand("profile", argc, argv, "scenario", &scenario))
        return 2;
    if (!dir)
        return bad_arg("--format", "is required: --format dflop DIR", NULL);
    mm_err err;
    mm_err_clear(&err);
    mm_dflop_profile *p = calloc(1, sizeof *p);
    if (!p) {
        mm_err_set(&err, MM_EINTERNAL, "", 0, "", "out of memory");
        return mm_cli_fail(&err);
    }
    rc = mm_dflop_profile_make(scenario, sets, n_sets, p, &err);
    if (rc == 0)
        rc = mm_dflop_profile_write(p, &names, dir, &err);
    if (rc == 0 && !quiet)
        print_written(p, &names, dir);
    mm_dflop_profile_free(p);
    free(p);
    return rc ? mm_cli_fail(&err) : 0;
}
