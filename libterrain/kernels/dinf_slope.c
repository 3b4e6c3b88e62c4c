/*
 * dinf_slope.c - the `dinf_slp` local kernel: TauDEM dinfflowdir's slope
 * (-slp), the steepest downslope facet's slope of each cell of a filled DEM
 * (dinf.h's tr_dinf_cell), 0 where no facet slopes down (flats and pits)
 * and -1 (nodata) where the cell or one of its eight neighbours is NoData
 * or off the DEM. The slope needs no flat routing, so it is a local kernel
 * rather than a pass of the "dinf" graph program (which makes the angles):
 * the local runner's threads, ranks and --ft modes apply, and the cell rule
 * is the angle's, so a cell's angle and slope always come from one facet.
 * Its params and prepare are the `d8` kernel's (d8.h, tr_d8_dem_params).
 */
#include <math.h>
#include <string.h>

#include "dinf.h"
#include "dinf_span.h"
#include "kernel.h"
#include "window3.h"

static int dinf_slp_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *outv) {
  const tr_d8_dem_params *p = params;
  float *out = outv;
  /* a window without nodata: every cell off the DEM's edge has its nine
   * cells, and the row's span takes them four at a time (dinf_span.h) */
  const tr_nodata nd = tr_nodata_of(p->has_nodata, p->nodata);
  const int clean = tr_window_clean(w, &nd);
  /* the columns whose eight neighbours lie on the DEM */
  const int64_t c0 = w->gcol0 == 0 ? 1 : 0, c1 = w->gcol0 + w->cols == w->raster_cols ? w->cols - 1 : w->cols;
  for (int64_t r = row0; r < row0 + nrows; r++) {
    double dx, dy;
    const int64_t gr = w->grow0 + r;
    tr_dinf_row_dxdy(&p->geom, p->rows, gr, &dx, &dy);
    float *o = out + (r - row0) * w->cols;
    const int span = clean && gr > 0 && gr < w->raster_rows - 1 && c1 > c0;
    if (span) tr_dinf_span(tr_row(w, r) + c0, w->in_stride, c1 - c0, dx, dy, NULL, o + c0, NULL);
    for (int64_t c = 0; c < w->cols; c++) {
      if (span && c >= c0 && c < c1) c = c1;
      if (c >= w->cols) break;
      float z[9], s = (float)TR_DINF_SLP_NODATA;
      if (tr_d8_window(w, r, c, p->has_nodata, p->nodata, z)) tr_dinf_cell(z + 4, 3, dx, dy, NULL, &s);
      o[c] = s;
    }
  }
  return 0;
}

/* --ft replay's invariant: a slope is >= 0, or nodata. */
static int64_t dinf_slp_check(const void *params, const tr_window *w, const void *cells) {
  (void)params;
  const float *v = cells;
  int64_t bad = 0;
  for (int64_t i = 0; i < w->rows * w->cols; i++) bad += !(v[i] >= 0.0f || v[i] == (float)TR_DINF_SLP_NODATA);
  return bad;
}

const tr_kernel tr_kernel_dinf_slp = {.name = "dinf_slp",
                                      .halo = 1,
                                      .params_size = sizeof(tr_d8_dem_params),
                                      .out_type = GDT_Float32,
                                      .bands = 1,
                                      .cpu = dinf_slp_kernel,
                                      .check = dinf_slp_check};
