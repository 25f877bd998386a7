/* mgscript.c - a Megatron-LM launch script read as bash would read it, up to
 * the command that starts training, without running anything (mgscript.h).
 *
 * Understood: comments, backslash-newline continuations, single and double
 * quotes, literal assignments (NAME=value, NAME+=value, `export`,
 * `declare`, `local`, `readonly` ones), bash arrays (NAME=( ... ),
 * NAME+=( ... )), and the expansions $NAME, ${NAME}, ${NAME[@]},
 * ${NAME[*]}, ${NAME[N]}, ${NAME:-default}, ${NAME-default}, ${NAME:=default},
 * with bash's splitting of an unquoted expansion into words (so
 * `MODEL_ARGS="--num-layers 32 ..."` then `$MODEL_ARGS` gives the
 * arguments one by one).  `&&`, `||`, `|` and `;` separate commands (they
 * are all read, as a run that succeeds runs them); redirections are
 * skipped; `unset` forgets a variable; other commands (echo, mkdir, cd,
 * set, ...) change no argument and are skipped.
 *
 * A variable the script does not assign (an environment variable, $1)
 * stays as written, `$NAME`, and so does a command substitution ($( ),
 * backquotes: nothing is run) as `$(command...)`: the argument reader
 * accepts it as the value of a costless argument (a path) and refuses it
 * anywhere else, naming it.  Integer arithmetic $(( )) (+ - * / %,
 * parentheses, variables) is computed; on an unknown variable its value is
 * unknown too.
 *
 * if/elif/else/fi and case/esac are followed where the test can be decided
 * ([ ], [[ ]], test: = == != on strings, -eq ... -ge on integers, -z, -n,
 * !, && and || between tests; case patterns as globs).  A test mmsim cannot
 * decide (a file test, an environment variable, a command's status): a
 * branch that reaches `exit` is a guard (the run that trains does not take
 * it; one that also sets a variable is refused); a branch that launches
 * training is taken (the run that trains takes it); any other such branch,
 * and every branch after it, is read with its assignments marked
 * undecided: a variable they assign, and every word and variable made from
 * it, carries the `if`'s line (mm_mg_word.undecided), a later test on it is
 * undecided too, and the reader of the arguments refuses such a word where
 * it changes the cost (a path or a logging option may depend on it).  An
 * `exit` the script surely reaches ends it.
 *
 * Refused, naming the line: loops (for, while, until, select), functions,
 * parameter operations other than the defaults above (${#N}, ${N%x}, ...),
 * subshells, `source`, `eval`; a second launch command, or none.  The
 * launch command is the one with a word ending in `.py` (python, torchrun,
 * srun ... ENTRY.py ARGS): its words after the entry script are the
 * arguments.
 * Not for: the arguments (megatron.c) or which entry scripts are modeled. */
#include "scenario/mgscript.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT (1 << 20) /* a script, and a word */
#define MAX_VARS 4096
#define MAX_DEPTH 8 /* nested ${A:-${B:-...}} defaults */

int mm_mg_words_push(mm_mg_words *ws, const char *text, size_t len, int line)
{
    if (ws->n == ws->cap) {
        int cap = ws->cap ? 2 * ws->cap : 64;
        mm_mg_word *p = realloc(ws->w, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        ws->w = p;
        ws->cap = cap;
    }
    char *t = malloc(len + 1);
    if (!t)
        return -1;
    memcpy(t, text, len);
    t[len] = '\0';
    ws->w[ws->n++] = (mm_mg_word){t, line, 0};
    return 0;
}

void mm_mg_words_free(mm_mg_words *ws)
{
    for (int i = 0; i < ws->n; i++)
        free(ws->w[i].text);
    free(ws->w);
    memset(ws, 0, sizeof *ws);
}

/* ---- variables ------------------------------------------------------------- */

typedef struct var {
    char *name;
    mm_mg_words v; /* a scalar is one element */
} var;

/* A growing word under construction. */
typedef struct wbuf {
    char *s;
    size_t n, cap;
    bool have; /* something was written, if only "" */
    int line;
} wbuf;

typedef struct sh {
    const char *path;
    const char *p; /* the text still to read */
    int line;
    mm_err *err;
    var *vars;
    int nvars, capvars;
    bool oom;
    /* the launch */
    mm_mg_words *args;
    char *entry;
    size_t elen;
    int *eline;
    int launched; /* its line, 0: none yet */
    mm_mg_words *notes; /* branches taken on tests not decided */
    /* control flow */
    char sep;     /* what ended the last command: '&' (&&), '|' (||), ';' */
    bool stopped; /* an `exit` the script surely reaches */
    struct frame *fr;
    int nfr;
} sh;

/* An if ... fi being read.  A branch runs, is skipped, or runs on a
 * condition mmsim cannot decide (mgscript.c's header says how it is read). */
#define MAX_IF 16
typedef struct frame {
    int line;
    bool cond;        /* reading the condition (before `then`) */
    int val;          /* the condition so far: 1, 0, -1 unknown */
    char pend;        /* the connector after the last test: '&', '|', ';' */
    bool done;        /* an earlier branch surely ran */
    bool skip_all;    /* the if is inside a skipped branch */
    int run;          /* this branch: 1 runs, 0 skipped, -1 undecided (read, assignments marked) */
    int effect;       /* undecided branch: line of its first assignment or launch */
    bool exits;       /* undecided branch: it reaches `exit` */
    bool launches;    /* undecided branch: it launches training (so the run that trains takes it) */
    bool unsure;      /* an earlier branch was undecided and neither exited nor launched */
    int word_undecided; /* case: the word depends on an undecided branch */
    bool is_case;     /* a case ... esac */
    bool patterns;    /* case: reading a pattern list (before its `)`) */
    char *word;       /* case: the word matched */
} frame;

static int fail(sh *s, int line, const char *what, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(sh *s, int line, const char *what, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mm_err_set(s->err, MM_EINPUT, s->path, line, what, "%s", msg);
}

static int oom(sh *s)
{
    return mm_err_set(s->err, MM_EINTERNAL, s->path, s->line, "", "out of memory");
}

/* Whether the command being read is skipped (a branch not taken). */
static bool skipping(const sh *s)
{
    for (int i = 0; i < s->nfr; i++)
        if (s->fr[i].skip_all || s->fr[i].cond || s->fr[i].run == 0)
            return true;
    return false;
}

/* The innermost undecided branch, or NULL. */
static frame *undecided(sh *s)
{
    for (int i = s->nfr - 1; i >= 0; i--)
        if (s->fr[i].run < 0)
            return &s->fr[i];
    return NULL;
}

/* The line of the innermost undecided branch that does not launch
 * training (whose assignments may not happen in the run that trains), or
 * 0. */
static int undecided_line(const sh *s)
{
    for (int i = s->nfr - 1; i >= 0; i--)
        if (s->fr[i].run < 0 && !s->fr[i].launches)
            return s->fr[i].line;
    return 0;
}

/* Text an undecided branch assigned is kept between marks, OPEN line
 * SEP ... CLOSE, through expansions, assignments and splitting (a split
 * inside marks closes the word's and opens the next one's), and taken out
 * of a command's words by strip_marks, which records the line in
 * mm_mg_word.undecided.  The script may not hold these bytes itself. */
#define MARK_OPEN '\x01'
#define MARK_SEP '\x02'
#define MARK_CLOSE '\x03'

static int mark(sh *s, char **text, int line)
{
    (void)s;
    size_t n = strlen(*text);
    char *t = malloc(n + 24);
    if (!t)
        return -1;
    snprintf(t, n + 24, "%c%d%c%s%c", MARK_OPEN, line, MARK_SEP, *text, MARK_CLOSE);
    free(*text);
    *text = t;
    return 0;
}

/* Takes the marks out of each word, keeping the first line they name. */
static void strip_marks(mm_mg_words *w)
{
    for (int i = 0; i < w->n; i++) {
        char *t = w->w[i].text, *o = t;
        for (char *p = t; *p; p++) {
            if (*p == MARK_OPEN) {
                int line = atoi(p + 1);
                if (!w->w[i].undecided)
                    w->w[i].undecided = line;
                while (*p && *p != MARK_SEP)
                    p++;
                if (!*p)
                    break;
            } else if (*p != MARK_CLOSE) {
                *o++ = *p;
            }
        }
        *o = '\0';
    }
}

static var *find_var(sh *s, const char *name, size_t len)
{
    for (int i = 0; i < s->nvars; i++)
        if (strlen(s->vars[i].name) == len && !memcmp(s->vars[i].name, name, len))
            return &s->vars[i];
    return NULL;
}

/* The variable `name` (created empty when new), or NULL when out of room. */
static var *get_var(sh *s, const char *name, size_t len)
{
    var *v = find_var(s, name, len);
    if (v)
        return v;
    if (s->nvars == MAX_VARS)
        return NULL;
    if (s->nvars == s->capvars) {
        int cap = s->capvars ? 2 * s->capvars : 32;
        var *p = realloc(s->vars, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        s->vars = p;
        s->capvars = cap;
    }
    char *n = malloc(len + 1);
    if (!n)
        return NULL;
    memcpy(n, name, len);
    n[len] = '\0';
    s->vars[s->nvars] = (var){n, {0}};
    return &s->vars[s->nvars++];
}

static void unset_var(sh *s, const char *name)
{
    var *v = find_var(s, name, strlen(name));
    if (v)
        mm_mg_words_free(&v->v);
}

/* ---- building words ------------------------------------------------------- */

static int put(sh *s, wbuf *b, const char *t, size_t n)
{
    if (b->n + n + 1 > MAX_TEXT)
        return fail(s, s->line, "", "a word longer than %d bytes", MAX_TEXT);
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p)
            return oom(s);
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, t, n);
    b->n += n;
    b->s[b->n] = '\0';
    b->have = true;
    return 0;
}

/* Ends the word being built: into `out` when it has anything. */
static int flush(sh *s, wbuf *b, mm_mg_words *out)
{
    int rc = 0;
    if (b->have && mm_mg_words_push(out, b->n ? b->s : "", b->n, b->line))
        rc = oom(s);
    b->n = 0;
    b->have = false;
    return rc;
}

static bool name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

/* Appends an expansion's value to the word: quoted, as is (an array's
 * elements still one word each); unquoted, split at blanks into words. */
static int put_value(sh *s, wbuf *b, mm_mg_words *out, const char *t, size_t n, bool quoted)
{
    if (quoted)
        return put(s, b, t, n);
    int rc = 0;
    char open[24] = ""; /* the marks this point of the text is inside, reopened after a split */
    size_t on = 0;
    bool fresh = false;
    for (size_t i = 0; i < n && !rc; i++) {
        char c = t[i];
        if (c == ' ' || c == '\t' || c == '\n') {
            if (b->have && on && !fresh)
                rc = put(s, b, (char[]){MARK_CLOSE}, 1);
            if (!rc && b->have && !fresh)
                rc = flush(s, b, out);
            fresh = true;
            b->line = s->line;
            continue;
        }
        if (fresh && on && (rc = put(s, b, open, on)))
            break;
        fresh = false;
        if (c == MARK_OPEN) {
            size_t k = i;
            while (k < n && t[k] != MARK_SEP)
                k++;
            on = k - i + 1 < sizeof open ? k - i + 1 : 0;
            memcpy(open, t + i, on);
        } else if (c == MARK_CLOSE) {
            on = 0;
        }
        rc = put(s, b, &c, 1);
    }
    return rc;
}

static int expand_text(sh *s, const char *t, size_t n, wbuf *b, int depth);

/* The value of a parameter expression (what is inside ${ }, or a plain
 * name) into the word.  `all`: an array's [@] or [*]. */
/* The [N], [@] or [*] after a parameter's name (e[*kp] is its '['): the
 * element N into *index, or *all; *kp moves past the ']'.  A part of
 * expand_param. */
static int read_index(sh *s, const char *e, size_t n, const char *name, size_t nlen, size_t *kp, long *index,
                      bool *all)
{
    size_t close = *kp + 1;
    while (close < n && e[close] != ']')
        close++;
    if (close == n)
        return fail(s, s->line, "", "unterminated [ in ${%.*s}", (int)n, e);
    const char *ix = e + *kp + 1;
    size_t ixn = close - *kp - 1;
    if (ixn == 1 && (ix[0] == '@' || ix[0] == '*'))
        *all = true;
    else {
        char num[16];
        if (ixn == 0 || ixn >= sizeof num)
            return fail(s, s->line, "", "index [%.*s] of ${%.*s} is not a number", (int)ixn, ix, (int)nlen, name);
        memcpy(num, ix, ixn);
        num[ixn] = '\0';
        char *end;
        *index = strtol(num, &end, 10);
        if (*end || *index < 0)
            return fail(s, s->line, "", "index [%s] of ${%.*s} is not a number", num, (int)nlen, name);
    }
    *kp = close + 1;
    return 0;
}

static int expand_param(sh *s, const char *e, size_t n, wbuf *b, mm_mg_words *out, bool quoted, int depth)
{
    size_t k = 0;
    if (n && e[0] >= '0' && e[0] <= '9') {
        while (k < n && e[k] >= '0' && e[k] <= '9')
            k++;
    } else {
        while (k < n && name_char(e[k]))
            k++;
    }
    if (k == 0)
        return fail(s, s->line, "", "the parameter expansion ${%.*s} is not read: write its value", (int)n, e);
    const char *name = e;
    size_t nlen = k;
    long index = -1;
    bool all = false;
    if (k < n && e[k] == '[') {
        int rc = read_index(s, e, n, name, nlen, &k, &index, &all);
        if (rc)
            return rc;
    }
    const char *dflt = NULL;
    size_t dlen = 0;
    bool colon = false;
    if (k < n) {
        colon = e[k] == ':';
        size_t op = k + (colon ? 1 : 0);
        if (op < n && (e[op] == '-' || e[op] == '=')) {
            dflt = e + op + 1;
            dlen = n - op - 1;
        } else {
            return fail(s, s->line, "", "the parameter operation in ${%.*s} is not read (only ${N:-default} is): "
                        "write its value", (int)n, e);
        }
    }
    var *v = find_var(s, name, nlen);
    bool set = v && v->v.n > 0;
    bool empty = !set || (v->v.n == 1 && !v->v.w[0].text[0]);
    if (dflt && (!set || (colon && empty))) {
        if (depth >= MAX_DEPTH)
            return fail(s, s->line, "", "defaults nested more than %d deep", MAX_DEPTH);
        wbuf d = {0};
        d.line = s->line;
        int rc = expand_text(s, dflt, dlen, &d, depth + 1);
        if (!rc)
            rc = put_value(s, b, out, d.s ? d.s : "", d.n, quoted);
        if (!rc)
            b->have = true;
        free(d.s);
        return rc;
    }
    if (!v) { /* not assigned by the script: kept as written */
        char mark[80];
        int m = snprintf(mark, sizeof mark, "$%.*s", (int)(nlen < 60 ? nlen : 60), name);
        return put(s, b, mark, (size_t)m);
    }
    if (index >= 0) {
        if (index < v->v.n)
            return put_value(s, b, out, v->v.w[index].text, strlen(v->v.w[index].text), quoted);
        b->have = b->have || quoted;
        return 0;
    }
    if (!all) {
        if (v->v.n)
            return put_value(s, b, out, v->v.w[0].text, strlen(v->v.w[0].text), quoted);
        b->have = b->have || quoted;
        return 0;
    }
    /* ${A[@]}: each element a word of its own (quoted: kept whole) */
    int rc = 0;
    for (int i = 0; i < v->v.n && !rc; i++) {
        if (i > 0 && (rc = flush(s, b, out)))
            break;
        b->line = v->v.w[i].line; /* where the element was written */
        rc = put_value(s, b, out, v->v.w[i].text, strlen(v->v.w[i].text), quoted);
        if (!rc && quoted)
            b->have = true;
    }
    return rc;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* ---- arithmetic $(( )) ------------------------------------------------------ */

/* Integer arithmetic as bash does it on the script's variables: + - * / %,
 * unary signs, parentheses, NAME, $NAME, ${NAME}.  A variable the script
 * does not assign (or one holding no number) makes the value unknown. */
typedef struct ar {
    sh *s;
    const char *p, *end;
    bool unknown;
    int rc;
    int depth;
} ar;

static long long ar_sum(ar *a);

static void ar_blanks(ar *a)
{
    while (a->p < a->end && (blank(*a->p) || *a->p == '\n'))
        a->p++;
}

static long long ar_bad(ar *a, const char *why)
{
    if (!a->rc)
        a->rc = fail(a->s, a->s->line, "$((", "arithmetic $(( )): %s", why);
    a->p = a->end;
    return 0;
}

static long long ar_var(ar *a, const char *name, size_t n)
{
    var *v = find_var(a->s, name, n);
    if (!v || v->v.n == 0) {
        a->unknown = true;
        return 0;
    }
    const char *t = v->v.w[0].text;
    if (!*t)
        return 0;
    char *endp;
    errno = 0;
    long long x = strtoll(t, &endp, 10);
    if (*endp || errno) {
        a->unknown = true;
        return 0;
    }
    return x;
}

static long long ar_prim(ar *a)
{
    ar_blanks(a);
    if (a->p >= a->end)
        return ar_bad(a, "an operand is missing");
    char c = *a->p;
    if (c == '(') {
        if (++a->depth > 32)
            return ar_bad(a, "parentheses nested too deep");
        a->p++;
        long long x = ar_sum(a);
        ar_blanks(a);
        if (a->p >= a->end || *a->p != ')')
            return ar_bad(a, "a ( without its )");
        a->p++;
        a->depth--;
        return x;
    }
    if (c >= '0' && c <= '9') {
        long long x = 0;
        while (a->p < a->end && *a->p >= '0' && *a->p <= '9') {
            if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *a->p - '0', &x))
                return ar_bad(a, "a number too large");
            a->p++;
        }
        return x;
    }
    bool brace = false;
    if (c == '$') {
        a->p++;
        if (a->p < a->end && *a->p == '{') {
            brace = true;
            a->p++;
        }
    }
    if (a->p < a->end && name_start(*a->p)) {
        const char *n = a->p;
        while (a->p < a->end && name_char(*a->p))
            a->p++;
        size_t len = (size_t)(a->p - n);
        if (brace) {
            if (a->p >= a->end || *a->p != '}')
                return ar_bad(a, "only ${NAME} is read inside it");
            a->p++;
        }
        return ar_var(a, n, len);
    }
    if (c == '$') { /* $1, $#, $RANDOM-like specials: not known */
        a->unknown = true;
        while (a->p < a->end && !blank(*a->p) && !strchr("+-*/%()", *a->p))
            a->p++;
        return 0;
    }
    return ar_bad(a, "only integers, variables, + - * / % and parentheses are read");
}

static long long ar_unary(ar *a)
{
    ar_blanks(a);
    if (a->p < a->end && (*a->p == '-' || *a->p == '+')) {
        bool neg = *a->p++ == '-';
        if (++a->depth > 64)
            return ar_bad(a, "signs nested too deep");
        long long x = ar_unary(a);
        a->depth--;
        if (neg && x == LLONG_MIN)
            return ar_bad(a, "overflow");
        return neg ? -x : x;
    }
    return ar_prim(a);
}

static long long ar_prod(ar *a)
{
    long long x = ar_unary(a);
    for (;;) {
        ar_blanks(a);
        if (a->rc || a->p >= a->end || !strchr("*/%", *a->p))
            return x;
        char op = *a->p++;
        long long y = ar_unary(a);
        if (op == '*') {
            if (__builtin_mul_overflow(x, y, &x))
                return ar_bad(a, "overflow");
        } else if (!a->unknown) {
            if (y == 0)
                return ar_bad(a, "division by zero");
            if (x == LLONG_MIN && y == -1)
                return ar_bad(a, "overflow");
            x = op == '/' ? x / y : x % y;
        }
    }
}

static long long ar_sum(ar *a)
{
    long long x = ar_prod(a);
    for (;;) {
        ar_blanks(a);
        if (a->rc || a->p >= a->end || (*a->p != '+' && *a->p != '-'))
            return x;
        char op = *a->p++;
        long long y = ar_prod(a);
        if (op == '+' ? __builtin_add_overflow(x, y, &x) : __builtin_sub_overflow(x, y, &x))
            return ar_bad(a, "overflow");
    }
}

/* The end of a $( ... ) or $(( ... )) at p (on its first '('): just past
 * its matching ')', quotes inside skipped; NULL when unterminated. */
static const char *close_paren(sh *s, const char *p)
{
    int nest = 0;
    for (; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        if (*p == '\'') {
            const char *q = strchr(p + 1, '\'');
            if (!q)
                return NULL;
            p = q;
            continue;
        }
        if (*p == '(')
            nest++;
        else if (*p == ')' && --nest == 0)
            return p + 1;
        (void)s;
    }
    return NULL;
}

static int count_lines(sh *s, const char *a, const char *b)
{
    for (; a < b; a++)
        s->line += *a == '\n';
    return 0;
}

/* An unknown value as one word without blanks: $((arithmetic)) with its
 * blanks dropped, $(command) or $(command...) when it has arguments. */
static int put_unknown(sh *s, wbuf *b, const char *t, size_t n, bool arith)
{
    if (put(s, b, "$(", 2))
        return -1;
    for (size_t i = 0; i < n; i++) {
        bool sp = blank(t[i]) || t[i] == '\n';
        if (sp && !arith) {
            while (i < n && (blank(t[i]) || t[i] == '\n'))
                i++;
            if (i < n && put(s, b, "...", 3))
                return -1;
            break;
        }
        if (!sp && put(s, b, t + i, 1))
            return -1;
    }
    return put(s, b, ")", 1);
}

/* Reads a `$` expansion at s->p (just past the `$`) into the word. */
static int expansion(sh *s, wbuf *b, mm_mg_words *out, bool quoted)
{
    const char *p = s->p;
    if (*p == '(') {
        const char *q = close_paren(s, p);
        if (!q)
            return fail(s, s->line, "$(", "unterminated $(");
        int line = s->line;
        count_lines(s, p, q);
        s->p = q;
        if (p[1] == '(' && q[-2] == ')') { /* $(( expr )) */
            ar a = {.s = s, .p = p + 2, .end = q - 2};
            int save = s->line;
            s->line = line;
            long long x = ar_sum(&a);
            ar_blanks(&a);
            if (!a.rc && a.p < a.end)
                ar_bad(&a, "only integers, variables, + - * / % and parentheses are read");
            s->line = save;
            if (a.rc)
                return a.rc;
            if (!a.unknown) {
                char num[32];
                int m = snprintf(num, sizeof num, "%lld", x);
                return put_value(s, b, out, num, (size_t)m, quoted);
            }
        }
        /* a command's output, or arithmetic on what the script does not
         * assign: unknown, kept as written (refused where a number is
         * needed, as an unassigned variable is) */
        return put_unknown(s, b, p + 1, (size_t)(q - p - 2), p[1] == '(');
    }
    if (*p == '{') {
        const char *q = p + 1;
        int nest = 1;
        while (*q && nest) {
            if (*q == '{')
                nest++;
            else if (*q == '}')
                nest--;
            else if (*q == '\n')
                return fail(s, s->line, "${", "unterminated ${");
            if (nest)
                q++;
        }
        if (!*q)
            return fail(s, s->line, "${", "unterminated ${");
        s->p = q + 1;
        return expand_param(s, p + 1, (size_t)(q - p - 1), b, out, quoted, 0);
    }
    if (name_start(*p) || (*p >= '0' && *p <= '9')) {
        const char *q = p;
        if (*q >= '0' && *q <= '9')
            q++; /* $1: one digit, as bash reads it */
        else
            while (name_char(*q))
                q++;
        s->p = q;
        return expand_param(s, p, (size_t)(q - p), b, out, quoted, 0);
    }
    if (*p && strchr("@*#?$!-", *p)) {
        char mark[3] = {'$', *p, '\0'};
        s->p = p + 1;
        return put(s, b, mark, 2);
    }
    return put(s, b, "$", 1); /* a lone dollar */
}

/* Scalar expansion of a default's text ("${A:-$B/x}"), no splitting. */
static int expand_text(sh *s, const char *t, size_t n, wbuf *b, int depth)
{
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '$' && i + 1 < n && name_start(t[i + 1])) {
            size_t k = i + 1;
            while (k < n && name_char(t[k]))
                k++;
            mm_mg_words none = {0};
            int rc = expand_param(s, t + i + 1, k - i - 1, b, &none, true, depth);
            mm_mg_words_free(&none);
            if (rc)
                return rc;
            i = k - 1;
            continue;
        }
        if (t[i] == '$' && i + 1 < n && t[i + 1] == '{') {
            size_t k = i + 2;
            int nest = 1;
            while (k < n && nest) {
                nest += t[k] == '{' ? 1 : t[k] == '}' ? -1 : 0;
                if (nest)
                    k++;
            }
            if (k >= n)
                return fail(s, s->line, "${", "unterminated ${ in a default");
            mm_mg_words none = {0};
            int rc = expand_param(s, t + i + 2, k - i - 2, b, &none, true, depth);
            mm_mg_words_free(&none);
            if (rc)
                return rc;
            i = k;
            continue;
        }
        if (t[i] == '$' && i + 1 < n && t[i + 1] == '(')
            return fail(s, s->line, "$(", "command substitution $( ) is not run by mmsim");
        if (t[i] == '`')
            return fail(s, s->line, "`", "command substitution (backquotes) is not run by mmsim");
        if (t[i] == '"' || t[i] == '\'')
            continue; /* quotes inside a default: their text */
        int rc = put(s, b, t + i, 1);
        if (rc)
            return rc;
    }
    b->have = true;
    return 0;
}

/* ---- words ---------------------------------------------------------------------- */

static bool ends_word(char c)
{
    return !c || blank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '(' ||
           c == ')';
}

/* `command` at s->p (just past the opening backquote): not run; kept as
 * written in the $( ) form, unknown as an unassigned variable is. */
static int backquote(sh *s, wbuf *b)
{
    const char *q = s->p;
    while (*q && *q != '`') {
        if (*q == '\\' && q[1])
            q++;
        q++;
    }
    if (!*q)
        return fail(s, s->line, "`", "unterminated ` (command substitution)");
    int rc = put_unknown(s, b, s->p, (size_t)(q - s->p), false);
    count_lines(s, s->p, q);
    s->p = q + 1;
    return rc;
}

/* One shell word at s->p into `out` (more than one when an unquoted
 * expansion splits). */
static int lex_word(sh *s, mm_mg_words *out)
{
    wbuf b = {0};
    b.line = s->line;
    int rc = 0;
    while (!rc && !ends_word(*s->p)) {
        char c = *s->p++;
        if (c == '\\') {
            if (*s->p == '\n') {
                s->p++;
                s->line++;
                continue;
            }
            if (*s->p)
                rc = put(s, &b, s->p++, 1);
            continue;
        }
        if (c == '\'') {
            const char *q = strchr(s->p, '\'');
            if (!q) {
                rc = fail(s, b.line, "'", "unterminated ' quote");
                break;
            }
            for (const char *t = s->p; t < q; t++)
                s->line += *t == '\n';
            rc = put(s, &b, s->p, (size_t)(q - s->p));
            b.have = true;
            s->p = q + 1;
            continue;
        }
        if (c == '"') {
            b.have = true;
            while (!rc && *s->p != '"') {
                char d = *s->p++;
                if (!d) {
                    rc = fail(s, b.line, "\"", "unterminated \" quote");
                    break;
                }
                if (d == '\n')
                    s->line++;
                if (d == '\\' && *s->p == '\n') {
                    s->p++;
                    s->line++;
                    continue;
                }
                if (d == '\\' && *s->p && strchr("\"\\$`", *s->p)) {
                    rc = put(s, &b, s->p++, 1);
                    continue;
                }
                if (d == '`') {
                    rc = backquote(s, &b);
                    continue;
                }
                if (d == '$') {
                    rc = expansion(s, &b, out, true);
                    continue;
                }
                rc = put(s, &b, &d, 1);
            }
            if (!rc)
                s->p++;
            continue;
        }
        if (c == '`') {
            rc = backquote(s, &b);
            continue;
        }
        if (c == '$') {
            rc = expansion(s, &b, out, false);
            continue;
        }
        rc = put(s, &b, &c, 1);
    }
    if (!rc)
        rc = flush(s, &b, out);
    free(b.s);
    return rc;
}

/* Blanks, continuations and comments before the next word. */
static void skip_blanks(sh *s)
{
    for (;;) {
        if (blank(*s->p))
            s->p++;
        else if (s->p[0] == '\\' && s->p[1] == '\n') {
            s->p += 2;
            s->line++;
        } else if (*s->p == '#') {
            while (*s->p && *s->p != '\n')
                s->p++;
        } else
            return;
    }
}

/* ---- commands ----------------------------------------------------------------- */

/* NAME= or NAME+= at s->p: its length, and *append. */
static size_t assignment(const char *p, bool *append)
{
    if (!name_start(*p))
        return 0;
    size_t k = 0;
    while (name_char(p[k]))
        k++;
    *append = p[k] == '+' && p[k + 1] == '=';
    if (*append)
        return k;
    return p[k] == '=' ? k : 0;
}

/* An assignment at s->p (NAME= or NAME+=, value a word or an array). */
/* An array's words after its '(' at s->p, until the ')' (newlines
 * allowed), into val; `line`: where the assignment began.  A part of
 * assign. */
static int read_array(sh *s, int line, mm_mg_words *val)
{
    int rc = 0;
    s->p++;
    for (;;) {
        skip_blanks(s);
        if (*s->p == '\n') {
            s->p++;
            s->line++;
            continue;
        }
        if (*s->p == ')') {
            s->p++;
            break;
        }
        if (!*s->p) {
            rc = fail(s, line, "(", "unterminated array ( ... )");
            break;
        }
        if (ends_word(*s->p)) {
            rc = fail(s, s->line, "", "'%c' inside an array is not read", *s->p);
            break;
        }
        if ((rc = lex_word(s, val)))
            break;
    }
    return rc;
}

static int assign(sh *s, size_t k, bool append)
{
    const char *name = s->p;
    int line = s->line;
    s->p += k + (append ? 2 : 1);
    mm_mg_words val = {0};
    int rc = 0;
    bool array = *s->p == '(';
    if (array) { /* words until ) */
        rc = read_array(s, line, &val);
    } else if (!ends_word(*s->p)) {
        /* a scalar: one word, not split (as bash assigns) */
        mm_mg_words parts = {0};
        rc = lex_word(s, &parts);
        wbuf b = {0};
        for (int i = 0; !rc && i < parts.n; i++) {
            rc = put(s, &b, parts.w[i].text, strlen(parts.w[i].text));
            if (!rc && i + 1 < parts.n)
                rc = put(s, &b, " ", 1);
        }
        if (!rc && mm_mg_words_push(&val, b.s ? b.s : "", b.n, line))
            rc = oom(s);
        free(b.s);
        mm_mg_words_free(&parts);
    } else if (mm_mg_words_push(&val, "", 0, line)) {
        rc = oom(s);
    }
    if (rc) {
        mm_mg_words_free(&val);
        return rc;
    }
    if (skipping(s)) { /* a branch not taken: read, not assigned */
        mm_mg_words_free(&val);
        return 0;
    }
    frame *f = undecided(s);
    if (f && !f->effect)
        f->effect = line;
    var *v = get_var(s, name, k);
    if (!v) {
        mm_mg_words_free(&val);
        return fail(s, line, "", "more than %d variables", MAX_VARS);
    }
    /* assigned in a branch mmsim could not decide: the value may be
     * another, so its text is marked (and every word made from it) */
    int branch = undecided_line(s);
    for (int i = 0; branch && i < val.n; i++)
        if (mark(s, &val.w[i].text, branch)) {
            mm_mg_words_free(&val);
            return oom(s);
        }
    if (!append)
        mm_mg_words_free(&v->v);
    if (append && !array && v->v.n > 0 && val.n == 1) {
        /* NAME+=text: the text appended to the (first) value */
        mm_mg_word *last = &v->v.w[0];
        size_t a = strlen(last->text), b = strlen(val.w[0].text);
        char *t = a + b < MAX_TEXT ? realloc(last->text, a + b + 1) : NULL;
        if (!t) {
            mm_mg_words_free(&val);
            return fail(s, line, "", "a value too long");
        }
        memcpy(t + a, val.w[0].text, b + 1);
        last->text = t;
        mm_mg_words_free(&val);
        return 0;
    }
    for (int i = 0; i < val.n; i++)
        if (mm_mg_words_push(&v->v, val.w[i].text, strlen(val.w[i].text), val.w[i].line)) {
            mm_mg_words_free(&val);
            return oom(s);
        }
    mm_mg_words_free(&val);
    return 0;
}

static const char *const refused_words[] = {"for", "while", "until", "do", "done", "esac", "select",
                                            "function", "{", "}", "[[", "((", NULL};

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* A finished command: a declaration, unset, a launch, or nothing. */
static int run_command(sh *s, mm_mg_words *w, int line)
{
    if (!w->n)
        return 0;
    const char *cmd = w->w[0].text;
    if (!strcmp(cmd, "source") || !strcmp(cmd, "."))
        return fail(s, line, cmd, "`%s` reads another file, which mmsim does not follow: write its variables here",
                    cmd);
    if (!strcmp(cmd, "eval"))
        return fail(s, line, cmd, "`eval` is not run by mmsim: write the command it makes");
    if (!strcmp(cmd, "exit")) {
        frame *f = undecided(s);
        if (f) {
            if (f->effect)
                return fail(s, line, "exit",
                            "the branch of the `if` on line %d, on a condition mmsim cannot decide, sets variables "
                            "(line %d) and exits: write the branch to simulate", f->line, f->effect);
            f->exits = true;
        } else {
            s->stopped = true;
        }
        return 0;
    }
    if (!strcmp(cmd, "echo") || !strcmp(cmd, "printf"))
        return 0;
    if (!strcmp(cmd, "unset")) {
        for (int i = 1; i < w->n; i++)
            unset_var(s, w->w[i].text);
        return 0;
    }
    int entry = -1;
    for (int i = 0; i < w->n && entry < 0; i++) {
        size_t n = strlen(w->w[i].text);
        if (n > 3 && !strcmp(w->w[i].text + n - 3, ".py") && w->w[i].text[0] != '-' &&
            !strpbrk(w->w[i].text, " \t\n"))
            entry = i;
    }
    if (entry < 0)
        return 0; /* mkdir, cd, set, ...: no arguments */
    frame *f = undecided(s);
    if (f && !f->effect)
        f->effect = w->w[entry].line;
    for (int i = 0; i < s->nfr; i++) /* the run that trains takes every branch it is in */
        if (s->fr[i].run < 0)
            s->fr[i].launches = true;
    if (s->launched)
        return fail(s, w->w[entry].line, base(w->w[entry].text),
                    "a second launch command (the first on line %d): mmsim reads one; keep the one to simulate",
                    s->launched);
    s->launched = w->w[entry].line;
    snprintf(s->entry, s->elen, "%s", w->w[entry].text);
    *s->eline = w->w[entry].line;
    for (int i = entry + 1; i < w->n; i++) {
        if (mm_mg_words_push(s->args, w->w[i].text, strlen(w->w[i].text), w->w[i].line))
            return oom(s);
        s->args->w[s->args->n - 1].undecided = w->w[i].undecided;
    }
    return 0;
}

static bool declares(const mm_mg_words *w)
{
    static const char *const decl[] = {"export", "declare", "typeset", "local", "readonly", NULL};
    if (w->n < 1)
        return false;
    for (int i = 0; decl[i]; i++)
        if (!strcmp(w->w[0].text, decl[i]))
            return true;
    return false;
}

/* ---- if ... fi ------------------------------------------------------------------ */

static bool unknown_word(const char *t)
{
    return strchr(t, '$') != NULL; /* an unassigned variable or a command's output, kept as written */
}

static int int_of(const char *t, long long *x)
{
    char *end;
    errno = 0;
    *x = strtoll(t, &end, 10);
    return *t && !*end && !errno ? 0 : -1;
}

/* A test's value: 1 true, 0 false, -1 what mmsim cannot decide (a file, the
 * environment, a command's status). */
static int test_value(mm_mg_words *w)
{
    int i = 0, n = w->n, neg = 0;
    while (i < n && !strcmp(w->w[i].text, "!")) {
        neg ^= 1;
        i++;
    }
    if (i == n)
        return -1;
    const char *c = w->w[i].text;
    bool dbl = !strcmp(c, "[[");
    if (!strcmp(c, "true") || !strcmp(c, "false")) {
        int v = c[0] == 't';
        return neg ? !v : v;
    }
    if (!dbl && strcmp(c, "[") && strcmp(c, "test"))
        return -1; /* a command's exit status */
    i++;
    if (strcmp(c, "test")) {
        if (n <= i || strcmp(w->w[n - 1].text, dbl ? "]]" : "]"))
            return -1;
        n--;
    }
    while (i < n && !strcmp(w->w[i].text, "!")) {
        neg ^= 1;
        i++;
    }
    const char *a = i < n ? w->w[i].text : NULL, *op = i + 1 < n ? w->w[i + 1].text : NULL;
    const char *b = i + 2 < n ? w->w[i + 2].text : NULL;
    int v = -1;
    if (n - i == 0)
        v = 0;
    else if (n - i == 1)
        v = unknown_word(a) ? -1 : a[0] != '\0';
    else if (n - i == 2) {
        if (!strcmp(a, "-z") || !strcmp(a, "-n"))
            v = unknown_word(op) ? -1 : (op[0] == '\0') == (a[1] == 'z');
        /* file tests (-d, -f, ...) and the rest: not decided */
    } else if (n - i == 3) {
        if (unknown_word(a) || unknown_word(b))
            v = -1;
        else if (!strcmp(op, "=") || !strcmp(op, "==") || !strcmp(op, "!=")) {
            bool eq = dbl && strpbrk(b, "*?[") ? fnmatch(b, a, 0) == 0 : !strcmp(a, b);
            v = op[0] == '!' ? !eq : eq;
        } else if (op[0] == '-') {
            long long x, y;
            static const char *const ops[] = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"};
            for (int k = 0; k < 6; k++)
                if (!strcmp(op, ops[k]) && !int_of(a, &x) && !int_of(b, &y)) {
                    bool r[] = {x == y, x != y, x < y, x <= y, x > y, x >= y};
                    v = r[k];
                }
        }
    }
    return v < 0 ? -1 : neg ? !v : v;
}

static int and3(int a, int b)
{
    return a == 0 || b == 0 ? 0 : a == 1 && b == 1 ? 1 : -1;
}

static int or3(int a, int b)
{
    return a == 1 || b == 1 ? 1 : a == 0 && b == 0 ? 0 : -1;
}

static void pop_frame(sh *s)
{
    free(s->fr[s->nfr - 1].word);
    s->nfr--;
}

/* The branch being left: whether it ran, for the ones after it. */
static void end_branch(sh *s, frame *f)
{
    if (f->run < 0 && !s->oom) {
        char msg[240];
        const char *how = f->exits ? "exits, so the run that trains does not take it"
                          : f->launches ? "launches training, so the run that trains takes it"
                          : f->effect ? "assigns variables, read as undecided: an argument that depends on them is "
                                        "refused where it changes the cost"
                                      : "sets nothing";
        int m = snprintf(msg, sizeof msg, "the %s on line %d tests what mmsim cannot decide; its branch %s",
                         f->is_case ? "`case`" : "`if`", f->line, how);
        bool again = s->notes->n && !strcmp(s->notes->w[s->notes->n - 1].text, msg); /* its else, the same */
        if (!again && mm_mg_words_push(s->notes, msg, (size_t)m, f->line))
            s->oom = true;
    }
    if (f->run == 1 || (f->run < 0 && f->launches))
        f->done = true;
    else if (f->run < 0 && !f->exits)
        f->unsure = true; /* the branches after it are undecided too */
}

/* if / elif / then / else / fi at the start of a command. */
static int keyword(sh *s, const char *kw, int line)
{
    frame *f = s->nfr ? &s->fr[s->nfr - 1] : NULL;
    if (!strcmp(kw, "if")) {
        if (s->nfr == MAX_IF)
            return fail(s, line, kw, "if nested more than %d deep", MAX_IF);
        if (!s->fr && !(s->fr = calloc(MAX_IF, sizeof *s->fr)))
            return oom(s);
        bool skip = skipping(s);
        s->fr[s->nfr++] = (frame){.line = line, .cond = true, .val = -2, .pend = ';', .skip_all = skip};
        return 0;
    }
    if (!f || f->is_case)
        return fail(s, line, kw, "`%s` without an `if`", kw);
    if (!strcmp(kw, "then")) {
        if (!f->cond || f->val == -2)
            return fail(s, line, kw, "`then` without a condition");
        f->cond = false;
        f->run = f->skip_all || f->done ? 0 : f->unsure && f->val ? -1 : f->val;
        f->effect = 0;
        f->exits = false;
        f->launches = false;
        return 0;
    }
    if (f->cond)
        return fail(s, line, kw, "`%s` before `then` (the `if` on line %d)", kw, f->line);
    end_branch(s, f);
    if (!strcmp(kw, "elif")) {
        f->cond = true;
        f->val = -2;
        f->pend = ';';
        f->run = 0;
    } else if (!strcmp(kw, "else")) {
        f->run = f->skip_all || f->done ? 0 : f->unsure ? -1 : 1;
        f->effect = 0;
        f->exits = false;
        f->launches = false;
    } else { /* fi */
        pop_frame(s);
    }
    return 0;
}

/* `case WORD in`: a frame whose branches are its pattern lists. */
static int case_header(sh *s, mm_mg_words *w, int line)
{
    if (w->n != 2 || strcmp(w->w[1].text, "in"))
        return fail(s, line, "case", "`case WORD in` is the form read");
    if (s->nfr == MAX_IF)
        return fail(s, line, "case", "if/case nested more than %d deep", MAX_IF);
    if (!s->fr && !(s->fr = calloc(MAX_IF, sizeof *s->fr)))
        return oom(s);
    char *word = strdup(w->w[0].text);
    if (!word)
        return oom(s);
    bool skip = skipping(s);
    s->fr[s->nfr++] = (frame){.line = line, .is_case = true, .patterns = true, .skip_all = skip, .word = word,
                              .word_undecided = w->w[0].undecided};
    return 0;
}

/* A case's pattern list at s->p, up to its `)`: which branch runs.  An
 * unknown word (or one an undecided branch set) matches undecided. */
static int case_patterns(sh *s, frame *f)
{
    int line = s->line;
    if (*s->p == '(')
        s->p++;
    int v = 0;
    for (;;) {
        skip_blanks(s);
        mm_mg_words pat = {0};
        int rc = ends_word(*s->p) ? fail(s, s->line, ")", "a case pattern is missing") : lex_word(s, &pat);
        strip_marks(&pat);
        if (rc) {
            mm_mg_words_free(&pat);
            return rc;
        }
        for (int i = 0; i < pat.n && v != 1; i++) {
            if (unknown_word(f->word) || unknown_word(pat.w[i].text) || f->word_undecided || pat.w[i].undecided)
                v = -1;
            else if (fnmatch(pat.w[i].text, f->word, 0) == 0)
                v = 1;
        }
        mm_mg_words_free(&pat);
        skip_blanks(s);
        if (*s->p == '|') {
            s->p++;
            continue;
        }
        if (*s->p != ')')
            return fail(s, line, "case", "a case pattern list not ended by `)`");
        s->p++;
        break;
    }
    f->patterns = false;
    f->run = f->skip_all || f->done ? 0 : f->unsure && v ? -1 : v;
    f->effect = 0;
    f->exits = false;
    f->launches = false;
    return 0;
}

/* A command of an if's condition: its test, joined to the ones before. */
static void condition(sh *s, mm_mg_words *w)
{
    frame *f = &s->fr[s->nfr - 1];
    if (!w->n)
        return;
    int v = test_value(w);
    for (int i = 0; i < w->n; i++)
        if (w->w[i].undecided)
            v = -1; /* a value an undecided branch may have set */
    f->val = f->val == -2 || f->pend == ';' ? v : f->pend == '&' ? and3(f->val, v) : or3(f->val, v);
    f->pend = s->sep;
}

/* At a command's start inside a case: its `esac`, or the patterns of its
 * next item.  A part of command. */
static int case_start(sh *s)
{
    int rc;
    frame *cf = s->nfr && s->fr[s->nfr - 1].is_case ? &s->fr[s->nfr - 1] : NULL;
    skip_blanks(s);
    if (cf && *s->p && *s->p != '\n') {
        const char *q = s->p;
        bool esac = !strncmp(q, "esac", 4) && ends_word(q[4]);
        if (esac) {
            s->p += 4;
            if (!cf->patterns)
                end_branch(s, cf);
            pop_frame(s);
        } else if (cf->patterns && (rc = case_patterns(s, cf))) {
            return rc;
        }
    }
    return 0;
}

/* A redirection and its target, skipped.  A part of command. */
static int redirection(sh *s)
{
    int rc = 0;
    while (*s->p == '<' || *s->p == '>' || *s->p == '&')
        s->p++;
    skip_blanks(s);
    mm_mg_words target = {0};
    if (!ends_word(*s->p))
        rc = lex_word(s, &target);
    mm_mg_words_free(&target);
    return rc;
}

/* A command's first word: `case`, a keyword of an if, or refused bash
 * control flow or a function definition.  A part of command. */
static int first_word(sh *s, mm_mg_words *w, bool *at_start, bool *is_case, int *line)
{
    int rc = 0;
    *at_start = false;
    const char *first = w->w[0].text;
    size_t fl = strlen(first);
    if (!strcmp(first, "case")) {
        *is_case = true;
        free(w->w[--w->n].text);
        *at_start = false;
        return 0;
    }
    if (!strcmp(first, "if") || !strcmp(first, "elif") || !strcmp(first, "then") || !strcmp(first, "else") ||
        !strcmp(first, "fi")) {
        rc = keyword(s, first, w->w[0].line);
        free(w->w[--w->n].text);
        *at_start = true;
        *line = 0;
        return rc;
    }
    bool in_cond = s->nfr && s->fr[s->nfr - 1].cond;
    for (int i = 0; refused_words[i]; i++)
        if (!strcmp(first, refused_words[i]) && !(in_cond && !strcmp(first, "[["))) {
            rc = fail(s, w->w[0].line, first,
                      "bash control flow (`%s`) is not read by mmsim: write the launch command out", first);
            break;
        }
    if (!rc && fl > 2 && !strcmp(first + fl - 2, "()"))
        rc = fail(s, w->w[0].line, first, "a function definition is not read by mmsim");
    return rc;
}

/* `;;`: the end of a case item, refused outside one.  A part of command. */
static int end_case_item(sh *s)
{
    frame *f = s->nfr ? &s->fr[s->nfr - 1] : NULL;
    if (!f || !f->is_case || f->patterns)
        return fail(s, s->line, ";;", "`;;` outside a case item");
    end_branch(s, f);
    f->patterns = true;
    return 0;
}

/* Reads and runs one command (to a newline, ;, &&, ||, | or &). */
static int command(sh *s)
{
    mm_mg_words w = {0};
    int rc = 0, line = 0;
    bool at_start = true, is_case = false, end_item = false;
    if ((rc = case_start(s)))
        return rc;
    for (;;) {
        skip_blanks(s);
        char c = *s->p;
        if (!c || c == '\n' || c == ';' || c == '|' || (c == '&' && s->p[1] != '>')) {
            s->sep = (c == '&' || c == '|') && s->p[1] == c ? c : ';';
            if (c == ';' && s->p[1] == ';') { /* ;; ends a case item */
                end_item = true;
                s->p++;
            }
            if (c == '\n')
                s->line++;
            if (c)
                s->p += (c == '&' || c == '|') && s->p[1] == c ? 2 : 1;
            break;
        }
        if (c == '<' || c == '>' || (c == '&' && s->p[1] == '>')) { /* a redirection and its target */
            if ((rc = redirection(s)))
                break;
            continue;
        }
        if (c == '(' || c == ')') {
            rc = fail(s, s->line, c == '(' ? "(" : ")",
                      "a subshell or function ( ) is not read: write the launch command plainly");
            break;
        }
        if (!line)
            line = s->line;
        bool append = false;
        size_t k = (at_start || declares(&w)) ? assignment(s->p, &append) : 0;
        if (k) {
            if ((rc = assign(s, k, append)))
                break;
            continue;
        }
        int before = w.n;
        if ((rc = lex_word(s, &w)))
            break;
        /* a digit word right before a redirection is its file descriptor (2>&1) */
        if (w.n == before + 1 && (*s->p == '>' || *s->p == '<') &&
            strspn(w.w[before].text, "0123456789") == strlen(w.w[before].text)) {
            free(w.w[--w.n].text);
            continue;
        }
        if (at_start && w.n > before && (rc = first_word(s, &w, &at_start, &is_case, &line)))
            break;
    }
    strip_marks(&w);
    if (!rc && is_case)
        rc = case_header(s, &w, line ? line : s->line);
    else if (!rc && s->nfr && s->fr[s->nfr - 1].cond)
        condition(s, &w);
    else if (!rc && !skipping(s))
        rc = run_command(s, &w, line ? line : s->line);
    if (!rc && end_item)
        rc = end_case_item(s);
    mm_mg_words_free(&w);
    return rc;
}

int mm_mg_script_read(const char *path, mm_mg_words *args, char *entry, size_t len, int *entry_line,
                      mm_mg_words *notes, mm_err *err)
{
    memset(args, 0, sizeof *args);
    memset(notes, 0, sizeof *notes);
    if (len)
        entry[0] = '\0';
    *entry_line = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mm_err_set(err, MM_EINPUT, path, 0, "--megatron-script", "cannot read: %s", strerror(errno));
    char *text = malloc(MAX_TEXT);
    size_t n = text ? fread(text, 1, MAX_TEXT - 1, f) : 0;
    fclose(f);
    if (!text)
        return mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory");
    text[n] = '\0';
    if (strlen(text) != n) {
        free(text);
        return mm_err_set(err, MM_EINPUT, path, 0, "--megatron-script", "a NUL byte: not a shell script");
    }
    for (size_t i = 0; i < n; i++)
        if (text[i] == MARK_OPEN || text[i] == MARK_SEP || text[i] == MARK_CLOSE) {
            int line = 1;
            for (size_t k = 0; k < i; k++)
                line += text[k] == '\n';
            int byte = text[i];
            free(text);
            return mm_err_set(err, MM_EINPUT, path, line, "--megatron-script",
                              "a control byte 0x0%d: not a shell script", byte);
        }
    sh s = {.path = path, .p = text, .line = 1, .err = err, .args = args, .entry = entry, .elen = len,
            .eline = entry_line, .notes = notes};
    int rc = 0;
    while (!rc && *s.p && !s.stopped)
        rc = command(&s);
    if (!rc && s.nfr)
        rc = fail(&s, s.fr[s.nfr - 1].line, s.fr[s.nfr - 1].is_case ? "case" : "if",
                  s.fr[s.nfr - 1].is_case ? "a `case` without its `esac`" : "an `if` without its `fi`");
    while (s.nfr)
        pop_frame(&s);
    free(s.fr);
    if (!rc && s.oom)
        rc = oom(&s);
    if (!rc && !s.launched)
        rc = mm_err_set(err, MM_EINPUT, path, 0, "--megatron-script",
                        "no launch command (python/torchrun ... ENTRY.py ARGS) in the script");
    for (int i = 0; i < s.nvars; i++) {
        free(s.vars[i].name);
        mm_mg_words_free(&s.vars[i].v);
    }
    free(s.vars);
    free(text);
    if (rc) {
        mm_mg_words_free(args);
        mm_mg_words_free(notes);
    }
    return rc;
}
