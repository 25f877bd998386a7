/* flow_internal.h - what flow.c and maxmin.c (the solver, split off to
 * keep each file readable) share: the solver's kept scratch and its entry
 * points.  Private to sim/hw; callers use flow.h. */
#ifndef MM_FLOW_INTERNAL_H
#define MM_FLOW_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hw/flow.h"

/* An entry of the solver's lazy heap of links. */
typedef struct lheap_ent {
    double ratio;
    int32_t link;
} lheap_ent;

/* Scratch of the solver, kept between calls so that a flow network solves
 * without allocating once its largest component has been seen. */
typedef struct mm_solve_buf {
    double *C, *W;
    uint32_t *unf, *loff, *fill;
    int32_t *lf, *act; /* act: links still unfrozen (the scan) */
    uint8_t *frozen;
    lheap_ent *h;
    size_t cl, ce, cf; /* capacities: links, entries, flows */
} mm_solve_buf;

void mm_solve_buf_free(mm_solve_buf *b);
/* Makes room for L links, E entries, F flows (doubling).  0 or -1. */
int mm_solve_buf_fit(mm_solve_buf *b, size_t L, size_t E, size_t F);
/* Links 0..L-1, flows 0..F-1 in CSR (off, lk, cf): each flow's max-min
 * rate into rate[].  0 or -1 (out of memory). */
int mm_solve_buf_solve(mm_solve_buf *b, int L, const double *cap, int F, const uint32_t *off, const int32_t *lk,
                       const double *cf, double *rate);
/* realloc of *p to n elements of elem bytes; 0, or -1 (*p kept). */
int mm_flow_regrow(void **p, size_t n, size_t elem);

#endif
