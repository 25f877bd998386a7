/* config_common.h - what the configuration suites (test_config.c,
 * test_scenario.c, test_scenario_keys.c) share: a stderr trap, the error
 * assertion (code, file, line, key, words), loading a scenario that must
 * fail or must load, its canonical text, and the file a key came from.
 * Static inline, so a suite that does not call one does not warn.
 * Not for: assertions of their own. */
#ifndef MM_TEST_CONFIG_COMMON_H
#define MM_TEST_CONFIG_COMMON_H

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

static inline void trap_begin(stderr_trap *t)
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
static inline long trap_end(stderr_trap *t)
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

static inline void assert_err(const mm_err *e, const char *file, int line, const char *key,
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
static inline mm_err load_fail(const char *path, const char *const *sets, int n_sets)
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
static inline void drop(mm_scenario *sc)
{
    mm_scenario_free(sc);
    free(sc);
}

static inline mm_scenario *load_ok(const char *path, const char *const *sets, int n_sets)
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
static inline char *canon(const mm_scenario *sc)
{
    size_t n = mm_scenario_canonical(sc, NULL, 0);
    ck_assert_uint_gt(n, 100);
    char *buf = malloc(n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(mm_scenario_canonical(sc, buf, n + 1), n);
    ck_assert_uint_eq(strlen(buf), n);
    return buf;
}

static inline const char *key_file(const mm_scenario *sc, const char *key, int *line)
{
    for (int i = 0; i < sc->n_keys; i++)
        if (strcmp(sc->keys[i].key, key) == 0) {
            *line = sc->keys[i].line;
            return sc->keys[i].file;
        }
    return NULL;
}

#endif
