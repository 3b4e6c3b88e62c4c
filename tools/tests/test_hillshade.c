/*
 * test_hillshade.c - `terrafort hillshade` against `gdaldem hillshade`
 * itself, and the same bytes from every way of running.
 *
 * Parity: for every test DEM (all data types, NaN nodata, a VRT mosaic,
 * tiny, one-row, flat, huge values, all nodata, no CRS, no geotransform)
 * and gdaldem's flag combinations (-z, -az/-alt, -alg, -combined,
 * -multidirectional, -igor, -compute_edges, -s and mixes), both programs run
 * on the same input; the outputs must have the same size, georeferencing,
 * CRS, type (Byte), nodata value (0), identical nodata masks, and values
 * within one grey level. The kernel follows gdaldem's arithmetic to the
 * byte, so the largest difference is printed per flag set and is 0 on
 * x86-64. Geographic DEMs are compared with -s 111120 (gdaldem's own
 * scale); without -s terrafort uses metric cell sizes, checked against the
 * analytic shade of geographic.tif's plane. The Logan River mosaic and
 * enogeo.tif from ../shared/data are added when present.
 *
 * Identity: --threads 1 and 2, --tile-size 37 and 512, --ft dual and mpirun
 * with 2 and 3 ranks write the same bytes. Also: -b/-of/-co, --stats, and
 * bad flags and gdaldem's refused flag pairs exit 2 with one line.
 */
#include <gdal.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "tr_test.h"

static const char *dir, *tf, *shared;
static char outdir[512], mpirun[256];

/* The flag sets every DEM is compared with, and the largest difference
 * seen with each. */
static const char *flag_sets[] = {"",
                                  "-z 2",
                                  "-az 45 -alt 30",
                                  "-alg ZevenbergenThorne",
                                  "-combined",
                                  "-multidirectional",
                                  "-igor",
                                  "-compute_edges",
                                  "-s 2",
                                  "-combined -alg ZevenbergenThorne -compute_edges -z 1.5",
                                  "-multidirectional -compute_edges -alt 60 -z 3",
                                  "-igor -compute_edges -az 100 -s 0.5",
                                  "-compute_edges -alg ZevenbergenThorne -az 200 -alt 80 -z 0.3"};
enum { NSETS = sizeof flag_sets / sizeof flag_sets[0] };
static double maxdiff[NSETS];

static const char *opath(const char *name) {
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", outdir, name);
  return p[k];
}

/* Runs gdaldem and terrafort on input with `pre` and flag set `set` (or
 * only `pre` when set < 0); compares the outputs within one grey level. */
static int compare_one(const char *input, const char *pre, int set, const char *ext) {
  const char *flags = set >= 0 ? flag_sets[set] : "";
  char g[1024], t[1024], c[4096], what[2048];
  snprintf(g, sizeof g, "%s/gdaldem%s", outdir, ext);
  snprintf(t, sizeof t, "%s/terrafort%s", outdir, ext);
  char peer[4096];
  snprintf(peer, sizeof peer, "gdaldem hillshade '%s' '%s' %s %s -q", input, g, pre, flags);
  snprintf(c, sizeof c, "'%s' hillshade '%s' '%s' %s %s -q", tf, input, t, pre, flags);
  if (rc_run_pair(peer, c)) return 1;
  rc_raster a, b;
  if (rc_load(g, &a) || rc_load(t, &b)) return 1;
  snprintf(what, sizeof what, "hillshade %s %s %s", input, pre, flags);
  int bad = rc_compare(&a, &b, 1, what);
  /* drivers without Byte (AAIGrid) store another type, the same for both */
  if (!bad && (a.type != b.type || (!strcmp(ext, ".tif") && (b.type != GDT_Byte || !b.has_nodata || b.nodata != 0)))) {
    fprintf(stderr, "%s: type %d vs %d, nodata %d/%g\n", what, a.type, b.type, b.has_nodata, b.nodata);
    bad = 1;
  }
  for (long i = 0; !bad && set >= 0 && i < (long)a.rows * a.cols; i++)
    if (fabs(a.v[i] - b.v[i]) > maxdiff[set]) maxdiff[set] = fabs(a.v[i] - b.v[i]);
  rc_free(&a);
  rc_free(&b);
  return bad;
}

static int all_flags(const char *input, const char *pre) {
  for (int k = 0; k < NSETS; k++)
    if (compare_one(input, pre, k, ".tif")) return 1;
  return 0;
}

static int testdata_all_flags(const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return all_flags(p, "");
}

/* A shorter list for inputs whose path through the kernel another input
 * already covers with every flag set: each shading, edges, ZT. */
static int some_flags(const char *input, const char *pre) {
  static const int sets[] = {0, 4, 5, 6, 7, 9};
  for (size_t k = 0; k < sizeof sets / sizeof *sets; k++)
    if (compare_one(input, pre, sets[k], ".tif")) return 1;
  return 0;
}

static int testdata_some_flags(const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return some_flags(p, "");
}

static int test_float32_and_nan(void) {
  return testdata_all_flags("fractal.tif") || testdata_all_flags("fractal_nan.tif");
}

/* Byte, Int16 and UInt16 take gdaldem's integer path (and its SSE loop);
 * Int32 and UInt32 its Float32 one. */
static int test_integer_types(void) {
  return testdata_all_flags("fractal_byte.tif") || testdata_some_flags("fractal_int16.tif") ||
         testdata_some_flags("fractal_uint16.tif") || testdata_some_flags("fractal_int32.tif") ||
         testdata_some_flags("fractal_uint32.tif");
}

static int test_float64(void) { return testdata_some_flags("fractal_float64.tif"); }
static int test_vrt_mosaic(void) { return testdata_some_flags("mosaic.vrt"); }

/* Analytic surfaces (flat: the shade of a level surface everywhere), the
 * odd shapes, and no geotransform (cells 1 x 1 with y growing downwards:
 * gdaldem's general form). The degenerate ones are all edges or nodata. */
static int test_odd_shapes(void) {
  const char *t[] = {"flat.tif", "plane.tif", "cone.tif", "hugevalues.tif", "nocrs.tif", "nogeo.tif"};
  for (int i = 0; i < 6; i++)
    if (testdata_some_flags(t[i])) return 1;
  const char *u[] = {"tiny.tif", "onerow.tif", "allnodata.tif"};
  for (int i = 0; i < 3; i++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, u[i]);
    if (compare_one(p, "", 0, ".tif") || compare_one(p, "", 7, ".tif")) return 1;
  }
  return 0;
}

/* Cells that are not square take gdaldem's general form of the standard
 * shading instead of its same_res one (the other shadings always do). */
static int test_rectangular_cells(void) {
  char c[4096];
  snprintf(c, sizeof c, "gdal_translate -q -a_ullr 500000 4501400 502000 4500000 '%s/fractal.tif' '%s'", dir,
           opath("rect.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  static const int sets[] = {0, 1, 2, 3, 7, 8, 12};
  for (size_t k = 0; k < sizeof sets / sizeof *sets; k++)
    if (compare_one(opath("rect.tif"), "", sets[k], ".tif")) return 1;
  return 0;
}

/* gdaldem reads Byte, Int16 and UInt16 as integers: a nodata within 1e-2 of
 * an integer is rounded to it, one outside the type's range is ignored.
 * With -compute_edges, gdaldem's integer edge extrapolation turns a 2a - b
 * equal to nodata into nodata + 1 (window3.h's integer rule); the rounded
 * nodata 10 meets that here. */
static int test_integer_nodata_rule(void) {
  static const struct {
    const char *name;
    GDALDataType type;
    double nodata;
  } files[] = {
      {"nd_byte.tif", GDT_Byte, 10.004}, {"nd_int16.tif", GDT_Int16, 40000}, {"nd_uint16.tif", GDT_UInt16, 7.5}};
  for (int f = 0; f < 3; f++) {
    GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), opath(files[f].name), 30, 20, 1, files[f].type, NULL);
    ASSERT(ds);
    double gt[6] = {500000, 10, 0, 4500000, 0, -10};
    GDALSetGeoTransform(ds, gt);
    float v[20 * 30];
    for (int i = 0; i < 20 * 30; i++) v[i] = (float)((i * 7 + i / 30 * 3) % 40 + 5);
    GDALRasterBandH b = GDALGetRasterBand(ds, 1);
    GDALSetRasterNoDataValue(b, files[f].nodata);
    ASSERT_EQ_INT(GDALRasterIO(b, GF_Write, 0, 0, 30, 20, v, 30, 20, GDT_Float32, 0, 0), CE_None);
    GDALClose(ds);
    if (compare_one(opath(files[f].name), "", 0, ".tif") || compare_one(opath(files[f].name), "", 4, ".tif") ||
        compare_one(opath(files[f].name), "", 7, ".tif"))
      return 1;
  }
  return 0;
}

/* Geographic DEMs with gdaldem's -s 111120. */
static int test_geographic_with_scale(void) {
  char p[1024];
  snprintf(p, sizeof p, "%s/geographic.tif", dir);
  return some_flags(p, "-s 111120");
}

/* Without -s a geographic DEM gets metric cell sizes: geographic.tif is a
 * plane of slope atan(0.1) facing south at every latitude, so every interior
 * cell has the analytic shade of that plane, 1 + 254 cos(angle to the light). */
static int test_geographic_metric(void) {
  const double d2r = M_PI / 180, s = atan(0.1), aspect = 180 * d2r;
  const double az[] = {315, 90, 180}, alt[] = {45, 30, 70};
  for (int i = 0; i < 3; i++) {
    char c[4096];
    snprintf(c, sizeof c, "'%s' hillshade '%s/geographic.tif' '%s' -az %g -alt %g -q", tf, dir, opath("geo.tif"),
             az[i], alt[i]);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    rc_raster r;
    ASSERT(!rc_load(opath("geo.tif"), &r));
    const double shade = sin(alt[i] * d2r) * cos(s) + cos(alt[i] * d2r) * sin(s) * cos(az[i] * d2r - aspect);
    const double expect = floor(1 + 254 * shade + 0.5);
    int bad = 0;
    for (int y = 1; y < r.rows - 1 && !bad; y++)
      for (int x = 1; x < r.cols - 1 && !bad; x++)
        if (r.v[(long)y * r.cols + x] != expect) {
          fprintf(stderr, "az %g alt %g: cell %d,%d is %g, expected %g\n", az[i], alt[i], y, x,
                  r.v[(long)y * r.cols + x], expect);
          bad = 1;
        }
    rc_free(&r);
    if (bad) return 1;
  }
  return 0;
}

/* Band selection and output drivers: -b, -of with a Create driver (ENVI)
 * and a CreateCopy-only driver (AAIGrid), -co honoured. */
static int test_band_format_co(void) {
  char in[1024], c[4096];
  snprintf(in, sizeof in, "%s/fractal.tif", dir);
  if (compare_one(in, "-b 1 -of ENVI", -1, ".envi")) return 1;
  if (compare_one(in, "-of AAIGrid", -1, ".asc")) return 1;
  snprintf(c, sizeof c, "'%s' hillshade '%s' '%s' -co TILED=YES -co BLOCKXSIZE=64 -co BLOCKYSIZE=64 -q", tf, in,
           opath("co.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  GDALDatasetH ds = GDALOpen(opath("co.tif"), GA_ReadOnly);
  ASSERT(ds);
  int bx, by;
  GDALGetBlockSize(GDALGetRasterBand(ds, 1), &bx, &by);
  GDALClose(ds);
  ASSERT_EQ_INT(bx, 64);
  ASSERT_EQ_INT(by, 64);
  return 0;
}

/* The real DEMs, when present: the Logan River mosaic (UTM) and enogeo
 * (geographic, nodata -3.4e38) with -s 111120. */
static int test_shared_data(void) {
  char p[1024];
  snprintf(p, sizeof p, "%s/LoganVRT/output.vrt", shared);
  if (access(p, R_OK) == 0 && some_flags(p, "")) return 1;
  snprintf(p, sizeof p, "%s/enogeo.tif", shared);
  if (access(p, R_OK) != 0) {
    printf("skip: %s not present\n", p);
    return 0;
  }
  return all_flags(p, "-s 111120");
}

/* Runs `[prefix] terrafort hillshade IN OUT FLAGS -q`; returns the exit code. */
static int tfrun(const char *prefix, const char *in, const char *out, const char *flags) {
  char c[4096];
  snprintf(c, sizeof c, "%s '%s' hillshade '%s/%s' '%s' %s -q", prefix, tf, dir, in, opath(out), flags);
  return rc_run(c, NULL);
}

/* Every way of running gives the bytes of one thread with one big tile.
 * Ranks run one thread each: on a small shared machine, ranks times threads
 * beyond its cores would only measure the oversubscription. The cases
 * cover the fast path (demo), nodata and edges (fractal_nan), the integer
 * SSE-loop rounding (fractal_int16), per-row cell sizes (geographic) and
 * the other shadings. */
static int test_same_bytes_every_way(void) {
  static const struct {
    const char *input, *flags, *ways[6];
  } cases[] = {
      {"demo.tif", "", {"--threads 2", "--threads 1 --tile-size 37", "--threads 2 --tile-size 300",
                        "--ft dual --tile-size 256", "MPI2 --threads 1 --tile-size 256",
                        "MPI3 --threads 1 --tile-size 200"}},
      {"fractal_nan.tif", "-compute_edges", {"--threads 2", "--threads 2 --tile-size 37", "--threads 1 --tile-size 37",
                                             "--ft dual --tile-size 37", "MPI2 --threads 1 --tile-size 37",
                                             "MPI3 --threads 1 --tile-size 37"}},
      {"fractal_int16.tif", "-compute_edges", {"--threads 2 --tile-size 37", "--ft dual --tile-size 37",
                                               "MPI3 --threads 1 --tile-size 37"}},
      {"geographic.tif", "-compute_edges", {"--threads 2 --tile-size 37", "MPI2 --threads 1 --tile-size 37"}},
      {"fractal.tif", "-combined", {"--threads 2 --tile-size 37", "MPI2 --threads 1 --tile-size 37"}},
      {"fractal.tif", "-multidirectional -compute_edges", {"--threads 2 --tile-size 37", "--ft dual --tile-size 37"}},
      {"fractal_nan.tif", "-igor -alg ZevenbergenThorne", {"--threads 2 --tile-size 37",
                                                          "MPI3 --threads 1 --tile-size 37"}}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char flags[512], pre[512];
    snprintf(flags, sizeof flags, "%s --threads 1 --tile-size 512", cases[i].flags);
    ASSERT_EQ_INT(tfrun("", cases[i].input, "ref.tif", flags), 0);
    for (int w = 0; w < 6 && cases[i].ways[w]; w++) {
      const char *way = cases[i].ways[w];
      pre[0] = 0;
      if (!strncmp(way, "MPI", 3)) {
        if (!mpirun[0]) continue;
        snprintf(pre, sizeof pre, "%s -n %c", mpirun, way[3]);
        way += 5;
      }
      snprintf(flags, sizeof flags, "%s %s", cases[i].flags, way);
      ASSERT_EQ_INT(tfrun(pre, cases[i].input, "way.tif", flags), 0);
      if (!rc_same_file(opath("ref.tif"), opath("way.tif"))) {
        fprintf(stderr, "%s %s: '%s %s' differs\n", cases[i].input, cases[i].flags, pre, flags);
        return 1;
      }
    }
  }
  return 0;
}

static int test_stats(void) {
  ASSERT_EQ_INT(tfrun("", "fractal.tif", "s.tif", "--stats"), 0);
  GDALDatasetH ds = GDALOpen(opath("s.tif"), GA_ReadOnly);
  ASSERT(ds);
  const char *mean = GDALGetMetadataItem(GDALGetRasterBand(ds, 1), "STATISTICS_MEAN", NULL);
  const int ok = mean && atof(mean) > 1 && atof(mean) < 255;
  GDALClose(ds);
  ASSERT(ok);
  return 0;
}

/* Bad flags and values, and the pairs gdaldem refuses: exit 2, exactly one
 * line on stderr, no output. */
static int test_bad_flags(void) {
  const char *cases[] = {"-multidirectional -combined", "-multidirectional -az 30", "-az 300 -multidirectional",
                         "-igor -combined",             "-igor -multidirectional",  "-combined -igor",
                         "-z abc",                      "-z",                       "-s 0",
                         "-alt nan",                    "-alg Wilson",              "-p"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char c[4096], err[1024];
    snprintf(err, sizeof err, "%s/bad.stderr", outdir);
    unlink(opath("bad.tif"));
    snprintf(c, sizeof c, "'%s' hillshade '%s/fractal.tif' '%s' %s", tf, dir, opath("bad.tif"), cases[i]);
    ASSERT_EQ_INT(rc_run(c, err), 2);
    const char *s = rc_slurp(err);
    const char *nl = strchr(s, '\n');
    if (!nl || nl[1] != 0 || !strstr(s, "hillshade")) {
      fprintf(stderr, "'%s': stderr is not one line: %s", cases[i], s);
      return 1;
    }
    ASSERT(access(opath("bad.tif"), F_OK) != 0);
  }
  return 0;
}

/* Prints the largest difference to gdaldem per flag set (runs last). */
static int test_report_max_differences(void) {
  for (int k = 0; k < NSETS; k++) {
    printf("max |terrafort - gdaldem| hillshade %s: %g\n", flag_sets[k], maxdiff[k]);
    ASSERT(maxdiff[k] <= 1);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  dir = argv[1];
  tf = argv[2];
  shared = argv[3];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_hillshade", dir);
  mkdir(outdir, 0755);
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
#ifndef TERRAFORT_HAVE_MPI
  mpirun[0] = 0;
#endif
  static const tr_test_case cases[] = {
      TR_TEST(test_float32_and_nan),       TR_TEST(test_integer_types),     TR_TEST(test_float64),
      TR_TEST(test_vrt_mosaic),            TR_TEST(test_odd_shapes),        TR_TEST(test_rectangular_cells),
      TR_TEST(test_integer_nodata_rule),
      TR_TEST(test_geographic_with_scale), TR_TEST(test_geographic_metric), TR_TEST(test_band_format_co),
      TR_TEST(test_shared_data),           TR_TEST(test_same_bytes_every_way), TR_TEST(test_stats),
      TR_TEST(test_bad_flags),             TR_TEST(test_report_max_differences)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
