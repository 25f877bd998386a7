/* costs.c - the model-by-hardware cost bridge: per-stage pass times of
 * the LLM (from the model's op costs and the GPU's kernel tables, or
 * measured pass times), the encoders' per-micro-batch costs, one LLM
 * micro-batch of a given token count (for workload files).  The peak
 * memory of every stage and module is in memcost.c.
 * Not for: forming micro-batches (batchcost.c), building or executing the
 * graph (iterate.c). */
#include "cost/costs.h"

#include "cost/cost_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/compress.h"
#include "hw/compute.h"
#include "hw/net.h"
#include "model/memory.h"
#include "model/mllm.h"
#include "parallel/passtimes.h"

/* ---- costs ---- */

typedef struct pass_times {
    double fwd, bwd, attn_fwd; /* seconds */
    double cp_diag[2], cp_off[2]; /* the CP ring's core steps (fwcost.h) */
    double wgrad;              /* the weight-gradient part of bwd */
    double mem_fwd, mem_bwd, mem_wgrad; /* of which memory-bound kernels (MM_OPK_MEM) */
    /* the host: seconds to issue the passes' kernels and their count, as
     * fwd, bwd (whole backward) and wgrad; the attention core's forward */
    double host_fwd, host_bwd, host_wgrad, host_attn;
    double kern_fwd, kern_bwd, kern_wgrad, kern_attn;
} pass_times;

/* How the LLM's layers run: the scenario's GPU and precision, the
 * framework profile and the attention kernel resolved at load (fwcost.h).
 * Encoders run the same framework's attention kernel, fused (their ops
 * have no unfused expansion), with llm.h's fused memory-bound kernels. */
mm_fp8_cfg mm_sim_fp8(const mm_sim *sim)
{
    const mm_scenario *sc = &sim->sc;
    if (sc->train.precision != MM_PREC_FP8)
        return (mm_fp8_cfg){.on = false};
    return (mm_fp8_cfg){.on = true,
                        .recipe = (mm_fp8_recipe)sc->train.fp8_recipe,
                        .param_gather = sc->train.fp8_param_gather,
                        .grads = sc->train.fp8_grads,
                        .optimizer = sc->train.fp8_optimizer};
}

static mm_fw_ctx llm_ctx(const mm_sim *sim)
{
    const mm_scenario *sc = &sim->sc;
    int cp = sc->parallel.llm.lay.cp, tp = sc->parallel.llm.lay.tp;
    bool sp = sc->train.sequence_parallel || sc->parallel.llm.sp;
    return (mm_fw_ctx){&sim->cluster->gpu, (mm_dtype)sc->train.precision, sim->fw, sim->attn, 2, &sim->fw->host,
                       mm_sim_fp8(sim), 1.0, cp > 1 && sc->train.cp_comm == MM_CP_RING ? cp : 0,
                       sc->train.tp_comm_overlap && sp && tp > 1 ? tp : 0};
}

static mm_fw_ctx enc_ctx(const mm_sim *sim)
{
    mm_fw_ctx c = llm_ctx(sim);
    c.fw = NULL;
    c.cp_ring = 0; /* encoders run without context parallelism */
    c.ub_tp = 0;   /* nor TE's userbuffers overlap (the LLM's layers only) */
    if (mm_attn_impl_unfused(c.attn))
        c.attn = MM_ATTN_IMPL_FLASH;
    return c;
}

static pass_times from_breakdown(const mm_pass_breakdown *b)
{
    pass_times t = {.fwd = mm_pass_breakdown_pass(b, MM_OP_F), .attn_fwd = b->attn_core_fwd};
    t.wgrad = mm_pass_breakdown_pass(b, MM_OP_W);
    t.bwd = mm_pass_breakdown_pass(b, MM_OP_B) + t.wgrad;
    t.mem_fwd = b->s[MM_OP_F][MM_BK_MEM];
    t.mem_wgrad = b->s[MM_OP_W][MM_BK_MEM];
    t.mem_bwd = b->s[MM_OP_B][MM_BK_MEM] + t.mem_wgrad;
    t.host_fwd = b->host_s[MM_OP_F];
    t.host_wgrad = b->host_s[MM_OP_W];
    t.host_bwd = b->host_s[MM_OP_B] + t.host_wgrad;
    t.host_attn = b->attn_core_host_s;
    t.kern_fwd = b->launches[MM_OP_F];
    t.kern_wgrad = b->launches[MM_OP_W];
    t.kern_bwd = b->launches[MM_OP_B] + t.kern_wgrad;
    t.kern_attn = b->attn_core_launches;
    for (int p = 0; p < 2; p++) {
        t.cp_diag[p] = b->cp_diag[p];
        t.cp_off[p] = b->cp_off[p];
    }
    return t;
}

/* A transformer layer's passes under train.cuda_graphs (Megatron-Core's
 * CudaGraphManager, megatron/core/transformer/cuda_graphs.py: a graph per
 * layer for the forward and one for the backward, the recomputation and
 * the weight gradients inside it): layer -- one replay per pass, each a
 * Python call into the runner and a cudaGraphLaunch; full -- the whole
 * forward-backward is one graph (FullCudaGraphWrapper, megatron/core/
 * full_cuda_graph.py) whose single launch per iteration is not charged.
 * The embedding and the LM head stay eager (no graph holds them). */
static void graphed(const mm_sim *sim, pass_times *t)
{
    const mm_fw_host *h = &sim->fw->host;
    mm_cuda_graphs g = sim->sc.train.cuda_graphs;
    if (g == MM_GRAPHS_NONE)
        return;
    bool layer = g == MM_GRAPHS_LAYER;
    t->kern_fwd = layer && t->fwd > 0 ? 1 : 0;
    t->kern_bwd = layer && t->bwd > 0 ? 1 : 0;
    t->host_fwd = t->kern_fwd * (h->graph_launch_s + h->fwd_op_s);
    t->host_bwd = t->kern_bwd * (h->graph_launch_s + h->bwd_op_s);
    t->host_wgrad = t->kern_wgrad = t->host_attn = t->kern_attn = 0;
}

/* Forward, backward and weight-gradient time of a list of forward kernels
 * (fwcost.h: each op's B and W passes from mm_op_pass). */
static pass_times time_ops(const mm_fw_ctx *c, const mm_op_cost *ops, int n)
{
    mm_pass_breakdown b = mm_fw_time_ops(c, ops, n);
    return from_breakdown(&b);
}

/* One LLM layer as the framework runs it (unfused attention expanded,
 * the framework's extra kernels added): `tokens` on this rank, tn in the
 * residual region.  *bk (may be NULL) receives the breakdown. */
static pass_times time_layer(const mm_sim *sim, const mm_llm *m, const mm_op_cost *ops, int n, double tokens,
                             double tn, mm_pass_breakdown *bk)
{
    mm_fw_ctx c = llm_ctx(sim);
    mm_pass_breakdown b;
    if (mm_fw_time_layer(&c, m, ops, n, tokens, tn, sim->sc.parallel.llm.lay.tp, &b))
        b = mm_fw_time_ops(&c, ops, n);
    if (bk)
        *bk = b;
    return from_breakdown(&b);
}

/* The framework's DP gradient bucket in parameters: max(P, p x dp)
 * (Megatron: 40M and 1M; DeepSpeed: reduce_bucket_size), or one layer's
 * parameters on this rank for per-block reduces (FSDP2). */
static double bucket_params(const mm_sim *sim, int dp)
{
    const mm_framework *fw = sim->fw;
    if (fw->bucket_params <= 0 && fw->bucket_per_dp <= 0)
        return (double)mm_llm_layer_params(sim->llm) / sim->sc.parallel.llm.lay.tp;
    return fmax(fw->bucket_params, fw->bucket_per_dp * dp);
}

/* The optimizer phase of one rank holding `local` parameters of which it
 * updates `opt_params` (its ZeRO shard): the step (the profile's bytes per
 * parameter, and fp16's loss scaling), gradient clipping's L2 norm (one
 * fp32 read of the shard's
 * gradients) and the all-reduce of that norm over the whole job (latency
 * only: one fp32), and zeroing the gradient buffer (a memset of the fp32
 * buffer; sharded under ZeRO-2/3).  Megatron: optimizer.step() in
 * core/optimizer/optimizer.py runs clip_grad_norm, then the step; the
 * buffer is zeroed at the start of the next iteration. */
/* One fp32 all-reduced over the whole job: latency only (the grad norm's,
 * the fp16 overflow flag's; the flag's model-parallel group is at most
 * the job, so this is an upper bound for it). */
static double scalar_allreduce_s(const mm_cluster *c)
{
    mm_group_shape sh = {.n = mm_cluster_gpus(c), .nodes = c->nodes, .max_per_node = c->gpus_per_node,
                         .min_per_node = c->gpus_per_node, .channels = 1, .leaf_groups = 1};
    return mm_net_analytic_shape_time(c, MM_COLL_ALLREDUCE, mm_coll_auto(c, MM_COLL_ALLREDUCE, &sh, 4), &sh, 4.0);
}

/* fp16's dynamic loss scaling inside optimizer.step() (Megatron
 * core/optimizer/optimizer.py, MixedPrecisionOptimizer.step with a grad
 * scaler, which bf16 runs without): the gradients kept 16-bit are first
 * copied to fp32 main grads (Float16OptimizerWithFloat16Params.
 * _copy_model_grads_to_main_grads, main_grad.float(): read 2, write 4
 * bytes; a no-op on an fp32 buffer), then
 * _unscale_main_grads_and_check_for_nan runs
 * torch._amp_foreach_non_finite_check_and_unscale_ over them (read and
 * write fp32: 8 bytes) and all-reduces the found-inf flag. */
static double loss_scale_s(const mm_sim *sim, double opt_params)
{
    mm_dtype prec = (mm_dtype)sim->sc.train.precision;
    if (prec != MM_DTYPE_FP16)
        return 0.0;
    double copy = mm_framework_grad_bytes(sim->fw, prec) < 4 ? 6.0 : 0.0;
    return mm_mem_time(&sim->cluster->gpu, opt_params * (copy + 8.0)) + scalar_allreduce_s(sim->cluster);
}

static void optimizer_phase(const mm_sim *sim, double local, double opt_params, int zero, mm_opt_breakdown *o)
{
    const mm_gpu_spec *g = &sim->cluster->gpu;
    const mm_framework *fw = sim->fw;
    memset(o, 0, sizeof *o);
    o->step_s = mm_mem_time(g, opt_params * fw->step_bytes_per_param) + loss_scale_s(sim, opt_params);
    if (fw->grad_norm)
        o->grad_norm_s = mm_mem_time(g, opt_params * 4.0) + scalar_allreduce_s(sim->cluster);
    if (fw->zero_grad_buffer)
        o->zero_grad_s = mm_mem_time(g, (zero >= 2 ? opt_params : local) * 4.0);
    o->total_s = o->step_s + o->grad_norm_s + o->zero_grad_s;
}

/* Per-stage pass times measured elsewhere (train.pass_times): they replace
 * the compute model for F, B and W, and the network for pipeline transfers. */
static int apply_pass_times(const mm_sim *sim, mm_stage_cost *st, int V, mm_build_spec *spec, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    char path[512];
    mm_sim_resolve_path(sc->train.pass_times, sc->source, path, sizeof path);
    mm_pass_times pt;
    int rc = mm_pass_times_load(path, &pt, err);
    if (rc)
        return rc;
    if (pt.n_stages != V) {
        mm_pass_times_free(&pt);
        return mm_scenario_fail(sc, err, "train.pass_times", "'%s' lists %d stages, the layout has pp*vpp = %d",
                                sc->train.pass_times, pt.n_stages, V);
    }
    double p2p = 0;
    /* measured passes include their own launches: the host costs nothing */
    spec->coll_host_s = 0;
    for (int v = 0; v < V; v++) {
        st[v].fwd_host_s = st[v].bwd_host_s = st[v].wgrad_host_s = st[v].opt_host_s = 0;
        st[v].fwd_launches = st[v].bwd_launches = st[v].wgrad_launches = st[v].opt_launches = 0;
        st[v].fwd_s = pt.f_s[v];
        st[v].bwd_s = pt.b_s[v] + pt.w_s[v];
        st[v].wgrad_s = pt.w_s[v];
        p2p += pt.p2p_s[v] / V;
    }
    spec->p2p_s = p2p > 0 ? p2p : 1e-12; /* a fixed delay, even when tiny */
    mm_pass_times_free(&pt);
    return 0;
}

double mm_sim_cost_seq(const mm_sim *sim)
{
    bool pad = sim->padding == MM_PAD_MAX_LENGTH && !sim->wl;
    return pad && (double)mm_sim_pad_to(sim) > sim->seq ? (double)mm_sim_pad_to(sim) : sim->seq;
}

int mm_sim_recompute(const mm_sim *sim, const mm_module_layout *lay)
{
    return lay && lay->recompute >= 0 ? lay->recompute : (int)sim->sc.train.recompute;
}

int mm_sim_pipe_stages(const mm_sim *sim)
{
    int pipe = sim->sc.parallel.llm.lay.pp;
    for (int i = 0; i < sim->n_enc && sim->sc.parallel.placement == MM_PLACE_PIPELINE; i++)
        pipe += sim->enc[i].layout.lay.pp;
    return pipe;
}

void mm_sim_overlap(const mm_sim *sim, int zero, bool *grad_reduce, bool *param_gather)
{
    const mm_scenario *sc = &sim->sc;
    mm_framework_overlap(sim->fw, zero, grad_reduce, param_gather);
    if (sc->train.overlap_grad_reduce != MM_TOVL_AUTO)
        *grad_reduce = sc->train.overlap_grad_reduce == MM_TOVL_TRUE;
    if (sc->train.overlap_param_gather != MM_TOVL_AUTO)
        *param_gather = sc->train.overlap_param_gather == MM_TOVL_TRUE;
}

void mm_sim_freeze_stage(const mm_sim *sim, mm_stage_cost *c)
{
    if (!sim->llm_frozen)
        return;
    c->bwd_s -= c->wgrad_s;
    c->bwd_flops -= c->wgrad_flops;
    c->wgrad_s = c->wgrad_flops = 0;
    if (!(c->param_bytes > 0))
        c->param_bytes = c->grad_bytes; /* ZeRO-3 still gathers the weights */
    c->grad_bytes = 0;                  /* no gradients, no DP traffic */
    c->opt_s = 0;
}

void mm_sim_freeze_mb(const mm_sim *sim, mm_mb_cost *c)
{
    if (!sim->llm_frozen)
        return;
    c->bwd_s -= c->wgrad_s;
    c->bwd_flops -= c->wgrad_flops;
    c->wgrad_s = c->wgrad_flops = 0;
}

/* The pass times of one (mean) block of `m` (the model, or a stage's view
 * of its blocks) on one rank of the scenario's LLM layout. */
static int block_costs(const mm_sim *sim, const mm_llm *m, bool sp, pass_times *out, mm_pass_breakdown *bk)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    double b = (double)sc->train.micro_batch, s = mm_sim_cost_seq(sim);
    int cp = L->lay.cp;
    mm_op_cost ops[MM_LLM_MAX_OPS];
    /* With context parallelism a rank holds s/cp tokens of each sequence
     * and attends over all s keys (ring attention): its attention work is
     * (s/cp) x s per sequence, written as a packed batch with that sum. */
    int n = cp > 1 ? mm_llm_layer_ops_packed(m, b * s / cp, b * s * s / cp, b, L->lay.tp, sp, 2, ops, MM_LLM_MAX_OPS)
                   : mm_llm_layer_ops(m, b, s, L->lay.tp, sp, 2, ops, MM_LLM_MAX_OPS);
    if (n < 0)
        return -1;
    double tokens = b * s / cp;
    *out = time_layer(sim, m, ops, n, tokens, sp ? tokens / L->lay.tp : tokens, bk);
    return 0;
}

int mm_sim_moe_load(const mm_sim *sim, mm_moe_load *out)
{
    const mm_llm *m = sim->llm;
    memset(out, 0, sizeof *out);
    if (m->experts <= 0)
        return 1;
    double tokens = (double)sim->sc.train.micro_batch * sim->seq / sim->sc.parallel.llm.lay.cp;
    return mm_llm_moe_profile(m, tokens, out) ? -1 : 0;
}

/* EP: each kept copy of a token's hidden state goes to its expert's rank
 * and comes back (Megatron's all-to-all token dispatcher), each TP rank
 * moving its 1/tp.  The splits are uneven: the all-to-all lasts as long
 * as its busiest endpoint, the rank whose experts receive the most rows
 * (model/moe.h, the same profile the layer's kernels use), so every member
 * is given that rank's volume.  An overestimate of the total traffic, not
 * of the busiest link's. */
static double ep_bytes(const mm_sim *sim, int wbytes)
{
    mm_moe_load ld;
    if (mm_sim_moe_load(sim, &ld))
        return 0;
    /* a GPU's rows, each moved by the tp / ep_tp GPUs its experts are split over */
    int etp = sim->sc.parallel.llm.lay.tp / (sim->llm->ep_tp > 1 ? sim->llm->ep_tp : 1);
    return fmax(ld.rank_rows, ld.kept) * (double)sim->llm->hidden * wbytes / (etp > 1 ? etp : 1);
}

/* The LLM's costs per virtual stage and the spec's layout fields, and per
 * virtual stage the share of the F, B and W passes' nominal time spent in
 * memory-bound kernels (mem_frac[3 v + 0..2], may be NULL): HBM
 * perturbations and node groups' GPUs scale that share by the bandwidth
 * ratio and the rest by the peak ratio (hw/perturb.h), since the executor
 * sees a pass as one op, not its kernels.  stage_costs_bk also fills the
 * breakdown (may be NULL). */
/* The build spec's layout and communication fields of the LLM: degrees,
 * schedule, overlaps, the framework's buckets and ZeRO-3 gathers, and the
 * size of each TP, CP, EP and pipeline message. */
static void layout_spec(const mm_sim *sim, mm_build_spec *spec, int zero, bool sp, int gbytes)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_llm *m = sim->llm;
    double b = (double)sc->train.micro_batch, s = sim->seq;
    int cp = L->lay.cp, rc = mm_sim_recompute(sim, L);
    const int wbytes = 2;
    static const mm_schedule sched[] = {[MM_SCHED_GPIPE] = MM_SCHEDULE_GPIPE, [MM_SCHED_1F1B] = MM_SCHEDULE_1F1B,
                                        [MM_SCHED_INTERLEAVED] = MM_SCHEDULE_INTERLEAVED,
                                        [MM_SCHED_ZB_H1] = MM_SCHEDULE_ZB_H1,
                                        [MM_SCHED_ZB_2P] = MM_SCHEDULE_ZB_2P,
                                        [MM_SCHED_ZB_V] = MM_SCHEDULE_ZB_V};
    spec->schedule = sched[sc->train.schedule];
    spec->lay = L->lay;
    spec->m = sim->micro_batches;
    mm_build_parse_order(sc->parallel.order, spec->order);
    spec->zero = zero;
    spec->sp = sp;
    spec->tp_overlap = sc->train.tp_comm_overlap;
    spec->coexec = sc->train.coexec == MM_COEXEC_DHELIX;
    spec->enc_bubbles = sc->train.encoder_schedule == MM_ENCSCHED_BUBBLES;
    mm_sim_overlap(sim, zero, &spec->overlap_grad_reduce, &spec->overlap_param_gather);
    int pipe = mm_sim_pipe_stages(sim);
    spec->grad_every_mb = mm_framework_grad_every_microbatch(sim->fw, zero, pipe);
    spec->z3_once = mm_framework_z3_keep_gathered(sim->fw, zero, pipe);
    spec->bucket_bytes = bucket_params(sim, L->lay.dp) * gbytes;
    mm_z3_knobs knobs = {sc->zero.prefetch_bucket_size, sc->zero.max_live_parameters,
                         sc->zero.param_persistence_threshold, sc->zero.max_reuse_distance};
    mm_z3_gather_plan z3;
    if (mm_framework_z3_plan(sim->fw, m, &knobs, rc == MM_RECOMPUTE_FULL, &z3))
        z3 = (mm_z3_gather_plan){.gathers = 1, .prefetch = 1, .scatters = 1}; /* refused by check_zero under ZeRO-3 */
    spec->z3_gathers = z3.gathers;
    spec->z3_prefetch = z3.prefetch;
    spec->z3_no_prefetch = z3.prefetch == 0;
    spec->z3_regathers = z3.regathers;
    spec->z3_scatters = z3.scatters;
    spec->z3_regather_share = z3.regather_share;
    spec->z3_list_host_s = zero >= 3 ? mm_framework_z3_list_host_s(sim->fw, L->lay.dp) : 0.0;
    /* one TP message: the rank's s/cp tokens of activations */
    spec->tp_bytes = mm_llm_tp_allreduce_bytes(m, b, s / cp, wbytes);
    spec->tp_msgs_fwd = 2;
    spec->tp_msgs_bwd = rc == MM_RECOMPUTE_FULL ? 4 : 2; /* the recomputed forward all-reduces too */
    /* Sequence parallelism keeps only the local shard of the column-parallel
     * layers' input, so backward all-gathers it again for the weight
     * gradient (Megatron tensor_parallel/layers.py
     * LinearWithGradAccumulationAndAsyncCommunication.backward): two more
     * all-gathers per layer, one more AG + RS pair's worth. */
    if (sp)
        spec->tp_msgs_bwd += 1;
    spec->cp_ring = sc->train.cp_comm == MM_CP_RING;
    /* ring: one K and one V block of the local s/cp tokens per step, heads
     * split by TP; Ulysses: one all-to-all of the local activations */
    spec->cp_bytes = spec->cp_ring ? 2.0 * b * (s / cp) * (double)(m->kv_heads * m->head_dim) * wbytes / L->lay.tp
                                   : b * (s / cp) * (double)m->hidden * wbytes / L->lay.tp;
    spec->ep_bytes = ep_bytes(sim, wbytes);
    spec->p2p_bytes = b * s * (double)m->hidden * wbytes;
    if (sc->compress.present && (sc->compress.dp || sc->compress.pp || sc->compress.tp)) { /* as check.c checked */
        mm_compress_use d, p, t;
        const char *gpu = sim->cluster->gpu.name;
        mm_compress_resolve(sc->compress.dp, sc->compress.dp_ratio, sc->compress.compress_gb_s,
                            sc->compress.decompress_gb_s, gpu, &d);
        mm_compress_resolve(sc->compress.pp, sc->compress.pp_ratio, sc->compress.compress_gb_s,
                            sc->compress.decompress_gb_s, gpu, &p);
        spec->dp_ratio = d.ratio, spec->dp_compress_gb_s = d.compress_gb_s;
        spec->dp_decompress_gb_s = d.decompress_gb_s;
        spec->pp_ratio = p.ratio, spec->pp_compress_gb_s = p.compress_gb_s;
        spec->pp_decompress_gb_s = p.decompress_gb_s;
        mm_compress_resolve(sc->compress.tp, sc->compress.tp_ratio, sc->compress.compress_gb_s,
                            sc->compress.decompress_gb_s, gpu, &t);
        spec->tp_ratio = t.ratio, spec->tp_compress_gb_s = t.compress_gb_s;
        spec->tp_decompress_gb_s = t.decompress_gb_s;
    }
    spec->gpus_per_node = sim->cluster->gpus_per_node; /* the p2p communicator (build_llm.c) */
    /* a blocking collective is one eager op of the host (a torch.distributed
     * call into ProcessGroupNCCL and the NCCL kernel's launch); inside a
     * CUDA graph it is replayed with the layer */
    spec->coll_host_s = sc->train.cuda_graphs != MM_GRAPHS_NONE ? 0.0
                                                                : mm_fw_host_kernel_s(&sim->fw->host, false);
    /* gradient clipping reads the norm on the host (Megatron core/optimizer/
     * clip_grads.py get_grad_norm_fp32: total_norm.item()), fp16 its
     * overflow flag (MixedPrecisionOptimizer: found_inf.item()): the host
     * waits for the GPU before the step */
    spec->host_sync_step = sim->fw->grad_norm || (mm_dtype)sc->train.precision == MM_DTYPE_FP16;
    /* Megatron-Core's dropless token dispatchers need the token counts on
     * the host before the experts run: MoEAlltoAllTokenDispatcher without
     * --moe-pad-expert-input-to-capacity copies the splits to the host and
     * waits at cuda_sync_point "before_ep_alltoall" (EP > 1; with a
     * capacity factor but no padding earlier, "before_permutation_1"),
     * d2h_event.synchronize(); the padded path is static ("no_sync");
     * MoEAllGatherTokenDispatcher always reads tokens_per_expert with a
     * blocking .cpu() (megatron/core/transformer/moe/token_dispatcher.py at
     * core_v0.15.0).  Charged at the forward's EP all-to-all. */
    spec->ep_dispatch_sync = m->experts > 0 && spec->ep_bytes > 0 &&
                             (sc->moe.dispatcher == MM_MOE_ALLGATHER || !sc->moe.pad_to_capacity);
}

static int stage_costs_bk(const mm_sim *sim, mm_stage_cost *st, mm_build_spec *spec, double *mem_frac,
                          mm_sim_breakdown *bk, mm_err *err);

static int stage_costs(const mm_sim *sim, mm_stage_cost *st, mm_build_spec *spec, double *mem_frac, mm_err *err)
{
    return stage_costs_bk(sim, st, spec, mem_frac, NULL, err);
}

static int bin_layer(const mm_sim *sim, const mm_llm *m, double T, double S, double n, pass_times *out,
                     mm_pass_breakdown *bk);

/* The breakdown's view of the stage costs and of one drawn micro-batch's
 * layer (cost_internal.h; breakdown.c asks them). */
int mm_sim_stage_costs_breakdown(const mm_sim *sim, mm_stage_cost *st, mm_build_spec *spec, mm_sim_breakdown *bk,
                                 mm_err *err)
{
    return stage_costs_bk(sim, st, spec, NULL, bk, err);
}

int mm_sim_bin_layer_breakdown(const mm_sim *sim, double T, double S, double n, mm_pass_breakdown *bk)
{
    pass_times t;
    return bin_layer(sim, sim->llm, T, S, n, &t, bk);
}

/* The embedding's and the LM head's pass times (into bk->embed, bk->head
 * and emb, head): the first and the last stage's extra work. */
static void edge_costs(const mm_sim *sim, bool sp, int wbytes, mm_sim_breakdown *bk, pass_times *emb,
                       pass_times *head)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_llm *m = sim->llm;
    double b = (double)sc->train.micro_batch, s = mm_sim_cost_seq(sim);
    int cp = L->lay.cp;
    mm_op_cost ops[MM_LLM_MAX_OPS];
    mm_fw_ctx fc = llm_ctx(sim);
    double tokens = b * s / cp;
    int n;
    n = mm_llm_embed_ops(m, b, s / cp, L->lay.tp, sp, wbytes, ops, MM_LLM_MAX_OPS);
    if (n >= 0)
        bk->embed = mm_fw_time_ops(&fc, ops, n);
    /* the embedding table's weight gradient (no forward op carries it) */
    bk->embed.s[MM_OP_W][MM_BK_MEM] += mm_fw_embed_wgrad_time(&fc, m, tokens, L->lay.tp);
    bk->embed.launches[MM_OP_W] += 1; /* embedding_dense_backward */
    bk->embed.host_s[MM_OP_W] += mm_fw_host_kernel_s(fc.host, true);
    *emb = from_breakdown(&bk->embed);
    n = mm_llm_head_ops(m, b, s / cp, L->lay.tp, sp, wbytes, ops, MM_LLM_MAX_OPS);
    if (n >= 0)
        bk->head = mm_fw_time_ops(&fc, ops, n);
    *head = from_breakdown(&bk->head);
}

/* The memory-bound share of virtual stage c's F, B and W (out[0..2]), for
 * the overlap slowdown: its layers' plus the embedding's or the head's. */
static void stage_mem_frac(const pass_times *layer, const pass_times *emb, const pass_times *head, int nl, bool first,
                           bool last, const mm_stage_cost *c, double *out)
{
    double mf = nl * layer->mem_fwd + (first ? emb->mem_fwd : 0) + (last ? head->mem_fwd : 0);
    double mb = nl * layer->mem_bwd + (first ? emb->mem_bwd : 0) + (last ? head->mem_bwd : 0);
    double mw = nl * layer->mem_wgrad + (first ? emb->mem_wgrad : 0) + (last ? head->mem_wgrad : 0);
    out[0] = c->fwd_s > 0 ? mf / c->fwd_s : 0;
    out[1] = c->bwd_s > 0 ? mb / c->bwd_s : 0;
    out[2] = c->wgrad_s > 0 ? mw / c->wgrad_s : 0;
}

/* Virtual stage c's host work per micro-batch (mm_stage_cost's host
 * fields): its layers' kernels, the recomputation's (full: the forward
 * again; selective: the attention core's) ahead of each backward, and the
 * embedding's or the LM head's. */
static void stage_host(const pass_times *l, const pass_times *emb, const pass_times *head, int nl, bool first,
                       bool last, int recompute, mm_stage_cost *c)
{
    double re_h = recompute == MM_RECOMPUTE_FULL ? l->host_fwd : recompute == MM_RECOMPUTE_SELECTIVE ? l->host_attn : 0;
    double re_k = recompute == MM_RECOMPUTE_FULL ? l->kern_fwd : recompute == MM_RECOMPUTE_SELECTIVE ? l->kern_attn : 0;
    c->fwd_host_s = nl * l->host_fwd + (first ? emb->host_fwd : 0) + (last ? head->host_fwd : 0);
    c->bwd_host_s = nl * (l->host_bwd + re_h) + (first ? emb->host_bwd : 0) + (last ? head->host_bwd : 0);
    c->wgrad_host_s = nl * l->host_wgrad + (first ? emb->host_wgrad : 0) + (last ? head->host_wgrad : 0);
    c->fwd_launches = nl * l->kern_fwd + (first ? emb->kern_fwd : 0) + (last ? head->kern_fwd : 0);
    c->bwd_launches = nl * (l->kern_bwd + re_k) + (first ? emb->kern_bwd : 0) + (last ? head->kern_bwd : 0);
    c->wgrad_launches = nl * l->kern_wgrad + (first ? emb->kern_wgrad : 0) + (last ? head->kern_wgrad : 0);
}

/* The optimizer phase's launches on one rank updating `opt_params` held
 * in `tensors` parameter tensors, by the profile's optimizer.impl.
 *
 * fused: the step goes through multi_tensor_apply (apex csrc/
 * multi_tensor_apply.cuh; PyTorch aten/src/ATen/native/cuda/
 * MultiTensorApply.cuh), which launches once per 320 blocks of 65536
 * elements (depth_to_max_blocks, chunk_size 2048*32): the Adam step, and
 * with gradient clipping the L2 norm and the scaling by the clip factor;
 * the gradient buffer's zeroing is one memset.  The launches of a list of
 * tensors full before its blocks are (36 tensors at Adam's depth 4) are
 * not counted: a lower bound for many small tensors.  Each multi-tensor
 * call is one Python op, each launch one cudaLaunchKernel.
 *
 * foreach: torch.optim's _multi_tensor_adam (pytorch/pytorch
 * torch/optim/adam.py @ 005941ebcd15da658ae14bf349b5457517ff9318, not
 * capturable, no weight decay) runs 8 foreach ops over the tensor lists:
 * _foreach_mul_(exp_avgs), _foreach_add_(exp_avgs, grads),
 * _foreach_mul_(exp_avg_sqs), _foreach_addcmul_(exp_avg_sqs, grads,
 * grads), _foreach_sqrt, _foreach_div_ (a scalar list), _foreach_add
 * (eps), _foreach_addcdiv_ (a scalar list); the step counters are CPU
 * tensors (no kernel).  Each launches once per depth_to_max_tensors
 * tensors of its depth (110, 64, 48 for 1, 2, 3 lists; 96 and 48 with a
 * scalar list: MultiTensorApply.cuh) or per 320 blocks, whichever is more.
 *
 * for_loop: _single_tensor_adam (same file) runs per tensor exp_avg.mul_,
 * .add_, exp_avg_sq.mul_, .addcmul_, .sqrt(), / bias_correction2_sqrt,
 * .add_(eps), param.addcdiv_: 8 eager kernels per tensor, each one Python
 * op and one launch.
 *
 * Gradient clipping and the zeroing stay as under fused. */
static void optimizer_host(const mm_sim *sim, double opt_params, double tensors, mm_stage_cost *c)
{
    const mm_framework *fw = sim->fw;
    double per_launch = 320.0 * 65536.0, mt = opt_params > 0 ? ceil(opt_params / per_launch) : 0;
    double norm_calls = opt_params > 0 && fw->grad_norm ? 2.0 : 0.0;
    double memsets = fw->zero_grad_buffer ? 1.0 : 0.0;
    double step_launches = mt, step_calls = opt_params > 0 ? 1.0 : 0.0;
    if (opt_params > 0 && fw->opt_impl == MM_OPT_FOREACH) {
        static const double max_tensors[8] = {110, 64, 110, 48, 64, 96, 64, 48};
        step_launches = 0;
        for (int i = 0; i < 8; i++)
            step_launches += fmax(ceil(tensors / max_tensors[i]), mt);
        step_calls = 8;
    } else if (opt_params > 0 && fw->opt_impl == MM_OPT_FOR_LOOP) {
        step_launches = step_calls = 8 * tensors;
    }
    c->opt_launches = step_launches + mt * norm_calls + memsets;
    c->opt_host_s = c->opt_launches * fw->host.launch_s + (step_calls + norm_calls + memsets) * fw->host.fwd_op_s;
}

/* The parameter tensors of a stage of nl blocks like sv (its edges on the
 * first and last stage): what an eager optimizer loops over; every tensor
 * on every rank, as FSDP2's DTensor shards and TP's shards hold them.  0
 * where not modeled (refused for foreach and for_loop: scenario/check.c). */
static double stage_tensors(const mm_llm *sv, int nl, bool first, bool last)
{
    int64_t b = mm_llm_block_tensors(sv);
    return b < 0 ? 0 : (double)(nl * b + mm_llm_edge_tensors(sv, first, last));
}

/* The blocks of a stage from layer l0 on: its own mix, whose mean block
 * times nl costs it; a stage of no layer (the embedding or the loss alone,
 * model/layout.h) takes block l0's view, multiplied by 0, so that no mean
 * over zero blocks is taken. */
static mm_llm stage_view(const mm_llm *m, int l0, int nl)
{
    if (nl > 0)
        return mm_llm_stage_view(m, l0, nl);
    return mm_llm_stage_view(m, l0 < m->layers ? l0 : m->layers - 1, 1);
}

/* The parameters one (pre-TP) copy of a stage of nl blocks like sv holds:
 * its experts split over EP's DP fold; Megatron keeps the (tied) embedding
 * on the first stage and a copy for the LM head on the last. */
static double stage_params(const mm_sim *sim, const mm_llm *sv, int nl, bool first, bool last)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    const mm_llm *m = sim->llm;
    int V = L->lay.pp * L->lay.vpp;
    double layer_params = (double)mm_llm_layer_params(sv);
    int ep_dp = 1, ep_tp = 1;
    if (m->experts > 0 && L->lay.ep > 1 && mm_mem_ep_fold(L->lay.ep, L->lay.tp, L->lay.dp, &ep_dp, &ep_tp) == 0)
        layer_params -= (double)mm_llm_layer_expert_params(sv) * (1.0 - 1.0 / ep_dp);
    double params = (double)nl * layer_params;
    if (first)
        params += (double)mm_llm_embedding_params(m);
    if (last)
        params += (double)mm_llm_final_norm_params(m) +
                  (m->tied ? (V > 1 ? (double)m->vocab * (double)m->hidden : 0.0)
                           : (double)mm_llm_head_params(m));
    return params;
}

/* A stage of nl blocks like sv (with the embedding when first, the head
 * when last): its pass times and FLOPs, and its memory-bound shares into
 * mf when asked; a part of stage_costs_bk's loop. */
static void stage_pass(const mm_llm *m, const mm_llm *sv, const pass_times *layer, const pass_times *emb,
                       const pass_times *head, int rc, double b, double s, int nl, bool first, bool last,
                       mm_stage_cost *c, double *mf)
{
    double layer_flops = mm_llm_layer_fwd_flops(sv, b, s);
    double re_flops = rc == MM_RECOMPUTE_FULL ? layer_flops
                      : rc == MM_RECOMPUTE_SELECTIVE ? mm_llm_layer_attn_fwd_flops(sv, b, s)
                                                     : 0.0;
    double re_time = rc == MM_RECOMPUTE_FULL ? layer->fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer->attn_fwd : 0.0;
    c->fwd_s = nl * layer->fwd + (first ? emb->fwd : 0) + (last ? head->fwd : 0);
    c->bwd_s = nl * (layer->bwd + re_time) + (first ? emb->bwd : 0) + (last ? head->bwd : 0);
    c->fwd_flops = nl * layer_flops + (last ? mm_llm_head_fwd_flops(m, b, s) : 0);
    c->bwd_flops = 2 * c->fwd_flops;
    c->wgrad_s = nl * layer->wgrad + (first ? emb->wgrad : 0) + (last ? head->wgrad : 0);
    for (int p = 0; p < 2; p++) {
        c->cp_diag_s[p] = nl > 0 ? layer->cp_diag[p] : 0.0;
        c->cp_off_s[p] = nl > 0 ? layer->cp_off[p] : 0.0;
    }
    stage_host(layer, emb, head, nl, first, last, rc, c);
    if (mf)
        stage_mem_frac(layer, emb, head, nl, first, last, c, mf);
    /* weight gradients: every matmul but the attention core, once */
    c->wgrad_flops = c->fwd_flops - nl * mm_llm_layer_attn_fwd_flops(sv, b, s);
    c->recompute_flops = nl * re_flops;
}

/* A stage's gradient and parameter bytes per GPU and its optimizer step
 * (ob; the parameters it updates per GPU into *opt_params_out); a part of
 * stage_costs_bk's loop. */
double mm_sim_fp8_stage_params(const mm_sim *sim, const mm_llm *sv, int nl)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    double layer = (double)mm_llm_layer_params(sv);
    if (!(layer > 0))
        return 0.0;
    /* the block's share of Linear weights, of its parameters on this rank */
    double frac = mm_fp8_layer_weight_params(sv) / layer;
    return stage_params(sim, sv, nl, false, false) / L->lay.tp * (frac < 1.0 ? frac : 1.0);
}

/* The unfused weight-gradient accumulation of one micro-batch's backward
 * on a stage of nl blocks like sv (train.grad_accum_fusion false, Megatron-LM
 * --no-gradient-accumulation-fusion): the wgrad GEMM writes a 16-bit
 * gradient and the DDP hook adds it to the main gradient
 * (megatron/core/distributed: param.main_grad.add_(param.grad.data)), one
 * memory-bound pass per parameter every micro-batch; FP8 weights under
 * train.fp8_grads take MS-AMP's add_to_fp8 instead (fp8.h
 * mm_fp8_grad_accum_bytes).  0 with the fused accumulation (the GEMM
 * accumulates into the main gradient in its epilogue). */
static double grad_accum_s(const mm_sim *sim, const mm_llm *sv, int nl, bool first, bool last, int gbytes)
{
    if (sim->sc.train.grad_accum_fusion)
        return 0.0;
    const mm_module_layout *L = &sim->sc.parallel.llm;
    mm_fp8_cfg f = mm_sim_fp8(sim);
    double local = stage_params(sim, sv, nl, first, last) / L->lay.tp;
    double fp8 = f.on ? mm_sim_fp8_stage_params(sim, sv, nl) : 0.0;
    if (fp8 > local)
        fp8 = local;
    double bytes = (local - fp8) * (2.0 * gbytes + 2.0) + fp8 * mm_fp8_grad_accum_bytes(&f, gbytes);
    return mm_mem_time(&sim->cluster->gpu, bytes);
}

/* Delayed scaling's amax work of one pass (bwd or not) of a stage's nl
 * blocks like sv, in seconds (fp8.h mm_fp8_amax_*): the all-reduce (max)
 * of the region's amaxes over the amax-reduction group, Megatron's tp x
 * cp x dp ranks (parallel_state get_amax_reduction_group with context
 * parallelism), on the compute stream and timed alone on the network
 * (analytic), then the history-and-scale update kernel.  0 for the other
 * recipes (their scales come from the tensors themselves). */
static double fp8_region_s(const mm_sim *sim, const mm_llm *sv, int nl, bool bwd)
{
    mm_fp8_cfg f = mm_sim_fp8(sim);
    if (!f.on || f.recipe != MM_FP8_DELAYED || nl < 1)
        return 0.0;
    const mm_cluster *c = sim->cluster;
    const mm_layout *lay = &sim->sc.parallel.llm.lay;
    int gemms = nl * mm_fp8_layer_gemms(sv), n = lay->tp * (lay->cp > 0 ? lay->cp : 1) * lay->dp;
    double t = mm_mem_time(&c->gpu, mm_fp8_amax_update_bytes(gemms, bwd));
    int total = mm_cluster_gpus(c);
    if (n < 2 || n > total)
        return t;
    int *ranks = malloc((size_t)n * sizeof *ranks); /* the group's ranks: tp fastest, then cp, dp */
    if (!ranks)
        return t;
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    mm_group_shape sh;
    mm_group_shape_of(c, ranks, n, &sh);
    free(ranks);
    double bytes = mm_fp8_amax_buffer_bytes(gemms, bwd);
    return t + mm_net_analytic_shape_time(c, MM_COLL_ALLREDUCE, mm_coll_auto(c, MM_COLL_ALLREDUCE, &sh, bytes), &sh,
                                          bytes);
}

/* FP8 (mm_sim_fp8) on a stage holding fp8_local FP8-weight parameters per
 * GPU, fp8_opt of them in its optimizer shard: their gradient and gather
 * bytes, their optimizer-step bytes (fp8.h's state sizes instead of the
 * profile's), and the step's casts: the weight casts, and under
 * train.fp8_grads the gradients' re-quantization to the DP-wide scale. */
static void stage_fp8(const mm_sim *sim, double opt_params, double fp8_local, double fp8_opt, int gbytes,
                      mm_stage_cost *c, mm_opt_breakdown *ob)
{
    mm_fp8_cfg f = mm_sim_fp8(sim);
    if (!f.on)
        return;
    const mm_gpu_spec *g = &sim->cluster->gpu;
    mm_fp8_cfg base = {.on = true, .recipe = f.recipe};
    c->grad_bytes += fp8_local * (mm_fp8_grad_bytes(&f, gbytes) - gbytes);
    c->param_bytes += fp8_local * (mm_fp8_gather_bytes(&f) - 2.0);
    double d = mm_fp8_step_bytes(&f, gbytes) - mm_fp8_step_bytes(&base, gbytes);
    if (d != 0) { /* the step re-timed with FP8-LM's state bytes */
        double t0 = ob->step_s;
        ob->step_s = mm_mem_time(g, opt_params * sim->fw->step_bytes_per_param + fp8_opt * d);
        ob->total_s += ob->step_s - t0;
    }
    ob->fp8_cast_s = mm_mem_time(g, mm_fp8_weight_cast_bytes(&f, fp8_local) + mm_fp8_grad_requant_bytes(&f, fp8_local));
    ob->total_s += ob->fp8_cast_s;
}

static void stage_weights(const mm_sim *sim, const mm_llm *sv, int nl, bool first, bool last, int zero, int gbytes,
                          int wbytes, mm_stage_cost *c, mm_opt_breakdown *ob, double *opt_params_out)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    /* Megatron keeps the (tied) embedding on the first stage and a copy
     * for the LM head on the last.  Experts are split over ep. */
    double params = stage_params(sim, sv, nl, first, last);
    double local = params / L->lay.tp;
    c->grad_bytes = local * gbytes;
    c->param_bytes = local * wbytes;
    double opt_params = zero >= 1 ? local / L->lay.dp : local;
    optimizer_phase(sim, local, opt_params, zero, ob);
    double fp8_local = mm_sim_fp8_stage_params(sim, sv, nl);
    stage_fp8(sim, opt_params, fp8_local, zero >= 1 ? fp8_local / L->lay.dp : fp8_local, gbytes, c, ob);
    *opt_params_out = opt_params;
}

static int stage_costs_bk(const mm_sim *sim, mm_stage_cost *st, mm_build_spec *spec, double *mem_frac,
                          mm_sim_breakdown *bk, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_llm *m = sim->llm;
    mm_dtype dt = (mm_dtype)sc->train.precision;
    double b = (double)sc->train.micro_batch, s = mm_sim_cost_seq(sim);
    int V = L->lay.pp * L->lay.vpp;
    bool sp = (sc->train.sequence_parallel || L->sp) && L->lay.tp > 1;
    const int wbytes = 2; /* 16-bit activations between kernels and 16-bit
                             parameters; under FP8 the GEMMs' 1-byte
                             operands, the cast kernels and the FP8 weights'
                             bytes come from fp8.h (mm_fw_time_ops,
                             stage_fp8) */
    mm_sim_breakdown bk_local;
    if (!bk)
        bk = &bk_local;
    memset(bk, 0, sizeof *bk);
    pass_times layer;
    /* the breakdown reports the model's mean block (a stage view's own
     * block, for non-uniform models, times the executed graph) */
    if (block_costs(sim, m, sp, &layer, &bk->layer))
        return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive op costs for this model");
    graphed(sim, &layer);
    pass_times emb, head;
    edge_costs(sim, sp, wbytes, bk, &emb, &head);

    int rc = mm_sim_recompute(sim, L);
    bk->recompute_s = rc == MM_RECOMPUTE_FULL ? layer.fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer.attn_fwd : 0.0;
    int zero = L->zero >= 0 ? L->zero : sc->train.zero;
    /* gradients are reduced in the framework's dtype (fp32 for bf16 under
     * Megatron); parameters are gathered in 16 bits */
    int gbytes = mm_framework_grad_bytes(sim->fw, dt);
    bk->n_stages = V;
    for (int k = 0, l0 = 0; k < V; k++) {
        /* virtual stage k = chunk k / pp of physical stage k % pp (build.c);
         * layers go to virtual stages in their order, as in Megatron-LM,
         * each chunk its own count (model/layout.h: the split options make
         * the first and the last chunk short); the embedding runs on
         * virtual stage 0, the output layer and the loss on V - 1 */
        int nl = mm_layout_chunk_layers(&L->lay, m->layers, k % L->lay.pp, k / L->lay.pp);
        bool first = k == 0, last = k == V - 1;
        mm_stage_cost *c = &st[k];
        /* a chunk of the embedding or the loss alone (nl 0): one op, with
         * no layer's communication (build.h) */
        c->chunks = nl > 0 ? nl : 1;
        c->no_layers = nl == 0;
        /* the stage's MoE blocks (DeepSeek's first blocks are dense): they
         * carry the EP all-to-all */
        c->moe_chunks = 0;
        for (int i = l0; i < l0 + nl; i++)
            c->moe_chunks += mm_llm_layer_is_moe(m, i);
        /* the stage's own mean block: its dense/MoE and sliding/global mix */
        mm_llm sv = stage_view(m, l0, nl);
        l0 += nl;
        if (!mm_llm_blocks_uniform(m) && block_costs(sim, &sv, sp, &layer, NULL))
            return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive op costs for this model");
        if (!mm_llm_blocks_uniform(m))
            graphed(sim, &layer);
        stage_pass(m, &sv, &layer, &emb, &head, rc, b, s, nl, first, last, c, mem_frac ? &mem_frac[3 * k] : NULL);
        c->fwd_s += fp8_region_s(sim, &sv, nl, false);
        c->bwd_s += fp8_region_s(sim, &sv, nl, true);
        double acc = grad_accum_s(sim, &sv, nl, first, last, gbytes);
        c->bwd_s += acc;
        c->wgrad_s += acc;
        mm_opt_breakdown ob;
        double opt_params;
        stage_weights(sim, &sv, nl, first, last, zero, gbytes, wbytes, c, &ob, &opt_params);
        if (k < MM_BK_MAX_STAGES)
            bk->opt[k] = ob;
        c->opt_s = ob.total_s;
        optimizer_host(sim, opt_params, stage_tensors(&sv, nl, first, last), c);
        mm_sim_freeze_stage(sim, c);
    }
    layout_spec(sim, spec, zero, sp, gbytes);
    spec->stages = st;
    if (sc->train.pass_times[0]) {
        if (mem_frac) /* measured pass times: no kernel breakdown */
            memset(mem_frac, 0, (size_t)(3 * V) * sizeof *mem_frac);
        return apply_pass_times(sim, st, V, spec, err);
    }
    return 0;
}


/* ---- encoders ---- */

/* An encoder's (and its projector's) work on one micro-batch of `inputs`
 * tiles, on one GPU group of tensor parallelism tp: the stem, every layer
 * and the projector, timed like the LLM's ops. */
/* With parallel.projector: llm the projector's work and weights belong to
 * the LLM's first stage (timed with the LLM's TP) and the encoder hands over
 * its unprojected output; *projc (may be NULL) receives that work, and the
 * projector's parameters are left out of *wgrad_params. */
int mm_sim_enc_mb_cost_split(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                             double *wgrad_params, mm_enc_mb_cost *projc);

int mm_sim_enc_mb_cost(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                       double *wgrad_params)
{
    return mm_sim_enc_mb_cost_split(sim, e, inputs, tp, c, wgrad_params, NULL);
}

int mm_sim_enc_mb_cost_split(const mm_sim *sim, const mm_sim_encoder *e, double inputs, int tp, mm_enc_mb_cost *c,
                             double *wgrad_params, mm_enc_mb_cost *projc)
{
    const mm_scenario *sc = &sim->sc;
    mm_fw_ctx ec = enc_ctx(sim);
    const int wbytes = 2;
    mm_op_cost ops[MM_LLM_MAX_OPS];
    memset(c, 0, sizeof *c);
    if (projc)
        memset(projc, 0, sizeof *projc);
    *wgrad_params = 0;
    if (inputs <= 0)
        return 0;
    bool llm_side = sc->parallel.projector_on_llm;
    /* homogeneous: the LLM's TP and sequence parallelism; else the encoder's own */
    const mm_module_layout *ll = &sc->parallel.llm;
    bool sp = tp > 1 && (sc->parallel.placement == MM_PLACE_HOMOGENEOUS ? (sc->train.sequence_parallel || ll->sp)
                                                                        : e->layout.sp);
    int n = mm_encoder_layer_ops(e->enc, inputs, tp, sp, wbytes, ops, MM_LLM_MAX_OPS);
    if (n < 0)
        return -1;
    ec.norm_rows = sp ? 1.0 / tp : 1.0; /* the block's norms on tokens / tp under sequence parallelism */
    pass_times layer = time_ops(&ec, ops, n);
    ec.norm_rows = 1.0;
    graphed(sim, &layer);
    n = mm_encoder_stem_ops(e->enc, inputs, tp, wbytes, ops, MM_LLM_MAX_OPS);
    pass_times stem = n < 0 ? (pass_times){.fwd = 0} : time_ops(&ec, ops, n);
    double ptok = inputs * e->tokens_per_input;
    n = mm_projector_ops(e->proj, ptok, llm_side ? sc->parallel.llm.lay.tp : tp, wbytes, ops, MM_LLM_MAX_OPS);
    pass_times proj = n < 0 ? (pass_times){.fwd = 0} : time_ops(&ec, ops, n);
    double L = (double)e->enc->layers;
    int rc = mm_sim_recompute(sim, &e->layout);
    double re_t = rc == MM_RECOMPUTE_FULL ? layer.fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer.attn_fwd : 0;
    double tower_f = mm_encoder_fwd_flops(e->enc) * inputs, proj_f = mm_projector_fwd_flops(e->proj, ptok);
    /* a trainable projector: its whole backward; a frozen one ahead of a
     * trainable tower: its input-gradient pass only (the tower needs it);
     * else none.  The tower has nothing upstream: no pass when frozen. */
    double pb = !e->frozen_proj ? proj.bwd : !e->frozen_tower ? proj.bwd - proj.wgrad : 0;
    double pbf = !e->frozen_proj ? 2 * proj_f : !e->frozen_tower ? proj_f : 0;
    /* the host's share, as the seconds' */
    double re_h = rc == MM_RECOMPUTE_FULL ? layer.host_fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer.host_attn : 0;
    double re_k = rc == MM_RECOMPUTE_FULL ? layer.kern_fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer.kern_attn : 0;
    double pbh = !e->frozen_proj ? proj.host_bwd : !e->frozen_tower ? proj.host_bwd - proj.host_wgrad : 0;
    double pbk = !e->frozen_proj ? proj.kern_bwd : !e->frozen_tower ? proj.kern_bwd - proj.kern_wgrad : 0;
    c->fwd_host_s = L * layer.host_fwd + stem.host_fwd + (llm_side ? 0 : proj.host_fwd);
    c->fwd_launches = L * layer.kern_fwd + stem.kern_fwd + (llm_side ? 0 : proj.kern_fwd);
    c->bwd_host_s = (e->frozen_tower ? 0 : L * (layer.host_bwd + re_h) + stem.host_bwd) + (llm_side ? 0 : pbh);
    c->bwd_launches = (e->frozen_tower ? 0 : L * (layer.kern_bwd + re_k) + stem.kern_bwd) + (llm_side ? 0 : pbk);
    if (llm_side && projc) {
        projc->fwd_host_s = proj.host_fwd;
        projc->bwd_host_s = pbh;
        projc->fwd_launches = proj.kern_fwd;
        projc->bwd_launches = pbk;
        projc->fwd_s = proj.fwd;
        projc->bwd_s = pb;
        projc->fwd_flops = proj_f;
        projc->bwd_flops = pbf;
    }
    c->fwd_s = L * layer.fwd + stem.fwd + (llm_side ? 0 : proj.fwd);
    c->fwd_flops = tower_f + (llm_side ? 0 : proj_f);
    c->bwd_s = (e->frozen_tower ? 0 : L * (layer.bwd + re_t) + stem.bwd) + (llm_side ? 0 : pb);
    c->bwd_flops = 2 * (e->frozen_tower ? 0 : tower_f) + (llm_side ? 0 : pbf);
    c->recompute_flops = e->frozen_tower ? 0
                         : rc == MM_RECOMPUTE_FULL ? mm_encoder_layer_fwd_flops(e->enc, inputs) * L
                                                   : 0;
    double tokens = inputs * (double)mm_encoder_tokens(e->enc);
    c->tp_bytes = tokens * (double)e->enc->hidden * wbytes;
    c->act_bytes = c->tp_bytes;
    c->out_bytes = ptok * (llm_side ? mm_projector_in_per_token(e->proj) : (double)sim->llm->hidden) * wbytes;
    *wgrad_params = (e->frozen_tower ? 0 : (double)mm_encoder_params(e->enc)) +
                    (e->frozen_proj || llm_side ? 0 : (double)mm_projector_params(e->proj));
    return 0;
}

static const mm_enc_placement enc_place[] = {
    [MM_PLACE_PIPELINE] = MM_ENC_PIPELINE, [MM_PLACE_COLOCATED] = MM_ENC_COLOCATED,
    [MM_PLACE_DISJOINT] = MM_ENC_DISJOINT, [MM_PLACE_HOMOGENEOUS] = MM_ENC_HOMOGENEOUS};

/* Encoder i's layout as the graph builder takes it: placement, tp, pp, dp
 * (homogeneous: the LLM's tp and dp on its first stage), layers, frozen,
 * the disjoint queue's depth.  Costs and memory both read it from here. */
void mm_sim_enc_layout(const mm_sim *sim, int i, mm_enc_spec *es)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    const mm_sim_encoder *e = &sim->enc[i];
    bool homog = sc->parallel.placement == MM_PLACE_HOMOGENEOUS;
    snprintf(es->name, sizeof es->name, "%s", e->name);
    es->placement = enc_place[sc->parallel.placement];
    es->tp = homog ? L->lay.tp : e->layout.lay.tp;
    es->pp = homog ? 1 : e->layout.lay.pp;
    es->dp = homog ? L->lay.dp : e->layout.lay.dp;
    es->chunks = (int)e->enc->layers;
    es->frozen = e->frozen_tower && e->frozen_proj;
    es->buffer = 2 * sim->micro_batches > 4 ? 4 : 2; /* DistTrain-style queue of a few micro-batches */
}

/* Fills spec->enc[] (costs of every LLM micro-batch; all equal for a fixed
 * workload).  *mb_out receives the allocated per-micro-batch arrays. */
static int enc_costs(const mm_sim *sim, mm_build_spec *spec, mm_stage_cost *st, mm_enc_mb_cost **mb_out,
                     mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    int nmb = L->lay.dp * sim->micro_batches;
    spec->n_enc = sim->n_enc;
    for (int i = 0; i < sim->n_enc; i++) {
        const mm_sim_encoder *e = &sim->enc[i];
        mm_enc_spec *es = &spec->enc[i];
        mm_sim_enc_layout(sim, i, es);
        int tp = es->tp;
        mb_out[i] = calloc((size_t)nmb, sizeof *mb_out[i]);
        if (!mb_out[i])
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        double inputs = e->inputs_per_sample * (double)sc->train.micro_batch, params = 0;
        mm_enc_mb_cost one, projc;
        if (mm_sim_enc_mb_cost_split(sim, e, inputs, tp, &one, &params, &projc))
            return mm_err_set(err, MM_EINTERNAL, sim->model_path, 0, "", "cannot derive the encoder's op costs");
        if (sc->parallel.projector_on_llm) { /* the LLM's first stage runs it */
            st[0].fwd_s += projc.fwd_s;
            st[0].bwd_s += projc.bwd_s;
            st[0].fwd_host_s += projc.fwd_host_s;
            st[0].bwd_host_s += projc.bwd_host_s;
            st[0].fwd_launches += projc.fwd_launches;
            st[0].bwd_launches += projc.bwd_launches;
            st[0].fwd_flops += projc.fwd_flops;
            st[0].bwd_flops += projc.bwd_flops;
            double pp = e->frozen_proj ? 0 : (double)mm_projector_params(e->proj) / L->lay.tp;
            st[0].grad_bytes += pp * mm_framework_grad_bytes(sim->fw, (mm_dtype)sc->train.precision);
            st[0].param_bytes += pp * 2;
        }
        for (int k = 0; k < nmb; k++)
            mb_out[i][k] = one;
        es->tp_msgs_fwd = 2;
        es->tp_msgs_bwd = e->frozen_tower ? 0 : 2; /* no backward through a frozen tower */
        int zero = e->layout.zero >= 0 ? e->layout.zero : sc->train.zero;
        /* the profile's grad_sync for the encoder's ZeRO stage on its
         * pipeline: the LLM's schedule for a homogeneous or pipeline
         * encoder (each encoder stage is a stage of it: torch's
         * PipelineStage turns sync off for all but its last backward,
         * backward_maybe_with_nosync; DeepSpeed's PipelineEngine reduces
         * every stage once, ReduceGrads), as ZeRO-3's z3_once; a disjoint
         * one runs its own loop over its own pp stages (colocated: one
         * backward, mm_build_enc_grad_syncs) */
        int pipe = es->placement == MM_ENC_DISJOINT ? es->pp : mm_sim_pipe_stages(sim);
        es->grad_every_mb = mm_framework_grad_every_microbatch(sim->fw, zero, pipe) &&
                            !mm_framework_z3_keep_gathered(sim->fw, zero, pipe);
        double local = params / tp / es->pp;
        /* the framework's gradient dtype and optimizer phase, as the LLM's */
        es->grad_bytes = local * mm_framework_grad_bytes(sim->fw, (mm_dtype)sc->train.precision);
        es->param_bytes = local * 2;
        mm_opt_breakdown ob;
        optimizer_phase(sim, local, zero >= 1 ? local / es->dp : local, zero, &ob);
        es->opt_s = ob.total_s;
        es->mb = mb_out[i];
    }
    return 0;
}

void mm_sim_costs_free(mm_sim_costs *c)
{
    free(c->stages);
    free(c->mem_frac);
    for (int i = 0; i < MM_MAX_ENCODERS; i++)
        free(c->enc_mb[i]);
    memset(c, 0, sizeof *c);
}

int mm_sim_stage_times(const mm_sim *sim, mm_sim_costs *c, mm_err *err)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    memset(c, 0, sizeof *c);
    c->n_vstages = L->lay.pp * L->lay.vpp;
    c->stages = calloc((size_t)c->n_vstages, sizeof *c->stages);
    c->mem_frac = calloc((size_t)(3 * c->n_vstages), sizeof *c->mem_frac);
    int rc = c->stages && c->mem_frac ? 0 : mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    if (rc == 0)
        rc = stage_costs(sim, c->stages, &c->spec, c->mem_frac, err);
    if (rc == 0)
        rc = enc_costs(sim, &c->spec, c->stages, c->enc_mb, err);
    if (rc)
        mm_sim_costs_free(c);
    return rc;
}


/* One block of model m (the whole model's mean block, or a stage view)
 * for an LLM micro-batch of T tokens in n sequences with sum of squared
 * lengths S: its pass times and, when bk is not NULL, their split. */
static int bin_layer(const mm_sim *sim, const mm_llm *m, double T, double S, double n, pass_times *out,
                     mm_pass_breakdown *bk)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    bool sp = (sim->sc.train.sequence_parallel || L->sp) && L->lay.tp > 1;
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int cp = L->lay.cp, k = mm_llm_layer_ops_packed(m, T / cp, S / cp, n, L->lay.tp, sp, 2, ops, MM_LLM_MAX_OPS);
    if (k < 0)
        return -1;
    *out = time_layer(sim, m, ops, k, T / cp, sp ? T / cp / L->lay.tp : T / cp, bk);
    return 0;
}

/* One virtual stage's model FLOPs (Megatron convention) for a micro-batch
 * of T tokens in n sequences whose squares sum to S: forward, backward (twice
 * the forward), its weight-gradient part and what recomputation runs again
 * (rc); the last stage adds the LM head.  A frozen LLM's weight gradients
 * come off after (mm_sim_freeze_mb). */
static void bin_stage_flops(const mm_llm *m, const mm_llm *sv, int nl, bool last, double T, double S, double n,
                            int rc, mm_mb_cost *c)
{
    double lf = mm_llm_layer_fwd_flops_seqs(sv, T, S, n), af = mm_llm_layer_attn_fwd_flops_seqs(sv, T, S, n);
    c->fwd_flops = nl * lf + (last ? mm_llm_head_fwd_flops(m, 1, T) : 0);
    c->bwd_flops = 2 * c->fwd_flops;
    c->wgrad_flops = c->fwd_flops - nl * af;
    c->recompute_flops = nl * (rc == MM_RECOMPUTE_FULL ? lf : rc == MM_RECOMPUTE_SELECTIVE ? af : 0);
}

double mm_sim_llm_mb_flops(const mm_sim *sim, const mm_stage_cost *st, int V, double T, double S, double n)
{
    const mm_llm *m = sim->llm;
    int rc = mm_sim_recompute(sim, &sim->sc.parallel.llm);
    bool uniform = mm_llm_blocks_uniform(m);
    double sum = 0;
    if (T <= 0)
        return 0;
    for (int v = 0, l0 = 0; v < V; v++) {
        int nl = st[v].no_layers ? 0 : st[v].chunks;
        mm_llm sv = uniform ? *m : stage_view(m, l0, nl);
        l0 += nl;
        mm_mb_cost c;
        memset(&c, 0, sizeof c);
        bin_stage_flops(m, &sv, nl, v == V - 1, T, S, n, rc, &c);
        mm_sim_freeze_mb(sim, &c);
        sum += c.fwd_flops + c.bwd_flops;
    }
    return sum;
}

double mm_sim_nominal_pad_flops(const mm_sim *sim, const mm_stage_cost *st)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    double b = (double)sim->sc.train.micro_batch, s = sim->seq, cs = mm_sim_cost_seq(sim);
    if (sim->wl || !(cs > s))
        return 0;
    int V = L->lay.pp * L->lay.vpp;
    double per = mm_sim_llm_mb_flops(sim, st, V, b * cs, b * cs * cs, b) -
                 mm_sim_llm_mb_flops(sim, st, V, b * s, b * s * s, b);
    return per * sim->micro_batches * L->lay.dp;
}

/* One LLM micro-batch of T tokens in n sequences with sum of squared lengths
 * S, on every virtual stage. */
int mm_sim_llm_bin_cost(const mm_sim *sim, const mm_stage_cost *st, int V, double T, double S, double n,
                        double images, mm_mb_cost *out, size_t stride)
{
    const mm_scenario *sc = &sim->sc;
    const mm_module_layout *L = &sc->parallel.llm;
    /* Mllama: the cross blocks attend this micro-batch's images (their
     * mean per sequence), not the nominal one per sequence */
    mm_llm mi = *sim->llm;
    if (mi.cross_tokens > 0 && images >= 0)
        mi.cross_images = n > 0 ? images / n : 0.0;
    const mm_llm *m = &mi;
    bool sp = (sc->train.sequence_parallel || L->sp) && L->lay.tp > 1;
    for (int v = 0; v < V; v++)
        memset(&out[(size_t)v * stride], 0, sizeof *out);
    if (T <= 0)
        return 0;
    mm_op_cost ops[MM_LLM_MAX_OPS];
    int cp = L->lay.cp, k;
    mm_fw_ctx fc = llm_ctx(sim);
    pass_times layer;
    if (bin_layer(sim, m, T, S, n, &layer, NULL))
        return -1;
    k = mm_llm_embed_ops(m, 1, T / cp, L->lay.tp, sp, 2, ops, MM_LLM_MAX_OPS);
    mm_pass_breakdown eb;
    memset(&eb, 0, sizeof eb);
    if (k >= 0)
        eb = mm_fw_time_ops(&fc, ops, k);
    eb.s[MM_OP_W][MM_BK_MEM] += mm_fw_embed_wgrad_time(&fc, m, T / cp, L->lay.tp);
    pass_times emb = from_breakdown(&eb);
    k = mm_llm_head_ops(m, 1, T / cp, L->lay.tp, sp, 2, ops, MM_LLM_MAX_OPS);
    pass_times head = k < 0 ? (pass_times){0} : time_ops(&fc, ops, k);
    int rc = mm_sim_recompute(sim, L);
    double re_t = rc == MM_RECOMPUTE_FULL ? layer.fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer.attn_fwd : 0;
    bool uniform = mm_llm_blocks_uniform(m);
    for (int v = 0, l0 = 0; v < V; v++) {
        mm_mb_cost *c = &out[(size_t)v * stride];
        int nl = st[v].no_layers ? 0 : st[v].chunks;
        bool first = v == 0, last = v == V - 1;
        if (!uniform) { /* this stage's own mix of dense/MoE, sliding/global blocks */
            mm_llm sv = stage_view(m, l0, nl);
            if (bin_layer(sim, &sv, T, S, n, &layer, NULL))
                return -1;
            re_t = rc == MM_RECOMPUTE_FULL ? layer.fwd : rc == MM_RECOMPUTE_SELECTIVE ? layer.attn_fwd : 0;
        }
        l0 += nl;
        mm_llm svm = uniform ? *m : mm_llm_stage_view(m, l0 - nl, nl);
        c->fwd_s = nl * layer.fwd + (first ? emb.fwd : 0) + (last ? head.fwd : 0) + fp8_region_s(sim, &svm, nl, false);
        c->bwd_s = nl * (layer.bwd + re_t) + (first ? emb.bwd : 0) + (last ? head.bwd : 0) +
                   fp8_region_s(sim, &svm, nl, true);
        c->wgrad_s = nl * layer.wgrad + (first ? emb.wgrad : 0) + (last ? head.wgrad : 0);
        double acc = grad_accum_s(sim, &svm, nl, first, last,
                                  mm_framework_grad_bytes(sim->fw, (mm_dtype)sim->sc.train.precision));
        c->bwd_s += acc;
        c->wgrad_s += acc;
        mm_llm svf = uniform ? *m : stage_view(m, l0 - nl, nl); /* nl 0: one block's mean, times 0 */
        bin_stage_flops(m, &svf, nl, last, T, S, n, rc, c);
        c->tp_bytes = mm_llm_tp_allreduce_bytes(m, 1, T / cp, 2);
        c->p2p_bytes = T * (double)m->hidden * 2;
        mm_sim_freeze_mb(sim, c);
    }
    return 0;
}
