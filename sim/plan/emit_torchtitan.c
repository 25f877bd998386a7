/* emit_torchtitan.c - a prepared scenario as a torchtitan train config
 * (TOML), in the form `mmsim run --torchtitan` reads (scenario/
 * torchtitan.c): keys and defaults of pytorch/torchtitan at 238fa9953e
 * (torchtitan/config/job_config.py), the flavor of
 * torchtitan/models/llama3/__init__.py, the pipeline split of
 * torchtitan/distributed/pipeline_parallel.py (mm_torchtitan_split, the
 * reader's own), the world size split of
 * torchtitan/distributed/parallel_dims.py.
 *
 * What torchtitan can say and mmsim reads back: a llama3 flavor (8B, 70B),
 * FSDP2 over the whole data-parallel group (ZeRO 3) or plain replicas
 * (ZeRO 0), TP with sequence-parallel norms, pipelining with 1F1B, GPipe,
 * Interleaved1F1B or ZBVZeroBubble and torchtitan's own stage split, full or no
 * activation checkpointing, BF16 or the float8 converter; everything else
 * is refused by name.
 * Not for: reading TOML (scenario/torchtitan.c, util/toml.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmsim_config.h"
#include "plan/emit_internal.h"
#include "scenario/torchtitan.h"

static const char *const profiles[] = {"fsdp", NULL};

/* torchtitan's llama3 flavors the reader maps (scenario/torchtitan.c
 * `flavors`): dim, n_layers, n_heads, n_kv_heads, the FFN width that
 * ffn_dim_multiplier and multiple_of give, vocab_size 128256. */
static const struct {
    const char *name;
    int64_t hidden, layers, heads, kv, ffn;
} flavors[] = {{"8B", 4096, 32, 32, 8, 14336}, {"70B", 8192, 80, 64, 8, 28672}};

static const char *flavor_of(const mm_llm *m)
{
    for (size_t i = 0; i < sizeof flavors / sizeof flavors[0]; i++)
        if (m->style == MM_LLM_LLAMA && m->hidden == flavors[i].hidden && m->layers == flavors[i].layers &&
            m->heads == flavors[i].heads && m->kv_heads == flavors[i].kv && m->ffn == flavors[i].ffn &&
            m->vocab == 128256 && !m->tied && m->rope && m->rmsnorm && m->gated_mlp && !m->qkv_bias &&
            !m->mlp_bias && !m->experts && !m->window && m->head_dim * m->heads == m->hidden)
            return flavors[i].name;
    return NULL;
}

/* The layers per rank the scenario runs: its split, or the even one. */
static void stage_layers(const mm_layout *L, int64_t layers, int *per)
{
    for (int s = 0; s < L->pp; s++)
        per[s] = mm_layout_stage_layers(L, layers, s);
}

/* The first and last stages' fewer layers (in, out) and, for a looped
 * schedule, layers per virtual stage (lps) for which torchtitan's split
 * gives each rank the scenario's layers in equal chunks; torchtitan's
 * defaults (1, 1) first.  Returns 0, or -1 when none does. */
static int find_split(const mm_layout *L, int layers, int vpp, bool vee, int *in, int *out, int *lps)
{
    int pp = L->pp, nv = pp * vpp, want[MM_MAX_PP], *per = calloc((size_t)nv, sizeof *per);
    if (!per || pp > MM_MAX_PP) {
        free(per);
        return -1;
    }
    stage_layers(L, layers, want);
    static const int tries[][2] = {{1, 1}, {0, 0}, {1, 0}, {0, 1}, {2, 2}, {2, 1}, {1, 2}, {2, 0}, {0, 2}};
    int found = -1;
    for (size_t t = 0; t < sizeof tries / sizeof tries[0] && found; t++) {
        int i = tries[t][0], o = tries[t][1], eff = layers + i + o;
        int l = vpp > 1 ? (eff + nv - 1) / nv : 0;
        if (l && (eff + l - 1) / l != nv)
            continue; /* torchtitan would make another number of stages */
        if (mm_torchtitan_split(layers, nv, i, o, per))
            continue;
        bool ok = true;
        for (int s = 0; s < pp && ok; s++)
            for (int k = 0; k < vpp; k++)
                ok &= per[vee && k ? 2 * pp - 1 - s : k * pp + s] == per[s] && per[s] * vpp == want[s];
        if (ok) {
            *in = i, *out = o, *lps = l;
            found = 0;
        }
    }
    free(per);
    return found;
}

static void pipeline_keys(mm_emit_ctx *c)
{
    const mm_scenario *sc = &c->sim->sc;
    const mm_layout *L = &sc->parallel.llm.lay;
    int vpp = L->vpp > 1 ? L->vpp : 1, in = 1, out = 1, lps = 0;
    /* ZBVZeroBubble: torch.distributed.pipelining's ScheduleZBVZeroBubble,
     * two stages per rank in a V (torchtitan @ b5bcd76c get_schedule_class,
     * _get_pp_rank_to_stage_indices_mapping: rank r holds stages r and
     * 2 pp - 1 - r); mmsim's zb-v runs vpp 2 (scenario check) */
    bool vee = sc->train.schedule == MM_SCHED_ZB_V;
    const char *sched = sc->train.schedule == MM_SCHED_1F1B          ? "1F1B"
                        : sc->train.schedule == MM_SCHED_GPIPE       ? "GPipe"
                        : sc->train.schedule == MM_SCHED_INTERLEAVED ? "Interleaved1F1B"
                        : vee                                        ? "ZBVZeroBubble"
                                                                     : NULL;
    mm_emit_put(c, "pipeline_parallel_degree = %d\n", L->pp);
    if (L->pp == 1)
        return;
    if (!sched || (vpp > 1) != (sc->train.schedule == MM_SCHED_INTERLEAVED || vee)) {
        mm_emit_refuse(c, "train.schedule", "'%s' at vpp %d: torchtitan's schedules mmsim reads are 1F1B, GPipe "
                       "(vpp 1), Interleaved1F1B (vpp > 1) and ZBVZeroBubble (vpp 2): plan with --space "
                       "schedule=1f1b,gpipe,interleaved,zb-v",
                       mm_schedule_names[sc->train.schedule], vpp);
        return;
    }
    if (find_split(L, (int)c->sim->llm->layers, vpp, vee, &in, &out, &lps)) {
        mm_emit_refuse(c, "parallel.llm.layers_per_stage", "torchtitan's split of the layers "
                       "(generate_llm_fqn_per_model_part) gives no first/last_stage_less_layers for this one");
        return;
    }
    mm_emit_put(c, "pipeline_parallel_schedule = \"%s\"\n", sched);
    mm_emit_put(c, "pipeline_parallel_microbatch_size = %lld\n", (long long)sc->train.micro_batch);
    mm_emit_put(c, "pipeline_parallel_first_stage_less_layers = %d\n", in);
    mm_emit_put(c, "pipeline_parallel_last_stage_less_layers = %d\n", out);
    if (lps)
        mm_emit_put(c, "pipeline_parallel_layers_per_stage = %d\n", lps);
}

/* What the fsdp profile under torchtitan cannot be told (scenario/
 * torchtitan.c refuses or fixes each of these). */
static void refuse_settings(mm_emit_ctx *c, int zero)
{
    const mm_scenario *sc = &c->sim->sc;
    const mm_layout *L = &sc->parallel.llm.lay;
    bool encoder = c->sim->model->has_vision || c->sim->model->has_audio; /* refused already */
    if (!encoder && !flavor_of(c->sim->llm))
        mm_emit_refuse(c, "model", "%s is not one of torchtitan's llama3 flavors 8B and 70B (what mmsim reads back)",
                       c->sim->model->name);
    if (L->cp > 1)
        mm_emit_refuse(c, "parallel.llm.cp", "%d: torchtitan's context parallelism is not modeled", L->cp);
    if (L->ep > 1)
        mm_emit_refuse(c, "parallel.llm.ep", "%d: the llama3 flavors have no experts", L->ep);
    if (zero == 1 || zero == 2 || (zero == 3 && L->dp == 1))
        mm_emit_refuse(c, "train.zero", "%d at dp %d: torchtitan's FSDP2 shards everything over the shard group "
                       "(ZeRO 3 at dp > 1) or runs replicas (ZeRO 0): plan with --space zero=0,3", zero, L->dp);
    if (sc->train.precision == MM_PREC_FP16)
        mm_emit_refuse(c, "train.precision", "fp16: torchtitan's mixed precision mmsim reads is bfloat16");
    if (mm_emit_llm_recompute(c->sim) == MM_RECOMPUTE_SELECTIVE)
        mm_emit_refuse(c, "train.recompute", "selective: torchtitan's selective AC (op or every n-th layer) is "
                       "not mmsim's selective recompute: plan with --space recompute=none,full");
    if (L->tp > 1 && !mm_emit_llm_sp(c->sim))
        mm_emit_refuse(c, "train.sequence_parallel", "false at tp %d: torchtitan's TP plan shards the norms' "
                       "sequence", L->tp);
    if (sc->train.tp_comm_overlap)
        mm_emit_refuse(c, "train.tp_comm_overlap", "torchtitan's async TP (torch.compile) is not modeled");
    if (sc->train.cuda_graphs != MM_GRAPHS_NONE)
        mm_emit_refuse(c, "train.cuda_graphs", "torchtitan runs eager (compile is refused)");
    if (sc->train.attention != MM_ATTN_AUTO)
        mm_emit_refuse(c, "train.attention", "'%s': torchtitan runs SDPA, the fsdp profile's choice (auto)",
                       mm_attention_names[sc->train.attention]);
    if (sc->train.n_frozen)
        mm_emit_refuse(c, "train.frozen", "torchtitan trains every parameter");
}

int mm_emit_torchtitan(mm_emit_ctx *c)
{
    const mm_sim *sim = c->sim;
    const mm_scenario *sc = &sim->sc;
    const mm_layout *L = &sc->parallel.llm.lay;
    int zero = mm_emit_llm_zero(sim);
    mm_emit_refuse_common(c, profiles);
    refuse_settings(c, zero);
    const char *fl = flavor_of(sim->llm);
    mm_emit_put(c, "# torchtitan train config (torchtitan %.10s keys), written by mmsim %s\n"
                   "# %s: tp %d, pp %d, vpp %d, dp %d (%s) on %d GPUs (%d nodes x %d)\n"
                   "# launch: NGPU=%d CONFIG_FILE=THIS_FILE ./run_train.sh on each of %d nodes, with your "
                   "[job], [checkpoint] and data settings\n"
                   "# read back: mmsim run --torchtitan THIS_FILE --set cluster.nodes=%d\n\n",
                "238fa9953e4aec2a62582121564273d7cbb1e9f1", MMSIM_VERSION, sim->model->name, L->tp, L->pp,
                L->vpp > 1 ? L->vpp : 1, L->dp, zero == 3 ? "FSDP" : "replicas", mm_cluster_gpus(sim->cluster),
                sim->cluster->nodes, sim->cluster->gpus_per_node, sim->cluster->gpus_per_node, sim->cluster->nodes,
                sim->cluster->nodes);
    mm_emit_put(c, "[model]\nname = \"llama3\"\nflavor = \"%s\"\n", fl ? fl : "?");
    if (sc->train.precision == MM_PREC_FP8)
        mm_emit_put(c, "converters = [\"float8\"]\n");
    /* with pipelining a local batch is cut into micro-batches and there is
     * no gradient accumulation (the reader refuses it): local = global / dp */
    long long local = L->pp > 1 ? (long long)(sc->train.global_batch / L->dp) : (long long)sc->train.micro_batch;
    mm_emit_put(c, "\n[training]\nlocal_batch_size = %lld\nglobal_batch_size = %lld\nseq_len = %lld\n"
                   "mixed_precision_param = \"bfloat16\"\n",
                local, (long long)sc->train.global_batch, (long long)sc->train.seq_len);
    mm_emit_put(c, "\n[parallelism]\ndata_parallel_replicate_degree = %d\ndata_parallel_shard_degree = %d\n"
                   "tensor_parallel_degree = %d\ncontext_parallel_degree = 1\n",
                zero == 3 ? 1 : L->dp, zero == 3 ? L->dp : 1, L->tp);
    pipeline_keys(c);
    mm_emit_put(c, "\n[activation_checkpoint]\nmode = \"%s\"\n",
                mm_emit_llm_recompute(sim) == MM_RECOMPUTE_FULL ? "full" : "none");
    return 0;
}
