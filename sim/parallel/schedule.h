/* schedule.h - the order in which one pipeline stage runs its passes.
 *
 * A schedule is a per-stage list of (pass, micro-batch) steps; the executor
 * runs them event by event, so stalls come from real dependencies, not from
 * a bubble formula.  Not for: timing (the builder and executor do that). */
#ifndef MM_SCHEDULE_H
#define MM_SCHEDULE_H

typedef enum { MM_PASS_F, MM_PASS_B, MM_PASS_W } mm_pass;

/* Same order as the scenario's train.schedule names. */
typedef enum { MM_SCHEDULE_GPIPE, MM_SCHEDULE_1F1B } mm_schedule;

typedef struct mm_sched_step {
    int pass; /* mm_pass */
    int mb;   /* micro-batch, 0-based */
} mm_sched_step;

/* Fills out[0 .. 2m-1] with stage s's steps (0 <= s < p) and returns 2m,
 * or -1 for bad arguments.  GPipe: all forwards, then all backwards.
 * 1F1B (PipeDream-Flush, Narayanan et al. SC'21 §2.2): min(p-s-1, m)
 * warm-up forwards, then alternate one forward and one backward, then the
 * remaining backwards. */
int mm_schedule_steps(mm_schedule kind, int p, int s, int m, mm_sched_step *out);

#endif
