/*
 * test_gpu.c - the GPU kernels as a user runs them (--device gpu), on a
 * machine with a GPU; without one the test exits 77, which CTest reports
 * as skipped (SKIP_RETURN_CODE). It checks: slope and aspect on the GPU
 * give the CPU's bytes on every test DEM and on an 8000 x 8000 DEM;
 * hillshade is within one grey level (gdaldem's a / sqrt(b) estimate is the
 * x86 CPU's own, hillshade_cell.h) with at most 1e-4 of the cells
 * differing; a fault in a GPU launch is replayed on the GPU, and with
 * --replay-on cpu on the CPU, giving the fault-free bytes; a device fault
 * (a trapping kernel) is replayed on the CPU; --device auto picks the GPU;
 * --ft dual runs its two replicas as launches on separate streams and
 * device buffers, corrects injected flips and gives the --ft off bytes,
 * also under mpirun with replicas on the worker ranks' GPUs; under mpirun
 * the ranks of a node spread over its GPUs (node rank modulo GPUs, read
 * from TERRAFORT_GPU_PROFILE's device number per process) and gpu:N pins
 * every rank to GPU N, a missing N being a usage error.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_kit.h"
#include "terrain.h"
#include "tr_test.h"

static const char *src;
static char big[600];
static char mpirun[256];
static int ngpu;

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

/* a hung device: gpu-hang makes tile 2's GPU launch spin 60 s first; with
 * --ft-timeout 2000 the launch is given up at its deadline, replayed on the
 * CPU like a device fault, and the device not used again: the run ends well
 * before the spin would have (bounded: < 30 s), with the CPU's bytes and one
 * GPU fault counted. */
static int test_gpu_hang(void) {
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "cpu.tif", "--device cpu --tile-size 64"), 0);
  char f[1024];
  snprintf(f, sizeof f,
           "--device gpu --threads 1 --tile-size 64 --ft replay --ft-timeout 2000 --inject 'gpu-hang:tile=2,ms=60000' "
           "--ft-report '%s'",
           ck_out("h.json"));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "hang.tif", f), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf("  gpu-hang, --ft-timeout 2000: the run took %.1f s\n", s);
  ASSERT(s < 30.0);
  ASSERT(rc_same_file(ck_out("cpu.tif"), ck_out("hang.tif")));
  ASSERT_EQ_INT(ck_json_int(rc_slurp(ck_out("h.json")), "gpu_faults"), 1);
  return 0;
}

/* Each process's device numbers in a TERRAFORT_GPU_PROFILE file: per pid,
 * the one device its streams used (-1 when a process used two) and the
 * number of streams with launches; returns the number of processes. */
typedef struct {
  long pid;
  int index, streams;
} gpu_proc;

static int profile_procs(const char *path, gpu_proc *p, int max) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[1024];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    const long pid = (long)ck_json_int(line, "pid");
    const int index = (int)ck_json_int(line, "index");
    if (ck_json_int(line, "launches") <= 0) continue;
    int k = 0;
    while (k < n && p[k].pid != pid) k++;
    if (k == n) {
      if (n == max) break;
      p[n++] = (gpu_proc){pid, index, 0};
    }
    if (p[k].index != index) p[k].index = -1;
    p[k].streams++;
  }
  fclose(f);
  return n;
}

/* --ft dual on the GPU: every replica a launch of its own worker's stream
 * and device buffers; a flip in sub-block 2 of every block's replica P is
 * detected and corrected; the bytes are --ft off's (slope: the CPU's;
 * hillshade: the GPU's own), with 1 and 2 threads and under mpirun -n 3
 * (replicas on the worker ranks' GPUs). */
static int test_gpu_dual(void) {
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "cpu.tif", "--device cpu --tile-size 64"), 0);
  for (int w = 0; w < 3; w++) {
    if (w == 2 && !mpirun[0]) break;
    char pre[512], f[1024];
    unlink(ck_out("prof.json"));
    snprintf(pre, sizeof pre, "TERRAFORT_GPU_PROFILE='%s' %s%s", ck_out("prof.json"), w == 2 ? mpirun : "",
             w == 2 ? " -n 3" : "");
    snprintf(f, sizeof f,
             "--device gpu --tile-size 64 --threads %d --ft dual --inject 'flip:sub=2,slot=0' --ft-report '%s'",
             w == 1 ? 2 : 1, ck_out("d.json"));
    ASSERT_EQ_INT(ck_run(pre, "slope", "", dem("demo.tif"), "dual.tif", f), 0);
    ASSERT(rc_same_file(ck_out("cpu.tif"), ck_out("dual.tif")));
    const char *j = rc_slurp(ck_out("d.json"));
    ASSERT(strstr(j, "\"device\":\"gpu\"") != NULL);
    const long long blocks = ck_json_int(j, "blocks");
    ASSERT(blocks > 1);
    ASSERT_EQ_INT(ck_json_int(j, "injected"), blocks);
    ASSERT_EQ_INT(ck_json_int(j, "detected"), blocks);
    ASSERT_EQ_INT(ck_json_int(j, "corrected"), blocks);
    ASSERT_EQ_INT(ck_json_int(j, "gpu_faults"), 0);
    /* the replicas ran on the GPU, on at least two streams (two workers'
     * device buffers); under mpirun on the worker ranks too */
    gpu_proc p[8];
    const int np = profile_procs(ck_out("prof.json"), p, 8);
    int streams = 0;
    for (int k = 0; k < np; k++) streams += p[k].streams;
    ASSERT(streams >= 2);
    if (w == 2) ASSERT(np >= 2);
  }
  ASSERT_EQ_INT(tfrun("hillshade", dem("demo.tif"), "hoff.tif", "--device gpu --tile-size 64"), 0);
  char f[1024];
  snprintf(f, sizeof f, "--device gpu --tile-size 64 --ft dual --inject 'flip:p=0.25,seed=3' --ft-report '%s'",
           ck_out("d.json"));
  ASSERT_EQ_INT(tfrun("hillshade", dem("demo.tif"), "hdual.tif", f), 0);
  ASSERT(rc_same_file(ck_out("hoff.tif"), ck_out("hdual.tif")));
  const char *j = rc_slurp(ck_out("d.json"));
  ASSERT(ck_json_int(j, "injected") > 0);
  ASSERT_EQ_INT(ck_json_int(j, "injected"), ck_json_int(j, "detected"));
  ASSERT_EQ_INT(ck_json_int(j, "detected"), ck_json_int(j, "corrected"));
  return 0;
}

/* Under mpirun each rank takes GPU (node rank modulo GPUs), and gpu:N pins
 * every rank to N; the bytes are the CPU's. A GPU that does not exist is a
 * usage error and leaves no output. */
static int test_gpu_ranks(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "cpu.tif", "--device cpu --tile-size 64"), 0);
  const int nranks = 4;
  for (int pin = 0; pin < 2; pin++) {
    char pre[512];
    unlink(ck_out("prof.json"));
    snprintf(pre, sizeof pre, "TERRAFORT_GPU_PROFILE='%s' %s -n %d", ck_out("prof.json"), mpirun, nranks);
    ASSERT_EQ_INT(ck_run(pre, "slope", "", dem("demo.tif"), "ranks.tif",
                         pin ? "--tile-size 64 --device gpu:0" : "--tile-size 64 --device gpu"),
                  0);
    ASSERT(rc_same_file(ck_out("cpu.tif"), ck_out("ranks.tif")));
    gpu_proc p[16];
    const int np = profile_procs(ck_out("prof.json"), p, 16);
    ASSERT_EQ_INT(np, nranks); /* every rank had tiles */
    /* how many ranks each device got: node ranks 0..n-1 modulo the GPUs */
    int want[64] = {0}, got[64] = {0};
    for (int r = 0; r < nranks; r++) want[pin ? 0 : r % ngpu]++;
    for (int k = 0; k < np; k++) {
      ASSERT(p[k].index >= 0 && p[k].index < 64);
      got[p[k].index]++;
    }
    for (int d = 0; d < 64; d++) ASSERT_EQ_INT(got[d], want[d]);
  }
  char c[2048], err[600], flag[64];
  snprintf(err, sizeof err, "%s/pin.stderr", ck_outdir);
  snprintf(flag, sizeof flag, "--device gpu:%d", ngpu);
  for (int w = 0; w < 2; w++) {
    unlink(ck_out("nogpu.tif"));
    snprintf(c, sizeof c, "%s%s '%s' slope '%s' '%s' %s", w ? mpirun : "", w ? " -n 2" : "", ck_tf, dem("demo.tif"),
             ck_out("nogpu.tif"), flag);
    ASSERT_EQ_INT(rc_run(c, err), 2);
    char want[128];
    snprintf(want, sizeof want, "there is no GPU %d (%d present", ngpu, ngpu);
    ASSERT(strstr(rc_slurp(err), want) != NULL);
    ASSERT(access(ck_out("nogpu.tif"), F_OK) != 0);
  }
  return 0;
}

/* NVML under --ft replay: a rise of the device's uncorrected ECC count
 * across a GPU launch is a detected fault and the launch is replayed. The
 * counterfeit NVML (fake_nvml.c, FAKE_NVML_LIB) makes the count rise at
 * its 7th read: opening reads it once, then with one worker each launch
 * reads it before and after, so launch 3's second read sees the rise,
 * once; its replay gives the CPU's bytes. Then the
 * driver's own NVML, where the machine has it: the report says whether
 * its counters were read (nvml_ranks) and that no launch saw a rise. */
static int test_gpu_nvml_ecc(void) {
  const char *lib = getenv("FAKE_NVML_LIB");
  if (!lib || !*lib) {
    printf("skip: FAKE_NVML_LIB is not set\n");
    return 0;
  }
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "cpu.tif", "--device cpu --tile-size 64"), 0);
  for (int replay_cpu = 0; replay_cpu < 2; replay_cpu++) {
    char pre[1200], f[1024];
    snprintf(pre, sizeof pre, "TERRAFORT_NVML_LIBRARY='%s' FAKE_NVML_RISE_AT=7", lib);
    snprintf(f, sizeof f, "--device gpu --threads 1 --tile-size 64 --ft replay --replay-on %s --ft-report '%s'",
             replay_cpu ? "cpu" : "gpu", ck_out("e.json"));
    ASSERT_EQ_INT(ck_run(pre, "slope", "", dem("demo.tif"), "ecc.tif", f), 0);
    ASSERT(rc_same_file(ck_out("cpu.tif"), ck_out("ecc.tif")));
    const char *j = rc_slurp(ck_out("e.json"));
    ASSERT_EQ_INT(ck_json_int(j, "nvml_ranks"), 1);
    ASSERT_EQ_INT(ck_json_int(j, "ecc_faults"), 1);
    ASSERT_EQ_INT(ck_json_int(j, "gpu_faults"), 0);
    ASSERT_EQ_INT(ck_json_int(j, "errors"), 1);
    ASSERT_EQ_INT(ck_json_int(j, "reruns"), 1);
  }
  char f[1024];
  snprintf(f, sizeof f, "--device gpu --tile-size 64 --ft replay --ft-report '%s'", ck_out("e.json"));
  ASSERT_EQ_INT(tfrun("slope", dem("demo.tif"), "ecc.tif", f), 0);
  ASSERT(rc_same_file(ck_out("cpu.tif"), ck_out("ecc.tif")));
  const char *j = rc_slurp(ck_out("e.json"));
  printf("the driver's NVML: nvml_ranks %lld, ecc_faults %lld\n", ck_json_int(j, "nvml_ranks"),
         ck_json_int(j, "ecc_faults"));
  ASSERT_EQ_INT(ck_json_int(j, "ecc_faults"), 0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  src = argv[3];
  char why[256] = "";
  if ((ngpu = tr_gpu_count(why, sizeof why)) == 0) {
    printf("skip: %s\n", why);
    return 77;
  }
  ck_init(argv[1], argv[2], "gpu");
  ck_mpirun(mpirun, sizeof mpirun);
  GDALAllRegister();
  snprintf(big, sizeof big, "%s/big8000.tif", ck_outdir);
  char c[2048];
  snprintf(c, sizeof c, "test -f '%s' || /usr/bin/python3 '%s/scripts/bench/gen_dem.py' '%s' 8000", big, src, big);
  if (rc_run(c, NULL) != 0) return 1;
  static const tr_test_case cases[] = {TR_TEST(test_gpu_same_bytes), TR_TEST(test_gpu_hillshade_within_one),
                                       TR_TEST(test_gpu_big_dem), TR_TEST(test_gpu_replay),
                                       TR_TEST(test_gpu_device_fault), TR_TEST(test_gpu_hang), TR_TEST(test_gpu_dual),
                                       TR_TEST(test_gpu_ranks), TR_TEST(test_gpu_nvml_ecc)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
