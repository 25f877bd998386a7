/* report.c - the JSON objects of `mmsim run --json` and `mmsim plan --json`
 * (report.h), written once for the CLI and the C API alike.
 * Not for: the model report (modelreport.c) or any table for people. */
#include "api/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mmsim_config.h"
#include "cost/breakdown.h"
#include "cost/costs.h"
#include "exec/metrics.h"

void mm_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* A top-level member: number, or null for NaN/inf. */
static void jnum(FILE *f, const char *key, double v, int last)
{
    if (isfinite(v))
        fprintf(f, "  \"%s\": %.17g%s\n", key, v, last ? "" : ",");
    else
        fprintf(f, "  \"%s\": null%s\n", key, last ? "" : ",");
}

static void jstr(FILE *f, const char *key, const char *v)
{
    fprintf(f, "  \"%s\": ", key);
    mm_json_string(f, v);
    fprintf(f, ",\n");
}

/* A number inside a list or an inner object (9 digits, as stored). */
static void jval(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fprintf(f, "null");
}

/* Each iteration's per-DP-rank LLM load, at full precision so that max /
 * mean of a row gives back the iteration's load_imbalance. */
static void run_dp_load(FILE *f, const mm_metrics *m)
{
    if (!m->dp_rank_load_s || m->n_iters <= 0)
        return;
    fprintf(f, "  \"dp_rank_load_s\": [");
    for (int i = 0; i < m->n_iters; i++) {
        fprintf(f, "%s[", i ? ", " : "");
        for (int r = 0; r < m->dp_ranks; r++)
            fprintf(f, "%s%.17g", r ? ", " : "", m->dp_rank_load_s[(size_t)i * m->dp_ranks + r]);
        fprintf(f, "]");
    }
    fprintf(f, "],\n");
}

/* The data loader (data.workers >= 0): the step's wait and its copies,
 * the loader's CPU seconds, its steady-state shortfall, the workers that
 * would keep up, per iteration the wait. */
static void run_data(FILE *f, const mm_metrics *m)
{
    jnum(f, "data_wait_s", m->oom ? NAN : m->data_wait_s, 0);
    jnum(f, "data_h2d_s", m->oom ? NAN : m->data_h2d_s, 0);
    jnum(f, "loader_cpu_s", m->oom ? NAN : m->loader_cpu_s, 0);
    jnum(f, "data_shortfall_s", m->oom ? NAN : m->data_shortfall_s, 0);
    if (m->oom)
        fprintf(f, "  \"data_workers_needed\": null,\n");
    else
        fprintf(f, "  \"data_workers_needed\": %d,\n", m->data_workers_needed);
    fprintf(f, "  \"data_wait_per_iteration_s\": [");
    for (int i = 0; i < m->n_iters; i++) {
        fprintf(f, "%s", i ? ", " : "");
        jval(f, m->iters[i].data_wait_s);
    }
    fprintf(f, "],\n");
}

/* The run's periodic work (cost/runcost.h; a train.* run key set): each
 * event's cost, their average per iteration, and the whole run's total. */
static void run_periodic(FILE *f, const mm_metrics *m)
{
    const mm_run_costs *r = &m->run;
    jnum(f, "checkpoint_save_s", m->oom ? NAN : r->save_s, 0);
    jnum(f, "checkpoint_bytes_per_node", m->oom ? NAN : r->ckpt_node_bytes, 0);
    jnum(f, "eval_s", m->oom ? NAN : r->eval_s, 0);
    jnum(f, "log_sync_s", m->oom ? NAN : r->log_sync_s, 0);
    jnum(f, "periodic_per_iteration_s", m->oom ? NAN : r->per_iter_s, 0);
    fprintf(f, "  \"run_saves\": %lld,\n  \"run_evals\": %lld,\n  \"run_logs\": %lld,\n", r->saves, r->evals,
            r->logs);
    jnum(f, "run_total_s", m->oom ? NAN : r->total_s, 0);
}

/* Training across sites (cost/outersync.h): one sync's bytes and seconds,
 * what it exposes per sync and per step (in iteration_time_s and
 * tokens_per_s already), and the inner step alone. */
static void run_outer(FILE *f, const mm_metrics *m)
{
    const mm_outer_sync *o = &m->outer;
    fprintf(f, "  \"sites\": %d,\n  \"outer_sync_algorithm\": \"%s\",\n  \"outer_sync_h\": %d,\n", o->sites,
            mm_outer_sync_names[o->algorithm], o->h);
    fprintf(f, "  \"outer_sync_overlap\": %s,\n", o->overlap ? "true" : "false");
    jnum(f, "outer_sync_bytes", o->bytes, 0);
    jnum(f, "outer_sync_wire_bytes", o->wire_bytes, 0);
    jnum(f, "outer_sync_s", m->oom ? NAN : o->sync_s, 0);
    jnum(f, "outer_sync_wan_s", m->oom ? NAN : o->wan_s, 0);
    jnum(f, "outer_sync_kernel_s", m->oom ? NAN : o->kernel_s, 0);
    jnum(f, "outer_sync_exposed_s", m->oom ? NAN : o->exposed_s, 0);
    jnum(f, "outer_sync_per_iteration_s", m->oom ? NAN : o->per_iter_s, 0);
    jnum(f, "inner_step_s", m->oom ? NAN : o->step_s, 0);
    const mm_swap *w = &m->swap;
    if (!w->on)
        return;
    /* atom: the model swapping of every GPU (cost/swap.h) and the pipeline
     * across the sites it is measured against */
    fprintf(f, "  \"swap_groups\": %d,\n  \"swap_group_layers\": %d,\n", w->groups, w->group_layers);
    jnum(f, "swap_resident_gib", w->resident_bytes / MM_GIB, 0);
    jnum(f, "swap_link_gb_s", w->link_bw * 1e-9, 0);
    jnum(f, "swap_load_s", w->load_s, 0);
    jnum(f, "swap_grads_out_s", w->grads_out_s, 0);
    jnum(f, "swap_compute_s", m->oom ? NAN : w->compute_s, 0);
    jnum(f, "swap_step_s", m->oom ? NAN : w->swap_step_s, 0);
    jnum(f, "swap_exposed_s", m->oom ? NAN : w->exposed_s, 0);
    jnum(f, "wan_pipeline_hop_s", m->oom ? NAN : w->pp_hop_s, 0);
    jnum(f, "wan_pipeline_step_s", m->oom ? NAN : w->pp_step_s, 0);
}

static void run_stages(FILE *f, const mm_metrics *m)
{
    fprintf(f, "  \"stages\": [");
    for (int s = 0; s < m->n_stages; s++) {
        const mm_stage_metrics *st = &m->stages[s];
        fprintf(f, "%s{\"stage\": %d", s ? ", " : "", s);
        const char *names[] = {"busy_s", "idle_s",         "bubble_s",   "comm_s",     "host_s",
                               "exposed_host_s", "memory_gib", "data_wait_s"};
        const double vals[] = {st->busy_s, st->idle_s,         st->bubble_s,  st->comm_s,
                               st->host_s, st->exposed_host_s, st->memory_gib, st->data_wait_s};
        for (int k = 0; k < 7 + (isfinite(st->data_wait_s) ? 1 : 0); k++) {
            fprintf(f, ", \"%s\": ", names[k]);
            jval(f, vals[k]);
        }
        fprintf(f, "}");
    }
    fprintf(f, "],\n");
}

static void run_modules(FILE *f, const mm_metrics *m)
{
    fprintf(f, "  \"modules\": [");
    for (int i = 0; i < m->n_modules; i++) {
        const mm_module_metrics *md = &m->modules[i];
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        mm_json_string(f, md->name);
        fprintf(f, ", \"gpus\": %d, \"compute_s\": ", md->gpus);
        jval(f, m->oom ? NAN : md->compute_s);
        fprintf(f, ", \"memory_gib\": ");
        jval(f, md->memory_gib);
        fprintf(f, "}");
    }
    fprintf(f, "],\n");
}

void mm_report_run_json(FILE *f, const mm_sim *sim, const mm_metrics *m, int64_t run_id, const char *db)
{
    fprintf(f, "{\n");
    jstr(f, "mmsim_version", MMSIM_VERSION);
    jstr(f, "scenario", sim->sc.source);
    jstr(f, "model", sim->llm->name);
    jstr(f, "topology", sim->cluster->name);
    if (run_id > 0) {
        jstr(f, "db", db);
        fprintf(f, "  \"run_id\": %lld,\n", (long long)run_id);
    }
    jnum(f, "iteration_time_s", m->oom ? NAN : m->iteration_time_s, 0);
    jnum(f, "iteration_time_p50_s", m->oom ? NAN : m->iteration_time_p50_s, 0);
    jnum(f, "iteration_time_p99_s", m->oom ? NAN : m->iteration_time_p99_s, 0);
    jnum(f, "tokens_per_s", m->tokens_per_s, 0);
    jnum(f, "samples_per_s", m->samples_per_s, 0);
    jnum(f, "mfu", m->mfu, 0);
    jnum(f, "hfu", m->hfu, 0);
    jnum(f, "tflops_per_gpu", m->tflops_per_gpu, 0);
    jnum(f, "hw_tflops_per_gpu", m->hw_tflops_per_gpu, 0);
    jnum(f, "padded_flops_fraction", m->padded_flops_fraction, 0);
    jnum(f, "bubble_fraction", m->bubble_fraction, 0);
    jnum(f, "exposed_comm_s", m->exposed_comm_s, 0);
    jnum(f, "host_launch_s", m->oom ? NAN : m->host_launch_s, 0);
    jnum(f, "exposed_host_s", m->oom ? NAN : m->exposed_host_s, 0);
    jnum(f, "peak_memory_gib", m->peak_memory_gib, 0);
    jnum(f, "peak_reserved_gib", m->peak_memory_gib, 0);
    jnum(f, "peak_allocated_gib", m->peak_allocated_gib, 0);
    if (sim->wl) /* memory that follows the data: the early check is a bound */
        jnum(f, "peak_memory_bound_gib", m->peak_memory_bound_gib, 0);
    if (m->oom && m->oom_at.iteration >= 0) {
        fprintf(f, "  \"oom_at\": {\"iteration\": %d, \"micro_batch\": %d, \"stage\": %d, \"replica\": %d, "
                   "\"need_gib\": %.6g, \"cap_gib\": ",
                m->oom_at.iteration, m->oom_at.micro_batch, m->oom_at.stage, m->oom_at.replica, m->oom_at.need_gib);
        if (isfinite(m->oom_at.cap_gib)) /* NaN: a perturbed GPU's own capacity */
            fprintf(f, "%.6g},\n", m->oom_at.cap_gib);
        else
            fprintf(f, "null},\n");
    }
    if (sim->n_enc) { /* max / mean over encoder ranks, mean over iterations */
        jnum(f, "encoder_load_imbalance", m->oom ? NAN : m->encoder_load_imbalance, 0);
        jnum(f, "encoder_excess_s", m->oom ? NAN : m->encoder_excess_s, 0);
    }
    if (sim->padding)
        jnum(f, "padded_fraction", m->oom ? NAN : m->padded_fraction, 0);
    mm_moe_load ld;
    if (mm_sim_moe_load(sim, &ld) == 0) { /* MoE: the busiest expert and EP rank over their means */
        jnum(f, "moe_expert_imbalance", mm_moe_expert_imbalance(&ld), 0);
        jnum(f, "moe_rank_imbalance", mm_moe_rank_imbalance(&ld), 0);
        jnum(f, "moe_dropped_fraction", ld.dropped, 0);
    }
    if (sim->sc.data.workers >= 0)
        run_data(f, m);
    if (m->run.on)
        run_periodic(f, m);
    if (m->outer.on)
        run_outer(f, m);
    fprintf(f, "  \"oom\": %s,\n", m->oom ? "true" : "false");
    fprintf(f, "  \"gpus\": %d,\n", m->gpus);
    fprintf(f, "  \"micro_batches\": %d,\n", sim->micro_batches);
    fprintf(f, "  \"events\": %llu,\n", (unsigned long long)m->events);
    run_dp_load(f, m);
    run_stages(f, m);
    run_modules(f, m);
    fprintf(f, "  \"critical_path\": [");
    for (int i = 0; i < m->crit.n; i++) {
        const mm_crit_entry *e = &m->crit.e[i];
        fprintf(f, "%s{\"rank\": %d, \"stage\": %d, \"what\": ", i ? ", " : "", e->rank, e->stage);
        mm_json_string(f, e->what);
        fprintf(f, ", \"seconds\": %.9g, \"share\": %.6g, \"ops\": %d}", e->seconds, e->share, e->ops);
    }
    fprintf(f, "],\n");
    /* the framework's per-layer breakdown (cost/breakdown.c), when the
     * layout has one */
    mm_sim_breakdown *bk = calloc(1, sizeof *bk);
    mm_err berr;
    if (bk && mm_sim_get_breakdown(sim, bk, &berr) == 0) {
        if (!m->oom)
            bk->run_data_wait_s = m->data_wait_s, bk->run_data_short_s = m->data_shortfall_s;
        mm_sim_breakdown_write_json(f, sim, bk, "  ");
        fprintf(f, ",\n");
    }
    free(bk);
    jnum(f, "wall_s", m->wall_s, 1);
    fprintf(f, "}\n");
}

/* ---- plan --------------------------------------------------------------- */

/* The kind of a pruning reason: the key it names, or "memory" for OOM. */
static void reason_kind(const char *r, char *out, size_t len)
{
    const char *k = r ? strstr(r, "key '") : NULL;
    if (r && !strncmp(r, "OOM", 3)) {
        snprintf(out, len, "memory (OOM)");
    } else if (k) {
        k += 5;
        const char *e = strchr(k, '\'');
        snprintf(out, len, "%.*s", e ? (int)(e - k) : (int)strlen(k), k);
    } else {
        snprintf(out, len, "other");
    }
}

static int cmp_count(const void *a, const void *b)
{
    const mm_reason_count *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return strcmp(x->kind, y->kind);
}

int mm_plan_count_reasons(const mm_plan *p, mm_reason_count *rc, int cap)
{
    int n = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->c[i].status != MM_CAND_PRUNED)
            continue;
        char kind[64];
        reason_kind(p->c[i].reason, kind, sizeof kind);
        int j = 0;
        while (j < n && strcmp(rc[j].kind, kind))
            j++;
        if (j == n) {
            if (n == cap)
                continue;
            snprintf(rc[n].kind, sizeof rc[n].kind, "%s", kind);
            rc[n++].n = 0;
        }
        rc[j].n++;
    }
    qsort(rc, (size_t)n, sizeof *rc, cmp_count);
    return n;
}

double mm_plan_margin(const mm_plan *p, size_t i)
{
    if (p->c[i].status != MM_CAND_SIMULATED || i + 1 >= p->n || p->c[i + 1].status != MM_CAND_SIMULATED)
        return NAN;
    return p->c[i + 1].sim_s / p->c[i].sim_s - 1;
}

static void print_dims(FILE *f, const char *name, const mm_layout *d, int llm)
{
    fprintf(f, "\"%s\": {\"tp\": %d, \"pp\": %d, ", name, d->tp, d->pp);
    if (llm)
        fprintf(f, "\"vpp\": %d, \"cp\": %d, ", d->vpp, d->cp);
    fprintf(f, "\"dp\": %d", d->dp);
    if (llm)
        fprintf(f, ", \"ep\": %d", d->ep);
    fprintf(f, "}");
}

static void jmember(FILE *f, const char *key, double v)
{
    fprintf(f, ", \"%s\": ", key);
    jval(f, v);
}

static void print_cand_json(FILE *f, const mm_plan *p, size_t i)
{
    const mm_plan_cand *c = &p->c[i];
    fprintf(f, "    {\"rank\": ");
    if (c->rank)
        fprintf(f, "%d", c->rank);
    else
        fprintf(f, "null");
    fprintf(f, ", \"candidate\": %d, \"status\": \"%s\", \"layout\": ", c->index, mm_cand_status_names[c->status]);
    mm_json_string(f, c->layout);
    fprintf(f, ", \"placement\": ");
    if (c->placement >= 0)
        mm_json_string(f, mm_placement_names[c->placement]);
    else
        fprintf(f, "null");
    fprintf(f, ", \"encoder_gpus\": %d, ", c->enc_gpus);
    print_dims(f, "llm", &c->llm, 1);
    fprintf(f, ", ");
    if (c->placement >= 0 && c->placement != MM_PLACE_HOMOGENEOUS)
        print_dims(f, "vision", &c->vision, 0);
    else
        fprintf(f, "\"vision\": null");
    fprintf(f, ", \"micro_batch\": %d, \"micro_batches\": ", c->micro_batch);
    if (c->micro_batches)
        fprintf(f, "%d", c->micro_batches);
    else
        fprintf(f, "null");
    fprintf(f, ", \"recompute\": \"%s\", \"encoder_recompute\": ", mm_recompute_names[c->recompute]);
    if (c->enc_recompute >= 0)
        fprintf(f, "\"%s\"", mm_recompute_names[c->enc_recompute]);
    else
        fprintf(f, "null");
    fprintf(f, ", \"zero\": %d, \"schedule\": \"%s\"", c->zero, mm_schedule_names[c->schedule]);
    bool sim = c->status == MM_CAND_SIMULATED;
    jmember(f, "estimate_s", c->est_s);
    jmember(f, "estimate_tflops_per_gpu", c->est_tflops);
    jmember(f, "iteration_time_s", c->sim_s);
    jmember(f, "tokens_per_s", c->sim_tokens_s);
    jmember(f, "tflops_per_gpu", sim ? c->sim_tflops : NAN);
    jmember(f, "mfu", sim ? c->sim_mfu : NAN);
    jmember(f, "peak_memory_gib", sim ? c->sim_mem_gib : c->mem_gib);
    jmember(f, "margin", mm_plan_margin(p, i));
    jmember(f, "lower_bound_s", c->bound_s);
    /* why it was not simulated, as data: memory (stage, GiB), the scenario's
     * validation, a lower bound above the best (its margin), an exact tie */
    const char *by = c->status == MM_CAND_BOUNDED ? "bound"
                     : c->status == MM_CAND_TIED  ? "tie"
                     : c->status != MM_CAND_PRUNED ? NULL
                     : (c->reason && !strncmp(c->reason, "OOM", 3)) ? "memory"
                                                                   : "validation";
    fprintf(f, ", \"pruned_by\": ");
    if (by)
        fprintf(f, "\"%s\"", by);
    else
        fprintf(f, "null");
    fprintf(f, ", \"oom_stage\": ");
    if (by && !strcmp(by, "memory") && c->oom_stage >= 0)
        fprintf(f, "%d", c->oom_stage);
    else
        fprintf(f, "null");
    jmember(f, "oom_gib", by && !strcmp(by, "memory") ? c->oom_gib : NAN);
    jmember(f, "bound_margin", c->status == MM_CAND_BOUNDED && p->best_s > 0 ? c->bound_s / p->best_s - 1 : NAN);
    fprintf(f, ", \"run_id\": ");
    if (c->run_id > 0)
        fprintf(f, "%lld", (long long)c->run_id);
    else
        fprintf(f, "null");
    fprintf(f, ", \"reason\": ");
    if (c->reason)
        mm_json_string(f, c->reason);
    else
        fprintf(f, "null");
    size_t need = mm_plan_cand_sets_json(c, NULL, 0) + 1;
    char *sets = malloc(need);
    if (sets)
        mm_plan_cand_sets_json(c, sets, need);
    fprintf(f, ", \"sets\": %s}", sets ? sets : "null");
    free(sets);
}

void mm_report_plan_json(FILE *f, const mm_plan *p, const char *db, bool all)
{
    fprintf(f, "{\n  \"mmsim_version\": \"%s\",\n  \"scenario\": ", MMSIM_VERSION);
    mm_json_string(f, p->base_source);
    fprintf(f, ",\n  \"model\": ");
    mm_json_string(f, p->model);
    fprintf(f, ",\n  \"gpus\": %d,\n  \"nodes\": %d,\n  \"gpus_per_node\": %d,\n  \"has_encoder\": %s,\n"
               "  \"top_k\": %d,\n  \"iterations\": %d,\n  \"db\": ",
            p->gpus, p->nodes, p->gpus_per_node, p->has_encoder ? "true" : "false", p->top_k, p->iterations);
    if (db)
        mm_json_string(f, db);
    else
        fprintf(f, "null");
    fprintf(f, ",\n  \"plan_id\": ");
    if (p->plan_id > 0)
        fprintf(f, "%lld", (long long)p->plan_id);
    else
        fprintf(f, "null");
    fprintf(f, ",\n  \"candidates\": %zu,\n  \"pruned\": %zu,\n  \"oom\": %zu,\n  \"estimated\": %zu,\n"
               "  \"simulated\": %zu,\n  \"failed\": %zu,\n",
            p->n, p->pruned, p->oom, p->estimated, p->simulated, p->failed);
    fprintf(f, "  \"tied\": %zu,\n  \"bounded\": %zu,\n  \"unproven\": %zu,\n  \"best_s\": ", p->tied, p->bounded,
            p->open);
    jval(f, p->best_s);
    fprintf(f, ",\n  \"optimal_within\": ");
    jval(f, p->optimal_within);
    fprintf(f, ",\n  \"space\": {");
    for (int d = 0; d < MM_SD_COUNT; d++)
        fprintf(f, "%s\"%s\": %zu", d ? ", " : "", mm_space_dim_names[d], p->dim_values[d]);
    fprintf(f, "},\n");
    fprintf(f, "  \"gpus_asked\": %d,\n  \"prescored\": %zu,\n  \"validate_wall_s\": %.6f,\n"
               "  \"prescore_wall_s\": %.6f,\n  \"prescores_per_s\": ",
            p->gpus_asked, p->prescored, p->validate_s, p->estimate_s);
    jval(f, p->estimate_s > 0 ? (double)p->prescored / p->estimate_s : NAN);
    fprintf(f, ",\n  \"simulate_wall_s\": %.6f,\n  \"wall_s\": %.6f,\n  \"pruned_by\": [", p->simulate_s, p->wall_s);
    mm_reason_count rc[64];
    int nr = mm_plan_count_reasons(p, rc, 64);
    for (int i = 0; i < nr; i++) {
        fprintf(f, "%s{\"reason\": ", i ? ", " : "");
        mm_json_string(f, rc[i].kind);
        fprintf(f, ", \"count\": %zu}", rc[i].n);
    }
    fprintf(f, "],\n  \"ranked\": [");
    size_t shown = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!all && p->c[i].status != MM_CAND_SIMULATED)
            continue;
        fprintf(f, "%s\n", shown++ ? "," : "");
        print_cand_json(f, p, i);
    }
    fprintf(f, "%s]\n}\n", shown ? "\n  " : "");
}

/* ---- mmsim collective --json / -J: nccl-tests' JSON (src/util.cu of
 * NVIDIA/nccl-tests, its file version 3): the same keys, nesting and value
 * forms, booleans included, which nccl-tests writes as the strings "true"
 * and "false" --------------------------------------------------------------- */

static void coll_double(FILE *f, double v)
{
    if (v != v)
        fputs("\"nan\"", f);
    else
        fprintf(f, "%lf", v);
}

static void coll_now(FILE *f)
{
    char buf[64];
    time_t now = time(NULL);
    struct tm tmv;
    localtime_r(&now, &tmv);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tmv);
    mm_json_string(f, buf);
}

void mm_report_coll_json_begin(FILE *f, const mm_coll_json_info *ji, const mm_coll_sweep_req *q,
                               const mm_cluster *c, const int *g)
{
    fprintf(f, "{\"version\":3,\"start_time\":");
    coll_now(f);
    fprintf(f, ",\"args\":[");
    for (int i = 0; i < ji->n_args; i++) {
        if (i)
            fputc(',', f);
        mm_json_string(f, i ? ji->args[i] : "mmsim collective");
    }
    /* no environment (nccl-tests copies the whole of it) and no NCCL */
    fprintf(f, "],\"env\":[],\"nccl_version\":0,\"config\":{\"nthreads\":1,\"ngpus\":%d,"
               "\"minimum_bytes\":%.0f,\"maximum_bytes\":%.0f,", q->gpus, q->lo, q->hi);
    if (q->factor > 1)
        fprintf(f, "\"step_factor\":%.0f,", q->factor);
    else
        fprintf(f, "\"step_bytes\":%.0f,", q->step);
    fprintf(f, "\"warmup_iters\":%d,\"iterations\":%d,\"aggregated_iterations\":1,\"validation\":%d,"
               "\"graph\":0,\"blocking_collectives\":\"%s\",\"per_iter_timing\":\"false\",\"per_iter_skip\":0,"
               "\"parallel_init\":\"false\",\"devices\":[",
            ji->warmup, q->iters, ji->check, ji->blocking ? "true" : "false");
    for (int i = 0; i < q->gpus; i++) {
        char host[32], info[160];
        snprintf(host, sizeof host, "node%d", g[i] / c->gpus_per_node);
        snprintf(info, sizeof info, "%s (simulated by mmsim)", c->gpu.name);
        fprintf(f, "%s{\"rank\":%d,\"group\":0,\"pid\":0,\"hostname\":", i ? "," : "", i);
        mm_json_string(f, host);
        fprintf(f, ",\"device\":%d,\"device_hex\":\"\",\"device_info\":", g[i] % c->gpus_per_node);
        mm_json_string(f, info);
        fputc('}', f);
    }
    fprintf(f, "]},\"mmsim\":{\"version\":\"%s\",\"collective\":\"%s\",\"cluster\":", MMSIM_VERSION,
            mm_coll_names[q->op]);
    mm_json_string(f, c->name);
    fprintf(f, ",\"network\":\"%s\",\"algo\":\"%s\"},\"results\":[", mm_net_model_names[q->model],
            mm_coll_algo_names[q->algo]);
}

void mm_report_coll_json_row(FILE *f, const mm_coll_row *r, int iters, bool first)
{
    fprintf(f, "%s{\"size\":%.0f,\"count\":%.0f,\"type\":", first ? "" : ",", r->bytes, r->count);
    mm_json_string(f, r->type);
    fprintf(f, ",\"redop\":");
    mm_json_string(f, r->redop);
    fprintf(f, ",\"root\":\"%6d\"", r->root);
    for (int half = 0; half < 2; half++) {
        fprintf(f, ",\"%s\":{\"time\":", half ? "in_place" : "out_of_place");
        coll_double(f, r->t_us);
        fprintf(f, ",\"alg_bw\":");
        coll_double(f, r->alg);
        fprintf(f, ",\"bus_bw\":");
        coll_double(f, r->bus);
        fprintf(f, ",\"nwrong\":null}");
    }
    fprintf(f, ",\"actual_iterations\":%d,\"experiment_name\":\"\",\"algo\":\"%s\"}", iters, r->algo);
}

void mm_report_coll_json_end(FILE *f, double avg_bus)
{
    fprintf(f, "],\"out_of_bounds\":{\"count\":0,\"okay\":\"true\"},\"average_bus_bandwidth\":{\"bandwidth\":");
    coll_double(f, avg_bus);
    fprintf(f, ",\"okay\":\"unchecked\"},\"errors\":[],\"end_time\":");
    coll_now(f);
    fprintf(f, "}\n");
}
