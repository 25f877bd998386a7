/* test_scenario_keys.c - Check suite for the scenario key table
 * (scenario/keys): every row reaches the canonical text, the built-in
 * default is the table's column, unknown keys suggest the nearest row,
 * loading canonical text under a source name; the layout type's own
 * functions and its --set spelling; docs/scenario.md lists every key.
 *
 * Not for: reading files and --set errors one by one (test_scenario.c), the
 * reader (test_config.c).  Tests run from the source root. */
#include "config_common.h"

/* ---- the key table -------------------------------------------------------- */

/* A value of row k other than `cur` that the reader accepts, as YAML. */
static void other_value(const mm_key *k, const char *cur, char *buf, size_t len)
{
    switch (k->type) {
    case MM_KT_INT:
    case MM_KT_I64:
    case MM_KT_U64: {
        long long v = cur ? atoll(cur) : k->min;
        snprintf(buf, len, "%lld", v + 1 <= k->max ? v + 1 : v - 1);
        break;
    }
    case MM_KT_DOUBLE:
        snprintf(buf, len, "%g", (cur ? atof(cur) : k->dmin) + 0.5);
        break;
    case MM_KT_BOOL:
        snprintf(buf, len, "%s", cur && !strcmp(cur, "true") ? "false" : "true");
        break;
    case MM_KT_ENUM:
        snprintf(buf, len, "%s", cur && !strcmp(cur, k->choices[0]) ? k->choices[1] : k->choices[0]);
        break;
    case MM_KT_INT_LIST:
        snprintf(buf, len, "[1, 2]");
        break;
    case MM_KT_NAME_LIST:
        snprintf(buf, len, "[audio]");
        break;
    default:
        snprintf(buf, len, "other/file.yaml");
        break;
    }
}

/* Every row lands in the canonical text: changing any key's value changes
 * the text the store hashes (a key missed there would merge two runs). */
START_TEST(table_every_key_in_canonical_text)
{
    mm_scenario *base = load_ok(NULL, NULL, 0);
    char *t0 = canon(base);
    int tried = 0;
    for (size_t i = 0; i < mm_n_keys; i++) {
        const mm_key *k = &mm_keys[i];
        if (k->type == MM_KT_SECTION || k->type == MM_KT_WORKLOAD || k->type == MM_KT_PERTURB ||
            k->off == SIZE_MAX)
            continue;
        if (!strcmp(k->name, "workload.kind"))
            continue;
        char val[64], set[160];
        /* an inherited zero is written as train.zero's value (1 here): change it from that */
        other_value(k, k->flags & MM_KF_INHERIT ? "1" : k->builtin ? k->builtin : k->def, val, sizeof val);
        snprintf(set, sizeof set, "%s=%s", k->name, val);
        const char *sets[] = {set};
        mm_scenario *sc = load_ok(NULL, sets, 1);
        char *t = canon(sc);
        ck_assert_msg(strcmp(t, t0) != 0, "--set %s leaves the canonical text as it was", set);
        /* and the text reads back to the same text */
        mm_scenario *back = calloc(1, sizeof *back);
        mm_err e;
        ck_assert_msg(mm_scenario_load_text(back, "<text>", t, NULL, 0, &e) == 0, "%s: %s", set, e.msg);
        char *t2 = canon(back);
        ck_assert_str_eq(t, t2);
        free(t2);
        drop(back);
        free(t);
        drop(sc);
        tried++;
    }
    ck_assert_int_gt(tried, 40);
    free(t0);
    drop(base);
}
END_TEST

/* The built-in default scenario is the table's built-in column. */
START_TEST(table_builtin_default)
{
    char *text = mm_scenario_default_text();
    ck_assert_ptr_nonnull(text);
    mm_scenario *a = load_ok(NULL, NULL, 0);
    mm_scenario *b = calloc(1, sizeof *b);
    mm_err e;
    ck_assert_int_eq(mm_scenario_load_text(b, "<default>", text, NULL, 0, &e), 0);
    char *ta = canon(a), *tb = canon(b);
    ck_assert_str_eq(ta, tb);
    for (size_t i = 0; i < mm_n_keys; i++) /* every built-in value is written */
        if (mm_keys[i].builtin) {
            char line[160];
            snprintf(line, sizeof line, "%s: %s\n", mm_key_leaf(mm_keys[i].name), mm_keys[i].builtin);
            ck_assert_msg(strstr(text, line), "%s missing from the default text", line);
        }
    free(ta);
    free(tb);
    free(text);
    drop(a);
    drop(b);
}
END_TEST

/* An unknown key names its full dotted path and suggests the nearest row,
 * a sibling first, else a key of another section with that name. */
START_TEST(table_nearest_key)
{
    static const char *const cases[][3] = {
        {"train.seq_lenn=4", "train.seq_lenn", "did you mean 'train.seq_len'?"},
        {"seq_len=4", "seq_len", "did you mean 'train.seq_len'?"},
        {"train.tp=2", "train.tp", "did you mean 'parallel.llm.tp'?"},
        {"parallel.vision.tpp=2", "parallel.vision.tpp", "did you mean 'parallel.vision.tp'?"},
        {"cluster.node=2", "cluster.node", "did you mean 'cluster.nodes'?"},
        {"workload={kind: fixed, image: 1}", "workload.image", "did you mean 'workload.images'?"},
        {"zzzzzz=1", "zzzzzz", "allowed keys: model, cluster, train"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[] = {cases[i][0]};
        mm_err e = load_fail(NULL, sets, 1);
        assert_err(&e, "--set", 0, cases[i][1], cases[i][2]);
    }
    /* a key that is not a name: said so, nothing suggested */
    const char *bad[] = {"train={[1]: 2}"};
    mm_err e = load_fail(NULL, bad, 1);
    assert_err(&e, "--set", 0, "train", "a key must be a plain name, not a list or a mapping");
    /* in a file: file and line */
    e = load_fail(DATA "unknown_root.yaml", NULL, 0);
    assert_err(&e, DATA "unknown_root.yaml", 3, "trian", "did you mean 'train'?");
}
END_TEST

/* Loading canonical text under a source name: that name is the source
 * (errors, relative paths), and the scenario is the same. */
START_TEST(table_load_text)
{
    const char *sets[] = {"parallel.llm.sp=true", "train.frozen=[vision]", "parallel.llm.layers_per_stage=[13, 15]"};
    mm_scenario *a = load_ok(DATA "full.yaml", sets, 3);
    char *ta = canon(a);
    mm_scenario *b = calloc(1, sizeof *b);
    mm_err e;
    ck_assert_int_eq(mm_scenario_load_text(b, DATA "full.yaml", ta, NULL, 0, &e), 0);
    ck_assert_str_eq(b->source, DATA "full.yaml");
    ck_assert(b->parallel.llm.sp && b->parallel.llm.lay.n_layers_per_stage == 2 &&
              b->parallel.llm.lay.layers_per_stage[1] == 15);
    char *tb = canon(b);
    ck_assert_str_eq(ta, tb);
    int line = -1;
    ck_assert_str_eq(key_file(b, "parallel.llm.sp", &line), DATA "full.yaml");
    ck_assert_int_gt(line, 1); /* a line of the text */
    free(ta);
    free(tb);
    drop(a);
    drop(b);
    /* a bad text: an error naming the source */
    mm_scenario c;
    ck_assert_int_eq(mm_scenario_load_text(&c, "cand", "model: x\ncluster: {topology: t}\ntrain: {zero: 9}\n", NULL, 0, &e),
                     -MM_EINPUT);
    assert_err(&e, "cand", 3, "train.zero", "must be between 0 and 3");
}
END_TEST

/* The layout's --set spelling and mm_scenario_apply_layout give the same
 * scenario (canonical text), per-module sp and the other keys kept, on a
 * base with per-module sp, zero and an uneven split. */
/* The layout type's own functions: the GPU count is tp*pp*cp*dp (ep folds
 * into dp, vpp into pp), a stage's layers the split's entry or layers/pp,
 * and equality compares the split by content, an even split no other. */
START_TEST(layout_type_functions)
{
    static const int a4[] = {6, 8, 8, 6}, b4[] = {6, 8, 8, 6}, c4[] = {7, 7, 8, 6};
    mm_layout even = {.tp = 2, .pp = 4, .vpp = 2, .cp = 2, .dp = 3, .ep = 3};
    ck_assert_int_eq(mm_layout_gpus(&even), 2 * 4 * 2 * 3);
    mm_layout nocp = even;
    nocp.cp = 0; /* taken as 1 */
    ck_assert_int_eq(mm_layout_gpus(&nocp), 2 * 4 * 3);
    ck_assert_int_eq(mm_layout_stage_layers(&even, 30, 3), 7); /* 30 / 4, floor */
    mm_layout split = even;
    split.n_layers_per_stage = 4, split.layers_per_stage = a4;
    ck_assert_int_eq(mm_layout_stage_layers(&split, 28, 0), 6);
    ck_assert_int_eq(mm_layout_stage_layers(&split, 28, 1), 8);
    mm_layout stale = even; /* a pointer without a count is the even split */
    stale.layers_per_stage = c4;
    ck_assert_int_eq(mm_layout_stage_layers(&stale, 28, 0), 7);
    ck_assert(mm_layout_equal(&even, &stale));
    mm_layout same = split;
    same.layers_per_stage = b4;
    ck_assert(mm_layout_equal(&split, &same));
    ck_assert(!mm_layout_equal(&split, &even));
    same.layers_per_stage = c4;
    ck_assert(!mm_layout_equal(&split, &same));
    mm_layout other = even;
    other.ep = 1;
    ck_assert(!mm_layout_equal(&even, &other));
}
END_TEST

START_TEST(layout_sets_equal_apply)
{
    const char *base_sets[] = {"parallel.llm.sp=true", "parallel.vision.sp=true", "parallel.vision.zero=3",
                               "parallel.llm.zero=2", "parallel.llm.layers_per_stage=[13, 15]",
                               "train.recompute=full", "train.global_batch=32"};
    enum { NB = sizeof base_sets / sizeof base_sets[0] };
    static const int split4[] = {6, 8, 8, 6};
    const mm_relayout lays[] = {
        {.placement = MM_PLACE_COLOCATED, .llm = {1, 4, 1, 1, 4, 1, 4, split4}, .vision = {1, 1, 1, 1, 16, 1},
         .vision_recompute = -1, .micro_batch = 1, .recompute = MM_RECOMPUTE_SELECTIVE, .zero = 1, .schedule = MM_SCHED_1F1B},
        {.placement = -1, .llm = {2, 1, 1, 1, 8, 1}, .vision_recompute = -1, .micro_batch = 4, .recompute = MM_RECOMPUTE_SELECTIVE,
         .zero = 1, .schedule = MM_SCHED_1F1B},
        {.placement = MM_PLACE_COLOCATED, .llm = {2, 2, 2, 1, 4, 1}, .vision = {2, 1, 1, 1, 8, 1}, .vision_recompute = -1, .micro_batch = 2,
         .recompute = MM_RECOMPUTE_FULL, .zero = 0, .schedule = MM_SCHED_INTERLEAVED},
        {.placement = MM_PLACE_HOMOGENEOUS, .llm = {4, 2, 1, 1, 2, 1}, .vision_recompute = -1, .micro_batch = 1,
         .recompute = MM_RECOMPUTE_SELECTIVE, .zero = 1, .schedule = MM_SCHED_ZB_H1},
        {.placement = MM_PLACE_PIPELINE, .llm = {2, 1, 1, 1, 6, 1}, .vision = {1, 1, 1, 1, 4, 1},
         .vision_recompute = MM_RECOMPUTE_FULL, .micro_batch = 1, .recompute = MM_RECOMPUTE_NONE, .zero = 1,
         .schedule = MM_SCHED_GPIPE},
        {.placement = MM_PLACE_HOMOGENEOUS, .llm = {4, 2, 1, 1, 2, 1}, .vision_recompute = MM_RECOMPUTE_NONE,
         .micro_batch = 1, .recompute = MM_RECOMPUTE_FULL, .zero = 1, .schedule = MM_SCHED_1F1B},
    };
    mm_scenario *base = load_ok(NULL, base_sets, NB);
    for (size_t i = 0; i < sizeof lays / sizeof lays[0]; i++) {
        mm_scenario applied = *base; /* a struct copy: it borrows, base owns */
        mm_scenario_apply_layout(&applied, &lays[i]);
        ck_assert(applied.parallel.llm.sp && applied.parallel.vision.sp);
        ck_assert_int_eq(applied.parallel.llm.lay.n_layers_per_stage, lays[i].llm.n_layers_per_stage);
        char *ta = canon(&applied);
        char json[2048], sets[40][128];
        ck_assert_uint_lt(mm_layout_sets_json(&lays[i], json, sizeof json), sizeof json);
        const char *ptr[64];
        int n = 0;
        for (; n < NB; n++)
            ptr[n] = base_sets[n];
        int k = 0;
        for (char *q = strchr(json, '"'); q; q = strchr(q + 1, '"')) {
            char *e = strchr(q + 1, '"');
            ck_assert_ptr_nonnull(e);
            snprintf(sets[k], sizeof sets[k], "%.*s", (int)(e - q - 1), q + 1);
            ptr[n++] = sets[k++];
            q = e;
        }
        mm_scenario *viasets = load_ok(NULL, ptr, n);
        char *tb = canon(viasets);
        ck_assert_str_eq(ta, tb);
        free(ta);
        free(tb);
        drop(viasets);
    }
    /* a short buffer: snprintf-like length, terminated */
    char small[20];
    size_t need = mm_layout_sets_json(&lays[2], small, sizeof small);
    ck_assert_uint_gt(need, sizeof small);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    drop(base);
}
END_TEST

/* Key names of `mmsim help scenario` (rows that do not start with '#' or
 * a space), in order, joined by newlines. */
static char *help_keys(void)
{
    char *text = mm_scenario_help_text();
    ck_assert_ptr_nonnull(text);
    char *keys = calloc(strlen(text) + 1, 1);
    size_t n = 0;
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len && line[0] != '#' && line[0] != ' ') {
            size_t w = strcspn(line, " \n");
            memcpy(keys + n, line, w);
            n += w;
            keys[n++] = '\n';
        }
        line += len + (end ? 1 : 0);
    }
    free(text);
    return keys;
}

/* docs/scenario.md lists the same keys in the same order: the rows of its
 * key table are "| `dotted.key` | ...". */
START_TEST(docs_list_every_key)
{
    FILE *f = fopen("docs/scenario.md", "r");
    ck_assert_msg(f != NULL, "docs/scenario.md not found (run from the source root)");
    static char doc[1 << 16];
    char line[1024];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "| `", 3) != 0)
            continue;
        char *end = strchr(line + 3, '`');
        ck_assert_ptr_nonnull(end);
        size_t w = (size_t)(end - (line + 3));
        ck_assert_uint_lt(n + w + 2, sizeof doc);
        memcpy(doc + n, line + 3, w);
        n += w;
        doc[n++] = '\n';
    }
    fclose(f);
    doc[n] = '\0';
    char *keys = help_keys();
    ck_assert_msg(!strcmp(doc, keys), "docs/scenario.md lists other keys than `mmsim help scenario` "
                                      "(scripts/scenario-keys writes the table):\n%s\nvs\n%s", doc, keys);
    free(keys);
}
END_TEST

static Suite *scenario_keys_suite(void)
{
    Suite *s = suite_create("scenario_keys");

    TCase *can = tcase_create("canonical");
    tcase_add_test(can, table_every_key_in_canonical_text);
    tcase_add_test(can, table_builtin_default);
    tcase_add_test(can, table_nearest_key);
    tcase_add_test(can, table_load_text);
    tcase_add_test(can, layout_type_functions);
    tcase_add_test(can, layout_sets_equal_apply);
    tcase_add_test(can, docs_list_every_key);
    suite_add_tcase(s, can);
    return s;
}

int main(void)
{
    const char *src = getenv("MMSIM_SRCDIR");
    if (src && src[0] && chdir(src) != 0) {
        perror(src);
        return 1;
    }
    SRunner *sr = srunner_create(scenario_keys_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
