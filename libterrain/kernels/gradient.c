/*
 * gradient.c - input-dependent set-up shared by the gradient kernels (slope,
 * aspect, hillshade): nodata, cell size, geographic scale.
 */
#include "gradient.h"

#include <string.h>


/* The parts of the parameters that depend on the input: nodata,
 * georeferencing, CRS. */
static void params_from_input(tr_gradient_params *p, const tr_input *in, double scale_opt) {
  p->nd = tr_nodata_of(in->has_nodata, in->nodata);
  memcpy(p->gt, in->gt, sizeof p->gt);
  if (scale_opt > 0 || !in->geographic) {
    p->scale = scale_opt > 0 ? scale_opt : 1.0;
  } else {
    p->scale = 1.0;
    p->geographic = 1;
    p->semi_major = in->semi_major;
    double f = in->inv_flattening > 0 ? 1.0 / in->inv_flattening : 0.0;
    p->e2 = f * (2.0 - f);
  }
}

int tr_gradient_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const tr_gradient_setup *g = opts;
  tr_gradient_params *p = params;
  *p = g->p;
  if (p->alg != TR_GRAD_HORN && p->alg != TR_GRAD_ZEVENBERGEN_THORNE)
    return tr_fail(err, TR_EUSAGE, "unknown gradient algorithm");
  if (g->scale_opt < 0 || isnan(g->scale_opt)) return tr_fail(err, TR_EUSAGE, "scale must be a positive number");
  if (in->gt[2] != 0 || in->gt[4] != 0)
    return tr_fail(err, TR_EINPUT,
                   "input '%s' has a rotated geotransform (terms %g, %g): slope, aspect and shading need rows and "
                   "columns along north and east; warp it first (gdalwarp)",
                   in->path, in->gt[2], in->gt[4]);
  params_from_input(p, in, g->scale_opt);
  prod->has_nodata = p->dst_has_nodata;
  prod->nodata = p->dst_nodata;
  return TR_OK;
}
