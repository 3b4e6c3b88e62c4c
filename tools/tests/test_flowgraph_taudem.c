/*
 * test_flowgraph_taudem.c - `terrafort flowgraph --dir-in p.tif` against TauDEM
 * 5.3's own outputs for the two DEMs in ../shared/data/taudem (skipped when
 * absent): accumulation equals aread8's ad8.tif (edge check) and ad8nc.tif
 * (-nc) exactly; streams at threshold 100 on the no-edge-check area equal
 * src.tif; Strahler order equals ord.tif; basins split the DEM as w.tif
 * does (the same cells under one label, the same cells without); the
 * network has TauDEM's links: matched by their head cell, the same count,
 * strmOrder, Magnitude, Length (within 1e-3 relative, or TauDEM's one
 * decimal), DSContArea and USContArea (1e-3 relative) and strmDrop (0.01,
 * TauDEM's two decimals), read with OGR; outlets moved down the flow path
 * are moveoutletstostreams' moved.shp and their watersheds gagewatershed's
 * gw.tif exactly (also given in another CRS); --snap-distance against a
 * search in the test. The links carry TauDEM's numbers (w.tif's labels
 * exactly, LINKNO, DSLINKNO, USLINKNO1/2). TauDEM streamnet's own command
 * line (-p -fel -ad8 -src -ord -tree -coord -net -w) writes TauDEM's
 * tree.txt byte for byte and its coord.txt (same_coord says within what),
 * the same bytes for any thread count, tile size, schedule and rank count;
 * streams given at another threshold are followed cell for cell; bad
 * streamnet inputs are refused with one line and nothing left.
 */
#include <gdal.h>
#include <math.h>
#include <ogr_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster_check.h"
#include "tr_test.h"

static const char *tf, *shared;
static char outdir[512];
static const char *const dems[] = {"loganvrt", "enogeo"};

static const char *opath(const char *name) {
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", outdir, name);
  return p[k];
}

static const char *tpath(const char *dem, const char *name) {
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/taudem/%s/%s", shared, dem, name);
  return p[k];
}

static int have_taudem(void) {
  struct stat sb;
  return stat(tpath("loganvrt", "p.tif"), &sb) == 0;
}

static int run_flow(const char *dem, const char *flags) {
  char c[4096];
  snprintf(c, sizeof c, "'%s' flowgraph -q --dir-in '%s' %s", tf, tpath(dem, "p.tif"), flags);
  return rc_run(c, NULL);
}

/* Same nodata cells, same values elsewhere (exactly). TauDEM's ord.tif
 * holds 0, not its nodata, where the directions are nodata: with `dirs`
 * given, a nodata cell of ours may be a 0 of TauDEM's where dirs is nodata. */
static int same_cells_dirs(const char *mine, const char *ref, const char *dirs) {
  rc_raster a, b, p;
  if (rc_load(mine, &a) || rc_load(ref, &b) || rc_load(dirs ? dirs : ref, &p)) return 0;
  long bad = 0;
  for (long i = 0; i < (long)a.rows * a.cols && a.rows == b.rows && a.cols == b.cols; i++) {
    const int na = rc_is_nodata(&a, a.v[i]);
    const int nb = rc_is_nodata(&b, b.v[i]) || (dirs && rc_is_nodata(&p, p.v[i]) && b.v[i] == 0);
    if (na != nb || (!na && a.v[i] != b.v[i])) {
      if (!bad) fprintf(stderr, "%s: cell %ld: %g vs TauDEM %g\n", mine, i, a.v[i], b.v[i]);
      bad++;
    }
  }
  const int ok = a.rows == b.rows && a.cols == b.cols && !bad;
  if (bad) fprintf(stderr, "%s: %ld cells differ from %s\n", mine, bad, ref);
  rc_free(&a);
  rc_free(&b);
  rc_free(&p);
  return ok;
}

static int same_cells(const char *mine, const char *ref) { return same_cells_dirs(mine, ref, NULL); }

static int test_accumulation(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  for (int d = 0; d < 2; d++) {
    ASSERT_EQ_INT(run_flow(dems[d], "--acc-type Float32 --tile-size 100"), 2); /* no product */
    char f[1024];
    snprintf(f, sizeof f, "--acc '%s' --tile-size 100", opath("ad8.tif"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    ASSERT(same_cells(opath("ad8.tif"), tpath(dems[d], "ad8.tif")));
    snprintf(f, sizeof f, "-ad8 '%s' -nc --tile-size 77", opath("ad8nc.tif"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    ASSERT(same_cells(opath("ad8nc.tif"), tpath(dems[d], "ad8nc.tif")));
  }
  return 0;
}

static int test_streams_order(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs\n"), 0;
  for (int d = 0; d < 2; d++) {
    char f[2048];
    snprintf(f, sizeof f, "--threshold 100 --streams '%s' --order '%s' --tile-size 64", opath("src.tif"),
             opath("ord.tif"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    ASSERT(same_cells(opath("src.tif"), tpath(dems[d], "src.tif")));
    ASSERT(same_cells_dirs(opath("ord.tif"), tpath(dems[d], "ord.tif"), tpath(dems[d], "p.tif")));
  }
  return 0;
}

/* The same partition: label a <-> label b one to one, same unlabelled cells. */
static int same_partition(const char *mine, const char *ref) {
  rc_raster a, b;
  if (rc_load(mine, &a) || rc_load(ref, &b)) return 0;
  const long n = (long)a.rows * a.cols;
  int ok = a.rows == b.rows && a.cols == b.cols;
  long maxa = 0, maxb = 0;
  for (long i = 0; ok && i < n; i++) {
    if (!rc_is_nodata(&a, a.v[i]) && a.v[i] > maxa) maxa = (long)a.v[i];
    if (!rc_is_nodata(&b, b.v[i]) && b.v[i] > maxb) maxb = (long)b.v[i];
  }
  long *ab = malloc(sizeof(long) * (size_t)(maxa + 1)), *ba = malloc(sizeof(long) * (size_t)(maxb + 1));
  for (long i = 0; i <= maxa; i++) ab[i] = -1;
  for (long i = 0; i <= maxb; i++) ba[i] = -1;
  long bad = 0;
  for (long i = 0; ok && i < n; i++) {
    const int na = rc_is_nodata(&a, a.v[i]), nb = rc_is_nodata(&b, b.v[i]);
    if (na != nb) {
      if (!bad++) fprintf(stderr, "%s: cell %ld labelled %g, TauDEM %g\n", mine, i, a.v[i], b.v[i]);
      continue;
    }
    if (na) continue;
    const long la = (long)a.v[i], lb = (long)b.v[i];
    if (la < 0 || lb < 0) {
      bad++;
      continue;
    }
    if (ab[la] < 0) ab[la] = lb;
    if (ba[lb] < 0) ba[lb] = la;
    if (ab[la] != lb || ba[lb] != la) {
      if (!bad++) fprintf(stderr, "%s: cell %ld: label %ld maps to %ld and %ld\n", mine, i, la, ab[la], lb);
    }
  }
  if (bad) fprintf(stderr, "%s: %ld cells disagree with %s\n", mine, bad, ref);
  free(ab);
  free(ba);
  rc_free(&a);
  rc_free(&b);
  return ok && !bad;
}

typedef struct {
  double hx, hy; /* the head cell: the last point */
  double fx, fy; /* the first (downstream) point */
  int order, mag;
  int linkno, ds, us1, us2;
  double len, dsarea, usarea, drop;
} link_rec;

static int read_links(const char *path, link_rec **out) {
  GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_VECTOR, NULL, NULL, NULL);
  if (!ds) return -1;
  OGRLayerH l = GDALDatasetGetLayer(ds, 0);
  const int n = (int)OGR_L_GetFeatureCount(l, 1);
  link_rec *v = calloc((size_t)n + 1, sizeof *v);
  OGRFeatureH f;
  int k = 0;
  OGR_L_ResetReading(l);
  while ((f = OGR_L_GetNextFeature(l)) && k < n) {
    OGRGeometryH g = OGR_F_GetGeometryRef(f);
    const int np = OGR_G_GetPointCount(g);
    v[k].hx = OGR_G_GetX(g, np - 1);
    v[k].hy = OGR_G_GetY(g, np - 1);
    v[k].fx = OGR_G_GetX(g, 0);
    v[k].fy = OGR_G_GetY(g, 0);
    v[k].order = OGR_F_GetFieldAsInteger(f, OGR_F_GetFieldIndex(f, "strmOrder"));
    v[k].mag = OGR_F_GetFieldAsInteger(f, OGR_F_GetFieldIndex(f, "Magnitude"));
    v[k].len = OGR_F_GetFieldAsDouble(f, OGR_F_GetFieldIndex(f, "Length"));
    v[k].dsarea = OGR_F_GetFieldAsDouble(f, OGR_F_GetFieldIndex(f, "DSContArea"));
    v[k].usarea = OGR_F_GetFieldAsDouble(f, OGR_F_GetFieldIndex(f, "USContArea"));
    v[k].drop = OGR_F_GetFieldAsDouble(f, OGR_F_GetFieldIndex(f, "strmDrop"));
    v[k].linkno = OGR_F_GetFieldAsInteger(f, OGR_F_GetFieldIndex(f, "LINKNO"));
    v[k].ds = OGR_F_GetFieldAsInteger(f, OGR_F_GetFieldIndex(f, "DSLINKNO"));
    v[k].us1 = OGR_F_GetFieldAsInteger(f, OGR_F_GetFieldIndex(f, "USLINKNO1"));
    v[k].us2 = OGR_F_GetFieldAsInteger(f, OGR_F_GetFieldIndex(f, "USLINKNO2"));
    k++;
    OGR_F_Destroy(f);
  }
  GDALClose(ds);
  *out = v;
  return k;
}

static int same_pt(double ax, double ay, double bx, double by) {
  return fabs(ax - bx) <= 1e-7 * fabs(bx) + 1e-9 && fabs(ay - by) <= 1e-7 * fabs(by) + 1e-9;
}

static int near_rel(double a, double b, double rel) { return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + 1e-9; }

/* TauDEM's shapefile keeps one decimal of Length: within 1e-3 relative, or
 * within that rounding. */
static int same_length(double mine, double taudem) {
  return near_rel(mine, taudem, 1e-3) || fabs(mine - taudem) <= 0.05 + 1e-9;
}

/* The network at `mine` has TauDEM's links (net.shp of dems[d]): matched by
 * their end points, the same numbers (LINKNO, DSLINKNO, USLINKNO1/2),
 * order, magnitude, Length, areas and drop. */
static int same_network(const char *mine, int d) {
  {
    link_rec *a = NULL, *b = NULL;
    const int na = read_links(mine, &a), nb = read_links(tpath(dems[d], "net.shp"), &b);
    fprintf(stderr, "%s: %d links, TauDEM %d\n", dems[d], na, nb);
    ASSERT(na > 0);
    ASSERT_EQ_INT(na, nb);
    int matched = 0, same_order = 0, same_mag = 0, same_len = 0, same_ds = 0, same_us = 0, same_drop = 0, same_ids = 0;
    char *used = calloc((size_t)nb + 1, 1);
    for (int i = 0; i < na; i++)
      for (int j = 0; j < nb; j++) {
        /* the same link: the same end points (zero-length links at one
         * junction differ by magnitude) */
        if (used[j] || !same_pt(a[i].hx, a[i].hy, b[j].hx, b[j].hy) || !same_pt(a[i].fx, a[i].fy, b[j].fx, b[j].fy) ||
            (a[i].len == 0 && a[i].mag != b[j].mag))
          continue;
        used[j] = 1;
        matched++;
        same_order += a[i].order == b[j].order;
        same_ids += a[i].linkno == b[j].linkno && a[i].ds == b[j].ds && a[i].us1 == b[j].us1 && a[i].us2 == b[j].us2;
        same_mag += a[i].mag == b[j].mag;
        same_len += same_length(a[i].len, b[j].len);
        same_ds += near_rel(a[i].dsarea, b[j].dsarea, 1e-3);
        if (!near_rel(a[i].dsarea, b[j].dsarea, 1e-3) && getenv("FLOW_DEBUG"))
          fprintf(stderr, "  DS area at (%.3f, %.3f)-(%.3f, %.3f): %.1f vs TauDEM %.1f (US %.1f vs %.1f) len %.1f mag %d\n", b[j].fx,
                  b[j].fy, b[j].hx, b[j].hy, a[i].dsarea, b[j].dsarea, a[i].usarea, b[j].usarea, b[j].len, b[j].mag);
        same_us += near_rel(a[i].usarea, b[j].usarea, 1e-3);
        same_drop += fabs(a[i].drop - b[j].drop) <= 0.01 + 1e-3 * fabs(b[j].drop);
        if (!same_length(a[i].len, b[j].len) && same_len + 5 > matched)
          fprintf(stderr, "  link at head (%.3f, %.3f): length %.3f vs TauDEM %.3f\n", b[j].hx, b[j].hy, a[i].len,
                  b[j].len);
        break;
      }
    for (int j = 0; j < nb; j++)
      if (!used[j])
        fprintf(stderr, "  TauDEM link not matched: (%.6f, %.6f)-(%.6f, %.6f) order %d magnitude %d length %.1f\n", b[j].fx,
                b[j].fy, b[j].hx, b[j].hy, b[j].order, b[j].mag, b[j].len);
    fprintf(stderr,
            "%s: matched %d, numbers %d, order %d, magnitude %d, length %d, DSContArea %d, USContArea %d, drop %d\n",
            dems[d], matched, same_ids, same_order, same_mag, same_len, same_ds, same_us, same_drop);
    ASSERT_EQ_INT(matched, nb);
    ASSERT_EQ_INT(same_order, nb);
    ASSERT_EQ_INT(same_mag, nb);
    ASSERT_EQ_INT(same_len, nb);
    ASSERT_EQ_INT(same_ds, nb);
    ASSERT_EQ_INT(same_us, nb);
    ASSERT_EQ_INT(same_drop, nb);
    ASSERT_EQ_INT(same_ids, nb);
    free(used);
    free(a);
    free(b);
  }
  return 0;
}

static int test_basins_network(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs\n"), 0;
  for (int d = 0; d < 2; d++) {
    char f[2048];
    snprintf(f, sizeof f, "--threshold 100 --basins '%s' --network '%s' --filled-in '%s' --tile-size 90",
             opath("w.tif"), opath("net.gpkg"), tpath(dems[d], "fel.tif"));
    unlink(opath("net.gpkg"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    /* TauDEM's link numbers: the same labels, not only the same cells */
    ASSERT(same_cells(opath("w.tif"), tpath(dems[d], "w.tif")));
    ASSERT(same_partition(opath("w.tif"), tpath(dems[d], "w.tif")));
    ASSERT_EQ_INT(same_network(opath("net.gpkg"), d), 0);
  }
  return 0;
}

/* The moved outlets' points: id, Dist_moved and where, in layer order. */
typedef struct {
  long long id, moved;
  double x, y;
} outlet_pt;

static int read_points(const char *path, outlet_pt *p, int max) {
  GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_VECTOR, NULL, NULL, NULL);
  if (!ds) return -1;
  OGRLayerH lay = GDALDatasetGetLayer(ds, 0);
  OGRFeatureDefnH fd = OGR_L_GetLayerDefn(lay);
  const int fid = OGR_FD_GetFieldIndex(fd, "id"), fdm = OGR_FD_GetFieldIndex(fd, "Dist_moved");
  int n = 0;
  OGRFeatureH f;
  while ((f = OGR_L_GetNextFeature(lay)) && n < max) {
    OGRGeometryH g = OGR_F_GetGeometryRef(f);
    p[n++] = (outlet_pt){OGR_F_GetFieldAsInteger64(f, fid), fdm >= 0 ? OGR_F_GetFieldAsInteger64(f, fdm) : 0,
                         OGR_G_GetX(g, 0), OGR_G_GetY(g, 0)};
    OGR_F_Destroy(f);
  }
  GDALClose(ds);
  return fid < 0 ? -1 : n;
}

static int same_points(const char *mine, const char *ref) {
  outlet_pt a[16], b[16];
  const int na = read_points(mine, a, 16), nb = read_points(ref, b, 16);
  ASSERT(na > 0);
  ASSERT_EQ_INT(na, nb);
  for (int i = 0; i < na; i++) {
    if (a[i].id != b[i].id || a[i].moved != b[i].moved || fabs(a[i].x - b[i].x) > 1e-6 * (1 + fabs(b[i].x)) ||
        fabs(a[i].y - b[i].y) > 1e-6 * (1 + fabs(b[i].y))) {
      fprintf(stderr, "%s: outlet %d: id %lld moved %lld (%.9g, %.9g); TauDEM id %lld moved %lld (%.9g, %.9g)\n", mine,
              i, a[i].id, a[i].moved, a[i].x, a[i].y, b[i].id, b[i].moved, b[i].x, b[i].y);
      return 1;
    }
  }
  return 0;
}

/* Outlets as TauDEM moves them (moveoutletstostreams -md 50 on src at 100
 * cells: the same points, Dist_moved -1 where no stream is in reach) and
 * their watersheds as gagewatershed labels them by the field id: exactly
 * TauDEM's moved.shp and gw.tif, with 1 and 2 threads; the outlets given
 * in another CRS (EPSG:4326, through ogr2ogr) give the same watersheds. */
static int test_outlets_moved(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  for (int d = 0; d < 2; d++) {
    char f[2048];
    for (int th = 1; th <= 2; th++) {
      unlink(opath("gw.tif"));
      snprintf(f, sizeof f,
               "--outlets '%s' --id-field id -om '%s' -w '%s' -md 50 --threads %d --tile-size 128",
               tpath(dems[d], "hydro/outlets.shp"), opath(th == 1 ? "moved.shp" : "moved2.gpkg"), opath("gw.tif"), th);
      ASSERT_EQ_INT(run_flow(dems[d], f), 0);
      ASSERT(same_points(opath(th == 1 ? "moved.shp" : "moved2.gpkg"), tpath(dems[d], "hydro/moved.shp")) == 0);
      ASSERT(same_cells(opath("gw.tif"), tpath(dems[d], "hydro/gw.tif")));
    }
    /* gagewatershed's spelling and its -id table */
    snprintf(f, sizeof f, "-o '%s' --id-field id -gw '%s' -id '%s'", tpath(dems[d], "hydro/outlets.shp"),
             opath("gw2.tif"), opath("gwid.txt"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    ASSERT(same_cells(opath("gw2.tif"), tpath(dems[d], "hydro/gw.tif")));
    ASSERT(rc_same_file(opath("gwid.txt"), tpath(dems[d], "hydro/gwid.txt")));
    /* the table alone (its basins in a scratch raster, gone after) */
    snprintf(f, sizeof f, "-o '%s' --id-field id --outlet-table '%s'", tpath(dems[d], "hydro/outlets.shp"),
             opath("gwid2.txt"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    ASSERT(rc_same_file(opath("gwid2.txt"), tpath(dems[d], "hydro/gwid.txt")));
    /* -om alone: TauDEM moveoutletstostreams' run */
    snprintf(f, sizeof f, "-o '%s' -om '%s' --id-field id", tpath(dems[d], "hydro/outlets.shp"), opath("only.gpkg"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    ASSERT(same_points(opath("only.gpkg"), tpath(dems[d], "hydro/moved.shp")) == 0);
    /* ... and from the DEM itself (a run of directions only skipped it,
     * leaving no file behind exit 0) */
    static const char *const raw[] = {"LoganVRT/output.vrt", "enogeo.tif"};
    char c0[4096];
    unlink(opath("raw.gpkg"));
    snprintf(c0, sizeof c0, "'%s' flowgraph -q '%s/%s' -o '%s' -om '%s' --id-field id", tf, shared, raw[d],
             tpath(dems[d], "hydro/outlets.shp"), opath("raw.gpkg"));
    ASSERT_EQ_INT(rc_run(c0, NULL), 0);
    ASSERT(same_points(opath("raw.gpkg"), tpath(dems[d], "hydro/moved.shp")) == 0);
    /* the outlets in longitude and latitude */
    char c[2048];
    unlink(opath("ll.gpkg"));
    snprintf(c, sizeof c, "ogr2ogr -q -t_srs EPSG:4326 '%s' '%s'", opath("ll.gpkg"), tpath(dems[d], "hydro/outlets.shp"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    snprintf(f, sizeof f, "-o '%s' --id-field id -w '%s'", opath("ll.gpkg"), opath("gwll.tif"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    ASSERT(same_cells(opath("gwll.tif"), tpath(dems[d], "hydro/gw.tif")));
  }
  return 0;
}

/* --snap-distance D: each outlet goes to the cell of largest accumulation
 * whose centre lies within D of it (ties to the nearer), as a search over
 * the no-edge-check accumulation in the test finds; its basin is labelled
 * there; Dist_moved is the move in cells (the larger of rows and columns). */
static int test_outlets_snap_distance(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  const char *dem = "loganvrt";
  const double dist = 250; /* metres: 2.5 cells of 100 m */
  char f[2048];
  snprintf(f, sizeof f, "-o '%s' --id-field id --snap-distance %g -om '%s' -w '%s'",
           tpath(dem, "hydro/outlets.shp"), dist, opath("snapd.gpkg"), opath("gwd.tif"));
  ASSERT_EQ_INT(run_flow(dem, f), 0);
  rc_raster acc, w;
  ASSERT(rc_load(tpath(dem, "ad8nc.tif"), &acc) == 0);
  ASSERT(rc_load(opath("gwd.tif"), &w) == 0);
  GDALDatasetH ds = GDALOpen(tpath(dem, "ad8nc.tif"), GA_ReadOnly);
  double gt[6];
  GDALGetGeoTransform(ds, gt);
  GDALClose(ds);
  outlet_pt given[16], got[16];
  const int n = read_points(tpath(dem, "hydro/outlets.shp"), given, 16);
  ASSERT(n == 3 && read_points(opath("snapd.gpkg"), got, 16) == n);
  for (int i = 0; i < n; i++) {
    const long r0 = (long)floor((given[i].y - gt[3]) / gt[5]), c0 = (long)floor((given[i].x - gt[0]) / gt[1]);
    long best = -1;
    double bv = 0, bd = 0;
    for (long r = r0 - 4; r <= r0 + 4; r++)
      for (long c = c0 - 4; c <= c0 + 4; c++) {
        if (r < 0 || c < 0 || r >= acc.rows || c >= acc.cols) continue;
        const double a = acc.v[r * acc.cols + c];
        if (rc_is_nodata(&acc, a)) continue;
        const double d = hypot(gt[0] + (c + 0.5) * gt[1] - given[i].x, gt[3] + (r + 0.5) * gt[5] - given[i].y);
        if (d > dist) continue;
        if (best < 0 || a > bv || (a == bv && d < bd)) best = r * acc.cols + c, bv = a, bd = d;
      }
    ASSERT(best >= 0);
    const long br = best / acc.cols, bc = best % acc.cols;
    ASSERT(fabs(got[i].x - (gt[0] + (bc + 0.5) * gt[1])) < 1e-6 && fabs(got[i].y - (gt[3] + (br + 0.5) * gt[5])) < 1e-6);
    const long dr = labs(br - r0), dc = labs(bc - c0);
    ASSERT_EQ_INT(got[i].moved, dr > dc ? dr : dc);
    ASSERT_EQ_INT((long long)w.v[best], given[i].id);
    /* the snap is off the tributary: at least what the path would reach */
    ASSERT(bv >= 100);
  }
  rc_free(&acc);
  rc_free(&w);
  return 0;
}

/* TauDEM d8flowdir's command line, -fel FEL -p P -sd8 SD8: the directions
 * and slope made from the filled DEM, the same files as the long form
 * (FEL as the DEM, --filled, --dir, --slope), and sd8 exactly TauDEM's on
 * the projected DEM. */
static int test_d8flowdir_form(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  for (int d = 0; d < 2; d++) {
    char c[4096];
    snprintf(c, sizeof c, "'%s' flowgraph -q -fel '%s' -p '%s' -sd8 '%s'", tf, tpath(dems[d], "fel.tif"), opath("p1.tif"),
             opath("sd81.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    snprintf(c, sizeof c, "'%s' flowgraph -q '%s' --filled --dir '%s' --slope '%s'", tf, tpath(dems[d], "fel.tif"),
             opath("p2.tif"), opath("sd82.tif"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(rc_same_file(opath("p1.tif"), opath("p2.tif")));
    ASSERT(rc_same_file(opath("sd81.tif"), opath("sd82.tif")));
    /* on the projected DEM exactly TauDEM's (the geographic one's metric
     * cell sizes differ from TauDEM's in the last digits) */
    if (d == 0) ASSERT(same_cells(opath("sd81.tif"), tpath(dems[d], "sd8.tif")));
  }
  return 0;
}

/* An outlet on a nodata cell of the directions: one line naming it, exit
 * 3, no file (its basin would be empty). */
static int test_outlet_on_nodata(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  rc_raster p;
  ASSERT(rc_load(tpath("enogeo", "p.tif"), &p) == 0);
  long at = -1;
  for (long i = 0; i < (long)p.rows * p.cols && at < 0; i++)
    if (rc_is_nodata(&p, p.v[i])) at = i;
  ASSERT(at >= 0);
  const double x = p.gt[0] + (at % p.cols + 0.5) * p.gt[1], y = p.gt[3] + (at / p.cols + 0.5) * p.gt[5];
  rc_free(&p);
  char f[2048], c[4096], errf[600];
  snprintf(f, sizeof f, "%s/nd.geojson", outdir);
  FILE *o = fopen(f, "w");
  ASSERT(o != NULL);
  fprintf(o, "{\"type\":\"FeatureCollection\",\"features\":[{\"type\":\"Feature\",\"properties\":{\"id\":5},"
             "\"geometry\":{\"type\":\"Point\",\"coordinates\":[%.12f,%.12f]}}]}\n", x, y);
  fclose(o);
  snprintf(errf, sizeof errf, "%s/nd.stderr", outdir);
  unlink(opath("ndgw.tif"));
  snprintf(c, sizeof c, "'%s' flowgraph -q --dir-in '%s' -o '%s' -gw '%s'", tf, tpath("enogeo", "p.tif"), f,
           opath("ndgw.tif"));
  ASSERT_EQ_INT(rc_run(c, errf), 3);
  ASSERT(strstr(rc_slurp(errf), "lies on a nodata cell") != NULL);
  ASSERT(access(opath("ndgw.tif"), F_OK) != 0);
  return 0;
}

/* Bad outlet options: one line, exit 2 (usage) or 3 (input), no file left. */
static int test_outlets_bad(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  char pts[1024], c[4096], errf[600];
  snprintf(pts, sizeof pts, "%s", tpath("loganvrt", "hydro/outlets.shp"));
  snprintf(errf, sizeof errf, "%s/bad.stderr", outdir);
  unlink(opath("x.gpkg"));
  unlink(opath("x.tif"));
  /* a point file with a string id and one in a CRS far off the grid */
  char s[2048];
  unlink(opath("str.gpkg"));
  snprintf(s, sizeof s, "ogr2ogr -q -sql \"SELECT CAST(id AS character(8)) AS id FROM outlets\" '%s' '%s'",
           opath("str.gpkg"), pts);
  ASSERT_EQ_INT(rc_run(s, NULL), 0);
  const struct {
    const char *flags, *says;
    int code;
  } cases[] = {
      {"-o '%s' -om x.gpkg --snap-distance 0", "--snap-distance", 2},
      {"-o '%s' -om x.gpkg --snap-distance -3", "--snap-distance", 2},
      {"-om x.gpkg", "--moved-outlets needs --outlets", 2},
      {"-w x.tif -id x.gpkg", "--outlet-table needs --outlets", 2},
      {"-w x.tif --basins-by edges --id-field id", "--id-field goes with --outlets", 2},
      {"-o '%s' -w x.tif --id-field nope", "no field 'nope'", 2},
      {"-o STR -w x.tif --id-field id", "is not an integer field", 2},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char flags[1500], fl[1500];
    if (strstr(cases[k].flags, "STR")) snprintf(fl, sizeof fl, "-o '%s' -w x.tif --id-field id", opath("str.gpkg"));
    else snprintf(fl, sizeof fl, cases[k].flags, pts);
    /* the outputs in the test's folder */
    char *x;
    snprintf(flags, sizeof flags, "%s", fl);
    if ((x = strstr(flags, " x."))) snprintf(x, sizeof flags - (size_t)(x - flags), " %s/x.%s", outdir, strstr(fl, " x.") + 3);
    snprintf(c, sizeof c, "'%s' flowgraph -q --dir-in '%s' %s", tf, tpath("loganvrt", "p.tif"), flags);
    const int rc = rc_run(c, errf);
    const char *msg = rc_slurp(errf);
    if (rc != cases[k].code || !strstr(msg, cases[k].says)) {
      fprintf(stderr, "%s: exit %d, said: %s\n", flags, rc, msg);
      return 1;
    }
    ASSERT(access(opath("x.gpkg"), F_OK) != 0 && access(opath("x.tif"), F_OK) != 0);
  }
  return 0;
}

/* ------------------------------------------------ TauDEM streamnet's form */

/* The files of one streamnet run, in folder `dir`. */
static const char *const sn_files[] = {"tree.txt", "coord.txt", "ord.tif", "w.tif", "net.shp", "net.shx", "net.dbf"};
#define SN_NFILES (sizeof sn_files / sizeof sn_files[0])

static const char *in_dir(const char *dir, const char *name) {
  static char p[4][1200];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

/* A fresh folder under the output folder. */
static const char *fresh(const char *name) {
  static char d[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(d[k], sizeof d[k], "%s/%s", outdir, name);
  char c[2200];
  snprintf(c, sizeof c, "rm -rf '%s' && mkdir -p '%s'", d[k], d[k]);
  return rc_run(c, NULL) == 0 ? d[k] : NULL;
}

/* TauDEM streamnet's command line, word for word, on dems[d] with `src`
 * and `ad8` (NULL: TauDEM's src.tif and ad8nc.tif), its outputs in `dir`;
 * `pre` goes before the program (mpirun ...), `more` after the options. */
static int run_streamnet(int d, const char *dir, const char *src, const char *ad8, const char *pre, const char *more,
                         const char *errf) {
  char c[6000];
  snprintf(c, sizeof c,
           "%s '%s' flowgraph -q -fel '%s' -p '%s' -ad8 '%s' -src '%s' -ord '%s/ord.tif' -tree '%s/tree.txt' "
           "-coord '%s/coord.txt' -net '%s/net.shp' -w '%s/w.tif' %s",
           pre ? pre : "", tf, tpath(dems[d], "fel.tif"), tpath(dems[d], "p.tif"), ad8 ? ad8 : tpath(dems[d], "ad8nc.tif"),
           src ? src : tpath(dems[d], "src.tif"), dir, dir, dir, dir, dir, more ? more : "");
  return rc_run(c, errf);
}

typedef struct {
  double v[5]; /* x, y, distance to the outlet, elevation, area */
} coord_row;

static int read_coord(const char *path, coord_row **out) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0, cap = 1024;
  coord_row *v = malloc(sizeof *v * (size_t)cap);
  coord_row r;
  while (fscanf(f, "%lf %lf %lf %lf %lf", &r.v[0], &r.v[1], &r.v[2], &r.v[3], &r.v[4]) == 5) {
    if (n == cap) v = realloc(v, sizeof *v * (size_t)(cap *= 2));
    v[n++] = r;
  }
  fclose(f);
  *out = v;
  return n;
}

/* coord.txt against TauDEM's, line by line. TauDEM prints six decimals of
 * single-precision values: x, y and the elevation are compared exactly (the
 * same printed digits); so are the distance and the area on the projected
 * DEM (the same float sums). On the geographic DEM TauDEM's metric cell
 * sizes come from its own ellipsoid formula at a latitude one row off
 * (distances: within 3e-6 relative), and it multiplies every cell by the
 * middle row's cell area where ours uses each row's own, as the network
 * does (areas: within 1e-3 relative, the network's DSContArea tolerance). */
static int same_coord(const char *mine, int d) {
  coord_row *a = NULL, *b = NULL;
  const int na = read_coord(mine, &a), nb = read_coord(tpath(dems[d], "coord.txt"), &b);
  ASSERT(na > 0);
  ASSERT_EQ_INT(na, nb);
  const double tol_len = d ? 3e-6 : 0.0, tol_area = d ? 1e-3 : 0.0;
  double worst[5] = {0};
  int bad = 0;
  for (int i = 0; i < na; i++)
    for (int c = 0; c < 5; c++) {
      const double diff = fabs(a[i].v[c] - b[i].v[c]), rel = diff / fmax(fabs(b[i].v[c]), 1e-300);
      if (diff > 0 && rel > worst[c]) worst[c] = rel;
      const double tol = c == 2 ? tol_len : c == 4 ? tol_area : 0.0;
      if (diff > 0 && rel > tol && !bad++)
        fprintf(stderr, "%s line %d column %d: %f, TauDEM %f\n", mine, i + 1, c + 1, a[i].v[c], b[i].v[c]);
    }
  fprintf(stderr, "%s: coord.txt %d points, largest relative difference x %g y %g distance %g elevation %g area %g\n",
          dems[d], na, worst[0], worst[1], worst[2], worst[3], worst[4]);
  free(a);
  free(b);
  ASSERT_EQ_INT(bad, 0);
  return 0;
}

/* TauDEM's exact streamnet command line on both DEMs: tree.txt is TauDEM's
 * byte for byte, coord.txt TauDEM's (same_coord: byte for byte on the
 * projected DEM), ord and w TauDEM's cells and labels, the network
 * TauDEM's links with their numbers. */
static int test_streamnet_form(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  for (int d = 0; d < 2; d++) {
    const char *dir = fresh(d ? "sn_enogeo" : "sn_loganvrt");
    ASSERT(dir != NULL);
    ASSERT_EQ_INT(run_streamnet(d, dir, NULL, NULL, NULL, NULL, NULL), 0);
    ASSERT(rc_same_file(in_dir(dir, "tree.txt"), tpath(dems[d], "tree.txt")));
    if (d == 0) ASSERT(rc_same_file(in_dir(dir, "coord.txt"), tpath(dems[d], "coord.txt")));
    ASSERT_EQ_INT(same_coord(in_dir(dir, "coord.txt"), d), 0);
    ASSERT(same_cells_dirs(in_dir(dir, "ord.tif"), tpath(dems[d], "ord.tif"), tpath(dems[d], "p.tif")));
    ASSERT(same_cells(in_dir(dir, "w.tif"), tpath(dems[d], "w.tif")));
    ASSERT_EQ_INT(same_network(in_dir(dir, "net.shp"), d), 0);
  }
  return 0;
}

/* The same bytes of every streamnet file for one or two threads, other
 * tile sizes and (when mpirun is there) two and three ranks. */
static int test_streamnet_same_bytes(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  const int mpi = rc_run("command -v mpirun >/dev/null", NULL) == 0;
  static const struct {
    const char *pre, *more;
  } runs[] = {{NULL, "--threads 1"},
              {NULL, "--threads 2 --tile-size 64"},
              {NULL, "--threads 2 --tile-size 100 --schedule bsp"},
              {"mpirun --allow-run-as-root --oversubscribe -n 2", "--threads 1"},
              {"mpirun --allow-run-as-root --oversubscribe -n 3", "--tile-size 90"}};
  const int d = 1; /* the geographic DEM, the larger */
  const char *base = fresh("sn_same0");
  ASSERT(base != NULL);
  for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
    if (runs[k].pre && !mpi) {
      fprintf(stderr, "(no mpirun: the rank counts are not run)\n");
      continue;
    }
    char name[32];
    snprintf(name, sizeof name, "sn_same%zu", k);
    const char *dir = k ? fresh(name) : base;
    ASSERT(dir != NULL);
    if (run_streamnet(d, dir, NULL, NULL, runs[k].pre, runs[k].more, NULL) != 0) {
      fprintf(stderr, "streamnet run %s %s failed\n", runs[k].pre ? runs[k].pre : "", runs[k].more);
      return 1;
    }
    for (size_t f = 0; f < SN_NFILES && k; f++)
      if (!rc_same_file(in_dir(dir, sn_files[f]), in_dir(base, sn_files[f]))) {
        fprintf(stderr, "%s differs with %s %s\n", sn_files[f], runs[k].pre ? runs[k].pre : "", runs[k].more);
        return 1;
      }
  }
  return 0;
}

/* A Byte raster on r's grid: 1 where keep(value) holds, else 0. */
static int write_mask(const char *path, const rc_raster *r, double at_least) {
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, r->cols, r->rows, 1, GDT_Byte, NULL);
  if (!ds) return -1;
  GDALSetGeoTransform(ds, (double *)r->gt);
  GDALSetProjection(ds, r->wkt);
  unsigned char *m = malloc((size_t)r->rows * (size_t)r->cols);
  for (long i = 0; i < (long)r->rows * r->cols; i++) m[i] = !rc_is_nodata(r, r->v[i]) && r->v[i] >= at_least;
  const CPLErr e = GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Write, 0, 0, r->cols, r->rows, m, r->cols, r->rows,
                                GDT_Byte, 0, 0);
  free(m);
  GDALClose(ds);
  return e == CE_None ? 0 : -1;
}

/* TauDEM moveoutletstostreams' own form, -p -src -o -om -md: the outlets
 * stop at the streams given, TauDEM's moved.shp from its src.tif (with
 * --id-field id: TauDEM copies the layer's fields, terrafort writes id and
 * Dist_moved), and the same with --dir-in --streams-in; streams given with
 * no cell leave every outlet where it was (Dist_moved -1), so -src is what
 * is read, not --threshold's streams. */
static int test_outlets_src(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  for (int d = 0; d < 2; d++) {
    char c[4096];
    unlink(opath("ms.gpkg"));
    snprintf(c, sizeof c, "'%s' flowgraph -q -p '%s' -src '%s' -o '%s' --id-field id -om '%s' -md 50", tf,
             tpath(dems[d], "p.tif"), tpath(dems[d], "src.tif"), tpath(dems[d], "hydro/outlets.shp"), opath("ms.gpkg"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(same_points(opath("ms.gpkg"), tpath(dems[d], "hydro/moved.shp")) == 0);
    unlink(opath("ms2.gpkg"));
    snprintf(c, sizeof c,
             "'%s' flowgraph -q --dir-in '%s' --streams-in '%s' --outlets '%s' --id-field id --moved-outlets '%s' "
             "--snap 50 --threads 2 --tile-size 64",
             tf, tpath(dems[d], "p.tif"), tpath(dems[d], "src.tif"), tpath(dems[d], "hydro/outlets.shp"),
             opath("ms2.gpkg"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(same_points(opath("ms2.gpkg"), tpath(dems[d], "hydro/moved.shp")) == 0);
    rc_raster ad8;
    ASSERT(rc_load(tpath(dems[d], "ad8nc.tif"), &ad8) == 0);
    ASSERT_EQ_INT(write_mask(opath("src_none.tif"), &ad8, 1e300), 0);
    rc_free(&ad8);
    unlink(opath("ms3.gpkg"));
    snprintf(c, sizeof c, "'%s' flowgraph -q -p '%s' -src '%s' -o '%s' --id-field id -om '%s' -md 50", tf,
             tpath(dems[d], "p.tif"), opath("src_none.tif"), tpath(dems[d], "hydro/outlets.shp"), opath("ms3.gpkg"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    outlet_pt m[16];
    const int n = read_points(opath("ms3.gpkg"), m, 16);
    ASSERT_EQ_INT(n, 3);
    for (int i = 0; i < n; i++) ASSERT(m[i].moved == -1 && m[i].id == 10 * (i + 1));
  }
  return 0;
}

/* Streams given that are not the threshold streamnet's area would give
 * (ad8nc >= 500, made here, with ad8nc as -ad8): the stream cells of the
 * network are exactly that src's (every point of coord.txt is one of its
 * cells and every one of its cells with a direction is a point; ord is
 * nonzero exactly there), and the files are those of --threshold 500 from
 * the directions alone. */
static int test_streams_in_other(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  for (int d = 0; d < 2; d++) {
    rc_raster ad8, p, ord;
    ASSERT(rc_load(tpath(dems[d], "ad8nc.tif"), &ad8) == 0);
    ASSERT(rc_load(tpath(dems[d], "p.tif"), &p) == 0);
    const char *dir = fresh("sn_500"), *dir2 = fresh("sn_500t");
    ASSERT(dir && dir2);
    char src[1200];
    snprintf(src, sizeof src, "%s/src500.tif", outdir);
    ASSERT_EQ_INT(write_mask(src, &ad8, 500), 0);
    ASSERT_EQ_INT(run_streamnet(d, dir, src, NULL, NULL, NULL, NULL), 0);
    ASSERT(rc_load(in_dir(dir, "ord.tif"), &ord) == 0);
    const long n = (long)ad8.rows * ad8.cols;
    char *stream = calloc((size_t)n, 1), *seen = calloc((size_t)n, 1);
    long nstream = 0, bad_ord = 0;
    for (long i = 0; i < n; i++) {
      stream[i] = !rc_is_nodata(&ad8, ad8.v[i]) && ad8.v[i] >= 500 && !rc_is_nodata(&p, p.v[i]);
      nstream += stream[i];
      bad_ord += stream[i] != (!rc_is_nodata(&ord, ord.v[i]) && ord.v[i] > 0);
    }
    coord_row *c = NULL;
    const int nc = read_coord(in_dir(dir, "coord.txt"), &c);
    long off_src = 0;
    for (int i = 0; i < nc; i++) {
      const long col = (long)floor((c[i].v[0] - ad8.gt[0]) / ad8.gt[1]), row = (long)floor((c[i].v[1] - ad8.gt[3]) / ad8.gt[5]);
      if (row < 0 || row >= ad8.rows || col < 0 || col >= ad8.cols || !stream[row * ad8.cols + col]) off_src++;
      else seen[row * ad8.cols + col] = 1;
    }
    long missed = 0;
    for (long i = 0; i < n; i++) missed += stream[i] && !seen[i];
    fprintf(stderr, "%s: src >= 500: %ld stream cells, %d points, %ld off the src, %ld not a point, order off %ld\n",
            dems[d], nstream, nc, off_src, missed, bad_ord);
    free(c);
    free(stream);
    free(seen);
    rc_free(&ord);
    rc_free(&ad8);
    rc_free(&p);
    ASSERT(nstream > 0);
    ASSERT_EQ_INT(off_src, 0);
    ASSERT_EQ_INT(missed, 0);
    ASSERT_EQ_INT(bad_ord, 0);
    /* fewer links than TauDEM's src (threshold 100) */
    long na = 0, nb = 0;
    unsigned char *ta = rc_file_bytes(in_dir(dir, "tree.txt"), &na), *tb = rc_file_bytes(tpath(dems[d], "tree.txt"), &nb);
    ASSERT(ta && tb && na < nb);
    free(ta);
    free(tb);
    /* the same files as the threshold from the directions (whose area is ad8nc) */
    char f[4096];
    snprintf(f, sizeof f, "--threshold 500 -fel '%s' --order '%s' --tree '%s' --coord '%s' --basins '%s'",
             tpath(dems[d], "fel.tif"), in_dir(dir2, "ord.tif"), in_dir(dir2, "tree.txt"), in_dir(dir2, "coord.txt"),
             in_dir(dir2, "w.tif"));
    ASSERT_EQ_INT(run_flow(dems[d], f), 0);
    for (int k = 0; k < 4; k++) {
      static const char *const same[] = {"tree.txt", "coord.txt", "ord.tif", "w.tif"};
      if (!rc_same_file(in_dir(dir, same[k]), in_dir(dir2, same[k]))) {
        fprintf(stderr, "%s: %s of --streams-in differs from --threshold 500's\n", dems[d], same[k]);
        return 1;
      }
    }
  }
  return 0;
}

/* A raster like r (values, nodata, CRS) with its origin moved by dx cells,
 * or its first `rows` rows only. */
static int write_like(const char *path, const rc_raster *r, double dx, int rows) {
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, r->cols, rows, 1, GDT_Float32, NULL);
  if (!ds) return -1;
  double gt[6];
  memcpy(gt, r->gt, sizeof gt);
  gt[0] += dx * gt[1];
  GDALSetGeoTransform(ds, gt);
  GDALSetProjection(ds, r->wkt);
  if (r->has_nodata) GDALSetRasterNoDataValue(GDALGetRasterBand(ds, 1), r->nodata);
  const CPLErr e = GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Write, 0, 0, r->cols, rows, r->v, r->cols, rows,
                                GDT_Float64, 0, 0);
  GDALClose(ds);
  return e == CE_None ? 0 : -1;
}

/* Bad streamnet inputs: each one line, its exit code (2 usage, 3 input),
 * and nothing left in the output folder (no product, no temporary). */
static int test_streamnet_bad(void) {
  if (!have_taudem()) return fprintf(stderr, "SKIP: no TauDEM outputs under %s\n", shared), 0;
  const int d = 0;
  rc_raster src, ad8;
  ASSERT(rc_load(tpath(dems[d], "src.tif"), &src) == 0);
  ASSERT(rc_load(tpath(dems[d], "ad8nc.tif"), &ad8) == 0);
  char shifted[1200], small[1200], none[1200], errf[1200];
  snprintf(shifted, sizeof shifted, "%s/src_shifted.tif", outdir);
  snprintf(small, sizeof small, "%s/ad8_small.tif", outdir);
  snprintf(none, sizeof none, "%s/src_none.tif", outdir);
  snprintf(errf, sizeof errf, "%s/sn_bad.stderr", outdir);
  ASSERT_EQ_INT(write_like(shifted, &src, 1.0, src.rows), 0);
  ASSERT_EQ_INT(write_like(small, &ad8, 0.0, ad8.rows - 3), 0);
  ASSERT_EQ_INT(write_mask(none, &ad8, 1e300), 0); /* no stream cell */
  rc_free(&src);
  rc_free(&ad8);
  const struct {
    const char *src, *ad8, *more;
    int code;
    const char *says;
  } cases[] = {
      {shifted, NULL, "", 3, "is not on the grid of the directions"},
      {NULL, small, "", 3, "cells but the directions"},
      {none, NULL, "", 3, "--tree: no stream link"},
      {NULL, NULL, "--streams s.tif", 2, "--streams does not go with --streams-in"},
      {NULL, NULL, "--weights w.tif", 2, "--weights does not go with --streams-in"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const char *dir = fresh("sn_bad");
    ASSERT(dir != NULL);
    char more[1500];
    snprintf(more, sizeof more, "%s", cases[k].more);
    if (strstr(more, ".tif")) { /* the option's file in the folder */
      char *sp = strchr(more, ' ');
      snprintf(sp + 1, sizeof more - (size_t)(sp + 1 - more), "%s/%s", dir, strchr(cases[k].more, ' ') + 1);
    }
    const int rc = run_streamnet(d, dir, cases[k].src, cases[k].ad8, NULL, more, errf);
    const char *msg = rc_slurp(errf);
    int lines = 0;
    for (const char *q = msg; *q; q++) lines += *q == '\n';
    if (rc != cases[k].code || !strstr(msg, cases[k].says) || lines != 1 || rc_count_entries(dir) != 0) {
      fprintf(stderr, "case %zu: exit %d (want %d), %d entries left, said: %s(want '%s')\n", k, rc, cases[k].code,
              rc_count_entries(dir), msg, cases[k].says);
      return 1;
    }
  }
  /* usage: the area given alone, --coord without elevations */
  const struct {
    const char *flags, *says;
  } usage[] = {{"--acc-in '%s' --tree '%s/t.txt'", "--acc-in (-ad8 in streamnet's form) goes with --streams-in"},
               {"--streams-in '%s' --coord '%s/c.txt'", "--coord lists each point's elevation"}};
  for (size_t k = 0; k < sizeof usage / sizeof usage[0]; k++) {
    const char *dir = fresh("sn_bad");
    ASSERT(dir != NULL);
    char fl[3000], c[4096];
    snprintf(fl, sizeof fl, usage[k].flags, tpath(dems[d], k ? "src.tif" : "ad8nc.tif"), dir);
    snprintf(c, sizeof c, "'%s' flowgraph -q --dir-in '%s' %s", tf, tpath(dems[d], "p.tif"), fl);
    const int rc = rc_run(c, errf);
    const char *msg = rc_slurp(errf);
    if (rc != 2 || !strstr(msg, usage[k].says) || rc_count_entries(dir) != 0) {
      fprintf(stderr, "%s: exit %d (want 2), said: %s(want '%s')\n", fl, rc, msg, usage[k].says);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TESTDATA TERRAFORT SHARED_DATA [test]\n", argv[0]);
    return 2;
  }
  tf = argv[2];
  shared = argv[3];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "flow_taudem_out");
  mkdir(outdir, 0755);
  static const tr_test_case cases[] = {TR_TEST(test_accumulation), TR_TEST(test_streams_order),
                                       TR_TEST(test_basins_network), TR_TEST(test_outlets_moved),
                                       TR_TEST(test_outlets_snap_distance), TR_TEST(test_outlets_bad),
                                       TR_TEST(test_d8flowdir_form), TR_TEST(test_outlet_on_nodata),
                                       TR_TEST(test_streamnet_form), TR_TEST(test_streamnet_same_bytes),
                                       TR_TEST(test_outlets_src), TR_TEST(test_streams_in_other), TR_TEST(test_streamnet_bad)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
