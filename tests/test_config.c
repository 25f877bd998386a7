/* test_config.c - Check suite for reading input files (util/doc): files and
 * syntax errors with their lines, the typed getters, key checks, aliases
 * and merge keys, and emitting nodes as YAML and JSON.
 *
 * What it is for: pinning down what a user sees when an input file is wrong
 * (every error test asserts the code, the file, the line, the key and the
 * words of the message).
 * Not for: scenarios (test_scenario.c: defaults, files, --set, canonical
 * text; test_scenario_keys.c: the key table and the layout type), nor
 * cross-file rules (the run layer's suite).  Data lives in
 * tests/data/config/; tests run from the source root (meson's workdir;
 * MMSIM_SRCDIR is honoured too). */
#include "config_common.h"

/* ---- doc: files, syntax, lines ------------------------------------------ */

START_TEST(doc_missing_file)
{
    mm_doc doc;
    mm_err e;
    mm_err_clear(&e);
    ck_assert_int_eq(mm_doc_load_file(&doc, DATA "no-such-file.yaml", &e), -MM_EINPUT);
    assert_err(&e, DATA "no-such-file.yaml", 0, "", "cannot open: No such file or directory");
    mm_doc_free(&doc); /* harmless after a failed load */
}
END_TEST

START_TEST(doc_syntax_error_line_and_silence)
{
    stderr_trap t;
    mm_doc doc;
    mm_err e;
    mm_err_clear(&e);
    trap_begin(&t);
    int rc = mm_doc_load_file(&doc, DATA "syntax.yaml", &e);
    long printed = trap_end(&t);
    ck_assert_int_eq(rc, -MM_EINPUT);
    assert_err(&e, DATA "syntax.yaml", 4, "", "");
    ck_assert_msg(e.msg[0] != '\0', "no message");
    ck_assert_msg(printed == 0, "the parser printed %ld bytes to stderr", printed);
}
END_TEST

START_TEST(doc_string_syntax_error)
{
    stderr_trap t;
    mm_doc doc;
    mm_err e;
    mm_err_clear(&e);
    trap_begin(&t);
    int rc = mm_doc_load_string(&doc, "inline.yaml", "a: 1\nb: [1, 2\nc: 3\n", &e);
    long printed = trap_end(&t);
    ck_assert_int_eq(rc, -MM_EINPUT);
    ck_assert_str_eq(e.file, "inline.yaml");
    ck_assert_int_gt(e.line, 1);
    ck_assert_int_eq(printed, 0);
    /* A duplicate key is an error too, at the second occurrence. */
    mm_err_clear(&e);
    ck_assert_int_eq(mm_doc_load_string(&doc, "dup.yaml", "a: 1\nb: 2\na: 3\n", &e),
                     -MM_EINPUT);
    ck_assert_int_eq(e.line, 3);
}
END_TEST

START_TEST(doc_empty_string)
{
    mm_doc doc;
    mm_err e;
    ck_assert_int_eq(mm_doc_load_string(&doc, "empty.yaml", "", &e), 0);
    ck_assert_ptr_null(mm_doc_root(&doc));
    mm_doc_free(&doc);
}
END_TEST

START_TEST(doc_comments_only_and_two_documents)
{
    mm_doc doc;
    mm_err e;
    mm_err_clear(&e);
    ck_assert_int_eq(mm_doc_load_string(&doc, "c.yaml", "# nothing but a comment\n", &e), 0);
    ck_assert_ptr_null(mm_doc_root(&doc));
    mm_doc_free(&doc);
    stderr_trap t;
    trap_begin(&t);
    int rc = mm_doc_load_string(&doc, "two.yaml", "a: 1\n---\nb: 2\n", &e);
    long printed = trap_end(&t);
    ck_assert_int_eq(rc, -MM_EINPUT);
    assert_err(&e, "two.yaml", 3, "", "a second YAML document");
    ck_assert_int_eq(printed, 0);
    /* garbage after the document */
    ck_assert_int_eq(mm_doc_load_string(&doc, "junk.yaml", "a: 1\nb: 2\n]\n", &e),
                     -MM_EINPUT);
    ck_assert_str_eq(e.file, "junk.yaml");
    ck_assert_int_eq(e.line, 3);
}
END_TEST

START_TEST(doc_json_config)
{
    mm_doc doc;
    mm_err e;
    mm_err_clear(&e);
    ck_assert_int_eq(mm_doc_load_file(&doc, DATA "hf_config.json", &e), 0);
    mm_node *root = mm_doc_root(&doc);
    ck_assert_ptr_nonnull(root);
    int64_t layers = 0, hidden = 0;
    bool found = false;
    ck_assert_int_eq(mm_node_int(&doc, root, "num_hidden_layers", "num_hidden_layers", 1,
                                 1000, &layers, &found, &e), 0);
    ck_assert(found);
    ck_assert_int_eq(layers, 32);
    ck_assert_int_eq(mm_node_line(mm_node_get(root, "num_hidden_layers")), 12);
    ck_assert_int_eq(mm_node_key_line(root, "num_hidden_layers"), 12);
    ck_assert_int_eq(mm_node_int(&doc, root, "hidden_size", "hidden_size", 1, INT64_MAX,
                                 &hidden, NULL, &e), 0);
    ck_assert_int_eq(hidden, 4096);
    double eps = 0;
    ck_assert_int_eq(mm_node_double(&doc, root, "rms_norm_eps", "rms_norm_eps", 0, 1, &eps,
                                    NULL, &e), 0);
    ck_assert_double_eq_tol(eps, 1e-5, 1e-12);
    char act[16];
    ck_assert_int_eq(mm_node_str(&doc, root, "hidden_act", "hidden_act", act, sizeof act,
                                 NULL, &e), 0);
    ck_assert_str_eq(act, "silu");
    bool tie = true;
    ck_assert_int_eq(mm_node_bool(&doc, root, "tie_word_embeddings", "tie_word_embeddings",
                                  &tie, NULL, &e), 0);
    ck_assert(!tie);
    ck_assert(mm_node_is_null(mm_node_get(root, "rope_scaling")));
    /* A JSON string is not a number. */
    mm_err_clear(&e);
    ck_assert_int_eq(mm_node_int(&doc, root, "torch_dtype", "torch_dtype", 0, 10, &hidden,
                                 NULL, &e), -MM_EINPUT);
    assert_err(&e, DATA "hf_config.json", 17, "torch_dtype",
               "expected an integer, got 'float16'");
    /* A list item's line. */
    mm_node *arch = mm_node_get(root, "architectures");
    ck_assert_int_eq(mm_node_line(arch), 3);
    mm_doc_free(&doc);
}
END_TEST

/* ---- doc: typed getters -------------------------------------------------- */

typedef struct types_fixture {
    mm_doc doc;
    mm_node *root;
} types_fixture;

static void types_open(types_fixture *f)
{
    mm_err e;
    mm_err_clear(&e);
    ck_assert_int_eq(mm_doc_load_file(&f->doc, DATA "types.yaml", &e), 0);
    f->root = mm_doc_root(&f->doc);
    ck_assert_ptr_nonnull(f->root);
}

static void int_fails(types_fixture *f, const char *key, int line, const char *msg)
{
    mm_err e;
    mm_err_clear(&e);
    int64_t v = 123;
    ck_assert_int_eq(mm_node_int(&f->doc, f->root, key, key, INT64_MIN, INT64_MAX, &v, NULL,
                                 &e), -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", line, key, msg);
    ck_assert_int_eq(v, 123);
}

START_TEST(doc_int_getter)
{
    types_fixture f;
    types_open(&f);
    mm_err e;
    int64_t v = 0;
    bool found = false;
    ck_assert_int_eq(mm_node_int(&f.doc, f.root, "i_ok", "i_ok", 0, 100, &v, &found, &e), 0);
    ck_assert(found);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(mm_node_int(&f.doc, f.root, "i_neg", "i_neg", -10, 0, &v, NULL, &e), 0);
    ck_assert_int_eq(v, -7);
    /* absent: 0, found false, *out untouched */
    v = 5;
    ck_assert_int_eq(mm_node_int(&f.doc, f.root, "nope", "nope", 0, 9, &v, &found, &e), 0);
    ck_assert(!found);
    ck_assert_int_eq(v, 5);
    int_fails(&f, "i_float", 4, "expected an integer, got '1.5'");
    int_fails(&f, "i_word", 5, "expected an integer, got 'abc'");
    int_fails(&f, "i_bool", 6, "expected an integer, got 'true'");
    int_fails(&f, "i_quoted", 7, "expected an integer, got '8'");
    int_fails(&f, "i_big", 8, "does not fit in 64 bits");
    int_fails(&f, "s_null", 18, "expected an integer, got nothing (null)");
    int_fails(&f, "m_map", 22, "expected an integer, got a mapping");
    /* ranges */
    mm_err_clear(&e);
    ck_assert_int_eq(mm_node_int(&f.doc, f.root, "i_ok", "x.i_ok", 0, 3, &v, NULL, &e),
                     -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", 2, "x.i_ok", "must be between 0 and 3, got 42");
    ck_assert_int_eq(mm_node_int(&f.doc, f.root, "i_neg", "i_neg", 1, INT64_MAX, &v, NULL,
                                 &e), -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", 3, "i_neg", "must be >= 1, got -7");
    mm_doc_free(&f.doc);
}
END_TEST

START_TEST(doc_double_bool_str_enum)
{
    types_fixture f;
    types_open(&f);
    mm_err e;
    mm_err_clear(&e);
    double d = 0;
    ck_assert_int_eq(mm_node_double(&f.doc, f.root, "d_int", "d_int", 0, 10, &d, NULL, &e), 0);
    ck_assert_double_eq(d, 3.0);
    ck_assert_int_eq(mm_node_double(&f.doc, f.root, "d_float", "d_float", 0, 10, &d, NULL, &e),
                     0);
    ck_assert_double_eq(d, 2.5);
    ck_assert_int_eq(mm_node_double(&f.doc, f.root, "d_exp", "d_exp", 0, 1e12, &d, NULL, &e),
                     0);
    ck_assert_double_eq(d, 1e9);
    ck_assert_int_eq(mm_node_double(&f.doc, f.root, "d_word", "d_word", 0, 1, &d, NULL, &e),
                     -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", 12, "d_word", "expected a number, got 'fast'");
    ck_assert_int_eq(mm_node_double(&f.doc, f.root, "d_float", "d_float", 0, 1, &d, NULL, &e),
                     -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", 10, "d_float", "must be between 0 and 1, got 2.5");

    bool b = false;
    ck_assert_int_eq(mm_node_bool(&f.doc, f.root, "b_true", "b_true", &b, NULL, &e), 0);
    ck_assert(b);
    ck_assert_int_eq(mm_node_bool(&f.doc, f.root, "b_false", "b_false", &b, NULL, &e), 0);
    ck_assert(!b);
    ck_assert_int_eq(mm_node_bool(&f.doc, f.root, "b_num", "b_num", &b, NULL, &e), -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", 15, "b_num", "expected true or false, got '1'");

    char s[8];
    ck_assert_int_eq(mm_node_str(&f.doc, f.root, "s_plain", "s_plain", s, sizeof s, NULL, &e),
                     0);
    ck_assert_str_eq(s, "hello");
    ck_assert_int_eq(mm_node_str(&f.doc, f.root, "s_quoted", "s_quoted", s, sizeof s, NULL,
                                 &e), 0);
    ck_assert_str_eq(s, "1f1b");
    char tiny[4] = "xy";
    ck_assert_int_eq(mm_node_str(&f.doc, f.root, "s_plain", "s_plain", tiny, sizeof tiny, NULL,
                                 &e), -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", 16, "s_plain", "too long");
    ck_assert_str_eq(tiny, "xy");
    ck_assert_int_eq(mm_node_str(&f.doc, f.root, "s_null", "s_null", s, sizeof s, NULL, &e),
                     -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", 18, "s_null", "expected a string, got nothing (null)");

    int idx = -1;
    ck_assert_int_eq(mm_node_enum(&f.doc, f.root, "e_ok", "e_ok", mm_schedule_names, &idx,
                                  NULL, &e), 0);
    ck_assert_int_eq(idx, MM_SCHED_INTERLEAVED);
    ck_assert_int_eq(mm_node_enum(&f.doc, f.root, "e_bad", "e_bad", mm_schedule_names, &idx,
                                  NULL, &e), -MM_EINPUT);
    assert_err(&e, DATA "types.yaml", 20, "e_bad",
               "unknown value 'gpip' (did you mean 'gpipe'?)");
    ck_assert_msg(strstr(e.msg, "gpipe, 1f1b, interleaved, zb-h1"), "%s", e.msg);
    ck_assert_int_eq(mm_node_enum(&f.doc, f.root, "e_far", "e_far", mm_schedule_names, &idx,
                                  NULL, &e), -MM_EINPUT);
    ck_assert_msg(strstr(e.msg, "did you mean") == NULL, "%s", e.msg);
    ck_assert_msg(strstr(e.msg, "expected one of gpipe"), "%s", e.msg);
    ck_assert_int_eq(idx, MM_SCHED_INTERLEAVED);
    mm_doc_free(&f.doc);
}
END_TEST

START_TEST(doc_check_keys)
{
    mm_doc doc;
    mm_err e;
    mm_err_clear(&e);
    ck_assert_int_eq(mm_doc_load_string(&doc, "k.yaml",
                                        "a:\n  alpha: 1\n  betta: 2\nb: 5\n", &e), 0);
    mm_node *a = mm_node_get(mm_doc_root(&doc), "a");
    static const char *const allowed[] = {"alpha", "beta", NULL};
    ck_assert_int_eq(mm_node_check_keys(&doc, a, "a", allowed, &e), -MM_EINPUT);
    assert_err(&e, "k.yaml", 3, "a.betta", "unknown key 'betta' (did you mean 'beta'?)");
    static const char *const far[] = {"zzzzzz", NULL};
    ck_assert_int_eq(mm_node_check_keys(&doc, a, "", far, &e), -MM_EINPUT);
    assert_err(&e, "k.yaml", 2, "alpha", "unknown key 'alpha' (allowed keys: zzzzzz)");
    mm_node *b = mm_node_get(mm_doc_root(&doc), "b");
    ck_assert_int_eq(mm_node_check_keys(&doc, b, "b", allowed, &e), -MM_EINPUT);
    assert_err(&e, "k.yaml", 4, "b", "expected a mapping of keys, got '5'");
    ck_assert_int_eq(mm_node_check_keys(&doc, NULL, "c", allowed, &e), 0);
    mm_doc_free(&doc);
}
END_TEST

START_TEST(doc_lines)
{
    mm_doc doc;
    mm_err e;
    ck_assert_int_eq(mm_doc_load_string(&doc, "l.yaml",
                                        "# comment\n"
                                        "a:\n"
                                        "  b: []\n"
                                        "  c: [[], 1]\n"
                                        "  d:\n"
                                        "    - x\n"
                                        "  e: {}\n",
                                        &e), 0);
    mm_node *a = mm_node_get(mm_doc_root(&doc), "a");
    ck_assert_int_eq(mm_node_line(mm_doc_root(&doc)), 2);
    ck_assert_int_eq(mm_node_line(a), 3);
    ck_assert_int_eq(mm_node_line(mm_node_get(a, "b")), 3);
    ck_assert_int_eq(mm_node_line(mm_node_get(a, "c")), 4);
    ck_assert_int_eq(mm_node_line(mm_node_get(a, "d")), 6);
    ck_assert_int_eq(mm_node_key_line(a, "d"), 5);
    ck_assert_int_eq(mm_node_line(mm_node_get(a, "e")), 7);
    ck_assert_int_eq(mm_node_key_line(a, "zz"), 0);
    ck_assert_int_eq(mm_node_line(NULL), 0);
    mm_doc_free(&doc);
}
END_TEST

/* Aliases are the node they name (shared), merge keys put the named pairs
 * in; a cycle, an unknown anchor and a bad merge are refused at their line. */
START_TEST(doc_aliases_and_merge)
{
    mm_doc doc;
    mm_err e;
    mm_err_clear(&e);
    ck_assert_int_eq(mm_doc_load_string(&doc, "m.yaml",
                                        "a: &a {x: 1, y: 1}\n"
                                        "b: *a\n"
                                        "c:\n"
                                        "  <<: *a\n"
                                        "  y: 2\n",
                                        &e), 0);
    mm_node *root = mm_doc_root(&doc), *a = mm_node_get(root, "a");
    ck_assert_ptr_eq(mm_node_get(root, "b"), a);
    ck_assert(mm_node_is_shared(a));
    ck_assert(!mm_node_is_shared(root));
    mm_node *c = mm_node_get(root, "c");
    ck_assert_int_eq(mm_node_count(c), 2);
    ck_assert_str_eq(mm_node_scalar(mm_node_get(c, "x"), NULL), "1");
    ck_assert_str_eq(mm_node_scalar(mm_node_get(c, "y"), NULL), "2"); /* its own key wins */
    ck_assert_ptr_null(mm_node_get(c, "<<"));
    ck_assert_int_eq(mm_node_line(mm_node_get(c, "x")), 1); /* where it was written */
    ck_assert_int_eq(mm_node_col(mm_node_get(c, "x")), 11);
    mm_doc_free(&doc);
    ck_assert_int_eq(mm_doc_load_string(&doc, "m.yaml", "a: 1\nt: &t {s: *t}\n", &e), -MM_EINPUT);
    assert_err(&e, "m.yaml", 2, "", "alias '*t' inside the node it names (a cycle)");
    ck_assert_int_eq(mm_doc_load_string(&doc, "m.yaml", "a: 1\nb: [*nope]\n", &e), -MM_EINPUT);
    assert_err(&e, "m.yaml", 2, "", "unknown alias '*nope'");
    ck_assert_int_eq(mm_doc_load_string(&doc, "m.yaml", "a: 1\nb: {<<: 5}\n", &e), -MM_EINPUT);
    assert_err(&e, "m.yaml", 2, "<<", "a merge key takes a mapping");
}
END_TEST

/* Nodes as one-line YAML flow and JSON text (what a sweep hands to --set
 * and puts in a point's label). */
START_TEST(doc_emit_yaml_and_json)
{
    static const char *const cases[][3] = {
        {"8", "8", "8"},
        {"zero1", "zero1", "\"zero1\""},
        {"'c d'", "'c d'", "\"c d\""},
        {"'it''s'", "'it''s'", "\"it's\""},
        {"\"x\\\"y\\t\"", "\"x\\\"y\\t\"", "\"x\\\"y\\t\""},
        {"[1, 2,4]", "[1, 2, 4]", "[1, 2, 4]"},
        {"{a: 1, b: [x, ~]}", "{a: 1, b: [x, ~]}", "{\"a\": 1, \"b\": [\"x\", \"~\"]}"},
        {"{tp: 8, \"pp\": 2}", "{tp: 8, \"pp\": 2}", "{\"tp\": 8, \"pp\": 2}"},
        {"[01, .5, -0, 1e5, 1_000, true, True, null]", "[01, .5, -0, 1e5, 1_000, true, True, null]",
         "[\"01\", \".5\", -0, 1e5, \"1_000\", true, \"True\", null]"},
        {"{a: }", "{a: }", "{\"a\": null}"},
        {"\"\\x01\\e\"", "\"\\x01\\e\"", "\"\\u0001\\u001B\""},
        {"|\n  ab\n  cd\n", "\"ab\\ncd\\n\"", "\"ab\\ncd\\n\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mm_doc doc;
        mm_err e;
        ck_assert_msg(mm_doc_load_string(&doc, "v.yaml", cases[i][0], &e) == 0, "%s", e.msg);
        char *y = mm_node_emit(mm_doc_root(&doc), MM_EMIT_YAML);
        char *j = mm_node_emit(mm_doc_root(&doc), MM_EMIT_JSON);
        ck_assert_str_eq(y, cases[i][1]);
        ck_assert_str_eq(j, cases[i][2]);
        free(y);
        free(j);
        mm_doc_free(&doc);
    }
}
END_TEST

/* --set into a list entry that an alias shares changes that entry only
 * (an alias stands for a copy of what it names). */
START_TEST(set_into_shared_alias)
{
    static const char text[] =
        "model: models/llama-2-7b.json\n"
        "cluster: {topology: topologies/dgx-h100.yaml, nodes: 1}\n"
        "perturb:\n"
        "  - &p {kind: slow_gpu, gpus: [1], factor: 1.5}\n"
        "  - *p\n";
    char path[64];
    snprintf(path, sizeof path, "/tmp/mmsim-alias-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    fclose(f);
    const char *sets[] = {"perturb.1.factor=2.5"};
    mm_scenario *sc = load_ok(path, sets, 1);
    ck_assert_int_eq(sc->perturb.n, 2);
    ck_assert_double_eq(sc->perturb.e[0].factor, 1.5);
    ck_assert_double_eq(sc->perturb.e[1].factor, 2.5);
    drop(sc);
    unlink(path);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *doc = tcase_create("doc");
    tcase_add_test(doc, doc_missing_file);
    tcase_add_test(doc, doc_syntax_error_line_and_silence);
    tcase_add_test(doc, doc_aliases_and_merge);
    tcase_add_test(doc, doc_emit_yaml_and_json);
    tcase_add_test(doc, set_into_shared_alias);
    tcase_add_test(doc, doc_string_syntax_error);
    tcase_add_test(doc, doc_empty_string);
    tcase_add_test(doc, doc_comments_only_and_two_documents);
    tcase_add_test(doc, doc_json_config);
    tcase_add_test(doc, doc_int_getter);
    tcase_add_test(doc, doc_double_bool_str_enum);
    tcase_add_test(doc, doc_check_keys);
    tcase_add_test(doc, doc_lines);
    suite_add_tcase(s, doc);
    return s;
}

int main(void)
{
    const char *src = getenv("MMSIM_SRCDIR");
    if (src && src[0] && chdir(src) != 0) {
        perror(src);
        return 1;
    }
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
