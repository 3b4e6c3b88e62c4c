/*
 * dinf.h - the D-infinity rule (Tarboton 1997) as TauDEM 5.4 computes it
 * (internal to libterrain): the cell formulas shared by the "dinf" graph
 * program (hydro/flowdir_program.c: the angle), the "dinf_slp" local kernel
 * (dinf_slope.c: the slope) and the "dinf_up" program
 * (hydro/dinf_up_program.c: specific catchment area).
 *
 * Facets. A cell's eight triangular facets are numbered K = 1..8 counter-
 * clockwise from east; facet K is spanned by a cardinal neighbour E1 (the
 * facet's first edge) and a diagonal neighbour E2, at distances D1 and D2
 * (dx or dy of the cell's row) along the two legs, DD = sqrt(dx^2 + dy^2).
 * Over a facet the plane through the three elevations gives a slope and an
 * angle inside the facet (tr_dinf_vslope_side, TauDEM's VSLOPE); an angle outside
 * is clamped to the nearer edge with that edge's slope. The cell's angle is
 * the steepest facet's, strictly positive slope required, the first facet in
 * K order winning ties, written as ANGC[K] pi/2 + ANGF[K] angle in Float32
 * with TauDEM's PI = 3.14159265359 (not M_PI: the last bits of every angle
 * depend on it). Elevations enter the formulas as doubles.
 *
 * Proportions. Flow leaving at angle a is split between the two neighbours
 * bounding the facet it points into, in proportion to the angular
 * distance (tr_dinf_prop_at, TauDEM's prop): a neighbour of direction k (1 = E,
 * 2 = NE, ... 8 = SE, the reference angles 0, atan2(dy, dx), pi/2, ...)
 * receives p in (0, 1]; p < 1e-5 counts as none.
 */
#ifndef TR_DINF_H
#define TR_DINF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "d8.h"

/* dinfflowdir's nodata: the angle's, the slope's */
#define TR_DINF_ANG_NODATA (-3.4028234663852886e38) /* -FLT_MAX, as TauDEM writes it */
#define TR_DINF_SLP_NODATA (-1.0)

/* TauDEM's pi (commonLib.h): angles and proportions use it */
#define TR_DINF_PI 3.14159265359

/* Facet K's neighbours as (row, col) offsets: E1 cardinal, E2 diagonal; which
 * of (dx, dy) the legs are (1 = dx, 2 = dy); the angle's base and sign. */
static const int tr_dinf_e1_row[9] = {0, 0, -1, -1, 0, 0, 1, 1, 0};
static const int tr_dinf_e1_col[9] = {0, 1, 0, 0, -1, -1, 0, 0, 1};
static const int tr_dinf_e2_row[9] = {0, -1, -1, -1, -1, 1, 1, 1, 1};
static const int tr_dinf_e2_col[9] = {0, 1, 1, -1, -1, -1, -1, 1, 1};
static const int tr_dinf_leg1[9] = {0, 1, 2, 2, 1, 1, 2, 2, 1};
static const int tr_dinf_leg2[9] = {0, 2, 1, 1, 2, 2, 1, 1, 2};
static const float tr_dinf_angc[9] = {0, 0.f, 1.f, 1.f, 2.f, 2.f, 3.f, 3.f, 4.f};
static const float tr_dinf_angf[9] = {0, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f};

/* Neighbour k (1 = E, 2 = NE, 3 = N ... 8 = SE, counter-clockwise) as
 * (row, col) offsets: TauDEM's d2 and d1. */
static const int tr_dinf_nrow[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1};
static const int tr_dinf_ncol[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};

/* The angle written for facet k at angle a inside it. */
static inline float tr_dinf_angle(int k, double a) {
  return (float)(tr_dinf_angc[k] * (TR_DINF_PI / 2) + tr_dinf_angf[k] * a);
}

/* Where the angle atan2(s2, s1) of a facet with legs d1, d2 falls, decided
 * without the atan2 wherever that is certain: 0 below the facet (a < 0), 1
 * inside, 2 past its diagonal (a > atan2(d2, d1)), -1 too close to call
 * (the caller then computes the angle as VSLOPE does). Inside the
 * facet with s1 > 0 the angle grows with s2 / s1, so s2 d1 against d2 s1
 * decides it; a margin of 1e-9 (relative) is far wider than atan2's last-bit
 * error, and legs more than 1000 times apart are always computed. */
static inline int tr_dinf_side(double s1, double s2, double d1, double d2) {
  if (!(d2 < 1e3 * d1 && d1 < 1e3 * d2)) return -1;
  if (s2 < 0.) return (s1 <= 0. || -s2 > 1e-250 * s1) ? 0 : -1;
  if (s2 == 0.) return signbit(s2) ? -1 : s1 < 0. ? 2 : 1;
  if (s1 <= 0.) return 2;
  const double u = s2 * d1, v = d2 * s1;
  if (!(u > 1e-250 && v > 1e-250 && u < 1e250 && v < 1e250)) return -1;
  return u > v * (1. + 1e-9) ? 2 : u < v * (1. - 1e-9) ? 1 : -1;
}

/* TauDEM's VSLOPE: the slope *s of the facet E0 E1 E2 and where its angle
 * (from E1 towards E2, atan2(s2, s1) clamped to [0, atan2(d2, d1)]) falls (tr_dinf_side's 0, 1, 2), with the legs' slopes *s1, *s2: an atan2
 * only where tr_dinf_side cannot decide. */
static inline int tr_dinf_vslope_side(double e0, double e1, double e2, double d1, double d2, double dd, double *s,
                                      double *s1, double *s2) {
  *s1 = (e0 - e1) / d1;
  *s2 = (e1 - e2) / d2;
  int side = tr_dinf_side(*s1, *s2, d1, d2);
  if (side < 0) {
    const double a = (*s2 == 0 && *s1 == 0) ? 0 : atan2(*s2, *s1);
    side = a < 0. ? 0 : a > atan2(d2, d1) ? 2 : 1;
  }
  *s = side == 0 ? *s1 : side == 2 ? (e0 - e2) / dd : sqrt(*s1 * *s1 + *s2 * *s2);
  return side;
}

/* Facet k of the window z (legs dxx[1] = dx, dxx[2] = dy, diagonal dd) as
 * tr_dinf_vslope_side decides it. */
static inline int tr_dinf_facet(const float *z, int64_t stride, int k, const double dxx[3], double dd, double *s,
                                double *s1, double *s2) {
  return tr_dinf_vslope_side((double)z[0], (double)z[tr_dinf_e1_row[k] * stride + tr_dinf_e1_col[k]],
                             (double)z[tr_dinf_e2_row[k] * stride + tr_dinf_e2_col[k]], dxx[tr_dinf_leg1[k]],
                             dxx[tr_dinf_leg2[k]], dd, s, s1, s2);
}

/* atan(i / 16), i = 0..16, as glibc's atan gives them (printed with %a) */
static const double tr_dinf_atan16[17] = {
    0x0p+0,                0x1.ff55bb72cfdeap-5,  0x1.fd5ba9aac2f6ep-4, 0x1.7b97b4bce5b02p-3, 0x1.f5b75f92c80ddp-3,
    0x1.362773707ebccp-2,  0x1.6f61941e4def1p-2,  0x1.a64eec3cc23fdp-2, 0x1.dac670561bb4fp-2, 0x1.0657e94db30dp-1,
    0x1.1e00babdefeb4p-1,  0x1.345f01cce37bbp-1,  0x1.4978fa3269ee1p-1, 0x1.5d58987169b18p-1, 0x1.700a7c5784634p-1,
    0x1.819d0b7158a4dp-1,  0x1.921fb54442d18p-1};

/* atan2(y, x) for y > 0, x > 0 within 2e-15 of the true angle: t = y / x
 * (or x / y past pi / 4) taken to the nearest sixteenth c, atan(t) =
 * atan(c) + atan(u) with u = (t - c) / (1 + t c), |u| <= 1/32, and atan(u)
 * by its series to u^11 (the rest is below 3e-21). t - c is exact (Sterbenz);
 * the roundings of t, 1 + t c, u, the series and the sums stay below 1e-15. */
static inline double tr_dinf_atan_q1(double y, double x) {
  const int swap = y > x;
  const double t = swap ? x / y : y / x;
  const int i = (int)(t * 16. + 0.5);
  const double c = (double)i * 0.0625, u = (t - c) / (1. + t * c), u2 = u * u;
  const double r =
      tr_dinf_atan16[i] + (u + u * u2 * (-1. / 3 + u2 * (1. / 5 + u2 * (-1. / 7 + u2 * (1. / 9 + u2 * (-1. / 11))))));
  return swap ? 0x1.921fb54442d18p+0 - r : r;
}

/* The angle written for facet k at atan2(y, x) (y > 0, x > 0), the same
 * Float32 as tr_dinf_angle(k, atan2(y, x)): from tr_dinf_atan_q1 wherever
 * both ends of its error interval (1e-14, five times its bound plus glibc's
 * ulp) give one float, which then is the float of any angle between them
 * (tr_dinf_angle is monotone in a); from atan2 otherwise. */
static inline float tr_dinf_angle_of(int k, double y, double x) {
  const double a = tr_dinf_atan_q1(y, x);
  const float lo = tr_dinf_angle(k, a - 1e-14), hi = tr_dinf_angle(k, a + 1e-14);
  uint32_t blo, bhi;
  memcpy(&blo, &lo, sizeof blo);
  memcpy(&bhi, &hi, sizeof bhi);
  return blo == bhi ? lo : tr_dinf_angle(k, atan2(y, x));
}

/* The Float32 angle of facet k whose tr_dinf_vslope_side was `side` with
 * legs' slopes s1, s2: tr_dinf_angle(k, a) of VSLOPE's angle a (0 on
 * the cardinal edge, atan2(d2, d1) on the diagonal, atan2(s2, s1) inside),
 * through tr_dinf_angle_of where its arctangent decides. */
static inline float tr_dinf_facet_angle(int k, int side, double s1, double s2, double d1, double d2) {
  if (side == 0) return tr_dinf_angle(k, 0.);
  if (side == 2) return tr_dinf_angle_of(k, d2, d1);
  if (s1 > 0. && s2 > 0.) return tr_dinf_angle_of(k, s2, s1);
  return tr_dinf_angle(k, (s2 == 0 && s1 == 0) ? 0 : atan2(s2, s1));
}

/* The estimate of facet k's slope (tr_dinf_cell) as a square, -1 where the
 * facet is not down: the legs' slopes by the legs' reciprocals r1, r2, the
 * diagonal's by rdd; the gradient's length where it points into the facet,
 * else the cardinal leg's slope where s2 < 0, else the diagonal's. */
static inline double tr_dinf_estimate(double e0, double e1, double e2, double d1, double d2, double r1, double r2,
                                      double rdd) {
  const double s1 = (e0 - e1) * r1, s2 = (e1 - e2) * r2, g = (e0 - e2) * rdd;
  const int inside = s1 > 0. && s2 * d1 <= s1 * d2;
  const double c2 = s1 > 0. ? s1 * s1 : -1., g2 = g > 0. ? g * g : -1.;
  return s2 < 0. ? c2 : inside ? s1 * s1 + s2 * s2 : g2;
}

#ifdef __SSE2__
#include <emmintrin.h>
/* tr_dinf_estimate for facets k and k + 1 at once (k odd), the same formula
 * selecting by masks, without the branches that the facets' data-dependent
 * choices cost (a mispredicted branch a facet was most of the rule's time). */
static inline __m128d tr_dinf_estimate2(const float *z, int64_t stride, int k, __m128d e0, __m128d d1, __m128d d2,
                                        __m128d r1, __m128d r2, __m128d rdd) {
  const __m128d e1 = _mm_set_pd((double)z[tr_dinf_e1_row[k + 1] * stride + tr_dinf_e1_col[k + 1]],
                                (double)z[tr_dinf_e1_row[k] * stride + tr_dinf_e1_col[k]]),
                e2 = _mm_set_pd((double)z[tr_dinf_e2_row[k + 1] * stride + tr_dinf_e2_col[k + 1]],
                                (double)z[tr_dinf_e2_row[k] * stride + tr_dinf_e2_col[k]]);
  const __m128d zero = _mm_setzero_pd(), m1 = _mm_set1_pd(-1.);
  const __m128d s1 = _mm_mul_pd(_mm_sub_pd(e0, e1), r1), s2 = _mm_mul_pd(_mm_sub_pd(e1, e2), r2),
                g = _mm_mul_pd(_mm_sub_pd(e0, e2), rdd);
  const __m128d s1p = _mm_cmpgt_pd(s1, zero), gp = _mm_cmpgt_pd(g, zero), neg = _mm_cmplt_pd(s2, zero);
  const __m128d in = _mm_and_pd(s1p, _mm_cmple_pd(_mm_mul_pd(s2, d1), _mm_mul_pd(s1, d2)));
  const __m128d s11 = _mm_mul_pd(s1, s1);
  const __m128d c2 = _mm_or_pd(_mm_and_pd(s1p, s11), _mm_andnot_pd(s1p, m1)),
                g2 = _mm_or_pd(_mm_and_pd(gp, _mm_mul_pd(g, g)), _mm_andnot_pd(gp, m1)),
                m2 = _mm_add_pd(s11, _mm_mul_pd(s2, s2));
  const __m128d ig = _mm_or_pd(_mm_and_pd(in, m2), _mm_andnot_pd(in, g2));
  return _mm_or_pd(_mm_and_pd(neg, c2), _mm_andnot_pd(neg, ig));
}
#endif

/* tr_dinf_cell_by's second half: the cell's angle and slope from its
 * facets' estimates est[1..8] (tr_dinf_estimate's values), their largest
 * emax and whether any was NaN, with the legs dxx[1] = dx, dxx[2] = dy and
 * the diagonal dd. */
static inline int tr_dinf_cell_est(const float *z, int64_t stride, const double dxx[3], double dd, const double est[9],
                                   double emax, int nan, float *ang, float *slp) {
  /* every estimate -1: no facet slopes down (a flat), nothing to compute */
  if (!nan && emax < 0.) {
    *slp = 0.0f;
    return 0;
  }
  /* the facets to compute exactly, bit k - 1 for facet k */
  unsigned todo = 0xffu;
  if (!nan && emax > 1e-280 && emax < 1e280) {
    const double thr = emax * (1. - 1e-12);
    todo = 0;
    for (int k = 1; k <= 8; k++) todo |= (unsigned)(est[k] >= thr) << (k - 1);
  }
  double smax = 0., s1max = 0., s2max = 0.;
  int kd = 0, side_max = 0;
  while (todo) {
#if defined(__GNUC__)
    const int k = __builtin_ctz(todo) + 1;
#else
    int k = 1;
    while (!((todo >> (k - 1)) & 1u)) k++;
#endif
    todo &= todo - 1;
    double s, s1, s2;
    const int side = tr_dinf_facet(z, stride, k, dxx, dd, &s, &s1, &s2);
    if (s > smax) {
      smax = s;
      kd = k;
      side_max = side;
      s1max = s1;
      s2max = s2;
    }
  }
  *slp = (float)smax;
  if (kd && ang) *ang = tr_dinf_facet_angle(kd, side_max, s1max, s2max, dxx[tr_dinf_leg1[kd]], dxx[tr_dinf_leg2[kd]]);
  return kd != 0;
}

/* A cell's angle and slope from the elevations of its window (z: the cell,
 * rows `stride` apart, all eight neighbours valid): 1 with *ang and *slp, or
 * 0 when no facet slopes strictly down (a flat: *slp = 0); ang may be NULL
 * when only the slope is wanted (no arctangent then). The values of
 * tr_dinf_vslope_side over the eight facets, the steepest first in K order.
 *
 * Every facet is first estimated without a division, a square root or an
 * atan2 (tr_dinf_estimate; two at a time with SSE2 unless `portable`). The
 * slope it squares is the steepest descent over the facet's arc, which is
 * the exact slope wherever either is > 0 (on the arc's edges the formulas
 * meet); it has the exact slope's sign, and where positive it is within a
 * few ulps of it. Only the facets whose estimate is within 1e-12 of the
 * steepest are then computed exactly (tr_dinf_facet), in K order, so the
 * first steepest of all eight is among them. A window whose estimates are
 * all -1 has no facet down (-1 marks exactly the facets whose slope is not
 * > 0). One whose steepest estimate is not between 1e-280 and 1e280
 * (squares that could over- or underflow) or is NaN computes all eight
 * exactly. */
static inline int tr_dinf_cell_by(const float *z, int64_t stride, double dx, double dy, float *ang, float *slp,
                                  int portable) {
  const double dxx[3] = {0, dx, dy}, dd = sqrt(dx * dx + dy * dy);
  const double rx = 1. / dx, ry = 1. / dy, rdd = 1. / dd;
  double est[9] = {0};
  int nan = 0;
  double emax = -1.; /* the estimates are -1 or >= 0: all -1 is a flat */
#ifdef __SSE2__
  if (!portable) {
    /* facets 1, 5 (and 2, 6) have dx as their first leg; 3, 7 (4, 8) dy */
    const __m128d e0 = _mm_set1_pd((double)z[0]), vr = _mm_set1_pd(rdd);
    const __m128d da = _mm_set_pd(dy, dx), db = _mm_set_pd(dx, dy), ra = _mm_set_pd(ry, rx), rb = _mm_set_pd(rx, ry);
    __m128d vmax = _mm_set1_pd(-1.), vnan = _mm_setzero_pd();
    for (int k = 1; k <= 7; k += 2) {
      const int a = (k - 1) / 2 % 2 == 0;
      const __m128d e = tr_dinf_estimate2(z, stride, k, e0, a ? da : db, a ? db : da, a ? ra : rb, a ? rb : ra, vr);
      _mm_storeu_pd(&est[k], e);
      vnan = _mm_or_pd(vnan, _mm_cmpunord_pd(e, e));
      vmax = _mm_max_pd(e, vmax);
    }
    double m[2];
    _mm_storeu_pd(m, vmax);
    emax = m[1] > m[0] ? m[1] : m[0];
    nan = _mm_movemask_pd(vnan) != 0;
  } else
#endif
  {
    const double e0 = (double)z[0], rxx[3] = {0, rx, ry};
    for (int k = 1; k <= 8; k++) {
      const double e = tr_dinf_estimate(e0, (double)z[tr_dinf_e1_row[k] * stride + tr_dinf_e1_col[k]],
                                        (double)z[tr_dinf_e2_row[k] * stride + tr_dinf_e2_col[k]],
                                        dxx[tr_dinf_leg1[k]], dxx[tr_dinf_leg2[k]], rxx[tr_dinf_leg1[k]],
                                        rxx[tr_dinf_leg2[k]], rdd);
      est[k] = e;
      nan |= e != e;
      emax = e > emax ? e : emax;
    }
  }
  return tr_dinf_cell_est(z, stride, dxx, dd, est, emax, nan, ang, slp);
}

/* tr_dinf_cell_by with SSE2 where the compiler has it. */
static inline int tr_dinf_cell(const float *z, int64_t stride, double dx, double dy, float *ang, float *slp) {
  return tr_dinf_cell_by(z, stride, dx, dy, ang, slp, 0);
}

/* The reference angles of the directions of a row with cell size dx x dy
 * (aref[k], k = 0..9, direction 0 and 9 the neighbours of 1 and 8), which
 * tr_dinf_prop_at reads: computed once per row, they spare an atan2 per
 * share. */
static inline void tr_dinf_aref(double dx, double dy, double aref[10]) {
  const double r0 = -atan2(dy, dx), r2 = -r0;
  const double v[10] = {r0,           0.,
                        r2,           (double)(0.5 * TR_DINF_PI),
                        TR_DINF_PI - r2, (double)TR_DINF_PI,
                        TR_DINF_PI + r2, (double)(1.5 * TR_DINF_PI),
                        2. * TR_DINF_PI - r2, (double)(2. * TR_DINF_PI)};
  for (int k = 0; k < 10; k++) aref[k] = v[k];
}

/* The share of flow at angle a that goes to neighbour k (1..8; 0 stands for
 * 8) of a cell whose row has the reference angles aref, or -1 when none. */
static inline double tr_dinf_prop_at(float a, int k, const double aref[10]) {
  double p = 0.;
  if (k <= 0) k += 8;
  if (k == 1 && a > TR_DINF_PI) a = (float)(a - 2.0 * TR_DINF_PI);
  if (a > aref[k - 1] && a < aref[k + 1]) {
    if (a > aref[k]) p = (aref[k + 1] - a) / (aref[k + 1] - aref[k]);
    else p = (a - aref[k - 1]) / (aref[k] - aref[k - 1]);
  }
  return p < 1e-5 ? -1. : p;
}

/* The cell size of global row grow of a grid of `rows` rows as TauDEM
 * measures it for its D-infinity tools (tiffIO's dxc, dyc): the
 * geotransform's for a projected grid; for a geographic one, metres on the
 * WGS84 ellipsoid at the row's latitude taken as TauDEM takes it (one and a
 * half rows below the row's top edge, in Float32), so that angles, slopes
 * and areas on geographic grids are TauDEM's. (D8's --slope measures the
 * row at its centre, kernels/gradient.h.) */
static inline void tr_dinf_row_dxdy(const tr_d8_geom *g, int64_t rows, int64_t grow, double *dx, double *dy) {
  const double dlon = fabs(g->gt[1]), dlat = fabs(g->gt[5]);
  if (!g->geographic) {
    *dx = dlon;
    *dy = dlat;
    return;
  }
  const double pi = 3.14159265359, a = 6378137.000, b = 6356752.314, boa = b / a;
  const double yll = g->gt[3] - (double)rows * dlat - dlat / 2.;
  const float rowlat = (float)(yll + (double)(rows - grow - 1) * dlat);
  const double la = dlat * pi / 180., lo = dlon * pi / 180., lat = (double)rowlat * pi / 180.;
  const double beta = atan(boa * tan(lat));
  const double dbeta = la * boa * (cos(beta) / cos(lat)) * (cos(beta) / cos(lat));
  const double ds2 = (pow(a * sin(beta), 2) + pow(b * cos(beta), 2)) * pow(dbeta, 2);
  *dx = a * cos(beta) * fabs(lo);
  *dy = sqrt(ds2);
}


#endif
