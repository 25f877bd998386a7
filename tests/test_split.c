/* test_split.c - Megatron-LM's pipeline-split options: the layers of each
 * (pipeline rank, model chunk) under --account-for-embedding-in-pipeline-
 * split, --account-for-loss-in-pipeline-split and --decoder-first/last-
 * pipeline-num-layers, with and without interleaving, against Megatron-
 * Core's own arithmetic written out independently below (NVIDIA/Megatron-LM
 * at d98e8a64ddf34856e74b24714e3bedb2f5a39553,
 * megatron/core/transformer/transformer_block.py get_num_layers_to_build,
 * transformer_layer.py get_transformer_layer_offset); Megatron's refusals;
 * the scenario keys and --megatron-args; the planner's split; and
 * Megatron-Bridge's Llama 3.1 405B recipe run end to end. */
#include "model/layout.h"
#include "model/llm.h"
#include "model/memory.h"
#include "plan/space.h"
#include "interop_common.h"

/* ---- the rule, written from Megatron-Core's functions ---------------- */

/* get_num_layers_to_build without a first/last override: (L + e + l) / pp
 * per rank, / vpp per chunk, one fewer on the embedding's and the loss's
 * chunk. */
static int mg_build(int L, int pp, int vpp, bool e, bool l, int rank, int v)
{
    int n = L + e + l, per = n / pp / vpp;
    if (e && rank == 0 && v == 0)
        per--;
    if (l && rank == pp - 1 && v == vpp - 1)
        per--;
    return per;
}

/* get_transformer_layer_offset's account_for branch: v * (N / vpp) +
 * rank * (N / pp / vpp), less one after the embedding's chunk. */
static int mg_offset(int L, int pp, int vpp, bool e, bool l, int rank, int v)
{
    int n = L + e + l, off = v * (n / vpp) + rank * (n / pp / vpp);
    if (e && !(rank == 0 && v == 0))
        off--;
    return off;
}

/* Several published and edge configurations: every chunk's layers and first
 * layer as Megatron computes them; the chunks add up to the model. */
START_TEST(split_chunks_follow_megatron)
{
    struct {
        int L, pp, vpp;
        bool e, l;
    } cf[] = {
        {126, 8, 8, true, true},  /* Megatron-Bridge Llama 3.1 405B, 1,024 H100s: 2 a chunk, 1 at the ends */
        {126, 8, 2, true, true},  /* its 256-GPU recipe: 8 a chunk, 7 at the ends */
        {94, 8, 4, true, true},   /* Megatron-Bridge Qwen3-235B-A22B, 256 H100s (perf_recipes/qwen/h100/
                                     qwen3_moe.py: PP 8, VP 4; the options from recipes/qwen/h100/
                                     qwen3_moe.py): 3 a chunk, 2 at the ends */
        {30, 4, 1, true, true},   /* vpp 1: (30 + 2) / 4 = 8 a stage, 7 on the first and last */
        {31, 4, 2, true, false},  /* the embedding only */
        {63, 8, 2, false, true},  /* the loss only */
        {32, 4, 2, false, false}, /* neither: the even split */
    };
    for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++) {
        mm_layout lay = {.tp = 1, .pp = cf[i].pp, .vpp = cf[i].vpp, .dp = 1,
                         .embedding_in_split = cf[i].e, .loss_in_split = cf[i].l};
        char why[400] = "";
        ck_assert_msg(mm_layout_split_check(&lay, cf[i].L, why, sizeof why) == 0, "%zu: %s", i, why);
        int sum = 0;
        for (int s = 0; s < cf[i].pp; s++) {
            int stage = 0;
            for (int v = 0; v < cf[i].vpp; v++) {
                int want = mg_build(cf[i].L, cf[i].pp, cf[i].vpp, cf[i].e, cf[i].l, s, v);
                ck_assert_int_eq(mm_layout_chunk_layers(&lay, cf[i].L, s, v), want);
                ck_assert_int_eq((int)mm_layout_chunk_offset(&lay, cf[i].L, s, v),
                                 mg_offset(cf[i].L, cf[i].pp, cf[i].vpp, cf[i].e, cf[i].l, s, v));
                stage += want;
            }
            ck_assert_int_eq(mm_layout_stage_layers(&lay, cf[i].L, s), stage);
            sum += stage;
        }
        ck_assert_int_eq(sum, cf[i].L);
    }
    /* 405B at vpp 8: the ends hold one layer, every other chunk two */
    mm_layout r = {.tp = 8, .pp = 8, .vpp = 8, .dp = 8, .embedding_in_split = true, .loss_in_split = true};
    ck_assert_int_eq(mm_layout_chunk_layers(&r, 126, 0, 0), 1);
    ck_assert_int_eq(mm_layout_chunk_layers(&r, 126, 7, 7), 1);
    ck_assert_int_eq(mm_layout_chunk_layers(&r, 126, 3, 4), 2);
    ck_assert_int_eq(mm_layout_stage_layers(&r, 126, 0), 15);
    ck_assert_int_eq(mm_layout_stage_layers(&r, 126, 1), 16);
}
END_TEST

/* --decoder-first/last-pipeline-num-layers with vpp: every stage in vpp
 * equal chunks; the offsets are get_transformer_layer_offset's interleaved
 * uneven formula: v * (f + mid + l) / vpp + f / vpp + (rank - 1) *
 * (mid / vpp) / middle stages. */
START_TEST(split_first_last_with_chunks)
{
    const int stages[] = {4, 8, 8, 8, 6}; /* 34 layers, pp 5, vpp 2: first 4, last 6 */
    mm_layout lay = {.tp = 1, .pp = 5, .vpp = 2, .dp = 1, .n_layers_per_stage = 5, .layers_per_stage = stages};
    int L = 34, f = 4, l = 6, mid = L - f - l, vpp = 2;
    for (int s = 0; s < 5; s++)
        for (int v = 0; v < vpp; v++) {
            ck_assert_int_eq(mm_layout_chunk_layers(&lay, L, s, v), stages[s] / vpp);
            int total = f / vpp + mid / vpp + l / vpp;
            int want = s == 0 ? v * total : v * total + f / vpp + (s - 1) * (mid / vpp / 3);
            ck_assert_int_eq((int)mm_layout_chunk_offset(&lay, L, s, v), want);
        }
}
END_TEST

/* Activation memory under interleaving with uneven chunks, counted by hand
 * from Megatron-Core's step order (schedules.py: rank k runs 2(p - k - 1) +
 * (v - 1)p warm-up forwards, forward f on chunk (f mod pv) / p, backward b
 * on chunk v - 1 - (b mod pv) / p): 30 layers, pp 4, vpp 2, both options:
 * chunks of 3 + 4 layers on stage 0, 4 + 3 on stage 3; 16 micro-batches.
 * Stage 0 holds forwards 0-10 at its peak (7 of chunk 0, 4 of chunk 1): 37
 * layers and 7 embedding outputs; stage 3's peak is 20 layers (forwards of
 * chunk 0 replacing backwards of its short chunk 1), where whole stages in
 * flight would say 17.5. */
START_TEST(split_memory_counts_chunks)
{
    mm_llm m;
    mm_llm_init_gpt(&m, 4096, 30, 32, 51200, 2048);
    mm_mem_config c = {.lay = {.tp = 8, .pp = 4, .vpp = 2, .dp = 1, .cp = 1, .ep = 1, .embedding_in_split = true,
                               .loss_in_split = true},
                       .sp = true, .zero = 1, .recompute = MM_RECOMPUTE_SELECTIVE, .schedule = MM_MEM_INTERLEAVED,
                       .micro_batches = 16, .micro_batch = 1, .seq = 2048};
    double layer = mm_mem_layer_activations(&m, 1, 2048, 8, true, 1, MM_RECOMPUTE_SELECTIVE);
    double embed = 3.0 * 2048 * 4096 / 8;
    mm_mem_rank r;
    ck_assert_int_eq(mm_mem_llm_rank(&m, &c, 0, &r), 0);
    ck_assert_double_eq_tol(r.activations, 37 * layer + 7 * embed, 1e-9 * r.activations);
    ck_assert_int_eq(mm_mem_llm_rank(&m, &c, 3, &r), 0);
    ck_assert_double_eq_tol(r.activations, 20 * layer, 1e-9 * r.activations);
    /* equal chunks (32 layers, no options): whole stages in flight, as
     * before: stage 3 holds 5 chunk forwards = 2.5 stages of 8 layers */
    mm_llm_init_gpt(&m, 4096, 32, 32, 51200, 2048);
    c.lay.embedding_in_split = c.lay.loss_in_split = false;
    ck_assert_int_eq(mm_mem_llm_rank(&m, &c, 3, &r), 0);
    ck_assert_double_eq_tol(r.activations, 2.5 * 8 * layer, 1e-9 * r.activations);
}
END_TEST

/* A chunk of the embedding (the loss) alone, which Megatron builds when
 * (layers + 2) / (pp vpp) is 1 (get_num_layers_to_build asserts only >= 0):
 * 30 layers at pp 4, vpp 8 are 32 chunks of one, the first and the last
 * with none.  Virtual stage 0 then costs the embedding alone, the last the
 * output layer and loss alone, and the executor runs the pipeline. */
START_TEST(split_chunk_without_layers)
{
    mm_layout lay = {.tp = 2, .pp = 4, .vpp = 8, .dp = 2, .embedding_in_split = true, .loss_in_split = true};
    char why[400] = "";
    ck_assert_msg(mm_layout_split_check(&lay, 30, why, sizeof why) == 0, "%s", why);
    ck_assert_int_eq(mm_layout_chunk_layers(&lay, 30, 0, 0), 0);
    ck_assert_int_eq(mm_layout_chunk_layers(&lay, 30, 3, 7), 0);
    write_file("a.args", "--num-layers 30 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 \\\n"
                         "  --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
                         "--num-virtual-stages-per-pipeline-rank 8 --global-batch-size 64 \\\n"
                         "  --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --set iterations=1 --no-db --json",
                         dir, dir),
                     0);
    ck_assert_msg(jget(out, "iteration_time_s") > 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "\"oom\": false"));
    const char *emb = strstr(out, "\"embedding\": {\"fwd\""), *head = strstr(out, "\"head\": {\"fwd\"");
    const char *v0 = strstr(out, "{\"stage\": 0, \"fwd_s\""), *v31 = strstr(out, "{\"stage\": 31, \"fwd_s\"");
    const char *v1 = strstr(out, "{\"stage\": 1, \"fwd_s\"");
    ck_assert(emb && head && v0 && v1 && v31);
    double e = jget(emb, "total_s"), h = jget(head, "total_s");
    ck_assert_double_eq_tol(jget(v0, "fwd_s"), e, 1e-12 + 1e-9 * e);
    ck_assert_double_eq_tol(jget(v31, "fwd_s"), h, 1e-12 + 1e-9 * h);
    ck_assert(jget(v1, "fwd_s") > e); /* one layer */
}
END_TEST

/* Megatron's refusals (transformer_config.py, arguments.py), each in its
 * meaning; and the chunk of the embedding alone, not modeled. */
START_TEST(split_refusals)
{
    char why[400];
    const int lps[] = {15, 16, 16, 16, 16, 16, 16, 15};
    struct {
        mm_layout lay;
        int L;
        const char *says;
    } bad[] = {
        {{.pp = 8, .vpp = 8, .embedding_in_split = true}, 126, "divisible by pipeline_model_parallel_size"},
        {{.pp = 8, .vpp = 3, .embedding_in_split = true, .loss_in_split = true}, 126,
         "divisible by virtual_pipeline_model_parallel_size"},
        {{.pp = 8, .vpp = 1, .n_layers_per_stage = 8, .layers_per_stage = lps, .loss_in_split = true}, 126,
         "cannot be set together"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        ck_assert_int_eq(mm_layout_split_check(&bad[i].lay, bad[i].L, why, sizeof why), -1);
        ck_assert_msg(strstr(why, bad[i].says), "%zu: %s", i, why);
    }
    /* the scenario key: file, key, exit 2 */
    ck_assert_int_eq(run("run --set model=models/llama-3-8b.json --set parallel.llm.tp=4 --set parallel.llm.pp=4 "
                         "--set parallel.llm.dp=1 --set parallel.llm.vpp=2 --set train.schedule=interleaved "
                         "--set parallel.llm.embedding_in_split=true --no-db"),
                     2);
    ck_assert_msg(strstr(errtxt, "parallel.llm.embedding_in_split") && strstr(errtxt, "pp = 4"), "%s", errtxt);
    ck_assert_int_eq(run("run --set parallel.vision.loss_in_split=true --no-db"), 2);
    ck_assert_msg(strstr(errtxt, "parallel.vision.loss_in_split"), "%s", errtxt);
    /* Megatron-LM arguments: the argument and its line */
    const char *base = "--num-layers 30 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 \\\n";
    struct {
        const char *extra, *key;
    } mg[] = {
        {"  --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 3 "
         "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split\n",
         "--account-for-embedding-in-pipeline-split"},
        {"  --pipeline-model-parallel-size 4 --account-for-loss-in-pipeline-split\n",
         "--account-for-loss-in-pipeline-split"},
        {"  --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
         "--decoder-first-pipeline-num-layers 3\n",
         "--decoder-first-pipeline-num-layers"},
        {"  --pipeline-model-parallel-size 4 --decoder-last-pipeline-num-layers 6 "
         "--account-for-loss-in-pipeline-split\n",
         "--decoder-last-pipeline-num-layers"},
    };
    for (size_t i = 0; i < sizeof mg / sizeof mg[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", base, mg[i].extra);
        write_file("a.args", text);
        ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --set cluster.nodes=4 "
                             "--print-scenario", dir, dir),
                         2);
        ck_assert_msg(strstr(errtxt, mg[i].key) && strstr(errtxt, "a.args:2"), "%zu: %s", i, errtxt);
    }
}
END_TEST

/* --megatron-args: the options map to the keys, with interleaving; the
 * first/last counts with chunks become layers_per_stage. */
START_TEST(split_megatron_args)
{
    const char *base = "--num-layers 30 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 \\\n";
    char text[1024];
    snprintf(text, sizeof text, "%s  --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
                                "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split\n",
             base);
    write_file("a.args", text);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --print-scenario", dir, dir), 0);
    ck_assert_msg(strstr(out, "vpp: 2") && strstr(out, "embedding_in_split: true") &&
                      strstr(out, "loss_in_split: true") && strstr(out, "schedule: interleaved"),
                  "%s", out);
    /* --num-layers-per-virtual-pipeline-stage counts the extras too:
     * (30 + 2) / 4 = 8 a rank, 4 a chunk: vpp 2 */
    snprintf(text, sizeof text, "%s  --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 4 "
                                "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split\n",
             base);
    write_file("a.args", text);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --print-scenario", dir, dir), 0);
    ck_assert_msg(strstr(out, "vpp: 2"), "%s", out);
    /* first 6, last 8 with vpp 2: the middle 16 layers on 2 stages of 8 */
    snprintf(text, sizeof text, "%s  --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
                                "--decoder-first-pipeline-num-layers 6 --decoder-last-pipeline-num-layers 8\n",
             base);
    write_file("a.args", text);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --print-scenario", dir, dir), 0);
    ck_assert_msg(strstr(out, "layers_per_stage: [6, 8, 8, 8]"), "%s", out);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --set iterations=1 "
                         "--set train.global_batch=32 --set network=analytic --no-db --json", dir, dir),
                     0);
    ck_assert_msg(jget(out, "iteration_time_s") > 0, "%s", out);
    /* a launch script: the options through its variables and array, and
     * a refusal naming the script's line */
#define SCRIPT                                                                                              \
    "#!/bin/bash\nPP=4\nVPP=%d\nGPT_ARGS=(\n"                                                                \
    "    --num-layers 30 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16\n"               \
    "    --pipeline-model-parallel-size $PP --num-virtual-stages-per-pipeline-rank $VPP\n"                    \
    "    --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split\n)\n"                \
    "torchrun --nproc_per_node 8 pretrain_gpt.py ${GPT_ARGS[@]}\n"
    snprintf(text, sizeof text, SCRIPT, 2);
    write_file("s.sh", text);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "vpp: 2") && strstr(out, "embedding_in_split: true, loss_in_split: true"), "%s", out);
    snprintf(text, sizeof text, SCRIPT, 3); /* 32 / 4 = 8 layers a rank: not in 3 chunks */
    write_file("s.sh", text);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:7: key '--account-for-embedding-in-pipeline-split'"), "%s", errtxt);
}
END_TEST

/* The planner's split at vpp > 1: the options where (L + 2) / (pp vpp)
 * divides; at vpp 1 per-stage counts as before. */
START_TEST(split_planner)
{
    int f, m, l;
    ck_assert_int_eq(mm_space_split_layers(126, 8, 8, &f, &m, &l), 2);
    ck_assert_int_eq(f, 15);
    ck_assert_int_eq(m, 16);
    ck_assert_int_eq(l, 15);
    ck_assert_int_eq(mm_space_split_layers(126, 8, 1, &f, &m, &l), 0);
    ck_assert(f == 15 && m == 16 && l == 15);
    ck_assert_int_eq(mm_space_split_layers(128, 8, 8, &f, &m, &l), 1);
    /* 30 layers, pp 4, vpp 8: one a chunk, the embedding's and the loss's
     * chunks without a layer (Megatron allows them) */
    ck_assert_int_eq(mm_space_split_layers(30, 4, 8, &f, &m, &l), 2);
    ck_assert(f == 7 && m == 8 && l == 7);
    /* 126 layers, pp 8, vpp 3: 16 a rank do not make 3 chunks */
    ck_assert_int_ne(mm_space_split_layers(126, 8, 3, &f, &m, &l), 2);
    /* a plan of Qwen2.5-7B's 28 layers at pp 3, vpp 2: (28 + 2) / 6 = 5 a
     * chunk, the options; its simulated time is what `mmsim run` with the
     * candidate's sets gives */
    const char *base = "--set model=models/qwen2.5-7b.json --set cluster.nodes=3 --set workload=text "
                       "--set train.global_batch=48";
    ck_assert_int_eq(run("plan %s --gpus 24 --space pp=3 --space vpp=2 --space cp=8 --space micro_batch=4 "
                         "--space zero=0 --space recompute=none --top 1 --no-db --json", base),
                     0);
    ck_assert_msg(strstr(out, "\"layout\": \"llm tp1 pp3 vpp2 cp8 dp1 ep1 split +emb +loss"), "%s", out);
    double planned = jget(out, "iteration_time_s");
    const char *q = strstr(out, "\"sets\": [");
    ck_assert_ptr_nonnull(q);
    char sets[2048] = "";
    size_t n = 0;
    for (q = strchr(q, '[') + 1; *q && *q != ']';) {
        const char *a = strchr(q, '"'), *b = a ? strchr(a + 1, '"') : NULL;
        if (!a || !b)
            break;
        n += (size_t)snprintf(sets + n, sizeof sets - n, " --set %.*s", (int)(b - a - 1), a + 1);
        q = b + 1;
    }
    ck_assert_ptr_nonnull(strstr(sets, "parallel.llm.embedding_in_split=true"));
    ck_assert_int_eq(run("run %s%s --no-db --json", base, sets), 0);
    ck_assert_double_eq_tol(jget(out, "iteration_time_s"), planned, 1e-9 * planned);
}
END_TEST

/* Megatron-Bridge's Llama 3.1 405B recipe (tests/data/megatron/
 * llama31-405b.args, 1,024 H100s): it maps; every chunk costs its own
 * layers (the first chunk of rank 0 one layer and the embedding, the last
 * of rank 7 one layer and the output layer and loss); it fits (gradients
 * in bf16, as the recipe reduces them) and the executor runs it, each rank
 * busy in proportion to its chunks' compute; with fp32 gradients (Megatron-
 * LM without --grad-reduce-in-bf16) stage 1 holds 2 bytes more per
 * parameter.  A batch of 128 keeps the test short: 16 micro-batches per
 * replica already reach every stage's peak (at most 71 chunks in flight). */
START_TEST(split_llama31_405b_recipe)
{
    const char *args = "run --megatron-args tests/data/megatron/llama31-405b.args --set cluster.nodes=128";
    ck_assert_int_eq(run("%s --print-scenario", args), 0);
    const char *want[] = {"tp: 8, pp: 8, cp: 2, dp: 8, vpp: 8", "embedding_in_split: true", "loss_in_split: true",
                          "schedule: interleaved", "seq_len: 8192", "global_batch: 1536", "grad_reduce: bf16"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "missing '%s' in:\n%s", want[i], out);
    ck_assert_int_eq(run("%s --set train.global_batch=128 --set iterations=1 --no-db --json", args), 0);
    ck_assert_msg(jget(out, "iteration_time_s") > 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "\"oom\": false"));
    ck_assert_int_eq((int)jget(out, "gpus"), 1024);
    /* the breakdown's virtual stages: chunk v of rank s is v * 8 + s */
    const char *p = strstr(out, "\"stages\": [\n");
    ck_assert_ptr_nonnull(p);
    double fwd[64], pass[64];
    for (int k = 0; k < 64; k++) {
        char key[32];
        snprintf(key, sizeof key, "{\"stage\": %d, \"fwd_s\"", k);
        const char *q = strstr(p, key);
        ck_assert_ptr_nonnull(q);
        fwd[k] = jget(q, "fwd_s");
        pass[k] = fwd[k] + jget(q, "bgrad_s") + jget(q, "wgrad_s");
    }
    /* a middle chunk is two layers; the ends one (+ embedding, + head) */
    double layer = fwd[1] / 2;
    ck_assert_double_eq_tol(fwd[9], fwd[1], 1e-12);
    ck_assert(fwd[0] > layer && fwd[0] < 1.05 * layer);
    ck_assert(fwd[63] > layer && fwd[63] < fwd[1]);
    /* ranks busy in proportion to their chunks (2 %: the busy time also
     * holds the TP collectives the compute stream waits on) */
    double r0 = 0, r1 = 0;
    for (int v = 0; v < 8; v++)
        r0 += pass[v * 8], r1 += pass[v * 8 + 1];
    const char *s0 = strstr(out, "{\"stage\": 0, \"busy_s\""), *s1 = strstr(out, "{\"stage\": 1, \"busy_s\"");
    ck_assert(s0 && s1);
    double b0 = jget(s0, "busy_s"), b1 = jget(s1, "busy_s");
    ck_assert_double_eq_tol(b0 / b1, r0 / r1, 0.02);
    ck_assert(b0 < b1);
    double bf16_gib = jget(s1, "memory_gib");
    /* fp32 gradients: 16 layers of 3,187,703,808 parameters (q, o: h^2; k,
     * v: h x 1024; SwiGLU 3 x h x 53248; two norms) over tp 8, 2 bytes more
     * each; over the H100's 74.5 GiB less the 2 GiB reserve */
    ck_assert_int_eq(run("%s --set train.global_batch=128 --set train.grad_reduce=fp32 --set iterations=1 --no-db "
                         "--json", args),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "\"oom\": true"));
    s1 = strstr(out, "{\"stage\": 1, \"busy_s\"");
    ck_assert_ptr_nonnull(s1);
    double h = 16384, layer_params = 2 * h * h + 2 * h * 1024 + 3 * h * 53248 + 2 * h;
    ck_assert_double_eq_tol(jget(s1, "memory_gib") - bf16_gib, 16 * layer_params / 8 * 2 / (1 << 30), 1e-5);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("split");
    TCase *tc = tcase_create("split");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, split_chunks_follow_megatron);
    tcase_add_test(tc, split_first_last_with_chunks);
    tcase_add_test(tc, split_memory_counts_chunks);
    tcase_add_test(tc, split_chunk_without_layers);
    tcase_add_test(tc, split_refusals);
    tcase_add_test(tc, split_megatron_args);
    tcase_add_test(tc, split_planner);
    tcase_add_test(tc, split_llama31_405b_recipe);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
