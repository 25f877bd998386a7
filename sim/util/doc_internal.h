/* doc_internal.h - what the document's reader (doc.c) and its emitter
 * (doc_emit.c) share: the end of a number's text as both scan it.  Private
 * to sim/util; callers use doc.h.
 * Not for: reading numbers into values (doc.c's typed conversions). */
#ifndef MM_DOC_INTERNAL_H
#define MM_DOC_INTERNAL_H

#include <stdbool.h>

/* True when s is an optional exponent ([eE][-+]?\d+) and then the end of
 * the text: the tail of YAML's float syntax (doc.c) and of JSON's number
 * grammar (doc_emit.c), scanned from the first character after the
 * mantissa. */
bool mm_doc_exponent_end(const char *s);

#endif
