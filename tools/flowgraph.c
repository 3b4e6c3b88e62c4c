/*
 * flowgraph.c - `terrafort flowgraph`: D8 accumulation, streams, Strahler
 * order, basins and the stream network, flow lengths, HAND and distances to
 * the streams, D-infinity's products, over tr_flowgraph(), with TauDEM's
 * option names accepted beside the long ones.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort flowgraph [options] [DEM] PRODUCTS...\n"
    "       terrafort flowgraph --dir-in p.tif --acc ad8.tif --streams src.tif --order ord.tif ...\n"
    "       terrafort flowgraph -p p.tif -fel fel.tif -ad8 ad8.tif -src src.tif -ord ord.tif\n"
    "                           -tree tree.txt -coord coord.txt -net net.shp -w w.tif   (streamnet)\n"
    "Computes, in one run, only the products asked for: D8 flow directions from a DEM (filled\n"
    "first, flats drained by Barnes et al. 2014; TauDEM d8flowdir), contributing area (TauDEM\n"
    "aread8), stream cells, Strahler order, one basin per stream link and the stream network\n"
    "with TauDEM streamnet's attributes, upslope lengths and grid order (gridnet), HAND and\n"
    "distances to the streams; D-infinity angles, slopes, sca and twi.\n\n"
    "Directions:\n"
    "  --dir-in FILE, -p FILE an existing D8 direction raster (-p: when no DEM is given)\n"
    "  --dir-encoding E       taudem (default: 1 = E .. 8 = SE counter-clockwise), esri, grass\n"
    "  --dir FILE, -p FILE    write the directions computed from DEM (-p: when a DEM is given)\n"
    "  --filled               the DEM is already depression-free: do not fill it\n"
    "  --slope FILE, -sd8 FILE     TauDEM's sd8: drop / distance along the direction (Float32)\n"
    "Products:\n"
    "  --acc FILE, -ad8 FILE  accumulation (Float64; nodata -1)\n"
    "  --streams FILE, -src FILE   stream cells, 1 where accumulation >= --threshold (Byte)\n"
    "  --order FILE, -ord FILE     Strahler order on stream cells, 0 elsewhere (Byte)\n"
    "  --basins FILE, -w FILE      one label per stream link = its LINKNO (Int32; -gw FILE:\n"
    "                         gagewatershed's spelling)\n"
    "  --basins-by links|edges|outlets   a basin per stream link (default), per cell where\n"
    "                         flow leaves the data, or per outlet point\n"
    "  --outlets FILE, -o FILE     outlet points (OGR; another CRS is reprojected): basins\n"
    "                         labelled by feature id\n"
    "  --id-field NAME        label basins by this integer field of the outlets instead\n"
    "  --snap N, -md N        move outlets down the flow path at most N cells to a stream (50)\n"
    "  --snap-distance D      instead: move each outlet to the largest accumulation within D\n"
    "                         (map units) of it\n"
    "  --moved-outlets FILE, -om FILE   where each outlet went: points with id and Dist_moved\n"
    "                         (cells; -1: no stream within reach), TauDEM moveoutletstostreams\n"
    "  --outlet-table FILE, -id FILE   'id iddown' per outlet: the outlet its flow meets next\n"
    "                         (-1: none), TauDEM gagewatershed's -id\n"
    "  --network FILE, -net FILE   stream links as lines (GeoPackage unless the extension or -nf says)\n"
    "  --plen FILE, -plen FILE     longest upslope D8 path length (Float32; nodata -1)\n"
    "  --tlen FILE, -tlen FILE     total upslope path length: every upslope step summed (Float32)\n"
    "  --gord FILE, -gord FILE     grid Strahler order of every cell (Int16; nodata -1; TauDEM gridnet)\n"
    "  --basin-stats FILE.csv      per basin: label, cells, area, min, mean, max, relief, mean_slope,\n"
    "                         outlet_x, outlet_y (CSV; basins made even without --basins)\n"
    ;
/* the rest of it (one literal would pass the 4095 characters C99 promises) */
static const char *usage_more =
    "D-infinity (Tarboton 1997; TauDEM dinfflowdir, areadinf, twi):\n"
    "  --method d8|dinf       how flow leaves a cell (default d8; D-infinity's products alone\n"
    "                         choose dinf, and -fel FILE is then the filled DEM)\n"
    "  --ang FILE, -ang FILE  flow angle, radians counter-clockwise from east (Float32; nodata\n"
    "                         -3.4028235e+38 as TauDEM; flats by Garbrecht & Martz)\n"
    "  --slp FILE, -slp FILE  D-infinity slope, drop / distance (Float32; nodata -1)\n"
    "  --sca FILE, -sca FILE  specific catchment area: contributing area / cell width, flow\n"
    "                         split by angle (Float32; nodata -1; -nc: no edge check)\n"
    "  --twi FILE, -twi FILE  wetness index ln(sca / slp), sca without the edge check (Float32)\n"
    "  --spi FILE             stream power index sca x slp, the same sca (Float32; nodata -1)\n"
    "  --ang-in FILE          existing angles instead of a DEM: --sca alone from them (TauDEM\n"
    "                         areadinf -ang ANG -sca SCA, which is also taken in that form);\n"
    "                         or --hand from them, the filled DEM (--filled) and --streams-in\n"
    "                         (dinfdistdown -ang ANG -fel FEL -src SRC -dd DD [-m ave v], also taken)\n"
    "  --slp-in FILE --sca-in FILE   an existing slope and sca instead of a DEM: --twi, --spi\n"
    "                         from them (TauDEM twi -slp SLP -sca SCA -twi TWI, also taken)\n"
    "Distances to the streams (the --streams cells; TauDEM dinfdistdown, d8hdisttostrm):\n"
    "  --hand FILE, -dd FILE  height above nearest drainage: the drop to the stream along the\n"
    "                         D-infinity angles, averaged by the proportions (ave v; Float32;\n"
    "                         -m ave v, dinfdistdown's, is accepted and is the only one)\n"
    "  --d8-dist FILE, -dist FILE  horizontal length of the D8 path to the stream (Float32)\n"
    "                         (both nodata -3.4028235e+38 where no stream is reached)\n"
    ;
/* its last part */
static const char *usage_end =
    "Multiple flow directions (accumulation in cells as RichDEM, or --units area; flats drained\n"
    "as dinf):\n"
    "  --method quinn|holmgren|freeman   --acc FILE alone: flow split between all lower\n"
    "                         neighbours, Quinn (1991), Holmgren (1994), Freeman (1991)\n"
    "  --holmgren-x X         Holmgren's exponent, 1 to 100 (default 4)\n"
    "  --freeman-p P          Freeman's exponent, above 0 to 100 (default 1.1)\n"
    "  --method rho8          --acc FILE alone: all flow to one lower neighbour, Fairfield &\n"
    "                         Leymarie (1991), a diagonal's drop divided by 2 - r, r random\n"
    "  --seed N               Rho8's draws, a hash of (N, cell, neighbour): the same bytes for\n"
    "                         any tiling, thread or rank count (0 to 2^53; default 1)\n"
    "Accumulation:\n"
    "  --units cells|area     contributing cells (default) or area in map units\n"
    "  --weights FILE, -wg FILE    a weight per cell instead of 1\n"
    "  --no-edge-check, -nc   keep cells whose area may reach off the DEM or into nodata\n"
    "  --acc-type Float32|Float64  the accumulation's type (default Float64: exact to 2^53)\n"
    "Streams and network:\n"
    "  --threshold N, -thresh N    stream cells: no-edge-check accumulation >= N (default 100)\n"
    "  --filled-in FILE, -fel FILE elevations for strmDrop and Slope (else the DEM, if given)\n"
    "  -nf DRIVER             OGR driver of --network\n"
    "  --tree FILE, -tree FILE     the link tree as TauDEM streamnet writes tree.txt (text)\n"
    "  --coord FILE, -coord FILE   the links' points as TauDEM's coord.txt: x y distance to the\n"
    "                         outlet, elevation (needs -fel or a DEM), area (text)\n"
    "  --streams-in FILE      stream cells given (>= 1; e.g. TauDEM threshold's src) instead of\n"
    "                         --threshold: --order, --basins, --network, --tree, --coord, --hand,\n"
    "                         --d8-dist follow them\n"
    "  --acc-in FILE          the accumulation given (with --streams-in): the network's areas\n"
    "  (streamnet's form: -p, -src and -ad8 with no DEM, and one of -ord -tree -coord -net -w:\n"
    "  -src is --streams-in and -ad8 --acc-in; moveoutletstostreams' -p -src -o -om: -src is\n"
    "  --streams-in, where the outlets stop on their way down)\n"
    "Engine (as fill): --schedule, --staleness, --ds-max, --l-bottom, --l-up,\n"
    "  --straggler-ratio, --cache-mb, --aap-stats FILE\n"
    "Memory (as fill): --mem SIZE (each stage, each rank; tile state beyond it is spilled\n"
    "  to disk), --tmp DIR (the spill folder; default: the output's)\n" TF_BURN_HELP;

typedef struct {
  tr_flowgraph_opts o;
  const char *p;   /* -p: directions in or out, by whether a DEM is given */
  const char *dem; /* -z */
  const char *ad8, *src; /* -ad8, -src: outputs (--acc, --streams), or streamnet's inputs */
  int method_given; /* --method; else D-infinity's products choose dinf */
  int ang_taudem;   /* the angles were named -ang: areadinf's input in its form */
  int slp_taudem, sca_taudem; /* -slp, -sca: twi's inputs in its form */
  int m_given;      /* -m ave v (dinfdistdown's; only with --hand) */
  int seed_given;   /* --seed (only with --method rho8) */
} flow_args;

/* Long and TauDEM names of the file-valued options, and where each goes. */
typedef struct {
  const char *long_name, *taudem;
  size_t offset;
} file_flag;

#define FF(l, t, field) {l, t, offsetof(flow_args, field)}
static const file_flag file_flags[] = {
    FF("--dir-in", NULL, o.dir_in),    FF("--dir", NULL, o.dir_out),        FF("--acc", NULL, o.acc),
    FF("--streams", NULL, o.streams),  FF(NULL, "-ad8", ad8),               FF(NULL, "-src", src),
    FF("--order", "-ord", o.order),    FF("--basins", "-w", o.basins),
    FF("--network", "-net", o.network), FF("--weights", "-wg", o.weights),  FF("--filled-in", "-fel", o.filled_in),
    FF(NULL, "-nf", o.network_format), FF(NULL, "-p", p),                   FF(NULL, "-z", dem),
    FF("--outlets", "-o", o.outlets),  FF("--slope", "-sd8", o.slope),        FF("--basin-stats", NULL, o.basin_stats),
    FF("--ang", "-ang", o.ang),        FF("--slp", "-slp", o.slp),            FF("--sca", "-sca", o.sca),
    FF("--twi", "-twi", o.twi),        FF("--moved-outlets", "-om", o.moved_outlets),
    FF("--outlet-table", "-id", o.outlet_table), FF(NULL, "-gw", o.basins),
    FF("--hand", "-dd", o.hand),       FF("--d8-dist", "-dist", o.d8_dist),  FF("--plen", "-plen", o.plen),
    FF("--tlen", "-tlen", o.tlen),     FF("--gord", "-gord", o.gord),       FF("--tree", "-tree", o.tree),
    FF("--coord", "-coord", o.coord),  FF("--streams-in", NULL, o.streams_in), FF("--acc-in", NULL, o.acc_in),
    FF("--ang-in", NULL, o.ang_in),    FF("--slp-in", NULL, o.slp_in),      FF("--sca-in", NULL, o.sca_in),
    FF("--spi", NULL, o.spi),
};
#undef FF

static int flow_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  flow_args *fa = opts;
  tr_flowgraph_opts *o = &fa->o;
  const char *a = argv[*i], *v;
  for (size_t k = 0; k < sizeof file_flags / sizeof file_flags[0]; k++) {
    const file_flag *ff = &file_flags[k];
    if ((ff->long_name && !strcmp(a, ff->long_name)) || (ff->taudem && !strcmp(a, ff->taudem))) {
      if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
      *(const char **)((char *)fa + ff->offset) = v;
      if (!strcmp(a, "-ang")) fa->ang_taudem = 1;
      if (!strcmp(a, "-slp")) fa->slp_taudem = 1;
      if (!strcmp(a, "-sca")) fa->sca_taudem = 1;
      return TF_ARG_TAKEN;
    }
  }
  if (!strcmp(a, "--dir-encoding")) {
    static const char *const names[] = {"taudem", "esri", "grass"};
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    for (int e = 0; e < 3; e++)
      if (!strcmp(v, names[e])) {
        o->encoding = (tr_dir_encoding)e;
        return TF_ARG_TAKEN;
      }
    tf_usage_error(cli, "--dir-encoding: '%s' is not one of taudem, esri, grass", v);
    return TF_ARG_ERROR;
  }
  if (!strcmp(a, "--method")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (!strcmp(v, "d8")) o->method = TR_FLOW_D8;
    else if (!strcmp(v, "dinf")) o->method = TR_FLOW_DINF;
    else if (!strcmp(v, "quinn")) o->method = TR_FLOW_QUINN;
    else if (!strcmp(v, "holmgren")) o->method = TR_FLOW_HOLMGREN;
    else if (!strcmp(v, "freeman")) o->method = TR_FLOW_FREEMAN;
    else if (!strcmp(v, "rho8")) o->method = TR_FLOW_RHO8;
    else {
      tf_usage_error(cli, "--method: '%s' is not one of d8, dinf, quinn, holmgren, freeman, rho8", v);
      return TF_ARG_ERROR;
    }
    fa->method_given = 1;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--units")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (!strcmp(v, "cells")) o->units = TR_ACC_CELLS;
    else if (!strcmp(v, "area")) o->units = TR_ACC_AREA;
    else {
      tf_usage_error(cli, "--units: '%s' is not one of cells, area", v);
      return TF_ARG_ERROR;
    }
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--acc-type")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (strcmp(v, "Float32") && strcmp(v, "Float64")) {
      tf_usage_error(cli, "--acc-type: '%s' is not one of Float32, Float64", v);
      return TF_ARG_ERROR;
    }
    o->acc_float32 = !strcmp(v, "Float32");
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--basins-by")) {
    static const char *const names[] = {"links", "edges", "outlets"};
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    for (int e = 0; e < 3; e++)
      if (!strcmp(v, names[e])) {
        o->basins_by = (tr_basin_mode)e;
        return TF_ARG_TAKEN;
      }
    tf_usage_error(cli, "--basins-by: '%s' is not one of links, edges, outlets", v);
    return TF_ARG_ERROR;
  }
  if (!strcmp(a, "--snap") || !strcmp(a, "-md")) {
    long n;
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, a, v, 0, 1000000, &n)) return TF_ARG_ERROR;
    o->snap = (int)n;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--id-field")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    o->id_field = v;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--snap-distance")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, a, v, &o->snap_distance)) return TF_ARG_ERROR;
    if (!(o->snap_distance > 0) || isinf(o->snap_distance)) {
      tf_usage_error(cli, "%s must be a positive distance in map units, got %s", a, v);
      return TF_ARG_ERROR;
    }
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--holmgren-x") || !strcmp(a, "--freeman-p")) {
    double *e = a[2] == 'h' ? &o->holmgren_x : &o->freeman_p;
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, a, v, e)) return TF_ARG_ERROR;
    if (a[2] == 'h' ? !(*e >= 1.0 && *e <= 100.0) : !(*e > 0.0 && *e <= 100.0)) {
      tf_usage_error(cli, "%s must be in %s, got %s", a, a[2] == 'h' ? "[1, 100]" : "(0, 100]", v);
      return TF_ARG_ERROR;
    }
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--filled")) {
    o->filled = 1;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--seed")) {
    long seed;
    /* 2^53: every seed a double holds exactly (Python, QGIS pass numbers) */
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, a, v, 0, 9007199254740992L, &seed)) return TF_ARG_ERROR;
    o->seed = (uint64_t)seed;
    fa->seed_given = 1;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "-m")) {
    /* TauDEM dinfdistdown's statistic and distance: --hand is "ave v" */
    const char *m2;
    if (!(v = tf_value(cli, argc, argv, i)) || !(m2 = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (strcmp(v, "ave") || strcmp(m2, "v")) {
      tf_usage_error(cli, "-m %s %s: --hand (-dd) is the average vertical drop, -m ave v; no other is made", v, m2);
      return TF_ARG_ERROR;
    }
    fa->m_given = 1;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--no-edge-check") || !strcmp(a, "-nc")) {
    o->no_edge_check = 1;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--threshold") || !strcmp(a, "-thresh")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, a, v, &o->threshold)) return TF_ARG_ERROR;
    if (!(o->threshold > 0)) {
      tf_usage_error(cli, "%s must be positive, got %s", a, v);
      return TF_ARG_ERROR;
    }
    return TF_ARG_TAKEN;
  }
  const int r = tf_burn_flag(cli, &o->burn, argc, argv, i);
  return r != TF_ARG_UNKNOWN ? r : tf_graph_flag(cli, &o->graph, argc, argv, i);
}

int tf_flowgraph_main(int argc, char **argv) {
  static char help[12288];
  snprintf(help, sizeof help, "%s%s%s", usage, usage_more, usage_end);
  tf_cli cli = {.cmd = "flowgraph", .usage = help};
  flow_args fa = {.p = NULL, .dem = NULL};
  tr_flowgraph_opts_init(&fa.o);
  int code;
  if (tf_cli_parse(&cli, &fa.o.run, flow_flag, &fa, argc, argv, &code)) return code;
  if (cli.npositional > 1) return tf_usage_error(&cli, "expected at most one DEM file name, got %d", cli.npositional);
  if (cli.npositional && fa.dem) return tf_usage_error(&cli, "give the DEM either as -z or by position, not both");
  const char *dem = cli.npositional ? cli.positional[0] : fa.dem;
  /* TauDEM streamnet's form, -p P -src SRC -ad8 AD8 and no DEM, with one of
   * its outputs: -src and -ad8 are its inputs (the streams, the area);
   * anywhere else they are aread8's and threshold's outputs */
  tr_flowgraph_opts *q0 = &fa.o;
  const int streamnet = !dem && fa.p && fa.src && fa.ad8 &&
                        (q0->order || q0->tree || q0->coord || q0->network || q0->basins);
  /* moveoutletstostreams' form, -p P -src SRC -o O -om OM: -src is read, the
   * streams the outlets move down to (commands.c's row says the same) */
  const int moveoutlets = !dem && fa.p && fa.src && !fa.ad8 && q0->outlets && q0->moved_outlets && !q0->order &&
                          !q0->tree && !q0->coord && !q0->network;
  const int src_read = streamnet || moveoutlets;
  const char *const given[2] = {fa.ad8, fa.src};
  const char **slots[2] = {streamnet ? &q0->acc_in : &q0->acc, src_read ? &q0->streams_in : &q0->streams};
  static const char *const spelled[2][2] = {{"--acc", "--acc-in"}, {"--streams", "--streams-in"}};
  for (int k = 0; k < 2; k++) {
    if (!given[k]) continue;
    if (*slots[k])
      return tf_usage_error(&cli, "%s and %s both name the %s", k ? "-src" : "-ad8", spelled[k][k ? src_read : streamnet],
                            k ? "streams" : "accumulation");
    *slots[k] = given[k];
  }
  /* TauDEM d8flowdir's form, -fel FILLED -p P [-sd8 SD8]: nothing else
   * asked, so -fel is the (filled) DEM and -p the directions made from it
   * (with other products, -fel is streamnet's elevations and -p its input) */
  const tr_flowgraph_opts *q = &fa.o;
  if (!dem && fa.p && q->filled_in && !q->dir_in && !q->dir_out && !q->acc && !q->streams && !q->order &&
      !q->basins && !q->network && !q->basin_stats && !q->outlets && !q->moved_outlets && !q->outlet_table && !q->ang &&
      !q->slp && !q->sca && !q->twi) {
    dem = fa.o.filled_in;
    fa.o.filled_in = NULL;
    fa.o.filled = 1;
  }
  if (fa.p) {
    /* TauDEM's -p is d8flowdir's output and aread8/streamnet's input */
    const char **slot = dem ? &fa.o.dir_out : &fa.o.dir_in;
    if (*slot) return tf_usage_error(&cli, "-p and %s both name the directions", dem ? "--dir" : "--dir-in");
    *slot = fa.p;
  }
  if (fa.o.outlets && fa.o.basins_by == TR_BASINS_LINKS) fa.o.basins_by = TR_BASINS_OUTLETS;
  /* TauDEM areadinf's form, -ang ANG -sca SCA [-nc]: no DEM (nor -fel, which
   * would make it dinfflowdir's), so -ang is the angles read (batch knows
   * the form from commands.c's row: keep the two in step) */
  if (fa.ang_taudem && !dem && !q->filled_in && !q->dir_in && !q->ang_in && q->ang && q->sca && !q->slp && !q->twi &&
      !q->hand && !q->d8_dist) {
    fa.o.ang_in = fa.o.ang;
    fa.o.ang = NULL;
  }
  /* TauDEM dinfdistdown's form, -ang ANG -fel FEL -src SRC -dd DD [-m ave v]:
   * no DEM, HAND alone, so -ang and -src are read (the angles and streams)
   * and -fel is the filled DEM (commands.c's row says the same) */
  if (fa.ang_taudem && fa.src && !dem && q->filled_in && q->hand && q->ang && q->streams == fa.src && !q->ang_in &&
      !q->slp && !q->sca && !q->twi && !q->d8_dist && !q->dir_in && !q->streams_in && !q->acc && !q->order &&
      !q->basins && !q->network) {
    fa.o.ang_in = fa.o.ang;
    fa.o.ang = NULL;
    fa.o.streams_in = fa.o.streams;
    fa.o.streams = NULL;
  }
  if (fa.m_given && !fa.o.hand) return tf_usage_error(&cli, "-m ave v goes with --hand (-dd)");
  if (fa.seed_given && fa.o.method != TR_FLOW_RHO8) return tf_usage_error(&cli, "--seed goes with --method rho8");
  /* TauDEM twi's form, -slp SLP -sca SCA -twi TWI: no DEM, nothing else made,
   * so -slp and -sca are the rasters read (commands.c's row says the same) */
  if (fa.slp_taudem && fa.sca_taudem && !dem && !q->filled_in && !q->dir_in && !q->ang_in && !q->ang && q->twi &&
      !q->hand && !q->d8_dist && !q->slp_in && !q->sca_in) {
    fa.o.slp_in = fa.o.slp;
    fa.o.sca_in = fa.o.sca;
    fa.o.slp = fa.o.sca = NULL;
  }
  /* TauDEM's dinfflowdir / areadinf / twi forms: their outputs alone choose
   * D-infinity, and dinfflowdir's -fel is then the (filled) DEM */
  if (!fa.method_given &&
      (fa.o.ang || fa.o.slp || fa.o.sca || fa.o.twi || fa.o.spi || fa.o.ang_in || fa.o.slp_in || fa.o.sca_in))
    fa.o.method = TR_FLOW_DINF;
  if (fa.o.method != TR_FLOW_D8 && !dem && fa.o.filled_in) {
    dem = fa.o.filled_in;
    fa.o.filled_in = NULL;
    fa.o.filled = 1;
  }
  tf_cli_finish(&cli, &fa.o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_flowgraph(&fa.o, dem, &err), &err);
}
