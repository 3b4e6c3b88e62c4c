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
  int interior, late_forwarded;
} rank_timing;

/* A JSON number, or null where the value is not finite (JSON has no
 * inf or nan: +-Inf output cells, or a sum that overflowed). */
static void json_num(FILE *f, const char *key, double v) {
  if (isfinite(v)) fprintf(f, "\"%s\":%.17g", key, v);
  else fprintf(f, "\"%s\":null", key);
}

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

/* ,"histogram":{...},"percentiles":{...} of one band (null when not made). */
static void hist_fields(FILE *f, const tr_run_opts *run, const tr_band_hist *h) {
  if (!h) return;
  if (run->stats) {
    if (!h->nbuckets) fprintf(f, ",\"histogram\":null");
    else {
      fprintf(f, ",\"histogram\":{");
      json_num(f, "min", h->lo);
      fputc(',', f);
      json_num(f, "max", h->hi);
      fprintf(f, ",\"buckets\":%d,\"counts\":[", h->nbuckets);
      for (int k = 0; k < h->nbuckets; k++) fprintf(f, "%s%llu", k ? "," : "", (unsigned long long)h->bins[k]);
      fprintf(f, "]}");
    }
  }
  if (run->npercentiles) {
    if (!h->pct) fprintf(f, ",\"percentiles\":null");
    else {
      fprintf(f, ",\"percentiles\":{");
      for (int k = 0; k < run->npercentiles; k++) {
        char p[40];
        shortest(p, sizeof p, run->percentiles[k]);
        char key[64];
        snprintf(key, sizeof key, "%s", p);
        fprintf(f, "%s", k ? "," : "");
        json_num(f, key, h->pct[k]);
      }
      fprintf(f, "}");
    }
  }
}

static void stats_fields(FILE *f, const coll_stats *t, int e) {
  fprintf(f, "\"valid_count\":%lld,", (long long)t->count);
  json_num(f, "min", t->count ? t->min : 0.0);
  fputc(',', f);
  json_num(f, "max", t->count ? t->max : 0.0);
  fputc(',', f);
  json_num(f, "mean", t->count ? band_mean(t, e) : 0.0);
  fputc(',', f);
  json_num(f, "stddev", t->count ? band_stddev(t, e) : 0.0);
}

static void write_json(FILE *f, const tr_run_opts *run, const coll_stats *t, const int *e, const tr_band_hist *hist,
                       int bands, int64_t cells, const coll_ta_report *rep, const coll_counters *cc,
                       const rank_timing *per, int nranks) {
  fprintf(f, "{");
  stats_fields(f, &t[0], e[0]);
  fprintf(f, ",\"cells\":%lld", (long long)cells);
  /* after the fields a report without them has (readers compare that prefix) */
  hist_fields(f, run, hist ? &hist[0] : NULL);
  fputc(',', f);
  if (bands > 1) {
    fprintf(f, "\"bands\":[");
    for (int b = 0; b < bands; b++) {
      fprintf(f, "%s{\"band\":%d,", b ? "," : "", b + 1);
      stats_fields(f, &t[b], e[b]);
      hist_fields(f, run, hist ? &hist[b] : NULL);
      fprintf(f, "}");
    }
    fprintf(f, "],");
  }
  fprintf(f, "\"collective\":{\"algorithm\":\"%s\",\"ranks\":%d,\"tan_rank\":%d,\"arity\":%d,\"late_ranks\":[",
          rep->algorithm ? rep->algorithm : "local", rep->nranks, rep->tan_rank, rep->arity);
  for (int i = 0; i < rep->nlate && i < COLL_REPORT_MAX_LATE; i++) fprintf(f, "%s%d", i ? "," : "", rep->late_ranks[i]);
  fprintf(f, "],\"late_msgs_at_tan\":%d,\"waited_ms\":%.3f,", rep->late_msgs_at_tan, rep->waited_ms);
  /* rank 0's libcoll allreduce calls for the histogram and percentiles, and
   * how many of them took the pipelined recursive-halving path */
  fprintf(f, "\"allreduce_calls\":%llu,\"halving_calls\":%llu,\"per_rank\":[", (unsigned long long)cc->calls,
          (unsigned long long)cc->halving_calls);
  for (int r = 0; r < nranks; r++)
    fprintf(f,
            "%s{\"rank\":%d,\"interior\":%d,\"waited_ms\":%.3f,\"release_ms\":%.3f,\"wall_ms\":%.3f,"
            "\"late_forwarded\":%d}",
            r ? "," : "", r, per[r].interior, per[r].waited_ms, per[r].release_ms, per[r].wall_ms, per[r].late_forwarded);
  fprintf(f, "]}}\n");
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
  /* A reduce to the writer (rank 0: the root and the TAN) over a one-level
   * tree: every other rank is a leaf that sends its partials and goes on;
   * only the writer waits, and only for the statistics. A late rank that is
   * alive is waited for (the liveness monitor ends the wait for a dead one,
   * so the TAN's own deadline is only the fallback without it). */
  const int nranks = tr_dist_size();
  ta.arity = nranks > 2 ? nranks - 1 : 2;
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

  rank_timing mine = {rep.waited_ms, rep.release_ms, (coll_now_s() - t_start) * 1e3, rep.interior, rep.late_forwarded};
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
    if (json) write_json(json, run, total, texp, hist, bands, cells, &rep, &cc, per, nranks);
  }
  free(total);
  free(texp);
  free(per);
  tr_band_hist_free(hist, bands);
  free(hist);
  return st;
}
