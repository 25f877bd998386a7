/* toml.h - reading the TOML subset that torchtitan's train configs use
 * (torchtitan/models/NAME/train_configs/FILE.toml): [table] and [dotted.table]
 * headers, `key = value` with bare, quoted or dotted keys, and values that
 * are basic ("...") or literal ('...') strings, integers (with _, and 0x,
 * 0o, 0b), floats (with exponents, inf, nan), booleans, arrays (over
 * several lines, with comments and a trailing comma) and inline tables
 * ({a = 1}, flattened into dotted keys).  The document comes out flat: one
 * entry per leaf key, its whole dotted name ("parallelism.tensor_parallel_degree")
 * and the line it was written on, in file order.
 *
 * Debian 12 packages no C TOML library (tomlc99 is not in bookworm; the
 * packaged ones, toml++, toml11 and cpptoml, are C++), so the subset is
 * parsed here.  What TOML has beyond it is refused with its line, never
 * read wrongly: arrays of tables ([[x]]), multi-line strings, dates and
 * times.  A key may be given once (TOML's rule; a table header too).
 * Not for: writing TOML; knowing any schema (scenario/torchtitan.c maps the
 * keys). */
#ifndef MM_TOML_H
#define MM_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Bounds on one document (docs/reliability.md): more entries, deeper
 * arrays or longer keys are refused (MM_EINPUT with the line). */
#define MM_TOML_MAX_ENTRIES 100000
#define MM_TOML_MAX_DEPTH 64
#define MM_TOML_MAX_KEY 256

typedef enum mm_toml_kind {
    MM_TOML_STRING,
    MM_TOML_INT,
    MM_TOML_FLOAT,
    MM_TOML_BOOL,
    MM_TOML_ARRAY,
} mm_toml_kind;

typedef struct mm_toml_value {
    mm_toml_kind kind;
    char *s;                     /* MM_TOML_STRING: the text, escapes resolved */
    int64_t i;                   /* MM_TOML_INT */
    double d;                    /* MM_TOML_FLOAT */
    bool b;                      /* MM_TOML_BOOL */
    struct mm_toml_value *items; /* MM_TOML_ARRAY: n items */
    int n;
} mm_toml_value;

typedef struct mm_toml_entry {
    char key[MM_TOML_MAX_KEY]; /* the whole dotted name, quotes removed */
    int line;                  /* 1-based line of the key */
    mm_toml_value v;
} mm_toml_entry;

typedef struct mm_toml {
    mm_toml_entry *e;
    int n, cap;
    char path[256]; /* the file name in errors */
} mm_toml;

/* Parses a file (a regular file of at most MM_FILE_MAX_CONFIG bytes, no NUL
 * byte, valid UTF-8: util/file.h) or text in memory (`name` in errors).
 * The first syntax error -> MM_EINPUT with the file, its line and the key
 * it was reading.  On error the document is freed. */
int mm_toml_load_file(mm_toml *t, const char *path, mm_err *err);
int mm_toml_load_string(mm_toml *t, const char *name, const char *text, mm_err *err);
void mm_toml_free(mm_toml *t);

/* The entry of a dotted key, or NULL. */
const mm_toml_entry *mm_toml_get(const mm_toml *t, const char *key);

/* The kind's name for messages: "string", "integer", "float", "boolean",
 * "array". */
const char *mm_toml_kind_name(mm_toml_kind k);

#endif
