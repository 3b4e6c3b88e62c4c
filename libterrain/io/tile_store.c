/*
 * tile_store.c - the in-memory tile store: an LRU cache of padded input
 * windows over a loader (see tile_store.h).
 */
#include "tile_store.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct {
  float *z;        /* cached padded window, or NULL */
  uint64_t stamp;  /* LRU clock */
  int in_use;
  int64_t rows, cols;
} store_slot;

struct tr_tile_store {
  int64_t rows, cols, ntiles;
  size_t budget, cached;
  int has_nodata;
  float nodata;
  tr_store_load_fn load;
  void *user;
  store_slot *slots;
  uint64_t clock;
  pthread_mutex_t mu;     /* slots, cache */
  pthread_mutex_t io_mu;  /* the loader */
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

void tr_tile_store_destroy(tr_tile_store *s) {
  if (!s) return;
  for (int64_t i = 0; i < s->ntiles; i++) free(s->slots[i].z);
  free(s->slots);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->io_mu);
  free(s);
}

static float *load_window(tr_tile_store *s, const tr_tile *t) {
  const int64_t h = t->rows, w = t->cols, pw = w + 2, ph = h + 2;
  float *z = malloc((size_t)(pw * ph) * sizeof(float));
  if (!z) return NULL;
  for (int64_t i = 0; i < pw * ph; i++) z[i] = NAN;
  /* the window clipped to the grid */
  const int64_t r0 = t->row0 > 0 ? t->row0 - 1 : 0, c0 = t->col0 > 0 ? t->col0 - 1 : 0;
  const int64_t r1 = t->row0 + h < s->rows ? t->row0 + h + 1 : s->rows;
  const int64_t c1 = t->col0 + w < s->cols ? t->col0 + w + 1 : s->cols;
  const int64_t wr = r1 - r0, wc = c1 - c0;
  float *tmp = malloc((size_t)(wr * wc) * sizeof(float));
  if (!tmp) {
    free(z);
    return NULL;
  }
  pthread_mutex_lock(&s->io_mu);
  int rc = s->load(s->user, t, r0, c0, wr, wc, tmp);
  pthread_mutex_unlock(&s->io_mu);
  if (rc != 0) {
    free(tmp);
    free(z);
    return NULL;
  }
  const int64_t pr0 = r0 - (t->row0 - 1), pc0 = c0 - (t->col0 - 1);
  for (int64_t r = 0; r < wr; r++) {
    float *dst = z + (pr0 + r) * pw + pc0;
    const float *src = tmp + r * wc;
    for (int64_t c = 0; c < wc; c++) {
      const float v = src[c];
      dst[c] = (s->has_nodata && v == s->nodata) ? NAN : (v == 0.0f ? 0.0f : v);
    }
  }
  free(tmp);
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
  const size_t bytes = (size_t)((t->rows + 2) * (t->cols + 2)) * sizeof(float);
  pthread_mutex_lock(&s->mu);
  store_slot *slot = &s->slots[t->index];
  if (slot->z == z) {
    slot->in_use = 0;
    pthread_mutex_unlock(&s->mu);
    return;
  }
  if (bytes <= s->budget) {
    /* evict least recently used windows not in use until it fits */
    while (s->cached + bytes > s->budget) {
      int64_t victim = -1;
      for (int64_t i = 0; i < s->ntiles; i++)
        if (s->slots[i].z && !s->slots[i].in_use && (victim < 0 || s->slots[i].stamp < s->slots[victim].stamp))
          victim = i;
      if (victim < 0) break;
      store_slot *v = &s->slots[victim];
      s->cached -= (size_t)((v->rows + 2) * (v->cols + 2)) * sizeof(float);
      free(v->z);
      v->z = NULL;
    }
    if (s->cached + bytes <= s->budget) {
      slot->z = z;
      slot->in_use = 0;
      slot->stamp = ++s->clock;
      slot->rows = t->rows;
      slot->cols = t->cols;
      s->cached += bytes;
      pthread_mutex_unlock(&s->mu);
      return;
    }
  }
  pthread_mutex_unlock(&s->mu);
  free(z);
}

void tr_tile_store_io_lock(tr_tile_store *s) { pthread_mutex_lock(&s->io_mu); }

void tr_tile_store_io_unlock(tr_tile_store *s) { pthread_mutex_unlock(&s->io_mu); }
