/*
 * test_flow_equal.c - tr_flowdir equals the sequential reference (test_flow_ref.c: a plain
 * priority-flood, TauDEM's D8 rule and the paper's queue-based Barnes 2014 flats) cell for
 * cell, for every schedule (aap, bsp, ap, ssp, random), tile sizes that do and do not divide
 * the DEM (one tile, 16, 13, 7, 5 and 3 cells), 1 to 4 threads and the three encodings, on
 * pits, flats, NoData holes (a value and NaN), a spiral maze, a bowl whose filled inside is
 * one flat crossing every tile, nested flats (terraces) and a DEM without depressions, with
 * square and rectangular cells. The output bytes are the same for every setting; the filled
 * DEM equals the reference fill; the --slope raster is TauDEM's sd8 of the reference
 * directions; the invariants (every path ends at an outlet, no cycle, never uphill) hold.
 * Usage: test_flow_equal [TEST]
 */
#include <gdal.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowdir.h"
#include "graph.h"
#include "raster_check.h"
#include "sink.h"
#include "terrain.h"
#include "tile_store.h"
#include "test_flow_ref.h"
#include "tr_test.h"

static char dir[64];

static const char *path(const char *name) {
  static char p[4][256];
  static int i;
  i = (i + 1) % 4;
  snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
  return p[i];
}

static void cleanup(void) {
  char c[128];
  snprintf(c, sizeof c, "rm -rf '%s'", dir);
  if (system(c) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static int setup(void) {
  if (dir[0]) return 0;
  snprintf(dir, sizeof dir, "/tmp/tf_flow_XXXXXX");
  if (!mkdtemp(dir)) return -1;
  atexit(cleanup);
  for (int d = 0; d < FD_NDEM; d++) {
    fd_dem dem;
    fd_make(d, &dem);
    char name[64];
    snprintf(name, sizeof name, "%s.tif", fd_dem_name[d]);
    int rc = fd_write(&dem, path(name));
    free(dem.z);
    if (rc) return -1;
  }
  return 0;
}

typedef struct {
  const char *schedule;
  int tile, threads, encoding;
  int64_t mem;       /* --mem in bytes, 0: the default */
  const char *stats; /* --aap-stats, or NULL */
} config;

/* Runs tr_flowdir on DEM d with config cf into out (and the filled DEM and slope when given). */
static int run(int d, const config *cf, const char *out, const char *fel, const char *slope, int filled) {
  tr_run_opts run;
  tr_run_opts_init(&run);
  run.tile_size = cf->tile;
  run.threads = cf->threads;
  run.mem = cf->mem;
  tr_graph_opts g;
  tr_graph_opts_init(&g);
  g.schedule = cf->schedule;
  g.ds_max_ms = 0.3;
  g.aap_stats = cf->stats;
  g.tmp_dir = dir;
  tr_flowdir_opts o;
  tr_flowdir_opts_init(&o);
  o.encoding = (tr_dir_encoding)cf->encoding;
  o.filled_out = fel;
  o.slope = slope;
  o.filled = filled;
  char name[64];
  snprintf(name, sizeof name, "%s.tif", fd_dem_name[d]);
  tr_error e = {{0}};
  int st = tr_flowdir(&run, &g, &o, path(name), out, &e);
  if (st) fprintf(stderr, "%s: tr_flowdir failed (%d): %s\n", fd_dem_name[d], st, e.msg);
  return st;
}

static int equals_reference(int d, const config *cf, const int *ref, int64_t rows, int64_t cols) {
  if (run(d, cf, path("dir.tif"), NULL, NULL, 0)) return 0;
  int *got = fd_read_dirs(path("dir.tif"), cf->encoding, rows, cols);
  if (!got) return 0;
  char what[160];
  snprintf(what, sizeof what, "%s schedule %s tile %d threads %d encoding %d", fd_dem_name[d], cf->schedule, cf->tile,
           cf->threads, cf->encoding);
  const int64_t bad = fd_diff(got, ref, rows * cols, cols, what);
  free(got);
  return bad == 0;
}

static int test_reference_sanity(void) {
  /* the reference itself: on the bowl every inside cell is on one flat and still drains */
  fd_case k;
  fd_case_make(FD_BOWL, 0, &k);
  const fd_dem dem = k.dem;
  int64_t level = 0;
  for (int64_t i = 0; i < k.n; i++) level += k.fel[i] == 60.0f;
  ASSERT(level > (dem.rows - 2) * (dem.cols - 2) - 5);
  /* away from higher terrain: next to the rim, far from the notch at column 40, the cell
     (1, 10) has two neighbours as close to the notch, E along the rim and SE away from it;
     towards-lower alone would take E (first in the order), the combined gradient takes SE */
  ASSERT_EQ_INT(k.ref[1 * dem.cols + 10], 8);
  fd_case_free(&k);
  for (int d = 0; d < FD_NDEM; d++) {
    fd_case_make(d, 0, &k);
    ASSERT(fd_invariants(k.fel, k.ref, k.dem.rows, k.dem.cols, fd_dem_name[d]));
    fd_case_free(&k);
  }
  return 0;
}

static const char *scheds[] = {"aap", "bsp", "ap", "ssp", "random"};
static const int tiles[] = {0, 16, 13, 7, 5, 3};

static int test_equals_reference_every_setting(void) {
  ASSERT_EQ_INT(setup(), 0);
  int runs = 0;
  for (int d = 0; d < FD_NDEM; d++) {
    fd_case k;
    fd_case_make(d, 0, &k);
    const fd_dem dem = k.dem;
    const int *ref = k.ref;
    for (int s = 0; s < 5; s++) {
      config cf = {scheds[s], 7, 2, TR_DIR_TAUDEM, 0, NULL};
      ASSERT(equals_reference(d, &cf, ref, dem.rows, dem.cols));
      runs++;
    }
    for (int t = 0; t < 6; t++)
      for (int th = 1; th <= 4; th++) {
        if ((t + th) % 2 && t != 3) continue; /* every tile size, every thread count, not every pair */
        if (TR_TEST_SANITIZED && (t + th + d) % 4 > 1 && t != 3) continue; /* about half of those there */
        config cf = {scheds[(t + th) % 5], tiles[t], th, TR_DIR_TAUDEM, 0, NULL};
        ASSERT(equals_reference(d, &cf, ref, dem.rows, dem.cols));
        runs++;
      }
    for (int enc = TR_DIR_ESRI; enc <= TR_DIR_GRASS; enc++) {
      config cf = {"aap", 5, 3, enc, 0, NULL};
      ASSERT(equals_reference(d, &cf, ref, dem.rows, dem.cols));
      runs++;
    }
    fd_case_free(&k);
  }
  ASSERT(runs >= FD_NDEM * (TR_TEST_SANITIZED ? 12 : 20));
  return 0;
}

static int read_bytes(const char *p, unsigned char **buf, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  *buf = malloc(*n ? *n : 1);
  size_t got = fread(*buf, 1, *n, f);
  fclose(f);
  return got == *n ? 0 : -1;
}

static int test_same_bytes(void) {
  ASSERT_EQ_INT(setup(), 0);
  const config base = {"aap", 0, 1, TR_DIR_TAUDEM, 0, NULL};
  ASSERT_EQ_INT(run(FD_SPIRAL, &base, path("a.tif"), NULL, NULL, 0), 0);
  unsigned char *a;
  size_t na;
  ASSERT_EQ_INT(read_bytes(path("a.tif"), &a, &na), 0);
  const config other[] = {{"random", 3, 4, TR_DIR_TAUDEM, 0, NULL}, {"bsp", 13, 2, TR_DIR_TAUDEM, 0, NULL}, {"ssp", 5, 3, TR_DIR_TAUDEM, 0, NULL}};
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ_INT(run(FD_SPIRAL, &other[i], path("b.tif"), NULL, NULL, 0), 0);
    unsigned char *b;
    size_t nb;
    ASSERT_EQ_INT(read_bytes(path("b.tif"), &b, &nb), 0);
    ASSERT(na == nb && memcmp(a, b, na) == 0);
    free(b);
  }
  free(a);
  return 0;
}

static int test_filled_and_slope(void) {
  ASSERT_EQ_INT(setup(), 0);
  for (int d = 0; d < FD_NDEM; d++) {
    fd_case k;
    fd_case_make(d, 0, &k);
    const fd_dem dem = k.dem;
    const int64_t n = k.n, cols = dem.cols;
    float *fel = k.fel;
    int *ref = k.ref;
    const config cf = {"aap", 7, 2, TR_DIR_TAUDEM, 0, NULL};
    ASSERT_EQ_INT(run(d, &cf, path("dir.tif"), path("fel.tif"), path("sd8.tif"), 0), 0);
    rc_raster f, s;
    ASSERT_EQ_INT(rc_load(path("fel.tif"), &f), 0);
    ASSERT_EQ_INT(rc_load(path("sd8.tif"), &s), 0);
    ASSERT(s.has_nodata && s.nodata == -1.0 && s.type == GDT_Float32);
    for (int64_t i = 0; i < n; i++) {
      const int nd = f.has_nodata && f.v[i] == f.nodata;
      if (isnan(fel[i])) ASSERT(nd || isnan(f.v[i]));
      else ASSERT((float)f.v[i] == fel[i]);
      /* sd8: TauDEM's drop / distance along the direction; 0 on flats; -1 without */
      const int64_t r = i / cols, c = i % cols;
      int outlet = isnan(fel[i]) || r == 0 || c == 0 || r == dem.rows - 1 || c == cols - 1;
      for (int dr = -1; dr <= 1 && !outlet; dr++)
        for (int dc = -1; dc <= 1; dc++) outlet |= isnan(fel[(r + dr) * cols + c + dc]);
      int lower = 0;
      for (int dr = -1; dr <= 1 && !outlet; dr++)
        for (int dc = -1; dc <= 1; dc++) lower |= fel[(r + dr) * cols + c + dc] < fel[i];
      if (outlet) {
        ASSERT_NEAR(s.v[i], -1, 0);
      } else if (!lower) {
        ASSERT_NEAR(s.v[i], 0, 0);
      } else {
        static const int DR[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1}, DC[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};
        const int k = ref[i];
        const double dist = sqrt(DC[k] * DC[k] * dem.dx * dem.dx + DR[k] * DR[k] * dem.dy * dem.dy);
        const float want = (float)((1.0 / dist) * (double)(fel[i] - fel[(r + DR[k]) * cols + c + DC[k]]));
        ASSERT_NEAR(s.v[i], want, 0);
      }
    }
    /* the outputs keep the DEM's georeferencing */
    rc_raster p;
    ASSERT_EQ_INT(rc_load(path("dir.tif"), &p), 0);
    ASSERT_NEAR(p.gt[1], dem.dx, 0);
    ASSERT_NEAR(p.gt[5], -dem.dy, 0);
    ASSERT(strstr(p.wkt, "32612") || strstr(p.wkt, "UTM zone 12N"));
    free(p.v);
    free(f.v);
    free(s.v);
    fd_case_free(&k);
  }
  return 0;
}

static int test_invariants_every_dem(void) {
  ASSERT_EQ_INT(setup(), 0);
  for (int d = 0; d < FD_NDEM; d++) {
    fd_case k;
    fd_case_make(d, 0, &k);
    const fd_dem dem = k.dem;
    const config cf = {"random", 5, 4, TR_DIR_TAUDEM, 0, NULL};
    ASSERT_EQ_INT(run(d, &cf, path("dir.tif"), NULL, NULL, 0), 0);
    int *got = fd_read_dirs(path("dir.tif"), TR_DIR_TAUDEM, dem.rows, dem.cols);
    ASSERT(got);
    ASSERT(fd_invariants(k.fel, got, dem.rows, dem.cols, fd_dem_name[d]));
    free(got);
    fd_case_free(&k);
  }
  return 0;
}

static int test_filled_input(void) {
  /* --filled on an already filled DEM gives the same directions; on a DEM that still has a
     pit, the closed depression gets nodata and everything else still drains */
  ASSERT_EQ_INT(setup(), 0);
  fd_case k;
  fd_case_make(FD_PITS, 1, &k);
  const fd_dem dem = k.dem;
  const int64_t n = k.n;
  const int *ref = k.ref;
  const config cf = {"aap", 13, 2, TR_DIR_TAUDEM, 0, NULL};
  ASSERT_EQ_INT(run(FD_PITS, &cf, path("dir.tif"), NULL, NULL, 1), 0);
  int *got = fd_read_dirs(path("dir.tif"), TR_DIR_TAUDEM, dem.rows, dem.cols);
  ASSERT(got);
  ASSERT_EQ_INT(fd_diff(got, ref, n, dem.cols, "pits --filled"), 0);
  int64_t pits = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t r = i / dem.cols, c = i % dem.cols;
    pits += r > 0 && c > 0 && r < dem.rows - 1 && c < dem.cols - 1 && got[i] == 0;
  }
  ASSERT(pits > 0);
  free(got);
  fd_case_free(&k);
  return 0;
}

static int test_scratch_removed(void) {
  /* no intermediate file is left beside the output */
  ASSERT_EQ_INT(setup(), 0);
  char sub[128];
  snprintf(sub, sizeof sub, "%s/clean", dir);
  ASSERT(mkdir(sub, 0700) == 0);
  char out[192];
  snprintf(out, sizeof out, "%s/p.tif", sub);
  const config cf = {"aap", 7, 2, TR_DIR_TAUDEM, 0, NULL};
  ASSERT_EQ_INT(run(FD_FLATS, &cf, out, NULL, NULL, 0), 0);
  DIR *dd = opendir(sub);
  ASSERT(dd);
  int files = 0;
  struct dirent *e;
  while ((e = readdir(dd)))
    if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))) {
      files++;
      ASSERT(!strcmp(e->d_name, "p.tif"));
    }
  closedir(dd);
  ASSERT_EQ_INT(files, 1);
  return 0;
}

static int test_long_flat(void) {
  /* a serpentine corridor 1 cell wide with a level floor, 404 x 403 cells, open to the edge
     at one end only: its cells are ~80000 steps from the outlet, beyond 16-bit distances */
  ASSERT_EQ_INT(setup(), 0);
  fd_case k = {{404, 403, NULL, 0, NAN, 10, 10}, 0, NULL, NULL};
  fd_dem *dem = &k.dem;
  const int64_t n = dem->rows * dem->cols, cols = dem->cols;
  dem->z = malloc(sizeof(float) * (size_t)n);
  for (int64_t r = 0; r < dem->rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const int corridor = r % 2 == 1 && c >= 1 && c < cols - 1 && r < dem->rows - 2;
      /* the wall below corridor row r has its gap at the right end when r % 4 == 1, else left */
      const int gap = r % 2 == 0 && r >= 2 && r < dem->rows - 3 && ((r % 4 == 2 && c == cols - 2) || (r % 4 == 0 && c == 1));
      dem->z[r * cols + c] = corridor || gap ? 10.0f : 100.0f;
    }
  dem->z[1 * cols + 0] = 5.0f; /* the only way out */
  ASSERT_EQ_INT(fd_write(dem, path("long.tif")), 0);
  fd_case_make(-1, 0, &k);
  const int *ref = k.ref;
  ASSERT(fd_invariants(k.fel, ref, dem->rows, cols, "reference long"));
  /* how far the far end is from the outlet, following the reference */
  int64_t far = 0;
  {
    static const int DR[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1}, DC[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};
    int64_t i = (dem->rows - 3) * cols + cols / 2;
    while (ref[i]) i = (i / cols + DR[ref[i]]) * cols + i % cols + DC[ref[i]], far++;
  }
  ASSERT(far > 70000);
  tr_run_opts run;
  tr_run_opts_init(&run);
  run.tile_size = 101;
  run.threads = 2;
  tr_graph_opts g;
  tr_graph_opts_init(&g);
  tr_flowdir_opts o;
  tr_flowdir_opts_init(&o);
  tr_error e = {{0}};
  ASSERT_EQ_INT(tr_flowdir(&run, &g, &o, path("long.tif"), path("dir.tif"), &e), 0);
  int *got = fd_read_dirs(path("dir.tif"), TR_DIR_TAUDEM, dem->rows, cols);
  ASSERT(got);
  ASSERT_EQ_INT(fd_diff(got, ref, n, cols, "long flat"), 0);
  free(got);
  fd_case_free(&k);
  return 0;
}

/* The state-store line of program `prog` in an --aap-stats file: its state,
 * fixed part, largest fragment, spills and restores; 0, or -1 when absent. */
typedef struct {
  long long state, fixed, frag, spills, restores;
} store_line;

static long long field_of(const char *line, const char *key) {
  const char *p = strstr(line, key);
  return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static int store_line_of(const char *file, const char *prog, store_line *o) {
  FILE *f = fopen(file, "r");
  if (!f) return -1;
  char line[4096], want[96];
  snprintf(want, sizeof want, "\"program\":\"%s\"", prog);
  int found = -1;
  while (fgets(line, sizeof line, f))
    if (strstr(line, want)) {
      *o = (store_line){field_of(line, "\"state_bytes\":"), field_of(line, "\"fixed_bytes\":"),
                        field_of(line, "\"frag_max_bytes\":"), field_of(line, "\"spills\":"),
                        field_of(line, "\"restores\":")};
      found = 0;
    }
  fclose(f);
  return found;
}

/* Out of core: when flowdir's state does not fit --mem the runner runs
 * flowdir_compact (the flat bitmap and the tiles' perimeters between
 * rounds), and with a quarter of that one's own state it spills and reads
 * back too. Both equal the reference cell for cell on every DEM (the bowl's
 * one flat crosses every tile; the spiral's corridor crosses tile borders
 * many times), for several tile sizes, schedules and thread counts. (On
 * DEMs this small the rounds' working set outweighs the state saved, so
 * the first run may spill as well; scripts/bench/outofcore and cli_outofcore
 * show what it saves.) */
static int test_compact_out_of_core(void) {
  ASSERT_EQ_INT(setup(), 0);
  static const int tl[3] = {11, 16, 13}, th[3] = {2, 1, 1};
  char stats[256]; /* path()'s buffers are reused */
  snprintf(stats, sizeof stats, "%s", path("st.json"));
  int spilled = 0;
  for (int d = 0; d < FD_NDEM; d++) {
    fd_case k;
    fd_case_make(d, 0, &k);
    for (int v = 0; v < 3; v++) {
      config cf = {scheds[(d + v) % 5], tl[v], th[v], TR_DIR_TAUDEM, 0, stats};
      ASSERT_EQ_INT(run(d, &cf, path("dir.tif"), NULL, NULL, 0), 0);
      store_line full, c1, c2;
      ASSERT_EQ_INT(store_line_of(stats, "flowdir", &full), 0);
      ASSERT(full.state > 0 && full.spills == 0);
      /* a byte less than flowdir needs */
      cf.mem = full.fixed + full.state - 1;
      ASSERT(equals_reference(d, &cf, k.ref, k.dem.rows, k.dem.cols));
      if (store_line_of(stats, "flowdir_compact", &c1)) {
        fprintf(stderr, "%s tile %d threads %d: flowdir_compact did not run (flowdir state %lld)\n", fd_dem_name[d],
                tl[v], th[v], full.state);
        return 1;
      }
      ASSERT(store_line_of(stats, "flowdir", &full) != 0);
      /* a quarter of flowdir_compact's own state: it spills and reads back */
      const long long share = c1.state / 4 > 3 * c1.frag ? c1.state / 4 : 3 * c1.frag;
      cf.mem = c1.fixed + share;
      ASSERT(equals_reference(d, &cf, k.ref, k.dem.rows, k.dem.cols));
      ASSERT_EQ_INT(store_line_of(stats, "flowdir_compact", &c2), 0);
      if (c2.spills <= 0 || c2.restores <= 0) {
        fprintf(stderr, "%s tile %d: flowdir_compact at %lld bytes spilled %lld, restored %lld\n", fd_dem_name[d],
                tl[v], (long long)cf.mem, c2.spills, c2.restores);
        return 1;
      }
      spilled++;
    }
    fd_case_free(&k);
  }
  ASSERT_EQ_INT(spilled, 3 * FD_NDEM);
  return 0;
}

/* The filled DEM's windows loaded per fragment (flowdir_compact_reads). */
typedef struct {
  const fd_case *k;
  int64_t *loads;
} count_in;

static int count_load(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst,
                      int64_t stride) {
  count_in *a = user;
  __atomic_fetch_add(&a->loads[t->index], 1, __ATOMIC_RELAXED);
  for (int64_t r = 0; r < rows; r++)
    memcpy(dst + r * stride, a->k->fel + (row0 + r) * a->k->dem.cols + col0, (size_t)cols * sizeof(float));
  return 0;
}

static tr_tile frag_tile(const void *geom, int64_t i) {
  const tr_aap_frag *f = &((const tr_aap_layout *)geom)->frags[i];
  tr_tile t = {i, f->row0, f->col0, f->rows, f->cols};
  return t;
}

typedef struct {
  int16_t *out;
  int64_t cols;
} codes_out;

static int codes_write(void *user, const tr_tile *t, const void *cells, tr_error *e) {
  (void)e;
  codes_out *o = user;
  for (int64_t r = 0; r < t->rows; r++)
    memcpy(o->out + (t->row0 + r) * o->cols + t->col0, (const int16_t *)cells + r * t->cols,
           (size_t)t->cols * sizeof(int16_t));
  return 0;
}

/* flowdir_compact reads each tile's filled DEM exactly twice (PEval and
 * Assemble) however many rounds the flats take across tile borders (the
 * bowl's one flat crosses every tile, the spiral's corridor crosses borders
 * many times), with no window cache, on 1 and 3 threads, its state spilled
 * or not; the codes equal the reference. */
static int test_compact_reads_twice(void) {
  const int dems[2] = {FD_BOWL, FD_SPIRAL};
  for (int di = 0; di < 2; di++) {
    fd_case k;
    fd_case_make(dems[di], 0, &k);
    const int64_t R = k.dem.rows, C = k.dem.cols;
    tr_aap_layout L;
    ASSERT_EQ_INT(tr_aap_layout_grid(&L, R, C, 9, 11), 0);
    int64_t *loads = calloc((size_t)L.nfrags, sizeof *loads);
    int16_t *codes = malloc((size_t)(R * C) * sizeof *codes);
    ASSERT(loads && codes);
    tr_flowdir_params prm;
    memset(&prm, 0, sizeof prm);
    prm.encoding = TR_DIR_TAUDEM;
    const double gt[6] = {0, k.dem.dx, 0, 0, 0, -k.dem.dy};
    memcpy(prm.geom.gt, gt, sizeof gt);
    for (int run = 0; run < 4; run++) {
      memset(loads, 0, (size_t)L.nfrags * sizeof *loads);
      count_in in = {&k, loads};
      tr_tile_store *store =
          tr_tile_store_create(R, C, L.nfrags, 0, k.dem.has_nd, k.dem.nd, count_load, &in); /* no cache */
      codes_out co = {codes, C};
      tr_product prod = {GDT_Int16, 1, 1, 0, GDT_Unknown};
      tr_sink sink;
      tr_error e = {{0}};
      ASSERT(store != NULL);
      ASSERT_EQ_INT(tr_sink_init(&sink, NULL, L.nfrags, frag_tile, &L, 11 * 9, &prod, TR_SINK_LOCAL, codes_write, &co, &e),
                    0);
      tr_graph_engine eng;
      memset(&eng, 0, sizeof eng);
      tr_aap_opts_default(&eng.aap);
      eng.aap.threads = run % 2 ? 3 : 1;
      eng.backend = TR_GRAPH_THREADS;
      tr_state_store_stats ss = {0};
      if (run >= 2) { /* most fragments on disk most of the time */
        eng.state_budget = 256;
        eng.spill_dir = ".";
        eng.spill_stats = &ss;
      }
      tr_aap_stats st;
      memset(&st, 0, sizeof st);
      char msg[256] = "";
      int pst = 0;
      const int rc = tr_graph_exec(tr_graph_body_find("flowdir_compact", NULL), &prm, &L, &store, 1, &sink, &eng,
                                          &st, msg, sizeof msg, &pst);
      tr_sink_drain(&sink, &e);
      tr_sink_close(&sink);
      tr_tile_store_destroy(store);
      ASSERT_EQ_INT(rc, 0);
      int64_t rounds = 0;
      for (int w = 0; w < st.nworkers; w++) rounds += st.w[w].rounds;
      tr_aap_stats_free(&st);
      /* TauDEM codes 1..8, no direction as its nodata (fd_read_dirs' mapping) */
      for (int64_t i = 0; i < R * C; i++) ASSERT_EQ_INT(codes[i] == -32768 ? 0 : codes[i], k.ref[i]);
      for (int64_t f = 0; f < L.nfrags; f++) ASSERT_EQ_INT(loads[f], 2);
      /* not for want of rounds: more than two a fragment */
      ASSERT(rounds > 2 * L.nfrags);
      if (run >= 2) ASSERT(ss.spills > 0 && ss.restores > 0);
    }
    free(loads);
    free(codes);
    tr_aap_layout_free(&L);
    fd_case_free(&k);
  }
  return 0;
}

static int test_ft_dual_slope(void) {
  /* --ft dual applies to the d8 slope kernel: with half of its sub-block results flipped,
     the slope and the directions are the same bytes as without fault tolerance */
  ASSERT_EQ_INT(setup(), 0);
  unsigned char *want[2], *got[2];
  size_t nw[2], ng[2];
  for (int pass = 0; pass < 2; pass++) {
    tr_run_opts run;
    tr_run_opts_init(&run);
    run.tile_size = 16;
    run.threads = 2;
    if (pass) {
      run.ft = TR_FT_DUAL;
      run.inject = "flip:p=0.5,seed=3";
      run.ft_report = path("ft.json");
    }
    tr_graph_opts g;
    tr_graph_opts_init(&g);
    tr_flowdir_opts o;
    tr_flowdir_opts_init(&o);
    o.slope = path("ft_sd8.tif");
    tr_error e = {{0}};
    ASSERT_EQ_INT(tr_flowdir(&run, &g, &o, path("pits.tif"), path("ft_p.tif"), &e), 0);
    ASSERT_EQ_INT(read_bytes(path("ft_p.tif"), pass ? &got[0] : &want[0], pass ? &ng[0] : &nw[0]), 0);
    ASSERT_EQ_INT(read_bytes(path("ft_sd8.tif"), pass ? &got[1] : &want[1], pass ? &ng[1] : &nw[1]), 0);
  }
  /* the faults were really there, and every one was corrected */
  unsigned char *rep;
  size_t nr;
  ASSERT_EQ_INT(read_bytes(path("ft.json"), &rep, &nr), 0);
  rep = realloc(rep, nr + 1);
  rep[nr] = 0;
  const char *inj = strstr((char *)rep, "\"injected\":"), *cor = strstr((char *)rep, "\"corrected\":");
  ASSERT(inj && cor);
  const long ninj = strtol(inj + 11, NULL, 10), ncor = strtol(cor + 12, NULL, 10);
  free(rep);
  ASSERT(ninj > 0);
  ASSERT_EQ_INT(ncor, ninj);
  for (int i = 0; i < 2; i++) {
    ASSERT(nw[i] == ng[i] && memcmp(want[i], got[i], nw[i]) == 0);
    free(want[i]);
    free(got[i]);
  }
  return 0;
}

TR_MAIN(TR_TEST(test_reference_sanity), TR_TEST(test_equals_reference_every_setting), TR_TEST(test_same_bytes),
        TR_TEST(test_filled_and_slope), TR_TEST(test_invariants_every_dem), TR_TEST(test_filled_input),
        TR_TEST(test_scratch_removed), TR_TEST(test_long_flat), TR_TEST(test_compact_out_of_core), TR_TEST(test_compact_reads_twice),
        TR_TEST(test_ft_dual_slope))
