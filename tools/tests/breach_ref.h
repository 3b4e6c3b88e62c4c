/*
 * breach_ref.h - a second depression breaching for test_breach.c, written
 * apart from the library's (libterrain/kernels/breach.c) so that the two
 * agreeing means something: the same definitions, another construction.
 *
 * - The flood's order (lowest elevation first, ties to the cell queued
 *   first) comes from a bucket queue, not a heap: every elevation the flood
 *   can meet is known before it starts (pits are raised first and nothing
 *   is cut before it is queued), so elevations become ranks, each rank a
 *   FIFO list threaded through the cells, and the lowest non-empty rank is
 *   found through two levels of bitmaps.
 * - A pit's path is first written out whole (its cells and the level a cut
 *   gives each), then one rule decides what to cut.
 * - Filling walks each cell's back links up to a cell already final and
 *   comes back down, instead of a pass in the order cells were queued.
 *
 * Two sets of rules: BR_OURS, what terrafort documents (terrafort-breach(1)),
 * and BR_RICHDEM, what RichDEM's rd_depressions_breach (Lindsay2016.hpp)
 * does: its CONSTRAINED branch (a path too long but shallow enough cut
 * whole; a path too deep lowered cell by cell by its whole depth, the pit
 * included) and its flood ending at the last pit even when filling. Where
 * the RichDEM binary and terrafort differ, the test shows each equal to its
 * rules here, so every difference is one of those two causes.
 */
#ifndef BREACH_REF_H
#define BREACH_REF_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { BR_COMPLETE = 0, BR_SELECTIVE = 1, BR_CONSTRAINED = 2 };
/* Rules: terrafort's, or RichDEM's constrained branch, or RichDEM's end of
 * the flood at the last pit, or both (RichDEM's program). */
enum { BR_OURS = 0, BR_RD_CONSTRAINED = 1, BR_RD_FLOOD_END = 2, BR_RICHDEM = 3 };

typedef struct {
  int mode, eps, fill;
  long max_len;     /* 0: none */
  double max_depth; /* 0: none */
  int rules;        /* BR_OURS, BR_RICHDEM or one of its two parts */
} br_ref_opts;

/* What happened to each pit, for the tests that count them. */
typedef struct {
  long pits, cut, left, over_length, over_depth;
} br_ref_log;

static int br_ref_cmp_float(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

/* The rank of z among the sorted distinct values u[0..nu). */
static int32_t br_ref_rank(const float *u, int32_t nu, float z) {
  int32_t lo = 0, hi = nu - 1;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (u[mid] < z) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

typedef struct {
  int32_t *head, *tail, *next, *rank;
  uint64_t *bits, *summary;
  int32_t nwords;
} br_ref_queue;

static void br_ref_push(br_ref_queue *q, int32_t cell) {
  const int32_t r = q->rank[cell];
  q->next[cell] = -1;
  if (q->head[r] < 0) {
    q->head[r] = cell;
    q->bits[r / 64] |= (uint64_t)1 << (r % 64);
    q->summary[r / 4096] |= (uint64_t)1 << ((r / 64) % 64);
  } else {
    q->next[q->tail[r]] = cell;
  }
  q->tail[r] = cell;
}

/* The first cell of the lowest non-empty rank, or -1. */
static int32_t br_ref_pop(br_ref_queue *q) {
  const int32_t nsum = (q->nwords + 63) / 64;
  int32_t s = 0;
  while (s < nsum && !q->summary[s]) s++;
  if (s == nsum) return -1;
  const int32_t w = s * 64 + __builtin_ctzll(q->summary[s]);
  const int32_t r = w * 64 + __builtin_ctzll(q->bits[w]);
  const int32_t cell = q->head[r];
  q->head[r] = q->next[cell];
  if (q->head[r] < 0) {
    q->bits[w] &= ~((uint64_t)1 << (r % 64));
    if (!q->bits[w]) q->summary[s] &= ~((uint64_t)1 << (w % 64));
  }
  return cell;
}

static float br_ref_below(float z) { return nextafterf(z, -FLT_MAX); }

/* Breaches z (rows x cols, NaN: nodata) in place; 0, or -1 out of memory. */
static int br_ref(float *z, int rows, int cols, const br_ref_opts *o, br_ref_log *log) {
  static const int dc[8] = {-1, -1, 0, 1, 1, 1, 0, -1}, dr[8] = {0, -1, -1, -1, 0, 1, 1, 1};
  const int32_t n = rows * cols;
  int32_t *link = malloc(sizeof(int32_t) * (size_t)n), *seeds = malloc(sizeof(int32_t) * (size_t)n);
  int32_t *path = malloc(sizeof(int32_t) * (size_t)n);
  float *level = malloc(sizeof(float) * (size_t)n), *sorted = malloc(sizeof(float) * (size_t)n),
        *base = malloc(sizeof(float) * (size_t)n);
  unsigned char *seen = calloc((size_t)n, 1), *is_pit = calloc((size_t)n, 1), *queued = calloc((size_t)n, 1),
                *final = calloc((size_t)n, 1);
  br_ref_queue q = {0};
  int ok = link && seeds && path && level && sorted && base && seen && is_pit && queued && final;
  memset(log, 0, sizeof *log);
  int32_t nseeds = 0, nu = 0;
  /* pits and edge cells, one row-major scan, pits raised in place as found */
  for (int32_t i = 0; ok && i < n; i++) {
    link[i] = -1;
    if (isnan(z[i])) continue;
    const int r = i / cols, c = i % cols;
    int edge = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
    float low = FLT_MAX;
    for (int k = 0; k < 8 && !edge; k++) {
      const float v = z[(r + dr[k]) * cols + c + dc[k]];
      if (isnan(v)) edge = 1;
      else low = v < low ? v : low;
    }
    if (edge) {
      seeds[nseeds++] = i;
      seen[i] = 1;
    } else {
      if (z[i] < low) z[i] = o->eps ? br_ref_below(low) : low;
      if (z[i] <= low) {
        is_pit[i] = 1;
        log->pits++;
      }
    }
  }
  /* the ranks of every elevation the flood will meet */
  for (int32_t i = 0; ok && i < n; i++)
    if (!isnan(z[i])) sorted[nu++] = z[i];
  if (ok) qsort(sorted, (size_t)nu, sizeof *sorted, br_ref_cmp_float);
  int32_t nd = 0;
  for (int32_t k = 0; ok && k < nu; k++)
    if (!nd || sorted[k] != sorted[nd - 1]) sorted[nd++] = sorted[k];
  q.nwords = (nd + 63) / 64 + 1;
  q.head = malloc(sizeof(int32_t) * (size_t)(nd + 1));
  q.tail = malloc(sizeof(int32_t) * (size_t)(nd + 1));
  q.next = malloc(sizeof(int32_t) * (size_t)n);
  q.rank = malloc(sizeof(int32_t) * (size_t)n);
  q.bits = calloc((size_t)q.nwords, sizeof(uint64_t));
  q.summary = calloc((size_t)(q.nwords + 63) / 64 + 1, sizeof(uint64_t));
  ok = ok && q.head && q.tail && q.next && q.rank && q.bits && q.summary;
  for (int32_t k = 0; ok && k <= nd; k++) q.head[k] = q.tail[k] = -1;
  for (int32_t i = 0; ok && i < n; i++) {
    q.rank[i] = isnan(z[i]) ? 0 : br_ref_rank(sorted, nd, z[i]);
    base[i] = z[i];
  }
  for (int32_t k = 0; ok && k < nseeds; k++) br_ref_push(&q, seeds[k]);
  const uint32_t max_len = o->max_len > 0 ? (uint32_t)o->max_len : UINT32_MAX;
  const float max_depth = o->max_depth > 0 ? (float)o->max_depth : INFINITY;
  const int to_the_end = o->fill && !(o->rules & BR_RD_FLOOD_END); /* RichDEM stops at the last pit */
  const int rd_constrained = (o->rules & BR_RD_CONSTRAINED) != 0;
  long pits_left = log->pits;
  int32_t c;
  while (ok && (c = br_ref_pop(&q)) >= 0) {
    if (is_pit[c]) {
      /* the path, written out: its cells and the level a cut gives each */
      int32_t len = 0;
      float lv = z[c], deepest = -FLT_MAX;
      for (int32_t x = c; x >= 0 && z[x] >= lv; x = link[x]) {
        path[len] = x;
        level[len++] = lv;
        const float d = z[x] - lv;
        deepest = d > deepest ? d : deepest;
        if (o->eps) lv = br_ref_below(lv);
      }
      const int too_long = (uint32_t)len > max_len, too_deep = deepest > max_depth, fits = !too_long && !too_deep;
      log->over_length += too_long;
      log->over_depth += too_deep;
      log->cut += fits;
      log->left += !fits;
      if (o->mode == BR_COMPLETE || (fits && (o->mode == BR_SELECTIVE || rd_constrained))) {
        for (int32_t k = 0; k < len; k++) z[path[k]] = level[k];
      } else if (o->mode == BR_CONSTRAINED && !rd_constrained) {
        /* at most max_len cells, none below its DEM elevation less the depth */
        for (int32_t k = 0; k < len && (uint32_t)k < max_len; k++) {
          float least = -INFINITY;
          if (o->max_depth > 0) {
            least = (float)((double)base[path[k]] - o->max_depth);
            while ((double)least < (double)base[path[k]] - o->max_depth) least = nextafterf(least, FLT_MAX);
          }
          const float v = level[k] > least ? level[k] : least;
          if (v < z[path[k]]) z[path[k]] = v;
        }
      } else if (o->mode == BR_CONSTRAINED) {
        /* RichDEM's branch for a path over a limit: from the pit on, every
         * cell not below the pit's elevation either set to a level falling
         * one step a cell from the pit's (depth within the limit), or
         * lowered by the whole depth */
        const float target = z[c];
        float cur = z[c];
        for (int32_t x = c; x >= 0 && z[x] >= target; x = link[x]) {
          if (!too_deep) z[x] = cur;
          else z[x] -= deepest;
          if (o->eps) cur = br_ref_below(cur);
        }
      }
      if (--pits_left == 0 && !to_the_end) break;
    }
    const int r = c / cols, cc = c % cols;
    for (int k = 0; k < 8; k++) {
      const int rr = r + dr[k], c2 = cc + dc[k];
      if (rr < 0 || rr >= rows || c2 < 0 || c2 >= cols) continue;
      const int32_t j = rr * cols + c2;
      if (isnan(z[j]) || seen[j]) continue;
      seen[j] = queued[j] = 1;
      link[j] = c;
      br_ref_push(&q, j);
    }
  }
  /* filling: up each queued cell's back links to a final cell, then down */
  for (int32_t i = 0; ok && o->fill && o->mode != BR_COMPLETE && i < n; i++) {
    if (!queued[i] || final[i]) continue;
    int32_t m = 0;
    for (int32_t x = i; queued[x] && !final[x]; x = link[x]) path[m++] = x;
    while (m-- > 0) {
      const int32_t x = path[m];
      const float up = z[link[x]];
      if (z[x] <= up) z[x] = o->eps ? nextafterf(up, FLT_MAX) : up;
      final[x] = 1;
    }
  }
  free(link);
  free(seeds);
  free(path);
  free(level);
  free(sorted);
  free(base);
  free(seen);
  free(is_pit);
  free(queued);
  free(final);
  free(q.head);
  free(q.tail);
  free(q.next);
  free(q.rank);
  free(q.bits);
  free(q.summary);
  return ok ? 0 : -1;
}

#endif
