/*
 * test_color_relief.c - `terrafort color-relief` against `gdaldem
 * color-relief` itself, run in the same test on the same input.
 *
 * Parity: every committed colour table (testdata/ramp_*.txt: absolute,
 * percentages with nv, named colours with alpha, unsorted with a repeated
 * elevation, a GMT palette) x {default, -alpha, -exact_color_entry,
 * -nearest_color_entry} on the test DEMs of every data type, NaN nodata and
 * a VRT mosaic; then generated tables (fixed seed) over a raster holding
 * every entry's value and its neighbouring floats, where interpolation
 * rounding, the nodata neighbours and the bins of the lookup are most
 * fragile. Outputs must agree in size, band count, Byte type, colour
 * interpretation, georeferencing, CRS and (absent) nodata, and every band
 * within 1; the largest difference is printed (it is 0).
 * Also: percentages from stored statistics, -of/-co, the same bytes for
 * --threads 1/2, --tile-size 37/512, --ft dual and mpirun -n 2/3, --stats,
 * and errors: exit codes, one stderr line naming the file and line, nothing
 * left behind.
 *
 * Both programs run with GDAL_PAM_ENABLED=NO so gdaldem does not write
 * statistics beside the shared test DEMs (terrafort never does).
 * Arguments: BUILD/testdata, the terrafort binary, the source testdata
 * folder (the ramp_*.txt files).
 */
#include <gdal.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "tr_test.h"

static const char *dir, *tf, *src;
static char outdir[512], mpirun[256];
static int max_diff_seen;

static const char *path_in(const char *base, const char *name) {
  if (name[0] == '/') return name; /* already a path */
  static char p[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", base, name);
  return p[k];
}
#define DEM(name) path_in(dir, name)
#define RAMP(name) path_in(src, name)
#define OUT(name) path_in(outdir, name)

/* ------------------------------------------------ reading every band */

typedef struct {
  int rows, cols, bands;
  GDALDataType type[4];
  GDALColorInterp ci[4];
  int has_nodata[4];
  double gt[6];
  char wkt[4096];
  unsigned char *v; /* bands x rows x cols */
} img;

static int img_load(const char *path, img *m) {
  memset(m, 0, sizeof *m);
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  m->rows = GDALGetRasterYSize(ds);
  m->cols = GDALGetRasterXSize(ds);
  m->bands = GDALGetRasterCount(ds);
  GDALGetGeoTransform(ds, m->gt);
  snprintf(m->wkt, sizeof m->wkt, "%s", GDALGetProjectionRef(ds));
  int bad = m->bands < 1 || m->bands > 4;
  const size_t plane = (size_t)m->rows * (size_t)m->cols;
  m->v = bad ? NULL : malloc(plane * (size_t)m->bands);
  for (int b = 0; !bad && b < m->bands; b++) {
    GDALRasterBandH h = GDALGetRasterBand(ds, b + 1);
    m->type[b] = GDALGetRasterDataType(h);
    m->ci[b] = GDALGetRasterColorInterpretation(h);
    GDALGetRasterNoDataValue(h, &m->has_nodata[b]);
    bad = GDALRasterIO(h, GF_Read, 0, 0, m->cols, m->rows, m->v + plane * (size_t)b, m->cols, m->rows, GDT_Byte, 0,
                       0) != CE_None;
  }
  GDALClose(ds);
  if (bad) fprintf(stderr, "cannot read the bands of %s\n", path);
  return bad;
}

/* b against the reference a; prints the first disagreement. Cells where
 * skip (rows x cols, may be NULL) is set are left out. */
static int img_compare(const img *a, const img *b, const char *what, const unsigned char *skip) {
  if (a->rows != b->rows || a->cols != b->cols || a->bands != b->bands) {
    fprintf(stderr, "%s: %dx%dx%d vs %dx%dx%d\n", what, a->cols, a->rows, a->bands, b->cols, b->rows, b->bands);
    return 1;
  }
  /* GDAL's default geotransform stands in where there is none: gdaldem
   * writes it out, terrafort writes nothing (as for slope). */
  if (memcmp(a->gt, b->gt, sizeof a->gt) || strcmp(a->wkt, b->wkt)) {
    fprintf(stderr, "%s: georeferencing or CRS differs\n", what);
    return 1;
  }
  const size_t plane = (size_t)a->rows * (size_t)a->cols;
  for (int k = 0; k < a->bands; k++) {
    if (a->type[k] != GDT_Byte || b->type[k] != GDT_Byte || a->ci[k] != b->ci[k] ||
        a->has_nodata[k] != b->has_nodata[k]) {
      fprintf(stderr, "%s: band %d: type %d/%d, colour interpretation %d/%d, nodata %d/%d\n", what, k + 1, a->type[k],
              b->type[k], a->ci[k], b->ci[k], a->has_nodata[k], b->has_nodata[k]);
      return 1;
    }
    int maxd = 0;
    size_t at = 0;
    for (size_t i = 0; i < plane; i++) {
      if (skip && skip[i]) continue;
      int d = abs((int)a->v[k * plane + i] - (int)b->v[k * plane + i]);
      if (d > maxd) {
        maxd = d;
        at = i;
      }
    }
    if (maxd > max_diff_seen) max_diff_seen = maxd;
    if (maxd > 1) {
      fprintf(stderr, "%s: band %d differs by %d at row %zu col %zu: %d vs %d\n", what, k + 1, maxd,
              at / (size_t)a->cols, at % (size_t)a->cols, a->v[k * plane + at], b->v[k * plane + at]);
      return 1;
    }
  }
  return 0;
}

static void img_free(img *m) {
  free(m->v);
  m->v = NULL;
}

/* gdaldem and terrafort on the same input; outputs compared. */
static int compare_one(const char *input, const char *ramp, const char *flags, const char *ext) {
  char g[1024], t[1024], c[4096], what[2048];
  snprintf(g, sizeof g, "%s/gdaldem%s", outdir, ext);
  snprintf(t, sizeof t, "%s/terrafort%s", outdir, ext);
  snprintf(what, sizeof what, "color-relief %s %s %s", input, ramp, flags);
  char peer[4096];
  snprintf(peer, sizeof peer, "gdaldem color-relief '%s' '%s' '%s' %s -q", input, ramp, g, flags);
  snprintf(c, sizeof c, "'%s' color-relief '%s' '%s' '%s' %s -q", tf, input, ramp, t, flags);
  if (rc_run_pair(peer, c)) return 1;
  img a = {0}, b = {0};
  int bad = img_load(g, &a) || img_load(t, &b) || img_compare(&a, &b, what, NULL);
  img_free(&a);
  img_free(&b);
  return bad;
}

static const char *ramps[] = {"ramp_basic.txt", "ramp_percent.txt", "ramp_named.txt", "ramp_unsorted.txt",
                              "ramp_gmt.txt"};
static const char *modes[] = {"", "-alpha", "-exact_color_entry", "-nearest_color_entry"};

static int all_ramps_and_modes(const char *dem) {
  for (size_t r = 0; r < sizeof ramps / sizeof *ramps; r++)
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
      if (compare_one(DEM(dem), RAMP(ramps[r]), modes[m], ".tif")) return 1;
  return 0;
}

/* Integer cells and a mosaic change how values are read, not how a ramp is
 * applied (all twenty ramp x mode pairs run on the Float32 and NaN DEMs):
 * there every ramp and every mode runs once, in six pairs. */
static int ramps_and_modes_once(const char *dem) {
  for (size_t r = 0; r <= sizeof ramps / sizeof *ramps; r++)
    if (compare_one(DEM(dem), RAMP(ramps[r % (sizeof ramps / sizeof *ramps)]), modes[r % (sizeof modes / sizeof *modes)],
                    ".tif"))
      return 1;
  return 0;
}

static int test_float32_nodata(void) { return all_ramps_and_modes("fractal.tif"); }
static int test_nan_nodata(void) { return all_ramps_and_modes("fractal_nan.tif"); }
static int test_int16(void) { return ramps_and_modes_once("fractal_int16.tif"); }
static int test_byte(void) { return ramps_and_modes_once("fractal_byte.tif"); }
static int test_vrt_mosaic(void) { return ramps_and_modes_once("mosaic.vrt"); }

/* The other DEMs: every data type, no nodata ("nv" ignored), all nodata
 * (percentages of an empty range), huge values, no CRS, no geotransform. */
static int test_other_dems(void) {
  const char *dems[] = {"fractal_float64.tif",
                        "fractal_uint16.tif",
                        "fractal_int32.tif",
                        "fractal_uint32.tif",
                        "plane.tif",
                        "flat.tif",
                        "tiny.tif",
                        "onerow.tif",
                        "allnodata.tif",
                        "hugevalues.tif",
                        "nocrs.tif",
                        "nogeo.tif",
                        "geographic.tif",
                        "demo.tif"};
  /* Two cases for every DEM, and one of three more in turn. */
  const char *cases[][2] = {{"ramp_percent.txt", ""},
                            {"ramp_named.txt", "-exact_color_entry -alpha"},
                            {"ramp_basic.txt", "-alpha"},
                            {"ramp_unsorted.txt", "-nearest_color_entry"},
                            {"ramp_gmt.txt", "-alpha"}};
  for (size_t d = 0; d < sizeof dems / sizeof *dems; d++) {
    const size_t pick[3] = {0, 1, 2 + d % 3};
    for (size_t k = 0; k < 3; k++)
      if (compare_one(DEM(dems[d]), RAMP(cases[pick[k]][0]), cases[pick[k]][1], ".tif")) return 1;
  }
  return 0;
}

/* Non-finite cells: terrafort reads every one as NaN, nodata in every
 * product: where the DEM declares nodata, NaN and +-Inf cells get exactly
 * the colour gdaldem gives its nodata cells (gdaldem itself colours them as
 * values: NaN past the last entry, white here); without a declared nodata
 * they get gdaldem's NaN colour (where gdaldem gives -Inf the lowest
 * entry's and +Inf the highest's). Every other cell matches gdaldem. An
 * "nv" entry is checked too: its colour on every non-finite cell. */
static int test_nonfinite_cells(void) {
  const char *dems[] = {"nonfinite.tif", "nonfinite_nond.tif"};
  for (int d = 0; d < 2; d++) {
    if (access(DEM(dems[d]), R_OK) != 0) {
      printf("skip: %s not present\n", dems[d]);
      continue;
    }
    GDALDatasetH ds = GDALOpen(DEM(dems[d]), GA_ReadOnly);
    ASSERT(ds);
    const int rows = GDALGetRasterYSize(ds), cols = GDALGetRasterXSize(ds);
    int has_nd = 0;
    const double nd = GDALGetRasterNoDataValue(GDALGetRasterBand(ds, 1), &has_nd);
    float *z = malloc(sizeof *z * (size_t)rows * (size_t)cols);
    unsigned char *nonfinite = calloc((size_t)rows * (size_t)cols, 1);
    int ok =
        z && nonfinite &&
        GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Read, 0, 0, cols, rows, z, cols, rows, GDT_Float32, 0, 0) == CE_None;
    GDALClose(ds);
    /* ref: the cell whose gdaldem colour every non-finite cell must have (a
     * nodata cell, or without nodata a NaN one) */
    long nan_at = -1, nd_at = -1, n_nonfinite = 0;
    for (long i = 0; ok && i < (long)rows * cols; i++) {
      if (isnan(z[i]) && nan_at < 0) nan_at = i;
      if (has_nd && z[i] == (float)nd && nd_at < 0) nd_at = i;
      if (isinf(z[i]) || (has_nd && isnan(z[i]))) nonfinite[i] = 1, n_nonfinite++;
    }
    free(z);
    const long ref = has_nd ? nd_at : nan_at;
    /* a table with an "nv" entry beside the two of testdata */
    char nv_ramp[700];
    snprintf(nv_ramp, sizeof nv_ramp, "%s", OUT("ramp_nv.txt"));
    FILE *rf = fopen(nv_ramp, "w");
    ok = ok && rf && fprintf(rf, "nv 10 20 30 40\n500 0 0 255\n2000 255 0 0\n") > 0;
    if (rf) fclose(rf);
    for (size_t r = 0; ok && r < 3 && ref >= 0 && n_nonfinite > 0; r++) {
      const char *ramp = r == 2 ? nv_ramp : RAMP(r ? "ramp_basic.txt" : "ramp_percent.txt");
      char c[4096];
      snprintf(c, sizeof c, "gdaldem color-relief '%s' '%s' '%s' -alpha -q", DEM(dems[d]), ramp, OUT("g.tif"));
      ok = rc_run(c, "/dev/null") == 0;
      snprintf(c, sizeof c, "'%s' color-relief '%s' '%s' '%s' -alpha -q", tf, DEM(dems[d]), ramp, OUT("t.tif"));
      ok = ok && rc_run(c, NULL) == 0;
      img a = {0}, b = {0};
      ok = ok && !img_load(OUT("g.tif"), &a) && !img_load(OUT("t.tif"), &b) && !img_compare(&a, &b, c, nonfinite);
      const size_t plane = (size_t)rows * (size_t)cols;
      for (size_t i = 0; ok && i < plane; i++)
        for (int k = 0; nonfinite[i] && k < 4; k++) ok = b.v[k * plane + i] == a.v[k * plane + (size_t)ref];
      /* the nv entry's colour where there is one and the DEM declares nodata */
      for (size_t i = 0; ok && r == 2 && has_nd && i < plane; i++)
        if (nonfinite[i]) ok = b.v[i] == 10 && b.v[plane + i] == 20 && b.v[2 * plane + i] == 30 && b.v[3 * plane + i] == 40;
      img_free(&a);
      img_free(&b);
    }
    free(nonfinite);
    ASSERT(ok && ref >= 0 && n_nonfinite > 0);
  }
  return 0;
}

/* ----------------------------------------------- generated colour tables */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) { /* uniform in [0, 1), xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* A Float32 raster of `n` values (rows of 100), nodata as given. */
static int write_raster(const char *path, const float *v, int n, int has_nd, double nd) {
  const int cols = 100, rows = (n + cols - 1) / cols;
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, cols, rows, 1, GDT_Float32, NULL);
  if (!ds) return 1;
  double gt[6] = {0, 1, 0, 0, 0, -1};
  GDALSetGeoTransform(ds, gt);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  if (has_nd) GDALSetRasterNoDataValue(b, nd);
  float *full = calloc((size_t)rows * cols, sizeof *full);
  for (int i = 0; i < rows * cols; i++) full[i] = v[i % n];
  int bad = GDALRasterIO(b, GF_Write, 0, 0, cols, rows, full, cols, rows, GDT_Float32, 0, 0) != CE_None;
  free(full);
  GDALClose(ds);
  return bad;
}

/* Tables of 1 to 12 entries at scales from 1e-3 to 1e6, some integer (so
 * cells hit them exactly), some repeated, components outside 0..255, with
 * or without alpha, an "nv" entry, a NaN entry, a percentage; nodata none,
 * -9999, 0 (in the middle of the ramp), NaN, or an entry's value. The
 * raster holds a sweep over the ramp and each entry's float with its three
 * neighbours on each side. */
static int test_generated_tables(void) {
  const char *tif = OUT("gen.tif"), *txt = OUT("gen.txt");
  for (int trial = 0; trial < 20; trial++) {
    const int ne = 1 + (int)(rnd() * 12);
    const double scale = pow(10, -3 + 9 * rnd());
    double lo = (-2000 + 5000 * rnd()) * scale, hi = (-2000 + 5000 * rnd()) * scale, e[12] = {0};
    if (lo > hi) {
      double t = lo;
      lo = hi;
      hi = t;
    }
    const int integer = rnd() < 0.5;
    for (int k = 0; k < ne; k++) e[k] = integer ? round(lo + (hi - lo) * rnd()) : lo + (hi - lo) * rnd();
    if (ne > 1 && rnd() < 0.3) e[1] = e[0];
    const double nds[] = {-9999, 0, NAN, e[0]};
    const int nd_kind = (int)(rnd() * 5); /* 4: no nodata */
    const int has_nd = nd_kind < 4;
    const double nd = has_nd ? nds[nd_kind] : 0;
    FILE *f = fopen(txt, "w");
    ASSERT(f);
    for (int k = 0; k < ne; k++) {
      int c[4];
      for (int j = 0; j < 4; j++) c[j] = -20 + (int)(300 * rnd());
      if (rnd() < 0.5)
        fprintf(f, "%.17g %d %d %d %d\n", e[k], c[0], c[1], c[2], c[3]);
      else
        fprintf(f, "%.17g,%d,%d,%d\n", e[k], c[0], c[1], c[2]);
      if (k == ne / 2 && rnd() < 0.6) fprintf(f, "nv 1 2 3 4\n");
    }
    if (rnd() < 0.2) fprintf(f, "nan 200 100 50\n");
    if (rnd() < 0.3) fprintf(f, "%d%% 9 9 9\n", (int)(rnd() * 101));
    fclose(f);
    float v[4000];
    int n = 0;
    for (; n < 3000; n++) v[n] = (float)(lo - 0.1 * (hi - lo) + 1.2 * (hi - lo) * rnd());
    for (int k = 0; k < ne; k++) {
      float x = (float)e[k], up = x, down = x;
      v[n++] = x;
      for (int s = 0; s < 3; s++) {
        v[n++] = up = nextafterf(up, INFINITY);
        v[n++] = down = nextafterf(down, -INFINITY);
      }
    }
    for (int k = 0; has_nd && k < 40; k++) v[n++] = (float)nd;
    ASSERT_EQ_INT(write_raster(tif, v, n, has_nd, nd), 0);
    const char *flags[] = {"-alpha", "-alpha -exact_color_entry", "-alpha -nearest_color_entry"};
    for (int m = 0; m < 3; m++)
      if (compare_one(tif, txt, flags[m], ".tif")) {
        fprintf(stderr, "trial %d, nodata kind %d, table:\n%s", trial, nd_kind, rc_slurp(txt));
        return 1;
      }
  }
  return 0;
}

/* ------------------------------------------------------ other behaviour */

/* Percentages use the band's stored STATISTICS_MINIMUM/MAXIMUM when there
 * are some (here the .aux.xml gdaldem leaves on a first run, rounded to 14
 * digits), and terrafort writes nothing beside the DEM. */
static int test_stored_statistics(void) {
  char c[4096];
  snprintf(c, sizeof c, "cp '%s' '%s' && cp '%s' '%s'", DEM("fractal.tif"), OUT("pam.tif"), DEM("fractal.tif"),
           OUT("nopam.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  unlink(OUT("pam.tif.aux.xml"));
  unlink(OUT("nopam.tif.aux.xml"));
  snprintf(c, sizeof c, "GDAL_PAM_ENABLED=YES gdaldem color-relief '%s' '%s' '%s' -q", OUT("pam.tif"),
           RAMP("ramp_percent.txt"), OUT("first.tif"));
  ASSERT_EQ_INT(rc_run(c, "/dev/null"), 0);
  ASSERT(access(OUT("pam.tif.aux.xml"), F_OK) == 0);
  setenv("GDAL_PAM_ENABLED", "YES", 1);
  int bad = compare_one(OUT("pam.tif"), RAMP("ramp_percent.txt"), "-alpha", ".tif");
  snprintf(c, sizeof c, "'%s' color-relief '%s' '%s' '%s' -q", tf, OUT("nopam.tif"), RAMP("ramp_percent.txt"),
           OUT("t.tif"));
  if (!bad) bad = rc_run(c, NULL) != 0 || access(OUT("nopam.tif.aux.xml"), F_OK) == 0;
  setenv("GDAL_PAM_ENABLED", "NO", 1);
  ASSERT(!bad);
  return 0;
}

/* -b, -of with a CreateCopy-only driver (PNG), -co honoured, RGB/RGBA
 * colour interpretation as gdaldem's. */
static int test_band_format_co(void) {
  if (compare_one(DEM("fractal.tif"), RAMP("ramp_basic.txt"), "-b 1 -of PNG", ".png")) return 1;
  if (compare_one(DEM("fractal.tif"), RAMP("ramp_named.txt"), "-alpha -of PNG", ".png")) return 1;
  char c[4096];
  snprintf(c, sizeof c, "'%s' color-relief '%s' '%s' '%s' -co TILED=YES -co COMPRESS=DEFLATE -alpha -q", tf,
           DEM("demo.tif"), RAMP("ramp_basic.txt"), OUT("co.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  GDALDatasetH ds = GDALOpen(OUT("co.tif"), GA_ReadOnly);
  ASSERT(ds);
  int bx, by;
  GDALGetBlockSize(GDALGetRasterBand(ds, 1), &bx, &by);
  const char *comp = GDALGetMetadataItem(ds, "COMPRESSION", "IMAGE_STRUCTURE");
  const int deflate = comp && !strcmp(comp, "DEFLATE"); /* comp dies with ds */
  const int bands = GDALGetRasterCount(ds);
  GDALClose(ds);
  ASSERT_EQ_INT(bx, 256);
  ASSERT_EQ_INT(by, 256);
  ASSERT(deflate);
  ASSERT_EQ_INT(bands, 4);
  return 0;
}

/* Runs `[prefix] terrafort color-relief DEM RAMP OUT FLAGS -q`. */
static int tfrun(const char *prefix, const char *dem, const char *ramp, const char *out, const char *flags) {
  char c[4096];
  snprintf(c, sizeof c, "%s '%s' color-relief '%s' '%s' '%s' %s -q", prefix, tf, DEM(dem), RAMP(ramp), OUT(out), flags);
  return rc_run(c, NULL);
}

static int test_same_bytes_every_way(void) {
  const char *cases[][3] = {{"fractal_nan.tif", "ramp_percent.txt", "-alpha"},
                            {"demo.tif", "ramp_unsorted.txt", ""},
                            {"mosaic.vrt", "ramp_gmt.txt", "-nearest_color_entry"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char f[512];
    snprintf(f, sizeof f, "%s --threads 1 --tile-size 512", cases[i][2]);
    ASSERT_EQ_INT(tfrun("", cases[i][0], cases[i][1], "ref.tif", f), 0);
    const char *ways[] = {"--threads 2 --tile-size 512", "--threads 2 --tile-size 37", "--threads 1 --tile-size 37",
                          "--threads 2 --tile-size 512 --ft dual", "--threads 2 --tile-size 64 --ft dual"};
    for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
      snprintf(f, sizeof f, "%s %s", cases[i][2], ways[w]);
      ASSERT_EQ_INT(tfrun("", cases[i][0], cases[i][1], "other.tif", f), 0);
      ASSERT(rc_same_file(OUT("ref.tif"), OUT("other.tif")));
    }
    for (int n = 2; mpirun[0] && n <= 3; n++) {
      char pre[512];
      snprintf(pre, sizeof pre, "%s -n %d", mpirun, n);
      snprintf(f, sizeof f, "%s --threads 1 --tile-size 37", cases[i][2]);
      ASSERT_EQ_INT(tfrun(pre, cases[i][0], cases[i][1], "mpi.tif", f), 0);
      ASSERT(rc_same_file(OUT("ref.tif"), OUT("mpi.tif")));
    }
  }
  if (!mpirun[0]) printf("skip: no MPI, mpirun cases not run\n");
  return 0;
}

/* Percentages under mpirun: the band's range is found by the ranks
 * together, each over its share of the rows (terrafort-color-relief(1)),
 * and gives gdaldem's colours: Int16 with nodata, Float64, a mosaic, a
 * raster whose only valid cells lie in one rank's rows, no valid cell at
 * all, and one row (more ranks than rows). */
static int test_percent_under_ranks(void) {
  if (!mpirun[0]) {
    printf("skip: no MPI\n");
    return 0;
  }
  /* 100 x 40, valid only in the first 3 rows (rank 0's share for 3 or 4 ranks) */
  static float v[4000];
  for (int i = 0; i < 4000; i++) v[i] = i < 300 ? (float)(100 + (i * 37) % 251) : -9999.0f;
  char top[1024];
  snprintf(top, sizeof top, "%s", OUT("top.tif"));
  ASSERT_EQ_INT(write_raster(top, v, 4000, 1, -9999.0), 0);
  const char *dems[] = {"fractal_int16.tif", "fractal_float64.tif", "mosaic.vrt", "allnodata.tif", "onerow.tif", top};
  for (size_t d = 0; d < sizeof dems / sizeof *dems; d++) {
    if (compare_one(DEM(dems[d]), RAMP("ramp_percent.txt"), "-alpha", ".tif")) return 1;
    ASSERT_EQ_INT(tfrun("", dems[d], "ramp_percent.txt", "ref.tif", "-alpha --threads 1"), 0);
    for (int n = 3; n <= 4; n++) {
      if (n == 3 && d != 5) continue; /* three ranks on the raster valid in rank 0's rows only */
      char pre[512];
      snprintf(pre, sizeof pre, "%s -n %d", mpirun, n);
      ASSERT_EQ_INT(tfrun(pre, dems[d], "ramp_percent.txt", "mpi.tif", "-alpha --threads 1"), 0);
      if (!rc_same_file(OUT("ref.tif"), OUT("mpi.tif"))) {
        fprintf(stderr, "%s under mpirun -n %d: other bytes than one process\n", dems[d], n);
        return 1;
      }
    }
  }
  return 0;
}

static int test_stats(void) {
  ASSERT_EQ_INT(tfrun("", "fractal.tif", "ramp_named.txt", "s.tif", "-alpha --stats"), 0);
  GDALDatasetH ds = GDALOpen(OUT("s.tif"), GA_ReadOnly);
  ASSERT(ds);
  int found = 0;
  for (int b = 1; b <= 4; b++) found += GDALGetMetadataItem(GDALGetRasterBand(ds, b), "STATISTICS_MEAN", NULL) != 0;
  GDALClose(ds);
  ASSERT_EQ_INT(found, 4);
  return 0;
}

/* ------------------------------------------------------------- errors */

static int lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* `terrafort color-relief ARGS` with its output into an empty folder: the
 * exit code, one stderr line holding `needle`, nothing left behind. */
static int expect_fail(const char *args, int code, const char *needle) {
  char c[4096], errfile[1024], empty[1024];
  snprintf(empty, sizeof empty, "%s/empty", outdir);
  snprintf(errfile, sizeof errfile, "%s/err.txt", outdir);
  snprintf(c, sizeof c, "rm -rf '%s' && mkdir '%s'", empty, empty);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  snprintf(c, sizeof c, "cd '%s' && '%s' color-relief %s", empty, tf, args);
  int rc = rc_run(c, errfile);
  const char *err = rc_slurp(errfile);
  if (rc != code || lines(err) != 1 || !strstr(err, needle)) {
    fprintf(stderr, "`color-relief %s`: exit %d (want %d), stderr:\n%s(want one line with '%s')\n", args, rc, code, err,
            needle);
    return 1;
  }
  ASSERT_EQ_INT(rc_count_entries(empty), 0);
  return 0;
}

/* A colour file in outdir holding `text`; returns its path. */
static const char *colour_file(const char *name, const char *text) {
  const char *p = OUT(name);
  FILE *f = fopen(p, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return p;
}

static int test_errors(void) {
  char a[4096], dem[1024];
  snprintf(dem, sizeof dem, "%s", DEM("fractal.tif"));
  snprintf(a, sizeof a, "-frobnicate '%s' '%s' out.tif", dem, RAMP("ramp_basic.txt"));
  if (expect_fail(a, 2, "unknown option '-frobnicate'")) return 1;
  snprintf(a, sizeof a, "'%s' out.tif", dem);
  if (expect_fail(a, 2, "expected DEM, COLOR_TEXT_FILE and OUT")) return 1;
  snprintf(a, sizeof a, "'%s' '%s' out.tif", dem, OUT("missing.txt"));
  if (expect_fail(a, 3, "missing.txt")) return 1;
  snprintf(a, sizeof a, "'%s' '%s' out.tif", dem, outdir);
  if (expect_fail(a, 3, "is a directory")) return 1;
  snprintf(a, sizeof a, "'%s' '%s' out.tif", DEM("missing.tif"), RAMP("ramp_basic.txt"));
  if (expect_fail(a, 3, "missing.tif")) return 1;
  const struct {
    const char *text, *needle;
  } bad[] = {{"# only a comment\n\n", "no colour entries"},
             {"", "no colour entries"},
             {"100 0 0 0\n200 purpel\n", "line 2: unknown colour 'purpel'"},
             {"100 0 0 0\nabc 1 2 3\n", "line 2: bad elevation 'abc'"},
             {"100 0 0 0\n\n300 1 x 3\n", "line 3: bad colour component 'x'"},
             {"150% 1 2 3\n", "line 1: percentage '150%' is outside 0%..100%"},
             {"1x% 1 2 3\n", "line 1: bad percentage '1x%'"},
             {"# COLOR_MODEL = HSV\n0 0 0 0 1 1 1 1\n", "line 1: only COLOR_MODEL = RGB"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *cf = colour_file("bad.txt", bad[i].text);
    snprintf(a, sizeof a, "'%s' '%s' out.tif", dem, cf);
    if (expect_fail(a, 2, bad[i].needle) || expect_fail(a, 2, "bad.txt")) return 1;
  }
  /* The table is plain data of a fixed size: 256 entries fit, 257 do not. */
  char big[16384] = "";
  for (int k = 0; k < 257; k++) snprintf(big + strlen(big), sizeof big - strlen(big), "%d %d 0 0\n", k * 10, k % 256);
  const char *cf = colour_file("big.txt", big);
  snprintf(a, sizeof a, "'%s' '%s' out.tif", dem, cf);
  if (expect_fail(a, 2, "line 257: more than 256 colour entries")) return 1;
  *strstr(big, "2560 0 0 0\n") = 0;
  cf = colour_file("big.txt", big);
  snprintf(a, sizeof a, "'%s' '%s' '%s' -q", dem, cf, OUT("ok.tif"));
  snprintf(big, sizeof big, "'%s' color-relief %s", tf, a);
  ASSERT_EQ_INT(rc_run(big, NULL), 0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  dir = argv[1];
  tf = argv[2];
  src = argv[3];
  setenv("GDAL_PAM_ENABLED", "NO", 1);
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_color_relief", dir);
  mkdir(outdir, 0755);
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
#ifndef TERRAFORT_HAVE_MPI
  mpirun[0] = 0;
#endif
  static const tr_test_case cases[] = {TR_TEST(test_float32_nodata),
                                       TR_TEST(test_nan_nodata),
                                       TR_TEST(test_int16),
                                       TR_TEST(test_byte),
                                       TR_TEST(test_vrt_mosaic),
                                       TR_TEST(test_other_dems),
                                       TR_TEST(test_nonfinite_cells),
                                       TR_TEST(test_generated_tables),
                                       TR_TEST(test_stored_statistics),
                                       TR_TEST(test_band_format_co),
                                       TR_TEST(test_same_bytes_every_way), TR_TEST(test_percent_under_ranks),
                                       TR_TEST(test_stats),
                                       TR_TEST(test_errors)};
  int rc = tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
  printf("largest difference from gdaldem in any band: %d\n", max_diff_seen);
  return rc;
}
