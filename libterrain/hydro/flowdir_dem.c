/*
 * flowdir_dem.c - tr_flowdir: D8 directions of a DEM file in up to three
 * stages over the shared run path, one after the other:
 *   1. fill (unless o->filled): the "fill" graph program (over the DEM burnt
 *      with o->burn's lines, when given) into the filled
 *      output, or into a scratch GeoTIFF beside the destination (named by
 *      rank 0 for every rank, removed at the end, and after a crash by the
 *      next run's stale-temporary clean-up);
 *   2. directions: the "flowdir" graph program (flowdir_program.c) over the
 *      filled DEM;
 *   3. slope (o->slope): the "d8" local kernel (kernels/d8.c) over it, or
 *      with --method dinf the "dinf_slp" kernel (kernels/dinf_slope.c).
 * Each stage is a complete run (its own temporary output and rename), so
 * memory is the largest stage's, not their sum. Progress is the stages'
 * shares of one 0..1 line. A failure deletes the outputs earlier stages
 * committed, so the call leaves all its outputs or none.
 */
#include <gdal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burn.h"
#include "d8.h"
#include "dinf.h"
#include "dist.h"
#include "step.h"
#include "executor.h"
#include "flowdir.h"
#include "graph.h"
#include "path_max.h"
#include "raster.h"
#include "written.h"

void tr_flowdir_opts_init(tr_flowdir_opts *o) {
  memset(o, 0, sizeof *o);
  o->encoding = TR_DIR_TAUDEM;
}

typedef struct {
  tr_progress_fn fn;
  void *user;
  double base, span;
} stage_progress;

static int stage_cb(double frac, const char *msg, void *user) {
  const stage_progress *s = user;
  return s->fn(s->base + s->span * frac, msg, s->user);
}

/* The run options of one stage: its share of the progress line, statistics
 * only for the directions; --ft for every stage, and a line of the report
 * from each stage when the caller appends them to one (flowgraph), else the
 * kernel's report alone. */
static tr_run_opts stage_run(const tr_run_opts *run, stage_progress *sp, int stage, int nstages, int keep_stats,
                             int keep_report) {
  tr_run_opts r = *run;
  r.stage_of_several = 1; /* the next stage starts on every rank or none */
  if (run->progress) {
    sp->fn = run->progress;
    sp->user = run->progress_user;
    sp->base = (double)stage / nstages;
    sp->span = 1.0 / nstages;
    r.progress = stage_cb;
    r.progress_user = sp;
  }
  if (!keep_stats) {
    r.stats = 0;
    r.stats_json = NULL;
  }
  if (!keep_report) r.ft_report = NULL;
  return r;
}

static int flowdir_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const tr_flowdir_opts *o = opts;
  tr_flowdir_params *p = params;
  p->encoding = (int32_t)o->encoding;
  int st = tr_d8_geom_init(in, &p->geom, err);
  if (st) return st;
  prod->has_nodata = 1;
  prod->nodata = tr_d8_nodata(o->encoding);
  prod->file_type = tr_d8_type(o->encoding);
  return TR_OK;
}

/* The "dinf" program's angle (flowdir.h). */
static int dinf_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const tr_flowdir_opts *o = opts;
  tr_flowdir_params *p = params;
  p->encoding = (int32_t)o->encoding;
  p->method = TR_FLOWDIR_DINF;
  int st = tr_d8_geom_init(in, &p->geom, err);
  if (st) return st;
  prod->type = GDT_Float32;
  prod->has_nodata = 1;
  prod->nodata = TR_DINF_ANG_NODATA;
  prod->file_type = GDT_Float32;
  return TR_OK;
}

/* Rank 0 deletes a raster this call wrote (any driver); with run->held the
 * products are the caller's to delete (held.h), and `path` may be the
 * user's older file. */
static void delete_raster(const tr_run_opts *run, const char *path) {
  if (!path || tr_rank() != 0 || (run->held && !tr_is_scratch_name(path))) return;
  GDALDriverH d = GDALIdentifyDriver(path, NULL);
  if (!d || GDALDeleteDataset(d, path) != CE_None) unlink(path);
}

static int same_path(const char *a, const char *b) { return a && b && !strcmp(a, b); }

int tr_flowdir(const tr_run_opts *run, const tr_graph_opts *g, const tr_flowdir_opts *o, const char *src,
               const char *dir_dst, tr_error *err) {
  /* usage errors come before any file is touched */
  if (!run || !g || !o || !src || !dir_dst) return tr_fail(err, TR_EUSAGE, "flowdir: missing input or output");
  if (!tr_d8_encoding_valid((int)o->encoding))
    return tr_fail(err, TR_EUSAGE, "unknown direction encoding %d (taudem, esri or grass)", (int)o->encoding);
  if (o->filled && o->filled_out)
    return tr_fail(err, TR_EUSAGE, "a filled DEM output makes no sense with an input said to be filled");
  int st = tr_burn_usage(&o->burn, err);
  if (st) return st;
  if (o->filled && o->burn.file)
    return tr_fail(err, TR_EUSAGE,
                   "--burn does not go with --filled: burning comes before the fill (its channels would end in pits "
                   "nothing fills)");
  if (same_path(dir_dst, o->slope) || same_path(dir_dst, o->filled_out) || same_path(o->slope, o->filled_out))
    return tr_fail(err, TR_EUSAGE, "two outputs of flowdir name the same file '%s'",
                   same_path(dir_dst, o->slope) || same_path(dir_dst, o->filled_out) ? dir_dst : o->slope);

  /* the D8 rule's geometry, checked on src itself: found at the direction
   * stage it named the filled DEM's scratch raster, after a whole fill */
  tr_input in;
  st = tr_input_open(&in, src, run->band, err);
  if (!st) {
    tr_d8_geom geom;
    st = tr_d8_geom_init(&in, &geom, err);
    tr_input_close(&in);
  }
  if ((st = tr_step_end(run, st, err))) return st;

  const int nstages = (o->filled ? 1 : 2) + (o->slope ? 1 : 0);
  stage_progress sp[3];
  int stage = 0;
  const char *dem = src;
  char *scratch = NULL;
  tr_run_opts rs;

  if (!o->filled) {
    const char *fel = o->filled_out;
    if (!fel) {
      /* one name on every rank: rank 0's */
      char name[TR_PATH_MAX] = "";
      if (tr_rank() == 0) {
        char *s = tr_output_scratch_name(dir_dst, "fel");
        if (s && strlen(s) < sizeof name) strcpy(name, s);
        free(s);
      }
      if ((st = tr_dist_bcast(run, name, (int)sizeof name, err))) return st;
      if (!name[0]) return tr_fail(err, TR_ENOMEM, "out of memory");
      scratch = strdup(name);
      if (!scratch) return tr_fail(err, TR_ENOMEM, "out of memory");
      fel = scratch;
    }
    tr_fill_dem_opts fo;
    tr_fill_dem_opts_init(&fo);
    fo.run = stage_run(run, &sp[stage], stage, nstages, 0, g->ft_report_append);
    if (scratch) {
      /* tiled, uncompressed: the next stages read it window by window */
      static const char *const scratch_co[] = {"TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256", NULL};
      fo.run.format = "GTiff";
      fo.run.creation_options = scratch_co;
    }
    fo.graph = *g;
    fo.burn = o->burn;
    /* the elevation cache (fill's --z-cache-mb) is 4 MB here unless given: the
     * fill is the pipeline's largest stage, and at 8000² the default 16 MB
     * cost 25 MB of peak for no measurable time */
    if (fo.graph.cache_mb < 0) fo.graph.cache_mb = 4;
    st = tr_fill_dem(&fo, src, fel, err); /* a stage: its outcome agreed (stage_run) */
    stage++;
    dem = fel;
  }
  if (!st) {
    rs = stage_run(run, &sp[stage], stage, nstages, 1, g->ft_report_append);
    if (dem != src) rs.band = 1;
    st = o->method == TR_FLOW_DINF ? tr_run_graph(&rs, g, "dinf", dinf_prepare, o, dem, dir_dst, err)
                                   : tr_run_graph(&rs, g, "flowdir", flowdir_prepare, o, dem, dir_dst, err);
    stage++;
    if (st && !o->filled && o->filled_out) delete_raster(run, o->filled_out);
  }
  if (!st && o->slope) {
    rs = stage_run(run, &sp[stage], stage, nstages, 0, 1);
    rs.ft_report_append = g->ft_report_append;
    if (dem != src) rs.band = 1;
    st = o->method == TR_FLOW_DINF ? tr_run_kernel(&rs, "dinf_slp", tr_d8_prepare, NULL, dem, o->slope, err)
                                   : tr_run_kernel(&rs, "d8", tr_d8_prepare, NULL, dem, o->slope, err);
    if (st) {
      delete_raster(run, dir_dst);
      if (!o->filled && o->filled_out) delete_raster(run, o->filled_out);
    }
  }
  if (scratch && tr_rank() == 0) tr_output_scratch_remove(scratch);
  free(scratch);
  /* the deletions are rank 0's: nobody returns before they are done */
  tr_error e = {{0}};
  if (err) e = *err;
  st = tr_step_end(run, st, &e);
  if (st && err) *err = e;
  return st;
}
