/* fuzz_common.c - temporary files and text copies for the fuzz targets. */
#include "fuzz.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_FILES = 4 };
static struct { char suffix[8]; char path[600]; int fd; } files[MAX_FILES];
static int n_files;
static char dir[512]; /* this process's temporary folder */

static void remove_files(void)
{
    for (int i = 0; i < n_files; i++) {
        close(files[i].fd);
        unlink(files[i].path);
    }
    rmdir(dir);
}

const char *mm_fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/mmsim-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            dir[0] = '\0';
            return NULL;
        }
        atexit(remove_files);
    }
    int i = 0;
    while (i < n_files && strcmp(files[i].suffix, suffix) != 0)
        i++;
    if (i == n_files) {
        if (n_files == MAX_FILES || strlen(suffix) >= sizeof files[i].suffix)
            return NULL;
        snprintf(files[i].path, sizeof files[i].path, "%s/input%s", dir, suffix);
        files[i].fd = open(files[i].path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (files[i].fd < 0)
            return NULL;
        snprintf(files[i].suffix, sizeof files[i].suffix, "%s", suffix);
        n_files++;
    }
    if (ftruncate(files[i].fd, 0) != 0)
        return NULL;
    for (size_t off = 0; off < size;) {
        ssize_t w = pwrite(files[i].fd, data + off, size - off, (off_t)off);
        if (w <= 0)
            return NULL;
        off += (size_t)w;
    }
    return files[i].path;
}

char *mm_fuzz_text(const uint8_t *data, size_t size)
{
    const uint8_t *z = memchr(data, 0, size);
    size_t n = z ? (size_t)(z - data) : size;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, data, n);
        s[n] = '\0';
    }
    return s;
}
