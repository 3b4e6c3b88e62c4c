/*
 * gradient.cu - GPU versions of slope and aspect (the kernel table's GPU
 * slot; kernel.h's contract): one thread per output cell, each running the
 * same per-cell code as the CPU (gradient_cell.h, window3.h), so with FMA
 * contraction off (CMakeLists.txt) the bytes are the CPU's. The CPU takes a
 * vectorised path for the interior of tiles without nodata; there
 * tr_window3() returns the same raw window, so every cell here goes through
 * it. Aspect's atan2 is the CPU's own (aspect_atan2: +, -, *, / only), so
 * its bits are the same too. Geographic rasters are
 * declined (return 1): their per-row cell sizes use libm's sin and cos.
 */
#include "cells.cuh"
#include "gradient_cell.h"

namespace {

__global__ void slope_cells(tr_gradient_params p, tr_window w, int64_t row0, int64_t nrows, float *out) {
  int64_t r, c;
  if (!tr_cell_of(w, row0, nrows, &r, &c)) return;
  slope_row s;
  slope_row_init(&p, w.grow0 + r, &s);
  float win[9];
  out[(r - row0) * w.cols + c] = tr_window3(&w, &p.nd, p.compute_edges, r, c, win)
                                     ? slope_cell(&s, win[0], win[1], win[2], win[3], win[5], win[6], win[7], win[8])
                                     : p.dst_nodata;
}

__global__ void aspect_cells(tr_gradient_params p, tr_window w, int64_t row0, int64_t nrows, float *out) {
  int64_t r, c;
  if (!tr_cell_of(w, row0, nrows, &r, &c)) return;
  float win[9];
  out[(r - row0) * w.cols + c] =
      tr_window3(&w, &p.nd, p.compute_edges, r, c, win) ? aspect_cell(&p, win) : p.dst_nodata;
}

}  // namespace

extern "C" int tr_slope_gpu(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out,
                            void *stream) {
  const tr_gradient_params *p = static_cast<const tr_gradient_params *>(params);
  if (p->geographic) return 1;
  if (nrows <= 0) return 0;
  slope_cells<<<tr_cells_grid(w, nrows), tr_cells_block(), 0, static_cast<cudaStream_t>(stream)>>>(*p, *w, row0, nrows,
                                                                                        static_cast<float *>(out));
  return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int tr_aspect_gpu(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out,
                             void *stream) {
  const tr_gradient_params *p = static_cast<const tr_gradient_params *>(params);
  if (nrows <= 0) return 0;
  aspect_cells<<<tr_cells_grid(w, nrows), tr_cells_block(), 0, static_cast<cudaStream_t>(stream)>>>(*p, *w, row0, nrows,
                                                                                         static_cast<float *>(out));
  return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
}
