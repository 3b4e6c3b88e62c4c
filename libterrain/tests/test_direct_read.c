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
#include <signal.h>
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

/* how: 0 direct reads as by default (mapped), 1 GDAL's RasterIO, 2 direct
 * reads with pread (TERRAFORT_MAP_READS=0) */
static int open_input(const char *name, int how, tr_input *in) {
  if (how == 1) setenv("TERRAFORT_GDAL_READS", "1", 1);
  if (how == 2) setenv("TERRAFORT_MAP_READS", "0", 1);
  tr_error e = {{0}};
  const int st = tr_input_open(in, path_of(name), 1, &e);
  unsetenv("TERRAFORT_GDAL_READS");
  unsetenv("TERRAFORT_MAP_READS");
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
 * windows equal GDAL's, from the map and with pread alike. */
static int check(const char *name, int direct) {
  tr_input a, b, p;
  if (open_input(name, 0, &a)) return 1;
  if (open_input(name, 1, &b)) return 1;
  if (open_input(name, 2, &p)) return 1;
  int rc = 0;
  if (a.direct != direct || b.direct || p.direct != direct || (a.map.base != NULL) != direct || p.map.base) {
    fprintf(stderr, "%s: direct %d mapped %d (want %d), with TERRAFORT_GDAL_READS=1 %d (want 0), "
            "with TERRAFORT_MAP_READS=0 %d mapped %d\n", name, a.direct, a.map.base != NULL, direct, b.direct,
            p.direct, p.map.base != NULL);
    rc = 1;
  }
  const int64_t R = a.rows, C = a.cols;
  rc = rc || same_window(&a, &b, 0, 0, R, C) || same_window(&a, &b, -1, -1, R + 2, C + 2) ||
       same_window(&a, &b, R - 1, C - 1, 3, 3) || same_window(&a, &b, -5, C - 2, 9, 7) ||
       same_window(&a, &b, R / 2, C / 2, 1, 1) || same_window(&a, &b, R + 4, 0, 2, 5);
  srand(7);
  for (int k = 0; k < 200 && !rc; k++) {
    const int64_t r0 = rand() % (R + 6) - 3, c0 = rand() % (C + 6) - 3;
    const int64_t nr = 1 + rand() % 40, nc = 1 + rand() % 40;
    rc = same_window(&a, &b, r0, c0, nr, nc) || same_window(&p, &b, r0, c0, nr, nc);
  }
  rc = rc || same_window(&p, &b, -1, -1, R + 2, C + 2);
  tr_input_close(&a);
  tr_input_close(&b);
  tr_input_close(&p);
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

static int bus_seen;
static void count_bus(int sig) { (void)sig; bus_seen++; }

/* The disposition of SIGBUS is `h`. */
static int bus_handler_is(void (*h)(int)) {
  struct sigaction cur;
  return sigaction(SIGBUS, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == h;
}

/* A mapped file cut short while it is open: a read of the rows past its new
 * end is a clear error, not a crash (SIGBUS caught, io/file_map.h); the rows
 * still there read as before, the next read of them too, and with pread
 * the cut reads fail the same way. Closing gives back the SIGBUS disposition
 * that was there, the default or one of the caller's. */
static int test_cut_while_open(void) {
  const int R = 400, C = 300;
  const char *strip1[] = {"BLOCKYSIZE=1", NULL};
  ASSERT_EQ_INT(make("open_cut.tif", R, C, GDT_Float32, 1, strip1), 0);
  for (int with_handler = 0; with_handler < 2; with_handler++) {
    ASSERT_EQ_INT(make("open_cut.tif", R, C, GDT_Float32, 1, strip1), 0);
    struct sigaction mine, before;
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = with_handler ? count_bus : SIG_DFL;
    sigemptyset(&mine.sa_mask);
    ASSERT_EQ_INT(sigaction(SIGBUS, &mine, &before), 0);
    tr_input ref, a, p;
    ASSERT_EQ_INT(open_input("open_cut.tif", 1, &ref), 0);
    ASSERT_EQ_INT(open_input("open_cut.tif", 0, &a), 0);
    ASSERT_EQ_INT(open_input("open_cut.tif", 2, &p), 0);
    ASSERT(a.map.base != NULL && p.direct && !p.map.base);
    /* the rows before the cut, read once before it */
    const int64_t keep = R / 3;
    float *x = malloc((size_t)(keep * C) * sizeof *x), *y = malloc((size_t)(keep * C) * sizeof *y);
    ASSERT(x && y);
    tr_error e = {{0}};
    ASSERT_EQ_INT(tr_input_read_f32(&ref, 0, 0, keep, C, x, C, &e), 0);
    struct stat st;
    ASSERT_EQ_INT(stat(path_of("open_cut.tif"), &st), 0);
    /* cut at the first strip past `keep` rows: a page boundary or not */
    char key[64];
    snprintf(key, sizeof key, "BLOCK_OFFSET_0_%d", (int)keep + 20);
    const char *o = GDALGetMetadataItem(ref.band, key, "TIFF");
    ASSERT(o != NULL);
    ASSERT_EQ_INT(truncate(path_of("open_cut.tif"), (off_t)strtoll(o, NULL, 10)), 0);
    for (int k = 0; k < 2; k++) {
      tr_input *in = k ? &p : &a;
      memset(&e, 0, sizeof e);
      ASSERT(tr_input_read_f32(in, R - 50, 0, 50, C, y, C, &e) != 0);
      ASSERT(strstr(e.msg, "cannot read input") != NULL);
      printf("  %s: %s\n", k ? "pread" : "mapped", e.msg);
      /* and again: the thread can still be stopped by SIGBUS, and is not */
      ASSERT(tr_input_read_f32(in, keep + 25, 7, 3, 9, y, 9, &e) != 0);
      memset(y, 0, (size_t)(keep * C) * sizeof *y);
      ASSERT_EQ_INT(tr_input_read_f32(in, 0, 0, keep, C, y, C, &e), 0);
      ASSERT(memcmp(x, y, (size_t)(keep * C) * sizeof *x) == 0);
    }
    free(x);
    free(y);
    tr_input_close(&a);
    tr_input_close(&p);
    tr_input_close(&ref);
    ASSERT(bus_handler_is(with_handler ? count_bus : SIG_DFL));
    ASSERT_EQ_INT(bus_seen, 0);
    ASSERT_EQ_INT(sigaction(SIGBUS, &before, NULL), 0);
  }
  return 0;
}

/* The pages of the mapped file stay resident only near the reads: a
 * 48 MB file read top to bottom in bands of 100 rows keeps at most about
 * twice the lag plus a band of it in the process (its Rss in smaps). */
static int test_map_resident_bounded(void) {
  const int R = 6000, C = 2000; /* 8000 bytes a row */
  ASSERT_EQ_INT(make("resident.tif", R, C, GDT_Float32, 1, NULL), 0);
  tr_input in;
  ASSERT_EQ_INT(open_input("resident.tif", 0, &in), 0);
  ASSERT(in.map.base != NULL);
  const int64_t band = 100;
  float *buf = malloc((size_t)((band + 2) * (C + 2)) * sizeof *buf);
  ASSERT(buf != NULL);
  tr_error e = {{0}};
  long max_kb = 0;
  for (int64_t r = -1; r < R; r += band) {
    ASSERT_EQ_INT(tr_input_read_f32(&in, r, -1, band + 2, C + 2, buf, C + 2, &e), 0);
    /* this mapping's Rss line in smaps */
    FILE *f = fopen("/proc/self/smaps", "r");
    ASSERT(f != NULL);
    char line[512];
    int ours = 0;
    while (fgets(line, sizeof line, f)) {
      unsigned long lo, hi;
      if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) ours = lo == (unsigned long)(uintptr_t)in.map.base;
      else if (ours && !strncmp(line, "Rss:", 4)) {
        const long kb = strtol(line + 4, NULL, 10);
        if (kb > max_kb) max_kb = kb;
      }
    }
    fclose(f);
  }
  free(buf);
  const long lag_kb = (long)(in.map.lag >> 10), file_kb = (long)((int64_t)R * C * 4 >> 10);
  tr_input_close(&in);
  printf("  %ld KiB of a %ld KiB file resident at most (lag %ld KiB)\n", max_kb, file_kb, lag_kb);
  ASSERT(max_kb > 0);
  ASSERT(max_kb <= 2 * lag_kb + (band + 2) * C * 4 / 1024 + 256);
  ASSERT(max_kb < file_kb * 3 / 4);
  return 0;
}

int main(int argc, char **argv) {
  GDALAllRegister();
  snprintf(dir, sizeof dir, "/tmp/terrain_direct_read_%d", (int)getpid());
  mkdir(dir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_direct_files), TR_TEST(test_gdal_files), TR_TEST(test_truncated),
                                       TR_TEST(test_cut_while_open), TR_TEST(test_map_resident_bounded)};
  const int rc = tr_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) return 1;
  return rc;
}
