/*
 * stats.c - per-tile statistics partials and their exact, order-free
 * combination through libcoll's timeout aggregation (see stats.h).
 */
#include "stats.h"
#include "stats_hist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll.h"
#include "coll_live.h"
#include "dist.h"
#include "inject.h"
#include "status.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

void tr_tile_stats_of(tr_tile_stats *ts, const void *cells, GDALDataType type, int bands, int64_t n,
                      int has_nodata, double nodata) {
  const int es = GDALGetDataTypeSizeBytes(type);
  for (int b = 0; b < bands; b++) {
    coll_stats s;
    coll_stats_init(&s, 0, 0, 0);
    if (type == GDT_Float32 && bands == 1) {
      coll_stats_add_float(&s, cells, (size_t)n, has_nodata, (float)nodata);
    } else {
      /* other types and bands: through doubles, a chunk at a time */
      double buf[1024];
      for (int64_t i = 0; i < n; i += 1024) {
        const int64_t k = n - i < 1024 ? n - i : 1024;
        GDALCopyWords64((const unsigned char *)cells + (size_t)(i * bands + b) * (size_t)es, type, es * bands, buf,
                        GDT_Float64, sizeof(double), k);
        coll_stats_add(&s, buf, (size_t)k, has_nodata, nodata);
      }
    }
    ts[b].count = (double)s.count;
    ts[b].sum = s.sum;
    ts[b].sumsq = s.sumsq;
    ts[b].min = s.min;
    ts[b].max = s.max;
    ts[b].exp = 0;
    const double m = fmax(fabs(s.min), fabs(s.max));
    if (s.count > 0 && isfinite(m) && m > 0x1p500) {
      /* the sums again over the valid values scaled into (-1, 1) */
      int e;
      frexp(m, &e);
      coll_stats z;
      coll_stats_init(&z, 0, 0, 0);
      double buf[1024];
      for (int64_t i = 0; i < n; i += 1024) {
        const int64_t k = n - i < 1024 ? n - i : 1024;
        GDALCopyWords64((const unsigned char *)cells + (size_t)(i * bands + b) * (size_t)es, type, es * bands, buf,
                        GDT_Float64, sizeof(double), k);
        int64_t nv = 0;
        for (int64_t j = 0; j < k; j++)
          if (!isnan(buf[j]) && !(has_nodata && buf[j] == nodata)) buf[nv++] = ldexp(buf[j], -e);
        coll_stats_add(&z, buf, (size_t)nv, 0, 0.0);
      }
      ts[b].sum = z.sum;
      ts[b].sumsq = z.sumsq;
      ts[b].exp = e;
    }
  }
}

/* A band's mean and standard deviation from sums scaled by 2^-exp. */
static double band_mean(const coll_stats *t, int e) { return ldexp(coll_stats_mean(t), e); }
static double band_stddev(const coll_stats *t, int e) { return ldexp(coll_stats_stddev(t), e); }

/* A libcoll failure as a status: a lost rank is TR_ERANK (named), a
 * cancel TR_EINTERRUPTED, anything else TR_ECOLL. */
int tr_stats_coll_fail(const tr_run_opts *run, int rc, const struct coll_ctx *ctx, tr_error *err) {
  if (rc == COLL_ECANCELED) return tr_fail(err, TR_EINTERRUPTED, "interrupted");
  if (rc == COLL_ELOST) {
    double ms = 0;
    int who = coll_live_lost(run->live, &ms);
    return tr_fail(err, TR_ERANK, "rank %d stopped answering (silent for more than %.0f ms: killed, stopped or hung)",
                   who, coll_live_timeout(run->live));
  }
  const char *m = ctx ? coll_errmsg(ctx) : "";
  return tr_fail(err, TR_ECOLL, "statistics: %s", m[0] ? m : coll_strerror(rc));
}

/* Ends a context this call made (the command's stays for the next run). */
static void ctx_done(coll_ctx *ctx, int own) {
  if (own) coll_ctx_destroy(ctx);
}

static double coll_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int coll_ctx_lost_rank(const tr_run_opts *run) { return coll_live_lost(run->live, NULL); }

/* Per-rank timings of the collective, gathered to rank 0 for the report. */
typedef struct {
  double waited_ms, release_ms;
  double wall_ms; /* from the rank's job start to its statistics being done */
  int interior, late_forwarded, late_direct;
} rank_timing;

/* The shortest %g form of v that reads back as v (no exponent below 1e17:
 * "50", not "5e+01"). */
static void shortest(char *buf, size_t n, double v) {
  const double a = fabs(v);
  int d0 = a >= 1 && a < 1e17 ? (int)floor(log10(a)) + 1 : 1;
  if (d0 < 1) d0 = 1;
  for (int d = d0; d <= 17; d++) {
    snprintf(buf, n, "%.*g", d, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* The statistics file (--stats-json): band 1's fields at the top, every
 * band's under "bands" when there are several, then the collective's
 * report. Numbers are %.17g (they read back as the same doubles), null when
 * not finite (JSON has no inf or nan: +-Inf output cells, or a sum that
 * overflowed); times are milliseconds with 3 decimals. */

/* "histogram":{...},"percentiles":{...} of one band into o (null when not
 * made). */
static void hist_fields(tr_json *o, const tr_run_opts *run, const tr_band_hist *h) {
  if (!h) return;
  if (run->stats) {
    tr_json *v = h->nbuckets ? tr_json_object() : tr_json_null(), *counts = h->nbuckets ? tr_json_array() : NULL;
    if (h->nbuckets) {
      tr_json_set(v, "min", tr_json_num(h->lo));
      tr_json_set(v, "max", tr_json_num(h->hi));
      tr_json_set(v, "buckets", tr_json_int(h->nbuckets));
      for (int k = 0; k < h->nbuckets; k++) tr_json_push(counts, tr_json_uint(h->bins[k]));
      tr_json_set(v, "counts", counts);
    }
    tr_json_set(o, "histogram", v);
  }
  if (run->npercentiles) {
    tr_json *v = h->pct ? tr_json_object() : tr_json_null();
    for (int k = 0; h->pct && k < run->npercentiles; k++) {
      char p[40];
      shortest(p, sizeof p, run->percentiles[k]);
      tr_json_set(v, p, tr_json_num(h->pct[k]));
    }
    tr_json_set(o, "percentiles", v);
  }
}

static void stats_fields(tr_json *o, const coll_stats *t, int e) {
  tr_json_set(o, "valid_count", tr_json_int(t->count));
  tr_json_set(o, "min", tr_json_num(t->count ? t->min : 0.0));
  tr_json_set(o, "max", tr_json_num(t->count ? t->max : 0.0));
  tr_json_set(o, "mean", tr_json_num(t->count ? band_mean(t, e) : 0.0));
  tr_json_set(o, "stddev", tr_json_num(t->count ? band_stddev(t, e) : 0.0));
}

static tr_json *stats_json(const tr_run_opts *run, const coll_stats *t, const int *e, const tr_band_hist *hist,
                           int bands, int64_t cells, const coll_ta_report *rep, const coll_counters *cc,
                           const rank_timing *per, int nranks) {
  tr_json *o = tr_json_object();
  stats_fields(o, &t[0], e[0]);
  tr_json_set(o, "cells", tr_json_int(cells));
  /* after the fields a report without them has (readers compare that prefix) */
  hist_fields(o, run, hist ? &hist[0] : NULL);
  if (bands > 1) {
    tr_json *all = tr_json_array();
    for (int b = 0; b < bands; b++) {
      tr_json *one = tr_json_object();
      tr_json_set(one, "band", tr_json_int(b + 1));
      stats_fields(one, &t[b], e[b]);
      hist_fields(one, run, hist ? &hist[b] : NULL);
      tr_json_push(all, one);
    }
    tr_json_set(o, "bands", all);
  }
  tr_json *c = tr_json_object(), *late = tr_json_array(), *ranks = tr_json_array();
  tr_json_set(c, "algorithm", tr_json_str(rep->algorithm ? rep->algorithm : "local"));
  tr_json_set(c, "ranks", tr_json_int(rep->nranks));
  tr_json_set(c, "tan_rank", tr_json_int(rep->tan_rank));
  tr_json_set(c, "arity", tr_json_int(rep->arity));
  for (int i = 0; i < rep->nlate && i < COLL_REPORT_MAX_LATE; i++) tr_json_push(late, tr_json_int(rep->late_ranks[i]));
  tr_json_set(c, "late_ranks", late);
  tr_json_set(c, "late_msgs_at_tan", tr_json_int(rep->late_msgs_at_tan));
  tr_json_set(c, "waited_ms", tr_json_fixed(rep->waited_ms, 3));
  /* rank 0's libcoll allreduce calls for the histogram and percentiles, and
   * how many of them took the pipelined recursive-halving path */
  tr_json_set(c, "allreduce_calls", tr_json_uint(cc->calls));
  tr_json_set(c, "halving_calls", tr_json_uint(cc->halving_calls));
  for (int r = 0; r < nranks; r++) {
    tr_json *one = tr_json_object();
    tr_json_set(one, "rank", tr_json_int(r));
    tr_json_set(one, "interior", tr_json_int(per[r].interior));
    tr_json_set(one, "waited_ms", tr_json_fixed(per[r].waited_ms, 3));
    tr_json_set(one, "release_ms", tr_json_fixed(per[r].release_ms, 3));
    tr_json_set(one, "wall_ms", tr_json_fixed(per[r].wall_ms, 3));
    tr_json_set(one, "late_forwarded", tr_json_int(per[r].late_forwarded));
    tr_json_set(one, "late_direct", tr_json_int(per[r].late_direct));
    tr_json_push(ranks, one);
  }
  tr_json_set(c, "per_rank", ranks);
  tr_json_set(o, "collective", c);
  return o;
}

int tr_stats_publish(const tr_run_opts *run, const tr_inject *inj, GDALDatasetH ds, FILE *json, int bands,
                     const tr_tile_stats *tiles, int64_t n, struct tr_stats_cells *cells, GDALDataType type,
                     double t_start, tr_error *err) {
  int st = TR_OK;
  coll_opts co;
  coll_opts_init(&co);
  co.inject.delay_rank = inj->delay_rank;
  co.inject.delay_ms = inj->delay_ms;
  co.live = run->live;
  co.cancel = run->cancelled;
  co.cancel_user = run->progress_user;
  /* The command's context when it has one (made at start-up, destroyed at
   * the end, so that no rank waits here for the others to leave it). */
  coll_ctx *ctx = run->coll;
  const int own = ctx == NULL;
  int rc = own ? coll_ctx_create_world(&ctx, &co) : coll_ctx_set_opts(ctx, &co);
  if (rc) return tr_stats_coll_fail(run, rc, NULL, err);

  const size_t len = (size_t)n * (size_t)bands * 6;
  double *sum = malloc(len * sizeof(double));
  if (!sum) {
    ctx_done(ctx, own);
    return tr_fail(err, TR_ENOMEM, "out of memory for statistics");
  }
  coll_ta_opts ta;
  coll_ta_opts_init(&ta);
  if (run->coll_timeout_ms > 0) ta.threshold_ms = run->coll_timeout_ms;
  /* A reduce to the writer (rank 0: the root and the TAN), by default over a
   * one-level tree: every other rank is a leaf that sends its partials and
   * goes on; only the writer waits, and only for the statistics. With
   * --coll-arity K the tree is K-ary: an interior rank waits for its
   * children up to its level's threshold from the first arrival, forwards a
   * partial naming the late ones and goes on; their data goes to the
   * writer when it comes. A late rank that is alive is waited for by the
   * writer (the liveness monitor ends the wait for a dead one, so the TAN's
   * own deadline is only the fallback without it). */
  const int nranks = tr_dist_size();
  ta.arity = nranks > 2 ? nranks - 1 : 2;
  if (run->coll_arity >= 2 && run->coll_arity < ta.arity) ta.arity = run->coll_arity;
  ta.tan_policy = COLL_TAN_ROOT;
  ta.root_only = 1;
  if (coll_live_lost(run->live, NULL) == -1 && run->live) ta.deadline_ms = COLL_DEADLINE_MONITORED_MS;
  coll_ta_report rep;
  memset(&rep, 0, sizeof rep);
  coll_op add = coll_op_builtin(COLL_SUM);
  rc = coll_timeout_reduce(ctx, tiles, sum, len, COLL_DOUBLE, &add, &ta, &rep);
  if (rc) {
    st = tr_stats_coll_fail(run, rc, ctx, err);
    free(sum);
    ctx_done(ctx, own);
    return st;
  }
  /* Merge the exact per-tile partials in tile order, band by band, their
   * sums brought to the band's largest scale first (stats.h). */
  coll_stats *total = calloc((size_t)bands, sizeof *total);
  int *texp = calloc((size_t)bands, sizeof *texp);
  if (!total || !texp) {
    free(total);
    free(texp);
    free(sum);
    ctx_done(ctx, own);
    return tr_fail(err, TR_ENOMEM, "out of memory for statistics");
  }
  for (int b = 0; b < bands; b++) {
    coll_stats_init(&total[b], 0, 0, 0);
    for (int64_t i = 0; ds && i < n; i++) {
      const double *p = sum + 6 * (i * bands + b);
      if (p[0] != 0 && (int)p[5] > texp[b]) texp[b] = (int)p[5];
    }
    for (int64_t i = 0; ds && i < n; i++) {
      const double *p = sum + 6 * (i * bands + b);
      if (p[0] == 0) continue;
      coll_stats t;
      coll_stats_init(&t, 0, 0, 0);
      const int d = (int)p[5] - texp[b];
      t.count = (int64_t)p[0];
      t.sum = ldexp(p[1], d);
      t.sumsq = ldexp(p[2], 2 * d);
      t.min = p[3];
      t.max = p[4];
      coll_stats_merge(&total[b], &t);
    }
  }
  free(sum);

  /* Histograms and percentiles: allreduces on every rank (stats_hist.h),
   * without the injected delay (that is for the aggregation above). */
  tr_band_hist *hist = NULL;
  coll_counters cc;
  memset(&cc, 0, sizeof cc);
  if (tr_stats_cells_wanted(run)) {
    hist = calloc((size_t)bands, sizeof *hist);
    co.inject.delay_rank = -1;
    co.inject.delay_mask = 0;
    co.inject.delay_ms = 0;
    coll_ctx_set_opts(ctx, &co);
    coll_counters c0;
    coll_counters_get(ctx, &c0);
    st = hist ? tr_stats_hist_run(run, ctx, cells, type, tiles, n, bands, hist, err)
              : tr_fail(err, TR_ENOMEM, "out of memory for statistics");
    coll_counters_get(ctx, &cc);
    cc.calls -= c0.calls;
    cc.halving_calls -= c0.halving_calls;
  }

  rank_timing mine = {.waited_ms = rep.waited_ms,
                      .release_ms = rep.release_ms,
                      .wall_ms = (coll_now_s() - t_start) * 1e3,
                      .interior = rep.interior,
                      .late_forwarded = rep.late_forwarded,
                      .late_direct = rep.late_direct};
  rank_timing *per = calloc((size_t)nranks, sizeof *per);
  if (!per) {
    free(total);
    free(texp);
    tr_band_hist_free(hist, bands);
    free(hist);
    ctx_done(ctx, own);
    return tr_fail(err, TR_ENOMEM, "out of memory for statistics");
  }
  per[0] = mine;
#ifdef TERRAFORT_HAVE_MPI
  /* (not after a loss or a cancel: this rank has stopped talking) */
  if (nranks > 1 && st != TR_ERANK && st != TR_EINTERRUPTED) {
    MPI_Request q;
    MPI_Igather(&mine, sizeof mine, MPI_BYTE, per, sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD, &q);
    const int s3 = tr_dist_wait(run, 1, &q, st ? NULL : err);
    if (!st) st = s3;
  }
#endif
  ctx_done(ctx, own);
  if (!st && coll_ctx_lost_rank(run) != -1) st = tr_stats_coll_fail(run, COLL_ELOST, NULL, err);

  if (ds && !st) {
    int64_t cells = (int64_t)GDALGetRasterXSize(ds) * GDALGetRasterYSize(ds);
    for (int b = 0; run->stats && b < bands; b++) {
      if (total[b].count == 0) continue;
      GDALRasterBandH band = GDALGetRasterBand(ds, b + 1);
      GDALSetRasterStatistics(band, total[b].min, total[b].max, band_mean(&total[b], texp[b]),
                              band_stddev(&total[b], texp[b]));
      char pct[64];
      snprintf(pct, sizeof pct, "%.17g", 100.0 * (double)total[b].count / (double)cells);
      GDALSetMetadataItem(band, "STATISTICS_VALID_PERCENT", pct, NULL);
      const tr_band_hist *h = hist ? &hist[b] : NULL;
      /* GTiff keeps it in OUTPUT.aux.xml (PAM), where gdalinfo -hist reads it */
      if (h && h->nbuckets &&
          GDALSetDefaultHistogramEx(band, h->lo, h->hi, h->nbuckets, (GUIntBig *)h->bins) != CE_None)
        st = tr_fail(err, TR_EOUTPUT, "cannot store the histogram of band %d", b + 1);
      for (int k = 0; h && h->pct && k < run->npercentiles; k++) {
        char key[64], p[40], v[40];
        shortest(p, sizeof p, run->percentiles[k]);
        snprintf(key, sizeof key, "STATISTICS_PERCENTILE_%s", p);
        shortest(v, sizeof v, h->pct[k]);
        GDALSetMetadataItem(band, key, v, NULL);
      }
    }
    if (json && !st) {
      /* a write that fails is the side file's to report (io/side_file.h) */
      tr_json *o = stats_json(run, total, texp, hist, bands, cells, &rep, &cc, per, nranks);
      char *text = tr_json_text(o);
      tr_json_free(o);
      if (!text) st = tr_fail(err, TR_ENOMEM, "statistics file: out of memory");
      else fprintf(json, "%s\n", text);
      free(text);
    }
  }
  free(total);
  free(texp);
  free(per);
  tr_band_hist_free(hist, bands);
  free(hist);
  return st;
}
