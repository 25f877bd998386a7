/* space.h - the planner's search space: every layout the layout
 * arithmetic allows, one dimension at a time, and the user's narrowing of
 * it (`mmsim plan --space DIM=V1,V2,...`).
 *
 * Dimensions (mm_space_dim, names in mm_space_dim_names):
 *   placement      pipeline, colocated, disjoint, homogeneous (an encoder's)
 *   enc_gpus       GPUs the encoder takes on its own (pipeline, disjoint):
 *                  every count that is a multiple of enc_tp x enc_pp and
 *                  leaves the LLM at least one GPU
 *   enc_tp         divisors of the encoder's heads that divide a node or
 *                  are whole nodes (colocated: that divide the LLM's GPUs)
 *   enc_pp         divisors of the encoder's layers (its split is even)
 *   enc_recompute  none, selective, full (parallel.vision.recompute)
 *   tp             the LLM's: as enc_tp, with the LLM's heads
 *   cp             1 and every c with seq_len divisible by 2c (Megatron's
 *                  two load-balanced chunks per CP rank)
 *   pp             1 .. min(layers, --max-pp); uneven splits as before
 *   vpp            every v with pp > 1 and the layers split into pp x v chunks
 *   ep             (MoE) divisors of the experts; validation folds them
 *   micro_batch    divisors of global_batch / dp (the memory check decides
 *                  how far up they fit)
 *   recompute      the LLM's: none, selective, full
 *   zero           the stages the framework runs (its profile's zero_stages)
 *   schedule       gpipe, 1f1b, zb-h1, zb-2p at vpp 1 and pp > 1; interleaved at
 *                  vpp > 1, zb-v at vpp 2; the scenario's at pp 1 (one stage: all
 *                  equal); of these, those the framework runs (its profile's schedules)
 * A narrowing keeps, per dimension it names, only the listed values.
 * Not for: checking a layout against the model (the scenario layer's
 * validation) or scoring it (planner.c). */
#ifndef MM_PLAN_SPACE_H
#define MM_PLAN_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum {
    MM_SD_PLACEMENT, MM_SD_ENC_GPUS, MM_SD_ENC_TP, MM_SD_ENC_PP, MM_SD_ENC_RECOMPUTE, MM_SD_TP, MM_SD_CP,
    MM_SD_PP, MM_SD_VPP, MM_SD_EP, MM_SD_MB, MM_SD_RECOMPUTE, MM_SD_ZERO, MM_SD_SCHEDULE, MM_SD_COUNT
} mm_space_dim;

extern const char *const mm_space_dim_names[]; /* index = mm_space_dim; NULL-terminated */

#define MM_SPACE_MAX_VALUES 64

/* The user's narrowing: per dimension, the values kept (n = 0: all). */
typedef struct mm_plan_space {
    int n[MM_SD_COUNT];
    int v[MM_SD_COUNT][MM_SPACE_MAX_VALUES];
} mm_plan_space;

/* Reads one "DIM=V1,V2,..." into s (a dimension named twice keeps the
 * last list); enum dimensions take their names (placement, *recompute,
 * schedule), the others positive integers.  Errors are MM_EINPUT naming
 * file "<cli>", key "--space".  Returns 0 or -code. */
int mm_plan_space_parse(mm_plan_space *s, const char *arg, mm_err *err);

/* True when the narrowing keeps value v of dimension d. */
bool mm_plan_space_allows(const mm_plan_space *s, mm_space_dim d, int v);

/* What the enumeration needs to know of the model and cluster. */
typedef struct mm_space_facts {
    int G, gpn;                       /* GPUs, GPUs per node */
    int64_t layers, heads, experts, seq, global_batch;
    int64_t enc_layers, enc_heads;   /* the (first) encoder's; 0: none */
    int max_pp;
    int base_schedule;                /* the scenario's (pp 1) */
    unsigned zero_stages;             /* the framework's (bit z: ZeRO-z runs) */
    unsigned schedules;               /* the framework's (bit k: mm_schedule_names[k] runs) */
    bool encoder;                     /* the plan places an encoder */
} mm_space_facts;

/* How L layers split over pp stages of vpp chunks (space.c's comment,
 * Megatron-LM's options): 1 even, 0 uneven (*f, *m, *l set), 2 Megatron's
 * split options at vpp > 1 (embedding and loss counted as layers; *f, *m,
 * *l the stages' layers), -1 none. */
int mm_space_split_layers(int64_t L, int pp, int vpp, int *f, int *m, int *l);

/* Values of one integer dimension that the arithmetic allows, ascending:
 * divisors of n that divide a node of gpn GPUs or are whole nodes, and
 * divide `heads` (0: any). Returns the count (at most cap). */
int mm_space_tp_values(int n, int gpn, int64_t heads, int *out, int cap);

#endif
