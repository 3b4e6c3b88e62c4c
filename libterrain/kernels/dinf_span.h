/*
 * dinf_span.h - the D-infinity slope (dinf.h's tr_dinf_cell) of a run of
 * cells of one row, four cells at a time (internal to libterrain: the
 * "dinf_slp" kernel, kernels/dinf_slope.c, and its test).
 *
 * tr_dinf_cell estimates its eight facets one cell at a time and then
 * computes the steepest exactly. For the slope alone the exact step is not
 * needed where the estimate settles the Float32: the estimate's square root
 * is within a few ulps of the exact slope (dinf.h, tr_dinf_cell_by), so
 * where both ends of an interval 1e-13 wide around it (hundreds of ulps)
 * round to one float, that float is the slope. Here the estimates are made
 * for four neighbouring cells at once, each from four consecutive floats of
 * the rows (GCC vectors: AVX2 where the CPU has it, SSE2 pairs elsewhere),
 * with tr_dinf_estimate's operations in its order (no FMA), so that they
 * are its values to the bit; a flat (every estimate -1) gives 0 at once.
 * A cell the interval does not settle, a NaN estimate, or one outside
 * 1e-280 .. 1e280 goes through tr_dinf_cell.
 */
#ifndef TR_DINF_SPAN_H
#define TR_DINF_SPAN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dinf.h"

typedef double tr_dinf_v4d __attribute__((vector_size(32)));
typedef int64_t tr_dinf_v4l __attribute__((vector_size(32)));
typedef float tr_dinf_v4f __attribute__((vector_size(16)));

/* Four consecutive floats of p into the doubles v (macros, not
 * functions: a function returning a 32-byte vector changes the ABI between
 * the AVX2 clone and the other). */
#define TR_DINF_LD4(v, p)                                                                                              \
  do {                                                                                                                 \
    tr_dinf_v4f f_;                                                                                                    \
    memcpy(&f_, (p), sizeof f_);                                                                                       \
    (v) = __builtin_convertvector(f_, tr_dinf_v4d);                                                                    \
  } while (0)

/* m ? a : b, lane by lane (m: a comparison's all-ones or zero lanes). */
#define TR_DINF_SEL(m, a, b) ((tr_dinf_v4d)(((m) & (tr_dinf_v4l)(a)) | (~(m) & (tr_dinf_v4l)(b))))

/* The slope of one cell from its largest estimate em (the cell's facets
 * had no NaN estimate): 0 for a flat, the float of sqrt(em) where the
 * interval settles it; -1 (not a slope) where tr_dinf_cell must decide. */
static inline float tr_dinf_slp_of_estimate(double em) {
  if (em < 0.) return 0.0f;
  if (!(em > 1e-280 && em < 1e280)) return -1.0f;
  const double s = sqrt(em);
  const float lo = (float)(s * (1. - 1e-13)), hi = (float)(s * (1. + 1e-13));
  return lo == hi ? lo : -1.0f;
}

/* The estimates of facets 1..8 (est[k][i], tr_dinf_estimate's values) of
 * the four cells p[0..3] of a row (rows `stride` floats apart), their
 * largest (emax[i], -1 when every one is -1) and whether any was NaN
 * (nan[i] != 0). */
static inline void tr_dinf_est4(const float *p, int64_t stride, const double dxx[3], const double rxx[3], double rdd,
                                double est[9][4], double emax[4], int64_t nan[4]) {
  const tr_dinf_v4d m1 = {-1., -1., -1., -1.};
  tr_dinf_v4d e0, e1, e2, vmax = m1;
  tr_dinf_v4l vnan = {0, 0, 0, 0};
  TR_DINF_LD4(e0, p);
  for (int k = 1; k <= 8; k++) {
    TR_DINF_LD4(e1, p + tr_dinf_e1_row[k] * stride + tr_dinf_e1_col[k]);
    TR_DINF_LD4(e2, p + tr_dinf_e2_row[k] * stride + tr_dinf_e2_col[k]);
    const double d1 = dxx[tr_dinf_leg1[k]], d2 = dxx[tr_dinf_leg2[k]];
    const tr_dinf_v4d s1 = (e0 - e1) * rxx[tr_dinf_leg1[k]], s2 = (e1 - e2) * rxx[tr_dinf_leg2[k]],
                      g = (e0 - e2) * rdd;
    const tr_dinf_v4l s1p = s1 > 0., in = s1p & (s2 * d1 <= s1 * d2);
    const tr_dinf_v4d s11 = s1 * s1;
    const tr_dinf_v4d c2 = TR_DINF_SEL(s1p, s11, m1), g2 = TR_DINF_SEL(g > 0., g * g, m1), m2 = s11 + s2 * s2;
    const tr_dinf_v4d e = TR_DINF_SEL(s2 < 0., c2, TR_DINF_SEL(in, m2, g2));
    memcpy(est[k], &e, sizeof e);
    vnan |= e != e;
    vmax = TR_DINF_SEL(e > vmax, e, vmax);
  }
  memcpy(emax, &vmax, sizeof vmax);
  memcpy(nan, &vnan, sizeof vnan);
}

/* tr_dinf_cell of cells z[0 .. n - 1] of a row (rows `stride` floats
 * apart, all nine cells of every window valid) of cell size dx x dy: slp[i]
 * the slope; with ang, ang[i] the angle where a facet slopes down and
 * down[i] whether one does. Without ang (the slope alone) a cell whose
 * float the estimate settles takes it without the exact step. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default"), unused))
#endif
static void
tr_dinf_span(const float *z, int64_t stride, int64_t n, double dx, double dy, float *ang, float *slp, uint8_t *down) {
  const double dd = sqrt(dx * dx + dy * dy);
  const double dxx[3] = {0, dx, dy}, rxx[3] = {0, 1. / dx, 1. / dy}, rdd = 1. / dd;
  int64_t c = 0;
  for (; c + 4 <= n; c += 4) {
    double est[9][4], emax[4];
    int64_t nan[4];
    tr_dinf_est4(z + c, stride, dxx, rxx, rdd, est, emax, nan);
    for (int i = 0; i < 4; i++) {
      if (!ang) {
        float s = nan[i] ? -1.0f : tr_dinf_slp_of_estimate(emax[i]);
        if (s < 0.0f) tr_dinf_cell(z + c + i, stride, dx, dy, NULL, &s);
        slp[c + i] = s;
        continue;
      }
      double e[9];
      e[0] = 0.;
      for (int k = 1; k <= 8; k++) e[k] = est[k][i];
      down[c + i] =
          (uint8_t)tr_dinf_cell_est(z + c + i, stride, dxx, dd, e, emax[i], nan[i] != 0, &ang[c + i], &slp[c + i]);
    }
  }
  for (; c < n; c++) {
    const int d = tr_dinf_cell(z + c, stride, dx, dy, ang ? &ang[c] : NULL, &slp[c]);
    if (ang) down[c] = (uint8_t)d;
  }
}

#endif
