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

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernel.h"
#include "window3.h"

/* Smallest and largest valid input value of the whole window (halo
 * included; NaN, infinities and cells whose bits are the nodata value's
 * left out). A value that kernels take as nodata only within their
 * tolerance (window3.h) may count: that only widens the span, so no bound
 * is ever tighter than the truth (an infinity left out can make the kernel's
 * own cells fall outside: a re-run then reproduces them, launch.c). Returns
 * 0 when no cell is valid. Branch-free and with finite math (every value
 * that reaches the min and max is finite), so the compiler vectorises it. */
__attribute__((optimize("finite-math-only", "no-signed-zeros"))) static inline int tr_window_span(
    const tr_window *w, const tr_nodata *nd, float *lo, float *hi) {
  const int64_t rows = w->rows + 2 * w->halo, cols = w->cols + 2 * w->halo;
  const int has = nd && nd->has && !nd->is_nan;
  uint32_t ndu = 0x7fc00000u; /* a NaN: never a valid cell's bits */
  if (has) memcpy(&ndu, &nd->value, sizeof ndu);
  float a = FLT_MAX, b = -FLT_MAX;
  int any = 0;
  for (int64_t r = 0; r < rows; r++) {
    const float *p = w->in + r * w->in_stride;
    for (int64_t c = 0; c < cols; c++) {
      uint32_t u;
      memcpy(&u, p + c, sizeof u);
      const int bad = ((u & 0x7fffffffu) >= 0x7f800000u) | (u == ndu);
      any |= !bad;
      const float x = bad ? FLT_MAX : p[c], y = bad ? -FLT_MAX : p[c];
      a = x < a ? x : a;
      b = y > b ? y : b;
    }
  }
  *lo = a;
  *hi = b;
  return any;
}

/* Relative slack for bounds made of sums and means of Float32 values. */
#define TR_OUT_SLACK 1e-4

/* Cells of out (n of them) that are neither `nodata` (when has_nodata) nor
 * in [lo, hi]; with neg_zero, a negative zero counts too (for rows whose
 * values start at +0 and never make one: it is a flipped sign bit).
 * Branch-free over the bits, so the compiler vectorises it. */
static inline int64_t tr_count_outside(const float *out, int64_t n, float lo, float hi, int has_nodata,
                                       float nodata, int neg_zero) {
  const float ndv = has_nodata ? nodata : NAN;
  const uint32_t nz = neg_zero ? 0x80000000u : 0xffffffffu; /* never the bits of a float that compares */
  int64_t bad = 0;
  for (int64_t i = 0; i < n;) {
    /* blocks short enough for a 32-bit count */
    const int64_t end = n - i > (1 << 20) ? i + (1 << 20) : n;
    uint32_t cnt = 0;
    for (; i < end; i++) {
      const float v = out[i];
      uint32_t u;
      memcpy(&u, &v, sizeof u);
      const int in = (v >= lo) & (v <= hi), nodata_cell = v == ndv;
      cnt += (uint32_t)(((in | nodata_cell) ^ 1) | (u == nz));
    }
    bad += cnt;
  }
  return bad;
}

#endif
