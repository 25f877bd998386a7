/* doc_emit.c - one node of a document (doc.h) as one line of YAML flow text
 * or of JSON, for sweeps (plan/sweep.c): the YAML goes back through
 * `--set KEY=VALUE`, the JSON into a point's label.
 *
 * YAML: a plain scalar as written, a single-quoted one in single quotes
 * ('' for a quote), any other scalar (double-quoted, block, one holding a
 * control character) double-quoted with YAML escapes; [a, b] and {k: v};
 * an empty plain value is nothing in a mapping ({a: }), null elsewhere.
 * JSON: a plain scalar that is a JSON number, true, false or null as is, an
 * empty one null, every other scalar a JSON string; a null node is null.  A mapping key that
 * is not a scalar (rare in YAML, none in JSON) is written as the string of
 * its YAML text.  Aliases were resolved when the document was built, so a
 * shared node is written at every place it appears.
 * Not for: block-style YAML, or whole files. */
#include "util/doc.h"
#include "util/doc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *s;
    size_t n, cap;
    bool failed;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void puts0(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* JSON's number grammar (RFC 8259 section 6). */
static bool json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return false;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return mm_doc_exponent_end(s);
}

/* A double-quoted string with JSON's escapes (json) or YAML's. */
static void quoted(sbuf *b, const char *s, size_t len, bool json)
{
    put(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        const char *e = NULL;
        switch (c) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\t': e = "\\t"; break;
        case '\r': e = "\\r"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\0': e = json ? "\\u0000" : "\\0"; break;
        case 0x1b: e = json ? "\\u001B" : "\\e"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                snprintf(esc, sizeof esc, json ? "\\u%04X" : "\\x%02X", c);
                e = esc;
            }
        }
        if (e)
            puts0(b, e);
        else
            put(b, s + i, 1);
    }
    put(b, "\"", 1);
}

static bool has_control(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return true;
    return false;
}

/* The node's tag in short form for YAML ("!!str "), "" for none. */
static void tag(sbuf *b, const mm_node *n)
{
    const char *t = mm_node_tag(n);
    static const char core[] = "tag:yaml.org,2002:";
    if (!t)
        return;
    if (!strncmp(t, core, sizeof core - 1)) {
        puts0(b, "!!");
        puts0(b, t + sizeof core - 1);
    } else if (t[0] == '!') {
        puts0(b, t);
    } else {
        puts0(b, "!<");
        puts0(b, t);
        puts0(b, ">");
    }
    put(b, " ", 1);
}

static void emit(sbuf *b, const mm_node *n, bool json, bool in_map);

static bool is_str_tag(const mm_node *n)
{
    const char *t = mm_node_tag(n);
    return t && !strcmp(t, "tag:yaml.org,2002:str");
}

/* `in_map`: the value of a mapping pair, where an empty plain scalar is
 * written as nothing ({a: }); elsewhere it is null. */
static void scalar(sbuf *b, const mm_node *n, bool json, bool in_map)
{
    size_t len = 0;
    const char *s = mm_node_scalar(n, &len);
    mm_scalar_style style = mm_node_style(n);
    if (json) {
        if (style == MM_SCALAR_PLAIN && len == 0)
            puts0(b, "null");
        else if (style == MM_SCALAR_PLAIN && strlen(s) == len && !is_str_tag(n) &&
                 (json_number(s) || !strcmp(s, "true") || !strcmp(s, "false") ||
                  !strcmp(s, "null")))
            put(b, s, len);
        else
            quoted(b, s, len, true);
        return;
    }
    tag(b, n);
    if (style == MM_SCALAR_PLAIN && len == 0) {
        if (!in_map)
            puts0(b, "null");
    } else if (style == MM_SCALAR_PLAIN && !has_control(s, len)) {
        put(b, s, len);
    } else if (style == MM_SCALAR_SINGLE && !has_control(s, len)) {
        put(b, "'", 1);
        for (size_t i = 0; i < len; i++)
            put(b, s[i] == '\'' ? "''" : s + i, s[i] == '\'' ? 2 : 1);
        put(b, "'", 1);
    } else {
        quoted(b, s, len, false);
    }
}

static void emit(sbuf *b, const mm_node *n, bool json, bool in_map)
{
    if (!n) {
        puts0(b, "null");
        return;
    }
    if (mm_node_is_scalar(n)) {
        scalar(b, n, json, in_map);
        return;
    }
    bool map = mm_node_is_mapping(n);
    if (!json)
        tag(b, n);
    put(b, map ? "{" : "[", 1);
    for (int i = 0; i < mm_node_count(n); i++) {
        if (i)
            put(b, ", ", 2);
        if (!map) {
            emit(b, mm_node_item(n, i), json, false);
            continue;
        }
        const mm_node *k = mm_node_pair_key(n, i);
        if (json && !mm_node_is_scalar(k)) {
            char *text = mm_node_emit(k, MM_EMIT_YAML);
            if (!text) {
                b->failed = true;
                return;
            }
            quoted(b, text, strlen(text), true);
            free(text);
        } else if (json) {
            size_t len = 0;
            const char *s = mm_node_scalar(k, &len);
            quoted(b, s, len, true);
        } else {
            emit(b, k, false, false);
        }
        put(b, ": ", 2);
        emit(b, mm_node_pair_value(n, i), json, true);
    }
    put(b, map ? "}" : "]", 1);
}

char *mm_node_emit(const mm_node *node, mm_emit_style style)
{
    sbuf b = {0};
    emit(&b, node, style == MM_EMIT_JSON, false);
    put(&b, "", 0);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
