/*
 * test_local_determinism.c - the same input gives byte-identical output for
 * any thread count and tile size (tiles smaller than, equal to and larger
 * than the raster, uneven last tiles, 1-cell tiles), for every kernel
 * variant, and the output file itself is identical across thread counts.
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

static float *read_f32(const char *path, long *n) {
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds) return NULL;
  int c = GDALGetRasterXSize(ds), r = GDALGetRasterYSize(ds);
  float *v = malloc(sizeof(float) * (size_t)r * (size_t)c);
  if (GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Read, 0, 0, c, r, v, c, r, GDT_Float32, 0, 0) != CE_None) {
    free(v);
    v = NULL;
  }
  GDALClose(ds);
  *n = (long)r * c;
  return v;
}

static int run(const char *cmd, const char *input, int variant, int threads, int tile, const char *out) {
  char in[1024];
  snprintf(in, sizeof in, "%s/%s", dir, input);
  tr_error e = {{0}};
  int st;
  if (!strcmp(cmd, "slope")) {
    tr_slope_opts o;
    tr_slope_opts_init(&o);
    o.run.threads = threads;
    o.run.tile_size = tile;
    o.compute_edges = variant & 1;
    o.alg = (variant & 2) ? TR_GRAD_ZEVENBERGEN_THORNE : TR_GRAD_HORN;
    o.percent = (variant & 4) != 0;
    st = tr_slope(&o, in, out, &e);
  } else {
    tr_aspect_opts o;
    tr_aspect_opts_init(&o);
    o.run.threads = threads;
    o.run.tile_size = tile;
    o.compute_edges = variant & 1;
    o.alg = (variant & 2) ? TR_GRAD_ZEVENBERGEN_THORNE : TR_GRAD_HORN;
    o.trigonometric = (variant & 4) != 0;
    st = tr_aspect(&o, in, out, &e);
  }
  if (st) fprintf(stderr, "%s %s: %s\n", cmd, input, e.msg);
  return st;
}

static int check_input(const char *cmd, const char *input) {
  static const int tiles[] = {512, 1, 7, 33, 64, 150, 4096};
  static const int threads[] = {1, 2, 3, 4};
  char ref[1024], out[1024];
  for (int variant = 0; variant < 8; variant++) {
    /* under the sanitizers the two variants with every flag off and on */
    if (TR_TEST_SANITIZED && variant % 7) continue;
    snprintf(ref, sizeof ref, "%s/ref.tif", outdir);
    if (run(cmd, input, variant, 1, 512, ref)) return 1;
    long n;
    float *a = read_f32(ref, &n);
    long na;
    unsigned char *fa = rc_file_bytes(ref, &na);
    ASSERT(a && na > 0);
    for (size_t ti = 0; ti < sizeof tiles / sizeof tiles[0]; ti++)
      for (size_t th = 0; th < sizeof threads / sizeof threads[0]; th++) {
        if (tiles[ti] == 1 && (threads[th] > 2 || variant > 1)) continue; /* slow: keep a few */
        if (TR_TEST_SANITIZED && threads[th] % 2 == 0 && tiles[ti] != 1) continue; /* 1 and 3 threads there */
        snprintf(out, sizeof out, "%s/t.tif", outdir);
        if (run(cmd, input, variant, threads[th], tiles[ti], out)) return 1;
        long m;
        float *b = read_f32(out, &m);
        ASSERT(b && m == n);
        if (memcmp(a, b, sizeof(float) * (size_t)n) != 0) {
          fprintf(stderr, "%s %s variant %d: tile %d threads %d differs\n", cmd, input, variant, tiles[ti], threads[th]);
          return 1;
        }
        free(b);
        if (tiles[ti] == 512) { /* same tiling: the file itself is identical */
          long nb;
          unsigned char *fb = rc_file_bytes(out, &nb);
          ASSERT(nb == na && memcmp(fa, fb, (size_t)na) == 0);
          free(fb);
        }
      }
    free(a);
    free(fa);
  }
  return 0;
}

static int test_slope_fractal(void) { return check_input("slope", "fractal.tif"); }
static int test_slope_nan_nodata(void) { return check_input("slope", "fractal_nan.tif"); }
static int test_slope_int16(void) { return check_input("slope", "fractal_int16.tif"); }
static int test_aspect_fractal(void) { return check_input("aspect", "fractal.tif"); }
static int test_aspect_mosaic(void) { return check_input("aspect", "mosaic.vrt"); }
static int test_slope_geographic(void) { return check_input("slope", "geographic.tif"); }

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  dir = argv[1];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_local_determinism", dir);
  mkdir(outdir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_slope_fractal), TR_TEST(test_slope_nan_nodata),
                                       TR_TEST(test_slope_int16), TR_TEST(test_aspect_fractal),
                                       TR_TEST(test_aspect_mosaic), TR_TEST(test_slope_geographic)};
  return tr_test_main(argc - 1, argv + 1, cases, (int)(sizeof cases / sizeof cases[0]));
}
