/* build_base.c - what every file of the graph builder (build.c,
 * build_llm.c, build_enc.c) calls and which calls none of them: the
 * build's first failure, naming its op, and the spec's counts of gradient
 * reductions and ZeRO-3 gather passes (build.h), and a compute op's host
 * cost (mm_build_op_host).
 * Not for: laying ops out (build.c and the emitters). */
#include "parallel/build_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

int mm_bld_fail(builder *b, const char *fmt, ...)
{
    if (b->failed || !b->err)
        return -1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mm_err_set(b->err, MM_EINTERNAL, "", 0, "", "cannot build the iteration graph: %s", msg);
    b->failed = true;
    return -1;
}

int mm_bld_fail_op(builder *b, const mm_op *op, const char *what)
{
    const char *module = op->module == 0 ? "llm" : op->module <= b->sp->n_enc ? b->sp->enc[op->module - 1].name : "?";
    return mm_bld_fail(b, "the %s %s op of stage %d, micro-batch %d, layer %d on rank %d: %s", module,
                       op->cat < MM_CAT_COUNT ? mm_op_cat_names[op->cat] : "?", op->stage, op->mb, op->layer,
                       op->rank, what);
}

int mm_build_grad_syncs(const mm_build_spec *sp)
{
    if (sp->zero >= 3)
        return sp->z3_once ? 1 : sp->m;
    return sp->grad_every_mb ? sp->m : 1;
}

int mm_build_z3_gather_passes(const mm_build_spec *sp)
{
    return sp->zero < 3 ? 0 : sp->z3_once ? 1 : 2 * sp->m;
}

void mm_build_op_host(mm_op *op, double host_s, double launches)
{
    if (!(host_s > 0) || !(launches > 0)) {
        op->host_s = op->lead_s = 0.0f;
        return;
    }
    /* n equal kernels of t seconds issued every L seconds (a two-machine
     * flow shop in a fixed order): the last ends at max(L + n t, n L + t) */
    double n = launches < 1 ? 1 : launches, L = host_s / n, G = op->dur_s > 0 ? op->dur_s : 0.0;
    op->host_s = (float)host_s;
    op->lead_s = (float)fmax(L, host_s + G / n - G);
}

int mm_build_z3_list_count(const mm_build_spec *sp, int pass, bool gathers, bool scatters)
{
    if (!(sp->z3_list_host_s > 0) || sp->z3_once)
        return 0;
    int n = gathers ? (sp->z3_gathers > 1 ? sp->z3_gathers : 1) : 0;
    if (gathers && pass == MM_PASS_B && sp->z3_regathers > 0)
        n += sp->z3_regathers;
    if (scatters)
        n += sp->z3_scatters > 1 ? sp->z3_scatters : 1;
    return n;
}

double mm_build_z3_list_mb_s(const mm_build_spec *sp)
{
    if (sp->zero < 3 || sp->lay.dp < 2)
        return 0.0;
    return (mm_build_z3_list_count(sp, MM_PASS_F, true, false) + mm_build_z3_list_count(sp, MM_PASS_B, true, true)) *
           sp->z3_list_host_s;
}
