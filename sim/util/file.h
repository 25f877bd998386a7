/* file.h - opening input files with the checks every reader needs: the path
 * must name a regular file (not a directory, a device such as /dev/zero, a
 * FIFO or a socket), no larger than a limit, and without a NUL byte (a
 * binary file, or text a C string would silently cut short).
 *
 * The limits are documented in docs/reliability.md; a reader picks the one for
 * its kind of file.  Refusals are MM_EINPUT naming the file (and, for a NUL
 * byte, its line); an I/O error while reading is MM_EINPUT too, with errno's
 * words, since it is about the user's file.
 * Not for: writing files, or parsing what was read. */
#ifndef MM_FILE_H
#define MM_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "util/err.h"

/* Scenario, model, topology, mixture, sweep, kernel-table and pass-time
 * files: far larger than any real one, small enough to parse in memory. */
#define MM_FILE_MAX_CONFIG (64LL << 20)
/* Per-sample trace CSVs: ~40 bytes a sample, so 1 GiB is ~25 million
 * samples, read row by row (the samples themselves are held in memory). */
#define MM_FILE_MAX_TRACE (1LL << 30)

/* Opens `path` for reading after the checks above (the NUL scan reads the
 * file once, then rewinds).  Returns the stream, or NULL with err filled. */
FILE *mm_file_open(const char *path, int64_t max_bytes, mm_err *err);

/* Reads the whole file after the same checks into a malloc'ed buffer with a
 * NUL after its *len bytes.  Returns 0 or -code. */
int mm_file_read(const char *path, int64_t max_bytes, char **buf, size_t *len, mm_err *err);

/* Checks text already in memory (a --set value, a string document): the
 * first NUL among its len bytes -> MM_EINPUT naming `name` and the line. */
int mm_text_check_nul(const char *name, const char *text, size_t len, mm_err *err);

/* The first byte of text that is not valid UTF-8 -> MM_EINPUT naming
 * `name` and the line.  YAML and JSON documents are checked so before they
 * are parsed (util/doc.h), so that every message about an encoding names
 * the line of the byte. */
int mm_text_check_utf8(const char *name, const char *text, size_t len, mm_err *err);

#endif
