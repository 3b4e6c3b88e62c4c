/*
 * flow_kit.h - what the flowgraph method tests (test_flowgraph_dinf.c,
 * _hand.c, _mfd.c) share: the program under test and the output folder
 * (each test's main sets them), names in that folder, a generated DEM, and
 * a quiet run of `terrafort flowgraph`.
 */
#ifndef TR_FLOW_KIT_H
#define TR_FLOW_KIT_H

#include <cpl_conv.h>
#include <gdal.h>
#include <ogr_srs_api.h>
#include <stdio.h>
#include <sys/stat.h>

#include "raster_check.h"

static const char *tf;     /* the terrafort program */
static char outdir[512];   /* the test's output folder */

/* NAME in the output folder (eight results may be held at once). */
static inline const char *opath(const char *name) {
  static char p[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", outdir, name);
  return p[k];
}

static inline int exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

/* A Float32 GeoTIFF of rows x cols cells of size cell (projected, UTM 12N). */
static inline int write_dem(const char *path, int rows, int cols, double cell, const float *z, int has_nd, float nd) {
  GDALDriverH d = GDALGetDriverByName("GTiff");
  GDALDatasetH ds = GDALCreate(d, path, cols, rows, 1, GDT_Float32, NULL);
  if (!ds) return -1;
  double gt[6] = {400000, cell, 0, 4600000, 0, -cell};
  GDALSetGeoTransform(ds, gt);
  OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
  OSRImportFromEPSG(srs, 32612);
  char *wkt = NULL;
  OSRExportToWkt(srs, &wkt);
  GDALSetProjection(ds, wkt);
  CPLFree(wkt);
  OSRDestroySpatialReference(srs);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  if (has_nd) GDALSetRasterNoDataValue(b, nd);
  CPLErr e = GDALRasterIO(b, GF_Write, 0, 0, cols, rows, (void *)z, cols, rows, GDT_Float32, 0, 0);
  GDALClose(ds);
  return e == CE_None ? 0 : -1;
}

/* The settings a graph product's bytes must not depend on - threads, tile
 * sizes, schedules, --ft dual and replay, --mem - each compared with the
 * first (one thread). */
static const char *const fk_settings[] = {"--threads 1",
                                          "--threads 2 --tile-size 32",
                                          "--tile-size 47 --schedule bsp",
                                          "--tile-size 33 --schedule ssp --staleness 1",
                                          "--ft dual --tile-size 50",
                                          "--ft replay --tile-size 50",
                                          "--mem 120M --tile-size 32"};
#define FK_NSETTINGS (sizeof fk_settings / sizeof fk_settings[0])

/* `terrafort flowgraph -q ARGS`, its stderr in the output folder's err.txt. */
static inline int run(const char *args) {
  char c[8192];
  snprintf(c, sizeof c, "'%s' flowgraph -q %s 2>%s/err.txt", tf, args, outdir);
  return rc_run(c, NULL);
}

#endif
