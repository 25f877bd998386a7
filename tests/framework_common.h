/* framework_common.h - what the framework suites (test_framework.c,
 * test_dp_comm.c, test_enc_reduce.c) share: loading a profile, a profile copied with one line
 * edited, a sim prepared under a profile and ZeRO stage, and the DP
 * reduce bytes of an executed graph.  Static
 * inline, so a suite that does not call one does not warn.
 * Not for: assertions of their own. */
#ifndef MM_TEST_FRAMEWORK_COMMON_H
#define MM_TEST_FRAMEWORK_COMMON_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/compute.h"
#include "hw/net.h"
#include "model/framework_ops.h"
#include "model/framework.h"
#include "model/memory.h"
#include "cost/costs.h"
#include "exec/exec.h"
#include "cost/fwcost.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "plan/estimate.h"
#include "cost/breakdown.h"
#include "mmsim_exe.h"

static inline double rel(double a, double b) { return fabs(a - b) / fabs(b); }

static const char *const profiles[] = {"megatron-core", "megatron-local", "hf-deepspeed", "fsdp"};

static inline void load_profile(const char *name, mm_framework *fw)
{
    char path[256];
    snprintf(path, sizeof path, "frameworks/%s.yaml", name);
    mm_err err;
    ck_assert_msg(mm_framework_load(path, fw, &err) == 0, "%s:%d: %s: %s", err.file, err.line, err.key, err.msg);
}

/* mm_overlap_delay at the slowdown the shipped topologies state (the
 * paper's average, MM_OVERLAP_SLOWDOWN_DEFAULT: topologies/dgx-*.yaml). */
static inline double odelay(double overlapped_s)
{
    return mm_overlap_delay(overlapped_s, MM_OVERLAP_SLOWDOWN_DEFAULT);
}

/* Copies in to out with the first line holding `match` replaced by
 * `repl` (closing both); returns that line's number, 0 when none held it. */
static inline int copy_with_line(FILE *in, FILE *out, const char *match, const char *repl)
{
    ck_assert(in && out);
    char line[1024];
    int n = 0, hit = 0;
    while (fgets(line, sizeof line, in)) {
        n++;
        if (!hit && strstr(line, match)) {
            fputs(repl, out);
            hit = n;
        } else {
            fputs(line, out);
        }
    }
    fclose(in);
    fclose(out);
    return hit;
}

/* A copy of profile `src` into `path` whose host costs nothing (the host
 * section's launch_us, forward_op_us, backward_op_us and module_us at 0):
 * the host cursor then delays no kernel, so runs equal those before the
 * host was modeled bit for bit.  Returns the lines changed (4). */
static inline int profile_without_host(const char *src, const char *path)
{
    FILE *in = fopen(src, "r"), *out = fopen(path, "w");
    ck_assert(in && out);
    char line[1024];
    int hit = 0;
    static const char *const keys[] = {"  launch_us:", "  forward_op_us:", "  backward_op_us:", "  module_us:"};
    while (fgets(line, sizeof line, in)) {
        int k = 0;
        while (k < 4 && strncmp(line, keys[k], strlen(keys[k])))
            k++;
        if (k < 4) {
            fprintf(out, "%s 0\n", keys[k]);
            hit++;
        } else {
            fputs(line, out);
        }
    }
    fclose(in);
    fclose(out);
    return hit;
}

/* A copy of megatron-core.yaml with one line replaced, loaded. */
static inline int load_edited(const char *from, const char *to, mm_err *err, char *tmp, size_t len)
{
    snprintf(tmp, len, "/tmp/mmsim-fw-XXXXXX");
    int fd = mkstemp(tmp);
    ck_assert(fd >= 0);
    int done = copy_with_line(fopen("frameworks/megatron-core.yaml", "r"), fdopen(fd, "w"), from, to);
    ck_assert_msg(done, "no line with '%s'", from);
    mm_framework fw;
    int rc = mm_framework_load(tmp, &fw, err);
    unlink(tmp);
    return rc;
}

/* The suites' base scenario (Llama-2-7B, text, one DGX node at dp 8, a
 * batch of 8) as overrides, then `extra`'s; returns their count. */
static inline int base_sets(const char *sets[24], const char *const *extra, int n_extra)
{
    int n = 0;
    sets[n++] = "model=models/llama-2-7b.json";
    sets[n++] = "workload=text";
    sets[n++] = "parallel.vision=null";
    sets[n++] = "cluster.nodes=1";
    sets[n++] = "parallel.llm={tp: 1, pp: 1, dp: 8}";
    sets[n++] = "train.global_batch=8";
    for (int i = 0; i < n_extra && n < 24; i++)
        sets[n++] = extra[i];
    return n;
}

static inline void prepare(mm_sim *sim, const char *const *extra, int n_extra)
{
    const char *sets[24];
    int n = base_sets(sets, extra, n_extra);
    static mm_scenario sc;
    mm_err err;
    mm_scenario_free(&sc);
    ck_assert_msg(mm_scenario_load(&sc, NULL, sets, n, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_msg(mm_sim_prepare(sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
}

/* prepare() under framework profile `fw` at ZeRO stage `zero`, plus one
 * more scenario key when `extra` is not NULL. */
static inline void prepare_fw_zero(mm_sim *sim, const char *fw, int zero, const char *extra)
{
    char fwk[64], zs[32];
    snprintf(fwk, sizeof fwk, "train.framework=%s", fw);
    snprintf(zs, sizeof zs, "train.zero=%d", zero);
    const char *sets[] = {fwk, zs, extra};
    prepare(sim, sets, extra ? 3 : 2);
}

static inline int prepare_rc(const char *const *extra, int n_extra, mm_err *err)
{
    const char *sets[24];
    int n = base_sets(sets, extra, n_extra);
    static mm_scenario sc;
    mm_sim sim = {0};
    mm_scenario_free(&sc);
    int rc = mm_scenario_load(&sc, NULL, sets, n, err);
    if (!rc)
        rc = mm_sim_prepare(&sim, &sc, err);
    mm_sim_free(&sim);
    return rc;
}

/* Copies the profile `src` into a fresh temporary folder `dir` (tag names
 * it), the first line holding `match` replaced by `repl`; `path` gets the
 * copy's name.  Returns the replaced line's number (0: no line matched). */
static inline int profile_with_line(const char *src, const char *match, const char *repl, const char *tag, char *dir,
                             size_t dcap, char *path, size_t cap)
{
    mmx_tmpdir(dir, dcap, tag);
    snprintf(path, cap, "%s/bad.yaml", dir);
    return copy_with_line(fopen(src, "r"), fopen(path, "w"), match, repl);
}

/* Bytes each rank reduce-scatters (all-reduces) for the DP gradients, from
 * the executed graph: the DP ops of rank 0 that are not all-gathers. */
static inline double dp_reduce_bytes(const mm_graph *g, int *ops)
{
    double by = 0;
    *ops = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const mm_op *op = &g->ops[i];
        if (op->rank != 0 || op->cat != MM_CAT_DP || op->coll < 0)
            continue;
        const mm_coll *cl = &g->colls[op->coll];
        if (cl->kind == MM_COLL_ALLGATHER)
            continue;
        by += cl->bytes * cl->count;
        ++*ops;
    }
    return by;
}

#endif
