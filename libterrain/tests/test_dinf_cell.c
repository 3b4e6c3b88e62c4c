/*
 * test_dinf_cell.c - the D-infinity cell rule (hydro/dinf.h's tr_dinf_cell,
 * which decides most facets without an atan2) gives bit for bit what the
 * plain rule gives: two atan2 for every facet, the angle clamped to the
 * facet and the steepest facet kept, first in K order on ties. Written here
 * again from Tarboton (1997) as TauDEM states it, and run on random windows,
 * on windows built to put a facet's angle exactly on (or one step beside)
 * its diagonal or its cardinal edge, on level and nearly level windows, and
 * on cells from 1000:1 to 1:1000 in shape. Both of tr_dinf_cell_by's
 * estimates are checked (SSE2 where built, and the portable one), on
 * windows of whole-metre and decimetre elevations too (a facet tied with
 * another on its slope, so the first in K order must win), and the angles
 * tr_dinf_angle_of takes from its own arctangent are glibc's atan2's.
 * Every window is also put into a row of four cells for the spans
 * (dinf_span.h), which must give the same bits for all four.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dinf.h"
#include "dinf_span.h"
#include "tr_test.h"

/* Facet K: its cardinal and diagonal neighbours as (row, col) offsets and
 * which legs (dx or dy) lead to them; written out here, not taken from
 * dinf.h's tables. */
static const int e1r[9] = {0, 0, -1, -1, 0, 0, 1, 1, 0}, e1c[9] = {0, 1, 0, 0, -1, -1, 0, 0, 1};
static const int e2r[9] = {0, -1, -1, -1, -1, 1, 1, 1, 1}, e2c[9] = {0, 1, 1, -1, -1, -1, -1, 1, 1};
static const int leg1_is_dx[9] = {0, 1, 0, 0, 1, 1, 0, 0, 1};

/* The plain rule: 1 and the angle and slope, or 0 for no downslope facet. */
static int plain_cell(const float *z, int64_t stride, double dx, double dy, float *ang, float *slp) {
  const double dd = sqrt(dx * dx + dy * dy);
  double smax = 0., amax = 0.;
  int kd = 0;
  for (int k = 1; k <= 8; k++) {
    const double e0 = z[0], e1 = z[e1r[k] * stride + e1c[k]], e2 = z[e2r[k] * stride + e2c[k]];
    const double d1 = leg1_is_dx[k] ? dx : dy, d2 = leg1_is_dx[k] ? dy : dx;
    const double s1 = (e0 - e1) / d1, s2 = (e1 - e2) / d2;
    double a = (s2 == 0 && s1 == 0) ? 0 : atan2(s2, s1), s;
    const double ad = atan2(d2, d1);
    if (a < 0.) {
      a = 0.;
      s = s1;
    } else if (a > ad) {
      a = ad;
      s = (e0 - e2) / dd;
    } else {
      s = sqrt(s1 * s1 + s2 * s2);
    }
    if (s > smax) smax = s, amax = a, kd = k;
  }
  *slp = (float)smax;
  if (kd) {
    const float base[9] = {0, 0.f, 1.f, 1.f, 2.f, 2.f, 3.f, 3.f, 4.f}, sign[9] = {0, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f};
    *ang = (float)(base[kd] * (3.14159265359 / 2) + sign[kd] * amax);
  }
  return kd != 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static double uni(void) { /* [0, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

/* The spans (dinf_span.h: four cells at a time) on window z: z is put as
 * the window of one of four cells of a 3 x 6 strip (which one turns with
 * `turn`), the strip's other cells drawn from z's values, and all four
 * cells' slopes (tr_dinf_span without ang) and results, angles and slopes
 * (with ang) must be the plain rule's. */
static int same_in_spans(const float z[9], double dx, double dy, long turn) {
  float strip[3 * 6];
  const int at = 1 + (int)(turn % 4);
  for (int i = 0; i < 18; i++) strip[i] = z[(int)(uni() * 9)];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) strip[r * 6 + at - 1 + c] = z[r * 3 + c];
  float slp[4], ang[4] = {0}, slp2[4];
  uint8_t down[4];
  tr_dinf_span(strip + 6 + 1, 6, 4, dx, dy, NULL, slp, NULL);
  tr_dinf_span(strip + 6 + 1, 6, 4, dx, dy, ang, slp2, down);
  for (int i = 0; i < 4; i++) {
    float w[9], a = -1.f, sl = -1.f;
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++) w[r * 3 + c] = strip[r * 6 + i + c];
    const int k = plain_cell(w + 4, 3, dx, dy, &a, &sl);
    if (memcmp(&slp[i], &sl, sizeof sl) != 0 || memcmp(&slp2[i], &sl, sizeof sl) != 0 || down[i] != k ||
        (k && memcmp(&ang[i], &a, sizeof a) != 0)) {
      fprintf(stderr, "span differs: dx %.17g dy %.17g z", dx, dy);
      for (int j = 0; j < 9; j++) fprintf(stderr, " %.9g", w[j]);
      fprintf(stderr, ": slope span %.9g, cell span %d %.9g %.9g, plain %d %.9g %.9g\n", slp[i], down[i], ang[i],
              slp2[i], k, a, sl);
      return 0;
    }
  }
  return 1;
}

/* Compares the two rules on window z (3 x 3, the cell in the middle). */
static int same(const float z[9], double dx, double dy, long *ncells, long *nflat) {
  float a2 = -1.f, s2 = -1.f;
  const int k2 = plain_cell(z + 4, 3, dx, dy, &a2, &s2);
  (*ncells)++;
  *nflat += !k2;
  for (int portable = 0; portable <= 1; portable++) {
    float a1 = -1.f, s1 = -1.f;
    const int k1 = tr_dinf_cell_by(z + 4, 3, dx, dy, &a1, &s1, portable);
    if (k1 != k2 || memcmp(&s1, &s2, sizeof s1) != 0 || (k2 && memcmp(&a1, &a2, sizeof a1) != 0)) {
      fprintf(stderr, "differ (%s estimate): dx %.17g dy %.17g z", portable ? "portable" : "default", dx, dy);
      for (int i = 0; i < 9; i++) fprintf(stderr, " %.9g", z[i]);
      fprintf(stderr, ": fast %d %.9g %.9g, plain %d %.9g %.9g\n", k1, a1, s1, k2, a2, s2);
      return 0;
    }
  }
  return same_in_spans(z, dx, dy, *ncells);
}

static const double shapes[][2] = {{30, 30}, {1, 1}, {0.5, 2}, {2, 0.5}, {8.3e-5, 1.1e-4}, {1000, 1}, {1, 1000},
                                   {999, 1}, {1, 1001}, {3.7, 3.7000001}};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

static int test_random_windows(void) {
  long n = 0, flat = 0;
  for (int i = 0; i < 400000; i++) {
    float z[9];
    const double scale = i % 3 == 0 ? 1e-3 : i % 3 == 1 ? 10. : 3000.;
    for (int j = 0; j < 9; j++) z[j] = (float)(500. + scale * (uni() - 0.5));
    if (i % 7 == 0) z[(int)(uni() * 9)] = z[4]; /* a level leg */
    const double *sh = shapes[i % NSHAPES];
    ASSERT(same(z, sh[0], sh[1], &n, &flat));
  }
  ASSERT(flat > 0 && flat < n); /* pits and downslope cells both met */
  return 0;
}

/* Windows where facet K's angle lies on its diagonal: e2 chosen so that
 * s2 / s1 = d2 / d1 exactly in reals, then moved by a few float steps either
 * way, and on its cardinal edge (e1 = e2, and one step either side). */
static int test_facet_boundaries(void) {
  long n = 0, flat = 0;
  for (int si = 0; si < NSHAPES; si++) {
    const double dx = shapes[si][0], dy = shapes[si][1];
    for (int k = 1; k <= 8; k++)
      for (int trial = 0; trial < 400; trial++) {
        float z[9];
        for (int j = 0; j < 9; j++) z[j] = 1000.f; /* level: only facet k slopes */
        const double d1 = leg1_is_dx[k] ? dx : dy, d2 = leg1_is_dx[k] ? dy : dx;
        const float e0 = (float)(1000. + 50. * uni());
        const float e1 = (float)(e0 - (0.01 + 20. * uni()) * d1 / (d1 > 10 ? d1 : 10));
        const double s1 = ((double)e0 - e1) / d1;
        float e2 = (float)((double)e1 - s1 * d2 * d2 / d1); /* s2 d1 == d2 s1 */
        const int step = trial % 9 - 4;
        for (int m = 0; m < (step < 0 ? -step : step); m++) e2 = nextafterf(e2, step < 0 ? -FLT_MAX : FLT_MAX);
        z[4] = e0;
        z[4 + e1r[k] * 3 + e1c[k]] = e1;
        z[4 + e2r[k] * 3 + e2c[k]] = e2;
        ASSERT(same(z, dx, dy, &n, &flat));
        float e2b = e1; /* the cardinal edge: s2 = 0 */
        for (int m = 0; m < (step < 0 ? -step : step); m++) e2b = nextafterf(e2b, step < 0 ? -FLT_MAX : FLT_MAX);
        z[4 + e2r[k] * 3 + e2c[k]] = e2b;
        ASSERT(same(z, dx, dy, &n, &flat));
        z[4 + e1r[k] * 3 + e1c[k]] = nextafterf(e0, trial % 2 ? FLT_MAX : -FLT_MAX); /* s1 a step from 0 */
        ASSERT(same(z, dx, dy, &n, &flat));
      }
  }
  printf("%ld windows on facet boundaries\n", n);
  return 0;
}

/* Level, rising and extreme windows: no facet down, every facet down by the
 * same drop, the largest float differences. */
static int test_level_and_extreme(void) {
  long n = 0, flat = 0;
  const float vals[] = {0.f, -0.f, 1.f, -400.f, 8848.f, 1e-30f, 3e38f, -3e38f};
  for (int si = 0; si < NSHAPES; si++)
    for (int a = 0; a < 8; a++)
      for (int b = 0; b < 8; b++) {
        float z[9];
        for (int j = 0; j < 9; j++) z[j] = vals[(a + j * b) % 8];
        z[4] = vals[a];
        ASSERT(same(z, shapes[si][0], shapes[si][1], &n, &flat));
        for (int j = 0; j < 9; j++) z[j] = vals[a];
        ASSERT(same(z, shapes[si][0], shapes[si][1], &n, &flat));
      }
  return 0;
}

/* Whole-metre and decimetre elevations, as many DEMs store them: facets
 * tie on their slopes (two facets sharing a cardinal edge both clamped to
 * it, mirrored windows), so the estimate leaves several facets to compute
 * and the first steepest in K order must win. */
static int test_quantized_ties(void) {
  long n = 0, flat = 0, tied = 0;
  for (int i = 0; i < 300000; i++) {
    float z[9];
    const float q = i % 2 ? 1.f : 0.1f;
    const int span = 1 + i % 5;
    for (int j = 0; j < 9; j++) z[j] = (float)(300. + q * (double)(int)(uni() * (2 * span + 1) - span));
    if (i % 3 == 0) /* mirrored about the row: facets 1 and 8, 4 and 5 ... tie */
      for (int c = 0; c < 3; c++) z[6 + c] = z[c];
    const double *sh = shapes[i % 4];
    float a = 0.f, sl = 0.f;
    int ties = 0;
    if (tr_dinf_cell(z + 4, 3, sh[0], sh[1], &a, &sl)) {
      /* count the windows where two facets share the steepest slope */
      const double dxx[3] = {0, sh[0], sh[1]}, dd = sqrt(sh[0] * sh[0] + sh[1] * sh[1]);
      double best = 0.;
      for (int k = 1; k <= 8; k++) {
        double s, s1, s2;
        tr_dinf_facet(z + 4, 3, k, dxx, dd, &s, &s1, &s2);
        if (s > best) best = s, ties = 0;
        else if (s == best) ties++;
      }
    }
    tied += ties > 0;
    ASSERT(same(z, sh[0], sh[1], &n, &flat));
  }
  printf("%ld quantized windows, %ld with tied steepest facets\n", n, tied);
  ASSERT(tied > 1000); /* the case this test is for was met */
  return 0;
}

/* tr_dinf_angle_of against tr_dinf_angle of glibc's atan2 over slopes from
 * 1e-6 to 1e6 in ratio, for every facet, and its own arctangent within the
 * 2e-15 it claims. */
static int test_fast_angle(void) {
  double worst = 0.;
  for (int i = 0; i < 2000000; i++) {
    const double y = exp((uni() - 0.5) * 28.), x = exp((uni() - 0.5) * 28.);
    const int k = 1 + i % 8;
    const float f = tr_dinf_angle_of(k, y, x), g = tr_dinf_angle(k, atan2(y, x));
    ASSERT(memcmp(&f, &g, sizeof f) == 0);
    const double e = fabs(tr_dinf_atan_q1(y, x) - atan2(y, x));
    if (e > worst) worst = e;
  }
  printf("arctangent: largest difference from atan2 %.3g\n", worst);
  ASSERT(worst <= 2e-15);
  return 0;
}

TR_MAIN(TR_TEST(test_random_windows), TR_TEST(test_facet_boundaries), TR_TEST(test_level_and_extreme),
        TR_TEST(test_quantized_ties), TR_TEST(test_fast_angle))
