/*
 * point_index.c - the bucket grid over the points (see point_index.h).
 *
 * Layout of a view's bytes: tr_pview_head, then nx * ny + 1 int64 offsets
 * (bucket b's points are pt[start[b] .. start[b + 1]), buckets row-major),
 * then the points. The whole index is the view of every bucket.
 *
 * The k-nearest search walks square rings of buckets outwards from the
 * query's bucket and stops once the next ring cannot hold a point closer
 * than the k-th found (or beyond the radius). Its answer is ordered by
 * (distance, input order), never by the walk, so it is the same from any
 * view that holds the answer.
 */
#include "point_index.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* points per bucket on average: 1, 2 and 4 measured alike for k = 12 */
#define PPB 2.0

static size_t view_bytes(int64_t nb, int64_t n) {
  return sizeof(tr_pview_head) + (size_t)(nb + 1) * sizeof(int64_t) + (size_t)n * sizeof(tr_ipoint);
}

tr_pview tr_pview_open(const void *bytes) {
  tr_pview v;
  v.h = bytes;
  v.start = (const int64_t *)((const unsigned char *)bytes + sizeof(tr_pview_head));
  v.pt = (const tr_ipoint *)(v.start + v.h->nx * v.h->ny + 1);
  return v;
}

/* The global bucket of a coordinate, clamped to [lo, hi]: monotone in c. */
static int64_t bucket_of(double c, double c0, double cell, int64_t lo, int64_t hi) {
  const double f = floor((c - c0) / cell);
  if (!(f >= (double)lo)) return lo; /* also NaN */
  if (f >= (double)hi) return hi;
  return (int64_t)f;
}

void tr_pindex_plan(int64_t n, double xmin, double ymin, double xmax, double ymax, tr_pview_head *hd) {
  const double w = xmax - xmin, h = ymax - ymin;
  const double nn = n > 0 ? (double)n : 1.0;
  /* about two points per bucket; a line of points gets buckets along it */
  double cell = w > 0 && h > 0 ? sqrt(w * h * PPB / nn) : (w > h ? w : h) * PPB / nn;
  if (!(cell > 0) || !isfinite(cell)) cell = 1.0;
  int64_t gnx, gny;
  for (;;) {
    gnx = (int64_t)floor(w / cell) + 1;
    gny = (int64_t)floor(h / cell) + 1;
    if ((double)gnx * (double)gny <= 4.0 * nn + 64.0) break;
    cell *= 1.5; /* a very long thin cloud: fewer, longer buckets */
  }
  *hd = (tr_pview_head){xmin, ymin, cell, gnx, gny, 0, 0, gnx, gny, n, n};
}

int64_t tr_pindex_bucket(const tr_pview_head *h, double x, double y) {
  return bucket_of(y, h->y0, h->cell, 0, h->gny - 1) * h->gnx + bucket_of(x, h->x0, h->cell, 0, h->gnx - 1);
}

size_t tr_pview_bytes(int64_t buckets, int64_t n) { return view_bytes(buckets, n); }

int tr_pindex_build(tr_pindex *ix, const double *x, const double *y, const double *z, int64_t n) {
  memset(ix, 0, sizeof *ix);
  double xmin = 0, xmax = 0, ymin = 0, ymax = 0;
  for (int64_t i = 0; i < n; i++) {
    if (i == 0 || x[i] < xmin) xmin = x[i];
    if (i == 0 || x[i] > xmax) xmax = x[i];
    if (i == 0 || y[i] < ymin) ymin = y[i];
    if (i == 0 || y[i] > ymax) ymax = y[i];
  }
  tr_pview_head plan;
  tr_pindex_plan(n, xmin, ymin, xmax, ymax, &plan);
  const int64_t gnx = plan.gnx, gny = plan.gny;
  const int64_t nb = gnx * gny;
  ix->size = view_bytes(nb, n);
  ix->bytes = malloc(ix->size);
  int64_t *bucket = malloc((size_t)(n > 0 ? n : 1) * sizeof *bucket);
  if (!ix->bytes || !bucket) {
    free(ix->bytes);
    free(bucket);
    ix->bytes = NULL;
    return -1;
  }
  tr_pview_head *hd = (tr_pview_head *)ix->bytes;
  *hd = plan;
  int64_t *start = (int64_t *)(ix->bytes + sizeof *hd);
  tr_ipoint *pt = (tr_ipoint *)(start + nb + 1);
  memset(start, 0, (size_t)(nb + 1) * sizeof *start);
  for (int64_t i = 0; i < n; i++) {
    bucket[i] = tr_pindex_bucket(hd, x[i], y[i]);
    start[bucket[i] + 1]++;
  }
  for (int64_t b = 0; b < nb; b++) start[b + 1] += start[b];
  /* counting sort, stable: input order inside a bucket */
  for (int64_t i = 0; i < n; i++) {
    const int64_t at = start[bucket[i]]++;
    pt[at] = (tr_ipoint){x[i], y[i], z[i], i};
  }
  for (int64_t b = nb; b > 0; b--) start[b] = start[b - 1];
  start[0] = 0;
  free(bucket);
  ix->all = tr_pview_open(ix->bytes);
  return 0;
}

void tr_pindex_free(tr_pindex *ix) {
  free(ix->bytes);
  memset(ix, 0, sizeof *ix);
}

void tr_pview_range(const tr_pview *v, double xmin, double ymin, double xmax, double ymax, int64_t *x0, int64_t *y0,
                    int64_t *x1, int64_t *y1) {
  const tr_pview_head *h = v->h;
  if (!(xmin <= xmax && ymin <= ymax)) { /* an empty rectangle */
    *x0 = *y0 = 0;
    *x1 = *y1 = -1;
    return;
  }
  /* global buckets, one past the grid on either side when outside it */
  const int64_t gx0 = bucket_of(xmin, h->x0, h->cell, -1, h->gnx), gx1 = bucket_of(xmax, h->x0, h->cell, -1, h->gnx);
  const int64_t gy0 = bucket_of(ymin, h->y0, h->cell, -1, h->gny), gy1 = bucket_of(ymax, h->y0, h->cell, -1, h->gny);
  *x0 = (gx0 > h->bx0 ? gx0 : h->bx0) - h->bx0;
  *x1 = (gx1 < h->bx0 + h->nx - 1 ? gx1 : h->bx0 + h->nx - 1) - h->bx0;
  *y0 = (gy0 > h->by0 ? gy0 : h->by0) - h->by0;
  *y1 = (gy1 < h->by0 + h->ny - 1 ? gy1 : h->by0 + h->ny - 1) - h->by0;
}

size_t tr_pview_size(const tr_pview *v, double xmin, double ymin, double xmax, double ymax) {
  int64_t x0, y0, x1, y1;
  tr_pview_range(v, xmin, ymin, xmax, ymax, &x0, &y0, &x1, &y1);
  if (x1 < x0 || y1 < y0) return view_bytes(0, 0);
  int64_t n = 0;
  for (int64_t by = y0; by <= y1; by++) {
    int64_t lo, hi;
    tr_pview_row(v, by, x0, x1, &lo, &hi);
    n += hi - lo;
  }
  return view_bytes((x1 - x0 + 1) * (y1 - y0 + 1), n);
}

void tr_pview_copy(const tr_pview *v, double xmin, double ymin, double xmax, double ymax, void *dst) {
  int64_t x0, y0, x1, y1;
  tr_pview_range(v, xmin, ymin, xmax, ymax, &x0, &y0, &x1, &y1);
  tr_pview_head *h = dst;
  *h = *v->h;
  if (x1 < x0 || y1 < y0) {
    h->nx = h->ny = h->n = 0;
    *(int64_t *)(h + 1) = 0;
    return;
  }
  h->bx0 = v->h->bx0 + x0;
  h->by0 = v->h->by0 + y0;
  h->nx = x1 - x0 + 1;
  h->ny = y1 - y0 + 1;
  int64_t *start = (int64_t *)(h + 1);
  tr_ipoint *pt = (tr_ipoint *)(start + h->nx * h->ny + 1);
  int64_t n = 0, b = 0;
  for (int64_t by = y0; by <= y1; by++) {
    const int64_t *s = v->start + by * v->h->nx;
    for (int64_t bx = x0; bx <= x1; bx++) start[b++] = n + (s[bx] - s[x0]);
    const int64_t lo = s[x0], hi = s[x1 + 1];
    memcpy(pt + n, v->pt + lo, (size_t)(hi - lo) * sizeof *pt);
    n += hi - lo;
  }
  start[b] = n;
  h->n = n;
}

/* ------------------------------------------------------- k nearest */

typedef struct {
  int64_t k, m;   /* wanted, found */
  int ties_last;
  int64_t *idx;
  double *d2;
  const tr_ipoint *pt;
} knn_set;

/* a ranks before b: closer, or as close and earlier (later when ties_last) */
static inline int knn_before(const knn_set *s, double da, int64_t a, double db, int64_t b) {
  if (da != db) return da < db;
  return s->ties_last ? s->pt[a].id > s->pt[b].id : s->pt[a].id < s->pt[b].id;
}

static inline void knn_offer(knn_set *s, int64_t i, double d2) {
  if (s->m == s->k && !knn_before(s, d2, i, s->d2[s->m - 1], s->idx[s->m - 1])) return;
  int64_t j = s->m < s->k ? s->m++ : s->m - 1;
  while (j > 0 && knn_before(s, d2, i, s->d2[j - 1], s->idx[j - 1])) {
    s->d2[j] = s->d2[j - 1];
    s->idx[j] = s->idx[j - 1];
    j--;
  }
  s->d2[j] = d2;
  s->idx[j] = i;
}

static void knn_segment(const tr_pview *v, knn_set *s, int64_t by, int64_t bx0, int64_t bx1, double x, double y,
                        double r2) {
  int64_t lo, hi;
  tr_pview_row(v, by, bx0, bx1, &lo, &hi);
  for (int64_t i = lo; i < hi; i++) {
    const double dx = v->pt[i].x - x, dy = v->pt[i].y - y, d2 = dx * dx + dy * dy;
    if (d2 <= r2) knn_offer(s, i, d2);
  }
}

int64_t tr_pview_knn(const tr_pview *v, double x, double y, int64_t k, double radius, int ties_last, int64_t *idx,
                     double *d2) {
  const tr_pview_head *h = v->h;
  if (k <= 0 || h->nx == 0 || h->ny == 0) return 0;
  knn_set s = {k, 0, ties_last, idx, d2, v->pt};
  const double r2 = radius < 0 ? INFINITY : radius * radius;
  /* centre bucket in view coordinates (may lie outside the view) */
  const int64_t cx = bucket_of(x, h->x0, h->cell, -1, h->gnx) - h->bx0;
  const int64_t cy = bucket_of(y, h->y0, h->cell, -1, h->gny) - h->by0;
  const int64_t far = (h->nx > h->ny ? h->nx : h->ny) + 2 + (cx < 0 ? -cx : cx) + (cy < 0 ? -cy : cy);
  const double margin = h->cell * 1e-9;
  for (int64_t r = 0; r <= far; r++) {
    if (r > 0) {
      /* every point not yet seen lies outside the box of rings < r */
      const double L = h->x0 + (double)(h->bx0 + cx - r + 1) * h->cell, R = h->x0 + (double)(h->bx0 + cx + r) * h->cell;
      const double B = h->y0 + (double)(h->by0 + cy - r + 1) * h->cell, T = h->y0 + (double)(h->by0 + cy + r) * h->cell;
      double lb = fmin(fmin(x - L, R - x), fmin(y - B, T - y)) - margin;
      if (lb < 0) lb = 0;
      if (lb * lb > r2) break;
      if (s.m == k && lb * lb > s.d2[s.m - 1]) break;
    }
    const int64_t x0 = cx - r, x1 = cx + r, y0 = cy - r, y1 = cy + r;
    const int64_t cx0 = x0 < 0 ? 0 : x0, cx1 = x1 >= h->nx ? h->nx - 1 : x1;
    const int64_t ry0 = y0 < 0 ? 0 : y0, ry1 = y1 >= h->ny ? h->ny - 1 : y1;
    for (int64_t by = ry0; by <= ry1; by++) {
      if (by == y0 || by == y1) {
        if (cx0 <= cx1) knn_segment(v, &s, by, cx0, cx1, x, y, r2);
      } else {
        if (x0 >= 0 && x0 < h->nx) knn_segment(v, &s, by, x0, x0, x, y, r2);
        if (x1 != x0 && x1 >= 0 && x1 < h->nx) knn_segment(v, &s, by, x1, x1, x, y, r2);
      }
    }
  }
  return s.m;
}

int64_t tr_pview_knn_within(const tr_pview *v, double x, double y, int64_t k, double r, int ties_last, int64_t *idx,
                            double *d2) {
  if (k <= 0 || !(r >= 0)) return 0;
  knn_set s = {k, 0, ties_last, idx, d2, v->pt};
  int64_t bx0, by0, bx1, by1;
  tr_pview_range(v, x - r, y - r, x + r, y + r, &bx0, &by0, &bx1, &by1);
  const double r2 = r * r;
  /* candidates first, without branches (a tight r keeps them few), then
   * the k best of them; a crowded rectangle goes point by point instead */
  enum { CAND = 256 };
  double cd[CAND];
  int64_t ci[CAND];
  int64_t nc = 0;
  for (int64_t by = by0; bx0 <= bx1 && by <= by1; by++) {
    int64_t lo, hi;
    tr_pview_row(v, by, bx0, bx1, &lo, &hi);
    if (nc + (hi - lo) > CAND) {
      for (int64_t j = 0; j < nc; j++) knn_offer(&s, ci[j], cd[j]);
      nc = 0;
      if (hi - lo > CAND) {
        knn_segment(v, &s, by, bx0, bx1, x, y, r2);
        continue;
      }
    }
    for (int64_t i = lo; i < hi; i++) {
      const double dx = v->pt[i].x - x, dy = v->pt[i].y - y, dd = dx * dx + dy * dy;
      cd[nc] = dd;
      ci[nc] = i;
      nc += dd <= r2;
    }
  }
  for (int64_t j = 0; j < nc; j++) knn_offer(&s, ci[j], cd[j]);
  return s.m;
}
