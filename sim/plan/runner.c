/* runner.c - simulating a list of points into one store: planning (what is
 * already done, what is a duplicate), then running the rest in this process,
 * in forked workers, or across MPI ranks.  See runner.h for the guarantees.
 *
 * Why the parent never holds a database connection across fork(): SQLite's
 * locks are per process, and a child that closed an inherited connection
 * could checkpoint or unlink the WAL under the parent.  So the parent closes
 * its store before forking, each worker opens its own, and the parent opens
 * it again afterwards.
 * Not for: one point's simulation and storing (runner_point.c), expanding
 * sweep specs (sweep.c) or printing progress (the CLI). */
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
#include "plan/runner_internal.h"
#include "scenario/sim.h"
#include "store/store.h"
#include "util/misc.h"

int mm_runner_have_mpi(void)
{
    return MMSIM_MPI;
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
    mm_scenario *sc = calloc(1, sizeof *sc);
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
        if (mm_rn_load_point(&r->pts[i], sc, &r->canon[i], &e) < 0) {
            if (e.code == MM_EINTERNAL && !strcmp(e.msg, "out of memory")) {
                free(sc);
                free(k);
                *err = e;
                return -MM_EINTERNAL;
            }
            mm_rn_set_failed(&r->res[i], &e);
            continue;
        }
        mm_rn_free_point(&r->pts[i], sc);
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
        mm_sweep_link link = mm_rn_link_of(r, i);
        if (p->status == MM_POINT_FAILED) { /* its scenario did not load */
            if (r->sweep_id > 0)
                rc = mm_store_link_sweep_run(st, &link, 0, p->error, err);
            mm_rn_count(r, i);
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
            mm_rn_count(r, i);
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
        mm_sweep_link link = mm_rn_link_of(r, i);
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
        mm_rn_count(r, i);
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
        rc = mm_rn_run_one(r, st, r->pending[k], err);
        if (rc == 0) {
            mm_rn_count(r, r->pending[k]);
            mm_rn_report(r, 0);
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
        int rc = mm_rn_run_one(r, st, idx, &err);
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
        mm_rn_set_failed(&r->res[i], &e);
        mm_rn_count(r, i);
        died = 1;
    }
    if (died && r->sweep_id > 0) {
        mm_store *st = NULL;
        rc = mm_store_open(&st, r->o->db, err);
        for (int w = 0; rc == 0 && w < pl->n; w++)
            if (pl->inflight[w] >= 0) {
                mm_sweep_link link = mm_rn_link_of(r, (size_t)pl->inflight[w]);
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
            mm_rn_count(r, msg.idx);
            mm_rn_report(r, 0);
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
    r.t0 = mm_host_seconds();
    int rc = 0;
    if (!r.canon || !r.follows || !r.pending)
        rc = mm_err_set(err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    if (rc == 0 && leader) {
        rc = plan_load(&r, err);
        if (rc == 0)
            rc = plan_store(&r, err);
        r.prog.to_run = r.n_pending;
        if (rc == 0)
            mm_rn_report(&r, 0);
    }
    r.t0 = mm_host_seconds();
#if MMSIM_MPI
    if (mpi)
        rc = mm_rn_run_mpi(&r, rc, err);
    else
#endif
    if (rc == 0 && o->jobs > 1 && r.n_pending > 1)
        rc = run_forked(&r, o->jobs, err);
    else if (rc == 0)
        rc = run_serial(&r, err);
    if (rc == 0 && leader)
        rc = settle_follows(&r, err);
    if (leader)
        mm_rn_report(&r, 1);
    if (summary)
        *summary = r.prog;
    for (size_t i = 0; r.canon && i < n; i++)
        free(r.canon[i]);
    free(r.canon);
    free(r.follows);
    free(r.pending);
    return rc;
}
