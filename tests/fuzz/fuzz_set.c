/* fuzz_set.c - `--set KEY=VALUE` overrides on the built-in default: each
 * line of the input is one override (at most 8). */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "scenario/scenario.h"

int mm_fuzz_set(const uint8_t *data, size_t size)
{
    char *text = mm_fuzz_text(data, size);
    mm_scenario *sc = calloc(1, sizeof *sc);
    const char *sets[8];
    int n = 0;
    for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; line && n < 8;
         line = strtok_r(NULL, "\n", &save))
        sets[n++] = line;
    mm_err err;
    if (sc && text && mm_scenario_load(sc, NULL, sets, n, &err) == 0)
        free(mm_scenario_canonical_alloc(sc));
    if (sc)
        mm_scenario_free(sc);
    free(sc);
    free(text);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_set)
