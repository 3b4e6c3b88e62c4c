/*
 * test_direct_read.c - tr_input's direct reads (io/raster.h): which GeoTIFFs
 * take them, and that their windows hold GDAL's cells to the bit.
 *
 * Each file is written here with GDAL from a pattern that makes every cell
 * tell where it is (and holds NaN, infinities, -0 and denormals), then opened
 * twice: by default, and with TERRAFORT_GDAL_READS=1 (GDAL's RasterIO). The
 * striped, uncompressed, little-endian Float32 files must read directly (one
 * row per strip, several, a last strip shorter than the others); compressed,
 * tiled, big-endian, Float64, two-band and truncated files must not. Both
 * opens then read the same windows - random ones, the whole raster, windows
 * reaching past every edge, one cell - and the buffers must be equal byte
 * for byte, padding included (the cells outside the raster are NaN).
 */
#include <gdal.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster.h"
#include "tr_test.h"

static char dir[512];

static const char *path_of(const char *name) {
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

/* A rows x cols raster of `type` (bands of it) with creation options. */
static int make(const char *name, int rows, int cols, GDALDataType type, int bands, const char *const *opts) {
  GDALDriverH d = GDALGetDriverByName("GTiff");
  GDALDatasetH ds = GDALCreate(d, path_of(name), cols, rows, bands, type, (char **)opts);
  if (!ds) return -1;
  float *row = malloc((size_t)cols * sizeof *row);
  if (!row) return -1;
  int rc = 0;
  for (int b = 1; b <= bands && !rc; b++)
    for (int r = 0; r < rows && !rc; r++) {
      for (int c = 0; c < cols; c++) {
        const int k = (r * 7 + c * 13 + b) % 97;
        row[c] = k == 3 ? NAN : k == 5 ? INFINITY : k == 7 ? -0.0f : k == 11 ? 1e-40f : 1000.0f * r + c + 0.25f * b;
      }
      rc = GDALRasterIO(GDALGetRasterBand(ds, b), GF_Write, 0, r, cols, 1, row, cols, 1, GDT_Float32, 0, 0) != CE_None;
    }
  free(row);
  GDALClose(ds);
  return rc;
}

static int open_input(const char *name, int gdal_reads, tr_input *in) {
  if (gdal_reads) setenv("TERRAFORT_GDAL_READS", "1", 1);
  else unsetenv("TERRAFORT_GDAL_READS");
  tr_error e = {{0}};
  const int st = tr_input_open(in, path_of(name), 1, &e);
  unsetenv("TERRAFORT_GDAL_READS");
  if (st) fprintf(stderr, "open %s: %s\n", name, e.msg);
  return st;
}

/* The window (row0, col0, rows x cols) read by both opens: equal bytes. */
static int same_window(tr_input *a, tr_input *b, int64_t row0, int64_t col0, int64_t rows, int64_t cols) {
  const int64_t stride = cols + 3;
  const size_t n = (size_t)(rows * stride);
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  if (!x || !y) return -1;
  memset(x, 0x5a, n * sizeof *x);
  memset(y, 0x5a, n * sizeof *y);
  tr_error e = {{0}};
  int rc = tr_input_read_f32(a, row0, col0, rows, cols, x, stride, &e) ||
           tr_input_read_f32(b, row0, col0, rows, cols, y, stride, &e);
  if (rc) fprintf(stderr, "read: %s\n", e.msg);
  else if (memcmp(x, y, n * sizeof *x)) {
    fprintf(stderr, "window (%lld, %lld) %lld x %lld differs from GDAL's\n", (long long)row0, (long long)col0,
            (long long)rows, (long long)cols);
    rc = 1;
  }
  free(x);
  free(y);
  return rc;
}

/* The file reads directly or not as `direct` says; when it does, its
 * windows equal GDAL's. */
static int check(const char *name, int direct) {
  tr_input a, b;
  if (open_input(name, 0, &a)) return 1;
  if (open_input(name, 1, &b)) return 1;
  int rc = 0;
  if (a.direct != direct || b.direct) {
    fprintf(stderr, "%s: direct %d (want %d), with TERRAFORT_GDAL_READS=1 %d (want 0)\n", name, a.direct, direct,
            b.direct);
    rc = 1;
  }
  const int64_t R = a.rows, C = a.cols;
  rc = rc || same_window(&a, &b, 0, 0, R, C) || same_window(&a, &b, -1, -1, R + 2, C + 2) ||
       same_window(&a, &b, R - 1, C - 1, 3, 3) || same_window(&a, &b, -5, C - 2, 9, 7) ||
       same_window(&a, &b, R / 2, C / 2, 1, 1) || same_window(&a, &b, R + 4, 0, 2, 5);
  srand(7);
  for (int k = 0; k < 200 && !rc; k++) {
    const int64_t r0 = rand() % (R + 6) - 3, c0 = rand() % (C + 6) - 3;
    rc = same_window(&a, &b, r0, c0, 1 + rand() % 40, 1 + rand() % 40);
  }
  tr_input_close(&a);
  tr_input_close(&b);
  return rc;
}

static int test_direct_files(void) {
  const char *strip1[] = {"BLOCKYSIZE=1", NULL}, *strip7[] = {"BLOCKYSIZE=7", NULL};
  ASSERT_EQ_INT(make("strip1.tif", 53, 61, GDT_Float32, 1, strip1), 0);
  ASSERT_EQ_INT(make("strip7.tif", 53, 61, GDT_Float32, 1, strip7), 0); /* 8 strips, the last of 4 rows */
  ASSERT_EQ_INT(make("default.tif", 300, 257, GDT_Float32, 1, NULL), 0);
  ASSERT_EQ_INT(check("strip1.tif", 1), 0);
  ASSERT_EQ_INT(check("strip7.tif", 1), 0);
  ASSERT_EQ_INT(check("default.tif", 1), 0);
  return 0;
}

static int test_gdal_files(void) {
  const char *deflate[] = {"COMPRESS=DEFLATE", NULL}, *tiled[] = {"TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16", NULL};
  const char *big[] = {"ENDIANNESS=BIG", NULL}, *half[] = {"NBITS=16", NULL};
  ASSERT_EQ_INT(make("deflate.tif", 53, 61, GDT_Float32, 1, deflate), 0);
  ASSERT_EQ_INT(make("tiled.tif", 53, 61, GDT_Float32, 1, tiled), 0);
  ASSERT_EQ_INT(make("big.tif", 53, 61, GDT_Float32, 1, big), 0);
  ASSERT_EQ_INT(make("half.tif", 53, 61, GDT_Float32, 1, half), 0);
  ASSERT_EQ_INT(make("f64.tif", 53, 61, GDT_Float64, 1, NULL), 0);
  ASSERT_EQ_INT(make("two.tif", 53, 61, GDT_Float32, 2, NULL), 0);
  ASSERT_EQ_INT(check("deflate.tif", 0), 0);
  ASSERT_EQ_INT(check("tiled.tif", 0), 0);
  ASSERT_EQ_INT(check("big.tif", 0), 0);
  ASSERT_EQ_INT(check("half.tif", 0), 0);
  ASSERT_EQ_INT(check("f64.tif", 0), 0);
  ASSERT_EQ_INT(check("two.tif", 0), 0);
  return 0;
}

/* A striped file cut short: its last strips lie past the end, so it is left
 * to GDAL, whose read of them fails as before (one clear error). */
static int test_truncated(void) {
  const char *strip1[] = {"BLOCKYSIZE=1", NULL};
  ASSERT_EQ_INT(make("cut.tif", 53, 61, GDT_Float32, 1, strip1), 0);
  struct stat st;
  ASSERT_EQ_INT(stat(path_of("cut.tif"), &st), 0);
  /* cut into the last rows' cells */
  ASSERT_EQ_INT(truncate(path_of("cut.tif"), st.st_size / 2), 0);
  tr_input in;
  tr_error e = {{0}};
  /* GDAL writes the directory first, so the file still opens */
  ASSERT_EQ_INT(tr_input_open(&in, path_of("cut.tif"), 1, &e), 0);
  ASSERT_EQ_INT(in.direct, 0);
  float *buf = malloc(53 * 61 * sizeof *buf);
  ASSERT(buf != NULL);
  const int st2 = tr_input_read_f32(&in, 0, 0, 53, 61, buf, 61, &e);
  free(buf);
  tr_input_close(&in);
  ASSERT(st2 != 0);
  ASSERT(strstr(e.msg, "cannot read input") != NULL);
  printf("  cut file left to GDAL: %s\n", e.msg);
  return 0;
}

int main(int argc, char **argv) {
  GDALAllRegister();
  snprintf(dir, sizeof dir, "/tmp/terrain_direct_read_%d", (int)getpid());
  mkdir(dir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_direct_files), TR_TEST(test_gdal_files), TR_TEST(test_truncated)};
  const int rc = tr_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) return 1;
  return rc;
}
