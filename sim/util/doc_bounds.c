/* doc_bounds.c - the bounds of one YAML or JSON document (doc.h:
 * MM_DOC_MAX_NODES, MM_DOC_MAX_DEPTH), checked before aliases are resolved.
 *
 * A document is parsed with its aliases unresolved and walked once, counting
 * every node as if each alias were replaced by what it names; only a document
 * within both bounds is then resolved.  The walk stops as soon as a bound is
 * passed, so it costs at most MM_DOC_MAX_NODES steps whatever the input: the
 * "billion laughs" (nine levels of nine aliases, 400 bytes, 9^9 nodes once
 * expanded) is refused in microseconds instead of filling the memory, and so
 * is an alias that names a node containing itself.  The bounds hold for the
 * whole document, before any schema is applied, so an alias under a known
 * key counts as much as one under an unknown key.
 * Not for: resolving the aliases (libfyaml's fy_document_resolve, in doc.c). */
#include "util/doc.h"

#include <libfyaml.h>
#include <stdbool.h>

typedef struct doc_walk {
    long left;                   /* nodes still allowed */
    bool deep;                   /* stopped by the depth bound */
    struct fy_node *outer_alias; /* the outermost alias being expanded */
    int alias_depth;
} doc_walk;

static bool walk_node(doc_walk *w, struct fy_node *n, int depth)
{
    if (!n)
        return true;
    if (--w->left < 0)
        return false;
    if (depth > MM_DOC_MAX_DEPTH) {
        w->deep = true;
        return false;
    }
    if (fy_node_is_alias(n)) {
        struct fy_node *t = fy_node_resolve_alias(n);
        if (!t) /* unknown anchor or a cycle: fy_document_resolve says which */
            return true;
        if (w->alias_depth++ == 0)
            w->outer_alias = n;
        bool ok = walk_node(w, t, depth + 1);
        w->alias_depth--;
        return ok;
    }
    void *it = NULL;
    if (fy_node_is_sequence(n)) {
        struct fy_node *item;
        while ((item = fy_node_sequence_iterate(n, &it)))
            if (!walk_node(w, item, depth + 1))
                return false;
    } else if (fy_node_is_mapping(n)) {
        struct fy_node_pair *p;
        while ((p = fy_node_mapping_iterate(n, &it)))
            if (!walk_node(w, fy_node_pair_key(p), depth + 1) ||
                !walk_node(w, fy_node_pair_value(p), depth + 1))
                return false;
    }
    return true;
}

int mm_doc_check_bounds(struct fy_document *fyd, const char *name, mm_err *err)
{
    doc_walk w = {.left = MM_DOC_MAX_NODES};
    if (walk_node(&w, fy_document_root(fyd), 0))
        return 0;
    int line = w.outer_alias ? mm_node_line(w.outer_alias) : 0;
    if (w.deep)
        return mm_err_set(err, MM_EINPUT, name, line, "",
                          "nested deeper than %d levels%s (see docs/reliability.md)",
                          MM_DOC_MAX_DEPTH, w.outer_alias ? " once aliases are expanded" : "");
    return mm_err_set(err, MM_EINPUT, name, line, "",
                      "more than %d nodes%s; refused (see docs/reliability.md)", MM_DOC_MAX_NODES,
                      w.outer_alias ? " once aliases are expanded (an alias bomb?)" : "");
}

