/*
 * points.h - point readers for interpolation (internal to libterrain).
 *
 * Two ways in, one result (x, y, z arrays and the CRS):
 * - anything OGR reads (GeoPackage, Shapefile, GeoJSON, CSV with X/Y
 *   columns, ...), with gdal_grid's selection options: layers, -where,
 *   -sql, -spat, -clipsrc; the value is the geometry's Z or a numeric
 *   attribute (-zfield); every vertex of a line or polygon is a point, as in
 *   gdal_grid;
 * - plain "x y z" text (a file named *.xyz, or any file with xyz set),
 *   streamed line by line without OGR.
 * Either way the value becomes (z + z_increase) * z_multiply, as gdal_grid.
 *
 * Bad input is refused with a line naming the file and the feature or line:
 * no points, a missing -zfield, a value that is not a number, a non-finite
 * coordinate or value. A feature whose -zfield is unset (null) is skipped.
 */
#ifndef TR_POINTS_H
#define TR_POINTS_H

#include <stdint.h>

#include "status.h"
#include "terrain.h"

/* Where tr_points_read hands the points past its memory, in input order. */
typedef int (*tr_point_sink)(void *user, double x, double y, double z, tr_error *err);

typedef struct {
  int64_t n, cap;
  double *x, *y, *z;
  char *wkt;  /* the layer's CRS as WKT, or NULL */
  double xmin, ymin, xmax, ymax;
  int64_t mem; /* the memory the points may take (bytes; 0: no limit) */
  int over;    /* there were more points than mem: refused, or (spill given) spilled */
  tr_point_sink sink; /* once spilled: the points go here, not to x, y, z */
  void *sink_user;
  tr_point_sink spill; /* tr_points_read_spill's */
  void *spill_user;
  const tr_run_opts *run; /* its cancelled() stops the reading (a signal) */
} tr_points;

/* What a point costs in memory while it is read and searched: x, y, z
 * (24 bytes, up to twice that while the arrays grow by doubling) and its
 * copy in the search index (point_index.c), rounded up: the interpolate
 * benchmark's 1,000,000 points took 75 MB more than its tiles. */
#define TR_POINT_BYTES 80

/* Reads every point of `path` as the interpolation options say. More than
 * mem / TR_POINT_BYTES points (mem > 0) is an error (TR_ENOMEM), raised as
 * soon as the reading passes that many, before they take the memory. */
int tr_points_read(tr_points *p, const char *path, const tr_interpolate_opts *o, int64_t mem, tr_error *err);
/* The same, but the points past mem are not refused: those read so far,
 * then every later one, go to spill in input order, in the same single pass
 * over the input (a pipe cannot be read twice); the arrays are freed, and p
 * keeps the count, extent and CRS (p->over and p->sink set). */
int tr_points_read_spill(tr_points *p, const char *path, const tr_interpolate_opts *o, int64_t mem, tr_point_sink spill,
                         void *user, tr_error *err);
void tr_points_free(tr_points *p);

#endif
