/*
 * grid.h - the tile grid over a raster (internal to libterrain).
 *
 * Tiles are tile x tile cells in row-major order; the last row and column of
 * tiles may be smaller. Tile index i is the unit of work, of I/O, of
 * statistics partials, of fault tolerance (a libft block) and of the AAP
 * engine (a fragment).
 *
 * The owner rule, the one place it is written: under mpirun tile i belongs
 * to rank i mod N (the local runner, the graph runner and the AAP engine's
 * MPI back-end all follow it; the sink relies on it to know whom to wait for).
 */
#ifndef TR_GRID_H
#define TR_GRID_H

#include <stdint.h>

/* The default tile side for every command (--tile-size 0), and the largest. */
#define TR_DEFAULT_TILE 512
#define TR_MAX_TILE 16384
/* The smallest tile a graph program runs on: each tile is a fragment with its
 * own rounds and messages, and below this the engine's per-fragment cost
 * swamps the work (fill on 200x150 cells: 0.09 s at 16, 0.36 s at 8, 11.6 s
 * at 4). */
#define TR_MIN_GRAPH_TILE 16

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

/* The rank that owns tile i among nranks. */
static inline int tr_grid_owner(int64_t i, int nranks) { return (int)(i % nranks); }

/* How many of n tiles rank `rank` of nranks owns. */
static inline int64_t tr_grid_owned(int64_t n, int rank, int nranks) {
  return n > rank ? (n - rank + nranks - 1) / nranks : 0;
}

#endif
