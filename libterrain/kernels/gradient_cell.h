/*
 * gradient_cell.h - the per-cell arithmetic of slope and aspect, compiled
 * for the CPU (slope.c, aspect.c) and for the GPU (cuda/gradient.cu) from
 * this one text, so both devices compute each cell with the same
 * operations in the same order (CUDA is built without FMA contraction, and
 * its float division and square root are correctly rounded, as the CPU's),
 * internal to libterrain.
 */
#ifndef TR_GRADIENT_CELL_H
#define TR_GRADIENT_CELL_H

#include <math.h>

#include "gradient.h"

/* atan(x) for x >= 0, after Cephes' atanf: reduce to |t| <= tan(pi/8), then
 * an odd polynomial; selects instead of branches so loops vectorise. */
TR_HD static inline float atan_pos(float x) {
  const int big = x > 2.414213562373095f;
  const int mid = x > 0.414213562373095f;
  const float base = big ? 1.5707963267948966f : (mid ? 0.7853981633974483f : 0.0f);
  const float t = big ? -1.0f / x : (mid ? (x - 1.0f) / (x + 1.0f) : x);
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

TR_HD static inline float aspect_cell(const tr_gradient_params *p, const float *w) {
  double dx, dy;
  if (p->alg == TR_GRAD_HORN) {
    dx = (double)((w[2] + w[5] + w[5] + w[8]) - (w[0] + w[3] + w[3] + w[6]));
    dy = (double)((w[6] + w[7] + w[7] + w[8]) - (w[0] + w[1] + w[1] + w[2]));
  } else {
    dx = (double)(w[5] - w[3]);
    dy = (double)(w[7] - w[1]);
  }
  if (p->gt[5] > 0) dy = -dy;
  if (p->gt[1] < 0) dx = -dx;
  if (dx == 0 && dy == 0) return p->zero_for_flat ? 0.0f : p->dst_nodata;
  float a = (float)(atan2(dy, -dx) * (180.0 / M_PI));
  if (!p->trigonometric) {
    a = a > 90.0f ? 450.0f - a : 90.0f - a;
  } else if (a < 0) {
    a += 360.0f;
  }
  if (a == 360.0f) a = 0.0f;
  return a;
}

#endif
