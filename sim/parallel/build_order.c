/* build_order.c - the schedule order of a build spec's stage: the step
 * list of parallel/schedule.h with the spec's pass times for a timed
 * schedule (ZB-2p; ZB-V per virtual stage).  Its own file so the builder's files (build.c,
 * build_enc.c) and the memory that follows the data (cost/datamem.c) take
 * the same order without calling back into each other.
 * Not for: emitting ops (build*.c). */
#include "parallel/build.h"

#include <stdbool.h>
#include <stdlib.h>

/* The spec's pass times for a timed schedule (ZB-2p; ZB-V per virtual
 * stage) into tm, from *t (malloc'd, the caller frees it): 1, 0 when the
 * schedule is not timed here (tm unset), -1 when out of memory. */
static int timed(const mm_build_spec *sp, double **t, mm_sched_times *tm)
{
    int p = sp->lay.pp;
    bool zb2p = sp->schedule == MM_SCHEDULE_ZB_2P && sp->lay.vpp == 1;
    bool zbv = sp->schedule == MM_SCHEDULE_ZB_V && sp->lay.vpp == 2;
    *t = NULL;
    if (!(zb2p || zbv) || !sp->stages || p < 1)
        return 0;
    int V = p * sp->lay.vpp; /* ZB-V: times per virtual stage */
    double *x = malloc((size_t)V * 3 * sizeof *x);
    if (!x)
        return -1;
    for (int j = 0; j < V; j++) {
        const mm_stage_cost *c = &sp->stages[j];
        x[j] = c->fwd_s, x[V + j] = c->bwd_s - c->wgrad_s, x[2 * V + j] = c->wgrad_s;
    }
    *t = x;
    *tm = (mm_sched_times){x, x + V, x + 2 * V, sp->p2p_s > 0 ? sp->p2p_s : 0};
    return 1;
}

int mm_build_schedule_steps(const mm_build_spec *sp, int s, mm_sched_step *out)
{
    double *t;
    mm_sched_times tm;
    int k = timed(sp, &t, &tm);
    if (k <= 0)
        return k < 0 ? -1 : mm_schedule_steps(sp->schedule, sp->lay.pp, s, sp->m, sp->lay.vpp, out);
    int n = mm_schedule_steps_timed(sp->schedule, sp->lay.pp, s, sp->m, sp->lay.vpp, &tm, out);
    free(t);
    return n;
}

int mm_build_schedule_steps_all(const mm_build_spec *sp, mm_sched_step *out)
{
    double *t;
    mm_sched_times tm;
    int k = timed(sp, &t, &tm);
    if (k <= 0)
        return k < 0 ? -1 : mm_schedule_steps_all(sp->schedule, sp->lay.pp, sp->m, sp->lay.vpp, NULL, out);
    int n = mm_schedule_steps_all(sp->schedule, sp->lay.pp, sp->m, sp->lay.vpp, &tm, out);
    free(t);
    return n;
}
