/* compute.c - the roofline kernel-time model (Williams, Waterman and
 * Patterson, "Roofline", CACM 2009) with shape-dependent efficiency from
 * measured tables (efficiency.c), or one factor per kernel kind when a GPU
 * has no tables.  Not for: op lists (sim/model). */
#include "hw/compute.h"

#include <math.h>

static double peak_of(const mm_gpu_spec *g, mm_dtype dt)
{
    double peak = g->peak_flops[dt];
    return peak > 0 ? peak : g->peak_flops[MM_DTYPE_BF16];
}

/* The SM clock held under sustained load over the tables' clock
 * (gpu.sustained_clock_ratio, cluster.h): what the clock bounds (tensor
 * cores, the SMs' integer pipes) runs at this times the measured rate.  A
 * spec built without the key (0) is the tables as measured. */
static double clock_of(const mm_gpu_spec *g)
{
    return g->sustained_clock_ratio > 0 ? g->sustained_clock_ratio : 1.0;
}

double mm_compute_time(const mm_gpu_spec *g, mm_dtype dt, mm_kernel_kind kind,
                       double flops, double bytes)
{
    double peak = peak_of(g, dt);
    double eff = kind == MM_KERNEL_ATTN ? g->attn_eff : g->gemm_eff;
    double t_flops = kind == MM_KERNEL_MEM ? 0.0 : flops / (peak * eff * clock_of(g));
    double t_bytes = bytes / (g->hbm_bw * g->mem_eff);
    return fmax(t_flops, t_bytes) + g->kernel_overhead_s;
}

double mm_mem_eff(const mm_gpu_spec *g, double bytes)
{
    return g->kernels.has_mem ? mm_mem_table_eff(&g->kernels.mem, bytes) : g->mem_eff;
}

double mm_mem_time(const mm_gpu_spec *g, double bytes)
{
    if (!(bytes > 0))
        return g->kernel_overhead_s;
    return bytes / (g->hbm_bw * mm_mem_eff(g, bytes)) + g->kernel_overhead_s;
}

/* TorchScript's fusers (the legacy fuser, nvFuser) emit one generic
 * elementwise kernel per fused graph; on the A100 those of Megatron's
 * bias-GeLU and bias-dropout-add run well below the hand-written kernels
 * the memory table holds (the measurement is in each topology file). */
double mm_jit_mem_time(const mm_gpu_spec *g, double bytes)
{
    if (!(bytes > 0) || !(g->jit_mem_eff > 0))
        return mm_mem_time(g, bytes);
    return bytes / (g->hbm_bw * g->jit_mem_eff) + g->kernel_overhead_s;
}

/* torch's fused dropout (ATen fused_dropout_kernel) draws four uniforms
 * per Philox4x32-10 call, ten rounds of 32-bit multiplies and xors per
 * call: integer work of the same order as the bytes it moves on an A100,
 * so the mask generation, not HBM, bounds it there (the rate's source is
 * in each topology file). */
double mm_dropout_time(const mm_gpu_spec *g, double bytes, double draws)
{
    double t = mm_mem_time(g, bytes);
    if (draws > 0 && g->dropout_elems_s > 0)
        t = fmax(t, draws / (g->dropout_elems_s * clock_of(g)) + g->kernel_overhead_s);
    return t;
}

double mm_gemm_time(const mm_gpu_spec *g, mm_dtype dt, double m, double n, double k,
                    double batch, double bytes)
{
    double flops = 2.0 * m * n * k * batch;
    if (!(flops > 0))
        return mm_mem_time(g, bytes);
    double peak = peak_of(g, dt), rate;
    if (g->kernels.has_gemm) {
        /* A batched GEMM (attention's Q K^T and P V without flash kernels,
         * MoE experts) has batch x tiles(m) x tiles(n) output tiles to
         * spread over the SMs: it fills the GPU like the single GEMM of the
         * same output area, looked up at that square shape (the table
         * then clamps it at its largest m and n), with its own k, which
         * sets each tile's main loop against its fixed prologue and
         * epilogue.  Stacking the batch along m alone left a narrow n (the
         * head dim of P V) at the table's n-starved small single GEMMs: the
         * EleutherAI cookbook's A100 batched GEMMs (bmm 128 x 1024^3 at
         * 227, k 2048 at 243, attention score and value products at head
         * dim 256 at 130 and 219 TFLOP/s; tests/test_costs.c) ran 1.3-2.2x
         * faster than that gave.  A short inner dimension (the head dim of
         * Q K^T) pays a tile's fixed cost below the table's smallest k
         * (the table's rule, mm_short_k_factor) and is limited by the
         * bytes it moves (the roofline below). */
        const mm_gemm_table *tb = &g->kernels.gemm;
        double nn = n, mm = m;
        if (batch > 1 && tb->nn > 0 && n < tb->n[0])
            nn = tb->n[0];
        if (batch > 1)
            mm = nn = sqrt(m * nn * batch);
        rate = mm_gemm_table_tflops(tb, mm, nn, k) * 1e12;
        if (dt == MM_DTYPE_FP8 && g->peak_flops[MM_DTYPE_FP8] > 0)
            rate *= g->fp8_gemm_speedup;
        rate = fmin(rate, peak);
    } else {
        rate = peak * g->gemm_eff;
    }
    rate *= clock_of(g);
    double t_bytes = bytes > 0 ? bytes / (g->hbm_bw * mm_mem_eff(g, bytes)) : 0.0;
    return fmax(flops / rate, t_bytes) + g->kernel_overhead_s;
}

double mm_grouped_gemm_time(const mm_gpu_spec *g, mm_dtype dt, const mm_gemm_shape *s, int n, int streams,
                            double bytes)
{
    double sum = 0, longest = 0, count = 0, flops = 0, mw = 0, kw = 0, o = g->kernel_overhead_s;
    for (int i = 0; i < n; i++) {
        if (!(s[i].count > 0) || !(s[i].m * s[i].n * s[i].k > 0))
            continue;
        double one = mm_gemm_time(g, dt, s[i].m, s[i].n, s[i].k, 1.0, 0.0) - o;
        sum += s[i].count * one;
        longest = fmax(longest, one);
        count += s[i].count;
        flops += s[i].count * s[i].m * s[i].n * s[i].k;
        mw += s[i].count * s[i].m;
        kw += s[i].count * s[i].k;
    }
    if (!(count > 0))
        return mm_mem_time(g, bytes);
    /* the whole as one batched GEMM of the mean shape (same n; the mean m
     * and k of the problems, which keeps the total FLOPs when only one of
     * them varies, as in an expert GEMM's passes) */
    double mm = mw / count, kk = kw / count, nn = flops / (count * mm * kk);
    double filled = mm_gemm_time(g, dt, mm, nn, kk, count, 0.0) - o;
    double t = fmax(fmax(sum / (streams > 1 ? streams : 1), longest), filled);
    double t_bytes = bytes > 0 ? bytes / (g->hbm_bw * mm_mem_eff(g, bytes)) : 0.0;
    return fmax(t, t_bytes) + o;
}

double mm_attn_time_impl(const mm_gpu_spec *g, mm_attn_impl impl, mm_dtype dt, double flops, double seqlen,
                         double head_dim, bool causal, mm_attn_pass pass, double bytes)
{
    /* FlashAttention papers' FLOP count: causal halves, backward 2.5x */
    double f = (causal ? 0.5 : 1.0) * flops * (pass == MM_ATTN_BWD ? 2.5 : pass == MM_ATTN_FWDBWD ? 3.5 : 1.0);
    if (!(f > 0))
        return mm_mem_time(g, bytes);
    double peak = peak_of(g, dt), rate = NAN;
    const mm_attn_table *t = mm_kernel_attn_table(&g->kernels, impl);
    if (t)
        rate = mm_attn_table_tflops(t, seqlen, head_dim, causal, pass) * 1e12;
    if (!(rate > 0))
        rate = peak * g->attn_eff;
    rate = fmin(rate, peak) * clock_of(g);
    double t_bytes = bytes > 0 ? bytes / (g->hbm_bw * mm_mem_eff(g, bytes)) : 0.0;
    return fmax(f / rate, t_bytes) + g->kernel_overhead_s;
}

double mm_attn_time(const mm_gpu_spec *g, mm_dtype dt, double flops, double seqlen,
                    double head_dim, bool causal, mm_attn_pass pass, double bytes)
{
    return mm_attn_time_impl(g, MM_ATTN_IMPL_FLASH, dt, flops, seqlen, head_dim, causal, pass, bytes);
}
