/* test_workload.c - Check suite for the workload layer's samples
 * (sim/workload): sampled moments of every distribution against the spec,
 * tiling against the published worked examples, determinism per iteration,
 * exact trace replay, the shipped InternVL trace against its published
 * statistics, input errors (file, line, key/column), the token model, and
 * `mmsim workload stats` through the binary (MMSIM_EXE).
 *
 * Statistical tolerance: a sampled mean must lie within 5 standard errors
 * of the spec's mean (SE = sd / sqrt(N)), a sampled variance within 5
 * standard errors of the variance (SE = sqrt((mu4 - sigma^4) / N), mu4 the
 * spec's fourth central moment); a share within 5 binomial SEs.  With a
 * fixed seed the outcome is fixed; 5 SE makes a false alarm on a new seed
 * a ~1e-6 event per check.
 * Not for: the batching policies (test_batch.c), timing micro-batches (run
 * layer tests). */
#include "workload_common.h"

#ifndef MMSIM_EXE
#error "MMSIM_EXE must name the mmsim binary"
#endif

#define TRACE "workloads/internvl-1.2-sft.csv"

static mm_mixture *mix_from(const char *text)
{
    mm_err err;
    mm_mixture *mix = NULL;
    int rc = mm_mixture_load_string("test.yaml", text, &mix, &err);
    if (rc) {
        char buf[1200];
        mm_err_format(&err, buf, sizeof buf);
        ck_abort_msg("mixture did not load: %s", buf);
    }
    return mix;
}

/* Sample mean and variance (n - 1) of n values. */
static void moments(const double *v, int n, double *mean, double *var)
{
    double m = 0, q = 0;
    for (int i = 0; i < n; i++)
        m += v[i];
    m /= n;
    for (int i = 0; i < n; i++)
        q += (v[i] - m) * (v[i] - m);
    *mean = m;
    *var = q / (n - 1);
}

/* The 5-SE checks of the header for a spec with mean mu, variance s2 and
 * fourth central moment mu4. */
static void check_moments(const double *v, int n, double mu, double s2, double mu4, const char *what)
{
    double m, var;
    moments(v, n, &m, &var);
    double se_m = sqrt(s2 / n), se_v = sqrt((mu4 - s2 * s2) / n);
    ck_assert_msg(fabs(m - mu) < 5 * se_m, "%s: mean %.6g, spec %.6g, 5 SE = %.3g", what, m, mu, 5 * se_m);
    ck_assert_msg(fabs(var - s2) < 5 * se_v, "%s: variance %.6g, spec %.6g, 5 SE = %.3g", what, var, s2,
                  5 * se_v);
}

/* ---- distributions ------------------------------------------------------ */

START_TEST(test_lognormal_moments)
{
    /* audio seconds are not rounded: the raw draw */
    mm_mixture *mix = mix_from("components:\n"
                               "  - {name: a, modality: audio, weight: 1, text_tokens: 10,\n"
                               "     audio: {seconds: {dist: lognormal, mu: 2.0, sigma: 0.5}}}\n");
    const int n = 200000;
    mm_sample *s = draw(mix, 7, 0, n);
    double *v = malloc(n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = s[i].audio_s;
    double mu = 2.0, sg = 0.5, w = exp(sg * sg);
    double mean = exp(mu + sg * sg / 2), var = (w - 1) * exp(2 * mu + sg * sg);
    double kurt = w * w * w * w + 2 * w * w * w + 3 * w * w - 3; /* kurtosis (not excess) */
    check_moments(v, n, mean, var, kurt * var * var, "lognormal");
    free(v);
    free(s);
    mm_mixture_free(mix);
}
END_TEST

START_TEST(test_gamma_moments_rounded)
{
    /* text tokens are rounded to integers: + 1/12 variance (Sheppard) */
    mm_mixture *mix = mix_from("components:\n"
                               "  - {name: t, modality: text, weight: 1,\n"
                               "     text_tokens: {dist: gamma, shape: 2.5, scale: 300}}\n");
    const int n = 200000;
    mm_sample *s = draw(mix, 3, 1, n);
    double *v = malloc(n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = (double)s[i].text_tokens;
    double k = 2.5, th = 300;
    double var = k * th * th;
    check_moments(v, n, k * th, var + 1.0 / 12, 3 * k * (k + 2) * pow(th, 4), "gamma");
    free(v);
    free(s);
    mm_mixture_free(mix);
}
END_TEST

START_TEST(test_discrete_and_shares)
{
    mm_mixture *mix = mix_from(
        "components:\n"
        "  - name: multi\n    modality: multi-image\n    weight: 3\n    text_tokens: 5\n"
        "    images: {dist: discrete, values: [2, 4, 10], weights: [5, 3, 2]}\n"
        "    image: {tiling: fixed, tiles: 2}\n"
        "  - {name: txt, modality: text, weight: 1, text_tokens: 7}\n");
    const int n = 100000;
    mm_sample *s = draw(mix, 11, 2, n);
    double *v = malloc(n * sizeof *v);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (s[i].images > 0) {
            v[m++] = s[i].images;
            ck_assert_int_eq(s[i].tiles, 2 * s[i].images);
            ck_assert_int_eq(s[i].text_tokens, 5);
        } else {
            ck_assert_int_eq(s[i].text_tokens, 7);
        }
    double p = 0.75, se = sqrt(n * p * (1 - p));
    ck_assert_msg(fabs(m - n * p) < 5 * se, "multi-image share %d of %d", m, n);
    double pv[3] = {0.5, 0.3, 0.2}, xv[3] = {2, 4, 10}, mean = 0, var = 0, mu4 = 0;
    for (int j = 0; j < 3; j++)
        mean += pv[j] * xv[j];
    for (int j = 0; j < 3; j++) {
        var += pv[j] * pow(xv[j] - mean, 2);
        mu4 += pv[j] * pow(xv[j] - mean, 4);
    }
    check_moments(v, m, mean, var, mu4, "discrete");
    free(v);
    free(s);
    mm_mixture_free(mix);
}
END_TEST

START_TEST(test_histogram_moments)
{
    /* uniform within each bin: E x = sum w (lo+hi)/2, E x^2 = sum w (lo^2+lo hi+hi^2)/3 */
    mm_mixture *mix = mix_from("components:\n"
                               "  - {name: a, modality: audio, weight: 1, text_tokens: 1,\n"
                               "     audio: {seconds: {dist: histogram, bins: [[0, 10, 1], [10, 30, 3], [30, 60, 1]]}}}\n");
    const int n = 200000;
    mm_sample *s = draw(mix, 5, 0, n);
    double *v = malloc(n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = s[i].audio_s;
    double lo[3] = {0, 10, 30}, hi[3] = {10, 30, 60}, w[3] = {0.2, 0.6, 0.2}, e[5] = {0};
    for (int j = 0; j < 3; j++)
        for (int p = 1; p <= 4; p++) /* raw moments of U(lo, hi) */
            e[p] += w[j] * (pow(hi[j], p + 1) - pow(lo[j], p + 1)) / ((p + 1) * (hi[j] - lo[j]));
    double mu = e[1], var = e[2] - mu * mu;
    double mu4 = e[4] - 4 * mu * e[3] + 6 * mu * mu * e[2] - 3 * pow(mu, 4);
    check_moments(v, n, mu, var, mu4, "histogram");
    free(v);
    free(s);
    mm_mixture_free(mix);
}
END_TEST

START_TEST(test_histogram_file_and_clamp)
{
    /* the shipped text-token histogram: every draw inside [33, 1280) */
    mm_err err;
    mm_mixture *mix = NULL;
    ck_assert_int_eq(mm_mixture_load("workloads/image-text-ratio.yaml", &mix, &err), 0);
    mm_sample *s = draw(mix, 1, 0, 20000);
    for (int i = 0; i < 20000; i++) {
        if (s[i].images) {
            ck_assert_int_ge(s[i].text_tokens, 33);
            ck_assert_int_le(s[i].text_tokens, 1280);
            ck_assert(s[i].tiles == 1 || s[i].tiles == 3 || s[i].tiles == 4 || s[i].tiles == 5);
        } else {
            ck_assert_int_ge(s[i].text_tokens, 16);
            ck_assert_int_le(s[i].text_tokens, 4096);
        }
    }
    free(s);
    mm_mixture_free(mix);
}
END_TEST

START_TEST(test_video_frames)
{
    mm_mixture *mix = mix_from("components:\n"
                               "  - {name: v, modality: video, weight: 1, text_tokens: 3,\n"
                               "     video: {seconds: 10.5, fps: 2, max_frames: 32}}\n"
                               "  - {name: w, modality: video, weight: 1, text_tokens: 4,\n"
                               "     video: {seconds: 100, fps: 1, max_frames: 32}}\n");
    mm_sample *s = draw(mix, 1, 0, 200);
    for (int i = 0; i < 200; i++)
        ck_assert_int_eq(s[i].frames, s[i].text_tokens == 3 ? 21 : 32);
    free(s);
    mm_mixture_free(mix);
}
END_TEST

/* Tiles of one image of w x h under a tiling block. */
static int tiles_of(const char *image_yaml, int w, int h)
{
    char text[1024];
    snprintf(text, sizeof text,
             "components:\n  - name: i\n    modality: image\n    weight: 1\n    text_tokens: 1\n"
             "    image: {%s, width: %d, aspect: %.17g}\n",
             image_yaml, w, (double)h / w);
    mm_mixture *mix = mix_from(text);
    mm_sample *s = draw(mix, 1, 0, 1);
    int t = s[0].tiles;
    free(s);
    mm_mixture_free(mix);
    return t;
}

START_TEST(test_tiling_worked_examples)
{
    /* Worked examples (D), the published selection code run on example
     * image sizes: OV anyres_max_9 at 384 px over (1x1)..(6x6) grids
     * (LLaVA-VL/LLaVA-NeXT llava/mm_utils.py select_best_resolution; OV
     * arXiv 2408.03326 Sec. 3), and InternVL with max 12 tiles (closest
     * aspect ratio, InternVL 2.5 report arXiv 2412.05271 Sec. 3.1). */
    static const struct { int w, h, ov, internvl; } ex[] = {
        {336, 336, 2, 1},   {640, 480, 5, 13},  {1024, 768, 7, 13}, {1280, 720, 9, 9},
        {1920, 1080, 16, 9}, {2048, 2048, 37, 10}, {800, 2400, 13, 13},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        int ov = tiles_of("tiling: anyres, tile: 384, max_grid: 6", ex[i].w, ex[i].h);
        int iv = tiles_of("tiling: internvl, tile: 448, max_tiles: 12", ex[i].w, ex[i].h);
        ck_assert_msg(ov == ex[i].ov, "%dx%d: anyres %d tiles, published %d", ex[i].w, ex[i].h, ov, ex[i].ov);
        ck_assert_msg(iv == ex[i].internvl, "%dx%d: internvl %d tiles, published %d", ex[i].w, ex[i].h, iv,
                      ex[i].internvl);
    }
    /* max_tiles 10 keeps OV within its 729 x 10 budget */
    ck_assert_int_le(tiles_of("tiling: anyres, tile: 384, max_grid: 6, max_tiles: 10", 2048, 2048), 10);
}
END_TEST

START_TEST(test_image_text_ratio)
{
    const char *base = "components:\n"
                       "  - {name: i, modality: image, weight: 1, text_tokens: 1}\n"
                       "  - {name: t, modality: text, weight: 3, text_tokens: 1}\n"
                       "  - {name: v, modality: video, weight: 1, text_tokens: 1, video: {seconds: 1, fps: 1, max_frames: 4}}\n";
    mm_mixture *mix = mix_from(base);
    mm_err err;
    ck_assert_int_eq(mm_mixture_set_image_text_ratio(mix, 9.0, &err), 0);
    double wi, wt, wv;
    mm_mixture_component(mix, 0, NULL, &wi);
    mm_mixture_component(mix, 1, NULL, &wt);
    mm_mixture_component(mix, 2, NULL, &wv);
    ck_assert_double_eq_tol(wi / wt, 9.0, 1e-12);
    ck_assert_double_eq_tol(wv, 0.2, 1e-12); /* video untouched */
    ck_assert_int_eq(mm_mixture_set_image_text_ratio(mix, -1, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "image_text_ratio");
    mm_mixture_free(mix);
    /* the file knob, "1:9" */
    char text[1024];
    snprintf(text, sizeof text, "image_text_ratio: 1:9\n%s", base);
    mix = mix_from(text);
    mm_mixture_component(mix, 0, NULL, &wi);
    mm_mixture_component(mix, 1, NULL, &wt);
    ck_assert_double_eq_tol(wi / wt, 1.0 / 9, 1e-12);
    mm_mixture_free(mix);
}
END_TEST

START_TEST(test_shipped_mixtures_load)
{
    const char *files[] = {"workloads/llava-1.5-665k.yaml", "workloads/llava-ov-mix.yaml",
                           "workloads/text-only.yaml", "workloads/audio-mix.yaml",
                           "workloads/image-text-ratio.yaml"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        mm_workload w;
        mm_err err;
        int rc = mm_workload_load(files[f], &w, &err);
        ck_assert_msg(rc == 0, "%s: %s", files[f], err.msg);
        ck_assert_int_eq(w.source, MM_WLS_MIXTURE);
        mm_sample s[64];
        ck_assert_int_eq(mm_workload_draw(&w, 1, 0, 64, s, &err), 0);
        mm_workload_free(&w);
    }
    /* the OV mix: modality shares of the paper (31.2 / 43.0 / 25.9 %) */
    mm_mixture *mix = NULL;
    mm_err err;
    ck_assert_int_eq(mm_mixture_load("workloads/llava-ov-mix.yaml", &mix, &err), 0);
    const int n = 50000;
    mm_sample *s = draw(mix, 2, 0, n);
    int cnt[MM_MOD_COUNT] = {0};
    for (int i = 0; i < n; i++)
        cnt[mm_sample_modality(&s[i])]++;
    double pv[MM_MOD_COUNT] = {0.056, 0.256, 0.430, 0.259, 0};
    for (int k = 0; k < MM_MOD_COUNT; k++) {
        double p = pv[k] / 1.001, se = sqrt(n * p * (1 - p));
        ck_assert_msg(fabs(cnt[k] - n * p) <= 5 * se + 1e-9, "%s: %d of %d", mm_modality_names[k], cnt[k], n);
    }
    free(s);
    mm_mixture_free(mix);
}
END_TEST

/* ---- determinism --------------------------------------------------------- */

START_TEST(test_determinism_per_iteration)
{
    mm_mixture *mix = NULL;
    mm_err err;
    ck_assert_int_eq(mm_mixture_load("workloads/llava-ov-mix.yaml", &mix, &err), 0);
    mm_sample *a = draw(mix, 42, 5, 256);
    for (int it = 0; it < 5; it++)
        free(draw(mix, 42, it, 256)); /* drawing other iterations first changes nothing */
    mm_sample *b = draw(mix, 42, 5, 256);
    ck_assert_int_eq(memcmp(a, b, 256 * sizeof *a), 0);
    mm_sample *c = draw(mix, 43, 5, 256);
    mm_sample *d = draw(mix, 42, 6, 256);
    int same_c = 0, same_d = 0;
    for (int i = 0; i < 256; i++) {
        same_c += a[i].text_tokens == c[i].text_tokens;
        same_d += a[i].text_tokens == d[i].text_tokens;
    }
    ck_assert_int_lt(same_c, 64);
    ck_assert_int_lt(same_d, 64);
    ck_assert_int_eq(a[0].id, 5 * 256);
    free(a), free(b), free(c), free(d);
    mm_mixture_free(mix);
}
END_TEST

/* ---- traces ------------------------------------------------------------ */

static char tmpdir[256];

static void tmp_setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/mmsim-wl-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
}

static const char *write_tmp(const char *name, const char *text)
{
    static char path[400];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

START_TEST(test_trace_replays_exactly)
{
    const char *p = write_tmp("t.csv", "# a comment\n"
                                       "frames,id,text_tokens,images,tiles,audio_seconds\n"
                                       "0,10,100,1,5,0\n"
                                       "\n"
                                       "# another\n"
                                       "32,11,7,0,0,0\n"
                                       "0,12,3,0,0,12.625\n");
    mm_sample_trace t;
    mm_err err;
    ck_assert_int_eq(mm_sample_trace_load(p, &t, &err), 0);
    ck_assert_int_eq(t.n, 3);
    mm_sample out[8];
    mm_sample_trace_draw(&t, 0, 8, out); /* wraps: 0 1 2 0 1 2 0 1 */
    for (int k = 0; k < 8; k++)
        ck_assert_int_eq(memcmp(&out[k], &t.samples[k % 3], sizeof out[k]), 0);
    ck_assert_int_eq(out[0].id, 10);
    ck_assert_int_eq(out[0].tiles, 5);
    ck_assert_int_eq(out[1].frames, 32);
    ck_assert(out[2].audio_s == 12.625);
    mm_sample_trace_draw(&t, 1, 2, out); /* samples 2, 3 -> 2, 0 */
    ck_assert_int_eq(out[0].id, 12);
    ck_assert_int_eq(out[1].id, 10);
    mm_sample_trace_free(&t);
}
END_TEST

START_TEST(test_shipped_trace_statistics)
{
    /* (D) from ModelTC/OmniBal data/vision/ (the *_wh_token_lengths.json files) @
     * a96cc5d, 4 InternVL-1.2 SFT subsets: n 70,706; LLM length mean 1135.5,
     * p50 1323, p90 1470, p99 1896, max 2538; tiles 1: 9.0% 3: 33.9%
     * 4: 0.9% 5: 56.1%, mean 3.95 */
    mm_workload w;
    mm_err err;
    ck_assert_int_eq(mm_workload_load(TRACE, &w, &err), 0);
    ck_assert_int_eq(w.source, MM_WLS_TRACE);
    ck_assert_int_eq(w.trace.n, 70706);
    ck_assert_int_eq(w.trace.samples[0].id, 0);
    ck_assert_int_eq(w.trace.samples[0].text_tokens, 358 - 256);
    ck_assert_int_eq(w.trace.samples[2].tiles, 5);
    mm_token_model tm = {.tokens_per_tile = 256};
    mm_workload_stats st;
    ck_assert_int_eq(mm_workload_stats_compute(w.trace.samples, w.trace.n, &tm, &st, &err), 0);
    ck_assert_double_eq_tol(st.llm_tokens.mean, 1135.5, 0.05);
    ck_assert_double_eq_tol(st.llm_tokens.p50, 1323, 0.5);
    ck_assert_double_eq_tol(st.llm_tokens.p90, 1470, 0.5);
    ck_assert_double_eq_tol(st.llm_tokens.p99, 1896, 0.5);
    ck_assert_double_eq(st.llm_tokens.max, 2538);
    ck_assert_double_eq_tol(st.tiles.mean, 3.95, 0.005);
    ck_assert_int_eq(st.by_modality[MM_MOD_IMAGE], 70706);
    /* replay through the workload: iteration 1 of 50000 wraps after 20706 */
    mm_sample *s = malloc(50000 * sizeof *s);
    ck_assert_int_eq(mm_workload_draw(&w, 99, 1, 50000, s, &err), 0);
    ck_assert_int_eq(s[0].id, 50000);
    ck_assert_int_eq(s[20705].id, 70705);
    ck_assert_int_eq(s[20706].id, 0);
    free(s);
    mm_workload_free(&w);
}
END_TEST

static void expect_csv_error(const char *text, int line, const char *key, const char *col)
{
    const char *p = write_tmp("bad.csv", text);
    mm_sample_trace t;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_sample_trace_load(p, &t, &err), -MM_EINPUT);
    ck_assert_str_eq(err.file, p);
    ck_assert_msg(err.line == line, "line %d, expected %d (%s)", err.line, line, err.msg);
    ck_assert_str_eq(err.key, key);
    ck_assert_msg(strstr(err.msg, col), "message '%s' lacks '%s'", err.msg, col);
}

START_TEST(test_bad_trace)
{
    const char *hdr = "# c\nid,text_tokens,images,tiles,frames,audio_seconds\n";
    char text[512];
    snprintf(text, sizeof text, "%s0,1,1,1,0,0\n1,2,1,x3,0,0\n", hdr);
    expect_csv_error(text, 4, "tiles", "column 4");
    snprintf(text, sizeof text, "%s0,1,1,1,0,0\n1,2,1\n", hdr);
    expect_csv_error(text, 4, "tiles", "column 4");
    snprintf(text, sizeof text, "%s0,1,1,1,0,-2\n", hdr);
    expect_csv_error(text, 3, "audio_seconds", "column 6");
    snprintf(text, sizeof text, "%s0,-1,1,1,0,0\n", hdr);
    expect_csv_error(text, 3, "text_tokens", "column 2");
    expect_csv_error("id,text_tokens,imgaes,tiles,frames,audio_seconds\n0,1,1,1,0,0\n", 1, "imgaes",
                     "did you mean 'images'");
    expect_csv_error("id,text_tokens,tiles,frames,audio_seconds\n0,1,1,0,0\n", 1, "images", "lacks");
    expect_csv_error("# only a comment\n", 1, "", "no header");
    mm_sample_trace t;
    mm_err err;
    ck_assert_int_eq(mm_sample_trace_load("/nonexistent/x.csv", &t, &err), -MM_EINPUT);
}
END_TEST

/* ---- mixture errors -------------------------------------------------- */

static void expect_yaml_error(const char *text, int line, const char *key, const char *what)
{
    mm_mixture *mix = NULL;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_mixture_load_string("bad.yaml", text, &mix, &err), -MM_EINPUT);
    ck_assert_ptr_null(mix);
    ck_assert_str_eq(err.file, "bad.yaml");
    ck_assert_msg(err.line == line, "line %d, expected %d (%s: %s)", err.line, line, err.key, err.msg);
    ck_assert_str_eq(err.key, key);
    ck_assert_msg(strstr(err.msg, what), "message '%s' lacks '%s'", err.msg, what);
}

START_TEST(test_bad_mixture)
{
    expect_yaml_error("components:\n"
                      "  - name: a\n"
                      "    modality: text\n"
                      "    weight: 1\n"
                      "    text_tokens: {dist: lognormal, mu: 5, sigma: -1}\n",
                      5, "components[0].text_tokens.sigma", "");
    expect_yaml_error("components:\n"
                      "  - name: a\n"
                      "    modality: text\n"
                      "    wieght: 1\n"
                      "    text_tokens: 5\n",
                      4, "components[0].wieght", "did you mean 'weight'");
    expect_yaml_error("components:\n"
                      "  - {name: a, modality: text, weight: 1, text_tokens: 5}\n"
                      "  - {name: b, modality: pictures, weight: 1, text_tokens: 5}\n",
                      3, "components[1].modality", "");
    expect_yaml_error("components:\n"
                      "  - {name: a, modality: multi-image, weight: 1, text_tokens: 5}\n",
                      2, "components[0].images", "multi-image");
    expect_yaml_error("components:\n"
                      "  - name: a\n"
                      "    modality: text\n"
                      "    weight: 1\n"
                      "    text_tokens: {dist: histogram, file: no-such-file.csv}\n",
                      5, "components[0].text_tokens.file", "cannot open");
    expect_yaml_error("components:\n"
                      "  - name: a\n"
                      "    modality: image\n"
                      "    weight: 1\n"
                      "    text_tokens: 5\n"
                      "    image: {tiling: anyres, tile: 384, width: 100, aspect: 1}\n",
                      6, "components[0].image.grids", "anyres needs");
    expect_yaml_error("components: []\n", 1, "components", "non-empty");
}
END_TEST

START_TEST(test_token_model)
{
    mm_sample s = {.text_tokens = 100, .images = 2, .tiles = 3, .frames = 4, .audio_s = 31};
    mm_token_model tm = {.tokens_per_tile = 256, .tokens_per_frame = 196, .tokens_per_audio_s = 25};
    ck_assert_int_eq(mm_sample_audio_tokens(&s, &tm), 775);
    ck_assert_int_eq(mm_sample_audio_clips(&s, &tm), 2);
    ck_assert_int_eq(mm_sample_llm_tokens(&s, &tm), 100 + 768 + 784 + 775);
    tm.max_tokens = 1000;
    ck_assert_int_eq(mm_sample_llm_tokens(&s, &tm), 1000);
    ck_assert_int_eq(mm_sample_modality(&s), MM_MOD_AUDIO);
    /* from a model: InternVL 2.5 (448 px, patch 14, pixel shuffle 0.5) -> 256 */
    mm_model *m = malloc(sizeof *m);
    mm_err err;
    ck_assert_int_eq(mm_model_load("models/internvl2.5-78b.json", m, &err), 0);
    mm_token_model_from_model(m, &tm);
    ck_assert_int_eq(tm.tokens_per_tile, 256);
    free(m);
}
END_TEST

/* ---- the CLI ---------------------------------------------------------- */

static int run_cli(const char *args, char *out, size_t len)
{
    char cmd[1024], path[400];
    snprintf(path, sizeof path, "%s/cli.out", tmpdir);
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>&1", MMSIM_EXE, args, path);
    int st = system(cmd);
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(out, 1, len - 1, f) : 0;
    out[got] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_cli_stats)
{
    static char out[1 << 16];
    ck_assert_int_eq(run_cli("workload stats " TRACE " --json", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"samples\": 70706"));
    const char *p = strstr(out, "\"llm_tokens\": {\"mean\": ");
    ck_assert_ptr_nonnull(p);
    double mean = strtod(p + strlen("\"llm_tokens\": {\"mean\": "), NULL);
    ck_assert_double_eq_tol(mean, 1135.5, 0.05);
    ck_assert_ptr_nonnull(strstr(out, "\"image\": 70706"));
    ck_assert_int_eq(run_cli("workload stats " TRACE, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "LLM sequence length"));
    ck_assert_ptr_nonnull(strstr(out, "encoder load"));
    ck_assert_ptr_nonnull(strstr(out, "#"));
    ck_assert_int_eq(run_cli("workload stats workloads/llava-ov-mix.yaml --samples 2000 --seed 3 "
                             "--model models/llava-ov-qwen2.5-7b.yaml --tokens-per-frame 196",
                             out, sizeof out),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "729 per tile, 196 per frame"));
    /* bad input: exit 2 naming file, line and column */
    const char *bad = write_tmp("bad.csv", "id,text_tokens,images,tiles,frames,audio_seconds\n0,1,1,zz,0,0\n");
    char args[600];
    snprintf(args, sizeof args, "workload stats %s", bad);
    ck_assert_int_eq(run_cli(args, out, sizeof out), 2);
    char want[500];
    snprintf(want, sizeof want, "%s:2: key 'tiles'", bad);
    ck_assert_msg(strstr(out, want) != NULL, "got: %s", out);
    ck_assert_int_eq(run_cli("workload stats", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("workload frobnicate x", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("help workload", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "mmsim workload stats FILE"));
}
END_TEST

static Suite *workload_suite(void)
{
    Suite *s = suite_create("workload");
    TCase *tc = tcase_create("distributions");
    tcase_add_test(tc, test_lognormal_moments);
    tcase_add_test(tc, test_gamma_moments_rounded);
    tcase_add_test(tc, test_discrete_and_shares);
    tcase_add_test(tc, test_histogram_moments);
    tcase_add_test(tc, test_histogram_file_and_clamp);
    tcase_add_test(tc, test_video_frames);
    tcase_add_test(tc, test_tiling_worked_examples);
    tcase_add_test(tc, test_image_text_ratio);
    tcase_add_test(tc, test_shipped_mixtures_load);
    tcase_add_test(tc, test_determinism_per_iteration);
    tcase_add_test(tc, test_bad_mixture);
    tcase_add_test(tc, test_token_model);
    suite_add_tcase(s, tc);

    tc = tcase_create("traces");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, test_trace_replays_exactly);
    tcase_add_test(tc, test_shipped_trace_statistics);
    tcase_add_test(tc, test_bad_trace);
    tcase_add_test(tc, test_cli_stats);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(workload_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
