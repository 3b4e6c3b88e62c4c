/*
 * stats.c - per-worker statistics of an AAP run, written as one JSON object:
 *   {"backend":..,"schedule":..,"makespan_s":..,"waves":..,"max_round":..,
 *    "totals":{rounds, work, msgs_sent, msgs_recv, ...},
 *    "workers":[{"worker":i,"rounds":..,"busy_s":..,"idle_s":..,"ds_s":..,
 *                "msgs_sent":..,"msgs_recv":..,"batches_sent":..,"batches_recv":..,
 *                "work":..}, ...]}
 * A worker is a thread (threads back-end), a simulated worker, or an MPI rank.
 */
#include "aap_internal.h"

#include <stdlib.h>

int tr_aap_stats_json(const tr_aap_stats *s, FILE *f) {
  tr_aap_worker_stats t = {0};
  for (int i = 0; i < s->nworkers; i++) {
    t.rounds += s->w[i].rounds;
    t.work += s->w[i].work;
    t.msgs_sent += s->w[i].msgs_sent;
    t.msgs_recv += s->w[i].msgs_recv;
    t.batches_sent += s->w[i].batches_sent;
    t.batches_recv += s->w[i].batches_recv;
    t.idle_s += s->w[i].idle_s;
    t.ds_s += s->w[i].ds_s;
    t.busy_s += s->w[i].busy_s;
  }
  fprintf(f,
          "{\"backend\":\"%s\",\"schedule\":\"%s\",\"makespan_s\":%.6f,\"waves\":%lld,"
          "\"max_round\":%lld,\"totals\":{\"rounds\":%lld,\"work\":%lld,\"msgs_sent\":%lld,"
          "\"msgs_recv\":%lld,\"batches_sent\":%lld,\"batches_recv\":%lld,\"busy_s\":%.6f,"
          "\"idle_s\":%.6f,\"ds_s\":%.6f},\"workers\":[",
          s->backend ? s->backend : "?", tr_aap_schedule_name(s->schedule), s->makespan_s,
          (long long)s->waves, (long long)s->max_round, (long long)t.rounds,
          (long long)t.work, (long long)t.msgs_sent, (long long)t.msgs_recv,
          (long long)t.batches_sent, (long long)t.batches_recv, t.busy_s, t.idle_s, t.ds_s);
  for (int i = 0; i < s->nworkers; i++) {
    const tr_aap_worker_stats *w = &s->w[i];
    fprintf(f,
            "%s{\"worker\":%d,\"rounds\":%lld,\"busy_s\":%.6f,\"idle_s\":%.6f,\"ds_s\":%.6f,"
            "\"msgs_sent\":%lld,\"msgs_recv\":%lld,\"batches_sent\":%lld,"
            "\"batches_recv\":%lld,\"work\":%lld}",
            i ? "," : "", i, (long long)w->rounds, w->busy_s, w->idle_s, w->ds_s,
            (long long)w->msgs_sent, (long long)w->msgs_recv, (long long)w->batches_sent,
            (long long)w->batches_recv, (long long)w->work);
  }
  fprintf(f, "]}\n");
  return ferror(f) ? -1 : 0;
}

void tr_aap_stats_free(tr_aap_stats *s) {
  if (!s) return;
  free(s->w);
  s->w = NULL;
  s->nworkers = 0;
}
