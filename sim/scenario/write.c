/* write.c - the texts made from the key table: the canonical text of a
 * scenario (what the store hashes to find duplicate runs: every row, in table
 * order, defaults filled in), the built-in default scenario (the table's
 * built-in column), and `mmsim help scenario`.
 *
 * The canonical text keeps the shape earlier releases wrote, byte for byte,
 * so that a database made by them still finds its runs: top-level sections
 * as block mappings, module layouts and the fixed workload as one-line flow
 * mappings, strings always double-quoted, numbers with %.17g.
 * Not for: reading (read.c). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/keys.h"
#include "scenario/loader.h"

static const void *field(const mm_scenario *sc, const mm_key *k)
{
    return (const char *)sc + k->off;
}

static int depth(const char *name)
{
    int d = 0;
    for (; *name; name++)
        d += *name == '.';
    return d;
}

static bool is_child(const mm_key *k, const mm_key *parent)
{
    size_t n = strlen(parent->name);
    return mm_key_parent_len(k->name) == n && !strncmp(k->name, parent->name, n);
}

/* One row's value; an inherited zero is written as the value it inherits,
 * so stating it or not gives the same text. */
static void value(mm_sbuf *b, const mm_scenario *sc, const mm_key *k)
{
    const void *f = field(sc, k);
    int count = k->count_off ? *(const int *)((const char *)sc + k->count_off) : 0;
    switch (k->type) {
    case MM_KT_STR:
        mm_sb_quote(b, *(char *const *)f);
        break;
    case MM_KT_WORD:
        mm_sb_printf(b, "%s", *(char *const *)f);
        break;
    case MM_KT_INT: {
        int v = *(const int *)f;
        mm_sb_printf(b, "%d", (k->flags & MM_KF_INHERIT) && v < 0 ? sc->train.zero : v);
        break;
    }
    case MM_KT_I64:
        mm_sb_printf(b, "%" PRId64, *(const int64_t *)f);
        break;
    case MM_KT_U64:
        mm_sb_printf(b, "%" PRIu64, *(const uint64_t *)f);
        break;
    case MM_KT_DOUBLE:
        mm_sb_printf(b, "%.17g", *(const double *)f);
        break;
    case MM_KT_BOOL:
        mm_sb_printf(b, "%s", *(const bool *)f ? "true" : "false");
        break;
    case MM_KT_ENUM: {
        int v = k->size == sizeof(bool) ? (int)*(const bool *)f : *(const int *)f;
        if ((k->flags & MM_KF_INHERIT) && v < 0) /* a module's recompute: the train's it inherits */
            v = (int)sc->train.recompute;
        mm_sb_printf(b, "%s", k->choices[v]);
        break;
    }
    case MM_KT_INT_LIST:
        mm_sb_printf(b, "[");
        for (int i = 0; i < count; i++)
            mm_sb_printf(b, "%s%d", i ? ", " : "", (*(int *const *)f)[i]);
        mm_sb_printf(b, "]");
        break;
    case MM_KT_NAME_LIST:
        mm_sb_printf(b, "[");
        for (int i = 0; i < count; i++) {
            mm_sb_printf(b, "%s", i ? ", " : "");
            mm_sb_quote(b, (*(char **const *)f)[i]);
        }
        mm_sb_printf(b, "]");
        break;
    default:
        break;
    }
}

/* A section or the fixed workload on one line: {k: v, ...}. */
static void flow(mm_sbuf *b, const mm_scenario *sc, const mm_key *k)
{
    mm_sb_printf(b, "{");
    bool first = true;
    for (const mm_key *c = k + 1; c < mm_keys + mm_n_keys; c++) {
        if (!is_child(c, k))
            continue;
        mm_sb_printf(b, "%s%s: ", first ? "" : ", ", mm_key_leaf(c->name));
        if (c->off == SIZE_MAX) /* workload.kind: the only kind of mapping */
            mm_sb_printf(b, "%s", c->choices[0]);
        else
            value(b, sc, c);
        first = false;
    }
    mm_sb_printf(b, "}");
}

static void workload(mm_sbuf *b, const mm_scenario *sc, const mm_key *k)
{
    if (sc->workload.kind == MM_WORKLOAD_TEXT)
        mm_sb_printf(b, "text");
    else if (sc->workload.kind == MM_WORKLOAD_FILE)
        mm_sb_quote(b, sc->workload.path);
    else
        flow(b, sc, k);
}

size_t mm_scenario_canonical(const mm_scenario *sc, char *buf, size_t len)
{
    mm_sbuf b = {.buf = buf, .len = buf ? len : 0, .n = 0};
    if (b.len)
        buf[0] = '\0';
    for (size_t i = 0; i < mm_n_keys; i++) {
        const mm_key *k = &mm_keys[i], *p = mm_key_parent(k);
        if (p && (p->type == MM_KT_WORKLOAD || (p->flags & MM_KF_FLOW)))
            continue; /* written on its parent's line */
        int ind = 2 * depth(k->name);
        const char *leaf = mm_key_leaf(k->name);
        if (k->type == MM_KT_PERTURB) {
            mm_sb_perturb(&b, &sc->perturb);
            continue;
        }
        if (k->type == MM_KT_MODEL) {
            mm_sb_model(&b, sc);
            continue;
        }
        mm_sb_printf(&b, "%*s%s:", ind, "", leaf);
        if (k->type == MM_KT_SECTION && !(k->flags & MM_KF_FLOW)) {
            mm_sb_printf(&b, "\n");
            continue;
        }
        mm_sb_printf(&b, " ");
        if (k->type == MM_KT_SECTION && !*(const bool *)field(sc, k))
            mm_sb_printf(&b, "null");
        else if (k->type == MM_KT_SECTION)
            flow(&b, sc, k);
        else if (k->type == MM_KT_WORKLOAD)
            workload(&b, sc, k);
        else
            value(&b, sc, k);
        mm_sb_printf(&b, "\n");
    }
    return b.n;
}

char *mm_scenario_canonical_alloc(const mm_scenario *sc)
{
    size_t need = mm_scenario_canonical(sc, NULL, 0) + 1;
    char *s = malloc(need);
    if (s)
        mm_scenario_canonical(sc, s, need);
    return s;
}

/* ---- the built-in default scenario ------------------------------------- */

/* True when the row or a row below it has a built-in value. */
static bool in_builtin(const mm_key *k)
{
    if (k->builtin)
        return true;
    size_t n = strlen(k->name);
    for (const mm_key *c = k + 1; c < mm_keys + mm_n_keys; c++)
        if (!strncmp(c->name, k->name, n) && c->name[n] == '.' && c->builtin)
            return true;
    return false;
}

static size_t default_text(char *buf, size_t len)
{
    mm_sbuf b = {.buf = buf, .len = buf ? len : 0, .n = 0};
    if (b.len)
        buf[0] = '\0';
    mm_sb_printf(&b, "# The built-in default scenario (`mmsim run` with no file), from the\n"
                     "# built-in column of the key table (sim/scenario/keys.c).\n");
    for (size_t i = 0; i < mm_n_keys; i++) {
        const mm_key *k = &mm_keys[i];
        if (!in_builtin(k))
            continue;
        mm_sb_printf(&b, "%*s%s:", 2 * depth(k->name), "", mm_key_leaf(k->name));
        mm_sb_printf(&b, k->builtin ? " %s\n" : "\n", k->builtin);
    }
    return b.n;
}

/* A malloc'd copy of what a (buf, len) -> length writer prints: measured
 * first, then written (NULL when out of memory). */
static char *printed(size_t (*text)(char *, size_t))
{
    size_t need = text(NULL, 0) + 1;
    char *s = malloc(need);
    if (s)
        text(s, need);
    return s;
}

char *mm_scenario_default_text(void)
{
    return printed(default_text);
}

/* ---- mmsim help scenario ----------------------------------------------- */

static void default_of(const mm_key *k, char *buf, size_t len)
{
    if (k->flags & MM_KF_REQUIRED)
        snprintf(buf, len, "required");
    else if (k->flags & MM_KF_INHERIT)
        snprintf(buf, len, "train.%s", mm_key_leaf(k->name));
    else if (k->flags & MM_KF_DERIVED)
        snprintf(buf, len, "micro_batch x dp");
    else if (k->type == MM_KT_SECTION)
        snprintf(buf, len, "%s", k->flags & MM_KF_ALWAYS ? "present" : "absent");
    else if (!k->def)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%s", k->def);
}

static size_t help_text(char *buf, size_t len)
{
    mm_sbuf b = {.buf = buf, .len = buf ? len : 0, .n = 0};
    if (b.len)
        buf[0] = '\0';
    mm_sb_printf(&b, "# Scenario keys, as a file nests them and --set takes them (dotted).  Per key:\n"
                     "#   KEY  default (when a file leaves it out)  built-in (in the built-in scenario)\n"
                     "#       type\n"
                     "#       what it is\n");
    for (size_t i = 0; i < mm_n_keys; i++) {
        const mm_key *k = &mm_keys[i];
        if (!k->doc)
            continue; /* a plain section */
        char type[160], def[64];
        mm_key_type_text(k, type, sizeof type);
        default_of(k, def, sizeof def);
        const char *bi = k->builtin ? k->builtin : "-";
        if (k->type == MM_KT_SECTION) /* a section is in the built-in scenario when a key below it is */
            bi = in_builtin(k) ? "present" : "absent";
        else if (k->type == MM_KT_WORKLOAD && !k->builtin && in_builtin(k))
            bi = "mapping"; /* the fixed sample of the workload.* rows */
        mm_sb_printf(&b, "%-32s default %-18s built-in %s\n        %s\n        %s\n", k->name, def, bi, type,
                     k->doc);
    }
    return b.n;
}

char *mm_scenario_help_text(void)
{
    return printed(help_text);
}
