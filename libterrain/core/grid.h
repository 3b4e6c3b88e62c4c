/*
 * grid.h - the tile grid over a raster (internal to libterrain).
 *
 * Tiles are tile x tile cells in row-major order; the last row and column of
 * tiles may be smaller. Tile index i is the unit of work, of I/O, of
 * statistics partials, and of fault tolerance (a libft block).
 */
#ifndef TR_GRID_H
#define TR_GRID_H

#include <stdint.h>

typedef struct {
  int64_t rows, cols, tile;
  int64_t tile_rows, tile_cols; /* tiles down and across */
} tr_grid;

typedef struct {
  int64_t index, row0, col0, rows, cols;
} tr_tile;

static inline void tr_grid_init(tr_grid *g, int64_t rows, int64_t cols, int64_t tile) {
  g->rows = rows;
  g->cols = cols;
  g->tile = tile;
  g->tile_rows = (rows + tile - 1) / tile;
  g->tile_cols = (cols + tile - 1) / tile;
}

static inline int64_t tr_grid_count(const tr_grid *g) { return g->tile_rows * g->tile_cols; }

static inline tr_tile tr_grid_tile(const tr_grid *g, int64_t i) {
  tr_tile t;
  t.index = i;
  t.row0 = (i / g->tile_cols) * g->tile;
  t.col0 = (i % g->tile_cols) * g->tile;
  t.rows = g->rows - t.row0 < g->tile ? g->rows - t.row0 : g->tile;
  t.cols = g->cols - t.col0 < g->tile ? g->cols - t.col0 : g->tile;
  return t;
}

#endif
