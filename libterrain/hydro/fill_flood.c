/*
 * fill_flood.c - the priority-flood kernel that PEval and IncEval of the fill share.
 *
 * It works on one fragment's padded arrays ((rows+2) x (cols+2), the halo around the
 * tile): W (the current upper bound, lowered in place) and Z (elevations, NaN for NoData
 * and outside the grid). Halo cells of W hold -inf and NoData cells NaN, so the single test
 * `W[n] > level` rejects both, and every interior cell's 8 neighbours exist in the padded
 * array, so the inner loop needs no bounds checks.
 *
 * Flat fill is Barnes et al.'s Priority-Flood with a plain FIFO for cells inside
 * depressions (their value is the current level, so FIFO order is priority order) and a
 * radix heap of (value, index) for the rest (core/radix_heap.h: every value queued
 * is above the level being popped, so the queue is monotone; a binary heap's sift-down
 * was half of the fill's time); the epsilon variant raises by up() at each step, so all
 * its cells go through the heap (a FIFO would break priority order). Since a
 * cell is only ever lowered (`cand < W[n]`), the loop is also correct from any set of
 * seeds in any order: it is a label-correcting fixed point, and the priority order only
 * keeps the work near one pop per cell. Stale heap entries (value above W) are skipped.
 */
#include "fill_flood.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void fill_queues_free(fill_queues *q) {
  free(q->heap);
  free(q->fifo);
  tr_radix_free(&q->rq);
  memset(q, 0, sizeof *q);
}

float fill_up(float x, float eps) {
  float n = nextafterf(x, INFINITY);
  /* nextafterf(-denorm_min) is -0: keep zeros positive, as z_load does (a -0 would tie
     with a +0 from elsewhere and make the output depend on message order) */
  if (n == 0.0f) n = 0.0f;
  if (eps > 0) {
    float y = x + eps;
    return y > n ? y : n;
  }
  return n;
}

void fill_heap_push(fill_queues *q, float v, uint32_t i) {
  if (q->hn == q->hcap) {
    size_t cap = q->hcap ? 2 * q->hcap : 1024;
    fill_ent *h = realloc(q->heap, cap * sizeof *h);
    if (!h) {
      q->oom = 1;
      return;
    }
    q->heap = h;
    q->hcap = cap;
  }
  fill_ent *h = q->heap;
  size_t k = q->hn++;
  while (k > 0) {
    size_t p = (k - 1) >> 1;
    if (h[p].v <= v) break;
    h[k] = h[p];
    k = p;
  }
  h[k].v = v;
  h[k].i = i;
}

fill_ent fill_heap_pop(fill_queues *q) {
  fill_ent *h = q->heap;
  fill_ent top = h[0], last = h[--q->hn];
  size_t n = q->hn, k = 0;
  for (;;) {
    size_t c = 2 * k + 1;
    if (c >= n) break;
    if (c + 1 < n && h[c + 1].v < h[c].v) c++;
    if (h[c].v >= last.v) break;
    h[k] = h[c];
    k = c;
  }
  if (n) h[k] = last;
  return top;
}

static inline void fifo_push(fill_queues *q, uint32_t i) {
  if (q->ft == q->fcap) {
    if (q->fh > 0) {
      memmove(q->fifo, q->fifo + q->fh, (q->ft - q->fh) * sizeof(uint32_t));
      q->ft -= q->fh;
      q->fh = 0;
    } else {
      size_t cap = q->fcap ? 2 * q->fcap : 4096;
      uint32_t *f = realloc(q->fifo, cap * sizeof *f);
      if (!f) {
        q->oom = 1;
        return;
      }
      q->fifo = f;
      q->fcap = cap;
    }
  }
  q->fifo[q->ft++] = i;
}

int64_t fill_flood(float *W, const float *Z, int64_t pw, fill_queues *q, int epsilon,
                   float eps) {
  const int64_t d[8] = {-pw - 1, -pw, -pw + 1, -1, 1, pw - 1, pw, pw + 1};
  int64_t work = 0;
  for (;;) {
    uint32_t i;
    float lv;
    if (q->fh < q->ft) {
      i = q->fifo[q->fh++];
      lv = W[i];
    } else {
      q->fh = q->ft = 0;
      if (q->rq.total == 0 || q->oom || q->rq.oom) break;
      float v;
      const uint32_t j = tr_radix_pop(&q->rq, &v);
      if (v > W[j]) continue; /* stale */
      i = j;
      lv = v;
    }
    work++;
    if (!epsilon) {
      for (int k = 0; k < 8; k++) {
        int64_t n = (int64_t)i + d[k];
        float wn = W[n];
        if (!(wn > lv)) continue;
        float z = Z[n];
        if (z <= lv) {
          W[n] = lv;
          fifo_push(q, (uint32_t)n);
        } else if (z < wn) {
          W[n] = z;
          tr_radix_push(&q->rq, z, (uint32_t)n);
        }
      }
    } else {
      float up = fill_up(lv, eps);
      for (int k = 0; k < 8; k++) {
        int64_t n = (int64_t)i + d[k];
        float wn = W[n];
        if (!(wn > up)) continue;
        float z = Z[n];
        float cand = z > up ? z : up;
        if (cand < wn) {
          W[n] = cand;
          tr_radix_push(&q->rq, cand, (uint32_t)n);
        }
      }
    }
    if (q->oom || q->rq.oom) return -1;
  }
  q->rq.last = 0; /* empty: the next flood's seeds may be any values */
  return q->oom || q->rq.oom ? -1 : work;
}

int fill_aggr_min(void *user, void *acc, const void *value) {
  (void)user;
  float a, v;
  memcpy(&a, acc, sizeof a);
  memcpy(&v, value, sizeof v);
  if (v < a) {
    memcpy(acc, &v, sizeof v);
    return 1;
  }
  return 0;
}
