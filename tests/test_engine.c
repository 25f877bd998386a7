/* test_engine.c - Check suite for the engine layer: mm_heap4 and mm_engine.
 *
 * What it is for: pinning down the order guarantees the rest of mmsim builds
 * on (pop order = (time, seq) order, equal times in scheduling order),
 * run_until's clock rule, stop, and run-to-run determinism.  Every random
 * input comes from a seeded splitmix64, so a failure reproduces exactly.
 *
 * Not for: lazy cancellation (test_engine_cancel.c); speed:
 * sim/bench/bench_engine measures that.  Sizes are chosen to stay within a
 * few seconds under ASan+UBSan.  Inside big loops the tests count
 * mismatches in a tally and assert once at the end: every ck_assert that
 * passes still writes a mark point to Check's parent process, which at
 * 10^6 iterations costs far more than the code under test. */
#include "engine_common.h"

static int entry_le(const mm_heap_entry *a, const mm_heap_entry *b)
{
    return entry_cmp(a, b) <= 0;
}

/* ---- mm_heap4 ----------------------------------------------------------- */

START_TEST(heap_empty)
{
    mm_heap4 h;
    ck_assert_int_eq(mm_heap4_init(&h, 0), 0);
    ck_assert_ptr_null(mm_heap4_root(&h));
    ck_assert_uint_eq(mm_heap4_size(&h), 0);
    mm_heap_entry e = {1, 2, 3};
    ck_assert_int_eq(mm_heap4_pop(&h, &e), -1);
    ck_assert_int_eq(mm_heap4_insert(&h, e), 0); /* grows from capacity 0 */
    ck_assert_ptr_nonnull(mm_heap4_root(&h));
    ck_assert_int_eq(mm_heap4_root(&h)->time, 1);
    mm_heap_entry out;
    ck_assert_int_eq(mm_heap4_pop(&h, &out), 0);
    ck_assert_int_eq(out.time, 1);
    ck_assert_uint_eq(out.seq, 2);
    ck_assert_uint_eq(out.payload, 3);
    ck_assert_int_eq(mm_heap4_pop(&h, &out), -1);
    mm_heap4_free(&h);
    mm_heap4_free(&h); /* freeing twice is harmless */
}
END_TEST

/* (a) 10^6 entries with times in 0..1000 (about 1000 ties per time): popping
 * them all gives exactly the qsort order by (time, seq), payloads included. */
START_TEST(heap_matches_sorted_reference)
{
    enum { N = 1000000 };
    mm_heap_entry *ref = malloc(N * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    mm_heap4 h;
    ck_assert_int_eq(mm_heap4_init(&h, 16), 0); /* forces many regrowths */
    uint64_t s = 42;
    tally ins = {0, 0}, pop = {0, 0};
    for (size_t i = 0; i < N; i++) {
        mm_heap_entry e = {(mm_time)rng_below(&s, 1001), i, rng_next(&s)};
        ref[i] = e;
        tally_check(&ins, mm_heap4_insert(&h, e) == 0, i);
    }
    ck_assert_tally(ins);
    ck_assert_uint_eq(mm_heap4_size(&h), N);
    qsort(ref, N, sizeof *ref, entry_cmp);
    for (size_t i = 0; i < N; i++) {
        mm_heap_entry e = {-1, 0, 0};
        int rc = mm_heap4_pop(&h, &e);
        tally_check(&pop, rc == 0 && e.time == ref[i].time && e.seq == ref[i].seq &&
                              e.payload == ref[i].payload, i);
    }
    ck_assert_tally(pop);
    ck_assert_uint_eq(mm_heap4_size(&h), 0);
    mm_heap4_free(&h);
    free(ref);
}
END_TEST

/* Interleaved pops and pushes (a hold model with zero delays common, so many
 * ties): every pop is >= the previous one, the root is always the minimum
 * popped next, and every inserted entry comes out exactly once, unchanged. */
START_TEST(heap_hold_model_interleaved)
{
    enum { PENDING = 1000, OPS = 300000, TOTAL = PENDING + OPS };
    mm_time *time_of = malloc(TOTAL * sizeof *time_of);
    unsigned char *seen = calloc(TOTAL, 1);
    ck_assert_ptr_nonnull(time_of);
    ck_assert_ptr_nonnull(seen);
    mm_heap4 h;
    ck_assert_int_eq(mm_heap4_init(&h, 0), 0);
    uint64_t s = 7, seq = 0;
    tally bad = {0, 0};
    for (size_t i = 0; i < PENDING; i++) {
        mm_heap_entry e = {(mm_time)rng_below(&s, 50), seq, ~seq};
        time_of[seq++] = e.time;
        tally_check(&bad, mm_heap4_insert(&h, e) == 0, i);
    }
    ck_assert_tally(bad);
    mm_heap_entry prev = {-1, 0, 0};
    for (size_t k = 0; k < TOTAL; k++) {
        const mm_heap_entry *r = mm_heap4_root(&h);
        if (!r)
            ck_abort_msg("heap empty after %zu pops, expected %d", k, TOTAL);
        mm_heap_entry root = *r, e;
        int ok = mm_heap4_pop(&h, &e) == 0 && entry_cmp(&root, &e) == 0 &&
                 entry_le(&prev, &e) && e.seq < TOTAL && e.payload == ~e.seq &&
                 e.time == time_of[e.seq] && !seen[e.seq];
        tally_check(&bad, ok, k);
        if (!ok)
            break; /* e.seq may be out of range */
        seen[e.seq] = 1;
        prev = e;
        if (k < OPS) {
            mm_heap_entry n = {e.time + (mm_time)rng_below(&s, 4), seq, ~seq};
            time_of[seq++] = n.time;
            tally_check(&bad, mm_heap4_insert(&h, n) == 0, k);
        }
    }
    ck_assert_tally(bad);
    ck_assert_uint_eq(mm_heap4_size(&h), 0);
    mm_heap4_free(&h);
    free(time_of);
    free(seen);
}
END_TEST

/* ---- mm_engine: basics and order ---------------------------------------- */

START_TEST(engine_fresh)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    ck_assert_int_eq(mm_engine_now(eng), 0);
    ck_assert_uint_eq(mm_engine_pending(eng), 0);
    ck_assert_uint_eq(mm_engine_dispatched(eng), 0);
    ck_assert_uint_eq(mm_engine_run(eng), 0);
    ck_assert_uint_eq(mm_engine_run_until(eng, 100), 0);
    /* Empty queue: run_until leaves the clock alone (see engine.h). */
    ck_assert_int_eq(mm_engine_now(eng), 0);
    mm_engine_free(eng);
    mm_engine_free(NULL);
}
END_TEST

/* (b) 20000 events at times drawn from 0..99 (about 200 per time) run in
 * (time, scheduling order): the stable sort of the schedule. */
START_TEST(engine_equal_times_fifo)
{
    enum { N = 20000 };
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    trace t;
    trace_init(&t, N);
    mm_heap_entry *ref = malloc(N * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    uint64_t s = 1;
    tally bad = {0, 0};
    for (size_t i = 0; i < N; i++) {
        mm_time at = (mm_time)rng_below(&s, 100);
        ref[i] = (mm_heap_entry){at, i, i};
        tally_check(&bad, mm_engine_at(eng, at, ev_record, &t, i) != 0, i);
    }
    ck_assert_tally(bad);
    ck_assert_uint_eq(mm_engine_pending(eng), N);
    qsort(ref, N, sizeof *ref, entry_cmp);
    ck_assert_uint_eq(mm_engine_run(eng), N);
    ck_assert_uint_eq(t.n, N);
    for (size_t i = 0; i < N; i++)
        tally_check(&bad, t.arg[i] == ref[i].payload && t.time[i] == ref[i].time, i);
    ck_assert_tally(bad);
    ck_assert_int_eq(mm_engine_now(eng), ref[N - 1].time);
    ck_assert_uint_eq(mm_engine_pending(eng), 0);
    ck_assert_uint_eq(mm_engine_dispatched(eng), N);
    free(ref);
    trace_free(&t);
    mm_engine_free(eng);
}
END_TEST

/* An event scheduled at `now` from inside a callback runs after the events
 * already due at `now`, and before later ones. */
static void ev_spawn_now(mm_engine *eng, void *ctx, uint64_t arg)
{
    trace *t = ctx;
    ev_record(eng, t, arg);
    ck_assert_uint_ne(mm_engine_after(eng, 0, ev_record, t, arg + 100), 0);
}

START_TEST(engine_schedule_at_now_from_callback)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    trace t;
    trace_init(&t, 16);
    mm_engine_at(eng, 5, ev_spawn_now, &t, 1);
    mm_engine_at(eng, 5, ev_record, &t, 2);
    mm_engine_at(eng, 5, ev_record, &t, 3);
    mm_engine_at(eng, 6, ev_record, &t, 4);
    ck_assert_uint_eq(mm_engine_run(eng), 5);
    const uint64_t want[] = {1, 2, 3, 101, 4};
    const mm_time want_t[] = {5, 5, 5, 5, 6};
    ck_assert_uint_eq(t.n, 5);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_uint_eq(t.arg[i], want[i]);
        ck_assert_int_eq(t.time[i], want_t[i]);
    }
    trace_free(&t);
    mm_engine_free(eng);
}
END_TEST

/* Events due now go to a FIFO beside the heap (engine.c): with a third
 * of all delays 0 and cancellations of pending events (some due now),
 * the dispatch order must still be (time, scheduling order).  The
 * reference is a plain list searched for its smallest (time, seq). */
typedef struct ref_ev {
    mm_time time;
    uint64_t seq, arg;
    mm_event_id id;
    int live;
} ref_ev;

typedef struct mix_state {
    uint64_t rng;
    ref_ev *ev; /* every event ever scheduled, by seq */
    size_t n, cap, budget;
    trace *t;
} mix_state;

static void ev_mix(mm_engine *eng, void *ctx, uint64_t arg);

static void mix_schedule(mm_engine *eng, mix_state *m, mm_time at)
{
    if (m->n == m->cap)
        return;
    uint64_t arg = m->n;
    m->ev[m->n] = (ref_ev){at, m->n, arg, mm_engine_at(eng, at, ev_mix, m, arg), 1};
    ck_assert_uint_ne(m->ev[m->n].id, 0);
    m->n++;
}

static void ev_mix(mm_engine *eng, void *ctx, uint64_t arg)
{
    mix_state *m = ctx;
    ev_record(eng, m->t, arg);
    m->ev[arg].live = 0;
    for (int k = 0; k < 2 && m->budget > 0; k++, m->budget--) {
        uint64_t r = rng_below(&m->rng, 3);
        mix_schedule(eng, m, mm_engine_now(eng) + (r == 0 ? 0 : (mm_time)rng_below(&m->rng, 5)));
    }
    if (rng_below(&m->rng, 4) == 0 && m->n > 0) { /* cancel a pending event, maybe one due now */
        size_t v = (size_t)rng_below(&m->rng, m->n);
        if (m->ev[v].live) {
            ck_assert_int_eq(mm_engine_cancel(eng, m->ev[v].id), 0);
            m->ev[v].live = 0;
            m->ev[v].time = -1; /* never dispatched */
        }
    }
}

START_TEST(engine_now_fifo_matches_reference)
{
    enum { CAP = 60000 };
    mm_engine *eng = mm_engine_alloc();
    trace t;
    trace_init(&t, CAP);
    mix_state m = {.rng = 7, .ev = calloc(CAP, sizeof(ref_ev)), .cap = CAP, .budget = CAP - 100, .t = &t};
    ck_assert_ptr_nonnull(m.ev);
    for (int i = 0; i < 50; i++)
        mix_schedule(eng, &m, (mm_time)(i % 3));
    mm_engine_run(eng);
    /* the reference: every dispatched event in (time, seq) order */
    size_t nd = 0;
    ref_ev *order = malloc(CAP * sizeof *order);
    for (size_t i = 0; i < m.n; i++)
        if (m.ev[i].time >= 0)
            order[nd++] = m.ev[i];
    for (size_t i = 1; i < nd; i++) { /* insertion sort by (time, seq): already nearly sorted by seq */
        ref_ev x = order[i];
        size_t j = i;
        while (j > 0 && (order[j - 1].time > x.time || (order[j - 1].time == x.time && order[j - 1].seq > x.seq))) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    ck_assert_uint_gt(nd, 10000);
    ck_assert_uint_eq(t.n, nd);
    tally bad = {0, 0};
    for (size_t i = 0; i < nd; i++)
        tally_check(&bad, t.arg[i] == order[i].arg && t.time[i] == order[i].time, i);
    ck_assert_tally(bad);
    ck_assert_uint_eq(mm_engine_dispatched(eng), nd);
    ck_assert_uint_eq(mm_engine_pending(eng), 0);
    free(order);
    free(m.ev);
    trace_free(&t);
    mm_engine_free(eng);
}
END_TEST

/* replace_top is pop then insert in one sift: two heaps fed the same
 * operations, one with replace_top and one with pop + insert, pop the same
 * entries in the same order. */
START_TEST(heap_replace_top_is_pop_insert)
{
    mm_heap4 a, b;
    ck_assert_int_eq(mm_heap4_init(&a, 0), 0);
    ck_assert_int_eq(mm_heap4_init(&b, 0), 0);
    uint64_t s = 3, seq = 0;
    for (int i = 0; i < 300; i++, seq++) {
        mm_heap_entry e = {(mm_time)rng_below(&s, 100), seq, seq};
        ck_assert_int_eq(mm_heap4_insert(&a, e), 0);
        ck_assert_int_eq(mm_heap4_insert(&b, e), 0);
    }
    tally bad = {0, 0};
    for (size_t i = 0; i < 20000; i++, seq++) {
        mm_heap_entry top = *mm_heap4_root(&a), x, y;
        tally_check(&bad, entry_cmp(&top, mm_heap4_root(&b)) == 0, i);
        mm_heap_entry e = {top.time + (mm_time)rng_below(&s, 50), seq, seq};
        if (rng_below(&s, 4)) {
            ck_assert_int_eq(mm_heap4_replace_top(&a, e), 0);
            mm_heap4_pop(&b, &y);
            ck_assert_int_eq(mm_heap4_insert(&b, e), 0);
        } else { /* a plain pop now and then: the heaps shrink and grow */
            mm_heap4_pop(&a, &x);
            mm_heap4_pop(&b, &y);
            tally_check(&bad, entry_cmp(&x, &y) == 0, i);
            if (mm_heap4_size(&a) < 10) {
                ck_assert_int_eq(mm_heap4_insert(&a, e), 0);
                ck_assert_int_eq(mm_heap4_insert(&b, e), 0);
            }
        }
    }
    ck_assert_tally(bad);
    mm_heap_entry x, y;
    while (mm_heap4_pop(&a, &x) == 0) {
        ck_assert_int_eq(mm_heap4_pop(&b, &y), 0);
        ck_assert_int_eq(entry_cmp(&x, &y), 0);
    }
    ck_assert_uint_eq(mm_heap4_size(&b), 0);
    mm_heap_entry one = {5, 1, 1};
    ck_assert_int_eq(mm_heap4_replace_top(&a, one), 0); /* empty: an insert */
    ck_assert_uint_eq(mm_heap4_size(&a), 1);
    mm_heap4_free(&a);
    mm_heap4_free(&b);
}
END_TEST

/* The pool grows well past its initial size while keeping every event. */
START_TEST(engine_pool_growth)
{
    enum { N = 100000 };
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    trace t;
    trace_init(&t, N);
    tally bad = {0, 0};
    for (size_t i = 0; i < N; i++)
        tally_check(&bad, mm_engine_at(eng, (mm_time)(N - i), ev_record, &t, i) != 0, i);
    ck_assert_tally(bad);
    ck_assert_uint_eq(mm_engine_pending(eng), N);
    ck_assert_uint_eq(mm_engine_run(eng), N);
    for (size_t i = 0; i < N; i++)
        tally_check(&bad, t.arg[i] == N - 1 - i && t.time[i] == (mm_time)(i + 1), i);
    ck_assert_tally(bad);
    trace_free(&t);
    mm_engine_free(eng);
}
END_TEST

/* ---- run_until (d) and the past (e) ------------------------------------- */

START_TEST(engine_run_until)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    trace t;
    trace_init(&t, 64);
    /* Two events at each of 10, 20, ..., 100. */
    for (uint64_t i = 0; i < 20; i++)
        ck_assert_uint_ne(mm_engine_at(eng, (mm_time)(10 * (i / 2 + 1)), ev_record, &t, i), 0);
    /* Exactly the events <= 55, and the clock lands on 55. */
    ck_assert_uint_eq(mm_engine_run_until(eng, 55), 10);
    ck_assert_uint_eq(t.n, 10);
    for (size_t i = 0; i < t.n; i++)
        ck_assert_int_le(t.time[i], 55);
    ck_assert_int_eq(mm_engine_now(eng), 55);
    ck_assert_uint_eq(mm_engine_pending(eng), 10);
    /* Nothing new is due: runs nothing, clock stays. */
    ck_assert_uint_eq(mm_engine_run_until(eng, 55), 0);
    ck_assert_int_eq(mm_engine_now(eng), 55);
    /* The clock never moves backwards. */
    ck_assert_uint_eq(mm_engine_run_until(eng, 30), 0);
    ck_assert_int_eq(mm_engine_now(eng), 55);
    /* An event exactly at `until` runs (both of them). */
    ck_assert_uint_eq(mm_engine_run_until(eng, 60), 2);
    ck_assert_int_eq(mm_engine_now(eng), 60);
    ck_assert_uint_eq(t.arg[10], 10);
    ck_assert_uint_eq(t.arg[11], 11);
    /* A cancelled event alone in the window: nothing runs, clock moves. */
    mm_event_id x = mm_engine_at(eng, 65, ev_record, &t, 999);
    ck_assert_int_eq(mm_engine_cancel(eng, x), 0);
    ck_assert_uint_eq(mm_engine_run_until(eng, 69), 0);
    ck_assert_int_eq(mm_engine_now(eng), 69);
    /* Draining the queue: the clock stays at the last event, not at until. */
    ck_assert_uint_eq(mm_engine_run_until(eng, MM_TIME_MAX), 8);
    ck_assert_int_eq(mm_engine_now(eng), 100);
    ck_assert_uint_eq(mm_engine_pending(eng), 0);
    ck_assert_uint_eq(mm_engine_dispatched(eng), 20);
    ck_assert_uint_eq(t.n, 20);
    trace_free(&t);
    mm_engine_free(eng);
}
END_TEST

START_TEST(engine_schedule_in_past)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    trace t;
    trace_init(&t, 8);
    mm_engine_at(eng, 1000, ev_record, &t, 1);
    mm_engine_run_until(eng, 100);
    ck_assert_int_eq(mm_engine_now(eng), 100);
    ck_assert_uint_eq(mm_engine_at(eng, 99, ev_record, &t, 2), 0);
    ck_assert_uint_eq(mm_engine_at(eng, -5, ev_record, &t, 2), 0);
    ck_assert_uint_eq(mm_engine_after(eng, -1, ev_record, &t, 2), 0);
    /* now + delay would overflow int64. */
    ck_assert_uint_eq(mm_engine_after(eng, MM_TIME_MAX, ev_record, &t, 2), 0);
    ck_assert_uint_eq(mm_engine_at(eng, 200, NULL, &t, 2), 0);
    ck_assert_uint_eq(mm_engine_pending(eng), 1);
    /* `now` itself and the largest representable time are fine. */
    ck_assert_uint_ne(mm_engine_at(eng, 100, ev_record, &t, 3), 0);
    ck_assert_uint_ne(mm_engine_after(eng, MM_TIME_MAX - 100, ev_record, &t, 4), 0);
    ck_assert_uint_eq(mm_engine_run(eng), 3);
    ck_assert_uint_eq(t.n, 3);
    ck_assert_uint_eq(t.arg[0], 3);
    ck_assert_uint_eq(t.arg[1], 1);
    ck_assert_uint_eq(t.arg[2], 4);
    ck_assert_int_eq(mm_engine_now(eng), MM_TIME_MAX);
    trace_free(&t);
    mm_engine_free(eng);
}
END_TEST

/* ---- determinism (f) ---------------------------------------------------- */

/* Hold model: `pending` events in flight; each one reschedules itself at a
 * random delay in 0..999 ns (so ties happen), until `budget` events have been
 * scheduled in total.  A running hash of (time, arg) catches any difference
 * in order, not only in the final clock. */
typedef struct hold {
    uint64_t rng, scheduled, budget, hash, next_arg, failed;
} hold;

static void ev_hold(mm_engine *eng, void *ctx, uint64_t arg)
{
    hold *h = ctx;
    h->hash = (h->hash ^ (uint64_t)mm_engine_now(eng)) * 0x100000001b3ULL;
    h->hash = (h->hash ^ arg) * 0x100000001b3ULL;
    if (h->scheduled < h->budget) {
        h->scheduled++;
        mm_time d = (mm_time)rng_below(&h->rng, 1000);
        h->failed += mm_engine_after(eng, d, ev_hold, h, h->next_arg++) == 0;
    }
}

static void run_hold(uint64_t seed, uint64_t budget, mm_time *now,
                     uint64_t *hash, uint64_t *dispatched)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    hold h = {.rng = seed, .budget = budget, .hash = 0xcbf29ce484222325ULL};
    for (int i = 0; i < 10000; i++) {
        h.scheduled++;
        mm_engine_at(eng, (mm_time)rng_below(&h.rng, 1000), ev_hold, &h, h.next_arg++);
    }
    ck_assert_uint_eq(mm_engine_run(eng), budget);
    ck_assert_uint_eq(h.failed, 0);
    *now = mm_engine_now(eng);
    *hash = h.hash;
    *dispatched = mm_engine_dispatched(eng);
    mm_engine_free(eng);
}

START_TEST(engine_deterministic_hold)
{
    enum { N = 1000000 };
    mm_time t1, t2, t3;
    uint64_t h1, h2, h3, d1, d2, d3;
    run_hold(2024, N, &t1, &h1, &d1);
    run_hold(2024, N, &t2, &h2, &d2);
    ck_assert_uint_eq(d1, N);
    ck_assert_uint_eq(d2, N);
    ck_assert_int_eq(t1, t2);
    ck_assert_uint_eq(h1, h2);
    /* Sanity: 10^6 events, 10^4 in flight, mean delay ~500 ns, so the clock
     * has moved about 10^6 / 10^4 * 500 = 5e4 ns. */
    ck_assert_int_gt(t1, 30000);
    ck_assert_int_lt(t1, 70000);
    /* And the hash really depends on the run: another seed differs. */
    run_hold(2025, N, &t3, &h3, &d3);
    ck_assert_uint_eq(d3, N);
    ck_assert_uint_ne(h1, h3);
}
END_TEST

/* ---- stop (g) ----------------------------------------------------------- */

typedef struct stopper {
    trace t;
    uint64_t stop_at_arg;
} stopper;

static void ev_maybe_stop(mm_engine *eng, void *ctx, uint64_t arg)
{
    stopper *st = ctx;
    ev_record(eng, &st->t, arg);
    if (arg == st->stop_at_arg)
        mm_engine_stop(eng);
}

/* Seconds to nanoseconds: nearest or up, saturating at the ends. */
START_TEST(time_from_seconds)
{
    ck_assert_int_eq(mm_time_from_s(1.0, MM_ROUND_NEAREST), MM_NS_PER_S);
    ck_assert_int_eq(mm_time_from_s(1.2e-9, MM_ROUND_NEAREST), 1);
    ck_assert_int_eq(mm_time_from_s(1.5e-9, MM_ROUND_NEAREST), 2); /* half away from zero, as llround */
    ck_assert_int_eq(mm_time_from_s(1.2e-9, MM_ROUND_UP), 2);
    ck_assert_int_eq(mm_time_from_s(2e-9, MM_ROUND_UP), 2);
    ck_assert_int_eq(mm_time_from_s(0.0, MM_ROUND_UP), 0);
    ck_assert_int_eq(mm_time_from_s(-3e-9, MM_ROUND_NEAREST), -3);
    ck_assert_int_eq(mm_time_from_s(1e10, MM_ROUND_NEAREST), MM_TIME_MAX); /* 317 years */
    ck_assert_int_eq(mm_time_from_s(INFINITY, MM_ROUND_UP), MM_TIME_MAX);
    ck_assert_int_eq(mm_time_from_s(NAN, MM_ROUND_NEAREST), MM_TIME_MAX);
    ck_assert_int_eq(mm_time_from_s(-1e10, MM_ROUND_NEAREST), -MM_TIME_MAX);
    ck_assert_int_eq(mm_time_from_s(9.1e9, MM_ROUND_NEAREST), 9100000000000000000LL);
    ck_assert_int_eq(mm_time_add(5, 7), 12);
    ck_assert_int_eq(mm_time_add(MM_TIME_MAX - 5, 10), MM_TIME_MAX);
    ck_assert_int_eq(mm_time_add(100, MM_TIME_MAX), MM_TIME_MAX);
    ck_assert_int_eq(mm_time_add(100, -40), 60);
}
END_TEST

START_TEST(engine_stop)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    stopper st = {.stop_at_arg = 4};
    trace_init(&st.t, 32);
    for (uint64_t i = 0; i < 10; i++)
        mm_engine_at(eng, (mm_time)(i * 10), ev_maybe_stop, &st, i);
    /* Stops after the event in progress (the fifth). */
    ck_assert_uint_eq(mm_engine_run(eng), 5);
    ck_assert_uint_eq(st.t.n, 5);
    ck_assert_int_eq(mm_engine_now(eng), 40);
    ck_assert_uint_eq(mm_engine_pending(eng), 5);
    /* run_until honours stop too, and then does not move the clock. */
    st.stop_at_arg = 6;
    ck_assert_uint_eq(mm_engine_run_until(eng, 85), 2);
    ck_assert_int_eq(mm_engine_now(eng), 60);
    /* A stop applies to the run in progress only: the next run resumes,
     * even after a stop issued between runs (engine.c: known limits). */
    st.stop_at_arg = UINT64_MAX;
    mm_engine_stop(eng);
    ck_assert_uint_eq(mm_engine_run(eng), 3);
    ck_assert_uint_eq(st.t.n, 10);
    for (uint64_t i = 0; i < 10; i++)
        ck_assert_uint_eq(st.t.arg[i], i);
    ck_assert_int_eq(mm_engine_now(eng), 90);
    ck_assert_uint_eq(mm_engine_dispatched(eng), 10);
    trace_free(&st.t);
    mm_engine_free(eng);
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    /* Generous limits: the defaults (4 s) are too tight under sanitizers on
     * a loaded machine.  CK_TIMEOUT_MULTIPLIER scales them. */
    TCase *th = tcase_create("heap4");
    tcase_set_timeout(th, 120);
    tcase_add_test(th, heap_empty);
    tcase_add_test(th, heap_matches_sorted_reference);
    tcase_add_test(th, heap_hold_model_interleaved);
    suite_add_tcase(s, th);

    TCase *te = tcase_create("engine");
    tcase_set_timeout(te, 120);
    tcase_add_test(te, engine_fresh);
    tcase_add_test(te, engine_equal_times_fifo);
    tcase_add_test(te, engine_schedule_at_now_from_callback);
    tcase_add_test(te, engine_pool_growth);
    tcase_add_test(te, engine_run_until);
    tcase_add_test(te, engine_schedule_in_past);
    tcase_add_test(te, engine_deterministic_hold);
    tcase_add_test(te, time_from_seconds);
    tcase_add_test(te, engine_stop);
    tcase_add_test(te, engine_now_fifo_matches_reference);
    tcase_add_test(te, heap_replace_top_is_pop_insert);
    suite_add_tcase(s, te);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(engine_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
