/* runner.c - simulating a list of points into one store: planning (what is
 * already done, what is a duplicate), then running the rest in this process,
 * in forked workers, or across MPI ranks.  See runner.h for the guarantees.
 *
 * Why the parent never holds a database connection across fork(): SQLite's
 * locks are per process, and a child that closed an inherited connection
 * could checkpoint or unlink the WAL under the parent.  So the parent closes
 * its store before forking, each worker opens its own, and the parent opens
 * it again afterwards.
 * Not for: expanding sweep specs (sweep.c) or printing progress (the CLI). */
#include "plan/runner.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif


#include "mmsim_config.h"
#include "run/sim.h"
#include "run/limits.h"
#include "store/store.h"

#if MMSIM_MPI
#include <mpi.h>
#endif

#define CANON_MAX (1 << 20)

int mm_runner_have_mpi(void)
{
    return MMSIM_MPI;
}

void mm_runner_now(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* State shared by the phases of one mm_runner_run. */
typedef struct runner {
    const mm_runner_opts *o;
    const mm_point *pts;
    size_t n;
    mm_point_result *res;
    char **canon;       /* per point: canonical text, NULL when it did not load */
    long *follows;      /* per point: earlier point with the same text, or -1 */
    size_t *pending;    /* points to simulate, in order */
    size_t n_pending;
    mm_runner_progress prog;
    double t0;
    int64_t sweep_id;   /* o->sweep_id, or the sweep opened by plan_store */
} runner;

static void report(runner *r, int final)
{
    r->prog.elapsed_s = mono_s() - r->t0;
    r->prog.final = final;
    if (r->o->progress)
        r->o->progress(&r->prog, r->o->progress_ctx);
}

/* Counts a finished point. */
static void count(runner *r, size_t i)
{
    const mm_point_result *p = &r->res[i];
    r->prog.done++;
    if (p->status == MM_POINT_RAN)
        r->prog.ran++;
    else if (p->status == MM_POINT_SKIPPED)
        r->prog.skipped++;
    else if (p->status == MM_POINT_FAILED)
        r->prog.failed++;
    if (p->oom)
        r->prog.oom++;
}

static void set_failed(mm_point_result *p, const mm_err *e)
{
    p->status = MM_POINT_FAILED;
    p->run_id = 0;
    p->oom = 0;
    mm_err_format(e, p->error, sizeof p->error);
}

static mm_sweep_link link_of(const runner *r, size_t i)
{
    return (mm_sweep_link){.sweep_id = r->sweep_id, .point = (int64_t)i,
                           .axis_values = r->pts[i].label};
}

/* ---- one point -------------------------------------------------------- */

/* What simulating one point gave, before it is stored. */
typedef struct outcome {
    int ok;            /* 1: metrics valid; 0: failed (err) */
    mm_err err;
    mm_metrics m;
    char *canon;       /* canonical text (owned) */
    char source[256], model[512], topology[512];
    uint64_t seed;
} outcome;

static void outcome_free(outcome *oc)
{
    if (oc->ok)
        mm_metrics_free(&oc->m);
    free(oc->canon);
    memset(oc, 0, sizeof *oc);
}

/* Loads a point's scenario and writes its canonical text into a new string. */
static int load_point(const mm_point *pt, mm_scenario *sc, char **canon, mm_err *err)
{
    *canon = NULL;
    int rc = mm_scenario_load(sc, pt->scenario, pt->sets, pt->n_sets, err);
    if (rc < 0)
        return rc;
    size_t need = mm_scenario_canonical(sc, NULL, 0) + 1;
    if (need > CANON_MAX || !(*canon = malloc(need)))
        return mm_err_set(err, MM_EINTERNAL, sc->source, 0, NULL, "out of memory");
    mm_scenario_canonical(sc, *canon, need);
    return 0;
}

/* Simulates one point; never touches the store.  Failures of the scenario
 * or the simulation are the point's (oc->ok = 0), not the batch's. */
static void simulate(const mm_point *pt, outcome *oc)
{
    memset(oc, 0, sizeof *oc);
    mm_err_clear(&oc->err);
    mm_scenario *sc = malloc(sizeof *sc);
    mm_sim *sim = calloc(1, sizeof *sim); /* zeroed: mm_sim_free is safe on any path */
    if (!sc || !sim) {
        mm_err_set(&oc->err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    } else if (load_point(pt, sc, &oc->canon, &oc->err) == 0 &&
               mm_sim_prepare(sim, sc, &oc->err) == 0 &&
               mm_sim_check_limits(sim, &oc->err) == 0 &&
               mm_sim_run(sim, &oc->m, NULL, &oc->err) == 0) {
        oc->ok = 1;
        snprintf(oc->source, sizeof oc->source, "%s", sc->source);
        snprintf(oc->model, sizeof oc->model, "%s", sim->model_path);
        snprintf(oc->topology, sizeof oc->topology, "%s", sim->topology_path);
        oc->seed = sc->seed;
    }
    if (sim)
        mm_sim_free(sim); /* a mixture or trace workload's samples */
    free(sc);
    free(sim);
}

/* Stores one outcome (run + link, or the failed link) and fills res.
 * Returns 0, or -code when the store fails (the batch stops). */
static int store_outcome(const runner *r, mm_store *st, size_t i, const outcome *oc,
                         mm_err *err)
{
    mm_point_result *p = &r->res[i];
    mm_sweep_link link = link_of(r, i);
    if (!oc->ok) {
        set_failed(p, &oc->err);
        return r->sweep_id > 0 ? mm_store_link_sweep_run(st, &link, 0, p->error, err) : 0;
    }
    char created[32];
    mm_runner_now(created, sizeof created);
    mm_run_record rec = {
        .scenario_text = oc->canon, .scenario_source = oc->source, .model = oc->model,
        .topology = oc->topology, .seed = oc->seed,
        .version = r->o->version ? r->o->version : "unknown", .created_at = created,
    };
    int reused = 0;
    int64_t id = 0;
    int rc = mm_store_write_sweep_run(st, r->sweep_id > 0 ? &link : NULL, &rec, &oc->m, &id,
                                      &reused, err);
    if (rc < 0)
        return rc;
    p->status = reused ? MM_POINT_SKIPPED : MM_POINT_RAN;
    p->run_id = id;
    p->oom = oc->m.oom;
    p->error[0] = '\0';
    return 0;
}

static int run_one(const runner *r, mm_store *st, size_t i, mm_err *err)
{
    outcome oc;
    simulate(&r->pts[i], &oc);
    int rc = store_outcome(r, st, i, &oc, err);
    outcome_free(&oc);
    return rc;
}

/* ---- planning --------------------------------------------------------- */

typedef struct keyed {
    uint64_t hash;
    size_t i;
    const char *text;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    int c = strcmp(x->text, y->text);
    if (c)
        return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Loads every point's scenario (canonical text, or a failure) and marks
 * points whose text equals an earlier point's. */
static int plan_load(runner *r, mm_err *err)
{
    mm_scenario *sc = malloc(sizeof *sc);
    keyed *k = calloc(r->n ? r->n : 1, sizeof *k);
    if (!sc || !k) {
        free(sc);
        free(k);
        return mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    }
    size_t nk = 0;
    for (size_t i = 0; i < r->n; i++) {
        mm_err e;
        mm_err_clear(&e);
        r->follows[i] = -1;
        if (load_point(&r->pts[i], sc, &r->canon[i], &e) < 0) {
            if (e.code == MM_EINTERNAL && !strcmp(e.msg, "out of memory")) {
                free(sc);
                free(k);
                *err = e;
                return -MM_EINTERNAL;
            }
            set_failed(&r->res[i], &e);
            continue;
        }
        k[nk++] = (keyed){.hash = mm_store_hash(r->canon[i]), .i = i, .text = r->canon[i]};
    }
    qsort(k, nk, sizeof *k, cmp_keyed);
    for (size_t a = 1; a < nk; a++)
        if (k[a].hash == k[a - 1].hash && !strcmp(k[a].text, k[a - 1].text))
            r->follows[k[a].i] = r->follows[k[a - 1].i] >= 0 ? r->follows[k[a - 1].i]
                                                             : (long)k[a - 1].i;
    free(sc);
    free(k);
    return 0;
}

/* The oom flag of a stored run (0 when it cannot be read). */
static int run_oom(mm_store *st, int64_t id)
{
    int oom = 0;
    mm_err ignored;
    (void)mm_store_run_oom(st, id, &oom, &ignored);
    return oom;
}

/* Decides, with the database, which points still need a simulation. */
static int plan_store(runner *r, mm_err *err)
{
    mm_store *st = NULL;
    int rc = mm_store_open(&st, r->o->db, err);
    if (rc < 0)
        return rc;
    if (r->sweep_id == 0 && r->o->sweep_name) {
        char created[32];
        mm_runner_now(created, sizeof created);
        rc = mm_store_sweep_open(st, r->o->sweep_name,
                                 r->o->sweep_spec ? r->o->sweep_spec : "", (int64_t)r->n,
                                 r->o->sweep_axes, created, &r->sweep_id, &r->prog.resumed,
                                 err);
        r->prog.sweep_id = r->sweep_id;
    }
    for (size_t i = 0; rc == 0 && i < r->n; i++) {
        mm_point_result *p = &r->res[i];
        mm_sweep_link link = link_of(r, i);
        if (p->status == MM_POINT_FAILED) { /* its scenario did not load */
            if (r->sweep_id > 0)
                rc = mm_store_link_sweep_run(st, &link, 0, p->error, err);
            count(r, i);
            continue;
        }
        if (r->follows[i] >= 0)
            continue; /* settled after the point it follows */
        int64_t id = 0;
        int status = 0;
        if (r->sweep_id > 0)
            rc = mm_store_sweep_point(st, r->sweep_id, (int64_t)i, &id, &status, err);
        if (rc == 0 && status != 1)
            id = 0;
        if (rc == 0 && id == 0) {
            rc = mm_store_find_run(st, r->canon[i], &id, err);
            if (rc == 0 && id > 0 && r->sweep_id > 0)
                rc = mm_store_link_sweep_run(st, &link, id, NULL, err);
        }
        if (rc < 0)
            break;
        if (id > 0) {
            p->status = MM_POINT_SKIPPED;
            p->run_id = id;
            p->oom = run_oom(st, id);
            count(r, i);
        } else {
            r->pending[r->n_pending++] = i;
        }
    }
    mm_store_close(st);
    return rc;
}

/* Settles the points whose scenario equals an earlier point's, once that
 * point is settled: they share its run (or its failure). */
static int settle_follows(runner *r, mm_err *err)
{
    size_t todo = 0;
    for (size_t i = 0; i < r->n; i++)
        todo += r->follows[i] >= 0 && r->res[i].status == MM_POINT_PENDING;
    if (!todo)
        return 0;
    mm_store *st = NULL;
    int rc = mm_store_open(&st, r->o->db, err);
    for (size_t i = 0; rc == 0 && i < r->n; i++) {
        if (r->follows[i] < 0 || r->res[i].status != MM_POINT_PENDING)
            continue;
        const mm_point_result *q = &r->res[r->follows[i]];
        mm_point_result *p = &r->res[i];
        if (q->status == MM_POINT_PENDING)
            continue;
        mm_sweep_link link = link_of(r, i);
        if (q->status == MM_POINT_FAILED) {
            *p = *q;
            if (r->sweep_id > 0)
                rc = mm_store_link_sweep_run(st, &link, 0, p->error, err);
        } else {
            p->status = MM_POINT_SKIPPED;
            p->run_id = q->run_id;
            p->oom = q->oom;
            if (r->sweep_id > 0)
                rc = mm_store_link_sweep_run(st, &link, p->run_id, NULL, err);
        }
        count(r, i);
    }
    mm_store_close(st);
    return rc;
}

/* ---- in this process -------------------------------------------------- */

static int run_serial(runner *r, mm_err *err)
{
    if (!r->n_pending)
        return 0;
    mm_store *st = NULL;
    int rc = mm_store_open(&st, r->o->db, err);
    for (size_t k = 0; rc == 0 && k < r->n_pending; k++) {
        rc = run_one(r, st, r->pending[k], err);
        if (rc == 0) {
            count(r, r->pending[k]);
            report(r, 0);
        }
    }
    mm_store_close(st);
    return rc;
}

/* ---- forked workers --------------------------------------------------- */

/* A worker's answer; smaller than PIPE_BUF, so each write() is atomic on
 * the pipe that every worker shares. */
typedef struct wmsg {
    uint64_t idx;
    int64_t run_id;
    int32_t worker, status, oom, fatal;
    char error[512];
} wmsg;
_Static_assert(sizeof(wmsg) <= 4096, "atomic pipe writes");

static ssize_t read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t k = read(fd, (char *)buf + got, len - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return got ? (ssize_t)got : k;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

static int write_full(int fd, const void *buf, size_t len)
{
    size_t put = 0;
    while (put < len) {
        ssize_t k = write(fd, (const char *)buf + put, len - put);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        put += (size_t)k;
    }
    return 0;
}

static _Noreturn void worker_main(runner *r, int w, int cmd_fd, int res_fd, pid_t parent)
{
#ifdef __linux__
    /* Die with the parent, so that a killed sweep leaves no worker that
     * could commit a run after a restarted sweep has looked for it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(3);
    mm_err err;
    mm_err_clear(&err);
    mm_store *st = NULL;
    wmsg msg;
    memset(&msg, 0, sizeof msg);
    msg.worker = w;
    if (mm_store_open(&st, r->o->db, &err) < 0) {
        msg.fatal = 1;
        mm_err_format(&err, msg.error, sizeof msg.error);
        (void)write_full(res_fd, &msg, sizeof msg);
        _exit(1);
    }
    uint64_t idx;
    while (read_full(cmd_fd, &idx, sizeof idx) == (ssize_t)sizeof idx && idx < r->n) {
        memset(&msg, 0, sizeof msg);
        msg.worker = w;
        msg.idx = idx;
        int rc = run_one(r, st, idx, &err);
        if (rc < 0) {
            msg.fatal = 1;
            mm_err_format(&err, msg.error, sizeof msg.error);
        } else {
            const mm_point_result *p = &r->res[idx];
            msg.status = (int32_t)p->status;
            msg.run_id = p->run_id;
            msg.oom = p->oom;
            memcpy(msg.error, p->error, sizeof msg.error);
        }
        if (write_full(res_fd, &msg, sizeof msg) < 0 || rc < 0)
            break;
    }
    mm_store_close(st);
    _exit(0);
}

typedef struct pool {
    int n;
    int *cmd;       /* parent's end of each worker's socket, -1 once closed */
    pid_t *pid;
    long *inflight; /* point each worker is simulating, or -1 */
    size_t next;    /* next entry of r->pending to hand out */
    int stop;       /* a fatal error: hand out nothing more */
} pool;

/* Hands worker w its next point, or closes its socket when there is none
 * (the worker then exits). */
static void dispatch(runner *r, pool *pl, int w)
{
    if (pl->cmd[w] < 0)
        return;
    if (!pl->stop && pl->next < r->n_pending) {
        uint64_t idx = r->pending[pl->next];
        if (send(pl->cmd[w], &idx, sizeof idx, MSG_NOSIGNAL) == (ssize_t)sizeof idx) {
            pl->inflight[w] = (long)idx;
            pl->next++;
            return;
        }
    }
    close(pl->cmd[w]);
    pl->cmd[w] = -1;
}

static int start_workers(runner *r, pool *pl, int res_fd[2], mm_err *err)
{
    pid_t parent = getpid();
    for (int w = 0; w < pl->n; w++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
            pl->n = w;
            break;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(res_fd[0]);
            close(sv[0]);
            for (int k = 0; k < w; k++)
                close(pl->cmd[k]);
            worker_main(r, w, sv[1], res_fd[1], parent);
        }
        close(sv[1]);
        if (pid < 0) {
            close(sv[0]);
            pl->n = w;
            break;
        }
        pl->cmd[w] = sv[0];
        pl->pid[w] = pid;
        pl->inflight[w] = -1;
    }
    if (pl->n == 0)
        return mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "cannot start worker processes: %s",
                          strerror(errno));
    return 0;
}

/* Waits for every worker; a point a worker was simulating when it died is
 * a failed point (and gets its sweep_runs row). */
static int reap_workers(runner *r, pool *pl, mm_err *err)
{
    int rc = 0, died = 0;
    for (int w = 0; w < pl->n; w++) {
        if (pl->cmd[w] >= 0)
            close(pl->cmd[w]);
        int status = 0;
        while (waitpid(pl->pid[w], &status, 0) < 0 && errno == EINTR)
            ;
        if (pl->inflight[w] < 0)
            continue;
        size_t i = (size_t)pl->inflight[w];
        mm_err e;
        mm_err_set(&e, MM_EINTERNAL, NULL, 0, NULL,
                   WIFSIGNALED(status) ? "worker process died (signal %d)"
                                       : "worker process died (exit status %d)",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        set_failed(&r->res[i], &e);
        count(r, i);
        died = 1;
    }
    if (died && r->sweep_id > 0) {
        mm_store *st = NULL;
        rc = mm_store_open(&st, r->o->db, err);
        for (int w = 0; rc == 0 && w < pl->n; w++)
            if (pl->inflight[w] >= 0) {
                mm_sweep_link link = link_of(r, (size_t)pl->inflight[w]);
                rc = mm_store_link_sweep_run(st, &link, 0, r->res[pl->inflight[w]].error, err);
            }
        mm_store_close(st);
    }
    return rc;
}

static int run_forked(runner *r, int jobs, mm_err *err)
{
    pool pl = {.n = jobs < (int)r->n_pending ? jobs : (int)r->n_pending};
    pl.cmd = calloc((size_t)pl.n, sizeof *pl.cmd);
    pl.pid = calloc((size_t)pl.n, sizeof *pl.pid);
    pl.inflight = calloc((size_t)pl.n, sizeof *pl.inflight);
    int res_fd[2] = {-1, -1};
    int rc = 0;
    if (!pl.cmd || !pl.pid || !pl.inflight)
        rc = mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    else if (pipe(res_fd) != 0)
        rc = mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "pipe: %s", strerror(errno));
    if (rc == 0)
        rc = start_workers(r, &pl, res_fd, err);
    if (res_fd[1] >= 0)
        close(res_fd[1]);
    if (rc == 0) {
        for (int w = 0; w < pl.n; w++)
            dispatch(r, &pl, w);
        wmsg msg;
        while (read_full(res_fd[0], &msg, sizeof msg) == (ssize_t)sizeof msg) {
            if (msg.worker < 0 || msg.worker >= pl.n)
                continue;
            int w = msg.worker;
            pl.inflight[w] = -1;
            if (msg.fatal) {
                if (!pl.stop)
                    mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "%s", msg.error);
                pl.stop = 1;
                rc = -MM_EINTERNAL;
                for (int k = 0; k < pl.n; k++)
                    dispatch(r, &pl, k);
                continue;
            }
            mm_point_result *p = &r->res[msg.idx];
            p->status = (mm_point_status)msg.status;
            p->run_id = msg.run_id;
            p->oom = msg.oom;
            memcpy(p->error, msg.error, sizeof p->error);
            p->error[sizeof p->error - 1] = '\0';
            count(r, msg.idx);
            report(r, 0);
            dispatch(r, &pl, w);
        }
        int rrc = reap_workers(r, &pl, err);
        if (rc == 0)
            rc = rrc;
        if (rc == 0 && pl.next < r->n_pending)
            rc = mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL,
                            "every worker process died; %zu points were not run",
                            r->n_pending - pl.next);
    }
    if (res_fd[0] >= 0)
        close(res_fd[0]);
    free(pl.cmd);
    free(pl.pid);
    free(pl.inflight);
    return rc;
}

/* ---- MPI ranks -------------------------------------------------------- */

#if MMSIM_MPI
/* Results travel from the ranks to rank 0 as byte strings: the point index,
 * the outcome's strings and the metrics with their arrays, copied as they
 * lie in memory (every rank runs the same mmsim binary on the same kind of
 * machine, so the layouts agree). */
enum { TAG_RESULT = 1, TAG_DONE = 2 };

typedef struct pbuf {
    unsigned char *b;
    size_t n, cap;
    int bad;
} pbuf;

static void put(pbuf *p, const void *v, size_t len)
{
    if (p->bad)
        return;
    if (p->n + len > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->n + len)
            cap *= 2;
        unsigned char *b = realloc(p->b, cap);
        if (!b) {
            p->bad = 1;
            return;
        }
        p->b = b;
        p->cap = cap;
    }
    if (len)
        memcpy(p->b + p->n, v, len);
    p->n += len;
}

static void put_str(pbuf *p, const char *s)
{
    uint64_t len = s ? strlen(s) : 0;
    put(p, &len, sizeof len);
    put(p, s, len);
}

static void get(pbuf *p, void *v, size_t len)
{
    if (p->bad || p->n + len > p->cap) {
        p->bad = 1;
        memset(v, 0, len);
        return;
    }
    memcpy(v, p->b + p->n, len);
    p->n += len;
}

/* Copies a string of at most len - 1 bytes into out, or (out NULL) returns
 * a new string. */
static char *get_str(pbuf *p, char *out, size_t len)
{
    uint64_t n = 0;
    get(p, &n, sizeof n);
    if (p->bad || n > p->cap - p->n) {
        p->bad = 1;
        return NULL;
    }
    char *s = out ? out : malloc(n + 1);
    if (!s) {
        p->bad = 1;
        return NULL;
    }
    size_t k = out && n >= len ? len - 1 : (size_t)n;
    memcpy(s, p->b + p->n, k);
    s[k] = '\0';
    p->n += n;
    return s;
}

/* The scalar fields of mm_metrics that the store writes, one by one: the
 * struct also holds owned pointers (arrays, the critical path) that must not
 * travel.  A field the store starts writing must be added here too. */
#define MM_METRIC_SCALARS(X)                                                     \
    X(iteration_time_s) X(tokens_per_s) X(samples_per_s) X(mfu) X(hfu)          \
    X(tflops_per_gpu) X(hw_tflops_per_gpu) X(bubble_fraction) X(exposed_comm_s) \
    X(peak_memory_gib) X(iteration_time_p50_s) X(iteration_time_p99_s) X(oom) X(gpus) X(events) X(wall_s)   \
    X(n_iters) X(n_stages)

static void put_metrics(pbuf *p, const mm_metrics *m)
{
#define PUT(f) put(p, &m->f, sizeof m->f);
    MM_METRIC_SCALARS(PUT)
#undef PUT
}

static void get_metrics(pbuf *p, mm_metrics *m)
{
    memset(m, 0, sizeof *m);
#define GET(f) get(p, &m->f, sizeof m->f);
    MM_METRIC_SCALARS(GET)
#undef GET
}

static void pack_outcome(pbuf *p, uint64_t idx, const outcome *oc)
{
    int32_t ok = oc->ok;
    put(p, &idx, sizeof idx);
    put(p, &ok, sizeof ok);
    put(p, &oc->err, sizeof oc->err);
    if (!ok)
        return;
    put_str(p, oc->canon);
    put_str(p, oc->source);
    put_str(p, oc->model);
    put_str(p, oc->topology);
    put(p, &oc->seed, sizeof oc->seed);
    put_metrics(p, &oc->m);
    put(p, oc->m.iters, (size_t)oc->m.n_iters * sizeof *oc->m.iters);
    put(p, oc->m.stages, (size_t)oc->m.n_stages * sizeof *oc->m.stages);
}

static int unpack_outcome(pbuf *p, size_t n_points, uint64_t *idx, outcome *oc)
{
    memset(oc, 0, sizeof *oc);
    int32_t ok = 0;
    get(p, idx, sizeof *idx);
    get(p, &ok, sizeof ok);
    get(p, &oc->err, sizeof oc->err);
    if (!p->bad && ok) {
        oc->canon = get_str(p, NULL, 0);
        get_str(p, oc->source, sizeof oc->source);
        get_str(p, oc->model, sizeof oc->model);
        get_str(p, oc->topology, sizeof oc->topology);
        get(p, &oc->seed, sizeof oc->seed);
        get_metrics(p, &oc->m);
        if (!p->bad && oc->m.n_iters >= 0 && oc->m.n_stages >= 0 &&
            (size_t)oc->m.n_iters * sizeof *oc->m.iters <= p->cap - p->n) {
            oc->m.iters = calloc((size_t)oc->m.n_iters + 1, sizeof *oc->m.iters);
            oc->m.stages = calloc((size_t)oc->m.n_stages + 1, sizeof *oc->m.stages);
            if (!oc->m.iters || !oc->m.stages)
                p->bad = 1;
            else {
                get(p, oc->m.iters, (size_t)oc->m.n_iters * sizeof *oc->m.iters);
                get(p, oc->m.stages, (size_t)oc->m.n_stages * sizeof *oc->m.stages);
            }
        } else {
            p->bad = 1;
        }
        oc->ok = 1; /* so that outcome_free frees the arrays */
    }
    if (p->bad || *idx >= n_points) {
        outcome_free(oc);
        return -1;
    }
    return 0;
}

/* Rank 0: receives one message (blocking or not) and stores it.  Returns 1
 * when a message was handled, 0 when none was waiting. */
static int mpi_receive(runner *r, mm_store *st, int block, int *done_ranks, int *fatal,
                       mm_err *err)
{
    MPI_Status status;
    int flag = 1;
    if (block)
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
    else
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
    if (!flag)
        return 0;
    int len = 0;
    MPI_Get_count(&status, MPI_BYTE, &len);
    pbuf p = {.b = malloc(len > 0 ? (size_t)len : 1), .cap = len > 0 ? (size_t)len : 0};
    MPI_Recv(p.b, len, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (status.MPI_TAG == TAG_DONE) {
        (*done_ranks)++;
    } else if (!*fatal) {
        uint64_t idx = 0;
        outcome oc;
        if (!p.b || unpack_outcome(&p, r->n, &idx, &oc) < 0) {
            mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL,
                       "a garbled result came from MPI rank %d", status.MPI_SOURCE);
            *fatal = 1;
        } else {
            if (store_outcome(r, st, (size_t)idx, &oc, err) < 0)
                *fatal = 1;
            else {
                count(r, (size_t)idx);
                report(r, 0);
            }
            outcome_free(&oc);
        }
    }
    free(p.b);
    return 1;
}

static int run_mpi(runner *r, int plan_rc, mm_err *err)
{
    const int rank = r->o->mpi_rank, size = r->o->mpi_size;
    /* the plan: [failed, sweep_id, n_pending], then the pending indices */
    int64_t hdr[3] = {plan_rc < 0, r->sweep_id, (int64_t)r->n_pending};
    MPI_Bcast(hdr, 3, MPI_INT64_T, 0, MPI_COMM_WORLD);
    r->sweep_id = hdr[1]; /* only rank 0 writes, but let every rank know */
    r->prog.sweep_id = hdr[1];
    if (hdr[0])
        return rank == 0 ? plan_rc
                         : mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL,
                                      "MPI rank 0 could not prepare the sweep");
    if (hdr[2] < 0 || (size_t)hdr[2] > r->n)
        return mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "bad plan from MPI rank 0");
    r->n_pending = (size_t)hdr[2];
    uint64_t *idx = calloc(r->n_pending + 1, sizeof *idx);
    if (!idx)
        return mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    for (size_t k = 0; rank == 0 && k < r->n_pending; k++)
        idx[k] = r->pending[k];
    MPI_Bcast(idx, (int)r->n_pending, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (rank != 0) {
        for (size_t k = (size_t)rank; k < r->n_pending; k += (size_t)size) {
            outcome oc;
            simulate(&r->pts[idx[k]], &oc);
            pbuf p = {0};
            pack_outcome(&p, idx[k], &oc);
            outcome_free(&oc);
            if (p.bad) {
                free(p.b);
                rc = mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
                break;
            }
            MPI_Send(p.b, (int)p.n, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
            free(p.b);
        }
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_DONE, MPI_COMM_WORLD);
        free(idx);
        return rc;
    }
    /* Rank 0 simulates its share and stores everything; on a store failure
     * it goes on receiving (and dropping) so that no rank blocks forever. */
    mm_store *st = NULL;
    int fatal = 0, done_ranks = 0;
    rc = mm_store_open(&st, r->o->db, err);
    if (rc < 0)
        fatal = 1;
    for (size_t k = 0; !fatal && k < r->n_pending; k += (size_t)size) {
        if (run_one(r, st, idx[k], err) < 0) {
            fatal = 1;
            break;
        }
        count(r, idx[k]);
        report(r, 0);
        while (!fatal && mpi_receive(r, st, 0, &done_ranks, &fatal, err))
            ;
    }
    while (done_ranks < size - 1)
        mpi_receive(r, st, 1, &done_ranks, &fatal, err);
    mm_store_close(st);
    free(idx);
    return fatal ? -MM_EINTERNAL : 0;
}
#endif

/* ---- the whole batch -------------------------------------------------- */

int mm_runner_run(const mm_runner_opts *o, const mm_point *pts, size_t n,
                  mm_point_result *res, mm_runner_progress *summary, mm_err *err)
{
    memset(res, 0, n * sizeof *res);
    int mpi = o->mpi_size > 1;
    if (mpi && !MMSIM_MPI)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, NULL,
                          "this mmsim was built without MPI (meson setup -Dmpi=enabled)");
    if (!o->db)
        return mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "mm_runner_run: no database");
    int leader = !mpi || o->mpi_rank == 0;
    runner r = {.o = o, .pts = pts, .n = n, .res = res, .sweep_id = o->sweep_id};
    r.prog.sweep_id = o->sweep_id;
    r.canon = calloc(n + 1, sizeof *r.canon);
    r.follows = calloc(n + 1, sizeof *r.follows);
    r.pending = calloc(n + 1, sizeof *r.pending);
    r.prog.total = n;
    r.t0 = mono_s();
    int rc = 0;
    if (!r.canon || !r.follows || !r.pending)
        rc = mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    if (rc == 0 && leader) {
        rc = plan_load(&r, err);
        if (rc == 0)
            rc = plan_store(&r, err);
        r.prog.to_run = r.n_pending;
        if (rc == 0)
            report(&r, 0);
    }
    r.t0 = mono_s();
#if MMSIM_MPI
    if (mpi)
        rc = run_mpi(&r, rc, err);
    else
#endif
    if (rc == 0 && o->jobs > 1 && r.n_pending > 1)
        rc = run_forked(&r, o->jobs, err);
    else if (rc == 0)
        rc = run_serial(&r, err);
    if (rc == 0 && leader)
        rc = settle_follows(&r, err);
    if (leader)
        report(&r, 1);
    if (summary)
        *summary = r.prog;
    for (size_t i = 0; r.canon && i < n; i++)
        free(r.canon[i]);
    free(r.canon);
    free(r.follows);
    free(r.pending);
    return rc;
}
