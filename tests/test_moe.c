/* test_moe.c - MoE routing loads, capacity, busiest-rank pacing, the
 * dispatcher's permute kernels, grouped GEMMs, and the moe scenario keys.
 * Launches: Transformer Engine v2.8's GroupedLinear (one cuBLAS GEMM per
 * expert, split_quantize expert by expert; current scaling three kernels
 * each, delayed scaling one fused kernel).
 * Formulas: Megatron-Core get_capacity = ceil(tokens x k / E x factor)
 * (NVIDIA/Megatron-LM d98e8a64, megatron/core/transformer/moe/moe_utils.py);
 * the model: tests/data/hf/qwen3-30b-a3b.json (Qwen/Qwen3-30B-A3B). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cost/costs.h"
#include "cost/fwcost.h"
#include "hw/cluster.h"
#include "hw/compute.h"
#include "model/llm.h"
#include "model/fp8.h"
#include "model/moe.h"
#include "mmsim_exe.h"

#define E 128
#define K 8
#define RANKS 8
#define TOKENS 4096

static mm_moe_cfg cfg(int routing)
{
    return (mm_moe_cfg){.routing = routing, .seed = 1};
}

/* Dropless: every source rank sends tokens x k copies, none of an expert
 * above tokens; balanced is the exact even split. */
START_TEST(loads_sum)
{
    static int64_t load[RANKS * E];
    for (int r = MM_MOE_BALANCED; r <= MM_MOE_SKEWED; r++) {
        mm_moe_cfg c = cfg(r);
        for (uint64_t d = 0; d < 3; d++) {
            ck_assert_int_eq(mm_moe_draw(&c, E, K, RANKS, TOKENS, d, load), 0);
            for (int j = 0; j < RANKS; j++) {
                int64_t sum = 0;
                for (int e = 0; e < E; e++) {
                    ck_assert_int_le(load[j * E + e], TOKENS);
                    ck_assert_int_ge(load[j * E + e], 0);
                    sum += load[j * E + e];
                }
                ck_assert_int_eq(sum, (int64_t)TOKENS * K);
            }
        }
    }
    mm_moe_cfg b = cfg(MM_MOE_BALANCED);
    ck_assert_int_eq(mm_moe_draw(&b, E, K, RANKS, TOKENS, 0, load), 0);
    for (int e = 0; e < E; e++)
        ck_assert_int_eq(load[e], TOKENS * K / E);
    /* a skewed draw is uneven: its busiest expert gets well above the mean */
    mm_moe_cfg s = cfg(MM_MOE_SKEWED);
    ck_assert_int_eq(mm_moe_draw(&s, E, K, RANKS, TOKENS, 0, load), 0);
    int64_t mx = 0;
    for (int e = 0; e < E; e++)
        mx = load[e] > mx ? load[e] : mx;
    ck_assert_int_gt(mx, 2 * TOKENS * K / E);
    ck_assert_int_eq(mm_moe_draw(&s, E, K + E, RANKS, TOKENS, 0, load), -1); /* k > E */
}
END_TEST

/* Capacity: ceil(tokens x k / E x factor) per source rank; an expert keeps
 * min(load, capacity) of the same draw; padded, exactly capacity. */
START_TEST(capacity_clips)
{
    ck_assert_int_eq(mm_moe_capacity(4096, 8, 128, 1.0), 256);
    ck_assert_int_eq(mm_moe_capacity(4096, 8, 128, 1.25), 320);
    ck_assert_int_eq(mm_moe_capacity(1000, 2, 3, 1.0), 667); /* ceil(666.67) */
    static int64_t free_[RANKS * E], drop[RANKS * E], pad[RANKS * E];
    mm_moe_cfg c = cfg(MM_MOE_AUX_LOSS);
    ck_assert_int_eq(mm_moe_draw(&c, E, K, RANKS, TOKENS, 5, free_), 0);
    c.capacity_factor = 1.0;
    ck_assert_int_eq(mm_moe_draw(&c, E, K, RANKS, TOKENS, 5, drop), 0);
    c.pad = true;
    ck_assert_int_eq(mm_moe_draw(&c, E, K, RANKS, TOKENS, 5, pad), 0);
    int64_t cap = 256, clipped = 0;
    for (int i = 0; i < RANKS * E; i++) {
        ck_assert_int_eq(drop[i], free_[i] < cap ? free_[i] : cap);
        ck_assert_int_eq(pad[i], cap);
        clipped += free_[i] > cap;
    }
    ck_assert_int_gt(clipped, 0); /* the draw is uneven enough to drop */
    mm_moe_load ld;
    c.pad = false;
    ck_assert_int_eq(mm_moe_profile(&c, E, K, RANKS, TOKENS, &ld), 0);
    ck_assert(ld.dropped > 0 && ld.dropped < 0.5);
    ck_assert(ld.kept < (double)TOKENS * K);
    ck_assert(ld.max_expert <= (double)cap * RANKS + 1e-9);
}
END_TEST

/* The busiest rank sets the pace: balanced, every rank's experts process
 * exactly tokens x k rows; skewed, more; the profile's bins add up. */
START_TEST(busiest_rank)
{
    mm_moe_load b, a, s;
    mm_moe_cfg cb = cfg(MM_MOE_BALANCED), ca = cfg(MM_MOE_AUX_LOSS), cs = cfg(MM_MOE_SKEWED);
    ck_assert_int_eq(mm_moe_profile(&cb, E, K, RANKS, TOKENS, &b), 0);
    ck_assert_int_eq(mm_moe_profile(&ca, E, K, RANKS, TOKENS, &a), 0);
    ck_assert_int_eq(mm_moe_profile(&cs, E, K, RANKS, TOKENS, &s), 0);
    ck_assert_int_eq(b.local, E / RANKS);
    ck_assert(fabs(b.rank_rows - (double)TOKENS * K) < 1e-9);
    ck_assert(fabs(b.max_expert - b.mean_expert) < 1e-9);
    ck_assert(a.rank_rows > b.rank_rows && s.rank_rows > a.rank_rows);
    ck_assert(a.max_expert > 1.2 * a.mean_expert && s.max_expert > a.max_expert);
    double sum = 0, n = 0;
    for (int i = 0; i < s.nbins; i++) {
        sum += s.bin_m[i] * s.bin_n[i];
        n += s.bin_n[i];
        if (i > 0)
            ck_assert(s.bin_m[i] <= s.bin_m[i - 1] + 1e-9); /* busiest first */
    }
    ck_assert(fabs(sum - s.rank_rows) < 1e-6 * s.rank_rows);
    ck_assert(fabs(n - (double)s.local) < 1e-12);
    /* the same seed gives the same numbers bit for bit; another seed others */
    mm_moe_load again, other;
    ck_assert_int_eq(mm_moe_profile(&ca, E, K, RANKS, TOKENS, &again), 0);
    ck_assert(memcmp(&a, &again, sizeof a) == 0);
    ca.seed = 2;
    ck_assert_int_eq(mm_moe_profile(&ca, E, K, RANKS, TOKENS, &other), 0);
    ck_assert(other.rank_rows != a.rank_rows);
    /* memoized: a miss, then a hit, both the uncached numbers bit for bit;
     * another key (the seed) misses */
    ca.seed = 1;
    ca.cache = mm_moe_cache_alloc();
    ck_assert_ptr_nonnull(ca.cache);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(mm_moe_profile(&ca, E, K, RANKS, TOKENS, &again), 0);
        ck_assert(memcmp(&a, &again, sizeof a) == 0);
    }
    ca.seed = 2;
    ck_assert_int_eq(mm_moe_profile(&ca, E, K, RANKS, TOKENS, &again), 0);
    ck_assert(memcmp(&other, &again, sizeof a) == 0);
    mm_moe_cache_free(ca.cache);
}
END_TEST

static const mm_op_cost *find(const mm_op_cost *ops, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(ops[i].name, name))
            return &ops[i];
    return NULL;
}

/* The layer's kernels on the busiest rank: expert FLOPs scale with its
 * rows, permute/unpermute/sort bytes by their formulas. */
START_TEST(layer_kernels)
{
    static mm_llm m;
    mm_err err;
    ck_assert_msg(mm_llm_load("tests/data/hf/qwen3-30b-a3b.json", &m, &err) == 0, "%s", err.msg);
    m.ep_share = RANKS;
    static mm_op_cost ob[MM_LLM_MAX_OPS], os[MM_LLM_MAX_OPS];
    m.moe = cfg(MM_MOE_BALANCED);
    int nb = mm_llm_layer_ops(&m, 1, TOKENS, 1, false, 2, ob, MM_LLM_MAX_OPS);
    m.moe = cfg(MM_MOE_SKEWED);
    int ns = mm_llm_layer_ops(&m, 1, TOKENS, 1, false, 2, os, MM_LLM_MAX_OPS);
    ck_assert(nb > 0 && ns > 0);
    mm_moe_load lb, ls;
    mm_moe_cfg cb = cfg(MM_MOE_BALANCED), cs = cfg(MM_MOE_SKEWED);
    ck_assert_int_eq(mm_moe_profile(&cb, E, K, RANKS, TOKENS, &lb), 0);
    ck_assert_int_eq(mm_moe_profile(&cs, E, K, RANKS, TOKENS, &ls), 0);
    double h = 2048, f = 768, e = 2;
    const mm_op_cost *fb = find(ob, nb, "expert_fc1"), *fs = find(os, ns, "expert_fc1");
    ck_assert(fb && fs && fb->groups > 0);
    ck_assert(fabs(fb->flops - 2.0 * (double)TOKENS * K * (2 * f) * h) < 1e-6 * fb->flops);
    ck_assert(fabs(fs->flops / fb->flops - ls.rank_rows / lb.rank_rows) < 1e-12);
    const mm_op_cost *p = find(os, ns, "moe_permute"), *u = find(os, ns, "moe_unpermute");
    const mm_op_cost *so = find(os, ns, "moe_sort");
    ck_assert(p && u && so);
    ck_assert(fabs(p->bytes - 2.0 * (double)TOKENS * K * h * e) < 1e-6);
    ck_assert(fabs(u->bytes - ((double)TOKENS * K + 2.0 * TOKENS) * h * e) < 1e-6);
    ck_assert(fabs(so->bytes - 2.0 * ls.rank_rows * h * e) < 1e-6);
    ck_assert(find(ob, nb, "router_aux_loss") == NULL); /* balanced: no aux-loss kernels */
    m.moe = cfg(MM_MOE_AUX_LOSS);
    int na = mm_llm_layer_ops(&m, 1, TOKENS, 1, false, 2, os, MM_LLM_MAX_OPS);
    ck_assert(find(os, na, "router_aux_loss") != NULL);
    /* folded over TP ranks (ep_tp 2 of tp 2: experts whole on a GPU): half
     * the experts per GPU, each at its full width, the same FLOPs per GPU */
    static mm_op_cost of[MM_LLM_MAX_OPS], ot[MM_LLM_MAX_OPS];
    m.moe = cfg(MM_MOE_BALANCED);
    m.ep_share = 4, m.ep_tp = 1;
    int n1 = mm_llm_layer_ops(&m, 1, TOKENS, 2, true, 2, ot, MM_LLM_MAX_OPS);
    m.ep_tp = 2;
    int n2 = mm_llm_layer_ops(&m, 1, TOKENS, 2, true, 2, of, MM_LLM_MAX_OPS);
    const mm_op_cost *g1 = find(ot, n1, "expert_fc1"), *g2 = find(of, n2, "expert_fc1");
    ck_assert(g1 && g2);
    ck_assert(fabs(g1->flops - g2->flops) < 1e-9 * g1->flops);
    ck_assert(fabs(g2->batch - g1->batch / 2) < 1e-12 && fabs(g2->n - 2 * g1->n) < 1e-9);
    m.ep_tp = 0;
    m.moe = cfg(MM_MOE_AUX_LOSS);
    m.ep_share = 1; /* one rank holds every expert: no sort */
    na = mm_llm_layer_ops(&m, 1, TOKENS, 1, false, 2, os, MM_LLM_MAX_OPS);
    ck_assert(find(os, na, "moe_sort") == NULL);
}
END_TEST

/* Grouped GEMM: small m is slower per FLOP (the table's m-dependence);
 * one after another is never faster than grouped. */
START_TEST(grouped_gemm)
{
    static mm_cluster c;
    mm_err err;
    ck_assert_msg(mm_cluster_load("topologies/dgx-h100.yaml", 1, &c, &err) == 0, "%s", err.msg);
    mm_gemm_shape big = {2048, 1536, 2048, 16}, small = {64, 1536, 2048, 16};
    double tb = mm_grouped_gemm_time(&c.gpu, MM_DTYPE_BF16, &big, 1, MM_GROUPED_GEMM_STREAMS, 0);
    double ts = mm_grouped_gemm_time(&c.gpu, MM_DTYPE_BF16, &small, 1, MM_GROUPED_GEMM_STREAMS, 0);
    double rate_b = 2.0 * 2048 * 1536 * 2048 * 16 / tb, rate_s = 2.0 * 64 * 1536 * 2048 * 16 / ts;
    ck_assert_msg(rate_s < 0.7 * rate_b, "%g %g", rate_s, rate_b);
    double seq = mm_grouped_gemm_time(&c.gpu, MM_DTYPE_BF16, &small, 1, 1, 0);
    double one = mm_gemm_time(&c.gpu, MM_DTYPE_BF16, 64, 1536, 2048, 1, 0) - c.gpu.kernel_overhead_s;
    ck_assert(seq >= ts);
    /* sequential small GEMMs: the sum of each alone (plus one launch) */
    ck_assert(fabs(seq - (16 * one + c.gpu.kernel_overhead_s)) < 1e-12 * seq + 1e-15);
    /* never faster than the batched single GEMM of the same work */
    double filled = mm_gemm_time(&c.gpu, MM_DTYPE_BF16, 2048, 1536, 2048, 16, 0);
    ck_assert(tb >= filled - 1e-15);
    mm_cluster_free(&c);
}
END_TEST

/* The experts' grouped GEMM launches one GEMM per local expert from one
 * Python call; SequentialMLP calls each expert from Python; under FP8 the
 * input and output-gradient quantizes go expert by expert (current
 * scaling: amax, scale, quantize each), delayed scaling in one fused
 * kernel.  Closed form against the host's per-launch and per-op costs. */
START_TEST(grouped_launches)
{
    static mm_llm m;
    static mm_cluster c;
    mm_err err;
    ck_assert_msg(mm_llm_load("tests/data/hf/qwen3-30b-a3b.json", &m, &err) == 0, "%s", err.msg);
    ck_assert_msg(mm_cluster_load("topologies/dgx-h100.yaml", 1, &c, &err) == 0, "%s", err.msg);
    m.ep_share = RANKS;
    m.moe = cfg(MM_MOE_BALANCED);
    static mm_op_cost ops[MM_LLM_MAX_OPS];
    int n = mm_llm_layer_ops(&m, 1, TOKENS, 1, false, 2, ops, MM_LLM_MAX_OPS);
    const mm_op_cost *fc1 = find(ops, n, "expert_fc1");
    ck_assert(fc1 && fc1->batch == E / RANKS);
    const double L = 3e-6, op = 6.8e-6, local = E / RANKS;
    mm_fw_host h = {.launch_s = L, .fwd_op_s = op, .bwd_op_s = op};
    mm_fw_ctx x = {.gpu = &c.gpu, .dt = MM_DTYPE_BF16, .dtype_bytes = 2, .host = &h};
    mm_pass_breakdown t = mm_fw_time_ops(&x, fc1, 1);
    for (int p = MM_OP_F; p <= MM_OP_W; p++) {
        ck_assert_msg(t.launches[p] == local, "pass %d: %g", p, t.launches[p]);
        ck_assert(fabs(t.host_s[p] - (op + local * L)) < 1e-15);
    }
    mm_op_cost seq = *fc1;
    seq.sequential = true;
    t = mm_fw_time_ops(&x, &seq, 1);
    ck_assert(t.launches[MM_OP_F] == local && fabs(t.host_s[MM_OP_F] - local * (op + L)) < 1e-15);
    /* FP8 current scaling: 16 GEMMs and 3 x 16 quantize kernels forward
     * (the input) and backward (the output gradient), 16 wgrad GEMMs */
    x.dt = MM_DTYPE_FP8;
    x.fp8 = (mm_fp8_cfg){.on = true, .recipe = MM_FP8_CURRENT};
    t = mm_fw_time_ops(&x, fc1, 1);
    ck_assert_msg(t.launches[MM_OP_F] == local * 4 && t.launches[MM_OP_B] == local * 4, "%g %g",
                  t.launches[MM_OP_F], t.launches[MM_OP_B]);
    ck_assert(t.launches[MM_OP_W] == local);
    ck_assert(fabs(t.host_s[MM_OP_F] - (2 * op + 4 * local * L)) < 1e-15);
    x.fp8.recipe = MM_FP8_DELAYED; /* one fused multi_cast_transpose */
    t = mm_fw_time_ops(&x, fc1, 1);
    ck_assert(t.launches[MM_OP_F] == local + 1 && t.launches[MM_OP_B] == local + 1);
    x.fp8.recipe = MM_FP8_MXFP8; /* one quantize per expert */
    t = mm_fw_time_ops(&x, fc1, 1);
    ck_assert(t.launches[MM_OP_F] == 2 * local);
    mm_cluster_free(&c);
}
END_TEST

/* FP8 pads each expert's rows to 16 before the experts and unpads after
 * (Megatron-Core's Fp8Padding / Fp8Unpadding): TE copies only when some
 * expert's rows are not aligned.  Balanced routing here gives every expert
 * 4096 rows (no copy); an aux-loss draw does not (a copy of the 16-bit
 * rows each way, forward and backward). */
START_TEST(fp8_padding)
{
    static mm_llm m;
    mm_err err;
    ck_assert_msg(mm_llm_load("tests/data/hf/qwen3-30b-a3b.json", &m, &err) == 0, "%s", err.msg);
    m.ep_share = RANKS;
    static mm_op_cost ops[2 * MM_FW_MAX_OPS + 1];
    const int cap = (int)(sizeof ops / sizeof *ops);
    m.moe = cfg(MM_MOE_BALANCED);
    int n = mm_llm_layer_ops(&m, 1, TOKENS, 1, false, 2, ops, MM_LLM_MAX_OPS);
    int r = mm_fp8_rewrite_ops(MM_FP8_CURRENT, 1.0, ops, n, cap);
    ck_assert(r > n && find(ops, r, "fp8_pad") == NULL && find(ops, r, "fp8_unpad") == NULL);
    m.moe = cfg(MM_MOE_AUX_LOSS);
    n = mm_llm_layer_ops(&m, 1, TOKENS, 1, false, 2, ops, MM_LLM_MAX_OPS);
    const mm_op_cost *fc1 = find(ops, n, "expert_fc1");
    ck_assert(fc1);
    double rows = fc1->m * fc1->batch, h = 2048;
    r = mm_fp8_rewrite_ops(MM_FP8_CURRENT, 1.0, ops, n, cap);
    const mm_op_cost *pad = find(ops, r, "fp8_pad"), *unpad = find(ops, r, "fp8_unpad");
    ck_assert(pad && unpad && find(ops, r, "fp8_pad_probs"));
    ck_assert(fabs(pad->bytes - 4.0 * rows * h) < 1e-6 && pad->bwd_exact && pad->bwd_bytes == pad->bytes);
    ck_assert(fabs(unpad->bytes - 4.0 * rows * h) < 1e-6);
    /* BF16 runs no FP8 padding */
    ck_assert(find(ops, n, "fp8_pad") == NULL);
}
END_TEST

static int run(const char *args, char *err, size_t len)
{
    static char dir[512], out[1 << 16];
    if (!dir[0])
        mmx_tmpdir(dir, sizeof dir, "moe");
    return mmx_run(dir, NULL, args, out, sizeof out, err, len);
}

#define QWEN "--no-db tests/data/moe/qwen3-ep8.yaml"

/* Bad keys: file, line and key, exit status 2. */
START_TEST(bad_keys)
{
    static char err[1 << 14];
    ck_assert_int_eq(run("run " QWEN " --set moe.routing=zipf", err, sizeof err), 2);
    ck_assert_msg(strstr(err, "moe.routing"), "%s", err);
    ck_assert_int_eq(run("run " QWEN " --set moe.pad_to_capacity=true", err, sizeof err), 2);
    ck_assert_msg(strstr(err, "moe.pad_to_capacity"), "%s", err);
    ck_assert_int_eq(run("run " QWEN " --set moe.dispatcher=allgather", err, sizeof err), 2);
    ck_assert_msg(strstr(err, "moe.dispatcher"), "%s", err);
    ck_assert_int_eq(run("run " QWEN " --set moe.routing=balanced --set moe.routing_param=2", err, sizeof err), 2);
    ck_assert_msg(strstr(err, "moe.routing_param"), "%s", err);
    ck_assert_int_eq(run("run " QWEN " --set moe.capacity_factor=-1", err, sizeof err), 2);
    ck_assert_msg(strstr(err, "moe.capacity_factor"), "%s", err);
    ck_assert_int_eq(run("run --no-db tests/data/moe/bad-pad.yaml", err, sizeof err), 2);
    ck_assert_msg(strstr(err, "bad-pad.yaml:") && strstr(err, "moe.pad_to_capacity"), "%s", err);
}
END_TEST

static double json_num(const char *extra, const char *key)
{
    static char args[2048], dir[512], out[1 << 16], err[1 << 14];
    if (!dir[0])
        mmx_tmpdir(dir, sizeof dir, "moet");
    snprintf(args, sizeof args, "run " QWEN " --json %s", extra);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, err, sizeof err), 0);
    char k[128];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(out, k);
    ck_assert_msg(p, "%s: %s", key, out);
    return atof(p + strlen(k));
}

static double iter_time(const char *extra)
{
    return json_num(extra, "iteration_time_s");
}

/* End to end: skewed routing is slower than balanced, dropping faster
 * than dropless; the same scenario twice is bit for bit the same. */
START_TEST(end_to_end)
{
    double bal = iter_time("--set moe.routing=balanced"), aux = iter_time("");
    double skew = iter_time("--set moe.routing=skewed"), drop = iter_time("--set moe.capacity_factor=1");
    ck_assert_msg(bal < aux && aux < skew, "%g %g %g", bal, aux, skew);
    ck_assert_msg(drop < aux, "%g %g", drop, aux);
    ck_assert(iter_time("") == aux);
    /* the profile the run used, as --json reports it */
    ck_assert(json_num("--set moe.routing=balanced", "moe_expert_imbalance") == 1.0);
    ck_assert(json_num("--set moe.routing=balanced", "moe_rank_imbalance") == 1.0);
    ck_assert(json_num("", "moe_expert_imbalance") > json_num("", "moe_rank_imbalance"));
    ck_assert(json_num("", "moe_rank_imbalance") > 1.0);
    double dropped = json_num("--set moe.capacity_factor=1", "moe_dropped_fraction");
    ck_assert(dropped > 0 && dropped < 0.5);
    ck_assert(json_num("--set moe.capacity_factor=1", "moe_expert_imbalance") <= 1.0);
}
END_TEST

/* Megatron-Core's dropless all-to-all dispatcher waits on the host for
 * the token counts before each forward EP all-to-all (and so does the
 * unpadded one with a capacity); the padded path does not: the host's
 * exposed time and the iteration are larger dropless, with the same
 * kernels (balanced routing: nothing dropped). */
START_TEST(dropless_sync)
{
    const char *pad = "--set moe.routing=balanced --set moe.capacity_factor=1 --set moe.pad_to_capacity=true";
    const char *unpad = "--set moe.routing=balanced --set moe.capacity_factor=1";
    double hd = json_num("--set moe.routing=balanced", "exposed_host_s"), hp = json_num(pad, "exposed_host_s");
    ck_assert_msg(hd > hp, "%g %g", hd, hp);
    ck_assert(json_num(unpad, "exposed_host_s") == hd);
    ck_assert(iter_time("--set moe.routing=balanced") > iter_time(pad));
    ck_assert(json_num("--set moe.routing=balanced", "host_launch_s") == json_num(pad, "host_launch_s"));
}
END_TEST

/* Megatron-LM arguments: capacity, drop policy, padding, the dispatcher
 * and the load-balancing type map onto the moe section; SequentialMLP (no
 * --moe-grouped-gemm) is modeled; padding without a capacity is refused
 * naming the file, line and argument. */
START_TEST(megatron_args)
{
    static char err[1 << 15], dir[256], args[1024];
    const char *mix = "tests/data/megatron/mixtral-8x7b-drop.args";
    snprintf(args, sizeof args, "run --no-db -v --megatron-args %s --set cluster.nodes=4 --set iterations=1", mix);
    ck_assert_int_eq(run(args, err, sizeof err), 0);
    const char *want[] = {"moe.capacity_factor: 1.25", "moe.pad_to_capacity: true", "moe.drop_policy: position",
                          "moe.dispatcher: alltoall", "moe.routing: aux_loss", "moe.grouped_gemm: true"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(err, want[i]), "%s: %s", want[i], err);
    /* the same list without --moe-grouped-gemm and with a bad pad */
    mmx_tmpdir(dir, sizeof dir, "moemg");
    static char path[600], cmd[2048];
    snprintf(path, sizeof path, "%s/seq.args", dir);
    snprintf(cmd, sizeof cmd, "sed 's/--moe-grouped-gemm//' %s > %s", mix, path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "run --no-db -v --megatron-args %s --set cluster.nodes=4 --set iterations=1", path);
    ck_assert_int_eq(run(args, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "moe.grouped_gemm: false"), "%s", err);
    /* Megatron-Core's force-balanced router: random logits per token */
    snprintf(path, sizeof path, "%s/force.args", dir);
    snprintf(cmd, sizeof cmd, "cp %s %s && echo --moe-router-force-load-balancing >> %s", mix, path, path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "run --no-db -v --megatron-args %s --set cluster.nodes=4 --set iterations=1", path);
    ck_assert_int_eq(run(args, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "moe.routing: aux_loss") && strstr(err, "moe.routing_param: 1e6"), "%s", err);
    snprintf(path, sizeof path, "%s/pad.args", dir);
    snprintf(cmd, sizeof cmd, "sed 's/--moe-expert-capacity-factor 1.25//' %s > %s", mix, path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "run --no-db --megatron-args %s --set cluster.nodes=4", path);
    ck_assert_int_eq(run(args, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "pad.args:") && strstr(err, "--moe-pad-expert-input-to-capacity"), "%s", err);
    /* tp 2, ep 8 over dp 4 folds two TP ranks into the expert group: the
     * experts whole on a GPU, --expert-tensor-parallel-size 1; Megatron's
     * default (tp) is refused */
    snprintf(path, sizeof path, "%s/tp2.args", dir);
    snprintf(cmd, sizeof cmd, "sed 's/--tensor-model-parallel-size 1/--tensor-model-parallel-size 2/' %s > %s", mix,
             path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "run --no-db --megatron-args %s --set cluster.nodes=4", path);
    ck_assert_int_eq(run(args, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "moe.expert_tp") && strstr(err, "--expert-tensor-parallel-size 1"), "%s", err);
    snprintf(args, sizeof args, "run --no-db --megatron-args %s --set cluster.nodes=4 --set iterations=1 "
             "--set moe.expert_tp=1", path);
    ck_assert_int_eq(run(args, err, sizeof err), 0);
    mmx_rmdir(dir);
}
END_TEST

/* Shared experts from Megatron-LM arguments: with the gate Qwen2-MoE's
 * layout, without it DeepSeek-MoE's; parameters by formula. */
START_TEST(megatron_shared)
{
    static char err[1 << 15], dir[256], path[512], json[512], args[2048], cmd[2048];
    mmx_tmpdir(dir, sizeof dir, "moesh");
    const char *base = "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --bf16 "
                       "--position-embedding-type rope --swiglu --normalization RMSNorm --disable-bias-linear "
                       "--vocab-size 32000 --num-experts 8 --moe-router-topk 2 --moe-grouped-gemm "
                       "--moe-ffn-hidden-size 512 --micro-batch-size 1 --global-batch-size 16";
    /* per layer: attention 4h^2, experts 8 x 3 h 512, router 8h, norms 2h;
     * embedding 32000 h (tied) and the final norm */
    double h = 1024, common = 4 * (4 * h * h + 8 * 3 * h * 512 + 8 * h + 2 * h) + 32000 * h + h;
    const struct {
        const char *extra, *type;
        double params;
    } c[] = {{"--moe-shared-expert-intermediate-size 2048 --moe-shared-expert-gate", "qwen2_moe",
              common + 4 * (3 * h * 2048 + h)},
             {"--moe-shared-expert-intermediate-size 1024", "deepseek", common + 4 * (3 * h * 1024)}};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/m%zu.args", dir, i);
        snprintf(json, sizeof json, "%s/m%zu.json", dir, i);
        snprintf(cmd, sizeof cmd, "echo '%s %s' > %s", base, c[i].extra, path);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(args, sizeof args, "run --no-db --megatron-args %s --megatron-model %s --set cluster.nodes=1",
                 path, json);
        ck_assert_int_eq(run(args, err, sizeof err), 0);
        snprintf(args, sizeof args, "model %s --json", json);
        ck_assert_int_eq(mmx_run(dir, NULL, args, cmd, sizeof cmd, err, sizeof err), 0);
        ck_assert_msg(strstr(cmd, "\"params\":"), "%s", cmd);
        ck_assert_msg(atof(strstr(cmd, "\"params\":") + 9) == c[i].params, "%s: %s", c[i].type, cmd);
        static char text[4096];
        mmx_slurp(json, text, sizeof text);
        ck_assert_msg(strstr(text, c[i].type), "%s", text);
    }
    /* ungated and not a multiple of the routed width: refused by name */
    snprintf(cmd, sizeof cmd, "echo '%s --moe-shared-expert-intermediate-size 1000' > %s/bad.args", base, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "run --no-db --megatron-args %s/bad.args", dir);
    ck_assert_int_eq(run(args, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "bad.args:1: key '--moe-shared-expert-intermediate-size'"), "%s", err);
    mmx_rmdir(dir);
}
END_TEST

/* The EP all-to-all's message: every member moves the busiest endpoint's
 * volume, max(busiest rank's rows, copies sent) x h x 2 bytes / the
 * experts' TP degree; skewed routing makes it larger than balanced. */
START_TEST(alltoall_bytes)
{
    double bytes[2];
    const char *routing[] = {"moe.routing=balanced", "moe.routing=skewed"};
    for (int i = 0; i < 2; i++) {
        static mm_scenario sc;
        static mm_sim sim;
        mm_err err;
        const char *sets[] = {routing[i]};
        ck_assert_msg(mm_scenario_load(&sc, "tests/data/moe/qwen3-ep8.yaml", sets, 1, &err) == 0, "%s", err.msg);
        ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s", err.msg);
        mm_moe_load ld;
        ck_assert_int_eq(mm_sim_moe_load(&sim, &ld), 0);
        mm_sim_costs c;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        double want = fmax(ld.rank_rows, ld.kept) * 2048 * 2; /* h 2048, bf16, tp 1 */
        ck_assert_msg(fabs(c.spec.ep_bytes - want) < 1e-9 * want, "%g %g", c.spec.ep_bytes, want);
        bytes[i] = c.spec.ep_bytes;
        if (i == 0) /* balanced: each rank sends and receives tokens x k rows */
            ck_assert(fabs(want - 2048.0 * K * 2048 * 2) < 1e-6);
        mm_sim_costs_free(&c);
        mm_sim_free(&sim);
        mm_scenario_free(&sc);
    }
    ck_assert(bytes[1] > 1.1 * bytes[0]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("moe");
    TCase *tc = tcase_create("moe");
    tcase_add_test(tc, loads_sum);
    tcase_add_test(tc, capacity_clips);
    tcase_add_test(tc, busiest_rank);
    tcase_add_test(tc, layer_kernels);
    tcase_add_test(tc, grouped_gemm);
    tcase_add_test(tc, grouped_launches);
    tcase_add_test(tc, fp8_padding);
    tcase_add_test(tc, bad_keys);
    tcase_add_test(tc, end_to_end);
    tcase_add_test(tc, dropless_sync);
    tcase_add_test(tc, megatron_args);
    tcase_add_test(tc, megatron_shared);
    tcase_add_test(tc, alltoall_bytes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
