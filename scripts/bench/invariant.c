/*
 * invariant.c - what the kernels' output invariants (kernel.h, check) add to
 * a tile under --ft replay, at the library level where the loaded machine's
 * I/O noise cannot hide it: for each kernel row that has one, the time of
 * its CPU function on a tile and of its check on the result, on a smooth
 * analytic surface (a sum of sines, metres on a 10 m grid, no nodata).
 * Prints one JSON line per row: kernel and check seconds per tile and their
 * ratio (the share --ft replay adds to that row's compute on a clean run).
 * Usage: bench_invariant [TILE (512)] [REPS (40)]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gradient.h"
#include "kernel.h"
#include "rugged.h"
#include "terrain.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  const int64_t tile = argc > 1 ? atoll(argv[1]) : 512;
  const int reps = argc > 2 ? atoi(argv[2]) : 40;
  const int64_t halo = 1, side = tile + 2 * halo;
  float *win = malloc((size_t)(side * side) * sizeof *win);
  double *out = malloc((size_t)(tile * tile) * sizeof *out);
  if (!win || !out) return 1;
  for (int64_t r = 0; r < side; r++)
    for (int64_t c = 0; c < side; c++)
      win[r * side + c] = (float)(500.0 + 80.0 * sin(r * 0.013) * cos(c * 0.017) + 15.0 * sin((r + 2 * c) * 0.05));
  /* a tile inside a raster four tiles wide */
  const tr_window w = {.in = win, .in_stride = side, .halo = halo, .rows = tile, .cols = tile, .grow0 = tile,
                       .gcol0 = tile, .raster_rows = 4 * tile, .raster_cols = 4 * tile, .aux = NULL};
  tr_gradient_params g;
  memset(&g, 0, sizeof g);
  g.dst_nodata = -9999.0f;
  g.dst_has_nodata = 1;
  g.scale = 1.0;
  g.gt[1] = 10.0;
  g.gt[5] = -10.0;
  tr_rugged_params rp;
  memset(&rp, 0, sizeof rp);
  rp.dst_nodata = -9999.0f;
  static const char *rows[] = {"slope", "aspect", "tri", "tpi", "roughness"};
  for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
    const tr_kernel *K = tr_kernel_find(rows[k], NULL);
    if (!K || !K->check) continue;
    const void *params = k < 2 ? (const void *)&g : (const void *)&rp;
    double tk = 1e30, tc = 1e30;
    int64_t bad = 0;
    for (int i = 0; i < reps; i++) { /* best of reps: the machine's own noise left out */
      double t0 = now();
      if (K->cpu(params, &w, 0, tile, out)) return 1;
      double t1 = now();
      bad += K->check(params, &w, out);
      double t2 = now();
      tk = t1 - t0 < tk ? t1 - t0 : tk;
      tc = t2 - t1 < tc ? t2 - t1 : tc;
    }
    tr_json *o = tr_json_object();
    tr_json_set(o, "bench", tr_json_str("invariant"));
    tr_json_set(o, "kernel", tr_json_str(rows[k]));
    tr_json_set(o, "tile", tr_json_int(tile));
    tr_json_set(o, "kernel_s", tr_json_fixed(tk, 6));
    tr_json_set(o, "check_s", tr_json_fixed(tc, 6));
    tr_json_set(o, "check_over_kernel", tr_json_fixed(tc / tk, 4));
    tr_json_set(o, "cells_refused", tr_json_int(bad));
    tr_json_write(o, stdout);
    tr_json_free(o);
  }
  free(win);
  free(out);
  return 0;
}
