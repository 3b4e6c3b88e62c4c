/*
 * fill_dem.c - `terrafort fill` as a library call: the "fill" graph program
 * (fill_program.c) over a DEM file, through the graph runner (graph.h);
 * with --burn, over the DEM with its stream lines burnt in (io/burn.h) as
 * the runner reads it.
 *
 * Memory: the engine keeps W (one float per cell) while the tile store holds
 * elevation windows in a cache of --z-cache-mb (16 MB by default), the GDAL
 * block cache is capped at 16 MB for graph runs (shared among the ranks under
 * mpirun, at least 4 MB each), and each running round holds
 * its flood queues: about 1.0x the input as Float32 plus 32 MB. When that
 * does not fit --mem, flat fill runs fill_perimeter instead (the planner
 * takes the "fill" program's twin body), which keeps a summary of each
 * tile's perimeter and reads each tile twice.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "burn.h"
#include "fill.h"
#include "graph.h"

void tr_fill_dem_opts_init(tr_fill_dem_opts *o) {
  memset(o, 0, sizeof *o);
  tr_run_opts_init(&o->run);
  tr_graph_opts_init(&o->graph);
  o->graph.mem_of_input = TR_FILL_MEM_OF_INPUT;
}

/* The nodata of an integer -ot when the input's does not fit (or there is
 * none: an integer band has no NaN for the cells without a value): the
 * type's lowest value when signed, its highest when unsigned
 * (terrafort-fill(1)). */
static double int_default_nodata(GDALDataType t) {
  int clamped, rounded;
  return GDALAdjustValueToDataType(t, GDALDataTypeIsSigned(t) ? -1e300 : 1e300, &clamped, &rounded);
}

static int fill_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const tr_fill_dem_opts *o = opts;
  tr_fill_params *p = params;
  const GDALDataType ot = o->out_type ? (GDALDataType)o->out_type : GDT_Float32;
  p->epsilon = o->epsilon;
  p->eps = (float)o->epsilon_step;
  prod->has_nodata = in->has_nodata;
  prod->nodata = in->nodata;
  prod->file_type = ot;
  /* The filled cells are Float32; the output's nodata must be a value both
   * they and the -ot band hold exactly. */
  if (GDALDataTypeIsInteger(ot)) {
    if (GDALGetDataTypeSizeBytes(ot) > 4)
      return tr_fail(err, TR_EUSAGE, "-ot %s: fill writes Float32 cells; use Int32, UInt32 or Float64",
                     GDALGetDataTypeName(ot));
    int clamped = 0, rounded = 0;
    if (in->has_nodata && !isnan(in->nodata)) GDALAdjustValueToDataType(ot, in->nodata, &clamped, &rounded);
    if (!in->has_nodata || isnan(in->nodata) || clamped || rounded) {
      prod->has_nodata = 1;
      prod->nodata = int_default_nodata(ot);
    }
  } else if (in->has_nodata && isfinite(in->nodata)) {
    /* beyond Float32's range: clamped, as gdal_translate does; otherwise the
     * value the Float32 cells hold */
    const double v = fabs(in->nodata) > FLT_MAX ? copysign(FLT_MAX, in->nodata) : in->nodata;
    prod->nodata = (double)(float)v;
  }
  return TR_OK;
}

int tr_fill_dem(const tr_fill_dem_opts *opts, const char *src, const char *dst, tr_error *err) {
  /* usage errors come before any file is touched */
  const GDALDataType ot = opts->out_type ? (GDALDataType)opts->out_type : GDT_Float32;
  if (opts->epsilon && ot != GDT_Float32 && ot != GDT_Float64)
    return tr_fail(err, TR_EUSAGE, "--epsilon needs a floating-point output type (-ot Float32 or Float64)");
  if (opts->epsilon_step < 0 || isnan(opts->epsilon_step))
    return tr_fail(err, TR_EUSAGE, "--epsilon-step must be 0 (one ulp) or positive");
  const int st = tr_burn_usage(&opts->burn, err);
  if (st) return st;
  /* the planner takes fill_perimeter when W does not fit --mem (flat fill);
   * with --burn every window the fill reads is burnt first */
  return tr_run_graph_burnt(&opts->run, &opts->graph, "fill", fill_prepare, opts, src, &opts->burn, dst, err);
}
