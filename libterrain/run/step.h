/*
 * step.h - the collective steps of a run, and the one place where ranks
 * agree (internal to libterrain).
 *
 * Under mpirun every rank takes a command's steps in the same order: open
 * the input, plan, run the tiles, put the outputs in place. After a step
 * every rank must know whether it failed anywhere, or the ranks would part
 * ways (one going on to the next stage, another leaving) and wait for each
 * other until the rank timeout. That agreement is taken here and nowhere
 * else: the runners end their steps with tr_step_end, a run that is a
 * stage of several ends with its outcome agreed (tr_stage_end, from the
 * runners' entry points, tr_run_opts.stage_of_several), and the code of
 * the commands declares the steps it takes between runs - every rank's
 * (tr_step_end after its own part) or the writer's alone (tr_step_writer).
 * The vote itself is core/dist.c's, one libcoll allreduce; only step.c
 * calls it (scripts/check/votes).
 *
 * Without MPI, or with one rank, every call here returns the status it was
 * given.
 */
#ifndef TR_STEP_H
#define TR_STEP_H

#include "terrain.h"

/* The end of a step every rank took: every rank returns the failure of the
 * lowest failing rank, its line in err, or TR_OK when none failed (a rank
 * lost or a cancel: that failure, found by the monitor). */
int tr_step_end(const tr_run_opts *run, int status, tr_error *err);

/* A step the writer (rank 0) takes alone - putting outputs in place,
 * writing a table it gathered: fn(arg, err) runs there, and every rank
 * returns its outcome. */
typedef int (*tr_step_fn)(void *arg, tr_error *err);
int tr_step_writer(const tr_run_opts *run, tr_step_fn fn, void *arg, tr_error *err);

/* A run's outcome as its runner returns it: agreed when the run is a stage
 * of several (run->stage_of_several), else status as it is (the writer's
 * on rank 0, each rank's own elsewhere). Every return of a runner's entry
 * point goes through it. */
int tr_stage_end(const tr_run_opts *run, int status, tr_error *err);

#endif
