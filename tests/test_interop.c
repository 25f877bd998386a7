/* test_interop.c - mmsim where users already are: Megatron-LM argument
 * lists in (tests/data/megatron/, written for the tests with the
 * hyperparameters of NVIDIA/Megatron-LM's public launch scripts), nccl-tests' output format out (read back by a parser written
 * to nccl-tests' src/util.cu format), and the command-line conventions
 * (getopt_long forms, -h on every command, help help, --version). */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "mmsim_config.h"
#include "scenario/megatron.h"
#include "scenario/megatron_args.h"
#include "mmsim_exe.h"

static char dir[256], out[1 << 20], errtxt[1 << 16];

static void setup(void)
{
    mmx_tmpdir(dir, sizeof dir, "interop");
}

static void teardown(void)
{
    mmx_rmdir(dir);
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt);
}

/* The number after `"key": ` in a JSON text; NAN when absent. */
static double jget(const char *json, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(json, pat);
    return p ? atof(p + strlen(pat)) : NAN;
}

static void write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

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
        {"  --fp8-param-gather\n", "--fp8-param-gather", "a.args:2"},
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
    snprintf(text, sizeof text, "%s  --frobnicate 3 \\\n  --fp8-param-gather --ddp-bucket-size 1000 \\\n%s", base,
             costless);
    write_file("a.args", text);
    ck_assert_int_eq(run("run --megatron-args %s/a.args --print-scenario", dir), 2);
    const char *want[] = {"a.args:2: key '--frobnicate'", "3 arguments mmsim cannot take", "line 2 --frobnicate",
                          "line 3 --fp8-param-gather", "line 3 --ddp-bucket-size"};
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
        ck_assert_msg(strstr(out, gpt[i]), "missing '%s' in:\n%s", gpt[i], out);
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
        ck_assert_msg(strstr(out, llama[i]), "missing '%s' in:\n%s", llama[i], out);
    ck_assert_int_eq(run("model %sllama3-8b.sh --json", S), 2); /* a script is no model file */
    ck_assert_int_eq(run("run --megatron-script %sllama3-8b.sh --megatron-model %s/l3.json --print-scenario", S, dir),
                     0);
    ck_assert_int_eq(run("model %s/l3.json --seq 8192 --json", dir), 0);
    ck_assert_double_eq(jget(out, "params"), 8030261248.0);
    /* Mixtral 8x7B: one message names what is not modeled, with lines */
    ck_assert_int_eq(run("run --megatron-script %smixtral-8x7b.sh --print-scenario", S), 2);
    const char *mix[] = {"mixtral-8x7b.sh:13: key '--no-masked-softmax-fusion'", "3 arguments",
                         "line 15 --moe-grouped-gemm", "line 15 --moe-token-dispatcher-type"};
    for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++)
        ck_assert_msg(strstr(errtxt, mix[i]), "missing '%s' in: %s", mix[i], errtxt);
    ck_assert_msg(!strstr(errtxt, "--moe-aux-loss-coeff") && !strstr(errtxt, "--no-load-optim") &&
                      !strstr(errtxt, "--no-position-embedding"),
                  "%s", errtxt);
    /* refusals naming the line */
    struct {
        const char *file, *where;
    } bad[] = {
        {"bert.sh", "bert.sh:6: key 'pretrain_bert.py'"},
        {"loop.sh", "loop.sh:5: key 'for'"},
        {"subst.sh", "subst.sh:4: key '$('"},
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

/* ---- nccl-tests output ------------------------------------------------------- */

/* A row as nccl-tests prints it (src/util.cu writeBenchmarkLinePreamble
 * and writeBenchmarkLineBody): size count type redop root, then time
 * algbw busbw #wrong twice (out-of-place, in-place). */
typedef struct nt_row {
    double size, count;
    char type[16], redop[16];
    int root;
    double t[2], alg[2], bus[2];
    char wrong[2][16];
} nt_row;

/* Reads nccl-tests output the way published parsers do: lines starting
 * with '#' are comments, except the column header and "# Avg bus
 * bandwidth : X"; every other non-empty line is a row of 13 fields. */
static int nt_parse(const char *text, nt_row *rows, int cap, double *avg, int *header_ok)
{
    int n = 0;
    *avg = NAN;
    *header_ok = 0;
    char line[1024];
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        p += len + (p[len] == '\n');
        if (line[0] == '#') {
            const char *a = strstr(line, "Avg bus bandwidth");
            if (a) {
                const char *c = strchr(a, ':');
                ck_assert_ptr_nonnull(c);
                *avg = atof(c + 1);
            }
            char f[13][16];
            if (sscanf(line, "# %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s", f[0], f[1], f[2],
                       f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12]) == 13 &&
                !strcmp(f[0], "size") && !strcmp(f[1], "count") && !strcmp(f[2], "type") && !strcmp(f[3], "redop") &&
                !strcmp(f[4], "root") && !strcmp(f[5], "time") && !strcmp(f[6], "algbw") && !strcmp(f[8], "#wrong") &&
                !strcmp(f[12], "#wrong"))
                *header_ok = 1;
            continue;
        }
        if (!line[0])
            continue;
        ck_assert_int_lt(n, cap);
        nt_row *r = &rows[n];
        int k = sscanf(line, "%lf %lf %15s %15s %d %lf %lf %lf %15s %lf %lf %lf %15s", &r->size, &r->count, r->type,
                       r->redop, &r->root, &r->t[0], &r->alg[0], &r->bus[0], r->wrong[0], &r->t[1], &r->alg[1],
                       &r->bus[1], r->wrong[1]);
        ck_assert_msg(k == 13, "not an nccl-tests row (%d fields): %s", k, line);
        n++;
    }
    return n;
}

START_TEST(nccl_tests_format)
{
    /* --opt=value works everywhere, --cluster=FILE included */
    ck_assert_int_eq(run("collective --cluster=topologies/dgx-h100.yaml --nodes=2 --op=allreduce -b 1K -e 1G -f 4"),
                     0);
    static nt_row rows[64];
    double avg;
    int header;
    int n = nt_parse(out, rows, 64, &avg, &header);
    ck_assert_int_eq(n, 11); /* 1K, 4K, ..., 1G */
    ck_assert(header);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        nt_row *r = &rows[i];
        ck_assert_double_eq(r->size, 1024.0 * pow(4, i));
        ck_assert_double_eq(r->count, r->size / 4); /* float elements */
        ck_assert_str_eq(r->type, "float");
        ck_assert_str_eq(r->redop, "sum");
        ck_assert_int_eq(r->root, -1);
        for (int h = 0; h < 2; h++) {
            /* algbw = size / time (GB/s from bytes and microseconds), to
             * the 2 decimals (or 3 digits) printed; busbw = algbw x 2(n-1)/n */
            double alg = r->size / (r->t[h] * 1e3);
            ck_assert_double_eq_tol(r->alg[h], alg, 0.006 + 0.01 * alg * (r->t[h] < 10));
            ck_assert_double_eq_tol(r->bus[h], r->alg[h] * 2 * 15 / 16, 0.02);
            ck_assert_str_eq(r->wrong[h], "N/A");
            sum += r->bus[h];
        }
        ck_assert_double_eq(r->t[0], r->t[1]);
    }
    /* nccl-tests' footer: the mean busbw over every row and half */
    ck_assert_double_eq_tol(avg, sum / (2 * n), 0.01);
    /* the same times as the JSON form */
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --nodes 2 --op allreduce --min 1G --max 1G "
                         "--json"),
                     0);
    const char *tj = strstr(out, "\"out_of_place\":{\"time\":");
    ck_assert_ptr_nonnull(tj);
    ck_assert_double_eq_tol(atof(tj + 23), rows[n - 1].t[0], 0.01);
    /* all-gather: a rank's share as the count, redop none; broadcast: root 0 */
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --op allgather --min 1M --max 1M "
                         "--show-algo"),
                     0);
    n = nt_parse(out, rows, 64, &avg, &header);
    ck_assert_int_eq(n, 1);
    ck_assert_double_eq(rows[0].count, 1048576.0 / 4 / 8);
    ck_assert_str_eq(rows[0].redop, "none");
    ck_assert_ptr_nonnull(strstr(out, "# mmsim algorithm:"));
    ck_assert_int_eq(run("collective --cluster topologies/dgx-h100.yaml --op broadcast --min 1M --max 1M"), 0);
    n = nt_parse(out, rows, 64, &avg, &header);
    ck_assert_int_eq(rows[0].root, 0);
}
END_TEST

/* ---- command-line conventions -------------------------------------------------- */

START_TEST(cli_conventions)
{
    const char *cmds[] = {"run", "model", "collective", "workload", "sweep", "report", "plan", "completion"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "usage: mmsim %s", cmds[i]);
        ck_assert_int_eq(run("%s --help", cmds[i]), 0);
        ck_assert_msg(strstr(out, want), "%s --help: %s", cmds[i], out);
        ck_assert_int_eq(run("%s -h", cmds[i]), 0);
        ck_assert_msg(strstr(out, want), "%s -h: %s", cmds[i], out);
        ck_assert_int_eq(run("help %s", cmds[i]), 0);
        ck_assert_msg(strstr(out, want), "help %s: %s", cmds[i], out);
    }
    ck_assert_int_eq(run("completion fish"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "'fish'"));
    ck_assert_int_eq(run("completion"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "bash or zsh"));
    ck_assert_int_eq(run("help help"), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: mmsim help"));
    ck_assert_int_eq(run("help nope"), 2);
    ck_assert_int_eq(run("--version"), 0);
    ck_assert_int_eq(run("--version extra"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "extra"));
    /* --opt=value and --opt value give the same run, options after operands too */
    ck_assert_int_eq(run("run tests/data/api-scenario.yaml --set=parallel.llm.tp=4 --set parallel.llm.dp=1 --no-db -q"),
                     0);
    char a[256];
    snprintf(a, sizeof a, "%.200s", out);
    ck_assert_int_eq(run("run --no-db --set parallel.llm.tp=4 -s parallel.llm.dp=1 tests/data/api-scenario.yaml -q"),
                     0);
    ck_assert_str_eq(out, a);
    ck_assert_ptr_nonnull(strstr(out, "iteration_time_s "));
    ck_assert_int_eq(run("model --seq=1024 models/llama-2-7b.json --json"), 0);
    snprintf(a, sizeof a, "%.200s", out);
    ck_assert_int_eq(run("model models/llama-2-7b.json --seq 1024 --json"), 0);
    ck_assert(!strncmp(out, a, strlen(a)));
    /* errors name the option */
    ck_assert_int_eq(run("run --trace"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "'--trace': needs a value"));
    ck_assert_int_eq(run("model models/llama-2-7b.json --seq=zero"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "--seq"));
    ck_assert_int_eq(run("collective --op allreduce --cluster=topologies/dgx-h100.yaml --bogus=1"), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "'--bogus'"));
    /* -v adds the per-iteration table */
    ck_assert_int_eq(run("run tests/data/api-scenario.yaml --no-db -v"), 0);
    ck_assert_ptr_nonnull(strstr(out, "iteration   time (s)"));
}
END_TEST

/* ---- data files from any folder ------------------------------------------------------ */

/* From a folder without models/ or topologies/, the relative paths of the
 * default scenario resolve under $MMSIM_DATADIR.  The data folder here holds
 * exactly the folders meson.build installs into share/mmsim
 * (MMSIM_DATA_DIRS, from the same list), each a link into the checkout, so
 * that a folder the default scenario needs and the install leaves out fails
 * here; scripts/test also installs a build and runs the installed mmsim
 * with MMSIM_DATADIR unset. */
START_TEST(datadir_from_any_folder)
{
    const char *src = getenv("MMSIM_SRCDIR"), *dirs = getenv("MMSIM_DATA_DIRS");
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(dirs);
    char prefix[1024], share[512], from[1024], to[1024];
    snprintf(prefix, sizeof prefix, "cd %s && MMSIM_DATADIR=/nonexistent", dir);
    if (access(MMSIM_DATADIR "/models", F_OK) != 0) { /* no installed copy to fall back on */
        ck_assert_int_eq(mmx_run(dir, prefix, "run --no-db -q", out, sizeof out, errtxt, sizeof errtxt), 2);
        ck_assert_ptr_nonnull(strstr(errtxt, "models/llava-ov-qwen2.5-7b.yaml"));
    }
    snprintf(share, sizeof share, "%s/share", dir);
    ck_assert_int_eq(mkdir(share, 0755), 0);
    int n = 0;
    for (const char *p = dirs; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(from, sizeof from, "%s/%.*s", src, (int)len, p);
        snprintf(to, sizeof to, "%s/%.*s", share, (int)len, p);
        ck_assert_int_eq(symlink(from, to), 0);
        n++;
        p += len + (p[len] == ':');
    }
    ck_assert_int_gt(n, 0);
    snprintf(prefix, sizeof prefix, "cd %s && MMSIM_DATADIR=%s", dir, share);
    /* the default scenario: model, topology and its kernel tables, workload,
     * framework profile */
    ck_assert_int_eq(mmx_run(dir, prefix, "run --no-db -q --set iterations=1", out, sizeof out, errtxt,
                             sizeof errtxt),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "iteration_time_s "));
    ck_assert_int_eq(mmx_run(dir, prefix, "run --no-db -q --set model=models/llama-2-7b.json", out, sizeof out,
                             errtxt, sizeof errtxt),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "iteration_time_s "));
    ck_assert_int_eq(mmx_run(dir, prefix, "collective --cluster=topologies/dgx-h100.yaml --op allreduce --min 1M --max 1M",
                             out, sizeof out, errtxt, sizeof errtxt),
                     0);
    ck_assert_int_eq(mmx_run(dir, prefix, "model models/llama-2-7b.json --json", out, sizeof out, errtxt,
                             sizeof errtxt),
                     0);
}
END_TEST

/* ---- the Perfetto trace ----------------------------------------------------------- */

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Flow arrows pair up (one per pipeline transfer, each "s" with its "f"),
 * the module is a category, and the in-flight counter peaks at pp on the
 * first stage under 1F1B (Narayanan et al. SC'21 Sec. 2.2: stage s holds
 * min(pp - s, m) micro-batches). */
START_TEST(trace_flows_and_counters)
{
    char path[512];
    snprintf(path, sizeof path, "%s/t.json", dir);
    ck_assert_int_eq(run("run --no-db --json --trace %s --set model=models/llama-2-7b.json --set iterations=1 "
                         "--set 'parallel.llm={tp: 2, pp: 4, dp: 2}' --set train.global_batch=16",
                         path),
                     0);
    const char *st0 = strstr(out, "\"stage\": 0,");
    ck_assert_ptr_nonnull(st0);
    double stage0_gib = jget(st0, "memory_gib");
    static char t[1 << 22];
    mmx_slurp(path, t, sizeof t);
    int s = count(t, "\"ph\":\"s\""), f = count(t, "\"ph\":\"f\""), pp = count(t, "\"cat\":\"pp,llm\"");
    ck_assert_int_gt(pp, 0);
    ck_assert_int_eq(s, pp);
    ck_assert_int_eq(f, pp);
    ck_assert_int_gt(count(t, "\"cat\":\"fwd,llm\""), 0);
    ck_assert_int_gt(count(t, "\"name\":\"llm memory (GiB)\""), 0);
    /* the peak of rank 0's (stage 0's) in-flight counter */
    int peak = 0;
    for (const char *p = t; (p = strstr(p, "\"micro-batches in flight\",\"ph\":\"C\",\"pid\":0,")); p++) {
        const char *v = strstr(p, "\"llm\":");
        if (v && atoi(v + 6) > peak)
            peak = atoi(v + 6);
    }
    ck_assert_int_eq(peak, 4);
    /* at that peak the memory counter is the run's stage-0 memory (the
     * same memory model: states + 4 micro-batches of activations) */
    double peak_gib = 0;
    for (const char *p = t; (p = strstr(p, "\"llm memory (GiB)\",\"ph\":\"C\",\"pid\":0,")); p++) {
        const char *a = strstr(p, "\"states\":"), *b = strstr(p, "\"activations\":");
        if (a && b && atof(a + 9) + atof(b + 14) > peak_gib)
            peak_gib = atof(a + 9) + atof(b + 14);
    }
    ck_assert_double_eq_tol(peak_gib, stage0_gib, 2e-4);
    /* the multimodal default: encoder outputs flow into the LLM */
    ck_assert_int_eq(run("run --no-db --trace %s --set iterations=1", path), 0);
    mmx_slurp(path, t, sizeof t);
    ck_assert_int_gt(count(t, "\"name\":\"encoder to llm\""), 0);
    ck_assert_int_gt(count(t, "\"cat\":\"fwd,vision\""), 0);
}
END_TEST

/* ---- scripts/plot ------------------------------------------------------------------------ */

/* The sweep plot filters with --where and refuses an axis the sweep does
 * not have; the timeline plot draws a trace (when gnuplot is installed). */
START_TEST(plot_script)
{
    if (system("command -v gnuplot >/dev/null 2>&1 && command -v sqlite3 >/dev/null 2>&1") != 0)
        return; /* scripts/test installs both; a bare machine skips */
    const char *src = getenv("MMSIM_SRCDIR");
    ck_assert_ptr_nonnull(src);
    write_file("s.yaml", "name: tiny\nset: {model: models/llama-2-7b.json, workload: text, iterations: 1}\n"
                         "axes:\n  - key: train.global_batch\n    values: [16, 32, 64]\n"
                         "  - key: train.seq_len\n    values: [1024, 2048]\n");
    ck_assert_int_eq(run("sweep %s/s.yaml --db %s/s.db --jobs 1 -q", dir, dir), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s/scripts/plot sweep %s/s.db --x train.global_batch --y tokens_per_s --where train.seq_len=2048 "
             "%s/a.png >%s/plot.out 2>&1",
             src, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/a.png", dir);
    ck_assert_int_eq(access(p, R_OK), 0);
    snprintf(cmd, sizeof cmd,
             "%s/scripts/plot sweep %s/s.db --x train.global_batch --y tokens_per_s --where nope=1 %s/b.png "
             ">%s/plot.out 2>&1",
             src, dir, dir, dir);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
    ck_assert_int_eq(run("run --no-db --trace %s/t.json --set model=models/llama-2-7b.json --set iterations=1 -q",
                         dir),
                     0);
    snprintf(cmd, sizeof cmd, "%s/scripts/plot timeline %s/t.json %s/t.png --ranks 2 >%s/plot.out 2>&1", src, dir,
             dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(p, sizeof p, "%s/t.png", dir);
    ck_assert_int_eq(access(p, R_OK), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("interop");
    TCase *tc = tcase_create("interop");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, megatron_gpt3_175b);
    tcase_add_test(tc, megatron_as_a_library_source);
    tcase_add_test(tc, megatron_inline_model_is_the_file_model);
    tcase_add_test(tc, megatron_llama3_8b);
    tcase_add_test(tc, megatron_refusals);
    tcase_add_test(tc, megatron_one_message_and_costless);
    tcase_add_test(tc, megatron_launch_scripts);
    tcase_add_test(tc, nccl_tests_format);
    tcase_add_test(tc, cli_conventions);
    tcase_add_test(tc, trace_flows_and_counters);
    tcase_add_test(tc, datadir_from_any_folder);
    tcase_add_test(tc, plot_script);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
