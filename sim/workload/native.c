/* native.c - dynamic (native) resolution as Qwen2-VL's image processor
 * reads an image: the size it resizes an image to, the patches the vision
 * tower sees and the LLM tokens its merger makes.  The rule is
 * transformers' Qwen2VLImageProcessor `smart_resize`
 * (huggingface/transformers @ 009f637,
 * src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py): each side
 * rounded to the nearest multiple of factor = patch * merge (Python's
 * round: ties to even), then, when the area leaves [min_pixels,
 * max_pixels], both sides scaled by one factor beta and floored (too
 * large) or ceiled (too small) to a multiple.  Qwen2-VL (arXiv 2409.12191
 * Sec. 2.1; its vision config patch_size 14, spatial_merge_size 2): an
 * H x W image gives (H/14)(W/14) patches and (H/14)(W/14)/4 LLM tokens.
 * Not for: drawing image sizes (mixture_draw.c), what a patch costs
 * (model/cost layers). */
#include <math.h>
#include <stdint.h>

#include "workload/workload.h"

/* The processor refuses sides under 10 px and aspect ratios over 200. */
#define NATIVE_MIN_SIDE 10
#define NATIVE_MAX_ASPECT 200.0

int mm_native_resize(int64_t h, int64_t w, int64_t factor, int64_t min_px, int64_t max_px, int64_t *rh,
                     int64_t *rw)
{
    if (h < NATIVE_MIN_SIDE || w < NATIVE_MIN_SIDE || factor < 1 || min_px < 1 || max_px < min_px ||
        (double)(h > w ? h : w) / (double)(h > w ? w : h) > NATIVE_MAX_ASPECT)
        return -1;
    double f = (double)factor, hh = (double)h, ww = (double)w;
    double hb = rint(hh / f) * f, wb = rint(ww / f) * f; /* rint: ties to even, as Python's round */
    if (hb * wb > (double)max_px) {
        double beta = sqrt(hh * ww / (double)max_px);
        hb = floor(hh / beta / f) * f;
        wb = floor(ww / beta / f) * f;
    } else if (hb * wb < (double)min_px) {
        double beta = sqrt((double)min_px / (hh * ww));
        hb = ceil(hh * beta / f) * f;
        wb = ceil(ww * beta / f) * f;
    }
    /* A side floored to 0 (an extreme aspect ratio at a small max_pixels)
     * keeps one factor, as later transformers versions clamp it. */
    *rh = hb < f ? factor : (int64_t)hb;
    *rw = wb < f ? factor : (int64_t)wb;
    return 0;
}

int64_t mm_native_image_tokens(int64_t h, int64_t w, int64_t patch, int64_t merge, int64_t min_px, int64_t max_px)
{
    int64_t rh, rw;
    if (patch < 1 || merge < 1 || mm_native_resize(h, w, patch * merge, min_px, max_px, &rh, &rw))
        return -1;
    return (rh / patch) * (rw / patch) / (merge * merge);
}
