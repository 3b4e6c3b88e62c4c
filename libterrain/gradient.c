/*
 * gradient.c - input-dependent set-up shared by slope and aspect.
 */
#include "gradient.h"

#include <string.h>

void tr_gradient_params_init(tr_gradient_params *p, const tr_input *in, double scale_opt) {
  memset(p, 0, sizeof *p);
  p->nd.has = in->has_nodata;
  p->nd.value = (float)in->nodata;
  p->nd.is_nan = in->has_nodata && isnan(in->nodata);
  p->dst_nodata = -9999.0f;
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
