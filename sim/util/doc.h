/* doc.h - reading YAML and JSON input files (scenarios, topologies, model
 * configs) through libfyaml, with errors that name the file, line and key.
 *
 * A mm_doc owns one parsed document.  Nodes are libfyaml's fy_node; the
 * getters below look up a child by key, check its type and range, and on
 * failure fill an mm_err with the file, the node's 1-based line and the
 * dotted key path the caller passes.  JSON is read by the same parser
 * (JSON is a subset of YAML 1.2 flow syntax), so HF config.json files use it.
 * Not for: writing files; emitting is done with fy_emit_* where needed. */
#ifndef MM_DOC_H
#define MM_DOC_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

struct fy_document;
struct fy_node;

/* Bounds on one document, aliases expanded (docs/reliability.md): larger or
 * deeper documents are refused (MM_EINPUT) before they are built. */
#define MM_DOC_MAX_NODES 1000000
#define MM_DOC_MAX_DEPTH 256

typedef struct mm_doc {
    struct fy_document *fyd;
    char path[256]; /* file name used in error messages */
} mm_doc;

/* Parses a file.  Missing/unreadable file or syntax error -> MM_EINPUT with
 * the file and (for syntax errors) the line of the error.  The file must be
 * a regular file of at most MM_FILE_MAX_CONFIG bytes without NUL bytes
 * (util/file.h), and the document within the bounds above. */
int mm_doc_load_file(mm_doc *doc, const char *path, mm_err *err);
/* Parses text held in memory; `name` is used as the file name in errors. */
int mm_doc_load_string(mm_doc *doc, const char *name, const char *text, mm_err *err);
void mm_doc_free(mm_doc *doc);

/* The bounds above over a parsed, not yet resolved document: nodes counted
 * as if every alias were replaced by what it names.  0, or MM_EINPUT naming
 * `name` and the line of the outermost alias being expanded.  (The loaders
 * call it; exposed for tests.) */
int mm_doc_check_bounds(struct fy_document *fyd, const char *name, mm_err *err);

struct fy_node *mm_doc_root(const mm_doc *doc);

/* 1-based line where node starts, 0 for NULL. */
int mm_node_line(const struct fy_node *node);

/* Child of a mapping by key, or NULL (also NULL when map is not a mapping). */
struct fy_node *mm_node_get(struct fy_node *map, const char *key);

/* Checks that every key of mapping `map` is in the NULL-terminated `allowed`
 * list; the first unknown key gives MM_EINPUT "unknown key 'x' (did you mean
 * 'y'?)" with `prefix`.x as the dotted key.  A non-mapping gives a type error. */
int mm_node_check_keys(const mm_doc *doc, struct fy_node *map, const char *prefix,
                       const char *const *allowed, mm_err *err);

/* 1-based line of the key `key` in mapping `map` (0 when absent).  Use it
 * to say where a key was written; mm_node_line of the value may lie on a
 * later line (a block list or mapping starts below its key). */
int mm_node_key_line(struct fy_node *map, const char *key);

/* True for an absent value: a NULL node, an empty plain scalar (`key:` with
 * nothing after it), or a plain `~`, `null`, `Null`, `NULL`. */
bool mm_node_is_null(struct fy_node *node);

/* Typed conversion of one node (a list item, a document root), with the
 * same checks and messages as the getters below; `path` names it in errors
 * and the node's own line is used. */
int mm_node_as_int(const mm_doc *doc, struct fy_node *node, const char *path,
                   int64_t min, int64_t max, int64_t *out, mm_err *err);
int mm_node_as_double(const mm_doc *doc, struct fy_node *node, const char *path,
                      double min, double max, double *out, mm_err *err);
int mm_node_as_str(const mm_doc *doc, struct fy_node *node, const char *path,
                   char *out, size_t len, mm_err *err);

/* Typed scalar getters.  `key` is the child key; `path` is the dotted key
 * for messages.  Absent child -> returns 0 and leaves *out unchanged (so the
 * caller's default stands) and sets *found (if non-NULL) to false.  Wrong
 * type or out of range -> MM_EINPUT naming file, line and path. */
int mm_node_int(const mm_doc *doc, struct fy_node *map, const char *key,
                const char *path, int64_t min, int64_t max, int64_t *out,
                bool *found, mm_err *err);
int mm_node_double(const mm_doc *doc, struct fy_node *map, const char *key,
                   const char *path, double min, double max, double *out,
                   bool *found, mm_err *err);
int mm_node_bool(const mm_doc *doc, struct fy_node *map, const char *key,
                 const char *path, bool *out, bool *found, mm_err *err);
/* Copies a scalar string (max len-1 bytes). */
int mm_node_str(const mm_doc *doc, struct fy_node *map, const char *key,
                const char *path, char *out, size_t len, bool *found, mm_err *err);
/* A string that must be one of `choices` (NULL-terminated); *out = index. */
int mm_node_enum(const mm_doc *doc, struct fy_node *map, const char *key,
                 const char *path, const char *const *choices, int *out,
                 bool *found, mm_err *err);

#endif
