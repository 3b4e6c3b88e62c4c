/*
 * coll_internal.h - what the libcoll source files share and nobody else sees.
 *
 * The context (struct coll_ctx) is defined here: the two duplicated
 * communicators (one for allreduce/reduce, one for timeout aggregation, so
 * their traffic can never match each other or the user's), the options, the
 * scratch buffers reused across calls (large vectors would otherwise fault
 * fresh pages in on every call), counters, the segment trace and the state
 * timeout aggregation keeps between operations (operation id, messages of
 * future operations received early, sends not yet completed).
 */
#ifndef COLL_INTERNAL_H
#define COLL_INTERNAL_H

#include "coll.h"
#include "coll_clock.h"

#include <stdarg.h>

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* out[i] = a[i] (op) b[i]; out may alias a or b element-wise. */
typedef void (*coll_kernel)(const void *a, const void *b, void *out, size_t n);

/* An operation resolved against a datatype. */
typedef struct coll_opdesc {
  coll_kernel kernel;  /* built-in ops */
  coll_user_fn fn;     /* user ops */
  void *arg;
  size_t es;           /* element size */
  int commutative;
} coll_opdesc;

int coll_op_resolve(const coll_op *op, coll_dtype dt, coll_opdesc *d);

/* out = mine (op) recvd when mine_is_left, else recvd (op) mine. recvd is
 * scratch and may be clobbered; out may alias mine. */
void coll_apply(const coll_opdesc *d, const void *mine, void *recvd, void *out, size_t n,
                int mine_is_left);

/* A message of a timeout-aggregation operation that arrived before this
 * rank entered that operation. */
typedef struct coll_msg {
  struct coll_msg *next;
  int source;
  size_t len;
  unsigned char *buf;
} coll_msg;

#ifdef TERRAFORT_HAVE_MPI
typedef struct coll_pending_send {
  MPI_Request req;
  unsigned char *buf;
} coll_pending_send;
#endif

struct coll_ctx {
  int rank, size;
  int use_mpi;
#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm comm;     /* allreduce / reduce */
  MPI_Comm ta_comm;  /* timeout aggregation */
  coll_pending_send *sends;  /* timeout-aggregation sends not known complete */
  size_t nsends, capsends;
#endif
  coll_opts opts;
  char errmsg[512];

  void *scratch[2];
  size_t scratch_cap[2];

  coll_counters counters;
  coll_trace_event *trace;
  size_t trace_n, trace_dropped;

  uint64_t ta_next_op;  /* id of the next timeout-aggregation op */
  coll_msg *early;      /* messages of operations not yet entered */
  /* root_only reduces: the bypass entries of operations this rank has left
   * (an interior node returns at its release): a late child's data that
   * reached it anyway is forwarded to the op's TAN when it is next seen */
  struct coll_bypass {
    int child;     /* its rank */
    int tan;
    uint64_t opid;
  } *bypass;
  size_t nbypass, capbypass;
};

/* Scratch buffer `which` (0 or 1) of at least n bytes, NULL on failure. */
void *coll_scratch(coll_ctx *ctx, int which, size_t n);

int coll_fail(coll_ctx *ctx, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Sleeps when the context's fault injection delays this rank. */
void coll_inject_delay(const coll_ctx *ctx);

void coll_trace_add(coll_ctx *ctx, coll_event_kind kind, int step, int segment,
                    int next_pending, size_t bytes);

/* Number of segments a range of n elements of es bytes is cut into; the
 * same on every rank for the same n. 0 when n == 0. */
size_t coll_nsegments(const coll_ctx *ctx, size_t n, size_t es);

#ifdef TERRAFORT_HAVE_MPI
/* COLL_ELOST / COLL_ECANCELED (with the error line set) when a rank was
 * lost or the caller cancelled (opts.live, opts.cancel); 0 otherwise. */
int coll_ctx_gone(coll_ctx *ctx);

/* Completes n MPI requests (MPI_Request *) on ctx: MPI_Waitall without a
 * liveness monitor or cancel, otherwise polled and ended by
 * coll_ctx_gone (the requests then stay live). halving.c. */
int coll_waitn(coll_ctx *ctx, int n, void *reqs);

/* Receives the message a probe matched (MPI_Message *msg, len bytes) into
 * buf through coll_waitn: a blocking receive after a probe waits for the
 * rest of a large message, which a sender stopped mid-message never sends
 * (a transport without single-copy reads, as between nodes). On failure
 * buf stays with the live request: the caller must not free it.
 * halving.c. */
int coll_recv_probed(coll_ctx *ctx, void *buf, int len, void *msg);

/* Frees the timeout-aggregation sends that completed; returns how many are
 * still in flight. In comm.c: the context owns the sends and its
 * destruction waits for them. */
size_t coll_ctx_reap_sends(coll_ctx *ctx);
#ifdef TERRAFORT_HAVE_MPI
/* A timeout-aggregation message (tag) of an operation this rank has left:
 * forwarded to its TAN when it is a late child's data with a bypass entry
 * of the context (1, m taken), else 0 (the caller drops it). */
int coll_ta_take_late(coll_ctx *ctx, int source, int tag, unsigned char *m, size_t len);
#endif
#endif

#endif
