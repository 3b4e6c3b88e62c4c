/*
 * ft.h - libft, terrafort's fault-tolerance library: dual-redundant block
 * computation with fast sub-block recompute (specs/redundant-recompute.md),
 * and runtime idempotence tracking with replay of launches
 * (specs/idempotent-replay.md; the tracker section at the end).
 *
 * The idea. A block (= a tile) is computed twice, by replicas P (slot 0) and
 * P' (slot 1) on two different workers. Each block is split logically into
 * up to 4 horizontal strips of rows, the sub-blocks B00..B03. A replica
 * computes its sub-blocks in order and hands each result over as soon as it
 * is done; the calling thread (the "master thread" of the block) compares the
 * two results of sub-block j while the replicas compute sub-block j+1. A
 * sub-block whose results disagree is re-dispatched at once to a third worker
 * (avoiding both replicas' workers when possible); the third result decides by
 * a 2-of-3 vote. With no majority the sub-block is recomputed again, at most
 * `max_recomputes` times, then ft_run_block() fails with FT_ERR_FATAL.
 *
 * Back-ends, chosen when the context is created:
 *   - threads (ft_opts.mpi_comm == NULL): a pool of worker threads owned by
 *     the context; workers are numbered 0..workers-1.
 *   - MPI (ft_opts.mpi_comm points to an MPI_Comm): every rank of the
 *     communicator calls ft_ctx_create(); rank 0 is the master (it calls
 *     ft_run_block()), ranks 1..N-1 are workers that call ft_serve() until
 *     the master's ft_ctx_destroy() shuts them down. Worker w is rank w+1.
 *     The library never calls MPI_Init/MPI_Finalize. Rank 0 runs one progress
 *     thread that makes all of the context's MPI calls, so MPI must be
 *     initialised with at least MPI_THREAD_SERIALIZED, and with
 *     MPI_THREAD_MULTIPLE if the application itself calls MPI on rank 0 while
 *     the context exists. N must be >= 3 (two replicas on different ranks).
 *
 * Comparison. With tolerance xi = 0 (the default) two results agree only when
 * they are bit-identical (so NaN == NaN with identical bits). With xi > 0 a
 * cell disagrees when |R - R'| >= xi, or when exactly one of them is NaN. For
 * a sub-block of n cells with k disagreeing cells, r = k / n; r > eps marks the
 * sub-block wrong. 0 < r <= eps is accepted with P's (slot 0's) values and
 * counted as tolerated. The defaults (xi = 0, eps = 0) accept nothing but
 * bit-identical results; ft_opts_source_profile() sets the source's
 * xi = 0.1, eps = 0.15, which lets up to 15% of a sub-block's cells differ by
 * any amount and every cell differ by less than 0.1 without notice.
 * FT_TYPE_BYTES outputs are always compared bitwise (xi is ignored). With
 * settle_cells, no cell beyond xi is accepted without a majority: every
 * output cell is within xi of a result another computation confirmed.
 *
 * Errors: functions return 0 or a negative FT_ERR_* code; ft_strerror() names
 * it, and ft_run_block() fills ft_status.msg with a sentence the caller can
 * print. The library never prints and never exits.
 *
 * Thread safety: ft_run_block() may be called concurrently from any number
 * of threads on one context. ft_report_get()/
 * ft_trace_get() are safe at any time but a trace copy is only coherent when
 * no call is in flight. ft_ctx_create()/ft_ctx_destroy() must not race with
 * anything else on the same context.
 */
#ifndef FT_H
#define FT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error codes ------------------------------------------------------- */
enum {
  FT_OK = 0,
  FT_ERR_INVAL = -1,      /* bad argument or option */
  FT_ERR_NOMEM = -2,      /* allocation failed */
  FT_ERR_FATAL = -3,      /* a sub-block could not be agreed within max_recomputes */
  FT_ERR_TIMEOUT = -4,    /* work timed out and no responsive worker was left for it */
  FT_ERR_KERNEL = -5,     /* the kernel returned an error */
  FT_ERR_NOMPI = -6,      /* mpi_comm given but libft was built without MPI */
  FT_ERR_MPI = -7,        /* an MPI call failed or MPI is not usable (thread level, size) */
  FT_ERR_UNKNOWN_KERNEL = -8, /* MPI back-end: kernel name not in ft_opts.kernels */
  FT_ERR_ROLE = -9,       /* call not valid for this rank's role (master/worker) */
  FT_ERR_THREAD = -10,    /* creating a thread failed */
  FT_ERR_LIMIT = -11,     /* replay: more errors detected than ft_tracker_opts.max_errors */
  FT_ERR_NOREPLAY = -12   /* replay: no relaunch set and no usable checkpoint repairs the error */
};

/* A static English description of an FT_* code ("unknown error" otherwise). */
const char *ft_strerror(int code);

/* ---- blocks and kernels -------------------------------------------------- */
typedef enum {
  FT_TYPE_BYTES = 0, /* opaque elements of out_elem_size bytes, compared bitwise */
  FT_TYPE_F32 = 1,   /* float, out_elem_size 4 */
  FT_TYPE_F64 = 2    /* double, out_elem_size 8 */
} ft_type;

/*
 * One block: rows x cols output cells computed from an input window of
 * (rows + 2*halo) x (cols + 2*halo) elements. `in` points at the window's
 * first element (the cell at block row -halo, column -halo); consecutive
 * window rows are `in_stride` elements apart (in_stride >= cols + 2*halo).
 * The output is rows*cols contiguous elements, row-major.
 * `id` names the block within a run (the tile index): it drives the fault
 * injector and the trace. row_off/col_off are the block's position in the
 * whole raster; libft only passes them on to the kernel.
 */
typedef struct ft_block {
  int64_t id;
  int64_t rows, cols, halo;
  int64_t row_off, col_off;
  const void *in;
  int64_t in_stride;
  size_t in_elem_size;
  ft_type out_type;
  size_t out_elem_size;
} ft_block;

/*
 * A kernel computes output rows [row0, row0 + nrows) of the block, all
 * columns, into `out` (nrows*cols contiguous elements), reading only input
 * window rows [row0, row0 + nrows + 2*halo). It must be deterministic: the
 * bytes of a row do not depend on how the block is cut into row ranges, on
 * the thread or on the process. `kctx` is the kernel's parameters as plain
 * bytes (no pointers: under MPI they are copied to other processes, where
 * kctx and the input window are 16-byte aligned copies). Returns
 * 0 or a negative code of its own. It may run concurrently on several
 * threads with the same kctx. The two replicas of a block never read one
 * input buffer: on threads the second reads a copy of the window made when
 * the block is submitted (under MPI every worker rank receives its own), so
 * a fault in either buffer shows as a disagreement.
 */
typedef int (*ft_kernel_fn)(const void *kctx, const ft_block *blk, int64_t row0,
                            int64_t nrows, void *out);

/* A named kernel. Under MPI the name is what travels; every rank must
 * register the same names in ft_opts.kernels. */
typedef struct ft_kernel {
  const char *name;
  ft_kernel_fn fn;
} ft_kernel;

/* ---- fault injection (tests and benchmarks) ------------------------------
 *
 * Result slots: 0 = replica P, 1 = replica P', 2 + k = recompute attempt k.
 * Every data-fault decision is a pure function of (seed, block id, sub-block,
 * slot, fault kind), never of timing, thread or rank, so a given seed injects
 * the same faults into the same results on every run. A re-dispatched
 * replica (after a timeout) keeps its slot and so gets the same decisions.
 * A zero-initialised ft_inject injects nothing.
 */
typedef enum {
  FT_FAULT_FLIP = 1,      /* flip one random bit of one random output cell */
  FT_FAULT_FLIP_INPUT = 2 /* flip one random bit of one random input element
                             the sub-block reads, in the replica's private copy */
} ft_fault_kind;

#define FT_INJECT_MAX_EXACT 16

/* One exact-schedule entry; -1 in block/sub/slot means "every". */
typedef struct ft_fault_at {
  ft_fault_kind kind;
  int64_t block;
  int sub;
  int slot;
  /* Not read by libft: terrafort's graph rounds (libterrain/hydro/graph_ft.h)
   * take the round (0 = PEval, -1 = Assemble) and where the bit goes (0: the
   * new state, 2: the round's messages). */
  int64_t round;
  int at;
} ft_fault_at;

typedef struct ft_inject {
  uint64_t seed;
  /* Probabilistic faults: probability per sub-block result in the slots of
   * slot_mask (bit s = slot s; 0 means slots 0 and 1, i.e. the replicas). */
  double flip_p;
  double flip_input_p;
  uint32_t slot_mask;
  /* Exact schedule. */
  ft_fault_at exact[FT_INJECT_MAX_EXACT];
  int n_exact;
  /* Stall: worker stall_worker sleeps stall_ms before handing over results
   * number [stall_after, stall_after + stall_count) of its own (0-based,
   * counted per worker; stall_count 0 = all from stall_after on). */
  int stall;
  int stall_worker, stall_ms, stall_after, stall_count;
  /* Kill: worker kill_worker stops answering after kill_after results
   * (thread back-end: the worker thread exits; MPI: the rank discards all
   * work until shutdown). */
  int kill;
  int kill_worker, kill_after;
  /* Stop-send (MPI back-end): rank stop_send_rank (0: the master, W + 1:
   * worker W) stops itself (SIGSTOP) right after posting its
   * stop_send_after-th message (1-based; 0: never) - the master's task, a
   * worker's result - so the receiver meets a message whose sender stopped
   * mid-message. */
  int stop_send_after, stop_send_rank;
} ft_inject;

/* ---- context ---------------------------------------------------------------- */
typedef enum {
  FT_MODE_DUAL_FAST = 0, /* the source's method: streaming sub-blocks, overlapped detect + recompute */
  FT_MODE_DUAL_BASIC = 1 /* baseline: both replicas compute the whole block, then detect, then recompute */
} ft_mode;

/* Worker timeouts (ft_opts.timeout_ms) in ms, named once: libft's default,
 * the one terrafort's runs use and terrafort's --help all quote these. Plain
 * integer literals, so that FT_STRINGIFY can splice one into a help string
 * and the number is written nowhere else. */
#define FT_TIMEOUT_DEFAULT_MS 60000  /* ft_opts_init's */
#define FT_TIMEOUT_RUN_MS 10000      /* terrafort's runs: --ft-timeout's default */
/* terrafort's runs that inject a stall or a kill (tests, benchmarks): the
 * fault is known to come, so its worker is given up on sooner. */
#define FT_TIMEOUT_INJECTED_MS 2000

#define FT_STRINGIFY_(x) #x
#define FT_STRINGIFY(x) FT_STRINGIFY_(x) /* FT_STRINGIFY(FT_TIMEOUT_RUN_MS) is "10000" */

typedef struct ft_opts {
  ft_mode mode;
  int workers;            /* thread back-end: worker threads; 0 = online cores, at least 2 */
  const void *mpi_comm;   /* NULL: thread back-end; else a pointer to an MPI_Comm (copied) */
  double tolerance;       /* xi, >= 0 */
  double error_rate;      /* eps, in [0, 1] */
  int settle_cells;       /* 1: a cell differing by >= xi is never taken from an
                             unverified result: two results agree only when all
                             their cells are within xi (eps is then not used to
                             accept), so such a cell is settled by a further
                             computation and a 2-of-3 vote. 0: the source's rule. */
  int has_exact;          /* 1: a cell where either result holds `exact` (the output's nodata)
                             agrees only when both are bit-identical, whatever xi: no data is
                             never "near" a value (a flipped nodata cell within xi of the
                             nodata value would otherwise be accepted as a value) */
  double exact;
  int max_recomputes;     /* per sub-block, 1..14; default 3 */
  int timeout_ms;         /* a worker silent this long while holding our work is given up on;
                             default FT_TIMEOUT_DEFAULT_MS */
  const ft_kernel *kernels; /* registry (needed by the MPI back-end; names must be unique) */
  size_t n_kernels;
  ft_inject inject;
  size_t trace_capacity;  /* events kept by the trace; 0 = no trace */
  /* MPI back-end: asked while a rank waits for another (start-up, a
   * worker's result send, shutdown); nonzero (a rank lost, a signal) ends
   * that wait with FT_ERR_MPI and leaves the MPI state as it is: the caller
   * then ends the job without MPI_Finalize. NULL: those waits are unbounded. */
  int (*give_up)(void *user);
  void *give_up_user;
} ft_opts;

/* Fills defaults: FAST, workers 0, threads, xi = eps = 0, 3 recomputes,
 * 60 s timeout, no kernels, no injection, no trace. */
void ft_opts_init(ft_opts *o);
/* The source's embodiment: xi = 0.1, eps = 0.15. */
void ft_opts_source_profile(ft_opts *o);

typedef struct ft_ctx ft_ctx;

typedef enum { FT_ROLE_MASTER = 0, FT_ROLE_WORKER = 1 } ft_role;

/*
 * Creates a context: starts the worker threads (thread back-end) or, under
 * MPI, duplicates the communicator (collective over it) and on rank 0 starts
 * the progress thread. On failure returns a negative code, *out is NULL and
 * `err` (if not NULL) holds a message.
 */
int ft_ctx_create(const ft_opts *opts, ft_ctx **out, char *err, size_t errlen);

/* Master: stops the workers (MPI: shuts the worker ranks' ft_serve() down)
 * and frees everything. Worker rank: frees the context after ft_serve()
 * returned. No ft_run_block() may be in flight. NULL is a no-op. */
void ft_ctx_destroy(ft_ctx *ctx);

ft_role ft_ctx_role(const ft_ctx *ctx);
/* Number of workers (threads, or MPI ranks minus one). */
int ft_ctx_workers(const ft_ctx *ctx);

/* MPI worker ranks: serve work from rank 0 until it shuts down; returns 0, or
 * a negative code on MPI failure. FT_ERR_ROLE on the master. */
int ft_serve(ft_ctx *ctx);

/* ---- running a block ------------------------------------------------------ */

/* Per-call outcome; pass NULL when not needed. */
typedef struct ft_status {
  int failed_sub;    /* sub-block that failed, or -1 */
  int recomputes;    /* recompute attempts dispatched for this block */
  int timeouts;      /* timed-out pieces of work for this block */
  char msg[256];     /* empty on success, else one printable sentence */
} ft_status;

/*
 * Computes one block under dual redundancy into `out` (blk->rows*blk->cols
 * elements of blk->out_elem_size bytes). Blocks the calling thread until the
 * block is accepted or has failed. kctx (kctx_size bytes) and blk->in must
 * stay valid and unchanged until it returns; on return no worker touches
 * them any more. Under MPI, k->name must be in ft_opts.kernels.
 * Returns 0 when every sub-block was accepted: then `out` is valid and
 * byte-identical to calling the kernel on the whole block in the absence of
 * faults (under xi/eps > 0, a tolerated sub-block holds P's values). Any
 * negative return (FT_ERR_FATAL, FT_ERR_TIMEOUT, FT_ERR_KERNEL, ...) means
 * `out` is NOT valid and must be discarded.
 * Thread-safe; master role only.
 */
int ft_run_block(ft_ctx *ctx, const ft_kernel *k, const void *kctx, size_t kctx_size,
                 const ft_block *blk, void *out, ft_status *st);

/* The sub-block split used for a block of `rows` rows: fills row0[]/nrows[]
 * (4 entries) and returns the number of sub-blocks (min(rows, 4)). */
int ft_split_rows(int64_t rows, int64_t row0[4], int64_t nrows[4]);

/* ---- comparison (exposed for tests and tools) ------------------------------ */

/* Counts disagreeing cells between a and b (n cells) under tolerance xi. */
int64_t ft_compare_cells(ft_type type, size_t elem_size, const void *a, const void *b,
                         int64_t n, double xi);
/* The same, where a cell holding *exact on either side (exact NULL: none)
 * agrees only with the same bits (ft_opts.has_exact). */
int64_t ft_compare_cells_exact(ft_type type, size_t elem_size, const void *a, const void *b, int64_t n, double xi,
                               const double *exact);
/* 1 when k disagreeing cells out of n make a sub-block wrong: k/n > eps. */
int ft_rate_wrong(int64_t k, int64_t n, double eps);

/* ---- report ---------------------------------------------------------------
 * Fault accounting, for results that reached a decision: every injected
 * fault is either tolerated (its result was accepted or agreed with the
 * accepted one within xi/eps) or detected; every detected fault is either
 * corrected (its sub-block was then accepted) or fatal (its sub-block
 * failed). So injected == tolerated + detected and
 * detected == corrected + fatal. Results thrown away unseen (a timed-out
 * worker's late answers, work cancelled by a failing block) are not counted.
 * Stalls and kills show up as timeouts / redispatches.
 */
typedef struct ft_report {
  int64_t blocks, sub_blocks;
  int64_t injected, detected, corrected, tolerated, fatal;
  int64_t mismatches;            /* sub-blocks whose P and P' disagreed (r > eps) */
  int64_t tolerated_sub_blocks;  /* sub-blocks accepted with 0 < r <= eps */
  int64_t failed_sub_blocks;     /* sub-blocks with no majority after max_recomputes */
  int64_t recomputes;            /* recompute attempts dispatched */
  int64_t votes;                 /* recompute results weighed against the others */
  int64_t timeouts;              /* pieces of work given up on after timeout_ms */
  int64_t redispatches;          /* of those, re-dispatched to another worker */
  double compute_s;              /* worker time computing replica results */
  double detect_s;               /* master time comparing and voting */
  double recompute_s;            /* worker time computing recompute results */
} ft_report;

/* (libft writes no JSON: libterrain names the fields in its report files,
 * core/report_json.c.) */
void ft_report_get(ft_ctx *ctx, ft_report *r);

/* ---- trace ------------------------------------------------------------------ */
typedef enum {
  FT_EV_COMPUTE = 1,  /* a worker computed sub-block `sub` for `slot` */
  FT_EV_COMPARE = 2,  /* the master compared P and P' of `sub` */
  FT_EV_VOTE = 3      /* the master weighed recompute result `slot` of `sub` */
} ft_event_kind;

/* Times are seconds on CLOCK_MONOTONIC of the master's process (MPI:
 * compute start is the receive time minus the worker's measured duration).
 * `ready` is when the piece could have started: for a computation, when its
 * task was dispatched (first sub-block) or its worker handed over the task's
 * previous sub-block, so t0 - ready is time spent queued behind other work
 * on that worker or waiting to be woken; for a comparison or a vote, when
 * its last result was handed over, so t0 - ready is the master's reaction
 * time. `cpu_s` is the CPU time the computing (or comparing) thread used in
 * [t0, t1]. `core_wait_s` (computations only) is the time the worker
 * thread spent runnable but without a core (the kernel's run-queue delay,
 * /proc/thread-self/schedstat) from its previous hand-over to this one, so it
 * covers the wait to start, the computation and the hand-over; it tells
 * waiting for a core apart from waiting for something else. -1 where
 * unknown (MPI workers; no schedstat). `cpu_at` is the CPU the thread
 * started and `cpu_end` the one it ended on (-1 unknown), to see two
 * replicas sharing a core. All cost nothing without a trace. */
typedef struct ft_event {
  ft_event_kind kind;
  int64_t block;
  int sub, slot, worker;
  double t0, t1;
  double ready, cpu_s, core_wait_s;
  int cpu_at, cpu_end;
} ft_event;

/* Copies up to cap recorded events into ev (in recording order) and returns
 * how many were recorded in all (the trace stops recording when full). */
size_t ft_trace_get(ft_ctx *ctx, ft_event *ev, size_t cap);

/* ---- idempotence tracking and replay (specs/idempotent-replay.md) --------
 *
 * The tracker watches "abstract functions" (AFs: here one tile-kernel
 * launch, or one pass of an in-place kernel) and the memory regions they
 * read and write, so that an AF whose output is found corrupt can be
 * repaired by running again only what is needed:
 *
 *   - A region is a registered range [addr, addr + size). Registering gives
 *     it a new identifier (its generation): ids are never reused, so a region
 *     freed and registered again at the same address never matches entries
 *     recorded for the old one. A range inside a region (a halo strip, a
 *     sub-block) resolves to the region that contains it.
 *   - pgvmap: region -> latest version. A region is at version 0 when
 *     registered (its initial write); every write adds 1, reads change
 *     nothing. An AF that reads and writes a region sees v and makes v + 1.
 *   - plvmap: one sub-table per launch: the AF id, its inputs (region,
 *     version) and outputs (region, version), and the launch function with
 *     its arguments copied by value, so the launch can be run again.
 *   - A write outside any AF (ft_region_write: a read from disk into a
 *     buffer, a memcpy, a host write) raises the region's version and makes
 *     every older entry of that region invalid: that version can no longer
 *     be regenerated.
 *   - A launch is idempotent unless one of its input ranges overlaps one of
 *     its output ranges or an input and an output are the same region.
 *
 * Repair (ft_track_error, the method's top loop): count the error (past
 * max_errors: FT_ERR_LIMIT, nothing is run); an idempotent launch whose
 * outputs nothing has read or overwritten yet is simply run again; otherwise the relaunch set is searched: start with the launch;
 * fail if any of its entries is invalid; for each input at an older version
 * than the latest, add the launch that produced that version (forward); for
 * each output at an older version, add the launches that read it (backward)
 * and the one that wrote the next version (so that the region ends at its
 * latest contents again); repeat until nothing is added. The set runs in
 * launch order, which respects every producer -> consumer edge (and every
 * read-before-overwrite). If the search fails (an invalid entry, a version
 * written outside any AF, a launch older than the history), the nearest
 * checkpoint taken before the launch is restored and every remembered launch
 * after it that reads or writes what the restore (or a re-run) touched is run
 * again, in order. Replay and restore never change versions: after a repair
 * pgvmap is what it was before.
 *
 * Contract: a checkpoint stands for the state of its regions; a write
 * outside any AF to a region after a checkpoint must write what a re-run
 * would see (the same bytes: a re-read of the same window), or be followed
 * by a new checkpoint, since the tracker cannot replay host writes.
 *
 * Thread safety: every call may be made from any number of threads at once
 * on one tracker. Launch functions run outside the tracker's lock. A repair
 * re-runs launches on the calling thread: no other thread may write the
 * regions of the launches it repairs meanwhile (true when each thread owns
 * its buffers, as the tile loops do). create/destroy must not race.
 */
typedef struct ft_tracker ft_tracker;

/* Runs an AF once; `args` is the tracker's copy of the bytes captured at
 * launch (FT_TRACK_ARGS_MAX at most, 16-byte aligned). Returns 0 or a
 * negative code of its own. */
typedef int (*ft_launch_fn)(void *args);

#define FT_TRACK_MAX_PARAMS 8   /* inputs + outputs of one launch */
#define FT_TRACK_ARGS_MAX 256

/* Errors one run may repair (ft_tracker_opts.max_errors): ft_tracker_opts_init's,
 * and terrafort's --ft-max-errors default, which its --help quotes. */
#define FT_MAX_ERRORS_DEFAULT 16

typedef struct ft_tracker_opts {
  size_t history;    /* launches remembered for relaunch sets; default 4096 */
  int max_errors;    /* errors repaired per run; one more fails with FT_ERR_LIMIT;
                        default FT_MAX_ERRORS_DEFAULT */
} ft_tracker_opts;

void ft_tracker_opts_init(ft_tracker_opts *o);
int ft_tracker_create(const ft_tracker_opts *o, ft_tracker **out);
void ft_tracker_destroy(ft_tracker *t);

/* Regions. add: version 0, a new id in *id (may be NULL); FT_ERR_INVAL when
 * the range overlaps a live region. remove: the region containing addr is
 * dead (its entries become invalid). write: an outside write to the region
 * containing [addr, addr + size). version/id: of the region containing addr,
 * -1 / 0 when none. */
int ft_region_add(ft_tracker *t, const void *addr, size_t size, uint64_t *id);
int ft_region_remove(ft_tracker *t, const void *addr);
int ft_region_write(ft_tracker *t, const void *addr, size_t size);
int64_t ft_region_version(ft_tracker *t, const void *addr);
uint64_t ft_region_id(ft_tracker *t, const void *addr);

typedef struct ft_range {
  const void *addr;
  size_t size;
} ft_range;

typedef struct ft_launch {
  uint64_t af;               /* what the AF is (e.g. kernel, tile, pass): the trace's name */
  const ft_range *in;
  int nin;
  const ft_range *out;
  int nout;                  /* nin + nout <= FT_TRACK_MAX_PARAMS, every range in a region */
  ft_launch_fn fn;
  const void *args;
  size_t args_size;
} ft_launch;

/* Records the launch in plvmap and pgvmap, then runs it. *seq (may be NULL)
 * receives its sequence number (>= 0; -1 when it could not be recorded).
 * Returns the function's result, or FT_ERR_INVAL (a range outside every
 * region, too many parameters, args too large: nothing is run). */
int ft_track_launch(ft_tracker *t, const ft_launch *l, int64_t *seq);

/* What a launch's sub-table holds (tests and traces). */
typedef struct ft_entry {
  uint64_t region;
  int64_t version;
  int valid;                 /* 0: the version can no longer be regenerated */
} ft_entry;

typedef struct ft_launch_info {
  uint64_t af;
  int nin, nout;
  ft_entry in[FT_TRACK_MAX_PARAMS], out[FT_TRACK_MAX_PARAMS];
  int idempotent;
} ft_launch_info;

/* FT_ERR_INVAL when seq is not (or no longer) remembered. */
int ft_track_info(ft_tracker *t, int64_t seq, ft_launch_info *info);

/* The relaunch set of launch seq, in run order, into set[cap]; *n its size.
 * FT_ERR_NOREPLAY when the search fails, FT_ERR_NOMEM when cap is short. */
int ft_track_relaunch_set(ft_tracker *t, int64_t seq, int64_t *set, int cap, int *n);

/* Checkpoints: copies the regions' bytes (each range must be a whole
 * region) now; *cp receives its id. A checkpoint serves launches recorded
 * after it. drop frees it. */
int ft_checkpoint(ft_tracker *t, const ft_range *regions, int n, int64_t *cp);
void ft_checkpoint_drop(ft_tracker *t, int64_t cp);

typedef enum {
  FT_REPAIR_NONE = 0,
  FT_REPAIR_RERUN = 1,       /* the idempotent launch ran again */
  FT_REPAIR_RELAUNCH = 2,    /* its relaunch set ran */
  FT_REPAIR_CHECKPOINT = 3   /* a checkpoint was restored and run forward */
} ft_repair_kind;

typedef struct ft_repair {
  ft_repair_kind how;
  int launches;              /* launches run by the repair */
} ft_repair;

/* The top loop for an error detected in launch seq's output (ECC, a
 * checksum, a comparison): count it, then repair (see above). Returns 0
 * when repaired, FT_ERR_LIMIT past max_errors, FT_ERR_NOREPLAY, or a
 * launch function's error. r may be NULL. */
int ft_track_error(ft_tracker *t, int64_t seq, ft_repair *r);

typedef struct ft_track_report {
  int64_t regions, outside_writes;
  int64_t launches, idempotent;  /* idempotent share = idempotent / launches */
  int64_t errors;                /* errors reported to ft_track_error */
  int64_t reruns;                /* repaired by running the launch again */
  int64_t relaunch_sets;         /* repaired through a relaunch set */
  int64_t relaunch_launches;     /* launches run by those sets (sum of sizes) */
  int64_t relaunch_max;          /* largest set */
  int64_t searches_failed;       /* relaunch-set searches that failed */
  int64_t checkpoints;           /* taken */
  int64_t checkpoint_restores;
  int64_t checkpoint_launches;   /* launches run forward after restores */
  int64_t unrepaired;            /* FT_ERR_NOREPLAY or a failing re-run */
  int64_t limit_aborts;          /* errors refused past max_errors */
  int64_t sampled, sample_mismatches; /* filled by callers that sample (ft_track_count_sample) */
  double replay_s;               /* time running repairs */
} ft_track_report;

void ft_track_report_get(ft_tracker *t, ft_track_report *r);
/* A sampled re-execution compared its checksum: mismatch 1 counts it. */
void ft_track_count_sample(ft_tracker *t, int mismatch);

#ifdef __cplusplus
}
#endif
#endif
