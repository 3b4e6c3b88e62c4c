/*
 * stats.h - global statistics of an output raster (internal).
 *
 * Every tile gets a partial (count, sum, sum of squares, min, max) in
 * float64, computed by libcoll's accumulator where the tile is computed.
 * A tile whose values reach beyond 2^500 (Float64 products near DBL_MAX,
 * whose squares and sums would overflow) keeps its sums of the values
 * scaled by 2^-exp; the merge brings every tile to the largest exp (powers
 * of two: exact), so the mean and the standard deviation come out finite
 * and, for every other product (exp 0), bit-identical to plain sums.
 * The partials meet in one libcoll timeout aggregation: a vector of five
 * doubles per tile, summed. Each tile has exactly one owning rank and every
 * other rank contributes 0 for it, and x + 0 = x exactly, so the sum is
 * exact in any order; the per-tile partials are then merged in tile order.
 * The statistics are therefore bit-identical for any thread and rank count,
 * The partials go to the writer (rank 0) only, through libcoll's timeout
 * aggregation as a reduce over a one-level tree: the other ranks send and
 * go on, and only the writer waits for a late one.
 */
#ifndef TR_STATS_H
#define TR_STATS_H

#include <gdal.h>
#include <stdint.h>
#include <stdio.h>

#include "terrain.h"

struct tr_inject;
struct tr_stats_cells;

typedef struct {
  double count, sum, sumsq, min, max;
  double exp; /* sum and sumsq are of the values times 2^-exp (0 but near DBL_MAX) */
} tr_tile_stats;

/* Partials of n cells of `type` with `bands` values each (pixel-interleaved)
 * into ts[0 .. bands); nodata cells (when has_nodata) and NaN not counted. */
void tr_tile_stats_of(tr_tile_stats *ts, const void *cells, GDALDataType type, int bands, int64_t n,
                      int has_nodata, double nodata);

/* Collective over all ranks (only rank 0 waits): combines the per-tile partials (tiles[i * bands
 * + b]; zero for tiles this rank does not own); on rank 0 (ds != NULL) stores
 * STATISTICS_* metadata on every band when run->stats and writes the
 * --stats-json report (band 1 at the top level, every band under "bands")
 * into `json` when it is not NULL (the caller, run/run.c, opens it as a side
 * file, io/side_file.h, a floor above this one, and checks the writes).
 * t_start: this rank's job start (CLOCK_MONOTONIC seconds) for the report's
 * per-rank wall_ms. cells (NULL: none) and type: this rank's cells for the
 * histogram and percentiles (stats_hist.h), made when tr_stats_cells_wanted;
 * a histogram goes to each band with GDALSetDefaultHistogramEx (GTiff:
 * OUTPUT.aux.xml, which the caller reports), percentiles as
 * STATISTICS_PERCENTILE_<p> metadata when run->stats. */
int tr_stats_publish(const tr_run_opts *run, const struct tr_inject *inj, GDALDatasetH ds, FILE *json, int bands,
                     const tr_tile_stats *tiles, int64_t n, struct tr_stats_cells *cells, GDALDataType type,
                     double t_start, tr_error *err);

/* Whether a run computes statistics at all, and whether it keeps its cells
 * for a histogram or percentiles (stats_hist.h). */
static inline int tr_stats_wanted(const tr_run_opts *r) {
  return r && (r->stats || r->stats_json || r->npercentiles > 0);
}
static inline int tr_stats_hist_wanted(const tr_run_opts *r) { return r && r->stats && r->hist_buckets != TR_HIST_NONE; }
static inline int tr_stats_cells_wanted(const tr_run_opts *r) {
  return r && (tr_stats_hist_wanted(r) || r->npercentiles > 0);
}

/* A libcoll failure rc as a status: a lost rank TR_ERANK (named), a cancel
 * TR_EINTERRUPTED, anything else TR_ECOLL with ctx's detail. */
struct coll_ctx;
int tr_stats_coll_fail(const tr_run_opts *run, int rc, const struct coll_ctx *ctx, tr_error *err);

#endif
