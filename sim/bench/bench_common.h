/* bench_common.h - what the benchmark programs share: the monotonic wall
 * clock they time with, and the encoder-tile cost unit of the batching
 * benchmarks (bench_balance.c, bench_ilp.c).
 * Not for: the library or the tests (nothing here may decide a simulated
 * number; wall-clock time is only ever printed). */
#ifndef MM_BENCH_COMMON_H
#define MM_BENCH_COMMON_H

#include <time.h>

#include "workload/workload.h"

/* Seconds on the monotonic clock. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A sample's costs in encoder-tile units: its encoder inputs (tiles +
 * frames), and its LLM tokens / tokens per tile, so one tile through the
 * encoder costs what a tile's tokens cost in the LLM. */
static inline void bench_tile_cost(const mm_sample *s, const mm_token_model *tm, void *ctx, double *enc,
                                   double *llm)
{
    (void)ctx;
    *enc = (double)s->tiles + s->frames;
    *llm = (double)mm_sample_llm_tokens(s, tm) / (double)tm->tokens_per_tile;
}

#endif
