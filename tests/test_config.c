/* test_config.c - Check suite for reading input files (util/doc) and
 * scenarios (run/scenario): typed getters, error messages that name file,
 * line and key, `--set` overrides, defaults, and the canonical text.
 *
 * What it is for: pinning down what a user sees when a scenario is wrong
 * (every error test asserts the code, the file, the line, the key and the
 * words of the message), and that equal scenarios hash equal.
 * Not for: cross-file rules (degrees against GPU count and the like); the run
 * layer's suite covers those.  Data lives in tests/data/config/; tests run
 * from the source root (meson's workdir; MMSIM_SRCDIR is honoured too). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "scenario/keys.h"
#include "scenario/scenario.h"
#include "util/doc.h"
#include "util/err.h"

#define DATA "tests/data/config/"

/* ---- helpers ------------------------------------------------------------ */

/* Captures what the code under test writes to stderr (it must write
 * nothing). */
typedef struct stderr_trap {
    int saved;
    char path[64];
} stderr_trap;

static void trap_begin(stderr_trap *t)
{
    snprintf(t->path, sizeof t->path, "/tmp/mm_test_config_err_XXXXXX");
    int fd = mkstemp(t->path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    t->saved = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* Returns the number of bytes written to stderr since trap_begin. */
static long trap_end(stderr_trap *t)
{
    fflush(stderr);
    dup2(t->saved, 2);
    close(t->saved);
    FILE *f = fopen(t->path, "rb");
    long n = -1;
    if (f) {
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        fclose(f);
    }
    unlink(t->path);
    return n;
}

static void assert_err(const mm_err *e, const char *file, int line, const char *key,
                       const char *msg_part)
{
    char text[1024];
    mm_err_format(e, text, sizeof text);
    ck_assert_msg(e->code == MM_EINPUT, "code %d for: %s", e->code, text);
    ck_assert_msg(strcmp(e->file, file) == 0, "file '%s' != '%s' in: %s", e->file, file, text);
    ck_assert_msg(e->line == line, "line %d != %d in: %s", e->line, line, text);
    ck_assert_msg(strcmp(e->key, key) == 0, "key '%s' != '%s' in: %s", e->key, key, text);
    ck_assert_msg(strstr(e->msg, msg_part) != NULL, "'%s' not in: %s", msg_part, text);
}

/* Loads a scenario expected to fail; returns its error. */
static mm_err load_fail(const char *path, const char *const *sets, int n_sets)
{
    mm_scenario *sc = malloc(sizeof *sc);
    ck_assert_ptr_nonnull(sc);
    mm_err e;
    mm_err_clear(&e);
    int rc = mm_scenario_load(sc, path, sets, n_sets, &e);
    free(sc);
    ck_assert_int_eq(rc, -MM_EINPUT);
    return e;
}

/* Frees a scenario from load_ok. */
static void drop(mm_scenario *sc)
{
    mm_scenario_free(sc);
    free(sc);
}

static mm_scenario *load_ok(const char *path, const char *const *sets, int n_sets)
{
    mm_scenario *sc = malloc(sizeof *sc);
    ck_assert_ptr_nonnull(sc);
    mm_err e;
    mm_err_clear(&e);
    int rc = mm_scenario_load(sc, path, sets, n_sets, &e);
    char text[1024];
    mm_err_format(&e, text, sizeof text);
    ck_assert_msg(rc == 0, "load failed: %s", text);
    return sc;
}

/* Canonical text in a malloc'ed buffer (checks the snprintf-like length). */
static char *canon(const mm_scenario *sc)
{
    size_t n = mm_scenario_canonical(sc, NULL, 0);
    ck_assert_uint_gt(n, 100);
    char *buf = malloc(n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(mm_scenario_canonical(sc, buf, n + 1), n);
    ck_assert_uint_eq(strlen(buf), n);
    return buf;
}

static const char *key_file(const mm_scenario *sc, const char *key, int *line)
{
    for (int i = 0; i < sc->n_keys; i++)
        if (strcmp(sc->keys[i].key, key) == 0) {
            *line = sc->keys[i].line;
            return sc->keys[i].file;
        }
    return NULL;
}

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

/* ---- scenario: the default ---------------------------------------------- */

START_TEST(scenario_default_values)
{
    mm_scenario *sc = load_ok(NULL, NULL, 0);
    ck_assert_str_eq(sc->source, "<default>");
    ck_assert_str_eq(sc->model, "models/llava-ov-qwen2.5-7b.yaml");
    ck_assert_str_eq(sc->topology, "topologies/dgx-h100.yaml");
    ck_assert_int_eq(sc->nodes, 2);
    ck_assert_int_eq(sc->train.global_batch, 64);
    ck_assert_int_eq(sc->train.micro_batch, 1);
    ck_assert_int_eq(sc->train.seq_len, 4096);
    ck_assert_int_eq(sc->train.precision, MM_PREC_BF16);
    ck_assert_int_eq(sc->train.recompute, MM_RECOMPUTE_SELECTIVE);
    ck_assert(!sc->train.sequence_parallel);
    ck_assert_int_eq(sc->train.zero, 1);
    ck_assert_int_eq(sc->train.schedule, MM_SCHED_1F1B);
    ck_assert_int_eq(sc->train.overlap_grad_reduce, MM_TOVL_AUTO);
    ck_assert_int_eq(sc->train.overlap_param_gather, MM_TOVL_AUTO);
    ck_assert(!sc->train.tp_comm_overlap);
    ck_assert_int_eq(sc->train.n_frozen, 0);
    const mm_module_layout *l = &sc->parallel.llm;
    ck_assert(l->present);
    ck_assert_int_eq(l->lay.tp, 4);
    ck_assert_int_eq(l->lay.pp, 2);
    ck_assert_int_eq(l->lay.dp, 2);
    ck_assert_int_eq(l->lay.cp, 1);
    ck_assert_int_eq(l->lay.vpp, 1);
    ck_assert_int_eq(l->lay.ep, 1);
    ck_assert_int_eq(l->zero, -1);
    ck_assert_int_eq(l->lay.n_layers_per_stage, 0);
    ck_assert(sc->parallel.vision.present);
    ck_assert(sc->parallel.vision.lay.tp == 1 && sc->parallel.vision.lay.pp == 1 && sc->parallel.vision.lay.dp == 16);
    ck_assert(!sc->parallel.audio.present);
    ck_assert_int_eq(sc->parallel.placement, MM_PLACE_COLOCATED);
    ck_assert_int_eq(sc->workload.kind, MM_WORKLOAD_FIXED);
    ck_assert(sc->workload.images == 1 && sc->workload.tiles == 5 && sc->workload.text_tokens == 300);
    ck_assert_int_eq(sc->batching, MM_BATCH_SEQUENTIAL);
    ck_assert_int_eq(sc->network, MM_NET_FLOW);
    ck_assert_int_eq(sc->iterations, 2);
    ck_assert_uint_eq(sc->seed, 1);
    /* Keys of the default are recorded with their lines in the default text. */
    int line = -1;
    const char *file = key_file(sc, "parallel.llm.tp", &line);
    ck_assert_ptr_nonnull(file);
    ck_assert_str_eq(file, "<default>");
    ck_assert_int_gt(line, 1);
    drop(sc);
}
END_TEST

START_TEST(scenario_name_tables)
{
    ck_assert_str_eq(mm_precision_names[MM_PREC_FP8], "fp8");
    ck_assert_ptr_null(mm_precision_names[MM_PREC_COUNT]);
    ck_assert_str_eq(mm_recompute_names[MM_RECOMPUTE_SELECTIVE], "selective");
    ck_assert_str_eq(mm_schedule_names[MM_SCHED_ZB_H1], "zb-h1");
    ck_assert_ptr_null(mm_schedule_names[MM_SCHED_ZB_H1 + 1]);
    ck_assert_str_eq(mm_placement_names[MM_PLACE_HOMOGENEOUS], "homogeneous");
    ck_assert_str_eq(mm_batching_names[MM_BATCH_POST_BALANCE], "post-balance");
    ck_assert_ptr_null(mm_batching_names[MM_BATCH_POST_BALANCE + 1]);
    ck_assert_str_eq(mm_network_names[MM_NET_ANALYTIC], "analytic");
}
END_TEST

/* ---- scenario: files ----------------------------------------------------- */

START_TEST(scenario_full_file)
{
    mm_scenario *sc = load_ok(DATA "full.yaml", NULL, 0);
    ck_assert_str_eq(sc->source, DATA "full.yaml");
    ck_assert_int_eq(sc->nodes, 8);
    ck_assert_int_eq(sc->train.global_batch, 192);
    ck_assert_int_eq(sc->train.micro_batch, 2);
    ck_assert_int_eq(sc->train.seq_len, 2048);
    ck_assert_int_eq(sc->train.precision, MM_PREC_FP8);
    ck_assert_int_eq(sc->train.recompute, MM_RECOMPUTE_FULL);
    ck_assert(sc->train.sequence_parallel);
    ck_assert_int_eq(sc->train.zero, 2);
    ck_assert_int_eq(sc->train.schedule, MM_SCHED_INTERLEAVED);
    ck_assert(sc->train.overlap_grad_reduce == MM_TOVL_TRUE && sc->train.overlap_param_gather == MM_TOVL_TRUE &&
              sc->train.tp_comm_overlap);
    ck_assert_int_eq(sc->train.n_frozen, 2); /* sorted, repeats dropped */
    ck_assert_str_eq(sc->train.frozen[0], "audio");
    ck_assert_str_eq(sc->train.frozen[1], "vision");
    const mm_module_layout *l = &sc->parallel.llm;
    ck_assert(l->lay.tp == 4 && l->lay.pp == 4 && l->lay.cp == 1 && l->lay.dp == 3 && l->lay.vpp == 2 &&
              l->lay.ep == 1 && l->zero == 1);
    ck_assert_int_eq(l->lay.n_layers_per_stage, 4);
    ck_assert(l->lay.layers_per_stage[0] == 7 && l->lay.layers_per_stage[1] == 9 &&
              l->lay.layers_per_stage[2] == 9 && l->lay.layers_per_stage[3] == 7);
    const mm_module_layout *v = &sc->parallel.vision;
    ck_assert(v->present);
    ck_assert(v->lay.tp == 1 && v->lay.pp == 1 && v->lay.dp == 16 && v->lay.cp == 1 && v->zero == -1);
    ck_assert(!sc->parallel.audio.present);
    ck_assert_int_eq(sc->parallel.placement, MM_PLACE_DISJOINT);
    ck_assert_int_eq(sc->workload.kind, MM_WORKLOAD_FIXED);
    ck_assert(sc->workload.images == 1 && sc->workload.tiles == 5 &&
              sc->workload.text_tokens == 300);
    ck_assert_int_eq(sc->batching, MM_BATCH_POST_BALANCE);
    ck_assert_int_eq(sc->network, MM_NET_FLOW);
    ck_assert_int_eq(sc->iterations, 8);
    ck_assert_uint_eq(sc->seed, 42);
    int line = 0;
    ck_assert_str_eq(key_file(sc, "train.seq_len", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 7);
    ck_assert_str_eq(key_file(sc, "parallel.llm.dp", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 22);
    ck_assert_str_eq(key_file(sc, "cluster.nodes", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 3);
    ck_assert_str_eq(key_file(sc, "parallel.llm.layers_per_stage", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 26);
    drop(sc);
}
END_TEST

START_TEST(scenario_minimal_defaults)
{
    mm_scenario *sc = load_ok(DATA "minimal.yaml", NULL, 0);
    ck_assert_int_eq(sc->nodes, 1);
    ck_assert_int_eq(sc->train.micro_batch, 1);
    ck_assert_int_eq(sc->train.global_batch, 1); /* micro_batch x llm.dp */
    ck_assert_int_eq(sc->train.seq_len, 4096);
    ck_assert_int_eq(sc->train.recompute, MM_RECOMPUTE_NONE);
    ck_assert_int_eq(sc->train.zero, 0);
    const mm_module_layout *l = &sc->parallel.llm;
    ck_assert(l->present && l->lay.tp == 1 && l->lay.pp == 1 && l->lay.dp == 1 && l->lay.cp == 1 &&
              l->lay.vpp == 1 && l->lay.ep == 1 && l->zero == -1);
    ck_assert_int_eq(sc->network, MM_NET_FLOW); /* the default when a file omits it */
    ck_assert_int_eq(sc->iterations, 1);
    /* a default key fails with the scenario file and line 0 */
    mm_err e;
    ck_assert_int_eq(mm_scenario_fail(sc, &e, "parallel.llm.tp", "needs %d GPUs", 8),
                     -MM_EINPUT);
    assert_err(&e, DATA "minimal.yaml", 0, "parallel.llm.tp", "needs 8 GPUs");
    const char *sets[] = {"parallel.llm.dp=4", "train.micro_batch=2"};
    drop(sc);
    sc = load_ok(DATA "minimal.yaml", sets, 2);
    ck_assert_int_eq(sc->train.global_batch, 8);
    drop(sc);
}
END_TEST

/* train.memory_reserve_gib: default 2, settable, in the canonical text,
 * and range-checked with the key named. */
START_TEST(scenario_memory_reserve)
{
    mm_scenario *sc = load_ok(NULL, NULL, 0);
    ck_assert(sc->train.memory_reserve_gib == 2.0);
    drop(sc);
    const char *sets[] = {"train.memory_reserve_gib=3.5"};
    sc = load_ok(NULL, sets, 1);
    ck_assert(sc->train.memory_reserve_gib == 3.5);
    char *text = canon(sc);
    ck_assert_ptr_nonnull(strstr(text, "  memory_reserve_gib: 3.5\n"));
    free(text);
    drop(sc);
    const char *bad[] = {"train.memory_reserve_gib=-1"};
    mm_err e = load_fail(NULL, bad, 1);
    ck_assert_str_eq(e.key, "train.memory_reserve_gib");
    ck_assert_str_eq(e.file, "--set");
}
END_TEST

START_TEST(scenario_missing_file)
{
    mm_err e = load_fail(DATA "missing.yaml", NULL, 0);
    assert_err(&e, DATA "missing.yaml", 0, "", "cannot open: No such file or directory");
}
END_TEST

START_TEST(scenario_syntax_error)
{
    stderr_trap t;
    trap_begin(&t);
    mm_err e = load_fail(DATA "syntax.yaml", NULL, 0);
    long printed = trap_end(&t);
    assert_err(&e, DATA "syntax.yaml", 4, "", "");
    ck_assert_int_eq(printed, 0);
}
END_TEST

START_TEST(scenario_unknown_root_key)
{
    mm_err e = load_fail(DATA "unknown_root.yaml", NULL, 0);
    assert_err(&e, DATA "unknown_root.yaml", 3, "trian",
               "unknown key 'trian' (did you mean 'train'?)");
}
END_TEST

START_TEST(scenario_unknown_layout_key)
{
    mm_err e = load_fail(DATA "unknown_llm.yaml", NULL, 0);
    assert_err(&e, DATA "unknown_llm.yaml", 5, "parallel.llm.tpp",
               "unknown key 'parallel.llm.tpp' (did you mean 'parallel.llm.tp'?)");
}
END_TEST

START_TEST(scenario_wrong_types)
{
    mm_err e = load_fail(DATA "seq_len_abc.yaml", NULL, 0);
    assert_err(&e, DATA "seq_len_abc.yaml", 5, "train.seq_len",
               "expected an integer, got 'abc'");
    e = load_fail(DATA "sp_3.yaml", NULL, 0);
    assert_err(&e, DATA "sp_3.yaml", 4, "train.sequence_parallel",
               "expected true or false, got '3'");
}
END_TEST

START_TEST(scenario_bad_degrees)
{
    mm_err e = load_fail(DATA "tp_0.yaml", NULL, 0);
    assert_err(&e, DATA "tp_0.yaml", 4, "parallel.llm.tp", "must be >= 1, got 0");
    e = load_fail(DATA "dp_neg.yaml", NULL, 0);
    assert_err(&e, DATA "dp_neg.yaml", 6, "parallel.llm.dp", "must be >= 1, got -2");
}
END_TEST

START_TEST(scenario_bad_enum)
{
    mm_err e = load_fail(DATA "schedule_bad.yaml", NULL, 0);
    assert_err(&e, DATA "schedule_bad.yaml", 4, "train.schedule",
               "unknown value '1f1c' (did you mean '1f1b'?)");
}
END_TEST

START_TEST(scenario_missing_model)
{
    mm_err e = load_fail(DATA "no_model.yaml", NULL, 0);
    assert_err(&e, DATA "no_model.yaml", 0, "model", "missing");
    /* ... which an override can supply */
    const char *sets[] = {"model=models/llama-3-8b.json"};
    mm_scenario *sc = load_ok(DATA "no_model.yaml", sets, 1);
    ck_assert_str_eq(sc->model, "models/llama-3-8b.json");
    ck_assert_int_eq(sc->train.seq_len, 1024);
    drop(sc);
}
END_TEST

/* ---- scenario: --set ------------------------------------------------------ */

START_TEST(set_values_parse)
{
    const char *sets[] = {
        "parallel.llm.layers_per_stage=[2,3,3,2]",
        "parallel.llm.pp=4",
        "model=models/qwen2.5-7b.json",
        "train.sequence_parallel=true",
        "train.frozen=[vision]",
        "workload={kind: fixed, images: 1, tiles: 5, text_tokens: 300}",
        "parallel.vision={tp: 1, dp: 4}",
        "seed=7",
    };
    mm_scenario *sc = load_ok(NULL, sets, 8);
    const mm_module_layout *l = &sc->parallel.llm;
    ck_assert_int_eq(l->lay.n_layers_per_stage, 4);
    ck_assert(l->lay.layers_per_stage[0] == 2 && l->lay.layers_per_stage[1] == 3 &&
              l->lay.layers_per_stage[2] == 3 && l->lay.layers_per_stage[3] == 2);
    ck_assert_int_eq(l->lay.pp, 4);
    ck_assert_int_eq(l->lay.tp, 4); /* untouched siblings stay */
    ck_assert_str_eq(sc->model, "models/qwen2.5-7b.json");
    ck_assert(sc->train.sequence_parallel);
    ck_assert_int_eq(sc->train.n_frozen, 1);
    ck_assert_str_eq(sc->train.frozen[0], "vision");
    ck_assert_int_eq(sc->workload.kind, MM_WORKLOAD_FIXED);
    ck_assert_int_eq(sc->workload.tiles, 5);
    ck_assert(sc->parallel.vision.present && sc->parallel.vision.lay.dp == 4);
    ck_assert_uint_eq(sc->seed, 7);
    int line = -1;
    ck_assert_str_eq(key_file(sc, "parallel.llm.pp", &line), "--set");
    ck_assert_int_eq(line, 0);
    ck_assert_str_eq(key_file(sc, "parallel.vision.dp", &line), "--set");
    ck_assert_str_eq(key_file(sc, "parallel.llm.tp", &line), "<default>");
    ck_assert_int_gt(line, 0);
    /* mm_scenario_fail names --set for an overridden key */
    mm_err e;
    mm_scenario_fail(sc, &e, "parallel.llm.layers_per_stage", "sums to %d, model has %d", 10,
                     32);
    assert_err(&e, "--set", 0, "parallel.llm.layers_per_stage", "sums to 10, model has 32");
    drop(sc);

    /* A later --set wins; a workload path is a string. */
    const char *sets2[] = {"train.seq_len=1024", "train.seq_len=2048",
                           "workload=workloads/mix.yaml"};
    sc = load_ok(NULL, sets2, 3);
    ck_assert_int_eq(sc->train.seq_len, 2048);
    ck_assert_int_eq(sc->workload.kind, MM_WORKLOAD_FILE);
    ck_assert_str_eq(sc->workload.path, "workloads/mix.yaml");
    drop(sc);
}
END_TEST

START_TEST(set_on_file)
{
    const char *sets[] = {"parallel.llm.dp=6", "cluster.nodes=16"};
    mm_scenario *sc = load_ok(DATA "full.yaml", sets, 2);
    ck_assert_int_eq(sc->parallel.llm.lay.dp, 6);
    ck_assert_int_eq(sc->parallel.llm.lay.tp, 4);
    ck_assert_int_eq(sc->nodes, 16);
    int line = -1;
    ck_assert_str_eq(key_file(sc, "parallel.llm.dp", &line), "--set");
    ck_assert_str_eq(key_file(sc, "parallel.llm.tp", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 19);
    mm_err e;
    mm_scenario_fail(sc, &e, "parallel.llm.tp", "tp %d does not divide heads", 4);
    assert_err(&e, DATA "full.yaml", 19, "parallel.llm.tp", "tp 4 does not divide heads");
    drop(sc);
    /* an error in the file itself still names the file */
    const char *sets2[] = {"train.seq_len=512"};
    mm_err e2 = load_fail(DATA "tp_0.yaml", sets2, 1);
    assert_err(&e2, DATA "tp_0.yaml", 4, "parallel.llm.tp", "must be >= 1");
}
END_TEST

START_TEST(set_errors)
{
    const char *s1[] = {"parallel.llm.tp=0"};
    mm_err e = load_fail(NULL, s1, 1);
    assert_err(&e, "--set", 0, "parallel.llm.tp", "must be >= 1, got 0");

    const char *s2[] = {"parallel.llm.tpp=4"};
    e = load_fail(NULL, s2, 1);
    assert_err(&e, "--set", 0, "parallel.llm.tpp",
               "unknown key 'parallel.llm.tpp' (did you mean 'parallel.llm.tp'?)");

    const char *s3[] = {"trian.seq_len=4096"};
    e = load_fail(NULL, s3, 1);
    assert_err(&e, "--set", 0, "trian", "unknown key 'trian' (did you mean 'train'?)");

    const char *s4[] = {"train.seq_len"};
    e = load_fail(NULL, s4, 1);
    assert_err(&e, "--set", 0, "", "expected KEY=VALUE");

    const char *s5[] = {"=4"};
    e = load_fail(NULL, s5, 1);
    assert_err(&e, "--set", 0, "", "empty key");

    const char *s6[] = {"train.seq_len=abc"};
    e = load_fail(NULL, s6, 1);
    assert_err(&e, "--set", 0, "train.seq_len", "expected an integer, got 'abc'");

    const char *s7[] = {"train.schedule=1f1c"};
    e = load_fail(NULL, s7, 1);
    assert_err(&e, "--set", 0, "train.schedule", "did you mean '1f1b'?");

    const char *s8[] = {"parallel.llm.layers_per_stage=[2,3,"};
    stderr_trap t;
    trap_begin(&t);
    e = load_fail(NULL, s8, 1);
    long printed = trap_end(&t);
    assert_err(&e, "--set", 0, "parallel.llm.layers_per_stage", "cannot read the value");
    ck_assert_int_eq(printed, 0);

    const char *s9[] = {"train.seq_len="};
    e = load_fail(NULL, s9, 1);
    assert_err(&e, "--set", 0, "train.seq_len", "no value");

    const char *s10[] = {"train..seq_len=5"};
    e = load_fail(NULL, s10, 1);
    assert_err(&e, "--set", 0, "train..seq_len", "empty part");

    const char *s11[] = {"parallel.llm.layers_per_stage=[2,x]"};
    e = load_fail(NULL, s11, 1);
    assert_err(&e, "--set", 0, "parallel.llm.layers_per_stage", "expected an integer, got 'x'");

    const char *s12[] = {"parallel.llm={tp: 2, dp: -1}"};
    e = load_fail(NULL, s12, 1);
    assert_err(&e, "--set", 0, "parallel.llm.dp", "must be >= 1, got -1");

    const char *s13[] = {"train.zero=4"};
    e = load_fail(NULL, s13, 1);
    assert_err(&e, "--set", 0, "train.zero", "must be between 0 and 3, got 4");

    const char *s15[] = {"workload=3"};
    e = load_fail(NULL, s15, 1);
    assert_err(&e, "--set", 0, "workload", "expected `text`, a mixture or trace file");

    const char *s16[] = {"workload={kind: fixed}"};
    e = load_fail(NULL, s16, 1);
    assert_err(&e, "--set", 0, "workload", "needs images, text_tokens or audio_seconds");

    const char *s14[] = {"workload={kind: fixd, images: 1}"};
    e = load_fail(NULL, s14, 1);
    assert_err(&e, "--set", 0, "workload.kind", "did you mean 'fixed'?");
}
END_TEST

/* ---- canonical text -------------------------------------------------------- */

START_TEST(canonical_stable)
{
    mm_scenario *a = load_ok(NULL, NULL, 0);
    const char *same[] = {"train.seq_len=4096", "parallel.llm.zero=1", "parallel.llm.cp=1"};
    mm_scenario *b = load_ok(NULL, same, 3);
    const char *diff[] = {"train.seq_len=2048"};
    mm_scenario *c = load_ok(NULL, diff, 1);
    char *ta = canon(a), *tb = canon(b), *tc = canon(c);
    ck_assert_str_eq(ta, tb);
    ck_assert_str_ne(ta, tc);
    ck_assert_ptr_nonnull(strstr(ta, "  seq_len: 4096\n"));
    ck_assert_ptr_nonnull(strstr(tc, "  seq_len: 2048\n"));
    ck_assert_ptr_nonnull(strstr(ta, "model: \"models/llava-ov-qwen2.5-7b.yaml\"\n"));
    ck_assert_ptr_nonnull(
        strstr(ta, "  llm: {tp: 4, pp: 2, cp: 1, dp: 2, vpp: 1, ep: 1, zero: 1, recompute: selective, sp: false, "
                   "layers_per_stage: []}\n"));
    ck_assert_ptr_nonnull(strstr(ta, "  vision: {tp: 1, pp: 1, cp: 1, dp: 16, vpp: 1, ep: 1, zero: 1, recompute: selective, sp: false, "
                                     "layers_per_stage: []}\n"));
    /* a module's sequence parallelism is part of the text */
    const char *spv[] = {"parallel.vision.sp=true"};
    mm_scenario *d = load_ok(NULL, spv, 1);
    char *tsp = canon(d);
    ck_assert_ptr_nonnull(strstr(tsp, "dp: 16, vpp: 1, ep: 1, zero: 1, recompute: selective, sp: true,"));
    free(tsp);
    drop(d);
    ck_assert_ptr_nonnull(strstr(ta, "  audio: null\n"));
    /* A short buffer is filled as far as it goes and terminated. */
    char small[16];
    size_t need = mm_scenario_canonical(a, small, sizeof small);
    ck_assert_uint_eq(need, strlen(ta));
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert_int_eq(strncmp(small, ta, sizeof small - 1), 0);
    free(ta);
    free(tb);
    free(tc);
    drop(a);
    drop(b);
    drop(c);
}
END_TEST

START_TEST(canonical_order_free_frozen)
{
    const char *s1[] = {"train.frozen=[vision, audio]"};
    const char *s2[] = {"train.frozen=[audio, vision, audio]"};
    mm_scenario *a = load_ok(NULL, s1, 1), *b = load_ok(NULL, s2, 1);
    char *ta = canon(a), *tb = canon(b);
    ck_assert_str_eq(ta, tb);
    ck_assert_ptr_nonnull(strstr(ta, "  frozen: [\"audio\", \"vision\"]\n"));
    free(ta);
    free(tb);
    drop(a);
    drop(b);
}
END_TEST

/* The canonical text is itself a scenario that loads to the same text. */
START_TEST(canonical_round_trip)
{
    const char *files[] = {NULL, DATA "full.yaml", DATA "minimal.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        mm_scenario *a = load_ok(files[i], NULL, 0);
        char *ta = canon(a);
        char path[] = "/tmp/mm_test_config_canon_XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, ta, strlen(ta)), (ssize_t)strlen(ta));
        close(fd);
        mm_scenario *b = load_ok(path, NULL, 0);
        unlink(path);
        char *tb = canon(b);
        ck_assert_str_eq(ta, tb);
        free(ta);
        free(tb);
        drop(a);
        drop(b);
    }
}
END_TEST

/* ---- runner --------------------------------------------------------------- */

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
         .micro_batch = 1, .recompute = MM_RECOMPUTE_SELECTIVE, .zero = 1, .schedule = MM_SCHED_1F1B},
        {.placement = -1, .llm = {2, 1, 1, 1, 8, 1}, .micro_batch = 4, .recompute = MM_RECOMPUTE_SELECTIVE,
         .zero = 1, .schedule = MM_SCHED_1F1B},
        {.placement = MM_PLACE_COLOCATED, .llm = {2, 2, 2, 1, 4, 1}, .vision = {2, 1, 1, 1, 8, 1}, .micro_batch = 2,
         .recompute = MM_RECOMPUTE_FULL, .zero = 0, .schedule = MM_SCHED_INTERLEAVED},
        {.placement = MM_PLACE_HOMOGENEOUS, .llm = {4, 2, 1, 1, 2, 1}, .micro_batch = 1,
         .recompute = MM_RECOMPUTE_SELECTIVE, .zero = 1, .schedule = MM_SCHED_ZB_H1},
        {.placement = MM_PLACE_PIPELINE, .llm = {2, 1, 1, 1, 6, 1}, .vision = {1, 1, 1, 1, 4, 1}, .micro_batch = 1,
         .recompute = MM_RECOMPUTE_NONE, .zero = 1, .schedule = MM_SCHED_GPIPE},
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

    TCase *sc = tcase_create("scenario");
    tcase_add_test(sc, scenario_default_values);
    tcase_add_test(sc, scenario_memory_reserve);
    tcase_add_test(sc, scenario_name_tables);
    tcase_add_test(sc, scenario_full_file);
    tcase_add_test(sc, scenario_minimal_defaults);
    tcase_add_test(sc, scenario_missing_file);
    tcase_add_test(sc, scenario_syntax_error);
    tcase_add_test(sc, scenario_unknown_root_key);
    tcase_add_test(sc, scenario_unknown_layout_key);
    tcase_add_test(sc, scenario_wrong_types);
    tcase_add_test(sc, scenario_bad_degrees);
    tcase_add_test(sc, scenario_bad_enum);
    tcase_add_test(sc, scenario_missing_model);
    suite_add_tcase(s, sc);

    TCase *set = tcase_create("set");
    tcase_add_test(set, set_values_parse);
    tcase_add_test(set, set_on_file);
    tcase_add_test(set, set_errors);
    suite_add_tcase(s, set);

    TCase *can = tcase_create("canonical");
    tcase_add_test(can, canonical_stable);
    tcase_add_test(can, canonical_order_free_frozen);
    tcase_add_test(can, canonical_round_trip);
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
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
