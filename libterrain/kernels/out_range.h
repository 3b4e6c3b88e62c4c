/*
 * out_range.h - what the kernels' output invariants share (kernel.h,
 * tr_kernel_check_fn): the span of a window's valid input values, and a
 * count of Float32 cells outside a range.
 *
 * Bounds are loose on purpose: an invariant may let a wrong value through
 * (a flip that stays in range is found only by --ft dual or --ft-check) but
 * never refuses a value its row computes, so the slack covers Float32
 * rounding of sums and means.
 */
#ifndef TR_OUT_RANGE_H
#define TR_OUT_RANGE_H

#include <math.h>
#include <stdint.h>

#include "kernel.h"
#include "window3.h"

/* Smallest and largest valid input value of the whole window (halo
 * included; NaN and nodata left out). Returns 0 when no cell is valid. */
static inline int tr_window_span(const tr_window *w, const tr_nodata *nd, float *lo, float *hi) {
  const int64_t rows = w->rows + 2 * w->halo, cols = w->cols + 2 * w->halo;
  float a = INFINITY, b = -INFINITY;
  for (int64_t r = 0; r < rows; r++) {
    const float *p = w->in + r * w->in_stride;
    for (int64_t c = 0; c < cols; c++) {
      const float v = p[c];
      if (nd && tr_is_nodata(nd, v)) continue;
      if (v != v) continue;
      a = v < a ? v : a;
      b = v > b ? v : b;
    }
  }
  *lo = a;
  *hi = b;
  return a <= b;
}

/* Relative slack for bounds made of sums and means of Float32 values. */
#define TR_OUT_SLACK 1e-4

/* Cells of out (n of them) that are neither `nodata` (when has_nodata) nor
 * in [lo, hi]; with neg_zero, a negative zero counts too (for rows whose
 * values start at +0 and never make one: it is a flipped sign bit). */
static inline int64_t tr_count_outside(const float *out, int64_t n, float lo, float hi, int has_nodata,
                                       float nodata, int neg_zero) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const float v = out[i];
    if (has_nodata && v == nodata) continue;
    bad += !(v >= lo && v <= hi) || (neg_zero && v == 0.0f && signbit(v));
  }
  return bad;
}

#endif
