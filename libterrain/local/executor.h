/*
 * executor.h - runs a local kernel over the tile grid (internal).
 *
 * A local kernel computes each output cell from a small neighbourhood (a
 * halo of one cell) of the input: slope, aspect, ... The executor owns
 * everything around it: tiling, reading windows with halo, threads, the
 * ordered writer, progress, statistics of the output, and fault tolerance,
 * so no tool wires those itself.
 */
#ifndef TR_EXECUTOR_H
#define TR_EXECUTOR_H

#include "raster.h"
#include "terrain.h"
#include "window3.h"

/* Computes output rows [row0, row0 + nrows) of block w (all its columns)
 * into out (nrows x w->cols floats). Deterministic and side-effect free:
 * any split of a block into row ranges gives the same bytes. */
typedef int (*tr_local_fn)(const void *params, const tr_window *w, int64_t row0, int64_t nrows,
                           float *out);

typedef struct {
  const char *name;       /* also the kernel's name in libft's registry */
  tr_local_fn fn;
  const void *params;     /* plain data, params_size bytes */
  size_t params_size;
  float dst_nodata;       /* value of cells without a result */
  int dst_has_nodata;     /* declare dst_nodata as the output's nodata */
} tr_local_job;

/* Runs job over `in` and writes dst (Float32, nodata dst_nodata). */
int tr_run_local(const tr_run_opts *run, tr_input *in, const tr_local_job *job, const char *dst,
                 tr_error *err);

#endif
