/*
 * flowgraph.c - `terrafort flowgraph`: D8 accumulation, streams, Strahler
 * order, basins and the stream network, flow lengths, HAND and distances to
 * the streams, D-infinity's products, over tr_flowgraph(), with TauDEM's
 * option names accepted beside the long ones.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort flowgraph [options] [DEM] PRODUCTS...\n"
    "       terrafort flowgraph --dir-in p.tif --acc ad8.tif --streams src.tif --order ord.tif ...\n"
    "       terrafort flowgraph -p p.tif -fel fel.tif -ad8 ad8.tif -src src.tif -ord ord.tif\n"
    "                           -tree tree.txt -coord coord.txt -net net.shp -w w.tif   (streamnet)\n"
    "Computes, in one run, only the products asked for: D8 flow directions from a DEM (filled\n"
    "first, flats drained by Barnes et al. 2014; TauDEM d8flowdir), contributing area (TauDEM\n"
    "aread8), stream cells, Strahler order, one basin per stream link and the stream network\n"
    "with TauDEM streamnet's attributes, upslope lengths and grid order (gridnet), HAND and\n"
    "distances to the streams; D-infinity angles, slopes, sca and twi.\n\n";

typedef struct {
  tr_flowgraph_opts o;
  const char *p;   /* -p: directions in or out, by whether a DEM is given */
  const char *dem; /* -z */
  const char *ad8, *src; /* -ad8, -src: outputs (--acc, --streams), or streamnet's inputs */
  int method_given; /* --method; else D-infinity's products choose dinf */
  int m_given;      /* -m ave v (dinfdistdown's; only with --hand) */
  int seed_given;   /* --seed (only with --method rho8) */
} flow_args;

/* --method and --seed given (after the row stored the value) */
static int mark(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)cli, (void)argc, (void)argv, (void)i;
  flow_args *fa = base;
  *(!strcmp(row->names, "--seed") ? &fa->seed_given : &fa->method_given) = 1;
  return TF_ARG_TAKEN;
}

/* TauDEM dinfdistdown's statistic and distance: --hand is "ave v" */
static int m_ave_v(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row;
  const char *v, *m2;
  if (!(v = tf_value(cli, argc, argv, i)) || !(m2 = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
  if (strcmp(v, "ave") || strcmp(m2, "v")) {
    tf_usage_error(cli, "-m %s %s: --hand (-dd) is the average vertical drop, -m ave v; no other is made", v, m2);
    return TF_ARG_ERROR;
  }
  ((flow_args *)base)->m_given = 1;
  return TF_ARG_TAKEN;
}

_Static_assert(sizeof(long) == sizeof(uint64_t) && sizeof(tr_flow_method) == sizeof(int), "stored as long and int");

#define O(f) offsetof(flow_args, f)
#define IN(n, f, d) {.kind = TF_STR, .names = n, .arg = "FILE", .off = O(f), .role = TF_ROLE_IN, .doc = d}
#define OUT(n, f, d) {.kind = TF_STR, .names = n, .arg = "FILE", .off = O(f), .role = TF_ROLE_OUT, .doc = d}
static const tf_opt rows[] = {
    {.kind = TF_HEADING, .doc = "Directions:"},
    IN("--dir-in", o.dir_in, NULL),
    {.kind = TF_STR, .names = "-p", .arg = "FILE", .off = O(p), .role = TF_ROLE_OUT_IF_DEM, .left = "--dir-in FILE, -p FILE",
     .doc = "an existing D8 direction raster (-p: when no DEM is given)"},
    {.kind = TF_CHOICE, .names = "--dir-encoding", .arg = "E", .choices = "taudem|esri|grass", .off = O(o.encoding),
     .doc = "taudem (default: 1 = E .. 8 = SE counter-clockwise), esri, grass"},
    {.kind = TF_STR, .names = "--dir", .arg = "FILE", .off = O(o.dir_out), .role = TF_ROLE_OUT, .left = "--dir FILE, -p FILE",
     .doc = "write the directions computed from DEM (-p: when a DEM is given)"},
    {.kind = TF_STR, .names = "-z", .arg = "DEM", .off = O(dem), .role = TF_ROLE_IN, .doc = "the DEM (TauDEM's spelling)"},
    {.kind = TF_FLAG, .names = "--filled", .off = O(o.filled), .doc = "the DEM is already depression-free: do not fill it"},
    OUT("--slope -sd8", o.slope, "TauDEM's sd8: drop / distance along the direction (Float32)"),
    {.kind = TF_HEADING, .doc = "Products:"},
    OUT("--acc", o.acc, NULL),
    {.kind = TF_STR, .names = "-ad8", .arg = "FILE", .off = O(ad8), .role = TF_ROLE_OUT, .left = "--acc FILE, -ad8 FILE",
     .doc = "accumulation (Float64; nodata -1)"},
    OUT("--streams", o.streams, NULL),
    {.kind = TF_STR, .names = "-src", .arg = "FILE", .off = O(src), .role = TF_ROLE_OUT, .left = "--streams FILE, -src FILE",
     .doc = "stream cells, 1 where accumulation >= --threshold (Byte)"},
    OUT("--order -ord", o.order, "Strahler order on stream cells, 0 elsewhere (Byte)"),
    OUT("--basins -w -gw", o.basins, "one label per stream link = its LINKNO (Int32; -gw FILE:\ngagewatershed's spelling)"),
    {.kind = TF_CHOICE, .names = "--basins-by", .choices = "links|edges|outlets", .off = O(o.basins_by),
     .doc = "a basin per stream link (default), per cell where flow leaves the\ndata, or per outlet point"},
    IN("--outlets -o", o.outlets, "outlet points (OGR; another CRS is reprojected): basins\nlabelled by feature id"),
    {.kind = TF_STR, .names = "--id-field", .arg = "NAME", .off = O(o.id_field),
     .doc = "label basins by this integer field of the outlets instead"},
    {.kind = TF_INT, .names = "--snap -md", .arg = "N", .off = O(o.snap), .lo = 0, .hi = 1000000,
     .doc = "move outlets down the flow path at most N cells to a stream (50)"},
    {.kind = TF_DOUBLE, .names = "--snap-distance", .arg = "D", .off = O(o.snap_distance), .lo = 0, .lo_open = 1, .hi = INFINITY,
     .doc = "instead: move each outlet to the largest accumulation within D\n(map units) of it"},
    OUT("--moved-outlets -om", o.moved_outlets,
        "where each outlet went: points with id and Dist_moved\n"
        "(cells; -1: no stream within reach), TauDEM moveoutletstostreams"),
    OUT("--outlet-table -id", o.outlet_table,
        "'id iddown' per outlet: the outlet its flow meets next\n(-1: none), TauDEM gagewatershed's -id"),
    OUT("--network -net", o.network, "stream links as lines (GeoPackage unless the extension or -nf says)"),
    OUT("--plen -plen", o.plen, "longest upslope D8 path length (Float32; nodata -1)"),
    OUT("--tlen -tlen", o.tlen, "total upslope path length: every upslope step summed (Float32)"),
    OUT("--gord -gord", o.gord, "grid Strahler order of every cell (Int16; nodata -1; TauDEM gridnet)"),
    {.kind = TF_STR, .names = "--basin-stats", .arg = "FILE.csv", .off = O(o.basin_stats), .role = TF_ROLE_OUT,
     .doc = "per basin: label, cells, area, min, mean, max, relief, mean_slope,\n"
            "outlet_x, outlet_y (CSV; basins made even without --basins)"},
    {.kind = TF_HEADING, .doc = "D-infinity (Tarboton 1997; TauDEM dinfflowdir, areadinf, twi):"},
    {.kind = TF_CHOICE, .names = "--method", .choices = "d8|dinf|quinn|holmgren|freeman|rho8", .off = O(o.method), .fn = mark,
     .left = "--method d8|dinf",
     .doc = "how flow leaves a cell (default d8; D-infinity's products alone\n"
            "choose dinf, and -fel FILE is then the filled DEM)"},
    OUT("--ang -ang", o.ang,
        "flow angle, radians counter-clockwise from east (Float32; nodata\n"
        "-3.4028235e+38 as TauDEM; flats by Garbrecht & Martz)"),
    OUT("--slp -slp", o.slp, "D-infinity slope, drop / distance (Float32; nodata -1)"),
    OUT("--sca -sca", o.sca,
        "specific catchment area: contributing area / cell width, flow\n"
        "split by angle (Float32; nodata -1; -nc: no edge check)"),
    OUT("--twi -twi", o.twi, "wetness index ln(sca / slp), sca without the edge check (Float32)"),
    OUT("--spi", o.spi, "stream power index sca x slp, the same sca (Float32; nodata -1)"),
    IN("--ang-in", o.ang_in,
       "existing angles instead of a DEM: --sca alone from them (TauDEM\n"
       "areadinf -ang ANG -sca SCA, which is also taken in that form);\n"
       "or --hand from them, the filled DEM (--filled) and --streams-in\n"
       "(dinfdistdown -ang ANG -fel FEL -src SRC -dd DD [-m ave v], also taken)"),
    {.kind = TF_STR, .names = "--slp-in", .arg = "FILE", .off = O(o.slp_in), .role = TF_ROLE_IN,
     .left = "--slp-in FILE --sca-in FILE",
     .doc = "an existing slope and sca instead of a DEM: --twi, --spi\n"
            "from them (TauDEM twi -slp SLP -sca SCA -twi TWI, also taken)"},
    IN("--sca-in", o.sca_in, NULL),
    {.kind = TF_HEADING, .doc = "Distances to the streams (the --streams cells; TauDEM dinfdistdown, d8hdisttostrm):"},
    OUT("--hand -dd", o.hand,
        "height above nearest drainage: the drop to the stream along the\n"
        "D-infinity angles, averaged by the proportions (ave v; Float32;\n"
        "-m ave v, dinfdistdown's, is accepted and is the only one)"),
    {.kind = TF_CUSTOM, .names = "-m", .nvalues = 2, .fn = m_ave_v, .left = "-m ave v",
     .doc = "dinfdistdown's statistic and distance: only ave v (--hand's)"},
    OUT("--d8-dist -dist", o.d8_dist,
        "horizontal length of the D8 path to the stream (Float32)\n"
        "(both nodata -3.4028235e+38 where no stream is reached)"),
    {.kind = TF_HEADING, .doc = "Multiple flow directions (accumulation in cells as RichDEM, or --units area; flats drained\nas dinf):"},
    {.kind = TF_HEADING, .doc = "  --method quinn|holmgren|freeman   --acc FILE alone: flow split between all lower\n"
                                "                         neighbours, Quinn (1991), Holmgren (1994), Freeman (1991)"},
    {.kind = TF_DOUBLE, .names = "--holmgren-x", .arg = "X", .off = O(o.holmgren_x), .lo = 1, .hi = 100,
     .doc = "Holmgren's exponent, 1 to 100 (default 4)"},
    {.kind = TF_DOUBLE, .names = "--freeman-p", .arg = "P", .off = O(o.freeman_p), .lo = 0, .lo_open = 1, .hi = 100,
     .doc = "Freeman's exponent, above 0 to 100 (default 1.1)"},
    {.kind = TF_HEADING, .doc = "  --method rho8          --acc FILE alone: all flow to one lower neighbour, Fairfield &\n"
                                "                         Leymarie (1991), a diagonal's drop divided by 2 - r, r random"},
    /* 2^53: every seed a double holds exactly (Python, QGIS pass numbers) */
    {.kind = TF_LONG, .names = "--seed", .arg = "N", .off = O(o.seed), .lo = 0, .hi = 9007199254740992.0, .fn = mark,
     .doc = "Rho8's draws, a hash of (N, cell, neighbour): the same bytes for\n"
            "any tiling, thread or rank count (0 to 2^53; default 1)"},
    {.kind = TF_HEADING, .doc = "Accumulation:"},
    {.kind = TF_CHOICE, .names = "--units", .choices = "cells|area", .off = O(o.units),
     .doc = "contributing cells (default) or area in map units"},
    IN("--weights -wg", o.weights, "a weight per cell instead of 1"),
    {.kind = TF_FLAG, .names = "--no-edge-check -nc", .off = O(o.no_edge_check),
     .doc = "keep cells whose area may reach off the DEM or into nodata"},
    {.kind = TF_CHOICE, .names = "--acc-type", .choices = "Float64|Float32", .off = O(o.acc_float32),
     .left = "--acc-type Float32|Float64", .doc = "the accumulation's type (default Float64: exact to 2^53)"},
    {.kind = TF_HEADING, .doc = "Streams and network:"},
    {.kind = TF_DOUBLE, .names = "--threshold -thresh", .arg = "N", .off = O(o.threshold), .lo = 0, .lo_open = 1, .hi = INFINITY,
     .doc = "stream cells: no-edge-check accumulation >= N (default 100)"},
    IN("--filled-in -fel", o.filled_in, "elevations for strmDrop and Slope (else the DEM, if given)"),
    {.kind = TF_STR, .names = "-nf", .arg = "DRIVER", .off = O(o.network_format), .doc = "OGR driver of --network"},
    OUT("--tree -tree", o.tree, "the link tree as TauDEM streamnet writes tree.txt (text)"),
    OUT("--coord -coord", o.coord,
        "the links' points as TauDEM's coord.txt: x y distance to the\n"
        "outlet, elevation (needs -fel or a DEM), area (text)"),
    IN("--streams-in", o.streams_in,
       "stream cells given (>= 1; e.g. TauDEM threshold's src) instead of\n"
       "--threshold: --order, --basins, --network, --tree, --coord, --hand,\n"
       "--d8-dist follow them"),
    IN("--acc-in", o.acc_in, "the accumulation given (with --streams-in): the network's areas"),
    {.kind = TF_HEADING, .doc = "  (streamnet's form: -p, -src and -ad8 with no DEM, and one of -ord -tree -coord -net -w:\n"
                                "  -src is --streams-in and -ad8 --acc-in; moveoutletstostreams' -p -src -o -om: -src is\n"
                                "  --streams-in, where the outlets stop on their way down)"},
    TF_OPT_END,
};
#undef IN
#undef OUT

const tf_opt_set tf_flowgraph_set = {.cmd = "flowgraph",
                                     .head = head,
                                     .column = 25,
                                     .groups = {{rows, 0},
                                                {tf_graph_opts_rows, O(o.graph)},
                                                {tf_burn_opts_rows, O(o.burn)},
                                                {tf_common_opts, O(o.run)}},
                                     .last_positional = 0};
#undef O

/* TauDEM's programs' command lines, given with no DEM (tools.h, tf_io_form;
 * batch reads a job's files by the same rows). */
const tf_io_form tf_flowgraph_forms[TF_IO_FORMS] = {
    /* streamnet -p P -src SRC -ad8 AD8 with one of its outputs: -src and
     * -ad8 are its inputs (the streams, the area) */
    {.name = "streamnet",
     .all = "-p -src -ad8",
     .any = "-ord --order -tree --tree -coord --coord -net --network -w --basins -gw",
     .none = "",
     .reads = "-src -ad8"},
    /* moveoutletstostreams -p P -src SRC -o O -om OM: -src is read, the
     * streams the outlets move down to */
    {.name = "moveoutletstostreams",
     .all = "-p -src -o|--outlets -om|--moved-outlets",
     .none = "-ad8 --acc -ord --order -tree --tree -coord --coord -net --network",
     .reads = "-src"},
    /* areadinf -ang ANG -sca SCA [-nc]: without dinfflowdir's -fel (nor the
     * products that need a DEM), -ang is the angles read */
    {.name = "areadinf",
     .all = "-ang",
     .any = "-sca --sca",
     .none = "-fel --filled-in -p --dir-in --ang-in -slp --slp -twi --twi -dd --hand -dist --d8-dist",
     .reads = "-ang"},
    /* dinfdistdown -ang ANG -fel FEL -src SRC -dd DD [-m ave v]: HAND alone,
     * -ang and -src are read (the angles and streams), -fel is the filled DEM */
    {.name = "dinfdistdown",
     .all = "-ang -fel|--filled-in -src -dd|--hand",
     .none = "-p --dir-in --ang-in --streams --streams-in -ad8 --acc -ord --order -net --network -w --basins -gw -slp "
             "--slp -sca --sca -twi --twi -dist --d8-dist",
     .reads = "-ang -src"},
    /* twi -slp SLP -sca SCA -twi TWI: nothing else made, -slp and -sca are read */
    {.name = "twi",
     .all = "-slp -sca",
     .any = "-twi --twi",
     .none = "-fel --filled-in -p --dir-in -ang --ang --ang-in -dd --hand -dist --d8-dist --slp-in --sca-in",
     .reads = "-slp -sca"},
    /* d8flowdir -fel FILLED -p P [-sd8 SD8]: nothing else asked, -fel is the
     * (filled) DEM and -p the directions made from it */
    {.name = "d8flowdir",
     .all = "-p -fel|--filled-in",
     .none = "--dir-in --dir -ad8 --acc -src --streams -ord --order -w --basins -gw -net --network --basin-stats -o "
             "--outlets -om --moved-outlets -id --outlet-table -ang --ang -slp --slp -sca --sca -twi --twi",
     .writes = "-p"},
    {.name = NULL},
};

int tf_flowgraph_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "flowgraph", .set = &tf_flowgraph_set};
  flow_args fa = {.p = NULL, .dem = NULL};
  tr_flowgraph_opts_init(&fa.o);
  int code;
  if (tf_cli_parse(&cli, &fa, argc, argv, &code)) return code;
  if (cli.npositional > 1) return tf_usage_error(&cli, "expected at most one DEM file name, got %d", cli.npositional);
  if (cli.npositional && fa.dem) return tf_usage_error(&cli, "give the DEM either as -z or by position, not both");
  const char *dem = cli.npositional ? cli.positional[0] : fa.dem;
  /* TauDEM's forms (tf_flowgraph_forms, which batch reads too) */
  const tf_io_form *form = dem ? NULL : tf_io_form_of(tf_command_find("flowgraph"), argc, argv);
  const char *fname = form ? form->name : "";
  tr_flowgraph_opts *q0 = &fa.o;
  const int streamnet = !strcmp(fname, "streamnet");
  const int src_read = streamnet || !strcmp(fname, "moveoutletstostreams") || !strcmp(fname, "dinfdistdown");
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
  /* d8flowdir's: -fel is the (filled) DEM and -p the directions made from it
   * (with other products, -fel is streamnet's elevations and -p its input) */
  if (!strcmp(fname, "d8flowdir")) {
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
  /* areadinf's: -ang is the angles read */
  if (!strcmp(fname, "areadinf")) {
    fa.o.ang_in = fa.o.ang;
    fa.o.ang = NULL;
  }
  /* dinfdistdown's: -ang is the angles read (and -src the streams, above),
   * -fel the filled DEM (below) */
  if (!strcmp(fname, "dinfdistdown")) {
    fa.o.ang_in = fa.o.ang;
    fa.o.ang = NULL;
  }
  if (fa.m_given && !fa.o.hand) return tf_usage_error(&cli, "-m ave v goes with --hand (-dd)");
  if (fa.seed_given && fa.o.method != TR_FLOW_RHO8) return tf_usage_error(&cli, "--seed goes with --method rho8");
  /* twi's: -slp and -sca are the rasters read */
  if (!strcmp(fname, "twi")) {
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
