/* scenario.c - turns a scenario YAML file (or the built-in default) plus
 * `--set dotted.key=value` overrides into a validated mm_scenario, and back
 * into canonical text for hashing.
 *
 * Overrides are applied to the parsed document before anything is checked,
 * so one validator serves files and command lines alike.  To still name the
 * right origin in errors, the loader remembers which dotted paths an override
 * wrote (the key itself and any mapping it had to create on the way); an
 * error about such a path, or about anything below it, is reported as file
 * "--set", line 0.
 *
 * Keys a file leaves out take these defaults (a file must name `model` and
 * `cluster.topology`): cluster.nodes 1; train.micro_batch 1, seq_len 4096,
 * precision bf16, recompute none, sequence_parallel false, zero 0, schedule
 * 1f1b, the three overlap switches false, memory_reserve_gib 2, frozen [];
 * train.global_batch
 * micro_batch x parallel.llm.dp (Megatron-LM's default); every degree of a
 * module layout 1, its zero -1 (inherit train.zero); parallel.vision and
 * parallel.audio absent; placement pipeline; workload text; batching
 * sequential; network flow; iterations 1;
 * seed 1.
 *
 * Not for: rules that need the model or the topology (degrees against the
 * GPU count, layers against pp, batch against micro_batch x dp): the run
 * layer checks those and reports them with mm_scenario_fail(). */
#include "run/scenario.h"

#include <inttypes.h>
#include <libfyaml.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/doc.h"

const char *const mm_precision_names[] = {"bf16", "fp16", "fp8", NULL};
const char *const mm_recompute_names[] = {"none", "selective", "full", NULL};
const char *const mm_schedule_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", NULL};
const char *const mm_cp_comm_names[] = {"ring", "ulysses", NULL};
const char *const mm_attention_names[] = {"flash", "unfused", NULL};
const char *const mm_placement_names[] = {"pipeline", "colocated", "disjoint",
                                          "homogeneous", NULL};
const char *const mm_batching_names[] = {"sequential", "grouped", "packed", "balanced",
                                         "post-balance", NULL};
const char *const mm_network_names[] = {"flow", "analytic", NULL};

const char mm_scenario_default_yaml[] =
    "# Built-in default scenario: what `mmsim run` simulates with no file.\n"
    "# A LLaVA-OneVision-7B-like model (SigLIP so400m + MLP projector + Qwen2.5-7B)\n"
    "# on two DGX H100 nodes (16 GPUs), the encoder colocated with the LLM.\n"
    "# Any LLM config runs on top of it (--set model=models/llama-2-7b.json):\n"
    "# a model without an encoder ignores the encoder sections and the images.\n"
    "model: models/llava-ov-qwen2.5-7b.yaml # HF config.json, or an mmsim model YAML\n"
    "cluster:\n"
    "  topology: topologies/dgx-h100.yaml\n"
    "  nodes: 2\n"
    "train:\n"
    "  global_batch: 64          # samples per iteration\n"
    "  micro_batch: 1            # samples per micro-batch\n"
    "  seq_len: 4096             # max LLM tokens per sample\n"
    "  precision: bf16           # bf16 | fp16 | fp8\n"
    "  recompute: selective      # none | selective | full\n"
    "  sequence_parallel: false\n"
    "  zero: 1                   # 1 = Megatron's distributed optimizer\n"
    "  schedule: 1f1b            # gpipe | 1f1b | interleaved | zb-h1\n"
    "  overlap_grad_reduce: false\n"
    "  overlap_param_gather: false\n"
    "  tp_comm_overlap: false\n"
    "  memory_reserve_gib: 2     # HBM kept back from the OOM verdict\n"
    "  frozen: []                # modules without backward/optimizer\n"
    "parallel:\n"
    "  llm: {tp: 4, pp: 2, cp: 1, dp: 2, vpp: 1, ep: 1}   # 4 x 2 x 2 = 16 GPUs\n"
    "  vision: {tp: 1, pp: 1, dp: 16}                      # sharded over the same 16\n"
    "  placement: colocated      # pipeline | colocated | disjoint | homogeneous\n"
    "# one image in 5 tiles (anyres 2x2 + base) of 729 tokens, and 300 text tokens\n"
    "workload: {kind: fixed, images: 1, tiles: 5, text_tokens: 300}\n"
    "batching: sequential        # sequential | grouped | packed | balanced | post-balance\n"
    "network: flow               # flow | analytic\n"
    "iterations: 2\n"
    "seed: 1\n";

static const char *const root_keys[] = {"model",    "cluster",  "train",
                                        "parallel", "workload", "batching",
                                        "network",  "iterations", "seed", "perturb", NULL};
/* Keys of each perturbation kind, in mm_perturb_kind order (hw/perturb.h). */
static const char *const perturb_keys[MM_PT_COUNT][8] = {
    [MM_PT_SLOW_GPU] = {"kind", "gpus", "nodes", "fraction", "factor", NULL},
    [MM_PT_JITTER] = {"kind", "gpus", "nodes", "fraction", "cv", "dist", NULL},
    [MM_PT_HBM] = {"kind", "gpus", "nodes", "fraction", "bandwidth", "capacity", NULL},
    [MM_PT_NIC] = {"kind", "nodes", "nics", "factor", "latency_us", NULL},
    [MM_PT_RAIL] = {"kind", "rails", "factor", "latency_us", NULL},
    [MM_PT_SWITCH] = {"kind", "leaves", "spines", "factor", "latency_us", "failed", NULL},
    [MM_PT_LINK] = {"kind", "leaf", "spine", "factor", "latency_us", "failed", NULL},
    [MM_PT_NODE_GROUP] = {"kind", "group", "nic_gbit_s", NULL},
    [MM_PT_STALL] = {"kind", "every", "seconds", NULL},
};
static const char *const jitter_dists[] = {"lognormal", NULL};
static const char *const cluster_keys[] = {"topology", "nodes", NULL};
static const char *const train_keys[] = {
    "global_batch", "micro_batch", "seq_len", "precision", "recompute",
    "sequence_parallel", "zero", "schedule", "overlap_grad_reduce",
    "overlap_param_gather", "tp_comm_overlap", "memory_reserve_gib", "frozen", "cp_comm",
    "pass_times", "attention", NULL};
static const char *const parallel_keys[] = {"llm", "vision", "audio", "placement", "order", "projector", NULL};
static const char *const projector_sides[] = {"encoder", "llm", NULL};
/* tp first: a typo such as `tpp` is as close to tp as to pp, and tp is the
 * likelier meaning. */
static const char *const layout_keys[] = {"tp", "pp", "cp", "dp", "vpp", "ep",
                                          "zero", "sp", "layers_per_stage", NULL};
static const char *const fixed_keys[] = {"kind", "images", "tiles", "text_tokens", "audio_seconds", NULL};
static const char *const workload_kinds[] = {"fixed", NULL};

#define SET_FILE "--set"
#define PATH_MAX_LEN 128 /* = sizeof(mm_err.key) */

/* strlcpy: copies what fits and always terminates (dst_len > 0). */
static void copy_trunc(char *dst, size_t dst_len, const char *src)
{
    size_t n = strlen(src);
    if (n >= dst_len)
        n = dst_len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- the loader --------------------------------------------------------- */

typedef struct loader {
    mm_scenario *sc;
    mm_doc doc;
    char (*owned)[PATH_MAX_LEN]; /* dotted paths written by --set */
    int n_owned, cap_owned;
} loader;

static int own(loader *ld, const char *path, mm_err *err)
{
    if (ld->n_owned == ld->cap_owned) {
        int cap = ld->cap_owned ? 2 * ld->cap_owned : 16;
        void *p = realloc(ld->owned, (size_t)cap * sizeof *ld->owned);
        if (!p)
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, path, "out of memory");
        ld->owned = p;
        ld->cap_owned = cap;
    }
    copy_trunc(ld->owned[ld->n_owned++], PATH_MAX_LEN, path);
    return 0;
}

/* True when `path` is an overridden key or lies below one. */
static bool is_owned(const loader *ld, const char *path)
{
    for (int i = 0; i < ld->n_owned; i++) {
        size_t n = strlen(ld->owned[i]);
        if (strncmp(path, ld->owned[i], n) == 0 && (path[n] == '\0' || path[n] == '.' || path[n] == '['))
            return true;
    }
    return false;
}

/* Re-points an input error at --set when an override wrote the key. */
static int fix(const loader *ld, int rc, mm_err *err)
{
    if (rc && err->code == MM_EINPUT && is_owned(ld, err->key)) {
        copy_trunc(err->file, sizeof err->file, SET_FILE);
        err->line = 0;
    }
    return rc;
}

/* Records where a key was read, for mm_scenario_fail().  The table has room
 * for every key of the schema; should it ever fill, later keys are reported
 * as defaults (file, line 0) rather than failing the load. */
static void note(loader *ld, const char *path, int line)
{
    mm_scenario *sc = ld->sc;
    if (sc->n_keys >= MM_MAX_KEYS)
        return;
    bool set = is_owned(ld, path);
    int i = sc->n_keys++;
    copy_trunc(sc->keys[i].key, sizeof sc->keys[i].key, path);
    copy_trunc(sc->keys[i].file, sizeof sc->keys[i].file, set ? SET_FILE : sc->source);
    sc->keys[i].line = set ? 0 : line;
}

static void join(char *out, const char *prefix, const char *key)
{
    copy_trunc(out, PATH_MAX_LEN, prefix);
    size_t n = strlen(out);
    if (n > 0 && n + 1 < PATH_MAX_LEN) {
        out[n++] = '.';
        out[n] = '\0';
    }
    copy_trunc(out + n, PATH_MAX_LEN - n, key);
}

/* ---- typed reads that record and re-point ------------------------------- */

static int get_i64(loader *ld, struct fy_node *map, const char *prefix, const char *key,
                   int64_t min, int64_t max, int64_t *out, mm_err *err)
{
    char path[PATH_MAX_LEN];
    join(path, prefix, key);
    bool found = false;
    int rc = mm_node_int(&ld->doc, map, key, path, min, max, out, &found, err);
    if (rc)
        return fix(ld, rc, err);
    if (found)
        note(ld, path, mm_node_key_line(map, key));
    return 0;
}

static int get_int(loader *ld, struct fy_node *map, const char *prefix, const char *key,
                   int min, int max, int *out, mm_err *err)
{
    int64_t v = *out;
    int rc = get_i64(ld, map, prefix, key, min, max, &v, err);
    if (!rc)
        *out = (int)v;
    return rc;
}

static int get_double(loader *ld, struct fy_node *map, const char *prefix, const char *key,
                      double min, double max, double *out, mm_err *err)
{
    char path[PATH_MAX_LEN];
    join(path, prefix, key);
    bool found = false;
    int rc = mm_node_double(&ld->doc, map, key, path, min, max, out, &found, err);
    if (rc)
        return fix(ld, rc, err);
    if (found)
        note(ld, path, mm_node_key_line(map, key));
    return 0;
}

static int get_bool(loader *ld, struct fy_node *map, const char *prefix, const char *key,
                    bool *out, mm_err *err)
{
    char path[PATH_MAX_LEN];
    join(path, prefix, key);
    bool found = false;
    int rc = mm_node_bool(&ld->doc, map, key, path, out, &found, err);
    if (rc)
        return fix(ld, rc, err);
    if (found)
        note(ld, path, mm_node_key_line(map, key));
    return 0;
}

static int get_enum(loader *ld, struct fy_node *map, const char *prefix, const char *key,
                    const char *const *choices, int *out, mm_err *err)
{
    char path[PATH_MAX_LEN];
    join(path, prefix, key);
    bool found = false;
    int rc = mm_node_enum(&ld->doc, map, key, path, choices, out, &found, err);
    if (rc)
        return fix(ld, rc, err);
    if (found)
        note(ld, path, mm_node_key_line(map, key));
    return 0;
}

static int get_str(loader *ld, struct fy_node *map, const char *prefix, const char *key,
                   char *out, size_t len, bool *found, mm_err *err)
{
    char path[PATH_MAX_LEN];
    join(path, prefix, key);
    int rc = mm_node_str(&ld->doc, map, key, path, out, len, found, err);
    if (rc)
        return fix(ld, rc, err);
    if (*found)
        note(ld, path, mm_node_key_line(map, key));
    return 0;
}

/* A nested mapping: checks its keys; *out is NULL when absent or null. */
static int get_section(loader *ld, struct fy_node *map, const char *prefix, const char *key,
                       const char *const *allowed, struct fy_node **out, mm_err *err)
{
    char path[PATH_MAX_LEN];
    join(path, prefix, key);
    struct fy_node *v = mm_node_get(map, key);
    *out = NULL;
    if (!v)
        return 0;
    note(ld, path, mm_node_key_line(map, key));
    if (mm_node_is_null(v))
        return 0;
    int rc = mm_node_check_keys(&ld->doc, v, path, allowed, err);
    if (rc)
        return fix(ld, rc, err);
    *out = v;
    return 0;
}

static int require(const loader *ld, bool found, const char *path, const char *what,
                   mm_err *err)
{
    if (found)
        return 0;
    return fix(ld, mm_err_set(err, MM_EINPUT, ld->sc->source, 0, path,
                              "missing: the scenario must name %s", what),
               err);
}

/* ---- sections ----------------------------------------------------------- */

static int read_cluster(loader *ld, struct fy_node *root, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    struct fy_node *m;
    bool found = false;
    int rc = get_section(ld, root, "", "cluster", cluster_keys, &m, err);
    if (!rc)
        rc = get_str(ld, m, "cluster", "topology", sc->topology, sizeof sc->topology,
                     &found, err);
    if (!rc)
        rc = require(ld, found, "cluster.topology",
                     "a topology file, e.g. topologies/dgx-h100.yaml", err);
    if (!rc)
        rc = get_int(ld, m, "cluster", "nodes", 1, INT_MAX, &sc->nodes, err);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* train.frozen: a list of module names.  Order and repeats carry no meaning,
 * so the list is kept sorted and unique (the canonical text relies on it). */
static int read_frozen(loader *ld, struct fy_node *train, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    const char *path = "train.frozen";
    struct fy_node *v = mm_node_get(train, "frozen");
    if (!v)
        return 0;
    note(ld, path, mm_node_key_line(train, "frozen"));
    if (mm_node_is_null(v))
        return 0;
    int line = mm_node_line(v);
    if (!fy_node_is_sequence(v))
        return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, line, path,
                                  "expected a list of module names, e.g. [vision]"),
                   err);
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(v, &it))) {
        if (sc->train.n_frozen == MM_MAX_FROZEN)
            return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(item), path,
                                      "at most %d modules can be frozen", MM_MAX_FROZEN),
                       err);
        char *name = sc->train.frozen[sc->train.n_frozen];
        int rc = mm_node_as_str(&ld->doc, item, path, name, sizeof sc->train.frozen[0], err);
        if (rc)
            return fix(ld, rc, err);
        if (!name[0])
            return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(item), path,
                                      "empty module name"),
                       err);
        sc->train.n_frozen++;
    }
    qsort(sc->train.frozen, (size_t)sc->train.n_frozen, sizeof sc->train.frozen[0], cmp_name);
    int n = 0;
    for (int i = 0; i < sc->train.n_frozen; i++)
        if (n == 0 || strcmp(sc->train.frozen[n - 1], sc->train.frozen[i]) != 0)
            memmove(sc->train.frozen[n++], sc->train.frozen[i], sizeof sc->train.frozen[0]);
    sc->train.n_frozen = n;
    return 0;
}

static int read_train(loader *ld, struct fy_node *root, bool *gb_found, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    struct fy_node *m;
    int rc = get_section(ld, root, "", "train", train_keys, &m, err);
    int64_t gb = 0;
    int prec = (int)sc->train.precision, rec = (int)sc->train.recompute;
    int sched = (int)sc->train.schedule;
    const char *p = "train";
    if (!rc)
        rc = get_i64(ld, m, p, "global_batch", 1, INT64_MAX, &gb, err);
    *gb_found = gb != 0;
    if (*gb_found)
        sc->train.global_batch = gb;
    if (!rc)
        rc = get_i64(ld, m, p, "micro_batch", 1, INT_MAX, &sc->train.micro_batch, err);
    if (!rc)
        rc = get_i64(ld, m, p, "seq_len", 1, INT64_MAX, &sc->train.seq_len, err);
    if (!rc)
        rc = get_enum(ld, m, p, "precision", mm_precision_names, &prec, err);
    if (!rc)
        rc = get_enum(ld, m, p, "recompute", mm_recompute_names, &rec, err);
    if (!rc)
        rc = get_bool(ld, m, p, "sequence_parallel", &sc->train.sequence_parallel, err);
    if (!rc)
        rc = get_int(ld, m, p, "zero", 0, 3, &sc->train.zero, err);
    if (!rc)
        rc = get_enum(ld, m, p, "schedule", mm_schedule_names, &sched, err);
    if (!rc)
        rc = get_bool(ld, m, p, "overlap_grad_reduce", &sc->train.overlap_grad_reduce, err);
    if (!rc)
        rc = get_bool(ld, m, p, "overlap_param_gather", &sc->train.overlap_param_gather, err);
    if (!rc)
        rc = get_bool(ld, m, p, "tp_comm_overlap", &sc->train.tp_comm_overlap, err);
    if (!rc)
        rc = get_double(ld, m, p, "memory_reserve_gib", 0.0, 1e6, &sc->train.memory_reserve_gib, err);
    int cpc = (int)sc->train.cp_comm;
    if (!rc)
        rc = get_enum(ld, m, p, "cp_comm", mm_cp_comm_names, &cpc, err);
    sc->train.cp_comm = (mm_cp_comm)cpc;
    int att = (int)sc->train.attention;
    if (!rc)
        rc = get_enum(ld, m, p, "attention", mm_attention_names, &att, err);
    sc->train.attention = (mm_attention)att;
    bool given;
    if (!rc)
        rc = get_str(ld, m, p, "pass_times", sc->train.pass_times, sizeof sc->train.pass_times, &given, err);
    if (!rc)
        rc = read_frozen(ld, m, err);
    sc->train.precision = (mm_precision)prec;
    sc->train.recompute = (mm_recompute)rec;
    sc->train.schedule = (mm_schedule_kind)sched;
    return rc;
}

static int read_stages(loader *ld, struct fy_node *m, const char *prefix,
                       mm_module_layout *lay, mm_err *err)
{
    char path[PATH_MAX_LEN];
    join(path, prefix, "layers_per_stage");
    struct fy_node *v = mm_node_get(m, "layers_per_stage");
    if (!v)
        return 0;
    note(ld, path, mm_node_key_line(m, "layers_per_stage"));
    if (mm_node_is_null(v))
        return 0;
    if (!fy_node_is_sequence(v))
        return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), path,
                                  "expected a list of layer counts, one per stage, "
                                  "e.g. [2, 3, 3, 2]"),
                   err);
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(v, &it))) {
        if (lay->n_layers_per_stage == MM_MAX_PP)
            return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(item), path,
                                      "at most %d stages", MM_MAX_PP),
                       err);
        int64_t n = 0;
        int rc = mm_node_as_int(&ld->doc, item, path, 0, INT_MAX, &n, err);
        if (rc)
            return fix(ld, rc, err);
        lay->layers_per_stage[lay->n_layers_per_stage++] = (int)n;
    }
    return 0;
}

static int read_layout(loader *ld, struct fy_node *par, const char *name, bool always,
                       mm_module_layout *lay, mm_err *err)
{
    char prefix[PATH_MAX_LEN];
    join(prefix, "parallel", name);
    memset(lay, 0, sizeof *lay);
    lay->tp = lay->pp = lay->cp = lay->dp = lay->vpp = lay->ep = 1;
    lay->zero = -1;
    struct fy_node *m;
    int rc = get_section(ld, par, "parallel", name, layout_keys, &m, err);
    lay->present = always || m != NULL;
    if (rc || !m)
        return rc;
    int *deg[] = {&lay->tp, &lay->pp, &lay->cp, &lay->dp, &lay->vpp, &lay->ep};
    for (size_t i = 0; i < sizeof deg / sizeof deg[0] && !rc; i++)
        rc = get_int(ld, m, prefix, layout_keys[i], 1, INT_MAX, deg[i], err);
    if (!rc)
        rc = get_int(ld, m, prefix, "zero", 0, 3, &lay->zero, err);
    if (!rc)
        rc = get_bool(ld, m, prefix, "sp", &lay->sp, err);
    if (!rc)
        rc = read_stages(ld, m, prefix, lay, err);
    return rc;
}

static int read_parallel(loader *ld, struct fy_node *root, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    struct fy_node *m;
    int place = (int)sc->parallel.placement;
    int rc = get_section(ld, root, "", "parallel", parallel_keys, &m, err);
    if (!rc)
        rc = read_layout(ld, m, "llm", true, &sc->parallel.llm, err);
    if (!rc)
        rc = read_layout(ld, m, "vision", false, &sc->parallel.vision, err);
    if (!rc)
        rc = read_layout(ld, m, "audio", false, &sc->parallel.audio, err);
    if (!rc)
        rc = get_enum(ld, m, "parallel", "placement", mm_placement_names, &place, err);
    sc->parallel.placement = (mm_placement)place;
    bool given;
    if (!rc)
        rc = get_str(ld, m, "parallel", "order", sc->parallel.order, sizeof sc->parallel.order, &given, err);
    int side = sc->parallel.projector_on_llm ? 1 : 0;
    if (!rc)
        rc = get_enum(ld, m, "parallel", "projector", projector_sides, &side, err);
    sc->parallel.projector_on_llm = side == 1;
    return rc;
}

/* workload: `text`, a file path, or {kind: fixed, images, tiles, text_tokens}. */
static int read_workload(loader *ld, struct fy_node *root, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    struct fy_node *v = mm_node_get(root, "workload");
    if (!v)
        return 0;
    int keyline = mm_node_key_line(root, "workload");
    note(ld, "workload", keyline);
    if (mm_node_is_null(v) || fy_node_is_sequence(v))
        return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, keyline, "workload",
                                  "expected `text`, a mixture or trace file, or "
                                  "{kind: fixed, images: N, tiles: N, text_tokens: N}"),
                   err);
    if (fy_node_is_scalar(v)) {
        /* A plain number or boolean is a slip, not a file name. */
        mm_err scratch;
        double num;
        bool flag;
        if (fy_node_get_style(v) == FYNS_PLAIN &&
            (mm_node_as_double(&ld->doc, v, "workload", -1e308, 1e308, &num, &scratch) == 0 ||
             mm_node_bool(&ld->doc, root, "workload", "workload", &flag, NULL, &scratch) == 0))
            return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), "workload",
                                      "expected `text`, a mixture or trace file, or "
                                      "{kind: fixed, images: N, tiles: N, text_tokens: N}"),
                       err);
        int rc = mm_node_as_str(&ld->doc, v, "workload", sc->workload.path,
                                sizeof sc->workload.path, err);
        if (rc)
            return fix(ld, rc, err);
        if (strcmp(sc->workload.path, "text") == 0) {
            sc->workload.kind = MM_WORKLOAD_TEXT;
            sc->workload.path[0] = '\0';
        } else {
            sc->workload.kind = MM_WORKLOAD_FILE;
        }
        return 0;
    }
    struct fy_node *m = v;
    int rc = fix(ld, mm_node_check_keys(&ld->doc, m, "workload", fixed_keys, err), err);
    int kind = -1;
    sc->workload.kind = MM_WORKLOAD_FIXED;
    sc->workload.images = 0;
    sc->workload.tiles = 1;
    sc->workload.text_tokens = 0;
    if (!rc)
        rc = get_enum(ld, m, "workload", "kind", workload_kinds, &kind, err);
    if (!rc && kind < 0)
        rc = fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, keyline, "workload.kind",
                                "missing: a workload mapping needs `kind: fixed`"),
                 err);
    if (!rc)
        rc = get_int(ld, m, "workload", "images", 0, INT_MAX, &sc->workload.images, err);
    if (!rc)
        rc = get_int(ld, m, "workload", "tiles", 1, INT_MAX, &sc->workload.tiles, err);
    if (!rc)
        rc = get_i64(ld, m, "workload", "text_tokens", 0, INT64_MAX,
                     &sc->workload.text_tokens, err);
    sc->workload.audio_seconds = 0;
    if (!rc)
        rc = get_double(ld, m, "workload", "audio_seconds", 0.0, 1e6, &sc->workload.audio_seconds, err);
    if (!rc && sc->workload.images == 0 && sc->workload.text_tokens == 0 && sc->workload.audio_seconds == 0)
        rc = fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, keyline, "workload",
                                "a fixed sample needs images, text_tokens or audio_seconds above 0"),
                 err);
    return rc;
}

/* ---- perturb ------------------------------------------------------------ */

static int perturb_bad(loader *ld, mm_err *err, struct fy_node *m, const char *prefix, const char *key,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* An input error at `prefix`.key (the key's line, else the entry's). */
static int perturb_bad(loader *ld, mm_err *err, struct fy_node *m, const char *prefix, const char *key,
                       const char *fmt, ...)
{
    char path[PATH_MAX_LEN], msg[200];
    join(path, prefix, key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = mm_node_key_line(m, key);
    return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, line ? line : mm_node_line(m), path, "%s", msg), err);
}

/* A list of non-negative ids (a single number is a list of one). */
static int read_ids(loader *ld, struct fy_node *m, const char *prefix, const char *key, int *out, int *n,
                    mm_err *err)
{
    char path[PATH_MAX_LEN];
    join(path, prefix, key);
    struct fy_node *v = mm_node_get(m, key);
    if (!v || mm_node_is_null(v))
        return 0;
    note(ld, path, mm_node_key_line(m, key));
    if (fy_node_is_scalar(v)) {
        int64_t x = 0;
        int rc = mm_node_as_int(&ld->doc, v, path, 0, INT_MAX, &x, err);
        if (rc)
            return fix(ld, rc, err);
        out[(*n)++] = (int)x;
        return 0;
    }
    if (!fy_node_is_sequence(v))
        return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), path,
                                  "expected a list of indices, e.g. [0, 3]"), err);
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(v, &it))) {
        if (*n == MM_PERTURB_IDS)
            return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(item), path,
                                      "at most %d entries (use nodes or fraction for more)", MM_PERTURB_IDS), err);
        int64_t x = 0;
        int rc = mm_node_as_int(&ld->doc, item, path, 0, INT_MAX, &x, err);
        if (rc)
            return fix(ld, rc, err);
        out[(*n)++] = (int)x;
    }
    return 0;
}

/* A positive factor (time multiplier or bandwidth fraction). */
static int read_factor(loader *ld, struct fy_node *m, const char *prefix, const char *key, bool required,
                       double *out, mm_err *err)
{
    bool had = mm_node_get(m, key) != NULL;
    int rc = get_double(ld, m, prefix, key, -1e308, 1e308, out, err);
    if (rc)
        return rc;
    if (!had && required)
        return perturb_bad(ld, err, m, prefix, key, "missing required key");
    if (had && !(*out > 0))
        return perturb_bad(ld, err, m, prefix, key, "must be > 0, got %g", *out);
    return 0;
}

static int read_perturb_entry(loader *ld, struct fy_node *m, const char *prefix, mm_perturb_entry *e, mm_err *err)
{
    int kind = -1, rc;
    char kp[PATH_MAX_LEN];
    join(kp, prefix, "kind");
    if (!m || !fy_node_is_mapping(m))
        return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(m), prefix,
                                  "expected a mapping with a kind, e.g. {kind: slow_gpu, gpus: [3], factor: 1.3}"),
                   err);
    if ((rc = get_enum(ld, m, prefix, "kind", mm_perturb_kind_names, &kind, err)))
        return rc;
    if (kind < 0)
        return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(m), kp,
                                  "missing: every perturbation names its kind (slow_gpu, jitter, hbm, nic, rail, "
                                  "switch, link, node_group, stall)"), err);
    if ((rc = fix(ld, mm_node_check_keys(&ld->doc, m, prefix, perturb_keys[kind], err), err)))
        return rc;
    e->kind = kind;
    e->factor = 1;
    e->hbm_bw = e->hbm_cap = 1;
    switch (kind) {
    case MM_PT_SLOW_GPU:
    case MM_PT_JITTER:
    case MM_PT_HBM:
        if ((rc = read_ids(ld, m, prefix, "gpus", e->gpus, &e->n_gpus, err)) ||
            (rc = read_ids(ld, m, prefix, "nodes", e->nodes, &e->n_nodes, err)) ||
            (rc = get_double(ld, m, prefix, "fraction", 0.0, 1.0, &e->fraction, err)))
            return rc;
        if (kind == MM_PT_SLOW_GPU) {
            if (!mm_node_get(m, "factor"))
                return perturb_bad(ld, err, m, prefix, "factor", "missing: slow_gpu needs a factor (1.3 = 30%% slower)");
            return read_factor(ld, m, prefix, "factor", true, &e->factor, err);
        }
        if (kind == MM_PT_JITTER) {
            int dist = 0;
            if ((rc = get_enum(ld, m, prefix, "dist", jitter_dists, &dist, err)))
                return rc;
            if (!mm_node_get(m, "cv"))
                return perturb_bad(ld, err, m, prefix, "cv", "missing: jitter needs cv, the coefficient of variation "
                                                        "of an op's time (e.g. 0.05)");
            return get_double(ld, m, prefix, "cv", 0.0, 10.0, &e->cv, err);
        }
        if (!mm_node_get(m, "bandwidth") && !mm_node_get(m, "capacity"))
            return perturb_bad(ld, err, m, prefix, "bandwidth", "missing: hbm needs bandwidth and/or capacity (factors)");
        if ((rc = read_factor(ld, m, prefix, "bandwidth", false, &e->hbm_bw, err)) ||
            (rc = read_factor(ld, m, prefix, "capacity", false, &e->hbm_cap, err)))
            return rc;
        return 0;
    case MM_PT_NIC:
    case MM_PT_RAIL:
    case MM_PT_SWITCH:
    case MM_PT_LINK: {
        if (kind == MM_PT_NIC && ((rc = read_ids(ld, m, prefix, "nodes", e->nodes, &e->n_nodes, err)) ||
                                  (rc = read_ids(ld, m, prefix, "nics", e->nics, &e->n_nics, err))))
            return rc;
        if (kind == MM_PT_RAIL) {
            if ((rc = read_ids(ld, m, prefix, "rails", e->nics, &e->n_nics, err)))
                return rc;
            if (!e->n_nics)
                return perturb_bad(ld, err, m, prefix, "rails", "missing: rail needs rails, e.g. [0]");
        }
        if (kind == MM_PT_SWITCH) {
            if ((rc = read_ids(ld, m, prefix, "leaves", e->leaves, &e->n_leaves, err)) ||
                (rc = read_ids(ld, m, prefix, "spines", e->spines, &e->n_spines, err)))
                return rc;
            if (!e->n_leaves && !e->n_spines)
                return perturb_bad(ld, err, m, prefix, "spines", "missing: switch needs leaves or spines");
        }
        if (kind == MM_PT_LINK) {
            int leaf = -1, spine = -1;
            if ((rc = get_int(ld, m, prefix, "leaf", 0, INT_MAX, &leaf, err)) ||
                (rc = get_int(ld, m, prefix, "spine", 0, INT_MAX, &spine, err)))
                return rc;
            if (leaf < 0 || spine < 0)
                return perturb_bad(ld, err, m, prefix, leaf < 0 ? "leaf" : "spine",
                                   "missing: link names one leaf-spine cable, e.g. {kind: link, leaf: 0, spine: 1, "
                                   "failed: true}");
            e->leaves[e->n_leaves++] = leaf;
            e->spines[e->n_spines++] = spine;
        }
        double lat_us = 0;
        if ((rc = read_factor(ld, m, prefix, "factor", false, &e->factor, err)) ||
            (rc = get_double(ld, m, prefix, "latency_us", 0.0, 1e9, &lat_us, err)))
            return rc;
        e->latency_us = lat_us;
        e->latency_s = lat_us * 1e-6;
        if ((kind == MM_PT_SWITCH || kind == MM_PT_LINK) &&
            (rc = get_bool(ld, m, prefix, "failed", &e->failed, err)))
            return rc;
        if (!mm_node_get(m, "factor") && !mm_node_get(m, "latency_us") && !e->failed)
            return perturb_bad(ld, err, m, prefix, "factor", "missing: give a bandwidth factor, latency_us%s",
                               kind == MM_PT_SWITCH || kind == MM_PT_LINK ? " or failed: true" : "");
        return 0;
    }
    case MM_PT_NODE_GROUP: {
        bool found = false;
        if ((rc = get_str(ld, m, prefix, "group", e->group, sizeof e->group, &found, err)))
            return rc;
        if (!found)
            return perturb_bad(ld, err, m, prefix, "group", "missing: node_group names a group of the topology's node_groups");
        if (!mm_node_get(m, "nic_gbit_s"))
            return perturb_bad(ld, err, m, prefix, "nic_gbit_s", "missing: node_group sets the group's nic_gbit_s");
        return read_factor(ld, m, prefix, "nic_gbit_s", true, &e->nic_gbit_s, err);
    }
    case MM_PT_STALL:
        if (!mm_node_get(m, "every") || !mm_node_get(m, "seconds"))
            return perturb_bad(ld, err, m, prefix, mm_node_get(m, "every") ? "seconds" : "every",
                               "missing: stall needs every (iterations) and seconds");
        if ((rc = get_int(ld, m, prefix, "every", 1, INT_MAX, &e->every, err)) ||
            (rc = get_double(ld, m, prefix, "seconds", 0.0, 1e9, &e->seconds, err)))
            return rc;
        return 0;
    }
    return 0;
}

/* perturb: a list of {kind: ..., ...} (hw/perturb.h). */
static int read_perturb(loader *ld, struct fy_node *root, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    struct fy_node *v = mm_node_get(root, "perturb");
    if (!v)
        return 0;
    note(ld, "perturb", mm_node_key_line(root, "perturb"));
    if (mm_node_is_null(v))
        return 0;
    if (!fy_node_is_sequence(v))
        return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), "perturb",
                                  "expected a list, e.g. [{kind: slow_gpu, gpus: [3], factor: 1.3}]"), err);
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(v, &it))) {
        char prefix[PATH_MAX_LEN];
        snprintf(prefix, sizeof prefix, "perturb[%d]", sc->perturb.n);
        if (sc->perturb.n == MM_PERTURB_MAX)
            return fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(item), prefix,
                                      "at most %d perturbations", MM_PERTURB_MAX), err);
        mm_perturb_entry *e = &sc->perturb.e[sc->perturb.n];
        memset(e, 0, sizeof *e);
        int rc = read_perturb_entry(ld, item, prefix, e, err);
        if (rc)
            return rc;
        sc->perturb.n++;
    }
    return 0;
}

static void set_defaults(mm_scenario *sc)
{
    sc->nodes = 1;
    sc->train.micro_batch = 1;
    sc->train.seq_len = 4096;
    sc->train.precision = MM_PREC_BF16;
    sc->train.recompute = MM_RECOMPUTE_NONE;
    sc->train.zero = 0;
    sc->train.schedule = MM_SCHED_1F1B;
    /* An allowance for the CUDA context (~0.5-1 GiB with PyTorch), NCCL
     * buffers and allocator fragmentation; a modeling choice, not a
     * measurement: set train.memory_reserve_gib to what your stack uses. */
    sc->train.memory_reserve_gib = 2.0;
    sc->parallel.placement = MM_PLACE_PIPELINE;
    snprintf(sc->parallel.order, sizeof sc->parallel.order, "tp-cp-ep-dp-pp"); /* Megatron-LM's default */
    sc->train.cp_comm = MM_CP_RING;
    sc->workload.kind = MM_WORKLOAD_TEXT;
    sc->batching = MM_BATCH_SEQUENTIAL;
    sc->network = MM_NET_FLOW;
    sc->iterations = 1;
    sc->seed = 1;
}

static int read_root(loader *ld, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    struct fy_node *root = mm_doc_root(&ld->doc);
    if (mm_node_is_null(root))
        root = NULL;
    int rc = mm_node_check_keys(&ld->doc, root, "", root_keys, err);
    if (rc)
        return fix(ld, rc, err);
    bool found = false, gb_found = false;
    int batching = (int)sc->batching, network = (int)sc->network;
    int64_t seed = (int64_t)sc->seed;
    rc = get_str(ld, root, "", "model", sc->model, sizeof sc->model, &found, err);
    if (!rc)
        rc = require(ld, found, "model", "a model config, e.g. models/llama-2-7b.json", err);
    if (!rc)
        rc = read_cluster(ld, root, err);
    if (!rc)
        rc = read_train(ld, root, &gb_found, err);
    if (!rc)
        rc = read_parallel(ld, root, err);
    if (!rc)
        rc = read_workload(ld, root, err);
    if (!rc)
        rc = get_enum(ld, root, "", "batching", mm_batching_names, &batching, err);
    if (!rc)
        rc = get_enum(ld, root, "", "network", mm_network_names, &network, err);
    if (!rc)
        rc = get_int(ld, root, "", "iterations", 1, INT_MAX, &sc->iterations, err);
    if (!rc)
        rc = get_i64(ld, root, "", "seed", 0, INT64_MAX, &seed, err);
    if (!rc)
        rc = read_perturb(ld, root, err);
    sc->batching = (mm_batching)batching;
    sc->network = (mm_network_kind)network;
    sc->seed = (uint64_t)seed;
    sc->perturb.seed = sc->seed;
    if (!rc && !gb_found)
        sc->train.global_batch = sc->train.micro_batch * sc->parallel.llm.dp;
    return rc;
}

/* ---- --set -------------------------------------------------------------- */

static struct fy_node_pair *find_pair(struct fy_node *map, const char *key, size_t klen)
{
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(map, &it))) {
        struct fy_node *k = fy_node_pair_key(p);
        size_t n = 0;
        const char *s = k && fy_node_is_scalar(k) ? fy_node_get_scalar(k, &n) : NULL;
        if (s && n == klen && memcmp(s, key, n) == 0)
            return p;
    }
    return NULL;
}

/* Puts `value` (a node of the scenario document, consumed) at map[key],
 * replacing what was there. */
static int put(struct fy_document *fyd, struct fy_node *map, const char *key, size_t klen,
               struct fy_node *value)
{
    struct fy_node_pair *p = find_pair(map, key, klen);
    if (p)
        return fy_node_pair_set_value(p, value);
    struct fy_node *k = fy_node_create_scalar_copy(fyd, key, klen);
    if (!k) {
        fy_node_free(value);
        return -1;
    }
    if (fy_node_mapping_append(map, k, value) != 0) {
        fy_node_free(k);
        fy_node_free(value);
        return -1;
    }
    return 0;
}

static int apply_set(loader *ld, const char *set, mm_err *err)
{
    const char *eq = strchr(set, '=');
    if (!eq)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "",
                          "expected KEY=VALUE (e.g. parallel.llm.tp=8), got '%s'", set);
    char key[PATH_MAX_LEN];
    size_t klen = (size_t)(eq - set);
    while (klen > 0 && (set[klen - 1] == ' ' || set[klen - 1] == '\t'))
        klen--;
    if (klen == 0)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "", "empty key in '%s'", set);
    if (klen >= sizeof key)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "", "key too long in '%s'", set);
    memcpy(key, set, klen);
    key[klen] = '\0';
    if (key[0] == '.' || key[klen - 1] == '.' || strstr(key, ".."))
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                          "empty part in the dotted key (write e.g. train.seq_len)");

    mm_doc val;
    mm_err verr;
    if (mm_doc_load_string(&val, SET_FILE, eq + 1, &verr) != 0)
        return mm_err_set(err, verr.code, SET_FILE, 0, key, "cannot read the value '%s': %s",
                          eq + 1, verr.msg);
    struct fy_node *vroot = mm_doc_root(&val);
    if (!vroot) {
        mm_doc_free(&val);
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key, "no value after '='");
    }
    struct fy_document *fyd = ld->doc.fyd;
    struct fy_node *copy = fy_node_copy(fyd, vroot);
    mm_doc_free(&val);
    if (!copy)
        return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");

    struct fy_node *cur = fy_document_root(fyd);
    if (mm_node_is_null(cur)) {
        cur = fy_node_create_mapping(fyd);
        if (!cur || fy_document_set_root(fyd, cur) != 0) {
            fy_node_free(copy);
            if (cur)
                fy_node_free(cur);
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
        }
    } else if (!fy_node_is_mapping(cur)) {
        fy_node_free(copy);
        return mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(cur), "",
                          "expected a mapping of keys at the top level");
    }
    /* Walk (creating or replacing with mappings) down to the last part.  A
     * numeric part after a list selects that entry, which must be a
     * mapping: perturb.0.factor=1.5 sets perturb[0].factor.  `canon` is the
     * key as errors spell it (perturb[0].factor). */
    const char *part = key;
    char canon[PATH_MAX_LEN] = "";
    for (const char *dot; (dot = strchr(part, '.')); part = dot + 1) {
        size_t n = (size_t)(dot - part);
        struct fy_node_pair *p = find_pair(cur, part, n);
        struct fy_node *next = p ? fy_node_pair_value(p) : NULL;
        size_t cl = strlen(canon);
        snprintf(canon + cl, sizeof canon - cl, "%s%.*s", cl ? "." : "", (int)n, part);
        if (next && fy_node_is_sequence(next) && dot[1] >= '0' && dot[1] <= '9') {
            const char *idx = dot + 1, *end = strchr(idx, '.');
            if (!end) {
                fy_node_free(copy);
                return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                                  "a list entry is replaced through one of its keys (e.g. perturb.0.factor=1.5) "
                                  "or by giving the whole list");
            }
            long i = strtol(idx, NULL, 10);
            struct fy_node *item = i < fy_node_sequence_item_count(next) ? fy_node_sequence_get_by_index(next, (int)i)
                                                                          : NULL;
            if (!item || !fy_node_is_mapping(item)) {
                fy_node_free(copy);
                return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key, "the list has no mapping at index %ld (%d entries)",
                                  i, fy_node_sequence_item_count(next));
            }
            cl = strlen(canon);
            snprintf(canon + cl, sizeof canon - cl, "[%ld]", i);
            cur = item;
            dot = end;
            continue;
        }
        if (next && fy_node_is_mapping(next)) {
            cur = next;
            continue;
        }
        next = fy_node_create_mapping(fyd);
        if (!next || put(fyd, cur, part, n, next) != 0) {
            fy_node_free(copy);
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
        }
        char prefix[PATH_MAX_LEN];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(dot - key), key);
        int rc = own(ld, prefix, err);
        if (rc) {
            fy_node_free(copy);
            return rc;
        }
        cur = next;
    }
    if (put(fyd, cur, part, strlen(part), copy) != 0)
        return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
    if (strchr(canon, '[')) { /* the key as errors spell it */
        char path[PATH_MAX_LEN];
        join(path, canon, part);
        return own(ld, path, err);
    }
    return own(ld, key, err);
}

/* ---- public ------------------------------------------------------------- */

/* Loads the file `path`, or else the YAML `text` under the name `name`. */
static int load_any(mm_scenario *sc, const char *path, const char *name, const char *text,
                    const char *const *sets, int n_sets, mm_err *err)
{
    mm_err e;
    mm_err_clear(&e);
    memset(sc, 0, sizeof *sc);
    copy_trunc(sc->source, sizeof sc->source, path ? path : name);
    set_defaults(sc);

    loader ld = {.sc = sc};
    int rc = path ? mm_doc_load_file(&ld.doc, path, &e) : mm_doc_load_string(&ld.doc, sc->source, text, &e);
    for (int i = 0; !rc && i < n_sets; i++)
        rc = apply_set(&ld, sets[i], &e);
    if (!rc)
        rc = read_root(&ld, &e);
    mm_doc_free(&ld.doc);
    free(ld.owned);
    if (rc && err)
        *err = e;
    return rc;
}

int mm_scenario_load(mm_scenario *sc, const char *path, const char *const *sets,
                     int n_sets, mm_err *err)
{
    return load_any(sc, path, "<default>", mm_scenario_default_yaml, sets, n_sets, err);
}

int mm_scenario_load_text(mm_scenario *sc, const char *name, const char *text, const char *const *sets,
                          int n_sets, mm_err *err)
{
    return load_any(sc, NULL, name ? name : "<text>", text, sets, n_sets, err);
}

int mm_scenario_fail(const mm_scenario *sc, mm_err *err, const char *key,
                     const char *fmt, ...)
{
    const char *file = sc->source;
    int line = 0;
    for (int i = 0; i < sc->n_keys; i++) {
        if (strcmp(sc->keys[i].key, key) == 0) {
            file = sc->keys[i].file;
            line = sc->keys[i].line;
            break;
        }
    }
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mm_err_set(err, MM_EINPUT, file, line, key, "%s", msg);
}

/* ---- canonical text ----------------------------------------------------- */

typedef struct sbuf {
    char *buf;
    size_t len, n; /* capacity, characters needed so far */
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    size_t room = b->n < b->len ? b->len - b->n : 0;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(room ? b->buf + b->n : NULL, room, fmt, ap);
    va_end(ap);
    if (w > 0)
        b->n += (size_t)w;
}

/* A YAML double-quoted string: always quoted, so that no path can be read
 * back as a number, a boolean or null. */
static void sb_quote(sbuf *b, const char *s)
{
    sb_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            sb_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            sb_printf(b, "\\x%02x", *p);
        else
            sb_printf(b, "%c", *p);
    }
    sb_printf(b, "\"");
}

static void sb_bool(sbuf *b, const char *key, bool v)
{
    sb_printf(b, "  %s: %s\n", key, v ? "true" : "false");
}

/* One layout on one line; an inherited zero is written as the value it
 * inherits, so stating it or not gives the same text. */
static void sb_layout(sbuf *b, const char *name, const mm_module_layout *l, int train_zero)
{
    if (!l->present) {
        sb_printf(b, "  %s: null\n", name);
        return;
    }
    sb_printf(b, "  %s: {tp: %d, pp: %d, cp: %d, dp: %d, vpp: %d, ep: %d, zero: %d, sp: %s, "
                 "layers_per_stage: [",
              name, l->tp, l->pp, l->cp, l->dp, l->vpp, l->ep,
              l->zero < 0 ? train_zero : l->zero, l->sp ? "true" : "false");
    for (int i = 0; i < l->n_layers_per_stage; i++)
        sb_printf(b, "%s%d", i ? ", " : "", l->layers_per_stage[i]);
    sb_printf(b, "]}\n");
}

static void sb_ids(sbuf *b, const char *key, const int *ids, int n)
{
    sb_printf(b, ", %s: [", key);
    for (int i = 0; i < n; i++)
        sb_printf(b, "%s%d", i ? ", " : "", ids[i]);
    sb_printf(b, "]");
}

/* perturb: one flow mapping per entry with every key of its kind, defaults
 * filled in, so that the text reads back to the same entries. */
static void sb_perturb(sbuf *b, const mm_perturb *pt)
{
    if (pt->n == 0) {
        sb_printf(b, "perturb: []\n");
        return;
    }
    sb_printf(b, "perturb:\n");
    for (int i = 0; i < pt->n; i++) {
        const mm_perturb_entry *e = &pt->e[i];
        sb_printf(b, "  - {kind: %s", mm_perturb_kind_names[e->kind]);
        switch (e->kind) {
        case MM_PT_SLOW_GPU:
        case MM_PT_JITTER:
        case MM_PT_HBM:
            sb_ids(b, "gpus", e->gpus, e->n_gpus);
            sb_ids(b, "nodes", e->nodes, e->n_nodes);
            sb_printf(b, ", fraction: %.17g", e->fraction);
            if (e->kind == MM_PT_SLOW_GPU)
                sb_printf(b, ", factor: %.17g", e->factor);
            else if (e->kind == MM_PT_JITTER)
                sb_printf(b, ", dist: lognormal, cv: %.17g", e->cv);
            else
                sb_printf(b, ", bandwidth: %.17g, capacity: %.17g", e->hbm_bw, e->hbm_cap);
            break;
        case MM_PT_NIC:
        case MM_PT_RAIL:
        case MM_PT_SWITCH:
        case MM_PT_LINK:
            if (e->kind == MM_PT_NIC) {
                sb_ids(b, "nodes", e->nodes, e->n_nodes);
                sb_ids(b, "nics", e->nics, e->n_nics);
            } else if (e->kind == MM_PT_RAIL) {
                sb_ids(b, "rails", e->nics, e->n_nics);
            } else if (e->kind == MM_PT_SWITCH) {
                sb_ids(b, "leaves", e->leaves, e->n_leaves);
                sb_ids(b, "spines", e->spines, e->n_spines);
            } else {
                sb_printf(b, ", leaf: %d, spine: %d", e->leaves[0], e->spines[0]);
            }
            sb_printf(b, ", factor: %.17g, latency_us: %.17g", e->factor, e->latency_us);
            if (e->kind == MM_PT_SWITCH || e->kind == MM_PT_LINK)
                sb_printf(b, ", failed: %s", e->failed ? "true" : "false");
            break;
        case MM_PT_NODE_GROUP:
            sb_printf(b, ", group: ");
            sb_quote(b, e->group);
            sb_printf(b, ", nic_gbit_s: %.17g", e->nic_gbit_s);
            break;
        case MM_PT_STALL:
            sb_printf(b, ", every: %d, seconds: %.17g", e->every, e->seconds);
            break;
        default:
            break;
        }
        sb_printf(b, "}\n");
    }
}

size_t mm_scenario_canonical(const mm_scenario *sc, char *buf, size_t len)
{
    sbuf b = {.buf = buf, .len = buf ? len : 0, .n = 0};
    if (b.len)
        buf[0] = '\0';
    sb_printf(&b, "model: ");
    sb_quote(&b, sc->model);
    sb_printf(&b, "\ncluster:\n  topology: ");
    sb_quote(&b, sc->topology);
    sb_printf(&b, "\n  nodes: %d\n", sc->nodes);
    sb_printf(&b, "train:\n");
    sb_printf(&b, "  global_batch: %" PRId64 "\n", sc->train.global_batch);
    sb_printf(&b, "  micro_batch: %" PRId64 "\n", sc->train.micro_batch);
    sb_printf(&b, "  seq_len: %" PRId64 "\n", sc->train.seq_len);
    sb_printf(&b, "  precision: %s\n", mm_precision_names[sc->train.precision]);
    sb_printf(&b, "  recompute: %s\n", mm_recompute_names[sc->train.recompute]);
    sb_bool(&b, "sequence_parallel", sc->train.sequence_parallel);
    sb_printf(&b, "  zero: %d\n", sc->train.zero);
    sb_printf(&b, "  schedule: %s\n", mm_schedule_names[sc->train.schedule]);
    sb_bool(&b, "overlap_grad_reduce", sc->train.overlap_grad_reduce);
    sb_bool(&b, "overlap_param_gather", sc->train.overlap_param_gather);
    sb_bool(&b, "tp_comm_overlap", sc->train.tp_comm_overlap);
    sb_printf(&b, "  memory_reserve_gib: %.17g\n", sc->train.memory_reserve_gib);
    sb_printf(&b, "  cp_comm: %s\n", mm_cp_comm_names[sc->train.cp_comm]);
    sb_printf(&b, "  attention: %s\n", mm_attention_names[sc->train.attention]);
    sb_printf(&b, "  pass_times: ");
    sb_quote(&b, sc->train.pass_times);
    sb_printf(&b, "\n");
    sb_printf(&b, "  frozen: [");
    for (int i = 0; i < sc->train.n_frozen; i++) {
        sb_printf(&b, "%s", i ? ", " : "");
        sb_quote(&b, sc->train.frozen[i]);
    }
    sb_printf(&b, "]\nparallel:\n");
    sb_layout(&b, "llm", &sc->parallel.llm, sc->train.zero);
    sb_layout(&b, "vision", &sc->parallel.vision, sc->train.zero);
    sb_layout(&b, "audio", &sc->parallel.audio, sc->train.zero);
    sb_printf(&b, "  placement: %s\n", mm_placement_names[sc->parallel.placement]);
    sb_printf(&b, "  order: %s\n", sc->parallel.order);
    sb_printf(&b, "  projector: %s\n", sc->parallel.projector_on_llm ? "llm" : "encoder");
    sb_printf(&b, "workload: ");
    switch (sc->workload.kind) {
    case MM_WORKLOAD_TEXT:
        sb_printf(&b, "text\n");
        break;
    case MM_WORKLOAD_FILE:
        sb_quote(&b, sc->workload.path);
        sb_printf(&b, "\n");
        break;
    case MM_WORKLOAD_FIXED:
        sb_printf(&b, "{kind: fixed, images: %d, tiles: %d, text_tokens: %" PRId64 ", audio_seconds: %.17g}\n",
                  sc->workload.images, sc->workload.tiles, sc->workload.text_tokens, sc->workload.audio_seconds);
        break;
    }
    sb_printf(&b, "batching: %s\n", mm_batching_names[sc->batching]);
    sb_printf(&b, "network: %s\n", mm_network_names[sc->network]);
    sb_printf(&b, "iterations: %d\n", sc->iterations);
    sb_printf(&b, "seed: %" PRIu64 "\n", sc->seed);
    sb_perturb(&b, &sc->perturb);
    return b.n;
}
