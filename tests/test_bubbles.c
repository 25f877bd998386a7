/* test_bubbles.c - a colocated encoder in the LLM's bubbles
 * (train.encoder_schedule bubbles; Optimus, Feng et al., arXiv
 * 2408.03505): the executor's fill rule against its closed form, a
 * uniform pipeline's iteration against the closed form of what the
 * bubbles hide, the encoder's dependencies on the LLM's passes, and the
 * keys it refuses.
 * Not for: the serial placements (test_placement.c). */
#include "sched_common.h"

/* ---- the executor's fill rule ------------------------------------------- */

/* Rank 0 runs X (x s), then Y (y s), which waits for Z (z s) on rank 1;
 * its fill stream holds k kernels of f s.  The GPU of rank 0 idles in
 * [x, z] (a bubble of G = z - x); fill kernels start back to back from x
 * while none of rank 0's compute kernels is ready, and are not
 * preempted: n = min(k, ceil(G / f)) of them start in the bubble, Y
 * starts at max(z, x + n f), the k - n others follow it:
 *   T = max(z, x + n f) + y + (k - n) f. */
static double fill_case(double x, double y, double z, int k, double f, double *y_start)
{
    mm_graph g;
    ck_assert_int_eq(mm_graph_init(&g, 2), 0);
    mm_op X = {.rank = 0, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .layer = -1, .stage = 0, .mb = 0,
               .coll = -1, .peer = -1, .dur_s = x};
    mm_op Y = X, Z = X, F = X;
    Y.dur_s = y;
    Z.rank = 1, Z.dur_s = z;
    F.stream = MM_STREAM_FILL, F.module = 1, F.dur_s = f;
    int64_t ix = mm_graph_add_op(&g, &X), iy = mm_graph_add_op(&g, &Y), iz = mm_graph_add_op(&g, &Z);
    ck_assert(ix >= 0 && iy >= 0 && iz >= 0);
    ck_assert_int_eq(mm_graph_dep(&g, (uint32_t)iz, (uint32_t)iy), 0);
    for (int i = 0; i < k; i++)
        ck_assert(mm_graph_add_op(&g, &F) >= 0);
    int gp0 = 0, gp1 = 1;
    ck_assert_int_eq(mm_graph_rank_gpus(&g, 0, &gp0, 1), 0);
    ck_assert_int_eq(mm_graph_rank_gpus(&g, 1, &gp1, 1), 0);
    ck_assert_int_eq(mm_graph_finish(&g), 0);
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("topologies/dgx-a100.yaml", 8, &c, &err), 0);
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end), t1;
    ck_assert_int_eq(mm_exec_run(eng, &g, &c, MM_EXEC_NET_ANALYTIC, start, end, &t1, &err), 0);
    /* rank 0's GPU never runs two kernels at once */
    for (uint32_t i = 0; i < g.n_ops; i++)
        for (uint32_t j = i + 1; j < g.n_ops; j++)
            if (g.ops[i].rank == 0 && g.ops[j].rank == 0)
                ck_assert(end[i] <= start[j] || end[j] <= start[i]);
    *y_start = (double)start[iy] * 1e-9;
    free(start);
    free(end);
    mm_engine_free(eng);
    mm_graph_free(&g);
    mm_cluster_free(&c);
    return (double)t1 * 1e-9;
}

START_TEST(fill_closed_form)
{
    /* x, y, z, k, f: all fit (n = k); the third kernel overruns the bubble
     * (n = 3 < 5); no bubble (z < x: n = 0); no fill kernels */
    const double cs[][5] = {{1.0, 1.0, 3.0, 5, 0.3}, {1.0, 1.0, 3.0, 5, 0.7}, {2.0, 1.0, 1.5, 3, 0.4},
                            {1.0, 2.0, 2.5, 0, 0.4}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        double x = cs[i][0], y = cs[i][1], z = cs[i][2], f = cs[i][4], ys;
        int k = (int)cs[i][3];
        double gap = z - x;
        int n = gap <= 0 ? 0 : (int)ceil(gap / f - 1e-12);
        n = n < k ? n : k;
        double y0 = fmax(z, x + n * f), want = y0 + y + (k - n) * f;
        double t = fill_case(x, y, z, k, f, &ys);
        ck_assert_msg(fabs(ys - y0) < 1e-9, "case %zu: Y at %.9f, want %.9f", i, ys, y0);
        ck_assert_msg(fabs(t - want) < 1e-9, "case %zu: T %.9f, want %.9f", i, t, want);
    }
}
END_TEST

/* A blocking collective leaves the GPU to fill kernels: rank 0 runs X
 * (1 s), then an all-reduce on its compute stream with rank 1, which
 * reaches it after Z (3 s), then Y.  Its two fill kernels of 1.2 s start
 * at 1 s and 2.2 s, inside the wait; the second has 0.4 s of work left
 * when the all-reduce starts at 3 s and runs beside its transfer (c s)
 * at 1 / (1 + s) of its pace (s: the overlap slowdown), then at full
 * pace: it ends at 3 + c + 0.4 - c / (1 + s), and Y, ready at 3 + c,
 * waits for it. */
START_TEST(fill_beside_collective)
{
    const double slow[] = {0.0, 0.5};
    for (int q = 0; q < 2; q++) {
        mm_graph g;
        ck_assert_int_eq(mm_graph_init(&g, 2), 0);
        int gp[2] = {0, 1};
        int64_t cl = mm_graph_add_coll(&g, MM_COLL_ALLREDUCE, 2, 1, 4e9, gp, 2);
        ck_assert(cl == 0);
        mm_op X = {.rank = 0, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .layer = -1, .stage = 0, .mb = 0,
                   .coll = -1, .peer = -1, .dur_s = 1.0};
        mm_op C = X, Y = X, Z = X, C1 = X, F = X;
        C.cat = MM_CAT_TP, C.coll = 0, C.dur_s = 0;
        Z.rank = 1, Z.dur_s = 3.0;
        C1 = C, C1.rank = 1;
        F.stream = MM_STREAM_FILL, F.module = 1, F.dur_s = 1.2;
        int64_t ix = mm_graph_add_op(&g, &X), ic = mm_graph_add_op(&g, &C), iy = mm_graph_add_op(&g, &Y);
        int64_t iz = mm_graph_add_op(&g, &Z), ic1 = mm_graph_add_op(&g, &C1);
        int64_t f0 = mm_graph_add_op(&g, &F), f1 = mm_graph_add_op(&g, &F);
        ck_assert(ix >= 0 && ic >= 0 && iy >= 0 && iz >= 0 && ic1 >= 0 && f0 >= 0 && f1 >= 0);
        ck_assert_int_eq(mm_graph_rank_gpus(&g, 0, gp, 1), 0);
        ck_assert_int_eq(mm_graph_rank_gpus(&g, 1, gp + 1, 1), 0);
        ck_assert_int_eq(mm_graph_finish(&g), 0);
        mm_cluster c;
        mm_err err;
        ck_assert_int_eq(mm_cluster_load("topologies/dgx-a100.yaml", 8, &c, &err), 0);
        mm_engine *eng = mm_engine_alloc();
        mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end), t1;
        mm_exec_opts o = {.overlap_slowdown = slow[q]};
        ck_assert_int_eq(mm_exec_run_opts(eng, &g, &c, MM_EXEC_NET_ANALYTIC, &o, start, end, &t1, &err), 0);
        double t = 1e-9, sc = 1 + slow[q];
        double cs = (double)start[ic] * t, ce = (double)end[ic] * t, dur = ce - cs;
        ck_assert(fabs(cs - 3.0) < 1e-9 && dur > 0);
        ck_assert(fabs((double)start[f0] * t - 1.0) < 1e-9 && fabs((double)start[f1] * t - 2.2) < 1e-9);
        ck_assert(dur / sc < 0.4);
        double want = 3.0 + dur + 0.4 - dur / sc;
        ck_assert_msg(fabs((double)end[f1] * t - want) < 1e-6, "s %g: fill ends %.9f, want %.9f (c %.6f)", slow[q],
                      (double)end[f1] * t, want, dur);
        ck_assert(fabs((double)start[iy] * t - want) < 1e-6 && want > ce);
        free(start);
        free(end);
        mm_engine_free(eng);
        mm_graph_free(&g);
        mm_cluster_free(&c);
    }
}
END_TEST

/* The executor's invariant check (mm_exec_check) names a rank whose fill
 * kernel ran beside a compute kernel, and lets one that ran beside a
 * compute-stream collective or after it pass. */
START_TEST(check_catches_overlap)
{
    mm_graph g;
    ck_assert_int_eq(mm_graph_init(&g, 1), 0);
    mm_op k = {.rank = 0, .stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .layer = -1, .stage = 0, .mb = 0,
               .coll = -1, .peer = -1, .dur_s = 1};
    mm_op f = k;
    f.stream = MM_STREAM_FILL;
    ck_assert(mm_graph_add_op(&g, &k) == 0 && mm_graph_add_op(&g, &f) == 1);
    int gp = 0;
    ck_assert_int_eq(mm_graph_rank_gpus(&g, 0, &gp, 1), 0);
    ck_assert_int_eq(mm_graph_finish(&g), 0);
    mm_time start[2] = {0, 500}, end[2] = {1000, 1500};
    uint8_t runs[2] = {1, 1};
    mm_err err;
    ck_assert_int_eq(mm_exec_check(&g, runs, start, end, 0, 1500, &err), -MM_EINTERNAL);
    ck_assert_msg(strstr(err.msg, "fill op 1") != NULL, "%s", err.msg);
    start[1] = 1000, end[1] = 2000;
    ck_assert_int_eq(mm_exec_check(&g, runs, start, end, 0, 2000, &err), 0);
    mm_graph_free(&g);
}
END_TEST

/* ---- a uniform pipeline --------------------------------------------------- */

static mm_enc_mb_cost enc_mb[256];

/* p stages of F = 1 ms and B = 2 ms, dp replicas, m micro-batches, tp 1;
 * an encoder colocated with tp_enc 1 (dp_enc = p dp) whose whole forward
 * per micro-batch takes ef and backward eb, in 4 layer kernels. */
static mm_build_spec spec(mm_stage_cost *st, int p, int dp, int m, double ef, double eb, bool bubbles)
{
    for (int i = 0; i < p; i++)
        st[i] = (mm_stage_cost){.chunks = 2, .fwd_s = 1e-3, .bwd_s = 2e-3};
    for (int k = 0; k < dp * m; k++)
        enc_mb[k] = (mm_enc_mb_cost){.fwd_s = ef, .bwd_s = eb, .fwd_flops = 1e12, .bwd_flops = 2e12};
    mm_build_spec sp = {.schedule = MM_SCHEDULE_1F1B, .lay.tp = 1, .lay.pp = p, .lay.dp = dp, .lay.vpp = 1,
                        .m = m, .stages = st, .n_enc = 1, .enc_bubbles = bubbles};
    sp.enc[0] = (mm_enc_spec){.name = "vision", .placement = MM_ENC_COLOCATED, .tp = 1, .pp = 1, .dp = p * dp,
                              .chunks = 4, .mb = enc_mb};
    return sp;
}

/* Each rank's share of a micro-batch's encoder pass is e = ef / p forward
 * and g = eb / p backward (its p ranks split the images).  Serial
 * (Megatron MIMO's colocated order): T_llm + m (e + g).  In the bubbles,
 * while e <= B, (p - 1) e <= F and m (e + g) fits the stages' idle time,
 * only two shares have no LLM work beside them: the first micro-batch's
 * forward share on the first stage (its LLM forward waits for it) and the
 * last micro-batch's backward share after the first stage's last
 * backward; every other share runs in a stage's warm-up, its wait for
 * the first backward or the cool-down:
 *   T = T_llm + e + g, with T_llm = (m + p - 1)(F + B). */
START_TEST(pipeline_closed_form)
{
    const int cases[][3] = {{2, 1, 2}, {4, 2, 4}, {4, 1, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int p = cases[i][0], dp = cases[i][1], m = cases[i][2];
        double e = 0.1e-3, gb = 0.2e-3, F = 1e-3, B = 2e-3;
        mm_stage_cost st[8];
        mm_build_spec llm = spec(st, p, dp, m, 0, 0, false);
        llm.n_enc = 0;
        double t_llm = run_spec(&llm).time_s;
        ck_assert_msg(fabs(t_llm - (m + p - 1) * (F + B)) < 1e-9, "LLM alone %.9f", t_llm);
        mm_build_spec ser = spec(st, p, dp, m, e * p, gb * p, false), bub = spec(st, p, dp, m, e * p, gb * p, true);
        run_result rs = run_spec(&ser), rb = run_spec(&bub);
        ck_assert(rs.all_once && rb.all_once);
        ck_assert_msg(fabs(rs.time_s - (t_llm + m * (e + gb))) < 1e-9, "case %zu serial %.9f", i, rs.time_s);
        ck_assert_msg(fabs(rb.time_s - (t_llm + e + gb)) < 1e-9, "case %zu bubbles %.9f, want %.9f", i, rb.time_s,
                      t_llm + e + gb);
        /* the filled bubble: the GPUs' idle time less the encoder's */
        ck_assert(rb.bubble < rs.bubble);
        /* a frozen encoder: the first share alone shows */
        bub.enc[0].frozen = true;
        ck_assert_msg(fabs(run_spec(&bub).time_s - (t_llm + e)) < 1e-9, "case %zu frozen", i);
    }
}
END_TEST

/* The encoder's layers split over the pipeline ranks (pp_enc = p, stage se
 * on LLM stage p-1-se; tp 1, so a rank's share of a micro-batch is its
 * layers' part of ef and eb): a micro-batch's forward runs down the ranks
 * and its backward back up, so the first micro-batch's whole forward
 * chain and the last one's whole backward chain are exposed while the
 * rest fits: T = T_llm + ef + eb, against the images split's
 * T_llm + (ef + eb) / p; each GPU holds 1/p of the encoder. */
START_TEST(pipeline_split_layers)
{
    const int cases[][3] = {{2, 1, 2}, {4, 2, 4}, {4, 1, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int p = cases[i][0], dp = cases[i][1], m = cases[i][2];
        double ef = 0.1e-3 * p, eb = 0.2e-3 * p;
        mm_stage_cost st[8];
        mm_build_spec llm = spec(st, p, dp, m, 0, 0, false);
        llm.n_enc = 0;
        double t_llm = run_spec(&llm).time_s;
        mm_build_spec bub = spec(st, p, dp, m, ef, eb, true);
        bub.enc[0].pp = p, bub.enc[0].dp = dp;
        run_result rb = run_spec(&bub);
        ck_assert(rb.all_once);
        ck_assert_msg(fabs(rb.time_s - (t_llm + ef + eb)) < 1e-9, "case %zu split layers %.9f, want %.9f", i,
                      rb.time_s, t_llm + ef + eb);
    }
    /* pp_enc neither 1 nor the LLM's: refused by the builder */
    mm_stage_cost st[4];
    mm_build_spec bad = spec(st, 4, 1, 4, 1e-3, 2e-3, true);
    bad.enc[0].pp = 2, bad.enc[0].dp = 2;
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(&bad, &g, NULL), -1);
}
END_TEST

/* Past the closed form's reach: an encoder as long as the LLM's passes
 * hides what the bubbles hold and no more, never worse than serial:
 * T_llm + e + g <= T <= serial, and T >= each rank's work (LLM + m (e + g)). */
START_TEST(pipeline_heavy_encoder)
{
    mm_stage_cost st[4];
    int p = 4, m = 8;
    mm_build_spec llm = spec(st, p, 1, m, 0, 0, false);
    llm.n_enc = 0;
    double t_llm = run_spec(&llm).time_s, e = 1e-3, gb = 2e-3;
    mm_build_spec ser = spec(st, p, 1, m, e * p, gb * p, false), bub = spec(st, p, 1, m, e * p, gb * p, true);
    double ts = run_spec(&ser).time_s, tb = run_spec(&bub).time_s;
    ck_assert_msg(tb >= t_llm + e + gb - 1e-9 && tb >= m * 3e-3 + m * (e + gb) - 1e-9, "%.9f", tb);
    ck_assert_msg(tb < ts, "bubbles %.9f serial %.9f", tb, ts);
    /* a zero-cost encoder in the bubbles is the LLM alone */
    mm_build_spec z = spec(st, p, 1, m, 0, 0, true);
    ck_assert(fabs(run_spec(&z).time_s - t_llm) < 1e-12);
}
END_TEST

/* Dependencies: every forward kernel of micro-batch j's encoder ends
 * before the first stage's LLM forward of j starts; every backward kernel
 * starts after the first stage's LLM backward of j ends. */
START_TEST(dependencies_kept)
{
    mm_stage_cost st[4];
    int p = 4, dp = 2, m = 8;
    mm_build_spec sp = spec(st, p, dp, m, 4e-3, 8e-3, true);
    mm_graph g;
    ck_assert_int_eq(mm_build_iteration(&sp, &g, NULL), 0);
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load("topologies/dgx-a100.yaml", 64, &c, &err), 0);
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc(g.n_ops * sizeof *start), *end = malloc(g.n_ops * sizeof *end), t1;
    ck_assert_int_eq(mm_exec_run(eng, &g, &c, MM_EXEC_NET_ANALYTIC, start, end, &t1, &err), 0);
    mm_time f0[2][8], b0[2][8];
    for (int d = 0; d < dp; d++)
        for (int j = 0; j < m; j++)
            f0[d][j] = INT64_MAX, b0[d][j] = -1;
    for (uint32_t i = 0; i < g.n_ops; i++) { /* the first stage's LLM passes: ranks 0..dp-1 */
        const mm_op *o = &g.ops[i];
        if (o->module == 0 && o->rank < dp && o->stream == MM_STREAM_COMPUTE && o->mb >= 0 && o->coll < 0) {
            if (o->cat == MM_CAT_FWD && start[i] < f0[o->rank][o->mb])
                f0[o->rank][o->mb] = start[i];
            if (o->cat == MM_CAT_BWD && end[i] > b0[o->rank][o->mb])
                b0[o->rank][o->mb] = end[i];
        }
    }
    int nf = 0, nb = 0;
    for (uint32_t i = 0; i < g.n_ops; i++) {
        const mm_op *o = &g.ops[i];
        if (o->stream != MM_STREAM_FILL)
            continue;
        int d = o->rank % dp;
        ck_assert_int_eq(o->module, 1);
        if (o->cat == MM_CAT_FWD) {
            ck_assert(end[i] <= f0[d][o->mb]);
            nf++;
        } else {
            ck_assert(start[i] >= b0[d][o->mb]);
            nb++;
        }
    }
    ck_assert_int_eq(nf, p * dp * m * 4); /* every rank, micro-batch and layer once */
    ck_assert_int_eq(nb, p * dp * m * 4);
    free(start);
    free(end);
    mm_engine_free(eng);
    mm_graph_free(&g);
    mm_cluster_free(&c);
}
END_TEST

/* ---- the scenario key ------------------------------------------------------ */

static mm_scenario scn;

static int load(const char *const *sets, int n, mm_sim *sim, mm_err *err)
{
    mm_scenario_free(&scn);
    int rc = mm_scenario_load(&scn, NULL, sets, n, err);
    if (rc)
        memset(&scn, 0, sizeof scn);
    return rc ? rc : mm_sim_prepare(sim, &scn, err);
}

/* Refused by key: a placement other than colocated, co-execution, an
 * encoder TP group wider than an LLM rank, an unknown value.  The
 * default multimodal scenario runs in the bubbles at pp 2. */
START_TEST(refused)
{
    mm_sim sim;
    mm_err err;
    const char *pipe[] = {"parallel.placement=pipeline", "parallel.llm={tp: 4, pp: 2, dp: 1}",
                          "parallel.vision={tp: 1, pp: 1, dp: 8}", "train.global_batch=16",
                          "train.encoder_schedule=bubbles"};
    const char *dh[] = {"train.coexec=dhelix", "train.encoder_schedule=bubbles"};
    const char *wide[] = {"parallel.vision={tp: 8, dp: 2}", "train.encoder_schedule=bubbles"};
    const char *bad[] = {"train.encoder_schedule=holes"};
    const char *pp4[] = {"parallel.vision={tp: 1, pp: 4, dp: 4}", "train.encoder_schedule=bubbles"};
    const char *ser[] = {"parallel.vision={tp: 1, pp: 2, dp: 8}"}; /* serial: pp 1 */
    const char *const *cases[] = {pipe, dh, wide, bad, pp4, ser};
    const char *keys[] = {"train.encoder_schedule", "train.encoder_schedule", "parallel.vision.tp",
                          "train.encoder_schedule", "parallel.vision.pp", "parallel.vision.dp"};
    int ns[] = {5, 2, 2, 1, 2, 1};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(load(cases[i], ns[i], &sim, &err), -MM_EINPUT);
        ck_assert_msg(!strcmp(err.key, keys[i]), "case %d: %s: %s", i, err.key, err.msg);
        ck_assert_str_eq(err.file, "--set");
    }
    const char *ok[] = {"train.encoder_schedule=bubbles", "parallel.vision={tp: 1, pp: 2, dp: 8}"};
    ck_assert_msg(load(ok, 1, &sim, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
    ck_assert_msg(load(ok, 2, &sim, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
    mm_scenario_free(&scn);
}
END_TEST

static void run_build(const char *const *sets, int n, bool full_build, mm_metrics *m)
{
    mm_sim sim = {0};
    mm_err err;
    ck_assert_msg(load(sets, n, &sim, &err) == 0, "%s: %s", err.key, err.msg);
    sim.full_build = full_build;
    ck_assert_msg(mm_sim_run(&sim, m, NULL, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
    mm_scenario_free(&scn);
}

/* The default multimodal scenario at pp 4: one DP replica built for all
 * gives the whole build's iteration bit for bit; the bubbles beat the
 * serial order, and the peak memory is the serial colocated one (every
 * micro-batch encoded before its backward, as there); with the encoder's
 * layers split over the 4 ranks it is lower (a quarter of the encoder's
 * states per GPU), the time between serial and the images split. */
START_TEST(scenario_runs)
{
    const char *bub[] = {"parallel.llm={tp: 2, pp: 4, dp: 2}", "parallel.vision={tp: 1, dp: 16}",
                         "iterations=1", "network=analytic", "train.encoder_schedule=bubbles"};
    mm_metrics a, b, c;
    run_build(bub, 5, false, &a);
    run_build(bub, 5, true, &b);
    ck_assert(memcmp(&a.iteration_time_s, &b.iteration_time_s, sizeof(double)) == 0);
    run_build(bub, 4, false, &c); /* serial */
    ck_assert_msg(a.iteration_time_s < c.iteration_time_s, "bubbles %.6f serial %.6f", a.iteration_time_s,
                  c.iteration_time_s);
    ck_assert(fabs(a.peak_memory_gib - c.peak_memory_gib) < 1e-9);
    const char *lay[] = {"parallel.llm={tp: 2, pp: 4, dp: 2}", "parallel.vision={tp: 1, pp: 4, dp: 4}",
                         "iterations=1", "network=analytic", "train.encoder_schedule=bubbles"};
    mm_metrics l, l2;
    run_build(lay, 5, false, &l);
    run_build(lay, 5, true, &l2);
    ck_assert(memcmp(&l.iteration_time_s, &l2.iteration_time_s, sizeof(double)) == 0);
    ck_assert_msg(l.peak_memory_gib < a.peak_memory_gib, "%.3f vs %.3f", l.peak_memory_gib, a.peak_memory_gib);
    ck_assert_msg(l.iteration_time_s >= a.iteration_time_s && l.iteration_time_s < c.iteration_time_s, "%.6f",
                  l.iteration_time_s);
    mm_metrics_free(&l);
    mm_metrics_free(&l2);
    mm_metrics_free(&a);
    mm_metrics_free(&b);
    mm_metrics_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bubbles");
    TCase *t = tcase_create("bubbles");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, fill_closed_form);
    tcase_add_test(t, check_catches_overlap);
    tcase_add_test(t, fill_beside_collective);
    tcase_add_test(t, pipeline_closed_form);
    tcase_add_test(t, pipeline_split_layers);
    tcase_add_test(t, pipeline_heavy_encoder);
    tcase_add_test(t, dependencies_kept);
    tcase_add_test(t, refused);
    tcase_add_test(t, scenario_runs);
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
