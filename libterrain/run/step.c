/*
 * step.c - the collective steps of a run (step.h).
 */
#include "step.h"

#include "dist.h"

int tr_step_end(const tr_run_opts *run, int status, tr_error *err) { return tr_dist_vote(run, status, err); }

int tr_step_writer(const tr_run_opts *run, tr_step_fn fn, void *arg, tr_error *err) {
  return tr_dist_vote(run, tr_rank() == 0 ? fn(arg, err) : TR_OK, err);
}

int tr_stage_end(const tr_run_opts *run, int status, tr_error *err) {
  return run && run->stage_of_several ? tr_dist_vote(run, status, err) : status;
}
