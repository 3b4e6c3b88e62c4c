/*
 * fill_dem.c - `terrafort fill` as a library call: depression filling of a
 * DEM file on the AAP engine (fill.h), with GDAL behind the engine's tile
 * loader and writer.
 *
 * The engine keeps only W (one float per cell) and asks for elevation tiles
 * through load_z when a fragment runs a round, from an LRU cache of
 * z_cache_mb; finished fragments come back through write_w (on rank 0 under
 * mpirun), which writes them to the temporary output and takes their
 * statistics partials. So a run needs about 1.0x the input (as Float32) for
 * W, plus the Z cache (16 MB by default), plus the GDAL block cache (the
 * command sets 16 MB for fill), plus a tile's flood queues per thread.
 */
#include <gdal.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "fill.h"
#include "raster.h"
#include "stats.h"
#include "terrain.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

#define TR_FILL_DEFAULT_TILE 512

void tr_fill_dem_opts_init(tr_fill_dem_opts *o) {
  memset(o, 0, sizeof *o);
  tr_run_opts_init(&o->run);
  o->staleness = -1;
  o->z_cache_mb = -1;
}

typedef struct {
  const tr_run_opts *run;
  tr_input *in;
  tr_output *out;
  int64_t tile, tile_cols, ntiles, written;
  int64_t mine, started;   /* fragments this rank runs, and how many began */
  unsigned char *seen;     /* per fragment: its first round (PEval) began */
  tr_tile_stats *stats;
  int has_nodata;
  float nodata;
  int status;
  tr_error first;
} fill_io_state;

/* Progress: a fragment's first elevation load is its PEval, the first half
 * of the work; the finished tiles written are the second half. (How many
 * IncEval rounds come in between is not known in advance.) */
static int report(fill_io_state *s, double frac, tr_error *e) {
  if (s->run->progress && !s->run->progress(frac, NULL, s->run->progress_user))
    return tr_fail(e, TR_EINTERRUPTED, "interrupted");
  return TR_OK;
}

static int load_z(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst) {
  fill_io_state *s = user;
  tr_error e;
  int st = tr_input_read_f32(s->in, row0, col0, rows, cols, dst, cols, &e);
  /* the window is the tile plus its halo, clipped: its centre is in the tile */
  int64_t i = ((row0 + rows / 2) / s->tile) * s->tile_cols + (col0 + cols / 2) / s->tile;
  if (!st && s->seen && i >= 0 && i < s->ntiles && !s->seen[i]) {
    s->seen[i] = 1;
    s->started++;
    st = report(s, 0.5 * (double)s->started / (double)s->mine, &e);
  }
  if (st && !s->status) {
    s->status = st;
    s->first = e;
  }
  return st ? -1 : 0;
}

static int write_w(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols, const float *w) {
  fill_io_state *s = user;
  if (s->status) return -1;
  tr_error e;
  int64_t i = (row0 / s->tile) * s->tile_cols + col0 / s->tile;
  if (s->stats && i >= 0 && i < s->ntiles) tr_tile_stats_of(&s->stats[i], w, GDT_Float32, 1, rows * cols, s->has_nodata, s->nodata);
  int st = tr_output_write(s->out, row0, col0, rows, cols, w, GDT_Float32, cols, &e);
  s->written++;
  if (!st) st = report(s, 0.5 + 0.5 * (double)s->written / (double)s->ntiles, &e);
  if (st) {
    s->status = st;
    s->first = e;
    return -1;
  }
  return 0;
}

static int check_opts(const tr_fill_dem_opts *o, tr_fill_opts *fo, tr_error *err) {
  if (o->run.ft != TR_FT_OFF)
    return tr_fail(err, TR_EUSAGE, "--ft is for local kernels (slope, aspect); fill runs on the AAP engine");
  if (o->run.threads < 0) return tr_fail(err, TR_EUSAGE, "--threads must be 0 (all cores) or more");
  if (o->run.tile_size < 0) return tr_fail(err, TR_EUSAGE, "--tile-size must be positive");
  tr_fill_opts_default(fo);
  if (o->schedule && tr_aap_schedule_parse(o->schedule, &fo->aap.schedule) != 0)
    return tr_fail(err, TR_EUSAGE, "--schedule: '%s' is not one of aap, bsp, ap, ssp, random", o->schedule);
  if (o->staleness >= 0) fo->aap.staleness = o->staleness;
  if (fo->aap.schedule == TR_AAP_SCHED_SSP && fo->aap.staleness < 0) fo->aap.staleness = 1;
  if (o->ds_max_ms > 0) fo->aap.ds_max = o->ds_max_ms / 1000.0;
  if (o->straggler_ratio > 0) fo->aap.straggler_ratio = o->straggler_ratio;
  if (o->l_bottom > 0) fo->aap.L_bottom = o->l_bottom;
  if (o->l_up > 0) fo->aap.L_up = o->l_up;
  if (fo->aap.L_bottom > fo->aap.L_up)
    return tr_fail(err, TR_EUSAGE, "--l-bottom (%d) is above --l-up (%d)", fo->aap.L_bottom, fo->aap.L_up);
  if (fo->aap.straggler_ratio <= 1 || isnan(fo->aap.straggler_ratio))
    return tr_fail(err, TR_EUSAGE, "--straggler-ratio must be above 1");
  if (o->epsilon_step < 0 || isnan(o->epsilon_step))
    return tr_fail(err, TR_EUSAGE, "--epsilon-step must be 0 (one ulp) or positive");
  fo->epsilon = o->epsilon;
  fo->eps = (float)o->epsilon_step;
  fo->aap.threads = o->run.threads ? o->run.threads : omp_get_num_procs();
  fo->tile_rows = fo->tile_cols = o->run.tile_size ? o->run.tile_size : TR_FILL_DEFAULT_TILE;
  return TR_OK;
}

int tr_fill_dem(const tr_fill_dem_opts *opts, const char *src, const char *dst, tr_error *err) {
  tr_fill_opts fo;
  int st = check_opts(opts, &fo, err);
  if (st) return st;
  GDALDataType ot = opts->out_type ? (GDALDataType)opts->out_type : GDT_Float32;
  if (opts->epsilon && ot != GDT_Float32 && ot != GDT_Float64)
    return tr_fail(err, TR_EUSAGE, "--epsilon needs a floating-point output type (-ot Float32 or Float64)");

  tr_input in;
  st = tr_dist_agree(tr_input_open(&in, src, opts->run.band, err), err);
  if (st) {
    tr_input_close(&in);
    return st;
  }
  fo.rows = in.rows;
  fo.cols = in.cols;
  fo.has_nodata = in.has_nodata;
  fo.nodata = (float)in.nodata;
  /* A fixed cache, not a share of the DEM: it only has to hold the windows
   * of the fragments running now and soon (about 1 MB each at 512 cells). */
  double cache_mb = opts->z_cache_mb >= 0 ? opts->z_cache_mb : 16.0;
  fo.z_cache_bytes = (size_t)(cache_mb * (1 << 20));

  const int rank = tr_dist_rank();
  tr_output out;
  memset(&out, 0, sizeof out);
  fill_io_state s;
  memset(&s, 0, sizeof s);
  s.run = &opts->run;
  s.in = &in;
  s.out = &out;
  s.tile = fo.tile_rows;
  s.tile_cols = (in.cols + s.tile - 1) / s.tile;
  s.ntiles = ((in.rows + s.tile - 1) / s.tile) * s.tile_cols;
  s.has_nodata = in.has_nodata;
  s.nodata = (float)in.nodata;
  /* the engine runs fragment f on rank f mod N */
  s.mine = (s.ntiles - rank + tr_dist_size() - 1) / tr_dist_size();
  s.seen = calloc((size_t)s.ntiles, 1);
  const int want_stats = opts->run.stats || opts->run.stats_json;
  if (!s.seen) st = tr_fail(err, TR_ENOMEM, "out of memory");
  if (rank == 0 && !st)
    st = tr_output_create(&out, &in, dst, opts->run.format, opts->run.creation_options, ot, 1, in.has_nodata, in.nodata,
                          err);
  if (!st && want_stats) {
    s.stats = calloc((size_t)s.ntiles, sizeof *s.stats);
    if (!s.stats) st = tr_fail(err, TR_ENOMEM, "out of memory");
  }
  st = tr_dist_agree(st, err);
  if (st) goto done;

#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm world = MPI_COMM_WORLD;
  if (tr_dist_size() > 1) {
    fo.backend = TR_FILL_MPI;
    fo.mpi_comm = &world;
  }
#endif
  if (rank == 0 && opts->run.progress && !opts->run.progress(0.0, NULL, opts->run.progress_user))
    st = tr_fail(err, TR_EINTERRUPTED, "interrupted");
  tr_fill_io io = {load_z, write_w, &s};
  tr_aap_stats astats;
  memset(&astats, 0, sizeof astats);
  if (!st) {
    char msg[256] = "";
    int rc = tr_fill_run(&fo, &io, &astats, msg, sizeof msg);
    if (s.status) {
      st = s.status;
      if (err) *err = s.first;
    } else if (rc) {
      st = tr_fail(err, rc == TR_AAP_ENOMEM ? TR_ENOMEM : TR_EINTERNAL, "fill of '%s' failed: %s", src,
                   msg[0] ? msg : tr_aap_strerror(rc));
    }
    if (!st && rank == 0 && opts->aap_stats) {
      FILE *f = fopen(opts->aap_stats, "w");
      if (!f || tr_aap_stats_json(&astats, f) != 0)
        st = tr_fail(err, TR_EOUTPUT, "cannot write engine statistics '%s'", opts->aap_stats);
      if (f) fclose(f);
    }
    tr_aap_stats_free(&astats);
  }
  st = tr_dist_agree(st, err);
  if (!st && want_stats)
    st = tr_dist_agree(tr_stats_publish(&opts->run, rank == 0 ? out.ds : NULL, 1, s.stats, s.ntiles, err), err);
  if (!st && rank == 0) st = tr_output_commit(&out, err);
  st = tr_dist_agree(st, err);

done:
  if (st && rank == 0 && out.final_path) tr_output_abort(&out);
  free(s.stats);
  free(s.seen);
  tr_input_close(&in);
  return st;
}
