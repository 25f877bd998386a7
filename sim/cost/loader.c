/* loader.c - the data pipeline's per-sample costs (loader.h).  A sample
 * is decoded and preprocessed by one loader worker on one CPU core, at
 * the rates of the framework profile's rates file (sim->rates,
 * model/loadrates.h: published single-thread figures of the libraries the
 * frameworks' loaders call, Pillow with its libjpeg-turbo, FFmpeg as
 * decord calls it, Hugging Face tokenizers, each with its source there).  Known limits, stated: normalisation to
 * float and collation (torch.stack, the pin-memory copy) have no published
 * per-byte figure here and are not charged; the training process's
 * receive of each batch is not charged in a run (the frameworks' loaders
 * hand tensors, which cross in shared memory; mm_loader_pipe_recv_s
 * prices pickled arrays for the queue); a video frame costs one decoded
 * frame (decoding from the previous keyframe to a sampled frame is not
 * charged); an audio clip's features are computed over the whole padded
 * clip (Whisper's 30 s), as the extractor pads it.
 * Not for: the queue of workers against the step (exec/dataload.c). */
#include "cost/loader.h"

#include <math.h>
#include <stdlib.h>

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
    const mm_loader_rates *r = &sim->rates;
    c->cpu_s += mm_loader_jpeg_decode_s(r, images, src);
    /* anyres (more tiles than images): resized to the grid, cut, plus a
     * thumbnail; one tile per image: resized once */
    c->cpu_s += src / r->resize_small_mpx_s + (s->tiles > images ? src / r->resize_grid_mpx_s : 0.0);
    c->h2d_bytes += s->tiles * tile * 1e6 * r->bytes_per_pixel;
}

double mm_loader_jpeg_decode_s(const mm_loader_rates *r, double images, double mpx)
{
    return images * r->jpeg_fixed_s + mpx / r->jpeg_mpx_s;
}

double mm_loader_pipe_recv_s(const mm_loader_rates *r, double bytes)
{
    return bytes > 0 ? bytes / r->pipe_bytes_s : 0.0;
}

static void video_cost(const mm_sim *sim, const mm_sample *s, mm_loader_cost *c)
{
    if (s->frames <= 0)
        return;
    const mm_loader_rates *r = &sim->rates;
    double tile = tile_mpx(sim);
    double src = s->frames * (sim->sc.data.video_megapixels > 0 ? sim->sc.data.video_megapixels : tile);
    if (sim->sc.data.video_decoder == MM_VDEC_NVDEC) {
        /* the GPU's engines decode in parallel; the frames land on the GPU
         * (no CPU resize, no pixel copy over PCIe) */
        c->dev_s += src / (r->video_nvdec_mpx_s * sim->cluster->gpu.nvdec);
        return;
    }
    c->cpu_s += src / r->video_cpu_mpx_s + src / r->resize_small_mpx_s;
    c->h2d_bytes += s->frames * tile * 1e6 * r->bytes_per_pixel;
}

void mm_sim_loader_sample(const mm_sim *sim, const mm_sample *s, bool tokenize, mm_loader_cost *c)
{
    image_cost(sim, s, c);
    video_cost(sim, s, c);
    if (s->audio_s > 0 && sim->model && sim->model->has_audio) { /* padded clips, as the encoder takes them */
        double clips = (double)mm_sample_audio_clips(s, &sim->tm);
        c->cpu_s += clips * sim->rates.audio_clip_s;
        c->h2d_bytes += clips * sim->rates.bytes_per_clip;
    }
    if (tokenize)
        c->cpu_s += (double)s->text_tokens / sim->rates.tokens_s;
    c->h2d_bytes += (double)mm_sample_llm_tokens(s, &sim->tm) * sim->rates.bytes_per_token;
}

bool mm_sim_loader_fixed_sample(const mm_sim *sim, mm_sample *s)
{
    const mm_scenario *sc = &sim->sc;
    const mm_model *mo = sim->model;
    *s = (mm_sample){.text_tokens = (int64_t)sim->seq};
    if (sc->workload.kind != MM_WORKLOAD_FIXED || !mo || (!mo->has_vision && !mo->has_audio))
        return false;
    s->text_tokens = sc->workload.text_tokens;
    if (mo->has_vision) {
        s->images = sc->workload.images;
        s->tiles = sc->workload.images * sc->workload.tiles;
    }
    if (mo->has_audio)
        s->audio_s = sc->workload.audio_seconds;
    return true;
}

int mm_sim_loader_micro_batch(const mm_sim *sim, mm_loader_cost *c, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    int dp = sc->parallel.llm.lay.dp, B = (int)sc->train.global_batch;
    *c = (mm_loader_cost){0};
    if (!sim->wl) {
        mm_sample one;
        bool tok = mm_sim_loader_fixed_sample(sim, &one);
        for (int64_t k = 0; k < sc->train.micro_batch; k++)
            mm_sim_loader_sample(sim, &one, tok, c);
        return 0;
    }
    mm_sample *s = malloc((size_t)B * sizeof *s);
    if (!s)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = mm_workload_draw(sim->wl, sc->seed, 0, B, s, err);
    for (int k = 0; rc == 0 && k < B; k += dp)
        mm_sim_loader_sample(sim, &s[k], true, c);
    free(s);
    double mbs = (double)B / dp / (double)sc->train.micro_batch; /* micro-batches of a replica */
    c->cpu_s /= mbs, c->dev_s /= mbs, c->h2d_bytes /= mbs;
    return rc;
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

double mm_sim_loader_short_s(const mm_sim *sim, int workers, double cpu_s, double dev_s, double step_s)
{
    if (workers <= 0)
        return cpu_s + dev_s;
    double period = fmax(cpu_s * mm_sim_loader_slowdown(sim, workers) / workers, dev_s);
    return fmax(0.0, period - step_s);
}
