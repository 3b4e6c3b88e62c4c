/*
 * test_tile_store.c - the graph runner's store of input windows
 * (io/tile_store.h): what a window holds, how much the store keeps, and that
 * windows the cache cannot keep are reused.
 *
 * The loader reads from an array in the test whose cells tell where they are
 * (with NoData, NaN and -0 among them) and counts its calls. Every window
 * handed out, whatever the budget and the order of the tiles, must equal the
 * padded window built here cell by cell: NaN outside the grid, NoData as NaN,
 * -0 as +0. Between calls the store may hold no more than its budget (cached
 * windows and spares together). With a budget of a few windows, a window
 * given back and not cached is the buffer of a later load of a tile of that
 * size or smaller (the edge tiles' windows are smaller); with a budget of 0
 * nothing is kept and every get loads. Loads run one at a time, unless the
 * store is told its loader may run concurrently: two threads getting
 * different tiles then have their loads in flight together (a slow loader
 * counts how many are), and the windows are still right.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tile_store.h"
#include "tr_test.h"

enum { R = 70, C = 53, T = 16 };
static const float ND = -9999.0f;

typedef struct {
  float v[R * C];
  int loads;
} src;

static int load(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst,
                int64_t stride) {
  (void)t;
  src *a = user;
  a->loads++;
  ASSERT(row0 >= 0 && col0 >= 0 && row0 + rows <= R && col0 + cols <= C && stride >= cols);
  for (int64_t r = 0; r < rows; r++) memcpy(dst + r * stride, a->v + (row0 + r) * C + col0, (size_t)cols * sizeof(float));
  return 0;
}

static void fill_src(src *a) {
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      const int k = (r * 31 + c * 17) % 41;
      a->v[r * C + c] = k == 1 ? ND : k == 2 ? NAN : k == 3 ? -0.0f : 100.0f * (float)r + (float)c;
    }
  a->loads = 0;
}

static tr_tile tile_of(int64_t i) {
  const int64_t tc = (C + T - 1) / T;
  const int64_t r0 = (i / tc) * T, c0 = (i % tc) * T;
  tr_tile t = {i, r0, c0, r0 + T <= R ? T : R - r0, c0 + T <= C ? T : C - c0};
  return t;
}

/* the padded window of t, cell by cell */
static int check_window(const src *a, const tr_tile *t, const float *z) {
  const int64_t pw = t->cols + 2;
  for (int64_t r = -1; r <= t->rows; r++)
    for (int64_t c = -1; c <= t->cols; c++) {
      const int64_t gr = t->row0 + r, gc = t->col0 + c;
      float want = NAN;
      if (gr >= 0 && gr < R && gc >= 0 && gc < C) {
        const float v = a->v[gr * C + gc];
        want = v == ND ? NAN : v == 0.0f ? 0.0f : v;
      }
      const float got = z[(r + 1) * pw + (c + 1)];
      if (memcmp(&got, &want, sizeof got) != 0 && !(isnan(got) && isnan(want))) {
        fprintf(stderr, "tile %lld cell (%lld,%lld): %g, want %g\n", (long long)t->index, (long long)r, (long long)c,
                (double)got, (double)want);
        return 1;
      }
      if (want == 0.0f && signbit(got)) {
        fprintf(stderr, "tile %lld cell (%lld,%lld): -0 kept\n", (long long)t->index, (long long)r, (long long)c);
        return 1;
      }
    }
  return 0;
}

static int64_t ntiles(void) { return ((R + T - 1) / T) * ((C + T - 1) / T); }

/* Every window right, in a scrambled order with repeats, for budgets from
 * nothing to everything; the store never holds more than its budget. */
static int test_windows_and_budget(void) {
  static src a;
  fill_src(&a);
  const size_t full = (size_t)(T + 2) * (T + 2) * sizeof(float);
  const size_t budgets[] = {0, full - 1, full, 3 * full, 5 * full + full / 2, 64 * full};
  const int64_t n = ntiles();
  for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
    tr_tile_store *s = tr_tile_store_create(R, C, n, budgets[b], 1, ND, load, &a);
    ASSERT(s);
    a.loads = 0;
    for (int64_t k = 0; k < 6 * n; k++) {
      const tr_tile t = tile_of((k * 7 + k / n) % n);
      float *z = tr_tile_store_get(s, &t);
      ASSERT(z);
      ASSERT_EQ_INT(check_window(&a, &t, z), 0);
      tr_tile_store_put(s, &t, z);
      ASSERT(tr_tile_store_held(s) <= budgets[b]);
    }
    if (budgets[b] == 0) ASSERT_EQ_INT(a.loads, 6 * n);
    if (budgets[b] == 64 * full) ASSERT_EQ_INT(a.loads, n); /* every window cached after its first load */
    printf("  budget %zu: %d loads for %lld gets, %zu held\n", budgets[b], a.loads, (long long)(6 * n),
           tr_tile_store_held(s));
    tr_tile_store_destroy(s);
  }
  return 0;
}

/* A window given back and not cached is the next load's buffer. */
static int test_spares_reused(void) {
  static src a;
  fill_src(&a);
  const size_t full = (size_t)(T + 2) * (T + 2) * sizeof(float);
  const int64_t n = ntiles();
  /* room for two windows: one spare and one cached */
  tr_tile_store *s = tr_tile_store_create(R, C, n, 2 * full + 8, 1, ND, load, &a);
  ASSERT(s);
  const tr_tile t0 = tile_of(0), t1 = tile_of(1), t2 = tile_of(2), edge = tile_of(n - 1);
  ASSERT(edge.rows < T && edge.cols < T);
  float *z0 = tr_tile_store_get(s, &t0);
  tr_tile_store_put(s, &t0, z0); /* cached */
  float *z1 = tr_tile_store_get(s, &t1);
  tr_tile_store_put(s, &t1, z1); /* cached; t0's window evicted to a spare */
  float *z2 = tr_tile_store_get(s, &t2);
  ASSERT(z2 == z0);
  ASSERT_EQ_INT(check_window(&a, &t2, z2), 0);
  tr_tile_store_put(s, &t2, z2); /* t1's window becomes the spare */
  float *ze = tr_tile_store_get(s, &edge); /* smaller: served by the larger spare */
  ASSERT(ze == z1);
  ASSERT_EQ_INT(check_window(&a, &edge, ze), 0);
  tr_tile_store_put(s, &edge, ze);
  ASSERT(tr_tile_store_held(s) <= 2 * full + 8);
  /* the cached window is the same buffer again, without a load */
  const int before = a.loads;
  float *again = tr_tile_store_get(s, &edge);
  ASSERT(again == ze);
  ASSERT_EQ_INT(a.loads, before);
  tr_tile_store_put(s, &edge, again);
  tr_tile_store_destroy(s);
  return 0;
}

/* A loader that stays 20 ms in each call and records the most calls in
 * flight at once. */
typedef struct {
  src a;
  pthread_mutex_t mu;
  int now, most, called; /* called: a first call was made */
} slow_src;

static int slow_load(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst,
                     int64_t stride) {
  slow_src *s = user;
  pthread_mutex_lock(&s->mu);
  if (++s->now > s->most) s->most = s->now;
  const int first = !s->called;
  s->called = 1;
  pthread_mutex_unlock(&s->mu);
  /* the first call waits (up to 2 s, so a loaded machine's late thread
   * still comes) for another call to be in flight; every call then stays
   * 20 ms */
  for (int k = 0; first && k < 2000; k++) {
    pthread_mutex_lock(&s->mu);
    const int two = s->most >= 2;
    pthread_mutex_unlock(&s->mu);
    if (two) break;
    struct timespec ms = {0, 1000 * 1000};
    nanosleep(&ms, NULL);
  }
  struct timespec ts = {0, 20 * 1000 * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
  for (int64_t r = 0; r < rows; r++)
    memcpy(dst + r * stride, s->a.v + (row0 + r) * C + col0, (size_t)cols * sizeof(float));
  (void)t;
  pthread_mutex_lock(&s->mu);
  s->now--;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

typedef struct {
  tr_tile_store *st;
  slow_src *s;
  int first, bad;
} getter;

/* gets every other tile from `first`, checks each window, gives it back */
static void *get_half(void *arg) {
  getter *g = arg;
  const int64_t n = ((R + T - 1) / T) * ((C + T - 1) / T);
  for (int64_t i = g->first; i < n; i += 2) {
    const tr_tile t = tile_of(i);
    float *z = tr_tile_store_get(g->st, &t);
    if (!z || check_window(&g->s->a, &t, z)) g->bad = 1;
    if (z) tr_tile_store_put(g->st, &t, z);
  }
  return NULL;
}

static int loads_in_flight(int concurrent) {
  slow_src s;
  fill_src(&s.a);
  pthread_mutex_init(&s.mu, NULL);
  s.now = s.most = s.called = 0;
  const int64_t n = ((R + T - 1) / T) * ((C + T - 1) / T);
  tr_tile_store *st = tr_tile_store_create(R, C, n, 0, 1, ND, slow_load, &s);
  if (!st) return -1;
  if (concurrent) tr_tile_store_concurrent_loads(st);
  getter g[2] = {{st, &s, 0, 0}, {st, &s, 1, 0}};
  pthread_t th[2];
  int started = 0;
  while (started < 2 && pthread_create(&th[started], NULL, get_half, &g[started]) == 0) started++;
  for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
  tr_tile_store_destroy(st);
  pthread_mutex_destroy(&s.mu);
  return started < 2 || g[0].bad || g[1].bad ? -1 : s.most;
}

static int test_concurrent_loads(void) {
  /* 10 loads a thread of 20 ms each: the two threads' loads overlap unless
   * the store's lock keeps them apart */
  ASSERT_EQ_INT(loads_in_flight(0), 1);
  ASSERT_EQ_INT(loads_in_flight(1), 2);
  return 0;
}

TR_MAIN(TR_TEST(test_windows_and_budget), TR_TEST(test_spares_reused), TR_TEST(test_concurrent_loads))
