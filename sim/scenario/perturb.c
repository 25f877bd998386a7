/* perturb.c - the `perturb:` list of a scenario: reading its entries (each
 * kind has its own keys, checked here with their lines) into mm_perturb
 * (hw/perturb.h), and writing them back as canonical text.  The key table
 * (keys.c) has one row for the whole list; the keys of each kind are:
 *   slow_gpu   gpus, nodes, fraction, factor (required: time x factor)
 *   jitter     gpus, nodes, fraction, cv (required), dist (lognormal)
 *   hbm        gpus, nodes, fraction, bandwidth and/or capacity (factors)
 *   nic        nodes, nics, factor, latency_us
 *   rail       rails (required), factor, latency_us
 *   switch     leaves and/or spines, factor, latency_us, failed
 *   link       leaf, spine (required), factor, latency_us, failed
 *   node_group group, nic_gbit_s (both required)
 *   stall      every, seconds (both required)
 * Not for: applying perturbations (the hw layer does that). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/loader.h"

/* Keys of each perturbation kind, in mm_perturb_kind order (hw/perturb.h). */
static const char *const perturb_keys[MM_PT_COUNT][8] = {
    [MM_PT_SLOW_GPU] = {"kind", "gpus", "nodes", "fraction", "factor", NULL},
    [MM_PT_JITTER] = {"kind", "gpus", "nodes", "fraction", "cv", "dist", NULL},
    [MM_PT_HBM] = {"kind", "gpus", "nodes", "fraction", "bandwidth", "capacity", NULL},
    [MM_PT_NIC] = {"kind", "nodes", "nics", "factor", "latency_us", NULL},
    [MM_PT_RAIL] = {"kind", "rails", "factor", "latency_us", NULL},
    [MM_PT_SWITCH] = {"kind", "leaves", "spines", "factor", "latency_us", "failed", NULL},
    [MM_PT_LINK] = {"kind", "leaf", "spine", "factor", "latency_us", "failed", NULL},
    [MM_PT_NODE_GROUP] = {"kind", "group", "nic_gbit_s", NULL},
    [MM_PT_STALL] = {"kind", "every", "seconds", NULL},
};
static const char *const jitter_dists[] = {"lognormal", NULL};

/* ---- perturb ------------------------------------------------------------ */

static int perturb_bad(mm_loader *ld, mm_err *err, mm_node *m, const char *prefix, const char *key,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* An input error at `prefix`.key (the key's line, else the entry's). */
static int perturb_bad(mm_loader *ld, mm_err *err, mm_node *m, const char *prefix, const char *key,
                       const char *fmt, ...)
{
    char path[MM_PATH_MAX_LEN], msg[200];
    mm_ld_join(path, prefix, key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = mm_node_key_line(m, key);
    return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, line ? line : mm_node_line(m), path, "%s", msg), err);
}

/* A list of non-negative ids (a single number is a list of one). */
static int read_ids(mm_loader *ld, mm_node *m, const char *prefix, const char *key, int *out, int *n,
                    mm_err *err)
{
    char path[MM_PATH_MAX_LEN];
    mm_ld_join(path, prefix, key);
    mm_node *v = mm_node_get(m, key);
    if (!v || mm_node_is_null(v))
        return 0;
    mm_ld_note(ld, path, mm_node_key_line(m, key));
    if (mm_node_is_scalar(v)) {
        int64_t x = 0;
        int rc = mm_node_as_int(&ld->doc, v, path, 0, INT_MAX, &x, err);
        if (rc)
            return mm_ld_fix(ld, rc, err);
        out[(*n)++] = (int)x;
        return 0;
    }
    if (!mm_node_is_sequence(v))
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), path,
                                  "expected a list of indices, e.g. [0, 3]"), err);
    int it = 0;
    mm_node *item;
    while ((item = mm_node_item(v, it++))) {
        if (*n == MM_PERTURB_IDS)
            return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(item), path,
                                      "at most %d entries (use nodes or fraction for more)", MM_PERTURB_IDS), err);
        int64_t x = 0;
        int rc = mm_node_as_int(&ld->doc, item, path, 0, INT_MAX, &x, err);
        if (rc)
            return mm_ld_fix(ld, rc, err);
        out[(*n)++] = (int)x;
    }
    return 0;
}

/* A positive factor (time multiplier or bandwidth fraction). */
static int read_factor(mm_loader *ld, mm_node *m, const char *prefix, const char *key, bool required,
                       double *out, mm_err *err)
{
    bool had = mm_node_get(m, key) != NULL;
    int rc = mm_ld_double(ld, m, prefix, key, -1e308, 1e308, out, err);
    if (rc)
        return rc;
    if (!had && required)
        return perturb_bad(ld, err, m, prefix, key, "missing required key");
    if (had && !(*out > 0))
        return perturb_bad(ld, err, m, prefix, key, "must be > 0, got %g", *out);
    return 0;
}

/* A slow_gpu, jitter or hbm entry: the GPUs it hits and its factor, cv or
 * HBM factors (one case of read_perturb_entry's switch). */
static int read_gpu_entry(mm_loader *ld, mm_node *m, const char *prefix, int kind, mm_perturb_entry *e, mm_err *err)
{
    int rc;
    if ((rc = read_ids(ld, m, prefix, "gpus", e->gpus, &e->n_gpus, err)) ||
        (rc = read_ids(ld, m, prefix, "nodes", e->nodes, &e->n_nodes, err)) ||
        (rc = mm_ld_double(ld, m, prefix, "fraction", 0.0, 1.0, &e->fraction, err)))
        return rc;
    if (kind == MM_PT_SLOW_GPU) {
        if (!mm_node_get(m, "factor"))
            return perturb_bad(ld, err, m, prefix, "factor", "missing: slow_gpu needs a factor (1.3 = 30%% slower)");
        return read_factor(ld, m, prefix, "factor", true, &e->factor, err);
    }
    if (kind == MM_PT_JITTER) {
        int dist = 0;
        if ((rc = mm_ld_enum(ld, m, prefix, "dist", jitter_dists, &dist, err)))
            return rc;
        if (!mm_node_get(m, "cv"))
            return perturb_bad(ld, err, m, prefix, "cv", "missing: jitter needs cv, the coefficient of variation "
                                                    "of an op's time (e.g. 0.05)");
        return mm_ld_double(ld, m, prefix, "cv", 0.0, 10.0, &e->cv, err);
    }
    if (!mm_node_get(m, "bandwidth") && !mm_node_get(m, "capacity"))
        return perturb_bad(ld, err, m, prefix, "bandwidth", "missing: hbm needs bandwidth and/or capacity (factors)");
    if ((rc = read_factor(ld, m, prefix, "bandwidth", false, &e->hbm_bw, err)) ||
        (rc = read_factor(ld, m, prefix, "capacity", false, &e->hbm_cap, err)))
        return rc;
    return 0;
}

/* A nic, rail, switch or link entry: what it hits and its bandwidth
 * factor, added latency or failure (one case of read_perturb_entry's
 * switch). */
static int read_net_entry(mm_loader *ld, mm_node *m, const char *prefix, int kind, mm_perturb_entry *e, mm_err *err)
{
    int rc;
    if (kind == MM_PT_NIC && ((rc = read_ids(ld, m, prefix, "nodes", e->nodes, &e->n_nodes, err)) ||
                              (rc = read_ids(ld, m, prefix, "nics", e->nics, &e->n_nics, err))))
        return rc;
    if (kind == MM_PT_RAIL) {
        if ((rc = read_ids(ld, m, prefix, "rails", e->nics, &e->n_nics, err)))
            return rc;
        if (!e->n_nics)
            return perturb_bad(ld, err, m, prefix, "rails", "missing: rail needs rails, e.g. [0]");
}
if (kind == MM_PT_SWITCH) {
    if ((rc = read_ids(ld, m, prefix, "leaves", e->leaves, &e->n_leaves, err)) ||
        (rc = read_ids(ld, m, prefix, "spines", e->spines, &e->n_spines, err)))
        return rc;
    if (!e->n_leaves && !e->n_spines)
        return perturb_bad(ld, err, m, prefix, "spines", "missing: switch needs leaves or spines");
}
if (kind == MM_PT_LINK) {
    int leaf = -1, spine = -1;
    if ((rc = mm_ld_int(ld, m, prefix, "leaf", 0, INT_MAX, &leaf, err)) ||
        (rc = mm_ld_int(ld, m, prefix, "spine", 0, INT_MAX, &spine, err)))
        return rc;
    if (leaf < 0 || spine < 0)
        return perturb_bad(ld, err, m, prefix, leaf < 0 ? "leaf" : "spine",
                           "missing: link names one leaf-spine cable, e.g. {kind: link, leaf: 0, spine: 1, "
                           "failed: true}");
    e->leaves[e->n_leaves++] = leaf;
    e->spines[e->n_spines++] = spine;
}
double lat_us = 0;
if ((rc = read_factor(ld, m, prefix, "factor", false, &e->factor, err)) ||
    (rc = mm_ld_double(ld, m, prefix, "latency_us", 0.0, 1e9, &lat_us, err)))
    return rc;
e->latency_us = lat_us;
e->latency_s = lat_us * 1e-6;
if ((kind == MM_PT_SWITCH || kind == MM_PT_LINK) &&
    (rc = mm_ld_bool(ld, m, prefix, "failed", &e->failed, err)))
    return rc;
if (!mm_node_get(m, "factor") && !mm_node_get(m, "latency_us") && !e->failed)
    return perturb_bad(ld, err, m, prefix, "factor", "missing: give a bandwidth factor, latency_us%s",
                       kind == MM_PT_SWITCH || kind == MM_PT_LINK ? " or failed: true" : "");
return 0;
}

static int read_perturb_entry(mm_loader *ld, mm_node *m, const char *prefix, mm_perturb_entry *e, mm_err *err)
{
    int kind = -1, rc;
    char kp[MM_PATH_MAX_LEN];
    mm_ld_join(kp, prefix, "kind");
    if (!m || !mm_node_is_mapping(m))
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(m), prefix,
                                  "expected a mapping with a kind, e.g. {kind: slow_gpu, gpus: [3], factor: 1.3}"),
                   err);
    if ((rc = mm_ld_enum(ld, m, prefix, "kind", mm_perturb_kind_names, &kind, err)))
        return rc;
    if (kind < 0)
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(m), kp,
                                  "missing: every perturbation names its kind (slow_gpu, jitter, hbm, nic, rail, "
                                  "switch, link, node_group, stall)"), err);
    if ((rc = mm_ld_fix(ld, mm_node_check_keys(&ld->doc, m, prefix, perturb_keys[kind], err), err)))
        return rc;
    e->kind = kind;
    e->factor = 1;
    e->hbm_bw = e->hbm_cap = 1;
    switch (kind) {
    case MM_PT_SLOW_GPU:
    case MM_PT_JITTER:
    case MM_PT_HBM:
        return read_gpu_entry(ld, m, prefix, kind, e, err);
    case MM_PT_NIC:
    case MM_PT_RAIL:
    case MM_PT_SWITCH:
    case MM_PT_LINK:
        return read_net_entry(ld, m, prefix, kind, e, err);
    case MM_PT_NODE_GROUP: {
        bool found = false;
        if ((rc = mm_ld_str(ld, m, prefix, "group", e->group, sizeof e->group, &found, err)))
            return rc;
        if (!found)
            return perturb_bad(ld, err, m, prefix, "group", "missing: node_group names a group of the topology's node_groups");
        if (!mm_node_get(m, "nic_gbit_s"))
            return perturb_bad(ld, err, m, prefix, "nic_gbit_s", "missing: node_group sets the group's nic_gbit_s");
        return read_factor(ld, m, prefix, "nic_gbit_s", true, &e->nic_gbit_s, err);
    }
    case MM_PT_STALL:
        if (!mm_node_get(m, "every") || !mm_node_get(m, "seconds"))
            return perturb_bad(ld, err, m, prefix, mm_node_get(m, "every") ? "seconds" : "every",
                               "missing: stall needs every (iterations) and seconds");
        if ((rc = mm_ld_int(ld, m, prefix, "every", 1, INT_MAX, &e->every, err)) ||
            (rc = mm_ld_double(ld, m, prefix, "seconds", 0.0, 1e9, &e->seconds, err)))
            return rc;
        return 0;
    }
    return 0;
}

/* perturb: a list of {kind: ..., ...} (hw/perturb.h). */
int mm_ld_perturb(mm_loader *ld, mm_node *root, mm_err *err)
{
    mm_scenario *sc = ld->sc;
    mm_node *v = mm_node_get(root, "perturb");
    if (!v)
        return 0;
    mm_ld_note(ld, "perturb", mm_node_key_line(root, "perturb"));
    if (mm_node_is_null(v))
        return 0;
    if (!mm_node_is_sequence(v))
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), "perturb",
                                  "expected a list, e.g. [{kind: slow_gpu, gpus: [3], factor: 1.3}]"), err);
    int count = mm_node_count(v);
    if (count > MM_PERTURB_MAX)
        return mm_ld_fix(ld, mm_err_set(err, MM_EINPUT, ld->doc.path, mm_node_line(v), "perturb",
                                        "at most %d perturbations, got %d", MM_PERTURB_MAX, count),
                         err);
    free(sc->perturb.e);
    sc->perturb.e = calloc(count > 0 ? (size_t)count : 1, sizeof *sc->perturb.e); /* to size */
    if (!sc->perturb.e)
        return mm_err_set(err, MM_EINTERNAL, ld->doc.path, mm_node_line(v), "perturb", "out of memory");
    int it = 0;
    mm_node *item;
    while ((item = mm_node_item(v, it++)) && sc->perturb.n < count) {
        char prefix[MM_PATH_MAX_LEN];
        snprintf(prefix, sizeof prefix, "perturb[%d]", sc->perturb.n);
        mm_perturb_entry *e = &sc->perturb.e[sc->perturb.n];
        int rc = read_perturb_entry(ld, item, prefix, e, err);
        if (rc)
            return rc;
        sc->perturb.n++;
    }
    return 0;
}


static void sb_ids(mm_sbuf *b, const char *key, const int *ids, int n)
{
    mm_sb_printf(b, ", %s: [", key);
    for (int i = 0; i < n; i++)
        mm_sb_printf(b, "%s%d", i ? ", " : "", ids[i]);
    mm_sb_printf(b, "]");
}

/* perturb: one flow mapping per entry with every key of its kind, defaults
 * filled in, so that the text reads back to the same entries. */
void mm_sb_perturb(mm_sbuf *b, const mm_perturb *pt)
{
    if (pt->n == 0) {
        mm_sb_printf(b, "perturb: []\n");
        return;
    }
    mm_sb_printf(b, "perturb:\n");
    for (int i = 0; i < pt->n; i++) {
        const mm_perturb_entry *e = &pt->e[i];
        mm_sb_printf(b, "  - {kind: %s", mm_perturb_kind_names[e->kind]);
        switch (e->kind) {
        case MM_PT_SLOW_GPU:
        case MM_PT_JITTER:
        case MM_PT_HBM:
            sb_ids(b, "gpus", e->gpus, e->n_gpus);
            sb_ids(b, "nodes", e->nodes, e->n_nodes);
            mm_sb_printf(b, ", fraction: %.17g", e->fraction);
            if (e->kind == MM_PT_SLOW_GPU)
                mm_sb_printf(b, ", factor: %.17g", e->factor);
            else if (e->kind == MM_PT_JITTER)
                mm_sb_printf(b, ", dist: lognormal, cv: %.17g", e->cv);
            else
                mm_sb_printf(b, ", bandwidth: %.17g, capacity: %.17g", e->hbm_bw, e->hbm_cap);
            break;
        case MM_PT_NIC:
        case MM_PT_RAIL:
        case MM_PT_SWITCH:
        case MM_PT_LINK:
            if (e->kind == MM_PT_NIC) {
                sb_ids(b, "nodes", e->nodes, e->n_nodes);
                sb_ids(b, "nics", e->nics, e->n_nics);
            } else if (e->kind == MM_PT_RAIL) {
                sb_ids(b, "rails", e->nics, e->n_nics);
            } else if (e->kind == MM_PT_SWITCH) {
                sb_ids(b, "leaves", e->leaves, e->n_leaves);
                sb_ids(b, "spines", e->spines, e->n_spines);
            } else {
                mm_sb_printf(b, ", leaf: %d, spine: %d", e->leaves[0], e->spines[0]);
            }
            mm_sb_printf(b, ", factor: %.17g, latency_us: %.17g", e->factor, e->latency_us);
            if (e->kind == MM_PT_SWITCH || e->kind == MM_PT_LINK)
                mm_sb_printf(b, ", failed: %s", e->failed ? "true" : "false");
            break;
        case MM_PT_NODE_GROUP:
            mm_sb_printf(b, ", group: ");
            mm_sb_quote(b, e->group);
            mm_sb_printf(b, ", nic_gbit_s: %.17g", e->nic_gbit_s);
            break;
        case MM_PT_STALL:
            mm_sb_printf(b, ", every: %d, seconds: %.17g", e->every, e->seconds);
            break;
        default:
            break;
        }
        mm_sb_printf(b, "}\n");
    }
}

