/*
 * test_interpolate.c - `terrafort interpolate` as a user runs it (CTest:
 * interp_*; the case name is the first argument).
 *
 * usage: test_interpolate CASE TESTDATA TERRAFORT SHARED_DATA
 *
 * Cases:
 *   gdal_grid   every algorithm against Debian's gdal_grid run here (its
 *               SSE/AVX single-precision invdist path off), on random points,
 *               clustered points with duplicates, collinear runs and points
 *               outside the extent, and on points sampled from
 *               TESTDATA/demo.tif and (when present) SHARED_DATA/enogeo.tif:
 *               max relative difference <= 1e-5, identical nodata cells.
 *               Also linear beyond the hull, all-points invdist on a wide
 *               grid, GDAL's quadtree average_distance_pts with equal and
 *               unequal radii (differs by the self-pair count, shown cell by
 *               cell; its scan path, 100 points or an angle, agrees),
 *               gdal_grid's selection and value options, georeferencing,
 *               CRS and nodata.
 *   brute       invdistnn, nearest, average, count and all-points invdist
 *               against a brute-force evaluation written here (double
 *               precision loops), on clustered points, with empty search
 *               windows.
 *   same_bytes  threads, tile sizes, --ft dual and mpirun -n 2 / 3 give the
 *               same bytes; XYZ text, CSV and GeoPackage inputs give the same
 *               bytes.
 *   fill_voids  --fill-voids against gdal_fillnodata (-md, -si; Float32 and
 *               Int16): within 1e-4, identical nodata; the same bytes from
 *               threads, tiles, --ft dual and mpirun -n 3.
 *   interrupt   SIGTERM and SIGINT to runs that would last hours (10^6 x
 *               10^6 tiled and 400,000^2 striped DEFLATE grids): exit 8
 *               within 1 s of the signal, one line, nothing left in the
 *               output's folder; the striped one with the stop deadline
 *               pushed to 60 s, so the run stops by itself.
 *   errors      no points, a missing -zfield, a non-numeric value, a NaN
 *               coordinate, an empty extent, an output too big for its disk
 *               (also under mpirun), a bad -a, points beyond --mem, the
 *               output being the input, collinear points for linear, an
 *               all-nodata raster for --fill-voids: one line, the documented
 *               exit code, no output file, no temporaries.
 *
 * The point sets come from a fixed-seed generator here (splitmix64; normal
 * deviates by Box-Muller), written as GeoPackage through OGR's C API and as
 * XYZ / CSV text; rasters are read back with GDALRasterIO. Failed checks are
 * counted and the case goes on (every difference is printed), as a command
 * that must succeed and does not ends the case. Each comparison prints how
 * many cells it compared, so a reader sees that the checks compared
 * something.
 */
#include <gdal.h>
#include <math.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli_kit.h"
#include "proc_check.h"
#include "tr_test.h"

static const char *shared_dir;
static char mpirun[256], errfile[1100];
static int fails;
static long long cells_compared;

static void check(int cond, const char *fmt, ...) {
  if (cond) return;
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL: ");
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
  fails++;
}

/* ---- a fixed-seed generator: splitmix64 ---- */
typedef struct {
  uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; } /* [0, 1) */
static double rng_uniform(rng_t *r, double a, double b) { return a + (b - a) * rng_unit(r); }
static long rng_int(rng_t *r, long n) { return (long)(rng_unit(r) * (double)n); } /* [0, n) */
static double rng_normal(rng_t *r, double sd) {
  const double u = 1.0 - rng_unit(r), v = rng_unit(r);
  return sd * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* ---- point sets ---- */
typedef struct {
  char name[64];
  long n, cap;
  double *x, *y, *z;
} pts_t;

static void pts_add(pts_t *p, double x, double y, double z) {
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 256;
    p->x = realloc(p->x, sizeof(double) * (size_t)p->cap);
    p->y = realloc(p->y, sizeof(double) * (size_t)p->cap);
    p->z = realloc(p->z, sizeof(double) * (size_t)p->cap);
  }
  p->x[p->n] = x;
  p->y[p->n] = y;
  p->z[p->n] = z;
  p->n++;
}
static void pts_free(pts_t *p) {
  free(p->x);
  free(p->y);
  free(p->z);
  memset(p, 0, sizeof *p);
}

/* A GeoPackage of layer "pts", EPSG:32633, a Real field "elev". */
static int write_points(const char *path, const pts_t *p) {
  VSIUnlink(path);
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GPKG"), path, 0, 0, 0, GDT_Unknown, NULL);
  if (!ds) return -1;
  OGRSpatialReferenceH sr = OSRNewSpatialReference(NULL);
  OSRImportFromEPSG(sr, 32633);
  OGRLayerH l = GDALDatasetCreateLayer(ds, "pts", sr, wkbPoint, NULL);
  OSRDestroySpatialReference(sr);
  OGRFieldDefnH fd = OGR_Fld_Create("elev", OFTReal);
  OGR_L_CreateField(l, fd, TRUE);
  OGR_Fld_Destroy(fd);
  int bad = OGR_L_StartTransaction(l) != OGRERR_NONE;
  for (long i = 0; i < p->n; i++) {
    OGRFeatureH f = OGR_F_Create(OGR_L_GetLayerDefn(l));
    OGR_F_SetFieldDouble(f, 0, p->z[i]);
    OGRGeometryH g = OGR_G_CreateGeometry(wkbPoint);
    OGR_G_SetPoint_2D(g, 0, p->x[i], p->y[i]);
    OGR_F_SetGeometryDirectly(f, g);
    bad |= OGR_L_CreateFeature(l, f) != OGRERR_NONE;
    OGR_F_Destroy(f);
  }
  bad |= OGR_L_CommitTransaction(l) != OGRERR_NONE;
  GDALClose(ds);
  return bad ? -1 : 0;
}

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

/* ---- commands: each argument single-quoted for the shell ---- */
typedef struct {
  char s[7000]; /* with errfile, within rc_run's 8192 */
  size_t n;
} cmd_t;

static void cmd_raw(cmd_t *c, const char *s) {
  c->n += (size_t)snprintf(c->s + c->n, sizeof c->s - c->n, "%s ", s);
  if (c->n >= sizeof c->s) abort();
}
static void cmd_arg(cmd_t *c, const char *a) {
  char q[2048];
  size_t k = 0;
  q[k++] = '\'';
  for (; *a && k < sizeof q - 8; a++) {
    if (*a == '\'') {
      memcpy(q + k, "'\\''", 4);
      k += 4;
    } else
      q[k++] = *a;
  }
  q[k++] = '\'';
  q[k] = 0;
  cmd_raw(c, q);
}
/* The arguments up to a NULL. */
static void cmd_add(cmd_t *c, ...) {
  va_list ap;
  va_start(ap, c);
  for (const char *a; (a = va_arg(ap, const char *));) cmd_arg(c, a);
  va_end(ap);
}
/* A NULL-terminated list. */
static void cmd_list(cmd_t *c, const char *const *l) {
  for (; l && *l; l++) cmd_arg(c, *l);
}
static void cmd_tf(cmd_t *c, const char *prefix) {
  c->n = 0;
  c->s[0] = 0;
  if (prefix) cmd_raw(c, prefix);
  cmd_add(c, ck_tf, "interpolate", "-q", NULL);
}
static int cmd_exec(const cmd_t *c) { return rc_run(c->s, errfile); }
/* A command that must succeed: else the case ends (1). */
static int cmd_ok(const cmd_t *c) {
  const int rc = cmd_exec(c);
  if (rc == 0) return 0;
  printf("command failed (%d): %s\n%s\n", rc, c->s, rc_slurp(errfile));
  fails++;
  return 1;
}
#define RUN(c) \
  do {                    \
    if (cmd_ok(c)) return 1; \
  } while (0)

static void wpath(char *buf, size_t len, const char *fmt, ...) {
  char name[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  snprintf(buf, len, "%s/%s", ck_outdir, name);
}

/* ---- rasters ---- */
static int load(const char *path, rc_raster *r) {
  if (rc_load(path, r) == 0) return 0;
  printf("FAIL: cannot read %s\n", path);
  fails++;
  rc_free(r);
  return 1;
}
#define LOAD(path, r) \
  do {                           \
    if (load(path, r)) return 1; \
  } while (0)

/* Shape, identical nodata cells, max relative difference <= 1e-5 (relative
 * to the reference b, floored at 1e-12). */
static void compare(const rc_raster *a, const rc_raster *b, double nodata, const char *what) {
  check(a->rows == b->rows && a->cols == b->cols, "%s: shape %dx%d vs %dx%d", what, a->rows, a->cols, b->rows,
        b->cols);
  if (a->rows != b->rows || a->cols != b->cols) return;
  const long long n = (long long)a->rows * a->cols;
  long long differ = 0, m = 0;
  double worst = 0;
  int nan_seen = 0;
  for (long long i = 0; i < n; i++) {
    const int na = a->v[i] == nodata, nb = b->v[i] == nodata;
    differ += na != nb;
    if (na || nb) continue;
    const double d = fabs(a->v[i] - b->v[i]) / fmax(fabs(b->v[i]), 1e-12);
    if (isnan(d)) nan_seen = 1;
    else if (d > worst) worst = d;
    m++;
  }
  cells_compared += m;
  printf("%s: %lld cells compared, %lld nodata, max relative difference %.3g\n", what, m, n - m - differ, worst);
  check(differ == 0, "%s: %lld nodata cells differ", what, differ);
  check(!nan_seen && worst <= 1e-5, "%s: max relative difference %.3g%s", what, worst, nan_seen ? " (NaN)" : "");
}

/* The band's bytes in its own type (what "same bytes" compares). */
static unsigned char *band_bytes(const char *path, size_t *len) {
  *len = 0;
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds) return NULL;
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  const GDALDataType t = GDALGetRasterDataType(b);
  const int cols = GDALGetRasterXSize(ds), rows = GDALGetRasterYSize(ds);
  const size_t n = (size_t)cols * (size_t)rows * (size_t)GDALGetDataTypeSizeBytes(t);
  unsigned char *buf = malloc(n ? n : 1);
  if (GDALRasterIO(b, GF_Read, 0, 0, cols, rows, buf, cols, rows, t, 0, 0) != CE_None) {
    free(buf);
    buf = NULL;
  } else
    *len = n;
  GDALClose(ds);
  return buf;
}
static int same_band(const char *path, const unsigned char *ref, size_t len) {
  size_t n;
  unsigned char *b = band_bytes(path, &n);
  const int same = b && ref && n == len && memcmp(b, ref, n) == 0;
  free(b);
  return same;
}

static int file_exists(const char *p) { return access(p, F_OK) == 0; }

/* N points (z 0) around NC centres drawn in X0..X1 x Y0..Y1, normal with
 * standard deviation SD about a centre drawn for each. */
static void add_clusters(pts_t *p, rng_t *r, int nc, double x0, double x1, double y0, double y1, int n, double sd) {
  double cx[8], cy[8];
  for (int i = 0; i < nc; i++) cx[i] = rng_uniform(r, x0, x1);
  for (int i = 0; i < nc; i++) cy[i] = rng_uniform(r, y0, y1);
  for (int i = 0; i < n; i++) {
    const long k = rng_int(r, nc);
    const double x = cx[k] + rng_normal(r, sd);
    pts_add(p, x, cy[k] + rng_normal(r, sd), 0);
  }
}

/* ---- case gdal_grid ---- */

/* random, clustered (with duplicates, a collinear run, points outside), and
 * points sampled from demo.tif and enogeo.tif (when present). */
static int point_sets(pts_t *sets, int max) {
  rng_t r = {7};
  int ns = 0;
  pts_t *p = &sets[ns++];
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "random");
  for (int i = 0; i < 400; i++) {
    const double x = rng_uniform(&r, 0, 1000), y = rng_uniform(&r, 0, 700);
    pts_add(p, x, y, rng_uniform(&r, -50, 300));
  }
  p = &sets[ns++];
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "clustered");
  add_clusters(p, &r, 6, 100, 900, 100, 600, 300, 15);
  for (int i = 0; i < 10; i++) pts_add(p, p->x[i], p->y[i], 0); /* exact duplicates */
  for (int i = 0; i < 20; i++) pts_add(p, i == 19 ? 950.0 : 50 + i * (900.0 / 19), 350.0, 0); /* collinear */
  pts_add(p, -400, 350, 0);
  pts_add(p, 1500, 350, 0);
  pts_add(p, 500, 1200, 0);
  for (long i = 0; i < p->n; i++) p->z[i] = rng_uniform(&r, 0, 100);

  char dems[2][1024];
  snprintf(dems[0], sizeof dems[0], "%s/demo.tif", ck_dir);
  snprintf(dems[1], sizeof dems[1], "%s/enogeo.tif", shared_dir);
  for (int d = 0; d < 2 && ns < max; d++) {
    if (!file_exists(dems[d])) {
      printf("skip: no %s\n", dems[d]);
      continue;
    }
    rc_raster a;
    if (load(dems[d], &a)) return -1;
    p = &sets[ns++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", strrchr(dems[d], '/') + 1);
    long rr[3000], cc[3000];
    for (int i = 0; i < 3000; i++) rr[i] = rng_int(&r, a.rows);
    for (int i = 0; i < 3000; i++) cc[i] = rng_int(&r, a.cols);
    for (int i = 0; i < 3000; i++) {
      const double v = a.v[(size_t)rr[i] * (size_t)a.cols + (size_t)cc[i]];
      if (!isfinite(v) || (a.has_nodata && v == a.nodata)) continue;
      const double x = a.gt[0] + ((double)cc[i] + rng_unit(&r)) * a.gt[1];
      pts_add(p, x, a.gt[3] + ((double)rr[i] + rng_unit(&r)) * a.gt[5], v);
    }
    printf("%s: %ld of 3000 sampled cells hold data\n", p->name, p->n);
    rc_free(&a);
  }
  return ns;
}

static const char *const ALGS[] = {
    "invdist:power=2:nodata=-9999",
    "invdist:power=3:smoothing=2:nodata=-9999",
    "invdist:radius1=R:radius2=R2:angle=25:max_points=6:min_points=2:nodata=-9999",
    "invdist:max_points=5:nodata=-9999", /* max_points without radii: ignored, as GDAL */
    "invdistnn:power=2:radius=R:max_points=12:nodata=-9999",
    "invdistnn:power=1.5:smoothing=1:radius=R:max_points=0:min_points=3:nodata=-9999",
    "average:radius1=R:radius2=R:min_points=2:nodata=-9999",
    "average:radius1=R:radius2=R2:angle=40:nodata=-9999",
    "nearest:nodata=-9999",
    "nearest:radius1=R:radius2=R:nodata=-9999",
    "nearest:radius1=R:radius2=R2:angle=15:nodata=-9999",
    "linear:nodata=-9999",
    "linear:radius=0:nodata=-9999",
    "linear:radius=R:nodata=-9999",
    "minimum:radius1=R:radius2=R:nodata=-9999",
    "maximum:radius1=R:radius2=R:nodata=-9999",
    "range:radius1=R:radius2=R2:angle=30:nodata=-9999",
    "count:radius1=R:radius2=R:min_points=3:nodata=-9999",
    "average_distance:radius1=R:radius2=R:nodata=-9999",
    /* GDAL's quadtree path (no angle, > 100 points) pairs each point with
     * itself too: terrafort-interpolate(1); compared on its scan path here and
     * below, the quadtree path's difference cell by cell */
    "average_distance_pts:radius1=R:radius2=R2:angle=20:nodata=-9999",
    /* GDAL 3.6's quadtree case takes unequal radii too (no angle, > 100
     * points): nearest within the square of half-side max(radius1, radius2),
     * also with one radius 0; the metrics within that square and the ellipse,
     * which a negative radius cuts; negative equal radii: the scan */
    "nearest:radius1=R:radius2=R2:nodata=-9999",
    "nearest:radius1=0:radius2=R:nodata=-9999",
    "nearest:radius1=-R2:radius2=-R2:nodata=-9999",
    "range:radius1=-R:radius2=R2:nodata=-9999",
};

/* ALG with "R2" and "R" replaced by the radii, "%.6f". */
static void subst(char *out, size_t len, const char *alg, double R, double R2) {
  size_t o = 0;
  for (const char *p = alg; *p && o + 40 < len; p++) {
    if (p[0] == 'R' && p[1] == '2') {
      o += (size_t)snprintf(out + o, len - o, "%.6f", R2);
      p++;
    } else if (p[0] == 'R')
      o += (size_t)snprintf(out + o, len - o, "%.6f", R);
    else
      out[o++] = *p;
  }
  out[o] = 0;
}

/* gdal_grid with its SSE/AVX single-precision invdist path off. */
static void cmd_gdal_grid(cmd_t *c, int plain) {
  c->n = 0;
  c->s[0] = 0;
  cmd_add(c, "gdal_grid", "-q", NULL);
  if (!plain) cmd_add(c, "--config", "GDAL_USE_AVX", "NO", "--config", "GDAL_USE_SSE", "NO", NULL);
}

/* Runs terrafort (OURS) and gdal_grid (REF) on the same points and grid and compares. */
static int grid_pair(const char *a, const char *const *tiles, const char *const *grid, const char *pts, int plain_gdal,
                     const char *what) {
  char ours[1100], ref[1100];
  wpath(ours, sizeof ours, "t.tif");
  wpath(ref, sizeof ref, "g.tif");
  cmd_t c;
  cmd_tf(&c, NULL);
  cmd_list(&c, tiles);
  cmd_add(&c, "-a", a, "-zfield", "elev", NULL);
  cmd_list(&c, grid);
  cmd_add(&c, pts, ours, NULL);
  RUN(&c);
  cmd_gdal_grid(&c, plain_gdal);
  cmd_add(&c, "-a", a, "-zfield", "elev", NULL);
  cmd_list(&c, grid);
  cmd_add(&c, pts, ref, NULL);
  RUN(&c);
  rc_raster o, g;
  LOAD(ours, &o);
  if (load(ref, &g)) {
    rc_free(&o);
    return 1;
  }
  compare(&o, &g, -9999, what);
  rc_free(&o);
  rc_free(&g);
  return 0;
}

static int case_gdal_grid(void) {
  pts_t sets[4];
  const int ns = point_sets(sets, 4);
  if (ns < 0) return 1;
  int stop = 0;
  for (int s = 0; s < ns && !stop; s++) {
    const pts_t *p = &sets[s];
    char pts[1100], what[1200], a[512];
    wpath(pts, sizeof pts, "g_%s.gpkg", p->name);
    if (write_points(pts, p)) {
      printf("FAIL: cannot write %s\n", pts);
      return 1;
    }
    double x0 = p->x[0], x1 = p->x[0], y0 = p->y[0], y1 = p->y[0];
    for (long i = 0; i < p->n; i++) {
      x0 = fmin(x0, p->x[i]);
      x1 = fmax(x1, p->x[i]);
      y0 = fmin(y0, p->y[i]);
      y1 = fmax(y1, p->y[i]);
    }
    /* a grid a bit inside the points' extent, so some points lie outside it */
    const double gx0 = x0 + 0.05 * (x1 - x0), gx1 = x1 - 0.05 * (x1 - x0);
    const double gy0 = y0 + 0.05 * (y1 - y0), gy1 = y1 - 0.05 * (y1 - y0);
    const double spacing = sqrt((x1 - x0) * (y1 - y0) / (double)p->n);
    const double R = 2.5 * spacing, R2 = 1.5 * spacing;
    const int metric = fabs(x1 - x0) >= 10;
    char e[4][40];
    snprintf(e[0], 40, "%.6f", gx0);
    snprintf(e[1], 40, "%.6f", gx1);
    snprintf(e[2], 40, "%.6f", gy0);
    snprintf(e[3], 40, "%.6f", gy1);
    const char *const grid[] = {"-txe", e[0], e[1], "-tye", e[2], e[3], "-outsize", "83", "61", NULL};
    const char *const tile32[] = {"--tile-size", "32", NULL};
    for (size_t k = 0; k < sizeof ALGS / sizeof ALGS[0] && !stop; k++) {
      if (!strncmp(ALGS[k], "linear", 6) && !metric) continue;
      /* degrees: gdal_grid 3.6's linear leaves most nodes nodata there
       * (terrafort-interpolate(1), DIFFERENCES); compared on metric sets */
      subst(a, sizeof a, ALGS[k], R, R2);
      snprintf(what, sizeof what, "%s %s", p->name, a);
      stop = grid_pair(a, tile32, grid, pts, 0, what);
    }
    /* linear where most nodes lie outside the hull: each tile takes only the points its
     * fallback search can reach (interp_tile_input), not all of them; tiles of 8 nodes
     * and the default tiling against gdal_grid */
    if (metric && !stop) {
      char h[4][40], lin[2][128];
      snprintf(h[0], 40, "%.6f", x0 - 0.6 * (x1 - x0));
      snprintf(h[1], 40, "%.6f", x1 + 0.4 * (x1 - x0));
      snprintf(h[2], 40, "%.6f", y0 - 0.5 * (y1 - y0));
      snprintf(h[3], 40, "%.6f", y1 + 0.7 * (y1 - y0));
      snprintf(lin[0], sizeof lin[0], "linear:nodata=-9999");
      snprintf(lin[1], sizeof lin[1], "linear:radius=%.6f:nodata=-9999", R);
      const char *const hgrid[] = {"-txe", h[0], h[1], "-tye", h[2], h[3], "-outsize", "97", "71", NULL};
      const char *const tile8[] = {"--tile-size", "8", NULL};
      for (int k = 0; k < 2 && !stop; k++)
        for (int t = 0; t < 2 && !stop; t++) {
          snprintf(what, sizeof what, "%s %s beyond the hull %s", p->name, lin[k], t ? "[]" : "--tile-size 8");
          stop = grid_pair(lin[k], t ? NULL : tile8, hgrid, pts, 1, what);
        }
    }
    /* all-points power-2 invdist on a grid many 32-node blocks wide: there terrafort
     * interpolates the far points' sums (idw2_block.c); gdal_grid sums every term */
    const char *const wide[] = {"-txe", e[0], e[1], "-tye", e[2], e[3], "-outsize", "330", "250", NULL};
    const char *const idw[] = {"invdist:power=2:nodata=-9999", "invdist:power=2:smoothing=3:nodata=-9999"};
    for (int k = 0; k < 2 && !stop; k++) {
      snprintf(what, sizeof what, "%s %s 330x250", p->name, idw[k]);
      stop = grid_pair(idw[k], NULL, wide, pts, 0, what);
    }
  }
  /* the first 100 random points: gdal_grid's scan path whatever the radii */
  char pts100[1100];
  wpath(pts100, sizeof pts100, "g_random100.gpkg");
  if (!stop) {
    const long n = sets[0].n;
    sets[0].n = 100;
    stop = write_points(pts100, &sets[0]) != 0;
    sets[0].n = n;
    if (stop) printf("FAIL: cannot write %s\n", pts100);
  }
  for (int s = 0; s < ns; s++) pts_free(&sets[s]);
  if (stop) return 1;

  /* average_distance_pts with unequal radii (issue 28), with and without angle. The
   * scan path (100 points, or an angle) agrees within 1e-5 */
  char pts[1100];
  wpath(pts, sizeof pts, "g_random.gpkg");
  const char *const qgrid[] = {"-txe", "50", "950", "-tye", "20", "680", "-outsize", "60", "44", NULL};
  const char *const scan[][2] = {{pts100, "average_distance_pts:radius1=150:radius2=90:nodata=-9999"},
                                 {pts100, "average_distance_pts:radius1=90:radius2=150:nodata=-9999"},
                                 {pts100, "average_distance_pts:radius1=150:radius2=90:angle=30:nodata=-9999"},
                                 {pts, "average_distance_pts:radius1=90:radius2=50:angle=30:nodata=-9999"},
                                 {pts, "average_distance_pts:radius1=50:radius2=90:angle=-65:nodata=-9999"}};
  for (size_t k = 0; k < sizeof scan / sizeof scan[0]; k++) {
    char what[1300];
    snprintf(what, sizeof what, "%s %s", strrchr(scan[k][0], '/') + 1, scan[k][1]);
    if (grid_pair(scan[k][1], NULL, qgrid, scan[k][0], 1, what)) return 1;
  }
  /* Where gdal_grid takes its quadtree path (no angle, max(radius1, radius2) > 0, > 100
   * points; equal radii or not) it divides the same sum of pair distances by P + m - d
   * (P pairs of distinct points, m points, d 0 or 1) where terrafort divides by P; with one
   * point it gives 0 (d 0) or nodata (d 1) where terrafort gives nodata; shown cell by
   * cell, each of d's two values seen */
  const char *const radii[][2] = {{"90", "90"}, {"90", "50"}, {"50", "90"}};
  for (size_t r = 0; r < sizeof radii / sizeof radii[0]; r++) {
    char q[3][1100], adp[128], cnt[128];
    snprintf(adp, sizeof adp, "average_distance_pts:radius1=%s:radius2=%s:nodata=-9999", radii[r][0], radii[r][1]);
    snprintf(cnt, sizeof cnt, "count:radius1=%s:radius2=%s:nodata=-9999", radii[r][0], radii[r][1]);
    const char *const qalg[] = {adp, cnt, adp};
    const char *const qtag[] = {"adp", "cnt", "gdal"};
    for (int k = 0; k < 3; k++) {
      wpath(q[k], sizeof q[k], "q_%s.tif", qtag[k]);
      cmd_t c;
      if (k < 2) cmd_tf(&c, NULL);
      else cmd_gdal_grid(&c, 1);
      cmd_add(&c, "-a", qalg[k], "-zfield", "elev", NULL);
      cmd_list(&c, qgrid);
      cmd_add(&c, pts, q[k], NULL);
      RUN(&c);
    }
    rc_raster ours, m, g;
    LOAD(q[0], &ours);
    LOAD(q[1], &m);
    LOAD(q[2], &g);
    long long ok = 0, misfit = 0, d0 = 0, d1 = 0, single = 0;
    for (long long i = 0; i < (long long)ours.rows * ours.cols; i++) {
      if (m.v[i] < 2) { /* no pair: ours nodata; gdal_grid's nodata, or 0 from a self-pair */
        single += m.v[i] == 1;
        const int fit = ours.v[i] == -9999 && (g.v[i] == -9999 || (m.v[i] == 1 && g.v[i] == 0));
        misfit += !fit;
        d0 += m.v[i] == 1 && g.v[i] == 0;
        d1 += m.v[i] == 1 && g.v[i] == -9999;
        continue;
      }
      ok++;
      const double P = m.v[i] * (m.v[i] - 1) / 2, s_ = ours.v[i] * P;
      const double e0 = fabs(s_ / (P + m.v[i]) - g.v[i]), e1 = fabs(s_ / (P + m.v[i] - 1) - g.v[i]);
      const double tol = 1e-6 * fabs(g.v[i]);
      misfit += !(e0 <= tol || e1 <= tol);
      d0 += e0 <= tol && !(e1 <= tol);
      d1 += e1 <= tol && !(e0 <= tol);
    }
    printf("average_distance_pts quadtree radius1=%s radius2=%s: %lld cells with >= 2 points, %lld with 1, "
           "d=0 in %lld, d=1 in %lld, %lld misfit\n",
           radii[r][0], radii[r][1], ok, single, d0, d1, misfit);
    check(ok > 100 && misfit == 0 && d0 > 0 && d1 > 0,
          "average_distance_pts quadtree radius1=%s radius2=%s: the difference is exactly the self-pair count",
          radii[r][0], radii[r][1]);
    rc_free(&ours);
    rc_free(&m);
    rc_free(&g);
  }

  /* gdal_grid's selection and value options, on the random set */
  static const char *const extras[][8] = {{"-where", "elev > 100"},
                                           {"-sql", "SELECT * FROM pts WHERE elev < 200"},
                                           {"-spat", "100", "100", "800", "500"},
                                           {"-clipsrc", "200", "100", "900", "600"},
                                           {"-clipsrc", "POLYGON((0 0,1000 0,500 700,0 0))"},
                                           {"-z_increase", "10", "-z_multiply", "0.5"},
                                           {"-ot", "Int16"},
                                           {"-ot", "Float32"},
                                           {"-tr", "13", "17"},
                                           {"-l", "pts"}};
  char ours_p[1100], ref_p[1100];
  wpath(ours_p, sizeof ours_p, "t.tif");
  wpath(ref_p, sizeof ref_p, "g.tif");
  for (size_t k = 0; k < sizeof extras / sizeof extras[0]; k++) {
    const int tr = !strcmp(extras[k][0], "-tr");
    const char *const ogrid[] = {"-txe", "50", "950", "-tye", "20", "680", tr ? NULL : "-outsize", "70", "52", NULL};
    char what[256] = "options";
    for (const char *const *x = extras[k]; *x; x++) snprintf(what + strlen(what), sizeof what - strlen(what), " %s", *x);
    const char *a = "invdistnn:radius=120:max_points=8:nodata=-9999";
    cmd_t c;
    cmd_tf(&c, NULL);
    cmd_add(&c, "-a", a, "-zfield", "elev", NULL);
    cmd_list(&c, extras[k]);
    cmd_list(&c, ogrid);
    cmd_add(&c, pts, ours_p, NULL);
    RUN(&c);
    cmd_gdal_grid(&c, 1);
    cmd_add(&c, "-a", a, "-zfield", "elev", NULL);
    cmd_list(&c, extras[k]);
    cmd_list(&c, ogrid);
    cmd_add(&c, pts, ref_p, NULL);
    RUN(&c);
    rc_raster o, r;
    LOAD(ours_p, &o);
    LOAD(ref_p, &r);
    compare(&o, &r, -9999, what);
    check(o.type == r.type, "%s: data type %d vs %d", what, o.type, r.type);
    rc_free(&o);
    rc_free(&r);
  }
  /* georeferencing and CRS as gdal_grid's, nodata declared (numpy's allclose: atol 1e-8) */
  rc_raster o, r;
  LOAD(ours_p, &o);
  LOAD(ref_p, &r);
  int gt_ok = 1;
  for (int i = 0; i < 6; i++) gt_ok &= fabs(o.gt[i] - r.gt[i]) <= 1e-8 + 1e-12 * fabs(r.gt[i]);
  check(gt_ok, "geotransform");
  OGRSpatialReferenceH so = OSRNewSpatialReference(o.wkt), sg = OSRNewSpatialReference(r.wkt);
  check(so && sg && OSRIsSame(so, sg), "CRS");
  OSRDestroySpatialReference(so);
  OSRDestroySpatialReference(sg);
  check(o.has_nodata && o.nodata == -9999, "nodata declared");
  rc_free(&o);
  rc_free(&r);
  printf("%lld cells compared in all\n", cells_compared);
  return fails != 0;
}

/* ---- case brute ---- */

typedef struct {
  double d2;
  long i;
} near_t;
static int near_cmp(const void *a, const void *b) {
  const near_t *x = a, *y = b;
  if (x->d2 != y->d2) return x->d2 < y->d2 ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* The value of ALG at every node of an NX x NY grid over X0..X1, Y0..Y1
 * (node centres, north up), from every point: the definitions, evaluated
 * without any search structure. -9999 where a window is empty. */
static void brute(const char *alg, const pts_t *p, int nx, int ny, double x0, double x1, double y0, double y1,
                  double r, int k, double *out) {
  const double dx = (x1 - x0) / nx, dy = (y1 - y0) / ny;
  double *d2 = malloc(sizeof(double) * (size_t)p->n);
  near_t *nb = malloc(sizeof(near_t) * (size_t)p->n);
  for (int row = 0; row < ny; row++) {
    const double y = y1 - (row + 0.5) * dy;
    for (int col = 0; col < nx; col++) {
      const double x = x0 + (col + 0.5) * dx;
      double *o = &out[(size_t)row * nx + col];
      *o = -9999;
      for (long i = 0; i < p->n; i++) d2[i] = (p->x[i] - x) * (p->x[i] - x) + (p->y[i] - y) * (p->y[i] - y);
      if (!strcmp(alg, "invdist")) {
        long on = -1;
        double sz = 0, sw = 0;
        for (long i = 0; i < p->n && on < 0; i++) {
          if (d2[i] < 1e-13) on = i; /* a node on a point takes the first such point's value */
          sz += p->z[i] / d2[i];
          sw += 1 / d2[i];
        }
        *o = on >= 0 ? p->z[on] : sz / sw;
      } else if (!strcmp(alg, "nearest")) {
        long best = 0;
        for (long i = 1; i < p->n; i++)
          if (d2[i] <= d2[best]) best = i; /* the later point on ties */
        *o = p->z[best];
      } else if (!strcmp(alg, "invdistnn")) {
        long m = 0;
        for (long i = 0; i < p->n; i++)
          if (d2[i] <= r * r) nb[m++] = (near_t){d2[i], i};
        qsort(nb, (size_t)m, sizeof *nb, near_cmp);
        if (m > k) m = k;
        if (m > 0) {
          if (nb[0].d2 < 1e-13) *o = p->z[nb[0].i];
          else {
            double sz = 0, sw = 0;
            for (long j = 0; j < m; j++) {
              sz += (1 / nb[j].d2) * p->z[nb[j].i];
              sw += 1 / nb[j].d2;
            }
            *o = sz / sw;
          }
        }
      } else { /* average, count */
        long m = 0;
        double sz = 0;
        for (long i = 0; i < p->n; i++)
          if (d2[i] <= r * r) {
            m++;
            sz += p->z[i];
          }
        if (!strcmp(alg, "count")) *o = (double)m;
        else if (m > 0) *o = sz / (double)m;
      }
    }
  }
  free(d2);
  free(nb);
}

/* Runs terrafort on PTS over -50..550 x -50..550 and compares with brute(). */
static int brute_pair(const char *alg, const char *spec, const pts_t *p, const char *pts, int nx, int ny,
                      const char *tile, double r, int k, const char *what, int want_empty) {
  char out[1100], sx[16], sy[16];
  wpath(out, sizeof out, "b.tif");
  snprintf(sx, sizeof sx, "%d", nx);
  snprintf(sy, sizeof sy, "%d", ny);
  cmd_t c;
  cmd_tf(&c, NULL);
  cmd_add(&c, "--tile-size", tile, "-a", spec, "-zfield", "elev", "-txe", "-50.0", "550.0", "-tye", "-50.0", "550.0",
          "-outsize", sx, sy, pts, out, NULL);
  RUN(&c);
  rc_raster got, ref = {0};
  LOAD(out, &got);
  ref.rows = ny;
  ref.cols = nx;
  ref.v = malloc(sizeof(double) * (size_t)nx * (size_t)ny);
  brute(alg, p, nx, ny, -50.0, 550.0, -50.0, 550.0, r, k, ref.v);
  compare(&got, &ref, -9999, what);
  if (want_empty) {
    long long empty = 0;
    for (long long i = 0; i < (long long)nx * ny; i++) empty += ref.v[i] == -9999;
    check(empty > 0, "%s: some search windows are empty", what);
  }
  rc_free(&got);
  rc_free(&ref);
  return 0;
}

static int case_brute(void) {
  rng_t rg = {11};
  pts_t p = {0};
  add_clusters(&p, &rg, 4, 0, 500, 0, 500, 250, 8);
  pts_add(&p, 100, 100, 0);
  pts_add(&p, 100, 100, 0);
  for (long i = 0; i < p.n; i++) p.z[i] = rng_uniform(&rg, 0, 10);
  char pts[1100];
  wpath(pts, sizeof pts, "b.gpkg");
  if (write_points(pts, &p)) return 1;
  static const struct {
    const char *alg, *spec;
    double r;
    int k;
  } algs[] = {{"invdist", "invdist:nodata=-9999", 0, 0},
              {"nearest", "nearest:nodata=-9999", 0, 0},
              {"invdistnn", "invdistnn:radius=40:max_points=7:nodata=-9999", 40.0, 7},
              {"average", "average:radius1=20:radius2=20:nodata=-9999", 20.0, 0},
              {"count", "count:radius1=20:radius2=20:nodata=-9999", 20.0, 0}};
  for (size_t a = 0; a < sizeof algs / sizeof algs[0]; a++) {
    char what[64];
    snprintf(what, sizeof what, "brute %s", algs[a].alg);
    const int want_empty = !strcmp(algs[a].alg, "invdistnn") || !strcmp(algs[a].alg, "average");
    if (brute_pair(algs[a].alg, algs[a].spec, &p, pts, 45, 39, "16", algs[a].r, algs[a].k, what, want_empty)) return 1;
  }
  /* all-points invdist on a grid many 32-node blocks wide (far sums interpolated,
   * idw2_block.c), with values of both signs (nodes near zero are recomputed exactly)
   * and a node exactly on a point */
  pts_add(&p, 101.0, 101.25, 7.0); /* node (row 179, col 75) */
  double *positive = malloc(sizeof(double) * (size_t)p.n);
  memcpy(positive, p.z, sizeof(double) * (size_t)p.n);
  for (int t = 0; t < 2; t++) {
    for (long i = 0; i < p.n; i++) p.z[i] = t == 0 ? positive[i] : rng_uniform(&rg, -10, 10);
    if (write_points(pts, &p)) return 1;
    char what[64];
    snprintf(what, sizeof what, "brute invdist 300x240 %s", t == 0 ? "positive" : "signed");
    if (brute_pair("invdist", "invdist:nodata=-9999", &p, pts, 300, 240, "100", 0, 0, what, 0)) return 1;
  }
  free(positive);
  pts_free(&p);
  printf("%lld cells compared in all\n", cells_compared);
  return fails != 0;
}

/* ---- case same_bytes ---- */

static int case_same_bytes(void) {
  rng_t rg = {3};
  pts_t p = {0};
  for (int i = 0; i < 2000; i++) pts_add(&p, rng_uniform(&rg, 0, 3000), 0, 0);
  for (int i = 0; i < 2000; i++) p.y[i] = rng_uniform(&rg, 0, 2000);
  for (int i = 0; i < 2000; i++) p.z[i] = rng_uniform(&rg, 0, 500);
  char pts[1100], xyz[1100], csv[1100];
  wpath(pts, sizeof pts, "s.gpkg");
  wpath(xyz, sizeof xyz, "s.xyz");
  wpath(csv, sizeof csv, "s.csv");
  if (write_points(pts, &p)) return 1;
  FILE *fx = fopen(xyz, "w"), *fc = fopen(csv, "w");
  if (!fx || !fc) return 1;
  fprintf(fx, "x y z\n");
  fprintf(fc, "x,y,elev\n");
  for (long i = 0; i < p.n; i++) { /* %.17g: the same doubles back */
    fprintf(fx, "%.17g %.17g %.17g\n", p.x[i], p.y[i], p.z[i]);
    fprintf(fc, "%.17g,%.17g,%.17g\n", p.x[i], p.y[i], p.z[i]);
  }
  fclose(fx);
  fclose(fc);
  pts_free(&p);
  const char *const grid[] = {"-txe", "0", "3000", "-tye", "0", "2000", "-outsize", "150", "100", NULL};
  static const char *const algs[] = {"invdistnn:radius=300:max_points=8", "nearest", "average:radius1=120:radius2=120",
                                     "linear", "invdist:power=2"};
  static const char *const variants[][5] = {
      {"--threads", "2", "--tile-size", "7"}, {"--tile-size", "64"}, {"--ft", "dual", "--tile-size", "40"}};
  int checks = 0;
  for (size_t a = 0; a < sizeof algs / sizeof algs[0]; a++) {
    char base[1100], out[1100];
    wpath(base, sizeof base, "s0.tif");
    cmd_t c;
    cmd_tf(&c, NULL);
    cmd_add(&c, "--threads", "1", "-a", algs[a], "-zfield", "elev", NULL);
    cmd_list(&c, grid);
    cmd_add(&c, pts, base, NULL);
    RUN(&c);
    size_t len;
    unsigned char *ref = band_bytes(base, &len);
    check(ref != NULL, "%s: cannot read %s", algs[a], base);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
      wpath(out, sizeof out, "s1.tif");
      cmd_tf(&c, NULL);
      cmd_add(&c, "-a", algs[a], "-zfield", "elev", NULL);
      cmd_list(&c, variants[v]);
      cmd_list(&c, grid);
      cmd_add(&c, pts, out, NULL);
      RUN(&c);
      check(same_band(out, ref, len), "%s %s %s: same bytes", algs[a], variants[v][0], variants[v][1]);
      checks++;
    }
    if (!mpirun[0]) printf("skip: no mpirun\n");
    for (int nr = 2; nr <= 3 && mpirun[0]; nr++) {
      char prefix[300];
      snprintf(prefix, sizeof prefix, "%s -n %d", mpirun, nr);
      wpath(out, sizeof out, "s2.tif");
      cmd_tf(&c, prefix);
      cmd_add(&c, "--tile-size", "33", "-a", algs[a], "-zfield", "elev", NULL);
      cmd_list(&c, grid);
      cmd_add(&c, pts, out, NULL);
      const int rc = cmd_exec(&c);
      check(rc == 0 && same_band(out, ref, len), "%s mpirun -n %d: same bytes (exit %d) %s", algs[a], nr, rc,
            rc ? rc_slurp(errfile) : "");
      checks++;
    }
    wpath(out, sizeof out, "s3.tif");
    cmd_tf(&c, NULL);
    cmd_add(&c, "-a", algs[a], "-a_srs", "EPSG:32633", NULL);
    cmd_list(&c, grid);
    cmd_add(&c, xyz, out, NULL);
    RUN(&c);
    check(same_band(out, ref, len), "%s: xyz and OGR give the same bytes", algs[a]);
    cmd_tf(&c, NULL);
    cmd_add(&c, "-a", algs[a], "-zfield", "elev", "-a_srs", "EPSG:32633", NULL);
    cmd_list(&c, grid);
    cmd_add(&c, csv, out, NULL);
    RUN(&c);
    check(same_band(out, ref, len), "%s: CSV and GeoPackage give the same bytes", algs[a]);
    checks += 2;
    free(ref);
  }
  printf("%d same-bytes comparisons\n", checks);
  return fails != 0;
}

/* ---- case on_disk ---- */

/* Entries of folder d other than . and .. */
static int entries(const char *d) {
  DIR *dir = opendir(d);
  if (!dir) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(dir));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(dir);
  return n;
}

/* A new FIFO named `name` in the work folder and a path for the output
 * `oname`, neither left from an earlier run (fifo and out: 1100 bytes). */
static void fresh_fifo(char *fifo, const char *name, char *out, const char *oname) {
  wpath(fifo, 1100, name);
  wpath(out, 1100, oname);
  unlink(fifo);
  unlink(out);
  check(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
}

/* A signal stops a long read of the points: they come through a pipe (a
 * FIFO named *.xyz) as fast as terrafort reads them, and once 200,000 are
 * through it gets SIGTERM. It must end with exit 8 having taken at most
 * about 65,536 more (it asks every 65,536 points) plus what the pipe and
 * its stdio buffer hold, where without the check it reads all 1,000,000
 * first. With idle set, the pipe then stays open and silent: the signal
 * comes while terrafort waits for input (its read fails with EINTR), and it
 * must still end with exit 8, not as a failed read. */
static void interrupted_read(int idle) {
  char fifo[1100], out[1100];
  fresh_fifo(fifo, "pipe.xyz", out, "pipe.tif");
  const pid_t pid = fork();
  if (pid == 0) {
    char *argv[] = {(char *)ck_tf, "interpolate", "-q", "-a", "invdistnn:radius=50:max_points=4", "-txe", "0", "1000",
                    "-tye", "0", "1000", "-outsize", "100", "100", fifo, out, NULL};
    execv(ck_tf, argv);
    _exit(127);
  }
  void (*old)(int) = signal(SIGPIPE, SIG_IGN);
  /* every wait bounded: the reader has 30 s to open the pipe (ENXIO until then) */
  int fd = -1;
  for (int k = 0; k < 3000 && fd < 0; k++) {
    fd = open(fifo, O_WRONLY | O_NONBLOCK);
    if (fd < 0) usleep(10000);
  }
  check(fd >= 0, "terrafort did not open the pipe %s within 30 s", fifo);
  if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  long sent = 0, after = 0;
  char buf[64 * 1000];
  for (int sigsent = 0; fd >= 0 && sent < 1000000;) {
    size_t len = 0;
    for (int k = 0; k < 1000; k++)
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%d %d %d\n", (int)((sent + k) % 997), (int)((sent + k) % 991), k);
    if (write(fd, buf, len) != (ssize_t)len) break; /* the reader is gone */
    sent += 1000;
    if (sigsent) after += 1000;
    if (!sigsent && sent >= 200000) {
      if (idle) usleep(500000); /* terrafort has read what the pipe holds and waits */
      kill(pid, SIGTERM);
      sigsent = 1;
      if (idle) break;
    }
  }
  int status = 0;
  pid_t done = 0;
  for (int k = 0; k < 3000 && (done = waitpid(pid, &status, WNOHANG)) == 0; k++) usleep(10000);
  if (fd >= 0) close(fd);
  if (done == 0) { /* still running 30 s on: a failure, and no process left behind */
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  signal(SIGPIPE, old);
  check(WIFEXITED(status) && WEXITSTATUS(status) == 8, "SIGTERM while %s points: exit 8 (status %d)",
        idle ? "waiting for" : "reading", status);
  check(after < 150000, "SIGTERM while reading points: %ld more points taken after it (at most 65,536 + buffers)",
        after);
  check(!file_exists(out), "SIGTERM while reading points: no output");
  unlink(fifo);
}

/* More points than --mem holds (issue 13): every algorithm with a search
 * radius reads them from an index on disk in --tmp and gives the in-memory
 * run's bytes - threads, small tiles, --ft dual, mpirun, OGR and XYZ input;
 * the same --mem refuses linear and radius-less invdist (they need every
 * point in memory), which shows the others did not hold them; --tmp is
 * left empty. Clustered points, so the index's bands are uneven. */
static int case_on_disk(void) {
  rng_t rg = {11};
  pts_t p = {0};
  add_clusters(&p, &rg, 5, 200, 2800, 200, 1800, 24000, 90);
  for (int i = 0; i < 8000; i++) pts_add(&p, rng_uniform(&rg, -100, 3100), rng_uniform(&rg, -100, 2100), 0);
  for (long i = 0; i < p.n; i++) p.z[i] = 100 + 0.05 * p.x[i] - 0.03 * p.y[i] + rng_uniform(&rg, 0, 10);
  char pts[1100], xyz[1100], tmp[1100];
  wpath(pts, sizeof pts, "d.gpkg");
  wpath(xyz, sizeof xyz, "d.xyz");
  wpath(tmp, sizeof tmp, "tmp");
  mkdir(tmp, 0755);
  if (write_points(pts, &p)) return 1;
  FILE *fx = fopen(xyz, "w");
  if (!fx) return 1;
  for (long i = 0; i < p.n; i++) fprintf(fx, "%.17g %.17g %.17g\n", p.x[i], p.y[i], p.z[i]);
  fclose(fx);
  pts_free(&p);
  const char *const grid[] = {"-txe", "0", "3000", "-tye", "0", "2000", "-outsize", "150", "100", NULL};
  /* 2 threads: the points may have 4096 x 80 bytes of 80 MiB; 1 thread: 26214 of 74 MiB */
  const char *const small2[] = {"--threads", "2", "--mem", "80M", "--tmp", tmp, NULL};
  const char *const small1[] = {"--threads", "1", "--mem", "74M", "--tmp", tmp, NULL};
  static const char *const algs[] = {"invdistnn:radius=150:max_points=8", "nearest:radius1=60:radius2=60",
                                     "average:radius1=80:radius2=50:angle=30", "invdist:power=2:radius1=70:radius2=70",
                                     "average_distance_pts:radius1=60:radius2=60"};
  int checks = 0;
  for (size_t a = 0; a < sizeof algs / sizeof algs[0]; a++) {
    char base[1100], out[1100];
    wpath(base, sizeof base, "d0.tif");
    cmd_t c;
    cmd_tf(&c, NULL);
    cmd_add(&c, "-a", algs[a], "-zfield", "elev", NULL);
    cmd_list(&c, grid);
    cmd_add(&c, pts, base, NULL);
    RUN(&c);
    size_t len;
    unsigned char *ref = band_bytes(base, &len);
    check(ref != NULL, "%s: cannot read %s", algs[a], base);
    for (int v = 0; v < 4; v++) {
      wpath(out, sizeof out, "d1.tif");
      char prefix[300] = "";
      if (v == 3 && !mpirun[0]) {
        printf("skip: no mpirun\n");
        continue;
      }
      if (v == 3) snprintf(prefix, sizeof prefix, "%s -n 2", mpirun);
      cmd_tf(&c, v == 3 ? prefix : NULL);
      cmd_add(&c, "-a", algs[a], NULL);
      cmd_list(&c, v == 3 ? small1 : small2);
      if (v == 1) cmd_add(&c, "--tile-size", "23", NULL);
      if (v == 2) cmd_add(&c, "--ft", "dual", "--tile-size", "40", NULL);
      cmd_list(&c, grid);
      if (v == 0) cmd_add(&c, "-zfield", "elev", pts, out, NULL);
      else cmd_add(&c, "-a_srs", "EPSG:32633", xyz, out, NULL);
      const int rc = cmd_exec(&c);
      check(rc == 0 && same_band(out, ref, len), "%s, points on disk (variant %d): the in-memory bytes (exit %d) %s",
            algs[a], v, rc, rc ? rc_slurp(errfile) : "");
      check(entries(tmp) == 0, "%s, points on disk (variant %d): --tmp left empty", algs[a], v);
      checks++;
    }
    if (a == 0) {
      /* through a pipe, which cannot be read twice: the points past --mem
       * go to disk in the same single read (reading them again from the
       * start took the pipe's remainder: a wrong line, or wrong values) */
      char fifo[1100], c2[6000];
      fresh_fifo(fifo, "dpipe.xyz", out, "d2.tif");
      snprintf(c2, sizeof c2,
               "timeout 60 sh -c 'cat \"%s\" > \"%s\"' & '%s' interpolate -q -a '%s' --threads 2 --mem 80M --tmp '%s' "
               "-txe 0 3000 -tye 0 2000 -outsize 150 100 -a_srs EPSG:32633 '%s' '%s'; r=$?; wait; exit $r",
               xyz, fifo, ck_tf, algs[a], tmp, fifo, out);
      const int rc = rc_run(c2, errfile);
      check(rc == 0 && same_band(out, ref, len), "%s, points on disk through a pipe: the in-memory bytes (exit %d) %s",
            algs[a], rc, rc ? rc_slurp(errfile) : "");
      check(entries(tmp) == 0, "%s, points on disk through a pipe: --tmp left empty", algs[a]);
      unlink(fifo);
      checks++;
    }
    free(ref);
  }
  /* a long thin strip (a flight line): about 18,000 points per row of the
   * index's buckets, more than one band sorts at this --mem, so bands split
   * rows */
  {
    pts_t q = {0};
    rng_t rs = {5};
    for (int i = 0; i < 40000; i++) {
      const double x = rng_uniform(&rs, 0, 400000), y = rng_uniform(&rs, 0, 100);
      pts_add(&q, x, y, 50 * sin(x / 900) + y / 10);
    }
    char strip[1100], base[1100], out[1100];
    wpath(strip, sizeof strip, "strip.xyz");
    wpath(base, sizeof base, "st0.tif");
    wpath(out, sizeof out, "st1.tif");
    FILE *fs = fopen(strip, "w");
    if (!fs) return 1;
    for (long i = 0; i < q.n; i++) fprintf(fs, "%.17g %.17g %.17g\n", q.x[i], q.y[i], q.z[i]);
    fclose(fs);
    pts_free(&q);
    const char *const sgrid[] = {"-a", "invdistnn:radius=300:max_points=8", "-txe", "0", "400000", "-tye", "0", "100",
                                 "-outsize", "2000", "4", "-a_srs", "EPSG:32633", NULL};
    cmd_t c;
    cmd_tf(&c, NULL);
    cmd_list(&c, sgrid);
    cmd_add(&c, strip, base, NULL);
    RUN(&c);
    size_t len;
    unsigned char *ref = band_bytes(base, &len);
    cmd_tf(&c, NULL);
    cmd_list(&c, sgrid);
    cmd_list(&c, small2);
    cmd_add(&c, "--tile-size", "64", strip, out, NULL);
    const int rc = cmd_exec(&c);
    check(ref && rc == 0 && same_band(out, ref, len), "strip, points on disk: the in-memory bytes (exit %d) %s", rc,
          rc ? rc_slurp(errfile) : "");
    check(entries(tmp) == 0, "strip: --tmp left empty");
    free(ref);
    checks++;
  }
  /* the same --mem is too small to hold these points: what needs them all is refused */
  static const char *const whole[] = {"linear", "invdist:power=2"};
  static const char *const why[] = {"linear needs every point in memory", "without a radius"};
  for (int k = 0; k < 2; k++) {
    char out[1100];
    wpath(out, sizeof out, "e2.tif");
    unlink(out);
    cmd_t c;
    cmd_tf(&c, NULL);
    cmd_add(&c, "-a", whole[k], NULL);
    cmd_list(&c, small2);
    cmd_list(&c, grid);
    cmd_add(&c, "-zfield", "elev", pts, out, NULL);
    const int rc = cmd_exec(&c);
    const char *err = rc_slurp(errfile);
    check(rc == 7 && strstr(err, "--mem") && strstr(err, why[k]), "%s at --mem 80M: refused (exit %d) '%s'", whole[k],
          rc, err);
    check(!file_exists(out) && entries(tmp) == 0, "%s refused: no output, --tmp empty", whole[k]);
  }
  /* a --tmp that cannot be written: a clear line, no output */
  {
    char out[1100];
    wpath(out, sizeof out, "e3.tif");
    unlink(out);
    cmd_t c;
    cmd_tf(&c, NULL);
    cmd_add(&c, "-a", algs[0], "--threads", "2", "--mem", "80M", "--tmp", "/nonexistent/dir", NULL);
    cmd_list(&c, grid);
    cmd_add(&c, "-zfield", "elev", pts, out, NULL);
    const int rc = cmd_exec(&c);
    const char *err = rc_slurp(errfile);
    check(rc != 0 && strstr(err, "/nonexistent/dir") && !file_exists(out), "--tmp missing: exit %d '%s'", rc, err);
  }
  interrupted_read(0);
  interrupted_read(1);
  printf("%d on-disk comparisons\n", checks);
  return fails != 0;
}

/* ---- case errors ---- */

/* One ".terrafort-" temporary name in the work folder, or "". */
static const char *temporaries_left(void) {
  static char name[256];
  name[0] = 0;
  DIR *d = opendir(ck_outdir);
  if (!d) return name;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".terrafort-")) snprintf(name, sizeof name, "%s", e->d_name);
  closedir(d);
  return name;
}

/* stderr stripped of surrounding white space: one line holding WORDS. */
static int one_line(const char *err, const char *words) {
  while (*err == ' ' || *err == '\n' || *err == '\t' || *err == '\r') err++;
  size_t n = strlen(err);
  while (n && (err[n - 1] == ' ' || err[n - 1] == '\n' || err[n - 1] == '\t' || err[n - 1] == '\r')) n--;
  if (!n || memchr(err, '\n', n)) return 0;
  char line[4096];
  snprintf(line, sizeof line, "%.*s", (int)n, err);
  return strstr(line, words) != NULL;
}

/* `terrafort interpolate -q ARGS OUT` exits CODE with one line holding
 * WORDS, and leaves no output and no temporary. */
static void expect(const char *const *args, int code, const char *words, const char *what) {
  char out[1100];
  wpath(out, sizeof out, "e.tif");
  unlink(out);
  cmd_t c;
  cmd_tf(&c, NULL);
  cmd_list(&c, args);
  cmd_add(&c, out, NULL);
  const int rc = cmd_exec(&c);
  const char *err = rc_slurp(errfile);
  check(rc == code, "%s: exit %d (want %d) %s", what, rc, code, err);
  check(one_line(err, words), "%s: one clear line, got '%s'", what, err);
  check(!file_exists(out), "%s: no output file", what);
  const char *left = temporaries_left();
  check(!left[0], "%s: temporaries left %s", what, left);
}

static int case_errors(void) {
  char out[1100], empty[1100], pts[1100], bad[1100], nan[1100], line[1100];
  wpath(out, sizeof out, "e.tif");
  wpath(empty, sizeof empty, "empty.xyz");
  write_text(empty, "# nothing\n");
  expect((const char *const[]){empty, NULL}, 3, "no points", "no points");
  wpath(pts, sizeof pts, "e.gpkg");
  pts_t p = {0};
  pts_add(&p, 1, 1, 1);
  pts_add(&p, 2, 3, 2);
  pts_add(&p, 3, 2, 3);
  if (write_points(pts, &p)) return 1;
  pts_free(&p);
  expect((const char *const[]){"-zfield", "nope", pts, NULL}, 3, "no field 'nope'", "missing -zfield");
  /* a CSV whose columns are not taken for X and Y: the message says so and how to name them */
  wpath(bad, sizeof bad, "nogeom.csv");
  write_text(bad, "a,b,elev\n1,2,3\n2,3,4\n3,1,4\n");
  expect((const char *const[]){"-zfield", "elev", bad, NULL}, 3, "3 features, none with a geometry",
         "CSV without X/Y columns");
  expect((const char *const[]){"-zfield", "elev", bad, NULL}, 3, "X_POSSIBLE_NAMES", "CSV without X/Y columns");
  wpath(bad, sizeof bad, "bad.csv");
  write_text(bad, "x,y,elev\n1,2,3\n2,3,abc\n3,1,4\n");
  expect((const char *const[]){"-zfield", "elev", "-oo", "X_POSSIBLE_NAMES=x", "-oo", "Y_POSSIBLE_NAMES=y", bad, NULL},
         3, "not a number", "non-numeric value");
  wpath(nan, sizeof nan, "nan.xyz");
  write_text(nan, "1 2 3\nnan 2 3\n3 4 5\n");
  expect((const char *const[]){nan, NULL}, 3, "not finite", "NaN coordinate");
  wpath(line, sizeof line, "line.xyz");
  write_text(line, "1 5 3\n2 5 3\n3 5 5\n");
  expect((const char *const[]){line, NULL}, 2, "empty extent", "empty extent");
  expect((const char *const[]){"-txe", "0", "0", "-tye", "0", "1", pts, NULL}, 2, "empty extent", "empty -txe");
  /* far more than any disk here holds: refused before anything is written */
  expect((const char *const[]){"-outsize", "200000", "200000", pts, NULL}, 4, "free", "output too big for its disk");
  expect((const char *const[]){"-a", "invdist:pwer=2", pts, NULL}, 2, "unknown parameter", "bad -a");
  /* gdal_grid refuses a radius that is not positive for invdistnn (issue 28:
   * -5 ran unbounded) */
  expect((const char *const[]){"-a", "invdistnn:radius=-5", pts, NULL}, 2, "strictly positive", "invdistnn radius < 0");
  expect((const char *const[]){"-a", "invdistnn:radius=0", pts, NULL}, 2, "strictly positive", "invdistnn radius 0");
  /* under mpirun every rank stops on rank 0's disk check (no rank left waiting) */
  if (mpirun[0]) {
    char prefix[300];
    snprintf(prefix, sizeof prefix, "timeout 120 %s -n 2", mpirun);
    unlink(out);
    cmd_t c;
    cmd_tf(&c, prefix);
    cmd_add(&c, "-outsize", "200000", "200000", pts, out, NULL);
    const int rc = cmd_exec(&c);
    check(rc != 124, "mpirun: output too big: a rank hung");
    check(rc == 4 && strstr(rc_slurp(errfile), "free") && !file_exists(out), "mpirun: output too big (exit %d) %s", rc,
          rc_slurp(errfile));
  } else
    printf("skip: no mpirun\n");
  /* points count in --mem: with one thread, --mem 72M leaves nothing beyond the process's
   * 64 MiB and the tiles' buffers, so reading stops at the first 4096 points (80 bytes a
   * point, points.h); given the room, the same points give the bytes of a run without --mem */
  char many[1100], ref_out[1100], mem_out[1100];
  wpath(many, sizeof many, "many.xyz");
  FILE *f = fopen(many, "w");
  if (!f) return 1;
  rng_t rg = {9};
  for (int i = 0; i < 6000; i++) {
    const double x = rng_uniform(&rg, 0, 1000), y = rng_uniform(&rg, 0, 800);
    fprintf(f, "%.4f %.4f %.4f\n", x, y, rng_uniform(&rg, 0, 50));
  }
  fclose(f);
  expect((const char *const[]){"--threads", "1", "--mem", "72M", "-a", "nearest", many, NULL}, 7,
         "more than 4096 points", "points beyond --mem");
  wpath(ref_out, sizeof ref_out, "many_ref.tif");
  wpath(mem_out, sizeof mem_out, "many_mem.tif");
  cmd_t c;
  cmd_tf(&c, NULL);
  cmd_add(&c, "--threads", "1", "-a", "nearest", many, ref_out, NULL);
  RUN(&c);
  cmd_tf(&c, NULL);
  cmd_add(&c, "--threads", "1", "--mem", "200M", "-a", "nearest", many, mem_out, NULL);
  RUN(&c);
  check(rc_same_file(ref_out, mem_out), "points within --mem: same bytes as without");
  /* the output cannot be the points' file: refused, the points left as they were */
  char same[1100];
  const char *same_text = "0 0 1\n10 0 2\n0 10 3\n10 10 4\n";
  wpath(same, sizeof same, "same.xyz");
  write_text(same, same_text);
  cmd_tf(&c, NULL);
  cmd_add(&c, "-a", "nearest", same, same, NULL);
  int rc = cmd_exec(&c);
  check(rc == 4 && strstr(rc_slurp(errfile), "it is the input file"), "output = input: exit %d %s", rc,
        rc_slurp(errfile));
  check(!strcmp(rc_slurp(same), same_text), "output = input: the points kept");
  char collinear[1100];
  wpath(collinear, sizeof collinear, "collinear.xyz");
  write_text(collinear, "0 0 1\n1 1 2\n2 2 3\n3 3 4\n");
  expect((const char *const[]){"-a", "linear", collinear, NULL}, 3, "cannot triangulate", "linear on collinear points");
  /* --fill-voids on an all-nodata raster: all nodata kept */
  char allnd[1100];
  wpath(allnd, sizeof allnd, "allnodata.tif");
  GDALDatasetH d = GDALCreate(GDALGetDriverByName("GTiff"), allnd, 20, 10, 1, GDT_Float32, NULL);
  if (!d) return 1;
  GDALSetRasterNoDataValue(GDALGetRasterBand(d, 1), -9999);
  GDALFillRaster(GDALGetRasterBand(d, 1), -9999, 0);
  GDALClose(d);
  cmd_tf(&c, NULL);
  cmd_add(&c, "--fill-voids", allnd, out, NULL);
  rc = cmd_exec(&c);
  long long nodata = 0;
  rc_raster r = {0};
  if (rc == 0 && rc_load(out, &r) == 0)
    for (long long i = 0; i < (long long)r.rows * r.cols; i++) nodata += r.v[i] == -9999;
  check(rc == 0 && r.v && nodata == 200, "fill-voids on an all-nodata raster: all nodata kept (exit %d, %lld of 200)",
        rc, nodata);
  rc_free(&r);
  return fails != 0;
}

/* ---- case fill_voids ---- */

/* demo.tif's top-left 360 x 300 cells with 30 random holes, a long crack and
 * a void along the west edge, as TYPE with NODATA. */
static int holes_dem(const char *path, GDALDataType type, double nodata) {
  char src_p[1100];
  snprintf(src_p, sizeof src_p, "%s/demo.tif", ck_dir);
  GDALDatasetH src = GDALOpen(src_p, GA_ReadOnly);
  if (!src) {
    printf("FAIL: cannot open %s\n", src_p);
    return 1;
  }
  enum { W = 360, H = 300 };
  double *a = malloc(sizeof(double) * W * H);
  if (GDALRasterIO(GDALGetRasterBand(src, 1), GF_Read, 0, 0, W, H, a, W, H, GDT_Float64, 0, 0) != CE_None) return 1;
  rng_t rg = {4};
  for (int k = 0; k < 30; k++) {
    const long r = rng_int(&rg, H), c = rng_int(&rg, W), s = 2 + rng_int(&rg, 33);
    for (long i = r - s < 0 ? 0 : r - s; i < r + s && i < H; i++)
      for (long j = c - s < 0 ? 0 : c - s; j < c + s / 2 && j < W; j++) a[i * W + j] = nodata;
  }
  for (int i = 80; i < 250; i++)
    for (int j = 150; j < 154; j++) a[i * W + j] = nodata; /* a long crack */
  for (int i = 0; i < H; i++)
    for (int j = 0; j < 3; j++) a[i * W + j] = nodata; /* a void along the edge */
  GDALDatasetH d = GDALCreate(GDALGetDriverByName("GTiff"), path, W, H, 1, type, NULL);
  double gt[6];
  GDALGetGeoTransform(src, gt);
  GDALSetGeoTransform(d, gt);
  GDALSetProjection(d, GDALGetProjectionRef(src));
  GDALSetRasterNoDataValue(GDALGetRasterBand(d, 1), nodata);
  const CPLErr e = GDALRasterIO(GDALGetRasterBand(d, 1), GF_Write, 0, 0, W, H, a, W, H, GDT_Float64, 0, 0);
  GDALClose(d);
  GDALClose(src);
  free(a);
  return e != CE_None;
}

static int case_fill_voids(void) {
  static const struct {
    GDALDataType type;
    double nodata;
  } types[] = {{GDT_Float32, -9999}, {GDT_Int16, -32768}};
  static const char *const argsets[][5] = {
      {"-md", "20"}, {"-md", "20", "-si", "2"}, {"-md", "7.5", "-si", "3"}, {"-md", "0", "-si", "1"}, {NULL}};
  static const char *const variants[][5] = {{"--threads", "1", "--tile-size", "512"},
                                            {"--threads", "2", "--tile-size", "17"},
                                            {"--ft", "dual", "--tile-size", "100"}};
  long long cells = 0;
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    const double nodata = types[t].nodata;
    char dem[1100], ours[1100], ref[1100], out[1100];
    wpath(dem, sizeof dem, "holes_%d.tif", (int)types[t].type);
    if (holes_dem(dem, types[t].type, nodata)) return 1;
    wpath(ours, sizeof ours, "f1.tif");
    wpath(ref, sizeof ref, "f2.tif");
    for (size_t s = 0; s < sizeof argsets / sizeof argsets[0]; s++) {
      unlink(ours);
      unlink(ref);
      char what[128];
      snprintf(what, sizeof what, "fill-voids type %d", (int)types[t].type);
      for (const char *const *x = argsets[s]; *x; x++) snprintf(what + strlen(what), sizeof what - strlen(what), " %s", *x);
      cmd_t c;
      cmd_tf(&c, NULL);
      cmd_add(&c, "--fill-voids", "--tile-size", "48", NULL);
      cmd_list(&c, argsets[s]);
      cmd_add(&c, dem, ours, NULL);
      RUN(&c);
      c.n = 0;
      cmd_add(&c, "gdal_fillnodata.py", "-q", NULL);
      cmd_list(&c, argsets[s]);
      cmd_add(&c, dem, ref, NULL);
      RUN(&c);
      rc_raster a, b;
      LOAD(ours, &a);
      LOAD(ref, &b);
      check(a.rows == b.rows && a.cols == b.cols, "%s: shape", what);
      long long differ = 0, filled = 0, holes = 0;
      double maxd = 0;
      int nan_seen = 0;
      for (long long i = 0; a.rows == b.rows && a.cols == b.cols && i < (long long)a.rows * a.cols; i++) {
        differ += (a.v[i] == nodata) != (b.v[i] == nodata);
        holes += a.v[i] == nodata;
        const double d = fabs(a.v[i] - b.v[i]);
        if (isnan(d)) nan_seen = 1;
        else if (d > maxd) maxd = d;
      }
      /* cells filled: those nodata in the input, data in the output */
      rc_raster in;
      LOAD(dem, &in);
      for (long long i = 0; in.rows == a.rows && in.cols == a.cols && i < (long long)a.rows * a.cols; i++)
        filled += in.v[i] == nodata && a.v[i] != nodata;
      rc_free(&in);
      cells += (long long)a.rows * a.cols;
      printf("%s: %lld cells compared, %lld filled, %lld left nodata, max difference %g\n", what,
             (long long)a.rows * a.cols, filled, holes, maxd);
      check(differ == 0, "%s: nodata cells (%lld differ)", what, differ);
      check(!nan_seen && maxd <= 1e-4, "%s: max difference %g", what, maxd);
      check(a.type == types[t].type, "%s: type kept", what);
      rc_free(&a);
      rc_free(&b);
    }
    /* the bytes of the last run (no -md/-si) */
    size_t len;
    unsigned char *base = band_bytes(ours, &len);
    check(base != NULL, "cannot read %s", ours);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
      wpath(out, sizeof out, "f3.tif");
      cmd_t c;
      cmd_tf(&c, NULL);
      cmd_add(&c, "--fill-voids", NULL);
      cmd_list(&c, variants[v]);
      cmd_add(&c, dem, out, NULL);
      RUN(&c);
      check(same_band(out, base, len), "fill-voids %s %s %s %s: same bytes", variants[v][0], variants[v][1],
            variants[v][2], variants[v][3] ? variants[v][3] : "");
    }
    if (mpirun[0]) {
      char prefix[300];
      snprintf(prefix, sizeof prefix, "%s -n 3", mpirun);
      wpath(out, sizeof out, "f4.tif");
      cmd_t c;
      cmd_tf(&c, prefix);
      cmd_add(&c, "--fill-voids", "--tile-size", "40", dem, out, NULL);
      const int rc = cmd_exec(&c);
      check(rc == 0 && same_band(out, base, len), "fill-voids mpirun -n 3: same bytes (exit %d)", rc);
    } else
      printf("skip: no mpirun\n");
    free(base);
  }
  printf("%lld cells compared in all\n", cells);
  return fails != 0;
}

/* ---- case interrupt ---- */

/* SIGTERM and SIGINT end a run that would last hours within a second, with
 * exit 8, one line and nothing left in the output's folder (issue 28: a
 * 10^6 x 10^6 DEFLATE grid stayed 20 s at 4 GB). Five points to a
 * 10^6 x 10^6 tiled DEFLATE grid, signalled 0.3 and 1.5 s after its
 * temporary appears (the second, here, while libtiff writes and rereads the
 * directory of its 15 million tiles, which no cancel reaches: the stop
 * deadline, TERRAFORT_STOP_GRACE_MS, ends it). With that deadline pushed to
 * 60 s, the run must stop by itself: the same grid signalled once GDAL is
 * past its directory (closed, it would fill its 15 million unwritten tiles
 * into the unlinked file: the output is abandoned instead), and a
 * 400,000 x 400,000 striped Float32 one in tiles of 64 (39 million tiles
 * its threads must not take one by one). */
static int case_interrupt(void) {
  char dir[1100], pts[1100], out[1100];
  wpath(dir, sizeof dir, "interrupt");
  mkdir(dir, 0755);
  wpath(pts, sizeof pts, "five.xyz");
  wpath(out, sizeof out, "interrupt/big.tif");
  if (write_text(pts, "0 0 1\n10 0 2\n0 10 3\n10 10 4\n5 5 5\n")) {
    printf("FAIL: cannot write %s\n", pts);
    return 1;
  }
  /* the tiled grid's directory: two arrays of 4-byte offsets (BIGTIFF=NO),
   * one entry per 256 x 256 tile */
  const long long tiles = 3907LL * 3907LL, dir_bytes = 2 * 4 * tiles;
  static const struct {
    const char *what;
    int sig, after_ms;
    int past_dir;      /* signalled once the file is 1 MiB past its directory, not after_ms */
    const char *grace; /* TERRAFORT_STOP_GRACE_MS, NULL: the default */
    const char *args[12];
  } runs[] = {
      {"tiled, SIGINT at 0.3 s", SIGINT, 300, 0, NULL,
       {"-outsize", "1000000", "1000000", "-co", "COMPRESS=DEFLATE", "-co", "TILED=YES"}},
      {"tiled, SIGTERM at 1.5 s", SIGTERM, 1500, 0, NULL,
       {"-outsize", "1000000", "1000000", "-co", "COMPRESS=DEFLATE", "-co", "TILED=YES"}},
      {"tiled, SIGTERM past its directory, no deadline", SIGTERM, 0, 1, "60000",
       {"-outsize", "1000000", "1000000", "-co", "COMPRESS=DEFLATE", "-co", "TILED=YES", "-co", "BIGTIFF=NO"}},
      {"striped, SIGTERM at 1.5 s, no deadline", SIGTERM, 1500, 0, "60000",
       {"-outsize", "400000", "400000", "-ot", "Float32", "--tile-size", "64", "-co", "COMPRESS=DEFLATE"}},
      {"striped, 10^6 wide in tiles of 64 under --mem 1G, SIGTERM at 0.5 s", SIGTERM, 500, 0, NULL,
       {"-outsize", "1000000", "1000000", "--tile-size", "64", "--mem", "1G", "-co", "COMPRESS=DEFLATE"}},
  };
  /* the writer's row of tiles (terrafort-interpolate(1), MEMORY): striped, 10^6 columns of
   * Float64 in tiles of 512 need 512 x 10^6 x 8 bytes (3906 MiB) for it, refused under
   * --mem 1G with the figure; in tiles of 64 (488 MiB) the same --mem runs (the last run) */
  {
    cmd_t c;
    cmd_tf(&c, NULL);
    cmd_add(&c, "-a", "nearest", "-txe", "0", "10", "-tye", "0", "10", "-outsize", "1000000", "1000000", "-co",
            "COMPRESS=DEFLATE", "--mem", "1G", pts, out, NULL);
    const int rc = cmd_exec(&c);
    const char *err = rc_slurp(errfile), *at = strstr(err, "needs at least ");
    const long mib = at ? strtol(at + strlen("needs at least "), NULL, 10) : -1;
    printf("striped, 10^6 wide in tiles of 512 under --mem 1G: exit %d, %ld MiB named\n", rc, mib);
    check(rc == 7 && mib >= 3906, "striped 10^6 wide under --mem 1G: exit 7 naming at least 3906 MiB (exit %d: %s)",
          rc, err);
    check(pc_count(dir, NULL, NULL, 0) == 0, "refused under --mem: nothing written");
  }
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    /* an empty folder */
    char first[512];
    while (pc_count(dir, NULL, first, sizeof first) > 0) {
      char p[1700];
      snprintf(p, sizeof p, "%s/%s", dir, first);
      if (unlink(p) != 0) {
        printf("FAIL: cannot empty %s\n", dir);
        return 1;
      }
    }
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)ck_tf;
    argv[n++] = "interpolate";
    argv[n++] = "-q";
    argv[n++] = "-a";
    argv[n++] = "nearest";
    argv[n++] = "-txe";
    argv[n++] = "0";
    argv[n++] = "10";
    argv[n++] = "-tye";
    argv[n++] = "0";
    argv[n++] = "10";
    for (int k = 0; runs[i].args[k]; k++) argv[n++] = (char *)runs[i].args[k];
    argv[n++] = pts;
    argv[n++] = out;
    argv[n] = NULL;
    if (runs[i].grace) setenv("TERRAFORT_STOP_GRACE_MS", runs[i].grace, 1);
    const pid_t pid = pc_spawn(argv, errfile, 0);
    unsetenv("TERRAFORT_STOP_GRACE_MS");
    if (pid < 0 || !pc_wait_for_entry(dir, ".terrafort-", pid, 30)) {
      check(0, "%s: no temporary appeared in %s within 30 s", runs[i].what, dir);
      if (pid > 0) {
        pc_result r;
        pc_wait(pid, 0, &r);
      }
      continue;
    }
    if (runs[i].past_dir) {
      /* GDAL writes the directory with the first block it flushes, then
       * rereads it (seconds, and no cancel reaches it): the tiles it then
       * appends show that it is done */
      char tmp[1700];
      struct stat sb;
      int past = 0;
      for (int k = 0; k < 60000 && !past && !pc_ended(pid); k++) {
        snprintf(tmp, sizeof tmp, "%s/%s", dir, first);
        past = pc_count(dir, ".terrafort-", first, sizeof first) == 1 && stat(tmp, &sb) == 0 &&
               (long long)sb.st_size > dir_bytes + (1 << 20);
        if (!past) pc_sleep_ms(1);
      }
      printf("%s: the temporary is %lld bytes, its directory %lld\n", runs[i].what, past ? (long long)sb.st_size : -1LL,
             dir_bytes);
      check(past, "%s: the file did not pass its directory within 60 s", runs[i].what);
    } else
      pc_sleep_ms(runs[i].after_ms);
    const double t0 = pc_now();
    kill(pid, runs[i].sig);
    pc_result r;
    pc_wait(pid, 60, &r); /* a run that does not stop is killed at 60 s */
    const double took = pc_now() - t0;
    const char *err = rc_slurp(errfile);
    const int left = pc_count(dir, NULL, first, sizeof first);
    printf("%s: exit %d %.3f s after the signal, %d files left, stderr: %s", runs[i].what, r.code, took, left, err);
    check(r.exited && r.code == 8, "%s: exit 8 (exited %d, code %d, signal %d)", runs[i].what, r.exited, r.code, r.sig);
    check(took < 1.0, "%s: ended %.2f s after the signal (at most 1 s)", runs[i].what, took);
    check(pc_lines(err) == 1 && strstr(err, "interrupted") != NULL, "%s: one line, 'interrupted'", runs[i].what);
    check(left == 0, "%s: %d files left in the output's folder (%s)", runs[i].what, left, left ? first : "");
  }
  return fails != 0;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s CASE TESTDATA TERRAFORT SHARED_DATA\n", argv[0]);
    return 2;
  }
  char name[64];
  snprintf(name, sizeof name, "interp_%s", argv[1]);
  ck_init(argv[2], argv[3], name);
  shared_dir = argv[4];
  snprintf(errfile, sizeof errfile, "%s/last.err", ck_outdir);
  GDALAllRegister();
  ck_mpirun(mpirun, sizeof mpirun);
  static const tr_test_case cases[] = {{"gdal_grid", case_gdal_grid},
                                       {"brute", case_brute},
                                       {"same_bytes", case_same_bytes},
                                       {"fill_voids", case_fill_voids},
                                       {"on_disk", case_on_disk},
                                       {"errors", case_errors},
                                       {"interrupt", case_interrupt}};
  char *sel[] = {argv[0], argv[1], NULL};
  return tr_test_main(2, sel, cases, (int)(sizeof cases / sizeof cases[0]));
}
