/*
 * flowdir.h - the `flowdir` graph program's params (hydro/flowdir_program.c)
 * (internal to libterrain).
 *
 * The program turns a filled DEM into D8 directions: the D8 rule
 * (kernels/d8.h) where a cell has a lower neighbour, and Barnes, Lehman &
 * Mulla (2014) on flats. Barnes labels each flat and adds a per-flat constant
 * (its largest distance from higher terrain) to keep masks positive; cells
 * are only ever compared with neighbours of the same flat, so the constant
 * drops out and the labels with it. What remains are two breadth-first
 * distances over flat cells, both least fixed points (f_aggr = min, values
 * only fall from +inf: GRAPE's monotone condition):
 *   dl(c) = 1 + min over equal-elevation neighbours n of (0 if n drains, dl(n)
 *           if n is flat)                      (towards lower terrain)
 *   dh(c) = 0 if c has a higher neighbour, else 1 + min over
 *           equal-elevation flat neighbours of dh(n)   (away from higher)
 * where a flat cell is a valid cell with eight valid neighbours none lower,
 * and a cell drains when it is valid and not flat (it has a D8 direction, or
 * it is an outlet: the DEM's edge or next to NoData). A flat cell then flows to
 * the first equal-elevation draining neighbour in the D8 order, else to the
 * equal-elevation flat neighbour with the smallest 2 dl - dh (dh counted as 0
 * on a flat without higher terrain, where it is +inf everywhere), ties in the
 * D8 order. Some neighbour one step closer to the outlet has 2 dl - dh smaller
 * by at least 1 (dl falls by 1, dh changes by at most 1), so the key strictly
 * falls along every path: no cycles, and every flat cell reaches a draining
 * cell. A flat cell with dl = +inf (a closed depression: only in a DEM said
 * to be filled that is not) gets nodata. This is Barnes's assignment with
 * ties broken in the D8 order; the tests compare it with a plain
 * queue-based implementation of the paper.
 */
#ifndef TR_FLOWDIR_H
#define TR_FLOWDIR_H

#include <stdint.h>

#include "d8.h"

typedef struct {
  int32_t encoding;   /* tr_dir_encoding of the output codes */
  tr_d8_geom geom;    /* cell sizes (kernels/d8.h) */
} tr_flowdir_params;

/* --ft replay's invariant of flowdir's tiles (flow_check.c): the cells of n
 * that are not one of the encoding's nine codes (nodata included). */
int64_t tr_flowdir_check_tile(int32_t encoding, int64_t n, const int16_t *tile);

#endif
