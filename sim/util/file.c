/* file.c - opening input files: regular files only, size limits, no NUL
 * bytes.  See file.h.
 *
 * The file is opened with O_NONBLOCK so that a FIFO given as a config does
 * not block the open; fstat then refuses anything but a regular file before
 * a byte is read.  The size is checked twice: by fstat, and while reading
 * (a file that grows meanwhile is cut off at the limit and refused).
 * Not for: output files, or the SQLite database (store/store.c checks its
 * path itself). */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int sys_fail(const char *path, const char *what, int e, mm_err *err)
{
    char why[128];
    if (strerror_r(e, why, sizeof why) != 0)
        snprintf(why, sizeof why, "error %d", e);
    return mm_err_set(err, MM_EINPUT, path, 0, "", "%s: %s", what, why);
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO (named pipe)"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

static void limit_text(int64_t max, char *buf, size_t len)
{
    if (max >= (1LL << 30) && max % (1LL << 30) == 0)
        snprintf(buf, len, "%lld GiB", (long long)(max >> 30));
    else if (max >= (1LL << 20) && max % (1LL << 20) == 0)
        snprintf(buf, len, "%lld MiB", (long long)(max >> 20));
    else
        snprintf(buf, len, "%lld bytes", (long long)max);
}

static int too_large(const char *path, int64_t max, mm_err *err)
{
    char lim[32];
    limit_text(max, lim, sizeof lim);
    return mm_err_set(err, MM_EINPUT, path, 0, "",
                      "file larger than the limit of %s for this kind of input "
                      "(see docs/reliability.md)", lim);
}

/* Opens and checks type and size; returns the fd or -1. */
static int open_checked(const char *path, int64_t max, mm_err *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        sys_fail(path, "cannot open", errno, err);
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        sys_fail(path, "cannot stat", errno, err);
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        mm_err_set(err, MM_EINPUT, path, 0, "", "%s, not a regular file; refused",
                   kind_of(sb.st_mode));
        return -1;
    }
    if ((int64_t)sb.st_size > max) {
        close(fd);
        too_large(path, max, err);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* 1-based line of byte `at` of text. */
static int line_of(const char *text, size_t at)
{
    int line = 1;
    for (const char *p = text; (p = memchr(p, '\n', at - (size_t)(p - text))); p++)
        line++;
    return line;
}

int mm_text_check_nul(const char *name, const char *text, size_t len, mm_err *err)
{
    const char *z = memchr(text, '\0', len);
    if (!z)
        return 0;
    return mm_err_set(err, MM_EINPUT, name, line_of(text, (size_t)(z - text)), "",
                      "a NUL byte (is it a binary file?); input files are text");
}

/* Length of the UTF-8 sequence at p (RFC 3629: no overlongs, no
 * surrogates, at most U+10FFFF), 0 when it is not one. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
    unsigned c = p[0];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || n > left || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)))
        return 0;
    if (n == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)))
        return 0;
    return n;
}

int mm_text_check_utf8(const char *name, const char *text, size_t len, mm_err *err)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        if (p[i] < 0x80) { /* the common case, one byte at a time */
            i++;
            continue;
        }
        size_t n = utf8_len(p + i, len - i);
        if (n == 0)
            return mm_err_set(err, MM_EINPUT, name, line_of(text, i), "",
                              "byte 0x%02x is not valid UTF-8; YAML and JSON files are UTF-8 text",
                              p[i]);
        i += n;
    }
    return 0;
}

int mm_file_read(const char *path, int64_t max, char **out, size_t *out_len, mm_err *err)
{
    *out = NULL;
    *out_len = 0;
    int fd = open_checked(path, max, err);
    if (fd < 0)
        return -MM_EINPUT;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int rc = 0;
    while (buf && rc == 0) {
        if (len + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = sys_fail(path, "cannot read", errno, err);
        else if (got == 0)
            break;
        else if ((int64_t)(len += (size_t)got) > max)
            rc = too_large(path, max, err);
    }
    close(fd);
    if (rc == 0 && (!buf || len + 1 >= cap))
        rc = mm_err_set(err, MM_EINTERNAL, path, 0, "", "out of memory reading the file");
    if (rc == 0)
        rc = mm_text_check_nul(path, buf, len, err);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

FILE *mm_file_open(const char *path, int64_t max, mm_err *err)
{
    int fd = open_checked(path, max, err);
    if (fd < 0)
        return NULL;
    /* The NUL scan: one pass in blocks, counting lines as it goes. */
    char block[65536];
    int line = 1, rc = 0;
    int64_t total = 0;
    for (;;) {
        ssize_t got = read(fd, block, sizeof block);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = sys_fail(path, "cannot read", errno, err);
            break;
        }
        if (got == 0)
            break;
        if ((total += got) > max) {
            rc = too_large(path, max, err);
            break;
        }
        const char *z = memchr(block, '\0', (size_t)got);
        if (z) {
            rc = mm_err_set(err, MM_EINPUT, path, line + line_of(block, (size_t)(z - block)) - 1,
                            "", "a NUL byte (is it a binary file?); input files are text");
            break;
        }
        line += line_of(block, (size_t)got) - 1;
    }
    FILE *f = NULL;
    if (rc == 0 && lseek(fd, 0, SEEK_SET) != 0)
        rc = sys_fail(path, "cannot rewind", errno, err);
    if (rc == 0 && !(f = fdopen(fd, "rb")))
        rc = sys_fail(path, "cannot open", errno, err);
    if (!f)
        close(fd);
    return f;
}
