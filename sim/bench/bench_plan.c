/* bench_plan.c - how good the planner's pick is and how fast it pre-scores
 * (a benchmark: it prints, it asserts nothing; test_plan_proof asserts the
 * pick on small spaces).  For each space every candidate is simulated
 * event by event (the exhaustive best); printed are the candidates, the
 * planner's pick as `mmsim plan` makes it (K = 8 rescored) and with its
 * proof (--prove, every unproven candidate simulated in bound order), the
 * exhaustive best, the gap of the K = 8 pick over it, the "optimal within"
 * the plan reports, and Kendall's tau between the pre-score's order and
 * the event-level order, beside the targets (gap <= 1 %, tau >= 0.9).
 *
 * The spaces: three text models (GPT-3 1.3B on 8 H100s, Llama-2-7B on 32,
 * Llama-3-8B on 16), a LLaVA-OV-7B-like model on a drawn mixture (16
 * H100s), and the four reproduction scenarios (scripts/repro/NAME/base.yaml:
 * DFLOP, the heterogeneous-parallelism paper, OrchMLLM, MegaScale-Omni),
 * each on its driver's GPU count, narrowed (the `mmsim plan --space`
 * lists printed under the table) so that the exhaustive event-level run
 * takes about a minute on one core.  Then the pre-score rate on GPT-39B on
 * 512 A100s (the whole space; target >= 100,000 candidates per second).
 *   bench_plan [--quick | --rate]   (--quick: the text and LLaVA spaces only;
 *                                    --rate: the pre-score rate only, with the
 *                                    plan's CPU seconds and a digest of every
 *                                    candidate's pre-score, bound and memory) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "plan/planner.h"

#define MAX_SPACE 16

typedef struct bcase {
    const char *name;
    const char *scenario; /* NULL: the built-in default */
    const char *const *sets;
    int n_sets, gpus, iterations;
    const char *space[MAX_SPACE];
    bool quick; /* in --quick */
} bcase;

static const char *const text_sets[] = {"model=models/gpt3-1.3b.json", "train.global_batch=16", "train.seq_len=2048",
                                        "iterations=1"};
static const char *const l7_sets[] = {"model=models/llama-2-7b.json", "train.global_batch=64", "train.seq_len=4096",
                                      "iterations=1"};
static const char *const l3_sets[] = {"model=models/llama-3-8b.json", "workload=text", "train.global_batch=32",
                                      "train.seq_len=8192", "iterations=1"};
static const char *const mllm_sets[] = {"workload=workloads/llava-ov-mix.yaml", "train.global_batch=32",
                                        "iterations=2"};

static const bcase cases[] = {
    {"GPT-3 1.3B, 8 H100s", NULL, text_sets, 4, 8, 1, {"micro_batch=1,2", "zero=1", "pp=1,2,4", "cp=1,2"}, true},
    {"Llama-2-7B, 32 H100s", NULL, l7_sets, 4, 32, 1, {"zero=1", "micro_batch=1,2,4", "cp=1,2", "vpp=1,2"}, true},
    {"Llama-3-8B, 16 H100s, 8K", NULL, l3_sets, 5, 16, 1,
     {"zero=1", "micro_batch=1", "cp=1,2,4", "vpp=1,2", "recompute=selective,full"}, true},
    {"LLaVA-OV-7B-like + mixture, 16 H100s", NULL, mllm_sets, 3, 16, 2,
     {"micro_batch=1,2", "zero=1", "pp=1,2", "cp=1", "tp=2,4", "enc_tp=1,2", "enc_pp=1", "enc_gpus=2,4",
      "schedule=1f1b,interleaved", "vpp=1,2"},
     true},
    {"DFLOP (repro/dflop), 64 A100s", "scripts/repro/dflop/base.yaml", NULL, 0, 64, 1,
     {"placement=pipeline", "micro_batch=1", "zero=1", "schedule=1f1b", "vpp=1", "cp=1", "enc_pp=1", "enc_tp=1,2",
      "enc_gpus=8,16,24,32,40,48", "pp=1,2,4,8", "recompute=selective,full", "enc_recompute=selective,full"},
     false},
    {"hetero (repro/hetero), 16 H100s", "scripts/repro/hetero/base.yaml", NULL, 0, 16, 1,
     {"placement=homogeneous,colocated", "micro_batch=1", "zero=1", "schedule=1f1b", "vpp=1", "cp=1,2", "enc_pp=1",
      "recompute=selective,full", "enc_recompute=selective,full"},
     false},
    {"OrchMLLM (repro/orchmllm), 64 H100s", "scripts/repro/orchmllm/base.yaml", NULL, 0, 64, 1,
     {"placement=homogeneous", "micro_batch=1", "zero=1", "cp=1", "tp=4,8", "vpp=1,2", "schedule=1f1b,interleaved"},
     false},
    {"MegaScale (repro/megascale), 64 H100s", "scripts/repro/megascale/base.yaml", NULL, 0, 64, 1,
     {"placement=homogeneous,colocated", "micro_batch=1", "zero=1", "schedule=1f1b", "vpp=1", "cp=1", "enc_pp=1",
      "enc_recompute=selective,full", "tp=1,2,4", "pp=1,2,4"},
     false},
};

static int n_space(const bcase *b)
{
    int n = 0;
    while (n < MAX_SPACE && b->space[n])
        n++;
    return n;
}

static int plan(const bcase *b, int top, int prove, mm_plan *p)
{
    mm_plan_opts o = {.scenario = b->scenario, .sets = b->sets, .n_sets = b->n_sets, .gpus = b->gpus, .top_k = top,
                      .prove = prove, .iterations = b->iterations, .jobs = 1, .space = b->space,
                      .n_space = n_space(b)};
    mm_err err;
    mm_err_clear(&err);
    if (mm_plan_run(&o, p, &err)) {
        fprintf(stderr, "bench_plan: %s: %s:%d %s: %s\n", b->name, err.file, err.line, err.key, err.msg);
        return -1;
    }
    return 0;
}

/* CPU seconds of this process so far (user + system). */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

static double pick_time(const mm_plan *p) { return p->n && p->c[0].status == MM_CAND_SIMULATED ? p->c[0].sim_s : NAN; }

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick"), rate = argc > 1 && !strcmp(argv[1], "--rate");
    if (!rate)
        printf("%-38s %6s %6s %9s %9s %7s %8s %9s %6s %7s %7s %7s\n", "space", "cands", "simul", "best (s)",
               "pick (s)", "gap", "within", "proof (s)", "sims", "tau", "exh CPU", "targets");
    for (size_t i = 0; !rate && i < sizeof cases / sizeof cases[0]; i++) {
        const bcase *b = &cases[i];
        if (quick && !b->quick)
            continue;
        mm_plan all, k8, pr;
        clock_t t0 = clock();
        if (plan(b, 1000000, 0, &all))
            return 1;
        double exh = (double)(clock() - t0) / CLOCKS_PER_SEC;
        if (plan(b, 8, 0, &k8) || plan(b, 8, 1000000, &pr))
            return 1;
        double best = pick_time(&all), pick = pick_time(&k8), gap = pick / best - 1, tau = mm_plan_prescore_tau(&all);
        bool met = gap <= 0.01 && tau >= 0.9;
        printf("%-38s %6zu %6zu %9.4f %9.4f %6.2f%% %7.2f%% %9.4f %6zu %7.3f %7.1f %7s\n", b->name, all.n,
               all.simulated, best, pick, 100 * gap, 100 * k8.optimal_within, pick_time(&pr), pr.simulated, tau, exh,
               met ? "met" : (gap <= 0.01 ? "tau" : tau >= 0.9 ? "gap" : "neither"));
        fflush(stdout);
        mm_plan_free(&all);
        mm_plan_free(&k8);
        mm_plan_free(&pr);
    }
    if (!rate)
        printf("\ncands: the space's candidates; simul: simulated event by event (every one that fits); pick: the\n"
           "K = 8 pick (mmsim plan's default); gap: pick over the exhaustive best; within: what that plan reports;\n"
           "proof: the pick with --prove; tau: Kendall's tau-b of the pre-score against the event-level order;\n"
           "exh: CPU seconds of the exhaustive plan (one process, one job); targets: gap <= 1 %% and\n"
           "tau >= 0.9 (\"met\", else the one missed: \"gap\", \"tau\", \"neither\").  The spaces, as --space:\n");
    for (size_t i = 0; !rate && i < sizeof cases / sizeof cases[0]; i++) {
        const bcase *b = &cases[i];
        if (quick && !b->quick)
            continue;
        printf("  %s: %s%s", b->name, b->scenario ? b->scenario : "the default scenario", b->n_sets ? ", --set" : "");
        for (int k = 0; k < b->n_sets; k++)
            printf(" %s", b->sets[k]);
        printf(", --gpus %d, %d iteration%s a run; --space", b->gpus, b->iterations, b->iterations > 1 ? "s" : "");
        for (int k = 0; k < n_space(b); k++)
            printf(" %s", b->space[k]);
        printf("\n");
    }
    if (quick)
        return 0;
    static const char *const g39[] = {"model=models/megatron-gpt-39b.json", "cluster.topology=topologies/dgx-a100.yaml",
                                      "train.global_batch=1536", "train.seq_len=2048", "train.recompute=full",
                                      "train.attention=unfused", "iterations=1"};
    bcase b = {"GPT-39B, 512 A100s", NULL, g39, 7, 512, 1, {NULL}, false};
    mm_plan p;
    double c0 = cpu_s();
    if (plan(&b, 0, 0, &p))
        return 1;
    double cpu = cpu_s() - c0;
    /* a digest of every candidate's pre-score, bound and memory, the same
     * bits or not between two builds */
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < p.n; i++) {
        double x[3] = {p.c[i].est_s, p.c[i].bound_s, p.c[i].mem_gib};
        const unsigned char *q = (const unsigned char *)x;
        for (size_t k = 0; k < sizeof x; k++)
            h = (h ^ q[k]) * 1099511628211ull;
    }
    printf("\npre-score, %s, the whole space: %zu candidates, %zu pre-scored in %.2f s: %.0f per s "
           "(target >= 100000); checks %.2f s; the whole plan %.2f CPU-s (%.0f candidates per CPU-s); digest %016llx\n",
           b.name, p.n, p.prescored, p.estimate_s, p.estimate_s > 0 ? (double)p.prescored / p.estimate_s : 0.0, p.validate_s,
           cpu, cpu > 0 ? (double)p.prescored / cpu : 0.0, h);
    mm_plan_free(&p);
    return 0;
}
