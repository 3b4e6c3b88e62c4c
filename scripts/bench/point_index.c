/*
 * point_index.c - benchmark (not a test): interpolate's bucket grid
 * (libterrain/interp/point_index.c) against a plain k-d tree, for the two
 * searches that use it most: invdistnn's k nearest within a radius and
 * nearest's closest point (no radius).
 *
 * Issue 10 left the index to us ("a k-d tree or a grid index, your choice,
 * measured"): this is the measurement. Points are uniform or clustered
 * (Gaussian clusters of 1% of the extent); the queries are the nodes of a
 * grid over the extent in row order, as interpolate asks them. Both
 * indexes must give the same answers (ids ordered by distance, then input
 * order), checked query by query; the program exits 1 otherwise. Times are
 * the best of --repeat runs, single thread, build included separately.
 * The k-d tree lives here only: it would move into libterrain if it won.
 *
 * The k-d tree: points sorted into an implicit balanced tree (median split
 * on the wider axis, leaves of up to 8 points), queried depth first, the
 * nearer child first, a subtree skipped when its box is farther than the
 * current k-th distance (or the radius).
 *
 * Usage: bench_point_index [--points N] [--grid G] [--repeat R]
 * One JSON line per (distribution, query): build and query seconds of each.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "point_index.h"
#include "terrain.h"

#define LEAF 8

static double now(void) {
  struct timespec t;
  timespec_get(&t, TIME_UTC);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) { /* xorshift64*, [0, 1) */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void) { return sqrt(-2.0 * log(1.0 - urand())) * cos(6.283185307179586 * urand()); }

/* ------------------------------------------------------------ k-d tree */

typedef struct {
  double x, y;
  int64_t id;
} kpt;

typedef struct {
  kpt *p;              /* points in tree order */
  unsigned char *axis; /* per internal node, at its median's index: 0 x, 1 y */
  double *split;       /* the split value there (the median's coordinate) */
  int64_t n;
} kdtree;

static int cmp_x(const void *a, const void *b) {
  const double u = ((const kpt *)a)->x, v = ((const kpt *)b)->x;
  return u < v ? -1 : u > v;
}
static int cmp_y(const void *a, const void *b) {
  const double u = ((const kpt *)a)->y, v = ((const kpt *)b)->y;
  return u < v ? -1 : u > v;
}

/* Node [lo, hi): split at mid = (lo + hi) / 2 on the wider axis (sorting the
 * range: simple, O(n log^2 n) in all, fine for a benchmark's build). */
static void kd_build(kdtree *t, int64_t lo, int64_t hi) {
  kpt *p = t->p;
  if (hi - lo <= LEAF) return;
  double x0 = p[lo].x, x1 = x0, y0 = p[lo].y, y1 = y0;
  for (int64_t i = lo + 1; i < hi; i++) {
    x0 = fmin(x0, p[i].x), x1 = fmax(x1, p[i].x), y0 = fmin(y0, p[i].y), y1 = fmax(y1, p[i].y);
  }
  const int on_y = x1 - x0 < y1 - y0;
  qsort(p + lo, (size_t)(hi - lo), sizeof *p, on_y ? cmp_y : cmp_x);
  const int64_t mid = (lo + hi) / 2; /* unique per internal node */
  t->axis[mid] = (unsigned char)on_y;
  t->split[mid] = on_y ? p[mid].y : p[mid].x; /* before the right child re-sorts p[mid] */
  kd_build(t, lo, mid);
  kd_build(t, mid, hi);
}

typedef struct {
  int64_t k, m;
  double r2max;
  int ties_last;
  int64_t *id;
  double *d2;
} kset;

static inline int before(const kset *s, double da, int64_t a, double db, int64_t b) {
  if (da != db) return da < db;
  return s->ties_last ? a > b : a < b;
}

static inline void offer(kset *s, int64_t id, double d2) {
  if (d2 > s->r2max) return;
  if (s->m == s->k && !before(s, d2, id, s->d2[s->m - 1], s->id[s->m - 1])) return;
  int64_t j = s->m < s->k ? s->m++ : s->m - 1;
  while (j > 0 && before(s, d2, id, s->d2[j - 1], s->id[j - 1])) {
    s->d2[j] = s->d2[j - 1];
    s->id[j] = s->id[j - 1];
    j--;
  }
  s->d2[j] = d2;
  s->id[j] = id;
}

/* The search bound: the k-th distance once k are found, else the radius. */
static inline double bound(const kset *s) { return s->m == s->k ? s->d2[s->m - 1] : s->r2max; }

static void kd_query(const kdtree *t, int64_t lo, int64_t hi, double x, double y, double bx0, double by0,
                     double bx1, double by1, kset *s) {
  const kpt *p = t->p;
  /* squared distance from the query to this node's box */
  const double dx = x < bx0 ? bx0 - x : x > bx1 ? x - bx1 : 0, dy = y < by0 ? by0 - y : y > by1 ? y - by1 : 0;
  if (dx * dx + dy * dy > bound(s)) return;
  if (hi - lo <= LEAF) {
    for (int64_t i = lo; i < hi; i++) {
      const double ex = p[i].x - x, ey = p[i].y - y;
      offer(s, p[i].id, ex * ex + ey * ey);
    }
    return;
  }
  const int64_t mid = (lo + hi) / 2;
  /* the children's boxes: the node's cut at the split (left: key <= split) */
  const double m = t->split[mid];
  double L[4] = {bx0, by0, bx1, by1}, R[4] = {bx0, by0, bx1, by1};
  const int ax = t->axis[mid];
  L[2 + ax] = m;
  R[ax] = m;
  const int left_first = (ax ? y : x) < m;
  const double *A = left_first ? L : R, *B = left_first ? R : L;
  kd_query(t, left_first ? lo : mid, left_first ? mid : hi, x, y, A[0], A[1], A[2], A[3], s);
  kd_query(t, left_first ? mid : lo, left_first ? hi : mid, x, y, B[0], B[1], B[2], B[3], s);
}

/* ------------------------------------------------------------- driver */

typedef struct {
  const char *name;
  int64_t k;
  double radius; /* < 0: none */
  int ties_last;
} query_kind;

static const query_kind kinds[] = {
    {"invdistnn_k12_r", 12, -2.0, 0}, /* radius: 5 mean point spacings, set per run */
    {"nearest", 1, -1.0, 1},
};

int main(int argc, char **argv) {
  int64_t n = 200000, grid = 600;
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--points")) n = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--grid")) grid = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: bench_point_index [--points N] [--grid G] [--repeat R]\n");
      return 2;
    }
  }
  const double W = 30000, H = 50000;
  double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y), *z = calloc((size_t)n, sizeof *z);
  kdtree t = {malloc((size_t)n * sizeof(kpt)), calloc((size_t)n, 1), calloc((size_t)n, sizeof(double)), n};
  int64_t *ia = malloc(12 * sizeof *ia), *ib = malloc(12 * sizeof *ib);
  double *da = malloc(12 * sizeof *da), *db = malloc(12 * sizeof *db);
  if (!x || !y || !z || !t.p || !t.axis || !t.split || !ia || !ib || !da || !db) return 1;
  int bad = 0;
  for (int dist = 0; dist < 2; dist++) {
    /* uniform, or 40 Gaussian clusters of sigma 1% of the extent */
    double cx[40], cy[40];
    for (int c = 0; c < 40; c++) cx[c] = urand() * W, cy[c] = urand() * H;
    for (int64_t i = 0; i < n; i++) {
      if (dist == 0) {
        x[i] = urand() * W;
        y[i] = urand() * H;
      } else {
        const int c = (int)(urand() * 40);
        x[i] = fmin(W, fmax(0, cx[c] + nrand() * 0.01 * W));
        y[i] = fmin(H, fmax(0, cy[c] + nrand() * 0.01 * H));
      }
    }
    double tb_grid = INFINITY, tb_kd = INFINITY;
    tr_pindex ix;
    for (int r = 0; r < repeat; r++) {
      double t0 = now();
      if (tr_pindex_build(&ix, x, y, z, n)) return 1;
      tb_grid = fmin(tb_grid, now() - t0);
      if (r + 1 < repeat) tr_pindex_free(&ix);
      t0 = now();
      for (int64_t i = 0; i < n; i++) t.p[i] = (kpt){x[i], y[i], i};
      kd_build(&t, 0, n);
      tb_kd = fmin(tb_kd, now() - t0);
    }
    for (size_t q = 0; q < sizeof kinds / sizeof kinds[0]; q++) {
      const query_kind *qk = &kinds[q];
      const double radius = qk->radius < -1.5 ? 5.0 * sqrt(W * H / (double)n) : qk->radius;
      double tq_grid = INFINITY, tq_kd = INFINITY;
      int64_t found = 0;
      for (int r = 0; r < repeat; r++) {
        double t0 = now();
        int64_t f = 0;
        for (int64_t gy = 0; gy < grid; gy++)
          for (int64_t gx = 0; gx < grid; gx++) {
            const double qx = (gx + 0.5) * W / grid, qy = H - (gy + 0.5) * H / grid;
            f += tr_pview_knn(&ix.all, qx, qy, qk->k, radius, qk->ties_last, ia, da);
          }
        tq_grid = fmin(tq_grid, now() - t0);
        found = f;
        t0 = now();
        f = 0;
        for (int64_t gy = 0; gy < grid; gy++)
          for (int64_t gx = 0; gx < grid; gx++) {
            const double qx = (gx + 0.5) * W / grid, qy = H - (gy + 0.5) * H / grid;
            kset s = {qk->k, 0, radius < 0 ? INFINITY : radius * radius, qk->ties_last, ib, db};
            kd_query(&t, 0, n, qx, qy, -INFINITY, -INFINITY, INFINITY, INFINITY, &s);
            f += s.m;
          }
        tq_kd = fmin(tq_kd, now() - t0);
        if (f != found) bad = 1;
      }
      /* the same answers, query by query (untimed) */
      for (int64_t gy = 0; gy < grid && !bad; gy += 7)
        for (int64_t gx = 0; gx < grid && !bad; gx += 3) {
          const double qx = (gx + 0.5) * W / grid, qy = H - (gy + 0.5) * H / grid;
          const int64_t m = tr_pview_knn(&ix.all, qx, qy, qk->k, radius, qk->ties_last, ia, da);
          kset s = {qk->k, 0, radius < 0 ? INFINITY : radius * radius, qk->ties_last, ib, db};
          kd_query(&t, 0, n, qx, qy, -INFINITY, -INFINITY, INFINITY, INFINITY, &s);
          if (m != s.m) bad = 1;
          for (int64_t j = 0; j < m && !bad; j++)
            if (ix.all.pt[ia[j]].id != ib[j] || da[j] != db[j]) bad = 1;
        }
      tr_json *o = tr_json_object();
      tr_json_set(o, "bench", tr_json_str("point_index"));
      tr_json_set(o, "points", tr_json_int(n));
      tr_json_set(o, "dist", tr_json_str(dist ? "clustered" : "uniform"));
      tr_json_set(o, "query", tr_json_str(qk->name));
      tr_json_set(o, "radius", tr_json_fixed(radius, 1));
      tr_json_set(o, "queries", tr_json_int(grid * grid));
      tr_json_set(o, "found", tr_json_int(found));
      tr_json_set(o, "grid_build_s", tr_json_fixed(tb_grid, 4));
      tr_json_set(o, "kdtree_build_s", tr_json_fixed(tb_kd, 4));
      tr_json_set(o, "grid_query_s", tr_json_fixed(tq_grid, 4));
      tr_json_set(o, "kdtree_query_s", tr_json_fixed(tq_kd, 4));
      tr_json_set(o, "kdtree_over_grid", tr_json_fixed(tq_kd / tq_grid, 2));
      tr_json_set(o, "same_answers", tr_json_bool(!bad));
      tr_json_write(o, stdout);
      tr_json_free(o);
      fflush(stdout);
    }
    tr_pindex_free(&ix);
  }
  free(x), free(y), free(z), free(t.p), free(t.axis), free(t.split), free(ia), free(ib), free(da), free(db);
  return bad;
}
