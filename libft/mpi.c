/*
 * mpi.c - the MPI back-end: rank 0 is the master, ranks 1..N-1 are workers.
 *
 * Master side. ft_run_block() runs in the executor's threads exactly as with
 * the thread back-end; dispatching a task only queues it for the context's
 * progress thread, the one thread that makes MPI calls on rank 0. That
 * thread packs each task into one message (header, kernel name, kernel
 * parameters, the block's whole input window) and sends it with MPI_Isend
 * (never blocking, so a worker busy sending results can never deadlock with
 * it), and polls for results, handing each to its job with ft_deliver(). A
 * message from a rank counts as that worker's sign of life for timeouts.
 *
 * Worker side (ft_serve). A worker drains incoming messages between
 * sub-blocks, keeps urgent (recompute) and normal (replica) queues like a
 * pool thread, computes one sub-block at a time and sends each result as soon
 * as it is done. An injected kill makes the rank discard all work until the
 * shutdown message; it still answers the shutdown, so the run ends cleanly.
 *
 * Shutdown: the master sends SHUTDOWN to every worker and keeps receiving
 * (and discarding) results until every worker has answered BYE, so no rank is
 * left blocked in a send.
 */
#ifdef TERRAFORT_HAVE_MPI
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft_internal.h"

enum { TAG_TASK = 7101, TAG_RESULT = 7102, TAG_SHUTDOWN = 7103, TAG_BYE = 7104 };

typedef struct task_hdr {
  uint64_t task_id;
  int64_t block_id, rows, cols, halo, row_off, col_off;
  uint64_t in_elem_size, out_elem_size, kctx_size, name_len;
  int32_t out_type, slot, sub_first, sub_end, urgent, pad;
  ft_inject inj;
} task_hdr;

typedef struct res_hdr {
  uint64_t task_id;
  int32_t sub, ninj, kerr, pad;
  double seconds;
} res_hdr;

typedef struct pending_send {
  MPI_Request req;
  void *buf;
} pending_send;

struct ft_mpi {
  MPI_Comm comm;
  int rank, size;
  pthread_t progress;
  int progress_started;
  pthread_cond_t cond;
  ft_task *outq_head, *outq_tail;
  ft_task *pending; /* sent, awaiting results; linked by qnext */
  pending_send *sends;
  int nsends, capsends;
  int error;
  int64_t tasks_sent; /* task messages posted (the injector's stop-send) */
};

/* kctx and the input window start on 16-byte boundaries of the message, so
 * kernels may cast them to their own structs and element types. */
static size_t align16(size_t x) { return (x + 15) & ~(size_t)15; }

static void nap_us(long us) {
  struct timespec ts = {0, us * 1000L};
  nanosleep(&ts, NULL);
}

/* The caller's give_up (ft_opts): stop waiting for other ranks. */
static int given_up(const ft_ctx *ctx) { return ctx->opts.give_up && ctx->opts.give_up(ctx->opts.give_up_user); }

/* Completes n requests unless the caller gives up first (FT_ERR_MPI). */
static int wait_reqs(const ft_ctx *ctx, int n, MPI_Request *q) {
  for (int spins = 0;; spins++) {
    /* asked first: after giving up, no MPI progress (coll_live_quiesce) */
    if (given_up(ctx)) return FT_ERR_MPI;
    int done = 0;
    MPI_Testall(n, q, &done, MPI_STATUSES_IGNORE);
    if (done) return 0;
    if (spins > 64) nap_us(200);
  }
}

/* Receives the message a probe matched into buf, bounded as every wait
 * here: a blocking receive after a probe waits for the rest of a large
 * message, which a rank stopped mid-message never sends (a transport
 * without single-copy reads, as between nodes). On giving up, buf stays
 * with the live request: the caller must not free it. */
static int recv_probed(const ft_ctx *ctx, void *buf, int cnt, MPI_Message *msg) {
  MPI_Request q;
  if (MPI_Imrecv(buf, cnt, MPI_BYTE, msg, &q) != MPI_SUCCESS) return FT_ERR_MPI;
  return wait_reqs(ctx, 1, &q);
}

static int add_send(ft_mpi *m, void *buf, int bytes, int dest, int tag) {
  if (m->nsends == m->capsends) {
    int cap = m->capsends ? 2 * m->capsends : 16;
    pending_send *ns = realloc(m->sends, (size_t)cap * sizeof *ns);
    if (!ns) return FT_ERR_NOMEM;
    m->sends = ns;
    m->capsends = cap;
  }
  pending_send *p = &m->sends[m->nsends];
  if (MPI_Isend(buf, bytes, MPI_BYTE, dest, tag, m->comm, &p->req) != MPI_SUCCESS)
    return FT_ERR_MPI;
  p->buf = buf;
  m->nsends++;
  return 0;
}

static void test_sends(ft_mpi *m) {
  for (int i = 0; i < m->nsends;) {
    int done = 0;
    MPI_Test(&m->sends[i].req, &done, MPI_STATUS_IGNORE);
    if (done) {
      free(m->sends[i].buf);
      m->sends[i] = m->sends[--m->nsends];
    } else {
      i++;
    }
  }
}

/* Packs task t (its job marked active by the caller). NULL on failure. */
static void *pack_task(const ft_task *t, int *bytes) {
  const ft_job *j = t->job;
  const ft_block *b = &j->blk;
  size_t nl = strlen(j->kname) + 1;
  int64_t wr = b->rows + 2 * b->halo, wc = b->cols + 2 * b->halo;
  size_t in_bytes = (size_t)(wr * wc) * b->in_elem_size;
  size_t kctx_off = align16(sizeof(task_hdr) + nl), in_off = align16(kctx_off + j->kctx_size);
  size_t total = in_off + in_bytes;
  if (total > INT_MAX) return NULL;
  unsigned char *buf = malloc(total);
  if (!buf) return NULL;
  task_hdr h;
  memset(&h, 0, sizeof h);
  h.task_id = t->id;
  h.block_id = b->id;
  h.rows = b->rows;
  h.cols = b->cols;
  h.halo = b->halo;
  h.row_off = b->row_off;
  h.col_off = b->col_off;
  h.in_elem_size = b->in_elem_size;
  h.out_elem_size = b->out_elem_size;
  h.kctx_size = j->kctx_size;
  h.name_len = nl;
  h.out_type = (int32_t)b->out_type;
  h.slot = t->slot;
  h.sub_first = t->sub_next;
  h.sub_end = t->sub_end;
  h.urgent = t->urgent;
  h.inj = j->ctx->opts.inject;
  memset(buf, 0, in_off);
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, j->kname, nl);
  if (j->kctx_size) memcpy(buf + kctx_off, j->kctx, j->kctx_size);
  unsigned char *p = buf + in_off;
  for (int64_t r = 0; r < wr; r++)
    memcpy(p + (size_t)(r * wc) * b->in_elem_size,
           (const unsigned char *)b->in + (size_t)(r * b->in_stride) * b->in_elem_size,
           (size_t)wc * b->in_elem_size);
  *bytes = (int)total;
  return buf;
}

/* Drops cancelled and finished tasks from the pending list (lock held). */
static void prune_pending(ft_mpi *m) {
  for (ft_task **pp = &m->pending; *pp;) {
    ft_task *t = *pp;
    if (t->cancelled || t->sub_next >= t->sub_end) {
      *pp = t->qnext;
      ft_task_unref(t);
    } else {
      pp = &t->qnext;
    }
  }
}

/* Receives every result waiting (delivered to its task, or dropped with
 * deliver 0); the number received, -1 when the caller gave up meanwhile. */
static int recv_results(ft_ctx *ctx, ft_mpi *m, int deliver) {
  int got = 0;
  for (;;) {
    int flag = 0, cnt = 0;
    MPI_Status stt;
    MPI_Message msg;
    MPI_Improbe(MPI_ANY_SOURCE, TAG_RESULT, m->comm, &flag, &msg, &stt);
    if (!flag) break;
    MPI_Get_count(&stt, MPI_BYTE, &cnt);
    unsigned char *buf = malloc(cnt > 0 ? (size_t)cnt : 1);
    if (!buf) return FT_ERR_NOMEM;
    if (recv_probed(ctx, buf, cnt, &msg)) return -1; /* given up: no MPI call after this */
    got++;
    res_hdr h;
    if (!deliver || (size_t)cnt < sizeof h) {
      free(buf);
      continue;
    }
    memcpy(&h, buf, sizeof h);
    memmove(buf, buf + sizeof h, (size_t)cnt - sizeof h);
    double now = ft_now();
    pthread_mutex_lock(&ctx->lock);
    int w = stt.MPI_SOURCE - 1;
    if (w >= 0 && w < ctx->nworkers) {
      ctx->workers[w].last_activity = now;
      ctx->workers[w].suspect = 0;
    }
    ft_task *t = m->pending;
    while (t && t->id != h.task_id) t = t->qnext;
    if (t) ft_deliver(ctx, t, h.sub, buf, h.ninj, h.kerr,
                          (ft_trace_times){now - h.seconds, now, 0, -1.0, -1.0, -1, -1});
    else free(buf);
    prune_pending(m);
    pthread_mutex_unlock(&ctx->lock);
  }
  return got;
}

static void *progress_main(void *arg) {
  ft_ctx *ctx = arg;
  ft_mpi *m = ctx->mpi;
  for (;;) {
    int did = 0;
    pthread_mutex_lock(&ctx->lock);
    int stop = ctx->shutdown;
    ft_task *q = m->outq_head;
    m->outq_head = m->outq_tail = NULL;
    pthread_mutex_unlock(&ctx->lock);
    for (ft_task *t = q, *tn; t; t = tn) {
      tn = t->qnext;
      did = 1;
      pthread_mutex_lock(&ctx->lock);
      if (t->cancelled) {
        ft_task_unref(t);
        pthread_mutex_unlock(&ctx->lock);
        continue;
      }
      ft_job *j = t->job;
      j->active++;
      pthread_mutex_unlock(&ctx->lock);
      int bytes = 0;
      void *buf = pack_task(t, &bytes);
      int dest = t->worker + 1;
      pthread_mutex_lock(&ctx->lock);
      if (--j->active == 0) pthread_cond_broadcast(&j->cond);
      t->qnext = m->pending;
      m->pending = t;
      int sent = 0;
      if (!buf || add_send(m, buf, bytes, dest, TAG_TASK) != 0) {
        /* the task stays pending and will time out; nothing else to do */
        free(buf);
        m->error = FT_ERR_MPI;
      } else {
        sent = 1;
      }
      pthread_mutex_unlock(&ctx->lock);
      /* the injector's stop-send: this rank stops with the message posted,
       * its first part on its way and the rest waiting for this sender */
      if (sent && ctx->opts.inject.stop_send_rank == 0 && ++m->tasks_sent == ctx->opts.inject.stop_send_after)
        raise(SIGSTOP);
    }
    test_sends(m);
    const int got = recv_results(ctx, m, 1);
    if (got < 0) return NULL; /* given up mid-receive (recv_probed) */
    if (got > 0) did = 1;
    if (stop) break;
    if (!did) {
      pthread_mutex_lock(&ctx->lock);
      if (!m->outq_head && !ctx->shutdown) ft_cond_wait_until(&m->cond, &ctx->lock, ft_now() + 0.0002);
      pthread_mutex_unlock(&ctx->lock);
    }
  }
  /* shutdown: tell every worker, drain until each said goodbye */
  for (int r = 1; r < m->size; r++) add_send(m, NULL, 0, r, TAG_SHUTDOWN);
  int byes = 0;
  while (byes < m->size - 1 && !given_up(ctx)) {
    int flag = 0;
    MPI_Status stt;
    if (recv_results(ctx, m, 0) < 0) return NULL;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_BYE, m->comm, &flag, &stt);
    if (flag) {
      MPI_Recv(NULL, 0, MPI_BYTE, stt.MPI_SOURCE, TAG_BYE, m->comm, MPI_STATUS_IGNORE);
      byes++;
    } else {
      test_sends(m);
      nap_us(100);
    }
  }
  while (m->nsends > 0 && !given_up(ctx)) {
    test_sends(m);
    if (m->nsends) nap_us(100);
  }
  return NULL;
}

static void mpi_dispatch(ft_ctx *ctx, ft_task *t) {
  ft_mpi *m = ctx->mpi;
  t->qnext = NULL;
  if (m->outq_tail) m->outq_tail->qnext = t;
  else m->outq_head = t;
  m->outq_tail = t;
  pthread_cond_signal(&m->cond);
}

static int mpi_start(ft_ctx *ctx, char *err, size_t errlen) {
  int inited = 0, level = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    if (err && errlen) snprintf(err, errlen, "ft: MPI is not initialised");
    return FT_ERR_MPI;
  }
  ft_mpi *m = calloc(1, sizeof *m);
  if (!m) return FT_ERR_NOMEM;
  MPI_Request q;
  if (MPI_Comm_idup(*(const MPI_Comm *)ctx->opts.mpi_comm, &m->comm, &q) != MPI_SUCCESS || wait_reqs(ctx, 1, &q)) {
    free(m);
    return FT_ERR_MPI;
  }
  MPI_Comm_rank(m->comm, &m->rank);
  MPI_Comm_size(m->comm, &m->size);
  MPI_Query_thread(&level);
  /* decided together, so that no worker waits for a master that gave up */
  int ok = m->size >= 3 && (m->rank != 0 || level >= MPI_THREAD_SERIALIZED), all_ok = 0;
  MPI_Iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, m->comm, &q);
  if (wait_reqs(ctx, 1, &q)) {
    if (err && errlen) snprintf(err, errlen, "ft: a rank stopped answering while the MPI back-end started");
    free(m);
    return FT_ERR_MPI;
  }
  if (!all_ok) {
    if (err && errlen)
      snprintf(err, errlen,
               "ft: the MPI back-end needs at least 3 ranks and MPI_THREAD_SERIALIZED on rank 0 "
               "(have %d ranks, thread level %d)", m->size, level);
    MPI_Comm_free(&m->comm);
    free(m);
    return FT_ERR_MPI;
  }
  ctx->mpi = m;
  ctx->role = m->rank == 0 ? FT_ROLE_MASTER : FT_ROLE_WORKER;
  ctx->nworkers = m->size - 1;
  ctx->workers = calloc((size_t)ctx->nworkers, sizeof *ctx->workers);
  if (!ctx->workers) {
    MPI_Comm_free(&m->comm);
    free(m);
    ctx->mpi = NULL;
    return FT_ERR_NOMEM;
  }
  double now = ft_now();
  for (int i = 0; i < ctx->nworkers; i++) {
    ctx->workers[i].index = i;
    ctx->workers[i].last_activity = now;
  }
  ft_cond_init_mono(&m->cond);
  if (ctx->role == FT_ROLE_MASTER) {
    if (pthread_create(&m->progress, NULL, progress_main, ctx) != 0) {
      /* workers are already serving or about to: they need the shutdown */
      if (err && errlen) snprintf(err, errlen, "ft: could not start the MPI progress thread");
      /* non-blocking, bounded by the monitor as every wait here (a worker
       * lost meanwhile: the requests stay live, m and the communicator are
       * left to the process's end, which makes no MPI call again) */
      int lost = 0;
      for (int r = 1; !lost && r < m->size; r++) {
        MPI_Request q[2];
        MPI_Isend(NULL, 0, MPI_BYTE, r, TAG_SHUTDOWN, m->comm, &q[0]);
        MPI_Irecv(NULL, 0, MPI_BYTE, r, TAG_BYE, m->comm, &q[1]);
        lost = wait_reqs(ctx, 2, q) != 0;
      }
      if (!lost) {
        pthread_cond_destroy(&m->cond);
        MPI_Comm_free(&m->comm);
        free(m);
      }
      free(ctx->workers);
      ctx->mpi = NULL;
      return FT_ERR_THREAD;
    }
    m->progress_started = 1;
  }
  return 0;
}

/* 0 always: the workers are other processes, so no thread of this one can
 * still hold the context. */
static int mpi_stop(ft_ctx *ctx) {
  ft_mpi *m = ctx->mpi;
  if (m->progress_started) {
    pthread_mutex_lock(&ctx->lock);
    ctx->shutdown = 1;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&ctx->lock);
    pthread_join(m->progress, NULL);
    pthread_mutex_lock(&ctx->lock);
    for (ft_task *t = m->pending, *tn; t; t = tn) {
      tn = t->qnext;
      ft_task_unref(t);
    }
    for (ft_task *t = m->outq_head, *tn; t; t = tn) {
      tn = t->qnext;
      ft_task_unref(t);
    }
    pthread_mutex_unlock(&ctx->lock);
  }
  free(m->sends);
  pthread_cond_destroy(&m->cond);
  MPI_Comm_free(&m->comm);
  free(m);
  free(ctx->workers);
  ctx->workers = NULL;
  ctx->mpi = NULL;
  return 0;
}

/* ---- worker rank ------------------------------------------------------------ */

typedef struct wtask {
  task_hdr h;
  unsigned char *msg; /* owns name, kctx, input */
  const void *kctx;
  ft_block blk;
  ft_kernel_fn fn;
  int next;
  struct wtask *link;
} wtask;

static void wq_push(wtask **head, wtask *t) {
  t->link = NULL;
  while (*head) head = &(*head)->link;
  *head = t;
}

static void wq_free(wtask **head) {
  for (wtask *t = *head, *tn; t; t = tn) {
    tn = t->link;
    free(t->msg);
    free(t);
  }
  *head = NULL;
}

static wtask *unpack(ft_ctx *ctx, unsigned char *msg, int cnt) {
  wtask *t = calloc(1, sizeof *t);
  if (!t || (size_t)cnt < sizeof(task_hdr)) {
    free(t);
    return NULL;
  }
  memcpy(&t->h, msg, sizeof t->h);
  size_t kctx_off = align16(sizeof(task_hdr) + t->h.name_len);
  size_t in_off = align16(kctx_off + t->h.kctx_size);
  int64_t wr = t->h.rows + 2 * t->h.halo, wc = t->h.cols + 2 * t->h.halo;
  if (t->h.name_len == 0 || in_off + (size_t)(wr * wc) * t->h.in_elem_size != (size_t)cnt ||
      msg[sizeof(task_hdr) + t->h.name_len - 1] != '\0') {
    free(t);
    return NULL;
  }
  t->msg = msg;
  const char *name = (const char *)msg + sizeof t->h;
  t->kctx = msg + kctx_off;
  const ft_kernel *k = ft_kernel_lookup(ctx, name);
  t->fn = k ? k->fn : NULL;
  t->blk.id = t->h.block_id;
  t->blk.rows = t->h.rows;
  t->blk.cols = t->h.cols;
  t->blk.halo = t->h.halo;
  t->blk.row_off = t->h.row_off;
  t->blk.col_off = t->h.col_off;
  t->blk.in = msg + in_off;
  t->blk.in_stride = t->h.cols + 2 * t->h.halo;
  t->blk.in_elem_size = t->h.in_elem_size;
  t->blk.out_type = (ft_type)t->h.out_type;
  t->blk.out_elem_size = t->h.out_elem_size;
  t->next = t->h.sub_first;
  return t;
}

static int mpi_serve(ft_ctx *ctx) {
  ft_mpi *m = ctx->mpi;
  wtask *urgent = NULL, *normal = NULL;
  int dead = 0, widx = m->rank - 1;
  int64_t nresults = 0;
  for (;;) {
    for (;;) {
      int flag = 0, cnt = 0;
      MPI_Status stt;
      MPI_Message mm;
      MPI_Improbe(0, MPI_ANY_TAG, m->comm, &flag, &mm, &stt);
      if (!flag) break;
      MPI_Get_count(&stt, MPI_BYTE, &cnt);
      if (stt.MPI_TAG == TAG_SHUTDOWN) {
        MPI_Mrecv(NULL, 0, MPI_BYTE, &mm, MPI_STATUS_IGNORE);
        wq_free(&urgent);
        wq_free(&normal);
        MPI_Request bq;
        MPI_Isend(NULL, 0, MPI_BYTE, 0, TAG_BYE, m->comm, &bq);
        return wait_reqs(ctx, 1, &bq);
      }
      unsigned char *msg = malloc(cnt > 0 ? (size_t)cnt : 1);
      if (!msg) return FT_ERR_NOMEM;
      if (recv_probed(ctx, msg, cnt, &mm)) {
        /* the master stopped mid-message: msg stays with the live request */
        wq_free(&urgent);
        wq_free(&normal);
        return FT_ERR_MPI;
      }
      wtask *t = (!dead && stt.MPI_TAG == TAG_TASK) ? unpack(ctx, msg, cnt) : NULL;
      if (!t) {
        free(msg);
        continue;
      }
      wq_push(t->h.urgent ? &urgent : &normal, t);
    }
    wtask **head = urgent ? &urgent : &normal;
    wtask *t = *head;
    if (!t) {
      if (given_up(ctx)) {
        wq_free(&urgent);
        wq_free(&normal);
        return FT_ERR_MPI;
      }
      nap_us(100);
      continue;
    }
    int sub = t->next;
    int64_t r0[4], nr[4];
    ft_split_rows(t->blk.rows, r0, nr);
    size_t bytes = (size_t)(nr[sub] * t->blk.cols) * t->blk.out_elem_size;
    unsigned char *out = malloc(sizeof(res_hdr) + bytes);
    if (!out) return FT_ERR_NOMEM;
    res_hdr rh;
    memset(&rh, 0, sizeof rh);
    rh.task_id = t->h.task_id;
    rh.sub = sub;
    double t0 = ft_now();
    int ninj = 0;
    rh.kerr = t->fn ? ft_compute_sub(t->fn, t->kctx, &t->blk, sub, t->h.slot, &t->h.inj,
                                     out + sizeof rh, &ninj)
                    : FT_ERR_UNKNOWN_KERNEL;
    rh.ninj = ninj;
    rh.seconds = ft_now() - t0;
    memcpy(out, &rh, sizeof rh);
    int64_t n = nresults++;
    if (ft_inject_killed(&t->h.inj, widx, n)) {
      dead = 1;
      free(out);
      wq_free(&urgent);
      wq_free(&normal);
      continue;
    }
    int ms = ft_inject_stall_ms(&t->h.inj, widx, n);
    if (ms > 0) {
      struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
      while (nanosleep(&ts, &ts) != 0) {
      }
    }
    MPI_Request sq;
    MPI_Isend(out, (int)(sizeof rh + bytes), MPI_BYTE, 0, TAG_RESULT, m->comm, &sq);
    /* the injector's stop-send on this worker (its n + 1-th result) */
    if (t->h.inj.stop_send_rank == m->rank && n + 1 == t->h.inj.stop_send_after) raise(SIGSTOP);
    if (wait_reqs(ctx, 1, &sq)) {
      /* the master is gone: the buffer stays with the live request */
      wq_free(&urgent);
      wq_free(&normal);
      return FT_ERR_MPI;
    }
    free(out);
    t->next++;
    if (t->h.urgent || t->next >= t->h.sub_end || rh.kerr) {
      *head = t->link;
      free(t->msg);
      free(t);
    }
  }
}

const ft_backend ft_backend_mpi = {
    .name = "mpi",
    .start = mpi_start,
    .stop = mpi_stop,
    .dispatch = mpi_dispatch,
    .serve = mpi_serve,
    .by_name = 1,
};
#else
typedef int ft_mpi_unused;
#endif
