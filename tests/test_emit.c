/* test_emit.c - the planner's pick handed to the tools that launch it
 * (plan/emit.h): each Megatron-LM argument list and torchtitan config that
 * mmsim writes is read back by mmsim's own reader and must give the same
 * layout, training keys, model and simulated iteration, bit for bit (the
 * simulation is deterministic and the two scenarios are the same); what a
 * format cannot say is refused by name; the DeepSpeed pair carries the
 * batch arithmetic DeepSpeed documents (train_batch_size =
 * train_micro_batch_size_per_gpu x gradient_accumulation_steps x GPUs,
 * deepspeedai/DeepSpeed docs/_pages/config-json.md); `mmsim plan --emit`
 * end to end, and its bad arguments. */
#include "cost/costs.h"
#include "exec/run.h"
#include "plan/emit.h"
#include "scenario/megatron.h"
#include "scenario/sim.h"
#include "scenario/torchtitan.h"
#include "interop_common.h"

#include <dirent.h>

typedef struct loaded {
    mm_scenario sc;
    mm_sim sim;
} loaded;

static void load_sets(loaded *l, const char *const *sets, int n)
{
    mm_err err;
    mm_err_clear(&err);
    memset(l, 0, sizeof *l);
    ck_assert_msg(mm_scenario_load(&l->sc, NULL, sets, n, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_msg(mm_sim_prepare(&l->sim, &l->sc, &err) == 0, "%s:%d %s: %s", err.file, err.line, err.key, err.msg);
}

static void unload(loaded *l)
{
    mm_sim_free(&l->sim);
    mm_scenario_free(&l->sc);
}

/* The emitted text of l in DIR/name; returns the path. */
static const char *emit_to(const loaded *l, mm_emit_format f, const char *name, char **aux)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mm_err err;
    mm_err_clear(&err);
    char *text = NULL;
    ck_assert_msg(mm_emit_text(f, &l->sim, path, &text, aux, &err) == 0, "%s: %s", err.key, err.msg);
    write_file(name, text);
    free(text);
    return path;
}

static void run_sim(const mm_sim *sim, mm_metrics *m)
{
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_sim_run(sim, m, NULL, &err) == 0, "%s", err.msg);
}

/* a and b are the same simulation: layout, training keys as the cost
 * bridge resolves them, model, and the simulated iteration. */
static void assert_same(const mm_sim *a, const mm_sim *b)
{
    const mm_layout *la = &a->sc.parallel.llm.lay, *lb = &b->sc.parallel.llm.lay;
    ck_assert_msg(la->tp == lb->tp && la->pp == lb->pp && la->dp == lb->dp && la->cp == lb->cp && la->ep == lb->ep,
                  "degrees %d/%d/%d/%d/%d vs %d/%d/%d/%d/%d", la->tp, la->pp, la->dp, la->cp, la->ep, lb->tp, lb->pp,
                  lb->dp, lb->cp, lb->ep);
    ck_assert_int_eq(la->vpp > 1 ? la->vpp : 1, lb->vpp > 1 ? lb->vpp : 1);
    for (int s = 0; s < la->pp; s++)
        for (int v = 0; v < (la->vpp > 1 ? la->vpp : 1); v++) /* every model chunk's layers */
            ck_assert_int_eq(mm_layout_chunk_layers(la, a->llm->layers, s, v),
                             mm_layout_chunk_layers(lb, b->llm->layers, s, v));
    ck_assert_int_eq(a->sc.train.grad_reduce, b->sc.train.grad_reduce);
    ck_assert_int_eq(a->sc.train.micro_batch, b->sc.train.micro_batch);
    ck_assert_int_eq(a->sc.train.global_batch, b->sc.train.global_batch);
    ck_assert_int_eq(a->sc.train.seq_len, b->sc.train.seq_len);
    ck_assert_int_eq(a->sc.train.precision, b->sc.train.precision);
    ck_assert_int_eq(a->sc.train.schedule, b->sc.train.schedule);
    ck_assert_int_eq(mm_sim_recompute(a, &a->sc.parallel.llm), mm_sim_recompute(b, &b->sc.parallel.llm));
    ck_assert_str_eq(a->sc.train.framework, b->sc.train.framework);
    ck_assert_int_eq(a->attn, b->attn);
    ck_assert_int_eq(a->sc.train.cuda_graphs, b->sc.train.cuda_graphs);
    bool ga, pa, gb, pb;
    int za = a->sc.parallel.llm.zero >= 0 ? a->sc.parallel.llm.zero : a->sc.train.zero;
    int zb = b->sc.parallel.llm.zero >= 0 ? b->sc.parallel.llm.zero : b->sc.train.zero;
    ck_assert_int_eq(za, zb);
    mm_sim_overlap(a, za, &ga, &pa);
    mm_sim_overlap(b, zb, &gb, &pb);
    ck_assert_int_eq(ga, gb);
    if (za == 1 || za == 2)
        ck_assert_int_eq(pa, pb);
    ck_assert_int_eq(mm_llm_params(a->llm), mm_llm_params(b->llm));
    ck_assert_int_eq(a->llm->vocab, b->llm->vocab);
    ck_assert_int_eq(a->llm->kv_heads, b->llm->kv_heads);
    mm_metrics ma, mb;
    run_sim(a, &ma);
    run_sim(b, &mb);
    ck_assert_msg(!ma.oom && !mb.oom, "every case here fits: %.1f GiB", ma.peak_memory_gib);
    ck_assert_msg(ma.iteration_time_s == mb.iteration_time_s, "iteration %.17g s, read back %.17g s",
                  ma.iteration_time_s, mb.iteration_time_s);
    ck_assert_msg(ma.peak_memory_gib == mb.peak_memory_gib, "memory %.17g vs %.17g", ma.peak_memory_gib,
                  mb.peak_memory_gib);
    mm_metrics_free(&ma);
    mm_metrics_free(&mb);
}

/* sets -> the Megatron-LM argument list -> read back on the same cluster. */
static void megatron_roundtrip(const char *const *sets, int n, const char *name)
{
    loaded a;
    load_sets(&a, sets, n);
    const char *path = emit_to(&a, MM_EMIT_MEGATRON, name, NULL);
    char nodes[48];
    snprintf(nodes, sizeof nodes, "cluster.nodes=%d", a.sc.nodes);
    const char *back_sets[] = {nodes, "iterations=1"};
    static mm_megatron mg;
    loaded b;
    memset(&b, 0, sizeof b);
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_megatron_scenario(path, NULL, back_sets, 2, &mg, &b.sc, &err) == 0, "%s:%d %s: %s", err.file,
                  err.line, err.key, err.msg);
    ck_assert_msg(mm_sim_prepare(&b.sim, &b.sc, &err) == 0, "%s: %s", err.key, err.msg);
    assert_same(&a.sim, &b.sim);
    unload(&b);
    unload(&a);
}

/* Llama 3 8B: TP with sequence parallelism and its comm overlap, a
 * pipeline, the distributed optimizer with both overlaps, selective
 * recompute, FP8. */
START_TEST(megatron_llama_tp_pp_fp8)
{
    const char *sets[] = {"model=models/llama-3-8b.json", "workload=text", "iterations=1",
                          "parallel.llm={tp: 2, pp: 2, dp: 4}", "train.sequence_parallel=true",
                          "train.tp_comm_overlap=true", "train.zero=1", "train.overlap_grad_reduce=true",
                          "train.overlap_param_gather=true", "train.recompute=selective", "train.precision=fp8",
                          "train.micro_batch=1", "train.global_batch=16", "train.seq_len=4096",
                          "train.framework=megatron-core"};
    megatron_roundtrip(sets, sizeof sets / sizeof sets[0], "llama.args");
}
END_TEST

/* A GPT-2-style model (Megatron's GPT 1.7B, vocabulary 51,200 already a
 * multiple of 128 x tp): interleaved virtual stages, full recompute,
 * FP16, flash-attn 2, per-layer CUDA graphs. */
START_TEST(megatron_gpt_interleaved)
{
    const char *sets[] = {"model=models/megatron-gpt-1.7b.json", "workload=text", "iterations=1",
                          "parallel.llm={tp: 2, pp: 2, dp: 4, vpp: 2}", "train.schedule=interleaved",
                          "train.recompute=full", "train.precision=fp16", "train.zero=0", "train.attention=flash2",
                          "train.cuda_graphs=layer", "train.micro_batch=2", "train.global_batch=64",
                          "train.seq_len=2048", "train.framework=megatron-core"};
    megatron_roundtrip(sets, sizeof sets / sizeof sets[0], "gpt.args");
}
END_TEST

/* Qwen2.5 7B (Q/K/V biases alone, GQA 28/4): context parallelism with
 * Ulysses' all-to-all, an uneven pipeline split, cuDNN attention. */
START_TEST(megatron_qwen_cp_uneven)
{
    const char *sets[] = {"model=models/qwen2.5-7b.json", "workload=text", "iterations=1",
                          "parallel.llm={tp: 4, pp: 2, cp: 2, dp: 1, layers_per_stage: [13, 15]}",
                          "train.sequence_parallel=true", "train.cp_comm=ulysses", "train.attention=cudnn",
                          "train.zero=1", "train.micro_batch=1", "train.global_batch=8", "train.seq_len=8192",
                          "train.framework=megatron-core"};
    megatron_roundtrip(sets, sizeof sets / sizeof sets[0], "qwen.args");
}
END_TEST

/* Megatron's pipeline-split options under interleaving (Qwen2.5 7B's 28
 * layers + 2 over pp 3 x vpp 2: chunks of 5, the first and last of 4),
 * with gradients reduced in bf16. */
START_TEST(megatron_split_options)
{
    const char *sets[] = {"model=models/qwen2.5-7b.json", "workload=text", "iterations=1", "cluster.nodes=3",
                          "parallel.llm={tp: 1, pp: 3, dp: 8, vpp: 2, embedding_in_split: true, "
                          "loss_in_split: true}",
                          "train.schedule=interleaved", "train.grad_reduce=bf16", "train.zero=1",
                          "train.micro_batch=1", "train.global_batch=48", "train.seq_len=4096",
                          "train.framework=megatron-core"};
    megatron_roundtrip(sets, sizeof sets / sizeof sets[0], "split.args");
}
END_TEST

/* --decoder-first-pipeline-num-layers with virtual stages: [8, 10, 10]
 * at vpp 2, each stage in two equal chunks. */
START_TEST(megatron_first_last_interleaved)
{
    const char *sets[] = {"model=models/qwen2.5-7b.json", "workload=text", "iterations=1", "cluster.nodes=3",
                          "parallel.llm={tp: 1, pp: 3, dp: 8, vpp: 2, layers_per_stage: [8, 10, 10]}",
                          "train.schedule=interleaved", "train.zero=1", "train.micro_batch=1",
                          "train.global_batch=48", "train.seq_len=4096", "train.framework=megatron-core"};
    megatron_roundtrip(sets, sizeof sets / sizeof sets[0], "firstlast.args");
}
END_TEST

/* Megatron's local implementation (its attention kernel as the profile
 * picks it, written out) under the distributed optimizer (ZeRO 1: the
 * legacy modules run no Megatron-FSDP, the profile's zero_stages). */
START_TEST(megatron_local_fsdp)
{
    const char *sets[] = {"model=models/llama-3-8b.json", "workload=text", "iterations=1",
                          "parallel.llm={tp: 1, pp: 1, dp: 16}", "train.zero=1", "train.recompute=full",
                          "train.micro_batch=1", "train.global_batch=32", "train.seq_len=2048",
                          "train.framework=megatron-local"};
    megatron_roundtrip(sets, sizeof sets / sizeof sets[0], "local.args");
}
END_TEST

/* Mixtral 8x7B: expert parallelism, the all-to-all dispatcher and grouped
 * GEMMs, on 32 GPUs. */
START_TEST(megatron_mixtral_ep)
{
    const char *sets[] = {"model=models/mixtral-8x7b.json", "workload=text", "iterations=1", "cluster.nodes=4",
                          "parallel.llm={tp: 2, pp: 4, dp: 4, ep: 4}", "train.sequence_parallel=true",
                          "train.zero=1", "train.recompute=full", "train.micro_batch=1", "train.global_batch=16",
                          "train.seq_len=4096", "train.framework=megatron-core"};
    megatron_roundtrip(sets, sizeof sets / sizeof sets[0], "mixtral.args");
}
END_TEST

/* Mixtral token-dropping as Megatron-LM runs it: capacity, padding, the
 * drop policy, the unbalanced router and an expert group folded over TP
 * ranks (--expert-tensor-parallel-size 1) read back to the same run. */
START_TEST(megatron_mixtral_drop)
{
    const char *sets[] = {"model=models/mixtral-8x7b.json", "workload=text", "iterations=1", "cluster.nodes=4",
                          "parallel.llm={tp: 2, pp: 4, dp: 4, ep: 8}", "train.sequence_parallel=true",
                          "train.zero=1", "train.recompute=full", "train.micro_batch=1", "train.global_batch=16",
                          "train.seq_len=4096", "train.framework=megatron-core", "moe.routing=skewed",
                          "moe.capacity_factor=1.25", "moe.pad_to_capacity=true", "moe.drop_policy=position"};
    megatron_roundtrip(sets, sizeof sets / sizeof sets[0], "mixtral-drop.args");
}
END_TEST

/* GPT-3 1.3B's 50,257 words are no multiple of tp 2: Megatron-LM pads
 * them to 50,432 (128 x 2 x 197), the emitted list says so, and the
 * model read back has those rows, as a real run would. */
START_TEST(megatron_vocab_padding_said)
{
    const char *sets[] = {"model=models/gpt3-1.3b.json", "workload=text", "parallel.llm={tp: 2, pp: 1, dp: 8}",
                          "train.framework=megatron-core", "train.seq_len=2048"};
    loaded a;
    load_sets(&a, sets, sizeof sets / sizeof sets[0]);
    const char *path = emit_to(&a, MM_EMIT_MEGATRON, "gpt3.args", NULL);
    static mm_megatron mg;
    mm_scenario sc;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_megatron_read(path, &mg, &err), 0);
    ck_assert_ptr_nonnull(strstr(mg.model_json, "\"vocab_size\": 50432"));
    (void)sc;
    unload(&a);
}
END_TEST

/* What Megatron-LM's arguments cannot say, all in one error: the first
 * key's file and line, every key in the message. */
START_TEST(megatron_refusals)
{
    loaded a;
    load_sets(&a, NULL, 0); /* the built-in MLLM */
    mm_err err;
    mm_err_clear(&err);
    char *text = NULL;
    ck_assert_int_eq(mm_emit_text(MM_EMIT_MEGATRON, &a.sim, NULL, &text, NULL, &err), -MM_EINPUT);
    ck_assert_ptr_null(text);
    ck_assert_str_eq(err.key, "model");
    ck_assert_msg(strstr(err.msg, "vision encoder") && strstr(err.msg, "parallel.placement"), "%s", err.msg);
    unload(&a);
    /* what Megatron-LM's validate_args refuses: MoE at tp > 1 without
     * sequence parallelism; the parameter all-gather's overlap without the
     * gradient reduce's */
    const char *moe[] = {"model=models/mixtral-8x7b.json", "workload=text", "cluster.nodes=4",
                         "parallel.llm={tp: 2, pp: 4, dp: 4, ep: 4}", "train.sequence_parallel=false", "train.zero=1",
                         "train.overlap_grad_reduce=false", "train.overlap_param_gather=true",
                         "train.framework=megatron-core"};
    load_sets(&a, moe, sizeof moe / sizeof moe[0]);
    ck_assert_int_eq(mm_emit_text(MM_EMIT_MEGATRON, &a.sim, NULL, &text, NULL, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.sequence_parallel");
    ck_assert_msg(strstr(err.msg, "2 settings") && strstr(err.msg, "train.overlap_param_gather: true without"), "%s",
                  err.msg);
    unload(&a);
    const char *sets[] = {"model=models/llama-3-8b.json", "workload=text",
                          "parallel.llm={tp: 1, pp: 4, dp: 4, layers_per_stage: [10, 8, 6, 8]}",
                          "train.schedule=gpipe", "train.framework=fsdp", "train.attention=flash3"};
    load_sets(&a, sets, sizeof sets / sizeof sets[0]);
    ck_assert_int_eq(mm_emit_text(MM_EMIT_MEGATRON, &a.sim, NULL, &text, NULL, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.framework");
    ck_assert_str_eq(err.file, "--set");
    const char *want[] = {"4 settings", "train.framework: 'fsdp'", "runs as megatron-core or megatron-local", "parallel.llm.layers_per_stage:",
                          "train.schedule: 'gpipe'", "train.attention: 'flash3'"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(err.msg, want[i]), "missing '%s' in %s", want[i], err.msg);
    unload(&a);
}
END_TEST

/* The zero-bubble schedules under megatron-local, as the Zero Bubble
 * papers' fork takes them (sail-sg/zero-bubble-pipeline-parallelism @
 * 39f2c186, megatron/core/zbpp_utils.py add_zero_bubble_args; README:
 * max pending backward 1 x the pipeline stages is ZB1P, 2 x is ZB2P;
 * --zero-bubble-v-schedule is ZB-V): each written with the fork's flags
 * and a header naming the fork, and read back to the same scenario,
 * schedule included. */
static const char *const zb_base[] = {"model=models/llama-3-8b.json", "workload=text", "iterations=1",
                                      "train.framework=megatron-local", "train.zero=1", "train.recompute=full",
                                      "train.micro_batch=1", "train.global_batch=32", "train.seq_len=2048"};

static void zb_sets(const char **sets, const char *par, const char *sched)
{
    for (int i = 0; i < 9; i++)
        sets[i] = zb_base[i];
    sets[9] = par;
    sets[10] = sched;
}

START_TEST(megatron_zero_bubble_roundtrip)
{
    static const struct {
        const char *par, *sched, *name, *must;
    } cases[] = {
        {"parallel.llm={tp: 1, pp: 4, dp: 4}", "train.schedule=zb-h1", "zbh1.args",
         "--enable-zero-bubble\n--zero-bubble-max-pending-backward 4\n"},
        {"parallel.llm={tp: 1, pp: 4, dp: 4}", "train.schedule=zb-2p", "zb2p.args",
         "--enable-zero-bubble\n--zero-bubble-max-pending-backward 8\n"},
        {"parallel.llm={tp: 1, pp: 4, dp: 4, vpp: 2}", "train.schedule=zb-v", "zbv.args", "--zero-bubble-v-schedule\n"},
        {"parallel.llm={tp: 2, pp: 2, dp: 4}", "train.schedule=zb-2p", "zb2p-tp.args",
         "--zero-bubble-max-pending-backward 4\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[11];
        zb_sets(sets, cases[i].par, cases[i].sched);
        loaded a;
        load_sets(&a, sets, 11);
        const char *path = emit_to(&a, MM_EMIT_MEGATRON, cases[i].name, NULL);
        char p[600], text[8192];
        snprintf(p, sizeof p, "%s", path);
        mmx_slurp(p, text, sizeof text);
        ck_assert_msg(strstr(text, cases[i].must), "missing '%s' in:\n%s", cases[i].must, text);
        ck_assert_msg(strstr(text, "need the Zero Bubble papers' fork of Megatron-LM, "
                                   "sail-sg/zero-bubble-pipeline-parallelism @ 39f2c186a2"), "%s", text);
        /* the fork's arguments.py has no --attention-backend; nor does a V
         * list carry virtual-stage arguments (the fork sets two itself) */
        ck_assert_msg(!strstr(text, "--attention-backend") && !strstr(text, "virtual"), "%s", text);
        unload(&a);
        megatron_roundtrip(sets, 11, cases[i].name);
    }
}
END_TEST

/* The emitted ZB-H1 list with the lines starting with `drop` left out and
 * `add` appended (argparse: the last occurrence wins), written as name;
 * reading it back fails naming `key`, its message holding `says`. */
static void zb_refused(const char *base, const char *drop, const char *add, const char *key, const char *says)
{
    char text[8192] = "";
    size_t used = 0;
    const char *s = base;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s + 1) : strlen(s);
        if ((!drop || strncmp(s, drop, strlen(drop))) && used + n < sizeof text) {
            memcpy(text + used, s, n);
            used += n;
            text[used] = '\0';
        }
        s += n;
    }
    size_t na = strlen(add);
    ck_assert_uint_lt(used + na, sizeof text);
    memcpy(text + used, add, na + 1);
    write_file("zb-bad.args", text);
    char path[600];
    snprintf(path, sizeof path, "%s/zb-bad.args", dir);
    const char *back_sets[] = {"iterations=1"};
    static mm_megatron mg;
    mm_scenario sc;
    memset(&sc, 0, sizeof sc);
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_megatron_scenario(path, NULL, back_sets, 1, &mg, &sc, &err) == -MM_EINPUT, "accepted:\n%s",
                  text);
    ck_assert_msg(!strcmp(err.key, key) && strstr(err.msg, says), "%s: %s (wanted %s: ...%s...)", err.key, err.msg,
                  key, says);
    ck_assert_ptr_nonnull(strstr(err.file, "zb-bad.args"));
    ck_assert_int_gt(err.line, 0);
}

/* What the fork refuses, or mmsim does not model, refused by name both
 * ways: reading a list, and writing one. */
START_TEST(megatron_zero_bubble_refusals)
{
    const char *sets[11];
    zb_sets(sets, "parallel.llm={tp: 1, pp: 4, dp: 4}", "train.schedule=zb-h1");
    loaded a;
    load_sets(&a, sets, 11);
    const char *path = emit_to(&a, MM_EMIT_MEGATRON, "zb-base.args", NULL);
    char p[600], base[8192];
    snprintf(p, sizeof p, "%s", path);
    mmx_slurp(p, base, sizeof base);
    unload(&a);
    const char *pe = "--zero-bubble-max-pending-backward";
    zb_refused(base, NULL, "--zero-bubble-max-pending-backward 6\n", pe, "'6' at pp 4: mmsim models 4 (ZB-H1");
    zb_refused(base, pe, "", "--enable-zero-bubble", "auto (the fork's default)");
    zb_refused(base, NULL, "--zero-bubble-max-pending-backward auto\n", pe, "adaptive memory limit is not modeled");
    zb_refused(base, "--enable-zero-bubble", "", pe, "without --enable-zero-bubble or --zero-bubble-v-schedule");
    zb_refused(base, NULL, "--zero-bubble-v-schedule\n", pe, "no effect on the V schedule");
    zb_refused(base, pe, "--zero-bubble-v-schedule\n--zero-bubble-v-schedule-mem-setup half\n",
               "--zero-bubble-v-schedule-mem-setup", "V-Half and V-Min are not modeled");
    zb_refused(base, NULL, "--zero-bubble-v-schedule-mem-setup zb\n", "--zero-bubble-v-schedule-mem-setup",
               "for the V schedule only");
    zb_refused(base, NULL, "--num-layers-per-virtual-pipeline-stage 4\n", "--enable-zero-bubble",
               "got virtual pipeline parallel but v_schedule is disabled");
    zb_refused(base, pe, "--zero-bubble-v-schedule\n--num-layers-per-virtual-pipeline-stage 4\n",
               "--num-layers-per-virtual-pipeline-stage", "asserts this is not set");
    zb_refused(base, NULL, "--num-virtual-stages-per-pipeline-rank 2\n", "--num-virtual-stages-per-pipeline-rank",
               "not an argument of the Zero Bubble fork");
    zb_refused(base, NULL, "--pipeline-model-parallel-size 1\n", "--enable-zero-bubble", "at pp 1");
    zb_refused(base, "--transformer-impl", "--transformer-impl transformer_engine\n", "--enable-zero-bubble",
               "legacy modules");
    zb_refused(base, "--untie", "", "--enable-zero-bubble", "asserts untied embeddings");
    zb_refused(base, NULL, "--no-gradient-accumulation-fusion\n", "--no-gradient-accumulation-fusion",
               "should be True for zb runtime");
    zb_refused(base, NULL, "--overlap-grad-reduce\n", "--overlap-grad-reduce", "asserts neither overlap");
    zb_refused(base, NULL, "--enable-1f1b-v\n", "--enable-1f1b-v", "Zero Bubble fork option");
    zb_refused(base, pe, "--zero-bubble-v-schedule\n--num-layers 36\n", "--zero-bubble-v-schedule",
               "even number of layers per stage");
    /* writing: a tied model, an uneven split (the fork has no
     * --decoder-first-pipeline-num-layers), the overlaps it asserts off */
    const char *bad[] = {"model=models/megatron-gpt-1.7b.json", "workload=text", "train.framework=megatron-local",
                         "parallel.llm={tp: 1, pp: 4, dp: 4, layers_per_stage: [5, 7, 7, 5]}",
                         "train.schedule=zb-2p", "train.zero=1", "train.overlap_grad_reduce=true",
                         "train.seq_len=2048"};
    load_sets(&a, bad, sizeof bad / sizeof bad[0]);
    char *text = NULL;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_emit_text(MM_EMIT_MEGATRON, &a.sim, NULL, &text, NULL, &err), -MM_EINPUT);
    ck_assert_ptr_null(text);
    const char *want[] = {"tied embeddings", "train.overlap_grad_reduce: true under 'zb-2p'",
                          "has no --decoder-first-pipeline-num-layers"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(err.msg, want[i]), "missing '%s' in %s", want[i], err.msg);
    unload(&a);
}
END_TEST

/* sets -> torchtitan TOML -> read back on the same cluster. */
static void torchtitan_roundtrip(const char *const *sets, int n, const char *name, const char *must)
{
    loaded a;
    load_sets(&a, sets, n);
    const char *path = emit_to(&a, MM_EMIT_TORCHTITAN, name, NULL);
    char p[600], text[8192];
    snprintf(p, sizeof p, "%s", path);
    mmx_slurp(p, text, sizeof text);
    ck_assert_msg(strstr(text, must), "missing '%s' in:\n%s", must, text);
    char nodes[48];
    snprintf(nodes, sizeof nodes, "cluster.nodes=%d", a.sc.nodes);
    const char *back_sets[] = {nodes, "iterations=1"};
    static mm_torchtitan tt;
    loaded b;
    memset(&b, 0, sizeof b);
    mm_err err;
    mm_err_clear(&err);
    ck_assert_msg(mm_torchtitan_scenario(path, NULL, back_sets, 2, &tt, &b.sc, &err) == 0, "%s:%d %s: %s\n%s",
                  err.file, err.line, err.key, err.msg, text);
    ck_assert_msg(mm_sim_prepare(&b.sim, &b.sc, &err) == 0, "%s: %s", err.key, err.msg);
    assert_same(&a.sim, &b.sim);
    unload(&b);
    unload(&a);
}

/* FSDP (ZeRO 3) over 16 GPUs with gradient accumulation, full AC. */
START_TEST(torchtitan_fsdp)
{
    const char *sets[] = {"model=models/llama-3-8b.json", "workload=text", "iterations=1", "train.framework=fsdp",
                          "parallel.llm={tp: 1, pp: 1, dp: 16}", "train.zero=3", "train.recompute=full",
                          "train.micro_batch=1", "train.global_batch=32", "train.seq_len=4096"};
    torchtitan_roundtrip(sets, sizeof sets / sizeof sets[0], "fsdp.toml", "data_parallel_shard_degree = 16");
}
END_TEST

/* TP 2 and an interleaved pipeline of 2 x 2 stages: torchtitan's split
 * with no fewer layers on the first and last stage gives each rank its 16
 * layers in equal chunks (its default, one fewer each, would not). */
START_TEST(torchtitan_tp_interleaved)
{
    const char *sets[] = {"model=models/llama-3-8b.json", "workload=text", "iterations=1", "train.framework=fsdp",
                          "parallel.llm={tp: 2, pp: 2, dp: 4, vpp: 2}", "train.schedule=interleaved",
                          "train.sequence_parallel=true", "train.zero=3", "train.recompute=full",
                          "train.micro_batch=1", "train.global_batch=16", "train.seq_len=4096"};
    torchtitan_roundtrip(sets, sizeof sets / sizeof sets[0], "pp.toml", "pipeline_parallel_first_stage_less_layers = 0");
}
END_TEST

/* ZB-V as torchtitan runs it: ScheduleZBVZeroBubble (get_schedule_class
 * @ b5bcd76c), rank r holding stages r and 2 pp - 1 - r, two a rank;
 * torchtitan's default one fewer layer on the first and last stage would
 * put both short stages on rank 0 (7 and 9 layers a rank elsewhere), so
 * the split is even.  Read back with the layers per stage that make
 * three stages a rank, it is refused as torchtitan refuses it. */
START_TEST(torchtitan_zbv)
{
    const char *sets[] = {"model=models/llama-3-8b.json", "workload=text", "iterations=1", "train.framework=fsdp",
                          "parallel.llm={tp: 1, pp: 4, dp: 4, vpp: 2}", "train.schedule=zb-v", "train.zero=3",
                          "train.recompute=full", "train.micro_batch=1", "train.global_batch=32",
                          "train.seq_len=4096"};
    torchtitan_roundtrip(sets, sizeof sets / sizeof sets[0], "zbv.toml",
                         "pipeline_parallel_schedule = \"ZBVZeroBubble\"\n");
    char p[600], text[8192];
    snprintf(p, sizeof p, "%s/zbv.toml", dir);
    mmx_slurp(p, text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "pipeline_parallel_first_stage_less_layers = 0"));
    char *lps = strstr(text, "pipeline_parallel_layers_per_stage = 4");
    ck_assert_msg(lps, "%s", text);
    lps[strlen("pipeline_parallel_layers_per_stage = ")] = '3'; /* 32 / 3: 11 stages, not 2 a rank */
    write_file("zbv-bad.toml", text);
    snprintf(p, sizeof p, "%s/zbv-bad.toml", dir);
    const char *back_sets[] = {"cluster.nodes=2", "iterations=1"};
    static mm_torchtitan tt;
    mm_scenario sc;
    memset(&sc, 0, sizeof sc);
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_torchtitan_scenario(p, NULL, back_sets, 2, &tt, &sc, &err), -MM_EINPUT);
    ck_assert_msg(strstr(err.key, "pipeline_parallel_layers_per_stage") && strstr(err.msg, "ZBVZeroBubble"), "%s: %s",
                  err.key, err.msg);
}
END_TEST

/* Replicas (ZeRO 0): data_parallel_replicate_degree. */
START_TEST(torchtitan_replicas)
{
    const char *sets[] = {"model=models/llama-3-8b.json", "workload=text", "iterations=1", "train.framework=fsdp",
                          "parallel.llm={tp: 4, pp: 1, dp: 4}", "train.sequence_parallel=true", "train.zero=0",
                          "train.recompute=full", "train.micro_batch=1", "train.global_batch=8",
                          "train.seq_len=4096"};
    torchtitan_roundtrip(sets, sizeof sets / sizeof sets[0], "ddp.toml", "data_parallel_replicate_degree = 4");
}
END_TEST

START_TEST(torchtitan_refusals)
{
    const char *sets[] = {"model=models/llama-2-7b.json", "workload=text", "train.framework=fsdp",
                          "parallel.llm={tp: 1, pp: 1, dp: 16}", "train.zero=1", "train.recompute=selective"};
    loaded a;
    load_sets(&a, sets, sizeof sets / sizeof sets[0]);
    mm_err err;
    mm_err_clear(&err);
    char *text = NULL;
    ck_assert_int_eq(mm_emit_text(MM_EMIT_TORCHTITAN, &a.sim, NULL, &text, NULL, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "model");
    const char *want[] = {"3 settings", "8B and 70B", "train.zero: 1", "train.recompute: selective"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(err.msg, want[i]), "missing '%s' in %s", want[i], err.msg);
    unload(&a);
    /* train.grad_reduce is the Megatron list's alone */
    const char *bf16[] = {"model=models/llama-2-7b.json", "workload=text", "train.framework=fsdp",
                          "parallel.llm={tp: 1, pp: 1, dp: 16}", "train.grad_reduce=bf16"};
    load_sets(&a, bf16, sizeof bf16 / sizeof bf16[0]);
    ck_assert_int_eq(mm_emit_text(MM_EMIT_TORCHTITAN, &a.sim, NULL, &text, NULL, &err), -MM_EINPUT);
    ck_assert_msg(strstr(err.msg, "train.grad_reduce") || !strcmp(err.key, "train.grad_reduce"), "%s: %s", err.key,
                  err.msg);
    unload(&a);
}
END_TEST

/* DeepSpeed's batch identity and the Trainer's arguments beside it. */
START_TEST(deepspeed_pair)
{
    const char *sets[] = {"model=models/llama-3-8b.json", "workload=text", "train.framework=hf-deepspeed",
                          "parallel.llm={tp: 1, pp: 1, dp: 16}", "train.zero=3", "train.recompute=full",
                          "train.micro_batch=2", "train.global_batch=96", "train.seq_len=2048"};
    loaded a;
    load_sets(&a, sets, sizeof sets / sizeof sets[0]);
    char *aux = NULL;
    const char *path = emit_to(&a, MM_EMIT_DEEPSPEED, "ds.json", &aux);
    char p[600], text[4096];
    snprintf(p, sizeof p, "%s", path);
    mmx_slurp(p, text, sizeof text);
    ck_assert_ptr_nonnull(aux);
    /* 96 = 2 x 3 x 16 */
    const char *want[] = {"\"train_batch_size\": 96,", "\"train_micro_batch_size_per_gpu\": 2,",
                          "\"gradient_accumulation_steps\": 3,", "\"stage\": 3,", "\"overlap_comm\": true",
                          "\"bf16\": {\"enabled\": true}", "\"fp16\": {\"enabled\": false}"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(text, want[i]), "missing '%s' in:\n%s", want[i], text);
    char dsname[700];
    snprintf(dsname, sizeof dsname, "\"deepspeed\": \"%s\",", path);
    const char *want2[] = {dsname, "\"per_device_train_batch_size\": 2,", "\"gradient_accumulation_steps\": 3,",
                           "\"bf16\": true,", "\"gradient_checkpointing\": true", "\"output_dir\":"};
    for (size_t i = 0; i < sizeof want2 / sizeof want2[0]; i++)
        ck_assert_msg(strstr(aux, want2[i]), "missing '%s' in:\n%s", want2[i], aux);
    free(aux);
    char comp[700];
    ck_assert_msg(!strstr(text, "stage3_"), "no zero.* set, no stage3 key:\n%s", text);
    unload(&a);
    /* the scenario's zero.* settings, by DeepSpeed's names */
    const char *z3[] = {"model=models/llama-3-8b.json", "workload=text", "train.framework=hf-deepspeed",
                        "parallel.llm={tp: 1, pp: 1, dp: 16}", "train.zero=3", "train.recompute=full",
                        "train.global_batch=96", "zero.prefetch_bucket_size=0", "zero.max_reuse_distance=2e8"};
    load_sets(&a, z3, sizeof z3 / sizeof z3[0]);
    path = emit_to(&a, MM_EMIT_DEEPSPEED, "ds.json", &aux);
    snprintf(p, sizeof p, "%s", path);
    mmx_slurp(p, text, sizeof text);
    free(aux);
    ck_assert_msg(strstr(text, "\"overlap_comm\": true,\n    \"stage3_prefetch_bucket_size\": 0,\n"
                               "    \"stage3_max_reuse_distance\": 200000000\n  },") &&
                      !strstr(text, "stage3_max_live"),
                  "%s", text);
    mm_emit_companion_path(MM_EMIT_DEEPSPEED, "a/b.c/ds.json", comp, sizeof comp);
    ck_assert_str_eq(comp, "a/b.c/ds.trainer.json");
    mm_emit_companion_path(MM_EMIT_DEEPSPEED, "a.d/ds", comp, sizeof comp);
    ck_assert_str_eq(comp, "a.d/ds.trainer.json");
    unload(&a);
    const char *tp[] = {"model=models/llama-3-8b.json", "workload=text", "train.framework=hf-deepspeed",
                        "parallel.llm={tp: 2, pp: 1, dp: 8}", "train.precision=fp8"};
    load_sets(&a, tp, sizeof tp / sizeof tp[0]);
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_emit_text(MM_EMIT_DEEPSPEED, &a.sim, NULL, &aux, NULL, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "parallel.llm.tp");
    ck_assert_msg(strstr(err.msg, "train.precision: fp8"), "%s", err.msg);
    unload(&a);
}
END_TEST

/* `mmsim plan --emit`: the pick's list runs to the pick's simulated time;
 * bad formats and files exit 2 before planning; a refusal leaves the file
 * that was there as it was, and no temporary file behind. */
START_TEST(cli_plan_emit)
{
    ck_assert_int_eq(run("plan --set model=models/llama-3-8b.json --set workload=text --set "
                         "train.framework=megatron-core --top 1 --no-db -q --emit megatron %s/p.args", dir),
                     0);
    char *last = strstr(out, " s\n");
    ck_assert_ptr_nonnull(last);
    const char *num = last;
    while (num > out && num[-1] != ' ')
        num--;
    double t = atof(num);
    ck_assert_msg(strstr(errtxt, "wrote the pick's megatron configuration"), "%s", errtxt);
    ck_assert_int_eq(run("run --megatron-args %s/p.args --no-db --json", dir), 0);
    double back = jget(out, "iteration_time_s");
    ck_assert_msg(fabs(back - t) <= 1e-5 * t, "plan %.9g s, read back %.9g s", t, back);
    ck_assert_int_eq(run("plan --no-db --emit bogus %s/x", dir), 2);
    ck_assert_msg(strstr(errtxt, "--emit") && strstr(errtxt, "bogus"), "%s", errtxt);
    ck_assert_int_eq(run("plan --no-db --emit megatron"), 2);
    ck_assert_int_eq(run("plan --no-db --emit megatron %s/no/such/dir/x.args", dir), 2);
    ck_assert_msg(strstr(errtxt, "does not exist"), "%s", errtxt);
    write_file("keep.args", "KEEP\n");
    ck_assert_int_eq(run("plan --no-db --top 0 --emit megatron %s/keep.args", dir), 2); /* the MLLM: refused */
    ck_assert_msg(strstr(errtxt, "vision encoder"), "%s", errtxt);
    char p[600], kept[64];
    snprintf(p, sizeof p, "%s/keep.args", dir);
    mmx_slurp(p, kept, sizeof kept);
    ck_assert_str_eq(kept, "KEEP\n");
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));)
        ck_assert_msg(strncmp(e->d_name, "keep.args.", 10), "a temporary file left: %s", e->d_name);
    closedir(d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("emit");
    TCase *tc = tcase_create("emit");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, megatron_llama_tp_pp_fp8);
    tcase_add_test(tc, megatron_gpt_interleaved);
    tcase_add_test(tc, megatron_qwen_cp_uneven);
    tcase_add_test(tc, megatron_split_options);
    tcase_add_test(tc, megatron_first_last_interleaved);
    tcase_add_test(tc, megatron_local_fsdp);
    tcase_add_test(tc, megatron_mixtral_ep);
    tcase_add_test(tc, megatron_mixtral_drop);
    tcase_add_test(tc, megatron_vocab_padding_said);
    tcase_add_test(tc, megatron_refusals);
    tcase_add_test(tc, megatron_zero_bubble_roundtrip);
    tcase_add_test(tc, megatron_zero_bubble_refusals);
    tcase_add_test(tc, torchtitan_fsdp);
    tcase_add_test(tc, torchtitan_tp_interleaved);
    tcase_add_test(tc, torchtitan_zbv);
    tcase_add_test(tc, torchtitan_replicas);
    tcase_add_test(tc, torchtitan_refusals);
    tcase_add_test(tc, deepspeed_pair);
    tcase_add_test(tc, cli_plan_emit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
