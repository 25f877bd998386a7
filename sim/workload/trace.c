/* trace.c - per-sample traces: a CSV file (libcsv) with one row per sample
 * (id, text_tokens, images, tiles, frames, audio_seconds), loaded whole and
 * replayed in file order, wrapping at the end.
 *
 * Lines whose first character is '#' are comments (the source of the
 * trace); blank lines are skipped.  The header names the six columns in
 * any order; a missing or unknown column, a short or long row, or a value
 * that is not a non-negative number gives MM_EINPUT with the file, the
 * line, and the column (key = the column's name, the message its number).
 * Not for: writing traces, mixtures (mixture.c). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "workload/workload.h"
#include "util/file.h"

enum { C_ID, C_TEXT, C_IMAGES, C_TILES, C_FRAMES, C_AUDIO, NCOLS };
static const char *const col_names[] = {"id", "text_tokens", "images", "tiles", "frames", "audio_seconds", NULL};

typedef struct parse_state {
    const char *path;
    int line;          /* line being fed to the parser */
    int col;           /* fields seen in the current row */
    bool header_done;
    int map[16];       /* file column -> C_* (or -1) */
    int n_file_cols;
    mm_sample cur;
    mm_sample *samples;
    int64_t n, cap;
    mm_err *err;
    int rc;
} parse_state;

static void set_err(parse_state *ps, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(parse_state *ps, const char *key, const char *fmt, ...)
{
    if (ps->rc)
        return;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ps->rc = mm_err_set(ps->err, MM_EINPUT, ps->path, ps->line, key, "%s", msg);
}

static void on_field(void *data, size_t len, void *st)
{
    parse_state *ps = st;
    if (ps->rc)
        return;
    char buf[128];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1), data ? (const char *)data : "");
    int col = ps->col++;
    if (!ps->header_done) {
        if (col >= 16) {
            set_err(ps, "", "column %d: more than 16 columns in the header ('%s')", col + 1, buf);
            return;
        }
        int which = -1;
        for (int i = 0; i < NCOLS; i++)
            if (!strcmp(buf, col_names[i]))
                which = i;
        for (int i = 0; i < col && which >= 0; i++)
            if (ps->map[i] == which)
                which = -2;
        if (which == -2) {
            set_err(ps, buf, "column %d: '%s' appears twice in the header", col + 1, buf);
        } else if (which < 0) {
            const char *near = mm_nearest(buf, col_names);
            set_err(ps, buf, "column %d: unknown column '%s'%s%s%s (expected id, text_tokens, images, tiles, frames, audio_seconds)",
                    col + 1, buf, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        }
        ps->map[col] = which;
        return;
    }
    if (col >= ps->n_file_cols) {
        set_err(ps, "", "column %d: more fields than the header's columns ('%s')", col + 1, buf);
        return;
    }
    int which = ps->map[col];
    const char *name = col_names[which];
    char *end = NULL;
    errno = 0;
    if (which == C_AUDIO) {
        double v = strtod(buf, &end);
        if (!buf[0] || *end || errno || !isfinite(v) || v < 0)
            set_err(ps, name, "column %d: '%s' is not a non-negative number of seconds", col + 1, buf);
        ps->cur.audio_s = v;
        return;
    }
    long long v = strtoll(buf, &end, 10);
    bool neg_ok = which == C_ID;
    if (!buf[0] || *end || errno || (!neg_ok && v < 0) || (which != C_ID && which != C_TEXT && v > INT32_MAX)) {
        set_err(ps, name, "column %d: '%s' is not %s", col + 1, buf,
                which == C_ID ? "an integer" : "a non-negative integer in range");
        return;
    }
    switch (which) {
    case C_ID: ps->cur.id = v; break;
    case C_TEXT: ps->cur.text_tokens = v; break;
    case C_IMAGES: ps->cur.images = (int32_t)v; break;
    case C_TILES: ps->cur.tiles = (int32_t)v; break;
    case C_FRAMES: ps->cur.frames = (int32_t)v; break;
    default: break;
    }
}

static void on_row(int c, void *st)
{
    (void)c;
    parse_state *ps = st;
    if (ps->rc)
        return;
    if (!ps->header_done) {
        ps->n_file_cols = ps->col;
        for (int i = 0; i < NCOLS; i++) {
            bool have = false;
            for (int j = 0; j < ps->n_file_cols; j++)
                have |= ps->map[j] == i;
            if (!have) {
                set_err(ps, col_names[i], "column %d: header lacks column '%s'", ps->col + 1, col_names[i]);
                return;
            }
        }
        ps->header_done = true;
        ps->col = 0;
        return;
    }
    if (ps->col < ps->n_file_cols) {
        set_err(ps, col_names[ps->map[ps->col]], "column %d: missing ('%s'); the row has %d of %d fields",
                ps->col + 1, col_names[ps->map[ps->col]], ps->col, ps->n_file_cols);
        return;
    }
    if (ps->n == ps->cap) {
        int64_t cap = ps->cap ? 2 * ps->cap : 1024;
        mm_sample *s = realloc(ps->samples, (size_t)cap * sizeof *s);
        if (!s) {
            ps->rc = mm_err_set(ps->err, MM_EINTERNAL, ps->path, ps->line, "", "out of memory");
            return;
        }
        ps->samples = s;
        ps->cap = cap;
    }
    ps->samples[ps->n++] = ps->cur;
    memset(&ps->cur, 0, sizeof ps->cur);
    ps->col = 0;
}

int mm_sample_trace_load(const char *path, mm_sample_trace *t, mm_err *err)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    FILE *f = mm_file_open(path, MM_FILE_MAX_TRACE, err);
    if (!f)
        return -MM_EINPUT;
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_APPEND_NULL | CSV_STRICT_FINI) != 0) {
        fclose(f);
        return mm_err_set(err, MM_EINTERNAL, path, 0, "", "csv_init failed");
    }
    parse_state ps;
    memset(&ps, 0, sizeof ps);
    ps.path = path;
    ps.err = err;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (!ps.rc && (len = getline(&line, &cap, f)) >= 0) {
        ps.line++;
        if (ps.col == 0 && (line[0] == '#'))
            continue;
        if (csv_parse(&p, line, (size_t)len, on_field, on_row, &ps) != (size_t)len && !ps.rc)
            ps.rc = mm_err_set(err, MM_EINPUT, path, ps.line, "", "CSV syntax: %s", csv_strerror(csv_error(&p)));
    }
    if (!ps.rc && csv_fini(&p, on_field, on_row, &ps) != 0 && !ps.rc)
        ps.rc = mm_err_set(err, MM_EINPUT, path, ps.line, "", "CSV syntax at end of file: %s",
                           csv_strerror(csv_error(&p)));
    csv_free(&p);
    free(line);
    fclose(f);
    if (!ps.rc && !ps.header_done)
        ps.rc = mm_err_set(err, MM_EINPUT, path, ps.line, "",
                           "no header (expected id,text_tokens,images,tiles,frames,audio_seconds)");
    if (!ps.rc && ps.n == 0)
        ps.rc = mm_err_set(err, MM_EINPUT, path, ps.line, "", "no samples after the header");
    if (ps.rc) {
        free(ps.samples);
        return ps.rc;
    }
    t->samples = ps.samples;
    t->n = ps.n;
    return 0;
}

void mm_sample_trace_free(mm_sample_trace *t)
{
    free(t->samples);
    t->samples = NULL;
    t->n = 0;
}

void mm_sample_trace_draw(const mm_sample_trace *t, int64_t iteration, int n, mm_sample *out)
{
    int64_t it = iteration % t->n;
    if (it < 0)
        it += t->n;
    int64_t start = (it * (n % t->n)) % t->n; /* both factors < t->n: no overflow below 3e9 samples */
    for (int k = 0; k < n; k++)
        out[k] = t->samples[(start + k) % t->n];
}
