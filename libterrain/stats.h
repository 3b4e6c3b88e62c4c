/*
 * stats.h - global statistics of an output raster (internal).
 *
 * Every tile gets a partial (count, sum, sum of squares, min, max) in
 * float64, computed where the tile is computed. Partials are combined in
 * tile order, never in arrival order, so the statistics are bit-identical
 * for any thread and rank count.
 */
#ifndef TR_STATS_H
#define TR_STATS_H

#include <gdal.h>
#include <stdint.h>

#include "terrain.h"

typedef struct {
  int64_t count;
  double sum, sumsq, min, max;
} tr_tile_stats;

/* Partial of n cells; cells equal to nodata (when has_nodata) and NaN are
 * not counted. */
void tr_tile_stats_of(tr_tile_stats *ts, const float *cells, int64_t n, int has_nodata, float nodata);

/* Combines the per-tile partials (in tile order), stores them as GDAL
 * STATISTICS_* metadata of band when run->stats, and writes run->stats_json
 * when set. */
int tr_stats_publish(const tr_run_opts *run, GDALRasterBandH band, const tr_tile_stats *tiles, int64_t n,
                     tr_error *err);

#endif
