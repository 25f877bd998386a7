/* test_native.c - native (dynamic) resolution as Qwen2-VL reads an image:
 * smart_resize and the tokens per image against the closed form
 * (tests/data/native/smart-resize.csv: H' and W' multiples of 28 within
 * [min_pixels, max_pixels], tokens = (H'/14)(W'/14)/4), a mixture's
 * `tiling: native` (images drawn by megapixels and aspect, counted in
 * whole 448-px accounting tiles, never above the bound the memory check
 * uses), `mmsim model --image` on a Qwen2.5-VL config, and bad input:
 * refused sizes, keys another tiling would ignore (file, line, key), exit
 * status 2. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmsim_exe.h"
#include "workload/workload.h"

START_TEST(smart_resize_closed_form)
{
    FILE *f = fopen("tests/data/native/smart-resize.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        long long h, w, mx, rh, rw, tok;
        if (line[0] == '#' || sscanf(line, "%lld,%lld,%lld,%lld,%lld,%lld", &h, &w, &mx, &rh, &rw, &tok) != 6)
            continue;
        int64_t gh = 0, gw = 0;
        ck_assert_int_eq(mm_native_resize(h, w, 28, MM_NATIVE_MIN_PIXELS, mx, &gh, &gw), 0);
        ck_assert_msg(gh == rh && gw == rw, "%lldx%lld: %lldx%lld, expected %lldx%lld", h, w, (long long)gh,
                      (long long)gw, rh, rw);
        /* the closed form: multiples of 28, the area within the limits */
        ck_assert(gh % 28 == 0 && gw % 28 == 0 && gh * gw <= mx && gh * gw >= MM_NATIVE_MIN_PIXELS);
        ck_assert_int_eq(mm_native_image_tokens(h, w, 14, 2, MM_NATIVE_MIN_PIXELS, mx), (gh / 14) * (gw / 14) / 4);
        ck_assert_int_eq(mm_native_image_tokens(h, w, 14, 2, MM_NATIVE_MIN_PIXELS, mx), tok);
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, 10);
    /* an image already on the grid and within the limits keeps its size */
    for (int64_t k = 2; k <= 35; k++) {
        int64_t gh, gw;
        ck_assert_int_eq(mm_native_resize(28 * k, 28 * (k + 1), 28, 3136, 1003520, &gh, &gw), 0);
        ck_assert_int_eq(gh, 28 * k);
        ck_assert_int_eq(gw, 28 * (k + 1));
    }
}
END_TEST

START_TEST(refused_sizes)
{
    int64_t h, w;
    ck_assert_int_eq(mm_native_resize(9, 500, 28, 3136, 1003520, &h, &w), -1);    /* a side under 10 px */
    ck_assert_int_eq(mm_native_resize(10, 2010, 28, 3136, 1003520, &h, &w), -1);  /* aspect over 200 */
    ck_assert_int_eq(mm_native_resize(100, 100, 0, 3136, 1003520, &h, &w), -1);   /* no factor */
    ck_assert_int_eq(mm_native_resize(100, 100, 28, 4000, 3000, &h, &w), -1);     /* max under min */
    ck_assert_int_eq(mm_native_image_tokens(9, 500, 14, 2, 3136, 1003520), -1);
    /* 200:1 is still taken; a side floored to nothing keeps one factor */
    ck_assert_int_eq(mm_native_resize(10, 2000, 28, 3136, 1003520, &h, &w), 0);
    ck_assert(h >= 28 && w >= 28 && h % 28 == 0 && w % 28 == 0);
}
END_TEST

static mm_mixture *mix_of(const char *image)
{
    char text[1024];
    snprintf(text, sizeof text,
             "components:\n"
             "  - name: img\n"
             "    modality: image\n"
             "    weight: 1\n"
             "    text_tokens: 100\n"
             "    image:\n%s",
             image);
    mm_mixture *mix = NULL;
    mm_err err;
    mm_err_clear(&err);
    int rc = mm_mixture_load_string("native.yaml", text, &mix, &err);
    ck_assert_msg(rc == 0, "%s:%d %s: %s", err.file, err.line, err.key, err.msg);
    return mix;
}

/* A fixed 12 MP 4:3 image (4000 x 3000) at qwen-vl-utils' max_pixels:
 * smart_resize gives 2996 x 4004 (15,301 tokens, 61,204 patches), counted
 * in whole 448-px tiles (256 tokens each): ceil(H'W' / 448^2) = 60. */
START_TEST(mixture_native_tiles)
{
    mm_mixture *mix = mix_of("      tiling: native\n"
                             "      tile: 448\n"
                             "      megapixels: 12\n"
                             "      aspect: 0.75\n"
                             "      max_pixels: 12845056\n");
    int64_t rh, rw;
    ck_assert_int_eq(mm_native_resize(3000, 4000, 28, 3136, 12845056, &rh, &rw), 0);
    int64_t want = (rh * rw + 448 * 448 - 1) / (448 * 448);
    mm_sample s[8];
    mm_err err;
    ck_assert_int_eq(mm_mixture_draw(mix, 1, 0, 8, s, &err), 0);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(s[i].images, 1);
        ck_assert_int_eq(s[i].tiles, want);
    }
    ck_assert_int_eq(rh, 2996);
    ck_assert_int_eq(rw, 4004);
    ck_assert_int_eq(want, 60);
    ck_assert(mm_mixture_max_inputs(mix) >= (double)want);
    mm_mixture_free(mix);

    /* lognormal megapixels, several images: every draw within the bound */
    mix = mix_of("      tiling: native\n"
                 "      tile: 448\n"
                 "      megapixels: {dist: lognormal, median: 1.0, sigma: 1.0, min: 0.0001, max: 50}\n"
                 "      aspect: {dist: uniform, min: 0.005, max: 200}\n");
    double bound = mm_mixture_max_inputs(mix);
    ck_assert(bound > 0);
    mm_sample t[400];
    ck_assert_int_eq(mm_mixture_draw(mix, 7, 3, 400, t, &err), 0);
    for (int i = 0; i < 400; i++)
        ck_assert_msg(t[i].tiles >= 1 && t[i].tiles <= bound, "tiles %d, bound %g", t[i].tiles, bound);
    mm_mixture_free(mix);
}
END_TEST

static void expect_error(const char *image, int line, const char *key, const char *what)
{
    char text[1024];
    snprintf(text, sizeof text,
             "components:\n"
             "  - name: img\n"
             "    modality: image\n"
             "    weight: 1\n"
             "    text_tokens: 100\n"
             "    image:\n%s",
             image);
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

START_TEST(bad_mixture_keys)
{
    expect_error("      tiling: native\n      tile: 448\n      megapixels: 1\n      width: 800\n", 10,
                 "components[0].image.width", "not read with tiling: native");
    expect_error("      tiling: fixed\n      megapixels: 1\n", 8, "components[0].image.megapixels",
                 "not read with tiling: fixed");
    expect_error("      tiling: native\n      tile: 448\n", 7, "components[0].image.megapixels", "missing");
    expect_error("      tiling: native\n      tile: 448\n      megapixels: 1\n      min_pixels: 5000\n"
                 "      max_pixels: 4000\n",
                 7, "components[0].image.max_pixels", "below min_pixels");
    expect_error("      tiling: native\n      tile: 450\n      megapixels: 1\n", 7, "components[0].image.tile",
                 "merged patches");
    expect_error("      tiling: native\n      tile: 448\n      megapixels: 1\n      aspect: 300\n", 10,
                 "components[0].image.aspect", "");
}
END_TEST

START_TEST(model_reports_tokens_per_image)
{
    char dir[256], out[65536], err[4096];
    mmx_tmpdir(dir, sizeof dir, "native");
    int rc = mmx_run(dir, NULL, "model tests/data/hf/qwen2.5-vl-7b.json --image 1080x1920 --json", out, sizeof out,
                     err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    /* the processor's default range, 4 to 1280 tokens, and 1080x1920 ->
     * 728x1316 -> 52 x 94 patches -> 1222 tokens (the data file's row) */
    ck_assert_msg(strstr(out, "\"native_tokens_per_image\": {\"min\": 4, \"max\": 1280}"), "%s", out);
    ck_assert_msg(strstr(out, "\"resized_height\": 728, \"resized_width\": 1316, \"patches\": 4888, \"tokens\": 1222"),
                  "%s", out);
    rc = mmx_run(dir, NULL, "model tests/data/hf/qwen2.5-vl-7b.json --image 1080x1920", out, sizeof out, err,
                 sizeof err);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(strstr(out, "image 1080x1920: resized to 728x1316, 4888 patches, 1222 LLM tokens"), "%s", out);
    /* refused: a tower without a merger, an image the processor refuses, a bad size */
    rc = mmx_run(dir, NULL, "model tests/data/hf/llava-1.5-7b-hf.json --image 448x448", out, sizeof out, err,
                 sizeof err);
    ck_assert_int_eq(rc, 2);
    ck_assert_msg(strstr(err, "--image"), "%s", err);
    rc = mmx_run(dir, NULL, "model tests/data/hf/qwen2.5-vl-7b.json --image 5x500", out, sizeof out, err, sizeof err);
    ck_assert_int_eq(rc, 2);
    rc = mmx_run(dir, NULL, "model tests/data/hf/qwen2.5-vl-7b.json --image 100by100", out, sizeof out, err,
                 sizeof err);
    ck_assert_int_eq(rc, 2);
    mmx_rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("native");
    TCase *t = tcase_create("native");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, smart_resize_closed_form);
    tcase_add_test(t, refused_sizes);
    tcase_add_test(t, mixture_native_tiles);
    tcase_add_test(t, bad_mixture_keys);
    tcase_add_test(t, model_reports_tokens_per_image);
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
