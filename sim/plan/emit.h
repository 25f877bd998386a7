/* emit.h - the scenario sources run backwards: a prepared scenario (mm_sim:
 * the model loaded, the layout checked) written as the configuration of the
 * tool that would launch it, so that a layout `mmsim plan` picked can be
 * run for real (`mmsim plan --emit FORMAT FILE`).
 *
 *   megatron    a Megatron-LM argument list for pretrain_gpt.py, in the
 *               form `mmsim run --megatron-args` reads (scenario/megatron.h):
 *               read back, it gives the same layout and the same simulated
 *               iteration;
 *   torchtitan  a torchtitan train config (TOML), in the form
 *               `mmsim run --torchtitan` reads (scenario/torchtitan.h), with
 *               the same round trip;
 *   deepspeed   a DeepSpeed config (JSON) for the Hugging Face Trainer and,
 *               beside it, the Trainer's own arguments as a JSON file that
 *               transformers' HfArgumentParser.parse_json_file reads
 *               (FILE.trainer.json: emit.c names it).  mmsim reads neither
 *               back; the keys are DeepSpeed's and transformers' documented
 *               ones (emit_deepspeed.c cites them).
 *
 * What the target cannot say (an encoder placed apart from the LLM, a
 * schedule it does not run, a ZeRO stage it has no switch for, a model its
 * arguments cannot build) is refused by name: one MM_EINPUT error naming
 * the scenario's file and the first key at fault, and every such key in the
 * message.  A file is never half written: the text goes to a temporary file
 * in the same folder, renamed over FILE only when complete.
 * In the plan room, not beside the readers in sim/scenario: an emitter
 * writes what the cost bridge resolved (an `auto` overlap as
 * mm_sim_overlap resolves it), and the scenario room lies below the cost
 * room; the plan room is the lowest that sees both, and its planner is
 * what hands an emitter its pick.
 * Not for: choosing the layout (planner.h) or reading these formats
 * (scenario/megatron.h, scenario/torchtitan.h). */
#ifndef MM_PLAN_EMIT_H
#define MM_PLAN_EMIT_H

#include <stddef.h>

#include "scenario/sim.h"
#include "util/err.h"

typedef enum { MM_EMIT_MEGATRON, MM_EMIT_TORCHTITAN, MM_EMIT_DEEPSPEED, MM_EMIT_COUNT } mm_emit_format;

/* "megatron", "torchtitan", "deepspeed", NULL (index = mm_emit_format). */
extern const char *const mm_emit_format_names[];

/* The format called `name`, or -1. */
int mm_emit_format_find(const char *name);

/* Checks, before anything is computed, that `path` can be written: its
 * folder exists and is writable and `path` is not a folder.  MM_EINPUT
 * naming the path and key "--emit".  Returns 0 or -code. */
int mm_emit_check_path(const char *path, mm_err *err);

/* The companion file a format writes beside `path` (deepspeed:
 * "ds.json" -> "ds.trainer.json"), into out; "" when the format writes
 * one file only. */
void mm_emit_companion_path(mm_emit_format f, const char *path, char *out, size_t len);

/* The text of the format (and, for deepspeed, of the companion; aux may
 * be NULL otherwise) in new strings (free() them); `path` (NULL: none) is
 * the file the text is for, named where one file names the other.  Returns 0 or -code:
 * MM_EINPUT for what the format cannot express (above). */
int mm_emit_text(mm_emit_format f, const mm_sim *sim, const char *path, char **text, char **aux, mm_err *err);

/* mm_emit_text written to `path` (and its companion), each through a
 * temporary file renamed into place.  An unwritable path is MM_EINPUT
 * naming it, key "--emit"; on any error before the renames no file named
 * is changed (the two renames of deepspeed's pair are not one step).
 * Returns 0 or -code. */
int mm_emit_write(mm_emit_format f, const mm_sim *sim, const char *path, mm_err *err);

#endif
