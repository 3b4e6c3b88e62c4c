/*
 * dist.c - rank queries, the bounded wait and status agreement over
 * MPI_COMM_WORLD (see dist.h).
 *
 * One vote protocol: a libcoll allreduce of a vote - rank, status, line -
 * under an operation that keeps the lowest failing rank's (a reduce to the
 * writer for tr_dist_report), on the command's context (run->coll), or,
 * for a library caller that gave none, on one this file makes at the first
 * vote (every rank is there) and keeps. The reductions of values go through
 * the same context. All of it is bounded by the monitor, so a rank that is
 * killed or stopped ends it within the rank timeout instead of hanging
 * every other rank.
 */
#include "dist.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "coll.h"
#include "coll_live.h"
#include "status.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>

static int mpi_active(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

int tr_rank(void) {
  int r = 0;
  if (mpi_active()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int tr_dist_size(void) {
  int n = 1;
  if (mpi_active()) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

static int live_status(const tr_run_opts *run, int rc, int lost, tr_error *err) {
  switch (rc) {
    case COLL_LIVE_OK: return TR_OK;
    case COLL_LIVE_CANCELED: return tr_fail(err, TR_EINTERRUPTED, "interrupted");
    case COLL_LIVE_LOST:
      if (lost < 0) return tr_fail(err, TR_ERANK, "not every rank of the job started within the rank timeout");
      return tr_fail(err, TR_ERANK, "rank %d stopped answering (silent for more than %.0f ms: killed, stopped or hung)",
                     lost, coll_live_timeout(run->live));
    default: return tr_fail(err, TR_EINTERNAL, "an MPI wait failed");
  }
}

int tr_dist_wait(const tr_run_opts *run, int n, void *reqs, tr_error *err) {
  int lost = -1;
  int rc = coll_live_wait(run ? run->live : NULL, n, reqs, run ? run->cancelled : NULL, run ? run->progress_user : NULL,
                          &lost);
  return live_status(run, rc, lost, err);
}

int tr_dist_check(const tr_run_opts *run, tr_error *err) {
  if (!run) return TR_OK;
  /* a loss found quiesces the monitor (coll_live_lost); so does a cancel:
   * the caller gives up what it has posted, and no MPI progress may follow
   * (coll_live_quiesce) */
  if (run->cancelled && run->cancelled(run->progress_user)) {
    coll_live_quiesce(run->live);
    return live_status(run, COLL_LIVE_CANCELED, -1, err);
  }
  int lost = coll_live_lost(run->live, NULL);
  if (lost != -1) return live_status(run, COLL_LIVE_LOST, lost, err);
  return coll_live_quiescent(run->live) ? live_status(run, COLL_LIVE_CANCELED, -1, err) : TR_OK;
}

/* One rank's vote: its rank and status (INT_MAX: it succeeded), its line. */
typedef struct {
  int rank, status;
  char msg[sizeof(((tr_error *)0)->msg)];
} vote;

/* libcoll user op: the lowest failing rank's vote wins (commutative). */
static void first_failure(const void *in, void *inout, size_t n, void *arg) {
  (void)arg;
  const vote *a = in;
  vote *b = inout;
  for (size_t i = 0; i < n; i++)
    if (a[i].rank < b[i].rank) b[i] = a[i];
}

/* A libcoll failure of a vote as a status. */
static int coll_rc_status(const tr_run_opts *run, coll_ctx *ctx, int rc, tr_error *err) {
  if (rc == COLL_ELOST) return live_status(run, COLL_LIVE_LOST, coll_live_lost(run ? run->live : NULL, NULL), err);
  if (rc == COLL_ECANCELED) return live_status(run, COLL_LIVE_CANCELED, -1, err);
  return tr_fail(err, TR_EINTERNAL, "agreement: %s", ctx ? coll_errmsg(ctx) : coll_strerror(rc));
}

/* The context every vote and reduction of a run goes through: the
 * command's, else this library's own, made at the first vote of a caller
 * that gave none (collective: every rank votes at the same point) and kept
 * for the process. NULL with *rc set when it cannot be made. */
static coll_ctx *vote_ctx(const tr_run_opts *run, int *rc) {
  *rc = COLL_OK;
  if (run && run->coll && coll_ctx_is_mpi(run->coll)) return run->coll;
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static coll_ctx *own;
  pthread_mutex_lock(&mu);
  if (!own) {
    coll_opts co;
    coll_opts_init(&co);
    co.live = run ? run->live : NULL;
    co.cancel = run ? run->cancelled : NULL;
    co.cancel_user = run ? run->progress_user : NULL;
    *rc = coll_ctx_create_world(&own, &co);
    if (*rc) own = NULL;
  }
  coll_ctx *c = own;
  pthread_mutex_unlock(&mu);
  return c;
}

/* Sets ctx up for a vote (bounded by the run's monitor, no injected
 * delay) and fills this rank's ballot. */
static void vote_begin(const tr_run_opts *run, coll_ctx *ctx, int status, const tr_error *err, vote *mine) {
  coll_opts co;
  coll_ctx_get_opts(ctx, &co);
  co.live = run ? run->live : NULL;
  co.cancel = run ? run->cancelled : NULL;
  co.cancel_user = run ? run->progress_user : NULL;
  /* the injector's delay is for the statistics (stats.c), not for votes */
  co.inject.delay_rank = -1;
  co.inject.delay_mask = 0;
  co.inject.delay_ms = 0;
  coll_ctx_set_opts(ctx, &co);
  memset(mine, 0, sizeof *mine);
  mine->rank = status ? tr_rank() : INT_MAX;
  mine->status = status;
  if (status && err) memcpy(mine->msg, err->msg, sizeof mine->msg);
}

static int agree_coll(const tr_run_opts *run, coll_ctx *ctx, int status, tr_error *err) {
  vote mine, all;
  vote_begin(run, ctx, status, err, &mine);
  coll_op op = coll_op_user(first_failure, NULL, sizeof(vote), 1);
  int rc = coll_allreduce(ctx, &mine, &all, 1, COLL_UINT8, &op);
  if (rc) return coll_rc_status(run, ctx, rc, err);
  if (all.rank == INT_MAX) return TR_OK;
  if (err) memcpy(err->msg, all.msg, sizeof all.msg);
  return all.status;
}

/* A rank that has given up (a loss found, a cancel) makes no MPI call
 * again (coll_live_quiesce): it knows the outcome on its own. */
static int given_up(const tr_run_opts *run, tr_error *err) {
  tr_error w;
  int st = tr_dist_check(run, &w);
  if (st && err) *err = w;
  return st;
}

int tr_dist_report(const tr_run_opts *run, int status, tr_error *err) {
  if (tr_dist_size() < 2) return status;
  const int gone = given_up(run, err);
  if (gone) return gone;
  int rc;
  coll_ctx *ctx = vote_ctx(run, &rc);
  if (!ctx) return coll_rc_status(run, NULL, rc, err);
  vote mine, all;
  vote_begin(run, ctx, status, err, &mine);
  all = mine;
  /* a reduce to rank 0 over a one-level tree: the others send and go on */
  coll_ta_opts ta;
  coll_ta_opts_init(&ta);
  const int n = tr_dist_size();
  ta.arity = n > 2 ? n - 1 : 2;
  ta.tan_policy = COLL_TAN_ROOT;
  ta.root_only = 1;
  if (run && run->live) ta.deadline_ms = COLL_DEADLINE_MONITORED_MS; /* the monitor bounds it */
  coll_op op = coll_op_user(first_failure, NULL, sizeof(vote), 1);
  rc = coll_timeout_reduce(ctx, &mine, &all, 1, COLL_UINT8, &op, &ta, NULL);
  if (rc) return coll_rc_status(run, ctx, rc, err);
  if (tr_rank() != 0) return status;
  if (all.rank == INT_MAX) return TR_OK;
  if (err) memcpy(err->msg, all.msg, sizeof all.msg);
  return all.status;
}

int tr_dist_vote(const tr_run_opts *run, int status, tr_error *err) {
  if (tr_dist_size() < 2) return status;
  const int gone = given_up(run, err);
  if (gone) return gone;
  int rc;
  coll_ctx *ctx = vote_ctx(run, &rc);
  if (!ctx) return coll_rc_status(run, NULL, rc, err);
  return agree_coll(run, ctx, status, err);
}

/* v[0 .. n) reduced element-wise over every rank, in place, through the
 * votes' context (bounded as a vote, no injected delay; a long vector takes
 * the pipelined halving path). */
static int reduce(const tr_run_opts *run, void *v, size_t n, coll_dtype cdt, coll_op_kind cop, tr_error *err) {
  if (tr_dist_size() < 2 || n == 0) return TR_OK;
  const int gone = given_up(run, err);
  if (gone) return gone;
  int rc;
  coll_ctx *ctx = vote_ctx(run, &rc);
  if (!ctx) return coll_rc_status(run, NULL, rc, err);
  vote unused; /* the context's options as for a vote */
  vote_begin(run, ctx, 0, NULL, &unused);
  coll_op op = coll_op_builtin(cop);
  rc = coll_allreduce(ctx, v, v, n, cdt, &op);
  return rc ? coll_rc_status(run, ctx, rc, err) : TR_OK;
}

int tr_dist_min(const tr_run_opts *run, double *v, int n, tr_error *err) {
  return reduce(run, v, n > 0 ? (size_t)n : 0, COLL_DOUBLE, COLL_MIN, err);
}

int tr_dist_sum_u64(const tr_run_opts *run, uint64_t *v, size_t n, tr_error *err) {
  return reduce(run, v, n, COLL_UINT64, COLL_SUM, err);
}

int tr_dist_bcast(const tr_run_opts *run, void *buf, int bytes, tr_error *err) {
  if (tr_dist_size() <= 1) return TR_OK;
  MPI_Request q;
  MPI_Ibcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &q);
  return tr_dist_wait(run, 1, &q, err);
}

#else

int tr_dist_bcast(const tr_run_opts *run, void *buf, int bytes, tr_error *err) {
  (void)run, (void)buf, (void)bytes, (void)err;
  return TR_OK;
}
int tr_dist_min(const tr_run_opts *run, double *v, int n, tr_error *err) {
  (void)run, (void)v, (void)n, (void)err;
  return TR_OK;
}
int tr_dist_sum_u64(const tr_run_opts *run, uint64_t *v, size_t n, tr_error *err) {
  (void)run, (void)v, (void)n, (void)err;
  return TR_OK;
}

int tr_rank(void) { return 0; }
int tr_dist_size(void) { return 1; }
int tr_dist_wait(const tr_run_opts *run, int n, void *reqs, tr_error *err) {
  (void)run, (void)n, (void)reqs, (void)err;
  return TR_OK;
}
int tr_dist_check(const tr_run_opts *run, tr_error *err) {
  if (run && run->cancelled && run->cancelled(run->progress_user)) return tr_fail(err, TR_EINTERRUPTED, "interrupted");
  return TR_OK;
}
int tr_dist_vote(const tr_run_opts *run, int status, tr_error *err) {
  (void)run;
  (void)err;
  return status;
}
int tr_dist_report(const tr_run_opts *run, int status, tr_error *err) { return tr_dist_vote(run, status, err); }

#endif
