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
 * Not for: checking a layout against a model or cluster (scenario/check.c)
 * or placing ranks (parallel/build.h). */
#ifndef MM_LAYOUT_H
#define MM_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mm_layout {
    int tp, pp, vpp, cp, dp, ep; /* degrees; cp, ep, vpp: 0 is taken as 1 */
    int n_layers_per_stage;       /* 0: an even split; else pp */
    const int *layers_per_stage;  /* n_layers_per_stage entries (borrowed, above) */
} mm_layout;

/* GPUs the layout occupies: tp * pp * cp * dp (ep folds into dp and tp). */
int mm_layout_gpus(const mm_layout *l);

/* Layers on pipeline stage s (0 <= s < pp) of a module of `layers` layers:
 * the uneven split's entry, or layers / pp. */
int mm_layout_stage_layers(const mm_layout *l, int64_t layers, int s);

/* True when a and b have the same degrees and the same split (an even
 * split equals no other; the arrays compare by content). */
bool mm_layout_equal(const mm_layout *a, const mm_layout *b);

#endif
