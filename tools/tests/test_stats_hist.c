/*
 * test_stats_hist.c - --stats' histograms and --percentiles as a user sees
 * them (issue 27 item 1): the histogram terrafort stores is the one GDAL
 * computes itself over the same bounds (and, for 256 buckets, the one
 * gdalinfo -hist computes with no stored histogram); percentiles equal
 * numpy's method='inverted_cdf' (via /usr/bin/python3); the same side file
 * and percentile items for 1, 3 and 4 ranks, threads and tile sizes; the
 * halving allreduce taken under mpirun -n 4; bad values refused; an
 * all-nodata band gets neither; the side file listed as written and gone
 * after a failed run.
 *
 * usage: test_stats_hist TESTDATA TERRAFORT [CASE...]
 */
#include <gdal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_case.h"
#include "tr_test.h"

static char mpirun[256];

static int exists(const char *p) { return access(p, F_OK) == 0; }

/* Runs `[prefix] terrafort ARGS -q` from outdir; its exit code. */
static int tfq(const char *prefix, const char *args) {
  char c[4000];
  if (snprintf(c, sizeof c, "cd '%s' && %s '%s' %s -q", outdir, prefix, tf, args) >= (int)sizeof c) return -1;
  return rc_run(c, errfile);
}

/* Band 1's stored default histogram (no computing): 0 when there is one. */
static int stored_hist(const char *path, double *lo, double *hi, int *n, GUIntBig **bins) {
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds) return 1;
  CPLErr e = GDALGetDefaultHistogramEx(GDALGetRasterBand(ds, 1), lo, hi, n, bins, FALSE, NULL, NULL);
  GDALClose(ds);
  return e != CE_None;
}

/* A copy of path's raster alone (no .aux.xml): GDAL then knows only the
 * STATISTICS_* items of the file itself. */
static const char *bare_copy(const char *path) {
  static char p[1024];
  snprintf(p, sizeof p, "%s/bare.tif", outdir);
  char c[4200];
  snprintf(c, sizeof c, "rm -f '%s' '%s.aux.xml' && cp '%s' '%s'", p, p, path, p);
  return system(c) == 0 ? p : NULL;
}

/* The stored histogram equals GDAL's own count over the same bounds, and
 * for 256 buckets gdalinfo -hist's own choice of bounds too. */
static int check_hist_against_gdal(const char *path, int want_buckets) {
  double lo, hi;
  int n;
  GUIntBig *mine = NULL;
  ASSERT_EQ_INT(stored_hist(path, &lo, &hi, &n, &mine), 0);
  ASSERT_EQ_INT(n, want_buckets);
  const char *bare = bare_copy(path);
  ASSERT(bare);
  GDALDatasetH ds = GDALOpen(bare, GA_ReadOnly);
  ASSERT(ds);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  GUIntBig *ref = calloc((size_t)n, sizeof *ref);
  ASSERT(GDALGetRasterHistogramEx(b, lo, hi, n, ref, FALSE, FALSE, NULL, NULL) == CE_None);
  GUIntBig total = 0;
  for (int k = 0; k < n; k++) {
    if (mine[k] != ref[k]) {
      fprintf(stderr, "%s: bucket %d of %d: %llu, GDAL counts %llu\n", path, k, n, (unsigned long long)mine[k],
              (unsigned long long)ref[k]);
      return 1;
    }
    total += ref[k];
  }
  ASSERT(total > 0);
  if (want_buckets == 256 && GDALGetRasterDataType(b) != GDT_Byte) {
    /* what gdalinfo -hist computes when nothing is stored (Byte: -0.5 ..
     * 255.5 instead): the same bounds but for the 16-digit rounding */
    double glo, ghi;
    int gn;
    GUIntBig *g = NULL;
    ASSERT(GDALGetDefaultHistogramEx(b, &glo, &ghi, &gn, &g, TRUE, NULL, NULL) == CE_None);
    ASSERT_EQ_INT(gn, 256);
    ASSERT(fabs(glo - lo) <= 1e-15 * (hi - lo) && fabs(ghi - hi) <= 1e-15 * (hi - lo));
    VSIFree(g);
  }
  GDALClose(ds);
  free(ref);
  VSIFree(mine);
  return 0;
}

/* numpy's percentiles (method='inverted_cdf') of band 1's valid cells,
 * as repr() strings, one per line, into out. */
static int numpy_percentiles(const char *path, const char *plist, char *dst, size_t n) {
  char c[4096];
  snprintf(c, sizeof c,
           "/usr/bin/python3 -c \"import sys,numpy as np; from osgeo import gdal\n"
           "d=gdal.Open(sys.argv[1]); b=d.GetRasterBand(1); a=b.ReadAsArray().ravel().astype(np.float64); "
           "nd=b.GetNoDataValue()\n"
           "a=a[~np.isnan(a)]\n"
           "a=a if nd is None else a[a!=nd]\n"
           "[print(repr(float(np.percentile(a,float(p),method='inverted_cdf')))) for p in sys.argv[2].split(',')]\" "
           "'%s' '%s' > '%s/np.txt'",
           path, plist, outdir);
  if (rc_run(c, NULL) != 0) return 1;
  const char *got = rc_slurp(out("np.txt"));
  size_t len = strlen(got);
  if (len >= n) len = n - 1;
  memcpy(dst, got, len);
  dst[len] = 0;
  return 0;
}

/* Band 1's STATISTICS_PERCENTILE_<p> items equal numpy's values. */
static int check_percentiles(const char *path, const char *plist) {
  char ref[4096];
  ASSERT_EQ_INT(numpy_percentiles(path, plist, ref, sizeof ref), 0);
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  ASSERT(ds);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  char list[512];
  snprintf(list, sizeof list, "%s", plist);
  const char *r = ref;
  for (char *p = strtok(list, ","); p; p = strtok(NULL, ",")) {
    char key[96];
    snprintf(key, sizeof key, "STATISTICS_PERCENTILE_%s", p);
    const char *v = GDALGetMetadataItem(b, key, NULL);
    const double want = strtod(r, NULL);
    if (!v || strtod(v, NULL) != want) {
      fprintf(stderr, "%s: %s = %s, numpy says %.17g\n", path, key, v ? v : "(none)", want);
      GDALClose(ds);
      return 1;
    }
    r = strchr(r, '\n');
    ASSERT(r);
    r++;
  }
  GDALClose(ds);
  return 0;
}

/* Points for a Float64 product (interpolate -a nearest): negative and
 * positive values, many ties, a spread of magnitudes. */
static const char *float64_points(void) {
  const char *pts = out("pts.xyz");
  FILE *f = fopen(pts, "w");
  if (!f) return NULL;
  for (int r = 0; r < 40; r++)
    for (int k = 0; k < 50; k++)
      fprintf(
          f, "%.1f %.1f %.17g\n", k + 0.5, r + 0.5,
          (r * 7 + k * 13) % 11 == 0 ? 3.25 : ((r * 31 + k * 17) % 97 - 48) * 1.0e-3 * (1 + (r % 5)) * pow(10, k % 7));
  fclose(f);
  return pts;
}

/* GDAL's histogram and numpy's percentiles, on DEMs with nodata holes and
 * NaN nodata, Byte (hillshade), Float32 (slope) and Float64 (interpolate)
 * products, a few bucket counts. */
static int test_hist_and_percentiles_match_references(void) {
  reset(outdir);
  const char *plist = "0,2,25,50,75,98,99.9,100";
  static const char *runs[] = {
      "slope '%s' o.tif --stats --percentiles %s",
      "slope '%s' o.tif --hist-buckets 7 --percentiles %s --tile-size 37",
      "hillshade '%s' o.tif --stats --percentiles %s",
      "aspect '%s' o.tif --hist-buckets 65536 --percentiles %s --threads 3 --tile-size 64",
  };
  static const int buckets[] = {256, 7, 256, 65536};
  static const char *dems[] = {"fractal.tif", "fractal_nan.tif", "fractal_int16.tif"};
  for (size_t d = 0; d < sizeof dems / sizeof *dems; d++)
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
      char a[2048];
      snprintf(a, sizeof a, runs[k], in(dems[d]), plist);
      ASSERT_EQ_INT(tfq("", a), 0);
      if (check_hist_against_gdal(out("o.tif"), buckets[k]) || check_percentiles(out("o.tif"), plist)) {
        fprintf(stderr, "  in: terrafort %s\n", a);
        return 1;
      }
    }
  const char *pts = float64_points();
  ASSERT(pts);
  char a[2048];
  snprintf(
      a, sizeof a,
      "interpolate '%s' o.tif -a nearest -txe 0 50 -tye 0 40 -outsize 50 40 --tile-size 16 --stats --percentiles %s",
      pts, plist);
  ASSERT_EQ_INT(tfq("", a), 0);
  GDALDatasetH ds = GDALOpen(out("o.tif"), GA_ReadOnly);
  ASSERT(ds);
  ASSERT_EQ_INT(GDALGetRasterDataType(GDALGetRasterBand(ds, 1)), GDT_Float64);
  GDALClose(ds);
  return check_hist_against_gdal(out("o.tif"), 256) || check_percentiles(out("o.tif"), plist);
}

/* The band's STATISTICS_PERCENTILE_* items, one per line. */
static void percentile_items(const char *path, char *buf, size_t n) {
  buf[0] = 0;
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds) return;
  char **md = GDALGetMetadata(GDALGetRasterBand(ds, 1), NULL);
  for (int i = 0; md && md[i]; i++)
    if (!strncmp(md[i], "STATISTICS_PERCENTILE_", 22)) snprintf(buf + strlen(buf), n - strlen(buf), "%s\n", md[i]);
  GDALClose(ds);
}

/* Byte-identical side file (the histogram) and percentile items for any
 * rank count, thread count and tile size. */
static int test_same_for_ranks_threads_tiles(void) {
  reset(outdir);
  static const struct {
    int ranks, threads, tile;
  } cfg[] = {{1, 1, 512}, {1, 2, 100}, {1, 1, 37}, {3, 1, 64}, {4, 2, 300}, {4, 1, 97}};
  char ref_items[4096] = "", items[4096];
  long ref_n = 0;
  unsigned char *ref = NULL;
  for (size_t k = 0; k < sizeof cfg / sizeof *cfg; k++) {
    char pre[512] = "", a[2048];
    if (cfg[k].ranks > 1) {
      if (!mpirun[0]) continue;
      snprintf(pre, sizeof pre, "%s -n %d", mpirun, cfg[k].ranks);
    }
    snprintf(a, sizeof a,
             "slope '%s' o.tif --stats --hist-buckets 1000 --percentiles 2,50,98 --threads %d --tile-size %d",
             in("demo.tif"), cfg[k].threads, cfg[k].tile);
    ASSERT_EQ_INT(tfq(pre, a), 0);
    long n;
    unsigned char *aux = rc_file_bytes(out("o.tif.aux.xml"), &n);
    ASSERT(aux && n > 1000);
    percentile_items(out("o.tif"), items, sizeof items);
    ASSERT(strstr(items, "STATISTICS_PERCENTILE_98="));
    if (!ref) {
      ref = aux, ref_n = n;
      snprintf(ref_items, sizeof ref_items, "%s", items);
      ASSERT_EQ_INT(check_percentiles(out("o.tif"), "2,50,98"), 0);
      continue;
    }
    if (n != ref_n || memcmp(aux, ref, (size_t)n) || strcmp(items, ref_items)) {
      fprintf(stderr, "ranks %d threads %d tile %d: histogram or percentiles differ\n%s\n%s", cfg[k].ranks,
              cfg[k].threads, cfg[k].tile, ref_items, items);
      return 1;
    }
    free(aux);
  }
  free(ref);
  return 0;
}

/* An unsigned integer field of a JSON report ("key":v), -1 when absent. */
static long long json_u(const char *j, const char *key) {
  char k[128];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(j, k);
  return p ? atoll(p + strlen(k)) : -1;
}

/* Under mpirun -n 4 the percentiles' 512 KiB count vectors take libcoll's
 * recursive-halving path (its halving_calls counter, in --stats-json); a
 * 256-bucket histogram alone stays below the cut-off. The percentiles in
 * the JSON are the metadata's. */
static int test_mpi_halving_path(void) {
  if (!mpirun[0]) {
    printf("skip: no MPI\n");
    return 0;
  }
  reset(outdir);
  char pre[512], a[2048];
  snprintf(pre, sizeof pre, "%s -n 4", mpirun);
  snprintf(a, sizeof a, "slope '%s' o.tif --stats --percentiles 2,50,98 --stats-json s.json --threads 1",
           in("demo.tif"));
  ASSERT_EQ_INT(tfq(pre, a), 0);
  const char *j = rc_slurp(out("s.json"));
  ASSERT(json_u(j, "halving_calls") > 0);
  ASSERT(json_u(j, "allreduce_calls") >= json_u(j, "halving_calls"));
  ASSERT(strstr(j, "\"percentiles\":{\"2\":"));
  ASSERT(strstr(j, "\"histogram\":{\"min\":"));
  char items[4096];
  percentile_items(out("o.tif"), items, sizeof items);
  const char *p50 = strstr(items, "STATISTICS_PERCENTILE_50=");
  const char *j50 = strstr(j, "\"50\":");
  ASSERT(p50 && j50);
  ASSERT(strtod(p50 + 25, NULL) == strtod(j50 + 5, NULL));
  snprintf(a, sizeof a, "slope '%s' o.tif --stats --stats-json s.json --threads 1", in("demo.tif"));
  ASSERT_EQ_INT(tfq(pre, a), 0);
  j = rc_slurp(out("s.json"));
  ASSERT_EQ_INT(json_u(j, "halving_calls"), 0);
  ASSERT(json_u(j, "allreduce_calls") > 0);
  return 0;
}

/* Bad values: exit 2, one line naming the option, nothing written. */
static int test_bad_values(void) {
  reset(outdir);
  static const struct {
    const char *opt, *needle;
  } bad[] = {{"--percentiles 101", "--percentiles: 101 is out of range"},
             {"--percentiles abc", "--percentiles: 'abc' is not a finite number"},
             {"--percentiles 2,,98", "--percentiles: '2,,98' is not a comma-separated list"},
             {"--percentiles -1", "--percentiles: -1 is out of range"},
             {"--percentiles nan", "--percentiles: 'nan' is not a finite number"},
             {"--hist-buckets -1", "--hist-buckets: -1 is out of range [0, 65536]"},
             {"--hist-buckets 70000", "--hist-buckets: 70000 is out of range [0, 65536]"},
             {"--hist-buckets x", "--hist-buckets: 'x' is not an integer"}};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    char a[2048];
    snprintf(a, sizeof a, "slope -q '%s' o.tif %s", in("fractal.tif"), bad[k].opt);
    if (expect(a, 2, bad[k].needle)) return 1;
    ASSERT(!exists(out("o.tif")) && !exists(out("o.tif.aux.xml")));
    ASSERT_EQ_INT(rc_count_entries(outdir), 1); /* the stderr file alone */
  }
  return 0;
}

/* All nodata: as --stats does today (no STATISTICS_* items), no histogram
 * and no percentiles: no side file, null in --stats-json. */
static int test_all_nodata(void) {
  reset(outdir);
  char a[2048];
  snprintf(a, sizeof a, "slope '%s' o.tif --stats --percentiles 2,50 --stats-json s.json", in("allnodata.tif"));
  ASSERT_EQ_INT(tfq("", a), 0);
  ASSERT(exists(out("o.tif")));
  ASSERT(!exists(out("o.tif.aux.xml")));
  char items[4096];
  percentile_items(out("o.tif"), items, sizeof items);
  ASSERT_EQ_INT((int)strlen(items), 0);
  const char *j = rc_slurp(out("s.json"));
  ASSERT(strstr(j, "\"valid_count\":0,"));
  ASSERT(strstr(j, "\"histogram\":null,\"percentiles\":null"));
  return 0;
}

/* --hist-buckets 0: the moments alone (no histogram, no side file, no
 * allreduce of a range); with --percentiles the exact values still come. */
static int test_no_histogram(void) {
  reset(outdir);
  char a[2048];
  snprintf(a, sizeof a, "slope '%s' o.tif --stats --hist-buckets 0 --stats-json s.json", in("fractal.tif"));
  ASSERT_EQ_INT(tfq("", a), 0);
  ASSERT(!exists(out("o.tif.aux.xml")));
  GDALDatasetH ds = GDALOpen(out("o.tif"), GA_ReadOnly);
  ASSERT(ds);
  const char *mean = GDALGetMetadataItem(GDALGetRasterBand(ds, 1), "STATISTICS_MEAN", NULL);
  const int has_mean = mean != NULL;
  GDALClose(ds);
  ASSERT(has_mean);
  const char *j = rc_slurp(out("s.json"));
  ASSERT(strstr(j, "\"mean\":") && !strstr(j, "\"histogram\"")); /* the moments' report, as before */
  ASSERT_EQ_INT(json_u(j, "allreduce_calls"), 0);
  reset(outdir);
  snprintf(a, sizeof a, "slope '%s' o.tif --hist-buckets 0 --percentiles 50", in("fractal.tif"));
  ASSERT_EQ_INT(tfq("", a), 0);
  ASSERT(!exists(out("o.tif.aux.xml")));
  char items[4096];
  percentile_items(out("o.tif"), items, sizeof items);
  ASSERT(strstr(items, "STATISTICS_PERCENTILE_50="));
  return 0;
}

/* The side file is one of the files a run wrote (TERRAFORT_OUTPUTS_FILE),
 * and a run that fails leaves neither it nor the raster. */
static int test_side_file_written_and_removed(void) {
  reset(outdir);
  char c[4096];
  snprintf(c, sizeof c, "cd '%s' && TERRAFORT_OUTPUTS_FILE='%s/list.txt' '%s' slope -q '%s' o.tif --stats", outdir,
           outdir, tf, in("fractal.tif"));
  ASSERT_EQ_INT(rc_run(c, errfile), 0);
  const char *list = rc_slurp(out("list.txt"));
  ASSERT(strstr(list, "/o.tif\n"));
  ASSERT(strstr(list, "/o.tif.aux.xml\n"));
  reset(outdir);
  snprintf(c, sizeof c,
           "slope '%s' k.tif --stats --percentiles 50 --tile-size 64 --ft dual --threads 1 --inject "
           "'kill:worker=1,after=2'",
           in("fractal.tif"));
  ASSERT(tfq("timeout 60", c) != 0);
  ASSERT(!exists(out("k.tif")) && !exists(out("k.tif.aux.xml")));
  ASSERT_EQ_INT(rc_count_entries(outdir), 1); /* the stderr file alone: no temporary, no scratch */
  return 0;
}

/* The side file is one of the run's outputs: refused (exit 4, nothing
 * written) where it is a file the run reads, by any spelling (a colour file
 * named OUTPUT.aux.xml, through ./), or another of its outputs; with
 * --hist-buckets 0 there is no side file and the same run goes ahead. */
static int test_side_file_refused(void) {
  reset(outdir);
  char c[4096];
  FILE *f = fopen(out("o.tif.aux.xml"), "w");
  ASSERT(f);
  fputs("0 0 0 0\n1000 255 255 255\n", f);
  fclose(f);
  const char *ramp = rc_slurp(out("o.tif.aux.xml"));
  ASSERT(ramp);
  char *before = strdup(ramp);
  snprintf(c, sizeof c, "color-relief '%s' ./o.tif.aux.xml o.tif --stats", in("fractal.tif"));
  ASSERT_EQ_INT(tfq("", c), 4);
  ASSERT(!exists(out("o.tif")));
  ASSERT(!strcmp(rc_slurp(out("o.tif.aux.xml")), before));
  snprintf(c, sizeof c, "color-relief '%s' o.tif.aux.xml o.tif --stats --hist-buckets 0", in("fractal.tif"));
  ASSERT_EQ_INT(tfq("", c), 0);
  ASSERT(exists(out("o.tif")));
  ASSERT(!strcmp(rc_slurp(out("o.tif.aux.xml")), before));
  free(before);
  reset(outdir);
  snprintf(c, sizeof c, "slope '%s' s.tif --stats --stats-json s.tif.aux.xml", in("fractal.tif"));
  ASSERT_EQ_INT(tfq("", c), 4);
  ASSERT(!exists(out("s.tif")) && !exists(out("s.tif.aux.xml")));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dir = argv[1];
  tf = argv[2];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir - 16, "%s/../out_stats_hist", dir);
  if (snprintf(errfile, sizeof errfile, "%s/stderr.txt", outdir) >= (int)sizeof errfile) return 2;
  reset(outdir);
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
#ifndef TERRAFORT_HAVE_MPI
  mpirun[0] = 0;
#endif
  static const tr_test_case cases[] = {TR_TEST(test_hist_and_percentiles_match_references),
                                       TR_TEST(test_same_for_ranks_threads_tiles),
                                       TR_TEST(test_mpi_halving_path),
                                       TR_TEST(test_bad_values),
                                       TR_TEST(test_all_nodata),
                                       TR_TEST(test_no_histogram),
                                       TR_TEST(test_side_file_refused),
                                       TR_TEST(test_side_file_written_and_removed)};
  return tr_test_main(argc - 2, argv + 2, cases, (int)(sizeof cases / sizeof cases[0]));
}
