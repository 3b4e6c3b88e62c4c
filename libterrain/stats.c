/*
 * stats.c - per-tile statistics partials and their deterministic combination.
 */
#include "stats.h"

#include <math.h>
#include <stdio.h>

#include "raster.h"

void tr_tile_stats_of(tr_tile_stats *ts, const float *cells, int64_t n, int has_nodata, float nodata) {
  int64_t count = 0;
  double sum = 0, sumsq = 0, mn = INFINITY, mx = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    float v = cells[i];
    if (isnan(v) || (has_nodata && v == nodata)) continue;
    double d = v;
    count++;
    sum += d;
    sumsq += d * d;
    if (d < mn) mn = d;
    if (d > mx) mx = d;
  }
  ts->count = count;
  ts->sum = sum;
  ts->sumsq = sumsq;
  ts->min = mn;
  ts->max = mx;
}

int tr_stats_publish(const tr_run_opts *run, GDALRasterBandH band, const tr_tile_stats *tiles, int64_t n,
                     tr_error *err) {
  tr_tile_stats t = {0, 0, 0, INFINITY, -INFINITY};
  for (int64_t i = 0; i < n; i++) {
    t.count += tiles[i].count;
    t.sum += tiles[i].sum;
    t.sumsq += tiles[i].sumsq;
    if (tiles[i].min < t.min) t.min = tiles[i].min;
    if (tiles[i].max > t.max) t.max = tiles[i].max;
  }
  double mean = t.count ? t.sum / (double)t.count : 0;
  double var = t.count ? t.sumsq / (double)t.count - mean * mean : 0;
  double sd = var > 0 ? sqrt(var) : 0;
  int64_t cells = (int64_t)GDALGetRasterBandXSize(band) * GDALGetRasterBandYSize(band);
  if (run->stats && t.count > 0) {
    GDALSetRasterStatistics(band, t.min, t.max, mean, sd);
    char pct[64];
    snprintf(pct, sizeof pct, "%.17g", 100.0 * (double)t.count / (double)cells);
    GDALSetMetadataItem(band, "STATISTICS_VALID_PERCENT", pct, NULL);
  }
  if (run->stats_json) {
    FILE *f = fopen(run->stats_json, "w");
    if (!f) return tr_fail(err, TR_EOUTPUT, "cannot write statistics file '%s'", run->stats_json);
    fprintf(f,
            "{\"valid_count\":%lld,\"cells\":%lld,\"min\":%.17g,\"max\":%.17g,\"mean\":%.17g,\"stddev\":%.17g}\n",
            (long long)t.count, (long long)cells, t.count ? t.min : 0.0, t.count ? t.max : 0.0, mean, sd);
    if (fclose(f) != 0) return tr_fail(err, TR_EOUTPUT, "cannot write statistics file '%s'", run->stats_json);
  }
  return TR_OK;
}
