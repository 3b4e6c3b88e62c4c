/*
 * test_radix_heap.c - the floods' queue (core/radix_heap.h) against a plain
 * reference kept in the test: an array of the entries queued and not yet
 * popped, searched in full at every pop.
 *
 * A flood's use is replayed with a seeded generator: seeds first (any
 * values), then pops, each followed by a few pushes at or above the value
 * just popped - many equal to it (a flat), many a few float steps above it
 * (buckets 1-3), some far above, with negative values, -0 and +0 among
 * them. Checked at every pop:
 * - tr_radix_pop_first gives the lowest value and, of equal keys, the entry
 *   queued first: the reference's (key, time queued) order exactly, the
 *   order of a binary heap with ties to the older (breach.c relies on it);
 * - tr_radix_pop gives the lowest value (ties in any order);
 * - tr_radix_peek_first(d) names the entry popped d pops later when no push
 *   comes between (checked before a run of pops without pushes);
 * - a reset empties the heap and the next values may be lower;
 * - with more entries than a chunk holds at one value (a flat of 5,000),
 *   the order holds across chunks.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "radix_heap.h"
#include "tr_test.h"

typedef struct {
  float v;
  uint32_t i;
  uint64_t t; /* time queued */
} ref_ent;

typedef struct {
  ref_ent *e;
  size_t n, cap;
  uint64_t clock;
} ref_q;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

static void ref_push(ref_q *q, float v, uint32_t i) {
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 1024;
    q->e = realloc(q->e, q->cap * sizeof *q->e);
  }
  q->e[q->n++] = (ref_ent){v, i, q->clock++};
}

/* The key's order: -0 before +0, as the heap's keys have it. */
static int key_less(float a, float b) {
  if (a == 0 && b == 0) return signbit(a) && !signbit(b);
  return a < b;
}

/* The position of the lowest (value, time) entry. */
static size_t ref_first(const ref_q *q) {
  size_t m = 0;
  for (size_t k = 1; k < q->n; k++) {
    const ref_ent *a = &q->e[k], *b = &q->e[m];
    if (key_less(a->v, b->v) || (!key_less(b->v, a->v) && a->t < b->t)) m = k;
  }
  return m;
}

/* A value at or above v, as a flood queues them. */
static float above(float v) {
  const uint32_t r = next_rand() % 100;
  if (r < 40) return v; /* a flat */
  if (r < 80) {         /* a few float steps up */
    float w = v;
    for (uint32_t s = 1 + next_rand() % 5; s > 0; s--) w = nextafterf(w, INFINITY);
    return w;
  }
  if (r < 85 && signbit(v)) return (next_rand() & 1) ? -0.0f : 0.0f; /* a zero of either sign: both at or above v */
  return v + (float)(next_rand() % 1000) * 0.37f;
}

/* One flood's worth of pushes and pops; fifo: pop_first (exact order) or pop
 * (lowest value). */
static int replay(int fifo, int seeds, int pops) {
  tr_radix r;
  memset(&r, 0, sizeof r);
  ref_q q = {0};
  uint32_t id = 0;
  for (int s = 0; s < seeds; s++) {
    const float v = (float)((int)(next_rand() % 2000) - 1000) * 0.25f;
    const float w = s % 7 == 0 ? -0.0f : v;
    tr_radix_push(&r, w, id);
    ref_push(&q, w, id++);
  }
  for (int p = 0; p < pops && q.n; p++) {
    /* sometimes: peek ahead, then pop that far with no pushes between */
    if (fifo && p % 97 == 0) {
      uint32_t want[8];
      size_t ahead = 0;
      for (size_t d = 0; d < 8; d++) {
        want[d] = tr_radix_peek_first(&r, d);
        if (want[d] != UINT32_MAX) ahead = d + 1;
      }
      for (size_t d = 0; d < ahead && q.n; d++) {
        /* the hint against the reference's order */
        ref_q tmp = q;
        tmp.e = malloc(q.n * sizeof *q.e);
        memcpy(tmp.e, q.e, q.n * sizeof *q.e);
        size_t m = 0;
        for (size_t k = 0; k <= d; k++) {
          m = ref_first(&tmp);
          if (k < d) tmp.e[m] = tmp.e[--tmp.n];
        }
        const uint32_t expect = tmp.e[m].i;
        free(tmp.e);
        /* past the entries of the lowest value the hint repeats the last of them */
        if (want[d] != expect && (d == 0 || want[d] != want[d - 1])) {
          fprintf(stderr, "pop %d: peek(%zu) = %u, pop %zu ahead is %u\n", p, d, want[d], d, expect);
          return -1;
        }
      }
    }
    const size_t m = ref_first(&q);
    const ref_ent e = q.e[m];
    float v;
    const uint32_t got = fifo ? tr_radix_pop_first(&r, &v) : tr_radix_pop(&r, &v);
    if (fifo ? got != e.i : key_less(e.v, v) || key_less(v, e.v)) {
      fprintf(stderr, "pop %d (%s): got %u (%g), want %u (%g)\n", p, fifo ? "first" : "any", got, (double)v, e.i,
              (double)e.v);
      return -1;
    }
    /* the reference drops the entry popped: the one of that id (pop's ties) */
    size_t k = m;
    if (!fifo)
      for (k = 0; k < q.n && q.e[k].i != got; k++) {
      }
    if (k == q.n || key_less(q.e[k].v, v) || key_less(v, q.e[k].v)) {
      fprintf(stderr, "pop %d: entry %u was not queued at %g\n", p, got, (double)v);
      return -1;
    }
    memmove(q.e + k, q.e + k + 1, (q.n - k - 1) * sizeof *q.e); /* keeps time order */
    q.n--;
    for (uint32_t s = next_rand() % 4; s > 0; s--) {
      const float w = above(v);
      tr_radix_push(&r, w, id);
      ref_push(&q, w, id++);
    }
  }
  const int left_ok = r.total == q.n && !r.oom;
  tr_radix_reset(&r);
  /* after a reset any value may come, lower ones too */
  tr_radix_push(&r, -1e30f, 7);
  tr_radix_push(&r, -2e30f, 8);
  float v;
  const uint32_t a = fifo ? tr_radix_pop_first(&r, &v) : tr_radix_pop(&r, &v);
  tr_radix_free(&r);
  free(q.e);
  ASSERT(left_ok);
  ASSERT_EQ_INT(a, 8);
  return 0;
}

static int test_pop_first_order(void) {
  ASSERT(!replay(1, 300, 20000));
  ASSERT(!replay(1, 5, 20000));
  return 0;
}

static int test_pop_lowest(void) {
  ASSERT(!replay(0, 300, 20000));
  return 0;
}

/* A flat wider than a chunk: 5,000 entries of one value, in time order,
 * with pushes of the same value between pops. */
static int test_flat_across_chunks(void) {
  tr_radix r;
  memset(&r, 0, sizeof r);
  for (uint32_t i = 0; i < 5000; i++) tr_radix_push(&r, 2.5f, i);
  tr_radix_push(&r, 1.0f, 9999);
  float v;
  ASSERT_EQ_INT(tr_radix_pop_first(&r, &v), 9999);
  uint32_t next_new = 5000, expect = 0;
  for (int p = 0; p < 7000; p++) { /* 5,000 + 2,334 queued */
    if (p % 3 == 0) tr_radix_push(&r, 2.5f, next_new++);
    if (p % 500 == 1 && r.total > 8) ASSERT_EQ_INT(tr_radix_peek_first(&r, 7), expect + 7);
    ASSERT_EQ_INT(tr_radix_pop_first(&r, &v), expect);
    ASSERT(v == 2.5f);
    expect++;
  }
  ASSERT_EQ_INT(r.total, next_new - expect);
  tr_radix_free(&r);
  return 0;
}

TR_MAIN(TR_TEST(test_pop_first_order), TR_TEST(test_pop_lowest), TR_TEST(test_flat_across_chunks))
