/*
 * aspect.c - gdaldem-compatible aspect (Horn or Zevenbergen-Thorne).
 *
 * As in gdaldem, aspect uses the raw window differences (the cell size does
 * not enter), atan2 in double precision, azimuth degrees clockwise from
 * north by default or counter-clockwise from east with -trigonometric, and
 * flat cells (both differences exactly 0) become nodata, or 0 with
 * -zero_for_flat (which, as in gdaldem, also leaves the output without a
 * nodata value: cells without a result are 0 too). Double-precision atan2 keeps values next to the 0/360
 * wrap identical to gdaldem's, where an approximation could jump by 360.
 *
 * Unlike gdaldem, the grid's orientation counts: rows running north (a
 * south-up DEM, geotransform[5] > 0) or columns running west
 * (geotransform[1] < 0) flip the difference's sign, so the azimuth is the
 * true one (gdaldem mirrors it). A DEM without a geotransform is north-up.
 */
#include <math.h>
#include <string.h>

#include "gradient.h"
#include "gradient_cell.h"

static int aspect_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *outv) {
  const tr_gradient_params *p = params;
  float *out = outv;
  const int clean = tr_window_clean(w, &p->nd);
  for (int64_t r = row0; r < row0 + nrows; r++) {
    const int64_t gr = w->grow0 + r;
    float *o = out + (r - row0) * w->cols;
    const int edge_row = gr == 0 || gr == w->raster_rows - 1;
    for (int64_t c = 0; c < w->cols; c++) {
      const int64_t gc = w->gcol0 + c;
      float win[9];
      if (clean && !edge_row && gc != 0 && gc != w->raster_cols - 1) {
        for (int i = 0; i < 3; i++)
          for (int j = 0; j < 3; j++) win[i * 3 + j] = tr_at(w, r - 1 + i, c - 1 + j);
        o[c] = aspect_cell(p, win);
      } else {
        o[c] = tr_window3(w, &p->nd, p->compute_edges, r, c, win) ? aspect_cell(p, win) : p->dst_nodata;
      }
    }
  }
  return 0;
}

/* The gradient family's set-up; aspect reads only the signs of the
 * geotransform's steps (a DEM without one counts as north-up). */
static int aspect_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  int st = tr_gradient_prepare(in, opts, params, prod, err);
  tr_gradient_params *p = params;
  if (!st && !in->has_gt) {
    p->gt[1] = 1.0;
    p->gt[5] = -1.0;
  }
  return st;
}

void tr_aspect_opts_init(tr_aspect_opts *o) {
  tr_run_opts_init(&o->run);
  o->alg = TR_GRAD_HORN;
  o->trigonometric = 0;
  o->zero_for_flat = 0;
  o->compute_edges = 0;
}

const tr_kernel tr_kernel_aspect = {"aspect", 1, sizeof(tr_gradient_params), GDT_Float32, 1, aspect_kernel,
                                    TR_GPU(tr_aspect_gpu)};

int tr_aspect(const tr_aspect_opts *opts, const char *src, const char *dst, tr_error *err) {
  tr_gradient_setup g;
  memset(&g, 0, sizeof g);
  tr_gradient_params *p = &g.p;
  p->alg = opts->alg;
  p->trigonometric = opts->trigonometric;
  p->zero_for_flat = opts->zero_for_flat;
  p->compute_edges = opts->compute_edges;
  /* gdaldem declares no output nodata with -zero_for_flat, so cells
   * without a value (edges, nodata) are 0 there as well. */
  p->dst_nodata = opts->zero_for_flat ? 0.0f : -9999.0f;
  p->dst_has_nodata = !opts->zero_for_flat;
  return tr_run_kernel(&opts->run, "aspect", aspect_prepare, &g, src, dst, err);
}
