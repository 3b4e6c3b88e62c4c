/*
 * process.h - what a terrafort process has once, whichever command it runs:
 * MPI, the liveness monitor and libcoll context built over it, and the
 * stop flag that signals (and, for a job of a batch, its rank's death) set.
 *
 * It exists so that state has one owner below every command: main.c starts
 * and ends it around the command it dispatches, and cli.c and batch*.c read
 * it from here, so no file calls back up into main.c.
 */
#ifndef TF_PROCESS_H
#define TF_PROCESS_H

#include "terrain.h"

struct coll_live;
struct coll_ctx;

/* First thing in main: a plain build started by mpirun becomes its MPI twin
 * (returns only when it cannot: exit 1), and a job of a batch notes its
 * rank's pid (terrain.h, TR_BATCH_PARENT_ENV). Returns 0 to go on. */
int tf_process_init(char **argv);

/* glibc's heap for a graph command (fill, flowgraph): freed memory up to
 * 32 MiB kept for the next allocation, unless the user set glibc's malloc
 * tunables (process.c). */
void tf_process_heap_setup(void);

/* What a graph run of this process calls when its state spills
 * (tr_run_opts.heap_spill): tr_heap_spill_apply, or NULL where the user set
 * glibc's malloc tunables (as for tf_process_heap_setup). */
tr_heap_fn tf_process_heap_spill(void);

/* Before MPI starts (no command, an unknown one): is this rank 0 of a
 * launch, or no launch at all? Under mpirun only rank 0 speaks. */
int tf_process_speaks(void);

/* Starts MPI when mpirun launched us, the liveness monitor and the libcoll
 * context, every rank at once. Returns 0, or the exit code to leave with;
 * a rank that does not see every other start exits 10 itself. */
int tf_process_start(int *argc, char ***argv);

/* Ends what tf_process_start began, for the command's exit code rc, and
 * returns the process's exit code (a rank lost at the end: 10). A rank
 * that lost a peer or was interrupted leaves at once from here (_exit),
 * without MPI_Finalize, which would wait for the lost rank. */
int tf_process_end(int rc);

/* The process's liveness monitor under mpirun (libcoll's coll_live.h; an
 * inert one otherwise) and its libcoll context (statistics): NULL before
 * tf_process_start. */
struct coll_live *tf_live(void);
struct coll_ctx *tf_coll(void);

/* The signals that cancel a run (terrafort(1), SIGNALS), and installing a
 * handler for them; a signal ignored by whoever started us stays ignored. */
#define TF_NCANCEL_SIGNALS 10
extern const int tf_cancel_signals[TF_NCANCEL_SIGNALS];
void tf_catch_signals(void (*fn)(int));

/* Makes those signals set the stop flag (a second one ends the process as
 * the signal would), unlinking the temporaries in the handler itself, and
 * bounds the stop: a process still running TF_STOP_GRACE_MS (process.c)
 * after the signal is ended with "terrafort CMD: interrupted" and exit 8
 * (or the exit code its command already reported). */
void tf_stop_on_signals(const char *cmd);
/* The command's outcome (its exit code) is being reported: 1 when it may
 * print its line, 0 when the stop deadline ended the run first. */
int tf_process_report(int code);
/* A signal came, or (a job of a batch) the batch's rank is gone. */
int tf_stop_asked(void);
/* This process is a job of a batch whose rank is gone. */
int tf_batch_rank_gone(void);

#endif
