/*
 * test_gradient_analytic.c - slope and aspect against closed-form answers:
 * a plane (exact for Horn and Zevenbergen-Thorne), a cone, a Gaussian hill,
 * a flat, and a geographic DEM whose true metric slope is known. These do
 * not involve gdaldem at all: they check the mathematics.
 */
#include <gdal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "raster_check.h"
#include "terrain.h"
#include "tr_test.h"

static const char *dir;
static char outdir[512];

static const char *in_path(const char *name) {
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

static const char *out_path(const char *name) {
  static char p[1024];
  snprintf(p, sizeof p, "%s/%s", outdir, name);
  return p;
}

static int run_slope(const char *in, tr_gradient_alg alg, int percent, int edges, double scale, rc_raster *r) {
  tr_slope_opts o;
  tr_slope_opts_init(&o);
  o.alg = alg;
  o.percent = percent;
  o.compute_edges = edges;
  o.scale = scale;
  tr_error e = {{0}};
  int st = tr_slope(&o, in_path(in), out_path("s.tif"), &e);
  if (st) fprintf(stderr, "tr_slope: %s\n", e.msg);
  return st ? st : rc_load(out_path("s.tif"), r);
}

static int run_aspect(const char *in, tr_gradient_alg alg, int trig, int zff, rc_raster *r) {
  tr_aspect_opts o;
  tr_aspect_opts_init(&o);
  o.alg = alg;
  o.trigonometric = trig;
  o.zero_for_flat = zff;
  tr_error e = {{0}};
  int st = tr_aspect(&o, in_path(in), out_path("a.tif"), &e);
  if (st) fprintf(stderr, "tr_aspect: %s\n", e.msg);
  return st ? st : rc_load(out_path("a.tif"), r);
}

#define V(r, y, x) ((r).v[(long)(y) * (r).cols + (x)])

/* plane: dz/dx = 0.3, dz/dy = -0.4 (north positive) -> |grad| = 0.5. */
static int test_plane_slope(void) {
  for (int alg = 0; alg < 2; alg++) {
    rc_raster r;
    ASSERT_EQ_INT(run_slope("plane.tif", alg, 0, 1, 0, &r), 0);
    ASSERT_EQ_INT(r.type, GDT_Float32);
    ASSERT(r.has_nodata && r.nodata == -9999);
    const double want = atan(0.5) * 180 / M_PI;
    for (int y = 0; y < r.rows; y++)
      for (int x = 0; x < r.cols; x++) {
        int corner = (y == 0 || y == r.rows - 1) && (x == 0 || x == r.cols - 1);
        if (!corner) ASSERT_NEAR(V(r, y, x), want, 2e-5);
      }
    rc_free(&r);
    ASSERT_EQ_INT(run_slope("plane.tif", alg, 1, 0, 0, &r), 0);
    ASSERT_NEAR(V(r, 10, 10), 50.0, 1e-4);
    ASSERT_EQ_INT(V(r, 0, 10), -9999); /* no -compute_edges: edges are nodata */
    rc_free(&r);
  }
  return 0;
}

static int test_plane_aspect(void) {
  /* Downhill is towards -x (west) and +y (north): azimuth 360 - atan(0.3/0.4). */
  const double az = 360.0 - atan2(0.3, 0.4) * 180 / M_PI;
  const double trig = fmod(90.0 - az + 360.0, 360.0);
  for (int alg = 0; alg < 2; alg++) {
    rc_raster r;
    ASSERT_EQ_INT(run_aspect("plane.tif", alg, 0, 0, &r), 0);
    ASSERT_NEAR(V(r, 20, 30), az, 1e-3);
    ASSERT_NEAR(V(r, 100, 150), az, 1e-3);
    rc_free(&r);
    ASSERT_EQ_INT(run_aspect("plane.tif", alg, 1, 0, &r), 0);
    ASSERT_NEAR(V(r, 20, 30), trig, 1e-3);
    rc_free(&r);
  }
  return 0;
}

/* cone: z = 1000 - 0.25 r around (1000 m, -750 m) = cell (75, 100). */
static int test_cone(void) {
  rc_raster s, a;
  ASSERT_EQ_INT(run_slope("cone.tif", TR_GRAD_HORN, 0, 0, 0, &s), 0);
  ASSERT_EQ_INT(run_aspect("cone.tif", TR_GRAD_HORN, 0, 0, &a), 0);
  const double want = atan(0.25) * 180 / M_PI;
  int checked = 0;
  for (int y = 1; y < s.rows - 1; y++)
    for (int x = 1; x < s.cols - 1; x++) {
      double dy = y - 75.0, dx = x - 100.0;
      double rr = hypot(dx, dy);
      if (rr < 8) continue;
      ASSERT_NEAR(V(s, y, x), want, 0.15);
      /* downhill points away from the apex: east = dx, north = -dy */
      double az = fmod(atan2(dx, -dy) * 180 / M_PI + 360.0, 360.0);
      double d = fabs(V(a, y, x) - az);
      if (d > 180) d = 360 - d;
      ASSERT(d < 0.5);
      checked++;
    }
  ASSERT(checked > 20000);
  rc_free(&s);
  rc_free(&a);
  return 0;
}

/* Gaussian hill: slope from the analytic gradient, Horn within 0.05 deg. */
static int test_gauss(void) {
  rc_raster s;
  ASSERT_EQ_INT(run_slope("gauss.tif", TR_GRAD_HORN, 0, 0, 0, &s), 0);
  for (int y = 1; y < s.rows - 1; y++)
    for (int x = 1; x < s.cols - 1; x++) {
      double X = x * 10.0 - 1000.0, Y = -y * 10.0 + 750.0;
      double g = 800.0 * exp(-(X * X + Y * Y) / (2 * 400.0 * 400.0));
      double gx = -g * X / (400.0 * 400.0), gy = -g * Y / (400.0 * 400.0);
      ASSERT_NEAR(V(s, y, x), atan(hypot(gx, gy)) * 180 / M_PI, 0.05);
    }
  rc_free(&s);
  return 0;
}

static int test_flat(void) {
  rc_raster s, a;
  ASSERT_EQ_INT(run_slope("flat.tif", TR_GRAD_HORN, 0, 1, 0, &s), 0);
  for (long i = 0; i < (long)s.rows * s.cols; i++) ASSERT_EQ_INT(s.v[i], 0);
  ASSERT_EQ_INT(run_aspect("flat.tif", TR_GRAD_HORN, 0, 0, &a), 0);
  for (long i = 0; i < (long)a.rows * a.cols; i++) ASSERT_EQ_INT(a.v[i], -9999);
  rc_free(&a);
  ASSERT_EQ_INT(run_aspect("flat.tif", TR_GRAD_HORN, 0, 1, &a), 0);
  ASSERT(!a.has_nodata);
  for (long i = 0; i < (long)a.rows * a.cols; i++) ASSERT_EQ_INT(a.v[i], 0);
  rc_free(&s);
  rc_free(&a);
  return 0;
}

/* Geographic: z rises 0.1 m per metre of meridian arc, so the true slope
 * is atan(0.1) at every latitude without any -s. */
static int test_geographic_metric(void) {
  rc_raster s;
  ASSERT_EQ_INT(run_slope("geographic.tif", TR_GRAD_HORN, 0, 0, 0, &s), 0);
  const double want = atan(0.1) * 180 / M_PI;
  for (int y = 1; y < s.rows - 1; y++)
    for (int x = 1; x < s.cols - 1; x++) ASSERT_NEAR(V(s, y, x), want, 1e-3);
  rc_free(&s);
  /* With -s S the cell size is degrees / S, as in gdaldem: the slope is
   * atan(0.1 * (metres per degree of latitude) / S), here with S = 50000 so
   * the difference from the metric answer is large. */
  ASSERT_EQ_INT(run_slope("geographic.tif", TR_GRAD_HORN, 0, 0, 50000, &s), 0);
  const double a = 6378137.0, f = 1 / 298.257222101, e2 = f * (2 - f);
  const double phi = (46.0 - 50.5 / 3600) * M_PI / 180, w = 1 - e2 * sin(phi) * sin(phi);
  const double m_per_deg = a * (1 - e2) / (w * sqrt(w)) * M_PI / 180;
  ASSERT_NEAR(V(s, 50, 40), atan(0.1 * m_per_deg / 50000) * 180 / M_PI, 1e-3);
  ASSERT(fabs(V(s, 50, 40) - want) > 1);
  rc_free(&s);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  dir = argv[1];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_gradient_analytic", dir);
  mkdir(outdir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_plane_slope), TR_TEST(test_plane_aspect), TR_TEST(test_cone),
                                       TR_TEST(test_gauss), TR_TEST(test_flat), TR_TEST(test_geographic_metric)};
  return tr_test_main(argc - 1, argv + 1, cases, (int)(sizeof cases / sizeof cases[0]));
}
