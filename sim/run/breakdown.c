/* breakdown.c - writing the per-layer cost breakdown (sim.h:
 * mm_sim_breakdown) as a JSON member or as a text table, so a user can hold
 * it against an Nsight Systems profile of a real run.  The numbers come from
 * mm_sim_get_breakdown, the same cost bridge mm_sim_run executes.
 * Not for: computing anything (costs.c does). */
#include <math.h>
#include <stdio.h>

#include "run/sim.h"

static void json_pass(FILE *f, const mm_pass_breakdown *b, double scale)
{
    fprintf(f, "{");
    for (int p = 0; p < 3; p++) {
        fprintf(f, "%s\"%s\": {", p ? ", " : "", mm_bk_pass_names[p]);
        for (int k = 0; k < MM_BK_KINDS; k++)
            fprintf(f, "%s\"%s_s\": %.9g", k ? ", " : "", mm_bk_kind_names[k], scale * b->s[p][k]);
        fprintf(f, ", \"total_s\": %.9g}", scale * mm_pass_breakdown_pass(b, p));
    }
    fprintf(f, "}");
}

void mm_sim_breakdown_write_json(FILE *f, const mm_sim *sim, const mm_sim_breakdown *bk, const char *indent)
{
    fprintf(f, "%s\"breakdown\": {\"framework\": \"%s\", \"attention\": \"%s\", \"per_micro_batch\": true,\n", indent,
            sim->fw.name, mm_attn_impl_names[sim->attn]);
    fprintf(f, "%s  \"layer\": ", indent);
    json_pass(f, &bk->layer, 1.0);
    fprintf(f, ",\n%s  \"recompute_s\": %.9g,\n%s  \"embedding\": ", indent, bk->recompute_s, indent);
    json_pass(f, &bk->embed, 1.0);
    fprintf(f, ",\n%s  \"head\": ", indent);
    json_pass(f, &bk->head, 1.0);
    fprintf(f, ",\n%s  \"optimizer\": [", indent);
    int n = bk->n_stages < MM_BK_MAX_STAGES ? bk->n_stages : MM_BK_MAX_STAGES;
    for (int v = 0; v < n; v++) {
        const mm_opt_breakdown *o = &bk->opt[v];
        fprintf(f, "%s{\"stage\": %d, \"step_s\": %.9g, \"grad_norm_s\": %.9g, \"zero_grad_s\": %.9g, "
                   "\"total_s\": %.9g}",
                v ? ", " : "", v, o->step_s, o->grad_norm_s, o->zero_grad_s, o->total_s);
    }
    fprintf(f, "]}");
}

static void text_row(FILE *f, const char *name, const mm_pass_breakdown *b, int p)
{
    fprintf(f, "  %-10s %-6s", name, mm_bk_pass_names[p]);
    for (int k = 0; k < MM_BK_KINDS; k++)
        fprintf(f, " %10.3f", 1e3 * b->s[p][k]);
    fprintf(f, " %10.3f\n", 1e3 * mm_pass_breakdown_pass(b, p));
}

void mm_sim_breakdown_write_text(FILE *f, const mm_sim *sim, const mm_sim_breakdown *bk)
{
    fprintf(f, "  breakdown   one micro-batch on one GPU, ms (framework %s, attention %s; communication is\n"
               "              timed by the network in the executed graph, see comm_s per stage)\n",
            sim->fw.name, mm_attn_impl_names[sim->attn]);
    fprintf(f, "  %-10s %-6s %10s %10s %10s %10s\n", "part", "pass", "gemm", "attention", "memory", "total");
    const struct {
        const char *name;
        const mm_pass_breakdown *b;
    } parts[] = {{"layer", &bk->layer}, {"embedding", &bk->embed}, {"head+loss", &bk->head}};
    for (int i = 0; i < 3; i++)
        for (int p = 0; p < 3; p++)
            text_row(f, parts[i].name, parts[i].b, p);
    if (bk->recompute_s > 0)
        fprintf(f, "  %-10s %-6s %43.3f\n", "layer", "recomp", 1e3 * bk->recompute_s);
    int n = bk->n_stages < MM_BK_MAX_STAGES ? bk->n_stages : MM_BK_MAX_STAGES;
    for (int v = 0; v < n; v++) {
        const mm_opt_breakdown *o = &bk->opt[v];
        fprintf(f, "  optimizer  stage %d: step %.3f, grad norm %.3f, zero grad %.3f = %.3f ms\n", v, 1e3 * o->step_s,
                1e3 * o->grad_norm_s, 1e3 * o->zero_grad_s, 1e3 * o->total_s);
    }
}
