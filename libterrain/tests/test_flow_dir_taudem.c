/*
 * test_flow_dir_taudem.c - tr_flowdir against TauDEM 5.3's own outputs on the two real DEMs of
 * ../shared/data (skipped when the folder is absent): loganvrt (LoganVRT/output.vrt, UTM,
 * no nodata) and enogeo (enogeo.tif, geographic, nodata). From the raw DEM:
 *   - the filled DEM equals fel.tif (pitremove) on every cell;
 *   - the directions equal p.tif (d8flowdir) on every cell that is not on a flat of the
 *     filled DEM (TauDEM drains flats by Garbrecht & Martz, terrafort by Barnes 2014), and
 *     nodata exactly where p.tif has it (the edge, next to NoData);
 *   - the slope equals sd8.tif within 1e-5 relative off flats, and on flats both are 0.
 * It prints the counts (cells compared, flat cells, directions that differ on flats).
 * Usage: test_flow_taudem SHARED_DATA_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "raster_check.h"
#include "terrain.h"
#include "tr_test.h"

static const char *data;
static char tmp[64];

static int compare(const char *name, const char *dem) {
  char src[1024], p[1024], s[1024], f[1024], out_p[256], out_s[256], out_f[256];
  snprintf(src, sizeof src, "%s/%s", data, dem);
  snprintf(p, sizeof p, "%s/taudem/%s/p.tif", data, name);
  snprintf(s, sizeof s, "%s/taudem/%s/sd8.tif", data, name);
  snprintf(f, sizeof f, "%s/taudem/%s/fel.tif", data, name);
  snprintf(out_p, sizeof out_p, "%s/%s_p.tif", tmp, name);
  snprintf(out_s, sizeof out_s, "%s/%s_sd8.tif", tmp, name);
  snprintf(out_f, sizeof out_f, "%s/%s_fel.tif", tmp, name);
  tr_run_opts run;
  tr_run_opts_init(&run);
  run.threads = 2;
  run.tile_size = 128; /* several tiles: flats cross tile borders */
  tr_graph_opts g;
  tr_graph_opts_init(&g);
  tr_flowdir_opts o;
  tr_flowdir_opts_init(&o);
  o.slope = out_s;
  o.filled_out = out_f;
  tr_error e = {{0}};
  int st = tr_flowdir(&run, &g, &o, src, out_p, &e);
  if (st) {
    fprintf(stderr, "%s: %s\n", name, e.msg);
    return 1;
  }
  rc_raster tp, ts, tf, mp, ms, mf;
  ASSERT_EQ_INT(rc_load(p, &tp), 0);
  ASSERT_EQ_INT(rc_load(s, &ts), 0);
  ASSERT_EQ_INT(rc_load(f, &tf), 0);
  ASSERT_EQ_INT(rc_load(out_p, &mp), 0);
  ASSERT_EQ_INT(rc_load(out_s, &ms), 0);
  ASSERT_EQ_INT(rc_load(out_f, &mf), 0);
  const int rows = tp.rows, cols = tp.cols;
  ASSERT(mp.rows == rows && mp.cols == cols && mp.type == GDT_Int16 && mp.has_nodata && mp.nodata == -32768);
  long n = (long)rows * cols, fel_bad = 0, off = 0, off_bad = 0, flats = 0, flat_diff = 0, nd_bad = 0, s_bad = 0;
  double s_worst = 0;
  for (long i = 0; i < n; i++) {
    const int tnd = tf.has_nodata && tf.v[i] == tf.nodata, mnd = mf.has_nodata && mf.v[i] == mf.nodata;
    if (tnd != mnd || (!tnd && (float)tf.v[i] != (float)mf.v[i])) fel_bad++;
  }
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      const long i = (long)r * cols + c;
      const int pnd = tp.v[i] == tp.nodata, mnd = mp.v[i] == mp.nodata;
      if (pnd || mnd) {
        nd_bad += pnd != mnd || (ts.v[i] != -1) || (ms.v[i] != -1);
        continue;
      }
      /* a flat of the filled DEM: no lower neighbour */
      int lower = 0;
      for (int dr = -1; dr <= 1; dr++)
        for (int dc = -1; dc <= 1; dc++) lower |= mf.v[(long)(r + dr) * cols + c + dc] < mf.v[i];
      if (!lower) {
        flats++;
        flat_diff += tp.v[i] != mp.v[i];
        s_bad += ts.v[i] != 0 || ms.v[i] != 0;
        continue;
      }
      off++;
      off_bad += tp.v[i] != mp.v[i];
      const double rel = fabs(ms.v[i] - ts.v[i]) / fabs(ts.v[i]);
      if (rel > s_worst) s_worst = rel;
      s_bad += !(rel <= 1e-5);
    }
  printf("%s: %d x %d; filled DEM cells differing from fel.tif: %ld; directions compared off flats: %ld, differing: "
         "%ld; flat cells: %ld, directions differing there (Barnes vs Garbrecht-Martz): %ld; nodata mismatches: %ld; "
         "sd8 largest relative difference off flats: %.3g, cells beyond 1e-5 or non-zero on flats: %ld\n",
         name, rows, cols, fel_bad, off, off_bad, flats, flat_diff, nd_bad, s_worst, s_bad);
  ASSERT_EQ_INT(fel_bad, 0);
  ASSERT_EQ_INT(off_bad, 0);
  ASSERT_EQ_INT(nd_bad, 0);
  ASSERT_EQ_INT(s_bad, 0);
  ASSERT(off > n / 2 && flats > 0);
  free(tp.v), free(ts.v), free(tf.v), free(mp.v), free(ms.v), free(mf.v);
  return 0;
}

static void cleanup(void) {
  char c[128];
  snprintf(c, sizeof c, "rm -rf '%s'", tmp);
  if (system(c) != 0) fprintf(stderr, "could not remove %s\n", tmp);
}

static int have_data(void) {
  char p[1024];
  struct stat st;
  snprintf(p, sizeof p, "%s/taudem/loganvrt/p.tif", data ? data : "");
  return data && stat(p, &st) == 0;
}

static int test_loganvrt(void) { return have_data() ? compare("loganvrt", "LoganVRT/output.vrt") : 0; }
static int test_enogeo(void) { return have_data() ? compare("enogeo", "enogeo.tif") : 0; }

int main(int argc, char **argv) {
  GDALAllRegister();
  data = argc > 1 ? argv[1] : NULL;
  if (!have_data()) {
    printf("skipped: no TauDEM reference outputs under %s\n", data ? data : "(none given)");
    return 77;
  }
  snprintf(tmp, sizeof tmp, "/tmp/tf_flowtd_XXXXXX");
  if (!mkdtemp(tmp)) return 1;
  atexit(cleanup);
  static const tr_test_case cases[] = {TR_TEST(test_loganvrt), TR_TEST(test_enogeo)};
  return tr_test_main(argc - 1, argv + 1, cases, 2);
}
