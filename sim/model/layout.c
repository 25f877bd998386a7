/* layout.c - the few functions of a parallel layout (layout.h).
 * Not for: checking a layout (scenario/check.c). */
#include "model/layout.h"

static int one_if_zero(int x) { return x > 0 ? x : 1; }

int mm_layout_gpus(const mm_layout *l) { return l->tp * l->pp * one_if_zero(l->cp) * l->dp; }

int mm_layout_stage_layers(const mm_layout *l, int64_t layers, int s)
{
    if (l->n_layers_per_stage > 0)
        return l->layers_per_stage[s];
    return (int)(layers / one_if_zero(l->pp));
}

bool mm_layout_equal(const mm_layout *a, const mm_layout *b)
{
    if (a->tp != b->tp || a->pp != b->pp || a->vpp != b->vpp || a->cp != b->cp || a->dp != b->dp ||
        a->ep != b->ep || a->n_layers_per_stage != b->n_layers_per_stage)
        return false;
    for (int s = 0; s < a->n_layers_per_stage; s++)
        if (a->layers_per_stage[s] != b->layers_per_stage[s])
            return false;
    return true;
}
