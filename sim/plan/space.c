/* space.c - the planner's search space (space.h): the narrowing a user
 * gives with --space, and the value lists the layout arithmetic allows.
 * Not for: walking the space (planner.c enumerates it) or validating one
 * layout (the scenario layer). */
#include "plan/space.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/llm.h"
#include "scenario/scenario.h"

const char *const mm_space_dim_names[] = {"placement", "enc_gpus", "enc_tp", "enc_pp",   "enc_recompute",
                                          "tp",        "cp",       "pp",     "vpp",      "ep",
                                          "micro_batch", "recompute", "zero", "schedule", NULL};

/* The name table of an enum dimension; NULL for an integer one. */
static const char *const *dim_names(mm_space_dim d)
{
    switch (d) {
    case MM_SD_PLACEMENT: return mm_placement_names;
    case MM_SD_ENC_RECOMPUTE:
    case MM_SD_RECOMPUTE: return mm_recompute_names;
    case MM_SD_SCHEDULE: return mm_schedule_names;
    default: return NULL;
    }
}

static int bad(mm_err *err, const char *arg, const char *what)
{
    return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--space", "'%.80s': %s", arg, what);
}

int mm_plan_space_parse(mm_plan_space *s, const char *arg, mm_err *err)
{
    const char *eq = strchr(arg, '=');
    if (!eq)
        return bad(err, arg, "takes DIM=V1,V2,... (dimensions: placement, enc_gpus, enc_tp, enc_pp, enc_recompute, "
                             "tp, cp, pp, vpp, ep, micro_batch, recompute, zero, schedule)");
    int d = -1;
    for (int i = 0; mm_space_dim_names[i]; i++)
        if (strlen(mm_space_dim_names[i]) == (size_t)(eq - arg) && !strncmp(arg, mm_space_dim_names[i], (size_t)(eq - arg)))
            d = i;
    if (d < 0)
        return bad(err, arg, "unknown dimension (placement, enc_gpus, enc_tp, enc_pp, enc_recompute, tp, cp, pp, vpp, "
                             "ep, micro_batch, recompute, zero, schedule)");
    const char *const *names = dim_names((mm_space_dim)d);
    char buf[1024];
    if (strlen(eq + 1) >= sizeof buf)
        return bad(err, arg, "list too long");
    snprintf(buf, sizeof buf, "%s", eq + 1);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == MM_SPACE_MAX_VALUES)
            return bad(err, arg, "at most 64 values per dimension");
        int v = -1;
        if (names) {
            for (int i = 0; names[i]; i++)
                if (!strcmp(t, names[i]))
                    v = i;
            if (v < 0) {
                char msg[200];
                int at = snprintf(msg, sizeof msg, "'%.40s' is not one of", t);
                for (int i = 0; names[i] && at > 0 && (size_t)at < sizeof msg; i++)
                    at += snprintf(msg + at, sizeof msg - (size_t)at, " %s", names[i]);
                return bad(err, arg, msg);
            }
        } else {
            char *end;
            errno = 0;
            long x = strtol(t, &end, 10);
            if (!*t || *end || errno || x < (d == MM_SD_ZERO ? 0 : 1) || x > (d == MM_SD_ZERO ? 3 : 1 << 24))
                return bad(err, arg, d == MM_SD_ZERO ? "zero takes 0, 1, 2 or 3" : "values are positive integers");
            v = (int)x;
        }
        s->v[d][n++] = v;
    }
    if (!n)
        return bad(err, arg, "needs at least one value");
    s->n[d] = n;
    return 0;
}

bool mm_plan_space_allows(const mm_plan_space *s, mm_space_dim d, int v)
{
    if (!s || !s->n[d])
        return true;
    for (int i = 0; i < s->n[d]; i++)
        if (s->v[d][i] == v)
            return true;
    return false;
}

int mm_space_tp_values(int n, int gpn, int64_t heads, int *out, int cap)
{
    int k = 0;
    for (int d = 1; d <= n && k < cap; d++) {
        if (n % d || (gpn % d && d % gpn) || (heads > 0 && heads % d))
            continue;
        out[k++] = d;
    }
    return k;
}

/* How L layers go on pp stages of vpp chunks each, following Megatron-LM
 * (megatron/core/transformer/transformer_block.py, the layer offsets of
 * get_num_layers_to_build and its pipeline-split options):
 *   - even: L / (pp vpp) per chunk when that divides (returns 1);
 *   - account_for_embedding_in_pipeline_split + ..._loss_...: the
 *     embedding and the loss count as a layer of the first and the last
 *     stage, so (L + 2) / pp per stage and one transformer layer fewer on
 *     those two; at vpp 1 written as per-stage counts (returns 0), with
 *     chunks as the layout's split options (returns 2: the first chunk
 *     of stage 0 and the last of stage pp-1 are short, model/layout.h,
 *     whose checks decide);
 *   - --decoder-first/last-pipeline-num-layers f, l: the pp - 2 middle
 *     stages take (L - f - l) / (pp - 2) each; with vpp every stage's count
 *     must divide by vpp.  We pick the middle count that minimizes the
 *     largest stage, the first stage taking the odd vpp-multiple (the last
 *     one carries the output layer and the loss).
 * Returns 0 with *f, *m, *l set (uneven), 1 (even), 2 (the split options,
 * *f, *m, *l the stages' layers), -1 (no split). */
int mm_space_split_layers(int64_t L, int pp, int vpp, int *f, int *m, int *l)
{
    *f = *m = *l = 0;
    if (L % ((int64_t)pp * vpp) == 0)
        return 1;
    mm_layout opt = {.tp = 1, .pp = pp, .vpp = vpp, .dp = 1, .embedding_in_split = true, .loss_in_split = true};
    char why[400];
    if (pp > 1 && vpp > 1 && mm_layout_split_check(&opt, L, why, sizeof why) == 0) {
        *f = mm_layout_stage_layers(&opt, L, 0);
        *m = pp > 2 ? mm_layout_stage_layers(&opt, L, 1) : 0;
        *l = mm_layout_stage_layers(&opt, L, pp - 1);
        return 2;
    }
    if (pp < 2 || L % vpp)
        return -1;
    if (vpp == 1 && (L + 2) % pp == 0 && (L + 2) / pp >= 2) {
        int per = (int)((L + 2) / pp);
        *f = *l = per - 1;
        *m = per;
        return 0;
    }
    int best = -1;
    for (int64_t mid = pp > 2 ? vpp : 0; (pp - 2) * mid <= L - 2 * vpp; mid += vpp) {
        int64_t rest = L - (pp - 2) * mid, last = vpp * (rest / (2 * vpp)), first = rest - last;
        int64_t worst = first > mid ? first : mid;
        if (last >= vpp && (best < 0 || worst <= best)) {
            best = (int)worst;
            *f = (int)first, *m = (int)mid, *l = (int)last;
        }
        if (pp == 2)
            break;
    }
    return best < 0 ? -1 : 0;
}
