/*
 * test_aap_mpi.c - the MPI back-end (run under mpirun -n 2 and -n 3) gives the reference
 * fill for every DEM, several layouts and every schedule (the windowed and the perimeter
 * program); rank 0 checks, and the verdict
 * is shared so every rank exits with the same status. Also a program error on one rank is
 * returned by all ranks.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill_io.h"
#include "test_fill_ref.h"
#include "tr_test.h"


static int same(const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      fprintf(stderr, "cell %lld: %.9g != %.9g\n", (long long)i, a[i], b[i]);
      return 0;
    }
  }
  return 1;
}

static int all_ok(int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

static int test_mpi_equals_reference(void) {
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm comm = MPI_COMM_WORLD;
  static float z[R * C], w[R * C], ref[R * C];
  struct { tr_aap_schedule s; int c; } sc[] = {{TR_AAP_SCHED_AAP, -1}, {TR_AAP_SCHED_BSP, 0},
      {TR_AAP_SCHED_AP, 0}, {TR_AAP_SCHED_SSP, 1}, {TR_AAP_SCHED_SSP, 2}, {TR_AAP_SCHED_RANDOM, 0}};
  int lays[] = {LAY_TWO, LAY_SEVEN, LAY_SMALL};
  int ok = 1, runs = 0;
  for (int d = 0; d < NDEM; d++) {
    int hn;
    float nd;
    make_dem(d, z, R, C, &hn, &nd);
    ref_fill(z, R, C, hn, nd, 0, 0, ref);
    for (int l = 0; l < 3; l++) {
      tr_aap_layout L;
      ASSERT_EQ_INT(make_layout(lays[l], &L), 0);
      for (int s = 0; s < 6; s++) {
        fill_opts o;
        fill_opts_default(&o);
        o.rows = R;
        o.cols = C;
        o.layout = &L;
        o.backend = TR_GRAPH_MPI;
        o.mpi_comm = &comm;
        o.aap.schedule = sc[s].s;
        o.aap.staleness = sc[s].c;
        o.aap.seed = (uint64_t)(s + 1);
        o.aap.ds_max = 0.0005;
        o.has_nodata = hn;
        o.nodata = nd;
        /* odd schedules run the perimeter program (fill_perimeter.c) */
        o.method = s % 2 ? FILL_PERIMETER : FILL_WINDOW;
        char err[256] = "";
        for (int64_t i = 0; i < R * C; i++) w[i] = -1;
        tr_aap_stats st;
        int rc = fill_array(&o, z, w, &st, err, sizeof err);
        if (rc) {
          fprintf(stderr, "rank %d: %s\n", me, err);
          ok = 0;
        } else {
          if (me == 0 && !same(ref, w, R * C)) {
            fprintf(stderr, "mismatch: %s / %s / schedule %d (%s)\n", dem_name[d], lay_name[lays[l]], s,
                    s % 2 ? "perimeter" : "window");
            ok = 0;
          }
          int64_t sent = 0, recv = 0;
          for (int i = 0; i < st.nworkers; i++) {
            sent += st.w[i].batches_sent;
            recv += st.w[i].batches_recv;
          }
          if (sent != recv) ok = 0;
          tr_aap_stats_free(&st);
        }
        runs++;
      }
      tr_aap_layout_free(&L);
    }
  }
  ASSERT(all_ok(ok));
  ASSERT_EQ_INT(runs, NDEM * 3 * 6);
  return 0;
}

static int fail_load(void *u, int64_t r0, int64_t c0, int64_t rows, int64_t cols, float *dst) {
  int me = *(int *)u;
  for (int64_t i = 0; i < rows * cols; i++) dst[i] = (float)(r0 + c0 + i % 7);
  return me == 1 ? -1 : 0; /* rank 1's fragments cannot be read */
}

static int test_mpi_error_reaches_all_ranks(void) {
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm comm = MPI_COMM_WORLD;
  fill_opts o;
  fill_opts_default(&o);
  o.rows = 30;
  o.cols = 30;
  o.tile_rows = o.tile_cols = 10;
  o.backend = TR_GRAPH_MPI;
  o.mpi_comm = &comm;

  char err[256] = "";
  int rc = fill_run(&o, fail_load, NULL, &me, NULL, err, sizeof err);
  ASSERT(all_ok(rc != 0));
  ASSERT(strlen(err) > 0);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int f = 0;
  f += test_mpi_equals_reference();
  if (me == 0) printf("%s test_mpi_equals_reference\n", f ? "FAIL" : "ok  ");
  int g = test_mpi_error_reaches_all_ranks();
  if (me == 0) printf("%s test_mpi_error_reaches_all_ranks\n", g ? "FAIL" : "ok  ");
  f += g;
  if (me == 0) printf("%d passed, %d failed\n", 2 - f, f);
  MPI_Finalize();
  return f ? 1 : 0;
}
