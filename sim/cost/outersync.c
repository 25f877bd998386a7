/* outersync.c - one outer synchronisation across sites and what it
 * exposes (outersync.h). */
#include "cost/outersync.h"

#include <math.h>
#include <string.h>

#include "hw/compress.h"
#include "hw/wan.h"
#include "model/framework.h"
#include "model/llm.h"
#include "model/mllm.h"

double mm_sim_trainable_params(const mm_sim *sim)
{
    double p = sim->llm_frozen ? 0 : (double)mm_llm_params(sim->llm);
    for (int i = 0; i < sim->n_enc; i++) {
        const mm_sim_encoder *e = &sim->enc[i];
        if (!e->frozen_tower)
            p += (double)mm_encoder_params(e->enc);
        if (!e->frozen_proj && e->proj)
            p += (double)mm_projector_params(e->proj);
    }
    return p;
}

double mm_sim_outer_state_bytes(const mm_sim *sim, double rank_params)
{
    const mm_scenario *sc = &sim->sc;
    if (!sc->train.outer_sync.present || sc->train.outer_sync.algorithm != MM_OSYNC_DILOCO ||
        sc->train.outer_sync.state != 1)
        return 0;
    double per = 8.0 + (sc->train.outer_sync.overlap ? (sc->train.outer_sync.dtype == 1 ? 2.0 : 4.0) : 0.0);
    int dp = sc->parallel.llm.lay.dp > 0 ? sc->parallel.llm.lay.dp : 1;
    return rank_params * per / dp;
}

int mm_sim_outer_sync(const mm_sim *sim, double step_s, mm_outer_sync *out, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    const mm_cluster *c = sim->cluster;
    memset(out, 0, sizeof *out);
    if (!sc->train.outer_sync.present)
        return 0;
    if (c->sites < 2) /* check.c refuses it first; a library caller may not have */
        return mm_err_set(err, MM_EINPUT, sc->source, 0, "train.outer_sync", "the topology has no sites");
    out->on = true;
    out->sites = c->sites;
    out->algorithm = sc->train.outer_sync.algorithm;
    /* atom averages the peers' models asynchronously: every h steps, behind
     * the training (as diloco's overlap, one round late) */
    out->h = out->algorithm != MM_OSYNC_ALLREDUCE ? sc->train.outer_sync.h : 1;
    out->overlap = (out->algorithm == MM_OSYNC_DILOCO && sc->train.outer_sync.overlap) ||
                   out->algorithm == MM_OSYNC_ATOM;
    out->params = mm_sim_trainable_params(sim);
    /* allreduce sends the gradients at the element size the site's own DP
     * reduction uses (the framework's, train.grad_reduce); diloco the
     * pseudo-gradient, atom the model it averages, at train.outer_sync.dtype */
    out->bytes = out->params * (out->algorithm == MM_OSYNC_ALLREDUCE
                                    ? (double)mm_framework_grad_bytes(sim->fw, (mm_dtype)sc->train.precision)
                                    : sc->train.outer_sync.dtype == 1 ? 2.0 : 4.0);
    out->wire_bytes = out->bytes;
    out->step_s = step_s;
    mm_compress_use u = {0};
    const mm_compressor *z = mm_compressor_get(sc->train.outer_sync.compress);
    if (z) {
        if (mm_compress_resolve(sc->train.outer_sync.compress, sc->train.outer_sync.compress_ratio,
                                sc->train.outer_sync.compress_gb_s, sc->train.outer_sync.decompress_gb_s, c->gpu.name,
                                &u))
            return mm_err_set(err, MM_EINPUT, sc->source, 0, "train.outer_sync.compress",
                              "%s: a ratio or kernel throughput is missing", z->name);
        /* each GPU of a site compresses its shard and decompresses the
         * other sites' shards of it */
        double shard = out->bytes / (double)mm_cluster_gpus(c);
        out->wire_bytes = out->bytes / u.ratio;
        out->kernel_s = mm_compress_kernel_s(shard, u.compress_gb_s) +
                        (z->lossy ? (double)(c->sites - 1) : 1.0) * mm_compress_kernel_s(shard, u.decompress_gb_s);
    }
    out->wan_s = z && z->lossy ? mm_wan_allgather_s(c, out->wire_bytes) : mm_wan_allreduce_s(c, out->wire_bytes);
    out->sync_s = out->kernel_s + out->wan_s;
    out->exposed_s = out->overlap ? fmax(0.0, out->sync_s - out->h * step_s) : out->sync_s;
    out->per_iter_s = out->exposed_s / out->h;
    return 0;
}
