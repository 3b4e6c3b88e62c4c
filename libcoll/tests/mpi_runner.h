/*
 * mpi_runner.h - runs a tr_test.h table under MPI.
 *
 * Every rank runs every selected test; a test fails when it fails on any
 * rank (the per-rank results are combined with MPI_Allreduce), and only
 * rank 0 prints the "ok"/"FAIL" lines and the closing "N passed, N failed".
 * argv[1], when given, is a comma-separated list of test names to run;
 * without it every test runs except those named test_large* (the long ones,
 * registered separately for a couple of rank counts).
 *
 * Checks inside MPI tests use CHECK, which counts a failure and carries on,
 * so that a failing rank still takes part in the collectives that follow
 * instead of leaving the others hanging.
 */
#ifndef COLL_MPI_RUNNER_H
#define COLL_MPI_RUNNER_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "tr_test.h"

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      int r_;                                                                         \
      MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                             \
      fprintf(stderr, "[rank %d] %s:%d: check failed: %s\n", r_, __FILE__, __LINE__, #cond); \
      fails++;                                                                        \
    }                                                                                 \
  } while (0)

static int selected(const char *list, const char *name) {
  size_t n = strlen(name);
  const char *p = list;
  while ((p = strstr(p, name)) != NULL) {
    if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return 1;
    p += n;
  }
  return 0;
}

static int mpi_test_main(int argc, char **argv, const tr_test_case *cases, int n) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int passed = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    if (argc > 1 ? !selected(argv[1], cases[i].name)
                 : strncmp(cases[i].name, "test_large", 10) == 0)
      continue;
    double t0 = MPI_Wtime();
    int rc = cases[i].fn() != 0, any = 0;
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      printf("%s %s (%.2f s)\n", any ? "FAIL" : "ok  ", cases[i].name, MPI_Wtime() - t0);
      fflush(stdout);
    }
    if (any) failed++; else passed++;
  }
  if (rank == 0) printf("%d passed, %d failed\n", passed, failed);
  MPI_Finalize();
  return failed == 0 && passed > 0 ? 0 : 1;
}

#define MPI_TR_MAIN(...)                                                              \
  int main(int argc, char **argv) {                                                   \
    static const tr_test_case cases_[] = {__VA_ARGS__};                               \
    return mpi_test_main(argc, argv, cases_, (int)(sizeof cases_ / sizeof cases_[0])); \
  }

#endif
