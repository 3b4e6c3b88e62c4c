/*
 * hillshade_cell.h - the per-cell arithmetic of hillshade (hillshade.c's
 * comment explains gdaldem's formulas), compiled for the CPU (hillshade.c)
 * and the GPU (cuda/hillshade.cu) from this one text; internal to
 * libterrain. One difference is deliberate: a / sqrt(b) is gdaldem's SSE
 * estimate refined by Newton on x86-64 CPUs (the CPU's own rsqrtps, which
 * no GPU has) and exact on a GPU, so the GPU's bytes are within one grey
 * level of the CPU's (the GPU tests count the differing cells). The row
 * constants are computed on the host in both cases (libm's sin and cos).
 */
#ifndef TR_HILLSHADE_CELL_H
#define TR_HILLSHADE_CELL_H

#include <math.h>
#include <stdint.h>

#include "gradient.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The constants of one row: gdaldem's GDALHillshadeAlgData and
 * GDALHillshadeMultiDirectionalAlgData, with the row's cell size. */
typedef struct {
  double inv_ew, inv_ns;
  double zs;                    /* z / (8 scale), or 2 scale for ZT */
  double az_rad, sin_alt;
  double caz, saz;              /* cos(az), sin(az) times cos(alt) zs */
  double sq_z;                  /* zs^2 */
  double s254, caz254, saz254;
  int same_res;                 /* the same_res form (see above) */
  double k_same, fx, fy;        /* its constants: sq_z inv_ew^2, saz254 inv_ew, -caz254 inv_ew */
  double s127, calt127, c225;   /* multidirectional */
  int64_t ms_end;               /* integer same_res rows: columns [1, ms_end) round in float */
} hs_row;

static inline void hs_row_init(const tr_gradient_params *p, int64_t grow, int64_t cols, hs_row *h) {
  const double d2r = M_PI / 180.0;
  tr_gradient_inv_res(p, grow, &h->inv_ew, &h->inv_ns);
  h->zs = p->z / ((p->alg == TR_GRAD_ZEVENBERGEN_THORNE ? 2 : 8) * p->scale);
  h->az_rad = p->azimuth * d2r;
  h->sin_alt = sin(p->altitude * d2r);
  const double cos_alt_z = cos(p->altitude * d2r) * h->zs;
  h->caz = cos(h->az_rad) * cos_alt_z;
  h->saz = sin(h->az_rad) * cos_alt_z;
  h->sq_z = h->zs * h->zs;
  h->s254 = 254.0 * h->sin_alt;
  h->caz254 = 254.0 * h->caz;
  h->saz254 = 254.0 * h->saz;
  h->same_res = p->shade == TR_SHADE_STANDARD && p->alg == TR_GRAD_HORN && !p->geographic && p->gt[1] == -p->gt[5];
  h->k_same = h->sq_z * h->inv_ew * h->inv_ew;
  h->fy = h->caz254 * -h->inv_ew;
  h->fx = h->saz254 * h->inv_ew;
  h->s127 = 127.0 * h->sin_alt;
  h->calt127 = 127.0 * cos_alt_z;
  h->c225 = 127.0 * cos(225 * d2r) * cos_alt_z;
  /* gdaldem's SSE loop: j = 1, 5, 9, ... while j < cols - 4, four columns each */
  h->ms_end = p->int_source && h->same_res && cols > 5 ? 1 + 4 * ((cols - 5 + 3) / 4) : 1;
}

#if defined(__SSE2__)
/* num / sqrt(den) for two cells, as ApproxADivByInvSqrtB. */
static inline __m128d div_sqrt2(__m128d num, __m128d den) {
  const __m128d half = _mm_mul_pd(den, _mm_set1_pd(0.5));
  __m128d r = _mm_cvtps_pd(_mm_rsqrt_ps(_mm_cvtpd_ps(den)));
  r = _mm_mul_pd(r, _mm_sub_pd(_mm_set1_pd(1.5), _mm_mul_pd(half, _mm_mul_pd(r, r))));
  return _mm_mul_pd(num, r);
}
#endif

/* num / sqrt(den): on x86-64 CPUs as gdaldem gets it there (above); on a
 * GPU, and CPUs without SSE2, exactly. */
TR_HD static inline double div_sqrt(double num, double den) {
#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
  return _mm_cvtsd_f64(div_sqrt2(_mm_set1_pd(num), _mm_set1_pd(den)));
#else
  return num / sqrt(den);
#endif
}

/* A shade to Byte as GDALCopyWords converts Float32. */
TR_HD static inline uint8_t hs_byte(float f) {
  float t = f + 0.5f;
  t = t > 0.5f ? t : 0.5f;
  t = t < 255.0f ? t : 255.0f;
  return (uint8_t)(int)t;
}

/* The standard shade from num / sqrt(den): gdaldem's scalar functions add
 * the 1 in double, its integer SSE loop (ms) in float. */
TR_HD static inline float std_finish(double v, int ms) {
  if (ms) {
    const float f = (float)v + 1.0f;
    return f > 1.0f ? f : 1.0f;
  }
  return (float)(v <= 0.0 ? 1.0 : 1.0 + v);
}

TR_HD static inline void gradient(const tr_gradient_params *p, const hs_row *h, const float *w, double *x, double *y) {
  if (p->alg == TR_GRAD_HORN) {
    *x = ((w[0] + w[3] + w[3] + w[6]) - (w[2] + w[5] + w[5] + w[8])) * h->inv_ew;
    *y = ((w[6] + w[7] + w[7] + w[8]) - (w[0] + w[1] + w[1] + w[2])) * h->inv_ns;
  } else {
    *x = (w[3] - w[5]) * h->inv_ew;
    *y = (w[7] - w[1]) * h->inv_ns;
  }
}

/* gdaldem's DifferenceBetweenAngles over 2 pi. */
TR_HD static inline double angle_diff(double a, double b) {
  const double n = 2 * M_PI;
  a = fmod(a, n);
  if (a < 0) a = n + a;
  b = fmod(b, n);
  if (b < 0) b = n + b;
  double d = fabs(a - b);
  return d > n / 2 ? n - d : d;
}

/* The shade of one cell from its 3x3 window, before the Byte conversion. */
TR_HD static inline float hs_value(const tr_gradient_params *p, const hs_row *h, const float *w, int ms) {
  double x, y;
  if (h->same_res) {
    float ax = w[0] - w[8];
    const float s62 = w[6] - w[2], t35 = w[3] - w[5], o17 = w[1] - w[7];
    float ay = ax;
    ax += t35;
    ay += o17;
    ax += t35;
    ay += o17;
    ax += s62;
    ay -= s62;
    x = ax;
    y = ay;
    return std_finish(div_sqrt(h->s254 + (x * h->fx + y * h->fy), 1 + h->k_same * (x * x + y * y)), ms);
  }
  gradient(p, h, w, &x, &y);
  if (p->shade == TR_SHADE_STANDARD)
    return std_finish(div_sqrt(h->s254 - (y * h->caz254 - x * h->saz254), 1 + h->sq_z * (x * x + y * y)), 0);
  if (p->shade == TR_SHADE_COMBINED) {
    const double slope = (x * x + y * y) * h->sq_z;
    double cang = acos(div_sqrt(h->sin_alt - (y * h->caz - x * h->saz), 1 + slope));
    cang = 1 - cang * atan(sqrt(slope)) * (1.0 / ((M_PI * M_PI) / 4));
    return cang <= 0.0 ? 1.0f : (float)(1.0 + (254.0 * cang));
  }
  if (p->shade == TR_SHADE_MULTIDIRECTIONAL) {
    const double xx = x * x, yy = y * y, s = xx + yy;
    if (s == 0.0) return (float)(1.0 + h->s254);
    double v225 = h->s127 + (x - y) * h->c225;
    v225 = v225 <= 0.0 ? 0.0 : v225;
    double v270 = h->s127 - x * h->calt127;
    v270 = v270 <= 0.0 ? 0.0 : v270;
    double v315 = h->s127 + (x + y) * h->c225;
    v315 = v315 <= 0.0 ? 0.0 : v315;
    double v360 = h->s127 - y * h->calt127;
    v360 = v360 <= 0.0 ? 0.0 : v360;
    const double w225 = 0.5 * s - x * y, w270 = xx, w315 = s - w225, w360 = yy;
    const double v = div_sqrt((w225 * v225 + w270 * v270 + w315 * v315 + w360 * v360) / s, 1 + h->sq_z * s);
    return (float)(1.0 + v);
  }
  /* igor: x, y are the gradient; the aspect uses the raw differences */
  const double slope_deg = atan(sqrt(x * x + y * y) * h->zs) * (180.0 / M_PI);
  double aspect;
  if (p->alg == TR_GRAD_HORN) {
    const double dx = ((w[2] + w[5] + w[5] + w[8]) - (w[0] + w[3] + w[3] + w[6]));
    const double dy = ((w[6] + w[7] + w[7] + w[8]) - (w[0] + w[1] + w[1] + w[2]));
    aspect = atan2(dy, -dx);
  } else {
    const double dx = w[5] - w[3], dy = w[7] - w[1];
    aspect = atan2(dy, -dx);
  }
  const double aspect_strength = 1 - angle_diff(aspect, M_PI * 3 / 2 - h->az_rad) / M_PI;
  return (float)(255.0 * (1.0 - slope_deg / 90 * aspect_strength));
}

/* 1 when the interior cell (r, c) has no nodata in its 3x3 window. */
TR_HD static inline int raw_clean(const tr_window *w, const tr_nodata *nd, int64_t r, int64_t c) {
  for (int i = -1; i <= 1; i++)
    for (int j = -1; j <= 1; j++)
      if (tr_is_nodata(nd, tr_at(w, r + i, c + j))) return 0;
  return 1;
}

#endif
