/* layout.h - the parallel layout of one module: its six degrees (tensor,
 * pipeline, virtual pipeline, context, data, expert parallelism) and how
 * its layers split over the pipeline stages.  One type for everything that
 * reads a layout: the scenario (mm_module_layout.lay), the memory model
 * (mm_mem_config.lay), the graph builder (mm_build_spec.lay), the cost
 * bridge, the planner's candidates (mm_plan_cand.llm, .vision) and the
 * reports, so a layout is copied whole, never field by field.
 *
 * Ownership: an mm_layout never owns layers_per_stage.  It points at an
 * array owned by whoever filled it: a loaded scenario's (the reader
 * allocates it, mm_scenario_free frees it), or a planner candidate's
 * buffer; every other mm_layout, a struct copy, borrows it and must not
 * outlive the owner.  n_layers_per_stage decides: 0 is the even split
 * (layers / pp), whatever the pointer holds; else it is pp and the array
 * has pp entries.
 *
 * Megatron-LM's two pipeline-split options (embedding_in_split,
 * loss_in_split: --account-for-embedding-in-pipeline-split and
 * --account-for-loss-in-pipeline-split) count the embedding and the loss
 * as one layer each: the layers plus those extras split evenly over the
 * pp x vpp model chunks, and the first chunk of stage 0 (the last chunk
 * of stage pp-1) holds one transformer layer fewer.  Only these make a
 * stage's chunks uneven; a layers_per_stage entry splits into vpp equal
 * chunks.  Megatron-Core's rule, read in NVIDIA/Megatron-LM at
 * d98e8a64ddf34856e74b24714e3bedb2f5a39553,
 * megatron/core/transformer/transformer_block.py (get_num_layers_to_build)
 * and transformer_layer.py (get_transformer_layer_offset): layers go to
 * the chunks in virtual-stage order (chunk v of stage s is virtual stage
 * v * pp + s), so a chunk's first layer is the sum of the chunks before it.
 * Not for: checking a layout against a model or cluster (scenario/check.c)
 * or placing ranks (parallel/build.h). */
#ifndef MM_LAYOUT_H
#define MM_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mm_layout {
    int tp, pp, vpp, cp, dp, ep; /* degrees; cp, ep, vpp: 0 is taken as 1 */
    int n_layers_per_stage;       /* 0: an even split; else pp */
    const int *layers_per_stage;  /* n_layers_per_stage entries (borrowed, above) */
    bool embedding_in_split;      /* the embedding counts as a layer (above) */
    bool loss_in_split;           /* the loss (output layer) counts as a layer */
} mm_layout;

/* GPUs the layout occupies: tp * pp * cp * dp (ep folds into dp and tp). */
int mm_layout_gpus(const mm_layout *l);

/* Layers on pipeline stage s (0 <= s < pp) of a module of `layers` layers:
 * the uneven split's entry, the sum of its chunks under the split options
 * (above), or layers / pp. */
int mm_layout_stage_layers(const mm_layout *l, int64_t layers, int s);

/* Transformer layers of model chunk v (0 <= v < vpp) of stage s: virtual
 * stage v * pp + s (above).  A layout that mm_layout_split_check refuses
 * gives what the integer division gives. */
int mm_layout_chunk_layers(const mm_layout *l, int64_t layers, int s, int v);

/* The index of the first layer of chunk v of stage s (Megatron-Core's
 * get_transformer_layer_offset): the layers of the virtual stages before
 * it. */
int64_t mm_layout_chunk_offset(const mm_layout *l, int64_t layers, int s, int v);

/* The same split as pp * vpp stages of one chunk each: *flat gets pp =
 * pp * vpp, vpp 1, no split options and, unless the split is even,
 * per_vstage (room for pp * vpp ints, filled in virtual-stage order) as its
 * layers_per_stage; for a per-virtual-stage view (the data-aware memory). */
void mm_layout_flatten(const mm_layout *l, int64_t layers, int *per_vstage, mm_layout *flat);

/* Megatron-LM's checks of the split options against a model of `layers`
 * layers (transformer_config.py __post_init__ and training/arguments.py
 * validate_args at the commit above): 0 when they pass (or are off), else
 * -1 with what Megatron says, in mmsim's words, in msg.  A chunk left with
 * no transformer layer (the embedding or the loss alone) passes, as in
 * Megatron. */
int mm_layout_split_check(const mm_layout *l, int64_t layers, char *msg, size_t len);

/* True when a and b have the same degrees and the same split (an even
 * split equals no other; the arrays compare by content). */
bool mm_layout_equal(const mm_layout *a, const mm_layout *b);

/* The pipeline schedules mmsim runs, by train.schedule's names, in the
 * order of the scenario's mm_schedule_kind (scenario/scenario.h) and
 * NULL-terminated: one table for the scenario's key, the planner's space
 * and a framework profile's `schedules` list (model/framework.h). */
extern const char *const mm_schedule_names[];

#endif
