/* set.c - `--set dotted.key=value`: puts an override into the parsed
 * scenario document before the reader checks it (read.c), creating the
 * mappings on the way, and remembers which paths it wrote so that errors
 * about them name "--set".  The value is read as YAML, so lists and mappings
 * work; a numeric part after a list selects that entry (perturb.0.factor).
 * Which keys exist is the reader's business: an unknown key is refused there,
 * with the nearest key of the table suggested.
 * Not for: checking values (the reader does, for files and overrides alike). */
#include "scenario/set.h"

#include <libfyaml.h>
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

static struct fy_node_pair *find_pair(struct fy_node *map, const char *key, size_t klen)
{
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(map, &it))) {
        struct fy_node *k = fy_node_pair_key(p);
        size_t n = 0;
        const char *s = k && fy_node_is_scalar(k) ? fy_node_get_scalar(k, &n) : NULL;
        if (s && n == klen && memcmp(s, key, n) == 0)
            return p;
    }
    return NULL;
}

/* Puts `value` (a node of the scenario document, consumed) at map[key],
 * replacing what was there. */
static int put(struct fy_document *fyd, struct fy_node *map, const char *key, size_t klen,
               struct fy_node *value)
{
    struct fy_node_pair *p = find_pair(map, key, klen);
    if (p)
        return fy_node_pair_set_value(p, value);
    struct fy_node *k = fy_node_create_scalar_copy(fyd, key, klen);
    if (!k) {
        fy_node_free(value);
        return -1;
    }
    if (fy_node_mapping_append(map, k, value) != 0) {
        fy_node_free(k);
        fy_node_free(value);
        return -1;
    }
    return 0;
}

int mm_scenario_apply_set(mm_loader *ld, const char *set, mm_err *err)
{
    const char *eq = strchr(set, '=');
    if (!eq)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "",
                          "expected KEY=VALUE (e.g. parallel.llm.tp=8), got '%s'", set);
    char key[PATH_MAX_LEN];
    size_t klen = (size_t)(eq - set);
    while (klen > 0 && (set[klen - 1] == ' ' || set[klen - 1] == '\t'))
        klen--;
    if (klen == 0)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "", "empty key in '%s'", set);
    if (klen >= sizeof key)
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, "", "key too long in '%s'", set);
    memcpy(key, set, klen);
    key[klen] = '\0';
    if (key[0] == '.' || key[klen - 1] == '.' || strstr(key, ".."))
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                          "empty part in the dotted key (write e.g. train.seq_len)");

    mm_doc val;
    mm_err verr;
    if (mm_doc_load_string(&val, SET_FILE, eq + 1, &verr) != 0)
        return mm_err_set(err, verr.code, SET_FILE, 0, key, "cannot read the value '%s': %s",
                          eq + 1, verr.msg);
    struct fy_node *vroot = mm_doc_root(&val);
    if (!vroot) {
        mm_doc_free(&val);
        return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key, "no value after '='");
    }
    struct fy_document *fyd = ld->doc.fyd;
    struct fy_node *copy = fy_node_copy(fyd, vroot);
    mm_doc_free(&val);
    if (!copy)
        return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");

    struct fy_node *cur = fy_document_root(fyd);
    if (mm_node_is_null(cur)) {
        cur = fy_node_create_mapping(fyd);
        if (!cur || fy_document_set_root(fyd, cur) != 0) {
            fy_node_free(copy);
            if (cur)
                fy_node_free(cur);
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
        }
    } else if (!fy_node_is_mapping(cur)) {
        fy_node_free(copy);
        return mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(cur), "",
                          "expected a mapping of keys at the top level");
    }
    /* Walk (creating or replacing with mappings) down to the last part.  A
     * numeric part after a list selects that entry, which must be a
     * mapping: perturb.0.factor=1.5 sets perturb[0].factor.  `canon` is the
     * key as errors spell it (perturb[0].factor). */
    const char *part = key;
    char canon[PATH_MAX_LEN] = "";
    for (const char *dot; (dot = strchr(part, '.')); part = dot + 1) {
        size_t n = (size_t)(dot - part);
        struct fy_node_pair *p = find_pair(cur, part, n);
        struct fy_node *next = p ? fy_node_pair_value(p) : NULL;
        size_t cl = strlen(canon);
        snprintf(canon + cl, sizeof canon - cl, "%s%.*s", cl ? "." : "", (int)n, part);
        if (next && fy_node_is_sequence(next) && dot[1] >= '0' && dot[1] <= '9') {
            const char *idx = dot + 1, *end = strchr(idx, '.');
            if (!end) {
                fy_node_free(copy);
                return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                                  "a list entry is replaced through one of its keys (e.g. perturb.0.factor=1.5) "
                                  "or by giving the whole list");
            }
            long i = strtol(idx, NULL, 10);
            struct fy_node *item = i < fy_node_sequence_item_count(next) ? fy_node_sequence_get_by_index(next, (int)i)
                                                                          : NULL;
            if (!item || !fy_node_is_mapping(item)) {
                fy_node_free(copy);
                return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                                  "index %ld is out of range or not a mapping (the list has %d entries)", i,
                                  fy_node_sequence_item_count(next));
            }
            cl = strlen(canon);
            snprintf(canon + cl, sizeof canon - cl, "[%ld]", i);
            cur = item;
            dot = end;
            continue;
        }
        if (next && fy_node_is_mapping(next)) {
            cur = next;
            continue;
        }
        if (dot[1] >= '0' && dot[1] <= '9') { /* an index into a list that is not there */
            fy_node_free(copy);
            return mm_err_set(err, MM_EINPUT, SET_FILE, 0, key,
                              "index %ld is out of range: '%s' holds no list (0 entries); "
                              "give the whole list instead, e.g. --set '%s=[{...}]'",
                              strtol(dot + 1, NULL, 10), canon, canon);
        }
        next = fy_node_create_mapping(fyd);
        if (!next || put(fyd, cur, part, n, next) != 0) {
            fy_node_free(copy);
            return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
        }
        char prefix[PATH_MAX_LEN];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(dot - key), key);
        int rc = own(ld, prefix, err);
        if (rc) {
            fy_node_free(copy);
            return rc;
        }
        cur = next;
    }
    if (put(fyd, cur, part, strlen(part), copy) != 0)
        return mm_err_set(err, MM_EINTERNAL, SET_FILE, 0, key, "out of memory");
    if (strchr(canon, '[')) { /* the key as errors spell it */
        char path[PATH_MAX_LEN];
        mm_ld_join(path, canon, part);
        return own(ld, path, err);
    }
    return own(ld, key, err);
}

