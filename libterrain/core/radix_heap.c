/*
 * radix_heap.c - the radix heap of radix_heap.h.
 */
#include "radix_heap.h"

#include <stdlib.h>
#include <string.h>

/* A float's bits as an unsigned key in the floats' order (-0 just below +0:
 * a flood's result does not depend on the order it pops equal values). */
static inline uint32_t radix_key(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

static inline float radix_value(uint32_t k) {
  const uint32_t u = (k & 0x80000000u) ? k & 0x7fffffffu : ~k;
  float v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static inline int radix_bucket(uint32_t k, uint32_t last) {
  uint32_t d = k ^ last;
#if defined(__GNUC__)
  return d ? 32 - __builtin_clz(d) : 0;
#else
  int b = 0;
  while (d) d >>= 1, b++;
  return b;
#endif
}

static tr_radix_chunk *chunk_take(tr_radix *r) {
  tr_radix_chunk *c = r->spare;
  if (c) {
    r->spare = c->next;
  } else if (!(c = malloc(sizeof *c))) {
    r->oom = 1;
  }
  return c;
}

static void chunk_give(tr_radix *r, tr_radix_chunk *c) {
  c->next = r->spare;
  r->spare = c;
}

/* Whether bucket b holds no entry (an emptied bucket keeps one chunk). */
static inline int bucket_empty(const tr_radix *r, int b) {
  return !r->tail[b] || (r->head[b] == r->tail[b] && r->tn[b] == (b ? 0 : r->h0));
}

/* A new tail chunk for bucket b (NULL: out of memory). */
#if defined(__GNUC__)
#define RADIX_COLD __attribute__((noinline, cold))
#else
#define RADIX_COLD
#endif
static RADIX_COLD tr_radix_chunk *bucket_grow(tr_radix *r, int b) {
  tr_radix_chunk *t = r->tail[b], *c = chunk_take(r);
  if (!c) return NULL;
  c->next = NULL;
  c->prev = t;
  if (t) {
    t->next = c;
  } else {
    r->head[b] = c;
  }
  r->tail[b] = c;
  r->tn[b] = 0;
  return c;
}

static inline int radix_add(tr_radix *r, int b, tr_radix_ent e) {
  tr_radix_chunk *t = r->tail[b];
  if (!t || r->tn[b] == TR_RADIX_CHUNK)
    if (!(t = bucket_grow(r, b))) return -1;
  t->e[r->tn[b]++] = e;
  return 0;
}

/* Gives back every chunk of bucket b. */
static void bucket_clear(tr_radix *r, int b) {
  for (tr_radix_chunk *c = r->head[b], *next; c; c = next) {
    next = c->next;
    chunk_give(r, c);
  }
  r->head[b] = r->tail[b] = NULL;
  r->tn[b] = 0;
}

void tr_radix_push(tr_radix *r, float v, uint32_t i) {
  const uint32_t k = radix_key(v);
  if (!radix_add(r, radix_bucket(k, r->last), (tr_radix_ent){k, i})) r->total++;
}

/* Moves the lowest non-empty bucket's entries down (bucket 0 is empty),
 * their order kept; 0 or -1 when an entry was lost (oom: the flood stops),
 * *lost then that entry. */
static int radix_refill(tr_radix *r, tr_radix_ent *lost) {
  /* bucket 0 is empty: at most its one chunk, kept for what comes next */
  if (r->head[0] != r->tail[0]) bucket_clear(r, 0);
  r->h0 = r->tn[0] = 0;
  int b = 1;
  while (bucket_empty(r, b)) b++;
  /* the bucket's chunks, full but the tail */
  tr_radix_chunk *const keep = r->head[b], *c = keep;
  const tr_radix_chunk *tail = r->tail[b];
  const size_t tn = r->tn[b];
  uint32_t m = UINT32_MAX;
  for (const tr_radix_chunk *x = keep; x; x = x->next) {
    const size_t n = x == tail ? tn : TR_RADIX_CHUNK;
    for (size_t j = 0; j < n; j++)
      if (x->e[j].k < m) m = x->e[j].k;
  }
  r->last = m;
  r->head[b] = r->tail[b] = NULL;
  r->tn[b] = 0;
  /* every entry moves to a lower bucket: the one it shares its highest
     differing bit with the new last; each chunk read but the first goes to
     the free list, from where the lower buckets take theirs, and the first
     stays the emptied bucket's (an emptied bucket keeps one chunk, so a
     refill seldom goes to the free list) */
  int st = 0;
  while (c) {
    tr_radix_chunk *next = c->next;
    const size_t n = c == tail ? tn : TR_RADIX_CHUNK;
    for (size_t j = 0; j < n && !st; j++)
      if (radix_add(r, radix_bucket(c->e[j].k, m), c->e[j])) {
        *lost = c->e[j]; /* the rest is dropped: the flood stops */
        st = -1;
      }
    if (c != keep) chunk_give(r, c);
    c = next;
  }
  keep->next = keep->prev = NULL;
  r->head[b] = r->tail[b] = keep;
  return st;
}

/* Ready to pop from bucket 0: refilled where it was empty. -1 with *lost
 * the entry a failed refill dropped (oom: the pop returns it, the flood
 * stops), else 0 with the entry's count taken. */
static int radix_ready(tr_radix *r, tr_radix_ent *lost) {
  if (bucket_empty(r, 0) && radix_refill(r, lost)) return -1;
  r->total--;
  return 0;
}

uint32_t tr_radix_pop(tr_radix *r, float *v) {
  tr_radix_ent e;
  if (radix_ready(r, &e)) {
    *v = radix_value(e.k);
    return e.i;
  }
  tr_radix_chunk *t = r->tail[0];
  e = t->e[--r->tn[0]];
  if (r->tn[0] == 0 && t != r->head[0]) { /* the tail chunk emptied: the one before is full */
    r->tail[0] = t->prev;
    r->tail[0]->next = NULL;
    r->tn[0] = TR_RADIX_CHUNK;
    chunk_give(r, t);
  }
  *v = radix_value(e.k);
  return e.i;
}

uint32_t tr_radix_pop_first(tr_radix *r, float *v) {
  tr_radix_ent e;
  if (radix_ready(r, &e)) {
    *v = radix_value(e.k);
    return e.i;
  }
  tr_radix_chunk *h = r->head[0];
  e = h->e[r->h0++];
  if (h == r->tail[0]) {
    if (r->h0 == r->tn[0]) r->h0 = r->tn[0] = 0; /* emptied: its one chunk is kept */
  } else if (r->h0 == TR_RADIX_CHUNK) {
    r->head[0] = h->next;
    r->head[0]->prev = NULL;
    r->h0 = 0;
    chunk_give(r, h);
  }
  *v = radix_value(e.k);
  return e.i;
}

void tr_radix_reset(tr_radix *r) {
  for (int b = 0; b < 33; b++) bucket_clear(r, b);
  r->h0 = 0;
  r->total = 0;
  r->last = 0;
  r->oom = 0;
}

void tr_radix_free(tr_radix *r) {
  tr_radix_reset(r);
  for (tr_radix_chunk *c = r->spare, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  memset(r, 0, sizeof *r);
}
