/* iterate.c - the iteration loop (mm_sim_run): costs, memory and OOM,
 * then per iteration build the graph, execute it and measure it (busy,
 * bubble, exposed communication, per-module time, critical path,
 * perturbation stalls), and the run's averages and percentiles.
 * Not for: the costs (costs.c) or the analytic estimate (estimate.c). */
#include "exec/run.h"

#include "cost/cost_internal.h"
#include "cost/runcost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "model/memory.h"
#include "exec/exec.h"
#include "exec/loadrun.h"
#include "exec/symmetry.h"
#include "util/misc.h"

void mm_metrics_rates(mm_metrics *mt, double T, double tokens, double samples, double model_flops, double pad_flops,
                      double hw_flops, int gpus, double peak)
{
    mt->tokens_per_s = tokens / T;
    mt->samples_per_s = samples / T;
    mt->tflops_per_gpu = model_flops / (T * gpus) * 1e-12;
    mt->hw_tflops_per_gpu = hw_flops / (T * gpus) * 1e-12;
    mt->mfu = model_flops / (T * gpus * peak);
    mt->hfu = hw_flops / (T * gpus * peak);
    mt->padded_flops_fraction = model_flops + pad_flops > 0 ? pad_flops / (model_flops + pad_flops) : 0;
}

void mm_metrics_free(mm_metrics *m)
{
    if (!m)
        return;
    free(m->iters);
    free(m->stages);
    free(m->dp_rank_load_s);
    mm_critpath_free(&m->crit);
    m->dp_rank_load_s = NULL;
    m->iters = NULL;
    m->stages = NULL;
    m->n_iters = m->n_stages = 0;
}

void mm_sim_timeline_free(mm_sim_timeline *tl)
{
    if (!tl)
        return;
    mm_graph_free(&tl->graph);
    free(tl->start);
    free(tl->end);
    free(tl->host_start);
    tl->start = tl->end = tl->host_start = NULL;
}

/* The whole graph's op order: seg[0..n) (first, end) ranges, each taken
 * `copies` times (mm_graph.replicas); a whole graph is one range once.
 * Sums over the ops follow it, so that one replica's graph adds the same
 * numbers in the same order as the whole graph: the same bits. */
typedef struct whole_order {
    const uint32_t *seg; /* NULL: [0, n_ops) */
    uint32_t n, n_ops;
    int copies;
} whole_order;

static whole_order whole_order_of(const mm_graph *g)
{
    if (g->replicas <= 1)
        return (whole_order){.seg = NULL, .n = 1, .n_ops = g->n_ops, .copies = 1};
    return (whole_order){.seg = g->seg, .n = g->n_seg, .n_ops = g->n_ops, .copies = g->replicas};
}

static uint32_t seg_lo(const whole_order *w, uint32_t k) { return w->seg ? w->seg[2 * k] : 0; }
static uint32_t seg_hi(const whole_order *w, uint32_t k) { return w->seg ? w->seg[2 * k + 1] : w->n_ops; }

/* Whether op i is a kernel of a module's compute (module_time counts it). */
static bool module_kernel(const mm_op *op)
{
    return (op->stream == MM_STREAM_COMPUTE || op->stream == MM_STREAM_FILL) && !mm_cat_is_comm(op->cat) &&
           op->module < MM_MAX_MODULES;
}

_Static_assert(MM_MAX_MODULES == 4, "whole_sums keeps one register per module");

/* What one op adds to the whole-order sums: model and hardware FLOPs,
 * then its kernel seconds in its module's lane and +0.0 in the others
 * (adding +0.0 leaves a sum that started at +0.0 as it is), so that one
 * replica's copies are summed without a branch per op. */
typedef struct op_add {
    double v[2 + MM_MAX_MODULES];
} op_add;

/* The model and hardware FLOPs of every op, and each module's kernel
 * seconds, summed in the whole graph's order (busy may be NULL).  One
 * replica's graph takes each segment `copies` times over a compact list
 * of the ops that add something (an add of +0.0 leaves a sum that started
 * at +0.0 as it is), so the pass costs one add per whole graph's op that
 * computes.  -1 when out of memory. */
static int whole_sums(const mm_graph *g, const mm_time *start, const mm_time *end, double *mflops, double *hflops,
                      double *busy)
{
    double mf = 0, hf = 0, bz[MM_MAX_MODULES] = {0};
    if (g->replicas <= 1) {
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const mm_op *op = &g->ops[i];
            mf += op->flops;
            hf += op->hw_flops;
            if (module_kernel(op))
                bz[op->module] += (double)(end[i] - start[i]) * 1e-9;
        }
    } else {
        whole_order w = whole_order_of(g);
        op_add *a = malloc(((size_t)g->n_ops + 1) * sizeof *a);
        uint32_t *off = malloc(((size_t)w.n + 1) * sizeof *off);
        if (!a || !off) {
            free(a);
            free(off);
            return -1;
        }
        uint32_t n = 0;
        for (uint32_t k = 0; k < w.n; k++) {
            off[k] = n;
            for (uint32_t i = seg_lo(&w, k); i < seg_hi(&w, k); i++) {
                const mm_op *op = &g->ops[i];
                op_add x = {{op->flops, op->hw_flops}};
                if (module_kernel(op))
                    x.v[2 + op->module] = (double)(end[i] - start[i]) * 1e-9;
                if (x.v[0] != 0 || x.v[1] != 0 || (module_kernel(op) && x.v[2 + op->module] != 0))
                    a[n++] = x;
            }
        }
        off[w.n] = n;
        /* six independent sums in registers, each in op order (the
         * compiler may pair lanes in vector adds: the same additions) */
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0;
        for (uint32_t k = 0; k < w.n; k++)
            for (int c = 0; c < w.copies; c++)
                for (uint32_t j = off[k]; j < off[k + 1]; j++) {
                    const double *v = a[j].v;
                    s0 += v[0];
                    s1 += v[1];
                    s2 += v[2];
                    s3 += v[3];
                    s4 += v[4];
                    s5 += v[5];
                }
        mf = s0, hf = s1, bz[0] = s2, bz[1] = s3, bz[2] = s4, bz[3] = s5;
        free(a);
        free(off);
    }
    *mflops = mf;
    *hflops = hf;
    if (busy)
        memcpy(busy, bz, sizeof bz);
    return 0;
}

/* Compute seconds of each module on one of its GPUs, from the executed
 * graph (all kernels on compute streams, averaged over the ranks that run
 * the module; busy: their seconds, whole_sums). */
static void module_time(const mm_graph *g, const double *busy, const mm_build_spec *spec, mm_metrics *mt)
{
    int ranks[MM_MAX_MODULES] = {0};
    unsigned char *seen = calloc((size_t)g->n_ranks * MM_MAX_MODULES, 1);
    if (!seen)
        return;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        if (!module_kernel(op))
            continue;
        unsigned char *f = &seen[(size_t)op->rank * MM_MAX_MODULES + op->module];
        if (!*f) {
            *f = 1;
            ranks[op->module] += g->replicas; /* one replica's rank stands for its copies */
        }
    }
    free(seen);
    int tpcp = spec->lay.tp * (spec->lay.cp > 0 ? spec->lay.cp : 1);
    for (int m = 0; m < mt->n_modules && m <= MM_MAX_ENCODERS; m++) {
        mt->modules[m].compute_s += ranks[m] ? busy[m] / ranks[m] : 0;
        int per = m == 0 ? tpcp : spec->enc[m - 1].placement == MM_ENC_PIPELINE ||
                                          spec->enc[m - 1].placement == MM_ENC_DISJOINT
                                      ? spec->enc[m - 1].tp
                                      : tpcp;
        mt->modules[m].gpus = ranks[m] * per;
    }
}

/* ---- measurement ---- */

/* A rank's interval endpoints as sort keys: (time - t_min) << 2 | kind,
 * kind 0/1 compute opens/closes, 2/3 communication opens/closes.  Only
 * the order by time matters: endpoints at one instant add zero-length
 * gaps, and the counts after the last of them do not depend on their
 * order, so any order of ties gives the same sum bit for bit. */
enum { SPAN_COMP_OPEN, SPAN_COMP_CLOSE, SPAN_COMM_OPEN, SPAN_COMM_CLOSE };

/* Sorts k[0..n) (tmp: n more) by LSD radix on bytes, as many as the
 * largest key has; short runs by insertion.  qsort with a comparator was
 * 6 % of a plan's CPU time. */
static void sort_keys(uint64_t *k, uint64_t *tmp, size_t n)
{
    if (n < 48) {
        for (size_t i = 1; i < n; i++) {
            uint64_t x = k[i];
            size_t j = i;
            for (; j > 0 && k[j - 1] > x; j--)
                k[j] = k[j - 1];
            k[j] = x;
        }
        return;
    }
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++)
        max = k[i] > max ? k[i] : max;
    uint64_t *a = k, *b = tmp;
    for (unsigned sh = 0; sh < 64 && (max >> sh) != 0; sh += 8) {
        size_t cnt[257] = {0};
        for (size_t i = 0; i < n; i++)
            cnt[((a[i] >> sh) & 255) + 1]++;
        for (int d = 0; d < 256; d++)
            cnt[d + 1] += cnt[d];
        for (size_t i = 0; i < n; i++)
            b[cnt[(a[i] >> sh) & 255]++] = a[i];
        uint64_t *t = a;
        a = b, b = t;
    }
    if (a != k)
        memcpy(k, a, n * sizeof *k);
}

/* Time during which some communication of the rank runs and none of its
 * compute does. */
static double exposed_ns(uint64_t *sp, uint64_t *tmp, size_t n)
{
    sort_keys(sp, tmp, n);
    int comp = 0, comm = 0;
    double exposed = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && comm > 0 && comp == 0)
            exposed += (double)((sp[i] >> 2) - (sp[i - 1] >> 2));
        unsigned kind = (unsigned)(sp[i] & 3);
        comp += kind == SPAN_COMP_OPEN ? 1 : kind == SPAN_COMP_CLOSE ? -1 : 0;
        comm += kind == SPAN_COMM_OPEN ? 1 : kind == SPAN_COMM_CLOSE ? -1 : 0;
    }
    return exposed;
}

/* The endpoints of every op, keyed by time and kind, into sp, grouped by
 * rank (cnt: the endpoints' count per rank, made the groups' offsets);
 * -1 when out of memory.  A part of measure. */
static int fill_spans(const mm_graph *g, const mm_time *start, const mm_time *end, size_t *cnt, uint64_t *sp)
{
    int R = g->n_ranks;
    /* keys hold times from the earliest start on (the run's times are
     * int64 ns, at most 2^62 apart) */
    mm_time tmin = g->n_ops ? start[0] : 0;
    for (uint32_t i = 0; i < g->n_ops; i++)
        tmin = start[i] < tmin ? start[i] : tmin;
    for (int r = 0; r < R; r++)
        cnt[r + 1] += cnt[r];
    size_t *fill = calloc((size_t)R, sizeof *fill);
    if (!fill)
        return -1;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        int is_comm = mm_cat_is_comm(op->cat), ranks[2] = {op->rank, op->peer};
        for (int k = 0; k < 2; k++) {
            if (ranks[k] < 0)
                continue;
            uint64_t *base = sp + cnt[ranks[k]] + fill[ranks[k]];
            base[0] = (uint64_t)(start[i] - tmin) << 2 | (is_comm ? SPAN_COMM_OPEN : SPAN_COMP_OPEN);
            base[1] = (uint64_t)(end[i] - tmin) << 2 | (is_comm ? SPAN_COMM_CLOSE : SPAN_COMP_CLOSE);
            fill[ranks[k]] += 2;
        }
    }
    free(fill);
    return 0;
}

/* Each stage's busy, idle, communication, bubble and host time: the means
 * over its ranks' sums (pipe: the pipeline's span, total: the iteration's,
 * in ns; host and hwait in s); a part of measure. */
static void stage_sums(const double *busy, const double *comm, const double *busy_pipe, const double *host,
                       const double *hwait, double pipe, double total, mm_stage_metrics *stages, int n_stages,
                       int ranks_per_stage, int K)
{
    for (int s = 0; s < n_stages && stages; s++) {
        double b = 0, c = 0, bp = 0, h = 0, hw = 0;
        for (int d = 0; d < ranks_per_stage; d++) {
            int q = (d + ranks_per_stage * s) / K; /* K: the graph's replicas */
            h += host[q];
            hw += hwait[q];
            b += busy[q];
            c += comm[q];
            bp += busy_pipe[q];
        }
        stages[s].stage = s;
        stages[s].bubble_s += (pipe - bp / ranks_per_stage) * 1e-9;
        stages[s].busy_s += b / ranks_per_stage * 1e-9;
        stages[s].idle_s += (total - b / ranks_per_stage) * 1e-9;
        stages[s].comm_s += c / ranks_per_stage * 1e-9;
        stages[s].host_s += h / ranks_per_stage;
        stages[s].exposed_host_s += hw / ranks_per_stage;
    }
}

/* mm_sim_measure; exposed_too false leaves the exposed communication out
 * (NaN): the endpoints' bucketing and sort are most of the measurement. */
static void measure(const mm_graph *g, const mm_time *start, const mm_time *end, mm_time t0, mm_time t1,
                    mm_iter_metrics *it, mm_stage_metrics *stages, int n_stages, int ranks_per_stage,
                    bool exposed_too, const double *host_wait, double *mod_busy)
{
    int R = g->n_ranks, K = g->replicas > 1 ? g->replicas : 1;
    mm_time t_pipe = t0;
    double mflops = 0, hflops = 0;
    double *ex = calloc((size_t)R + 1, sizeof *ex);
    double *busy_pipe = calloc((size_t)R, sizeof *busy_pipe);
    double *busy = calloc((size_t)R, sizeof *busy);
    double *comm = calloc((size_t)R, sizeof *comm);
    double *host = calloc((size_t)R, sizeof *host), *hwait = calloc((size_t)R, sizeof *hwait);
    size_t *cnt = calloc((size_t)R + 1, sizeof *cnt);
    uint64_t *sp = malloc(((exposed_too ? 8 * (size_t)g->n_ops : 0) + 1) * sizeof *sp);
    uint64_t *tmp = sp && exposed_too ? sp + 4 * (size_t)g->n_ops : NULL;
    if (!busy_pipe || !busy || !comm || !cnt || !sp || !host || !hwait || !ex)
        goto out;
    /* One pass over the ops for the sums (each in op order, as before),
     * and the endpoints' count per rank (a transfer counts for both ends). */
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        bool kern = op->stream == MM_STREAM_COMPUTE || op->stream == MM_STREAM_FILL;
        if (op->mb >= 0 && kern && end[i] > t_pipe)
            t_pipe = end[i];
        double d = (double)(end[i] - start[i]);
        if (op->stream == MM_STREAM_FILL) { /* an encoder kernel in a bubble: the GPU is busy */
            busy[op->rank] += d;
            if (op->mb >= 0)
                busy_pipe[op->rank] += d;
        }
        if (op->stream == MM_STREAM_COMPUTE) {
            host[op->rank] += op->host_s;
            hwait[op->rank] += host_wait ? host_wait[i] : 0.0;
            busy[op->rank] += d;
            if (op->mb >= 0)
                busy_pipe[op->rank] += d;
        }
        if (mm_cat_is_comm(op->cat))
            comm[op->rank] += d;
        cnt[op->rank + 1] += 2;
        if (op->peer >= 0)
            cnt[op->peer + 1] += 2;
    }
    /* the FLOPs (and modules' seconds) in the whole graph's op order */
    if (whole_sums(g, start, end, &mflops, &hflops, mod_busy))
        goto out;
    if (exposed_too && fill_spans(g, start, end, cnt, sp))
        goto out;
    for (int q = 0; q < R && exposed_too; q++)
        ex[q] = exposed_ns(sp + cnt[q], tmp + cnt[q], cnt[q + 1] - cnt[q]);
    double pipe = (double)(t_pipe - t0), total = (double)(t1 - t0);
    double bubble = 0, exposed = 0, host_all = 0, wait_all = 0;
    /* over the whole graph's ranks: rank r of it is r / K of g */
    for (int r = 0; r < R * K; r++) {
        int q = r / K;
        host_all += host[q];
        wait_all += hwait[q];
        bubble += pipe > 0 ? (pipe - busy_pipe[q]) / pipe : 0;
        if (exposed_too)
            exposed += ex[q];
    }
    R *= K;
    it->time_s = total * 1e-9;
    it->bubble_fraction = bubble / R;
    it->exposed_comm_s = exposed_too ? exposed / R * 1e-9 : NAN;
    it->host_launch_s = R > 0 ? host_all / R : 0;
    it->exposed_host_s = R > 0 ? wait_all / R : 0;
    it->model_flops = mflops;
    it->hw_flops = hflops;
    stage_sums(busy, comm, busy_pipe, host, hwait, pipe, total, stages, n_stages, ranks_per_stage, K);
out:
    free(ex);
    free(host);
    free(hwait);
    free(busy_pipe);
    free(busy);
    free(comm);
    free(cnt);
    free(sp);
}

void mm_sim_measure(const mm_graph *g, const mm_time *start, const mm_time *end,
                    mm_time t0, mm_time t1, mm_iter_metrics *it,
                    mm_stage_metrics *stages, int n_stages, int ranks_per_stage)
{
    measure(g, start, end, t0, t1, it, stages, n_stages, ranks_per_stage, true, NULL, NULL);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- perturbations ---- */

/* Per op of a built graph: the memory-bound share of its nominal time
 * (LLM passes from the stage costs, every optimizer step 1, encoder passes
 * 0), for the executor's pace model.  NULL when out of memory. */
static double *op_mem_frac(const mm_graph *g, const double *frac, int V)
{
    double *m = malloc((g->n_ops + 1) * sizeof *m);
    if (!m)
        return NULL;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        int c = op->cat == MM_CAT_FWD ? 0 : op->cat == MM_CAT_BWD ? 1 : op->cat == MM_CAT_WGRAD ? 2 : -1;
        if (op->cat == MM_CAT_OPT)
            m[i] = 1.0; /* Adam streams its states through HBM (the profile's step bytes) */
        else if (op->module == 0 && c >= 0 && op->stage >= 0 && op->stage < V)
            m[i] = frac[3 * op->stage + c];
        else
            m[i] = 0.0;
    }
    return m;
}

/* HBM capacity per GPU after node groups' GPUs and hbm perturbations: a
 * rank whose GPU holds less than its stage's (or its encoder's) peak plus
 * the reserve makes the run OOM, like any layout that does not fit. */
static bool capacity_oom(const mm_sim *sim, const mm_build_spec *spec, const mm_metrics *mt)
{
    const mm_cluster *c = sim->cluster;
    const mm_module_layout *L = &sim->sc.parallel.llm;
    bool changed = false;
    for (int i = 0; i < c->n_groups; i++)
        changed |= c->groups[i].has_gpu;
    for (int i = 0; i < c->pt.n; i++)
        changed |= c->pt.e[i].kind == MM_PT_HBM && c->pt.e[i].hbm_cap != 1.0;
    if (!changed)
        return false;
    mm_graph g;
    mm_gpu_pace pace;
    mm_err e;
    if (mm_build_iteration(spec, &g, NULL)) /* the run's own build reports the failure */
        return false;
    int *module = malloc((size_t)(g.n_ranks + 1) * sizeof *module);
    if (!module || !g.rank_gpu_off || mm_gpu_pace_build(&pace, c, &e)) {
        free(module);
        mm_graph_free(&g);
        return false;
    }
    for (int r = 0; r < g.n_ranks; r++)
        module[r] = -1;
    for (uint32_t i = 0; i < g.n_ops; i++)
        if (module[g.ops[i].rank] < 0)
            module[g.ops[i].rank] = g.ops[i].module;
    double reserve = sim->sc.train.memory_reserve_gib * MM_GIB;
    bool oom = false;
    for (int r = 0; r < g.n_ranks && !oom; r++) {
        double gib = r < L->lay.pp * L->lay.dp ? mt->stages[r / L->lay.dp].memory_gib
                     : module[r] > 0 && module[r] < mt->n_modules ? mt->modules[module[r]].memory_gib
                                                                 : 0;
        for (uint32_t k = g.rank_gpu_off[r]; k < g.rank_gpu_off[r + 1]; k++)
            oom |= gib * MM_GIB + reserve > pace.hbm_bytes[g.rank_gpus[k]];
    }
    mm_gpu_pace_free(&pace);
    free(module);
    mm_graph_free(&g);
    return oom;
}

/* A periodic stall (checkpoint write) ends the iteration on every rank:
 * it joins the critical path as its own entry. */
static int crit_add_stall(mm_critpath *cp, double stall_s, double total_s, const char *what)
{
    mm_crit_entry *e = realloc(cp->e, (size_t)(cp->n + 1) * sizeof *e);
    if (!e)
        return -1;
    cp->e = e;
    for (int i = 0; i < cp->n; i++)
        e[i].share = e[i].seconds / total_s;
    mm_crit_entry x = {.rank = -1, .stage = -1, .seconds = stall_s, .share = stall_s / total_s, .ops = 0};
    snprintf(x.what, sizeof x.what, "%s", what);
    int at = cp->n;
    while (at > 0 && e[at - 1].seconds < stall_s) {
        e[at] = e[at - 1];
        at--;
    }
    e[at] = x;
    cp->n++;
    return 0;
}

/* A layout that does not fit is an answer (design.md section 5): the
 * per-stage memory, oom = true, and no time. */
static void oom_answer(const mm_sim *sim, mm_metrics *mt)
{
    mt->oom = true;
    mt->n_iters = 0;
    mt->gpus = mm_cluster_gpus(sim->cluster);
    mt->iteration_time_s = mt->tokens_per_s = mt->samples_per_s = NAN;
    mt->tflops_per_gpu = mt->hw_tflops_per_gpu = mt->mfu = mt->hfu = mt->padded_flops_fraction = NAN;
    mt->bubble_fraction = mt->exposed_comm_s = mt->host_launch_s = mt->exposed_host_s = NAN;
    mt->data_wait_s = mt->data_h2d_s = mt->loader_cpu_s = mt->data_shortfall_s = NAN;
    mt->encoder_load_imbalance = mt->padded_fraction = mt->encoder_excess_s = NAN;
    for (int s = 0; s < mt->n_stages; s++)
        mt->stages[s].busy_s = mt->stages[s].idle_s = mt->stages[s].comm_s = mt->stages[s].data_wait_s = NAN;
}

/* Row `it` of mt->dp_rank_load_s and the iteration's load_imbalance from
 * it.  A workload file's ranks differ (batchcost.c summed each one's
 * micro-batches); without one every replica runs the same m micro-batches
 * of the stages' uniform costs, and the imbalance is 1 exactly (not the
 * row's max / mean, which rounding could put an ulp off). */
static void dp_rank_load(const mm_sim *sim, const mm_build_spec *spec, const wl_iter *wi, int it, mm_metrics *mt)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    int dp = L->lay.dp, V = L->lay.pp * L->lay.vpp;
    double *row = mt->dp_rank_load_s + (size_t)it * dp, one = 0;
    if (sim->wl) {
        memcpy(row, wi->load_rank, (size_t)dp * sizeof *row);
        mt->iters[it].load_imbalance = mm_sim_load_imbalance(row, dp);
        return;
    }
    for (int v = 0; v < V; v++)
        one += spec->stages[v].fwd_s + spec->stages[v].bwd_s;
    for (int r = 0; r < dp; r++)
        row[r] = one * spec->m;
    mt->iters[it].load_imbalance = 1.0;
}

/* Iteration `it` measured into mt->iters[it] (stage and module times
 * accumulate); the last one's critical path, and its graph into tl. */
int mm_sim_metrics_memory(const mm_sim *sim, mm_metrics *mt, mm_err *err)
{
    mm_sim_memory m;
    int rc = mm_sim_stage_memory(sim, &m, err);
    if (rc)
        return rc;
    for (int k = 0; k < m.n_stages && k < mt->n_stages; k++) {
        mt->stages[k].stage = k;
        mt->stages[k].memory_gib = m.stage_gib[k];
    }
    mt->peak_memory_gib = m.peak_gib;
    mt->peak_allocated_gib = m.peak_alloc_gib;
    mt->n_modules = m.n_modules;
    for (int i = 0; i < m.n_modules; i++) {
        snprintf(mt->modules[i].name, sizeof mt->modules[i].name, "%s", m.module_name[i]);
        mt->modules[i].memory_gib = m.module_gib[i];
    }
    mm_sim_memory_free(&m);
    return m.oom ? 1 : 0;
}

/* Iteration it's memory that follows the data (cost/cost_internal.h) into
 * the metrics: each stage's and the GPU's peak raised to this iteration's,
 * and where the first batch that did not fit did not.  Returns as
 * mm_sim_data_memory. */
static int data_memory(const mm_sim *sim, const mm_build_spec *spec, const wl_iter *wi, int it, mm_metrics *mt)
{
    double *stage_gib = calloc((size_t)spec->lay.pp, sizeof *stage_gib);
    if (!stage_gib)
        return -1;
    mm_data_mem dm = {.stage_gib = stage_gib};
    int rc = mm_sim_data_memory(sim, spec, wi, &dm);
    if (rc >= 0) {
        for (int s = 0; s < spec->lay.pp; s++)
            mt->stages[s].memory_gib = fmax(mt->stages[s].memory_gib, stage_gib[s]);
        mt->iters[it].peak_memory_gib = dm.peak_gib;
        mt->peak_memory_gib = fmax(mt->peak_memory_gib, dm.peak_gib);
        mt->peak_allocated_gib = fmax(mt->peak_allocated_gib, dm.peak_alloc_gib);
    }
    if (rc > 0) {
        mt->oom = true;
        mt->oom_at.iteration = it, mt->oom_at.micro_batch = dm.micro_batch, mt->oom_at.stage = dm.stage;
        mt->oom_at.replica = dm.replica, mt->oom_at.need_gib = dm.need_gib, mt->oom_at.cap_gib = dm.cap_gib;
    }
    free(stage_gib);
    return rc;
}

/* Memory that follows the data, for iteration it with a workload: 1 when
 * this batch does not fit, or a GPU with less HBM (node group, hbm
 * perturbation) does not; the start of run_iteration. */
static int iter_memory(const mm_sim *sim, const mm_build_spec *spec, const wl_iter *wi, int it, mm_metrics *mt,
                       mm_err *err)
{
    int dm = data_memory(sim, spec, wi, it, mt);
    if (dm)
        return dm < 0 ? mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the memory model") : 1;
    if (capacity_oom(sim, spec, mt)) { /* a GPU with less HBM (node group, hbm perturbation) */
        mt->oom_at.iteration = it;
        mt->oom_at.micro_batch = mt->oom_at.stage = mt->oom_at.replica = -1;
        mt->oom_at.need_gib = mt->peak_memory_gib;
        mt->oom_at.cap_gib = NAN;
        return 1;
    }
    return 0;
}

/* A perturbation's stall in iteration it added to its time, to every
 * stage's idle time and (the last iteration) to the critical path; returns
 * rc, or the error when the critical path cannot grow. */
static int add_stall(const mm_sim *sim, int it, int P, mm_iter_metrics *im, mm_metrics *mt, int rc, mm_err *err)
{
    double stall = mm_perturb_stall_s(&sim->cluster->pt, it);
    if (stall > 0) {
        im->time_s += stall;
        for (int s = 0; s < P; s++)
            mt->stages[s].idle_s += stall;
        if (rc == 0 && it == sim->sc.iterations - 1 && crit_add_stall(&mt->crit, stall, im->time_s, "stall"))
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the critical path");
    }
    return rc;
}

static int run_iteration(const mm_sim *sim, mm_engine *eng, mm_build_spec *spec, const mm_sim_costs *costs,
                         wl_iter *wi, int it, mm_metrics *mt, mm_sim_timeline *tl, mm_loader_acc *la, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    int P = L->lay.pp, iters = sc->iterations, rc;
    bool perturbed = sim->cluster->pt.n > 0 || sim->cluster->n_groups > 0;
    if (sim->wl && (rc = mm_sim_iteration_costs(sim, spec, costs->stages, it, wi, err)))
        return rc;
    if (sim->wl && (rc = iter_memory(sim, spec, wi, it, mt, err)))
        return rc;
    mm_graph g;
    /* identical replicas built as one (symmetry.h), except for the
     * timeline, which shows every rank */
    spec->one_replica = mm_sym_build_once(sim, spec) && !(tl && it == iters - 1);
    rc = mm_build_iteration(spec, &g, spec->one_replica ? NULL : err);
    if (rc && spec->one_replica) { /* a collective the replicas do not share evenly: the whole graph */
        spec->one_replica = false;
        rc = mm_build_iteration(spec, &g, err);
    }
    spec->one_replica = false;
    if (rc)
        return -MM_EINTERNAL;
    double *busy_before = malloc((size_t)P * sizeof *busy_before);
    mm_time *start = malloc((g.n_ops + 1) * sizeof *start);
    mm_time *end = malloc((g.n_ops + 1) * sizeof *end);
    mm_time t0 = mm_engine_now(eng), t1 = t0;
    double *host_wait = malloc((g.n_ops + 1) * sizeof *host_wait);
    /* the host's timeline, for the trace, of the last iteration only */
    mm_time *host_start = tl && it == iters - 1 ? malloc((g.n_ops + 1) * sizeof *host_start) : NULL;
    mm_exec_opts xo = {.mem_frac = perturbed ? op_mem_frac(&g, costs->mem_frac, P * L->lay.vpp) : NULL,
                       .iteration = (uint64_t)it, .overlap_slowdown = sim->cluster->gpu.overlap_slowdown,
                       .host_wait = host_wait, .host_start = host_start,
                       /* built as one replica: the network's reduction (exec.h) */
                       .sym_replicas = sim->full_routes ? -1 : g.replicas > 1 ? g.replicas : 0,
                       .sym_stride = g.rep_stride};
    if (!busy_before || !start || !end || !host_wait || (perturbed && !xo.mem_frac))
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    else
        rc = g.replicas <= 1 && mm_sym_applies(sim) /* identical DP replicas run once (symmetry.h) */
                 ? mm_sym_exec(eng, &g, L->lay.dp, sim->cluster,
                               sc->network == MM_NET_FLOW ? MM_EXEC_NET_FLOW : MM_EXEC_NET_ANALYTIC, &xo, start, end,
                               &t1, err)
                 : mm_exec_run_opts(eng, &g, sim->cluster,
                                    sc->network == MM_NET_FLOW ? MM_EXEC_NET_FLOW : MM_EXEC_NET_ANALYTIC, &xo, start,
                                    end, &t1, err);
    free((void *)xo.mem_frac);
    if (rc == 0) {
        for (int s = 0; s < P; s++)
            busy_before[s] = mt->stages[s].busy_s;
        mm_iter_metrics *im = &mt->iters[it];
        im->iteration = it;
        im->tokens = sim->wl ? wi->tokens : (double)sc->train.global_batch * sim->seq;
        im->samples = (double)sc->train.global_batch;
        dp_rank_load(sim, spec, wi, it, mt);
        im->encoder_load_imbalance = spec->n_enc ? mm_sim_enc_imbalance(spec) : NAN;
        im->encoder_excess_s = spec->n_enc ? mm_sim_enc_excess_s(spec) : NAN;
        im->padded_fraction = sim->wl ? (wi->padded_tokens > 0 ? 1.0 - wi->tokens / wi->padded_tokens : 0)
                                      : 1.0 - sim->seq / mm_sim_cost_seq(sim);
        if (!sim->wl)
            im->peak_memory_gib = mt->peak_memory_gib;
        double mod_busy[MM_MAX_MODULES] = {0};
        measure(&g, start, end, t0, t1, im, mt->stages, P, L->lay.dp, !sim->headline_only, host_wait, mod_busy);
        /* the ops ran at the padded lengths: the pad tokens' FLOPs are
         * work (hw_flops) but not the model's */
        im->pad_flops = sim->wl ? wi->pad_flops : mm_sim_nominal_pad_flops(sim, costs->stages);
        im->model_flops -= im->pad_flops;
        double lo = INFINITY, hi = 0;
        for (int s = 0; s < P; s++) {
            double b = mt->stages[s].busy_s - busy_before[s];
            lo = fmin(lo, b);
            hi = fmax(hi, b);
        }
        im->stage_spread_s = P > 0 ? hi - lo : 0;
        if (!sim->headline_only)
            module_time(&g, mod_busy, spec, mt);
        if (it == iters - 1 && !sim->headline_only && mm_critpath_compute(&g, start, end, t0, t1, &mt->crit))
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the critical path");
        /* one replica's path is replica 0's in the whole graph (critpath.c
         * breaks ties towards lower ids, and a copy follows its original) */
        for (int k = 0; it == iters - 1 && g.replicas > 1 && k < mt->crit.n; k++)
            mt->crit.e[k].rank = mt->crit.e[k].rank >= 0 ? mt->crit.e[k].rank * g.replicas : -1;
        if (it == iters - 1)
            mt->graph_ops = g.n_ops;
        rc = add_stall(sim, it, P, im, mt, rc, err);
        mm_loader_acc_iter(sim, la, it, sim->wl ? wi->samples : NULL, (int)sc->train.global_batch,
                           sim->wl ? wi->m : spec->m);
    }
    free(busy_before);
    free(host_wait);
    if (rc == 0 && tl && it == iters - 1) {
        tl->graph = g;
        tl->start = start;
        tl->end = end;
        tl->t0 = t0;
        tl->host_start = host_start;
    } else {
        mm_graph_free(&g);
        free(start);
        free(end);
        free(host_start);
    }
    return rc;
}

/* No loader modeled (data.workers -1): its metrics are NAN. */
static void no_data_wait(mm_metrics *mt)
{
    mt->data_wait_s = mt->data_h2d_s = mt->loader_cpu_s = mt->data_shortfall_s = NAN;
    mt->data_workers_needed = 0;
    for (int i = 0; i < mt->n_iters; i++)
        mt->iters[i].data_wait_s = mt->iters[i].data_h2d_s = mt->iters[i].loader_cpu_s = NAN;
    for (int s = 0; s < mt->n_stages; s++)
        mt->stages[s].data_wait_s = NAN;
}

/* The data loader's waits (exec/loadrun.h) added to each iteration: its
 * time, every stage's idle time (the whole step waits), and the last
 * iteration's critical path; their means into mt.  Before summarize. */
static int apply_data_wait(const mm_sim *sim, const mm_loader_acc *la, mm_metrics *mt, mm_err *err)
{
    int n = mt->n_iters, P = mt->n_stages;
    if (!la->iters) {
        no_data_wait(mt);
        return 0;
    }
    double *buf = malloc(4 * (size_t)n * sizeof *buf);
    if (!buf)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    double *step = buf, *wait = buf + n, *h2d = buf + 2 * n, *cpu = buf + 3 * n;
    for (int i = 0; i < n; i++)
        step[i] = mt->iters[i].time_s;
    int rc = mm_loader_acc_waits(sim, la, step, wait, h2d, cpu, &mt->data_workers_needed, &mt->data_shortfall_s);
    double sw = 0, sh = 0, sc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        mm_iter_metrics *im = &mt->iters[i];
        double w = wait[i] + h2d[i];
        im->data_wait_s = w, im->data_h2d_s = h2d[i], im->loader_cpu_s = cpu[i];
        im->time_s += w;
        for (int s = 0; s < P; s++)
            mt->stages[s].idle_s += w;
        sw += w, sh += h2d[i], sc += cpu[i];
        if (w > 0 && i == n - 1 && !sim->headline_only && crit_add_stall(&mt->crit, w, im->time_s, "data wait"))
            rc = -1;
    }
    free(buf);
    if (rc)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory in the data loader");
    mt->data_wait_s = sw / n, mt->data_h2d_s = sh / n, mt->loader_cpu_s = sc / n;
    for (int s = 0; s < P; s++)
        mt->stages[s].data_wait_s = sw / n;
    return 0;
}

/* ATOM's model swapping (cost/swap.h): the step just simulated ran its
 * passes with the whole model on the GPU; each of its m micro-batches
 * streams the layers' groups over PCIe, and what the link does not hide
 * behind the passes (swap.c's recurrence less their compute) is added to
 * every iteration and to every stage's idle time, and named on the last
 * iteration's critical path.  Before the outer sync, whose step it is. */
static int apply_swap(const mm_sim *sim, const mm_sim_costs *costs, mm_metrics *mt, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    if (!sc->train.outer_sync.present || sc->train.outer_sync.algorithm != MM_OSYNC_ATOM)
        return 0;
    mm_mem_rank full;
    double room;
    if (mm_sim_swap_room(sim, &full, &room) ||
        mm_sim_swap(sim, &full, room, costs->stages[0].fwd_s, costs->stages[0].bwd_s, costs->spec.m, &mt->swap))
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "model swapping: no plan for a run that fits");
    mm_sim_wan_pipeline(sim, costs->stages[0].fwd_s, costs->stages[0].bwd_s, costs->spec.m, &mt->swap);
    int n = mt->n_iters;
    double w = mt->swap.exposed_s;
    for (int i = 0; i < n; i++) {
        mt->iters[i].time_s += w;
        if (w > 0 && i == n - 1 && !sim->headline_only &&
            crit_add_stall(&mt->crit, w, mt->iters[i].time_s, "model swap"))
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    for (int s = 0; s < mt->n_stages; s++)
        mt->stages[s].idle_s += n * w;
    return 0;
}

/* Training across sites (cost/outersync.h): every site runs the step just
 * simulated, so the iterations' tokens, samples and FLOPs count S sites;
 * each step waits its share of the outer sync's exposed time (the whole
 * site waits, every stage idle), which is exposed communication too, and
 * the last iteration's critical path names it.  Before summarize. */
static int apply_outer_sync(const mm_sim *sim, mm_metrics *mt, mm_err *err)
{
    int n = mt->n_iters, P = mt->n_stages;
    double step = 0;
    for (int i = 0; i < n; i++)
        step += mt->iters[i].time_s / n;
    int rc = mm_sim_outer_sync(sim, step, &mt->outer, err);
    if (rc || !mt->outer.on)
        return rc;
    double S = mt->outer.sites, w = mt->outer.per_iter_s;
    for (int i = 0; i < n; i++) {
        mm_iter_metrics *im = &mt->iters[i];
        im->tokens *= S, im->samples *= S;
        im->model_flops *= S, im->hw_flops *= S, im->pad_flops *= S;
        im->time_s += w;
        im->exposed_comm_s += w;
        if (w > 0 && i == n - 1 && !sim->headline_only && crit_add_stall(&mt->crit, w, im->time_s, "outer sync"))
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    for (int s = 0; s < P; s++)
        mt->stages[s].idle_s += n * w; /* summarize divides by n */
    return 0;
}

/* The run's means over iterations, nearest-rank percentiles and rates. */
static void summarize(const mm_sim *sim, const mm_engine *eng, mm_metrics *mt)
{
    const mm_scenario *sc = &sim->sc;
    int P = sc->parallel.llm.lay.pp, iters = sc->iterations;
    int gpus = mm_cluster_gpus(sim->cluster) * (mt->outer.on ? mt->outer.sites : 1);
    double peak = sim->cluster->gpu.peak_flops[sc->train.precision];
    double hl = 0, hx = 0;
    for (int i = 0; i < iters; i++) {
        hl += mt->iters[i].host_launch_s;
        hx += mt->iters[i].exposed_host_s;
    }
    mt->host_launch_s = hl / iters;
    mt->exposed_host_s = hx / iters;
    double T = 0, bub = 0, exp = 0, mf = 0, hf = 0, pf = 0, tok = 0, smp = 0, eli = 0, exs = 0, padded = 0;
    for (int i = 0; i < iters; i++) {
        eli += mt->iters[i].encoder_load_imbalance;
        exs += mt->iters[i].encoder_excess_s;
        padded += mt->iters[i].tokens / (1.0 - mt->iters[i].padded_fraction);
        T += mt->iters[i].time_s;
        bub += mt->iters[i].bubble_fraction;
        exp += mt->iters[i].exposed_comm_s;
        mf += mt->iters[i].model_flops;
        hf += mt->iters[i].hw_flops;
        pf += mt->iters[i].pad_flops;
        tok += mt->iters[i].tokens;
        smp += mt->iters[i].samples;
    }
    for (int k = 0; k < mt->n_modules; k++)
        mt->modules[k].compute_s /= iters;
    for (int s = 0; s < P; s++) {
        mt->stages[s].busy_s /= iters;
        mt->stages[s].idle_s /= iters;
        mt->stages[s].bubble_s /= iters;
        mt->stages[s].comm_s /= iters;
        mt->stages[s].host_s /= iters;
        mt->stages[s].exposed_host_s /= iters;
    }
    mt->iteration_time_s = T / iters;
    double *ts = malloc((size_t)iters * sizeof *ts);
    if (ts) {
        for (int i = 0; i < iters; i++)
            ts[i] = mt->iters[i].time_s;
        qsort(ts, (size_t)iters, sizeof *ts, cmp_double);
        /* nearest-rank percentiles */
        mt->iteration_time_p50_s = ts[(int)ceil(0.50 * iters) - 1];
        mt->iteration_time_p99_s = ts[(int)ceil(0.99 * iters) - 1];
        free(ts);
    }
    mm_metrics_rates(mt, T, tok, smp, mf, pf, hf, gpus, peak);
    mt->bubble_fraction = bub / iters;
    mt->exposed_comm_s = exp / iters;
    mt->encoder_load_imbalance = eli / iters; /* NAN without an encoder */
    mt->encoder_excess_s = exs / iters;
    mt->padded_fraction = padded > 0 ? 1.0 - tok / padded : 0;
    mt->oom = false; /* peak_memory_gib and stages[].memory_gib: mm_sim_metrics_memory() */
    mt->gpus = gpus;
    mt->events = mm_engine_dispatched(eng);
}

int mm_sim_run(const mm_sim *sim, mm_metrics *mt, mm_sim_timeline *tl, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    double t_host = mm_host_seconds();
    memset(mt, 0, sizeof *mt);
    if (tl)
        memset(tl, 0, sizeof *tl);
    int P = sc->parallel.llm.lay.pp, iters = sc->iterations;
    mm_sim_costs costs = {0};
    mt->iters = calloc((size_t)iters, sizeof *mt->iters);
    mt->stages = calloc((size_t)P, sizeof *mt->stages);
    mt->dp_ranks = sc->parallel.llm.lay.dp;
    mt->dp_rank_load_s = calloc((size_t)iters * (size_t)mt->dp_ranks + 1, sizeof *mt->dp_rank_load_s);
    mm_engine *eng = mm_engine_alloc();
    mm_build_spec spec = {0};
    wl_iter wi = {0}; /* a workload file's per-iteration arrays */
    mm_loader_acc la;  /* the data loader's costs per iteration and replica */
    int rc = mm_loader_acc_init(sim, &la);
    if (rc || !mt->iters || !mt->stages || !mt->dp_rank_load_s || !eng) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    mt->n_iters = iters;
    mt->n_stages = P;
    if ((rc = mm_sim_stage_times(sim, &costs, err)))
        goto out;
    spec = costs.spec; /* a workload file changes its micro-batch costs per iteration */
    int fit = mm_sim_metrics_memory(sim, mt, err);
    if (fit < 0) {
        rc = fit;
        goto out;
    }
    mt->oom_at.iteration = -1;
    if (sim->wl) {
        /* with a workload file that verdict is a bound (the workload's
         * largest sample in every micro-batch): each iteration's own data
         * decides (mm_sim_data_memory) */
        mt->peak_memory_bound_gib = mt->peak_memory_gib;
        mt->peak_memory_gib = mt->peak_allocated_gib = 0;
        for (int s = 0; s < P; s++)
            mt->stages[s].memory_gib = 0;
        fit = 0;
    }
    if (fit > 0 || capacity_oom(sim, &spec, mt)) {
        oom_answer(sim, mt);
        goto out;
    }
    for (int it = 0; it < iters && rc == 0; it++) {
        rc = run_iteration(sim, eng, &spec, &costs, &wi, it, mt, tl, &la, err);
        if (rc == 0 && sim->progress)
            sim->progress(it + 1, iters, sim->progress_ctx);
    }
    if (rc == 1) { /* a drawn batch did not fit: the run is OOM there (mt->oom_at) */
        oom_answer(sim, mt);
        rc = 0;
        goto out;
    }
    if (rc == 0)
        rc = apply_data_wait(sim, &la, mt, err);
    if (rc == 0)
        rc = apply_swap(sim, &costs, mt, err);
    if (rc == 0)
        rc = apply_outer_sync(sim, mt, err);
    if (rc == 0)
        summarize(sim, eng, mt);
    if (rc == 0)
        rc = mm_sim_run_costs(sim, costs.stages, costs.n_vstages, costs.spec.m, mt->iteration_time_s, &mt->run, err);
out:
    mm_loader_acc_free(&la);
    mt->wall_s = mm_host_seconds() - t_host;
    mm_sim_costs_free(&costs);
    mm_sim_wl_iter_free(&wi);
    mm_engine_free(eng);
    if (rc)
        mm_metrics_free(mt);
    return rc;
}
