/* read.c - turns a scenario YAML file (or the built-in default) plus
 * `--set dotted.key=value` overrides into a validated mm_scenario, walking
 * the key table (keys.c): each row is read with its type and range, keys the
 * table does not know are refused with the nearest known key suggested, and
 * rows a file leaves out keep their default.
 *
 * Overrides are applied to the parsed document before anything is checked
 * (set.c), so one validator serves files and command lines alike.  To still
 * name the right origin in errors, the loader remembers which dotted paths
 * an override wrote (the key itself and any mapping it had to create on the
 * way); an error about such a path, or about anything below it, is reported
 * as file "--set", line 0.
 *
 * Not for: rules that need the model or the topology (degrees against the
 * GPU count, layers against pp, batch against micro_batch x dp): the run
 * layer checks those and reports them with mm_scenario_fail(). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/keys.h"
#include "scenario/loader.h"
#include "scenario/set.h"

/* A scalar string of any length into a new allocation (*out replaced). */
static int dup_str(mm_loader *ld, mm_node *node, const char *path, char **out, mm_err *err)
{
    size_t full = 0;
    if (node && mm_node_is_scalar(node) && !mm_node_is_null(node) && !mm_node_scalar(node, &full))
        full = 0;
    char *s = malloc(full + 1);
    if (!s)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, mm_node_line(node), path, "out of memory");
    int rc = mm_node_as_str(&ld->doc, node, path, s, full + 1, err);
    if (rc) {
        free(s);
        return mm_ld_fix(ld, rc, err);
    }
    free(*out);
    *out = s;
    return 0;
}

/* ---- unknown keys --------------------------------------------------------- */

/* The known key closest to `full` (an unknown dotted key): a sibling whose
 * leaf is near the unknown leaf, else any row whose leaf is near it
 * (`seq_len` at the top level means train.seq_len), else any row near the
 * whole name.  NULL when nothing is close. */
static const char *nearest_key(const char *full, size_t plen)
{
    const char **sib = calloc(mm_n_keys + 1, sizeof *sib), **leaf = calloc(mm_n_keys + 1, sizeof *leaf);
    const char **all = calloc(mm_n_keys + 1, sizeof *all);
    const char *best = NULL;
    if (sib && leaf && all) {
        size_t ns = 0;
        for (size_t i = 0; i < mm_n_keys; i++) {
            const char *name = mm_keys[i].name;
            all[i] = name;
            leaf[i] = mm_key_leaf(name);
            if (mm_key_parent_len(name) == plen && !strncmp(name, full, plen))
                sib[ns++] = leaf[i];
        }
        const char *lf = mm_key_leaf(full);
        const char *n = mm_nearest(lf, sib);
        for (size_t i = 0; n && i < mm_n_keys; i++) /* the row of that sibling */
            if (leaf[i] == n)
                best = mm_keys[i].name;
        if (!best && (n = mm_nearest(lf, leaf)))
            for (size_t i = 0; i < mm_n_keys && !best; i++)
                if (leaf[i] == n)
                    best = mm_keys[i].name;
        if (!best)
            best = mm_nearest(full, all);
    }
    free(sib);
    free(leaf);
    free(all);
    return best;
}

/* Refuses keys of mapping `map` (the section `prefix`, "" for the top) that
 * the table does not have below `prefix`. */
static int check_children(mm_loader *ld, mm_node *map, const char *prefix, mm_err *err)
{
    if (!map)
        return 0;
    if (!mm_node_is_mapping(map))
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(map), prefix,
                                        "expected a mapping of keys%s%s", prefix[0] ? " under " : "", prefix),
                         err);
    for (int pi = 0; pi < mm_node_count(map); pi++) {
        mm_node *k = mm_node_pair_key(map, pi);
        size_t n = 0;
        const char *s = k && mm_node_is_scalar(k) ? mm_node_scalar(k, &n) : NULL;
        if (!s || n == 0)
            return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(k ? k : map), prefix,
                                            "a key must be a plain name, not %s",
                                            !k || !mm_node_is_scalar(k) ? "a list or a mapping" : "empty"),
                             err);
        char name[MM_PATH_MAX_LEN], full[MM_PATH_MAX_LEN];
        snprintf(name, sizeof name, "%.*s", (int)n, s);
        mm_ld_join(full, prefix, name);
        const mm_key *row = mm_key_find(full);
        if (row && mm_key_parent_len(full) == strlen(prefix))
            continue;
        const char *near = nearest_key(full, strlen(prefix));
        int line = mm_node_line(k);
        if (near)
            return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, line, full,
                                            "unknown key '%s' (did you mean '%s'?)", full, near),
                             err);
        char allowed[400] = "";
        size_t used = 0, plen = strlen(prefix);
        for (size_t i = 0; i < mm_n_keys && used < sizeof allowed; i++)
            if (mm_key_parent_len(mm_keys[i].name) == plen && !strncmp(mm_keys[i].name, prefix, plen))
                used += (size_t)snprintf(allowed + used, sizeof allowed - used, "%s%s", used ? ", " : "",
                                         mm_key_leaf(mm_keys[i].name));
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, line, full,
                                        "unknown key '%s' (allowed keys%s%s: %s; `mmsim help scenario` lists them all)",
                                        full, plen ? " under " : "", prefix, allowed),
                         err);
    }
    return 0;
}

/* ---- rows ------------------------------------------------------------------ */

static void *field(mm_scenario *sc, const mm_key *k)
{
    return (char *)sc + k->off;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A list row: an int list (layers_per_stage) or a name list (frozen, kept
 * sorted and unique: order and repeats carry no meaning there, and the
 * canonical text relies on it). */
static int read_list(mm_loader *ld, const mm_key *k, mm_node *map, mm_err *err)
{
    const char *leaf = mm_key_leaf(k->name), *path = k->name;
    mm_node *v = mm_node_get(map, leaf);
    if (!v)
        return 0;
    mm_ld_note(ld, path, mm_node_key_line(map, leaf));
    int *count = (int *)((char *)ld->sc + k->count_off);
    bool names = k->type == MM_KT_NAME_LIST;
    if (mm_node_is_null(v))
        return 0;
    if (!mm_node_is_sequence(v))
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), path, "%s",
                                        names ? "expected a list of module names, e.g. [vision]"
                                              : "expected a list of layer counts, one per stage, e.g. [2, 3, 3, 2]"),
                         err);
    int n = mm_node_count(v);
    if (!names && n > MM_MAX_PP)
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), path, "at most %d stages",
                                        MM_MAX_PP),
                         err);
    void **slot = field(ld->sc, k);
    void *arr = calloc(n > 0 ? (size_t)n : 1, names ? sizeof(char *) : sizeof(int));
    if (!arr)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, mm_node_line(v), path, "out of memory");
    *slot = arr;
    *count = 0;
    int it = 0;
    mm_node *item;
    while ((item = mm_node_item(v, it++))) {
        int rc;
        if (names) {
            char **s = (char **)arr + *count;
            if ((rc = dup_str(ld, item, path, s, err)))
                return rc;
            (*count)++;
            if (!(*s)[0])
                return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(item), path,
                                                "empty module name"),
                                 err);
        } else {
            int64_t x = 0;
            if ((rc = mm_node_as_int(&ld->doc, item, path, k->min, k->max, &x, err)))
                return mm_ld_fix(ld, rc, err);
            ((int *)arr)[(*count)++] = (int)x;
        }
    }
    if (names) {
        char **s = arr;
        qsort(s, (size_t)*count, sizeof *s, cmp_name);
        int u = 0;
        for (int i = 0; i < *count; i++) {
            if (u > 0 && !strcmp(s[u - 1], s[i]))
                free(s[i]);
            else
                s[u++] = s[i];
        }
        *count = u;
    }
    return 0;
}

/* One row of a scalar type (or a list) from mapping `map`; *found says
 * whether the key was there. */
static int read_row(mm_loader *ld, const mm_key *k, mm_node *map, bool *found, mm_err *err)
{
    const char *leaf = mm_key_leaf(k->name);
    char prefix[MM_PATH_MAX_LEN];
    snprintf(prefix, sizeof prefix, "%.*s", (int)mm_key_parent_len(k->name), k->name);
    *found = mm_node_get(map, leaf) != NULL;
    void *f = field(ld->sc, k);
    switch (k->type) {
    case MM_KT_INT:
        return mm_ld_int(ld, map, prefix, leaf, (int)k->min, (int)k->max, f, err);
    case MM_KT_I64:
        return mm_ld_i64(ld, map, prefix, leaf, k->min, k->max, f, err);
    case MM_KT_U64: {
        int64_t v = (int64_t) * (uint64_t *)f;
        int rc = mm_ld_i64(ld, map, prefix, leaf, k->min, k->max, &v, err);
        *(uint64_t *)f = (uint64_t)v;
        return rc;
    }
    case MM_KT_DOUBLE:
        return mm_ld_double(ld, map, prefix, leaf, k->dmin, k->dmax, f, err);
    case MM_KT_BOOL:
        return mm_ld_bool(ld, map, prefix, leaf, f, err);
    case MM_KT_ENUM: {
        bool is_bool = k->size == sizeof(bool);
        int v = is_bool ? (int)*(bool *)f : *(int *)f;
        int rc = mm_ld_enum(ld, map, prefix, leaf, k->choices, &v, err);
        if (is_bool)
            *(bool *)f = v != 0;
        else
            *(int *)f = v;
        return rc;
    }
    case MM_KT_STR:
    case MM_KT_WORD:
        if (!*found)
            return 0;
        mm_ld_note(ld, k->name, mm_node_key_line(map, leaf));
        return dup_str(ld, mm_node_get(map, leaf), k->name, f, err);
    case MM_KT_INT_LIST:
    case MM_KT_NAME_LIST:
        return read_list(ld, k, map, err);
    case MM_KT_MODEL:
        return mm_ld_model(ld, map, found, err);
    default:
        return 0;
    }
}

/* workload: `text`, a file path, or {kind: fixed, images, tiles, text_tokens,
 * audio_seconds}. */
static int read_workload(mm_loader *ld, const mm_key *wk, mm_node *root, mm_err *err)
{
    static const char bad[] = "expected `text`, a mixture or trace file, or "
                              "{kind: fixed, images: N, tiles: N, text_tokens: N}";
    mm_scenario *sc = ld->sc;
    mm_node *v = mm_node_get(root, "workload");
    if (!v)
        return 0;
    int keyline = mm_node_key_line(root, "workload");
    mm_ld_note(ld, "workload", keyline);
    if (mm_node_is_null(v) || mm_node_is_sequence(v))
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, keyline, "workload", bad), err);
    if (mm_node_is_scalar(v)) {
        /* A plain number or boolean is a slip, not a file name. */
        mm_err scratch;
        double num;
        bool flag;
        if (!mm_node_is_quoted(v) &&
            (mm_node_as_double(&ld->doc, v, "workload", -1e308, 1e308, &num, &scratch) == 0 ||
             mm_node_bool(&ld->doc, root, "workload", "workload", &flag, NULL, &scratch) == 0))
            return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), "workload", bad), err);
        int rc = dup_str(ld, v, "workload", &sc->workload.path, err);
        if (rc)
            return rc;
        sc->workload.kind = strcmp(sc->workload.path, "text") ? MM_WORKLOAD_FILE : MM_WORKLOAD_TEXT;
        if (sc->workload.kind == MM_WORKLOAD_TEXT)
            sc->workload.path[0] = '\0';
        return 0;
    }
    int rc = check_children(ld, v, "workload", err);
    int kind = -1;
    sc->workload.kind = MM_WORKLOAD_FIXED;
    if (!rc)
        rc = mm_ld_enum(ld, v, "workload", "kind", mm_key_find("workload.kind")->choices, &kind, err);
    if (!rc && kind < 0)
        rc = mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, keyline, "workload.kind",
                                      "missing: a workload mapping needs `kind: fixed`"),
                       err);
    size_t plen = strlen(wk->name);
    for (const mm_key *k = wk + 1; !rc && k < mm_keys + mm_n_keys && mm_key_parent_len(k->name) == plen &&
                                   !strncmp(k->name, wk->name, plen);
         k++) {
        bool found;
        if (k->off != SIZE_MAX)
            rc = read_row(ld, k, v, &found, err);
    }
    if (!rc && sc->workload.images == 0 && sc->workload.text_tokens == 0 && sc->workload.audio_seconds == 0)
        rc = mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, keyline, "workload",
                                      "a fixed sample needs images, text_tokens or audio_seconds above 0"),
                       err);
    return rc;
}

/* A section row: checks its keys; node[i] is the mapping, or NULL when it
 * is absent or null (its rows then keep their defaults). */
static int read_section(mm_loader *ld, const mm_key *k, mm_node *parent, mm_node **out,
                        mm_err *err)
{
    const char *leaf = mm_key_leaf(k->name);
    mm_node *v = parent ? mm_node_get(parent, leaf) : NULL;
    *out = NULL;
    if (k->off != SIZE_MAX)
        *(bool *)field(ld->sc, k) = (k->flags & MM_KF_ALWAYS) || (v && !mm_node_is_null(v));
    if (!v)
        return 0;
    mm_ld_note(ld, k->name, mm_node_key_line(parent, leaf));
    if (mm_node_is_null(v))
        return 0;
    int rc = check_children(ld, v, k->name, err);
    if (!rc)
        *out = v;
    return rc;
}

/* Index of each row's parent section row (-1 at the top level). */
static void parents(int *par)
{
    for (size_t i = 0; i < mm_n_keys; i++) {
        size_t n = mm_key_parent_len(mm_keys[i].name);
        par[i] = -1;
        for (size_t j = i; n && j-- > 0;)
            if (strlen(mm_keys[j].name) == n && !strncmp(mm_keys[j].name, mm_keys[i].name, n)) {
                par[i] = (int)j;
                break;
            }
    }
}

static int read_rows(mm_loader *ld, mm_node *root, mm_node **node, bool *given, const int *par,
                     mm_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < mm_n_keys && !rc; i++) {
        const mm_key *k = &mm_keys[i];
        int p = par[i];
        if (p >= 0 && mm_keys[p].type == MM_KT_WORKLOAD)
            continue; /* read with the workload */
        mm_node *map = p < 0 ? root : node[p];
        if (k->type == MM_KT_SECTION)
            rc = read_section(ld, k, map, &node[i], err);
        else if (!map)
            given[i] = false;
        else if (k->type == MM_KT_WORKLOAD)
            rc = read_workload(ld, k, map, err);
        else if (k->type == MM_KT_PERTURB)
            rc = mm_ld_perturb(ld, map, err);
        else
            rc = read_row(ld, k, map, &given[i], err);
        if (!rc && (k->flags & MM_KF_REQUIRED) && !given[i])
            rc = mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->sc->source, 0, k->name,
                                          "missing: the scenario must name `%s` (%s)", k->name, k->doc),
                           err);
    }
    return rc;
}

static int read_root(mm_loader *ld, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    mm_node *root = mm_doc_root(&ld->doc);
    if (mm_node_is_null(root))
        root = NULL;
    int rc = check_children(ld, root, "", err);
    mm_node **node = calloc(mm_n_keys, sizeof *node);
    bool *given = calloc(mm_n_keys, sizeof *given);
    int *par = calloc(mm_n_keys, sizeof *par);
    if (!node || !given || !par)
        rc = mm_err_set(err, MM_EINTERNAL, sc->source, 0, "", "out of memory");
    if (!rc) {
        parents(par);
        rc = read_rows(ld, root, node, given, par, err);
    }
    free(node);
    free(given);
    free(par);
    sc->perturb.seed = sc->seed;
    if (!rc && sc->train.global_batch == 0) /* not given (>= 1 when given): Megatron-LM's default */
        sc->train.global_batch = sc->train.micro_batch * sc->parallel.llm.lay.dp;
    if (!rc && ld->oom)
        rc = mm_err_set(err, MM_EINTERNAL, sc->source, 0, "", "out of memory");
    return rc;
}

/* ---- defaults ----------------------------------------------------------- */

/* Sets one row's field from its default text (keys.c spells them). */
static int set_default(mm_scenario *sc, const mm_key *k)
{
    void *f = field(sc, k);
    const char *d = k->def;
    switch (k->type) {
    case MM_KT_SECTION:
        *(bool *)f = (k->flags & MM_KF_ALWAYS) != 0;
        return 0;
    case MM_KT_INT:
        *(int *)f = k->flags & MM_KF_INHERIT ? -1 : d ? (int)strtol(d, NULL, 10) : 0;
        return 0;
    case MM_KT_I64:
        *(int64_t *)f = d ? strtoll(d, NULL, 10) : 0;
        return 0;
    case MM_KT_U64:
        *(uint64_t *)f = d ? strtoull(d, NULL, 10) : 0;
        return 0;
    case MM_KT_DOUBLE:
        *(double *)f = d ? strtod(d, NULL) : 0;
        return 0;
    case MM_KT_BOOL:
        *(bool *)f = d && !strcmp(d, "true");
        return 0;
    case MM_KT_ENUM: {
        int v = k->flags & MM_KF_INHERIT ? -1 : 0; /* a module's recompute: train's */
        for (int i = 0; d && k->choices[i]; i++)
            if (!strcmp(k->choices[i], d))
                v = i;
        if (k->size == sizeof(bool))
            *(bool *)f = v != 0;
        else
            *(int *)f = v;
        return 0;
    }
    case MM_KT_STR:
    case MM_KT_WORD:
    case MM_KT_MODEL:
        /* a default string is a bare word or "" */
        *(char **)f = strdup(d && strcmp(d, "\"\"") ? d : "");
        return *(char **)f ? 0 : -1;
    default: /* lists and perturb: empty (zeroed) */
        return 0;
    }
}

static int set_defaults(mm_scenario *sc)
{
    for (size_t i = 0; i < mm_n_keys; i++)
        if (mm_keys[i].off != SIZE_MAX && set_default(sc, &mm_keys[i]))
            return -1;
    sc->workload.kind = MM_WORKLOAD_TEXT;
    sc->workload.path = strdup("");
    return sc->workload.path ? 0 : -1;
}

/* ---- public ------------------------------------------------------------- */

static int load(mm_scenario *sc, const char *source, const char *path, const char *text,
                const char *const *sets, int n_sets, mm_err *err)
{
    mm_err e;
    mm_err_clear(&e);
    memset(sc, 0, sizeof *sc);
    mm_loader ld = {.sc = sc};
    int rc = 0;
    if (!(sc->source = strdup(source)) || set_defaults(sc))
        rc = mm_err_set(&e, MM_EINTERNAL, source, 0, "", "out of memory");
    if (!rc)
        rc = path ? mm_doc_load_file(&ld.doc, path, &e) : mm_doc_load_string(&ld.doc, sc->source, text, &e);
    for (int i = 0; !rc && i < n_sets; i++)
        rc = mm_scenario_apply_set(&ld, sets[i], &e);
    if (!rc)
        rc = read_root(&ld, &e);
    mm_doc_free(&ld.doc);
    free(ld.owned);
    if (rc) {
        mm_scenario_free(sc);
        if (err)
            *err = e;
    }
    return rc;
}

int mm_scenario_load(mm_scenario *sc, const char *path, const char *const *sets, int n_sets, mm_err *err)
{
    if (path)
        return load(sc, path, path, NULL, sets, n_sets, err);
    char *text = mm_scenario_default_text();
    if (!text) {
        memset(sc, 0, sizeof *sc);
        return mm_err_set(err, MM_EINTERNAL, "<default>", 0, "", "out of memory");
    }
    int rc = load(sc, "<default>", NULL, text, sets, n_sets, err);
    free(text);
    return rc;
}

int mm_scenario_load_text(mm_scenario *sc, const char *name, const char *text, const char *const *sets,
                          int n_sets, mm_err *err)
{
    return load(sc, name ? name : "<text>", NULL, text, sets, n_sets, err);
}

void mm_scenario_free(mm_scenario *sc)
{
    if (!sc)
        return;
    for (size_t i = 0; i < mm_n_keys; i++) {
        const mm_key *k = &mm_keys[i];
        if (k->off == SIZE_MAX)
            continue;
        if (k->type == MM_KT_STR || k->type == MM_KT_WORD || k->type == MM_KT_INT_LIST || k->type == MM_KT_MODEL)
            free(*(void **)field(sc, k));
        if (k->type == MM_KT_NAME_LIST) {
            char **s = *(char ***)field(sc, k);
            for (int j = 0; s && j < *(int *)((char *)sc + k->count_off); j++)
                free(s[j]);
            free(s);
        }
    }
    free(sc->source);
    free(sc->model_text);
    free(sc->workload.path);
    free(sc->perturb.e);
    for (int i = 0; i < sc->n_keys; i++)
        free(sc->keys[i].key);
    free(sc->keys);
    memset(sc, 0, sizeof *sc);
}

int mm_scenario_note_key(mm_scenario *sc, const char *key, const char *file, int line)
{
    for (int i = 0; i < sc->n_keys; i++)
        if (!strcmp(sc->keys[i].key, key)) {
            sc->keys[i].file = file;
            sc->keys[i].line = line;
            return 0;
        }
    mm_loader ld = {.sc = sc};
    mm_ld_note(&ld, key, line);
    if (ld.oom)
        return -1;
    sc->keys[sc->n_keys - 1].file = file;
    return 0;
}

bool mm_scenario_key_given(const mm_scenario *sc, const char *key)
{
    for (int i = 0; i < sc->n_keys; i++)
        if (!strcmp(sc->keys[i].key, key))
            return true;
    return false;
}

int mm_scenario_fail(const mm_scenario *sc, mm_err *err, const char *key, const char *fmt, ...)
{
    const char *file = sc->source;
    int line = 0;
    for (int i = 0; i < sc->n_keys; i++) {
        if (strcmp(sc->keys[i].key, key) == 0) {
            file = sc->keys[i].file;
            line = sc->keys[i].line;
            break;
        }
    }
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mm_err_set(err, MM_EINPUT, file, line, key, "%s", msg);
}
