/* bench_plan.c - how good the planner's pick is and how fast it pre-scores
 * (a benchmark: it prints, it asserts nothing; test_plan_proof asserts the
 * pick).  For small spaces (8-16 GPUs, a text model and an MLLM with a
 * drawn mixture) every candidate is simulated event by event; printed are
 * the pick with K = 8 (and with its proof), the exhaustive best, the ratio
 * of their times, the "optimal within" the plan reports, and Kendall's tau
 * between the pre-score's order and the event-level order.  Then the
 * pre-score rate on GPT-39B on 512 A100s (the whole space; target
 * >= 100,000 candidates per second).
 *   bench_plan [--quick | --rate]   (--quick: the small spaces only;
 *                                    --rate: the pre-score rate only) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "plan/planner.h"

typedef struct bcase {
    const char *name;
    const char *const *sets;
    int n_sets, gpus, iterations;
    const char *const *space;
    int n_space;
} bcase;

static const char *const text_sets[] = {"model=models/gpt3-1.3b.json", "train.global_batch=16", "train.seq_len=2048",
                                        "iterations=1"};
static const char *const text_space[] = {"micro_batch=1,2", "zero=1", "pp=1,2,4", "cp=1,2"};
static const char *const mllm_sets[] = {"workload=workloads/llava-ov-mix.yaml", "train.global_batch=32",
                                        "iterations=2"};
static const char *const mllm_space[] = {"micro_batch=1,2", "zero=1", "pp=1,2", "cp=1", "tp=2,4", "enc_tp=1,2",
                                         "enc_pp=1", "enc_gpus=2,4", "schedule=1f1b,interleaved", "vpp=1,2"};
static const char *const l7_sets[] = {"model=models/llama-2-7b.json", "train.global_batch=64", "train.seq_len=4096",
                                      "iterations=1"};
static const char *const l7_space[] = {"zero=1", "micro_batch=1,2,4", "cp=1,2", "vpp=1,2"};

static const bcase cases[] = {
    {"GPT-3 1.3B, 8 H100s", text_sets, 4, 8, 1, text_space, 4},
    {"Llama-2-7B, 32 H100s", l7_sets, 4, 32, 1, l7_space, 4},
    {"LLaVA-OV-7B-like + mixture, 16 H100s", mllm_sets, 3, 16, 2, mllm_space, 10},
};

static int plan(const bcase *b, const char *const *space, int n_space, int top, int prove, mm_plan *p)
{
    mm_plan_opts o = {.sets = b->sets, .n_sets = b->n_sets, .gpus = b->gpus, .top_k = top, .prove = prove,
                      .iterations = b->iterations, .jobs = 1, .space = space, .n_space = n_space};
    mm_err err;
    mm_err_clear(&err);
    if (mm_plan_run(&o, p, &err)) {
        fprintf(stderr, "bench_plan: %s\n", err.msg);
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
        printf("%-38s %6s %6s %9s %9s %7s %8s %9s %9s %7s\n", "space", "cands", "simul", "best (s)", "K=8 (s)", "ratio",
               "within", "proof (s)", "proof sims", "tau");
    for (size_t i = 0; !rate && i < sizeof cases / sizeof cases[0]; i++) {
        const bcase *b = &cases[i];
        mm_plan all, k8, pr;
        if (plan(b, b->space, b->n_space, 1000000, 0, &all) || plan(b, b->space, b->n_space, 8, 0, &k8) ||
            plan(b, b->space, b->n_space, 8, 1000000, &pr))
            return 1;
        double best = pick_time(&all);
        printf("%-38s %6zu %6zu %9.4f %9.4f %7.4f %7.2f%% %9.4f %9zu %7.3f\n", b->name, all.n, all.simulated, best,
               pick_time(&k8), pick_time(&k8) / best, 100 * k8.optimal_within, pick_time(&pr), pr.simulated,
               mm_plan_prescore_tau(&all));
        mm_plan_free(&all);
        mm_plan_free(&k8);
        mm_plan_free(&pr);
    }
    if (quick)
        return 0;
    static const char *const g39[] = {"model=models/megatron-gpt-39b.json", "cluster.topology=topologies/dgx-a100.yaml",
                                      "train.global_batch=1536", "train.seq_len=2048", "train.recompute=full",
                                      "train.attention=unfused", "iterations=1"};
    bcase b = {"GPT-39B, 512 A100s", g39, 7, 512, 1, NULL, 0};
    mm_plan p;
    double c0 = cpu_s();
    if (plan(&b, NULL, 0, 0, 0, &p))
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
