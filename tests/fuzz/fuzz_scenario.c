/* fuzz_scenario.c - a scenario YAML file, read and written back
 * canonically; a scenario that holds its model inline must also read its
 * canonical text back to the same text (the inline model's emitter quotes
 * what needs quoting), or the target aborts. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "scenario/scenario.h"

int mm_fuzz_scenario(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".yaml");
    mm_scenario *sc = calloc(1, sizeof *sc), *back = calloc(1, sizeof *back);
    mm_err err;
    if (path && sc && back && mm_scenario_load(sc, path, NULL, 0, &err) == 0) {
        char *text = mm_scenario_canonical_alloc(sc);
        if (text && mm_scenario_model_inline(sc)) {
            if (mm_scenario_load_text(back, path, text, NULL, 0, &err) != 0)
                abort();
            char *again = mm_scenario_canonical_alloc(back);
            if (again && strcmp(text, again) != 0)
                abort();
            free(again);
            mm_scenario_free(back);
        }
        free(text);
    }
    if (sc)
        mm_scenario_free(sc);
    free(sc);
    free(back);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_scenario)
