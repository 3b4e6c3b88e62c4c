/*
 * dist.c - rank queries and status agreement over MPI_COMM_WORLD.
 */
#include "dist.h"

#include <limits.h>
#include <string.h>

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>

static int mpi_active(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

int tr_rank(void) {
  int r = 0;
  if (mpi_active()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int tr_dist_size(void) {
  int n = 1;
  if (mpi_active()) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int tr_dist_agree(int status, tr_error *err) {
  if (tr_dist_size() < 2) return status;
  int me = status ? tr_rank() : INT_MAX, first = INT_MAX;
  MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX) return TR_OK;
  int st = status;
  MPI_Bcast(&st, 1, MPI_INT, first, MPI_COMM_WORLD);
  tr_error e;
  if (err && tr_rank() == first) e = *err;
  else memset(&e, 0, sizeof e);
  MPI_Bcast(e.msg, (int)sizeof e.msg, MPI_CHAR, first, MPI_COMM_WORLD);
  if (err) *err = e;
  return st;
}

void tr_dist_bcast(void *buf, int bytes) {
  if (tr_dist_size() > 1) MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

#else

void tr_dist_bcast(void *buf, int bytes) {
  (void)buf;
  (void)bytes;
}

int tr_rank(void) { return 0; }
int tr_dist_size(void) { return 1; }
int tr_dist_agree(int status, tr_error *err) {
  (void)err;
  return status;
}

#endif
