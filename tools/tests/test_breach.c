/*
 * test_breach.c - `terrafort breach` as a user runs it.
 *
 * - RichDEM 2.2.9's rd_depressions_breach COMPLETE NOEPS NOFILL outputs on
 *   the two shared DEMs (../shared/data/richdem, skipped when absent), cell
 *   for cell.
 * - With RICHDEM_BIN naming the folder of a RichDEM build's
 *   rd_depressions_breach(.exe) (skipped otherwise): every mode, with and
 *   without FILL and EPS, a few limits, on the shared DEMs and two made
 *   here. The cells where terrafort and RichDEM differ are counted (the
 *   counts on the shared DEMs are pinned, and terrafort-breach(1) gives
 *   them), and each difference is explained: the binary equals
 *   breach_ref.h under RichDEM's rules and terrafort equals it under
 *   terrafort's, and the two sets of rules differ only in constrained mode
 *   and in where the flood ends when filling.
 * - Always: terrafort equals breach_ref.h (a second breaching built another
 *   way) for every mode, fill, epsilon and limits on the test DEMs and a
 *   pitted DEM made here, with the limits seen to bite; on a DEM of two
 *   corridors whose pits' paths have known lengths and depths, the outcome
 *   of each mode and limit is the one worked out by hand (a pit whose path
 *   is 5 cells long is cut with --max-length 5 and left, or filled, with
 *   4); no pit is left where none may be (every cell drains to the edge
 *   over cells no higher, with --epsilon strictly lower); constrained mode
 *   never cuts a cell deeper than --max-depth; cells only go down except
 *   raised pits and filled cells.
 * - The same bytes for any thread count, tile size, --ft dual and under
 *   mpirun, in every mode; bad input refused with one line, exit 2 and no
 *   file.
 */
#include <gdal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "breach_ref.h"
#include "cli_kit.h"
#include "tr_test.h"

static const char *shared;
static char mpirun[256];

static int br(const char *pre, const char *in, const char *out, const char *flags) {
  return ck_run(pre, "breach", "", in, out, flags);
}

static int exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

static const char *richdem(const char *dem, const char *name) {
  static char p[2][1024];
  static int k;
  k = (k + 1) % 2;
  snprintf(p[k], sizeof p[k], "%s/richdem/%s/%s", shared, dem, name);
  return p[k];
}

/* ------------------------------------------------------------ DEMs */

/* A Float32 GeoTIFF (nodata -9999 when has_nd). */
static int write_f32(const char *path, int rows, int cols, const float *z, int has_nd) {
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, cols, rows, 1, GDT_Float32, NULL);
  if (!ds) return -1;
  double gt[6] = {500000, 10, 0, 4500000, 0, -10};
  GDALSetGeoTransform(ds, gt);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  if (has_nd) GDALSetRasterNoDataValue(b, -9999);
  const CPLErr e = GDALRasterIO(b, GF_Write, 0, 0, cols, rows, (void *)z, cols, rows, GDT_Float32, 0, 0);
  GDALClose(ds);
  return e == CE_None ? 0 : -1;
}

/* A raster as Float32 with NaN for nodata and non-finite cells (as the
 * command reads it); NULL when it cannot be read. */
static float *load_f32(const char *path, int *rows, int *cols) {
  rc_raster r;
  if (rc_load(path, &r)) return NULL;
  float *z = malloc(sizeof(float) * (size_t)r.rows * (size_t)r.cols);
  for (long i = 0; z && i < (long)r.rows * r.cols; i++)
    z[i] = rc_is_nodata(&r, r.v[i]) || !isfinite(r.v[i]) ? NAN : (float)r.v[i];
  *rows = r.rows;
  *cols = r.cols;
  rc_free(&r);
  return z;
}

/* Cells where a and b differ (a nodata cell is NaN in both). */
static long differ(const float *a, const float *b, long n) {
  long d = 0;
  for (long i = 0; i < n; i++) d += isnan(a[i]) != isnan(b[i]) || (!isnan(a[i]) && a[i] != b[i]);
  return d;
}

static long changed(const float *in, const float *out, long n) {
  long d = 0;
  for (long i = 0; i < n; i++) d += !isnan(in[i]) && in[i] != out[i];
  return d;
}

/* A DEM with many pits of many sizes, flats and ties (elevations on a
 * 0.25 grid), nodata holes (rows x cols 90 x 120). */
static int make_pitted(const char *path) {
  enum { R = 90, C = 120 };
  static float z[R * C];
  uint32_t s = 12345;
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      s = s * 1664525u + 1013904223u;
      const double noise = (double)(s >> 8) / 16777216.0;
      double v = 50 + 8 * sin(r / 7.0) * cos(c / 9.0) + 0.03 * (r + c) + 4 * noise;
      v = floor(v * 4) / 4;
      const double dr = r - 45, dc = c - 60;
      z[r * C + c] = dr * dr + dc * dc < 40 || (s >> 26) == 0 ? -9999.0f : (float)v;
    }
  return write_f32(path, R, C, z, 1);
}

/* Two corridors through a plane that rises to the south-east (no pit of
 * its own), each from an outlet at 1 on the west edge (not 0: RichDEM takes
 * 0 for nodata in a DEM that declares none) to a two-cell flat pit at 10
 * walled in by the plane:
 * - A, row 5: cells 11 15 13 12, then the pit: its path is the pit and the
 *   4 corridor cells, 5 cells long, 5 deep (the 15);
 * - B, row 12: cells 11 11.5 12 11.8 11.6 11.4 11.2 11, then the pit: 9
 *   cells long, 2 deep.
 * The pit cell beside the corridor is reached first; the other one's path
 * runs through it. */
enum { CR = 18, CC = 16, ROW_A = 5, ROW_B = 12 };
static const float corr_a[] = {1, 11, 15, 13, 12, 10, 10};
static const float corr_b[] = {1, 11, 11.5f, 12, 11.8f, 11.6f, 11.4f, 11.2f, 11, 10, 10};

static void corridors(float *z) {
  for (int r = 0; r < CR; r++)
    for (int c = 0; c < CC; c++) z[r * CC + c] = 1000.0f + (float)(r + c);
  for (int c = 0; c < 7; c++) z[ROW_A * CC + c] = corr_a[c];
  for (int c = 0; c < 11; c++) z[ROW_B * CC + c] = corr_b[c];
}

/* ------------------------------------------------------------ configurations */

typedef struct {
  int mode, fill, eps;
  long len;     /* 0: none */
  double depth; /* 0: none */
} cfg;

static const char *const mode_names[] = {"complete", "selective", "constrained"};

static const char *flags_of(const cfg *k) {
  static char f[256];
  int n = snprintf(f, sizeof f, "--mode %s", mode_names[k->mode]);
  if (k->len) n += snprintf(f + n, sizeof f - (size_t)n, " --max-length %ld", k->len);
  if (k->depth > 0) n += snprintf(f + n, sizeof f - (size_t)n, " --max-depth %g", k->depth);
  if (k->fill && k->mode != BR_COMPLETE) n += snprintf(f + n, sizeof f - (size_t)n, " --fill");
  if (k->eps) snprintf(f + n, sizeof f - (size_t)n, " --epsilon");
  return f;
}

static br_ref_opts ref_of(const cfg *k, int rules) {
  return (br_ref_opts){.mode = k->mode, .eps = k->eps, .fill = k->fill, .max_len = k->len, .max_depth = k->depth,
                       .rules = rules};
}

/* Every mode, with and without fill and epsilon, over the given limits
 * (complete takes none; RichDEM ignores FILL there, terrafort refuses it:
 * both forms are listed for the RichDEM comparison). */
static int configs(cfg *out, const long *lens, const double *depths, int nlim) {
  int n = 0;
  for (int eps = 0; eps < 2; eps++)
    for (int fill = 0; fill < 2; fill++) {
      out[n++] = (cfg){.mode = BR_COMPLETE, .fill = fill, .eps = eps};
      for (int mode = BR_SELECTIVE; mode <= BR_CONSTRAINED; mode++)
        for (int l = 0; l < nlim; l++)
          out[n++] = (cfg){.mode = mode, .fill = fill, .eps = eps, .len = lens[l], .depth = depths[l]};
    }
  return n;
}

/* ------------------------------------------------------------ RichDEM 2.2.9's files */

/* RichDEM's nodata: the file's, and 0 where the DEM declares none (GDAL's
 * answer RichDEM takes). Ours is the DEM's, or none. */
static int test_richdem_parity(void) {
  if (!exists(richdem("loganvrt", "breach_complete.tif"))) {
    printf("skip: no RichDEM outputs under %s\n", shared);
    return TR_TEST_SKIP;
  }
  static const char *const dems[][2] = {{"loganvrt", "LoganVRT/output.vrt"}, {"enogeo", "enogeo.tif"}};
  static const long changed_want[] = {1396, 8037};
  for (int d = 0; d < 2; d++) {
    char in[1024];
    snprintf(in, sizeof in, "%s/%s", shared, dems[d][1]);
    ASSERT_EQ_INT(br("", in, "rd.tif", ""), 0);
    int rows, cols, r2, c2, r3, c3;
    float *a = load_f32(ck_out("rd.tif"), &rows, &cols);
    float *b = load_f32(richdem(dems[d][0], "breach_complete.tif"), &r2, &c2), *z = load_f32(in, &r3, &c3);
    ASSERT(a && b && z && rows == r2 && cols == c2 && rows == r3 && cols == c3);
    const long n = (long)rows * cols;
    ASSERT_EQ_INT(differ(a, b, n), 0);
    ASSERT_EQ_INT(changed(z, a, n), changed_want[d]); /* RichDEM's own count of cut or raised cells */
    free(a);
    free(b);
    free(z);
  }
  return 0;
}

/* ------------------------------------------------------------ the RichDEM binary */

/* Cells where terrafort and RichDEM's binary differ on the shared DEMs, in
 * the order configs() lists them with these limits (terrafort-breach(1)
 * gives the same figures). */
static const long rd_lens[] = {5, 50, 0, 0, 20, 200};
static const double rd_depths[] = {0, 0, 0.5, 5, 2, 20};
#define RD_CONFIGS (4 * (1 + 2 * 6))
static const long rd_differ_want[2][RD_CONFIGS] = {
    /* enogeo */
    {0, 0, 0, 0, 0, 0, 0, 1250, 40, 839, 0, 153, 0, 0, 0, 0, 0, 0, 0, 0, 7467, 230, 6808, 0, 2487, 0,
     0, 0, 0, 0, 0, 0, 0, 1398, 40, 862, 0, 153, 0, 0, 0, 0, 0, 0, 0, 0, 7782, 230, 6809, 0, 2489, 0},
    /* loganvrt */
    {0, 0, 0, 0, 0, 0, 0, 93, 0, 701, 316, 482, 56, 0, 0, 0, 1, 0, 1, 0, 711, 0, 1675, 881, 1277, 196,
     0, 0, 0, 0, 0, 0, 0, 108, 0, 734, 322, 499, 56, 0, 0, 0, 1, 0, 1, 0, 723, 0, 1680, 882, 1277, 196},
};

static int run_richdem(const char *exe, const char *in, const char *out, const cfg *k) {
  char c[4096];
  snprintf(c, sizeof c, "'%s' '%s' '%s' %s %s %s %ld %.17g >/dev/null 2>&1", exe, in, out,
           k->mode == BR_COMPLETE ? "COMPLETE" : k->mode == BR_SELECTIVE ? "SELECTIVE" : "CONSTRAINED",
           k->eps ? "EPS" : "NOEPS", k->fill ? "FILL" : "NOFILL", k->len ? k->len : 4294967295L,
           k->depth > 0 ? k->depth : 1e30);
  return rc_run(c, NULL);
}

/* One DEM against the binary: returns -1 on a failure, else fills diffs[]. */
static int against_binary(const char *exe, const char *dem, const char *name, const cfg *cfgs, int ncfg, long *diffs) {
  char in[1024]; /* dem may be ck_out's, which later calls reuse */
  snprintf(in, sizeof in, "%s", dem);
  int rows, cols;
  float *z = load_f32(in, &rows, &cols), *ref = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
  ASSERT(z && ref);
  const long n = (long)rows * cols;
  int bad = 0;
  for (int i = 0; i < ncfg && !bad; i++) {
    const cfg *k = &cfgs[i];
    unlink(ck_out("bin.tif"));
    ASSERT_EQ_INT(run_richdem(exe, in, ck_out("bin.tif"), k), 0);
    ASSERT_EQ_INT(br("", in, "tf.tif", flags_of(k)), 0);
    int r2, c2, r3, c3;
    float *bin = load_f32(ck_out("bin.tif"), &r2, &c2), *tf = load_f32(ck_out("tf.tif"), &r3, &c3);
    ASSERT(bin && tf && r2 == rows && c2 == cols && r3 == rows && c3 == cols);
    /* terrafort and the binary against their rules; terrafort against
     * each of RichDEM's two rules alone */
    br_ref_log log;
    long why[4] = {0, 0, 0, 0};
    diffs[i] = differ(tf, bin, n);
    for (int rules = 0; rules < 4; rules++) {
      if (!diffs[i] && (rules == BR_RD_CONSTRAINED || rules == BR_RD_FLOOD_END)) continue;
      memcpy(ref, z, sizeof(float) * (size_t)n);
      const br_ref_opts o = ref_of(k, rules);
      ASSERT_EQ_INT(br_ref(ref, rows, cols, &o, &log), 0);
      why[rules] = differ(rules == BR_RICHDEM ? bin : tf, ref, n);
    }
    printf("  %-9s %-67s %-6s %5ld differ: constrained rule %5ld, flood end %ld (own rules: %ld, %ld)\n", name,
           flags_of(k), k->fill ? "FILL" : "NOFILL", diffs[i], why[BR_RD_CONSTRAINED], why[BR_RD_FLOOD_END],
           why[BR_OURS], why[BR_RICHDEM]);
    /* every difference is one of the rules': each program is its rules */
    if (why[BR_OURS] || why[BR_RICHDEM]) bad = 1;
    /* outside constrained mode only the end of a filling flood differs */
    if (k->mode != BR_CONSTRAINED && diffs[i] != why[BR_RD_FLOOD_END]) bad = 1;
    free(bin);
    free(tf);
  }
  free(z);
  free(ref);
  return bad ? -1 : 0;
}

/* RichDEM's limits of 0: a length of 0 or 1 or a depth of 0 lets no path
 * be cut, as terrafort's --max-length 1 (the pits raised, nothing else:
 * 930 cells of LoganVRT); CONSTRAINED 0 0 is not complete breaching. */
static int rd_zero_limits(const char *exe) {
  char in[1024];
  snprintf(in, sizeof in, "%s/LoganVRT/output.vrt", shared);
  if (!exists(in)) return 0;
  ASSERT_EQ_INT(br("", in, "len1.tif", "--mode selective --max-length 1"), 0);
  ASSERT_EQ_INT(br("", in, "complete.tif", ""), 0);
  int rows, cols, r2, c2;
  float *z = load_f32(in, &rows, &cols), *one = load_f32(ck_out("len1.tif"), &r2, &c2);
  ASSERT(z && one && r2 == rows && c2 == cols);
  const long n = (long)rows * cols;
  ASSERT_EQ_INT(changed(z, one, n), 930);
  const struct {
    cfg k;
    const char *same_as;
  } zeros[] = {{{.mode = BR_SELECTIVE, .len = 0, .depth = 0}, "len1.tif"},
               {{.mode = BR_SELECTIVE, .len = 1, .depth = 1e30}, "len1.tif"},
               {{.mode = BR_SELECTIVE, .len = 4294967295L, .depth = 0}, "len1.tif"},
               {{.mode = BR_CONSTRAINED, .len = 0, .depth = 0}, "complete.tif"}};
  for (size_t i = 0; i < sizeof zeros / sizeof *zeros; i++) {
    char c[4096];
    snprintf(c, sizeof c, "'%s' '%s' '%s' %s NOEPS NOFILL %ld %g >/dev/null 2>&1", exe, in, ck_out("zero.tif"),
             zeros[i].k.mode == BR_SELECTIVE ? "SELECTIVE" : "CONSTRAINED", zeros[i].k.len, zeros[i].k.depth);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    float *rd = load_f32(ck_out("zero.tif"), &r2, &c2), *ours = load_f32(ck_out(zeros[i].same_as), &r2, &c2);
    ASSERT(rd && ours);
    const long d = differ(rd, ours, n);
    printf("  loganvrt RichDEM %s NOEPS NOFILL %ld %g: %ld cells differ from terrafort's %s\n",
           zeros[i].k.mode == BR_SELECTIVE ? "SELECTIVE" : "CONSTRAINED", zeros[i].k.len, zeros[i].k.depth, d,
           zeros[i].same_as);
    ASSERT(zeros[i].k.mode == BR_SELECTIVE ? d == 0 : d > 0);
    free(rd);
    free(ours);
  }
  free(z);
  free(one);
  return 0;
}

static int test_richdem_binary(void) {
  const char *dir = getenv("RICHDEM_BIN");
  if (!dir || !dir[0]) {
    printf("skip: RICHDEM_BIN (the folder of RichDEM's rd_depressions_breach) is not set\n");
    return TR_TEST_SKIP;
  }
  char exe[1024];
  snprintf(exe, sizeof exe, "%s/rd_depressions_breach.exe", dir);
  if (access(exe, X_OK) != 0) snprintf(exe, sizeof exe, "%s/rd_depressions_breach", dir);
  if (access(exe, X_OK) != 0) {
    fprintf(stderr, "RICHDEM_BIN=%s holds no rd_depressions_breach(.exe)\n", dir);
    return 1;
  }
  static cfg cfgs[RD_CONFIGS];
  ASSERT_EQ_INT(configs(cfgs, rd_lens, rd_depths, 6), RD_CONFIGS);
  long diffs[RD_CONFIGS];
  /* the DEMs made here: explained, not pinned */
  ASSERT_EQ_INT(make_pitted(ck_out("pitted.tif")), 0);
  static float cz[CR * CC];
  corridors(cz);
  ASSERT_EQ_INT(write_f32(ck_out("corridors.tif"), CR, CC, cz, 0), 0);
  static const long made_lens[] = {4, 5, 0, 8, 9}; /* the corridors' limits */
  static const double made_depths[] = {0, 0, 2, 0, 5};
  static cfg made[4 * (1 + 2 * 5)];
  const int nmade = configs(made, made_lens, made_depths, 5);
  ASSERT_EQ_INT(against_binary(exe, ck_out("pitted.tif"), "pitted", cfgs, RD_CONFIGS, diffs), 0);
  ASSERT_EQ_INT(against_binary(exe, ck_out("corridors.tif"), "corridors", made, nmade, diffs), 0);
  static const char *const dems[][2] = {{"enogeo", "enogeo.tif"}, {"loganvrt", "LoganVRT/output.vrt"}};
  for (int d = 0; d < 2; d++) {
    char in[1024];
    snprintf(in, sizeof in, "%s/%s", shared, dems[d][1]);
    if (!exists(in)) {
      printf("  no %s: the shared DEMs are skipped\n", in);
      continue;
    }
    ASSERT_EQ_INT(against_binary(exe, in, dems[d][0], cfgs, RD_CONFIGS, diffs), 0);
    for (int i = 0; i < RD_CONFIGS; i++) ASSERT_EQ_INT(diffs[i], rd_differ_want[d][i]);
  }
  return rd_zero_limits(exe);
}

/* ------------------------------------------------------------ the reference */

/* terrafort against breach_ref.h's rules on one DEM, every configuration;
 * counts, per mode, the configurations where the limits left pits. */
static int against_reference(const char *dem, const cfg *cfgs, int ncfg, int *bit) {
  char in[1024]; /* dem may be ck_out's, which later calls reuse */
  snprintf(in, sizeof in, "%s", dem);
  int rows, cols;
  float *z = load_f32(in, &rows, &cols);
  ASSERT(z != NULL);
  const long n = (long)rows * cols;
  float *ref = malloc(sizeof(float) * (size_t)n);
  ASSERT(ref != NULL);
  for (int i = 0; i < ncfg; i++) {
    const cfg *k = &cfgs[i];
    if (k->fill && k->mode == BR_COMPLETE) continue; /* refused (test_bad_input) */
    ASSERT_EQ_INT(br("", in, "ref.tif", flags_of(k)), 0);
    int r2, c2;
    float *tf = load_f32(ck_out("ref.tif"), &r2, &c2);
    ASSERT(tf && r2 == rows && c2 == cols);
    memcpy(ref, z, sizeof(float) * (size_t)n);
    br_ref_log log;
    const br_ref_opts o = ref_of(k, BR_OURS);
    ASSERT_EQ_INT(br_ref(ref, rows, cols, &o, &log), 0);
    const long d = differ(tf, ref, n);
    if (d) fprintf(stderr, "%s %s: %ld cells differ from the reference\n", in, flags_of(k), d);
    ASSERT_EQ_INT(d, 0);
    ASSERT(changed(z, tf, n) > 0);
    if (k->mode != BR_COMPLETE) bit[2 * (k->mode - 1) + (log.left > 0 && log.cut > 0)]++;
    free(tf);
  }
  free(z);
  free(ref);
  return 0;
}

static int test_reference(void) {
  static const long lens[] = {6, 0, 25};
  static const double depths[] = {0, 1.5, 4};
  static cfg cfgs[4 * (1 + 2 * 3)];
  const int ncfg = configs(cfgs, lens, depths, 3);
  ASSERT_EQ_INT(make_pitted(ck_out("pitted.tif")), 0);
  const char *dems[] = {ck_out("pitted.tif"), "fractal.tif", "fractal_nan.tif"};
  int bit[4] = {0, 0, 0, 0}; /* selective: runs, runs whose limits bit; constrained: the same */
  for (int d = 0; d < 3; d++) {
    char in[1024];
    snprintf(in, sizeof in, "%s%s%s", strchr(dems[d], '/') ? "" : ck_dir, strchr(dems[d], '/') ? "" : "/", dems[d]);
    ASSERT_EQ_INT(against_reference(in, cfgs, ncfg, bit), 0);
  }
  /* the limits cut some paths and left others, in both modes, everywhere */
  printf("  runs whose limits cut some paths and bit on others: selective %d of %d, constrained %d of %d\n", bit[1],
         bit[0] + bit[1], bit[3], bit[2] + bit[3]);
  ASSERT(bit[0] + bit[1] == 36 && bit[2] + bit[3] == 36);
  ASSERT(bit[1] >= 30 && bit[3] >= 30);
  return 0;
}

/* ------------------------------------------------------------ worked out by hand */

/* The corridors' outcome for one command line: want[] holds what each of
 * the corridor cells and the pit cells must be (NAN: as in the DEM), every
 * other cell as in the DEM. */
static int corridor_case(const char *flags, const float *want_a, const float *want_b) {
  static float z[CR * CC];
  corridors(z);
  ASSERT_EQ_INT(write_f32(ck_out("corridors.tif"), CR, CC, z, 0), 0);
  ASSERT_EQ_INT(br("", ck_out("corridors.tif"), "corr_out.tif", flags), 0);
  int rows, cols;
  float *o = load_f32(ck_out("corr_out.tif"), &rows, &cols);
  ASSERT(o && rows == CR && cols == CC);
  int bad = 0;
  for (int r = 0; r < CR; r++)
    for (int c = 0; c < CC; c++) {
      const float *want = r == ROW_A && c < 7 ? want_a : r == ROW_B && c < 11 ? want_b : NULL;
      const float w = want && !isnan(want[c]) ? want[c] : z[r * CC + c];
      if (o[r * CC + c] != w) {
        fprintf(stderr, "breach %s: row %d col %d is %.9g, not %.9g\n", flags, r, c, o[r * CC + c], w);
        bad++;
      }
    }
  free(o);
  return bad ? 1 : 0;
}

static int test_corridors(void) {
  const float N = NAN;
  /* cut to the pit's 10 down to the outlet; left; filled to the highest cell */
  const float a_cut[] = {N, 10, 10, 10, 10, N, N}, a_fill[] = {N, N, N, 15, 15, 15, 15};
  const float b_cut[] = {N, 10, 10, 10, 10, 10, 10, 10, 10, N, N}, b_fill[] = {N, N, N, N, 12, 12, 12, 12, 12, 12, 12};
  const float a_left[] = {N, N, N, N, N, N, N}, b_left[] = {N, N, N, N, N, N, N, N, N, N, N};
  const struct {
    const char *flags;
    const float *a, *b;
  } cases[] = {
      {"", a_cut, b_cut},
      /* A is 5 cells long and 5 deep; B 9 long and 2 deep */
      {"--mode selective --max-length 5", a_cut, b_left},
      {"--mode selective --max-length 4", a_left, b_left},
      {"--mode selective --max-length 4 --fill", a_fill, b_fill},
      {"--mode selective --max-length 5 --fill", a_cut, b_fill},
      {"--mode selective --max-length 9", a_cut, b_cut},
      {"--mode selective --max-length 8", a_cut, b_left},
      {"--mode selective --max-depth 5", a_cut, b_cut},
      {"--mode selective --max-depth 4.9", a_left, b_cut},
      {"--mode selective --max-depth 1.9", a_left, b_left},
      {"--mode selective --max-depth 1.9 --fill", a_fill, b_fill},
      {"--mode selective --max-length 9 --max-depth 4.9 --fill", a_fill, b_cut},
      {"--mode selective --max-length 8 --max-depth 5 --fill", a_cut, b_fill},
      /* constrained: no cell more than 3 down (15 to 12, the others to 10),
       * then filled up to the new highest cell; or the first 3 cells of a
       * path: the pit and the two next to it */
      {"--mode constrained --max-depth 3", (const float[]){N, 10, 12, 10, 10, N, N}, b_cut},
      {"--mode constrained --max-depth 3 --fill", (const float[]){N, 10, 12, 12, 12, 12, 12}, b_cut},
      {"--mode constrained --max-depth 1.5", (const float[]){N, 10, 13.5f, 11.5f, 10.5f, N, N},
       (const float[]){N, 10, 10, 10.5f, 10.3f, 10.1f, 10, 10, 10, N, N}},
      {"--mode constrained --max-length 3", (const float[]){N, N, N, 10, 10, N, N},
       (const float[]){N, N, N, N, N, N, N, 10, 10, N, N}},
      {"--mode constrained --max-length 3 --fill", a_fill, (const float[]){N, N, N, N, 12, 12, 12, 12, 12, 12, 12}},
      {"--mode constrained --max-length 5", a_cut, (const float[]){N, N, N, N, N, 10, 10, 10, 10, N, N}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    if (corridor_case(cases[k].flags, cases[k].a, cases[k].b)) return 1;
  return 0;
}

/* ------------------------------------------------------------ properties */

/* Valid cells that do not drain to the edge over cells no higher (strict:
 * lower), from the edge cells (on the raster's edge or beside nodata) up. */
static long undrained(const float *z, int rows, int cols, int strict) {
  const long n = (long)rows * cols;
  unsigned char *ok = calloc((size_t)n, 1);
  long *stack = malloc(sizeof(long) * (size_t)n), top = 0, left = 0;
  for (long i = 0; i < n; i++) {
    if (isnan(z[i])) continue;
    const int r = (int)(i / cols), c = (int)(i % cols);
    int edge = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
    for (int dr = -1; dr <= 1 && !edge; dr++)
      for (int dc = -1; dc <= 1; dc++) edge |= isnan(z[(long)(r + dr) * cols + c + dc]);
    if (edge) {
      ok[i] = 1;
      stack[top++] = i;
    }
  }
  while (top > 0) {
    const long y = stack[--top];
    const int r = (int)(y / cols), c = (int)(y % cols);
    for (int dr = -1; dr <= 1; dr++)
      for (int dc = -1; dc <= 1; dc++) {
        const int rr = r + dr, cc = c + dc;
        if (rr < 0 || rr >= rows || cc < 0 || cc >= cols) continue;
        const long x = (long)rr * cols + cc;
        if (ok[x] || isnan(z[x]) || (strict ? !(z[x] > z[y]) : !(z[x] >= z[y]))) continue;
        ok[x] = 1;
        stack[top++] = x;
      }
  }
  for (long i = 0; i < n; i++) left += !isnan(z[i]) && !ok[i];
  free(ok);
  free(stack);
  return left;
}

/* How cells moved: only pits go up (not above their lowest neighbour in
 * the DEM) unless filling; in constrained mode nothing goes more than
 * depth down. */
static int moved_right(const float *z, const float *b, int rows, int cols, int fill, double depth) {
  for (int r = 1; r < rows - 1; r++)
    for (int c = 1; c < cols - 1; c++) {
      const long i = (long)r * cols + c;
      if (isnan(z[i])) continue;
      ASSERT(!isnan(b[i]));
      if (depth > 0) ASSERT((double)z[i] - (double)b[i] <= depth);
      if (b[i] <= z[i] || fill) continue;
      float lowest = INFINITY;
      for (int dr = -1; dr <= 1; dr++)
        for (int dc = -1; dc <= 1; dc++)
          if ((dr || dc) && z[i + (long)dr * cols + dc] < lowest) lowest = z[i + (long)dr * cols + dc];
      ASSERT(b[i] <= lowest);
    }
  return 0;
}

static int test_no_pit_left(void) {
  static const char *const dems[] = {"fractal.tif", "demo.tif", "fractal_nan.tif"};
  static const struct {
    const char *flags;
    int strict, fill, all_drain;
    double depth;
  } runs[] = {
      {"", 0, 0, 1, 0},
      {"--epsilon", 1, 0, 1, 0},
      {"--mode selective --max-length 10 --max-depth 2 --fill", 0, 1, 1, 0},
      {"--mode selective --max-length 10 --max-depth 2 --fill --epsilon", 1, 1, 1, 0},
      {"--mode constrained --max-depth 2 --fill", 0, 1, 1, 2},
      {"--mode constrained --max-length 30 --max-depth 0.75 --fill --epsilon", 1, 1, 1, 0.75},
      {"--mode constrained --max-depth 0.75", 0, 0, 0, 0.75},
      {"--mode selective --max-depth 0.75", 0, 0, 0, 0},
  };
  for (size_t d = 0; d < sizeof dems / sizeof *dems; d++) {
    char in[1024];
    snprintf(in, sizeof in, "%s/%s", ck_dir, dems[d]);
    int rows, cols, r2, c2;
    float *z = load_f32(in, &rows, &cols);
    ASSERT(z != NULL);
    const long before = undrained(z, rows, cols, 0);
    ASSERT(before > 0); /* there are pits to remove */
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
      ASSERT_EQ_INT(br("", dems[d], "b.tif", runs[k].flags), 0);
      float *b = load_f32(ck_out("b.tif"), &r2, &c2);
      ASSERT(b && r2 == rows && c2 == cols);
      const long left = undrained(b, rows, cols, runs[k].strict);
      if (runs[k].all_drain && left) fprintf(stderr, "%s %s: %ld cells do not drain\n", dems[d], runs[k].flags, left);
      /* where limits leave pits and nothing fills them, some cells stay
       * undrained, fewer than before */
      ASSERT(runs[k].all_drain ? left == 0 : left > 0 && left < before);
      ASSERT_EQ_INT(moved_right(z, b, rows, cols, runs[k].fill, runs[k].depth), 0);
      free(b);
    }
    free(z);
  }
  return 0;
}

/* NaN, +Inf and -Inf cells are nodata in the output (the DEM's nodata
 * value, or NaN without one), as in every product; the rest still drains. */
static int test_nonfinite(void) {
  static const char *const dems[] = {"nonfinite.tif", "nonfinite_nond.tif"};
  for (int d = 0; d < 2; d++) {
    char in[1024];
    snprintf(in, sizeof in, "%s/%s", ck_dir, dems[d]);
    ASSERT_EQ_INT(br("", dems[d], "nf.tif", d ? "--mode selective --max-depth 1 --fill" : ""), 0);
    rc_raster z, b;
    ASSERT(rc_load(in, &z) == 0 && rc_load(ck_out("nf.tif"), &b) == 0);
    long nonfinite = 0;
    for (long i = 0; i < (long)z.rows * z.cols; i++)
      if (!isfinite(z.v[i])) {
        nonfinite++;
        ASSERT(isnan(b.v[i]) || rc_is_nodata(&b, b.v[i]));
      } else if (!rc_is_nodata(&z, z.v[i])) {
        ASSERT(isfinite(b.v[i]) && !rc_is_nodata(&b, b.v[i]));
      }
    ASSERT(nonfinite > 0);
    rc_free(&z);
    rc_free(&b);
  }
  return 0;
}

static int test_same_bytes(void) {
  static const char *const modes[] = {"", "--mode selective --max-length 40 --max-depth 3 --fill --epsilon",
                                      "--mode constrained --max-depth 2 --fill",
                                      "--mode constrained --max-length 25 --epsilon"};
  static const char *const flags[] = {"--threads 2", "--threads 2 --tile-size 100", "--tile-size 333",
                                      "--ft dual --tile-size 256"};
  for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
    char f[512];
    snprintf(f, sizeof f, "%s --threads 1", modes[m]);
    ASSERT_EQ_INT(br("", "demo.tif", "one.tif", f), 0);
    for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
      snprintf(f, sizeof f, "%s %s", modes[m], flags[k]);
      ASSERT_EQ_INT(br("", "demo.tif", "two.tif", f), 0);
      ASSERT(rc_same_file(ck_out("one.tif"), ck_out("two.tif")));
    }
    if (!mpirun[0]) continue;
    char pre[300];
    snprintf(pre, sizeof pre, "%s -n 2", mpirun);
    snprintf(f, sizeof f, "%s --tile-size 256", modes[m]);
    ASSERT_EQ_INT(br(pre, "demo.tif", "mpi.tif", f), 0);
    ASSERT(rc_same_file(ck_out("one.tif"), ck_out("mpi.tif")));
  }
  return 0;
}

/* Under mpirun the writer alone holds and breaches the raster: with 3
 * ranks, --ft replay, --ft dual (the writer's replicas on the other ranks)
 * and --stats the bytes (and the statistics) are one process's; each
 * rank's peak memory (GNU time around each rank) shows the other ranks do
 * not hold the raster (the writer's raster, links, flags and queue: 91 MB
 * peak against 60 MB on the others, measured; at least 20 MB less held). */
static int test_writer_only(void) {
  if (!mpirun[0]) return 0;
  if (rc_run("test -x /usr/bin/time", NULL) != 0) return fprintf(stderr, "no /usr/bin/time: skipped\n"), 0;
  char f[1024], pre[512];
  snprintf(f, sizeof f, "--threads 1 --stats-json '%s'", ck_out("w1.json"));
  ASSERT_EQ_INT(br("", "demo.tif", "w1.tif", f), 0);
  static const char *const flags[] = {"--tile-size 256", "--ft replay --tile-size 256", "--ft dual --tile-size 300"};
  for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
    snprintf(pre, sizeof pre, "%s -n 3", mpirun);
    snprintf(f, sizeof f, "%s --stats-json '%s'", flags[k], ck_out("w3.json"));
    ASSERT_EQ_INT(br(pre, "demo.tif", "w3.tif", f), 0);
    ASSERT(rc_same_file(ck_out("w1.tif"), ck_out("w3.tif")));
    const char *a = rc_slurp(ck_out("w1.json")), *b = rc_slurp(ck_out("w3.json"));
    ASSERT(a && b && !strncmp(a, b, (size_t)(strstr(a, "\"collective\"") - a)));
  }
  /* each rank's peak RSS */
  char c[4096];
  snprintf(c, sizeof c,
           "%s -n 3 sh -c 'exec /usr/bin/time -f %%M -o \"%s/rss.$OMPI_COMM_WORLD_RANK\" \"$0\" \"$@\"' '%s' breach -q "
           "--threads 1 '%s/demo.tif' '%s'",
           mpirun, ck_outdir, ck_tf, ck_dir, ck_out("w4.tif"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(rc_same_file(ck_out("w1.tif"), ck_out("w4.tif")));
  long rss[3];
  for (int r = 0; r < 3; r++) {
    char name[64];
    snprintf(name, sizeof name, "rss.%d", r);
    const char *t = rc_slurp(ck_out(name));
    ASSERT(t != NULL);
    rss[r] = atol(t); /* KiB */
  }
  printf("  breach under mpirun -n 3, peak RSS KiB by rank: %ld %ld %ld\n", rss[0], rss[1], rss[2]);
  ASSERT(rss[1] + 20 * 1024 < rss[0] && rss[2] + 20 * 1024 < rss[0]);
  return 0;
}

static int test_bad_input(void) {
  char c[2048], err[600];
  snprintf(err, sizeof err, "%s/bad.stderr", ck_outdir);
  const struct {
    const char *args;
    int code;
    const char *says;
  } cases[] = {
      {"'%s/nonexistent.tif' '%s/bad.tif'", 3, "nonexistent.tif"},
      {"'%s/notraster.tif' '%s/bad.tif'", 3, "notraster.tif"},
      {"'%s/demo.tif' '%s/bad.tif' --mem 40M", 7, "holds the whole raster"},
      {"'%s/demo.tif' '%s/bad.tif' --mode constrained --max-depth 1 --mem 60M", 7, "holds the whole raster"},
      {"'%s/demo.tif' '%s/bad.tif' --epsilon 3", 2, "expected DEM and OUT"},
      {"'%s/demo.tif' '%s/bad.tif' --mode partial", 2, "--mode: 'partial' is not one of complete, selective, constrained"},
      {"'%s/demo.tif' '%s/bad.tif' --mode", 2, "--mode needs a value"},
      {"'%s/demo.tif' '%s/bad.tif' --max-length 5", 2, "--max-length needs --mode selective or constrained"},
      {"'%s/demo.tif' '%s/bad.tif' --mode complete --max-depth 2", 2, "--max-depth needs --mode selective"},
      {"'%s/demo.tif' '%s/bad.tif' --fill", 2, "--fill needs --mode selective or constrained"},
      {"'%s/demo.tif' '%s/bad.tif' --mode selective", 2, "--mode selective needs --max-length or --max-depth"},
      {"'%s/demo.tif' '%s/bad.tif' --mode constrained --fill", 2, "--mode constrained needs --max-length"},
      {"'%s/demo.tif' '%s/bad.tif' --mode selective --max-length 0", 2, "--max-length: 0 is out of range"},
      {"'%s/demo.tif' '%s/bad.tif' --mode selective --max-length -4", 2, "--max-length: -4 is out of range"},
      {"'%s/demo.tif' '%s/bad.tif' --mode selective --max-length 2.5", 2, "--max-length: '2.5' is not an integer"},
      {"'%s/demo.tif' '%s/bad.tif' --mode selective --max-depth 0", 2, "--max-depth must be positive, got 0"},
      {"'%s/demo.tif' '%s/bad.tif' --mode selective --max-depth -1", 2, "--max-depth must be positive, got -1"},
      {"'%s/demo.tif' '%s/bad.tif' --mode selective --max-depth nan", 2, "--max-depth: 'nan' is not a finite number"},
      {"'%s/demo.tif' '%s/bad.tif' --mode constrained --max-depth inf", 2, "--max-depth: 'inf' is not a finite"},
      {"'%s/nonexistent.tif' '%s/bad.tif' --mode selective", 2, "needs --max-length or --max-depth"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    char args[1200];
    snprintf(args, sizeof args, cases[k].args, ck_dir, ck_outdir);
    snprintf(c, sizeof c, "'%s' breach %s", ck_tf, args);
    unlink(ck_out("bad.tif"));
    const int rc = rc_run(c, err);
    const char *msg = rc_slurp(err);
    const char *nl = strchr(msg, '\n');
    if (!strstr(msg, cases[k].says) || rc != cases[k].code || !nl || nl[1] != '\0') {
      fprintf(stderr, "breach %s: exit %d: %s\n", args, rc, msg);
      return 1;
    }
    ASSERT(access(ck_out("bad.tif"), F_OK) != 0);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  shared = argv[3];
  ck_init(argv[1], argv[2], "breach");
  GDALAllRegister();
  ck_mpirun(mpirun, sizeof mpirun);
  static const tr_test_case cases[] = {
      TR_TEST(test_richdem_parity), TR_TEST(test_richdem_binary), TR_TEST(test_reference), TR_TEST(test_corridors),
      TR_TEST(test_no_pit_left),    TR_TEST(test_nonfinite),      TR_TEST(test_same_bytes), TR_TEST(test_writer_only), TR_TEST(test_bad_input)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
