/*
 * allreduce.c - libcoll's halving allreduce against the MPI library's own
 * MPI_Allreduce, double SUM, in the same run (scripts/bench/allreduce).
 *
 * For each message size (8 B .. max, powers of two) both are timed
 * alternately over several repetitions; a repetition's time is the slowest
 * rank's (barrier, then MPI_Allreduce MAX of the elapsed times) and the
 * median repetition is reported. One JSON object per line on rank 0:
 *   {"op":"allreduce","ranks":N,"bytes":B,"coll_s":t,"mpi_s":t,"ratio":r}
 * ratio = coll_s / mpi_s (below 1: libcoll is faster).
 *
 * usage: bench_allreduce [max_bytes] [segments] [small_bytes]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "terrain.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double timed(int which, coll_ctx *c, const double *s, double *r, size_t n) {
  coll_op op = coll_op_builtin(COLL_SUM);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (which) MPI_Allreduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else if (coll_allreduce(c, s, r, n, COLL_DOUBLE, &op) != COLL_OK) MPI_Abort(MPI_COMM_WORLD, 2);
  double dt = MPI_Wtime() - t0, mx = 0;
  MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return mx;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t maxb = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : (size_t)64 << 20;
  coll_opts o;
  coll_opts_init(&o);
  if (argc > 2) o.segments = atoi(argv[2]);
  if (argc > 3) o.small_bytes = (size_t)strtoull(argv[3], NULL, 10);
  if (argc > 4) o.min_segment_bytes = (size_t)strtoull(argv[4], NULL, 10);
  /* the smallest size timed (default 8 B): a sweep of the large sizes need not time the small */
  const size_t minb = argc > 5 ? (size_t)strtoull(argv[5], NULL, 10) : 8;
  MPI_Comm w = MPI_COMM_WORLD;
  coll_ctx *c;
  if (coll_ctx_create(&c, &w, &o) != COLL_OK) MPI_Abort(MPI_COMM_WORLD, 1);
  size_t maxn = maxb / sizeof(double);
  double *s = malloc(maxn * sizeof *s), *r = malloc(maxn * sizeof *r);
  if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t i = 0; i < maxn; i++) s[i] = (double)((i + (size_t)rank) % 1000);
  memset(r, 0, maxn * sizeof *r);
  for (size_t bytes = minb < 8 ? 8 : minb; bytes <= maxb; bytes *= 2) {
    size_t n = bytes / sizeof(double);
    int reps = (int)((size_t)(32u << 20) / bytes);
    if (reps > 51) reps = 51;
    if (reps < 5) reps = 5;
    double *tc = malloc((size_t)reps * sizeof *tc), *tm = malloc((size_t)reps * sizeof *tm);
    timed(0, c, s, r, n); /* warm-up */
    timed(1, c, s, r, n);
    for (int i = 0; i < reps; i++) {
      tc[i] = timed(0, c, s, r, n);
      tm[i] = timed(1, c, s, r, n);
    }
    qsort(tc, (size_t)reps, sizeof *tc, cmp);
    qsort(tm, (size_t)reps, sizeof *tm, cmp);
    double mc = tc[reps / 2], mm = tm[reps / 2];
    if (rank == 0) {
      tr_json *o = tr_json_object();
      tr_json_set(o, "op", tr_json_str("allreduce"));
      tr_json_set(o, "ranks", tr_json_int(size));
      tr_json_set(o, "bytes", tr_json_uint(bytes));
      tr_json_set(o, "coll_s", tr_json_fixed(mc, 9));
      tr_json_set(o, "mpi_s", tr_json_fixed(mm, 9));
      tr_json_set(o, "ratio", tr_json_fixed(mc / mm, 3));
      tr_json_write(o, stdout);
      tr_json_free(o);
      fflush(stdout);
    }
    free(tc);
    free(tm);
  }
  free(s);
  free(r);
  coll_ctx_destroy(c);
  MPI_Finalize();
  return 0;
}
