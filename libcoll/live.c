/*
 * live.c - the liveness monitor (see coll_live.h).
 *
 * One background thread per rank: every period it posts one heartbeat to
 * each peer (at most one in flight per peer, so a stopped peer whose queue
 * fills costs nothing) and receives whatever heartbeats arrived, stamping
 * last[r] with the monotonic time. A rank that sent BYE has finished its
 * part of the job and is never counted as lost afterwards. Everything the
 * other threads read (last, bye) is under one mutex.
 *
 * Closing (coll_live_stop): the thread is joined, BYE is sent to every
 * peer, and every incoming message is received until each peer's BYE has
 * come (MPI keeps one sender's messages in order, so after a peer's BYE
 * nothing of it can follow) or the peer fell silent. Then the monitor's own
 * sends are completed (the peers receive them in their own stop), so no
 * message is left unmatched and no request live on success.
 *
 * Telling the others (the loss round): the survivors of a loss do not find
 * it at the same moment - each when one of its waits next asks, after its own
 * view of the silence - and under default mpirun the first survivor to exit
 * ends the rest, often before they have said which rank was lost. So the
 * first time a process finds a loss (coll_live_lost, while everything it has
 * posted is still owned by a live frame), it sends SAW(v) to every other
 * peer and waits until each has sent its own SAW, is itself silent beyond
 * the timeout, or one more timeout has passed. A SAW received latches the
 * same loss, so a survivor learns of it within a heartbeat poll and its next
 * wait gives up. Concurrent callers wait for the round; the closing handshake
 * (coll_live_stop) runs the same round itself.
 *
 * Quiescing (coll_live_quiesce): a wait that gives up leaves its requests
 * posted, and their buffers are then released (a returned stack frame, a
 * freed tile). Any later MPI call of this process - above all this thread's
 * polling, every few ms until the process exits - drives Open MPI's
 * progress engine, which would complete such a receive into that memory
 * when a surviving rank's message arrives (seen: a sink header written into
 * a dead frame of recv_tile, then SIGSEGV). So the first loss found, the
 * first cancel seen by a wait, or a caller's word quiesces the monitor: its
 * thread is joined (it makes no MPI call after that), the loss is latched,
 * and every later wait returns at once without touching MPI.
 */
#include "coll_live.h"
#include "coll.h"
#include "coll_clock.h"

#include <stdlib.h>
#include <string.h>

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>

enum { TAG_BEAT = 1, TAG_BYE = 2, TAG_SAW = 3 };

struct coll_live {
  int active; /* 0: inert */
  int rank, size;
  int start_failed;
  MPI_Comm comm;
  pthread_t th;
  int th_started;
  pthread_mutex_t mu;
  pthread_mutex_t drain_mu; /* one drainer at a time (receive_all) */
  double timeout_ms;
  double *last; /* per rank: when last heard from (monotonic s) */
  char *bye;    /* per rank: sent BYE */
  int stopping;
  atomic_int quiet; /* quiesced: no MPI call any more (a plain load: waits ask before each progress) */
  int lost_rank;    /* the loss found first (latched), -1: none */
  char *saw;        /* per rank: sent SAW (it has found a loss) */
  int round;        /* the loss round: 0 not begun, 1 running, 2 over */
  pthread_cond_t round_cv;
  MPI_Request *saw_req;
  int saw_val;
  pthread_mutex_t join_mu; /* one joiner of the thread */
  int joined;
  MPI_Request *beat_req, *bye_req;
  int beat_val;
};

static double period_s(const coll_live *l) {
  double p = l->timeout_ms / 10.0;
  if (p < 10) p = 10;
  if (p > 500) p = 500;
  return p * 1e-3;
}

/* Receives every waiting monitor message (caller holds nothing). One
 * thread drains at a time: a wait about to judge silence (coll_live_lost)
 * drains first, and if the monitor's thread were draining beside it, a
 * message that thread had taken off the queue but not yet stamped would be
 * missing from the judgement - a peer that had just spoken (even its SAW
 * naming the real loss) would look silent longest and be named instead
 * (seen under load: rank 2 named rank 1, which had told it that rank 0
 * was lost). Waiting for drain_mu means that thread's drain has stamped
 * everything it took. */
static void receive_all(coll_live *l) {
  pthread_mutex_lock(&l->drain_mu);
  for (;;) {
    int flag = 0, v = 0;
    MPI_Status st;
    MPI_Message msg;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, l->comm, &flag, &msg, &st);
    if (!flag) break;
    MPI_Mrecv(&v, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
    double now = coll_now();
    pthread_mutex_lock(&l->mu);
    l->last[st.MPI_SOURCE] = now;
    if (st.MPI_TAG == TAG_BYE) l->bye[st.MPI_SOURCE] = 1;
    if (st.MPI_TAG == TAG_SAW) {
      l->saw[st.MPI_SOURCE] = 1;
      /* a peer's word is this rank's loss too (never its own: a stopped
       * rank continued by mpirun learns that the others gave up on it) */
      if (l->lost_rank == -1 && v >= 0 && v < l->size && v != l->rank) l->lost_rank = v;
    }
    pthread_mutex_unlock(&l->mu);
  }
  pthread_mutex_unlock(&l->drain_mu);
}

static void beat(coll_live *l) {
  for (int r = 0; r < l->size; r++) {
    if (r == l->rank) continue;
    int done = 1;
    if (l->beat_req[r] != MPI_REQUEST_NULL) MPI_Test(&l->beat_req[r], &done, MPI_STATUS_IGNORE);
    if (done) MPI_Isend(&l->beat_val, 1, MPI_INT, r, TAG_BEAT, l->comm, &l->beat_req[r]);
  }
}

static void *live_main(void *arg) {
  coll_live *l = arg;
  double last_beat = -1e9;
  for (;;) {
    pthread_mutex_lock(&l->mu);
    int stop = l->stopping || atomic_load(&l->quiet);
    double per = period_s(l);
    pthread_mutex_unlock(&l->mu);
    if (stop) return NULL;
    double now = coll_now();
    /* against the current period: --rank-timeout may shorten it */
    if (now >= last_beat + per) {
      beat(l);
      last_beat = now;
    }
    receive_all(l);
    coll_sleep_ms(per * 1e3 < 10 ? per * 1e3 : 10);
  }
}

/* The rank silent longest beyond the timeout: a rank that has quiesced
 * (and so stopped beating) after seeing the real loss is silent for less
 * time than the rank it saw lost, and is not named instead of it. */
static int lost_locked(const coll_live *l, double now, double *silent_ms) {
  if (l->start_failed) return -2;
  int who = -1;
  double most = l->timeout_ms;
  for (int r = 0; r < l->size; r++) {
    if (r == l->rank || l->bye[r]) continue;
    double s = (now - l->last[r]) * 1e3;
    if (s > most) {
      most = s;
      who = r;
    }
  }
  if (who >= 0 && silent_ms) *silent_ms = most;
  return who;
}

/* Every peer but the lost one has found the loss too (sent SAW), or is
 * itself silent beyond the timeout (caller holds mu). */
static int all_saw_locked(const coll_live *l, int lost, double now) {
  for (int r = 0; r < l->size; r++) {
    if (r == l->rank || r == lost || l->saw[r]) continue;
    if ((now - l->last[r]) * 1e3 <= l->timeout_ms) return 0;
  }
  return 1;
}

/* The loss round (top of the file): SAW(lost) to every other peer, then wait
 * for theirs, bounded by one timeout. receive: the caller receives (the
 * thread is joined); otherwise the thread does. Gives up at once when the
 * process quiesces meanwhile (a signal: nobody receives any more). */
static void loss_round(coll_live *l, int lost, int receive) {
  l->saw_val = lost;
  for (int r = 0; r < l->size; r++)
    if (r != l->rank && r != lost) MPI_Isend(&l->saw_val, 1, MPI_INT, r, TAG_SAW, l->comm, &l->saw_req[r]);
  const double t0 = coll_now();
  for (;;) {
    if (receive)
      receive_all(l);
    else if (atomic_load(&l->quiet))
      return;
    const double now = coll_now();
    pthread_mutex_lock(&l->mu);
    const int done = all_saw_locked(l, lost, now) || (now - t0) * 1e3 > l->timeout_ms;
    pthread_mutex_unlock(&l->mu);
    if (done) return;
    coll_sleep_ms(1);
  }
}

/* Joins the thread once, whoever asks first (never the thread itself). */
static void join_thread(coll_live *l) {
  pthread_mutex_lock(&l->join_mu);
  if (l->th_started && !l->joined) {
    pthread_join(l->th, NULL);
    l->joined = 1;
  }
  pthread_mutex_unlock(&l->join_mu);
}

void coll_live_quiesce(const coll_live *cl) {
  if (!cl || !cl->active) return;
  coll_live *l = (coll_live *)cl; /* const for the callers that only wait */
  atomic_store(&l->quiet, 1);
  join_thread(l);
}

int coll_live_quiescent(const coll_live *l) {
  if (!l || !l->active) return 0;
  return atomic_load(&((coll_live *)l)->quiet);
}

int coll_live_lost(const coll_live *l, double *silent_ms) {
  if (!l || !l->active) return -1;
  coll_live *m = (coll_live *)l;
  pthread_mutex_lock(&m->mu);
  if (m->lost_rank == -1 && lost_locked(l, coll_now(), NULL) >= 0 && !atomic_load(&m->quiet)) {
    /* Before naming a rank silent, what has arrived is received here: the
     * monitor's thread may not have run for a while on a loaded machine,
     * and then every peer looks silent and the oldest stamp - any of them -
     * would be named; a peer's SAW already queued names the loss the
     * others found (seen: rank 2 named rank 1, which had left after its
     * loss round, instead of the stopped rank 3). */
    pthread_mutex_unlock(&m->mu);
    receive_all(m);
    pthread_mutex_lock(&m->mu);
  }
  if (m->lost_rank == -1)
    m->lost_rank = lost_locked(l, coll_now(), silent_ms);
  else if (silent_ms && m->lost_rank >= 0)
    *silent_ms = (coll_now() - m->last[m->lost_rank]) * 1e3;
  int r = m->lost_rank;
  if (r >= 0 && m->round == 0 && !atomic_load(&m->quiet)) {
    /* the first to ask runs the round; its buffers and everybody else's
     * are still live, so MPI progress meanwhile is safe */
    m->round = 1;
    pthread_mutex_unlock(&m->mu);
    loss_round(m, r, 0);
    pthread_mutex_lock(&m->mu);
    m->round = 2;
    pthread_cond_broadcast(&m->round_cv);
  }
  while (m->round == 1) pthread_cond_wait(&m->round_cv, &m->mu);
  pthread_mutex_unlock(&m->mu);
  /* a loss found ends this process's part of the job: its waits give up */
  if (r != -1) coll_live_quiesce(m);
  return r;
}

void coll_live_set_timeout(coll_live *l, double timeout_ms) {
  if (!l || timeout_ms <= 0) return;
  if (!l->active) {
    l->timeout_ms = timeout_ms;
    return;
  }
  pthread_mutex_lock(&l->mu);
  l->timeout_ms = timeout_ms;
  pthread_mutex_unlock(&l->mu);
}

double coll_live_timeout(const coll_live *l) { return l ? l->timeout_ms : COLL_LIVE_DEFAULT_TIMEOUT_MS; }

int coll_live_start(coll_live **out, const void *mpi_comm, double timeout_ms) {
  *out = NULL;
  coll_live *l = calloc(1, sizeof *l);
  if (!l) return COLL_ENOMEM;
  l->timeout_ms = timeout_ms > 0 ? timeout_ms : COLL_LIVE_DEFAULT_TIMEOUT_MS;
  *out = l;
  int init = 0, fin = 0, level = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!mpi_comm || !init || fin) return COLL_LIVE_OK;
  MPI_Query_thread(&level);
  MPI_Comm user = *(const MPI_Comm *)mpi_comm;
  MPI_Comm_size(user, &l->size);
  MPI_Comm_rank(user, &l->rank);
  if (l->size < 2 || level < MPI_THREAD_MULTIPLE) return COLL_LIVE_OK;
  l->last = calloc((size_t)l->size, sizeof *l->last);
  l->bye = calloc((size_t)l->size, 1);
  l->saw = calloc((size_t)l->size, 1);
  l->beat_req = malloc((size_t)l->size * sizeof *l->beat_req);
  l->bye_req = malloc((size_t)l->size * sizeof *l->bye_req);
  l->saw_req = malloc((size_t)l->size * sizeof *l->saw_req);
  if (!l->last || !l->bye || !l->saw || !l->beat_req || !l->bye_req || !l->saw_req) return COLL_ENOMEM;
  for (int r = 0; r < l->size; r++) l->beat_req[r] = l->bye_req[r] = l->saw_req[r] = MPI_REQUEST_NULL;
  pthread_mutex_init(&l->mu, NULL);
  pthread_mutex_init(&l->drain_mu, NULL);
  pthread_cond_init(&l->round_cv, NULL);
  pthread_mutex_init(&l->join_mu, NULL);
  l->lost_rank = -1;
  l->active = 1;
  /* The duplicate is collective: bounded like every other wait. */
  MPI_Request req;
  if (MPI_Comm_idup(user, &l->comm, &req) != MPI_SUCCESS) {
    l->start_failed = 1;
    return COLL_LIVE_EMPI;
  }
  const double t0 = coll_now();
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if ((coll_now() - t0) * 1e3 > l->timeout_ms) {
      l->start_failed = 1;
      return COLL_LIVE_LOST;
    }
    coll_sleep_ms(0.2);
  }
  const double now = coll_now();
  for (int r = 0; r < l->size; r++) l->last[r] = now;
  if (pthread_create(&l->th, NULL, live_main, l) != 0) {
    l->active = 0; /* no thread: inert rather than declaring everybody lost */
    return COLL_LIVE_OK;
  }
  l->th_started = 1;
  return COLL_LIVE_OK;
}

int coll_live_wait(const coll_live *l, int n, void *reqs, coll_live_cancel_fn cancel, void *user, int *lost) {
  MPI_Request *q = reqs;
  double nap = 0.005;
  for (int spins = 0;; spins++) {
    int done = 0;
    /* quiesced: no progress at all (see the top of the file) */
    if (coll_live_quiescent(l)) {
      int r = coll_live_lost(l, NULL);
      if (r == -1) return COLL_LIVE_CANCELED;
      if (lost) *lost = r;
      return COLL_LIVE_LOST;
    }
    if (MPI_Testall(n, q, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return COLL_LIVE_EMPI;
    if (done) return COLL_LIVE_OK;
    if (cancel && cancel(user)) {
      coll_live_quiesce(l);
      return COLL_LIVE_CANCELED;
    }
    int r = coll_live_lost(l, NULL);
    if (r != -1) {
      if (lost) *lost = r;
      return COLL_LIVE_LOST;
    }
    /* Spin briefly (tiles usually arrive back to back), then nap up to 1 ms. */
    if (spins > 64) {
      coll_sleep_ms(nap);
      if (nap < 1.0) nap *= 2;
    }
  }
}

int coll_live_stop(coll_live *l, int *lost) {
  if (!l) return COLL_LIVE_OK;
  int rc = COLL_LIVE_OK;
  if (l->active) {
    pthread_mutex_lock(&l->mu);
    l->stopping = 1;
    const int quiet = atomic_load(&l->quiet);
    pthread_mutex_unlock(&l->mu);
    join_thread(l);
    if (quiet) {
      /* requests were given up: no handshake, no MPI_Finalize */
      if (lost) *lost = coll_live_lost(l, NULL);
      rc = COLL_LIVE_LOST;
    } else if (!l->start_failed) {
      for (int r = 0; r < l->size; r++)
        if (r != l->rank) MPI_Isend(&l->beat_val, 1, MPI_INT, r, TAG_BYE, l->comm, &l->bye_req[r]);
      /* Every peer's BYE, or its loss. */
      for (;;) {
        receive_all(l);
        pthread_mutex_lock(&l->mu);
        int all = 1;
        for (int r = 0; r < l->size; r++) all &= r == l->rank || l->bye[r];
        /* a peer's SAW latched the loss, or this rank sees it itself */
        int who = l->lost_rank != -1 ? l->lost_rank : lost_locked(l, coll_now(), NULL);
        const int tell = !all && who >= 0 && l->round == 0;
        if (tell) {
          l->lost_rank = who;
          l->round = 1;
        }
        pthread_mutex_unlock(&l->mu);
        if (all) break;
        if (who != -1) {
          if (tell) loss_round(l, who, 1);
          if (lost) *lost = who;
          rc = COLL_LIVE_LOST;
          break;
        }
        coll_sleep_ms(1);
      }
      /* Our own sends: the peers receive them in their stop. */
      const double t0 = coll_now();
      while (rc == COLL_LIVE_OK) {
        int d1 = 0, d2 = 0;
        MPI_Testall(l->size, l->beat_req, &d1, MPI_STATUSES_IGNORE);
        MPI_Testall(l->size, l->bye_req, &d2, MPI_STATUSES_IGNORE);
        if (d1 && d2) break;
        if ((coll_now() - t0) * 1e3 > l->timeout_ms) {
          if (lost) *lost = -1;
          rc = COLL_LIVE_LOST;
          break;
        }
        coll_sleep_ms(0.2);
      }
      if (rc == COLL_LIVE_OK) MPI_Comm_free(&l->comm);
    } else {
      if (lost) *lost = -2;
      rc = COLL_LIVE_LOST;
    }
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->drain_mu);
    pthread_mutex_destroy(&l->join_mu);
    pthread_cond_destroy(&l->round_cv);
  }
  free(l->last);
  free(l->bye);
  free(l->saw);
  free(l->beat_req);
  free(l->bye_req);
  free(l->saw_req);
  free(l);
  return rc;
}

#else /* no MPI: an inert monitor */

struct coll_live {
  double timeout_ms;
};

int coll_live_start(coll_live **out, const void *mpi_comm, double timeout_ms) {
  (void)mpi_comm;
  *out = calloc(1, sizeof **out);
  if (!*out) return COLL_ENOMEM;
  (*out)->timeout_ms = timeout_ms > 0 ? timeout_ms : COLL_LIVE_DEFAULT_TIMEOUT_MS;
  return COLL_LIVE_OK;
}
void coll_live_set_timeout(coll_live *l, double timeout_ms) {
  if (l && timeout_ms > 0) l->timeout_ms = timeout_ms;
}
double coll_live_timeout(const coll_live *l) { return l ? l->timeout_ms : COLL_LIVE_DEFAULT_TIMEOUT_MS; }
int coll_live_lost(const coll_live *l, double *silent_ms) {
  (void)l;
  (void)silent_ms;
  return -1;
}
void coll_live_quiesce(const coll_live *l) { (void)l; }
int coll_live_quiescent(const coll_live *l) {
  (void)l;
  return 0;
}
int coll_live_wait(const coll_live *l, int n, void *reqs, coll_live_cancel_fn cancel, void *user, int *lost) {
  (void)l, (void)n, (void)reqs, (void)cancel, (void)user, (void)lost;
  return COLL_LIVE_OK;
}
int coll_live_stop(coll_live *l, int *lost) {
  (void)lost;
  free(l);
  return COLL_LIVE_OK;
}

#endif
