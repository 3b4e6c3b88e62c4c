/*
 * stats.c - per-tile statistics partials and their exact, order-free
 * combination through libcoll's timeout aggregation (see stats.h).
 */
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "dist.h"
#include "inject.h"
#include "raster.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

void tr_tile_stats_of(tr_tile_stats *ts, const float *cells, int64_t n, int has_nodata, float nodata) {
  coll_stats s;
  coll_stats_init(&s, 0, 0, 0);
  coll_stats_add_float(&s, cells, (size_t)n, has_nodata, nodata);
  ts->count = (double)s.count;
  ts->sum = s.sum;
  ts->sumsq = s.sumsq;
  ts->min = s.min;
  ts->max = s.max;
}

/* Per-rank timings of the collective, gathered to rank 0 for the report. */
typedef struct {
  double waited_ms, release_ms;
  int interior, late_forwarded;
} rank_timing;

static void write_json(FILE *f, const coll_stats *t, int64_t cells, const coll_ta_report *rep,
                       const rank_timing *per, int nranks) {
  fprintf(f, "{\"valid_count\":%lld,\"cells\":%lld,\"min\":%.17g,\"max\":%.17g,\"mean\":%.17g,\"stddev\":%.17g,",
          (long long)t->count, (long long)cells, t->count ? t->min : 0.0, t->count ? t->max : 0.0,
          t->count ? coll_stats_mean(t) : 0.0, t->count ? coll_stats_stddev(t) : 0.0);
  fprintf(f, "\"collective\":{\"algorithm\":\"%s\",\"ranks\":%d,\"tan_rank\":%d,\"arity\":%d,\"late_ranks\":[",
          rep->algorithm ? rep->algorithm : "local", rep->nranks, rep->tan_rank, rep->arity);
  for (int i = 0; i < rep->nlate && i < COLL_REPORT_MAX_LATE; i++) fprintf(f, "%s%d", i ? "," : "", rep->late_ranks[i]);
  fprintf(f, "],\"late_msgs_at_tan\":%d,\"waited_ms\":%.3f,\"per_rank\":[", rep->late_msgs_at_tan, rep->waited_ms);
  for (int r = 0; r < nranks; r++)
    fprintf(f, "%s{\"rank\":%d,\"interior\":%d,\"waited_ms\":%.3f,\"release_ms\":%.3f,\"late_forwarded\":%d}",
            r ? "," : "", r, per[r].interior, per[r].waited_ms, per[r].release_ms, per[r].late_forwarded);
  fprintf(f, "]}}\n");
}

int tr_stats_publish(const tr_run_opts *run, GDALRasterBandH band, const tr_tile_stats *tiles, int64_t n,
                     tr_error *err) {
  tr_inject inj;
  int st = tr_inject_parse(run->inject, &inj, err);
  if (st) return st;
  coll_opts co;
  coll_opts_init(&co);
  co.inject.delay_rank = inj.delay_rank;
  co.inject.delay_ms = inj.delay_ms;
  coll_ctx *ctx = NULL;
  int rc = coll_ctx_create_world(&ctx, &co);
  if (rc) return tr_fail(err, TR_ECOLL, "statistics: %s", coll_strerror(rc));

  const size_t len = (size_t)n * 5;
  double *sum = malloc(len * sizeof(double));
  if (!sum) {
    coll_ctx_destroy(ctx);
    return tr_fail(err, TR_ENOMEM, "out of memory for statistics");
  }
  coll_ta_opts ta;
  coll_ta_opts_init(&ta);
  if (run->coll_timeout_ms > 0) ta.threshold_ms = run->coll_timeout_ms;
  coll_ta_report rep;
  memset(&rep, 0, sizeof rep);
  coll_op add = coll_op_builtin(COLL_SUM);
  rc = coll_timeout_reduce(ctx, tiles, sum, len, COLL_DOUBLE, &add, &ta, &rep);
  if (rc) {
    st = tr_fail(err, TR_ECOLL, "statistics: %s", coll_errmsg(ctx)[0] ? coll_errmsg(ctx) : coll_strerror(rc));
    free(sum);
    coll_ctx_destroy(ctx);
    return st;
  }
  /* Merge the exact per-tile partials in tile order. */
  coll_stats total;
  coll_stats_init(&total, 0, 0, 0);
  for (int64_t i = 0; i < n; i++) {
    const double *p = sum + 5 * i;
    if (p[0] == 0) continue;
    coll_stats t;
    coll_stats_init(&t, 0, 0, 0);
    t.count = (int64_t)p[0];
    t.sum = p[1];
    t.sumsq = p[2];
    t.min = p[3];
    t.max = p[4];
    coll_stats_merge(&total, &t);
  }
  free(sum);

  int nranks = tr_dist_size();
  rank_timing mine = {rep.waited_ms, rep.release_ms, rep.interior, rep.late_forwarded};
  rank_timing *per = calloc((size_t)nranks, sizeof *per);
  if (!per) {
    coll_ctx_destroy(ctx);
    return tr_fail(err, TR_ENOMEM, "out of memory for statistics");
  }
#ifdef TERRAFORT_HAVE_MPI
  if (nranks > 1)
    MPI_Gather(&mine, sizeof mine, MPI_BYTE, per, sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);
  else
    per[0] = mine;
#else
  per[0] = mine;
#endif
  coll_ctx_destroy(ctx);

  if (band) {
    int64_t cells = (int64_t)GDALGetRasterBandXSize(band) * GDALGetRasterBandYSize(band);
    if (run->stats && total.count > 0) {
      GDALSetRasterStatistics(band, total.min, total.max, coll_stats_mean(&total), coll_stats_stddev(&total));
      char pct[64];
      snprintf(pct, sizeof pct, "%.17g", 100.0 * (double)total.count / (double)cells);
      GDALSetMetadataItem(band, "STATISTICS_VALID_PERCENT", pct, NULL);
    }
    if (run->stats_json) {
      FILE *f = fopen(run->stats_json, "w");
      if (!f) st = tr_fail(err, TR_EOUTPUT, "cannot write statistics file '%s'", run->stats_json);
      else {
        write_json(f, &total, cells, &rep, per, nranks);
        if (fclose(f) != 0) st = tr_fail(err, TR_EOUTPUT, "cannot write statistics file '%s'", run->stats_json);
      }
    }
  }
  free(per);
  return st;
}
