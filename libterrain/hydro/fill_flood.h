/*
 * fill_flood.h - the priority-flood kernel the fill programs' rounds share
 * (fill_flood.c), and its queues. Private to the fill programs (fill_program.c, fill_perimeter.c).
 */
#ifndef TR_FILL_FLOOD_H
#define TR_FILL_FLOOD_H

#include <stddef.h>
#include <stdint.h>

#include "radix_heap.h"

typedef struct fill_ent {
  float v;
  uint32_t i;
} fill_ent;

typedef struct fill_queues {
  fill_ent *heap; /* the binary heap (fill_heap_push/pop: the perimeter program) */
  size_t hn, hcap;
  tr_radix rq; /* fill_flood's queue */
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
