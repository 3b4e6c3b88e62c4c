/*
 * interpolate.c - `terrafort interpolate`: scattered points to a grid with
 * gdal_grid's algorithms, as a local kernel over a source.
 *
 * The points are read once per rank (io/points.h) and put in the bucket
 * grid (interp/point_index.h). The output grid runs through the executor
 * like any local kernel, but its tiles read no raster: for each tile the
 * source below copies the part of the index the tile's nodes can reach
 * (their "halo" is the search radius) into the tile's input bytes, and the
 * kernel evaluates every node from those bytes alone. So threads, mpirun,
 * --ft dual (the bytes travel to the worker), the ordered sink, progress,
 * --stats and the temporary output are the executor's, and a node's value
 * is the same in any tile.
 *
 * How far a tile reaches: the search ellipse's bounding box, or, where the
 * algorithm keeps only the k nearest points (nearest, invdistnn), the k-th
 * nearest distance from the tile's centre plus half its diagonal (a node's
 * k-th nearest distance moves no faster than the node), capped by the
 * radius; every point when a node can see them all (invdist without radii).
 *
 * linear: GDAL's Delaunay triangulation (GDALTriangulationCreateDelaunay)
 * of all points, its barycentric coefficients, and per tile the triangles
 * whose bounding box meets the tile. A node takes the first triangle in the
 * triangulation's order that holds it (barycentric coordinates >= -1e-10),
 * which no tile split can change; outside every triangle it falls back as
 * GDAL does (grid_alg.h). The convex hull is convex: a tile whose four
 * corner nodes lie in triangles needs no points.
 *
 * More points than --mem holds: when every tile's reach is bounded by the
 * algorithm's radius (every algorithm but linear, given a radius), the
 * points are streamed into the same bucket grid on disk (interp/point_file.h,
 * an external sort in --tmp) and each tile reads the buckets within that
 * radius of it, then narrows them to its reach as above: the same view
 * bytes as in memory, so the same output. Without a radius a node may need
 * any point, and the run is refused with the memory it needs.
 *
 * Grid nodes are cell centres, as gdal_grid: x = xmin + (col + 0.5) dx,
 * y = ymax - (row + 0.5) dy, north-up.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <gdal_alg.h>
#include <ogr_srs_api.h>

#include "dist.h"
#include "step.h"
#include "executor.h"
#include "grid.h"
#include "grid_alg.h"
#include "idw2_block.h"
#include "kernel.h"
#include "mem_limit.h"
#include "path_max.h"
#include "point_file.h"
#include "point_index.h"
#include "points.h"
#include "run.h"
#include "scratch_file.h"
#include "side_file.h"

#define LINEAR_EPS 1e-10
#define EVEN_TILE 128 /* all-points invdist's default tile side */

typedef struct {
  tr_grid_params g;
  double xmin, dx, ymax, dy; /* dy > 0: rows go south */
} interp_params;

/* A tile's input: this head, ntri triangles, then a view of the index. */
typedef struct {
  int64_t ntri;
  int64_t pad;
} aux_head;

typedef struct {
  double x[3], y[3], z[3];
  double m1x, m1y, m2x, m2y, cx, cy; /* GDAL's barycentric coefficients */
  int64_t id;                        /* the facet's index */
} aux_tri;

static inline double node_x(const interp_params *p, int64_t col) { return p->xmin + ((double)col + 0.5) * p->dx; }
static inline double node_y(const interp_params *p, int64_t row) { return p->ymax - ((double)row + 0.5) * p->dy; }

/* The node's barycentric coordinates in t; 1 when they place it inside. */
static inline int tri_holds(const aux_tri *t, double x, double y, double l[3]) {
  l[0] = t->m1x * (x - t->cx) + t->m1y * (y - t->cy);
  l[1] = t->m2x * (x - t->cx) + t->m2y * (y - t->cy);
  l[2] = 1.0 - l[0] - l[1];
  return l[0] >= -LINEAR_EPS && l[1] >= -LINEAR_EPS && l[2] >= -LINEAR_EPS;
}

/* Narrows [*c0, *c1] (block columns) to those whose nodes on the row at y
 * may lie in t: along a row each barycentric coordinate is linear in x,
 * l_k = a_k (x - cx) + b_k, so l_k >= -LINEAR_EPS is a half-line. The span
 * is widened by 1e-9 in l (and 1e-6 of a column), so it keeps every node
 * tri_holds accepts (which still decides each node: the same nodes as a
 * test of the whole bounding box, in a quarter of the tests). */
static void row_span(const interp_params *p, const tr_window *w, const aux_tri *t, double y, int64_t *c0,
                     int64_t *c1) {
  const double tol = LINEAR_EPS + 1e-9, b0 = t->m1y * (y - t->cy), b1 = t->m2y * (y - t->cy);
  const double a[3] = {t->m1x, t->m2x, -(t->m1x + t->m2x)}, b[3] = {b0, b1, 1.0 - b0 - b1};
  double lo = -INFINITY, hi = INFINITY; /* in x - cx */
  for (int k = 0; k < 3; k++) {
    const double u = (-tol - b[k]) / a[k];
    if (a[k] > 0) lo = u > lo ? u : lo;
    else if (a[k] < 0) hi = u < hi ? u : hi;
    else if (b[k] < -tol) lo = INFINITY; /* a row parallel to the edge, outside it */
  }
  if (!(lo <= hi)) {
    *c1 = *c0 - 1;
    return;
  }
  const double f = (t->cx - p->xmin) / p->dx - 0.5 - (double)w->gcol0;
  /* 1e-6 of a column: far beyond the rounding of these few operations */
  if (isfinite(lo)) {
    const double c = ceil(f + lo / p->dx - 1e-6);
    if (c > (double)*c0) *c0 = c > (double)*c1 ? *c1 + 1 : (int64_t)c;
  }
  if (isfinite(hi)) {
    const double c = floor(f + hi / p->dx + 1e-6);
    if (c < (double)*c1) *c1 = c < (double)*c0 ? *c0 - 1 : (int64_t)c;
  }
}

/* linear over rows [row0, row0 + nrows) of the block: each triangle, in
 * order, claims the unclaimed nodes it holds; the rest fall back. */
static int linear_rows(const interp_params *p, const tr_window *w, const aux_tri *tri, int64_t ntri,
                       const tr_pview *v, int64_t row0, int64_t nrows, double *out) {
  const int64_t cols = w->cols;
  /* per node: 1 + the facet that holds it, 0 none yet. Triangles come in
   * top-down order (plan_triangles), so the writes run down the block; the
   * lowest facet index wins, as in the triangulation's own order */
  uint32_t *own = calloc((size_t)(nrows * cols), sizeof *own);
  if (!own) return -1;
  for (int64_t k = 0; k < ntri; k++) {
    const aux_tri *t = &tri[k];
    const double txmin = fmin(t->x[0], fmin(t->x[1], t->x[2])), txmax = fmax(t->x[0], fmax(t->x[1], t->x[2]));
    const double tymin = fmin(t->y[0], fmin(t->y[1], t->y[2])), tymax = fmax(t->y[0], fmax(t->y[1], t->y[2]));
    /* node index ranges the bounding box may hold, one node wider */
    int64_t c0 = (int64_t)floor((txmin - p->xmin) / p->dx - 0.5) - 1 - w->gcol0;
    int64_t c1 = (int64_t)ceil((txmax - p->xmin) / p->dx - 0.5) + 1 - w->gcol0;
    int64_t r0 = (int64_t)floor((p->ymax - tymax) / p->dy - 0.5) - 1 - w->grow0;
    int64_t r1 = (int64_t)ceil((p->ymax - tymin) / p->dy - 0.5) + 1 - w->grow0;
    if (c0 < 0) c0 = 0;
    if (c1 > cols - 1) c1 = cols - 1;
    if (r0 < row0) r0 = row0;
    if (r1 > row0 + nrows - 1) r1 = row0 + nrows - 1;
    for (int64_t r = r0; r <= r1; r++) {
      const double y = node_y(p, w->grow0 + r);
      int64_t ca = c0, cb = c1;
      row_span(p, w, t, y, &ca, &cb);
      for (int64_t c = ca; c <= cb; c++) {
        const int64_t at = (r - row0) * cols + c;
        if (own[at] && own[at] <= (uint32_t)t->id + 1u) continue;
        double l[3];
        if (!tri_holds(t, node_x(p, w->gcol0 + c), y, l)) continue;
        out[at] = l[0] * t->z[0] + l[1] * t->z[1] + l[2] * t->z[2];
        own[at] = (uint32_t)t->id + 1u;
      }
    }
  }
  tr_grid_scratch s = TR_GRID_SCRATCH_INIT;
  for (int64_t r = row0; r < row0 + nrows; r++) {
    const double y = node_y(p, w->grow0 + r);
    for (int64_t c = 0; c < cols; c++) {
      const int64_t at = (r - row0) * cols + c;
      if (!own[at]) out[at] = tr_grid_linear_outside(&p->g, v, node_x(p, w->gcol0 + c), y, &s);
    }
  }
  tr_grid_scratch_free(&s);
  free(own);
  return 0;
}

static int interp_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out) {
  const interp_params *p = params;
  if (!w->aux) return -1;
  const aux_head *ah = w->aux;
  const aux_tri *tri = (const aux_tri *)(ah + 1);
  const tr_pview v = tr_pview_open(tri + ah->ntri);
  double *o = out;
  if (p->g.alg == TR_GRID_LINEAR) return linear_rows(p, w, tri, ah->ntri, &v, row0, nrows, o);
  tr_grid_scratch s = TR_GRID_SCRATCH_INIT;
  int rc = 0;
  if (tr_idw2_applies(&p->g)) {
    const tr_node_grid g = {p->xmin, p->dx, p->ymax, p->dy};
    tr_idw2_scratch fs = TR_IDW2_SCRATCH_INIT;
    rc = tr_idw2_block(&p->g, &v, &g, w->grow0 + row0, nrows, w->gcol0, w->cols, o, &fs, &s);
    tr_idw2_scratch_free(&fs);
    tr_grid_scratch_free(&s);
    return rc;
  }
  for (int64_t r = row0; r < row0 + nrows && !rc; r++) {
    const double y = node_y(p, w->grow0 + r);
    for (int64_t c = 0; c < w->cols && !rc; c++)
      rc = tr_grid_value(&p->g, &v, node_x(p, w->gcol0 + c), y, &s, &o[(r - row0) * w->cols + c]);
  }
  tr_grid_scratch_free(&s);
  return rc;
}

/* No output invariant yet (the points are the tile's aux input). */
const tr_kernel tr_kernel_interpolate = {
    .name = "interpolate",
    .halo = 0,
    .params_size = sizeof(interp_params),
    .out_type = GDT_Float64,
    .bands = 1,
    .cpu = interp_kernel};

/* ------------------------------------------------------------ the source */

typedef struct {
  interp_params ip;
  tr_pindex ix;
  const double *x, *y, *z;   /* the points in input order (linear's triangles) */
  GDALTriangulation *tri;
  tr_grid tiles;             /* the executor's tile grid */
  int64_t *tri_start;        /* per tile: its triangles tri_list[start[t] .. start[t + 1]) */
  int64_t *tri_list;
  int on_disk;               /* the index is pf (more points than --mem), not ix */
  tr_pfile pf;
  double disk_mx, disk_my;   /* on disk: how far beyond a tile its reach may go */
} interp_src;

static void fill_tri(const interp_src *s, int64_t f, aux_tri *t) {
  const double *x = s->x, *y = s->y;
  const GDALTriFacet *fc = &s->tri->pasFacets[f];
  const GDALTriBarycentricCoefficients *bc = &s->tri->pasFacetCoefficients[f];
  for (int k = 0; k < 3; k++) {
    t->x[k] = x[fc->anVertexIdx[k]];
    t->y[k] = y[fc->anVertexIdx[k]];
    t->z[k] = s->z[fc->anVertexIdx[k]];
  }
  t->m1x = bc->dfMul1X;
  t->m1y = bc->dfMul1Y;
  t->m2x = bc->dfMul2X;
  t->m2y = bc->dfMul2Y;
  t->cx = bc->dfCstX;
  t->cy = bc->dfCstY;
  t->id = f;
}

static int grow(tr_bytes *b, size_t need, tr_error *e) {
  if (b->cap >= need) return TR_OK;
  void *p = realloc(b->p, need);
  if (!p) return tr_fail(e, TR_ENOMEM, "out of memory for a tile's points (%zu bytes)", need);
  b->p = p;
  b->cap = need;
  return TR_OK;
}

/* The k nearest distance from (x, y) within radius r (< 0: any), or -1
 * when fewer than k points are that close. */
static int kth_distance(const tr_pview *v, double x, double y, int64_t k, double r, double *dk, tr_error *e) {
  int64_t *idx = malloc((size_t)k * sizeof *idx);
  double *d2 = malloc((size_t)k * sizeof *d2);
  if (!idx || !d2) {
    free(idx);
    free(d2);
    return tr_fail(e, TR_ENOMEM, "out of memory");
  }
  const int64_t m = tr_pview_knn(v, x, y, k, r, 0, idx, d2);
  *dk = m == k ? sqrt(d2[m - 1]) : -1;
  free(idx);
  free(d2);
  return TR_OK;
}

/* Does some triangle of the tile hold node (x, y)? */
static int tile_holds(const aux_tri *tri, int64_t ntri, double x, double y) {
  double l[3];
  for (int64_t k = 0; k < ntri; k++)
    if (tri_holds(&tri[k], x, y, l)) return 1;
  return 0;
}

static int tile_input(const interp_src *s, const tr_pview *all, const tr_tile *t, tr_bytes *buf, tr_error *e);

/* The k-nearest searches (nearest without an ellipse, invdistnn with
 * max_points): *k and their radius *r (< 0: any distance); 0 otherwise. */
static int knn_of(const tr_grid_params *g, int64_t *k, double *r) {
  if (g->alg == TR_GRID_NEAREST && g->angle == 0.0 && g->radius1 == g->radius2) {
    *k = 1;
    *r = g->radius1 != 0.0 ? g->radius1 : -1.0;
    return 1;
  }
  if (g->alg == TR_GRID_INVDISTNN && g->max_points > 0) {
    *k = g->max_points;
    *r = g->radius;
    return 1;
  }
  return 0;
}

/* In memory: the tile's view of the whole index. On disk: the buckets
 * within the reach's bound of the tile, read from the file, stand for the
 * whole index (a view answers every query inside its rectangle as the
 * whole index does). */
static int interp_tile_input(void *ctx, const tr_tile *t, tr_bytes *buf, tr_error *e) {
  const interp_src *s = ctx;
  if (!s->on_disk) return tile_input(s, &s->ix.all, t, buf, e);
  const interp_params *p = &s->ip;
  const double X0 = node_x(p, t->col0), X1 = node_x(p, t->col0 + t->cols - 1);
  const double Y1 = node_y(p, t->row0), Y0 = node_y(p, t->row0 + t->rows - 1);
  void *bytes = NULL;
  size_t len = 0;
  double mx = s->disk_mx, my = s->disk_my;
  int64_t k;
  double kr;
  int st = TR_OK;
  if (knn_of(&p->g, &k, &kr)) {
    /* A k-nearest search reaches its k-th distance from the tile's centre
     * plus half the tile's diagonal (tile_input), often far less than the
     * radius: first the buckets close to the tile. When that k-th distance
     * d is found there and the disk of radius d around the centre lies
     * inside what was read, d is the whole index's (every point that close
     * was read), and so is the reach: read more only if it goes further. */
    const double cell = s->pf.h.cell, cxm = 0.5 * (X0 + X1), cym = 0.5 * (Y0 + Y1);
    const double half = hypot(0.5 * (X1 - X0), 0.5 * (Y1 - Y0));
    const double m1 = fmin(s->disk_mx, fmax(half, 8 * cell));
    if ((st = tr_pfile_view(&s->pf, X0 - m1, Y0 - m1, X1 + m1, Y1 + m1, &bytes, &len, e))) return st;
    const tr_pview v1 = tr_pview_open(bytes);
    double dk = -1;
    if ((st = kth_distance(&v1, cxm, cym, k, kr, &dk, e))) {
      free(bytes);
      return st;
    }
    if (dk >= 0 && dk <= fmin(X1 - X0, Y1 - Y0) / 2 + m1) {
      const double reach = kr >= 0 && kr < dk + half ? kr : dk + half;
      mx = my = reach * (1 + 1e-6) + 2 * cell;
      if (mx <= m1) {
        st = tile_input(s, &v1, t, buf, e);
        free(bytes);
        return st;
      }
    }
    free(bytes);
    bytes = NULL;
  }
  if ((st = tr_pfile_view(&s->pf, X0 - mx, Y0 - my, X1 + mx, Y1 + my, &bytes, &len, e))) return st;
  const tr_pview near = tr_pview_open(bytes);
  st = tile_input(s, &near, t, buf, e);
  free(bytes);
  return st;
}

static int tile_input(const interp_src *s, const tr_pview *all, const tr_tile *t, tr_bytes *buf, tr_error *e) {
  const interp_params *p = &s->ip;
  const tr_grid_params *g = &p->g;
  const double X0 = node_x(p, t->col0), X1 = node_x(p, t->col0 + t->cols - 1);
  const double Y1 = node_y(p, t->row0), Y0 = node_y(p, t->row0 + t->rows - 1);
  const double cxm = 0.5 * (X0 + X1), cym = 0.5 * (Y0 + Y1), half = hypot(0.5 * (X1 - X0), 0.5 * (Y1 - Y0));
  const int64_t ntri = s->tri ? s->tri_start[t->index + 1] - s->tri_start[t->index] : 0;
  const size_t tri_bytes = sizeof(aux_head) + (size_t)ntri * sizeof(aux_tri);
  int st = grow(buf, tri_bytes, e);
  if (st) return st;
  aux_head *ah = buf->p;
  ah->ntri = ntri;
  ah->pad = 0;
  aux_tri *tri = (aux_tri *)(ah + 1);
  for (int64_t k = 0; k < ntri; k++) fill_tri(s, s->tri_list[s->tri_start[t->index] + k], &tri[k]);

  /* how far the tile's nodes can see: < 0 every point, NAN none */
  double reach = tr_grid_reach(g);
  int64_t knn_k = 0;
  double knn_r = -1;
  if (!knn_of(g, &knn_k, &knn_r) && g->alg == TR_GRID_LINEAR) {
    const int inside = tile_holds(tri, ntri, X0, Y0) && tile_holds(tri, ntri, X0, Y1) &&
                       tile_holds(tri, ntri, X1, Y0) && tile_holds(tri, ntri, X1, Y1);
    reach = g->radius == 0.0 || inside ? NAN : g->radius > 0 ? g->radius : -1;
    if (reach < 0) {
      /* the unbounded fallback (tr_grid_linear_outside) answers from the
       * first square of half-side init_radius * 2^k that holds a point. A
       * node's nearest point is at most d1 + half away (d1: the tile
       * centre's), so that square's half-side is under
       * 2 max(d1 + half, init_radius), and every point it may pick lies
       * within that of the tile: the view, not all the points */
      double d1 = -1;
      if ((st = kth_distance(all, cxm, cym, 1, -1, &d1, e))) return st;
      if (d1 >= 0) reach = 2 * fmax(d1 + half, g->init_radius);
    }
  }
  if (knn_k > 0) {
    double dk = -1;
    if ((st = kth_distance(all, cxm, cym, knn_k, knn_r, &dk, e))) return st;
    reach = dk < 0 ? knn_r : knn_r >= 0 && knn_r < dk + half ? knn_r : dk + half;
  }
  double xmin = -INFINITY, xmax = INFINITY, ymin = -INFINITY, ymax = INFINITY;
  if (isnan(reach)) {
    xmin = ymin = 1;
    xmax = ymax = 0; /* an empty view */
  } else if (reach >= 0) {
    const double m = reach * (1 + 1e-9) + 1e-9 * all->h->cell;
    double mx = m, my = m;
    if (g->alg != TR_GRID_INVDISTNN && g->alg != TR_GRID_NEAREST && g->alg != TR_GRID_LINEAR && g->ellipse) {
      mx = g->hx * (1 + 1e-9) + 1e-9 * all->h->cell;
      my = g->hy * (1 + 1e-9) + 1e-9 * all->h->cell;
    }
    xmin = X0 - mx;
    xmax = X1 + mx;
    ymin = Y0 - my;
    ymax = Y1 + my;
  }
  const size_t vbytes = tr_pview_size(all, xmin, ymin, xmax, ymax);
  if ((st = grow(buf, tri_bytes + vbytes, e))) return st;
  tr_pview_copy(all, xmin, ymin, xmax, ymax, (unsigned char *)buf->p + tri_bytes);
  tr_pview_head *vh = (tr_pview_head *)((unsigned char *)buf->p + tri_bytes);
  if (vh->nx == 0) vh->bx0 = vh->by0 = 0; /* an empty view, as copied from the whole index */
  buf->len = tri_bytes + vbytes;
  return TR_OK;
}

/* ------------------------------------------------------- the library call */

void tr_interpolate_opts_init(tr_interpolate_opts *o) {
  memset(o, 0, sizeof *o);
  tr_run_opts_init(&o->run);
  o->z_multiply = 1.0;
  o->max_distance = 100;
}

/* The output grid: extent, size and cell size, as gdal_grid 3.6 settles them. */
static int plan_grid(const tr_interpolate_opts *o, const tr_points *pts, interp_params *ip, int64_t *rows,
                     int64_t *cols, tr_error *err) {
  double x0 = pts->xmin, x1 = pts->xmax, y0 = pts->ymin, y1 = pts->ymax;
  if (o->has_txe) {
    x0 = fmin(o->txe[0], o->txe[1]);
    x1 = fmax(o->txe[0], o->txe[1]);
  }
  if (o->has_tye) {
    y0 = fmin(o->tye[0], o->tye[1]);
    y1 = fmax(o->tye[0], o->tye[1]);
  }
  if (!(x1 > x0) || !(y1 > y0))
    return tr_fail(err, TR_EUSAGE, "empty extent %.17g %.17g x %.17g %.17g: give -txe and -tye%s", x0, x1, y0, y1,
                   o->has_txe && o->has_tye ? " with xmin < xmax, ymin < ymax" : " (the points lie on a line)");
  const int has_out = o->outsize[0] || o->outsize[1], has_tr = o->tr[0] != 0 || o->tr[1] != 0;
  if (has_out && has_tr) return tr_fail(err, TR_EUSAGE, "-outsize and -tr cannot be used together");
  double nx = 256, ny = 256;
  if (has_out) {
    nx = (double)o->outsize[0];
    ny = (double)o->outsize[1];
  } else if (has_tr) {
    if (!(o->tr[0] > 0) || !(o->tr[1] > 0)) return tr_fail(err, TR_EUSAGE, "-tr: resolutions must be positive");
    nx = floor((x1 - x0) / o->tr[0] + 0.5);
    ny = floor((y1 - y0) / o->tr[1] + 0.5);
  }
  if (!(nx >= 1) || !(ny >= 1) || nx > 2147483647.0 || ny > 2147483647.0)
    return tr_fail(err, TR_EUSAGE, "output size %.0f x %.0f: each side must be 1 .. 2147483647 cells", nx, ny);
  *cols = (int64_t)nx;
  *rows = (int64_t)ny;
  ip->xmin = x0;
  ip->ymax = y1;
  ip->dx = (x1 - x0) / nx;
  ip->dy = (y1 - y0) / ny;
  return TR_OK;
}

/* Refuses an output that cannot fit on its file system before creating it
 * (uncompressed size; skipped when a COMPRESS creation option is given). */
static int check_space(const tr_interpolate_opts *o, const char *dst, int64_t rows, int64_t cols, int type,
                       tr_error *err) {
  if (o->run.creation_options && CSLFetchNameValue((char **)o->run.creation_options, "COMPRESS")) return TR_OK;
  char *dir = CPLStrdup(CPLGetPath(dst));
  struct statvfs sv;
  const int ok = statvfs(dir[0] ? dir : ".", &sv) == 0;
  CPLFree(dir);
  if (!ok) return TR_OK; /* the create will tell */
  const double need = (double)rows * (double)cols * GDALGetDataTypeSizeBytes((GDALDataType)type);
  const double have = (double)sv.f_bavail * (double)sv.f_frsize;
  if (need > have)
    return tr_fail(err, TR_ENOSPC, "output '%s' needs %.0f MB (%lld x %lld cells) but its file system has %.0f MB free",
                   dst, need / 1048576.0, (long long)cols, (long long)rows, have / 1048576.0);
  return TR_OK;
}

/* The default tile side: TR_DEFAULT_TILE, halved (down to 64) while the
 * grid has fewer than 4 tiles per thread of every rank, so a small grid
 * keeps every thread busy (a 493 x 830 grid was 2 tiles of 512 and 318
 * rows: one thread did most of the work). Any tiling gives the same bytes. */
static int small_grid_tile(const tr_run_opts *run, int64_t rows, int64_t cols) {
  const int64_t threads = tr_run_threads(run);
  const int64_t want = 4 * threads * tr_dist_size();
  int tile = TR_DEFAULT_TILE;
  while (tile > 64 && ((rows + tile - 1) / tile) * ((cols + tile - 1) / tile) < want) tile /= 2;
  return tile;
}

/* linear: the triangulation and, per tile, the triangles meeting it. */
static int plan_triangles(interp_src *s, int64_t n, tr_error *err) {
  if (n < 3) return tr_fail(err, TR_EINPUT, "linear needs at least 3 points, got %lld", (long long)n);
  if (n > INT32_MAX) return tr_fail(err, TR_EINPUT, "linear: too many points for GDAL's triangulation");
  /* all on one line: refused here, before qhull prints its own report */
  int64_t a = 0, b = -1, c = -1;
  for (int64_t i = 1; i < n && b < 0; i++)
    if (s->x[i] != s->x[a] || s->y[i] != s->y[a]) b = i;
  for (int64_t i = 1; b >= 0 && i < n && c < 0; i++)
    if ((s->x[b] - s->x[a]) * (s->y[i] - s->y[a]) != (s->y[b] - s->y[a]) * (s->x[i] - s->x[a])) c = i;
  if (c < 0) return tr_fail(err, TR_EINPUT, "linear: GDAL cannot triangulate the points (all on one line)");
  CPLPushErrorHandler(CPLQuietErrorHandler);
  s->tri = GDALTriangulationCreateDelaunay((int)n, s->x, s->y);
  CPLPopErrorHandler();
  if (!s->tri || s->tri->nFacets == 0)
    return tr_fail(err, TR_EINPUT, "linear: GDAL cannot triangulate the points (all on one line?)");
  if (!GDALTriangulationComputeBarycentricCoefficients(s->tri, s->x, s->y))
    return tr_fail(err, TR_EINPUT, "linear: degenerate triangles in GDAL's triangulation");
  const tr_grid *tg = &s->tiles;
  const int64_t ntiles = tr_grid_count(tg);
  s->tri_start = calloc((size_t)ntiles + 1, sizeof *s->tri_start);
  if (!s->tri_start) return tr_fail(err, TR_ENOMEM, "out of memory");
  const interp_params *p = &s->ip;
  /* Per facet, the node rows and columns its box may hold, one node wider
   * (as linear_rows); then the facets in order of their top row (counting
   * sort, facet order within a row), so each tile's list runs down the
   * tile and linear_rows' writes do too. The order is for locality only:
   * where facets share a node the lowest facet index wins (linear_rows). */
  const int nf = s->tri->nFacets;
  int64_t(*box)[4] = malloc((size_t)nf * sizeof *box);
  int *order = malloc((size_t)nf * sizeof *order);
  int64_t *at_row = calloc((size_t)tg->rows + 1, sizeof *at_row);
  if (!box || !order || !at_row) {
    free(box);
    free(order);
    free(at_row);
    return tr_fail(err, TR_ENOMEM, "out of memory for the triangles' order");
  }
  for (int f = 0; f < nf; f++) {
    const int *v = s->tri->pasFacets[f].anVertexIdx;
    const double x0 = s->x[v[0]], x1 = s->x[v[1]], x2 = s->x[v[2]];
    const double y0 = s->y[v[0]], y1 = s->y[v[1]], y2 = s->y[v[2]];
    const double txmin = x0 < x1 ? (x0 < x2 ? x0 : x2) : (x1 < x2 ? x1 : x2);
    const double txmax = x0 > x1 ? (x0 > x2 ? x0 : x2) : (x1 > x2 ? x1 : x2);
    const double tymin = y0 < y1 ? (y0 < y2 ? y0 : y2) : (y1 < y2 ? y1 : y2);
    const double tymax = y0 > y1 ? (y0 > y2 ? y0 : y2) : (y1 > y2 ? y1 : y2);
    int64_t c0 = (int64_t)floor((txmin - p->xmin) / p->dx - 0.5) - 1, c1 = (int64_t)ceil((txmax - p->xmin) / p->dx - 0.5) + 1;
    int64_t r0 = (int64_t)floor((p->ymax - tymax) / p->dy - 0.5) - 1, r1 = (int64_t)ceil((p->ymax - tymin) / p->dy - 0.5) + 1;
    if (c0 < 0) c0 = 0;
    if (r0 < 0) r0 = 0;
    if (c1 > tg->cols - 1) c1 = tg->cols - 1;
    if (r1 > tg->rows - 1) r1 = tg->rows - 1;
    box[f][0] = c0;
    box[f][1] = c1;
    box[f][2] = r0;
    box[f][3] = r1;
    if (c0 <= c1 && r0 <= r1) at_row[r0 + 1]++;
  }
  for (int64_t r = 0; r < tg->rows; r++) at_row[r + 1] += at_row[r];
  const int64_t nkeep = at_row[tg->rows];
  for (int f = 0; f < nf; f++)
    if (box[f][0] <= box[f][1] && box[f][2] <= box[f][3]) order[at_row[box[f][2]]++] = f;
  free(at_row);
  /* two passes over the facets: count per tile, then fill */
  for (int pass = 0; pass < 2; pass++) {
    int64_t *fillat = NULL;
    if (pass == 1) {
      for (int64_t t = 0; t < ntiles; t++) s->tri_start[t + 1] += s->tri_start[t];
      s->tri_list = malloc((size_t)(s->tri_start[ntiles] > 0 ? s->tri_start[ntiles] : 1) * sizeof *s->tri_list);
      fillat = malloc((size_t)ntiles * sizeof *fillat);
      if (!s->tri_list || !fillat) {
        free(fillat);
        free(order);
        free(box);
        return tr_fail(err, TR_ENOMEM, "out of memory for the triangles' tiles");
      }
      memcpy(fillat, s->tri_start, (size_t)ntiles * sizeof *fillat);
    }
    for (int64_t k = 0; k < nkeep; k++) {
      const int f = order[k];
      const int64_t *bx = box[f];
      for (int64_t tr = bx[2] / tg->tile; tr <= bx[3] / tg->tile; tr++)
        for (int64_t tc = bx[0] / tg->tile; tc <= bx[1] / tg->tile; tc++) {
          const int64_t t = tr * tg->tile_cols + tc;
          if (pass == 0) s->tri_start[t + 1]++;
          else s->tri_list[fillat[t]++] = f;
        }
    }
    free(fillat);
  }
  free(box);
  free(order);
  return TR_OK;
}

/* What the run keeps of its input throughout: the points, their index and
 * linear's triangles with their per-tile lists. */
static int64_t held_bytes(const interp_src *s, const tr_points *pts) {
  int64_t b = pts->cap * 3 * (int64_t)sizeof(double) + (int64_t)s->ix.size;
  if (s->tri) {
    const int64_t ntiles = tr_grid_count(&s->tiles);
    b += (int64_t)s->tri->nFacets * (int64_t)(sizeof(GDALTriFacet) + sizeof(GDALTriBarycentricCoefficients)) +
         (ntiles + 1 + s->tri_start[ntiles]) * (int64_t)sizeof(int64_t);
  }
  return b;
}

/* How far beyond a tile its reach may go, whatever the points (the radius
 * of a k-nearest search, the search ellipse's larger half-axis); 0 when a
 * node may need any point (linear, no radius): no index on disk then. */
static int disk_reach(const tr_grid_params *g, double *r) {
  int64_t k;
  if (g->alg == TR_GRID_LINEAR) return 0;
  if (!knn_of(g, &k, r)) *r = tr_grid_reach(g);
  return *r > 0 && isfinite(*r);
}

/* The points past --mem, in input order, into the index on disk: its
 * builder, made in `dir` when the first point comes. */
typedef struct {
  const char *dir;
  tr_pfile_builder *b;
} disk_sink;

static int sink_to_file(void *user, double x, double y, double z, tr_error *err) {
  disk_sink *d = user;
  int st = d->b ? TR_OK : tr_pfile_begin(&d->b, d->dir, err);
  return st ? st : tr_pfile_add(d->b, x, y, z, err);
}

/* tr_points_read's refusal of more points than --mem when no index on
 * disk can serve the algorithm, with the reason. */
static int refuse_on_disk(const tr_grid_params *g, tr_error *err) {
  char was[sizeof err->msg];
  snprintf(was, sizeof was, "%s", err ? err->msg : "");
  return tr_fail(err, TR_ENOMEM,
                 "%s. More points than --mem holds are read from disk only when every node's search is bounded: %s",
                 was,
                 g->alg == TR_GRID_LINEAR
                     ? "linear needs every point in memory (its triangulation)"
                     : "without a radius a node may need any point (give one: radius=, or radius1= and radius2=)");
}

/* Reads the points: in memory up to `mem`; past it, when every node's
 * search is bounded (disk_reach), the same single read streams them into
 * the index on disk in dir (--tmp, or the output's folder), sorted within
 * `mem` (one pass over the input: a pipe cannot be read twice). */
static int read_points(const tr_interpolate_opts *o, const char *src, const char *dir, int64_t mem, interp_src *s,
                       tr_points *pts, tr_error *err) {
  double r = 0;
  disk_sink d = {dir, NULL};
  const int disk = disk_reach(&s->ip.g, &r);
  int st = disk ? tr_points_read_spill(pts, src, o, mem, sink_to_file, &d, err) : tr_points_read(pts, src, o, mem, err);
  if (st && pts->over && !disk) return refuse_on_disk(&s->ip.g, err);
  if (st || !pts->over) {
    tr_pfile_abort(d.b);
    return st;
  }
  if ((st = tr_pfile_finish(d.b, mem, o->run.cancelled, o->run.progress_user, &s->pf, err))) return st;
  s->on_disk = 1;
  /* wider than any reach tile_input computes (it keeps within r): extra
   * buckets change no answer */
  s->disk_mx = s->disk_my = r * (1 + 1e-6) + 2 * s->pf.h.cell;
  return TR_OK;
}

int tr_interpolate(const tr_interpolate_opts *o, const char *src, const char *dst, tr_error *err) {
  if (o->fill_voids) return tr_fill_voids(o, src, dst, err);
  interp_src s;
  memset(&s, 0, sizeof s);
  s.pf.fd = -1;
  int st = tr_grid_parse(o->algorithm, &s.ip.g, err);
  if (st) return st;
  if (o->run.tile_size < 0 || o->run.tile_size > TR_MAX_TILE)
    return tr_fail(err, TR_EUSAGE, "--tile-size must be between 1 and %d", TR_MAX_TILE);
  /* every file written, before the points are read (a large file, or an
   * index spilled to disk): none may be the points, a file OGR reads for
   * them (a shapefile's .dbf, the archive of a /vsizip/ path) or the clip
   * source (the executor's check later knows the output grid only) */
  const tr_file_role outs[] = {
      {dst, "output"}, {o->run.stats_json, TR_ROLE_STATS_JSON}, {o->run.ft_report, TR_ROLE_FT_REPORT}};
  const tr_file_role reads[] = {{src, "the points"}, {o->clipsrc, "-clipsrc"}};
  tr_input points = {.path = src};
  struct stat pst;
  if (stat(src, &pst) == 0 && S_ISREG(pst.st_mode)) {
    points.has_id = 1;
    points.dev = pst.st_dev;
    points.ino = pst.st_ino;
  }
  if ((st = tr_outputs_refuse(outs, 3, reads, 2, &points, err))) return st;
  char tmp_dir[TR_PATH_MAX];
  if ((st = tr_scratch_folder(o->tmp_dir, dst, tmp_dir, sizeof tmp_dir, err))) return st;
  const int type = o->out_type ? o->out_type : GDT_Float64;
  tr_points pts;
  /* the points stay in memory for the whole run: counted in --mem (the
   * default's 3/4 of what the process may have too), less the process's
   * 64 MiB and the tiles' buffers (a guess here: the executor's check,
   * with the points' real size, follows) */
  const int64_t threads = tr_run_threads(&o->run);
  const int64_t tiles = threads * 4 * (int64_t)TR_DEFAULT_TILE * TR_DEFAULT_TILE * 8;
  int64_t pts_mem = tr_mem_room(o->run.mem, tiles);
  if (pts_mem < (int64_t)TR_POINT_BYTES * 4096) pts_mem = (int64_t)TR_POINT_BYTES * 4096;
  st = read_points(o, src, tmp_dir, pts_mem, &s, &pts, err);
  if (st) {
    tr_pfile_close(&s.pf);
    tr_points_free(&pts);
    return st;
  }
  int64_t rows = 0, cols = 0;
  char *srs_wkt = NULL;
  st = plan_grid(o, &pts, &s.ip, &rows, &cols, err);
  if (!st && tr_rank() == 0) st = check_space(o, dst, rows, cols, type, err);
  if (!st && o->a_srs) {
    OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
    if (OSRSetFromUserInput(srs, o->a_srs) != OGRERR_NONE || OSRExportToWkt(srs, &srs_wkt) != OGRERR_NONE)
      st = tr_fail(err, TR_EUSAGE, "-a_srs: '%s' is not a coordinate reference system", o->a_srs);
    OSRDestroySpatialReference(srs);
  }
  /* all-points invdist costs the same for every node, and far more than
   * copying every point to each tile: smaller tiles than the default keep
   * every thread busy to the end (any tiling gives the same bytes). */
  tr_run_opts run = o->run;
  if (!run.tile_size && tr_idw2_applies(&s.ip.g)) run.tile_size = EVEN_TILE;
  if (!run.tile_size) run.tile_size = small_grid_tile(&run, rows, cols);
  if (!st && !s.on_disk && tr_pindex_build(&s.ix, pts.x, pts.y, pts.z, pts.n))
    st = tr_fail(err, TR_ENOMEM, "out of memory for the point index");
  if (!st) {
    const double w = pts.xmax - pts.xmin, h = pts.ymax - pts.ymin;
    s.ip.g.init_radius = sqrt(w * h / (double)pts.n);
    s.x = pts.x;
    s.y = pts.y;
    s.z = pts.z;
    tr_grid_init(&s.tiles, rows, cols, run.tile_size ? run.tile_size : TR_DEFAULT_TILE);
    if (s.ip.g.alg == TR_GRID_LINEAR) st = plan_triangles(&s, pts.n, err);
  }
  /* every rank goes on or stops together (the disk check is rank 0's) */
  st = tr_step_end(&o->run, st, err);
  if (!st) {
    /* the output grid as the executor's input: no dataset, north-up */
    tr_input grid = {.path = src, .rows = rows, .cols = cols, .type = GDT_Float64, .has_gt = 1,
                     .gt = {s.ip.xmin, s.ip.dx, 0, s.ip.ymax, 0, -s.ip.dy}, .wkt = srs_wkt ? srs_wkt : pts.wkt};
    /* the points' file identifies the input, so the output cannot replace it */
    struct stat sst;
    if (stat(src, &sst) == 0 && S_ISREG(sst.st_mode)) {
      grid.has_id = 1;
      grid.dev = sst.st_dev;
      grid.ino = sst.st_ino;
    }
    tr_source source = {&grid, &s.ip, {GDT_Float64, 1, 1, s.ip.g.nodata, (GDALDataType)type}, &s, interp_tile_input,
                        held_bytes(&s, &pts), 0};
    st = tr_run_kernel_source(&run, "interpolate", &source, dst, err);
  }
  if (s.tri) GDALTriangulationFree(s.tri);
  free(s.tri_start);
  free(s.tri_list);
  tr_pindex_free(&s.ix);
  tr_pfile_close(&s.pf);
  CPLFree(srs_wkt);
  tr_points_free(&pts);
  return st;
}
