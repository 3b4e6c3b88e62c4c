/*
 * idw2_block.h - invdist with power 2 and no search radius (every point
 * weighs on every node), a block of grid nodes at a time, fast (internal to
 * libterrain; used by interpolate.c).
 *
 * This is the one gdal_grid algorithm that cannot use the point index: each
 * node sums over every point. gdal_grid 3.6 does all n x nodes terms in
 * single-precision SSE/AVX lanes with an approximate reciprocal (2e-3 from
 * the exact sums); this sums the points near a block of nodes exactly and
 * interpolates the far points' smooth sums from a few nodes of the block
 * (idw2_block.c says how), in double: within 1e-7 relative of the exact
 * answer (terrafort-interpolate(1); the interp_gdal_grid and interp_brute
 * tests compare it with gdal_grid's double path and a brute-force sum).
 */
#ifndef TR_IDW2_BLOCK_H
#define TR_IDW2_BLOCK_H

#include <stdint.h>

#include "grid_alg.h"
#include "point_index.h"

/* Where the grid's nodes are: node (row, col) lies at
 * x = xmin + (col + 0.5) dx, y = ymax - (row + 0.5) dy (dx, dy > 0). */
typedef struct {
  double xmin, dx, ymax, dy;
} tr_node_grid;

/* Scratch one thread's blocks share (grown on demand). */
typedef struct {
  double *f;       /* the points' offsets: x[cap], y[cap], z[cap] */
  int64_t *near;   /* the near points, as view indices */
  int64_t cap;
} tr_idw2_scratch;

#define TR_IDW2_SCRATCH_INIT {NULL, NULL, 0}
void tr_idw2_scratch_free(tr_idw2_scratch *s);

/* Does the fast path take these parameters (invdist, power 2, no radii)? */
int tr_idw2_applies(const tr_grid_params *p);

/* The values of nodes [row0, row0 + rows) x [col0, col0 + cols) (global
 * node indices) from every point of v, into out (row-major, `cols` per
 * row). A node's value depends only on the node and the points (not on the
 * rectangle asked for), so any tiling gives the same bytes. Returns 0, or
 * -1 when out of memory. */
int tr_idw2_block(const tr_grid_params *p, const tr_pview *v, const tr_node_grid *g, int64_t row0, int64_t rows,
                  int64_t col0, int64_t cols, double *out, tr_idw2_scratch *s, tr_grid_scratch *gs);

#endif
