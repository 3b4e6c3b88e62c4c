/*
 * graph_ft.h - fault tolerance of graph rounds: --ft dual and --ft replay for
 * every graph program (internal to libterrain; graph_ft.c).
 *
 * The unit is a fragment's round: PEval, IncEval or Assemble. A round is a
 * function of the fragment's state before it, its input windows and (IncEval)
 * the snapshot of its incoming messages; it makes a new state, the messages it
 * emits and (Assemble) the tile it puts. The runner makes that function
 * explicit: a round computes on a copy of the state (the program's struct and
 * every array it registered with tr_graph_keep, graph.h), its emits go into a
 * capture (aap.h) instead of the engine, and its put into a buffer. Only an
 * accepted computation's state replaces the fragment's, its messages leave for
 * the other fragments, and its tile goes to the sink; a spilled state is
 * written (io/state_store.h) only after that.
 *
 *   dual    Two computations on two workers (the engine's thread and a helper
 *           thread), each from private copies of the state, the snapshot and
 *           the windows: the replicas never share an input buffer. Their new
 *           states, messages and tiles are compared in four quarters of their
 *           bytes; any difference sends the round to a third worker, and the
 *           result two computations agree on is accepted (up to three more
 *           tries, then the run fails with TR_EFT).
 *   replay  One computation on a copy of the state, so the round is idempotent
 *           (its inputs are never written) and is a launch in libft's tracker
 *           (ft.h) with the fragment's state as input and the computation as
 *           output. A fault reported in its output (the injector's flip-launch,
 *           as ECC would), a state that breaks the program's invariant (the
 *           body's check, graph.h) and gives other bytes when computed again,
 *           or a sampled re-execution (--ft-check) that differs, is a detected
 *           fault: the tracker runs the round again. Past --ft-max-errors the
 *           run fails with TR_EFTLIMIT.
 *
 * Faults (TERRAFORT_INJECT, core/inject.h), decided by (seed, fragment, round,
 * computation), never by timing, so counts are the same for any thread or
 * rank count: dual takes `flip` (a bit of a computation's new state or, with
 * at=msgs, of its messages; exact form sub=J is the quarter of those bytes,
 * block=B the fragment, slot=K the computation, round=R the round, 0 PEval)
 * and `flip-input` (a bit of a computation's private input copy); replay takes
 * `flip-launch` (tile=T is the fragment, launch=L the round).
 *
 * Memory failures (local/memfail.h), under dual and replay alike: every
 * computation runs inside a guard naming the buffers it owns: its copy of
 * the state's arrays (IncEval, Assemble: from the start; PEval's new arrays
 * once its call returned), its window copies (replay copies windows too, so
 * that they are the round's own) and Assemble's tile. A SIGBUS
 * BUS_MCEERR_AR in one jumps back; an _AO naming one marks it. Either way
 * the poisoned buffer is retired (never freed, pooled or used again) and
 * the round computed again on fresh buffers (up to 8 times, then TR_EFT);
 * the report counts memory_failures, memory_corrected and retired_bytes as
 * the local runner's does. Not guarded: the fragment's own state, the
 * snapshot of messages, the capture of emits, and everything between
 * rounds (checks, comparisons, adoption): an AR there kills the process by
 * SIGBUS as before. A jump out of the middle of a program's call loses what
 * the call had allocated (a leak, as the retired buffers are). Under --ft
 * off a round writes the fragment's own state, so there is no copy to
 * compute it again from: no guard. The injector's `sigbus` fault (tile=T
 * the fragment, launch=L the round, -1 Assemble; buf=in|out|outside,
 * code=ar|ao, after=1) comes once per (fragment, round), in its first
 * computation, right after the program's call returned.
 */
#ifndef TR_GRAPH_FT_H
#define TR_GRAPH_FT_H

#include "edac.h"
#include "ft.h"
#include "graph.h"
#include "inject.h"

typedef struct tr_graph_ft tr_graph_ft;

typedef struct {
  tr_ft_mode mode;          /* TR_FT_DUAL or TR_FT_REPLAY */
  int workers;              /* dual: helper threads computing second and later replicas */
  const tr_inject *inject;  /* NULL: no faults */
  double check;             /* replay: share of rounds re-executed and compared (--ft-check) */
  int max_errors;           /* replay: as tr_run_opts.ft_max_errors */
  size_t cell_bytes;        /* bytes of one cell of what Assemble puts */
  int timeout_ms;           /* dual: a helper's computation not back within this
                               (plus four times the round's own) fails the run;
                               0: libft's FT_TIMEOUT_RUN_MS (--ft-timeout) */
} tr_graph_ft_opts;

/* What a run counted, summed over its ranks by the runner. */
typedef struct tr_graph_ft_counts_s {
  ft_report dual;           /* blocks: rounds computed twice; sub_blocks: their quarters */
  int64_t injected, reported;             /* replay: faults injected, and reported as ECC would */
  int64_t inv_checked, inv_faults, inv_reproduced; /* replay: the body's invariant */
  ft_track_report trk;      /* replay: the tracker's counts */
  int64_t mf_found, mf_corrected, mf_retired; /* memory failures in rounds' buffers (memfail.h) */
  tr_edac edac_start, edac_end; /* the machine's EDAC counters around the run (edac.h) */
} tr_graph_ft_counts;

/* Wraps program *p in place: its callbacks become the fault-tolerant
 * rounds, calling the program's own. ss (may be NULL) is the run's state
 * store, where an accepted PEval's arrays are registered. 0, or -1 when out
 * of memory or the body cannot be copied (state_bytes 0). */
int tr_graph_ft_open(tr_graph_ft **out, tr_aap_program *p, const tr_graph_body *body, tr_graph_env *env,
                     tr_state_store *ss, const tr_graph_ft_opts *o);
/* After the run: the counts, then frees (the program's own callbacks stay
 * the caller's to release). */
void tr_graph_ft_close(tr_graph_ft *ft, tr_graph_ft_counts *counts);

/* Hooks of the environment's calls (graph_exec.c), for the computation the
 * calling thread is running, if any: keep records a registration (1: taken);
 * window gives a private copy of input k's window (NULL: not in a
 * computation), window_done frees it (1: it was one); put keeps Assemble's
 * tile (1: taken). */
int tr_graph_ft_keep(void *pp, size_t bytes, const size_t *count);
float *tr_graph_ft_window(tr_graph_env *env, int k, const tr_aap_frag *f);
int tr_graph_ft_window_done(float *z);
int tr_graph_ft_put(const void *cells);

/* The report's object for one program's run ("mode", "program", "unit"
 * and the counts); NULL out of memory. */
tr_json *tr_graph_ft_json(tr_ft_mode mode, const char *program, const tr_graph_ft_counts *c);

#endif
