/* util.c - small printing and file helpers every subcommand shares (JSON
 * strings, the folder of an output file).  Not for: anything a program
 * embedding libmmsim needs. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <limits.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/report.h"
#include "cli/cli.h"
#include "mmsim_config.h"
#include "store/store.h"

#if MMSIM_MPI
#include <mpi.h>
#endif

int mm_cli_usage_error(const char *cmd, const char *flag, const char *what, const char *value)
{
    mm_err err;
    char help[64] = "";
    if (cmd)
        snprintf(help, sizeof help, " (see mmsim help %s)", cmd);
    if (value && value[0])
        mm_err_set(&err, MM_EINPUT, "<cli>", 0, flag, "%s '%s'%s", what, value, help);
    else
        mm_err_set(&err, MM_EINPUT, "<cli>", 0, flag, "%s%s", what, help);
    return mm_cli_fail(&err);
}

int mm_cli_operand(const char *cmd, int argc, char **argv, const char *what, const char **out)
{
    if (optind < argc)
        *out = argv[optind++];
    if (optind >= argc)
        return 0;
    char msg[96];
    snprintf(msg, sizeof msg, "more than one %s given; extra", what);
    return mm_cli_usage_error(cmd, NULL, msg, argv[optind]);
}

void mm_cli_json_string(const char *s)
{
    mm_json_string(stdout, s);
}

/* mkdir -p of the folder that holds `path`: every missing level, or none
 * (the first that cannot be made is reported). */
static int make_parents(const char *path, mm_err *err)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    if ((size_t)(slash - path) >= sizeof dir)
        return mm_err_set(err, MM_EINPUT, path, 0, "--db", "path too long");
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    for (char *p = dir + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        struct stat sb;
        if (stat(dir, &sb) != 0 && mkdir(dir, 0777) != 0 && errno != EEXIST)
            return mm_err_set(err, MM_EINPUT, path, 0, "--db", "cannot create the folder '%s': %s",
                              dir, strerror(errno));
        if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
            return mm_err_set(err, MM_EINPUT, path, 0, "--db", "'%s' is not a folder", dir);
        *p = c;
        if (c == '\0')
            return 0;
    }
}

void mm_cli_make_parent(const char *path)
{
    mm_err ignored;
    (void)make_parents(path, &ignored); /* the store's open reports the real error */
}

int mm_cli_open_db(const char *path, mm_err *err)
{
    int rc = make_parents(path, err);
    if (rc < 0)
        return rc;
    mm_store *st = NULL;
    rc = mm_store_open(&st, path, err);
    mm_store_close(st);
    return rc;
}

int mm_cli_bad(const char *cmd, const char *flag, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mm_cli_usage_error(cmd, flag, msg, NULL); /* the shared formatter */
}

int mm_cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
    static char **scanning;
    if (argv != scanning) {
        scanning = argv;
        optind = 0; /* glibc: a full restart of the scan */
    }
    char so[64];
    snprintf(so, sizeof so, ":%s", shortopts); /* ':' reports a missing value apart */
    opterr = 0;
    int c = getopt_long(argc, argv, so, longopts, NULL);
    if (c != '?' && c != ':')
        return c;
    /* the option as the user wrote it, without "=value" */
    char flag[128];
    const char *w = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    if (optopt && c == '?' && !(w[0] == '-' && w[1] == '-'))
        snprintf(flag, sizeof flag, "-%c", optopt);
    else
        snprintf(flag, sizeof flag, "%.*s", (int)strcspn(w, "="), w);
    const char *why = c == ':' ? "needs a value" : "unknown option";
    for (const struct option *o = longopts; c == '?' && o && o->name; o++)
        if (!strcmp(flag + 2, o->name) && strchr(w, '='))
            why = "takes no value";
    mm_cli_bad(argv[0], flag, "%s", why);
    return '?';
}

int mm_cli_int(const char *cmd, const char *flag, const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < lo || n > hi || n > INT_MAX)
        return mm_cli_bad(cmd, flag, "takes a whole number from %ld to %ld, not '%.60s'", lo, hi, v);
    *out = (int)n;
    return 0;
}

bool mm_cli_progress_ok(bool quiet)
{
    return !quiet && isatty(STDERR_FILENO);
}

/* The status line: a thread redraws "mmsim: WHAT ... N s" every half
 * second until stopped.  One at a time (the CLI runs one long thing). */
static struct {
    pthread_t thread;
    pthread_mutex_t lock; /* guards detail */
    atomic_bool running;
    bool started;
    char what[200], detail[64];
    struct timespec t0;
} status = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *status_loop(void *arg)
{
    (void)arg;
    while (atomic_load(&status.running)) {
        struct timespec now, nap = {0, 100000000};
        clock_gettime(CLOCK_MONOTONIC, &now);
        double s = (double)(now.tv_sec - status.t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - status.t0.tv_nsec);
        char detail[64];
        pthread_mutex_lock(&status.lock);
        snprintf(detail, sizeof detail, "%s", status.detail);
        pthread_mutex_unlock(&status.lock);
        fprintf(stderr, "\r\033[Kmmsim: %s%s%s ... %.0f s", status.what, detail[0] ? ": " : "", detail, s);
        fflush(stderr);
        for (int i = 0; i < 5 && atomic_load(&status.running); i++)
            nanosleep(&nap, NULL);
    }
    return NULL;
}

void mm_cli_status_start(bool quiet, const char *fmt, ...)
{
    if (status.started || !mm_cli_progress_ok(quiet))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(status.what, sizeof status.what, fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_MONOTONIC, &status.t0);
    status.detail[0] = '\0';
    atomic_store(&status.running, true);
    status.started = pthread_create(&status.thread, NULL, status_loop, NULL) == 0;
}

void mm_cli_status_stop(void)
{
    if (!status.started)
        return;
    atomic_store(&status.running, false);
    pthread_join(status.thread, NULL);
    status.started = false;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

void mm_cli_status_detail(const char *fmt, ...)
{
    if (!status.started)
        return;
    pthread_mutex_lock(&status.lock);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(status.detail, sizeof status.detail, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&status.lock);
}

/* A batch of simulations in one process (plan, sweep) builds and frees
 * graphs of the same size again and again: glibc would hand the large
 * arrays back to the kernel at every free (mmap above 128 KiB or so, a
 * trimmed heap top) and fault every page in again for the next point,
 * about 10 % of the LLaVA-OV-72B plan's CPU time (docs/performance.md).
 * Keeping them in the heap changes no number, only where memory comes
 * from; the peak resident memory stays the largest point's (a few % of
 * fragmentation; measured +10 % on that plan).  Arrays up to 1 GiB stay in
 * the heap (an older glibc refusing that keeps its 32 MiB maximum). */
void mm_cli_keep_heap(void)
{
#if defined(__GLIBC__)
    if (!mallopt(M_MMAP_THRESHOLD, 1 << 30))
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

int mm_cli_fail(const mm_err *err)
{
    char buf[1200];
    mm_err_format(err, buf, sizeof buf);
    fprintf(stderr, "mmsim: %s\n", buf);
    return err->code == MM_EINPUT ? 2 : 1;
}

int mm_cli_mpi_begin(const char *cmd, int *rank, int *size)
{
    *rank = 0;
    *size = 1;
    const char *v[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", NULL};
    int launched = 0;
    for (int i = 0; v[i]; i++)
        launched |= getenv(v[i]) != NULL;
    if (!launched)
        return 0;
#if MMSIM_MPI
    (void)cmd;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    if (*size <= 1) { /* one rank: as without mpirun */
        MPI_Finalize();
        *size = 1;
    }
    return 0;
#else
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (n && strcmp(n, "1") != 0) {
        fprintf(stderr, "mmsim: <cli>: launched by mpirun, but this mmsim was built "
                        "without MPI (meson setup -Dmpi=enabled); each rank would run "
                        "the whole %s\n", cmd);
        return 2;
    }
    return 0;
#endif
}

int mm_cli_mpi_end(int size, int rc)
{
#if MMSIM_MPI
    if (size > 1) {
        int worst = rc;
        MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Finalize();
        return worst;
    }
#else
    (void)size;
#endif
    return rc;
}
