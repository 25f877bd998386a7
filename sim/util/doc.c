/* doc.c - reading YAML and JSON input files through libfyaml, and the typed
 * getters that turn nodes into numbers, flags and names with errors that say
 * file, line and key.
 *
 * libfyaml prints its diagnostics to stderr by default.  Library code must
 * not print, so every parse runs with a private fy_diag whose output_fn
 * captures the first error ("name:LINE:COL: error: MESSAGE") and drops the
 * rest (the source excerpt and the caret).  libfyaml 0.7.12 declares no
 * public way to iterate collected errors, so the line is read back from that
 * formatted text; when the format ever changes we still report the file and
 * the message, just with line 0.
 *
 * libfyaml 0.7.12 has no public fy_node_get_start_mark() either: a scalar's
 * line comes from its token, a collection's from its first scalar, an empty
 * collection's from the key that holds it.
 *
 * Files are read into memory by us (so that a missing file gives errno's
 * words, not libfyaml's) and parsed from that buffer with libfyaml's parser
 * API; a name ending in ".json" selects libfyaml's JSON mode.  A file holds
 * one document: a comments-only file is an empty document (root NULL), a
 * second `---` document is an error.
 * Not for: knowing any schema (scenario.c and friends do), or writing YAML. */
#include "util/doc.h"
#include "util/file.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <libfyaml.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ------------------------------------------------------------ */

typedef struct diag_capture {
    bool have;      /* an error line was captured */
    int line;       /* 1-based, 0 when it could not be read */
    int col;        /* 1-based, 0 when it could not be read */
    char msg[256];
} diag_capture;

/* strlcpy: copies what fits and always terminates (dst_len > 0). */
static void copy_trunc(char *dst, size_t dst_len, const char *src)
{
    size_t n = strlen(src);
    if (n >= dst_len)
        n = dst_len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Parses "...:LINE:COL: error: MESSAGE\n".  Only the first error counts:
 * later ones are usually consequences of it. */
static void diag_output(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
    (void)diag;
    diag_capture *cap = user;
    if (cap->have || len == 0)
        return;
    char text[512];
    size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
    memcpy(text, buf, n);
    text[n] = '\0';
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        text[--n] = '\0';
    if (n == 0)
        return;
    cap->have = true;
    cap->line = 0;
    /* Only error lines count: a warning ("Unsupported directive") and the
     * pieces printed after it are not ours to report, and an error that
     * was never captured is still seen by fy_diag_got_error. */
    char *tag = strstr(text, ": error: ");
    if (!tag) {
        cap->have = false;
        return;
    }
    copy_trunc(cap->msg, sizeof cap->msg, tag + strlen(": error: "));
    /* Walk back over ":COL" then ":LINE". */
    char *p = tag;
    char *colon[2] = {NULL, NULL};
    for (int field = 0; field < 2; field++) {
        char *q = p;
        while (q > text && q[-1] >= '0' && q[-1] <= '9')
            q--;
        if (q == p || q == text || q[-1] != ':')
            return;
        colon[field] = q; /* first digit */
        p = q - 1;
    }
    long line = strtol(colon[1], NULL, 10), col = strtol(colon[0], NULL, 10);
    if (line >= 0 && line < INT_MAX)
        cap->line = (int)line;
    if (col >= 0 && col < INT_MAX)
        cap->col = (int)col;
}

static bool name_is_json(const char *name)
{
    size_t n = strlen(name);
    return n >= 5 && strcmp(name + n - 5, ".json") == 0;
}

/* libfyaml says "duplicate key" at the line and column of the second key;
 * the key's text is read back from the source there, so the message can
 * name it.  Returns false when it cannot be found. */
static bool key_at(const char *buf, size_t len, int line, int col, char *out, size_t out_len)
{
    if (line < 1 || col < 1 || out_len < 2)
        return false;
    size_t i = 0;
    for (int l = 1; l < line && i < len; i++)
        if (buf[i] == '\n')
            l++;
    i += (size_t)col - 1;
    if (i >= len)
        return false;
    /* The mark is at the opening quote or (JSON, quoted YAML) just after it. */
    char quote = buf[i] == '"' || buf[i] == '\'' ? buf[i++] : '\0';
    if (!quote && i > 0 && (buf[i - 1] == '"' || buf[i - 1] == '\''))
        quote = buf[i - 1];
    size_t n = 0;
    for (; i < len && n + 1 < out_len; i++) {
        char c = buf[i];
        if (quote ? c == quote
                  : (c == ':' || c == ',' || c == '}' || c == ' ' || c == '"' || c == '\''))
            break;
        if (c == '\n' || c == '\r')
            break;
        out[n++] = c;
    }
    out[n] = '\0';
    return n > 0;
}

/* libfyaml 0.7.12 dereferences a freed indent (fy_indent_vacuum_internal, a
 * SEGV in fy_parser_destroy) on a tab between a mapping's ':' and a block
 * indicator on the same line after an explicit key: `? : x:\t-` (found by
 * tests/fuzz, kept in tests/data/fuzz/).  That text is never valid YAML (a
 * block collection cannot start on its key's line, and tabs do not indent),
 * so it is refused before libfyaml sees it: ':' then blanks holding a tab,
 * then '-', '?' or ':' followed by a blank or the line's end.  Text after a
 * quote or a '#' on the line is not looked at, so quoted strings and
 * comments holding such characters stay valid. */
static int check_tab_indicator(const char *name, const char *buf, size_t len, mm_err *err)
{
    int line = 1;
    bool skip = false; /* after a quote or a comment mark on this line */
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (c == '\n') {
            line++;
            skip = false;
            continue;
        }
        if (c == '"' || c == '\'' || c == '#')
            skip = true;
        if (skip || c != ':')
            continue;
        size_t j = i + 1;
        bool tab = false;
        while (j < len && (buf[j] == ' ' || buf[j] == '\t'))
            tab |= buf[j++] == '\t';
        if (!tab || j >= len || (buf[j] != '-' && buf[j] != '?' && buf[j] != ':'))
            continue;
        char after = j + 1 < len ? buf[j + 1] : '\n';
        if (after == ' ' || after == '\t' || after == '\n' || after == '\r')
            return mm_err_set(err, MM_EINPUT, name, line, "",
                              "a tab before the block indicator '%c' on a key's line; YAML "
                              "does not allow a list or key to start there", buf[j]);
    }
    return 0;
}

/* Takes ownership of buf (malloc'ed, len bytes, NUL at buf[len]). */
static int parse_buffer(mm_doc *doc, const char *name, char *buf, size_t len, mm_err *err)
{
    int urc = mm_text_check_utf8(name, buf, len, err);
    if (urc == 0)
        urc = check_tab_indicator(name, buf, len, err);
    if (urc < 0) {
        free(buf);
        return urc;
    }
    diag_capture cap = {0};
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = diag_output;
    dcfg.user = &cap;
    dcfg.level = FYET_ERROR; /* notices and warnings are not ours to show */
    dcfg.colorize = false;
    dcfg.show_source = false;
    dcfg.show_position = true;
    dcfg.show_type = true;
    dcfg.show_module = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (!diag) {
        free(buf);
        return mm_err_set(err, MM_EINTERNAL, name, 0, "", "cannot create YAML diagnostics");
    }
    struct fy_parse_cfg pcfg;
    memset(&pcfg, 0, sizeof pcfg);
    pcfg.flags = (enum fy_parse_cfg_flags)(FYPCF_QUIET |
                                           (name_is_json(name) ? FYPCF_JSON_FORCE
                                                               : FYPCF_JSON_NONE));
    pcfg.diag = diag;

    /* The parser API rather than fy_document_build_*: those report an empty
     * stream (a file of comments) as an error, and silently drop a second
     * document. */
    struct fy_document *fyd = NULL, *extra = NULL;
    struct fy_parser *fyp = fy_parser_create(&pcfg);
    if (!fyp || fy_parser_set_malloc_string(fyp, buf, len) != 0) {
        free(buf); /* not taken over when setting it failed */
        if (fyp)
            fy_parser_destroy(fyp);
        fy_diag_destroy(diag);
        return mm_err_set(err, MM_EINTERNAL, name, 0, "", "cannot create a YAML parser");
    }
    fyd = fy_parse_load_document(fyp);
    bool failed = fy_diag_got_error(diag) || cap.have;
    if (fyd && !failed) {
        extra = fy_parse_load_document(fyp);
        failed = fy_diag_got_error(diag) || cap.have;
    }
    int extra_line = extra ? mm_node_line(fy_document_root(extra)) : 0;
    if (extra)
        fy_parse_document_destroy(fyp, extra);
    if (!fyd && !failed) /* an empty stream: no document at all */
        fyd = fy_document_create(&pcfg);
    /* Bounds first, then aliases and merge keys are resolved (while the
     * diagnostics still capture what resolving may report). */
    int bound_rc = 0;
    if (fyd && !failed && !extra) {
        bound_rc = mm_doc_check_bounds(fyd, name, err);
        if (bound_rc == 0 && fy_document_resolve(fyd) != 0)
            failed = true;
        failed = failed || fy_diag_got_error(diag) || cap.have;
    }
    char dup[64] = "";
    if (failed && cap.have && strncmp(cap.msg, "duplicate key", 13) == 0 &&
        !key_at(buf, len, cap.line, cap.col, dup, sizeof dup))
        dup[0] = '\0';
    fy_parser_destroy(fyp);
    /* No output after this, so the stack-held capture is never touched by
     * later document operations (the document keeps a reference). */
    fy_diag_destroy(diag);

    if (failed || extra || !fyd || bound_rc) {
        if (fyd)
            fy_document_destroy(fyd);
        if (bound_rc)
            return bound_rc;
        if (dup[0])
            return mm_err_set(err, MM_EINPUT, name, cap.line, dup,
                              "duplicate key: it appears a second time in the same mapping "
                              "(each key may appear once)");
        if (extra)
            return mm_err_set(err, MM_EINPUT, name, extra_line, "",
                              "a second YAML document ('---'); one file holds one document");
        if (!failed)
            return mm_err_set(err, MM_EINTERNAL, name, 0, "", "out of memory parsing");
        return mm_err_set(err, MM_EINPUT, name, cap.line, "", "%s",
                          cap.have ? cap.msg : "YAML syntax error");
    }
    doc->fyd = fyd;
    return 0;
}

static void doc_init(mm_doc *doc, const char *name)
{
    doc->fyd = NULL;
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

void mm_doc_free(mm_doc *doc)
{
    if (doc && doc->fyd) {
        fy_document_destroy(doc->fyd);
        doc->fyd = NULL;
    }
}

struct fy_node *mm_doc_root(const mm_doc *doc)
{
    return doc && doc->fyd ? fy_document_root(doc->fyd) : NULL;
}

/* ---- where nodes are ---------------------------------------------------- */

/* libfyaml's accessors take non-const nodes although they do not modify. */
static struct fy_node *unconst(const struct fy_node *node)
{
    union { const struct fy_node *c; struct fy_node *m; } u = {.c = node};
    return u.m;
}

static int scalar_line(struct fy_node *node)
{
    struct fy_token *tok = fy_node_get_scalar_token(node);
    const struct fy_mark *mark = tok ? fy_token_start_mark(tok) : NULL;
    return mark && mark->line >= 0 ? mark->line + 1 : 0;
}

/* Line of the key under which `node` hangs, for empty collections, which
 * have no scalar inside.  It only walks up (an item of a list takes the line
 * of the list's key), so it cannot loop. */
static int parent_line(struct fy_node *node)
{
    struct fy_node *parent = fy_node_get_parent(node);
    if (!parent)
        return 0;
    if (fy_node_is_mapping(parent)) {
        void *it = NULL;
        struct fy_node_pair *p;
        while ((p = fy_node_mapping_iterate(parent, &it))) {
            struct fy_node *key = fy_node_pair_key(p);
            if (fy_node_pair_value(p) == node && key && fy_node_is_scalar(key)) {
                int line = scalar_line(key);
                if (line > 0)
                    return line;
            }
        }
    }
    return parent_line(parent);
}

int mm_node_line(const struct fy_node *cnode)
{
    struct fy_node *node = unconst(cnode);
    if (!node)
        return 0;
    if (fy_node_is_scalar(node))
        return scalar_line(node);
    /* A collection starts where its first scalar does (the `{` or `-` before
     * it is on the same line in all but contrived layouts). */
    int line = 0;
    void *it = NULL;
    if (fy_node_is_mapping(node)) {
        struct fy_node_pair *p = fy_node_mapping_iterate(node, &it);
        if (p)
            line = mm_node_line(fy_node_pair_key(p));
    } else {
        struct fy_node *item = fy_node_sequence_iterate(node, &it);
        if (item)
            line = mm_node_line(item);
    }
    return line > 0 ? line : parent_line(node);
}

static struct fy_node_pair *pair_lookup(struct fy_node *map, const char *key)
{
    if (!map || !fy_node_is_mapping(map))
        return NULL;
    size_t klen = strlen(key);
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(map, &it))) {
        struct fy_node *k = fy_node_pair_key(p);
        if (!k || !fy_node_is_scalar(k))
            continue;
        size_t n = 0;
        const char *s = fy_node_get_scalar(k, &n);
        if (s && n == klen && memcmp(s, key, n) == 0)
            return p;
    }
    return NULL;
}

struct fy_node *mm_node_get(struct fy_node *map, const char *key)
{
    struct fy_node_pair *p = pair_lookup(map, key);
    return p ? fy_node_pair_value(p) : NULL;
}

int mm_node_key_line(struct fy_node *map, const char *key)
{
    struct fy_node_pair *p = pair_lookup(map, key);
    return p ? mm_node_line(fy_node_pair_key(p)) : 0;
}

/* ---- scalar text -------------------------------------------------------- */

/* Copies a scalar's text into buf (truncating); returns false for
 * non-scalars. */
static bool scalar_text(struct fy_node *node, char *buf, size_t len, size_t *full)
{
    if (!node || !fy_node_is_scalar(node))
        return false;
    size_t n = 0;
    const char *s = fy_node_get_scalar(node, &n);
    if (!s)
        n = 0;
    if (full)
        *full = n;
    size_t c = n < len - 1 ? n : len - 1;
    if (c)
        memcpy(buf, s, c);
    buf[c] = '\0';
    return true;
}

static bool is_plain(struct fy_node *node)
{
    return fy_node_get_style(node) == FYNS_PLAIN || fy_node_get_style(node) == FYNS_ANY;
}

bool mm_node_is_null(struct fy_node *node)
{
    if (!node)
        return true;
    if (!fy_node_is_scalar(node) || !is_plain(node))
        return false;
    char t[8];
    size_t full = 0;
    scalar_text(node, t, sizeof t, &full);
    return full == 0 || (full < sizeof t && (!strcmp(t, "~") || !strcmp(t, "null") ||
                                              !strcmp(t, "Null") || !strcmp(t, "NULL")));
}

/* "a mapping", "a list", "null", or the scalar quoted: for "got ..." parts of
 * messages. */
static const char *describe(struct fy_node *node, char *buf, size_t len)
{
    if (!node || mm_node_is_null(node))
        return "nothing (null)";
    if (fy_node_is_mapping(node))
        return "a mapping";
    if (fy_node_is_sequence(node))
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

/* ---- typed conversion of one node (line given by the caller) ------------ */

static int type_error(const mm_doc *doc, struct fy_node *node, int line, const char *path,
                      const char *want, mm_err *err)
{
    char got[96];
    return mm_err_set(err, MM_EINPUT, doc->path, line, path, "expected %s, got %s", want,
                      describe(node, got, sizeof got));
}

static int conv_int(const mm_doc *doc, struct fy_node *node, int line, const char *path,
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

static int conv_double(const mm_doc *doc, struct fy_node *node, int line, const char *path,
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

static int conv_bool(const mm_doc *doc, struct fy_node *node, int line, const char *path,
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

static int conv_str(const mm_doc *doc, struct fy_node *node, int line, const char *path,
                    char *out, size_t len, mm_err *err)
{
    size_t full = 0;
    if (!node || mm_node_is_null(node) || !fy_node_is_scalar(node))
        return type_error(doc, node, line, path, "a string", err);
    if (!fy_node_get_scalar(node, &full))
        full = 0;
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

static int conv_enum(const mm_doc *doc, struct fy_node *node, int line, const char *path,
                     const char *const *choices, int *out, mm_err *err)
{
    char v[64];
    char all[256];
    join_names(choices, all, sizeof all);
    if (!node || mm_node_is_null(node) || !fy_node_is_scalar(node)) {
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

int mm_node_as_int(const mm_doc *doc, struct fy_node *node, const char *path,
                   int64_t min, int64_t max, int64_t *out, mm_err *err)
{
    return conv_int(doc, node, mm_node_line(node), path, min, max, out, err);
}

int mm_node_as_double(const mm_doc *doc, struct fy_node *node, const char *path,
                      double min, double max, double *out, mm_err *err)
{
    return conv_double(doc, node, mm_node_line(node), path, min, max, out, err);
}

int mm_node_as_str(const mm_doc *doc, struct fy_node *node, const char *path,
                   char *out, size_t len, mm_err *err)
{
    return conv_str(doc, node, mm_node_line(node), path, out, len, err);
}

/* Finds map[key]; false when absent.  *line is the value's line, or the
 * key's when the value has none (an empty `key:`). */
static bool lookup(struct fy_node *map, const char *key, struct fy_node **val, int *line,
                   bool *found)
{
    struct fy_node_pair *p = pair_lookup(map, key);
    if (found)
        *found = p != NULL;
    if (!p)
        return false;
    *val = fy_node_pair_value(p);
    *line = mm_node_line(*val);
    if (*line == 0 || mm_node_is_null(*val))
        *line = mm_node_line(fy_node_pair_key(p));
    return true;
}

int mm_node_int(const mm_doc *doc, struct fy_node *map, const char *key,
                const char *path, int64_t min, int64_t max, int64_t *out,
                bool *found, mm_err *err)
{
    struct fy_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_int(doc, v, line, path, min, max, out, err);
}

int mm_node_double(const mm_doc *doc, struct fy_node *map, const char *key,
                   const char *path, double min, double max, double *out,
                   bool *found, mm_err *err)
{
    struct fy_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_double(doc, v, line, path, min, max, out, err);
}

int mm_node_bool(const mm_doc *doc, struct fy_node *map, const char *key,
                 const char *path, bool *out, bool *found, mm_err *err)
{
    struct fy_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_bool(doc, v, line, path, out, err);
}

int mm_node_str(const mm_doc *doc, struct fy_node *map, const char *key,
                const char *path, char *out, size_t len, bool *found, mm_err *err)
{
    struct fy_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_str(doc, v, line, path, out, len, err);
}

int mm_node_enum(const mm_doc *doc, struct fy_node *map, const char *key,
                 const char *path, const char *const *choices, int *out,
                 bool *found, mm_err *err)
{
    struct fy_node *v = NULL;
    int line = 0;
    if (!lookup(map, key, &v, &line, found))
        return 0;
    return conv_enum(doc, v, line, path, choices, out, err);
}

int mm_node_check_keys(const mm_doc *doc, struct fy_node *map, const char *prefix,
                       const char *const *allowed, mm_err *err)
{
    if (!map)
        return 0;
    if (!fy_node_is_mapping(map)) {
        char got[96];
        return mm_err_set(err, MM_EINPUT, doc->path, mm_node_line(map), prefix,
                          "expected a mapping of keys, got %s", describe(map, got, sizeof got));
    }
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(map, &it))) {
        struct fy_node *k = fy_node_pair_key(p);
        char name[64];
        size_t full = 0;
        char path[160];
        if (!k || !fy_node_is_scalar(k) || mm_node_is_null(k)) {
            return mm_err_set(err, MM_EINPUT, doc->path,
                              k ? mm_node_line(k) : mm_node_line(map), prefix,
                              "keys must be plain names");
        }
        scalar_text(k, name, sizeof name, &full);
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = full < sizeof name && !strcmp(name, allowed[i]);
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
