/* api.c - the C API of mmsim.h over the library's internal structs: a
 * handle owns one scenario, the simulation prepared from it, the last
 * metrics and the JSON strings handed out.  The JSON comes from report.c,
 * the same writer the CLI prints with.
 * Not for: anything the CLI needs beyond what a program embedding the
 * library would (printing tables, exit statuses). */
#include "api/mmsim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/report.h"
#include "mmsim_config.h"
#include "exec/run.h"
#include "hw/coll_sweep.h"

struct mmsim {
    mm_scenario sc;
    mm_sim sim;
    bool loaded;      /* sc holds a scenario */
    bool from_text;
    bool prepared;    /* sim was prepared from sc */
    bool have_metrics;
    mm_metrics m;
    char *path;       /* the scenario file (NULL: default or text) */
    char *text;       /* the scenario's YAML when opened from text */
    char **sets;      /* copies of the overrides, for the planner */
    int n_sets;
    mm_err err;
    char errtext[1200];
    char *run_json, *plan_json, *model_json, *coll_json, *wl_json;
};

const char *mm_version(void)
{
    return MMSIM_VERSION;
}

static int fail(mmsim *h, int rc)
{
    mm_err_format(&h->err, h->errtext, sizeof h->errtext);
    return rc;
}

static mmsim *open_any(const char *path, const char *text, const char *name, const char *const *sets, int n_sets)
{
    mmsim *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    mm_err_clear(&h->err);
    if (n_sets < 0 || (n_sets > 0 && !sets)) {
        mm_err_set(&h->err, MM_EINPUT, "<api>", 0, "sets", "n_sets %d without a list of overrides", n_sets);
        fail(h, -MM_EINPUT);
        return h;
    }
    h->sets = calloc((size_t)n_sets + 1, sizeof *h->sets);
    h->path = path ? strdup(path) : NULL;
    bool oom = !h->sets || (path && !h->path);
    for (int i = 0; !oom && i < n_sets; i++)
        oom = !(h->sets[h->n_sets++] = strdup(sets[i] ? sets[i] : ""));
    if (oom) {
        mm_err_set(&h->err, MM_EINTERNAL, "", 0, "", "out of memory");
        fail(h, -MM_EINTERNAL);
        return h;
    }
    h->from_text = text != NULL;
    if (text && !(h->text = strdup(text))) {
        mm_err_set(&h->err, MM_EINTERNAL, "", 0, "", "out of memory");
        fail(h, -MM_EINTERNAL);
        return h;
    }
    int rc = text ? mm_scenario_load_text(&h->sc, name, text, (const char *const *)h->sets, n_sets, &h->err)
                  : mm_scenario_load(&h->sc, path, (const char *const *)h->sets, n_sets, &h->err);
    if (rc)
        fail(h, rc);
    else
        h->loaded = true;
    return h;
}

mmsim *mmsim_open(const char *path, const char *const *sets, int n_sets)
{
    return open_any(path, NULL, NULL, sets, n_sets);
}

mmsim *mmsim_open_text(const char *text, const char *name, const char *const *sets, int n_sets)
{
    return open_any(NULL, text ? text : "", name, sets, n_sets);
}

void mmsim_close(mmsim *h)
{
    if (!h)
        return;
    if (h->have_metrics)
        mm_metrics_free(&h->m);
    mm_sim_free(&h->sim);
    mm_scenario_free(&h->sc); /* after the sim, which borrows its strings */
    for (int i = 0; i < h->n_sets; i++)
        free(h->sets[i]);
    free(h->sets);
    free(h->path);
    free(h->text);
    free(h->run_json);
    free(h->plan_json);
    free(h->model_json);
    free(h->coll_json);
    free(h->wl_json);
    free(h);
}

int mmsim_status(const mmsim *h)
{
    return h ? h->err.code : MMSIM_EINTERNAL;
}

const char *mmsim_error_message(const mmsim *h)
{
    return h ? h->errtext : "no handle (out of memory)";
}

const char *mmsim_error_file(const mmsim *h)
{
    return h ? h->err.file : "";
}

int mmsim_error_line(const mmsim *h)
{
    return h ? h->err.line : 0;
}

const char *mmsim_error_key(const mmsim *h)
{
    return h ? h->err.key : "";
}

/* A handle whose scenario did not load keeps failing with that error. */
static int usable(mmsim *h)
{
    if (!h)
        return -MM_EINTERNAL;
    return h->loaded ? 0 : -h->err.code;
}

/* Everything `write` prints, as one malloc'd string (NULL when out of memory). */
typedef void (*writer)(FILE *f, const void *a, const void *b);

static char *to_string(writer write, const void *a, const void *b)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    write(f, a, b);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int mmsim_run(mmsim *h)
{
    int rc = usable(h);
    if (rc)
        return rc;
    mm_err_clear(&h->err);
    h->errtext[0] = '\0';
    if (!h->prepared) {
        if ((rc = mm_sim_prepare(&h->sim, &h->sc, &h->err)))
            return fail(h, rc);
        h->prepared = true;
    }
    if (h->have_metrics) {
        mm_metrics_free(&h->m);
        h->have_metrics = false;
    }
    free(h->run_json);
    h->run_json = NULL;
    if ((rc = mm_sim_run(&h->sim, &h->m, NULL, &h->err)))
        return fail(h, rc);
    h->have_metrics = true;
    return 0;
}

static void write_run(FILE *f, const void *sim, const void *m)
{
    mm_report_run_json(f, sim, m, 0, NULL);
}

const char *mmsim_run_json(mmsim *h)
{
    if (!h || !h->have_metrics)
        return NULL;
    if (!h->run_json)
        h->run_json = to_string(write_run, &h->sim, &h->m);
    return h->run_json;
}

double mmsim_metric(const mmsim *h, const char *name)
{
    if (!h || !h->have_metrics || !name)
        return NAN;
    const mm_metrics *m = &h->m;
    mm_moe_load ld;
    bool moe = mm_sim_moe_load(&h->sim, &ld) == 0;
    const struct {
        const char *name;
        double v;
    } t[] = {
        {"iteration_time_s", m->oom ? NAN : m->iteration_time_s},
        {"iteration_time_p50_s", m->oom ? NAN : m->iteration_time_p50_s},
        {"iteration_time_p99_s", m->oom ? NAN : m->iteration_time_p99_s},
        {"tokens_per_s", m->tokens_per_s}, {"samples_per_s", m->samples_per_s},
        {"mfu", m->mfu}, {"hfu", m->hfu},
        {"tflops_per_gpu", m->tflops_per_gpu}, {"hw_tflops_per_gpu", m->hw_tflops_per_gpu},
        {"padded_flops_fraction", m->padded_flops_fraction},
        {"bubble_fraction", m->bubble_fraction}, {"exposed_comm_s", m->exposed_comm_s},
        {"host_launch_s", m->oom ? NAN : m->host_launch_s}, {"exposed_host_s", m->oom ? NAN : m->exposed_host_s},
        {"data_wait_s", m->oom ? NAN : m->data_wait_s}, {"data_h2d_s", m->oom ? NAN : m->data_h2d_s},
        {"loader_cpu_s", m->oom ? NAN : m->loader_cpu_s},
        {"data_workers_needed", m->oom || h->sim.sc.data.workers < 0 ? NAN : (double)m->data_workers_needed},
        {"data_shortfall_s", m->oom ? NAN : m->data_shortfall_s},
        {"checkpoint_save_s", m->oom || !m->run.on ? NAN : m->run.save_s},
        {"eval_s", m->oom || !m->run.on ? NAN : m->run.eval_s},
        {"log_sync_s", m->oom || !m->run.on ? NAN : m->run.log_sync_s},
        {"periodic_per_iteration_s", m->oom || !m->run.on ? NAN : m->run.per_iter_s},
        {"run_total_s", m->oom || !m->run.on ? NAN : m->run.total_s},
        {"sites", m->outer.on ? (double)m->outer.sites : NAN},
        {"outer_sync_s", m->oom || !m->outer.on ? NAN : m->outer.sync_s},
        {"outer_sync_exposed_s", m->oom || !m->outer.on ? NAN : m->outer.exposed_s},
        {"outer_sync_per_iteration_s", m->oom || !m->outer.on ? NAN : m->outer.per_iter_s},
        {"inner_step_s", m->oom || !m->outer.on ? NAN : m->outer.step_s},
        {"swap_exposed_s", m->oom || !m->swap.on ? NAN : m->swap.exposed_s},
        {"swap_step_s", m->oom || !m->swap.on ? NAN : m->swap.swap_step_s},
        {"wan_pipeline_step_s", m->oom || !m->swap.on ? NAN : m->swap.pp_step_s},
        {"peak_memory_gib", m->peak_memory_gib}, {"oom", m->oom ? 1 : 0},
        {"peak_reserved_gib", m->peak_memory_gib}, {"peak_allocated_gib", m->peak_allocated_gib},
        {"peak_memory_bound_gib", h->sim.wl ? m->peak_memory_bound_gib : NAN},
        {"encoder_load_imbalance", m->oom ? NAN : m->encoder_load_imbalance},
        {"encoder_excess_s", m->oom ? NAN : m->encoder_excess_s},
        {"padded_fraction", m->oom || !h->sim.padding ? NAN : m->padded_fraction},
        {"moe_expert_imbalance", moe ? mm_moe_expert_imbalance(&ld) : NAN},
        {"moe_rank_imbalance", moe ? mm_moe_rank_imbalance(&ld) : NAN},
        {"moe_dropped_fraction", moe ? ld.dropped : NAN},
        {"gpus", m->gpus}, {"micro_batches", h->sim.micro_batches},
        {"events", (double)m->events}, {"wall_s", m->wall_s},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(name, t[i].name))
            return isfinite(t[i].v) ? t[i].v : NAN;
    return NAN;
}

int mmsim_stage_count(const mmsim *h)
{
    return h && h->have_metrics ? h->m.n_stages : 0;
}

double mmsim_stage_metric(const mmsim *h, int stage, const char *name)
{
    if (!h || !h->have_metrics || !name || stage < 0 || stage >= h->m.n_stages)
        return NAN;
    const mm_stage_metrics *s = &h->m.stages[stage];
    double v = !strcmp(name, "busy_s")       ? s->busy_s
               : !strcmp(name, "idle_s")     ? s->idle_s
               : !strcmp(name, "bubble_s")   ? s->bubble_s
               : !strcmp(name, "comm_s")     ? s->comm_s
               : !strcmp(name, "memory_gib") ? s->memory_gib
                                             : NAN;
    return isfinite(v) ? v : NAN;
}

static void write_plan(FILE *f, const void *p, const void *all)
{
    mm_report_plan_json(f, p, NULL, *(const int *)all != 0);
}

const char *mmsim_plan_json(mmsim *h, int gpus, int top_k, int iterations, int all)
{
    if (usable(h))
        return NULL;
    mm_err_clear(&h->err);
    h->errtext[0] = '\0';
    /* the scenario this handle loaded (from a file or from text), as it is:
     * the planner reads nothing again */
    mm_plan_opts o = {.base = &h->sc, .gpus = gpus, .top_k = top_k, .iterations = iterations, .jobs = 1,
                      .version = MMSIM_VERSION};
    mm_plan p;
    if (mm_plan_run(&o, &p, &h->err)) {
        fail(h, -h->err.code);
        return NULL;
    }
    free(h->plan_json);
    h->plan_json = to_string(write_plan, &p, &all);
    mm_plan_free(&p);
    return h->plan_json;
}

static void write_model(FILE *f, const void *r, const void *unused)
{
    (void)unused;
    mm_report_model_json(f, r);
}

const char *mmsim_model_json(mmsim *h, const char *model, long long seq, long long images)
{
    if (usable(h))
        return NULL;
    mm_err_clear(&h->err);
    h->errtext[0] = '\0';
    if (!model || seq < 0 || images < 0) {
        mm_err_set(&h->err, MM_EINPUT, "<api>", 0, !model ? "model" : seq < 0 ? "seq" : "images",
                   "needs a model file, seq >= 0 and images >= 0");
        fail(h, -MM_EINPUT);
        return NULL;
    }
    /* the handle's scenario and overrides, then model= and seq, as
     * `mmsim model MODEL --set ...` loads them */
    mm_model_report r;
    const char *out = NULL;
    if (mm_model_report_make(h->from_text ? h->sc.source : h->path, h->text, model, (const char *const *)h->sets,
                             h->n_sets, seq, images, &r, &h->err)) {
        fail(h, -h->err.code);
    } else {
        free(h->model_json);
        h->model_json = to_string(write_model, &r, NULL);
        out = h->model_json;
    }
    mm_model_report_free(&r);
    return out;
}

static int lookup(const char *const *names, const char *v)
{
    for (int i = 0; v && names[i]; i++)
        if (!strcmp(names[i], v))
            return i;
    return -1;
}

/* The JSON of the sweep, built as its rows come. */
typedef struct coll_out {
    FILE *f;
    int rows, iters;
    double bus_sum;
} coll_out;

static int coll_row_out(const mm_coll_row *row, void *ctx)
{
    coll_out *co = ctx;
    mm_report_coll_json_row(co->f, row, co->iters, co->rows == 0);
    co->bus_sum += row->bus;
    co->rows++;
    return 0;
}

static int lookup_dtype(const char *v)
{
    for (int i = 0; v && mm_coll_dtypes[i].name; i++)
        if (!strcmp(mm_coll_dtypes[i].name, v))
            return i;
    return -2;
}

/* A collective sweep's request as looked up from its names: refused by the
 * name it came from when that name is unknown or a number out of range; a
 * part of collective. */
static int check_coll_req(mmsim *h, const mm_coll_sweep_req *q, const char *op, const char *algo, const char *network,
                          const char *redop, const char *dtype, double factor, int nodes)
{
    if ((int)q->op < 0)
        return mm_err_set(&h->err, MM_EINPUT, "<api>", 0, "op", "unknown collective '%s' (allreduce, allgather, "
                          "reducescatter, alltoall, broadcast, sendrecv)", op ? op : "(null)");
    if ((int)q->algo < 0)
        return mm_err_set(&h->err, MM_EINPUT, "<api>", 0, "algo", "unknown algorithm '%s' (auto, ring, tree, hier, "
                          "nvls)", algo);
    if ((int)q->model < 0)
        return mm_err_set(&h->err, MM_EINPUT, "<api>", 0, "network", "'%s' is not flow or analytic", network);
    if (q->redop < -1)
        return mm_err_set(&h->err, MM_EINPUT, "<api>", 0, "redop", "unknown operator '%s' (sum, prod, max, min, avg, "
                          "mulsum, all)", redop);
    if (q->dtype < -1)
        return mm_err_set(&h->err, MM_EINPUT, "<api>", 0, "dtype", "unknown data type '%s'", dtype);
    if (!(q->factor > 1))
        return mm_err_set(&h->err, MM_EINPUT, "<api>", 0, "factor", "%g: a factor above 1", factor);
    if (nodes < 0)
        return mm_err_set(&h->err, MM_EINPUT, "<api>", 0, "nodes", "%d nodes", nodes);
    return 0;
}

/* The sweep of `mmsim collective`: the same request, rows and JSON (its
 * "args" the command line that gives the same rows). */
static int collective(mmsim *h, const char *op, const char *cluster, int nodes, int gpus, const char *algo,
                      double lo, double hi, double factor, const char *network, int comm_ranks, const char *dtype,
                      const char *redop, int iters)
{
    mm_coll_sweep_req q = {.op = (mm_coll_kind)lookup(mm_coll_names, op),
                           .algo = (mm_coll_algo)(algo ? lookup(mm_coll_algo_names, algo) : MM_ALGO_AUTO),
                           .model = (mm_net_model)(network ? lookup(mm_net_model_names, network) : MM_NET_MODEL_FLOW),
                           .comm_ranks = comm_ranks, .iters = iters ? iters : 1,
                           .redop = redop && !strcmp(redop, "all") ? -1
                                    : redop                       ? (lookup(mm_redop_names, redop) >= 0
                                                                         ? lookup(mm_redop_names, redop) : -2)
                                                                  : MM_REDOP_SUM,
                           .dtype = dtype && !strcmp(dtype, "all") ? -1 : lookup_dtype(dtype ? dtype : "float"),
                           .lo = lo > 0 ? lo : 8, .hi = hi > 0 ? hi : 8.0 * 1024 * 1024 * 1024,
                           .factor = factor > 0 ? factor : 2, .step = 0};
    int rc = check_coll_req(h, &q, op, algo, network, redop, dtype, factor, nodes);
    if (rc)
        return rc;
    char path[1024];
    if (cluster)
        mm_sim_resolve_path(cluster, NULL, path, sizeof path);
    else
        mm_sim_resolve_path(h->sc.topology, h->sc.source, path, sizeof path);
    mm_cluster *c = malloc(sizeof *c);
    if (!c)
        return mm_err_set(&h->err, MM_EINTERNAL, "", 0, "", "out of memory");
    rc = mm_cluster_load(path, nodes ? nodes : cluster ? 0 : h->sc.nodes, c, &h->err);
    if (rc) {
        free(c);
        return rc;
    }
    q.gpus = gpus ? gpus : q.op == MM_COLL_SENDRECV ? 2 : mm_cluster_gpus(c);
    int *g = malloc((size_t)(q.gpus > 0 ? q.gpus : 1) * sizeof *g);
    char *text = NULL;
    size_t len = 0;
    coll_out co = {.iters = q.iters};
    if (!g || !(co.f = open_memstream(&text, &len))) {
        rc = mm_err_set(&h->err, MM_EINTERNAL, "", 0, "", "out of memory");
    } else if (!(rc = mm_coll_sweep_check(c, &q, &h->err))) {
        /* the command line that gives these rows, for the JSON's args */
        char w[12][64];
        snprintf(w[0], sizeof w[0], "--nodes=%d", c->nodes);
        snprintf(w[1], sizeof w[1], "-g%d", q.gpus);
        snprintf(w[2], sizeof w[2], "-b%.0f", q.lo);
        snprintf(w[3], sizeof w[3], "-e%.0f", q.hi);
        snprintf(w[4], sizeof w[4], "-f%g", q.factor);
        snprintf(w[5], sizeof w[5], "--algo=%s", mm_coll_algo_names[q.algo]);
        snprintf(w[6], sizeof w[6], "--network=%s", mm_net_model_names[q.model]);
        snprintf(w[7], sizeof w[7], "-d%s", q.dtype < 0 ? "all" : mm_coll_dtypes[q.dtype].name);
        snprintf(w[8], sizeof w[8], "-o%s", q.redop < 0 ? "all" : mm_redop_names[q.redop]);
        snprintf(w[9], sizeof w[9], "-n%d", q.iters);
        snprintf(w[10], sizeof w[10], "--comm-ranks=%d", q.comm_ranks);
        char cl[1100];
        snprintf(cl, sizeof cl, "--cluster=%s", path);
        const char *args[16] = {"mmsim collective", mm_coll_names[q.op], cl};
        int n = 3;
        for (int i = 0; i < (q.comm_ranks ? 11 : 10); i++)
            args[n++] = w[i];
        const mm_coll_json_info ji = {.args = args, .n_args = n};
        mm_coll_sweep_ranks(c, &q, g);
        mm_report_coll_json_begin(co.f, &ji, &q, c, g);
        if (!(rc = mm_coll_sweep(c, &q, coll_row_out, &co, &h->err)))
            mm_report_coll_json_end(co.f, co.rows ? co.bus_sum / co.rows : 0.0);
    }
    if (co.f && fclose(co.f) && !rc)
        rc = mm_err_set(&h->err, MM_EINTERNAL, "", 0, "", "out of memory");
    if (!rc) {
        free(h->coll_json);
        h->coll_json = text;
        text = NULL;
    }
    free(text);
    free(g);
    mm_cluster_free(c);
    free(c);
    return rc;
}

const char *mmsim_collective_json(mmsim *h, const char *op, const char *cluster, int nodes, int gpus,
                                  const char *algo, double min_bytes, double max_bytes, double factor,
                                  const char *network, int comm_ranks, const char *dtype, const char *redop,
                                  int iters)
{
    if (usable(h))
        return NULL;
    mm_err_clear(&h->err);
    h->errtext[0] = '\0';
    int rc = collective(h, op, cluster, nodes, gpus, algo, min_bytes, max_bytes, factor, network, comm_ranks, dtype,
                        redop, iters);
    if (rc) {
        fail(h, rc);
        return NULL;
    }
    return h->coll_json;
}

static void write_wl(FILE *f, const void *r, const void *unused)
{
    (void)unused;
    mm_report_workload_json(f, r);
}

const char *mmsim_workload_stats_json(mmsim *h, const char *file, const char *model, long long samples,
                                      long long seed, long long tokens_per_tile, long long tokens_per_frame,
                                      long long max_tokens)
{
    if (usable(h))
        return NULL;
    mm_err_clear(&h->err);
    h->errtext[0] = '\0';
    const mm_wl_report_opts o = {.file = file, .model = model, .samples = samples, .seed = seed,
                                 .tokens_per_tile = tokens_per_tile, .tokens_per_frame = tokens_per_frame,
                                 .max_tokens = max_tokens};
    mm_wl_report *r = malloc(sizeof *r);
    int rc = r ? mm_wl_report_make(&o, r, &h->err) : mm_err_set(&h->err, MM_EINTERNAL, "", 0, "", "out of memory");
    if (!rc) {
        free(h->wl_json);
        h->wl_json = to_string(write_wl, r, NULL);
        if (!h->wl_json)
            rc = mm_err_set(&h->err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    free(r);
    if (rc) {
        fail(h, rc);
        return NULL;
    }
    return h->wl_json;
}
