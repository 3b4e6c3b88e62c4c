/*
 * window3.h - the 3x3 neighbourhood of a cell, exactly as gdaldem builds it
 * (internal to libterrain).
 *
 * For kernels with a halo of one cell (kernel.h). Interior cells whose 3x3 window holds no nodata take the fast
 * path in the kernels; every other cell goes through tr_window3(), which
 * reproduces gdaldem's rules so values and the nodata mask match it:
 *
 * - the centre is nodata                        -> output nodata
 * - a neighbour is nodata                       -> nodata, or with
 *   -compute_edges the neighbour takes the centre's value
 * - the cell is on the raster edge              -> nodata, or with
 *   -compute_edges the missing row/column is extrapolated as 2a - b (and a
 *   corner reuses the centre column/row), as GDAL's INTERPOL does
 * - rasters with fewer than 2 rows or columns   -> all nodata
 *
 * Nodata equality is GDAL's float ARE_REAL_EQUAL (2 ulp relative). A NaN
 * cell is nodata whether or not the source declares a nodata value (the
 * reader turns +-Inf into NaN too), so non-finite input never reaches a
 * kernel's arithmetic: the output gets its own nodata there.
 */
#ifndef TR_WINDOW3_H
#define TR_WINDOW3_H

#include <math.h>
#include <stdint.h>

#include "kernel.h"

typedef struct {
  int has;       /* the source declares nodata */
  int is_nan;    /* ... and it is NaN */
  float value;   /* the source nodata as Float32 */
  int integer;   /* Byte/Int16/UInt16 source read the way gdaldem reads it: as
                    integers (set by the kernels that follow that path) */
} tr_nodata;

/* v equals the nodata value x, or lies within a Float32 rounding of it. */
TR_HD static inline int tr_near_nodata(float v, float x) {
  return (v == x) | (fabsf(v - x) < 1.1920929e-07f * fabsf(v + x) * 2);
}

TR_HD static inline int tr_is_nodata(const tr_nodata *nd, float v) {
  if (isnan(v)) return 1;
  if (!nd->has || nd->is_nan) return 0;
  return tr_near_nodata(v, nd->value);
}

/* The input's nodata as the kernels compare it. */
static inline tr_nodata tr_nodata_of(int has_nodata, double nodata) {
  tr_nodata nd;
  nd.has = has_nodata;
  nd.value = (float)nodata;
  nd.is_nan = has_nodata && isnan(nodata);
  nd.integer = 0;
  return nd;
}

/* The input's nodata read the way gdaldem reads a band of `type`: Byte, Int16
 * and UInt16 take its integer path, where a nodata within 1e-2 of a whole
 * number in the type's range is rounded to it and any other is ignored, and
 * an edge extrapolation that lands on nodata moves by one (tr_interpol). */
static inline tr_nodata tr_nodata_gdaldem(GDALDataType type, int has_nodata, double nodata) {
  if (type != GDT_Byte && type != GDT_Int16 && type != GDT_UInt16) return tr_nodata_of(has_nodata, nodata);
  const double lo = type == GDT_Int16 ? -32768 : 0, hi = type == GDT_Byte ? 255 : type == GDT_Int16 ? 32767 : 65535;
  const double whole = floor(nodata + 0.5);
  tr_nodata nd = has_nodata && fabs(nodata - whole) < 1e-2 && nodata >= lo && nodata <= hi
                     ? tr_nodata_of(1, whole)
                     : tr_nodata_of(0, 0);
  nd.integer = 1;
  return nd;
}

TR_HD static inline float tr_interpol(const tr_nodata *nd, float a, float b) {
  if (tr_is_nodata(nd, a) || tr_is_nodata(nd, b)) return nd->has ? nd->value : NAN;
  float v = 2 * a - b;
  /* an extrapolated value that lands on nodata is moved off it, as gdaldem
   * does: by one on its integer path, by a few ulp on its float path */
  if (nd->has && tr_is_nodata(nd, v)) return nd->integer ? nd->value + 1 : nd->value * (1 + 3 * 1.1920929e-07f);
  return v;
}

/* Fills win[9] for block-local output cell (r, c). Returns 1 when the
 * kernel should compute a value from win, 0 when the output is nodata. */
TR_HD static inline int tr_window3(const tr_window *w, const tr_nodata *nd, int compute_edges, int64_t r,
                             int64_t c, float win[9]) {
  const int64_t R = w->raster_rows, C = w->raster_cols;
  const int64_t gr = w->grow0 + r, gc = w->gcol0 + c;
  if (R < 2 || C < 2) return 0;
  const int edge = gr == 0 || gr == R - 1 || gc == 0 || gc == C - 1;
  if (edge && !compute_edges) return 0;
  if (!edge) {
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) win[i * 3 + j] = tr_at(w, r - 1 + i, c - 1 + j);
  } else if (gr == 0 || gr == R - 1) {
    const int64_t cm = gc == 0 ? c : c - 1, cp = gc == C - 1 ? c : c + 1;
    const int64_t cols[3] = {cm, c, cp};
    for (int j = 0; j < 3; j++) {
      if (gr == 0) {
        float a = tr_at(w, r, cols[j]), b = tr_at(w, r + 1, cols[j]);
        win[j] = tr_interpol(nd, a, b);
        win[3 + j] = a;
        win[6 + j] = b;
      } else {
        float a = tr_at(w, r, cols[j]), b = tr_at(w, r - 1, cols[j]);
        win[j] = b;
        win[3 + j] = a;
        win[6 + j] = tr_interpol(nd, a, b);
      }
    }
  } else if (gc == 0) {
    for (int i = 0; i < 3; i++) {
      float a = tr_at(w, r - 1 + i, c), b = tr_at(w, r - 1 + i, c + 1);
      win[i * 3] = tr_interpol(nd, a, b);
      win[i * 3 + 1] = a;
      win[i * 3 + 2] = b;
    }
  } else {
    for (int i = 0; i < 3; i++) {
      float a = tr_at(w, r - 1 + i, c), b = tr_at(w, r - 1 + i, c - 1);
      win[i * 3] = b;
      win[i * 3 + 1] = a;
      win[i * 3 + 2] = tr_interpol(nd, a, b);
    }
  }
  if (tr_is_nodata(nd, win[4])) return 0;
  for (int k = 0; k < 9; k++) {
    if (tr_is_nodata(nd, win[k])) {
      if (!compute_edges) return 0;
      win[k] = win[4];
    }
  }
  return 1;
}

/* 1 when the block's input (halo included) holds no nodata cell. */
static inline int tr_window_clean(const tr_window *w, const tr_nodata *nd) {
  /* Only cells inside the raster count: the halo beyond its edge is NaN
   * padding, and edge cells never take the fast path anyway. */
  int64_t r0 = w->grow0 == 0 ? 0 : -1, c0 = w->gcol0 == 0 ? 0 : -1;
  int64_t r1 = w->grow0 + w->rows == w->raster_rows ? w->rows - 1 : w->rows;
  int64_t c1 = w->gcol0 + w->cols == w->raster_cols ? w->cols - 1 : w->cols;
  /* tr_is_nodata's test for every cell of a row, without an exit per cell,
   * so that the loops vectorise (a scan with one was as slow as the slope
   * kernel itself) */
  const int by_value = nd->has && !nd->is_nan;
  const float v = nd->value;
  for (int64_t r = r0; r <= r1; r++) {
    const float *p = tr_row(w, r);
    int bad = 0;
    if (by_value)
      for (int64_t c = c0; c <= c1; c++)
        bad |= isnan(p[c]) | tr_near_nodata(p[c], v);
    else
      for (int64_t c = c0; c <= c1; c++) bad |= isnan(p[c]);
    if (bad) return 0;
  }
  return 1;
}

#endif
