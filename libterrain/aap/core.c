/*
 * core.c - the fragment bookkeeping every AAP back-end shares.
 *
 * For each fragment the core keeps (aap_frag_rt): its status (new / idle / running), the
 * count of completed rounds, the program state, and its message buffer. The buffer has one
 * slot per halo cell (ring order: top row, bottom row, left column, right column), a
 * "has" flag, the global cell index, and a dirty list; a delivered value is combined into
 * its slot with the program's f_aggr. At round start (aap_begin) the dirty slots are
 * sorted by ring position and copied into the fragment's snapshot arrays, so IncEval sees
 * the same input whatever the arrival order was.
 *
 * A running round emits into an outbox, one list per neighbour; tr_aap_emit routes a cell
 * to every neighbour whose halo contains it. aap_end turns the non-empty lists into
 * batches (one per destination) stamped with the round index; the back-end moves batches
 * (directly, through a delay queue, through the simulator's event queue, or over MPI) and
 * hands them to aap_deliver at the receiver.
 *
 * Also kept, for the delay-stretch rule (schedule.c): when each fragment became ready,
 * started and ended its last round, a moving average of its round time, the newest round
 * received from each neighbour, how many neighbour rounds overlapped its last round
 * (L_i), the batches in flight towards it, and a moving average of message latency.
 *
 * None of this locks: back-ends call these functions under their own lock (threads), from
 * one thread (simulator, MPI rank). aap_run_round touches only the fragment's own state,
 * snapshot and outbox, so the threads back-end runs it unlocked.
 */
#include "aap_internal.h"

#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const char *tr_aap_strerror(int err) {
  switch (err) {
  case TR_AAP_OK: return "success";
  case TR_AAP_EINVAL: return "invalid argument";
  case TR_AAP_ENOMEM: return "out of memory";
  case TR_AAP_EPROGRAM: return "program callback failed";
  case TR_AAP_EDEADLOCK: return "no fragment can run but the run has not terminated";
  case TR_AAP_ESYS: return "thread or MPI failure";
  case TR_AAP_ENOMPI: return "built without MPI";
  case TR_AAP_EABANDONED: return "abandoned (a rank was lost or the run cancelled)";
  default: return "unknown error";
  }
}

void aap_set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void tr_aap_opts_default(tr_aap_opts *o) {
  memset(o, 0, sizeof *o);
  o->schedule = TR_AAP_SCHED_AAP;
  /* no bound: the delay stretch alone (schedule.c). The automatic bound held fast fragments
     to a straggler's round; that saves their work but not time (scripts/bench/RESULTS.md),
     so it is opt-in (TR_AAP_STALENESS_AUTO) */
  o->staleness = -1;
  o->L_bottom = 1;
  o->L_up = 8;
  /* DS_max follows the measured round times (schedule.c): a fixed 2 ms was shorter
     than a straggler's round, so aap never waited for it and behaved like ap */
  o->ds_max = 0;
  o->ds_rel = 2;
  o->straggler_ratio = 2;
  o->threads = 1;
  o->inject.slow_worker = -1;
  o->inject.slow_factor = 1.0;
  o->seed = 1;
}

int aap_check_args(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                   char *err, size_t errlen) {
  if (!p || !L || !o || !p->peval || !p->inceval || !p->aggr || p->value_size < 1 ||
      p->value_size > 64 || L->nfrags < 1 || !L->frags) {
    aap_set_err(err, errlen, "aap: incomplete program or empty layout");
    return TR_AAP_EINVAL;
  }
  if ((int)o->schedule < 0 || o->schedule > TR_AAP_SCHED_RANDOM) {
    aap_set_err(err, errlen, "aap: unknown schedule");
    return TR_AAP_EINVAL;
  }
  if (o->schedule == TR_AAP_SCHED_SSP && o->staleness < 0) {
    aap_set_err(err, errlen, "aap: ssp needs a staleness >= 0");
    return TR_AAP_EINVAL;
  }
  if (o->staleness < TR_AAP_STALENESS_AUTO) {
    aap_set_err(err, errlen, "aap: staleness must be >= 0, -1 (none) or -2 (auto)");
    return TR_AAP_EINVAL;
  }
  if (o->L_bottom < 0 || o->L_up < o->L_bottom || !(o->ds_max >= 0) || !(o->ds_rel >= 0) || !(o->straggler_ratio > 1) ||
      o->inject.delay_max < 0) {
    aap_set_err(err, errlen,
                "aap: need 0 <= L_bottom <= L_up, ds_max >= 0, ds_rel >= 0, straggler_ratio > 1, delay_max >= 0");
    return TR_AAP_EINVAL;
  }
  return TR_AAP_OK;
}

int64_t aap_halo_slot(const tr_aap_frag *g, int64_t cols, int64_t cell) {
  int64_t r = cell / cols, c = cell % cols, w = g->cols, h = g->rows;
  if (c < g->col0 - 1 || c > g->col0 + w || r < g->row0 - 1 || r > g->row0 + h) return -1;
  if (r == g->row0 - 1) return c - (g->col0 - 1);
  if (r == g->row0 + h) return (w + 2) + c - (g->col0 - 1);
  if (c == g->col0 - 1) return 2 * (w + 2) + (r - g->row0);
  if (c == g->col0 + w) return 2 * (w + 2) + h + (r - g->row0);
  return -1; /* inside the tile */
}

/* The global cell of halo slot s of fragment g (aap_halo_slot's inverse). */
static int64_t halo_cell(const tr_aap_frag *g, int64_t cols, int64_t s) {
  const int64_t w = g->cols, h = g->rows;
  int64_t r, c;
  if (s < w + 2) r = g->row0 - 1, c = g->col0 - 1 + s;
  else if (s < 2 * (w + 2)) r = g->row0 + h, c = g->col0 - 1 + s - (w + 2);
  else if (s < 2 * (w + 2) + h) r = g->row0 + s - 2 * (w + 2), c = g->col0 - 1;
  else r = g->row0 + s - 2 * (w + 2) - h, c = g->col0 + w;
  return r * cols + c;
}

int aap_core_init(aap_core *c, const tr_aap_program *p, const tr_aap_layout *L,
                  const tr_aap_opts *o, int me, int nowners) {
  memset(c, 0, sizeof *c);
  c->p = p;
  c->L = L;
  c->o = *o;
  c->nf = L->nfrags;
  c->f = calloc((size_t)c->nf, sizeof *c->f);
  if (!c->f) return TR_AAP_ENOMEM;
  size_t vs = p->value_size;
  for (int64_t i = 0; i < c->nf; i++) {
    aap_frag_rt *F = &c->f[i];
    const tr_aap_frag *g = &L->frags[i];
    int64_t nnb = L->nb_start[i + 1] - L->nb_start[i];
    /* the halo buffers are the owner's alone: another rank's fragment
     * keeps only the scheduling figures below */
    F->ring = i % nowners == me ? 2 * (g->cols + 2) + 2 * g->rows : 0;
    const size_t slots = F->ring ? (size_t)F->ring : 1;
    F->val = malloc(slots * vs);
    F->has = calloc(slots, 1);
    F->dirty = malloc(slots * sizeof(int32_t));
    F->nb_last = malloc((size_t)(nnb ? nnb : 1) * sizeof(int64_t));
    F->ob_n = calloc((size_t)(nnb ? nnb : 1), sizeof(int64_t));
    F->ob_cap = calloc((size_t)(nnb ? nnb : 1), sizeof(int64_t));
    F->ob_cells = calloc((size_t)(nnb ? nnb : 1), sizeof(int64_t *));
    F->ob_vals = calloc((size_t)(nnb ? nnb : 1), sizeof(unsigned char *));
    if (!F->val || !F->has || !F->dirty || !F->nb_last || !F->ob_n || !F->ob_cap || !F->ob_cells || !F->ob_vals) {
      aap_core_free(c);
      return TR_AAP_ENOMEM;
    }
    for (int64_t k = 0; k < nnb; k++) F->nb_last[k] = -1;
    F->status = AAP_NEW;
    F->Lexp = o->L_bottom;
    F->wake_at = -1;
  }
  return TR_AAP_OK;
}

void aap_core_free(aap_core *c) {
  if (!c->f) return;
  for (int64_t i = 0; i < c->nf; i++) {
    aap_frag_rt *F = &c->f[i];
    int64_t nnb = c->L->nb_start[i + 1] - c->L->nb_start[i];
    if (F->state && c->p->destroy) c->p->destroy(c->p->user, F->state);
    free(F->val);
    free(F->has);
    free(F->dirty);
    free(F->snap_cells);
    free(F->snap_vals);
    free(F->nb_last);
    if (F->ob_cells)
      for (int64_t k = 0; k < nnb; k++) free(F->ob_cells[k]);
    if (F->ob_vals)
      for (int64_t k = 0; k < nnb; k++) free(F->ob_vals[k]);
    free(F->ob_cells);
    free(F->ob_vals);
    free(F->ob_n);
    free(F->ob_cap);
  }
  free(c->f);
  c->f = NULL;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

void aap_begin(aap_core *c, int64_t f, double now, tr_aap_worker_stats *ws) {
  aap_frag_rt *F = &c->f[f];
  size_t vs = c->p->value_size;
  if (F->status != AAP_NEW && ws) {
    /* delay stretch as experienced: from ready (messages buffered and previous round
       over) to start; on threads this includes waiting for a free thread */
    double ready = F->t_ready > F->t_end ? F->t_ready : F->t_end;
    if (now > ready) ws->ds_s += now - ready;
  }
  int was_new = F->status == AAP_NEW;
  F->status = AAP_RUNNING;
  F->t_start = now;
  /* PEval reads no messages: what arrived before it waits for the first IncEval */
  if (was_new) goto overlap;
  /* snapshot, canonical order; its arrays live for this round only */
  qsort(F->dirty, (size_t)F->ndirty, sizeof(int32_t), cmp_i32);
  const size_t nsnap = F->ndirty ? (size_t)F->ndirty : 1;
  F->snap_cells = malloc(nsnap * sizeof(int64_t));
  F->snap_vals = malloc(nsnap * vs);
  F->snap_oom = !F->snap_cells || !F->snap_vals;
  for (int64_t k = 0; k < F->ndirty; k++) {
    int32_t s = F->dirty[k];
    if (!F->snap_oom) {
      F->snap_cells[k] = halo_cell(&c->L->frags[f], c->L->cols, s);
      memcpy(F->snap_vals + (size_t)k * vs, F->val + (size_t)s * vs, vs);
    }
    F->has[s] = 0;
  }
  F->snap_n = F->ndirty;
  F->ndirty = 0;
  F->eta = 0;
overlap:;
  /* L_i: neighbour rounds overlapping this round; those running now count */
  const tr_aap_layout *L = c->L;
  F->overlap = 0;
  for (int64_t k = L->nb_start[f]; k < L->nb_start[f + 1]; k++) {
    aap_frag_rt *G = &c->f[L->nb[k]];
    if (G->status == AAP_RUNNING) {
      F->overlap++;
      G->overlap++;
    }
  }
}

int aap_run_round(aap_core *c, int64_t f, int64_t *work, int64_t *nmsgs_read) {
  aap_frag_rt *F = &c->f[f];
  const tr_aap_frag *g = &c->L->frags[f];
  tr_aap_round rd = {.c = c, .frag = f, .round = F->round};
  int rc;
  if (!F->has_ema) { /* no round has ended yet: this is PEval */
    rc = c->p->peval(c->p->user, g, &F->state, &rd);
    *nmsgs_read = 0;
  } else {
    rc = F->snap_oom ? 0 : c->p->inceval(c->p->user, g, F->state, F->snap_n, F->snap_cells, F->snap_vals, &rd);
    if (F->snap_oom) rd.err = TR_AAP_ENOMEM;
    *nmsgs_read = F->snap_n;
  }
  *work = rd.work;
  F->last_work = rd.work;
  if (rd.err) return rd.err;
  return rc ? TR_AAP_EPROGRAM : TR_AAP_OK;
}

int tr_aap_emit(tr_aap_round *rd, int64_t cell, const void *value) {
  aap_core *c = rd->c;
  const tr_aap_layout *L = c->L;
  aap_frag_rt *F = &c->f[rd->frag];
  size_t vs = c->p->value_size;
  int64_t r = cell / L->cols, col = cell % L->cols;
  const tr_aap_frag *me = &L->frags[rd->frag];
  if (cell < 0 || r < me->row0 || r >= me->row0 + me->rows || col < me->col0 ||
      col >= me->col0 + me->cols) {
    rd->err = TR_AAP_EINVAL;
    return TR_AAP_EINVAL;
  }
  if (rd->capture) {
    if (rd->cap_n == rd->cap_cap) {
      const int64_t cap = rd->cap_cap ? 2 * rd->cap_cap : 64;
      int64_t *nc = realloc(rd->cap_cells, (size_t)cap * sizeof(int64_t));
      if (nc) rd->cap_cells = nc;
      unsigned char *nv = realloc(rd->cap_vals, (size_t)cap * vs);
      if (nv) rd->cap_vals = nv;
      if (!nc || !nv) {
        rd->err = TR_AAP_ENOMEM;
        return TR_AAP_ENOMEM;
      }
      rd->cap_cap = cap;
    }
    rd->cap_cells[rd->cap_n] = cell;
    memcpy(rd->cap_vals + (size_t)rd->cap_n * vs, value, vs);
    rd->cap_n++;
    return TR_AAP_OK;
  }
  for (int64_t k = L->nb_start[rd->frag]; k < L->nb_start[rd->frag + 1]; k++) {
    const tr_aap_frag *g = &L->frags[L->nb[k]];
    if (aap_halo_slot(g, L->cols, cell) < 0) continue;
    int64_t j = k - L->nb_start[rd->frag];
    if (F->ob_n[j] == F->ob_cap[j]) {
      int64_t cap = F->ob_cap[j] ? 2 * F->ob_cap[j] : 64;
      int64_t *nc = realloc(F->ob_cells[j], (size_t)cap * sizeof(int64_t));
      if (nc) F->ob_cells[j] = nc;
      unsigned char *nv = realloc(F->ob_vals[j], (size_t)cap * vs);
      if (nv) F->ob_vals[j] = nv;
      if (!nc || !nv) {
        rd->err = TR_AAP_ENOMEM;
        return TR_AAP_ENOMEM;
      }
      F->ob_cap[j] = cap;
    }
    F->ob_cells[j][F->ob_n[j]] = cell;
    memcpy(F->ob_vals[j] + (size_t)F->ob_n[j] * vs, value, vs);
    F->ob_n[j]++;
  }
  return TR_AAP_OK;
}

void tr_aap_add_work(tr_aap_round *rd, int64_t cells) { rd->work += cells; }
int64_t tr_aap_round_index(const tr_aap_round *rd) { return rd->round; }

/* ---- captures ------------------------------------------------------------------------ */

tr_aap_round *tr_aap_capture_open(const tr_aap_round *rd) {
  tr_aap_round *cap = calloc(1, sizeof *cap);
  if (!cap) return NULL;
  cap->c = rd->c; /* read only: the layout and the value size, fixed for the run */
  cap->frag = rd->frag;
  cap->round = rd->round;
  cap->capture = 1;
  return cap;
}

void tr_aap_capture_reset(tr_aap_round *cap) {
  cap->cap_n = 0;
  cap->work = 0;
  cap->err = 0;
}

int64_t tr_aap_capture_get(const tr_aap_round *cap, const int64_t **cells, void **values, int64_t *work) {
  if (cells) *cells = cap->cap_cells;
  if (values) *values = cap->cap_vals;
  if (work) *work = cap->work;
  return cap->err ? cap->err : cap->cap_n;
}

int tr_aap_capture_commit(const tr_aap_round *cap, tr_aap_round *rd) {
  if (cap->err) return cap->err;
  const size_t vs = cap->c->p->value_size;
  for (int64_t i = 0; i < cap->cap_n; i++) {
    const int rc = tr_aap_emit(rd, cap->cap_cells[i], cap->cap_vals + (size_t)i * vs);
    if (rc) return rc;
  }
  rd->work += cap->work;
  return TR_AAP_OK;
}

void tr_aap_capture_close(tr_aap_round *cap) {
  if (!cap) return;
  free(cap->cap_cells);
  free(cap->cap_vals);
  free(cap);
}

void aap_batch_free(aap_batch *b) {
  if (!b) return;
  free(b->cells);
  free(b->vals);
  free(b);
}

int aap_end(aap_core *c, int64_t f, double now, double duration, aap_batch **out,
            tr_aap_worker_stats *ws) {
  aap_frag_rt *F = &c->f[f];
  const tr_aap_layout *L = c->L;
  int rc = TR_AAP_OK;
  *out = NULL;
  aap_batch **tail = out;
  for (int64_t k = L->nb_start[f]; k < L->nb_start[f + 1]; k++) {
    int64_t j = k - L->nb_start[f];
    if (F->ob_n[j] == 0) continue;
    aap_batch *b = calloc(1, sizeof *b);
    if (!b) {
      rc = TR_AAP_ENOMEM;
      F->ob_n[j] = 0;
      continue;
    }
    /* the outbox itself becomes the batch: an idle fragment keeps none */
    b->src = f;
    b->dst = L->nb[k];
    b->round = F->round;
    b->n = F->ob_n[j];
    b->cells = F->ob_cells[j];
    b->vals = F->ob_vals[j];
    b->t_sent = now;
    F->ob_cells[j] = NULL;
    F->ob_vals[j] = NULL;
    F->ob_n[j] = F->ob_cap[j] = 0;
    *tail = b;
    tail = &b->next;
    if (ws) {
      ws->batches_sent++;
      ws->msgs_sent += b->n;
    }
  }
  free(F->snap_cells);
  free(F->snap_vals);
  F->snap_cells = NULL;
  F->snap_vals = NULL;
  F->snap_n = 0;
  F->status = AAP_IDLE;
  F->round++;
  F->t_end = now;
  F->ema = F->has_ema ? 0.5 * F->ema + 0.5 * duration : duration;
  F->wema = F->has_ema ? 0.5 * F->wema + 0.5 * (double)F->last_work : (double)F->last_work;
  F->has_ema = 1;
  int64_t Lx = F->overlap;
  if (Lx < c->o.L_bottom) Lx = c->o.L_bottom;
  if (Lx > c->o.L_up) Lx = c->o.L_up;
  F->Lexp = Lx;
  if (F->eta > 0 && F->t_ready < now) F->t_ready = now;
  return rc;
}

void aap_on_send(aap_core *c, const aap_batch *b) {
  aap_frag_rt *D = &c->f[b->dst];
  /* an idle receiver with nothing to do skipped the rounds in between (empty rounds are
     free): it joins at the round after the sender's, as BSP would run it */
  if (D->status == AAP_IDLE && D->eta == 0 && D->inflight_to == 0 && D->round < b->round + 1)
    D->round = b->round + 1;
  D->inflight_to++;
}

void aap_deliver(aap_core *c, aap_batch *b, double now, tr_aap_worker_stats *ws) {
  aap_frag_rt *D = &c->f[b->dst];
  const tr_aap_layout *L = c->L;
  const tr_aap_frag *g = &L->frags[b->dst];
  size_t vs = c->p->value_size;
  for (int64_t i = 0; i < b->n; i++) {
    int64_t s = aap_halo_slot(g, L->cols, b->cells[i]);
    if (s < 0) continue; /* cannot happen: emit routes by the same test */
    const unsigned char *v = b->vals + (size_t)i * vs;
    if (!D->has[s]) {
      memcpy(D->val + (size_t)s * vs, v, vs);
      D->has[s] = 1;
      D->dirty[D->ndirty++] = (int32_t)s;
    } else {
      c->p->aggr(c->p->user, D->val + (size_t)s * vs, v);
    }
  }
  if (D->eta == 0) D->t_ready = now;
  D->eta++;
  D->inflight_to--;
  /* which neighbour sent it: find the src in dst's list through the back index */
  for (int64_t k = L->nb_start[b->dst]; k < L->nb_start[b->dst + 1]; k++)
    if (L->nb[k] == b->src) {
      int64_t j = k - L->nb_start[b->dst];
      if (D->nb_last[j] < b->round) D->nb_last[j] = b->round;
      break;
    }
  double lat = now - b->t_sent;
  if (lat < 0) lat = 0;
  c->lat_ema = c->has_lat ? 0.5 * c->lat_ema + 0.5 * lat : lat;
  c->has_lat = 1;
  if (ws) {
    ws->batches_recv++;
    ws->msgs_recv += b->n;
  }
  aap_batch_free(b);
}

int aap_assemble_all(aap_core *c, int owner, char *err, size_t errlen) {
  int rc = TR_AAP_OK;
  for (int64_t i = 0; i < c->nf; i++) {
    aap_frag_rt *F = &c->f[i];
    if (owner >= 0 && F->owner != owner) continue;
    if (rc == TR_AAP_OK && c->p->assemble &&
        c->p->assemble(c->p->user, &c->L->frags[i], F->state) != 0) {
      aap_set_err(err, errlen, "aap: assemble failed on fragment %lld", (long long)i);
      rc = TR_AAP_EPROGRAM;
    }
    if (F->state && c->p->destroy) c->p->destroy(c->p->user, F->state);
    F->state = NULL;
  }
  return rc;
}

typedef struct {
  aap_core *c;
  pthread_mutex_t mu;
  int64_t next, failed; /* the next fragment to take; the lowest that failed (nf: none) */
} assemble_pool;

static void *assemble_worker(void *arg) {
  assemble_pool *a = arg;
  aap_core *c = a->c;
  for (;;) {
    pthread_mutex_lock(&a->mu);
    const int64_t i = a->next++;
    const int skip = i > a->failed;
    pthread_mutex_unlock(&a->mu);
    if (i >= c->nf) break;
    aap_frag_rt *F = &c->f[i];
    if (!skip && c->p->assemble && c->p->assemble(c->p->user, &c->L->frags[i], F->state) != 0) {
      pthread_mutex_lock(&a->mu);
      if (i < a->failed) a->failed = i;
      pthread_mutex_unlock(&a->mu);
    }
    if (F->state && c->p->destroy) c->p->destroy(c->p->user, F->state);
    F->state = NULL;
  }
  return NULL;
}

int aap_assemble_all_threads(aap_core *c, int threads, char *err, size_t errlen) {
  if (!c->p->assemble_parallel || threads < 2 || c->nf < 2) return aap_assemble_all(c, -1, err, errlen);
  if (threads > c->nf) threads = (int)c->nf;
  assemble_pool a = {c, PTHREAD_MUTEX_INITIALIZER, 0, c->nf};
  pthread_t th[64];
  if (threads > 64) threads = 64;
  int started = 0;
  for (int k = 1; k < threads; k++)
    if (pthread_create(&th[started], NULL, assemble_worker, &a) == 0) started++;
  assemble_worker(&a);
  for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
  pthread_mutex_destroy(&a.mu);
  if (a.failed < c->nf) {
    aap_set_err(err, errlen, "aap: assemble failed on fragment %lld", (long long)a.failed);
    return TR_AAP_EPROGRAM;
  }
  return TR_AAP_OK;
}

int aap_stats_alloc(tr_aap_stats *s, const char *backend, const tr_aap_opts *o, int nworkers) {
  memset(s, 0, sizeof *s);
  s->backend = backend;
  s->schedule = o->schedule;
  s->nworkers = nworkers;
  s->w = calloc((size_t)nworkers, sizeof *s->w);
  return s->w ? TR_AAP_OK : TR_AAP_ENOMEM;
}
