/*
 * coll_live.h - liveness of the ranks of a job: who is still answering.
 *
 * Why: a deadline on a single wait cannot tell a rank that is slow (a long
 * tile, a big DEM) from one that is gone (kill -9, SIGSTOP, a hung node).
 * A monitor can: every rank runs one background thread that sends a tiny
 * heartbeat to every other rank each period and records when it last heard
 * from each. A rank that computes for an hour still beats; a stopped or
 * killed one falls silent. Every wait of the tools (a tile receive, an
 * agreement, a barrier, MPI_Finalize) then waits "until done, or until a peer
 * has been silent for timeout_ms": bounded by the timeout after a rank is
 * lost, whatever the length of the work.
 *
 * How: the monitor talks on a private duplicate of the communicator (made
 * with MPI_Comm_idup, itself bounded by the timeout), so its messages never
 * match anyone else's. The heartbeat period is timeout/10, between 10 and
 * 500 ms. coll_live_stop is a bounded closing handshake (each rank sends
 * BYE and waits for every peer's BYE or its loss), after which no monitor
 * message is in flight and no request is live: MPI_Finalize may follow.
 * Needs MPI_THREAD_MULTIPLE (the thread calls MPI while others do);
 * otherwise, and without MPI, the monitor is inert: nobody is ever lost.
 *
 * Thread safety: coll_live_lost and coll_live_wait may be called from any
 * thread; start/stop/set_timeout from the owning thread only.
 */
#ifndef COLL_LIVE_H
#define COLL_LIVE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coll_live coll_live;

enum {
  COLL_LIVE_OK = 0,
  COLL_LIVE_LOST = -6,      /* a peer fell silent beyond the timeout */
  COLL_LIVE_CANCELED = -7,  /* the caller's cancel function said stop */
  COLL_LIVE_EMPI = -3       /* an MPI call failed */
};

/* The default timeout (ms) of terrafort's --rank-timeout: an integer
 * literal, so that a help text quotes it with COLL_LIVE_STR instead of
 * writing the number a second time. */
#define COLL_LIVE_DEFAULT_TIMEOUT_MS 10000
/* The range --rank-timeout accepts (its parsers and the start-up watchdog,
 * which reads it before the options are parsed). */
#define COLL_LIVE_MIN_TIMEOUT_MS 100
#define COLL_LIVE_MAX_TIMEOUT_MS 86400000
#define COLL_LIVE_STR_(x) #x
#define COLL_LIVE_STR(x) COLL_LIVE_STR_(x)

/* Starts a monitor over *(MPI_Comm *)mpi_comm (collective over it, bounded
 * by timeout_ms), or an inert one for a NULL communicator, one rank, a
 * build without MPI, or an MPI without MPI_THREAD_MULTIPLE. On
 * COLL_LIVE_LOST (not every rank joined in time) *out is still a usable
 * monitor that reports rank -1 lost. */
int coll_live_start(coll_live **out, const void *mpi_comm, double timeout_ms);

/* Changes the timeout (every rank should use the same). */
void coll_live_set_timeout(coll_live *l, double timeout_ms);
double coll_live_timeout(const coll_live *l);

/* The rank not heard from for longest, beyond the timeout (and not closed
 * with BYE), or the one a peer found lost first; -1 when every peer is
 * alive, -2 when the monitor could not even start on every rank. NULL
 * monitor: -1. *silent_ms (may be NULL) gets how long that rank has been
 * silent. A loss, once found, is latched (the same rank every later call)
 * and quiesces the monitor (below). The first call that finds it tells the
 * other ranks and returns only once each has found it too, or is silent
 * itself, or one more timeout has passed (every caller meanwhile waits): so
 * the survivors give up together, none ended by mpirun before it can say
 * which rank was lost. */
int coll_live_lost(const coll_live *l, double *silent_ms);

/* After this, nothing of the monitor calls MPI again: its thread is joined
 * and every coll_live_wait returns at once (COLL_LIVE_LOST, or
 * COLL_LIVE_CANCELED when no rank is lost). For a process that gives up
 * requests it leaves posted: any later MPI progress would complete them
 * into buffers already released (a returned stack frame, freed memory).
 * Done by coll_live_lost on a loss and coll_live_wait on a cancel; the
 * caller adds its own causes. Such a process then makes no MPI call of its
 * own and ends without MPI_Finalize. */
void coll_live_quiesce(const coll_live *l);
int coll_live_quiescent(const coll_live *l);

/* A function the waits call to learn that the caller wants to stop (a
 * signal); nonzero: stop. */
typedef int (*coll_live_cancel_fn)(void *user);

/* Waits for n MPI requests (MPI_Request *, as void * so that this header
 * needs no mpi.h): COLL_LIVE_OK when all completed, COLL_LIVE_LOST (with
 * *lost) when a peer fell silent first, COLL_LIVE_CANCELED when cancel
 * (may be NULL) said so. The requests are left live on failure and the
 * monitor is quiesced: the caller must then end the job without
 * MPI_Finalize, making no further MPI call. A NULL monitor waits without
 * a bound (but still honours cancel). */
int coll_live_wait(const coll_live *l, int n, void *reqs, coll_live_cancel_fn cancel, void *user, int *lost);

/* Closing handshake, then frees the monitor: COLL_LIVE_OK when every peer
 * said BYE (MPI_Finalize is safe), COLL_LIVE_LOST with *lost otherwise
 * (then do not call MPI_Finalize: it would wait for the lost rank). */
int coll_live_stop(coll_live *l, int *lost);

#ifdef __cplusplus
}
#endif
#endif
