/*
 * burn.h - stream burning (internal): the lines of an OGR vector lowered
 * into a DEM's windows as they are read (terrain.h, tr_burn_opts).
 *
 * The lines are read once per rank (tr_burn_open) and kept as segments in
 * the DEM's cell coordinates; each window a stage reads is then burnt with
 * tr_burn_window. Which cells a line touches is GDAL's rasterizer's answer
 * (GDALRasterizeGeometries), asked block by block of a fixed grid of
 * TR_BURN_BLOCK x TR_BURN_BLOCK cells anchored at the DEM's corner, never
 * per window: the answer for a cell then depends on the cell alone, not on
 * the tile, halo, rank or memory cap that read it. With GDAL's line rule the
 * segment ends are moved to the centres of the cells holding them first
 * (the rule walks between those cells and reads nothing else), so the cells
 * are the ones one rasterisation of the whole grid gives (gdal_rasterize),
 * exactly; with ALL_TOUCHED they are the block's rasterisation (the walk
 * reads the ends' positions within the cells, which GDAL shifts by the
 * block's offset in floating point: within a block of a whole-grid run the
 * same cells, measured on the tests' DEMs, but only the block grid is
 * guaranteed).
 *
 * Memory: 32 bytes a segment and 16 bytes per block a segment's box meets,
 * on every rank, and 2 bytes per burnt cell of the blocks this rank's
 * windows have met: a block is rasterised once (64 KiB while it is), the
 * first time a window needs it, and its burnt cells kept. tr_burn_bytes
 * bounds it all, and the graph runner counts that in --mem.
 *
 * Thread safety: tr_burn_window may run on several threads at once (a
 * block's first rasterisation holds the tr_burn's lock).
 */
#ifndef TR_BURN_H
#define TR_BURN_H

#include <stdint.h>

#include "raster.h"

#define TR_BURN_BLOCK 256

typedef struct tr_burn tr_burn;

/* Usage errors of o before any file is read (TR_EUSAGE, one line): a file
 * without a depth > 0, a depth, layer or all_touched without a file. */
int tr_burn_usage(const tr_burn_opts *o, tr_error *err);

/* Reads the lines of o->file (layer o->layer, else the first) laid on
 * grid's cells into *b; *b is NULL (and TR_OK) when o->file is NULL. Refused
 * with one line: an unreadable file or missing layer, a feature that is not a
 * line, a CRS that cannot be transformed into grid's, a vertex that cannot
 * be, no segment crossing the grid. A layer without a CRS over a grid with
 * one is taken in grid's; on rank 0, run->warning (may be NULL) says so. */
int tr_burn_open(tr_burn **b, const tr_burn_opts *o, const tr_input *grid, const tr_run_opts *run, tr_error *err);
void tr_burn_close(tr_burn *b);

/* Lowers by the depth the cells the lines touch among the window's rows x
 * cols cells at (row0, col0) of the grid (inside it), in z (Float32, rows
 * stride apart) as read: NaN and, with has_nodata, cells equal to nodata are
 * left; a burnt value that lands on nodata moves one float lower. count
 * (may be NULL) receives how many cells were lowered inside the rectangle
 * rect = {row0, col0, rows, cols} of the grid (may be NULL: none). */
int tr_burn_window(tr_burn *b, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *z, int64_t stride,
                   int has_nodata, float nodata, const int64_t rect[4], int64_t *count, tr_error *err);

/* An upper bound of the bytes b keeps, now and once every block is
 * rasterised (the segments, the index, each block's burnt cells bounded by
 * what its segments can touch, one block's mask); 0 for NULL. */
int64_t tr_burn_bytes(const tr_burn *b);

/* The JSON object of the burn for a run's report (--aap-stats):
 * {"burn":{"file":...,"layer":...,"depth":...,"all_touched":...,
 * "segments":...,"cells":count,"bytes":tr_burn_bytes}}, the caller's to
 * free (tr_json_free); NULL when out of memory. */
tr_json *tr_burn_json(const tr_burn *b, int64_t count);

#endif
