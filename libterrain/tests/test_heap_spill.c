/*
 * test_heap_spill.c - a graph run whose state spills leaves the C library's
 * allocator settings to its caller (terrain.h, tr_run_opts.heap_spill): run
 * in-process on the demo DEM, as Python or QGIS run the library, a fill
 * with --mem below its state calls mallopt() only through the caller's
 * heap_spill, which it calls once, before the rounds, saying whether more
 * state spills than stays; a run that keeps everything does not call it;
 * tr_heap_spill_apply, what terrafort passes, sets glibc's one arena and
 * its mmap threshold of 256 KiB. The bytes are those of the run in memory.
 *
 * The library's calls to mallopt() are counted by this program's own
 * definition of it, which the static library's references resolve to.
 */
#include <gdal.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "raster_check.h"
#include "terrain.h"
#include "tr_test.h"

static char outdir[512], demo[600];

/* every mallopt() of this process: how many, and the last value of each */
static int n_mallopt, arena_max = -1, mmap_threshold = -1;

int mallopt(int param, int value) {
  n_mallopt++;
#ifdef M_ARENA_MAX
  if (param == M_ARENA_MAX) arena_max = value;
#endif
  if (param == M_MMAP_THRESHOLD) mmap_threshold = value;
  return 1;
}

typedef struct {
  int calls, mostly;
} told;

static void record(int mostly_spilled, void *user) {
  told *t = user;
  t->calls++;
  t->mostly = mostly_spilled;
}

/* fill of the demo DEM into out with --mem mem (0: the default) and the
 * given heap_spill; the library's status */
static int fill(const char *out, int64_t mem, tr_heap_fn heap, void *user, tr_error *e) {
  tr_fill_dem_opts o;
  tr_fill_dem_opts_init(&o);
  o.run.threads = 2;
  o.run.tile_size = 128;
  o.run.mem = mem;
  o.run.heap_spill = heap;
  o.run.heap_spill_user = user;
  o.graph.tmp_dir = outdir;
  return tr_fill_dem(&o, demo, out, e);
}

/* The least --mem, in whole MiB from 64, that the fill takes: the fixed part
 * and a few tiles, so most of the state spills. 0 when none up to 512. */
static int64_t least_mem(const char *out) {
  for (int64_t mib = 64; mib <= 512; mib++) {
    tr_error e = {{0}};
    told t = {0, 0};
    if (fill(out, mib << 20, record, &t, &e) == TR_OK) return mib << 20;
  }
  return 0;
}

static int test_caller_tunes_the_heap(void) {
  char in_mem[700], spilled[700], tuned[700];
  snprintf(in_mem, sizeof in_mem, "%s/in_memory.tif", outdir);
  snprintf(spilled, sizeof spilled, "%s/spilled.tif", outdir);
  snprintf(tuned, sizeof tuned, "%s/tuned.tif", outdir);
  tr_error e = {{0}};

  /* all in memory: nothing to tell */
  told t = {0, 0};
  ASSERT_EQ_INT(fill(in_mem, (int64_t)4 << 30, record, &t, &e), TR_OK);
  ASSERT_EQ_INT(t.calls, 0);
  ASSERT_EQ_INT(n_mallopt, 0);

  const int64_t mem = least_mem(spilled);
  printf("  least --mem that fills the demo DEM in tiles of 128: %lld MiB\n", (long long)(mem >> 20));
  ASSERT(mem > 0);

  /* spilling, told to a recorder: once, mostly spilled; no mallopt */
  n_mallopt = 0;
  t = (told){0, 0};
  ASSERT_EQ_INT(fill(spilled, mem, record, &t, &e), TR_OK);
  ASSERT_EQ_INT(t.calls, 1);
  ASSERT_EQ_INT(t.mostly, 1);
  ASSERT_EQ_INT(n_mallopt, 0);
  ASSERT(rc_same_file(in_mem, spilled));

  /* spilling with no heap_spill (a library host's default): no mallopt */
  ASSERT_EQ_INT(fill(spilled, mem, NULL, NULL, &e), TR_OK);
  ASSERT_EQ_INT(n_mallopt, 0);
  ASSERT(rc_same_file(in_mem, spilled));

  /* terrafort's: glibc's one arena and the 256 KiB mmap threshold */
  ASSERT_EQ_INT(fill(tuned, mem, tr_heap_spill_apply, NULL, &e), TR_OK);
#ifdef __GLIBC__
  ASSERT_EQ_INT(n_mallopt, 2);
#ifdef M_ARENA_MAX
  ASSERT_EQ_INT(arena_max, 1);
#endif
  ASSERT_EQ_INT(mmap_threshold, 256 << 10);
#endif
  ASSERT(rc_same_file(in_mem, tuned));
  /* and not the mmap threshold where at least half the state stays */
  n_mallopt = 0;
  mmap_threshold = -1;
  tr_heap_spill_apply(0, NULL);
  ASSERT_EQ_INT(mmap_threshold, -1);
  remove(in_mem);
  remove(spilled);
  remove(tuned);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  GDALAllRegister();
  snprintf(demo, sizeof demo, "%s/demo.tif", argv[1]);
  snprintf(outdir, sizeof outdir, "%s/../out_heap_spill", argv[1]);
  mkdir(outdir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_caller_tunes_the_heap)};
  return tr_test_main(argc - 1, argv + 1, cases, 1);
}
