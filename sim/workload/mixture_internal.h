/* mixture_internal.h - the private layout of a mixture spec, shared by the
 * reader (mixture.c: YAML -> distributions and components) and the sampler
 * (mixture_draw.c: one iteration's samples, the largest input count).
 * Not for: anything outside sim/workload/mixture*.c; callers use the
 * opaque mm_mixture of workload.h. */
#ifndef MM_WORKLOAD_MIXTURE_INTERNAL_H
#define MM_WORKLOAD_MIXTURE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <gsl/gsl_histogram.h>
#include <gsl/gsl_randist.h>

#include "workload/workload.h"

#define MAX_GRIDS 64
#define MAX_COMPONENTS 64

typedef enum { D_FIXED, D_UNIFORM, D_LOGNORMAL, D_GAMMA, D_DISCRETE, D_HISTOGRAM } dist_kind;

/* One distribution; draws are clamped to [lo, hi]. */
typedef struct dist {
    dist_kind kind;
    double a, b;           /* fixed: a; uniform: [a, b); lognormal: mu, sigma; gamma: shape, scale */
    double lo, hi;
    double *values;        /* discrete */
    gsl_ran_discrete_t *table;
    gsl_histogram_pdf *pdf; /* histogram */
} dist;

typedef enum { TILING_FIXED, TILING_ANYRES, TILING_INTERNVL, TILING_NATIVE } tiling_kind;

typedef struct component {
    char name[64];
    mm_modality modality;
    double weight;
    dist text;
    bool has_images;
    dist images;           /* images per sample */
    tiling_kind tiling;
    dist tiles;            /* TILING_FIXED: tiles per image */
    dist width, aspect;    /* anyres / internvl: pixels, height / width */
    dist megapixels;       /* native: image area in 10^6 pixels (aspect: height / width) */
    int64_t patch, merge, min_pixels, max_pixels; /* native: the processor's (Qwen2-VL 14, 2) */
    int64_t tile_px;
    int n_grids;
    int grids[MAX_GRIDS][2]; /* anyres: rows, cols */
    int min_tiles, max_tiles;
    bool thumbnail, split_max_tiles;
    bool has_video;
    dist seconds;
    double fps;
    int min_frames, max_frames;
    bool has_audio;
    dist audio;
    double max_audio_s;
} component;

struct mm_mixture {
    char path[256];
    int n;
    component comp[MAX_COMPONENTS];
    gsl_ran_discrete_t *pick; /* over comp[].weight */
};

#endif
