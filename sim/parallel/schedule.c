/* schedule.c - step orders of GPipe, 1F1B, interleaved 1F1B and ZB-H1.
 * Not for: dependencies or timing (build*.c emits the ops in this order). */
#include "parallel/schedule.h"

int mm_schedule_len(mm_schedule kind, int m, int v)
{
    return kind == MM_SCHEDULE_ZB_H1 ? 3 * m : 2 * m * v;
}

static int one_f_one_b(int p, int s, int m, mm_sched_step *out)
{
    int k = 0, warm = p - s - 1 < m ? p - s - 1 : m, f = 0, b = 0;
    for (; f < warm; f++)
        out[k++] = (mm_sched_step){MM_PASS_F, f, 0};
    while (f < m) {
        out[k++] = (mm_sched_step){MM_PASS_F, f++, 0};
        out[k++] = (mm_sched_step){MM_PASS_B, b++, 0};
    }
    while (b < m)
        out[k++] = (mm_sched_step){MM_PASS_B, b++, 0};
    return k;
}

/* Megatron-LM's mapping of the k-th forward (backward) step to a chunk and
 * a micro-batch. */
static mm_sched_step interleaved_step(int pass, int k, int p, int v)
{
    int in_group = k % (p * v);
    int chunk = in_group / p;
    if (pass == MM_PASS_B)
        chunk = v - 1 - chunk;
    return (mm_sched_step){pass, (k / (p * v)) * p + k % p, chunk};
}

static int interleaved(int p, int s, int m, int v, mm_sched_step *out)
{
    int total = m * v, k = 0;
    int warm = (p - s - 1) * 2 + (v - 1) * p;
    if (m == p || warm > total)
        warm = total; /* Megatron: all warm-up when m == p */
    for (int f = 0; f < warm; f++)
        out[k++] = interleaved_step(MM_PASS_F, f, p, v);
    for (int i = 0; i < total - warm; i++) {
        out[k++] = interleaved_step(MM_PASS_F, warm + i, p, v);
        out[k++] = interleaved_step(MM_PASS_B, i, p, v);
    }
    for (int b = total - warm; b < total; b++)
        out[k++] = interleaved_step(MM_PASS_B, b, p, v);
    return k;
}

/* 1F1B's F/B order with each W deferred until s more backwards ran. */
static int zb_h1(int p, int s, int m, mm_sched_step *out)
{
    int k = 0, warm = p - s - 1 < m ? p - s - 1 : m, f = 0, b = 0, w = 0;
    for (; f < warm; f++)
        out[k++] = (mm_sched_step){MM_PASS_F, f, 0};
    while (b < m) {
        if (f < m)
            out[k++] = (mm_sched_step){MM_PASS_F, f++, 0};
        out[k++] = (mm_sched_step){MM_PASS_B, b, 0};
        if (b++ >= s)
            out[k++] = (mm_sched_step){MM_PASS_W, w++, 0};
    }
    while (w < m)
        out[k++] = (mm_sched_step){MM_PASS_W, w++, 0};
    return k;
}

int mm_schedule_steps(mm_schedule kind, int p, int s, int m, int v, mm_sched_step *out)
{
    if (p < 1 || s < 0 || s >= p || m < 1 || v < 1)
        return -1;
    switch (kind) {
    case MM_SCHEDULE_GPIPE: {
        if (v != 1)
            return -1;
        int k = 0;
        for (int j = 0; j < m; j++)
            out[k++] = (mm_sched_step){MM_PASS_F, j, 0};
        for (int j = 0; j < m; j++)
            out[k++] = (mm_sched_step){MM_PASS_B, j, 0};
        return k;
    }
    case MM_SCHEDULE_1F1B:
        return v == 1 ? one_f_one_b(p, s, m, out) : -1;
    case MM_SCHEDULE_INTERLEAVED:
        if (m % p)
            return -1;
        return interleaved(p, s, m, v, out);
    case MM_SCHEDULE_ZB_H1:
        return v == 1 ? zb_h1(p, s, m, out) : -1;
    }
    return -1;
}
