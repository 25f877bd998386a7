/* test_dp_comm.c - data-parallel communication as each framework runs
 * it: overlap with compute and its contention (the topology's
 * gpu.overlap_slowdown), ZeRO-3's gathers and prefetch, grad_sync (once or
 * every micro-batch), the homogeneous encoder in the DP tail, and the
 * encoders' reductions in the executed graph and in the pre-score.
 * Tolerances are stated at each assertion. */
#include "framework_common.h"
#include "plan/planner.h"

/* What the binary printed (stdout, stderr) in the tests that run it. */
static char out[1 << 17], errtxt[1 << 14];

/* Overlap contention: rank 0 runs a 10 ms compute op while a 1 GiB DP
 * all-reduce with rank 1 is in flight on its DP stream (some 4.6 ms of it
 * left).  With the executor's slowdown the compute runs at 1 / (1 + 0.189)
 * of its pace (Lee et al. 2025) while the all-reduce runs and at full
 * pace after it: 10 ms + overlapped x 0.189 / 1.189 (mm_overlap_delay),
 * not the whole 10 ms slowed; without it 10 ms; a compute op that starts
 * after the communication ended is not slowed, and the communication
 * itself is untouched. */
START_TEST(overlap_contention)
{
    mm_cluster c;
    mm_err err;
    ck_assert(mm_cluster_load("topologies/dgx-a100.yaml", 1, &c, &err) == 0);
    double comp_s[2][2], comm_s[2], overlapped_s = 0;
    for (int k = 0; k < 2; k++) {
        mm_graph g;
        ck_assert_int_eq(mm_graph_init(&g, 2), 0);
        for (int r = 0; r < 2; r++) {
            int gp = r;
            ck_assert_int_eq(mm_graph_rank_gpus(&g, r, &gp, 1), 0);
        }
        int gpus[2] = {0, 1};
        int64_t cl = mm_graph_add_coll(&g, MM_COLL_ALLREDUCE, 2, 1, 1073741824.0, gpus, 2);
        mm_op dp = {.stream = MM_STREAM_DP, .cat = MM_CAT_DP, .layer = -1, .stage = 0, .mb = -1, .coll = (int32_t)cl,
                    .peer = -1};
        mm_op comp = {.stream = MM_STREAM_COMPUTE, .cat = MM_CAT_FWD, .layer = 0, .stage = 0, .mb = 0, .coll = -1,
                      .peer = -1, .dur_s = 0.010};
        uint32_t dps[2];
        for (int r = 0; r < 2; r++) {
            dp.rank = r;
            dps[r] = (uint32_t)mm_graph_add_op(&g, &dp);
        }
        comp.rank = 0;
        mm_op z = comp;
        z.dur_s = 1e-6; /* a starts 1 us in, the all-reduce in flight */
        ck_assert(mm_graph_add_op(&g, &z) >= 0);
        int64_t a = mm_graph_add_op(&g, &comp);
        int64_t b = mm_graph_add_op(&g, &comp); /* after it, and after a */
        ck_assert(a >= 0 && b >= 0);
        ck_assert_int_eq(mm_graph_dep(&g, dps[0], (uint32_t)b), 0);
        ck_assert_int_eq(mm_graph_finish(&g), 0);
        mm_engine *eng = mm_engine_alloc();
        ck_assert_ptr_nonnull(eng);
        mm_time *st = calloc(g.n_ops, sizeof *st), *en = calloc(g.n_ops, sizeof *en), t1;
        mm_exec_opts o = {.overlap_slowdown = k ? c.gpu.overlap_slowdown : 0};
        ck_assert_int_eq(mm_exec_run_opts(eng, &g, &c, MM_EXEC_NET_ANALYTIC, &o, st, en, &t1, &err), 0);
        comp_s[k][0] = (double)(en[a] - st[a]) * 1e-9;
        comp_s[k][1] = (double)(en[b] - st[b]) * 1e-9;
        comm_s[k] = (double)(en[dps[0]] - st[dps[0]]) * 1e-9;
        overlapped_s = (double)(en[dps[0]] - st[a]) * 1e-9;
        ck_assert(st[b] >= en[dps[0]]);
        free(st);
        free(en);
        mm_engine_free(eng);
        mm_graph_free(&g);
    }
    ck_assert(fabs(comp_s[0][0] - 0.010) < 1e-9 && fabs(comp_s[0][1] - 0.010) < 1e-9);
    ck_assert(overlapped_s > 0.001 && overlapped_s < 0.010);
    ck_assert(c.gpu.overlap_slowdown == 0.189); /* dgx-a100.yaml */
    ck_assert_msg(fabs(comp_s[1][0] - (0.010 + mm_overlap_delay(overlapped_s, 0.189))) < 2e-9,
                  "overlapped compute %g s", comp_s[1][0]);
    ck_assert(fabs(mm_overlap_delay(1.0, 0.189) - 0.189 / 1.189) < 1e-15);
    ck_assert(fabs(comp_s[1][1] - 0.010) < 1e-9);
    ck_assert(comm_s[0] == comm_s[1] && comm_s[0] > 0.001);
    mm_cluster_free(&c);
}
END_TEST

/* ZeRO-3 gathers by framework: DeepSpeed fetches a Llama layer module by
 * module (q, k, v, o, gate, up, down: 7 all-gathers, each with its
 * latency; the two norms, 4096 elements each, persist under its default
 * stage3_param_persistence_threshold of 1e5; 9 with a threshold of 0),
 * FSDP2 a block at once; the bytes per layer are the same. */
START_TEST(zero3_gathers_by_framework)
{
    const char *fwk[] = {"train.framework=hf-deepspeed", "train.framework=fsdp"};
    int counts[2] = {0, 0};
    double bytes[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"train.zero=3", "train.attention=flash2", fwk[i]};
        mm_sim sim = {0};
        prepare(&sim, sets, 3);
        mm_metrics m;
        mm_sim_timeline tl;
        mm_err err;
        ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
        for (uint32_t k = 0; k < tl.graph.n_colls; k++) {
            const mm_coll *c = &tl.graph.colls[k];
            if (c->kind == MM_COLL_ALLGATHER && c->members == 8 && counts[i] == 0) {
                counts[i] = c->count;
                bytes[i] = c->bytes * c->count;
            }
        }
        mm_sim_timeline_free(&tl);
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
    ck_assert_int_eq(counts[0], 7);
    ck_assert_int_eq(counts[1], 1);
    ck_assert(bytes[0] > 0 && fabs(bytes[0] - bytes[1]) < 1e-6 * bytes[1]);
    mm_framework fw;
    mm_llm m;
    mm_err err;
    ck_assert(mm_llm_load("models/llama-2-7b.json", &m, &err) == 0);
    load_profile("hf-deepspeed", &fw);
    ck_assert(fw.z3_prefetch_params == 5e7 && fw.z3_max_live_params == 1e9);
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), 1); /* 5e7 < one 202M-parameter layer */
    /* a 1e9 prefetch bucket: DeepSpeed prefetches min(max_live - live,
     * bucket) = 1e9 - 202.4M = 797.6M parameters, 3 layers of 202.4M (4
     * without the live limit, 1 under a 5e8 limit) */
    double layer = (double)mm_llm_layer_params(&m);
    ck_assert(fabs(layer - 202383360) < 1);
    fw.z3_prefetch_params = 1e9;
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), (int)floor((1e9 - layer) / layer));
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), 3);
    fw.z3_max_live_params = 0;
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), 4);
    fw.z3_max_live_params = 5e8;
    ck_assert_int_eq(mm_framework_z3_prefetch(&fw, &m), 1);
}
END_TEST

/* How much the prefetch hides, as the builder says: a gather may start once
 * the compute depth + 1 layers back is done and is queued on the DP stream
 * ahead of the reduce-scatters of the layers still computing.  Llama-2-7B
 * on 8 H100s, ZeRO-3, one micro-batch, the analytic network: a layer's
 * gather G (its z3_gathers collectives, each with its latency) is shorter
 * than its compute, so only the first gather of the forward and of the
 * backward and the last layer's gradient reduce-scatter RS are exposed:
 * exposed = 2 G + RS (1 %: the first backward gather also waits for the
 * head's).  Queued behind the reduce-scatters (the builder before this
 * test), every backward gather was exposed: ~67 ms instead of ~3. */
START_TEST(zero3_prefetch_hides_all_but_the_first_gather)
{
    const char *fwk[] = {"train.framework=hf-deepspeed", "train.framework=fsdp"};
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"train.zero=3", "cluster.topology=topologies/dgx-h100.yaml", "network=analytic", fwk[i]};
        mm_sim sim = {0};
        prepare(&sim, sets, 4);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_stage_cost *st = &c.stages[0];
        int n = c.spec.z3_gathers, g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        double per = st->param_bytes / st->chunks / n;
        double G = n * mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, per);
        double RS = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes / st->chunks);
        ck_assert(G < st->fwd_s / st->chunks); /* the case the formula covers */
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        double want = 2 * G + RS;
        ck_assert_msg(fabs(m.exposed_comm_s - want) < 0.01 * want, "%s: exposed %g s, 2G + RS = %g s (G %g, RS %g)",
                      fwk[i], m.exposed_comm_s, want, G, RS);
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
}
END_TEST

/* Whether DP communication overlaps compute is a profile default: each
 * profile states its framework's (Megatron-Core's DistributedDataParallel-
 * Config and Megatron-LM's --overlap-grad-reduce / --overlap-param-gather:
 * off; DeepSpeed's overlap_comm: on for stage 3 only, the ZeRO-1/2
 * partitions all-gathered after the step; FSDP2: reduce-scatter and
 * all-gather on their own streams, always), the stage decides what there is
 * to overlap (gradient buckets under ZeRO 0-2, the distributed optimizer's
 * gather under 1-2; ZeRO-3's per-layer reduce-scatters always), auto (the
 * default) takes the profile's and true / false override it.  An explicit
 * false under ZeRO-3 is refused by name under fsdp (no such FSDP2
 * configuration; modeled under hf-deepspeed:
 * zero3_without_overlap_exposes_its_collectives). */
START_TEST(overlap_is_a_profile_default)
{
    static const bool grad[] = {false, false, false, true}, param[] = {false, false, false, true};
    mm_framework fw;
    for (int i = 0; i < 4; i++) {
        load_profile(profiles[i], &fw);
        ck_assert_msg(fw.overlap_grad_reduce == grad[i] && fw.overlap_param_gather == param[i], "%s", profiles[i]);
        for (int z = 0; z <= 3; z++) {
            bool g, p;
            mm_framework_overlap(&fw, z, &g, &p);
            ck_assert_msg(g == (z == 3 || grad[i]) && p == (z >= 1 && z <= 2 && param[i]), "%s zero %d: %d %d",
                          profiles[i], z, g, p);
        }
    }
    /* DeepSpeed's overlap_comm default is stage == 3 (zero/config.py) */
    load_profile("hf-deepspeed", &fw);
    for (int z = 0; z <= 3; z++) {
        bool g, p;
        mm_framework_overlap(&fw, z, &g, &p);
        ck_assert(g == (z == 3) && !p);
    }
    /* the scenario: auto by default; the resolved value reaches the build spec */
    mm_sim sim = {0};
    mm_err err;
    for (int i = 0; i < 4; i++) {
        char fwk[64];
        snprintf(fwk, sizeof fwk, "train.framework=%s", profiles[i]);
        mm_framework pf;
        load_profile(profiles[i], &pf);
        for (int z = 0; z <= 3; z++) {
            if (!((pf.zero_stages >> z) & 1u))
                continue; /* not run by the profile: refused (zero_stages_refused) */
            prepare_fw_zero(&sim, profiles[i], z, NULL);
            ck_assert_int_eq(sim.sc.train.overlap_grad_reduce, MM_TOVL_AUTO);
            ck_assert_int_eq(sim.sc.train.overlap_param_gather, MM_TOVL_AUTO);
            mm_sim_costs c;
            ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
            ck_assert(c.spec.overlap_grad_reduce == (z == 3 || grad[i]));
            ck_assert(c.spec.overlap_param_gather == (z >= 1 && z <= 2 && param[i]));
            mm_sim_costs_free(&c);
            mm_sim_free(&sim);
        }
        /* an explicit value overrides the profile either way */
        const char *on[] = {fwk, "train.zero=1", "train.overlap_grad_reduce=true", "train.overlap_param_gather=true"};
        const char *off[] = {fwk, "train.zero=1", "train.overlap_grad_reduce=false",
                             "train.overlap_param_gather=false"};
        for (int k = 0; k < 2; k++) {
            prepare(&sim, k ? off : on, 4);
            bool g, p;
            mm_sim_overlap(&sim, 1, &g, &p);
            ck_assert(g == !k && p == !k);
            mm_sim_free(&sim);
        }
    }
    /* refused by name: false under ZeRO-3 under fsdp, a parameter
     * gather to overlap without the distributed optimizer */
    const char *z3[] = {"train.framework=fsdp", "train.zero=3", "train.overlap_grad_reduce=false"};
    ck_assert_int_eq(prepare_rc(z3, 3, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.overlap_grad_reduce");
    const char *z0[] = {"train.framework=fsdp", "train.zero=0", "train.overlap_param_gather=true"};
    ck_assert_int_eq(prepare_rc(z0, 3, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.overlap_param_gather");
    const char *bad[] = {"train.overlap_grad_reduce=maybe"};
    ck_assert_int_eq(prepare_rc(bad, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.overlap_grad_reduce");
}
END_TEST

/* What the overlap moves, by formula.  Llama-2-7B on 8 H100s, ZeRO-1, one
 * micro-batch, the analytic network, fsdp's fp32 reduce: with the overlaps
 * off (the key set false) the whole stage's gradients are reduce-scattered
 * after the backward and its 16-bit parameters all-gathered after the
 * step: exposed = RS(grad) + AG(params) (1e-6).  Under fsdp's default
 * (auto: both on) buckets of one layer (FSDP2: one reduce-scatter per
 * block) leave during the backward and the gathers open the iteration, so
 * only the last bucket's reduce-scatter and the first one's gather are
 * exposed: RS(grad / L) + AG(params / L) (1 %).  The iteration gains the
 * hidden communication less the contention of the overlapped compute
 * (exec.h: mm_overlap_delay of the time it overlaps, which is the hidden
 * communication's, 2 %). */
START_TEST(overlap_hides_dp_communication)
{
    double exposed[2], t[2], rs_all = 0, ag_all = 0, layers = 0;
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"train.framework=fsdp", "train.zero=1", "cluster.topology=topologies/dgx-h100.yaml",
                              "network=analytic", k ? "train.overlap_grad_reduce=false" : "train.overlap_grad_reduce=auto",
                              k ? "train.overlap_param_gather=false" : "train.overlap_param_gather=auto",
                              "train.seq_len=2048"}; /* fsdp's eager activations at 4096: out of memory */
        mm_sim sim = {0};
        prepare(&sim, sets, 7);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_stage_cost *st = &c.stages[0];
        int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        rs_all = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes);
        ag_all = mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes);
        layers = st->chunks;
        double rs1 = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes / layers);
        double ag1 = mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes / layers);
        /* the formula's case: a bucket's traffic is shorter than its layer's compute */
        ck_assert(rs1 < st->bwd_s / layers && ag1 < st->fwd_s / layers);
        ck_assert(fabs(st->param_bytes * 2 - st->grad_bytes) < 1); /* fp32 reduce, bf16 gathers */
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        exposed[k] = m.exposed_comm_s;
        t[k] = m.iteration_time_s;
        double want = k ? rs_all + ag_all : rs1 + ag1;
        ck_assert_msg(fabs(exposed[k] - want) < (k ? 1e-6 : 0.01) * want, "%s: exposed %g s, formula %g s",
                      k ? "off" : "auto", exposed[k], want);
        mm_metrics_free(&m);
        /* the planner's pre-score: off, the whole RS + AG; auto, one
         * bucket of each plus the overlap slowdown on the rest (which fits
         * behind one micro-batch's backward and forward here) */
        mm_metrics e;
        ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
        double ewant = k ? rs_all + ag_all
                         : (rs_all + ag_all) / layers + mm_overlap_delay((rs_all + ag_all) * (1 - 1 / layers), 0.189);
        ck_assert_msg(fabs(e.exposed_comm_s - ewant) < 1e-9 * ewant, "%s: estimate %g s, formula %g s",
                      k ? "off" : "auto", e.exposed_comm_s, ewant);
        mm_metrics_free(&e);
        mm_sim_free(&sim);
    }
    double hidden = exposed[1] - exposed[0];
    ck_assert(layers == 32 && hidden > 0.9 * (rs_all + ag_all));
    ck_assert_msg(t[1] - t[0] <= hidden * (1 + 1e-9) && t[1] - t[0] >= hidden - 1.02 * mm_overlap_delay(hidden, 0.189),
                  "iteration %g -> %g s, hidden %g s", t[1], t[0], hidden);
}
END_TEST

/* A copy of topologies/dgx-h100.yaml whose gpu.overlap_slowdown line says
 * `value`, in a fresh folder beside a link to the shipped kernel tables
 * (the file names them relative to its own folder); dir gets the folder. */
static void h100_with_slowdown(const char *value, char *dir, size_t dlen, char *path, size_t plen)
{
    char cwd[512], link[600], repl[96];
    const char *src = getenv("MMSIM_SRCDIR");
    if (!src)
        src = getcwd(cwd, sizeof cwd);
    ck_assert_ptr_nonnull(src);
    snprintf(dir, dlen, "/tmp/mmsim-ovl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char kernels[600], topo[600];
    snprintf(kernels, sizeof kernels, "%s/topologies/kernels", src);
    snprintf(link, sizeof link, "%s/kernels", dir);
    ck_assert_int_eq(symlink(kernels, link), 0);
    snprintf(topo, sizeof topo, "%s/topologies/dgx-h100.yaml", src);
    snprintf(path, plen, "%s/topo.yaml", dir);
    snprintf(repl, sizeof repl, "  overlap_slowdown: %s\n", value);
    ck_assert(copy_with_line(fopen(topo, "r"), fopen(path, "w"), "  overlap_slowdown:", repl) > 0);
}

static void h100_with_slowdown_free(const char *dir, const char *path)
{
    char link[600];
    snprintf(link, sizeof link, "%s/kernels", dir);
    unlink(link);
    unlink(path);
    rmdir(dir);
}

/* The topology's gpu.overlap_slowdown reaches the executor and the
 * pre-score.  The fsdp scenario of overlap_hides_dp_communication (its
 * one-layer buckets leave during the backward, the gathers open the
 * iteration, H = (1 - 1/L) of RS + AG hidden behind compute) on copies of
 * dgx-h100.yaml that say s = 0, 0.189 (the shipped value) and 0.4: the
 * overlapped compute runs at 1 / (1 + s) of its pace, so the iteration
 * grows by mm_overlap_delay(H, s) = H s / (1 + s) over s = 0 (within 1 %:
 * a bucket's reduce can outlast its layer's compute at the backward's end),
 * the communication is untouched (exposed time equal to 1e-9), and the
 * pre-score charges exactly that delay (1e-9). */
START_TEST(overlap_slowdown_from_topology)
{
    static const char *const values[] = {"0", "0.189", "0.4"};
    double t[3], exposed[3], est[3], hidden = 0;
    for (int k = 0; k < 3; k++) {
        char dir[64], path[128], set[160];
        h100_with_slowdown(values[k], dir, sizeof dir, path, sizeof path);
        snprintf(set, sizeof set, "cluster.topology=%s", path);
        const char *sets[] = {"train.framework=fsdp", "train.zero=1", set, "network=analytic",
                              "train.seq_len=2048"}; /* fsdp's eager activations at 4096: out of memory */
        mm_sim sim = {0};
        prepare(&sim, sets, 5);
        h100_with_slowdown_free(dir, path);
        ck_assert(sim.cluster->gpu.overlap_slowdown == atof(values[k]));
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_stage_cost *st = &c.stages[0];
        int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        double rs = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes);
        double ag = mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes);
        hidden = (rs + ag) * (1 - 1.0 / st->chunks);
        mm_sim_costs_free(&c);
        mm_metrics m, e;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        t[k] = m.iteration_time_s;
        exposed[k] = m.exposed_comm_s;
        mm_metrics_free(&m);
        ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
        est[k] = e.exposed_comm_s;
        mm_metrics_free(&e);
        mm_sim_free(&sim);
    }
    for (int k = 1; k < 3; k++) {
        double s = atof(values[k]), want = mm_overlap_delay(hidden, s);
        ck_assert_msg(fabs((t[k] - t[0]) - want) < 0.01 * want, "s = %g: iteration +%g s, formula %g s", s,
                      t[k] - t[0], want);
        ck_assert(fabs(exposed[k] - exposed[0]) < 1e-9 * exposed[0]);
        ck_assert_msg(fabs((est[k] - est[0]) - want) < 1e-9 * est[0], "s = %g: pre-score +%g s, formula %g s", s,
                      est[k] - est[0], want);
    }
    ck_assert(t[2] > t[1] && t[1] > t[0] && hidden > 0);
}
END_TEST

/* A homogeneous encoder's DP traffic: its gradients and parameters are not
 * in the LLM's buckets, so they leave in the tail, overlap or not, and the
 * distributed optimizer gathers 16-bit parameters (the gradients are fp32
 * under fsdp).  LLaVA-1.5-7B (CLIP ViT-L/14-336 in stage 0), dp 8, ZeRO-1,
 * the analytic network: the DP stream carries, per rank,
 *   off: RS(g + eg) + AG(p + ep)
 *   on:  L x (RS(g / L) + AG(p / L)) + RS(eg) + AG(ep)
 * (g, p the LLM stage's gradient and parameter bytes, eg, ep the
 * encoder's, L = 32 one-layer buckets), 1e-6 relative.  Under overlap the
 * encoder's share was left out before (its gradients never reduced). */
START_TEST(homogeneous_encoder_in_the_dp_tail)
{
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"model=models/llava-1.5-7b.json",
                              "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}",
                              "cluster.topology=topologies/dgx-h100.yaml", "cluster.nodes=1",
                              "parallel.placement=homogeneous", "parallel.llm={tp: 1, pp: 1, dp: 8}",
                              "train.global_batch=8", "train.zero=1", "network=analytic", "train.framework=fsdp",
                              k ? "train.overlap_grad_reduce=true" : "train.overlap_grad_reduce=false",
                              k ? "train.overlap_param_gather=true" : "train.overlap_param_gather=false"};
        static mm_scenario sc;
        mm_sim sim = {0};
        mm_err err;
        mm_scenario_free(&sc);
        ck_assert_msg(mm_scenario_load(&sc, NULL, sets, 12, &err) == 0, "%s: %s", err.key, err.msg);
        ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
        mm_sim_costs c;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        const mm_stage_cost *st = &c.stages[0];
        ck_assert_int_eq(c.spec.n_enc, 1);
        double g = st->grad_bytes, p = st->param_bytes, eg = c.spec.enc[0].grad_bytes,
               ep = c.spec.enc[0].param_bytes, L = st->chunks;
        ck_assert(eg > 0 && fabs(2 * ep - eg) < 1 && L == 32);
        int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
#define RS(x) mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, (x))
#define AG(x) mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, (x))
        double want = k ? L * (RS(g / L) + AG(p / L)) + RS(eg) + AG(ep) : RS(g + eg) + AG(p + ep);
        double enc_tail = RS(eg) + AG(ep);
#undef RS
#undef AG
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        ck_assert_msg(fabs(m.stages[0].comm_s - want) < 1e-6 * want, "%s: DP %g s, formula %g s", k ? "on" : "off",
                      m.stages[0].comm_s, want);
        ck_assert(m.exposed_comm_s >= enc_tail * (1 - 1e-9)); /* after the last backward, after the step */
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
}
END_TEST

/* How often each profile reduces the DP gradients (grad_sync), as its
 * framework's code does: DeepSpeed ZeRO-2's gradient hooks reduce every
 * backward, ZeRO 0-1 at the accumulation boundary; Megatron's DDP and
 * distributed optimizer once (no_sync around the other micro-batches,
 * finalize_model_grads), its ZeRO-2 (Megatron-FSDP optim_grads) every
 * backward; torchtitan every backward; under pp > 1 torch's pipelining and
 * DeepSpeed's pipeline engine once.  ZeRO-3 every micro-batch throughout.
 * The resolved rule reaches the build spec, and mm_build_grad_syncs counts
 * m reductions (m = 4 here) or 1. */
START_TEST(grad_sync_is_a_profile_default)
{
    static const bool every[4][3] = {
        {false, false, true}, {false, false, true}, {false, false, true}, {true, true, true}};
    static const bool once_pp[4] = {false, false, true, true};
    mm_framework fw;
    for (int i = 0; i < 4; i++) {
        load_profile(profiles[i], &fw);
        ck_assert_msg(fw.once_under_pp == once_pp[i], "%s", profiles[i]);
        for (int z = 0; z <= 3; z++)
            for (int pp = 1; pp <= 2; pp++) {
                bool want = z == 3 || (every[i][z] && !(pp > 1 && once_pp[i]));
                ck_assert_msg(mm_framework_grad_every_microbatch(&fw, z, pp) == want, "%s zero %d pp %d", profiles[i],
                              z, pp);
            }
    }
    mm_sim sim = {0};
    mm_err err;
    for (int i = 0; i < 4; i++) {
        mm_framework pf;
        load_profile(profiles[i], &pf);
        for (int z = 0; z <= 3; z++) {
            if (!((pf.zero_stages >> z) & 1u))
                continue; /* not run by the profile: refused (zero_stages_refused) */
            prepare_fw_zero(&sim, profiles[i], z, "train.global_batch=32");
            ck_assert_int_eq(sim.micro_batches, 4);
            mm_sim_costs c;
            ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
            bool want = z == 3 || every[i][z];
            ck_assert_msg(c.spec.grad_every_mb == want, "%s zero %d", profiles[i], z);
            ck_assert_int_eq(mm_build_grad_syncs(&c.spec), want ? 4 : 1);
            mm_sim_costs_free(&c);
            mm_sim_free(&sim);
        }
    }
    /* fsdp on a pipeline: torch's PipelineStage syncs after the last backward */
    const char *pp[] = {"train.framework=fsdp", "train.zero=1", "parallel.llm={tp: 1, pp: 2, dp: 4}",
                        "train.global_batch=32"};
    prepare(&sim, pp, 4);
    mm_sim_costs c;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert(!c.spec.grad_every_mb && mm_build_grad_syncs(&c.spec) == 1 && c.spec.m == 8);
    mm_sim_costs_free(&c);
    mm_sim_free(&sim);
    /* ... and so does an LLM of one stage behind the encoder's own stage
     * (placement pipeline, DFLOP's layouts): the schedule is a pipeline;
     * homogeneous (the tower inside the LLM's stage), every micro-batch */
    for (int k = 0; k < 2; k++) {
        const char *enc[] = {"model=models/llava-1.5-7b.json",
                             "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 300}",
                             k ? "parallel.placement=homogeneous" : "parallel.placement=pipeline",
                             k ? "parallel.llm={tp: 1, pp: 1, dp: 8}" : "parallel.llm={tp: 1, pp: 1, dp: 4}",
                             k ? "parallel.vision={tp: 1, pp: 1, dp: 8}" : "parallel.vision={tp: 1, pp: 1, dp: 4}",
                             "train.global_batch=32", "train.framework=fsdp", "train.zero=1"};
        prepare(&sim, enc, 8);
        ck_assert_int_eq(sim.n_enc, 1);
        ck_assert_int_eq(sim.micro_batches, k ? 4 : 8);
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert_msg(c.spec.grad_every_mb == (k == 1), "placement %s", k ? "homogeneous" : "pipeline");
        mm_sim_costs_free(&c);
        mm_sim_free(&sim);
    }
}
END_TEST

/* Per-micro-batch reduction multiplies the DP traffic by the micro-batches.
 * Llama-2-7B on 8 H100s, dp 8, 4 micro-batches, the analytic network.
 * hf-deepspeed ZeRO-2 (every micro-batch, overlap_comm off by default: the
 * stage's gradients reduce-scattered after each backward on the compute
 * stream) against ZeRO-1 (once, at the boundary): the reduced bytes are
 * 4 g against g (1e-9), the DP seconds and the exposed communication
 * 4 RS(g) + AG(p) against RS(g) + AG(p) (1e-6; all blocking), and the
 * pre-score's DP term the same (1e-9, the same reductions by
 * mm_build_grad_syncs).  fsdp ZeRO-1 (every micro-batch, overlapped, one
 * bucket per block): the DP stream carries 4 L RS(g/L) + L AG(p/L) (1e-6)
 * while only the last bucket's reduce and the first gather stay exposed
 * (2 %); its pre-score hides the three earlier reductions behind the next
 * micro-batch (mm_overlap_delay of them exposed) and stays within 5 %
 * of the simulated iteration. */
START_TEST(every_microbatch_multiplies_dp_traffic)
{
    const char *base[] = {"cluster.topology=topologies/dgx-h100.yaml", "network=analytic", "train.global_batch=32"};
    int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double bytes[2], grad = 0;
    for (int k = 0; k < 2; k++) { /* hf-deepspeed ZeRO-2, then ZeRO-1 */
        const char *sets[] = {base[0], base[1], base[2], "train.framework=hf-deepspeed",
                              k ? "train.zero=1" : "train.zero=2"};
        mm_sim sim = {0};
        prepare(&sim, sets, 5);
        ck_assert_int_eq(sim.micro_batches, 4);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(!c.spec.overlap_grad_reduce);
        const mm_stage_cost *st = &c.stages[0];
        grad = st->grad_bytes;
        double rs = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes);
        double ag = mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes);
        double n = k ? 1 : 4, want = n * rs + ag;
        mm_sim_costs_free(&c);
        mm_metrics m;
        mm_sim_timeline tl;
        ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
        int ops;
        bytes[k] = dp_reduce_bytes(&tl.graph, &ops);
        ck_assert_int_eq(ops, (int)n);
        ck_assert_msg(fabs(m.stages[0].comm_s - want) < 1e-6 * want, "zero %d: DP %g s, %g RS + AG = %g s", 2 - k,
                      m.stages[0].comm_s, n, want);
        ck_assert_msg(fabs(m.exposed_comm_s - want) < 1e-6 * want, "zero %d: exposed %g s, formula %g s", 2 - k,
                      m.exposed_comm_s, want);
        mm_sim_timeline_free(&tl);
        mm_metrics_free(&m);
        mm_metrics e;
        ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
        ck_assert_msg(fabs(e.exposed_comm_s - want) < 1e-9 * want, "zero %d: estimate %g s, formula %g s", 2 - k,
                      e.exposed_comm_s, want);
        mm_metrics_free(&e);
        mm_sim_free(&sim);
    }
    ck_assert(fabs(bytes[0] - 4 * grad) < 1e-9 * grad && fabs(bytes[1] - grad) < 1e-9 * grad);
    /* fsdp: every micro-batch, overlapped bucket by bucket */
    const char *sets[] = {base[0], base[1], base[2], "train.framework=fsdp", "train.zero=1",
                          "train.seq_len=2048"}; /* fsdp's eager activations at 4096: out of memory */
    mm_sim sim = {0};
    prepare(&sim, sets, 6);
    mm_sim_costs c;
    mm_err err;
    ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
    ck_assert(c.spec.overlap_grad_reduce && c.spec.overlap_param_gather && mm_build_grad_syncs(&c.spec) == 4);
    const mm_stage_cost *st = &c.stages[0];
    double L = st->chunks, f1 = st->fwd_s, b1 = st->bwd_s, g = st->grad_bytes;
#define RS(x) mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, (x))
#define AG(x) mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, (x))
    double on_stream = 4 * L * RS(st->grad_bytes / L) + L * AG(st->param_bytes / L);
    double last = RS(st->grad_bytes / L) + AG(st->param_bytes / L);
    double rs = RS(st->grad_bytes), ag = AG(st->param_bytes);
#undef RS
#undef AG
    ck_assert(rs < f1 + b1); /* each earlier reduce fits behind the next micro-batch */
    double est = 3 * odelay(rs) + (rs / L + odelay(rs * (1 - 1 / L))) +
                 (ag / L + odelay(ag * (1 - 1 / L)));
    mm_sim_costs_free(&c);
    mm_metrics m;
    mm_sim_timeline tl;
    ck_assert_int_eq(mm_sim_run(&sim, &m, &tl, &err), 0);
    int ops;
    double by = dp_reduce_bytes(&tl.graph, &ops);
    ck_assert(ops == 4 * 32 && fabs(by - 4 * g) < 1e-9 * by);
    ck_assert_msg(fabs(m.stages[0].comm_s - on_stream) < 1e-6 * on_stream, "fsdp: DP %g s, formula %g s",
                  m.stages[0].comm_s, on_stream);
    ck_assert_msg(fabs(m.exposed_comm_s - last) < 0.02 * last, "fsdp: exposed %g s, last RS + first AG %g s",
                  m.exposed_comm_s, last);
    mm_metrics e;
    ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
    ck_assert_msg(fabs(e.exposed_comm_s - est) < 1e-9 * est, "fsdp: estimate %g s, formula %g s", e.exposed_comm_s,
                  est);
    ck_assert_msg(fabs(e.iteration_time_s - m.iteration_time_s) < 0.05 * m.iteration_time_s,
                  "fsdp: estimate %g s, simulated %g s", e.iteration_time_s, m.iteration_time_s);
    mm_metrics_free(&e);
    mm_sim_timeline_free(&tl);
    mm_metrics_free(&m);
    mm_sim_free(&sim);
}
END_TEST

/* ZeRO-3 with the overlap off, as DeepSpeed runs overlap_comm false: every
 * all-gather (the prefetch too) and every reduce-scatter on the compute
 * stream, so all of them are exposed.  Llama-2-7B on 8 H100s, 2
 * micro-batches, the analytic network, hf-deepspeed: per micro-batch and
 * layer a forward and a backward gather G = n AG(p / L / n) (its n = 7
 * module gathers) and RS = RS(g / L): exposed = 2 L (2 G + RS) (1e-6),
 * where the overlapped default exposes about 2 G + RS per micro-batch; the
 * pre-score's DP term is the same sum (1e-9).  Under fsdp and megatron-core
 * no such configuration exists (FSDP2 has no switch, Megatron-FSDP forces
 * the overlap): refused by key, naming the framework. */
START_TEST(zero3_without_overlap_exposes_its_collectives)
{
    double exposed[2], t[2], want = 0;
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"train.framework=hf-deepspeed", "train.zero=3", "cluster.topology=topologies/dgx-h100.yaml",
                              "network=analytic", "train.global_batch=16",
                              k ? "train.overlap_grad_reduce=auto" : "train.overlap_grad_reduce=false"};
        mm_sim sim = {0};
        prepare(&sim, sets, 6);
        ck_assert_int_eq(sim.micro_batches, 2);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(c.spec.overlap_grad_reduce == (k == 1));
        const mm_stage_cost *st = &c.stages[0];
        int n = c.spec.z3_gathers, g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        double L = st->chunks;
        ck_assert(n == 7 && L == 32);
        double G = n * mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes / L / n);
        double RS = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes / L);
        want = 2 * L * (2 * G + RS);
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        exposed[k] = m.exposed_comm_s;
        t[k] = m.iteration_time_s;
        if (k == 0) {
            ck_assert_msg(fabs(m.exposed_comm_s - want) < 1e-6 * want, "exposed %g s, 2 L (2 G + RS) = %g s",
                          m.exposed_comm_s, want);
            mm_metrics e;
            ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
            ck_assert_msg(fabs(e.exposed_comm_s - want) < 1e-9 * want, "estimate %g s, formula %g s",
                          e.exposed_comm_s, want);
            mm_metrics_free(&e);
        }
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
    /* the overlap hides all but a few layers' worth, and the iteration
     * gains what it hid less the contention on the compute it overlaps:
     * mm_overlap_delay of the time it runs beside it, at most the hidden
     * communication's */
    double hidden = exposed[0] - exposed[1];
    ck_assert_msg(exposed[1] < 0.1 * exposed[0] && t[0] - t[1] <= hidden * (1 + 1e-9) &&
                      t[0] - t[1] >= hidden - 1.02 * odelay(hidden),
                  "exposed off %g s, on %g s; iteration %g -> %g s", exposed[0], exposed[1], t[0], t[1]);
    const char *refused[] = {"fsdp", "megatron-core"};
    for (int i = 0; i < 2; i++) {
        char fwk[64];
        snprintf(fwk, sizeof fwk, "train.framework=%s", refused[i]);
        const char *sets[] = {fwk, "train.zero=3", "train.overlap_grad_reduce=false"};
        mm_err err;
        ck_assert_int_eq(prepare_rc(sets, 3, &err), -MM_EINPUT);
        ck_assert_str_eq(err.key, "train.overlap_grad_reduce");
        ck_assert_msg(strstr(err.msg, refused[i]) && strstr(err.msg, "zero3_blocking"), "%s", err.msg);
    }
}
END_TEST

/* DeepSpeed's modules and its stage3 settings (mm_framework_z3_plan).  A
 * layer's modules add up to its parameters (GPT-3 175B: two LayerNorms,
 * c_attn, c_proj, c_fc, the MLP's c_proj; Llama-2-7B: two RMSNorms, q, k,
 * v, o, gate, up, down; exact).  Under DeepSpeed's defaults the norms
 * persist (<= 1e5 elements): 4 and 7 gathers.  Under full recompute the
 * backward gathers again each module whose next use lies 1e9 parameters
 * or more away in the trace (2 x the parameters of the modules after it):
 * for 175B (h 12288) c_attn, attention c_proj and c_fc (3 gathers, (3h^2 +
 * 3h + h^2 + h + 4h^2 + 4h) / layer of its parameters), not the MLP's
 * c_proj (next used right away); for 7B (a 202M layer) none; with a
 * distance of 0 every gathered module again.  A bucket of 0 prefetches
 * nothing; a threshold that keeps a whole layer is refused.  The
 * gradients leave in DeepSpeed's IPG buckets (reduce_bucket_size 5e8). */
START_TEST(zero3_deepspeed_modules_and_plan)
{
    mm_framework fw;
    load_profile("hf-deepspeed", &fw);
    ck_assert(fw.z3_persist_params == 1e5 && fw.z3_max_reuse_params == 1e9);
    mm_llm g, l;
    mm_err err;
    ck_assert(mm_llm_load("models/gpt3-175b.json", &g, &err) == 0);
    ck_assert(mm_llm_load("models/llama-2-7b.json", &l, &err) == 0);
    mm_z3_module mod[MM_Z3_MAX_MODULES];
    const mm_llm *ms[2] = {&g, &l};
    const int nmod[2] = {6, 9};
    for (int i = 0; i < 2; i++) {
        int n = mm_framework_z3_modules(ms[i], mod);
        ck_assert_int_eq(n, nmod[i]);
        double sum = 0;
        for (int k = 0; k < n; k++)
            sum += mod[k].params;
        ck_assert_msg(sum == (double)mm_llm_layer_params(ms[i]), "modules %g, layer %lld", sum,
                      (long long)mm_llm_layer_params(ms[i]));
    }
    mm_z3_gather_plan p;
    ck_assert_int_eq(mm_framework_z3_plan(&fw, &g, NULL, true, &p), 0);
    double h = 12288, layer = (double)mm_llm_layer_params(&g);
    ck_assert_int_eq(p.gathers, 4);
    ck_assert_int_eq(p.regathers, 3);
    ck_assert(fabs(p.regather_share - (3 * h * h + 3 * h + h * h + h + 4 * h * h + 4 * h) / layer) < 1e-12);
    ck_assert_int_eq(p.prefetch, 1);
    /* reduce_bucket_size 5e8 in backward order: the MLP's c_proj (604M)
     * alone, c_fc (604M) alone, the norm and c_proj (151M), c_attn (453M)
     * with the next norm: 4 reduce-scatters a layer; a 7B layer's fit in
     * one bucket with the next layer's: 1 */
    ck_assert_int_eq(p.scatters, 4);
    ck_assert_int_eq(mm_framework_z3_plan(&fw, &g, NULL, false, &p), 0);
    ck_assert(p.regathers == 0 && p.regather_share == 0);
    ck_assert_int_eq(mm_framework_z3_plan(&fw, &l, NULL, true, &p), 0);
    ck_assert(p.gathers == 7 && p.regathers == 0 && p.scatters == 1);
    mm_z3_knobs k = {-1, -1, -1, 0}; /* release everything at once */
    ck_assert_int_eq(mm_framework_z3_plan(&fw, &l, &k, true, &p), 0);
    double norms = 2 * 4096, ll = (double)mm_llm_layer_params(&l);
    ck_assert(p.regathers == 7 && fabs(p.regather_share - (ll - norms) / ll) < 1e-12);
    k = (mm_z3_knobs){0, -1, 0, -1}; /* no prefetch, nothing persists */
    ck_assert_int_eq(mm_framework_z3_plan(&fw, &l, &k, false, &p), 0);
    ck_assert(p.prefetch == 0 && p.gathers == 9);
    k = (mm_z3_knobs){-1, -1, 1e12, -1};
    ck_assert_int_eq(mm_framework_z3_plan(&fw, &l, &k, false, &p), -1);
    /* the scenario keys: refused by name where they do not apply */
    static const struct {
        const char *fw, *set, *key;
    } bad[] = {
        {"train.framework=fsdp", "zero.prefetch_bucket_size=0", "zero.prefetch_bucket_size"},
        {"train.framework=megatron-core", "zero.max_reuse_distance=0", "zero.max_reuse_distance"},
        {"train.framework=hf-deepspeed", "zero.max_live_parameters=-2", "zero.max_live_parameters"},
        {"train.framework=hf-deepspeed", "zero.param_persistence_threshold=1e12", "zero.param_persistence_threshold"},
        {"train.framework=hf-deepspeed", "zero.prefetch_bucket_size=[1]", "zero.prefetch_bucket_size"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *sets[] = {bad[i].fw, "train.zero=3", bad[i].set};
        ck_assert_int_eq(prepare_rc(sets, 3, &err), -MM_EINPUT);
        ck_assert_msg(!strcmp(err.key, bad[i].key), "case %zu: key %s: %s", i, err.key, err.msg);
    }
    /* from a file: file, line and key, exit status 2 */
    char dir[256], path[300], args[512];
    mmx_tmpdir(dir, sizeof dir, "z3");
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("model: models/llama-2-7b.json\ncluster: {topology: topologies/dgx-h100.yaml, nodes: 1}\n"
          "train: {global_batch: 8, zero: 3, framework: hf-deepspeed}\nparallel: {llm: {tp: 1, pp: 1, dp: 8}}\n"
          "workload: text\nzero:\n  prefetch_bucket_size: -5\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "run --no-db %s", path);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    char want[400];
    snprintf(want, sizeof want, "%s:7: key 'zero.prefetch_bucket_size'", path);
    ck_assert_msg(strstr(errtxt, want), "stderr: %s (want %s)", errtxt, want);
    mmx_rmdir(dir);
}
END_TEST

/* The parameters all-gathered per micro-batch, in closed form: each rank
 * gathers its stage's 16-bit parameters P before the forward and again
 * before the backward, so the gathers' bytes are 2 P per micro-batch and
 * a rank receives 2 P (dp - 1) / dp of them (ring all-gather); P is 2
 * bytes per parameter of the model (Llama-2-7B, hf-deepspeed, dp 8, 2
 * micro-batches; 1e-9).  Under full recompute with a reuse distance of 0
 * the backward gathers the layers' modules again: (2 + share) P, share
 * the gathered modules' share of the layers (1e-9). */
START_TEST(zero3_gathered_bytes_closed_form)
{
    for (int rc = 0; rc < 2; rc++) {
        const char *sets[] = {"train.framework=hf-deepspeed", "train.zero=3", "train.global_batch=16",
                              rc ? "train.recompute=full" : "train.recompute=selective",
                              rc ? "zero.max_reuse_distance=0" : "zero.max_reuse_distance=-1"};
        mm_sim sim = {0};
        prepare(&sim, sets, 5);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        double P = c.stages[0].param_bytes, share = c.spec.z3_regather_share;
        int m = sim.micro_batches, dp = 8;
        ck_assert_int_eq(m, 2);
        mm_sim_costs_free(&c);
        ck_assert(rc ? share > 0.99 && share < 1 : share == 0);
        mm_metrics mt;
        mm_sim_timeline tl;
        ck_assert_int_eq(mm_sim_run(&sim, &mt, &tl, &err), 0);
        double gathered = 0;
        for (uint32_t i = 0; i < tl.graph.n_ops; i++) {
            const mm_op *op = &tl.graph.ops[i];
            if (op->rank != 0 || op->cat != MM_CAT_DP || op->coll < 0)
                continue;
            const mm_coll *cl = &tl.graph.colls[op->coll];
            if (cl->kind == MM_COLL_ALLGATHER)
                gathered += cl->bytes * cl->count;
        }
        double want = m * (2 + share) * P;
        ck_assert_msg(fabs(gathered - want) < 1e-9 * want, "gathered %g B, (2 + %g) m P = %g B", gathered, share, want);
        double params = (double)mm_llm_params(sim.llm);
        ck_assert_msg(fabs(P - 2 * params) < 1e-9 * P, "P %g B, 2 x %g parameters", P, params);
        double recv = gathered * (dp - 1) / dp;
        ck_assert(fabs(recv - m * (2 + share) * 2 * params * (dp - 1) / dp) < 1e-9 * recv);
        mm_sim_timeline_free(&tl);
        mm_metrics_free(&mt);
        mm_sim_free(&sim);
    }
}
END_TEST

/* DeepSpeed with a prefetch bucket of 0 prefetches nothing: each layer's
 * gather is issued when the layer before it is done and the compute waits
 * for all of it, so every gather is exposed: exposed = 2 L G + RS (the
 * last layer's reduce-scatter; G a layer's gather of its n modules with
 * their latency; the analytic network, 1e-6), against about 2 G + RS with
 * the default bucket (zero3_prefetch_hides_all_but_the_first_gather), and
 * the iteration longer by what no longer hides (at least the gathers
 * less the compute they would have hidden behind, >= 2 L G - F - B). */
START_TEST(zero3_no_prefetch_hides_nothing)
{
    double exposed[2], t[2], want = 0, floor_gain = 0;
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"train.framework=hf-deepspeed", "train.zero=3", "cluster.topology=topologies/dgx-h100.yaml",
                              "network=analytic", k ? "zero.prefetch_bucket_size=-1" : "zero.prefetch_bucket_size=0"};
        mm_sim sim = {0};
        prepare(&sim, sets, 5);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        ck_assert(c.spec.z3_no_prefetch == (k == 0));
        const mm_stage_cost *st = &c.stages[0];
        int n = c.spec.z3_gathers, g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        double L = st->chunks;
        double G = n * mm_net_analytic_time(sim.cluster, MM_COLL_ALLGATHER, g8, 8, st->param_bytes / L / n);
        double RS = mm_net_analytic_time(sim.cluster, MM_COLL_REDUCESCATTER, g8, 8, st->grad_bytes / L);
        if (k == 0) {
            want = 2 * L * G + RS;
            floor_gain = 2 * L * G - (st->fwd_s + st->bwd_s);
        }
        mm_sim_costs_free(&c);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        exposed[k] = m.exposed_comm_s;
        t[k] = m.iteration_time_s;
        if (k == 0) {
            ck_assert_msg(fabs(m.exposed_comm_s - want) < 1e-6 * want, "exposed %g s, 2 L G + RS = %g s",
                          m.exposed_comm_s, want);
            mm_metrics e;
            ck_assert_int_eq(mm_sim_estimate(&sim, &e, &err), 0);
            ck_assert_msg(e.exposed_comm_s >= 2 * L * G * (1 - 1e-9), "estimate %g s, 2 L G %g s", e.exposed_comm_s,
                          2 * L * G);
            mm_metrics_free(&e);
        }
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
    ck_assert_msg(exposed[1] < 0.1 * exposed[0] && t[0] - t[1] >= floor_gain, "exposed %g -> %g s, iteration %g -> %g s",
                  exposed[0], exposed[1], t[0], t[1]);
}
END_TEST

/* The shape of the published ZeRO-3 scaling (tests/data/zero3/
 * narayanan2021-table2.csv): GPT-3 175B under ZeRO-3 without model
 * parallelism (DeepSpeed: hf-deepspeed's ZeRO-3, fp16, full recompute) on
 * 384, 768 and 1536 A100s at a global batch of 1536, one micro-batch of
 * 4, 2, 1 per GPU.  Every GPU gathers the whole model every micro-batch
 * whatever the count while its compute halves, so the hardware TFLOP/s per
 * GPU must fall as the GPUs double (published 144, 88, 44; mmsim's are
 * printed beside them, nothing is fitted). */
START_TEST(zero3_175b_falls_as_gpus_double)
{
    /* hf-deepspeed (today's DeepSpeed), then the 2021 list collectives the
     * runs had (tests/data/zero3/deepspeed-2021.yaml): lower at every count */
    const char *const fws[] = {"train.framework=hf-deepspeed",
                               "train.framework=tests/data/zero3/deepspeed-2021.yaml"};
    double today[3] = {0};
    for (int p = 0; p < 2; p++) {
        FILE *f = fopen("tests/data/zero3/narayanan2021-table2.csv", "r");
        ck_assert_ptr_nonnull(f);
        char line[1024];
        int rows = 0;
        double prev = 0;
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f)); /* header */
        while (fgets(line, sizeof line, f)) {
            char model[32], scheme[16];
            double pb, pub;
            int gpus, batch, mb;
            if (sscanf(line, "%31[^,],%lf,%15[^,],%d,%d,%d,%lf", model, &pb, scheme, &gpus, &batch, &mb, &pub) != 7 ||
                strcmp(model, "gpt-175b") || strcmp(scheme, "zero3"))
                continue;
            char nodes[48], lay[64], gb[48], mbs[48];
            snprintf(nodes, sizeof nodes, "cluster.nodes=%d", gpus / 8);
            snprintf(lay, sizeof lay, "parallel.llm={tp: 1, pp: 1, dp: %d}", gpus);
            snprintf(gb, sizeof gb, "train.global_batch=%d", batch);
            snprintf(mbs, sizeof mbs, "train.micro_batch=%d", mb);
            const char *sets[] = {"model=models/gpt3-175b.json", "workload=text", "parallel.vision=null",
                                  "cluster.topology=topologies/dgx-a100.yaml", nodes, lay, gb, mbs, "train.seq_len=2048",
                                  "train.recompute=full", fws[p], "train.precision=fp16",
                                  "train.zero=3", "iterations=1"};
            mm_scenario sc;
            mm_sim sim = {0};
            mm_err err;
            ck_assert_msg(mm_scenario_load(&sc, NULL, sets, 14, &err) == 0, "%s: %s", err.key, err.msg);
            ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s: %s", err.key, err.msg);
            ck_assert_int_eq(sim.micro_batches, 1);
            mm_metrics m;
            ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
            ck_assert(!m.oom);
            printf("zero3 175B %4d A100s, %s: published %5.1f, mmsim %5.1f hardware TFLOP/s per GPU (exposed comm "
                   "%.2f s, host %.2f s, of %.2f s)\n",
                   gpus, fws[p] + 16, pub, m.hw_tflops_per_gpu, m.exposed_comm_s, m.exposed_host_s,
                   m.iteration_time_s);
            ck_assert_msg(rows == 0 || m.hw_tflops_per_gpu < prev, "%d GPUs: %g TFLOP/s, not below %g", gpus,
                          m.hw_tflops_per_gpu, prev);
            if (p == 0)
                today[rows] = m.hw_tflops_per_gpu;
            else
                ck_assert_msg(m.hw_tflops_per_gpu < today[rows], "%d GPUs: %g TFLOP/s with list collectives, %g without",
                              gpus, m.hw_tflops_per_gpu, today[rows]);
            prev = m.hw_tflops_per_gpu;
            rows++;
            mm_metrics_free(&m);
            mm_sim_free(&sim);
            mm_scenario_free(&sc);
        }
        fclose(f);
        ck_assert_int_eq(rows, 3);
    }
}
END_TEST

/* DeepSpeed's list collectives of 2021 (tests/data/zero3/deepspeed-2021.yaml,
 * zero3.list_collectives): each gather and reduce-scatter costs the host
 * dp x (forward_op_us + backward_op_us + launch_us) (a Python view and a
 * C++ copy per rank: 8 x 10.8 us on the base scenario), one reduce-scatter
 * per gathered module, after a device synchronization: the host spends
 * L m (F: g, B: g + g) of them more than under hf-deepspeed, all of it
 * exposed (the host waits for the GPU before each layer), 1 %; the
 * iteration grows by at most that (the gathers that overlapped compute
 * now overlap the host's time and no longer slow the compute). */
START_TEST(zero3_list_collectives_host_closed_form)
{
    double host[2], t[2], exposed[2], per = 0;
    int g = 0, L = 0, m = 0;
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {k ? "train.framework=tests/data/zero3/deepspeed-2021.yaml" : "train.framework=hf-deepspeed",
                              "train.zero=3", "train.recompute=selective", "network=analytic"};
        mm_sim sim = {0};
        prepare(&sim, sets, 4);
        mm_sim_costs c;
        mm_err err;
        ck_assert_int_eq(mm_sim_stage_times(&sim, &c, &err), 0);
        if (k) {
            per = c.spec.z3_list_host_s;
            ck_assert_msg(fabs(per - 8 * (6.8 + 1.0 + 3.0) * 1e-6) < 1e-12, "per collective %g s", per);
            g = c.spec.z3_gathers;
            ck_assert_int_eq(g, 7);                 /* Llama: q, k, v, o, gate, up, down */
            ck_assert_int_eq(c.spec.z3_scatters, g); /* parameter by parameter */
            ck_assert_int_eq(c.spec.z3_regathers, 0);
        } else {
            ck_assert(c.spec.z3_list_host_s == 0);
        }
        L = (int)sim.llm->layers;
        m = sim.micro_batches;
        mm_sim_costs_free(&c);
        mm_metrics mt;
        ck_assert_int_eq(mm_sim_run(&sim, &mt, NULL, &err), 0);
        host[k] = mt.host_launch_s;
        t[k] = mt.iteration_time_s;
        exposed[k] = mt.exposed_host_s;
        mm_metrics_free(&mt);
        mm_sim_free(&sim);
    }
    double want = (double)L * m * 3 * g * per;
    ck_assert_msg(fabs(host[1] - host[0] - want) < 1e-4 * want, "host %g -> %g s, L m 3 g x %g = %g", host[0], host[1],
                  per, want);
    ck_assert_msg(fabs(exposed[1] - exposed[0] - want) < 0.01 * want, "exposed host %g -> %g s, want %g more",
                  exposed[0], exposed[1], want);
    ck_assert_msg(t[1] > t[0] && t[1] - t[0] <= want * (1 + 1e-6), "iteration %g -> %g s, host %g more", t[0], t[1],
                  want);
}
END_TEST

/* A bad grad_sync or overlap.zero3_blocking value: the loader names file,
 * line and key, and `mmsim run` exits 2 with that message. */
START_TEST(bad_grad_sync_is_refused)
{
    static const struct {
        const char *from, *to, *key;
    } cases[] = {
        {"  every_microbatch:", "  every_microbatch: {zero0: false, zero1: false, zero2: often}\n",
         "grad_sync.every_microbatch.zero2"},
        {"  every_microbatch:", "  every_microbatch: {zero0: false, zero2: true}\n", "grad_sync.every_microbatch.zero1"},
        {"  every_microbatch:", "  every_microbatch: {zero0: false, zero1: false, zero2: true, zero3: true}\n",
         "grad_sync.every_microbatch.zero3"},
        {"  every_microbatch:", "  every_microbatch: true\n", "grad_sync.every_microbatch"},
        {"  once_under_pp:", "  once_under_pp: 2\n", "grad_sync.once_under_pp"},
        {"  once_under_pp:", "\n", "grad_sync.once_under_pp"},
        {"grad_sync:", "grad_sync:\n  per_layer: true\n", "grad_sync.per_layer"},
        {"  zero3_blocking:", "  zero3_blocking: perhaps\n", "overlap.zero3_blocking"},
        {"zero_stages:", "zero_stages: [0, 4]\n", "zero_stages"},
        {"zero_stages:", "zero_stages: [1, 3]\n", "zero_stages"},
        {"zero_stages:", "zero_stages: [0, 1, 1]\n", "zero_stages"},
        {"zero_stages:", "zero_stages: 3\n", "zero_stages"},
        {"zero_stages:", "\n", "zero_stages"},
        {"schedules:", "schedules: [1f1b, zb-3p]\n", "schedules"},
        {"schedules:", "schedules: [interleaved]\n", "schedules"},
        {"schedules:", "schedules: [1f1b, 1f1b]\n", "schedules"},
        {"schedules:", "schedules: 1f1b\n", "schedules"},
        {"schedules:", "\n", "schedules"},
        /* megatron-core gathers a layer at once: no list form */
        {"  gather: layer", "  gather: layer\n  list_collectives: true\n", "zero3.list_collectives"},
        {"  gather: layer", "  gather: layer\n  list_collectives: perhaps\n", "zero3.list_collectives"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_err err;
        char tmp[64];
        int rc = load_edited(cases[i].from, cases[i].to, &err, tmp, sizeof tmp);
        ck_assert_msg(rc == -MM_EINPUT, "case %zu: rc %d", i, rc);
        ck_assert_msg(!strcmp(err.key, cases[i].key), "case %zu: key '%s', expected '%s'", i, err.key, cases[i].key);
        ck_assert_msg(!strcmp(err.file, tmp) && err.line > 0, "case %zu: %s:%d", i, err.file, err.line);
    }
    char dir[256], prof[300], args[1024];
    int bad = profile_with_line("frameworks/fsdp.yaml", "  once_under_pp: true", "  once_under_pp: yes please\n", "gs",
                                dir, sizeof dir, prof, sizeof prof);
    ck_assert(bad > 0);
    snprintf(args, sizeof args,
             "run --no-db --set model=models/llama-2-7b.json --set workload=text --set parallel.vision=null "
             "--set cluster.nodes=1 --set 'parallel.llm={tp: 1, pp: 1, dp: 8}' --set train.global_batch=8 "
             "--set train.framework=%s",
             prof);
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    char want[400];
    snprintf(want, sizeof want, "%s:%d: key 'grad_sync.once_under_pp'", prof, bad);
    ck_assert_msg(strstr(errtxt, want), "stderr: %s (want %s)", errtxt, want);
    mmx_rmdir(dir);
}
END_TEST

/* The ZeRO stages each profile runs (zero_stages): Megatron-LM's legacy
 * modules (megatron-local) run ZeRO 0 and 1 only (the distributed
 * optimizer; FSDP2 needs distributed checkpoints, which the legacy models
 * refuse, and Megatron-FSDP shards by megatron.core TransformerLayer: the
 * profile's comment cites the code); the others 0-3.  A scenario asking
 * for a stage the profile lacks is refused naming train.zero or
 * parallel.llm.zero, and the planner does not offer it. */
START_TEST(zero_stages_refused)
{
    static const unsigned want[] = {0xfu, 0x3u, 0xfu, 0xfu}; /* by profiles[]: core, local, deepspeed, fsdp */
    for (int i = 0; i < 4; i++) {
        mm_framework fw;
        load_profile(profiles[i], &fw);
        ck_assert_msg(fw.zero_stages == want[i], "%s: %#x", profiles[i], fw.zero_stages);
    }
    mm_err err;
    const char *z3[] = {"train.framework=megatron-local", "train.zero=3"};
    ck_assert_int_eq(prepare_rc(z3, 2, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.zero");
    ck_assert_msg(strstr(err.msg, "ZeRO-3") && strstr(err.msg, "zero_stages"), "%s", err.msg);
    const char *z2[] = {"train.framework=megatron-local", "parallel.llm={tp: 1, pp: 1, dp: 8, zero: 2}"};
    ck_assert_int_eq(prepare_rc(z2, 2, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "parallel.llm.zero");
    const char *z1[] = {"train.framework=megatron-local", "train.zero=1"};
    ck_assert_int_eq(prepare_rc(z1, 2, &err), 0);
    /* the planner's space under megatron-local: ZeRO 0 and 1 only */
    const char *sets[] = {"model=models/gpt3-1.3b.json", "train.framework=megatron-local", "train.global_batch=16",
                          "train.seq_len=2048", "iterations=1"};
    static const char *const narrow[] = {"micro_batch=1", "pp=1", "cp=1", "tp=1,2", "recompute=selective"};
    mm_plan_opts o = {.sets = sets, .n_sets = 5, .gpus = 8, .top_k = 0, .iterations = 1, .jobs = 1, .space = narrow,
                      .n_space = 5};
    mm_plan p;
    ck_assert_msg(mm_plan_run(&o, &p, &err) == 0, "%s", err.msg);
    ck_assert_int_eq((int)p.n, 4); /* tp 1, 2 x zero 0, 1 */
    for (size_t i = 0; i < p.n; i++)
        ck_assert_int_le(p.c[i].zero, 1);
    mm_plan_free(&p);
}
END_TEST

/* The pipeline schedules each profile runs (schedules, bit k for
 * mm_schedule_names[k]): Megatron-LM 1F1B and interleaved
 * (get_forward_backward_func), megatron-local those and the Zero Bubble
 * fork's zb-h1, zb-2p and zb-v, DeepSpeed's TrainSchedule 1F1B only,
 * torch.distributed.pipelining GPipe, 1F1B, Interleaved1F1B and
 * ZBVZeroBubble (each profile's comment cites the code).  A scenario
 * asking for one its profile lacks is refused naming train.schedule and
 * the schedule, `mmsim run` exits 2, and the planner offers only the
 * profile's. */
START_TEST(schedules_refused)
{
    enum { G = 1, F = 2, I = 4, H1 = 8, P2 = 16, V = 32 };
    static const unsigned want[] = {F | I, F | I | H1 | P2 | V, F, G | F | I | V}; /* core, local, deepspeed, fsdp */
    for (int i = 0; i < 4; i++) {
        mm_framework fw;
        load_profile(profiles[i], &fw);
        ck_assert_msg(fw.schedules == want[i], "%s: %#x", profiles[i], fw.schedules);
    }
    mm_err err;
    const char *zbv[] = {"train.schedule=zb-v", "parallel.llm={tp: 2, pp: 2, vpp: 2, dp: 2}"};
    ck_assert_int_eq(prepare_rc(zbv, 2, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.schedule");
    ck_assert_msg(strstr(err.msg, "zb-v") && strstr(err.msg, "megatron-core") && strstr(err.msg, "1f1b, interleaved"),
                  "%s", err.msg);
    const char *gp[] = {"train.framework=hf-deepspeed", "train.schedule=gpipe", "parallel.llm={tp: 2, pp: 2, dp: 2}"};
    ck_assert_int_eq(prepare_rc(gp, 3, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "train.schedule");
    ck_assert_msg(strstr(err.msg, "gpipe") && strstr(err.msg, "hf-deepspeed"), "%s", err.msg);
    const char *ok[] = {"train.framework=fsdp", "train.schedule=zb-v", "parallel.llm={tp: 2, pp: 2, vpp: 2, dp: 2}"};
    ck_assert_int_eq(prepare_rc(ok, 3, &err), 0);
    char dir[256] = "", args[512];
    mmx_tmpdir(dir, sizeof dir, "sched");
    snprintf(args, sizeof args, "run --no-db --set model=models/llama-2-7b.json --set workload=text "
             "--set parallel.vision=null --set cluster.nodes=1 --set 'parallel.llm={tp: 2, pp: 4, dp: 1}' "
             "--set train.global_batch=8 --set train.schedule=zb-h1");
    ck_assert_int_eq(mmx_run(dir, NULL, args, out, sizeof out, errtxt, sizeof errtxt), 2);
    ck_assert_msg(strstr(errtxt, "train.schedule") && strstr(errtxt, "zb-h1"), "stderr: %s", errtxt);
    mmx_rmdir(dir);
    /* the planner's space: megatron-core offers 1f1b at pp > 1 and vpp 1,
     * interleaved at vpp 2; fsdp adds gpipe and zb-v */
    static const char *const narrow[] = {"micro_batch=1", "pp=2", "cp=1", "tp=1", "recompute=selective", "zero=1",
                                         "vpp=1,2"};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"model=models/gpt3-1.3b.json", k ? "train.framework=fsdp" : "train.framework=megatron-core",
                              "train.global_batch=16", "train.seq_len=2048", "iterations=1"};
        mm_plan_opts o = {.sets = sets, .n_sets = 5, .gpus = 8, .top_k = 0, .iterations = 1, .jobs = 1,
                          .space = narrow, .n_space = 7};
        mm_plan p;
        ck_assert_msg(mm_plan_run(&o, &p, &err) == 0, "%s", err.msg);
        unsigned seen = 0;
        for (size_t i = 0; i < p.n; i++)
            seen |= 1u << p.c[i].schedule;
        ck_assert_msg(seen == (k ? (G | F | I | V) : (F | I)), "%s: schedules offered %#x", sets[1], seen);
        mm_plan_free(&p);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dp_comm");
    TCase *tc = tcase_create("dp_comm");
    tcase_add_test(tc, overlap_contention);
    tcase_add_test(tc, overlap_slowdown_from_topology);
    tcase_add_test(tc, zero3_gathers_by_framework);
    tcase_add_test(tc, overlap_is_a_profile_default);
    tcase_add_test(tc, zero_stages_refused);
    tcase_add_test(tc, schedules_refused);
    tcase_add_test(tc, overlap_hides_dp_communication);
    tcase_add_test(tc, homogeneous_encoder_in_the_dp_tail);
    tcase_add_test(tc, zero3_prefetch_hides_all_but_the_first_gather);
    tcase_add_test(tc, grad_sync_is_a_profile_default);
    tcase_add_test(tc, every_microbatch_multiplies_dp_traffic);
    tcase_add_test(tc, zero3_without_overlap_exposes_its_collectives);
    tcase_add_test(tc, bad_grad_sync_is_refused);
    tcase_add_test(tc, zero3_deepspeed_modules_and_plan);
    tcase_add_test(tc, zero3_gathered_bytes_closed_form);
    tcase_add_test(tc, zero3_no_prefetch_hides_nothing);
    tcase_add_test(tc, zero3_175b_falls_as_gpus_double);
    tcase_add_test(tc, zero3_list_collectives_host_closed_form);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
