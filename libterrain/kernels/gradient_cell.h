/*
 * gradient_cell.h - the per-cell arithmetic of slope and aspect, compiled
 * for the CPU (slope.c, aspect.c) and for the GPU (cuda/gradient.cu) from
 * this one text, so both devices compute each cell with the same
 * operations in the same order (CUDA is built without FMA contraction, and
 * its float division and square root are correctly rounded, as the CPU's),
 * internal to libterrain. Aspect's atan2 (aspect_atan2) uses only +, -, *,
 * / and copysign, so it gives the same bits on both.
 */
#ifndef TR_GRADIENT_CELL_H
#define TR_GRADIENT_CELL_H

#include <math.h>

#include "gradient.h"

/* atan(x) for x >= 0, after Cephes' atanf: reduce to |t| <= tan(pi/8), then
 * an odd polynomial; selects instead of branches so loops vectorise. */
TR_HD static inline float atan_pos(float x) {
  /* Both quotients are computed and one selected, in two steps: GCC does
   * not turn a conditional division, or a nested select, into vector
   * selects, which kept the slope loop scalar. Unselected quotients may be
   * inf or NaN; harmless. */
  const float tb = -1.0f / x, tm = (x - 1.0f) / (x + 1.0f);
  float base = x > 0.414213562373095f ? 0.7853981633974483f : 0.0f;
  base = x > 2.414213562373095f ? 1.5707963267948966f : base;
  float t = x > 0.414213562373095f ? tm : x;
  t = x > 2.414213562373095f ? tb : t;
  const float z = t * t;
  const float p =
      (((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) * z * t + t;
  return base + p;
}

typedef struct {
  float inv_ew, inv_ns, k; /* k = 1 / (8 scale) or 1 / (2 scale) */
  int horn, percent;
} slope_row;

TR_HD static inline float slope_cell(const slope_row *s, float w0, float w1, float w2, float w3, float w5,
                               float w6, float w7, float w8) {
  float dx, dy;
  if (s->horn) {
    dx = ((w0 + w3 + w3 + w6) - (w2 + w5 + w5 + w8)) * s->inv_ew;
    dy = ((w6 + w7 + w7 + w8) - (w0 + w1 + w1 + w2)) * s->inv_ns;
  } else {
    dx = (w3 - w5) * s->inv_ew;
    dy = (w7 - w1) * s->inv_ns;
  }
  const float g = sqrtf(dx * dx + dy * dy) * s->k;
  return s->percent ? 100.0f * g : atan_pos(g) * 57.29577951308232f;
}

TR_HD static inline void slope_row_init(const tr_gradient_params *p, int64_t grow, slope_row *s) {
  double ie, in;
  tr_gradient_inv_res(p, grow, &ie, &in);
  s->inv_ew = (float)ie;
  s->inv_ns = (float)in;
  s->horn = p->alg == TR_GRAD_HORN;
  s->k = (float)(1.0 / ((s->horn ? 8.0 : 2.0) * p->scale));
  s->percent = p->percent;
}

/* atan2(y, x) as above: reduce to t = min/max in [0, 1]; above tan(pi/12)
 * shift by pi/6 (atan t = pi/6 + atan((t sqrt3 - 1) / (sqrt3 + t))) so |u| <=
 * tan(pi/12) = 0.268; then 15 terms of atan's series in u (the next is below
 * 4e-18 relative); then back to the octant and the sign of y. */
TR_HD static inline double aspect_atan2(double y, double x) {
  const double ax = fabs(x), ay = fabs(y);
  const double mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
  const double t = mn / (mx > 0 ? mx : 1.0);
  const double sqrt3 = 1.7320508075688772935, tan_pi_12 = 0.26794919243112270647;
  const int shift = t > tan_pi_12;
  const double v = (t * sqrt3 - 1.0) / (sqrt3 + t); /* both computed: no branch */
  const double u = shift ? v : t;
  const double u2 = u * u;
  /* Estrin's scheme: the series' 15 coefficients (-1)^k / (2k + 1) in z = u^2
   * as pairs, then pairs of pairs; a chain of 5 steps instead of Horner's 15,
   * so consecutive cells overlap in the pipeline */
  const double z = u2, z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
  const double p01 = 1.0 - z * (1.0 / 3), p23 = 1.0 / 5 - z * (1.0 / 7), p45 = 1.0 / 9 - z * (1.0 / 11);
  const double p67 = 1.0 / 13 - z * (1.0 / 15), p89 = 1.0 / 17 - z * (1.0 / 19), pab = 1.0 / 21 - z * (1.0 / 23);
  const double pcd = 1.0 / 25 - z * (1.0 / 27), pe = 1.0 / 29;
  const double q0 = p01 + z2 * p23, q1 = p45 + z2 * p67, q2 = p89 + z2 * pab, q3 = pcd + z2 * pe;
  const double s = (q0 + z4 * q1) + z8 * (q2 + z4 * q3);
  double a = u * s + (shift ? M_PI / 6 : 0.0);
  a = ay > ax ? M_PI_2 - a : a;
  a = x < 0 ? M_PI - a : a;
  return copysign(a, y);
}

/* aspect_atan2 is NaN where min/max is inf/inf (both differences overflowed
 * to infinity), and may hide a NaN difference (inf - inf in a window of huge
 * elevations); the C library's atan2 then gives the IEEE answer. Every cell
 * goes through this same rule on every path, so the bits never depend on
 * which path (and so on the tiling) computed a cell. */
TR_HD static inline int aspect_needs_fix(double a, double y, double x) { return isnan(a) | isnan(x) | isnan(y); }

TR_HD static inline double aspect_fix(double a, double y, double x) { return aspect_needs_fix(a, y, x) ? atan2(y, x) : a; }

/* Degrees of the difference (dx, dy) -> the output value, with the flags
 * given: selects, not branches, so that a row loop with trig constant
 * vectorises (aspect.c). flat: the value of a cell without slope. */
TR_HD static inline float aspect_value_of(const int trig, float flat, double dx, double dy, double deg) {
  const float a = (float)deg;
  float b = trig ? (a < 0 ? a + 360.0f : a) : (a > 90.0f ? 450.0f - a : 90.0f - a);
  b = b == 360.0f ? 0.0f : b;
  return dx == 0 && dy == 0 ? flat : b;
}

/* The value of a cell without slope. */
TR_HD static inline float aspect_flat(const tr_gradient_params *p) { return p->zero_for_flat ? 0.0f : p->dst_nodata; }

/* aspect_value_of with the run's flags. */
TR_HD static inline float aspect_value(const tr_gradient_params *p, double dx, double dy, double deg) {
  return aspect_value_of(p->trigonometric, aspect_flat(p), dx, dy, deg);
}
/* The differences of a 3x3 window given as its three rows, at column c,
 * before the orientation's signs. */
TR_HD static inline void aspect_diff(int horn, const float *a, const float *b, const float *d, int64_t c, double *dx,
                               double *dy) {
  if (horn) {
    *dx = (double)((a[c + 1] + b[c + 1] + b[c + 1] + d[c + 1]) - (a[c - 1] + b[c - 1] + b[c - 1] + d[c - 1]));
    *dy = (double)((d[c - 1] + d[c] + d[c] + d[c + 1]) - (a[c - 1] + a[c] + a[c] + a[c + 1]));
  } else {
    *dx = (double)(b[c + 1] - b[c - 1]);
    *dy = (double)(d[c] - a[c]);
  }
}

TR_HD static inline float aspect_cell(const tr_gradient_params *p, const float *w) {
  double dx, dy;
  aspect_diff(p->alg == TR_GRAD_HORN, w, w + 3, w + 6, 1, &dx, &dy);
  if (p->gt[1] < 0) dx = -dx;
  if (p->gt[5] > 0) dy = -dy;
  return aspect_value(p, dx, dy, aspect_fix(aspect_atan2(dy, -dx), dy, -dx) * (180.0 / M_PI));
}


#endif
