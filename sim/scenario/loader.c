/* loader.c - the loader's primitives (loader.h) that the scenario reader
 * (read.c), the perturbation reader (perturb.c) and the --set overrides
 * (set.c) share: where each key was read, errors re-pointed at --set, and
 * the typed reads that do both.
 * Not for: which keys exist (keys.c) or walking a document (read.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/loader.h"

/* ---- the loader --------------------------------------------------------- */

void mm_ld_copy(char *dst, size_t dst_len, const char *src)
{
    size_t n = strlen(src);
    if (n >= dst_len)
        n = dst_len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* True when `path` is an overridden key or lies below one. */
static bool is_owned(const mm_loader *ld, const char *path)
{
    for (int i = 0; i < ld->n_owned; i++) {
        size_t n = strlen(ld->owned[i]);
        if (strncmp(path, ld->owned[i], n) == 0 && (path[n] == '\0' || path[n] == '.' || path[n] == '['))
            return true;
    }
    return false;
}

int mm_ld_fix(const mm_loader *ld, int rc, mm_err *err)
{
    if (rc && err->code == MM_EINPUT && is_owned(ld, err->key)) {
        mm_ld_copy(err->file, sizeof err->file, MM_SET_FILE);
        err->line = 0;
    }
    return rc;
}

void mm_ld_note(mm_loader *ld, const char *path, int line)
{
    mm_scenario *sc = ld->sc;
    if (sc->n_keys == sc->cap_keys) {
        int cap = sc->cap_keys ? 2 * sc->cap_keys : 64;
        void *p = realloc(sc->keys, (size_t)cap * sizeof *sc->keys);
        if (!p) {
            ld->oom = true;
            return;
        }
        sc->keys = p;
        sc->cap_keys = cap;
    }
    char *key = strdup(path);
    if (!key) {
        ld->oom = true;
        return;
    }
    bool set = is_owned(ld, path);
    sc->keys[sc->n_keys++] = (mm_scenario_key){.key = key, .file = set ? MM_SET_FILE : sc->source,
                                               .line = set ? 0 : line};
}

void mm_ld_join(char *out, const char *prefix, const char *key)
{
    mm_ld_copy(out, MM_PATH_MAX_LEN, prefix);
    size_t n = strlen(out);
    if (n > 0 && n + 1 < MM_PATH_MAX_LEN) {
        out[n++] = '.';
        out[n] = '\0';
    }
    mm_ld_copy(out + n, MM_PATH_MAX_LEN - n, key);
}

/* ---- typed reads that record and re-point ------------------------------- */

/* The common tail of the typed reads: re-point an error, note a key found. */
static int noted(mm_loader *ld, int rc, bool found, mm_node *map, const char *key, const char *path,
                 mm_err *err)
{
    if (rc)
        return mm_ld_fix(ld, rc, err);
    if (found)
        mm_ld_note(ld, path, mm_node_key_line(map, key));
    return 0;
}

int mm_ld_i64(mm_loader *ld, mm_node *map, const char *prefix, const char *key, int64_t min,
              int64_t max, int64_t *out, mm_err *err)
{
    char path[MM_PATH_MAX_LEN];
    mm_ld_join(path, prefix, key);
    bool found = false;
    int rc = mm_node_int(&ld->doc, map, key, path, min, max, out, &found, err);
    return noted(ld, rc, found, map, key, path, err);
}

int mm_ld_int(mm_loader *ld, mm_node *map, const char *prefix, const char *key, int min, int max,
              int *out, mm_err *err)
{
    int64_t v = *out;
    int rc = mm_ld_i64(ld, map, prefix, key, min, max, &v, err);
    if (!rc)
        *out = (int)v;
    return rc;
}

int mm_ld_double(mm_loader *ld, mm_node *map, const char *prefix, const char *key, double min,
                 double max, double *out, mm_err *err)
{
    char path[MM_PATH_MAX_LEN];
    mm_ld_join(path, prefix, key);
    bool found = false;
    int rc = mm_node_double(&ld->doc, map, key, path, min, max, out, &found, err);
    return noted(ld, rc, found, map, key, path, err);
}

int mm_ld_bool(mm_loader *ld, mm_node *map, const char *prefix, const char *key, bool *out,
               mm_err *err)
{
    char path[MM_PATH_MAX_LEN];
    mm_ld_join(path, prefix, key);
    bool found = false;
    int rc = mm_node_bool(&ld->doc, map, key, path, out, &found, err);
    return noted(ld, rc, found, map, key, path, err);
}

int mm_ld_enum(mm_loader *ld, mm_node *map, const char *prefix, const char *key,
               const char *const *choices, int *out, mm_err *err)
{
    char path[MM_PATH_MAX_LEN];
    mm_ld_join(path, prefix, key);
    bool found = false;
    int rc = mm_node_enum(&ld->doc, map, key, path, choices, out, &found, err);
    return noted(ld, rc, found, map, key, path, err);
}

int mm_ld_str(mm_loader *ld, mm_node *map, const char *prefix, const char *key, char *out,
              size_t len, bool *found, mm_err *err)
{
    char path[MM_PATH_MAX_LEN];
    mm_ld_join(path, prefix, key);
    int rc = mm_node_str(&ld->doc, map, key, path, out, len, found, err);
    return noted(ld, rc, *found, map, key, path, err);
}
