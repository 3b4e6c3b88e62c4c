/*
 * hillshade.cu - GPU version of hillshade (the kernel table's GPU slot;
 * kernel.h's contract): one thread per cell, each running the CPU's
 * per-cell code (hillshade_cell.h) as the CPU's edge/nodata path does:
 * gdaldem's 3x3 rules, its integer rounding columns (ms), then the shade.
 * The row constants come from the host (hs_row_init, libm's sin and cos),
 * passed by value; geographic rasters, whose constants change per row, are
 * declined (return 1). Bytes: within one grey level of the CPU's, since
 * a / sqrt(b) is exact here and gdaldem's SSE estimate on x86-64 CPUs.
 */
#include "cells.cuh"
#include "hillshade_cell.h"

namespace {

__global__ void hillshade_cells(tr_gradient_params p, hs_row h, tr_window w, int64_t row0, int64_t nrows,
                                uint8_t *out) {
  int64_t r, c;
  if (!tr_cell_of(w, row0, nrows, &r, &c)) return;
  float win[9];
  uint8_t v = 0;
  if (tr_window3(&w, &p.nd, p.compute_edges, r, c, win)) {
    const int64_t gr = w.grow0 + r, gc = w.gcol0 + c;
    const int interior = gr >= 1 && gr < w.raster_rows - 1;
    const int ms = interior && gc >= 1 && gc < h.ms_end && raw_clean(&w, &p.nd, r, c);
    v = hs_byte(hs_value(&p, &h, win, ms));
  }
  out[(r - row0) * w.cols + c] = v;
}

}  // namespace

extern "C" int tr_hillshade_gpu(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out,
                                void *stream) {
  const tr_gradient_params *p = static_cast<const tr_gradient_params *>(params);
  if (p->geographic) return 1;
  if (nrows <= 0) return 0;
  hs_row h;
  hs_row_init(p, w->grow0 + row0, w->raster_cols, &h);
  hillshade_cells<<<tr_cells_grid(w, nrows), tr_cells_block(), 0, static_cast<cudaStream_t>(stream)>>>(*p, h, *w, row0, nrows,
                                                                       static_cast<uint8_t *>(out));
  return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
}
