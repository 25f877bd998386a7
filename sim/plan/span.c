/* span.c - a pipeline's span from its passes' times (span.h): each rank's
 * order played on the dependencies.
 * Not for: the closed-form fill and drain of GPipe, 1F1B and ZB-H1
 * (estimate.c). */
#include "plan/span.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

double mm_span(const mm_span_in *in)
{
    int p = in->p, m = in->m, len = in->len, V = p * in->v;
    if (p < 1 || in->v < 1 || m < 1 || len < 1)
        return NAN;
    bool split = mm_schedule_splits_w(in->kind);
    double *fe = malloc((size_t)2 * V * m * sizeof *fe), *be = fe ? fe + (size_t)V * m : NULL;
    double *clock = calloc((size_t)p, sizeof *clock);
    int *next = calloc((size_t)p, sizeof *next);
    double span = NAN;
    if (!fe || !clock || !next)
        goto out;
    for (size_t k = 0; k < (size_t)2 * V * m; k++)
        fe[k] = -1; /* not run yet */
    /* every rank runs its next passes while their inputs are there; a
     * sweep in which no rank can run one is a cycle in the order */
    int left = p;
    while (left > 0) {
        bool moved = false;
        for (int s = 0; s < p; s++) {
            while (next[s] < len) {
                const mm_sched_step *x = &in->steps[(size_t)s * len + next[s]];
                int vs = mm_schedule_vstage(in->kind, p, s, x->chunk), j = x->mb;
                size_t k = (size_t)vs * m + j;
                double ready, t;
                if (x->pass == MM_PASS_F) {
                    ready = vs == 0 ? 0 : fe[k - m] < 0 ? -1 : fe[k - m] + in->hop[k - m];
                    t = in->f[k];
                } else if (x->pass == MM_PASS_B) {
                    ready = fe[k];
                    if (ready >= 0 && vs < V - 1)
                        ready = be[k + m] < 0 ? -1 : fmax(ready, be[k + m] + in->hop[k]);
                    t = split ? in->b[k] - in->w[k] : in->b[k];
                } else { /* W: after its B, earlier on this rank */
                    ready = be[k];
                    t = in->w[k];
                }
                if (ready < 0)
                    break;
                double end = fmax(clock[s], ready) + t;
                if (x->pass == MM_PASS_F)
                    fe[k] = end;
                else if (x->pass == MM_PASS_B)
                    be[k] = end;
                clock[s] = end;
                moved = true;
                if (++next[s] == len)
                    left--;
            }
        }
        if (!moved)
            goto out;
    }
    span = 0;
    for (int s = 0; s < p; s++)
        span = fmax(span, clock[s]);
out:
    free(fe);
    free(clock);
    free(next);
    return span;
}
