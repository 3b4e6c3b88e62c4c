/*
 * test_flowgraph.c - `terrafort flowgraph` as a user runs it, on direction
 * rasters written here: a random spanning-tree maze (long paths that cross
 * tiles many times) with NoData holes, 301 x 263 cells, TauDEM codes.
 *
 * Shown: every product is the same bytes for 1..4 threads, uneven tile
 * sizes, every schedule and mpirun -n 1/2/3 (the network as GeoJSON text);
 * accumulation at the outlets sums to the valid cell count; area units and
 * Float32; the esri encoding gives the same accumulation; basins per edge
 * outlet and per outlet point (snapped down to the streams) equal a walk
 * down the flow path written here; bad inputs (a
 * missing file, a DEM given as directions, an all-nodata raster, a cycle,
 * an unknown encoding, no product, weights of another size) give one line,
 * the documented exit code and leave no file behind; no message names a
 * scratch file. Band 2 of a two-band DEM gives every product of the band
 * alone. A run leaves all its products or none: a later stage's failure or
 * SIGTERM between any two stages (exit 8) leaves neither the earlier
 * products nor a scratch file, and an older file at a destination stays as
 * it was; outputs that cannot be written are refused before any stage. The
 * network takes names of up to 255 bytes (GeoPackage and GeoJSON), its
 * layer named after the file as for a short name. --basin-stats agrees
 * with a reference computed here from the rasters the run wrote (every
 * --basins-by), is the same bytes for threads, tile sizes and mpirun -n 2/3,
 * and is refused before any work where it cannot be written.
 */
#include <cpl_conv.h>
#include <gdal.h>
#include <math.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc_check.h"
#include "raster_check.h"
#include "tr_test.h"

#define RR 301
#define CC 263

static const char *dir, *tf;
static char outdir[512], mpirun[256];
static const int dr[8] = {0, -1, -1, -1, 0, 1, 1, 1}, dc[8] = {1, 1, 0, -1, -1, -1, 0, 1};

static const char *opath(const char *name) {
  static char p[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", outdir, name);
  return p[k];
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* The maze in TauDEM codes (nodata -32768), rooted at an edge cell that
 * drains off the grid; `cycle` puts a 2 x 2 ring in it. */
static void make_maze(int16_t *p, int cycle) {
  uint64_t s = 777;
  for (int i = 0; i < RR * CC; i++) {
    const int r = i / CC, c = i % CC;
    const int hole = (r - 80) * (r - 80) + (c - 60) * (c - 60) < 150 || (r > 200 && r < 215 && c > 100 && c < 190);
    p[i] = hole ? -32768 : -1;
  }
  int *stack = malloc(sizeof(int) * RR * CC), n = 0;
  const int root = (RR / 2) * CC; /* west edge */
  p[root] = 5;                    /* W: off the grid */
  stack[n++] = root;
  while (n > 0) {
    const int i = stack[n - 1], r = i / CC, c = i % CC;
    int opts[8], no = 0;
    for (int k = 0; k < 8; k++) {
      const int rr = r + dr[k], cc = c + dc[k];
      if (rr >= 0 && rr < RR && cc >= 0 && cc < CC && p[rr * CC + cc] == -1) opts[no++] = k;
    }
    if (!no) {
      n--;
      continue;
    }
    const int k = opts[rnd(&s) % (uint64_t)no], j = (r + dr[k]) * CC + c + dc[k];
    p[j] = (int16_t)((k + 4) % 8 + 1);
    stack[n++] = j;
  }
  free(stack);
  for (int i = 0; i < RR * CC; i++)
    if (p[i] == -1) p[i] = 0; /* cells the tree could not reach: pits */
  if (cycle) {
    const int i = 150 * CC + 130;
    p[i] = 1, p[i + 1] = 7, p[i + CC + 1] = 5, p[i + CC] = 3;
  }
}

static int write_raster(const char *path, GDALDataType t, const void *v, int has_nd, double nd, int rows, int cols) {
  GDALDriverH d = GDALGetDriverByName("GTiff");
  GDALDatasetH ds = GDALCreate(d, path, cols, rows, 1, t, NULL);
  if (!ds) return -1;
  double gt[6] = {500000, 30, 0, 4100000, 0, -30};
  GDALSetGeoTransform(ds, gt);
  OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
  OSRImportFromEPSG(srs, 32617);
  char *wkt = NULL;
  OSRExportToWkt(srs, &wkt);
  GDALSetProjection(ds, wkt);
  CPLFree(wkt);
  OSRDestroySpatialReference(srs);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  if (has_nd) GDALSetRasterNoDataValue(b, nd);
  const CPLErr e = GDALRasterIO(b, GF_Write, 0, 0, cols, rows, (void *)v, cols, rows, t, 0, 0);
  GDALClose(ds);
  return e == CE_None ? 0 : -1;
}

static int flow(const char *prefix, const char *flags, const char *errfile) {
  static char c[4096];
  const int n = snprintf(c, sizeof c, "%s '%s' flowgraph -q %s", prefix, tf, flags);
  if (n < 0 || (size_t)n >= sizeof c) return -1;
  return rc_run(c, errfile);
}

static const char *products(const char *tag) {
  static char f[4096];
  /* the products of one run in folder <tag> (the same names everywhere: a
   * GeoJSON layer is named after its file) */
  char d[600];
  if (snprintf(d, sizeof d, "%s/%s", outdir, tag) >= (int)sizeof d) return "";
  mkdir(d, 0755);
  if (snprintf(f, sizeof f,
               "--dir-in '%s/maze.tif' --acc '%s/acc.tif' --streams '%s/src.tif' --order '%s/ord.tif' "
               "--basins '%s/w.tif' --network '%s/net.geojson' --threshold 40",
               outdir, d, d, d, d, d) >= (int)sizeof f)
    return "";
  return f;
}

static int same_products(const char *a, const char *b) {
  static const char *const ext[] = {"acc.tif", "src.tif", "ord.tif", "w.tif", "net.geojson"};
  for (int i = 0; i < 5; i++) {
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/%s/%s", outdir, a, ext[i]);
    snprintf(pb, sizeof pb, "%s/%s/%s", outdir, b, ext[i]);
    if (!rc_same_file(pa, pb)) {
      fprintf(stderr, "%s and %s differ\n", pa, pb);
      return 0;
    }
  }
  return 1;
}

static int test_setup(void) {
  int16_t *p = malloc(sizeof(int16_t) * RR * CC);
  make_maze(p, 0);
  ASSERT_EQ_INT(write_raster(opath("maze.tif"), GDT_Int16, p, 1, -32768, RR, CC), 0);
  make_maze(p, 1);
  ASSERT_EQ_INT(write_raster(opath("cycle.tif"), GDT_Int16, p, 1, -32768, RR, CC), 0);
  make_maze(p, 0);
  for (int r = 0; r < RR; r += 7) /* many edge outlets */
    if (p[r * CC] != -32768) p[r * CC] = 5;
  ASSERT_EQ_INT(write_raster(opath("maze_edges.tif"), GDT_Int16, p, 1, -32768, RR, CC), 0);
  make_maze(p, 0);
  static const int16_t esri[9] = {0, 1, 128, 64, 32, 16, 8, 4, 2};
  for (int i = 0; i < RR * CC; i++)
    if (p[i] >= 0) p[i] = esri[p[i]];
  ASSERT_EQ_INT(write_raster(opath("maze_esri.tif"), GDT_Int16, p, 1, -32768, RR, CC), 0);
  float *w = malloc(sizeof(float) * RR * (CC - 1));
  for (int i = 0; i < RR * (CC - 1); i++) w[i] = 1;
  ASSERT_EQ_INT(write_raster(opath("narrow.tif"), GDT_Float32, w, 0, 0, RR, CC - 1), 0);
  free(w);
  free(p);
  return 0;
}

static int test_same_bytes_threads_tiles_schedules(void) {
  char f[8192];
  snprintf(f, sizeof f, "%s --threads 1 --tile-size 512", products("base"));
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  static const char *const variants[] = {"--threads 2 --tile-size 37",    "--threads 3 --tile-size 100",
                                         "--threads 4 --tile-size 64 --schedule bsp",
                                         "--threads 4 --tile-size 29 --schedule ap",
                                         "--threads 2 --tile-size 50 --schedule ssp --staleness 2",
                                         "--threads 3 --tile-size 41 --schedule random"};
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
    if (TR_TEST_SANITIZED && v % 2) continue; /* bsp, ssp and the default there; all in Release */
    snprintf(f, sizeof f, "%s %s", products("var"), variants[v]);
    ASSERT_EQ_INT(flow("", f, NULL), 0);
    if (!same_products("base", "var")) {
      fprintf(stderr, "variant: %s\n", variants[v]);
      return 1;
    }
  }
  return 0;
}

static int test_same_bytes_mpirun(void) {
  if (!mpirun[0]) return fprintf(stderr, "SKIP: no mpirun\n"), 0;
  char f[8192];
  snprintf(f, sizeof f, "%s --threads 1 --tile-size 512", products("base"));
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  for (int n = 1; n <= 3; n++) {
    if (TR_TEST_SANITIZED && n != 3) continue; /* the uneven three ranks there */
    char pre[512];
    snprintf(pre, sizeof pre, "%s -n %d", mpirun, n);
    snprintf(f, sizeof f, "%s --threads 2 --tile-size %d", products("mpi"), 40 + 13 * n);
    ASSERT_EQ_INT(flow(pre, f, NULL), 0);
    if (!same_products("base", "mpi")) {
      fprintf(stderr, "mpirun -n %d\n", n);
      return 1;
    }
  }
  return 0;
}

/* The outlets (cells draining off the grid or into NoData, and pits) hold
 * every valid cell between them: the maze's root alone drains the tree. */
static int test_outlets_sum_to_valid_cells(void) {
  char f[4096];
  snprintf(f, sizeof f, "--dir-in '%s' -nc --acc '%s' --tile-size 50", opath("maze.tif"), opath("acc_nc.tif"));
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  rc_raster p, a;
  ASSERT_EQ_INT(rc_load(opath("maze.tif"), &p), 0);
  ASSERT_EQ_INT(rc_load(opath("acc_nc.tif"), &a), 0);
  ASSERT(a.type == GDT_Float64 && a.has_nodata && a.nodata == -1);
  double sum = 0;
  long valid = 0;
  for (int i = 0; i < RR * CC; i++) {
    if (rc_is_nodata(&p, p.v[i])) {
      ASSERT(rc_is_nodata(&a, a.v[i]));
      continue;
    }
    valid++;
    const int code = (int)p.v[i];
    int outlet = code == 0;
    if (!outlet) {
      const int r = i / CC + dr[code - 1], c = i % CC + dc[code - 1];
      outlet = r < 0 || r >= RR || c < 0 || c >= CC || rc_is_nodata(&p, p.v[r * CC + c]);
    }
    if (outlet) sum += a.v[i];
  }
  ASSERT_NEAR(sum, (double)valid, 0);
  ASSERT(a.gt[0] == 500000 && strstr(a.wkt, "32617") != NULL); /* georeferencing kept */
  /* area units: 30 m x 30 m cells; Float32 when asked */
  snprintf(f, sizeof f, "--dir-in '%s' -nc --acc '%s' --units area --acc-type Float32", opath("maze.tif"),
           opath("acc_area.tif"));
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  rc_raster b;
  ASSERT_EQ_INT(rc_load(opath("acc_area.tif"), &b), 0);
  ASSERT(b.type == GDT_Float32);
  for (int i = 0; i < RR * CC; i++)
    if (!rc_is_nodata(&a, a.v[i])) ASSERT_NEAR(b.v[i], (double)(float)(a.v[i] * 900.0), 0);
  /* the esri encoding of the same grid */
  snprintf(f, sizeof f, "--dir-in '%s' --dir-encoding esri -nc --acc '%s'", opath("maze_esri.tif"), opath("acc_esri.tif"));
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  ASSERT(rc_same_file(opath("acc_esri.tif"), opath("acc_nc.tif")));
  rc_free(&p);
  rc_free(&a);
  rc_free(&b);
  return 0;
}

/* One line on stderr naming no scratch file (only the user's), the exit
 * code, nothing new in folder `in`. */
static int refused_in(const char *in, const char *flags, int code, const char *needle) {
  const int before = rc_count_entries(in);
  char errf[1024];
  snprintf(errf, sizeof errf, "%s.err", outdir);
  const int rc = flow("", flags, errf);
  const char *msg = rc_slurp(errf);
  int lines = 0;
  for (const char *s = msg; s && *s; s++) lines += *s == '\n';
  if (rc != code || lines != 1 || (needle && !strstr(msg, needle)) || strstr(msg, ".terrafort-") ||
      rc_count_entries(in) != before) {
    fprintf(stderr, "%s: exit %d (want %d), %d lines, %d -> %d entries: %s\n", flags, rc, code, lines, before,
            rc_count_entries(in), msg ? msg : "");
    return 0;
  }
  return 1;
}

static int refused(const char *flags, int code, const char *needle) { return refused_in(outdir, flags, code, needle); }

static int test_bad_inputs(void) {
  char f[4096];
  snprintf(f, sizeof f, "--dir-in '%s/missing.tif' --acc '%s'", outdir, opath("x.tif"));
  ASSERT(refused(f, 3, "missing.tif"));
  snprintf(f, sizeof f, "--dir-in '%s/fractal.tif' --acc '%s'", dir, opath("x.tif"));
  ASSERT(refused(f, 3, "not a taudem direction code"));
  snprintf(f, sizeof f, "--dir-in '%s/allnodata.tif' --acc '%s'", dir, opath("x.tif"));
  ASSERT(refused(f, 3, "no valid cell"));
  /* from a DEM with no valid cell: the message names the DEM, not the run's scratch directions */
  snprintf(f, sizeof f, "'%s/allnodata.tif' --acc '%s'", dir, opath("x.tif"));
  ASSERT(refused(f, 3, "allnodata.tif' has no valid cell"));
  /* valid cells, all on the edge: no direction anywhere, and the message says that, not "no valid cell" */
  snprintf(f, sizeof f, "'%s/tiny.tif' --acc '%s'", dir, opath("x.tif"));
  ASSERT(refused(f, 3, "tiny.tif' has a flow direction: every valid cell lies on the grid's edge"));
  snprintf(f, sizeof f, "--dir-in '%s' --acc '%s' --streams '%s'", opath("cycle.tif"), opath("x.tif"), opath("y.tif"));
  ASSERT(refused(f, 3, "cycle through cell (row 15"));
  snprintf(f, sizeof f, "--dir-in '%s' --basins '%s'", opath("cycle.tif"), opath("x.tif"));
  ASSERT(refused(f, 3, "cycle"));
  snprintf(f, sizeof f, "--dir-in '%s' --dir-encoding d8 --acc '%s'", opath("maze.tif"), opath("x.tif"));
  ASSERT(refused(f, 2, "--dir-encoding"));
  snprintf(f, sizeof f, "--dir-in '%s' --threshold 100", opath("maze.tif"));
  ASSERT(refused(f, 2, "no product"));
  snprintf(f, sizeof f, "--acc '%s'", opath("x.tif"));
  ASSERT(refused(f, 2, "--dir-in"));
  snprintf(f, sizeof f, "--dir-in '%s' --acc '%s' --weights '%s'", opath("maze.tif"), opath("x.tif"), opath("narrow.tif"));
  ASSERT(refused(f, 3, "narrow.tif"));
  snprintf(f, sizeof f, "--dir-in '%s' --acc '%s' --streams '%s'", opath("maze.tif"), opath("x.tif"), opath("x.tif"));
  ASSERT(refused(f, 2, "two products"));
  snprintf(f, sizeof f, "--dir-in '%s' --network '%s'", opath("maze.tif"), outdir);
  ASSERT(refused(f, 4, "directory"));
  /* a product over a raster a stage reads, by another path: the weights
   * (every accumulation stage reads them), the directions, the DEM; refused
   * before any stage, the file untouched */
  char cp[4096], wcopy[1024], wkeep[1024], wother[1024];
  snprintf(wcopy, sizeof wcopy, "%s/w_in.tif", outdir);
  snprintf(wkeep, sizeof wkeep, "%s/w_keep.tif", outdir);
  snprintf(wother, sizeof wother, "%s/./w_in.tif", outdir);
  snprintf(cp, sizeof cp, "cp '%s' '%s' && cp '%s' '%s'", opath("maze.tif"), wcopy, opath("maze.tif"), wkeep);
  ASSERT_EQ_INT(rc_run(cp, NULL), 0);
  snprintf(f, sizeof f, "--dir-in '%s' --weights '%s' --streams '%s' --acc '%s'", opath("maze.tif"), wcopy,
           opath("y.tif"), wother);
  ASSERT(refused(f, 4, "it is --weights"));
  ASSERT(rc_same_file(wcopy, wkeep));
  snprintf(f, sizeof f, "--dir-in '%s' --acc '%s' --order '%s'", wcopy, opath("x.tif"), wother);
  ASSERT(refused(f, 4, "it is --dir-in"));
  snprintf(f, sizeof f, "'%s' --acc '%s'", wcopy, wother);
  ASSERT(refused(f, 4, "it is the DEM"));
  ASSERT(rc_same_file(wcopy, wkeep));
  unlink(wcopy);
  unlink(wkeep);
  snprintf(f, sizeof f, "--dir-in '%s' --acc '%s' --threshold -3", opath("maze.tif"), opath("x.tif"));
  ASSERT(refused(f, 2, "--threshold"));
  snprintf(f, sizeof f, "--dir-in '%s' --acc '%s' --ft dual --ft-profile source", opath("maze.tif"), opath("x.tif"));
  ASSERT(refused(f, 2, "bit for bit"));
  /* from a DEM: weights or filled elevations of another size are named with the DEM,
     before any stage runs (they were compared with the run's scratch directions) */
  snprintf(f, sizeof f, "'%s/demo.tif' --acc '%s' --weights '%s/fractal.tif'", dir, opath("x.tif"), dir);
  ASSERT(refused(f, 3, "fractal.tif' is 200 x 150 cells but the DEM"));
  snprintf(f, sizeof f, "'%s/demo.tif' --network '%s' --filled-in '%s/fractal.tif'", dir, opath("n.gpkg"), dir);
  ASSERT(refused(f, 3, "but the DEM"));
  /* outlet points: a file with none is refused, not an all-nodata raster */
  char empty[1024];
  snprintf(empty, sizeof empty, "%s/no_outlets.geojson", outdir);
  FILE *fp = fopen(empty, "w");
  ASSERT(fp != NULL);
  fputs("{\"type\":\"FeatureCollection\",\"features\":[]}\n", fp);
  fclose(fp);
  snprintf(f, sizeof f, "--dir-in '%s' --basins '%s' --outlets '%s'", opath("maze.tif"), opath("x.tif"), empty);
  ASSERT(refused(f, 3, "has no outlet points"));
  unlink(empty);
  return 0;
}

/* The cell maze cell i drains into, or -1 where its flow leaves the data. */
static int down_of(const rc_raster *p, int i) {
  if (rc_is_nodata(p, p->v[i]) || p->v[i] == 0) return -1;
  const int k = (int)p->v[i] - 1, r = i / CC + dr[k], c = i % CC + dc[k];
  if (r < 0 || r >= RR || c < 0 || c >= CC || rc_is_nodata(p, p->v[r * CC + c])) return -1;
  return r * CC + c;
}

/* Basins per edge outlet: every cell carries the number (1, 2, ... in
 * row-major order) of the cell where its flow leaves the data. */
static int test_basins_by_edges(void) {
  char f[4096];
  for (int v = 0; v < 2; v++) {
    snprintf(f, sizeof f, "--dir-in '%s' --basins '%s' --basins-by edges --threads %d --tile-size %d",
             opath("maze_edges.tif"), opath(v ? "edges2.tif" : "edges.tif"), 1 + 2 * v, v ? 33 : 512);
    ASSERT_EQ_INT(flow("", f, NULL), 0);
  }
  ASSERT(rc_same_file(opath("edges.tif"), opath("edges2.tif")));
  rc_raster p, w;
  ASSERT_EQ_INT(rc_load(opath("maze_edges.tif"), &p), 0);
  ASSERT_EQ_INT(rc_load(opath("edges.tif"), &w), 0);
  int *label = calloc(RR * CC, sizeof(int)), next = 0;
  for (int i = 0; i < RR * CC; i++)
    if (!rc_is_nodata(&p, p.v[i]) && down_of(&p, i) < 0) label[i] = ++next;
  ASSERT(next > 20); /* the root, the pits and the west edge */
  for (int i = 0; i < RR * CC; i++) {
    if (rc_is_nodata(&p, p.v[i])) {
      ASSERT(rc_is_nodata(&w, w.v[i]));
      continue;
    }
    int j = i;
    while (down_of(&p, j) >= 0) j = down_of(&p, j);
    if (w.v[i] != label[j]) fprintf(stderr, "cell %d: %g, expected %d\n", i, w.v[i], label[j]);
    ASSERT(w.v[i] == label[j]);
  }
  free(label);
  rc_free(&p);
  rc_free(&w);
  return 0;
}

/* Basins per outlet point: points written here (feature ids 1..), moved
 * down to the streams at most --snap cells; a cell takes the id of the
 * first outlet its flow meets, and none when it meets none. */
static int test_basins_by_outlets(void) {
  rc_raster p, a;
  char f[4096];
  snprintf(f, sizeof f, "--dir-in '%s' -nc --acc '%s'", opath("maze.tif"), opath("acc_o.tif"));
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  ASSERT_EQ_INT(rc_load(opath("maze.tif"), &p), 0);
  ASSERT_EQ_INT(rc_load(opath("acc_o.tif"), &a), 0);
  /* outlets: cells on long paths (accumulation between 5 and 39, off the
   * streams of threshold 40), taken in row-major order */
  int cells[6], n = 0;
  for (int i = 0; i < RR * CC && n < 6; i += 997)
    if (!rc_is_nodata(&a, a.v[i]) && a.v[i] >= 5 && a.v[i] < 40) cells[n++] = i;
  ASSERT_EQ_INT(n, 6);
  GDALDriverH drv = GDALGetDriverByName("GPKG");
  unlink(opath("outlets.gpkg"));
  GDALDatasetH ds = GDALCreate(drv, opath("outlets.gpkg"), 0, 0, 0, GDT_Unknown, NULL);
  OGRLayerH lay = GDALDatasetCreateLayer(ds, "outlets", NULL, wkbPoint, NULL);
  for (int k = 0; k < n; k++) {
    OGRFeatureH ft = OGR_F_Create(OGR_L_GetLayerDefn(lay));
    OGRGeometryH g = OGR_G_CreateGeometry(wkbPoint);
    OGR_G_SetPoint_2D(g, 0, 500000 + 30 * (cells[k] % CC + 0.5), 4100000 - 30 * (cells[k] / CC + 0.5));
    OGR_F_SetGeometryDirectly(ft, g);
    ASSERT(OGR_L_CreateFeature(lay, ft) == OGRERR_NONE);
    OGR_F_Destroy(ft);
  }
  GDALClose(ds);
  for (int snap = 0; snap <= 30; snap += 30) {
    snprintf(f, sizeof f, "--dir-in '%s' --basins '%s' --outlets '%s' --snap %d --threshold 40 --tile-size 45",
             opath("maze.tif"), opath("outl.tif"), opath("outlets.gpkg"), snap);
    ASSERT_EQ_INT(flow("", f, NULL), 0);
    rc_raster w;
    ASSERT_EQ_INT(rc_load(opath("outl.tif"), &w), 0);
    int *label = calloc(RR * CC, sizeof(int)), moved = 0;
    for (int k = n - 1; k >= 0; k--) { /* the lower id wins a shared cell */
      int c = cells[k], at = cells[k];
      for (int s = 0; s <= snap; s++) {
        if (a.v[at] >= 40) {
          c = at;
          break;
        }
        if (down_of(&p, at) < 0) break;
        at = down_of(&p, at);
      }
      moved += c != cells[k];
      label[c] = k + 1;
    }
    ASSERT(snap == 0 || moved > 0);
    /* each cell's label: the first labelled cell down its path (none:
     * nodata), every path walked once (a maze's paths are long) */
    double *down_label = malloc(sizeof(double) * RR * CC);
    char *known = calloc(RR * CC, 1);
    int *path = malloc(sizeof(int) * RR * CC);
    ASSERT(down_label && known && path);
    for (int i = 0; i < RR * CC; i++) {
      int np = 0, j = i;
      double v = -2147483647.0;
      for (; j >= 0; j = down_of(&p, j)) {
        if (known[j]) {
          v = down_label[j];
          break;
        }
        path[np++] = j;
        if (label[j]) {
          v = label[j];
          break;
        }
      }
      for (int k = 0; k < np; k++) down_label[path[k]] = v, known[path[k]] = 1;
    }
    long labelled = 0;
    for (int i = 0; i < RR * CC; i++) {
      const double want = rc_is_nodata(&p, p.v[i]) ? -2147483647.0 : down_label[i];
      if (w.v[i] != want) fprintf(stderr, "snap %d cell %d: %g, expected %g\n", snap, i, w.v[i], want);
      ASSERT(w.v[i] == want);
      labelled += want > 0;
    }
    ASSERT(labelled > n);
    free(down_label);
    free(known);
    free(path);
    free(label);
    rc_free(&w);
  }
  snprintf(f, sizeof f, "--dir-in '%s' --basins '%s' --basins-by outlets", opath("maze.tif"), opath("x.tif"));
  ASSERT(refused(f, 2, "--outlets"));
  rc_free(&p);
  rc_free(&a);
  return 0;
}

/* From a raw DEM in one run (tr_flowdir: fill, flats, D8, then the products)
 * the products are those of the two-step run (directions to --dir, then
 * --dir-in), byte for byte, under threads and mpirun; nothing is left beside
 * them but the products; --slope and --filled go with a DEM only. */
static int test_from_dem(void) {
  char f[8192], d[600];
  static const char *const names[] = {"acc.tif", "src.tif", "ord.tif", "w.tif", "net.geojson"};
  const char *tags[] = {"dem_two", "dem_one", "dem_mpi"};
  for (int t = 0; t < 3; t++) {
    snprintf(d, sizeof d, "%s/%s", outdir, tags[t]);
    mkdir(d, 0755);
  }
  const char *prods = "--acc '%s/%s/acc.tif' --streams '%s/%s/src.tif' --order '%s/%s/ord.tif' --basins "
                      "'%s/%s/w.tif' --network '%s/%s/net.geojson' --threshold 30";
  char pr[4][4096];
  for (int t = 0; t < 3; t++)
    snprintf(pr[t], sizeof pr[t], prods, outdir, tags[t], outdir, tags[t], outdir, tags[t], outdir, tags[t], outdir,
             tags[t]);
  /* two steps: directions and the filled DEM, then everything from them */
  snprintf(f, sizeof f, "'%s/fractal.tif' --dir '%s/dem_two/p.tif' --slope '%s/dem_two/sd8.tif'", dir, outdir, outdir);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  snprintf(f, sizeof f, "'%s/fractal.tif' --dir '%s/dem_two/p2.tif'", dir, outdir);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  char fel[1024];
  snprintf(fel, sizeof fel, "%s/dem_two/fel.tif", outdir);
  snprintf(f, sizeof f, "'%s' fill -q '%s/fractal.tif' '%s'", tf, dir, fel);
  ASSERT_EQ_INT(rc_run(f, NULL), 0);
  snprintf(f, sizeof f, "--dir-in '%s/dem_two/p.tif' --filled-in '%s' %s", outdir, fel, pr[0]);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  /* one step, threads; and mpirun -n 2 */
  snprintf(f, sizeof f, "'%s/fractal.tif' --threads 2 --tile-size 37 %s", dir, pr[1]);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  if (mpirun[0]) {
    char pre[512];
    snprintf(pre, sizeof pre, "%s -n 2", mpirun);
    snprintf(f, sizeof f, "'%s/fractal.tif' --threads 1 --tile-size 50 %s", dir, pr[2]);
    ASSERT_EQ_INT(flow(pre, f, NULL), 0);
  }
  for (int t = 1; t < (mpirun[0] ? 3 : 2); t++) {
    for (int i = 0; i < 5; i++) {
      char pa[1024], pb[1024];
      snprintf(pa, sizeof pa, "%s/dem_two/%s", outdir, names[i]);
      snprintf(pb, sizeof pb, "%s/%s/%s", outdir, tags[t], names[i]);
      if (!rc_same_file(pa, pb)) {
        fprintf(stderr, "%s and %s differ\n", pa, pb);
        return 1;
      }
    }
    snprintf(d, sizeof d, "%s/%s", outdir, tags[t]);
    ASSERT_EQ_INT(rc_count_entries(d), 5); /* no scratch directions or filled DEM left */
  }
  /* --slope without --dir or --network: the filled DEM sd8 is made from is a scratch
     file named after the scratch directions, and once went with their temporaries
     before sd8 could read it */
  snprintf(d, sizeof d, "%s/dem_sd8", outdir);
  mkdir(d, 0755);
  snprintf(f, sizeof f, "'%s/fractal.tif' --acc '%s/acc.tif' --slope '%s/sd8.tif'", dir, d, d);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  snprintf(f, sizeof f, "'%s/fractal.tif' --slope '%s/sd8_only.tif'", dir, d);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  {
    char pa[1024], pb[1024], pc[1024];
    snprintf(pa, sizeof pa, "%s/dem_two/sd8.tif", outdir);
    snprintf(pb, sizeof pb, "%s/sd8.tif", d);
    snprintf(pc, sizeof pc, "%s/sd8_only.tif", d);
    ASSERT(rc_same_file(pa, pb) && rc_same_file(pa, pc));
    snprintf(pa, sizeof pa, "%s/dem_two/acc.tif", outdir);
    snprintf(pb, sizeof pb, "%s/acc.tif", d);
    ASSERT(rc_same_file(pa, pb));
    ASSERT_EQ_INT(rc_count_entries(d), 3);
  }
  char p1[1024], p2[1024];
  snprintf(p1, sizeof p1, "%s/dem_two/p.tif", outdir);
  snprintf(p2, sizeof p2, "%s/dem_two/p2.tif", outdir);
  ASSERT(rc_same_file(p1, p2)); /* --slope beside --dir changes nothing in the directions */
  snprintf(f, sizeof f, "--dir-in '%s' --slope '%s' --acc '%s'", opath("maze.tif"), opath("s.tif"), opath("x.tif"));
  ASSERT(refused(f, 2, "--slope and --filled"));
  return 0;
}

/* --stats-json with several products: one object per product, named, with
 * its file, in the order the products are made; each one's valid count and
 * mean those of the file itself (read here); the same statistics under
 * mpirun -n 3. With one product the file is that product's object. */
static int test_stats_json_products(void) {
  static const char *const names[] = {"dir", "acc", "streams", "basins"};
  char c[8192], ref[65536] = "";
  for (int run = 0; run < 2; run++) {
    char pre[300] = "";
    if (run) {
      if (!mpirun[0]) {
        printf("skip: no mpirun\n");
        break;
      }
      snprintf(pre, sizeof pre, "%s -n 3", mpirun);
    }
    snprintf(c, sizeof c,
             "%s '%s' flowgraph '%s/demo.tif' --dir '%s' --acc '%s' --streams '%s' --basins '%s' --threshold 50 "
             "--stats-json '%s' -q",
             pre, tf, dir, opath("sj_dir.tif"), opath("sj_acc.tif"), opath("sj_streams.tif"), opath("sj_basins.tif"),
             opath("sj.json"));
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    const char *j = rc_slurp(opath("sj.json"));
    ASSERT(!strncmp(j, "{\"products\":[", 13));
    const char *at = j;
    for (int k = 0; k < 4; k++) {
      char key[64];
      snprintf(key, sizeof key, "{\"product\":\"%s\",\"file\":", names[k]);
      const char *p = strstr(at, key);
      if (!p) {
        fprintf(stderr, "no %s after the products before it in: %s\n", key, j);
        return 1;
      }
      at = p + 1;
      char file[64];
      snprintf(file, sizeof file, "sj_%s.tif", names[k]);
      rc_raster r;
      ASSERT(rc_load(opath(file), &r) == 0);
      double sum = 0;
      long n = 0;
      for (long i = 0; i < (long)r.rows * r.cols; i++)
        if (!rc_is_nodata(&r, r.v[i])) sum += r.v[i], n++;
      rc_free(&r);
      const char *vc = strstr(p, "\"valid_count\":"), *mn = strstr(p, "\"mean\":");
      ASSERT(vc && mn);
      ASSERT_EQ_INT(strtol(vc + 14, NULL, 10), n);
      const double mean = strtod(mn + 7, NULL);
      if (fabs(mean - sum / n) > 1e-9 * fabs(sum / n)) {
        fprintf(stderr, "%s: mean %.17g, file's %.17g\n", names[k], mean, sum / n);
        return 1;
      }
    }
    /* the statistics, not the collectives' timings, are the same for any rank count */
    char stats[65536];
    size_t m = 0;
    for (const char *p = j; *p && m + 1 < sizeof stats;) {
      const char *col = strstr(p, ",\"collective\"");
      if (!col) {
        m += (size_t)snprintf(stats + m, sizeof stats - m, "%s", p);
        break;
      }
      m += (size_t)snprintf(stats + m, sizeof stats - m, "%.*s|", (int)(col - p), p);
      p = strstr(col, "]}}");
      if (!p) break;
      p += 3;
    }
    if (!ref[0]) snprintf(ref, sizeof ref, "%s", stats);
    else if (strcmp(ref, stats)) {
      fprintf(stderr, "statistics differ under mpirun:\n%s\n%s\n", ref, stats);
      return 1;
    }
  }
  snprintf(c, sizeof c, "'%s' flowgraph '%s/demo.tif' --acc '%s' --stats-json '%s' -q", tf, dir, opath("sj_acc.tif"),
           opath("sj1.json"));
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(!strncmp(rc_slurp(opath("sj1.json")), "{\"valid_count\":", 15));
  return 0;
}

/* outdir/tag, made empty. */
static const char *fresh(const char *tag) {
  static char d[2][700];
  static int k;
  k ^= 1;
  snprintf(d[k], sizeof d[k], "%s/%s", outdir, tag);
  char c[1600];
  snprintf(c, sizeof c, "rm -rf '%s' && mkdir '%s'", d[k], d[k]);
  return rc_run(c, NULL) == 0 ? d[k] : "";
}

/* Every product of one run from a DEM, into folder d; `pre` goes before
 * the flags (a band, an input). */
static int all_products(const char *pre, const char *d) {
  char f[8192];
  snprintf(f, sizeof f,
           "%s --dir '%s/p.tif' --slope '%s/sd8.tif' --acc '%s/acc.tif' --streams '%s/src.tif' --order '%s/ord.tif' "
           "--basins '%s/w.tif' --network '%s/net.geojson' --threshold 30",
           pre, d, d, d, d, d, d, d);
  return flow("", f, NULL);
}

/* -b 2 on a two-band DEM (band 1 the same terrain upside down): every
 * product is the bytes of a run on a copy of band 2 alone (gdal_translate
 * -b 2), and the accumulation is not band 1's; the network's elevations
 * read from the DEM itself (--filled) too. Errors name the user's files:
 * a band the DEM lacks, a rotated DEM (once named the filled DEM's scratch
 * raster); -b without a DEM is refused. */
static int test_dem_band(void) {
  rc_raster f;
  char src[1024], two[1024], one[1024], c[8192];
  snprintf(src, sizeof src, "%s/fractal.tif", dir);
  ASSERT_EQ_INT(rc_load(src, &f), 0);
  snprintf(two, sizeof two, "%s", opath("two_bands.tif"));
  snprintf(one, sizeof one, "%s", opath("band2.tif"));
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), two, f.cols, f.rows, 2, GDT_Float32, NULL);
  ASSERT(ds != NULL);
  GDALSetGeoTransform(ds, f.gt);
  GDALSetProjection(ds, f.wkt);
  double *up = malloc(sizeof(double) * (size_t)f.rows * (size_t)f.cols);
  for (long i = 0; i < (long)f.rows * f.cols; i++) up[i] = rc_is_nodata(&f, f.v[i]) ? f.v[i] : 5000 - f.v[i];
  for (int b = 1; b <= 2; b++) {
    GDALRasterBandH band = GDALGetRasterBand(ds, b);
    if (f.has_nodata) GDALSetRasterNoDataValue(band, f.nodata);
    ASSERT(GDALRasterIO(band, GF_Write, 0, 0, f.cols, f.rows, b == 1 ? up : f.v, f.cols, f.rows, GDT_Float64, 0, 0) ==
           CE_None);
  }
  GDALClose(ds);
  free(up);
  rc_free(&f);
  snprintf(c, sizeof c, "gdal_translate -q -b 2 '%s' '%s'", two, one);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);

  char pre[2048], d2[700], d1[700];
  snprintf(d2, sizeof d2, "%s", fresh("band_b2"));
  snprintf(d1, sizeof d1, "%s", fresh("band_one"));
  snprintf(pre, sizeof pre, "-b 2 '%s'", two);
  ASSERT_EQ_INT(all_products(pre, d2), 0);
  snprintf(pre, sizeof pre, "'%s'", one);
  ASSERT_EQ_INT(all_products(pre, d1), 0);
  static const char *const names[] = {"p.tif", "sd8.tif", "acc.tif", "src.tif", "ord.tif", "w.tif", "net.geojson"};
  for (int i = 0; i < 7; i++) {
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/%s", d2, names[i]);
    snprintf(b, sizeof b, "%s/%s", d1, names[i]);
    ASSERT(rc_same_file(a, b));
  }
  ASSERT_EQ_INT(rc_count_entries(d2), 7);
  /* band 1 is other terrain: another accumulation */
  snprintf(c, sizeof c, "-b 1 '%s' --acc '%s'", two, opath("band1_acc.tif"));
  ASSERT_EQ_INT(flow("", c, NULL), 0);
  {
    char a[1024];
    snprintf(a, sizeof a, "%s/acc.tif", d2);
    long na, nb;
    unsigned char *x = rc_file_bytes(a, &na), *y = rc_file_bytes(opath("band1_acc.tif"), &nb);
    ASSERT(x && y && (na != nb || memcmp(x, y, (size_t)na) != 0));
    free(x);
    free(y);
  }
  /* --filled: the network's strmDrop and Slope come from the DEM's band 2 */
  snprintf(c, sizeof c, "-b 2 '%s' --filled --network '%s/netf.geojson' --threshold 30", two, d2);
  ASSERT_EQ_INT(flow("", c, NULL), 0);
  snprintf(c, sizeof c, "'%s' --filled --network '%s/netf.geojson' --threshold 30", one, d1);
  ASSERT_EQ_INT(flow("", c, NULL), 0);
  {
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/netf.geojson", d2);
    snprintf(b, sizeof b, "%s/netf.geojson", d1);
    ASSERT(rc_same_file(a, b));
  }
  /* --weights and --filled-in (one band each) are read at band 1 */
  snprintf(c, sizeof c, "-b 2 '%s' --weights '%s' --filled-in '%s' --acc '%s/accw.tif' --network '%s/netw.geojson'",
           two, one, one, d2, d2);
  ASSERT_EQ_INT(flow("", c, NULL), 0);
  snprintf(c, sizeof c, "'%s' --weights '%s' --filled-in '%s' --acc '%s/accw.tif' --network '%s/netw.geojson'", one,
           one, one, d1, d1);
  ASSERT_EQ_INT(flow("", c, NULL), 0);
  {
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/accw.tif", d2);
    snprintf(b, sizeof b, "%s/accw.tif", d1);
    ASSERT(rc_same_file(a, b));
    snprintf(a, sizeof a, "%s/netw.geojson", d2);
    snprintf(b, sizeof b, "%s/netw.geojson", d1);
    ASSERT(rc_same_file(a, b));
  }
  snprintf(c, sizeof c, "-b 3 '%s' --acc '%s' --streams '%s'", two, opath("x.tif"), opath("y.tif"));
  ASSERT(refused(c, 3, "two_bands.tif' has 2 bands; band 3 does not exist"));
  snprintf(c, sizeof c, "--dir-in '%s' -b 2 --acc '%s'", opath("maze.tif"), opath("x.tif"));
  ASSERT(refused(c, 2, "-b selects the DEM's band"));
  snprintf(c, sizeof c, "'%s/plane_rotated.tif' --acc '%s' --streams '%s'", dir, opath("x.tif"), opath("y.tif"));
  ASSERT(refused(c, 3, "plane_rotated.tif' has a rotated geotransform"));
  snprintf(c, sizeof c, "'%s/plane_rotated.tif' --dir '%s'", dir, opath("x.tif"));
  ASSERT(refused(c, 3, "plane_rotated.tif' has a rotated geotransform"));
  return 0;
}

/* SIGTERM between any two stages (the run stopped there by the injected
 * stop-stage:after=K, signalled, then continued; the seventh stage is the
 * last, before the products are put in place): exit 8 within a second, one
 * line, and nothing left in the folder: no product and no scratch file.
 * The stages: directions, accumulation, streams, order, the network's
 * no-edge-check accumulation, the network, basins. */
static int test_sigterm_between_stages(void) {
  char errf[1024], src[1024], p[6][800];
  snprintf(errf, sizeof errf, "%s.sig.err", outdir);
  snprintf(src, sizeof src, "%s/fractal.tif", dir);
  for (int k = 1; k <= 7; k++) {
    const char *d = fresh("sig");
    static const char *const names[6] = {"p.tif", "acc.tif", "src.tif", "ord.tif", "w.tif", "net.gpkg"};
    for (int i = 0; i < 6; i++) snprintf(p[i], sizeof p[i], "%s/%s", d, names[i]);
    char inj[64];
    snprintf(inj, sizeof inj, "stop-stage:after=%d", k);
    char *argv[] = {(char *)tf, "flowgraph", "-q",        "--inject", inj,  src,         "--dir",  p[0],
                    "--acc",    p[1],        "--streams", p[2],       "--order", p[3], "--basins", p[4],
                    "--network", p[5],       "--threshold", "30",     NULL};
    const pid_t pid = pc_spawn(argv, errf, 0);
    ASSERT(pid > 0);
    int st = 0, stopped = 0;
    for (const double t0 = pc_now(); pc_now() - t0 < 60;) {
      const pid_t w = waitpid(pid, &st, WUNTRACED | WNOHANG);
      if (w == pid) {
        stopped = WIFSTOPPED(st);
        break;
      }
      pc_sleep_ms(2);
    }
    if (!stopped) {
      fprintf(stderr, "stage %d: the run did not stop there (status %d): %s\n", k, st, rc_slurp(errf));
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
      return 1;
    }
    const int held = rc_count_entries(d); /* the products made so far, and the scratch rasters */
    ASSERT_EQ_INT(kill(pid, SIGTERM), 0);
    ASSERT_EQ_INT(kill(pid, SIGCONT), 0);
    pc_result r;
    ASSERT_EQ_INT(pc_wait(pid, 30, &r), 0);
    const char *msg = rc_slurp(errf);
    const int left = rc_count_entries(d);
    printf("  SIGTERM after stage %d (%d files then): exit %d after %.3f s, %d files left\n", k, held, r.code, r.secs,
           left);
    if (!r.exited || r.code != 8 || r.secs > 1.0 || pc_lines(msg) != 1 || !strstr(msg, "interrupted") || left != 0) {
      fprintf(stderr, "stage %d: %s", k, msg);
      return 1;
    }
    ASSERT(held > 0);
  }
  return 0;
}

/* All products or none. Refused before any stage, nothing written: two
 * names of one file, a file name longer than NAME_MAX (the network's: once
 * found at its temporary folder), an -nf that is no vector driver. A stage
 * that fails after others did (basins as PNG, which holds no Int32) leaves
 * none of the earlier products (the streams as PNG, written), and an older
 * file at a destination stays as it was. */
static int test_all_or_nothing(void) {
  const char *d = fresh("aon");
  char f[4096], name[300];
  snprintf(f, sizeof f, "'%s/fractal.tif' --acc '%s/a.tif' --streams '%s/./a.tif'", dir, d, d);
  ASSERT(refused_in(d, f, 4, "it is also --streams"));
  snprintf(f, sizeof f, "'%s/fractal.tif' --acc '%s/a.tif' --streams '%s/s.tif' --network '%s/n.gpkg' -nf Bogus", dir, d,
           d, d);
  ASSERT(refused_in(d, f, 2, "-nf: 'Bogus' is not a GDAL vector driver"));
  memset(name, 'n', 256);
  strcpy(name + 251, ".gpkg");
  snprintf(f, sizeof f, "'%s/fractal.tif' --acc '%s/a.tif' --network '%s/%s'", dir, d, d, name);
  ASSERT(refused_in(d, f, 4, "a file name of 256 bytes, the limit is 255"));
  snprintf(f, sizeof f, "'%s/fractal.tif' -of PNG --streams '%s/s.png' --basins '%s/w.png' --threshold 30", dir, d, d);
  ASSERT(refused_in(d, f, 2, "w.png': the PNG driver cannot hold this product's Int32 cells"));
  /* an older file at the streams' name: kept */
  char old[1024], keep[1024], c[4096];
  snprintf(old, sizeof old, "%s/s.png", d);
  snprintf(keep, sizeof keep, "%s.keep", outdir);
  snprintf(c, sizeof c, "cp '%s' '%s' && cp '%s' '%s'", opath("maze.tif"), old, opath("maze.tif"), keep);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(refused_in(d, f, 2, "w.png': the PNG driver cannot hold"));
  ASSERT(rc_same_file(old, keep));
  unlink(old);
  unlink(keep);
  ASSERT_EQ_INT(rc_count_entries(d), 0);
  return 0;
}

/* The layer's name and every feature (its fields and geometry as text) of
 * the first layer of vector file `path`; NULL when it cannot be read. */
static char *features(const char *path, char *layer, size_t n) {
  GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_VECTOR, NULL, NULL, NULL);
  if (!ds) return NULL;
  OGRLayerH l = GDALDatasetGetLayer(ds, 0);
  snprintf(layer, n, "%s", l ? OGR_L_GetName(l) : "");
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  OGRFeatureH ft;
  while (f && l && (ft = OGR_L_GetNextFeature(l))) {
    for (int i = 0; i < OGR_F_GetFieldCount(ft); i++) fprintf(f, "%s|", OGR_F_GetFieldAsString(ft, i));
    char *wkt = NULL;
    OGRGeometryH g = OGR_F_GetGeometryRef(ft);
    if (g) OGR_G_ExportToWkt(g, &wkt);
    fprintf(f, "%s\n", wkt ? wkt : "");
    CPLFree(wkt);
    OGR_F_Destroy(ft);
  }
  if (f) fclose(f);
  GDALClose(ds);
  return buf;
}

/* A network named with 250 and with 255 bytes, as GeoPackage and as
 * GeoJSON (its temporary folder's name passed NAME_MAX, and a GeoPackage's
 * path SQLite's limit): the lines of the same run under a short name, the
 * layer named after the file less its extension as for that short name
 * ("net"), and nothing else left in the folder. */
static int test_network_long_names(void) {
  static const char *const exts[] = {".gpkg", ".geojson"};
  const char *d = fresh("longnet");
  for (int e = 0; e < 4; e++) {
    const size_t len = e < 2 ? 250 : 255;
    char stem[300], shortp[1024], longp[1024], f[4096], ls[300], ll[300];
    const size_t n = len - strlen(exts[e % 2]);
    memset(stem, 'n', n);
    stem[n] = 0;
    snprintf(shortp, sizeof shortp, "%s/net%s", d, exts[e % 2]);
    snprintf(longp, sizeof longp, "%s/%s%s", d, stem, exts[e % 2]);
    ASSERT_EQ_INT(strlen(longp) - strlen(d) - 1, len);
    snprintf(f, sizeof f, "'%s/fractal.tif' --network '%s' --threshold 30", dir, shortp);
    ASSERT_EQ_INT(flow("", f, NULL), 0);
    snprintf(f, sizeof f, "'%s/fractal.tif' --network '%s' --threshold 30", dir, longp);
    ASSERT_EQ_INT(flow("", f, NULL), 0);
    char *a = features(shortp, ls, sizeof ls), *b = features(longp, ll, sizeof ll);
    ASSERT(a && b && strlen(a) > 0);
    const int same = !strcmp(a, b);
    free(a);
    free(b);
    ASSERT(same);
    ASSERT(!strcmp(ls, "net"));
    ASSERT(!strcmp(ll, stem));
  }
  ASSERT_EQ_INT(rc_count_entries(d), 6);
  return 0;
}

/* ------------------------------------------------------------ --basin-stats */

/* One row of a --basin-stats CSV: label, cells, then area, min, mean, max,
 * relief, mean_slope, outlet_x, outlet_y (elev) or area, outlet_x, outlet_y. */
typedef struct {
  long label;
  long long cells;
  double v[8];
} bs_row;

#define BS_HEADER "label,cells,area,min,mean,max,relief,mean_slope,outlet_x,outlet_y\n"
#define BS_HEADER_DIR "label,cells,area,outlet_x,outlet_y\n"

/* The rows of `path` (its header checked); NULL on a malformed file. */
static bs_row *bs_read(const char *path, int elev, int *n) {
  long len;
  char *b = (char *)rc_file_bytes(path, &len);
  const char *h = elev ? BS_HEADER : BS_HEADER_DIR;
  *n = 0;
  if (!b || len < (long)strlen(h) || strncmp(b, h, strlen(h))) {
    fprintf(stderr, "%s: no file or another header\n", path);
    free(b);
    return NULL;
  }
  bs_row *rows = malloc(sizeof *rows * (size_t)(len / 10 + 1));
  char *q = b + strlen(h), *end = b + len;
  const int nv = elev ? 8 : 3;
  while (q < end) {
    bs_row *r = &rows[*n];
    char *e;
    r->label = strtol(q, &e, 10);
    if (*e != ',') break;
    r->cells = strtoll(e + 1, &e, 10);
    int k = 0;
    for (; k < nv && *e == ','; k++) r->v[k] = strtod(e + 1, &e);
    if (k != nv || *e != '\n') break;
    q = e + 1;
    (*n)++;
  }
  const int ok = q == end;
  free(b);
  if (!ok) {
    fprintf(stderr, "%s: malformed row %d\n", path, *n + 1);
    free(rows);
    return NULL;
  }
  return rows;
}

/* The reference, computed here from the rasters the run wrote: basins `w`,
 * the DEM, sd8 and the directions `p` (TauDEM codes). Per label: cells
 * (every labelled cell, none of them a DEM nodata cell), min and max
 * exactly, the means in long double (the CSV's from exact sums of each
 * value rounded to 2^-32: within 2^-33 plus a double's rounding), and the
 * outlet: the one cell of the basin whose flow leaves it (off the grid,
 * into nodata, or into another label). */
static int bs_check(const char *csv, const char *wpath, const char *dempath, const char *sd8path, const char *ppath) {
  rc_raster w, z, s, p;
  ASSERT_EQ_INT(rc_load(wpath, &w), 0);
  ASSERT_EQ_INT(rc_load(dempath, &z), 0);
  ASSERT_EQ_INT(rc_load(sd8path, &s), 0);
  ASSERT_EQ_INT(rc_load(ppath, &p), 0);
  const int rows = w.rows, cols = w.cols, n = rows * cols;
  int maxl = 0, dem_nodata = 0;
  for (int i = 0; i < n; i++) {
    dem_nodata += rc_is_nodata(&z, z.v[i]);
    if (!rc_is_nodata(&w, w.v[i]) && w.v[i] > maxl) maxl = (int)w.v[i];
  }
  ASSERT(dem_nodata > 0); /* the case of nodata cells is shown */
  long long *cells = calloc((size_t)maxl + 1, sizeof *cells);
  long double *zs = calloc((size_t)maxl + 1, sizeof *zs), *ss = calloc((size_t)maxl + 1, sizeof *ss);
  double *mn = malloc(sizeof(double) * (maxl + 1)), *mx = malloc(sizeof(double) * (maxl + 1));
  int *out = malloc(sizeof(int) * (maxl + 1));
  for (int l = 0; l <= maxl; l++) mn[l] = INFINITY, mx[l] = -INFINITY, out[l] = -1;
  for (int i = 0; i < n; i++) {
    if (rc_is_nodata(&w, w.v[i])) continue;
    const int l = (int)w.v[i], r = i / cols, c = i % cols;
    ASSERT(l >= 0 && !rc_is_nodata(&z, z.v[i]) && !rc_is_nodata(&s, s.v[i]));
    cells[l]++;
    zs[l] += z.v[i];
    ss[l] += s.v[i];
    mn[l] = fmin(mn[l], z.v[i]);
    mx[l] = fmax(mx[l], z.v[i]);
    const int k = rc_is_nodata(&p, p.v[i]) ? -1 : (int)p.v[i] - 1;
    const int rr = k < 0 ? -1 : r + dr[k], cc = k < 0 ? -1 : c + dc[k];
    const int leaves = k < 0 || rr < 0 || rr >= rows || cc < 0 || cc >= cols || w.v[rr * cols + cc] != w.v[i];
    if (leaves) {
      if (out[l] >= 0) fprintf(stderr, "label %d: two outlets, %d and %d\n", l, out[l], i);
      ASSERT(out[l] < 0);
      out[l] = i;
    }
  }
  int nrows, want = 0;
  bs_row *b = bs_read(csv, 1, &nrows);
  ASSERT(b != NULL);
  for (int l = 0; l <= maxl; l++) want += cells[l] > 0;
  ASSERT_EQ_INT(nrows, want);
  const double area = fabs(w.gt[1] * w.gt[5]);
  for (int k = 0; k < nrows; k++) {
    const bs_row *r = &b[k];
    ASSERT(k == 0 || r->label > b[k - 1].label);
    ASSERT(r->label >= 0 && r->label <= maxl && cells[r->label] == r->cells);
    const int l = (int)r->label;
    const long double zm = zs[l] / cells[l], sm = ss[l] / cells[l];
    const double tol = 0x1p-32;
    if (r->v[0] != (double)cells[l] * area || r->v[1] != mn[l] || r->v[3] != mx[l] || r->v[4] != mx[l] - mn[l] ||
        fabsl(r->v[2] - zm) > 1e-12L * fabsl(zm) + tol || fabsl(r->v[5] - sm) > 1e-12L * fabsl(sm) + tol ||
        out[l] < 0 || r->v[6] != w.gt[0] + (out[l] % cols + 0.5) * w.gt[1] ||
        r->v[7] != w.gt[3] + (out[l] / cols + 0.5) * w.gt[5]) {
      fprintf(stderr,
              "%s: label %d: area %.17g min %.17g mean %.17g max %.17g slope %.17g relief %.17g outlet (%.17g %.17g); "
              "want %.17g %.17g %.17Lg %.17g %.17Lg at cell %d\n",
              csv, l, r->v[0], r->v[1], r->v[2], r->v[3], r->v[5], r->v[4], r->v[6], r->v[7], (double)cells[l] * area,
              mn[l], zm, mx[l], sm, out[l]);
      return 1;
    }
  }
  free(b);
  free(cells), free(zs), free(ss), free(mn), free(mx), free(out);
  rc_free(&w), rc_free(&z), rc_free(&s), rc_free(&p);
  return 0;
}

/* Per stream link (threshold 12: over 1300 basins, so under mpirun the
 * lanes, 88 bytes a basin, pass libcoll's 64 KiB small-message size and
 * take the halving path): the reference above; the same bytes with 2
 * threads and small tiles, without --basins, --slope or --dir (made in
 * scratch rasters that do not stay), and under mpirun -n 2 and -n 3. From
 * --dir-in: label, cells, area and outlet only, the same values. */
static int test_basin_stats_links(void) {
  const char *d = fresh("bstats");
  char f[8192], a[1024], b[1024];
  snprintf(f, sizeof f,
           "'%s/fractal.tif' --dir '%s/p.tif' --slope '%s/sd8.tif' --basins '%s/w.tif' --basin-stats '%s/a.csv' "
           "--threshold 12 --threads 1 --tile-size 512",
           dir, d, d, d, d);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  snprintf(a, sizeof a, "%s/a.csv", d);
  char w[1024], sd8[1024], p[1024], dem[1024];
  snprintf(w, sizeof w, "%s/w.tif", d);
  snprintf(sd8, sizeof sd8, "%s/sd8.tif", d);
  snprintf(p, sizeof p, "%s/p.tif", d);
  snprintf(dem, sizeof dem, "%s/fractal.tif", dir);
  ASSERT_EQ_INT(bs_check(a, w, dem, sd8, p), 0);
  int n;
  bs_row *full = bs_read(a, 1, &n);
  ASSERT(full && n > 1300);
  const char *only = fresh("bstats_only");
  snprintf(f, sizeof f, "'%s/fractal.tif' --basin-stats '%s/b.csv' --threshold 12 --threads 2 --tile-size 37", dir,
           only);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  snprintf(b, sizeof b, "%s/b.csv", only);
  ASSERT(rc_same_file(a, b));
  ASSERT_EQ_INT(rc_count_entries(only), 1);
  for (int np = 2; np <= 3 && mpirun[0]; np++) {
    if (TR_TEST_SANITIZED && np != 3) continue;
    char pre[512];
    snprintf(pre, sizeof pre, "%s -n %d", mpirun, np);
    snprintf(f, sizeof f, "'%s/fractal.tif' --basin-stats '%s/b.csv' --threshold 12 --threads 1 --tile-size %d", dir,
             only, 30 + 11 * np);
    ASSERT_EQ_INT(flow(pre, f, NULL), 0);
    if (!rc_same_file(a, b)) return fprintf(stderr, "mpirun -n %d\n", np), 1;
  }
  if (!mpirun[0]) fprintf(stderr, "SKIP: no mpirun for the basin statistics\n");
  /* from --dir-in: no elevations */
  snprintf(f, sizeof f, "--dir-in '%s' --basin-stats '%s/d.csv' --threshold 12", p, d);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  snprintf(b, sizeof b, "%s/d.csv", d);
  int m;
  bs_row *dr_ = bs_read(b, 0, &m);
  ASSERT(dr_ && m == n);
  for (int k = 0; k < n; k++)
    ASSERT(dr_[k].label == full[k].label && dr_[k].cells == full[k].cells && dr_[k].v[0] == full[k].v[0] &&
           dr_[k].v[1] == full[k].v[6] && dr_[k].v[2] == full[k].v[7]);
  free(dr_);
  free(full);
  return 0;
}

/* Per edge outlet and per outlet point (points on valid cells, snapped to
 * the streams): the reference; per point the same bytes under mpirun -n 3
 * and --outlets needs no --basins beside --basin-stats. */
static int test_basin_stats_edges_outlets(void) {
  const char *d = fresh("bstats_eo");
  char f[8192], a[1024], w[1024], sd8[1024], p[1024], dem[1024];
  snprintf(w, sizeof w, "%s/w.tif", d);
  snprintf(sd8, sizeof sd8, "%s/sd8.tif", d);
  snprintf(p, sizeof p, "%s/p.tif", d);
  snprintf(dem, sizeof dem, "%s/fractal.tif", dir);
  snprintf(a, sizeof a, "%s/e.csv", d);
  snprintf(f, sizeof f,
           "'%s' --dir '%s' --slope '%s' --basins '%s' --basins-by edges --basin-stats '%s' --tile-size 40", dem, p,
           sd8, w, a);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  ASSERT_EQ_INT(bs_check(a, w, dem, sd8, p), 0);
  /* outlet points: every 1499th cell with a direction */
  rc_raster pr;
  ASSERT_EQ_INT(rc_load(p, &pr), 0);
  char pts[1024];
  snprintf(pts, sizeof pts, "%s/pts.gpkg", d);
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GPKG"), pts, 0, 0, 0, GDT_Unknown, NULL);
  OGRLayerH lay = GDALDatasetCreateLayer(ds, "pts", NULL, wkbPoint, NULL);
  int np = 0;
  for (int i = 0; i < pr.rows * pr.cols; i += 1499) {
    if (rc_is_nodata(&pr, pr.v[i])) continue;
    OGRFeatureH ft = OGR_F_Create(OGR_L_GetLayerDefn(lay));
    OGRGeometryH g = OGR_G_CreateGeometry(wkbPoint);
    OGR_G_SetPoint_2D(g, 0, pr.gt[0] + pr.gt[1] * (i % pr.cols + 0.5), pr.gt[3] + pr.gt[5] * (i / pr.cols + 0.5));
    OGR_F_SetGeometryDirectly(ft, g);
    ASSERT(OGR_L_CreateFeature(lay, ft) == OGRERR_NONE);
    OGR_F_Destroy(ft);
    np++;
  }
  GDALClose(ds);
  rc_free(&pr);
  ASSERT(np >= 10);
  snprintf(a, sizeof a, "%s/o.csv", d);
  snprintf(f, sizeof f, "'%s' --dir '%s' --slope '%s' --basins '%s' --outlets '%s' --threshold 30 --snap 5 "
           "--basin-stats '%s' --tile-size 33", dem, p, sd8, w, pts, a);
  ASSERT_EQ_INT(flow("", f, NULL), 0);
  ASSERT_EQ_INT(bs_check(a, w, dem, sd8, p), 0);
  if (mpirun[0]) {
    char pre[512], b[1024];
    snprintf(pre, sizeof pre, "%s -n 3", mpirun);
    snprintf(b, sizeof b, "%s/o3.csv", d);
    snprintf(f, sizeof f, "'%s' --outlets '%s' --threshold 30 --snap 5 --basin-stats '%s' --tile-size 47", dem, pts, b);
    ASSERT_EQ_INT(flow(pre, f, NULL), 0);
    ASSERT(rc_same_file(a, b));
  }
  return 0;
}

/* Refused before any work, nothing left: a name that is no CSV (exit 2), a
 * folder that does not exist (exit 4; --basins not made), the DEM itself
 * by another name (exit 4, the DEM's bytes kept), the file of another side
 * output (exit 4), --basin-stats on a DEM
 * with no valid cell, or with elevations the exact sums cannot hold (exit 3;
 * --basins, made by then, not left either), more basins than --mem holds
 * (exit 7). */
static int test_basin_stats_refused(void) {
  const char *d = fresh("bstats_bad");
  char f[8192], dem[1024], link[1024], src[1024];
  snprintf(src, sizeof src, "%s/fractal.tif", dir);
  snprintf(dem, sizeof dem, "%s/dem.tif", d);
  snprintf(f, sizeof f, "cp '%s' '%s'", src, dem);
  ASSERT_EQ_INT(rc_run(f, NULL), 0);
  snprintf(link, sizeof link, "%s/dem.csv", d);
  ASSERT_EQ_INT(symlink("dem.tif", link), 0);
  snprintf(f, sizeof f, "'%s' --basins '%s/w.tif' --basin-stats '%s/s.gpkg'", dem, d, d);
  ASSERT(refused_in(d, f, 2, "CSV"));
  snprintf(f, sizeof f, "'%s' --basins '%s/w.tif' --basin-stats '%s/nowhere/s.csv'", dem, d, d);
  ASSERT(refused_in(d, f, 4, "does not exist"));
  snprintf(f, sizeof f, "'%s' --basins '%s/w.tif' --basin-stats '%s'", dem, d, link);
  ASSERT(refused_in(d, f, 4, "the DEM"));
  ASSERT(rc_same_file(src, dem));
  snprintf(f, sizeof f, "'%s' --basins '%s/w.tif' --basin-stats '%s/s.csv' --stats-json '%s/s.csv'", dem, d, d, d);
  ASSERT(refused_in(d, f, 4, "it is also"));
  snprintf(f, sizeof f, "'%s/allnodata.tif' --basin-stats '%s/s.csv'", dir, d);
  ASSERT(refused_in(d, f, 3, "no valid cell"));
  /* 700 000 pits, each a basin per edge outlet: 107 MiB of partials, more
   * than --mem 120M leaves after the process's 64 MiB (exit 7, before any
   * partial is made; the basins graph program itself fits) */
  {
    int16_t *z = calloc(700 * 1000, sizeof *z);
    char pits[1024];
    snprintf(pits, sizeof pits, "%s/pits.tif", d);
    ASSERT(z && write_raster(pits, GDT_Int16, z, 1, -32768, 700, 1000) == 0);
    free(z);
    snprintf(f, sizeof f, "--dir-in '%s' --basins-by edges --basins '%s/w.tif' --basin-stats '%s/s.csv' --mem 120M",
             pits, d, d);
    ASSERT(refused_in(d, f, 7, "700000 basins need 107 MiB (160 bytes each)"));
  }
  /* elevations near FLT_MAX: beyond what 128-bit sums of 2^-32 units hold */
  snprintf(f, sizeof f, "'%s/hugevalues.tif' --basins-by edges --basins '%s/w.tif' --basin-stats '%s/s.csv'", dir, d,
           d);
  ASSERT(refused_in(d, f, 3, "beyond +-2^52"));
  return 0;
}

static int test_help(void) {
  char c[2048];
  snprintf(c, sizeof c, "'%s' flowgraph --help | grep -q -- '--dir-in'", tf);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  snprintf(c, sizeof c, "'%s' --help | grep -q flowgraph", tf);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s TESTDATA TERRAFORT [test]\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  tf = argv[2];
  GDALAllRegister();
  snprintf(outdir, sizeof outdir, "flowgraph_out");
  mkdir(outdir, 0755);
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
  static const tr_test_case cases[] = {TR_TEST(test_setup), TR_TEST(test_same_bytes_threads_tiles_schedules),
                                       TR_TEST(test_same_bytes_mpirun), TR_TEST(test_outlets_sum_to_valid_cells),
                                       TR_TEST(test_bad_inputs), TR_TEST(test_basins_by_edges),
                                       TR_TEST(test_basins_by_outlets), TR_TEST(test_from_dem),
                                       TR_TEST(test_stats_json_products), TR_TEST(test_dem_band),
                                       TR_TEST(test_sigterm_between_stages), TR_TEST(test_all_or_nothing),
                                       TR_TEST(test_network_long_names), TR_TEST(test_basin_stats_links),
                                       TR_TEST(test_basin_stats_edges_outlets), TR_TEST(test_basin_stats_refused),
                                       TR_TEST(test_help)};
  if (argc > 3) { /* one test: the set-up first */
    test_setup();
  }
  return tr_test_main(argc - 2, argv + 2, cases, (int)(sizeof cases / sizeof cases[0]));
}
