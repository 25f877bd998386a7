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
    MM_SCHEDULE_ZB_H1,       /* Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024 */
    MM_SCHEDULE_ZB_2P,       /* the same paper's ZB-2p (section 3.1, heuristic schedule) */
    MM_SCHEDULE_ZB_V         /* Qi et al., Pipeline Parallelism with Controllable Memory,
                                arXiv 2405.15362: ZB-V, two chunks per rank in V order */
} mm_schedule;

/* Pass times a timed schedule (ZB-2p, ZB-V) orders its steps by: per stage
 * s of p (ZB-V: per virtual stage of 2p, in model order), f[s], b[s] (input
 * gradient only) and w[s] (weight gradient), seconds, and one transfer
 * between neighbouring stages on different ranks, comm. */
typedef struct mm_sched_times {
    const double *f, *b, *w;
    double comm;
} mm_sched_times;

/* ZB-2p's memory limit: micro-batches' activations a stage holds at once,
 * 2p on every stage as the paper sets it (min(m, 2p)), a micro-batch's
 * counted whole from its F, half freed at its B and half at its W (the
 * authors' mem_f 2, mem_b -1, mem_w -1); model/memory.c's MM_MEM_ZB_2P
 * and cost/datamem.c count the same. */
int mm_schedule_zb2p_cap(int p, int m);

/* Whether the schedule runs W passes apart from B (ZB-H1, ZB-2p, ZB-V). */
static inline int mm_schedule_splits_w(mm_schedule kind)
{
    return kind == MM_SCHEDULE_ZB_H1 || kind == MM_SCHEDULE_ZB_2P || kind == MM_SCHEDULE_ZB_V;
}

/* The virtual stage (model chunk in model order, 0 .. p*v - 1) that rank
 * s of p runs as its local chunk c.  Interleaved (Megatron-LM): c*p + s,
 * the chunks go round the ranks in a loop.  ZB-V: a V, rank s holds
 * chunks s and 2p-1-s, so the first and the last chunk share rank 0 and
 * the turn (chunk p-1 to p) stays on rank p-1 (arXiv 2405.15362, Fig. 2). */
static inline int mm_schedule_vstage(mm_schedule kind, int p, int s, int c)
{
    return kind == MM_SCHEDULE_ZB_V && c == 1 ? 2 * p - 1 - s : c * p + s;
}

/* The rank (pipeline stage) of virtual stage vs: the inverse of
 * mm_schedule_vstage; its local chunk is vs / p under both. */
static inline int mm_schedule_vstage_rank(mm_schedule kind, int p, int vs)
{
    return kind == MM_SCHEDULE_ZB_V && vs >= p ? 2 * p - 1 - vs : vs % p;
}

/* ZB-V's memory limit in a rank's half chunk-activations: 1F1B's peak,
 * min(m, p) whole-stage micro-batches = 2 min(m, p) chunks, each counted
 * whole from its F, half freed at its B and half at its W as ZB-2p's. */
int mm_schedule_zbv_cap_halves(int p, int m);

typedef struct mm_sched_step {
    int pass;  /* mm_pass */
    int mb;    /* micro-batch, 0-based */
    int chunk; /* model chunk on this rank (0 unless interleaved or ZB-V;
                  mm_schedule_vstage gives its virtual stage) */
} mm_sched_step;

/* Steps of one rank, for stage s of p, m micro-batches and v model chunks
 * per rank (v > 1 only for MM_SCHEDULE_INTERLEAVED; v == 2 for ZB-V).  out must hold
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
 *    than 1F1B's p (the paper's "same peak memory as 1F1B").
 *  - ZB-2p: the order the paper's heuristic schedule (Qi et al. section
 *    3.1, the authors' initial solution before their ILP) builds from the
 *    pass times, here with equal F, B and W times and no transfer time
 *    (mm_schedule_steps_timed takes the real ones).  Warm-up: one forward
 *    on every stage, then per stage the forwards that fit before its first
 *    B can run (within the memory limit, fewer than the stage before it),
 *    then the first B up the pipeline.  Steady state, per micro-batch: a
 *    forward on each stage, then the next B from the last stage up; before
 *    each, the deferred W passes that memory needs or that fit the wait for
 *    the pass's input (and one that overruns it, when that wait is larger
 *    than the stage's slack to the worst stage's bubble, or always: the
 *    greedy variant); the first stage runs its W passes before each B once
 *    its forwards are done; the rest at the end.  Of the four variants
 *    (warm-up forwards may or may not run past the first B's arrival;
 *    greedy or not) the one of least cost, the longest stage's first F
 *    to last W, is kept (the authors' initial solution also tries each
 *    with a forward held back for the next stage's B: not run here).  The ILP refinement is not run: the executor
 *    with this order gives the paper's Table 5 rates to 0.0005
 *    (tests/test_sched.c).
 *  - ZB-V (arXiv 2405.15362; v must be 2): the authors' heuristic
 *    (extended Zero Bubble paper section 6), run on all ranks at once on
 *    the pass times (mm_schedule_steps_timed; here equal), predicting each
 *    pass's end.  Warm-up: a chunk-0 forward down the ranks; then from
 *    the last rank up, each rank's first chunk-1 forward, preceded by the
 *    chunk-0 forwards that end before its input arrives (run on it and the
 *    ranks before it) within the memory limit; then each rank takes as
 *    many forwards as the rank before it, chunk 0 and 1 alternately.
 *    Rounds: each rank places one B (chunk 1, the first on the way back,
 *    unless a chunk-0 B is owed whose input is placed) and then one F
 *    (chunk 1 where its input is placed, else chunk 0), where the input
 *    is placed; before each, the deferred W passes that memory needs
 *    (mm_schedule_zbv_cap_halves: 1F1B's peak) or that fit the wait for
 *    the pass's input, and one that overruns it when the wait is larger
 *    than the rank's slack to the worst rank's bubble (always before a
 *    chunk-1 B; before F and chunk-0 B in some of the four variants run,
 *    the one of least span kept); the rest at the end.  Where that span
 *    is longer (small m: m < 2p with equal times) or the rounds stall,
 *    the order of a list schedule event by event instead: an idle rank
 *    runs the ready B of the oldest micro-batch (the later chunk first),
 *    else a forward within the memory limit, else its oldest deferred W;
 *    a chunk-0 forward keeps room for none, one or all the chunk-1
 *    forwards the rank owes, the least span kept.  With equal times and
 *    m >= 2p the longest rank's span is its own work within one chunk
 *    pass; on Table 8's settings the paper's bubble rates within 0.03
 *    (tests/test_sched.c). */
int mm_schedule_steps(mm_schedule kind, int p, int s, int m, int v, mm_sched_step *out);

/* As mm_schedule_steps, with the pass times a timed schedule (ZB-2p, ZB-V)
 * orders by; t NULL: equal times, no transfer time.  The others ignore t. */
int mm_schedule_steps_timed(mm_schedule kind, int p, int s, int m, int v, const mm_sched_times *t,
                            mm_sched_step *out);

/* Every rank's steps at once, rank s's at out + s * mm_schedule_len():
 * the same orders as mm_schedule_steps_timed for each s, but a timed
 * schedule's list runs once, not once per rank.  Returns the length of
 * one rank's, or -1 (bad arguments, a list that stalls). */
int mm_schedule_steps_all(mm_schedule kind, int p, int m, int v, const mm_sched_times *t, mm_sched_step *out);

/* Number of steps a rank runs: 2mv, or 3mv for zero-bubble schedules. */
int mm_schedule_len(mm_schedule kind, int m, int v);

#endif
