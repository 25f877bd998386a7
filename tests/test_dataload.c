/* test_dataload.c - the data loader as a resource (exec/dataload.h,
 * cost/loader.h): the queue of loader workers against the step in closed
 * form (loader-bound: m L / W - T per step once the prefetched batches are
 * spent; keeping ahead: nothing; the prefetch queue absorbing a slow step
 * between fast ones; workers 0 loading serially; NVDEC's own queue; the
 * training process's receive capping the loader), the workers that keep
 * up on average, the per-sample costs against the published rates of
 * tests/data/dataload/published.csv, a published ImageNet DataLoader
 * throughput (imread-benchmark.csv), whole runs adding
 * exactly the wait they report, and bad keys (the scenario's, a
 * topology's, a profile's, a rates file's) refused by file, line and key
 * (exit status 2 from the CLI). */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost/breakdown.h"
#include "cost/loader.h"
#include "exec/dataload.h"
#include "exec/run.h"
#include "hw/cluster.h"
#include "model/framework.h"
#include "model/loadrates.h"
#include "plan/estimate.h"
#include "scenario/sim.h"
#include "mmsim_exe.h"

/* ---- the queue, by formula ------------------------------------------ */

/* n steps of T seconds, one rank, m micro-batches each costing cpu[i] / m
 * (and dev[i] / m on the decoder); waits into w. */
static void queue(int W, int P, int n, int m, const double *cpu, const double *dev, double T, double *w)
{
    int ms[64];
    double steps[64], zero[64] = {0};
    ck_assert(n <= 64);
    for (int i = 0; i < n; i++)
        ms[i] = m, steps[i] = T;
    mm_loader_queue q = {.workers = W, .prefetch = P, .iters = n, .ranks = 1, .m = ms, .cpu_s = cpu,
                         .dev_s = dev ? dev : zero, .step_s = steps, .slowdown = 1.0};
    ck_assert_int_eq(mm_loader_waits(&q, w), 0);
}

/* Loader-bound: one worker, prefetch 1, one micro-batch of L = 3 s per 1-s
 * step: the first step runs on the batch loaded during setup, then every
 * step waits L / W - T = 2 s.  Two workers, prefetch 2, two micro-batches
 * of 3 s per step (6 CPU s per 1-s step): once the four prefetched batches
 * are spent every step waits m L / W - T = 2 s.  1e-9 s. */
START_TEST(loader_bound_closed_form)
{
    double cpu[12], w[12];
    for (int i = 0; i < 12; i++)
        cpu[i] = 3.0;
    queue(1, 1, 6, 1, cpu, NULL, 1.0, w);
    ck_assert(w[0] == 0);
    for (int i = 1; i < 6; i++)
        ck_assert_msg(fabs(w[i] - 2.0) < 1e-9, "step %d waits %.12f s", i, w[i]);
    for (int i = 0; i < 12; i++)
        cpu[i] = 6.0;
    queue(2, 2, 12, 2, cpu, NULL, 1.0, w);
    ck_assert(w[0] == 0);
    for (int i = 6; i < 12; i++)
        ck_assert_msg(fabs(w[i] - 2.0) < 1e-9, "step %d waits %.12f s", i, w[i]);
}
END_TEST

/* Keeping ahead: four workers, two micro-batches of 1 s per 1-s step
 * (L / W = 0.25 s against 0.5 s between micro-batches): no step waits.
 * Prefetch absorbing variation: one worker, steps alternately needing 0.5
 * and 1.5 s of loading against 1-s steps (the same mean): with prefetch 2
 * no step ever waits; with prefetch 1 the slow loads are exposed (each
 * 1.5-s load that could start only when its predecessor was consumed waits
 * 0.5 s). */
START_TEST(keeps_ahead_and_prefetch_absorbs)
{
    double cpu[16], w[16];
    for (int i = 0; i < 16; i++)
        cpu[i] = 2.0;
    queue(4, 2, 16, 2, cpu, NULL, 1.0, w);
    for (int i = 0; i < 16; i++)
        ck_assert_msg(w[i] == 0, "step %d waits %g s", i, w[i]);
    for (int i = 0; i < 16; i++)
        cpu[i] = i % 2 ? 1.5 : 0.5;
    queue(1, 2, 16, 1, cpu, NULL, 1.0, w);
    for (int i = 0; i < 16; i++)
        ck_assert_msg(w[i] == 0, "prefetch 2: step %d waits %g s", i, w[i]);
    queue(1, 1, 16, 1, cpu, NULL, 1.0, w);
    double sum = 0;
    for (int i = 0; i < 16; i++)
        sum += w[i];
    ck_assert_msg(sum > 0.5, "prefetch 1 hides everything (%g s)", sum);
    ck_assert_msg(fabs(w[15] - 0.5) < 1e-9, "prefetch 1: the last slow load waits %.12f s", w[15]);
}
END_TEST

/* Workers 0 (PyTorch num_workers 0): the training process loads every
 * micro-batch itself, all of it exposed: the slowest rank's CPU plus NVDEC
 * seconds per step, whatever the prefetch.  NVDEC: with workers to spare,
 * (two, prefetch 1) 2 s of decoding per 1-s step waits 1 s per step once the prefetched
 * batches are spent (the decoder is one queue per GPU). */
START_TEST(serial_and_nvdec)
{
    int ms[2] = {4, 4};
    double cpu[4] = {1.0, 2.5, 0.5, 0.25}, dev[4] = {0.5, 0, 0, 0}, steps[2] = {1, 1}, w[2];
    mm_loader_queue q = {.workers = 0, .prefetch = 2, .iters = 2, .ranks = 2, .m = ms, .cpu_s = cpu,
                         .dev_s = dev, .step_s = steps, .slowdown = 1.0};
    ck_assert_int_eq(mm_loader_waits(&q, w), 0);
    ck_assert(w[0] == 2.5 && w[1] == 0.5);
    double c[10], d[10], ww[10];
    for (int i = 0; i < 10; i++)
        c[i] = 0.01, d[i] = 2.0;
    queue(2, 1, 10, 1, c, d, 1.0, ww);
    ck_assert_msg(fabs(ww[9] - 1.0) < 1e-9, "nvdec-bound step waits %.12f s", ww[9]);
}
END_TEST

/* The workers that keep up on average: ceil(max over ranks of the CPU
 * seconds over the step seconds); none when NVDEC alone exceeds them. */
START_TEST(workers_needed)
{
    int ms[2] = {1, 1};
    double cpu[4] = {3.0, 1.0, 2.5, 1.0}, dev[4] = {0}, steps[2] = {1, 1};
    mm_loader_queue q = {.workers = 1, .prefetch = 2, .iters = 2, .ranks = 2, .m = ms, .cpu_s = cpu,
                         .dev_s = dev, .step_s = steps, .slowdown = 1.0};
    ck_assert_int_eq(mm_loader_workers_needed(&q), 3); /* rank 0: 5.5 s over 2 s */
    double exact[4] = {2.0, 0, 2.0, 0};
    q.cpu_s = exact;
    ck_assert_int_eq(mm_loader_workers_needed(&q), 2);
    double nv[4] = {0, 1.5, 0, 1.5};
    q.dev_s = nv;
    ck_assert_int_eq(mm_loader_workers_needed(&q), -1);
}
END_TEST

/* ---- the costs, by the published rates ------------------------------ */

static double published(const char *name)
{
    FILE *f = fopen("tests/data/dataload/published.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    double v = NAN;
    while (fgets(line, sizeof line, f)) {
        char *comma = strchr(line, ',');
        if (line[0] == '#' || !comma)
            continue;
        *comma = '\0';
        if (!strcmp(line, name))
            v = strtod(comma + 1, NULL);
    }
    fclose(f);
    ck_assert_msg(isfinite(v), "no %s in published.csv", name);
    return v;
}

/* libjpeg-turbo's decode as fixed + per-megapixel, by formula from the
 * benchmark's two sizes: the slope (megapixels per second) and the
 * intercept (seconds an image). */
static double jpeg_rate(void)
{
    double ms = published("jpeg_ms") - published("jpeg_small_ms");
    return (published("jpeg_px") - published("jpeg_small_px")) * 1e-6 / (ms * 1e-3);
}

static double jpeg_fixed(void) { return published("jpeg_small_ms") * 1e-3 - published("jpeg_small_px") * 1e-6 / jpeg_rate(); }

static int sim_rc(mm_sim *sim, const char *const *sets, int n, mm_err *err)
{
    static mm_scenario sc;
    mm_scenario_free(&sc);
    memset(sim, 0, sizeof *sim);
    int rc = mm_scenario_load(&sc, NULL, sets, n, err);
    if (!rc)
        rc = mm_sim_prepare(sim, &sc, err);
    return rc;
}

static void sim_ok(mm_sim *sim, const char *const *sets, int n)
{
    mm_err err;
    ck_assert_msg(sim_rc(sim, sets, n, &err) == 0, "%s:%d: %s: %s", err.file, err.line, err.key, err.msg);
}

static inline double rel(double a, double b) { return fabs(a - b) / fabs(b); }

/* The built-in scenario's LLaVA-OneVision (SigLIP at 384 px: a tile is
 * 0.147456 Mpx).  An anyres image of 5 tiles at its tiles' size decodes
 * 5 x 0.147456 Mpx (and pays one image's fixed decode), is resized to its grid and to the thumbnail, and its
 * 300 text tokens are tokenised; one of 2 Mpx (data.image_megapixels)
 * decodes 2 Mpx.  A video of 8 frames of 0.9216 Mpx (720p) on the CPU:
 * decode and resize per frame; on NVDEC (7 engines per H100): decode on
 * the GPU only.  The copy: 12 bytes per tile pixel and 16 per LLM token.
 * Audio: each padded 30-s clip's log-mel features.
 * 1e-3 relative (the published figures' own digits). */
START_TEST(sample_costs_from_published_rates)
{
    double jpeg = jpeg_rate(), fixed = jpeg_fixed(), small = published("resize_small_mpx_s");
    double grid = published("resize_grid_mpx_s"), tok = published("bytes_per_token") / (published("tokenize_gb_s") * 1e9);
    double vcpu = published("video_cpu_frames_s") * 0.9216 / published("video_cpu_threads");
    double nvdec = published("nvdec_frames_s") * 0.9216;
    const char *sets[] = {"data.workers=2", "data.video_megapixels=0.9216", "data.video_decoder=cpu"};
    mm_sim sim;
    sim_ok(&sim, sets, 2);
    double tile = 384.0 * 384.0 * 1e-6, src = 5 * tile;
    ck_assert(rel((double)sim.model->vision.image_size, 384.0) == 0);
    mm_sample img = {.images = 1, .tiles = 5, .text_tokens = 300};
    mm_loader_cost c = {0};
    mm_sim_loader_sample(&sim, &img, true, &c);
    double want = fixed + src / jpeg + src / small + src / grid + 300 * tok;
    ck_assert_msg(rel(c.cpu_s, want) < 1e-3, "image: %.9g s, formula %.9g s", c.cpu_s, want);
    ck_assert(c.dev_s == 0);
    double tokens = (double)mm_sample_llm_tokens(&img, &sim.tm);
    ck_assert(rel(c.h2d_bytes, 5 * tile * 1e6 * 12 + tokens * 16) < 1e-12);
    mm_sample one = {.images = 1, .tiles = 1, .text_tokens = 0};
    c = (mm_loader_cost){0};
    mm_sim_loader_sample(&sim, &one, false, &c);
    ck_assert(rel(c.cpu_s, fixed + tile / jpeg + tile / small) < 1e-3); /* one tile: no grid */
    mm_sample vid = {.frames = 8, .text_tokens = 100};
    c = (mm_loader_cost){0};
    mm_sim_loader_sample(&sim, &vid, false, &c);
    ck_assert_msg(rel(c.cpu_s, 8 * 0.9216 / vcpu + 8 * 0.9216 / small) < 1e-3, "video %.9g s", c.cpu_s);
    mm_sim_free(&sim);
    const char *nv[] = {"data.workers=2", "data.video_megapixels=0.9216", "data.video_decoder=nvdec",
                        "data.image_megapixels=2"};
    sim_ok(&sim, nv, 4);
    c = (mm_loader_cost){0};
    mm_sim_loader_sample(&sim, &vid, false, &c);
    ck_assert(c.cpu_s == 0 && rel(c.dev_s, 8 * 0.9216 / (7 * nvdec)) < 1e-3);
    c = (mm_loader_cost){0};
    mm_sim_loader_sample(&sim, &img, false, &c);
    ck_assert(rel(c.cpu_s, fixed + 2 / jpeg + 2 / small + 2 / grid) < 1e-3);
    /* the node's cores: 112 over 8 GPUs, one for each training process:
     * 13 for the workers; 26 workers run at half speed */
    ck_assert(mm_sim_loader_slowdown(&sim, 13) == 1.0 && mm_sim_loader_slowdown(&sim, 26) == 2.0);
    ck_assert(mm_sim_loader_slowdown(&sim, 0) == 1.0);
    mm_sim_free(&sim);
    /* audio: 40 s are two padded 30-s clips of log-mel features, each
     * 128 x 3000 float32 on the GPU */
    const char *audio[] = {"model=models/qwen2-audio-like-7b.yaml", "parallel.vision=null",
                           "parallel.audio={tp: 1, pp: 1, dp: 16}",
                           "workload={kind: fixed, images: 0, text_tokens: 100, audio_seconds: 40}", "data.workers=2"};
    sim_ok(&sim, audio, 5);
    mm_sample clip = {.audio_s = 40, .text_tokens = 100};
    c = (mm_loader_cost){0};
    mm_sim_loader_sample(&sim, &clip, false, &c);
    ck_assert_msg(rel(c.cpu_s, 2 * published("audio_clip_s")) < 1e-9, "audio %.9g s", c.cpu_s);
    double atok = (double)mm_sample_llm_tokens(&clip, &sim.tm);
    ck_assert(rel(c.h2d_bytes, 2 * 128.0 * 3000 * 4 + atok * 16) < 1e-12);
    mm_sim_free(&sim);
}
END_TEST

/* ---- whole runs ----------------------------------------------------- */

static void run(const char *const *sets, int n, mm_metrics *mt)
{
    mm_sim sim;
    sim_ok(&sim, sets, n);
    mm_err err;
    ck_assert_msg(mm_sim_run(&sim, mt, NULL, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
}

/* The built-in scenario (a fixed sample of one 5-tile image).  Workers 0:
 * each step waits for all of its loading, exactly the loader's CPU seconds
 * plus the copies, and the step is the unloaded step plus that wait (1e-9
 * relative).  Two workers keep ahead: only the copies remain.  Not
 * modeled (-1): the metrics are NAN and the step unchanged.  The
 * --breakdown's micro-batch is 1/m of the run's loading. */
START_TEST(runs_add_the_wait)
{
    mm_metrics off, serial, two;
    const char *s_off[] = {"iterations=3"}, *s0[] = {"iterations=3", "data.workers=0"},
               *s2[] = {"iterations=3", "data.workers=2"};
    run(s_off, 1, &off);
    run(s0, 2, &serial);
    run(s2, 2, &two);
    ck_assert(isnan(off.data_wait_s) && isnan(off.iters[0].data_wait_s));
    ck_assert(serial.loader_cpu_s > 0.1 && serial.data_h2d_s > 0);
    for (int i = 0; i < 3; i++) {
        const mm_iter_metrics *a = &off.iters[i], *b = &serial.iters[i];
        ck_assert_msg(rel(b->data_wait_s, b->loader_cpu_s + b->data_h2d_s) < 1e-9, "step %d: %.9g vs %.9g", i,
                      b->data_wait_s, b->loader_cpu_s + b->data_h2d_s);
        ck_assert(rel(b->time_s, a->time_s + b->data_wait_s) < 1e-9);
        ck_assert(rel(two.iters[i].data_wait_s, two.iters[i].data_h2d_s) < 1e-9);
    }
    ck_assert(rel(serial.iteration_time_s, off.iteration_time_s + serial.data_wait_s) < 1e-9);
    ck_assert(rel(serial.stages[0].idle_s, off.stages[0].idle_s + serial.data_wait_s) < 1e-9);
    /* --breakdown's micro-batch is the run's: m of them are its CPU seconds */
    mm_sim sim;
    sim_ok(&sim, s0, 2);
    static mm_sim_breakdown bk;
    mm_err err;
    ck_assert_int_eq(mm_sim_get_breakdown(&sim, &bk, &err), 0);
    ck_assert(bk.loader && rel(bk.loader_cpu_s * sim.micro_batches, serial.iters[0].loader_cpu_s) < 1e-9);
    mm_sim_free(&sim);
    /* the mean rate: loader CPU s over the step's seconds, rounded up */
    ck_assert_int_eq(two.data_workers_needed, (int)ceil(two.loader_cpu_s / off.iteration_time_s));
    mm_metrics_free(&off);
    mm_metrics_free(&serial);
    mm_metrics_free(&two);
}
END_TEST

/* The steady-state shortfall, one figure for the run, the planner's
 * pre-score and `mmsim run`: mm_sim_loader_short_s by formula (no
 * workers: the whole load; W workers: max(cpu x slowdown / W, NVDEC) -
 * step, or 0); a loader-bound run (every image 400 Mpx, one worker) holds
 * it against its own loader seconds and step (the fixed sample: every GPU
 * alike), the pre-score adds it and the copies to its step, and --json and
 * --breakdown print it.  1e-9 relative. */
START_TEST(steady_shortfall_is_one_figure)
{
    mm_sim sim;
    const char *s1[] = {"iterations=3", "data.workers=1", "data.image_megapixels=400"};
    sim_ok(&sim, s1, 3);
    double S = mm_sim_loader_slowdown(&sim, 2);
    ck_assert(mm_sim_loader_short_s(&sim, 0, 1.5, 0.25, 9.0) == 1.75);
    ck_assert(rel(mm_sim_loader_short_s(&sim, 2, 6.0, 0.0, 1.0), 6.0 * S / 2 - 1.0) < 1e-12);
    ck_assert(mm_sim_loader_short_s(&sim, 2, 0.0, 3.0, 1.0) == 2.0);
    ck_assert(mm_sim_loader_short_s(&sim, 2, 0.5, 0.5, 1.0) == 0.0);
    mm_metrics run, est, est_off;
    mm_err err;
    ck_assert_msg(mm_sim_run(&sim, &run, NULL, &err) == 0, "%s", err.msg);
    double step = run.iteration_time_s - (run.data_wait_s - run.data_h2d_s);
    double want = mm_sim_loader_short_s(&sim, 1, run.loader_cpu_s, 0.0, step);
    ck_assert_msg(want > 0.1 && rel(run.data_shortfall_s, want) < 1e-9, "%.9g vs %.9g", run.data_shortfall_s, want);
    ck_assert_msg(mm_sim_estimate(&sim, &est, &err) == 0, "%s", err.msg);
    mm_sim_free(&sim);
    const char *s_off[] = {"iterations=3", "data.image_megapixels=400"};
    sim_ok(&sim, s_off, 2);
    ck_assert_msg(mm_sim_estimate(&sim, &est_off, &err) == 0, "%s", err.msg);
    ck_assert(isnan(est_off.data_shortfall_s) && isnan(est_off.data_wait_s));
    ck_assert(rel(est.loader_cpu_s, run.loader_cpu_s) < 1e-9 && rel(est.data_h2d_s, run.data_h2d_s) < 1e-9);
    double T = est_off.iteration_time_s;
    ck_assert(rel(est.data_shortfall_s, mm_sim_loader_short_s(&sim, 1, est.loader_cpu_s, 0.0, T + est.data_h2d_s)) <
              1e-9);
    ck_assert(rel(est.data_wait_s, est.data_shortfall_s + est.data_h2d_s) < 1e-12);
    ck_assert(rel(est.iteration_time_s, T + est.data_wait_s) < 1e-9);
    ck_assert_int_eq(est.data_workers_needed, (int)ceil(est.loader_cpu_s / T));
    mm_sim_free(&sim);
    mm_metrics_free(&run);
    mm_metrics_free(&est);
    mm_metrics_free(&est_off);
    char dir[256], o[65536], e[8192];
    mmx_tmpdir(dir, sizeof dir, "dataload");
    const char *args = "run --no-db --set iterations=3 --set data.workers=1 --set data.image_megapixels=400";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --json", args);
    ck_assert_int_eq(mmx_run(dir, NULL, cmd, o, sizeof o, e, sizeof e), 0);
    ck_assert_msg(strstr(o, "\"data_shortfall_s\": ") && strstr(o, "\"run_data_shortfall_s\": "), "%s", e);
    snprintf(cmd, sizeof cmd, "%s --breakdown", args);
    ck_assert_int_eq(mmx_run(dir, NULL, cmd, o, sizeof o, e, sizeof e), 0);
    ck_assert_msg(strstr(o, "the loader is the bottleneck by") && strstr(o, "in the steady state"), "%s", o);
    mmx_rmdir(dir);
}
END_TEST

/* ---- bad input ------------------------------------------------------ */

/* A copy of topologies/dgx-h100.yaml in a fresh folder (dir, with a link
 * to the kernel tables it names) into path: lines holding `drop` or
 * `drop2` left out, the line holding `match` replaced by `repl`; returns
 * that line's number (0: none). */
static int topo_copy(char *dir, size_t dlen, char *path, size_t plen, const char *drop, const char *drop2,
                     const char *match, const char *repl)
{
    mmx_tmpdir(dir, dlen, "topo");
    char cwd[256], link[600];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(link, sizeof link, "%s/kernels", dir);
    snprintf(path, plen, "%s/topologies/kernels", cwd);
    ck_assert_int_eq(symlink(path, link), 0);
    snprintf(path, plen, "%s/dgx-h100.yaml", dir);
    FILE *in = fopen("topologies/dgx-h100.yaml", "r"), *out = fopen(path, "w");
    ck_assert(in && out);
    char line[1024];
    int n = 0, at = 0;
    while (fgets(line, sizeof line, in)) {
        n++;
        if ((drop && strstr(line, drop)) || (drop2 && strstr(line, drop2)))
            continue;
        if (match && strstr(line, match))
            fputs(repl, out), at = n;
        else
            fputs(line, out);
    }
    fclose(in);
    fclose(out);
    return at;
}

/* Refused by key: workers below -1; prefetch with workers 0 (PyTorch's
 * ValueError); workers on a topology without node.cpu_cores; nvdec on one
 * without gpu.nvdec. */
START_TEST(bad_keys_refused)
{
    mm_sim sim;
    mm_err err;
    const char *neg[] = {"data.workers=-2"};
    ck_assert_int_eq(sim_rc(&sim, neg, 1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "data.workers");
    const char *pf[] = {"data.workers=0", "data.prefetch=4"};
    ck_assert_int_eq(sim_rc(&sim, pf, 2, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "data.prefetch");
    mm_sim_free(&sim);
    const char *pf_ok[] = {"data.workers=0"};
    ck_assert_int_eq(sim_rc(&sim, pf_ok, 1, &err), 0);
    mm_sim_free(&sim);
    char dir[256], tmp[600], set[700];
    topo_copy(dir, sizeof dir, tmp, sizeof tmp, "cpu_cores:", "nvdec:", NULL, NULL);
    snprintf(set, sizeof set, "cluster.topology=%s", tmp);
    const char *nocpu[] = {set, "data.workers=2"};
    ck_assert_int_eq(sim_rc(&sim, nocpu, 2, &err), -MM_EINPUT);
    ck_assert_msg(!strcmp(err.key, "data.workers"), "%s:%d: %s: %s", err.file, err.line, err.key, err.msg);
    ck_assert_msg(strstr(err.msg, "node.cpu_cores"), "%s", err.msg);
    mm_sim_free(&sim);
    const char *nonv[] = {set, "data.workers=0", "data.video_decoder=nvdec"};
    ck_assert_int_eq(sim_rc(&sim, nonv, 3, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "data.video_decoder");
    mm_sim_free(&sim);
    mmx_rmdir(dir);
}
END_TEST

/* A topology's node.cpu_cores of 0, a profile's loader.workers of -1, a
 * rates file's entry without a source or with a rate of 0 name their
 * file, line and key (the shipped rates file reads as the published
 * figures); the CLI exits 2 naming the scenario file's line and key. */
START_TEST(bad_files_refused)
{
    char tdir[256], tmp[600];
    int at = topo_copy(tdir, sizeof tdir, tmp, sizeof tmp, NULL, NULL, "cpu_cores: 112", "  cpu_cores: 0\n");
    ck_assert(at > 0);
    char line[1024];
    int n, fd;
    FILE *in, *out;
    mm_cluster c;
    mm_err err;
    ck_assert_int_eq(mm_cluster_load(tmp, 1, &c, &err), -MM_EINPUT);
    ck_assert_msg(!strcmp(err.key, "node.cpu_cores"), "%s:%d: %s: %s", err.file, err.line, err.key, err.msg);
    ck_assert_int_eq(err.line, at);
    mmx_rmdir(tdir);
    char fw[] = "/tmp/mmsim-fw-XXXXXX";
    fd = mkstemp(fw);
    in = fopen("frameworks/megatron-core.yaml", "r"), out = fdopen(fd, "w");
    n = at = 0;
    while (fgets(line, sizeof line, in)) {
        n++;
        if (strstr(line, "  workers: 2"))
            fputs("  workers: -1\n", out), at = n;
        else
            fputs(line, out);
    }
    fclose(in);
    fclose(out);
    mm_framework f;
    ck_assert_int_eq(mm_framework_load(fw, &f, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "loader.workers");
    ck_assert_int_eq(err.line, at);
    unlink(fw);
    mm_loader_rates lr;
    ck_assert_int_eq(mm_loader_rates_load("tests/data/dataload/rates-no-source.yaml", &lr, &err), -MM_EINPUT);
    ck_assert_msg(!strcmp(err.key, "resize_small_mpx_s.source") && err.line == 6, "%d: %s", err.line, err.key);
    ck_assert_int_eq(mm_loader_rates_load("tests/data/dataload/rates-zero.yaml", &lr, &err), -MM_EINPUT);
    ck_assert_msg(!strcmp(err.key, "jpeg_decode_mpx_s.value") && err.line == 4, "%d: %s", err.line, err.key);
    ck_assert_int_eq(mm_loader_rates_load("frameworks/loader-rates.yaml", &lr, &err), 0);
    ck_assert(rel(lr.jpeg_mpx_s, jpeg_rate()) < 1e-4 && rel(lr.jpeg_fixed_s, jpeg_fixed()) < 1e-4);
    ck_assert(lr.resize_grid_mpx_s == published("resize_grid_mpx_s"));
    ck_assert(rel(lr.pipe_bytes_s, published("pipe_item_bytes") / (published("pipe_item_ms") * 1e-3)) < 1e-3);
    char dir[256], o[8192], e[8192];
    mmx_tmpdir(dir, sizeof dir, "dataload");
    ck_assert_int_eq(mmx_run(dir, NULL, "run tests/data/dataload/bad-prefetch.yaml --no-db", o, sizeof o, e, sizeof e),
                     2);
    ck_assert_msg(strstr(e, "bad-prefetch.yaml:8") && strstr(e, "data.prefetch"), "%s", e);
    ck_assert_int_eq(mmx_run(dir, NULL, "run tests/data/dataload/bad-workers.yaml --no-db", o, sizeof o, e, sizeof e),
                     2);
    ck_assert_msg(strstr(e, "bad-workers.yaml:7") && strstr(e, "data.workers"), "%s", e);
    mmx_rmdir(dir);
}
END_TEST

/* A published DataLoader throughput (tests/data/dataload/imread-benchmark.csv:
 * ImageNet validation JPEGs decoded by Pillow in a PyTorch DataLoader of
 * W workers on a 16-vCPU VM, and single-threaded) against mmsim's loader:
 * each image's decode at the rates file's libjpeg-turbo fixed cost and
 * per-megapixel rate (mm_loader_jpeg_decode_s), W workers sharing the
 * cores the training process leaves (mmsim's slowdown, max(1, W / (cores
 * - 1))), each batch of 32 uint8 arrays received by the training process
 * through the result pipe (mm_loader_pipe_recv_s), the queue run against
 * a consumer that does nothing else (steps of 0 s), the steady state's
 * images per second: min(W / (slowdown x decode), 32 / receive).  The
 * Neoverse-V2 row (16 cores: the receive bounds it) is a check within its
 * target; the Xeon row (8 cores under 16 hyperthreads) a named known miss;
 * the single-thread column is a named miss on both (docs/validation.md).
 * Misses are held within 5 % of the ratio the CSV records. */
START_TEST(imagenet_dataloader)
{
    mm_loader_rates lr;
    mm_err err;
    ck_assert_int_eq(mm_loader_rates_load("frameworks/loader-rates.yaml", &lr, &err), 0);
    FILE *f = fopen("tests/data/dataload/imread-benchmark.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    int rows = 0, checks = 0;
    bool header = true;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (header) {
            header = false;
            continue;
        }
        char plat[64], lib[32], target[16];
        int cores, W;
        double mpx, bpp, single, loader, r_single, r_loader;
        ck_assert_int_eq(sscanf(line, "%63[^,],%d,%31[^,],%lf,%lf,%lf,%lf,%d,%15[^,],%lf,%lf,", plat, &cores, lib, &mpx,
                                &bpp, &single, &loader, &W, target, &r_single, &r_loader),
                         11);
        double img_s = mm_loader_jpeg_decode_s(&lr, 1, mpx); /* one core's seconds per image */
        ck_assert(fabs(img_s - (lr.jpeg_fixed_s + mpx / lr.jpeg_mpx_s)) < 1e-15);
        enum { B = 32, N = 64 };
        double cpu[N], recv[N], steps_w[N];
        double batch_recv = mm_loader_pipe_recv_s(&lr, B * mpx * 1e6 * bpp);
        ck_assert(fabs(batch_recv - B * mpx * 1e6 * bpp / lr.pipe_bytes_s) < 1e-15);
        for (int i = 0; i < N; i++)
            cpu[i] = B * img_s, recv[i] = batch_recv;
        int ms[N];
        double zero[N] = {0};
        for (int i = 0; i < N; i++)
            ms[i] = 1;
        mm_loader_queue q = {.workers = W, .prefetch = 2, .iters = N, .ranks = 1, .m = ms, .cpu_s = cpu,
                             .dev_s = zero, .step_s = zero, .recv_s = recv,
                             .slowdown = fmax(1.0, (double)W / (cores - 1))};
        ck_assert_int_eq(mm_loader_waits(&q, steps_w), 0);
        /* the steady state: the last 4 rounds of W batches, the prefetched
         * ones long spent */
        ck_assert_int_le(4 * W, N / 2);
        double t = 0;
        for (int i = N - 4 * W; i < N; i++)
            t += steps_w[i];
        double sim_loader = 4 * W * B / t, sim_single = 1 / img_s;
        double bound = fmin(W / (q.slowdown * img_s), B / batch_recv);
        ck_assert_double_eq_tol(sim_loader, bound, 1e-6 * sim_loader);
        ck_assert_msg(fabs(sim_single / single / r_single - 1) <= 0.05, "%s single: %.0f img/s against %.0f (x%.2f)",
                      plat, sim_single, single, sim_single / single);
        if (strcmp(target, "miss")) {
            double tol = strtod(target, NULL);
            ck_assert(tol > 0 && tol <= 0.15);
            ck_assert_msg(fabs(sim_loader / loader - 1) <= tol, "%s DataLoader %d workers: %.0f img/s against %.0f", plat,
                          W, sim_loader, loader);
            checks++;
        }
        ck_assert_msg(fabs(sim_loader / loader / r_loader - 1) <= 0.05,
                      "%s DataLoader %d workers: %.0f img/s against %.0f (x%.3f)", plat, W, sim_loader, loader,
                      sim_loader / loader);
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, 2);
    ck_assert_int_eq(checks, 1);
}
END_TEST

/* The training process receives every batch itself (recv_s): W workers
 * whose batch takes c seconds, each received in r seconds by a consumer
 * with nothing else to do, deliver a batch per max(c / W, r) in the
 * steady state (every batch when the receive bounds, on average over a
 * round of W when the workers do); with steps of T seconds and workers far ahead, each step
 * waits r for its one micro-batch.  1e-9 relative. */
START_TEST(receive_caps_the_loader)
{
    enum { N = 40 };
    int ms[N];
    double cpu[N], recv[N], zero[N] = {0}, steps[N], w[N];
    for (int i = 0; i < N; i++)
        ms[i] = 1, cpu[i] = 1.0, recv[i] = 0.5, steps[i] = 2.0;
    mm_loader_queue q = {.workers = 4, .prefetch = 2, .iters = N, .ranks = 1, .m = ms, .cpu_s = cpu,
                         .dev_s = zero, .step_s = zero, .recv_s = recv, .slowdown = 1.0};
    ck_assert_int_eq(mm_loader_waits(&q, w), 0);
    for (int i = N / 2; i < N; i++) /* r = 0.5 > c / W = 0.25 */
        ck_assert_msg(rel(w[i], 0.5) < 1e-9, "batch %d: %.9g s", i, w[i]);
    for (int i = 0; i < N; i++)
        recv[i] = 0.1;
    ck_assert_int_eq(mm_loader_waits(&q, w), 0);
    double round = 0; /* c / W = 0.25 > r: a round of W batches per c */
    for (int i = N - 4 * 4; i < N; i++)
        round += w[i];
    ck_assert_msg(rel(round / 16, 0.25) < 1e-9, "%.9g s a batch", round / 16);
    q.step_s = steps;
    ck_assert_int_eq(mm_loader_waits(&q, w), 0);
    for (int i = 0; i < N; i++) /* far ahead: the receive alone */
        ck_assert_msg(rel(w[i], 0.1) < 1e-9, "step %d: %.9g s", i, w[i]);
    q.recv_s = NULL;
    ck_assert_int_eq(mm_loader_waits(&q, w), 0);
    for (int i = 0; i < N; i++)
        ck_assert(w[i] == 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dataload");
    TCase *tc = tcase_create("dataload");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, loader_bound_closed_form);
    tcase_add_test(tc, keeps_ahead_and_prefetch_absorbs);
    tcase_add_test(tc, serial_and_nvdec);
    tcase_add_test(tc, workers_needed);
    tcase_add_test(tc, sample_costs_from_published_rates);
    tcase_add_test(tc, runs_add_the_wait);
    tcase_add_test(tc, bad_keys_refused);
    tcase_add_test(tc, bad_files_refused);
    tcase_add_test(tc, imagenet_dataloader);
    tcase_add_test(tc, receive_caps_the_loader);
    tcase_add_test(tc, steady_shortfall_is_one_figure);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
