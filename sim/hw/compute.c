/* compute.c - the roofline kernel-time model (Williams, Waterman and
 * Patterson, "Roofline", CACM 2009) with per-kind efficiency factors. */
#include "hw/compute.h"

#include <math.h>

double mm_compute_time(const mm_gpu_spec *g, mm_dtype dt, mm_kernel_kind kind,
                       double flops, double bytes)
{
    double peak = g->peak_flops[dt];
    if (!(peak > 0))
        peak = g->peak_flops[MM_DTYPE_BF16];
    double eff = kind == MM_KERNEL_ATTN ? g->attn_eff : g->gemm_eff;
    double t_flops = kind == MM_KERNEL_MEM ? 0.0 : flops / (peak * eff);
    double t_bytes = bytes / (g->hbm_bw * g->mem_eff);
    return fmax(t_flops, t_bytes) + g->kernel_overhead_s;
}
