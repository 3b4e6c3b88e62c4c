/*
 * executor.h - the local runner: runs a kernel of the table over the tile
 * grid (internal to libterrain).
 *
 * A kernel file's library call (tr_slope, tr_hillshade, ...) is one call to
 * tr_run_kernel with the kernel's name and a prepare function that turns the
 * command's options and the opened input into the kernel's params. The
 * runner owns everything else: tiling, reading windows with the row's halo,
 * threads, ranks, --ft dual, the ordered sink, progress, statistics, and
 * the temporary output's commit or deletion (run/run.h).
 */
#ifndef TR_EXECUTOR_H
#define TR_EXECUTOR_H

#include "raster.h"
#include "sink.h"
#include "terrain.h"

/* Fills params (the row's params_size bytes, zeroed) from the input and the
 * command's options `opts`; may set prod's nodata (type and bands come from
 * the row). Runs on every rank with the same input. Returns TR_OK or fails. */
typedef int (*tr_prepare_fn)(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err);

int tr_run_kernel(const tr_run_opts *run, const char *kernel, tr_prepare_fn prepare, const void *opts,
                  const char *src, const char *dst, tr_error *err);

/* Does prepare need the band's exact range over the whole raster (*wants
 * 1)? Runs on every rank with the opened input; a failure here is left for
 * prepare to report. */
typedef void (*tr_wants_range_fn)(const tr_input *in, const void *opts, int *wants);

/* tr_run_kernel for a kernel whose params may need the band's exact
 * minimum and maximum over the whole raster (color-relief's percentages):
 * when wants says so on any rank, each rank finds the range of its share of
 * the rows and the ranks combine theirs (tr_dist_min); prepare finds it in
 * the input's range_* fields, the same on every rank. */
int tr_run_kernel_ranged(const tr_run_opts *run, const char *kernel, tr_wants_range_fn wants, tr_prepare_fn prepare,
                         const void *opts, const char *src, const char *dst, tr_error *err);

/* A growable byte buffer a source fills with one tile's input. */
typedef struct {
  void *p;
  size_t len, cap;
} tr_bytes;

/* Input that is not a raster window (interpolation: a point set). The
 * output grid is `grid`'s (size, georeferencing, CRS; no dataset). For each
 * tile the runner asks tile_input for the tile's input bytes, self-contained
 * (no pointers: under --ft dual with MPI they travel to another rank with
 * the params), and the kernel reads them as w->aux. tile_input runs on
 * several threads at once; it must give the same bytes for the same tile
 * on every rank. The kernel row's halo must be 0. */
typedef struct {
  const tr_input *grid;
  const void *params;   /* the row's params_size bytes */
  tr_product prod;      /* the output; its type and bands must be the row's */
  void *ctx;
  int (*tile_input)(void *ctx, const tr_tile *t, tr_bytes *buf, tr_error *e);
  int64_t held; /* bytes the source keeps for the whole run (the points), counted in --mem */
  int writer_only; /* under mpirun every tile is the writer's (rank 0's): the other ranks
                      compute none and need no input (a source only rank 0 holds) */
} tr_source;

/* Runs `kernel` over the source's grid into dst, like tr_run_kernel. */
int tr_run_kernel_source(const tr_run_opts *run, const char *kernel, const tr_source *src, const char *dst,
                         tr_error *err);

/* The lock around GDAL calls of a local run: the input's reads (unless it is
 * read directly) and the sink's writes, which GDAL's block cache ties
 * together (executor.c). A pthread mutex, not an OpenMP critical section:
 * libgomp's waiters spin, and on a machine with as many cores as tile
 * threads the spinning took the cores GDAL's compression threads needed. */
void tr_exec_io_lock(void);
void tr_exec_io_unlock(void);

#endif
