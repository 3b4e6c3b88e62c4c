/*
 * rank_progress.h - a rank's own progress counted into the caller's board
 * (tr_run_opts.rank_progress, terrain.h): a run begins a stage with this
 * rank's tile steps, and each step done adds one. Atomic, so the tile
 * threads count and the program's progress thread reads at any time.
 */
#ifndef TR_RANK_PROGRESS_H
#define TR_RANK_PROGRESS_H

#include "terrain.h"

static inline void tr_rank_progress_stage(const tr_run_opts *run, int64_t tiles, int64_t steps_per_tile) {
  tr_rank_progress *p = run ? run->rank_progress : NULL;
  if (!p) return;
  /* done first: a reader that sees the new stage never sees the old count */
  __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&p->total, tiles * steps_per_tile, __ATOMIC_RELAXED);
  __atomic_store_n(&p->steps_per_tile, steps_per_tile, __ATOMIC_RELAXED);
  __atomic_add_fetch(&p->stage, 1, __ATOMIC_RELEASE);
}

static inline void tr_rank_progress_step(const tr_run_opts *run) {
  tr_rank_progress *p = run ? run->rank_progress : NULL;
  if (p) __atomic_add_fetch(&p->done, 1, __ATOMIC_RELAXED);
}

#endif
