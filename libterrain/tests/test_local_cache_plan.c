/*
 * test_local_cache_plan.c - the GDAL block cache a local run plans
 * (local/executor.c, terrafort(1) GDAL_CACHEMAX): the input blocks one row
 * of tiles reads plus 8 MiB, within 32..64 MiB, and the floor for a plain
 * Float32 GeoTIFF, which is read directly. The library hands the plan to the
 * caller's tr_run_opts.gdal_cache before the first tile; this test records
 * it from real slope runs (default tiles of 512, halo 1) on GeoTIFFs written
 * here, each with the value the rule gives worked out by hand below. A COG
 * output (written by copy at commit) is told a second plan for the copy, a
 * row of its 512-cell blocks across the raster (at least 16 MiB), only where
 * that is below the loop's (raster.h, tr_output_copy_cache_mb).
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "terrain.h"
#include "tr_test.h"

static char outdir[512];

/* A Float32 GeoTIFF of rows x cols (a gentle ramp), tiled 256 x 256 and
 * DEFLATE-compressed, or striped and plain. */
static int make(const char *path, int rows, int cols, int tiled) {
  char *co[] = {"TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256", "COMPRESS=DEFLATE", NULL};
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, cols, rows, 1, GDT_Float32, tiled ? co : NULL);
  ASSERT(ds != NULL);
  double gt[6] = {500000, 10, 0, 4000000, 0, -10};
  GDALSetGeoTransform(ds, gt);
  float *row = malloc(sizeof(float) * (size_t)cols);
  ASSERT(row != NULL);
  int bad = 0;
  for (int r = 0; r < rows && !bad; r++) {
    for (int c = 0; c < cols; c++) row[c] = 0.01f * (float)(r + c);
    bad = GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Write, 0, r, cols, 1, row, cols, 1, GDT_Float32, 0, 0) != CE_None;
  }
  free(row);
  GDALClose(ds);
  ASSERT(!bad);
  return 0;
}

static void record(int64_t bytes, void *user) { *(int64_t *)user = bytes; }

/* The cache slope planned on `name` (rows x cols, tiled or not), in MiB. */
static int64_t planned_mib(const char *name, int rows, int cols, int tiled) {
  char in[700], out[700];
  snprintf(in, sizeof in, "%s/%s", outdir, name);
  snprintf(out, sizeof out, "%s/slope_%s", outdir, name);
  if (make(in, rows, cols, tiled)) return -1;
  int64_t got = -1;
  tr_slope_opts o;
  tr_slope_opts_init(&o);
  o.run.threads = 2;
  o.run.gdal_cache = record;
  o.run.gdal_cache_user = &got;
  tr_error e = {{0}};
  if (tr_slope(&o, in, out, &e)) {
    fprintf(stderr, "slope %s: %s\n", name, e.msg);
    return -1;
  }
  remove(in);
  remove(out);
  return got < 0 ? -1 : got >> 20;
}

/* Every plan told to the caller, in MiB, in order. */
typedef struct {
  int n;
  int64_t mib[4];
} plans;

static void record_all(int64_t bytes, void *user) {
  plans *p = user;
  if (p->n < 4) p->mib[p->n] = bytes >> 20;
  p->n++;
}

/* The plans slope tells on `name` (rows x cols, tiled or not) written as a COG. */
static int cog_plans(const char *name, int rows, int cols, int tiled, plans *got) {
  char in[700], out[700];
  snprintf(in, sizeof in, "%s/%s", outdir, name);
  snprintf(out, sizeof out, "%s/cog_%s", outdir, name);
  if (make(in, rows, cols, tiled)) return -1;
  *got = (plans){0, {0}};
  tr_slope_opts o;
  tr_slope_opts_init(&o);
  o.run.threads = 2;
  o.run.format = "COG";
  o.run.gdal_cache = record_all;
  o.run.gdal_cache_user = got;
  tr_error e = {{0}};
  if (tr_slope(&o, in, out, &e)) {
    fprintf(stderr, "slope %s to COG: %s\n", name, e.msg);
    return -1;
  }
  GDALDatasetH ds = GDALOpen(out, GA_ReadOnly);
  const char *layout = ds ? GDALGetMetadataItem(ds, "LAYOUT", "IMAGE_STRUCTURE") : NULL;
  const int cog = layout && !strcmp(layout, "COG");
  if (ds) GDALClose(ds);
  remove(in);
  remove(out);
  return cog ? 0 : -1;
}

static int test_cog_copy(void) {
  plans p;
  /* the tiled 8000-wide input above: the loop's 39 MiB, then the copy's
   * 8000 x 512 x 4 B = 15.6 MiB, + 1 rounded up: 16 */
  ASSERT_EQ_INT(cog_plans("tiled_cog.tif", 1100, 8000, 1, &p), 0);
  ASSERT_EQ_INT(p.n, 2);
  ASSERT_EQ_INT(p.mib[0], 39);
  ASSERT_EQ_INT(p.mib[1], 16);
  /* 17000 wide, plain: the loop's floor, 32 MiB; the copy's row of blocks
   * 17000 x 512 x 4 B = 33.2 MiB, 34, would raise it: not told */
  ASSERT_EQ_INT(cog_plans("wide_cog.tif", 300, 17000, 0, &p), 0);
  ASSERT_EQ_INT(p.n, 1);
  ASSERT_EQ_INT(p.mib[0], 32);
  return 0;
}

static int test_plans(void) {
  /* plain striped Float32: read directly, only the floor */
  ASSERT_EQ_INT(planned_mib("plain.tif", 600, 600, 0), 32);
  /* 8000 wide, blocks of 256: a row of tiles needs 512 + 2 halo + 2 x 255
   * partial rows = 1024 rows of blocks; 1024 x 8000 x 4 B = 31.25 MiB,
   * + 8 = 39.25 MiB: 39 */
  ASSERT_EQ_INT(planned_mib("tiled.tif", 1100, 8000, 1), 39);
  /* the same width but only 300 rows: 300 x 8000 x 4 B + 8 MiB = 17.2 MiB,
   * raised to the floor */
  ASSERT_EQ_INT(planned_mib("short.tif", 300, 8000, 1), 32);
  /* 17000 wide: 1024 x 17000 x 4 B + 8 MiB = 74.4 MiB, capped */
  ASSERT_EQ_INT(planned_mib("wide.tif", 1030, 17000, 1), 64);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_local_cache_plan", argv[1]);
  mkdir(outdir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_plans), TR_TEST(test_cog_copy)};
  return tr_test_main(argc - 1, argv + 1, cases, 2);
}
