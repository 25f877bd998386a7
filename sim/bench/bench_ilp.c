/* bench_ilp.c - does the `balanced` policy's integer program earn its
 * place over LPT?  For the InternVL-1.2 SFT trace (448 samples a batch,
 * dp 14 x 16 micro-batches = 224 bins, as DFLOP's InternVL runs) and the
 * OneVision-like mix (512 samples, dp 8 x 8 = 64 bins), eight batches
 * each, it prints per batch LPT's largest bin, the ILP's (LPT as its
 * first incumbent, the default node limit), the ILP's improvement over
 * LPT, the gap left to the proven lower bound, and the wall time.
 * Costs as bench_balance.c: encoder = tiles + frames, LLM = LLM tokens /
 * tokens per tile (256 InternVL, 729 SigLIP-384), so both sides are in
 * encoder-tile units.
 * An argument sets the node limit (-1: no ILP, 0: the default).
 * Not for: a test (it asserts nothing); run it from the repository root. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_common.h"
#include "workload/batch.h"
#include "workload/workload.h"

static int64_t node_limit; /* 0: the policy's default */

static int one(const char *name, const mm_workload *w, int n, int dp, int m, const mm_token_model *tm)
{
    mm_sample *s = malloc((size_t)n * sizeof *s);
    mm_err err;
    double imp_sum = 0, gap_sum = 0, t_max = 0;
    int better = 0, iters = 8;
    printf("%s: %d samples into %d x %d = %d bins\n", name, n, dp, m, dp * m);
    printf("  %5s %10s %10s %10s %8s %8s %9s %7s\n", "batch", "LPT", "ILP", "bound", "improv", "gap", "time", "nodes");
    for (int it = 0; it < iters && s; it++) {
        if (mm_workload_draw(w, 1, it, n, s, &err)) {
            fprintf(stderr, "bench_ilp: %s\n", err.msg);
            free(s);
            return 1;
        }
        mm_batch_opts o = {.policy = MM_BP_BALANCED, .dp = dp, .micro_batches = m, .tokens = *tm, .cost = bench_tile_cost,
                           .ilp_node_limit = node_limit};
        mm_batch_plan p;
        double t0 = bench_now();
        if (mm_batch_form(s, n, &o, &p, &err)) {
            fprintf(stderr, "bench_ilp: %s\n", err.msg);
            free(s);
            return 1;
        }
        double t = bench_now() - t0, imp = (p.lpt_max_bin_cost - p.max_bin_cost) / p.lpt_max_bin_cost;
        printf("  %5d %10.3f %10.3f %10.3f %7.2f%% %7.2f%% %7.1f ms %7lld\n", it, p.lpt_max_bin_cost, p.max_bin_cost,
               p.lower_bound, 100 * imp, 100 * p.gap, t * 1e3, (long long)p.ilp_nodes);
        imp_sum += imp;
        gap_sum += p.gap;
        better += imp > 1e-12;
        t_max = fmax(t_max, t);
        mm_batch_plan_free(&p);
    }
    printf("  mean improvement over LPT %.2f%% (better on %d of %d batches), mean gap %.2f%%, slowest %.1f ms\n",
           100 * imp_sum / iters, better, iters, 100 * gap_sum / iters, t_max * 1e3);
    free(s);
    return 0;
}

int main(int argc, char **argv)
{
    node_limit = argc > 1 ? atoll(argv[1]) : 0; /* -1: LPT and local search only */
    mm_err err;
    mm_workload tr, mix;
    if (mm_workload_load("workloads/internvl-1.2-sft.csv", &tr, &err) ||
        mm_workload_load("workloads/llava-ov-mix.yaml", &mix, &err)) {
        fprintf(stderr, "bench_ilp: %s:%d: %s\n", err.file, err.line, err.msg);
        return 1;
    }
    mm_token_model ivl = {.tokens_per_tile = 256, .tokens_per_frame = 256, .audio_clip_s = 30};
    mm_token_model ov = {.tokens_per_tile = 729, .tokens_per_frame = 196, .audio_clip_s = 30};
    int rc = one("InternVL-1.2 SFT trace", &tr, 448, 14, 16, &ivl);
    rc |= one("OneVision-like mix", &mix, 512, 8, 8, &ov);
    mm_workload_free(&tr);
    mm_workload_free(&mix);
    return rc;
}
