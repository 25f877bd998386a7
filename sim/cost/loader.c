/* loader.c - the data pipeline's per-sample costs (loader.h).  A sample
 * is decoded and preprocessed by one loader worker on one CPU core; the
 * rates below are published single-thread figures of the libraries the
 * frameworks' loaders call (Pillow, which bundles libjpeg-turbo; decord /
 * FFmpeg; Hugging Face tokenizers).  Known limits, stated: normalisation to
 * float and collation (torch.stack, the pin-memory copy) have no published
 * per-byte figure here and are not charged; a video frame costs one decoded
 * frame (decoding from the previous keyframe to a sampled frame is not
 * charged); audio feature extraction is refused by the scenario check.
 * Not for: the queue of workers against the step (exec/dataload.c). */
#include "cost/loader.h"

#include <math.h>

/* JPEG decode: libjpeg-turbo's tjbench, RGB 4:2:0 quality 95, 7216 x 5412,
 * single thread: 226.5 Mpixels/s decompression (libjpeg-turbo/libjpeg-turbo
 * pull request 820, tjbench on master, 2025). */
#define MM_JPEG_MPX_S 226.5
/* Resize (bicubic, Pillow-SIMD 3.3.0.post0 AVX2, Xeon E5-2666 v3, one
 * thread, RGB 2560 x 1600, megapixels of the source per second): to
 * 320 x 180 (a tile, a thumbnail) 432.15; to 1920 x 1200 (the anyres grid
 * an image is resized to before it is cut into tiles) 132.16
 * (python-pillow/pillow-perf, result/AWS c4.large.md @ 88cafa8f). */
#define MM_RESIZE_SMALL_MPX_S 432.15
#define MM_RESIZE_GRID_MPX_S 132.16
/* Video decode on the CPU (FFmpeg, H.264): 1341.77 frames/s of 1280 x 720
 * with 16 threads on a Core i7-12700H, 83.9 frames/s = 77.3 Mpixels/s per
 * thread; NVDEC: 1799.69 frames/s of the same video on one engine (RTX 3060
 * Laptop, one NVDEC), 1658.6 Mpixels/s (Trentonom0r3/CeLux
 * docs/BENCHMARKS.md, video reader CPU and CUDA benchmarks). */
#define MM_VIDEO_CPU_MPX_S (1341.77 * 0.9216 / 16.0)
#define MM_NVDEC_MPX_S (1799.69 * 0.9216)
/* Tokenisation: "less than 20 seconds to tokenize a GB of text on a
 * server's CPU" (huggingface/tokenizers README), at 4 bytes of English
 * text per token ("one token generally corresponds to ~4 characters of
 * text", OpenAI tokenizer documentation): 8e-8 s per token. */
#define MM_TOKENIZE_S_PER_TOKEN (20.0 / 1e9 * 4.0)
/* Bytes copied per token: input_ids and labels as int64 (Megatron's
 * get_batch and Hugging Face's collators both hand int64 tensors). */
#define MM_H2D_BYTES_PER_TOKEN 16.0
/* Bytes per pixel of a tile or frame: 3 channels of float32, what the
 * Hugging Face image processors return (pixel_values after rescale and
 * normalize, numpy float32). */
#define MM_H2D_BYTES_PER_PIXEL 12.0

/* The vision encoder's input, megapixels of one tile or frame (0: none). */
static double tile_mpx(const mm_sim *sim)
{
    const mm_model *m = sim->model;
    if (!m || !m->has_vision)
        return 0.0;
    double px = (double)m->vision.image_size;
    return px * px * 1e-6;
}

static void image_cost(const mm_sim *sim, const mm_sample *s, mm_loader_cost *c)
{
    double tile = tile_mpx(sim);
    if (s->images <= 0 && s->tiles <= 0)
        return;
    int images = s->images > 0 ? s->images : 1;
    double src = sim->sc.data.image_megapixels > 0 ? images * sim->sc.data.image_megapixels : s->tiles * tile;
    c->cpu_s += src / MM_JPEG_MPX_S;
    /* anyres (more tiles than images): resized to the grid, cut, plus a
     * thumbnail; one tile per image: resized once */
    c->cpu_s += src / MM_RESIZE_SMALL_MPX_S + (s->tiles > images ? src / MM_RESIZE_GRID_MPX_S : 0.0);
    c->h2d_bytes += s->tiles * tile * 1e6 * MM_H2D_BYTES_PER_PIXEL;
}

static void video_cost(const mm_sim *sim, const mm_sample *s, mm_loader_cost *c)
{
    if (s->frames <= 0)
        return;
    double tile = tile_mpx(sim);
    double src = s->frames * (sim->sc.data.video_megapixels > 0 ? sim->sc.data.video_megapixels : tile);
    if (sim->sc.data.video_decoder == MM_VDEC_NVDEC) {
        /* the GPU's engines decode in parallel; the frames land on the GPU
         * (no CPU resize, no pixel copy over PCIe) */
        c->dev_s += src / (MM_NVDEC_MPX_S * sim->cluster->gpu.nvdec);
        return;
    }
    c->cpu_s += src / MM_VIDEO_CPU_MPX_S + src / MM_RESIZE_SMALL_MPX_S;
    c->h2d_bytes += s->frames * tile * 1e6 * MM_H2D_BYTES_PER_PIXEL;
}

void mm_sim_loader_sample(const mm_sim *sim, const mm_sample *s, bool tokenize, mm_loader_cost *c)
{
    image_cost(sim, s, c);
    video_cost(sim, s, c);
    if (tokenize)
        c->cpu_s += (double)s->text_tokens * MM_TOKENIZE_S_PER_TOKEN;
    c->h2d_bytes += (double)mm_sample_llm_tokens(s, &sim->tm) * MM_H2D_BYTES_PER_TOKEN;
}

double mm_sim_loader_h2d_s(const mm_sim *sim, double bytes)
{
    const mm_cluster *cl = sim->cluster;
    return bytes > 0 ? bytes / (cl->pcie_bw * cl->pcie_eff) : 0.0;
}

double mm_sim_loader_slowdown(const mm_sim *sim, int workers)
{
    if (workers <= 0)
        return 1.0;
    double per_gpu = (double)sim->cluster->cpu_cores / sim->cluster->gpus_per_node;
    return fmax(1.0, workers / fmax(1.0, per_gpu - 1.0));
}
