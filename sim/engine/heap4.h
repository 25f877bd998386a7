/* heap4.h - array-backed 4-ary min-heap of (time, seq, payload) entries.
 *
 * Invariant: for every entry i > 0, entry (i-1)/4 is not greater than i, where
 * entries compare by time, then by seq.  seq is unique per heap (the engine
 * uses its insertion counter), so the order is total and a run that inserts
 * the same entries in the same order pops them in the same order: this is
 * what makes mmsim bit-for-bit deterministic.
 *
 * Four children per node halve the depth of a binary heap and keep the
 * children of one node in one or two cache lines (24-byte entries).
 * Not for: decrease-key or removal from the middle; the engine cancels
 * events lazily instead. */
#ifndef MM_HEAP4_H
#define MM_HEAP4_H

#include <stddef.h>
#include <stdint.h>

typedef struct mm_heap_entry {
    int64_t time;     /* simulated nanoseconds */
    uint64_t seq;     /* tie-breaker: insertion order */
    uint64_t payload; /* opaque to the heap */
} mm_heap_entry;

typedef struct mm_heap4 {
    mm_heap_entry *a;
    size_t n, cap;
} mm_heap4;

int mm_heap4_init(mm_heap4 *h, size_t initial_cap); /* 0 or -1 (no memory) */
void mm_heap4_free(mm_heap4 *h);
/* Returns 0, or -1 when growing the array fails (the heap is unchanged). */
int mm_heap4_insert(mm_heap4 *h, mm_heap_entry e);
/* Removes the minimum into *out; returns 0, or -1 when empty. */
int mm_heap4_pop(mm_heap4 *h, mm_heap_entry *out);
/* Pop followed by insert of e, in one sift (the root is discarded; on an
 * empty heap, an insert).  0 or -1 (no memory). */
int mm_heap4_replace_top(mm_heap4 *h, mm_heap_entry e);

static inline const mm_heap_entry *mm_heap4_root(const mm_heap4 *h)
{
    return h->n ? &h->a[0] : NULL;
}

static inline size_t mm_heap4_size(const mm_heap4 *h) { return h->n; }

#endif
