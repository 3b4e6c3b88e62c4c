/*
 * pool.h - objects a graph program's rounds reuse (internal to libterrain).
 *
 * A round needs scratch (queues, heaps, label arrays) sized by its tile; rounds on
 * several threads each take one. tr_pool_get hands out a kept object, else a new
 * zeroed one; tr_pool_put keeps it for the next round, so rounds stop allocating
 * once every thread has one; tr_pool_free destroys what is kept. What an object
 * must reset between rounds is its owner's business (before put or after get).
 */
#ifndef TR_POOL_H
#define TR_POOL_H

#include <pthread.h>
#include <stddef.h>

typedef struct tr_pool {
  pthread_mutex_t mu;
  void **items;
  int n, cap;
  size_t size;                /* a new object's size: calloc'd */
  void (*destroy)(void *obj); /* frees an object and what it holds */
} tr_pool;

void tr_pool_init(tr_pool *p, size_t size, void (*destroy)(void *obj));
/* NULL when out of memory. */
void *tr_pool_get(tr_pool *p);
/* Kept; destroyed instead when the list cannot grow. NULL is ignored. */
void tr_pool_put(tr_pool *p, void *obj);
void tr_pool_free(tr_pool *p);

#endif
