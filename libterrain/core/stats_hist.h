/*
 * stats_hist.h - exact histograms and percentiles of an output raster
 * (internal; the second half of --stats, after stats.h's moments).
 *
 * Each valid cell (not nodata, not NaN) becomes an order-preserving
 * unsigned key of 16 (Byte, Int16, UInt16), 32 (Int32, UInt32, Float32) or
 * 64 bits (anything else, through float64): a < b exactly when key(a) <
 * key(b), and the value comes back exactly from the key. The sink appends
 * the keys of every tile this rank computed to an unlinked scratch file
 * (tr_stats_cells: it disappears with the process on any exit path, a
 * signal or SIGKILL included) and counts their top 16 bits as it goes.
 *
 * Then, collectively (every rank makes the same libcoll calls, whatever its
 * status; each vector ends with a count of ranks that failed, so a rank
 * that cannot read its scratch file fails the run instead of a wait):
 *   1. allreduce MIN of (min, -max) per band and SUM of the valid counts:
 *      every rank has the global range and count;
 *   2. percentiles: allreduce SUM of the top-16-bit counts (65536 uint64
 *      per band = 512 KiB, above libcoll's small-vector cut-off, so the
 *      pipelined recursive-halving path); each wanted rank falls in one
 *      bucket, which fixes 16 more bits of its key;
 *   3. scans of the scratch file: the first bins the histogram (its bounds
 *      need step 1) and counts the next 16 bits of the keys under each
 *      distinct known prefix; each further scan fixes 16 more bits, until
 *      the keys are whole (Float32: one scan; Float64: three).
 * Counts are integers summed in any order, so the histogram and the
 * percentiles are identical for any rank count, thread count and tile
 * size. Memory: 512 KiB per distinct prefix per band, and a 1 MiB read
 * buffer; the scratch file holds this rank's valid cells once.
 *
 * Percentile rule (numpy's method='inverted_cdf', reproduced bit for bit):
 * of n valid values sorted ascending, the value at 0-based index
 * max(0, ceil(n * q - 1)), q = p / 100, both computed in IEEE double.
 *
 * Histogram: GDAL's buckets over [min - h, max + h], h = (max - min) /
 * (2 (N - 1)) (what gdalinfo -hist uses for N = 256; N = 1: h = (max -
 * min) / 2; a constant band: h = 0.5, or 2^-20 |v| beyond 1): bucket =
 * floor((v - lo) * (N / (hi - lo))), lo and hi rounded to 16 significant
 * digits first (PAM's .aux.xml keeps no more). No histogram for an empty band or a
 * range that is not finite.
 */
#ifndef TR_STATS_HIST_H
#define TR_STATS_HIST_H

#include <gdal.h>
#include <stdint.h>

#include "stats.h"
#include "terrain.h"

struct coll_ctx;

#define TR_KEY_BUCKETS 65536 /* 16 bits of a key per pass */

/* This rank's cells for the passes. Not thread-safe (the sink's put is
 * called by one thread at a time). */
typedef struct tr_stats_cells {
  int fd;            /* the unlinked scratch file (owned: closed by free) */
  GDALDataType type; /* the cells' (the sink's product type) */
  int key_bits;      /* 16, 32 or 64 */
  int bands;
  int64_t end;   /* bytes appended */
  int err;       /* errno of the first failed append, 0 */
  uint64_t *top; /* bands x 65536 counts of the keys' top 16 bits, then
                    one slot for the failure count; NULL without percentiles */
  double *vbuf;  /* a chunk of cells as float64 */
  void *kbuf;    /* the keys of one tile's band */
  int64_t kcap;  /* keys kbuf holds */
} tr_stats_cells;

/* Sets c up for cells of `type` with `bands` bands over the scratch file fd
 * (taken over); top counts when want_top. TR_OK or TR_ENOMEM (fd closed). */
int tr_stats_cells_init(tr_stats_cells *c, GDALDataType type, int bands, int want_top, int fd, tr_error *err);

/* Appends the keys of one tile's n valid cells (pixel-interleaved, bands
 * values of `type` each) and counts their top bits. A write failure is kept
 * in c->err (reported by the passes) and stops further appends. */
void tr_stats_cells_add(tr_stats_cells *c, const void *cells, GDALDataType type, int64_t n, int has_nodata,
                        double nodata);

void tr_stats_cells_free(tr_stats_cells *c);

/* One band's result. */
typedef struct {
  int64_t count;  /* valid cells */
  int nbuckets;   /* 0: no histogram */
  double lo, hi;  /* the histogram's bounds */
  uint64_t *bins; /* nbuckets counts (owned) */
  double *pct;    /* run->npercentiles values (owned); NULL when none */
} tr_band_hist;

/* The passes above, collective over ctx's ranks (every rank calls it, with
 * c NULL on a rank that has no cells: it contributes none). tiles: this
 * rank's ntiles x bands partials (stats.h). out[bands]: filled on every
 * rank; free with tr_band_hist_free. type: the cells' (when c is NULL too). A libcoll failure is returned as
 * tr_stats_coll_fail's status. */
int tr_stats_hist_run(const tr_run_opts *run, struct coll_ctx *ctx, tr_stats_cells *c, GDALDataType type,
                      const tr_tile_stats *tiles, int64_t ntiles, int bands, tr_band_hist *out, tr_error *err);

void tr_band_hist_free(tr_band_hist *h, int bands);

/* The 0-based index of percentile p among n sorted values (the rule above). */
int64_t tr_percentile_index(double p, int64_t n);

#endif
