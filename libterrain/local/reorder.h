/*
 * reorder.h - the local runner's reorder window: threads finish tiles in any
 * order, the sink takes them in tile order (internal to libterrain).
 *
 * Why: with an OpenMP ordered region a thread that finished tile k waits,
 * spinning, until tile k-1 is written, so the write of every tile stalls a
 * compute thread and the spinning takes a core from the others (and from
 * anything else on the machine). Here a thread that finishes a tile leaves
 * it in a slot and goes on to its next tile; whichever thread finds the
 * writer's role free writes every consecutive finished tile. A thread waits
 * (asleep on a condition variable, never spinning) only when it is a whole
 * window of slots ahead of the writer, which bounds memory to `slots` tiles.
 *
 * Tiles are numbered 0, 1, 2, ... in the order they must reach the sink (the
 * k-th tile this rank owns); every number must be finished exactly once,
 * until the window is stopped: then no tile is written any more (the one
 * being written finishes), no thread waits, and the tiles not yet taken may
 * be left unfinished. A run being cancelled stops it, so that its threads
 * do not take the rest of the tiles one by one through the window (millions
 * for a large output: 16 s of lock traffic for a 10^12-cell grid, issue 28)
 * or wait on a writer held in a long GDAL call.
 * Thread safety: every call may come from any thread at once.
 */
#ifndef TR_REORDER_H
#define TR_REORDER_H

#include <pthread.h>
#include <stdint.h>

/* Writes tile k (its slot's buffer); called in increasing k, one at a time. */
typedef void (*tr_reorder_write_fn)(void *user, int64_t k, void *buf);

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t freed;   /* a slot was written and can take a new tile */
  int slots;
  void **buf;             /* slots buffers of buf_bytes */
  unsigned char *ready;   /* slot holds a finished tile */
  int64_t next;           /* the next tile to write */
  int writing;            /* a thread holds the writer's role */
  tr_reorder_write_fn write;
  void *user;
  int (*stop)(void *user); /* polled by waiting threads; may be NULL */
  void *stop_user;
  int stopped;
  size_t buf_bytes;
} tr_reorder;

/* 0, or -1 when out of memory. stop (may be NULL) is asked every
 * TR_REORDER_POLL_MS by a thread waiting for a slot: nonzero stops the
 * window (tr_reorder_stop). */
int tr_reorder_init(tr_reorder *r, int slots, size_t buf_bytes, tr_reorder_write_fn write, void *user,
                    int (*stop)(void *user), void *stop_user);
void tr_reorder_destroy(tr_reorder *r);
#define TR_REORDER_POLL_MS 20

/* The buffer tile k is computed into: waits while slot k mod slots still
 * holds a tile that is not written. NULL once the window is stopped. */
void *tr_reorder_acquire(tr_reorder *r, int64_t k);

/* Tile k is finished: writes it, and every finished tile after it, unless
 * another thread is writing (that thread will) or the window is stopped. */
void tr_reorder_done(tr_reorder *r, int64_t k);

/* Tile k's buffer (acquired, not yet done) lost a page to a memory failure
 * (memfail.h): retires it for good and gives the slot a fresh one, which it
 * returns (NULL when out of memory: the slot keeps the old one). */
void *tr_reorder_renew(tr_reorder *r, int64_t k);

/* Stops the window (see above) and wakes every waiting thread. */
void tr_reorder_stop(tr_reorder *r);

/* Whether the window was stopped (by tr_reorder_stop or its stop poll). */
int tr_reorder_stopped(tr_reorder *r);

#endif
