/* keys.h - the table of scenario keys: one row per key of the format, in
 * the order of the canonical text.  The reader, the defaults, the built-in
 * scenario, the canonical writer and `mmsim help scenario` all walk this
 * table; adding a key means adding a row (and the field it lands in).
 * Not for: the per-kind keys of `perturb:` entries (scenario/perturb.c
 * documents and reads those; the table has one row for the list). */
#ifndef MM_SCENARIO_KEYS_H
#define MM_SCENARIO_KEYS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    MM_KT_SECTION,   /* a mapping of keys below it (cluster, train, parallel.llm) */
    MM_KT_STR,       /* char *, written quoted */
    MM_KT_WORD,      /* char *, a bare token (parallel.order) */
    MM_KT_INT,       /* int, [min, max] */
    MM_KT_I64,       /* int64_t, [min, max] */
    MM_KT_U64,       /* uint64_t, [min, max] */
    MM_KT_DOUBLE,    /* double, [dmin, dmax] */
    MM_KT_BOOL,      /* bool */
    MM_KT_ENUM,      /* an enum (int-sized) or a bool (two choices), index of choices */
    MM_KT_INT_LIST,  /* int * and an int count (count_off), entries in [min, max] */
    MM_KT_NAME_LIST, /* char ** and an int count, kept sorted and unique */
    MM_KT_WORKLOAD,  /* `text`, a file, or a mapping of the workload.* keys */
    MM_KT_PERTURB,   /* the perturb list (scenario/perturb.c) */
    MM_KT_MODEL      /* a path (char *) or an inline mapping (scenario/modelkey.c) */
} mm_key_type;

enum {
    MM_KF_REQUIRED = 1u << 0, /* a scenario must give it */
    MM_KF_ALWAYS = 1u << 1,   /* a section that is present even when not given */
    MM_KF_INHERIT = 1u << 2,  /* a module's zero: unset (-1) inherits train.zero */
    MM_KF_DERIVED = 1u << 3,  /* train.global_batch: unset is micro_batch x llm dp */
    MM_KF_FLOW = 1u << 4      /* a section written on one line: {k: v, ...} */
};

typedef struct mm_key {
    const char *name;          /* dotted: "train.seq_len" */
    mm_key_type type;
    unsigned flags;
    int64_t min, max;          /* integer types and list entries */
    double dmin, dmax;         /* MM_KT_DOUBLE */
    const char *const *choices; /* MM_KT_ENUM (NULL-terminated) */
    const char *def;           /* value when not given, as YAML; NULL: none
                                  (required, derived, an absent section) */
    const char *builtin;       /* value in the built-in default scenario, as
                                  YAML; NULL: not written there */
    const char *doc;           /* one line; NULL for a plain section */
    size_t off;                /* field in mm_scenario; SIZE_MAX: none (a
                                  section without a `present` flag) */
    size_t size;               /* sizeof the field (MM_KT_ENUM: int or bool) */
    size_t count_off;          /* lists: the int count */
} mm_key;

extern const mm_key mm_keys[];
extern const size_t mm_n_keys;

/* The row of a dotted name, or NULL. */
const mm_key *mm_key_find(const char *name);

/* Length of the parent prefix of a name ("train.seq_len" -> 5, "model" -> 0). */
size_t mm_key_parent_len(const char *name);

/* The leaf of a name ("train.seq_len" -> "seq_len"). */
const char *mm_key_leaf(const char *name);

/* The row of the key's parent section (NULL at the top level). */
const mm_key *mm_key_parent(const mm_key *k);

/* "int 1..", "one of bf16 | fp16 | fp8", ...: the type as help prints it. */
void mm_key_type_text(const mm_key *k, char *buf, size_t len);

#endif
