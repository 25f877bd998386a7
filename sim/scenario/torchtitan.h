/* torchtitan.h - `mmsim run --torchtitan FILE.toml`: a torchtitan train
 * config (pytorch/torchtitan torchtitan/config/job_config.py, the TOML
 * form its train_configs/ ship) turned into scenario overrides: the model
 * flavor onto a models/ file, [parallelism] onto parallel.llm and train.zero
 * under the fsdp framework profile, [training] onto the batch and
 * sequence, [activation_checkpoint] and the float8 converter onto
 * train.recompute and train.precision (docs/torchtitan.md has the mapping).
 *
 * Every key is mapped, accepted because it does not change the cost of a
 * step (paths, logging, optimizer hyperparameters, checkpoint cadence), or
 * refused (it changes the cost in a way mmsim does not model, or mmsim does
 * not know it); every refused key of the file is reported at once, in one
 * MM_EINPUT error naming the file, the first one's line and key, and each
 * of them with its line.
 * Not for: running anything; the Megatron-LM sources (megatron.h). */
#ifndef MM_SCENARIO_TORCHTITAN_H
#define MM_SCENARIO_TORCHTITAN_H

#include <stdbool.h>

#include "scenario/scenario.h"
#include "util/err.h"

#define MM_TT_MAX_SETS 32
#define MM_TT_MAX_NOTES 160
#define MM_TT_MAX_USER_SETS 256

typedef struct mm_torchtitan {
    /* --set overrides in order ("model=models/llama-3-8b.json", ...), each
     * with the TOML key it came from and that key's line (""/0: derived) */
    char sets[MM_TT_MAX_SETS][200];
    char set_from[MM_TT_MAX_SETS][96];
    int set_line[MM_TT_MAX_SETS];
    int n_sets;
    /* what each key became, one line each (--print-scenario, -v) */
    char notes[MM_TT_MAX_NOTES][192];
    int n_notes;
    /* the degrees as read; shard -1: the rest of the world size, as
     * torchtitan's ParallelDims derives it */
    long tp, pp, cp, replicate, shard;
    int shard_line;
    long local_batch, global_batch, microbatch; /* global -1: local x dp */
    int global_line;
    int stages; /* virtual pipeline stages in all (0: no pipelining) */
    bool keep_gathered_ok; /* fsdp_reshard_after_forward allows ZeRO-3 as profiled */
    char derived[3][96];   /* dp, zero, global batch from the world size */
} mm_torchtitan;

/* The layers of each of `stages` pipeline stages as torchtitan splits
 * them (torchtitan/distributed/pipeline_parallel.py
 * generate_llm_fqn_per_model_part): the embedding counts `in` layers on the
 * first stage, norm and output `out` on the last, the effective layers
 * spread evenly with the remainder on the first stages; per[] gets
 * `stages` counts.  The reader and the emitter (plan/emit_torchtitan.c)
 * both split with it.  Returns 0, or -1 when torchtitan refuses the split. */
int mm_torchtitan_split(int layers, int stages, int in, int out, int *per);

/* Reads and maps FILE.  Returns 0 or -code (MM_EINPUT: the file, the first
 * refused key's line and key, every refused key in the message). */
int mm_torchtitan_read(const char *path, mm_torchtitan *tt, mm_err *err);

/* The scenario the config describes: FILE read (mm_torchtitan_read), then
 * `scenario` (NULL: the built-in default) loaded with its overrides, the
 * data-parallel degree, ZeRO stage and global batch derived from the
 * cluster's GPUs as torchtitan derives them from the world size, and the
 * user's `sets`, which win.  Returns 0 or -code; for errors the layout
 * checks give later, mm_torchtitan_repoint. */
int mm_torchtitan_scenario(const char *path, const char *scenario, const char *const *sets, int n_sets,
                           mm_torchtitan *tt, mm_scenario *sc, mm_err *err);

/* Re-points an error about one of tt's overrides (file "--set") at the TOML
 * key that made it: file `path`, the key's line, "(from KEY)" in the
 * message.  The user's own --set keep theirs; other errors are left. */
void mm_torchtitan_repoint(const mm_torchtitan *tt, const char *path, const char *const *user_sets, int n_user,
                           mm_err *err);

#endif
