/* compress.c - the compressor table (compress.h), each row with its
 * source.  Not for: building the graph (parallel/build_llm.c). */
#include "hw/compress.h"

#include <stddef.h>
#include <string.h>

/* ZFP's fixed-rate mode stores `rate` bits per value (zfp(1), zfp 1.0.0:
 * "-r <rate> : fixed rate (# compressed bits per floating-point value)";
 * LLNL/zfp), so fp32 data shrinks 32/rate times.  Fixed rate is the mode
 * zfp's CUDA back end runs (LLNL/zfp src/template/cudacompress.c: only
 * zfp_mode_fixed_rate goes to cuda_compress) and the one Xu et al. use,
 * aggressive on DP gradients and milder elsewhere ("Accelerating Large
 * Language Model Training with Hybrid GPU-based Compression", arXiv
 * 2409.02423).  No GPU throughput of cuZFP is in the reference set: a
 * scenario gives it.
 * cuSZp2: mean end-to-end throughput over 9 HPC datasets on an A100, 332.42
 * GB/s compressing and 513.04 GB/s decompressing (Huang et al., "cuSZp2: A
 * GPU Lossy Compressor with Extreme Throughput and Optimized Compression
 * Ratio", SC'24, abstract); its ratio follows the error bound and the
 * data, so a scenario gives it. */
static const mm_compressor table[] = {
    {"zfp-r4", 32.0 / 4, true, NULL, 0, 0, "zfp fixed rate 4 bits/value (zfp(1) -r)"},
    {"zfp-r8", 32.0 / 8, true, NULL, 0, 0, "zfp fixed rate 8 bits/value (zfp(1) -r)"},
    {"zfp-r16", 32.0 / 16, true, NULL, 0, 0, "zfp fixed rate 16 bits/value (zfp(1) -r)"},
    {"cuszp2", 0, true, "A100", 332.42, 513.04, "cuSZp2, SC'24 abstract: mean of 9 datasets on A100"},
};

const char *const mm_compressor_names[] = {"none", "zfp-r4", "zfp-r8", "zfp-r16", "cuszp2", NULL};

const mm_compressor *mm_compressor_get(int i)
{
    if (i < 1 || (size_t)i > sizeof table / sizeof table[0])
        return NULL;
    return &table[i - 1];
}

int mm_compress_resolve(int i, double ratio, double compress_gb_s, double decompress_gb_s, const char *gpu_name,
                        mm_compress_use *out)
{
    const mm_compressor *z = mm_compressor_get(i);
    *out = (mm_compress_use){0};
    if (!z)
        return 0;
    bool here = z->gpu && gpu_name && strstr(gpu_name, z->gpu);
    out->ratio = ratio > 0 ? ratio : z->ratio;
    out->compress_gb_s = compress_gb_s > 0 ? compress_gb_s : here ? z->compress_gb_s : 0;
    out->decompress_gb_s = decompress_gb_s > 0 ? decompress_gb_s : here ? z->decompress_gb_s : 0;
    return !(out->ratio > 0) ? 1 : !(out->compress_gb_s > 0) ? 2 : !(out->decompress_gb_s > 0) ? 3 : 0;
}

double mm_compress_kernel_s(double bytes, double gb_s)
{
    return gb_s > 0 && bytes > 0 ? bytes / (gb_s * 1e9) : 0.0;
}
