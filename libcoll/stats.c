/*
 * stats.c - the statistics accumulator and its deterministic reduction.
 *
 * A coll_stats holds count, sum, sum of squares, min, max and an optional
 * fixed-edge histogram of one band. The tools accumulate one per tile (the
 * cells of a tile are always visited in the same order), then call
 * coll_stats_reduce with the tiles each rank computed.
 *
 * Determinism. Floating-point addition is not associative, so a plain
 * reduction over ranks would give results that depend on the rank count and
 * on which rank computed which tile. The reduction therefore splits the
 * accumulator:
 *   - count and the bins are int64 sums and min/max are order-free: they go
 *     through coll_allreduce (SUM / MIN / MAX), exact in any order;
 *   - sum and sumsq are gathered per tile as (tile id, sum, sumsq) triples
 *     (24 bytes per tile, small next to the tiles themselves) to every rank,
 *     sorted by tile id and added left to right in that order.
 * Every rank thus computes the same left fold over the same sequence of
 * doubles: the result is bit-identical for any rank count and any tile
 * assignment, and identical to a single process merging the tiles in id
 * order with coll_stats_merge.
 *
 * stddev is the population standard deviation sqrt(sumsq/n - mean^2)
 * (GDAL's STATISTICS_STDDEV), clamped at 0 against rounding.
 */
#include "coll_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int coll_stats_init(coll_stats *s, int nbins, double hist_min, double hist_max) {
  if (!s || nbins < 0 || nbins > COLL_STATS_MAX_BINS) return COLL_EINVAL;
  if (nbins > 0 && !(hist_min < hist_max)) return COLL_EINVAL;
  memset(s, 0, sizeof *s);
  s->min = INFINITY;
  s->max = -INFINITY;
  s->nbins = nbins;
  s->hist_min = nbins > 0 ? hist_min : 0;
  s->hist_max = nbins > 0 ? hist_max : 0;
  return COLL_OK;
}

static void add_one(coll_stats *s, double x) {
  s->count++;
  s->sum += x;
  s->sumsq += x * x;
  if (x < s->min) s->min = x;
  if (x > s->max) s->max = x;
  if (s->nbins > 0 && x >= s->hist_min && x <= s->hist_max) {
    int b = (int)((x - s->hist_min) / (s->hist_max - s->hist_min) * s->nbins);
    if (b >= s->nbins) b = s->nbins - 1;
    if (b < 0) b = 0;
    s->bins[b]++;
  }
}

void coll_stats_add(coll_stats *s, const double *v, size_t n, int has_nodata, double nodata) {
  for (size_t i = 0; i < n; i++) {
    double x = v[i];
    if (isnan(x) || (has_nodata && x == nodata)) continue;
    add_one(s, x);
  }
}

void coll_stats_add_float(coll_stats *s, const float *v, size_t n, int has_nodata, double nodata) {
  for (size_t i = 0; i < n; i++) {
    double x = (double)v[i];
    if (isnan(x) || (has_nodata && x == nodata)) continue;
    add_one(s, x);
  }
}

static int same_layout(const coll_stats *a, const coll_stats *b) {
  return a->nbins == b->nbins && (a->nbins == 0 || (a->hist_min == b->hist_min &&
                                                    a->hist_max == b->hist_max));
}

int coll_stats_merge(coll_stats *into, const coll_stats *from) {
  if (!into || !from || !same_layout(into, from)) return COLL_EINVAL;
  into->count += from->count;
  into->sum += from->sum;
  into->sumsq += from->sumsq;
  if (from->min < into->min) into->min = from->min;
  if (from->max > into->max) into->max = from->max;
  for (int i = 0; i < into->nbins; i++) into->bins[i] += from->bins[i];
  return COLL_OK;
}

double coll_stats_mean(const coll_stats *s) {
  return s->count > 0 ? s->sum / (double)s->count : NAN;
}

double coll_stats_stddev(const coll_stats *s) {
  if (s->count <= 0) return NAN;
  double m = s->sum / (double)s->count;
  double v = s->sumsq / (double)s->count - m * m;
  return v > 0 ? sqrt(v) : 0.0;
}

typedef struct {
  int64_t id;
  double sum, sumsq;
} tile_sums;

static int by_id(const void *a, const void *b) {
  int64_t x = ((const tile_sums *)a)->id, y = ((const tile_sums *)b)->id;
  return (x > y) - (x < y);
}

int coll_stats_reduce(coll_ctx *c, const coll_stats *tiles, const int64_t *ids, size_t ntiles,
                      coll_stats *out) {
  if (!c || !out || (ntiles > 0 && (!tiles || !ids))) return COLL_EINVAL;
  coll_stats layout0;
  if (ntiles > 0) {
    layout0 = tiles[0];
    for (size_t i = 1; i < ntiles; i++)
      if (!same_layout(&tiles[0], &tiles[i]))
        return coll_fail(c, COLL_EINVAL, "tile %lld has a different histogram layout",
                         (long long)ids[i]);
  } else if (coll_stats_init(&layout0, out->nbins, out->hist_min, out->hist_max) != COLL_OK) {
    return coll_fail(c, COLL_EINVAL, "no tiles and no valid histogram layout in *out");
  }

  /* Order-free parts: count and bins (int64 sum), min and max. */
  int64_t ints[1 + COLL_STATS_MAX_BINS];
  double mm[2];
  coll_stats local;
  coll_stats_init(&local, 0, 0, 0);
  local.nbins = layout0.nbins;
  local.hist_min = layout0.hist_min;
  local.hist_max = layout0.hist_max;
  for (size_t i = 0; i < ntiles; i++) {
    local.count += tiles[i].count;
    if (tiles[i].min < local.min) local.min = tiles[i].min;
    if (tiles[i].max > local.max) local.max = tiles[i].max;
    for (int b = 0; b < local.nbins; b++) local.bins[b] += tiles[i].bins[b];
  }
  /* The layout must agree across ranks too: reduce nbins with MIN and MAX. */
  int64_t nb[2] = {local.nbins, -(int64_t)local.nbins};
  coll_op omin = coll_op_builtin(COLL_MIN), omax = coll_op_builtin(COLL_MAX),
          osum = coll_op_builtin(COLL_SUM);
  int rc = coll_allreduce(c, nb, nb, 2, COLL_INT64, &omin);
  if (rc) return rc;
  if (nb[0] != -nb[1]) return coll_fail(c, COLL_EINVAL, "ranks disagree on the histogram layout");
  ints[0] = local.count;
  for (int b = 0; b < local.nbins; b++) ints[1 + b] = local.bins[b];
  rc = coll_allreduce(c, ints, ints, 1 + (size_t)local.nbins, COLL_INT64, &osum);
  if (rc) return rc;
  rc = coll_allreduce(c, &local.min, &mm[0], 1, COLL_DOUBLE, &omin);
  if (!rc) rc = coll_allreduce(c, &local.max, &mm[1], 1, COLL_DOUBLE, &omax);
  if (rc) return rc;

  /* Order-dependent parts: gather (id, sum, sumsq) of every tile. */
  tile_sums *all = NULL;
  size_t nall = ntiles;
  tile_sums *mine = malloc((ntiles ? ntiles : 1) * sizeof *mine);
  if (!mine) return coll_fail(c, COLL_ENOMEM, "no memory for tile sums");
  for (size_t i = 0; i < ntiles; i++) {
    mine[i].id = ids[i];
    mine[i].sum = tiles[i].sum;
    mine[i].sumsq = tiles[i].sumsq;
  }
  if (c->size == 1) {
    all = mine;
  } else {
#ifdef TERRAFORT_HAVE_MPI
    int n = c->size;
    int *cnt = malloc(2 * (size_t)n * sizeof *cnt);
    if (!cnt) { free(mine); return coll_fail(c, COLL_ENOMEM, "no memory"); }
    int *disp = cnt + n;
    int me = (int)(ntiles * sizeof(tile_sums));
    if (ntiles > (size_t)(1 << 30) / sizeof(tile_sums)) {
      free(cnt); free(mine);
      return coll_fail(c, COLL_EINVAL, "too many tiles on one rank");
    }
    /* non-blocking, and bounded by the monitor as every libcoll wait */
    MPI_Request q;
    int rc = MPI_Iallgather(&me, 1, MPI_INT, cnt, 1, MPI_INT, c->comm, &q) == MPI_SUCCESS
                 ? coll_waitn(c, 1, &q)
                 : coll_fail(c, COLL_EMPI, "MPI_Iallgather of tile counts failed");
    if (rc) {
      /* given up (a rank lost): the request stays live on cnt, and the
       * process makes no MPI call again (coll_live_quiesce) */
      if (rc != COLL_ELOST && rc != COLL_ECANCELED) { free(cnt); free(mine); }
      return rc;
    }
    size_t tot = 0;
    for (int r = 0; r < n; r++) { disp[r] = (int)tot; tot += (size_t)cnt[r]; }
    if (tot > (size_t)1 << 30) {
      free(cnt); free(mine);
      return coll_fail(c, COLL_EINVAL, "too many tiles");
    }
    all = malloc(tot ? tot : 1);
    if (!all) { free(cnt); free(mine); return coll_fail(c, COLL_ENOMEM, "no memory"); }
    rc = MPI_Iallgatherv(mine, me, MPI_BYTE, all, cnt, disp, MPI_BYTE, c->comm, &q) == MPI_SUCCESS
             ? coll_waitn(c, 1, &q)
             : coll_fail(c, COLL_EMPI, "MPI_Iallgatherv of tile sums failed");
    if (rc) {
      /* given up: as above, on these buffers */
      if (rc != COLL_ELOST && rc != COLL_ECANCELED) { free(cnt); free(mine); free(all); }
      return rc;
    }
    nall = tot / sizeof(tile_sums);
    free(cnt);
    free(mine);
#else
    free(mine);
    return coll_fail(c, COLL_ENOTSUP, "built without MPI");
#endif
  }
  qsort(all, nall, sizeof *all, by_id);
  for (size_t i = 1; i < nall; i++)
    if (all[i].id == all[i - 1].id) {
      long long dup = (long long)all[i].id;
      free(all);
      return coll_fail(c, COLL_EINVAL, "tile id %lld given twice", dup);
    }

  coll_stats r;
  coll_stats_init(&r, 0, 0, 0);
  r.nbins = local.nbins;
  r.hist_min = local.hist_min;
  r.hist_max = local.hist_max;
  r.count = ints[0];
  for (int b = 0; b < r.nbins; b++) r.bins[b] = ints[1 + b];
  r.min = mm[0];
  r.max = mm[1];
  for (size_t i = 0; i < nall; i++) {
    r.sum += all[i].sum;
    r.sumsq += all[i].sumsq;
  }
  free(all);
  *out = r;
  return COLL_OK;
}
