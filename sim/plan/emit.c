/* emit.c - the emitters' front (emit.h): the format names, the text of a
 * format, and writing it so that nothing already there is lost on error
 * (a temporary file in the same folder, renamed into place when complete).
 * Not for: what a format says (emit_megatron.c, emit_torchtitan.c,
 * emit_deepspeed.c). */
#include "plan/emit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/emit_internal.h"

const char *const mm_emit_format_names[] = {"megatron", "torchtitan", "deepspeed", NULL};

int mm_emit_format_find(const char *name)
{
    for (int i = 0; mm_emit_format_names[i]; i++)
        if (!strcmp(name, mm_emit_format_names[i]))
            return i;
    return -1;
}

/* The folder of path ("." when it has none). */
static void folder_of(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, len, ".");
    else if (slash == path)
        snprintf(out, len, "/");
    else
        snprintf(out, len, "%.*s", (int)(slash - path), path);
}

int mm_emit_check_path(const char *path, mm_err *err)
{
    char dir[1024];
    struct stat st;
    if (!path[0])
        return mm_err_set(err, MM_EINPUT, path, 0, "--emit", "an empty file name");
    if (strlen(path) + 32 >= sizeof dir)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--emit", "the file name is longer than %zu characters",
                          sizeof dir - 32);
    folder_of(path, dir, sizeof dir);
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return mm_err_set(err, MM_EINPUT, path, 0, "--emit", "cannot write: the folder %s does not exist", dir);
    if (access(dir, W_OK | X_OK))
        return mm_err_set(err, MM_EINPUT, path, 0, "--emit", "cannot write in the folder %s: %s", dir,
                          strerror(errno));
    if (!stat(path, &st) && S_ISDIR(st.st_mode))
        return mm_err_set(err, MM_EINPUT, path, 0, "--emit", "cannot write: it is a folder");
    return 0;
}

void mm_emit_companion_path(mm_emit_format f, const char *path, char *out, size_t len)
{
    if (f != MM_EMIT_DEEPSPEED) {
        snprintf(out, len, "%s", "");
        return;
    }
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t stem = dot && (!slash || dot > slash + 1) ? (size_t)(dot - path) : strlen(path);
    snprintf(out, len, "%.*s.trainer.json", (int)stem, path);
}

int mm_emit_text(mm_emit_format f, const mm_sim *sim, const char *path, char **text, char **aux, mm_err *err)
{
    *text = NULL;
    if (aux)
        *aux = NULL;
    if ((unsigned)f >= MM_EMIT_COUNT)
        return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--emit", "no such format");
    mm_emit_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    c->sim = sim;
    c->format = mm_emit_format_names[f];
    c->path = path;
    int rc = f == MM_EMIT_MEGATRON ? mm_emit_megatron(c) : f == MM_EMIT_TORCHTITAN ? mm_emit_torchtitan(c)
                                                                                   : mm_emit_deepspeed(c);
    if (!rc)
        rc = mm_emit_report(c, err);
    if (!rc && (c->out.oom || c->aux.oom || !c->out.s))
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    if (!rc) {
        *text = c->out.s;
        c->out.s = NULL;
        if (aux) {
            *aux = c->aux.s;
            c->aux.s = NULL;
        }
    }
    free(c->out.s);
    free(c->aux.s);
    free(c);
    return rc;
}

/* text into `tmp` (created here), flushed and closed. */
static int write_tmp(const char *path, char *tmp, const char *text, mm_err *err)
{
    int fd = mkstemp(tmp);
    if (fd < 0)
        return mm_err_set(err, MM_EINPUT, path, 0, "--emit", "cannot write: %s", strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return mm_err_set(err, MM_EINPUT, path, 0, "--emit", "cannot write: %s", strerror(errno));
    }
    fputs(text, f);
    int bad = ferror(f);
    bad |= fflush(f) != 0;
    bad |= fsync(fd) != 0;
    bad |= fclose(f) != 0;
    /* mkstemp's 0600 -> what a plain fopen would give, under the umask */
    mode_t um = umask(0);
    umask(um);
    if (bad || chmod(tmp, 0666 & ~um)) {
        int e = errno;
        unlink(tmp);
        return mm_err_set(err, MM_EINPUT, path, 0, "--emit", "write failed: %s", strerror(e));
    }
    return 0;
}

int mm_emit_write(mm_emit_format f, const mm_sim *sim, const char *path, mm_err *err)
{
    char comp[1100], tmp[2][1100];
    int rc = mm_emit_check_path(path, err);
    if (rc)
        return rc;
    mm_emit_companion_path(f, path, comp, sizeof comp);
    char *text[2] = {NULL, NULL};
    if ((rc = mm_emit_text(f, sim, path, &text[0], &text[1], err)))
        return rc;
    const char *dst[2] = {path, comp};
    int n = comp[0] && text[1] ? 2 : 1;
    int done = 0;
    for (; done < n && !rc; done++) {
        snprintf(tmp[done], sizeof tmp[done], "%s.XXXXXX", dst[done]);
        rc = write_tmp(dst[done], tmp[done], text[done], err);
    }
    if (rc)
        done--; /* the failed one left no file */
    /* both written: renamed into place; else the written ones removed */
    for (int i = 0; i < done; i++) {
        if (!rc && rename(tmp[i], dst[i])) {
            rc = mm_err_set(err, MM_EINPUT, dst[i], 0, "--emit", "cannot write: %s", strerror(errno));
            unlink(tmp[i]);
        } else if (rc) {
            unlink(tmp[i]);
        }
    }
    free(text[0]);
    free(text[1]);
    return rc;
}
