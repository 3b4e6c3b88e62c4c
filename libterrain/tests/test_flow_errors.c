/*
 * test_flow_errors.c - tr_flowdir on bad input and bad options: the status from the
 * documented table, one line naming what and which file, and no output (nor intermediate
 * file) left behind, including when a later stage fails after an earlier one wrote its
 * output. An all-NoData DEM is valid input, as for fill and the gdaldem modes: every
 * direction is nodata.
 * Usage: test_flow_errors TESTDATA_DIR
 */
#include <dirent.h>
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "terrain.h"
#include "tr_test.h"

static const char *data;
static char tmp[64];

static const char *in(const char *name) {
  static char p[2][1024];
  static int i;
  i ^= 1;
  snprintf(p[i], sizeof p[i], "%s/%s", data, name);
  return p[i];
}

static const char *out(const char *name) {
  static char p[4][256];
  static int i;
  i = (i + 1) % 4;
  snprintf(p[i], sizeof p[i], "%s/%s", tmp, name);
  return p[i];
}

/* The number of entries of the scratch folder (outputs and temporaries alike). */
static int entries(void) {
  DIR *d = opendir(tmp);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  if (d) closedir(d);
  return n;
}

typedef struct {
  const char *src;
  int filled, encoding;
  const char *slope, *filled_out, *schedule;
} call;

static int flowdir(const call *c, const char *dst, tr_error *e) {
  tr_run_opts run;
  tr_run_opts_init(&run);
  run.threads = 2;
  run.tile_size = 64;
  tr_graph_opts g;
  tr_graph_opts_init(&g);
  g.schedule = c->schedule;
  tr_flowdir_opts o;
  tr_flowdir_opts_init(&o);
  o.filled = c->filled;
  o.encoding = (tr_dir_encoding)c->encoding;
  o.slope = c->slope;
  o.filled_out = c->filled_out;
  memset(e, 0, sizeof *e);
  return tr_flowdir(&run, &g, &o, c->src, dst, e);
}

/* The call fails with `status`, a message holding `what`, and leaves nothing. */
static int fails(const call *c, int status, const char *what) {
  tr_error e;
  const int st = flowdir(c, out("p.tif"), &e);
  if (st != status || !strstr(e.msg, what) || strchr(e.msg, '\n') || entries() != 0) {
    fprintf(stderr, "%s: status %d (want %d), message '%s' (want '%s'), %d files left\n", c->src, st, status, e.msg,
            what, entries());
    return 0;
  }
  return 1;
}

static int test_bad_inputs(void) {
  ASSERT(fails(&(call){.src = in("no-such.tif")}, TR_EINPUT, "no-such.tif"));
  ASSERT(fails(&(call){.src = in("notraster.tif")}, TR_EINPUT, "notraster.tif"));
  ASSERT(fails(&(call){.src = in("empty.tif")}, TR_EINPUT, "empty.tif"));
  ASSERT(fails(&(call){.src = in("truncated.tif")}, TR_EINPUT, "truncated.tif"));
  ASSERT(fails(&(call){.src = in("complex.tif")}, TR_ETYPE, "complex.tif"));
  /* a rotated geotransform is refused before the fill, naming the DEM (found by the
     direction stage, it named the fill's scratch raster) */
  ASSERT(fails(&(call){.src = in("plane_rotated.tif")}, TR_EINPUT, "plane_rotated.tif' has a rotated"));
  ASSERT(fails(&(call){.src = in("plane_rotated.tif"), .filled = 1}, TR_EINPUT, "plane_rotated.tif' has a rotated"));
  return 0;
}

static int test_bad_options(void) {
  ASSERT(fails(&(call){.src = in("fractal.tif"), .encoding = 7}, TR_EUSAGE, "encoding"));
  ASSERT(fails(&(call){.src = in("fractal.tif"), .filled = 1, .filled_out = out("fel.tif")}, TR_EUSAGE, "filled"));
  ASSERT(fails(&(call){.src = in("fractal.tif"), .slope = out("p.tif")}, TR_EUSAGE, "same file"));
  ASSERT(fails(&(call){.src = in("fractal.tif"), .schedule = "fastest"}, TR_EUSAGE, "--schedule"));
  return 0;
}

static int test_later_stage_failure_removes_earlier_outputs(void) {
  /* the slope cannot be created (no such folder): the directions and the filled DEM,
     already written, are deleted */
  ASSERT(fails(&(call){.src = in("fractal.tif"), .slope = "/nonexistent-folder/sd8.tif", .filled_out = out("fel.tif")}, TR_EOUTPUT,
               "nonexistent-folder"));
  /* and the directions cannot be created: the filled DEM goes */
  tr_error e;
  const call c = {.src = in("fractal.tif"), .filled_out = out("fel.tif")};
  ASSERT(flowdir(&c, "/nonexistent-folder/p.tif", &e) == TR_EOUTPUT);
  ASSERT_EQ_INT(entries(), 0);
  return 0;
}

static int test_all_nodata(void) {
  tr_error e;
  const call c = {.src = in("allnodata.tif"), .slope = out("sd8.tif")};
  ASSERT_EQ_INT(flowdir(&c, out("p.tif"), &e), TR_OK);
  rc_raster p, s;
  ASSERT_EQ_INT(rc_load(out("p.tif"), &p), 0);
  ASSERT_EQ_INT(rc_load(out("sd8.tif"), &s), 0);
  for (long i = 0; i < (long)p.rows * p.cols; i++) {
    ASSERT(p.v[i] == -32768);
    ASSERT(s.v[i] == -1);
  }
  free(p.v);
  free(s.v);
  unlink(out("p.tif"));
  unlink(out("sd8.tif"));
  ASSERT_EQ_INT(entries(), 0);
  return 0;
}

static void cleanup(void) {
  char c[128];
  snprintf(c, sizeof c, "rm -rf '%s'", tmp);
  if (system(c) != 0) fprintf(stderr, "could not remove %s\n", tmp);
}

int main(int argc, char **argv) {
  GDALAllRegister();
  data = argc > 1 ? argv[1] : "testdata";
  snprintf(tmp, sizeof tmp, "/tmp/tf_flowerr_XXXXXX");
  if (!mkdtemp(tmp)) return 1;
  atexit(cleanup);
  static const tr_test_case cases[] = {TR_TEST(test_bad_inputs), TR_TEST(test_bad_options),
                                       TR_TEST(test_later_stage_failure_removes_earlier_outputs),
                                       TR_TEST(test_all_nodata)};
  return tr_test_main(argc - 1, argv + 1, cases, 4);
}
