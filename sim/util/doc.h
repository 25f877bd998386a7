/* doc.h - reading YAML and JSON input files (scenarios, topologies, model
 * configs) into a small document tree of our own, with errors that name the
 * file, line and key.
 *
 * The text is parsed by libyaml's event parser (the reference C
 * implementation of YAML 1.1); doc.c builds the tree from its events and
 * checks the bounds below on the way.  JSON is read by the same parser (JSON
 * is YAML flow syntax), so HF config.json files use it.  A mm_doc owns its
 * nodes; aliases are resolved while building: an alias is the node its
 * anchor names, shared, not copied (mm_node_is_shared), and a merge key
 * (`<<: *base`) puts the pairs of the mapping it names into its own.  The getters look up
 * a child by key, check its type and range, and on failure fill an mm_err
 * with the file, the node's 1-based line and the dotted key path the caller
 * passes.  Editing (for --set) replaces or appends mapping entries; emitting
 * a node as one-line YAML flow or JSON text is doc_emit.c's.
 * Not for: writing files; knowing any schema. */
#ifndef MM_DOC_H
#define MM_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Bounds on one document, aliases expanded (docs/reliability.md): larger or
 * deeper documents are refused (MM_EINPUT) while they are built, before any
 * alias is expanded. */
#define MM_DOC_MAX_NODES 100000
#define MM_DOC_MAX_DEPTH 256

typedef struct mm_node mm_node;

typedef struct mm_doc {
    mm_node *root;  /* NULL for an empty document (a file of comments) */
    mm_node *nodes; /* every node the document owns, freed together */
    char path[256]; /* file name used in error messages */
} mm_doc;

/* Parses a file.  Missing/unreadable file or syntax error -> MM_EINPUT with
 * the file and (for syntax errors) the line of the error.  The file must be
 * a regular file of at most MM_FILE_MAX_CONFIG bytes without NUL bytes
 * (util/file.h), valid UTF-8, one document, and within the bounds above; a
 * key may appear once in a mapping.  Nodes are counted as if every alias
 * were replaced by what it names (an alias counts one, plus its node). */
int mm_doc_load_file(mm_doc *doc, const char *path, mm_err *err);
/* Parses text held in memory; `name` is used as the file name in errors. */
int mm_doc_load_string(mm_doc *doc, const char *name, const char *text, mm_err *err);
void mm_doc_free(mm_doc *doc);

mm_node *mm_doc_root(const mm_doc *doc);

/* ---- reading nodes (NULL is allowed everywhere and is none of these) ---- */

bool mm_node_is_scalar(const mm_node *node);
bool mm_node_is_sequence(const mm_node *node);
bool mm_node_is_mapping(const mm_node *node);
/* A scalar's text (NUL-terminated; *len, if non-NULL, is its length, which
 * counts a "\0" escape inside), or NULL for a non-scalar. */
const char *mm_node_scalar(const mm_node *node, size_t *len);
/* True for a scalar written in quotes or as a block scalar (| or >): text,
 * never a number, a flag or null. */
bool mm_node_is_quoted(const mm_node *node);
/* How a scalar was written (MM_SCALAR_PLAIN for a non-scalar). */
typedef enum mm_scalar_style {
    MM_SCALAR_PLAIN,
    MM_SCALAR_SINGLE, /* 'text' */
    MM_SCALAR_DOUBLE, /* "text" */
    MM_SCALAR_BLOCK,  /* | or > */
} mm_scalar_style;
mm_scalar_style mm_node_style(const mm_node *node);
/* The node's tag as written (e.g. "!!str" resolved to
 * "tag:yaml.org,2002:str"), or NULL when it has none. */
const char *mm_node_tag(const mm_node *node);
/* True when an alias names this node (it appears more than once). */
bool mm_node_is_shared(const mm_node *node);
/* Entries of a sequence or pairs of a mapping; 0 for anything else. */
int mm_node_count(const mm_node *node);
/* Item i of a sequence, key or value of pair i of a mapping; NULL when out
 * of range or of the wrong kind. */
mm_node *mm_node_item(const mm_node *seq, int i);
mm_node *mm_node_pair_key(const mm_node *map, int i);
mm_node *mm_node_pair_value(const mm_node *map, int i);

/* 1-based line and column where the node starts, 0 for NULL: a scalar's
 * first character; a collection's first item or key (so a JSON list's line
 * is that of its first entry, not of its '['), an empty one's '[' or '{'.
 * An empty value (`key:` with nothing after it) is on its key's line. */
int mm_node_line(const mm_node *node);
int mm_node_col(const mm_node *node);

/* Child of a mapping by key (a scalar key of that text), or NULL (also NULL
 * when map is not a mapping). */
mm_node *mm_node_get(const mm_node *map, const char *key);

/* Checks that every key of mapping `map` is in the NULL-terminated `allowed`
 * list; the first unknown key gives MM_EINPUT "unknown key 'x' (did you mean
 * 'y'?)" with `prefix`.x as the dotted key.  A non-mapping gives a type error. */
int mm_node_check_keys(const mm_doc *doc, const mm_node *map, const char *prefix,
                       const char *const *allowed, mm_err *err);

/* 1-based line of the key `key` in mapping `map` (0 when absent).  Use it
 * to say where a key was written; mm_node_line of the value may lie on a
 * later line (a block list or mapping starts below its key). */
int mm_node_key_line(const mm_node *map, const char *key);

/* True for an absent value: a NULL node, an empty plain scalar (`key:` with
 * nothing after it), or a plain `~`, `null`, `Null`, `NULL`. */
bool mm_node_is_null(const mm_node *node);

/* ---- editing (--set) ---------------------------------------------------- */

/* New nodes owned by `doc` (freed with it), at line 0; NULL when out of
 * memory. */
mm_node *mm_doc_new_mapping(mm_doc *doc);
mm_node *mm_doc_new_scalar(mm_doc *doc, const char *text, size_t len);
/* A deep copy of `node` (of any document) owned by `doc`, keeping lines and
 * styles; what aliases shared is copied for each place, and nothing in the
 * copy is shared.  NULL when out of memory. */
mm_node *mm_doc_copy(mm_doc *doc, const mm_node *node);
void mm_doc_set_root(mm_doc *doc, mm_node *root);
/* map[key] = value (key of klen bytes): replaces the value of an existing
 * key, or appends a new plain key.  0, or -1 when out of memory. */
int mm_node_put(mm_doc *doc, mm_node *map, const char *key, size_t klen, mm_node *value);
/* seq[i] = value; 0, or -1 when i is out of range. */
int mm_node_set_item(mm_node *seq, int i, mm_node *value);

/* ---- emitting (doc_emit.c) ---------------------------------------------- */

typedef enum mm_emit_style {
    MM_EMIT_YAML, /* one-line flow YAML: 8, zero1, 'a b', [1, 2], {a: 1} */
    MM_EMIT_JSON, /* one-line JSON: 8, "zero1", "a b", [1, 2], {"a": 1} */
} mm_emit_style;

/* The node as text (malloc'ed, no newline at the end), or NULL when out of
 * memory.  A null node is `null`. */
char *mm_node_emit(const mm_node *node, mm_emit_style style);

/* ---- typed conversion --------------------------------------------------- */

/* Typed conversion of one node (a list item, a document root), with the
 * same checks and messages as the getters below; `path` names it in errors
 * and the node's own line is used. */
int mm_node_as_int(const mm_doc *doc, const mm_node *node, const char *path,
                   int64_t min, int64_t max, int64_t *out, mm_err *err);
int mm_node_as_double(const mm_doc *doc, const mm_node *node, const char *path,
                      double min, double max, double *out, mm_err *err);
int mm_node_as_str(const mm_doc *doc, const mm_node *node, const char *path,
                   char *out, size_t len, mm_err *err);
/* One of `choices` (NULL-terminated); *out = its index. */
int mm_node_as_enum(const mm_doc *doc, const mm_node *node, const char *path,
                    const char *const *choices, int *out, mm_err *err);

/* Typed scalar getters.  `key` is the child key; `path` is the dotted key
 * for messages.  Absent child -> returns 0 and leaves *out unchanged (so the
 * caller's default stands) and sets *found (if non-NULL) to false.  Wrong
 * type or out of range -> MM_EINPUT naming file, line and path. */
int mm_node_int(const mm_doc *doc, const mm_node *map, const char *key,
                const char *path, int64_t min, int64_t max, int64_t *out,
                bool *found, mm_err *err);
int mm_node_double(const mm_doc *doc, const mm_node *map, const char *key,
                   const char *path, double min, double max, double *out,
                   bool *found, mm_err *err);
int mm_node_bool(const mm_doc *doc, const mm_node *map, const char *key,
                 const char *path, bool *out, bool *found, mm_err *err);
/* Copies a scalar string (max len-1 bytes). */
int mm_node_str(const mm_doc *doc, const mm_node *map, const char *key,
                const char *path, char *out, size_t len, bool *found, mm_err *err);
/* A string that must be one of `choices` (NULL-terminated); *out = index. */
int mm_node_enum(const mm_doc *doc, const mm_node *map, const char *key,
                 const char *path, const char *const *choices, int *out,
                 bool *found, mm_err *err);

#endif
