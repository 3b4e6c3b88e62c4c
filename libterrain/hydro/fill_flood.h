/*
 * fill_flood.h - the priority-flood kernel the fill programs' rounds share
 * (fill_flood.c), and its queues. Private to the fill programs (fill_program.c, fill_perimeter.c).
 */
#ifndef TR_FILL_FLOOD_H
#define TR_FILL_FLOOD_H

#include <stddef.h>
#include <stdint.h>

typedef struct fill_ent {
  float v;
  uint32_t i;
} fill_ent;

/* A radix heap over the values' bits, for floods (this file's fill_flood and
 * the perimeter program's): bucket b > 0 holds the entries whose key (the
 * value's bits made to sort as the floats do) first differs from the last
 * key popped at bit b - 1, bucket 0 those equal to it. A flood only queues
 * values at or above the level it pops (and its seeds before the first
 * pop), so keys never go below the last one popped: each entry moves down a
 * bucket at most 32 times, and a pop costs no comparisons but the scan of
 * the bucket it empties. */
typedef struct fill_rent {
  uint32_t k, i;
} fill_rent;

typedef struct fill_radix {
  fill_rent *b[33];
  size_t n[33], cap[33];
  uint32_t last; /* the key last popped (0 before the first pop) */
  size_t total;  /* entries in all buckets */
  int oom;       /* an entry could not be stored: the flood must stop */
} fill_radix;

/* Queues (v, i): v at or above the last value popped since the reset. */
void fill_radix_push(fill_radix *r, float v, uint32_t i);
/* An entry of the lowest value (call with total > 0): its index, its value in *v. */
uint32_t fill_radix_pop(fill_radix *r, float *v);
/* Empty, ready for any values (the buffers kept). */
void fill_radix_reset(fill_radix *r);
void fill_radix_free(fill_radix *r);

typedef struct fill_queues {
  fill_ent *heap; /* the binary heap (fill_heap_push/pop: the perimeter program) */
  size_t hn, hcap;
  fill_radix rq; /* fill_flood's queue */
  uint32_t *fifo;
  size_t fh, ft, fcap;
  int oom;
} fill_queues;

void fill_queues_free(fill_queues *q);
void fill_heap_push(fill_queues *q, float v, uint32_t i);
/* The entry of lowest value (call with q->hn > 0). */
fill_ent fill_heap_pop(fill_queues *q);
/* f_aggr of both fill programs (a perimeter cell's W): the lower value. */
int fill_aggr_min(void *user, void *acc, const void *value);
/* up(x) of the epsilon variant */
float fill_up(float x, float eps);
/* Floods from the queued seeds until both queues are empty; returns cells popped, or -1
 * when a queue could not grow. pw = padded row length. */
int64_t fill_flood(float *W, const float *Z, int64_t pw, fill_queues *q, int epsilon,
                   float eps);

#endif
