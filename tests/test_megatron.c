/* test_megatron.c - Megatron-LM argument lists in (tests/data/megatron/,
 * written for the tests with the hyperparameters of NVIDIA/Megatron-LM's
 * public launch scripts): the argument files, the launch scripts and their
 * shell, as mmsim reads them. */
#include "scenario/megatron.h"
#include "scenario/megatron_args.h"
#include "scenario/megatron_mm.h"
#include "interop_common.h"

/* ---- Megatron-LM arguments ------------------------------------------------ */

/* examples/gpt3/train_gpt3_175b_distributed.sh: the mapping, and the model
 * it makes has Narayanan et al.'s parameter count exactly:
 * P = 12lh^2 + 13lh + (V + s)h + 2h (GPT-2 layout: biases, learned
 * positions, tied head, final LayerNorm), with V = 50257 padded to 51200. */
START_TEST(megatron_gpt3_175b)
{
    ck_assert_int_eq(run("run --megatron-args tests/data/megatron/gpt3-175b.args --megatron-model %s/gpt3.json "
                         "--set cluster.nodes=16 --print-scenario", dir),
                     0);
    const char *want[] = {"tp: 8", "pp: 16", "dp: 1", "precision: fp16", "seq_len: 2048", "global_batch: 1536",
                          "micro_batch: 1", "recompute: none", "zero: 0", "workload: text", "schedule: 1f1b",
                          "--fp16 -> train.precision: fp16", "--lr: costless", "--save: costless",
                          "vocabulary padded 50257 -> 51200", "(world size 128 GPUs) -> parallel.llm.dp: 1"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "missing '%s' in:\n%s", want[i], out);
    ck_assert_int_eq(run("model %s/gpt3.json --seq 2048 --json", dir), 0);
    double l = 96, h = 12288, V = 51200, s = 2048;
    ck_assert_double_eq(jget(out, "params"), 12 * l * h * h + 13 * l * h + (V + s) * h + 2 * h);
    /* it runs: 128 GPUs, and tokens/s is tokens over the iteration time */
    ck_assert_int_eq(run("run --megatron-args tests/data/megatron/gpt3-175b.args --megatron-model %s/gpt3.json "
                         "--set cluster.nodes=16 --set train.global_batch=32 --set iterations=1 "
                         "--set train.recompute=full --no-db --json",
                         dir),
                     0);
    double t = jget(out, "iteration_time_s");
    ck_assert_msg(t > 0, "%s", out);
    ck_assert_int_eq((int)jget(out, "gpus"), 128);
    ck_assert_double_eq_tol(jget(out, "tokens_per_s"), 32 * 2048 / t, 1e-6 * 32 * 2048 / t);
    ck_assert_ptr_nonnull(strstr(out, "\"oom\": false"));
}
END_TEST

/* The same argument list as a scenario source of the library, without the
 * CLI (the C API and the planner can use it): the degrees, the world
 * size's dp (128 GPUs / (8 x 16)), the model inline in the scenario (its
 * canonical text carries it), the user's --set last; a layout that does
 * not divide the cluster names the argument's line. */
START_TEST(megatron_as_a_library_source)
{
    static mm_megatron mg;
    mm_scenario sc;
    mm_err err;
    mm_err_clear(&err);
    const char *sets[] = {"cluster.nodes=32", "train.micro_batch=2"};
    ck_assert_int_eq(mm_megatron_scenario("tests/data/megatron/gpt3-175b.args", NULL, sets, 2, &mg, &sc, &err), 0);
    ck_assert_int_eq(sc.parallel.llm.lay.tp, 8);
    ck_assert_int_eq(sc.parallel.llm.lay.pp, 16);
    ck_assert_int_eq(sc.parallel.llm.lay.dp, 2); /* 256 GPUs / 128 */
    ck_assert_int_eq((int)sc.train.micro_batch, 2);
    ck_assert_int_eq((int)sc.train.seq_len, 2048);
    ck_assert(mm_scenario_model_inline(&sc));
    ck_assert_str_eq(sc.model, "");
    char *canon = mm_scenario_canonical_alloc(&sc);
    ck_assert_ptr_nonnull(canon);
    ck_assert_msg(strstr(canon, "model:\n  _name_or_path: megatron-gpt3-175b\n") &&
                      strstr(canon, "\n  n_embd: 12288\n") && strstr(canon, "\n  n_layer: 96\n"),
                  "%s", canon);
    /* the canonical text reads back to itself, model included */
    mm_scenario back;
    ck_assert_int_eq(mm_scenario_load_text(&back, "<text>", canon, NULL, 0, &err), 0);
    char *again = mm_scenario_canonical_alloc(&back);
    ck_assert_str_eq(canon, again);
    free(again);
    free(canon);
    mm_scenario_free(&back);
    mm_scenario_free(&sc);
    const char *odd[] = {"cluster.nodes=3"}; /* 24 GPUs: tp x pp = 128 does not divide them */
    memset(&mg, 0, sizeof mg);
    ck_assert_int_eq(mm_megatron_scenario("tests/data/megatron/gpt3-175b.args", NULL, odd, 1, &mg, &sc, &err),
                     -MM_EINPUT);
    ck_assert_str_eq(err.file, "tests/data/megatron/gpt3-175b.args");
    ck_assert_str_eq(err.key, "--tensor-model-parallel-size");
    ck_assert_int_gt(err.line, 0);
}
END_TEST

/* JSON output without the lines that name the inputs or time the run. */
static void numbers_only(const char *json, char *outbuf, size_t len)
{
    size_t n = 0;
    for (const char *p = json; *p;) {
        size_t l = strcspn(p, "\n");
        const char *names[] = {"  \"scenario\":", "  \"model\":", "  \"wall_s\":"};
        bool skip = false;
        for (size_t i = 0; i < 3; i++)
            skip = skip || !strncmp(p, names[i], strlen(names[i]));
        if (!skip && n + l + 2 < len) {
            memcpy(outbuf + n, p, l);
            n += l;
            outbuf[n++] = '\n';
        }
        p += l + (p[l] == '\n');
    }
    outbuf[n] = '\0';
}

/* The model inline (what --megatron-args makes) runs exactly as the same
 * config read from a file: every number of --json the same, bit for bit;
 * and no model file is written unless --megatron-model asks for one. */
START_TEST(megatron_inline_model_is_the_file_model)
{
    static char a[1 << 16], b[1 << 16];
    char args[512], stray[600];
    snprintf(args, sizeof args, "%s/inline-probe.args", dir);
    FILE *in = fopen("tests/data/megatron/llama3-8b.args", "r");
    FILE *o = fopen(args, "w");
    ck_assert(in && o);
    int c;
    while ((c = fgetc(in)) != EOF)
        fputc(c, o);
    fclose(in);
    fclose(o);
    const char *common = "--set cluster.nodes=2 --set parallel.llm.pp=2 --set train.global_batch=16 "
                         "--set iterations=2 --no-db --json";
    ck_assert_int_eq(run("run --megatron-args %s %s", args, common), 0);
    numbers_only(out, a, sizeof a);
    snprintf(stray, sizeof stray, "results/megatron-inline-probe.json");
    ck_assert_int_ne(access(stray, F_OK), 0);
    ck_assert_int_eq(run("run --megatron-args %s --megatron-model %s/m.json --print-scenario", args, dir), 0);
    ck_assert_ptr_nonnull(strstr(out, "model:\n  _name_or_path: megatron-inline-probe\n"));
    ck_assert_ptr_null(strstr(out, "model file written"));
    /* the same config from the file --megatron-model wrote: the user's --set model= wins */
    ck_assert_int_eq(run("run --megatron-args %s --set model=%s/m.json %s", args, dir, common), 0);
    numbers_only(out, b, sizeof b);
    ck_assert_msg(jget(a, "iteration_time_s") > 0, "%s", a);
    size_t d = 0;
    while (a[d] && a[d] == b[d])
        d++;
    ck_assert_msg(!a[d] && !b[d], "inline and file runs differ at byte %zu: '%.80s' vs '%.80s'", d, a + d, b + d);
}
END_TEST

/* examples/llama/train_llama3_8b_h100_fp8.sh as a backslash-continued
 * command line: GQA 32/8, SwiGLU 14336, untied, vocab 128256 give
 * Llama 3 8B's 8,030,261,248 parameters (meta-llama/Meta-Llama-3-8B). */
START_TEST(megatron_llama3_8b)
{
    ck_assert_int_eq(run("run --megatron-args tests/data/megatron/llama3-8b.args --megatron-model %s/l3.json "
                         "--print-scenario --set train.recompute=full",
                         dir),
                     0);
    /* --sequence-parallel at tp 1: off, as Megatron-LM turns it off */
    const char *want[] = {"precision: fp8", "sequence_parallel: false", "zero: 1", "overlap_grad_reduce: true",
                          "overlap_param_gather: true", "attention: cudnn", "seq_len: 8192", "recompute: full",
                          "dp: 16", "--rotary-base: costless", "--sequence-parallel at tp 1: off"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "missing '%s' in:\n%s", want[i], out);
    ck_assert_int_eq(run("model %s/l3.json --seq 8192 --json", dir), 0);
    ck_assert_double_eq(jget(out, "params"), 8030261248.0);
}
END_TEST

/* What changes the cost and is not modeled is refused by name and line;
 * shell variables are refused where they matter and left alone elsewhere. */
START_TEST(megatron_refusals)
{
    const char *base = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 \\\n";
    struct {
        const char *extra, *key, *where;
    } bad[] = {
        {"  --fp8-output-proj\n", "--fp8-output-proj", "a.args:2"},
        {"  --fp8-param-gather\n", "--fp8-param-gather", "a.args:2: key '--fp8-param-gather': given without --fp8-format"},
        {"  --num-query-groups $GROUPS --group-query-attention\n", "$GROUPS", "a.args:2"},
        {"  --frobnicate 3\n", "--frobnicate", "a.args:2"},
        {"  --recompute-granularity full --recompute-method block\n", "--recompute-method", "a.args:2"},
        {"  --tensor-model-parallel-size 3\n", "--tensor-model-parallel-size", "a.args:2"},
        /* a scenario rule broken by a mapped value names the argument and its line */
        {"  --global-batch-size 30\n", "(from --global-batch-size)", "a.args:2: key 'train.global_batch'"},
        {"  ${EXTRA_ARGS[@]}\n", "EXTRA_ARGS", "a.args:2"},
        {"  --swiglu\n", "--swiglu", "a.args:2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", base, bad[i].extra);
        write_file("a.args", text);
        ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --print-scenario", dir, dir),
                         2);
        ck_assert_msg(strstr(errtxt, bad[i].key) && strstr(errtxt, bad[i].where), "%zu: %s", i, errtxt);
    }
    /* the FP8 recipe and FP8 primary weights map under --fp8-format;
     * Megatron's tensorwise is TE's current scaling */
    write_file("a.args", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 \\\n"
                         "  --fp8-format hybrid --fp8-recipe tensorwise --fp8-param-gather\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --print-scenario", dir, dir), 0);
    ck_assert_msg(strstr(out, "fp8_recipe: current") && strstr(out, "fp8_param_gather: true"), "%s", out);
    write_file("a.args", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 \\\n"
                         "  --fp8-format hybrid --fp8-recipe custom\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --print-scenario", dir, dir), 2);
    ck_assert_msg(strstr(errtxt, "a.args:2: key '--fp8-recipe'"), "%s", errtxt);
    /* no precision flag: Megatron would train in FP32 */
    write_file("a.args", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json", dir, dir), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "FP32"));
    /* a variable in an ignored argument is left alone; --set still applies */
    write_file("a.args", "# comment\nARGS=(\n  --num-layers 4 --hidden-size 1024 # four layers\n"
                         "  --num-attention-heads 16 --seq-length=1024 --bf16\n  --save $CKPT\n)\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --megatron-model %s/m.json --set parallel.llm.tp=2 "
                         "--print-scenario",
                         dir, dir),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "tp: 2"));
    ck_assert_ptr_nonnull(strstr(out, "dp: 8"));
    /* --transformer-impl local: megatron-local where the scenario has
     * train.framework, else refused naming the argument */
    write_file("a.args", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 "
                         "--transformer-impl local\n");
    int rc = run("run --megatron-args %s/a.args --megatron-model %s/m.json --print-scenario", dir, dir);
    if (rc == 0)
        ck_assert_ptr_nonnull(strstr(out, "megatron-local"));
    else
        ck_assert_msg(rc == 2 && strstr(errtxt, "--transformer-impl") && strstr(errtxt, "train.framework"), "%s",
                      errtxt);
    ck_assert_int_eq(run("run --print-scenario"), 2);
}
END_TEST

/* Every argument mmsim cannot take is named in one message, with its
 * line; what costs nothing is accepted; synonyms and the FSDP sharding
 * map; the table is sorted and complete for what it classifies. */
START_TEST(megatron_one_message_and_costless)
{
    const char *base = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 \\\n";
    const char *costless = "  --log-params-norm --eod-mask-loss --moe-aux-loss-coeff 0.01 --no-load-optim \\\n"
                           "  --inference-max-requests 8 --log-interval 10 --save-interval 5 --eval-interval 100 \\\n"
                           "  --ckpt-format torch_dist --tokenizer-model $TOK --lr-warmup-iters 10\n";
    char text[2048];
    snprintf(text, sizeof text, "%s  --frobnicate 3 \\\n  --fp8-output-proj --ddp-bucket-size 1000 \\\n%s", base,
             costless);
    write_file("a.args", text);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 2);
    const char *want[] = {"a.args:2: key '--frobnicate'", "3 arguments mmsim cannot take", "line 2 --frobnicate",
                          "line 3 --fp8-output-proj", "line 3 --ddp-bucket-size"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(errtxt, want[i]), "missing '%s' in: %s", want[i], errtxt);
    const char *quiet[] = {"--log-params-norm", "--eod-mask-loss", "--moe-aux-loss-coeff", "--no-load-optim",
                           "--inference-max-requests", "--tokenizer-model"};
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++)
        ck_assert_msg(!strstr(errtxt, quiet[i]), "costless '%s' refused: %s", quiet[i], errtxt);
    /* one message: one line of error */
    const char *nl = strchr(errtxt, '\n');
    ck_assert_msg(!nl || !nl[1], "more than one line: %s", errtxt);
    snprintf(text, sizeof text, "%s%s", base, costless);
    write_file("a.args", text);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 0);
    ck_assert_ptr_nonnull(strstr(out, "--log-params-norm: costless"));
    /* the older spelling of RoPE; Megatron FSDP shards as its strategy says */
    write_file("a.args", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 "
                         "--use-rotary-position-embeddings --swiglu --use-megatron-fsdp --tensor-model-parallel-size 2 "
                         "--sequence-parallel\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "model_type: llama") && strstr(out, "zero: 3") && strstr(out, "sequence_parallel: true"),
                  "%s", out);
    write_file("a.args", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 "
                         "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "zero: 2"), "%s", out);
    /* --freeze-LM freezes the LLM: in a text-only model nothing is left to train */
    write_file("a.args", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 "
                         "--freeze-LM\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "a.args:1: key 'train.frozen'") && strstr(errtxt, "(from --freeze-LM)"), "%s", errtxt);
    /* an uneven first and last stage, the middle ones sharing the rest, as
     * Megatron-Core's get_num_layers_to_build splits 30 layers over 4 stages */
    write_file("a.args", "--num-layers 30 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 "
                         "--pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 6\n"
                         "--decoder-last-pipeline-num-layers 4\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "layers_per_stage: [6, 10, 10, 4]"), "%s", out);
    write_file("a.args", "--num-layers 30 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16 "
                         "--pipeline-model-parallel-size 4\n--decoder-first-pipeline-num-layers 7\n");
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "a.args:2: key '--decoder-first-pipeline-num-layers'") &&
                      strstr(errtxt, "23 layers left for the 3 other stages"),
                  "%s", errtxt);
    /* the table: sorted, unique, a reason for every argument not mapped */
    ck_assert_uint_gt(mm_mg_n_args, 800);
    for (size_t i = 0; i < mm_mg_n_args; i++) {
        const mm_mg_arg *a = &mm_mg_args[i];
        ck_assert_msg(i == 0 || strcmp(mm_mg_args[i - 1].name, a->name) < 0, "not sorted at %s", a->name);
        ck_assert_msg((a->cls == MG_MAPPED) == (a->why == NULL), "%s", a->name);
        ck_assert_ptr_eq(mm_mg_arg_find(a->name), a);
    }
    ck_assert_ptr_null(mm_mg_arg_find("--frobnicate"));
    /* the multimodal example's table the same way: multimodal_args.py's 99
     * arguments and the core ones train.py gives a meaning of its own */
    ck_assert_uint_ge(mm_mg_n_mm_args, 99);
    for (size_t i = 0; i < mm_mg_n_mm_args; i++) {
        const mm_mg_arg *a = &mm_mg_mm_args[i];
        ck_assert_msg(i == 0 || strcmp(mm_mg_mm_args[i - 1].name, a->name) < 0, "not sorted at %s", a->name);
        ck_assert_msg((a->cls == MG_MAPPED) == (a->why == NULL), "%s", a->name);
        ck_assert_ptr_eq(mm_mg_mm_arg_find(a->name), a);
    }
    ck_assert_ptr_null(mm_mg_mm_arg_find("--num-layers")); /* the core table's row stands */
}
END_TEST

/* Launch scripts read without running them (tests/data/megatron/scripts/,
 * written for the tests with the hyperparameters of Megatron-LM's
 * examples at d98e8a64dd): variables, defaults, arrays (+=), quoted
 * strings split into arguments, torchrun's options before the entry
 * script; what a script does that mmsim cannot read is refused naming its
 * line, and so is an entry script other than pretrain_gpt.py. */
START_TEST(megatron_launch_scripts)
{
    const char *S = "tests/data/megatron/scripts/";
    /* GPT-3 175B: the arrays' values, each argument's line */
    ck_assert_int_eq(run("run --megatron-script %sgpt3-175b.sh --set cluster.nodes=16 --print-scenario", S), 0);
    const char *gpt[] = {"tp: 8, pp: 16", "dp: 1", "precision: fp16", "seq_len: 2048", "global_batch: 1536",
                         "n_layer: 96", "n_embd: 12288", "n_head: 96", "_name_or_path: megatron-gpt3-175b",
                         "entry script pretrain_gpt.py (line 34)", "--save: costless"};
    for (size_t i = 0; i < sizeof gpt / sizeof gpt[0]; i++)
        ck_assert_msg(strstr(out, gpt[i]), "missing '%s' in:\n%.3000s", gpt[i], out);
    /* the same model and layout as the argument list of the same example */
    static char a[1 << 16];
    char *m1 = strstr(out, "\nmodel:\n");
    ck_assert_ptr_nonnull(m1);
    snprintf(a, sizeof a, "%s", m1);
    ck_assert_int_eq(run("run --megatron-args tests/data/megatron/gpt3-175b.args --set cluster.nodes=16 "
                         "--print-scenario"), 0);
    char *m2 = strstr(out, "\nmodel:\n");
    ck_assert_ptr_nonnull(m2);
    /* the same text (the two files have the same stem, so the same model name) */
    ck_assert_msg(!strcmp(a, m2), "the script's scenario differs from the argument list's");
    /* Llama 3 8B in the one-string form: split into arguments */
    ck_assert_int_eq(run("run --megatron-script %sllama3-8b.sh --print-scenario", S), 0);
    const char *llama[] = {"num_key_value_heads: 8", "intermediate_size: 14336", "vocab_size: 128256",
                           "precision: fp8", "seq_len: 8192", "global_batch: 128", "attention: cudnn", "zero: 1",
                           "sequence_parallel: false", "--mock-data: costless"};
    for (size_t i = 0; i < sizeof llama / sizeof llama[0]; i++)
        ck_assert_msg(strstr(out, llama[i]), "missing '%s' in:\n%.3000s", llama[i], out);
    ck_assert_int_eq(run("model %sllama3-8b.sh --json", S), 2); /* a script is no model file */
    ck_assert_int_eq(run("run --megatron-script %sllama3-8b.sh --megatron-model %s/l3.json --print-scenario", S, dir),
                     0);
    ck_assert_int_eq(run("model %s/l3.json --seq 8192 --json", dir), 0);
    ck_assert_double_eq(jget(out, "params"), 8030261248.0);
    /* Mixtral 8x7B: pp 4 x ep 8 needs dp 8 (32 GPUs); its kernel and
     * dispatch switches are what mmsim models or cost nothing */
    ck_assert_int_eq(run("run --megatron-script %smixtral-8x7b.sh --print-scenario", S), 2);
    ck_assert_msg(strstr(errtxt, "mixtral-8x7b.sh:17: key 'parallel.llm.ep'"), "%s", errtxt);
    ck_assert_int_eq(run("run --megatron-script %smixtral-8x7b.sh --set cluster.nodes=4 --print-scenario", S), 0);
    const char *mix[] = {"num_local_experts: 8", "num_experts_per_tok: 2", "llm: {tp: 1, pp: 4, cp: 1, dp: 8,",
                         "ep: 8", "--no-masked-softmax-fusion: costless", "--moe-grouped-gemm -> moe.grouped_gemm: true",
                         "--moe-token-dispatcher-type -> moe.dispatcher: alltoall", "--moe-aux-loss-coeff: costless"};
    for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++)
        ck_assert_msg(strstr(out, mix[i]), "missing '%s' in:\n%.3000s", mix[i], out);
    /* experts without grouped GEMM: SequentialMLP, modeled; another
     * dispatcher at ep > 1, the softmax switch under Megatron's own
     * attention: refused by name */
    const char *moe = "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --bf16 "
                      "--position-embedding-type rope --swiglu --num-experts 4 --vocab-size 1024";
    write_file("a.args", moe);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "grouped_gemm: false"), "%s", out);
    char t[1024];
    snprintf(t, sizeof t, "%s --moe-grouped-gemm --expert-model-parallel-size 2\n", moe);
    write_file("a.args", t);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "key '--expert-model-parallel-size'") && strstr(errtxt, "allgather token dispatcher"),
                  "%s", errtxt);
    snprintf(t, sizeof t, "%s --moe-grouped-gemm\n", moe); /* ep 1: the default dispatcher permutes locally */
    write_file("a.args", t);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 0);
    ck_assert_ptr_nonnull(strstr(out, "-> moe.dispatcher: allgather"));
    snprintf(t, sizeof t, "%s --moe-grouped-gemm --no-masked-softmax-fusion --transformer-impl local\n", moe);
    write_file("a.args", t);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "key '--no-masked-softmax-fusion'") && strstr(errtxt, "own attention"), "%s",
                  errtxt);
    /* refusals naming the line */
    struct {
        const char *file, *where;
    } bad[] = {
        {"bert.sh", "bert.sh:6: key 'pretrain_bert.py'"},
        {"loop.sh", "loop.sh:5: key 'for'"},
        {"subst.sh", "subst.sh:7: key '--num-layers'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(run("run --megatron-script %s%s --print-scenario", S, bad[i].file), 2);
        ck_assert_msg(strstr(errtxt, bad[i].where), "%s: %s", bad[i].file, errtxt);
    }
    /* an unassigned variable where a number is needed, named; a second launch; none */
    write_file("s.sh", "L=4\ntorchrun pretrain_gpt.py --num-layers $L --hidden-size $H \\\n"
                       "  --num-attention-heads 16 --seq-length 1024 --bf16 --save $CKPT\n");
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:2: key '--hidden-size'") && strstr(errtxt, "'$H'") &&
                      !strstr(errtxt, "--num-layers") && !strstr(errtxt, "--save"),
                  "%s", errtxt);
    write_file("s.sh", "A='--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16'\n"
                       "python pretrain_gpt.py $A\npython pretrain_gpt.py $A\n");
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:3:") && strstr(errtxt, "second launch") && strstr(errtxt, "line 2"), "%s",
                  errtxt);
    /* declarations assign too, arrays included; unset empties */
    write_file("s.sh", "export A=--fp16 B C=(--bf16 --seq-length 1024)\ndeclare -a D=(--num-layers 2)\nunset A\n"
                       "python pretrain_gpt.py $A ${C[@]} ${D[@]} --hidden-size 64 --num-attention-heads 4\n");
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "n_layer: 2") && strstr(out, "seq_len: 1024") && strstr(out, "precision: bf16"), "%s",
                  out);
    write_file("s.sh", "echo nothing to see\n");
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "no launch command"));
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --megatron-args %s/s.sh", dir, dir), 2);
}
END_TEST

/* Megatron-LM's own example launch scripts at commit d98e8a64dd, restated
 * for the tests (tests/data/megatron/scripts/ex-*.sh; each names its
 * source): each is read as it is written, with its arithmetic, command
 * substitutions, if/case and guards, and gives the model and layout it
 * trains or is refused by name. */
START_TEST(megatron_example_scripts)
{
    const char *S = "tests/data/megatron/scripts/";
    /* GPT-3 175B: 96 x 12288, 96 heads, 2048 tokens, 1 x 1536, fp16, tp 8 x pp 16
     * (the script's one node is too few for tp x pp = 128 GPUs: 16 nodes) */
    ck_assert_int_eq(run("run --megatron-script %sex-gpt3-175b.sh --print-scenario", S), 2);
    ck_assert_msg(strstr(errtxt, "ex-gpt3-175b.sh:33: key '--tensor-model-parallel-size'"), "%s", errtxt);
    ck_assert_int_eq(run("run --megatron-script %sex-gpt3-175b.sh --set cluster.nodes=16 --megatron-model %s/g.json "
                         "--print-scenario", S, dir), 0);
    const char *gpt[] = {"n_layer: 96", "n_embd: 12288", "n_head: 96", "seq_len: 2048", "global_batch: 1536",
                         "micro_batch: 1", "precision: fp16", "llm: {tp: 8, pp: 16, cp: 1, dp: 1,", "ep: 1",
                         "entry script pretrain_gpt.py (line 41)", "--step-batch-size-schedule: costless"};
    for (size_t i = 0; i < sizeof gpt / sizeof gpt[0]; i++)
        ck_assert_msg(strstr(out, gpt[i]), "missing '%s' in:\n%.3000s", gpt[i], out);
    ck_assert_int_eq(run("model %s/g.json --json", dir), 0);
    ck_assert_double_eq(jget(out, "params"), 174615846912.0); /* 12lh^2 + 13lh + (V+s)h + 2h, V padded to 51200 */

    /* refused by name: what each trains that mmsim does not model */
    struct {
        const char *file, *where, *what;
    } ex[] = {
        {"ex-mixtral-8x7b.sh", "ex-mixtral-8x7b.sh:37: key '--tokenizer-type'", "give --vocab-size"},
        {"ex-fsdp-llama3-8b-fp8.sh", "ex-fsdp-llama3-8b-fp8.sh:75: key '--use-nccl-ub'",
         "3 arguments mmsim cannot take: line 75 --use-nccl-ub"},
        {"ex-fsdp-llama3-8b-fp8.sh", ": 3 arguments", "line 76 --fsdp-double-buffer"},
        {"ex-bert-340m.sh", "ex-bert-340m.sh:31: key 'pretrain_bert.py'", "BERT pretraining"},
        {"ex-t5-220m.sh", "ex-t5-220m.sh:45: key 'pretrain_t5.py'", "T5 pretraining (encoder-decoder) is not modeled"},
        {"ex-mamba-hybrid.sh", "ex-mamba-hybrid.sh:66: key '../../pretrain_hybrid.py'",
         "hybrid Mamba-Transformer models are not modeled"},
        {"ex-gptoss.sh", "ex-gptoss.sh:16: key 'while'", "bash control flow (`while`)"},
        {"ex-detoxify-gpt-1.3b.sh", "ex-detoxify-gpt-1.3b.sh:28: key 'examples/detxoify_lm/finetune_gpt.py'",
         "an entry script mmsim does not know"},
        {"ex-mistral-clip-pretrain.sh", "ex-mistral-clip-pretrain.sh:68: key '--tokenizer-type'", "give --vocab-size"},
        {"ex-nvlm-qwen20-72b.sh", "ex-nvlm-qwen20-72b.sh:68: key '--tokenizer-type'", "give --vocab-size"},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        ck_assert_int_eq(run("run --megatron-script %s%s --print-scenario", S, ex[i].file), 2);
        ck_assert_msg(strstr(errtxt, ex[i].where) && strstr(errtxt, ex[i].what), "%s: %s", ex[i].file, errtxt);
    }
    /* the Llama example runs as written: Llama 3 8B at tp 1 on 8 GPUs, FP8
     * primary weights and the bf16 gradient reduction mapped */
    ck_assert_int_eq(run("run --megatron-script %sex-llama3-8b-fp8.sh --set cluster.nodes=1 --print-scenario", S),
                     0);
    const char *llama[] = {"num_hidden_layers: 32", "hidden_size: 4096", "num_attention_heads: 32",
                           "num_key_value_heads: 8", "intermediate_size: 14336", "vocab_size: 128256",
                           "seq_len: 8192", "global_batch: 128", "micro_batch: 1", "precision: fp8",
                           "llm: {tp: 1, pp: 1, cp: 1, dp: 8,", "attention: cudnn", "--mock-data: costless",
                           "fp8_param_gather: true", "--fp8-param-gather -> train.fp8_param_gather: true",
                           "grad_reduce: bf16", "--grad-reduce-in-bf16 -> train.grad_reduce: bf16",
                           "--split: costless"};
    for (size_t i = 0; i < sizeof llama / sizeof llama[0]; i++)
        ck_assert_msg(strstr(out, llama[i]), "missing '%s' in:\n%.3000s", llama[i], out);
    /* the Mixtral example with the vocabulary its tokenizer file holds
     * (32,000) runs on 32 GPUs: pp 4, ep 8, dp 8 */
    static char text[1 << 16], edited[1 << 16];
    FILE *in = fopen("tests/data/megatron/scripts/ex-mixtral-8x7b.sh", "r");
    ck_assert_ptr_nonnull(in);
    size_t n = fread(text, 1, sizeof text - 1, in);
    fclose(in);
    text[n] = '\0';
    char *tok = strstr(text, "--tokenizer-type Llama2Tokenizer");
    ck_assert_ptr_nonnull(tok);
    snprintf(edited, sizeof edited, "%.*s--vocab-size 32000 %s", (int)(tok - text), text, tok);
    write_file("m.sh", edited);
    ck_assert_int_eq(run("run --megatron-script %s/m.sh --set cluster.nodes=4 --print-scenario", dir), 0);
    const char *mix[] = {"num_hidden_layers: 32", "hidden_size: 4096", "num_key_value_heads: 8",
                         "intermediate_size: 14336", "num_local_experts: 8", "num_experts_per_tok: 2",
                         "seq_len: 4096", "global_batch: 256", "precision: bf16",
                         "llm: {tp: 1, pp: 4, cp: 1, dp: 8, vpp: 1, ep: 8, zero: 1,"};
    for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++)
        ck_assert_msg(strstr(out, mix[i]), "missing '%s' in:\n%.3000s", mix[i], out);
}
END_TEST

/* examples/multimodal/train.py scripts read as MLLMs.  Facts of the
 * restated scripts (Megatron-LM d98e8a64dd): pretrain_mistral_clip.sh is
 * CLIP ViT-L/14 at 336 px (24 layers, width 1024, MLP 4096, 16 heads), no
 * class token, into Mistral 7B (32 layers, 4096, GQA 32/8, SwiGLU 14336),
 * decoder 1024 tokens, both frozen, tp 4; its projector (config.py,
 * mistral_7b) is Linear(1024, 14336), GELU, Linear(14336, 4096) without
 * biases or norm: 1024*14336 + 14336*4096 = 73,400,320 parameters, and a
 * tile is (336/14)^2 = 576 embeddings.  The NVLM Qwen2-72B one: InternViT-6B
 * at 448 px, patch 14, pixel shuffle: (448/14)^2 / 4 = 256 embeddings per
 * tile; its projector (qwen2.0_72B) is LayerNorm(12800), Linear(12800,
 * 29568), Linear(29568, 8192): 2*12800 + 12800*29568 + 29568*8192 =
 * 620,717,056.  The tokenizer's vocabulary is added (mmsim needs
 * --vocab-size; 32768 and 152064 are the models' config.json sizes). */
static void with_vocab(const char *from, const char *to, long vocab)
{
    static char text[1 << 16], edited[1 << 16];
    FILE *in = fopen(from, "r");
    ck_assert_ptr_nonnull(in);
    size_t n = fread(text, 1, sizeof text - 1, in);
    fclose(in);
    text[n] = '\0';
    char *tok = strstr(text, "--tokenizer-type MultimodalTokenizer");
    ck_assert_ptr_nonnull(tok);
    snprintf(edited, sizeof edited, "%.*s--vocab-size %ld %s", (int)(tok - text), text, vocab, tok);
    write_file(to, edited);
}

START_TEST(megatron_multimodal_scripts)
{
    const char *S = "tests/data/megatron/scripts/";
    char p[512];
    snprintf(p, sizeof p, "%sex-mistral-clip-pretrain.sh", S);
    with_vocab(p, "mc.sh", 32768);
    ck_assert_int_eq(run("run --megatron-script %s/mc.sh --megatron-model %s/mc.json --print-scenario", dir, dir), 0);
    const char *mc[] = {"model_type: clip_vision_model", "num_hidden_layers: 24", "image_size: 336", "patch_size: 14",
                        "type: megatron_mlp", "hidden: 14336", "norm: none", "num_hidden_layers: 32",
                        "num_key_value_heads: 8", "intermediate_size: 14336", "seq_len: 1024",
                        "frozen: [\"llm\", \"vision\"]", "placement: homogeneous",
                        "llm: {tp: 4, pp: 1, cp: 1, dp: 4,", "tiles: 1, text_tokens: 448",
                        "576 embeddings per tile, 1 tiles per sample"};
    for (size_t i = 0; i < sizeof mc / sizeof mc[0]; i++)
        ck_assert_msg(strstr(out, mc[i]), "missing '%s' in:\n%.4000s", mc[i], out);
    ck_assert_int_eq(run("model %s/mc.json --json", dir), 0);
    ck_assert_int_eq((int)jget(out, "tokens_per_tile"), 576);
    ck_assert_ptr_nonnull(strstr(out, "\"projector\": {\"params\": 73400320}"));
    /* it runs: the LLM frozen, the projector trained */
    ck_assert_int_eq(run("run --megatron-script %s/mc.sh --set iterations=1 --set train.global_batch=16 --no-db --json",
                         dir), 0);
    ck_assert_msg(jget(out, "iteration_time_s") > 0, "%s", out);

    snprintf(p, sizeof p, "%sex-nvlm-qwen20-72b.sh", S);
    with_vocab(p, "q.sh", 152064);
    ck_assert_int_eq(run("run --megatron-script %s/q.sh --set cluster.nodes=8 --megatron-model %s/q.json "
                         "--print-scenario", dir, dir), 0);
    const char *q[] = {"model_type: intern_vit_6b", "num_hidden_layers: 45", "pixel_shuffle: 0.5",
                       "hidden: 29568", "norm: layernorm", "model_type: qwen2", "num_hidden_layers: 80",
                       "intermediate_size: 29568", "seq_len: 512", "tiles: 1, text_tokens: 256",
                       "llm: {tp: 8, pp: 1, cp: 1, dp: 8,", "with zero heads"};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        ck_assert_msg(strstr(out, q[i]), "missing '%s' in:\n%.4000s", q[i], out);
    ck_assert_int_eq(run("model %s/q.json --json", dir), 0);
    ck_assert_int_eq((int)jget(out, "tokens_per_tile"), 256);
    ck_assert_ptr_nonnull(strstr(out, "\"projector\": {\"params\": 620717056}"));

    /* NVLM SFT (sft_qwen20_72b_internvit_6b.sh): pp 4, 6 tiles and a
     * thumbnail of 256 embeddings with 5 tag tokens each (qwen2p0), so a
     * 3200-token sample holds 7 x 256 image tokens and 3200 - 1792 = 1408
     * text tokens (the tags among them); the ViT frozen, the LM trained; the
     * launch under an undecided `if` is the one taken */
    snprintf(p, sizeof p, "%sex-nvlm-qwen20-72b-sft.sh", S);
    with_vocab(p, "qs.sh", 152064);
    ck_assert_int_eq(run("run --megatron-script %s/qs.sh --set cluster.nodes=32 --print-scenario", dir), 0);
    const char *qs[] = {"max_tiles: 7", "seq_len: 3200", "tiles: 7, text_tokens: 1408", "frozen: [\"vision\"]",
                        "llm: {tp: 8, pp: 4, cp: 1, dp: 8,", "5 tag tokens before each tile",
                        "its branch launches training"};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        ck_assert_msg(strstr(out, qs[i]), "missing '%s' in:\n%.4000s", qs[i], out);
    /* sft_mistral_clip.sh names no precision: FP32, refused */
    snprintf(p, sizeof p, "%sex-mistral-clip-sft.sh", S);
    with_vocab(p, "ms.sh", 32768);
    ck_assert_int_eq(run("run --megatron-script %s/ms.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "key '--bf16'") && strstr(errtxt, "FP32"), "%s", errtxt);

    /* the model form the scripts write: Megatron's projector keys checked */
    const char *bad_models[][2] = {
        {"{llm: {model_type: llama, hidden_size: 64, num_hidden_layers: 1, num_attention_heads: 4, vocab_size: 10, "
         "intermediate_size: 128}, projector: {type: megatron_mlp, norm: layernorm}}", "projector.hidden"},
        {"{llm: {model_type: llama, hidden_size: 64, num_hidden_layers: 1, num_attention_heads: 4, vocab_size: 10, "
         "intermediate_size: 128}, projector: {type: megatron_mlp, hidden: 8, norm: batch}}", "unknown norm 'batch'"},
        {"{llm: {model_type: llama, hidden_size: 64, num_hidden_layers: 1, num_attention_heads: 4, vocab_size: 10, "
         "intermediate_size: 128}, projector: {type: mlp2x_gelu, hidden: 8}}", "only a megatron_mlp projector"},
    };
    for (size_t i = 0; i < sizeof bad_models / sizeof bad_models[0]; i++) {
        write_file("bm.yaml", bad_models[i][0]);
        ck_assert_int_eq(run("model %s/bm.yaml --json", dir), 2);
        ck_assert_msg(strstr(errtxt, bad_models[i][1]), "%s: %s", bad_models[i][1], errtxt);
    }

    /* what is not modeled, all in one message; model.py's own checks */
    const char *base = "torchrun examples/multimodal/train.py --num-layers 2 --hidden-size 64 "
                       "--num-attention-heads 4 --seq-length 576 --position-embedding-type rope --vocab-size 1000 "
                       "--bf16 --decoder-seq-length 1024 --img-h 336 --img-w 336 --patch-dim 14 ";
    char t[1024];
    snprintf(t, sizeof t, "%s--vision-model-type radio --num-frames 8\n", base);
    write_file("bad.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/bad.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "3 arguments mmsim cannot take") && strstr(errtxt, "RADIO") &&
                      strstr(errtxt, "--language-model-type: is required") && strstr(errtxt, "--num-frames"),
                  "%s", errtxt);
    snprintf(t, sizeof t, "%s--language-model-type mistral_7b --disable-vision-class-token --use-tiling "
                          "--max-num-tiles 2\n", base);
    write_file("bad.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/bad.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "bad.sh:1: key '--decoder-seq-length'") && strstr(errtxt, "2 x 576"), "%s", errtxt);
    snprintf(t, sizeof t, "%s--language-model-type mistral_7b --img-w 448\n", base);
    write_file("bad.sh", t); /* CLIP's class token kept */
    ck_assert_int_eq(run("run --megatron-script %s/bad.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "key '--disable-vision-class-token'"), "%s", errtxt);
    snprintf(t, sizeof t, "%s--language-model-type mistral_7b --img-w 448 --disable-vision-class-token\n", base);
    write_file("bad.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/bad.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "key '--img-w'") && strstr(errtxt, "only square tiles"), "%s", errtxt);
}
END_TEST

/* --megatron-args with the multimodal example's argument list reads as
 * --megatron-script reads its launch: an MLLM, decided by an argument only
 * multimodal_args.py adds, or by the entry script named among the words;
 * an entry script mmsim does not model is refused naming it. */
START_TEST(megatron_multimodal_args)
{
    ck_assert_int_eq(run("run --megatron-args tests/data/megatron/mistral-clip-pretrain.args --megatron-model "
                         "%s/ma.json --print-scenario", dir), 0);
    const char *mc[] = {"model_type: clip_vision_model", "num_hidden_layers: 24", "type: megatron_mlp",
                        "hidden: 14336", "num_key_value_heads: 8", "seq_len: 1024", "frozen: [\"llm\", \"vision\"]",
                        "placement: homogeneous", "576 embeddings per tile, 1 tiles per sample",
                        "an argument of Megatron-LM's multimodal example"};
    for (size_t i = 0; i < sizeof mc / sizeof mc[0]; i++)
        ck_assert_msg(strstr(out, mc[i]), "missing '%s' in:\n%.4000s", mc[i], out);
    ck_assert_int_eq(run("model %s/ma.json --json", dir), 0);
    ck_assert_int_eq((int)jget(out, "tokens_per_tile"), 576);
    ck_assert_ptr_nonnull(strstr(out, "\"projector\": {\"params\": 73400320}"));
    /* the entry script among the words decides, as a launch script's */
    const char *base = "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 576 "
                       "--position-embedding-type rope --vocab-size 1000 --bf16 --decoder-seq-length 1024 "
                       "--img-h 336 --img-w 336 --patch-dim 14 --disable-vision-class-token ";
    char t[1024];
    snprintf(t, sizeof t, "torchrun --nproc_per_node 8 examples/multimodal/train.py %s"
                          "--language-model-type mistral_7b\n", base);
    write_file("mm.args", t);
    ck_assert_int_eq(run("run --megatron-args %s/mm.args --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "model_type: clip_vision_model") && strstr(out, "Megatron-LM's multimodal example"),
                  "%.4000s", out);
    snprintf(t, sizeof t, "python pretrain_t5.py --num-layers 2 --hidden-size 64 --num-attention-heads 4\n");
    write_file("t5.args", t);
    ck_assert_int_eq(run("run --megatron-args %s/t5.args --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "t5.args:1") && strstr(errtxt, "pretrain_t5.py"), "%s", errtxt);
    /* a GPT list stays a GPT (no multimodal argument, no entry word) */
    ck_assert_int_eq(run("run --megatron-args tests/data/megatron/llama3-8b.args --print-scenario"), 0);
    ck_assert_ptr_null(strstr(out, "model_type: clip_vision_model"));
}
END_TEST

/* The shell the reader understands: integer arithmetic, if/elif/else on
 * tests it can decide, case on a known word, guards that exit, conditions
 * it cannot decide (read as taken unless the branch exits). */
START_TEST(megatron_script_control_flow)
{
    const char *base = "H=64\nARGS=\"--hidden-size $H --num-attention-heads 4 --seq-length 128 --bf16\"\n";
    char t[4096];
    /* arithmetic: precedence, parentheses, variables with and without $ */
    snprintf(t, sizeof t, "%sA=3\nL=$(( A * (2 + $A) - ${A} / 2 %% 2 ))\ntorchrun pretrain_gpt.py $ARGS --num-layers $L\n",
             base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "n_layer: 14"), "%s", out); /* 3*5 - (3/2)%2 = 14 */
    /* unknown operands and command output stay unknown: refused as numbers */
    snprintf(t, sizeof t, "%sL=$(($RANDOM + 1))\nN=`nproc --all`\ntorchrun --nnodes $N pretrain_gpt.py $ARGS "
             "--num-layers $L\n", base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:5: key '--num-layers'") && strstr(errtxt, "'$(($RANDOM+1))'") &&
                      !strstr(errtxt, "--nnodes"), "%s", errtxt);
    write_file("s.sh", "L=$((4 / (2 - 2)))\n");
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:1:") && strstr(errtxt, "division by zero"), "%s", errtxt);
    /* if / elif / else on decidable tests; && and || between tests */
    snprintf(t, sizeof t, "%sS=8B\nD=0\nif [[ $S == \"1B\" ]]; then L=1\nelif [ \"$S\" = 8B ] && [[ $D -eq 0 ]]; then L=6\n"
             "else L=9; fi\nif [[ -z \"$S\" ]] || [ $D -gt 1 ]; then L=7; fi\ntorchrun pretrain_gpt.py $ARGS --num-layers $L\n",
             base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "n_layer: 6"), "%s", out);
    /* a guard on the environment that exits: read past; an undecided branch
     * that assigns what changes the cost: refused, naming the argument and
     * the `if`, and so is a value made from it two assignments later */
    snprintf(t, sizeof t, "%sif [[ -z $WORKSPACE ]]; then\n  echo set it\n  exit 1\nfi\nif [ -n \"$WANDB\" ]; then L=3\n"
             "else L=5\nfi\nM=\"--num-layers $L\"\nN=\"$M --bf16\"\ntorchrun pretrain_gpt.py $ARGS $N\n", base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:12: key '--num-layers'") && strstr(errtxt, "the `if` on line 7") &&
                      strstr(errtxt, "1 argument mmsim"), "%s", errtxt);
    /* ... where it changes nothing (a path, a costless option), read past;
     * a branch that launches is the one the run that trains takes; each
     * decision is said, with its line */
    snprintf(t, sizeof t, "%sif [[ -z $WORKSPACE ]]; then\n  echo set it\n  exit 1\nfi\nif [ -n \"$WANDB\" ]; then "
             "W=\"--wandb-project p --save /a\"\nelse W=\"--save /b\"\nfi\nif [[ $BATCH -eq 0 ]]; then\n"
             "  torchrun pretrain_gpt.py $ARGS --num-layers 3 $W\nelse\n  srun sh -c \"python x.py $ARGS\"\nfi\n",
             base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "n_layer: 3"), "%s", out);
    ck_assert_msg(strstr(out, "script: the `if` on line 3 tests what mmsim cannot decide; its branch exits") &&
                      strstr(out, "script: the `if` on line 7 tests what mmsim cannot decide; its branch assigns") &&
                      strstr(out, "script: the `if` on line 10 tests what mmsim cannot decide; its branch launches"),
                  "%s", out);
    /* a test on what an undecided branch set is undecided too */
    snprintf(t, sizeof t, "%sif [ -f /x ]; then S=8B; else S=1B; fi\nif [ \"$S\" = 8B ]; then L=6; else L=1; fi\n"
             "torchrun pretrain_gpt.py $ARGS --num-layers $L\n", base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "key '--num-layers'") && strstr(errtxt, "the `if` on line 4"), "%s", errtxt);
    /* an undecided branch that sets variables and exits: refused by name */
    snprintf(t, sizeof t, "%sif [ -d /data ]; then\n  L=2\n  exit 0\nfi\ntorchrun pretrain_gpt.py $ARGS --num-layers 2\n",
             base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:5: key 'exit'") && strstr(errtxt, "line 3") && strstr(errtxt, "line 4"), "%s",
                  errtxt);
    /* an exit the script surely reaches ends it: no launch */
    snprintf(t, sizeof t, "%sexit 0\ntorchrun pretrain_gpt.py $ARGS --num-layers 2\n", base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "no launch command"));
    /* case on a known word: patterns with | and globs; ;; ends an item */
    snprintf(t, sizeof t, "%sSIZE=8B\ncase \"$SIZE\" in\n  1B|2B) L=1 ;;\n  8*)\n    L=8\n    ;;\n  *) exit 1 ;;\nesac\n"
             "torchrun pretrain_gpt.py $ARGS --num-layers $L\n", base);
    write_file("s.sh", t);
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "n_layer: 8"), "%s", out);
    /* unfinished forms, named with their line */
    write_file("s.sh", "X=1\nif [ $X = 1 ]; then\n  Y=2\n");
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:2: key 'if'") && strstr(errtxt, "without its `fi`"), "%s", errtxt);
    write_file("s.sh", "case x in\n x) Y=1 ;;\n");
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:1: key 'case'") && strstr(errtxt, "without its `esac`"), "%s", errtxt);
    write_file("s.sh", "fi\n");
    ck_assert_int_eq(run("run --megatron-script %s/s.sh --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "s.sh:1: key 'fi'"), "%s", errtxt);
}
END_TEST

/* The run's length and periodic work (--train-iters, --log-interval,
 * --eval-interval, --eval-iters, --save-interval) map onto the train.*
 * run keys, so the run total counts them; the iteration does not move.
 * Saves are charged only with the storage's bandwidth (--set
 * train.save_gb_s: it has no default) and only with --save; a value the
 * reader cannot know (a shell variable) is noted and not charged. */
START_TEST(megatron_run_keys)
{
    const char *args = "tests/data/megatron/gpt3-175b.args";
    ck_assert_int_eq(run("run --megatron-args %s --set cluster.nodes=16 --print-scenario", args), 0);
    const char *want[] = {"--train-iters -> train.train_iters: 500000", "--log-interval -> train.log_interval: 100",
                          "--eval-interval -> train.eval_interval: 1000", "--eval-iters -> train.eval_iters: 10",
                          "--save-interval 10000: checkpoint saves not charged", "  save_interval: 0\n"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "missing '%s' in:\n%s", want[i], out);
    const char *small = "--set cluster.nodes=16 --set train.global_batch=32 --set iterations=1 "
                        "--set train.recompute=full --no-db --json";
    ck_assert_int_eq(run("run --megatron-args %s %s --set train.save_gb_s=20", args, small), 0);
    double t = jget(out, "iteration_time_s"), save = jget(out, "checkpoint_save_s"), ev = jget(out, "eval_s"),
           log = jget(out, "log_sync_s");
    ck_assert_msg(t > 0 && save > 0 && ev > 0 && log > 0, "%s", out);
    ck_assert_int_eq((int)jget(out, "run_saves"), 50);  /* 500000 / 10000 */
    ck_assert_int_eq((int)jget(out, "run_evals"), 500); /* 500000 / 1000 */
    ck_assert_int_eq((int)jget(out, "run_logs"), 5000); /* 500000 / 100 */
    double total = 500000 * t + 50 * save + 500 * ev + 5000 * log;
    ck_assert_double_eq_tol(jget(out, "run_total_s"), total, 1e-9 * total);
    /* the iteration is the one without the run keys */
    double t0 = t;
    ck_assert_int_eq(run("run --megatron-args %s %s --set train.train_iters=0 --set train.log_interval=0 "
                         "--set train.eval_interval=0",
                         args, small),
                     0);
    ck_assert_double_eq(jget(out, "iteration_time_s"), t0);
    ck_assert_msg(isnan(jget(out, "run_total_s")), "%s", out);
    /* no --save: Megatron-LM writes nothing; a shell variable: not read */
    write_file("r.args", "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                         "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 16 "
                         "--vocab-size 1024 --bf16 --save-interval 100 --log-interval $LI --train-iters 50\n");
    ck_assert_int_eq(run("run --megatron-args %s/r.args --set cluster.nodes=1 --print-scenario", dir), 0);
    ck_assert_msg(strstr(out, "--save-interval 100: no --save") && strstr(out, "--log-interval $LI: a value") &&
                      strstr(out, "  save_interval: 0\n") && strstr(out, "  log_interval: 0\n") &&
                      strstr(out, "  train_iters: 50\n"),
                  "%s", out);
    /* out of range: named with its line */
    write_file("r.args", "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                         "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 16 "
                         "--vocab-size 1024 --bf16\n--log-interval 0\n");
    ck_assert_int_eq(run("run --megatron-args %s/r.args --print-scenario", dir), 2);
    ck_assert_msg(strstr(errtxt, "r.args:2") && strstr(errtxt, "--log-interval"), "%s", errtxt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("megatron");
    TCase *tc = tcase_create("megatron");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, megatron_gpt3_175b);
    tcase_add_test(tc, megatron_as_a_library_source);
    tcase_add_test(tc, megatron_inline_model_is_the_file_model);
    tcase_add_test(tc, megatron_llama3_8b);
    tcase_add_test(tc, megatron_refusals);
    tcase_add_test(tc, megatron_one_message_and_costless);
    tcase_add_test(tc, megatron_launch_scripts);
    tcase_add_test(tc, megatron_example_scripts);
    tcase_add_test(tc, megatron_multimodal_scripts);
    tcase_add_test(tc, megatron_multimodal_args);
    tcase_add_test(tc, megatron_script_control_flow);
    tcase_add_test(tc, megatron_run_keys);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
