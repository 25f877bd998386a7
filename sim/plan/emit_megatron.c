/* emit_megatron.c - a prepared scenario as the Megatron-LM argument list of
 * pretrain_gpt.py (emit.h): the argument names and their meaning are those
 * of megatron/training/arguments.py at NVIDIA/Megatron-LM d98e8a64dd
 * (MM_MG_ARGS_COMMIT), the commit mmsim's reader follows, and the text is
 * what `mmsim run --megatron-args` reads (scenario/megatron.c): every
 * argument written is one the reader maps, so the list read back gives the
 * scenario's layout, training keys and model (docs/megatron.md has the
 * mapping both ways; a test reads every emitted list back and compares).
 *
 * The model must be one the reader builds: GPT-2 style (learned positions,
 * LayerNorm, biases, GeLU, multi-head attention) or Llama style (RoPE,
 * RMSNorm, SwiGLU, GQA, Mixtral-style MoE, Qwen2's Q/K/V-only biases);
 * anything else (sliding windows, MLA, shared experts, sandwich or Q/K
 * norms, ...) is refused by name, as are the settings Megatron-LM has no
 * argument for.  Written only: arguments that change the cost; data,
 * tokenizer files, optimizer hyper-parameters, checkpoints and logging are
 * the user's to add (all costless to the reader).
 * A zero-bubble schedule (megatron-local's zb-h1, zb-2p, zb-v) is written
 * as the arguments of the Zero Bubble papers' fork of Megatron-LM
 * (MM_MG_ZB_REPO @ MM_MG_ZB_COMMIT), said in the header; an argument that
 * fork does not declare is refused then.
 * Not for: reading argument lists (scenario/megatron.c). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mmsim_config.h"
#include "plan/emit_internal.h"
#include "scenario/megatron_args.h"

static const char *const profiles[] = {"megatron-core", "megatron-local", NULL};

/* One argument and its value (NULL: a flag), one per line.  Only
 * arguments the reader maps are written (the table of megatron_args.c);
 * the tests read every emitted list back, which would refuse any other. */
static void arg(mm_emit_ctx *c, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool zero_bubble(const mm_scenario *sc);
static void arg(mm_emit_ctx *c, const char *name, const char *fmt, ...)
{
    if (zero_bubble(&c->sim->sc))
        for (int i = 0; mm_mg_zb_absent[i]; i++)
            if (!strcmp(name, mm_mg_zb_absent[i]))
                mm_emit_refuse(c, "train.schedule", "'%s' needs the Zero Bubble fork, whose arguments.py (%.10s) has "
                               "no %s (what the scenario asks here)", mm_schedule_names[c->sim->sc.train.schedule],
                               MM_MG_ZB_COMMIT, name);
    mm_emit_put(c, "%s", name);
    if (fmt) {
        char v[160];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v, sizeof v, fmt, ap);
        va_end(ap);
        mm_emit_put(c, " %s", v);
    }
    mm_emit_put(c, "\n");
}

/* What in the model the reader cannot build (megatron.c read_shape and
 * write_json): refused under key "model", one sentence each. */
static void refuse_model(mm_emit_ctx *c, const mm_llm *m)
{
    const char *why = NULL;
    if (m->style != MM_LLM_GPT2 && m->style != MM_LLM_LLAMA)
        why = "its block (GPT-NeoX's parallel residual, MPT's, DeepSeek's MLA) is not one pretrain_gpt.py's "
              "arguments build in mmsim's reader (GPT-2 or Llama style)";
    else if (m->window)
        why = "sliding-window attention";
    else if (m->sandwich_norm || m->qk_norm || m->parallel_block || m->norm_no_bias)
        why = "norms other than two per block (sandwich, Q/K or bias-free norms) or a parallel block";
    else if (m->attn_softcap > 0 || m->final_softcap > 0 || m->attn_sinks || m->head_bias || m->mtp_layers)
        why = "soft-capping, attention sinks, a head bias or multi-token prediction";
    else if (m->experts && (m->shared_ffn || m->first_dense || m->moe_every > 1 || m->router_bias))
        why = "experts other than Mixtral's (every block MoE, no shared expert)";
    else if (m->style == MM_LLM_GPT2 && (m->rope || !m->learned_pos || m->rmsnorm || m->gated_mlp ||
                                         m->kv_heads != m->heads || m->head_dim * m->heads != m->hidden ||
                                         !m->qkv_bias || !m->out_bias || !m->mlp_bias || m->experts))
        why = "a GPT-2 model unlike GPT-2 (the reader builds learned positions, LayerNorm, GeLU, biases, MHA)";
    else if (m->style == MM_LLM_LLAMA && (!m->rope || m->learned_pos || !m->rmsnorm || !m->gated_mlp))
        why = "a Llama-family model without RoPE, RMSNorm and a gated MLP (the reader builds those)";
    else if (m->style == MM_LLM_LLAMA && !(m->qkv_bias == m->out_bias && m->out_bias == m->mlp_bias) &&
             !(m->qkv_bias && !m->out_bias && !m->mlp_bias))
        why = "biases on some projections only (the reader builds all, none, or Q/K/V's alone)";
    if (why)
        mm_emit_refuse(c, "model", "%s: %s", m->name, why);
}

/* The model's shape.  The vocabulary: Megatron-LM pads it to a multiple of
 * --make-vocab-size-divisible-by x tp (training/vocab_utils.py); the
 * largest power of two up to Megatron's 128 that keeps it as it is, else
 * 128 and a note that Megatron pads it. */
/* The moe section as Megatron-LM's MoE arguments (scenario/megatron.c
 * map_moe reads them back); what has no argument is refused. */
static void moe_args(mm_emit_ctx *c, const mm_llm *m)
{
    const mm_scenario *sc = &c->sim->sc;
    arg(c, "--num-experts", "%lld", (long long)m->experts);
    arg(c, "--moe-router-topk", "%lld", (long long)m->experts_per_tok);
    if (m->moe_ffn != m->ffn)
        arg(c, "--moe-ffn-hidden-size", "%lld", (long long)m->moe_ffn);
    if (sc->moe.grouped_gemm)
        arg(c, "--moe-grouped-gemm", NULL);
    arg(c, "--moe-token-dispatcher-type", "%s", mm_moe_dispatcher_names[sc->moe.dispatcher]);
    if (sc->moe.routing == MM_MOE_BALANCED || sc->moe.routing_param > 0)
        mm_emit_refuse(c, sc->moe.routing == MM_MOE_BALANCED ? "moe.routing" : "moe.routing_param",
                       "Megatron-LM's router has no argument for it (aux_loss and skewed at their default "
                       "parameters are --moe-router-load-balancing-type aux_loss and none)");
    arg(c, "--moe-router-load-balancing-type", "%s", sc->moe.routing == MM_MOE_SKEWED ? "none" : "aux_loss");
    if (sc->moe.capacity_factor > 0)
        arg(c, "--moe-expert-capacity-factor", "%.17g", sc->moe.capacity_factor);
    if (sc->moe.pad_to_capacity)
        arg(c, "--moe-pad-expert-input-to-capacity", NULL);
    if (sc->moe.drop_policy != MM_MOE_DROP_PROBS)
        arg(c, "--moe-token-drop-policy", "%s", mm_moe_drop_names[sc->moe.drop_policy]);
    int ep_tp = m->ep_tp > 1 ? m->ep_tp : 1, tp = sc->parallel.llm.lay.tp;
    if (ep_tp > 1) /* Megatron's default is tp; the fold leaves tp / ep_tp */
        arg(c, "--expert-tensor-parallel-size", "%d", tp / ep_tp);
}

static void model_args(mm_emit_ctx *c, const mm_llm *m, int tp)
{
    arg(c, "--num-layers", "%lld", (long long)m->layers);
    arg(c, "--hidden-size", "%lld", (long long)m->hidden);
    arg(c, "--ffn-hidden-size", "%lld", (long long)m->ffn);
    arg(c, "--num-attention-heads", "%lld", (long long)m->heads);
    if (m->max_pos > 0)
        arg(c, "--max-position-embeddings", "%lld", (long long)m->max_pos);
    if (m->style == MM_LLM_GPT2) {
        arg(c, "--position-embedding-type", "learned_absolute");
    } else {
        arg(c, "--position-embedding-type", "rope");
        arg(c, "--normalization", "RMSNorm");
        arg(c, "--swiglu", NULL);
        if (m->kv_heads != m->heads) {
            arg(c, "--group-query-attention", NULL);
            arg(c, "--num-query-groups", "%lld", (long long)m->kv_heads);
        }
        if (m->head_dim * m->heads != m->hidden)
            arg(c, "--kv-channels", "%lld", (long long)m->head_dim);
        if (!m->mlp_bias)
            arg(c, "--disable-bias-linear", NULL);
        if (m->qkv_bias && !m->mlp_bias)
            arg(c, "--add-qkv-bias", NULL);
    }
    if (!m->tied)
        arg(c, "--untie-embeddings-and-output-weights", NULL);
    long long v = m->vocab, d = 128;
    while (d > 1 && v % (d * tp))
        d /= 2;
    arg(c, "--vocab-size", "%lld", v);
    if (v % (d * tp) == 0) {
        if (d != 128)
            arg(c, "--make-vocab-size-divisible-by", "%lld", d);
    } else {
        long long pad = (v + 128LL * tp - 1) / (128LL * tp) * (128LL * tp);
        mm_emit_put(c, "# Megatron-LM pads the vocabulary of %lld to %lld (128 x tp %d), as a real run does: read "
                       "back, the model has %lld rows\n", v, pad, tp, pad);
    }
    if (m->experts)
        moe_args(c, m);
}

/* --decoder-first/last-pipeline-num-layers for a split Megatron-Core
 * makes: F on the first stage, L on the last, the same count on each
 * between (with virtual stages each a multiple of vpp, which the scenario
 * already asks); Megatron's split options as its two flags. */
static void split_args(mm_emit_ctx *c, const mm_layout *L)
{
    if (L->embedding_in_split)
        arg(c, "--account-for-embedding-in-pipeline-split", NULL);
    if (L->loss_in_split)
        arg(c, "--account-for-loss-in-pipeline-split", NULL);
    if (!L->n_layers_per_stage || L->pp < 2)
        return;
    const int *s = L->layers_per_stage;
    int pp = L->pp, mid = pp > 2 ? s[1] : -1;
    bool ok = true;
    for (int i = 1; i + 1 < pp; i++)
        ok &= s[i] == mid;
    if (!ok) {
        mm_emit_refuse(c, "parallel.llm.layers_per_stage", "Megatron-LM's uneven split is first and last stage "
                       "counts, even between");
        return;
    }
    if (s[0] != mid)
        arg(c, "--decoder-first-pipeline-num-layers", "%d", s[0]);
    if (s[pp - 1] != mid)
        arg(c, "--decoder-last-pipeline-num-layers", "%d", s[pp - 1]);
}

/* A zero-bubble schedule, which only the Zero Bubble papers' fork of
 * Megatron-LM runs (megatron-local's profile lists them). */
static bool zero_bubble(const mm_scenario *sc)
{
    mm_schedule_kind k = sc->train.schedule;
    return sc->parallel.llm.lay.pp > 1 && (k == MM_SCHED_ZB_H1 || k == MM_SCHED_ZB_2P || k == MM_SCHED_ZB_V);
}

/* The fork's arguments for the schedule (MM_MG_ZB_REPO @ MM_MG_ZB_COMMIT,
 * megatron/core/zbpp_utils.py add_zero_bubble_args, validate_arguments;
 * the README's "Zero Bubble Command Line Arguments"): ZB-V is
 * --zero-bubble-v-schedule (it implies --enable-zero-bubble, sets two
 * chunks per rank itself and keeps its default memory setup, zb); ZB-H1
 * and ZB-2p are --enable-zero-bubble with --zero-bubble-max-pending-backward
 * pp and 2 x pp ("1 x number of pipelines will get a schedule like ZB1P
 * ... 2x ... ZB2P"; the default, auto, is an adaptive limit mmsim does not
 * model).  What validate_arguments asserts is refused here by key. */
static void zero_bubble_args(mm_emit_ctx *c, const mm_llm *m)
{
    const mm_scenario *sc = &c->sim->sc;
    const mm_layout *L = &sc->parallel.llm.lay;
    const char *s = mm_schedule_names[sc->train.schedule];
    if (m->tied)
        mm_emit_refuse(c, "model", "%s has tied embeddings: the Zero Bubble fork, which runs '%s', asserts "
                       "--untie-embeddings-and-output-weights", m->name, s);
    if (!sc->train.grad_accum_fusion)
        mm_emit_refuse(c, "train.grad_accum_fusion", "false under '%s': the Zero Bubble fork raises "
                       "\"gradient-accumulation-fusion should be True for zb runtime\"", s);
    bool grad, param;
    mm_emit_overlaps(c->sim, &grad, &param);
    if (mm_emit_llm_zero(c->sim) == 1 && (grad || param))
        mm_emit_refuse(c, grad ? "train.overlap_grad_reduce" : "train.overlap_param_gather", "true under '%s' with "
                       "the distributed optimizer: the Zero Bubble fork asserts neither overlap", s);
    if (sc->train.schedule == MM_SCHED_ZB_V) {
        if (m->layers % L->pp || (m->layers / L->pp) % 2)
            mm_emit_refuse(c, "parallel.llm.pp", "%lld layers over pp %d under 'zb-v': the Zero Bubble fork asserts "
                           "an even number of layers per stage", (long long)m->layers, L->pp);
        arg(c, "--zero-bubble-v-schedule", NULL);
        return;
    }
    arg(c, "--enable-zero-bubble", NULL);
    arg(c, "--zero-bubble-max-pending-backward", "%d", sc->train.schedule == MM_SCHED_ZB_H1 ? L->pp : 2 * L->pp);
}

static void layout_args(mm_emit_ctx *c, const mm_llm *m)
{
    const mm_scenario *sc = &c->sim->sc;
    const mm_layout *L = &sc->parallel.llm.lay;
    int vpp = L->vpp > 1 ? L->vpp : 1;
    arg(c, "--tensor-model-parallel-size", "%d", L->tp);
    arg(c, "--pipeline-model-parallel-size", "%d", L->pp);
    arg(c, "--context-parallel-size", "%d", L->cp > 1 ? L->cp : 1);
    if (m->experts || L->ep > 1)
        arg(c, "--expert-model-parallel-size", "%d", L->ep > 1 ? L->ep : 1);
    /* layers per virtual stage only for an even split: Megatron-LM asks for
     * the stages per rank with an uneven one */
    bool even = !L->n_layers_per_stage && !L->embedding_in_split && !L->loss_in_split;
    if (zero_bubble(sc))
        zero_bubble_args(c, m); /* ZB-V's two chunks: the fork's own */
    else if (vpp > 1 && even && m->layers % ((int64_t)L->pp * vpp) == 0)
        arg(c, "--num-layers-per-virtual-pipeline-stage", "%lld", (long long)(m->layers / ((int64_t)L->pp * vpp)));
    else if (vpp > 1)
        arg(c, "--num-virtual-stages-per-pipeline-rank", "%d", vpp);
    split_args(c, L);
    /* Megatron-LM runs 1F1B, interleaved when there are virtual stages
     * (training/schedules.py get_forward_backward_func); the zero-bubble
     * schedules are the fork's, under megatron-local (the scenario's check
     * refuses them under megatron-core's profile) */
    mm_schedule_kind want = vpp > 1 ? MM_SCHED_INTERLEAVED : MM_SCHED_1F1B;
    if (sc->train.schedule != want && L->pp > 1 && !zero_bubble(sc))
        mm_emit_refuse(c, "train.schedule", "'%s' at vpp %d: Megatron-LM runs %s here (plan with "
                       "--space schedule=1f1b,interleaved)",
                       mm_schedule_names[sc->train.schedule], vpp, mm_schedule_names[want]);
    if (L->cp > 1)
        arg(c, "--cp-comm-type", "%s", sc->train.cp_comm == MM_CP_ULYSSES ? "a2a" : "p2p");
    if (mm_emit_llm_sp(c->sim))
        arg(c, "--sequence-parallel", NULL);
    /* validate_args: "When using MoE and tensor parallelism, sequence
     * parallelism must be used." */
    else if (m->experts && L->tp > 1)
        mm_emit_refuse(c, "train.sequence_parallel", "false with experts at tp %d: Megatron-LM refuses MoE with "
                       "tensor parallelism and no sequence parallelism", L->tp);
}

static void precision_recompute_args(mm_emit_ctx *c)
{
    const mm_scenario *sc = &c->sim->sc;
    if (sc->train.precision == MM_PREC_FP16) {
        arg(c, "--fp16", NULL);
    } else {
        arg(c, "--bf16", NULL);
        if (sc->train.precision == MM_PREC_FP8)
            arg(c, "--fp8-format", "hybrid"); /* E4M3 forward, E5M2 gradients: Transformer Engine's usual recipe */
    }
    /* train.grad_reduce: Megatron-LM reduces in fp32 under bf16 (and FP8),
     * in fp16 under fp16; --grad-reduce-in-bf16 is the one switch read back */
    if (sc->train.grad_reduce == MM_TGRAD_BF16 && sc->train.precision != MM_PREC_FP16)
        arg(c, "--grad-reduce-in-bf16", NULL);
    else if (sc->train.grad_reduce != MM_TGRAD_AUTO && sc->train.precision == MM_PREC_FP16)
        mm_emit_refuse(c, "train.grad_reduce", "'%s' under fp16: Megatron-LM reduces fp16 gradients in fp16, and "
                       "no argument mmsim reads back changes that", mm_train_grad_reduce_names[sc->train.grad_reduce]);
    if (!sc->train.grad_accum_fusion) /* a main_grad.add_ per weight every micro-batch */
        arg(c, "--no-gradient-accumulation-fusion", NULL);
    int rc = mm_emit_llm_recompute(c->sim);
    if (rc == MM_RECOMPUTE_SELECTIVE) {
        arg(c, "--recompute-granularity", "selective");
    } else if (rc == MM_RECOMPUTE_FULL) {
        arg(c, "--recompute-granularity", "full");
        arg(c, "--recompute-method", "uniform");
        arg(c, "--recompute-num-layers", "1");
    }
}

/* The data-parallel sharding and the overlaps, resolved as the cost bridge
 * resolves them.  Megatron-FSDP (ZeRO 2, 3) overlaps its gathers whatever
 * --overlap-grad-reduce says, and --overlap-param-gather needs the
 * distributed optimizer, so each is written where it means something. */
static void dp_args(mm_emit_ctx *c)
{
    const mm_scenario *sc = &c->sim->sc;
    int zero = mm_emit_llm_zero(c->sim);
    bool grad, param;
    mm_emit_overlaps(c->sim, &grad, &param);
    if (zero == 1)
        arg(c, "--use-distributed-optimizer", NULL);
    if (zero >= 2) {
        arg(c, "--use-megatron-fsdp", NULL);
        arg(c, "--data-parallel-sharding-strategy", "%s", zero == 2 ? "optim_grads" : "optim_grads_params");
        bool fsdp_default, unused;
        mm_framework_overlap(c->sim->fw, zero, &fsdp_default, &unused);
        if (!grad && fsdp_default)
            mm_emit_refuse(c, "train.overlap_grad_reduce", "false under ZeRO %d: Megatron-FSDP overlaps its "
                           "gathers and reduce-scatters always", zero);
    }
    if (grad)
        arg(c, "--overlap-grad-reduce", NULL);
    /* validate_args (training/arguments.py): "Must use
     * --overlap-param-gather with --overlap-grad-reduce" */
    if (param && zero == 1 && !grad)
        mm_emit_refuse(c, "train.overlap_param_gather", "true without overlap_grad_reduce: Megatron-LM refuses it");
    else if (param && zero == 1)
        arg(c, "--overlap-param-gather", NULL);
    if (sc->train.tp_comm_overlap && mm_emit_llm_sp(c->sim))
        arg(c, "--tp-comm-overlap", NULL);
    else if (sc->train.tp_comm_overlap && sc->parallel.llm.lay.tp > 1)
        mm_emit_refuse(c, "train.tp_comm_overlap", "without sequence parallelism: Megatron-LM refuses it");
}

/* The attention kernel: the argument the reader maps onto the same
 * train.attention (megatron.c attention_kernel); auto under Transformer
 * Engine stays auto, under the local implementation the kernel its
 * profile picks is written out. */
static void kernel_args(mm_emit_ctx *c)
{
    const mm_sim *sim = c->sim;
    const mm_scenario *sc = &sim->sc;
    bool local = !strcmp(sc->train.framework, "megatron-local");
    arg(c, "--transformer-impl", local ? "local" : "transformer_engine");
    int a = sc->train.attention;
    if (a == MM_ATTN_AUTO && local)
        a = sim->attn == MM_ATTN_IMPL_FLASH2     ? MM_ATTN_FLASH2
            : sim->attn == MM_ATTN_IMPL_UNFUSED ? MM_ATTN_UNFUSED
            : sim->attn == MM_ATTN_IMPL_CUDNN   ? MM_ATTN_CUDNN
            : sim->attn == MM_ATTN_IMPL_FLASH   ? MM_ATTN_FLASH
                                                : -1;
    switch (a) {
    case MM_ATTN_AUTO: arg(c, "--attention-backend", "auto"); break;
    case MM_ATTN_FLASH: arg(c, "--attention-backend", "flash"); break;
    case MM_ATTN_FLASH2: arg(c, "--use-flash-attn", NULL); break;
    case MM_ATTN_CUDNN: arg(c, "--attention-backend", "fused"); break;
    case MM_ATTN_UNFUSED: /* the fork's legacy CoreAttention without --use-flash-attn */
        if (!(local && zero_bubble(sc)))
            arg(c, "--attention-backend", "unfused");
        break;
    default:
        mm_emit_refuse(c, "train.attention", "'%s': no Megatron-LM argument selects this kernel (flash, flash2, "
                       "cudnn, unfused and auto have one)", a >= 0 ? mm_attention_names[a] : "(the profile's)");
    }
    if (sc->train.cuda_graphs == MM_GRAPHS_FULL)
        arg(c, "--cuda-graph-impl", "full_iteration");
    else if (sc->train.cuda_graphs == MM_GRAPHS_LAYER)
        arg(c, "--cuda-graph-impl", local ? "local" : "transformer_engine");
    for (int i = 0; i < sc->train.n_frozen; i++)
        if (!strcmp(sc->train.frozen[i], "llm"))
            arg(c, "--freeze-LM", NULL);
}

/* The header: what this is, how to launch it, how to read it back. */
static void header(mm_emit_ctx *c)
{
    const mm_sim *sim = c->sim;
    const mm_scenario *sc = &sim->sc;
    const mm_layout *L = &sc->parallel.llm.lay;
    mm_emit_put(c, "# Megatron-LM arguments of pretrain_gpt.py (Megatron-LM %.10s), written by mmsim %s\n"
                   "# model %s; tp %d, pp %d, vpp %d, cp %d, ep %d, dp %d on %d GPUs (%d nodes x %d)\n"
                   "# launch: torchrun --nproc_per_node %d --nnodes %d ... pretrain_gpt.py "
                   "$(grep -v '^#' THIS_FILE) plus data, tokenizer and optimizer arguments\n"
                   "# read back: mmsim run --megatron-args THIS_FILE --set cluster.nodes=%d (with the same "
                   "scenario file for the cluster)\n",
                MM_MG_ARGS_COMMIT, MMSIM_VERSION, sim->model->name, L->tp, L->pp, L->vpp > 1 ? L->vpp : 1,
                L->cp > 1 ? L->cp : 1, L->ep > 1 ? L->ep : 1, L->dp, mm_cluster_gpus(sim->cluster),
                sim->cluster->nodes, sim->cluster->gpus_per_node, sim->cluster->gpus_per_node, sim->cluster->nodes,
                sim->cluster->nodes);
    if (zero_bubble(sc))
        mm_emit_put(c, "# schedule %s: these arguments need the Zero Bubble papers' fork of Megatron-LM, %s @ %.10s "
                       "(megatron/core/zbpp_utils.py), and its pretrain_gpt.py; upstream Megatron-LM refuses them\n",
                    mm_schedule_names[sc->train.schedule], MM_MG_ZB_REPO, MM_MG_ZB_COMMIT);
}

int mm_emit_megatron(mm_emit_ctx *c)
{
    const mm_sim *sim = c->sim;
    const mm_scenario *sc = &sim->sc;
    mm_emit_refuse_common(c, profiles);
    refuse_model(c, sim->llm);
    header(c);
    model_args(c, sim->llm, sc->parallel.llm.lay.tp);
    layout_args(c, sim->llm);
    arg(c, "--seq-length", "%lld", (long long)sc->train.seq_len);
    arg(c, "--micro-batch-size", "%lld", (long long)sc->train.micro_batch);
    arg(c, "--global-batch-size", "%lld", (long long)sc->train.global_batch);
    precision_recompute_args(c);
    dp_args(c);
    kernel_args(c);
    return 0;
}
