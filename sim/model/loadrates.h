/* loadrates.h - the data loader's per-core rates, read from a rates file
 * (frameworks/loader-rates.yaml, named by a framework profile's
 * loader.rates): how fast one CPU core decodes a JPEG, resizes an image,
 * decodes a video frame and tokenises text, how fast one NVDEC engine
 * decodes, how long an audio clip's log-mel features take, how many
 * bytes a pixel, a token and a clip become on the GPU, and how fast the
 * training process receives pickled bytes from a worker's result pipe.
 * Every entry is {value: V, source: "..."}: a number with its source, one
 * place for each, which the cost bridge (cost/loader.h) reads.
 * Not for: what a sample costs (cost/loader.c) or queueing the loader
 * against the step (exec/dataload.c). */
#ifndef MM_LOADRATES_H
#define MM_LOADRATES_H

#include "util/err.h"

typedef struct mm_loader_rates {
    double jpeg_mpx_s;         /* JPEG decode, megapixels/s per core */
    double jpeg_fixed_s;       /* JPEG decode, seconds per image beside its pixels */
    double resize_small_mpx_s; /* resize to a tile or thumbnail, source megapixels/s */
    double resize_grid_mpx_s;  /* resize to the anyres grid, source megapixels/s */
    double video_cpu_mpx_s;    /* video frame decode on one core, megapixels/s */
    double video_nvdec_mpx_s;  /* video frame decode on one NVDEC engine */
    double tokens_s;           /* tokenisation, tokens/s per core */
    double bytes_per_pixel;    /* a tile's or frame's pixel on the GPU */
    double bytes_per_token;    /* an LLM token's tensors on the GPU */
    double audio_clip_s;       /* log-mel features of one (padded) audio clip, s per core */
    double bytes_per_clip;     /* one clip's features on the GPU */
    double pipe_bytes_s;       /* bytes/s the training process receives through
                                  a worker's result pipe (pickled arrays) */
} mm_loader_rates;

/* Reads a rates file.  Every entry is required; a missing or unknown key,
 * a value not > 0 or an entry without a source gives MM_EINPUT naming the
 * file, the line and the dotted key (e.g. "jpeg_decode_mpx_s.value"). */
int mm_loader_rates_load(const char *path, mm_loader_rates *r, mm_err *err);

#endif
