/*
 * reorder.c - the reorder window (see reorder.h).
 */
#include "reorder.h"

#include <stdlib.h>
#include <time.h>

#include "memfail.h"

int tr_reorder_init(tr_reorder *r, int slots, size_t buf_bytes, tr_reorder_write_fn write, void *user,
                    int (*stop)(void *user), void *stop_user) {
  r->slots = slots;
  r->stop = stop;
  r->stop_user = stop_user;
  r->stopped = 0;
  r->buf = calloc((size_t)slots, sizeof *r->buf);
  r->ready = calloc((size_t)slots, 1);
  r->next = 0;
  r->writing = 0;
  r->write = write;
  r->user = user;
  r->buf_bytes = buf_bytes ? buf_bytes : 1;
  pthread_mutex_init(&r->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the poll's deadline: immune to clock changes */
  pthread_cond_init(&r->freed, &ca);
  pthread_condattr_destroy(&ca);
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

void *tr_reorder_renew(tr_reorder *r, int64_t k) {
  void *fresh = malloc(r->buf_bytes);
  if (!fresh) return NULL;
  pthread_mutex_lock(&r->mu);
  void **b = &r->buf[k % r->slots];
  tr_memfail_retire(*b, r->buf_bytes);
  *b = fresh;
  pthread_mutex_unlock(&r->mu);
  return fresh;
}

/* Under r->mu: stops the window when the stop poll says so. */
static void poll_stop(tr_reorder *r) {
  if (!r->stopped && r->stop && r->stop(r->stop_user)) {
    r->stopped = 1;
    pthread_cond_broadcast(&r->freed);
  }
}

void *tr_reorder_acquire(tr_reorder *r, int64_t k) {
  pthread_mutex_lock(&r->mu);
  /* tile k - slots used this slot; it leaves when the writer reaches it, and
   * it will: every tile before k was handed to a thread that is computing it
   * or has finished it, and none of those waits on k. The writer may be in
   * a long call (GDAL compressing a block, writing a directory): the wait
   * asks the stop poll every TR_REORDER_POLL_MS meanwhile. */
  while (!r->stopped && k - r->next >= r->slots) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += TR_REORDER_POLL_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&r->freed, &r->mu, &until);
    poll_stop(r);
  }
  void *b = r->stopped ? NULL : r->buf[k % r->slots];
  pthread_mutex_unlock(&r->mu);
  return b;
}

void tr_reorder_stop(tr_reorder *r) {
  pthread_mutex_lock(&r->mu);
  r->stopped = 1;
  pthread_cond_broadcast(&r->freed);
  pthread_mutex_unlock(&r->mu);
}

int tr_reorder_stopped(tr_reorder *r) {
  pthread_mutex_lock(&r->mu);
  const int s = r->stopped;
  pthread_mutex_unlock(&r->mu);
  return s;
}

void tr_reorder_done(tr_reorder *r, int64_t k) {
  pthread_mutex_lock(&r->mu);
  r->ready[k % r->slots] = 1;
  if (r->writing || r->stopped) {
    pthread_mutex_unlock(&r->mu);
    return;
  }
  r->writing = 1;
  while (!r->stopped && r->ready[r->next % r->slots]) {
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
