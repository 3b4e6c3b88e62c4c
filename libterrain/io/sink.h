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
 * computed; core/run.c publishes them through libcoll.
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
} tr_product;

typedef struct tr_sink {
  const tr_run_opts *run;
  const tr_grid *g;
  int64_t ntiles;
  int rank, nranks;
  int spread;            /* 1: tile i is rank (i mod N)'s; 0: every tile is rank 0's */
  tr_product prod;
  size_t cell_bytes;     /* bytes of one cell, all bands */
  tr_output out;         /* rank 0 */
  int created;
  tr_tile_stats *stats;  /* ntiles x bands partials, or NULL without --stats */
  void *recvbuf;         /* rank 0 with remote tiles */
  int64_t next;          /* rank 0: the next tile to write */
  int64_t written;
  double progress_from;  /* progress reported: from + (1 - from) x written / ntiles */
  int status;            /* first failure seen here */
  tr_error first;
} tr_sink;

/* Collective: rank 0 creates the temporary output (raster.h) like `in`;
 * every rank prepares its statistics partials. Not agreed: the caller agrees. */
int tr_sink_open(tr_sink *s, const tr_run_opts *run, const tr_input *in, const char *dst, const tr_product *p,
                 const tr_grid *g, int spread, tr_error *err);

/* Hands over tile i (cells: rows x cols cells, row-major, no halo) with the
 * status of its computation (cells ignored when status != 0). */
void tr_sink_put(tr_sink *s, int64_t i, int status, const tr_error *e, const void *cells);

/* Rank 0: receives and writes every remaining tile. Others: nothing. Returns
 * the first failure seen (in tile order on rank 0), with its line in err. */
int tr_sink_drain(tr_sink *s, tr_error *err);

/* Records a failure that is not a tile's (the caller's own); kept if first. */
void tr_sink_fail(tr_sink *s, int status, const tr_error *e);

/* Rank 0: flushes and renames into place (status 0) or deletes the output. */
int tr_sink_commit(tr_sink *s, tr_error *err);
void tr_sink_abort(tr_sink *s);

/* Frees the sink's buffers (not the output: commit or abort first). */
void tr_sink_close(tr_sink *s);

#endif
