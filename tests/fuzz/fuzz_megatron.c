/* fuzz_megatron.c - Megatron-LM inputs: the bytes read as a launch script
 * (scenario/mgscript.c, then the argument mapping of megatron.c) and as an
 * argument list (megatron.c). */
#include "fuzz.h"

#include <stdlib.h>

#include "scenario/megatron.h"

int mm_fuzz_megatron(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".sh");
    mm_megatron *mg = malloc(sizeof *mg);
    mm_err err;
    if (path && mg) {
        (void)mm_megatron_read_script(path, mg, &err);
        (void)mm_megatron_read(path, mg, &err);
    }
    free(mg);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_megatron)
