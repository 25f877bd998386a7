/* emit_common.c - what the emitters share (emit_internal.h): the growing
 * text, the refusals gathered into one error, the refusals every format
 * makes, and the LLM's settings as the cost bridge resolves them.
 * Not for: any one format (emit_megatron.c, emit_torchtitan.c,
 * emit_deepspeed.c) or writing files (emit.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/costs.h"
#include "plan/emit_internal.h"

void mm_emit_printf(mm_emit_buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        size_t room = b->cap - b->n;
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (w < 0)
            return;
        if (b->s && (size_t)w < room) {
            b->n += (size_t)w;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + (size_t)w + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

void mm_emit_refuse(mm_emit_ctx *c, const char *key, const char *fmt, ...)
{
    if (c->n_refused++ == 0)
        snprintf(c->first_key, sizeof c->first_key, "%s", key);
    char why[300], one[420];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    size_t used = strlen(c->text);
    snprintf(one, sizeof one, "%s%s: %s", used ? "; " : "", key, why);
    if (used + strlen(one) + 1 > sizeof c->text) {
        c->dropped++;
        return;
    }
    memcpy(c->text + used, one, strlen(one) + 1);
}

int mm_emit_report(const mm_emit_ctx *c, mm_err *err)
{
    if (!c->n_refused)
        return 0;
    char more[48] = "";
    if (c->dropped)
        snprintf(more, sizeof more, "; and %d more", c->dropped);
    return mm_scenario_fail(&c->sim->sc, err, c->first_key, "--emit %s cannot express %d setting%s: %s%s", c->format,
                            c->n_refused, c->n_refused == 1 ? "" : "s", c->text, more);
}

void mm_emit_refuse_common(mm_emit_ctx *c, const char *const *profiles)
{
    const mm_sim *sim = c->sim;
    const mm_scenario *sc = &sim->sc;
    if (sim->model->has_vision || sim->model->has_audio)
        mm_emit_refuse(c, "model", "%s has %s encoder: a %s launch of text pretraining builds the decoder alone, and "
                       "where the encoder runs (parallel.placement %s) is not one of its settings",
                       sim->model->name, sim->model->has_vision ? "a vision" : "an audio", c->format,
                       mm_placement_names[sc->parallel.placement]);
    else if (sc->workload.kind != MM_WORKLOAD_TEXT)
        mm_emit_refuse(c, "workload", "a text-only model reads text sequences of train.seq_len tokens in %s; "
                       "set workload: text", c->format);
    bool known = false;
    char names[96] = "";
    for (int i = 0; profiles[i]; i++) {
        known |= !strcmp(sc->train.framework, profiles[i]);
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", i ? " or " : "", profiles[i]);
    }
    if (!known)
        mm_emit_refuse(c, "train.framework", "'%s': the scenario was costed as it runs; %s runs as %s",
                       sc->train.framework, c->format, names);
    /* the megatron list writes train.grad_reduce (emit_megatron.c); the
     * others' reduce dtype is not one of the settings they write */
    if (sc->train.grad_reduce != MM_TGRAD_AUTO && strcmp(c->format, "megatron"))
        mm_emit_refuse(c, "train.grad_reduce", "'%s': %s is written with the framework profile's gradient reduce "
                       "dtype", mm_train_grad_reduce_names[sc->train.grad_reduce], c->format);
    const mm_layout *L = &sc->parallel.llm.lay;
    int gpus = mm_cluster_gpus(sim->cluster);
    if (mm_layout_gpus(L) != gpus)
        mm_emit_refuse(c, "parallel.llm.dp", "tp x pp x cp x dp = %d GPUs, not the cluster's %d: %s derives dp "
                       "from the world size", mm_layout_gpus(L), gpus, c->format);
}

int mm_emit_llm_zero(const mm_sim *sim)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    return L->zero >= 0 ? L->zero : sim->sc.train.zero;
}

int mm_emit_llm_recompute(const mm_sim *sim)
{
    return mm_sim_recompute(sim, &sim->sc.parallel.llm);
}

bool mm_emit_llm_sp(const mm_sim *sim)
{
    const mm_module_layout *L = &sim->sc.parallel.llm;
    return (sim->sc.train.sequence_parallel || L->sp) && L->lay.tp > 1;
}

void mm_emit_overlaps(const mm_sim *sim, bool *grad_reduce, bool *param_gather)
{
    mm_sim_overlap(sim, mm_emit_llm_zero(sim), grad_reduce, param_gather);
}
