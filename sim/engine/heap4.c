/* heap4.c - the 4-ary min-heap behind the engine's event queue.
 *
 * What it is for: holding (time, seq, payload) entries and handing back the
 * smallest, fast, with nothing but an array.  Children of node i are
 * 4i+1 .. 4i+4; its parent is (i-1)/4.
 *
 * Both sifts move a "hole" instead of swapping: the entry being placed is
 * kept in a register, larger ancestors (or smaller children) are copied one
 * level over it, and it is written once at the end.  That is one 24-byte
 * store per level instead of three.
 *
 * Not for: removal from the middle or changing a key (the engine cancels
 * lazily), nor for thread safety (one heap per engine, one engine per
 * thread).  Known limit: the array only grows; a heap that once held a
 * million entries keeps that memory until mm_heap4_free. */
#include "engine/heap4.h"

#include <stdlib.h>

/* Smallest capacity allocated by the first insert into an empty heap. */
#define MM_HEAP4_MIN_CAP 64

/* The order of the heap.  seq is unique per heap, so no two entries compare
 * equal and pop order does not depend on how the heap happens to be laid
 * out.
 *
 * Written without && and ||, so that it yields a flag rather than a branch:
 * with random keys the outcome of each comparison is a coin toss, and as
 * branches they cost about ten mispredictions per pop (cachegrind,
 * 10^4 entries); as flags, under one.  Where the compiler has a 128-bit
 * integer, (time with its sign bit flipped, seq) is compared as one unsigned
 * 128-bit number, which is a cmp/sbb pair on x86-64. */
static inline int mm_heap4_less(const mm_heap_entry *x, const mm_heap_entry *y)
{
#ifdef __SIZEOF_INT128__
    __extension__ typedef unsigned __int128 mm_u128;
    const uint64_t flip = UINT64_C(1) << 63;
    mm_u128 kx = (mm_u128)((uint64_t)x->time ^ flip) << 64 | x->seq;
    mm_u128 ky = (mm_u128)((uint64_t)y->time ^ flip) << 64 | y->seq;
    return kx < ky;
#else
    return (x->time < y->time) | ((x->time == y->time) & (x->seq < y->seq));
#endif
}

int mm_heap4_init(mm_heap4 *h, size_t initial_cap)
{
    h->a = NULL;
    h->n = 0;
    h->cap = 0;
    if (initial_cap == 0)
        return 0;
    h->a = malloc(initial_cap * sizeof *h->a);
    if (!h->a)
        return -1;
    h->cap = initial_cap;
    return 0;
}

void mm_heap4_free(mm_heap4 *h)
{
    free(h->a);
    h->a = NULL;
    h->n = 0;
    h->cap = 0;
}

/* Doubles the array.  Kept out of line: it runs O(log n) times in a heap's
 * life and would only crowd the insert path. */
static __attribute__((noinline)) int mm_heap4_grow(mm_heap4 *h)
{
    size_t cap = h->cap ? h->cap * 2 : MM_HEAP4_MIN_CAP;
    if (cap < h->cap || cap > SIZE_MAX / sizeof *h->a)
        return -1;
    mm_heap_entry *a = realloc(h->a, cap * sizeof *a);
    if (!a)
        return -1;
    h->a = a;
    h->cap = cap;
    return 0;
}

int mm_heap4_insert(mm_heap4 *h, mm_heap_entry e)
{
    if (h->n == h->cap && mm_heap4_grow(h) != 0)
        return -1;
    mm_heap_entry *a = h->a;
    size_t i = h->n++;
    /* Sift up: the hole starts at the new leaf and climbs while its parent
     * is larger than e. */
    while (i > 0) {
        size_t p = (i - 1) >> 2;
        if (!mm_heap4_less(&e, &a[p]))
            break;
        a[i] = a[p];
        i = p;
    }
    a[i] = e;
    return 0;
}

/* Places e from the root down: at each level pick the smallest child;
 * stop when it is not smaller than e. */
static inline void mm_heap4_sift_down(mm_heap_entry *a, size_t n, const mm_heap_entry e)
{
    size_t i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        size_t m;
        if (c + 3 < n) {
            /* All four children exist (the common case): a two-round
             * tournament.  The winners are computed with arithmetic on the
             * flags, not with ?:, which GCC 12 compiles to branches here. */
            size_t m01 = c + (size_t)mm_heap4_less(&a[c + 1], &a[c]);
            size_t m23 = c + 2 + (size_t)mm_heap4_less(&a[c + 3], &a[c + 2]);
            size_t pick = (size_t)0 - (size_t)mm_heap4_less(&a[m23], &a[m01]);
            m = m01 ^ ((m01 ^ m23) & pick);
        } else if (c < n) {
            /* The last internal node: one to three children. */
            m = c;
            for (size_t j = c + 1; j < n; j++)
                if (mm_heap4_less(&a[j], &a[m]))
                    m = j;
        } else {
            break;
        }
        if (!mm_heap4_less(&a[m], &e))
            break;
        a[i] = a[m];
        i = m;
    }
    a[i] = e;
}

int mm_heap4_pop(mm_heap4 *h, mm_heap_entry *out)
{
    size_t n = h->n;
    if (n == 0)
        return -1;
    mm_heap_entry *a = h->a;
    *out = a[0];
    h->n = --n;
    if (n == 0)
        return 0;
    /* The last entry fills the hole left at the root. */
    mm_heap4_sift_down(a, n, a[n]);
    return 0;
}

int mm_heap4_replace_top(mm_heap4 *h, mm_heap_entry e)
{
    if (h->n == 0)
        return mm_heap4_insert(h, e);
    mm_heap4_sift_down(h->a, h->n, e);
    return 0;
}
