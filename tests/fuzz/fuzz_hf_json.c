/* fuzz_hf_json.c - a Hugging Face config.json (an LLM or an MLLM's parts). */
#include "fuzz.h"

#include <stdlib.h>

#include "model/mllm.h"

int mm_fuzz_hf_json(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".json");
    mm_model *m = calloc(1, sizeof *m);
    mm_err err;
    if (path && m)
        (void)mm_model_load(path, m, &err);
    free(m);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_hf_json)
