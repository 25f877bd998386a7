/* set.c - `--set dotted.key=value`: puts an override into the parsed
 * scenario document before the reader checks it (read.c), creating the
 * mappings on the way, and remembers which paths it wrote so that errors
 * about them name "--set".  The value is read as YAML, so lists and mappings
 * work; a numeric part after a list selects that entry (perturb.0.factor).
 * Which keys exist is the reader's business: an unknown key is refused there,
 * with the nearest key of the table suggested.
 * Not for: checking values (the reader does, for files and overrides alike). */
#include "scenario/set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SET_FILE MM_SET_FILE
#define PATH_MAX_LEN MM_PATH_MAX_LEN

static int own(mm_loader *ld, const char *path, mm_err *err)
{
    if (ld->n_owned == ld->cap_owned) {
        int cap = ld->cap_owned ? 2 * ld->cap_owned : 16;
        void *p = realloc(ld->owned, (size_t)cap * sizeof *ld->owned);
        if (!p)
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, path, "out of memory");
        ld->owned = p;
        ld->cap_owned = cap;
    }
    mm_ld_copy(ld->owned[ld->n_owned++], PATH_MAX_LEN, path);
    return 0;
}

/* Puts `value` (a node of the scenario document) at map[key], replacing
 * what was there. */
static int put(mm_doc *doc, mm_node *map, const char *key, size_t klen, mm_node *value)
{
    return mm_node_put(doc, map, key, klen, value);
}

/* map[key] when it is a collection that an alias shares with another place:
 * replaced by a copy of its own first, so that writing into it changes only
 * this place (an alias stands for a copy of what it names). */
static mm_node *unshare(mm_doc *doc, mm_node *map, const char *key, size_t klen, mm_node *next)
{
    if (!next || !mm_node_is_shared(next) || mm_node_is_scalar(next))
        return next;
    mm_node *copy = mm_doc_copy(doc, next);
    return copy && put(doc, map, key, klen, copy) == 0 ? copy : NULL;
}

static mm_node *get_n(const mm_node *map, const char *key, size_t klen)
{
    for (int i = 0; i < mm_node_count(map); i++) {
        size_t n = 0;
        const char *s = mm_node_scalar(mm_node_pair_key(map, i), &n);
        if (s && n == klen && memcmp(s, key, n) == 0)
            return mm_node_pair_value(map, i);
    }
    return NULL;
}

/* The dotted key of `set` (before its '=', trailing blanks cut) into key
 * (PATH_MAX_LEN bytes), checked for empty parts; *eqp: its '='. */
static int split_key(const char *set, char *key, const char **eqp, mm_err *err)
{
    const char *eq = strchr(set, '=');
    *eqp = eq;
    if (!eq)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "",
                          "expected KEY=VALUE (e.g. parallel.llm.tp=8), got '%s'", set);
    size_t klen = (size_t)(eq - set);
    while (klen > 0 && (set[klen - 1] == ' ' || set[klen - 1] == '\t'))
        klen--;
    if (klen == 0)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "", "empty key in '%s'", set);
    if (klen >= PATH_MAX_LEN)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "", "key too long in '%s'", set);
    memcpy(key, set, klen);
    key[klen] = '\0';
    if (key[0] == '.' || key[klen - 1] == '.' || strstr(key, ".."))
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                          "empty part in the dotted key (write e.g. train.seq_len)");

    return 0;
}

/* The value after '=' read as YAML and copied into the scenario document
 * (*copy), so lists and mappings work as in a file. */
static int read_value(mm_loader *ld, const char *eq, const char *key, mm_node **copy_out, mm_err *err)
{
    mm_doc val;
    mm_err verr;
    if (mm_doc_load_string(&val, SET_FILE, eq + 1, &verr) != 0)
        return mm_err_set(err, verr.code, SET_FILE, 0, key, "cannot read the value '%s': %s",
                          eq + 1, verr.msg);
    mm_node *vroot = mm_doc_root(&val);
    if (!vroot) {
        mm_doc_free(&val);
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key, "no value after '='");
    }
    mm_doc *sdoc = &ld->doc;
    mm_node *copy = mm_doc_copy(sdoc, vroot);
    mm_doc_free(&val);
    if (!copy)
        return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
    *copy_out = copy;
    return 0;
}

/* The document's root, made an empty mapping when the scenario is empty
 * (*cur); anything but a mapping there is refused. */
static int root_mapping(mm_loader *ld, const char *key, mm_node **cur_out, mm_err *err)
{
    mm_doc *sdoc = &ld->doc;
    mm_node *cur = mm_doc_root(sdoc);
    if (mm_node_is_null(cur)) {
        cur = mm_doc_new_mapping(sdoc);
        if (!cur)
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
        mm_doc_set_root(sdoc, cur);
    } else if (!mm_node_is_mapping(cur)) {
        return mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(cur), "",
                          "expected a mapping of keys at the top level");
    }
    *cur_out = cur;
    return 0;
}

/* The entry of `list` that the numeric part after *dotp selects (a mapping
 * of its own, copied when an alias shares it) into *item; *dotp moves to
 * the dot after the index and canon (PATH_MAX_LEN bytes) gains "[i]". */
static int list_entry(mm_doc *sdoc, mm_node *list, const char *key, char *canon, mm_node **item_out,
                      const char **dotp, mm_err *err)
{
    const char *idx = *dotp + 1, *end = strchr(idx, '.');
    if (!end) {
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                          "a list entry is replaced through one of its keys (e.g. perturb.0.factor=1.5) "
                          "or by giving the whole list");
    }
    long i = strtol(idx, NULL, 10);
    mm_node *item = i < mm_node_count(list) ? mm_node_item(list, (int)i) : NULL;
    if (item && mm_node_is_shared(item)) {
        item = mm_doc_copy(sdoc, item);
        if (!item || mm_node_set_item(list, (int)i, item) != 0)
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
    }
    if (!item || !mm_node_is_mapping(item)) {
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                          "index %ld is out of range or not a mapping (the list has %d entries)", i,
                          mm_node_count(list));
    }
    size_t cl = strlen(canon);
    snprintf(canon + cl, PATH_MAX_LEN - cl, "[%ld]", i);
    *item_out = item;
    *dotp = end;
    return 0;
}


int mm_scenario_apply_set(mm_loader *ld, const char *set, mm_err *err)
{
    char key[PATH_MAX_LEN];
    const char *eq = NULL;
    mm_node *copy = NULL;
    int src = split_key(set, key, &eq, err);
    if (src || (src = read_value(ld, eq, key, &copy, err)))
        return src;
    mm_doc *sdoc = &ld->doc;
    mm_node *cur = NULL;
    if ((src = root_mapping(ld, key, &cur, err)))
        return src;
    /* Walk (creating or replacing with mappings) down to the last part.  A
     * numeric part after a list selects that entry, which must be a
     * mapping: perturb.0.factor=1.5 sets perturb[0].factor.  `canon` is the
     * key as errors spell it (perturb[0].factor). */
    const char *part = key;
    char canon[PATH_MAX_LEN] = "";
    for (const char *dot; (dot = strchr(part, '.')); part = dot + 1) {
        size_t n = (size_t)(dot - part);
        mm_node *next = unshare(sdoc, cur, part, n, get_n(cur, part, n));
        if (!next && get_n(cur, part, n))
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
        size_t cl = strlen(canon);
        snprintf(canon + cl, sizeof canon - cl, "%s%.*s", cl ? "." : "", (int)n, part);
        if (next && mm_node_is_sequence(next) && dot[1] >= '0' && dot[1] <= '9') {
            if ((src = list_entry(sdoc, next, key, canon, &cur, &dot, err)))
                return src;
            continue;
        }
        if (next && mm_node_is_mapping(next)) {
            cur = next;
            continue;
        }
        if (dot[1] >= '0' && dot[1] <= '9') { /* an index into a list that is not there */
            return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                              "index %ld is out of range: '%s' holds no list (0 entries); "
                              "give the whole list instead, e.g. --set '%s=[{...}]'",
                              strtol(dot + 1, NULL, 10), canon, canon);
        }
        next = mm_doc_new_mapping(sdoc);
        if (!next || put(sdoc, cur, part, n, next) != 0) {
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
        }
        char prefix[PATH_MAX_LEN];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(dot - key), key);
        int rc = own(ld, prefix, err);
        if (rc) {
            return rc;
        }
        cur = next;
    }
    if (put(sdoc, cur, part, strlen(part), copy) != 0)
        return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
    if (strchr(canon, '[')) { /* the key as errors spell it */
        char path[PATH_MAX_LEN];
        mm_ld_join(path, canon, part);
        return own(ld, path, err);
    }
    return own(ld, key, err);
}

