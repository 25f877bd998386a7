/* runner_mpi.c - the runner across MPI ranks (a build with -Dmpi=enabled):
 * rank 0 plans and broadcasts the pending points, rank r simulates points
 * r, r + size, ... and sends each outcome to rank 0, which alone writes the
 * database (runner.h has the guarantees).
 * Not for: planning or the forked workers (runner.c). */
#include "mmsim_config.h"

#if MMSIM_MPI
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "plan/runner_internal.h"

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
    X(peak_memory_gib) X(peak_allocated_gib) X(iteration_time_p50_s)            \
    X(iteration_time_p99_s) X(padded_flops_fraction) X(oom) X(gpus)             \
    X(host_launch_s) X(exposed_host_s) X(data_wait_s) X(data_h2d_s)              \
    X(loader_cpu_s) X(data_shortfall_s) X(data_workers_needed)                   \
    X(events) X(wall_s)                                                          \
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
    put(p, &oc->desc, sizeof oc->desc);
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
        get(p, &oc->desc, sizeof oc->desc);
        /* plain data from a worker of this same binary; its strings are
         * ended and its count bounded all the same */
        oc->desc.model[sizeof oc->desc.model - 1] = oc->desc.topology[sizeof oc->desc.topology - 1] = '\0';
        oc->desc.workload[sizeof oc->desc.workload - 1] = '\0';
        for (int k = 0; k < 3; k++)
            oc->desc.modules[k].name[sizeof oc->desc.modules[k].name - 1] = '\0';
        if (oc->desc.n_modules < 0 || oc->desc.n_modules > 3)
            p->bad = 1;
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
        mm_rn_outcome_free(oc);
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
            if (mm_rn_store_outcome(r, st, (size_t)idx, &oc, err) < 0)
                *fatal = 1;
            else {
                mm_rn_count(r, (size_t)idx);
                mm_rn_report(r, 0);
            }
            mm_rn_outcome_free(&oc);
        }
    }
    free(p.b);
    return 1;
}

int mm_rn_run_mpi(runner *r, int plan_rc, mm_err *err)
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
            mm_rn_simulate(&r->pts[idx[k]], &oc);
            pbuf p = {0};
            pack_outcome(&p, idx[k], &oc);
            mm_rn_outcome_free(&oc);
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
        if (mm_rn_run_one(r, st, idx[k], err) < 0) {
            fatal = 1;
            break;
        }
        mm_rn_count(r, idx[k]);
        mm_rn_report(r, 0);
        while (!fatal && mpi_receive(r, st, 0, &done_ranks, &fatal, err))
            ;
    }
    while (done_ranks < size - 1)
        mpi_receive(r, st, 1, &done_ranks, &fatal, err);
    mm_store_close(st);
    free(idx);
    return fatal ? -MM_EINTERNAL : 0;
}

int mm_runner_bcast(const mm_runner_opts *o, void *buf, size_t len, mm_err *err)
{
    (void)err;
    if (o->mpi_size <= 1)
        return 0;
    /* MPI counts are ints: large buffers go in pieces */
    for (size_t at = 0; at < len;) {
        size_t n = len - at < (size_t)1 << 30 ? len - at : (size_t)1 << 30;
        MPI_Bcast((unsigned char *)buf + at, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
        at += n;
    }
    return 0;
}

#else
#include "plan/runner_internal.h"
#include "exec/metrics.h"

int mm_runner_bcast(const mm_runner_opts *o, void *buf, size_t len, mm_err *err)
{
    (void)buf;
    (void)len;
    if (o->mpi_size <= 1)
        return 0;
    return mm_err_set(err, MM_EINTERNAL, "<cli>", 0, "", "this mmsim was built without MPI");
}

/* Without MPI the runner never calls this (mm_runner_run refuses MPI mode
 * first). */
int mm_rn_run_mpi(runner *r, int plan_rc, mm_err *err)
{
    (void)r;
    (void)err;
    return plan_rc;
}
#endif
