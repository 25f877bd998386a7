/* misc.h - two small helpers every layer may need: the greatest common
 * divisor of two ints, and the host's monotonic clock in seconds (for wall
 * times that are reported, never for simulated time).
 * Not for: simulated time (engine/engine.h), or anything that changes a
 * simulated number. */
#ifndef MM_UTIL_MISC_H
#define MM_UTIL_MISC_H

/* gcd(a, 0) = a; for a, b >= 0. */
int mm_gcd(int a, int b);

/* CLOCK_MONOTONIC in seconds. */
double mm_host_seconds(void);

#endif
