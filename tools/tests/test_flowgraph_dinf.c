/*
 * test_flowgraph_dinf.c - `terrafort flowgraph --method dinf`: D-infinity
 * angle, slope, specific catchment area and TWI.
 *
 * - against an independent sequential D-infinity in this file on tilted
 *   planes (angle and slope known analytically; sca by a plain recursive
 *   sum with proportions from the angle, in double): Float32 rounding apart,
 *   the same;
 * - the same bytes for every thread count, tile size, schedule, --ft mode,
 *   --mem and (when mpirun is there) rank count, on a DEM with pits and
 *   flats;
 * - --spi: sca x slp of the run's own rasters, cell for cell; against SAGA's
 *   Stream Power Index (saga_cmd, where installed) within 1e-6 relative;
 * - bad options: one line, exit 2, no output left;
 * - against TauDEM 5.4's own dinfflowdir / areadinf / twi outputs for the two
 *   DEMs of ../shared/data/taudem, run on TauDEM's fel.tif (exit 77, skipped,
 *   when absent). Measured and held as bounds:
 *     slp: every cell the same bytes (both DEMs);
 *     ang: the same nodata cells; equal bytes everywhere except on flats
 *       that TauDEM resolves in its second pass over its artificial
 *       surface (log.txt: 33 cells on loganvrt, 646 on enogeo), which get
 *       their D8 flat direction here: 6 cells differ on loganvrt, 214 on
 *       enogeo, every one a flat cell (slope 0);
 *     sca / scanc: equal bytes except downstream of those cells (58 / 58
 *       on loganvrt; 1199 / 1959 on enogeo, where 192 cells are also
 *       contaminated on one side only);
 *     twi: the same nodata cells; 3 cells (loganvrt) and 69 (enogeo) differ,
 *       by at most 2 units in the last place, where the sca differs or
 *       from logf's rounding;
 *     areadinf's form over TauDEM's ang.tif, twi's over its slp.tif and
 *       scanc.tif: TauDEM's sca, scanc and twi byte for byte.
 */
#include <gdal.h>
#include <math.h>
#include <cpl_conv.h>
#include <ogr_srs_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flow_kit.h"
#include "raster_check.h"
#include "tr_test.h"

static const char *shared;


/* ---- the independent reference: D-infinity on a plane, in double ------------------ */

/* Neighbour k (1 = E, counter-clockwise) as (row, col) offsets, and its
 * direction angle on a grid of cell dx x dy. */
static const int nrow[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1}, ncol[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};
static double dir_angle(int k, double dx, double dy) {
  const double d = atan2(dy, dx);
  static const double base[9] = {0, 0, 0, M_PI / 2, M_PI, M_PI, M_PI, 3 * M_PI / 2, 2 * M_PI};
  static const int sign[9] = {0, 0, 1, 0, -1, 0, 1, 0, -1};
  return base[k] + sign[k] * d;
}

/* The share of flow at angle a that reaches neighbour k: linear in the
 * angle between k's direction and the next direction either side. */
static double share(double a, int k, double dx, double dy) {
  const double ak = dir_angle(k, dx, dy);
  const int prev = k == 1 ? 8 : k - 1, next = k == 8 ? 1 : k + 1;
  double lo = dir_angle(prev, dx, dy), hi = dir_angle(next, dx, dy);
  if (k == 1) lo -= 2 * M_PI;
  if (k == 8) hi += 2 * M_PI;
  double x = a;
  if (k == 1 && x > M_PI) x -= 2 * M_PI;
  if (x <= lo || x >= hi) return 0;
  const double p = x > ak ? (hi - x) / (hi - ak) : (x - lo) / (ak - lo);
  return p < 1e-5 ? 0 : p;
}

/* sca of cell i by recursion over its donors (no cycles on a plane). */
static double ref_sca(const double *ang, const int *valid, int rows, int cols, double dx, double dy, double *memo,
                      int i) {
  if (memo[i] >= 0) return memo[i];
  const int r = i / cols, c = i % cols;
  double s = dx;
  for (int k = 1; k <= 8; k++) {
    const int rr = r + nrow[k], cc = c + ncol[k];
    if (rr < 0 || rr >= rows || cc < 0 || cc >= cols || !valid[rr * cols + cc]) continue;
    const double p = share(ang[rr * cols + cc], k > 4 ? k - 4 : k + 4, dx, dy);
    if (p > 0) s += p * ref_sca(ang, valid, rows, cols, dx, dy, memo, rr * cols + cc);
  }
  return memo[i] = s;
}

/* A plane falling at gradient (gx east, gy north) per metre: angle
 * atan2(gy, gx) (falling towards it), slope hypot(gx, gy), on every inner
 * cell; sca against the recursive sum (no edge check). */
static int check_plane(double gx, double gy, double cell) {
  const int rows = 37, cols = 41;
  float *z = malloc(sizeof(float) * rows * cols);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) z[r * cols + c] = (float)(1000.0 - gx * c * cell + gy * r * cell);
  ASSERT(!write_dem(opath("plane.tif"), rows, cols, cell, z, 0, 0));
  free(z);
  char a[2048];
  snprintf(a, sizeof a, "'%s' --filled --ang '%s' --slp '%s' --sca '%s' -nc --tile-size 16", opath("plane.tif"),
           opath("pang.tif"), opath("pslp.tif"), opath("psca.tif"));
  ASSERT_EQ_INT(run(a), 0);
  rc_raster A, S, C;
  ASSERT(!rc_load(opath("pang.tif"), &A) && !rc_load(opath("pslp.tif"), &S) && !rc_load(opath("psca.tif"), &C));
  ASSERT(A.type == GDT_Float32 && A.has_nodata && A.nodata < -3.4e38 && S.nodata == -1 && C.nodata == -1);
  double want = atan2(gy, gx);
  if (want < 0) want += 2 * M_PI;
  const double slope = hypot(gx, gy);
  double *ang = calloc((size_t)rows * cols, sizeof *ang), *memo = malloc(sizeof(double) * rows * cols);
  int *valid = calloc((size_t)rows * cols, sizeof *valid);
  for (int i = 0; i < rows * cols; i++) {
    const int r = i / cols, c = i % cols, edge = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
    memo[i] = -1;
    if (edge) {
      ASSERT(rc_is_nodata(&A, A.v[i]) && rc_is_nodata(&S, S.v[i]) && rc_is_nodata(&C, C.v[i]));
      continue;
    }
    ASSERT_NEAR(A.v[i], want, 2e-6);
    ASSERT_NEAR(S.v[i], slope, 2e-6 * slope);
    ang[i] = want;
    valid[i] = 1;
  }
  for (int i = 0; i < rows * cols; i++) {
    if (!valid[i]) continue;
    const double s = ref_sca(ang, valid, rows, cols, cell, cell, memo, i);
    ASSERT_NEAR(C.v[i], s, 1e-5 * s);
  }
  free(ang);
  free(memo);
  free(valid);
  rc_free(&A);
  rc_free(&S);
  rc_free(&C);
  return 0;
}

static int test_plane_analytic(void) {
  /* inside a facet of the first octant, inside one of the sixth, and
   * straight south (a cardinal: all flow to one neighbour); elevations
   * whole numbers, exact in Float32 */
  if (check_plane(0.5, 0.25, 4.0)) return 1;
  if (check_plane(-0.25, -0.75, 8.0)) return 1;
  if (check_plane(0.0, -0.5, 2.0)) return 1;
  return 0;
}

/* ---- determinism ------------------------------------------------------------------- */

/* Hills quantised to whole metres (many flats), a pit and a NoData hole. */
static int make_bumpy(const char *path) {
  const int rows = 150, cols = 170;
  float *z = malloc(sizeof(float) * rows * cols);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      double v = 200 + 30 * sin(r * 0.07) * cos(c * 0.05) + 0.3 * r + 0.1 * c + 8 * sin(r * 0.31 + c * 0.23);
      z[r * cols + c] = (float)floor(v);
    }
  for (int r = 60; r < 66; r++)
    for (int c = 80; c < 84; c++) z[r * cols + c] = -9999;
  z[20 * cols + 30] -= 25;
  const int rc = write_dem(path, rows, cols, 25.0, z, 1, -9999);
  free(z);
  return rc;
}

static int same_products(const char *tag) {
  static const char *const p[] = {"ang", "slp", "sca", "twi"};
  for (int k = 0; k < 4; k++) {
    char a[64], b[64];
    snprintf(a, sizeof a, "d_%s0.tif", p[k]);
    snprintf(b, sizeof b, "d_%s1.tif", p[k]);
    rc_raster A, B;
    if (rc_load(opath(a), &A) || rc_load(opath(b), &B)) return 1;
    int same = A.rows == B.rows && A.cols == B.cols;
    for (int64_t i = 0; same && i < (int64_t)A.rows * A.cols; i++)
      same = A.v[i] == B.v[i] || (isnan(A.v[i]) && isnan(B.v[i]));
    rc_free(&A);
    rc_free(&B);
    if (!same) {
      fprintf(stderr, "%s: %s differs\n", tag, p[k]);
      return 1;
    }
  }
  return 0;
}

static int run_all(const char *prefix, const char *flags, int k) {
  char a[4096];
  snprintf(a, sizeof a, "'%s' --ang '%s' --slp '%s' --sca '%s' --twi '%s' %s", opath("bumpy.tif"),
           opath(k ? "d_ang1.tif" : "d_ang0.tif"), opath(k ? "d_slp1.tif" : "d_slp0.tif"),
           opath(k ? "d_sca1.tif" : "d_sca0.tif"), opath(k ? "d_twi1.tif" : "d_twi0.tif"), flags);
  if (!prefix[0]) return run(a);
  char c[8192];
  snprintf(c, sizeof c, "%s '%s' flowgraph -q %s 2>%s/err.txt", prefix, tf, a, outdir);
  return rc_run(c, NULL);
}

static int test_same_bytes(void) {
  ASSERT(!make_bumpy(opath("bumpy.tif")));
  ASSERT_EQ_INT(run_all("", "--threads 1", 0), 0);
  rc_raster S;
  ASSERT(!rc_load(opath("d_sca0.tif"), &S));
  int64_t valid = 0;
  for (int64_t i = 0; i < (int64_t)S.rows * S.cols; i++) valid += !rc_is_nodata(&S, S.v[i]);
  rc_free(&S);
  ASSERT(valid > 1000); /* the edge check leaves the inner catchments */
  static const char *const flags[] = {"--threads 2",
                                      "--tile-size 32",
                                      "--tile-size 47 --threads 2 --schedule ap",
                                      "--tile-size 40 --schedule bsp",
                                      "--tile-size 33 --schedule ssp --staleness 1",
                                      "--ft dual --tile-size 50",
                                      "--ft replay --tile-size 50",
                                      "--mem 120M --tile-size 32"};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    ASSERT_EQ_INT(run_all("", flags[i], 1), 0);
    ASSERT(!same_products(flags[i]));
  }
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0) {
    ASSERT_EQ_INT(run_all("mpirun --allow-run-as-root --oversubscribe -n 3", "--tile-size 40", 1), 0);
    ASSERT(!same_products("mpirun -n 3"));
  }
  /* --ft-report: --slp is the dinf_slp kernel's line (terrafort(1)), the
   * angles the "dinf" program's */
  char rflags[1024];
  snprintf(rflags, sizeof rflags, "--ft dual --tile-size 50 --ft-report '%s'", opath("d_ft.json"));
  ASSERT_EQ_INT(run_all("", rflags, 1), 0);
  ASSERT(!same_products("--ft dual with a report"));
  FILE *fp = fopen(opath("d_ft.json"), "r");
  ASSERT(fp != NULL);
  static char rep[1 << 16];
  const size_t nrep = fread(rep, 1, sizeof rep - 1, fp);
  fclose(fp);
  rep[nrep] = 0;
  ASSERT(strstr(rep, "\"kernel\":\"dinf_slp\"") != NULL);
  ASSERT(strstr(rep, "\"program\":\"dinf\"") != NULL);
  return 0;
}

/* ---- bad options ------------------------------------------------------------------- */

static int bad(const char *args, const char *needle) {
  unlink(opath("bad.tif"));
  char a[2048];
  snprintf(a, sizeof a, args, opath("bumpy.tif"), opath("bad.tif"));
  ASSERT_EQ_INT(run(a), 2);
  ASSERT(!exists(opath("bad.tif")));
  char e[1024];
  snprintf(e, sizeof e, "%s/err.txt", outdir);
  const char *msg = rc_slurp(e);
  if (!msg || !strstr(msg, needle)) {
    fprintf(stderr, "'%s': expected '%s' in: %s\n", args, needle, msg ? msg : "(none)");
    return 1;
  }
  return 0;
}

static int test_bad_options(void) {
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  ASSERT(!bad("'%s' --method foo --ang '%s'", "--method: 'foo' is not one of d8, dinf"));
  ASSERT(!bad("'%s' --method d8 --ang '%s'", "give --method dinf"));
  ASSERT(!bad("'%s' --method dinf --acc '%s'", "--acc is a D8 product"));
  ASSERT(!bad("--dir-in '%s' --sca '%s'", "computes D-infinity angles from a DEM"));
  ASSERT(!bad("'%s' --method dinf --dir '%s'", "--dir is a D8 product"));
  ASSERT(!bad("'%s' --sca '%s' --slp %2$s", "is given for two products"));
  return 0;
}

/* ---- --ang-in: sca from angles given (TauDEM areadinf's form) --------------------- */

/* Whether two rasters hold the same values (nodata, NaN alike). */
static int same_values(const char *a, const char *b) {
  rc_raster A, B;
  if (rc_load(a, &A) || rc_load(b, &B)) return 0;
  int same = A.rows == B.rows && A.cols == B.cols && A.nodata == B.nodata;
  for (int64_t i = 0; same && i < (int64_t)A.rows * A.cols; i++)
    same = A.v[i] == B.v[i] || (isnan(A.v[i]) && isnan(B.v[i]));
  rc_free(&A);
  rc_free(&B);
  if (!same) fprintf(stderr, "%s differs from %s\n", a, b);
  return same;
}

/* A copy of the angles with cells set to `v` (rows r0..r1, cols c0..c1). */
static int angles_with(const char *src, const char *dst, int r0, int r1, int c0, int c1, float v) {
  rc_raster A;
  if (rc_load(src, &A)) return -1;
  float *z = malloc(sizeof(float) * A.rows * A.cols);
  for (int64_t i = 0; i < (int64_t)A.rows * A.cols; i++) z[i] = (float)A.v[i];
  for (int r = r0; r <= r1; r++)
    for (int c = c0; c <= c1; c++) z[r * A.cols + c] = v;
  const int rc = write_dem(dst, A.rows, A.cols, 25.0, z, 1, (float)A.nodata);
  free(z);
  rc_free(&A);
  return rc;
}

static int test_ang_in(void) {
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  char a[4096];
  /* the angles and sca (with and without the edge check) from the DEM */
  snprintf(a, sizeof a, "'%s' --ang '%s' --sca '%s' --tile-size 40", opath("bumpy.tif"), opath("ai_ang.tif"),
           opath("ai_sca.tif"));
  ASSERT_EQ_INT(run(a), 0);
  snprintf(a, sizeof a, "'%s' --sca '%s' -nc", opath("bumpy.tif"), opath("ai_scanc.tif"));
  ASSERT_EQ_INT(run(a), 0);
  /* from the angles alone: the same sca, in both spellings, for any settings */
  static const char *const flags[] = {"--threads 1", "--threads 2 --tile-size 32", "--tile-size 47 --schedule bsp",
                                      "--ft dual --tile-size 50", "--mem 120M --tile-size 32"};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    snprintf(a, sizeof a, "--ang-in '%s' --sca '%s' %s", opath("ai_ang.tif"), opath("ai_sca2.tif"), flags[i]);
    ASSERT_EQ_INT(run(a), 0);
    ASSERT(same_values(opath("ai_sca2.tif"), opath("ai_sca.tif")));
  }
  snprintf(a, sizeof a, "-ang '%s' -sca '%s' -nc", opath("ai_ang.tif"), opath("ai_scanc2.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(same_values(opath("ai_scanc2.tif"), opath("ai_scanc.tif")));
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0) {
    char c[8192];
    snprintf(c, sizeof c,
             "mpirun --allow-run-as-root --oversubscribe -n 3 '%s' flowgraph -q --ang-in '%s' --sca '%s' "
             "--tile-size 40 2>%s/err.txt",
             tf, opath("ai_ang.tif"), opath("ai_sca3.tif"), outdir);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(same_values(opath("ai_sca3.tif"), opath("ai_sca.tif")));
  }
  /* a NoData hole in the angles: its cells are nodata; without the edge
   * check no cell gains area (the hole only takes donors away) and some
   * cell below the hole loses some; with it, the hole's neighbours are
   * nodata (their area may come from the hole) */
  ASSERT(!angles_with(opath("ai_ang.tif"), opath("ai_hole.tif"), 100, 104, 40, 45, -3.4028235e+38f));
  snprintf(a, sizeof a, "--ang-in '%s' --sca '%s' -nc", opath("ai_hole.tif"), opath("ai_hole_nc.tif"));
  ASSERT_EQ_INT(run(a), 0);
  snprintf(a, sizeof a, "--ang-in '%s' --sca '%s'", opath("ai_hole.tif"), opath("ai_hole_ec.tif"));
  ASSERT_EQ_INT(run(a), 0);
  rc_raster N, H, E;
  ASSERT(!rc_load(opath("ai_scanc.tif"), &N) && !rc_load(opath("ai_hole_nc.tif"), &H) &&
         !rc_load(opath("ai_hole_ec.tif"), &E));
  int64_t less = 0;
  for (int r = 0; r < H.rows; r++)
    for (int c = 0; c < H.cols; c++) {
      const int64_t i = (int64_t)r * H.cols + c;
      const int in_hole = r >= 100 && r <= 104 && c >= 40 && c <= 45;
      const int next_to = !in_hole && r >= 99 && r <= 105 && c >= 39 && c <= 46;
      if (in_hole) {
        ASSERT(rc_is_nodata(&H, H.v[i]) && rc_is_nodata(&E, E.v[i]));
        continue;
      }
      if (next_to) ASSERT(rc_is_nodata(&E, E.v[i]));
      if (rc_is_nodata(&N, N.v[i])) continue;
      ASSERT(!rc_is_nodata(&H, H.v[i]));
      ASSERT(H.v[i] <= N.v[i]);
      less += H.v[i] < N.v[i];
    }
  ASSERT(less > 0);
  rc_free(&N);
  rc_free(&H);
  rc_free(&E);
  return 0;
}

/* angles out of range, no valid angle, --ang-in with what it cannot make:
 * one line, the exit code, nothing written */
static int bad_in(const char *args, int code, const char *needle) {
  unlink(opath("bad.tif"));
  ASSERT_EQ_INT(run(args), code);
  ASSERT(!exists(opath("bad.tif")));
  char e[1024];
  snprintf(e, sizeof e, "%s/err.txt", outdir);
  const char *msg = rc_slurp(e);
  if (!msg || !strstr(msg, needle) || strchr(msg, '\n') != msg + strlen(msg) - 1) {
    fprintf(stderr, "'%s': expected one line with '%s', got: %s\n", args, needle, msg ? msg : "(none)");
    return 1;
  }
  return 0;
}

static int test_ang_in_bad(void) {
  if (!exists(opath("ai_ang.tif"))) ASSERT_EQ_INT(test_ang_in(), 0);
  char a[4096];
  const float bad_values[] = {7.0f, -0.5f, 6.2832f, -1.0f}; /* (+-Inf is nodata, as in every input) */
  for (int k = 0; k < 4; k++) {
    ASSERT(!angles_with(opath("ai_ang.tif"), opath("ai_badang.tif"), 77, 77, 91, 91, bad_values[k]));
    snprintf(a, sizeof a, "--ang-in '%s' --sca '%s'", opath("ai_badang.tif"), opath("bad.tif"));
    ASSERT(!bad_in(a, 3, "at row 77, column 91 is not a D-infinity angle"));
  }
  /* TauDEM's own 2 pi, rounded to Float32, is an angle */
  ASSERT(!angles_with(opath("ai_ang.tif"), opath("ai_2pi.tif"), 77, 77, 91, 91, (float)(2 * 3.14159265359)));
  snprintf(a, sizeof a, "--ang-in '%s' --sca '%s'", opath("ai_2pi.tif"), opath("bad.tif"));
  ASSERT_EQ_INT(run(a), 0);
  rc_raster A;
  ASSERT(!rc_load(opath("ai_ang.tif"), &A));
  ASSERT(!angles_with(opath("ai_ang.tif"), opath("ai_none.tif"), 0, A.rows - 1, 0, A.cols - 1, (float)A.nodata));
  rc_free(&A);
  snprintf(a, sizeof a, "--ang-in '%s' --sca '%s'", opath("ai_none.tif"), opath("bad.tif"));
  ASSERT(!bad_in(a, 3, "has no valid cell"));
  snprintf(a, sizeof a, "'%s' --ang-in '%s' --sca '%s'", opath("bumpy.tif"), opath("ai_ang.tif"), opath("bad.tif"));
  ASSERT(!bad_in(a, 2, "give no DEM with it"));
  snprintf(a, sizeof a, "--ang-in '%s' --sca '%s' --twi '%s'", opath("ai_ang.tif"), opath("bad.tif"),
           opath("bad2.tif"));
  ASSERT(!bad_in(a, 2, "--twi needs a DEM"));
  ASSERT(!exists(opath("bad2.tif")));
  snprintf(a, sizeof a, "--ang-in '%s' --hand '%s'", opath("ai_ang.tif"), opath("bad.tif"));
  ASSERT(!bad_in(a, 2, "add --streams-in")); /* (dinfdistdown's form, test_flowgraph_hand.c) */
  char cp[4096];
  snprintf(cp, sizeof cp, "cp '%s' '%s'", opath("ai_ang.tif"), opath("ai_ang_copy.tif"));
  ASSERT_EQ_INT(rc_run(cp, NULL), 0);
  snprintf(a, sizeof a, "--ang-in '%s' --sca '%s'", opath("ai_ang.tif"), opath("ai_ang.tif"));
  ASSERT_EQ_INT(run(a), 4); /* an output over the angles read: refused, the angles untouched */
  ASSERT(rc_same_file(opath("ai_ang.tif"), opath("ai_ang_copy.tif")));
  return 0;
}

/* TauDEM twi's form: --slp-in and --sca-in (or -slp -sca -twi with no DEM)
 * give the twi the DEM's own run makes from the same slope and sca, for any
 * settings; without one of them, with a DEM, with another product, on two
 * grids: one line, the exit code, nothing written. */
static int test_twi_in(void) {
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  char a[4096];
  /* from the DEM: slope, sca without the edge check (twi's) and twi */
  snprintf(a, sizeof a, "'%s' --slp '%s' --twi '%s' --tile-size 40", opath("bumpy.tif"), opath("ti_slp.tif"),
           opath("ti_twi.tif"));
  ASSERT_EQ_INT(run(a), 0);
  snprintf(a, sizeof a, "'%s' --sca '%s' -nc", opath("bumpy.tif"), opath("ti_scanc.tif"));
  ASSERT_EQ_INT(run(a), 0);
  for (size_t i = 0; i < FK_NSETTINGS; i++) {
    snprintf(a, sizeof a, "--slp-in '%s' --sca-in '%s' --twi '%s' %s", opath("ti_slp.tif"), opath("ti_scanc.tif"),
             opath("ti_twi2.tif"), fk_settings[i]);
    ASSERT_EQ_INT(run(a), 0);
    ASSERT(same_values(opath("ti_twi2.tif"), opath("ti_twi.tif")));
  }
  snprintf(a, sizeof a, "-slp '%s' -sca '%s' -twi '%s'", opath("ti_slp.tif"), opath("ti_scanc.tif"),
           opath("ti_twi3.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(same_values(opath("ti_twi3.tif"), opath("ti_twi.tif")));
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0) {
    char c[8192];
    snprintf(c, sizeof c,
             "mpirun --allow-run-as-root --oversubscribe -n 3 '%s' flowgraph -q --slp-in '%s' --sca-in '%s' --twi '%s' "
             "--tile-size 40 2>%s/err.txt",
             tf, opath("ti_slp.tif"), opath("ti_scanc.tif"), opath("ti_twi4.tif"), outdir);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(same_values(opath("ti_twi4.tif"), opath("ti_twi.tif")));
  }
  /* bad uses */
  snprintf(a, sizeof a, "--slp-in '%s' --twi '%s'", opath("ti_slp.tif"), opath("bad.tif"));
  ASSERT(!bad_in(a, 2, "--slp-in needs --sca-in too"));
  snprintf(a, sizeof a, "'%s' --slp-in '%s' --sca-in '%s' --twi '%s'", opath("bumpy.tif"), opath("ti_slp.tif"),
           opath("ti_scanc.tif"), opath("bad.tif"));
  ASSERT(!bad_in(a, 2, "give no DEM with them"));
  snprintf(a, sizeof a, "--slp-in '%s' --sca-in '%s' --twi '%s' --hand '%s'", opath("ti_slp.tif"),
           opath("ti_scanc.tif"), opath("bad.tif"), opath("bad2.tif"));
  ASSERT(!bad_in(a, 2, "--hand needs a DEM"));
  ASSERT(!exists(opath("bad2.tif")));
  snprintf(a, sizeof a, "--slp-in '%s' --sca-in '%s'", opath("ti_slp.tif"), opath("ti_scanc.tif"));
  ASSERT(!bad_in(a, 2, "no product asked for"));
  ASSERT(!angles_with(opath("ti_slp.tif"), opath("ti_slp_hole.tif"), 10, 12, 10, 12, -1.0f));
  snprintf(a, sizeof a, "--slp-in '%s' --sca-in '%s' --twi '%s'", opath("ti_slp_hole.tif"), opath("ti_scanc.tif"),
           opath("ti_twi_hole.tif"));
  ASSERT_EQ_INT(run(a), 0);
  rc_raster H, T;
  ASSERT(!rc_load(opath("ti_twi_hole.tif"), &H) && !rc_load(opath("ti_twi.tif"), &T));
  for (int r = 0; r < H.rows; r++)
    for (int c = 0; c < H.cols; c++) {
      const int64_t i = (int64_t)r * H.cols + c;
      if (r >= 10 && r <= 12 && c >= 10 && c <= 12) ASSERT(rc_is_nodata(&H, H.v[i]));
      else ASSERT(H.v[i] == T.v[i] || (rc_is_nodata(&H, H.v[i]) && rc_is_nodata(&T, T.v[i])));
    }
  rc_free(&H);
  rc_free(&T);
  /* another grid: the same size, shifted by a cell */
  char c[8192];
  snprintf(c, sizeof c, "gdal_translate -q -a_ullr 1000 2000 1290 1700 '%s' '%s'", opath("ti_scanc.tif"),
           opath("ti_shift.tif"));
  if (rc_run(c, NULL) == 0) {
    snprintf(a, sizeof a, "--slp-in '%s' --sca-in '%s' --twi '%s'", opath("ti_slp.tif"), opath("ti_shift.tif"),
             opath("bad.tif"));
    ASSERT(!bad_in(a, 3, "is not on the grid of --sca-in"));
  }
  return 0;
}

/* --spi: sca x slp from the run's own no-edge-check sca and slope, cell by
 * cell (double product stored as Float32), the same bytes for any settings
 * and from --slp-in --sca-in; against SAGA's Stream Power Index (saga_cmd
 * ta_hydrology 21, given atan(slp) in radians as a Float64 raster) within a
 * relative 1e-6 where saga_cmd is installed. */
static int test_spi(void) {
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  char a[4096];
  snprintf(a, sizeof a, "'%s' --slp '%s' --spi '%s' --twi '%s' --tile-size 40", opath("bumpy.tif"),
           opath("sp_slp.tif"), opath("sp_spi.tif"), opath("sp_twi.tif"));
  ASSERT_EQ_INT(run(a), 0);
  snprintf(a, sizeof a, "'%s' --sca '%s' -nc", opath("bumpy.tif"), opath("sp_scanc.tif"));
  ASSERT_EQ_INT(run(a), 0);
  rc_raster P, S, A;
  ASSERT(!rc_load(opath("sp_spi.tif"), &P) && !rc_load(opath("sp_slp.tif"), &S) && !rc_load(opath("sp_scanc.tif"), &A));
  int64_t valid = 0, flat = 0;
  for (int64_t i = 0; i < (int64_t)P.rows * P.cols; i++) {
    if (rc_is_nodata(&A, A.v[i]) || rc_is_nodata(&S, S.v[i])) {
      ASSERT(rc_is_nodata(&P, P.v[i]));
      continue;
    }
    ASSERT(P.v[i] == (double)(float)(A.v[i] * S.v[i]));
    valid++;
    flat += S.v[i] == 0.0;
  }
  ASSERT(valid > 10000 && flat > 0);
  rc_free(&P);
  rc_free(&S);
  rc_free(&A);
  static const char *const flags[] = {"--threads 2 --tile-size 32", "--ft replay --tile-size 50",
                                      "--mem 120M --tile-size 32"};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    snprintf(a, sizeof a, "'%s' --spi '%s' %s", opath("bumpy.tif"), opath("sp_spi2.tif"), flags[i]);
    ASSERT_EQ_INT(run(a), 0);
    ASSERT(same_values(opath("sp_spi2.tif"), opath("sp_spi.tif")));
  }
  snprintf(a, sizeof a, "--slp-in '%s' --sca-in '%s' --spi '%s' --twi '%s'", opath("sp_slp.tif"),
           opath("sp_scanc.tif"), opath("sp_spi3.tif"), opath("sp_twi3.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(same_values(opath("sp_spi3.tif"), opath("sp_spi.tif")) && same_values(opath("sp_twi3.tif"), opath("sp_twi.tif")));
  snprintf(a, sizeof a, "'%s' --method d8 --spi '%s'", opath("bumpy.tif"), opath("bad.tif"));
  ASSERT(!bad_in(a, 2, "are D-infinity products"));
  /* SAGA */
  if (rc_run("command -v saga_cmd >/dev/null", NULL) != 0) {
    fprintf(stderr, "saga_cmd not installed: the SAGA comparison is not made\n");
    return 0;
  }
  static const char *const dems[] = {"loganvrt", "enogeo"};
  char probe[1024];
  snprintf(probe, sizeof probe, "%s/taudem/loganvrt/hydro/slp.tif", shared);
  for (int d = 0; d < 2 && exists(probe); d++) {
    char ref[1024];
    snprintf(ref, sizeof ref, "%s/taudem/%s/hydro", shared, dems[d]);
    snprintf(a, sizeof a, "--slp-in '%s/slp.tif' --sca-in '%s/scanc.tif' --spi '%s'", ref, ref, opath("sp_t.tif"));
    ASSERT_EQ_INT(run(a), 0);
    /* the slope as SAGA takes it: radians, Float64 */
    char slp[1200];
    snprintf(slp, sizeof slp, "%s/slp.tif", ref);
    rc_raster T;
    ASSERT(!rc_load(slp, &T));
    GDALDatasetH in = GDALOpen(slp, GA_ReadOnly);
    ASSERT(in != NULL);
    GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), opath("sp_rad.tif"), T.cols, T.rows, 1, GDT_Float64, NULL);
    ASSERT(ds != NULL);
    double gt[6];
    GDALGetGeoTransform(in, gt);
    GDALSetGeoTransform(ds, gt);
    GDALSetProjection(ds, GDALGetProjectionRef(in));
    GDALClose(in);
    double *r = malloc(sizeof(double) * (size_t)T.rows * T.cols);
    ASSERT(r != NULL);
    for (int64_t i = 0; i < (int64_t)T.rows * T.cols; i++) r[i] = rc_is_nodata(&T, T.v[i]) ? -9999.0 : atan(T.v[i]);
    GDALSetRasterNoDataValue(GDALGetRasterBand(ds, 1), -9999.0);
    ASSERT(GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Write, 0, 0, T.cols, T.rows, r, T.cols, T.rows, GDT_Float64, 0,
                        0) == CE_None);
    GDALClose(ds);
    free(r);
    rc_free(&T);
    char c[8192];
    unlink(opath("sp_saga.tif"));
    snprintf(c, sizeof c, "saga_cmd ta_hydrology 21 -SLOPE '%s' -AREA '%s/scanc.tif' -SPI '%s' >/dev/null 2>&1",
             opath("sp_rad.tif"), ref, opath("sp_saga.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    rc_raster M, G;
    ASSERT(!rc_load(opath("sp_t.tif"), &M) && !rc_load(opath("sp_saga.tif"), &G));
    ASSERT(M.rows == G.rows && M.cols == G.cols);
    int64_t n = 0, nd_off = 0;
    double worst = 0;
    for (int64_t i = 0; i < (int64_t)M.rows * M.cols; i++) {
      const int nm = rc_is_nodata(&M, M.v[i]), ng = rc_is_nodata(&G, G.v[i]);
      if (nm != ng) {
        nd_off++;
        continue;
      }
      if (nm) continue;
      n++;
      const double rel = fabs(M.v[i] - G.v[i]) / fmax(fabs(G.v[i]), 1e-30);
      if (rel > worst && !(M.v[i] == 0 && G.v[i] == 0)) worst = rel;
    }
    fprintf(stderr, "%s spi against SAGA: %lld cells, %lld nodata on one side, max relative %.3g\n", dems[d],
            (long long)n, (long long)nd_off, worst);
    ASSERT(n > 50000 && nd_off == 0 && worst < 1e-6);
    rc_free(&M);
    rc_free(&G);
  }
  return 0;
}

/* ---- TauDEM ------------------------------------------------------------------------ */

typedef struct {
  int64_t nodata_mismatch, differ;
  double max_rel;
} cmp_t;

/* Our product against TauDEM's, cell by cell; flat: counted differences
 * only where `slp` (ours) is 0, else counted in *off_flat. */
static int compare(const char *mine, const char *ref, cmp_t *o) {
  rc_raster a, b;
  memset(o, 0, sizeof *o);
  if (rc_load(mine, &a) || rc_load(ref, &b)) return -1;
  if (a.rows != b.rows || a.cols != b.cols || a.type != b.type || a.nodata != b.nodata) {
    fprintf(stderr, "%s: size, type or nodata differ from %s\n", mine, ref);
    return -1;
  }
  for (int64_t i = 0; i < (int64_t)a.rows * a.cols; i++) {
    const int na = rc_is_nodata(&a, a.v[i]), nb = rc_is_nodata(&b, b.v[i]);
    if (na != nb) o->nodata_mismatch++;
    else if (!na && a.v[i] != b.v[i]) {
      o->differ++;
      const double rel = fabs(a.v[i] - b.v[i]) / fmax(fabs(b.v[i]), 1e-30);
      if (rel > o->max_rel) o->max_rel = rel;
    }
  }
  rc_free(&a);
  rc_free(&b);
  return 0;
}

static int test_taudem(void) {
  static const char *const dems[] = {"loganvrt", "enogeo"};
  /* the bounds measured (see the top of the file) */
  char probe[1024];
  snprintf(probe, sizeof probe, "%s/taudem/loganvrt/hydro/ang.tif", shared);
  if (!exists(probe)) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  static const int64_t ang_max[] = {6, 214}, sca_max[] = {58, 1199}, scanc_max[] = {58, 1959},
                       sca_nd_max[] = {0, 192}, twi_max[] = {3, 69};
  for (int d = 0; d < 2; d++) {
    char ref[1024], a[4096];
    snprintf(ref, sizeof ref, "%s/taudem/%s/hydro", shared, dems[d]);
    /* TauDEM's dinfflowdir form: -fel is the filled DEM */
    snprintf(a, sizeof a,
             "-fel '%s/taudem/%s/fel.tif' -ang '%s' -slp '%s' -sca '%s' -twi '%s' --tile-size 100", shared, dems[d],
             opath("t_ang.tif"), opath("t_slp.tif"), opath("t_sca.tif"), opath("t_twi.tif"));
    ASSERT_EQ_INT(run(a), 0);
    snprintf(a, sizeof a, "--filled '%s/taudem/%s/fel.tif' --sca '%s' -nc --tile-size 64", shared, dems[d],
             opath("t_scanc.tif"));
    ASSERT_EQ_INT(run(a), 0);
    cmp_t c;
    char r[1200];
    snprintf(r, sizeof r, "%s/slp.tif", ref);
    ASSERT(!compare(opath("t_slp.tif"), r, &c));
    ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
    snprintf(r, sizeof r, "%s/ang.tif", ref);
    ASSERT(!compare(opath("t_ang.tif"), r, &c));
    fprintf(stderr, "%s ang: %lld cells differ\n", dems[d], (long long)c.differ);
    ASSERT(c.nodata_mismatch == 0 && c.differ <= ang_max[d]);
    /* every angle that differs is on a flat: slope 0 there */
    rc_raster A, B, S;
    ASSERT(!rc_load(opath("t_ang.tif"), &A) && !rc_load(r, &B) && !rc_load(opath("t_slp.tif"), &S));
    for (int64_t i = 0; i < (int64_t)A.rows * A.cols; i++)
      if (A.v[i] != B.v[i]) ASSERT(S.v[i] == 0.0);
    rc_free(&A);
    rc_free(&B);
    rc_free(&S);
    snprintf(r, sizeof r, "%s/sca.tif", ref);
    ASSERT(!compare(opath("t_sca.tif"), r, &c));
    fprintf(stderr, "%s sca: %lld differ, %lld nodata on one side\n", dems[d], (long long)c.differ,
            (long long)c.nodata_mismatch);
    ASSERT(c.nodata_mismatch <= sca_nd_max[d] && c.differ <= sca_max[d]);
    snprintf(r, sizeof r, "%s/scanc.tif", ref);
    ASSERT(!compare(opath("t_scanc.tif"), r, &c));
    fprintf(stderr, "%s scanc: %lld differ\n", dems[d], (long long)c.differ);
    ASSERT(c.nodata_mismatch == 0 && c.differ <= scanc_max[d]);
    /* TauDEM areadinf's form over TauDEM's own angles: its sca and scanc */
    snprintf(a, sizeof a, "-ang '%s/ang.tif' -sca '%s' --tile-size 70", ref, opath("t_asca.tif"));
    ASSERT_EQ_INT(run(a), 0);
    snprintf(a, sizeof a, "-ang '%s/ang.tif' -sca '%s' -nc", ref, opath("t_ascanc.tif"));
    ASSERT_EQ_INT(run(a), 0);
    snprintf(r, sizeof r, "%s/sca.tif", ref);
    ASSERT(!compare(opath("t_asca.tif"), r, &c));
    fprintf(stderr, "%s sca from TauDEM's angles: %lld differ, %lld nodata on one side\n", dems[d],
            (long long)c.differ, (long long)c.nodata_mismatch);
    ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
    snprintf(r, sizeof r, "%s/scanc.tif", ref);
    ASSERT(!compare(opath("t_ascanc.tif"), r, &c));
    ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
    snprintf(r, sizeof r, "%s/twi.tif", ref);
    ASSERT(!compare(opath("t_twi.tif"), r, &c));
    fprintf(stderr, "%s twi: %lld differ, max relative %.3g\n", dems[d], (long long)c.differ, c.max_rel);
    ASSERT(c.nodata_mismatch == 0 && c.differ <= twi_max[d] && c.max_rel < 2.5e-7);
    /* TauDEM twi's form over TauDEM's slp and scanc (its twi.tif's inputs): its twi */
    snprintf(a, sizeof a, "-slp '%s/slp.tif' -sca '%s/scanc.tif' -twi '%s' --tile-size 90", ref, ref,
             opath("t_ttwi.tif"));
    ASSERT_EQ_INT(run(a), 0);
    ASSERT(!compare(opath("t_ttwi.tif"), r, &c));
    ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TESTDATA TERRAFORT SHARED_DATA [test]\n", argv[0]);
    return 2;
  }
  tf = argv[2];
  shared = argv[3];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "flow_dinf_out");
  mkdir(outdir, 0755);
  if (argc > 4 && !strcmp(argv[4], "test_taudem")) {
    char p[1024];
    snprintf(p, sizeof p, "%s/taudem/loganvrt/hydro/ang.tif", shared);
    if (!exists(p)) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 77;
  }
  static const tr_test_case cases[] = {TR_TEST(test_plane_analytic), TR_TEST(test_same_bytes),
                                       TR_TEST(test_bad_options), TR_TEST(test_ang_in),
                                       TR_TEST(test_ang_in_bad), TR_TEST(test_twi_in), TR_TEST(test_spi),
                                       TR_TEST(test_taudem)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
