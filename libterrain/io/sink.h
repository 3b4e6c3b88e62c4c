/*
 * sink.h - the ordered tile writer every runner hands its finished tiles to
 * (internal to libterrain).
 *
 * Tiles leave in tile order for any thread, rank or schedule, so rank 0's
 * GDAL block cache flushes the same way every time and the output file is the
 * same bytes. Rank 0 is the only writer: it writes its own tiles and, before
 * each, receives and writes every other rank's tile that precedes it (one MPI
 * protocol: a header with the tile's index, status and error line, then the
 * cells). Each tile's owner takes its statistics partials where it was
 * computed; run/run.c publishes them through libcoll.
 *
 * A failed tile is put like any other (status != 0): its failure travels in
 * the header, every rank finishes the protocol (no one waits for a tile that
 * never comes) and rank 0 remembers the first failure in tile order.
 *
 * Thread safety: tr_sink_put must be called by one thread at a time per
 * process, in increasing tile order among the tiles this rank owns (the local
 * runner calls it from an OpenMP ordered region, the graph runner from the
 * engine's in-order Assemble).
 */
#ifndef TR_SINK_H
#define TR_SINK_H

#include <gdal.h>
#include <stdint.h>

#include "grid.h"
#include "raster.h"
#include "stats.h"

/* What a command produces: the output's cell type, bands and nodata. */
typedef struct {
  GDALDataType type;
  int bands;          /* cells are pixel-interleaved: bands values of `type` each */
  int has_nodata;
  double nodata;      /* declared on every band when has_nodata */
  GDALDataType file_type; /* the output raster's band type; GDT_Unknown: `type` (GDAL converts) */
} tr_product;

/* Where tiles come from and where they go. */
typedef enum {
  TR_SINK_SPREAD = 0, /* tile i is rank (i mod N)'s (the owner rule); rank 0 writes */
  TR_SINK_RANK0,      /* every tile is rank 0's; other ranks put nothing */
  TR_SINK_LOCAL       /* this process alone, as if there were one rank */
} tr_sink_mode;

/* The rectangle of tile i (a regular grid's, or an engine layout's). */
typedef tr_tile (*tr_sink_tile_fn)(const void *geom, int64_t i);
/* Writes a finished tile (rank 0, in tile order). Returns TR_OK or fails with e. */
typedef int (*tr_sink_write_fn)(void *user, const tr_tile *t, const void *cells, tr_error *e);

typedef struct tr_sink {
  const tr_run_opts *run;   /* progress and statistics options; may be NULL */
  int64_t ntiles;
  tr_sink_tile_fn tile_at;
  const void *geom;
  int rank, nranks;
  tr_sink_mode mode;
  tr_product prod;
  size_t cell_bytes;        /* bytes of one cell, all bands */
  tr_sink_write_fn write;
  void *write_user;
  tr_output out;            /* rank 0, when the sink writes a raster file */
  int created;
  tr_tile_stats *stats;     /* ntiles x bands partials, or NULL without --stats */
  struct tr_stats_cells *cells; /* this rank's cells kept for the histogram and
                               percentiles (core/stats_hist.h), or NULL */
  void *recvbuf;            /* rank 0 with remote tiles */
  void *rowbuf;             /* rank 0: a row of tiles when the file's blocks span tiles (tr_sink_row_bytes) */
  const tr_grid *grid;      /* the grid of tr_sink_open, else NULL */
  int64_t next;             /* rank 0: the next tile to write */
  int64_t written;
  double progress_from;     /* progress reported: from + (1 - from) x written / ntiles */
  int status;               /* first failure seen here */
  int hold_ms;              /* injected (hold:): wait this long before the first put */
  int dead;                 /* a rank was lost or the run cancelled: no more traffic */
  tr_error first;
} tr_sink;

/* A sink over any tiling and writer: max_cells is the largest tile's cell
 * count (the receive buffer). Statistics partials are kept when run asks. */
int tr_sink_init(tr_sink *s, const tr_run_opts *run, int64_t ntiles, tr_sink_tile_fn tile_at, const void *geom,
                 int64_t max_cells, const tr_product *p, tr_sink_mode mode, tr_sink_write_fn write, void *user,
                 tr_error *err);

/* A sink over the tile grid g that writes a raster: rank 0 creates the
 * temporary output (raster.h) like `in`, compressing on `threads` threads
 * (the job's). Not agreed: the caller agrees. */
int tr_sink_open(tr_sink *s, const tr_run_opts *run, const tr_input *in, const char *dst, const tr_product *p,
                 const tr_grid *g, tr_sink_mode mode, int threads, tr_error *err);

/* Bytes the writer (rank 0) of a raster over grid g keeps to assemble a
 * row of tiles, or 0. An output whose blocks are wider than a tile (GDAL's
 * GeoTIFF without -co is striped: a block is a full-width row) would
 * otherwise have each block written part by part, a tile at a time across
 * the row, and flushed from GDAL's cache and read back in between (a
 * Float64 product at 8000 columns was written 2.8x slower than a Float32
 * one). Assembled, each block is written once and whole. block_cols: the
 * output's block width (0: striped, the full width). */
int64_t tr_sink_row_bytes(const tr_grid *g, const tr_product *p, int64_t block_cols);

/* Hands over tile i (cells: its rows x cols cells, row-major, no halo) with
 * the status of its computation (cells ignored when status != 0). */
/* The tiles this rank hands to the sink. */
int64_t tr_sink_owned(const tr_sink *s);

void tr_sink_put(tr_sink *s, int64_t i, int status, const tr_error *e, const void *cells);

/* Rank 0: receives and writes every remaining tile. Others: nothing. Returns
 * the first failure seen (in tile order on rank 0), with its line in err. */
int tr_sink_drain(tr_sink *s, tr_error *err);

/* Records a failure that is not a tile's (the caller's own); kept if first. */
void tr_sink_fail(tr_sink *s, int status, const tr_error *e);

/* Every rank agreed to fail before computing any tile (status, e: the
 * agreed failure): no tile will move, so rank 0's drain expects none. */
void tr_sink_none(tr_sink *s, int status, const tr_error *e);

/* Rank 0: flushes and renames the raster into place, or deletes it. */
int tr_sink_commit(tr_sink *s, tr_error *err);
void tr_sink_abort(tr_sink *s);

/* Frees the sink's buffers (not the output: commit or abort first). */
void tr_sink_close(tr_sink *s);

#endif
