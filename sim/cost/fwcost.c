/* fwcost.c - a layer's kernels as the framework runs them, timed with
 * the GPU's tables (fwcost.h).
 * Not for: which framework or attention kernel a scenario uses (the cost
 * bridge resolves them), communication or memory. */
#include "cost/fwcost.h"

#include <math.h>
#include <string.h>

#include "hw/compute.h"
#include "model/framework_ops.h"

const char *const mm_bk_kind_names[] = {"gemm", "attention", "memory", NULL};
const char *const mm_bk_pass_names[] = {"fwd", "bgrad", "wgrad", NULL};

double mm_pass_breakdown_kind(const mm_pass_breakdown *b, int pass, int kind) { return b->s[pass][kind]; }

double mm_pass_breakdown_pass(const mm_pass_breakdown *b, int pass)
{
    double t = 0;
    for (int k = 0; k < MM_BK_KINDS; k++)
        t += b->s[pass][k];
    return t;
}

void mm_pass_breakdown_add(mm_pass_breakdown *acc, const mm_pass_breakdown *a, double k)
{
    for (int p = 0; p < 3; p++)
        for (int j = 0; j < MM_BK_KINDS; j++)
            acc->s[p][j] += k * a->s[p][j];
    for (int p = 0; p < 3; p++) {
        acc->launches[p] += k * a->launches[p];
        acc->host_s[p] += k * a->host_s[p];
    }
    acc->attn_core_fwd += k * a->attn_core_fwd;
    acc->attn_core_launches += k * a->attn_core_launches;
    acc->attn_core_host_s += k * a->attn_core_host_s;
    for (int p = 0; p < 2; p++) {
        acc->cp_diag[p] += k * a->cp_diag[p];
        acc->cp_off[p] += k * a->cp_off[p];
    }
}

/* The experts' grouped GEMM of one pass: each group's rows are the m of
 * the forward and of the input gradient (dA = dC W^T) and the inner
 * dimension of the weight gradient (dW = A^T dC, llm.h mm_op_pass). */
static double grouped_time(const mm_fw_ctx *c, const mm_op_cost *o, mm_dtype dt)
{
    mm_gemm_shape s[MM_MOE_BINS];
    int n = o->groups < MM_MOE_BINS ? o->groups : MM_MOE_BINS;
    for (int i = 0; i < n; i++) {
        double gm = o->group_m[i];
        s[i] = o->pass == MM_OP_W ? (mm_gemm_shape){o->m, o->n, gm, o->group_n[i]}
                                  : (mm_gemm_shape){gm, o->n, o->k, o->group_n[i]};
    }
    return mm_grouped_gemm_time(c->gpu, dt, s, n, o->sequential ? 1 : MM_GROUPED_GEMM_STREAMS, o->bytes);
}

/* A full causal attention core under the CP ring (a window's keys are not
 * the ring's: those ops keep one kernel) */
static bool ring_step_op(const mm_fw_ctx *c, const mm_op_cost *o)
{
    return c->cp_ring > 1 && o->kind == MM_OPK_ATTN && o->causal && o->m == o->n;
}

void mm_fw_cp_ring_steps(const mm_fw_ctx *c, const mm_op_cost *o, int cp, double *diag, double *off)
{
    const mm_gpu_spec *g = c->gpu;
    mm_dtype hp = c->dt == MM_DTYPE_FP8 ? MM_DTYPE_BF16 : c->dt;
    bool bwd = o->pass == MM_OP_B; /* its flops are 2x forward (Megatron) */
    double f = bwd ? 0.5 * o->flops : o->flops, s = sqrt(o->m * o->n);
    mm_attn_pass pass = bwd ? MM_ATTN_BWD : MM_ATTN_FWD;
    if (!(cp > 1) || !o->causal || !(f > 0)) {
        *diag = mm_attn_time_impl(g, c->attn, hp, f, s, o->k, o->causal, pass, o->bytes);
        *off = 0.0;
        return;
    }
    /* o->m is the key length s (the rank's queries against all keys, as
     * the op list writes a CP rank's core); the query block is s/cp. Each
     * step reads and writes the rank's q, k, v and o blocks once (o->bytes). */
    double q = s / cp;
    *diag = mm_attn_time_impl(g, c->attn, hp, f / cp, q, o->k, true, pass, o->bytes);
    *off = mm_attn_time_impl(g, c->attn, hp, f / (2.0 * cp), q / sqrt(2.0), o->k, false, pass, o->bytes);
}

int mm_fw_ub_chunks(const mm_fw_ctx *c, const mm_op_cost *o)
{
    if (!(c->ub_tp > 1) || o->kind != MM_OPK_GEMM || o->groups > 0 || o->batch > 1 || !o->name)
        return 1;
    bool ag = !strcmp(o->name, "qkv") || !strcmp(o->name, "fc1");
    bool rs = !strcmp(o->name, "attn_out") || !strcmp(o->name, "fc2");
    if (o->pass == MM_OP_F)
        return ag ? c->ub_tp : rs ? MM_UB_PIPELINE_SPLITS : 1;
    if (o->pass == MM_OP_B)
        return rs ? c->ub_tp : 1;
    return 1;
}

/* Seconds of one kernel on the GPU: GEMMs by shape, attention by the
 * resolved implementation's table (sequence length = geometric mean of
 * query and key lengths), memory-bound kernels by bytes.  Empty ops (a
 * pass with nothing to do) cost nothing. */
static double op_time(const mm_fw_ctx *c, const mm_op_cost *o)
{
    const mm_gpu_spec *g = c->gpu;
    /* under FP8 only the Linear GEMMs run FP8 (fp8.h); the rest BF16 */
    mm_dtype hp = c->dt == MM_DTYPE_FP8 ? MM_DTYPE_BF16 : c->dt;
    switch (o->kind) {
    case MM_OPK_GEMM: {
        mm_dtype gd = mm_fp8_gemm_op(o) ? c->dt : hp;
        if (o->groups > 0)
            return grouped_time(c, o, gd);
        /* TE's userbuffers overlap: ch GEMMs of m / ch rows, each its own
         * kernel at its own shape's rate (the bytes split evenly: the
         * weight each chunk reads again is not charged twice) */
        int ch = mm_fw_ub_chunks(c, o);
        return ch * mm_gemm_time(g, gd, o->m / ch, o->n, o->k, o->batch, o->bytes / ch);
    }
    case MM_OPK_ATTN: {
        if (ring_step_op(c, o)) {
            double diag, off;
            mm_fw_cp_ring_steps(c, o, c->cp_ring, &diag, &off);
            return diag + (c->cp_ring - 1) * off;
        }
        bool bwd = o->pass == MM_OP_B; /* its flops are 2x forward (Megatron) */
        return mm_attn_time_impl(g, c->attn, hp, bwd ? 0.5 * o->flops : o->flops, sqrt(o->m * o->n), o->k,
                                 o->causal, bwd ? MM_ATTN_BWD : MM_ATTN_FWD, o->bytes);
    }
    case MM_OPK_MEM:
        if (!(o->bytes > 0))
            return 0.0;
        return o->jit ? mm_jit_mem_time(g, o->bytes) : mm_dropout_time(g, o->bytes, o->draws);
    }
    return 0.0;
}

/* The launches of one pass of op o and the host seconds that issue them
 * (bwd: a backward pass), where an op is more than `kernels` kernels:
 * - the experts' grouped GEMM: one cuBLAS GEMM per local expert from one
 *   Python call (Transformer Engine GroupedLinear -> general_grouped_gemm
 *   -> te_general_grouped_gemm, whose multi_stream_cublas_gemm loops over
 *   the GEMMs in C++: transformer_engine/common/gemm/cublaslt_gemm.cu at
 *   v2.8); SequentialMLP calls each expert's Linear from Python;
 * - a grouped GEMM's FP8 quantize (tex.split_quantize, pytorch/csrc/
 *   extensions/cast.cpp multi_tensor_quantize_impl at v2.8): one fused
 *   multi_cast_transpose under delayed scaling, else each split's
 *   quantizer in a C++ loop; current scaling's is three kernels
 *   (Float8CurrentScalingQuantizer::quantize, csrc/quantizer.cpp:
 *   nvte_compute_amax, nvte_compute_scale_from_amax, nvte_quantize_v2),
 *   MXFP8's and blockwise's one. */
static void op_launches(const mm_fw_ctx *c, const mm_op_cost *o, int kernels, bool bwd, double *launches,
                        double *host)
{
    double per = c->host ? mm_fw_host_kernel_s(c->host, bwd) : 0.0;
    double n = o->kind == MM_OPK_GEMM && o->groups > 0 ? o->batch : 0.0;
    /* TE's userbuffers overlap: its C++ loop launches each chunk's GEMM */
    if (mm_fw_ub_chunks(c, o) > 1)
        n = mm_fw_ub_chunks(c, o);
    if (o->kind == MM_OPK_MEM && o->splits > 0 && c->fp8.recipe != MM_FP8_DELAYED)
        n = (double)o->splits * (c->fp8.recipe == MM_FP8_CURRENT ? 3.0 : 1.0);
    if (!(n > 1)) {
        *launches = kernels;
        *host = kernels * per;
        return;
    }
    *launches = n;
    if (o->kind == MM_OPK_GEMM && o->sequential)
        *host = n * per;
    else /* one Python call, the rest the C++ loop's launches */
        *host = c->host ? per + (n - 1) * c->host->launch_s : 0.0;
}

static int kind_of(const mm_op_cost *o)
{
    return o->kind == MM_OPK_GEMM ? MM_BK_GEMM : o->kind == MM_OPK_ATTN ? MM_BK_ATTN : MM_BK_MEM;
}


/* The ops of the unfused attention core (model/framework_ops.h: mm_framework_attn_unfused,
 * mm_framework_attn_unfused_eager) */
static bool is_core(const char *name)
{
    return name && !strncmp(name, "attn_", 5) && strcmp(name, "attn_out") && strcmp(name, "attn_layout");
}

mm_pass_breakdown mm_fw_time_ops(const mm_fw_ctx *c, const mm_op_cost *ops, int n)
{
    mm_pass_breakdown t;
    memset(&t, 0, sizeof t);
    mm_op_cost scaled[2 * MM_FW_MAX_OPS + 1];
    int k = n < MM_FW_MAX_OPS ? n : MM_FW_MAX_OPS;
    memcpy(scaled, ops, (size_t)k * sizeof *ops);
    if (c->fw)
        mm_framework_scale_ops(c->fw, scaled, k);
    if (c->dt == MM_DTYPE_FP8 && c->fp8.on) { /* after the scaling: the FP8 kernels are TE's own */
        int r = mm_fp8_rewrite_ops(c->fp8.recipe, c->norm_rows, scaled, k, (int)(sizeof scaled / sizeof *scaled));
        if (r > 0)
            k = r;
    }
    for (int i = 0; i < k; i++) {
        const mm_op_cost *o = &scaled[i];
        int kernels = c->fw ? mm_framework_op_kernels(c->fw, o->name) : 1;
        for (int p = MM_OP_F; p <= MM_OP_W; p++) {
            mm_op_cost x = mm_op_pass(o, (mm_op_pass_kind)p);
            double s = op_time(c, &x);
            /* an activation-by-activation GEMM has no weight: both its
             * gradients are input gradients (llm.h, mm_op_pass) */
            int into = p == MM_OP_W && o->weightless ? MM_OP_B : p;
            t.s[into][kind_of(&x)] += s;
            /* a pass with work launches the op's kernels; an empty one
             * (a weightless op's W) launches none */
            double launches = 0, host = 0;
            if (s > 0)
                op_launches(c, &x, kernels, p != MM_OP_F, &launches, &host);
            /* the forward calls the op's module (its Python around the kernels) */
            if (c->host && p == MM_OP_F && s > 0)
                host += c->host->module_s * mm_framework_op_modules(o->name, o->kind, o->weightless);
            t.launches[into] += launches;
            t.host_s[into] += host;
            if (p != MM_OP_W && ring_step_op(c, &x)) {
                double dg, of;
                mm_fw_cp_ring_steps(c, &x, c->cp_ring, &dg, &of);
                t.cp_diag[p == MM_OP_B] += dg;
                t.cp_off[p == MM_OP_B] += of;
            }
            if (p == MM_OP_F && (o->kind == MM_OPK_ATTN || is_core(o->name))) {
                t.attn_core_fwd += s;
                t.attn_core_launches += launches;
                t.attn_core_host_s += host;
            }
        }
    }
    return t;
}

int mm_fw_time_layer(const mm_fw_ctx *c, const mm_llm *m, const mm_op_cost *ops, int n, double tokens, double tn,
                     int tp, mm_pass_breakdown *out)
{
    mm_op_cost x[MM_FW_MAX_OPS];
    memset(x, 0, sizeof x);
    bool unfused = mm_attn_impl_unfused(c->attn);
    int k = 0;
    for (int i = 0; i < n; i++) {
        int got = -1;
        if (unfused && ops[i].kind == MM_OPK_ATTN)
            got = c->attn == MM_ATTN_IMPL_UNFUSED_EAGER
                      ? mm_framework_attn_unfused_eager(&ops[i], c->dtype_bytes, x + k, MM_FW_MAX_OPS - k)
                      : mm_framework_attn_unfused(&ops[i], c->dtype_bytes, x + k, MM_FW_MAX_OPS - k);
        if (got > 0)
            k += got;
        else if (k < MM_FW_MAX_OPS)
            x[k++] = ops[i];
        else
            return -1;
    }
    if (c->fw) {
        k = mm_framework_layer_extras(c->fw, m, tokens, tn, tp, unfused, c->dtype_bytes, x, k, MM_FW_MAX_OPS);
        if (k < 0)
            return -1;
    }
    mm_fw_ctx cr = *c; /* the norms run on the tn tokens of the residual region */
    cr.norm_rows = tokens > 0 ? tn / tokens : 1.0;
    *out = mm_fw_time_ops(&cr, x, k);
    /* the layer's own module and its attention and MLP blocks, around the
     * ops' modules (HF's LlamaDecoderLayer, LlamaAttention, LlamaMLP;
     * Megatron's TransformerLayer, SelfAttention, MLP) */
    if (c->host)
        out->host_s[MM_OP_F] += 3.0 * c->host->module_s;
    return 0;
}

double mm_fw_embed_wgrad_time(const mm_fw_ctx *c, const mm_llm *m, double tokens, int tp)
{
    double t = tp > 0 ? tp : 1, h = (double)m->hidden;
    double bytes = (double)m->vocab * h / t * (2.0 + 2.0 + 4.0 + 4.0) + tokens * h * 6.0;
    return mm_mem_time(c->gpu, bytes);
}
