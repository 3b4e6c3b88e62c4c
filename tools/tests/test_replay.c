/*
 * test_replay.c - `--ft replay` as a user runs it (specs/idempotent-replay.md):
 * the same bytes as --ft off for every local kernel on every valid test DEM;
 * a bit flipped in a slope or aspect tile, reported as ECC would, repaired
 * by re-running exactly that launch (exact counts in --ft-report); silent
 * flips found by --ft-check's sampled re-execution, and without it by the
 * rows' output invariants when they leave the row's range; a fault in the in-place
 * iterative kernel (smooth) repaired through the relaunch set, and through
 * the tile's checkpoint when an entry is invalid; the error limit's exit
 * code with no output left; the same bytes and counts for any thread count
 * and under mpirun -n 2 and 3; bad options.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_kit.h"
#include "terrain.h"
#include "tr_test.h"

static const char *ramps;
static char mpirun[256];

static int tfrun(const char *prefix, const char *cmd, const char *in, const char *out, const char *flags) {
  char extra[600] = "";
  if (!strcmp(cmd, "color-relief")) snprintf(extra, sizeof extra, "'%s/ramp_basic.txt'", ramps);
  return ck_run(prefix, cmd, extra, in, out, flags);
}


static const char *inputs[] = {"fractal.tif",   "fractal_nan.tif", "fractal_byte.tif", "fractal_int16.tif",
                               "fractal_float64.tif", "mosaic.vrt", "plane.tif", "cone.tif",
                               "flat.tif",      "geographic.tif",  "demo.tif",         "allnodata.tif",
                               "nocrs.tif",     "tiny.tif",        "onerow.tif"};
static const char *kernels[] = {"slope", "aspect", "hillshade", "tri", "tpi", "roughness", "color-relief", "smooth"};

/* every kernel-table row, every valid DEM (a quarter of the pairs; an eighth
 * under the sanitizers): --ft replay gives --ft off's bytes, and no row's
 * output invariant refuses a value the row computed (no cell found out of
 * range, so none re-run) */
static int test_replay_same_bytes(void) {
  char flags[1024];
  snprintf(flags, sizeof flags, "--tile-size 48 --ft replay --ft-report '%s'", ck_out("r.json"));
  for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++)
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
      /* each kernel on a quarter of the inputs, every input under two
       * kernels (an eighth and one under the sanitizers): replay's
       * bookkeeping does not depend on the input, and each kernel's values
       * on every input are checked against their peers elsewhere
       * (cli_gdaldem_compat and the others) */
      if ((k + i) % (TR_TEST_SANITIZED ? 8 : 4)) continue;
      ASSERT_EQ_INT(tfrun("", kernels[k], inputs[i], "off.tif", "--tile-size 48"), 0);
      ASSERT_EQ_INT(tfrun("", kernels[k], inputs[i], "rep.tif", flags), 0);
      const char *j = rc_slurp(ck_out("r.json"));
      if (!rc_same_file(ck_out("off.tif"), ck_out("rep.tif")) || ck_json_int(j, "faults") != 0 ||
          ck_json_int(j, "reproduced") != 0 || ck_json_int(j, "errors") != 0) {
        fprintf(stderr, "%s on %s: %s\n", kernels[k], inputs[i], j);
        return 1;
      }
    }
  return 0;
}

/* Output invariants (kernel.h) under --ft replay, without --ft-check: a
 * silent flip that takes a cell out of what its row can produce is found
 * and the launch re-run, in every row that has an invariant: the sign bit
 * of a slope, an aspect, a TRI (both), a roughness or a smoothed value on
 * fractal.tif (positive elevations), and bit 30 of a TPI on flat.tif (0
 * becomes 2 where the span is 0). Every tile gets one: the counts are exact
 * and the file is --ft off's. A flip that stays in range (the lowest
 * mantissa bit of an interior cell) is not found without --ft-check, which
 * does find it. Under mpirun the ranks' counts are summed. */
static int test_replay_invariants(void) {
  enum { TILES32 = 35 }; /* fractal.tif and flat.tif, 200 x 150, in 32-cell tiles */
  static const struct {
    const char *cmd, *dem, *opts, *inject;
  } rows[] = {
      {"slope", "fractal.tif", "", "flip-launch:tile=-1,silent=1,bit=31"},
      {"slope", "fractal.tif", "-p -compute_edges", "flip-launch:tile=-1,silent=1,bit=31"},
      {"aspect", "fractal.tif", "", "flip-launch:tile=-1,silent=1,bit=31"},
      {"tri", "fractal.tif", "", "flip-launch:tile=-1,silent=1,bit=31"},
      {"tri", "fractal.tif", "-alg Wilson", "flip-launch:tile=-1,silent=1,bit=31"},
      {"roughness", "fractal.tif", "", "flip-launch:tile=-1,silent=1,bit=31"},
      {"smooth", "fractal.tif", "--passes 2", "flip-launch:tile=-1,launch=2,silent=1,bit=31"},
      {"tpi", "flat.tif", "", "flip-launch:tile=-1,silent=1,bit=30"},
  };
  char flags[1024];
  for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
    snprintf(flags, sizeof flags, "--tile-size 32 %s", rows[k].opts);
    ASSERT_EQ_INT(tfrun("", rows[k].cmd, rows[k].dem, "off.tif", flags), 0);
    snprintf(flags, sizeof flags, "--tile-size 32 %s --ft replay --ft-max-errors 100 --inject '%s' --ft-report '%s'",
             rows[k].opts, rows[k].inject, ck_out("r.json"));
    ASSERT_EQ_INT(tfrun("", rows[k].cmd, rows[k].dem, "rep.tif", flags), 0);
    const char *j = rc_slurp(ck_out("r.json"));
    if (!rc_same_file(ck_out("off.tif"), ck_out("rep.tif")) || ck_json_int(j, "injected") != TILES32 ||
        ck_json_int(j, "reported") != 0 || ck_json_int(j, "faults") != TILES32 || ck_json_int(j, "reproduced") != 0 ||
        ck_json_int(j, "errors") != TILES32 || ck_json_int(j, "reruns") != TILES32 || ck_json_int(j, "sampled") != 0) {
      fprintf(stderr, "%s %s on %s: %s\n", rows[k].cmd, rows[k].opts, rows[k].dem, j);
      return 1;
    }
  }
  /* in range: tile 8 is inside the raster (no nodata edge cell) */
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "off.tif", "--tile-size 32"), 0);
  snprintf(flags, sizeof flags, "--tile-size 32 --ft replay --inject 'flip-launch:tile=8,silent=1,bit=0' --ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "bad.tif", flags), 0);
  const char *j = rc_slurp(ck_out("r.json"));
  ASSERT_EQ_INT(ck_json_int(j, "injected"), 1);
  ASSERT_EQ_INT(ck_json_int(j, "faults"), 0);
  ASSERT_EQ_INT(ck_json_int(j, "errors"), 0);
  ASSERT(!rc_same_file(ck_out("off.tif"), ck_out("bad.tif")));
  snprintf(flags, sizeof flags,
           "--tile-size 32 --ft replay --ft-check 1 --inject 'flip-launch:tile=8,silent=1,bit=0' --ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "rep.tif", flags), 0);
  j = rc_slurp(ck_out("r.json"));
  ASSERT_EQ_INT(ck_json_int(j, "sample_mismatches"), 1);
  ASSERT_EQ_INT(ck_json_int(j, "reruns"), 1);
  ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
  if (!mpirun[0]) {
    printf("skip: no mpirun (the ranks' sums)\n");
    return 0;
  }
  char pre[300];
  snprintf(pre, sizeof pre, "%s -n 3", mpirun);
  snprintf(flags, sizeof flags,
           "--tile-size 32 --ft replay --ft-max-errors 100 --inject 'flip-launch:tile=-1,silent=1,bit=31' "
           "--ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(tfrun(pre, "slope", "fractal.tif", "rep.tif", flags), 0);
  ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
  j = rc_slurp(ck_out("r.json"));
  ASSERT_EQ_INT(ck_json_int(j, "checked"), TILES32);
  ASSERT_EQ_INT(ck_json_int(j, "faults"), TILES32);
  ASSERT_EQ_INT(ck_json_int(j, "reruns"), TILES32);
  return 0;
}

/* fractal.tif is 200 x 150: 12 tiles of 64 */
enum { FRACTAL_TILES = 12 };

/* (3) one flipped bit in one slope or aspect tile, reported: exactly that
 * launch runs again, and the file is byte-identical */
static int test_replay_flip_one_launch(void) {
  for (int c = 0; c < 2; c++) {
    const char *cmd = c ? "aspect" : "slope";
    ASSERT_EQ_INT(tfrun("", cmd, "fractal.tif", "off.tif", "--tile-size 64"), 0);
    for (int tile = 0; tile < FRACTAL_TILES; tile += 5) {
      char flags[1024];
      snprintf(flags, sizeof flags, "--tile-size 64 --ft replay --inject 'flip-launch:tile=%d' --ft-report '%s'", tile,
               ck_out("r.json"));
      ASSERT_EQ_INT(tfrun("", cmd, "fractal.tif", "rep.tif", flags), 0);
      ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
      const char *j = rc_slurp(ck_out("r.json"));
      ASSERT_EQ_INT(ck_json_int(j, "injected"), 1);
      ASSERT_EQ_INT(ck_json_int(j, "reported"), 1);
      ASSERT_EQ_INT(ck_json_int(j, "launches"), FRACTAL_TILES);
      ASSERT_EQ_INT(ck_json_int(j, "idempotent"), FRACTAL_TILES);
      ASSERT_EQ_INT(ck_json_int(j, "errors"), 1);
      ASSERT_EQ_INT(ck_json_int(j, "reruns"), 1);
      ASSERT_EQ_INT(ck_json_int(j, "relaunch_sets"), 0);
      ASSERT_EQ_INT(ck_json_int(j, "checkpoint_restores"), 0);
      ASSERT_EQ_INT(ck_json_int(j, "unrepaired"), 0);
    }
  }
  return 0;
}

/* random reported flips: each one re-run, same bytes and counts for any
 * thread count */
static int test_replay_random_flips_threads(void) {
  ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "off.tif", "--tile-size 32 -compute_edges"), 0);
  long long first = -1;
  for (int threads = 1; threads <= 4; threads *= 2) {
    char flags[1024];
    snprintf(flags, sizeof flags,
             "--tile-size 32 -compute_edges --threads %d --ft replay --ft-max-errors 1000 "
             "--inject 'flip-launch:p=0.3,seed=11' --ft-report '%s'",
             threads, ck_out("r.json"));
    ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "rep.tif", flags), 0);
    ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
    const char *j = rc_slurp(ck_out("r.json"));
    const long long inj = ck_json_int(j, "injected");
    ASSERT(inj > 0);
    ASSERT_EQ_INT(ck_json_int(j, "errors"), inj);
    ASSERT_EQ_INT(ck_json_int(j, "reruns"), inj);
    if (first < 0) first = inj;
    ASSERT_EQ_INT(inj, first);
  }
  return 0;
}

/* silent flips: only --ft-check finds them; with every launch sampled all
 * are found and repaired; without it the file is wrong (the faults are real) */
static int test_replay_sampled_check(void) {
  ASSERT_EQ_INT(tfrun("", "aspect", "fractal.tif", "off.tif", "--tile-size 64"), 0);
  char flags[1024];
  snprintf(flags, sizeof flags,
           "--tile-size 64 --ft replay --ft-check 1 --inject 'flip-launch:tile=2,silent=1;flip-launch:tile=7,silent=1' "
           "--ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(tfrun("", "aspect", "fractal.tif", "rep.tif", flags), 0);
  ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
  const char *j = rc_slurp(ck_out("r.json"));
  ASSERT_EQ_INT(ck_json_int(j, "injected"), 2);
  ASSERT_EQ_INT(ck_json_int(j, "reported"), 0);
  ASSERT_EQ_INT(ck_json_int(j, "sampled"), FRACTAL_TILES);
  ASSERT_EQ_INT(ck_json_int(j, "sample_mismatches"), 2);
  ASSERT_EQ_INT(ck_json_int(j, "reruns"), 2);
  ASSERT_EQ_INT(tfrun("", "aspect", "fractal.tif", "bad.tif",
                      "--tile-size 64 --ft replay --inject 'flip-launch:tile=2,silent=1'"),
                0);
  long n1, n2;
  unsigned char *a = rc_file_bytes(ck_out("off.tif"), &n1), *b = rc_file_bytes(ck_out("bad.tif"), &n2);
  ASSERT(a && b && n1 == n2 && memcmp(a, b, (size_t)n1) != 0);
  free(a);
  free(b);
  return 0;
}

/* (4) smooth --passes 4: launches per tile are pass 1 (window -> work),
 * passes 2..4 in place, finish (work -> cells) */
static int test_replay_inplace_relaunch(void) {
  ASSERT_EQ_INT(tfrun("", "smooth", "fractal.tif", "off.tif", "--tile-size 64 --passes 4"), 0);
  static const struct {
    int launch;
    const char *how;
    int count;
  } cases[] = {{2, "relaunch_launches", 3}, {3, "relaunch_launches", 4}, {0, "reruns", 1}, {4, "reruns", 1}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    char flags[1024];
    snprintf(flags, sizeof flags,
             "--tile-size 64 --passes 4 --ft replay --inject 'flip-launch:tile=5,launch=%d' --ft-report '%s'",
             cases[k].launch, ck_out("r.json"));
    ASSERT_EQ_INT(tfrun("", "smooth", "fractal.tif", "rep.tif", flags), 0);
    ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
    const char *j = rc_slurp(ck_out("r.json"));
    ASSERT_EQ_INT(ck_json_int(j, "launches"), FRACTAL_TILES * 5);
    ASSERT_EQ_INT(ck_json_int(j, "idempotent"), FRACTAL_TILES * 2);
    ASSERT_EQ_INT(ck_json_int(j, "checkpoints"), FRACTAL_TILES);
    ASSERT_EQ_INT(ck_json_int(j, "errors"), 1);
    ASSERT_EQ_INT(ck_json_int(j, cases[k].how), cases[k].count);
    ASSERT_EQ_INT(ck_json_int(j, "relaunch_sets"), cases[k].how[0] == 'r' && cases[k].how[1] == 'e' && cases[k].how[2] == 'l');
    ASSERT_EQ_INT(ck_json_int(j, "checkpoint_restores"), 0);
  }
  return 0;
}

/* (4) the host rewrites a pass's output before the fault is reported: the
 * entries are invalid, the search fails, the tile's checkpoint repairs */
static int test_replay_inplace_checkpoint(void) {
  ASSERT_EQ_INT(tfrun("", "smooth", "fractal_nan.tif", "off.tif", "--tile-size 64 --passes 3"), 0);
  char flags[1024];
  snprintf(flags, sizeof flags,
           "--tile-size 64 --passes 3 --ft replay --inject 'flip-launch:tile=6,launch=1;touch:tile=6,launch=1' "
           "--ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(tfrun("", "smooth", "fractal_nan.tif", "rep.tif", flags), 0);
  ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
  const char *j = rc_slurp(ck_out("r.json"));
  ASSERT_EQ_INT(ck_json_int(j, "errors"), 1);
  ASSERT_EQ_INT(ck_json_int(j, "searches_failed"), 1);
  ASSERT_EQ_INT(ck_json_int(j, "checkpoint_restores"), 1);
  ASSERT_EQ_INT(ck_json_int(j, "checkpoint_launches"), 2); /* passes 1 and 2 of tile 6 */
  ASSERT_EQ_INT(ck_json_int(j, "relaunch_sets"), 0);
  ASSERT_EQ_INT(ck_json_int(j, "outside_writes"), FRACTAL_TILES + 1);
  return 0;
}

/* (5) past --ft-max-errors: exit 9, one line, no output and no temporary */
static int test_replay_error_limit(void) {
  char sub[600], flags[1024], err[600];
  snprintf(sub, sizeof sub, "%s/limit", ck_outdir);
  mkdir(sub, 0755);
  snprintf(err, sizeof err, "%s/limit.stderr", ck_outdir);
  static const char *cases[] = {"--ft-max-errors 3 --inject 'flip-launch:tile=-1'",
                                "--ft-max-errors 0 --inject 'flip-launch:tile=4'",
                                "--passes 3 --ft-max-errors 2 --inject 'flip-launch:tile=-1,launch=2'"};
  for (size_t k = 0; k < 3; k++) {
    const char *cmd = k == 2 ? "smooth" : "slope";
    snprintf(flags, sizeof flags, "'%s' %s '%s/fractal.tif' '%s/x.tif' --tile-size 64 --ft replay %s", ck_tf, cmd, ck_dir,
             sub, cases[k]);
    ASSERT_EQ_INT(rc_run(flags, err), 9);
    ASSERT_EQ_INT(rc_count_entries(sub), 0);
    const char *e = rc_slurp(err);
    ASSERT(strstr(e, "--ft-max-errors") != NULL);
    ASSERT(strchr(e, '\n') == e + strlen(e) - 1);
  }
  return 0;
}

/* under mpirun the ranks' counters are summed into rank 0's report */
static int test_replay_mpi(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "off.tif", "--tile-size 32"), 0);
  ASSERT_EQ_INT(tfrun("", "smooth", "demo.tif", "soff.tif", "--tile-size 32 --passes 3"), 0);
  for (int n = 2; n <= 3; n++) {
    char pre[300], flags[1024];
    snprintf(pre, sizeof pre, "%s -n %d", mpirun, n);
    snprintf(flags, sizeof flags,
             "--tile-size 32 --threads 2 --ft replay --ft-max-errors 1000 --inject 'flip-launch:p=0.2,seed=5' "
             "--ft-report '%s'",
             ck_out("r.json"));
    ASSERT_EQ_INT(tfrun(pre, "slope", "demo.tif", "rep.tif", flags), 0);
    ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
    const char *j = rc_slurp(ck_out("r.json"));
    const long long inj = ck_json_int(j, "injected");
    ASSERT(inj > 0);
    ASSERT_EQ_INT(ck_json_int(j, "errors"), inj);
    ASSERT_EQ_INT(ck_json_int(j, "reruns"), inj);
    snprintf(flags, sizeof flags,
             "--tile-size 32 --passes 3 --ft replay --inject 'flip-launch:tile=-1,launch=2' --ft-max-errors 1000 "
             "--ft-report '%s'",
             ck_out("r.json"));
    ASSERT_EQ_INT(tfrun(pre, "smooth", "demo.tif", "srep.tif", flags), 0);
    ASSERT(rc_same_file(ck_out("soff.tif"), ck_out("srep.tif")));
    j = rc_slurp(ck_out("r.json"));
    const long long tiles = ck_json_int(j, "checkpoints");
    /* with the default tile size, as a user runs it: tiles past MPI's eager
     * size used to leave the ranks waiting on each other for good (the
     * writer in the report's collective, the others handing over tiles) */
    char tpre[400];
    snprintf(tpre, sizeof tpre, "timeout 120 %s", pre);
    ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "doff.tif", ""), 0);
    ASSERT_EQ_INT(tfrun(tpre, "slope", "demo.tif", "drep.tif", "--ft replay"), 0);
    ASSERT(rc_same_file(ck_out("doff.tif"), ck_out("drep.tif")));
    ASSERT(tiles > 1);
    ASSERT_EQ_INT(ck_json_int(j, "relaunch_sets"), tiles);
    ASSERT_EQ_INT(ck_json_int(j, "relaunch_launches"), 3 * tiles);
    ASSERT_EQ_INT(ck_json_int(j, "relaunch_max"), 3);
  }
  return 0;
}

/* smooth's values against a sequential reference written here: N Jacobi
 * passes of the 3x3 mean of valid cells over the whole raster, summed in
 * the same order in float, so the bytes must agree exactly */
static int test_smooth_reference(void) {
  static const char *dems[] = {"fractal_nan.tif", "demo.tif", "onerow.tif", "allnodata.tif"};
  for (size_t d = 0; d < sizeof dems / sizeof *dems; d++)
    for (int passes = 1; passes <= 8; passes += 3) {
      char flags[128], in[1024];
      snprintf(flags, sizeof flags, "--passes %d --tile-size 40 --ft replay", passes);
      ASSERT_EQ_INT(tfrun("", "smooth", dems[d], "sm.tif", flags), 0);
      snprintf(in, sizeof in, "%s/%s", ck_dir, dems[d]);
      rc_raster src, got;
      ASSERT(rc_load(in, &src) == 0 && rc_load(ck_out("sm.tif"), &got) == 0);
      const int R = src.rows, C = src.cols;
      ASSERT(got.rows == R && got.cols == C && got.has_nodata && got.nodata == -9999.0);
      float *a = malloc((size_t)R * C * sizeof *a), *b = malloc((size_t)R * C * sizeof *b);
      for (long i = 0; i < (long)R * C; i++) {
        const float v = (float)src.v[i];
        a[i] = isnan(v) || (src.has_nodata && v == (float)src.nodata) ? NAN : v;
      }
      for (int p = 0; p < passes; p++) {
        for (int r = 0; r < R; r++)
          for (int c = 0; c < C; c++) {
            if (isnan(a[(long)r * C + c])) {
              b[(long)r * C + c] = NAN;
              continue;
            }
            float sum = 0.0f;
            int n = 0;
            for (int i = r - 1; i <= r + 1; i++)
              for (int j = c - 1; j <= c + 1; j++)
                if (i >= 0 && i < R && j >= 0 && j < C && !isnan(a[(long)i * C + j])) sum += a[(long)i * C + j], n++;
            b[(long)r * C + c] = sum / (float)n;
          }
        float *t = a;
        a = b;
        b = t;
      }
      long bad = 0;
      for (long i = 0; i < (long)R * C; i++) {
        const float want = isnan(a[i]) ? -9999.0f : a[i];
        if ((float)got.v[i] != want && bad++ == 0)
          fprintf(stderr, "%s passes %d cell %ld: %.9g != %.9g\n", dems[d], passes, i, got.v[i], (double)want);
      }
      free(a);
      free(b);
      rc_free(&src);
      rc_free(&got);
      ASSERT_EQ_INT(bad, 0);
    }
  return 0;
}

static int test_replay_bad_options(void) {
  char c[2048], err[600];
  snprintf(err, sizeof err, "%s/bad.stderr", ck_outdir);
  static const char *bad[] = {"--ft replay2", "--ft-check 1.5", "--ft-max-errors -1", "--device tpu",
                              "--device gpu:", "--device gpu:x", "--device gpu:-1", "--replay-on fpga", "--inject 'flip-launch:launch=1'", "--passes 9",
                              "--inject 'touch:p=0.5'"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    snprintf(c, sizeof c, "'%s' smooth '%s/fractal.tif' '%s/bad.tif' %s", ck_tf, ck_dir, ck_outdir, bad[k]);
    ASSERT_EQ_INT(rc_run(c, err), 2);
    ASSERT(strlen(rc_slurp(err)) > 10);
  }
  /* --device gpu with no GPU (or for a row without a GPU version): a clear usage error */
  if (tr_gpu_count(NULL, 0) == 0) {
    snprintf(c, sizeof c, "'%s' slope '%s/fractal.tif' '%s/bad.tif' --device gpu", ck_tf, ck_dir, ck_outdir);
    ASSERT_EQ_INT(rc_run(c, err), 2);
    ASSERT(strstr(rc_slurp(err), "--device gpu") != NULL);
    /* auto falls back to the CPU with a one-line note, same bytes */
    ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "off.tif", ""), 0);
    snprintf(c, sizeof c, "'%s' slope '%s/fractal.tif' '%s/auto.tif' --device auto", ck_tf, ck_dir, ck_outdir);
    ASSERT_EQ_INT(rc_run(c, err), 0);
    ASSERT(strstr(rc_slurp(err), "note: --device auto: running on the CPU") != NULL);
    ASSERT(rc_same_file(ck_out("off.tif"), ck_out("auto.tif")));
  }
  snprintf(c, sizeof c, "'%s' tri '%s/fractal.tif' '%s/bad.tif' --device gpu", ck_tf, ck_dir, ck_outdir);
  ASSERT_EQ_INT(rc_run(c, err), 2);
  /* --ft dual runs its replicas on the GPU where there is one
   * (cli_gpu); without one it is the same usage error, and no output */
  if (tr_gpu_count(NULL, 0) == 0) {
    /* under mpirun every rank fails before its tiles: the writer does not
     * wait for tiles that never come (it did, until the job was killed) */
    const char *dual[] = {"--device gpu --ft dual", "--device gpu:0 --ft dual", "--device gpu:3", "--device gpu",
                          "--device gpu --ft dual"};
    for (size_t k = 0; k < sizeof dual / sizeof *dual; k++) {
      if (k >= 3 && !mpirun[0]) break;
      unlink(ck_out("dualgpu.tif"));
      snprintf(c, sizeof c, "%s%s '%s' slope '%s/fractal.tif' '%s/dualgpu.tif' %s", k >= 3 ? mpirun : "",
               k >= 3 ? " -n 2 timeout 60" : "", ck_tf, ck_dir, ck_outdir, dual[k]);
      ASSERT_EQ_INT(rc_run(c, err), 2);
      ASSERT(strstr(rc_slurp(err), "--device gpu: no usable GPU") != NULL);
      ASSERT(access(ck_out("dualgpu.tif"), F_OK) != 0);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  ck_init(argv[1], argv[2], "replay");
  ramps = argv[3];
  GDALAllRegister();
  ck_mpirun(mpirun, sizeof mpirun);
  static const tr_test_case cases[] = {
      TR_TEST(test_replay_same_bytes),         TR_TEST(test_replay_flip_one_launch),
      TR_TEST(test_replay_random_flips_threads), TR_TEST(test_replay_sampled_check),
      TR_TEST(test_replay_inplace_relaunch),   TR_TEST(test_replay_inplace_checkpoint),
      TR_TEST(test_replay_error_limit),        TR_TEST(test_replay_mpi),
      TR_TEST(test_smooth_reference),          TR_TEST(test_replay_bad_options),
      TR_TEST(test_replay_invariants)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
