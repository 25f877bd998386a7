/* fuzz_framework.c - a framework profile (frameworks/NAME.yaml): every
 * section, the host's included, read into an mm_framework. */
#include "fuzz.h"

#include "model/framework.h"

int mm_fuzz_framework(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".yaml");
    mm_framework fw;
    mm_err err;
    if (path)
        (void)mm_framework_load(path, &fw, &err);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_framework)
