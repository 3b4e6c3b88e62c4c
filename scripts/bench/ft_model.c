/*
 * ft_model.c - times libft's dual modes against the direct kernel and against
 * the source's cost model (specs/redundant-recompute.md, item 4).
 *
 * A synthetic size x size float DEM is cut into tile x tile blocks; the kernel
 * is a Horn 3x3 slope (atan/sqrt per cell, plus `iters` extra rounds of
 * arithmetic to make it heavier when asked). Every case runs in this one
 * process, on the same grid, and checks its output against the direct run.
 *
 * Phase "throughput": `callers` executor threads pull blocks from a shared
 * counter (as the tile executor does) over a pool of `workers` workers:
 * off (direct kernel), dual fast clean, one fault per block in B00 / B02 /
 * B03 (exact schedule), random faults at p = 0.125 per replica sub-block
 * result (one per block on average), basic clean and basic with one fault
 * per block.
 * Phase "latency": one caller, workers = 3 (two replicas + one free worker
 * for recomputes), so each block's time can be set against the model:
 * clean C + D/4, B00 C, B02 C + D/4, B03 1.25C + D/4, basic C + D + C/4,
 * with C = time to compute one block directly and D = time to compare two
 * results of one block, both measured here.
 *
 * Usage: bench_ft_model [size] [tile] [iters] [callers] [workers]
 * Prints one JSON object per line.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft.h"

typedef struct {
  double cellsize;
  int iters;
} kparams;

static int slope_kernel(const void *kctx, const ft_block *b, int64_t row0, int64_t nrows,
                        void *out) {
  const kparams *p = kctx;
  const float *in = b->in;
  float *o = out;
  int64_t s = b->in_stride;
  for (int64_t r = 0; r < nrows; r++) {
    const float *u = in + (row0 + r) * s, *m = u + s, *d = m + s;
    for (int64_t c = 0; c < b->cols; c++) {
      double dx = ((u[c + 2] + 2.0 * m[c + 2] + d[c + 2]) - (u[c] + 2.0 * m[c] + d[c])) /
                  (8.0 * p->cellsize);
      double dy = ((d[c] + 2.0 * d[c + 1] + d[c + 2]) - (u[c] + 2.0 * u[c + 1] + u[c + 2])) /
                  (8.0 * p->cellsize);
      double v = atan(sqrt(dx * dx + dy * dy)) * 57.29577951308232;
      for (int k = 0; k < p->iters; k++) v += 1e-4 * sin(v + k);
      o[r * b->cols + c] = (float)v;
    }
  }
  return 0;
}

static const ft_kernel KERNEL = {"bench.slope", slope_kernel};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
  int64_t n, tile, nb_c, nblocks;
  float *grid; /* (n+2) x (n+2) */
  kparams kp;
} raster;

static ft_block block_of(const raster *R, int64_t id) {
  int64_t br = id / R->nb_c, bc = id % R->nb_c;
  int64_t r0 = br * R->tile, c0 = bc * R->tile;
  ft_block b;
  memset(&b, 0, sizeof b);
  b.id = id;
  b.rows = R->n - r0 < R->tile ? R->n - r0 : R->tile;
  b.cols = R->n - c0 < R->tile ? R->n - c0 : R->tile;
  b.halo = 1;
  b.row_off = r0;
  b.col_off = c0;
  b.in = R->grid + r0 * (R->n + 2) + c0;
  b.in_stride = R->n + 2;
  b.in_elem_size = 4;
  b.out_type = FT_TYPE_F32;
  b.out_elem_size = 4;
  return b;
}

typedef struct {
  const raster *R;
  ft_ctx *ctx; /* NULL: direct */
  float *out;  /* n x n */
  atomic_long next;
  atomic_int errors;
} run_state;

static void *caller_main(void *a) {
  run_state *S = a;
  const raster *R = S->R;
  float *tile = malloc((size_t)(R->tile * R->tile) * 4);
  for (;;) {
    long id = atomic_fetch_add(&S->next, 1);
    if (id >= R->nblocks) break;
    ft_block b = block_of(R, id);
    int rc = S->ctx ? ft_run_block(S->ctx, &KERNEL, &R->kp, sizeof R->kp, &b, tile, NULL)
                    : slope_kernel(&R->kp, &b, 0, b.rows, tile);
    if (rc) atomic_fetch_add(&S->errors, 1);
    for (int64_t r = 0; r < b.rows; r++)
      memcpy(S->out + (b.row_off + r) * R->n + b.col_off, tile + r * b.cols, (size_t)b.cols * 4);
  }
  free(tile);
  return NULL;
}

/* Runs the raster once; returns seconds, or -1 on an error. */
static double run_raster(const raster *R, ft_ctx *ctx, int callers, float *out) {
  run_state S = {R, ctx, out, 0, 0};
  pthread_t th[64];
  double t0 = now_s();
  for (int i = 0; i < callers; i++) pthread_create(&th[i], NULL, caller_main, &S);
  for (int i = 0; i < callers; i++) pthread_join(th[i], NULL);
  double t = now_s() - t0;
  return atomic_load(&S.errors) ? -1.0 : t;
}

typedef struct {
  const char *name;
  ft_mode mode;
  int sub; /* exact fault in this sub-block of every block (slot 0); -1 none */
  double p;
} bcase;

static const bcase CASES[] = {
    {"dual_fast_clean", FT_MODE_DUAL_FAST, -1, 0.0},
    {"dual_fast_fault_B00", FT_MODE_DUAL_FAST, 0, 0.0},
    {"dual_fast_fault_B02", FT_MODE_DUAL_FAST, 2, 0.0},
    {"dual_fast_fault_B03", FT_MODE_DUAL_FAST, 3, 0.0},
    {"dual_fast_random_p0.125", FT_MODE_DUAL_FAST, -1, 0.125},
    {"dual_basic_clean", FT_MODE_DUAL_BASIC, -1, 0.0},
    {"dual_basic_fault_B00", FT_MODE_DUAL_BASIC, 0, 0.0},
};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])

static double run_case(const raster *R, const bcase *c, int workers, int callers, float *out,
                       ft_report *rep) {
  ft_opts o;
  ft_opts_init(&o);
  o.mode = c->mode;
  o.workers = workers;
  o.inject.seed = 2024;
  o.inject.flip_p = c->p;
  if (c->sub >= 0) {
    o.inject.n_exact = 1;
    o.inject.exact[0] = (ft_fault_at){FT_FAULT_FLIP, -1, c->sub, 0};
  }
  ft_ctx *ctx = NULL;
  char err[256];
  if (ft_ctx_create(&o, &ctx, err, sizeof err) != 0) {
    fprintf(stderr, "bench_ft_model: %s\n", err);
    return -1;
  }
  double t = run_raster(R, ctx, callers, out);
  ft_report_get(ctx, rep);
  ft_ctx_destroy(ctx);
  return t;
}

int main(int argc, char **argv) {
  raster R;
  R.n = argc > 1 ? atol(argv[1]) : 4000;
  R.tile = argc > 2 ? atol(argv[2]) : 512;
  R.kp.cellsize = 30.0;
  R.kp.iters = argc > 3 ? atoi(argv[3]) : 0;
  int callers = argc > 4 ? atoi(argv[4]) : 2;
  int workers = argc > 5 ? atoi(argv[5]) : 0;
  if (R.n < 8 || R.tile < 4 || callers < 1 || callers > 64) {
    fprintf(stderr, "usage: bench_ft_model [size] [tile] [iters] [callers] [workers]\n");
    return 2;
  }
  R.nb_c = (R.n + R.tile - 1) / R.tile;
  R.nblocks = R.nb_c * R.nb_c;
  int64_t W = R.n + 2;
  R.grid = malloc((size_t)(W * W) * 4);
  uint32_t s = 12345;
  for (int64_t r = 0; r < W; r++)
    for (int64_t c = 0; c < W; c++) {
      s = s * 1664525u + 1013904223u;
      R.grid[r * W + c] = (float)(300.0 * sin(r * 0.003) * cos(c * 0.002) + 40.0 * sin(r * 0.05 + c * 0.07) +
                                  (double)(s >> 8) / 16777216.0);
    }
  size_t bytes = (size_t)(R.n * R.n) * 4;
  float *ref = malloc(bytes), *out = malloc(bytes);
  char js[1024];

  /* warm-up, then off */
  run_raster(&R, NULL, callers, ref);
  double off = run_raster(&R, NULL, callers, ref);
  printf("{\"phase\":\"throughput\",\"case\":\"off\",\"size\":%ld,\"tile\":%ld,\"blocks\":%ld,"
         "\"callers\":%d,\"seconds\":%.4f}\n",
         (long)R.n, (long)R.tile, (long)R.nblocks, callers, off);
  double clean = 0;
  for (int i = 0; i < NCASES; i++) {
    ft_report rep;
    double t = run_case(&R, &CASES[i], workers, callers, out, &rep);
    if (i == 0) clean = t;
    ft_report_format_json(&rep, js, sizeof js);
    printf("{\"phase\":\"throughput\",\"case\":\"%s\",\"workers\":%d,\"seconds\":%.4f,"
           "\"ratio_to_off\":%.3f,\"ratio_to_clean_dual\":%.3f,\"identical\":%s,\"report\":%s}\n",
           CASES[i].name, workers, t, t / off, t / clean,
           t > 0 && memcmp(ref, out, bytes) == 0 ? "true" : "false", js);
    fflush(stdout);
  }

  /* latency phase: C, D, then one block at a time with a free third worker */
  double C = run_raster(&R, NULL, 1, ref) / (double)R.nblocks;
  double D = 0;
  {
    float *a = malloc((size_t)(R.tile * R.tile) * 4), *b2 = malloc((size_t)(R.tile * R.tile) * 4);
    double t0 = now_s();
    int64_t k = 0;
    for (int64_t id = 0; id < R.nblocks; id++) {
      ft_block b = block_of(&R, id);
      for (int64_t r = 0; r < b.rows; r++) {
        memcpy(a + r * b.cols, ref + (b.row_off + r) * R.n + b.col_off, (size_t)b.cols * 4);
        memcpy(b2 + r * b.cols, a + r * b.cols, (size_t)b.cols * 4);
      }
      double t1 = now_s();
      k += ft_compare_cells(FT_TYPE_F32, 4, a, b2, b.rows * b.cols, 0.0);
      D += now_s() - t1;
    }
    (void)t0;
    D /= (double)R.nblocks;
    free(a);
    free(b2);
    if (k) return 1;
  }
  printf("{\"phase\":\"model\",\"C_block_s\":%.6f,\"D_block_s\":%.6f,\"D_over_C\":%.4f}\n", C, D, D / C);
  double model[NCASES] = {C + 0.25 * D, C, C + 0.25 * D, 1.25 * C + 0.25 * D, -1, C + D,
                          1.25 * C + D};
  double lclean = 0;
  for (int i = 0; i < NCASES; i++) {
    ft_report rep;
    double t = run_case(&R, &CASES[i], 3, 1, out, &rep) / (double)R.nblocks;
    if (i == 0) lclean = t;
    printf("{\"phase\":\"latency\",\"case\":\"%s\",\"workers\":3,\"block_s\":%.6f,"
           "\"ratio_to_C\":%.3f,\"ratio_to_clean_dual\":%.3f,",
           CASES[i].name, t, t / C, t / lclean);
    if (model[i] > 0) printf("\"model_s\":%.6f,\"model_ratio_to_C\":%.3f,", model[i], model[i] / C);
    printf("\"identical\":%s,\"recomputes\":%ld}\n",
           memcmp(ref, out, bytes) == 0 ? "true" : "false", (long)rep.recomputes);
    fflush(stdout);
  }
  free(R.grid);
  free(ref);
  free(out);
  return 0;
}
