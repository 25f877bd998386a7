/* modelkey.c - the scenario's `model:` key, which is either the path of a
 * model config or the config itself, inline, as a mapping (an HF
 * config.json's keys, or our model YAML's):
 *
 *     model:
 *       model_type: llama
 *       hidden_size: 4096
 *       ...
 *
 * An inline model makes a scenario self-contained: the canonical text (what
 * the store hashes) then carries the model, not just a file name whose
 * content may change, and a program (the C API, the planner, `mmsim run
 * --megatron-args`) can hand over a whole scenario as one text.
 *
 * The mapping is read by the model layer when the scenario is read, so a
 * bad key is reported with the scenario's file, its line and the dotted key
 * (`model.hidden_sise`); what is kept is the mapping's canonical text
 * (block YAML, keys sorted, scalars in one spelling), which the canonical
 * writer indents under `model:` and mm_scenario_load_model reads back.
 * Known limit: two spellings of one number (4096, 4.096e3) stay two texts,
 * so they hash apart (a duplicate run is missed; never a wrong match).
 * Not for: what the keys mean (model/mllm_read.c, model/llm_read.c). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/mllm.h"
#include "scenario/loader.h"

/* Deeper nesting than any model config has (vision_config.x.y...). */
#define MAX_DEPTH 24

/* ---- the canonical text of a mapping ------------------------------------- */

/* A plain scalar that reads back the same in block and flow context. */
static bool plain_safe(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '.' || c == '+' || c == '/' || (c == '-' && (i > 0 || (n > 1 && s[1] >= '0' && s[1] <= '9')));
        if (!ok)
            return false;
    }
    return true;
}

static void quote_n(mm_sbuf *b, const char *s, size_t n)
{
    mm_sb_printf(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            mm_sb_printf(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            mm_sb_printf(b, "\\x%02x", c);
        else
            mm_sb_printf(b, "%c", c);
    }
    mm_sb_printf(b, "\"");
}

/* A safe plain scalar that YAML reads as a string only: it starts with a
 * letter, `_` or `/` and is no boolean or null word (so "llama" and llama
 * are one text, while "4096" and 4096, "true" and true stay apart). */
static bool string_only(const char *s, size_t n)
{
    static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", NULL};
    char c = s[0];
    if (!plain_safe(s, n) || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '/'))
        return false;
    for (int i = 0; words[i]; i++)
        if (strlen(words[i]) == n && !strncasecmp(words[i], s, n))
            return false;
    return true;
}

/* A scalar: null as `null`; a plain one as written when that is safe, and
 * a quoted one plain when it is a string either way; any other
 * double-quoted (the same string). */
static void scalar(mm_sbuf *b, const mm_node *v)
{
    size_t n = 0;
    const char *s = mm_node_scalar(v, &n);
    if ((mm_node_is_null(v) && !mm_node_is_quoted(v)) || !s)
        mm_sb_printf(b, "null");
    else if (mm_node_is_quoted(v) ? string_only(s, n) : plain_safe(s, n))
        mm_sb_printf(b, "%.*s", (int)n, s);
    else
        quote_n(b, s, n);
}

typedef struct pair_ref {
    const char *key;
    size_t len;
    int i;
} pair_ref;

static int cmp_pair(const void *a, const void *b)
{
    const pair_ref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->i - y->i; /* a repeated key keeps its order */
}

/* The pairs of a mapping in key order (NULL when out of memory or empty). */
static pair_ref *sorted_pairs(const mm_node *map, int *count)
{
    int n = mm_node_count(map);
    *count = 0;
    pair_ref *p = n > 0 ? calloc((size_t)n, sizeof *p) : NULL;
    if (!p)
        return NULL;
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        const mm_node *k = mm_node_pair_key(map, i);
        const char *s = k && mm_node_is_scalar(k) ? mm_node_scalar(k, &len) : NULL;
        p[i] = (pair_ref){s ? s : "", s ? len : 0, i};
    }
    qsort(p, (size_t)n, sizeof *p, cmp_pair);
    *count = n;
    return p;
}

typedef struct emitter {
    mm_sbuf b;
    bool failed; /* out of memory, a non-scalar key, or nested too deep */
} emitter;

static void flow(emitter *e, const mm_node *v, int depth)
{
    if (depth > MAX_DEPTH) {
        e->failed = true;
        return;
    }
    if (mm_node_is_sequence(v)) {
        mm_sb_printf(&e->b, "[");
        for (int i = 0; i < mm_node_count(v); i++) {
            mm_sb_printf(&e->b, "%s", i ? ", " : "");
            flow(e, mm_node_item(v, i), depth + 1);
        }
        mm_sb_printf(&e->b, "]");
    } else if (mm_node_is_mapping(v)) {
        int n = 0;
        pair_ref *p = sorted_pairs(v, &n);
        if (!p && mm_node_count(v) > 0)
            e->failed = true;
        mm_sb_printf(&e->b, "{");
        for (int i = 0; i < n; i++) {
            const mm_node *k = mm_node_pair_key(v, p[i].i);
            if (!k || !mm_node_is_scalar(k))
                e->failed = true;
            mm_sb_printf(&e->b, "%s", i ? ", " : "");
            if (k)
                scalar(&e->b, k);
            mm_sb_printf(&e->b, ": ");
            flow(e, mm_node_pair_value(v, p[i].i), depth + 1);
        }
        mm_sb_printf(&e->b, "}");
        free(p);
    } else {
        scalar(&e->b, v);
    }
}

/* A mapping in block style at `indent`: a non-empty mapping value below
 * its key, anything else on the key's line (lists in flow style). */
static void block(emitter *e, const mm_node *map, int indent, int depth)
{
    if (depth > MAX_DEPTH) {
        e->failed = true;
        return;
    }
    int n = 0;
    pair_ref *p = sorted_pairs(map, &n);
    if (!p && mm_node_count(map) > 0)
        e->failed = true;
    for (int i = 0; i < n; i++) {
        const mm_node *k = mm_node_pair_key(map, p[i].i), *v = mm_node_pair_value(map, p[i].i);
        if (!k || !mm_node_is_scalar(k)) {
            e->failed = true;
            continue;
        }
        mm_sb_printf(&e->b, "%*s", indent, "");
        scalar(&e->b, k);
        mm_sb_printf(&e->b, ":");
        if (v && mm_node_is_mapping(v) && mm_node_count(v) > 0) {
            mm_sb_printf(&e->b, "\n");
            block(e, v, indent + 2, depth + 1);
        } else {
            mm_sb_printf(&e->b, " ");
            flow(e, v, depth + 1);
            mm_sb_printf(&e->b, "\n");
        }
    }
    free(p);
}

/* The canonical block text of mapping `map`, unindented, "{}\n" when it is
 * empty; a new string, or NULL (out of memory, or a key that is not a
 * plain name, or nesting deeper than MAX_DEPTH). */
static char *canonical_mapping(const mm_node *map)
{
    if (mm_node_count(map) == 0)
        return strdup("{}\n");
    emitter e = {{NULL, 0, 0}, false};
    block(&e, map, 0, 0);
    if (e.failed)
        return NULL;
    size_t need = e.b.n + 1;
    char *s = malloc(need);
    if (!s)
        return NULL;
    e = (emitter){{s, need, 0}, false};
    s[0] = '\0';
    block(&e, map, 0, 0);
    if (e.failed) {
        free(s);
        return NULL;
    }
    return s;
}

/* ---- reading ---------------------------------------------------------------- */

/* The name an inline model goes by: its `_name_or_path` or `name` when
 * given (the stem of it, as of a file name), else "inline". */
static void inline_name(const mm_node *map, char *out, size_t len)
{
    const char *keys[] = {"name", "_name_or_path"};
    snprintf(out, len, "inline");
    for (int i = 0; i < 2; i++) {
        mm_node *v = mm_node_get(map, keys[i]);
        size_t n = 0;
        const char *s = v && mm_node_is_scalar(v) && !mm_node_is_null(v) ? mm_node_scalar(v, &n) : NULL;
        if (s && n > 0 && !memchr(s, '\0', n)) {
            snprintf(out, len, "%.*s", (int)n, s);
            return;
        }
    }
}

/* An error of the model reader about an inline model: its key put under
 * `model.` so that it names the scenario key. */
static void under_model(mm_err *err)
{
    if (!err || !strncmp(err->key, "model.", 6))
        return;
    char key[sizeof err->key + 8];
    snprintf(key, sizeof key, "%s%s%s", "model", err->key[0] ? "." : "", err->key);
    mm_ld_copy(err->key, sizeof err->key, key);
}

int mm_ld_model(mm_loader *ld, mm_node *root, bool *found, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    mm_node *v = mm_node_get(root, "model");
    *found = v != NULL;
    if (!v)
        return 0;
    int line = mm_node_key_line(root, "model");
    mm_ld_note(ld, "model", line);
    if (mm_node_is_scalar(v) && !mm_node_is_null(v)) {
        size_t n = 0;
        const char *s = mm_node_scalar(v, &n);
        char *p = malloc(n + 1);
        if (!p)
            return mm_err_set(err, MM_EINTERNAL, ld->doc.path, line, "model", "out of memory");
        memcpy(p, s, n);
        p[n] = '\0';
        if (memchr(s, '\0', n) || n == 0) {
            free(p);
            return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, line, "model", "empty model path"), err);
        }
        free(sc->model);
        sc->model = p;
        free(sc->model_text);
        sc->model_text = NULL;
        return 0;
    }
    if (!mm_node_is_mapping(v))
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, line, "model",
                                        "expected a model file path or the model's config keys (a mapping)"),
                         err);
    /* read now, so that a bad key names this file and its line */
    mm_model *m = malloc(sizeof *m);
    if (!m)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, line, "model", "out of memory");
    char name[128];
    inline_name(v, name, sizeof name);
    int rc = mm_model_from_node(&ld->doc, v, name, m, err);
    free(m);
    if (rc) {
        under_model(err);
        return mm_ld_fix(ld, rc, err);
    }
    char *text = canonical_mapping(v);
    if (!text)
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, line, "model",
                                        "an inline model's keys must be plain names, nested at most %d deep",
                                        MAX_DEPTH),
                         err);
    free(sc->model_text);
    sc->model_text = text;
    free(sc->model);
    sc->model = strdup("");
    if (!sc->model)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, line, "model", "out of memory");
    return 0;
}

bool mm_scenario_model_inline(const mm_scenario *sc)
{
    return sc->model_text && sc->model_text[0];
}

void mm_sb_model(mm_sbuf *b, const mm_scenario *sc)
{
    if (!mm_scenario_model_inline(sc)) {
        mm_sb_printf(b, "model: ");
        mm_sb_quote(b, sc->model ? sc->model : "");
        mm_sb_printf(b, "\n");
        return;
    }
    if (!strcmp(sc->model_text, "{}\n")) {
        mm_sb_printf(b, "model: {}\n");
        return;
    }
    mm_sb_printf(b, "model:\n");
    for (const char *p = sc->model_text; *p;) {
        size_t n = strcspn(p, "\n");
        mm_sb_printf(b, "  %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

/* ---- loading for a run ------------------------------------------------------ */

int mm_scenario_load_model(const mm_scenario *sc, const char *path, mm_model *m, mm_err *err)
{
    if (!mm_scenario_model_inline(sc))
        return mm_model_load(path, m, err);
    /* the text was read and checked with the scenario; parsed again here
     * under the scenario's name, so that part paths of a YAML-form model
     * resolve from the scenario's folder */
    mm_doc d;
    memset(&d, 0, sizeof d);
    int rc = mm_doc_load_string(&d, sc->source, sc->model_text, err);
    if (!rc) {
        char name[128];
        inline_name(mm_doc_root(&d), name, sizeof name);
        rc = mm_model_from_node(&d, mm_doc_root(&d), name, m, err);
    }
    mm_doc_free(&d);
    if (rc) {
        /* the lines are the canonical text's: name the scenario's `model` */
        char msg[sizeof err->msg], key[sizeof err->key];
        mm_ld_copy(msg, sizeof msg, err->msg);
        under_model(err);
        mm_ld_copy(key, sizeof key, err->key);
        const char *file = sc->source;
        int line = 0;
        for (int i = 0; i < sc->n_keys; i++)
            if (!strcmp(sc->keys[i].key, "model")) {
                file = sc->keys[i].file;
                line = sc->keys[i].line;
            }
        return mm_err_set(err, err->code, file, line, "model", "%.200s (%s)", msg, key);
    }
    return 0;
}
