/*
 * mpi_test.c - the MPI back-end under mpirun (3 or 4 ranks): rank 0 runs the
 * checks, the other ranks serve. Every case creates a fresh context on all
 * ranks (ft_ctx_create is collective), so the case list is walked by all.
 * Failures on any rank reach every rank's exit code.
 */
#include <mpi.h>
#include <string.h>

#include "ft_test_kernels.h"
#include "tr_test.h"

enum { C_CLEAN, C_FLIPS, C_FLIPS_ALL, C_BASIC, C_FATAL, C_KILL, C_STALL, C_NCASES };

static int nranks;

static void case_opts(int c, ft_opts *o, const MPI_Comm *comm) {
  ft_opts_init(o);
  o->mpi_comm = comm;
  o->kernels = TK_REGISTRY;
  o->n_kernels = sizeof TK_REGISTRY / sizeof TK_REGISTRY[0];
  switch (c) {
    case C_FLIPS: o->inject.seed = 17; o->inject.flip_p = 0.3; o->inject.flip_input_p = 0.1; break;
    case C_FLIPS_ALL: o->inject.seed = 5; o->inject.flip_p = 1.0; break;
    case C_BASIC: o->mode = FT_MODE_DUAL_BASIC; o->inject.seed = 8; o->inject.flip_p = 0.5; break;
    case C_FATAL:
      o->max_recomputes = 2;
      o->inject.n_exact = 1;
      o->inject.exact[0] = (ft_fault_at){.kind = FT_FAULT_FLIP, .block = 3, .sub = 2, .slot = -1};
      break;
    case C_KILL:
      /* long enough that a live worker descheduled on a loaded machine (this
       * suite runs beside other mpirun tests on 2 cores) is not taken for
       * the killed one: 300 ms once left no responsive worker */
      o->timeout_ms = 1500;
      o->inject.kill = 1;
      o->inject.kill_worker = nranks - 2; /* the last worker rank */
      o->inject.kill_after = 3;
      break;
    case C_STALL:
      o->timeout_ms = 1000; /* as for C_KILL; the stall stays well beyond it */
      o->inject.stall = 1;
      o->inject.stall_worker = 0;
      o->inject.stall_ms = 2500;
      o->inject.stall_after = 2;
      o->inject.stall_count = 2;
      break;
    default: break;
  }
}

static int master_case(int c, ft_ctx *ctx) {
  const int64_t H = 150, W = 130;
  tk_params p = {10.0, 1, -1};
  float *g = tk_grid(H, W, 21);
  float *want = malloc((size_t)(H * W) * 4), *got = malloc((size_t)(H * W) * 4);
  ASSERT_EQ_INT(tk_run_raster(NULL, &TK_SLOPE, &p, g, H, W, 40, 50, FT_TYPE_F32, want, NULL), 0);
  ft_status st;
  int rc = tk_run_raster(ctx, &TK_SLOPE, &p, g, H, W, 40, 50, FT_TYPE_F32, got, &st);
  ft_report r;
  ft_report_get(ctx, &r);
  /* with 2 workers a silent one leaves no second rank for its replica */
  int expect = c == C_FATAL ? FT_ERR_FATAL
               : ((c == C_KILL || c == C_STALL) && nranks == 3) ? FT_ERR_TIMEOUT : 0;
  if (rc != expect) fprintf(stderr, "case %d: rc %d, %s\n", c, rc, st.msg);
  ASSERT_EQ_INT(rc, expect);
  ASSERT_EQ_INT(r.injected, r.detected + r.tolerated);
  ASSERT_EQ_INT(r.detected, r.corrected + r.fatal);
  if (rc == 0) {
    ASSERT(memcmp(want, got, (size_t)(H * W) * 4) == 0);
    ASSERT_EQ_INT(r.blocks, 12);
    ASSERT_EQ_INT(r.sub_blocks, 48);
    ASSERT_EQ_INT(r.fatal, 0);
  } else {
    ASSERT(st.msg[0] != '\0');
  }
  if (c == C_CLEAN) ASSERT_EQ_INT(r.mismatches + r.recomputes + r.injected, 0);
  if (c == C_FLIPS || c == C_BASIC) ASSERT(r.injected > 5 && r.detected > 5);
  if (c == C_FLIPS_ALL) {
    ASSERT_EQ_INT(r.injected, 96);
    ASSERT_EQ_INT(r.corrected, 96);
    ASSERT_EQ_INT(r.mismatches, 48);
  }
  if (c == C_FATAL) {
    ASSERT_EQ_INT(r.failed_sub_blocks, 1);
    ASSERT_EQ_INT(r.fatal, 4);
    ASSERT_EQ_INT(st.failed_sub, 2);
  }
  if (c == C_KILL || c == C_STALL) ASSERT(r.timeouts >= 1);
  if (c == C_KILL && nranks > 3) ASSERT(r.redispatches >= 1);
  /* a second kernel with double output */
  if (c == C_CLEAN) {
    double *w64 = malloc((size_t)(H * W) * 8), *g64 = malloc((size_t)(H * W) * 8);
    ASSERT_EQ_INT(tk_run_raster(NULL, &TK_SLOPE64, &p, g, H, W, 64, 64, FT_TYPE_F64, w64, NULL), 0);
    ASSERT_EQ_INT(tk_run_raster(ctx, &TK_SLOPE64, &p, g, H, W, 64, 64, FT_TYPE_F64, g64, NULL), 0);
    ASSERT(memcmp(w64, g64, (size_t)(H * W) * 8) == 0);
    ft_kernel unknown = {"test.unknown", tk_slope};
    ft_block b = tk_block(g, W, 0, 0, 0, 10, 10, FT_TYPE_F32);
    ASSERT_EQ_INT(ft_run_block(ctx, &unknown, &p, sizeof p, &b, got, NULL), FT_ERR_UNKNOWN_KERNEL);
    free(w64);
    free(g64);
  }
  free(g);
  free(want);
  free(got);
  return 0;
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Comm comm = MPI_COMM_WORLD;
  int fails = 0, passed = 0;
  for (int c = 0; c < C_NCASES; c++) {
    ft_opts o;
    case_opts(c, &o, &comm);
    ft_ctx *ctx = NULL;
    char err[256];
    int rc = ft_ctx_create(&o, &ctx, err, sizeof err);
    if (rc) {
      fprintf(stderr, "rank %d: ft_ctx_create: %s\n", rank, err);
      fails++;
      continue;
    }
    if (ft_ctx_role(ctx) == FT_ROLE_WORKER) {
      if (ft_serve(ctx) != 0) fails++;
    } else {
      int f = master_case(c, ctx);
      printf("%s case_%d\n", f ? "FAIL" : "ok  ", c);
      fflush(stdout);
      if (f) fails++;
      else passed++;
    }
    ft_ctx_destroy(ctx);
  }
  int total = 0;
  MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%d passed, %d failed\n", passed, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
