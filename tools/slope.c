/*
 * slope.c - `terrafort slope`: gdaldem slope's flags over tr_slope().
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort slope [options] DEM OUT\n"
    "Slope of DEM in degrees (or percent with -p), Float32, nodata -9999.\n"
    "Accepts gdaldem slope's flags and gives its values.\n\n"
    "  -alg Horn|ZevenbergenThorne   gradient (default Horn)\n"
    "  -p                            percent rise instead of degrees\n"
    "  -s SCALE                      vertical / horizontal units (gdaldem -s); without it a\n"
    "                                geographic DEM gets metric cell sizes from its ellipsoid\n"
    "  -compute_edges                compute edge cells too\n";

static int slope_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  tr_slope_opts *o = opts;
  const char *a = argv[*i], *v;
  if (!strcmp(a, "-p")) {
    o->percent = 1;
  } else if (!strcmp(a, "-compute_edges")) {
    o->compute_edges = 1;
  } else if (!strcmp(a, "-s") || !strcmp(a, "-scale")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, "-s", v, &o->scale)) return TF_ARG_ERROR;
    if (o->scale <= 0) {
      tf_usage_error(cli, "-s: scale must be positive, got %s", v);
      return TF_ARG_ERROR;
    }
  } else if (!strcmp(a, "-alg")) {
    return tf_gradient_alg_flag(cli, argc, argv, i, &o->alg);
  } else {
    return TF_ARG_UNKNOWN;
  }
  return TF_ARG_TAKEN;
}

int tf_slope_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "slope", .usage = usage};
  tr_slope_opts o;
  tr_slope_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o.run, slope_flag, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_slope(&o, cli.positional[0], cli.positional[1], &err), &err);
}
