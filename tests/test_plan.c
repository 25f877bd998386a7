/* test_plan.c - Check suite for the layout planner (sim/plan/planner.h)
 * and `mmsim plan`: on three rows of Megatron-LM's weak-scaling table the
 * planner's best layout is at least as fast, in simulation, as the
 * published one; pruning reasons (the validation message naming the key,
 * or "OOM: x GiB > y GiB") agree with what `mmsim run` says for the same
 * overrides; the ranking order and its determinism; the stored tables; the
 * JSON; bad flags exit 2 naming the flag; --gpus resizes the cluster.
 * Plans here are small (K <= 3, one iteration) to stay fast under ASan.
 * Not for: the estimate's accuracy (test_run) or sweeps (test_sweep). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "plan/planner.h"
#include "scenario/sim.h"
#include "exec/run.h"
#include "plan/estimate.h"
#include "store/store.h"

#include "mmsim_exe.h"

static char tmpdir[256];
/* 2 MiB: `plan --all` of the small space lists every candidate (1020 with zb-v at vpp 2) */
static char out[1 << 21], errtxt[1 << 14];

static void setup(void)
{
    mmx_tmpdir(tmpdir, sizeof tmpdir, "plan");
}

static void teardown(void)
{
    mmx_rmdir(tmpdir);
}


/* Runs mmsim with `args`; returns its exit status, fills out and errtxt. */
static int mmsim(const char *args)
{
    return mmx_run(tmpdir, NULL, args, out, sizeof out, errtxt, sizeof errtxt);
}

static size_t count_str(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---- Megatron-LM's table, published layout against the planner ---- */

typedef struct row {
    const char *name;
    int gpus, tp, pp, dp, batch;
} row;

/* tests/data/megatron/table1.csv (TP = min(8, MP), PP = MP / TP) */
static const row rows[] = {
    {"1.7b", 32, 1, 1, 32, 512},
    {"7.5b", 128, 4, 1, 32, 512},
    {"39b", 512, 8, 2, 32, 1536},
};

static int megatron_sets(const row *r, char s[][128], const char **ptr)
{
    int n = 0;
    snprintf(s[n++], 128, "model=models/megatron-gpt-%s.json", r->name);
    snprintf(s[n++], 128, "cluster.topology=topologies/dgx-a100.yaml");
    snprintf(s[n++], 128, "cluster.nodes=%d", r->gpus / 8);
    snprintf(s[n++], 128, "train.global_batch=%d", r->batch);
    snprintf(s[n++], 128, "train.seq_len=2048");
    snprintf(s[n++], 128, "train.recompute=full");
    snprintf(s[n++], 128, "train.framework=megatron-local"); /* 2021's modules, unfused attention */
    snprintf(s[n++], 128, "train.precision=fp16");
    snprintf(s[n++], 128, "train.schedule=1f1b");
    snprintf(s[n++], 128, "train.zero=1");
    snprintf(s[n++], 128, "iterations=1");
    snprintf(s[n++], 128, "network=flow");
    for (int i = 0; i < n; i++)
        ptr[i] = s[i];
    return n;
}

/* The published layout's iteration time, at its fastest micro-batch among
 * 1, 2, 4, 8 that fits (scripts/validate/megatron). */
static double published_time(const row *r)
{
    static mm_scenario sc;
    mm_sim sim = {0};
    char s[16][128];
    const char *ptr[16];
    int n = megatron_sets(r, s, ptr);
    double best = INFINITY;
    for (int mb = 1; mb <= 8; mb *= 2) {
        if ((r->batch / r->dp) % mb)
            continue;
        snprintf(s[n], 128, "parallel.llm={tp: %d, pp: %d, dp: %d}", r->tp, r->pp, r->dp);
        snprintf(s[n + 1], 128, "train.micro_batch=%d", mb);
        ptr[n] = s[n];
        ptr[n + 1] = s[n + 1];
        mm_err err;
        mm_sim_free(&sim); /* and its sim (no-op when none) */
        mm_scenario_free(&sc); /* the previous load of this static (no-op when none) */
        ck_assert_int_eq(mm_scenario_load(&sc, NULL, ptr, n + 2, &err), 0);
        ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s", err.msg);
        mm_metrics m;
        ck_assert_int_eq(mm_sim_run(&sim, &m, NULL, &err), 0);
        if (!m.oom && m.iteration_time_s < best)
            best = m.iteration_time_s;
        mm_metrics_free(&m);
        mm_sim_free(&sim);
    }
    return best;
}

START_TEST(megatron_rows_planner_at_least_published)
{
    const row *r = &rows[_i];
    char s[16][128];
    const char *ptr[16];
    int n = megatron_sets(r, s, ptr);
    double pub = published_time(r);
    ck_assert(isfinite(pub));
    /* narrowed to keep the test quick (the published layout stays inside) */
    static const char *const narrow[] = {"zero=0,1", "cp=1", "micro_batch=1,2,4,8", "vpp=1,2"};
    mm_plan_opts o = {.sets = ptr, .n_sets = n, .gpus = r->gpus, .top_k = 3, .iterations = 1, .jobs = 1,
                      .space = narrow, .n_space = 4};
    mm_plan p;
    mm_err err;
    ck_assert_msg(mm_plan_run(&o, &p, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(p.gpus, r->gpus);
    ck_assert_int_ge((int)p.simulated, 1);
    const mm_plan_cand *best = &p.c[0];
    ck_assert_int_eq(best->status, MM_CAND_SIMULATED);
    ck_assert_int_eq(best->rank, 1);
    /* at least as fast (same batch and GPUs: time is throughput) */
    ck_assert_msg(best->sim_s <= pub * (1 + 1e-9), "%s: planner %s %.4f s > published %.4f s", r->name,
                  best->layout, best->sim_s, pub);
    mm_plan_free(&p);
}
END_TEST

/* ---- pruning, ranking ---- */

static const char *const small_sets[] = {"model=models/llama-2-7b.json", "train.global_batch=32",
                                         "train.seq_len=2048", "iterations=1"};

static void small_plan(mm_plan *p, int top_k)
{
    static const char *const narrow[] = {"zero=0,1", "cp=1", "micro_batch=1,2,4", "vpp=1,2"};
    mm_plan_opts o = {.sets = small_sets, .n_sets = 4, .gpus = 16, .top_k = top_k, .iterations = 1, .jobs = 1,
                      .space = narrow, .n_space = 4};
    mm_err err;
    ck_assert_msg(mm_plan_run(&o, p, &err) == 0, "%s", err.msg);
}

/* The candidate's overrides through `mmsim run`'s path: same verdict. */
static int reload(const mm_plan_cand *c, mm_sim *sim, mm_err *err)
{
    static mm_scenario sc;
    mm_scenario_free(&sc); /* the previous reload's (the sim borrowed it) */
    char json[2048], sets[24][200];
    const char *ptr[32];
    int n = 0;
    for (int i = 0; i < 4; i++)
        ptr[n++] = small_sets[i];
    ptr[n++] = "cluster.nodes=2";
    mm_plan_cand_sets_json(c, json, sizeof json);
    /* ["a", "b", ...] -> a, b (no quotes inside the values) */
    int k = 0;
    for (char *q = strchr(json, '"'); q; q = strchr(q + 1, '"')) {
        char *e = strchr(q + 1, '"');
        ck_assert_ptr_nonnull(e);
        snprintf(sets[k], sizeof sets[k], "%.*s", (int)(e - q - 1), q + 1);
        ptr[n++] = sets[k++];
        q = e;
    }
    mm_sim_free(sim); /* the caller's sim, prepared before or zeroed */
    mm_scenario_free(&sc); /* the previous load of this static (no-op when none) */
    ck_assert_int_eq(mm_scenario_load(&sc, NULL, ptr, n, err), 0);
    return mm_sim_prepare(sim, &sc, err);
}

START_TEST(pruning_reasons)
{
    mm_plan p;
    small_plan(&p, 0);
    ck_assert_int_eq(p.gpus, 16);
    ck_assert_int_gt((int)p.pruned, 0);
    ck_assert_int_gt((int)p.oom, 0);
    ck_assert_int_gt((int)p.estimated, 0);
    ck_assert_int_eq((int)(p.pruned + p.estimated + p.tied), (int)p.n); /* top 0: none simulated or bounded */
    mm_sim sim = {0};
    int checked_key = 0, checked_oom = 0, checked_est = 0;
    for (size_t i = 0; i < p.n; i++) {
        const mm_plan_cand *c = &p.c[i];
        if (c->status == MM_CAND_PRUNED) {
            ck_assert_ptr_nonnull(c->reason);
            ck_assert_int_gt((int)strlen(c->reason), 5);
            ck_assert_int_eq(c->rank, 0);
            double a, b;
            if (sscanf(c->reason, "OOM: %lf GiB > %lf GiB", &a, &b) == 2) {
                ck_assert(a > b);
                ck_assert_double_eq_tol(a, c->mem_gib, 0.05 + 1e-3 * a);
                if (checked_oom++ < 3) { /* mmsim run says OOM too */
                    mm_err err;
                    ck_assert_int_eq(reload(c, &sim, &err), 0);
                    mm_metrics m;
                    ck_assert_int_eq(mm_sim_estimate(&sim, &m, &err), 0);
                    ck_assert(m.oom);
                    mm_metrics_free(&m);
                }
            } else {
                ck_assert_msg(!strncmp(c->reason, "key '", 5), "%s", c->reason);
                if (checked_key++ < 20) { /* the same message from mmsim run's path */
                    mm_err err;
                    ck_assert_int_eq(reload(c, &sim, &err), -MM_EINPUT);
                    ck_assert_msg(strstr(c->reason, err.key) && strstr(c->reason, err.msg), "%s vs %s: %s",
                                  c->reason, err.key, err.msg);
                }
            }
        } else {
            ck_assert(c->status == MM_CAND_ESTIMATED || c->status == MM_CAND_TIED);
            ck_assert(isfinite(c->est_s) && c->est_s > 0);
            if (c->status == MM_CAND_TIED) {
                ck_assert(c->reason && !strncmp(c->reason, "tie: ", 5));
                continue;
            }
            ck_assert_ptr_null(c->reason);
            if (checked_est++ < 5) { /* and the same estimate */
                mm_err err;
                ck_assert_int_eq(reload(c, &sim, &err), 0);
                mm_metrics m;
                ck_assert_int_eq(mm_sim_estimate(&sim, &m, &err), 0);
                ck_assert(!m.oom);
                ck_assert_double_eq_tol(m.iteration_time_s, c->est_s, 1e-12 * c->est_s);
                mm_metrics_free(&m);
            }
        }
    }
    /* the enumeration keeps to what the layout arithmetic allows, so the
     * validation may refuse nothing here; what it refuses is checked above */
    ck_assert_int_gt(checked_key + checked_oom, 0);
    ck_assert_int_gt(checked_oom, 0);
    mm_plan_free(&p);
    mm_sim_free(&sim);
}
END_TEST

START_TEST(ranking_order_and_determinism)
{
    mm_plan p, q;
    small_plan(&p, 3);
    small_plan(&q, 3);
    ck_assert_int_eq((int)p.n, (int)q.n);
    ck_assert_int_eq((int)p.simulated, 3);
    int rank = 0;
    for (size_t i = 0; i < p.n; i++) {
        const mm_plan_cand *c = &p.c[i];
        ck_assert_str_eq(c->layout, q.c[i].layout);
        ck_assert_int_eq(c->index, q.c[i].index);
        if (i < 3) {
            ck_assert_int_eq(c->status, MM_CAND_SIMULATED);
            ck_assert(isfinite(c->sim_s) && c->sim_tflops > 0 && c->sim_mfu > 0 && c->sim_mfu < 1);
            ck_assert(c->sim_s == q.c[i].sim_s);
        } else {
            ck_assert_int_ne(c->status, MM_CAND_SIMULATED);
        }
        if (i > 0) {
            const mm_plan_cand *b = &p.c[i - 1];
            if (b->status == c->status && c->status == MM_CAND_SIMULATED)
                ck_assert(b->sim_s < c->sim_s || (b->sim_s == c->sim_s && strcmp(b->layout, c->layout) <= 0));
            if (b->status == c->status && c->status == MM_CAND_ESTIMATED)
                ck_assert(b->est_s < c->est_s || (b->est_s == c->est_s && strcmp(b->layout, c->layout) <= 0));
            if (b->status == MM_CAND_PRUNED)
                ck_assert_int_eq(c->status, MM_CAND_PRUNED);
        }
        if (c->status != MM_CAND_PRUNED && c->status != MM_CAND_FAILED)
            ck_assert_int_eq(c->rank, ++rank);
        else
            ck_assert_int_eq(c->rank, 0);
    }
    /* the three simulated ones were the three best estimates */
    for (size_t i = 3; i < p.n && p.c[i].status == MM_CAND_ESTIMATED; i++)
        for (int k = 0; k < 3; k++)
            ck_assert(p.c[k].est_s <= p.c[i].est_s);
    mm_plan_free(&p);
    mm_plan_free(&q);
}
END_TEST

START_TEST(multimodal_placements)
{
    /* the default scenario: LLaVA-OV-7B-like, one image of 5 tiles */
    static const char *const narrow[] = {"micro_batch=1,2", "zero=1", "cp=1", "recompute=selective",
                                         "enc_recompute=selective,full", "vpp=1"};
    mm_plan_opts o = {.gpus = 16, .top_k = 1, .iterations = 1, .jobs = 1, .max_pp = 4, .space = narrow, .n_space = 6};
    mm_plan p;
    mm_err err;
    ck_assert_msg(mm_plan_run(&o, &p, &err) == 0, "%s", err.msg);
    ck_assert(p.has_encoder);
    int seen[4] = {0};
    for (size_t i = 0; i < p.n; i++) {
        const mm_plan_cand *c = &p.c[i];
        ck_assert(c->placement >= 0 && c->placement < 4);
        seen[c->placement]++;
        int llm = c->llm.tp * c->llm.pp * c->llm.cp * c->llm.dp;
        if (c->placement == MM_PLACE_PIPELINE || c->placement == MM_PLACE_DISJOINT) {
            ck_assert_int_eq(llm + c->enc_gpus, 16);
            ck_assert_int_eq(c->vision.tp * c->vision.pp * c->vision.dp, c->enc_gpus);
        } else {
            ck_assert_int_eq(llm, 16);
        }
        if (c->placement == MM_PLACE_COLOCATED)
            ck_assert_int_eq(c->vision.tp * c->vision.dp, 16);
    }
    for (int k = 0; k < 4; k++)
        ck_assert_int_gt(seen[k], 0);
    ck_assert_int_eq(p.c[0].status, MM_CAND_SIMULATED);
    mm_plan_free(&p);
    /* only the placements asked for */
    o.placements = 1u << MM_PLACE_HOMOGENEOUS;
    ck_assert_int_eq(mm_plan_run(&o, &p, &err), 0);
    for (size_t i = 0; i < p.n; i++)
        ck_assert_int_eq(p.c[i].placement, MM_PLACE_HOMOGENEOUS);
    mm_plan_free(&p);
}
END_TEST

START_TEST(gpus_resize_the_cluster)
{
    static const char *const narrow[] = {"zero=0,1", "cp=1", "micro_batch=1,2"};
    mm_plan_opts o = {.sets = small_sets, .n_sets = 4, .gpus = 32, .top_k = 0, .jobs = 1, .space = narrow, .n_space = 3};
    mm_plan p;
    mm_err err;
    ck_assert_int_eq(mm_plan_run(&o, &p, &err), 0);
    ck_assert_int_eq(p.gpus, 32);
    ck_assert_int_eq(p.nodes, 4);
    for (size_t i = 0; i < p.n; i++)
        ck_assert_int_eq(p.c[i].llm.tp * p.c[i].llm.pp * p.c[i].llm.cp * p.c[i].llm.dp, 32);
    mm_plan_free(&p);
    /* not whole nodes: an error naming the flag */
    o.gpus = 12;
    ck_assert_int_eq(mm_plan_run(&o, &p, &err), -MM_EINPUT);
    ck_assert_str_eq(err.file, "<cli>");
    ck_assert_str_eq(err.key, "--gpus");
    o.gpus = 0; /* the scenario's cluster (2 nodes) */
    ck_assert_int_eq(mm_plan_run(&o, &p, &err), 0);
    ck_assert_int_eq(p.gpus, 16);
    mm_plan_free(&p);
}
END_TEST

/* ---- the CLI, the JSON and the store ---- */

#define SMALL "--set model=models/llama-2-7b.json --set train.global_batch=32 --set train.seq_len=2048"

START_TEST(cli_bad_flags_exit_2)
{
    static const char *const cases[][2] = {
        {"plan --top x", "--top"},
        {"plan --top -1", "--top"},
        {"plan --gpus 0", "--gpus"},
        {"plan --gpus 12", "--gpus"},
        {"plan --iterations 0", "--iterations"},
        {"plan --jobs", "--jobs"},
        {"plan --placement everywhere", "--placement"},
        {"plan --bogus", "--bogus"},
        {"plan --no-db --set train.nope=1", "train.nope"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(mmsim(cases[i][0]) == 2, "%s: %s", cases[i][0], errtxt);
        ck_assert_msg(strstr(errtxt, cases[i][1]), "%s: %s", cases[i][0], errtxt);
    }
    ck_assert_int_eq(mmsim("help plan"), 0);
    ck_assert_ptr_nonnull(strstr(out, "--top K"));
}
END_TEST

START_TEST(cli_json_structure)
{
    ck_assert_msg(mmsim("plan --no-db --json --top 2 --iterations 1 --gpus 16 " SMALL) == 0, "%s", errtxt);
    static const char *const keys[] = {"\"mmsim_version\":", "\"gpus\": 16,", "\"candidates\":", "\"pruned\":",
                                       "\"oom\":", "\"estimated\":", "\"simulated\": 2,", "\"prescores_per_s\":",
                                       "\"pruned_by\": [", "\"ranked\": [", "\"plan_id\": null", NULL};
    for (int i = 0; keys[i]; i++)
        ck_assert_msg(strstr(out, keys[i]), "missing %s in %s", keys[i], out);
    ck_assert_int_eq((int)count_str(out, "\"status\": \"simulated\""), 2);
    ck_assert_ptr_nonnull(strstr(out, "{\"rank\": 1, "));
    ck_assert_ptr_nonnull(strstr(out, "\"sets\": [\"parallel.llm.tp="));
    ck_assert_ptr_nonnull(strstr(out, "\"margin\": "));
    /* --all: every candidate, pruned ones with a reason */
    ck_assert_int_eq(mmsim("plan --no-db --json --all --top 0 --gpus 16 --space micro_batch=1,2 --space zero=0,1 "
                           "--space cp=1 " SMALL), 0);
    int n = -1, pruned = -1, tied = -1;
    const char *k = strstr(out, "\"candidates\": ");
    ck_assert_ptr_nonnull(k);
    n = atoi(k + 14);
    k = strstr(out, "\"pruned\": ");
    pruned = atoi(k + 10);
    k = strstr(out, "\"tied\": ");
    ck_assert_ptr_nonnull(k);
    tied = atoi(k + 8);
    ck_assert_int_eq((int)count_str(out, "\"candidate\": "), n);
    ck_assert_int_eq((int)count_str(out, "\"status\": \"pruned\""), pruned);
    ck_assert_int_eq((int)count_str(out, "\"status\": \"tied\""), tied);
    ck_assert_int_eq((int)count_str(out, "\"pruned_by\": \"tie\""), tied);
    ck_assert_int_eq((int)count_str(out, "\"reason\": null"), n - pruned - tied); /* top 0: nothing bounded */
    ck_assert_int_eq((int)count_str(out, "\"pruned_by\": \"memory\", \"oom_stage\": "),
                     (int)count_str(out, "\"reason\": \"OOM: "));
}
END_TEST

static long long q_long(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    long long v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

START_TEST(cli_stores_every_candidate)
{
    char args[1024], dbp[512];
    snprintf(dbp, sizeof dbp, "%s/plan.db", tmpdir);
    snprintf(args, sizeof args, "plan --db %s --top 2 --iterations 1 --jobs 2 --gpus 16 " SMALL, dbp);
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
    ck_assert_ptr_nonnull(strstr(out, "stored as plan 1"));
    ck_assert_ptr_nonnull(strstr(out, "margin"));
    ck_assert_msg(mmsim(args) == 0, "%s", errtxt); /* again: the runs are reused */
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(dbp, &db), SQLITE_OK);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM plans"), 2);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM runs"), 2);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM plan_candidates WHERE plan_id = 1"),
                     q_long(db, "SELECT candidates FROM plans WHERE id = 1"));
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM plan_candidates WHERE status = 'pruned' AND plan_id = 1"),
                     q_long(db, "SELECT pruned FROM plans WHERE id = 1"));
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM plan_candidates WHERE status = 'pruned'"
                                " AND (reason IS NULL OR rank IS NOT NULL)"), 0);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM plan_candidates c JOIN runs r ON r.id = c.run_id"
                                " WHERE c.status = 'simulated' AND c.plan_id = 2"), 2);
    /* rank 1 is the faster of the two simulated runs */
    ck_assert_int_eq(q_long(db, "SELECT (SELECT m.value FROM plan_candidates c JOIN metrics m ON m.run_id = c.run_id"
                                " AND m.name = 'iteration_time_s' WHERE c.plan_id = 1 AND c.rank = 1) <="
                                " (SELECT m.value FROM plan_candidates c JOIN metrics m ON m.run_id = c.run_id"
                                " AND m.name = 'iteration_time_s' WHERE c.plan_id = 1 AND c.rank = 2)"), 1);
    ck_assert_int_eq(q_long(db, "SELECT count(*) FROM plan_candidates WHERE plan_id = 1 AND rank IS NOT NULL"
                                " AND estimate_s IS NULL"), 0);
    sqlite3_close(db);
}
END_TEST

/* The ranked table of a plan's output: from the header line to the first
 * blank line after it (host times and the "stored as" line left out). */
static void ranked_table(const char *text, char *buf, size_t len)
{
    const char *a = strstr(text, "  rank  layout");
    ck_assert_ptr_nonnull(a);
    const char *b = strstr(a, "\n\n");
    size_t n = b ? (size_t)(b - a) : strlen(a);
    while (n > 0 && a[n - 1] == '\n')
        n--;
    ck_assert_uint_lt(n, len);
    memcpy(buf, a, n);
    buf[n] = '\0';
}

/* One way to change a layout: the in-process reruns (--no-db) and the
 * stored ones (--db, through the runner and the candidate's canonical text)
 * rank alike, number for number, for scenarios that set per-module sp and
 * zero and the recompute mode.  (Before, the stored reruns went through
 * `--set parallel.llm={...}`, which dropped sp: tp2 dp8 mb4 of the first
 * scenario came out at 1.303 s / 68.9 GiB instead of 1.259 s / 58.8 GiB;
 * and the pre-score carried one candidate's encoder layout into the next.) */
START_TEST(db_and_no_db_rank_alike)
{
    static const char *const scen[] = {
        "--gpus 16 --top 6 --set model=models/llama-2-7b.json --set parallel.llm.sp=true "
        "--set parallel.llm.zero=2 --set train.recompute=full",
        "--gpus 16 --top 4 --set parallel.llm.sp=true --set parallel.vision.sp=true --set parallel.vision.zero=3 "
        "--set train.recompute=full --set train.global_batch=32",
    };
    static char a[1 << 14], b[1 << 14];
    for (size_t i = 0; i < sizeof scen / sizeof scen[0]; i++) {
        char args[1024];
        snprintf(args, sizeof args, "plan --no-db --iterations 1 %s", scen[i]);
        ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
        ranked_table(out, a, sizeof a);
        snprintf(args, sizeof args, "plan --db %s/same%zu.db --jobs 2 --iterations 1 %s", tmpdir, i, scen[i]);
        ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
        ranked_table(out, b, sizeof b);
        ck_assert_str_eq(a, b);
        ck_assert_int_ge((int)count_str(a, "\n"), 4); /* the header and the simulated rows at least */
    }
}
END_TEST

/* The planner's in-process rescoring measures only the headline
 * (mm_sim.headline_only): those numbers must be the full run's bit for
 * bit, under both network models, with the left-out ones empty. */
START_TEST(headline_only_same_numbers)
{
    static const char *const nets[] = {"network=flow", "network=analytic"};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"cluster.nodes=2", "iterations=2", nets[k]};
        mm_scenario sc;
        mm_sim sim;
        mm_err err;
        mm_metrics full, head;
        ck_assert_int_eq(mm_scenario_load(&sc, NULL, sets, 3, &err), 0);
        ck_assert_msg(mm_sim_prepare(&sim, &sc, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(mm_sim_run(&sim, &full, NULL, &err), 0);
        sim.headline_only = true;
        ck_assert_int_eq(mm_sim_run(&sim, &head, NULL, &err), 0);
        const double a[] = {full.iteration_time_s, full.tokens_per_s, full.samples_per_s, full.tflops_per_gpu,
                            full.mfu, full.hfu, full.bubble_fraction, full.peak_memory_gib,
                            full.stages[0].busy_s, full.stages[1].idle_s};
        const double b[] = {head.iteration_time_s, head.tokens_per_s, head.samples_per_s, head.tflops_per_gpu,
                            head.mfu, head.hfu, head.bubble_fraction, head.peak_memory_gib,
                            head.stages[0].busy_s, head.stages[1].idle_s};
        ck_assert(memcmp(a, b, sizeof a) == 0);
        ck_assert(full.crit.n > 0 && head.crit.n == 0);
        ck_assert(isfinite(full.exposed_comm_s) && isnan(head.exposed_comm_s));
        mm_metrics_free(&full);
        mm_metrics_free(&head);
        mm_sim_free(&sim);
        mm_scenario_free(&sc);
    }
}
END_TEST

/* `mmsim run --no-symmetry` simulates every DP replica (exec/symmetry.h):
 * under the analytic network its JSON is the collapsed run's line for
 * line (every metric, per-stage figure and the critical path) but for the
 * events it dispatched (more) and the wall time; under flow the iteration
 * time is within the documented 0.5 %. */
static void json_without(const char *src, char *dst, size_t cap, double *events)
{
    size_t n = 0;
    *events = -1;
    for (const char *p = src; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p + 1) : strlen(p);
        if (strstr(p, "\"events\":") == p + strspn(p, " "))
            *events = atof(strchr(p, ':') + 1);
        else if (!(strstr(p, "\"wall_s\":") == p + strspn(p, " ")) && n + len < cap) {
            memcpy(dst + n, p, len);
            n += len;
        }
        p += len;
    }
    dst[n] = 0;
}

START_TEST(cli_no_symmetry_same_metrics)
{
    static const char *const scen[] = {
        "--set model=models/llama-2-7b.json --set cluster.nodes=4 --set workload=text "
        "--set train.global_batch=128 --set 'parallel.llm={tp: 4, pp: 2, dp: 4}'",
        "--set cluster.nodes=2 --set 'workload={kind: fixed, images: 1, tiles: 5, text_tokens: 300}' "
        "--set 'parallel.llm={tp: 4, pp: 2, dp: 2}' --set 'parallel.vision={tp: 1, pp: 1, dp: 16}'",
    };
    static char a[1 << 16], b[1 << 16];
    for (size_t i = 0; i < sizeof scen / sizeof scen[0]; i++)
        for (int flow = 0; flow < 2; flow++) {
            char args[1024];
            double ea, eb, ta, tb;
            const char *net = flow ? "flow" : "analytic";
            snprintf(args, sizeof args, "run --no-db --json --set iterations=1 --set network=%s %s", net, scen[i]);
            ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
            json_without(out, a, sizeof a, &ea);
            ta = atof(strstr(out, "\"iteration_time_s\":") + 19);
            snprintf(args, sizeof args, "run --no-db --json --no-symmetry --set iterations=1 --set network=%s %s", net,
                     scen[i]);
            ck_assert_msg(mmsim(args) == 0, "%s", errtxt);
            json_without(out, b, sizeof b, &eb);
            tb = atof(strstr(out, "\"iteration_time_s\":") + 19);
            ck_assert(ea > 0 && eb > ea); /* the collapse ran fewer events */
            if (flow)
                ck_assert_double_le(fabs(ta / tb - 1), 0.005);
            else
                ck_assert_str_eq(a, b);
        }
    ck_assert_int_eq(mmsim("run --no-symmetry=1 --no-db"), 2); /* takes no value */
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, megatron_rows_planner_at_least_published, 0, (int)(sizeof rows / sizeof rows[0]));
    tcase_add_test(tc, pruning_reasons);
    tcase_add_test(tc, ranking_order_and_determinism);
    tcase_add_test(tc, multimodal_placements);
    tcase_add_test(tc, gpus_resize_the_cluster);
    tcase_add_test(tc, cli_bad_flags_exit_2);
    tcase_add_test(tc, cli_json_structure);
    tcase_add_test(tc, cli_stores_every_candidate);
    tcase_add_test(tc, db_and_no_db_rank_alike);
    tcase_add_test(tc, headline_only_same_numbers);
    tcase_add_test(tc, cli_no_symmetry_same_metrics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(plan_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
