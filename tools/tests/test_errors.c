/*
 * test_cli_errors.c - what a user sees when something is wrong: one line on
 * stderr naming the file and the reason, the documented exit code, and no
 * output file (nor temporary file) left in the destination folder.
 *
 * Exit codes (terrafort(1)): 2 usage, 3 input, 4 output.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "tr_test.h"

static const char *dir, *tf;
static char outdir[512], errfile[600];

static void clean_outdir(void) {
  char c[1200];
  snprintf(c, sizeof c, "rm -rf '%s' && mkdir -p '%s'", outdir, outdir);
  if (system(c) != 0) fprintf(stderr, "cannot reset %s\n", outdir);
}

static int lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* Runs `terrafort ARGS` with output into outdir/out.tif; checks exit code,
 * a single stderr line containing `needle`, and an empty outdir. */
static int expect_fail(const char *args, int code, const char *needle) {
  clean_outdir();
  char c[4096];
  snprintf(c, sizeof c, "cd '%s' && '%s' %s", outdir, tf, args);
  int rc = rc_run(c, errfile);
  const char *err = rc_slurp(errfile);
  if (rc != code || lines(err) != 1 || !strstr(err, needle)) {
    fprintf(stderr, "`terrafort %s`: exit %d (want %d), stderr:\n%s(want one line containing '%s')\n", args, rc,
            code, err, needle);
    return 1;
  }
  if (rc_count_entries(outdir) != 0) {
    fprintf(stderr, "`terrafort %s` left files in %s\n", args, outdir);
    return 1;
  }
  return 0;
}

/* outdir/a.tif and outdir/b.tif hold the same bytes */
static int same_a_b(void) {
  char pa[1200], pb[1200];
  snprintf(pa, sizeof pa, "%s/a.tif", outdir);
  snprintf(pb, sizeof pb, "%s/b.tif", outdir);
  return rc_same_file(pa, pb);
}

static char in_buf[8][1024];
static const char *in(const char *name) {
  static int k;
  k = (k + 1) % 8;
  snprintf(in_buf[k], sizeof in_buf[k], "%s/%s", dir, name);
  return in_buf[k];
}

static int test_bad_inputs(void) {
  char a[2048];
  const struct {
    const char *file, *why;
  } cases[] = {{"missing.tif", "No such file"},
               {"empty.tif", "empty"},
               {"notraster.tif", "not a raster"},
               {"truncated.tif", "cannot read"},
               {"complex.tif", "CFloat32 is not supported"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int cmd = 0; cmd < 2; cmd++) {
      snprintf(a, sizeof a, "%s '%s' out.tif", cmd ? "aspect" : "slope", in(cases[i].file));
      if (expect_fail(a, 3, cases[i].why) || expect_fail(a, 3, cases[i].file)) return 1;
    }
  snprintf(a, sizeof a, "slope '%s' out.tif", dir); /* a directory */
  if (expect_fail(a, 3, "directory")) return 1;
  snprintf(a, sizeof a, "slope -b 3 '%s' out.tif", in("fractal.tif"));
  return expect_fail(a, 3, "band 3 does not exist");
}

static int test_usage_errors(void) {
  char a[2048];
  const char *f = in("fractal.tif");
  const struct {
    const char *args, *why;
  } cases[] = {{"slope -s 0", "-s must be positive"},
               {"slope -s -2", "-s must be positive"},
               {"slope -s abc", "not a finite number"},
               {"slope -s nan", "not a finite number"},
               {"slope -alg Sobel", "-alg: 'Sobel' is not one of Horn, ZevenbergenThorne"},
               {"aspect -alg", "is not one of Horn, ZevenbergenThorne"}, /* -alg eats the DEM name, then the value is bad */
               {"slope --threads 0", "out of range"},
               {"slope --threads x", "not an integer"},
               {"slope --tile-size 0", "out of range"},
               {"slope -b 0", "out of range"},
               {"slope --frobnicate", "unknown option '--frobnicate'"},
               {"aspect -p", "unknown option '-p'"},
               {"slope -of NoSuchDriver", "unknown output format"},
               {"slope -co NOEQUALS", "NAME=VALUE"},
               {"slope --ft triple", "not one of off, dual"},
               /* issue 14, item 13 */
               {"slope -s 1e-320", "too close to zero"},
               {"slope --inject garbage", "not kind:key=value"},
               {"slope --inject ';'", "names no fault"},
               {"fill --inject flip:p=0.5,oops", "not key=value"},
               {"slope --threads 4097", "out of range [1, 4096]"},
               {"fill -ot Int64", "use Int32"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(a, sizeof a, "%s '%s' out.tif", cases[i].args, f);
    if (expect_fail(a, 2, cases[i].why)) return 1;
  }
  if (expect_fail("slope", 2, "expected DEM and OUT")) return 1;
  snprintf(a, sizeof a, "slope '%s'", f);
  if (expect_fail(a, 2, "expected DEM and OUT")) return 1;
  if (expect_fail("slop x y", 2, "unknown command 'slop': did you mean 'slope'?")) return 1;
  if (expect_fail("flow x y", 2, "did you mean 'flowgraph'?")) return 1;
  return expect_fail("frobnicate x y", 2, "unknown command 'frobnicate' (see");
}

/* --config KEY VALUE as in GDAL's utilities: set before the drivers
 * (GDAL_SKIP GTiff leaves no driver for the input), and a setting that
 * changes no value (GDAL_CACHEMAX) gives the plain run's bytes; a missing
 * value is a usage error. */
static int test_config_option(void) {
  char a[2048];
  snprintf(a, sizeof a, "slope '%s' out.tif --config GDAL_SKIP GTiff", in("fractal.tif"));
  if (expect_fail(a, 3, "not a raster format GDAL recognises")) return 1;
  snprintf(a, sizeof a, "slope '%s' out.tif --config GDAL_CACHEMAX", in("fractal.tif"));
  if (expect_fail(a, 2, "--config needs a KEY and a VALUE")) return 1;
  clean_outdir();
  char c[4096];
  snprintf(c, sizeof c, "cd '%s' && '%s' slope -q '%s' a.tif && '%s' slope -q --config GDAL_CACHEMAX 128 '%s' b.tif",
           outdir, tf, in("fractal.tif"), tf, in("fractal.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(same_a_b());
  return 0;
}

/* `terrafort ARGS_A` writing a.tif and `terrafort ARGS_B` writing b.tif
 * (each given the input, then its own options) write the same bytes. */
static int same_both_spellings(const char *cmd, const char *args_a, const char *args_b) {
  clean_outdir();
  char c[4096];
  snprintf(c, sizeof c, "cd '%s' && '%s' %s -q '%s' %s && '%s' %s -q '%s' %s", outdir, tf, cmd, in("fractal.tif"),
           args_a, tf, cmd, in("fractal.tif"), args_b);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(same_a_b());
  return 0;
}

/* "--name=value" for a command's own long options as for the common ones
 * (GNU style; batch already took "--acc=x" for an output): the same bytes
 * as "--name value", an output so named refused onto the DEM like any
 * other, and a flag given a value refused. */
static int test_long_option_equals(void) {
  if (same_both_spellings("flowgraph", "--acc a.tif --threshold 100", "--acc=b.tif --threshold=100")) return 1;
  if (same_both_spellings("fill", "a.tif --epsilon-step 0.001", "b.tif --epsilon-step=0.001 --tmp=.")) return 1;
  char a[2048];
  snprintf(a, sizeof a, "flowgraph '%s' --acc='%s'", in("fractal.tif"), in("fractal.tif"));
  if (expect_fail(a, 4, "it is the DEM")) return 1;
  snprintf(a, sizeof a, "flowgraph '%s' --acc=x.tif --no-edge-check=1", in("fractal.tif"));
  if (expect_fail(a, 2, "option --no-edge-check takes no value")) return 1;
  snprintf(a, sizeof a, "slope '%s' x.tif --quiet=1", in("fractal.tif"));
  if (expect_fail(a, 2, "option --quiet takes no value")) return 1;
  snprintf(a, sizeof a, "flowgraph '%s' --acc=x.tif --bogus=1", in("fractal.tif"));
  if (expect_fail(a, 2, "unknown option '--bogus=1'")) return 1;
  return 0;
}

/* The CUDA module (terrafort-cuda.so) is the only thing that needs CUDA:
 * the plain program links neither CUDA nor MPI, the module needs no CUDA
 * runtime library (it is linked in) and exports only its entry; --device
 * gpu without a module, or with a file that is not this build's module,
 * is one line and exit 2, and --device auto then runs on the CPU. */
static int test_gpu_module(void) {
  char c[4096], solo[1100];
  /* where MPI is built, terrafort is a static launcher: the program is terrafort-solo */
  snprintf(solo, sizeof solo, "%s-solo", tf);
  if (access(solo, X_OK) != 0) snprintf(solo, sizeof solo, "%s", tf);
  snprintf(c, sizeof c, "readelf -d '%s' > '%s'", solo, errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  const char *needed = rc_slurp(errfile);
  ASSERT(strstr(needed, "libgdal") != NULL); /* readelf worked */
  ASSERT(strstr(needed, "cuda") == NULL && strstr(needed, "libmpi") == NULL);
  snprintf(c, sizeof c, "readelf -d '%s' > '%s'", tf, errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strstr(rc_slurp(errfile), "cuda") == NULL && strstr(rc_slurp(errfile), "libmpi") == NULL);
#ifdef TERRAFORT_HAVE_CUDA
  char mod[1200];
  snprintf(mod, sizeof mod, "%s", tf);
  char *slash = strrchr(mod, '/');
  ASSERT(slash != NULL);
  snprintf(slash, sizeof mod - (size_t)(slash - mod), "/../lib/terrafort/terrafort-cuda.so");
  ASSERT(access(mod, R_OK) == 0);
  snprintf(c, sizeof c, "readelf -d '%s' > '%s'", mod, errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strstr(rc_slurp(errfile), "libcudart") == NULL && strstr(rc_slurp(errfile), "libgdal") == NULL);
  snprintf(c, sizeof c, "nm -D --defined-only '%s' | awk '$2 ~ /^[TDRB]$/ {print $3}' > '%s'", mod, errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strcmp(rc_slurp(errfile), "tr_cuda_module_entry\n") == 0);
#endif
  char a[2048];
  setenv("TERRAFORT_CUDA_MODULE", "/nonexistent/terrafort-cuda.so", 1);
  snprintf(a, sizeof a, "slope '%s' out.tif --device gpu", in("fractal.tif"));
#ifdef TERRAFORT_HAVE_CUDA
  int bad = expect_fail(a, 2, "TERRAFORT_CUDA_MODULE names /nonexistent/terrafort-cuda.so, which does not exist");
  setenv("TERRAFORT_CUDA_MODULE", "/usr/lib/x86_64-linux-gnu/liblz4.so.1", 1);
  if (!bad) bad = expect_fail(a, 2, "is not this terrafort's");
#else
  int bad = expect_fail(a, 2, "built without CUDA"); /* no module is looked for */
#endif
  if (!bad) {
    clean_outdir();
    snprintf(c, sizeof c, "cd '%s' && '%s' slope '%s' a.tif --device auto", outdir, tf, in("fractal.tif"));
    bad = rc_run(c, errfile) != 0 || strstr(rc_slurp(errfile), "note: --device auto: running on the CPU") == NULL;
    snprintf(c, sizeof c, "cd '%s' && '%s' slope -q '%s' b.tif --device cpu", outdir, tf, in("fractal.tif"));
    if (!bad) bad = rc_run(c, NULL) != 0;
  }
  unsetenv("TERRAFORT_CUDA_MODULE");
  ASSERT(!bad);
  ASSERT(same_a_b());
  return 0;
}

/* A mistyped option names the option it most likely meant, from the
 * command's own help (its options and the common ones, every spelling);
 * a word near none says nothing more. */
static int test_option_suggestions(void) {
  static const char *const cases[][2] = {{"slope --tile-sise 64", "did you mean '--tile-size'?"},
                                         {"slope --thread 2", "did you mean '--threads'?"},
                                         {"aspect -zero_for_flats", "did you mean '-zero_for_flat'?"},
                                         {"hillshade -multidirectionl", "did you mean '-multidirectional'?"},
                                         {"fill --ft-reprot r.json", "did you mean '--ft-report'?"},
                                         {"flowgraph --acc-typ Float32 --acc a.tif", "did you mean '--acc-type'?"},
                                         {"interpolate --txe 0 1", "did you mean '-txe'?"}};
  char a[2048];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(a, sizeof a, "%s '%s' out.tif", cases[i][0], in("fractal.tif"));
    if (expect_fail(a, 2, cases[i][1])) return 1;
  }
  snprintf(a, sizeof a, "slope --frobnicate '%s' out.tif", in("fractal.tif"));
  if (expect_fail(a, 2, "unknown option '--frobnicate'")) return 1;
  ASSERT(strstr(rc_slurp(errfile), "did you mean") == NULL);
  return 0;
}

/* gdaldem's spellings of its modes (TRI, TPI) and any case name the same
 * command: the same bytes as the lower-case name. */
static int test_command_names(void) {
  static const char *const pairs[][2] = {{"TRI", "tri"}, {"TPI", "tpi"}, {"Slope", "slope"}, {"FILL", "fill"}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    clean_outdir();
    char c[4096];
    snprintf(c, sizeof c, "cd '%s' && '%s' %s -q '%s' a.tif && '%s' %s -q '%s' b.tif", outdir, tf, pairs[i][0],
             in("fractal.tif"), tf, pairs[i][1], in("fractal.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    if (!same_a_b()) {
      fprintf(stderr, "%s and %s differ\n", pairs[i][0], pairs[i][1]);
      return 1;
    }
  }
  return 0;
}

static int test_unwritable_destination(void) {
  char a[2048];
  snprintf(a, sizeof a, "slope '%s' /no/such/folder/out.tif", in("fractal.tif"));
  if (expect_fail(a, 4, "does not exist")) return 1;
  snprintf(a, sizeof a, "slope '%s' '%s'", in("fractal.tif"), outdir);
  clean_outdir();
  /* destination is an existing directory */
  char c[4096];
  snprintf(c, sizeof c, "'%s' %s", tf, a);
  ASSERT_EQ_INT(rc_run(c, errfile), 4);
  ASSERT(strstr(rc_slurp(errfile), "is a directory"));
  return 0;
}

/* A full disk and a read-only file system, on small tmpfs mounts (needs
 * root; skipped otherwise). 120 KB of output cannot fit in 64 KB. */
static int test_full_disk_and_readonly(void) {
  char mnt[700], a[2048];
  snprintf(mnt, sizeof mnt, "%s/../mnt_full", dir);
  mkdir(mnt, 0755);
  if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") != 0) {
    printf("skip: cannot mount a tmpfs here\n");
    return 0;
  }
  snprintf(a, sizeof a, "cd '%s' && '%s' slope '%s' out.tif", mnt, tf, in("fractal.tif"));
  int rc = rc_run(a, errfile);
  const char *err = rc_slurp(errfile);
  int entries = rc_count_entries(mnt);
  umount(mnt);
  if (rc != 4 || lines(err) != 1 || !strstr(err, "out.tif") || entries != 0) {
    fprintf(stderr, "full disk: exit %d, %d files left, stderr: %s\n", rc, entries, err);
    return 1;
  }
  if (mount("tmpfs", mnt, "tmpfs", MS_RDONLY, "size=64k") != 0) return 0;
  snprintf(a, sizeof a, "cd '%s' && '%s' slope '%s' out.tif", mnt, tf, in("fractal.tif"));
  rc = rc_run(a, errfile);
  err = rc_slurp(errfile);
  entries = rc_count_entries(mnt);
  umount(mnt);
  if (rc != 4 || lines(err) != 1 || !strstr(err, "out.tif") || entries != 0) {
    fprintf(stderr, "read-only: exit %d, %d files left, stderr: %s\n", rc, entries, err);
    return 1;
  }
  return 0;
}

/* An existing output is replaced only on success: a failing run leaves the
 * old file untouched. */
static int test_existing_output_kept_on_failure(void) {
  clean_outdir();
  char c[4096], out[1024];
  snprintf(out, sizeof out, "%s/keep.tif", outdir);
  snprintf(c, sizeof c, "'%s' slope -q '%s' '%s'", tf, in("plane.tif"), out);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  rc_raster before;
  ASSERT_EQ_INT(rc_load(out, &before), 0);
  snprintf(c, sizeof c, "'%s' slope -q '%s' '%s'", tf, in("truncated.tif"), out);
  ASSERT_EQ_INT(rc_run(c, errfile), 3);
  rc_raster after;
  ASSERT_EQ_INT(rc_load(out, &after), 0);
  ASSERT_EQ_INT(rc_compare(&before, &after, 0, "kept output"), 0);
  ASSERT_EQ_INT(rc_count_entries(outdir), 1);
  rc_free(&before);
  rc_free(&after);
  return 0;
}

static int test_help_and_version(void) {
  char c[2048];
  snprintf(c, sizeof c, "'%s' --version > '%s'", tf, errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strstr(rc_slurp(errfile), "terrafort 0."));
  const char *cmds[] = {"slope", "aspect"};
  for (int i = 0; i < 2; i++) {
    snprintf(c, sizeof c, "'%s' %s --help > '%s'", tf, cmds[i], errfile);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    const char *h = rc_slurp(errfile);
    ASSERT(strstr(h, "Usage: terrafort") && strstr(h, "--threads") && strstr(h, "-compute_edges"));
  }
  snprintf(c, sizeof c, "'%s' --help > '%s'", tf, errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strstr(rc_slurp(errfile), "slope") && strstr(rc_slurp(errfile), "aspect"));
  return 0;
}

/* Progress: GDAL's "0...10...20..." line on a terminal, nothing with -q or
 * when stderr is not a terminal, unless --progress asks for it (then under
 * mpirun the writer's lines from every rank's figures, ending with one
 * "done"). `script` gives the command a pty. */
static int test_progress_line(void) {
  if (rc_run("command -v script >/dev/null", NULL) != 0) {
    printf("skip: no script(1)\n");
    return 0;
  }
  clean_outdir();
  char c[4096];
  snprintf(c, sizeof c, "script -qec \"'%s' slope '%s' '%s/p.tif'\" /dev/null > '%s'", tf, in("demo.tif"), outdir,
           errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strstr(rc_slurp(errfile), "0...10...20...30...40...50...60...70...80...90...100 - done."));
  snprintf(c, sizeof c, "script -qec \"'%s' fill --tile-size 100 '%s' '%s/f.tif'\" /dev/null > '%s'", tf, in("demo.tif"),
           outdir, errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strstr(rc_slurp(errfile), "0...10...20...30...40...50...60...70...80...90...100 - done."));
  snprintf(c, sizeof c, "script -qec \"'%s' slope -q '%s' '%s/p.tif'\" /dev/null > '%s'", tf, in("demo.tif"), outdir,
           errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(!strstr(rc_slurp(errfile), "10..."));
  snprintf(c, sizeof c, "'%s' slope '%s' '%s/p.tif'", tf, in("demo.tif"), outdir);
  ASSERT_EQ_INT(rc_run(c, errfile), 0);
  ASSERT_EQ_INT(strlen(rc_slurp(errfile)), 0);
  /* --progress (GDAL's -progress): the line into a file too, and under
   * mpirun the writer's alone (once); -q still wins */
  static const char line[] = "0...10...20...30...40...50...60...70...80...90...100 - done.\n";
  for (int k = 0; k < 2; k++) {
    snprintf(c, sizeof c, "'%s' %s %s '%s' '%s/p.tif'", tf, k ? "fill" : "slope", k ? "-progress" : "--progress",
             in("demo.tif"), outdir);
    ASSERT_EQ_INT(rc_run(c, errfile), 0);
    ASSERT(!strcmp(rc_slurp(errfile), line));
  }
  snprintf(c, sizeof c, "'%s' slope --progress -q '%s' '%s/p.tif'", tf, in("demo.tif"), outdir);
  ASSERT_EQ_INT(rc_run(c, errfile), 0);
  ASSERT_EQ_INT(strlen(rc_slurp(errfile)), 0);
#ifdef TERRAFORT_HAVE_MPI
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0) {
    /* (Open MPI's start-up allocations are never freed: no leak report
     * from a sanitized build for this one run) */
    snprintf(c, sizeof c,
             "ASAN_OPTIONS=detect_leaks=0 mpirun --allow-run-as-root --oversubscribe -n 2 '%s' slope --progress '%s' "
             "'%s/p.tif'",
             tf, in("demo.tif"), outdir);
    ASSERT_EQ_INT(rc_run(c, errfile), 0);
    /* the writer's line from every rank's figures (tools/progress.h):
     * lines of the command's only, the last one its end */
    const char *e = rc_slurp(errfile), *last = e;
    for (const char *l = e; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
      ASSERT(!strncmp(l, "terrafort slope: ", 17));
      last = l;
    }
    ASSERT(!strncmp(last, "terrafort slope: 100% - done in ", 32));
    ASSERT(strstr(last, " on 2 ranks.\n") && !strchr(strchr(last, '\n') + 1, '\n'));
  }
#endif
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dir = argv[1];
  tf = argv[2];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "%s/../out_cli_errors", dir);
  snprintf(errfile, sizeof errfile, "%s/../cli_errors.stderr", dir);
  static const tr_test_case cases[] = {TR_TEST(test_bad_inputs),
                                       TR_TEST(test_usage_errors),
                                       TR_TEST(test_unwritable_destination),
                                       TR_TEST(test_full_disk_and_readonly),
                                       TR_TEST(test_existing_output_kept_on_failure),
                                       TR_TEST(test_help_and_version),
                                       TR_TEST(test_command_names),
                                       TR_TEST(test_config_option), TR_TEST(test_long_option_equals),
                                       TR_TEST(test_gpu_module),
                                       TR_TEST(test_option_suggestions),
                                       TR_TEST(test_progress_line)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
