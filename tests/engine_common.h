/* engine_common.h - what the engine suites (test_engine.c,
 * test_engine_cancel.c) share: a seeded splitmix64, a tally of mismatches
 * asserted once, a trace of fired events, and the events that record into
 * it or do nothing.
 * Static inline, so a suite that does not call one does not warn.
 * Not for: assertions of their own. */
#ifndef MM_TEST_ENGINE_COMMON_H
#define MM_TEST_ENGINE_COMMON_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/heap4.h"

/* ---- helpers ------------------------------------------------------------ */

/* splitmix64 (Steele, Lea, Flood 2014): tiny, seedable, good enough to
 * scatter keys. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) (n small; the modulo bias is irrelevant here). */
static inline uint64_t rng_below(uint64_t *s, uint64_t n) { return rng_next(s) % n; }

static inline int entry_cmp(const void *pa, const void *pb)
{
    const mm_heap_entry *a = pa, *b = pb;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

/* Mismatch counter for hot loops: how many, and the first iteration. */
typedef struct tally {
    size_t bad, first;
} tally;

static inline void tally_check(tally *t, int ok, size_t i)
{
    if (!ok && t->bad++ == 0)
        t->first = i;
}

#define ck_assert_tally(t)                                                     \
    ck_assert_msg((t).bad == 0, "%zu mismatches, the first at iteration %zu", \
                  (t).bad, (t).first)

/* Records the args of dispatched events in order, with their times. */
typedef struct trace {
    uint64_t *arg;
    mm_time *time;
    size_t n, cap;
} trace;

static inline void trace_init(trace *t, size_t cap)
{
    t->arg = malloc(cap * sizeof *t->arg);
    t->time = malloc(cap * sizeof *t->time);
    ck_assert_ptr_nonnull(t->arg);
    ck_assert_ptr_nonnull(t->time);
    t->n = 0;
    t->cap = cap;
}

static inline void trace_free(trace *t)
{
    free(t->arg);
    free(t->time);
}

static inline void ev_record(mm_engine *eng, void *ctx, uint64_t arg)
{
    trace *t = ctx;
    if (t->n >= t->cap)
        ck_abort_msg("trace overflow: more events ran than were expected");
    t->arg[t->n] = arg;
    t->time[t->n] = mm_engine_now(eng);
    t->n++;
}

#endif
