/* hf.h - reading Hugging Face config.json mappings as transformers reads
 * them: a key a config leaves out takes the default of its transformers
 * config class (one table, hf.c, that names the transformers version it was
 * read from), and a key mmsim neither models nor knows to be costless is
 * refused by name instead of being ignored.
 * Not for: what the keys mean for cost (llm_read.c, mllm_read.c). */
#ifndef MM_HF_H
#define MM_HF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/doc.h"
#include "util/err.h"

/* The transformers release the defaults table was read from. */
#define MM_HF_TRANSFORMERS_VERSION "transformers 5.0 dev (main, commit 008e574)"

/* One mapping being read: its document, node, key prefix for messages
 * ("text_config") and the model_type whose class supplies the defaults. */
typedef struct mm_hf {
    const mm_doc *doc;
    mm_node *map;
    const char *prefix;
    const char *type; /* defaults row: "llama", "clip_vision_model", ... */
    mm_err *err;
} mm_hf;

/* The transformers config class of a model_type ("LlamaConfig"), or NULL
 * when the table has no row for it. */
const char *mm_hf_class(const char *type);

/* Dotted key for messages: prefix.key. */
void mm_hf_key(const mm_hf *r, const char *key, char *buf, size_t len);

/* Present and not JSON null. */
bool mm_hf_has(const mm_hf *r, const char *key);

/* An integer in [min, max]: the config's value, else the class default,
 * else (no default) *found = false.  Errors name file, line and key. */
int mm_hf_int(const mm_hf *r, const char *key, int64_t min, int64_t max, int64_t *out, bool *found);
/* Same, but a key with neither value nor default is an error. */
int mm_hf_need_int(const mm_hf *r, const char *key, int64_t min, int64_t max, int64_t *out);
/* JSON null reads as false (None: the feature is off), whatever the
 * class default. */
int mm_hf_bool(const mm_hf *r, const char *key, bool *out);
int mm_hf_str(const mm_hf *r, const char *key, char *out, size_t len);
int mm_hf_double(const mm_hf *r, const char *key, double min, double max, double *out);

/* An error about `key` of this mapping (MM_EINPUT, its line). */
int mm_hf_fail(const mm_hf *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Refuses (MM_EINPUT, naming the key) any key of the mapping that is not
 * in `read` (what the caller models), not a key of the class's defaults
 * row, and not in the lists of keys known not to change cost (generic ones
 * and `costless`, may be NULL), nor in hf.c's per-model_type list of keys
 * known to cost nothing.  Every such key of the mapping is named in the one
 * error (the first as its key and line, all with their lines in the text).  text_config, vision_config and llm_config
 * are left to the caller (nested modules, checked on their own); any other
 * sub-config (an audio_config on a vision-language type) is refused. */
int mm_hf_check_keys(const mm_hf *r, const char *const *read, const char *const *costless);

/* True when err holds mm_hf_check_keys's refusal of unmodeled keys. */
bool mm_hf_is_keys_error(const mm_err *err);
/* Adds the unmodeled-key refusal `more` (another mapping of the same file)
 * to `into`, so that one message names the keys of every mapping, each
 * with its line; `into` keeps its first key and line (or becomes `more`
 * when it holds no error). */
void mm_hf_join_keys_error(mm_err *into, const mm_err *more);

/* An optional feature mmsim does not model (InternVL's image_fold): absent,
 * null, false or 0 read as off; any other value is refused naming `what`. */
int mm_hf_off(const mm_hf *r, const char *key, const char *what);

/* The hidden_act names mmsim knows: *gated set for the SwiGLU family when
 * `gated_family` (Llama-style MLPs are gated whatever the name), GELU and
 * ReLU variants accepted as element-wise.  An unknown name is refused. */
int mm_hf_act(const mm_hf *r, const char *key, const char *act);

/* True when s is in the NULL-terminated list. */
bool mm_hf_in(const char *s, const char *const *list);

#endif
