/*
 * tile_store.c - the in-memory tile store: an LRU cache of padded input
 * windows over a loader (see tile_store.h).
 */
#include "tile_store.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  float *z;        /* cached padded window, or NULL */
  uint64_t stamp;  /* LRU clock */
  int in_use;
} store_slot;

struct tr_tile_store {
  int64_t rows, cols, ntiles;
  size_t budget, cached; /* cached: the cached windows' bytes */
  /* Spare windows: at most spares_max() of them (TR_STORE_SPARES, and no
   * more than half the budget), each at most `largest` bytes (the largest
   * window given back); the cache holds at most the budget less their room,
   * so cached windows and spares stay within it. */
  float *spare[TR_STORE_SPARES];
  int nspare;
  size_t largest;
  int has_nodata;
  float nodata;
  tr_store_load_fn load;
  void *user;
  store_slot *slots;
  uint64_t clock;
  pthread_mutex_t mu;     /* slots, cache */
  pthread_mutex_t io_mu;  /* the loader, unless concurrent */
  int concurrent;         /* tr_tile_store_concurrent_loads */
};

tr_tile_store *tr_tile_store_create(int64_t rows, int64_t cols, int64_t ntiles, size_t budget, int has_nodata,
                                    float nodata, tr_store_load_fn load, void *user) {
  tr_tile_store *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->slots = calloc((size_t)ntiles, sizeof *s->slots);
  if (!s->slots) {
    free(s);
    return NULL;
  }
  s->rows = rows;
  s->cols = cols;
  s->ntiles = ntiles;
  s->budget = budget;
  s->has_nodata = has_nodata;
  s->nodata = nodata;
  s->load = load;
  s->user = user;
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->io_mu, NULL);
  return s;
}

/* Windows carry their capacity in a header before the cells, so a spare can
 * serve any window it holds (the edge tiles' are smaller). Only the store
 * allocates and frees them. */
#define WIN_HEAD 16 /* bytes: keeps malloc's alignment */

static float *win_alloc(size_t bytes) {
  unsigned char *p = malloc(WIN_HEAD + bytes);
  if (!p) return NULL;
  memcpy(p, &bytes, sizeof bytes);
  return (float *)(void *)(p + WIN_HEAD);
}

static size_t win_cap(const float *z) {
  size_t n;
  memcpy(&n, (const unsigned char *)z - WIN_HEAD, sizeof n);
  return n;
}

static void win_free(float *z) {
  if (z) free((unsigned char *)z - WIN_HEAD);
}

void tr_tile_store_destroy(tr_tile_store *s) {
  if (!s) return;
  for (int64_t i = 0; i < s->ntiles; i++) win_free(s->slots[i].z);
  for (int i = 0; i < s->nspare; i++) win_free(s->spare[i]);
  free(s->slots);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->io_mu);
  free(s);
}

static size_t window_bytes(const tr_tile *t) { return (size_t)((t->rows + 2) * (t->cols + 2)) * sizeof(float); }

/* How many spares the budget has room for, and what the cache may hold. */
static int spares_max(const tr_tile_store *s) {
  if (!s->largest) return 0;
  const size_t n = s->budget / s->largest / 2; /* at most half the budget */
  return n < TR_STORE_SPARES ? (int)n : TR_STORE_SPARES;
}

static size_t cache_room(const tr_tile_store *s) { return s->budget - (size_t)spares_max(s) * s->largest; }

/* The smallest spare that holds `bytes`, or NULL. */
static float *take_spare(tr_tile_store *s, size_t bytes) {
  pthread_mutex_lock(&s->mu);
  int best = -1;
  for (int i = 0; i < s->nspare; i++) {
    const size_t c = win_cap(s->spare[i]);
    if (c >= bytes && (best < 0 || c < win_cap(s->spare[best]))) best = i;
  }
  float *z = NULL;
  if (best >= 0) {
    z = s->spare[best];
    s->spare[best] = s->spare[--s->nspare];
  }
  pthread_mutex_unlock(&s->mu);
  return z;
}

/* Keeps z as a spare while there is a place for one, else frees it (its
 * capacity is at most `largest`: put raised it first). Called with s->mu
 * held. */
static void keep_or_free(tr_tile_store *s, float *z) {
  if (s->nspare < spares_max(s))
    s->spare[s->nspare++] = z;
  else
    win_free(z);
}

static float *load_window(tr_tile_store *s, const tr_tile *t) {
  const int64_t h = t->rows, w = t->cols, pw = w + 2, ph = h + 2;
  const size_t bytes = window_bytes(t);
  float *z = take_spare(s, bytes);
  if (!z) z = win_alloc(bytes);
  if (!z) return NULL;
  /* the window clipped to the grid, read straight into its place */
  const int64_t r0 = t->row0 > 0 ? t->row0 - 1 : 0, c0 = t->col0 > 0 ? t->col0 - 1 : 0;
  const int64_t r1 = t->row0 + h < s->rows ? t->row0 + h + 1 : s->rows;
  const int64_t c1 = t->col0 + w < s->cols ? t->col0 + w + 1 : s->cols;
  const int64_t wr = r1 - r0, wc = c1 - c0;
  const int64_t pr0 = r0 - (t->row0 - 1), pc0 = c0 - (t->col0 - 1);
  if (!s->concurrent) pthread_mutex_lock(&s->io_mu);
  int rc = s->load(s->user, t, r0, c0, wr, wc, z + pr0 * pw + pc0, pw);
  if (!s->concurrent) pthread_mutex_unlock(&s->io_mu);
  if (rc != 0) {
    win_free(z);
    return NULL;
  }
  /* cells outside the grid are NaN; NoData becomes NaN and -0 becomes +0 */
  for (int64_t r = 0; r < ph; r++) {
    float *row = z + r * pw;
    if (r < pr0 || r >= pr0 + wr) {
      for (int64_t c = 0; c < pw; c++) row[c] = NAN;
      continue;
    }
    for (int64_t c = 0; c < pc0; c++) row[c] = NAN;
    for (int64_t c = pc0 + wc; c < pw; c++) row[c] = NAN;
    float *v = row + pc0;
    for (int64_t c = 0; c < wc; c++) v[c] = (s->has_nodata && v[c] == s->nodata) ? NAN : (v[c] == 0.0f ? 0.0f : v[c]);
  }
  return z;
}

float *tr_tile_store_get(tr_tile_store *s, const tr_tile *t) {
  pthread_mutex_lock(&s->mu);
  store_slot *slot = &s->slots[t->index];
  if (slot->z) {
    slot->in_use = 1;
    slot->stamp = ++s->clock;
    float *z = slot->z;
    pthread_mutex_unlock(&s->mu);
    return z;
  }
  pthread_mutex_unlock(&s->mu);
  return load_window(s, t);
}

void tr_tile_store_put(tr_tile_store *s, const tr_tile *t, float *z) {
  const size_t bytes = win_cap(z);
  pthread_mutex_lock(&s->mu);
  store_slot *slot = &s->slots[t->index];
  if (slot->z == z) {
    slot->in_use = 0;
    pthread_mutex_unlock(&s->mu);
    return;
  }
  if (bytes > s->largest) s->largest = bytes;
  const size_t room = cache_room(s);
  if (bytes <= room) {
    /* evict least recently used windows not in use until it fits; they
     * become spares while there is a place for one */
    while (s->cached + bytes > room) {
      int64_t victim = -1;
      for (int64_t i = 0; i < s->ntiles; i++)
        if (s->slots[i].z && !s->slots[i].in_use && (victim < 0 || s->slots[i].stamp < s->slots[victim].stamp))
          victim = i;
      if (victim < 0) break;
      store_slot *v = &s->slots[victim];
      s->cached -= win_cap(v->z);
      keep_or_free(s, v->z);
      v->z = NULL;
    }
    if (s->cached + bytes <= room) {
      slot->z = z;
      slot->in_use = 0;
      slot->stamp = ++s->clock;
      s->cached += bytes;
      pthread_mutex_unlock(&s->mu);
      return;
    }
  }
  keep_or_free(s, z);
  pthread_mutex_unlock(&s->mu);
}

size_t tr_tile_store_held(tr_tile_store *s) {
  pthread_mutex_lock(&s->mu);
  size_t n = s->cached;
  for (int i = 0; i < s->nspare; i++) n += win_cap(s->spare[i]);
  pthread_mutex_unlock(&s->mu);
  return n;
}

void tr_tile_store_concurrent_loads(tr_tile_store *s) { s->concurrent = 1; }

void tr_tile_store_io_lock(tr_tile_store *s) { pthread_mutex_lock(&s->io_mu); }

void tr_tile_store_io_unlock(tr_tile_store *s) { pthread_mutex_unlock(&s->io_mu); }
