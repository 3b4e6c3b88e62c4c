/*
 * dist.h - libterrain under mpirun (internal).
 *
 * When the program initialised MPI and runs with more than one rank, the
 * library works distributed over MPI_COMM_WORLD: ranks share the tiles and
 * rank 0 is the only writer. Without MPI (or with one rank) every function
 * here is the single-process identity.
 */
#ifndef TR_DIST_H
#define TR_DIST_H

#include "terrain.h"

/* The number of ranks (1 without MPI); this process's rank is tr_rank()
 * (terrain.h). */
int tr_dist_size(void);

/* Makes every rank agree on a status: if any rank failed, all return the
 * failure of the lowest failing rank, with its message in err. */
int tr_dist_agree(int status, tr_error *err);

/* Rank 0's `bytes` bytes at buf, copied to every rank. */
void tr_dist_bcast(void *buf, int bytes);

#endif
