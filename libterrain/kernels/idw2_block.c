/*
 * idw2_block.c - all-points power-2 invdist over blocks of nodes (see
 * idw2_block.h).
 *
 * Each node needs N = sum (z_i - zref) / r_i^2 and D = sum 1 / r_i^2 over
 * every point (zref: the middle of the values' range, so that N is small
 * where the values are; the value is zref + N / D). gdal_grid computes all
 * of those n x nodes terms. Here the grid is cut into fixed blocks of B x B
 * nodes (fixed by the global node indices, never by the tile, so every
 * tiling computes a node the same way), and for a block the points split:
 * - near points, inside the block's node span widened by R = RATIO x its
 *   larger half-side: summed exactly (in double) at every node;
 * - far points, every other one: their sums are smooth over the block (the
 *   nearest singularity, a point, is at least RATIO half-sides away), so
 *   they are summed (in double) only at M x M Chebyshev nodes of the block
 *   and interpolated to its nodes by the tensor-product Lagrange polynomial.
 *   Its error, relative to sum |terms|, measured with points on the
 *   boundary when this was written: RATIO 3, M 8: 1.2e-6, M 10: 1.9e-8,
 *   M 12: 5.8e-10; RATIO 2, M 10: 9e-7. RATIO 3 and M 10 it is.
 * On 10,000 points and a 493 x 830 grid that is about 6x fewer terms than
 * gdal_grid's, in double rather than its single-precision lanes (which lose
 * 2e-3 to an approximate reciprocal). A node within GDAL's 1e-13 of a point
 * (its "on a point" rule), with a zero weight sum, or whose value is small
 * against the values' spread (where a relative error would grow) is
 * recomputed by grid_alg.c's exact path. The sums run in a fixed order
 * (points in view order, which every tile's full view shares; lanes are
 * independent nodes; no FMA contraction in ISO C), so the bytes are the same
 * for any tiling, thread count, rank, and for either clone of the lanes.
 */
#include "idw2_block.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define B 32         /* nodes per block side; also the lanes of one sum */
#define RATIO 3.0    /* near: within RATIO half-sides of the block */
#define M 10         /* Chebyshev nodes per axis (M * M <= SAMPLES) */
#define SAMPLES 104  /* M * M rounded up to whole lanes of 8 */
/* recompute exactly when |value| < GUARD x (zmax - zmin) */
#define GUARD (1.0 / 64.0)

void tr_idw2_scratch_free(tr_idw2_scratch *s) {
  free(s->f);
  free(s->near);
  memset(s, 0, sizeof *s);
}

int tr_idw2_applies(const tr_grid_params *p) {
  return p->alg == TR_GRID_INVDIST && p->radius1 == 0.0 && p->radius2 == 0.0 && p->power == 2.0;
}

static int scratch_need(tr_idw2_scratch *s, int64_t n) {
  if (n <= s->cap) return 0;
  free(s->f);
  free(s->near);
  s->f = malloc((size_t)n * 3 * sizeof *s->f);
  s->near = malloc((size_t)n * sizeof *s->near);
  s->cap = s->f && s->near ? n : 0;
  return s->cap ? 0 : -1;
}

typedef double v4d __attribute__((vector_size(32)));
typedef long long v4l __attribute__((vector_size(32)));

/* N and D of points (px, py, pz) at nl lanes (X, Y; nl a multiple of 8),
 * added to num and den; on[j] set when lane j saw an r^2 (smoothing
 * included) below GDAL's 1e-13. Eight lanes at a time (two vectors of 4),
 * so that their sums stay in registers; points i and i + 1 share one
 * division, as 1/a = b/(ab) and 1/b = a/(ab) (a few ulp; squared distances
 * stay far inside double's range). */
__attribute__((target_clones("avx2", "default"))) static void lane_sums(const double *px, const double *py,
                                                                        const double *pz, int64_t m,
                                                                        const double *X, const double *Y, int nl,
                                                                        double s2, double *num, double *den,
                                                                        int64_t *on) {
  const v4d tiny = {TR_GRID_TINY, TR_GRID_TINY, TR_GRID_TINY, TR_GRID_TINY};
  for (int g = 0; g < nl; g += 8) {
    v4d N[2], D[2], x0[2], y0[2];
    v4l H[2];
    memcpy(N, num + g, sizeof N);
    memcpy(D, den + g, sizeof D);
    memcpy(x0, X + g, sizeof x0);
    memcpy(y0, Y + g, sizeof y0);
    memcpy(H, on + g, sizeof H);
    int64_t i = 0;
    for (; i + 1 < m; i += 2) {
      const double xa = px[i], ya = py[i], za = pz[i], xb = px[i + 1], yb = py[i + 1], zb = pz[i + 1];
      for (int k = 0; k < 2; k++) {
        const v4d ax = xa - x0[k], ay = ya - y0[k], a = ax * ax + ay * ay + s2;
        const v4d bx = xb - x0[k], by = yb - y0[k], b = bx * bx + by * by + s2;
        const v4d inv = 1.0 / (a * b), wa = b * inv, wb = a * inv;
        N[k] += wa * za + wb * zb;
        D[k] += wa + wb;
        H[k] |= (a < tiny) | (b < tiny);
      }
    }
    for (; i < m; i++) {
      for (int k = 0; k < 2; k++) {
        const v4d dx = px[i] - x0[k], dy = py[i] - y0[k], r2 = dx * dx + dy * dy + s2, w = 1.0 / r2;
        N[k] += w * pz[i];
        D[k] += w;
        H[k] |= r2 < tiny;
      }
    }
    memcpy(num + g, N, sizeof N);
    memcpy(den + g, D, sizeof D);
    memcpy(on + g, H, sizeof H);
  }
}

/* Lagrange basis of the Chebyshev nodes t at u (in [-1, 1]): L[0 .. M). */
static void lagrange(const double *t, double u, double *L) {
  for (int i = 0; i < M; i++) {
    double l = 1.0;
    for (int k = 0; k < M; k++)
      if (k != i) l *= (u - t[k]) / (t[i] - t[k]);
    L[i] = l;
  }
}

/* One block's far sums at its nodes: fn, fd[r * B + c] for its B x B nodes
 * (x offsets nx[c], y offsets ny[r] from the centre; half-sides ax, ay). */
static void far_block(const double *fx, const double *fy, const double *fz, int64_t mf, const double *nx,
                      const double *ny, double ax, double ay, double s2, double *fn, double *fd) {
  double t[M];
  for (int i = 0; i < M; i++) t[i] = cos((2.0 * i + 1.0) * 3.14159265358979323846 / (2.0 * M));
  /* the samples, B lanes at a time: sample k is (t[k % M] ax, t[k / M] ay) */
  double sn[SAMPLES] = {0}, sd[SAMPLES] = {0}, X[SAMPLES], Y[SAMPLES];
  int64_t son[SAMPLES] = {0};
  for (int k = 0; k < SAMPLES; k++) {
    const int kk = k < M * M ? k : 0; /* padding lanes repeat sample 0 */
    X[k] = t[kk % M] * ax;
    Y[k] = t[kk / M] * ay;
  }
  lane_sums(fx, fy, fz, mf, X, Y, SAMPLES, s2, sn, sd, son);
  double Lx[B][M], Ly[M];
  for (int c = 0; c < B; c++) lagrange(t, nx[c] / ax, Lx[c]);
  for (int r = 0; r < B; r++) {
    lagrange(t, ny[r] / ay, Ly);
    double rn[M] = {0}, rd[M] = {0}; /* the row's values at the M x-samples */
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++) {
        rn[i] += Ly[j] * sn[j * M + i];
        rd[i] += Ly[j] * sd[j * M + i];
      }
    for (int c = 0; c < B; c++) {
      double a = 0, b = 0;
      for (int i = 0; i < M; i++) {
        a += Lx[c][i] * rn[i];
        b += Lx[c][i] * rd[i];
      }
      fn[r * B + c] = a;
      fd[r * B + c] = b;
    }
  }
}

int tr_idw2_block(const tr_grid_params *p, const tr_pview *v, const tr_node_grid *g, int64_t row0, int64_t rows,
                  int64_t col0, int64_t cols, double *out, tr_idw2_scratch *s, tr_grid_scratch *gs) {
  const int64_t n = v->h->n;
  const tr_ipoint *pt = v->pt;
  if (rows <= 0 || cols <= 0) return 0;
  if (n == 0) {
    for (int64_t i = 0; i < rows * cols; i++) out[i] = p->nodata;
    return 0;
  }
  if (scratch_need(s, n)) return -1;
  double zmin = pt[0].z, zmax = pt[0].z;
  for (int64_t i = 1; i < n; i++) {
    zmin = pt[i].z < zmin ? pt[i].z : zmin;
    zmax = pt[i].z > zmax ? pt[i].z : zmax;
  }
  const double zref = 0.5 * (zmin + zmax), guard = GUARD * (zmax - zmin);
  const double s2 = p->smoothing * p->smoothing;
  double *fx = s->f, *fy = s->f + n, *fz = s->f + 2 * n;
  for (int64_t rb = row0 / B; rb <= (row0 + rows - 1) / B; rb++) {
    for (int64_t cb = col0 / B; cb <= (col0 + cols - 1) / B; cb++) {
      /* the whole block's nodes, wherever the rectangle cuts it */
      const double bx0 = g->xmin + ((double)(cb * B) + 0.5) * g->dx;
      const double bx1 = g->xmin + ((double)(cb * B + B - 1) + 0.5) * g->dx;
      const double by1 = g->ymax - ((double)(rb * B) + 0.5) * g->dy;
      const double by0 = g->ymax - ((double)(rb * B + B - 1) + 0.5) * g->dy;
      const double ox = 0.5 * (bx0 + bx1), oy = 0.5 * (by0 + by1), ax = 0.5 * (bx1 - bx0), ay = 0.5 * (by1 - by0);
      const double R = RATIO * (ax > ay ? ax : ay);
      int64_t mf = 0, mnear = 0;
      for (int64_t i = 0; i < n; i++) {
        const double x = pt[i].x, y = pt[i].y;
        if (x >= bx0 - R && x <= bx1 + R && y >= by0 - R && y <= by1 + R) {
          s->near[mnear++] = i;
        } else {
          fx[mf] = x - ox;
          fy[mf] = y - oy;
          fz[mf] = pt[i].z - zref;
          mf++;
        }
      }
      double nx[B], ny[B];
      for (int j = 0; j < B; j++) {
        nx[j] = g->xmin + ((double)(cb * B + j) + 0.5) * g->dx - ox;
        ny[j] = g->ymax - ((double)(rb * B + j) + 0.5) * g->dy - oy;
      }
      double fn[B * B], fd[B * B];
      if (mf > 0) far_block(fx, fy, fz, mf, nx, ny, ax, ay, s2, fn, fd);
      else memset(fn, 0, sizeof fn), memset(fd, 0, sizeof fd);
      /* the near points, reusing the far arrays' tail as their offsets */
      double *qx = fx + mf, *qy = fy + mf, *qz = fz + mf;
      for (int64_t k = 0; k < mnear; k++) {
        const tr_ipoint *q = &pt[s->near[k]];
        qx[k] = q->x - ox;
        qy[k] = q->y - oy;
        qz[k] = q->z - zref;
      }
      const int64_t r_lo = rb * B > row0 ? rb * B : row0;
      const int64_t r_hi = rb * B + B < row0 + rows ? rb * B + B : row0 + rows;
      for (int64_t r = r_lo; r < r_hi; r++) {
        const int64_t br = r - rb * B;
        double num[B], den[B], Y[B];
        int64_t on[B];
        for (int j = 0; j < B; j++) {
          num[j] = fn[br * B + j];
          den[j] = fd[br * B + j];
          on[j] = 0;
          Y[j] = ny[br];
        }
        lane_sums(qx, qy, qz, mnear, nx, Y, B, s2, num, den, on);
        for (int j = 0; j < B; j++) {
          const int64_t c = cb * B + j;
          if (c < col0 || c >= col0 + cols) continue;
          double *o = &out[(r - row0) * cols + (c - col0)];
          const double val = zref + num[j] / den[j];
          if (on[j] || !(den[j] > 0) || !isfinite(val) || fabs(val) < guard) {
            if (tr_grid_value(p, v, g->xmin + ((double)c + 0.5) * g->dx, g->ymax - ((double)r + 0.5) * g->dy, gs, o))
              return -1;
          } else {
            *o = val;
          }
        }
      }
    }
  }
  return 0;
}
