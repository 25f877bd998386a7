/* torchtitan.c - a torchtitan train config (TOML) as scenario overrides.
 * The keys and their defaults are torchtitan's (pytorch/torchtitan at
 * 238fa9953e4aec2a62582121564273d7cbb1e9f1, torchtitan/config/job_config.py,
 * the last commit whose train configs are TOML files; the pipeline split is
 * torchtitan/distributed/pipeline_parallel.py generate_llm_fqn_per_model_part,
 * the world size split torchtitan/distributed/parallel_dims.py).
 * The table `keys` says of every key whether it is mapped, costs nothing
 * (accepted) or is refused; the map_* functions read the mapped ones.
 * Problems are collected, not returned one by one, so that a file's every
 * refused key is reported at once.
 * Not for: the TOML syntax (util/toml.c); running anything. */
#include "scenario/torchtitan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/sim.h"
#include "scenario/source.h"
#include "util/toml.h"

typedef enum { K_MAP, K_IGNORE, K_REFUSE } key_kind;

typedef struct keydef {
    const char *key; /* "table.key", or "table.*" for a whole table */
    key_kind kind;
    const char *why; /* K_IGNORE / K_REFUSE: the reason, for notes and errors */
} keydef;

#define IGN_IO "files, logging or checkpoints: no cost within a step"
#define IGN_OPT "optimizer hyperparameter: same work"

static const keydef keys[] = {
    {"model.name", K_MAP, NULL}, {"model.flavor", K_MAP, NULL}, {"model.converters", K_MAP, NULL},
    {"model.hf_assets_path", K_IGNORE, IGN_IO}, {"model.tokenizer_path", K_IGNORE, IGN_IO},
    {"model.print_after_conversion", K_IGNORE, IGN_IO},
    {"training.local_batch_size", K_MAP, NULL}, {"training.global_batch_size", K_MAP, NULL},
    {"training.seq_len", K_MAP, NULL}, {"training.mixed_precision_param", K_MAP, NULL},
    {"training.mixed_precision_reduce", K_MAP, NULL}, {"training.dtype", K_MAP, NULL},
    {"training.enable_cpu_offload", K_MAP, NULL},
    {"training.steps", K_IGNORE, "length of training: mmsim simulates `iterations` steps"},
    {"training.max_norm", K_IGNORE, "clipping threshold: the fsdp profile counts the norm either way"},
    {"training.dataset", K_IGNORE, "the data set: every sample is seq_len text tokens"},
    {"training.dataset_path", K_IGNORE, IGN_IO}, {"training.gc_freq", K_IGNORE, "host garbage collection: not simulated"},
    {"training.gc_debug", K_IGNORE, IGN_IO}, {"training.seed", K_IGNORE, "training seed: numerics only"},
    {"training.deterministic", K_IGNORE, "numerics only"}, {"training.dataloader.*", K_IGNORE, "data loader workers"},
    {"parallelism.data_parallel_replicate_degree", K_MAP, NULL}, {"parallelism.data_parallel_shard_degree", K_MAP, NULL},
    {"parallelism.tensor_parallel_degree", K_MAP, NULL}, {"parallelism.pipeline_parallel_degree", K_MAP, NULL},
    {"parallelism.context_parallel_degree", K_MAP, NULL}, {"parallelism.expert_parallel_degree", K_MAP, NULL},
    {"parallelism.expert_tensor_parallel_degree", K_MAP, NULL},
    {"parallelism.pipeline_parallel_schedule", K_MAP, NULL},
    {"parallelism.pipeline_parallel_microbatch_size", K_MAP, NULL},
    {"parallelism.pipeline_parallel_layers_per_stage", K_MAP, NULL},
    {"parallelism.pipeline_parallel_first_stage_less_layers", K_MAP, NULL},
    {"parallelism.pipeline_parallel_last_stage_less_layers", K_MAP, NULL},
    {"parallelism.fsdp_reshard_after_forward", K_MAP, NULL}, {"parallelism.disable_loss_parallel", K_MAP, NULL},
    {"parallelism.enable_async_tensor_parallel", K_MAP, NULL},
    {"parallelism.pipeline_parallel_schedule_csv", K_MAP, NULL}, {"parallelism.module_fqns_per_model_part", K_MAP, NULL},
    {"parallelism.pipeline_parallel_split_points", K_MAP, NULL},
    {"parallelism.pipeline_parallel_expert_parallel_overlap", K_IGNORE, "applies to MoE models only"},
    {"parallelism.context_parallel_load_balancer", K_IGNORE, "applies under context parallelism (refused)"},
    {"parallelism.context_parallel_rotate_method", K_IGNORE, "applies under context parallelism (refused)"},
    {"parallelism.expert_parallel_comm_backend", K_MAP, NULL},
    {"activation_checkpoint.mode", K_MAP, NULL}, {"activation_checkpoint.selective_ac_option", K_MAP, NULL},
    {"activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns", K_IGNORE, "applies to op SAC (refused)"},
    {"activation_checkpoint.early_stop", K_IGNORE, "recompute stops at the last saved tensor: same kernels"},
    {"activation_checkpoint.memory_budget", K_IGNORE, "applies to mode memory_budget (refused)"},
    {"activation_checkpoint.visualize_memory_budget_pareto", K_IGNORE, IGN_IO},
    {"activation_checkpoint.preserve_rng_state", K_IGNORE, "numerics only"},
    {"activation_checkpoint.determinism_check", K_IGNORE, "numerics only"},
    {"activation_checkpoint.debug", K_IGNORE, IGN_IO},
    {"compile.enable", K_MAP, NULL}, {"compile.components", K_IGNORE, "applies under compile.enable (refused)"},
    {"compile.backend", K_IGNORE, "applies under compile.enable (refused)"},
    /* the float8 converter's settings: [float8] before torchtitan's
     * quantize tables, [quantize.linear.float8] after */
    {"float8.enable_fsdp_float8_all_gather", K_MAP, NULL}, {"float8.recipe_name", K_MAP, NULL},
    {"float8.emulate", K_MAP, NULL}, {"float8.precompute_float8_dynamic_scale_for_fsdp", K_IGNORE,
                                      "scale precompute for the FP8 all-gather (refused itself when on)"},
    {"float8.filter_fqns", K_IGNORE, "layers kept in BF16: mmsim runs the transformer blocks' GEMMs in FP8"},
    {"float8.force_recompute_fp8_weight_in_bwd", K_IGNORE, "applies with the FP8 all-gather (refused)"},
    {"float8.moe_fqns_prototype", K_IGNORE, "MoE models only"},
    {"quantize.linear.float8.enable_fsdp_float8_all_gather", K_MAP, NULL},
    {"quantize.linear.float8.recipe_name", K_MAP, NULL}, {"quantize.linear.float8.emulate", K_MAP, NULL},
    {"quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp", K_IGNORE,
     "scale precompute for the FP8 all-gather (refused itself when on)"},
    {"quantize.linear.float8.filter_fqns", K_IGNORE,
     "layers kept in BF16: mmsim runs the transformer blocks' GEMMs in FP8"},
    {"quantize.linear.mx.*", K_IGNORE, "settings of the mx converter (refused when converters names it)"},
    {"quantize.grouped_mm.*", K_IGNORE, "grouped GEMMs: MoE models only"},
    {"mx.*", K_IGNORE, "settings of the mx converter (refused when converters names it)"},
    {"optimizer.name", K_MAP, NULL}, {"optimizer.implementation", K_MAP, NULL},
    {"optimizer.early_step_in_backward", K_MAP, NULL},
    {"optimizer.lr", K_IGNORE, IGN_OPT}, {"optimizer.eps", K_IGNORE, IGN_OPT},
    {"optimizer.beta1", K_IGNORE, IGN_OPT}, {"optimizer.beta2", K_IGNORE, IGN_OPT},
    {"optimizer.weight_decay", K_IGNORE, IGN_OPT}, {"lr_scheduler.*", K_IGNORE, "learning-rate schedule: same work"},
    {"job.*", K_IGNORE, IGN_IO}, {"profiling.*", K_IGNORE, IGN_IO}, {"metrics.*", K_IGNORE, IGN_IO},
    {"checkpoint.*", K_IGNORE, "checkpoints are saved between steps: not simulated"},
    {"comm.*", K_IGNORE, "timeouts and flight-recorder buffers"}, {"memory_estimation.*", K_IGNORE, IGN_IO},
    {"validation.*", K_IGNORE, "validation runs between steps: not simulated"},
    {"debug.*", K_IGNORE, "seeds and determinism: numerics only"},
    {"fault_tolerance.enable", K_MAP, NULL}, {"fault_tolerance.*", K_IGNORE, "applies under fault_tolerance.enable"},
    {"experimental.custom_import", K_MAP, NULL}, {"experimental.*", K_IGNORE, "module paths"},
};

/* torchtitan's llama3 flavors (torchtitan/models/llama3/__init__.py
 * llama3_args) that have a models/ file with the same shape: dim, layers,
 * heads, kv heads, the FFN width ffn_dim_multiplier and multiple_of give
 * (4096: 14336, 8192: 28672) and the tokenizer's 128256 words. */
typedef struct flavor {
    const char *name, *model;
    int layers;
} flavor;
static const flavor flavors[] = {
    {"8B", "models/llama-3-8b.json", 32},
    {"70B", "models/llama-3-70b.json", 80},
};

#define MAX_PROBLEMS 64

typedef struct problem_t {
    int line, order; /* order: as found, to keep ties in it */
    char key[96];
    char msg[240];
} problem_t;

typedef struct reader {
    const char *path;
    const mm_toml *t;
    mm_torchtitan *tt;
    problem_t problems[MAX_PROBLEMS];
    int n_problems;
} reader;

static void problem(reader *r, const char *key, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void problem(reader *r, const char *key, int line, const char *fmt, ...)
{
    if (r->n_problems == MAX_PROBLEMS)
        return;
    problem_t *p = &r->problems[r->n_problems];
    p->order = r->n_problems++;
    p->line = line;
    snprintf(p->key, sizeof p->key, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
}

/* File order; problems with a default (line 0) after the file's own. */
static int by_line(const void *a, const void *b)
{
    const problem_t *x = a, *y = b;
    unsigned lx = (unsigned)x->line - 1u, ly = (unsigned)y->line - 1u; /* 0 wraps to the end */
    return lx != ly ? (lx > ly) - (lx < ly) : (x->order > y->order) - (x->order < y->order);
}

/* Every problem in one error, in file order: the first names file, line
 * and key; the others follow as "KEY (line N): ...". */
static int report(reader *r, mm_err *err)
{
    qsort(r->problems, (size_t)r->n_problems, sizeof r->problems[0], by_line);
    char text[sizeof err->msg];
    snprintf(text, sizeof text, "%s", r->problems[0].msg);
    int shown = 1;
    for (; shown < r->n_problems; shown++) {
        const problem_t *p = &r->problems[shown];
        size_t n = strlen(text);
        char one[400];
        snprintf(one, sizeof one, "; %s (line %d): %s", p->key, p->line, p->msg);
        if (n + strlen(one) + 120 >= sizeof text)
            break;
        snprintf(text + n, sizeof text - n, "%s", one);
    }
    /* the rest by key and line only, as many as fit */
    for (int i = shown; i < r->n_problems; i++) {
        size_t n = strlen(text);
        char one[160];
        snprintf(one, sizeof one, "%s%s (line %d)", i == shown ? "; also refused: " : ", ", r->problems[i].key,
                 r->problems[i].line);
        if (n + strlen(one) + 16 >= sizeof text) {
            snprintf(text + n, sizeof text - n, " and %d more", r->n_problems - i);
            break;
        }
        snprintf(text + n, sizeof text - n, "%s", one);
    }
    return mm_err_set(err, MM_EINPUT, r->path, r->problems[0].line, r->problems[0].key, "%s", text);
}

static void note(mm_torchtitan *tt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(mm_torchtitan *tt, const char *fmt, ...)
{
    if (tt->n_notes == MM_TT_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tt->notes[tt->n_notes++], sizeof tt->notes[0], fmt, ap);
    va_end(ap);
}

/* An override made from TOML key `from` ("" or "(...)": derived). */
static void set(mm_torchtitan *tt, const mm_toml *t, const char *from, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void set(mm_torchtitan *tt, const mm_toml *t, const char *from, const char *key, const char *fmt, ...)
{
    char v[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    const mm_toml_entry *e = t ? mm_toml_get(t, from) : NULL;
    if (tt->n_sets < MM_TT_MAX_SETS) {
        snprintf(tt->set_from[tt->n_sets], sizeof tt->set_from[0], "%s", from);
        tt->set_line[tt->n_sets] = e ? e->line : 0;
        snprintf(tt->sets[tt->n_sets++], sizeof tt->sets[0], "%s=%s", key, v);
    }
    note(tt, "%s%s -> %s: %s", from, e || from[0] == '(' ? "" : " (torchtitan's default)", key, v);
}

static const keydef *find_def(const char *key)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *k = keys[i].key;
        size_t n = strlen(k);
        if (n >= 2 && !strcmp(k + n - 2, ".*") ? !strncmp(key, k, n - 1) : !strcmp(key, k))
            return &keys[i];
    }
    return NULL;
}

/* ---- typed getters: a wrong type is a problem, the default is kept ---- */

static const mm_toml_entry *get(reader *r, const char *key, mm_toml_kind kind)
{
    const mm_toml_entry *e = mm_toml_get(r->t, key);
    if (e && e->v.kind != kind) {
        problem(r, key, e->line, "expects %s %s, got %s", kind == MM_TOML_INT ? "an" : "a", mm_toml_kind_name(kind),
                mm_toml_kind_name(e->v.kind));
        return NULL;
    }
    return e;
}

static long get_long(reader *r, const char *key, long def, long lo, long hi)
{
    const mm_toml_entry *e = get(r, key, MM_TOML_INT);
    if (!e)
        return def;
    if (e->v.i < lo || e->v.i > hi) {
        problem(r, key, e->line, "%lld is outside %ld..%ld", (long long)e->v.i, lo, hi);
        return def;
    }
    return (long)e->v.i;
}

static const char *get_str(reader *r, const char *key, const char *def)
{
    const mm_toml_entry *e = get(r, key, MM_TOML_STRING);
    return e ? e->v.s : def;
}

static bool get_bool(reader *r, const char *key, bool def)
{
    const mm_toml_entry *e = get(r, key, MM_TOML_BOOL);
    return e ? e->v.b : def;
}

static int line_of(const reader *r, const char *key)
{
    const mm_toml_entry *e = mm_toml_get(r->t, key);
    return e ? e->line : 0;
}

/* A key that must keep torchtitan's default (or a value that costs the
 * same): anything else is refused with `why`. */
static void refuse_unless_bool(reader *r, const char *key, bool ok, const char *why)
{
    const mm_toml_entry *e = mm_toml_get(r->t, key);
    if (e && e->v.kind == MM_TOML_BOOL && e->v.b != ok)
        problem(r, key, e->line, "%s: not modeled", why);
    else if (e && e->v.kind != MM_TOML_BOOL)
        get(r, key, MM_TOML_BOOL);
}

/* ---- the mapped tables --------------------------------------------------- */

static const flavor *map_model(reader *r)
{
    const char *name = get_str(r, "model.name", "llama3");
    const char *fl = get_str(r, "model.flavor", "debugmodel");
    if (strcmp(name, "llama3")) {
        problem(r, "model.name", line_of(r, "model.name"),
                "'%s' is not modeled (torchtitan's llama3 flavors 8B and 70B are)", name);
        return NULL;
    }
    for (size_t i = 0; i < sizeof flavors / sizeof flavors[0]; i++)
        if (!strcmp(flavors[i].name, fl)) {
            set(r->tt, r->t, "model.flavor", "model", "%s", flavors[i].model);
            set(r->tt, r->t, "(text data set)", "workload", "text");
            return &flavors[i];
        }
    problem(r, "model.flavor", line_of(r, "model.flavor"),
            "llama3 flavor '%s' is not modeled (8B and 70B are)", fl);
    return NULL;
}

/* model.converters and the float8 settings -> train.precision. */
static void map_precision(reader *r)
{
    const mm_toml_entry *cv = get(r, "model.converters", MM_TOML_ARRAY);
    bool fp8 = false;
    for (int i = 0; cv && i < cv->v.n; i++) {
        const mm_toml_value *it = &cv->v.items[i];
        if (it->kind != MM_TOML_STRING) {
            problem(r, "model.converters", cv->line, "expects a list of strings");
            break;
        }
        if (!strcmp(it->s, "float8") || !strcmp(it->s, "quantize.linear.float8"))
            fp8 = true;
        else
            problem(r, "model.converters", cv->line, "converter '%s' is not modeled (float8 is)", it->s);
    }
    const char *mp = get_str(r, "training.mixed_precision_param", "bfloat16");
    if (strcmp(mp, "bfloat16"))
        problem(r, "training.mixed_precision_param", line_of(r, "training.mixed_precision_param"),
                "'%s': training in FP32 is not modeled (bfloat16 is)", mp);
    const char *mr = get_str(r, "training.mixed_precision_reduce", "float32");
    if (strcmp(mr, "float32"))
        problem(r, "training.mixed_precision_reduce", line_of(r, "training.mixed_precision_reduce"),
                "'%s' is not float32 (torchtitan's one choice)", mr);
    const char *dt = get_str(r, "training.dtype", "float32");
    if (strcmp(dt, "float32"))
        problem(r, "training.dtype", line_of(r, "training.dtype"),
                "'%s': parameters and optimizer states in 16 bits are not modeled (float32 masters are)", dt);
    for (int v = 0; v < 2; v++) {
        const char *tab = v ? "quantize.linear.float8" : "float8";
        char k[96];
        snprintf(k, sizeof k, "%s.enable_fsdp_float8_all_gather", tab);
        refuse_unless_bool(r, k, false, "the FP8 all-gather of FSDP (half the gathered bytes)");
        snprintf(k, sizeof k, "%s.emulate", tab);
        refuse_unless_bool(r, k, false, "FP8 emulated in higher precision");
        snprintf(k, sizeof k, "%s.recipe_name", tab);
        const char *rn = get_str(r, k, "tensorwise");
        if (strcmp(rn, "tensorwise"))
            problem(r, k, line_of(r, k), "the '%s' scaling recipe is not modeled (tensorwise is)", rn);
    }
    if (fp8) {
        set(r->tt, r->t, "model.converters", "train.precision", "fp8");
        /* torchao's tensorwise recipe scales each tensor by its own amax
         * (dynamic scaling): the current-scaling recipe's kernels */
        set(r->tt, r->t, "model.converters", "train.fp8_recipe", "current");
    } else
        set(r->tt, r->t, "training.mixed_precision_param", "train.precision", "bf16");
}

static void map_recompute(reader *r)
{
    const char *mode = get_str(r, "activation_checkpoint.mode", "selective");
    const char *opt = get_str(r, "activation_checkpoint.selective_ac_option", "2");
    const char *rc = NULL;
    if (!strcmp(mode, "none") || !strcmp(mode, "full")) {
        rc = mode;
    } else if (!strcmp(mode, "selective")) {
        /* "1": full AC on every layer; other periods and op SAC differ from
         * mmsim's selective (Megatron's attention core: Korthikanti et al.
         * 2022): op SAC saves matmul and attention outputs and recomputes
         * every second matmul (torchtitan/distributed/activation_checkpoint.py) */
        if (!strcmp(opt, "1"))
            rc = "full";
        else
            problem(r, "activation_checkpoint.selective_ac_option",
                    line_of(r, "activation_checkpoint.selective_ac_option")
                        ? line_of(r, "activation_checkpoint.selective_ac_option")
                        : line_of(r, "activation_checkpoint.mode"),
                    "selective AC '%s' (%s)%s is not modeled: mode none or full, or option \"1\" (every layer)",
                    opt, !strcmp(opt, "op") ? "saves matmul outputs, recomputes every second matmul"
                                            : "full AC of every n-th layer",
                    line_of(r, "activation_checkpoint.mode") ? "" : ", torchtitan's default,");
    } else {
        problem(r, "activation_checkpoint.mode", line_of(r, "activation_checkpoint.mode"),
                "'%s' is not modeled (none, selective with option \"1\", full are)", mode);
    }
    if (rc)
        set(r->tt, r->t, "activation_checkpoint.mode", "train.recompute", "%s", rc);
}

/* torchtitan.h: torchtitan's split (generate_llm_fqn_per_model_part). */
int mm_torchtitan_split(int layers, int stages, int in, int out, int *per)
{
    if (stages == 1) {
        per[0] = layers;
        return 0;
    }
    int eff = layers + in + out, base = eff / stages, extra = eff % stages, cur = 0;
    if (stages > eff || base == 0 || in > base || out > base)
        return -1;
    for (int s = 0; s < stages; s++) {
        int n = base + (s < extra) - (s == 0 ? in : s == stages - 1 ? out : 0);
        if (s == stages - 1)
            n = layers - cur; /* the last stage takes what is left */
        per[s] = n;
        cur += n;
    }
    return 0;
}

/* The pipeline's pp x per_rank virtual stages: torchtitan's split of the
 * layers (in, out: the first and last stage's fewer layers) mapped to the
 * schedule, vpp and each rank's layers, or refused where the split fails
 * or gives a rank unequal chunks; the end of map_pipeline. */
static void map_stages(reader *r, const flavor *fl, const char *sched, const char *mine, bool multi, int pp,
                       int per_rank, long in, long out)
{
    mm_torchtitan *tt = r->tt;
    int nv = pp * per_rank, *per = calloc((size_t)nv, sizeof *per), *rank = calloc((size_t)pp, sizeof *rank);
    if (!per || !rank || mm_torchtitan_split(fl->layers, nv, (int)in, (int)out, per)) {
        if (per && rank)
            problem(r, "parallelism.pipeline_parallel_degree", line_of(r, "parallelism.pipeline_parallel_degree"),
                    "%d virtual stages over %d layers (+%ld, +%ld for embedding and output): torchtitan refuses the "
                    "split", nv, fl->layers, in, out);
        else
            problem(r, "parallelism.pipeline_parallel_degree", 0, "out of memory");
        free(per);
        free(rank);
        return;
    }
    /* virtual stage v runs on rank v mod pp ("loop"), or under ZB-V on rank
     * v below pp and 2 pp - 1 - v above ("v": ScheduleZBVZeroBubble's
     * stage pairs (r, 2 pp - 1 - r), pipeline_parallel.py
     * _get_pp_rank_to_stage_indices_mapping @ b5bcd76c); mmsim splits a
     * rank's layers into per_rank equal chunks, so uneven chunks are
     * refused */
    bool equal = true, vee = !strcmp(mine, "zb-v");
    for (int v = 0; v < nv; v++) {
        int at = vee && v >= pp ? 2 * pp - 1 - v : v % pp;
        rank[at] += per[v];
        if (per[v] != per[at])
            equal = false;
    }
    char list[512] = "[";
    for (int s = 0; s < pp; s++) {
        size_t k = strlen(list);
        snprintf(list + k, sizeof list - k, "%s%d", s ? ", " : "", rank[s]);
    }
    strncat(list, "]", sizeof list - strlen(list) - 1);
    if (!equal) {
        const char *k = line_of(r, "parallelism.pipeline_parallel_first_stage_less_layers")
                            ? "parallelism.pipeline_parallel_first_stage_less_layers"
                            : "parallelism.pipeline_parallel_schedule";
        problem(r, k, line_of(r, k),
                "%s splits the layers into unequal model chunks per rank, which mmsim does not model "
                "(first/last_stage_less_layers = 0 may split them evenly)", sched);
    } else {
        tt->stages = nv;
        set(tt, r->t, "parallelism.pipeline_parallel_schedule", "train.schedule", "%s", mine);
        set(tt, r->t, multi ? "parallelism.pipeline_parallel_layers_per_stage" : "parallelism.pipeline_parallel_schedule",
            "parallel.llm.vpp", "%d", per_rank);
        set(tt, r->t, "parallelism.pipeline_parallel_first_stage_less_layers", "parallel.llm.layers_per_stage", "%s",
            list);
    }
    free(per);
    free(rank);
}

static void map_pipeline(reader *r, const flavor *fl)
{
    mm_torchtitan *tt = r->tt;
    const char *sched = get_str(r, "parallelism.pipeline_parallel_schedule", "1F1B");
    long lps = get_long(r, "parallelism.pipeline_parallel_layers_per_stage", 0, 1, 1 << 20);
    long in = get_long(r, "parallelism.pipeline_parallel_first_stage_less_layers", 1, 0, 1 << 20);
    long out = get_long(r, "parallelism.pipeline_parallel_last_stage_less_layers", 1, 0, 1 << 20);
    tt->microbatch = get_long(r, "parallelism.pipeline_parallel_microbatch_size", 1, 1, 1L << 30);
    const char *csv = get_str(r, "parallelism.pipeline_parallel_schedule_csv", "");
    if (csv[0])
        problem(r, "parallelism.pipeline_parallel_schedule_csv", line_of(r, "parallelism.pipeline_parallel_schedule_csv"),
                "a schedule from a CSV file is not modeled");
    static const char *const own_split[] = {"parallelism.module_fqns_per_model_part",
                                            "parallelism.pipeline_parallel_split_points"};
    for (int i = 0; i < 2; i++) {
        const mm_toml_entry *e = mm_toml_get(r->t, own_split[i]);
        if (e && !(e->v.kind == MM_TOML_ARRAY && e->v.n == 0))
            problem(r, own_split[i], e->line, "a hand-made stage split is not read: use --set "
                                              "parallel.llm.layers_per_stage=[...]");
    }
    /* torch.distributed.pipelining's schedule names, compared without case
     * (get_schedule_class lowercases them) */
    char low[64];
    size_t n = 0;
    for (; sched[n] && n + 1 < sizeof low; n++)
        low[n] = (char)(sched[n] >= 'A' && sched[n] <= 'Z' ? sched[n] - 'A' + 'a' : sched[n]);
    low[n] = '\0';
    /* ZBVZeroBubble: torch.distributed.pipelining's ScheduleZBVZeroBubble
     * (torchtitan get_schedule_class @ b5bcd76c), a multi-stage schedule
     * with exactly two stages per rank in a V */
    bool zbv = !strcmp(low, "zbvzerobubble"), multi = !strcmp(low, "interleaved1f1b") || zbv;
    const char *mine = !strcmp(low, "1f1b")    ? "1f1b"
                       : !strcmp(low, "gpipe") ? "gpipe"
                       : zbv                   ? "zb-v"
                       : multi                 ? "interleaved"
                                               : NULL;
    int sl = line_of(r, "parallelism.pipeline_parallel_schedule");
    if (!mine) {
        problem(r, "parallelism.pipeline_parallel_schedule", sl,
                "'%s' is not modeled (1F1B, GPipe, Interleaved1F1B and ZBVZeroBubble are)", sched);
        return;
    }
    if (!fl || tt->pp < 1)
        return;
    if (tt->pp == 1) {
        set(tt, r->t, "parallelism.pipeline_parallel_schedule", "train.schedule", "1f1b");
        return;
    }
    int pp = (int)tt->pp, per_rank = multi ? 2 : 1;
    /* torchtitan's default: 2 virtual stages a rank for a looped schedule */
    if (lps) {
        long nv = (fl->layers + in + out + lps - 1) / lps;
        /* torchtitan: a multiple of pp, one a rank for a single-stage
         * schedule, at least two for a multi-stage one, and exactly two
         * for a V ("v schedules assume 2 stages per rank") */
        if (nv % pp || (!multi && nv / pp != 1) || (multi && nv / pp < 2) || (zbv && nv / pp != 2)) {
            problem(r, "parallelism.pipeline_parallel_layers_per_stage",
                    line_of(r, "parallelism.pipeline_parallel_layers_per_stage"),
                    "%ld virtual stages for %d pipeline ranks under %s: torchtitan refuses it", nv, pp, sched);
            return;
        }
        per_rank = (int)(nv / pp);
    }
    if ((long)pp * per_rank > fl->layers + in + out) {
        problem(r, "parallelism.pipeline_parallel_degree", line_of(r, "parallelism.pipeline_parallel_degree"),
                "%ld virtual stages over %d layers (+%ld, +%ld for embedding and output): torchtitan refuses it",
                (long)pp * per_rank, fl->layers, in, out);
        return;
    }
    map_stages(r, fl, sched, mine, multi, pp, per_rank, in, out);
}

static void map_parallel(reader *r)
{
    mm_torchtitan *tt = r->tt;
    tt->replicate = get_long(r, "parallelism.data_parallel_replicate_degree", 1, 1, 1L << 24);
    tt->shard = get_long(r, "parallelism.data_parallel_shard_degree", -1, -1, 1L << 24);
    if (tt->shard == 0) {
        problem(r, "parallelism.data_parallel_shard_degree", line_of(r, "parallelism.data_parallel_shard_degree"),
                "0 is not a degree (-1: the rest of the GPUs)");
        tt->shard = -1;
    }
    tt->shard_line = line_of(r, "parallelism.data_parallel_shard_degree");
    tt->tp = get_long(r, "parallelism.tensor_parallel_degree", 1, 1, 1L << 24);
    tt->pp = get_long(r, "parallelism.pipeline_parallel_degree", 1, 1, 1L << 24);
    tt->cp = get_long(r, "parallelism.context_parallel_degree", 1, 1, 1L << 24);
    long ep = get_long(r, "parallelism.expert_parallel_degree", 1, 1, 1L << 24);
    long etp = get_long(r, "parallelism.expert_tensor_parallel_degree", 1, 1, 1L << 24);
    if (tt->cp > 1)
        problem(r, "parallelism.context_parallel_degree", line_of(r, "parallelism.context_parallel_degree"),
                "%ld: torchtitan's context parallelism (KV rotated by all-gather or all-to-all) is not modeled",
                tt->cp);
    if (etp != 1)
        problem(r, "parallelism.expert_tensor_parallel_degree", line_of(r, "parallelism.expert_tensor_parallel_degree"),
                "a TP degree of the experts apart from the model's is not modeled");
    const char *be = get_str(r, "parallelism.expert_parallel_comm_backend", "standard");
    if (strcmp(be, "standard"))
        problem(r, "parallelism.expert_parallel_comm_backend", line_of(r, "parallelism.expert_parallel_comm_backend"),
                "'%s' is not modeled (standard is)", be);
    if (tt->tp > 1 && get_bool(r, "parallelism.disable_loss_parallel", false))
        problem(r, "parallelism.disable_loss_parallel", line_of(r, "parallelism.disable_loss_parallel"),
                "the loss on gathered logits is not modeled (loss parallel, over the vocabulary's TP shards, is)");
    refuse_unless_bool(r, "parallelism.enable_async_tensor_parallel", false,
                       "async TP (torch.compile's fused collective matmuls)");
    const char *rs = get_str(r, "parallelism.fsdp_reshard_after_forward", "default");
    /* "default" reshards unless pipelining (fsdp.yaml keep_gathered_under_pp);
     * the others match it when they say the same */
    if (strcmp(rs, "default") && strcmp(rs, "always") && strcmp(rs, "never"))
        problem(r, "parallelism.fsdp_reshard_after_forward", line_of(r, "parallelism.fsdp_reshard_after_forward"),
                "'%s' is not default, always or never", rs);
    else if ((!strcmp(rs, "never") && tt->pp == 1) || (!strcmp(rs, "always") && tt->pp > 1))
        problem(r, "parallelism.fsdp_reshard_after_forward", line_of(r, "parallelism.fsdp_reshard_after_forward"),
                "'%s' at pipeline degree %ld is not modeled (the fsdp profile reshards after the forward without "
                "pipelining and keeps the blocks gathered with it: 'default')", rs, tt->pp);
    set(tt, r->t, "parallelism.tensor_parallel_degree", "parallel.llm.tp", "%ld", tt->tp);
    set(tt, r->t, "parallelism.tensor_parallel_degree", "train.sequence_parallel", "%s", tt->tp > 1 ? "true" : "false");
    set(tt, r->t, "parallelism.pipeline_parallel_degree", "parallel.llm.pp", "%ld", tt->pp);
    set(tt, r->t, "parallelism.context_parallel_degree", "parallel.llm.cp", "%ld", tt->cp);
    set(tt, r->t, "parallelism.expert_parallel_degree", "parallel.llm.ep", "%ld", ep);
}

static void map_training(reader *r)
{
    mm_torchtitan *tt = r->tt;
    tt->local_batch = get_long(r, "training.local_batch_size", 8, 1, 1L << 30);
    tt->global_batch = get_long(r, "training.global_batch_size", -1, -1, 1L << 40);
    if (tt->global_batch == 0) {
        problem(r, "training.global_batch_size", line_of(r, "training.global_batch_size"),
                "0 is not a batch (-1: local_batch_size x the data-parallel degree)");
        tt->global_batch = -1;
    }
    tt->global_line = line_of(r, "training.global_batch_size");
    long seq = get_long(r, "training.seq_len", 2048, 1, 1L << 30);
    set(tt, r->t, "training.seq_len", "train.seq_len", "%ld", seq);
    /* without pipelining a micro-batch is a local batch (gradient
     * accumulation runs global / (local x dp) of them); with it, the local
     * batch is cut into micro-batches of pipeline_parallel_microbatch_size */
    if (tt->pp > 1) {
        if (tt->local_batch % tt->microbatch)
            problem(r, "parallelism.pipeline_parallel_microbatch_size",
                    line_of(r, "parallelism.pipeline_parallel_microbatch_size"),
                    "%ld does not divide local_batch_size %ld", tt->microbatch, tt->local_batch);
        else if (tt->stages && tt->local_batch / tt->microbatch < tt->stages)
            problem(r, "training.local_batch_size", line_of(r, "training.local_batch_size"),
                    "%ld micro-batches of %ld are fewer than the %d pipeline stages (torchtitan refuses it)",
                    tt->local_batch / tt->microbatch, tt->microbatch, tt->stages);
        set(tt, r->t, "parallelism.pipeline_parallel_microbatch_size", "train.micro_batch", "%ld", tt->microbatch);
    } else {
        set(tt, r->t, "training.local_batch_size", "train.micro_batch", "%ld", tt->local_batch);
    }
    refuse_unless_bool(r, "training.enable_cpu_offload", false, "FSDP's parameter and gradient offload to the host");
    refuse_unless_bool(r, "compile.enable", false,
                       "torch.compile (fused kernels; the fsdp profile counts eager ones)");
    refuse_unless_bool(r, "optimizer.early_step_in_backward", false, "the optimizer step inside the backward");
    refuse_unless_bool(r, "fault_tolerance.enable", false, "TorchFT replica groups");
    const char *opt = get_str(r, "optimizer.name", "AdamW");
    if (strcmp(opt, "AdamW") && strcmp(opt, "Adam"))
        problem(r, "optimizer.name", line_of(r, "optimizer.name"), "'%s' is not modeled (Adam and AdamW are)", opt);
    const char *impl = get_str(r, "optimizer.implementation", "fused");
    if (strcmp(impl, "fused"))
        problem(r, "optimizer.implementation", line_of(r, "optimizer.implementation"),
                "'%s' is not modeled (the fsdp profile's step is the fused one)", impl);
    const char *ci = get_str(r, "experimental.custom_import", "");
    if (ci[0])
        problem(r, "experimental.custom_import", line_of(r, "experimental.custom_import"),
                "a custom module ('%s') is not modeled", ci);
    set(tt, r->t, "(torchtitan)", "train.framework", "fsdp");
}

int mm_torchtitan_read(const char *path, mm_torchtitan *tt, mm_err *err)
{
    memset(tt, 0, sizeof *tt);
    mm_toml t;
    int rc = mm_toml_load_file(&t, path, err);
    if (rc)
        return rc;
    reader *r = calloc(1, sizeof *r);
    if (!r) {
        mm_toml_free(&t);
        return mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    }
    *r = (reader){.path = path, .t = &t, .tt = tt};
    /* every key: known (mapped or accepted) or refused, all reported */
    for (int i = 0; i < t.n; i++) {
        const keydef *d = find_def(t.e[i].key);
        if (!d)
            problem(r, t.e[i].key, t.e[i].line, "not a torchtitan key mmsim knows");
        else if (d->kind == K_REFUSE)
            problem(r, t.e[i].key, t.e[i].line, "%s: not modeled", d->why);
        else if (d->kind == K_IGNORE)
            note(tt, "%s: accepted (%s)", t.e[i].key, d->why);
    }
    const flavor *fl = map_model(r);
    map_parallel(r);
    map_pipeline(r, fl);
    map_training(r);
    map_precision(r);
    map_recompute(r);
    rc = 0;
    if (r->n_problems)
        rc = report(r, err);
    free(r);
    mm_toml_free(&t);
    return rc;
}

void mm_torchtitan_repoint(const mm_torchtitan *tt, const char *path, const char *const *user_sets, int n_user,
                           mm_err *err)
{
    const char *sets[MM_TT_MAX_SETS], *from[MM_TT_MAX_SETS];
    for (int i = 0; i < tt->n_sets; i++) {
        sets[i] = tt->sets[i];
        from[i] = tt->set_line[i] ? tt->set_from[i] : NULL;
    }
    mm_scenario_repoint_set(err, path, user_sets, n_user, sets, from, tt->set_line, tt->n_sets);
}

/* dp, ZeRO stage and global batch from the world size (ParallelDims:
 * dp_shard -1 takes the GPUs left over; FSDP when dp_shard > 1, DDP when
 * only replicas).  Returns 0 or -MM_EINPUT. */
static int derive(const char *path, mm_torchtitan *tt, int gpus, mm_err *err)
{
    /* each degree is at most 2^24: their product is checked in double first */
    if ((double)tt->tp * (double)tt->pp * (double)tt->cp * (double)tt->replicate > (double)gpus)
        return mm_err_set(err, MM_EINPUT, path, tt->shard_line, "parallelism.data_parallel_shard_degree",
                          "replicate x tp x pp x cp = %g exceeds the cluster's %d GPUs (set cluster.nodes)",
                          (double)tt->tp * (double)tt->pp * (double)tt->cp * (double)tt->replicate, gpus);
    long per = tt->tp * tt->pp * tt->cp * tt->replicate;
    long shard = tt->shard;
    if (shard < 0) {
        if (gpus % per)
            return mm_err_set(err, MM_EINPUT, path, tt->shard_line, "parallelism.data_parallel_shard_degree",
                              "-1: replicate x tp x pp x cp = %ld does not divide the cluster's %d GPUs (set "
                              "cluster.nodes)", per, gpus);
        shard = gpus / per;
    } else if (per * shard != gpus) {
        return mm_err_set(err, MM_EINPUT, path, tt->shard_line, "parallelism.data_parallel_shard_degree",
                          "replicate x shard x tp x pp x cp = %ld is not the cluster's %d GPUs (set cluster.nodes)",
                          per * shard, gpus);
    }
    if (shard > 1 && tt->replicate > 1)
        return mm_err_set(err, MM_EINPUT, path, tt->shard_line, "parallelism.data_parallel_shard_degree",
                          "HSDP (shard %ld within replica groups of %ld) is not modeled: one of the two must be 1",
                          shard, tt->replicate);
    long dp = shard * tt->replicate;
    long global = tt->global_batch > 0 ? tt->global_batch : tt->local_batch * dp;
    if (global % (tt->local_batch * dp))
        return mm_err_set(err, MM_EINPUT, path, tt->global_line, "training.global_batch_size",
                          "%ld is not a multiple of local_batch_size x dp = %ld x %ld", global, tt->local_batch, dp);
    if (tt->pp > 1 && global != tt->local_batch * dp)
        return mm_err_set(err, MM_EINPUT, path, tt->global_line, "training.global_batch_size",
                          "%ld: gradient accumulation under pipelining (a pipeline flush per local batch) is not "
                          "modeled; give local_batch_size x dp = %ld", global, tt->local_batch * dp);
    snprintf(tt->derived[0], sizeof tt->derived[0], "parallel.llm.dp=%ld", dp);
    snprintf(tt->derived[1], sizeof tt->derived[1], "train.zero=%d", shard > 1 ? 3 : 0);
    snprintf(tt->derived[2], sizeof tt->derived[2], "train.global_batch=%ld", global);
    note(tt, "(world size %d GPUs) -> parallel.llm.dp: %ld (shard %ld x replicate %ld)", gpus, dp, shard,
         tt->replicate);
    note(tt, "(%s) -> train.zero: %d", shard > 1 ? "FSDP over the shard group" : "no sharding", shard > 1 ? 3 : 0);
    note(tt, "%s -> train.global_batch: %ld", tt->global_batch > 0 ? "training.global_batch_size"
                                                                   : "(local_batch_size x dp)", global);
    return 0;
}

int mm_torchtitan_scenario(const char *path, const char *scenario, const char *const *sets, int n_sets,
                           mm_torchtitan *tt, mm_scenario *sc, mm_err *err)
{
    int rc = mm_torchtitan_read(path, tt, err);
    if (rc)
        return rc;
    if (n_sets > MM_TT_MAX_USER_SETS)
        return mm_err_set(err, MM_EINPUT, "--set", 0, "", "more than %d --set overrides", MM_TT_MAX_USER_SETS);
    const char *all[MM_TT_MAX_SETS + 3 + MM_TT_MAX_USER_SETS];
    int n = 0;
    for (int i = 0; i < tt->n_sets; i++)
        all[n++] = tt->sets[i];
    for (int i = 0; i < n_sets; i++)
        all[n++] = sets[i];
    /* the cluster as it stands after the user's --set */
    if ((rc = mm_scenario_load(sc, scenario, all, n, err)))
        return rc;
    int gpus = 0;
    rc = mm_scenario_cluster_gpus(sc, &gpus, err);
    mm_scenario_free(sc);
    if (rc || (rc = derive(path, tt, gpus, err)))
        return rc;
    /* read once more with the derived keys between the file's and the
     * user's, so that every key keeps where it came from */
    memmove(all + tt->n_sets + 3, all + tt->n_sets, (size_t)n_sets * sizeof *all);
    for (int i = 0; i < 3; i++)
        all[tt->n_sets + i] = tt->derived[i];
    return mm_scenario_load(sc, scenario, all, n + 3, err);
}
