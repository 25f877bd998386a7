/* engine.h - the discrete-event engine: simulated clock and event queue.
 *
 * Time is int64 nanoseconds (mm_time).  An event is a callback with a context
 * pointer and a 64-bit argument, due at an absolute time.  Events due at the
 * same time run in the order they were scheduled, so runs are deterministic.
 * Events live in a pool recycled through a free list: after warm-up,
 * scheduling and dispatching allocate nothing.  Cancellation is lazy: the
 * event's slot is released and its heap entry is skipped when it surfaces.
 * Not for: knowing about GPUs, ops or networks (those are layers above). */
#ifndef MM_ENGINE_H
#define MM_ENGINE_H

#include <math.h>
#include <stdint.h>

#include "util/err.h"

typedef int64_t mm_time;
#define MM_TIME_MAX INT64_MAX
#define MM_NS_PER_S 1000000000LL

typedef enum {
    MM_ROUND_NEAREST, /* durations: the nearest nanosecond */
    MM_ROUND_UP       /* a finish that must not come before the work is done
                         (a flow's last byte): the next nanosecond up */
} mm_round;

/* Seconds to engine nanoseconds: the one conversion every layer uses.
 * Saturating: NaN, +inf and anything past MM_TIME_MAX ns give MM_TIME_MAX
 * (never due), anything below -MM_TIME_MAX gives -MM_TIME_MAX (the engine
 * refuses a time in the past), instead of the undefined behaviour of an
 * out-of-range conversion to int64. */
static inline mm_time mm_time_from_s(double s, mm_round r)
{
    double ns = s * 1e9;
    if (!(ns < 9.2e18)) /* also NaN; 9.2e18 < INT64_MAX converts exactly */
        return MM_TIME_MAX;
    if (ns <= -9.2e18)
        return -MM_TIME_MAX;
    return r == MM_ROUND_UP ? (mm_time)ceil(ns) : (mm_time)llround(ns);
}

/* now + d without overflow: MM_TIME_MAX when it would pass it. */
static inline mm_time mm_time_add(mm_time now, mm_time d)
{
    return d > 0 && now > MM_TIME_MAX - d ? MM_TIME_MAX : now + d;
}

typedef struct mm_engine mm_engine;
typedef void (*mm_event_fn)(mm_engine *eng, void *ctx, uint64_t arg);

/* Handle of a scheduled event; 0 is never a valid handle. */
typedef uint64_t mm_event_id;

mm_engine *mm_engine_alloc(void); /* NULL when out of memory */
void mm_engine_free(mm_engine *eng);

mm_time mm_engine_now(const mm_engine *eng);

/* Schedules fn(eng, ctx, arg) at absolute time `at` (>= now).  Returns the
 * event's handle, or 0 on error (at < now, or out of memory). */
mm_event_id mm_engine_at(mm_engine *eng, mm_time at, mm_event_fn fn,
                         void *ctx, uint64_t arg);

/* Same, `delay` (>= 0) after now. */
mm_event_id mm_engine_after(mm_engine *eng, mm_time delay, mm_event_fn fn,
                            void *ctx, uint64_t arg);

/* Cancels a pending event.  Returns 0, or -1 when the handle is not pending
 * (already run, already cancelled, or never issued). */
int mm_engine_cancel(mm_engine *eng, mm_event_id id);

/* Runs events until the queue is empty or mm_engine_stop is called.
 * Returns the number of events dispatched by this call. */
uint64_t mm_engine_run(mm_engine *eng);

/* Runs every event due at or before `until`, then sets now = until if the
 * queue still holds later events (the clock never moves backwards). */
uint64_t mm_engine_run_until(mm_engine *eng, mm_time until);

/* Makes the current run / run_until return after the event in progress. */
void mm_engine_stop(mm_engine *eng);

uint64_t mm_engine_pending(const mm_engine *eng);   /* live scheduled events */
/* Whether an event other than the one being dispatched is due at the
 * current time (a cancelled one not yet dropped may count): a handler that
 * must run last in its instant schedules itself again at now while this
 * holds. */
int mm_engine_due_now(const mm_engine *eng);
uint64_t mm_engine_dispatched(const mm_engine *eng); /* total since alloc */

#endif
