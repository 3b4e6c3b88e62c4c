/*
 * test_breach.c - `terrafort breach` as a user runs it: RichDEM 2.2.9's
 * rd_depressions_breach COMPLETE NOEPS NOFILL outputs on the two shared
 * DEMs (../shared/data/richdem, skipped when absent) cell for cell, the
 * same nodata cells; on the test DEMs: no pit is left (every valid cell off
 * the edge and away from nodata has a neighbour no higher; with --epsilon
 * every cut cell a strictly lower one), cells only go down except pits
 * raised to their lowest neighbour; the same bytes for any thread count,
 * tile size and under mpirun; bad input refused with one line and no file.
 */
#include <gdal.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_kit.h"
#include "tr_test.h"

static const char *shared;
static char mpirun[256];

static int br(const char *pre, const char *in, const char *out, const char *flags) {
  return ck_run(pre, "breach", "", in, out, flags);
}

static const char *richdem(const char *dem, const char *name) {
  static char p[2][1024];
  static int k;
  k = (k + 1) % 2;
  snprintf(p[k], sizeof p[k], "%s/richdem/%s/%s", shared, dem, name);
  return p[k];
}

/* RichDEM's nodata: the file's, and 0 where the DEM declares none (GDAL's
 * answer RichDEM takes). Ours is the DEM's, or none. */
static int test_richdem_parity(void) {
  struct stat sb;
  if (stat(richdem("loganvrt", "breach_complete.tif"), &sb) != 0) {
    printf("skip: no RichDEM outputs under %s\n", shared);
    return 0;
  }
  static const char *const dems[][2] = {{"loganvrt", "LoganVRT/output.vrt"}, {"enogeo", "enogeo.tif"}};
  static const long changed_want[] = {1396, 8037};
  for (int d = 0; d < 2; d++) {
    char in[1024];
    snprintf(in, sizeof in, "%s/%s", shared, dems[d][1]);
    ASSERT_EQ_INT(br("", in, "rd.tif", ""), 0);
    rc_raster a, b, z;
    ASSERT(rc_load(ck_out("rd.tif"), &a) == 0 && rc_load(richdem(dems[d][0], "breach_complete.tif"), &b) == 0 &&
           rc_load(in, &z) == 0);
    ASSERT(a.rows == b.rows && a.cols == b.cols);
    long diff = 0, changed = 0;
    for (long i = 0; i < (long)a.rows * a.cols; i++) {
      const int na = rc_is_nodata(&a, a.v[i]), nb = rc_is_nodata(&b, b.v[i]);
      if (na != nb || (!na && a.v[i] != b.v[i])) {
        if (!diff) fprintf(stderr, "%s: cell %ld: %.9g vs RichDEM %.9g\n", dems[d][0], i, a.v[i], b.v[i]);
        diff++;
      }
      changed += !na && a.v[i] != z.v[i];
    }
    rc_free(&a);
    rc_free(&b);
    rc_free(&z);
    ASSERT_EQ_INT(diff, 0);
    ASSERT_EQ_INT(changed, changed_want[d]); /* RichDEM's own count of cut or raised cells */
  }
  return 0;
}

/* No pit left, and how cells moved. */
static int drains(const char *in, const char *out, int strict) {
  rc_raster z, b;
  ASSERT(rc_load(in, &z) == 0 && rc_load(out, &b) == 0);
  long pits = 0, up = 0, cut = 0;
  for (int r = 0; r < b.rows; r++)
    for (int c = 0; c < b.cols; c++) {
      const long i = (long)r * b.cols + c;
      const int nd = rc_is_nodata(&b, b.v[i]);
      ASSERT_EQ_INT(nd, rc_is_nodata(&z, z.v[i]));
      if (nd) continue;
      int edge = r == 0 || c == 0 || r == b.rows - 1 || c == b.cols - 1, lower = 0, lowereq = 0;
      double lowest = INFINITY;
      for (int dr = -1; dr <= 1 && !edge; dr++)
        for (int dc = -1; dc <= 1; dc++) {
          if (!dr && !dc) continue;
          const double v = b.v[(long)(r + dr) * b.cols + c + dc];
          if (rc_is_nodata(&b, v)) edge = 1;
          lower |= v < b.v[i];
          lowereq |= v <= b.v[i];
          const double zv = z.v[(long)(r + dr) * b.cols + c + dc];
          if (zv < lowest) lowest = zv;
        }
      if (edge) continue;
      const int was_cut = b.v[i] < z.v[i];
      cut += was_cut;
      if (!lowereq || (strict && was_cut && !lower)) pits++;
      /* only pits go up, and not above their lowest neighbour in the DEM */
      if (b.v[i] > z.v[i]) {
        up++;
        ASSERT((float)b.v[i] <= (float)lowest);
      }
    }
  rc_free(&z);
  rc_free(&b);
  if (pits) fprintf(stderr, "%s: %ld cells without a way down\n", out, pits);
  return pits == 0 && cut > 0 ? 0 : 1;
}

static int test_no_pit_left(void) {
  static const char *const dems[] = {"fractal.tif", "demo.tif", "fractal_nan.tif"};
  for (size_t d = 0; d < sizeof dems / sizeof *dems; d++) {
    char in[1024];
    snprintf(in, sizeof in, "%s/%s", ck_dir, dems[d]);
    ASSERT_EQ_INT(br("", dems[d], "b.tif", ""), 0);
    ASSERT(drains(in, ck_out("b.tif"), 0) == 0);
    ASSERT_EQ_INT(br("", dems[d], "be.tif", "--epsilon"), 0);
    ASSERT(drains(in, ck_out("be.tif"), 1) == 0);
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
    ASSERT_EQ_INT(br("", dems[d], "nf.tif", ""), 0);
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
  ASSERT_EQ_INT(br("", "demo.tif", "one.tif", "--threads 1"), 0);
  static const char *const flags[] = {"--threads 2", "--threads 2 --tile-size 100", "--tile-size 333",
                                      "--ft dual --tile-size 256"};
  for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
    ASSERT_EQ_INT(br("", "demo.tif", "two.tif", flags[k]), 0);
    ASSERT(rc_same_file(ck_out("one.tif"), ck_out("two.tif")));
  }
  if (!mpirun[0]) return 0;
  char pre[300];
  snprintf(pre, sizeof pre, "%s -n 2", mpirun);
  ASSERT_EQ_INT(br(pre, "demo.tif", "mpi.tif", "--tile-size 256"), 0);
  ASSERT(rc_same_file(ck_out("one.tif"), ck_out("mpi.tif")));
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
      {"'%s/demo.tif' '%s/bad.tif' --epsilon 3", 2, "expected DEM and OUT"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    char args[1200];
    snprintf(args, sizeof args, cases[k].args, ck_dir, ck_outdir);
    snprintf(c, sizeof c, "'%s' breach %s", ck_tf, args);
    unlink(ck_out("bad.tif"));
    const int rc = rc_run(c, err);
    const char *msg = rc_slurp(err);
    if (!strstr(msg, cases[k].says) || (cases[k].code >= 0 && rc != cases[k].code)) {
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
  static const tr_test_case cases[] = {TR_TEST(test_richdem_parity), TR_TEST(test_no_pit_left),
                                       TR_TEST(test_nonfinite),        TR_TEST(test_same_bytes), TR_TEST(test_bad_input)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
