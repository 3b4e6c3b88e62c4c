/*
 * comm.c - the communicator context and its single-rank (no-MPI) mode.
 *
 * A coll_ctx is everything libcoll needs between calls; there are no
 * globals. With MPI it holds two duplicates of the caller's communicator:
 * `comm` for allreduce/reduce and `ta_comm` for timeout aggregation. A
 * duplicate has its own matching context, so no libcoll message can ever be
 * received by a user's MPI_Recv (or vice versa), and the two algorithms can
 * use any tags they like.
 *
 * Single-rank mode: a context created from a NULL communicator, or any
 * context of a build without MPI (TERRAFORT_HAVE_MPI undefined), has rank 0
 * of size 1 and never calls MPI. The collectives then reduce over one rank,
 * i.e. copy send to recv, which is what the terrafort command needs when it
 * is not launched by mpirun (it then never initialises MPI).
 *
 * Destruction is where timeout aggregation's loose ends are tied: messages
 * of operations that failed (late data that arrived after the deadline) may
 * still be in flight. coll_ctx_destroy keeps receiving and discarding them
 * while its own sends complete, then joins a non-blocking barrier and keeps
 * draining until everybody has arrived, so MPI_Finalize finds no unmatched
 * message and no live request.
 */
#include "coll_internal.h"
#include "coll_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *coll_strerror(int code) {
  switch (code) {
  case COLL_OK: return "success";
  case COLL_EINVAL: return "invalid argument";
  case COLL_ENOMEM: return "out of memory";
  case COLL_EMPI: return "MPI error";
  case COLL_ETIMEDOUT: return "ranks missing at the deadline";
  case COLL_ENOTSUP: return "not supported";
  case COLL_ELOST: return "a rank stopped answering";
  case COLL_ECANCELED: return "cancelled";
  default: return "unknown error";
  }
}

void coll_opts_init(coll_opts *o) {
  memset(o, 0, sizeof *o);
  o->segments = 2;
  o->max_segment_bytes = 0;
  /* Swept by scripts/bench/allreduce_sweep (Open MPI 4.1, shared memory,
   * 2-8 ranks on 2 cores; RESULTS.md): a 256 KiB cut-off to recursive
   * doubling is slower than 64 KiB, 16 KiB ties with it; 1-8 segments and
   * 128 KiB-2 MiB segments could not be told apart there, so 2 segments of
   * at least 512 KiB stay (a machine with a core per rank may choose). */
  o->min_segment_bytes = (size_t)512 << 10;
  o->small_bytes = (size_t)64 << 10;
  o->trace_capacity = 0;
  o->inject.delay_rank = -1;
  o->inject.delay_mask = 0;
  o->inject.delay_ms = 0;
  o->inject.drop_rank = -1;
  o->inject.duplicate_rank = -1;
}

int coll_fail(coll_ctx *ctx, int code, const char *fmt, ...) {
  if (ctx) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    va_end(ap);
  }
  return code;
}

void coll_inject_delay(const coll_ctx *ctx) {
  const coll_inject *in = &ctx->opts.inject;
  int hit = in->delay_rank == ctx->rank ||
            (ctx->rank < 64 && (in->delay_mask >> ctx->rank) & 1u);
  if (hit && in->delay_ms > 0) coll_sleep_ms(in->delay_ms);
}

static int ctx_alloc(coll_ctx **out, const coll_opts *opts) {
  coll_ctx *c = calloc(1, sizeof *c);
  if (!c) return COLL_ENOMEM;
  if (opts) c->opts = *opts; else coll_opts_init(&c->opts);
  if (c->opts.segments < 1) c->opts.segments = 1;
  if (c->opts.trace_capacity) {
    c->trace = calloc(c->opts.trace_capacity, sizeof *c->trace);
    if (!c->trace) { free(c); return COLL_ENOMEM; }
  }
  c->rank = 0;
  c->size = 1;
  *out = c;
  return COLL_OK;
}

int coll_ctx_create(coll_ctx **out, const void *mpi_comm, const coll_opts *opts) {
  if (!out) return COLL_EINVAL;
  *out = NULL;
  coll_ctx *c;
  int rc = ctx_alloc(&c, opts);
  if (rc) return rc;
#ifdef TERRAFORT_HAVE_MPI
  if (mpi_comm) {
    MPI_Comm user = *(const MPI_Comm *)mpi_comm;
    /* Duplication is collective: non-blocking and bounded by the monitor. */
    MPI_Request q[2];
    if (MPI_Comm_idup(user, &c->comm, &q[0]) != MPI_SUCCESS) { free(c->trace); free(c); return COLL_EMPI; }
    if (MPI_Comm_idup(user, &c->ta_comm, &q[1]) != MPI_SUCCESS) { free(c->trace); free(c); return COLL_EMPI; }
    int lost = -1;
    rc = coll_live_wait(c->opts.live, 2, q, c->opts.cancel, c->opts.cancel_user, &lost);
    if (rc) {
      /* the requests stay live: the caller ends the job without MPI_Finalize */
      free(c->trace); free(c);
      return rc == COLL_LIVE_LOST ? COLL_ELOST : rc == COLL_LIVE_CANCELED ? COLL_ECANCELED : COLL_EMPI;
    }
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    c->use_mpi = 1;
  }
#else
  (void)mpi_comm;
#endif
  *out = c;
  return COLL_OK;
}

int coll_ctx_create_world(coll_ctx **out, const coll_opts *opts) {
#ifdef TERRAFORT_HAVE_MPI
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) {
    MPI_Comm w = MPI_COMM_WORLD;
    return coll_ctx_create(out, &w, opts);
  }
#endif
  return coll_ctx_create(out, NULL, opts);
}

#ifdef TERRAFORT_HAVE_MPI
int coll_ctx_gone(coll_ctx *c) {
  int lost = coll_live_lost(c->opts.live, NULL);
  if (lost != -1) return coll_fail(c, COLL_ELOST, "rank %d stopped answering (silent beyond %.0f ms)", lost,
                                   coll_live_timeout(c->opts.live));
  if (c->opts.cancel && c->opts.cancel(c->opts.cancel_user)) {
    /* the caller gives up what is posted: no progress after this */
    coll_live_quiesce(c->opts.live);
    return coll_fail(c, COLL_ECANCELED, "cancelled");
  }
  if (coll_live_quiescent(c->opts.live)) return coll_fail(c, COLL_ECANCELED, "this process has stopped communicating");
  return 0;
}

/* The sends live in the context (timeout aggregation posts them and returns
 * before they complete), so the context reaps them: destruction must, and
 * it must not call up into the algorithm that posted them. */
size_t coll_ctx_reap_sends(coll_ctx *c) {
  size_t j = 0;
  for (size_t i = 0; i < c->nsends; i++) {
    int done = 0;
    MPI_Test(&c->sends[i].req, &done, MPI_STATUS_IGNORE);
    if (done) free(c->sends[i].buf);
    else c->sends[j++] = c->sends[i];
  }
  c->nsends = j;
  return j;
}

/* Receives and discards every message waiting on ta_comm. */
static void drain_once(coll_ctx *c) {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    MPI_Message msg;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->ta_comm, &flag, &msg, &st);
    if (!flag) return;
    int len = 0;
    MPI_Get_count(&st, MPI_BYTE, &len);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    if (!b) return;
    /* its sender stopped mid-message: b stays with the request */
    if (coll_recv_probed(c, b, len, &msg)) return;
    if (!coll_ta_take_late(c, st.MPI_SOURCE, st.MPI_TAG, b, (size_t)len)) free(b);
  }
}
#endif

void coll_ctx_destroy(coll_ctx *c) {
  if (!c) return;
#ifdef TERRAFORT_HAVE_MPI
  if (c->use_mpi) {
    /* Bounded: a rank lost (or a cancel) leaves the context's MPI state to
     * the process's end, which then must not call MPI_Finalize. */
    int gone = coll_ctx_gone(c);
    while (!gone && coll_ctx_reap_sends(c) > 0) {
      drain_once(c);
      gone = coll_ctx_gone(c);
      coll_sleep_ms(0.2);
    }
    MPI_Request bar = MPI_REQUEST_NULL;
    if (!gone) MPI_Ibarrier(c->ta_comm, &bar);
    while (!gone) {
      int done = 0;
      drain_once(c);
      MPI_Test(&bar, &done, MPI_STATUS_IGNORE);
      if (done) break;
      gone = coll_ctx_gone(c);
      coll_sleep_ms(0.2);
    }
    /* (late data forwarded while waiting has reached its TAN: the TAN came
     * to the barrier only with it; its buffer, like every send's, is left to
     * the process) */
    if (gone) {
      free(c->sends);
      goto local;
    }
    drain_once(c);
    (void)coll_ctx_reap_sends(c); /* without waiting: those complete by now freed */
    free(c->sends);
    MPI_Comm_free(&c->ta_comm);
    MPI_Comm_free(&c->comm);
  }
local:
#endif
  while (c->early) {
    coll_msg *m = c->early;
    c->early = m->next;
    free(m->buf);
    free(m);
  }
  free(c->bypass);
  free(c->scratch[0]);
  free(c->scratch[1]);
  free(c->trace);
  free(c);
}

int coll_ctx_rank(const coll_ctx *c) { return c->rank; }
int coll_ctx_size(const coll_ctx *c) { return c->size; }
int coll_ctx_is_mpi(const coll_ctx *c) { return c->use_mpi; }

int coll_ctx_set_opts(coll_ctx *c, const coll_opts *o) {
  if (!c || !o) return COLL_EINVAL;
  size_t cap = c->opts.trace_capacity;
  c->opts = *o;
  c->opts.trace_capacity = cap;
  if (c->opts.segments < 1) c->opts.segments = 1;
  return COLL_OK;
}

void coll_ctx_get_opts(const coll_ctx *c, coll_opts *o) { *o = c->opts; }

const char *coll_errmsg(const coll_ctx *c) { return c ? c->errmsg : ""; }

void *coll_scratch(coll_ctx *c, int which, size_t n) {
  if (n == 0) n = 1;
  if (c->scratch_cap[which] < n) {
    void *p = realloc(c->scratch[which], n);
    if (!p) return NULL;
    c->scratch[which] = p;
    c->scratch_cap[which] = n;
  }
  return c->scratch[which];
}

void coll_counters_get(const coll_ctx *c, coll_counters *out) { *out = c->counters; }
void coll_counters_reset(coll_ctx *c) { memset(&c->counters, 0, sizeof c->counters); }

void coll_trace_add(coll_ctx *c, coll_event_kind kind, int step, int segment,
                    int next_pending, size_t bytes) {
  if (!c->trace) return;
  if (c->trace_n >= c->opts.trace_capacity) { c->trace_dropped++; return; }
  coll_trace_event *e = &c->trace[c->trace_n++];
  e->t = coll_now();
  e->kind = kind;
  e->step = step;
  e->segment = segment;
  e->next_pending = next_pending;
  e->bytes = bytes;
}

void coll_trace_get(const coll_ctx *c, const coll_trace_event **ev, size_t *n, size_t *dropped) {
  *ev = c->trace;
  *n = c->trace_n;
  if (dropped) *dropped = c->trace_dropped;
}

void coll_trace_clear(coll_ctx *c) {
  c->trace_n = 0;
  c->trace_dropped = 0;
}

size_t coll_nsegments(const coll_ctx *c, size_t n, size_t es) {
  if (n == 0) return 0;
  size_t s = (size_t)c->opts.segments;
  size_t bytes = n * es;
  if (c->opts.min_segment_bytes > 0) {
    size_t cap = bytes / c->opts.min_segment_bytes;
    if (cap < 1) cap = 1;
    if (s > cap) s = cap;
  }
  if (c->opts.max_segment_bytes > 0) {
    size_t m = (bytes + c->opts.max_segment_bytes - 1) / c->opts.max_segment_bytes;
    if (m > s) s = m;
  }
  /* MPI counts are int: keep every segment under 1 GiB. */
  size_t lim = (size_t)1 << 30;
  size_t m = (bytes + lim - 1) / lim;
  if (m > s) s = m;
  if (s > n) s = n;
  return s;
}
