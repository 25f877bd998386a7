/* megatron.h - `mmsim run --megatron-args FILE`: a Megatron-LM argument
 * list, as launch scripts write it, turned into scenario overrides and the
 * Hugging Face config.json of the text-only GPT or Llama it describes
 * (docs/megatron.md has the whole mapping).
 *
 * Every argument is one of (the table of scenario/megatron_args.c):
 * mapped (onto a scenario key or the model), costless (it does not change
 * the simulated cost: learning rate, paths, logging), or not modeled (it
 * changes the cost and mmsim does not model it); those not modeled, and
 * any the table does not know, are one MM_EINPUT error naming the file,
 * the first one's line and every one of them.  A launch script
 * (scenario/mgscript.h) gives its launch command's arguments the same way.
 * A scenario source beside the YAML reader and --set: the CLI, the C API
 * and the planner can each turn an argument list into a scenario
 * (mm_megatron_scenario).
 * Not for: running anything. */
#ifndef MM_SCENARIO_MEGATRON_H
#define MM_SCENARIO_MEGATRON_H

#include <stdbool.h>

#include "scenario/scenario.h"
#include "util/err.h"

#define MM_MG_MAX_SETS 64
#define MM_MG_MAX_NOTES 160
#define MM_MG_MAX_USER_SETS 256 /* the user's own --set overrides beside them */

typedef struct mm_megatron {
    /* --set overrides, in order ("train.seq_len=2048", ...) */
    char sets[MM_MG_MAX_SETS][160];
    int n_sets;
    /* for each override, the argument it came from and that argument's
     * line in FILE ("" and 0: a default or a derived value) */
    char set_from[MM_MG_MAX_SETS][64];
    int set_line[MM_MG_MAX_SETS];
    char model_json[4096];  /* the HF config.json text (an MLLM: our model YAML's form, parts inline) */
    /* "model=" and that text: the override that puts the model inline in
     * the scenario (scenario/modelkey.c), first, so a user's --set model=
     * wins */
    char model_set[4160];
    /* what each argument became, one line each, for --print-scenario:
     * "--fp16 -> train.precision: fp16", "--lr: ignored (optimizer ...)" */
    char notes[MM_MG_MAX_NOTES][192];
    int n_notes;
    /* --transformer-impl local: train.framework megatron-local (else
     * megatron-core, Transformer Engine's) */
    bool wants_local;
    /* --save-interval with --save: charged (train.save_interval) only
     * when the user's --set gives train.save_gb_s, the storage's write
     * bandwidth, which has no default (mm_megatron_scenario); 0: none */
    long save_interval;
    int save_line;
} mm_megatron;

/* Reads and maps FILE.  Returns 0 or -MM_EINPUT (err: file, line, the
 * argument as key). */
int mm_megatron_read(const char *path, mm_megatron *mg, mm_err *err);
/* The same from a launch script (scenario/mgscript.h): the arguments of
 * its launch command; the entry script must be pretrain_gpt.py (a text
 * GPT or Llama) or examples/multimodal/train.py (an MLLM: tower, projector
 * and LLM, written in our model YAML's form with its parts inline;
 * scenario/megatron_mm.h); the others are refused by name. */
int mm_megatron_read_script(const char *path, mm_megatron *mg, mm_err *err);

/* Adds an override "key=value" (with its note "from -> key: value"), as
 * the reader does; for what main.c maps after reading (train.framework,
 * dp).  Silently capped at MM_MG_MAX_SETS / MM_MG_MAX_NOTES. */
void mm_megatron_add(mm_megatron *mg, const char *from, const char *key, const char *value);
/* Adds a note only. */
void mm_megatron_note(mm_megatron *mg, const char *text);

/* Re-points an error the scenario gave for one of mg's overrides (file
 * "--set", its key) at the argument that made it: file `path`, that
 * argument's line, and "(from --ARG)" in the message.  Overrides the user
 * gave (user_sets) keep theirs.  A no-op for any other error. */
void mm_megatron_repoint(const mm_megatron *mg, const char *path, const char *const *user_sets, int n_user,
                         mm_err *err);

/* Writes mg->model_json to out_path (its folder must exist), for a user
 * who wants the model as a file too (`--megatron-model`); the scenario
 * does not need it.  Returns 0 or -code. */
int mm_megatron_write_model(const mm_megatron *mg, const char *out_path, mm_err *err);

/* The scenario an argument list describes: FILE `args` read and mapped
 * (mm_megatron_read), train.framework from --transformer-impl, then
 * `scenario` (NULL: the built-in default) loaded once with the model
 * inline (`model:` a mapping, so the scenario's canonical text carries it
 * and no file is written), the list's overrides and the user's `sets`,
 * which win; data parallelism is then the cluster's (dp = GPUs / (tp pp
 * cp), as Megatron-LM derives it from the world size) unless the user's
 * sets give it.  Returns 0 or -code; errors name the argument's file and
 * line where they come from the list (for errors the layout checks give
 * later, mm_megatron_repoint). */
int mm_megatron_scenario(const char *args, const char *scenario, const char *const *sets, int n_sets,
                         mm_megatron *mg, mm_scenario *sc, mm_err *err);
/* The same from a launch script (`mmsim run --megatron-script FILE.sh`). */
int mm_megatron_script_scenario(const char *script, const char *scenario, const char *const *sets, int n_sets,
                                mm_megatron *mg, mm_scenario *sc, mm_err *err);

#endif
