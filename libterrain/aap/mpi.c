/*
 * mpi.c - the MPI back-end: fragments spread over the ranks of a communicator.
 *
 * Fragment f is owned by rank f % size, which alone runs its PEval/IncEval/Assemble. Each
 * rank keeps an engine core (core.c) for *all* fragments: its own are real; the others
 * are mirrors updated from STATUS messages (status, round, busy, round start/end, moving
 * average of round time) that an owner sends to every rank whenever one of its fragments
 * starts or ends a round or receives its first batch. The delay-stretch rules
 * (schedule.c) then run unchanged on the mirrors. The mirrors may lag; that can only
 * change when a round starts, never the result (the monotone condition).
 *
 * The caller initialises MPI; the engine works on a duplicate of the given communicator,
 * so its traffic never mixes with the caller's, and frees it before returning. Each rank is
 * one thread: it receives everything pending (MPI_Improbe, each receive bounded by
 * give_up), runs at most one ready local fragment (batches to local fragments are
 * delivered at once, to remote ones sent as one DATA message each), and otherwise sleeps
 * briefly (at most until its next DS deadline).
 * MPI keeps messages between two ranks in order, so a STATUS never overtakes the DATA its
 * round sent: a BSP round sees all of the previous round's batches.
 *
 * Termination (term.c's waves): a rank that becomes locally inactive tells rank 0
 * (INACTIVE); when rank 0 has heard that from every rank and is inactive itself, it sends
 * PROBE; each rank replies ACK or WAIT with its batch counters (sent, received). Rank 0
 * ends the run (TERM) after two consecutive all-ACK waves with equal, unchanged sums; an
 * all-ACK wave with unequal sums (a DATA message in flight) is repeated. After TERM every
 * rank sends FLUSH to every other and reads until it has all FLUSHes, so nothing of this
 * run is left unreceived. A program failure on any rank is broadcast in TERM and returned
 * by every rank.
 */
#include "aap_internal.h"

#ifndef TERRAFORT_HAVE_MPI
int tr_aap_run_mpi(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                   void *comm, tr_aap_stats *stats, char *err, size_t errlen) {
  (void)p;
  (void)L;
  (void)o;
  (void)comm;
  (void)stats;
  aap_set_err(err, errlen, "aap: built without MPI");
  return TR_AAP_ENOMPI;
}
#else
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { T_DATA = 7101, T_STATUS, T_INACTIVE, T_PROBE, T_REPLY, T_TERM, T_FLUSH };

typedef struct pend {
  MPI_Request req;
  void *buf;
  struct pend *next;
} pend;

typedef struct mpi_ctx {
  aap_core c;
  MPI_Comm comm;
  int me, size;
  double t0;
  tr_aap_worker_stats ws;
  pend *sends;
  int rc;
  long long batches_posted; /* DATA messages to other ranks (the injector's stop-send) */
  /* master (rank 0) */
  char *inactive;
  int wave_out, replies, all_ack;
  long long wave_id, wsent, wrecv;
  aap_wave wave;
  int64_t waves;
  int reported;
  int terminated;
  int flushes;
  char *err;
  size_t errlen;
  const tr_aap_opts *o;
} mpi_ctx;

static double now_s(const mpi_ctx *x) { return MPI_Wtime() - x->t0; }

/* The caller's give_up (opts): 1 when this rank must stop waiting. */
static int abandoned(mpi_ctx *x) {
  if (x->rc == TR_AAP_EABANDONED) return 1;
  if (!x->o->give_up || !x->o->give_up(x->o->give_up_user, x->err, x->errlen)) return 0;
  x->rc = TR_AAP_EABANDONED;
  return 1;
}

/* Completes n requests unless the caller gives up first. */
static int wait_reqs(mpi_ctx *x, int n, MPI_Request *q) {
  for (int spins = 0;; spins++) {
    /* asked first: after giving up, no MPI progress (coll_live_quiesce) */
    if (abandoned(x)) return TR_AAP_EABANDONED;
    int done = 0;
    MPI_Testall(n, q, &done, MPI_STATUSES_IGNORE);
    if (done) return TR_AAP_OK;
    if (spins > 64) {
      struct timespec t = {0, 200000};
      nanosleep(&t, NULL);
    }
  }
}

/* Receives the message a probe matched into buf through wait_reqs: a
 * blocking receive after a probe waits for the rest of a large message,
 * which a rank stopped mid-message never sends (a transport without
 * single-copy reads, as between nodes). On giving up, buf stays with the
 * live request: the caller must not free it. */
static int recv_probed(mpi_ctx *x, void *buf, int bytes, MPI_Message *msg) {
  MPI_Request q;
  if (MPI_Imrecv(buf, bytes, MPI_BYTE, msg, &q) != MPI_SUCCESS) {
    if (!x->rc) x->rc = TR_AAP_ESYS;
    return x->rc;
  }
  return wait_reqs(x, 1, &q);
}

static void reap(mpi_ctx *x, int all) {
  pend **pp = &x->sends;
  while (*pp) {
    pend *p = *pp;
    int done = 0;
    if (all) {
      if (wait_reqs(x, 1, &p->req)) return;
      done = 1;
    } else {
      MPI_Test(&p->req, &done, MPI_STATUS_IGNORE);
    }
    if (done) {
      *pp = p->next;
      free(p->buf);
      free(p);
    } else {
      pp = &p->next;
    }
  }
}

static int post(mpi_ctx *x, void *buf, int bytes, int dest, int tag) {
  pend *p = malloc(sizeof *p);
  if (!p) {
    free(buf);
    return TR_AAP_ENOMEM;
  }
  p->buf = buf;
  if (MPI_Isend(buf, bytes, MPI_BYTE, dest, tag, x->comm, &p->req) != MPI_SUCCESS) {
    free(buf);
    free(p);
    return TR_AAP_ESYS;
  }
  p->next = x->sends;
  x->sends = p;
  return TR_AAP_OK;
}

static int send_small(mpi_ctx *x, const void *data, int bytes, int dest, int tag) {
  void *b = malloc((size_t)bytes);
  if (!b) return TR_AAP_ENOMEM;
  memcpy(b, data, (size_t)bytes);
  return post(x, b, bytes, dest, tag);
}

static void send_status(mpi_ctx *x, int64_t f) {
  const aap_frag_rt *F = &x->c.f[f];
  double s[8] = {(double)f, (double)F->status, (double)F->round,
                 (double)(F->eta > 0),  F->t_start, F->t_end, F->ema, (double)F->has_ema};
  for (int r = 0; r < x->size; r++)
    if (r != x->me && x->rc == 0) x->rc = send_small(x, s, sizeof s, r, T_STATUS);
}

static void apply_status(mpi_ctx *x, const double *s) {
  int64_t f = (int64_t)s[0];
  if (f < 0 || f >= x->c.nf) return;
  aap_frag_rt *F = &x->c.f[f];
  F->status = (int)s[1];
  F->round = (int64_t)s[2];
  F->eta = (int64_t)s[3];
  F->t_start = s[4];
  F->t_end = s[5];
  F->ema = s[6];
  F->has_ema = (int)s[7];
}

static void send_batch(mpi_ctx *x, aap_batch *b) {
  size_t vs = x->c.p->value_size;
  size_t bytes = 4 * sizeof(int64_t) + sizeof(double) + (size_t)b->n * (sizeof(int64_t) + vs);
  unsigned char *buf = malloc(bytes);
  if (!buf || bytes > (size_t)INT32_MAX) {
    free(buf);
    if (x->rc == 0) x->rc = TR_AAP_ENOMEM;
    aap_batch_free(b);
    return;
  }
  int64_t h[4] = {b->src, b->dst, b->round, b->n};
  memcpy(buf, h, sizeof h);
  memcpy(buf + sizeof h, &b->t_sent, sizeof(double));
  memcpy(buf + sizeof h + sizeof(double), b->cells, (size_t)b->n * sizeof(int64_t));
  memcpy(buf + sizeof h + sizeof(double) + (size_t)b->n * sizeof(int64_t), b->vals, (size_t)b->n * vs);
  int rc = post(x, buf, (int)bytes, x->c.f[b->dst].owner, T_DATA);
  if (rc && x->rc == 0) x->rc = rc;
  aap_batch_free(b);
  /* the injector's stop-send: this rank stops with the batch posted */
  const tr_aap_inject *inj = &x->o->inject;
  if (!rc && inj->stop_send_after > 0 && x->me == inj->stop_send_rank && ++x->batches_posted == inj->stop_send_after)
    raise(SIGSTOP);
}

static void got_batch(mpi_ctx *x, unsigned char *buf, int bytes) {
  size_t vs = x->c.p->value_size;
  int64_t h[4];
  if ((size_t)bytes < sizeof h + sizeof(double)) return;
  memcpy(h, buf, sizeof h);
  aap_batch *b = calloc(1, sizeof *b);
  if (b) {
    b->cells = malloc((size_t)(h[3] ? h[3] : 1) * sizeof(int64_t));
    b->vals = malloc((size_t)(h[3] ? h[3] : 1) * vs);
  }
  if (!b || !b->cells || !b->vals) {
    aap_batch_free(b);
    if (x->rc == 0) x->rc = TR_AAP_ENOMEM;
    return;
  }
  b->src = h[0];
  b->dst = h[1];
  b->round = h[2];
  b->n = h[3];
  memcpy(&b->t_sent, buf + sizeof h, sizeof(double));
  memcpy(b->cells, buf + sizeof h + sizeof(double), (size_t)b->n * sizeof(int64_t));
  memcpy(b->vals, buf + sizeof h + sizeof(double) + (size_t)b->n * sizeof(int64_t), (size_t)b->n * vs);
  int64_t dst = b->dst;
  int first = x->c.f[dst].eta == 0;
  aap_on_send(&x->c, b); /* the owner applies the receiver-side bookkeeping */
  aap_deliver(&x->c, b, now_s(x), &x->ws);
  x->reported = 0;
  if (first) send_status(x, dst);
}

static void wave_done(mpi_ctx *x);

static void start_wave(mpi_ctx *x) {
  x->wave_out = 1;
  x->replies = 0;
  x->all_ack = 1;
  x->wsent = x->wrecv = 0;
  x->wave_id++;
  x->waves++;
  for (int r = 1; r < x->size; r++)
    if (x->rc == 0) x->rc = send_small(x, &x->wave_id, sizeof x->wave_id, r, T_PROBE);
  /* rank 0's own answer */
  int ack = aap_all_inactive(&x->c, 0);
  x->replies++;
  x->all_ack &= ack;
  x->wsent += x->ws.batches_sent;
  x->wrecv += x->ws.batches_recv;
  if (!ack) x->inactive[0] = 0;
  if (x->replies == x->size) wave_done(x); /* a single rank answers alone */
}

static void terminate_all(mpi_ctx *x, int code) {
  long long m = code;
  for (int r = 0; r < x->size; r++)
    if (r != x->me) send_small(x, &m, sizeof m, r, T_TERM);
  x->terminated = 1;
  if (code && x->rc == 0) x->rc = code;
}

static void wave_done(mpi_ctx *x) {
  x->wave_out = 0;
  if (aap_term_wave(&x->wave, x->all_ack, x->wsent, x->wrecv)) {
    terminate_all(x, 0);
    return;
  }
  /* all-ack waves are repeated (second wave, or a batch in flight); a WAIT makes rank 0
     wait for that rank's next INACTIVE */
  if (x->all_ack) start_wave(x);
}

/* Receives everything pending; returns the number of messages handled. */
static int drain(mpi_ctx *x) {
  int handled = 0;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    MPI_Message msg;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, x->comm, &flag, &msg, &st);
    if (!flag) break;
    int bytes;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    unsigned char *buf = malloc((size_t)(bytes > 0 ? bytes : 1));
    if (!buf) {
      x->rc = TR_AAP_ENOMEM;
      break;
    }
    if (recv_probed(x, buf, bytes, &msg)) break; /* given up (x->rc set) */
    handled++;
    switch (st.MPI_TAG) {
    case T_DATA:
      got_batch(x, buf, bytes);
      break;
    case T_STATUS:
      if (bytes == 8 * (int)sizeof(double)) {
        double s[8];
        memcpy(s, buf, sizeof s);
        apply_status(x, s);
      }
      break;
    case T_INACTIVE:
      if (x->me == 0) x->inactive[st.MPI_SOURCE] = 1;
      break;
    case T_PROBE: {
      long long rep[4];
      memcpy(&rep[0], buf, sizeof(long long));
      int ack = aap_all_inactive(&x->c, x->me);
      rep[1] = ack;
      rep[2] = x->ws.batches_sent;
      rep[3] = x->ws.batches_recv;
      if (!ack) x->reported = 0;
      x->rc = x->rc ? x->rc : send_small(x, rep, sizeof rep, 0, T_REPLY);
      break;
    }
    case T_REPLY:
      if (x->me == 0 && bytes == 4 * (int)sizeof(long long)) {
        long long rep[4];
        memcpy(rep, buf, sizeof rep);
        if (rep[0] == x->wave_id && x->wave_out) {
          x->replies++;
          x->all_ack &= (int)rep[1];
          if (!rep[1]) x->inactive[st.MPI_SOURCE] = 0;
          x->wsent += rep[2];
          x->wrecv += rep[3];
          if (x->replies == x->size) wave_done(x);
        }
      }
      break;
    case T_TERM: {
      long long code;
      memcpy(&code, buf, sizeof code);
      x->terminated = 1;
      if (code && x->rc == 0) {
        x->rc = (int)code;
        aap_set_err(x->err, x->errlen, "aap mpi: rank %d reported: %s", st.MPI_SOURCE,
                    tr_aap_strerror((int)code));
      }
      break;
    }
    case T_FLUSH: /* a rank that saw TERM before this one did */
      x->flushes++;
      break;
    default:
      break;
    }
    free(buf);
    if (x->terminated) break;
  }
  return handled;
}

static void flush_all(mpi_ctx *x) {
  char z = 0;
  for (int r = 0; r < x->size; r++)
    if (r != x->me) send_small(x, &z, 1, r, T_FLUSH);
  int got = x->flushes;
  while (got < x->size - 1) {
    MPI_Status st;
    MPI_Message msg;
    int flag = 0;
    if (abandoned(x)) return;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, x->comm, &flag, &msg, &st);
    if (!flag) {
      struct timespec t = {0, 100000};
      nanosleep(&t, NULL);
      continue;
    }
    int bytes;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    unsigned char *buf = malloc((size_t)(bytes > 0 ? bytes : 1));
    if (!buf) {
      if (!x->rc) x->rc = TR_AAP_ENOMEM;
      return;
    }
    if (recv_probed(x, buf, bytes, &msg)) return; /* given up: buf stays with the request */
    if (st.MPI_TAG == T_FLUSH) got++;
    free(buf);
  }
  reap(x, 1);
}

static void nap(double s) {
  if (s > 2e-4) s = 2e-4;
  if (s < 1e-6) s = 1e-6;
  struct timespec t = {0, (long)(s * 1e9)};
  while (nanosleep(&t, &t) == -1 && errno == EINTR) {
  }
}

int tr_aap_run_mpi(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                   void *comm, tr_aap_stats *stats, char *err, size_t errlen) {
  int rc = aap_check_args(p, L, o, err, errlen);
  if (rc) return rc;
  if (!comm) {
    aap_set_err(err, errlen, "aap mpi: no communicator");
    return TR_AAP_EINVAL;
  }
  mpi_ctx *x = calloc(1, sizeof *x);
  if (!x) return TR_AAP_ENOMEM;
  x->err = err;
  x->errlen = errlen;
  x->o = o;
  MPI_Request q;
  if (MPI_Comm_idup(*(MPI_Comm *)comm, &x->comm, &q) != MPI_SUCCESS) {
    free(x);
    return TR_AAP_ESYS;
  }
  if (wait_reqs(x, 1, &q)) {
    free(x);
    return TR_AAP_EABANDONED;
  }
  MPI_Comm_rank(x->comm, &x->me);
  MPI_Comm_size(x->comm, &x->size);
  x->inactive = calloc((size_t)x->size, 1);
  if (!x->inactive || (rc = aap_core_init(&x->c, p, L, o, x->me, x->size)) != 0) {
    /* every rank fails the same way on allocation only in theory; report it */
    free(x->inactive);
    MPI_Comm_free(&x->comm);
    free(x);
    return rc ? rc : TR_AAP_ENOMEM;
  }
  for (int64_t f = 0; f < x->c.nf; f++) x->c.f[f].owner = (int)(f % x->size);
  MPI_Ibarrier(x->comm, &q);
  if (wait_reqs(x, 1, &q)) {
    aap_core_free(&x->c);
    free(x->inactive);
    free(x);
    return TR_AAP_EABANDONED;
  }
  x->t0 = MPI_Wtime();
  aap_core *c = &x->c;
  while (!x->terminated) {
    /* asked before any progress: after giving up, none (coll_live_quiesce) */
    if (abandoned(x)) break;
    drain(x);
    reap(x, 0);
    if (x->terminated) break;
    if (x->rc) {
      terminate_all(x, x->rc);
      break;
    }
    double now = now_s(x), next = INFINITY;
    int64_t best = -1;
    for (int64_t f = x->me; f < c->nf; f += x->size) {
      double t = aap_start_time(c, f, now);
      if (t <= now) {
        if (aap_prefer(c, f, best)) best = f;
      } else if (t < next) {
        next = t;
      }
    }
    if (best >= 0) {
      x->reported = 0;
      aap_begin(c, best, now, &x->ws);
      send_status(x, best);
      double t1 = now_s(x);
      int64_t work = 0, nread = 0;
      int r = aap_run_round(c, best, &work, &nread);
      double t2 = now_s(x);
      if (x->me == o->inject.slow_worker && o->inject.slow_factor > 1) nap((o->inject.slow_factor - 1) * (t2 - t1));
      double t3 = now_s(x);
      x->ws.busy_s += t3 - t1;
      x->ws.rounds++;
      x->ws.work += work;
      aap_batch *out = NULL;
      int r2 = aap_end(c, best, t3, t3 - t1, &out, &x->ws);
      while (out) {
        aap_batch *b = out;
        out = b->next;
        b->next = NULL;
        if (c->f[b->dst].owner == x->me) {
          int first = c->f[b->dst].eta == 0;
          aap_on_send(c, b);
          int64_t d = b->dst;
          aap_deliver(c, b, t3, &x->ws);
          if (first) send_status(x, d);
        } else {
          send_batch(x, b);
        }
      }
      send_status(x, best);
      if ((r || r2) && x->rc == 0) {
        x->rc = r ? r : r2;
        aap_set_err(err, errlen, "aap mpi: round of fragment %lld failed on rank %d",
                    (long long)best, x->me);
      }
      continue;
    }
    if (aap_all_inactive(c, x->me)) {
      if (!x->reported) {
        x->reported = 1;
        if (x->me == 0) x->inactive[0] = 1;
        else if (x->rc == 0) x->rc = send_small(x, &x->me, sizeof x->me, 0, T_INACTIVE);
      }
      if (x->me == 0 && !x->wave_out) {
        int all = 1;
        for (int r = 0; r < x->size; r++) all &= x->inactive[r];
        if (all) {
          start_wave(x);
          continue;
        }
      }
    }
    double idle0 = now_s(x);
    nap(next - now);
    x->ws.idle_s += now_s(x) - idle0;
  }
  double makespan = now_s(x);
  if (x->rc != TR_AAP_EABANDONED) flush_all(x);
  /* agree on the verdict */
  int mine = x->rc, worst = 0;
  if (mine != TR_AAP_EABANDONED) {
    MPI_Iallreduce(&mine, &worst, 1, MPI_INT, MPI_MIN, x->comm, &q);
    if (wait_reqs(x, 1, &q)) worst = TR_AAP_EABANDONED;
  } else {
    worst = mine;
  }
  rc = worst;
  if (rc == TR_AAP_EABANDONED) {
    /* MPI state left live on purpose (see give_up): requests posted on x
     * and on this frame, never completed because giving up quiesced the
     * process (coll_live_quiesce) */
    aap_core_free(c);
    free(x->inactive);
    free(x);
    return rc;
  }
  if (rc && !mine) aap_set_err(err, errlen, "aap mpi: another rank failed: %s", tr_aap_strerror(rc));
  if (stats) {
    if (aap_stats_alloc(stats, "mpi", o, x->size) == 0) {
      long long wv = x->waves, mr = 0, gw = 0, gmr = 0;
      for (int64_t f = x->me; f < c->nf; f += x->size)
        if (c->f[f].round > mr) mr = c->f[f].round;
      MPI_Request qs[4];
      MPI_Iallgather(&x->ws, (int)sizeof x->ws, MPI_BYTE, stats->w, (int)sizeof x->ws, MPI_BYTE, x->comm, &qs[0]);
      MPI_Iallreduce(&makespan, &stats->makespan_s, 1, MPI_DOUBLE, MPI_MAX, x->comm, &qs[1]);
      MPI_Iallreduce(&wv, &gw, 1, MPI_LONG_LONG, MPI_MAX, x->comm, &qs[2]);
      MPI_Iallreduce(&mr, &gmr, 1, MPI_LONG_LONG, MPI_MAX, x->comm, &qs[3]);
      if (wait_reqs(x, 4, qs)) {
        aap_core_free(c);
        free(x->inactive);
        free(x);
        return TR_AAP_EABANDONED;
      }
      stats->waves = gw;
      stats->max_round = gmr;
    } else if (rc == 0) {
      rc = TR_AAP_ENOMEM;
    }
  }
  /* after the collectives: under MPI a program's Assemble may send to rank 0 */
  if (rc == 0) rc = aap_assemble_all(c, x->me, err, errlen);
  aap_core_free(c);
  free(x->inactive);
  MPI_Comm_free(&x->comm);
  free(x);
  return rc;
}
#endif
