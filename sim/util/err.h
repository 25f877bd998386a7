/* err.h - error reporting shared by every layer of libmmsim.
 *
 * Library code never prints and never exits: a function that can fail takes an
 * mm_err * (may be NULL) and returns a negative status, after filling the error
 * with the input file, line and key that caused it.  Only the CLI turns an
 * mm_err into a message and an exit status (MM_EINPUT -> 2, others -> 1).
 * Not for: warnings or logging; mmsim has none in the library. */
#ifndef MM_ERR_H
#define MM_ERR_H

#include <stddef.h>

enum mm_status {
    MM_OK = 0,
    MM_EINTERNAL = 1, /* a bug or a resource failure (out of memory, I/O) */
    MM_EINPUT = 2     /* the user's input is wrong: a file, a key, a value */
};

typedef struct mm_err {
    int code;          /* enum mm_status */
    char file[256];    /* input file, or "--set" / "<cli>"; "" if none */
    int line;          /* 1-based line in file; 0 if unknown */
    char key[128];     /* dotted key, e.g. "parallel.llm.tp"; "" if none */
    char msg[512];     /* what is wrong, and what would be right */
} mm_err;

/* Clears an error (code MM_OK, empty strings). Accepts NULL. */
void mm_err_clear(mm_err *err);

/* Fills err (if not NULL) and returns -code, so callers can write
 * `return mm_err_set(err, MM_EINPUT, file, line, key, "...", ...);` */
int mm_err_set(mm_err *err, int code, const char *file, int line,
               const char *key, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Writes "file:line: key 'k': msg" (parts omitted when empty) into buf. */
void mm_err_format(const mm_err *err, char *buf, size_t len);

/* Levenshtein distance between two short strings (for "did you mean"). */
int mm_edit_distance(const char *a, const char *b);

/* Returns the candidate closest to key, or NULL when none is within a
 * distance of max(2, strlen(key)/3). candidates is NULL-terminated. */
const char *mm_nearest(const char *key, const char *const *candidates);

#endif
