/* sweep.h - sweep specs: a base scenario plus axes of overrides, expanded
 * into a deterministic list of points for the runner (runner.h).
 *
 *   name: tp-and-batch             # optional; default: the file's base name
 *   base: scenarios/x.yaml         # a scenario file (relative to this file),
 *                                  # or an inline mapping of scenario keys
 *                                  # applied on top of the built-in default;
 *                                  # absent: the built-in default
 *   set: {iterations: 1}           # optional dotted-key overrides for every point
 *   mode: cartesian                # cartesian (default) | zip
 *   axes:
 *     - key: parallel.llm.tp
 *       values: [1, 2, 4]          # any YAML values: numbers, strings, lists, maps
 *     - key: train.seq_len
 *       range: {from: 1024, to: 4096, step: 1024}     # inclusive, linear
 *     - key: train.global_batch
 *       range: {from: 16, to: 128, factor: 2}         # geometric (log) range
 *     - key: train.memory_reserve_gib
 *       range: {from: 1, to: 100, points: 3, scale: log}   # 1, 10, 100
 *
 * Order: cartesian points vary the LAST axis fastest (like nested loops in
 * the order written); zip takes the i-th value of every axis (all axes must
 * have the same length).  A value is passed to the scenario loader as YAML
 * text, exactly like `--set key=value`.  Range values that are whole numbers
 * are written as integers.
 *
 * Errors are MM_EINPUT naming the sweep file, the line and the key (e.g.
 * "axes[1].range.step").  Whether each point's scenario is valid is not
 * checked here (the runner records invalid points as failed).
 * Not for: running points (runner.h). */
#ifndef MM_SWEEP_H
#define MM_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "plan/runner.h"
#include "util/err.h"

#define MM_SWEEP_MAX_POINTS 10000000 /* refuse grids larger than this */

typedef enum { MM_SWEEP_CARTESIAN, MM_SWEEP_ZIP } mm_sweep_mode;

typedef struct mm_sweep_axis {
    char key[128];  /* dotted scenario key */
    int line;       /* line of the axis in the sweep file */
    int n_values;
    char **values;  /* YAML flow text of each value (for --set) */
    char **json;    /* JSON text of each value (for labels) */
} mm_sweep_axis;

typedef struct mm_sweep {
    char path[256];      /* the sweep file, or the name given to _load_string */
    char name[128];
    char *spec;          /* the sweep file's text, as read (stored in `sweeps`) */
    char base[512];      /* scenario file of the base; "" = built-in default */
    int n_base_sets;
    char **base_sets;    /* inline base mapping and `set:`, as "key=value" */
    mm_sweep_mode mode;
    int n_axes;
    mm_sweep_axis *axes;
    size_t n_points;
} mm_sweep;

/* Reads and checks a sweep file.  On failure *sw is left empty (free is a
 * no-op).  Returns 0 or -code. */
int mm_sweep_load(mm_sweep *sw, const char *path, mm_err *err);
/* The same from text held in memory; `name` stands for the file in errors,
 * and a relative base path is taken relative to the current directory. */
int mm_sweep_load_string(mm_sweep *sw, const char *name, const char *text, mm_err *err);
void mm_sweep_free(mm_sweep *sw);

/* Point i: fills idx[0..n_axes) with the value index of each axis. */
void mm_sweep_point_index(const mm_sweep *sw, size_t i, int *idx);

/* The JSON list of the axis keys (sweeps.axes); caller frees. */
char *mm_sweep_axes_json(const mm_sweep *sw);

/* Expanded points, ready for mm_runner_run. */
typedef struct mm_sweep_points {
    size_t n;
    mm_point *pts;
    char **sets;    /* backing store of every point's overrides */
    size_t n_sets;  /* entries in sets */
    char **labels;  /* per point: JSON object {"key": value, ...} */
} mm_sweep_points;

/* Expands every point: base, then `set:`, then the axis values.  Returns 0 or
 * -MM_EINTERNAL (out of memory). */
int mm_sweep_expand(const mm_sweep *sw, mm_sweep_points *out, mm_err *err);
void mm_sweep_points_free(mm_sweep_points *p);

#endif
