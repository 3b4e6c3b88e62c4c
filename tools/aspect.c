/*
 * aspect.c - `terrafort aspect`: gdaldem aspect's flags over tr_aspect().
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort aspect [options] DEM OUT\n"
    "Aspect of DEM in degrees clockwise from north, Float32, nodata -9999.\n"
    "Accepts gdaldem aspect's flags and gives its values.\n\n"
    "  -alg Horn|ZevenbergenThorne   gradient (default Horn)\n"
    "  -trigonometric                counter-clockwise from east instead\n"
    "  -zero_for_flat                0 instead of nodata on flat cells\n"
    "  -compute_edges                compute edge cells too\n";

static int aspect_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  tr_aspect_opts *o = opts;
  const char *a = argv[*i];
  if (!strcmp(a, "-trigonometric")) o->trigonometric = 1;
  else if (!strcmp(a, "-zero_for_flat")) o->zero_for_flat = 1;
  else if (!strcmp(a, "-compute_edges")) o->compute_edges = 1;
  else if (!strcmp(a, "-alg")) return tf_gradient_alg_flag(cli, argc, argv, i, &o->alg);
  else return TF_ARG_UNKNOWN;
  return TF_ARG_TAKEN;
}

int tf_aspect_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "aspect", .usage = usage};
  tr_aspect_opts o;
  tr_aspect_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o.run, aspect_flag, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_aspect(&o, cli.positional[0], cli.positional[1], &err), &err);
}
