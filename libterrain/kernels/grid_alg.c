/*
 * grid_alg.c - gdal_grid's algorithms over the point index (grid_alg.h).
 *
 * What GDAL 3.6 does, and so what each function here gives:
 * - The search ellipse: a point is in when r2^2 rx^2 + r1^2 ry^2 <=
 *   r1^2 r2^2, (rx, ry) being its offset turned by -angle. With both radii
 *   0 every point passes (the "no radius" case); with one of them 0 only a
 *   line of points does.
 * - invdist without radii ignores max_points and min_points (GDAL's
 *   "NoSearch" variant) and weighs every point. With radii it walks the
 *   points in input order and stops after max_points + 1 of them inside the
 *   ellipse (GDAL's off-by-one), not after the nearest ones. A point whose
 *   squared distance plus smoothing^2 is below 1e-13 gives its own value
 *   (the first such point in input order).
 * - invdistnn takes the max_points nearest points within radius (all of
 *   them when max_points is 0), by distance, then input order.
 * - GDAL 3.6's quadtree case: more than 100 points, no angle and
 *   max(radius1, radius2) > 0, whether or not the radii are equal (found
 *   against gdal_grid 3.6.2: other GDAL revisions ask for equal radii).
 *   nearest, average and the metrics then see only the points of the
 *   square of half-side max(radius1, radius2) around the node; nearest
 *   takes the closest of them without the ellipse's test, the others still
 *   test the ellipse. The square holds the ellipse unless a radius is
 *   negative: -a average:radius1=50:radius2=-90 sees |dy| <= 50.
 * - nearest takes the closest point; among equally close points the last
 *   in input order (GDAL's "<=" scan). In the quadtree case GDAL's quadtree
 *   order decides such ties instead: random coordinates have none.
 * - average, minimum, maximum, range, count, average_distance: over the
 *   points in the ellipse; average_distance_pts: the mean distance over
 *   pairs of such points (in the quadtree case GDAL also counts each point
 *   paired with itself, all but at most one: see terrafort-interpolate(1)).
 * - nodata when fewer than min_points (or no point) were found.
 */
#include "grid_alg.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


/* --------------------------------------------------------------- parsing */

enum { K_POWER, K_SMOOTHING, K_RADIUS1, K_RADIUS2, K_ANGLE, K_RADIUS, K_MAXP, K_MINP, K_NODATA, K_COUNT };
static const char *const key_names[K_COUNT] = {"power",  "smoothing",  "radius1",    "radius2", "angle",
                                               "radius", "max_points", "min_points", "nodata"};
#define B(k) (1u << (k))
#define ELLIPSE_KEYS (B(K_RADIUS1) | B(K_RADIUS2) | B(K_ANGLE))

typedef struct {
  const char *name;
  tr_grid_alg alg;
  unsigned keys;       /* the keys it takes */
  double radius;       /* its default radius (invdistnn 1, linear -1) */
  int64_t max_points;  /* its default max_points (invdistnn 12) */
} alg_row;

static const alg_row algs[] = {
    {"invdist", TR_GRID_INVDIST,
     B(K_POWER) | B(K_SMOOTHING) | ELLIPSE_KEYS | B(K_MAXP) | B(K_MINP) | B(K_NODATA), 0, 0},
    {"invdistnn", TR_GRID_INVDISTNN, B(K_POWER) | B(K_SMOOTHING) | B(K_RADIUS) | B(K_MAXP) | B(K_MINP) | B(K_NODATA),
     1.0, 12},
    {"average", TR_GRID_AVERAGE, ELLIPSE_KEYS | B(K_MINP) | B(K_NODATA), 0, 0},
    {"nearest", TR_GRID_NEAREST, ELLIPSE_KEYS | B(K_NODATA), 0, 0},
    {"linear", TR_GRID_LINEAR, B(K_RADIUS) | B(K_NODATA), -1.0, 0},
    {"minimum", TR_GRID_MINIMUM, ELLIPSE_KEYS | B(K_MINP) | B(K_NODATA), 0, 0},
    {"maximum", TR_GRID_MAXIMUM, ELLIPSE_KEYS | B(K_MINP) | B(K_NODATA), 0, 0},
    {"range", TR_GRID_RANGE, ELLIPSE_KEYS | B(K_MINP) | B(K_NODATA), 0, 0},
    {"count", TR_GRID_COUNT, ELLIPSE_KEYS | B(K_MINP) | B(K_NODATA), 0, 0},
    {"average_distance", TR_GRID_AVERAGE_DISTANCE, ELLIPSE_KEYS | B(K_MINP) | B(K_NODATA), 0, 0},
    {"average_distance_pts", TR_GRID_AVERAGE_DISTANCE_PTS, ELLIPSE_KEYS | B(K_MINP) | B(K_NODATA), 0, 0},
};

int tr_grid_parse(const char *spec, tr_grid_params *p, tr_error *err) {
  if (!spec || !spec[0]) spec = "invdist";
  char buf[1024];
  if (strlen(spec) >= sizeof buf) return tr_fail(err, TR_EUSAGE, "-a: algorithm string too long");
  strcpy(buf, spec);
  char *save = NULL, *tok = strtok_r(buf, ":", &save);
  const alg_row *row = NULL;
  for (size_t i = 0; tok && i < sizeof algs / sizeof algs[0]; i++)
    if (!strcasecmp(tok, algs[i].name)) row = &algs[i];
  if (!row) return tr_fail(err, TR_EUSAGE, "-a: unknown algorithm '%s'", tok ? tok : "");
  double v[K_COUNT] = {2.0, 0.0, 0.0, 0.0, 0.0, row->radius, (double)row->max_points, 0.0, 0.0};
  while ((tok = strtok_r(NULL, ":", &save)) != NULL) {
    char *eq = strchr(tok, '=');
    if (!eq) return tr_fail(err, TR_EUSAGE, "-a %s: '%s' is not key=value", row->name, tok);
    *eq = 0;
    int k = -1;
    for (int i = 0; i < K_COUNT; i++)
      if (!strcasecmp(tok, key_names[i])) k = i;
    if (k < 0 || !(row->keys & B(k)))
      return tr_fail(err, TR_EUSAGE, "-a %s: unknown parameter '%s'", row->name, tok);
    char *end;
    const double x = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || !isfinite(x))
      return tr_fail(err, TR_EUSAGE, "-a %s: %s='%s' is not a number", row->name, tok, eq + 1);
    if ((k == K_MAXP || k == K_MINP) && (x < 0 || x > 4294967295.0 || x != floor(x)))
      return tr_fail(err, TR_EUSAGE, "-a %s: %s must be a whole number >= 0", row->name, tok);
    /* gdal_grid refuses these ("Radius value should be strictly positive");
     * taken as given, a negative one searched without bound */
    if (k == K_RADIUS && row->alg == TR_GRID_INVDISTNN && !(x > 0))
      return tr_fail(err, TR_EUSAGE, "-a %s: radius must be strictly positive (got %s)", row->name, eq + 1);
    v[k] = x;
  }
  memset(p, 0, sizeof *p);
  p->alg = row->alg;
  p->power = v[K_POWER];
  p->smoothing = v[K_SMOOTHING];
  p->radius1 = v[K_RADIUS1];
  p->radius2 = v[K_RADIUS2];
  p->angle = v[K_ANGLE];
  p->radius = v[K_RADIUS];
  p->max_points = (int64_t)v[K_MAXP];
  p->min_points = (int64_t)v[K_MINP];
  p->nodata = v[K_NODATA];
  p->ellipse = p->radius1 != 0.0 && p->radius2 != 0.0;
  const double a = p->angle * (3.14159265358979323846 / 180.0);
  if (a != 0.0) {
    p->cos_a = cos(a);
    p->sin_a = sin(a);
  }
  const double c = a != 0.0 ? p->cos_a : 1.0, s = a != 0.0 ? p->sin_a : 0.0;
  p->hx = sqrt(p->radius1 * p->radius1 * c * c + p->radius2 * p->radius2 * s * s);
  p->hy = sqrt(p->radius1 * p->radius1 * s * s + p->radius2 * p->radius2 * c * c);
  return TR_OK;
}

double tr_grid_reach(const tr_grid_params *p) {
  switch ((tr_grid_alg)p->alg) {
  case TR_GRID_INVDISTNN: return p->radius < 0 ? -1 : p->radius;
  case TR_GRID_LINEAR: return -1;
  default: return p->ellipse ? fmax(p->hx, p->hy) : -1;
  }
}

void tr_grid_scratch_free(tr_grid_scratch *s) {
  free(s->idx);
  free(s->d2);
  free(s->soa);
  memset(s, 0, sizeof *s);
}

static int scratch_need(tr_grid_scratch *s, int64_t n) {
  if (n <= s->cap) return 0;
  int64_t cap = s->cap ? s->cap : 64;
  while (cap < n) cap *= 2;
  int64_t *i = realloc(s->idx, (size_t)cap * sizeof *i);
  if (!i) return -1;
  s->idx = i;
  double *d = realloc(s->d2, (size_t)cap * sizeof *d);
  if (!d) return -1;
  s->d2 = d;
  s->cap = cap;
  return 0;
}

/* ------------------------------------------------------------ searching */

static inline int in_ellipse(const tr_grid_params *p, double dx, double dy) {
  if (p->angle != 0.0) {
    const double rx = dx * p->cos_a + dy * p->sin_a, ry = dy * p->cos_a - dx * p->sin_a;
    dx = rx;
    dy = ry;
  }
  const double r1 = p->radius1 * p->radius1, r2 = p->radius2 * p->radius2;
  return r2 * dx * dx + r1 * dy * dy <= r1 * r2;
}

/* The bucket rectangle a node's ellipse can reach (everything without one). */
static void ellipse_range(const tr_grid_params *p, const tr_pview *v, double x, double y, int64_t *x0, int64_t *y0,
                          int64_t *x1, int64_t *y1) {
  if (!p->ellipse) {
    *x0 = *y0 = 0;
    *x1 = v->h->nx - 1;
    *y1 = v->h->ny - 1;
    return;
  }
  const double mx = p->hx * (1 + 1e-9) + 1e-9 * v->h->cell, my = p->hy * (1 + 1e-9) + 1e-9 * v->h->cell;
  tr_pview_range(v, x - mx, y - my, x + mx, y + my, x0, y0, x1, y1);
}

/* GDAL 3.6's quadtree case (the header): the half-side of the square its
 * search starts from, or 0 when GDAL scans every point. */
static inline double quad_side(const tr_grid_params *p, const tr_pview *v) {
  const double r = fmax(p->radius1, p->radius2);
  return p->angle == 0.0 && r > 0 && v->h->total > 100 ? r : 0.0;
}

/* The square of half-side r around (x, y), GDAL's quadtree test. */
static inline int in_square(const tr_ipoint *q, double x, double y, double r) {
  return !(q->x < x - r || q->x > x + r || q->y < y - r || q->y > y + r);
}

/* Visits the points of the node's ellipse in bucket order: BODY sees the
 * point as `q` (a const tr_ipoint *) and its offset dx, dy. In the quadtree
 * case the square is tested too where it may cut the ellipse (a negative
 * radius: the square holds the ellipse of positive radii). */
#define FOR_ELLIPSE(p, v, x, y, ...)                                      \
  do {                                                                    \
    int64_t bx0_, by0_, bx1_, by1_;                                       \
    const double sq_ = quad_side(p, v);                                   \
    const int cut_ = sq_ > 0 && ((p)->radius1 < 0 || (p)->radius2 < 0);   \
    ellipse_range(p, v, x, y, &bx0_, &by0_, &bx1_, &by1_);                \
    for (int64_t by_ = by0_; bx0_ <= bx1_ && by_ <= by1_; by_++) {        \
      int64_t lo_, hi_;                                                   \
      tr_pview_row(v, by_, bx0_, bx1_, &lo_, &hi_);                       \
      for (int64_t i_ = lo_; i_ < hi_; i_++) {                            \
        const tr_ipoint *q = &(v)->pt[i_];                                \
        const double dx = q->x - (x), dy = q->y - (y);                    \
        if (!in_ellipse(p, dx, dy) || (cut_ && !in_square(q, x, y, sq_))) \
          continue;                                                       \
        __VA_ARGS__                                                       \
      }                                                                   \
    }                                                                     \
  } while (0)

static inline double inv_weight(double r2, double power) {
  return power == 2.0 ? 1.0 / r2 : 1.0 / pow(r2, power / 2.0);
}

/* Power-2 sums over every point, in SIMD lanes (AVX2 where the CPU has it,
 * chosen once per process: the same bytes for any thread, tile or rank on
 * one machine). Division is the cost: points i and i + h share one, as
 * 1/a = b/(ab) and 1/b = a/(ab) (a few ulp; squared distances stay far
 * inside double's range). Returns the smallest squared distance seen. */
__attribute__((target_clones("avx2", "default"))) static double idw2_sums(const double *px, const double *py,
                                                                          const double *pz, int64_t n, double x,
                                                                          double y, double s2, double *num_out,
                                                                          double *den_out) {
  double num = 0, den = 0, mn = INFINITY;
  const int64_t h = n / 2;
#pragma omp simd reduction(+ : num, den) reduction(min : mn)
  for (int64_t i = 0; i < h; i++) {
    const double ax = px[i] - x, ay = py[i] - y, a = ax * ax + ay * ay + s2;
    const double bx = px[i + h] - x, by = py[i + h] - y, b = bx * bx + by * by + s2;
    const double inv = 1.0 / (a * b), wa = b * inv, wb = a * inv;
    num += wa * pz[i] + wb * pz[i + h];
    den += wa + wb;
    const double m = a < b ? a : b;
    mn = m < mn ? m : mn;
  }
  for (int64_t i = 2 * h; i < n; i++) {
    const double dx = px[i] - x, dy = py[i] - y, r2 = dx * dx + dy * dy + s2;
    num += pz[i] / r2;
    den += 1.0 / r2;
    mn = r2 < mn ? r2 : mn;
  }
  *num_out = num;
  *den_out = den;
  return mn;
}

/* invdist without radii: every point, no min/max points. */
static int invdist_all(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s,
                       double *out) {
  const double s2 = p->smoothing * p->smoothing, power = p->power;
  double num = 0, den = 0, mn = INFINITY;
  const tr_ipoint *pt = v->pt;
  const int64_t n = v->h->n;
  if (power == 2.0) {
    if (s->soa_of != v->h) { /* the view as three arrays, once per view */
      free(s->soa);
      s->soa = malloc((size_t)(n > 0 ? n : 1) * 3 * sizeof *s->soa);
      if (!s->soa) return -1;
      for (int64_t i = 0; i < n; i++) {
        s->soa[i] = pt[i].x;
        s->soa[n + i] = pt[i].y;
        s->soa[2 * n + i] = pt[i].z;
      }
      s->soa_of = v->h;
    }
    mn = idw2_sums(s->soa, s->soa + n, s->soa + 2 * n, n, x, y, s2, &num, &den);
  } else {
    for (int64_t i = 0; i < n; i++) {
      const double dx = pt[i].x - x, dy = pt[i].y - y, r2 = dx * dx + dy * dy + s2;
      const double w = 1.0 / pow(r2, power / 2.0);
      num += w * pt[i].z;
      den += w;
      mn = r2 < mn ? r2 : mn;
    }
  }
  if (mn < TR_GRID_TINY) { /* on a point: the first such point in input order */
    int64_t hit = -1;
    for (int64_t i = 0; i < n; i++) {
      const double dx = pt[i].x - x, dy = pt[i].y - y, r2 = dx * dx + dy * dy + s2;
      if (r2 < TR_GRID_TINY && (hit < 0 || pt[i].id < pt[hit].id)) hit = i;
    }
    *out = pt[hit].z;
    return 0;
  }
  *out = den == 0.0 ? p->nodata : num / den;
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* invdist with radii: the first max_points + 1 points of the ellipse in
 * input order, or all of them. */
static int invdist_ellipse(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s,
                           double *out) {
  const double s2 = p->smoothing * p->smoothing;
  /* keep the ids (as view indices sorted by input order) of the first K */
  const int64_t K = p->max_points > 0 ? p->max_points + 1 : INT64_MAX;
  int64_t m = 0;
  int fail = 0;
  FOR_ELLIPSE(p, v, x, y, {
    (void)dx;
    (void)dy;
    if (m < K) {
      if (scratch_need(s, m + 1)) {
        fail = 1;
        break;
      }
      s->idx[m++] = q - v->pt;
    } else {
      /* replace the latest kept point when this one comes earlier */
      int64_t worst = 0;
      for (int64_t j = 1; j < m; j++)
        if (v->pt[s->idx[j]].id > v->pt[s->idx[worst]].id) worst = j;
      if (q->id < v->pt[s->idx[worst]].id) s->idx[worst] = q - v->pt;
    }
  });
  if (fail) return -1;
  /* input order: (id, view index) pairs sorted by id */
  int64_t *ids = malloc((size_t)(m > 0 ? m : 1) * 2 * sizeof *ids);
  if (!ids) return -1;
  for (int64_t j = 0; j < m; j++) {
    ids[2 * j] = v->pt[s->idx[j]].id;
    ids[2 * j + 1] = s->idx[j];
  }
  if (m > 1) qsort(ids, (size_t)m, 2 * sizeof *ids, cmp_i64);
  double num = 0, den = 0;
  int64_t n = 0;
  for (int64_t j = 0; j < m; j++) {
    const tr_ipoint *q = &v->pt[ids[2 * j + 1]];
    const double dx = q->x - x, dy = q->y - y, r2 = dx * dx + dy * dy + s2;
    if (r2 < TR_GRID_TINY) {
      *out = q->z;
      free(ids);
      return 0;
    }
    const double w = inv_weight(r2, p->power);
    num += w * q->z;
    den += w;
    n++;
  }
  free(ids);
  *out = n < p->min_points || den == 0.0 ? p->nodata : num / den;
  return 0;
}

typedef struct {
  double d2;
  int64_t id, at;
} near_pt;

static int cmp_near(const void *a, const void *b) {
  const near_pt *x = a, *y = b;
  if (x->d2 != y->d2) return x->d2 < y->d2 ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* k nearest within radius, first among the points within the previous
 * node's k-th distance plus the step here (a node's k-th distance moves no
 * faster than the node), then, when that finds fewer than k, by rings. */
static int64_t knn_hinted(const tr_pview *v, double x, double y, int64_t k, double radius, int ties_last,
                          tr_grid_scratch *s) {
  int64_t n = -1;
  if (s->last_dk >= 0) {
    double r = (s->last_dk + hypot(x - s->last_x, y - s->last_y)) * (1 + 1e-9);
    const int capped = radius >= 0 && radius <= r;
    if (capped) r = radius;
    n = tr_pview_knn_within(v, x, y, k, r, ties_last, s->idx, s->d2);
    if (n < k && !capped) n = -1;
  }
  if (n < 0) n = tr_pview_knn(v, x, y, k, radius, ties_last, s->idx, s->d2);
  s->last_x = x;
  s->last_y = y;
  s->last_dk = n == k ? sqrt(s->d2[n - 1]) : -1;
  return n;
}

static int invdistnn(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s,
                     double *out) {
  const double s2 = p->smoothing * p->smoothing;
  double num = 0, den = 0;
  int64_t n = 0;
  if (p->max_points > 0) {
    if (scratch_need(s, p->max_points)) return -1;
    n = knn_hinted(v, x, y, p->max_points, p->radius, 0, s);
    if (n > 0 && s->d2[0] + s2 < TR_GRID_TINY) {
      *out = v->pt[s->idx[0]].z;
      return 0;
    }
    for (int64_t j = 0; j < n; j++) {
      const double w = inv_weight(s->d2[j] + s2, p->power);
      num += w * v->pt[s->idx[j]].z;
      den += w;
    }
  } else {
    /* every point within radius, nearest first */
    const double r = p->radius, r2max = r * r;
    int64_t bx0, by0, bx1, by1, m = 0;
    tr_pview_range(v, x - r, y - r, x + r, y + r, &bx0, &by0, &bx1, &by1);
    near_pt *list = NULL;
    int64_t cap = 0;
    for (int64_t by = by0; bx0 <= bx1 && by <= by1; by++) {
      int64_t lo, hi;
      tr_pview_row(v, by, bx0, bx1, &lo, &hi);
      for (int64_t i = lo; i < hi; i++) {
        const double dx = v->pt[i].x - x, dy = v->pt[i].y - y, d2 = dx * dx + dy * dy;
        if (d2 > r2max) continue;
        if (m == cap) {
          cap = cap ? 2 * cap : 64;
          near_pt *nl = realloc(list, (size_t)cap * sizeof *nl);
          if (!nl) {
            free(list);
            return -1;
          }
          list = nl;
        }
        list[m++] = (near_pt){d2, v->pt[i].id, i};
      }
    }
    if (m > 1) qsort(list, (size_t)m, sizeof *list, cmp_near);
    if (m > 0 && list[0].d2 + s2 < TR_GRID_TINY) {
      *out = v->pt[list[0].at].z;
      free(list);
      return 0;
    }
    for (int64_t j = 0; j < m; j++) {
      const double w = inv_weight(list[j].d2 + s2, p->power);
      num += w * v->pt[list[j].at].z;
      den += w;
    }
    n = m;
    free(list);
  }
  *out = n < p->min_points || den == 0.0 ? p->nodata : num / den;
  return 0;
}

/* GDAL 3.6's quadtree nearest: the closest point within the square of
 * half-side r around the node (not the circle), the later point on ties.
 * Returns 0 when the square holds none (*val untouched). */
static int square_nearest(const tr_pview *v, double x, double y, double r, double *val) {
  int64_t bx0, by0, bx1, by1;
  tr_pview_range(v, x - r, y - r, x + r, y + r, &bx0, &by0, &bx1, &by1);
  double best = DBL_MAX;
  int64_t best_id = -1;
  for (int64_t by = by0; bx0 <= bx1 && by <= by1; by++) {
    int64_t lo, hi;
    tr_pview_row(v, by, bx0, bx1, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
      const tr_ipoint *q = &v->pt[i];
      if (!in_square(q, x, y, r)) continue;
      const double dx = q->x - x, dy = q->y - y, d2 = dx * dx + dy * dy;
      if (d2 < best || (d2 == best && q->id > best_id)) {
        best = d2;
        best_id = q->id;
        *val = q->z;
      }
    }
  }
  return best_id >= 0;
}

/* square_nearest's answer, usually without its scan: the node's nearest
 * point of all, found within the circle of radius r, is the square's
 * nearest when the square's test keeps it (no point of the square is
 * closer, and a tie of the square is a tie of all, where it is the later
 * point too). Only otherwise (the circle empty, a corner of the square to
 * search) is the square scanned, which on dense points reads every point of
 * a 2r x 2r square. */
static int square_nearest_fast(const tr_pview *v, double x, double y, double r, tr_grid_scratch *s, double *val) {
  if (r > 0 && !scratch_need(s, 1) && knn_hinted(v, x, y, 1, r, 1, s) == 1) {
    const tr_ipoint *q = &v->pt[s->idx[0]];
    if (in_square(q, x, y, r)) {
      *val = q->z;
      return 1;
    }
  }
  return square_nearest(v, x, y, r, val);
}

static double nearest(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s) {
  const double side = quad_side(p, v);
  if (side > 0) { /* GDAL's quadtree case: the square, no ellipse */
    double val = p->nodata;
    square_nearest_fast(v, x, y, side, s, &val);
    return val;
  }
  if (p->angle == 0.0 && p->radius1 == p->radius2 && p->radius1 >= 0) { /* a circle, or every point */
    if (scratch_need(s, 1)) return NAN;
    const int64_t n = knn_hinted(v, x, y, 1, p->radius1 != 0.0 ? p->radius1 : -1.0, 1, s);
    return n ? v->pt[s->idx[0]].z : p->nodata;
  }
  double best = DBL_MAX, val = p->nodata;
  int64_t best_id = -1;
  FOR_ELLIPSE(p, v, x, y, {
    double rx = dx, ry = dy;
    if (p->angle != 0.0) {
      rx = dx * p->cos_a + dy * p->sin_a;
      ry = dy * p->cos_a - dx * p->sin_a;
    }
    const double r2 = rx * rx + ry * ry;
    if (r2 < best || (r2 == best && q->id > best_id)) {
      best = r2;
      best_id = q->id;
      val = q->z;
    }
  });
  return val;
}

static double metric(const tr_grid_params *p, const tr_pview *v, double x, double y) {
  double acc = 0, lo = 0, hi = 0;
  int64_t n = 0;
  const int alg = p->alg;
  FOR_ELLIPSE(p, v, x, y, {
    const double z = q->z;
    if (alg == TR_GRID_AVERAGE) acc += z;
    else if (alg == TR_GRID_AVERAGE_DISTANCE) acc += sqrt(dx * dx + dy * dy);
    if (n == 0 || z < lo) lo = z;
    if (n == 0 || z > hi) hi = z;
    n++;
  });
  if (alg == TR_GRID_COUNT) return n < p->min_points ? p->nodata : (double)n;
  if (n < p->min_points || n == 0) return p->nodata;
  switch (alg) {
  case TR_GRID_MINIMUM: return lo;
  case TR_GRID_MAXIMUM: return hi;
  case TR_GRID_RANGE: return hi - lo;
  default: return acc / (double)n;
  }
}

static int average_distance_pts(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s,
                                double *out) {
  int64_t m = 0;
  int fail = 0;
  FOR_ELLIPSE(p, v, x, y, {
    (void)dx;
    (void)dy;
    if (scratch_need(s, m + 1)) {
      fail = 1;
      break;
    }
    s->idx[m++] = q - v->pt;
  });
  if (fail) return -1;
  double acc = 0;
  int64_t n = 0;
  for (int64_t i = 0; i + 1 < m; i++)
    for (int64_t j = i + 1; j < m; j++) {
      const tr_ipoint *a = &v->pt[s->idx[i]], *b = &v->pt[s->idx[j]];
      const double dx = b->x - a->x, dy = b->y - a->y;
      acc += sqrt(dx * dx + dy * dy);
      n++;
    }
  *out = n < p->min_points || n == 0 ? p->nodata : acc / (double)n;
  return 0;
}

int tr_grid_value(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s, double *out) {
  switch ((tr_grid_alg)p->alg) {
  case TR_GRID_INVDIST:
    if (p->radius1 == 0.0 && p->radius2 == 0.0) {
      return invdist_all(p, v, x, y, s, out);
    }
    return invdist_ellipse(p, v, x, y, s, out);
  case TR_GRID_INVDISTNN: return invdistnn(p, v, x, y, s, out);
  case TR_GRID_NEAREST: *out = nearest(p, v, x, y, s); return 0;
  case TR_GRID_AVERAGE_DISTANCE_PTS: return average_distance_pts(p, v, x, y, s, out);
  case TR_GRID_LINEAR: *out = tr_grid_linear_outside(p, v, x, y, s); return 0;
  default: *out = metric(p, v, x, y); return 0;
  }
}

double tr_grid_linear_outside(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s) {
  if (p->radius == 0.0) return p->nodata;
  double val = p->nodata;
  if (p->radius > 0.0) {
    square_nearest_fast(v, x, y, p->radius, s, &val);
    return val;
  }
  /* GDAL's quadtree nearest without radius: squares of half-side r, r*2,
   * ... from the typical point spacing; the closest point of the first
   * square that holds any (not always the closest point of all). */
  for (double r = p->init_radius; r > 0 && isfinite(r) && v->h->n > 0; r *= 2)
    if (square_nearest(v, x, y, r, &val)) return val;
  return p->nodata;
}
