/*
 * aap.h - the adaptive asynchronous parallel (AAP) graph engine (its own library: no GDAL, no terrain).
 *
 * The engine runs a *program* (PEval, IncEval, Assemble and an aggregate f_aggr over
 * fixed-size values) over *fragments*: rectangles that partition a rows x cols grid, each
 * with a one-cell halo. A program's border parameters are its fragment's perimeter cells;
 * when a round changes one, the program emits (global cell index, value) and the engine
 * routes it to every fragment whose halo holds that cell. Receivers combine values for the
 * same parameter with f_aggr in a per-fragment buffer; a round's IncEval sees a snapshot of
 * that buffer taken (and sorted by halo position) at round start, so IncEval is a
 * deterministic function of (fragment state, snapshot).
 *
 * When a fragment may start its next round is decided by its delay stretch (DS); see
 * schedule.c for the rules of aap (default), bsp, ap, ssp(c) and a seeded random
 * schedule. Termination (term.c) is the inactive/ack/wait wave of the spec plus
 * batch counters: the run ends only when every fragment is inactive and the totals of
 * batches sent and received are equal and unchanged over two consecutive waves, so a
 * message still in flight never ends a run early.
 *
 * Back-ends, from one program source:
 *   tr_aap_run_threads  one process, opts.threads threads, more fragments than threads; a
 *                       fragment waiting on its DS gives its thread to another fragment.
 *   tr_aap_run_sim      a virtual-clock simulator: per-worker round durations and message
 *                       latencies are given; the program itself runs for real.
 *   tr_aap_run_mpi      fragments spread over the ranks of an MPI communicator the caller
 *                       has initialised (the engine never calls MPI_Init).
 *
 * Correctness rests on GRAPE's monotone condition: values from a finite domain, IncEval
 * contracting and monotone. Then every schedule converges to the same result.
 *
 * Thread safety: a run uses only its arguments; separate runs may proceed concurrently.
 * Program callbacks of different fragments may run concurrently (threads back-end); the
 * callbacks of one fragment never do. f_aggr must be a pure function.
 */
#ifndef TR_AAP_H
#define TR_AAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Error codes: 0 is success, failures are negative. */
enum {
  TR_AAP_OK = 0,
  TR_AAP_EINVAL = -1,    /* bad options or layout */
  TR_AAP_ENOMEM = -2,    /* allocation failed */
  TR_AAP_EPROGRAM = -3,  /* a program callback failed */
  TR_AAP_EDEADLOCK = -4, /* nothing can run but the run is not over (a schedule bug) */
  TR_AAP_ESYS = -5,      /* thread or MPI failure */
  TR_AAP_ENOMPI = -6,    /* built without MPI */
  TR_AAP_EABANDONED = -7 /* opts.give_up ended the run (a rank lost, a signal) */
};
const char *tr_aap_strerror(int err);

typedef enum {
  TR_AAP_SCHED_AAP = 0, /* adaptive delay stretch (default) */
  TR_AAP_SCHED_BSP,     /* DS = inf while r_i > r_min or previous-round messages in flight */
  TR_AAP_SCHED_AP,      /* DS = 0 */
  TR_AAP_SCHED_SSP,     /* DS = inf while r_i > r_min + staleness */
  TR_AAP_SCHED_RANDOM   /* DS drawn in [0, DS_max] from seed; random pick among ready */
} tr_aap_schedule;

/* Parses "aap", "bsp", "ap", "ssp", "random"; returns 0 or TR_AAP_EINVAL. */
int tr_aap_schedule_parse(const char *name, tr_aap_schedule *out);
const char *tr_aap_schedule_name(tr_aap_schedule s);

/* Injected faults (tests and benchmarks; terrafort's TERRAFORT_INJECT kinds
 * `slow` and `msg-delay`), kept apart from the engine's real options. */
typedef struct tr_aap_inject {
  int slow_worker;    /* this worker (thread/rank) sleeps after each round; -1 = none */
  double slow_factor; /* ... for (slow_factor - 1) x the round's duration; <= 1 = off */
  double delay_max;   /* threads back-end: each message batch is held back for a random
                         time in [0, delay_max] seconds before delivery; 0 = off */
  int stop_send_rank, stop_send_after; /* MPI back-end: rank stop_send_rank stops itself
                         (SIGSTOP) right after posting its stop_send_after-th batch to
                         another rank (1-based; 0 = off), mid-message for the receiver */
} tr_aap_inject;

typedef struct tr_aap_opts {
  tr_aap_schedule schedule;
  int staleness;      /* ssp: c >= 0; aap: optional bound, -1 = none (default),
                         TR_AAP_STALENESS_AUTO = bound 0 only where measured speeds differ
                         (opt-in; schedule.c) */
  int L_bottom, L_up; /* clamp of L_i, the messages a fragment expects (aap) */
  double ds_max;      /* longest DS for a fragment with messages, seconds (sim: time units);
                         0 = adaptive: ds_rel x the measured round time (below) */
  double straggler_ratio; /* aap with TR_AAP_STALENESS_AUTO: a neighbour whose time per cell
                         differs by more than this factor is a straggler (default 2) */
  double ds_rel;      /* aap, random, when ds_max is 0: DS_max = ds_rel x the moving-average
                         round time (the longest of the fragment's and its awaited
                         senders'), so DS follows the rounds measured */
  int threads;        /* threads back-end: worker threads (>= 1) */
  int pin;            /* threads: fragment f runs only on thread f % threads (a worker
                         owning its fragments, as on a cluster); 0 = any thread */
  tr_aap_inject inject; /* faults for tests and benchmarks; tr_aap_opts_default: none */
  uint64_t seed;      /* random schedule and injected delays */
  /* MPI back-end: asked while this rank waits for others (at most every few
   * ms); threads back-end: asked by each thread before each round and every
   * tenth of a second while it waits. Nonzero ends the run with
   * TR_AAP_EABANDONED, writing the reason into why (a signal, a lost rank).
   * Under MPI the engine's state is then left as it is: the caller ends the
   * job without MPI_Finalize. NULL: never asked. Thread-safe. */
  int (*give_up)(void *user, char *why, size_t n);
  void *give_up_user;
} tr_aap_opts;

/* aap's opt-in staleness: an SSP bound of 0 while a fragment and a neighbour differ in
 * measured time per cell by more than straggler_ratio (a straggler), none otherwise. Less
 * total work with a straggler, not a shorter run (schedule.c), hence not the default. */
#define TR_AAP_STALENESS_AUTO (-2)

/* Defaults: aap, no staleness bound (-1), L in [1, 8], ds_max 0 (adaptive) with ds_rel 2 (DS_max =
 * twice the measured round time), 1 thread, nothing injected. */
void tr_aap_opts_default(tr_aap_opts *o);

/* ---- fragments ---------------------------------------------------------------------- */

typedef struct tr_aap_frag {
  int64_t id;               /* index in the layout */
  int64_t row0, col0;       /* first cell of the tile in the grid */
  int64_t rows, cols;       /* tile extent (>= 1) */
} tr_aap_frag;

typedef struct tr_aap_layout {
  int64_t rows, cols;       /* the grid */
  int64_t nfrags;
  tr_aap_frag *frags;
  int64_t *nb_start;        /* neighbours of f: nb[nb_start[f] .. nb_start[f+1]) */
  int64_t *nb;              /* fragments whose tile touches f's halo */
  int64_t *nb_back;         /* for each nb entry (f -> g): position of f in g's list */
} tr_aap_layout;

/* Regular tiles of tile_rows x tile_cols; the last row/column of tiles may be smaller. */
int tr_aap_layout_grid(tr_aap_layout *L, int64_t rows, int64_t cols, int64_t tile_rows,
                       int64_t tile_cols);
/* Tiles between cuts: row_cuts[0] = 0 < ... < row_cuts[nr] = rows; same for columns. */
int tr_aap_layout_cuts(tr_aap_layout *L, int64_t rows, int64_t cols, int nr,
                       const int64_t *row_cuts, int nc, const int64_t *col_cuts);
/* Any rectangles that partition the grid (checked); ids are reassigned 0..n-1. */
int tr_aap_layout_rects(tr_aap_layout *L, int64_t rows, int64_t cols, int64_t n,
                        const tr_aap_frag *rects);
void tr_aap_layout_free(tr_aap_layout *L);

/* ---- programs ----------------------------------------------------------------------- */

/* The context of one running round: where a program emits messages and reports work. */
typedef struct tr_aap_round tr_aap_round;

/* Emits a new value of a border parameter: cell is the global index (row * cols + col)
 * of a perimeter cell of the running fragment. Returns 0 or TR_AAP_ENOMEM/EINVAL. */
int tr_aap_emit(tr_aap_round *rd, int64_t cell, const void *value);
/* Adds to the round's work (for fill: cells popped from the flood queues). */
void tr_aap_add_work(tr_aap_round *rd, int64_t cells);
/* Round index being run: 0 for PEval, then 1, 2, ... */
int64_t tr_aap_round_index(const tr_aap_round *rd);

/* Rounds computed more than once (the graph runner's --ft dual and replay): a
 * capture is a round context of the same fragment and round index that keeps
 * what the program emits, and the work it reports, instead of routing them.
 * A caller gives each computation of a round its own capture, compares them,
 * and commits the one it accepts into the engine's round, which then routes
 * its emits as if the program had made them there. A capture may be used
 * from another thread than the round's (it reads only the run's layout).
 * open: NULL when out of memory. get: the number of emits (or a negative
 * TR_AAP_E* a failed emit left), their cells and values (value_size apart)
 * and the work. commit: 0 or TR_AAP_E*. */
tr_aap_round *tr_aap_capture_open(const tr_aap_round *rd);
void tr_aap_capture_reset(tr_aap_round *cap);
int64_t tr_aap_capture_get(const tr_aap_round *cap, const int64_t **cells, void **values, int64_t *work);
int tr_aap_capture_commit(const tr_aap_round *cap, tr_aap_round *rd);
void tr_aap_capture_close(tr_aap_round *cap);

typedef struct tr_aap_program {
  size_t value_size; /* bytes per value, 1..64 */
  void *user;
  /* Sequential batch algorithm on one fragment; creates *state. Returns 0 on success. */
  int (*peval)(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd);
  /* Incremental algorithm: n (cell, value) pairs of the snapshot, cells ascending by halo
   * position, values packed value_size apart. Returns 0 on success. */
  int (*inceval)(void *user, const tr_aap_frag *f, void *state, int64_t n,
                 const int64_t *cells, const void *values, tr_aap_round *rd);
  /* Assemble: called once per fragment after termination (may write the result out);
   * the engine never touches state afterwards. NULL = nothing to do. */
  int (*assemble)(void *user, const tr_aap_frag *f, void *state);
  /* Frees state (after assemble, or on error). NULL = nothing to free. */
  void (*destroy)(void *user, void *state);
  /* f_aggr: acc = aggr(acc, value). Returns 1 when acc changed, else 0. */
  int (*aggr)(void *user, void *acc, const void *value);
  /* Optional: 0 when fragment frag's state is not in memory (spilled to disk
   * by an out-of-core runner). Among fragments allowed to start, the engine
   * runs those in memory first: one on disk waits while another can run (its
   * delay stretch then has that reason), so the runner does not thrash. Called
   * often and under the engine's lock: it must be cheap and take no lock the
   * callbacks hold. NULL: all in memory. */
  int (*resident)(void *user, int64_t frag);
  /* 1: Assemble may run for several fragments at once (the threads back-end
   * then assembles on all its threads, each taking the next fragment in
   * order); the program orders whatever its Assemble writes. 0: one at a
   * time, in fragment order. */
  int assemble_parallel;
} tr_aap_program;

/* ---- statistics --------------------------------------------------------------------- */

typedef struct tr_aap_worker_stats {
  int64_t rounds;         /* rounds run (PEval included) */
  double busy_s;          /* time inside PEval/IncEval */
  double idle_s;          /* time with nothing it was allowed to run */
  double ds_s;            /* total delay stretch: sum over its rounds of (start - ready),
                             ready = messages buffered and previous round over; on threads
                             it includes waiting for a free thread */
  int64_t msgs_sent, msgs_recv;       /* (parameter, value) pairs */
  int64_t batches_sent, batches_recv; /* one batch per (round, destination fragment) */
  int64_t work;           /* program-reported work (cells popped) */
} tr_aap_worker_stats;

typedef struct tr_aap_stats {
  const char *backend;    /* "threads", "sim", "mpi" */
  tr_aap_schedule schedule;
  int nworkers;
  tr_aap_worker_stats *w; /* nworkers entries (owned) */
  double makespan_s;      /* wall time (sim: virtual time) from start to termination */
  int64_t waves;          /* termination waves run */
  int64_t max_round;      /* largest round count of any fragment */
} tr_aap_stats;

void tr_aap_stats_free(tr_aap_stats *s);

/* ---- back-ends ---------------------------------------------------------------------- */
/* Each returns 0 or a negative TR_AAP_E*; err (may be NULL) receives a message. stats may
 * be NULL; when given it is filled and must be released with tr_aap_stats_free. */

int tr_aap_run_threads(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                       tr_aap_stats *stats, char *err, size_t errlen);

/* One record per round the simulator runs (for tests of the timeline). */
typedef struct tr_aap_trace {
  int worker;
  int64_t frag, round;
  double start, end;
  int64_t nmsgs;          /* size of the snapshot the round read */
} tr_aap_trace;

typedef struct tr_aap_sim_opts {
  int workers;             /* >= 1 */
  const int *frag_worker;  /* fragment -> worker; NULL = f % workers */
  const double *round_time;/* per worker fixed part of a round; NULL = 0 */
  double time_per_work;    /* + this x the round's work */
  double latency;          /* message latency ... */
  double latency_jitter;   /* ... + uniform [0, jitter) drawn from opts.seed */
  void (*trace)(void *user, const tr_aap_trace *t);
  void *trace_user;
  int64_t max_events;      /* guard; 0 = 100 million */
} tr_aap_sim_opts;

int tr_aap_run_sim(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                   const tr_aap_sim_opts *so, tr_aap_stats *stats, char *err, size_t errlen);

/* comm points to an MPI_Comm (void* keeps mpi.h out of this header). Fragment f is owned
 * by rank f % size: PEval/IncEval/Assemble of f run there only. Every rank must call it
 * with the same layout and options. Returns TR_AAP_ENOMPI when built without MPI. */
int tr_aap_run_mpi(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                   void *comm, tr_aap_stats *stats, char *err, size_t errlen);

#endif
