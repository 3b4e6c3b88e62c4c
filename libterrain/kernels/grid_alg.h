/*
 * grid_alg.h - gdal_grid's algorithms, one grid node at a time, over a
 * view of the point index (internal to libterrain; used by interpolate.c).
 *
 * Each algorithm gives GDAL 3.6's value for a node (its quirks included:
 * terrafort-interpolate(1) lists them); the search goes through the bucket
 * grid instead of scanning every point. Answers never depend on the order
 * buckets are visited in beyond floating-point summation order, which is
 * itself fixed by the global bucket order, so any tile gets the same bytes.
 */
#ifndef TR_GRID_ALG_H
#define TR_GRID_ALG_H

#include <stdint.h>

#include "status.h"
#include "point_index.h"
#include "terrain.h"

#define TR_GRID_TINY 0.0000000000001 /* GDAL's "node on a point" threshold */

/* The parsed -a string and what the search needs from it (plain data). */
typedef struct {
  int32_t alg;            /* tr_grid_alg */
  int32_t ellipse;        /* radius1 and radius2 both set: a search ellipse */
  double power, smoothing, radius1, radius2, angle, radius, nodata;
  int64_t max_points, min_points;
  double cos_a, sin_a;    /* the ellipse's rotation (0, 0 when angle is 0, as GDAL) */
  double hx, hy;          /* half extents of the ellipse's bounding box */
  double init_radius;     /* linear's fallback: GDAL's first square, sqrt(area / n) */
} tr_grid_params;

/* Parses "NAME[:key=value]..." (gdal_grid's -a) with GDAL's defaults.
 * An unknown name or key, or a value that is not a number, is TR_EUSAGE. */
int tr_grid_parse(const char *spec, tr_grid_params *p, tr_error *err);

/* Half-width of the square around a node that holds every point the node's
 * search can see; < 0: unbounded (every point). */
double tr_grid_reach(const tr_grid_params *p);

/* Scratch space one thread's searches share (grown on demand). */
typedef struct {
  int64_t *idx;
  double *d2;
  int64_t cap;
  double *soa;       /* all-points invdist: x[], y[], z[] of the view, n each */
  const void *soa_of; /* the view they were taken from */
  double last_x, last_y, last_dk; /* the previous node's k-th distance (< 0: none) */
} tr_grid_scratch;

/* A fresh scratch: no previous node. */
#define TR_GRID_SCRATCH_INIT {NULL, NULL, 0, NULL, NULL, 0, 0, -1}
void tr_grid_scratch_free(tr_grid_scratch *s);

/* The value at (x, y) for every algorithm but linear's triangles (linear
 * calls it for its nearest-point fallback). Returns 0, or -1 when out of
 * memory. */
int tr_grid_value(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s, double *out);

/* linear's value outside every triangle: nodata (radius 0), the nearest
 * point within radius, or (radius < 0) GDAL's doubling-square search. */
double tr_grid_linear_outside(const tr_grid_params *p, const tr_pview *v, double x, double y, tr_grid_scratch *s);

#endif
