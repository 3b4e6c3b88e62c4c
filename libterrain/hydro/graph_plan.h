/*
 * graph_plan.h - the planner of graph runs (internal to libterrain): which
 * body of a program runs, and how much of its state stays in memory.
 *
 * Every graph run asks here, whichever runner it came through (graph_run.c:
 * a command over rasters, or a caller's loaders and writer), so the choice a
 * test or benchmark sees is the command's. The planner knows nothing of
 * GDAL or files: it is given the tiles each rank owns and the fixed memory
 * the runner holds (caches, buffers), and works from the bodies' declared
 * state shapes (graph.h, tr_graph_state).
 */
#ifndef TR_GRAPH_PLAN_H
#define TR_GRAPH_PLAN_H

#include "graph.h"

/* What the planner is told of a run: the tiles (tile_at over geom, tile i
 * rank (i mod nranks)'s), this rank, the rounds running at once on a rank
 * (`pinned`: threads in one process, one per rank under mpirun), the fixed
 * bytes every rank holds (caches and the process) and the writer's cache
 * (counted on every rank, so that ranks choose alike). */
typedef struct {
  int64_t ntiles;
  tr_tile (*tile_at)(const void *geom, int64_t i);
  const void *geom;
  int rank, nranks;
  int pinned;
  int64_t fixed;
  int64_t writer;
  /* --ft (graph_ft.h): copies of a fragment's state a running round holds
   * (dual 2, each with a copy of the window; replay 1; off 0) */
  int ft_copies;
} tr_graph_space;

/* What rank `rank` keeps while a body runs over its tiles: fixed (the
 * space's, the engine's per-fragment halo buffers, the writer's cache and
 * the working set of the rounds running at once), state (the body's state
 * over each owned fragment), frag_max the largest fragment's state. */
typedef struct {
  int64_t fixed, state, frag_max, round_max;
} tr_graph_need;

/* The body of prog that runs with params: the first main body that applies;
 * when its state does not fit `mem` on the rank that needs most, the first
 * twin that applies and whose own working set fits. NULL when no main body
 * applies (a bug of the caller's params). *need: the chosen body's figures
 * on this rank. */
const tr_graph_body *tr_graph_plan_body(const tr_graph_program *prog, const void *params, const tr_graph_space *sp,
                                        int64_t mem, tr_graph_need *need);

/* This rank's figures for body b of prog. */
tr_graph_need tr_graph_plan_need(const tr_graph_program *prog, const tr_graph_body *b, const tr_graph_space *sp);

/* What b needs to keep everything in memory on the rank that needs most:
 * the one figure compared with --mem before spilling or taking a twin. */
int64_t tr_graph_plan_all_in_memory(const tr_graph_program *prog, const tr_graph_body *b, const tr_graph_space *sp);

/* The state store's budget for `need` under `mem`: -1 when everything fits
 * (the store only counts); else what stays in memory beside the rounds
 * running. TR_OK, or TR_ENOMEM with a line naming `what` and what to change
 * when one round's working set does not fit (mem_opt: the --mem given, 0
 * for the default, for the line). */
int tr_graph_plan_budget(const tr_graph_need *need, int pinned, int64_t mem, int64_t mem_opt, const char *what,
                         int64_t *budget, tr_error *err);

#endif
