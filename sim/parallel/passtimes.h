/* passtimes.h - measured per-stage pass times fed into the pipeline
 * executor instead of the cost model, so a schedule can be checked apart
 * from the compute model (the Zero Bubble paper's Table 9 is such data).
 *
 * CSV (libcsv), one row per pipeline stage, header required:
 *     stage,f_ms,b_ms,w_ms,p2p_ms
 *     0,18.522,18.086,9.337,0.601
 * f = forward, b = backward input-gradient, w = weight-gradient (the whole
 * backward is b + w for schedules that do not split it), p2p = one
 * activation/gradient transfer between adjacent stages.  Milliseconds per
 * micro-batch.  Not for: per-micro-batch times or communication inside a
 * stage. */
#ifndef MM_PASSTIMES_H
#define MM_PASSTIMES_H

#include "util/err.h"

typedef struct mm_pass_times {
    int n_stages;
    double *f_s, *b_s, *w_s, *p2p_s; /* n_stages entries each, seconds */
} mm_pass_times;

/* Reads the file; rows must cover stages 0..n-1 exactly once, values finite
 * and >= 0.  Errors name the file, line and column (MM_EINPUT). */
int mm_pass_times_load(const char *path, mm_pass_times *pt, mm_err *err);
void mm_pass_times_free(mm_pass_times *pt);

#endif
