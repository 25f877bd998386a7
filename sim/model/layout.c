/* layout.c - the few functions of a parallel layout (layout.h): its GPUs,
 * the layers of each stage and model chunk under Megatron-LM's split
 * options, and those options' checks.
 * Not for: checking a layout against a cluster (scenario/check.c). */
#include "model/layout.h"

#include <stdio.h>

const char *const mm_schedule_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-2p", "zb-v", NULL};

static int one_if_zero(int x) { return x > 0 ? x : 1; }

int mm_layout_gpus(const mm_layout *l) { return l->tp * l->pp * one_if_zero(l->cp) * l->dp; }

/* The layers plus the embedding and the loss where they count as layers:
 * Megatron-Core's num_layers after the two `+= 1` of
 * get_num_layers_to_build (transformer_block.py at the commit layout.h
 * names). */
static int64_t counted_layers(const mm_layout *l, int64_t layers)
{
    return layers + (l->embedding_in_split ? 1 : 0) + (l->loss_in_split ? 1 : 0);
}

static bool split_options(const mm_layout *l) { return l->embedding_in_split || l->loss_in_split; }

int mm_layout_chunk_layers(const mm_layout *l, int64_t layers, int s, int v)
{
    int pp = one_if_zero(l->pp), vpp = one_if_zero(l->vpp);
    if (l->n_layers_per_stage > 0) /* each stage's layers in vpp equal chunks */
        return l->layers_per_stage[s] / vpp;
    int64_t per = counted_layers(l, layers) / ((int64_t)pp * vpp);
    /* the embedding (loss) is not a transformer layer: the first chunk of
     * the first stage (the last chunk of the last stage) builds one fewer */
    if (l->embedding_in_split && s == 0 && v == 0)
        per--;
    if (l->loss_in_split && s == pp - 1 && v == vpp - 1)
        per--;
    return (int)per;
}

int mm_layout_stage_layers(const mm_layout *l, int64_t layers, int s)
{
    if (l->n_layers_per_stage > 0)
        return l->layers_per_stage[s];
    if (!split_options(l))
        return (int)(layers / one_if_zero(l->pp));
    int n = 0;
    for (int v = 0; v < one_if_zero(l->vpp); v++)
        n += mm_layout_chunk_layers(l, layers, s, v);
    return n;
}

int64_t mm_layout_chunk_offset(const mm_layout *l, int64_t layers, int s, int v)
{
    int pp = one_if_zero(l->pp);
    int64_t off = 0;
    for (int k = 0; k < v * pp + s; k++)
        off += mm_layout_chunk_layers(l, layers, k % pp, k / pp);
    return off;
}

void mm_layout_flatten(const mm_layout *l, int64_t layers, int *per_vstage, mm_layout *flat)
{
    int pp = one_if_zero(l->pp), vpp = one_if_zero(l->vpp);
    *flat = *l;
    flat->pp = pp * vpp;
    flat->vpp = 1;
    flat->embedding_in_split = flat->loss_in_split = false;
    flat->n_layers_per_stage = 0;
    flat->layers_per_stage = NULL;
    if (!l->n_layers_per_stage && !split_options(l))
        return;
    for (int k = 0; k < pp * vpp; k++)
        per_vstage[k] = mm_layout_chunk_layers(l, layers, k % pp, k / pp);
    flat->n_layers_per_stage = pp * vpp;
    flat->layers_per_stage = per_vstage;
}

/* Megatron-LM refuses each of these (transformer_config.py __post_init__:
 * the ValueErrors on account_for_*_in_pipeline_split; arguments.py
 * validate_args asserts the same divisibility); messages in its meaning. */
int mm_layout_split_check(const mm_layout *l, int64_t layers, char *msg, size_t len)
{
    if (!split_options(l))
        return 0;
    int pp = one_if_zero(l->pp), vpp = one_if_zero(l->vpp);
    int64_t n = counted_layers(l, layers);
    const char *what = l->embedding_in_split && l->loss_in_split ? "the embedding and the loss"
                       : l->embedding_in_split                   ? "the embedding"
                                                                 : "the loss";
    if (l->n_layers_per_stage > 0) {
        snprintf(msg, len, "cannot be combined with layers_per_stage (Megatron-LM: "
                           "--decoder-first/last-pipeline-num-layers cannot be set together with "
                           "--account-for-embedding/loss-in-pipeline-split)");
        return -1;
    }
    if (n % pp) {
        snprintf(msg, len, "%lld layers with %s counted as layers (%lld) do not divide by pp = %d (Megatron-LM: "
                           "num_layers after account_for_embedding/loss_in_pipeline_split must be divisible by "
                           "pipeline_model_parallel_size)", (long long)layers, what, (long long)n, pp);
        return -1;
    }
    if ((n / pp) % vpp) {
        snprintf(msg, len, "%lld layers per pipeline rank (%s counted as layers) do not divide by vpp = %d "
                           "(Megatron-LM: the number of layers on each pipeline rank must be divisible by "
                           "virtual_pipeline_model_parallel_size)", (long long)(n / pp), what, vpp);
        return -1;
    }
    /* a chunk of the embedding (loss) alone is allowed, as in Megatron
     * (its assert is num_layers_to_build >= 0), unless it would be both */
    if (mm_layout_chunk_layers(l, layers, 0, 0) < 0 || mm_layout_chunk_layers(l, layers, pp - 1, vpp - 1) < 0) {
        snprintf(msg, len, "%lld layers over %d model chunks leave fewer than none for %s (Megatron-LM: not "
                           "enough layers in the first/last virtual pipeline stage)", (long long)n, pp * vpp, what);
        return -1;
    }
    return 0;
}

bool mm_layout_equal(const mm_layout *a, const mm_layout *b)
{
    if (a->tp != b->tp || a->pp != b->pp || a->vpp != b->vpp || a->cp != b->cp || a->dp != b->dp ||
        a->ep != b->ep || a->n_layers_per_stage != b->n_layers_per_stage ||
        a->embedding_in_split != b->embedding_in_split || a->loss_in_split != b->loss_in_split)
        return false;
    for (int s = 0; s < a->n_layers_per_stage; s++)
        if (a->layers_per_stage[s] != b->layers_per_stage[s])
            return false;
    return true;
}
