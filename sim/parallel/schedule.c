/* schedule.c - GPipe and 1F1B step orders. */
#include "parallel/schedule.h"

int mm_schedule_steps(mm_schedule kind, int p, int s, int m, mm_sched_step *out)
{
    if (p < 1 || s < 0 || s >= p || m < 1)
        return -1;
    int k = 0;
    if (kind == MM_SCHEDULE_GPIPE) {
        for (int j = 0; j < m; j++)
            out[k++] = (mm_sched_step){MM_PASS_F, j};
        for (int j = 0; j < m; j++)
            out[k++] = (mm_sched_step){MM_PASS_B, j};
        return k;
    }
    int warm = p - s - 1 < m ? p - s - 1 : m;
    int f = 0, b = 0;
    for (; f < warm; f++)
        out[k++] = (mm_sched_step){MM_PASS_F, f};
    while (f < m) {
        out[k++] = (mm_sched_step){MM_PASS_F, f++};
        out[k++] = (mm_sched_step){MM_PASS_B, b++};
    }
    while (b < m)
        out[k++] = (mm_sched_step){MM_PASS_B, b++};
    return k;
}
