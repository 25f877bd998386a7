/* fuzz_loadrates.c - a data loader rates file (frameworks/
 * loader-rates.yaml): every entry's value and source read into an
 * mm_loader_rates. */
#include "fuzz.h"

#include "model/loadrates.h"

int mm_fuzz_loadrates(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".yaml");
    mm_loader_rates r;
    mm_err err;
    if (path)
        (void)mm_loader_rates_load(path, &r, &err);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_loadrates)
