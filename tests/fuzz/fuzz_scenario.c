/* fuzz_scenario.c - a scenario YAML file, read and written back canonically. */
#include "fuzz.h"

#include <stdlib.h>

#include "scenario/scenario.h"

int mm_fuzz_scenario(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".yaml");
    mm_scenario *sc = calloc(1, sizeof *sc);
    mm_err err;
    if (path && sc && mm_scenario_load(sc, path, NULL, 0, &err) == 0)
        free(mm_scenario_canonical_alloc(sc));
    if (sc)
        mm_scenario_free(sc);
    free(sc);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_scenario)
