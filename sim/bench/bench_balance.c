/* bench_balance.c - what DFLOP-style balancing costs and buys: one global
 * batch of 512 samples of the LLaVA-OneVision-like mix
 * (workloads/llava-ov-mix.yaml, seed 1) assigned to 64 bins (dp 8 x 8
 * micro-batches) by
 *   1. sequential (as sampled), for reference;
 *   2. LPT (the fallback; target under 10 ms);
 *   3. the GLPK integer program within node limits (the `balanced` policy:
 *      LPT or sequential as the first incumbent, then branch and bound);
 *   4. post-balance (OrchMLLM, per phase over DP ranks).
 * It prints each one's largest bin, the lower bound, the gap and the wall
 * time (best of `reps` for the fast ones).
 * Costs: a sample's encoder cost is its encoder inputs (tiles + frames)
 * and its LLM cost its LLM tokens / 729 (SigLIP-384 tokens per tile), i.e.
 * units in which one tile through the encoder costs what 729 tokens cost
 * the LLM: the two sides have the GPUs that make their mean loads equal,
 * which is what DFLOP's optimizer aims for.
 * Not for: a test (it asserts nothing); run it from the repository root
 * (scripts/bench does) so the mixture file is found; build it release. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_common.h"
#include "workload/batch.h"
#include "workload/workload.h"

#define N 512
#define DP 8
#define MICRO 8

static int form(const mm_sample *s, mm_batch_opts *o, mm_batch_plan *p, double *secs, int reps)
{
    mm_err err;
    double best = HUGE_VAL;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        if (mm_batch_form(s, N, o, p, &err)) {
            fprintf(stderr, "bench_balance: %s\n", err.msg);
            return 1;
        }
        double t = bench_now() - t0;
        best = t < best ? t : best;
        if (r + 1 < reps)
            mm_batch_plan_free(p);
    }
    *secs = best;
    return 0;
}

static void row(const char *name, const mm_batch_plan *p, double secs, double seq)
{
    printf("  %-26s %10.3f %10.3f %7.2f%% %9.2f %10.3f ms", name, p->max_bin_cost, p->lower_bound,
           100 * (p->max_bin_cost - p->lower_bound) / p->max_bin_cost, seq / p->max_bin_cost, secs * 1e3);
    if (p->ilp_used)
        printf("  nodes %lld%s", (long long)p->ilp_nodes, p->ilp_optimal ? " (optimal)" : "");
    printf("\n");
}

int main(int argc, char **argv)
{
    const char *file = argc > 1 ? argv[1] : "workloads/llava-ov-mix.yaml";
    mm_err err;
    mm_mixture *mix = NULL;
    if (mm_mixture_load(file, &mix, &err)) {
        fprintf(stderr, "bench_balance: %s:%d: %s\n", err.file, err.line, err.msg);
        return 1;
    }
    static mm_sample s[N];
    if (mm_mixture_draw(mix, 1, 0, N, s, &err))
        return 1;
    mm_mixture_free(mix);

    mm_batch_opts o;
    memset(&o, 0, sizeof o);
    o.dp = DP;
    o.micro_batches = MICRO;
    o.tokens = (mm_token_model){.tokens_per_tile = 729, .tokens_per_frame = 196, .audio_clip_s = 30};
    o.cost = bench_tile_cost;
    o.enc_bytes_per_input = 3.0 * 384 * 384 * 2; /* a bf16 384 px RGB tile */
    o.bytes_per_token = 3584.0 * 2;              /* Qwen2.5-7B hidden 3584, bf16 */

    printf("balancing %d samples of %s into %d x %d = %d bins (cost unit: one encoder tile = 729 LLM tokens)\n",
           N, file, DP, MICRO, DP * MICRO);
    printf("  %-26s %10s %10s %8s %9s %13s\n", "policy", "max bin", "lower bnd", "gap", "vs seq", "time");
    mm_batch_plan p;
    double t, seq;
    o.policy = MM_BP_SEQUENTIAL;
    if (form(s, &o, &p, &t, 20))
        return 1;
    seq = p.max_bin_cost;
    row("sequential", &p, t, seq);
    mm_batch_plan_free(&p);

    o.policy = MM_BP_BALANCED;
    o.ilp_node_limit = -1; /* LPT only */
    if (form(s, &o, &p, &t, 20))
        return 1;
    row("LPT (balanced, no ILP)", &p, t, seq);
    printf("  LPT time %.3f ms (target < 10 ms): %s\n", t * 1e3, t < 0.010 ? "met" : "MISSED");
    mm_batch_plan_free(&p);

    const int64_t limits[] = {10, 50, 200};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        char name[64];
        o.ilp_node_limit = limits[i];
        snprintf(name, sizeof name, "ILP, node limit %lld", (long long)limits[i]);
        if (form(s, &o, &p, &t, 1))
            return 1;
        row(name, &p, t, seq);
        mm_batch_plan_free(&p);
    }

    o.policy = MM_BP_POST_BALANCE;
    if (form(s, &o, &p, &t, 20))
        return 1;
    row("post-balance (per phase)", &p, t, seq);
    printf("  post-balance all-to-all: %.1f MB to encoder ranks (%d samples moved), %.1f MB to LLM ranks (%d moved)\n",
           p.a2a_enc_total / 1e6, p.moved_enc, p.a2a_llm_total / 1e6, p.moved_llm);
    mm_batch_plan_free(&p);
    return 0;
}
