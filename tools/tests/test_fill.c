/*
 * test_fill_cli.c - `terrafort fill` as a user runs it. The reference is a
 * plain sequential heap priority-flood over the whole grid
 * (libterrain/tests/test_fill_ref.c, which uses none of the engine's code);
 * SAGA's Wang & Liu fill is the peer where it is installed. The output must
 * equal the reference cell for cell for every thread count, tile size
 * (uneven too), schedule and rank count; the epsilon variant must drain
 * every cell strictly downhill; errors leave nothing behind.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "test_fill_ref.h"
#include "tr_test.h"


static const char *dir, *tf;
static char outdir[512], mpirun[256];

static const char *opath(const char *name) {
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", outdir, name);
  return p[k];
}

static int tfrun(const char *prefix, const char *in, const char *out, const char *flags) {
  char c[4096];
  snprintf(c, sizeof c, "%s '%s' fill '%s/%s' '%s' %s -q", prefix, tf, dir, in, opath(out), flags);
  return rc_run(c, NULL);
}

static float *read_f32(const char *path, int *rows, int *cols, int *has_nd, double *nd) {
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds) return NULL;
  *cols = GDALGetRasterXSize(ds);
  *rows = GDALGetRasterYSize(ds);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  *nd = GDALGetRasterNoDataValue(b, has_nd);
  float *v = malloc(sizeof(float) * (size_t)*rows * (size_t)*cols);
  if (GDALRasterIO(b, GF_Read, 0, 0, *cols, *rows, v, *cols, *rows, GDT_Float32, 0, 0) != CE_None) {
    free(v);
    v = NULL;
  }
  GDALClose(ds);
  return v;
}

/* The reference fill of a test DEM. */
static float *reference(const char *name, int epsilon, int *rows, int *cols) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int has_nd;
  double nd;
  float *z = read_f32(p, rows, cols, &has_nd, &nd);
  if (!z) return NULL;
  float *w = malloc(sizeof(float) * (size_t)*rows * (size_t)*cols);
  ref_fill(z, *rows, *cols, has_nd, (float)nd, epsilon, 0.0f, w);
  free(z);
  return w;
}

static int equals_reference(const char *out, const float *ref, int rows, int cols) {
  int r, c, has_nd;
  double nd;
  float *w = read_f32(opath(out), &r, &c, &has_nd, &nd);
  if (!w || r != rows || c != cols) return 0;
  long bad = 0, first = -1;
  for (long i = 0; i < (long)rows * cols; i++) {
    int same = memcmp(&w[i], &ref[i], sizeof(float)) == 0 || (isnan(w[i]) && isnan(ref[i]));
    if (!same && bad++ == 0) first = i;
  }
  if (bad)
    fprintf(stderr, "%s: %ld cells differ from the reference, first at %ld: %.9g vs %.9g\n", out, bad, first,
            w[first], ref[first]);
  free(w);
  return bad == 0;
}

static const char *dems[] = {"fractal.tif", "fractal_nan.tif", "fractal_int16.tif", "demo.tif", "mosaic.vrt",
                             "plane.tif", "allnodata.tif"};

static int test_equals_reference(void) {
  for (size_t i = 0; i < sizeof dems / sizeof *dems; i++) {
    int rows, cols;
    float *ref = reference(dems[i], 0, &rows, &cols);
    ASSERT(ref);
    ASSERT_EQ_INT(tfrun("", dems[i], "f.tif", ""), 0);
    ASSERT(equals_reference("f.tif", ref, rows, cols));
    free(ref);
  }
  /* a real depression-rich DEM really gets filled */
  int r, c, h;
  double nd;
  char p[1024];
  snprintf(p, sizeof p, "%s/demo.tif", dir);
  ASSERT_EQ_INT(tfrun("", "demo.tif", "f.tif", ""), 0);
  float *z = read_f32(p, &r, &c, &h, &nd), *w = read_f32(opath("f.tif"), &r, &c, &h, &nd);
  ASSERT(z && w);
  long raised = 0;
  for (long i = 0; i < (long)r * c; i++) {
    ASSERT(w[i] >= z[i]);
    raised += w[i] > z[i];
  }
  ASSERT(raised > 10000);
  free(z);
  free(w);
  return 0;
}

static int test_same_for_threads_tiles_schedules(void) {
  const char *inputs[] = {"fractal.tif", "demo.tif"};
  /* the last: aap with its opt-in straggler bound */
  const char *scheds[] = {"aap", "bsp", "ap", "ssp", "random", "aap --straggler-ratio 1.5"};
  const int tiles[] = {512, 37, 100, 333, 4096};
  for (int d = 0; d < 2; d++) {
    int rows, cols;
    float *ref = reference(inputs[d], 0, &rows, &cols);
    for (int s = 0; s < (int)(sizeof scheds / sizeof scheds[0]); s++)
      for (int t = 0; t < 5; t++) {
        /* under the sanitizers a fifth: every schedule and tile size still met */
        if (TR_TEST_SANITIZED && (d + s + t) % 5) continue;
        char flags[256];
        snprintf(flags, sizeof flags, "--schedule %s --tile-size %d --threads %d", scheds[s], tiles[t], 1 + (s + t) % 3);
        ASSERT_EQ_INT(tfrun("", inputs[d], "f.tif", flags), 0);
        if (!equals_reference("f.tif", ref, rows, cols)) {
          fprintf(stderr, "with %s on %s\n", flags, inputs[d]);
          return 1;
        }
      }
    free(ref);
  }
  return 0;
}

/* The writer assembles a row of tiles where the output's blocks span tiles
 * (io/sink.h): a striped Float64 and Float32 output, and tiled outputs whose
 * blocks cross tiles (48-cell blocks, 100-cell tiles) or lie within them
 * (64 in 128), give the reference's cells at every tile size, under mpirun
 * too; striped files are the same bytes whatever the tiles. */
static int test_output_layouts(void) {
  int rows, cols;
  float *ref = reference("demo.tif", 0, &rows, &cols);
  ASSERT(ref);
  static const char *layouts[] = {"", "-ot Float64", "-co TILED=YES -co BLOCKXSIZE=48 -co BLOCKYSIZE=48",
                                  "-ot Float64 -co TILED=YES -co BLOCKXSIZE=64 -co BLOCKYSIZE=64"};
  static const int tiles[] = {4096, 100, 128, 333};
  for (int l = 0; l < 4; l++) {
    for (int t = 0; t < 4; t++) {
      /* under the sanitizers one tile size besides the whole raster per
       * layout (blocks across tiles and within them both met); all in Release */
      if (TR_TEST_SANITIZED && t && t != 1 + l % 3) continue;
      char flags[256];
      snprintf(flags, sizeof flags, "%s --tile-size %d --threads %d", layouts[l], tiles[t], 1 + t % 2);
      ASSERT_EQ_INT(tfrun("", "demo.tif", t ? "f.tif" : "f0.tif", flags), 0);
      if (!equals_reference(t ? "f.tif" : "f0.tif", ref, rows, cols)) {
        fprintf(stderr, "with %s\n", flags);
        return 1;
      }
      if (t && l < 2) ASSERT(rc_same_file(opath("f0.tif"), opath("f.tif")));
    }
    if (mpirun[0] && !(TR_TEST_SANITIZED && l % 3)) { /* a striped and a tiled layout there */
      char pre[512], flags[256];
      snprintf(pre, sizeof pre, "%s -n 3", mpirun);
      snprintf(flags, sizeof flags, "%s --tile-size 100 --threads 1", layouts[l]);
      ASSERT_EQ_INT(tfrun(pre, "demo.tif", "f.tif", flags), 0);
      ASSERT(equals_reference("f.tif", ref, rows, cols));
      if (l < 2) ASSERT(rc_same_file(opath("f0.tif"), opath("f.tif")));
    }
  }
  free(ref);
  return 0;
}

static int test_mpi_ranks(void) {
  if (!mpirun[0]) {
    printf("skip: no MPI\n");
    return 0;
  }
  int rows, cols;
  float *ref = reference("demo.tif", 0, &rows, &cols);
  for (int n = 1; n <= 3; n++) {
    char pre[512];
    snprintf(pre, sizeof pre, "%s -n %d", mpirun, n);
    ASSERT_EQ_INT(tfrun(pre, "demo.tif", "m.tif", "--tile-size 200 --threads 1"), 0);
    ASSERT(equals_reference("m.tif", ref, rows, cols));
  }
  free(ref);
  return 0;
}

/* SAGA's Wang & Liu fill (ta_preprocessor 5, -MINSLOPE 0) on a DEM without
 * NoData cells: the same values, cell for cell. */
static int test_equals_saga(void) {
  if (rc_run("command -v saga_cmd >/dev/null", NULL) != 0) {
    printf("skip: saga_cmd not installed\n");
    return 0;
  }
  char c[4096];
  snprintf(c, sizeof c, "saga_cmd ta_preprocessor 5 -ELEV '%s/demo.tif' -FILLED '%s' -MINSLOPE 0 >/dev/null 2>&1", dir,
           opath("saga.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT_EQ_INT(tfrun("", "demo.tif", "f.tif", ""), 0);
  int r1, c1, r2, c2, h;
  double nd;
  float *a = read_f32(opath("saga.tif"), &r1, &c1, &h, &nd), *b = read_f32(opath("f.tif"), &r2, &c2, &h, &nd);
  ASSERT(a && b && r1 == r2 && c1 == c2);
  ASSERT(memcmp(a, b, sizeof(float) * (size_t)r1 * (size_t)c1) == 0);
  free(a);
  free(b);
  return 0;
}

/* --epsilon: equals the reference's epsilon variant, is above the flat
 * fill, identical across tilings, and every cell that is not an outlet has
 * a strictly lower neighbour. */
static int test_epsilon(void) {
  int rows, cols;
  float *ref = reference("fractal.tif", 1, &rows, &cols);
  float *flat = reference("fractal.tif", 0, &rows, &cols);
  ASSERT_EQ_INT(tfrun("", "fractal.tif", "e.tif", "--epsilon"), 0);
  ASSERT(equals_reference("e.tif", ref, rows, cols));
  ASSERT_EQ_INT(tfrun("", "fractal.tif", "e.tif", "--epsilon --tile-size 23 --schedule ap --threads 3"), 0);
  ASSERT(equals_reference("e.tif", ref, rows, cols));
  long checked = 0;
  for (int y = 0; y < rows; y++)
    for (int x = 0; x < cols; x++) {
      float v = ref[y * cols + x];
      if (v == -9999.0f) continue;
      ASSERT(v >= flat[y * cols + x]);
      int outlet = y == 0 || x == 0 || y == rows - 1 || x == cols - 1, lower = 0;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          int yy = y + dy, xx = x + dx;
          if ((!dy && !dx) || yy < 0 || xx < 0 || yy >= rows || xx >= cols) continue;
          float n = ref[yy * cols + xx];
          if (n == -9999.0f) outlet = 1;
          else if (n < v) lower = 1;
        }
      ASSERT(outlet || lower);
      checked++;
    }
  ASSERT(checked > 25000);
  free(ref);
  free(flat);
  return 0;
}

static int test_taudem_form_types_stats(void) {
  char c[4096];
  ASSERT_EQ_INT(tfrun("", "fractal_int16.tif", "a.tif", ""), 0);
  snprintf(c, sizeof c, "'%s' fill -q -z '%s/fractal_int16.tif' -fel '%s' -ot Int16 --stats", tf, dir, opath("b.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  rc_raster a, b;
  ASSERT_EQ_INT(rc_load(opath("a.tif"), &a), 0);
  ASSERT_EQ_INT(rc_load(opath("b.tif"), &b), 0);
  ASSERT_EQ_INT(a.type, GDT_Float32);
  ASSERT_EQ_INT(b.type, GDT_Int16);
  ASSERT_EQ_INT(rc_compare(&a, &b, 0, "Int16 output"), 0);
  ASSERT(a.has_nodata && a.nodata == -32768);
  rc_free(&a);
  rc_free(&b);
  GDALDatasetH ds = GDALOpen(opath("b.tif"), GA_ReadOnly);
  ASSERT(ds);
  ASSERT(GDALGetMetadataItem(GDALGetRasterBand(ds, 1), "STATISTICS_MEAN", NULL));
  GDALClose(ds);
  return 0;
}

static int test_errors(void) {
  char c[4096], err[1024];
  snprintf(err, sizeof err, "%s/fill.stderr", outdir);
  const struct {
    const char *args;
    int code;
    const char *why;
  } cases[] = {{"-z in.tif", 2, "-z and -fel go together"},
               {"--ft dual --ft-tolerance 0.1 a b", 2, "compared bit for bit"},
               {"--ft dual --ft-mode basic a b", 2, "one dual mode"},
               {"--epsilon -ot Int16 a b", 2, "floating-point output"},
               {"--schedule fastest a b", 2, "not one of aap"},
               {"-ot Complex64 a b", 2, "not a real GDAL data type"},
               {"--l-bottom 9 --l-up 2 a b", 2, "above --l-up"},
               {"missing.tif out.tif", 3, "No such file"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(c, sizeof c, "cd '%s' && '%s' fill %s", outdir, tf, cases[i].args);
    int rc = rc_run(c, err);
    const char *e = rc_slurp(err);
    if (rc != cases[i].code || !strstr(e, cases[i].why)) {
      fprintf(stderr, "fill %s: exit %d, stderr %s\n", cases[i].args, rc, e);
      return 1;
    }
  }
  ASSERT(access(opath("out.tif"), F_OK) != 0 && access(opath("b"), F_OK) != 0);
  snprintf(c, sizeof c, "'%s' fill '%s/truncated.tif' '%s'", tf, dir, opath("t.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 3);
  ASSERT(access(opath("t.tif"), F_OK) != 0);
  return 0;
}

/* Issue 14 item 5: tiles too small for the engine are refused at once, and so
 * is a run whose memory cannot hold even what stays in memory out of core (a
 * 2000000 x 2000000 VRT: 15 TB of W spills, but the engine's per-tile
 * message rings alone need about 390 GiB), or whose --mem cannot hold the rounds
 * running: exit 7, naming the minimum, nothing left behind. (A spill that
 * does not fit on its disk: test_outofcore.) */
static int test_refuses_tiny_tiles_and_runs_larger_than_memory(void) {
  char c[4096], err[1024];
  snprintf(err, sizeof err, "%s/fill.stderr", outdir);
  snprintf(c, sizeof c, "'%s' fill --tile-size 4 '%s/fractal.tif' '%s'", tf, dir, opath("tiny.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 2);
  ASSERT(strstr(rc_slurp(err), "at least 16 cells") != NULL);
  ASSERT(access(opath("tiny.tif"), F_OK) != 0);
  int rows, cols;
  float *ref = reference("fractal.tif", 0, &rows, &cols);
  ASSERT_EQ_INT(tfrun("", "fractal.tif", "t16.tif", "--tile-size 16 --threads 2"), 0);
  ASSERT(equals_reference("t16.tif", ref, rows, cols));
  free(ref);

  FILE *f = fopen(opath("huge.vrt"), "w");
  ASSERT(f != NULL);
  fprintf(f, "<VRTDataset rasterXSize=\"2000000\" rasterYSize=\"2000000\">\n"
             "  <GeoTransform>0, 1, 0, 0, 0, -1</GeoTransform>\n"
             "  <VRTRasterBand dataType=\"Float32\" band=\"1\"/>\n</VRTDataset>\n");
  fclose(f);
  const char *prefixes[] = {"", mpirun};
  for (int k = 0; k < 2; k++) {
    if (k == 1 && !mpirun[0]) break;
    snprintf(c, sizeof c, "%s %s '%s' fill '%s' '%s'", prefixes[k], k ? "-n 2" : "", tf, opath("huge.vrt"),
             opath("huge.tif"));
    ASSERT_EQ_INT(rc_run(c, err), 7);
    const char *e = rc_slurp(err);
    if (!strstr(e, "2000000 x 2000000") || !strstr(e, "needs at least") || !strstr(e, "MiB")) {
      fprintf(stderr, "stderr: %s\n", e);
      return 1;
    }
    ASSERT(access(opath("huge.tif"), F_OK) != 0);
    snprintf(c, sizeof c, "%s %s '%s' fill --mem 20M '%s' '%s'", prefixes[k], k ? "-n 2" : "", tf,
             opath("huge.vrt"), opath("huge.tif"));
    ASSERT_EQ_INT(rc_run(c, err), 7);
    e = rc_slurp(err);
    if (!strstr(e, "needs at least") || !strstr(e, "--mem 20 MiB")) {
      fprintf(stderr, "stderr: %s\n", e);
      return 1;
    }
    ASSERT(access(opath("huge.tif"), F_OK) != 0);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dir = argv[1];
  tf = argv[2];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_fill_cli", dir);
  mkdir(outdir, 0755);
#ifdef TERRAFORT_HAVE_MPI
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
#endif
  static const tr_test_case cases[] = {TR_TEST(test_equals_reference), TR_TEST(test_same_for_threads_tiles_schedules),
                                       TR_TEST(test_mpi_ranks),        TR_TEST(test_output_layouts),        TR_TEST(test_equals_saga),
                                       TR_TEST(test_epsilon),          TR_TEST(test_taudem_form_types_stats),
                                       TR_TEST(test_errors),
                                       TR_TEST(test_refuses_tiny_tiles_and_runs_larger_than_memory)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
