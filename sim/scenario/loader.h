/* loader.h - internals shared by the scenario reader (read.c), the
 * perturbation reader (perturb.c) and the --set overrides (set.c): the
 * state of one load and the typed reads that record where each key was
 * and re-point errors at --set (loader.c), and the text buffer of the
 * canonical text (sbuf.c).
 * Not for: use outside sim/scenario (the public API is scenario.h). */
#ifndef MM_SCENARIO_LOADER_H
#define MM_SCENARIO_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scenario/scenario.h"
#include "util/doc.h"

#define MM_SET_FILE "--set"
#define MM_PATH_MAX_LEN 128 /* = sizeof(mm_err.key) */

struct mm_node;

typedef struct mm_loader {
    mm_scenario *sc;
    mm_doc doc;
    char (*owned)[MM_PATH_MAX_LEN]; /* dotted paths written by --set */
    int n_owned, cap_owned;
    bool oom; /* a note could not be recorded */
} mm_loader;

/* strlcpy: copies what fits and always terminates (dst_len > 0). */
void mm_ld_copy(char *dst, size_t dst_len, const char *src);
/* out = prefix.key (out has MM_PATH_MAX_LEN bytes). */
void mm_ld_join(char *out, const char *prefix, const char *key);
/* Re-points an input error at --set when an override wrote the key. */
int mm_ld_fix(const mm_loader *ld, int rc, mm_err *err);
/* Records where a key was read, for mm_scenario_fail(). */
void mm_ld_note(mm_loader *ld, const char *path, int line);

int mm_ld_i64(mm_loader *ld, struct mm_node *map, const char *prefix, const char *key, int64_t min,
              int64_t max, int64_t *out, mm_err *err);
int mm_ld_int(mm_loader *ld, struct mm_node *map, const char *prefix, const char *key, int min, int max,
              int *out, mm_err *err);
int mm_ld_double(mm_loader *ld, struct mm_node *map, const char *prefix, const char *key, double min,
                 double max, double *out, mm_err *err);
int mm_ld_bool(mm_loader *ld, struct mm_node *map, const char *prefix, const char *key, bool *out,
               mm_err *err);
int mm_ld_enum(mm_loader *ld, struct mm_node *map, const char *prefix, const char *key,
               const char *const *choices, int *out, mm_err *err);
/* A string into a fixed buffer (too long: an input error naming the key). */
int mm_ld_str(mm_loader *ld, struct mm_node *map, const char *prefix, const char *key, char *out,
              size_t len, bool *found, mm_err *err);

/* model: a path or the config inline (modelkey.c); *found: given. */
int mm_ld_model(mm_loader *ld, struct mm_node *root, bool *found, mm_err *err);
/* perturb: a list of {kind: ..., ...} (perturb.c). */
int mm_ld_perturb(mm_loader *ld, struct mm_node *root, mm_err *err);

/* Appends the canonical `perturb:` lines (perturb.c). */
typedef struct mm_sbuf {
    char *buf;
    size_t len, n; /* capacity, characters needed so far */
} mm_sbuf;
void mm_sb_printf(mm_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mm_sb_quote(mm_sbuf *b, const char *s);
void mm_sb_perturb(mm_sbuf *b, const mm_perturb *pt);
/* Appends the canonical `model:` line, or lines of an inline model
 * (modelkey.c). */
void mm_sb_model(mm_sbuf *b, const mm_scenario *sc);

#endif
