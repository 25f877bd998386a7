/* megatron_args.h - the one table of Megatron-LM's command-line arguments
 * as mmsim reads them (megatron_args.c): each argument mapped onto the
 * scenario or the model, costless (accepted, no effect on the simulated
 * iteration), or not modeled (it changes the cost and mmsim does not model
 * it: refused by name).
 * Not for: what a mapped argument becomes (megatron.c). */
#ifndef MM_SCENARIO_MEGATRON_ARGS_H
#define MM_SCENARIO_MEGATRON_ARGS_H

#include <stddef.h>

typedef enum { MG_FLAG, MG_VALUE } mm_mg_arity;
typedef enum { MG_MAPPED, MG_COSTLESS, MG_NOT_MODELED } mm_mg_class;

typedef struct mm_mg_arg {
    const char *name;  /* "--num-layers" */
    mm_mg_arity arity; /* a flag, or an option that takes a value */
    mm_mg_class cls;
    const char *why;   /* costless or not modeled: the reason shown; NULL when mapped */
} mm_mg_arg;

/* The row of an argument ("--lr"), or NULL when the table does not know it. */
const mm_mg_arg *mm_mg_arg_find(const char *name);

/* The rows, sorted by name (bytewise), and their count. */
extern const mm_mg_arg mm_mg_args[];
extern const size_t mm_mg_n_args;

/* The Megatron-LM commit the table was read from. */
#define MM_MG_ARGS_COMMIT "d98e8a64ddf34856e74b24714e3bedb2f5a39553"

/* The Zero Bubble papers' Megatron-LM fork, whose arguments select the
 * zero-bubble schedules (its add_zero_bubble_args and validate_arguments,
 * megatron/core/zbpp_utils.py; the table has its zero-bubble group), and
 * the arguments of the commit above that the fork's older
 * megatron/training/arguments.py does not declare: a list that carries
 * any of them beside a zero-bubble argument launches nowhere, and is
 * refused by name (NULL-terminated). */
#define MM_MG_ZB_REPO "sail-sg/zero-bubble-pipeline-parallelism"
#define MM_MG_ZB_COMMIT "39f2c186a27580b7051eb51e0f651e1efd0a8170"
extern const char *const mm_mg_zb_absent[];

#endif
