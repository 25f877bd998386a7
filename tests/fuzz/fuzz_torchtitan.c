/* fuzz_torchtitan.c - a torchtitan train config (TOML): parsed by
 * util/toml.c and mapped by scenario/torchtitan.c, as `mmsim run
 * --torchtitan FILE` reads it (the scenario load after it is the scenario
 * target's). */
#include "fuzz.h"

#include <stdlib.h>

#include "scenario/torchtitan.h"
#include "util/toml.h"

int mm_fuzz_torchtitan(const uint8_t *data, size_t size)
{
    mm_err err;
    const char *path = mm_fuzz_file(data, size, ".toml");
    mm_torchtitan *tt = malloc(sizeof *tt);
    if (path && tt)
        mm_torchtitan_read(path, tt, &err);
    free(tt);
    /* the parser alone on the text (cut at a NUL), as a string document */
    char *text = mm_fuzz_text(data, size);
    mm_toml t;
    if (text && mm_toml_load_string(&t, "fuzz.toml", text, &err) == 0) {
        for (int i = 0; i < t.n; i++)
            (void)mm_toml_get(&t, t.e[i].key);
        mm_toml_free(&t);
    }
    free(text);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_torchtitan)
