/*
 * reorder.c - the reorder window (see reorder.h).
 */
#include "reorder.h"

#include <stdlib.h>

int tr_reorder_init(tr_reorder *r, int slots, size_t buf_bytes, tr_reorder_write_fn write, void *user) {
  r->slots = slots;
  r->buf = calloc((size_t)slots, sizeof *r->buf);
  r->ready = calloc((size_t)slots, 1);
  r->next = 0;
  r->writing = 0;
  r->write = write;
  r->user = user;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->freed, NULL);
  int ok = r->buf && r->ready;
  for (int i = 0; ok && i < slots; i++) ok = (r->buf[i] = malloc(buf_bytes ? buf_bytes : 1)) != NULL;
  if (!ok) tr_reorder_destroy(r);
  return ok ? 0 : -1;
}

void tr_reorder_destroy(tr_reorder *r) {
  if (r->buf)
    for (int i = 0; i < r->slots; i++) free(r->buf[i]);
  free(r->buf);
  free(r->ready);
  r->buf = NULL;
  r->ready = NULL;
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->freed);
}

void *tr_reorder_acquire(tr_reorder *r, int64_t k) {
  pthread_mutex_lock(&r->mu);
  /* tile k - slots used this slot; it leaves when the writer reaches it, and
   * it will: every tile before k was handed to a thread that is computing it
   * or has finished it, and none of those waits on k */
  while (k - r->next >= r->slots) pthread_cond_wait(&r->freed, &r->mu);
  void *b = r->buf[k % r->slots];
  pthread_mutex_unlock(&r->mu);
  return b;
}

void tr_reorder_done(tr_reorder *r, int64_t k) {
  pthread_mutex_lock(&r->mu);
  r->ready[k % r->slots] = 1;
  if (r->writing) {
    pthread_mutex_unlock(&r->mu);
    return;
  }
  r->writing = 1;
  while (r->ready[r->next % r->slots]) {
    const int64_t i = r->next;
    void *b = r->buf[i % r->slots];
    pthread_mutex_unlock(&r->mu);
    r->write(r->user, i, b);
    pthread_mutex_lock(&r->mu);
    r->ready[i % r->slots] = 0;
    r->next = i + 1;
    pthread_cond_broadcast(&r->freed);
  }
  r->writing = 0;
  pthread_mutex_unlock(&r->mu);
}
