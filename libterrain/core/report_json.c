/*
 * report_json.c - libft's and the AAP engine's reports as JSON members (see
 * report_json.h). Each report is a table of its fields, key and where the
 * value is, in the file's order: a field added to a struct is one row here.
 */
#include "report_json.h"

#include <stddef.h>

#include "aap.h"
#include "ft.h"

/* A field of a report struct: an int64_t count, or a double time in seconds. */
typedef struct {
  const char *key;
  size_t at;
  int seconds;
} field;

#define COUNT(type, f) {.key = #f, .at = offsetof(type, f)}
#define SECONDS(type, f) {.key = #f, .at = offsetof(type, f), .seconds = 1}

static int set_fields(tr_json *o, const void *s, const field *t, size_t n) {
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    const char *p = (const char *)s + t[i].at;
    rc |= tr_json_set(o, t[i].key, t[i].seconds ? tr_json_fixed(*(const double *)p, 6) : tr_json_int(*(const int64_t *)p));
  }
  return rc;
}

#define SET_FIELDS(o, s, t) set_fields(o, s, t, sizeof t / sizeof t[0])

static const field ft_report_fields[] = {
    COUNT(ft_report, blocks),        COUNT(ft_report, sub_blocks),           COUNT(ft_report, injected),
    COUNT(ft_report, detected),      COUNT(ft_report, corrected),            COUNT(ft_report, tolerated),
    COUNT(ft_report, fatal),         COUNT(ft_report, mismatches),           COUNT(ft_report, tolerated_sub_blocks),
    COUNT(ft_report, failed_sub_blocks), COUNT(ft_report, recomputes),       COUNT(ft_report, votes),
    COUNT(ft_report, timeouts),      COUNT(ft_report, redispatches),         SECONDS(ft_report, compute_s),
    SECONDS(ft_report, detect_s),    SECONDS(ft_report, recompute_s)};

int tr_json_ft_report(tr_json *o, const ft_report *r) { return SET_FIELDS(o, r, ft_report_fields); }

/* after "launches" and "idempotent" comes their share (no field of its own) */
static const field ft_track_head[] = {COUNT(ft_track_report, launches), COUNT(ft_track_report, idempotent)};
static const field ft_track_rest[] = {
    COUNT(ft_track_report, regions),          COUNT(ft_track_report, outside_writes),
    COUNT(ft_track_report, errors),           COUNT(ft_track_report, reruns),
    COUNT(ft_track_report, relaunch_sets),    COUNT(ft_track_report, relaunch_launches),
    COUNT(ft_track_report, relaunch_max),     COUNT(ft_track_report, searches_failed),
    COUNT(ft_track_report, checkpoints),      COUNT(ft_track_report, checkpoint_restores),
    COUNT(ft_track_report, checkpoint_launches), COUNT(ft_track_report, unrepaired),
    COUNT(ft_track_report, limit_aborts),     COUNT(ft_track_report, sampled),
    COUNT(ft_track_report, sample_mismatches), SECONDS(ft_track_report, replay_s)};

int tr_json_ft_track(tr_json *o, const ft_track_report *r) {
  const double share = r->launches ? (double)r->idempotent / (double)r->launches : 0.0;
  int rc = SET_FIELDS(o, r, ft_track_head); /* one statement each: the keys' order */
  rc |= tr_json_set(o, "idempotent_share", tr_json_fixed(share, 6));
  rc |= SET_FIELDS(o, r, ft_track_rest);
  return rc;
}

/* a worker's figures, and the same names for the sums (another order) */
static const field worker_fields[] = {
    COUNT(tr_aap_worker_stats, rounds),       SECONDS(tr_aap_worker_stats, busy_s),
    SECONDS(tr_aap_worker_stats, idle_s),     SECONDS(tr_aap_worker_stats, ds_s),
    COUNT(tr_aap_worker_stats, msgs_sent),    COUNT(tr_aap_worker_stats, msgs_recv),
    COUNT(tr_aap_worker_stats, batches_sent), COUNT(tr_aap_worker_stats, batches_recv),
    COUNT(tr_aap_worker_stats, work)};
static const field total_fields[] = {
    COUNT(tr_aap_worker_stats, rounds),       COUNT(tr_aap_worker_stats, work),
    COUNT(tr_aap_worker_stats, msgs_sent),    COUNT(tr_aap_worker_stats, msgs_recv),
    COUNT(tr_aap_worker_stats, batches_sent), COUNT(tr_aap_worker_stats, batches_recv),
    SECONDS(tr_aap_worker_stats, busy_s),     SECONDS(tr_aap_worker_stats, idle_s),
    SECONDS(tr_aap_worker_stats, ds_s)};

int tr_json_aap_stats(tr_json *o, const tr_aap_stats *s) {
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
  int rc = tr_json_set(o, "backend", tr_json_str(s->backend ? s->backend : "?"));
  rc |= tr_json_set(o, "schedule", tr_json_str(tr_aap_schedule_name(s->schedule)));
  rc |= tr_json_set(o, "makespan_s", tr_json_fixed(s->makespan_s, 6));
  rc |= tr_json_set(o, "waves", tr_json_int(s->waves));
  rc |= tr_json_set(o, "max_round", tr_json_int(s->max_round));
  tr_json *tot = tr_json_object(), *ws = tr_json_array();
  if (tot) rc |= SET_FIELDS(tot, &t, total_fields);
  rc |= tr_json_set(o, "totals", tot);
  for (int i = 0; ws && i < s->nworkers; i++) {
    tr_json *w = tr_json_object();
    rc |= tr_json_set(w, "worker", tr_json_int(i));
    if (w) rc |= SET_FIELDS(w, &s->w[i], worker_fields);
    rc |= tr_json_push(ws, w);
  }
  return rc | tr_json_set(o, "workers", ws);
}
