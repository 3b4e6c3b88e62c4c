/*
 * test_flowgraph_mfd.c - `terrafort flowgraph --method quinn|holmgren|freeman
 * --acc`: multiple-flow-direction accumulation (mfd_up_program.c).
 *
 * - against an independent sequential MFD in this file on a cone (every
 *   cell but the DEM's edge drains to its lower neighbours; no flats): the
 *   weights in double from the published formulas (RichDEM's constants),
 *   each cell 1 + the shares of its donors by recursion; Float32 shares
 *   apart (relative 1e-5), the same, for all three methods, across tiles;
 * - the same bytes for every thread count, tile size, schedule, --ft mode
 *   (with faults injected too), --mem and (when mpirun is there) rank count, on a DEM with flats, a pit
 *   and a NoData hole, and only the hole is nodata (the flats drain);
 * - Rho8: against a sequential Rho8 in this file (the draws from
 *   terrafort(1)'s statement of them) on a plane, cell for cell, for every
 *   setting and rank count; the diagonal taken with probability b / a; the
 *   same bytes for any settings on a DEM with flats;
 * - bad options: one line, exit 2, no output left;
 * - against RichDEM 2.2.9's rd_flow_accumulation 3, 4 4.0 and 5 1.1 on
 *   TauDEM's fel.tif (../shared/data/richdem; exit 77, skipped, when absent),
 *   RichDEM's values divided by its cell area |gt[1] gt[5]| (its files hold
 *   area, not cells). RichDEM does not drain flats, so cells are compared
 *   where no flat drains into them: "flat" = a valid cell off the DEM's edge
 *   with no strictly lower valid neighbour (Float32 elevations); a cell is
 *   left out when it is flat or receives, over any path, from one (strictly
 *   lower neighbours of a non-flat cell, lower or equal ones of a flat
 *   cell). Measured and held: loganvrt 2136 flat, 115849 compared; enogeo
 *   20050 flat, 358050 compared. Quinn, Holmgren, and Freeman with RichDEM's
 *   own p (it reads 1.1 as a float: 1.10000002384185791015625): every
 *   compared cell within a relative 1e-14 (measured <= 1.3e-15: RichDEM
 *   sums donors in queue order, here in a fixed order, and its file holds
 *   cells x area). Freeman with p = 1.1 exactly: within 1e-6 (measured
 *   3.1e-7 and 3.5e-7).
 */
#include <gdal.h>
#include <math.h>
#include <cpl_conv.h>
#include <ogr_srs_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flow_kit.h"
#include "raster_check.h"
#include "tr_test.h"

static const char *shared;



/* ---- the independent reference: MFD in double ------------------------------------- */

static const int nrow[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1}, ncol[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};

/* Weight of the flow down `rise` to neighbour k (odd: cardinal). */
static double ref_weight(int method, double expo, double rise, int k) {
  if (!(rise > 0)) return 0;
  const double dist = (k & 1) ? 1.0 : sqrt(2.0), len = (k & 1) ? 0.5 : 0.354, g = rise / dist;
  if (method == 2) return pow(g, expo);
  return pow(g * len, method == 0 ? 1.0 : expo);
}

typedef struct {
  const float *z;
  int rows, cols, method;
  double expo, *memo;
} ref_t;

/* share of cell n's flow that reaches its neighbour in direction k */
static double ref_share(const ref_t *R, int n, int k) {
  const int r = n / R->cols, c = n % R->cols;
  if (r == 0 || c == 0 || r == R->rows - 1 || c == R->cols - 1) return 0;
  double sum = 0, mine = 0;
  for (int j = 1; j <= 8; j++) {
    const double w = ref_weight(R->method, R->expo, (double)R->z[n] - R->z[(r + nrow[j]) * R->cols + c + ncol[j]], j);
    sum += w;
    if (j == k) mine = w;
  }
  return sum > 0 ? mine / sum : 0;
}

static double ref_acc(const ref_t *R, int i) {
  if (R->memo[i] >= 0) return R->memo[i];
  const int r = i / R->cols, c = i % R->cols;
  double s = 1;
  for (int k = 1; k <= 8; k++) {
    const int rr = r + nrow[k], cc = c + ncol[k];
    if (rr < 0 || rr >= R->rows || cc < 0 || cc >= R->cols) continue;
    const double p = ref_share(R, rr * R->cols + cc, k > 4 ? k - 4 : k + 4);
    if (p > 0) s += p * ref_acc(R, rr * R->cols + cc);
  }
  return R->memo[i] = s;
}

static int test_cone_analytic(void) {
  const int rows = 43, cols = 39;
  float *z = malloc(sizeof(float) * rows * cols);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) z[r * cols + c] = (float)(500.0 - 3.0 * hypot(r - 20.3, c - 17.6));
  ASSERT(!write_dem(opath("cone.tif"), rows, cols, 10.0, z, 0, 0));
  static const char *const m[] = {"quinn", "holmgren", "freeman"};
  static const double ex[] = {1.0, 4.0, 1.1};
  double *memo = malloc(sizeof(double) * rows * cols);
  for (int k = 0; k < 3; k++) {
    char a[2048];
    snprintf(a, sizeof a, "'%s' --filled --method %s --acc '%s' --tile-size 16", opath("cone.tif"), m[k],
             opath("cacc.tif"));
    ASSERT_EQ_INT(run(a), 0);
    rc_raster A;
    ASSERT(!rc_load(opath("cacc.tif"), &A));
    ASSERT(A.type == GDT_Float64 && A.has_nodata && A.nodata == -1);
    ref_t R = {z, rows, cols, k, ex[k], memo};
    for (int i = 0; i < rows * cols; i++) memo[i] = -1;
    double total_edge = 0;
    for (int i = 0; i < rows * cols; i++) {
      const double want = ref_acc(&R, i);
      ASSERT_NEAR(A.v[i], want, 1e-5 * want);
      const int r = i / cols, c = i % cols;
      if (r == 0 || c == 0 || r == rows - 1 || c == cols - 1) total_edge += A.v[i];
    }
    /* everything leaves at the edge: the edge cells hold every cell once */
    ASSERT_NEAR(total_edge, (double)rows * cols, 1e-6 * rows * cols);
    rc_free(&A);
  }
  free(memo);
  free(z);
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

static int same_file(const char *a, const char *b, const char *tag) {
  rc_raster A, B;
  if (rc_load(opath(a), &A) || rc_load(opath(b), &B)) return 1;
  int same = A.rows == B.rows && A.cols == B.cols;
  for (int64_t i = 0; same && i < (int64_t)A.rows * A.cols; i++) same = memcmp(&A.v[i], &B.v[i], sizeof A.v[i]) == 0;
  rc_free(&A);
  rc_free(&B);
  if (!same) fprintf(stderr, "%s: %s differs from %s\n", tag, b, a);
  return !same;
}

static int run_m(const char *prefix, const char *method, const char *out, const char *flags) {
  char a[4096];
  snprintf(a, sizeof a, "'%s' --method %s --acc '%s' %s", opath("bumpy.tif"), method, opath(out), flags);
  if (!prefix[0]) return run(a);
  char c[8192];
  snprintf(c, sizeof c, "%s '%s' flowgraph -q %s 2>%s/err.txt", prefix, tf, a, outdir);
  return rc_run(c, NULL);
}

static int test_same_bytes(void) {
  ASSERT(!make_bumpy(opath("bumpy.tif")));
  static const char *const methods[] = {"holmgren", "quinn", "freeman --freeman-p 1.7"};
  for (int m = 0; m < 3; m++) {
    ASSERT_EQ_INT(run_m("", methods[m], "m0.tif", "--threads 1"), 0);
    rc_raster S;
    ASSERT(!rc_load(opath("m0.tif"), &S));
    int64_t nodata = 0;
    double big = 0;
    for (int64_t i = 0; i < (int64_t)S.rows * S.cols; i++) {
      nodata += rc_is_nodata(&S, S.v[i]);
      if (S.v[i] > big) big = S.v[i];
    }
    rc_free(&S);
    ASSERT_EQ_INT((int)nodata, 24); /* the hole alone: flats and the pit drain */
    ASSERT(big > 500);
    static const char *const flags[] = {"--threads 2",
                                        "--tile-size 32",
                                        "--tile-size 47 --threads 2 --schedule ap",
                                        "--tile-size 40 --schedule bsp",
                                        "--tile-size 33 --schedule ssp --staleness 1",
                                        "--ft dual --tile-size 50",
                                        "--ft replay --tile-size 50",
                                        "--mem 120M --tile-size 32",
                                        "--ft dual --inject flip:p=0.3,seed=1 --tile-size 40",
                                        "--ft replay --ft-max-errors 1000 --inject flip-launch:tile=-1,launch=0 "
                                        "--tile-size 40"};
    const size_t nf = m == 0 ? sizeof flags / sizeof flags[0] : 3;
    for (size_t i = 0; i < nf; i++) {
      ASSERT_EQ_INT(run_m("", methods[m], "m1.tif", flags[m == 0 ? i : i + 1]), 0);
      ASSERT(!same_file("m0.tif", "m1.tif", flags[m == 0 ? i : i + 1]));
    }
  }
  /* --units area: each value the cells' times the cell area |gt[1] gt[5]| */
  static const char *const both[] = {"holmgren", "rho8"};
  for (int m = 0; m < 2; m++) {
    ASSERT_EQ_INT(run_m("", both[m], "c0.tif", "--tile-size 45"), 0);
    ASSERT_EQ_INT(run_m("", both[m], "a0.tif", "--units area --ft replay"), 0);
    rc_raster C, A;
    ASSERT(!rc_load(opath("c0.tif"), &C) && !rc_load(opath("a0.tif"), &A));
    const double area = fabs(C.gt[1] * C.gt[5]);
    ASSERT(area > 1.0);
    for (int64_t i = 0; i < (int64_t)C.rows * C.cols; i++)
      ASSERT(rc_is_nodata(&C, C.v[i]) ? rc_is_nodata(&A, A.v[i]) : A.v[i] == C.v[i] * area);
    rc_free(&C);
    rc_free(&A);
  }
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0) {
    ASSERT_EQ_INT(run_m("", "holmgren", "m0.tif", ""), 0);
    ASSERT_EQ_INT(run_m("mpirun --allow-run-as-root --oversubscribe -n 3", "holmgren", "m1.tif", "--tile-size 40"), 0);
    ASSERT(!same_file("m0.tif", "m1.tif", "mpirun -n 3"));
  }
  return 0;
}

/* ---- Rho8 --------------------------------------------------------------------------- */

/* The draw as terrafort(1) states it: SplitMix64 of seed ^ (8 cell + m), m
 * the neighbour in RichDEM's order (W, NW, N, NE, E, SE, S, SW), the top 53
 * bits over 2^53. Written here from that statement, not from the library. */
static double rho8_draw(uint64_t seed, int64_t cell, int m) {
  uint64_t z = (seed ^ ((uint64_t)cell * 8 + (uint64_t)m)) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return ldexp((double)(z >> 11), -53);
}

/* RichDEM's order as (row, col) offsets: W, NW, N, NE, E, SE, S, SW. */
static const int rd_dr[8] = {0, -1, -1, -1, 0, 1, 1, 1}, rd_dc[8] = {-1, -1, 0, 1, 1, 1, 0, -1};

/* Sequential Rho8 on a DEM without flats: each interior cell's receiver
 * (index into rd_*, -1 none), then the accumulation in descending elevation
 * (a receiver is strictly lower). *ndiag / *nmoving: diagonal receivers and
 * cells with one. */
static double *rho8_reference(const float *z, int rows, int cols, uint64_t seed, int64_t *ndiag, int64_t *nmoving) {
  const int64_t n = (int64_t)rows * cols;
  int *to = malloc(sizeof(int) * (size_t)n);
  double *acc = malloc(sizeof(double) * (size_t)n);
  int64_t *order = malloc(sizeof(int64_t) * (size_t)n);
  *ndiag = *nmoving = 0;
  for (int64_t i = 0; i < n; i++) {
    acc[i] = 1.0;
    order[i] = i;
    to[i] = -1;
    const int r = (int)(i / cols), c = (int)(i % cols);
    if (r == 0 || c == 0 || r == rows - 1 || c == cols - 1) continue;
    double best = 0.0;
    for (int m = 0; m < 8; m++) {
      const float zn = z[(r + rd_dr[m]) * cols + c + rd_dc[m]];
      if (!(zn < z[i])) continue;
      double rho = (double)(z[i] - zn);
      if (rd_dr[m] && rd_dc[m]) rho *= 1.0 / (2.0 - rho8_draw(seed, i, m));
      if (rho > best) best = rho, to[i] = m;
    }
    if (to[i] >= 0) (*nmoving)++, *ndiag += rd_dr[to[i]] && rd_dc[to[i]];
  }
  /* descending elevation (shell sort, gaps halving) */
  for (int64_t gap = n / 2; gap > 0; gap /= 2)
    for (int64_t a = gap; a < n; a++)
      for (int64_t b = a; b >= gap && z[order[b - gap]] < z[order[b]]; b -= gap) {
        const int64_t t = order[b];
        order[b] = order[b - gap];
        order[b - gap] = t;
      }
  for (int64_t k = 0; k < n; k++) {
    const int64_t i = order[k];
    if (to[i] < 0) continue;
    const int r = (int)(i / cols), c = (int)(i % cols);
    acc[(r + rd_dr[to[i]]) * cols + c + rd_dc[to[i]]] += acc[i];
  }
  free(to);
  free(order);
  return acc;
}

/* A plane falling a = 1 per cell east and b = 0.375 north (exact in
 * Float32): terrafort's Rho8 equals the sequential one above cell for cell,
 * for any settings and ranks; the diagonal (NE) is taken by a share of the
 * cells within 4 standard deviations of b / a (Fairfield & Leymarie's
 * point); another seed gives other bytes; on a DEM with flats, a pit and a
 * hole the bytes are the same for any settings too. */
static int test_rho8(void) {
  const int rows = 240, cols = 260;
  float *z = malloc(sizeof(float) * rows * cols);
  ASSERT(z != NULL);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) z[r * cols + c] = 1000.0f - (float)c + 0.375f * (float)r;
  ASSERT(!write_dem(opath("plane.tif"), rows, cols, 10.0, z, 0, 0.0f));
  int64_t ndiag, nmoving;
  double *ref = rho8_reference(z, rows, cols, 1, &ndiag, &nmoving);
  const double p = (double)ndiag / (double)nmoving, sigma = sqrt(0.375 * 0.625 / (double)nmoving);
  fprintf(stderr, "rho8 plane: %lld of %lld cells take the diagonal (%.4f; b / a = 0.375, sigma %.4f)\n",
          (long long)ndiag, (long long)nmoving, p, sigma);
  ASSERT(fabs(p - 0.375) < 4 * sigma);
  char a[4096];
  for (size_t f = 0; f < FK_NSETTINGS; f++) {
    snprintf(a, sizeof a, "'%s' --filled --method rho8 --acc '%s' %s", opath("plane.tif"), opath("r8.tif"), fk_settings[f]);
    ASSERT_EQ_INT(run(a), 0);
    rc_raster R;
    ASSERT(!rc_load(opath("r8.tif"), &R));
    int64_t off = 0;
    for (int64_t i = 0; i < (int64_t)rows * cols; i++) off += R.v[i] != ref[i];
    rc_free(&R);
    if (off) fprintf(stderr, "rho8 %s: %lld cells differ from the sequential Rho8\n", fk_settings[f], (long long)off);
    ASSERT_EQ_INT((int)off, 0);
  }
  free(ref);
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0) {
    char c[8192];
    snprintf(c, sizeof c,
             "mpirun --allow-run-as-root --oversubscribe -n 3 '%s' flowgraph -q '%s' --filled --method rho8 --acc '%s' "
             "--tile-size 40 2>%s/err.txt",
             tf, opath("plane.tif"), opath("r8m.tif"), outdir);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(!same_file("r8.tif", "r8m.tif", "rho8 mpirun -n 3"));
  }
  /* another seed: other draws, the reference with that seed */
  snprintf(a, sizeof a, "'%s' --filled --method rho8 --seed 12345 --acc '%s'", opath("plane.tif"), opath("r8s.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(same_file("r8.tif", "r8s.tif", "another seed") != 0);
  ref = rho8_reference(z, rows, cols, 12345, &ndiag, &nmoving);
  rc_raster S;
  ASSERT(!rc_load(opath("r8s.tif"), &S));
  for (int64_t i = 0; i < (int64_t)rows * cols; i++) ASSERT(S.v[i] == ref[i]);
  rc_free(&S);
  free(ref);
  free(z);
  /* flats, a pit and a hole: the flats drain by their angles, same bytes */
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  ASSERT_EQ_INT(run_m("", "rho8", "r0.tif", "--threads 1"), 0);
  static const char *const more[] = {"--threads 2 --tile-size 29", "--tile-size 40 --schedule ap",
                                     "--mem 120M --tile-size 32"};
  for (size_t f = 0; f < sizeof more / sizeof more[0]; f++) {
    ASSERT_EQ_INT(run_m("", "rho8", "r1.tif", more[f]), 0);
    ASSERT(!same_file("r0.tif", "r1.tif", more[f]));
  }
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
  if (!msg || !strstr(msg, needle) || strchr(msg, '\n') != strrchr(msg, '\n')) {
    fprintf(stderr, "'%s': expected one line with '%s' in: %s\n", args, needle, msg ? msg : "(none)");
    return 1;
  }
  return 0;
}

static int test_bad_options(void) {
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  ASSERT(!bad("'%s' --method mfd --acc '%s'", "--method: 'mfd' is not one of d8, dinf, quinn, holmgren, freeman, rho8"));
  ASSERT(!bad("'%s' --method quinn --seed 3 --acc '%s'", "--seed goes with --method rho8"));
  ASSERT(!bad("'%s' --method rho8 --seed -1 --acc '%s'", "--seed"));
  ASSERT(!bad("'%s' --method rho8 --seed x --acc '%s'", "--seed"));
  ASSERT(!bad("'%s' --method rho8 --streams '%s'", "--streams does not go with --method rho8"));
  ASSERT(!bad("'%s' --method holmgren --holmgren-x 0.5 --acc '%s'", "--holmgren-x: 0.5 is out of range [1, 100]"));
  ASSERT(!bad("'%s' --method holmgren --holmgren-x 101 --acc '%s'", "--holmgren-x: 101 is out of range [1, 100]"));
  ASSERT(!bad("'%s' --method freeman --freeman-p 0 --acc '%s'", "--freeman-p: 0 is out of range (0, 100]"));
  ASSERT(!bad("'%s' --method freeman --freeman-p nan --acc '%s'", "--freeman-p"));
  ASSERT(!bad("'%s' --method quinn --streams '%s'", "--streams does not go with --method quinn"));
  ASSERT(!bad("'%s' --method quinn --acc '%s' --dir %2$s.p.tif", "--dir does not go with --method quinn"));
  ASSERT(!bad("'%s' --method freeman --acc '%s' -nc", "--no-edge-check does not go with --method freeman"));
  ASSERT(!bad("'%s' --method quinn --acc '%s' --acc-type Float32", "--acc-type Float32 does not go"));
  ASSERT(!bad("'%s' --method quinn --sca '%s'", "--sca does not go with --method quinn"));
  ASSERT(!bad("--dir-in '%s' --method quinn --acc '%s'", "--dir-in does not go with --method quinn"));
  ASSERT(!exists(opath("bad.tif.p.tif")));
  return 0;
}

/* ---- RichDEM ----------------------------------------------------------------------- */

typedef struct {
  const float *z;
  const uint8_t *flat;
} order_ctx;
static order_ctx g_ord;

/* higher first; at one elevation flat cells first */
static int by_elevation(const void *a, const void *b) {
  const int i = *(const int *)a, j = *(const int *)b;
  const float zi = g_ord.z[i], zj = g_ord.z[j];
  if (zi != zj) return zi > zj ? -1 : 1;
  if (g_ord.flat[i] != g_ord.flat[j]) return g_ord.flat[i] ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* The cells to compare (1): valid, not flat, no flat upstream (the top of the
 * file); counts of flat and compared cells. */
static uint8_t *comparable(const rc_raster *D, int64_t *nflat, int64_t *ncmp) {
  const int rows = D->rows, cols = D->cols;
  const int64_t n = (int64_t)rows * cols;
  float *z = malloc(sizeof(float) * n);
  uint8_t *flat = calloc(n, 1), *taint = calloc(n, 1), *ok = calloc(n, 1);
  int *idx = malloc(sizeof(int) * n);
  for (int64_t i = 0; i < n; i++) z[i] = rc_is_nodata(D, D->v[i]) ? NAN : (float)D->v[i];
  *nflat = *ncmp = 0;
  for (int64_t i = 0; i < n; i++) {
    const int r = (int)(i / cols), c = (int)(i % cols);
    idx[i] = (int)i;
    if (isnan(z[i]) || r == 0 || c == 0 || r == rows - 1 || c == cols - 1) continue;
    int lower = 0;
    for (int k = 1; k <= 8; k++) lower |= z[(r + nrow[k]) * cols + c + ncol[k]] < z[i];
    flat[i] = taint[i] = !lower;
    *nflat += flat[i];
  }
  g_ord = (order_ctx){z, flat};
  for (int64_t i = 0; i < n; i++)
    if (isnan(z[i])) z[i] = -INFINITY;
  qsort(idx, (size_t)n, sizeof *idx, by_elevation);
  for (int64_t m = 0; m < n; m++) {
    const int i = idx[m], r = i / cols, c = i % cols;
    if (!taint[i] || r == 0 || c == 0 || r == rows - 1 || c == cols - 1) continue;
    for (int k = 1; k <= 8; k++) {
      const int j = (r + nrow[k]) * cols + c + ncol[k];
      if (z[j] > -INFINITY && (z[j] < z[i] || (flat[i] && z[j] <= z[i]))) taint[j] = 1;
    }
  }
  for (int64_t i = 0; i < n; i++) {
    ok[i] = z[i] > -INFINITY && !taint[i];
    *ncmp += ok[i];
  }
  free(z);
  free(flat);
  free(taint);
  free(idx);
  return ok;
}

static int test_richdem(void) {
  static const char *const dems[] = {"loganvrt", "enogeo"};
  static const int64_t want_flat[] = {2136, 20050}, want_cmp[] = {115849, 358050};
  static const struct {
    const char *file, *flags;
    double tol;
  } M[] = {{"quinn", "--method quinn", 1e-14},
           {"holmgren", "--method holmgren", 1e-14},
           {"freeman", "--method freeman --freeman-p 1.10000002384185791015625", 1e-14},
           {"freeman", "--method freeman", 1e-6}};
  char probe[1024];
  snprintf(probe, sizeof probe, "%s/richdem/loganvrt/acc_quinn.tif", shared);
  if (!exists(probe)) return fprintf(stderr, "SKIP: no RichDEM outputs under %s\n", shared), 0;
  for (int d = 0; d < 2; d++) {
    char fel[1024];
    snprintf(fel, sizeof fel, "%s/taudem/%s/fel.tif", shared, dems[d]);
    rc_raster D;
    ASSERT(!rc_load(fel, &D));
    int64_t nflat, ncmp;
    uint8_t *ok = comparable(&D, &nflat, &ncmp);
    fprintf(stderr, "%s: %lld flat cells, %lld compared\n", dems[d], (long long)nflat, (long long)ncmp);
    ASSERT(nflat == want_flat[d] && ncmp == want_cmp[d]);
    for (size_t m = 0; m < sizeof M / sizeof M[0]; m++) {
      char a[4096], ref[1200];
      snprintf(a, sizeof a, "--filled '%s' %s --acc '%s' --tile-size 100", fel, M[m].flags, opath("r_acc.tif"));
      ASSERT_EQ_INT(run(a), 0);
      snprintf(ref, sizeof ref, "%s/richdem/%s/acc_%s.tif", shared, dems[d], M[m].file);
      rc_raster A, B;
      ASSERT(!rc_load(opath("r_acc.tif"), &A) && !rc_load(ref, &B));
      ASSERT(A.rows == B.rows && A.cols == B.cols && A.rows == D.rows && A.cols == D.cols);
      const double area = fabs(B.gt[1] * B.gt[5]);
      int64_t differ = 0, nodata_mismatch = 0;
      double max_rel = 0;
      for (int64_t i = 0; i < (int64_t)A.rows * A.cols; i++) {
        if (rc_is_nodata(&A, A.v[i]) != rc_is_nodata(&B, B.v[i])) nodata_mismatch++;
        if (!ok[i]) continue;
        const double want = B.v[i] / area, rel = fabs(A.v[i] - want) / want;
        differ += A.v[i] != want;
        if (rel > max_rel) max_rel = rel;
      }
      fprintf(stderr, "%s %s: %lld of %lld compared cells differ, max relative %.3g; %lld nodata on one side\n",
              dems[d], M[m].flags, (long long)differ, (long long)ncmp, max_rel, (long long)nodata_mismatch);
      ASSERT(max_rel < M[m].tol && nodata_mismatch == 0);
      rc_free(&A);
      rc_free(&B);
    }
    free(ok);
    rc_free(&D);
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
  snprintf(outdir, sizeof outdir, "flow_mfd_out");
  mkdir(outdir, 0755);
  if (argc > 4 && !strcmp(argv[4], "test_richdem")) {
    char p[1024];
    snprintf(p, sizeof p, "%s/richdem/loganvrt/acc_quinn.tif", shared);
    if (!exists(p)) return fprintf(stderr, "SKIP: no RichDEM outputs under %s\n", shared), 77;
  }
  static const tr_test_case cases[] = {TR_TEST(test_cone_analytic), TR_TEST(test_same_bytes), TR_TEST(test_rho8),
                                       TR_TEST(test_bad_options), TR_TEST(test_richdem)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
