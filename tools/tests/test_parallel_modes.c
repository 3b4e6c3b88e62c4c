/*
 * test_parallel_modes.c - the same bytes from every way of running a local
 * kernel: --ft off vs --ft dual (fast and basic), with and without injected
 * bit flips, under mpirun with 1..4 ranks, and --ft dual under mpirun -n 3;
 * fault counters that add up exactly; stalled and killed workers that end
 * without a hang and without a partial output; statistics identical across
 * threads and ranks; compressed output and input (decoded on the run's
 * threads) give the plain run's cells, and a damaged compressed block one
 * error line.
 */
#include <gdal.h>
#include <gdal_utils.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "tr_test.h"

static const char *dir, *tf;
static char outdir[512], mpirun[256];

/* Runs `[prefix] terrafort CMD IN OUT FLAGS -q`; returns the exit code. */
static int tfrun(const char *prefix, const char *cmd, const char *in, const char *out, const char *flags) {
  char c[4096];
  snprintf(c, sizeof c, "%s '%s' %s '%s/%s' '%s/%s' %s -q", prefix, tf, cmd, dir, in, outdir, out, flags);
  return rc_run(c, NULL);
}

static const char *opath(const char *name) {
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", outdir, name);
  return p[k];
}

/* Reads an integer field of the flat JSON report. */
static long long json_int(const char *json, const char *key) {
  char k[128];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(json, k);
  return p ? atoll(p + strlen(k)) : -1;
}

/* Every test DEM that is a valid raster (the bad ones are test_cli_errors'). */
static const char *inputs[] = {"fractal.tif",        "fractal_nan.tif",    "fractal_byte.tif",   "fractal_int16.tif",
                               "fractal_uint16.tif", "fractal_int32.tif",  "fractal_uint32.tif", "fractal_float64.tif",
                               "mosaic.vrt",         "plane.tif",          "cone.tif",           "gauss.tif",
                               "flat.tif",           "geographic.tif",     "demo.tif",           "allnodata.tif",
                               "nocrs.tif",          "nogeo.tif",          "hugevalues.tif",     "tiny.tif",
                               "onerow.tif"};

/* --ft dual and --ft-mode basic write the bytes of --ft off. Each input
 * runs under one of the two commands, in turn: both write Float32 whatever
 * the input's type, so the replicas' compare is the same code for every
 * input, and the inputs differ in what is read and where nodata lies. */
static int test_ft_dual_same_bytes(void) {
  for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++)
    for (int c = 0; c < 2; c++) {
      if ((i + c) % 2) continue;
      const char *cmd = c ? "aspect" : "slope";
      ASSERT_EQ_INT(tfrun("", cmd, inputs[i], "off.tif", "--tile-size 64"), 0);
      ASSERT_EQ_INT(tfrun("", cmd, inputs[i], "dual.tif", "--tile-size 64 --ft dual"), 0);
      ASSERT(rc_same_file(opath("off.tif"), opath("dual.tif")));
      ASSERT_EQ_INT(tfrun("", cmd, inputs[i], "basic.tif", "--tile-size 64 --ft dual --ft-mode basic"), 0);
      ASSERT(rc_same_file(opath("off.tif"), opath("basic.tif")));
    }
  return 0;
}

/* Random flips in replica results: every one detected and corrected. */
static int test_ft_flips_corrected(void) {
  ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "off.tif", "--tile-size 128 -compute_edges"), 0);
  long long total = 0;
  for (int seed = 1; seed <= 6; seed++) {
    char flags[512];
    snprintf(flags, sizeof flags,
             "--tile-size 128 -compute_edges --ft dual --threads %d --inject 'flip:p=0.125,seed=%d' --ft-report '%s'",
             1 + seed % 3, seed, opath("r.json"));
    ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "dual.tif", flags), 0);
    ASSERT(rc_same_file(opath("off.tif"), opath("dual.tif")));
    const char *j = rc_slurp(opath("r.json"));
    long long inj = json_int(j, "injected"), det = json_int(j, "detected"), tol = json_int(j, "tolerated");
    ASSERT(inj > 0);
    ASSERT_EQ_INT(inj, det + tol);
    ASSERT_EQ_INT(json_int(j, "corrected"), det);
    ASSERT_EQ_INT(json_int(j, "fatal"), 0);
    ASSERT_EQ_INT(tol, 0); /* strict default: a flipped bit is never within xi = 0 */
    ASSERT_EQ_INT(json_int(j, "blocks"), 130);   /* 10 x 13 tiles of 128 */
    ASSERT_EQ_INT(json_int(j, "sub_blocks"), 520);
    total += inj;
  }
  /* p = 0.125 per replica result, 1040 results per run: about 130 per run */
  ASSERT(total > 6 * 80 && total < 6 * 190);
  return 0;
}

/* An exact schedule: one flip in sub-block 2 of every block, in replica P. */
static int test_ft_exact_schedule(void) {
  ASSERT_EQ_INT(tfrun("", "aspect", "fractal.tif", "off.tif", "--tile-size 50"), 0);
  char flags[512];
  snprintf(flags, sizeof flags, "--tile-size 50 --ft dual --inject 'flip:sub=2,slot=0' --ft-report '%s'", opath("r.json"));
  ASSERT_EQ_INT(tfrun("", "aspect", "fractal.tif", "dual.tif", flags), 0);
  ASSERT(rc_same_file(opath("off.tif"), opath("dual.tif")));
  const char *j = rc_slurp(opath("r.json"));
  ASSERT_EQ_INT(json_int(j, "blocks"), 12);
  ASSERT_EQ_INT(json_int(j, "injected"), 12);
  ASSERT_EQ_INT(json_int(j, "detected"), 12);
  ASSERT_EQ_INT(json_int(j, "corrected"), 12);
  ASSERT_EQ_INT(json_int(j, "recomputes"), 12);
  return 0;
}

/* The source's xi/eps profile: small differences are tolerated, counted;
 * and no cell of the output is further than xi from the fault-free value
 * (a cell beyond xi is settled by a third computation), even with a flip in
 * every other sub-block result; nodata cells stay exactly nodata. */
static int test_ft_source_profile_counts(void) {
  char flags[512];
  snprintf(flags, sizeof flags, "--tile-size 64 --ft dual --ft-profile source --inject 'flip:p=0.5,seed=9' --ft-report '%s'",
           opath("r.json"));
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "dual.tif", flags), 0);
  const char *j = rc_slurp(opath("r.json"));
  long long inj = json_int(j, "injected"), det = json_int(j, "detected"), tol = json_int(j, "tolerated");
  ASSERT(inj > 0 && tol > 0); /* low mantissa bits change a slope by far less than 0.1 */
  ASSERT_EQ_INT(inj, det + tol);
  ASSERT_EQ_INT(json_int(j, "corrected"), det);
  ASSERT_EQ_INT(json_int(j, "fatal"), 0);
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "off.tif", "--tile-size 64"), 0);
  rc_raster a, b;
  ASSERT(rc_load(opath("off.tif"), &a) == 0 && rc_load(opath("dual.tif"), &b) == 0);
  double worst = 0;
  for (long c = 0; c < (long)a.rows * a.cols; c++) {
    ASSERT(!isnan(b.v[c]));
    double d = fabs(a.v[c] - b.v[c]);
    if (d > worst) worst = d;
  }
  rc_free(&a);
  rc_free(&b);
  fprintf(stderr, "source profile, flips p=0.5: max |diff| %.3g (xi 0.1)\n", worst);
  ASSERT(worst < 0.1);
  /* a nodata cell stays nodata exactly: a flip within xi of -9999 is not a
   * value (fractal_nan.tif has many nodata cells; seeds 2, 3, 4 and 6 each
   * lost one before nodata compared exactly) */
  ASSERT_EQ_INT(tfrun("", "slope", "fractal_nan.tif", "noff.tif", "--tile-size 64"), 0);
  ASSERT(rc_load(opath("noff.tif"), &a) == 0);
  for (int seed = 1; seed <= 8; seed++) {
    snprintf(flags, sizeof flags, "--tile-size 64 --ft dual --ft-profile source --inject 'flip:p=0.5,seed=%d'", seed);
    ASSERT_EQ_INT(tfrun("", "slope", "fractal_nan.tif", "ndual.tif", flags), 0);
    ASSERT(rc_load(opath("ndual.tif"), &b) == 0);
    long lost = 0;
    for (long c = 0; c < (long)a.rows * a.cols; c++) lost += (a.v[c] == -9999.0) != (b.v[c] == -9999.0);
    rc_free(&b);
    if (lost) fprintf(stderr, "seed %d: %ld cells changed between nodata and a value\n", seed, lost);
    ASSERT_EQ_INT(lost, 0);
  }
  rc_free(&a);
  return 0;
}

/* Stalled and killed workers: re-dispatched with the default threads (the
 * runner adds a spare worker); with --threads 1 (two workers, no spare) a
 * killed worker ends the run with exit 5 and no output, never a hang. */
static int test_ft_stall_and_kill(void) {
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "off.tif", "--tile-size 64"), 0);
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "st.tif", "--tile-size 64 --ft dual --threads 3 --inject 'stall:worker=1,ms=2500,after=1,count=1'"), 0);
  ASSERT(rc_same_file(opath("off.tif"), opath("st.tif")));
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "k.tif", "--tile-size 64 --ft dual --threads 3 --inject 'kill:worker=2,after=3'"), 0);
  ASSERT(rc_same_file(opath("off.tif"), opath("k.tif")));
  unlink(opath("k.tif"));
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "kd.tif", "--tile-size 64 --ft dual --inject 'kill:worker=1,after=2'"), 0);
  ASSERT(rc_same_file(opath("off.tif"), opath("kd.tif")));
  ASSERT_EQ_INT(tfrun("", "slope", "fractal.tif", "sd.tif", "--tile-size 64 --ft dual --ft-timeout 500 --inject 'stall:worker=0,ms=3000,after=1,count=1'"), 0);
  ASSERT(rc_same_file(opath("off.tif"), opath("sd.tif")));
  /* an hour-long stall: the work moves on and the process does not wait for the stalled worker */
  ASSERT_EQ_INT(tfrun("timeout 30", "slope", "fractal.tif", "sh.tif", "--tile-size 64 --ft dual --threads 4 --ft-timeout 1000 --inject 'stall:worker=1,ms=3600000,count=1'"), 0);
  ASSERT(rc_same_file(opath("off.tif"), opath("sh.tif")));
  ASSERT_EQ_INT(tfrun("timeout 60", "slope", "fractal.tif", "k.tif", "--tile-size 64 --ft dual --threads 1 --inject 'kill:worker=1,after=2'"), 5);
  ASSERT(access(opath("k.tif"), F_OK) != 0);
  return 0;
}

static int test_stats_same_for_threads_and_ranks(void) {
  char flags[512], ref[65536];
  snprintf(flags, sizeof flags, "--threads 1 --tile-size 512 --stats-json '%s'", opath("s1.json"));
  ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "s.tif", flags), 0);
  snprintf(ref, sizeof ref, "%s", rc_slurp(opath("s1.json")));
  /* compare the statistics, not the collective's timings that follow */
  char *cut = strstr(ref, ",\"collective\"");
  ASSERT(cut);
  *cut = 0;
  ASSERT(strstr(ref, "\"valid_count\":1914404")); /* (1200 - 2) x (1600 - 2): the edge ring is nodata */
  const char *prefixes[] = {"", "", "MPI", "MPI"};
  for (int k = 0; k < 4; k++) {
    char pre[512] = "";
    if (!strcmp(prefixes[k], "MPI")) {
      if (!mpirun[0]) continue;
      snprintf(pre, sizeof pre, "%s -n %d", mpirun, k);
    }
    /* Same tiles, other thread and rank counts: partials combine in tile
     * order, so the float64 sums are the same bits. */
    snprintf(flags, sizeof flags, "--threads %d --tile-size 512 --stats-json '%s'", k + 2, opath("s2.json"));
    ASSERT_EQ_INT(tfrun(pre, "slope", "demo.tif", "s.tif", flags), 0);
    ASSERT(!strncmp(ref, rc_slurp(opath("s2.json")), strlen(ref)));
  }
  return 0;
}

/* A number of a JSON report ("key":v), NaN when absent or null. */
static double json_num_of(const char *j, const char *key) {
  char k[128];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(j, k);
  return p && strncmp(p + strlen(k), "null", 4) ? strtod(p + strlen(k), NULL) : NAN;
}

/* Statistics of values near DBL_MAX, a Float64 product (interpolate's
 * nearest over points of up to +-1.7e308, beside tiles of small values):
 * plain sums overflowed (mean -inf or null, stddev 0). The mean and
 * standard deviation now equal a reference computed here over the output's
 * cells (long double over the values scaled by 2^-1024) to 1e-12, with
 * the same statistics for one thread, four, and mpirun -n 3. */
static int test_stats_huge_values(void) {
  char pts[1024], c[4096], out[1024];
  snprintf(pts, sizeof pts, "%s/huge.xyz", outdir);
  FILE *f = fopen(pts, "w");
  ASSERT(f);
  for (int r = 0; r < 64; r++)
    for (int k = 0; k < 64; k++)
      fprintf(f, "%.1f %.1f %.17g\n", k + 0.5, r + 0.5,
              k < 24 ? 0.5 * (r - k) : ((r + k) % 3 ? 1.0 : -1.0) * (1.0 + 0.0109 * (r % 64)) * 1e308);
  fclose(f);
  snprintf(out, sizeof out, "%s/huge.tif", outdir);
  static char ref[65536];
  ref[0] = 0;
  for (int k = 0; k < 3; k++) {
    char pre[512] = "";
    if (k == 2) {
      if (!mpirun[0]) continue;
      snprintf(pre, sizeof pre, "%s -n 3", mpirun);
    }
    snprintf(c, sizeof c,
             "%s '%s' interpolate '%s' '%s' -a nearest -txe 0 64 -tye 0 64 -outsize 64 64 --tile-size 16 --threads %d "
             "--stats-json '%s' -q",
             pre, tf, pts, out, k == 1 ? 4 : 1, opath("huge.json"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    char j[65536];
    snprintf(j, sizeof j, "%s", rc_slurp(opath("huge.json")));
    char *cut = strstr(j, ",\"collective\"");
    ASSERT(cut);
    *cut = 0;
    if (!ref[0]) snprintf(ref, sizeof ref, "%s", j);
    if (strcmp(ref, j)) {
      fprintf(stderr, "statistics differ:\n%s\n%s\n", ref, j);
      return 1;
    }
  }
  rc_raster a;
  ASSERT(rc_load(out, &a) == 0);
  long double s = 0, ss = 0;
  long n = 0; /* valid cells (0 is gdal_grid's nodata: 24 cells here) */
  for (long i = 0; i < (long)a.rows * a.cols; i++) {
    if (rc_is_nodata(&a, a.v[i])) continue;
    const long double y = ldexpl((long double)a.v[i], -1024);
    s += y;
    ss += y * y;
    n++;
  }
  ASSERT_EQ_INT(n, (long)json_num_of(ref, "valid_count"));
  rc_free(&a);
  const long double m = s / n, sd = sqrtl(ss / n - m * m);
  const double mean = (double)ldexpl(m, 1024), stddev = (double)ldexpl(sd, 1024);
  const double got_mean = json_num_of(ref, "mean"), got_sd = json_num_of(ref, "stddev");
  printf("  huge values: mean %.17g (reference %.17g), stddev %.17g (reference %.17g)\n", got_mean, mean, got_sd, stddev);
  ASSERT(isfinite(got_mean) && isfinite(got_sd));
  ASSERT(fabs(got_mean - mean) <= 1e-12 * fabs(stddev));
  ASSERT(fabs(got_sd - stddev) <= 1e-12 * stddev);
  return 0;
}

/* A straggler: rank 3 contributes 2 s late. Statistics stay exact, the
 * late rank is named, the TAN gets exactly one late message, and the interior
 * nodes of the aggregation tree release their state within the 200 ms
 * threshold plus a margin, long before the late data arrives. */
static int test_mpi_straggler_stats(void) {
  if (!mpirun[0]) {
    printf("skip: no MPI\n");
    return 0;
  }
  char flags[512], ref[65536], pre[512];
  snprintf(flags, sizeof flags, "--stats-json '%s'", opath("ref.json"));
  ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "s.tif", flags), 0);
  snprintf(ref, sizeof ref, "%s", rc_slurp(opath("ref.json")));
  *strstr(ref, ",\"collective\"") = 0;
  snprintf(pre, sizeof pre, "%s -n 4", mpirun);
  snprintf(flags, sizeof flags, "--stats --stats-json '%s' --coll-timeout 200 --inject 'delay:rank=3,ms=2000'",
           opath("late.json"));
  ASSERT_EQ_INT(tfrun(pre, "slope", "demo.tif", "s.tif", flags), 0);
  const char *j = rc_slurp(opath("late.json"));
  ASSERT(!strncmp(ref, j, strlen(ref)));
  ASSERT(strstr(j, "\"late_ranks\":[3]"));
  ASSERT(strstr(j, "\"late_msgs_at_tan\":1"));
  int interior = 0;
  for (const char *p = strstr(j, "\"release_ms\":"); p; p = strstr(p + 1, "\"release_ms\":")) {
    double ms = atof(p + strlen("\"release_ms\":"));
    if (ms < 0) continue; /* a leaf: nothing to release */
    ASSERT(ms < 200 + 400);
    interior++;
  }
  ASSERT(interior >= 1);
  return 0;
}

static int test_mpi_ranks_same_bytes(void) {
  if (!mpirun[0]) {
    printf("skip: no MPI\n");
    return 0;
  }
  const char *cases[][2] = {{"demo.tif", "--tile-size 100"}, {"fractal_nan.tif", "--tile-size 33 -compute_edges"}};
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < 2; k++) {
      const char *cmd = k ? "aspect" : "slope";
      ASSERT_EQ_INT(tfrun("", cmd, cases[c][0], "one.tif", cases[c][1]), 0);
      for (int n = 1; n <= 4; n++) {
        if (TR_TEST_SANITIZED && (n + c + k) % 2) continue; /* two rank counts per case there */
        char pre[512];
        snprintf(pre, sizeof pre, "%s -n %d", mpirun, n);
        ASSERT_EQ_INT(tfrun(pre, cmd, cases[c][0], "many.tif", cases[c][1]), 0);
        ASSERT(rc_same_file(opath("one.tif"), opath("many.tif")));
      }
    }
  return 0;
}

/* Compressed, tiled output (terrafort(1), --threads: GDAL compresses on
 * the run's threads, and each tile's blocks go out in block order): the
 * same file for one thread or two, GDAL's own thread count and the rank
 * count; its cells, and a COG's, are the uncompressed output's. */
static int test_compressed_same_bytes(void) {
  const char *co = "-co TILED=YES -co COMPRESS=DEFLATE -co BLOCKXSIZE=128 -co BLOCKYSIZE=128";
  const char *ways[] = {"--threads 1", "--threads 2", "--threads 2 --config GDAL_NUM_THREADS 1",
                        "--threads 1 -co NUM_THREADS=2", "-of COG"};
  char flags[1024];
  ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "plain.tif", ""), 0);
  rc_raster plain;
  ASSERT_EQ_INT(rc_load(opath("plain.tif"), &plain), 0);
  for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
    const int cog = !strcmp(ways[w], "-of COG");
    snprintf(flags, sizeof flags, "%s %s", cog ? "-co COMPRESS=DEFLATE" : co, ways[w]);
    ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", w ? "z.tif" : "z0.tif", flags), 0);
    if (w && !cog) ASSERT(rc_same_file(opath("z0.tif"), opath("z.tif")));
    rc_raster z;
    ASSERT_EQ_INT(rc_load(opath(w ? "z.tif" : "z0.tif"), &z), 0);
    const int bad = rc_compare(&plain, &z, 0, ways[w]);
    rc_free(&z);
    if (bad) {
      rc_free(&plain);
      return 1;
    }
  }
  rc_free(&plain);
  if (mpirun[0]) {
    char pre[512];
    snprintf(pre, sizeof pre, "%s -n 2", mpirun);
    ASSERT_EQ_INT(tfrun(pre, "slope", "demo.tif", "z.tif", co), 0);
    ASSERT(rc_same_file(opath("z0.tif"), opath("z.tif")));
  }
  return 0;
}

/* A tiled DEFLATE copy of demo.tif (128² blocks: a tile's window spans
 * several, which GDAL decodes on the run's threads) gives the plain input's
 * bytes with 1 and 2 threads and under mpirun; the copy with damaged blocks
 * fails with one line naming the input and GDAL's decoder, exit 3, and
 * leaves nothing, however many threads decode (their errors must not reach
 * stderr on their own). */
static int test_compressed_input(void) {
  char src[1024];
  snprintf(src, sizeof src, "%s/demo.tif", dir);
  char *targv[] = {"-q", "-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "BLOCKXSIZE=128", "-co", "BLOCKYSIZE=128", NULL};
  GDALTranslateOptions *to = GDALTranslateOptionsNew(targv, NULL);
  GDALDatasetH in = GDALOpen(src, GA_ReadOnly);
  ASSERT(to && in);
  GDALDatasetH z = GDALTranslate(opath("zin.tif"), in, to, NULL);
  ASSERT(z);
  GDALClose(z);
  GDALClose(in);
  GDALTranslateOptionsFree(to);
  ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "plain.tif", ""), 0);
  const char *ways[] = {"--threads 1", "--threads 2"};
  for (int w = 0; w < 2; w++) {
    ASSERT_EQ_INT(tfrun("", "slope", "../out_parallel_modes/zin.tif", "fromz.tif", ways[w]), 0);
    ASSERT(rc_same_file(opath("plain.tif"), opath("fromz.tif")));
  }
  if (mpirun[0]) {
    char pre[512];
    snprintf(pre, sizeof pre, "%s -n 2", mpirun);
    ASSERT_EQ_INT(tfrun(pre, "slope", "../out_parallel_modes/zin.tif", "fromz.tif", ""), 0);
    ASSERT(rc_same_file(opath("plain.tif"), opath("fromz.tif")));
  }
  /* damage: bytes flipped through the middle third of the file, in the blocks */
  FILE *f = fopen(opath("zin.tif"), "r+b");
  ASSERT(f);
  ASSERT_EQ_INT(fseek(f, 0, SEEK_END), 0);
  const long n = ftell(f);
  for (long k = 0; k < 400; k++) {
    const long at = n / 3 + k * (n / 3 / 400);
    ASSERT_EQ_INT(fseek(f, at, SEEK_SET), 0);
    const int b = fgetc(f);
    ASSERT(b != EOF);
    ASSERT_EQ_INT(fseek(f, at, SEEK_SET), 0);
    ASSERT(fputc(b ^ 0x5a, f) != EOF);
  }
  ASSERT_EQ_INT(fclose(f), 0);
  char err[1024], c[4096];
  snprintf(err, sizeof err, "%s/z.stderr", outdir);
  for (int w = 0; w < 2; w++) {
    remove(opath("bad.tif"));
    snprintf(c, sizeof c, "'%s' slope '%s' '%s' %s -q", tf, opath("zin.tif"), opath("bad.tif"), ways[w]);
    ASSERT_EQ_INT(rc_run(c, err), 3);
    const char *e = rc_slurp(err);
    printf("  %s: %s", ways[w], e);
    ASSERT(strncmp(e, "terrafort slope: cannot read input", 34) == 0);
    ASSERT(strstr(e, "Decod") != NULL); /* GDAL's decoder said what failed */
    ASSERT(strchr(e, '\n') == e + strlen(e) - 1); /* one line */
    ASSERT(access(opath("bad.tif"), F_OK) != 0);
  }
  return 0;
}

static int test_mpi_ft_dual_with_flips(void) {
  if (!mpirun[0]) {
    printf("skip: no MPI\n");
    return 0;
  }
  ASSERT_EQ_INT(tfrun("", "slope", "demo.tif", "off.tif", "--tile-size 200"), 0);
  char pre[512], flags[512];
  snprintf(pre, sizeof pre, "%s -n 3", mpirun);
  snprintf(flags, sizeof flags, "--tile-size 200 --ft dual --inject 'flip:p=0.2,seed=4' --ft-report '%s'", opath("r.json"));
  ASSERT_EQ_INT(tfrun(pre, "slope", "demo.tif", "dual.tif", flags), 0);
  ASSERT(rc_same_file(opath("off.tif"), opath("dual.tif")));
  const char *j = rc_slurp(opath("r.json"));
  long long inj = json_int(j, "injected");
  ASSERT(inj > 0);
  ASSERT_EQ_INT(inj, json_int(j, "detected"));
  ASSERT_EQ_INT(json_int(j, "corrected"), inj);
  ASSERT_EQ_INT(json_int(j, "fatal"), 0);
  return 0;
}

static int test_mpi_errors_once(void) {
  if (!mpirun[0]) {
    printf("skip: no MPI\n");
    return 0;
  }
  char c[4096], err[1024];
  snprintf(err, sizeof err, "%s/mpi.stderr", outdir);
  snprintf(c, sizeof c, "%s -n 3 '%s' slope '%s/missing.tif' '%s/x.tif'", mpirun, tf, dir, outdir);
  ASSERT_EQ_INT(rc_run(c, err), 3);
  const char *s = rc_slurp(err);
  const char *first = strstr(s, "terrafort slope:");
  ASSERT(first && !strstr(first + 1, "terrafort slope:")); /* printed by rank 0 only */
  ASSERT(access(opath("x.tif"), F_OK) != 0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dir = argv[1];
  tf = argv[2];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_parallel_modes", dir);
  mkdir(outdir, 0755);
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
#ifndef TERRAFORT_HAVE_MPI
  mpirun[0] = 0;
#endif
  static const tr_test_case cases[] = {
      TR_TEST(test_ft_dual_same_bytes),       TR_TEST(test_ft_flips_corrected),
      TR_TEST(test_ft_exact_schedule),        TR_TEST(test_ft_source_profile_counts),
      TR_TEST(test_ft_stall_and_kill),        TR_TEST(test_stats_same_for_threads_and_ranks),
      TR_TEST(test_mpi_straggler_stats),      TR_TEST(test_stats_huge_values),
      TR_TEST(test_mpi_ranks_same_bytes),     TR_TEST(test_mpi_ft_dual_with_flips),
      TR_TEST(test_mpi_errors_once),          TR_TEST(test_compressed_same_bytes),
      TR_TEST(test_compressed_input)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
