/* cmd_run.c - `mmsim run`: parses the arguments (a scenario, --set
 * overrides, or a Megatron-LM argument list through scenario/megatron.h), runs the
 * scenario through the library, stores it, and prints the summary or the
 * JSON (api/report.c writes that, for the C API too).
 * Not for: anything a program embedding libmmsim would need. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/report.h"
#include "cost/costs.h"
#include "cli/cli.h"
#include "scenario/megatron.h"
#include "scenario/torchtitan.h"
#include "hw/cluster.h"
#include "mmsim_config.h"
#include "scenario/sim.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "cost/breakdown.h"
#include "cost/costs.h"
#include "store/store.h"
#include "store/trace.h"

#define CMD "run"
#define MAX_SETS 256

/* The critical path by kind of work, then its largest entries by rank. */
static void print_critical_path(const mm_metrics *m)
{
    if (!m->crit.n)
        return;
    const char *kinds[] = {"fwd", "bwd", "wgrad", "optimizer", "tp", "pp", "dp", "cp", "ep", "wait"};
    printf("\n  critical path (%d ops):", m->crit.path_ops);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        double share = 0;
        for (int i = 0; i < m->crit.n; i++) {
            const char *w = strchr(m->crit.e[i].what, ':'); /* "vision:fwd" counts as fwd */
            if (!strcmp(w ? w + 1 : m->crit.e[i].what, kinds[k]))
                share += m->crit.e[i].share;
        }
        if (share > 0.0005)
            printf(" %s %.1f%%", kinds[k], 100 * share);
    }
    printf("\n  %-6s %-6s %-10s %10s %7s\n", "rank", "stage", "what", "seconds", "share");
    for (int i = 0; i < m->crit.n && i < 5; i++) {
        const mm_crit_entry *e = &m->crit.e[i];
        printf("  %-6d %-6d %-10s %10.4f %6.1f%%\n", e->rank, e->stage, e->what, e->seconds, 100 * e->share);
    }
}

/* The summary's head: the scenario's model, cluster, layout, encoders and
 * training settings, one line each. */
static void print_config(const mm_sim *sim, const mm_metrics *m)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    printf("mmsim %s: scenario %s\n", MMSIM_VERSION, sc->source);
    printf("  model       %s, %.2f B parameters (%s)\n", sim->model->name[0] ? sim->model->name : sim->llm->name,
           (double)mm_model_params(sim->model) * 1e-9, sim->model_path);
    printf("  cluster     %s: ", sim->cluster->name);
    if (m->outer.on) /* training across sites: each site is the file's cluster */
        printf("%d sites x ", m->outer.sites);
    printf("%d nodes x %d %s = %d GPUs (%s)\n", sim->cluster->nodes, sim->cluster->gpus_per_node,
           sim->cluster->gpu.name, m->gpus, sim->topology_path);
    printf("  layout      tp %d x cp %d x pp %d x dp %d, %s, %d micro-batches of %lld x %.0f tokens per DP rank\n",
           L->lay.tp, L->lay.cp, L->lay.pp, L->lay.dp, mm_schedule_names[sc->train.schedule], sim->micro_batches,
           (long long)sc->train.micro_batch, sim->seq);
    for (int i = 0; i < sim->n_enc; i++) {
        const mm_sim_encoder *e = &sim->enc[i];
        const char *frozen = e->frozen_tower ? (e->frozen_proj ? ", frozen" : ", tower frozen") : "";
        if (sc->parallel.placement == MM_PLACE_HOMOGENEOUS)
            printf("  %-11s homogeneous (the LLM's layout, first stage), %.0f inputs per sample%s\n", e->name,
                   e->inputs_per_sample, frozen);
        else
            printf("  %-11s %s, tp %d x pp %d x dp %d, %.0f inputs per sample%s\n", e->name,
                   mm_placement_names[sc->parallel.placement], e->layout.lay.tp, e->layout.lay.pp, e->layout.lay.dp,
                   e->inputs_per_sample, frozen);
    }
    printf("  training    %s, recompute %s, ZeRO %d, network %s, %d iteration(s), seed %llu\n",
           mm_precision_names[sc->train.precision], mm_recompute_names[sc->train.recompute],
           sc->train.zero, mm_network_names[sc->network], sc->iterations,
           (unsigned long long)sc->seed);
}

/* The summary when the layout does not fit: the peak against the HBM, where
 * the executor first ran out, and each stage's memory. */
static void print_oom(const mm_sim *sim, const mm_metrics *m, int64_t run_id, const char *db)
{
    const mm_scenario *sc = &sim->sc;
    printf("  OUT OF MEMORY: peak %.1f GiB per GPU reserved (%.1f allocated) + %.1f GiB reserve > %.1f GiB of HBM\n",
           m->peak_memory_gib, m->peak_allocated_gib, sc->train.memory_reserve_gib,
           sim->cluster->gpu.hbm_bytes / 1073741824.0);
    if (m->oom_at.iteration >= 0 && m->oom_at.stage >= 0)
        printf("  in iteration %d: micro-batch %d of DP replica %d on stage %d needs %.2f GiB of %.2f\n",
               m->oom_at.iteration, m->oom_at.micro_batch, m->oom_at.replica, m->oom_at.stage,
               m->oom_at.need_gib, m->oom_at.cap_gib);
    else if (m->oom_at.iteration >= 0 && isfinite(m->oom_at.cap_gib))
        printf("  in iteration %d: a GPU of the encoder's own needs %.2f GiB of %.2f\n", m->oom_at.iteration,
               m->oom_at.need_gib, m->oom_at.cap_gib);
    else if (m->oom_at.iteration >= 0)
        printf("  in iteration %d: %.2f GiB on a GPU with less HBM (node group or hbm perturbation)\n",
               m->oom_at.iteration, m->oom_at.need_gib);
    printf("\n  stage   memory (GiB)\n");
    for (int s = 0; s < m->n_stages; s++)
        printf("  %5d %12.2f\n", s, m->stages[s].memory_gib);
    if (run_id > 0)
        printf("\n  stored as run %lld in %s\n", (long long)run_id, db);
}

/* The run's periodic work (a train.* run key set): each event, its share
 * of an iteration, and the run's total. */
static void print_periodic(const mm_sim *sim, const mm_metrics *m)
{
    const mm_scenario *sc = &sim->sc;
    const mm_run_costs *r = &m->run;
    if (!r->on)
        return;
    if (sc->train.save_interval > 0)
        printf("  checkpoint save    %10.4f s every %d iterations (%.3g GB per node at %.3g GB/s)\n", r->save_s,
               sc->train.save_interval, r->ckpt_node_bytes / 1e9, sc->train.save_gb_s);
    if (sc->train.eval_interval > 0)
        printf("  evaluation         %10.4f s every %d iterations (%d forward-only iterations of %.4f s)\n",
               r->eval_s, sc->train.eval_interval, sc->train.eval_iters, r->eval_iter_s);
    if (sc->train.log_interval > 0)
        printf("  loss report sync   %10.6f s every %d iterations\n", r->log_sync_s, sc->train.log_interval);
    printf("  periodic work      %10.4f s per iteration on average (%.2f %% of the step)\n", r->per_iter_s,
           100 * r->per_iter_s / m->iteration_time_s);
    if (isfinite(r->total_s))
        printf("  run total          %10.1f s (%.2f h) for %d iterations: %lld saves, %lld evaluations, %lld loss "
               "reports\n", r->total_s, r->total_s / 3600, sc->train.train_iters, r->saves, r->evals, r->logs);
}

/* Training across sites (train.outer_sync): the inner step, one sync over
 * the WAN, and what it exposes (already in the iteration time above). */
static void print_outer(const mm_metrics *m)
{
    const mm_outer_sync *o = &m->outer;
    if (!o->on)
        return;
    printf("  sites              %10d sites, %s", o->sites, mm_outer_sync_names[o->algorithm]);
    if (o->algorithm == MM_OSYNC_DILOCO)
        printf(" every %d steps%s", o->h, o->overlap ? ", overlapped one round behind" : ", blocking");
    if (o->algorithm == MM_OSYNC_ATOM)
        printf(" averaging every %d steps, asynchronously", o->h);
    printf("\n  inner step         %10.4f s (one site's step)\n", o->step_s);
    printf("  outer sync         %10.4f s: %.4g GB per site on the WAN", o->sync_s, o->wire_bytes / 1e9);
    if (o->kernel_s > 0)
        printf(" (%.4f s of it compression kernels)", o->kernel_s);
    printf("\n                     %10.4f s exposed per sync, %.4f s per step on average\n", o->exposed_s,
           o->per_iter_s);
    const mm_swap *w = &m->swap;
    if (!w->on)
        return;
    printf("  model swap         %10.4f s exposed per step: %d group%s of %d layers over PCIe at %.1f GB/s "
           "(load %.4f s, gradients out %.4f s a group; %.2f GiB resident)\n",
           w->exposed_s, w->groups, w->groups == 1 ? "" : "s", w->group_layers, w->link_bw * 1e-9, w->load_s, w->grads_out_s,
           w->resident_bytes / MM_GIB);
    printf("  pipeline instead   %10.4f s a step as pipelines across the sites (%.4f s a hop on the WAN)\n",
           w->pp_step_s, w->pp_hop_s);
}

/* The data loader (data.workers >= 0): how long the step waited for data,
 * and, when the loader is the bottleneck, the workers per GPU (and cores)
 * that would keep up. */
static void print_data(const mm_sim *sim, const mm_metrics *m)
{
    const mm_scenario *sc = &sim->sc;
    const mm_cluster *c = sim->cluster;
    int W = sc->data.workers, need = m->data_workers_needed;
    if (W < 0)
        return;
    double load = m->data_wait_s - m->data_h2d_s, step = m->iteration_time_s - load;
    double short_s = W > 0 ? m->data_shortfall_s : 0; /* no workers: the wait itself */
    printf("  data loader        %10.4f s per iteration waiting for data (%.1f %%), %.4f s of it host-to-device "
           "copies\n", m->data_wait_s, 100 * m->data_wait_s / m->iteration_time_s, m->data_h2d_s);
    printf("                     %s, %d worker%s per GPU (the framework's: %d), prefetch %d; %.4f CPU s per "
           "iteration per DP replica's loader", sim->fw->loader, W, W == 1 ? "" : "s", sim->fw->loader_workers, sc->data.prefetch,
           m->loader_cpu_s);
    if (c->cpu_cores > 0)
        printf("; %d cores for %d GPUs per node", c->cpu_cores, c->gpus_per_node);
    printf("\n");
    /* the steady state (data_shortfall_s): a run shorter than the
     * prefetched batches last, or one that starts with them, shows less */
    char steady[96] = "";
    if (short_s > 1.05 * load && short_s > 1e-3 * step)
        snprintf(steady, sizeof steady, " (%.4f s in the steady state)", short_s);
    if (need < 0)
        printf("                     the loader is the bottleneck: NVDEC alone takes longer than the steps; no worker "
               "count hides it\n");
    else if (load > 1e-3 * m->iteration_time_s && (W == 0 || need > W))
        printf("                     the loader is the bottleneck by %.4f s per iteration%s: %d workers per GPU "
               "(%d cores per GPU with the training process) would keep up\n", load, steady, need, need + 1);
    else if (load > 1e-3 * m->iteration_time_s)
        printf("                     the loader is the bottleneck by %.4f s per iteration%s: %d workers per GPU would "
               "keep up with a core each (%d cores per GPU with the training process)\n", load, steady, need, need + 1);
    else if (short_s > 1e-3 * step)
        /* the queue has not run dry in this run; the steady state has */
        printf("                     the loader falls behind in the steady state by %.4f s per iteration (%d "
               "worker%s per GPU at %.4f CPU s per iteration against a %.4f s step); this run's %d iterations end "
               "before its %d prefetched batches per worker run out: %d workers per GPU (%d cores per GPU with the "
               "training process) would keep up\n", short_s, W, W == 1 ? "" : "s", m->loader_cpu_s, step,
               sc->iterations, sc->data.prefetch, need, need + 1);
    else
        printf("                     the loader keeps ahead: %d worker%s per GPU would on average\n", need,
               need == 1 ? "" : "s");
    if (need >= 0 && c->cpu_cores > 0 && need + 1 > c->cpu_cores / c->gpus_per_node)
        printf("                     (%d cores per GPU: more than the node's %d)\n", need + 1,
               c->cpu_cores / c->gpus_per_node);
}

static void print_summary(const mm_sim *sim, const mm_metrics *m, int64_t run_id, const char *db)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    print_config(sim, m);
    printf("\n");
    if (m->oom) {
        print_oom(sim, m, run_id, db);
        return;
    }
    printf("  iteration time     %10.4f s", m->iteration_time_s);
    if (m->n_iters > 1)
        printf("  (mean of %d; p50 %.4f, p99 %.4f)", m->n_iters, m->iteration_time_p50_s, m->iteration_time_p99_s);
    printf("\n");
    if (sim->wl) {
        double imb = 0, spread = 0;
        for (int i = 0; i < m->n_iters; i++) {
            imb += m->iters[i].load_imbalance / m->n_iters;
            spread += m->iters[i].stage_spread_s / m->n_iters;
        }
        printf("  batching           %s: DP load max/mean %.3f, stage spread %.4f s (means)\n",
               mm_batching_names[sc->batching], imb, spread);
    }
    if (sim->n_enc)
        printf("  encoder load       %10.3f max/mean over encoder ranks; the slowest %.4f s above the mean\n",
               m->encoder_load_imbalance, m->encoder_excess_s);
    if (sim->padding && (sim->wl || m->padded_fraction > 0)) /* a text workload pads nothing */
        printf("  padding            %s%s: %.1f %% of the LLM's tokens, %.1f %% of its FLOPs are padding\n",
               mm_padding_names[sim->padding],
               sc->train.padding != MM_TPAD_AUTO ? ""
               : sc->parallel.llm.lay.pp > 1     ? " (the framework's on a pipeline)"
                                                 : " (the framework's)",
               100 * m->padded_fraction, 100 * m->padded_flops_fraction);
    mm_moe_load ld;
    if (mm_sim_moe_load(sim, &ld) == 0)
        printf("  MoE routing        %s: busiest expert %.3f x its mean, busiest EP rank %.3f x; %.1f %% of token "
               "copies dropped\n",
               mm_moe_routing_names[sc->moe.routing], mm_moe_expert_imbalance(&ld), mm_moe_rank_imbalance(&ld),
               100 * ld.dropped);
    printf("  throughput         %10.0f tokens/s  %8.2f samples/s\n", m->tokens_per_s, m->samples_per_s);
    printf("  per GPU            %10.1f model TFLOP/s  %6.1f hardware TFLOP/s\n",
           m->tflops_per_gpu, m->hw_tflops_per_gpu);
    printf("  MFU / HFU          %9.1f %%  %9.1f %%%s\n", 100 * m->mfu, 100 * m->hfu,
           m->padded_flops_fraction > 0 ? "  (MFU: the real tokens; HFU: with padding and recomputation)" : "");
    printf("  pipeline bubble    %9.1f %%\n", 100 * m->bubble_fraction);
    printf("  host launches      %10.4f s per rank, %.4f s of them exposed (the GPU waiting for its launches)\n",
           m->host_launch_s, m->exposed_host_s);
    print_data(sim, m);
    print_periodic(sim, m);
    print_outer(m);
    printf("  exposed comm       %10.4f s per rank", m->exposed_comm_s);
    if (L->lay.dp > 1) { /* what mm_sim_overlap gave the LLM's DP traffic */
        int zero = L->zero >= 0 ? L->zero : sc->train.zero;
        bool g, p;
        mm_sim_overlap(sim, zero, &g, &p);
        bool fw = sc->train.overlap_grad_reduce == MM_TOVL_AUTO && sc->train.overlap_param_gather == MM_TOVL_AUTO;
        printf("  (DP overlap: gradients %s", g ? "on" : "off");
        if (zero >= 1 && zero <= 2)
            printf(", parameter gather %s", p ? "on" : "off");
        printf("%s)", fw ? ", the framework's" : "");
    }
    printf("\n");
    printf("  peak memory        %10.2f GiB per GPU reserved, %.2f allocated (of %.1f; reserve %.1f)\n",
           m->peak_memory_gib, m->peak_allocated_gib, sim->cluster->gpu.hbm_bytes / 1073741824.0,
           sc->train.memory_reserve_gib);
    if (sim->wl)
        printf("  memory bound       %10.2f GiB per GPU (every micro-batch its largest sample)\n",
               m->peak_memory_bound_gib);
    printf("\n  stage   busy (s)   idle (s) bubble (s)   comm (s)  memory (GiB)\n");
    for (int s = 0; s < m->n_stages; s++)
        printf("  %5d %10.4f %10.4f %10.4f %10.4f %13.2f\n", s, m->stages[s].busy_s, m->stages[s].idle_s,
               m->stages[s].bubble_s, m->stages[s].comm_s, m->stages[s].memory_gib);
    if (m->n_modules > 1) {
        printf("\n  module      GPUs  compute (s)  memory (GiB)\n");
        for (int i = 0; i < m->n_modules; i++)
            printf("  %-10s %5d %12.4f %13.2f\n", m->modules[i].name, m->modules[i].gpus, m->modules[i].compute_s,
                   m->modules[i].memory_gib);
    }
    print_critical_path(m);
    printf("\n  %llu events simulated in %.3f s\n", (unsigned long long)m->events, m->wall_s);
    if (run_id > 0)
        printf("  stored as run %lld in %s\n", (long long)run_id, db);
}


static int store_run(const char *db, const mm_sim *sim, const mm_metrics *m, int64_t *run_id,
                     mm_err *err)
{
    char *text = mm_scenario_canonical_alloc(&sim->sc); /* what the store hashes: whole, never cut */
    if (!text)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    char created[32];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    mm_run_desc desc;
    mm_store_describe_sim(sim, &desc);
    mm_run_record rec = {
        .scenario_text = text, .scenario_source = sim->sc.source, .desc = &desc,
        .seed = sim->sc.seed, .version = MMSIM_VERSION, .created_at = created,
    };
    mm_store *st = NULL;
    int rc = mm_store_open(&st, db, err);
    if (rc == 0)
        rc = mm_store_write_run(st, &rec, m, run_id, err);
    mm_store_close(st);
    free(text);
    return rc;
}


/* -q: the three numbers a script greps for, on one line. */
static void print_quiet(const mm_metrics *m)
{
    if (m->oom)
        printf("oom: peak %.2f GiB per GPU\n", m->peak_memory_gib);
    else
        printf("iteration_time_s %.6g tokens_per_s %.6g mfu %.4f\n", m->iteration_time_s, m->tokens_per_s, m->mfu);
}

/* -v: every iteration, after the summary. */
static void print_iterations(const mm_metrics *m)
{
    printf("\n  iteration   time (s)   bubble   exposed comm (s)   DP load max/mean\n");
    for (int i = 0; i < m->n_iters; i++)
        printf("  %9d %10.4f %7.1f%% %18.4f %18.3f\n", m->iters[i].iteration, m->iters[i].time_s,
               100 * m->iters[i].bubble_fraction, m->iters[i].exposed_comm_s, m->iters[i].load_imbalance);
}

typedef struct run_opts {
    const char *scenario, *db, *trace, *megatron, *megatron_model, *torchtitan;
    const char *sets[MAX_SETS];
    int n_sets;
    int n_megatron; /* --megatron-args and --megatron-script given */
    bool json, no_db, print_scenario, quiet, verbose, breakdown, no_symmetry, megatron_script;
} run_opts;

enum { OPT_JSON = 256, OPT_NO_DB, OPT_DB, OPT_TRACE, OPT_MEGATRON, OPT_MEGATRON_SCRIPT, OPT_MEGATRON_MODEL, OPT_PRINT,
       OPT_BREAKDOWN, OPT_NO_SYMMETRY, OPT_TORCHTITAN };

/* The options (cli.h: completion scripts are made from them too). */
const struct option mm_cli_run_longopts[] = {
    {"help", no_argument, NULL, 'h'},        {"set", required_argument, NULL, 's'},
    {"json", no_argument, NULL, OPT_JSON},   {"db", required_argument, NULL, OPT_DB},
    {"no-db", no_argument, NULL, OPT_NO_DB}, {"trace", required_argument, NULL, OPT_TRACE},
    {"megatron-args", required_argument, NULL, OPT_MEGATRON},
    {"megatron-script", required_argument, NULL, OPT_MEGATRON_SCRIPT},
    {"megatron-model", required_argument, NULL, OPT_MEGATRON_MODEL},
    {"torchtitan", required_argument, NULL, OPT_TORCHTITAN},
    {"print-scenario", no_argument, NULL, OPT_PRINT}, {"breakdown", no_argument, NULL, OPT_BREAKDOWN},
    {"no-symmetry", no_argument, NULL, OPT_NO_SYMMETRY},
    {"quiet", no_argument, NULL, 'q'},       {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0}};
const char mm_cli_run_shortopts[] = "hs:qv";

static int parse_args(int argc, char **argv, run_opts *o)
{
    int c;
    while ((c = mm_cli_getopt(argc, argv, mm_cli_run_shortopts, mm_cli_run_longopts)) != -1) {
        switch (c) {
        case 'h': return mm_cli_help(CMD) - 1;
        case 's':
            if (o->n_sets == MAX_SETS)
                return mm_cli_bad(CMD, "--set", "at most %d overrides", MAX_SETS);
            o->sets[o->n_sets++] = optarg;
            break;
        case OPT_JSON: o->json = true; break;
        case OPT_DB: o->db = optarg; break;
        case OPT_NO_DB: o->no_db = true; break;
        case OPT_TRACE: o->trace = optarg; break;
        case OPT_MEGATRON: o->megatron = optarg; o->n_megatron++; o->megatron_script = false; break;
        case OPT_MEGATRON_SCRIPT: o->megatron = optarg; o->n_megatron++; o->megatron_script = true; break;
        case OPT_MEGATRON_MODEL: o->megatron_model = optarg; break;
        case OPT_TORCHTITAN: o->torchtitan = optarg; break;
        case OPT_PRINT: o->print_scenario = true; break;
        case OPT_BREAKDOWN: o->breakdown = true; break;
        case OPT_NO_SYMMETRY: o->no_symmetry = true; break;
        case 'q': o->quiet = true; break;
        case 'v': o->verbose = true; break;
        default: return 2;
        }
    }
    if (optind < argc)
        o->scenario = argv[optind++];
    if (optind < argc)
        return mm_cli_bad(CMD, "<cli>", "more than one scenario given; extra '%s'", argv[optind]);
    if (o->n_megatron > 1)
        return mm_cli_bad(CMD, "--megatron-script", "give one of --megatron-args and --megatron-script");
    if (o->megatron_model && !o->megatron)
        return mm_cli_bad(CMD, "--megatron-model", "goes with --megatron-args");
    if (o->torchtitan && o->megatron)
        return mm_cli_bad(CMD, "--torchtitan", "goes without --megatron-args and --megatron-script (one scenario source)");
    if (o->print_scenario && !o->megatron && !o->torchtitan)
        return mm_cli_bad(CMD, "--print-scenario",
                          "prints the scenario --megatron-args, --megatron-script or --torchtitan makes; give one");
    return 0;
}

/* The Megatron argument list's scenario (scenario/megatron.h), its model
 * inline; with --megatron-model the model's config.json is written there
 * too. */
static int load_megatron(run_opts *o, mm_megatron *mg, mm_scenario *sc, mm_err *err)
{
    int rc = o->megatron_script
                 ? mm_megatron_script_scenario(o->megatron, o->scenario, o->sets, o->n_sets, mg, sc, err)
                 : mm_megatron_scenario(o->megatron, o->scenario, o->sets, o->n_sets, mg, sc, err);
    if (rc || !o->megatron_model)
        return rc;
    mm_cli_make_parent(o->megatron_model);
    if ((rc = mm_megatron_write_model(mg, o->megatron_model, err)))
        mm_scenario_free(sc);
    return rc;
}

static void print_scenario(const run_opts *o, const mm_megatron *mg, const mm_scenario *sc)
{
    char *text = mm_scenario_canonical_alloc(sc);
    printf("# mmsim %s: the scenario `mmsim run %s %s` simulates\n", MMSIM_VERSION,
           o->megatron_script ? "--megatron-script" : "--megatron-args", o->megatron);
    printf("# (base: %s; the user's --set overrides applied last).  Argument by argument:\n",
           o->scenario ? o->scenario : "the built-in default");
    for (int i = 0; i < mg->n_notes; i++)
        printf("#   %s\n", mg->notes[i]);
    if (text)
        fputs(text, stdout);
    free(text);
}

static void print_torchtitan(const run_opts *o, const mm_torchtitan *tt, const mm_scenario *sc)
{
    char *text = mm_scenario_canonical_alloc(sc);
    printf("# mmsim %s: the scenario `mmsim run --torchtitan %s` simulates\n", MMSIM_VERSION, o->torchtitan);
    printf("# (base: %s; the user's --set overrides applied last).  Key by key:\n",
           o->scenario ? o->scenario : "the built-in default");
    for (int i = 0; i < tt->n_notes; i++)
        printf("#   %s\n", tt->notes[i]);
    if (text)
        fputs(text, stdout);
    free(text);
}

/* The scenario of the run: the YAML (or the default) with --set, or one
 * made by --megatron-args or --torchtitan; errors about their overrides
 * point at the file and line they came from. */
static int load_scenario(run_opts *o, mm_megatron *mg, mm_torchtitan *tt, mm_scenario *sc, mm_err *err)
{
    int rc = o->megatron      ? load_megatron(o, mg, sc, err)
             : o->torchtitan ? mm_torchtitan_scenario(o->torchtitan, o->scenario, o->sets, o->n_sets, tt, sc, err)
                             : mm_scenario_load(sc, o->scenario, o->sets, o->n_sets, err);
    if (rc && o->torchtitan)
        mm_torchtitan_repoint(tt, o->torchtitan, o->sets, o->n_sets, err);
    return rc;
}

/* The timeline, with the run's per-stage memory for its memory counter
 * (none when the layout is outside the memory model). */
static int write_trace(const char *path, const mm_sim *sim, const mm_sim_timeline *tl, const mm_metrics *m,
                       mm_err *err)
{
    mm_trace_memory mem;
    int mrc = mm_trace_memory_of(sim, m, &mem, err);
    if (mrc < 0)
        return mrc;
    int rc = mm_trace_write(path, tl, mrc == 0 ? &mem : NULL, err);
    mm_trace_memory_free(&mem);
    return rc;
}

/* mm_sim_run's progress hook: the status line says how far it is. */
static void on_iteration(int done, int total, void *ctx)
{
    (void)ctx;
    mm_cli_status_detail("iteration %d of %d done", done, total);
}

/* What a finished run prints: its JSON, its quiet line or its summary,
 * with -v the iterations (and the Megatron-LM and torchtitan notes), with
 * --breakdown the per-layer breakdown; 0, or mm_cli_fail's status. */
static int print_run(const run_opts *o, mm_sim *sim, const mm_metrics *m, int64_t run_id, const mm_megatron *mg,
                     const mm_torchtitan *tt, mm_err *err)
{
    int rc = 0;
    if (o->json)
        mm_report_run_json(stdout, sim, m, run_id, o->db);
    else if (o->quiet)
        print_quiet(m);
    else
        print_summary(sim, m, run_id, o->db);
    if (o->verbose && !o->json)
        print_iterations(m);
    if (o->breakdown && !o->json) {
        static mm_sim_breakdown bk;
        if (mm_sim_get_breakdown(sim, &bk, err))
            rc = mm_cli_fail(err);
        else {
            if (!m->oom)
                bk.run_data_wait_s = m->data_wait_s, bk.run_data_short_s = m->data_shortfall_s;
            mm_sim_breakdown_write_text(stdout, sim, &bk);
        }
    }
    if (o->megatron && o->verbose)
        for (int i = 0; i < mg->n_notes; i++)
            fprintf(stderr, "mmsim: megatron: %s\n", mg->notes[i]);
    if (o->torchtitan && o->verbose)
        for (int i = 0; i < tt->n_notes; i++)
            fprintf(stderr, "mmsim: torchtitan: %s\n", tt->notes[i]);
    return rc;
}

int mm_cli_run(int argc, char **argv)
{
    run_opts o = {.db = DEFAULT_DB};
    int prc = parse_args(argc, argv, &o);
    if (prc)
        return prc < 0 ? 0 : prc;
    mm_err err;
    mm_err_clear(&err);
    static mm_scenario sc;
    mm_sim sim = {0};
    static mm_megatron mg;
    static mm_torchtitan tt;
    if (load_scenario(&o, &mg, &tt, &sc, &err)) {
        if (o.megatron)
            mm_megatron_repoint(&mg, o.megatron, o.sets, o.n_sets, &err);
        return mm_cli_fail(&err);
    }
    /* checked as a run checks it, --print-scenario too: what it prints runs */
    if (mm_sim_prepare(&sim, &sc, &err) || mm_sim_check_limits(&sim, &err)) {
        if (o.megatron)
            mm_megatron_repoint(&mg, o.megatron, o.sets, o.n_sets, &err);
        if (o.torchtitan)
            mm_torchtitan_repoint(&tt, o.torchtitan, o.sets, o.n_sets, &err);
        int frc = mm_cli_fail(&err);
        mm_sim_free(&sim); /* a failed prepare has freed it already */
        return frc;
    }
    sim.no_symmetry = o.no_symmetry; /* exec/symmetry.h; not part of the scenario (its hash) */
    if (o.print_scenario) {
        if (o.torchtitan)
            print_torchtitan(&o, &tt, &sc);
        else
            print_scenario(&o, &mg, &sc);
        mm_sim_free(&sim);
        mm_scenario_free(&sc);
        return 0;
    }
    /* the database first: a bad --db costs no simulation */
    if (!o.no_db && mm_cli_open_db(o.db, &err)) {
        int frc = mm_cli_fail(&err);
        mm_sim_free(&sim);
        return frc;
    }
    /* a status line while it runs, on a terminal only */
    mm_cli_status_start(o.quiet || o.json, "simulating %s on %d GPUs", sc.source,
                        sim.cluster->nodes * sim.cluster->gpus_per_node);
    sim.progress = on_iteration;
    mm_metrics m;
    mm_sim_timeline tl;
    int rrc = mm_sim_run(&sim, &m, o.trace ? &tl : NULL, &err);
    mm_cli_status_stop();
    if (rrc) {
        rrc = mm_cli_fail(&err);
        mm_sim_free(&sim);
        return rrc;
    }
    int rc = 0;
    int64_t run_id = 0;
    if (o.trace && write_trace(o.trace, &sim, &tl, &m, &err))
        rc = mm_cli_fail(&err);
    if (rc == 0 && !o.no_db && store_run(o.db, &sim, &m, &run_id, &err))
        rc = mm_cli_fail(&err);
    if (rc == 0)
        rc = print_run(&o, &sim, &m, run_id, &mg, &tt, &err);
    if (o.trace)
        mm_sim_timeline_free(&tl);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
    mm_scenario_free(&sc); /* after the sim, which borrows its strings */
    return rc;
}
