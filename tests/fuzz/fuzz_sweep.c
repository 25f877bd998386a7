/* fuzz_sweep.c - a sweep YAML, expanded into its points. */
#include "fuzz.h"

#include <stdlib.h>

#include "plan/sweep.h"

int mm_fuzz_sweep(const uint8_t *data, size_t size)
{
    char *text = mm_fuzz_text(data, size);
    mm_sweep sw;
    mm_err err;
    if (text && mm_sweep_load_string(&sw, "fuzz.yaml", text, &err) == 0) {
        mm_sweep_points pts;
        if (mm_sweep_expand(&sw, &pts, &err) == 0)
            mm_sweep_points_free(&pts);
        mm_sweep_free(&sw);
    }
    free(text);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_sweep)
