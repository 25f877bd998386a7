/* bench_attn_core.c - mmsim's unfused attention core against a kernel-level
 * measurement of it: the FA2 paper's Fig. 4 "PyTorch standard" attention,
 * forward + backward on an A100-SXM4-80GB (tests/data/flash-attention/
 * pytorch_standard_fig4.csv, 16k tokens per call, hidden 2048, fp16,
 * dropout 0).
 *
 * What it is for: the one public timing of an unfused core's kernels at
 * head dims 64 and 128 (the EleutherAI cookbook times only head dim 256),
 * the kernels Megatron's legacy core shares with it (the batched GEMMs)
 * and those it does not (torch.softmax and the causal-mask add instead of
 * Megatron's fused scale-mask-softmax).  It prints, per row, the model's
 * forward and backward time of the benchmark's function
 * (flash-attention benchmarks/benchmark_flash_attention.py
 * `attention_pytorch`, 60499abc): the q and k rearrange copies and the v
 * copy einsum makes, baddbmm with the scale in its alpha, the fp32 causal
 * mask built and added when causal, torch.softmax, no dropout kernel at
 * p = 0, the value GEMM, and backward the GEMMs' gradients, the softmax
 * backward and unbind's stack of the q, k, v gradients; then the TFLOP/s
 * in the paper's count (4 b s^2 h d, halved when causal, x 3.5) against
 * the published, and the ratio.  docs/validation.md ("What the forward
 * still lacks") says what the ratios mean for the Zero Bubble and SC'21
 * checks.
 *
 * Not for: a test (it asserts nothing; tests/test_costs.c asserts the
 * kernels it is made of).  Usage: bench_attn_core [TOPOLOGY [CSV]]; a
 * topology or CSV it cannot read is named with its line and key (or
 * column) on stderr, exit status 2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cluster.h"
#include "hw/compute.h"
#include "model/llm.h"
#include "run/fwcost.h"

int main(int argc, char **argv)
{
    const char *topo = argc > 1 ? argv[1] : "topologies/dgx-a100.yaml";
    const char *csv = argc > 2 ? argv[2] : "tests/data/flash-attention/pytorch_standard_fig4.csv";
    static mm_cluster c;
    mm_err err;
    if (mm_cluster_load(topo, 1, &c, &err)) {
        fprintf(stderr, "bench_attn_core: %s:%d: %s: %s\n", err.file, err.line, err.key, err.msg);
        return 2;
    }
    FILE *f = fopen(csv, "r");
    if (!f) {
        fprintf(stderr, "bench_attn_core: cannot open %s\n", csv);
        mm_cluster_free(&c);
        return 2;
    }
    mm_fw_ctx ctx = {.gpu = &c.gpu, .dt = MM_DTYPE_FP16, .fw = NULL, .attn = MM_ATTN_IMPL_UNFUSED_EAGER,
                     .dtype_bytes = 2};
    char line[1024];
    int rows = 0, lineno = 1;
    double lo = 1e9, hi = 0, sum = 0;
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    printf("%-6s %4s %6s | %9s %9s | %-16s | %s\n", "causal", "d", "seq", "fwd (ms)", "bwd (ms)",
           "TFLOP/s sim/pub", "sim/pub");
    while (fgets(line, sizeof line, f)) {
        lineno++;
        /* causal (0/1), head_dim, seqlen, batch, nheads, tflops, source */
        static const char *const cols[] = {"causal", "head_dim", "seqlen", "batch", "nheads", "tflops"};
        double v[6];
        const char *bad = NULL, *p = line;
        for (int i = 0; i < 6 && !bad; i++) {
            char *end;
            v[i] = strtod(p, &end);
            if (end == p || *end != ',' || !(v[i] >= 0) || (i < 5 && v[i] != floor(v[i])) ||
                (i > 0 && !(v[i] > 0)) || (i == 0 && v[i] > 1))
                bad = cols[i];
            p = end + 1;
        }
        if (bad) {
            fprintf(stderr, "bench_attn_core: %s:%d: column '%s': expected causal (0 or 1), head_dim, seqlen, "
                            "batch, nheads (positive integers), tflops (> 0), source\n",
                    csv, lineno, bad);
            fclose(f);
            mm_cluster_free(&c);
            return 2;
        }
        int causal = (int)v[0], d = (int)v[1], s = (int)v[2], b = (int)v[3], h = (int)v[4];
        double pub = v[5];
        double tokens = (double)b * s, hidden = (double)h * d;
        mm_op_cost attn = {.name = "attn", .kind = MM_OPK_ATTN, .flops = 4.0 * b * h * (double)s * s * d,
                           .m = s, .n = s, .k = d, .batch = (double)b * h, .causal = causal != 0};
        mm_op_cost u[6];
        int n = mm_llm_attn_unfused_eager(&attn, 2, u, 6);
        double tf = 0, tb = 0;
        for (int i = 0; i < n; i++) {
            /* baddbmm's alpha scales (no k * scale kernel); dropout_p = 0
             * runs no kernel; the mask only when causal */
            if (!strcmp(u[i].name, "attn_kscale") || !strcmp(u[i].name, "attn_dropout") ||
                (!causal && !strcmp(u[i].name, "attn_mask")))
                continue;
            mm_pass_breakdown t = mm_fw_time_ops(&ctx, &u[i], 1);
            tf += mm_pass_breakdown_pass(&t, 0);
            tb += mm_pass_breakdown_pass(&t, 1) + mm_pass_breakdown_pass(&t, 2);
        }
        /* q, k, v copied out of the packed qkv (read and write each), and
         * their gradients stacked back into it */
        double copies = 3.0 * 2.0 * tokens * hidden * 2.0;
        tf += mm_mem_time(&c.gpu, copies);
        tb += mm_mem_time(&c.gpu, copies);
        double flops = 3.5 * 4.0 * b * (double)s * s * h * d / (causal ? 2.0 : 1.0);
        double sim = flops / (tf + tb) / 1e12, r = sim / pub;
        printf("%-6s %4d %6d | %9.3f %9.3f | %6.1f / %-7.0f | %.2f\n", causal ? "yes" : "no", d, s, tf * 1e3,
               tb * 1e3, sim, pub, r);
        lo = r < lo ? r : lo;
        hi = r > hi ? r : hi;
        sum += r;
        rows++;
    }
    fclose(f);
    if (rows)
        printf("sim/pub over %d rows: mean %.2f, range %.2f-%.2f\n", rows, sum / rows, lo, hi);
    mm_cluster_free(&c);
    return 0;
}
