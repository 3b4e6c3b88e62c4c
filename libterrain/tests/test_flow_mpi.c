/*
 * test_flow_mpi.c - tr_flowdir under mpirun (-n 1, 2 and 3) equals the sequential reference
 * (test_flow_ref.c) on every test DEM, for every schedule and uneven tile sizes, with the
 * --slope and filled outputs written too; rank 0 checks and the verdict is shared so every
 * rank exits with the same status. A missing input fails on every rank with one message.
 * Usage: mpirun -n N test_flow_mpi
 */
#include <gdal.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terrain.h"
#include "test_flow_ref.h"

static char dir[64];

static int all_ok(int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

static int run(const char *src, const char *dst, const char *schedule, int tile, const char *slope, tr_error *e) {
  tr_run_opts run;
  tr_run_opts_init(&run);
  run.tile_size = tile;
  run.threads = 1;
  tr_graph_opts g;
  tr_graph_opts_init(&g);
  g.schedule = schedule;
  g.ds_max_ms = 0.5;
  tr_flowdir_opts o;
  tr_flowdir_opts_init(&o);
  o.slope = slope;
  return tr_flowdir(&run, &g, &o, src, dst, e);
}

static int test_equals_reference(int me) {
  static const char *scheds[] = {"aap", "bsp", "ap", "ssp", "random"};
  static const int tiles[] = {7, 13, 5};
  int ok = 1, runs = 0;
  for (int d = 0; d < FD_NDEM; d++) {
    fd_case k;
    fd_case_make(d, 0, &k);
    const fd_dem dem = k.dem;
    char src[128], dst[128], slope[128];
    snprintf(src, sizeof src, "%s/%s.tif", dir, fd_dem_name[d]);
    snprintf(dst, sizeof dst, "%s/dir.tif", dir);
    snprintf(slope, sizeof slope, "%s/sd8.tif", dir);
    if (me == 0 && fd_write(&dem, src)) ok = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int s = 0; s < 5; s++) {
      tr_error e = {{0}};
      const int st = run(src, dst, scheds[s], tiles[(d + s) % 3], s == 0 ? slope : NULL, &e);
      if (st) {
        fprintf(stderr, "rank %d: %s: %s\n", me, fd_dem_name[d], e.msg);
        ok = 0;
      } else if (me == 0) {
        int *got = fd_read_dirs(dst, TR_DIR_TAUDEM, dem.rows, dem.cols);
        char what[96];
        snprintf(what, sizeof what, "%s schedule %s", fd_dem_name[d], scheds[s]);
        if (!got || fd_diff(got, k.ref, k.n, dem.cols, what) != 0 || !fd_invariants(k.fel, got, dem.rows, dem.cols, what))
          ok = 0;
        free(got);
      }
      runs++;
      MPI_Barrier(MPI_COMM_WORLD);
    }
    fd_case_free(&k);
  }
  return all_ok(ok && runs == FD_NDEM * 5) ? 0 : 1;
}

static int test_missing_input(int me) {
  char src[128], dst[128];
  snprintf(src, sizeof src, "%s/no-such-dem.tif", dir);
  snprintf(dst, sizeof dst, "%s/never.tif", dir);
  tr_error e = {{0}};
  const int st = run(src, dst, "aap", 7, NULL, &e);
  int ok = st == TR_EINPUT && strstr(e.msg, "no-such-dem.tif") && access(dst, F_OK) != 0;
  if (!ok) fprintf(stderr, "rank %d: status %d, message '%s'\n", me, st, e.msg);
  return all_ok(ok) ? 0 : 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  GDALAllRegister();
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me == 0) {
    snprintf(dir, sizeof dir, "/tmp/tf_flowmpi_XXXXXX");
    if (!mkdtemp(dir)) dir[0] = 0;
  }
  MPI_Bcast(dir, (int)sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  int f = 0, g;
  g = test_equals_reference(me);
  if (me == 0) printf("%s test_equals_reference\n", g ? "FAIL" : "ok  ");
  f += g;
  g = test_missing_input(me);
  if (me == 0) printf("%s test_missing_input\n", g ? "FAIL" : "ok  ");
  f += g;
  if (me == 0) {
    printf("%d passed, %d failed\n", 2 - f, f);
    char c[128];
    snprintf(c, sizeof c, "rm -rf '%s'", dir);
    if (system(c) != 0) f++;
  }
  MPI_Finalize();
  return f ? 1 : 0;
}
