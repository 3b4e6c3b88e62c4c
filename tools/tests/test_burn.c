/*
 * test_burn.c - stream burning (--burn FILE --burn-depth D; io/burn.c) in
 * fill, breach and flowgraph (issue 29).
 *
 * The DEM: a valley draining south, cut across by a road embankment far
 * higher than the valley's sides, with a NoData hole; 300 x 280 cells, so
 * the lines cross the 256-cell blocks the burning works in. The lines (made
 * here with ogr2ogr from WKT, in the DEM's CRS): the stream along the valley
 * floor through the embankment, from near the top edge (burnt to the edge,
 * the channel would drain the valley north, as burning does to a real DEM)
 * off the grid's bottom; a tributary; a MultiLineString below the embankment
 * whose first part crosses the hole (cells beside NoData are outlets, so a
 * hole above it would drain the burnt valley) and whose second part runs off
 * the grid's east side.
 *
 * - values against an independent reference: gdal_rasterize (gdal-bin)
 *   burns the lines into a mask on the DEM's grid, the test lowers those
 *   cells itself, and `fill` of that pre-burnt DEM is byte for byte
 *   `fill --burn`; the same for `flowgraph --acc` and `breach`, and for
 *   `--burn-all-touched` against gdal_rasterize -at; --aap-stats counts the
 *   mask's valid cells;
 * - the same bytes for 1 and 2 threads, tile sizes 16 to 512, schedules,
 *   --ft dual, a --mem that sends the fill out of core (checked in
 *   --aap-stats), mpirun -n 2 and -n 3;
 * - the effect: without burning no water crosses the embankment (the lake
 *   behind it spills off the DEM's sides); burnt, the valley's whole
 *   accumulation passes it;
 * - bad input: one line, its exit code and no file left, for each;
 * - the lines (and outlets) in EPSG:4326 over the UTM DEM give the bytes of
 *   the lines in the DEM's CRS; lines without a CRS are taken in the DEM's
 *   with a warning.
 */
#include <cpl_conv.h>
#include <gdal.h>
#include <math.h>
#include <ogr_srs_api.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flow_kit.h"
#include "proc_check.h"
#include "raster_check.h"
#include "tr_test.h"

enum { ROWS = 300, COLS = 280, DAM = 150, VALLEY = 140 };
#define CELL 10.0
#define DEPTH 100.0
#define ND (-9999.0f)

/* x, y of cell coordinates (column, row; fractions inside the cell) on the
 * grid of flow_kit.h's write_dem */
#define MX(c) (400000.0 + (c)*CELL)
#define MY(r) (4600000.0 - (r)*CELL)

/* `terrafort ARGS -q` (the folder's names through opath), stderr in err.txt:
 * the exit status. */
static int tfr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int tfr(const char *fmt, ...) {
  char a[6000], c[8000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a, sizeof a, fmt, ap);
  va_end(ap);
  snprintf(c, sizeof c, "cd '%s' && '%s' %s -q 2>err.txt", outdir, tf, a);
  return rc_run(c, NULL);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
  char a[6000], c[8000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a, sizeof a, fmt, ap);
  va_end(ap);
  snprintf(c, sizeof c, "cd '%s' && %s", outdir, a);
  return rc_run(c, NULL);
}

static const char *err_text(void) { return rc_slurp(opath("err.txt")); }

/* ---- the DEM and the lines ------------------------------------------------------- */

static float dam_z(int r, int c) {
  if (r >= 242 && r < 248 && c >= 219 && c < 226) return ND; /* a hole the MultiLineString crosses */
  double z = 100 + 0.25 * (ROWS - 1 - r) + 0.35 * fabs(c - 140.3) + 1.5 * sin(r * 0.13) * cos(c * 0.11);
  if (r >= DAM && r < DAM + 3) z += 80; /* the embankment, above the valley's sides */
  return (float)z;
}

static int make_dem(const char *name) {
  float *z = malloc(sizeof(float) * ROWS * COLS);
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) z[r * COLS + c] = dam_z(r, c);
  const int rc = write_dem(opath(name), ROWS, COLS, CELL, z, 1, ND);
  free(z);
  return rc;
}

/* The lines as WKT (EPSG:32612) in lines.csv, into GeoPackage `name` as
 * layer "streams" (a_srs: its CRS option, "" for none). */
static int make_lines(const char *name, const char *a_srs) {
  char wkt[3][600];
  snprintf(wkt[0], sizeof wkt[0], "LINESTRING(%.2f %.2f,%.2f %.2f,%.2f %.2f)", MX(140.37), MY(3.3), MX(140.62),
           MY(DAM + 1.41), MX(141.23), MY(310.2));
  snprintf(wkt[1], sizeof wkt[1], "LINESTRING(%.2f %.2f,%.2f %.2f,%.2f %.2f)", MX(20.41), MY(10.33), MX(62.38),
           MY(42.46), MX(139.57), MY(120.31));
  snprintf(wkt[2], sizeof wkt[2], "MULTILINESTRING((%.2f %.2f,%.2f %.2f),(%.2f %.2f,%.2f %.2f,%.2f %.2f))", MX(200.31),
           MY(230.22), MX(262.73), MY(271.44), MX(141.12), MY(200.27), MX(251.64), MY(258.39), MX(320.29), MY(263.71));
  FILE *f = fopen(opath("lines.csv"), "w");
  if (!f) return 1;
  fprintf(f, "id,WKT\n");
  for (int i = 0; i < 3; i++) fprintf(f, "%d,\"%s\"\n", i + 1, wkt[i]);
  fclose(f);
  return sh("rm -f '%s' && ogr2ogr -q -f GPKG %s '%s' lines.csv -nln streams", name, a_srs, name);
}

/* The DEM's grid as an empty Byte raster `name`, then gdal_rasterize's
 * cells of layer streams of `lines` in it (at: -at). */
static int reference_mask(const char *name, const char *lines, int at) {
  GDALDatasetH d = GDALOpen(opath("dam.tif"), GA_ReadOnly);
  if (!d) return 1;
  double gt[6];
  GDALGetGeoTransform(d, gt);
  GDALDatasetH m = GDALCreate(GDALGetDriverByName("GTiff"), opath(name), COLS, ROWS, 1, GDT_Byte, NULL);
  if (!m) return 1;
  GDALSetGeoTransform(m, gt);
  GDALSetProjection(m, GDALGetProjectionRef(d));
  GDALClose(m);
  GDALClose(d);
  return sh("gdal_rasterize -q %s -burn 1 -l streams '%s' '%s'", at ? "-at" : "", lines, name);
}

/* The DEM with the mask's cells lowered by DEPTH (as the man page says: in
 * double, rounded to Float32; nodata kept) into `name`; *valid: the burnt
 * cells that hold data. */
static int pre_burnt(const char *mask, const char *name, int64_t *valid) {
  rc_raster M;
  if (rc_load(opath(mask), &M)) return 1;
  float *z = malloc(sizeof(float) * ROWS * COLS);
  *valid = 0;
  for (int i = 0; i < ROWS * COLS; i++) {
    z[i] = dam_z(i / COLS, i % COLS);
    if (M.v[i] == 1 && z[i] != ND) {
      z[i] = (float)((double)z[i] - DEPTH);
      ++*valid;
    }
  }
  rc_free(&M);
  const int rc = write_dem(opath(name), ROWS, COLS, CELL, z, 1, ND);
  free(z);
  return rc;
}

static int same(const char *a, const char *b) { return rc_same_file(opath(a), opath(b)); }

/* The "cells" of the burn line of a --aap-stats file, or -1. */
static long long burnt_cells(const char *stats) {
  const char *p = strstr(rc_slurp(opath(stats)), "{\"burn\":");
  p = p ? strstr(p, "\"cells\":") : NULL;
  return p ? atoll(p + 8) : -1;
}

static int setup(void) {
  if (exists(opath("lines.gpkg"))) return 0;
  return make_dem("dam.tif") || make_lines("lines.gpkg", "-a_srs EPSG:32612");
}

#define BURN "--burn lines.gpkg --burn-depth 100"

/* ---- (1) against gdal_rasterize ---------------------------------------------------- */

static int test_against_gdal_rasterize(void) {
  ASSERT_EQ_INT(setup(), 0);
  for (int at = 0; at < 2; at++) {
    const char *rule = at ? "--burn-all-touched" : "";
    int64_t valid = 0;
    ASSERT_EQ_INT(reference_mask("mask.tif", "lines.gpkg", at), 0);
    ASSERT_EQ_INT(pre_burnt("mask.tif", "pre.tif", &valid), 0);
    ASSERT(valid > (at ? 700 : 500)); /* the three lines, less the hole */
    ASSERT_EQ_INT(tfr("fill pre.tif f_ref.tif"), 0);
    ASSERT_EQ_INT(tfr("fill dam.tif f_burn.tif %s %s --aap-stats s.json", BURN, rule), 0);
    ASSERT(same("f_ref.tif", "f_burn.tif"));
    fprintf(stderr, "%s: %lld cells burnt, as gdal_rasterize%s\n", at ? "all touched" : "line rule", (long long)valid,
            at ? " -at" : "");
    ASSERT_EQ_INT((int)burnt_cells("s.json"), (int)valid);
    ASSERT_EQ_INT(tfr("flowgraph pre.tif --acc a_ref.tif --streams s_ref.tif"), 0);
    ASSERT_EQ_INT(tfr("flowgraph dam.tif --acc a_burn.tif --streams s_burn.tif %s %s", BURN, rule), 0);
    ASSERT(same("a_ref.tif", "a_burn.tif") && same("s_ref.tif", "s_burn.tif"));
    ASSERT_EQ_INT(tfr("breach pre.tif b_ref.tif"), 0);
    ASSERT_EQ_INT(tfr("breach dam.tif b_burn.tif %s %s", BURN, rule), 0);
    ASSERT(same("b_ref.tif", "b_burn.tif"));
  }
  /* the hole stays nodata where a line crosses it */
  rc_raster F;
  ASSERT(!rc_load(opath("f_burn.tif"), &F));
  ASSERT(rc_is_nodata(&F, F.v[244 * COLS + 222]));
  rc_free(&F);
  return 0;
}

/* ---- (2) the same bytes ---------------------------------------------------------------- */

/* fixed_bytes + state_bytes / 2 of the first "state_store" line of a
 * --aap-stats file: a --mem that the stage's state does not fit (its
 * perimeters do). */
static long long ooc_mem(const char *stats) {
  const char *s = rc_slurp(opath(stats)), *p = strstr(s, "\"state_bytes\":"), *q = strstr(s, "\"fixed_bytes\":");
  if (!p || !q) return -1;
  return atoll(q + 14) + atoll(p + 14) / 2;
}

/* Whether the first stage of a --aap-stats file ran out of core: the
 * perimeter body, or state spilled. */
static int went_out_of_core(const char *stats) {
  const char *s = strstr(rc_slurp(opath(stats)), "\"state_store\":");
  if (!s) return 0;
  const char *sp = strstr(s, "\"spills\":");
  return strstr(s, "\"program\":\"fill_perimeter\"") == s + 15 || (sp && atoll(sp + 9) > 0);
}

static int test_same_bytes(void) {
  ASSERT_EQ_INT(setup(), 0);
  static const char *const flags[] = {"--threads 2",
                                      "--tile-size 16",
                                      "--tile-size 37 --threads 2",
                                      "--tile-size 100 --schedule bsp",
                                      "--tile-size 512 --schedule ap",
                                      "--ft dual --tile-size 50",
                                      "--ft replay --tile-size 64"};
  const int mpi = rc_run("command -v mpirun >/dev/null", NULL) == 0;
  for (int k = 0; k < 3; k++) {
    /* fill, flowgraph's accumulation and streams, fill with ALL_TOUCHED */
    const char *cmd = k == 1 ? "flowgraph dam.tif --acc %s --streams s_%s" : "fill dam.tif %s";
    const char *rule = k == 2 ? "--burn-all-touched" : "";
    char line[600];
    snprintf(line, sizeof line, cmd, "o0.tif", "o0.tif");
    ASSERT_EQ_INT(tfr("%s %s %s --threads 1 --aap-stats m.json", line, BURN, rule), 0);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
      if (k == 2 && i % 3) continue; /* ALL_TOUCHED: a few */
      if (TR_TEST_SANITIZED && i % 2) continue;
      snprintf(line, sizeof line, cmd, "o1.tif", "o1.tif");
      ASSERT_EQ_INT(tfr("%s %s %s %s", line, BURN, rule, flags[i]), 0);
      if (!same("o0.tif", "o1.tif") || (k == 1 && !same("s_o0.tif", "s_o1.tif")))
        return fprintf(stderr, "`%s %s`: other bytes\n", line, flags[i]), 1;
    }
    /* out of core: a --mem the fill's state does not fit, from the figures
     * of an in-memory run of the same tiles (fill alone: in flowgraph the
     * same fill is a stage whose state, on a DEM this small, is less than
     * what the directions' stage needs besides its own) */
    snprintf(line, sizeof line, cmd, "o1.tif", "o1.tif");
    ASSERT_EQ_INT(tfr("%s %s %s --threads 1 --tile-size 32 --aap-stats plan.json", line, BURN, rule), 0);
    ASSERT(same("o0.tif", "o1.tif"));
    if (k != 1) {
      const long long mem = ooc_mem("plan.json");
      ASSERT(mem > 0);
      ASSERT_EQ_INT(tfr("%s %s %s --threads 1 --tile-size 32 --mem %lldB --aap-stats ooc.json", line, BURN, rule, mem),
                    0);
      ASSERT(went_out_of_core("ooc.json"));
      ASSERT(same("o0.tif", "o1.tif"));
      ASSERT_EQ_INT((int)burnt_cells("ooc.json"), (int)burnt_cells("m.json"));
    }
    if (!mpi) continue;
    for (int n = 2; n <= 3; n++) {
      if (k == 2 && n == 2) continue;
      char c[2000];
      snprintf(c, sizeof c,
               "mpirun --allow-run-as-root --oversubscribe -n %d '%s' %s %s %s --tile-size 40 -q "
               "--aap-stats mp.json",
               n, tf, line, BURN, rule);
      ASSERT_EQ_INT(sh("%s 2>err.txt", c), 0);
      if (!same("o0.tif", "o1.tif")) return fprintf(stderr, "`%s`: other bytes\n", c), 1;
      ASSERT_EQ_INT((int)burnt_cells("mp.json"), (int)burnt_cells("m.json"));
    }
  }
  if (mpi) { /* breach: every rank burns and breaches the whole DEM */
    ASSERT_EQ_INT(tfr("breach dam.tif o0.tif %s", BURN), 0);
    ASSERT_EQ_INT(
        sh("mpirun --allow-run-as-root --oversubscribe -n 2 '%s' breach -q dam.tif o1.tif %s 2>err.txt", tf, BURN), 0);
    ASSERT(same("o0.tif", "o1.tif"));
  }
  return 0;
}

/* ---- (2b) what the burn keeps is counted in --mem ------------------------------------------ */

/* A number field of the first {"burn":...} or first "state_store" object. */
static long long field_of(const char *stats, const char *obj, const char *field) {
  const char *p = strstr(rc_slurp(opath(stats)), obj);
  char f[64];
  snprintf(f, sizeof f, "\"%s\":", field);
  p = p ? strstr(p, f) : NULL;
  return p ? atoll(p + strlen(f)) : -1;
}

/* The burn's bound (burn.h, tr_burn_bytes) is in the stage's fixed bytes,
 * the ones --mem is planned against: exactly the difference a run with the
 * lines makes to one without; and it bounds what the lines keep (32 bytes a
 * segment, 2 a burnt cell) with either rule. */
static int test_counted_in_mem(void) {
  ASSERT_EQ_INT(setup(), 0);
  ASSERT_EQ_INT(tfr("fill dam.tif o0.tif --threads 1 --aap-stats nb.json"), 0);
  const long long without = field_of("nb.json", "\"state_store\":", "fixed_bytes");
  ASSERT(without > 0);
  for (int at = 0; at < 2; at++) {
    ASSERT_EQ_INT(tfr("fill dam.tif o1.tif --threads 1 %s %s --aap-stats wb.json", BURN, at ? "--burn-all-touched" : ""),
                  0);
    const long long with = field_of("wb.json", "\"state_store\":", "fixed_bytes"),
                    bytes = field_of("wb.json", "{\"burn\":", "bytes"),
                    segments = field_of("wb.json", "{\"burn\":", "segments"),
                    cells = field_of("wb.json", "{\"burn\":", "cells");
    fprintf(stderr, "burn%s: %lld segments, %lld cells, bound %lld bytes; fixed %lld -> %lld\n",
            at ? " (all touched)" : "", segments, cells, bytes, without, with);
    ASSERT(segments > 0 && cells > 0);
    ASSERT(with - without == bytes);
    ASSERT(bytes >= 32 * segments + 2 * cells);
  }
  return 0;
}

/* ---- (3) the effect ---------------------------------------------------------------------- */

static int test_embankment(void) {
  ASSERT_EQ_INT(setup(), 0);
  /* -nc: the valley's area reaches the DEM's edge, which TauDEM's edge check would make nodata */
  ASSERT_EQ_INT(tfr("flowgraph dam.tif -nc --acc acc0.tif"), 0);
  ASSERT_EQ_INT(tfr("flowgraph dam.tif -nc --acc acc1.tif %s", BURN), 0);
  rc_raster A0, A1;
  ASSERT(!rc_load(opath("acc0.tif"), &A0) && !rc_load(opath("acc1.tif"), &A1));
  /* just below the embankment, on the stream line */
  const int below = (DAM + 5) * COLS + VALLEY;
  double above0 = 0;
  for (int i = 0; i < DAM * COLS; i++) above0 = fmax(above0, A0.v[i]); /* unburnt, the lake's way out */
  fprintf(stderr, "below the embankment: %.0f cells unburnt, %.0f burnt; above it unburnt: %.0f at most\n", A0.v[below],
          A1.v[below], above0);
  ASSERT(A0.v[below] < 100);   /* the dam holds: only the few cells just below it */
  ASSERT(above0 > 30000);      /* the valley's water left the DEM above the embankment */
  ASSERT(A1.v[below] > 30000); /* burnt, the valley above it (150 rows x 280, less a rim) passes */
  /* the outlet at the bottom edge's stream cell gets nearly the whole DEM when burnt */
  double best0 = 0, best1 = 0;
  for (int c = 1; c < COLS - 1; c++) {
    best0 = fmax(best0, A0.v[(ROWS - 2) * COLS + c]);
    best1 = fmax(best1, A1.v[(ROWS - 2) * COLS + c]);
  }
  ASSERT(best0 < 0.5 * ROWS * COLS && best1 > best0 + 30000);
  rc_free(&A0);
  rc_free(&A1);
  return 0;
}

/* ---- (4) bad input --------------------------------------------------------------------- */

/* `terrafort ARGS` exits `code` with one line holding `needle`, and leaves
 * no out.tif and no temporary. */
static int bad(int code, const char *args, const char *needle) {
  unlink(opath("out.tif"));
  const int rc = tfr("%s", args);
  const char *e = err_text();
  const int lines = pc_lines(e);
  if (rc != code || lines != 1 || !strstr(e, needle) || exists(opath("out.tif")) ||
      pc_count(outdir, ".terrafort-", NULL, 0) != 0) {
    fprintf(stderr, "`%s`: exit %d (want %d), %d lines, stderr: %s(want '%s')%s\n", args, rc, code, lines, e, needle,
            exists(opath("out.tif")) ? "; out.tif left" : "");
    return 1;
  }
  return 0;
}

static int test_bad_input(void) {
  ASSERT_EQ_INT(setup(), 0);
  /* points, a polygon, no features, lines far off, a CRS PROJ cannot turn into the DEM's, a vertex it cannot */
  ASSERT_EQ_INT(sh("printf 'id,WKT\\n1,\"POINT(%.1f %.1f)\"\\n' > p.csv && ogr2ogr -q -f GPKG -a_srs EPSG:32612 "
                   "pts.gpkg p.csv && printf 'id,WKT\\n1,\"POLYGON((%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f))\"\\n' > "
                   "q.csv && ogr2ogr -q -f GPKG -a_srs EPSG:32612 poly.gpkg q.csv && "
                   "ogr2ogr -q -f GPKG -a_srs EPSG:32612 -where \"id = 'none'\" empty.gpkg lines.csv -nln streams && "
                   "printf 'id,WKT\\n1,\"LINESTRING(100 100,200 200)\"\\n' > far.csv && "
                   "ogr2ogr -q -f GPKG -a_srs EPSG:32612 far.gpkg far.csv && "
                   "ogr2ogr -q -f GPKG -a_srs IAU_2015:49900 mars.gpkg lines.csv && "
                   "printf 'id,WKT\\n1,\"LINESTRING(-110.9 41.3,-110.9 95)\"\\n' > ll.csv && "
                   "ogr2ogr -q -f GPKG -a_srs EPSG:4326 pole.gpkg ll.csv && "
                   "printf 'not a vector\\n' > junk.gpkg",
                   MX(100.5), MY(100.5), MX(10), MY(10), MX(90), MY(10), MX(90), MY(90), MX(10), MY(10)),
                0);
  /* the DEM without a CRS */
  rc_raster D;
  ASSERT(!rc_load(opath("dam.tif"), &D));
  GDALDatasetH nc = GDALCreate(GDALGetDriverByName("GTiff"), opath("nocrs.tif"), COLS, ROWS, 1, GDT_Float32, NULL);
  ASSERT(nc != NULL);
  GDALSetGeoTransform(nc, D.gt);
  GDALSetRasterNoDataValue(GDALGetRasterBand(nc, 1), ND);
  ASSERT(GDALRasterIO(GDALGetRasterBand(nc, 1), GF_Write, 0, 0, COLS, ROWS, D.v, COLS, ROWS, GDT_Float64, 0, 0) ==
         CE_None);
  GDALClose(nc);
  rc_free(&D);
  ASSERT(!bad(2, "fill dam.tif out.tif --burn lines.gpkg", "--burn needs --burn-depth D"));
  ASSERT(!bad(2, "fill dam.tif out.tif --burn-depth 5", "--burn-depth needs --burn FILE"));
  ASSERT(!bad(2, "breach dam.tif out.tif --burn-layer streams", "--burn-layer needs --burn FILE"));
  ASSERT(!bad(2, "fill dam.tif out.tif --burn-all-touched", "--burn-all-touched needs --burn FILE"));
  ASSERT(!bad(2, "fill dam.tif out.tif --burn lines.gpkg --burn-depth 0", "--burn-depth must be positive"));
  ASSERT(!bad(2, "fill dam.tif out.tif --burn lines.gpkg --burn-depth -3", "--burn-depth must be positive"));
  ASSERT(
      !bad(2, "fill dam.tif out.tif --burn lines.gpkg --burn-depth nan", "--burn-depth: 'nan' is not a finite number"));
  ASSERT(!bad(2, "breach dam.tif out.tif --burn lines.gpkg --burn-depth inf", "--burn-depth: 'inf' is not a finite"));
  ASSERT(
      !bad(2, "fill dam.tif out.tif " BURN " --burn-layer roads", "--burn-layer: 'lines.gpkg' has no layer 'roads'"));
  ASSERT(!bad(2, "flowgraph dam.tif --acc out.tif " BURN " --filled", "--burn does not go with --filled"));
  ASSERT(!bad(2, "flowgraph --dir-in dam.tif --acc out.tif " BURN, "--burn lowers the cells of a DEM"));
  ASSERT(
      !bad(3, "fill dam.tif out.tif --burn missing.gpkg --burn-depth 1", "cannot open the burn lines 'missing.gpkg'"));
  ASSERT(!bad(3, "fill dam.tif out.tif --burn junk.gpkg --burn-depth 1", "cannot open the burn lines 'junk.gpkg'"));
  ASSERT(!bad(3, "fill dam.tif out.tif --burn pts.gpkg --burn-depth 1", "feature 1 is a Point; --burn takes lines"));
  ASSERT(!bad(3, "breach dam.tif out.tif --burn poly.gpkg --burn-depth 1", "feature 1 is a Polygon"));
  ASSERT(!bad(3, "fill dam.tif out.tif --burn empty.gpkg --burn-depth 1", "have no line features"));
  ASSERT(!bad(3, "fill dam.tif out.tif --burn far.gpkg --burn-depth 1", "none of the burn lines 'far.gpkg' crosses"));
  ASSERT(!bad(3, "fill dam.tif out.tif --burn mars.gpkg --burn-depth 1", "which cannot be transformed into the CRS"));
  ASSERT(!bad(3, "flowgraph dam.tif --acc out.tif --burn pole.gpkg --burn-depth 1", "cannot be put in the CRS of"));
  ASSERT(!bad(3, "fill nocrs.tif out.tif " BURN, "has a CRS and 'nocrs.tif' has none"));
  /* the lines are an input: no output may replace them */
  ASSERT_EQ_INT(sh("cp lines.gpkg keep.gpkg"), 0);
  ASSERT(!bad(4, "fill dam.tif lines.gpkg " BURN, "it is --burn ('lines.gpkg')"));
  ASSERT(!bad(4, "flowgraph dam.tif --acc out.tif --streams ./lines.gpkg " BURN, "it is --burn ('lines.gpkg')"));
  ASSERT(!bad(4, "breach dam.tif lines.gpkg " BURN, "it is --burn ('lines.gpkg')"));
  ASSERT(same("keep.gpkg", "lines.gpkg"));
  return 0;
}

/* ---- (5) CRS ------------------------------------------------------------------------ */

static int test_other_crs(void) {
  ASSERT_EQ_INT(setup(), 0);
  /* the lines in longitude and latitude, and without a CRS */
  ASSERT_EQ_INT(sh("ogr2ogr -q -t_srs EPSG:4326 ll.gpkg lines.gpkg"), 0);
  ASSERT_EQ_INT(make_lines("nocrs.gpkg", ""), 0);
  ASSERT_EQ_INT(tfr("fill dam.tif f_utm.tif %s", BURN), 0);
  ASSERT(pc_lines(err_text()) == 0);
  ASSERT_EQ_INT(tfr("fill dam.tif f_ll.tif --burn ll.gpkg --burn-depth 100"), 0);
  ASSERT(same("f_utm.tif", "f_ll.tif"));
  ASSERT_EQ_INT(tfr("flowgraph dam.tif --acc a_utm.tif %s", BURN), 0);
  ASSERT_EQ_INT(tfr("flowgraph dam.tif --acc a_ll.tif --burn ll.gpkg --burn-depth 100 --burn-layer streams"), 0);
  ASSERT(same("a_utm.tif", "a_ll.tif"));
  ASSERT_EQ_INT(tfr("fill dam.tif f_none.tif --burn nocrs.gpkg --burn-depth 100"), 0);
  ASSERT(pc_lines(err_text()) == 1 && strstr(err_text(), "warning: the burn lines 'nocrs.gpkg' have no CRS"));
  ASSERT(same("f_utm.tif", "f_none.tif"));
  /* outlets too: two gauges on the burnt stream, in UTM and in 4326 */
  FILE *f = fopen(opath("g.csv"), "w");
  ASSERT(f != NULL);
  fprintf(f, "id,WKT\n7,\"POINT(%.2f %.2f)\"\n9,\"POINT(%.2f %.2f)\"\n", MX(140.55), MY(120.4), MX(140.95), MY(260.6));
  fclose(f);
  ASSERT_EQ_INT(sh("ogr2ogr -q -f GPKG -a_srs EPSG:32612 -oo AUTODETECT_TYPE=YES g.gpkg g.csv && "
                   "ogr2ogr -q -t_srs EPSG:4326 gll.gpkg g.gpkg"),
                0);
  ASSERT_EQ_INT(tfr("flowgraph dam.tif %s --outlets g.gpkg --id-field id --basins w_utm.tif", BURN), 0);
  ASSERT_EQ_INT(tfr("flowgraph dam.tif --burn ll.gpkg --burn-depth 100 --outlets gll.gpkg --id-field id --basins "
                    "w_ll.tif"),
                0);
  ASSERT(same("w_utm.tif", "w_ll.tif"));
  rc_raster W;
  ASSERT(!rc_load(opath("w_ll.tif"), &W));
  int64_t n7 = 0, n9_above = 0;
  for (int i = 0; i < ROWS * COLS; i++) n7 += W.v[i] == 7, n9_above += W.v[i] == 9 && i / COLS < DAM;
  rc_free(&W);
  fprintf(stderr, "gauge 7: %lld cells; gauge 9 (below the embankment): %lld above it\n", (long long)n7,
          (long long)n9_above);
  /* the burnt stream carries the valley between the gauges through the embankment to gauge 9 */
  ASSERT(n7 > 10000 && n9_above > 3000);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s TESTDATA TERRAFORT [test]\n", argv[0]);
    return 2;
  }
  tf = argv[2];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../burn_out", argv[1]);
  mkdir(outdir, 0755);
  char c[1200];
  snprintf(c, sizeof c, "rm -f '%s'/*", outdir);
  if (rc_run(c, NULL)) return 1;
  static const tr_test_case cases[] = {TR_TEST(test_against_gdal_rasterize), TR_TEST(test_same_bytes), TR_TEST(test_counted_in_mem),
                                       TR_TEST(test_embankment), TR_TEST(test_bad_input), TR_TEST(test_other_crs)};
  return tr_test_main(argc - 2, argv + 2, cases, (int)(sizeof cases / sizeof cases[0]));
}
