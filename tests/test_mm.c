/* test_mm.c - multimodal fidelity against hand-computed numbers:
 * a colocated encoder's ranks encode their own samples (a second, audio
 * encoder's too, as drawn and post-balanced), LLaVA's stage-1 and
 * stage-2 freezing (memory and which passes run), padded tokens, memory
 * that follows the data (OOM in exactly the iteration that does not fit),
 * every placement under every schedule, `mmsim plan` going on past a
 * failing candidate, and the per-DP-rank load of `mmsim run --json`. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/report.h"
#include "cost/costs.h"
#include "mmsim_exe.h"
#include "model/memory.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "cost/cost_internal.h"
#include "workload/batch.h"

/* A sim of the built-in scenario with sets; the scenario it borrows is
 * the caller's to free (done() frees both). */
static void load(mm_sim *sim, mm_scenario *sc, const char *const *sets, int n)
{
    mm_err err;
    int rc = mm_scenario_load(sc, NULL, sets, n, &err);
    ck_assert_msg(rc == 0, "%s: %s", err.key, err.msg);
    rc = mm_sim_prepare(sim, sc, &err);
    ck_assert_msg(rc == 0, "%s: %s", err.key, err.msg);
}

static void done(mm_sim *sim, mm_scenario *sc)
{
    mm_sim_free(sim);
    mm_scenario_free(sc);
}

static void run(const mm_sim *sim, mm_metrics *m, mm_sim_timeline *tl)
{
    mm_err err;
    int rc = mm_sim_run(sim, m, tl, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
}

/* Sum of the durations of one module's compute ops of category cat on rank r. */
static double op_sum(const mm_graph *g, int module, int cat, int r)
{
    double t = 0;
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].module == module && g->ops[i].cat == cat && g->ops[i].rank == r && g->ops[i].coll < 0)
            t += g->ops[i].dur_s;
    return t;
}

static int count_ops(const mm_graph *g, int module, int cat)
{
    int n = 0;
    for (uint32_t i = 0; i < g->n_ops; i++)
        n += g->ops[i].module == module && g->ops[i].cat == cat;
    return n;
}

/* Two GPUs, LLM dp 2, a colocated encoder of dp 2: sample 0 (5 tiles) on
 * GPU 0, sample 1 (1 tile) on GPU 1.  Each GPU's encoder time is its own
 * sample's cost (the cost bridge's, for 5 and 1 tiles), not half of the
 * batch's; encoder_load_imbalance = 2 c5 / (c5 + c1), and the slowest
 * rank works (c5 - c1) / 2 longer than the mean. */
START_TEST(colocated_ranks_encode_their_own_samples)
{
    const char *sets[] = {"cluster.topology=tests/data/mm/two-gpu.yaml", "cluster.nodes=1",
                          "parallel.llm={tp: 1, pp: 1, dp: 2}", "parallel.vision={tp: 1, pp: 1, dp: 2}",
                          "parallel.placement=colocated", "train.global_batch=2",
                          "workload=tests/data/mm/unequal.csv", "iterations=1"};
    mm_sim sim;
    mm_scenario sc_sim = {0};
    load(&sim, &sc_sim, sets, 8);
    mm_metrics m;
    mm_sim_timeline tl;
    run(&sim, &m, &tl);
    ck_assert(!m.oom);
    mm_enc_mb_cost c5, c1;
    double params;
    ck_assert_int_eq(mm_sim_enc_mb_cost(&sim, &sim.enc[0], 5, 1, &c5, &params), 0);
    ck_assert_int_eq(mm_sim_enc_mb_cost(&sim, &sim.enc[0], 1, 1, &c1, &params), 0);
    ck_assert(c5.fwd_s > 2 * c1.fwd_s);
    double f0 = op_sum(&tl.graph, 1, MM_CAT_FWD, 0), f1 = op_sum(&tl.graph, 1, MM_CAT_FWD, 1);
    double b0 = op_sum(&tl.graph, 1, MM_CAT_BWD, 0), b1 = op_sum(&tl.graph, 1, MM_CAT_BWD, 1);
    ck_assert_msg(fabs(f0 - c5.fwd_s) < 1e-12 && fabs(f1 - c1.fwd_s) < 1e-12, "fwd %.9g %.9g vs %.9g %.9g", f0, f1,
                  c5.fwd_s, c1.fwd_s);
    ck_assert(fabs(b0 - c5.bwd_s) < 1e-12 && fabs(b1 - c1.bwd_s) < 1e-12);
    double want = 2 * (c5.fwd_s + c5.bwd_s) / (c5.fwd_s + c5.bwd_s + c1.fwd_s + c1.bwd_s);
    ck_assert_msg(fabs(m.encoder_load_imbalance - want) < 1e-12, "%.12f vs %.12f", m.encoder_load_imbalance, want);
    ck_assert(fabs(m.iters[0].encoder_load_imbalance - want) < 1e-12);
    double excess = (c5.fwd_s + c5.bwd_s - c1.fwd_s - c1.bwd_s) / 2; /* max - mean of two */
    ck_assert(fabs(m.encoder_excess_s - excess) < 1e-12);
    mm_metrics_free(&m);
    mm_sim_timeline_free(&tl);
    done(&sim, &sc_sim);
}
END_TEST

/* F + B of an encoder's micro-batch of `inputs` tiles or clips at tp. */
static double enc_fb(const mm_sim *sim, int i, double inputs, int tp)
{
    mm_enc_mb_cost c;
    double params;
    ck_assert_int_eq(mm_sim_enc_mb_cost(sim, &sim->enc[i], inputs, tp, &c, &params), 0);
    return c.fwd_s + c.bwd_s;
}

/* Two colocated encoders (vision and audio) on two GPUs: both samples hold
 * 2 tiles, only the second 60 s of audio (2 clips), so rank 1 encodes all
 * the audio.  Each rank's audio op is its own clips' cost (rank 0: none),
 * not half of the batch's; rank 1 works a = F+B(2 clips) longer, so over
 * the combined work (v = F+B(2 tiles) on each) encoder_load_imbalance =
 * 2 (v + a) / (2 v + a) and encoder_excess_s = a / 2.  With the audio
 * encoder at tp 2 (one rank over both GPUs, its own plan) both GPUs run
 * F+B(2 clips at tp 2) and the imbalance is that of vision alone, 1. */
START_TEST(second_colocated_encoder_ranks)
{
    const char *sets[] = {"model=tests/data/mm/vision-audio.yaml", "cluster.topology=tests/data/mm/two-gpu.yaml",
                          "cluster.nodes=1", "parallel.llm={tp: 1, pp: 1, dp: 2}",
                          "parallel.vision={tp: 1, pp: 1, dp: 2}", "parallel.audio={tp: 1, pp: 1, dp: 2}",
                          "parallel.placement=colocated", "train.global_batch=2",
                          "workload=tests/data/mm/audio-on-one.csv", "iterations=1",
                          "parallel.audio={tp: 2, pp: 1, dp: 1}"};
    for (int audio_tp = 1; audio_tp <= 2; audio_tp++) {
        mm_sim sim;
        mm_scenario sc_sim = {0};
        load(&sim, &sc_sim, sets, audio_tp == 1 ? 10 : 11);
        ck_assert_int_eq(sim.n_enc, 2);
        ck_assert_str_eq(sim.enc[1].name, "audio");
        mm_metrics m;
        mm_sim_timeline tl;
        run(&sim, &m, &tl);
        ck_assert(!m.oom);
        double v = enc_fb(&sim, 0, 2, 1), a = enc_fb(&sim, 1, 2, audio_tp), a0 = enc_fb(&sim, 1, 0, 1);
        ck_assert(a > 0.5 * v && a0 == 0);
        for (int r = 0; r < 2; r++) {
            double vis = op_sum(&tl.graph, 1, MM_CAT_FWD, r) + op_sum(&tl.graph, 1, MM_CAT_BWD, r);
            double aud = op_sum(&tl.graph, 2, MM_CAT_FWD, r) + op_sum(&tl.graph, 2, MM_CAT_BWD, r);
            double want = audio_tp == 2 || r == 1 ? a : 0;
            ck_assert_msg(fabs(vis - v) < 1e-12 * v, "rank %d vision %.12g vs %.12g", r, vis, v);
            ck_assert_msg(fabs(aud - want) < 1e-12 * a, "tp %d rank %d audio %.12g vs %.12g", audio_tp, r, aud, want);
        }
        double imb = audio_tp == 1 ? 2 * (v + a) / (2 * v + a) : 1.0, ex = audio_tp == 1 ? a / 2 : 0.0;
        ck_assert_msg(fabs(m.encoder_load_imbalance - imb) < 1e-12, "%.12f vs %.12f", m.encoder_load_imbalance, imb);
        ck_assert_msg(fabs(m.encoder_excess_s - ex) < 1e-12, "%.12g vs %.12g", m.encoder_excess_s, ex);
        mm_metrics_free(&m);
        mm_sim_timeline_free(&tl);
        done(&sim, &sc_sim);
    }
}
END_TEST

/* Bytes of the sendrecv pairs of one module (forward and backward). */
static double pair_bytes(const mm_graph *g, int module)
{
    double by = 0;
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].module == module && g->ops[i].coll >= 0 && g->colls[g->ops[i].coll].kind == MM_COLL_SENDRECV)
            by += g->colls[g->ops[i].coll].bytes;
    return by;
}

/* The second encoder reshards pair by pair as the first: LLM pp 2 on two
 * GPUs, so encoder rank 1 (GPU 1, stage 1) hands its sample's embeddings
 * to the first stage: vision its 2 tiles' tokens, audio its 60 s' tokens,
 * 2 bytes x hidden each, forward and back; rank 0 is on the first stage
 * and sends nothing. */
START_TEST(second_encoder_pair_bytes)
{
    const char *sets[] = {"model=tests/data/mm/vision-audio.yaml", "cluster.topology=tests/data/mm/two-gpu.yaml",
                          "cluster.nodes=1", "parallel.llm={tp: 1, pp: 2, dp: 1}",
                          "parallel.vision={tp: 1, pp: 1, dp: 2}", "parallel.audio={tp: 1, pp: 1, dp: 2}",
                          "parallel.placement=colocated", "train.global_batch=2",
                          "workload=tests/data/mm/audio-on-one.csv", "iterations=1"};
    mm_sim sim;
    mm_scenario sc_sim = {0};
    load(&sim, &sc_sim, sets, 10);
    mm_metrics m;
    mm_sim_timeline tl;
    run(&sim, &m, &tl);
    ck_assert(!m.oom);
    mm_sample s1 = {.text_tokens = 100, .images = 1, .tiles = 2, .audio_s = 60};
    double aud = (double)mm_sample_audio_tokens(&s1, &sim.tm), vis = (double)mm_sample_mm_tokens(&s1, &sim.tm) - aud;
    double per_tok = 2.0 * (double)sim.llm->hidden;
    ck_assert(aud == 1500 && vis > 0);
    ck_assert_msg(fabs(pair_bytes(&tl.graph, 2) - 2 * aud * per_tok) < 1e-6, "audio %.0f vs %.0f",
                  pair_bytes(&tl.graph, 2), 2 * aud * per_tok);
    ck_assert_msg(fabs(pair_bytes(&tl.graph, 1) - 2 * vis * per_tok) < 1e-6, "vision %.0f vs %.0f",
                  pair_bytes(&tl.graph, 1), 2 * vis * per_tok);
    mm_metrics_free(&m);
    mm_sim_timeline_free(&tl);
    done(&sim, &sc_sim);
}
END_TEST

/* Post-balance's encoder phase balances the combined encoder cost: as
 * drawn DP rank 0 encodes both audio samples (V = F+B(4 tiles) + A =
 * F+B(4 clips) against V alone), post-balance deals one to each rank (V +
 * F+B(2 clips) on both, imbalance 1).  Balancing the vision cost alone,
 * as before, left both on rank 0 (the samples' tiles are equal). */
START_TEST(post_balance_deals_the_audio)
{
    for (int pb = 0; pb < 2; pb++) {
        const char *sets[] = {"model=tests/data/mm/vision-audio.yaml", "cluster.topology=tests/data/mm/two-gpu.yaml",
                              "cluster.nodes=1", "parallel.llm={tp: 1, pp: 1, dp: 2}",
                              "parallel.vision={tp: 1, pp: 1, dp: 2}", "parallel.audio={tp: 1, pp: 1, dp: 2}",
                              "parallel.placement=colocated", "train.global_batch=4",
                              "workload=tests/data/mm/audio-on-rank0.csv", "iterations=1",
                              pb ? "batching=post-balance" : "batching=sequential"};
        mm_sim sim;
        mm_scenario sc_sim = {0};
        load(&sim, &sc_sim, sets, 11);
        mm_metrics m;
        mm_sim_timeline tl;
        run(&sim, &m, &tl);
        ck_assert(!m.oom);
        double v = enc_fb(&sim, 0, 4, 1), a4 = enc_fb(&sim, 1, 4, 1), a2 = enc_fb(&sim, 1, 2, 1);
        double t[2];
        for (int r = 0; r < 2; r++) {
            double aud = op_sum(&tl.graph, 2, MM_CAT_FWD, r) + op_sum(&tl.graph, 2, MM_CAT_BWD, r);
            double want = pb ? a2 : r == 0 ? a4 : 0;
            ck_assert_msg(fabs(aud - want) <= 1e-12 * a4, "%s rank %d audio %.12g vs %.12g", sets[10], r, aud, want);
            t[r] = v + want;
        }
        double imb = 2 * fmax(t[0], t[1]) / (t[0] + t[1]);
        ck_assert_msg(fabs(m.encoder_load_imbalance - imb) < 1e-12, "%s: %.12f vs %.12f", sets[10],
                      m.encoder_load_imbalance, imb);
        ck_assert(pb ? imb == 1.0 : imb > 1.1);
        mm_metrics_free(&m);
        mm_sim_timeline_free(&tl);
        done(&sim, &sc_sim);
    }
}
END_TEST

/* Model states with a frozen LLM: 16-bit weights only (Megatron's 18 bytes
 * per parameter become 2), sharded over dp under ZeRO-3. */
START_TEST(frozen_llm_states)
{
    mm_model mo;
    mm_err err;
    ck_assert_msg(mm_model_load("models/llava-1.5-7b.json", &mo, &err) == 0, "%s", err.msg);
    mm_mem_config c = {.lay.tp = 1, .lay.pp = 1, .lay.dp = 8, .lay.cp = 1, .lay.vpp = 1, .lay.ep = 1, .zero = 2, .micro_batches = 1,
                       .micro_batch = 1, .seq = 1024, .schedule = MM_MEM_1F1B};
    mm_mem_rank t, f;
    ck_assert_int_eq(mm_mem_llm_rank(&mo.llm, &c, 0, &t), 0);
    c.frozen = true;
    ck_assert_int_eq(mm_mem_llm_rank(&mo.llm, &c, 0, &f), 0);
    ck_assert(f.grads == 0 && f.optimizer == 0);
    ck_assert(fabs(f.weights - 2.0 * f.params) < 1e-6 * f.weights);
    ck_assert(fabs(t.grads + t.optimizer - 16.0 / 8 * t.params) < 1e-6 * t.params); /* ZeRO-2: (4 + 12) / d */
    ck_assert(f.activations == t.activations); /* the projector's gradient passes through it */
    c.zero = 3;
    ck_assert_int_eq(mm_mem_llm_rank(&mo.llm, &c, 0, &f), 0);
    ck_assert(fabs(f.weights - 2.0 * f.params / 8) < 1e-6 * f.weights);
    /* a frozen tower: weights only, no activations, sharded under ZeRO-3 */
    mm_mem_rank v;
    ck_assert_int_eq(mm_mem_encoder_rank(&mo.vision, 5, 1, false, 4, 3, 0, 4, true, &v), 0);
    ck_assert(v.grads == 0 && v.optimizer == 0 && v.activations == 0);
    ck_assert(fabs(v.weights - 2.0 * (double)mm_encoder_params(&mo.vision) / 4) < 1);
}
END_TEST

/* LLaVA-1.5 on 16 GPUs, zb-h1 (W passes separate), homogeneous:
 * stage 1 (tower and LLM frozen, projector trained): the LLM's B passes
 * run, its W passes are empty, no LLM gradient traffic, the tower has no
 * backward; stage 2 (tower frozen): LLM W passes run, DP traffic.
 * Stage 1 is faster and holds less memory. */
START_TEST(llava_stage1_and_stage2)
{
    /* megatron-local: the Zero Bubble fork runs ZB-H1 (its profile's
     * schedules), with --use-flash-attn */
    const char *base[] = {"model=models/llava-1.5-7b.json", "train.schedule=zb-h1", "parallel.placement=homogeneous",
                          "parallel.llm={tp: 1, pp: 2, dp: 8}", "train.global_batch=32", "iterations=1",
                          "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}", "train.seq_len=2048",
                          "train.frozen=[vision, llm]", "train.framework=megatron-local", "train.attention=flash2"};
    mm_sim s1, s2;
    mm_scenario sc_s1 = {0}, sc_s2 = {0};
    load(&s1, &sc_s1, base, 11);
    base[8] = "train.frozen=[vision]";
    load(&s2, &sc_s2, base, 11);
    mm_metrics m1, m2;
    mm_sim_timeline t1, t2;
    run(&s1, &m1, &t1);
    run(&s2, &m2, &t2);
    ck_assert(!m1.oom && !m2.oom);
    /* which passes run */
    ck_assert(op_sum(&t1.graph, 0, MM_CAT_BWD, 0) > 0);   /* LLM input gradients */
    ck_assert(op_sum(&t1.graph, 0, MM_CAT_WGRAD, 0) == 0); /* no LLM weight gradients */
    ck_assert(op_sum(&t2.graph, 0, MM_CAT_WGRAD, 0) > 0);
    int dp1 = 0, dp2 = 0, dp1_late = 0, dp2_late = 0;
    for (uint32_t i = 0; i < t1.graph.n_ops; i++) {
        dp1 += t1.graph.ops[i].cat == MM_CAT_DP;
        dp1_late += t1.graph.ops[i].cat == MM_CAT_DP && t1.graph.ops[i].stage == 1;
    }
    for (uint32_t i = 0; i < t2.graph.n_ops; i++) {
        dp2 += t2.graph.ops[i].cat == MM_CAT_DP;
        dp2_late += t2.graph.ops[i].cat == MM_CAT_DP && t2.graph.ops[i].stage == 1;
    }
    /* ZeRO 1: a reduce-scatter and an all-gather per replica of stage 0
     * (the projector's gradients, homogeneous: in stage 0's bucket), none
     * on stage 1 (all LLM); stage 2: both stages */
    ck_assert_int_eq(dp1, 8 * 2);
    ck_assert_int_eq(dp1_late, 0);
    ck_assert_int_eq(dp2, 2 * 8 * 2);
    ck_assert_int_eq(dp2_late, 8 * 2);
    /* the tower's backward is the projector's alone (tiny, no TP traffic) */
    mm_enc_mb_cost c;
    double params;
    ck_assert_int_eq(mm_sim_enc_mb_cost(&s1, &s1.enc[0], 1, 1, &c, &params), 0);
    ck_assert(c.bwd_s < 0.1 * c.fwd_s && c.bwd_s > 0);
    ck_assert_msg(fabs(params - (double)mm_projector_params(s1.enc[0].proj)) < 1, "%.0f", params);
    /* memory: under ZeRO 1 on dp 8 (the default) stage 2's LLM states are
     * 2 + 4 + 12 / 8 = 7.5 bytes per parameter (16-bit weights, fp32
     * gradients, the distributed optimizer's share), stage 1's the 2 of
     * the 16-bit weights: 3.75 times on every pipeline stage (1e-9) */
    mm_sim_memory k1, k2;
    mm_err merr;
    ck_assert_int_eq(mm_sim_stage_memory(&s1, &k1, &merr), 0);
    ck_assert_int_eq(mm_sim_stage_memory(&s2, &k2, &merr), 0);
    for (int st = 0; st < 2; st++)
        ck_assert_msg(fabs(k2.states_gib[st] / k1.states_gib[st] - 3.75) < 1e-9, "stage %d states %g / %g GiB", st,
                      k2.states_gib[st], k1.states_gib[st]);
    mm_sim_memory_free(&k1);
    mm_sim_memory_free(&k2);
    ck_assert(m1.modules[0].memory_gib < m2.modules[0].memory_gib);
    ck_assert(m1.iteration_time_s < m2.iteration_time_s);
    (void)count_ops;
    mm_metrics_free(&m1);
    mm_metrics_free(&m2);
    mm_sim_timeline_free(&t1);
    mm_sim_timeline_free(&t2);
    done(&s1, &sc_s1);
    done(&s2, &sc_s2);
}
END_TEST

/* Text samples of 100, 200, 300, 400 LLM tokens, one rank, two
 * micro-batches in order: longest pads {100, 200} to 2 x 200 and {300,
 * 400} to 2 x 400 = 1200 tokens for 1000 real (1/6 padding); max_length
 * 512 gives 4 x 512; packed stays varlen. */
START_TEST(padded_tokens)
{
    mm_sample s[4] = {{.text_tokens = 100}, {.text_tokens = 200}, {.text_tokens = 300}, {.text_tokens = 400}};
    mm_batch_opts o = {.policy = MM_BP_SEQUENTIAL, .dp = 1, .micro_batches = 2, .seq_len = 512,
                       .padding = MM_PAD_LONGEST};
    mm_batch_plan p;
    mm_err err;
    ck_assert_int_eq(mm_batch_form(s, 4, &o, &p, &err), 0);
    ck_assert_int_eq(p.bins[0].padded_tokens, 400);
    ck_assert_int_eq(p.bins[1].padded_tokens, 800);
    ck_assert(fabs(p.bins[1].padded_sum_sq - 2 * 400.0 * 400) < 1e-9);
    ck_assert_int_eq(p.tokens_total, 1000);
    ck_assert_int_eq(p.padded_total, 1200);
    ck_assert(fabs(mm_batch_padded_fraction(&p) - 1.0 / 6) < 1e-12);
    mm_batch_plan_free(&p);
    o.padding = MM_PAD_MAX_LENGTH;
    o.pad_to = 512;
    ck_assert_int_eq(mm_batch_form(s, 4, &o, &p, &err), 0);
    ck_assert_int_eq(p.padded_total, 4 * 512);
    mm_batch_plan_free(&p);
    /* to 350: the 400-token sample keeps its length, 3 x 350 + 400 */
    o.pad_to = 350;
    ck_assert_int_eq(mm_batch_form(s, 4, &o, &p, &err), 0);
    ck_assert_int_eq(p.padded_total, 2 * 350 + 2 * 400);
    mm_batch_plan_free(&p);
    o.pad_to = 0;
    ck_assert_int_eq(mm_batch_form(s, 4, &o, &p, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.pad_to");
    o.padding = MM_PAD_NONE;
    ck_assert_int_eq(mm_batch_form(s, 4, &o, &p, &err), 0);
    ck_assert_int_eq(p.padded_total, 1000);
    mm_batch_plan_free(&p);
    o.policy = MM_BP_PACKED;
    o.padding = MM_PAD_LONGEST;
    ck_assert_int_eq(mm_batch_form(s, 4, &o, &p, &err), 0);
    ck_assert_int_eq(p.padded_total, 1000);
    mm_batch_plan_free(&p);
    o.padding = (mm_padding)7;
    ck_assert_int_eq(mm_batch_form(s, 4, &o, &p, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.padding");
}
END_TEST

/* End to end: padding longest runs the LLM on more tokens and is slower;
 * the run reports the fraction; a bad mode names the key. */
START_TEST(padding_in_a_run)
{
    const char *sets[] = {"workload=workloads/llava-1.5-665k.yaml", "model=models/llava-1.5-7b.json",
                          "parallel.placement=homogeneous", "parallel.llm={tp: 1, pp: 1, dp: 16}",
                          "train.micro_batch=4", "train.global_batch=128", "iterations=1", "train.seq_len=2048", "train.zero=3",
                          "train.recompute=full",
                          "train.padding=none"};
    mm_sim a, b;
    mm_scenario sc_a = {0}, sc_b = {0};
    load(&a, &sc_a, sets, 11);
    sets[10] = "train.padding=longest";
    load(&b, &sc_b, sets, 11);
    mm_metrics ma, mb;
    run(&a, &ma, NULL);
    run(&b, &mb, NULL);
    ck_assert(ma.padded_fraction == 0);
    ck_assert(mb.padded_fraction > 0.05 && mb.padded_fraction < 0.9);
    ck_assert(mb.iteration_time_s > ma.iteration_time_s);
    ck_assert(fabs(ma.tokens_per_s * ma.iteration_time_s - mb.tokens_per_s * mb.iteration_time_s) < 1e-6 * ma.tokens_per_s);
    mm_metrics_free(&ma);
    mm_metrics_free(&mb);
    done(&a, &sc_a);
    done(&b, &sc_b);
    mm_scenario sc = {0};
    mm_err err;
    const char *bad[] = {"train.padding=left"};
    ck_assert_int_eq(mm_scenario_load(&sc, NULL, bad, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.padding");
}
END_TEST

/* The trace holds 16 one-tile samples, then 16 samples of 32 frames and
 * 3000 text tokens.  With 24.5 GiB usable (80 GB less a 50 GiB reserve),
 * iteration 0 fits (its peak is measured below 24.5) and iteration 1 does
 * not: the run is OOM there, naming that iteration, and a one-iteration run
 * is not OOM.  The peak of each iteration grows with its data. */
START_TEST(oom_in_the_iteration_that_does_not_fit)
{
    const char *sets[] = {"workload=tests/data/mm/small-then-big.csv", "train.global_batch=16", "iterations=1",
                          "train.memory_reserve_gib=50"};
    mm_sim sim;
    mm_scenario sc_sim = {0};
    load(&sim, &sc_sim, sets, 4);
    mm_metrics m;
    run(&sim, &m, NULL);
    ck_assert(!m.oom);
    double cap = 80e9 / MM_GIB - 50;
    ck_assert_msg(m.peak_memory_gib < cap, "%.2f", m.peak_memory_gib);
    double first = m.iters[0].peak_memory_gib;
    mm_metrics_free(&m);
    done(&sim, &sc_sim);
    sets[2] = "iterations=2";
    load(&sim, &sc_sim, sets, 4);
    run(&sim, &m, NULL);
    ck_assert(m.oom);
    ck_assert_int_eq(m.oom_at.iteration, 1);
    ck_assert(m.oom_at.stage >= 0 && m.oom_at.stage < 2 && m.oom_at.micro_batch >= 0);
    ck_assert(m.oom_at.need_gib > cap && fabs(m.oom_at.cap_gib - cap) < 1e-9);
    ck_assert(m.oom_at.need_gib > first);
    ck_assert(isnan(m.iteration_time_s));
    mm_metrics_free(&m);
    done(&sim, &sc_sim);
}
END_TEST

/* A GPU with a fifth of its HBM (an hbm perturbation) does not hold the
 * first drawn batch: OOM in iteration 0, the capacity left to that GPU. */
START_TEST(oom_on_a_smaller_gpu)
{
    const char *sets[] = {"workload=tests/data/mm/small-then-big.csv", "train.global_batch=16", "iterations=2",
                          "perturb=[{kind: hbm, gpus: [3], capacity: 0.2}]"};
    mm_sim sim;
    mm_scenario sc_sim = {0};
    load(&sim, &sc_sim, sets, 4);
    mm_metrics m;
    run(&sim, &m, NULL);
    ck_assert(m.oom);
    ck_assert_int_eq(m.oom_at.iteration, 0);
    ck_assert(m.oom_at.need_gib > 0.2 * 80e9 / MM_GIB - 2);
    mm_metrics_free(&m);
    done(&sim, &sc_sim);
}
END_TEST

/* Image-heavy data holds more memory than text-heavy data (the peak follows
 * the samples, not the model's maxima). */
START_TEST(memory_follows_the_mix)
{
    const char *sets[] = {"workload=tests/data/mm/small-then-big.csv", "train.global_batch=16", "iterations=2"};
    mm_sim sim;
    mm_scenario sc_sim = {0};
    load(&sim, &sc_sim, sets, 3);
    mm_metrics m;
    run(&sim, &m, NULL);
    ck_assert(!m.oom);
    ck_assert(m.iters[1].peak_memory_gib > 1.5 * m.iters[0].peak_memory_gib);
    ck_assert(fabs(m.peak_memory_gib - fmax(m.iters[0].peak_memory_gib, m.iters[1].peak_memory_gib)) < 1e-12);
    ck_assert(m.peak_memory_bound_gib >= m.peak_memory_gib);
    mm_metrics_free(&m);
    done(&sim, &sc_sim);
}
END_TEST

/* Every placement under every schedule runs (16 GPUs of the default
 * LLaVA-OV-7B; own-GPU encoders take 4, interleaving 2 chunks per rank),
 * once with the fixed sample and once with the OneVision mix; each
 * schedule under a framework that runs it (gpipe: fsdp, the zero-bubble
 * ones: megatron-local). */
START_TEST(placement_by_schedule_matrix)
{
    static const char *const place[] = {"pipeline", "colocated", "disjoint", "homogeneous"};
    static const char *const sched[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-2p", "zb-v"};
    static const char *const fw[] = {"train.framework=fsdp", "train.framework=megatron-core",
                                     "train.framework=megatron-core", "train.framework=megatron-local",
                                     "train.framework=megatron-local", "train.framework=megatron-local"};
    for (int p = 0; p < 4; p++)
        for (int s = 0; s < 6; s++)
            for (int w = 0; w < 2; w++) {
                bool own = p == 0 || p == 2, il = s == 2 || s == 5;
                char pl[64], sc[64], llm[96], vis[96];
                snprintf(pl, sizeof pl, "parallel.placement=%s", place[p]);
                snprintf(sc, sizeof sc, "train.schedule=%s", sched[s]);
                snprintf(llm, sizeof llm, "parallel.llm={tp: 2, pp: 2, vpp: %d, dp: %d}", il ? 2 : 1, own ? 3 : 4);
                snprintf(vis, sizeof vis, "parallel.vision={tp: 1, pp: 1, dp: %d}", own ? 4 : 16);
                const char *sets[] = {pl, sc, llm, vis, own ? "train.global_batch=12" : "train.global_batch=16",
                                      "iterations=1", w ? "workload=workloads/llava-ov-mix.yaml" : "seed=1", fw[s]};
                mm_sim sim;
                mm_scenario sc_sim = {0};
                load(&sim, &sc_sim, sets, 8);
                mm_metrics m;
                mm_err err;
                int rc = mm_sim_run(&sim, &m, NULL, &err);
                ck_assert_msg(rc == 0, "%s x %s (workload %d): %s", place[p], sched[s], w, err.msg);
                ck_assert_msg(m.oom || (isfinite(m.iteration_time_s) && m.iteration_time_s > 0), "%s x %s",
                              place[p], sched[s]);
                if (!m.oom)
                    ck_assert(m.encoder_load_imbalance >= 1.0 - 1e-12);
                mm_metrics_free(&m);
                done(&sim, &sc_sim);
            }
}
END_TEST

/* An audio-only model's colocated encoder: its ranks count their own
 * clips (the audio mix's samples have 0-2 of them, so the ranks differ). */
START_TEST(colocated_audio_ranks)
{
    const char *sets[] = {"model=models/qwen2-audio-like-7b.yaml", "workload=workloads/audio-mix.yaml",
                          "parallel.placement=colocated", "parallel.audio={tp: 1, pp: 1, dp: 16}",
                          "train.global_batch=48", "iterations=2"};
    mm_sim sim;
    mm_scenario sc_sim = {0};
    load(&sim, &sc_sim, sets, 6);
    mm_metrics m;
    run(&sim, &m, NULL);
    ck_assert(!m.oom);
    ck_assert_msg(m.encoder_load_imbalance > 1.01 && m.encoder_excess_s > 0, "%.4f", m.encoder_load_imbalance);
    mm_metrics_free(&m);
    done(&sim, &sc_sim);
}
END_TEST

/* The deadlock: pipeline placement, an interleaved LLM. */
START_TEST(pipeline_placement_with_interleaving)
{
    const char *sets[] = {"parallel.placement=pipeline", "parallel.llm={tp: 1, pp: 2, vpp: 2, dp: 6}",
                          "parallel.vision={tp: 1, pp: 1, dp: 4}", "train.schedule=interleaved",
                          "train.global_batch=48", "iterations=1"};
    mm_sim sim;
    mm_scenario sc_sim = {0};
    load(&sim, &sc_sim, sets, 6);
    mm_metrics m;
    run(&sim, &m, NULL);
    ck_assert(!m.oom && m.iteration_time_s > 0);
    mm_metrics_free(&m);
    done(&sim, &sc_sim);
}
END_TEST

/* Per-module recompute overrides train.recompute for that module only. */
START_TEST(per_module_recompute)
{
    const char *sets[] = {"train.recompute=none", "parallel.vision={tp: 1, pp: 1, dp: 16, recompute: full}"};
    mm_sim a, b;
    mm_scenario sc_a = {0}, sc_b = {0};
    load(&a, &sc_a, sets, 1);
    load(&b, &sc_b, sets, 2);
    ck_assert_int_eq(mm_sim_recompute(&b, &b.enc[0].layout), MM_RECOMPUTE_FULL);
    ck_assert_int_eq(mm_sim_recompute(&b, &b.sc.parallel.llm), MM_RECOMPUTE_NONE);
    mm_enc_mb_cost ca, cb;
    double pa, pb;
    ck_assert_int_eq(mm_sim_enc_mb_cost(&a, &a.enc[0], 5, 1, &ca, &pa), 0);
    ck_assert_int_eq(mm_sim_enc_mb_cost(&b, &b.enc[0], 5, 1, &cb, &pb), 0);
    ck_assert(cb.bwd_s > ca.bwd_s && cb.recompute_flops > 0 && ca.recompute_flops == 0);
    done(&a, &sc_a);
    done(&b, &sc_b);
    mm_scenario sc = {0};
    mm_err err;
    const char *bad[] = {"parallel.vision={tp: 1, pp: 1, dp: 16, recompute: most}"};
    ck_assert_int_eq(mm_scenario_load(&sc, NULL, bad, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "parallel.vision.recompute");
}
END_TEST

/* train.frozen: unknown names and freezing everything are refused. */
START_TEST(frozen_bad_input)
{
    const char *bad[][1] = {{"train.frozen=[vison]"}, {"train.frozen=[vision, projector, llm]"}};
    for (int i = 0; i < 2; i++) {
        mm_scenario sc = {0};
        mm_sim sim;
        mm_err err;
        ck_assert_int_eq(mm_scenario_load(&sc, NULL, bad[i], 1, &err), 0);
        ck_assert_int_eq(mm_sim_prepare(&sim, &sc, &err), -MM_EINPUT);
        ck_assert_str_eq(err.key, "train.frozen");
        done(&sim, &sc);
    }
}
END_TEST

/* ZB-V places two chunks per rank: vpp 1 or 4 under zb-v, and vpp 2
 * under a schedule of one chunk per rank, are refused by key. */
START_TEST(zb_v_bad_input)
{
    const char *bad[][3] = {{"train.schedule=zb-v", "parallel.llm={tp: 2, pp: 2, vpp: 1, dp: 4}", "train.framework=megatron-local"},
                            {"train.schedule=zb-v", "parallel.llm={tp: 2, pp: 2, vpp: 4, dp: 4}", "train.framework=megatron-local"},
                            {"train.schedule=zb-2p", "parallel.llm={tp: 2, pp: 2, vpp: 2, dp: 4}", "train.framework=megatron-local"}};
    for (int i = 0; i < 3; i++) {
        mm_scenario sc = {0};
        mm_sim sim;
        mm_err err;
        ck_assert_int_eq(mm_scenario_load(&sc, NULL, bad[i], 3, &err), 0);
        ck_assert_int_eq(mm_sim_prepare(&sim, &sc, &err), -MM_EINPUT);
        ck_assert_str_eq(err.key, "parallel.llm.vpp");
        ck_assert_msg(strstr(err.msg, "zb-v") != NULL, "%s", err.msg);
        done(&sim, &sc);
    }
}
END_TEST

/* `mmsim plan` exits 0 on the pipeline + interleaved case. */
START_TEST(plan_goes_on)
{
    static char dir[256], out[65536], errout[65536];
    mmx_tmpdir(dir, sizeof dir, "mm");
    int rc = mmx_run(dir, "", "plan --gpus 16 --placement pipeline --set train.schedule=interleaved "
                               "--set train.global_batch=48 --top 3 --no-db",
                     out, sizeof out, errout, sizeof errout);
    ck_assert_msg(rc == 0, "%s", errout);
    mmx_rmdir(dir);
}
END_TEST

/* The rows of "dp_rank_load_s" in the run's JSON (the printer `mmsim run
 * --json` and the C API share): n_iters rows of dp numbers each, into
 * out (iters x dp).  Returns the number of rows read. */
static int json_dp_load(const mm_sim *sim, const mm_metrics *m, int dp, double *out, int max_rows)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert(f != NULL);
    mm_report_run_json(f, sim, m, 0, NULL);
    fclose(f);
    const char *p = strstr(buf, "\"dp_rank_load_s\": [");
    ck_assert_msg(p != NULL, "no dp_rank_load_s in %s", buf);
    p += strlen("\"dp_rank_load_s\": [");
    int rows = 0;
    while (*p == '[' && rows < max_rows) {
        p++;
        for (int r = 0; r < dp; r++) {
            char *end;
            out[rows * dp + r] = strtod(p, &end);
            ck_assert_msg(end != p, "row %d has fewer than %d numbers", rows, dp);
            p = end;
            if (r + 1 < dp) {
                ck_assert_msg(*p == ',', "row %d has fewer than %d numbers", rows, dp);
                p += 2;
            }
        }
        ck_assert_msg(*p == ']', "row %d has more than %d numbers", rows, dp);
        rows++;
        p++;
        if (*p == ',')
            p += 2;
    }
    ck_assert_msg(*p == ']', "dp_rank_load_s has more rows than iterations");
    free(buf);
    return rows;
}

/* Per-DP-rank load: with the OneVision mix and sequential batching (4 DP
 * ranks, 3 iterations) each iteration's row has dp entries whose max /
 * mean is that iteration's load_imbalance (1e-12) and the ranks differ;
 * post-balancing deals the same samples more evenly.  Without a workload file every rank's load is
 * the m micro-batches of the stages' uniform costs and the imbalance 1. */
START_TEST(dp_rank_load_in_json)
{
    enum { DP = 4, IT = 3 };
    double seq[IT * DP], post[IT * DP], seq_imb[IT];
    for (int w = 0; w < 3; w++) {
        const char *sets[] = {"parallel.placement=homogeneous", "parallel.llm={tp: 2, pp: 2, dp: 4}",
                              "train.global_batch=16", "iterations=3",
                              w == 2 ? "seed=1" : "workload=workloads/llava-ov-mix.yaml",
                              w == 1 ? "batching=post-balance" : "batching=sequential",
                              /* not the pipeline's fixed shape (megatron-core's padding_pipelined),
                               * which gives every rank the same load */
                              "train.padding=longest"};
        mm_sim sim;
        mm_scenario sc_sim = {0};
        load(&sim, &sc_sim, sets, 7);
        mm_metrics m;
        run(&sim, &m, NULL);
        ck_assert(!m.oom);
        ck_assert_int_eq(m.dp_ranks, DP);
        double *row = w == 1 ? post : seq;
        ck_assert_int_eq(json_dp_load(&sim, &m, DP, row, IT + 1), IT);
        for (int i = 0; i < IT; i++) {
            double max = 0, sum = 0;
            for (int r = 0; r < DP; r++) {
                ck_assert(row[i * DP + r] > 0);
                max = fmax(max, row[i * DP + r]);
                sum += row[i * DP + r];
            }
            double imb = max / (sum / DP);
            ck_assert_msg(fabs(imb - m.iters[i].load_imbalance) < 1e-12, "iteration %d: %.15g vs %.15g", i, imb,
                          m.iters[i].load_imbalance);
            if (w == 0) {
                ck_assert_msg(imb > 1.001, "sequential batching of the mix is uneven: %.6f", imb);
                seq_imb[i] = imb;
            }
            if (w == 1) /* the balancer's point: the same samples, dealt more evenly */
                ck_assert_msg(imb < seq_imb[i], "iteration %d: post-balance %.6f, sequential %.6f", i, imb, seq_imb[i]);
            if (w == 2) {
                ck_assert(m.iters[i].load_imbalance == 1.0);
                ck_assert(fabs(row[i * DP] - row[i * DP + DP - 1]) <= 1e-12 * row[i * DP]);
            }
        }
        mm_metrics_free(&m);
        done(&sim, &sc_sim);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mm");
    TCase *t = tcase_create("mm");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, colocated_ranks_encode_their_own_samples);
    tcase_add_test(t, frozen_llm_states);
    tcase_add_test(t, zb_v_bad_input);
    tcase_add_test(t, llava_stage1_and_stage2);
    tcase_add_test(t, padded_tokens);
    tcase_add_test(t, padding_in_a_run);
    tcase_add_test(t, oom_in_the_iteration_that_does_not_fit);
    tcase_add_test(t, memory_follows_the_mix);
    tcase_add_test(t, oom_on_a_smaller_gpu);
    tcase_add_test(t, placement_by_schedule_matrix);
    tcase_add_test(t, pipeline_placement_with_interleaving);
    tcase_add_test(t, colocated_audio_ranks);
    tcase_add_test(t, second_colocated_encoder_ranks);
    tcase_add_test(t, post_balance_deals_the_audio);
    tcase_add_test(t, second_encoder_pair_bytes);
    tcase_add_test(t, per_module_recompute);
    tcase_add_test(t, frozen_bad_input);
    tcase_add_test(t, plan_goes_on);
    tcase_add_test(t, dp_rank_load_in_json);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
