/*
 * test_outofcore.c - fill and flowgraph with --mem below what they keep in
 * memory (issue 13): the tile state beyond --mem is spilled to a file in
 * --tmp and read back, and the outputs must be the same bytes as the run
 * that kept everything in memory, for threads, tile sizes and ranks. The
 * spill file is unlinked when made, so the --tmp folder is empty during and
 * after every run, also one failed by an injected spill error or stopped by
 * SIGTERM. Too little --mem is refused at once with the minimum, too little
 * disk with the figures.
 *
 * --mem is set from the in-memory run's own figures (--aap-stats writes each
 * program's "state_store" line: the state it keeps and the fixed part):
 * fixed + state / 4 and fixed + state / 16, so a quarter and a sixteenth of
 * the state fits. The figures of the spilling runs show that it spilled and
 * read back, and that the state in memory stayed within the budget plus the
 * fragments running.
 */
#include <gdal.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_kit.h"
#include "tr_test.h"

static char tmpdir[600], mpirun[256];

/* One "state_store" line of --aap-stats. */
typedef struct {
  char prog[32];
  long long state, fixed, frag, budget, peak, spills, restores;
} ss_line;

static long long field(const char *line, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(line, k);
  return p ? atoll(p + strlen(k)) : -1;
}

/* The state-store lines of stats file `path`; their count, or -1. */
static int read_stats(const char *path, ss_line *out, int max) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[65536];
  int n = 0;
  while (n < max && fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "\"state_store\":{\"program\":\"");
    if (!p) continue;
    ss_line *l = &out[n++];
    p += strlen("\"state_store\":{\"program\":\"");
    size_t len = strcspn(p, "\"");
    snprintf(l->prog, sizeof l->prog, "%.*s", (int)len, p);
    l->state = field(line, "state_bytes");
    l->fixed = field(line, "fixed_bytes");
    l->frag = field(line, "frag_max_bytes");
    l->budget = field(line, "budget");
    l->peak = field(line, "peak_resident");
    l->spills = field(line, "spills");
    l->restores = field(line, "restores");
  }
  fclose(f);
  return n;
}

/* --mem so that 1/div of every stage's state fits beside its fixed part:
 * the state the in-memory run really kept (peak_resident; the runner's own
 * estimate, state_bytes, is an upper bound). */
static long long mem_for(const ss_line *l, int n, int div) {
  long long m = 0;
  for (int i = 0; i < n; i++) {
    /* at least the runner's minimum: 2 rounds running and one read back */
    long long share = l[i].peak / div, least = 3 * l[i].frag + 65536;
    if (l[i].fixed + (share > least ? share : least) > m) m = l[i].fixed + (share > least ? share : least);
  }
  return m;
}

/* A spilling run's figures: every line of a program in `must` spilled and
 * read back, within budget + (pinned + 1) fragments. */
static int check_spilled(const ss_line *l, int n, const char *must, int pinned, const char *what) {
  int seen = 0;
  for (int i = 0; i < n; i++) {
    if (!strstr(must, l[i].prog)) continue;
    seen++;
    if (l[i].budget <= 0 || l[i].spills <= 0 || l[i].restores <= 0 ||
        l[i].peak > l[i].budget + (long long)(pinned + 1) * l[i].frag) {
      fprintf(stderr, "%s: %s: budget %lld, spills %lld, restores %lld, peak %lld (fragment %lld)\n", what, l[i].prog,
              l[i].budget, l[i].spills, l[i].restores, l[i].peak, l[i].frag);
      return 0;
    }
  }
  if (!seen) fprintf(stderr, "%s: no state-store line of %s\n", what, must);
  return seen > 0;
}

/* The order product out of core: the streams (d8_up_perimeter, or d8_up
 * where even the perimeter program's rounds do not fit; the run's own
 * --streams here), then d8_order_cells, which keeps nothing per cell and
 * never spills. */
static int order_by_cells(const ss_line *l, int n, const char *what) {
  for (int i = 1; i < n; i++)
    if (!strcmp(l[i].prog, "d8_order_cells")) {
      if (!strncmp(l[i - 1].prog, "d8_up", 5) && l[i].spills == 0) return 1;
      break;
    }
  fprintf(stderr, "%s: the order did not come from the stream cells (the streams, then d8_order_cells)\n", what);
  return 0;
}

/* A 64 KiB tmpfs mounted at ck_outdir/name (into mnt): 0, or -1 where none
 * can be mounted (no privilege) */
static int small_tmpfs(char *mnt, size_t n, const char *name) {
  snprintf(mnt, n, "%s/%s", ck_outdir, name);
  mkdir(mnt, 0755);
  return mount("tmpfs", mnt, "tmpfs", 0, "size=64k") == 0 ? 0 : -1;
}

static int tmp_empty(const char *what) {
  const int n = rc_count_entries(tmpdir);
  if (n != 0) fprintf(stderr, "%s: %d entries left in %s\n", what, n, tmpdir);
  return n == 0;
}

/* fill of the demo DEM: in memory, then with --mem for a quarter and a
 * sixteenth of W, where fill_perimeter runs instead (nothing spilled), then
 * with a quarter or a sixteenth of its own state, which spills; for 1 and 2
 * threads, even and uneven tiles, and 2 ranks. */
static int test_fill_same_bytes(void) {
  const int threads[] = {1, 2}, tiles[] = {128, 100};
  for (int t = 0; t < 2; t++)
    for (int s = 0; s < 2; s++) {
      char c[4096];
      snprintf(c, sizeof c, "'%s' fill -q --threads %d --tile-size %d --aap-stats '%s' '%s/demo.tif' '%s'", ck_tf,
               threads[t], tiles[s], ck_out("ref.json"), ck_dir, ck_out("ref.tif"));
      ASSERT_EQ_INT(rc_run(c, NULL), 0);
      ss_line l[8];
      const int n = read_stats(ck_out("ref.json"), l, 8);
      ASSERT_EQ_INT(n, 1);
      /* the default --mem holds it: counted, never spilled */
      ASSERT(l[0].budget < 0 && l[0].spills == 0 && l[0].peak >= l[0].state / 2 && l[0].peak <= l[0].state);
      ASSERT(!strcmp(l[0].prog, "fill"));
      /* a quarter of W: fill_perimeter runs instead, whose state (the
       * tiles' perimeters) fits: nothing spilled, each tile read twice */
      snprintf(c, sizeof c,
               "'%s' fill -q --threads %d --tile-size %d --mem %lldB --tmp '%s' --aap-stats '%s' '%s/demo.tif' '%s'",
               ck_tf, threads[t], tiles[s], mem_for(l, n, 4), tmpdir, ck_out("ooc.json"), ck_dir, ck_out("ooc.tif"));
      ASSERT_EQ_INT(rc_run(c, NULL), 0);
      char what[160];
      snprintf(what, sizeof what, "fill, %d threads, tiles of %d, 1/4 of W in memory", threads[t], tiles[s]);
      ss_line o[8];
      ASSERT_EQ_INT(read_stats(ck_out("ooc.json"), o, 8), 1);
      ASSERT(!strcmp(o[0].prog, "fill_perimeter") && o[0].spills == 0 && o[0].peak <= o[0].state &&
             o[0].peak < l[0].state / 8);
      if (!rc_same_file(ck_out("ref.tif"), ck_out("ooc.tif"))) {
        fprintf(stderr, "%s: not the in-memory bytes\n", what);
        return 1;
      }
      ASSERT(tmp_empty(what));
      /* a quarter and a sixteenth of even that: the perimeters spill */
      for (int div = 4; div <= 16; div *= 4) {
        snprintf(c, sizeof c,
                 "'%s' fill -q --threads %d --tile-size %d --mem %lldB --tmp '%s' --aap-stats '%s' '%s/demo.tif' "
                 "'%s'",
                 ck_tf, threads[t], tiles[s], mem_for(o, 1, div), tmpdir, ck_out("ooc2.json"), ck_dir,
                 ck_out("ooc2.tif"));
        ASSERT_EQ_INT(rc_run(c, NULL), 0);
        snprintf(what, sizeof what, "fill, %d threads, tiles of %d, 1/%d of the perimeters in memory", threads[t],
                 tiles[s], div);
        ss_line o2[8];
        ASSERT(read_stats(ck_out("ooc2.json"), o2, 8) == 1 && check_spilled(o2, 1, "fill_perimeter", threads[t], what));
        if (!rc_same_file(ck_out("ref.tif"), ck_out("ooc2.tif"))) {
          fprintf(stderr, "%s: not the in-memory bytes\n", what);
          return 1;
        }
        ASSERT(tmp_empty(what));
      }
    }
  if (mpirun[0]) {
    /* each rank spills its own fragments: --mem is per rank */
    char c[4096];
    ss_line l[8];
    snprintf(c, sizeof c, "'%s' fill -q --threads 1 --tile-size 128 '%s/demo.tif' '%s'", ck_tf, ck_dir,
             ck_out("ref.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    /* rank 0's own figures in memory, for its share */
    snprintf(c, sizeof c, "%s -n 2 '%s' fill -q --threads 1 --tile-size 128 --aap-stats '%s' '%s/demo.tif' '%s'",
             mpirun, ck_tf, ck_out("ref.json"), ck_dir, ck_out("ref2.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT_EQ_INT(read_stats(ck_out("ref.json"), l, 8), 1);
    snprintf(c, sizeof c,
             "%s -n 2 '%s' fill -q --threads 1 --tile-size 128 --mem %lldB --tmp '%s' --aap-stats '%s' "
             "'%s/demo.tif' '%s'",
             mpirun, ck_tf, mem_for(l, 1, 4), tmpdir, ck_out("ooc.json"), ck_dir, ck_out("ooc.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ss_line o[8];
    ASSERT_EQ_INT(read_stats(ck_out("ooc.json"), o, 8), 1);
    ASSERT(!strcmp(o[0].prog, "fill_perimeter") && o[0].spills == 0);
    ASSERT(rc_same_file(ck_out("ref.tif"), ck_out("ooc.tif")));
    ASSERT(tmp_empty("fill, mpirun -n 2"));
    /* the perimeters spilled too, on each rank */
    snprintf(c, sizeof c,
             "%s -n 2 '%s' fill -q --threads 1 --tile-size 128 --mem %lldB --tmp '%s' --aap-stats '%s' "
             "'%s/demo.tif' '%s'",
             mpirun, ck_tf, mem_for(o, 1, 4), tmpdir, ck_out("ooc2.json"), ck_dir, ck_out("ooc2.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(read_stats(ck_out("ooc2.json"), o, 8) == 1 &&
           check_spilled(o, 1, "fill_perimeter", 1, "fill, mpirun -n 2, perimeters spilled"));
    ASSERT(rc_same_file(ck_out("ref.tif"), ck_out("ooc2.tif")));
    ASSERT(tmp_empty("fill, mpirun -n 2, perimeters spilled"));
  }
  return 0;
}

/* Writes beside reads on other threads, with a small GDAL cache: reading
 * evicts the output's dirty blocks and so writes them from the reading
 * thread, so every write holds the readers' lock. fill_perimeter assembles
 * on every thread while the others still load windows (without the lock 2
 * of 3 runs here had wrong blocks); the local runner writes finished tiles
 * while other threads read (without it 3 of 8 slope runs did). A 3000 x
 * 3000 resample of the demo, GDAL_CACHEMAX=2. */
static int test_small_gdal_cache(void) {
  char c[4096];
  snprintf(c, sizeof c, "gdal_translate -q -r bilinear -outsize 3000 3000 '%s/demo.tif' '%s'", ck_dir,
           ck_out("demo3k.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  snprintf(c, sizeof c, "GDAL_CACHEMAX=2 '%s' fill -q --threads 2 --aap-stats '%s' '%s' '%s'", ck_tf,
           ck_out("ref.json"), ck_out("demo3k.tif"), ck_out("ref3k.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ss_line l[8];
  ASSERT_EQ_INT(read_stats(ck_out("ref.json"), l, 8), 1);
  for (int k = 0; k < 3; k++) {
    snprintf(c, sizeof c, "GDAL_CACHEMAX=2 '%s' fill -q --threads 2 --mem %lldB --tmp '%s' --aap-stats '%s' '%s' '%s'",
             ck_tf, mem_for(l, 1, 2), tmpdir, ck_out("ooc.json"), ck_out("demo3k.tif"), ck_out("ooc3k.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ss_line o[8];
    ASSERT(read_stats(ck_out("ooc.json"), o, 8) == 1 && !strcmp(o[0].prog, "fill_perimeter"));
    if (!rc_same_file(ck_out("ref3k.tif"), ck_out("ooc3k.tif"))) {
      fprintf(stderr, "fill_perimeter with GDAL_CACHEMAX=2, run %d: not the in-memory bytes\n", k + 1);
      return 1;
    }
  }
  ASSERT(tmp_empty("fill, small GDAL cache"));
  snprintf(c, sizeof c, "'%s' slope -q --threads 1 '%s' '%s'", ck_tf, ck_out("demo3k.tif"), ck_out("ref3k.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  for (int k = 0; k < 8; k++) {
    snprintf(c, sizeof c, "GDAL_CACHEMAX=2 '%s' slope -q --threads 2 --tile-size 256 '%s' '%s'", ck_tf,
             ck_out("demo3k.tif"), ck_out("s3k.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    if (!rc_same_file(ck_out("ref3k.tif"), ck_out("s3k.tif"))) {
      fprintf(stderr, "slope on 2 threads with GDAL_CACHEMAX=2, run %d: not the bytes of one thread\n", k + 1);
      return 1;
    }
  }
  return 0;
}

/* The network as text, to compare two runs' features. */
static int network_csv(const char *gpkg, const char *csv) {
  char c[4096];
  unlink(csv);
  snprintf(c, sizeof c, "ogr2ogr -f CSV '%s' '%s' -lco GEOMETRY=AS_WKT", csv, gpkg);
  return rc_run(c, NULL);
}

static const char *const products[] = {"dir", "acc", "src", "ord", "w"};
#define NPRODUCTS 5

static int flowgraph(const char *prefix, const char *tag, const char *flags) {
  char c[8192];
  snprintf(c, sizeof c,
           "%s '%s' flowgraph -q --tile-size 128 --cache-mb 0 --threshold 1000 %s '%s/demo.tif' --dir '%s' --acc '%s' "
           "--streams '%s' "
           "--order '%s' "
           "--basins '%s' --network '%s' --aap-stats '%s'",
           prefix, ck_tf, flags, ck_dir, ck_out("dir.tif"), ck_out("acc.tif"), ck_out("src.tif"), ck_out("ord.tif"),
           ck_out("w.tif"), ck_out("net.gpkg"), ck_out("fg.json"));
  const int rc = rc_run(c, NULL);
  if (rc) return rc;
  for (int i = 0; i < NPRODUCTS; i++) {
    char a[64], b[64];
    snprintf(a, sizeof a, "%s.tif", products[i]);
    snprintf(b, sizeof b, "%s_%s.tif", products[i], tag);
    if (rename(ck_out(a), ck_out(b))) return -1;
  }
  char csv[64];
  snprintf(csv, sizeof csv, "net_%s.csv", tag);
  return network_csv(ck_out("net.gpkg"), ck_out(csv)) ? -1 : 0;
}

static int same_products(const char *a, const char *b, const char *what) {
  for (int i = 0; i < NPRODUCTS; i++) {
    char x[64], y[64];
    snprintf(x, sizeof x, "%s_%s.tif", products[i], a);
    snprintf(y, sizeof y, "%s_%s.tif", products[i], b);
    if (!rc_same_file(ck_out(x), ck_out(y))) {
      fprintf(stderr, "%s: %s differs\n", what, products[i]);
      return 0;
    }
  }
  char x[64], y[64];
  snprintf(x, sizeof x, "net_%s.csv", a);
  snprintf(y, sizeof y, "net_%s.csv", b);
  if (!rc_same_file(ck_out(x), ck_out(y))) {
    fprintf(stderr, "%s: the network differs\n", what);
    return 0;
  }
  return 1;
}

/* Every flowgraph product from the raw DEM (fill, flats, directions, then
 * accumulation, streams, order, basins, network): the same bytes with a
 * quarter and a sixteenth of each stage's state in memory, on 2 threads and
 * on 2 ranks; the fill stage ran fill_perimeter (W did not fit) and the
 * accumulation's state really spilled. (No input
 * tile cache, so that every stage's fixed part is about the same and one
 * --mem leaves each stage about its share. Threshold 1000: the network's
 * stream cells, which every rank keeps at 80 bytes each within --mem, fit
 * beside so small a --mem; at 100 they are 117,000, 9 MiB.) */
static int test_flowgraph_same_bytes(void) {
  ASSERT_EQ_INT(flowgraph("", "ref", "--threads 2"), 0);
  ss_line l[16];
  const int n = read_stats(ck_out("fg.json"), l, 16);
  ASSERT(n >= 4); /* fill, flowdir, then the products' programs */
  for (int div = 4; div <= 16; div *= 4) {
    char flags[1024], tag[16], what[128];
    snprintf(flags, sizeof flags, "--threads 2 --mem %lldB --tmp '%s'", mem_for(l, n, div), tmpdir);
    snprintf(tag, sizeof tag, "d%d", div);
    snprintf(what, sizeof what, "flowgraph, 1/%d of the state in memory", div);
    ASSERT_EQ_INT(flowgraph("", tag, flags), 0);
    ss_line o[16];
    const int m = read_stats(ck_out("fg.json"), o, 16);
    /* the order from the stream cells: d8_up's order stage becomes
     * d8_order_cells, which reads the run's --streams */
    ASSERT_EQ_INT(m, n);
    ASSERT(!strcmp(l[0].prog, "fill") && !strcmp(o[0].prog, "fill_perimeter"));
    /* the flats: flowdir_compact, with less state than flowdir */
    if (strcmp(l[1].prog, "flowdir") || strcmp(o[1].prog, "flowdir_compact") || o[1].state * 2 > l[1].state) {
      fprintf(stderr, "%s: the directions ran %s (state %lld; in memory %s, %lld)\n", what, o[1].prog, o[1].state,
              l[1].prog, l[1].state);
      return 1;
    }
    ASSERT(order_by_cells(o, m, what));
    ASSERT(check_spilled(o, m, "d8_up_perimeter", 2, what));
    ASSERT(same_products("ref", tag, what));
    ASSERT(tmp_empty(what));
  }
  if (mpirun[0]) {
    char prefix[512], flags[1024];
    snprintf(prefix, sizeof prefix, "%s -n 2", mpirun);
    /* rank 0's own figures in memory, for its share */
    ASSERT_EQ_INT(flowgraph(prefix, "mpiref", "--threads 1"), 0);
    ss_line lm[16], o[16];
    const int nm = read_stats(ck_out("fg.json"), lm, 16);
    ASSERT_EQ_INT(nm, n);
    snprintf(flags, sizeof flags, "--threads 1 --mem %lldB --tmp '%s'", mem_for(lm, nm, 4), tmpdir);
    ASSERT_EQ_INT(flowgraph(prefix, "mpi", flags), 0);
    const int mo = read_stats(ck_out("fg.json"), o, 16);
    ASSERT(mo == nm && order_by_cells(o, mo, "flowgraph, mpirun -n 2, 1/4 in memory") &&
           check_spilled(o, mo, "fill d8_up_perimeter", 1, "flowgraph, mpirun -n 2, 1/4 in memory"));
    ASSERT(same_products("ref", "mpiref", "flowgraph, mpirun -n 2 in memory"));
    ASSERT(same_products("ref", "mpi", "flowgraph, mpirun -n 2, 1/4 in memory"));
    ASSERT(tmp_empty("flowgraph, mpirun -n 2"));
  }
  return 0;
}

/* Accumulation, stream cells, order and basins from --dir-in with --mem below
 * the state of d8_up and d8_basins but above what their perimeter twins need
 * (half of the in-memory run's estimate of d8_up's state, per process): the
 * runner runs the twins for those products (the basins' links read a scratch
 * accumulation, a fourth d8_up stage), and the order comes from the stream
 * cells (d8_order_cells, reading the run's --streams); every
 * product is the same bytes as the in-memory run, on 2 threads and on 2 ranks
 * (each given half of its own in-memory figure). Threshold 500: the links'
 * 59,000 stream cells (80 bytes each, within --mem) fit beside so small a
 * --mem; at 50 they are 194,000, 15 MiB. */
static int test_flowgraph_perimeter(void) {
  char c[8192], dir[700];
  snprintf(dir, sizeof dir, "%s", ck_out("pdir.tif"));
  snprintf(c, sizeof c, "'%s' flowgraph -q '%s/demo.tif' --dir '%s'", ck_tf, ck_dir, dir);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  /* the perimeter units of the run's tiles of 128: sum of 2 x (rows + cols) + 4 */
  GDALDatasetH ds = GDALOpen(dir, GA_ReadOnly);
  ASSERT(ds != NULL);
  const long long R = GDALGetRasterYSize(ds), C = GDALGetRasterXSize(ds);
  GDALClose(ds);
  long long units = 0;
  for (long long r0 = 0; r0 < R; r0 += 128)
    for (long long c0 = 0; c0 < C; c0 += 128)
      units += 2 * ((R - r0 < 128 ? R - r0 : 128) + (C - c0 < 128 ? C - c0 : 128)) + 4;
  /* the stages, in memory and out of core (the order then reads the
   * run's --streams) */
  static const char *const prod[5] = {"acc", "streams", "order", "links' accumulation", "basins"},
                           *const names[4] = {"pacc", "psrc", "pord", "pw"};
  static const char *const runs[2][5] = {{"d8_up", "d8_up", "d8_up", "d8_up", "d8_basins"},
                                         {"d8_up_perimeter", "d8_up_perimeter", "d8_order_cells", "d8_up_perimeter",
                                          "d8_basins_perimeter"}};
  ss_line mem_run[8];
  memset(mem_run, 0, sizeof mem_run);
  for (int run = 0; run < 4; run++) {
    const int mpi = run >= 2, twin = run % 2;
    if (mpi && !mpirun[0]) break;
    char flags[1024];
    if (twin)
      snprintf(flags, sizeof flags, "--threads %d --mem %lldB --tmp '%s'", mpi ? 1 : 2,
               mem_run[0].fixed + mem_run[0].state / 2, tmpdir);
    else
      snprintf(flags, sizeof flags, "--threads %d", mpi ? 1 : 2);
    snprintf(c, sizeof c,
             "%s%s '%s' flowgraph -q --tile-size 128 %s --dir-in '%s' --acc '%s' --streams '%s' --order '%s' "
             "--basins '%s' --threshold 500 --aap-stats '%s'",
             mpi ? mpirun : "", mpi ? " -n 2" : "", ck_tf, flags, dir, ck_out("pacc.tif"), ck_out("psrc.tif"),
             ck_out("pord.tif"), ck_out("pw.tif"), ck_out("fg.json"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ss_line o[8];
    ASSERT_EQ_INT(read_stats(ck_out("fg.json"), o, 8), 5);
    if (!twin) memcpy(mem_run, o, sizeof o);
    for (int k = 0; k < 5; k++) {
      const char *want = runs[twin][k];
      if (!strcmp(want, "d8_order_cells") && (o[k].spills != 0 || o[k].peak != 0)) {
        fprintf(stderr, "run %d: the order (d8_order_cells) kept %lld bytes of state, spilled %lld times\n", run,
                o[k].peak, o[k].spills);
        return 1;
      }
      /* the perimeter programs keep their summaries in memory: nothing goes to --tmp */
      if (twin && strstr(want, "perimeter") && (o[k].spills != 0 || o[k].restores != 0)) {
        fprintf(stderr, "run %d: %s (%s) spilled %lld times\n", run, prod[k], want, o[k].spills);
        return 1;
      }
      /* and at most 40 (labels: 16) bytes per perimeter cell (man terrafort-flowgraph) */
      const long long most = (strstr(want, "basins") ? 16 : 40) * units;
      if (twin && strstr(want, "perimeter") && (o[k].peak <= 0 || o[k].peak > most)) {
        fprintf(stderr, "run %d: %s (%s) kept %lld bytes of state, more than %lld\n", run, prod[k], want,
                o[k].peak, most);
        return 1;
      }
      if (strcmp(o[k].prog, want)) {
        fprintf(stderr, "run %d: %s ran %s, not %s\n", run, prod[k], o[k].prog, want);
        return 1;
      }
    }
    for (int k = 0; k < 4; k++) {
      char a[64], b[64], x[700];
      snprintf(a, sizeof a, "%s.tif", names[k]);
      snprintf(b, sizeof b, "%s_%d.tif", names[k], run);
      ASSERT_EQ_INT(rename(ck_out(a), ck_out(b)), 0);
      snprintf(a, sizeof a, "%s_0.tif", names[k]);
      snprintf(x, sizeof x, "%s", ck_out(a));
      if (run > 0 && !rc_same_file(x, ck_out(b))) {
        fprintf(stderr, "run %d: %s differs from the in-memory run\n", run, prod[k == 3 ? 4 : k]);
        return 1;
      }
    }
    ASSERT(tmp_empty("flowgraph's perimeter program"));
  }
  return 0;
}

/* A weight band of `type` over the grid of `like`, NoData on one cell in 11:
 * kind 0 whole numbers from -50 to 149 (Int16's range and Float32's alike);
 * 1 tenths from 0 to 1.9 (as floats: multiples of 2^-27, summing to about
 * 2^21); 2 the same with 1e8 on one cell in 13 (sums far beyond 2^24, where
 * a double no longer holds every multiple of 2^-27: they round). */
static int make_weights(const char *like, const char *path, GDALDataType type, int kind) {
  GDALDatasetH src = GDALOpen(like, GA_ReadOnly);
  if (!src) return 1;
  const int R = GDALGetRasterYSize(src), C = GDALGetRasterXSize(src);
  double gt[6];
  GDALGetGeoTransform(src, gt);
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, C, R, 1, type, NULL);
  if (!ds) return GDALClose(src), 1;
  GDALSetGeoTransform(ds, gt);
  GDALSetProjection(ds, GDALGetProjectionRef(src));
  GDALClose(src);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  GDALSetRasterNoDataValue(b, -32768);
  float *row = malloc(sizeof *row * (size_t)C);
  int rc = row ? 0 : 1;
  for (int r = 0; r < R && !rc; r++) {
    for (int c = 0; c < C; c++) {
      const int n = (r * 31 + c * 17) % 200 - 50;
      row[c] = (r * 7 + c * 13) % 11 == 0                    ? -32768.0f
               : kind == 0                                    ? (float)n
               : kind == 2 && (r * 5 + c * 3) % 13 == 0       ? 1e8f
               : kind == 3 && (r * 5 + c * 3) % 13 == 0       ? 1e30f
                                                              : (float)((n + 50) % 20) * 0.1f;
    }
    rc = GDALRasterIO(b, GF_Write, 0, r, C, 1, row, C, 1, GDT_Float32, 0, 0) != CE_None;
  }
  free(row);
  GDALClose(ds);
  return rc;
}

/* Weighted accumulation out of core: weights whose every sum a double holds
 * exactly run d8_up_perimeter, in memory-sized state and nothing spilled -
 * an Int16 band (whole numbers: known from the type) and a Float32 band of
 * tenths (read to see: multiples of 2^-27 summing far below 2^51); a
 * Float32 band that also holds 1e8 (sums a double would round: multiples of
 * 2^-27 summing past 2^51) runs d8_up_wide, whose 128-bit sums are exact, in
 * memory and out of core alike, and spills nothing; one that holds 1e30
 * (2^126 units of 2^-27) stays with d8_up, which spills. All give the
 * in-memory run's bytes, in one process and under mpirun -n 2. With the 1e8
 * band the Strahler order comes from d8_up_wide's stream cells, in memory
 * too: the same bytes with --mem. */
static int test_flowgraph_whole_weights(void) {
  static const char *const names[] = {"Int16 whole", "Float32 tenths", "Float32 tenths and 1e8",
                                      "Float32 tenths and 1e30"};
  static const char *const in_memory[] = {"d8_up", "d8_up", "d8_up_wide", "d8_up"},
                           *const out_of_core[] = {"d8_up_perimeter", "d8_up_perimeter", "d8_up_wide", "d8_up"};
  char c[8192], dir[700], wk[4][700];
  ss_line d8up[2];
  memset(d8up, 0, sizeof d8up);
  snprintf(dir, sizeof dir, "%s", ck_out("wdir.tif"));
  snprintf(c, sizeof c, "'%s' flowgraph -q '%s/demo.tif' --dir '%s'", ck_tf, ck_dir, dir);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  for (int k = 0; k < 4; k++) {
    snprintf(wk[k], sizeof wk[k], "%s/w_kind%d.tif", ck_outdir, k);
    ASSERT_EQ_INT(make_weights(dir, wk[k], k ? GDT_Float32 : GDT_Int16, k), 0);
  }
  for (int fl = 0; fl < 4; fl++) {
    const char *w = wk[fl], *twin = out_of_core[fl];
    ss_line mem_run[2];
    memset(mem_run, 0, sizeof mem_run);
    char ref[700];
    snprintf(ref, sizeof ref, "%s/wacc_ref%d.tif", ck_outdir, fl);
    /* runs 0 and 2 in memory (one process, mpirun -n 2), 1 and 3 with --mem
     * at the fixed part and half the state of the run before */
    for (int run = 0; run < 4; run++) {
      const int mpi = run >= 2, ooc = run % 2;
      if (mpi && !mpirun[0]) break;
      char flags[1024];
      snprintf(flags, sizeof flags, "--threads %d", mpi ? 1 : 2);
      /* d8_up_wide runs in memory too: its --mem is half of what d8_up would
       * keep (the tenths' in-memory run, the same band type) */
      const ss_line *m = fl == 2 ? &d8up[mpi] : &mem_run[0];
      if (ooc)
        snprintf(flags, sizeof flags, "--threads %d --mem %lldB --tmp '%s'", mpi ? 1 : 2, m->fixed + m->state / 2,
                 tmpdir);
      snprintf(c, sizeof c,
               "%s%s '%s' flowgraph -q --tile-size 128 %s --dir-in '%s' --weights '%s' --acc '%s' --aap-stats '%s'",
               mpi ? mpirun : "", mpi ? " -n 2" : "", ck_tf, flags, dir, w, run ? ck_out("wacc.tif") : ref,
               ck_out("w.json"));
      ASSERT_EQ_INT(rc_run(c, NULL), 0);
      ss_line o[2];
      ASSERT_EQ_INT(read_stats(ck_out("w.json"), o, 2), 1);
      if (!ooc) {
        memcpy(mem_run, o, sizeof o);
        if (fl == 1) d8up[mpi] = o[0];
        if (strcmp(o[0].prog, in_memory[fl]) || o[0].spills != 0) {
          fprintf(stderr, "%s weights, run %d: ran %s in memory (spills %lld), not %s\n", names[fl], run, o[0].prog,
                  o[0].spills, in_memory[fl]);
          return 1;
        }
      } else if (strcmp(o[0].prog, twin)) {
        fprintf(stderr, "%s weights, run %d: ran %s, not %s\n", names[fl], run, o[0].prog, twin);
        return 1;
      } else {
        /* the perimeter programs keep their summaries in memory; d8_up's state does not fit */
        ASSERT(fl == 3 ? o[0].spills > 0 : o[0].spills == 0);
      }
      if (run && !rc_same_file(ref, ck_out("wacc.tif"))) {
        fprintf(stderr, "%s weights, run %d: accumulation differs from the in-memory run\n", names[fl], run);
        return 1;
      }
      ASSERT(tmp_empty("weighted accumulation"));
    }
  }
  /* the order with the 1e8 band: from d8_up_wide's stream cells in memory
   * and with --mem alike */
  char ord_ref[700];
  snprintf(ord_ref, sizeof ord_ref, "%s/word_ref.tif", ck_outdir);
  for (int run = 0; run < 2; run++) {
    char flags[1024] = "--threads 2";
    if (run) snprintf(flags, sizeof flags, "--threads 2 --mem 110M --tmp '%s'", tmpdir);
    snprintf(c, sizeof c,
             "'%s' flowgraph -q --tile-size 128 %s --dir-in '%s' --weights '%s' --order '%s' --threshold 1e9 "
             "--aap-stats '%s'",
             ck_tf, flags, dir, wk[2], run ? ck_out("word.tif") : ord_ref, ck_out("w.json"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ss_line o[4];
    ASSERT_EQ_INT(read_stats(ck_out("w.json"), o, 4), 2);
    if (strcmp(o[0].prog, "d8_up_wide") || strcmp(o[1].prog, "d8_order_cells")) {
      fprintf(stderr, "order with the 1e8 band, run %d: ran %s, %s\n", run, o[0].prog, o[1].prog);
      return 1;
    }
    ASSERT(tmp_empty("weighted order"));
  }
  ASSERT(rc_same_file(ord_ref, ck_out("word.tif")));
  /* more stream cells than --mem holds: no rounded fallback, a clear error
   * and no output */
  char c0[4096], err[700];
  snprintf(c0, sizeof c0,
           "'%s' flowgraph -q --tile-size 128 --threads 2 --mem 110M --tmp '%s' --dir-in '%s' --weights '%s' --order '%s' "
           "--threshold 0.001",
           ck_tf, tmpdir, dir, wk[2], ck_out("word0.tif"));
  snprintf(err, sizeof err, "%s", ck_out("word0.err"));
  ASSERT_EQ_INT(rc_run(c0, err), 7);
  ASSERT(strstr(rc_slurp(err), "stream cells come from exact sums") != NULL);
  ASSERT(access(ck_out("word0.tif"), F_OK) != 0);
  ASSERT(tmp_empty("weighted order refused"));
  return 0;
}

/* Strahler order out of core from the stream cells: with --mem below
 * d8_up's state, --order runs the streams (d8_up_perimeter), orders the
 * stream cells in memory and writes the tiles (d8_order_cells, nothing kept
 * per cell) - the in-memory run's bytes, with and without weights (Float32
 * tenths: the streams then count them, as d8_up's order does), in one process
 * and under mpirun -n 2. With threshold 1 every cell is a stream cell, more
 * than that --mem holds: d8_up computes the order after all, the same bytes.
 * The scratch streams raster beside the output is gone after every run. */
static int test_flowgraph_order_cells(void) {
  char c[8192], dir[700], w[700], odir[700];
  snprintf(odir, sizeof odir, "%s", ck_out("order"));
  mkdir(odir, 0755);
  snprintf(dir, sizeof dir, "%s", ck_out("odir.tif"));
  snprintf(w, sizeof w, "%s", ck_out("ow.tif"));
  snprintf(c, sizeof c, "'%s' flowgraph -q '%s/demo.tif' --dir '%s'", ck_tf, ck_dir, dir);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT_EQ_INT(make_weights(dir, w, GDT_Float32, 1), 0);
  static const struct {
    const char *extra, *last; /* options; the program of the order's last stage */
    int mpi, streams;         /* under mpirun; --streams asked too (a GeoTIFF: the order reads it) */
  } cases[] = {{"--threshold 100", "d8_order_cells", 0, 0},
               {"--threshold 100", "d8_order_cells", 1, 0},
               {"--threshold 100 --weights", "d8_order_cells", 0, 0},
               {"--threshold 100", "d8_order_cells", 0, 1},
               {"--threshold 1", "d8_up", 0, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const int mpi = cases[k].mpi, weighted = strstr(cases[k].extra, "weights") != NULL;
    if (mpi && !mpirun[0]) continue;
    char opts[1024], ref[700];
    snprintf(opts, sizeof opts, "%s%s%s%s%s%s%s", cases[k].extra, weighted ? " '" : "", weighted ? w : "",
             weighted ? "'" : "", cases[k].streams ? " --streams '" : "", cases[k].streams ? ck_out("ostreams.tif") : "",
             cases[k].streams ? "'" : "");
    snprintf(ref, sizeof ref, "%s/oref%zu.tif", ck_outdir, k);
    for (int ooc = 0; ooc < 2; ooc++) {
      ss_line o[4];
      char flags[1024];
      flags[0] = 0;
      if (ooc) {
        /* half of d8_up's state in memory: the in-memory run's figures (its
         * order stage, the last) */
        const int nm = read_stats(ck_out("o.json"), o, 4);
        ASSERT_EQ_INT(nm, 1 + cases[k].streams);
        snprintf(flags, sizeof flags, "--mem %lldB --tmp '%s'", o[nm - 1].fixed + o[nm - 1].state / 2, tmpdir);
      }
      snprintf(c, sizeof c,
               "%s%s '%s' flowgraph -q --tile-size 128 --threads %d %s %s --dir-in '%s' --order '%s' --aap-stats '%s'",
               mpi ? mpirun : "", mpi ? " -n 2" : "", ck_tf, mpi ? 1 : 2, opts, flags, dir,
               ooc ? ck_out("order/oord.tif") : ref, ck_out("o.json"));
      ASSERT_EQ_INT(rc_run(c, NULL), 0);
      if (ooc && rc_count_entries(odir) != 1) {
        fprintf(stderr, "order, %s: %d files beside the output, not 1 (a scratch raster left?)\n", cases[k].extra,
                rc_count_entries(odir));
        return 1;
      }
      /* the user's streams stage comes first; the order then reads them
       * rather than making its own */
      const int n0 = read_stats(ck_out("o.json"), o, 4), n = n0 - cases[k].streams;
      if (cases[k].streams) memmove(o, o + 1, sizeof o[0] * 3);
      if (!ooc) {
        ASSERT(n == 1 && !strcmp(o[0].prog, "d8_up"));
        continue;
      }
      if (cases[k].streams) {
        if (n != 1) {
          fprintf(stderr, "order with --streams: %d stages of its own, not 1 (the streams made twice?)\n", n);
          return 1;
        }
        ASSERT(!strcmp(o[0].prog, "d8_order_cells") && o[0].spills == 0 && o[0].peak == 0);
        ASSERT(rc_same_file(ref, ck_out("order/oord.tif")));
        ASSERT(tmp_empty("order from the user's streams"));
        continue;
      }
      if (n != 2 || strncmp(o[0].prog, "d8_up", 5) || strcmp(o[1].prog, cases[k].last)) {
        fprintf(stderr, "order, %s%s: %d stages (%s, %s), not the streams then %s\n", cases[k].extra,
                mpi ? ", mpirun -n 2" : "", n, n > 0 ? o[0].prog : "-", n > 1 ? o[1].prog : "-", cases[k].last);
        return 1;
      }
      if (!strcmp(cases[k].last, "d8_order_cells")) ASSERT(o[1].spills == 0 && o[1].peak == 0);
      if (!rc_same_file(ref, ck_out("order/oord.tif"))) {
        fprintf(stderr, "order, %s%s: differs from the in-memory run\n", cases[k].extra, mpi ? ", mpirun -n 2" : "");
        return 1;
      }
      ASSERT(tmp_empty("order from the stream cells"));
    }
  }
  return 0;
}

/* A spill that fails mid-run (an injected I/O error), and SIGTERM mid-run:
 * a clear error, no output, nothing in --tmp. fill runs with --epsilon here:
 * that is the windowed program, which spills W, while flat fill out of core
 * runs fill_perimeter, whose state seldom needs to. */
static int test_failures_leave_nothing(void) {
  char c[4096], err[1024];
  snprintf(err, sizeof err, "%s/ooc.stderr", ck_outdir);
  snprintf(c, sizeof c, "'%s' fill -q --epsilon --threads 2 --tile-size 128 --aap-stats '%s' '%s/demo.tif' '%s'", ck_tf,
           ck_out("ref.json"), ck_dir, ck_out("ref.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ss_line l[8];
  ASSERT_EQ_INT(read_stats(ck_out("ref.json"), l, 8), 1);
  const long long mem = mem_for(l, 1, 16);
  unlink(ck_out("bad.tif"));
  snprintf(c, sizeof c,
           "'%s' fill --epsilon --threads 2 --tile-size 128 --mem %lldB --tmp '%s' --inject spill-fail:after=5 '%s/demo.tif' "
           "'%s'",
           ck_tf, mem, tmpdir, ck_dir, ck_out("bad.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 4);
  ASSERT(strstr(rc_slurp(err), "cannot spill state") != NULL);
  ASSERT(access(ck_out("bad.tif"), F_OK) != 0);
  ASSERT(tmp_empty("fill, failed spill"));

  /* flowgraph: a failure in a later stage leaves none of the products
   * (--mem from its own stages' figures in memory) */
  snprintf(c, sizeof c,
           "'%s' flowgraph -q --threads 2 --tile-size 128 --aap-stats '%s' '%s/demo.tif' --acc '%s' --basins '%s'",
           ck_tf, ck_out("fgref.json"), ck_dir, ck_out("ok_acc.tif"), ck_out("ok_w.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ss_line lf[16];
  const int nf = read_stats(ck_out("fgref.json"), lf, 16);
  ASSERT(nf >= 3);
  snprintf(c, sizeof c,
           "'%s' flowgraph --threads 2 --tile-size 128 --mem %lldB --tmp '%s' --inject spill-fail:after=40 "
           "'%s/demo.tif' --acc '%s' --basins '%s'",
           ck_tf, mem_for(lf, nf, 16), tmpdir, ck_dir, ck_out("bad_acc.tif"), ck_out("bad_w.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 4);
  ASSERT(strstr(rc_slurp(err), "cannot spill state") != NULL);
  ASSERT(access(ck_out("bad_acc.tif"), F_OK) != 0 && access(ck_out("bad_w.tif"), F_OK) != 0);
  ASSERT(tmp_empty("flowgraph, failed spill"));

  /* SIGTERM mid-run (its one worker slowed down 40 times, so the run lasts
   * seconds; a shell's background job ignores SIGINT, so SIGTERM, which
   * terrafort handles the same way): exit 8, and the folder was empty while
   * it ran */
  unlink(ck_out("int.tif"));
  snprintf(c, sizeof c,
           "'%s' fill -q --epsilon --threads 1 --tile-size 128 --mem %lldB --tmp '%s' --inject slow:worker=0,factor=40 "
           "'%s/demo.tif' '%s' & pid=$!; sleep 1.5; n=$(ls -A '%s' | wc -l); kill -TERM $pid; wait $pid; rc=$?; "
           "[ \"$n\" -eq 0 ] || rc=99; exit $rc",
           ck_tf, mem, tmpdir, ck_dir, ck_out("int.tif"), tmpdir);
  ASSERT_EQ_INT(rc_run(c, err), 8);
  ASSERT(access(ck_out("int.tif"), F_OK) != 0);
  ASSERT(tmp_empty("fill, SIGTERM"));

  /* SIGINT, as Ctrl-C sends it (from a parent that does not ignore it, as
   * a shell's background job would), and SIGKILL, which nothing can catch:
   * the spill file was never in the folder */
  const char *sigs[] = {"INT", "KILL"};
  for (int k = 0; k < 2; k++) {
    snprintf(c, sizeof c,
             "/usr/bin/python3 -c \"import subprocess, signal, sys, time, os\n"
             "p = subprocess.Popen(sys.argv[1:])\ntime.sleep(1.5)\nn = len(os.listdir('%s'))\n"
             "p.send_signal(signal.SIG%s)\nrc = p.wait()\nsys.exit(99 if n else (128 - rc if rc < 0 else rc))\" "
             "'%s' fill -q --epsilon --threads 1 --tile-size 128 --mem %lldB --tmp '%s' --inject slow:worker=0,factor=40 "
             "'%s/demo.tif' '%s'",
             tmpdir, sigs[k], ck_tf, mem, tmpdir, ck_dir, ck_out("int.tif"));
    ASSERT_EQ_INT(rc_run(c, err), k ? 128 + SIGKILL : 8);
    ASSERT(access(ck_out("int.tif"), F_OK) != 0);
    ASSERT(tmp_empty(sigs[k]));
  }
  return 0;
}

/* Too little --mem for the rounds running (or a local kernel's tile
 * buffers): exit 7 at once, with the minimum; a local kernel within --mem
 * gives the same bytes. A --tmp that is not a folder, or too small for the spill (a
 * 64 KiB tmpfs; needs root, skipped otherwise): exit 4 with the figures
 * (fill --epsilon, which spills W). */
static int test_refusals(void) {
  char c[4096], err[1024];
  snprintf(err, sizeof err, "%s/ooc.stderr", ck_outdir);
  snprintf(c, sizeof c, "'%s' fill --mem 1M '%s/demo.tif' '%s'", ck_tf, ck_dir, ck_out("small.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 7);
  ASSERT(strstr(rc_slurp(err), "needs at least") && strstr(rc_slurp(err), "--mem 1 MiB"));
  ASSERT(access(ck_out("small.tif"), F_OK) != 0);
  /* a local kernel streams its tiles: --mem only has to hold the tile buffers */
  snprintf(c, sizeof c, "'%s' slope --mem 1M '%s/demo.tif' '%s'", ck_tf, ck_dir, ck_out("small.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 7);
  ASSERT(strstr(rc_slurp(err), "needs at least") && strstr(rc_slurp(err), "--mem is 1 MiB"));
  ASSERT(access(ck_out("small.tif"), F_OK) != 0);
  /* under 1 MiB the message gives the --mem asked for, not "0 MiB" */
  snprintf(c, sizeof c, "'%s' fill --mem 200K '%s/demo.tif' '%s'", ck_tf, ck_dir, ck_out("small.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 7);
  ASSERT(strstr(rc_slurp(err), "--mem 200 KiB"));
  ASSERT(access(ck_out("small.tif"), F_OK) != 0);
  snprintf(c, sizeof c, "'%s' slope -q '%s/demo.tif' '%s' && '%s' slope -q --mem 90M '%s/demo.tif' '%s'", ck_tf, ck_dir,
           ck_out("slope_a.tif"), ck_tf, ck_dir, ck_out("slope_b.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(rc_same_file(ck_out("slope_a.tif"), ck_out("slope_b.tif")));
  snprintf(c, sizeof c, "'%s' fill --mem 0x '%s/demo.tif' '%s'", ck_tf, ck_dir, ck_out("small.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 2);
  ASSERT(strstr(rc_slurp(err), "is not a size") != NULL);

  snprintf(c, sizeof c, "'%s' fill -q --epsilon --tile-size 128 --aap-stats '%s' '%s/demo.tif' '%s'", ck_tf, ck_out("ref.json"),
           ck_dir, ck_out("ref.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ss_line l[8];
  ASSERT_EQ_INT(read_stats(ck_out("ref.json"), l, 8), 1);
  snprintf(c, sizeof c, "'%s' fill --epsilon --tile-size 128 --mem %lldB --tmp '%s/none' '%s/demo.tif' '%s'", ck_tf,
           mem_for(l, 1, 16), ck_outdir, ck_dir, ck_out("small.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 4);
  ASSERT(strstr(rc_slurp(err), "none': No such file or directory") != NULL);
  ASSERT(access(ck_out("small.tif"), F_OK) != 0);
  /* a --tmp given is checked even when the run fits in memory and would not spill */
  snprintf(c, sizeof c, "'%s' fill -q --tmp '%s/none' '%s/demo.tif' '%s'", ck_tf, ck_outdir, ck_dir,
           ck_out("small.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 4);
  ASSERT(strstr(rc_slurp(err), "--tmp") && strstr(rc_slurp(err), "No such file or directory"));
  ASSERT(access(ck_out("small.tif"), F_OK) != 0);
  /* the stream network keeps its stream cells in memory: at threshold 1
   * (every cell of demo.tif, 1.9 million) they do not fit 130 MiB, which
   * the accumulation stage before it fits; at 100 they do */
  snprintf(c, sizeof c, "'%s' flowgraph -q '%s/demo.tif' --dir '%s'", ck_tf, ck_dir, ck_out("ndir.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  for (int thr = 1; thr <= 100; thr += 99) {
    unlink(ck_out("net.gpkg"));
    unlink(ck_out("nw.tif"));
    snprintf(c, sizeof c, "'%s' flowgraph -q --dir-in '%s' --network '%s' --basins '%s' --threshold %d --mem 130M",
             ck_tf, ck_out("ndir.tif"), ck_out("net.gpkg"), ck_out("nw.tif"), thr);
    ASSERT_EQ_INT(rc_run(c, err), thr == 1 ? 7 : 0);
    if (thr == 1) {
      ASSERT(strstr(rc_slurp(err), "stream cells") && strstr(rc_slurp(err), "--threshold"));
      ASSERT(access(ck_out("net.gpkg"), F_OK) != 0 && access(ck_out("nw.tif"), F_OK) != 0);
    } else {
      ASSERT(access(ck_out("net.gpkg"), F_OK) == 0 && access(ck_out("nw.tif"), F_OK) == 0);
    }
  }
  snprintf(c, sizeof c, "'%s' flowgraph -q --tmp '%s/demo.tif' '%s/demo.tif' --acc '%s'", ck_tf, ck_dir, ck_dir,
           ck_out("small.tif"));
  ASSERT_EQ_INT(rc_run(c, err), 4);
  ASSERT(strstr(rc_slurp(err), "is not a folder") != NULL);
  ASSERT(access(ck_out("small.tif"), F_OK) != 0);

  char mnt[700];
  if (small_tmpfs(mnt, sizeof mnt, "mnt_small")) {
    printf("skip: cannot mount a tmpfs here\n");
    return 0;
  }
  snprintf(c, sizeof c, "'%s' fill --epsilon --tile-size 128 --mem %lldB --tmp '%s' '%s/demo.tif' '%s'", ck_tf, mem_for(l, 1, 16),
           mnt, ck_dir, ck_out("small.tif"));
  const int rc = rc_run(c, err);
  const int entries = rc_count_entries(mnt);
  umount(mnt);
  const char *e = rc_slurp(err);
  if (rc != 4 || !strstr(e, "does not fit in") || !strstr(e, "GiB free") || entries != 0) {
    fprintf(stderr, "small --tmp: exit %d, %d entries, stderr: %s\n", rc, entries, e);
    return 1;
  }
  ASSERT(access(ck_out("small.tif"), F_OK) != 0);
  return 0;
}

/* The demo DEM resampled to size x size, as output `name`: 0 or gdal_translate's status. */
static int demo_resized(int size, const char *name) {
  char c[4096];
  snprintf(c, sizeof c, "gdal_translate -q -r bilinear -outsize %d %d '%s/demo.tif' '%s'", size, size, ck_dir,
           ck_out(name));
  return rc_run(c, NULL);
}

/* fill's default memory (terrafort-fill(1), MEMORY): without --mem a DEM
 * whose W is well above the run's fixed part is planned within 1.2 times
 * its cells as Float32, the main body keeping W and spilling the rest (a
 * 7000 x 7000 resample of the demo: 187 MiB of W); the same bytes as all in
 * memory (--mem 64G: nothing spilled), as a given --mem that keeps 0.6 of W
 * (the main body, spilling) or 0.3 (the perimeter twin), and the demo
 * itself stays in memory by default (W below the fixed part), as does a
 * 5000 x 5000 resample, whose W (96 MiB) is still below it though 1.2 times
 * the input would hold the fixed part: the default once ran it with 4 MiB of
 * W in memory and 336 spills, three times as long. A
 * --tmp without room for that spill makes the default plan in memory
 * instead of failing (where a tmpfs can be mounted). */
static int test_default_memory(void) {
  char c[4096];
  ASSERT_EQ_INT(demo_resized(7000, "demo7k.tif"), 0);
  const long long input = 7000LL * 7000LL * 4;
  ss_line l[4];
  snprintf(c, sizeof c, "'%s' fill -q --threads 2 --aap-stats '%s' '%s' '%s'", ck_tf, ck_out("def.json"),
           ck_out("demo7k.tif"), ck_out("def.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT_EQ_INT(read_stats(ck_out("def.json"), l, 4), 1);
  printf("  default: %s, state %lld MiB, fixed %lld MiB, budget %lld MiB, %lld spills\n", l[0].prog, l[0].state >> 20,
         l[0].fixed >> 20, l[0].budget >> 20, l[0].spills);
  ASSERT(!strcmp(l[0].prog, "fill"));
  ASSERT(l[0].budget > 0 && l[0].spills > 0 && l[0].restores > 0);
  /* the plan: the fixed part, the rounds running and the budget within 1.2x */
  ASSERT(l[0].fixed + l[0].budget <= input * 6 / 5);
  ASSERT(2 * l[0].budget >= l[0].state - 4 * l[0].frag);
  snprintf(c, sizeof c, "'%s' fill -q --threads 2 --mem 64G --aap-stats '%s' '%s' '%s'", ck_tf, ck_out("mem.json"),
           ck_out("demo7k.tif"), ck_out("mem.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT_EQ_INT(read_stats(ck_out("mem.json"), l, 4), 1);
  ASSERT(!strcmp(l[0].prog, "fill") && l[0].budget < 0 && l[0].spills == 0);
  ASSERT(rc_same_file(ck_out("def.tif"), ck_out("mem.tif")));
  /* a --mem given: with 0.6 of W beside the fixed part the main body keeps
   * W and spills the rest; with 0.3 the perimeter twin runs (graph_plan.c:
   * W here outweighs the fixed part) */
  const long long fixed = l[0].fixed, state = l[0].state;
  for (int k = 0; k < 2; k++) {
    snprintf(c, sizeof c, "'%s' fill -q --threads 2 --mem %lldB --tmp '%s' --aap-stats '%s' '%s' '%s'", ck_tf,
             fixed + state * (k ? 3 : 6) / 10, tmpdir, ck_out("given.json"), ck_out("demo7k.tif"), ck_out("given.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ss_line g[4];
    ASSERT_EQ_INT(read_stats(ck_out("given.json"), g, 4), 1);
    printf("  --mem with %d/10 of W: %s, %lld spills\n", k ? 3 : 6, g[0].prog, g[0].spills);
    ASSERT(!strcmp(g[0].prog, k ? "fill_perimeter" : "fill"));
    if (!k) ASSERT(g[0].spills > 0);
    ASSERT(rc_same_file(ck_out("def.tif"), ck_out("given.tif")));
  }
  snprintf(c, sizeof c, "'%s' fill -q --aap-stats '%s' '%s/demo.tif' '%s'", ck_tf, ck_out("demo_def.json"), ck_dir,
           ck_out("demo_def.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT_EQ_INT(read_stats(ck_out("demo_def.json"), l, 4), 1);
  ASSERT(!strcmp(l[0].prog, "fill") && l[0].budget < 0 && l[0].spills == 0);
  ASSERT_EQ_INT(demo_resized(5000, "demo5k.tif"), 0);
  snprintf(c, sizeof c, "'%s' fill -q --threads 2 --aap-stats '%s' '%s' '%s'", ck_tf, ck_out("def5k.json"),
           ck_out("demo5k.tif"), ck_out("def5k.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT_EQ_INT(read_stats(ck_out("def5k.json"), l, 4), 1);
  printf("  5000 x 5000 by default: %s, state %lld MiB, fixed %lld MiB, budget %lld, %lld spills\n", l[0].prog,
         l[0].state >> 20, l[0].fixed >> 20, l[0].budget, l[0].spills);
  ASSERT(l[0].state < l[0].fixed);
  ASSERT(!strcmp(l[0].prog, "fill") && l[0].budget < 0 && l[0].spills == 0);
  unlink(ck_out("demo5k.tif"));
  unlink(ck_out("def5k.tif"));
  ASSERT(tmp_empty("fill, default memory"));
  char mnt[700];
  if (small_tmpfs(mnt, sizeof mnt, "mnt_default")) {
    printf("  (no tmpfs can be mounted here: the small --tmp case is not run)\n");
    return 0;
  }
  snprintf(c, sizeof c, "'%s' fill -q --threads 2 --tmp '%s' --aap-stats '%s' '%s' '%s'", ck_tf, mnt,
           ck_out("tmp.json"), ck_out("demo7k.tif"), ck_out("tmp.tif"));
  const int rc = rc_run(c, NULL);
  const int entries = rc_count_entries(mnt);
  umount(mnt);
  ASSERT_EQ_INT(rc, 0);
  ASSERT_EQ_INT(entries, 0);
  ASSERT_EQ_INT(read_stats(ck_out("tmp.json"), l, 4), 1);
  ASSERT(!strcmp(l[0].prog, "fill") && l[0].budget < 0 && l[0].spills == 0);
  ASSERT(rc_same_file(ck_out("def.tif"), ck_out("tmp.tif")));
  return 0;
}

/* flowgraph's default memory (terrafort-flowgraph(1), MEMORY): at 7000² a
 * stage whose state outweighs the fixed part plans within 1.3x the DEM as
 * Float32 and spills the rest, and the bytes are those of a run all in
 * memory. */
static int test_flowgraph_default_memory(void) {
  char c[4096];
  ASSERT_EQ_INT(demo_resized(7000, "fg7k.tif"), 0);
  const long long input = 7000LL * 7000LL * 4;
  ss_line l[8];
  snprintf(c, sizeof c, "'%s' flowgraph -q --threads 2 --aap-stats '%s' '%s' --acc '%s'", ck_tf, ck_out("fgdef.json"),
           ck_out("fg7k.tif"), ck_out("fgdef.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  const int n = read_stats(ck_out("fgdef.json"), l, 8);
  ASSERT(n >= 3);
  int spilled = 0;
  for (int i = 0; i < n; i++) {
    printf("  %s: state %lld MiB, fixed %lld MiB, budget %lld MiB, %lld spills\n", l[i].prog, l[i].state >> 20,
           l[i].fixed >> 20, l[i].budget >> 20, l[i].spills);
    if (l[i].budget >= 0) ASSERT(l[i].fixed + l[i].budget <= input * 13 / 10);
    else ASSERT(l[i].spills == 0);
    spilled += l[i].spills > 0;
  }
  ASSERT(spilled > 0);
  snprintf(c, sizeof c, "'%s' flowgraph -q --threads 2 --mem 64G --aap-stats '%s' '%s' --acc '%s'", ck_tf,
           ck_out("fgmem.json"), ck_out("fg7k.tif"), ck_out("fgmem.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  const int m = read_stats(ck_out("fgmem.json"), l, 8);
  ASSERT_EQ_INT(m, n);
  for (int i = 0; i < m; i++) ASSERT(l[i].budget < 0 && l[i].spills == 0);
  ASSERT(rc_same_file(ck_out("fgdef.tif"), ck_out("fgmem.tif")));
  unlink(ck_out("fg7k.tif"));
  ASSERT(tmp_empty("flowgraph, default memory"));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  ck_init(argv[1], argv[2], "outofcore");
  GDALAllRegister();
  signal(SIGPIPE, SIG_IGN);
  snprintf(tmpdir, sizeof tmpdir, "%s/spill", ck_outdir);
  mkdir(tmpdir, 0755);
  ck_mpirun(mpirun, sizeof mpirun);
  /* under the sanitizers the spill paths of fill and flowgraph, failures and
   * refusals; the variants (a small GDAL cache, the perimeter program,
   * weights, order cells) run in the Release tree */
  static const tr_test_case all[] = {TR_TEST(test_fill_same_bytes), TR_TEST(test_small_gdal_cache),
                                     TR_TEST(test_flowgraph_same_bytes),
                                     TR_TEST(test_flowgraph_perimeter), TR_TEST(test_flowgraph_whole_weights),
                                     TR_TEST(test_flowgraph_order_cells),
                                     TR_TEST(test_failures_leave_nothing), TR_TEST(test_refusals),
                                     TR_TEST(test_default_memory), TR_TEST(test_flowgraph_default_memory)};
  static const tr_test_case sanitized[] = {TR_TEST(test_fill_same_bytes), TR_TEST(test_flowgraph_same_bytes),
                                           TR_TEST(test_failures_leave_nothing), TR_TEST(test_refusals)};
  const tr_test_case *cases = TR_TEST_SANITIZED ? sanitized : all;
  const int ncases = TR_TEST_SANITIZED ? (int)(sizeof sanitized / sizeof *sanitized) : (int)(sizeof all / sizeof *all);
  return tr_test_main(argc - 3, argv + 3, cases, ncases);
}
