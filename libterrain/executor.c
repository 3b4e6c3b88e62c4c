/*
 * executor.c - local kernels over the tile grid, on OpenMP threads.
 *
 * Each thread takes the next tile (dynamic schedule), reads the tile's
 * window plus a one-cell halo under the input lock, computes it, and hands
 * it to the writer in tile order (an OpenMP ordered region). Reading tile
 * i+1, computing tile i and writing tile i-1 overlap; the writes happen in
 * the same order for any thread count, so the GDAL block cache flushes the
 * same way and the output file is the same bytes.
 *
 * Memory: two buffers per thread, (tile+2)^2 and tile^2 floats, plus the
 * GDAL block cache (the command caps it); nothing scales with the raster.
 */
#include "executor.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"

#define TR_DEFAULT_TILE 512
#define TR_MAX_TILE 16384

int tr_run_local(const tr_run_opts *run, tr_input *in, const tr_local_job *job, const char *dst,
                 tr_error *err) {
  if (run->threads < 0) return tr_fail(err, TR_EUSAGE, "--threads must be 0 (all cores) or more");
  if (run->tile_size < 0 || run->tile_size > TR_MAX_TILE)
    return tr_fail(err, TR_EUSAGE, "--tile-size must be between 1 and %d", TR_MAX_TILE);
  const int64_t tile = run->tile_size ? run->tile_size : TR_DEFAULT_TILE;
  const int threads = run->threads ? run->threads : omp_get_num_procs();

  tr_output out;
  int status = tr_output_create(&out, in, dst, run->format, run->creation_options, GDT_Float32,
                                job->dst_has_nodata, job->dst_nodata, err);
  if (status) return status;

  tr_grid g;
  tr_grid_init(&g, in->rows, in->cols, tile);
  const int64_t ntiles = tr_grid_count(&g);
  if (run->progress && !run->progress(0.0, NULL, run->progress_user)) status = TR_EINTERRUPTED;
  tr_error first = {{0}};

#pragma omp parallel num_threads(threads)
  {
    const int64_t in_stride = tile + 2;
    float *inbuf = malloc((size_t)(in_stride * in_stride) * sizeof(float));
    float *outbuf = malloc((size_t)(tile * tile) * sizeof(float));
    if (!inbuf || !outbuf) {
#pragma omp critical(tr_exec_status)
      if (!status) status = tr_fail(&first, TR_ENOMEM, "out of memory for tile buffers");
    }
#pragma omp for ordered schedule(dynamic, 1)
    for (int64_t i = 0; i < ntiles; i++) {
      tr_tile t = tr_grid_tile(&g, i);
      tr_error lerr;
      int st;
#pragma omp atomic read
      st = status;
      if (!st) {
#pragma omp critical(tr_exec_read)
        st = tr_input_read_f32(in, t.row0 - 1, t.col0 - 1, t.rows + 2, t.cols + 2, inbuf,
                               t.cols + 2, &lerr);
      }
      if (!st) {
        tr_window w = {inbuf, t.cols + 2, t.rows, t.cols, t.row0, t.col0, in->rows, in->cols};
        if (job->fn(job->params, &w, 0, t.rows, outbuf) != 0)
          st = tr_fail(&lerr, TR_EINTERNAL, "%s kernel failed on tile %lld", job->name, (long long)i);
      }
#pragma omp ordered
      {
        if (!st && !status) {
          st = tr_output_write_f32(&out, t.row0, t.col0, t.rows, t.cols, outbuf, t.cols, &lerr);
          if (!st && run->progress &&
              !run->progress((double)(i + 1) / (double)ntiles, NULL, run->progress_user))
            st = tr_fail(&lerr, TR_EINTERRUPTED, "interrupted");
        }
        if (st && !status) {
          first = lerr;
#pragma omp atomic write
          status = st;
        }
      }
    }
    free(inbuf);
    free(outbuf);
  }

  if (status) {
    if (err) *err = first;
    tr_output_abort(&out);
    return status;
  }
  return tr_output_commit(&out, err);
}
