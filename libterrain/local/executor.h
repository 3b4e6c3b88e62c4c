/*
 * executor.h - the local runner: runs a kernel of the table over the tile
 * grid (internal to libterrain).
 *
 * A kernel file's library call (tr_slope, tr_hillshade, ...) is one call to
 * tr_run_kernel with the kernel's name and a prepare function that turns the
 * command's options and the opened input into the kernel's params. The
 * runner owns everything else: tiling, reading windows with the row's halo,
 * threads, ranks, --ft dual, the ordered sink, progress, statistics, and
 * the temporary output's commit or deletion (core/run.h).
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

#endif
