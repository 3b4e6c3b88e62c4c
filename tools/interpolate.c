/*
 * interpolate.c - `terrafort interpolate`: gdal_grid's flags over
 * tr_interpolate().
 */
#include <gdal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort interpolate [options] POINTS OUT\n"
    "Scattered points to a grid with gdal_grid's algorithms and values (Float64 by default,\n"
    "nodata set, north-up). POINTS: any vector file OGR reads (GeoPackage, Shapefile, GeoJSON,\n"
    "CSV with X/Y columns) or \"x y z\" text (*.xyz, or --xyz).\n\n"
    "  -a ALG[:key=value]...     invdist (default), invdistnn, average, nearest, linear, minimum,\n"
    "                            maximum, range, count, average_distance, average_distance_pts\n"
    "                            (keys: power smoothing radius1 radius2 angle radius max_points\n"
    "                            min_points nodata, as gdal_grid)\n"
    "  -zfield NAME              the value's attribute (default: the geometry's Z)\n"
    "  -z_increase V, -z_multiply V   value = (z + increase) * multiply\n"
    "  -l LAYER (repeatable), -where EXPR, -sql SELECT, -spat XMIN YMIN XMAX YMAX\n"
    "  -clipsrc XMIN YMIN XMAX YMAX|WKT|FILE|spat_extent, -clipsrclayer L, -clipsrcwhere E,\n"
    "  -clipsrcsql SQL           keep only the points inside\n"
    "  -txe XMIN XMAX, -tye YMIN YMAX   output extent (default: the points')\n"
    "  -outsize COLS ROWS | -tr XRES YRES   output size (default 256 x 256)\n"
    "  -ot TYPE                  output type (default Float64)\n"
    "  -a_srs SRS                output CRS (default: the points' layer's)\n"
    "  -oo NAME=VALUE            open option for the points' driver (repeatable)\n"
    "  --xyz                     read POINTS as \"x y z\" text whatever its name\n"
    "  --tmp DIR                 more points than --mem holds: the folder of their index on disk\n"
    "                            (default: OUT's; every algorithm but linear, given a radius)\n\n"
    "Usage: terrafort interpolate --fill-voids [-md DIST] [-si N] [options] DEM OUT\n"
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

static int two_doubles(tf_cli *cli, int argc, char **argv, int *i, const char *opt, double *v, int n) {
  for (int k = 0; k < n; k++) {
    const char *s = tf_value(cli, argc, argv, i);
    if (!s || tf_parse_double(cli, opt, s, &v[k])) return TF_ARG_ERROR;
  }
  return TF_ARG_TAKEN;
}

static int interp_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  interp_cli *c = opts;
  tr_interpolate_opts *o = &c->o;
  const char *a = argv[*i], *v;
  const char **strs[] = {&o->algorithm, &o->zfield, &o->where, &o->sql, &o->a_srs, &o->clipsrc_layer,
                         &o->clipsrc_where, &o->clipsrc_sql};
  const char *names[] = {"-a", "-zfield", "-where", "-sql", "-a_srs", "-clipsrclayer", "-clipsrcwhere", "-clipsrcsql"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (!strcmp(a, names[k])) {
      if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
      *strs[k] = v;
      return TF_ARG_TAKEN;
    }
  if (!strcmp(a, "-z_increase")) return two_doubles(cli, argc, argv, i, a, &o->z_increase, 1);
  if (!strcmp(a, "-z_multiply")) return two_doubles(cli, argc, argv, i, a, &o->z_multiply, 1);
  if (!strcmp(a, "-txe")) {
    o->has_txe = 1;
    return two_doubles(cli, argc, argv, i, a, o->txe, 2);
  }
  if (!strcmp(a, "-tye")) {
    o->has_tye = 1;
    return two_doubles(cli, argc, argv, i, a, o->tye, 2);
  }
  if (!strcmp(a, "-tr")) return two_doubles(cli, argc, argv, i, a, o->tr, 2);
  if (!strcmp(a, "-spat")) {
    o->has_spat = 1;
    return two_doubles(cli, argc, argv, i, a, o->spat, 4);
  }
  if (!strcmp(a, "-outsize")) {
    for (int k = 0; k < 2; k++) {
      long n;
      if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, a, v, 1, 2147483647L, &n)) return TF_ARG_ERROR;
      o->outsize[k] = n;
    }
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "-clipsrc")) {
    /* four numbers (a box), or one WKT, vector file or spat_extent */
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    char *end;
    (void)strtod(v, &end);
    if (v[0] && !*end) {
      double b[4];
      (void)tf_parse_double(cli, a, v, &b[0]);
      if (two_doubles(cli, argc, argv, i, a, b + 1, 3) != TF_ARG_TAKEN) return TF_ARG_ERROR;
      snprintf(c->clipbox, sizeof c->clipbox, "%.17g %.17g %.17g %.17g", b[0], b[1], b[2], b[3]);
      v = c->clipbox;
    }
    o->clipsrc = v;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "-ot")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    o->out_type = GDALGetDataTypeByName(v);
    if (o->out_type == GDT_Unknown || GDALDataTypeIsComplex(o->out_type)) {
      tf_usage_error(cli, "-ot: '%s' is not a real GDAL data type", v);
      return TF_ARG_ERROR;
    }
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "-l") || !strcmp(a, "-oo")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    int *n = a[1] == 'l' ? &c->nlayers : &c->noo;
    const char **list = a[1] == 'l' ? c->layers : c->oo;
    if (*n >= 63) {
      tf_usage_error(cli, "%s: too many", a);
      return TF_ARG_ERROR;
    }
    list[(*n)++] = v;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--fill-voids")) {
    o->fill_voids = 1;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "-md")) return two_doubles(cli, argc, argv, i, a, &o->max_distance, 1);
  if (!strcmp(a, "-si")) {
    long n;
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, a, v, 0, 1000000, &n)) return TF_ARG_ERROR;
    o->smoothing_iterations = (int)n;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--xyz")) {
    o->xyz = 1;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "--tmp")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    o->tmp_dir = v;
    return TF_ARG_TAKEN;
  }
  return TF_ARG_UNKNOWN;
}

int tf_interpolate_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "interpolate", .usage = usage};
  static interp_cli c;
  memset(&c, 0, sizeof c);
  tr_interpolate_opts_init(&c.o);
  int code;
  if (tf_cli_parse(&cli, &c.o.run, interp_flag, &c, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected POINTS and OUT file names");
  if (c.nlayers) c.o.layers = c.layers;
  if (c.noo) c.o.open_options = c.oo;
  tf_cli_finish(&cli, &c.o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_interpolate(&c.o, cli.positional[0], cli.positional[1], &err), &err);
}
