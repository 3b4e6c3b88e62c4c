/*
 * replay.c - repairing a launch whose output was found corrupt: the
 * relaunch-set search, checkpoints and the method's top loop (ft.h,
 * "idempotence tracking and replay"; state in tracker.h).
 *
 * An idempotent launch is run alone only while nothing has read or
 * overwritten its outputs; an error found later (its outputs consumed) goes
 * through the relaunch set, whose backward rule re-runs the consumers.
 *
 * The search works on the remembered records under the lock and yields the
 * set as sequence numbers; sorting them gives the run order, because a
 * launch recorded later can only read what earlier ones wrote (producer ->
 * consumer) and only overwrite what earlier ones read. The launches then run
 * outside the lock on private copies of their captured arguments, without
 * being recorded: replay never changes a version.
 *
 * Beyond the source's forward/backward rules, the set also takes the launch
 * that wrote the next version of every region it writes at an older one:
 * re-running a producer puts an old version back into memory, and the later
 * writers bring the region up to its latest contents again (for an in-place
 * chain they are already in the set; for an out-of-place overwrite they would
 * be missed).
 *
 * A checkpoint restore copies its regions back and runs forward every
 * remembered launch from the checkpoint on that reads or writes a region the
 * restore or an earlier re-run touched; the nearest checkpoint before the
 * launch whose forward run includes the launch is used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracker.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --------------------------------------------------------- relaunch set */

typedef struct {
  int64_t *seq;
  int n, cap;
} seq_list;

static int list_has(const seq_list *s, int64_t q) {
  for (int i = 0; i < s->n; i++)
    if (s->seq[i] == q) return 1;
  return 0;
}

/* 0 added or present, FT_ERR_NOMEM when full. */
static int list_add(seq_list *s, int64_t q) {
  if (list_has(s, q)) return 0;
  if (s->n == s->cap) return FT_ERR_NOMEM;
  s->seq[s->n++] = q;
  return 0;
}

static int cmp_seq(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The remembered launch that wrote (region, version), or -1. */
static int64_t writer_of(ft_tracker *t, uint64_t region, int64_t version) {
  for (int64_t q = t->next_seq - 1; q >= 0 && q >= t->next_seq - (int64_t)t->o.history; q--) {
    const ft_launch_rec *r = ft_rec_at(t, q);
    if (!r) break;
    for (int k = r->nin; k < r->nin + r->nout; k++)
      if (r->p[k].region == region && r->p[k].version == version) return q;
  }
  return -1;
}

/* Under the lock: 1 when launch r's outputs are still the latest versions
 * and no later launch has read them, so running r alone repairs them. */
static int unconsumed(ft_tracker *t, const ft_launch_rec *r) {
  for (int k = r->nin; k < r->nin + r->nout; k++) {
    const ft_param_rec *p = &r->p[k];
    if (p->version != ft_latest(t, p->region)) return 0;
    for (int64_t q = r->seq + 1; q < t->next_seq; q++) {
      const ft_launch_rec *c = ft_rec_at(t, q);
      if (!c) return 0;
      for (int j = 0; j < c->nin; j++)
        if (c->p[j].region == p->region && c->p[j].version == p->version) return 0;
    }
  }
  return 1;
}

/* Under the lock: the relaunch set of seq into s (unsorted). */
static int search(ft_tracker *t, int64_t seq, seq_list *s) {
  s->n = 0;
  if (!ft_rec_at(t, seq)) return FT_ERR_NOREPLAY;
  int rc = list_add(s, seq);
  for (int i = 0; i < s->n && !rc; i++) {
    const ft_launch_rec *r = ft_rec_at(t, s->seq[i]);
    if (!r) return FT_ERR_NOREPLAY;
    for (int k = 0; k < r->nin + r->nout; k++)
      if (!ft_entry_valid(t, r->p[k].region, r->p[k].version)) return FT_ERR_NOREPLAY;
    /* forward: producers of inputs that are no longer the latest */
    for (int k = 0; k < r->nin && !rc; k++) {
      const ft_param_rec *p = &r->p[k];
      if (p->version >= ft_latest(t, p->region)) continue;
      const int64_t w = writer_of(t, p->region, p->version);
      if (w < 0) return FT_ERR_NOREPLAY; /* written outside any AF, or forgotten */
      rc = list_add(s, w);
    }
    /* backward: readers of outputs that are no longer the latest, and the
     * writer of the next version */
    for (int k = r->nin; k < r->nin + r->nout && !rc; k++) {
      const ft_param_rec *p = &r->p[k];
      if (p->version >= ft_latest(t, p->region)) continue;
      for (int64_t q = r->seq + 1; q < t->next_seq && !rc; q++) {
        const ft_launch_rec *c = ft_rec_at(t, q);
        if (!c) return FT_ERR_NOREPLAY;
        for (int j = 0; j < c->nin; j++)
          if (c->p[j].region == p->region && c->p[j].version == p->version) rc = list_add(s, q);
      }
      const int64_t w = writer_of(t, p->region, p->version + 1);
      if (w < 0) return FT_ERR_NOREPLAY;
      if (!rc) rc = list_add(s, w);
    }
  }
  if (!rc) qsort(s->seq, (size_t)s->n, sizeof *s->seq, cmp_seq);
  return rc;
}

int ft_track_relaunch_set(ft_tracker *t, int64_t seq, int64_t *set, int cap, int *n) {
  if (!t || !set || cap < 1 || !n) return FT_ERR_INVAL;
  seq_list s = {set, 0, cap};
  pthread_mutex_lock(&t->lock);
  const int rc = search(t, seq, &s);
  pthread_mutex_unlock(&t->lock);
  *n = rc ? 0 : s.n;
  return rc;
}

/* ---------------------------------------------------------- checkpoints */

int ft_checkpoint(ft_tracker *t, const ft_range *regions, int n, int64_t *cp) {
  if (!t || !regions || n < 1 || n > FT_TRACK_MAX_PARAMS) return FT_ERR_INVAL;
  ft_cp_rec c;
  memset(&c, 0, sizeof c);
  int rc = FT_OK;
  pthread_mutex_lock(&t->lock);
  for (int k = 0; k < n && !rc; k++) {
    const uintptr_t a = (uintptr_t)regions[k].addr;
    const uint64_t id = a ? ft_resolve(t, a, regions[k].size, 1) : 0;
    if (!id) rc = FT_ERR_INVAL;
    else if (!(c.copy[k] = malloc(regions[k].size))) rc = FT_ERR_NOMEM;
    else {
      memcpy(c.copy[k], regions[k].addr, regions[k].size);
      c.region[k] = id;
      c.size[k] = regions[k].size;
      c.n = k + 1;
    }
  }
  if (!rc && t->ncp == t->capcp) {
    size_t capn = t->capcp ? 2 * t->capcp : 8;
    ft_cp_rec *r = realloc(t->cps, capn * sizeof *r);
    if (r) t->cps = r, t->capcp = capn;
    else rc = FT_ERR_NOMEM;
  }
  if (!rc) {
    c.id = t->next_cp++;
    c.seq_at = t->next_seq;
    t->cps[t->ncp++] = c;
    t->rep.checkpoints++;
    if (cp) *cp = c.id;
  } else {
    for (int k = 0; k < c.n; k++) free(c.copy[k]);
  }
  pthread_mutex_unlock(&t->lock);
  return rc;
}

void ft_checkpoint_drop(ft_tracker *t, int64_t cp) {
  if (!t) return;
  pthread_mutex_lock(&t->lock);
  for (size_t i = 0; i < t->ncp; i++) {
    if (t->cps[i].id != cp) continue;
    for (int k = 0; k < t->cps[i].n; k++) free(t->cps[i].copy[k]);
    t->cps[i] = t->cps[--t->ncp];
    break;
  }
  pthread_mutex_unlock(&t->lock);
}

static int has_region(const uint64_t *ids, int n, uint64_t id) {
  for (int i = 0; i < n; i++)
    if (ids[i] == id) return 1;
  return 0;
}

/* Under the lock: the launches checkpoint c runs forward, into s; returns 1
 * when they include seq and every one is remembered. */
static int forward_of(ft_tracker *t, const ft_cp_rec *c, int64_t seq, seq_list *s) {
  uint64_t touched[256];
  int nt = 0;
  s->n = 0;
  if (c->seq_at > seq || c->seq_at < t->next_seq - (int64_t)t->o.history) return 0;
  for (int k = 0; k < c->n; k++) {
    if (!t->regions[c->region[k] - 1].live) return 0;
    touched[nt++] = c->region[k];
  }
  for (int64_t q = c->seq_at; q < t->next_seq; q++) {
    const ft_launch_rec *r = ft_rec_at(t, q);
    if (!r) return 0;
    int hit = 0;
    for (int k = 0; k < r->nin + r->nout; k++) hit |= has_region(touched, nt, r->p[k].region);
    if (!hit) continue;
    if (list_add(s, q)) return 0;
    for (int k = r->nin; k < r->nin + r->nout; k++)
      if (!has_region(touched, nt, r->p[k].region)) {
        if (nt == (int)(sizeof touched / sizeof touched[0])) return 0;
        touched[nt++] = r->p[k].region;
      }
  }
  return list_has(s, seq);
}

/* ------------------------------------------------------------- top loop */

typedef struct {
  ft_launch_fn fn;
  size_t args_size;
  alignas(16) unsigned char args[FT_TRACK_ARGS_MAX];
} run_copy;

static int run_copies(run_copy *rc, int n) {
  for (int i = 0; i < n; i++) {
    const int st = rc[i].fn(rc[i].args);
    if (st) return st;
  }
  return 0;
}

int ft_track_error(ft_tracker *t, int64_t seq, ft_repair *out) {
  ft_repair rep = {FT_REPAIR_NONE, 0};
  if (out) *out = rep;
  if (!t) return FT_ERR_INVAL;
  const size_t cap = t->o.history;
  int64_t *buf = malloc(cap * sizeof *buf);
  if (!buf) return FT_ERR_NOMEM;
  seq_list s = {buf, 0, (int)(cap < 1u << 30 ? cap : 1u << 30)};
  run_copy *runs = NULL;
  const ft_cp_rec *cp = NULL;
  int rc = FT_OK;
  pthread_mutex_lock(&t->lock);
  t->rep.errors++;
  const ft_launch_rec *r = ft_rec_at(t, seq);
  if (t->rep.errors > t->o.max_errors) {
    t->rep.limit_aborts++;
    rc = FT_ERR_LIMIT;
  } else if (!r) {
    rc = FT_ERR_NOREPLAY;
  } else if (r->idempotent && unconsumed(t, r)) {
    s.seq[0] = seq;
    s.n = 1;
    rep.how = FT_REPAIR_RERUN;
  } else if (search(t, seq, &s) == FT_OK) {
    rep.how = FT_REPAIR_RELAUNCH;
  } else {
    t->rep.searches_failed++;
    rc = FT_ERR_NOREPLAY;
    /* the nearest checkpoint before the launch whose forward run covers it */
    const ft_cp_rec *best = NULL;
    for (size_t i = 0; i < t->ncp; i++)
      if (t->cps[i].seq_at <= seq && (!best || t->cps[i].seq_at > best->seq_at) && forward_of(t, &t->cps[i], seq, &s))
        best = &t->cps[i];
    if (best && forward_of(t, best, seq, &s)) {
      cp = best;
      rep.how = FT_REPAIR_CHECKPOINT;
      rc = FT_OK;
    }
  }
  if (!rc) {
    runs = malloc((size_t)s.n * sizeof *runs);
    if (!runs) rc = FT_ERR_NOMEM;
    for (int i = 0; i < s.n && runs; i++) {
      const ft_launch_rec *q = ft_rec_at(t, s.seq[i]);
      runs[i].fn = q->fn;
      runs[i].args_size = q->args_size;
      memcpy(runs[i].args, q->args, q->args_size);
    }
  }
  /* the restore happens under the lock: checkpoint copies are the
   * tracker's, and the regions belong to the repairing thread */
  if (!rc && cp)
    for (int k = 0; k < cp->n; k++) memcpy((void *)t->regions[cp->region[k] - 1].lo, cp->copy[k], cp->size[k]);
  if (rc && rc != FT_ERR_LIMIT) t->rep.unrepaired++;
  pthread_mutex_unlock(&t->lock);

  if (!rc) {
    const double t0 = now_s();
    rc = run_copies(runs, s.n);
    const double dt = now_s() - t0;
    rep.launches = s.n;
    pthread_mutex_lock(&t->lock);
    t->rep.replay_s += dt;
    if (rc) t->rep.unrepaired++;
    else if (rep.how == FT_REPAIR_RERUN) t->rep.reruns++;
    else if (rep.how == FT_REPAIR_RELAUNCH) {
      t->rep.relaunch_sets++;
      t->rep.relaunch_launches += s.n;
      if (s.n > t->rep.relaunch_max) t->rep.relaunch_max = s.n;
    } else {
      t->rep.checkpoint_restores++;
      t->rep.checkpoint_launches += s.n;
    }
    pthread_mutex_unlock(&t->lock);
  }
  free(runs);
  free(buf);
  if (out) *out = rep;
  return rc;
}
