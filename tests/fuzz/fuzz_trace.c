/* fuzz_trace.c - a per-sample trace CSV, and 16 samples replayed from it. */
#include "fuzz.h"

#include "workload/workload.h"

int mm_fuzz_trace(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".csv");
    mm_sample_trace t;
    mm_err err;
    if (path && mm_sample_trace_load(path, &t, &err) == 0) {
        mm_sample s[16];
        mm_sample_trace_draw(&t, 3, 16, s);
        mm_sample_trace_free(&t);
    }
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_trace)
