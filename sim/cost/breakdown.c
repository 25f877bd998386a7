/* breakdown.c - the per-layer cost breakdown (breakdown.h:
 * mm_sim_breakdown) gathered from the cost bridge's own functions (the
 * stage costs of costs.c, a workload file's drawn micro-batches of
 * batchcost.c, so every number is the one mm_sim_run executes) and the
 * layout's communication alone on the network, written as a JSON member or
 * as a text table, so a user can hold it against an Nsight Systems profile
 * of a real run.
 * Not for: the pass times themselves (costs.c computes them). */
#include "cost/breakdown.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost_internal.h"
#include "cost/loader.h"
#include "hw/net.h"
#include "parallel/build.h"

/* The first group of each kind under Megatron's default order (tp fastest,
 * then cp, dp, pp): TP ranks 0 .. tp-1, the DP ranks every tp x cp GPUs,
 * the next stage tp x cp x dp GPUs on.  Analytic network time, alone. */
static void breakdown_comm(const mm_sim *sim, const mm_build_spec *sp, mm_sim_breakdown *bk)
{
    const mm_cluster *c = sim->cluster;
    int tp = sp->lay.tp > 0 ? sp->lay.tp : 1, cp = sp->lay.cp > 0 ? sp->lay.cp : 1, dp = sp->lay.dp > 0 ? sp->lay.dp : 1;
    int n = tp > dp ? tp : dp, gpus[MM_BK_MAX_STAGES * 8];
    if (n > (int)(sizeof gpus / sizeof gpus[0]))
        n = (int)(sizeof gpus / sizeof gpus[0]);
    bk->tp_fwd_s = bk->tp_bwd_s = bk->p2p_s = bk->p2p_hop_mean_s = bk->dp_grad_s = 0;
    if (tp > 1 && sp->tp_bytes > 0) {
        for (int i = 0; i < tp && i < n; i++)
            gpus[i] = i;
        /* with SP one message is an all-gather and a reduce-scatter */
        double one = sp->sp ? mm_net_analytic_time(c, MM_COLL_ALLGATHER, gpus, tp, sp->tp_bytes) +
                                  mm_net_analytic_time(c, MM_COLL_REDUCESCATTER, gpus, tp, sp->tp_bytes)
                            : mm_net_analytic_time(c, MM_COLL_ALLREDUCE, gpus, tp, sp->tp_bytes);
        bk->tp_fwd_s = sp->tp_msgs_fwd * one;
        bk->tp_bwd_s = sp->tp_msgs_bwd * one;
    }
    int next = tp * cp * dp;
    if (sp->lay.pp > 1 && next < mm_cluster_gpus(c)) {
        /* on the PP group's communicator (stage s on GPU s x next), or the
         * pair's under the interleaved schedule, as build_llm.c */
        int nodes = 0, last = -1, hops = 0, ranks = sp->lay.pp;
        for (int s = 0; s < sp->lay.pp; s++) {
            int node = mm_cluster_node_of(c, s * next);
            nodes += node != last, last = node;
        }
        if (sp->schedule == MM_SCHEDULE_INTERLEAVED)
            ranks = nodes = 0;
        double S = sp->p2p_bytes / (tp * cp), sum = 0;
        bk->p2p_s = mm_net_p2p_pair_time(c, 0, next, S, ranks, nodes);
        for (int s = 0; s + 1 < sp->lay.pp && (s + 1) * next < mm_cluster_gpus(c); s++, hops++)
            sum += mm_net_p2p_pair_time(c, s * next, (s + 1) * next, S, ranks, nodes);
        bk->p2p_hop_mean_s = sum / hops;
    }
    if (dp > 1 && sp->stages && dp <= n && (dp - 1) * tp * cp < mm_cluster_gpus(c)) {
        for (int i = 0; i < dp; i++)
            gpus[i] = i * tp * cp;
        bk->dp_grad_s = mm_net_analytic_time(c, sp->zero >= 1 ? MM_COLL_REDUCESCATTER : MM_COLL_ALLREDUCE, gpus, dp,
                                             sp->stages[0].grad_bytes);
    }
}

/* bk->mb: the micro-batches DP replica 0 runs in iteration 0, drawn and
 * batched as the run does (mm_sim_stage_times, mm_sim_iteration_costs),
 * each one's layer from the same bin_layer as its costs. */
static int drawn_micro_batches(const mm_sim *sim, mm_sim_breakdown *bk, mm_err *err)
{
    mm_sim_costs costs;
    wl_iter w = {0};
    int rc = mm_sim_stage_times(sim, &costs, err);
    if (rc)
        return rc;
    mm_build_spec spec = costs.spec;
    rc = mm_sim_iteration_costs(sim, &spec, costs.stages, 0, &w, err);
    bk->mb_count = rc == 0 ? w.m : 0;
    for (int j = 0; rc == 0 && j < w.m && j < MM_BK_MAX_MB; j++) {
        mm_mb_breakdown *e = &bk->mb[j];
        *e = (mm_mb_breakdown){.index = j, .tokens = w.mb_T[j], .sequences = w.mb_n[j], .sum_sq = w.mb_S[j]};
        if (e->tokens > 0 && mm_sim_bin_layer_breakdown(sim, e->tokens, e->sum_sq, e->sequences, &e->layer))
            rc = mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive op costs for this model");
        bk->n_mb = j + 1;
    }
    mm_sim_wl_iter_free(&w);
    mm_sim_costs_free(&costs);
    return rc;
}

int mm_sim_get_breakdown(const mm_sim *sim, mm_sim_breakdown *bk, mm_err *err)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    int V = L->lay.pp * L->lay.vpp;
    mm_stage_cost *st = calloc((size_t)V, sizeof *st);
    if (!st)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    mm_build_spec spec;
    memset(&spec, 0, sizeof spec);
    int rc = mm_sim_stage_costs_breakdown(sim, st, &spec, bk, err);
    if (rc == 0) {
        breakdown_comm(sim, &spec, bk);
        for (int v = 0; v < V && v < MM_BK_MAX_STAGES; v++) {
            bk->pass[v][MM_OP_F] = st[v].fwd_s;
            bk->pass[v][MM_OP_B] = st[v].bwd_s - st[v].wgrad_s;
            bk->pass[v][MM_OP_W] = st[v].wgrad_s;
            const double h[4] = {st[v].fwd_host_s, st[v].bwd_host_s - st[v].wgrad_host_s, st[v].wgrad_host_s,
                                 st[v].opt_host_s};
            const double k[4] = {st[v].fwd_launches, st[v].bwd_launches - st[v].wgrad_launches, st[v].wgrad_launches,
                                 st[v].opt_launches};
            memcpy(bk->host[v], h, sizeof h);
            memcpy(bk->launches[v], k, sizeof k);
        }
        bk->sync_grad_norm = spec.host_sync_step && sim->fw->grad_norm;
        bk->sync_found_inf = spec.host_sync_step && (mm_dtype)sim->sc.train.precision == MM_DTYPE_FP16;
        rc = mm_sim_run_costs(sim, st, V, spec.m, NAN, &bk->run, err);
    if (rc == 0) /* what one sync across sites costs; its exposure is the run's */
        rc = mm_sim_outer_sync(sim, 0.0, &bk->outer, err);
    if (rc == 0 && sim->sc.train.outer_sync.present && sim->sc.train.outer_sync.algorithm == MM_OSYNC_ATOM) {
        mm_mem_rank full;
        double room;
        if (mm_sim_swap_room(sim, &full, &room) == 0 &&
            mm_sim_swap(sim, &full, room, st[0].fwd_s, st[0].bwd_s, spec.m, &bk->swap) == 0)
            mm_sim_wan_pipeline(sim, st[0].fwd_s, st[0].bwd_s, spec.m, &bk->swap);
        else
            memset(&bk->swap, 0, sizeof bk->swap); /* no two layers fit: the run's verdict is OOM */
    }
    }
    free(st);
    if (rc == 0 && sim->wl)
        rc = drawn_micro_batches(sim, bk, err);
    bk->run_data_wait_s = bk->run_data_short_s = NAN;
    bk->loader = rc == 0 && sim->sc.data.workers >= 0;
    if (bk->loader) {
        mm_loader_cost c;
        rc = mm_sim_loader_micro_batch(sim, &c, err);
        bk->loader_cpu_s = c.cpu_s, bk->loader_dev_s = c.dev_s;
        bk->loader_h2d_s = mm_sim_loader_h2d_s(sim, c.h2d_bytes);
    }
    return rc;
}

static void json_pass(FILE *f, const mm_pass_breakdown *b, double scale)
{
    fprintf(f, "{");
    for (int p = 0; p < 3; p++) {
        fprintf(f, "%s\"%s\": {", p ? ", " : "", mm_bk_pass_names[p]);
        for (int k = 0; k < MM_BK_KINDS; k++)
            fprintf(f, "%s\"%s_s\": %.9g", k ? ", " : "", mm_bk_kind_names[k], scale * b->s[p][k]);
        fprintf(f, ", \"total_s\": %.9g, \"launches\": %.9g, \"host_s\": %.9g}", scale * mm_pass_breakdown_pass(b, p),
                scale * b->launches[p], scale * b->host_s[p]);
    }
    fprintf(f, "}");
}

void mm_sim_breakdown_write_json(FILE *f, const mm_sim *sim, const mm_sim_breakdown *bk, const char *indent)
{
    fprintf(f, "%s\"breakdown\": {\"framework\": \"%s\", \"attention\": \"%s\", \"per_micro_batch\": true,\n", indent,
            sim->fw->name, mm_attn_impl_names[sim->attn]);
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
                   "\"fp8_cast_s\": %.9g, \"total_s\": %.9g}",
                v ? ", " : "", v, o->step_s, o->grad_norm_s, o->zero_grad_s, o->fp8_cast_s, o->total_s);
    }
    fprintf(f, "],\n%s  \"stages\": [", indent);
    for (int v = 0; v < n; v++)
        fprintf(f,
                "%s\n%s    {\"stage\": %d, \"fwd_s\": %.9g, \"bgrad_s\": %.9g, \"wgrad_s\": %.9g, "
                "\"host_fwd_s\": %.9g, \"host_bgrad_s\": %.9g, \"host_wgrad_s\": %.9g, \"host_optimizer_s\": %.9g, "
                "\"launches\": %.9g}",
                v ? "," : "", indent, v, bk->pass[v][MM_OP_F], bk->pass[v][MM_OP_B], bk->pass[v][MM_OP_W],
                bk->host[v][0], bk->host[v][1], bk->host[v][2], bk->host[v][3],
                bk->launches[v][0] + bk->launches[v][1] + bk->launches[v][2] + bk->launches[v][3]);
    fprintf(f, "],\n%s  \"communication\": {\"analytic_alone\": true, \"tp_fwd_s\": %.9g, \"tp_bgrad_s\": %.9g, "
               "\"p2p_s\": %.9g, \"p2p_hop_mean_s\": %.9g, \"dp_grad_per_stage_s\": %.9g}",
            indent, bk->tp_fwd_s, bk->tp_bwd_s, bk->p2p_s, bk->p2p_hop_mean_s, bk->dp_grad_s);
    if (bk->outer.on)
        fprintf(f, ",\n%s  \"outer_sync\": {\"sites\": %d, \"every\": %d, \"wire_bytes\": %.9g, \"wan_s\": %.9g, "
                   "\"kernel_s\": %.9g, \"sync_s\": %.9g}",
                indent, bk->outer.sites, bk->outer.h, bk->outer.wire_bytes, bk->outer.wan_s, bk->outer.kernel_s,
                bk->outer.sync_s);
    if (bk->swap.on)
        fprintf(f, ",\n%s  \"swap\": {\"groups\": %d, \"group_layers\": %d, \"link_gb_s\": %.9g, \"load_s\": %.9g, "
                   "\"grads_out_s\": %.9g, \"compute_s\": %.9g, \"swap_step_s\": %.9g, \"exposed_s\": %.9g}",
                indent, bk->swap.groups, bk->swap.group_layers, bk->swap.link_bw * 1e-9, bk->swap.load_s,
                bk->swap.grads_out_s, bk->swap.compute_s, bk->swap.swap_step_s, bk->swap.exposed_s);
    if (bk->loader)
        fprintf(f, ",\n%s  \"data_loader\": {\"loader\": \"%s\", \"workers\": %d, \"cpu_s\": %.9g, \"nvdec_s\": %.9g, "
                   "\"h2d_s\": %.9g",
                indent, sim->fw->loader, sim->sc.data.workers, bk->loader_cpu_s, bk->loader_dev_s, bk->loader_h2d_s);
    if (bk->loader && isfinite(bk->run_data_wait_s))
        fprintf(f, ", \"run_data_wait_s\": %.9g, \"run_data_shortfall_s\": %.9g", bk->run_data_wait_s,
                bk->run_data_short_s);
    if (bk->loader)
        fprintf(f, "}");
    fprintf(f, ",\n%s  \"host_syncs\": {\"per_step\": %d, \"grad_norm\": %s, \"found_inf\": %s",
            indent, bk->sync_grad_norm + bk->sync_found_inf, bk->sync_grad_norm ? "true" : "false",
            bk->sync_found_inf ? "true" : "false");
    if (bk->run.on)
        fprintf(f, ", \"checkpoint_save_s\": %.9g, \"eval_s\": %.9g, \"log_sync_s\": %.9g, "
                   "\"periodic_per_iteration_s\": %.9g",
                bk->run.save_s, bk->run.eval_s, bk->run.log_sync_s, bk->run.per_iter_s);
    fprintf(f, "}");
    if (bk->mb_count > 0) {
        fprintf(f, ",\n%s  \"micro_batches\": {\"iteration\": 0, \"replica\": 0, \"count\": %d, \"listed\": %d, "
                   "\"items\": [",
                indent, bk->mb_count, bk->n_mb);
        for (int j = 0; j < bk->n_mb; j++) {
            const mm_mb_breakdown *e = &bk->mb[j];
            fprintf(f, "%s\n%s    {\"index\": %d, \"tokens\": %.9g, \"sequences\": %.9g, \"sum_sq\": %.9g, \"layer\": ",
                    j ? "," : "", indent, e->index, e->tokens, e->sequences, e->sum_sq);
            json_pass(f, &e->layer, 1.0);
            fprintf(f, "}");
        }
        fprintf(f, "]}");
    }
    fprintf(f, "}");
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
    fprintf(f, "  breakdown   one micro-batch on one GPU, ms (framework %s, attention %s; the run's\n"
               "              communication, shared and overlapped, is comm_s per stage above)\n",
            sim->fw->name, mm_attn_impl_names[sim->attn]);
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
    fprintf(f, "  comm       per layer: TP %.3f fwd, %.3f bgrad; per micro-batch: p2p %.3f; per stage: DP grads %.3f "
               "(alone on the network)\n",
            1e3 * bk->tp_fwd_s, 1e3 * bk->tp_bwd_s, 1e3 * bk->p2p_s, 1e3 * bk->dp_grad_s);
    if (bk->outer.on)
        fprintf(f, "  sites      outer sync every %d step%s across %d sites: WAN %.3f s + kernels %.3f s = %.3f s "
                   "(%.4g GB a site; what it exposes is the run's)\n",
                bk->outer.h, bk->outer.h == 1 ? "" : "s", bk->outer.sites, bk->outer.wan_s, bk->outer.kernel_s,
                bk->outer.sync_s, bk->outer.wire_bytes / 1e9);
    if (bk->swap.on)
        fprintf(f, "  swap       %d group%s of %d layers over PCIe at %.1f GB/s: load %.3f s, gradients out %.3f s a "
                   "group; passes %.3f s, with the swaps %.3f s a step (%.3f s exposed)\n",
                bk->swap.groups, bk->swap.groups == 1 ? "" : "s", bk->swap.group_layers, bk->swap.link_bw * 1e-9,
                bk->swap.load_s, bk->swap.grads_out_s, bk->swap.compute_s, bk->swap.swap_step_s, bk->swap.exposed_s);
    int n = bk->n_stages < MM_BK_MAX_STAGES ? bk->n_stages : MM_BK_MAX_STAGES;
    for (int v = 0; v < n; v++) {
        const mm_opt_breakdown *o = &bk->opt[v];
        fprintf(f, "  optimizer  stage %d: step %.3f, grad norm %.3f, zero grad %.3f", v, 1e3 * o->step_s,
                1e3 * o->grad_norm_s, 1e3 * o->zero_grad_s);
        if (o->fp8_cast_s > 0) /* FP8: the step's casts */
            fprintf(f, ", fp8 casts %.3f", 1e3 * o->fp8_cast_s);
        fprintf(f, " = %.3f ms\n", 1e3 * o->total_s);
    }
    for (int v = 0; v < n; v++)
        fprintf(f, "  host       stage %d: issuing fwd %.3f, bgrad %.3f, wgrad %.3f per micro-batch, optimizer %.3f ms "
                   "(%.0f launches)\n",
                v, 1e3 * bk->host[v][0], 1e3 * bk->host[v][1], 1e3 * bk->host[v][2], 1e3 * bk->host[v][3],
                bk->launches[v][0] + bk->launches[v][1] + bk->launches[v][2] + bk->launches[v][3]);
    if (bk->loader && isfinite(bk->run_data_wait_s))
        fprintf(f, "  loader     %s, %d workers: per micro-batch %.3f ms of one core, NVDEC %.3f, copy %.3f ms (DP "
                   "replica 0, iteration 0); the run's step waits %.3f ms an iteration for data, short by %.3f ms "
                   "in the steady state\n",
                sim->fw->loader, sim->sc.data.workers, 1e3 * bk->loader_cpu_s, 1e3 * bk->loader_dev_s,
                1e3 * bk->loader_h2d_s, 1e3 * bk->run_data_wait_s, 1e3 * bk->run_data_short_s);
    else if (bk->loader)
        fprintf(f, "  loader     %s, %d workers: per micro-batch %.3f ms of one core, NVDEC %.3f, copy %.3f ms (DP "
                   "replica 0, iteration 0; the run's wait is data_wait_s)\n",
                sim->fw->loader, sim->sc.data.workers, 1e3 * bk->loader_cpu_s, 1e3 * bk->loader_dev_s,
                1e3 * bk->loader_h2d_s);
    fprintf(f, "  syncs      per step: %d host read%s of the GPU before the optimizer step%s%s",
            bk->sync_grad_norm + bk->sync_found_inf, bk->sync_grad_norm + bk->sync_found_inf == 1 ? "" : "s",
            bk->sync_grad_norm ? " (gradient norm)" : "", bk->sync_found_inf ? " (fp16 found-inf flag)" : "");
    if (bk->run.on)
        fprintf(f, "; periodic: save %.3f s, evaluation %.3f s, loss-report sync %.3f ms = %.3f ms per iteration",
                bk->run.save_s, bk->run.eval_s, 1e3 * bk->run.log_sync_s, 1e3 * bk->run.per_iter_s);
    fprintf(f, "\n");
    if (bk->mb_count == 0)
        return;
    /* the drawn micro-batches: one layer each, the split of its forward */
    enum { ROWS = 16 };
    fprintf(f, "  drawn micro-batches of DP replica 0 in iteration 0, in its order (%d; the rows above are the\n"
               "  nominal micro_batch x seq_len one), one layer each, ms\n",
            bk->mb_count);
    fprintf(f, "  %4s %9s %5s %10s %10s %10s %10s %10s %10s\n", "mb", "tokens", "seqs", "fwd gemm", "attention", "memory",
            "fwd", "bgrad", "wgrad");
    for (int j = 0; j < bk->n_mb && j < ROWS; j++) {
        const mm_mb_breakdown *e = &bk->mb[j];
        const mm_pass_breakdown *b = &e->layer;
        fprintf(f, "  %4d %9.0f %5.0f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", e->index, e->tokens, e->sequences,
                1e3 * b->s[MM_OP_F][MM_BK_GEMM], 1e3 * b->s[MM_OP_F][MM_BK_ATTN], 1e3 * b->s[MM_OP_F][MM_BK_MEM],
                1e3 * mm_pass_breakdown_pass(b, MM_OP_F), 1e3 * mm_pass_breakdown_pass(b, MM_OP_B),
                1e3 * mm_pass_breakdown_pass(b, MM_OP_W));
    }
    if (bk->mb_count > ROWS)
        fprintf(f, "  ... %d more (the first %d in --json's breakdown.micro_batches)\n", bk->mb_count - ROWS,
                bk->n_mb);
}
