/*
 * ft_test_kernels.h - synthetic kernels and grids for libft's tests.
 *
 * horn_slope: a 3x3 Horn slope (degrees) on float input, halo 1, float out.
 * heavy: the same stencil followed by `iters` rounds of transcendental
 * arithmetic per cell, to make computing cost dominate comparing.
 * horn_f64: the slope as double output, to exercise FT_TYPE_F64.
 * All are deterministic per row, so computing rows in pieces gives the bytes
 * of computing the whole block.
 */
#ifndef FT_TEST_KERNELS_H
#define FT_TEST_KERNELS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

typedef struct {
  double cellsize;
  int iters;
  int fail_row; /* -1: never; else the kernel returns -42 when asked for this row */
} tk_params;

static inline float tk_at(const ft_block *b, int64_t r, int64_t c) {
  return ((const float *)b->in)[r * b->in_stride + c];
}

static inline float tk_cell(const tk_params *p, const ft_block *b, int64_t r, int64_t c) {
  /* r, c: output cell; window coordinates are offset by the halo (1) */
  float a = tk_at(b, r, c), bb = tk_at(b, r, c + 1), cc = tk_at(b, r, c + 2);
  float d = tk_at(b, r + 1, c), f = tk_at(b, r + 1, c + 2);
  float g = tk_at(b, r + 2, c), h = tk_at(b, r + 2, c + 1), i = tk_at(b, r + 2, c + 2);
  double dx = ((cc + 2.0 * f + i) - (a + 2.0 * d + g)) / (8.0 * p->cellsize);
  double dy = ((g + 2.0 * h + i) - (a + 2.0 * bb + cc)) / (8.0 * p->cellsize);
  double v = atan(sqrt(dx * dx + dy * dy)) * (180.0 / 3.14159265358979323846);
  for (int k = 0; k < p->iters; k++) v = v + 1e-3 * sin(v * 0.01 + k) * cos(v * 0.02);
  return (float)v;
}

static inline int tk_slope(const void *kctx, const ft_block *b, int64_t row0, int64_t nrows,
                           void *out) {
  const tk_params *p = kctx;
  float *o = out;
  for (int64_t r = 0; r < nrows; r++) {
    if (p->fail_row == row0 + r) return -42;
    for (int64_t c = 0; c < b->cols; c++) o[r * b->cols + c] = tk_cell(p, b, row0 + r, c);
  }
  return 0;
}

static inline int tk_slope_f64(const void *kctx, const ft_block *b, int64_t row0, int64_t nrows,
                               void *out) {
  const tk_params *p = kctx;
  double *o = out;
  for (int64_t r = 0; r < nrows; r++)
    for (int64_t c = 0; c < b->cols; c++)
      o[r * b->cols + c] = (double)tk_cell(p, b, row0 + r, c) * 1.000000001;
  return 0;
}

static const ft_kernel TK_SLOPE = {"test.slope", tk_slope};
static const ft_kernel TK_SLOPE64 = {"test.slope64", tk_slope_f64};
static const ft_kernel TK_REGISTRY[] = {{"test.slope", tk_slope}, {"test.slope64", tk_slope_f64}};

/* A (h + 2) x (w + 2) float grid (halo 1 all round) of a smooth surface with
 * noise and a few NaN cells (nodata). */
static inline float *tk_grid(int64_t h, int64_t w, uint32_t seed) {
  int64_t H = h + 2, W = w + 2;
  float *g = malloc((size_t)(H * W) * sizeof *g);
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t r = 0; r < H; r++)
    for (int64_t c = 0; c < W; c++) {
      s = s * 1664525u + 1013904223u;
      double noise = (double)(s >> 8) / 16777216.0;
      g[r * W + c] = (float)(100.0 * sin(r * 0.05) * cos(c * 0.03) + 5.0 * noise + r * 0.1);
    }
  if (H * W > 50) g[(H / 2) * W + W / 3] = NAN;
  return g;
}

/* The block of tile (r0, c0) size rows x cols in a grid of width w (cells). */
static inline ft_block tk_block(const float *grid, int64_t w, int64_t id, int64_t r0, int64_t c0,
                                int64_t rows, int64_t cols, ft_type type) {
  ft_block b;
  memset(&b, 0, sizeof b);
  b.id = id;
  b.rows = rows;
  b.cols = cols;
  b.halo = 1;
  b.row_off = r0;
  b.col_off = c0;
  b.in = grid + r0 * (w + 2) + c0;
  b.in_stride = w + 2;
  b.in_elem_size = sizeof(float);
  b.out_type = type;
  b.out_elem_size = type == FT_TYPE_F64 ? 8 : 4;
  return b;
}

/* Whole-raster run: tiles of th x tw over an h x w grid; direct (ctx NULL)
 * or through ft. Returns 0 or the first error. out is h*w cells. */
static inline int tk_run_raster(ft_ctx *ctx, const ft_kernel *k, const tk_params *p,
                                const float *grid, int64_t h, int64_t w, int64_t th, int64_t tw,
                                ft_type type, void *out, ft_status *st) {
  size_t es = type == FT_TYPE_F64 ? 8 : 4;
  int64_t id = 0;
  for (int64_t r0 = 0; r0 < h; r0 += th)
    for (int64_t c0 = 0; c0 < w; c0 += tw, id++) {
      int64_t rows = h - r0 < th ? h - r0 : th, cols = w - c0 < tw ? w - c0 : tw;
      ft_block b = tk_block(grid, w, id, r0, c0, rows, cols, type);
      unsigned char *tile = malloc((size_t)(rows * cols) * es);
      int rc = ctx ? ft_run_block(ctx, k, p, sizeof *p, &b, tile, st) : k->fn(p, &b, 0, rows, tile);
      if (rc) {
        free(tile);
        return rc;
      }
      for (int64_t r = 0; r < rows; r++)
        memcpy((unsigned char *)out + (size_t)((r0 + r) * w + c0) * es, tile + (size_t)(r * cols) * es,
               (size_t)cols * es);
      free(tile);
    }
  return 0;
}

#endif
