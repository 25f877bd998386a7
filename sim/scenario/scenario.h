/* scenario.h - a simulation scenario: the validated, typed form of a
 * scenario YAML file plus `--set key=value` overrides (design.md section 5).
 *
 * Every key of the format is one row of a table (scenario/keys.h: dotted
 * name, type, range or choices, default, value in the built-in scenario,
 * one-line doc, field of mm_scenario).  That table drives the built-in
 * default scenario, the reader and its errors, `--set`, the canonical text
 * the store hashes, and `mmsim help scenario`, so a key cannot be known to
 * one of them and missed by another.
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
 * Strings and lists are allocated to size and owned by the scenario: free
 * them with mm_scenario_free().  A struct copy (`sim->sc = *sc`) borrows
 * them: the original must outlive it and is the one to free.
 * Not for: loading models or topologies (the model and hw layers do that). */
#ifndef MM_SCENARIO_H
#define MM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/perturb.h"
#include "model/layout.h"
#include "model/llm.h"
#include "util/err.h"

/* The most pipeline stages a layers_per_stage list may give (callers size
 * per-stage scratch arrays by it). */
#define MM_MAX_PP 512

typedef enum { MM_PREC_BF16, MM_PREC_FP16, MM_PREC_FP8, MM_PREC_COUNT } mm_precision;
/* Recompute modes are the model layer's (model/llm.h): none, selective, full. */
typedef enum mm_recompute mm_recompute;
typedef enum {
    MM_SCHED_GPIPE, MM_SCHED_1F1B, MM_SCHED_INTERLEAVED, MM_SCHED_ZB_H1, MM_SCHED_ZB_2P, MM_SCHED_ZB_V
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
/* train.cuda_graphs: which kernels the host replays as CUDA graphs */
typedef enum { MM_GRAPHS_NONE, MM_GRAPHS_LAYER, MM_GRAPHS_FULL } mm_cuda_graphs;
/* data.video_decoder: where video frames are decoded */
typedef enum { MM_VDEC_CPU, MM_VDEC_NVDEC } mm_video_decoder;
/* auto: what train.framework's profile runs on the GPU; the others override it */
typedef enum {
    MM_ATTN_AUTO, MM_ATTN_FLASH, MM_ATTN_UNFUSED, MM_ATTN_FLASH1, MM_ATTN_FLASH2, MM_ATTN_FLASH3, MM_ATTN_CUDNN,
    MM_ATTN_UNFUSED_EAGER
} mm_attention;
/* auto: train.framework's profile default (model/padding.h); the others,
 * in mm_padding's order after it, override it */
typedef enum { MM_TPAD_AUTO, MM_TPAD_NONE, MM_TPAD_LONGEST, MM_TPAD_MAX_LENGTH } mm_train_padding;
/* train.overlap_grad_reduce / overlap_param_gather: auto takes train.
 * framework's profile `overlap` (model/framework.h); false and true
 * override it.  AUTO is 0: test against MM_TOVL_TRUE, never as a bool. */
typedef enum { MM_TOVL_AUTO, MM_TOVL_FALSE, MM_TOVL_TRUE } mm_train_overlap;
/* train.grad_reduce: auto takes the framework profile's `grad_reduce` for
 * the precision; fp32 and bf16 override it (Megatron-LM's
 * --grad-reduce-in-bf16 is bf16). */
typedef enum { MM_TGRAD_AUTO, MM_TGRAD_FP32, MM_TGRAD_BF16 } mm_train_grad_reduce;
typedef enum { MM_WORKLOAD_TEXT, MM_WORKLOAD_FILE, MM_WORKLOAD_FIXED } mm_workload_kind;

/* Name tables, index = enum value, NULL-terminated (for messages, JSON and
 * the canonical text); mm_schedule_names is model/layout.h's. */
extern const char *const mm_precision_names[];
extern const char *const mm_recompute_names[];
extern const char *const mm_placement_names[];
extern const char *const mm_batching_names[];
extern const char *const mm_network_names[];
extern const char *const mm_cp_comm_names[];
extern const char *const mm_cuda_graphs_names[];
extern const char *const mm_video_decoder_names[];
extern const char *const mm_attention_names[];
extern const char *const mm_train_padding_names[];
extern const char *const mm_train_overlap_names[];
/* train.coexec: none, or DHelix's two strands of micro-batches (2k, 2k+1) */
typedef enum { MM_COEXEC_NONE, MM_COEXEC_DHELIX } mm_coexec;
extern const char *const mm_coexec_names[];
/* train.encoder_schedule: a colocated encoder's passes all before and after
 * the LLM's (serial), or in the LLM's bubbles (Optimus, arXiv 2408.03505) */
typedef enum { MM_ENCSCHED_SERIAL, MM_ENCSCHED_BUBBLES } mm_enc_schedule;
extern const char *const mm_enc_schedule_names[];
extern const char *const mm_train_grad_reduce_names[];
/* train.outer_sync.algorithm across the topology's sites (cost/outersync.h):
 * allreduce (the gradients all-reduced across sites every step), diloco
 * (local steps, a pseudo-gradient all-reduce every H), atom (refused) */
typedef enum { MM_OSYNC_ALLREDUCE, MM_OSYNC_DILOCO, MM_OSYNC_ATOM } mm_outer_sync_algo;
extern const char *const mm_outer_sync_names[];
/* train.outer_sync.dtype: the values the sync sends */
extern const char *const mm_outer_sync_dtype_names[];
/* train.outer_sync.state: host | gpu (the outer optimizer's state) */
extern const char *const mm_outer_sync_state_names[];

/* Parallel layout of one module (LLM, vision encoder, audio encoder). */
typedef struct mm_module_layout {
    bool present;      /* the section was given (or defaulted, for llm) */
    mm_layout lay;     /* degrees and layers_per_stage (owned by the
                          scenario: mm_scenario_free frees it) */
    int zero;          /* -1: inherit train.zero */
    int recompute;     /* -1: inherit train.recompute, else mm_recompute */
    bool sp;           /* sequence parallelism for this module (the LLM also
                          takes train.sequence_parallel) */
} mm_module_layout;

/* Where one key was read (for mm_scenario_fail). */
typedef struct mm_scenario_key {
    char *key;        /* dotted key as errors spell it, e.g. "perturb[0].factor" */
    const char *file; /* "--set" or the scenario's source */
    int line;         /* 1-based; 0 for --set */
} mm_scenario_key;

typedef struct mm_scenario {
    char *source;           /* scenario file name, or "<default>" */
    char *model;            /* path as written (resolved by the run layer); "" for an inline model */
    char *model_text;       /* an inline model (`model:` a mapping): its canonical block text,
                               unindented (scenario/modelkey.c); NULL or "" for a path */
    char *topology;
    int nodes;
    struct {
        int64_t global_batch, micro_batch, seq_len;
        mm_precision precision;
        mm_recompute recompute;
        bool sequence_parallel;
        int zero;
        mm_schedule_kind schedule;
        int overlap_grad_reduce;  /* mm_train_overlap: auto (the framework's) | false | true */
        int overlap_param_gather; /* mm_train_overlap */
        bool tp_comm_overlap;
        int coexec;             /* mm_coexec: none | dhelix (micro-batch co-execution) */
        int encoder_schedule;   /* mm_enc_schedule: serial | bubbles (colocated encoders) */
        mm_cp_comm cp_comm;     /* context-parallel attention: ring | ulysses */
        mm_cuda_graphs cuda_graphs; /* none | layer | full (the profile's host.cuda_graphs) */
        mm_attention attention; /* auto (the framework's) | flash | unfused | flash1..3 | cudnn */
        char *framework;        /* a frameworks/ profile name, or a profile file */
        char *pass_times;       /* measured per-stage pass times (CSV); "" none */
        /* HBM held back from the OOM verdict: CUDA context, NCCL buffers,
         * allocator fragmentation (an allowance, not a measurement) */
        double memory_reserve_gib;
        int n_frozen;
        char **frozen;          /* n_frozen module names, sorted, unique */
        int padding;            /* mm_train_padding: auto (the framework's) | none | longest | max_length */
        int64_t pad_to;         /* max_length padding's length; 0: seq_len */
        /* FP8 (train.precision fp8 only; model/fp8.h) */
        int fp8_recipe;         /* mm_fp8_recipe: delayed | current | mxfp8 | blockwise */
        bool fp8_param_gather;  /* Megatron --fp8-param-gather: FP8 primary weights, gathered in FP8 */
        bool fp8_grads;         /* FP8-LM O1: FP8 weight gradients, DP-reduced in 8 bits */
        bool fp8_optimizer;     /* FP8-LM O2: FP8 first moment, FP16 second moment and master weights */
        int grad_reduce;        /* mm_train_grad_reduce: auto (the framework's) | fp32 | bf16 */
        bool grad_accum_fusion; /* false: Megatron --no-gradient-accumulation-fusion, a per-micro-batch
                                   accumulation kernel per weight (cost/costs.c grad_accum_s) */
        /* the run's periodic work (cost/runcost.h); 0: off */
        int train_iters, log_interval, save_interval, eval_interval, eval_iters;
        double save_gb_s;       /* checkpoint storage write bandwidth per node, GB/s */
        /* Training across the topology's sites (cost/outersync.h); present
         * false: none asked for (a topology with sites refuses that). */
        struct {
            bool present;
            int algorithm;      /* mm_outer_sync_algo */
            int h;              /* inner steps per outer sync (diloco) */
            bool overlap;       /* DiLoCoX's one-step-delay overlap */
            int dtype;          /* 0 fp32, 1 bf16 (mm_outer_sync_dtype_names) */
            int compress;       /* mm_compressor_names index; 0: none */
            double compress_ratio, compress_gb_s, decompress_gb_s; /* 0: the table's */
            int state;          /* where the outer optimizer's state lives: 0 host, 1 gpu */
        } outer_sync;
    } train;
    /* the data pipeline (cost/loader.h): loader workers per GPU (-1 not
     * modeled, 0 in the training process), prefetch_factor, source sizes */
    struct {
        int workers;
        int prefetch;
        double image_megapixels, video_megapixels; /* 0: the encoder's input size */
        mm_video_decoder video_decoder;
    } data;
    struct {
        mm_module_layout llm, vision, audio;
        mm_placement placement;
        char *order;            /* rank placement, fastest first: tp-cp-ep-dp-pp */
        bool projector_on_llm;  /* parallel.projector: llm (else encoder) */
    } parallel;
    struct {
        mm_workload_kind kind;
        char *path;          /* MM_WORKLOAD_FILE; "" otherwise */
        int images, tiles;   /* MM_WORKLOAD_FIXED */
        int64_t text_tokens; /* MM_WORKLOAD_FIXED */
        double audio_seconds; /* MM_WORKLOAD_FIXED */
    } workload;
    /* MoE routing and dispatch (model/moe.h); ignored by dense models. */
    struct {
        int routing;            /* mm_moe_routing: balanced | aux_loss | skewed */
        double routing_param;   /* Dirichlet alpha / Zipf s; 0: the mode's default */
        double capacity_factor; /* 0: dropless */
        int drop_policy;        /* mm_moe_drop_policy: probs | position */
        bool pad_to_capacity;
        int dispatcher;         /* mm_moe_dispatcher: alltoall | allgather */
        bool grouped_gemm;      /* false: SequentialMLP */
        int expert_tp;          /* the experts' TP degree; 0: what the EP fold implies */
    } moe;
    /* DeepSpeed's ZeRO-3 settings (stage3_*), in parameters; -1: the
     * framework profile's zero3 values (model/framework.h mm_z3_knobs). */
    struct {
        double prefetch_bucket_size;
        double max_live_parameters;
        double param_persistence_threshold;
        double max_reuse_distance;
    } zero;
    /* Compressed communication (hw/compress.h): compressor indices into
     * mm_compressor_names (0: none) for DP gradients, PP activations and
     * the LLM's TP all-reduces, ratios and the GPU's compress and
     * decompress GB/s overriding the table's (0: the table's;
     * mm_compress_resolve). */
    struct {
        bool present;
        int dp, pp, tp;
        double dp_ratio, pp_ratio, tp_ratio;
        double compress_gb_s, decompress_gb_s;
    } compress;
    mm_batching batching;
    mm_network_kind network;
    int iterations;
    uint64_t seed;
    /* What-if perturbations (`perturb:` list, hw/perturb.h); perturb.seed
     * is the scenario's seed. */
    mm_perturb perturb;

    /* Where each key was read.  An override from --set records file
     * "--set" and line 0. */
    int n_keys, cap_keys;
    mm_scenario_key *keys;
} mm_scenario;

/* The built-in default scenario as YAML text (what `mmsim run` with no file
 * uses), written from the key table's built-in column.  A new string (free()
 * it); NULL when out of memory. */
char *mm_scenario_default_text(void);

/* Loads `path` (NULL: the built-in default), then applies n_sets overrides
 * "dotted.key=value" in order; each value is parsed as YAML, so lists and
 * mappings work ("parallel.llm.layers_per_stage=[2,3,3,2]").  Unknown keys
 * (with the nearest known key suggested), wrong types, and values out of
 * range are MM_EINPUT errors naming the file, line and dotted key (for
 * overrides: file "--set").  *sc is overwritten (not freed first): free it
 * with mm_scenario_free before loading into it again.  On failure *sc holds
 * nothing to free.  Returns 0 or -code. */
int mm_scenario_load(mm_scenario *sc, const char *path, const char *const *sets,
                     int n_sets, mm_err *err);

/* The same from YAML text held in memory (canonical text, the C API's
 * scenarios), then the overrides; `name` (NULL: "<text>") becomes
 * sc->source: the file errors name and the folder relative paths are
 * resolved from, as if the text had been read from that file. */
int mm_scenario_load_text(mm_scenario *sc, const char *name, const char *text, const char *const *sets,
                          int n_sets, mm_err *err);

/* Frees the strings and lists of a loaded scenario and zeroes it.  Safe on a
 * zeroed scenario and on one whose load failed. */
void mm_scenario_free(mm_scenario *sc);

/* Fills err for a rule broken by the value of `key`, naming where that key was
 * set (its file and line, or the scenario file with line 0 when it was a
 * default).  Returns -MM_EINPUT. */
int mm_scenario_fail(const mm_scenario *sc, mm_err *err, const char *key,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Whether `key` was given (by the file or an override), and where to say a
 * value set after loading came from: `file` must outlive the scenario (a
 * string literal such as "--set").  mm_scenario_note_key returns 0, or -1
 * when out of memory. */
bool mm_scenario_key_given(const mm_scenario *sc, const char *key);
int mm_scenario_note_key(mm_scenario *sc, const char *key, const char *file, int line);

/* Writes the canonical text of the scenario: every key of the table,
 * defaults filled in, in table order, as YAML.  Two scenarios that mean the
 * same thing give the same text (this is what the store hashes), and the
 * text reads back (mm_scenario_load_text) to the same scenario.  Returns the
 * length that was needed (like snprintf). */
size_t mm_scenario_canonical(const mm_scenario *sc, char *buf, size_t len);

/* The canonical text in a new string (free() it); NULL when out of memory. */
char *mm_scenario_canonical_alloc(const mm_scenario *sc);

/* True when the scenario holds its model inline (a `model:` mapping). */
bool mm_scenario_model_inline(const mm_scenario *sc);

/* The scenario's model: the file `path` (sc->model resolved), or the
 * inline model (path unused).  Errors name the file, line and key
 * (an inline model's: the scenario's `model`).  Returns 0 or -code. */
struct mm_model;
int mm_scenario_load_model(const mm_scenario *sc, const char *path, struct mm_model *m, mm_err *err);

/* `mmsim help scenario`: every key with its type, default, built-in value
 * and one-line doc, one key per entry, in table order.  A new string (free()
 * it); NULL when out of memory. */
char *mm_scenario_help_text(void);

/* ---- layouts ---------------------------------------------------------- */

/* What a planner varies: the parallel layout and the training keys that go
 * with it. */
typedef struct mm_relayout {
    int placement;          /* mm_placement; -1: keep the scenario's placement
                               and encoder layouts */
    /* The LLM's layout; its layers_per_stage (llm.pp entries, or none: an
     * even split) is borrowed: the scenario points at this array (below). */
    mm_layout llm;
    mm_layout vision;       /* tp, pp, dp (cp, vpp, ep 1); used when the
                               placement gives the encoder a layout (pipeline,
                               colocated, disjoint) */
    int micro_batch;
    int recompute;          /* enum mm_recompute: train.recompute and the LLM's */
    int vision_recompute;   /* the vision encoder's (parallel.vision.recompute);
                               -1: it inherits train.recompute */
    int zero;               /* train.zero; the modules inherit it */
    int schedule;           /* mm_schedule_kind */
} mm_relayout;

/* True when the placement gives the vision encoder a layout of its own. */
bool mm_layout_has_vision(int placement);

/* The one way to change a layout: writes `lay` into the scenario.  The
 * degrees of parallel.llm (and of parallel.vision, when the placement gives
 * it a layout: cp, vpp, ep = 1) are replaced, the modules' zero inherits
 * lay->zero, and the LLM's layers_per_stage becomes lay's (an earlier
 * uneven split was for another pp; an encoder's is dropped); everything
 * else, per-module sp included, stays.  Nothing is freed or allocated: it is
 * meant for a struct copy of a loaded scenario (the planner's shared sim, a
 * candidate's text), which then borrows lay->llm.layers_per_stage; do not
 * mm_scenario_free a scenario a split was applied to. */
void mm_scenario_apply_layout(mm_scenario *sc, const mm_relayout *lay);

/* Undoes any layout applied to sc: copies from `base` (the scenario sc was
 * copied from) the sections mm_scenario_apply_layout writes (parallel and
 * train), without copying the whole struct; a planner's inner loop calls it
 * before each candidate. */
void mm_scenario_reset_layout(mm_scenario *sc, const mm_scenario *base);

/* The same change as `--set` overrides, one dotted key each
 * ("parallel.llm.tp=2", ...), as a JSON list of strings, for a user to run a
 * candidate by hand: loading the scenario with them gives the canonical text
 * mm_scenario_apply_layout gives (a test checks it).  Returns the length
 * needed, like snprintf. */
size_t mm_layout_sets_json(const mm_relayout *lay, char *buf, size_t len);

#endif
