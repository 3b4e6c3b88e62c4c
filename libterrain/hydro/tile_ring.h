/*
 * tile_ring.h - the numbering of a rectangle's border cells that the graph
 * programs use for a tile's perimeter and halo (internal to libterrain).
 */
#ifndef TR_TILE_RING_H
#define TR_TILE_RING_H

#include <stdint.h>

/* Rings: the cells of an R x C rectangle's border, numbered: the top row,
 * the bottom row, then the left and the right column without their ends.
 * The perimeter programs (acc_perimeter.c, basin_perimeter.c) and the flats
 * (flowdir_program.c) keep per-cell values of a tile's perimeter (R = h,
 * C = w) and halo (R = h + 2, C = w + 2) in this order. */
static inline int64_t tr_d8_ring_size(int64_t R, int64_t C) { return R == 1 ? C : C == 1 ? R : 2 * C + 2 * (R - 2); }

/* The ring index of (r, c) in an R x C rectangle, or -1 for an inner cell. */
static inline int64_t tr_d8_ring_index(int64_t R, int64_t C, int64_t r, int64_t c) {
  if (r == 0) return c;
  if (r == R - 1) return C + c;
  if (c == 0) return 2 * C + (r - 1);
  if (c == C - 1) return 2 * C + (R - 2) + (r - 1);
  return -1;
}

static inline void tr_d8_ring_cell(int64_t R, int64_t C, int64_t k, int64_t *r, int64_t *c) {
  if (k < C)
    *r = 0, *c = k;
  else if (k < 2 * C)
    *r = R - 1, *c = k - C;
  else if (k < 2 * C + (R - 2))
    *r = k - 2 * C + 1, *c = 0;
  else
    *r = k - 2 * C - (R - 2) + 1, *c = C - 1;
}

#endif
