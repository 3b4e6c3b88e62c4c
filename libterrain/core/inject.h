/*
 * inject.h - the fault-injection spec shared by libft and libcoll
 * (internal to libterrain; the command passes --inject or TERRAFORT_INJECT).
 *
 * Syntax: a list of `kind:key=value,...` separated by `;`, e.g.
 *   "flip:p=0.125,seed=7;delay:rank=2,ms=2000"
 * Kinds and keys:
 *   flip:p=P[,seed=S]                 flip a bit of a replica's sub-block result with probability P
 *   flip:sub=J[,block=B][,slot=K]     exact schedule: flip in sub-block J (of block B / result slot K; default every block, slot 0)
 *   flip-input:p=P[,seed=S]           flip a bit of a replica's input copy with probability P
 *   graph runs (fill, flowgraph) under --ft dual: the replica is a computation of a fragment's
 *   round; sub=J is the quarter of its bytes, block=B the fragment, slot=K the computation,
 *   round=R the round (0 PEval, default; -1 Assemble), at=msgs puts the bit into the round's
 *   messages instead of its new state; flip-launch's tile=T and launch=L are the fragment and
 *   round under --ft replay (launch=-1: Assemble, whose bit=B counts in the product's cell)
 *   stall:worker=W,ms=M[,after=A][,count=C]   worker W sleeps M ms before answering
 *   kill:worker=W,after=K             worker W stops answering after K results
 *   delay:rank=R,ms=M                 rank R contributes to collectives M ms late
 *   hold:rank=R,ms=M                  rank R waits M ms before handing its first tile to the sink
 *                                     (up to TR_INJECT_MAX_HOLDS ranks, one hold: each)
 *   slow:worker=W,factor=F            graph runs: worker W takes F times as long per round
 *   msg-delay:ms=M                    graph runs on threads: each message batch waits up to M ms
 *   spill-fail:after=K                graph runs out of core (--mem): the spill after K spills fails
 *                                     as an I/O error would (a disk gone bad mid-run)
 *   flip-launch:tile=T[,launch=L][,silent=1]   --ft replay: flip one bit of the output of launch L
 *                                     (0-based within tile T; default 0; tile -1: every tile) and
 *                                     report it, as ECC would; silent=1: do not report it (only
 *                                     --ft-check's sampled re-execution can find it)
 *   flip-launch:p=P[,seed=S][,silent=1]   the same with probability P per launch
 *   flip-launch:...,bit=B             flip bit B (0 = lowest) of the chosen output cell instead of a
 *                                     random bit of a random byte (31: a Float32's sign)
 *   gpu-trap:tile=T                   a GPU launch of tile T (-1: every tile) runs a kernel that traps
 *                                     first, as a faulty device fails (tests on a GPU machine)
 *   gpu-hang:tile=T[,ms=M]            a GPU launch of tile T (-1: every tile) first runs a kernel that
 *                                     spins M ms (default 60000), as a hung device does: the launch's
 *                                     deadline (--ft-timeout) gives up on it (tests on a GPU machine)
 *   stop-stage:after=K[,rank=R]       flowgraph: rank R (default 0) stops itself (SIGSTOP) once its K-th
 *                                     stage is done, before the next (a test signals it there, between
 *                                     stages)
 *   stop-start:rank=R                 under mpirun, rank R stops itself (SIGSTOP) before MPI starts
 *                                     (TERRAFORT_INJECT only; read by the program, tools/process.c)
 *   stop-started:rank=R               the same right after MPI_Init (before the liveness monitor)
 *   stop-end:rank=R                   the same once its command has returned (before the closing
 *                                     exchange: the libcoll context's end and the monitor's BYE)
 *   stop-finalize:rank=R              the same right before MPI_Finalize (after the closing exchange)
 *   stop-send:after=K[,rank=R]        under mpirun: rank R (default 0) stops itself (SIGSTOP)
 *                                     right after posting its K-th message - under --ft dual the
 *                                     master's task or a worker's result, in a graph run (fill,
 *                                     flowgraph) a message batch to another rank - so the receiver
 *                                     meets a message whose sender stopped mid-message
 *   touch:tile=T[,launch=L]           --ft replay: after launch L of tile T the host rewrites its
 *                                     output with the same bytes (an outside write: older entries
 *                                     become invalid, so a repair needs the checkpoint)
 *   sigbus:tile=T[,launch=L][,buf=in|out|outside][,code=ar|ao][,after=1]
 *                                     --ft off or replay, a CPU launch: the thread sends itself the
 *                                     SIGBUS Linux sends for a memory failure (si_code BUS_MCEERR_AR,
 *                                     or _AO with code=ao) naming a byte of the launch's input window
 *                                     (buf=in, default), its output (out), or memory that is no
 *                                     buffer of the launch (outside), right before the kernel runs
 *                                     (after=1: right after it returned, outside the launch); once
 *                                     per (tile, launch), not in a recomputation (local/memfail.h).
 *                                     Graph rounds (fill, flowgraph) under --ft replay or dual (a
 *                                     usage error under off): tile=T the fragment, launch=L the round
 *                                     (0 PEval, -1 Assemble); buf=in the round's first window copy, else
 *                                     (IncEval, Assemble) its copy of the state, out its new state or
 *                                     Assemble's tile, outside the run's context; sent right after the
 *                                     program's call returned, inside the round; once per (fragment,
 *                                     round), in its first computation (hydro/graph_ft.h); hwpoison
 *                                     is refused there (usage error)
 *   hwpoison:tile=T[,launch=L]        the same through the kernel: madvise(MADV_HWPOISON) on a whole
 *                                     page of the launch's input window right before the kernel runs
 *                                     (needs CAP_SYS_ADMIN and a kernel with CONFIG_MEMORY_FAILURE)
 */
#ifndef TR_INJECT_H
#define TR_INJECT_H

#include "aap.h"
#include "ft.h"
#include "terrain.h"

/* One parse feeds every library: libft's faults, libcoll's late rank, and the
 * AAP engine's slow worker and message delays. */
#define TR_LAUNCH_INJECT_MAX 16
#define TR_INJECT_MAX_HOLDS 4

/* Faults in tracked launches (--ft replay). */
typedef struct {
  double p;            /* probability per launch */
  uint64_t seed;
  int p_silent;
  int p_bit;           /* bit= of the p form: the bit of the cell to flip; -1: any bit of any byte */
  int n;               /* exact faults */
  struct {
    int64_t tile;      /* -1: every tile */
    int launch;
    int silent;
    int bit;           /* as p_bit */
  } at[TR_LAUNCH_INJECT_MAX];
  int ntouch;
  struct {
    int64_t tile;
    int launch;
  } touch[TR_LAUNCH_INJECT_MAX];
  int ntrap;
  int64_t trap[TR_LAUNCH_INJECT_MAX]; /* gpu-trap: tiles whose GPU launch traps; -1 every tile */
  int nhang;
  int64_t hang[TR_LAUNCH_INJECT_MAX]; /* gpu-hang: tiles whose GPU launch spins first; -1 every tile */
  int hang_ms[TR_LAUNCH_INJECT_MAX];  /* for how long (the device stays busy that long) */
  int nsigbus;
  struct {
    int64_t tile;      /* -1: every tile */
    int launch;
    int buf;           /* TR_SIGBUS_IN, _OUT, _OUTSIDE */
    int ao;            /* BUS_MCEERR_AO instead of _AR */
    int after;         /* sent after the kernel returned */
    int hwpoison;      /* a real poisoned page (madvise) instead of a sent signal */
  } sigbus[TR_LAUNCH_INJECT_MAX];
} tr_launch_inject;

enum { TR_SIGBUS_IN = 0, TR_SIGBUS_OUT = 1, TR_SIGBUS_OUTSIDE = 2 };

typedef struct tr_inject {
  ft_inject ft;
  tr_launch_inject launch;
  tr_aap_inject aap;
  int delay_rank, delay_ms; /* delay_rank -1: none */
  int n_hold;               /* hold: entries, each rank's wait */
  int hold_rank[TR_INJECT_MAX_HOLDS], hold_ms[TR_INJECT_MAX_HOLDS];
  int64_t spill_fail;       /* the spill that fails, 1-based; 0: none */
  int stop_stage;           /* stop-stage: after this stage (1-based); 0: none */
  int stop_stage_rank;      /* stop-stage: the rank that stops (rank=R; default 0) */
} tr_inject;

/* Parses spec (NULL or "" injects nothing). */
int tr_inject_parse(const char *spec, tr_inject *out, tr_error *err);

#endif
