/* test_net.c - the network model's flows: the max-min flow solver
 * (textbook cases, rates computed by hand), rates recomputed when flows
 * start and end, contention between collectives (shared NICs, an
 * oversubscribed fat tree, all-to-all aggregation) and the executor under
 * `flow` with DP and PP traffic on one NIC.
 * Tolerances are stated at each assertion.
 * Not for: collectives against the published figures, topology files and
 * `mmsim collective` (test_coll.c). */
#include "net_common.h"

/* ---- max-min fairness: textbook cases, rates computed by hand ---------- */

/* The double binary tree's largest degree in closed form equals the walk
 * over both trees' parents, edge by edge, for every N up to 4096. */
START_TEST(dtree_degree_closed_form)
{
    int *deg = calloc(4097, sizeof *deg);
    ck_assert_ptr_nonnull(deg);
    for (int N = 1; N <= 4096; N++) {
        memset(deg, 0, (size_t)(N + 1) * sizeof *deg);
        int best = 0;
        for (int t = 0; t < 2; t++)
            for (int r = 0; r < N; r++) {
                int p = mm_dtree_parent(t, r, N);
                if (p >= 0)
                    deg[r]++, deg[p]++;
            }
        for (int r = 0; r < N; r++)
            best = deg[r] > best ? deg[r] : best;
        ck_assert_msg(mm_dtree_max_degree(N) == best, "N = %d: %d, walk %d", N, mm_dtree_max_degree(N), best);
    }
    free(deg);
}
END_TEST

START_TEST(maxmin_two_links)
{
    /* L0 = 1, L1 = 2; A over L0+L1, B over L0, C over L1.
     * L0 is the bottleneck: A = B = 1/2; then C gets L1's rest, 3/2. */
    double cap[] = {1, 2};
    uint32_t off[] = {0, 2, 3, 4};
    int32_t lk[] = {0, 1, 0, 1};
    double cf[] = {1, 1, 1, 1}, r[3];
    ck_assert_int_eq(mm_maxmin_solve(2, cap, 3, off, lk, cf, r), 0);
    ck_assert(fabs(r[0] - 0.5) < 1e-12 && fabs(r[1] - 0.5) < 1e-12 && fabs(r[2] - 1.5) < 1e-12);
}
END_TEST

START_TEST(maxmin_three_links)
{
    /* Bertsekas-Gallager style line: L0 = 10, L1 = 4, L2 = 6.
     * F0 over L0 L1 L2, F1 over L0, F2 over L1, F3 over L2, F4 over L1 L2.
     * L1 (4 / 3 flows) saturates first: F0 = F2 = F4 = 4/3.
     * L2 is left 6 - 8/3 = 10/3 for F3; L0 is left 10 - 4/3 = 26/3 for F1. */
    double cap[] = {10, 4, 6};
    uint32_t off[] = {0, 3, 4, 5, 6, 8};
    int32_t lk[] = {0, 1, 2, 0, 1, 2, 1, 2};
    double cf[8], r[5];
    for (int i = 0; i < 8; i++)
        cf[i] = 1;
    ck_assert_int_eq(mm_maxmin_solve(3, cap, 5, off, lk, cf, r), 0);
    double want[] = {4.0 / 3, 26.0 / 3, 4.0 / 3, 10.0 / 3, 4.0 / 3};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(fabs(r[i] - want[i]) < 1e-12, "flow %d: %g, want %g", i, r[i], want[i]);
}
END_TEST

START_TEST(maxmin_coefficients)
{
    /* A loads L0 twice per byte (a ring crossing it twice), B once:
     * 2a + b <= 3 with a = b gives 1 each.  Then on L1 = 5, C alone
     * with B: B is frozen at 1, C gets 4. */
    double cap[] = {3, 5};
    uint32_t off[] = {0, 1, 3, 4};
    int32_t lk[] = {0, 0, 1, 1};
    double cf[] = {2, 1, 1, 1}, r[3];
    ck_assert_int_eq(mm_maxmin_solve(2, cap, 3, off, lk, cf, r), 0);
    ck_assert(fabs(r[0] - 1) < 1e-12 && fabs(r[1] - 1) < 1e-12 && fabs(r[2] - 4) < 1e-12);
}
END_TEST

START_TEST(maxmin_many_levels)
{
    /* N links of capacity 1..N, flow i alone on link i, and one long flow
     * over every link: link 0 (cap 1, two flows) freezes first at 1/2,
     * then flow i gets (i + 1) - 1/2: N distinct levels, enough for the
     * solver to leave its scan of the links for its heap. */
    enum { N = 300 };
    double cap[N], cf[2 * N], r[N + 1];
    uint32_t off[N + 2];
    int32_t lk[2 * N];
    for (int i = 0; i < N; i++) {
        cap[i] = i + 1;
        off[i] = (uint32_t)i;
        lk[i] = i;
        lk[N + i] = i;
    }
    off[N] = N, off[N + 1] = 2 * N;
    for (int e = 0; e < 2 * N; e++)
        cf[e] = 1;
    ck_assert_int_eq(mm_maxmin_solve(N, cap, N + 1, off, lk, cf, r), 0);
    ck_assert(fabs(r[N] - 0.5) < 1e-12);
    for (int i = 0; i < N; i++)
        ck_assert_msg(fabs(r[i] - (i + 0.5)) < 1e-9, "flow %d: %g, want %g", i, r[i], i + 0.5);
    /* a link of capacity 0 (a failed link): its flow gets 0, the other the rest */
    double cap2[] = {0, 2}, cf2[] = {1, 1, 1}, r2[2];
    uint32_t off2[] = {0, 2, 3};
    int32_t lk2[] = {0, 1, 1};
    ck_assert_int_eq(mm_maxmin_solve(2, cap2, 2, off2, lk2, cf2, r2), 0);
    ck_assert(r2[0] == 0 && fabs(r2[1] - 2) < 1e-12);
}
END_TEST

START_TEST(maxmin_scan_matches_heap)
{
    /* The solver finds levels by scanning the links when every capacity is
     * positive, with its heap otherwise; a link of capacity 0 that no flow
     * uses changes nothing in the problem but forces the heap: the rates
     * must be the same bits.  Random problems (fixed LCG), 1 to 40 flows
     * over up to 60 links, coefficients 1..4 or fractional. */
    enum { LMAX = 61, FMAX = 40, EMAX = FMAX * 8 };
    uint64_t x = 12345;
    for (int trial = 0; trial < 400; trial++) {
        double cap[LMAX], cf[EMAX], ra[FMAX], rb[FMAX];
        uint32_t off[FMAX + 1];
        int32_t lk[EMAX];
#define RND() (x = x * 6364136223846793005ULL + 1442695040888963407ULL, (uint32_t)(x >> 33))
        int L = 1 + (int)(RND() % 60), F = 1 + (int)(RND() % FMAX);
        for (int l = 0; l < L; l++)
            cap[l] = 1 + (double)(RND() % 1000) / 7.0;
        uint32_t e = 0;
        for (int f = 0; f < F; f++) {
            off[f] = e;
            int len = 1 + (int)(RND() % 8);
            for (int k = 0; k < len; k++, e++) {
                lk[e] = (int32_t)(RND() % (uint32_t)L);
                cf[e] = trial % 2 ? 1 + (double)(RND() % 4) : 0.25 + (double)(RND() % 100) / 37.0;
            }
        }
        off[F] = e;
#undef RND
        ck_assert_int_eq(mm_maxmin_solve(L, cap, F, off, lk, cf, ra), 0);
        cap[L] = 0;
        ck_assert_int_eq(mm_maxmin_solve(L + 1, cap, F, off, lk, cf, rb), 0);
        ck_assert_msg(memcmp(ra, rb, (size_t)F * sizeof *ra) == 0, "trial %d: scan and heap differ", trial);
    }
}
END_TEST

typedef struct done_log {
    int n;
    mm_time at[8];
    uint64_t arg[8];
    mm_engine *eng;
} done_log;

static void log_done(void *ctx, uint64_t arg)
{
    done_log *l = ctx;
    l->at[l->n] = mm_engine_now(l->eng);
    l->arg[l->n++] = arg;
}

/* Rates change when flows start and end: two flows on one 1 GB/s link. */
START_TEST(flownet_recomputes_on_start_and_end)
{
    mm_engine *eng = mm_engine_alloc();
    double cap[] = {1e9, 1e9};
    mm_flownet *fn = mm_flownet_alloc(eng, 2, cap);
    done_log log = {.eng = eng};
    int l0 = 0, l1 = 1;
    int32_t a = mm_flownet_add(fn, &l0, NULL, 1, 1e9, log_done, &log, 1);
    int32_t b = mm_flownet_add(fn, &l0, NULL, 1, 0.5e9, log_done, &log, 2);
    int32_t c = mm_flownet_add(fn, &l1, NULL, 1, 0.25e9, log_done, &log, 3);
    ck_assert_int_eq(mm_flownet_commit(fn), 0);
    ck_assert(fabs(mm_flownet_rate(fn, a) - 0.5e9) < 1e-3);
    ck_assert(fabs(mm_flownet_rate(fn, b) - 0.5e9) < 1e-3);
    ck_assert(fabs(mm_flownet_rate(fn, c) - 1e9) < 1e-3);
    mm_engine_run(eng);
    /* c alone on L1: 0.25 s; b: 1 s at half rate; a: 0.5 GB left at full rate */
    ck_assert_int_eq(log.n, 3);
    ck_assert(log.arg[0] == 3 && log.at[0] == 250000000);
    ck_assert(log.arg[1] == 2 && log.at[1] == 1000000000);
    ck_assert(log.arg[2] == 1 && log.at[2] == 1500000000);
    ck_assert_int_eq(mm_flownet_active(fn), 0);
    mm_flownet_free(fn);
    mm_engine_free(eng);
}
END_TEST

/* A flow alone on a long route (a replicated collective's: hw/coll.h)
 * takes its tightest link's share without the walk; the same flow beside
 * an independent one goes through the solver: the same rate to the bit.
 * 300 links of varied capacity and coefficient, the tightest in the middle. */
START_TEST(flownet_long_lone_route_matches_solver)
{
    enum { N = 300 };
    double cap[N + 1], coef[N];
    int links[N];
    for (int i = 0; i < N; i++) {
        cap[i] = 1e9 * (1.0 + 0.37 * (i % 7)) + (i == N / 2 ? -9e8 : 0);
        coef[i] = 1.0 + 0.125 * (i % 3);
        links[i] = i;
    }
    cap[N] = 1e9;
    double rate[2];
    for (int k = 0; k < 2; k++) {
        mm_engine *eng = mm_engine_alloc();
        mm_flownet *fn = mm_flownet_alloc(eng, N + 1, cap);
        done_log log = {.eng = eng};
        int32_t a = mm_flownet_add(fn, links, coef, N, 1e9, log_done, &log, 1);
        int other = N;
        if (k == 1) /* on a link of its own: another component, through the solver */
            ck_assert_int_ge(mm_flownet_add(fn, &other, NULL, 1, 1e9, log_done, &log, 2), 0);
        ck_assert_int_eq(mm_flownet_commit(fn), 0);
        rate[k] = mm_flownet_rate(fn, a);
        mm_engine_run(eng);
        mm_flownet_free(fn);
        mm_engine_free(eng);
    }
    double want = INFINITY;
    for (int i = 0; i < N; i++)
        want = fmin(want, cap[i] / coef[i]);
    ck_assert(memcmp(&rate[0], &rate[1], sizeof rate[0]) == 0);
    ck_assert(memcmp(&rate[0], &want, sizeof want) == 0);
}
END_TEST

/* ---- contention -------------------------------------------------------- */

typedef struct two_ends {
    mm_time end[2];
    mm_engine *eng;
} two_ends;

static void end_of(mm_engine *eng, void *ctx, uint64_t arg)
{
    ((two_ends *)ctx)->end[arg] = mm_engine_now(eng);
}

/* Two collectives started together; returns their durations. */
static void run_two(const mm_cluster *c, mm_net_model model, const mm_coll_req *r0, const mm_coll_req *r1,
                    double out[2])
{
    mm_engine *eng = mm_engine_alloc();
    mm_err err;
    mm_network *net = mm_network_alloc(c, eng, model, &err);
    two_ends e = {{0, 0}, eng};
    ck_assert_int_eq(mm_network_start(net, r0, end_of, &e, 0, NULL, &err), 0);
    ck_assert_int_eq(mm_network_start(net, r1, end_of, &e, 1, NULL, &err), 0);
    ck_assert_int_eq(mm_network_active(net), model == MM_NET_MODEL_FLOW ? 2 : 0);
    mm_engine_run(eng);
    out[0] = (double)e.end[0] * 1e-9;
    out[1] = (double)e.end[1] * 1e-9;
    mm_network_free(net);
    mm_engine_free(eng);
}

/* Two inter-node all-reduces over the same NICs: about half the bandwidth
 * each under flow (busbw within 10 % of half), the full bandwidth under
 * analytic (no contention). */
START_TEST(shared_nics_halve_bandwidth)
{
    mm_cluster h = load("topologies/dgx-h100.yaml", 2);
    int g16[16];
    for (int i = 0; i < 16; i++)
        g16[i] = i;
    int dp0[2] = {0, 8}, dp1[2] = {8, 0}; /* same NIC on each node */
    const double S = 1 * GiB;
    struct {
        const int *a, *b;
        int n;
    } cases[] = {{g16, g16, 16}, {dp0, dp1, 2}};
    for (size_t i = 0; i < 2; i++) {
        mm_coll_req r0 = {MM_COLL_ALLREDUCE, MM_ALGO_RING, cases[i].a, cases[i].n, S, 1, 0, 0, false};
        mm_coll_req r1 = {MM_COLL_ALLREDUCE, MM_ALGO_RING, cases[i].b, cases[i].n, S, 1, 0, 0, false};
        double alone = coll_time(&h, MM_NET_MODEL_FLOW, MM_COLL_ALLREDUCE, MM_ALGO_RING, cases[i].a, cases[i].n, S, NULL);
        double bus_alone = S / alone * mm_coll_bus_factor(MM_COLL_ALLREDUCE, cases[i].n);
        double t[2];
        run_two(&h, MM_NET_MODEL_FLOW, &r0, &r1, t);
        for (int k = 0; k < 2; k++) {
            double bus = S / t[k] * mm_coll_bus_factor(MM_COLL_ALLREDUCE, cases[i].n);
            ck_assert_msg(fabs(bus / (bus_alone / 2) - 1) < 0.10, "case %zu flow: %g of %g", i, bus, bus_alone);
        }
        run_two(&h, MM_NET_MODEL_ANALYTIC, &r0, &r1, t);
        double ta = coll_time(&h, MM_NET_MODEL_ANALYTIC, MM_COLL_ALLREDUCE, MM_ALGO_RING, cases[i].a, cases[i].n, S, NULL);
        ck_assert(fabs(t[0] - ta) < 2e-9 && fabs(t[1] - ta) < 2e-9);
    }
    /* disjoint rails do not interfere: {0, 8} and {1, 9} */
    int d1[2] = {1, 9};
    mm_coll_req r0 = {MM_COLL_ALLREDUCE, MM_ALGO_RING, dp0, 2, S, 1, 0, 0, false}, r1 = {MM_COLL_ALLREDUCE, MM_ALGO_RING, d1, 2, S, 1, 0, 0, false};
    double t[2], alone = coll_time(&h, MM_NET_MODEL_FLOW, MM_COLL_ALLREDUCE, MM_ALGO_RING, dp0, 2, S, NULL);
    run_two(&h, MM_NET_MODEL_FLOW, &r0, &r1, t);
    ck_assert(fabs(t[0] / alone - 1) < 1e-6 && fabs(t[1] / alone - 1) < 1e-6);
}
END_TEST

/* A flow that ends early gives its share back: a short collective next to
 * a long one; the long one ends earlier than at half rate throughout. */
START_TEST(rates_recomputed_when_flows_end)
{
    /* DGX A100: NCCL's 2 network channels x 14 GB/s exceed the wire's
     * 192 / 200 x 25 GB/s, so a send is wire-bound (tests/test_p2p.c) */
    mm_cluster h = load("topologies/dgx-a100.yaml", 2);
    int dp[2] = {0, 8};
    const double S = 1e9;
    mm_coll_req big = {MM_COLL_SENDRECV, MM_ALGO_AUTO, dp, 2, S, 1, 0, 0, false};
    mm_coll_req small = {MM_COLL_SENDRECV, MM_ALGO_AUTO, dp, 2, S / 4, 1, 0, 0, false};
    double t[2];
    run_two(&h, MM_NET_MODEL_FLOW, &big, &small, t);
    double bw = 25e9 * 192.0 / 200.0, lat = 3e-6;
    /* both at bw/2 until the small one's S/4 is through; the big one has
     * then moved S/4 and sends its last 3S/4 alone at bw */
    ck_assert(fabs(t[1] - (lat + (S / 4) / (bw / 2))) < 1e-8);
    ck_assert(fabs(t[0] - (lat + (S / 4) / (bw / 2) + (3 * S / 4) / bw)) < 1e-8);
}
END_TEST

START_TEST(deterministic)
{
    mm_cluster h = load("topologies/dgx-h100.yaml", 4);
    int g32[32];
    for (int i = 0; i < 32; i++)
        g32[i] = i;
    int dp[4] = {0, 8, 16, 24};
    mm_coll_req r0 = {MM_COLL_ALLREDUCE, MM_ALGO_TREE, g32, 32, 3e8, 2, 0, 0, false};
    mm_coll_req r1 = {MM_COLL_ALLGATHER, MM_ALGO_RING, dp, 4, 1e9, 1, 0, 0, false};
    double a[2], b[2];
    run_two(&h, MM_NET_MODEL_FLOW, &r0, &r1, a);
    run_two(&h, MM_NET_MODEL_FLOW, &r0, &r1, b);
    ck_assert(a[0] == b[0] && a[1] == b[1]);
    ck_assert(a[0] > 0 && a[1] > 0);
}
END_TEST

/* Aggregate flows (coll.c, can_aggregate) against one flow per pair: an
 * all-to-all alone, and next to an all-reduce over the same GPUs, on
 * symmetric groups (whole nodes, the same half of every node, a 2:1 fat
 * tree on 4 leaves, PCIe servers).  Tolerance 1e-9 relative: the two
 * differ only in the order of floating-point sums.  The aggregate starts
 * two flows where the pairs start hundreds. */
static void run_agg(const mm_cluster *c, int aggregate, const mm_coll_req *r0, const mm_coll_req *r1, double out[2],
                    uint32_t *flows)
{
    mm_engine *eng = mm_engine_alloc();
    mm_err err;
    mm_network *net = mm_network_alloc(c, eng, MM_NET_MODEL_FLOW, &err);
    mm_network_set_aggregate(net, aggregate);
    two_ends e = {{0, 0}, eng};
    ck_assert_int_eq(mm_network_start(net, r0, end_of, &e, 0, NULL, &err), 0);
    if (r1)
        ck_assert_int_eq(mm_network_start(net, r1, end_of, &e, 1, NULL, &err), 0);
    /* the flows in flight once the latency terms are paid (microseconds) */
    mm_flownet *fn = mm_network_flows(net);
    for (mm_time t = 1000; mm_flownet_active(fn) == 0 && t < 1000000; t += 1000)
        mm_engine_run_until(eng, t);
    *flows = mm_flownet_active(fn);
    mm_engine_run(eng);
    out[0] = (double)e.end[0] * 1e-9;
    out[1] = (double)e.end[1] * 1e-9;
    mm_network_free(net);
    mm_engine_free(eng);
}

START_TEST(alltoall_aggregate_matches_pairs)
{
    mm_cluster h = load("topologies/dgx-h100.yaml", 4);
    mm_cluster ft = load("topologies/dgx-h100-fattree-2to1.yaml", 16);
    mm_cluster pc = load("topologies/pcie-8gpu.yaml", 2);
    int all[128], half[16];
    for (int i = 0; i < 128; i++)
        all[i] = i;
    for (int i = 0; i < 16; i++)
        half[i] = (i / 4) * 8 + 4 + i % 4; /* local GPUs 4..7 of each of the 4 nodes */
    struct {
        const mm_cluster *c;
        const int *g;
        int n;
    } cases[] = {{&h, all, 32}, {&h, half, 16}, {&ft, all, 128}, {&pc, all, 16}, {&h, all, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int with_ar = 0; with_ar < 2; with_ar++) {
            mm_coll_req a2a = {MM_COLL_ALLTOALL, MM_ALGO_AUTO, cases[i].g, cases[i].n, 1 * GiB, 1, 0, 0, false};
            mm_coll_req ar = {MM_COLL_ALLREDUCE, MM_ALGO_RING, cases[i].g, cases[i].n, 0.25 * GiB, 1, 0, 0, false};
            double p[2], q[2];
            uint32_t fp, fq;
            run_agg(cases[i].c, 0, &a2a, with_ar ? &ar : NULL, p, &fp);
            run_agg(cases[i].c, 1, &a2a, with_ar ? &ar : NULL, q, &fq);
            for (int k = 0; k <= with_ar; k++)
                ck_assert_msg(fabs(q[k] / p[k] - 1) < 1e-9, "case %zu ar %d coll %d: aggregate %.12g pairs %.12g", i,
                              with_ar, k, q[k], p[k]);
            if (!with_ar && cases[i].n > 8)
                ck_assert_msg(fq <= 2 && fp > 2 * fq, "case %zu: %u aggregate flows, %u pairs", i, fq, fp);
        }
}
END_TEST

/* 2:1 oversubscribed fat-tree, 16 nodes on 4 leaves: 12/15 of an
 * all-to-all leaves its leaf through half the bandwidth, so it takes 1.6x
 * as long as on a non-blocking fabric (> 1.4x, both models); a ring
 * all-reduce, whose few flows fit in the uplinks, does not slow (5 %). */
START_TEST(oversubscribed_fat_tree)
{
    mm_cluster ft = load("topologies/dgx-h100-fattree-2to1.yaml", 16);
    mm_cluster nb = load("topologies/dgx-h100.yaml", 16);
    ck_assert_int_eq(ft.fabric, MM_FABRIC_FAT_TREE);
    ck_assert_int_eq(ft.spines, 16);
    for (int model = 0; model < 2; model++) {
        double a = coll_time(&ft, (mm_net_model)model, MM_COLL_ALLTOALL, MM_ALGO_AUTO, NULL, 128, 4 * GiB, NULL);
        double b = coll_time(&nb, (mm_net_model)model, MM_COLL_ALLTOALL, MM_ALGO_AUTO, NULL, 128, 4 * GiB, NULL);
        ck_assert_msg(a / b > 1.4, "%s: all-to-all %g vs %g", mm_net_model_names[model], a, b);
        double r = coll_time(&ft, (mm_net_model)model, MM_COLL_ALLREDUCE, MM_ALGO_RING, NULL, 128, 4 * GiB, NULL);
        double s = coll_time(&nb, (mm_net_model)model, MM_COLL_ALLREDUCE, MM_ALGO_RING, NULL, 128, 4 * GiB, NULL);
        ck_assert_msg(fabs(r / s - 1) < 0.05, "%s: ring %g vs %g", mm_net_model_names[model], r, s);
    }
}
END_TEST

/* ---- the executor: DP all-reduce and PP sends on the same NIC ---------- */

/* Rank 0 runs a DP all-reduce over GPUs {0, 8} on its DP stream while a
 * pipeline send goes from GPU 0 to GPU 8 (both through NIC 0 of node 0 and
 * NIC 0 of node 1).  Returns the two ops' durations. */
static void dp_and_pp(const mm_cluster *c, mm_exec_net net, int with_pp, int with_dp, double out[2])
{
    mm_graph g;
    ck_assert_int_eq(mm_graph_init(&g, 2), 0);
    int dpg[2] = {0, 8}, pair[2] = {0, 8};
    int64_t dpc = mm_graph_add_coll(&g, MM_COLL_ALLREDUCE, 1, 1, 2e9, dpg, 2);
    int64_t ppc = mm_graph_add_coll(&g, MM_COLL_SENDRECV, 1, 1, 1e9, pair, 2);
    mm_op dp = {.rank = 0, .stream = MM_STREAM_DP, .cat = MM_CAT_DP, .layer = -1, .stage = 0, .mb = -1,
                .coll = (int32_t)dpc, .peer = -1};
    mm_op pp = {.rank = 0, .stream = MM_STREAM_NONE, .cat = MM_CAT_PP, .layer = -1, .stage = 0, .mb = 0,
                .coll = (int32_t)ppc, .peer = 1};
    int64_t idp = with_dp ? mm_graph_add_op(&g, &dp) : -1, ipp = with_pp ? mm_graph_add_op(&g, &pp) : -1;
    ck_assert_int_eq(mm_graph_finish(&g), 0);
    mm_engine *eng = mm_engine_alloc();
    mm_time *start = malloc((g.n_ops + 1) * sizeof *start), *end = malloc((g.n_ops + 1) * sizeof *end), t1;
    mm_err err;
    ck_assert_int_eq(mm_exec_run(eng, &g, c, net, start, end, &t1, &err), 0);
    out[0] = idp >= 0 ? (double)(end[idp] - start[idp]) * 1e-9 : 0;
    out[1] = ipp >= 0 ? (double)(end[ipp] - start[ipp]) * 1e-9 : 0;
    free(start);
    free(end);
    mm_engine_free(eng);
    mm_graph_free(&g);
}

START_TEST(exec_dp_and_pp_share_a_nic)
{
    /* DGX A100, where a send across nodes is wire-bound (NCCL's 2 network
     * channels x 14 GB/s above the NIC's rate; a channel-bound send, as on
     * DGX H100 under NCCL 2.20, keeps its excess as latency) */
    mm_cluster h = load("topologies/dgx-a100.yaml", 2);
    double both[2], dp_alone[2], pp_alone[2];
    dp_and_pp(&h, MM_EXEC_NET_FLOW, 1, 1, both);
    dp_and_pp(&h, MM_EXEC_NET_FLOW, 0, 1, dp_alone);
    dp_and_pp(&h, MM_EXEC_NET_FLOW, 1, 0, pp_alone);
    /* the PP send (1 GB) shares NIC 0 with the DP ring (2 GB, one pass
     * each way): each at half rate while both run -> the send takes about
     * twice as long, and the all-reduce is delayed by the send's bytes */
    ck_assert_msg(both[1] > 1.8 * pp_alone[1], "pp %g vs alone %g", both[1], pp_alone[1]);
    ck_assert_msg(both[0] > 1.4 * dp_alone[0], "dp %g vs alone %g", both[0], dp_alone[0]);
    /* analytic: no contention, each takes its time alone */
    double a_both[2], a_dp[2], a_pp[2];
    dp_and_pp(&h, MM_EXEC_NET_ANALYTIC, 1, 1, a_both);
    dp_and_pp(&h, MM_EXEC_NET_ANALYTIC, 0, 1, a_dp);
    dp_and_pp(&h, MM_EXEC_NET_ANALYTIC, 1, 0, a_pp);
    ck_assert(a_both[0] == a_dp[0] && a_both[1] == a_pp[1]);
    /* alone, flow and analytic agree (1e-6) */
    ck_assert(fabs(dp_alone[0] / a_dp[0] - 1) < 1e-6 && fabs(pp_alone[1] / a_pp[1] - 1) < 1e-6);
}
END_TEST

/* ---- the max-min problem reduced by identical replicas ----------------- */

typedef struct sym_req {
    mm_coll_req r;
    int replicas, stride;
} sym_req;

static void end_k(mm_engine *eng, void *ctx, uint64_t arg)
{
    ((mm_time *)ctx)[arg] = mm_engine_now(eng);
}

/* The job the reduction is set up for: replicas copies stride GPUs apart
 * of replica 0's n GPUs g0; proofs: mm_network_set_sym_proofs. */
typedef struct sym_job {
    int replicas, stride, n, proofs;
    const int *g0;
} sym_job;

/* Starts the requests together (replicated where asked) on network
 * `net`, reduced for job j when `sym`; their ends into end[]; returns
 * the reductions in force. */
static int run_sym_job(const mm_cluster *c, int sym, const sym_job *j, const sym_req *q, int n, mm_time *end)
{
    mm_engine *eng = mm_engine_alloc();
    mm_err err;
    mm_network *net = mm_network_alloc(c, eng, MM_NET_MODEL_FLOW, &err);
    int mode = 0;
    mm_network_set_sym_proofs(net, j->proofs);
    if (sym && mm_network_symmetric(net, j->replicas, j->stride, j->g0, j->n)) {
        for (int i = 0; i < n; i++)
            mm_network_symmetric_probe(net, &q[i].r, q[i].replicas, q[i].stride);
        mode = mm_network_symmetric_done(net);
    }
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(mm_network_start_replicated(net, &q[i].r, q[i].replicas, q[i].stride, end_k, end,
                                                     (uint64_t)i, NULL, &err), 0);
    mm_engine_run(eng);
    mm_network_free(net);
    mm_engine_free(eng);
    return mode;
}

/* 16 replicas one node apart (replica 0 on GPUs 0-7), proofs on. */
static int run_sym_reqs(const mm_cluster *c, int sym, const sym_req *q, int n, mm_time *end)
{
    static const int g0[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    sym_job j = {16, 8, 8, 1, g0};
    return run_sym_job(c, sym, &j, q, n, end);
}

/* On a 2:1 fat tree of 16 nodes over 4 leaves (128 H100s), 16 replicas
 * one node apart: a TP ring replicated in every replica, a DP ring over
 * GPU 0 of every node and an all-to-all over all GPUs load node X's links
 * as node X + 1's and leaf l's uplinks as leaf l + 1's, so the routes keep
 * node 0's links and leaf 0's (MM_SYM_NODES | MM_SYM_FABRIC) and every
 * collective ends when it does on the whole problem, to 1e-12 (the sums
 * of a link's coefficients are the same terms).  The precondition is
 * checked per request: a double binary tree over the same GPUs (its inner
 * nodes carry more than its leaves, its edges cross the leaves unevenly)
 * breaks both symmetries and the routes stay whole; a transfer between
 * nodes 0 and 1 (inside leaf 0) breaks the node symmetry only, and only
 * the fabric is reduced; the ends are the whole problem's either way.
 * Replicas whose GPUs do not lead their blocks (replica 0 on GPUs 8-15),
 * a stride that splits nodes unevenly and the analytic model are
 * refused. */
START_TEST(symmetric_reduction_exact_and_guarded)
{
    mm_cluster ft = load("topologies/dgx-h100-fattree-2to1.yaml", 16);
    int node0[8], gpu0s[16], all[128], pair[2] = {0, 8};
    for (int i = 0; i < 8; i++)
        node0[i] = i;
    for (int i = 0; i < 16; i++)
        gpu0s[i] = 8 * i;
    for (int i = 0; i < 128; i++)
        all[i] = i;
    sym_req tp = {{MM_COLL_ALLREDUCE, MM_ALGO_RING, node0, 8, 0.5 * GiB, 1, 0, 0, false}, 16, 8};
    sym_req dp = {{MM_COLL_ALLREDUCE, MM_ALGO_RING, gpu0s, 16, 0.25 * GiB, 1, 0, 0, false}, 1, 0};
    sym_req a2a = {{MM_COLL_ALLTOALL, MM_ALGO_AUTO, all, 128, 1 * GiB, 1, 0, 0, false}, 1, 0};
    sym_req tree = {{MM_COLL_ALLREDUCE, MM_ALGO_TREE, gpu0s, 16, 0.25 * GiB, 1, 0, 0, false}, 1, 0};
    sym_req p2p = {{MM_COLL_SENDRECV, MM_ALGO_AUTO, pair, 2, 0.1 * GiB, 1, 0, 0, false}, 1, 0};
    struct {
        sym_req q[4];
        int n, mode;
    } cases[] = {
        {{tp, dp, a2a}, 3, MM_SYM_NODES | MM_SYM_FABRIC},
        {{tp, dp}, 2, MM_SYM_NODES | MM_SYM_FABRIC},
        {{tp, dp, tree}, 3, 0},
        {{tp, a2a, p2p}, 3, MM_SYM_FABRIC},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_time full[4], red[4];
        ck_assert_int_eq(run_sym_reqs(&ft, 0, cases[i].q, cases[i].n, full), 0);
        int mode = run_sym_reqs(&ft, 1, cases[i].q, cases[i].n, red);
        ck_assert_msg(mode == cases[i].mode, "case %zu: reductions %d, expected %d", i, mode, cases[i].mode);
        for (int k = 0; k < cases[i].n; k++)
            ck_assert_msg(llabs((long long)(red[k] - full[k])) <= 1 + (long long)(1e-12 * (double)full[k]),
                          "case %zu coll %d: reduced %lld ns, whole %lld ns", i, k, (long long)red[k],
                          (long long)full[k]);
    }
    /* refused: replica 0 not first in its block, a stride that splits nodes unevenly */
    mm_engine *eng = mm_engine_alloc();
    mm_err err;
    mm_network *net = mm_network_alloc(&ft, eng, MM_NET_MODEL_FLOW, &err);
    int g1[8] = {8, 9, 10, 11, 12, 13, 14, 15};
    ck_assert_int_eq(mm_network_symmetric(net, 16, 8, g1, 8), 0);
    ck_assert_int_eq(mm_network_symmetric(net, 8, 12, node0, 8), 0);
    ck_assert_int_eq(mm_network_symmetric(net, 16, 8, node0, 8), MM_SYM_NODES | MM_SYM_FABRIC);
    ck_assert_int_eq(mm_network_symmetric_done(net), MM_SYM_NODES | MM_SYM_FABRIC);
    mm_network_free(net);
    net = mm_network_alloc(&ft, eng, MM_NET_MODEL_ANALYTIC, &err);
    ck_assert_int_eq(mm_network_symmetric(net, 16, 8, node0, 8), 0); /* analytic: nothing to reduce */
    mm_network_free(net);
    mm_engine_free(eng);
}
END_TEST

/* The structural proofs (coll_sym.c) stand for the probe's check: with
 * them on, the reductions in force and every collective's end (to the
 * nanosecond: the reduced routes are the same entries) are those of the
 * probe laying out and checking every request.  On the 2:1 fat tree of
 * 16 nodes over 4 leaves: the cases of symmetric_reduction_exact_and_guarded
 * (16 replicas one node apart: one block), and 8 replicas one node apart
 * of a replica 0 on nodes 0 and 8 (two blocks of two leaves, as a
 * pipeline's two stages): a DP ring over GPU 0 of every node (its node
 * links proven, its fabric links, between the blocks, checked), a ring
 * over one block, an all-to-all over both blocks, a TP ring and a send
 * between the blocks copied as the replicas (proven), a tree, a
 * broadcast and a ring over nodes 0
 * and 1 only (not mapped onto itself: checked, the node reduction
 * dropped). */
START_TEST(symmetric_proofs_match_the_check)
{
    mm_cluster ft = load("topologies/dgx-h100-fattree-2to1.yaml", 16);
    int node0[8], gpu0s[16], all[128], half[8], two[16];
    for (int i = 0; i < 8; i++)
        node0[i] = i, half[i] = 8 * i, two[i] = i, two[8 + i] = 64 + i;
    for (int i = 0; i < 16; i++)
        gpu0s[i] = 8 * i;
    for (int i = 0; i < 128; i++)
        all[i] = i;
    sym_req tp16 = {{MM_COLL_ALLREDUCE, MM_ALGO_RING, node0, 8, 0.5 * GiB, 1, 0, 0, false}, 16, 8};
    sym_req tp8 = {{MM_COLL_ALLREDUCE, MM_ALGO_RING, node0, 8, 0.5 * GiB, 1, 0, 0, false}, 8, 8};
    sym_req dp = {{MM_COLL_ALLREDUCE, MM_ALGO_RING, gpu0s, 16, 0.25 * GiB, 1, 0, 0, false}, 1, 0};
    sym_req dph = {{MM_COLL_ALLREDUCE, MM_ALGO_RING, half, 8, 0.25 * GiB, 1, 0, 0, false}, 1, 0};
    sym_req a2a = {{MM_COLL_ALLTOALL, MM_ALGO_AUTO, all, 128, 1 * GiB, 1, 0, 0, false}, 1, 0};
    sym_req tree = {{MM_COLL_ALLREDUCE, MM_ALGO_TREE, gpu0s, 16, 0.25 * GiB, 1, 0, 0, false}, 1, 0};
    sym_req bc = {{MM_COLL_BROADCAST, MM_ALGO_RING, gpu0s, 16, 0.25 * GiB, 1, 0, 0, false}, 1, 0};
    int pair[2] = {0, 8};
    sym_req p2p = {{MM_COLL_SENDRECV, MM_ALGO_AUTO, pair, 2, 0.1 * GiB, 1, 0, 0, false}, 1, 0};
    sym_req ring2 = {{MM_COLL_ALLREDUCE, MM_ALGO_RING, pair, 2, 0.1 * GiB, 1, 0, 0, false}, 1, 0};
    int stages[2] = {3, 64 + 3}; /* a send between the blocks (pipeline stages), copied */
    sym_req pp8 = {{MM_COLL_SENDRECV, MM_ALGO_AUTO, stages, 2, 0.1 * GiB, 1, 0, 0, false}, 8, 8};
    struct {
        sym_req q[4];
        int n, two_blocks;
    } cases[] = {
        {{tp16, dp, a2a}, 3, 0}, {{tp16, dp}, 2, 0}, {{tp16, dp, tree}, 3, 0}, {{tp16, a2a, p2p}, 3, 0},
        {{tp16, bc}, 2, 0},      {{tp8, dp}, 2, 1},  {{tp8, dph, a2a}, 3, 1}, {{a2a}, 1, 1},
        {{tp8, dp, bc}, 3, 1},   {{tp16, ring2}, 2, 0},   {{tp8, pp8, dp}, 3, 1}, {{pp8}, 1, 1},
    };
    int seen_both = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sym_job on = {16, 8, 8, 1, node0}, off = on;
        if (cases[i].two_blocks)
            on = (sym_job){8, 8, 16, 1, two}, off = on;
        off.proofs = 0;
        mm_time a[4], b[4];
        int ma = run_sym_job(&ft, 1, &on, cases[i].q, cases[i].n, a);
        int mb = run_sym_job(&ft, 1, &off, cases[i].q, cases[i].n, b);
        ck_assert_msg(ma == mb, "case %zu: reductions %d proven, %d checked", i, ma, mb);
        seen_both |= ma == (MM_SYM_NODES | MM_SYM_FABRIC) && cases[i].two_blocks;
        for (int k = 0; k < cases[i].n; k++)
            ck_assert_msg(a[k] == b[k], "case %zu coll %d: proven %lld ns, checked %lld ns", i, k, (long long)a[k],
                          (long long)b[k]);
    }
    ck_assert_msg(seen_both, "no two-block case kept both reductions");
}
END_TEST

static Suite *net_suite(void)
{
    Suite *s = suite_create("net");
    TCase *tc = tcase_create("maxmin");
    tcase_add_checked_fixture(tc, NULL, mm_test_free_clusters);
    tcase_add_test(tc, dtree_degree_closed_form);
    tcase_add_test(tc, maxmin_two_links);
    tcase_add_test(tc, maxmin_three_links);
    tcase_add_test(tc, maxmin_coefficients);
    tcase_add_test(tc, maxmin_many_levels);
    tcase_add_test(tc, maxmin_scan_matches_heap);
    tcase_add_test(tc, flownet_recomputes_on_start_and_end);
    tcase_add_test(tc, flownet_long_lone_route_matches_solver);
    suite_add_tcase(s, tc);
    tc = tcase_create("contention");
    tcase_add_checked_fixture(tc, NULL, mm_test_free_clusters);
    tcase_add_test(tc, shared_nics_halve_bandwidth);
    tcase_add_test(tc, rates_recomputed_when_flows_end);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, oversubscribed_fat_tree);
    tcase_add_test(tc, alltoall_aggregate_matches_pairs);
    tcase_add_test(tc, exec_dp_and_pp_share_a_nic);
    tcase_add_test(tc, symmetric_reduction_exact_and_guarded);
    tcase_add_test(tc, symmetric_proofs_match_the_check);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(net_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
