/* layout.c - the one way to change a scenario's layout (scenario.h,
 * mm_scenario_apply_layout): the planner's pre-score, its in-process
 * reruns and its stored reruns all go through it, so the three cannot
 * disagree about what a candidate is.  Also the same change spelled as
 * `--set` overrides, for a user who wants to run a candidate by hand.
 * Not for: choosing layouts (plan/planner.c) or checking them against the
 * model and cluster (the run layer). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scenario/scenario.h"

bool mm_layout_has_vision(int placement)
{
    return placement == MM_PLACE_PIPELINE || placement == MM_PLACE_DISJOINT || placement == MM_PLACE_COLOCATED;
}

/* The vision layout a placement gives the encoder: tp, pp, dp; no context,
 * virtual or expert parallelism, no uneven split, no split options. */
static mm_layout vision_of(const mm_relayout *lay)
{
    mm_layout v = lay->vision;
    v.vpp = v.cp = v.ep = 1;
    v.n_layers_per_stage = 0;
    v.layers_per_stage = NULL;
    v.embedding_in_split = v.loss_in_split = false;
    return v;
}

/* The module takes l whole: its degrees and split (a split l carries is
 * borrowed, scenario.h; none means the even split: one the scenario read
 * was for another pp, and its list stays with the scenario it came from). */
static void set_layout(mm_module_layout *m, const mm_layout *l)
{
    m->present = true;
    m->lay = *l;
    m->zero = -1; /* inherit the layout's train.zero */
}

void mm_scenario_apply_layout(mm_scenario *sc, const mm_relayout *lay)
{
    set_layout(&sc->parallel.llm, &lay->llm);
    if (lay->placement >= 0) {
        sc->parallel.placement = (mm_placement)lay->placement;
        if (mm_layout_has_vision(lay->placement)) {
            mm_layout v = vision_of(lay);
            set_layout(&sc->parallel.vision, &v);
        }
    }
    sc->train.micro_batch = lay->micro_batch;
    sc->train.recompute = (mm_recompute)lay->recompute;
    sc->parallel.llm.recompute = lay->recompute;
    if (lay->vision_recompute >= 0)
        sc->parallel.vision.recompute = lay->vision_recompute;
    sc->train.zero = lay->zero;
    sc->train.schedule = (mm_schedule_kind)lay->schedule;
}

void mm_scenario_reset_layout(mm_scenario *sc, const mm_scenario *base)
{
    sc->parallel = base->parallel; /* the sections apply_layout writes, whole */
    sc->train = base->train;
}

typedef struct jbuf {
    char *buf;
    size_t len, n;
} jbuf;

/* Appends printf output, snprintf-like: what does not fit is counted. */
static void append(jbuf *b, const char *fmt, va_list ap)
{
    size_t room = b->n < b->len ? b->len - b->n : 0;
    int w = vsnprintf(room ? b->buf + b->n : NULL, room, fmt, ap);
    if (w > 0)
        b->n += (size_t)w;
}

static void lit(jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void lit(jbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    append(b, fmt, ap);
    va_end(ap);
}

/* Appends one "key=value" string of the JSON list (no quotes or
 * backslashes can occur in these keys and values). */
static void put(jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(jbuf *b, const char *fmt, ...)
{
    lit(b, "%s\"", b->n > 1 ? ", " : "");
    va_list ap;
    va_start(ap, fmt);
    append(b, fmt, ap);
    va_end(ap);
    lit(b, "\"");
}

static void put_dims(jbuf *b, const char *m, const mm_layout *d, int zero, int recompute)
{
    const int *layers = d->n_layers_per_stage ? d->layers_per_stage : NULL;
    put(b, "parallel.%s.tp=%d", m, d->tp);
    put(b, "parallel.%s.pp=%d", m, d->pp);
    put(b, "parallel.%s.cp=%d", m, d->cp);
    put(b, "parallel.%s.dp=%d", m, d->dp);
    put(b, "parallel.%s.vpp=%d", m, d->vpp);
    put(b, "parallel.%s.ep=%d", m, d->ep);
    put(b, "parallel.%s.zero=%d", m, zero); /* what an inherited zero resolves to */
    if (recompute >= 0)
        put(b, "parallel.%s.recompute=%s", m, mm_recompute_names[recompute]);
    put(b, "parallel.%s.embedding_in_split=%s", m, d->embedding_in_split ? "true" : "false");
    put(b, "parallel.%s.loss_in_split=%s", m, d->loss_in_split ? "true" : "false");
    if (!layers) {
        put(b, "parallel.%s.layers_per_stage=[]", m);
        return;
    }
    lit(b, ", \"parallel.%s.layers_per_stage=[", m);
    for (int i = 0; i < d->pp; i++)
        lit(b, "%s%d", i ? "," : "", layers[i]);
    lit(b, "]\"");
}

size_t mm_layout_sets_json(const mm_relayout *lay, char *buf, size_t len)
{
    jbuf b = {.buf = buf, .len = buf ? len : 0, .n = 0};
    if (b.len > 1) {
        buf[0] = '[';
        buf[1] = '\0';
    }
    b.n = 1;
    if (lay->placement >= 0)
        put(&b, "parallel.placement=%s", mm_placement_names[lay->placement]);
    put_dims(&b, "llm", &lay->llm, lay->zero, lay->recompute);
    if (lay->placement >= 0 && mm_layout_has_vision(lay->placement)) {
        mm_layout v = vision_of(lay);
        put_dims(&b, "vision", &v, lay->zero, lay->vision_recompute);
    } else if (lay->vision_recompute >= 0) {
        put(&b, "parallel.vision.recompute=%s", mm_recompute_names[lay->vision_recompute]);
    }
    put(&b, "train.micro_batch=%d", lay->micro_batch);
    put(&b, "train.recompute=%s", mm_recompute_names[lay->recompute]);
    put(&b, "train.zero=%d", lay->zero);
    put(&b, "train.schedule=%s", mm_schedule_names[lay->schedule]);
    lit(&b, "]");
    if (b.len && b.n >= b.len)
        buf[b.len - 1] = '\0';
    return b.n;
}
