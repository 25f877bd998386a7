/* toml.c - a recursive-descent reader of the TOML subset in toml.h, into a
 * flat list of dotted keys.  One pass over the text with a cursor that
 * counts lines; every error stops the pass (a syntax error leaves nothing
 * sensible to read after it) and names the line and the key being read.
 * Known limits: keys are compared byte for byte (no Unicode
 * normalisation, as TOML asks); a table header that only opens a table
 * already implied by a dotted key is accepted (TOML 1.0 refuses some of
 * those); integers beyond int64 are refused rather than read as floats.
 * Not for: anything but reading (no writer, no schema). */
#include "util/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

typedef struct cur {
    const char *p;
    int line;
    const char *name;
    char table[MM_TOML_MAX_KEY]; /* the current [table] ("" at the top) */
    char key[MM_TOML_MAX_KEY];   /* the key being read, for errors */
    mm_toml *t;
    mm_err *err;
} cur;

static int bad(cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(cur *c, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mm_err_set(c->err, MM_EINPUT, c->name, c->line, c->key, "%s", msg);
}

static void value_free(mm_toml_value *v)
{
    free(v->s);
    for (int i = 0; i < v->n; i++)
        value_free(&v->items[i]);
    free(v->items);
    memset(v, 0, sizeof *v);
}

void mm_toml_free(mm_toml *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        value_free(&t->e[i].v);
    free(t->e);
    t->e = NULL;
    t->n = t->cap = 0;
}

const mm_toml_entry *mm_toml_get(const mm_toml *t, const char *key)
{
    for (int i = 0; t && i < t->n; i++)
        if (!strcmp(t->e[i].key, key))
            return &t->e[i];
    return NULL;
}

const char *mm_toml_kind_name(mm_toml_kind k)
{
    static const char *const names[] = {"string", "integer", "float", "boolean", "array"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* ---- the cursor ---------------------------------------------------------- */

/* Spaces and tabs (not newlines). */
static void skip_ws(cur *c)
{
    while (*c->p == ' ' || *c->p == '\t')
        c->p++;
}

/* Spaces, tabs, newlines and comments: inside arrays. */
static int skip_ws_nl(cur *c)
{
    for (;;) {
        skip_ws(c);
        if (*c->p == '#') {
            while (*c->p && *c->p != '\n')
                c->p++;
        } else if (*c->p == '\r' && c->p[1] == '\n') {
            c->p++;
        } else if (*c->p == '\n') {
            c->p++, c->line++;
        } else {
            return 0;
        }
    }
}

/* The rest of a line after a key/value or a header: spaces, an optional
 * comment, the end of the line or of the text. */
static int end_of_line(cur *c)
{
    skip_ws(c);
    if (*c->p == '#')
        while (*c->p && *c->p != '\n')
            c->p++;
    if (*c->p == '\r' && c->p[1] == '\n')
        c->p++;
    if (*c->p == '\n') {
        c->p++, c->line++;
        return 0;
    }
    if (!*c->p)
        return 0;
    return bad(c, "unexpected '%c' after the value (one key = value per line)", *c->p);
}

/* ---- strings ------------------------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static int sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p)
            return -1;
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

static int utf8_put(sbuf *b, unsigned long cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80)
        u[0] = (char)cp, n = 1;
    else if (cp < 0x800)
        u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
        u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    else
        u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    return sb_put(b, u, n);
}

/* A \uXXXX or \UXXXXXXXX escape's code point (a Unicode scalar value). */
static int read_hex(cur *c, int digits, unsigned long *cp)
{
    unsigned long v = 0;
    for (int i = 0; i < digits; i++) {
        char h = c->p[i];
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0)
            return bad(c, "\\%c escape needs %d hex digits", digits == 4 ? 'u' : 'U', digits);
        v = v * 16 + (unsigned long)d;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return bad(c, "escape U+%lX is not a Unicode scalar value", v);
    c->p += digits;
    *cp = v;
    return 0;
}

/* A one-line basic ("...") or literal ('...') string, the cursor on its
 * quote; the text into *out (malloc'ed). */
static int read_string(cur *c, char **out)
{
    char q = *c->p;
    if (c->p[1] == q && c->p[2] == q)
        return bad(c, "multi-line strings (%c%c%c) are not read", q, q, q);
    c->p++;
    sbuf b = {0};
    if (sb_put(&b, "", 0))
        return mm_err_set(c->err, MM_EINTERNAL, c->name, c->line, c->key, "out of memory");
    for (;;) {
        const char *s = c->p;
        while (*c->p && *c->p != q && *c->p != '\n' && (q == '\'' || *c->p != '\\') &&
               ((unsigned char)*c->p >= 0x20 || *c->p == '\t') && *c->p != 0x7F)
            c->p++;
        if (sb_put(&b, s, (size_t)(c->p - s))) {
            free(b.s);
            return mm_err_set(c->err, MM_EINTERNAL, c->name, c->line, c->key, "out of memory");
        }
        if (*c->p == q) {
            c->p++;
            break;
        }
        if (*c->p != '\\') {
            free(b.s);
            if (*c->p == '\n' || !*c->p)
                return bad(c, "string not closed on its line");
            return bad(c, "control character 0x%02X in a string", (unsigned)(unsigned char)*c->p);
        }
        /* an escape of a basic string */
        char e = c->p[1];
        c->p += 2;
        static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
        const char *k = e ? strchr(from, e) : NULL;
        int rc = 0;
        if (k) {
            rc = sb_put(&b, &to[k - from], 1);
        } else if (e == 'u' || e == 'U') {
            unsigned long cp = 0;
            if (read_hex(c, e == 'u' ? 4 : 8, &cp)) {
                free(b.s);
                return -MM_EINPUT;
            }
            rc = utf8_put(&b, cp);
        } else {
            c->p--;
            free(b.s);
            return bad(c, "unknown escape '\\%c' in a string", e ? e : ' ');
        }
        if (rc) {
            free(b.s);
            return mm_err_set(c->err, MM_EINTERNAL, c->name, c->line, c->key, "out of memory");
        }
    }
    *out = b.s;
    return 0;
}

/* ---- keys ---------------------------------------------------------------- */

static bool bare_char(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
           ch == '-';
}

/* A dotted key (a.b."c d") appended to prefix (which may be ""): into out. */
static int read_key(cur *c, const char *prefix, char *out)
{
    char k[MM_TOML_MAX_KEY];
    snprintf(k, sizeof k, "%s", prefix);
    for (;;) {
        skip_ws(c);
        char part[MM_TOML_MAX_KEY];
        if (*c->p == '"' || *c->p == '\'') {
            char *s = NULL;
            if (read_string(c, &s))
                return -MM_EINPUT;
            if (strlen(s) >= sizeof part || strchr(s, '.')) {
                /* a dot inside a quoted key would read back as two keys */
                int r = bad(c, strchr(s, '.') ? "a quoted key with a '.' inside is not read" : "key too long");
                free(s);
                return r;
            }
            snprintf(part, sizeof part, "%s", s);
            free(s);
        } else {
            const char *s = c->p;
            while (bare_char(*c->p))
                c->p++;
            if (c->p == s)
                return *c->p == '\n' || *c->p == '\r' || !*c->p ? bad(c, "a key is missing")
                                                                 : bad(c, "'%c' cannot start a key", *c->p);
            if ((size_t)(c->p - s) >= sizeof part)
                return bad(c, "key too long");
            memcpy(part, s, (size_t)(c->p - s));
            part[c->p - s] = '\0';
        }
        size_t n = strlen(k);
        if (n + strlen(part) + 2 > sizeof k)
            return bad(c, "key longer than %d characters", MM_TOML_MAX_KEY - 1);
        snprintf(k + n, sizeof k - n, "%s%s", n ? "." : "", part);
        snprintf(c->key, sizeof c->key, "%s", k);
        skip_ws(c);
        if (*c->p != '.')
            break;
        c->p++;
    }
    snprintf(out, MM_TOML_MAX_KEY, "%s", k);
    return 0;
}

/* ---- values -------------------------------------------------------------- */

static int read_value(cur *c, mm_toml_value *v, int depth, const char *key);

/* Integers and floats; a date or a time is refused by name. */
static int read_number(cur *c, mm_toml_value *v)
{
    const char *s = c->p;
    while (*c->p && (bare_char(*c->p) || *c->p == '+' || *c->p == '.' || *c->p == ':'))
        c->p++;
    size_t n = (size_t)(c->p - s);
    char tok[128];
    if (n >= sizeof tok)
        return bad(c, "value too long");
    memcpy(tok, s, n);
    tok[n] = '\0';
    const char *u = tok + (tok[0] == '+' || tok[0] == '-');
    if (!strcmp(u, "inf") || !strcmp(u, "nan")) {
        v->kind = MM_TOML_FLOAT;
        v->d = u[0] == 'i' ? (tok[0] == '-' ? -INFINITY : INFINITY) : NAN;
        return 0;
    }
    if (strchr(tok, ':') || (n >= 10 && tok[4] == '-' && tok[7] == '-'))
        return bad(c, "dates and times are not read ('%s')", tok);
    /* underscores only between digits */
    char clean[128];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (tok[i] == '_') {
            bool ok = i > 0 && i + 1 < n && ((tok[i - 1] >= '0' && tok[i - 1] <= '9') || (tok[i - 1] >= 'a' && tok[i - 1] <= 'f') || (tok[i - 1] >= 'A' && tok[i - 1] <= 'F')) &&
                      ((tok[i + 1] >= '0' && tok[i + 1] <= '9') || (tok[i + 1] >= 'a' && tok[i + 1] <= 'f') || (tok[i + 1] >= 'A' && tok[i + 1] <= 'F'));
            if (!ok)
                return bad(c, "'_' in '%s' is not between two digits", tok);
            continue;
        }
        clean[m++] = tok[i];
    }
    clean[m] = '\0';
    const char *d = clean + (clean[0] == '+' || clean[0] == '-');
    if (!*d || !((*d >= '0' && *d <= '9')))
        return bad(c, "'%s' is not a value (a string needs quotes)", tok);
    char *end;
    errno = 0;
    if (d[0] == '0' && (d[1] == 'x' || d[1] == 'o' || d[1] == 'b')) {
        if (d != clean)
            return bad(c, "'%s': a sign before 0x, 0o or 0b", tok);
        int base = d[1] == 'x' ? 16 : d[1] == 'o' ? 8 : 2;
        unsigned long long x = strtoull(d + 2, &end, base);
        if (!d[2] || *end || errno || x > INT64_MAX)
            return bad(c, "'%s' is not an integer of 64 bits", tok);
        v->kind = MM_TOML_INT;
        v->i = (int64_t)x;
        return 0;
    }
    bool is_float = strpbrk(d, ".eE") != NULL;
    if (d[0] == '0' && d[1] >= '0' && d[1] <= '9')
        return bad(c, "'%s': leading zeros", tok);
    if (!is_float) {
        long long x = strtoll(clean, &end, 10);
        if (*end || errno)
            return bad(c, "'%s' is not an integer of 64 bits", tok);
        v->kind = MM_TOML_INT;
        v->i = x;
        return 0;
    }
    /* a float: digits on both sides of the point */
    const char *dot = strchr(d, '.');
    if (dot && !(dot > d && dot[1] >= '0' && dot[1] <= '9'))
        return bad(c, "'%s': a float needs digits on both sides of '.'", tok);
    double x = strtod(clean, &end);
    if (*end || errno == ERANGE)
        return bad(c, "'%s' is not a float", tok);
    v->kind = MM_TOML_FLOAT;
    v->d = x;
    return 0;
}

static int push_entry(cur *c, const char *key, int line, mm_toml_value *v);

/* {a = 1, b.c = "x"}: each leaf as its own entry under key. */
static int read_inline_table(cur *c, int depth, const char *key)
{
    c->p++;
    skip_ws(c);
    if (*c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        char k[MM_TOML_MAX_KEY];
        if (read_key(c, key, k))
            return -MM_EINPUT;
        skip_ws(c);
        if (*c->p != '=')
            return bad(c, "'=' expected after the key");
        c->p++;
        skip_ws(c);
        mm_toml_value v = {0};
        int line = c->line;
        if (read_value(c, &v, depth + 1, k) || push_entry(c, k, line, &v)) {
            value_free(&v);
            return -MM_EINPUT;
        }
        skip_ws(c);
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        if (*c->p == '}') {
            c->p++;
            return 0;
        }
        return bad(c, "',' or '}' expected in an inline table (on one line)");
    }
}

static int read_array(cur *c, mm_toml_value *v, int depth, const char *key)
{
    c->p++;
    v->kind = MM_TOML_ARRAY;
    int cap = 0;
    for (;;) {
        skip_ws_nl(c);
        if (*c->p == ']') {
            c->p++;
            return 0;
        }
        if (v->n == cap) {
            cap = cap ? 2 * cap : 4;
            if (cap > MM_TOML_MAX_ENTRIES)
                return bad(c, "array longer than %d items", MM_TOML_MAX_ENTRIES);
            mm_toml_value *p = realloc(v->items, (size_t)cap * sizeof *p);
            if (!p)
                return mm_err_set(c->err, MM_EINTERNAL, c->name, c->line, c->key, "out of memory");
            v->items = p;
        }
        mm_toml_value *it = &v->items[v->n];
        memset(it, 0, sizeof *it);
        if (*c->p == '{')
            return bad(c, "inline tables inside arrays are not read");
        v->n++; /* counted now, so that value_free frees a half-read item */
        if (read_value(c, it, depth + 1, key))
            return -MM_EINPUT;
        skip_ws_nl(c);
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        if (*c->p == ']') {
            c->p++;
            return 0;
        }
        return *c->p ? bad(c, "',' or ']' expected in an array") : bad(c, "array not closed");
    }
}

/* One value at the cursor.  An inline table adds its own entries and
 * leaves v at kind -1 (nothing to add for key itself). */
static int read_value(cur *c, mm_toml_value *v, int depth, const char *key)
{
    if (depth > MM_TOML_MAX_DEPTH)
        return bad(c, "nested deeper than %d", MM_TOML_MAX_DEPTH);
    char ch = *c->p;
    if (ch == '"' || ch == '\'') {
        v->kind = MM_TOML_STRING;
        return read_string(c, &v->s);
    }
    if (ch == '[')
        return read_array(c, v, depth, key);
    if (ch == '{') {
        v->kind = (mm_toml_kind)-1;
        return read_inline_table(c, depth, key);
    }
    if (!strncmp(c->p, "true", 4) && !bare_char(c->p[4])) {
        c->p += 4;
        v->kind = MM_TOML_BOOL, v->b = true;
        return 0;
    }
    if (!strncmp(c->p, "false", 5) && !bare_char(c->p[5])) {
        c->p += 5;
        v->kind = MM_TOML_BOOL, v->b = false;
        return 0;
    }
    if (ch == '\n' || ch == '\r' || ch == '#' || !ch)
        return bad(c, "a value is missing after '='");
    return read_number(c, v);
}

/* ---- entries ------------------------------------------------------------- */

/* True when `a` is `b` or a table above or below it ("x" and "x.y"). */
static bool overlaps(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;
    return !strncmp(a, b, n) && (na == nb || (na < nb ? b[n] : a[n]) == '.');
}

static int push_entry(cur *c, const char *key, int line, mm_toml_value *v)
{
    if ((int)v->kind < 0)
        return 0; /* an inline table: its leaves were pushed */
    for (int i = 0; i < c->t->n; i++)
        if (overlaps(c->t->e[i].key, key))
            return mm_err_set(c->err, MM_EINPUT, c->name, line, key, "defined twice (first on line %d)",
                              c->t->e[i].line);
    if (c->t->n == MM_TOML_MAX_ENTRIES)
        return mm_err_set(c->err, MM_EINPUT, c->name, line, key, "more than %d keys", MM_TOML_MAX_ENTRIES);
    if (c->t->n == c->t->cap) {
        int cap = c->t->cap ? 2 * c->t->cap : 32;
        mm_toml_entry *p = realloc(c->t->e, (size_t)cap * sizeof *p);
        if (!p)
            return mm_err_set(c->err, MM_EINTERNAL, c->name, line, key, "out of memory");
        c->t->e = p, c->t->cap = cap;
    }
    mm_toml_entry *e = &c->t->e[c->t->n++];
    snprintf(e->key, sizeof e->key, "%s", key);
    e->line = line;
    e->v = *v;
    memset(v, 0, sizeof *v);
    return 0;
}

/* Headers seen, to refuse one given twice. */
typedef struct headers {
    char (*k)[MM_TOML_MAX_KEY];
    int n, cap;
} headers;

static int read_header(cur *c, headers *h)
{
    if (c->p[1] == '[')
        return bad(c, "arrays of tables ([[...]]) are not read");
    c->p++;
    char k[MM_TOML_MAX_KEY];
    c->key[0] = '\0';
    if (read_key(c, "", k))
        return -MM_EINPUT;
    skip_ws(c);
    if (*c->p != ']')
        return bad(c, "']' expected after the table name");
    c->p++;
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->k[i], k))
            return bad(c, "table [%s] given twice", k);
    for (int i = 0; i < c->t->n; i++)
        if (!strcmp(c->t->e[i].key, k))
            return mm_err_set(c->err, MM_EINPUT, c->name, c->line, k, "is a value (line %d), not a table",
                              c->t->e[i].line);
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 16;
        if (cap > MM_TOML_MAX_ENTRIES)
            return bad(c, "more than %d tables", MM_TOML_MAX_ENTRIES);
        void *p = realloc(h->k, (size_t)cap * sizeof *h->k);
        if (!p)
            return mm_err_set(c->err, MM_EINTERNAL, c->name, c->line, k, "out of memory");
        h->k = p, h->cap = cap;
    }
    snprintf(h->k[h->n++], MM_TOML_MAX_KEY, "%s", k);
    snprintf(c->table, sizeof c->table, "%s", k);
    return end_of_line(c);
}

static int parse(cur *c)
{
    headers h = {0};
    int rc = 0;
    while (!rc) {
        skip_ws_nl(c);
        if (!*c->p)
            break;
        snprintf(c->key, sizeof c->key, "%s", c->table);
        if (*c->p == '[') {
            rc = read_header(c, &h);
            continue;
        }
        char k[MM_TOML_MAX_KEY];
        int line = c->line;
        if ((rc = read_key(c, c->table, k)))
            break;
        skip_ws(c);
        if (*c->p != '=') {
            rc = bad(c, "'=' expected after the key");
            break;
        }
        c->p++;
        skip_ws(c);
        mm_toml_value v = {0};
        rc = read_value(c, &v, 0, k);
        if (!rc)
            rc = push_entry(c, k, line, &v);
        value_free(&v);
        if (!rc)
            rc = end_of_line(c);
    }
    free(h.k);
    return rc;
}

int mm_toml_load_string(mm_toml *t, const char *name, const char *text, mm_err *err)
{
    memset(t, 0, sizeof *t);
    name = name ? name : "<text>";
    snprintf(t->path, sizeof t->path, "%s", name);
    size_t len = strlen(text);
    int rc = mm_text_check_utf8(name, text, len, err);
    if (rc)
        return rc;
    cur c = {.p = text, .line = 1, .name = t->path, .t = t, .err = err};
    if (!strncmp(c.p, "\xEF\xBB\xBF", 3))
        c.p += 3; /* a byte-order mark */
    rc = parse(&c);
    if (rc)
        mm_toml_free(t);
    return rc;
}

int mm_toml_load_file(mm_toml *t, const char *path, mm_err *err)
{
    memset(t, 0, sizeof *t);
    char *buf = NULL;
    size_t len = 0;
    int rc = mm_file_read(path, MM_FILE_MAX_CONFIG, &buf, &len, err);
    if (rc)
        return rc;
    rc = mm_toml_load_string(t, path, buf, err);
    free(buf);
    return rc;
}
