/* bench_attn_core.c - mmsim's unfused attention core against kernel-level
 * measurements of it: the "PyTorch standard" attention bars of the FA2
 * paper's Fig. 4 (forward + backward, A100-SXM4-80GB; tests/data/
 * flash-attention/pytorch_standard_fig4.csv) and of the FA3 paper's Figs. 5
 * and 6 with the FA2 paper's Fig. 7 (forward, backward and both, H100-SXM5;
 * pytorch_standard_h100.csv), 16k tokens per call, hidden 2048, 16-bit,
 * dropout 0.
 *
 * What it is for: the public timings of an unfused core's kernels at head
 * dims 64 and 128 (the EleutherAI cookbook times only head dim 256), the
 * kernels Megatron's legacy core shares with it (the batched GEMMs) and
 * those it does not (torch.softmax and the causal-mask add instead of
 * Megatron's fused scale-mask-softmax); the H100 rows time the forward and
 * the backward apart.  It prints, per row, the model's forward and backward
 * time of the benchmark's function (flash-attention benchmarks/
 * benchmark_flash_attention.py `attention_pytorch`, the same at 60499abc
 * and 7ef24848): the q and k rearrange copies and the v copy einsum makes,
 * baddbmm with the scale in its alpha, the fp32 causal mask built and added
 * when causal, torch.softmax, no dropout kernel at p = 0, the value GEMM,
 * and backward the GEMMs' gradients, the softmax backward and unbind's
 * stack of the q, k, v gradients; then the TFLOP/s of the row's pass
 * (`pass`: fwd, bwd or fwd+bwd) in the paper's count (4 b s^2 h d, halved
 * when causal; backward 2.5x, both 3.5x) against the published, and the
 * ratio; last, the mean and range of the ratio per pass.
 * docs/validation.md ("The unfused core at kernel level") says what the
 * ratios mean for the Zero Bubble and SC'21 checks.
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
#include "model/framework_ops.h"
#include "model/llm.h"
#include "cost/fwcost.h"

/* per pass: fwd, bwd, fwd+bwd */
static const char *const passes[] = {"fwd", "bwd", "fwd+bwd"};

/* A row of the CSV: causal (0/1), head_dim, seqlen, batch, nheads, pass,
 * tflops, source into v (pass into *pass); the name of the first column
 * that is not as expected, or NULL. */
static const char *parse_row(const char *line, double v[7], int *pass)
{
    static const char *const cols[] = {"causal", "head_dim", "seqlen", "batch", "nheads", "pass", "tflops"};
    const char *bad = NULL, *p = line;
    for (int i = 0; i < 7 && !bad; i++) {
        if (i == 5) {
            size_t len = strcspn(p, ",");
            for (int k = 0; k < 3 && *pass < 0; k++)
                if (len == strlen(passes[k]) && !strncmp(p, passes[k], len))
                    *pass = k;
            if (*pass < 0 || p[len] != ',')
                bad = cols[i];
            p += len + 1;
            continue;
        }
        char *end;
        v[i] = strtod(p, &end);
        if (end == p || *end != ',' || !(v[i] >= 0) || (i < 5 && v[i] != floor(v[i])) ||
            (i > 0 && !(v[i] > 0)) || (i == 0 && v[i] > 1))
            bad = cols[i];
        p = end + 1;
    }
    return bad;
}

/* The model's forward (*tf) and backward (*tb) time of the benchmark's
 * function for the row v. */
static void model_times(const mm_fw_ctx *ctx, const double v[7], double *tf, double *tb)
{
    int causal = (int)v[0], d = (int)v[1], s = (int)v[2], b = (int)v[3], h = (int)v[4];
    double tokens = (double)b * s, hidden = (double)h * d;
    mm_op_cost attn = {.name = "attn", .kind = MM_OPK_ATTN, .flops = 4.0 * b * h * (double)s * s * d,
                       .m = s, .n = s, .k = d, .batch = (double)b * h, .causal = causal != 0};
    mm_op_cost u[6];
    int n = mm_framework_attn_unfused_eager(&attn, 2, u, 6);
    for (int i = 0; i < n; i++) {
        /* baddbmm's alpha scales (no k * scale kernel); dropout_p = 0
         * runs no kernel; the mask only when causal */
        if (!strcmp(u[i].name, "attn_kscale") || !strcmp(u[i].name, "attn_dropout") ||
            (!causal && !strcmp(u[i].name, "attn_mask")))
            continue;
        mm_pass_breakdown t = mm_fw_time_ops(ctx, &u[i], 1);
        *tf += mm_pass_breakdown_pass(&t, 0);
        *tb += mm_pass_breakdown_pass(&t, 1) + mm_pass_breakdown_pass(&t, 2);
    }
    /* q, k, v copied out of the packed qkv (read and write each), and
     * their gradients stacked back into it */
    double copies = 3.0 * 2.0 * tokens * hidden * 2.0;
    *tf += mm_mem_time(ctx->gpu, copies);
    *tb += mm_mem_time(ctx->gpu, copies);
}

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
    int lineno = 1;
    /* per pass (fwd, bwd, fwd+bwd): rows, sum, lowest and highest ratio */
    int rows[3] = {0};
    double lo[3] = {1e9, 1e9, 1e9}, hi[3] = {0}, sum[3] = {0};
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    printf("%-6s %4s %6s %-7s | %9s %9s | %-16s | %s\n", "causal", "d", "seq", "pass", "fwd (ms)", "bwd (ms)",
           "TFLOP/s sim/pub", "sim/pub");
    while (fgets(line, sizeof line, f)) {
        lineno++;
        double v[7] = {0};
        int pass = -1;
        const char *bad = parse_row(line, v, &pass);
        if (bad) {
            fprintf(stderr, "bench_attn_core: %s:%d: column '%s': expected causal (0 or 1), head_dim, seqlen, "
                            "batch, nheads (positive integers), pass (fwd, bwd or fwd+bwd), tflops (> 0), "
                            "source\n",
                    csv, lineno, bad);
            fclose(f);
            mm_cluster_free(&c);
            return 2;
        }
        int causal = (int)v[0], d = (int)v[1], s = (int)v[2], b = (int)v[3], h = (int)v[4];
        double pub = v[6];
        double tf = 0, tb = 0;
        model_times(&ctx, v, &tf, &tb);
        /* the paper's count: forward 4 b s^2 h d (halved when causal),
         * backward 2.5x, both 3.5x */
        double fwd_flops = 4.0 * b * (double)s * s * h * d / (causal ? 2.0 : 1.0);
        double flops = fwd_flops * (pass == 0 ? 1.0 : pass == 1 ? 2.5 : 3.5);
        double t = pass == 0 ? tf : pass == 1 ? tb : tf + tb;
        double sim = flops / t / 1e12, r = sim / pub;
        printf("%-6s %4d %6d %-7s | %9.3f %9.3f | %6.1f / %-7.0f | %.2f\n", causal ? "yes" : "no", d, s,
               passes[pass], tf * 1e3, tb * 1e3, sim, pub, r);
        lo[pass] = r < lo[pass] ? r : lo[pass];
        hi[pass] = r > hi[pass] ? r : hi[pass];
        sum[pass] += r;
        rows[pass]++;
    }
    fclose(f);
    for (int k = 0; k < 3; k++)
        if (rows[k])
            printf("sim/pub, %s, over %d rows: mean %.2f, range %.2f-%.2f\n", passes[k], rows[k], sum[k] / rows[k],
                   lo[k], hi[k]);
    mm_cluster_free(&c);
    return 0;
}
