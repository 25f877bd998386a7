/* fuzz.h - what the fuzz targets of tests/fuzz share.
 *
 * Each target is a function mm_fuzz_NAME(data, size) that feeds one input to
 * one parser of libmmsim and frees what it built; it must not crash, leak or
 * hang whatever the bytes.  Built with -DMM_FUZZ_LIBFUZZER (scripts/fuzz,
 * clang -fsanitize=fuzzer) each file also defines LLVMFuzzerTestOneInput;
 * built without (every normal test build, gcc), tests/test_fuzz.c links them
 * all and replays tests/data/fuzz/NAME/ so that a finding stays fixed
 * without needing clang.
 * Not for: checking the parsers' answers (the suites of tests/ do that). */
#ifndef MM_FUZZ_H
#define MM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Writes the input to a temporary file of this process ending in `suffix`
 * (".yaml", ".json", ".csv": the readers choose JSON mode by the name) and
 * returns its path, or NULL when it cannot.  The file is reused by later
 * calls and removed at exit. */
const char *mm_fuzz_file(const uint8_t *data, size_t size, const char *suffix);

/* A NUL-terminated copy of the input (cut at its first NUL); caller frees. */
char *mm_fuzz_text(const uint8_t *data, size_t size);

int mm_fuzz_scenario(const uint8_t *data, size_t size);
int mm_fuzz_set(const uint8_t *data, size_t size);
int mm_fuzz_hf_json(const uint8_t *data, size_t size);
int mm_fuzz_topology(const uint8_t *data, size_t size);
int mm_fuzz_kernels(const uint8_t *data, size_t size);
int mm_fuzz_mixture(const uint8_t *data, size_t size);
int mm_fuzz_trace(const uint8_t *data, size_t size);
int mm_fuzz_sweep(const uint8_t *data, size_t size);
int mm_fuzz_megatron(const uint8_t *data, size_t size);
int mm_fuzz_torchtitan(const uint8_t *data, size_t size);
int mm_fuzz_framework(const uint8_t *data, size_t size);
int mm_fuzz_loadrates(const uint8_t *data, size_t size);

#ifdef MM_FUZZ_LIBFUZZER
#define MM_FUZZ_ENTRY(fn)                                                                      \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                              \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fn(data, size); }
#else
#define MM_FUZZ_ENTRY(fn)
#endif

#endif
