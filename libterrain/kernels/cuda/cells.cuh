/*
 * cells.cuh - the launch shape the GPU kernels share (internal to
 * libterrain): one thread per output cell of rows [row0, row0 + nrows) of a
 * block, in 32 x 8 thread blocks (a warp along a row, so reads of the
 * window and writes of the cells coalesce).
 */
#ifndef TR_CELLS_CUH
#define TR_CELLS_CUH

#include <cuda_runtime.h>

#include "kernel.h"

static inline dim3 tr_cells_block() { return dim3(32, 8); }

static inline dim3 tr_cells_grid(const tr_window *w, int64_t nrows) {
  const dim3 b = tr_cells_block();
  return dim3((unsigned)((w->cols + b.x - 1) / b.x), (unsigned)((nrows + b.y - 1) / b.y));
}

/* The cell (r, c) of this thread, block-local; false when past the block. */
__device__ static inline bool tr_cell_of(const tr_window &w, int64_t row0, int64_t nrows, int64_t *r, int64_t *c) {
  *c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  *r = row0 + (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
  return *c < w.cols && *r < row0 + nrows;
}

#endif
