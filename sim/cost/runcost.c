/* runcost.c - the run's periodic work (runcost.h): checkpoint saves,
 * evaluations and the loss report's host sync. */
#include "cost/runcost.h"

#include <math.h>
#include <string.h>

#include "cost/cost_internal.h"
#include "model/framework.h"
#include "model/memory.h"

long long mm_run_events(long long n, int interval)
{
    return interval > 0 && n > 0 ? n / interval : 0;
}

/* The bytes one GPU of LLM stage k writes per save: its weights and its
 * optimizer state (fp32 master weights and Adam's moments), what
 * Megatron-LM's save_checkpoint writes (megatron/training/checkpointing.py:
 * the model's sharded_state_dict and the optimizer's).  Its distributed
 * checkpoint format spreads the tensors the DP replicas hold alike over
 * them (--ckpt-fully-parallel-save, on by default: megatron/core/
 * dist_checkpointing/strategies/fully_parallel.py), so each byte is written
 * once: the weights over DP unless ZeRO-3 shards them already, the
 * optimizer state over DP unless ZeRO shards it already. */
static int rank_ckpt_bytes(const mm_sim *sim, int k, double *bytes)
{
    mm_mem_rank r;
    if (mm_sim_llm_stage_rank(sim, k, &r))
        return -1;
    int dp = sim->sc.parallel.llm.lay.dp, zero = sim->sc.train.zero;
    *bytes = r.weights / (zero >= 3 ? 1 : dp) + r.optimizer / (zero >= 1 ? 1 : dp);
    return 0;
}

/* One forward-only iteration of the evaluation (Megatron-LM evaluate():
 * forward_backward_func(forward_only=True) over the same micro-batches):
 * the first micro-batch crosses every stage, the others follow at the
 * slowest stage's pace, (m - 1) max_p F_p + sum_p F_p, F_p a device's
 * forwards over its virtual stages.  The LLM's passes only; pipeline
 * transfers and the encoders are not counted (a lower bound). */
static double eval_iteration_s(const mm_sim *sim, const mm_stage_cost *st, int V, int m)
{
    int pp = sim->sc.parallel.llm.lay.pp;
    double sum = 0, max = 0;
    for (int p = 0; p < pp; p++) {
        double f = 0;
        for (int v = p; v < V; v += pp)
            f += st[v].fwd_s;
        sum += f;
        max = fmax(max, f);
    }
    return sum + (m - 1) * max;
}

int mm_sim_run_costs(const mm_sim *sim, const mm_stage_cost *st, int V, int m, double iteration_s,
                     mm_run_costs *out, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    memset(out, 0, sizeof *out);
    out->total_s = NAN;
    out->on = sc->train.train_iters > 0 || sc->train.log_interval > 0 || sc->train.save_interval > 0 ||
              sc->train.eval_interval > 0;
    if (!out->on)
        return 0;
    if (sc->train.save_interval > 0) {
        for (int k = 0; k < sc->parallel.llm.lay.pp; k++) {
            double b;
            if (rank_ckpt_bytes(sim, k, &b))
                return mm_scenario_fail(sc, err, "train.save_interval",
                                        "the checkpoint's bytes come from the memory model, which does not cover "
                                        "this scenario (measured pass times or an unmodeled module)");
            out->ckpt_rank_bytes = fmax(out->ckpt_rank_bytes, b);
        }
        /* every GPU of a node writes at once through the node's share of
         * the storage: the node with the largest ranks sets the pace */
        int gpn = sim->cluster->gpus_per_node;
        out->ckpt_node_bytes = out->ckpt_rank_bytes * gpn;
        out->save_s = out->ckpt_node_bytes / (sc->train.save_gb_s * 1e9);
        out->per_iter_s += out->save_s / sc->train.save_interval;
    }
    if (sc->train.eval_interval > 0) {
        out->eval_iter_s = eval_iteration_s(sim, st, V, m);
        out->eval_s = sc->train.eval_iters * out->eval_iter_s;
        out->per_iter_s += out->eval_s / sc->train.eval_interval;
    }
    if (sc->train.log_interval > 0) {
        /* training_log reads the reduced loss with .item() (megatron/
         * training/training.py): the host waits for the step's last
         * kernel, and the next step's first kernel starts only once the
         * host has issued it again: one eager kernel's host time
         * exposed (the profile's launch and per-op cost) */
        out->log_sync_s = mm_fw_host_kernel_s(&sim->fw->host, false);
        out->per_iter_s += out->log_sync_s / sc->train.log_interval;
    }
    long long n = sc->train.train_iters;
    out->saves = mm_run_events(n, sc->train.save_interval);
    out->evals = mm_run_events(n, sc->train.eval_interval);
    out->logs = mm_run_events(n, sc->train.log_interval);
    if (n > 0 && isfinite(iteration_s))
        out->total_s = (double)n * iteration_s + (double)out->saves * out->save_s +
                       (double)out->evals * out->eval_s + (double)out->logs * out->log_sync_s;
    return 0;
}
