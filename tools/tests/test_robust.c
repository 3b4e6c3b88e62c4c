/*
 * test_robust.c - what a hostile user does (issue 14), and what terrafort
 * must do about it:
 *  - an output that is the input (any path, a symlink, a hard link), a FIFO,
 *    a device node, a socket or a directory: exit 4, one line, nothing
 *    replaced, nothing blocks;
 *  - a driver that cannot hold the product's type (slope to PNG/JPEG/GIF):
 *    exit 2; Byte products to PNG still work; unknown -co refused;
 *  - fill -ot integer types: nodata stays nodata, values rounded and clamped;
 *  - NaN/+-Inf input cells are nodata in slope, aspect and fill; statistics
 *    JSON is always valid JSON;
 *  - south-up DEMs give the true aspect; rotated geotransforms are refused;
 *  - SIGHUP/QUIT/USR1/USR2/ALRM/XCPU/PIPE clean up as SIGTERM does (exit 8),
 *    a SIGKILL's temporaries are removed by the next run, an AAIGrid copy
 *    stops within a second on SIGINT;
 *  - the small ones: --threads range and cap, usage errors printed once
 *    under mpirun, subdataset names, a 249-character output name;
 *  - libraries are never loaded from the folder terrafort runs in.
 */
#include <gdal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli_case.h"
#include "tr_test.h"

static char work[512], big[600], mpirun[256];

/* Temporary files (terrafort(1), FILES) left in outdir. */
static int temporaries(void) { return pc_count(outdir, ".terrafort-", NULL, 0); }

static uint32_t host_tag(void) {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  host[sizeof host - 1] = 0;
  uint32_t h = 2166136261u;
  for (const char *s = host; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 16777619u;
  }
  return h;
}

/* ------------------------------------------------------------ item 1 */

static int test_output_is_input(void) {
  reset(outdir);
  char c[4096];
  snprintf(c, sizeof c, "cp '%s' '%s' && mkdir '%s' && ln -s d.tif '%s' && ln '%s' '%s'", in("fractal.tif"),
           out("d.tif"), out("x"), out("l.tif"), out("d.tif"), out("h.tif"));
  ASSERT_EQ_INT(system(c), 0);
  const char *cmds[] = {"slope", "aspect", "fill"};
  const char *dsts[] = {"d.tif", "./x/../d.tif", "l.tif", "h.tif", "$PWD/d.tif"};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) {
      snprintf(c, sizeof c, "%s -q d.tif %s", cmds[i], dsts[j]);
      if (expect(c, 4, "it is the input file")) return 1;
      ASSERT(rc_same_file(in("fractal.tif"), out("d.tif")));
      ASSERT_EQ_INT(temporaries(), 0);
    }
  /* the symlink itself is still a symlink */
  struct stat st;
  ASSERT(lstat(out("l.tif"), &st) == 0 && S_ISLNK(st.st_mode));
  return 0;
}

static int test_special_outputs(void) {
  reset(outdir);
  ASSERT_EQ_INT(mkfifo(out("fifo"), 0644), 0);
  ASSERT_EQ_INT(mknod(out("null"), S_IFCHR | 0644, makedev(1, 3)), 0); /* tests run as root */
  ASSERT_EQ_INT(mkdir(out("dir"), 0755), 0);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", out("sock"));
  const int have_sock = s >= 0 && strlen(out("sock")) < sizeof a.sun_path &&
                        bind(s, (struct sockaddr *)&a, sizeof a) == 0;
  const struct {
    const char *name, *why;
    mode_t type;
  } cases[] = {{"fifo", "FIFO", S_IFIFO}, {"null", "device", S_IFCHR}, {"dir", "directory", S_IFDIR},
               {"sock", "socket", S_IFSOCK}};
  for (int i = 0; i < 4; i++) {
    if (cases[i].type == S_IFSOCK && !have_sock) continue;
    for (int cmd = 0; cmd < 2; cmd++) {
      char args[2048];
      /* timeout: a FIFO that blocked open() would hang here */
      snprintf(args, sizeof args, "%s -q '%s' %s", cmd ? "fill" : "slope", in("fractal.tif"), cases[i].name);
      char c[4096];
      snprintf(c, sizeof c, "cd '%s' && timeout 20 '%s' %s", outdir, tf, args);
      int rc = rc_run(c, errfile);
      const char *err = rc_slurp(errfile);
      if (rc != 4 || pc_lines(err) != 1 || !strstr(err, cases[i].why)) {
        fprintf(stderr, "output %s: exit %d, stderr: %s\n", cases[i].name, rc, err);
        return 1;
      }
      struct stat st;
      ASSERT(lstat(out(cases[i].name), &st) == 0 && (st.st_mode & S_IFMT) == cases[i].type);
      ASSERT_EQ_INT(temporaries(), 0);
    }
  }
  if (s >= 0) close(s);
  /* the input side: a FIFO as input is refused too, without blocking */
  char c[4096];
  snprintf(c, sizeof c, "cd '%s' && timeout 20 '%s' slope -q fifo o.tif", outdir, tf);
  ASSERT_EQ_INT(rc_run(c, errfile), 3);
  ASSERT(strstr(rc_slurp(errfile), "FIFO"));
  return 0;
}

/* ------------------------------------------------------------ item 6 */

static int test_driver_types(void) {
  reset(outdir);
  char a[2048];
  const char *bad[] = {"s.png", "s.jpg", "s.gif", "-of PNG s.tif", "-of JPEG s.tif"};
  for (int i = 0; i < 5; i++) {
    snprintf(a, sizeof a, "slope -q '%s' %s", in("fractal.tif"), bad[i]);
    if (expect(a, 2, "cannot hold this product's Float32 cells")) return 1;
    ASSERT_EQ_INT(pc_count(outdir, NULL, NULL, 0), 0);
  }
  snprintf(a, sizeof a, "fill -q -ot Float32 '%s' f.png", in("fractal.tif"));
  if (expect(a, 2, "cannot hold")) return 1;
  /* Byte products to PNG, and -co given to the PNG driver's CreateCopy */
  snprintf(a, sizeof a, "hillshade -q '%s' h.png", in("fractal.tif"));
  if (expect(a, 0, NULL)) return 1;
  snprintf(a, sizeof a, "hillshade -q -co ZLEVEL=9 '%s' h9.png", in("fractal.tif"));
  if (expect(a, 0, NULL)) return 1;
  rc_raster r;
  ASSERT_EQ_INT(rc_load(out("h.png"), &r), 0);
  ASSERT(r.type == GDT_Byte && r.rows == 150 && r.cols == 200);
  rc_free(&r);
  /* fill -ot UInt16 to PNG: the type fits, nodata 65535 too */
  snprintf(a, sizeof a, "fill -q -ot UInt16 '%s' f16.png", in("fractal.tif"));
  if (expect(a, 0, NULL)) return 1;
  ASSERT_EQ_INT(rc_load(out("f16.png"), &r), 0);
  ASSERT(r.type == GDT_UInt16 && r.has_nodata && r.nodata == 65535);
  rc_free(&r);
  /* AAIGrid holds Float32 */
  snprintf(a, sizeof a, "aspect -q '%s' a.asc", in("fractal.tif"));
  if (expect(a, 0, NULL)) return 1;
  ASSERT_EQ_INT(temporaries(), 0);
  /* creation options the driver does not know, or values it does not accept:
   * a warning naming them, as gdaldem gives, and the output as without them */
  snprintf(a, sizeof a, "slope -q '%s' plain.tif", in("fractal.tif"));
  if (expect(a, 0, NULL)) return 1;
  snprintf(a, sizeof a, "hillshade -q '%s' plain.png", in("fractal.tif"));
  if (expect(a, 0, NULL)) return 1;
  const char *co[] = {"-co FOO=BAR x.tif", "-co COMPRESS=NOPE x.tif", "-co FOO=1 x.png", "-of COG -co TILED=YES x.tif"};
  const char *said[] = {"warning: -co: driver GTiff does not support creation option FOO",
                        "warning: -co: 'NOPE' is an unexpected value for COMPRESS",
                        "warning: -co: driver PNG does not support creation option FOO",
                        "warning: -co: driver COG does not support creation option TILED"};
  for (int i = 0; i < 4; i++) {
    /* the file name goes last */
    char b[2048];
    const char *sp = strrchr(co[i], ' ');
    snprintf(b, sizeof b, "%s -q %.*s '%s' %s", i == 2 ? "hillshade" : "slope", (int)(sp - co[i]), co[i],
             in("fractal.tif"), sp + 1);
    if (expect(b, 0, NULL)) return 1;
    const char *err = rc_slurp(errfile);
    if (pc_lines(err) != 1 || !strstr(err, said[i])) {
      fprintf(stderr, "`terrafort %s`: stderr:\n%s(want one line containing '%s')\n", b, err, said[i]);
      return 1;
    }
    if (i < 2) ASSERT(rc_same_file(out("plain.tif"), out("x.tif")));
    if (i == 2) ASSERT(rc_same_file(out("plain.png"), out("x.png")));
  }
  ASSERT_EQ_INT(temporaries(), 0);
  return 0;
}

/* ------------------------------------------------------------ item 7 */

static int test_fill_out_types(void) {
  reset(outdir);
  char a[2048];
  snprintf(a, sizeof a, "fill -q '%s' ref.tif", in("fractal.tif"));
  if (expect(a, 0, NULL)) return 1;
  rc_raster ref;
  ASSERT_EQ_INT(rc_load(out("ref.tif"), &ref), 0);
  ASSERT(ref.has_nodata && ref.nodata == -9999);
  /* the input's nodata when the type holds it, else the type's extreme */
  const struct {
    const char *type;
    double lo, hi, nodata;
  } t[] = {{"Byte", 0, 255, 255},          {"UInt16", 0, 65535, 65535}, {"Int16", -32768, 32767, -9999},
           {"UInt32", 0, 4294967295.0, 4294967295.0}, {"Int32", -2147483648.0, 2147483647.0, -9999}};
  for (int k = 0; k < 5; k++) {
    snprintf(a, sizeof a, "fill -q -ot %s '%s' o.tif", t[k].type, in("fractal.tif"));
    if (expect(a, 0, NULL)) return 1;
    rc_raster r;
    ASSERT_EQ_INT(rc_load(out("o.tif"), &r), 0);
    ASSERT(!strcmp(GDALGetDataTypeName(r.type), t[k].type));
    ASSERT(r.has_nodata);
    ASSERT_EQ_INT((long long)r.nodata, (long long)t[k].nodata);
    for (long i = 0; i < (long)r.rows * r.cols; i++) {
      const double z = ref.v[i], v = r.v[i];
      if (z == ref.nodata) {
        if (v != r.nodata) {
          fprintf(stderr, "-ot %s: nodata cell %ld became %g\n", t[k].type, i, v);
          return 1;
        }
        continue;
      }
      /* rounded (halves up) and clamped, never onto nodata */
      double want = floor(z + 0.5);
      double hi = t[k].hi == t[k].nodata ? t[k].hi - 1 : t[k].hi, lo = t[k].lo == t[k].nodata ? t[k].lo + 1 : t[k].lo;
      want = want < lo ? lo : want > hi ? hi : want;
      if (v != want) {
        fprintf(stderr, "-ot %s: cell %ld: %.9g -> %.17g (want %.17g)\n", t[k].type, i, z, v, want);
        return 1;
      }
    }
    rc_free(&r);
  }
  rc_free(&ref);
  /* a DEM without nodata but with non-finite cells: they get the type's nodata */
  snprintf(a, sizeof a, "fill -q -ot Byte '%s' b.tif", in("nonfinite_nond.tif"));
  if (expect(a, 0, NULL)) return 1;
  rc_raster b;
  ASSERT_EQ_INT(rc_load(out("b.tif"), &b), 0);
  ASSERT(b.has_nodata && b.nodata == 255);
  ASSERT_EQ_INT(b.v[20 * 200 + 30], 255);
  ASSERT_EQ_INT(b.v[40 * 200 + 60], 255);
  ASSERT_EQ_INT(b.v[41 * 200 + 61], 255);
  rc_free(&b);
  /* Float64 input whose nodata (-1e300) Float32 cannot hold: clamped to -FLT_MAX, cells and declaration alike */
  snprintf(a, sizeof a, "fill -q '%s' f64.tif", in("fractal_float64.tif"));
  if (expect(a, 0, NULL)) return 1;
  rc_raster f;
  ASSERT_EQ_INT(rc_load(out("f64.tif"), &f), 0);
  ASSERT(f.has_nodata && f.nodata == -3.4028234663852886e38);
  long nd = 0;
  for (long i = 0; i < (long)f.rows * f.cols; i++) {
    ASSERT(isfinite(f.v[i]));
    nd += f.v[i] == f.nodata;
  }
  ASSERT(nd > 100);
  rc_free(&f);
  snprintf(a, sizeof a, "fill -q -ot Int64 '%s' x.tif", in("fractal.tif"));
  return expect(a, 2, "use Int32");
}

/* ------------------------------------------------------------ item 9 */

static int json_ok(const char *path) {
  char c[2048];
  snprintf(c, sizeof c, "/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '%s'", path);
  int rc = rc_run(c, NULL);
  if (rc != 0) fprintf(stderr, "not valid JSON: %s: %s\n", path, rc_slurp(path));
  return rc == 0;
}

static int test_nonfinite_cells(void) {
  reset(outdir);
  static const int bad[][2] = {{20, 30}, {40, 60}, {41, 61}, {100, 150}, {75, 100}};
  const char *dems[] = {"nonfinite.tif", "nonfinite_nond.tif"};
  const char *cmds[] = {"slope", "aspect", "fill"};
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 3; k++) {
      char a[2048];
      snprintf(a, sizeof a, "%s -q --stats --stats-json s.json '%s' o.tif", cmds[k], in(dems[d]));
      if (expect(a, 0, NULL)) return 1;
      ASSERT(json_ok(out("s.json")));
      rc_raster r;
      ASSERT_EQ_INT(rc_load(out("o.tif"), &r), 0);
      const int fill_nan = k == 2 && d == 1; /* no nodata declared: fill leaves NaN (terrafort-fill(1)) */
      for (long i = 0; i < (long)r.rows * r.cols; i++) {
        if (isinf(r.v[i]) || (isnan(r.v[i]) && !fill_nan)) {
          fprintf(stderr, "%s %s: non-finite cell %g at %ld\n", cmds[k], dems[d], r.v[i], i);
          return 1;
        }
      }
      for (int b = 0; b < 5; b++) {
        double v = r.v[bad[b][0] * r.cols + bad[b][1]];
        if (fill_nan ? !isnan(v) : !(r.has_nodata && v == r.nodata)) {
          fprintf(stderr, "%s %s: cell (%d,%d) is %g, not nodata\n", cmds[k], dems[d], bad[b][0], bad[b][1], v);
          return 1;
        }
        /* a 3x3 product's neighbours of a non-finite cell are nodata too */
        if (k < 2) ASSERT(r.v[(bad[b][0] + 1) * r.cols + bad[b][1]] == r.nodata);
      }
      rc_free(&r);
    }
  /* an output that is +Inf (percent slope across +-5e37: the east-west sum
   * overflows, the north-south one is 0): "max":null, still JSON */
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), out("inf.tif"), 8, 8, 1, GDT_Float32, NULL);
  ASSERT(ds);
  float z[64];
  for (int i = 0; i < 64; i++) z[i] = (i % 8) < 4 ? 5.0e37f : -5.0e37f;
  ASSERT(GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Write, 0, 0, 8, 8, z, 8, 8, GDT_Float32, 0, 0) == CE_None);
  GDALClose(ds);
  char a[2048];
  snprintf(a, sizeof a, "slope -q -p --stats-json s.json inf.tif o.tif");
  if (expect(a, 0, NULL)) return 1;
  ASSERT(json_ok(out("s.json")));
  ASSERT(strstr(rc_slurp(out("s.json")), "\"max\":null"));
  return 0;
}

/* ----------------------------------------------------------- item 10 */

static int test_orientation(void) {
  reset(outdir);
  /* plane.tif: z = 100 + 0.3 x - 0.4 y (x east, y north): it faces
   * downhill along (-0.3, +0.4), azimuth atan2(-0.3, 0.4) = 323.13 degrees;
   * slope atan(0.5). plane_southup.tif is the same terrain, rows reversed. */
  const double az = fmod(atan2(-0.3, 0.4) * 180 / M_PI + 360, 360), sl = atan(0.5) * 180 / M_PI;
  const char *dems[] = {"plane.tif", "plane_southup.tif"};
  for (int d = 0; d < 2; d++) {
    char a[2048];
    rc_raster r;
    snprintf(a, sizeof a, "aspect -q '%s' a.tif", in(dems[d]));
    if (expect(a, 0, NULL)) return 1;
    ASSERT_EQ_INT(rc_load(out("a.tif"), &r), 0);
    for (int i = 1; i < r.rows - 1; i++)
      for (int j = 1; j < r.cols - 1; j++) ASSERT_NEAR(r.v[i * r.cols + j], az, 1e-3);
    rc_free(&r);
    snprintf(a, sizeof a, "aspect -q -alg ZevenbergenThorne '%s' a.tif", in(dems[d]));
    if (expect(a, 0, NULL)) return 1;
    ASSERT_EQ_INT(rc_load(out("a.tif"), &r), 0);
    ASSERT_NEAR(r.v[75 * r.cols + 100], az, 1e-3);
    rc_free(&r);
    snprintf(a, sizeof a, "slope -q '%s' s.tif", in(dems[d]));
    if (expect(a, 0, NULL)) return 1;
    ASSERT_EQ_INT(rc_load(out("s.tif"), &r), 0);
    ASSERT_NEAR(r.v[75 * r.cols + 100], sl, 1e-3);
    rc_free(&r);
  }
  /* a rotated geotransform: refused by the gradient family, fine for fill */
  const char *cmds[] = {"slope", "aspect", "hillshade"};
  for (int k = 0; k < 3; k++) {
    char a[2048];
    snprintf(a, sizeof a, "%s -q '%s' r.tif", cmds[k], in("plane_rotated.tif"));
    if (expect(a, 3, "rotated geotransform")) return 1;
  }
  ASSERT_EQ_INT(pc_count(outdir, "r.tif", NULL, 0), 0);
  char a[2048];
  snprintf(a, sizeof a, "fill -q '%s' r.tif", in("plane_rotated.tif"));
  return expect(a, 0, NULL);
}

/* ----------------------------------------------------------- item 11 */

/* A DEM that keeps fill busy for a while with --threads 1 --tile-size 64
 * and an AAIGrid copy for seconds: 2000 x 2000 cells with pits. */
static int make_big(void) {
  if (access(big, F_OK) == 0) return 0;
  const int n = 2000;
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), big, n, n, 1, GDT_Float32, NULL);
  if (!ds) return -1;
  double gt[6] = {500000, 10, 0, 4500000, 0, -10};
  GDALSetGeoTransform(ds, gt);
  float *row = malloc(sizeof(float) * (size_t)n);
  int st = row ? 0 : -1;
  for (int r = 0; !st && r < n; r++) {
    for (int c = 0; c < n; c++)
      row[c] = 100.0f + 30.0f * sinf((float)c / 50.0f) + 20.0f * cosf((float)r / 70.0f) + (float)((r * 7 + c * 13) % 17) * 0.1f;
    if (GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Write, 0, r, n, 1, row, n, 1, GDT_Float32, 0, 0) != CE_None) st = -1;
  }
  free(row);
  GDALClose(ds);
  return st;
}

/* Starts `terrafort CMD FLAGS big OUTNAME` and waits for its temporary file
 * whose name contains `stage` (".tmp", or ".tmp.asc" for the copy stage). */
static pid_t start_big(const char *cmd, const char *outname, const char *stage) {
  char o[1024];
  snprintf(o, sizeof o, "%s", out(outname));
  char *argv[] = {(char *)tf, (char *)cmd, "-q", "--threads", "1", "--tile-size", "64", big, o, NULL};
  pid_t pid = pc_spawn(argv, errfile, 0);
  if (pid > 0 && !pc_wait_for_entry(outdir, stage, pid, 30)) {
    fprintf(stderr, "%s: no temporary '%s' appeared (finished too soon?)\n", cmd, stage);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
  }
  return pid;
}

static int test_signals_clean_up(void) {
  ASSERT_EQ_INT(make_big(), 0);
  const struct {
    int sig;
    const char *name;
  } sigs[] = {{SIGHUP, "HUP"},   {SIGQUIT, "QUIT"}, {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"}, {SIGALRM, "ALRM"},
              {SIGXCPU, "XCPU"}, {SIGPIPE, "PIPE"}, {SIGTERM, "TERM"}, {SIGINT, "INT"}};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    reset(outdir);
    pid_t pid = start_big("fill", "f.tif", ".tmp");
    ASSERT(pid > 0);
    kill(pid, sigs[i].sig);
    pc_result r;
    ASSERT_EQ_INT(pc_wait(pid, 20, &r), 0);
    const char *err = rc_slurp(errfile);
    if (!r.exited || r.code != 8 || r.secs > 2.0 || pc_lines(err) != 1 || !strstr(err, "interrupted")) {
      fprintf(stderr, "SIG%s: exited %d code %d signal %d after %.2f s, stderr: %s\n", sigs[i].name, r.exited, r.code,
              r.sig, r.secs, err);
      return 1;
    }
    printf("SIG%s: exit 8 after %.3f s\n", sigs[i].name, r.secs);
    ASSERT_EQ_INT(pc_count(outdir, NULL, NULL, 0), 0);
  }
  return 0;
}

/* SIGINT while GDALCreateCopy writes an AAIGrid: acts within a second. */
static int test_aaigrid_interrupt(void) {
  ASSERT_EQ_INT(make_big(), 0);
  reset(outdir);
  pid_t pid = start_big("slope", "s.asc", ".tmp.asc");
  ASSERT(pid > 0);
  kill(pid, SIGINT);
  pc_result r;
  ASSERT_EQ_INT(pc_wait(pid, 20, &r), 0);
  printf("AAIGrid copy: exit %d after %.3f s\n", r.code, r.secs);
  ASSERT(r.exited && r.code == 8);
  ASSERT(r.secs < 1.0);
  ASSERT_EQ_INT(pc_count(outdir, NULL, NULL, 0), 0);
  return 0;
}

/* SIGTERM to fill on the threads back-end, 5 and 7 s into a run of about
 * 13 s (its one worker slowed down 50 times: 64 tiles, rounds of about
 * 0.05 s, short enough under ASan too; with 20, the run it had before the
 * flood's radix heap, it now ends in 6 s): exit 8 within a second, nothing
 * left. That the back-end itself asks before every round is aap_sim's
 * test_give_up_threads. */
static int test_threads_sigterm(void) {
  ASSERT_EQ_INT(make_big(), 0);
  static const int at_ms[2] = {5000, 7000};
  for (int i = 0; i < 2; i++) {
    reset(outdir);
    char o[1024];
    snprintf(o, sizeof o, "%s", out("o.tif"));
    char *argv[] = {(char *)tf, "fill", "-q", "--threads", "1", "--tile-size", "250", "--inject",
                    "slow:worker=0,factor=50", big, o, NULL};
    const pid_t pid = pc_spawn(argv, errfile, 0);
    ASSERT(pid > 0 && pc_wait_for_entry(outdir, ".tmp", pid, 30));
    pc_sleep_ms(at_ms[i]);
    const double t0 = pc_now();
    ASSERT_EQ_INT(kill(pid, SIGTERM), 0);
    pc_result r;
    ASSERT_EQ_INT(pc_wait(pid, 30, &r), 0);
    const double after = pc_now() - t0;
    printf("  fill: SIGTERM %d ms into the run: exit %d %.2f s later\n", at_ms[i], r.code, after);
    ASSERT_EQ_INT(r.code, 8);
    ASSERT(after < 1.0);
    ASSERT_EQ_INT(pc_count(outdir, ".terrafort-", NULL, 0), 0);
    ASSERT(access(o, F_OK) != 0);
  }
  return 0;
}

/* SIGTERM, then SIGKILL 10 ms later, as mpirun ends a job: the temporaries
 * are gone all the same because the handler unlinks them itself
 * (tr_remove_temporaries), not the run at its next progress call. During
 * fill's computation (its worker slowed: without the handler's unlink the
 * file is left every time), during an AAIGrid copy (two temporaries), and
 * in flowgraph once its scratch directions are in place (a committed
 * scratch raster and the accumulation's temporary). */
static int test_term_then_kill(void) {
  ASSERT_EQ_INT(make_big(), 0);
  for (int i = 0; i < 3; i++) {
    reset(outdir);
    pid_t pid;
    if (i == 0) {
      /* fill with its one worker slowed down 1000 times: its own clean-up
       * cannot come within the 10 ms */
      char o[1024];
      snprintf(o, sizeof o, "%s", out("f.tif"));
      char *argv[] = {(char *)tf, "fill", "-q", "--threads", "1", "--tile-size", "64", "--inject",
                      "slow:worker=0,factor=1000", big, o, NULL};
      pid = pc_spawn(argv, errfile, 0);
      ASSERT(pid > 0 && pc_wait_for_entry(outdir, ".tmp", pid, 30));
      /* past GDAL's create call (a SIGTERM inside it and a SIGKILL within
       * its few ms leave the file to the stale clean-up: tmp_files.h); the
       * slowed fill is then in its first round for hundreds of ms */
      pc_sleep_ms(100);
    } else if (i == 1) {
      pid = start_big("slope", "s.asc", ".tmp.asc");
    } else {
      char o[1024];
      snprintf(o, sizeof o, "%s", out("a.tif"));
      char *argv[] = {(char *)tf, "flowgraph", "-q", "--threads", "1", "--tile-size", "64", big, "--acc", o, NULL};
      pid = pc_spawn(argv, errfile, 0);
      /* the directions' scratch raster is in place, the accumulation's temporary made */
      ASSERT(pid > 0 && pc_wait_for_entry(outdir, ".tmpdir.tif", pid, 60));
      int k = 0;
      for (; k < 12000 && (pc_count(outdir, ".a.terrafort-", NULL, 0) < 2 || pc_count(outdir, "tmpfel", NULL, 0)); k++)
        pc_sleep_ms(1);
      ASSERT(k < 12000);
    }
    ASSERT(pid > 0);
    const int before = pc_count(outdir, ".terrafort-", NULL, 0);
    kill(pid, SIGTERM);
    pc_sleep_ms(10); /* mpirun's grace */
    kill(pid, SIGKILL);
    pc_result r;
    ASSERT_EQ_INT(pc_wait(pid, 20, &r), 0);
    const int left = pc_count(outdir, ".terrafort-", NULL, 0);
    static const char *const names[3] = {"fill", "slope (AAIGrid copy)", "flowgraph"};
    printf("%s: %d temporaries before SIGTERM, %d left; %s\n", names[i], before, left,
           r.signaled ? "ended by SIGKILL" : "exited before SIGKILL");
    ASSERT(before >= 1);
    ASSERT_EQ_INT(left, 0);
  }
  return 0;
}

/* SIGKILL leaves the temporaries under a recognisable name; the next run in
 * that folder removes those of dead processes, never a live one's. */
static int test_sigkill_stale(void) {
  ASSERT_EQ_INT(make_big(), 0);
  reset(outdir);
  /* killed during the computation, and during an AAIGrid copy (two files) */
  pid_t a = start_big("fill", "f.tif", ".tmp");
  ASSERT(a > 0);
  kill(a, SIGKILL);
  pc_result r;
  ASSERT_EQ_INT(pc_wait(a, 20, &r), 0);
  ASSERT(r.signaled && r.sig == SIGKILL);
  char want[128];
  snprintf(want, sizeof want, ".f.terrafort-%ld-%08x.tmp.tif", (long)a, (unsigned)host_tag());
  ASSERT_EQ_INT(pc_count(outdir, want, NULL, 0), 1);
  /* the next run removes it (and its own, SIGKILLed in its copy stage, stays) */
  pid_t b = start_big("slope", "s.asc", ".tmp.asc");
  ASSERT(b > 0);
  kill(b, SIGKILL);
  ASSERT_EQ_INT(pc_wait(b, 20, &r), 0);
  ASSERT_EQ_INT(pc_count(outdir, want, NULL, 0), 0);
  snprintf(want, sizeof want, ".s.terrafort-%ld-%08x.", (long)b, (unsigned)host_tag());
  ASSERT_EQ_INT(pc_count(outdir, want, NULL, 0), 2); /* .stage.tif and .tmp.asc */
  /* a live process's temporary (ours) and one of another host stay */
  char live[1024], other[1024];
  snprintf(live, sizeof live, "%s/.g.terrafort-%ld-%08x.tmp.tif", outdir, (long)getpid(), (unsigned)host_tag());
  snprintf(other, sizeof other, "%s/.h.terrafort-%ld-%08x.tmp.tif", outdir, (long)a, (unsigned)host_tag() ^ 1u);
  FILE *f = fopen(live, "w");
  ASSERT(f);
  fclose(f);
  f = fopen(other, "w");
  ASSERT(f);
  fclose(f);
  char c[4096];
  snprintf(c, sizeof c, "'%s' slope -q '%s' '%s'", tf, in("plane.tif"), out("p.tif"));
  ASSERT_EQ_INT(rc_run(c, errfile), 0);
  ASSERT_EQ_INT(pc_count(outdir, NULL, NULL, 0), 3); /* p.tif, the live one, the other host's */
  ASSERT(access(live, F_OK) == 0 && access(other, F_OK) == 0 && access(out("p.tif"), F_OK) == 0);
  return 0;
}

/* A killed rank under mpirun: whatever stays, the next run removes. */
static int test_killed_rank(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  ASSERT_EQ_INT(make_big(), 0);
  for (int victim = 0; victim < 2; victim++) {
    reset(outdir);
    char c[4096];
    snprintf(c, sizeof c, "%s -n 2 '%s' fill -q --threads 1 --tile-size 64 '%s' '%s' 2>/dev/null & echo $! > '%s/../mpirun.pid'; wait",
             mpirun, tf, big, out("f.tif"), outdir);
    char *argv[] = {"/bin/sh", "-c", c, NULL};
    pid_t sh = pc_spawn(argv, NULL, 0);
    ASSERT(pc_wait_for_entry(outdir, ".tmp", sh, 60));
    char tmp[512];
    ASSERT_EQ_INT(pc_count(outdir, ".terrafort-", tmp, sizeof tmp), 1);
    long rank0 = atol(strstr(tmp, ".terrafort-") + strlen(".terrafort-"));
    long target = rank0;
    if (victim == 1) {
      /* the other rank: mpirun's other terrafort child */
      char p[1200];
      snprintf(p, sizeof p, "%s/../mpirun.pid", outdir);
      long mp = atol(rc_slurp(p));
      snprintf(p, sizeof p, "/proc/%ld/task/%ld/children", mp, mp);
      const char *kids = rc_slurp(p);
      target = 0;
      for (const char *q = kids; *q;) {
        long k = strtol(q, (char **)&q, 10);
        if (k > 0 && k != rank0) target = k;
        while (*q == ' ' || *q == '\n') q++;
        if (k <= 0) break;
      }
      ASSERT(target > 0);
    }
    kill((pid_t)target, SIGKILL);
    pc_result r;
    ASSERT_EQ_INT(pc_wait(sh, 60, &r), 0);
    ASSERT(!r.timed_out);
    printf("killed rank %d: mpirun done after %.2f s, %d temporaries left\n", victim, r.secs, temporaries());
    snprintf(c, sizeof c, "'%s' slope -q '%s' '%s'", tf, in("plane.tif"), out("p.tif"));
    ASSERT_EQ_INT(rc_run(c, errfile), 0);
    ASSERT_EQ_INT(temporaries(), 0);
  }
  return 0;
}

/* ----------------------------------------------------------- item 13 */

static int test_threads(void) {
  reset(outdir);
  char c[4096];
  snprintf(c, sizeof c, "'%s' slope --help > '%s'", tf, errfile);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strstr(rc_slurp(errfile), "1..4096"));
  char a[2048];
  snprintf(a, sizeof a, "slope --threads 4097 '%s' o.tif", in("fractal.tif"));
  if (expect(a, 2, "out of range [1, 4096]")) return 1;
  /* the most the parser takes works for every command (capped, terrafort(1)) */
  const char *cmds[] = {"slope", "aspect", "fill"};
  for (int k = 0; k < 3; k++) {
    snprintf(a, sizeof a, "%s -q --threads 4096 '%s' o.tif", cmds[k], in("fractal.tif"));
    if (expect(a, 0, NULL)) return 1;
  }
  /* and under an address-space limit that 4096 threads' stacks exceed (2 GB
   * plus room for the 4 threads per core terrafort keeps): no abort in the
   * thread runtime (skipped where the binary itself cannot run so, e.g.
   * under ASan) */
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const long long limit = (2LL << 30) + 4LL * (cores > 0 ? cores : 1) * (64LL << 20);
  char *v[] = {(char *)tf, "--version", NULL};
  pc_result r;
  pid_t pid = pc_spawn(v, NULL, limit);
  ASSERT_EQ_INT(pc_wait(pid, 30, &r), 0);
  if (!r.exited || r.code != 0) {
    printf("skip: terrafort does not run under a %lld MB address-space limit here\n", limit >> 20);
    return 0;
  }
  for (int k = 0; k < 3; k++) {
    char o[1024];
    snprintf(o, sizeof o, "%s", out("m.tif"));
    char *argv[] = {(char *)tf, (char *)cmds[k], "-q", "--threads", "4096", (char *)in("demo.tif"), o, NULL};
    pid = pc_spawn(argv, errfile, limit);
    ASSERT_EQ_INT(pc_wait(pid, 120, &r), 0);
    if (!r.exited || r.code != 0) {
      fprintf(stderr, "%s --threads 4096 under %lld MB: exited %d code %d signal %d: %s\n", cmds[k], limit >> 20, r.exited,
              r.code, r.sig, rc_slurp(errfile));
      return 1;
    }
  }
  ASSERT_EQ_INT(temporaries(), 0);
  return 0;
}

static int test_usage_once_under_mpirun(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  const char *cases[][2] = {{"slope --frobnicate a b", "terrafort slope:"},
                            {"fill --threads 0 a b", "terrafort fill:"},
                            {"frobnicate a b", "unknown command"}};
  for (int i = 0; i < 3; i++) {
    char c[4096];
    snprintf(c, sizeof c, "%s -n 2 '%s' %s", mpirun, tf, cases[i][0]);
    int rc = rc_run(c, errfile);
    const char *err = rc_slurp(errfile);
    int n = 0;
    for (const char *p = strstr(err, cases[i][1]); p; p = strstr(p + 1, cases[i][1])) n++;
    if (rc == 0 || n != 1) {
      fprintf(stderr, "mpirun -n 2 terrafort %s: exit %d, the error %d times:\n%s\n", cases[i][0], rc, n, err);
      return 1;
    }
  }
  return 0;
}

static int test_gdal_names(void) {
  reset(outdir);
  GDALDatasetH src = GDALOpen(in("fractal.tif"), GA_ReadOnly);
  ASSERT(src);
  GDALDriverH nc = GDALGetDriverByName("netCDF"), gp = GDALGetDriverByName("GPKG");
  char a[2048];
  if (nc) {
    GDALDatasetH d = GDALCreateCopy(nc, out("f.nc"), src, FALSE, NULL, NULL, NULL);
    ASSERT(d);
    GDALClose(d);
    snprintf(a, sizeof a, "slope -q NETCDF:f.nc:Band1 n.tif");
    if (expect(a, 0, NULL)) return 1;
    snprintf(a, sizeof a, "fill -q 'NETCDF:\"%s\":Band1' n2.tif", out("f.nc"));
    if (expect(a, 0, NULL)) return 1;
    snprintf(a, sizeof a, "slope -q NETCDF:missing.nc:Band1 x.tif");
    if (expect(a, 3, "missing.nc")) return 1;
  } else {
    printf("skip: no netCDF driver\n");
  }
  GDALClose(src);
  if (gp) {
    GDALDatasetH b = GDALOpen(in("fractal_byte.tif"), GA_ReadOnly);
    const char *opts[] = {"RASTER_TABLE=dem", NULL};
    GDALDatasetH d = GDALCreateCopy(gp, out("f.gpkg"), b, FALSE, (char **)opts, NULL, NULL);
    ASSERT(d);
    GDALClose(d);
    GDALClose(b);
    snprintf(a, sizeof a, "aspect -q GPKG:f.gpkg:dem g.tif");
    if (expect(a, 0, NULL)) return 1;
  } else {
    printf("skip: no GPKG driver\n");
  }
  /* /vsi paths go to GDAL as they are */
  snprintf(a, sizeof a, "slope -q '/vsigzip/%s' x.tif", out("nothere.gz"));
  if (expect(a, 3, "nothere.gz")) return 1;
  return 0;
}

static int test_long_output_name(void) {
  reset(outdir);
  char name[300];
  memset(name, 'a', 245);
  strcpy(name + 245, ".tif"); /* 249 characters */
  ASSERT_EQ_INT(strlen(name), 249);
  const char *cmds[] = {"slope", "fill"};
  for (int k = 0; k < 2; k++) {
    char a[2048];
    snprintf(a, sizeof a, "%s -q '%s' %s", cmds[k], in("fractal.tif"), name);
    if (expect(a, 0, NULL)) return 1;
    ASSERT(access(out(name), F_OK) == 0);
  }
  strcpy(name + 245, ".asc"); /* a CreateCopy driver: two temporaries */
  char a[2048];
  snprintf(a, sizeof a, "slope -q '%s' %s", in("fractal.tif"), name);
  if (expect(a, 0, NULL)) return 1;
  ASSERT(access(out(name), F_OK) == 0);
  ASSERT_EQ_INT(temporaries(), 0);
  return 0;
}

/* The program's dependencies come from the loader's own folders, never from the
 * folder it runs in: files named as its libraries, there and in the subfolders the
 * loader derives from a relative RUNPATH entry, are not loaded (CMake's automatic
 * RUNPATH once ended in an empty entry, which the loader takes as the current directory). */
static int test_no_libraries_from_cwd(void) {
  reset(outdir);
  char c[4096], list[600], solo[1024];
  snprintf(list, sizeof list, "%s/needed", work);
  /* where MPI is built, terrafort is a static launcher and terrafort-solo beside it loads GDAL */
  snprintf(solo, sizeof solo, "%s-solo", tf);
  if (access(solo, X_OK) != 0) snprintf(solo, sizeof solo, "%s", tf);
  snprintf(c, sizeof c, "ldd '%s' | awk '/=>/ {print $1}' > '%s'", solo, list);
  ASSERT_EQ_INT(system(c), 0);
  ASSERT(strstr(rc_slurp(list), "libgdal.so") != NULL);
  /* a text file under each library's name, in the folder and in x86_64/, tls/ and
     glibc-hwcaps/x86-64-v2/ beside it: loading any of them ends the program */
  snprintf(c, sizeof c,
           "cd '%s' && mkdir -p x86_64 tls glibc-hwcaps/x86-64-v2 && while read -r l; do "
           "for d in . x86_64 tls glibc-hwcaps/x86-64-v2; do echo 'not a library' > \"$d/$l\"; done; "
           "done < '%s'",
           outdir, list);
  ASSERT_EQ_INT(system(c), 0);
  ASSERT(pc_count(outdir, "libgdal.so", NULL, 0) == 1);
  char a[1024];
  snprintf(a, sizeof a, "slope -q '%s' s.tif", in("fractal.tif"));
  if (expect(a, 0, NULL)) return 1;
  ASSERT(access(out("s.tif"), F_OK) == 0);
  return 0;
}

/* The libraries a program in terrafort's folder loads (ldd's list). */
static const char *needed(const char *name, char *list, size_t n) {
  char prog[1024], c[4096];
  snprintf(prog, sizeof prog, "%s", tf);
  char *slash = strrchr(prog, '/');
  if (!slash) return "";
  snprintf(slash + 1, sizeof prog - (size_t)(slash + 1 - prog), "%s", name);
  snprintf(list, n, "%s/needed", work);
  /* a static program: ldd says so, and exits 1 */
  snprintf(c, sizeof c, "ldd '%s' > '%s' 2>&1", prog, list);
  const int rc = system(c);
  const char *l = rc_slurp(list);
  return rc == 0 || strstr(l, "not a dynamic executable") ? l : "";
}

/* terrafort itself loads neither GDAL's libraries nor MPI's: it becomes
 * terrafort-solo (GDAL, no MPI) from its folder, and started by mpirun,
 * each rank becomes terrafort-mpi (the ranks then really share the run:
 * the statistics' report counts them, and the bytes are one process's).
 * Without that file the ranks say so and the job ends with exit 1,
 * leaving no output; without terrafort-solo a plain run says so. */
static int test_mpi_twin(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  reset(outdir);
  char c[4096], list[600];
  const char *front = needed("terrafort", list, sizeof list);
  ASSERT(strstr(front, "libc.so") != NULL || strstr(front, "not a dynamic executable") != NULL);
  ASSERT(strstr(needed("terrafort", list, sizeof list), "libgdal") == NULL);
  ASSERT(strstr(needed("terrafort", list, sizeof list), "libmpi") == NULL);
  ASSERT(strstr(needed("terrafort-solo", list, sizeof list), "libgdal.so") != NULL);
  ASSERT(strstr(needed("terrafort-solo", list, sizeof list), "libmpi") == NULL);
  ASSERT(strstr(needed("terrafort-mpi", list, sizeof list), "libmpi") != NULL);

  snprintf(c, sizeof c, "%s -n 2 '%s' slope -q '%s' '%s' --stats-json '%s'", mpirun, tf, in("fractal.tif"), out("m.tif"),
           out("m.json"));
  ASSERT_EQ_INT(rc_run(c, errfile), 0);
  const char *ranks = strstr(rc_slurp(out("m.json")), "\"ranks\":");
  ASSERT(ranks != NULL);
  ASSERT_EQ_INT(atoi(ranks + 8), 2);
  snprintf(c, sizeof c, "'%s' slope -q '%s' '%s'", tf, in("fractal.tif"), out("s.tif"));
  ASSERT_EQ_INT(rc_run(c, errfile), 0);
  snprintf(c, sizeof c, "cmp -s '%s' '%s'", out("m.tif"), out("s.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);

  /* alone in a folder */
  snprintf(c, sizeof c, "mkdir -p '%s' && cp '%s' '%s'", out("alone"), tf, out("alone/terrafort"));
  ASSERT_EQ_INT(system(c), 0);
  snprintf(c, sizeof c, "%s -n 2 '%s' slope -q '%s' '%s'", mpirun, out("alone/terrafort"), in("fractal.tif"),
           out("a.tif"));
  const int rc = rc_run(c, errfile);
  const char *err = rc_slurp(errfile);
  int n = 0;
  for (const char *p = strstr(err, "its MPI build"); p; p = strstr(p + 1, "its MPI build")) n++;
  /* every rank fails at once, but mpirun ends the job when the first has
   * exited: a rank slower to start may be ended before it speaks */
  if (rc != 1 || n < 1 || n > 2 || !strstr(err, "alone/terrafort-mpi")) {
    fprintf(stderr, "terrafort without its twin under mpirun -n 2: exit %d, the error %d times:\n%s\n", rc, n, err);
    return 1;
  }
  ASSERT(access(out("a.tif"), F_OK) != 0);
  snprintf(c, sizeof c, "'%s' slope -q '%s' '%s'", out("alone/terrafort"), in("fractal.tif"), out("a.tif"));
  ASSERT_EQ_INT(rc_run(c, errfile), 1);
  ASSERT(strstr(rc_slurp(errfile), "alone/terrafort-solo") != NULL);
  ASSERT(access(out("a.tif"), F_OK) != 0);
  ASSERT_EQ_INT(temporaries(), 0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dir = argv[1];
  tf = argv[2];
  GDALAllRegister();
  snprintf(work, sizeof work, "%s/../robust", dir);
  snprintf(outdir, sizeof outdir, "%s/out", work);
  snprintf(errfile, sizeof errfile, "%s/stderr", work);
  snprintf(big, sizeof big, "%s/big.tif", work);
  reset(work);
  /* "" without MPI built (terrafort then runs each rank alone) or without mpirun: those cases skip */
#ifdef TERRAFORT_HAVE_MPI
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
#endif
  static const tr_test_case cases[] = {TR_TEST(test_output_is_input),
                                       TR_TEST(test_special_outputs),
                                       TR_TEST(test_driver_types),
                                       TR_TEST(test_fill_out_types),
                                       TR_TEST(test_nonfinite_cells),
                                       TR_TEST(test_orientation),
                                       TR_TEST(test_signals_clean_up),
                                       TR_TEST(test_aaigrid_interrupt),
                                       TR_TEST(test_term_then_kill),
                                       TR_TEST(test_threads_sigterm),
                                       TR_TEST(test_sigkill_stale),
                                       TR_TEST(test_killed_rank),
                                       TR_TEST(test_threads),
                                       TR_TEST(test_usage_once_under_mpirun),
                                       TR_TEST(test_gdal_names),
                                       TR_TEST(test_long_output_name),
                                       TR_TEST(test_no_libraries_from_cwd),
                                       TR_TEST(test_mpi_twin)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
