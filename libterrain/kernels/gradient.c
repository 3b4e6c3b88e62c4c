/*
 * gradient.c - input-dependent set-up shared by slope and aspect.
 */
#include "gradient.h"

#include <string.h>

#include "dist.h"
#include "executor.h"

/* The parts of the parameters that depend on the input: nodata,
 * georeferencing, CRS. */
static void params_from_input(tr_gradient_params *p, const tr_input *in, double scale_opt) {
  p->nd.has = in->has_nodata;
  p->nd.value = (float)in->nodata;
  p->nd.is_nan = in->has_nodata && isnan(in->nodata);
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

int tr_gradient_run(const tr_run_opts *run, const char *name, int (*fn)(const void *, const tr_window *, int64_t, int64_t, float *),
                    tr_gradient_params *p, double scale_opt, const char *src, const char *dst, tr_error *err) {
  if (p->alg != TR_GRAD_HORN && p->alg != TR_GRAD_ZEVENBERGEN_THORNE)
    return tr_fail(err, TR_EUSAGE, "unknown gradient algorithm");
  if (scale_opt < 0 || isnan(scale_opt)) return tr_fail(err, TR_EUSAGE, "scale must be a positive number");
  tr_input in;
  int st = tr_dist_agree(tr_input_open(&in, src, run->band, err), err);
  if (!st) {
    params_from_input(p, &in, scale_opt);
    tr_local_job job = {name, fn, p, sizeof *p, p->dst_nodata, p->dst_has_nodata};
    st = tr_run_local(run, &in, &job, dst, err);
  }
  tr_input_close(&in);
  return st;
}
