/*
 * gradient.h - parameters shared by the slope and aspect kernels
 * (internal to libterrain).
 *
 * Cell size: with a projected CRS, or whenever -s is given, the cell size is
 * the geotransform's, divided by the scale, as gdaldem does. With a
 * geographic CRS and no -s, the metric cell size is computed per row from
 * the ellipsoid at the row's centre latitude phi:
 *   east-west  = dlon(rad) * N(phi) * cos(phi),  N = a / sqrt(1 - e2 sin^2 phi)
 *   north-south = dlat(rad) * M(phi),             M = a (1 - e2) / (1 - e2 sin^2 phi)^1.5
 * so slopes are true angles at every latitude instead of needing a guessed
 * scale (gdaldem's -s 111120 is exact only on the equator, north-south).
 *
 * The struct is plain data: libft copies it to other workers and ranks.
 */
#ifndef TR_GRADIENT_H
#define TR_GRADIENT_H

#include <math.h>
#include <stdint.h>

#include "executor.h"
#include "raster.h"
#include "terrain.h"
#include "window3.h"

typedef struct {
  tr_nodata nd;
  float dst_nodata;      /* -9999, as gdaldem */
  int dst_has_nodata;    /* declare it (aspect -zero_for_flat does not) */
  int compute_edges;
  int alg;              /* tr_gradient_alg */
  int percent;          /* slope only */
  int trigonometric;    /* aspect only */
  int zero_for_flat;    /* aspect only */
  double scale;         /* divides the horizontal cell size (gdaldem -s) */
  int geographic;       /* per-row metric cell size from the ellipsoid */
  double gt[6];
  double semi_major, e2;
  double z;             /* hillshade only: vertical exaggeration (-z) */
  double azimuth;       /* hillshade only: light from, degrees clockwise from north */
  double altitude;      /* hillshade only: light above the horizon, degrees */
  int shade;            /* hillshade only: tr_shade_mode */
  int int_source;       /* hillshade only: Byte/Int16/UInt16 input (gdaldem's integer path) */
} tr_gradient_params;


/* 1 / cell size east-west and north-south for global row `grow`, in the
 * units gdaldem uses (the geotransform's, or metres when geographic).
 * The GPU versions call it only for projected rasters: its sin and cos
 * are the CPU's libm's, which a GPU's do not match to the bit. */
TR_HD static inline void tr_gradient_inv_res(const tr_gradient_params *p, int64_t grow, double *inv_ew,
                                       double *inv_ns) {
  if (!p->geographic) {
    *inv_ew = 1.0 / p->gt[1];
    *inv_ns = 1.0 / p->gt[5];
    return;
  }
  const double d2r = M_PI / 180.0;
  double phi = (p->gt[3] + (grow + 0.5) * p->gt[5]) * d2r;
  double s = sin(phi), w = 1.0 - p->e2 * s * s;
  double n = p->semi_major / sqrt(w);
  double m = p->semi_major * (1.0 - p->e2) / (w * sqrt(w));
  *inv_ew = 1.0 / (p->gt[1] * d2r * n * cos(phi));
  *inv_ns = 1.0 / (p->gt[5] * d2r * m);
}

/* What tr_slope, tr_aspect and tr_hillshade hand the runner: their
 * params with the command's flags set, and -s (0: not given). */
typedef struct {
  tr_gradient_params p;
  double scale_opt;
} tr_gradient_setup;

/* A tr_prepare_fn (local/executor.h) for the gradient family: `opts` is a
 * tr_gradient_setup; completes its params with what depends on the input
 * (nodata, georeferencing, CRS) into `params`. */
int tr_gradient_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err);

/* The family's GPU versions (kernels/cuda/gradient.cu; kernel.h's contract).
 * They decline geographic rasters (per-row cell sizes need the CPU's sin). */
#ifdef TERRAFORT_HAVE_CUDA
#ifdef __cplusplus
extern "C" {
#endif
int tr_slope_gpu(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out, void *stream);
int tr_aspect_gpu(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out, void *stream);
int tr_hillshade_gpu(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out, void *stream);
#ifdef __cplusplus
}
#endif
#endif

#endif
