/*
 * kernel.h - what a local kernel is, and the table that lists them all
 * (internal to libterrain).
 *
 * A local kernel computes each output cell from the input cells within
 * `halo` cells of it: slope, aspect, hillshade, TRI, ... It is a row of the
 * kernel table (kernel_table.c): the executor, libft's workers (threads or
 * MPI ranks) and, later, the GPU path find kernels there by name and never
 * include a kernel's own header. Adding a kernel is one file in kernels/,
 * one row in kernel_table.c and one file in tools/.
 *
 * A kernel sees a block: its output cells plus the halo of input around
 * them, always as Float32 (NaN outside the raster), with global coordinates
 * so raster edges are known. It writes rows [row0, row0 + nrows) of the
 * block, all columns, as cells of the row's out_type with `bands` values
 * each, pixel-interleaved. It must be deterministic and side-effect free:
 * any split of a block into row ranges, on any thread or rank, gives the same
 * bytes (libft compares and recomputes row strips).
 */
#ifndef TR_KERNEL_H
#define TR_KERNEL_H

#include <gdal.h>
#include <stddef.h>
#include <stdint.h>

/* A block of a local kernel. `in` points at input cell (-halo, -halo) of the
 * block (the halo's corner); rows of `in` are `in_stride` floats apart. */
typedef struct {
  const float *in;
  int64_t in_stride;
  int64_t halo;
  int64_t rows, cols;          /* output cells of the block */
  int64_t grow0, gcol0;        /* global position of output cell (0, 0) */
  int64_t raster_rows, raster_cols;
  /* A kernel run over a source (executor.h, tr_run_kernel_source; e.g.
   * interpolation's points) reads its tile's input here, plain bytes the
   * source made for this tile; `in` then holds no data. NULL otherwise. */
  const void *aux;
} tr_window;

/* Input value at block-local (r, c); r and c may reach halo cells outside. */
static inline float tr_at(const tr_window *w, int64_t r, int64_t c) {
  return w->in[(r + w->halo) * w->in_stride + (c + w->halo)];
}

/* Pointer to input cell (r, 0) of the block. */
static inline const float *tr_row(const tr_window *w, int64_t r) {
  return w->in + (r + w->halo) * w->in_stride + w->halo;
}

/* The CPU function of a kernel: params is the kernel's own plain-data struct
 * (params_size bytes; copied to other ranks, so no pointers). Returns 0. */
typedef int (*tr_kernel_cpu_fn)(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out);

/* The GPU function of a kernel: the same contract over a device block. No row
 * has one yet; the slot is where CUDA versions go. */
typedef int (*tr_kernel_gpu_fn)(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out,
                                void *stream);

typedef struct tr_kernel {
  const char *name;        /* unique; also its name in libft's registry */
  int halo;                /* input cells needed around each output cell */
  size_t params_size;
  GDALDataType out_type;   /* Byte, Int16, Int32, UInt32, Float32 or Float64 */
  int bands;               /* output values per cell */
  tr_kernel_cpu_fn cpu;
  tr_kernel_gpu_fn gpu;    /* NULL: CPU only */
} tr_kernel;

/* The table: rows in a fixed order (the index is what libft carries). */
size_t tr_kernel_count(void);
const tr_kernel *tr_kernel_at(size_t i);
/* The row named `name`, or NULL; *index receives its position when not NULL. */
const tr_kernel *tr_kernel_find(const char *name, size_t *index);

#endif
