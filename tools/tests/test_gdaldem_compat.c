/*
 * test_gdaldem_compat.c - `terrafort slope|aspect` against `gdaldem` itself.
 *
 * For every test DEM (all data types, nodata values incl. NaN, a VRT mosaic,
 * tiny and one-row rasters, huge values, no CRS, no geotransform) and the
 * flag combinations (all of them on the DEMs where the values differ, every
 * flag on the others: testdata_some_flags), both programs run on the same input; the outputs must
 * have the same size, georeferencing, CRS, nodata value, identical nodata
 * and NaN masks, and values within 1e-3 degree (or percent). The real DEMs
 * in ../shared/data are added when present (skipped otherwise).
 */
#include <gdal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "tr_test.h"

static const char *dir, *tf, *shared;
static char outdir[512];

static int compare_one(const char *cmd, const char *input, const char *flags, const char *ext) {
  char g[1024], t[1024], c[4096];
  snprintf(g, sizeof g, "%s/gdaldem%s", outdir, ext);
  snprintf(t, sizeof t, "%s/terrafort%s", outdir, ext);
  char peer[4096];
  snprintf(peer, sizeof peer, "gdaldem %s '%s' '%s' %s -q", cmd, input, g, flags);
  snprintf(c, sizeof c, "'%s' %s '%s' '%s' %s -q", tf, cmd, input, t, flags);
  if (rc_run_pair(peer, c)) return 1;
  rc_raster a, b;
  if (rc_load(g, &a) || rc_load(t, &b)) return 1;
  char what[2048];
  snprintf(what, sizeof what, "%s %s %s", cmd, input, flags);
  int bad = rc_compare(&a, &b, 1e-3, what);
  if (!bad && a.type != b.type) {
    fprintf(stderr, "%s: data type %d vs %d\n", what, a.type, b.type);
    bad = 1;
  }
  rc_free(&a);
  rc_free(&b);
  return bad;
}

static const char *slope_flags[] = {"", "-compute_edges", "-p", "-p -compute_edges", "-alg ZevenbergenThorne",
                                    "-alg ZevenbergenThorne -compute_edges -p", "-s 3.28084", "-s 0.5 -compute_edges"};
static const char *aspect_flags[] = {"", "-compute_edges", "-trigonometric", "-zero_for_flat",
                                     "-alg ZevenbergenThorne", "-zero_for_flat -compute_edges -trigonometric",
                                     "-alg ZevenbergenThorne -zero_for_flat"};

static int all_flags(const char *input) {
  for (size_t i = 0; i < sizeof slope_flags / sizeof *slope_flags; i++)
    if (compare_one("slope", input, slope_flags[i], ".tif")) return 1;
  for (size_t i = 0; i < sizeof aspect_flags / sizeof *aspect_flags; i++)
    if (compare_one("aspect", input, aspect_flags[i], ".tif")) return 1;
  return 0;
}

static int testdata_all_flags(const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return all_flags(p);
}

/* The other data types, the mosaic and the missing georeferencing change
 * how cells are read and what the output carries, not the arithmetic each
 * flag selects (every flag runs on the Float32 and NaN DEMs, the analytic
 * surfaces and the odd shapes): there, each flag still runs, in five
 * combinations, which keeps a third of the process starts. */
static const char *slope_some[] = {"", "-alg ZevenbergenThorne -compute_edges -p", "-s 0.5 -compute_edges"};
static const char *aspect_some[] = {"-zero_for_flat -compute_edges -trigonometric",
                                    "-alg ZevenbergenThorne -zero_for_flat"};

static int testdata_some_flags(const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  for (size_t i = 0; i < sizeof slope_some / sizeof *slope_some; i++)
    if (compare_one("slope", p, slope_some[i], ".tif")) return 1;
  for (size_t i = 0; i < sizeof aspect_some / sizeof *aspect_some; i++)
    if (compare_one("aspect", p, aspect_some[i], ".tif")) return 1;
  return 0;
}

static int test_float32_nodata(void) { return testdata_all_flags("fractal.tif"); }
static int test_nan_nodata(void) { return testdata_all_flags("fractal_nan.tif"); }
static int test_byte(void) { return testdata_some_flags("fractal_byte.tif"); }
static int test_int16(void) { return testdata_some_flags("fractal_int16.tif"); }
static int test_uint16(void) { return testdata_some_flags("fractal_uint16.tif"); }
static int test_int32(void) { return testdata_some_flags("fractal_int32.tif"); }
static int test_uint32(void) { return testdata_some_flags("fractal_uint32.tif"); }
static int test_float64(void) { return testdata_some_flags("fractal_float64.tif"); }
static int test_vrt_mosaic(void) { return testdata_some_flags("mosaic.vrt"); }
static int test_analytic_surfaces(void) {
  return testdata_all_flags("plane.tif") || testdata_all_flags("cone.tif") || testdata_all_flags("flat.tif");
}
static int test_odd_shapes(void) {
  return testdata_all_flags("tiny.tif") || testdata_all_flags("onerow.tif") || testdata_all_flags("hugevalues.tif") ||
         testdata_all_flags("allnodata.tif");
}
static int test_no_crs_no_geotransform(void) {
  return testdata_some_flags("nocrs.tif") || testdata_some_flags("nogeo.tif");
}

/* Band selection and output drivers: -b, -of with a Create driver (ENVI)
 * and a CreateCopy-only driver (AAIGrid), -co creation options honoured. */
static int test_band_format_co(void) {
  char in[1024], c[4096], t[1024];
  snprintf(in, sizeof in, "%s/fractal.tif", dir);
  if (compare_one("slope", in, "-b 1 -of ENVI", ".envi")) return 1;
  if (compare_one("slope", in, "-of AAIGrid", ".asc")) return 1;
  snprintf(t, sizeof t, "%s/co.tif", outdir);
  snprintf(c, sizeof c, "'%s' slope '%s' '%s' -co TILED=YES -co COMPRESS=DEFLATE -co BLOCKXSIZE=64 -co BLOCKYSIZE=64 -q",
           tf, in, t);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  GDALDatasetH ds = GDALOpen(t, GA_ReadOnly);
  ASSERT(ds);
  int bx, by;
  GDALGetBlockSize(GDALGetRasterBand(ds, 1), &bx, &by);
  ASSERT_EQ_INT(bx, 64);
  ASSERT_EQ_INT(by, 64);
  const char *comp = GDALGetMetadataItem(ds, "COMPRESSION", "IMAGE_STRUCTURE");
  ASSERT(comp && !strcmp(comp, "DEFLATE"));
  GDALClose(ds);
  /* the extension picks the driver when -of is absent */
  snprintf(t, sizeof t, "%s/ext.asc", outdir);
  snprintf(c, sizeof c, "'%s' aspect '%s' '%s' -q", tf, in, t);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ds = GDALOpen(t, GA_ReadOnly);
  ASSERT(ds && !strcmp(GDALGetDriverShortName(GDALGetDatasetDriver(ds)), "AAIGrid"));
  GDALClose(ds);
  return 0;
}

/* The real DEMs: Logan River VRT mosaic (UTM) and enogeo (geographic,
 * nodata -3.4e38), with -s for the geographic one as gdaldem needs. */
static int test_shared_data(void) {
  char p[1024];
  snprintf(p, sizeof p, "%s/LoganVRT/output.vrt", shared);
  if (access(p, R_OK) != 0) {
    printf("skip: %s not present\n", p);
    return 0;
  }
  if (all_flags(p)) return 1;
  snprintf(p, sizeof p, "%s/enogeo.tif", shared);
  if (access(p, R_OK) != 0) return 0;
  const char *f[] = {"-s 111120", "-s 111120 -compute_edges", "-s 111120 -p", "-s 111120 -alg ZevenbergenThorne"};
  for (int i = 0; i < 4; i++)
    if (compare_one("slope", p, f[i], ".tif")) return 1;
  for (size_t i = 0; i < sizeof aspect_flags / sizeof *aspect_flags; i++)
    if (compare_one("aspect", p, aspect_flags[i], ".tif")) return 1;
  return 0;
}

/* The parity tests run gdaldem in their own process (raster_check.h's
 * rc_gdaldem: GDAL's GDALDEMProcessing with the program's arguments). Here
 * the gdaldem program itself runs beside it, for each mode and a few flags
 * that take other paths (integer input, a mosaic, -compute_edges, -alg,
 * -combined, -p, a colour ramp with -alpha, ENVI output): the files must be
 * the same bytes, or the parity tests' reference is no longer gdaldem's. */
static int test_in_process_peer_is_the_program(void) {
  static const struct {
    const char *mode, *dem, *flags;
  } runs[] = {{"slope", "fractal_nan.tif", "-p -s 2"},
              {"aspect", "fractal_int16.tif", "-zero_for_flat -compute_edges"},
              {"hillshade", "mosaic.vrt", "-combined -alg ZevenbergenThorne -z 1.5"},
              {"TRI", "fractal_uint16.tif", "-alg Riley"},
              {"TPI", "fractal.tif", "-compute_edges"},
              {"roughness", "fractal_float64.tif", ""},
              {"slope", "fractal.tif", "-of ENVI"},
              {"color-relief", "fractal_nan.tif", "-alpha"}};
  char ramp[600], in[600], out[2][600], peer[4096];
  snprintf(ramp, sizeof ramp, "%s/peer_ramp.txt", outdir);
  FILE *rf = fopen(ramp, "w");
  ASSERT(rf != NULL);
  fputs("0% blue\n50% 255 255 0\n100% 255 0 0 200\nnv 0 0 0 0\n", rf);
  fclose(rf);
  for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
    const int colours = !strcmp(runs[i].mode, "color-relief"), envi = strstr(runs[i].flags, "ENVI") != NULL;
    snprintf(in, sizeof in, "%s/%s", dir, runs[i].dem);
    for (int k = 0; k < 2; k++) { /* 0: in this process, 1: the program */
      snprintf(out[k], sizeof out[k], "%s/peer_%s%s", outdir, k ? "program" : "in_process", envi ? ".envi" : ".tif");
      snprintf(peer, sizeof peer, "gdaldem %s '%s'%s%s%s '%s' %s -q", runs[i].mode, in, colours ? " '" : "",
               colours ? ramp : "", colours ? "'" : "", out[k], runs[i].flags);
      if (k)
        ASSERT_EQ_INT(rc_run(peer, "/dev/null"), 0);
      else
        ASSERT_EQ_INT(rc_gdaldem(peer), 0);
    }
    if (!rc_same_file(out[0], out[1])) {
      fprintf(stderr, "gdaldem %s %s %s: the in-process run differs from the program's\n", runs[i].mode, runs[i].dem,
              runs[i].flags);
      return 1;
    }
  }
  /* a line it cannot read is refused, not run */
  ASSERT(rc_gdaldem("gdaldem slope") != 0);
  ASSERT(rc_gdaldem("gdalinfo x y z") != 0);
  char longer[16384];
  snprintf(longer, sizeof longer, "gdaldem slope '%s' '%s/cut.tif' %8200s", in, outdir, "-q");
  ASSERT(rc_gdaldem(longer) != 0); /* too long: refused, not run without its last words */
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  dir = argv[1];
  tf = argv[2];
  shared = argv[3];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_gdaldem_compat", dir);
  mkdir(outdir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_float32_nodata),
                                       TR_TEST(test_nan_nodata),
                                       TR_TEST(test_byte),
                                       TR_TEST(test_int16),
                                       TR_TEST(test_uint16),
                                       TR_TEST(test_int32),
                                       TR_TEST(test_uint32),
                                       TR_TEST(test_float64),
                                       TR_TEST(test_vrt_mosaic),
                                       TR_TEST(test_analytic_surfaces),
                                       TR_TEST(test_odd_shapes),
                                       TR_TEST(test_no_crs_no_geotransform),
                                       TR_TEST(test_band_format_co),
                                       TR_TEST(test_shared_data),
                                       TR_TEST(test_in_process_peer_is_the_program)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
