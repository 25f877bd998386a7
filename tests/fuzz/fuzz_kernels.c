/* fuzz_kernels.c - the kernel-efficiency CSVs (GEMM, attention, memory) and
 * the pass-times CSV: every input is offered to all four readers, which
 * refuse a header not theirs. */
#include "fuzz.h"

#include <stdlib.h>

#include "hw/efficiency.h"
#include "parallel/passtimes.h"

int mm_fuzz_kernels(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".csv");
    mm_kernel_tables *k = calloc(1, sizeof *k);
    mm_err err;
    if (path && k) {
        (void)mm_gemm_table_load(path, &k->gemm, &err);
        (void)mm_attn_table_load(path, &k->attn, &err);
        (void)mm_mem_table_load(path, &k->mem, &err);
        mm_pass_times pt;
        if (mm_pass_times_load(path, &pt, &err) == 0)
            mm_pass_times_free(&pt);
    }
    mm_kernel_tables_free(k);
    free(k);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_kernels)
