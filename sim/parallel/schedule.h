/* schedule.h - the order in which one pipeline rank runs its passes.
 *
 * A schedule is a per-rank list of (pass, micro-batch, model chunk) steps;
 * the executor runs them event by event, so stalls come from real
 * dependencies (a micro-batch's activation not yet received), not from a
 * bubble formula.  Not for: timing (the builder and executor do that). */
#ifndef MM_SCHEDULE_H
#define MM_SCHEDULE_H

/* F: forward; B: backward (input and weight gradients together, or only
 * the input gradient in zero-bubble schedules); W: weight gradient. */
typedef enum { MM_PASS_F, MM_PASS_B, MM_PASS_W } mm_pass;

/* Same order as the scenario's train.schedule names. */
typedef enum {
    MM_SCHEDULE_GPIPE,       /* Huang et al., GPipe, NeurIPS 2019 */
    MM_SCHEDULE_1F1B,        /* PipeDream-Flush: Narayanan et al. SC'21 §2.2 */
    MM_SCHEDULE_INTERLEAVED, /* interleaved 1F1B: Narayanan et al. SC'21 §2.2.2 */
    MM_SCHEDULE_ZB_H1        /* Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024 */
} mm_schedule;

typedef struct mm_sched_step {
    int pass;  /* mm_pass */
    int mb;    /* micro-batch, 0-based */
    int chunk; /* model chunk on this rank (0 unless interleaved) */
} mm_sched_step;

/* Steps of one rank, for stage s of p, m micro-batches and v model chunks
 * per rank (v > 1 only for MM_SCHEDULE_INTERLEAVED).  out must hold
 * mm_schedule_len() steps.  Returns the count, or -1 for bad arguments
 * (interleaving needs m to be a multiple of p, as Megatron-LM requires).
 *  - GPipe: all forwards, then all backwards.
 *  - 1F1B: min(p-s-1, m) warm-up forwards, then one forward and one
 *    backward alternately, then the remaining backwards.
 *  - Interleaved: Megatron-LM's order (forward_backward_pipelining_with_
 *    interleaving): (p-s-1)*2 + (v-1)*p warm-up forwards; forward k runs
 *    chunk (k mod pv) div p on micro-batch (k div pv)*p + k mod p, and
 *    backward k the mirrored chunk v-1-(k mod pv) div p.
 *  - ZB-H1: 1F1B's order of F and B, with each W (weight gradient) pass
 *    deferred until s more backwards have run on stage s, then the rest at
 *    the end.  Deferring W lets input gradients travel up the pipeline
 *    without waiting for weight gradients; stage s keeps p-s activations
 *    alive for 1F1B plus s for deferred W passes, so no stage holds more
 *    than 1F1B's p (the paper's "same peak memory as 1F1B"). */
int mm_schedule_steps(mm_schedule kind, int p, int s, int m, int v, mm_sched_step *out);

/* Number of steps a rank runs: 2mv, or 3m for zero-bubble schedules. */
int mm_schedule_len(mm_schedule kind, int m, int v);

#endif
