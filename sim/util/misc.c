/* misc.c - gcd and the host's monotonic clock (misc.h).
 * Not for: simulated time. */
#include "util/misc.h"

#include <time.h>

int mm_gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

double mm_host_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
