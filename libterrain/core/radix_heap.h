/*
 * radix_heap.h - a monotone priority queue of (float value, cell index) for
 * priority floods: the fill programs' (hydro/fill_flood.c,
 * hydro/fill_perimeter.c) and breaching's (kernels/breach.c).
 */
#ifndef TR_RADIX_HEAP_H
#define TR_RADIX_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* A radix heap over the values' bits: bucket b > 0 holds the entries whose
 * key (the value's bits made to sort as the floats do, -0 just below +0)
 * first differs from the last key popped at bit b - 1, bucket 0 those equal
 * to it. A flood only queues values at or above the level it pops (and its
 * seeds before the first pop), so keys never go below the last one popped:
 * each entry moves down a bucket at most 32 times, and a pop costs no
 * comparisons but the scan of the bucket it empties.
 *
 * A bucket is a list of chunks of TR_RADIX_CHUNK entries, taken from and
 * given back to one free list: the heap holds about as many chunks as the
 * most entries it had queued at once. (With a growing array a bucket, the
 * buckets' largest sizes summed were ten times that in a flood of 8000^2,
 * since they peak one after another.) */
typedef struct tr_radix_ent {
  uint32_t k, i;
} tr_radix_ent;

#define TR_RADIX_CHUNK 1022 /* a chunk of 8 KiB */

typedef struct tr_radix_chunk {
  struct tr_radix_chunk *next, *prev;
  tr_radix_ent e[TR_RADIX_CHUNK];
} tr_radix_chunk;

typedef struct tr_radix {
  tr_radix_chunk *head[33], *tail[33]; /* each bucket's chunks, oldest first */
  size_t tn[33];                       /* entries in each bucket's tail chunk (the others are full) */
  size_t h0;                           /* tr_radix_pop_first: entries of bucket 0's head chunk gone */
  tr_radix_chunk *spare;               /* the free list */
  uint32_t last;                       /* the key last popped (0 before the first pop) */
  size_t total;                        /* entries in all buckets */
  int oom;                             /* an entry could not be stored: the flood must stop */
} tr_radix;

/* Queues (v, i): v at or above the last value popped since the reset. */
void tr_radix_push(tr_radix *r, float v, uint32_t i);
/* An entry of the lowest value (call with total > 0): its index, its value in *v. */
uint32_t tr_radix_pop(tr_radix *r, float *v);
/* The same, of the entries of the lowest value the one queued first (a
 * queue's pops use this or tr_radix_pop, not both): equal keys are always
 * in one bucket and every move keeps their order, so this pops in the order
 * of (value, time queued) - a binary heap's order with ties to the older. */
uint32_t tr_radix_pop_first(tr_radix *r, float *v);
/* The index of the entry tr_radix_pop_first pops d pops after the next one
 * (or of the last of the lowest value queued, where fewer are; d below
 * TR_RADIX_CHUNK), if nothing lower is queued before; UINT32_MAX when the
 * next pop needs a new lowest value. A hint for prefetching, nothing more. */
static inline uint32_t tr_radix_peek_first(const tr_radix *r, size_t d) {
  const tr_radix_chunk *c = r->head[0];
  if (!c) return UINT32_MAX;
  const int one = c == r->tail[0];
  if (one && r->tn[0] < r->h0 + 2) return UINT32_MAX; /* one entry left, or none */
  size_t at = r->h0 + d, lim = one ? r->tn[0] : TR_RADIX_CHUNK;
  if (at >= lim && !one) {
    at -= TR_RADIX_CHUNK;
    c = c->next;
    lim = c == r->tail[0] ? r->tn[0] : TR_RADIX_CHUNK;
  }
  return c->e[at < lim ? at : lim - 1].i;
}
/* Empty, ready for any values (the chunks kept). */
void tr_radix_reset(tr_radix *r);
void tr_radix_free(tr_radix *r);

#endif
