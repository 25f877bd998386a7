/* engine.c - simulated clock, event pool and run loop of mmsim.
 *
 * What it is for: calling fn(eng, ctx, arg) callbacks in (time, scheduling
 * order), deterministically and cheaply.  Everything above (hardware,
 * streams, collectives) is built from such callbacks.
 *
 * How: an event lives in a slot of a pool (fn, ctx, arg, generation).  The
 * heap holds (time, seq, payload) with payload = generation << 32 | slot
 * index, and seq is the engine's insertion counter, so events due at the same
 * time pop in the order they were scheduled.  The payload doubles as the
 * event's handle (mm_event_id).
 *
 * Cancellation is lazy: cancel releases the slot and bumps its generation;
 * the heap entry stays where it is and is thrown away when it reaches the
 * root, because its generation no longer matches the slot's.  A slot is also
 * released (and its generation bumped) just before its event runs, so a
 * handle stops being valid the moment its event starts.
 *
 * An event scheduled for the current time (a collective's completion
 * handed back at once, a zero-length op) skips the heap: it goes to a FIFO
 * of the events due now.  The order is the heap's: any heap entry due now
 * was scheduled before the clock reached now, so before every FIFO entry
 * (smaller seq), and FIFO entries are in scheduling order; the loop takes
 * heap entries due now first, then the FIFO, then lets the clock move.
 *
 * A heap event stays at the root while its callback runs; the first event
 * the callback schedules into the heap replaces it (one sift instead of a
 * pop's and an insert's), and if it schedules none the root is popped
 * after.  Keys (time, seq) are unique, so the pops come in the same order.
 *
 * Free slots form a LIFO list threaded through the slots themselves, so the
 * slot freed by the event in progress is the one the next mm_engine_at gets,
 * which is still in cache.  The pool and the heap grow by doubling; after
 * warm-up nothing allocates.
 *
 * Not for: knowing what an event means, real time, or threads (one engine per
 * thread, no locks).  Known limits:
 * - a cancelled event's heap entry keeps its place (24 bytes) until its time
 *   comes; a model that schedules far ahead and cancels almost everything
 *   grows the heap with dead entries.  Compacting when dead entries
 *   outnumber live ones would fix it; nothing needs that yet.
 * - generations are 32 bits: a handle (or a cancelled event's heap entry)
 *   kept while its slot is reused 2^32 times could alias a later event of
 *   that slot.  Callers hold handles for a few events, not for billions.
 * - at most 2^31 events can be pending at once (the pool doubles from 4096
 *   and slot indices are 32 bits).
 * - mm_engine_stop only ends a run in progress: each run clears the flag
 *   when it starts, so a stop issued between runs is forgotten.  Calling
 *   run or run_until from inside a callback is not supported. */
#include "engine/engine.h"

#include <stdlib.h>

#include "engine/heap4.h"

/* Initial sizes; both grow by doubling.  4096 pending events cover a small
 * scenario without any regrowth. */
#define MM_ENGINE_INIT_SLOTS 4096u
#define MM_SLOT_NONE UINT32_MAX

typedef struct mm_slot {
    mm_event_fn fn; /* NULL while the slot is free */
    void *ctx;
    uint64_t arg;
    uint32_t gen;       /* never 0, so no handle is 0 */
    uint32_t next_free; /* next free slot when free; unused otherwise */
} mm_slot;              /* 32 bytes: two slots per cache line */

struct mm_engine {
    mm_time now;
    uint64_t seq; /* insertion counter: the heap's tie-breaker */
    mm_heap4 heap;
    int top_spent;      /* the heap's root is the event being dispatched: the
                           next heap insert replaces it (one sift, not two) */
    uint64_t *now_q;    /* ring of payloads due at `now`, in scheduling order */
    uint32_t nq_head, nq_n, nq_cap; /* nq_cap: a power of two (or 0) */
    mm_slot *slots;
    uint32_t nslots;    /* slots ever handed out (high-water mark) */
    uint32_t cap;       /* slots allocated */
    uint32_t free_head; /* LIFO free list, MM_SLOT_NONE when empty */
    int stop;           /* set by mm_engine_stop, cleared when a run starts */
    uint64_t pending;
    uint64_t dispatched;
};

static inline uint64_t mm_event_payload(uint32_t idx, uint32_t gen)
{
    return (uint64_t)gen << 32 | idx;
}

mm_engine *mm_engine_alloc(void)
{
    mm_engine *eng = calloc(1, sizeof *eng);
    if (!eng)
        return NULL;
    eng->slots = malloc(MM_ENGINE_INIT_SLOTS * sizeof *eng->slots);
    if (!eng->slots || mm_heap4_init(&eng->heap, MM_ENGINE_INIT_SLOTS) != 0) {
        free(eng->slots);
        free(eng);
        return NULL;
    }
    eng->cap = MM_ENGINE_INIT_SLOTS;
    eng->free_head = MM_SLOT_NONE;
    return eng;
}

void mm_engine_free(mm_engine *eng)
{
    if (!eng)
        return;
    mm_heap4_free(&eng->heap);
    free(eng->now_q);
    free(eng->slots);
    free(eng);
}

mm_time mm_engine_now(const mm_engine *eng) { return eng->now; }

uint64_t mm_engine_pending(const mm_engine *eng) { return eng->pending; }

int mm_engine_due_now(const mm_engine *eng)
{
    if (eng->nq_n)
        return 1;
    /* the running heap event stays at the root (top_spent): then the next
     * is the least of the root's four children */
    size_t lo = eng->top_spent ? 1 : 0, hi = eng->top_spent ? 5 : 1;
    for (size_t i = lo; i < hi && i < eng->heap.n; i++)
        if (eng->heap.a[i].time <= eng->now)
            return 1;
    return 0;
}

uint64_t mm_engine_dispatched(const mm_engine *eng) { return eng->dispatched; }

void mm_engine_stop(mm_engine *eng) { eng->stop = 1; }

/* Doubles the pool.  Out of line: runs O(log n) times per engine. */
static __attribute__((noinline)) int mm_engine_grow(mm_engine *eng)
{
    if (eng->cap > (MM_SLOT_NONE - 1) / 2)
        return -1;
    uint32_t cap = eng->cap * 2;
    mm_slot *s = realloc(eng->slots, (size_t)cap * sizeof *s);
    if (!s)
        return -1;
    eng->slots = s;
    eng->cap = cap;
    return 0;
}

/* Takes a slot off the free list, or a never-used one, growing the pool when
 * both run out.  Returns MM_SLOT_NONE when out of memory. */
static inline uint32_t mm_slot_take(mm_engine *eng)
{
    uint32_t idx = eng->free_head;
    if (idx != MM_SLOT_NONE) {
        eng->free_head = eng->slots[idx].next_free;
        return idx;
    }
    if (eng->nslots == eng->cap && mm_engine_grow(eng) != 0)
        return MM_SLOT_NONE;
    idx = eng->nslots++;
    eng->slots[idx].gen = 1;
    return idx;
}

/* Returns a slot to the free list and bumps its generation (skipping 0), so
 * every handle and heap entry naming the old generation goes stale. */
static inline void mm_slot_release(mm_engine *eng, uint32_t idx)
{
    mm_slot *s = &eng->slots[idx];
    uint32_t gen = s->gen + 1;
    s->gen = gen + (gen == 0);
    s->fn = NULL;
    s->next_free = eng->free_head;
    eng->free_head = idx;
}

/* Doubles the FIFO of events due now (unrolling the ring).  Out of line. */
static __attribute__((noinline)) int mm_now_q_grow(mm_engine *eng)
{
    uint32_t cap = eng->nq_cap ? 2 * eng->nq_cap : 256;
    if (cap < eng->nq_cap)
        return -1;
    uint64_t *q = malloc((size_t)cap * sizeof *q);
    if (!q)
        return -1;
    for (uint32_t i = 0; i < eng->nq_n; i++)
        q[i] = eng->now_q[(eng->nq_head + i) & (eng->nq_cap - 1)];
    free(eng->now_q);
    eng->now_q = q;
    eng->nq_cap = cap;
    eng->nq_head = 0;
    return 0;
}

/* The common path of mm_engine_at / mm_engine_after, once `at` is known to
 * be valid. */
static inline mm_event_id mm_engine_push(mm_engine *eng, mm_time at,
                                         mm_event_fn fn, void *ctx,
                                         uint64_t arg)
{
    uint32_t idx = mm_slot_take(eng);
    if (idx == MM_SLOT_NONE)
        return 0;
    mm_slot *s = &eng->slots[idx];
    s->fn = fn;
    s->ctx = ctx;
    s->arg = arg;
    uint64_t id = mm_event_payload(idx, s->gen);
    if (at == eng->now) {
        if (eng->nq_n == eng->nq_cap && mm_now_q_grow(eng) != 0) {
            mm_slot_release(eng, idx);
            return 0;
        }
        eng->now_q[(eng->nq_head + eng->nq_n++) & (eng->nq_cap - 1)] = id;
    } else {
        mm_heap_entry e = {at, eng->seq, id};
        if (eng->top_spent) {
            mm_heap4_replace_top(&eng->heap, e);
            eng->top_spent = 0;
        } else if (mm_heap4_insert(&eng->heap, e) != 0) {
            mm_slot_release(eng, idx);
            return 0;
        }
    }
    eng->seq++;
    eng->pending++;
    return id;
}

mm_event_id mm_engine_at(mm_engine *eng, mm_time at, mm_event_fn fn,
                         void *ctx, uint64_t arg)
{
    if (at < eng->now || !fn)
        return 0;
    return mm_engine_push(eng, at, fn, ctx, arg);
}

mm_event_id mm_engine_after(mm_engine *eng, mm_time delay, mm_event_fn fn,
                            void *ctx, uint64_t arg)
{
    /* delay < 0 would be in the past; now + delay must not overflow. */
    if (delay < 0 || delay > MM_TIME_MAX - eng->now || !fn)
        return 0;
    return mm_engine_push(eng, eng->now + delay, fn, ctx, arg);
}

int mm_engine_cancel(mm_engine *eng, mm_event_id id)
{
    uint32_t idx = (uint32_t)id;
    uint32_t gen = (uint32_t)(id >> 32);
    if (idx >= eng->nslots)
        return -1;
    mm_slot *s = &eng->slots[idx];
    /* A free slot has fn == NULL; a reused one has a newer generation. */
    if (!s->fn || s->gen != gen)
        return -1;
    mm_slot_release(eng, idx);
    eng->pending--;
    return 0;
}

/* The run loop shared by run and run_until.  Pops entries due at or before
 * `until`, drops stale ones (cancelled events), and dispatches the rest.
 * The slot is released before the callback runs, so the callback may
 * schedule (and reuse that very slot) or cancel freely; fn, ctx and arg are
 * copied out first because scheduling may move the pool.  Returns the number
 * of events dispatched. */
static uint64_t mm_engine_loop(mm_engine *eng, mm_time until)
{
    const uint64_t start = eng->dispatched;
    eng->stop = 0;
    while (!eng->stop) {
        const mm_heap_entry *root = mm_heap4_root(&eng->heap);
        mm_heap_entry e;
        int from_heap = 1;
        if (root && root->time <= eng->now) { /* due now, scheduled before the FIFO's */
            if (root->time > until)
                break;
            e = *root;
        } else if (eng->nq_n) {
            from_heap = 0;
            if (eng->now > until)
                break;
            e.time = eng->now;
            e.payload = eng->now_q[eng->nq_head];
            eng->nq_head = (eng->nq_head + 1) & (eng->nq_cap - 1);
            eng->nq_n--;
        } else {
            if (!root || root->time > until)
                break;
            e = *root;
        }
        uint32_t idx = (uint32_t)e.payload;
        mm_slot *s = &eng->slots[idx];
        if (s->gen != (uint32_t)(e.payload >> 32)) { /* cancelled: its slot moved on */
            if (from_heap)
                mm_heap4_pop(&eng->heap, &e);
            continue;
        }
        /* a heap event stays at the root while it runs: the first event it
         * schedules into the heap takes its place (pop + insert in one
         * sift); keys are unique, so the order is the same */
        eng->top_spent = from_heap;
        mm_event_fn fn = s->fn;
        void *ctx = s->ctx;
        uint64_t arg = s->arg;
        mm_slot_release(eng, idx);
        eng->pending--;
        eng->now = e.time;
        eng->dispatched++;
        fn(eng, ctx, arg);
        if (eng->top_spent) {
            mm_heap4_pop(&eng->heap, &e);
            eng->top_spent = 0;
        }
    }
    return eng->dispatched - start;
}

uint64_t mm_engine_run(mm_engine *eng)
{
    return mm_engine_loop(eng, MM_TIME_MAX);
}

uint64_t mm_engine_run_until(mm_engine *eng, mm_time until)
{
    uint64_t count = mm_engine_loop(eng, until);
    /* Advance the clock to `until` only when it is known that nothing is due
     * before then: not after a stop (due events may remain; the clock stays
     * at the event that called stop), and not when
     * the queue ran dry, so that run_until(MM_TIME_MAX) leaves the clock at
     * the last event rather than at the end of time.  Every live event left
     * is later than `until`: the loop popped all entries up to it. */
    if (!eng->stop && eng->pending > 0 && until > eng->now)
        eng->now = until;
    return count;
}
