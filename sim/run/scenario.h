/* scenario.h - a simulation scenario: the validated, typed form of a
 * scenario YAML file plus `--set key=value` overrides (design.md section 5).
 *
 * Loading happens in two steps so that every error can name its file, line
 * and key:
 *   1. mm_scenario_load() parses YAML (or the built-in default), applies the
 *      overrides to the document, checks keys, types and ranges, and fills
 *      the struct, remembering the line of each key it read;
 *   2. the run layer then loads the model and topology the scenario names and
 *      checks the cross-file rules (degrees against GPU count, layers against
 *      pp, batch against micro_batch*dp) with mm_scenario_fail(), which
 *      reports the line of the offending key.
 * Not for: loading models or topologies (the model and hw layers do that). */
#ifndef MM_SCENARIO_H
#define MM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/perturb.h"
#include "model/llm.h"
#include "util/err.h"

#define MM_MAX_PP 512      /* max pipeline stages in layers_per_stage */
#define MM_MAX_FROZEN 8
#define MM_MAX_KEYS 320    /* key->line table size (perturb entries note theirs too) */

typedef enum { MM_PREC_BF16, MM_PREC_FP16, MM_PREC_FP8, MM_PREC_COUNT } mm_precision;
/* Recompute modes are the model layer's (model/llm.h): none, selective, full. */
typedef enum mm_recompute mm_recompute;
typedef enum {
    MM_SCHED_GPIPE, MM_SCHED_1F1B, MM_SCHED_INTERLEAVED, MM_SCHED_ZB_H1
} mm_schedule_kind;
typedef enum {
    MM_PLACE_PIPELINE, MM_PLACE_COLOCATED, MM_PLACE_DISJOINT, MM_PLACE_HOMOGENEOUS
} mm_placement;
typedef enum {
    MM_BATCH_SEQUENTIAL, MM_BATCH_GROUPED, MM_BATCH_PACKED, MM_BATCH_BALANCED,
    MM_BATCH_POST_BALANCE
} mm_batching;
typedef enum { MM_NET_FLOW, MM_NET_ANALYTIC } mm_network_kind;
typedef enum { MM_CP_RING, MM_CP_ULYSSES } mm_cp_comm;
typedef enum { MM_ATTN_FLASH, MM_ATTN_UNFUSED } mm_attention;
typedef enum { MM_WORKLOAD_TEXT, MM_WORKLOAD_FILE, MM_WORKLOAD_FIXED } mm_workload_kind;

/* Name tables, index = enum value, NULL-terminated (for messages, JSON and
 * the canonical text). */
extern const char *const mm_precision_names[];
extern const char *const mm_recompute_names[];
extern const char *const mm_schedule_names[];
extern const char *const mm_placement_names[];
extern const char *const mm_batching_names[];
extern const char *const mm_network_names[];
extern const char *const mm_cp_comm_names[];
extern const char *const mm_attention_names[];

/* Parallel layout of one module (LLM, vision encoder, audio encoder). */
typedef struct mm_module_layout {
    bool present;      /* the section was given (or defaulted, for llm) */
    int tp, pp, cp, dp, vpp, ep;
    int zero;          /* -1: inherit train.zero */
    bool sp;           /* sequence parallelism for this module (the LLM also
                          takes train.sequence_parallel) */
    int n_layers_per_stage;            /* 0: split evenly */
    int layers_per_stage[MM_MAX_PP];
} mm_module_layout;

typedef struct mm_scenario {
    char source[256];       /* scenario file name, or "<default>" */
    char model[512];        /* path as written (resolved by the run layer) */
    char topology[512];
    int nodes;
    struct {
        int64_t global_batch, micro_batch, seq_len;
        mm_precision precision;
        mm_recompute recompute;
        bool sequence_parallel;
        int zero;
        mm_schedule_kind schedule;
        bool overlap_grad_reduce, overlap_param_gather, tp_comm_overlap;
        mm_cp_comm cp_comm;     /* context-parallel attention: ring | ulysses */
        mm_attention attention; /* flash | unfused (pre-2022 frameworks) */
        char pass_times[512];   /* measured per-stage pass times (CSV); "" none */
        /* HBM held back from the OOM verdict: CUDA context, NCCL buffers,
         * allocator fragmentation (an allowance, not a measurement) */
        double memory_reserve_gib;
        int n_frozen;
        char frozen[MM_MAX_FROZEN][32];
    } train;
    struct {
        mm_module_layout llm, vision, audio;
        mm_placement placement;
        char order[32];         /* rank placement, fastest first: tp-cp-ep-dp-pp */
        bool projector_on_llm;  /* parallel.projector: llm (else encoder) */
    } parallel;
    struct {
        mm_workload_kind kind;
        char path[512];      /* MM_WORKLOAD_FILE */
        int images, tiles;   /* MM_WORKLOAD_FIXED */
        int64_t text_tokens; /* MM_WORKLOAD_FIXED */
        double audio_seconds; /* MM_WORKLOAD_FIXED */
    } workload;
    mm_batching batching;
    mm_network_kind network;
    int iterations;
    uint64_t seed;
    /* What-if perturbations (`perturb:` list, hw/perturb.h); perturb.seed
     * is the scenario's seed. */
    mm_perturb perturb;

    /* Where each key was read: dotted key -> (file, line).  An override
     * from --set records file "--set" and line 0. */
    int n_keys;
    struct { char key[64]; char file[256]; int line; } keys[MM_MAX_KEYS];
} mm_scenario;

/* The built-in default scenario, as YAML text (also what `mmsim run` with no
 * file uses). */
extern const char mm_scenario_default_yaml[];

/* Loads `path` (NULL: the built-in default), then applies n_sets overrides
 * "dotted.key=value" in order; each value is parsed as YAML, so lists and
 * mappings work ("parallel.llm.layers_per_stage=[2,3,3,2]").  Unknown keys,
 * wrong types, and values out of range are MM_EINPUT errors naming the file,
 * line and dotted key (for overrides: file "--set").  Returns 0 or -code. */
int mm_scenario_load(mm_scenario *sc, const char *path, const char *const *sets,
                     int n_sets, mm_err *err);

/* The same from YAML text held in memory (the C API's scenarios); errors
 * name `name` (NULL: "<text>") as the file.  Relative paths in it resolve
 * against the current folder, then the data folders. */
int mm_scenario_load_text(mm_scenario *sc, const char *name, const char *text, const char *const *sets,
                          int n_sets, mm_err *err);

/* Fills err for a rule broken by the value of `key`, naming where that key was
 * set (its file and line, or the scenario file with line 0 when it was a
 * default).  Returns -MM_EINPUT. */
int mm_scenario_fail(const mm_scenario *sc, mm_err *err, const char *key,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Writes the canonical text of the scenario: every key, defaults filled in,
 * in a fixed order, as YAML.  Two scenarios that mean the same thing give the
 * same text (this is what the store hashes).  Returns the length that was
 * needed (like snprintf). */
size_t mm_scenario_canonical(const mm_scenario *sc, char *buf, size_t len);

#endif
