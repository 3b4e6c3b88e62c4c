/*
 * coll.h - libcoll, the collectives of terrafort.
 *
 * What is here
 *   - coll_allreduce / coll_reduce: pipelined recursive-halving reduce-scatter
 *     followed by a recursive-doubling allgather (allreduce) or a binomial
 *     gather (reduce). specs/halving-allreduce.md.
 *   - coll_timeout_reduce: a tree reduction that stops waiting for late ranks
 *     and lets a timeout aggregation node (TAN) finish the result.
 *     specs/timeout-aggregation.md.
 *   - coll_stats_*: a statistics accumulator (count, sum, sum of squares, min,
 *     max, histogram) and a rank-count independent, bit-deterministic
 *     reduction of per-tile partials.
 *
 * Communicator context
 *   Every call takes a coll_ctx. A context wraps a private duplicate of an
 *   MPI communicator (so libcoll traffic can never match user messages), the
 *   options, scratch buffers, counters and a trace. A context made from a
 *   NULL communicator, or any context in a build without MPI, has exactly one
 *   rank: every collective is then a local copy and no MPI function is ever
 *   called (MPI need not be initialised). libcoll never calls MPI_Init or
 *   MPI_Finalize.
 *
 * Errors
 *   Functions return COLL_OK (0) or a negative COLL_E* code; coll_strerror()
 *   names the code and coll_errmsg(ctx) gives a one-line detail (for example
 *   the ranks that never contributed). The library never prints or exits.
 *
 * Thread safety
 *   A context is not thread-safe: use it from one thread at a time, and call
 *   the collectives on every rank of the context in the same order (as with
 *   MPI collectives). Distinct contexts may be used from distinct threads only
 *   when MPI was initialised with MPI_THREAD_MULTIPLE. The stats helpers
 *   (coll_stats_init/add/merge/mean/stddev) are pure functions of their
 *   arguments and thread-safe on distinct accumulators.
 */
#ifndef COLL_H
#define COLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ---------------------------------------------------------------- */

enum {
  COLL_OK = 0,
  COLL_EINVAL = -1,    /* bad argument or op/datatype combination */
  COLL_ENOMEM = -2,    /* allocation failed */
  COLL_EMPI = -3,      /* an MPI call failed */
  COLL_ETIMEDOUT = -4, /* timeout aggregation: ranks missing at the deadline */
  COLL_ENOTSUP = -5,   /* not supported in this build or configuration */
  COLL_ELOST = -6,     /* a rank fell silent (coll_live.h); coll_errmsg names it */
  COLL_ECANCELED = -7  /* opts.cancel said stop */
};

/* Static string naming an error code ("invalid argument", ...). */
const char *coll_strerror(int code);

/* ---- datatypes and operations ------------------------------------------------ */

typedef enum {
  COLL_INT8, COLL_INT16, COLL_INT32, COLL_INT64,
  COLL_UINT8, COLL_UINT16, COLL_UINT32, COLL_UINT64,
  COLL_FLOAT, COLL_DOUBLE,
  COLL_DTYPE_COUNT
} coll_dtype;

/* Size in bytes of one element of dt, 0 for an invalid dt. */
size_t coll_dtype_size(coll_dtype dt);

typedef enum {
  COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX,
  COLL_BAND, COLL_BOR, COLL_BXOR, /* integer types only */
  COLL_LAND, COLL_LOR, COLL_LXOR, /* all types; result 0 or 1 */
  COLL_OP_USER,                   /* a coll_user_fn, see coll_op_user */
  COLL_OP_KIND_COUNT
} coll_op_kind;

/* A user reduction, MPI_User_function style: for i < count,
 * inout[i] = in[i] (op) inout[i], where `in` holds the contribution of the
 * lower-numbered ranks. Must not keep the pointers. */
typedef void (*coll_user_fn)(const void *in, void *inout, size_t count, void *arg);

typedef struct coll_op {
  coll_op_kind kind;
  coll_user_fn fn;   /* COLL_OP_USER only */
  void *arg;         /* passed to fn */
  size_t elem_size;  /* COLL_OP_USER only: bytes per element */
  int commutative;   /* COLL_OP_USER only: 1 when a op b == b op a */
} coll_op;

/* A built-in operation. */
coll_op coll_op_builtin(coll_op_kind kind);
/* A user operation on elements of elem_size bytes. With a user op the
 * datatype argument of the collectives is ignored. Non-commutative ops give
 * the rank-ordered result r0 op r1 op ... op rN-1 (associativity assumed). */
coll_op coll_op_user(coll_user_fn fn, void *arg, size_t elem_size, int commutative);

/* ---- context ------------------------------------------------------------------- */

typedef struct coll_ctx coll_ctx;

/* Fault injection for tests and for `TERRAFORT_INJECT` (parsed by the
 * command, never by the library). Applies to every collective of the
 * context until changed. */
typedef struct coll_inject {
  int delay_rank;      /* this rank sleeps delay_ms before contributing; -1 none */
  uint64_t delay_mask; /* additionally, rank r < 64 sleeps when bit r is set */
  int delay_ms;
  int drop_rank;       /* timeout aggregation: this rank's contribution is
                          never sent (a crashed contributor); -1 none */
  int duplicate_rank;  /* timeout aggregation: this rank sends its
                          contribution twice (a retransmission); -1 none */
} coll_inject;

typedef struct coll_opts {
  /* The pipelining defaults (2 segments per step, none under 512 KiB) are
   * kept, not chosen by measurement: the segment sweep in
   * scripts/bench/RESULTS.md cannot tell 1, 2, 4 or 8 segments apart on a
   * 2-core machine (medians within 2%, single runs moving by up to 0.3). */
  int segments;              /* S: segments per halving step (default 2) */
  size_t min_segment_bytes;  /* >0: fewer segments so none is below this
                                (default 512 KiB) */
  size_t max_segment_bytes;  /* >0: more segments so none exceeds this
                                (default 0; wins over min_segment_bytes) */
  size_t small_bytes;        /* allreduce/reduce of fewer bytes use recursive
                                doubling / a binomial tree (default 64 KiB,
                                measured with scripts/bench/allreduce) */
  size_t trace_capacity;     /* events kept by the segment trace; 0 = off */
  coll_inject inject;        /* fault injection; coll_opts_init disables it */
  /* Liveness (coll_live.h; NULL: waits unbounded but for their own
   * deadlines): context creation, destruction and timeout aggregation give
   * up with COLL_ELOST once a rank is silent beyond its timeout, and with
   * COLL_ECANCELED when cancel(cancel_user) returns nonzero. */
  const struct coll_live *live;
  int (*cancel)(void *user);
  void *cancel_user;
} coll_opts;

/* Fills opts with the defaults. */
void coll_opts_init(coll_opts *opts);

/* Creates a context over the MPI communicator *(MPI_Comm *)mpi_comm
 * (duplicated; collective over it), or a single-rank context when mpi_comm is
 * NULL or the build has no MPI. opts may be NULL for the defaults.
 * Returns COLL_OK and *out, or an error (then *out is NULL). */
int coll_ctx_create(coll_ctx **out, const void *mpi_comm, const coll_opts *opts);

/* Context over MPI_COMM_WORLD when the build has MPI and MPI is initialised
 * (and not finalised); a single-rank context otherwise. */
int coll_ctx_create_world(coll_ctx **out, const coll_opts *opts);

/* Drains stale timeout-aggregation messages, completes every request libcoll
 * started, frees the duplicated communicators and the context. Collective
 * over the context's ranks. NULL is a no-op. Must run before MPI_Finalize. */
void coll_ctx_destroy(coll_ctx *ctx);

int coll_ctx_rank(const coll_ctx *ctx);
int coll_ctx_size(const coll_ctx *ctx);
/* 1 when the context talks MPI, 0 in single-rank mode. */
int coll_ctx_is_mpi(const coll_ctx *ctx);
/* Replaces the options (the trace capacity is fixed at creation). */
int coll_ctx_set_opts(coll_ctx *ctx, const coll_opts *opts);
void coll_ctx_get_opts(const coll_ctx *ctx, coll_opts *opts);
/* Detail of the last error on this context ("" when none). */
const char *coll_errmsg(const coll_ctx *ctx);

/* ---- counters and trace ---------------------------------------------------------- */

#define COLL_MAX_STEPS 32

/* Cumulative, always-on counters of this rank since the last reset. */
typedef struct coll_counters {
  uint64_t calls;                        /* allreduce + reduce calls */
  uint64_t halving_calls;                /* ... that used recursive halving */
  uint64_t step_sent[COLL_MAX_STEPS];    /* bytes sent in halving step k */
  uint64_t step_recv[COLL_MAX_STEPS];    /* bytes received in halving step k */
  uint64_t fold_sent, fold_recv;         /* non-power-of-two fold and unfold */
  uint64_t collect_sent, collect_recv;   /* allgather / gather / root forward */
  uint64_t small_sent, small_recv;       /* small-message path */
  uint64_t elems_reduced;                /* elements this rank combined */
} coll_counters;

void coll_counters_get(const coll_ctx *ctx, coll_counters *out);
void coll_counters_reset(coll_ctx *ctx);

typedef enum {
  COLL_EV_POST_RECV, COLL_EV_POST_SEND, COLL_EV_RECV_DONE, COLL_EV_SEND_DONE,
  COLL_EV_REDUCE_BEGIN, COLL_EV_REDUCE_END
} coll_event_kind;

typedef struct coll_trace_event {
  double t;            /* seconds, CLOCK_MONOTONIC */
  coll_event_kind kind;
  int step;            /* halving step */
  int segment;         /* segment index within the step */
  int next_pending;    /* REDUCE_BEGIN: 1 if segment+1's receive was still
                          incomplete when this reduction began, 0 if it had
                          completed, -1 if there is no next segment */
  size_t bytes;
} coll_trace_event;

/* The recorded events in order (*n of them; the pointer is valid until the
 * next collective or clear). *dropped counts events that did not fit. */
void coll_trace_get(const coll_ctx *ctx, const coll_trace_event **ev, size_t *n, size_t *dropped);
void coll_trace_clear(coll_ctx *ctx);

/* ---- allreduce / reduce ------------------------------------------------------------- */

/* recv[i] = send_0[i] op send_1[i] op ... op send_{N-1}[i] on every rank.
 * send == recv means in place. The send buffer is never written otherwise.
 * count may be 0. Every rank gets a bitwise identical result. */
int coll_allreduce(coll_ctx *ctx, const void *send, void *recv, size_t count,
                   coll_dtype dt, const coll_op *op);

/* As coll_allreduce, but only `root` receives the result (recv is ignored
 * and may be NULL elsewhere; send == recv is in place at the root). */
int coll_reduce(coll_ctx *ctx, const void *send, void *recv, size_t count,
                coll_dtype dt, const coll_op *op, int root);

/* ---- timeout aggregation --------------------------------------------------------------- */

typedef enum {
  COLL_TAN_FIXED,   /* ta_opts.tan_rank */
  COLL_TAN_HASHED,  /* a rank derived from the operation id ("random by id") */
  COLL_TAN_ROOT     /* the tree root: fewest hops to the root */
} coll_tan_policy;

#define COLL_TA_MAX_LEVELS 16

typedef struct coll_ta_opts {
  int arity;                  /* children per interior node (>= 2, default 2) */
  int root;                   /* tree root rank (default 0) */
  double threshold_ms;        /* threshold of the deepest interior level (default 100) */
  double level_threshold_ms[COLL_TA_MAX_LEVELS]; /* >0 overrides the threshold
                                 at that depth; otherwise depth d of a tree of
                                 height H waits threshold_ms * (H - d) */
  double entry_cap_ms;        /* no child arrived: stop waiting this long after
                                 entry (0 = the node's own threshold, which is
                                 below its parent's) */
  double deadline_ms;         /* TAN: ranks still missing this long after its
                                 entry make the operation fail (default 2000) */
  coll_tan_policy tan_policy; /* default COLL_TAN_FIXED */
  int tan_rank;               /* COLL_TAN_FIXED (default 0) */
  int root_only;              /* 1: only the root needs the result (a reduce):
                                 the decider sends RESULT to the root alone, and
                                 every other rank returns COLL_OK (recv
                                 untouched) as soon as its contribution is sent
                                 and it holds no bypass entry, so with the
                                 COLL_TAN_ROOT policy and an arity of N - 1 (all
                                 others leaves) no rank but the root waits for a
                                 late one. Default 0 (every rank gets it). */
  int deterministic;          /* 1 (default): fold in a fixed order (own, then
                                 children by index; at the TAN pieces by their
                                 lowest rank) so floating-point results are
                                 bit-identical for the same late set */
  int snapshot;               /* 1 (needs root_only and the root as TAN): the
                                 root takes what has arrived by its threshold
                                 (or its entry cap) and returns it at once,
                                 COLL_OK with the ranks missing in the
                                 report's late list; nobody waits for late
                                 data, which a later operation drops as stale.
                                 For figures where a fresh partial beats a
                                 complete old one (terrafort's progress line
                                 under mpirun). Default 0. */
} coll_ta_opts;

/* A deadline_ms that never fires in practice (one day): for a timeout
 * aggregation run under a liveness monitor (coll_live.h). The ranks that are
 * merely slow (a long tile, a big DEM) must not fail the operation; the
 * ones that are gone are found by the monitor, which ends every wait within
 * its own timeout. */
#define COLL_DEADLINE_MONITORED_MS 86400e3

void coll_ta_opts_init(coll_ta_opts *o);

/* Depth of rank in the tree of o over nranks ranks (root 0), -1 on bad input. */
int coll_ta_depth(const coll_ta_opts *o, int nranks, int rank);
/* Threshold (ms) an interior node at that depth waits after its first arrival. */
double coll_ta_threshold_ms(const coll_ta_opts *o, int nranks, int depth);

#define COLL_REPORT_MAX_LATE 64

/* What one coll_timeout_reduce did on this rank. Times are seconds on
 * CLOCK_MONOTONIC (comparable between ranks on one machine); *_ms are
 * durations. -1 when not applicable. */
typedef struct coll_ta_report {
  const char *algorithm;      /* "timeout-tree" or "local" */
  uint64_t op_id;
  int nranks, rank, root, tan_rank, arity, depth;
  int interior;               /* this rank had children */
  int nlate;                  /* ranks not in the root's partial */
  int late_ranks[COLL_REPORT_MAX_LATE]; /* the first nlate of them, ascending */
  double t_entry;             /* entered the call */
  double t_sent;              /* sent its (partial) contribution up */
  double t_first_arrival;     /* interior: first child's data arrived */
  double t_released;          /* interior: freed its per-op state */
  double t_done;              /* result or error in hand */
  double waited_ms;           /* t_done - t_entry */
  double release_ms;          /* interior: t_released - (t_first_arrival or t_entry) */
  int late_forwarded;         /* late messages this rank forwarded to the TAN */
  int late_msgs_at_tan;       /* TAN: late messages received */
  int tan_msgs;               /* TAN: partial + late messages received */
  int dropped_duplicates;     /* messages dropped because they would count a rank twice */
  int dropped_stale;          /* messages of earlier operations dropped */
  int late_direct;            /* root_only: this rank's own data sent straight to the TAN, its
                                 parent having released without it (RELEASED) */
} coll_ta_report;

/* Allreduce over a k-ary tree that tolerates late ranks (see the spec): every
 * rank gets the result, or every rank gets COLL_ETIMEDOUT with coll_errmsg()
 * naming the missing ranks once the TAN's deadline passes. Commutative ops
 * only (COLL_EINVAL otherwise). report may be NULL. Operation ids are counted
 * per context, so every rank must make the same sequence of calls. */
int coll_timeout_reduce(coll_ctx *ctx, const void *send, void *recv, size_t count,
                        coll_dtype dt, const coll_op *op, const coll_ta_opts *o,
                        coll_ta_report *report);

/* ---- statistics --------------------------------------------------------------------------- */

#define COLL_STATS_MAX_BINS 256

/* Accumulator of one band's statistics. Plain data: copy it freely. */
typedef struct coll_stats {
  int64_t count;       /* valid (non-nodata, non-NaN) values */
  double sum, sumsq;   /* of the valid values, summed in order */
  double min, max;     /* +inf / -inf when count == 0 */
  int nbins;           /* 0: no histogram */
  double hist_min, hist_max;  /* nbins equal bins over [hist_min, hist_max];
                                 values outside are not binned */
  int64_t bins[COLL_STATS_MAX_BINS];
} coll_stats;

/* Empty accumulator; nbins in 0..COLL_STATS_MAX_BINS and hist_min < hist_max
 * when nbins > 0. Returns COLL_EINVAL otherwise. */
int coll_stats_init(coll_stats *s, int nbins, double hist_min, double hist_max);
/* Adds n values in order, skipping NaN and, when has_nodata, values equal to
 * nodata. */
void coll_stats_add(coll_stats *s, const double *v, size_t n, int has_nodata, double nodata);
void coll_stats_add_float(coll_stats *s, const float *v, size_t n, int has_nodata, double nodata);
/* into += from (sum then sumsq added as into + from). COLL_EINVAL when the
 * histogram layouts differ. */
int coll_stats_merge(coll_stats *into, const coll_stats *from);
/* Mean and population standard deviation (GDAL's STATISTICS_STDDEV); NaN
 * when count == 0. */
double coll_stats_mean(const coll_stats *s);
double coll_stats_stddev(const coll_stats *s);

/* Global statistics from per-tile partials. Rank r passes the ntiles
 * accumulators it computed and their tile ids (unique across all ranks);
 * every rank receives in *out the merge of all tiles in ascending tile-id
 * order. Determinism: count, min, max and the bins are exact integers or
 * order-free; sum and sumsq are gathered per tile and added in tile-id
 * order, so *out is bit-identical for any rank count and any assignment of
 * tiles to ranks. All partials must share one histogram layout; a rank
 * with no tiles takes the layout from *out (set it with coll_stats_init). */
int coll_stats_reduce(coll_ctx *ctx, const coll_stats *tiles, const int64_t *tile_ids,
                      size_t ntiles, coll_stats *out);

#ifdef __cplusplus
}
#endif
#endif
