/*
 * tracker.c - regions, version tables and launch records of the idempotence
 * tracker (ft.h, "idempotence tracking and replay"; data structures in
 * tracker.h).
 *
 * A launch is recorded before it runs: its ranges are resolved to regions,
 * its inputs take the regions' latest versions and each region it writes
 * moves one version up (once, however many of its ranges lie in it), so an
 * in-place launch reads v and writes v + 1. The record keeps the function
 * and a copy of its arguments; the function then runs outside the lock on a
 * copy of those arguments of its own, so a slot reused meanwhile does not
 * matter. The cost per launch is one lock, a few binary searches and a copy
 * of at most FT_TRACK_ARGS_MAX bytes: nothing that grows with the data.
 */
#include <stdlib.h>
#include <string.h>

#include "tracker.h"

void ft_tracker_opts_init(ft_tracker_opts *o) {
  memset(o, 0, sizeof *o);
  o->history = 4096;
  o->max_errors = FT_MAX_ERRORS_DEFAULT;
}

int ft_tracker_create(const ft_tracker_opts *o, ft_tracker **out) {
  if (!out) return FT_ERR_INVAL;
  *out = NULL;
  ft_tracker_opts d;
  ft_tracker_opts_init(&d);
  if (o) d = *o;
  if (d.history < 1 || d.max_errors < 0) return FT_ERR_INVAL;
  ft_tracker *t = calloc(1, sizeof *t);
  if (!t) return FT_ERR_NOMEM;
  t->o = d;
  t->ring = malloc(d.history * sizeof *t->ring);
  if (!t->ring || pthread_mutex_init(&t->lock, NULL) != 0) {
    free(t->ring);
    free(t);
    return FT_ERR_NOMEM;
  }
  for (size_t i = 0; i < d.history; i++) t->ring[i].seq = -1;
  *out = t;
  return FT_OK;
}

void ft_tracker_destroy(ft_tracker *t) {
  if (!t) return;
  for (size_t i = 0; i < t->ncp; i++)
    for (int k = 0; k < t->cps[i].n; k++) free(t->cps[i].copy[k]);
  free(t->cps);
  free(t->ring);
  free(t->regions);
  free(t->live);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

/* ------------------------------------------------------------ regions */

/* Index in live[] of the first region whose start is > a. */
static size_t live_upper(const ft_tracker *t, uintptr_t a) {
  size_t lo = 0, hi = t->nlive;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (t->regions[t->live[mid] - 1].lo <= a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

uint64_t ft_resolve(const ft_tracker *t, uintptr_t a, size_t size, int whole) {
  size_t i = live_upper(t, a);
  if (i == 0) return 0;
  const uint64_t id = t->live[i - 1];
  const ft_region_rec *r = &t->regions[id - 1];
  if (whole) return a == r->lo && a + size == r->hi ? id : 0;
  return a >= r->lo && a + size <= r->hi && a < r->hi ? id : 0;
}

static uint64_t resolve(const ft_tracker *t, uintptr_t a, size_t size) { return ft_resolve(t, a, size, 0); }

int64_t ft_latest(const ft_tracker *t, uint64_t region) { return t->regions[region - 1].version; }

int ft_entry_valid(const ft_tracker *t, uint64_t region, int64_t version) {
  const ft_region_rec *r = &t->regions[region - 1];
  return r->live && version >= r->invalid_below;
}

int ft_region_add(ft_tracker *t, const void *addr, size_t size, uint64_t *id) {
  if (!t || !addr || !size) return FT_ERR_INVAL;
  const uintptr_t lo = (uintptr_t)addr, hi = lo + size;
  int rc = FT_OK;
  pthread_mutex_lock(&t->lock);
  const size_t i = live_upper(t, lo);
  if ((i > 0 && t->regions[t->live[i - 1] - 1].hi > lo) || (i < t->nlive && t->regions[t->live[i] - 1].lo < hi)) {
    rc = FT_ERR_INVAL; /* overlaps a live region */
  } else {
    if (t->nregions == t->capregions) {
      size_t cap = t->capregions ? 2 * t->capregions : 16;
      ft_region_rec *r = realloc(t->regions, cap * sizeof *r);
      if (r) t->regions = r, t->capregions = cap;
    }
    if (t->nlive == t->caplive) {
      size_t cap = t->caplive ? 2 * t->caplive : 16;
      uint64_t *l = realloc(t->live, cap * sizeof *l);
      if (l) t->live = l, t->caplive = cap;
    }
    if (t->nregions == t->capregions || t->nlive == t->caplive) {
      rc = FT_ERR_NOMEM;
    } else {
      t->regions[t->nregions] = (ft_region_rec){lo, hi, 0, 0, 1};
      const uint64_t nid = ++t->nregions;
      memmove(t->live + i + 1, t->live + i, (t->nlive - i) * sizeof *t->live);
      t->live[i] = nid;
      t->nlive++;
      t->rep.regions++;
      if (id) *id = nid;
    }
  }
  pthread_mutex_unlock(&t->lock);
  return rc;
}

int ft_region_remove(ft_tracker *t, const void *addr) {
  if (!t) return FT_ERR_INVAL;
  int rc = FT_ERR_INVAL;
  pthread_mutex_lock(&t->lock);
  const uint64_t id = resolve(t, (uintptr_t)addr, 1);
  if (id) {
    t->regions[id - 1].live = 0;
    size_t i = live_upper(t, (uintptr_t)addr) - 1;
    memmove(t->live + i, t->live + i + 1, (t->nlive - i - 1) * sizeof *t->live);
    t->nlive--;
    rc = FT_OK;
  }
  pthread_mutex_unlock(&t->lock);
  return rc;
}

int ft_region_write(ft_tracker *t, const void *addr, size_t size) {
  if (!t) return FT_ERR_INVAL;
  int rc = FT_ERR_INVAL;
  pthread_mutex_lock(&t->lock);
  const uint64_t id = resolve(t, (uintptr_t)addr, size ? size : 1);
  if (id) {
    ft_region_rec *r = &t->regions[id - 1];
    r->version++;
    r->invalid_below = r->version;
    t->rep.outside_writes++;
    rc = FT_OK;
  }
  pthread_mutex_unlock(&t->lock);
  return rc;
}

int64_t ft_region_version(ft_tracker *t, const void *addr) {
  if (!t) return -1;
  pthread_mutex_lock(&t->lock);
  const uint64_t id = resolve(t, (uintptr_t)addr, 1);
  const int64_t v = id ? t->regions[id - 1].version : -1;
  pthread_mutex_unlock(&t->lock);
  return v;
}

uint64_t ft_region_id(ft_tracker *t, const void *addr) {
  if (!t) return 0;
  pthread_mutex_lock(&t->lock);
  const uint64_t id = resolve(t, (uintptr_t)addr, 1);
  pthread_mutex_unlock(&t->lock);
  return id;
}

/* ------------------------------------------------------------ launches */

ft_launch_rec *ft_rec_at(ft_tracker *t, int64_t seq) {
  if (seq < 0 || seq >= t->next_seq) return NULL;
  ft_launch_rec *r = &t->ring[(size_t)seq % t->o.history];
  return r->seq == seq ? r : NULL;
}

int ft_track_launch(ft_tracker *t, const ft_launch *l, int64_t *seq) {
  if (seq) *seq = -1;
  if (!t || !l || !l->fn || l->nin < 0 || l->nout < 0 || l->nin + l->nout > FT_TRACK_MAX_PARAMS ||
      l->args_size > FT_TRACK_ARGS_MAX || (l->args_size && !l->args))
    return FT_ERR_INVAL;
  ft_param_rec p[FT_TRACK_MAX_PARAMS];
  const int n = l->nin + l->nout;
  for (int k = 0; k < n; k++) {
    const ft_range *g = k < l->nin ? &l->in[k] : &l->out[k - l->nin];
    p[k].lo = (uintptr_t)g->addr;
    p[k].hi = p[k].lo + g->size;
  }
  /* overlapping input and output ranges: not idempotent ([0218]) */
  int idem = 1;
  for (int i = 0; i < l->nin; i++)
    for (int o = l->nin; o < n; o++)
      if (p[i].lo < p[o].hi && p[o].lo < p[i].hi) idem = 0;
  int rc = FT_OK;
  int64_t s = -1;
  pthread_mutex_lock(&t->lock);
  for (int k = 0; k < n && !rc; k++) {
    p[k].region = resolve(t, p[k].lo, p[k].hi > p[k].lo ? p[k].hi - p[k].lo : 1);
    if (!p[k].region) rc = FT_ERR_INVAL;
  }
  if (!rc) {
    /* the same identifier as input and output: not idempotent (claim 6) */
    for (int i = 0; i < l->nin; i++) {
      p[i].version = ft_latest(t, p[i].region);
      for (int o = l->nin; o < n; o++)
        if (p[i].region == p[o].region) idem = 0;
    }
    for (int o = l->nin; o < n; o++) {
      int first = 1;
      for (int q = l->nin; q < o; q++)
        if (p[q].region == p[o].region) first = 0, p[o].version = p[q].version;
      if (first) p[o].version = ++t->regions[p[o].region - 1].version;
    }
    s = t->next_seq++;
    ft_launch_rec *r = &t->ring[(size_t)s % t->o.history];
    r->seq = s;
    r->af = l->af;
    r->nin = l->nin;
    r->nout = l->nout;
    memcpy(r->p, p, (size_t)n * sizeof *p);
    r->idempotent = idem;
    r->fn = l->fn;
    r->args_size = l->args_size;
    if (l->args_size) memcpy(r->args, l->args, l->args_size);
    t->rep.launches++;
    t->rep.idempotent += idem;
  }
  pthread_mutex_unlock(&t->lock);
  if (rc) return rc;
  if (seq) *seq = s;
  alignas(16) unsigned char args[FT_TRACK_ARGS_MAX];
  if (l->args_size) memcpy(args, l->args, l->args_size);
  return l->fn(args);
}

int ft_track_info(ft_tracker *t, int64_t seq, ft_launch_info *info) {
  if (!t || !info) return FT_ERR_INVAL;
  int rc = FT_ERR_INVAL;
  pthread_mutex_lock(&t->lock);
  const ft_launch_rec *r = ft_rec_at(t, seq);
  if (r) {
    memset(info, 0, sizeof *info);
    info->af = r->af;
    info->nin = r->nin;
    info->nout = r->nout;
    info->idempotent = r->idempotent;
    for (int k = 0; k < r->nin + r->nout; k++) {
      ft_entry *e = k < r->nin ? &info->in[k] : &info->out[k - r->nin];
      *e = (ft_entry){r->p[k].region, r->p[k].version, ft_entry_valid(t, r->p[k].region, r->p[k].version)};
    }
    rc = FT_OK;
  }
  pthread_mutex_unlock(&t->lock);
  return rc;
}

void ft_track_report_get(ft_tracker *t, ft_track_report *r) {
  pthread_mutex_lock(&t->lock);
  *r = t->rep;
  pthread_mutex_unlock(&t->lock);
}

void ft_track_count_sample(ft_tracker *t, int mismatch) {
  pthread_mutex_lock(&t->lock);
  t->rep.sampled++;
  t->rep.sample_mismatches += mismatch != 0;
  pthread_mutex_unlock(&t->lock);
}
