/* compress.h - GPU compressors for communication (comm.compress): the
 * table of named compressors, what a scenario's choice resolves to (ratio
 * and kernel throughputs), and the kernel time of compressing or
 * decompressing a buffer on the GPU.
 * Not for: where the kernels go in the graph (parallel/build_llm.c) or
 * the collectives' times (hw/coll.c). */
#ifndef MM_COMPRESS_H
#define MM_COMPRESS_H

#include <stdbool.h>

/* One compressor.  ratio: input bytes over compressed bytes on fp32 data
 * (0: depends on the data and error bound, so a scenario gives it);
 * lossy: its buffers cannot be summed, so a reduction becomes an
 * all-gather of them (each rank decompresses the others' and adds);
 * compress_gb_s, decompress_gb_s: measured on `gpu` (a substring of the
 * topology's gpu.name), GB/s of uncompressed data (0: none published). */
typedef struct mm_compressor {
    const char *name;
    double ratio;
    bool lossy;
    const char *gpu;
    double compress_gb_s, decompress_gb_s;
    const char *source;
} mm_compressor;

/* "none" first (index 0), then the table's rows; NULL-terminated: the
 * choices of the comm.compress.dp and .pp keys. */
extern const char *const mm_compressor_names[];

/* Row `i` of the table (i >= 1), or NULL for "none" and out of range. */
const mm_compressor *mm_compressor_get(int i);

/* What compressor `i` runs at: the ratio `ratio` (> 0) or else the
 * table's, the throughputs given (> 0) or else the table's where the
 * row's GPU is `gpu_name`'s.  Returns 0, or which is missing: 1 the
 * ratio, 2 the compress, 3 the decompress throughput. */
typedef struct mm_compress_use {
    double ratio, compress_gb_s, decompress_gb_s;
} mm_compress_use;
int mm_compress_resolve(int i, double ratio, double compress_gb_s, double decompress_gb_s, const char *gpu_name,
                        mm_compress_use *out);

/* Seconds of one compress or decompress kernel over `bytes` of
 * uncompressed data at `gb_s` GB/s (1e9 bytes per second). */
double mm_compress_kernel_s(double bytes, double gb_s);

#endif
