/*
 * pool.c - objects a graph program's rounds reuse (pool.h).
 */
#include "pool.h"

#include <stdlib.h>

void tr_pool_init(tr_pool *p, size_t size, void (*destroy)(void *obj)) {
  pthread_mutex_init(&p->mu, NULL);
  p->items = NULL;
  p->n = p->cap = 0;
  p->size = size;
  p->destroy = destroy;
}

void *tr_pool_get(tr_pool *p) {
  void *obj = NULL;
  pthread_mutex_lock(&p->mu);
  if (p->n > 0) obj = p->items[--p->n];
  pthread_mutex_unlock(&p->mu);
  return obj ? obj : calloc(1, p->size);
}

void tr_pool_put(tr_pool *p, void *obj) {
  if (!obj) return;
  pthread_mutex_lock(&p->mu);
  if (p->n == p->cap) {
    const int cap = p->cap ? 2 * p->cap : 8;
    void **items = realloc(p->items, (size_t)cap * sizeof *items);
    if (items) {
      p->items = items;
      p->cap = cap;
    }
  }
  if (p->n < p->cap) {
    p->items[p->n++] = obj;
    obj = NULL;
  }
  pthread_mutex_unlock(&p->mu);
  if (obj) p->destroy(obj);
}

void tr_pool_free(tr_pool *p) {
  for (int i = 0; i < p->n; i++) p->destroy(p->items[i]);
  free(p->items);
  p->items = NULL;
  p->n = p->cap = 0;
  pthread_mutex_destroy(&p->mu);
}
