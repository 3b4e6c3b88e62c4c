/*
 * run.c - the run path both runners share (see run.h).
 */
#include "run.h"

#include <omp.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dist.h"
#include "step.h"
#include "rank_progress.h"
#include "side_file.h"
#include "written.h"

static void job_close(tr_job *j) {
  if (j->sink_open) {
    tr_sink_abort(&j->sink);
    tr_sink_close(&j->sink);
    j->sink_open = 0;
  }
  if (j->in_open) tr_input_close(&j->in);
  j->in_open = 0;
}

/* The checks and set-up every job shares, before its input. */
static int job_start(tr_job *j, const tr_run_opts *run, tr_error *err) {
  memset(j, 0, sizeof *j);
  j->run = run;
  if (run->threads < 0) return tr_fail(err, TR_EUSAGE, "--threads must be 0 (all cores) or more");
  if (run->tile_size < 0 || run->tile_size > TR_MAX_TILE)
    return tr_fail(err, TR_EUSAGE, "--tile-size must be between 1 and %d", TR_MAX_TILE);
  if (run->hist_buckets < TR_HIST_NONE || run->hist_buckets > TR_HIST_MAX_BUCKETS)
    return tr_fail(err, TR_EUSAGE, "--hist-buckets must be between 0 (none) and %d", TR_HIST_MAX_BUCKETS);
  if (run->npercentiles < 0 || run->npercentiles > TR_MAX_PERCENTILES || (run->npercentiles && !run->percentiles))
    return tr_fail(err, TR_EUSAGE, "--percentiles takes 1 to %d values", TR_MAX_PERCENTILES);
  for (int k = 0; k < run->npercentiles; k++)
    if (!(run->percentiles[k] >= 0 && run->percentiles[k] <= 100))
      return tr_fail(err, TR_EUSAGE, "--percentiles: %g is not in [0, 100]", run->percentiles[k]);
  int st = tr_inject_parse(run->inject, &j->inject, err);
  if (st) return st;
  j->threads = tr_run_threads(run);
  j->rank = tr_rank();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  j->t_open = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  j->nranks = tr_dist_size();
  return TR_OK;
}

static void job_plan(tr_job *j) {
  const tr_run_opts *run = j->run;
  tr_grid_init(&j->grid, j->in.rows, j->in.cols, run->tile_size ? run->tile_size : TR_DEFAULT_TILE);
  j->ntiles = tr_grid_count(&j->grid);
}

int tr_job_open(tr_job *j, const tr_run_opts *run, const char *src, tr_error *err) {
  int st = job_start(j, run, err);
  if (st) return st;
  st = tr_input_open_threads(&j->in, src, run->band, j->threads, err);
  j->in_open = st == TR_OK;
  st = tr_step_end(run, st, err);
  if (st) {
    job_close(j);
    return st;
  }
  job_plan(j);
  return TR_OK;
}

int tr_job_open_grid(tr_job *j, const tr_run_opts *run, const tr_input *grid, tr_error *err) {
  int st = job_start(j, run, err);
  if (st) return st;
  j->in = *grid; /* borrowed: in_open stays 0, the caller keeps it */
  j->in.ds = NULL;
  j->in.band = NULL;
  job_plan(j);
  return TR_OK;
}

/* tr_job_create's check of every file the run writes (run.h). */
static int outputs_check(const tr_job *j, const char *dst, tr_error *err) {
  const tr_run_opts *r = j->run;
  /* the histogram's side file (GTiff: OUTPUT.aux.xml) is written as well */
  char aux[4096] = "";
  if (dst && tr_stats_hist_wanted(r) && snprintf(aux, sizeof aux, "%s.aux.xml", dst) >= (int)sizeof aux)
    return tr_fail(err, TR_EUSAGE, "output name too long for its histogram's side file: %.200s...", dst);
  const tr_file_role outs[] = {{dst, "output"},
                               {r->stats_json, TR_ROLE_STATS_JSON},
                               {r->ft_report, TR_ROLE_FT_REPORT},
                               j->extra_outs[0],
                               {aux[0] ? aux : NULL, "the histogram's side file (--stats)"}};
  tr_file_role reads[sizeof r->reads / sizeof r->reads[0] + sizeof j->extra_reads / sizeof j->extra_reads[0]];
  int n = 0;
  for (size_t k = 0; k < sizeof r->reads / sizeof r->reads[0]; k++) reads[n++] = r->reads[k];
  for (size_t k = 0; k < sizeof j->extra_reads / sizeof j->extra_reads[0]; k++) reads[n++] = j->extra_reads[k];
  return tr_outputs_refuse(outs, (int)(sizeof outs / sizeof outs[0]), reads, n, &j->in, err);
}

int tr_job_create(tr_job *j, const char *dst, const tr_product *p, tr_sink_mode mode, double progress_from,
                  tr_error *err) {
  int st = outputs_check(j, dst, err);
  if (!st) {
    st = tr_sink_open(&j->sink, j->run, &j->in, dst, p, &j->grid, mode, j->threads, err);
    j->sink_open = 1;
  }
  j->sink.progress_from = progress_from;
  /* this rank's steps: its tiles handed over, and before them as many
   * loads when the writer's first share is the loading's (graph runs) */
  tr_rank_progress_stage(j->run, tr_sink_owned(&j->sink), progress_from > 0 ? 2 : 1);
  for (int h = 0; h < j->inject.n_hold; h++)
    if (j->inject.hold_rank[h] == j->rank) j->sink.hold_ms = j->inject.hold_ms[h];
  st = tr_step_end(j->run, st, err);
  if (st) job_close(j);
  return st;
}

void tr_job_cache_plan(tr_job *j, int mb) {
  j->cache_plan_mb = mb;
  tr_io_cache_plan(j->run, mb);
}

int tr_job_finish(tr_job *j, int status, tr_error *err) {
  tr_error e = {{0}};
  if (status && err) e = *err;
  int st = status;
  if (j->sink_open) {
    tr_sink_fail(&j->sink, status, &e);
    st = tr_sink_drain(&j->sink, &e);
  }
  /* After the tiles only the writer's outcome matters: the other ranks
   * report their status and hand over their statistics partials and go on
   * without waiting (a rank late with its tiles or its statistics holds the
   * writer alone); the writer's exit status is the run's, and mpirun fails
   * when it does. Every rank makes the same libcoll calls whatever its
   * status, so none is left waiting for a message that never comes. */
  /* A lost rank outranks the failures it causes (a worker's tiles given
   * up on, a receive abandoned): say which rank it was. */
  tr_error lost;
  const int why = st ? tr_dist_check(j->run, &lost) : TR_OK;
  if (why) st = why, e = lost;
  st = tr_dist_report(j->run, st, &e);
  int hist_written = 0;
  if (j->sink_open && tr_stats_wanted(j->run)) {
    GDALDatasetH ds = j->rank == 0 && !st ? j->sink.out.ds : NULL;
    /* --stats-json: written whole under a temporary name by the writer, put
     * in place after the output (io/side_file.h) */
    tr_side_file *side = NULL;
    FILE *json = NULL;
    int s2 = ds && j->run->stats_json ? tr_side_open(j->run->stats_json, "statistics file", &side, &json, &e) : TR_OK;
    if (!s2)
      s2 = tr_stats_publish(j->run, &j->inject, ds, json, j->sink.prod.bands, j->sink.stats, j->ntiles, j->sink.cells,
                            j->sink.prod.type, j->t_open, st ? NULL : &e);
    if (side && s2) tr_side_abort(side);
    else if (side) s2 = tr_side_close(side, &e);
    hist_written = !s2 && ds && j->run->stats;
    if (!st) st = s2;
  }
  if (!st && j->sink_open) {
    char aux[4096] = "";
    if (hist_written && j->sink.out.final_path) snprintf(aux, sizeof aux, "%s.aux.xml", j->sink.out.final_path);
    /* a copy at commit (COG) reads the staged file back: GDAL's cache sized
     * to that copy, not to the tile loop that is over (raster.h). Only ever
     * smaller than the loop's plan, which --mem bounded: a raster so wide
     * that a row of the copy's blocks outgrows it keeps that plan, as before */
    const int copy_mb = j->rank == 0 && j->sink.created ? tr_output_copy_cache_mb(&j->sink.out) : 0;
    if (copy_mb && copy_mb < j->cache_plan_mb) tr_io_cache_plan(j->run, copy_mb);
    st = tr_sink_commit(&j->sink, &e);
    /* the histogram's side file (GTiff and other PAM drivers), moved into
     * place with the output by its commit: one of the files the run wrote
     * (an output held back goes later, its side file with it: held.c) */
    struct stat sb;
    if (!st && aux[0] && !j->run->held && stat(aux, &sb) == 0) tr_output_written(aux);
  }
  /* the side files (--stats-json, --ft-report, --aap-stats) follow the
   * output into place, or go with it */
  if (!st && j->rank == 0) st = tr_side_commit_waiting(&e);
  else tr_side_abort_waiting();
  job_close(j);
  if (st && err) *err = e;
  return st;
}

int tr_run_threads(const tr_run_opts *run) { return run->threads > 0 ? run->threads : omp_get_num_procs(); }

int64_t tr_job_writer_cache(const tr_job *j, const tr_product *p) {
  /* planned as striped (the default GeoTIFF); a tiled output's sink keeps less */
  return j->rank == 0 ? tr_sink_row_bytes(&j->grid, p, 0) : 0;
}
