/*
 * test_gpu.c - the GPU kernels as a user runs them (--device gpu), on a
 * machine with a GPU; without one the test exits 77, which CTest reports
 * as skipped (SKIP_RETURN_CODE). It checks: slope and aspect on the GPU
 * give the CPU's bytes on every test DEM and on an 8000 x 8000 DEM;
 * hillshade is within one grey level (gdaldem's a / sqrt(b) estimate is the
 * x86 CPU's own, hillshade_cell.h) with at most 1e-4 of the cells
 * differing; a fault in a GPU launch is replayed on the GPU, and with
 * --replay-on cpu on the CPU, giving the fault-free bytes; a device fault
 * (a trapping kernel) is replayed on the CPU; --device auto picks the GPU.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_kit.h"
#include "terrain.h"
#include "tr_test.h"

static const char *src;
static char big[600];

static int tfrun(const char *cmd, const char *in, const char *out, const char *flags) {
  return ck_run("", cmd, "", in, out, flags);
}


static const char *dem(const char *name) {
  static char p[1024];
  snprintf(p, sizeof p, "%s/%s", ck_dir, name);
  return p;
}

static const char *inputs[] = {"fractal.tif", "fractal_nan.tif", "fractal_byte.tif", "fractal_int16.tif",
                               "fractal_float64.tif", "plane.tif", "cone.tif", "gauss.tif", "flat.tif",
                               "geographic.tif", "demo.tif", "allnodata.tif", "tiny.tif", "onerow.tif"};

/* max |a - b| over cells and the number of differing cells */
static int compare_bytes_within(const char *a, const char *b, double tol, double share) {
  rc_raster x, y;
  ASSERT(rc_load(a, &x) == 0 && rc_load(b, &y) == 0);
  ASSERT(x.rows == y.rows && x.cols == y.cols);
  long long n = (long long)x.rows * x.cols, diff = 0;
  double mx = 0;
  for (long long i = 0; i < n; i++) {
    const double d = fabs(x.v[i] - y.v[i]);
    if (d > 0) diff++;
    if (d > mx) mx = d;
  }
  rc_free(&x);
  rc_free(&y);
  if (mx > tol || (double)diff > share * (double)n) {
    fprintf(stderr, "%s vs %s: max diff %g, %lld of %lld cells differ\n", a, b, mx, diff, n);
    return 1;
  }
  return 0;
}

static int test_gpu_same_bytes(void) {
  static const char *flags[] = {"", "-compute_edges", "-alg ZevenbergenThorne", "-p"};
  for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++)
    for (int c = 0; c < 2; c++)
      for (size_t f = 0; f < (c ? 3 : 4); f++) {
        const char *cmd = c ? "aspect" : "slope";
        char a[256], b[256];
        snprintf(a, sizeof a, "--device cpu --tile-size 64 %s", flags[f]);
        snprintf(b, sizeof b, "--device gpu --tile-size 64 %s", flags[f]);
        ASSERT_EQ_INT(tfrun(cmd, dem(inputs[i]), "cpu.tif", a), 0);
        ASSERT_EQ_INT(tfrun(cmd, dem(inputs[i]), "gpu.tif", b), 0);
        if (!rc_same_file(ck_out("cpu.tif"), ck_out("gpu.tif"))) {
          fprintf(stderr, "%s %s on %s\n", cmd, flags[f], inputs[i]);
          return 1;
        }
      }
  return 0;
}

static int test_gpu_hillshade_within_one(void) {
  static const char *flags[] = {"", "-combined", "-multidirectional", "-igor", "-alg ZevenbergenThorne"};
  for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++)
    for (size_t f = 0; f < sizeof flags / sizeof *flags; f++) {
      char a[256], b[256];
      snprintf(a, sizeof a, "--device cpu %s", flags[f]);
      snprintf(b, sizeof b, "--device gpu %s", flags[f]);
      ASSERT_EQ_INT(tfrun("hillshade", dem(inputs[i]), "cpu.tif", a), 0);
      ASSERT_EQ_INT(tfrun("hillshade", dem(inputs[i]), "gpu.tif", b), 0);
      ASSERT(compare_bytes_within(ck_out("cpu.tif"), ck_out("gpu.tif"), 1.0, 1e-4) == 0);
    }
  return 0;
}

static int test_gpu_big_dem(void) {
  for (int c = 0; c < 2; c++) {
    const char *cmd = c ? "aspect" : "slope";
    ASSERT_EQ_INT(tfrun(cmd, big, "bigcpu.tif", "--device cpu"), 0);
    ASSERT_EQ_INT(tfrun(cmd, big, "biggpu.tif", "--device gpu"), 0);
    ASSERT(rc_same_file(ck_out("bigcpu.tif"), ck_out("biggpu.tif")));
  }
  ASSERT_EQ_INT(tfrun("hillshade", big, "bigcpu.tif", "--device cpu"), 0);
  ASSERT_EQ_INT(tfrun("hillshade", big, "biggpu.tif", "--device gpu"), 0);
  ASSERT(compare_bytes_within(ck_out("bigcpu.tif"), ck_out("biggpu.tif"), 1.0, 1e-4) == 0);
  return 0;
}

/* a GPU launch's fault replayed on the GPU and on the CPU */
static int test_gpu_replay(void) {
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "cpu.tif", "--device cpu --tile-size 64"), 0);
  for (int on_cpu = 0; on_cpu < 2; on_cpu++) {
    char f[1024];
    snprintf(f, sizeof f,
             "--device gpu --tile-size 64 --ft replay --replay-on %s --inject 'flip-launch:tile=1;flip-launch:tile=4' "
             "--ft-report '%s'",
             on_cpu ? "cpu" : "gpu", ck_out("r.json"));
    ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "gpu.tif", f), 0);
    ASSERT(rc_same_file(ck_out("cpu.tif"), ck_out("gpu.tif")));
    const char *j = rc_slurp(ck_out("r.json"));
    ASSERT(strstr(j, "\"injected\":2") && strstr(j, "\"reruns\":2"));
  }
  /* auto takes the GPU: same bytes, no note */
  char c[2048], err[600];
  snprintf(err, sizeof err, "%s/auto.stderr", ck_outdir);
  snprintf(c, sizeof c, "'%s' slope '%s' '%s/auto.tif' --tile-size 64 --device auto", ck_tf, dem("demo.tif"), ck_outdir);
  ASSERT_EQ_INT(rc_run(c, err), 0);
  ASSERT(strstr(rc_slurp(err), "note:") == NULL);
  ASSERT(rc_same_file(ck_out("cpu.tif"), ck_out("auto.tif")));
  return 0;
}

/* a device fault: gpu-trap makes tile 2's GPU launch end as a faulty device
 * does (a trap: a launch failure, sticky). Under --ft replay it is a
 * detected fault: the launch runs again on the CPU, as does every later one
 * (the context is gone), and the file is the CPU's; one worker, so exactly
 * one launch meets the fault. Without --ft replay the run fails, says so,
 * and leaves no output. */
static int test_gpu_device_fault(void) {
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "cpu.tif", "--device cpu --tile-size 64"), 0);
  char f[1024];
  snprintf(f, sizeof f,
           "--device gpu --threads 1 --tile-size 64 --ft replay --inject 'gpu-trap:tile=2' --ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "trap.tif", f), 0);
  ASSERT(rc_same_file(ck_out("cpu.tif"), ck_out("trap.tif")));
  const char *j = rc_slurp(ck_out("r.json"));
  ASSERT_EQ_INT(ck_json_int(j, "gpu_faults"), 1);
  ASSERT_EQ_INT(ck_json_int(j, "errors"), 1);
  ASSERT_EQ_INT(ck_json_int(j, "reruns"), 1);
  char c[2048], err[600];
  snprintf(err, sizeof err, "%s/trap.stderr", ck_outdir);
  snprintf(c, sizeof c, "'%s' slope '%s' '%s/trapoff.tif' --threads 1 --tile-size 64 --device gpu --inject 'gpu-trap:tile=2'",
           ck_tf, dem("demo.tif"), ck_outdir);
  ASSERT(rc_run(c, err) != 0);
  ASSERT(strstr(rc_slurp(err), "--ft replay") != NULL);
  struct stat st;
  ASSERT(stat(ck_out("trapoff.tif"), &st) != 0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  src = argv[3];
  char why[256] = "";
  if (tr_gpu_count(why, sizeof why) == 0) {
    printf("skip: %s\n", why);
    return 77;
  }
  ck_init(argv[1], argv[2], "gpu");
  GDALAllRegister();
  snprintf(big, sizeof big, "%s/big8000.tif", ck_outdir);
  char c[2048];
  snprintf(c, sizeof c, "test -f '%s' || /usr/bin/python3 '%s/scripts/bench/gen_dem.py' '%s' 8000", big, src, big);
  if (rc_run(c, NULL) != 0) return 1;
  static const tr_test_case cases[] = {TR_TEST(test_gpu_same_bytes), TR_TEST(test_gpu_hillshade_within_one),
                                       TR_TEST(test_gpu_big_dem), TR_TEST(test_gpu_replay),
                                       TR_TEST(test_gpu_device_fault)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
