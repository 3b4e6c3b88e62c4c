/*
 * run.c - running a batch's jobs over the ranks.
 *
 * Every rank runs up to --jobs children at once (child.c).
 * Rank 0 is the dispatcher and runs jobs too. The other ranks ask for work:
 * each keeps at most one message to rank 0 in flight, "a slot is free"
 * and/or "this job ended so", and rank 0 answers every message with one
 * reply: a job (its words packed), "no more jobs", or "noted". A rank with a
 * long job simply does not ask, so the others take the rest of the list.
 * Rank 0 may also send "stop" (a signal, a lost rank) at any time: a worker
 * always has one receive posted for rank 0's messages.
 *
 * No wait is unbounded: both sides poll (MPI_Test, waitpid WNOHANG) and check
 * the liveness monitor (coll_live.h) on every round; a rank silent beyond
 * --rank-timeout ends the batch with exit 10 on every survivor, its jobs
 * reported as not done. The per-rank figures reach rank 0 at the end through
 * libcoll's timeout aggregation as a reduce to rank 0 (as core/stats.c
 * does): the other ranks send theirs and leave.
 */
#include "batch.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll.h"
#include "coll_live.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* ---- signals -------------------------------------------------------------------------------- */

/* The batch being run (one at a time in a process) and, latched, what its
 * caller's cancelled() said: the signal that asked (forwarded to the jobs),
 * or 1. */
static const tb_batch_opts *cur;
static int stop_sig;

static int interrupted(void *user) {
  (void)user;
  if (!stop_sig && cur && cur->cancelled) stop_sig = cur->cancelled(cur->cancel_user);
  return stop_sig != 0;
}

static const char *stop_name(void) { return stop_sig > 1 ? strsignal(stop_sig) : "cancelled"; }
static int stop_signal(void) { return stop_sig > 1 ? stop_sig : SIGTERM; }

static void progress(double frac) {
  if (cur->progress) cur->progress(frac, NULL, cur->progress_user);
}

/* ---- messages ------------------------------------------------------------------------------- */

enum { TAG_UP = 0x7b01, TAG_DOWN = 0x7b02 };
enum { DOWN_ASSIGN, DOWN_NOJOB, DOWN_ACK, DOWN_STOP };

typedef struct {
  int32_t want; /* a slot is free: send a job */
  int32_t job;  /* the job this result is of, -1: none */
  tb_job_result res;
} up_msg;

typedef struct {
  int32_t kind;
  int32_t job;  /* ASSIGN: the job; STOP: the rank lost, or -1 */
  int32_t code; /* STOP: the exit code */
  int32_t len;  /* ASSIGN: bytes of argv */
  char argv[TB_BATCH_ARGV_MAX];
} down_msg;

#define DOWN_HEAD ((int)offsetof(down_msg, argv))

typedef struct {
  tb_runner r;
  int rank, nranks;
  double t0;
#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm comm;
#endif
} batch;

static void lost_line(const batch *b, int who) {
  if (who >= 0)
    fprintf(stderr,
            "terrafort batch: rank %d: rank %d stopped answering (silent for more than %.0f ms: killed, stopped or "
            "hung); the batch ends, its running jobs not done\n",
            b->rank, who, (cur->live ? coll_live_timeout(cur->live) : 0.0));
  else
    fprintf(stderr, "terrafort batch: rank %d: not every rank answered within %.0f ms; the batch ends\n", b->rank,
            (cur->live ? coll_live_timeout(cur->live) : 0.0));
}

/* ---- rank 0 --------------------------------------------------------------------------------- */

typedef struct {
  batch *b;
  tb_jobs *jobs;
  int next;       /* the first job perhaps still pending */
  int total, ended; /* jobs to run, of which ended */
  int progress;   /* print progress */
#ifdef TERRAFORT_HAVE_MPI
  MPI_Request *rreq;
  up_msg *rbuf;
  int *inflight, *nojob, *finished;
  MPI_Request *sreq; /* replies in flight */
  down_msg **sbuf;
  int nsend, capsend;
#endif
} dispatcher;

static int peek_next(dispatcher *d) {
  while (d->next < d->jobs->n && d->jobs->v[d->next].state != TB_JOB_PENDING) d->next++;
  return d->next < d->jobs->n ? d->next : -1;
}

static int take_next(dispatcher *d) {
  const int j = peek_next(d);
  if (j >= 0) d->next++;
  return j;
}

/* Reads a finished job's --stats-json into the summary's record: as it is,
 * once it is found to be a JSON object (the file names in it keep their
 * escapes: terrain.h). */
static void read_stats(tb_job *j) {
  if (!j->stats_json) return;
  FILE *f = fopen(j->stats_json, "rb");
  if (!f) return;
  char *s = malloc(TB_BATCH_STATS_MAX + 1);
  size_t n = s ? fread(s, 1, TB_BATCH_STATS_MAX + 1, f) : 0;
  fclose(f);
  tr_json *v = NULL;
  if (s && n > 0 && n <= TB_BATCH_STATS_MAX) {
    s[n] = 0;
    if (s[strspn(s, " \t\r\n")] == '{') v = tr_json_verbatim(s);
  }
  if (v) j->stats = s;
  else free(s); /* too big, not JSON or not an object: the summary names the file instead */
  tr_json_free(v);
}

static void record(dispatcher *d, int job, int rank, const tb_job_result *res) {
  if (job < 0 || job >= d->jobs->n) return;
  tb_job *j = &d->jobs->v[job];
  if (j->state != TB_JOB_RUNNING || j->rank != rank) return;
  j->res = *res;
  j->t_end = tb_now_s() - d->b->t0;
  j->state = res->exit == 0 ? TB_JOB_DONE : TB_JOB_FAILED;
  d->ended++;
  /* what it reported writing (a failed job may have written some) */
  if (tb_job_set_wrote(j, res->outputs))
    fprintf(stderr, "terrafort batch: line %d: out of memory for its list of outputs\n", j->line);
  if (j->state == TB_JOB_DONE) read_stats(j);
  const char *done = d->b->r.o->done_list;
  if (j->state == TB_JOB_DONE && done && tb_done_append(done, j))
    fprintf(stderr, "terrafort batch: cannot add line %d to the done list '%s': %s\n", j->line, done,
            strerror(errno));
  if (d->progress) progress(d->total ? (double)d->ended / d->total : 1.0);
  if (j->state == TB_JOB_FAILED)
    fprintf(stderr, "terrafort batch: line %d failed (exit %d on rank %d): %s\n", j->line, res->exit, rank,
            res->error[0] ? res->error : "no message");
}

static void start(dispatcher *d, int job, int rank) {
  tb_job *j = &d->jobs->v[job];
  j->state = TB_JOB_RUNNING;
  j->rank = rank;
  j->t_start = tb_now_s() - d->b->t0;
}

/* Every job still running when the batch ends early is not done. */
static void abandon(dispatcher *d, const char *why) {
  for (int i = 0; i < d->jobs->n; i++) {
    tb_job *j = &d->jobs->v[i];
    if (j->state != TB_JOB_RUNNING) continue;
    j->state = TB_JOB_NOT_DONE;
    snprintf(j->res.error, sizeof j->res.error, "%s", why);
  }
}

#ifdef TERRAFORT_HAVE_MPI
static int reply(dispatcher *d, int w, int kind, int job, int code) {
  if (d->nsend == d->capsend) {
    int cap = d->capsend ? 2 * d->capsend : 16;
    MPI_Request *q = realloc(d->sreq, (size_t)cap * sizeof *q);
    if (q) d->sreq = q;
    down_msg **b = realloc(d->sbuf, (size_t)cap * sizeof *b);
    if (b) d->sbuf = b;
    if (!q || !b) return -1;
    d->capsend = cap;
  }
  down_msg *m = malloc(sizeof *m);
  if (!m) return -1;
  m->kind = kind;
  m->job = job;
  m->code = code;
  m->len = kind == DOWN_ASSIGN ? tb_job_pack(&d->jobs->v[job], m->argv, sizeof m->argv) : 0;
  d->sbuf[d->nsend] = m;
  MPI_Isend(m, DOWN_HEAD + m->len, MPI_BYTE, w, TAG_DOWN, d->b->comm, &d->sreq[d->nsend]);
  d->nsend++;
  return 0;
}

/* Frees the replies that have left. */
static void sends_test(dispatcher *d) {
  for (int k = d->nsend - 1; k >= 0; k--) {
    int flag = 0;
    MPI_Test(&d->sreq[k], &flag, MPI_STATUS_IGNORE);
    if (!flag) continue;
    free(d->sbuf[k]);
    d->sreq[k] = d->sreq[d->nsend - 1];
    d->sbuf[k] = d->sbuf[d->nsend - 1];
    d->nsend--;
  }
}

/* One message from worker w. */
static int handle(dispatcher *d, int w) {
  const up_msg *m = &d->rbuf[w];
  if (m->job >= 0) {
    record(d, m->job, w, &m->res);
    d->inflight[w]--;
  }
  int rc;
  if (m->want) {
    int j = take_next(d);
    if (j >= 0) {
      start(d, j, w);
      d->inflight[w]++;
      rc = reply(d, w, DOWN_ASSIGN, j, 0);
    } else {
      d->nojob[w] = 1;
      rc = reply(d, w, DOWN_NOJOB, -1, 0);
    }
  } else {
    rc = reply(d, w, DOWN_ACK, -1, 0);
  }
  d->finished[w] = d->nojob[w] && d->inflight[w] == 0;
  if (!d->finished[w]) MPI_Irecv(&d->rbuf[w], sizeof d->rbuf[w], MPI_BYTE, w, TAG_UP, d->b->comm, &d->rreq[w]);
  return rc;
}

static int workers_pending(const dispatcher *d) {
  for (int w = 1; w < d->b->nranks; w++)
    if (!d->finished[w]) return 1;
  return 0;
}

/* Tells every worker still at work to stop (best effort: the batch is ending). */
static void stop_workers(dispatcher *d, int code, int lost) {
  for (int w = 1; w < d->b->nranks; w++)
    if (!d->finished[w] && w != lost) reply(d, w, DOWN_STOP, lost, code);
}
#endif

static int dispatch(batch *b, tb_jobs *jobs) {
  dispatcher d;
  memset(&d, 0, sizeof d);
  d.b = b;
  d.jobs = jobs;
  for (int i = 0; i < jobs->n; i++) d.total += jobs->v[i].state == TB_JOB_PENDING;
  d.progress = b->r.o->progress != NULL;
  if (d.progress) progress(0.0);
  const int n = b->nranks; /* 1 without MPI */
  (void)n;
#ifdef TERRAFORT_HAVE_MPI
  if (n > 1) {
    d.rreq = calloc((size_t)n, sizeof *d.rreq);
    d.rbuf = calloc((size_t)n, sizeof *d.rbuf);
    d.inflight = calloc((size_t)n, sizeof *d.inflight);
    d.nojob = calloc((size_t)n, sizeof *d.nojob);
    d.finished = calloc((size_t)n, sizeof *d.finished);
    if (!d.rreq || !d.rbuf || !d.inflight || !d.nojob || !d.finished) return TR_EXIT_NOMEM;
    for (int w = 1; w < n; w++) MPI_Irecv(&d.rbuf[w], sizeof d.rbuf[w], MPI_BYTE, w, TAG_UP, b->comm, &d.rreq[w]);
  }
#endif
  int rc = 0;
  for (;;) {
    int busy = 0;
    if (interrupted(NULL)) {
      fprintf(stderr, "terrafort batch: interrupted (%s): stopping the running jobs\n", stop_name());
#ifdef TERRAFORT_HAVE_MPI
      if (n > 1) stop_workers(&d, 8, -1);
#endif
      tb_children_stop(&b->r, stop_signal());
      abandon(&d, "interrupted");
      rc = TR_EXIT_INTERRUPTED;
      break;
    }
    const int lost = coll_live_lost(cur->live, NULL);
    if (lost != -1) {
      lost_line(b, lost);
#ifdef TERRAFORT_HAVE_MPI
      if (n > 1) stop_workers(&d, 10, lost);
#endif
      tb_children_stop(&b->r, SIGTERM);
      abandon(&d, "the batch ended: a rank was lost");
      rc = TR_EXIT_RANK;
      break;
    }
#ifdef TERRAFORT_HAVE_MPI
    for (int w = 1; w < n; w++) {
      int flag = 0;
      if (d.finished[w]) continue;
      MPI_Test(&d.rreq[w], &flag, MPI_STATUS_IGNORE);
      if (!flag) continue;
      busy = 1;
      if (handle(&d, w)) {
        rc = TR_EXIT_NOMEM;
        break;
      }
    }
    if (rc) break;
    if (n > 1) sends_test(&d);
#endif
    for (int k = b->r.nkids - 1; k >= 0; k--) {
      int job;
      tb_job_result res;
      if (tb_child_reap(&b->r, k, 0, &job, &res)) {
        busy = 1;
        record(&d, job, 0, &res);
      }
    }
    while (b->r.nkids < b->r.o->jobs_per_rank) {
      int j = take_next(&d);
      if (j < 0) break;
      busy = 1;
      start(&d, j, 0);
      tb_job_result res;
      if (tb_child_start(&b->r, j, jobs->v[j].argv, &res)) {
        b->r.run++;
        b->r.failed++;
        record(&d, j, 0, &res);
      }
    }
    int pending = b->r.nkids > 0 || peek_next(&d) >= 0;
#ifdef TERRAFORT_HAVE_MPI
    if (n > 1) pending |= workers_pending(&d);
#endif
    if (!pending) break;
    if (!busy) tb_nap();
  }
  /* jobs never started when the batch ends early */
  for (int i = 0; i < jobs->n; i++)
    if (jobs->v[i].state == TB_JOB_PENDING && rc) {
      jobs->v[i].state = TB_JOB_NOT_DONE;
      snprintf(jobs->v[i].res.error, sizeof jobs->v[i].res.error, "%s",
               rc == TR_EXIT_INTERRUPTED ? "interrupted" : "not started");
    }
  if (d.progress && !rc) progress(1.0);
#ifdef TERRAFORT_HAVE_MPI
  if (n > 1) {
    if (!rc) {
      int lost = -1;
      if (d.nsend && coll_live_wait(cur->live, d.nsend, d.sreq, interrupted, NULL, &lost) != COLL_LIVE_OK)
        rc = stop_sig ? TR_EXIT_INTERRUPTED : TR_EXIT_RANK;
      if (rc == TR_EXIT_RANK) lost_line(b, lost);
      for (int k = 0; k < d.nsend; k++) free(d.sbuf[k]);
    }
    /* On an early end the requests stay live, receives posted on d.rbuf
     * among them: this process makes no MPI progress any more, so none
     * completes into it once freed (coll_live_quiesce); it exits without
     * MPI_Finalize. */
    if (rc == TR_EXIT_INTERRUPTED || rc == TR_EXIT_RANK) coll_live_quiesce(cur->live);
    free(d.sreq);
    free(d.sbuf);
    free(d.rreq);
    free(d.rbuf);
    free(d.inflight);
    free(d.nojob);
    free(d.finished);
  }
#endif
  return rc;
}

/* ---- the other ranks ------------------------------------------------------------------------ */

#ifdef TERRAFORT_HAVE_MPI
static int work(batch *b) {
  tb_runner *r = &b->r;
  const int k = r->o->jobs_per_rank;
  down_msg *in = malloc(sizeof *in);
  up_msg *out = malloc(sizeof *out);
  up_msg *queue = malloc((size_t)k * sizeof *queue); /* results not yet sent */
  if (!in || !out || !queue) {
    free(in);
    free(out);
    free(queue);
    return TR_EXIT_NOMEM;
  }
  int nq = 0, waiting = 0, nojob = 0, rc = 0;
  MPI_Request rreq, sreq = MPI_REQUEST_NULL;
  MPI_Irecv(in, sizeof *in, MPI_BYTE, 0, TAG_DOWN, b->comm, &rreq);
  for (;;) {
    int busy = 0;
    if (interrupted(NULL)) {
      fprintf(stderr, "terrafort batch: rank %d: interrupted (%s): stopping its jobs\n", b->rank, stop_name());
      tb_children_stop(r, stop_signal());
      rc = TR_EXIT_INTERRUPTED;
      break;
    }
    const int lost = coll_live_lost(cur->live, NULL);
    if (lost != -1) {
      lost_line(b, lost);
      tb_children_stop(r, SIGTERM);
      rc = TR_EXIT_RANK;
      break;
    }
    for (int c = r->nkids - 1; c >= 0; c--) {
      int job;
      if (tb_child_reap(r, c, 0, &job, &queue[nq].res)) {
        queue[nq].job = job;
        nq++;
        busy = 1;
      }
    }
    int flag = 0;
    MPI_Test(&rreq, &flag, MPI_STATUS_IGNORE);
    if (flag) {
      busy = 1;
      waiting = 0;
      if (in->kind == DOWN_STOP) {
        if (in->code == 10)
          fprintf(stderr, "terrafort batch: rank %d: stopped by rank 0: rank %d stopped answering\n", b->rank, in->job);
        tb_children_stop(r, SIGTERM);
        rc = in->code;
        break;
      }
      if (in->kind == DOWN_NOJOB) nojob = 1;
      if (in->kind == DOWN_ASSIGN) {
        char *argv[TB_BATCH_ARGV_MAX / 2 + 1];
        tb_job_unpack(in->argv, in->len, argv, (int)(sizeof argv / sizeof argv[0]));
        if (tb_child_start(r, in->job, argv, &queue[nq].res)) {
          r->run++;
          r->failed++;
          queue[nq++].job = in->job;
        }
      }
      MPI_Irecv(in, sizeof *in, MPI_BYTE, 0, TAG_DOWN, b->comm, &rreq);
    }
    if (!waiting) {
      int sent = 0;
      MPI_Test(&sreq, &sent, MPI_STATUS_IGNORE);
      const int want = !nojob && r->nkids + nq < k; /* queued results still hold their slots */
      if (sent && (nq || want)) {
        memset(out, 0, sizeof *out);
        out->want = want;
        out->job = -1;
        if (nq) *out = queue[--nq], out->want = want;
        MPI_Isend(out, sizeof *out, MPI_BYTE, 0, TAG_UP, b->comm, &sreq);
        waiting = 1;
        busy = 1;
      }
    }
    if (nojob && !waiting && !nq && !r->nkids) break;
    if (!busy) tb_nap();
  }
  if (!rc) {
    /* nothing more comes from rank 0: withdraw the posted receive */
    MPI_Cancel(&rreq);
    MPI_Request q[2] = {rreq, sreq};
    int lost = -1;
    if (coll_live_wait(cur->live, 2, q, interrupted, NULL, &lost) != COLL_LIVE_OK) {
      rc = stop_sig ? TR_EXIT_INTERRUPTED : TR_EXIT_RANK;
      if (rc == TR_EXIT_RANK) lost_line(b, lost);
    }
  }
  /* an early end leaves the receive posted on `in`: no progress after this */
  if (rc == TR_EXIT_INTERRUPTED || rc == TR_EXIT_RANK) coll_live_quiesce(cur->live);
  free(in);
  free(out);
  free(queue);
  return rc;
}
#endif

/* ---- the whole batch ------------------------------------------------------------------------ */

/* Every rank's figures to rank 0 (the writer of the summary) through the
 * timeout aggregation, a one-level tree rooted there: the others send and
 * go on. */
static int gather(batch *b, double wall_s, tb_batch_outcome *out) {
  const int n = b->nranks;
  const size_t len = (size_t)n * TB_BATCH_RANK_FIELDS;
  double *mine = calloc(len, sizeof *mine), *sum = calloc(len, sizeof *sum);
  if (!mine || !sum) {
    free(mine);
    free(sum);
    return TR_EXIT_NOMEM;
  }
  double *f = mine + (size_t)b->rank * TB_BATCH_RANK_FIELDS;
  f[TB_RANK_JOBS] = b->r.run;
  f[TB_RANK_FAILED] = b->r.failed;
  f[TB_RANK_BUSY_S] = b->r.busy_s;
  f[TB_RANK_CPU_S] = b->r.cpu_s;
  f[TB_RANK_WALL_S] = wall_s;
  coll_ctx *ctx = cur->coll;
  coll_opts co;
  coll_ctx_get_opts(ctx, &co);
  co.live = cur->live;
  co.cancel = interrupted;
  co.cancel_user = NULL;
  int rc = coll_ctx_set_opts(ctx, &co);
  coll_ta_opts ta;
  coll_ta_opts_init(&ta);
  ta.arity = n > 2 ? n - 1 : 2;
  ta.tan_policy = COLL_TAN_ROOT;
  ta.root_only = 1;
  if (cur->live && coll_live_lost(cur->live, NULL) == -1) ta.deadline_ms = COLL_DEADLINE_MONITORED_MS; /* the monitor bounds it */
  coll_ta_report rep;
  memset(&rep, 0, sizeof rep);
  coll_op add = coll_op_builtin(COLL_SUM);
  if (!rc) rc = coll_timeout_reduce(ctx, mine, sum, len, COLL_DOUBLE, &add, &ta, &rep);
  free(mine);
  if (rc) {
    free(sum);
    if (stop_sig) return TR_EXIT_INTERRUPTED;
    const int lost = coll_live_lost(cur->live, NULL);
    if (lost != -1) {
      lost_line(b, lost);
      return TR_EXIT_RANK;
    }
    fprintf(stderr, "terrafort batch: rank %d: gathering the ranks' figures failed: %s\n", b->rank,
            coll_errmsg(ctx)[0] ? coll_errmsg(ctx) : coll_strerror(rc));
    return TR_EXIT_COLL;
  }
  if (b->rank == 0) {
    out->per_rank = sum;
    out->reduce_waited_ms = rep.waited_ms;
  } else {
    free(sum);
  }
  return 0;
}

int tb_batch_run(tb_jobs *jobs, int startup, const tb_batch_opts *o, tb_batch_outcome *out) {
  cur = o;
  stop_sig = 0;
  batch b;
  memset(&b, 0, sizeof b);
  memset(out, 0, sizeof *out);
  out->lost_rank = -1;
  b.t0 = tb_now_s();
  b.rank = tr_rank();
  b.nranks = coll_ctx_size(cur->coll);
  out->nranks = b.nranks;
  int verdict[2] = {startup, 0};
  if (b.rank == 0 && !verdict[0] && tb_runner_init(&b.r, o)) {
    fprintf(stderr, "terrafort batch: cannot run the program %s, or out of memory\n", o->program ? o->program : "(none)");
    verdict[0] = TR_EXIT_NOMEM;
  }
#ifdef TERRAFORT_HAVE_MPI
  if (b.nranks > 1) {
    /* a communicator of the batch's own, and rank 0's verdict on the list */
    MPI_Request q;
    int lost = -1, w;
    MPI_Comm_idup(MPI_COMM_WORLD, &b.comm, &q);
    w = coll_live_wait(cur->live, 1, &q, interrupted, NULL, &lost);
    if (w == COLL_LIVE_OK) {
      MPI_Ibcast(verdict, 2, MPI_INT, 0, b.comm, &q);
      w = coll_live_wait(cur->live, 1, &q, interrupted, NULL, &lost);
    }
    if (w != COLL_LIVE_OK) {
      tb_runner_free(&b.r);
      if (w == COLL_LIVE_CANCELED) return TR_EXIT_INTERRUPTED;
      lost_line(&b, lost);
      out->lost_rank = lost;
      return TR_EXIT_RANK;
    }
    if (b.rank != 0 && !verdict[0] && tb_runner_init(&b.r, o)) {
      /* rank 0 cannot learn it now: it sees this rank lost (exit 10) */
      fprintf(stderr, "terrafort batch: rank %d: cannot run the program %s, or out of memory\n", b.rank,
              o->program ? o->program : "(none)");
      fflush(NULL);
      _exit(TR_EXIT_NOMEM);
    }
  }
#endif
  if (verdict[0]) {
    tb_runner_free(&b.r);
    return verdict[0];
  }
  int rc;
#ifdef TERRAFORT_HAVE_MPI
  rc = b.rank == 0 ? dispatch(&b, jobs) : work(&b);
#else
  rc = dispatch(&b, jobs);
#endif
  out->wall_s = tb_now_s() - b.t0;
  if (rc == TR_EXIT_RANK) out->lost_rank = coll_live_lost(cur->live, NULL);
  if (!rc) rc = gather(&b, out->wall_s, out);
#ifdef TERRAFORT_HAVE_MPI
  if (!rc && b.nranks > 1) MPI_Comm_free(&b.comm);
#endif
  tb_runner_free(&b.r);
  return rc;
}
