/* workload.h - where training samples come from: a sample's shape (text
 * tokens, images, tiles, video frames, audio seconds), mixture specs that
 * draw samples through GSL distributions (workloads/NAME.yaml), per-sample
 * traces replayed in file order (CSV through libcsv), and summary
 * statistics of a set of samples.
 *
 * The workload layer does not know the model: how many LLM tokens a tile, a
 * video frame or a second of audio becomes is a mm_token_model that the
 * caller fills from the model config (mm_token_model_from_model does it for
 * an mm_model).  Drawing is deterministic: the samples of iteration i depend
 * only on (seed, i), never on which iterations were drawn before, because
 * each iteration gets its own random stream derived from the seed.
 * Not for: forming micro-batches (batch.h), costs or times of samples. */
#ifndef MM_WORKLOAD_H
#define MM_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "model/mllm.h"
#include "util/err.h"

/* ---- samples ---------------------------------------------------------- */

typedef enum mm_modality {
    MM_MOD_TEXT, MM_MOD_IMAGE, MM_MOD_MULTI_IMAGE, MM_MOD_VIDEO, MM_MOD_AUDIO, MM_MOD_COUNT
} mm_modality;
/* "text", "image", "multi-image", "video", "audio", NULL */
extern const char *const mm_modality_names[];

typedef struct mm_sample {
    int64_t id;          /* position in the stream (trace: the file's id column) */
    int64_t text_tokens; /* LLM tokens that are not visual/audio tokens */
    int32_t images;      /* images in the sample */
    int32_t tiles;       /* encoder inputs for those images (tiles + thumbnails) */
    int32_t frames;      /* video frames given to the encoder */
    double audio_s;      /* seconds of audio */
} mm_sample;

/* The sample's modality: audio if audio_s > 0, else video if frames > 0,
 * else multi-image if images > 1, else image if images or tiles > 0, else text. */
mm_modality mm_sample_modality(const mm_sample *s);

/* LLM tokens per encoder input, from the model config.  Filled by the
 * caller; the workload layer only multiplies. */
typedef struct mm_token_model {
    int64_t tokens_per_tile;   /* e.g. 256 InternVL (448 px, pixel shuffle 0.5), 576 LLaVA-1.5, 729 SigLIP-384 */
    int64_t tokens_per_frame;  /* e.g. 196 LLaVA-OV (2x2 pooled), 256 InternVL */
    int tiles_per_image_cap;   /* LLaVA-OV anyres_max_9: 10 tiles' tokens per image at most; 0 none */
    double tokens_per_audio_s; /* e.g. 25 Qwen2-Audio */
    double audio_clip_s;       /* encoder window: one encoder input per started clip (30 s Whisper); 0 = 30 */
    int64_t max_tokens;        /* LLM sequence is truncated here (model_max_length); 0 = no cap */
} mm_token_model;

/* Fills tm from a model: tokens_per_tile = mm_model_tokens_per_tile, a video
 * frame as the model makes it (mm_model_tokens_per_frame), audio = the encoder's positions per second (Whisper:
 * 1500 per 30 s) halved by Qwen2-Audio's AvgPool1d(2,2) (arXiv 2407.10759
 * Sec. 2), max_tokens = 0.  Models without vision/audio get 0 there. */
void mm_token_model_from_model(const mm_model *m, mm_token_model *tm);

int64_t mm_sample_audio_tokens(const mm_sample *s, const mm_token_model *tm);
/* Visual + audio tokens the encoders hand to the LLM. */
int64_t mm_sample_mm_tokens(const mm_sample *s, const mm_token_model *tm);
/* LLM sequence length: text + visual + audio tokens, capped at max_tokens. */
int64_t mm_sample_llm_tokens(const mm_sample *s, const mm_token_model *tm);
/* Audio encoder inputs: clips of audio_clip_s seconds (each padded to the window). */
int32_t mm_sample_audio_clips(const mm_sample *s, const mm_token_model *tm);

/* ---- native resolution (native.c) ---------------------------------- */

/* Qwen2-VL's smart_resize: the H x W image (pixels) resized so that both
 * sides are multiples of factor (patch * merge) and the area lies within
 * [min_px, max_px] as nearly as the aspect ratio allows.  -1 for what the
 * processor refuses (a side under 10 px, an aspect ratio over 200) or a bad
 * factor/range; 0 and *rh x *rw otherwise. */
/* Qwen2VLImageProcessor's defaults (transformers @ 009f637): min_pixels
 * 56*56, max_pixels 28*28*1280 (4 to 1280 LLM tokens per image). */
#define MM_NATIVE_MIN_PIXELS (56 * 56)
#define MM_NATIVE_MAX_PIXELS (28 * 28 * 1280)
int mm_native_resize(int64_t h, int64_t w, int64_t factor, int64_t min_px, int64_t max_px, int64_t *rh,
                     int64_t *rw);
/* LLM tokens of one image at native resolution: (H'/patch)(W'/patch) /
 * merge^2 for the resized H' x W' (Qwen2-VL: patch 14, merge 2); -1 where
 * mm_native_resize refuses. */
int64_t mm_native_image_tokens(int64_t h, int64_t w, int64_t patch, int64_t merge, int64_t min_px, int64_t max_px);

/* ---- mixtures (workloads/NAME.yaml; format in workloads/README.md) ------- */

typedef struct mm_mixture mm_mixture; /* opaque */

/* Loads a mixture spec.  Errors (MM_EINPUT) name the file, the line and
 * the dotted key, e.g. "components[2].text_tokens.sigma". */
int mm_mixture_load(const char *path, mm_mixture **out, mm_err *err);
/* The same from text in memory; `name` stands for the file in errors and
 * histogram files are looked up relative to the current directory. */
int mm_mixture_load_string(const char *name, const char *text, mm_mixture **out, mm_err *err);
void mm_mixture_free(mm_mixture *mix);

/* Rescales component weights so that (image + multi-image weight) : (text
 * weight) = ratio, keeping their sum and the weights within each group;
 * video and audio components are left alone.  The file's own
 * `image_text_ratio:` key does the same at load.  MM_EINPUT (key
 * "image_text_ratio") when ratio <= 0 or a group is empty. */
int mm_mixture_set_image_text_ratio(mm_mixture *mix, double ratio, mm_err *err);

int mm_mixture_n_components(const mm_mixture *mix);
/* Name, modality and normalized weight of component i. */
const char *mm_mixture_component(const mm_mixture *mix, int i, mm_modality *modality, double *weight);

/* Draws n samples of iteration `iteration` into out[0..n).  Sample ids are
 * iteration * n + k. */
int mm_mixture_draw(const mm_mixture *mix, uint64_t seed, int64_t iteration, int n,
                    mm_sample *out, mm_err *err);

/* The most encoder inputs (tiles + frames) one sample of the mixture can
 * have: per component the largest image count times the largest tiles per
 * image, plus max_frames; -1 when a component's draw is unbounded. */
double mm_mixture_max_inputs(const mm_mixture *mix);

/* ---- traces (CSV: id,text_tokens,images,tiles,frames,audio_seconds) ---- */

typedef struct mm_sample_trace {
    char path[256];
    int64_t n;
    mm_sample *samples; /* in file order */
} mm_sample_trace;

/* Reads a trace.  Lines starting with '#' are comments; the first other
 * line is the header naming the six columns (any order).  A bad row gives
 * MM_EINPUT naming the file, the line and the column (key = column name). */
int mm_sample_trace_load(const char *path, mm_sample_trace *t, mm_err *err);
void mm_sample_trace_free(mm_sample_trace *t);
/* Samples (iteration * n + k) mod t->n for k < n: the file replayed in
 * order, wrapping at its end. */
void mm_sample_trace_draw(const mm_sample_trace *t, int64_t iteration, int n, mm_sample *out);

/* ---- a workload: any of the sources --------------------------------- */

typedef enum mm_workload_source { MM_WLS_FIXED, MM_WLS_MIXTURE, MM_WLS_TRACE } mm_workload_source;

typedef struct mm_workload {
    mm_workload_source source;
    mm_sample fixed;       /* MM_WLS_FIXED: every sample (id renumbered) */
    mm_mixture *mixture;   /* MM_WLS_MIXTURE */
    mm_sample_trace trace; /* MM_WLS_TRACE */
} mm_workload;

/* A .csv file is a trace, anything else a mixture spec. */
int mm_workload_load(const char *path, mm_workload *w, mm_err *err);
void mm_workload_init_fixed(mm_workload *w, const mm_sample *s);
int mm_workload_draw(const mm_workload *w, uint64_t seed, int64_t iteration, int n,
                     mm_sample *out, mm_err *err);
void mm_workload_free(mm_workload *w);
/* The workload's own largest encoder inputs per sample (tiles + frames):
 * a trace's largest row, a mixture's bound (mm_mixture_max_inputs), the
 * fixed sample's; -1 when unbounded. */
double mm_workload_max_inputs(const mm_workload *w);

/* ---- statistics ------------------------------------------------------ */

typedef struct mm_value_summary {
    double mean, sd, min, max, p50, p90, p99; /* percentiles: GSL's linear interpolation
                                               * between order statistics (gsl_stats_quantile_from_sorted_data) */
} mm_value_summary;

typedef struct mm_workload_stats {
    int64_t samples;
    int64_t by_modality[MM_MOD_COUNT];
    mm_value_summary text_tokens, llm_tokens, encoder_inputs, images, tiles, frames, audio_s;
    double llm_tokens_total, encoder_inputs_total;
    int64_t truncated; /* samples cut at tm->max_tokens */
} mm_workload_stats;

/* Statistics of n samples under a token model.  encoder_inputs = tiles +
 * frames + audio clips. */
int mm_workload_stats_compute(const mm_sample *s, int64_t n, const mm_token_model *tm,
                              mm_workload_stats *st, mm_err *err);

/* Histogram of values into `bins` equal bins over [lo, hi) where lo and hi
 * are min and max rounded outward to a round width (1, 2 or 5 x 10^k);
 * counts[bins] and edges[bins + 1]; returns the bins used (<= bins). */
int mm_value_histogram(const double *v, int64_t n, int bins, double *edges, int64_t *counts);

#endif
