/*
 * stats.c - per-tile statistics partials and their exact, order-free
 * combination through libcoll's timeout aggregation (see stats.h).
 */
#include "stats.h"

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
static int coll_status(const tr_run_opts *run, int rc, const coll_ctx *ctx, tr_error *err) {
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

static void write_json(FILE *f, const coll_stats *t, const int *e, int bands, int64_t cells, const coll_ta_report *rep,
                       const rank_timing *per, int nranks) {
  fprintf(f, "{");
  stats_fields(f, &t[0], e[0]);
  fprintf(f, ",\"cells\":%lld,", (long long)cells);
  if (bands > 1) {
    fprintf(f, "\"bands\":[");
    for (int b = 0; b < bands; b++) {
      fprintf(f, "%s{\"band\":%d,", b ? "," : "", b + 1);
      stats_fields(f, &t[b], e[b]);
      fprintf(f, "}");
    }
    fprintf(f, "],");
  }
  fprintf(f, "\"collective\":{\"algorithm\":\"%s\",\"ranks\":%d,\"tan_rank\":%d,\"arity\":%d,\"late_ranks\":[",
          rep->algorithm ? rep->algorithm : "local", rep->nranks, rep->tan_rank, rep->arity);
  for (int i = 0; i < rep->nlate && i < COLL_REPORT_MAX_LATE; i++) fprintf(f, "%s%d", i ? "," : "", rep->late_ranks[i]);
  fprintf(f, "],\"late_msgs_at_tan\":%d,\"waited_ms\":%.3f,\"per_rank\":[", rep->late_msgs_at_tan, rep->waited_ms);
  for (int r = 0; r < nranks; r++)
    fprintf(f,
            "%s{\"rank\":%d,\"interior\":%d,\"waited_ms\":%.3f,\"release_ms\":%.3f,\"wall_ms\":%.3f,"
            "\"late_forwarded\":%d}",
            r ? "," : "", r, per[r].interior, per[r].waited_ms, per[r].release_ms, per[r].wall_ms, per[r].late_forwarded);
  fprintf(f, "]}}\n");
}

int tr_stats_publish(const tr_run_opts *run, const tr_inject *inj, GDALDatasetH ds, int bands, const tr_tile_stats *tiles,
                     int64_t n, double t_start, tr_error *err) {
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
  if (rc) return coll_status(run, rc, NULL, err);

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
    st = coll_status(run, rc, ctx, err);
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

  rank_timing mine = {rep.waited_ms, rep.release_ms, (coll_now_s() - t_start) * 1e3, rep.interior, rep.late_forwarded};
  rank_timing *per = calloc((size_t)nranks, sizeof *per);
  if (!per) {
    free(total);
    free(texp);
    ctx_done(ctx, own);
    return tr_fail(err, TR_ENOMEM, "out of memory for statistics");
  }
  per[0] = mine;
#ifdef TERRAFORT_HAVE_MPI
  if (nranks > 1) {
    MPI_Request q;
    MPI_Igather(&mine, sizeof mine, MPI_BYTE, per, sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD, &q);
    st = tr_dist_wait(run, 1, &q, err);
  }
#endif
  ctx_done(ctx, own);
  if (!st && coll_ctx_lost_rank(run) != -1) st = coll_status(run, COLL_ELOST, NULL, err);

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
    }
    if (run->stats_json) {
      FILE *f = fopen(run->stats_json, "w");
      if (!f) st = tr_fail(err, TR_EOUTPUT, "cannot write statistics file '%s'", run->stats_json);
      else {
        write_json(f, total, texp, bands, cells, &rep, per, nranks);
        if (fclose(f) != 0) st = tr_fail(err, TR_EOUTPUT, "cannot write statistics file '%s'", run->stats_json);
      }
    }
  }
  free(total);
  free(texp);
  free(per);
  return st;
}
