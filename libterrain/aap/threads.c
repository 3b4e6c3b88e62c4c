/*
 * threads.c - the threads back-end: one process, opts.threads workers, any number of
 * fragments.
 *
 * One mutex guards the engine core (fragment status, buffers, rounds) and a condition
 * variable wakes workers. A worker loops: deliver the delayed batches that are due, pick
 * a fragment whose delay stretch has run out (aap_start_time <= now; lowest round first,
 * then lowest id; a random one under the random schedule), take its snapshot, and run
 * PEval/IncEval *outside* the lock; then, locked again, turn its outbox into batches and
 * deliver them (or, when opts.delay_max > 0, park them in a delay list with a random due
 * time, to test termination with messages in flight). A fragment whose DS has not run out
 * does not hold a thread: the thread takes another fragment or sleeps until the earliest
 * DS deadline or due time.
 *
 * With opts.pin, fragment f runs only on thread f % threads, so a thread plays a worker
 * that owns its fragments (used with slow_worker to benchmark stragglers).
 *
 * Termination: when a worker finds every fragment inactive it runs a wave (term.c)
 * over all workers' batch counters; the first all-ack wave with sent == recv is followed
 * at once by a second, and the run ends when both agree. Parked batches count as sent and
 * not received, so they keep the run alive.
 */
#include "aap_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct thr_ctx {
  aap_core c;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  aap_batch *flight;
  int done, rc;
  char *err;
  size_t errlen;
  aap_wave wave;
  int64_t waves;
  struct timespec t0;
  tr_aap_worker_stats *ws;
  int nthreads;
  uint64_t rng;
  double end_time;
} thr_ctx;

typedef struct {
  thr_ctx *x;
  int w;
} thr_arg;

static double elapsed(const thr_ctx *x) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - x->t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - x->t0.tv_nsec);
}

static double urand(thr_ctx *x) {
  x->rng = aap_mix(x->rng);
  return (double)(x->rng >> 11) * (1.0 / 9007199254740992.0);
}

static void sleep_s(double s) {
  if (!(s > 0)) return;
  struct timespec t;
  t.tv_sec = (time_t)s;
  t.tv_nsec = (long)((s - (double)t.tv_sec) * 1e9);
  while (nanosleep(&t, &t) == -1 && errno == EINTR) {
  }
}

static void fail(thr_ctx *x, int rc, const char *what) {
  if (x->rc == 0) {
    x->rc = rc;
    aap_set_err(x->err, x->errlen, "aap threads: %s: %s", what, tr_aap_strerror(rc));
  }
  x->done = 1;
  pthread_cond_broadcast(&x->cv);
}

/* Delivers parked batches that are due; returns the earliest due time left. */
static double deliver_due(thr_ctx *x, double now, tr_aap_worker_stats *ws) {
  double next = INFINITY;
  aap_batch **pp = &x->flight;
  while (*pp) {
    aap_batch *b = *pp;
    if (b->t_due <= now) {
      *pp = b->next;
      b->next = NULL;
      aap_deliver(&x->c, b, now, ws);
    } else {
      if (b->t_due < next) next = b->t_due;
      pp = &b->next;
    }
  }
  return next;
}

static void *worker(void *arg) {
  thr_arg *a = arg;
  thr_ctx *x = a->x;
  int w = a->w;
  tr_aap_worker_stats *ws = &x->ws[w];
  aap_core *c = &x->c;
  pthread_mutex_lock(&x->mu);
  while (!x->done) {
    /* the caller's give_up (a signal, a lost rank): asked before every
     * round, so a stop is acted on within one round of each thread */
    char why[256] = "";
    if (c->o.give_up && c->o.give_up(c->o.give_up_user, why, sizeof why)) {
      if (x->rc == 0) {
        x->rc = TR_AAP_EABANDONED;
        aap_set_err(x->err, x->errlen, "%s", why[0] ? why : "given up");
      }
      x->done = 1;
      pthread_cond_broadcast(&x->cv);
      break;
    }
    double now = elapsed(x);
    double next = deliver_due(x, now, ws);
    int64_t best = -1, nready = 0;
    for (int64_t f = 0; f < c->nf; f++) {
      if (c->o.pin && f % x->nthreads != w) continue;
      double t = aap_start_time(c, f, now);
      if (t <= now) {
        nready++;
        if (c->o.schedule == TR_AAP_SCHED_RANDOM) {
          if (urand(x) * (double)nready < 1.0) best = f; /* reservoir sampling */
        } else if (aap_prefer(c, f, best)) {
          best = f;
        }
      } else if (t < next) {
        next = t;
      }
    }
    if (best >= 0) {
      x->wave.valid = 0;
      aap_begin(c, best, now, ws);
      pthread_mutex_unlock(&x->mu);
      double t1 = elapsed(x);
      int64_t work = 0, nread = 0;
      int rc = aap_run_round(c, best, &work, &nread);
      double t2 = elapsed(x);
      if (w == c->o.inject.slow_worker && c->o.inject.slow_factor > 1) sleep_s((c->o.inject.slow_factor - 1) * (t2 - t1));
      double t3 = elapsed(x);
      pthread_mutex_lock(&x->mu);
      ws->busy_s += t3 - t1;
      ws->rounds++;
      ws->work += work;
      aap_batch *out = NULL;
      int rc2 = aap_end(c, best, t3, t3 - t1, &out, ws);
      while (out) {
        aap_batch *b = out;
        out = b->next;
        b->next = NULL;
        aap_on_send(c, b);
        if (c->o.inject.delay_max > 0) {
          b->t_due = t3 + urand(x) * c->o.inject.delay_max;
          b->next = x->flight;
          x->flight = b;
        } else {
          aap_deliver(c, b, t3, ws);
        }
      }
      if (rc || rc2) {
        fail(x, rc ? rc : rc2, "round failed");
        break;
      }
      pthread_cond_broadcast(&x->cv);
      continue;
    }
    if (aap_all_inactive(c, -1)) {
      int64_t s = 0, r = 0;
      for (int i = 0; i < x->nthreads; i++) {
        s += x->ws[i].batches_sent;
        r += x->ws[i].batches_recv;
      }
      x->waves++;
      if (aap_term_wave(&x->wave, 1, s, r)) {
        x->done = 1;
        x->end_time = now;
        pthread_cond_broadcast(&x->cv);
        break;
      }
      if (x->wave.valid) continue; /* the second wave, at once */
    } else {
      x->wave.valid = 0;
    }
    double tw = elapsed(x);
    /* waiting for others' rounds: with a give_up, at most a tenth of a
     * second at a time, so that it is asked again */
    if (next == INFINITY && c->o.give_up) next = now + 0.1;
    if (next == INFINITY) {
      pthread_cond_wait(&x->cv, &x->mu);
    } else {
      double until = next + 1e-6;
      struct timespec ts;
      ts.tv_sec = x->t0.tv_sec + (time_t)until;
      ts.tv_nsec = x->t0.tv_nsec + (long)((until - floor(until)) * 1e9);
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&x->cv, &x->mu, &ts);
    }
    ws->idle_s += elapsed(x) - tw;
  }
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

int tr_aap_run_threads(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                       tr_aap_stats *stats, char *err, size_t errlen) {
  int rc = aap_check_args(p, L, o, err, errlen);
  if (rc) return rc;
  if (o->threads < 1 || o->threads > 1024) {
    aap_set_err(err, errlen, "aap threads: need 1..1024 threads");
    return TR_AAP_EINVAL;
  }
  thr_ctx *x = calloc(1, sizeof *x);
  if (!x) return TR_AAP_ENOMEM;
  x->nthreads = o->threads;
  x->err = err;
  x->errlen = errlen;
  x->rng = aap_mix(o->seed + 0x5eed);
  x->ws = calloc((size_t)o->threads, sizeof *x->ws);
  pthread_t *th = calloc((size_t)o->threads, sizeof *th);
  thr_arg *args = calloc((size_t)o->threads, sizeof *args);
  if (!x->ws || !th || !args || (rc = aap_core_init(&x->c, p, L, o, 0, 1)) != 0) {
    free(x->ws);
    free(th);
    free(args);
    free(x);
    return rc ? rc : TR_AAP_ENOMEM;
  }
  for (int64_t f = 0; f < x->c.nf; f++) x->c.f[f].owner = o->pin ? (int)(f % o->threads) : 0;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->cv, &ca);
  pthread_condattr_destroy(&ca);
  clock_gettime(CLOCK_MONOTONIC, &x->t0);
  int started = 0;
  for (int i = 0; i < o->threads; i++) {
    args[i].x = x;
    args[i].w = i;
    if (pthread_create(&th[i], NULL, worker, &args[i]) != 0) {
      pthread_mutex_lock(&x->mu);
      fail(x, TR_AAP_ESYS, "pthread_create");
      pthread_mutex_unlock(&x->mu);
      break;
    }
    started++;
  }
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  rc = x->rc;
  if (rc == 0 && !x->done) rc = TR_AAP_ESYS;
  while (x->flight) {
    aap_batch *b = x->flight;
    x->flight = b->next;
    aap_batch_free(b);
  }
  if (rc == 0) rc = aap_assemble_all_threads(&x->c, o->threads, err, errlen);
  if (stats) {
    if (aap_stats_alloc(stats, "threads", o, o->threads) == 0) {
      memcpy(stats->w, x->ws, (size_t)o->threads * sizeof *x->ws);
      stats->makespan_s = x->end_time;
      stats->waves = x->waves;
      for (int64_t f = 0; f < x->c.nf; f++)
        if (x->c.f[f].round > stats->max_round) stats->max_round = x->c.f[f].round;
    } else if (rc == 0) {
      rc = TR_AAP_ENOMEM;
    }
  }
  aap_core_free(&x->c);
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->cv);
  free(x->ws);
  free(th);
  free(args);
  free(x);
  return rc;
}
