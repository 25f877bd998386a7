/* sweep.c - reading sweep specs (sweep.h) and expanding them into points.
 *
 * Every value ends up as YAML text handed to the scenario loader exactly as a
 * `--set key=value` would be, so a sweep can do nothing that the command
 * line cannot, and the scenario loader stays the one place that checks keys.
 * Not for: running anything (runner.c), or checking the points' scenarios. */
#include "plan/sweep.h"
#include "util/file.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenario/sim.h"
#include "util/doc.h"

#define MAX_AXIS_VALUES 1000000

static const char *const top_keys[] = {"name", "base", "set", "mode", "axes", NULL};
static const char *const axis_keys[] = {"key", "values", "range", NULL};
static const char *const range_keys[] = {"from", "to", "step", "factor", "points", "scale",
                                         NULL};
static const char *const mode_names[] = {"cartesian", "zip", NULL};

/* A growable list of owned strings. */
typedef struct strlist {
    int n, cap;
    char **v;
} strlist;

static int strlist_push(strlist *l, char *s)
{
    if (!s)
        return -1;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) {
            free(s);
            return -1;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return 0;
}

static void strlist_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dup_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static int oom(const mm_sweep *sw, mm_err *err)
{
    return mm_err_set(err, MM_EINTERNAL, sw->path, 0, NULL, "out of memory");
}

static int bad(const mm_sweep *sw, mm_err *err, int line, const char *key, const char *fmt,
               ...) __attribute__((format(printf, 5, 6)));
static int bad(const mm_sweep *sw, mm_err *err, int line, const char *key, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mm_err_set(err, MM_EINPUT, sw->path, line, key, "%s", msg);
}

/* "key=value" with the node as one-line YAML flow text. */
static char *set_text(const char *key, mm_node *value)
{
    char *v = mm_node_emit(value, MM_EMIT_YAML);
    if (!v)
        return NULL;
    char *s = dup_printf("%s=%s", key, v);
    free(v);
    return s;
}

/* Reads a mapping of dotted keys -> values into "key=value" overrides; a
 * mapping key must be a plain string. */
static int read_sets(mm_sweep *sw, const mm_doc *doc, mm_node *map, const char *what,
                     strlist *out, mm_err *err)
{
    if (!mm_node_is_mapping(map))
        return bad(sw, err, mm_node_line(map), what,
                   "expected a mapping of scenario keys to values");
    (void)doc;
    for (int i = 0; i < mm_node_count(map); i++) {
        mm_node *k = mm_node_pair_key(map, i);
        size_t klen = 0;
        const char *ks = k && mm_node_is_scalar(k) ? mm_node_scalar(k, &klen) : NULL;
        if (!ks || klen == 0 || klen >= 128)
            return bad(sw, err, mm_node_line(k), what, "expected a scenario key");
        char key[128];
        memcpy(key, ks, klen);
        key[klen] = '\0';
        if (strlist_push(out, set_text(key, mm_node_pair_value(map, i))) < 0)
            return oom(sw, err);
    }
    return 0;
}

static int read_base(mm_sweep *sw, const mm_doc *doc, mm_node *root, strlist *sets,
                     mm_err *err)
{
    mm_node *b = mm_node_get(root, "base");
    if (!b || mm_node_is_null(b))
        return 0;
    int line = mm_node_key_line(root, "base");
    if (mm_node_is_mapping(b))
        return read_sets(sw, doc, b, "base", sets, err);
    char path[512];
    int rc = mm_node_as_str(doc, b, "base", path, sizeof path, err);
    if (rc < 0)
        return rc;
    mm_sim_resolve_path(path, sw->path, sw->base, sizeof sw->base);
    if (access(sw->base, R_OK) != 0)
        return bad(sw, err, line, "base",
                   "scenario file '%s' not found (tried as given and beside the sweep file)",
                   path);
    return 0;
}

/* A number as range values are written: an integer when whole. */
static char *number_text(double v)
{
    if (fabs(v) < 9.0e15 && v == floor(v))
        return dup_printf("%.0f", v);
    return dup_printf("%.15g", v);
}

/* The n values of a range (from, to and one of step, factor or points, on
 * a linear or log scale) into ax, written as number_text writes them; the
 * end of read_range. */
static int range_fill(mm_sweep *sw, mm_sweep_axis *ax, int n, double from, double to, double step, double factor,
                      int scale, bool f_step, bool f_factor, mm_err *err)
{
    ax->values = calloc((size_t)n, sizeof *ax->values);
    ax->json = calloc((size_t)n, sizeof *ax->json);
    if (!ax->values || !ax->json)
        return oom(sw, err);
    ax->n_values = n;
    for (int i = 0; i < n; i++) {
        double v;
        if (f_step)
            v = from + i * step;
        else if (f_factor)
            v = from * pow(factor, i);
        else if (n == 1)
            v = from;
        else if (scale == 1)
            v = exp(log(from) + (log(to) - log(from)) * i / (n - 1));
        else
            v = from + (to - from) * i / (n - 1);
        /* pow/exp may land a hair off a whole number: snap within 1e-9. */
        if (fabs(v - round(v)) < 1e-9 * fmax(1.0, fabs(v)))
            v = round(v);
        ax->values[i] = number_text(v);
        ax->json[i] = ax->values[i] ? strdup(ax->values[i]) : NULL;
        if (!ax->values[i] || !ax->json[i])
            return oom(sw, err);
    }
    return 0;
}

static int read_range(mm_sweep *sw, const mm_doc *doc, mm_node *r, const char *prefix,
                      mm_sweep_axis *ax, mm_err *err)
{
    int rc = mm_node_check_keys(doc, r, prefix, range_keys, err);
    if (rc < 0)
        return rc;
    double from = 0, to = 0, step = 0, factor = 0;
    int64_t points = 0;
    bool f_from = false, f_to = false, f_step = false, f_factor = false, f_points = false;
    char path[160];
    int line = mm_node_line(r);
    snprintf(path, sizeof path, "%s.from", prefix);
    rc = mm_node_double(doc, r, "from", path, -1e300, 1e300, &from, &f_from, err);
    snprintf(path, sizeof path, "%s.to", prefix);
    if (!rc) rc = mm_node_double(doc, r, "to", path, -1e300, 1e300, &to, &f_to, err);
    snprintf(path, sizeof path, "%s.step", prefix);
    if (!rc) rc = mm_node_double(doc, r, "step", path, -1e300, 1e300, &step, &f_step, err);
    snprintf(path, sizeof path, "%s.factor", prefix);
    if (!rc) rc = mm_node_double(doc, r, "factor", path, -1e300, 1e300, &factor, &f_factor, err);
    snprintf(path, sizeof path, "%s.points", prefix);
    if (!rc)
        rc = mm_node_int(doc, r, "points", path, 1, MAX_AXIS_VALUES, &points, &f_points, err);
    int scale = 0; /* 0 linear, 1 log */
    static const char *const scales[] = {"linear", "log", NULL};
    snprintf(path, sizeof path, "%s.scale", prefix);
    if (!rc) rc = mm_node_enum(doc, r, "scale", path, scales, &scale, NULL, err);
    if (rc < 0)
        return rc;
    if (!f_from || !f_to) {
        snprintf(path, sizeof path, "%s.%s", prefix, f_from ? "to" : "from");
        return bad(sw, err, line, path, "a range needs both 'from' and 'to'");
    }
    if ((int)f_step + (int)f_factor + (int)f_points != 1) {
        snprintf(path, sizeof path, "%s", prefix);
        return bad(sw, err, line, path,
                   "a range needs exactly one of 'step', 'factor' or 'points'");
    }
    double n_real;
    if (f_step) {
        snprintf(path, sizeof path, "%s.step", prefix);
        if (step == 0 || (to - from) / step < 0)
            return bad(sw, err, mm_node_key_line(r, "step"), path,
                       "step %g does not lead from %g to %g", step, from, to);
        n_real = floor((to - from) / step * (1 + 1e-12) + 1e-9) + 1;
    } else if (f_factor) {
        snprintf(path, sizeof path, "%s.factor", prefix);
        if (!(factor > 1) || !(from > 0) || to < from)
            return bad(sw, err, mm_node_key_line(r, "factor"), path,
                       "a geometric range needs factor > 1 and 0 < from <= to "
                       "(got factor %g, from %g, to %g)", factor, from, to);
        n_real = floor(log(to / from) / log(factor) * (1 + 1e-12) + 1e-9) + 1;
    } else {
        if (scale == 1 && (!(from > 0) || !(to > 0))) {
            snprintf(path, sizeof path, "%s.scale", prefix);
            return bad(sw, err, line, path, "a log scale needs from > 0 and to > 0");
        }
        n_real = (double)points;
    }
    if (n_real > MAX_AXIS_VALUES) {
        snprintf(path, sizeof path, "%s", prefix);
        return bad(sw, err, line, path, "range has %.0f values, at most %d", n_real,
                   MAX_AXIS_VALUES);
    }
    return range_fill(sw, ax, (int)n_real, from, to, step, factor, scale, f_step, f_factor, err);
}

static int read_axis(mm_sweep *sw, const mm_doc *doc, mm_node *a, int i,
                     mm_sweep_axis *ax, mm_err *err)
{
    char prefix[64], path[96];
    snprintf(prefix, sizeof prefix, "axes[%d]", i);
    ax->line = mm_node_line(a);
    if (!mm_node_is_mapping(a))
        return bad(sw, err, ax->line, prefix,
                   "expected a mapping {key: dotted.key, values: [..]} or {key, range: {..}}");
    int rc = mm_node_check_keys(doc, a, prefix, axis_keys, err);
    if (rc < 0)
        return rc;
    bool found = false;
    snprintf(path, sizeof path, "%s.key", prefix);
    rc = mm_node_str(doc, a, "key", path, ax->key, sizeof ax->key, &found, err);
    if (rc < 0)
        return rc;
    if (!found || !ax->key[0])
        return bad(sw, err, ax->line, path, "each axis needs the scenario key it sweeps");
    if (strchr(ax->key, '=') || ax->key[0] == '.' || strstr(ax->key, ".."))
        return bad(sw, err, mm_node_key_line(a, "key"), path,
                   "'%s' is not a dotted scenario key", ax->key);
    mm_node *vals = mm_node_get(a, "values"), *range = mm_node_get(a, "range");
    if ((vals != NULL) == (range != NULL))
        return bad(sw, err, ax->line, prefix, "an axis needs exactly one of 'values' or 'range'");
    if (range)
        return read_range(sw, doc, range, (snprintf(path, sizeof path, "%s.range", prefix), path),
                          ax, err);
    snprintf(path, sizeof path, "%s.values", prefix);
    int vline = mm_node_key_line(a, "values");
    if (!mm_node_is_sequence(vals))
        return bad(sw, err, vline, path, "expected a list of values, e.g. [1, 2, 4]");
    int n = mm_node_count(vals);
    if (n <= 0)
        return bad(sw, err, vline, path, "the list of values is empty");
    if (n > MAX_AXIS_VALUES)
        return bad(sw, err, vline, path, "%d values, at most %d", n, MAX_AXIS_VALUES);
    ax->values = calloc((size_t)n, sizeof *ax->values);
    ax->json = calloc((size_t)n, sizeof *ax->json);
    if (!ax->values || !ax->json)
        return oom(sw, err);
    ax->n_values = n;
    for (int k = 0; k < n; k++) {
        mm_node *v = mm_node_item(vals, k);
        if (mm_node_is_null(v)) {
            snprintf(path, sizeof path, "%s.values[%d]", prefix, k);
            return bad(sw, err, mm_node_line(v), path, "empty value");
        }
        ax->values[k] = mm_node_emit(v, MM_EMIT_YAML);
        ax->json[k] = mm_node_emit(v, MM_EMIT_JSON);
        if (!ax->values[k] || !ax->json[k])
            return oom(sw, err);
    }
    return 0;
}

static int read_spec(mm_sweep *sw, const mm_doc *doc, mm_err *err)
{
    mm_node *root = mm_doc_root(doc);
    if (!root || !mm_node_is_mapping(root))
        return bad(sw, err, mm_node_line(root), "",
                   "a sweep file is a mapping with 'base', 'axes' and optionally "
                   "'name', 'set', 'mode'");
    int rc = mm_node_check_keys(doc, root, "", top_keys, err);
    if (rc < 0)
        return rc;
    rc = mm_node_str(doc, root, "name", "name", sw->name, sizeof sw->name, NULL, err);
    int mode = MM_SWEEP_CARTESIAN;
    if (!rc)
        rc = mm_node_enum(doc, root, "mode", "mode", mode_names, &mode, NULL, err);
    if (rc < 0)
        return rc;
    sw->mode = (mm_sweep_mode)mode;

    strlist sets = {0};
    rc = read_base(sw, doc, root, &sets, err);
    mm_node *set = mm_node_get(root, "set");
    if (!rc && set && !mm_node_is_null(set))
        rc = read_sets(sw, doc, set, "set", &sets, err);
    sw->base_sets = sets.v;
    sw->n_base_sets = sets.n;
    if (rc < 0)
        return rc;

    mm_node *axes = mm_node_get(root, "axes");
    int aline = mm_node_key_line(root, "axes");
    if (!axes || mm_node_is_null(axes))
        return bad(sw, err, aline ? aline : 1, "axes",
                   "a sweep needs 'axes': a list of {key, values} or {key, range}");
    if (!mm_node_is_sequence(axes))
        return bad(sw, err, aline, "axes", "expected a list of axes");
    int n = mm_node_count(axes);
    if (n <= 0)
        return bad(sw, err, aline, "axes", "the list of axes is empty");
    sw->axes = calloc((size_t)n, sizeof *sw->axes);
    if (!sw->axes)
        return oom(sw, err);
    sw->n_axes = n;
    double total = 1;
    for (int i = 0; i < n; i++) {
        rc = read_axis(sw, doc, mm_node_item(axes, i), i, &sw->axes[i], err);
        if (rc < 0)
            return rc;
        for (int j = 0; j < i; j++)
            if (!strcmp(sw->axes[j].key, sw->axes[i].key)) {
                char path[64];
                snprintf(path, sizeof path, "axes[%d].key", i);
                return bad(sw, err, sw->axes[i].line, path,
                           "key '%s' is swept twice (also by axes[%d])", sw->axes[i].key, j);
            }
        if (sw->mode == MM_SWEEP_ZIP && sw->axes[i].n_values != sw->axes[0].n_values) {
            char path[64];
            snprintf(path, sizeof path, "axes[%d]", i);
            return bad(sw, err, sw->axes[i].line, path,
                       "mode zip needs axes of equal length: '%s' has %d values, '%s' has %d",
                       sw->axes[i].key, sw->axes[i].n_values, sw->axes[0].key,
                       sw->axes[0].n_values);
        }
        total *= sw->axes[i].n_values;
    }
    if (sw->mode == MM_SWEEP_ZIP)
        total = sw->axes[0].n_values;
    if (total > MM_SWEEP_MAX_POINTS)
        return bad(sw, err, aline, "axes", "%.0f points, at most %d", total,
                   MM_SWEEP_MAX_POINTS);
    sw->n_points = (size_t)total;
    return 0;
}

/* Default name: the file's base name without its extension. */
static void default_name(mm_sweep *sw)
{
    if (sw->name[0])
        return;
    const char *b = strrchr(sw->path, '/');
    b = b ? b + 1 : sw->path;
    size_t n = strcspn(b, ".");
    snprintf(sw->name, sizeof sw->name, "%.*s", (int)(n ? n : strlen(b)), b);
}

int mm_sweep_load_string(mm_sweep *sw, const char *name, const char *text, mm_err *err)
{
    memset(sw, 0, sizeof *sw);
    snprintf(sw->path, sizeof sw->path, "%s", name);
    sw->spec = strdup(text);
    if (!sw->spec)
        return oom(sw, err);
    mm_doc doc;
    int rc = mm_doc_load_string(&doc, sw->path, text, err);
    if (rc < 0) {
        mm_sweep_free(sw);
        return rc;
    }
    rc = read_spec(sw, &doc, err);
    mm_doc_free(&doc);
    if (rc < 0) {
        mm_sweep_free(sw);
        return rc;
    }
    default_name(sw);
    return 0;
}

int mm_sweep_load(mm_sweep *sw, const char *path, mm_err *err)
{
    memset(sw, 0, sizeof *sw);
    char *text = NULL;
    size_t len = 0;
    int rc = mm_file_read(path, MM_FILE_MAX_CONFIG, &text, &len, err);
    if (rc < 0)
        return rc;
    rc = mm_sweep_load_string(sw, path, text, err);
    free(text);
    return rc;
}

void mm_sweep_free(mm_sweep *sw)
{
    if (!sw)
        return;
    free(sw->spec);
    strlist_free(sw->base_sets, sw->n_base_sets);
    for (int i = 0; i < sw->n_axes; i++) {
        strlist_free(sw->axes[i].values, sw->axes[i].n_values);
        strlist_free(sw->axes[i].json, sw->axes[i].n_values);
    }
    free(sw->axes);
    memset(sw, 0, sizeof *sw);
}

void mm_sweep_point_index(const mm_sweep *sw, size_t i, int *idx)
{
    if (sw->mode == MM_SWEEP_ZIP) {
        for (int a = 0; a < sw->n_axes; a++)
            idx[a] = (int)i;
        return;
    }
    for (int a = sw->n_axes - 1; a >= 0; a--) {
        size_t n = (size_t)sw->axes[a].n_values;
        idx[a] = (int)(i % n);
        i /= n;
    }
}

/* Appends `s` to a JSON string literal (keys are plain, but be safe). */
static void json_key(char *out, size_t len, size_t *pos, const char *s)
{
    *pos += (size_t)snprintf(out + *pos, *pos < len ? len - *pos : 0, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            *pos += (size_t)snprintf(out + *pos, *pos < len ? len - *pos : 0, "\\");
        *pos += (size_t)snprintf(out + *pos, *pos < len ? len - *pos : 0, "%c", *s);
    }
    *pos += (size_t)snprintf(out + *pos, *pos < len ? len - *pos : 0, "\"");
}

char *mm_sweep_axes_json(const mm_sweep *sw)
{
    size_t len = 4;
    for (int a = 0; a < sw->n_axes; a++)
        len += 2 * strlen(sw->axes[a].key) + 4;
    char *out = malloc(len);
    if (!out)
        return NULL;
    size_t pos = (size_t)snprintf(out, len, "[");
    for (int a = 0; a < sw->n_axes; a++) {
        if (a)
            pos += (size_t)snprintf(out + pos, len - pos, ",");
        json_key(out, len, &pos, sw->axes[a].key);
    }
    snprintf(out + pos, len - pos, "]");
    return out;
}

/* {"key": value, ...} of point idx. */
static char *point_label(const mm_sweep *sw, const int *idx)
{
    size_t len = 4;
    for (int a = 0; a < sw->n_axes; a++)
        len += 2 * strlen(sw->axes[a].key) + strlen(sw->axes[a].json[idx[a]]) + 8;
    char *out = malloc(len);
    if (!out)
        return NULL;
    size_t pos = (size_t)snprintf(out, len, "{");
    for (int a = 0; a < sw->n_axes; a++) {
        if (a)
            pos += (size_t)snprintf(out + pos, len - pos, ", ");
        json_key(out, len, &pos, sw->axes[a].key);
        pos += (size_t)snprintf(out + pos, len - pos, ": %s", sw->axes[a].json[idx[a]]);
    }
    snprintf(out + pos, len - pos, "}");
    return out;
}

int mm_sweep_expand(const mm_sweep *sw, mm_sweep_points *out, mm_err *err)
{
    memset(out, 0, sizeof *out);
    size_t n = sw->n_points, per = (size_t)(sw->n_base_sets + sw->n_axes);
    out->pts = calloc(n ? n : 1, sizeof *out->pts);
    out->labels = calloc(n ? n : 1, sizeof *out->labels);
    out->sets = calloc(n * per + 1, sizeof *out->sets);
    int *idx = calloc((size_t)sw->n_axes + 1, sizeof *idx);
    if (!out->pts || !out->labels || !out->sets || !idx)
        goto nomem;
    out->n = n;
    out->n_sets = n * per;
    for (size_t i = 0; i < n; i++) {
        mm_sweep_point_index(sw, i, idx);
        char **s = out->sets + i * per;
        for (int k = 0; k < sw->n_base_sets; k++)
            if (!(s[k] = strdup(sw->base_sets[k])))
                goto nomem;
        for (int a = 0; a < sw->n_axes; a++)
            if (!(s[sw->n_base_sets + a] =
                      dup_printf("%s=%s", sw->axes[a].key, sw->axes[a].values[idx[a]])))
                goto nomem;
        if (!(out->labels[i] = point_label(sw, idx)))
            goto nomem;
        out->pts[i] = (mm_point){
            .scenario = sw->base[0] ? sw->base : NULL,
            .sets = (const char *const *)s,
            .n_sets = (int)per,
            .label = out->labels[i],
        };
    }
    free(idx);
    return 0;
nomem:
    free(idx);
    mm_sweep_points_free(out); /* the arrays are calloc'ed: unfilled entries are NULL */
    return mm_err_set(err, MM_EINTERNAL, sw->path, 0, NULL, "out of memory expanding the sweep");
}

void mm_sweep_points_free(mm_sweep_points *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->sets && i < p->n_sets; i++)
        free(p->sets[i]);
    for (size_t i = 0; p->labels && i < p->n; i++)
        free(p->labels[i]);
    free(p->sets);
    free(p->labels);
    free(p->pts);
    memset(p, 0, sizeof *p);
}
