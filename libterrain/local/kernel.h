/*
 * kernel.h - what a local kernel is, and the table that lists them all
 * (internal to libterrain).
 *
 * A local kernel computes each output cell from the input cells within
 * `halo` cells of it: slope, aspect, hillshade, TRI, ... It is a row of the
 * kernel table (kernel_table.c): the executor, libft's workers (threads or
 * MPI ranks) and, later, the GPU path find kernels there by name and never
 * include a kernel's own header. Adding a kernel is one file in kernels/
 * (ending in `const tr_kernel tr_kernel_NAME = {.name = ..., .cpu = ...}`,
 * designated initializers, unused slots left out), one name in
 * kernel_table.c's list and one file in tools/.
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

/* Functions the GPU versions share with the CPU ones are compiled for both
 * (nvcc defines __CUDACC__). */
#ifdef __CUDACC__
#define TR_HD __host__ __device__
#else
#define TR_HD
#endif

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
TR_HD static inline float tr_at(const tr_window *w, int64_t r, int64_t c) {
  return w->in[(r + w->halo) * w->in_stride + (c + w->halo)];
}

/* Pointer to input cell (r, 0) of the block. */
TR_HD static inline const float *tr_row(const tr_window *w, int64_t r) {
  return w->in + (r + w->halo) * w->in_stride + w->halo;
}

/* The CPU function of a kernel: params is the kernel's own plain-data struct
 * (params_size bytes; copied to other ranks, so no pointers). Returns 0. */
typedef int (*tr_kernel_cpu_fn)(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out);

/* The GPU function of a kernel (kernels/cuda/, built only where nvcc is,
 * into the CUDA module: device_module.h; a row has one when the module's
 * table names the row):
 * the same contract over a device block: w->in and out are device memory,
 * params is host memory (passed to the device by value), and the work is
 * queued on `stream` (a cudaStream_t) without waiting for it. Returns 0, 1
 * when it does not handle these params (the caller runs the CPU version:
 * the bytes are the same), or a negative code. The bytes equal the CPU
 * version's (CUDA built without FMA contraction), except where a row says
 * otherwise. */
typedef int (*tr_kernel_gpu_fn)(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out,
                                void *stream);


/* A row's output invariant (--ft replay checks every launch with it, see
 * launch.c): the number of cells among the block's w->rows x w->cols cells
 * in `out` that this row cannot produce from this window (a slope outside
 * [0, 90] degrees, a roughness beyond the window's span). Cheap: one pass
 * over the window and one over the cells. It must never count a cell the
 * row really produces; a cell it counts that a re-run reproduces is taken
 * as the row's own value, not a fault. */
typedef int64_t (*tr_kernel_check_fn)(const void *params, const tr_window *w, const void *out);

typedef struct tr_kernel {
  const char *name;        /* unique; also its name in libft's registry */
  int halo;                /* input cells needed around each output cell */
  size_t params_size;
  GDALDataType out_type;   /* Byte, Int16, Int32, UInt32, Float32 or Float64 */
  int bands;               /* output values per cell */
  tr_kernel_cpu_fn cpu;
  tr_kernel_check_fn check; /* NULL: no invariant (every value of out_type is possible) */
} tr_kernel;

/* The table: rows in a fixed order (the index is what libft carries). */
size_t tr_kernel_count(void);
const tr_kernel *tr_kernel_at(size_t i);
/* The row named `name`, or NULL; *index receives its position when not NULL. */
const tr_kernel *tr_kernel_find(const char *name, size_t *index);

/*
 * In-place iterative kernels. Some kernels are a number of passes over the
 * tile's window, written in place (an iterated smoothing), and then a last
 * step that turns the window into output cells. The row's cpu function does
 * all of it on a private copy (what --ft dual and its workers call); the
 * iterative form below lets the local runner launch each pass on its own,
 * so --ft replay tracks them as separate launches: pass 1 reads the window
 * as read and writes a work window, passes 2..n read and write the work
 * window in place, `finish` reads it and writes the output cells. Both
 * forms give the same bytes. A kernel is iterative when kernel_table.c's
 * TR_KERNEL_ITER_LIST names it.
 */
typedef struct tr_kernel_iter {
  const tr_kernel *row;
  int (*passes)(const void *params);
  /* One pass over a whole window (rows x cols floats, rows `stride` apart,
   * halo included) from `in` into `out`; in == out is allowed (in place).
   * first: `in` is the window as read (nodata as the source has it). */
  int (*pass)(const void *params, int first, const float *in, float *out, int64_t stride, int64_t rows,
              int64_t cols);
  tr_kernel_cpu_fn finish; /* the block's cells from the last pass's window */
} tr_kernel_iter;

/* The iterative form of row k, or NULL. */
const tr_kernel_iter *tr_kernel_iter_of(const tr_kernel *k);

#endif
