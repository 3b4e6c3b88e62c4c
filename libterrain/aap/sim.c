/*
 * sim.c - the virtual-clock simulator back-end, for tests of scheduling.
 *
 * Workers (so->workers) own fragments (so->frag_worker, default f % workers) and run one
 * fragment round at a time. The program runs for real when a round starts (on the
 * snapshot taken then); the round then lasts round_time[worker] + time_per_work x work
 * virtual units (x slow_factor on opts.slow_worker), and its batches leave at its end and
 * arrive latency (+ a seeded jitter in [0, latency_jitter)) later.
 *
 * It is a discrete-event simulation over one event heap ordered by (time, kind, sequence):
 * kinds are round END (first, so a round that ends at t is seen as ended by decisions at
 * t), batch ARRIVE, and WAKE (a fragment's DS deadline). After all events at time t are
 * processed, each idle worker picks the ready fragment with the lowest (round, id) whose
 * DS has run out (aap_start_time <= t), all picks judged on the state at t (workers
 * deciding at the same instant do not see each other's starts), and then the picked
 * rounds start in worker order; fragments whose DS ends later get a WAKE event. Everything is deterministic for a given seed.
 *
 * Termination uses the same waves as the other back-ends (term.c): when no worker is
 * running and every buffer is empty, a wave compares the batch counters; batches still in
 * flight (ARRIVE events in the heap) make sent != received, so they keep the run going.
 * The run does not end merely because the heap is empty: that with active fragments left
 * is reported as a deadlock.
 */
#include "aap_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EV_END = 0, EV_ARRIVE = 1, EV_WAKE = 2 };

typedef struct sim_ev {
  double t;
  int kind;
  uint64_t seq;
  int64_t who; /* worker (END) or fragment (WAKE) */
  aap_batch *b;
} sim_ev;

typedef struct sim_heap {
  sim_ev *e;
  size_t n, cap;
} sim_heap;

static int ev_less(const sim_ev *a, const sim_ev *b) {
  if (a->t != b->t) return a->t < b->t;
  if (a->kind != b->kind) return a->kind < b->kind;
  return a->seq < b->seq;
}

static int ev_push(sim_heap *h, sim_ev ev) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 256;
    sim_ev *e = realloc(h->e, cap * sizeof *e);
    if (!e) return TR_AAP_ENOMEM;
    h->e = e;
    h->cap = cap;
  }
  size_t k = h->n++;
  while (k > 0) {
    size_t p = (k - 1) / 2;
    if (!ev_less(&ev, &h->e[p])) break;
    h->e[k] = h->e[p];
    k = p;
  }
  h->e[k] = ev;
  return TR_AAP_OK;
}

static sim_ev ev_pop(sim_heap *h) {
  sim_ev top = h->e[0], last = h->e[--h->n];
  size_t k = 0;
  for (;;) {
    size_t c = 2 * k + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && ev_less(&h->e[c + 1], &h->e[c])) c++;
    if (!ev_less(&h->e[c], &last)) break;
    h->e[k] = h->e[c];
    k = c;
  }
  if (h->n) h->e[k] = last;
  return top;
}

typedef struct sim_worker {
  int64_t frag; /* running fragment or -1 */
  double start, dur, idle_since;
  int64_t nread;
} sim_worker;

int tr_aap_run_sim(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                   const tr_aap_sim_opts *so, tr_aap_stats *stats, char *err, size_t errlen) {
  int rc = aap_check_args(p, L, o, err, errlen);
  if (rc) return rc;
  if (!so || so->workers < 1 || so->latency < 0 || so->latency_jitter < 0 ||
      so->time_per_work < 0) {
    aap_set_err(err, errlen, "aap sim: need workers >= 1 and non-negative times");
    return TR_AAP_EINVAL;
  }
  int nw = so->workers;
  aap_core c;
  if ((rc = aap_core_init(&c, p, L, o, 0, 1)) != 0) return rc;
  for (int64_t f = 0; f < c.nf; f++) {
    int w = so->frag_worker ? so->frag_worker[f] : (int)(f % nw);
    if (w < 0 || w >= nw) {
      aap_core_free(&c);
      aap_set_err(err, errlen, "aap sim: fragment %lld has no worker", (long long)f);
      return TR_AAP_EINVAL;
    }
    c.f[f].owner = w;
  }
  sim_worker *wk = calloc((size_t)nw, sizeof *wk);
  tr_aap_worker_stats *ws = calloc((size_t)nw, sizeof *ws);
  int64_t *pick = calloc((size_t)nw, sizeof *pick);
  sim_heap h = {0};
  if (!wk || !ws || !pick) {
    rc = TR_AAP_ENOMEM;
    goto out;
  }
  for (int w = 0; w < nw; w++) wk[w].frag = -1;
  uint64_t seq = 0, rng = aap_mix(o->seed ^ 0x51u);
  int64_t max_events = so->max_events > 0 ? so->max_events : 100000000, nev = 0;
  int64_t waves = 0;
  aap_wave wave = {0};
  double t = 0;
  for (;;) {
    /* decisions at time t, all on the state at t (simultaneous workers do not see each
       other's starts at the same instant), then the starts */
    for (int w = 0; w < nw; w++) pick[w] = -1;
    for (int w = 0; w < nw && rc == 0; w++) {
      if (wk[w].frag >= 0) continue;
      int64_t best = -1, nready = 0;
      for (int64_t f = 0; f < c.nf; f++) {
        if (c.f[f].owner != w) continue;
        double st = aap_start_time(&c, f, t);
        if (st <= t) {
          nready++;
          if (o->schedule == TR_AAP_SCHED_RANDOM) {
            rng = aap_mix(rng);
            if ((double)(rng >> 11) * (1.0 / 9007199254740992.0) * (double)nready < 1.0) best = f;
          } else if (aap_prefer(&c, f, best)) {
            best = f;
          }
        } else if (st < INFINITY && c.f[f].wake_at != st) {
          c.f[f].wake_at = st;
          sim_ev ev = {st, EV_WAKE, seq++, f, NULL};
          rc = ev_push(&h, ev);
        }
      }
      pick[w] = best;
    }
    for (int w = 0; w < nw && rc == 0; w++) {
      int64_t best = pick[w];
      if (best < 0) continue;
      ws[w].idle_s += t - wk[w].idle_since;
      aap_begin(&c, best, t, &ws[w]);
      int64_t work = 0, nread = 0;
      rc = aap_run_round(&c, best, &work, &nread);
      if (rc) {
        aap_set_err(err, errlen, "aap sim: round of fragment %lld failed", (long long)best);
        break;
      }
      double dur = (so->round_time ? so->round_time[w] : 0.0) + so->time_per_work * (double)work;
      if (w == o->inject.slow_worker && o->inject.slow_factor > 1) dur *= o->inject.slow_factor;
      ws[w].work += work;
      wk[w].frag = best;
      wk[w].start = t;
      wk[w].dur = dur;
      wk[w].nread = nread;
      sim_ev ev = {t + dur, EV_END, seq++, w, NULL};
      rc = ev_push(&h, ev);
    }
    if (rc) break;
    /* termination wave when nothing runs and every buffer is empty */
    int running = 0;
    for (int w = 0; w < nw; w++) running |= wk[w].frag >= 0;
    if (!running && aap_all_inactive(&c, -1)) {
      int64_t s = 0, r = 0;
      for (int w = 0; w < nw; w++) {
        s += ws[w].batches_sent;
        r += ws[w].batches_recv;
      }
      waves++;
      int done = aap_term_wave(&wave, 1, s, r);
      if (!done && wave.valid) {
        waves++;
        done = aap_term_wave(&wave, 1, s, r);
      }
      if (done) break;
    } else {
      wave.valid = 0;
    }
    if (h.n == 0) {
      rc = TR_AAP_EDEADLOCK;
      aap_set_err(err, errlen, "aap sim: no event left at t=%g but fragments are active", t);
      break;
    }
    /* all events at the next time */
    t = h.e[0].t;
    while (h.n > 0 && h.e[0].t == t && rc == 0) {
      if (++nev > max_events) {
        rc = TR_AAP_EDEADLOCK;
        aap_set_err(err, errlen, "aap sim: more than %lld events", (long long)max_events);
        break;
      }
      sim_ev ev = ev_pop(&h);
      if (ev.kind == EV_END) {
        int w = (int)ev.who;
        int64_t f = wk[w].frag;
        aap_batch *outb = NULL;
        int64_t rnd = c.f[f].round;
        rc = aap_end(&c, f, t, wk[w].dur, &outb, &ws[w]);
        ws[w].rounds++;
        ws[w].busy_s += wk[w].dur;
        if (so->trace) {
          tr_aap_trace tr = {w, f, rnd, wk[w].start, t, wk[w].nread};
          so->trace(so->trace_user, &tr);
        }
        wk[w].frag = -1;
        wk[w].idle_since = t;
        while (outb) {
          aap_batch *b = outb;
          outb = b->next;
          b->next = NULL;
          aap_on_send(&c, b);
          double lat = so->latency;
          if (so->latency_jitter > 0) {
            rng = aap_mix(rng);
            lat += so->latency_jitter * (double)(rng >> 11) * (1.0 / 9007199254740992.0);
          }
          sim_ev ae = {t + lat, EV_ARRIVE, seq++, b->dst, b};
          if (rc == 0) rc = ev_push(&h, ae);
          if (rc) aap_batch_free(b);
        }
      } else if (ev.kind == EV_ARRIVE) {
        aap_deliver(&c, ev.b, t, &ws[c.f[ev.who].owner]);
      } else {
        if (c.f[ev.who].wake_at == t) c.f[ev.who].wake_at = -1;
      }
    }
    if (rc) break;
  }
  if (rc == 0) rc = aap_assemble_all(&c, -1, err, errlen);
  if (stats && ws) {
    if (aap_stats_alloc(stats, "sim", o, nw) == 0) {
      for (int w = 0; w < nw; w++) {
        if (wk[w].frag < 0) ws[w].idle_s += t - wk[w].idle_since;
      }
      memcpy(stats->w, ws, (size_t)nw * sizeof *ws);
      stats->makespan_s = t;
      stats->waves = waves;
      for (int64_t f = 0; f < c.nf; f++)
        if (c.f[f].round > stats->max_round) stats->max_round = c.f[f].round;
    } else if (rc == 0) {
      rc = TR_AAP_ENOMEM;
    }
  }
out:
  for (size_t i = 0; i < h.n; i++) aap_batch_free(h.e[i].b);
  free(h.e);
  free(wk);
  free(ws);
  free(pick);
  aap_core_free(&c);
  return rc;
}
