/*
 * run.h - the run path every command shares (internal to libterrain).
 *
 * A folder of its own, the floor between io/ and the runners: it opens
 * rasters and drives the sink (io/), so it cannot sit in core/ (below io/),
 * and both runners (local/, hydro/) stand on it.
 *
 * Both runners (local/executor.c for local kernels, hydro/graph_run.c for AAP
 * programs) go through the same four steps, so each is written once:
 *   tr_job_open    check the shared options, open the input on every rank
 *                  (agreed: all ranks go on or all stop), plan the tile grid;
 *   tr_job_create  rank 0 creates the output under a temporary name and the
 *                  ordered tile sink (io/sink.h) is made ready (agreed);
 *   ... the runner computes tiles and puts them into job->sink ...
 *   tr_job_finish  drain the sink, report every rank's status to the writer
 *                  and publish statistics (libcoll's timeout aggregation, a
 *                  reduce to the writer: the others do not wait), rename the
 *                  output into place or delete it (the writer), close the
 *                  input.
 */
#ifndef TR_RUN_H
#define TR_RUN_H

#include "grid.h"
#include "inject.h"
#include "raster.h"
#include "sink.h"

typedef struct {
  const tr_run_opts *run;
  tr_input in;
  int in_open;
  tr_grid grid;
  int64_t ntiles;
  int threads;       /* resolved: run->threads or all cores */
  int rank, nranks;
  double t_open;     /* CLOCK_MONOTONIC seconds at tr_job_open */
  tr_inject inject;  /* run->inject (or TERRAFORT_INJECT), parsed once here */
  tr_sink sink;
  int sink_open;
  /* What a runner adds to the files tr_job_create checks (set between open
   * and create; NULL paths are none): outputs of its own (--aap-stats) and
   * rasters it reads besides the input (a graph program's extra inputs). */
  tr_file_role extra_outs[1];
  tr_file_role extra_reads[4];
  /* The GDAL block cache the run's tile loop was planned for, in MB
   * (tr_job_cache_plan); 0 until planned. */
  int cache_plan_mb;
} tr_job;

/* Checks run's shared options (threads, tile size, the injection spec),
 * opens src on every
 * rank and plans the grid. On failure the job is closed. Agreed. */
int tr_job_open(tr_job *j, const tr_run_opts *run, const char *src, tr_error *err);

/* As tr_job_open for a run whose input is no raster (interpolation): the
 * output grid is `grid`'s size, georeferencing and CRS (ds NULL; borrowed,
 * the caller keeps it alive and frees it). Not agreed: nothing is opened. */
int tr_job_open_grid(tr_job *j, const tr_run_opts *run, const tr_input *grid, tr_error *err);

/* Refuses, before any work, every file the run writes (the output,
 * --stats-json, --ft-report, extra_outs) that is not a regular file, lacks a
 * writable folder, has too long a name for GDAL, or is a file the run reads
 * (the input and every file GDAL lists for it, run->reads, extra_reads) or
 * another of its outputs (tr_outputs_refuse). Then creates the output for
 * product p (rank 0) and the sink;
 * mode says which rank puts which tile (io/sink.h).
 * progress_from: the share of progress already reported when tiles start
 * coming. Agreed; on failure the job is closed. */
int tr_job_create(tr_job *j, const char *dst, const tr_product *p, tr_sink_mode mode, double progress_from,
                  tr_error *err);

/* Ends the run with the caller's status: the writer (rank 0) learns every
 * rank's status, publishes the statistics and commits or deletes the output;
 * the others return their own status without waiting for that. Closes
 * everything. Returns the status (on rank 0 the lowest failing rank's, with
 * its line in err). */
int tr_job_finish(tr_job *j, int status, tr_error *err);

/* Bytes the writer (rank 0) keeps on top of what reading takes: the sink's
 * row of output tiles (io/sink.h, tr_sink_row_bytes), planned for a striped
 * output (the default GeoTIFF's), so that every block reaches the file once
 * and whole. 0 on other ranks and where a tile is the raster's width. Both
 * runners (local and graph) count it in --mem. */
int64_t tr_job_writer_cache(const tr_job *j, const tr_product *p);

/* The tile loop's GDAL block cache: told to the caller (tr_io_cache_plan)
 * and kept in j->cache_plan_mb, which tr_job_finish's copy at commit (COG)
 * may only lower. */
void tr_job_cache_plan(tr_job *j, int mb);

/* The threads a run uses: --threads, or every core (0). */
int tr_run_threads(const tr_run_opts *run);

#endif
