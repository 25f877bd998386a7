/* bench_engine.c - how much the engine costs over a bare heap.
 *
 * What it is for: the classic hold model (Vaucher and Duval 1975; Jones 1986,
 * "An empirical comparison of priority-queue and event-set
 * implementations"): P events pending; each processed event schedules one
 * new event at now + a random delay.  It is run twice in one process:
 *   1. through mm_engine: a callback that calls mm_engine_after, so the cost
 *      includes the slot pool, the generation check and the indirect call;
 *   2. through a bare mm_heap4 of (time, seq, payload): pop the minimum, push
 *      the next one; the floor any event engine built on that heap can reach.
 * Both draw the same delays from the same seed and break ties by insertion
 * order, so they process the same events in the same order and must end at
 * the same clock value; the program checks that.  It prints events/s of
 * each and the ratio engine/bare (the target is >= 0.80).
 *
 * Delays are uniform in [1, 2^20] ns from xorshift64*, a few cycles each, so
 * the random numbers do not hide the cost being measured.  Only the
 * processing of `events` events is timed, not filling the initial P; the
 * best of `reps` repetitions is reported, to damp noise from the machine.
 *
 * Not for: a test (it asserts nothing about speed), nor a comparison with
 * other event-set structures (calendar queues, ladder queues).  Build it
 * with --buildtype=release; debug numbers mean nothing. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_common.h"
#include "engine/engine.h"
#include "engine/heap4.h"

/* xorshift64* (Vigna 2016).  The state must not be 0. */
static inline uint64_t bench_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

static inline mm_time bench_delay(uint64_t *s)
{
    return (mm_time)(bench_rand(s) >> 44) + 1;
}

#define BENCH_SEED 0x9e3779b97f4a7c15ULL

/* ---- 1. the engine ------------------------------------------------------ */

typedef struct hold_state {
    uint64_t rng;
    uint64_t left;   /* events still to process */
    uint64_t failed; /* mm_engine_after returned 0 (out of memory) */
} hold_state;

static void hold_event(mm_engine *eng, void *ctx, uint64_t arg)
{
    hold_state *st = ctx;
    st->failed += mm_engine_after(eng, bench_delay(&st->rng), hold_event, st, arg) == 0;
    if (--st->left == 0)
        mm_engine_stop(eng);
}

/* Returns seconds spent processing `events` events, or < 0 on failure. */
static double bench_engine(uint64_t pending, uint64_t events, mm_time *end)
{
    mm_engine *eng = mm_engine_alloc();
    if (!eng)
        return -1;
    hold_state st = {.rng = BENCH_SEED, .left = events};
    for (uint64_t i = 0; i < pending; i++)
        st.failed += mm_engine_at(eng, bench_delay(&st.rng), hold_event, &st, i) == 0;
    double t0 = bench_now();
    uint64_t n = mm_engine_run(eng);
    double dt = bench_now() - t0;
    *end = mm_engine_now(eng);
    mm_engine_free(eng);
    return n == events && st.failed == 0 ? dt : -1;
}

/* ---- 2. the bare heap --------------------------------------------------- */

static double bench_bare(uint64_t pending, uint64_t events, mm_time *end)
{
    mm_heap4 h;
    if (mm_heap4_init(&h, (size_t)pending + 1) != 0)
        return -1;
    uint64_t rng = BENCH_SEED, seq = 0, failed = 0;
    for (uint64_t i = 0; i < pending; i++) {
        mm_heap_entry e = {bench_delay(&rng), seq++, i};
        failed += mm_heap4_insert(&h, e) != 0;
    }
    mm_heap_entry e = {0, 0, 0};
    double t0 = bench_now();
    for (uint64_t i = 0; i < events; i++) {
        mm_heap4_pop(&h, &e);
        mm_heap_entry next = {e.time + bench_delay(&rng), seq++, e.payload};
        failed += mm_heap4_insert(&h, next) != 0;
    }
    double dt = bench_now() - t0;
    *end = e.time;
    mm_heap4_free(&h);
    return failed == 0 ? dt : -1;
}

/* ---- driver ------------------------------------------------------------- */

static int parse_count(const char *flag, const char *s, uint64_t *out)
{
    char *end;
    if (!s || s[0] < '0' || s[0] > '9')
        goto bad;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || v == 0)
        goto bad;
    *out = v;
    return 0;
bad:
    fprintf(stderr, "bench_engine: %s needs a positive integer, got '%s'\n",
            flag, s ? s : "");
    return -1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_engine [--events N] [--pending N] [--reps N]\n"
               "  --events N   events processed per measurement (default 10000000)\n"
               "  --pending N  events held in the queue (default 10000)\n"
               "  --reps N     repetitions; the best is reported (default 5)\n");
}

int main(int argc, char **argv)
{
    uint64_t events = 10000000, pending = 10000, reps = 5;
    for (int i = 1; i < argc; i += 2) { /* every flag but --help takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;
        if (strcmp(a, "--events") == 0)
            rc = parse_count(a, v, &events);
        else if (strcmp(a, "--pending") == 0)
            rc = parse_count(a, v, &pending);
        else if (strcmp(a, "--reps") == 0)
            rc = parse_count(a, v, &reps);
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_engine: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (rc != 0)
            return 2;
    }

    double best_eng = 0, best_bare = 0;
    mm_time end_eng = 0, end_bare = 0;
    /* Alternate the two so that drift in machine speed hits both alike. */
    for (uint64_t r = 0; r < reps; r++) {
        double te = bench_engine(pending, events, &end_eng);
        double tb = bench_bare(pending, events, &end_bare);
        if (te < 0 || tb < 0) {
            fprintf(stderr, "bench_engine: out of memory\n");
            return 1;
        }
        if (r == 0 || te < best_eng)
            best_eng = te;
        if (r == 0 || tb < best_bare)
            best_bare = tb;
    }
    if (end_eng != end_bare) {
        fprintf(stderr,
                "bench_engine: engine and bare heap disagree on the final clock "
                "(%" PRId64 " vs %" PRId64 " ns): they did not run the same events\n",
                end_eng, end_bare);
        return 1;
    }

    double rate_eng = (double)events / best_eng;
    double rate_bare = (double)events / best_bare;
    printf("hold model: %" PRIu64 " pending, %" PRIu64 " events, "
           "uniform delays 1..2^20 ns, best of %" PRIu64 "\n",
           pending, events, reps);
    printf("engine  %12.0f events/s  (%.3f s, %.1f ns/event)\n", rate_eng,
           best_eng, best_eng * 1e9 / (double)events);
    printf("bare    %12.0f events/s  (%.3f s, %.1f ns/event)\n", rate_bare,
           best_bare, best_bare * 1e9 / (double)events);
    printf("ratio engine/bare  %.3f  (target >= 0.80)\n", rate_eng / rate_bare);
    printf("final clock  %" PRId64 " ns (same in both)\n", end_eng);
    return 0;
}
