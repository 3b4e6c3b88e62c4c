/*
 * test_modes_threads.c - every local mode on every test DEM type writes the
 * same bytes with one thread and whole-raster tiles as with two threads and
 * small uneven tiles (with -compute_edges too).
 *
 * Why it exists beside the parity tests: those compare with gdaldem and
 * spend half their time in the peer, so the sanitizer tree leaves them out
 * (label "peer", see scripts/test). This test is what runs every kernel of
 * the table, and every data type and nodata kind, under ASan and UBSan
 * there. Each mode meets a twelfth of the types (every type is read by a
 * mode, and slope and hillshade read them all) in both trees. A type
 * changes what is read, not how the threads and tiles split the work, and
 * in the Release tree every mode x type is compared with gdaldem by the
 * parity tests, each mode's threads and tiles by this test's subset and by
 * the parity tests' "same bytes every way" (and slope's and aspect's every
 * variant by terrain_local_determinism): the full cross product here (360
 * runs, 95 s of CI) repeated those.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "raster_check.h"
#include "tr_test.h"

static const char *dir, *tf, *src;
static char outdir[512];

/* Every local mode of the command, with the flags that pick its variants. */
static const char *const modes[] = {
    "slope",         "slope -p",           "aspect",        "aspect -trigonometric", "hillshade",
    "hillshade -combined", "hillshade -multidirectional", "hillshade -igor", "tri", "tri -alg Wilson",
    "tpi",           "roughness",          NULL, /* color-relief: its ramp path is added at run time */
};

static const char *const dems[] = {"fractal.tif",       "fractal_byte.tif",   "fractal_int16.tif",
                                   "fractal_uint16.tif", "fractal_int32.tif", "fractal_uint32.tif",
                                   "fractal_float64.tif", "fractal_nan.tif",  "nonfinite.tif",
                                   "geographic.tif",    "onerow.tif",         "allnodata.tif"};

static char ramp[1024]; /* color-relief's colour file: its positional argument after the DEM */

/* Runs `terrafort MODE DEM [RAMP] out FLAGS -q`; 0 on success. */
static int run(const char *mode, const char *dem, const char *out, const char *flags) {
  char c[4096];
  const int relief = !strncmp(mode, "color-relief", 12);
  snprintf(c, sizeof c, "'%s' %s '%s/%s' %s '%s/%s' %s -q", tf, mode, dir, dem, relief ? ramp : "", outdir, out,
           flags);
  int rc = rc_run(c, NULL);
  if (rc) fprintf(stderr, "exit %d: %s\n", rc, c);
  return rc;
}

static int same_both_ways(const char *mode, const char *dem, const char *extra) {
  char f1[256], f2[256];
  snprintf(f1, sizeof f1, "--threads 1 --tile-size 4096 %s", extra);
  snprintf(f2, sizeof f2, "--threads 2 --tile-size 37 %s", extra);
  if (run(mode, dem, "a.tif", f1) || run(mode, dem, "b.tif", f2)) return 1;
  char a[1024], b[1024];
  snprintf(a, sizeof a, "%s/a.tif", outdir);
  snprintf(b, sizeof b, "%s/b.tif", outdir);
  if (!rc_same_file(a, b)) {
    fprintf(stderr, "%s on %s %s: 1 thread and 2 threads differ\n", mode, dem, extra);
    return 1;
  }
  return 0;
}

static int test_every_mode_every_type(void) {
  const char *relief = "color-relief -alpha";
  snprintf(ramp, sizeof ramp, "'%s/ramp_percent.txt'", src);
  int checked = 0;
  for (size_t d = 0; d < sizeof dems / sizeof dems[0]; d++) {
    for (size_t m = 0; m <= sizeof modes / sizeof modes[0] - 1; m++) {
      const char *mode = modes[m] ? modes[m] : relief;
      checked++;
      /* each mode on a twelfth of the types (every type still read by a
       * mode, and hillshade and slope below read them all) */
      if ((d + m) % 12) continue;
      ASSERT_EQ_INT(same_both_ways(mode, dems[d], ""), 0);
    }
    ASSERT_EQ_INT(same_both_ways("hillshade", dems[d], "-compute_edges"), 0);
    ASSERT_EQ_INT(same_both_ways("slope", dems[d], "-compute_edges"), 0);
  }
  ASSERT_EQ_INT(checked, (int)(sizeof dems / sizeof dems[0] * (sizeof modes / sizeof modes[0])));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TESTDATA_DIR TERRAFORT SOURCE_TESTDATA_DIR\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  tf = argv[2];
  src = argv[3];
  snprintf(outdir, sizeof outdir, "%s/out_modes_threads", dir);
  mkdir(outdir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_every_mode_every_type)};
  return tr_test_main(1, argv, cases, 1);
}
