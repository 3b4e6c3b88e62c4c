/*
 * test_tri_tpi_roughness.c - `terrafort tri|tpi|roughness` against `gdaldem
 * TRI|TPI|roughness` itself, and the same bytes from every way of running.
 *
 * Parity: for every test DEM (all data types, NaN nodata, a VRT mosaic,
 * tiny, one-row, flat, huge values, all nodata, no geotransform) and both
 * TRI algorithms, with and without -compute_edges, both programs run on the
 * same input; the outputs must have the same size, georeferencing, CRS,
 * type, nodata value, identical nodata and NaN masks, and values within
 * 1e-3. The kernels follow gdaldem's order of operations, so the largest
 * difference seen per mode is printed and expected to be 0. enogeo.tif from
 * ../shared/data is added when present.
 *
 * Identity: --threads 1 and 2, --tile-size 37 and 512, --ft dual and mpirun
 * with 2 and 3 ranks write the same bytes. Also: -b/-of/-co, --stats, and a
 * bad flag exits 2 with one line.
 */
#include <gdal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "tr_test.h"

static const char *dir, *tf, *shared;
static char outdir[512], mpirun[256];

/* The modes: gdaldem's name, terrafort's command and flags. */
typedef struct {
  const char *gdaldem, *cmd, *flags;
  double maxdiff;
} mode;

static mode modes[] = {{"TRI", "tri", "", 0},    {"TRI", "tri", "-alg Wilson", 0},
                       {"TPI", "tpi", "", 0},    {"roughness", "roughness", "", 0}};
enum { NMODES = sizeof modes / sizeof modes[0] };

static const char *opath(const char *name) {
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", outdir, name);
  return p[k];
}

/* Runs gdaldem and terrafort on input with flags; compares the outputs and
 * records the largest difference in m->maxdiff. */
static int compare_one(mode *m, const char *input, const char *flags, const char *ext) {
  char g[1024], t[1024], c[4096], what[2048];
  snprintf(g, sizeof g, "%s/gdaldem%s", outdir, ext);
  snprintf(t, sizeof t, "%s/terrafort%s", outdir, ext);
  char peer[4096];
  snprintf(peer, sizeof peer, "gdaldem %s '%s' '%s' %s %s -q", m->gdaldem, input, g, m->flags, flags);
  snprintf(c, sizeof c, "'%s' %s '%s' '%s' %s %s -q", tf, m->cmd, input, t, m->flags, flags);
  if (rc_run_pair(peer, c)) return 1;
  rc_raster a, b;
  if (rc_load(g, &a) || rc_load(t, &b)) return 1;
  snprintf(what, sizeof what, "%s %s %s %s", m->cmd, m->flags, input, flags);
  int bad = rc_compare(&a, &b, 1e-3, what);
  if (!bad && a.type != b.type) {
    fprintf(stderr, "%s: data type %d vs %d\n", what, a.type, b.type);
    bad = 1;
  }
  for (long i = 0; !bad && i < (long)a.rows * a.cols; i++) {
    double x = a.v[i], y = b.v[i];
    if (rc_is_nodata(&a, x) || isnan(x) || x == y) continue;
    if (fabs(x - y) > m->maxdiff) m->maxdiff = fabs(x - y);
  }
  rc_free(&a);
  rc_free(&b);
  return bad;
}

static int all_modes(const char *input) {
  for (int k = 0; k < NMODES; k++)
    if (compare_one(&modes[k], input, "", ".tif") || compare_one(&modes[k], input, "-compute_edges", ".tif"))
      return 1;
  return 0;
}

static int testdata_all_modes(const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return all_modes(p);
}

static int test_float32_and_nan(void) {
  return testdata_all_modes("fractal.tif") || testdata_all_modes("fractal_nan.tif");
}
static int test_integer_types(void) {
  /* Byte, Int16 and UInt16 take gdaldem's integer path; Int32 and UInt32 its Float32 one. */
  const char *t[] = {"fractal_byte.tif", "fractal_int16.tif", "fractal_uint16.tif", "fractal_int32.tif",
                     "fractal_uint32.tif"};
  for (int i = 0; i < 5; i++)
    if (testdata_all_modes(t[i])) return 1;
  return 0;
}
static int test_float64(void) { return testdata_all_modes("fractal_float64.tif"); }
static int test_vrt_mosaic(void) { return testdata_all_modes("mosaic.vrt"); }
static int test_odd_shapes(void) {
  const char *t[] = {"tiny.tif", "onerow.tif", "flat.tif", "hugevalues.tif"};
  for (int i = 0; i < 4; i++)
    if (testdata_all_modes(t[i])) return 1;
  /* all nodata, no geotransform: one mode is enough */
  const char *u[] = {"allnodata.tif", "nogeo.tif"};
  for (int i = 0; i < 2; i++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, u[i]);
    if (compare_one(&modes[0], p, "", ".tif") || compare_one(&modes[0], p, "-compute_edges", ".tif")) return 1;
  }
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
    for (int k = 0; k < NMODES; k++)
      if (compare_one(&modes[k], opath(files[f].name), "", ".tif") ||
          compare_one(&modes[k], opath(files[f].name), "-compute_edges", ".tif"))
        return 1;
  }
  return 0;
}

/* -alg Riley named explicitly is the default; the name is case-insensitive. */
static int test_riley_explicit(void) {
  char p[1024];
  snprintf(p, sizeof p, "%s/fractal.tif", dir);
  mode riley = {"TRI", "tri", "-alg Riley", 0}, wilson = {"TRI", "tri", "-alg wilson", 0};
  ASSERT(!compare_one(&riley, p, "-compute_edges", ".tif"));
  ASSERT(!compare_one(&wilson, p, "", ".tif"));
  return 0;
}

/* Band selection and output drivers: -b, -of with a Create driver (ENVI)
 * and a CreateCopy-only driver (AAIGrid), -co honoured. */
static int test_band_format_co(void) {
  char in[1024], c[4096];
  snprintf(in, sizeof in, "%s/fractal.tif", dir);
  if (compare_one(&modes[0], in, "-b 1 -of ENVI", ".envi")) return 1;
  if (compare_one(&modes[2], in, "-of AAIGrid", ".asc")) return 1;
  snprintf(c, sizeof c, "'%s' roughness '%s' '%s' -co TILED=YES -co BLOCKXSIZE=64 -co BLOCKYSIZE=64 -q", tf, in,
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

/* The real geographic DEM (nodata -3.4e38), when present. */
static int test_shared_enogeo(void) {
  char p[1024];
  snprintf(p, sizeof p, "%s/enogeo.tif", shared);
  if (access(p, R_OK) != 0) {
    printf("skip: %s not present\n", p);
    return 0;
  }
  return all_modes(p);
}

/* Runs `[prefix] terrafort CMD IN OUT FLAGS -q`; returns the exit code. */
static int tfrun(const char *prefix, const mode *m, const char *in, const char *out, const char *flags) {
  char c[4096];
  snprintf(c, sizeof c, "%s '%s' %s %s '%s/%s' '%s' %s -q", prefix, tf, m->cmd, m->flags, dir, in, opath(out),
           flags);
  return rc_run(c, NULL);
}

/* Every way of running gives the bytes of one thread with one big tile.
 * Ranks run one thread each: on a small shared machine, ranks times threads
 * beyond its cores would only measure the oversubscription. The ranks' path
 * (rows split by rank, halos exchanged) is the local runner's, the same for
 * every 3x3 kernel: each mode meets it on one of the two inputs, in turn,
 * and each input meets it with two of the modes (the threads' and tiles'
 * ways, where a kernel's own edge handling differs, run for every pair). */
static int test_same_bytes_every_way(void) {
  static const struct {
    const char *input, *flags, *ways[6];
  } cases[] = {
      {"demo.tif", "", {"--threads 2", "--threads 1 --tile-size 37", "--ft dual --tile-size 256",
                        "MPI2 --threads 1 --tile-size 256", "MPI3 --threads 1 --tile-size 200"}},
      {"fractal_nan.tif", "-compute_edges", {"--threads 2", "--threads 2 --tile-size 37", "--threads 1 --tile-size 37",
                                             "--ft dual --tile-size 37", "MPI2 --threads 1 --tile-size 37",
                                             "MPI3 --threads 1 --tile-size 37"}}};
  for (int k = 0; k < NMODES; k++)
    for (int i = 0; i < 2; i++) {
      char flags[512], pre[512];
      snprintf(flags, sizeof flags, "%s --threads 1 --tile-size 512", cases[i].flags);
      ASSERT_EQ_INT(tfrun("", &modes[k], cases[i].input, "ref.tif", flags), 0);
      for (int w = 0; w < 6 && cases[i].ways[w]; w++) {
        const char *way = cases[i].ways[w];
        pre[0] = 0;
        if (!strncmp(way, "MPI", 3)) {
          if (!mpirun[0] || (k + i) % 2) continue;
          snprintf(pre, sizeof pre, "%s -n %c", mpirun, way[3]);
          way += 5;
        }
        snprintf(flags, sizeof flags, "%s %s", cases[i].flags, way);
        ASSERT_EQ_INT(tfrun(pre, &modes[k], cases[i].input, "way.tif", flags), 0);
        if (!rc_same_file(opath("ref.tif"), opath("way.tif"))) {
          fprintf(stderr, "%s %s %s: '%s %s' differs\n", modes[k].cmd, modes[k].flags, cases[i].input, pre, flags);
          return 1;
        }
      }
    }
  return 0;
}

static int test_stats(void) {
  ASSERT_EQ_INT(tfrun("", &modes[0], "fractal.tif", "s.tif", "--stats"), 0);
  GDALDatasetH ds = GDALOpen(opath("s.tif"), GA_ReadOnly);
  ASSERT(ds);
  const char *mean = GDALGetMetadataItem(GDALGetRasterBand(ds, 1), "STATISTICS_MEAN", NULL);
  int ok = mean && atof(mean) > 0;
  GDALClose(ds);
  ASSERT(ok);
  return 0;
}

/* A bad flag or value: exit 2 and exactly one line on stderr, no output. */
static int test_bad_flags(void) {
  const char *cases[][2] = {{"tri", "-alg Horn"}, {"tri", "-alg"}, {"tpi", "-alg Wilson"}, {"roughness", "-p"}};
  for (int i = 0; i < 4; i++) {
    char c[4096], err[1024];
    snprintf(err, sizeof err, "%s/bad.stderr", outdir);
    unlink(opath("bad.tif"));
    snprintf(c, sizeof c, "'%s' %s '%s/fractal.tif' '%s' %s", tf, cases[i][0], dir, opath("bad.tif"), cases[i][1]);
    ASSERT_EQ_INT(rc_run(c, err), 2);
    const char *s = rc_slurp(err);
    const char *nl = strchr(s, '\n');
    ASSERT(nl && nl[1] == 0);
    ASSERT(strstr(s, cases[i][0]));
    ASSERT(access(opath("bad.tif"), F_OK) != 0);
  }
  return 0;
}

/* Prints the largest difference to gdaldem seen per mode (runs last). */
static int test_report_max_differences(void) {
  for (int k = 0; k < NMODES; k++) {
    printf("max |terrafort - gdaldem| %s%s%s: %.3g\n", modes[k].cmd, modes[k].flags[0] ? " " : "", modes[k].flags,
           modes[k].maxdiff);
    ASSERT(modes[k].maxdiff <= 1e-6);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  dir = argv[1];
  tf = argv[2];
  shared = argv[3];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_tri_tpi_roughness", dir);
  mkdir(outdir, 0755);
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
#ifndef TERRAFORT_HAVE_MPI
  mpirun[0] = 0;
#endif
  static const tr_test_case cases[] = {
      TR_TEST(test_float32_and_nan),   TR_TEST(test_integer_types),        TR_TEST(test_float64),
      TR_TEST(test_vrt_mosaic),        TR_TEST(test_odd_shapes),           TR_TEST(test_integer_nodata_rule),
      TR_TEST(test_riley_explicit),    TR_TEST(test_band_format_co),       TR_TEST(test_shared_enogeo),
      TR_TEST(test_same_bytes_every_way), TR_TEST(test_stats),             TR_TEST(test_bad_flags),
      TR_TEST(test_report_max_differences)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
