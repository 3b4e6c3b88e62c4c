/*
 * dist.h - libterrain under mpirun (internal).
 *
 * When the program initialised MPI and runs with more than one rank, the
 * library works distributed over MPI_COMM_WORLD: ranks share the tiles and
 * rank 0 is the only writer. Without MPI (or with one rank) every function
 * here is the single-process identity.
 *
 * Every wait for another rank goes through tr_dist_wait: it ends when the
 * requests complete, when the job's liveness monitor (run->live, libcoll's
 * coll_live.h) finds a rank silent beyond --rank-timeout (TR_ERANK, naming
 * the rank), or when the run is cancelled (TR_EINTERRUPTED). After TR_ERANK
 * the requests stay live: the command ends the job without MPI_Finalize.
 */
#ifndef TR_DIST_H
#define TR_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "terrain.h"

/* The number of ranks (1 without MPI); this process's rank is tr_rank()
 * (terrain.h). */
int tr_dist_size(void);

/* Waits for n MPI requests (MPI_Request *) under run's monitor; see above. */
int tr_dist_wait(const tr_run_opts *run, int n, void *reqs, tr_error *err);

/* TR_ERANK (naming the rank) when run's monitor has lost a rank,
 * TR_EINTERRUPTED when the run is cancelled, TR_OK otherwise: for loops
 * that wait by polling. */
int tr_dist_check(const tr_run_opts *run, tr_error *err);

/* The vote: every rank agrees on a status - if any rank failed, all return
 * the failure of the lowest failing rank, with its message in err. Bounded
 * by tr_dist_wait. Called by run/step.c alone: the library's code takes
 * steps (run/step.h), it does not vote. */
int tr_dist_vote(const tr_run_opts *run, int status, tr_error *err);

/* As tr_dist_vote, but only rank 0 (the writer) learns the outcome: the
 * others send their vote through libcoll's timeout aggregation (a reduce
 * over a one-level tree) and return their own status at once, so a late
 * rank holds rank 0 alone. Every rank must call it at the same point. */
int tr_dist_report(const tr_run_opts *run, int status, tr_error *err);

/* Rank 0's `bytes` bytes at buf, copied to every rank; the wait bounded as
 * tr_dist_wait's (a rank lost: TR_ELOST's line, as every wait). */
int tr_dist_bcast(const tr_run_opts *run, void *buf, int bytes, tr_error *err);

/* Each of v[0..n) becomes its minimum over the ranks (a maximum: negate
 * it), through libcoll's allreduce on the command's context; every rank
 * calls it at the same point with the same n. Bounded as tr_dist_wait. */
int tr_dist_min(const tr_run_opts *run, double *v, int n, tr_error *err);

/* Each of v[0..n) becomes its sum over the ranks, through libcoll's
 * allreduce (COLL_UINT64 SUM: exact in any order while no lane wraps; a
 * vector beyond its small-message size takes the pipelined halving path);
 * called as tr_dist_min. */
int tr_dist_sum_u64(const tr_run_opts *run, uint64_t *v, size_t n, tr_error *err);

#endif
