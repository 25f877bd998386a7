/* emit_internal.h - what the emitters (emit_megatron.c, emit_torchtitan.c,
 * emit_deepspeed.c) share: the text being written and the refusals being
 * gathered (emit_common.c).  emit.c calls the emitters; they call only
 * emit_common.c, never emit.c.
 * Not for: callers outside the emitters (emit.h). */
#ifndef MM_PLAN_EMIT_INTERNAL_H
#define MM_PLAN_EMIT_INTERNAL_H

#include <stdbool.h>

#include "plan/emit.h"

/* A growing text. */
typedef struct mm_emit_buf {
    char *s;
    size_t n, cap;
    bool oom;
} mm_emit_buf;

typedef struct mm_emit_ctx {
    const mm_sim *sim;
    const char *format;  /* "megatron", ... for messages */
    const char *path;    /* the file written (NULL: none given) */
    mm_emit_buf out, aux;    /* the file, and the companion (deepspeed) */
    int n_refused;
    char first_key[96];  /* the first refused scenario key */
    char text[480];      /* "key: why; key: why" */
    int dropped;
} mm_emit_ctx;

/* Appends to the file (out) or the companion (aux). */
void mm_emit_printf(mm_emit_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define mm_emit_put(c, ...) mm_emit_printf(&(c)->out, __VA_ARGS__)
#define mm_emit_aux(c, ...) mm_emit_printf(&(c)->aux, __VA_ARGS__)

/* A scenario key (or a model property, under key "model") the format
 * cannot express, and why: gathered, reported once by mm_emit_report. */
void mm_emit_refuse(mm_emit_ctx *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* 0 when nothing was refused, else the one MM_EINPUT error naming the
 * scenario's file, the first key's line and every refusal. */
int mm_emit_report(const mm_emit_ctx *c, mm_err *err);

/* Refusals every emitter shares: a model with an encoder or a workload
 * other than text (these tools' text pretraining reads token sequences of
 * train.seq_len), a framework profile other than the tool's own
 * (`profiles`, NULL-terminated: the scenario was costed as that framework
 * runs a layer), and a data-parallel degree the world size does not give
 * (the tools derive dp as GPUs / (tp pp cp)). */
void mm_emit_refuse_common(mm_emit_ctx *c, const char *const *profiles);

/* The effective settings of the LLM, as the cost bridge reads them
 * (costs.c): its ZeRO stage and recompute mode (the module's, else the
 * train. key), sequence parallelism (train. or the module's, at tp > 1)
 * and the overlaps (mm_sim_overlap: an `auto` resolved by the framework
 * profile). */
int mm_emit_llm_zero(const mm_sim *sim);
int mm_emit_llm_recompute(const mm_sim *sim);
bool mm_emit_llm_sp(const mm_sim *sim);
void mm_emit_overlaps(const mm_sim *sim, bool *grad_reduce, bool *param_gather);

int mm_emit_megatron(mm_emit_ctx *c);
int mm_emit_torchtitan(mm_emit_ctx *c);
int mm_emit_deepspeed(mm_emit_ctx *c);

#endif
