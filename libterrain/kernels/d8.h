/*
 * d8.h - the D8 rule: the steepest lower neighbour of a cell of a filled DEM,
 * TauDEM d8flowdir's way (internal to libterrain). The `d8` local kernel
 * (d8.c: TauDEM's sd8 slope) and the `flowdir` graph program
 * (hydro/flowdir_program.c: the directions) call this one function, so a
 * cell's direction and its slope always agree.
 *
 * For a cell with elevation z and all eight neighbours valid, the drop to
 * neighbour k is the Float32 difference z - z_k and its slope
 *   s_k = (float)(fact[k] * (double)(z - z_k)),  fact[k] = 1 / distance_k
 * with distance sqrt((dcol dx)^2 + (drow dy)^2) for the row's cell size dx x dy
 * (the geotransform's; geographic DEMs: metres per row from the ellipsoid, as
 * kernels/gradient.h). The direction is the first k reaching the largest
 * s_k > 0 in the order E, N, W, S, NE, NW, SW, SE (k = 1, 3, 5, 7, 2, 4, 6, 8),
 * the order and the Float32 comparison TauDEM uses, so ties break as in
 * TauDEM. TauDEM also refuses a diagonal that would cross a neighbour's
 * diagonal (dontCross); on steepest descent that never happens: a cell c
 * draining to its diagonal neighbour d has d lower than both cells next to
 * c and d (a diagonal beats a cardinal only when its drop is larger by the
 * distance ratio > 1), and the crossing diagonal would need the opposite, so
 * no check is needed.
 *
 * Results: TR_D8_CELL_NODATA (the cell is NaN), TR_D8_CELL_OUTLET (a
 * neighbour is NaN: the DEM's edge or NoData; TauDEM gives such cells no
 * direction), 0 (a flat: no lower neighbour) or k in 1..8 (core/d8_codes.h's
 * writer numbering) with *slope = s_k (0 for a flat). A lower neighbour whose
 * slope underflows to 0 in Float32 (elevations near 1e-38) still counts: the
 * first such in the order is taken.
 */
#ifndef TR_D8_H
#define TR_D8_H

#include <math.h>
#include <stdint.h>

#include "d8_codes.h"
#include "kernel.h"
#include "raster.h"
#include "sink.h"

#define TR_D8_CELL_NODATA (-1)
#define TR_D8_CELL_OUTLET (-2)

/* The cell sizes of a DEM: plain data (kernel params travel to other ranks). */
typedef struct {
  double gt[6];
  int geographic;
  double semi_major, e2;
} tr_d8_geom;

/* From the opened input; a rotated geotransform is refused (TR_EINPUT). */
int tr_d8_geom_init(const tr_input *in, tr_d8_geom *g, tr_error *err);

/* The cell size (metres for a geographic DEM) of global row grow. */
void tr_d8_row_dxdy(const tr_d8_geom *g, int64_t grow, double *dx, double *dy);

/* fact[k] = 1 / distance to neighbour k for cells of global row grow. */
void tr_d8_row_fact(const tr_d8_geom *g, int64_t grow, double fact[9]);

/* The params of the two slope kernels over a filled DEM, `d8` (d8.c: sd8)
 * and `dinf_slp` (dinf_slope.c: dinfflowdir's slope): plain data. */
typedef struct {
  tr_d8_geom geom;
  int64_t rows; /* the DEM's (tr_dinf_row_dxdy: a geographic row's size) */
  int has_nodata;
  float nodata;
} tr_d8_dem_params;

/* Both slope kernels' prepare (a tr_prepare_fn, local/executor.h): cell
 * sizes and nodata from the filled DEM into tr_d8_dem_params; the product
 * is Float32 with nodata -1 (TauDEM's, for sd8 and for slp). */
int tr_d8_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err);

/* The 3x3 window of block cell (r, c) of w into z (row-major, the cell at
 * z[4]) with NoData as NaN by exact equality, as the graph runner's tile
 * store reads a DEM, so a slope kernel and the direction programs see one
 * DEM: 1 when all nine cells are valid. */
static inline int tr_d8_window(const tr_window *w, int64_t r, int64_t c, int has_nodata, float nodata, float z[9]) {
  int valid = 1;
  for (int dr = -1; dr <= 1; dr++)
    for (int dc = -1; dc <= 1; dc++) {
      const float v = tr_at(w, r + dr, c + dc);
      const float u = has_nodata && v == nodata ? NAN : v;
      valid &= !isnan(u);
      z[(dr + 1) * 3 + dc + 1] = u;
    }
  return valid;
}

/* The search order: cardinal directions first, as TauDEM. */
static const int tr_d8_order[8] = {1, 3, 5, 7, 2, 4, 6, 8};

/* z: the cell in a window whose rows are `stride` floats apart, NaN for
 * NoData and outside the DEM (the window must hold all eight neighbours). */
static inline int tr_d8_cell(const float *z, int64_t stride, const double fact[9], float *slope) {
  const float c = z[0];
  *slope = 0.0f;
  if (isnan(c)) return TR_D8_CELL_NODATA;
  float n[9];
  int gap = 0;
  for (int k = 1; k <= 8; k++) {
    n[k] = z[tr_d8_drow[k] * stride + tr_d8_dcol[k]];
    gap |= isnan(n[k]);
  }
  if (gap) return TR_D8_CELL_OUTLET;
  /* selects, not branches: whether a neighbour is lower is a coin toss on
   * rough terrain, and mispredicted branches were most of this rule's time.
   * A neighbour not lower counts as slope 0, which never beats smax >= 0. */
  float smax = 0.0f;
  int best = 0, first_lower = 0;
  for (int i = 0; i < 8; i++) {
    const int k = tr_d8_order[i];
    const float d = c - n[k];
    const int lower = d > 0.0f;
    first_lower = !first_lower && lower ? k : first_lower;
    const float s = lower ? (float)(fact[k] * (double)d) : 0.0f;
    best = s > smax ? k : best;
    smax = s > smax ? s : smax;
  }
  *slope = smax;
  return best ? best : first_lower;
}

#endif
