/*
 * flowgraph.c - `terrafort flowgraph` as a library call: the products asked
 * for, computed from a D8 direction raster by the programs of flow.h, each
 * raster through the graph runner (and so the shared run path: temporary
 * name, agreement over ranks, rename or delete).
 *
 * Order of the steps, each only when a product needs it:
 *   1. directions: --dir-in, or from the DEM (the flow-direction step; with
 *      --burn, its fill reads the DEM burnt, io/burn.h);
 *   2. accumulation (d8_up), streams (d8_up), Strahler order (d8_up; or,
 *      when its state does not fit --mem, the streams into a scratch raster
 *      and the order from the stream cells: order_cells.c); --plen, --tlen,
 *      --gord (d8_len, TauDEM gridnet);
 *   3. the network and basins need the no-edge-check accumulation: the
 *      user's --acc when it is that, else a temporary raster beside the
 *      network or basins output, deleted at the end; then the links
 *      (network.c, every rank), the lines (rank 0), basins (d8_basins);
 *   4. --basin-stats (basin_stats.c) from the basins (--basins, held, or a
 *      scratch raster), the DEM and sd8 (--slope, held, or a scratch raster
 *      made with the directions), written as a side file;
 *   5. --hand and --d8-dist (dist_down): the streams into a scratch raster,
 *      then the distances from them (dist_stages; with --method dinf after
 *      its products, the D8 directions made there from the filled DEM).
 * --method dinf runs dinf_stages instead of 1-4: angles and slope, then sca
 * and twi (dinf_up).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "burn.h"
#include "d8_codes.h"
#include "dinf.h"
#include "dist.h"
#include "step.h"
#include "flow.h"
#include "flowdir.h"
#include "held.h"
#include "inject.h"
#include "path_max.h"
#include "raster.h"
#include "side_file.h"
#include "tmp_files.h"
#include "vector_out.h"

void tr_flowgraph_opts_init(tr_flowgraph_opts *o) {
  memset(o, 0, sizeof *o);
  tr_run_opts_init(&o->run);
  tr_graph_opts_init(&o->graph);
  o->graph.mem_of_input = TR_FLOWGRAPH_MEM_OF_INPUT;
  o->threshold = 100;
  o->snap = 50;
  o->holmgren_x = 4.0;
  o->freeman_p = 1.1;
  o->seed = 1;
}

/* What the sums of the run's weights need (flow.h, TR_SUMS_*), found once
 * per run: exact in a double (d8_up; out of core d8_up_perimeter), exact in
 * 128-bit integers of 2^-k units (d8_up_wide, in memory too), or neither
 * (d8_up, whose sums round in its fixed order; out of core it spills). */
typedef struct {
  int sums, k;
} weights_sums;

/* An integer band of up to 16 bits on fewer than 2^37 cells sums exactly in a
 * double as its type shows; any other band is read once to see. */
static int sums_of(const tr_flowgraph_opts *o, tr_input *w, weights_sums *ws, tr_error *err) {
  const GDALDataType t = w->type;
  if ((t == GDT_Byte || t == GDT_UInt16 || t == GDT_Int16) && w->rows * w->cols < ((int64_t)1 << 37)) {
    ws->sums = TR_SUMS_DOUBLE;
    return TR_OK;
  }
  const int st = tr_up_weights_sums_of(w, &o->run, &ws->k, err);
  if (st < 0) return st;
  ws->sums = st;
  return TR_OK;
}

typedef struct {
  const tr_flowgraph_opts *o;
  tr_up_product product;
  int edge_check;
  const char *dir;
  const weights_sums *ws;
} up_job;

static double cell_area(const tr_input *in) { return fabs(in->gt[1] * in->gt[5] - in->gt[2] * in->gt[4]); }

static int up_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  (void)err;
  const up_job *j = opts;
  tr_up_params *p = params;
  p->product = j->product;
  p->encoding = (int32_t)j->o->encoding;
  p->edge_check = j->edge_check;
  p->weighted = j->o->weights != NULL;
  p->weights = j->o->weights;
  p->sums = p->weighted ? j->ws->sums : TR_SUMS_ROUND;
  p->weights_k = j->ws->k;
  p->unit = j->o->units == TR_ACC_AREA ? cell_area(in) : 1.0;
  p->threshold = j->o->threshold;
  p->src = j->dir;
  prod->type = GDT_Float64;
  prod->has_nodata = 1;
  if (j->product == TR_UP_ACC) {
    prod->nodata = TR_ACC_NODATA;
    prod->file_type = j->o->acc_float32 ? GDT_Float32 : GDT_Float64;
  } else {
    prod->nodata = TR_BYTE_NODATA;
    prod->file_type = GDT_Byte;
  }
  return TR_OK;
}

/* The engine options of a run: the programs read each direction window
 * once (in PEval) and keep it decoded, so by default the tile store keeps
 * no window (a cache would only hold memory); weights are read every
 * round and keep the default cache. */
static tr_graph_opts graph_of(const tr_flowgraph_opts *o, int weighted) {
  tr_graph_opts g = o->graph;
  if (g.cache_mb < 0 && !weighted) g.cache_mb = 0;
  return g;
}

static int run_up(const tr_flowgraph_opts *o, const tr_run_opts *run, const char *dir, tr_up_product product,
                  int edge_check, const char *dst, const weights_sums *ws, tr_error *err) {
  up_job j = {o, product, edge_check, dir, ws};
  const char *srcs[2] = {dir, o->weights};
  const tr_graph_opts g = graph_of(o, o->weights != NULL);
  /* the planner takes d8_up_wide for weights whose sums a double rounds;
   * a stage of several: its outcome agreed (run/step.h) */
  return tr_run_graph_inputs(run, &g, "d8_up", up_prepare, &j, srcs, o->weights ? 2 : 1, dst, err);
}

typedef struct {
  const tr_flowgraph_opts *o;
  const tr_basin_seed *seeds;
  int64_t nseeds;
  const char *dir;
} basin_job;

static int basin_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  (void)in;
  (void)err;
  const basin_job *j = opts;
  tr_basin_params *p = params;
  p->encoding = (int32_t)j->o->encoding;
  p->nseeds = j->nseeds;
  p->seeds = j->seeds;
  p->src = j->dir;
  prod->type = GDT_Float64;
  prod->has_nodata = 1;
  prod->nodata = TR_LABEL_NODATA;
  prod->file_type = GDT_Int32;
  return TR_OK;
}

/* Whether band 1 of the opened `in` has a valid cell (a band of rows at a
 * time; stops at the first one). */
static int any_valid(tr_input *in, int *found, tr_error *err) {
  int st = TR_OK;
  *found = 0;
  float *buf = malloc((size_t)in->cols * 64 * sizeof *buf);
  if (!buf) st = tr_fail(err, TR_ENOMEM, "out of memory");
  for (int64_t r = 0; r < in->rows && !st && !*found; r += 64) {
    const int64_t n = in->rows - r < 64 ? in->rows - r : 64;
    st = tr_input_read_f32(in, r, 0, n, in->cols, buf, in->cols, err);
    for (int64_t i = 0; !st && i < n * in->cols && !*found; i++)
      *found = !isnan(buf[i]) && !(in->has_nodata && buf[i] == (float)in->nodata);
  }
  free(buf);
  return st;
}

/* The same over band `band` of the raster at `path`, opened for it. */
static int any_valid_at(const char *path, int band, int *found, tr_error *err) {
  tr_input in;
  int st = tr_input_open(&in, path, band, err);
  if (st) return st;
  st = any_valid(&in, found, err);
  tr_input_close(&in);
  return st;
}

/* --ang-in: every angle TauDEM's dinfflowdir can write, radians in [0, 2 pi]
 * (its 2 pi rounded to Float32 included), or nodata (the file's, or NaN);
 * anything else is refused before any output exists, naming the first such
 * cell. A raster without a valid angle is refused too. One pass over the
 * raster before dinf_up reads it again: the price of refusing before
 * anything is written. */
static int check_angles(tr_input *in, const char *path, tr_error *err) {
  const float top = (float)(2.0 * TR_DINF_PI);
  float *buf = malloc((size_t)in->cols * 64 * sizeof *buf);
  if (!buf) return tr_fail(err, TR_ENOMEM, "out of memory");
  int st = TR_OK, found = 0;
  for (int64_t r = 0; r < in->rows && !st; r += 64) {
    const int64_t n = in->rows - r < 64 ? in->rows - r : 64;
    st = tr_input_read_f32(in, r, 0, n, in->cols, buf, in->cols, err);
    for (int64_t i = 0; !st && i < n * in->cols; i++) {
      const float a = buf[i];
      if (isnan(a) || (in->has_nodata && a == (float)in->nodata)) continue;
      if (!(a >= 0.0f && a <= top))
        st = tr_fail(err, TR_EINPUT,
                     "'%s': %g at row %lld, column %lld is not a D-infinity angle (radians from 0 to 2 pi, "
                     "counter-clockwise from east) nor the raster's nodata",
                     path, (double)a, (long long)(r + i / in->cols), (long long)(i % in->cols));
      found = 1;
    }
  }
  free(buf);
  if (!st && !found) st = tr_fail(err, TR_EINPUT, "'%s' has no valid cell (every cell is nodata)", path);
  return st;
}

/* What flowgraph learns of its inputs before any stage, opening each once:
 * the rasters read beside the DEM (or --dir-in) have its size (named as the
 * user gave them), whether --dir-in has a valid cell, its cell area (the
 * directions made from a DEM are made like it), and what the weights' sums
 * need. */
typedef struct {
  int dir_in_valid;
  double cell_area;
  weights_sums ws;
} fg_inputs;

/* The same georeferencing within a millionth of a cell (rasters written by
 * tools that print the geotransform in decimal). */
static int same_grid(const tr_input *a, const tr_input *b) {
  const double cell = fmax(fabs(b->gt[1]), fabs(b->gt[5]));
  for (int i = 0; i < 6; i++)
    if (fabs(a->gt[i] - b->gt[i]) > 1e-6 * cell) return 0;
  return 1;
}

static int survey(const tr_flowgraph_opts *o, const char *dem, fg_inputs *s, tr_error *err) {
  const char *ref = o->dir_in ? o->dir_in : o->ang_in ? o->ang_in : o->sca_in ? o->sca_in : dem;
  /* with --ang-in the DEM (filled: dinfdistdown's -fel) is one of the others */
  const char *others[] = {o->weights, o->filled_in, o->streams_in, o->acc_in, o->slp_in, o->ang_in ? dem : NULL};
  const char *what = o->dir_in ? "the directions " : o->sca_in ? "--sca-in " : o->ang_in ? "--ang-in " : "the DEM ";
  s->ws = (weights_sums){TR_SUMS_ROUND, 0};
  tr_input in0, in;
  /* the DEM at the band asked for (-b): a missing band is named with it */
  int st = tr_input_open(&in0, ref, o->dir_in || o->ang_in || o->sca_in ? 1 : o->run.band, err);
  if (st) return st;
  s->cell_area = cell_area(&in0);
  if (o->ang_in) {
    /* a read of every angle: rank 0's alone (the caller agrees on it) */
    st = tr_rank() == 0 ? check_angles(&in0, o->ang_in, err) : TR_OK;
  }
  for (size_t k = 0; !st && k < sizeof others / sizeof others[0]; k++) {
    if (!others[k]) continue;
    if ((st = tr_input_open(&in, others[k], 1, err))) break;
    st = tr_input_same_size(&in, others[k], &in0, what, ref, err);
    if (!st && others[k] == o->weights) st = sums_of(o, &in, &s->ws, err);
    /* the given streams and area are cells of the directions: on their grid */
    if (!st && (others[k] == o->streams_in || others[k] == o->acc_in || others[k] == o->slp_in || others[k] == dem) &&
        !same_grid(&in, &in0))
      st = tr_fail(err, TR_EINPUT, "'%s' (%s) is not on the grid of %s'%s': its origin or cell size differs", others[k],
                   others[k] == o->streams_in ? "--streams-in"
                   : others[k] == o->acc_in   ? "--acc-in"
                   : others[k] == o->slp_in   ? "--slp-in"
                                              : "the filled DEM",
                   what, ref);
    tr_input_close(&in);
  }
  /* a DEM is read for this only when the directions made from it have no
   * valid cell (check_valid) */
  if (!st && o->dir_in) st = any_valid(&in0, &s->dir_in_valid, err);
  tr_input_close(&in0);
  return st;
}

/* Refuses a direction raster without a valid cell before any output exists.
 * `dem`: the DEM the directions were computed from in this run (into --dir or
 * a scratch raster), read here until its first valid cell, and the DEM too
 * when there is none; else NULL: dir is --dir-in, whose validity the survey
 * found. */
static int check_valid(const char *dir, const char *dem, int dem_band, const fg_inputs *s, tr_error *err) {
  int found = s->dir_in_valid, st = dem ? any_valid_at(dir, 1, &found, err) : TR_OK;
  if (st || found) return st;
  if (!dem) return tr_fail(err, TR_EINPUT, "'%s' has no valid cell (every cell is nodata)", dir);
  if ((st = any_valid_at(dem, dem_band, &found, err))) return st;
  if (!found) return tr_fail(err, TR_EINPUT, "'%s' has no valid cell (every cell is nodata)", dem);
  return tr_fail(err, TR_EINPUT,
                 "no cell of '%s' has a flow direction: every valid cell lies on the grid's edge or beside nodata, "
                 "where directions are nodata (as in TauDEM)",
                 dem);
}

/* The usage errors, before any file is touched. */
/* The products a run writes, in the order of the stages. */
#define FG_NPRODUCTS 18
static void products_of(const tr_flowgraph_opts *o, const char *outs[FG_NPRODUCTS]) {
  const char *p[FG_NPRODUCTS] = {o->dir_out, o->acc,  o->streams, o->order, o->basins,        o->network,
                                 o->slope,   o->ang,  o->slp,     o->sca,   o->twi,           o->moved_outlets,
                                 o->hand,    o->d8_dist, o->plen,  o->tlen,  o->gord, o->spi};
  memcpy(outs, p, sizeof p);
}

/* The first side file a run writes, where no raster or vector product
 * names a folder for its scratch files. */
static const char *side_first(const tr_flowgraph_opts *o) {
  return o->basin_stats ? o->basin_stats : o->outlet_table ? o->outlet_table : o->tree ? o->tree : o->coord;
}

/* The method's own usage errors: D-infinity's products go with --method
 * dinf, D8's with d8, and D-infinity angles come from a DEM. --hand and
 * --d8-dist go with either (their streams are D8's, HAND's paths D-infinity's,
 * made in the run when the method does not make them). */
static int is_mfd(tr_flow_method m) {
  return m == TR_FLOW_QUINN || m == TR_FLOW_HOLMGREN || m == TR_FLOW_FREEMAN || m == TR_FLOW_RHO8;
}

/* --method quinn|holmgren|freeman|rho8: --acc from a DEM, in cells, nothing else. */
static int check_mfd(const tr_flowgraph_opts *o, const char *dem, tr_error *err) {
  static const char *const names[] = {"", "", "quinn", "holmgren", "freeman", "rho8"};
  const char *m = names[o->method];
  if (!(o->holmgren_x >= 1.0 && o->holmgren_x <= 100.0))
    return tr_fail(err, TR_EUSAGE, "--holmgren-x must be in [1, 100], got %g", o->holmgren_x);
  if (!(o->freeman_p > 0.0 && o->freeman_p <= 100.0))
    return tr_fail(err, TR_EUSAGE, "--freeman-p must be in (0, 100], got %g", o->freeman_p);
  const char *other = o->dir_out ? "--dir" : o->streams ? "--streams" : o->order ? "--order"
                    : o->basins ? "--basins" : o->network ? "--network" : o->slope ? "--slope"
                    : o->basin_stats ? "--basin-stats" : o->weights ? "--weights" : o->outlets ? "--outlets"
                    : o->outlet_table ? "--outlet-table" : o->moved_outlets ? "--moved-outlets"
                    : o->plen ? "--plen" : o->tlen ? "--tlen" : o->gord ? "--gord" : o->ang ? "--ang"
                    : o->slp ? "--slp" : o->sca ? "--sca" : o->twi ? "--twi" : o->spi ? "--spi" : o->hand ? "--hand"
                    : o->d8_dist ? "--d8-dist" : o->no_edge_check ? "--no-edge-check" : o->acc_float32 ? "--acc-type Float32"
                    : o->dir_in ? "--dir-in" : o->tree ? "--tree" : o->coord ? "--coord"
                    : o->streams_in ? "--streams-in" : o->acc_in ? "--acc-in" : NULL;
  if (other)
    return tr_fail(err, TR_EUSAGE, "%s does not go with --method %s: it makes --acc alone (Float64)", other, m);
  if (!o->acc) return tr_fail(err, TR_EUSAGE, "no product asked for: --method %s makes --acc", m);
  if (!dem) return tr_fail(err, TR_EUSAGE, "--method %s computes its shares from a DEM: give the DEM", m);
  if (o->filled && o->run.band != 1)
    return tr_fail(err, TR_EUSAGE, "--method %s reads its angles at band 1: -b %d with --filled is not supported", m,
                   o->run.band);
  return TR_OK;
}

static int check_method(const tr_flowgraph_opts *o, const char *dem, tr_error *err) {
  const int dinf_any = o->ang || o->slp || o->sca || o->twi || o->spi;
  if (is_mfd(o->method)) return check_mfd(o, dem, err);
  if (o->method != TR_FLOW_D8 && o->method != TR_FLOW_DINF)
    return tr_fail(err, TR_EUSAGE, "unknown flow method %d (d8, dinf, quinn, holmgren, freeman or rho8)",
                   (int)o->method);
  if (o->method == TR_FLOW_D8) {
    if (dinf_any)
      return tr_fail(err, TR_EUSAGE, "--ang, --slp, --sca, --twi and --spi are D-infinity products: give --method dinf");
    return TR_OK;
  }
  const char *d8 = o->dir_out ? "--dir" : o->acc ? "--acc" : o->streams ? "--streams" : o->order ? "--order"
                 : o->basins ? "--basins" : o->network ? "--network" : o->slope ? "--slope"
                 : o->basin_stats ? "--basin-stats" : o->weights ? "--weights" : o->outlets ? "--outlets"
                 : o->outlet_table ? "--outlet-table" : o->plen ? "--plen" : o->tlen ? "--tlen" : o->gord ? "--gord"
                 : o->tree ? "--tree" : o->coord ? "--coord" : o->acc_in ? "--acc-in"
                                   : NULL;
  if (d8)
    return tr_fail(err, TR_EUSAGE,
                   "%s is a D8 product or option; --method dinf makes --ang, --slp, --sca, --twi, --spi, --hand, "
                   "--d8-dist",
                   d8);
  if (!dinf_any && !o->hand && !o->d8_dist)
    return tr_fail(err, TR_EUSAGE,
                   "no product asked for: give one of --ang, --slp, --sca, --twi, --spi, --hand, --d8-dist");
  if (o->sca_in || o->slp_in) {
    /* TauDEM twi's form: the slope and sca are given, twi alone is made */
    if (!o->sca_in || !o->slp_in)
      return tr_fail(err, TR_EUSAGE, "%s needs %s too (TauDEM twi: the wetness index from the slope and sca)",
                     o->sca_in ? "--sca-in" : "--slp-in", o->sca_in ? "--slp-in" : "--sca-in");
    const char *other = o->ang ? "--ang" : o->slp ? "--slp" : o->sca ? "--sca" : o->hand ? "--hand"
                      : o->d8_dist ? "--d8-dist" : o->dir_in ? "--dir-in" : o->ang_in ? "--ang-in"
                      : o->filled ? "--filled" : NULL;
    if (other)
      return tr_fail(err, TR_EUSAGE, "--slp-in and --sca-in give what --twi alone is made from (TauDEM twi); %s needs a DEM",
                     other);
    if (dem) return tr_fail(err, TR_EUSAGE, "--slp-in and --sca-in give the slope and sca: give no DEM with them");
    if (!o->twi && !o->spi)
      return tr_fail(err, TR_EUSAGE, "--slp-in and --sca-in need --twi or --spi (the products made from them)");
    return TR_OK;
  }
  if (o->ang_in) {
    /* TauDEM areadinf's form: the angles are given, sca alone is made; and
     * dinfdistdown's: HAND along them, to the streams given, from the
     * filled DEM given */
    const char *other = o->ang ? "--ang" : o->slp ? "--slp" : o->twi ? "--twi" : o->spi ? "--spi"
                      : o->d8_dist ? "--d8-dist"
                      : o->dir_in ? "--dir-in" : !o->hand && o->filled ? "--filled" : NULL;
    if (other)
      return tr_fail(err, TR_EUSAGE,
                     "--ang-in gives the angles for --sca (TauDEM areadinf) and --hand (dinfdistdown) alone; %s "
                     "needs a DEM",
                     other);
    if (!o->sca && !o->hand)
      return tr_fail(err, TR_EUSAGE, "--ang-in needs --sca or --hand (the products made from the angles)");
    if (o->hand && o->no_edge_check && !o->sca)
      return tr_fail(err, TR_EUSAGE,
                     "-nc: --hand keeps TauDEM dinfdistdown's default edge check (its -nc is not supported)");
    if (o->hand && !o->streams_in)
      return tr_fail(err, TR_EUSAGE,
                     "--hand from --ang-in runs to the streams given: add --streams-in (TauDEM dinfdistdown's -src)");
    if (o->hand && (!dem || !o->filled))
      return tr_fail(err, TR_EUSAGE,
                     "--hand from --ang-in needs the filled DEM its angles were made from: give it with --filled "
                     "(TauDEM dinfdistdown's -fel)");
    if (dem && !o->hand) return tr_fail(err, TR_EUSAGE, "--ang-in gives the angles: give no DEM with it");
    return TR_OK;
  }
  if (o->dir_in || !dem)
    return tr_fail(err, TR_EUSAGE,
                   "--method dinf computes D-infinity angles from a DEM: give the DEM (--dir-in holds D8 directions)");
  return TR_OK;
}

/* --streams-in and --acc-in (TauDEM streamnet's -src and -ad8): the
 * products that follow the given streams (order, basins per link, the
 * network and its text files; --hand and --d8-dist, whose distances run to
 * them as TauDEM dinfdistdown's and d8hdisttostrm's -src; outlets moved
 * down their path to them, moveoutletstostreams' -src), not a product of
 * the same name. */
static int check_given(const tr_flowgraph_opts *o, tr_error *err) {
  if (o->acc_in && !o->streams_in)
    return tr_fail(err, TR_EUSAGE, "--acc-in (-ad8 in streamnet's form) goes with --streams-in (-src), the streams made from it");
  if (!o->streams_in) return TR_OK;
  const char *clash = o->streams ? "--streams" : o->acc && o->acc_in ? "--acc"
                    : o->weights && o->acc_in ? "--weights" : NULL;
  if (clash)
    return tr_fail(err, TR_EUSAGE, "%s does not go with --streams-in%s: %s", clash, o->acc_in ? " and --acc-in" : "",
                   !strcmp(clash, "--streams") || !strcmp(clash, "--acc") ? "the file is given, not made"
                   : !strcmp(clash, "--weights")                          ? "the accumulation is given"
                                                                          : "its streams come from --threshold");
  if (!o->order && !o->basins && !o->network && !o->tree && !o->coord && !o->basin_stats && !o->hand && !o->d8_dist &&
      !o->outlets)
    return tr_fail(err, TR_EUSAGE,
                   "--streams-in is read by --order, --basins, --network, --tree, --coord, --hand, --d8-dist and the "
                   "outlets' moves: give one of them");
  return TR_OK;
}

static int check_opts(const tr_flowgraph_opts *o, const char *dem, tr_error *err) {
  const char *outs[FG_NPRODUCTS];
  products_of(o, outs);
  const int nouts = FG_NPRODUCTS;
  int any = 0;
  int st = check_method(o, dem, err);
  if (st) return st;
  if ((st = tr_burn_usage(&o->burn, err))) return st;
  if (o->burn.file && (o->dir_in || !dem))
    return tr_fail(err, TR_EUSAGE, "--burn lowers the cells of a DEM before its fill: give the DEM, not --dir-in");
  if (o->burn.file && o->filled)
    return tr_fail(err, TR_EUSAGE,
                   "--burn does not go with --filled (nor dinfflowdir's -fel): burning comes before the fill, and its "
                   "channels would end in pits nothing fills");
  for (int i = 0; i < nouts; i++) any |= outs[i] != NULL;
  if (!any && !o->basin_stats && !o->outlet_table && !o->tree && !o->coord)
    return tr_fail(err, TR_EUSAGE,
                   "no product asked for: give one of --dir, --slope, --acc, --streams, --order, --basins, --network, "
                   "--tree, --coord, --basin-stats, --hand, --d8-dist, --plen, --tlen, --gord");
  if (!o->dir_in && !o->ang_in && !o->sca_in && !dem)
    return tr_fail(err, TR_EUSAGE, "give a DEM or a direction raster (--dir-in)");
  if (o->dir_in && o->dir_out) return tr_fail(err, TR_EUSAGE, "--dir writes directions computed from the DEM; --dir-in gives them");
  if (o->dir_in && (o->slope || o->filled))
    return tr_fail(err, TR_EUSAGE, "--slope and --filled are for directions computed from a DEM, not --dir-in");
  if ((int)o->encoding < 0 || (int)o->encoding >= TR_D8_ENCODINGS) return tr_fail(err, TR_EUSAGE, "unknown direction encoding");
  if (!(o->threshold > 0) || isinf(o->threshold)) return tr_fail(err, TR_EUSAGE, "--threshold must be a positive number");
  if (o->basins_by == TR_BASINS_OUTLETS && !o->outlets)
    return tr_fail(err, TR_EUSAGE, "basins per outlet point need --outlets POINTS");
  if (o->outlets && o->basins_by != TR_BASINS_OUTLETS)
    return tr_fail(err, TR_EUSAGE, "--outlets goes with basins per outlet point");
  if (o->outlets && !o->basins && !o->basin_stats && !o->moved_outlets && !o->outlet_table)
    return tr_fail(err, TR_EUSAGE, "--outlets needs --basins, --basin-stats, --moved-outlets or --outlet-table");
  if (o->moved_outlets && !o->outlets) return tr_fail(err, TR_EUSAGE, "--moved-outlets needs --outlets POINTS");
  if (o->outlet_table && !o->outlets) return tr_fail(err, TR_EUSAGE, "--outlet-table needs --outlets POINTS");
  if (o->snap < 0) return tr_fail(err, TR_EUSAGE, "--snap must be 0 or more");
  if (o->snap_distance < 0 || isnan(o->snap_distance) || isinf(o->snap_distance))
    return tr_fail(err, TR_EUSAGE, "--snap-distance must be a positive distance in map units");
  if ((o->snap_distance > 0 || o->id_field) && !o->outlets)
    return tr_fail(err, TR_EUSAGE, "%s goes with --outlets", o->id_field ? "--id-field" : "--snap-distance");
  if (!dem && o->run.band != 1)
    return tr_fail(err, TR_EUSAGE, "-b selects the DEM's band, and there is no DEM (%s is read at band 1)",
                   o->ang_in ? "--ang-in" : o->sca_in ? "--sca-in" : "--dir-in");
  if (o->hand && o->dir_in && !o->filled_in)
    return tr_fail(err, TR_EUSAGE, "--hand with --dir-in needs the filled DEM's elevations: give --filled-in (-fel)");
  if (o->hand && o->filled && !o->filled_in && o->run.band != 1)
    return tr_fail(err, TR_EUSAGE, "--hand reads the filled DEM at band 1: -b %d with --filled is not supported",
                   o->run.band);
  if (o->coord && !dem && !o->filled_in)
    return tr_fail(err, TR_EUSAGE, "--coord lists each point's elevation: give the filled DEM (--filled-in, -fel) or a DEM");
  if ((st = check_given(o, err))) return st;
  if (o->network && (st = tr_links_check(o->network, o->network_format, err))) return st;
  if (o->moved_outlets && (st = tr_vector_check(o->moved_outlets, NULL, "--moved-outlets", err))) return st;
  for (int i = 0; i < nouts; i++)
    for (int j = i + 1; j < nouts; j++)
      if (outs[i] && outs[j] && !strcmp(outs[i], outs[j]))
        return tr_fail(err, TR_EUSAGE, "'%s' is given for two products", outs[i]);
  /* Every file the run writes, before any stage (each stage checks only
   * its own, and by then earlier products exist and --aap-stats has been
   * made afresh): a product or side output written over a raster a later
   * stage reads (the weights by every accumulation stage, the elevations by
   * the network, the DEM by the directions) would feed that stage its own
   * output; one onto a FIFO or device would be replaced by OGR; a missing
   * folder found at the network would leave the products before it. */
  tr_file_role files[FG_NPRODUCTS + 7] = {[FG_NPRODUCTS] = {o->run.stats_json, TR_ROLE_STATS_JSON},
                                         [FG_NPRODUCTS + 1] = {o->graph.aap_stats, TR_ROLE_AAP_STATS},
                                         [FG_NPRODUCTS + 2] = {o->run.ft_report, TR_ROLE_FT_REPORT},
                                         [FG_NPRODUCTS + 3] = {o->basin_stats, "--basin-stats"},
                                         [FG_NPRODUCTS + 4] = {o->outlet_table, "--outlet-table"},
                                         [FG_NPRODUCTS + 5] = {o->tree, "--tree"},
                                         [FG_NPRODUCTS + 6] = {o->coord, "--coord"}};
  /* each product named by its option: "output" alone would not say which */
  static const char *const names[FG_NPRODUCTS] = {"--dir",   "--acc", "--streams", "--order", "--basins", "--network",
                                                  "--slope", "--ang", "--slp",     "--sca",   "--twi",
                                                  "--moved-outlets", "--hand", "--d8-dist", "--plen", "--tlen",
                                                  "--gord", "--spi"};
  for (int i = 0; i < nouts; i++) files[i] = (tr_file_role){outs[i], names[i]};
  const tr_file_role ins[] = {{dem, "the DEM"},
                              {o->dir_in, "--dir-in"},
                              {o->ang_in, "--ang-in"},
                              {o->sca_in, "--sca-in"},
                              {o->slp_in, "--slp-in"},
                              {o->weights, "--weights"},
                              {o->filled_in, "--filled-in"},
                              {o->outlets, "--outlets"},
                              {o->streams_in, "--streams-in"},
                              {o->acc_in, "--acc-in"},
                              {o->burn.file, "--burn"}};
  st = tr_outputs_refuse(files, (int)(sizeof files / sizeof files[0]), ins, (int)(sizeof ins / sizeof ins[0]), NULL, err);
  /* its form after where it goes: onto the DEM says that, not "name it .csv" */
  if (!st && o->basin_stats) st = tr_basin_stats_check(o->basin_stats, err);
  return st;
}

/* One scratch name for every rank, rank 0's (tr_output_scratch_name):
 * beside `path`, tagged `tag`; "" when out of memory. A rank lost meanwhile:
 * its status (err says). */
static int scratch_name(const tr_run_opts *run, char name[TR_PATH_MAX], const char *path, const char *tag,
                        tr_error *err) {
  name[0] = 0;
  if (tr_rank() == 0) {
    char *s = tr_output_scratch_name(path, tag);
    if (s && strlen(s) < TR_PATH_MAX) strcpy(name, s);
    free(s);
  }
  return tr_dist_bcast(run, name, TR_PATH_MAX, err);
}

/* The run options of a scratch raster: the program's own, so no user
 * format, creation options or statistics. */
static tr_run_opts scratch_run(const tr_run_opts *run) {
  tr_run_opts r = *run;
  r.format = "GTiff";
  r.creation_options = NULL;
  r.stats = 0;
  r.stats_json = NULL;
  return r;
}

/* Where the product bound for `path` is while the run holds it (held.h):
 * its temporary, rank 0's name on every rank. */
static int held_at(const tr_run_opts *run, char at[TR_PATH_MAX], const char *path, tr_error *err) {
  at[0] = 0;
  if (tr_rank() == 0) {
    const char *w = tr_held_where(run->held, path);
    if (w && strlen(w) < TR_PATH_MAX) strcpy(at, w);
  }
  const int st = tr_dist_bcast(run, at, TR_PATH_MAX, err);
  if (!st && !at[0]) return tr_fail(err, TR_EOUTPUT, "'%s' was not made", path);
  return st;
}

/* Between two stages: a signal seen since (its handler has removed the
 * temporaries, products and scratch rasters alike) ends the run here,
 * rather than as the next stage's failure to open them. `stage` counts the
 * stages done; the injected stop-stage:after=K[,rank=R] stops rank R (0)
 * after the K-th. */
static int stage_done(const tr_run_opts *run, int *stage, tr_error *err) {
  ++*stage;
  tr_inject inj;
  tr_error ignored;
  if (run->inject && !tr_inject_parse(run->inject, &inj, &ignored) && inj.stop_stage == *stage &&
      tr_rank() == inj.stop_stage_rank)
    raise(SIGSTOP);
  if (run->cancelled && run->cancelled(run->progress_user)) return tr_fail(err, TR_EINTERRUPTED, "interrupted");
  return TR_OK;
}

/* --stats-json with several raster products: each stage writes its
 * statistics to the file in turn; rank 0 keeps each stage's object and at
 * the end writes them all, named, as
 * {"products":[{"product":NAME,"file":PATH,...the stage's fields...},...]}.
 * With one product the file is that product's object, as for any command. */
enum { FG_STATS_MAX = 10 };
typedef struct {
  int on;
  int n;
  const char *name[FG_STATS_MAX], *file[FG_STATS_MAX];
  tr_json *obj[FG_STATS_MAX]; /* the stage's object (no file names in it: parsed whole) */
} fg_stats;

static void stats_plan(const tr_flowgraph_opts *o, fg_stats *fs) {
  memset(fs, 0, sizeof *fs);
  const int n = (o->dir_out && !o->dir_in) + !!o->acc + !!o->streams + !!o->order + !!o->basins + !!o->ang + !!o->sca +
                !!o->twi + !!o->spi + !!o->hand + !!o->d8_dist + !!o->plen + !!o->tlen + !!o->gord;
  fs->on = o->run.stats_json && n > 1;
}

/* After a stage that wrote product `name` into `file`: keeps its object. */
static void stats_take(const tr_flowgraph_opts *o, fg_stats *fs, const char *name, const char *file) {
  if (!fs->on || tr_rank() != 0 || fs->n >= FG_STATS_MAX) return;
  FILE *f = fopen(o->run.stats_json, "rb");
  if (!f) return;
  char *buf = malloc(1 << 20);
  const size_t len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (!buf) return;
  buf[len] = 0;
  tr_json *obj = tr_json_parse(buf);
  free(buf);
  if (!obj) return;
  fs->name[fs->n] = name;
  fs->file[fs->n] = file;
  fs->obj[fs->n++] = obj;
}

/* At the end of a run that succeeded: the products' objects, named, into
 * `path` (the user's --stats-json), written whole under its temporary name, where
 * it waits for the products (io/side_file.h). */
static int stats_write(const char *path, fg_stats *fs, int st, tr_error *err) {
  if (fs->on && tr_rank() == 0 && !st && fs->n > 0) {
    tr_json *root = tr_json_object(), *all = tr_json_array();
    for (int i = 0; i < fs->n; i++) {
      tr_json *p = tr_json_object();
      tr_json_set(p, "product", tr_json_str(fs->name[i]));
      tr_json_set(p, "file", tr_json_str(fs->file[i]));
      tr_json_merge(p, fs->obj[i]);
      tr_json_push(all, p);
    }
    tr_json_set(root, "products", all);
    char *text = tr_json_text(root);
    tr_json_free(root);
    tr_side_file *side;
    FILE *f;
    st = text ? tr_side_open(path, "statistics file", &side, &f, err)
              : tr_fail(err, TR_ENOMEM, "statistics file: out of memory");
    if (!st) {
      fprintf(f, "%s\n", text);
      st = tr_side_close(side, err);
    }
    free(text);
  }
  for (int i = 0; i < fs->n; i++) tr_json_free(fs->obj[i]);
  fs->n = 0;
  return st;
}

static int products(const tr_flowgraph_opts *o, const fg_inputs *s, const char *dir, const char *dem, int dem_band,
                    const char *elev, int elev_band, const char *sd8, int *stage, fg_stats *fs, tr_error *err);

/* --plen, --tlen, --gord: the "d8_len" program over the directions. */
typedef struct {
  int product;
  tr_dir_encoding encoding;
  const char *dir;
} len_job;

static int len_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const len_job *j = opts;
  tr_d8_len_params *p = params;
  p->product = j->product;
  p->encoding = (int32_t)j->encoding;
  p->src = j->dir;
  const int st = tr_d8_geom_init(in, &p->geom, err);
  if (st) return st;
  prod->type = GDT_Float32;
  prod->has_nodata = 1;
  prod->nodata = TR_D8_LEN_NODATA;
  prod->file_type = j->product == TR_D8_GORD ? GDT_Int16 : GDT_Float32;
  return TR_OK;
}

static int len_stages(const tr_flowgraph_opts *o, const char *dir, int *stage, fg_stats *fs, tr_error *err) {
  const char *dst[3] = {o->plen, o->tlen, o->gord};
  static const char *const name[3] = {"plen", "tlen", "gord"};
  const tr_graph_opts g = graph_of(o, 0);
  int st = TR_OK;
  for (int k = 0; k < 3 && !st; k++) {
    if (!dst[k]) continue;
    const len_job j = {k == 0 ? TR_D8_PLEN : k == 1 ? TR_D8_TLEN : TR_D8_GORD, o->encoding, dir};
    st = tr_run_graph(&o->run, &g, "d8_len", len_prepare, &j, dir, dst[k], err);
    if (!st) stats_take(o, fs, name[k], dst[k]);
    if (!st) st = stage_done(&o->run, stage, err);
  }
  return st;
}

static int order_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  (void)in;
  (void)err;
  memcpy(params, opts, sizeof(tr_order_params));
  /* up_prepare's order product */
  prod->type = GDT_Float64;
  prod->has_nodata = 1;
  prod->nodata = TR_BYTE_NODATA;
  prod->file_type = GDT_Byte;
  return TR_OK;
}

/* Strahler order: d8_up's product; or, when d8_up's state does not fit
 * --mem, from the stream cells (order_cells.c): d8_up's streams product
 * into a scratch raster (two reads of each tile by the perimeter program
 * where it applies), the stream cells ordered in memory on every rank, and
 * "d8_order_cells" writing the tiles from the directions. The same bytes.
 * More stream cells than --mem holds, on any rank: d8_up after all (it
 * spills). Weights of TR_SUMS_WIDE always take the stream cells' road, so
 * that the stream cells are d8_up_wide's (d8_up's rounded sums could put a
 * cell on the other side of the threshold); more stream cells than --mem
 * holds then end the run with that error. */
static int run_order(const tr_flowgraph_opts *o, const char *dir, const weights_sums *ws, tr_error *err) {
  int fits = 1, st = TR_OK;
  if (o->streams_in) { /* the streams given: their cells' order, whatever --mem (d8_up knows only --threshold) */
    tr_order_params p;
    memset(&p, 0, sizeof p);
    st = tr_step_end(&o->run, tr_order_cells_build(&o->run, dir, o->streams_in, (int)o->encoding, &p, err), err);
    const tr_graph_opts g0 = graph_of(o, 0);
    if (!st)
      st = tr_run_graph(&o->run, &g0, "d8_order_cells", order_prepare, &p, dir, o->order, err);
    tr_order_cells_free(&p);
    return st;
  }
  const int wide = o->weights && ws->sums == TR_SUMS_WIDE;
  const tr_graph_opts g = graph_of(o, o->weights != NULL);
  if (!wide) {
    /* the order's params as the planner reads them (up_prepare's) */
    tr_up_params u = {.product = TR_UP_ORDER, .weighted = o->weights != NULL, .sums = ws->sums};
    st = tr_graph_fits(&o->run, &g, "d8_up", &u, dir, GDT_Byte, &fits, err);
  }
  if (st || (fits && !wide)) return st ? st : run_up(o, &o->run, dir, TR_UP_ORDER, 0, o->order, ws, err);
  /* the user's --streams (made just before) holds the same cells when
   * written as a plain GeoTIFF (no lossy format or creation option can
   * have touched its values): read it instead of making them again */
  const char *ext = o->streams ? strrchr(o->streams, '.') : NULL;
  const int gtiff = o->run.format ? !strcasecmp(o->run.format, "GTiff")
                                  : ext && (!strcasecmp(ext, ".tif") || !strcasecmp(ext, ".tiff"));
  const int reuse = o->streams && gtiff && !o->run.creation_options;
  char tmp[TR_PATH_MAX] = "", streams_at[TR_PATH_MAX] = "";
  if (reuse && (st = held_at(&o->run, streams_at, o->streams, err))) return st;
  if (!reuse) {
    if ((st = scratch_name(&o->run, tmp, o->order, "streams", err))) return st;
    if (!tmp[0]) return tr_fail(err, TR_ENOMEM, "out of memory");
    const tr_run_opts r = scratch_run(&o->run);
    st = run_up(o, &r, dir, TR_UP_STREAMS, 0, tmp, ws, err);
  }
  tr_order_params p;
  memset(&p, 0, sizeof p);
  int cells_short = 0; /* the stream cells do not fit --mem */
  if (!st) {
    st = tr_step_end(&o->run, tr_order_cells_build(&o->run, dir, reuse ? streams_at : tmp, (int)o->encoding, &p, err),
                     err);
    cells_short = st == TR_ENOMEM;
  }
  if (!reuse && tr_rank() == 0) tr_output_scratch_remove(tmp);
  if (cells_short) {
    tr_order_cells_free(&p);
    if (!wide) return run_up(o, &o->run, dir, TR_UP_ORDER, 0, o->order, ws, err);
    char was[sizeof err->msg];
    snprintf(was, sizeof was, "%s", err->msg);
    return tr_fail(err, TR_ENOMEM, "%s (with these --weights the order's stream cells come from exact sums: raise --mem or "
                   "--threshold)", was);
  }
  if (!st) {
    const tr_graph_opts g0 = graph_of(o, 0);
    st = tr_run_graph(&o->run, &g0, "d8_order_cells", order_prepare, &p, dir, o->order, err);
  }
  tr_order_cells_free(&p);
  return st;
}

/* A side file of the run gathered in `scratch` by its stages (--aap-stats'
 * lines; --stats-json's object when one product has statistics), copied
 * whole under the user's file's temporary name, where it waits for the
 * products (io/side_file.h); nothing when no stage wrote one (a run whose
 * only products are scratch rasters and a network). */
static int scratch_place(const char *scratch, const char *path, const char *what, tr_error *err) {
  FILE *in = fopen(scratch, "rb");
  if (!in) return TR_OK;
  tr_side_file *side;
  FILE *f;
  int st = tr_side_open(path, what, &side, &f, err);
  char buf[1 << 14];
  size_t n;
  while (!st && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, f);
  const int rerr = ferror(in);
  fclose(in);
  if (!st && rerr) {
    tr_side_abort(side);
    st = tr_fail(err, TR_EINTERNAL, "%s: cannot read the run's scratch file", what);
  } else if (!st)
    st = tr_side_close(side, err);
  return st;
}

/* The writer's step that puts every held product in place. */
static int held_commit(void *arg, tr_error *err) {
  const tr_run_opts *run = arg;
  return tr_held_commit(run->held, run, err);
}

/* The end of a run: every product put in place (rank 0 holds them), or
 * none; a run a signal ended says so (exit 8), whatever the stage that
 * noticed it first failed with. */
static int finish(const tr_run_opts *run, int st, tr_error *err) {
  const int stopped = run->cancelled && run->cancelled(run->progress_user);
  if (!st && stopped) st = tr_fail(err, TR_EINTERRUPTED, "interrupted");
  if (!st) st = tr_step_writer(run, held_commit, (void *)run, err);
  else tr_held_abort(run->held);
  if (st && st != TR_ERANK && st != TR_EINTERRUPTED && run->cancelled && run->cancelled(run->progress_user))
    st = tr_fail(err, TR_EINTERRUPTED, "interrupted");
  return st;
}

static int stages(const tr_flowgraph_opts *o, const char *dem, const fg_inputs *s, fg_stats *fs, tr_error *err);

/* The side files: --aap-stats gathers every stage's lines, in order, and
 * --stats-json every stage's object, in scratch files beside the first
 * product (whose folder the products need anyway, so a full disk where the
 * side files go is reported under the user's names); at the end of a run
 * that succeeded they are written whole under temporary names, then the
 * products are put in place, then the side files. */
int tr_flowgraph(const tr_flowgraph_opts *opts, const char *dem, tr_error *err) {
  int st = check_opts(opts, dem, err);
  fg_inputs s;
  if (!st) st = tr_step_end(&opts->run, survey(opts, dem, &s, err), err);
  if (st) return st;
  tr_flowgraph_opts oc = *opts;
  oc.run.stage_of_several = 1; /* each program's run is a stage: every rank learns how it ended */
  const char *outs[FG_NPRODUCTS], *first = NULL;
  products_of(opts, outs);
  for (int i = 0; i < FG_NPRODUCTS && !first; i++) first = outs[i];
  if (!first) first = side_first(opts); /* the scratch files' folder */
  char aap_tmp[TR_PATH_MAX] = "", json_tmp[TR_PATH_MAX] = "", ftr_tmp[TR_PATH_MAX] = "";
  fg_stats fs;
  stats_plan(opts, &fs);
  if (opts->graph.aap_stats) {
    st = scratch_name(&opts->run, aap_tmp, first, "aap", err);
    if (!st && !aap_tmp[0]) st = tr_fail(err, TR_ENOMEM, "out of memory");
    oc.graph.aap_stats = aap_tmp;
    oc.graph.aap_stats_append = 1;
  }
  if (!st && opts->run.stats_json) {
    st = scratch_name(&opts->run, json_tmp, first, "json", err);
    if (!st && !json_tmp[0]) st = tr_fail(err, TR_ENOMEM, "out of memory");
    oc.run.stats_json = json_tmp;
  }
  if (!st && opts->run.ft_report && opts->run.ft != TR_FT_OFF) {
    /* one line per graph program's run (fill, flowdir, d8_up, ...) */
    st = scratch_name(&opts->run, ftr_tmp, first, "ftr", err);
    if (!st && !ftr_tmp[0]) st = tr_fail(err, TR_ENOMEM, "out of memory");
    oc.run.ft_report = ftr_tmp;
    oc.graph.ft_report_append = 1;
  }
  for (int k = 0; k < 2 && !st && tr_rank() == 0; k++) {
    const char *tmp = k ? ftr_tmp : aap_tmp;
    if (!tmp[0]) continue;
    FILE *f = fopen(tmp, "w"); /* the stages append */
    if (!f) st = tr_fail(err, TR_EOUTPUT, "cannot create a scratch file beside '%s'", first);
    else {
      tr_tmp_created(tmp);
      fclose(f);
    }
  }
  /* every product is held under its temporary name to the end: all of them
   * or none (held.h); the side files follow them */
  oc.run.held = tr_held_new();
  if (!st && !oc.run.held) st = tr_fail(err, TR_ENOMEM, "out of memory");
  st = tr_step_end(&opts->run, st, err);
  if (!st) st = stages(&oc, dem, &s, &fs, err);
  /* the side files, written whole under their temporary names before any
   * product is put in place (a full disk there leaves no product), and put
   * in place after them */
  st = stats_write(opts->run.stats_json, &fs, st, err);
  if (!st && json_tmp[0] && !fs.on && tr_rank() == 0)
    st = scratch_place(json_tmp, opts->run.stats_json, "statistics file", err);
  if (!st && aap_tmp[0] && tr_rank() == 0) st = scratch_place(aap_tmp, opts->graph.aap_stats, "engine statistics", err);
  if (!st && ftr_tmp[0] && tr_rank() == 0)
    st = scratch_place(ftr_tmp, opts->run.ft_report, "fault-tolerance report", err);
  if (oc.run.held) st = finish(&oc.run, tr_step_end(&opts->run, st, err), err);
  if (!st && tr_rank() == 0) st = tr_side_commit_waiting(err);
  else tr_side_abort_waiting();
  if (tr_rank() == 0) {
    tr_output_scratch_remove(aap_tmp);
    tr_output_scratch_remove(json_tmp);
    tr_output_scratch_remove(ftr_tmp);
  }
  tr_held_free(oc.run.held);
  return st;
}

/* --sca or --twi: the "dinf_up" program over the angles (and the slope). */
typedef struct {
  int product, edge_check;
} dinf_up_job;

static int dinf_up_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const dinf_up_job *j = opts;
  tr_dinf_up_params *p = params;
  p->product = j->product;
  p->edge_check = j->edge_check;
  const int st = tr_d8_geom_init(in, &p->geom, err);
  if (st) return st;
  prod->type = GDT_Float32;
  prod->has_nodata = 1;
  prod->nodata = TR_DINF_UP_NODATA;
  prod->file_type = GDT_Float32;
  return TR_OK;
}

static int run_dinf_up(const tr_flowgraph_opts *o, const char *ang, const char *slp, int product, int edge_check,
                       const char *dst, tr_error *err) {
  const dinf_up_job j = {product, edge_check};
  const char *srcs[2] = {ang, slp};
  tr_graph_opts g = o->graph;
  if (g.cache_mb < 0 && product == TR_DINF_UP_SCA) g.cache_mb = 0; /* the angles are read once, in PEval */
  return tr_run_graph_inputs(&o->run, &g, "dinf_up", dinf_up_prepare, &j, srcs, product == TR_DINF_UP_SCA ? 1 : 2,
                             dst, err);
}

/* --hand or --d8-dist: the "dist_down" program. */
typedef struct {
  int product;
  tr_dir_encoding encoding;
  const char *src;
} down_job;

static int down_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const down_job *j = opts;
  tr_dist_down_params *p = params;
  p->product = j->product;
  p->encoding = (int32_t)j->encoding;
  p->src = j->src;
  const int st = tr_d8_geom_init(in, &p->geom, err);
  if (st) return st;
  prod->type = GDT_Float32;
  prod->has_nodata = 1;
  prod->nodata = TR_DOWN_NODATA;
  prod->file_type = GDT_Float32;
  return TR_OK;
}

/* Whether the streams raster at `path` has a stream cell (>= 1), a band of
 * rows at a time, stopping at the first. */
static int any_stream(const char *path, int *found, tr_error *err) {
  tr_input in;
  int st = tr_input_open(&in, path, 1, err);
  if (st) return st;
  *found = 0;
  float *buf = malloc((size_t)in.cols * 64 * sizeof *buf);
  if (!buf) st = tr_fail(err, TR_ENOMEM, "out of memory");
  for (int64_t r = 0; r < in.rows && !st && !*found; r += 64) {
    const int64_t n = in.rows - r < 64 ? in.rows - r : 64;
    st = tr_input_read_f32(&in, r, 0, n, in.cols, buf, in.cols, err);
    for (int64_t i = 0; !st && i < n * in.cols && !*found; i++)
      *found = !isnan(buf[i]) && !(in.has_nodata && buf[i] == (float)in.nodata) && buf[i] >= 1.0f;
  }
  free(buf);
  tr_input_close(&in);
  return st;
}

/* --hand and --d8-dist, after the method's products: the streams (the same
 * cells as --streams) into a scratch raster from the D8 directions `dir`,
 * or those given (--streams-in), then the distances. HAND's elevations are
 * `fel` (filled, read at band fel_band) and its angles `ang`. A NULL dir or
 * ang is made here from fel into a scratch raster beside the product
 * (directions: --dir-encoding), the directions only where they are read
 * (--d8-dist, or streams from --threshold). */
/* any_stream as the writer's step */
typedef struct {
  const char *path;
  int *found;
} any_stream_job;
static int any_stream_step(void *arg, tr_error *err) {
  const any_stream_job *j = arg;
  return any_stream(j->path, j->found, err);
}

static int dist_stages(const tr_flowgraph_opts *o, const char *dir, const char *fel, int fel_band, const char *ang,
                       const weights_sums *ws, int *stage, fg_stats *fs, tr_error *err) {
  const char *first = o->hand ? o->hand : o->d8_dist;
  char dir_tmp[TR_PATH_MAX] = "", ang_tmp[TR_PATH_MAX] = "", src_tmp[TR_PATH_MAX] = "";
  int st = TR_OK;
  const int need_dir = !dir && (o->d8_dist || !o->streams_in);
  if (need_dir && (st = scratch_name(&o->run, dir_tmp, first, "dir", err))) return st;
  if (o->hand && !ang && (st = scratch_name(&o->run, ang_tmp, first, "ang", err))) return st;
  if (!o->streams_in && (st = scratch_name(&o->run, src_tmp, first, "src", err))) return st;
  if ((need_dir && !dir_tmp[0]) || (o->hand && !ang && !ang_tmp[0]) || (!o->streams_in && !src_tmp[0]))
    return tr_fail(err, TR_ENOMEM, "out of memory");
  tr_run_opts r = scratch_run(&o->run);
  r.band = fel_band;
  for (int k = 0; k < 2 && !st; k++) {
    if (k ? !ang_tmp[0] : !dir_tmp[0]) continue;
    tr_flowdir_opts fo;
    tr_flowdir_opts_init(&fo);
    fo.filled = 1;
    fo.encoding = o->encoding;
    fo.method = k ? TR_FLOW_DINF : TR_FLOW_D8;
    st = tr_flowdir(&r, &o->graph, &fo, fel, k ? ang_tmp : dir_tmp, err);
    if (!st) st = stage_done(&o->run, stage, err);
  }
  if (!dir) dir = dir_tmp;
  if (!ang) ang = ang_tmp;
  tr_flowgraph_opts ob = *o;
  ob.run.band = 1;
  const char *src = o->streams_in ? o->streams_in : src_tmp;
  if (!o->streams_in) {
    const tr_run_opts rs = scratch_run(&ob.run);
    if (!st) st = run_up(&ob, &rs, dir, TR_UP_STREAMS, 0, src_tmp, ws, err);
    if (!st) st = stage_done(&o->run, stage, err);
  }
  /* with no stream cell every distance would be nodata: refused, so that a
   * threshold above the largest accumulation is said, not written */
  int found = 1;
  any_stream_job as = {src, &found};
  if (!st) st = tr_step_writer(&o->run, any_stream_step, &as, err);
  if (!st) st = tr_dist_bcast(&o->run, &found, (int)sizeof found, err);
  if (!st && !found && o->streams_in)
    st = tr_fail(err, TR_EINPUT, "%s: no stream cell: no cell of --streams-in '%s' is 1 or more",
                 o->hand ? "--hand" : "--d8-dist", o->streams_in);
  else if (!st && !found)
    st = tr_fail(err, TR_EINPUT, "%s: no stream cell: no accumulation reaches --threshold %g (give a smaller one)",
                 o->hand ? "--hand" : "--d8-dist", o->threshold);
  tr_graph_opts g = o->graph;
  if (g.cache_mb < 0) g.cache_mb = 0; /* every input is read once, in PEval */
  if (!st && o->d8_dist) {
    const down_job j = {TR_DOWN_D8DIST, o->encoding, dir};
    const char *srcs[2] = {dir, src};
    st = tr_run_graph_inputs(&ob.run, &g, "dist_down", down_prepare, &j, srcs, 2, o->d8_dist, err);
    if (!st) stats_take(o, fs, "d8_dist", o->d8_dist);
    if (!st) st = stage_done(&o->run, stage, err);
  }
  if (!st && o->hand) {
    const down_job j = {TR_DOWN_HAND, o->encoding, ang};
    const char *srcs[3] = {ang, fel, src};
    st = tr_run_graph_inputs(&ob.run, &g, "dist_down", down_prepare, &j, srcs, 3, o->hand, err);
    if (!st) stats_take(o, fs, "hand", o->hand);
    if (!st) st = stage_done(&o->run, stage, err);
  }
  if (tr_rank() == 0) {
    tr_output_scratch_remove(dir_tmp);
    tr_output_scratch_remove(ang_tmp);
    tr_output_scratch_remove(src_tmp);
  }
  return st;
}

/* --method dinf: the angle (and slope) from the DEM (tr_flowdir: fill
 * unless --filled, then the "dinf" program), into --ang / --slp or scratch
 * rasters beside the first product; then sca and twi over them. */
static int dinf_stages(const tr_flowgraph_opts *o, const char *dem, fg_stats *fs, tr_error *err) {
  int stage = 0, st;
  if (o->ang_in) { /* TauDEM areadinf: sca from the angles given; dinfdistdown: HAND along them */
    tr_flowgraph_opts ob = *o;
    ob.run.band = 1;
    st = TR_OK;
    if (o->sca) {
      st = run_dinf_up(&ob, o->ang_in, NULL, TR_DINF_UP_SCA, !o->no_edge_check, o->sca, err);
      if (!st) stats_take(o, fs, "sca", o->sca);
      if (!st) st = stage_done(&o->run, &stage, err);
    }
    if (!st && o->hand) {
      const weights_sums ws = {TR_SUMS_ROUND, 0};
      st = dist_stages(o, NULL, dem, 1, o->ang_in, &ws, &stage, fs, err);
    }
    return st;
  }
  if (o->sca_in) { /* TauDEM twi: twi (and SPI) from the slope and sca given */
    tr_flowgraph_opts ob = *o;
    ob.run.band = 1;
    st = TR_OK;
    if (o->twi) {
      st = run_dinf_up(&ob, o->sca_in, o->slp_in, TR_DINF_UP_TWI_GIVEN, 0, o->twi, err);
      if (!st) stats_take(o, fs, "twi", o->twi);
      if (!st) st = stage_done(&o->run, &stage, err);
    }
    if (!st && o->spi) {
      st = run_dinf_up(&ob, o->sca_in, o->slp_in, TR_DINF_UP_SPI_GIVEN, 0, o->spi, err);
      if (!st) stats_take(o, fs, "spi", o->spi);
      if (!st) st = stage_done(&o->run, &stage, err);
    }
    return st;
  }
  const char *first = o->ang   ? o->ang
                      : o->slp ? o->slp
                      : o->sca ? o->sca
                      : o->twi ? o->twi
                      : o->spi ? o->spi
                      : o->hand ? o->hand
                                : o->d8_dist;
  char ang_tmp[TR_PATH_MAX] = "", slp_tmp[TR_PATH_MAX] = "", ang_at[TR_PATH_MAX] = "", slp_at[TR_PATH_MAX] = "",
       fel_tmp[TR_PATH_MAX] = "";
  const int need_slp_tmp = (o->twi || o->spi) && !o->slp;
  /* --hand and --d8-dist read the filled DEM: the DEM itself with --filled */
  const int need_fel = (o->hand || o->d8_dist) && !o->filled;
  if (!o->ang && (st = scratch_name(&o->run, ang_tmp, first, "ang", err))) return st;
  if (need_slp_tmp && (st = scratch_name(&o->run, slp_tmp, first, "slp", err))) return st;
  if (need_fel && (st = scratch_name(&o->run, fel_tmp, first, "fel", err))) return st;
  if ((!o->ang && !ang_tmp[0]) || (need_slp_tmp && !slp_tmp[0]) || (need_fel && !fel_tmp[0]))
    return tr_fail(err, TR_ENOMEM, "out of memory");
  tr_flowdir_opts fo;
  tr_flowdir_opts_init(&fo);
  fo.filled = o->filled;
  fo.burn = o->burn;
  fo.method = TR_FLOW_DINF;
  fo.slope = need_slp_tmp ? slp_tmp : o->slp;
  fo.filled_out = need_fel ? fel_tmp : NULL;
  const tr_run_opts r = o->ang ? o->run : scratch_run(&o->run);
  st = tr_flowdir(&r, &o->graph, &fo, dem, o->ang ? o->ang : ang_tmp, err);
  if (!st && o->ang) stats_take(o, fs, "ang", o->ang);
  if (!st) st = stage_done(&o->run, &stage, err);
  if (!st && (o->sca || o->twi || o->spi || o->hand) && o->ang) st = held_at(&o->run, ang_at, o->ang, err);
  if (!st && (o->twi || o->spi) && o->slp) st = held_at(&o->run, slp_at, o->slp, err);
  const char *ang = o->ang ? ang_at : ang_tmp, *slp = o->slp ? slp_at : slp_tmp;
  tr_flowgraph_opts ob = *o;
  ob.run.band = 1;
  if (!st && o->sca) {
    st = run_dinf_up(&ob, ang, NULL, TR_DINF_UP_SCA, !o->no_edge_check, o->sca, err);
    if (!st) stats_take(o, fs, "sca", o->sca);
    if (!st) st = stage_done(&o->run, &stage, err);
  }
  if (!st && o->twi) {
    st = run_dinf_up(&ob, ang, slp, TR_DINF_UP_TWI, 0, o->twi, err);
    if (!st) stats_take(o, fs, "twi", o->twi);
    if (!st) st = stage_done(&o->run, &stage, err);
  }
  if (!st && o->spi) {
    st = run_dinf_up(&ob, ang, slp, TR_DINF_UP_SPI, 0, o->spi, err);
    if (!st) stats_take(o, fs, "spi", o->spi);
    if (!st) st = stage_done(&o->run, &stage, err);
  }
  if (!st && (o->hand || o->d8_dist)) {
    const weights_sums ws = {TR_SUMS_ROUND, 0}; /* no --weights with dinf */
    st = dist_stages(o, NULL, need_fel ? fel_tmp : dem, need_fel ? 1 : o->run.band, ang, &ws, &stage, fs, err);
  }
  if (tr_rank() == 0) {
    tr_output_scratch_remove(ang_tmp);
    tr_output_scratch_remove(slp_tmp);
    tr_output_scratch_remove(fel_tmp);
  }
  return st;
}

/* --acc with --method quinn|holmgren|freeman: the filled DEM and its
 * D-infinity angles (tr_flowdir, which drains the flats), into scratch
 * rasters beside --acc, then the "mfd_up" program over both. */
static int mfd_up_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const tr_flowgraph_opts *o = opts;
  tr_mfd_up_params *p = params;
  p->rule = o->method == TR_FLOW_QUINN      ? TR_MFD_QUINN
            : o->method == TR_FLOW_HOLMGREN ? TR_MFD_HOLMGREN
            : o->method == TR_FLOW_RHO8     ? TR_MFD_RHO8
                                            : TR_MFD_FREEMAN;
  p->exponent = o->method == TR_FLOW_QUINN ? 1.0 : o->method == TR_FLOW_HOLMGREN ? o->holmgren_x : o->freeman_p;
  p->seed = o->seed;
  p->unit = o->units == TR_ACC_AREA ? cell_area(in) : 1.0;
  const int st = tr_d8_geom_init(in, &p->geom, err);
  if (st) return st;
  prod->type = GDT_Float64;
  prod->has_nodata = 1;
  prod->nodata = TR_MFD_UP_NODATA;
  prod->file_type = GDT_Float64;
  return TR_OK;
}

static int mfd_stages(const tr_flowgraph_opts *o, const char *dem, fg_stats *fs, tr_error *err) {
  int stage = 0, st;
  char ang_tmp[TR_PATH_MAX] = "", fel_tmp[TR_PATH_MAX] = "";
  const int need_fel = !o->filled;
  if ((st = scratch_name(&o->run, ang_tmp, o->acc, "ang", err))) return st;
  if (need_fel && (st = scratch_name(&o->run, fel_tmp, o->acc, "fel", err))) return st;
  if (!ang_tmp[0] || (need_fel && !fel_tmp[0])) return tr_fail(err, TR_ENOMEM, "out of memory");
  tr_flowdir_opts fo;
  tr_flowdir_opts_init(&fo);
  fo.filled = o->filled;
  fo.burn = o->burn;
  fo.method = TR_FLOW_DINF;
  fo.filled_out = need_fel ? fel_tmp : NULL;
  const tr_run_opts r = scratch_run(&o->run);
  st = tr_flowdir(&r, &o->graph, &fo, dem, ang_tmp, err);
  if (!st) st = stage_done(&o->run, &stage, err);
  if (!st) {
    tr_flowgraph_opts ob = *o;
    ob.run.band = need_fel ? 1 : o->run.band;
    const char *srcs[2] = {need_fel ? fel_tmp : dem, ang_tmp};
    st = tr_run_graph_inputs(&ob.run, &ob.graph, "mfd_up", mfd_up_prepare, o, srcs, 2, o->acc, err);
    if (!st) stats_take(o, fs, "acc", o->acc);
    if (!st) st = stage_done(&o->run, &stage, err);
  }
  if (tr_rank() == 0) {
    tr_output_scratch_remove(ang_tmp);
    tr_output_scratch_remove(fel_tmp);
  }
  return st;
}

/* The stages, each product held (o->run.held). */
static int stages(const tr_flowgraph_opts *o, const char *dem, const fg_inputs *s, fg_stats *fs, tr_error *err) {
  int stage = 0;
  if (o->method == TR_FLOW_DINF) return dinf_stages(o, dem, fs, err);
  if (is_mfd(o->method)) return mfd_stages(o, dem, fs, err);
  /* the DEM is read at its band (-b); every raster after it (directions,
   * scratch rasters, --dir-in, --weights, --filled-in) at band 1 */
  const int dem_band = o->run.band;
  tr_flowgraph_opts ob = *o;
  ob.run.band = 1;
  if (o->dir_in) {
    int st = products(&ob, s, o->dir_in, NULL, dem_band, o->filled_in ? o->filled_in : dem,
                      o->filled_in ? 1 : dem_band, NULL, &stage, fs, err);
    /* --hand with --dir-in has --filled-in (check_opts) */
    if (!st && (o->hand || o->d8_dist)) st = dist_stages(o, o->dir_in, o->filled_in, 1, NULL, &s->ws, &stage, fs, err);
    return st;
  }

  /* From the DEM: directions first (tr_flowdir: fill unless --filled, flats,
   * D8, --slope), into --dir or a scratch raster beside the first product;
   * the network's elevations are the filled DEM it made (kept in a scratch
   * raster only when the network needs them). */
  const char *outs[FG_NPRODUCTS], *first = NULL;
  products_of(o, outs);
  for (int i = 0; i < FG_NPRODUCTS && !first; i++) first = outs[i];
  if (!first) first = side_first(o);
  char dir_tmp[TR_PATH_MAX] = "", fel_tmp[TR_PATH_MAX] = "", dir_at[TR_PATH_MAX] = "", sd8_tmp[TR_PATH_MAX] = "",
       sd8_at[TR_PATH_MAX] = "";
  /* the network's elevations, and --hand's */
  const int need_fel = (o->network || o->coord || o->hand) && !o->filled_in && !o->filled;
  /* the basin statistics' mean slope is sd8's: the user's --slope, else a
   * scratch raster made beside the directions */
  const int need_sd8 = o->basin_stats && !o->slope;
  int st;
  if (!o->dir_out && (st = scratch_name(&o->run, dir_tmp, first, "dir", err))) return st;
  if (need_fel && (st = scratch_name(&o->run, fel_tmp, first, "fel", err))) return st;
  if (need_sd8 && (st = scratch_name(&o->run, sd8_tmp, first, "sd8", err))) return st;
  if ((!o->dir_out && !dir_tmp[0]) || (need_fel && !fel_tmp[0]) || (need_sd8 && !sd8_tmp[0]))
    return tr_fail(err, TR_ENOMEM, "out of memory");
  tr_flowdir_opts fo;
  tr_flowdir_opts_init(&fo);
  fo.filled = o->filled;
  fo.burn = o->burn;
  fo.encoding = o->encoding;
  fo.slope = need_sd8 ? sd8_tmp : o->slope;
  fo.filled_out = need_fel ? fel_tmp : NULL;
  const tr_run_opts r = o->dir_out ? o->run : scratch_run(&o->run);
  st = tr_flowdir(&r, &o->graph, &fo, dem, o->dir_out ? o->dir_out : dir_tmp, err);
  if (!st && o->dir_out) stats_take(o, fs, "dir", o->dir_out);
  if (!st) st = stage_done(&o->run, &stage, err);
  /* --dir is held: the later stages read it there */
  if (!st && o->dir_out) st = held_at(&o->run, dir_at, o->dir_out, err);
  if (!st && o->basin_stats && o->slope) st = held_at(&o->run, sd8_at, o->slope, err);
  const int only_dir = !o->acc && !o->streams && !o->order && !o->basins && !o->network && !o->basin_stats &&
                       !o->tree && !o->coord &&
                       !o->moved_outlets && !o->hand && !o->d8_dist && !o->plen && !o->tlen && !o->gord;
  const char *elev = o->filled_in ? o->filled_in : need_fel ? fel_tmp : dem;
  if (!st && !only_dir)
    st = products(&ob, s, o->dir_out ? dir_at : dir_tmp, dem, dem_band, elev, elev == dem ? dem_band : 1,
                  need_sd8 ? sd8_tmp : sd8_at, &stage, fs, err);
  if (!st && (o->hand || o->d8_dist))
    st = dist_stages(o, o->dir_out ? dir_at : dir_tmp, elev, elev == dem ? dem_band : 1, NULL, &s->ws, &stage, fs,
                     err);
  if (tr_rank() == 0) {
    tr_output_scratch_remove(dir_tmp);
    tr_output_scratch_remove(fel_tmp);
    tr_output_scratch_remove(sd8_tmp);
  }
  return st;
}

static int outlet_cmp(const void *pa, const void *pb) {
  const tr_basin_outlet *a = pa, *b = pb;
  return (a->label > b->label) - (a->label < b->label);
}

/* The outlet of each basin, sorted by label: per link, the link's last
 * cell (its other cells and every cell draining into them drain through
 * it); per edge outlet or outlet point, the seed cell itself. NULL when out
 * of memory. */
static tr_basin_outlet *outlets_of(const tr_links *links, const tr_basin_seed *seeds, int64_t nseeds, int64_t *n) {
  const int64_t m = links ? links->nlinks : nseeds;
  tr_basin_outlet *v = malloc((size_t)(m ? m : 1) * sizeof *v);
  if (!v) return NULL;
  *n = 0;
  for (int64_t i = 0; i < m; i++) {
    if (links && links->links[i].ncells == 0) continue; /* a zero-length link at a junction: no cell */
    v[(*n)++] = links ? (tr_basin_outlet){(int32_t)i, links->links[i].last}
                      : (tr_basin_outlet){seeds[i].label, seeds[i].cell};
  }
  /* seeds come sorted by cell (their labels distinct); links by number */
  if (!links) qsort(v, (size_t)*n, sizeof *v, outlet_cmp);
  return v;
}

/* Every product after the directions, from the direction raster `dir`
 * (computed from `dem` in this run when dem is given; `sd8` its slope,
 * where the basin statistics read it). */
static int products(const tr_flowgraph_opts *o, const fg_inputs *s, const char *dir, const char *dem, int dem_band,
                    const char *elev, int elev_band, const char *sd8, int *stage, fg_stats *fs, tr_error *err) {
  int st = tr_step_end(&o->run, check_valid(dir, dem, dem_band, s, err), err);
  if (st) return st;
  const int edge = !o->no_edge_check;
  const weights_sums ws = s->ws;
  if (o->acc && (st = run_up(o, &o->run, dir, TR_UP_ACC, edge, o->acc, &ws, err))) return st;
  if (o->acc) stats_take(o, fs, "acc", o->acc);
  if (o->acc && (st = stage_done(&o->run, stage, err))) return st;
  if (o->streams && (st = run_up(o, &o->run, dir, TR_UP_STREAMS, 0, o->streams, &ws, err))) return st;
  if (o->streams) stats_take(o, fs, "streams", o->streams);
  if (o->streams && (st = stage_done(&o->run, stage, err))) return st;
  if (o->order && (st = run_order(o, dir, &ws, err))) return st;
  if (o->order) stats_take(o, fs, "order", o->order);
  if (o->order && (st = stage_done(&o->run, stage, err))) return st;
  if ((o->plen || o->tlen || o->gord) && (st = len_stages(o, dir, stage, fs, err))) return st;
  /* --basin-stats needs basins: without --basins they go to a scratch raster */
  const int want_basins = o->basins || o->basin_stats || o->outlet_table;
  const int by_links = want_basins && o->basins_by == TR_BASINS_LINKS;
  const int need_links = o->network || by_links || o->tree || o->coord;
  /* the outlets' seeds: for their basins, or only where they went (-om) */
  const int want_seeds = (want_basins && !by_links) || o->moved_outlets;
  tr_outlet_move *moves = NULL; /* every outlet point's, for -om and the outlet table */
  int64_t nmoves = 0;
  /* (the walk down the path to the streams given reads them, not the area) */
  const int need_acc =
      need_links || (want_seeds && o->outlets && ((o->snap > 0 && !o->streams_in) || o->snap_distance > 0));
  if (!need_links && !want_seeds) return TR_OK;

  /* the no-edge-check accumulation the links (and snapping) read */
  char tmp[TR_PATH_MAX] = "", acc_at[TR_PATH_MAX] = "";
  const char *acc = need_acc ? o->acc_in : NULL; /* given (streamnet's -ad8) */
  if (need_acc && !acc && o->acc && o->no_edge_check) {
    /* the user's --acc, held */
    if ((st = held_at(&o->run, acc_at, o->acc, err))) return st;
    acc = acc_at;
  }
  if (need_acc && !acc) {
    const char *beside = o->network        ? o->network
                         : o->basins       ? o->basins
                         : o->basin_stats  ? o->basin_stats
                         : o->moved_outlets ? o->moved_outlets
                                            : side_first(o);
    if ((st = scratch_name(&o->run, tmp, beside, "acc", err)))
      return st;
    if (!tmp[0]) return tr_fail(err, TR_ENOMEM, "out of memory");
    const tr_run_opts r = scratch_run(&o->run);
    st = run_up(o, &r, dir, TR_UP_ACC, 0, tmp, &ws, err);
    if (st) return st;
    acc = tmp;
    if ((st = stage_done(&o->run, stage, err))) {
      if (tr_rank() == 0) tr_output_scratch_remove(tmp);
      return st;
    }
  }
  const double area = o->units == TR_ACC_AREA ? 1.0 : s->cell_area;
  tr_links_src ls = {.run = &o->run,
                     .dir = dir,
                     .acc = acc,
                     .elev = elev,
                     .elev_band = elev_band,
                     .encoding = (int)o->encoding,
                     .threshold = o->threshold,
                     .area_factor = area,
                     .streams = o->streams_in};
  tr_links links;
  memset(&links, 0, sizeof links);
  tr_basin_seed *seeds = NULL;
  int64_t nseeds = 0;
  if (need_links) st = tr_links_build(&ls, &links, err);
  /* TauDEM writes empty files then; an empty tree is more likely a wrong
   * --streams-in or --threshold than what was meant */
  if (!st && (o->tree || o->coord) && links.nlinks == 0) {
    const char *what = o->tree ? "--tree" : "--coord";
    st = o->streams_in ? tr_fail(err, TR_EINPUT, "%s: no stream link: no cell of '%s' is 1 or more where a flow "
                                                 "direction is", what, o->streams_in)
                       : tr_fail(err, TR_EINPUT, "%s: no stream link: no accumulation reaches --threshold %g", what,
                                 o->threshold);
  }
  if (!st && o->network) st = tr_links_write(&ls, &links, o->network, o->network_format, err);
  if (!st && o->network) st = stage_done(&o->run, stage, err);
  if (!st && (o->tree || o->coord)) st = tr_links_text_write(&ls, &links, o->tree, o->coord, err);
  if (!st && (o->tree || o->coord)) st = stage_done(&o->run, stage, err);
  if (!st && want_seeds) {
    tr_seed_src ss = {.run = &o->run,
                      .dir = dir,
                      .acc = acc,
                      .points = o->basins_by == TR_BASINS_OUTLETS ? o->outlets : NULL,
                      .encoding = (int)o->encoding,
                      .threshold = o->threshold,
                      .snap = o->snap,
                      .snap_distance = o->snap_distance,
                      .id_field = o->id_field,
                      .moves = o->moved_outlets || o->outlet_table ? &moves : NULL,
                      .nmoves = &nmoves,
                      .streams = o->streams_in};
    st = tr_seeds_build(&ss, &seeds, &nseeds, err);
    if (!st && o->moved_outlets) st = tr_outlets_write(&o->run, dir, moves, nmoves, o->moved_outlets, NULL, err);
    if (!st && o->moved_outlets) st = stage_done(&o->run, stage, err);
  }
  char w_tmp[TR_PATH_MAX] = "", w_at[TR_PATH_MAX] = "";
  if (!st && (o->basin_stats || o->outlet_table) && !o->basins) {
    st = scratch_name(&o->run, w_tmp, o->basin_stats ? o->basin_stats : o->outlet_table, "basins", err);
    if (!st && !w_tmp[0]) st = tr_fail(err, TR_ENOMEM, "out of memory");
  }
  if (!st && want_basins) {
    basin_job j = {o, by_links ? links.seeds : seeds, by_links ? links.nseeds : nseeds, dir};
    const tr_graph_opts g = graph_of(o, 0);
    const tr_run_opts r = o->basins ? o->run : scratch_run(&o->run);
    st = tr_run_graph(&r, &g, "d8_basins", basin_prepare, &j, dir, o->basins ? o->basins : w_tmp, err);
    if (!st && o->basins) stats_take(o, fs, "basins", o->basins);
    if (!st) st = stage_done(&o->run, stage, err);
  }
  if (!st && o->basins && (o->basin_stats || o->outlet_table)) st = held_at(&o->run, w_at, o->basins, err);
  if (!st && o->outlet_table) {
    st = tr_outlet_table_write(&o->run, dir, (int)o->encoding, o->basins ? w_at : w_tmp, moves, nmoves, o->outlet_table,
                               err);
    if (!st) st = stage_done(&o->run, stage, err);
  }
  if (!st && o->basin_stats) {
    int64_t nout = 0;
    tr_basin_outlet *outl = st ? NULL : outlets_of(by_links ? &links : NULL, seeds, nseeds, &nout);
    if (!st && !outl) st = tr_fail(err, TR_ENOMEM, "out of memory");
    st = tr_step_end(&o->run, st, err);
    tr_basin_stats_src bs = {&o->run, o->basins ? w_at : w_tmp, dem, dem_band, sd8, outl, nout, s->cell_area};
    if (!st) st = tr_basin_stats_write(&bs, o->basin_stats, err);
    if (!st) st = stage_done(&o->run, stage, err);
    free(outl);
  }
  free(seeds);
  free(moves);
  tr_links_free(&links);
  if (tr_rank() == 0) {
    tr_output_scratch_remove(tmp);
    tr_output_scratch_remove(w_tmp);
  }
  return st;
}
