/* emit_deepspeed.c - a prepared scenario as a DeepSpeed config (JSON) for
 * the Hugging Face Trainer, and beside it the Trainer's own arguments
 * (emit.h: FILE.trainer.json).  mmsim reads neither back.
 *
 * DeepSpeed's keys are those of its configuration page
 * (deepspeedai/DeepSpeed 00376da499, docs/_pages/config-json.md):
 * train_batch_size = train_micro_batch_size_per_gpu x
 * gradient_accumulation_steps x GPUs, zero_optimization.stage,
 * .overlap_comm and, where the scenario's zero section sets them, the
 * .stage3_* settings, bf16.enabled, fp16.enabled.  The Trainer's are fields of
 * transformers' TrainingArguments (src/transformers/training_args.py:
 * output_dir, deepspeed, per_device_train_batch_size,
 * gradient_accumulation_steps, bf16, fp16, gradient_checkpointing), in the
 * JSON form HfArgumentParser.parse_json_file reads; the Trainer fills the
 * DeepSpeed config's batch keys from them when they say "auto", so both
 * files carry the same numbers.
 *
 * The Trainer on DeepSpeed ZeRO is data parallelism alone: tensor,
 * pipeline, context and expert parallelism are refused, as are FP8,
 * selective recompute (gradient_checkpointing recomputes whole layers)
 * and an attention kernel other than the profile's (the model's
 * attn_implementation is not a Trainer argument).
 * Not for: DeepSpeed's own pipeline engine or Megatron-DeepSpeed. */
#include <stdio.h>
#include <string.h>

#include "plan/emit_internal.h"

static const char *const profiles[] = {"hf-deepspeed", NULL};

static void refuse_settings(mm_emit_ctx *c)
{
    const mm_scenario *sc = &c->sim->sc;
    const mm_layout *L = &sc->parallel.llm.lay;
    const struct {
        const char *key;
        int v;
    } deg[] = {{"parallel.llm.tp", L->tp}, {"parallel.llm.pp", L->pp}, {"parallel.llm.cp", L->cp},
               {"parallel.llm.ep", L->ep}};
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++)
        if (deg[i].v > 1)
            mm_emit_refuse(c, deg[i].key, "%d: the Hugging Face Trainer on DeepSpeed ZeRO is data parallelism "
                           "alone (plan with --space %s=1)", deg[i].v, deg[i].key + 13);
    if (sc->train.precision == MM_PREC_FP8)
        mm_emit_refuse(c, "train.precision", "fp8: the Trainer's mixed precision is bf16 or fp16");
    if (mm_emit_llm_recompute(c->sim) == MM_RECOMPUTE_SELECTIVE)
        mm_emit_refuse(c, "train.recompute", "selective: the Trainer's gradient_checkpointing recomputes whole "
                       "layers (full): plan with --space recompute=none,full");
    if (sc->train.attention != MM_ATTN_AUTO)
        mm_emit_refuse(c, "train.attention", "'%s': the kernel is the model's attn_implementation, not a Trainer "
                       "or DeepSpeed setting", mm_attention_names[sc->train.attention]);
    if (sc->train.cuda_graphs != MM_GRAPHS_NONE)
        mm_emit_refuse(c, "train.cuda_graphs", "the Trainer and DeepSpeed's engine capture no CUDA graphs");
    if (sc->train.n_frozen)
        mm_emit_refuse(c, "train.frozen", "freezing is the training script's, not a Trainer argument");
}

int mm_emit_deepspeed(mm_emit_ctx *c)
{
    const mm_sim *sim = c->sim;
    const mm_scenario *sc = &sim->sc;
    const mm_layout *L = &sc->parallel.llm.lay;
    mm_emit_refuse_common(c, profiles);
    refuse_settings(c);
    int zero = mm_emit_llm_zero(sim);
    bool grad, param;
    mm_emit_overlaps(sim, &grad, &param);
    long long mbs = (long long)sc->train.micro_batch, gb = (long long)sc->train.global_batch;
    long long dp = L->dp > 0 ? L->dp : 1, ga = gb / (mbs * dp);
    bool bf16 = sc->train.precision != MM_PREC_FP16, full = mm_emit_llm_recompute(sim) == MM_RECOMPUTE_FULL;
    mm_emit_put(c, "{\n  \"train_batch_size\": %lld,\n  \"train_micro_batch_size_per_gpu\": %lld,\n"
                   "  \"gradient_accumulation_steps\": %lld,\n  \"zero_optimization\": {\n    \"stage\": %d,\n"
                   "    \"overlap_comm\": %s",
                gb, mbs, ga, zero, grad ? "true" : "false");
    /* the scenario's zero.* settings (set: >= 0) under stage 3, by
     * DeepSpeed's own names; left out, DeepSpeed's defaults apply, which
     * are the profile's */
    const double z3v[] = {sc->zero.prefetch_bucket_size, sc->zero.max_live_parameters,
                          sc->zero.param_persistence_threshold, sc->zero.max_reuse_distance};
    static const char *const z3k[] = {"stage3_prefetch_bucket_size", "stage3_max_live_parameters",
                                       "stage3_param_persistence_threshold", "stage3_max_reuse_distance"};
    for (int i = 0; zero >= 3 && i < 4; i++)
        if (z3v[i] >= 0)
            mm_emit_put(c, ",\n    \"%s\": %.0f", z3k[i], z3v[i]);
    mm_emit_put(c, "\n  },\n  \"bf16\": {\"enabled\": %s},\n  \"fp16\": {\"enabled\": %s}\n}\n",
                bf16 ? "true" : "false", bf16 ? "false" : "true");
    /* the config's file name as written (JSON-escaped), for the Trainer to find it */
    const char *path = c->path ? c->path : "ds_config.json";
    mm_emit_aux(c, "{\n  \"output_dir\": \"output\",\n  \"deepspeed\": \"");
    for (const char *p = path; *p; p++) {
        if (*p == '"' || *p == '\\')
            mm_emit_aux(c, "\\%c", *p);
        else if ((unsigned char)*p < 0x20)
            mm_emit_aux(c, "\\u%04x", (unsigned)*p);
        else
            mm_emit_aux(c, "%c", *p);
    }
    mm_emit_aux(c, "\",\n  \"per_device_train_batch_size\": "
                   "%lld,\n  \"gradient_accumulation_steps\": %lld,\n  \"bf16\": %s,\n  \"fp16\": %s,\n"
                   "  \"gradient_checkpointing\": %s\n}\n",
                mbs, ga, bf16 ? "true" : "false", bf16 ? "false" : "true",
                full ? "true" : "false");
    return 0;
}
