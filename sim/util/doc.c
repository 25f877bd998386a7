/* doc.c - reading YAML and JSON input files into a document tree of our
 * own (doc.h), built from libyaml's events, and the typed getters that turn
 * nodes into numbers, flags and names with errors that say file, line and
 * key.
 *
 * libyaml (yaml_parser_parse) hands out one event at a time and prints
 * nothing; its errors are a problem string and a mark, from which the
 * message is written here ("FILE:LINE: PROBLEM at column C (CONTEXT)").
 * The tree is built with an explicit stack (no recursion on the input's
 * depth), and the bounds of doc.h are checked event by event: each node
 * knows how many nodes it holds and how deep it goes with its aliases
 * expanded, so an alias costs one step whatever it names and the "billion
 * laughs" is refused after a few hundred events.  An alias becomes a second
 * reference to the node its anchor names (never a copy); an alias of a node
 * not yet finished (inside itself) is refused as a cycle, an unknown one by
 * name.  A key appears once per mapping, checked when the mapping ends;
 * then a merge key (`<<: *base`) puts the named mapping's pairs in.
 *
 * Files are read into memory by us (so that a missing file gives errno's
 * words) and checked for NUL bytes and UTF-8 before parsing.  A file holds
 * one document: a comments-only file is an empty document (root NULL), a
 * second `---` document is an error.
 * Not for: knowing any schema (scenario.c and friends do), or writing text
 * (doc_emit.c). */
#include "util/doc.h"
#include "util/doc_internal.h"
#include "util/file.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef enum node_kind { K_SCALAR, K_SEQUENCE, K_MAPPING } node_kind;

struct mm_node {
    node_kind kind;
    bool quoted;     /* a scalar not written plain */
    mm_scalar_style style;
    bool shared;     /* named by an alias */
    bool done;       /* its end event was seen (aliases of it are allowed) */
    int line, col;   /* 1-based */
    char *tag;       /* NULL when none */
    char *text;      /* scalar text, NUL-terminated */
    size_t len;      /* of text */
    int n, cap;      /* items, or 2 x pairs: key0, value0, key1, ... */
    mm_node **kids;
    long weight;     /* nodes it holds, itself included, aliases expanded */
    int height;      /* levels below it, aliases expanded */
    mm_node *next;   /* the document's list of all its nodes */
};

/* strlcpy: copies what fits and always terminates (dst_len > 0). */
static void copy_trunc(char *dst, size_t dst_len, const char *src)
{
    size_t n = strlen(src);
    if (n >= dst_len)
        n = dst_len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- nodes -------------------------------------------------------------- */

static mm_node *node_new(mm_doc *doc, node_kind kind, int line, int col)
{
    mm_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->kind = kind;
    n->line = line;
    n->col = col;
    n->weight = 1;
    n->done = true;
    n->next = doc->nodes;
    doc->nodes = n;
    return n;
}

static int set_text(mm_node *n, const char *text, size_t len)
{
    char *t = malloc(len + 1);
    if (!t)
        return -1;
    if (len)
        memcpy(t, text, len);
    t[len] = '\0';
    free(n->text);
    n->text = t;
    n->len = len;
    return 0;
}

static int set_tag(mm_node *n, const char *tag)
{
    if (!tag)
        return 0;
    n->tag = strdup(tag);
    return n->tag ? 0 : -1;
}

static int add_kid(mm_node *parent, mm_node *kid)
{
    if (parent->n == parent->cap) {
        if (parent->cap > INT_MAX / 4)
            return -1;
        int cap = parent->cap ? 2 * parent->cap : 4;
        mm_node **k = realloc(parent->kids, (size_t)cap * sizeof *k);
        if (!k)
            return -1;
        parent->kids = k;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return 0;
}

void mm_doc_free(mm_doc *doc)
{
    if (!doc)
        return;
    for (mm_node *n = doc->nodes, *next; n; n = next) {
        next = n->next;
        free(n->tag);
        free(n->text);
        free(n->kids);
        free(n);
    }
    doc->nodes = NULL;
    doc->root = NULL;
}

mm_node *mm_doc_root(const mm_doc *doc) { return doc ? doc->root : NULL; }

bool mm_node_is_scalar(const mm_node *n) { return n && n->kind == K_SCALAR; }
bool mm_node_is_sequence(const mm_node *n) { return n && n->kind == K_SEQUENCE; }
bool mm_node_is_mapping(const mm_node *n) { return n && n->kind == K_MAPPING; }
bool mm_node_is_quoted(const mm_node *n) { return n && n->kind == K_SCALAR && n->quoted; }
mm_scalar_style mm_node_style(const mm_node *n)
{
    return n && n->kind == K_SCALAR ? n->style : MM_SCALAR_PLAIN;
}
bool mm_node_is_shared(const mm_node *n) { return n && n->shared; }
const char *mm_node_tag(const mm_node *n) { return n ? n->tag : NULL; }
int mm_node_line(const mm_node *n) { return n ? n->line : 0; }
int mm_node_col(const mm_node *n) { return n ? n->col : 0; }

const char *mm_node_scalar(const mm_node *n, size_t *len)
{
    if (!mm_node_is_scalar(n))
        return NULL;
    if (len)
        *len = n->len;
    return n->text;
}

int mm_node_count(const mm_node *n)
{
    if (!n || n->kind == K_SCALAR)
        return 0;
    return n->kind == K_MAPPING ? n->n / 2 : n->n;
}

mm_node *mm_node_item(const mm_node *seq, int i)
{
    return mm_node_is_sequence(seq) && i >= 0 && i < seq->n ? seq->kids[i] : NULL;
}

mm_node *mm_node_pair_key(const mm_node *map, int i)
{
    return mm_node_is_mapping(map) && i >= 0 && i < map->n / 2 ? map->kids[2 * i] : NULL;
}

mm_node *mm_node_pair_value(const mm_node *map, int i)
{
    return mm_node_is_mapping(map) && i >= 0 && i < map->n / 2 ? map->kids[2 * i + 1] : NULL;
}

/* Index of the pair whose scalar key is key[0..klen), or -1. */
static int pair_index(const mm_node *map, const char *key, size_t klen)
{
    if (!mm_node_is_mapping(map))
        return -1;
    for (int i = 0; i < map->n / 2; i++) {
        const mm_node *k = map->kids[2 * i];
        if (k->kind == K_SCALAR && k->len == klen && memcmp(k->text, key, klen) == 0)
            return i;
    }
    return -1;
}

mm_node *mm_node_get(const mm_node *map, const char *key)
{
    return mm_node_pair_value(map, pair_index(map, key, strlen(key)));
}

int mm_node_key_line(const mm_node *map, const char *key)
{
    return mm_node_line(mm_node_pair_key(map, pair_index(map, key, strlen(key))));
}

/* ---- editing ------------------------------------------------------------ */

mm_node *mm_doc_new_mapping(mm_doc *doc) { return node_new(doc, K_MAPPING, 0, 0); }

mm_node *mm_doc_new_scalar(mm_doc *doc, const char *text, size_t len)
{
    mm_node *n = node_new(doc, K_SCALAR, 0, 0);
    return n && set_text(n, text, len) == 0 ? n : NULL;
}

/* Recursion is bounded: a document is at most MM_DOC_MAX_DEPTH deep with
 * its aliases expanded, and what --set builds adds a level per key part. */
mm_node *mm_doc_copy(mm_doc *doc, const mm_node *src)
{
    if (!src)
        return NULL;
    mm_node *n = node_new(doc, src->kind, src->line, src->col);
    if (!n || set_tag(n, src->tag) != 0)
        return NULL;
    n->quoted = src->quoted;
    n->style = src->style;
    n->weight = src->weight;
    n->height = src->height;
    if (src->kind == K_SCALAR)
        return set_text(n, src->text, src->len) == 0 ? n : NULL;
    for (int i = 0; i < src->n; i++) {
        mm_node *kid = mm_doc_copy(doc, src->kids[i]);
        if (!kid || add_kid(n, kid) != 0)
            return NULL;
    }
    return n;
}

void mm_doc_set_root(mm_doc *doc, mm_node *root) { doc->root = root; }

int mm_node_put(mm_doc *doc, mm_node *map, const char *key, size_t klen, mm_node *value)
{
    if (!mm_node_is_mapping(map) || !value)
        return -1;
    int i = pair_index(map, key, klen);
    if (i >= 0) {
        map->kids[2 * i + 1] = value;
        return 0;
    }
    mm_node *k = mm_doc_new_scalar(doc, key, klen);
    if (!k || add_kid(map, k) != 0)
        return -1;
    if (add_kid(map, value) != 0) {
        map->n--; /* keep pairs whole */
        return -1;
    }
    return 0;
}

int mm_node_set_item(mm_node *seq, int i, mm_node *value)
{
    if (!mm_node_is_sequence(seq) || i < 0 || i >= seq->n || !value)
        return -1;
    seq->kids[i] = value;
    return 0;
}

/* ---- anchors ------------------------------------------------------------ */

/* Anchor name -> the latest node of that name: open addressing, FNV-1a. */
typedef struct anchor {
    char *name;
    mm_node *node;
} anchor;

typedef struct anchors {
    anchor *slot;
    size_t cap, n; /* cap a power of two */
} anchors;

static size_t hash_name(const char *s)
{
    size_t h = 1469598103934665603ull & SIZE_MAX;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * (size_t)1099511628211ull;
    return h;
}

static anchor *anchor_find(const anchors *a, const char *name)
{
    if (!a->cap)
        return NULL;
    for (size_t i = hash_name(name) & (a->cap - 1);; i = (i + 1) & (a->cap - 1)) {
        if (!a->slot[i].name || strcmp(a->slot[i].name, name) == 0)
            return &a->slot[i];
    }
}

static int anchor_put(anchors *a, const char *name, mm_node *node)
{
    if (2 * (a->n + 1) > a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        anchors b = {.slot = calloc(cap, sizeof *b.slot), .cap = cap, .n = a->n};
        if (!b.slot)
            return -1;
        for (size_t i = 0; i < a->cap; i++)
            if (a->slot[i].name)
                *anchor_find(&b, a->slot[i].name) = a->slot[i];
        free(a->slot);
        *a = b;
    }
    anchor *s = anchor_find(a, name);
    if (!s->name) {
        s->name = strdup(name);
        if (!s->name)
            return -1;
        a->n++;
    }
    s->node = node;
    return 0;
}

static void anchors_free(anchors *a)
{
    for (size_t i = 0; i < a->cap; i++)
        free(a->slot[i].name);
    free(a->slot);
}

/* ---- building the tree from libyaml's events ---------------------------- */

typedef struct builder {
    mm_doc *doc;
    const char *name;
    mm_err *err;
    mm_node **stack; /* open collections, outermost first */
    int depth, cap;
    long total;      /* nodes so far, aliases expanded */
    anchors anchors;
} builder;

static int oom(builder *b)
{
    return mm_err_set(b->err, MM_EINTERNAL, b->name, 0, "", "out of memory");
}

static int too_deep(builder *b, int line, bool alias)
{
    return mm_err_set(b->err, MM_EINPUT, b->name, line, "",
                      "nested deeper than %d levels%s (see docs/reliability.md)", MM_DOC_MAX_DEPTH,
                      alias ? " once aliases are expanded" : "");
}

static int too_many(builder *b, int line, bool alias)
{
    return mm_err_set(b->err, MM_EINPUT, b->name, line, "",
                      "more than %d nodes%s; refused (see docs/reliability.md)", MM_DOC_MAX_NODES,
                      alias ? " once aliases are expanded (an alias bomb?)" : "");
}

/* Hangs a finished node (or an alias's target) under the open collection,
 * or makes it the root. */
static int attach(builder *b, mm_node *n, long weight, int height)
{
    if (b->depth == 0) {
        b->doc->root = n;
        return 0;
    }
    mm_node *parent = b->stack[b->depth - 1];
    if (add_kid(parent, n) != 0)
        return oom(b);
    parent->weight += weight;
    if (height + 1 > parent->height)
        parent->height = height + 1;
    return 0;
}

static int check_new_node(builder *b, int line)
{
    if (b->depth > MM_DOC_MAX_DEPTH)
        return too_deep(b, line, false);
    if (++b->total > MM_DOC_MAX_NODES)
        return too_many(b, line, false);
    return 0;
}

static int name_anchor(builder *b, const yaml_char_t *name, mm_node *n)
{
    if (name && anchor_put(&b->anchors, (const char *)name, n) != 0)
        return oom(b);
    return 0;
}

static int on_scalar(builder *b, const yaml_event_t *e)
{
    int line = (int)e->start_mark.line + 1, col = (int)e->start_mark.column + 1;
    int rc = check_new_node(b, line);
    if (rc)
        return rc;
    mm_node *n = node_new(b->doc, K_SCALAR, line, col);
    if (!n || set_text(n, (const char *)e->data.scalar.value, e->data.scalar.length) != 0 ||
        set_tag(n, (const char *)e->data.scalar.tag) != 0)
        return oom(b);
    switch (e->data.scalar.style) {
    case YAML_SINGLE_QUOTED_SCALAR_STYLE: n->style = MM_SCALAR_SINGLE; break;
    case YAML_DOUBLE_QUOTED_SCALAR_STYLE: n->style = MM_SCALAR_DOUBLE; break;
    case YAML_LITERAL_SCALAR_STYLE:
    case YAML_FOLDED_SCALAR_STYLE: n->style = MM_SCALAR_BLOCK; break;
    default: n->style = MM_SCALAR_PLAIN; break;
    }
    n->quoted = n->style != MM_SCALAR_PLAIN;
    rc = name_anchor(b, e->data.scalar.anchor, n);
    return rc ? rc : attach(b, n, 1, 0);
}

static int on_start(builder *b, const yaml_event_t *e, node_kind kind)
{
    int line = (int)e->start_mark.line + 1, col = (int)e->start_mark.column + 1;
    int rc = check_new_node(b, line);
    if (rc)
        return rc;
    mm_node *n = node_new(b->doc, kind, line, col);
    const yaml_char_t *tag = kind == K_MAPPING ? e->data.mapping_start.tag
                                               : e->data.sequence_start.tag;
    const yaml_char_t *name = kind == K_MAPPING ? e->data.mapping_start.anchor
                                                : e->data.sequence_start.anchor;
    if (!n || set_tag(n, (const char *)tag) != 0)
        return oom(b);
    n->done = false;
    rc = name_anchor(b, name, n);
    if (rc)
        return rc;
    if (b->depth == b->cap) {
        int cap = b->cap ? 2 * b->cap : 32;
        mm_node **s = realloc(b->stack, (size_t)cap * sizeof *s);
        if (!s)
            return oom(b);
        b->stack = s;
        b->cap = cap;
    }
    b->stack[b->depth++] = n;
    return 0;
}

typedef struct key_ref {
    const mm_node *key;
    int index;
} key_ref;

static int key_cmp(const void *pa, const void *pb)
{
    const key_ref *a = pa, *b = pb;
    if (a->key->len != b->key->len)
        return a->key->len < b->key->len ? -1 : 1;
    int c = memcmp(a->key->text, b->key->text, a->key->len);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* The first key (in the order written) that repeats an earlier scalar key
 * of the same mapping, or NULL.  Sorting keeps it O(n log n). */
static const mm_node *duplicate_key(const mm_node *map, int *rc)
{
    int pairs = map->n / 2;
    *rc = 0;
    if (pairs < 2)
        return NULL;
    key_ref *k = malloc((size_t)pairs * sizeof *k);
    if (!k) {
        *rc = -1;
        return NULL;
    }
    int m = 0;
    for (int i = 0; i < pairs; i++)
        if (map->kids[2 * i]->kind == K_SCALAR)
            k[m++] = (key_ref){map->kids[2 * i], i};
    qsort(k, (size_t)m, sizeof *k, key_cmp);
    int best = -1;
    for (int i = 1; i < m; i++) {
        if (k[i].key->len == k[i - 1].key->len &&
            memcmp(k[i].key->text, k[i - 1].key->text, k[i].key->len) == 0 &&
            (best < 0 || k[i].index < best))
            best = k[i].index;
    }
    free(k);
    return best >= 0 ? map->kids[2 * best] : NULL;
}

static bool is_merge_key(const mm_node *k)
{
    return k->kind == K_SCALAR && !k->quoted && k->len == 2 && !strcmp(k->text, "<<");
}

/* Adds src's pairs whose keys `seen` lacks (all when seen is NULL) to out
 * (2 x pairs); `merged`: they come from a named mapping, and are now in two
 * places. */
static int merge_from(const mm_node *src, anchors *seen, bool merged, mm_node ***out, int *n,
                      int *cap)
{
    for (int i = 0; i + 1 < src->n; i += 2) {
        mm_node *k = src->kids[i];
        if (seen && k->kind == K_SCALAR && strlen(k->text) == k->len) {
            anchor *s = anchor_find(seen, k->text);
            if (s && s->name)
                continue;
            if (anchor_put(seen, k->text, k) != 0)
                return -1;
        }
        if (*n + 2 > *cap) {
            int c = *cap ? 2 * *cap : 8;
            mm_node **p = realloc(*out, (size_t)c * sizeof *p);
            if (!p)
                return -1;
            *out = p;
            *cap = c;
        }
        if (merged)
            k->shared = src->kids[i + 1]->shared = true;
        (*out)[(*n)++] = k;
        (*out)[(*n)++] = src->kids[i + 1];
    }
    return 0;
}

/* YAML's merge key: `<<: *base` (or a list of aliases) puts the pairs of
 * the named mappings into this one, where `<<` stands, except the keys it
 * has itself; of a list, the earlier mapping wins.  The merged nodes were
 * counted with the aliases that name them. */
static int merge_keys(builder *b, mm_node *map)
{
    int at = -1;
    for (int i = 0; i + 1 < map->n && at < 0; i += 2)
        if (is_merge_key(map->kids[i]))
            at = i;
    if (at < 0)
        return 0;
    mm_node *v = map->kids[at + 1];
    for (int i = 0; i < (v->kind == K_SEQUENCE ? v->n : 1); i++) {
        const mm_node *src = v->kind == K_SEQUENCE ? v->kids[i] : v;
        if (src->kind != K_MAPPING)
            return mm_err_set(b->err, MM_EINPUT, b->name, map->kids[at]->line, "<<",
                              "a merge key takes a mapping or a list of mappings (e.g. <<: *base)");
    }
    anchors seen = {0};
    mm_node **out = NULL;
    int n = 0, cap = 0, rc = 0;
    for (int i = 0; i + 1 < map->n && rc == 0; i += 2) { /* its own keys first */
        const mm_node *k = map->kids[i];
        if (i != at && k->kind == K_SCALAR && strlen(k->text) == k->len)
            rc = anchor_put(&seen, k->text, map->kids[i]);
    }
    for (int i = 0; i + 1 < map->n && rc == 0; i += 2) {
        if (i != at) { /* its own pair, as it is */
            mm_node pair = {.kind = K_MAPPING, .n = 2, .kids = map->kids + i};
            rc = merge_from(&pair, NULL, false, &out, &n, &cap);
            continue;
        }
        for (int s = 0; s < (v->kind == K_SEQUENCE ? v->n : 1) && rc == 0; s++)
            rc = merge_from(v->kind == K_SEQUENCE ? v->kids[s] : v, &seen, true, &out, &n, &cap);
    }
    anchors_free(&seen);
    if (rc) {
        free(out);
        return oom(b);
    }
    free(map->kids);
    map->kids = out;
    map->n = n;
    map->cap = cap;
    return 0;
}

static int on_end(builder *b)
{
    mm_node *n = b->stack[--b->depth];
    n->done = true;
    if (n->n > 0) { /* where its first item or key starts */
        n->line = n->kids[0]->line;
        n->col = n->kids[0]->col;
    }
    if (n->kind == K_MAPPING) {
        int rc = 0;
        const mm_node *dup = duplicate_key(n, &rc);
        if (rc)
            return oom(b);
        if (dup) {
            char key[64];
            copy_trunc(key, sizeof key, dup->text);
            return mm_err_set(b->err, MM_EINPUT, b->name, dup->line, key,
                              "duplicate key: it appears a second time in the same mapping "
                              "(each key may appear once)");
        }
        rc = merge_keys(b, n);
        if (rc)
            return rc;
    }
    return attach(b, n, n->weight, n->height);
}

static int on_alias(builder *b, const yaml_event_t *e)
{
    int line = (int)e->start_mark.line + 1;
    const char *name = (const char *)e->data.alias.anchor;
    anchor *a = anchor_find(&b->anchors, name);
    mm_node *t = a && a->name ? a->node : NULL;
    if (!t)
        return mm_err_set(b->err, MM_EINPUT, b->name, line, "",
                          "unknown alias '*%s' (no anchor '&%s' before it)", name, name);
    if (!t->done)
        return mm_err_set(b->err, MM_EINPUT, b->name, line, "",
                          "alias '*%s' inside the node it names (a cycle)", name);
    if (b->depth + 1 + t->height > MM_DOC_MAX_DEPTH)
        return too_deep(b, line, true);
    b->total += 1 + t->weight;
    if (b->total > MM_DOC_MAX_NODES)
        return too_many(b, line, true);
    t->shared = true;
    return attach(b, t, 1 + t->weight, 1 + t->height);
}

/* libyaml's error as "PROBLEM at column C (CONTEXT on line L)". */
static int parse_error(const yaml_parser_t *p, const char *name, const char *buf, size_t len,
                       mm_err *err)
{
    if (p->error == YAML_MEMORY_ERROR)
        return mm_err_set(err, MM_EINTERNAL, name, 0, "", "out of memory parsing");
    const char *problem = p->problem ? p->problem : "YAML syntax error";
    int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
    if (p->error == YAML_READER_ERROR) { /* an offset, not a mark */
        line = 1;
        for (size_t i = 0; i < p->problem_offset && i < len; i++)
            line += buf[i] == '\n';
        if (p->problem_value >= 0)
            return mm_err_set(err, MM_EINPUT, name, line, "", "%s (byte 0x%02x)", problem,
                              (unsigned)p->problem_value);
        return mm_err_set(err, MM_EINPUT, name, line, "", "%s", problem);
    }
    if (p->context) {
        int cline = (int)p->context_mark.line + 1;
        if (cline != line)
            return mm_err_set(err, MM_EINPUT, name, line, "", "%s at column %d (%s on line %d)",
                              problem, col, p->context, cline);
        return mm_err_set(err, MM_EINPUT, name, line, "", "%s at column %d (%s)", problem, col,
                          p->context);
    }
    return mm_err_set(err, MM_EINPUT, name, line, "", "%s at column %d", problem, col);
}

/* Runs the event loop over buf into doc; 0 or -code with err filled. */
static int build(mm_doc *doc, const char *name, const char *buf, size_t len, mm_err *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return mm_err_set(err, MM_EINTERNAL, name, 0, "", "cannot create a YAML parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    builder b = {.doc = doc, .name = name, .err = err};
    int rc = 0, docs = 0;
    bool end = false, second = false;
    while (!end && rc == 0) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            rc = parse_error(&p, name, buf, len, err);
            break;
        }
        if (second) { /* the event after a second DOCUMENT-START: its root */
            rc = mm_err_set(err, MM_EINPUT, name, (int)e.start_mark.line + 1, "",
                            "a second YAML document ('---'); one file holds one document");
            yaml_event_delete(&e);
            break;
        }
        switch (e.type) {
        case YAML_STREAM_END_EVENT:
            end = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            second = ++docs > 1;
            break;
        case YAML_SCALAR_EVENT:
            rc = on_scalar(&b, &e);
            break;
        case YAML_SEQUENCE_START_EVENT:
            rc = on_start(&b, &e, K_SEQUENCE);
            break;
        case YAML_MAPPING_START_EVENT:
            rc = on_start(&b, &e, K_MAPPING);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            rc = b.depth > 0 ? on_end(&b) : 0;
            break;
        case YAML_ALIAS_EVENT:
            rc = on_alias(&b, &e);
            break;
        default:
            break;
        }
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&p);
    free(b.stack);
    anchors_free(&b.anchors);
    return rc;
}

/* Owns buf (malloc'ed, len bytes, NUL at buf[len]). */
static int parse_buffer(mm_doc *doc, const char *name, char *buf, size_t len, mm_err *err)
{
    int rc = mm_text_check_utf8(name, buf, len, err);
    if (rc == 0)
        rc = build(doc, name, buf, len, err);
    free(buf);
    if (rc < 0)
        mm_doc_free(doc);
    return rc < 0 ? rc : 0;
}

static void doc_init(mm_doc *doc, const char *name)
{
    doc->root = NULL;
    doc->nodes = NULL;
    copy_trunc(doc->path, sizeof doc->path, name);
}

int mm_doc_load_file(mm_doc *doc, const char *path, mm_err *err)
{
    doc_init(doc, path);
    char *buf = NULL;
    size_t len = 0;
    int rc = mm_file_read(path, MM_FILE_MAX_CONFIG, &buf, &len, err);
    if (rc < 0)
        return rc;
    return parse_buffer(doc, path, buf, len, err);
}

int mm_doc_load_string(mm_doc *doc, const char *name, const char *text, mm_err *err)
{
    doc_init(doc, name);
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    if (!buf)
        return mm_err_set(err, MM_EINTERNAL, name, 0, "", "out of memory");
    memcpy(buf, text, len + 1);
    return parse_buffer(doc, name, buf, len, err);
}

/* ---- scalar text -------------------------------------------------------- */

/* Copies a scalar's text into buf (truncating); returns false for
 * non-scalars. */
static bool scalar_text(const mm_node *node, char *buf, size_t len, size_t *full)
{
    if (!mm_node_is_scalar(node))
        return false;
    if (full)
        *full = node->len;
    size_t c = node->len < len - 1 ? node->len : len - 1;
    if (c)
        memcpy(buf, node->text, c);
    buf[c] = '\0';
    return true;
}

static bool is_plain(const mm_node *node) { return mm_node_is_scalar(node) && !node->quoted; }

bool mm_node_is_null(const mm_node *node)
{
    if (!node)
        return true;
    if (!is_plain(node))
        return false;
    const char *t = node->text;
    return node->len == 0 || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") ||
           !strcmp(t, "NULL");
}

/* "a mapping", "a list", "null", or the scalar quoted: for "got ..." parts of
 * messages. */
static const char *describe(const mm_node *node, char *buf, size_t len)
{
    if (!node || mm_node_is_null(node))
        return "nothing (null)";
    if (mm_node_is_mapping(node))
        return "a mapping";
    if (mm_node_is_sequence(node))
        return "a list";
    char t[64];
    size_t full = 0;
    scalar_text(node, t, sizeof t, &full);
    snprintf(buf, len, "'%s%s'", t, full >= sizeof t ? "..." : "");
    return buf;
}

static bool int_syntax(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* doc_internal.h */
bool mm_doc_exponent_end(const char *s)
{
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

/* YAML 1.2 core-schema float, finite forms only: [-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)? */
static bool float_syntax(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    size_t digits = 0;
    while (*s >= '0' && *s <= '9') {
        s++;
        digits++;
    }
    if (*s == '.') {
        s++;
        while (*s >= '0' && *s <= '9') {
            s++;
            digits++;
        }
    }
    if (digits == 0)
        return false;
    return mm_doc_exponent_end(s);
}

/* ---- typed conversion of one node (line given by the caller) ------------ */

static int type_error(const mm_doc *doc, const mm_node *node, int line, const char *path,
                      const char *want, mm_err *err)
{
    char got[96];
    return mm_err_set(err, MM_EINPUT, doc->path, line, path, "expected %s, got %s", want,
                      describe(node, got, sizeof got));
}

static int conv_int(const mm_doc *doc, const mm_node *node, int line, const char *path,
                    int64_t min, int64_t max, int64_t *out, mm_err *err)
{
    char t[64];
    size_t full = 0;
    if (!node || mm_node_is_null(node) || !scalar_text(node, t, sizeof t, &full) ||
        !is_plain(node) || full >= sizeof t || !int_syntax(t))
        return type_error(doc, node, line, path, "an integer", err);
    errno = 0;
    long long v = strtoll(t, NULL, 10);
    if (errno == ERANGE)
        return mm_err_set(err, MM_EINPUT, doc->path, line, path,
                          "does not fit in 64 bits, got %s", t);
    if (v < min || v > max) {
        bool no_max = max >= INT_MAX, no_min = min <= INT_MIN;
        char range[96];
        if (no_max)
            snprintf(range, sizeof range, "must be >= %" PRId64, min);
        else if (no_min)
            snprintf(range, sizeof range, "must be <= %" PRId64, max);
        else
            snprintf(range, sizeof range, "must be between %" PRId64 " and %" PRId64, min, max);
        return mm_err_set(err, MM_EINPUT, doc->path, line, path, "%s, got %s", range, t);
    }
    *out = (int64_t)v;
    return 0;
}

static int conv_double(const mm_doc *doc, const mm_node *node, int line, const char *path,
                       double min, double max, double *out, mm_err *err)
{
    char t[64];
    size_t full = 0;
    if (!node || mm_node_is_null(node) || !scalar_text(node, t, sizeof t, &full) ||
        !is_plain(node) || full >= sizeof t || !float_syntax(t))
        return type_error(doc, node, line, path, "a number", err);
    errno = 0;
    double v = strtod(t, NULL);
    if (errno == ERANGE && fabs(v) > 1.0) {
        return mm_err_set(err, MM_EINPUT, doc->path, line, path, "number too large, got %s", t);
    }
    if (!(v >= min && v <= max)) {
        bool no_max = max >= DBL_MAX, no_min = min <= -DBL_MAX;
        char range[128];
        if (no_max && no_min)
            snprintf(range, sizeof range, "must be finite");
        else if (no_max)
            snprintf(range, sizeof range, "must be >= %g", min);
        else if (no_min)
            snprintf(range, sizeof range, "must be <= %g", max);
        else
            snprintf(range, sizeof range, "must be between %g and %g", min, max);
        return mm_err_set(err, MM_EINPUT, doc->path, line, path, "%s, got %s", range, t);
    }
    *out = v;
    return 0;
}

static int conv_bool(const mm_doc *doc, const mm_node *node, int line, const char *path,
                     bool *out, mm_err *err)
{
    char t[8];
    size_t full = 0;
    if (node && !mm_node_is_null(node) && scalar_text(node, t, sizeof t, &full) &&
        is_plain(node) && full < sizeof t) {
        if (!strcmp(t, "true") || !strcmp(t, "True") || !strcmp(t, "TRUE")) {
            *out = true;
            return 0;
        }
        if (!strcmp(t, "false") || !strcmp(t, "False") || !strcmp(t, "FALSE")) {
            *out = false;
            return 0;
        }
    }
    return type_error(doc, node, line, path, "true or false", err);
}

static int conv_str(const mm_doc *doc, const mm_node *node, int line, const char *path,
                    char *out, size_t len, mm_err *err)
{
    size_t full = 0;
    if (!node || mm_node_is_null(node) || !mm_node_is_scalar(node))
        return type_error(doc, node, line, path, "a string", err);
    mm_node_scalar(node, &full);
    if (full >= len)
        return mm_err_set(err, MM_EINPUT, doc->path, line, path,
                          "too long (%zu characters, at most %zu)", full, len - 1);
    scalar_text(node, out, len, NULL);
    return 0;
}

/* Joins NULL-terminated names as "a, b, c" (truncated to fit). */
static void join_names(const char *const *names, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; names[i] && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", names[i]);
}

static int conv_enum(const mm_doc *doc, const mm_node *node, int line, const char *path,
                     const char *const *choices, int *out, mm_err *err)
{
    char v[64];
    char all[256];
    join_names(choices, all, sizeof all);
    if (!node || mm_node_is_null(node) || !mm_node_is_scalar(node)) {
        char want[300];
        snprintf(want, sizeof want, "one of %s", all);
        return type_error(doc, node, line, path, want, err);
    }
    size_t full = 0;
    scalar_text(node, v, sizeof v, &full);
    for (int i = 0; choices[i]; i++) {
        if (full < sizeof v && !strcmp(v, choices[i])) {
            *out = i;
            return 0;
        }
    }
    const char *near = full < sizeof v ? mm_nearest(v, choices) : NULL;
    if (near)
        return mm_err_set(err, MM_EINPUT, doc->path, line, path,
                          "unknown value '%s' (did you mean '%s'?); expected one of %s", v,
                          near, all);
    return mm_err_set(err, MM_EINPUT, doc->path, line, path,
                      "unknown value '%s'; expected one of %s", v, all);
}

/* ---- public conversions and getters ------------------------------------- */

int mm_node_as_int(const mm_doc *doc, const mm_node *node, const char *path,
                   int64_t min, int64_t max, int64_t *out, mm_err *err)
{
    return conv_int(doc, node, mm_node_line(node), path, min, max, out, err);
}

int mm_node_as_double(const mm_doc *doc, const mm_node *node, const char *path,
                      double min, double max, double *out, mm_err *err)
{
    return conv_double(doc, node, mm_node_line(node), path, min, max, out, err);
}

int mm_node_as_str(const mm_doc *doc, const mm_node *node, const char *path,
                   char *out, size_t len, mm_err *err)
{
    return conv_str(doc, node, mm_node_line(node), path, out, len, err);
}

int mm_node_as_enum(const mm_doc *doc, const mm_node *node, const char *path, const char *const *choices,
                    int *out, mm_err *err)
{
    return conv_enum(doc, node, mm_node_line(node), path, choices, out, err);
}

/* Finds map[key]; false when absent.  *line is the value's line, or the
 * key's when the value has none (an empty `key:`). */
static bool lookup(const mm_node *map, const char *key, const mm_node **val, int *line,
                   bool *found)
{
    int i = pair_index(map, key, strlen(key));
    if (found)
        *found = i >= 0;
    if (i < 0)
        return false;
    *val = mm_node_pair_value(map, i);
    *line = mm_node_line(*val);
    if (*line == 0 || mm_node_is_null(*val))
        *line = mm_node_line(mm_node_pair_key(map, i));
    return true;
}

int mm_node_int(const mm_doc *doc, const mm_node *map, const char *key,
                const char *path, int64_t min, int64_t max, int64_t *out,
                bool *found, mm_err *err)
{
    const mm_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_int(doc, v, line, path, min, max, out, err);
}

int mm_node_double(const mm_doc *doc, const mm_node *map, const char *key,
                   const char *path, double min, double max, double *out,
                   bool *found, mm_err *err)
{
    const mm_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_double(doc, v, line, path, min, max, out, err);
}

int mm_node_bool(const mm_doc *doc, const mm_node *map, const char *key,
                 const char *path, bool *out, bool *found, mm_err *err)
{
    const mm_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_bool(doc, v, line, path, out, err);
}

int mm_node_str(const mm_doc *doc, const mm_node *map, const char *key,
                const char *path, char *out, size_t len, bool *found, mm_err *err)
{
    const mm_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_str(doc, v, line, path, out, len, err);
}

int mm_node_enum(const mm_doc *doc, const mm_node *map, const char *key,
                 const char *path, const char *const *choices, int *out,
                 bool *found, mm_err *err)
{
    const mm_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_enum(doc, v, line, path, choices, out, err);
}

int mm_node_check_keys(const mm_doc *doc, const mm_node *map, const char *prefix,
                       const char *const *allowed, mm_err *err)
{
    if (!map)
        return 0;
    if (!mm_node_is_mapping(map)) {
        char got[96];
        return mm_err_set(err, MM_EINPUT, doc->path, mm_node_line(map), prefix,
                          "expected a mapping of keys, got %s", describe(map, got, sizeof got));
    }
    for (int i = 0; i < mm_node_count(map); i++) {
        const mm_node *k = mm_node_pair_key(map, i);
        char name[64];
        size_t full = 0;
        char path[160];
        if (!k || !mm_node_is_scalar(k) || mm_node_is_null(k)) {
            return mm_err_set(err, MM_EINPUT, doc->path,
                              k ? mm_node_line(k) : mm_node_line(map), prefix,
                              "keys must be plain names");
        }
        scalar_text(k, name, sizeof name, &full);
        bool ok = false;
        for (size_t a = 0; allowed[a] && !ok; a++)
            ok = full < sizeof name && !strcmp(name, allowed[a]);
        if (ok)
            continue;
        snprintf(path, sizeof path, "%s%s%s", prefix && prefix[0] ? prefix : "",
                 prefix && prefix[0] ? "." : "", name);
        const char *near = mm_nearest(name, allowed);
        if (near)
            return mm_err_set(err, MM_EINPUT, doc->path, mm_node_line(k), path,
                              "unknown key '%s' (did you mean '%s'?)", name, near);
        char all[256];
        join_names(allowed, all, sizeof all);
        return mm_err_set(err, MM_EINPUT, doc->path, mm_node_line(k), path,
                          "unknown key '%s' (allowed keys: %s)", name, all);
    }
    return 0;
}
