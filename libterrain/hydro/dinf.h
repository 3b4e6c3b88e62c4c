/*
 * dinf.h - the D-infinity rule (Tarboton 1997) as TauDEM 5.4 computes it
 * (internal to libterrain): the cell formulas shared by the "dinf" graph
 * program (flowdir_program.c: angle and slope) and the "dinf_up" program
 * (dinf_up_program.c: specific catchment area).
 *
 * Facets. A cell's eight triangular facets are numbered K = 1..8 counter-
 * clockwise from east; facet K is spanned by a cardinal neighbour E1 (the
 * facet's first edge) and a diagonal neighbour E2, at distances D1 and D2
 * (dx or dy of the cell's row) along the two legs, DD = sqrt(dx^2 + dy^2).
 * Over a facet the plane through the three elevations gives a slope and an
 * angle inside the facet (tr_dinf_vslope, TauDEM's VSLOPE); an angle outside
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

/* The slope *s and angle *a (from E1 towards E2) of the facet E0 E1 E2. */
static inline void tr_dinf_vslope(double e0, double e1, double e2, double d1, double d2, double dd, double *s,
                                  double *a) {
  const double s1 = (e0 - e1) / d1, s2 = (e1 - e2) / d2;
  *a = (s2 == 0 && s1 == 0) ? 0 : atan2(s2, s1);
  const double ad = atan2(d2, d1);
  if (*a < 0.) {
    *a = 0.;
    *s = s1;
  } else if (*a > ad) {
    *a = ad;
    *s = (e0 - e2) / dd;
  } else
    *s = sqrt(s1 * s1 + s2 * s2);
}

/* The angle written for facet k at angle a inside it. */
static inline float tr_dinf_angle(int k, double a) {
  return (float)(tr_dinf_angc[k] * (TR_DINF_PI / 2) + tr_dinf_angf[k] * a);
}

/* Where the angle atan2(s2, s1) of a facet with legs d1, d2 falls, decided
 * without the atan2 wherever that is certain: 0 below the facet (a < 0), 1
 * inside, 2 past its diagonal (a > atan2(d2, d1)), -1 too close to call
 * (the caller then computes the angle as tr_dinf_vslope does). Inside the
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

/* A cell's angle and slope from the elevations of its window (z: the cell,
 * rows `stride` apart, all eight neighbours valid): 1 with *ang and *slp, or
 * 0 when no facet slopes strictly down (a flat: *slp = 0). The values of
 * tr_dinf_vslope over the eight facets, the steepest first in K order, with
 * one atan2 for the winning facet instead of two for each. */
static inline int tr_dinf_cell(const float *z, int64_t stride, double dx, double dy, float *ang, float *slp) {
  const double dxx[3] = {0, dx, dy}, dd = sqrt(dx * dx + dy * dy);
  const double e0 = (double)z[0];
  double smax = 0., s1max = 0., s2max = 0.;
  int kd = 0, side_max = 0;
  for (int k = 1; k <= 8; k++) {
    const double e1 = (double)z[tr_dinf_e1_row[k] * stride + tr_dinf_e1_col[k]],
                 e2 = (double)z[tr_dinf_e2_row[k] * stride + tr_dinf_e2_col[k]];
    const double d1 = dxx[tr_dinf_leg1[k]], d2 = dxx[tr_dinf_leg2[k]];
    const double s1 = (e0 - e1) / d1, s2 = (e1 - e2) / d2;
    int side = tr_dinf_side(s1, s2, d1, d2);
    if (side < 0) {
      const double a = (s2 == 0 && s1 == 0) ? 0 : atan2(s2, s1);
      side = a < 0. ? 0 : a > atan2(d2, d1) ? 2 : 1;
    }
    const double s = side == 0 ? s1 : side == 2 ? (e0 - e2) / dd : sqrt(s1 * s1 + s2 * s2);
    if (s > smax) {
      smax = s;
      kd = k;
      side_max = side;
      s1max = s1;
      s2max = s2;
    }
  }
  *slp = (float)smax;
  if (kd) {
    const double a = side_max == 0   ? 0.
                     : side_max == 2 ? atan2(dxx[tr_dinf_leg2[kd]], dxx[tr_dinf_leg1[kd]])
                     : (s2max == 0 && s1max == 0) ? 0
                                                   : atan2(s2max, s1max);
    *ang = tr_dinf_angle(kd, a);
  }
  return kd != 0;
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

#endif
