/* fuzz_mixture.c - a mixture YAML, and 16 samples drawn from it. */
#include "fuzz.h"

#include <stdlib.h>

#include "workload/workload.h"

int mm_fuzz_mixture(const uint8_t *data, size_t size)
{
    char *text = mm_fuzz_text(data, size);
    mm_mixture *mix = NULL;
    mm_err err;
    if (text && mm_mixture_load_string("fuzz.yaml", text, &mix, &err) == 0) {
        mm_sample s[16];
        (void)mm_mixture_draw(mix, 1, 0, 16, s, &err);
        mm_mixture_free(mix);
    }
    free(text);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_mixture)
