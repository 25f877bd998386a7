/* sbuf.c - the growing text buffer that the canonical scenario text
 * (write.c) and its perturbation lines (perturb.c) are written into
 * (loader.h, mm_sbuf).
 * Not for: what the text says (write.c). */
#include <stdarg.h>
#include <stdio.h>

#include "scenario/loader.h"

void mm_sb_printf(mm_sbuf *b, const char *fmt, ...)
{
    size_t room = b->n < b->len ? b->len - b->n : 0;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(room ? b->buf + b->n : NULL, room, fmt, ap);
    va_end(ap);
    if (w > 0)
        b->n += (size_t)w;
}

/* A YAML double-quoted string: always quoted, so that no path can be read
 * back as a number, a boolean or null. */
void mm_sb_quote(mm_sbuf *b, const char *s)
{
    mm_sb_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            mm_sb_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            mm_sb_printf(b, "\\x%02x", *p);
        else
            mm_sb_printf(b, "%c", *p);
    }
    mm_sb_printf(b, "\"");
}
