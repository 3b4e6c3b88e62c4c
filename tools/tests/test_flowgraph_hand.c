/*
 * test_flowgraph_hand.c - `terrafort flowgraph --hand / --d8-dist`: height
 * above the nearest drainage (TauDEM dinfdistdown -m ave v) and the D8 path
 * length to the streams (TauDEM d8hdisttostrm), the "dist_down" program;
 * `--plen / --tlen / --gord`: upslope path lengths and grid order (TauDEM
 * gridnet), the "d8_len" program.
 *
 * - on tilted planes with streams along a column (a plane falling east: D8
 *   east everywhere, so the accumulation of column c is c and the stream
 *   cells at --threshold T are the columns >= T): the D8 distance is
 *   (T - c) x cell exactly; HAND against an independent recursion in this
 *   file (D-infinity proportions from the analytic angle, in double, with
 *   TauDEM's rule that a cell draining into nodata is nodata), and equal to
 *   the drop z(c) - z(T) when the plane falls due east; on those planes
 *   plen = tlen = (c - 1) x cell and gord 1 (one chain per row);
 * - plen, tlen and gord against an independent sequential gridnet in this
 *   file (Kahn's order over the --dir output, tlen in double) on a DEM with
 *   pits and flats;
 * - the same bytes for every thread count, tile size, schedule, --ft mode,
 *   --mem and (when mpirun is there) rank count, on a DEM with pits, flats
 *   and a NoData hole; HAND's tiles spilled out of core (testdata's
 *   demo.tif, --mem 104M) give the in-memory bytes; the same HAND whichever way its inputs come
 *   (--method d8, --method dinf --ang, --dir-in with --filled-in);
 * - TauDEM dinfdistdown's form (the angles, filled DEM and streams given):
 *   the HAND of a run from that filled DEM, for any settings; the given
 *   streams also feed --d8-dist; fewer streams given raise HAND, never
 *   lower it; from TauDEM's own ang.tif, fel.tif, src.tif: its hand.tif
 *   byte for byte;
 * - bad options: one line, exit 2, no output left; no stream cell (a
 *   threshold above every accumulation): one line, exit 3, no output left;
 * - against TauDEM 5.4's hand.tif, d8dist.tif, plen.tif, tlen.tif and
 *   gord.tif for the two DEMs of ../shared/data/taudem (exit 77, skipped,
 *   when absent). Measured and held as bounds:
 *     from TauDEM's p.tif and fel.tif (--dir-in, --filled-in): the streams
 *       are src.tif, and every product is the same bytes and nodata cells
 *       on both DEMs (the D8 distance and tlen also with --mem low enough
 *       that dist_down and d8_len spill tiles on enogeo). The angles made
 *       here from fel.tif differ from TauDEM's ang.tif on 6 flat cells of loganvrt and 214 of enogeo
 *       (test_flowgraph_dinf.c): every one of them lies level with the
 *       stream it drains to (HAND 0 on both sides), so HAND does not change;
 *     from the DEMs themselves (fill, flats, D8 and D-infinity here): HAND
 *       is still the same bytes on both DEMs; the D8 distance keeps the
 *       nodata cells but differs on 488 cells of loganvrt and 10154 of
 *       enogeo, downstream of the flat cells whose D8 direction differs from
 *       p.tif (45 and 980: Barnes et al.'s flat routing here, Garbrecht &
 *       Martz's in TauDEM), which also moves 30 and 572 stream cells;
 *     plen, tlen, gord: TauDEM's bytes from p.tif; from the DEMs the same
 *       nodata cells, and downstream of those flat cells 147 / 741 / 58
 *       cells differ on loganvrt, 4571 / 9862 / 1150 on enogeo.
 */
#include <cpl_conv.h>
#include <gdal.h>
#include <math.h>
#include <ogr_srs_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flow_kit.h"
#include "raster_check.h"
#include "tr_test.h"

static const char *shared, *testdata;


/* ---- the independent reference: HAND on a plane, in double ------------------------- */

/* Neighbour k (1 = E, counter-clockwise) as (row, col) offsets, and its
 * direction angle on a square grid. */
static const int nrow[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1}, ncol[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};

/* The share of flow at angle a that reaches neighbour k (square cells: the
 * directions are k - 1 eighths of a turn apart), linear in the angle. */
static double share(double a, int k) {
  const double ak = (k - 1) * M_PI / 4, lo = ak - M_PI / 4, hi = ak + M_PI / 4;
  double x = a;
  if (k == 1 && x > M_PI) x -= 2 * M_PI;
  if (x <= lo || x >= hi) return 0;
  const double p = 1 - fabs(x - ak) / (M_PI / 4);
  return p < 1e-5 ? 0 : p;
}

/* HAND of cell i: 0 on a stream, else the proportion-weighted mean of drop
 * plus the receiver's HAND; NAN (nodata) when a receiver is an edge cell or
 * nodata. */
static double ref_hand(const float *z, const int *stream, int rows, int cols, double a, double *memo, int *done,
                       int i) {
  if (done[i]) return memo[i];
  const int r = i / cols, c = i % cols;
  double v = NAN;
  if (r == 0 || c == 0 || r == rows - 1 || c == cols - 1)
    v = NAN;
  else if (stream[i])
    v = 0;
  else {
    double num = 0, den = 0;
    int con = 0;
    for (int k = 1; k <= 8; k++) {
      const double p = share(a, k);
      if (p <= 0) continue;
      const int n = (r + nrow[k]) * cols + c + ncol[k];
      const double h = ref_hand(z, stream, rows, cols, a, memo, done, n);
      if (isnan(h)) con = 1;
      num += p * ((double)z[i] - (double)z[n] + h);
      den += p;
    }
    v = con ? NAN : num / den;
  }
  done[i] = 1;
  return memo[i] = v;
}

/* A plane falling gx per metre east and gs south (gs < 0.4 gx: D8 east
 * everywhere), streams at --threshold T: the columns >= T. */
static int check_plane(double gx, double gs, double cell, int T) {
  const int rows = 24, cols = 40;
  float *z = malloc(sizeof(float) * rows * cols);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) z[r * cols + c] = (float)(1000.0 - gx * c * cell - gs * r * cell);
  ASSERT(!write_dem(opath("plane.tif"), rows, cols, cell, z, 0, 0));
  char a[2048];
  snprintf(a, sizeof a,
           "'%s' --filled --threshold %d --hand '%s' --d8-dist '%s' --streams '%s' --plen '%s' --tlen '%s' --gord '%s' "
           "--tile-size 9",
           opath("plane.tif"), T, opath("phand.tif"), opath("pdist.tif"), opath("psrc.tif"), opath("pplen.tif"),
           opath("ptlen.tif"), opath("pgord.tif"));
  ASSERT_EQ_INT(run(a), 0);
  rc_raster PL, TL, GO;
  ASSERT(!rc_load(opath("pplen.tif"), &PL) && !rc_load(opath("ptlen.tif"), &TL) && !rc_load(opath("pgord.tif"), &GO));
  ASSERT(PL.type == GDT_Float32 && GO.type == GDT_Int16 && PL.nodata == -1 && TL.nodata == -1 && GO.nodata == -1);
  for (int i = 0; i < rows * cols; i++) {
    const int r = i / cols, c = i % cols, edge = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
    if (edge) {
      ASSERT(rc_is_nodata(&PL, PL.v[i]) && rc_is_nodata(&TL, TL.v[i]) && rc_is_nodata(&GO, GO.v[i]));
      continue;
    }
    ASSERT_NEAR(PL.v[i], (c - 1) * cell, 1e-4 * cell * c);
    ASSERT_NEAR(TL.v[i], (c - 1) * cell, 1e-4 * cell * c);
    ASSERT(GO.v[i] == 1);
  }
  rc_free(&PL);
  rc_free(&TL);
  rc_free(&GO);
  rc_raster H, D, S;
  ASSERT(!rc_load(opath("phand.tif"), &H) && !rc_load(opath("pdist.tif"), &D) && !rc_load(opath("psrc.tif"), &S));
  ASSERT(H.type == GDT_Float32 && D.type == GDT_Float32 && H.has_nodata && H.nodata < -3.4e38 && D.nodata == H.nodata);
  int *stream = calloc((size_t)rows * cols, sizeof *stream), *done = calloc((size_t)rows * cols, sizeof *done);
  double *memo = malloc(sizeof(double) * rows * cols);
  double ang = atan2(-gs, gx);
  if (ang < 0) ang += 2 * M_PI;
  int64_t valued = 0;
  for (int i = 0; i < rows * cols; i++) {
    const int r = i / cols, c = i % cols, edge = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
    stream[i] = !edge && c >= T;
    ASSERT(edge ? rc_is_nodata(&S, S.v[i]) : S.v[i] == stream[i]);
    /* D8: east along the row to column T */
    if (edge)
      ASSERT(rc_is_nodata(&D, D.v[i]));
    else
      ASSERT_NEAR(D.v[i], c >= T ? 0.0 : (T - c) * cell, 1e-4 * cell);
  }
  for (int i = 0; i < rows * cols; i++) {
    const double h = ref_hand(z, stream, rows, cols, ang, memo, done, i);
    if (isnan(h)) {
      ASSERT(rc_is_nodata(&H, H.v[i]));
      continue;
    }
    valued++;
    ASSERT(!rc_is_nodata(&H, H.v[i]));
    ASSERT_NEAR(H.v[i], h, 1e-5 * fmax(h, 1.0) + 2e-4);
    if (gs == 0) ASSERT_NEAR(H.v[i], (double)z[i] - z[i / cols * cols + (i % cols < T ? T : i % cols)], 1e-3);
  }
  ASSERT(valued > rows * cols / 3);
  free(z);
  free(stream);
  free(done);
  free(memo);
  rc_free(&H);
  rc_free(&D);
  rc_free(&S);
  return 0;
}

static int test_plane_analytic(void) {
  if (check_plane(0.1, 0.0, 10.0, 12)) return 1; /* due east: HAND is the drop to column T */
  if (check_plane(0.2, 0.05, 5.0, 20)) return 1; /* east-south-east: split between E and SE */
  return check_plane(0.3, 0.1, 30.0, 7);
}

/* ---- the independent reference: gridnet over a D8 raster ---------------------------- */

/* plen, tlen, gord of every cell of the TauDEM-coded direction raster D
 * (cells of size cell), in Kahn's order from the cells without donors. */
static int ref_gridnet(const rc_raster *D, double cell, double *plen, double *tlen, int *gord) {
  const int rows = D->rows, cols = D->cols, n = rows * cols;
  int *dir = malloc(sizeof(int) * n), *indeg = calloc((size_t)n, sizeof(int)), *q = malloc(sizeof(int) * n);
  int *a1 = calloc((size_t)n, sizeof(int)), *a2 = calloc((size_t)n, sizeof(int));
  for (int i = 0; i < n; i++) {
    dir[i] = rc_is_nodata(D, D->v[i]) ? 0 : (int)D->v[i];
    plen[i] = tlen[i] = 0;
    gord[i] = -1;
  }
  for (int i = 0; i < n; i++)
    if (dir[i]) indeg[(i / cols + nrow[dir[i]]) * cols + i % cols + ncol[dir[i]]]++;
  int head = 0, tail = 0;
  for (int i = 0; i < n; i++)
    if (dir[i] && !indeg[i]) q[tail++] = i;
  while (head < tail) {
    const int i = q[head++];
    gord[i] = a2[i] + 1 > a1[i] ? a2[i] + 1 : a1[i];
    const int k = dir[i], r = i / cols + nrow[k], c = i % cols + ncol[k], j = r * cols + c;
    if (r < 0 || c < 0 || r >= rows || c >= cols || !dir[j]) continue;
    const double len = (k % 2 ? 1.0 : sqrt(2.0)) * cell;
    if (plen[i] + len > plen[j]) plen[j] = plen[i] + len;
    tlen[j] += tlen[i] + len;
    if (gord[i] >= a1[j]) {
      a2[j] = a1[j];
      a1[j] = gord[i];
    } else if (gord[i] > a2[j])
      a2[j] = gord[i];
    if (--indeg[j] == 0) q[tail++] = j;
  }
  const int all = tail;
  int valid = 0;
  for (int i = 0; i < n; i++) valid += dir[i] != 0;
  free(dir);
  free(indeg);
  free(q);
  free(a1);
  free(a2);
  return all == valid ? 0 : -1; /* no cycle */
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

/* Are rasters a and b the same cells (NaN equal to NaN)? */
static int same_raster(const char *a, const char *b, const char *tag) {
  rc_raster A, B;
  if (rc_load(opath(a), &A) || rc_load(opath(b), &B)) return 1;
  int same = A.rows == B.rows && A.cols == B.cols && A.nodata == B.nodata;
  for (int64_t i = 0; same && i < (int64_t)A.rows * A.cols; i++)
    same = A.v[i] == B.v[i] || (isnan(A.v[i]) && isnan(B.v[i]));
  rc_free(&A);
  rc_free(&B);
  if (!same) fprintf(stderr, "%s: %s differs from %s\n", tag, b, a);
  return !same;
}

static int run_all(const char *prefix, const char *flags, int k) {
  char a[4096];
  snprintf(a, sizeof a, "'%s' --threshold 40 --hand '%s' --d8-dist '%s' --plen '%s' --tlen '%s' --gord '%s' %s",
           opath("bumpy.tif"), opath(k ? "h_hand1.tif" : "h_hand0.tif"), opath(k ? "h_dist1.tif" : "h_dist0.tif"),
           opath(k ? "h_plen1.tif" : "h_plen0.tif"), opath(k ? "h_tlen1.tif" : "h_tlen0.tif"),
           opath(k ? "h_gord1.tif" : "h_gord0.tif"), flags);
  if (!prefix[0]) return run(a);
  char c[8192];
  snprintf(c, sizeof c, "%s '%s' flowgraph -q %s 2>%s/err.txt", prefix, tf, a, outdir);
  return rc_run(c, NULL);
}

static int same_products(const char *tag) {
  return same_raster("h_hand0.tif", "h_hand1.tif", tag) || same_raster("h_dist0.tif", "h_dist1.tif", tag) ||
         same_raster("h_plen0.tif", "h_plen1.tif", tag) || same_raster("h_tlen0.tif", "h_tlen1.tif", tag) ||
         same_raster("h_gord0.tif", "h_gord1.tif", tag);
}

static int test_same_bytes(void) {
  ASSERT(!make_bumpy(opath("bumpy.tif")));
  ASSERT_EQ_INT(run_all("", "--threads 1", 0), 0);
  rc_raster H;
  ASSERT(!rc_load(opath("h_hand0.tif"), &H));
  int64_t valid = 0, pos = 0;
  for (int64_t i = 0; i < (int64_t)H.rows * H.cols; i++) {
    valid += !rc_is_nodata(&H, H.v[i]);
    pos += !rc_is_nodata(&H, H.v[i]) && H.v[i] > 0;
  }
  rc_free(&H);
  ASSERT(valid > 10000 && pos > 5000); /* most cells reach a stream */
  static const char *const flags[] = {"--threads 2",
                                      "--tile-size 32",
                                      "--tile-size 47 --threads 2 --schedule ap",
                                      "--tile-size 40 --schedule bsp",
                                      "--tile-size 33 --schedule ssp --staleness 1",
                                      "--tile-size 29 --schedule aap --threads 2",
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
  /* HAND the same whichever way its inputs come */
  char a[4096];
  snprintf(a, sizeof a, "'%s' --method dinf --threshold 40 --ang '%s' --hand '%s' --d8-dist '%s' --tile-size 61",
           opath("bumpy.tif"), opath("h_ang.tif"), opath("h_hand1.tif"), opath("h_dist1.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(!same_raster("h_hand0.tif", "h_hand1.tif", "--method dinf") &&
         !same_raster("h_dist0.tif", "h_dist1.tif", "--method dinf"));
  snprintf(a, sizeof a, "'%s' --threshold 40 --dir '%s' --hand '%s' --tile-size 44", opath("bumpy.tif"),
           opath("h_dir.tif"), opath("h_hand1.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(!same_raster("h_hand0.tif", "h_hand1.tif", "--dir"));
  return 0;
}

static int test_gridnet_reference(void) {
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  char a[4096];
  snprintf(a, sizeof a, "'%s' --dir '%s' --plen '%s' --tlen '%s' --gord '%s' --tile-size 37", opath("bumpy.tif"),
           opath("g_dir.tif"), opath("g_plen.tif"), opath("g_tlen.tif"), opath("g_gord.tif"));
  ASSERT_EQ_INT(run(a), 0);
  rc_raster D, PL, TL, GO;
  ASSERT(!rc_load(opath("g_dir.tif"), &D) && !rc_load(opath("g_plen.tif"), &PL) && !rc_load(opath("g_tlen.tif"), &TL) &&
         !rc_load(opath("g_gord.tif"), &GO));
  const int n = D.rows * D.cols;
  double *plen = malloc(sizeof(double) * n), *tlen = malloc(sizeof(double) * n);
  int *gord = malloc(sizeof(int) * n), maxg = 0;
  ASSERT(!ref_gridnet(&D, 25.0, plen, tlen, gord));
  for (int i = 0; i < n; i++) {
    if (gord[i] < 0) {
      ASSERT(rc_is_nodata(&PL, PL.v[i]) && rc_is_nodata(&TL, TL.v[i]) && rc_is_nodata(&GO, GO.v[i]));
      continue;
    }
    ASSERT_NEAR(PL.v[i], plen[i], 1e-5 * plen[i] + 1e-3);
    ASSERT_NEAR(TL.v[i], tlen[i], 1e-5 * tlen[i] + 1e-3);
    ASSERT(GO.v[i] == gord[i]);
    if (gord[i] > maxg) maxg = gord[i];
  }
  ASSERT(maxg >= 4); /* branching enough to test the order */
  free(plen);
  free(tlen);
  free(gord);
  rc_free(&D);
  rc_free(&PL);
  rc_free(&TL);
  rc_free(&GO);
  return 0;
}

/* Out of core: HAND of testdata's demo.tif (1600 x 1200) with --mem just
 * above the stages' buffers (the directions' ~101 MiB at --threads 2):
 * dist_down's tiles spill (counted in --aap-stats) and the bytes stay. */
static int test_out_of_core(void) {
  char a[4096], dem[1024];
  snprintf(dem, sizeof dem, "%s/demo.tif", testdata);
  snprintf(a, sizeof a, "'%s' --hand '%s' --tile-size 128 --threads 2", dem, opath("o_hand0.tif"));
  ASSERT_EQ_INT(run(a), 0);
  snprintf(a, sizeof a, "'%s' --hand '%s' --tile-size 128 --threads 2 --mem 104M --aap-stats '%s'", dem,
           opath("o_hand1.tif"), opath("o_aap.json"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(!same_raster("o_hand0.tif", "o_hand1.tif", "--mem 104M"));
  const char *js = rc_slurp(opath("o_aap.json"));
  const char *at = js ? strstr(js, "\"program\":\"dist_down\"") : NULL;
  const char *sp = at ? strstr(at, "\"spills\":") : NULL;
  ASSERT(sp && atol(sp + 9) > 0);
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

/* The same for an input that makes no stream: exit 3. */
static int no_streams(const char *args) {
  unlink(opath("bad.tif"));
  char a[2048];
  snprintf(a, sizeof a, args, opath("bumpy.tif"), opath("bad.tif"));
  ASSERT_EQ_INT(run(a), 3);
  ASSERT(!exists(opath("bad.tif")));
  char e[1024];
  snprintf(e, sizeof e, "%s/err.txt", outdir);
  const char *msg = rc_slurp(e);
  ASSERT(msg && strstr(msg, "no stream cell: no accumulation reaches --threshold 1e+09"));
  ASSERT(!strchr(msg, '\n') || strchr(msg, '\n') == msg + strlen(msg) - 1); /* one line */
  return 0;
}

/* Directions with a cycle (two cells pointing at each other, a third
 * draining into them): gridnet's products refuse them, naming a cell. */
static int cycle_refused(void) {
  const int rows = 5, cols = 6;
  int16_t p[30];
  for (int i = 0; i < rows * cols; i++) p[i] = -32768;
  p[2 * cols + 2] = 1; /* E */
  p[2 * cols + 3] = 5; /* W */
  p[1 * cols + 2] = 7; /* S, into the cycle */
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), opath("cycle.tif"), cols, rows, 1, GDT_Int16, NULL);
  ASSERT(ds);
  double gt[6] = {400000, 10, 0, 4600000, 0, -10};
  GDALSetGeoTransform(ds, gt);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  GDALSetRasterNoDataValue(b, -32768);
  ASSERT(GDALRasterIO(b, GF_Write, 0, 0, cols, rows, p, cols, rows, GDT_Int16, 0, 0) == CE_None);
  GDALClose(ds);
  unlink(opath("bad.tif"));
  char a[2048];
  snprintf(a, sizeof a, "--dir-in '%s' --gord '%s' --tile-size 3", opath("cycle.tif"), opath("bad.tif"));
  ASSERT_EQ_INT(run(a), 3);
  ASSERT(!exists(opath("bad.tif")));
  char e[1024];
  snprintf(e, sizeof e, "%s/err.txt", outdir);
  const char *msg = rc_slurp(e);
  ASSERT(msg && strstr(msg, "the flow directions form a cycle: cell (row"));
  return 0;
}

/* TauDEM dinfdistdown's form: the angles, the filled DEM and the streams
 * given (--ang-in, --filled, --streams-in; or -ang -fel -src -dd [-m ave
 * v]): HAND equal to the one a run from that filled DEM makes from its own
 * angles and streams, for any settings; the given streams feed --d8-dist
 * as well; each bad use one line, its exit code, nothing written. */
static int test_given_inputs(void) {
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  char a[4096], c[8192];
  snprintf(c, sizeof c, "'%s' fill -q '%s' '%s'", tf, opath("bumpy.tif"), opath("g_fel.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  snprintf(a, sizeof a, "'%s' --filled --threshold 40 --streams '%s' --hand '%s' --d8-dist '%s'", opath("g_fel.tif"),
           opath("g_src.tif"), opath("g_hand0.tif"), opath("g_dist0.tif"));
  ASSERT_EQ_INT(run(a), 0);
  snprintf(a, sizeof a, "'%s' --filled --method dinf --ang '%s'", opath("g_fel.tif"), opath("g_ang.tif"));
  ASSERT_EQ_INT(run(a), 0);
  for (size_t i = 0; i < FK_NSETTINGS; i++) {
    snprintf(a, sizeof a, "'%s' --filled --ang-in '%s' --streams-in '%s' --hand '%s' %s", opath("g_fel.tif"),
             opath("g_ang.tif"), opath("g_src.tif"), opath("g_hand1.tif"), fk_settings[i]);
    ASSERT_EQ_INT(run(a), 0);
    ASSERT(!same_raster("g_hand0.tif", "g_hand1.tif", fk_settings[i]));
  }
  snprintf(a, sizeof a, "-ang '%s' -fel '%s' -src '%s' -dd '%s' -m ave v", opath("g_ang.tif"), opath("g_fel.tif"),
           opath("g_src.tif"), opath("g_hand2.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(!same_raster("g_hand0.tif", "g_hand2.tif", "dinfdistdown's form"));
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0) {
    snprintf(c, sizeof c,
             "mpirun --allow-run-as-root --oversubscribe -n 3 '%s' flowgraph -q -ang '%s' -fel '%s' -src '%s' -dd '%s' "
             "--tile-size 40 2>%s/err.txt",
             tf, opath("g_ang.tif"), opath("g_fel.tif"), opath("g_src.tif"), opath("g_hand3.tif"), outdir);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(!same_raster("g_hand0.tif", "g_hand3.tif", "mpirun -n 3"));
  }
  /* the given streams feed the D8 distance (and HAND) of a DEM run too */
  snprintf(a, sizeof a, "'%s' --filled --streams-in '%s' --d8-dist '%s' --hand '%s' --tile-size 45", opath("g_fel.tif"),
           opath("g_src.tif"), opath("g_dist1.tif"), opath("g_hand4.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(!same_raster("g_dist0.tif", "g_dist1.tif", "--streams-in --d8-dist"));
  ASSERT(!same_raster("g_hand0.tif", "g_hand4.tif", "--streams-in --hand"));
  /* fewer streams (those of the left half dropped): their cells are no
   * longer 0, the streams kept still are, and no cell gets nearer */
  rc_raster S, H0, H1;
  ASSERT(!rc_load(opath("g_src.tif"), &S));
  float *z = malloc(sizeof(float) * S.rows * S.cols);
  ASSERT(z != NULL);
  int64_t kept = 0, dropped = 0;
  for (int r = 0; r < S.rows; r++)
    for (int k = 0; k < S.cols; k++) {
      const int64_t i = (int64_t)r * S.cols + k;
      const int stream = !rc_is_nodata(&S, S.v[i]) && S.v[i] >= 1;
      z[i] = stream && k >= S.cols / 2 ? 1.0f : 0.0f;
      kept += stream && k >= S.cols / 2;
      dropped += stream && k < S.cols / 2;
    }
  ASSERT(kept > 0 && dropped > 0);
  ASSERT(!write_dem(opath("g_src_half.tif"), S.rows, S.cols, 25.0, z, 0, 0.0f));
  free(z);
  snprintf(a, sizeof a, "'%s' --filled --ang-in '%s' --streams-in '%s' --hand '%s'", opath("g_fel.tif"),
           opath("g_ang.tif"), opath("g_src_half.tif"), opath("g_hand5.tif"));
  ASSERT_EQ_INT(run(a), 0);
  ASSERT(!rc_load(opath("g_hand0.tif"), &H0) && !rc_load(opath("g_hand5.tif"), &H1));
  int64_t raised = 0;
  for (int r = 0; r < S.rows; r++)
    for (int k = 0; k < S.cols; k++) {
      const int64_t i = (int64_t)r * S.cols + k;
      const int stream = !rc_is_nodata(&S, S.v[i]) && S.v[i] >= 1;
      if (stream && k >= S.cols / 2) ASSERT(H1.v[i] == 0.0);
      if (rc_is_nodata(&H0, H0.v[i]) || rc_is_nodata(&H1, H1.v[i])) continue;
      ASSERT(H1.v[i] >= H0.v[i]);
      raised += H1.v[i] > H0.v[i];
    }
  ASSERT(raised > 0);
  rc_free(&S);
  rc_free(&H0);
  rc_free(&H1);
  /* bad uses */
  char fmt[4096];
  snprintf(fmt, sizeof fmt, "--ang-in '%s' --hand '%%2$s' '%%1$s' --filled", opath("g_ang.tif"));
  ASSERT(!bad(fmt, "add --streams-in"));
  snprintf(fmt, sizeof fmt, "--ang-in '%s' --streams-in '%s' --hand '%%2$s'", opath("g_ang.tif"), opath("g_src.tif"));
  ASSERT(!bad(fmt, "needs the filled DEM its angles were made from"));
  snprintf(fmt, sizeof fmt, "--ang-in '%s' --streams-in '%s' --hand '%%2$s' '%%1$s'", opath("g_ang.tif"),
           opath("g_src.tif"));
  ASSERT(!bad(fmt, "needs the filled DEM its angles were made from"));
  snprintf(fmt, sizeof fmt, "--ang-in '%s' --streams-in '%s' --hand '%%2$s' '%%1$s' --filled -nc", opath("g_ang.tif"),
           opath("g_src.tif"));
  ASSERT(!bad(fmt, "its -nc is not supported"));
  snprintf(fmt, sizeof fmt, "-ang '%s' -fel '%%1$s' -src '%s' -dd '%%2$s' -m max v", opath("g_ang.tif"),
           opath("g_src.tif"));
  ASSERT(!bad(fmt, "-m max v: --hand (-dd) is the average vertical drop"));
  ASSERT(!bad("'%s' --acc '%s' -m ave v", "-m ave v goes with --hand"));
  /* no stream cell given; streams on another grid */
  float zero = 0.0f;
  rc_raster F;
  ASSERT(!rc_load(opath("g_fel.tif"), &F));
  float *n = calloc((size_t)F.rows * F.cols, sizeof *n);
  ASSERT(n != NULL);
  ASSERT(!write_dem(opath("g_src_none.tif"), F.rows, F.cols, 25.0, n, 0, zero));
  ASSERT(!write_dem(opath("g_src_other.tif"), F.rows, F.cols, 30.0, n, 0, zero));
  free(n);
  rc_free(&F);
  snprintf(a, sizeof a, "'%s' --filled --ang-in '%s' --streams-in '%s' --hand '%s'", opath("g_fel.tif"),
           opath("g_ang.tif"), opath("g_src_none.tif"), opath("bad.tif"));
  unlink(opath("bad.tif"));
  ASSERT_EQ_INT(run(a), 3);
  ASSERT(!exists(opath("bad.tif")));
  snprintf(c, sizeof c, "%s/err.txt", outdir);
  ASSERT(strstr(rc_slurp(c), "no cell of --streams-in") != NULL);
  snprintf(a, sizeof a, "'%s' --filled --ang-in '%s' --streams-in '%s' --hand '%s'", opath("g_fel.tif"),
           opath("g_ang.tif"), opath("g_src_other.tif"), opath("bad.tif"));
  ASSERT_EQ_INT(run(a), 3);
  ASSERT(!exists(opath("bad.tif")));
  ASSERT(strstr(rc_slurp(c), "is not on the grid of") != NULL);
  return 0;
}

static int test_bad_options(void) {
  ASSERT(!cycle_refused());
  if (!exists(opath("bumpy.tif"))) ASSERT(!make_bumpy(opath("bumpy.tif")));
  ASSERT(!no_streams("'%s' --hand '%s' --threshold 1e9"));
  ASSERT(!no_streams("'%s' --method dinf --d8-dist '%s' --threshold 1e9 --threads 2"));
  ASSERT(!bad("--dir-in '%s' --hand '%s'", "--hand with --dir-in needs the filled DEM's elevations"));
  ASSERT(!bad("-p '%s' -dd '%s'", "--hand with --dir-in needs the filled DEM's elevations"));
  ASSERT(!bad("'%s' --hand '%s' --d8-dist %2$s", "is given for two products"));
  ASSERT(!bad("'%s' --hand '%s' --threshold 0", "--threshold must be positive"));
  ASSERT(!bad("'%s' --method dinf --d8-dist '%s' --acc %2$s.acc", "--acc is a D8 product"));
  ASSERT(!bad("'%s' --method foo --hand '%s'", "--method: 'foo' is not one of d8, dinf"));
  ASSERT(!bad("'%s' --method dinf --ang '%s' --gord %2$s.gord", "--gord is a D8 product"));
  ASSERT(!bad("'%s' --plen '%s' --tlen %2$s", "is given for two products"));
  return 0;
}

/* ---- TauDEM ------------------------------------------------------------------------ */

typedef struct {
  int64_t nodata_mismatch, differ;
  double max_abs;
} cmp_t;

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
    if (na != nb)
      o->nodata_mismatch++;
    else if (!na && a.v[i] != b.v[i]) {
      o->differ++;
      o->max_abs = fmax(o->max_abs, fabs(a.v[i] - b.v[i]));
    }
  }
  rc_free(&a);
  rc_free(&b);
  return 0;
}

/* Stream cells (1) where TauDEM's src.tif has them, the same cells nodata. */
static int same_streams(const char *mine, const char *ref) {
  rc_raster a, b;
  if (rc_load(mine, &a) || rc_load(ref, &b)) return -1;
  int64_t bad = 0;
  for (int64_t i = 0; i < (int64_t)a.rows * a.cols; i++) {
    const int na = rc_is_nodata(&a, a.v[i]), nb = rc_is_nodata(&b, b.v[i]);
    bad += na != nb || (!na && a.v[i] != b.v[i]);
  }
  rc_free(&a);
  rc_free(&b);
  if (bad) fprintf(stderr, "%s: %lld cells differ from %s\n", mine, (long long)bad, ref);
  return bad != 0;
}

static int test_taudem(void) {
  static const char *const dems[] = {"loganvrt", "enogeo"};
  static const char *const inputs[] = {"LoganVRT/output.vrt", "enogeo.tif"};
  char probe[1024];
  snprintf(probe, sizeof probe, "%s/taudem/loganvrt/hydro/hand.tif", shared);
  if (!exists(probe)) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  /* the bounds measured (see the top of the file) */
  static const int64_t dist_max[] = {488, 10154}, plen_max[] = {147, 4571}, tlen_max[] = {741, 9862},
                       gord_max[] = {58, 1150};
  static const char *const len_names[] = {"plen", "tlen", "gord"};
  for (int d = 0; d < 2; d++) {
    char t[1024], a[4096], r[1200];
    snprintf(t, sizeof t, "%s/taudem/%s", shared, dems[d]);
    /* TauDEM's own directions and filled DEM */
    snprintf(a, sizeof a, "-p '%s/p.tif' -fel '%s/fel.tif' -dd '%s' -dist '%s' -src '%s' -thresh 100 --tile-size 70", t,
             t, opath("t_hand.tif"), opath("t_dist.tif"), opath("t_src.tif"));
    ASSERT_EQ_INT(run(a), 0);
    snprintf(r, sizeof r, "%s/src.tif", t);
    ASSERT(!same_streams(opath("t_src.tif"), r));
    cmp_t c;
    snprintf(r, sizeof r, "%s/hydro/hand.tif", t);
    ASSERT(!compare(opath("t_hand.tif"), r, &c));
    fprintf(stderr, "%s hand (p.tif, fel.tif): %lld differ, %lld nodata on one side\n", dems[d], (long long)c.differ,
            (long long)c.nodata_mismatch);
    ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
    /* dinfdistdown's own form over TauDEM's ang.tif, fel.tif and src.tif */
    snprintf(a, sizeof a, "-ang '%s/hydro/ang.tif' -fel '%s/fel.tif' -src '%s/src.tif' -dd '%s' -m ave v --tile-size 80",
             t, t, t, opath("t_hand2.tif"));
    ASSERT_EQ_INT(run(a), 0);
    ASSERT(!compare(opath("t_hand2.tif"), r, &c));
    ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
    snprintf(r, sizeof r, "%s/hydro/d8dist.tif", t);
    ASSERT(!compare(opath("t_dist.tif"), r, &c));
    fprintf(stderr, "%s d8dist (p.tif): %lld differ, %lld nodata on one side\n", dems[d], (long long)c.differ,
            (long long)c.nodata_mismatch);
    ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
    /* gridnet from p.tif */
    snprintf(a, sizeof a, "-p '%s/p.tif' -plen '%s' -tlen '%s' -gord '%s' --tile-size 57", t, opath("t_plen.tif"),
             opath("t_tlen.tif"), opath("t_gord.tif"));
    ASSERT_EQ_INT(run(a), 0);
    for (int k = 0; k < 3; k++) {
      char mine[64];
      snprintf(mine, sizeof mine, "t_%s.tif", len_names[k]);
      snprintf(r, sizeof r, "%s/hydro/%s.tif", t, len_names[k]);
      ASSERT(!compare(opath(mine), r, &c));
      fprintf(stderr, "%s %s (p.tif): %lld differ, %lld nodata on one side\n", dems[d], len_names[k],
              (long long)c.differ, (long long)c.nodata_mismatch);
      ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
    }
    snprintf(r, sizeof r, "%s/hydro/d8dist.tif", t);
    if (d == 1) {
      /* out of core: --mem just above the buffers' minimum (82 MiB at this
       * tile size) spills dist_down's tiles, and the bytes stay */
      snprintf(a, sizeof a, "-p '%s/p.tif' -dist '%s' --mem 84M --tile-size 64 --aap-stats '%s'", t,
               opath("m_dist.tif"), opath("m_aap.json"));
      ASSERT_EQ_INT(run(a), 0);
      ASSERT(!compare(opath("m_dist.tif"), r, &c));
      ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
      const char *js = rc_slurp(opath("m_aap.json"));
      const char *at = js ? strstr(js, "\"program\":\"dist_down\"") : NULL;
      const char *sp = at ? strstr(at, "\"spills\":") : NULL;
      ASSERT(sp && atol(sp + 9) > 0);
      /* and d8_len's */
      snprintf(a, sizeof a, "-p '%s/p.tif' -tlen '%s' --mem 84M --tile-size 64 --aap-stats '%s'", t,
               opath("m_tlen.tif"), opath("m_aap.json"));
      ASSERT_EQ_INT(run(a), 0);
      snprintf(r, sizeof r, "%s/hydro/tlen.tif", t);
      ASSERT(!compare(opath("m_tlen.tif"), r, &c));
      ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
      js = rc_slurp(opath("m_aap.json"));
      at = js ? strstr(js, "\"program\":\"d8_len\"") : NULL;
      sp = at ? strstr(at, "\"spills\":") : NULL;
      ASSERT(sp && atol(sp + 9) > 0);
      snprintf(r, sizeof r, "%s/hydro/d8dist.tif", t);
    }
    /* from the DEM: every step here */
    snprintf(a, sizeof a, "'%s/%s' --hand '%s' --d8-dist '%s' --tile-size 90", shared, inputs[d], opath("u_hand.tif"),
             opath("u_dist.tif"));
    ASSERT_EQ_INT(run(a), 0);
    snprintf(r, sizeof r, "%s/hydro/hand.tif", t);
    ASSERT(!compare(opath("u_hand.tif"), r, &c));
    fprintf(stderr, "%s hand (DEM): %lld differ, %lld nodata on one side\n", dems[d], (long long)c.differ,
            (long long)c.nodata_mismatch);
    ASSERT(c.nodata_mismatch == 0 && c.differ == 0);
    snprintf(r, sizeof r, "%s/hydro/d8dist.tif", t);
    ASSERT(!compare(opath("u_dist.tif"), r, &c));
    fprintf(stderr, "%s d8dist (DEM): %lld differ (max %.4g), %lld nodata on one side\n", dems[d], (long long)c.differ,
            c.max_abs, (long long)c.nodata_mismatch);
    ASSERT(c.nodata_mismatch == 0 && c.differ <= dist_max[d]);
    snprintf(a, sizeof a, "'%s/%s' --plen '%s' --tlen '%s' --gord '%s' --tile-size 80", shared, inputs[d],
             opath("u_plen.tif"), opath("u_tlen.tif"), opath("u_gord.tif"));
    ASSERT_EQ_INT(run(a), 0);
    for (int k = 0; k < 3; k++) {
      char mine[64];
      const int64_t bound = k == 0 ? plen_max[d] : k == 1 ? tlen_max[d] : gord_max[d];
      snprintf(mine, sizeof mine, "u_%s.tif", len_names[k]);
      snprintf(r, sizeof r, "%s/hydro/%s.tif", t, len_names[k]);
      ASSERT(!compare(opath(mine), r, &c));
      fprintf(stderr, "%s %s (DEM): %lld differ (max %.4g), %lld nodata on one side\n", dems[d], len_names[k],
              (long long)c.differ, c.max_abs, (long long)c.nodata_mismatch);
      ASSERT(c.nodata_mismatch == 0 && c.differ <= bound);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TESTDATA TERRAFORT SHARED_DATA [test]\n", argv[0]);
    return 2;
  }
  testdata = argv[1];
  tf = argv[2];
  shared = argv[3];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "flow_hand_out");
  mkdir(outdir, 0755);
  if (argc > 4 && !strcmp(argv[4], "test_taudem")) {
    char p[1024];
    snprintf(p, sizeof p, "%s/taudem/loganvrt/hydro/hand.tif", shared);
    if (!exists(p)) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 77;
  }
  static const tr_test_case cases[] = {TR_TEST(test_plane_analytic),    TR_TEST(test_same_bytes),
                                       TR_TEST(test_gridnet_reference), TR_TEST(test_out_of_core),
                                       TR_TEST(test_given_inputs),      TR_TEST(test_bad_options),
                                       TR_TEST(test_taudem)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
