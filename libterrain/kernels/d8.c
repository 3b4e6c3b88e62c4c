/*
 * d8.c - the `d8` local kernel: TauDEM's sd8, the slope (drop / distance)
 * along each cell's D8 direction of a filled DEM (d8.h), 0 on flats and -1
 * (nodata) where the direction is nodata (the DEM's edge, cells next to
 * NoData, NoData). It is what tr_flowdir's --slope output runs, so the local
 * runner's threads, ranks and --ft dual apply to it. Also here: the cell
 * sizes the D8 rule uses (tr_d8_geom), shared with the flowdir program.
 */
#include "d8.h"

#include <string.h>

#include "gradient.h"
#include "kernel.h"
#include "window3.h"

int tr_d8_geom_init(const tr_input *in, tr_d8_geom *g, tr_error *err) {
  memset(g, 0, sizeof *g);
  if (in->gt[2] != 0 || in->gt[4] != 0)
    return tr_fail(err, TR_EINPUT,
                   "input '%s' has a rotated geotransform (terms %g, %g): D8 directions need rows and columns "
                   "along north and east; warp it first (gdalwarp)",
                   in->path, in->gt[2], in->gt[4]);
  memcpy(g->gt, in->gt, sizeof g->gt);
  if (in->geographic) {
    g->geographic = 1;
    g->semi_major = in->semi_major;
    const double f = in->inv_flattening > 0 ? 1.0 / in->inv_flattening : 0.0;
    g->e2 = f * (2.0 - f);
  }
  return TR_OK;
}

void tr_d8_row_dxdy(const tr_d8_geom *g, int64_t grow, double *dx, double *dy) {
  /* the gradient kernels' cell size, so geographic DEMs get the same metres */
  tr_gradient_params p;
  memset(&p, 0, sizeof p);
  memcpy(p.gt, g->gt, sizeof p.gt);
  p.geographic = g->geographic;
  p.semi_major = g->semi_major;
  p.e2 = g->e2;
  p.scale = 1.0;
  double ie, in;
  tr_gradient_inv_res(&p, grow, &ie, &in);
  *dx = fabs(1.0 / ie);
  *dy = fabs(1.0 / in);
}

void tr_d8_row_fact(const tr_d8_geom *g, int64_t grow, double fact[9]) {
  double dx, dy;
  tr_d8_row_dxdy(g, grow, &dx, &dy);
  fact[0] = 0.0;
  for (int k = 1; k <= 8; k++) {
    const double a = tr_d8_dcol[k] * dx, b = tr_d8_drow[k] * dy;
    fact[k] = 1.0 / sqrt(a * a + b * b);
  }
}

static int d8_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *outv) {
  const tr_d8_dem_params *p = params;
  float *out = outv;
  for (int64_t r = row0; r < row0 + nrows; r++) {
    double fact[9];
    tr_d8_row_fact(&p->geom, w->grow0 + r, fact);
    for (int64_t c = 0; c < w->cols; c++) {
      float z[9];
      tr_d8_window(w, r, c, p->has_nodata, p->nodata, z);
      float s;
      const int k = tr_d8_cell(z + 4, 3, fact, &s);
      out[(r - row0) * w->cols + c] = k < 0 ? -1.0f : s;
    }
  }
  return 0;
}

const tr_kernel tr_kernel_d8 = {
    .name = "d8",
    .halo = 1,
    .params_size = sizeof(tr_d8_dem_params),
    .out_type = GDT_Float32,
    .bands = 1,
    .cpu = d8_kernel};

/* The slope kernels' prepare (tr_prepare_fn, d8.h): cell sizes and nodata
 * from the filled DEM. */
int tr_d8_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  (void)opts;
  tr_d8_dem_params *p = params;
  int st = tr_d8_geom_init(in, &p->geom, err);
  if (st) return st;
  p->rows = in->rows;
  p->has_nodata = in->has_nodata && !isnan(in->nodata);
  p->nodata = (float)in->nodata;
  prod->has_nodata = 1;
  prod->nodata = -1.0;
  return TR_OK;
}
