/* test_engine_cancel.c - Check suite for the engine's lazy cancellation
 * (engine/engine.h): a subset cancelled, reused slots, bogus handles, and
 * cancelling from a callback.  Every random input comes from a seeded
 * splitmix64, so a failure reproduces exactly.
 * Not for: the order guarantees, run_until, stop and determinism
 * (test_engine.c). */
#include "engine_common.h"

static void ev_nop(mm_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)ctx;
    (void)arg;
}

/* ---- cancellation (c) --------------------------------------------------- */

/* Cancel a random third of 30000 events: exactly the others run, in order,
 * and the stale heap entries count neither as dispatched nor as pending. */
START_TEST(engine_cancel_subset)
{
    enum { N = 30000 };
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    trace t;
    trace_init(&t, N);
    mm_event_id *id = malloc(N * sizeof *id);
    unsigned char *cancelled = calloc(N, 1);
    mm_heap_entry *ref = malloc(N * sizeof *ref);
    ck_assert_ptr_nonnull(id);
    ck_assert_ptr_nonnull(cancelled);
    ck_assert_ptr_nonnull(ref);
    uint64_t s = 3;
    tally bad = {0, 0};
    for (size_t i = 0; i < N; i++) {
        mm_time at = (mm_time)rng_below(&s, 500);
        id[i] = mm_engine_at(eng, at, ev_record, &t, i);
        tally_check(&bad, id[i] != 0, i);
        for (size_t j = i > 8 ? i - 8 : 0; j < i; j++) /* unique (spot check) */
            tally_check(&bad, id[j] != id[i], i);
        ref[i] = (mm_heap_entry){at, i, i};
    }
    ck_assert_tally(bad);
    size_t ncancel = 0;
    for (size_t i = 0; i < N; i++) {
        if (rng_below(&s, 3) == 0) {
            tally_check(&bad, mm_engine_cancel(eng, id[i]) == 0, i);
            tally_check(&bad, mm_engine_cancel(eng, id[i]) == -1, i); /* twice */
            cancelled[i] = 1;
            ncancel++;
        }
    }
    ck_assert_tally(bad);
    ck_assert_uint_gt(ncancel, N / 4);
    ck_assert_uint_eq(mm_engine_pending(eng), N - ncancel);
    qsort(ref, N, sizeof *ref, entry_cmp);
    ck_assert_uint_eq(mm_engine_run(eng), N - ncancel);
    ck_assert_uint_eq(mm_engine_dispatched(eng), N - ncancel);
    ck_assert_uint_eq(mm_engine_pending(eng), 0);
    size_t k = 0;
    for (size_t i = 0; i < N; i++) {
        if (cancelled[ref[i].payload])
            continue;
        tally_check(&bad, k < t.n && t.arg[k] == ref[i].payload, i);
        k++;
    }
    ck_assert_tally(bad);
    ck_assert_uint_eq(k, t.n);
    /* Handles of events that ran (or were cancelled) are dead for good. */
    for (size_t i = 0; i < N; i++)
        tally_check(&bad, mm_engine_cancel(eng, id[i]) == -1, i);
    ck_assert_tally(bad);
    free(ref);
    free(cancelled);
    free(id);
    trace_free(&t);
    mm_engine_free(eng);
}
END_TEST

/* The slot of a cancelled event is handed to the next event (LIFO free
 * list).  The old handle must not cancel the new occupant, before or after
 * the old heap entry has surfaced. */
START_TEST(engine_cancel_reused_slot)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    trace t;
    trace_init(&t, 16);
    mm_event_id a = mm_engine_at(eng, 10, ev_record, &t, 1);
    ck_assert_uint_ne(a, 0);
    ck_assert_int_eq(mm_engine_cancel(eng, a), 0);
    mm_event_id b = mm_engine_at(eng, 10, ev_record, &t, 2);
    ck_assert_uint_ne(b, 0);
    ck_assert_uint_ne(a, b);
    /* Same slot, newer generation: the low 32 bits (the slot index) agree.
     * This relies on the encoding described in engine.c; if that changes,
     * the test still checks the behaviour below. */
    ck_assert_uint_eq((uint32_t)a, (uint32_t)b);
    ck_assert_int_eq(mm_engine_cancel(eng, a), -1);
    ck_assert_uint_eq(mm_engine_pending(eng), 1);
    /* Reuse again, several times over, while a's stale entry is still in
     * the heap; none of the old handles may touch the live event. */
    mm_event_id c = mm_engine_at(eng, 20, ev_record, &t, 3);
    ck_assert_int_eq(mm_engine_cancel(eng, c), 0);
    mm_event_id d = mm_engine_at(eng, 20, ev_record, &t, 4);
    ck_assert_int_eq(mm_engine_cancel(eng, a), -1);
    ck_assert_int_eq(mm_engine_cancel(eng, c), -1);
    ck_assert_uint_eq(mm_engine_pending(eng), 2);
    ck_assert_uint_eq(mm_engine_run(eng), 2);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_uint_eq(t.arg[0], 2);
    ck_assert_uint_eq(t.arg[1], 4);
    ck_assert_int_eq(mm_engine_cancel(eng, b), -1);
    ck_assert_int_eq(mm_engine_cancel(eng, d), -1);
    trace_free(&t);
    mm_engine_free(eng);
}
END_TEST

START_TEST(engine_cancel_bogus_handles)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    ck_assert_int_eq(mm_engine_cancel(eng, 0), -1);
    ck_assert_int_eq(mm_engine_cancel(eng, UINT64_MAX), -1);
    mm_event_id a = mm_engine_at(eng, 1, ev_nop, NULL, 0);
    ck_assert_int_eq(mm_engine_cancel(eng, a + 1), -1);                  /* unused slot */
    ck_assert_int_eq(mm_engine_cancel(eng, a + ((uint64_t)1 << 32)), -1); /* future gen */
    ck_assert_int_eq(mm_engine_cancel(eng, (uint32_t)a), -1);             /* gen 0 */
    ck_assert_uint_eq(mm_engine_pending(eng), 1);
    ck_assert_uint_eq(mm_engine_run(eng), 1);
    /* The slot is free now, with a's generation + 1: a handle naming that
     * generation was never issued, so it must not cancel anything. */
    ck_assert_int_eq(mm_engine_cancel(eng, a + ((uint64_t)1 << 32)), -1);
    ck_assert_uint_eq(mm_engine_pending(eng), 0);
    mm_engine_free(eng);
}
END_TEST

/* Cancelling from inside a callback: a later event at the same time is
 * skipped; the running event's own handle is already dead. */
typedef struct cancel_ctx {
    trace t;
    mm_event_id self, victim;
    int self_rc, victim_rc;
} cancel_ctx;

static void ev_cancel_other(mm_engine *eng, void *ctx, uint64_t arg)
{
    cancel_ctx *c = ctx;
    ev_record(eng, &c->t, arg);
    c->self_rc = mm_engine_cancel(eng, c->self);
    c->victim_rc = mm_engine_cancel(eng, c->victim);
}

START_TEST(engine_cancel_from_callback)
{
    mm_engine *eng = mm_engine_alloc();
    ck_assert_ptr_nonnull(eng);
    cancel_ctx c = {.self_rc = 99, .victim_rc = 99};
    trace_init(&c.t, 16);
    c.self = mm_engine_at(eng, 7, ev_cancel_other, &c, 1);
    c.victim = mm_engine_at(eng, 7, ev_record, &c.t, 2);
    mm_engine_at(eng, 8, ev_record, &c.t, 3);
    ck_assert_uint_eq(mm_engine_run(eng), 2);
    ck_assert_int_eq(c.self_rc, -1);
    ck_assert_int_eq(c.victim_rc, 0);
    ck_assert_uint_eq(c.t.n, 2);
    ck_assert_uint_eq(c.t.arg[0], 1);
    ck_assert_uint_eq(c.t.arg[1], 3);
    ck_assert_uint_eq(mm_engine_dispatched(eng), 2);
    trace_free(&c.t);
    mm_engine_free(eng);
}
END_TEST

static Suite *engine_cancel_suite(void)
{
    Suite *s = suite_create("engine_cancel");

    TCase *te = tcase_create("engine");
    tcase_set_timeout(te, 120);
    tcase_add_test(te, engine_cancel_subset);
    tcase_add_test(te, engine_cancel_reused_slot);
    tcase_add_test(te, engine_cancel_bogus_handles);
    tcase_add_test(te, engine_cancel_from_callback);
    suite_add_tcase(s, te);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(engine_cancel_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
