/*
 * interpolate.c - `terrafort interpolate`: gdal_grid's flags over
 * tr_interpolate().
 */
#include <gdal.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <stdlib.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort interpolate [options] POINTS OUT\n"
    "Scattered points to a grid with gdal_grid's algorithms and values (Float64 by default,\n"
    "nodata set, north-up). POINTS: any vector file OGR reads (GeoPackage, Shapefile, GeoJSON,\n"
    "CSV with X/Y columns) or \"x y z\" text (*.xyz, or --xyz).\n\n";
static const char tail[] =
    "\nUsage: terrafort interpolate --fill-voids [-md DIST] [-si N] [options] DEM OUT\n"
    "Fills DEM's NoData cells by inverse distance from the valid cells around each void, with\n"
    "gdal_fillnodata's values: -md cells searched (default 100), -si smoothing passes (default 0).\n";

typedef struct {
  tr_interpolate_opts o;
  const char *layers[64];
  int nlayers;
  const char *oo[64];
  int noo;
  char clipbox[128];
} interp_cli;

static int doubles(tf_cli *cli, int argc, char **argv, int *i, const char *opt, double *v, int n) {
  for (int k = 0; k < n; k++) {
    const char *s = tf_value(cli, argc, argv, i);
    if (!s || tf_parse_double(cli, opt, s, &v[k])) return TF_ARG_ERROR;
  }
  return TF_ARG_TAKEN;
}

/* -txe, -tye, -tr, -spat: the row's nvalues numbers into its field; -txe,
 * -tye and -spat also set their has_ flag */
static int numbers(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  interp_cli *c = base;
  const char *name = row->names;
  if (!strcmp(name, "-txe")) c->o.has_txe = 1;
  else if (!strcmp(name, "-tye")) c->o.has_tye = 1;
  else if (!strcmp(name, "-spat")) c->o.has_spat = 1;
  return doubles(cli, argc, argv, i, name, (double *)((char *)base + row->off), row->nvalues);
}

static int outsize(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row;
  interp_cli *c = base;
  for (int k = 0; k < 2; k++) {
    long n;
    const char *v = tf_value(cli, argc, argv, i);
    if (!v || tf_parse_int(cli, "-outsize", v, 1, 2147483647L, &n)) return TF_ARG_ERROR;
    c->o.outsize[k] = n;
  }
  return TF_ARG_TAKEN;
}

/* four numbers (a box), or one WKT, vector file or spat_extent */
static int clipsrc(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row;
  interp_cli *c = base;
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  char *end;
  (void)strtod(v, &end);
  if (v[0] && !*end) {
    double b[4];
    (void)tf_parse_double(cli, "-clipsrc", v, &b[0]);
    if (doubles(cli, argc, argv, i, "-clipsrc", b + 1, 3) != TF_ARG_TAKEN) return TF_ARG_ERROR;
    snprintf(c->clipbox, sizeof c->clipbox, "%.17g %.17g %.17g %.17g", b[0], b[1], b[2], b[3]);
    v = c->clipbox;
  }
  c->o.clipsrc = v;
  return TF_ARG_TAKEN;
}

static int out_type(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row;
  interp_cli *c = base;
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  c->o.out_type = GDALGetDataTypeByName(v);
  if (c->o.out_type == GDT_Unknown || GDALDataTypeIsComplex(c->o.out_type)) {
    tf_usage_error(cli, "-ot: '%s' is not a real GDAL data type", v);
    return TF_ARG_ERROR;
  }
  return TF_ARG_TAKEN;
}

/* -l, -oo: repeatable */
static int listed(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  interp_cli *c = base;
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  const int layer = !strcmp(row->names, "-l");
  int *n = layer ? &c->nlayers : &c->noo;
  const char **list = layer ? c->layers : c->oo;
  if (*n >= 63) {
    tf_usage_error(cli, "%s: too many", row->names);
    return TF_ARG_ERROR;
  }
  list[(*n)++] = v;
  return TF_ARG_TAKEN;
}

#define O(f) offsetof(interp_cli, f)
static const tf_opt rows[] = {
    {.kind = TF_STR, .names = "-a", .off = O(o.algorithm), .left = "-a ALG[:key=value]...",
     .doc = "invdist (default), invdistnn, average, nearest, linear, minimum,\n"
            "maximum, range, count, average_distance, average_distance_pts\n"
            "(keys: power smoothing radius1 radius2 angle radius max_points\n"
            "min_points nodata, as gdal_grid)"},
    {.kind = TF_STR, .names = "-zfield", .arg = "NAME", .off = O(o.zfield), .doc = "the value's attribute (default: the geometry's Z)"},
    {.kind = TF_DOUBLE, .names = "-z_increase", .off = O(o.z_increase), .left = "-z_increase V, -z_multiply V",
     .doc = "value = (z + increase) * multiply"},
    {.kind = TF_DOUBLE, .names = "-z_multiply", .off = O(o.z_multiply)},
    {.kind = TF_CUSTOM, .names = "-l", .fn = listed, .left = "-l LAYER", .doc = "a layer of POINTS (repeatable; default: the first)"},
    {.kind = TF_STR, .names = "-where", .arg = "EXPR", .off = O(o.where), .doc = "only the points this attribute filter keeps"},
    {.kind = TF_STR, .names = "-sql", .arg = "SELECT", .off = O(o.sql), .doc = "the points of this SQL statement's result"},
    {.kind = TF_CUSTOM, .names = "-spat", .nvalues = 4, .off = O(o.spat), .fn = numbers, .left = "-spat XMIN YMIN XMAX YMAX",
     .doc = "only the points inside this rectangle"},
    {.kind = TF_CUSTOM, .names = "-clipsrc", .nvalues = -4, .fn = clipsrc,
     .left = "-clipsrc XMIN YMIN XMAX YMAX|WKT|FILE|spat_extent, -clipsrclayer L, -clipsrcwhere E,\n  -clipsrcsql SQL",
     .doc = "keep only the points inside"},
    {.kind = TF_STR, .names = "-clipsrclayer", .off = O(o.clipsrc_layer)},
    {.kind = TF_STR, .names = "-clipsrcwhere", .off = O(o.clipsrc_where)},
    {.kind = TF_STR, .names = "-clipsrcsql", .off = O(o.clipsrc_sql)},
    {.kind = TF_CUSTOM, .names = "-txe", .nvalues = 2, .off = O(o.txe), .fn = numbers, .left = "-txe XMIN XMAX, -tye YMIN YMAX",
     .doc = "output extent (default: the points')"},
    {.kind = TF_CUSTOM, .names = "-tye", .nvalues = 2, .off = O(o.tye), .fn = numbers},
    {.kind = TF_CUSTOM, .names = "-outsize", .nvalues = 2, .fn = outsize, .left = "-outsize COLS ROWS | -tr XRES YRES",
     .doc = "output size (default 256 x 256)"},
    {.kind = TF_CUSTOM, .names = "-tr", .nvalues = 2, .off = O(o.tr), .fn = numbers},
    {.kind = TF_CUSTOM, .names = "-ot", .arg = "TYPE", .fn = out_type, .doc = "output type (default Float64)"},
    {.kind = TF_STR, .names = "-a_srs", .arg = "SRS", .off = O(o.a_srs), .doc = "output CRS (default: the points' layer's)"},
    {.kind = TF_CUSTOM, .names = "-oo", .fn = listed, .left = "-oo NAME=VALUE",
     .doc = "open option for the points' driver (repeatable)"},
    {.kind = TF_FLAG, .names = "--xyz", .off = O(o.xyz), .doc = "read POINTS as \"x y z\" text whatever its name"},
    {.kind = TF_STR, .names = "--tmp", .arg = "DIR", .off = O(o.tmp_dir),
     .doc = "more points than --mem holds: the folder of their index on disk\n"
            "(default: OUT's; every algorithm but linear, given a radius)"},
    {.kind = TF_HEADING, .doc = "Filling voids (gdal_fillnodata):"},
    {.kind = TF_FLAG, .names = "--fill-voids", .off = O(o.fill_voids), .doc = "fill DEM's NoData cells (below)"},
    {.kind = TF_DOUBLE, .names = "-md", .arg = "DIST", .off = O(o.max_distance), .doc = "cells searched (default 100)"},
    {.kind = TF_INT, .names = "-si", .arg = "N", .off = O(o.smoothing_iterations), .lo = 0, .hi = 1000000,
     .doc = "smoothing passes (default 0)"},
    TF_OPT_END,
};

const tf_opt_set tf_interpolate_set = {.cmd = "interpolate",
                                       .head = head,
                                       .tail = tail,
                                       .column = 29,
                                       .groups = {{rows, 0}, {tf_common_opts, O(o.run)}},
                                       .last_positional = 1};
#undef O

int tf_interpolate_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "interpolate", .set = &tf_interpolate_set};
  static interp_cli c;
  memset(&c, 0, sizeof c);
  tr_interpolate_opts_init(&c.o);
  int code;
  if (tf_cli_parse(&cli, &c, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected POINTS and OUT file names");
  if (c.nlayers) c.o.layers = c.layers;
  if (c.noo) c.o.open_options = c.oo;
  tf_cli_finish(&cli, &c.o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_interpolate(&c.o, cli.positional[0], cli.positional[1], &err), &err);
}
