/* build_order.c - the schedule order of a build spec's stage: the step
 * list of parallel/schedule.h with the spec's pass times for a timed
 * schedule (ZB-2p; ZB-V per virtual stage).  Its own file so the builder's files (build.c,
 * build_enc.c) and the memory that follows the data (cost/datamem.c) take
 * the same order without calling back into each other.
 * Not for: emitting ops (build*.c). */
#include "parallel/build.h"

#include <stdbool.h>
#include <stdlib.h>

int mm_build_schedule_steps(const mm_build_spec *sp, int s, mm_sched_step *out)
{
    int p = sp->lay.pp;
    bool zb2p = sp->schedule == MM_SCHEDULE_ZB_2P && sp->lay.vpp == 1;
    bool zbv = sp->schedule == MM_SCHEDULE_ZB_V && sp->lay.vpp == 2;
    if (!(zb2p || zbv) || !sp->stages || p < 1)
        return mm_schedule_steps(sp->schedule, p, s, sp->m, sp->lay.vpp, out);
    int V = p * sp->lay.vpp; /* ZB-V: times per virtual stage */
    double *t = malloc((size_t)V * 3 * sizeof *t);
    if (!t)
        return -1;
    for (int j = 0; j < V; j++) {
        const mm_stage_cost *c = &sp->stages[j];
        t[j] = c->fwd_s, t[V + j] = c->bwd_s - c->wgrad_s, t[2 * V + j] = c->wgrad_s;
    }
    mm_sched_times tm = {t, t + V, t + 2 * V, sp->p2p_s > 0 ? sp->p2p_s : 0};
    int n = mm_schedule_steps_timed(sp->schedule, p, s, sp->m, sp->lay.vpp, &tm, out);
    free(t);
    return n;
}

int mm_build_schedule_steps_all(const mm_build_spec *sp, mm_sched_step *out)
{
    int p = sp->lay.pp;
    bool zb2p = sp->schedule == MM_SCHEDULE_ZB_2P && sp->lay.vpp == 1;
    bool zbv = sp->schedule == MM_SCHEDULE_ZB_V && sp->lay.vpp == 2;
    if (!(zb2p || zbv) || !sp->stages || p < 1)
        return mm_schedule_steps_all(sp->schedule, p, sp->m, sp->lay.vpp, NULL, out);
    int V = p * sp->lay.vpp;
    double *t = malloc((size_t)V * 3 * sizeof *t);
    if (!t)
        return -1;
    for (int j = 0; j < V; j++) {
        const mm_stage_cost *c = &sp->stages[j];
        t[j] = c->fwd_s, t[V + j] = c->bwd_s - c->wgrad_s, t[2 * V + j] = c->wgrad_s;
    }
    mm_sched_times tm = {t, t + V, t + 2 * V, sp->p2p_s > 0 ? sp->p2p_s : 0};
    int n = mm_schedule_steps_all(sp->schedule, p, sp->m, sp->lay.vpp, &tm, out);
    free(t);
    return n;
}
