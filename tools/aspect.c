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

int tf_aspect_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "aspect", .usage = usage};
  tr_aspect_opts o;
  tr_aspect_opts_init(&o);
  for (int i = 1; i < argc; i++) {
    int r = tf_cli_common(&cli, &o.run, argc, argv, &i);
    if (r == TF_ARG_EXIT) return 0;
    if (r == TF_ARG_ERROR) return tr_exit_code(TR_EUSAGE);
    if (r == TF_ARG_TAKEN) continue;
    const char *a = argv[i], *v;
    if (!strcmp(a, "-trigonometric")) {
      o.trigonometric = 1;
    } else if (!strcmp(a, "-zero_for_flat")) {
      o.zero_for_flat = 1;
    } else if (!strcmp(a, "-compute_edges")) {
      o.compute_edges = 1;
    } else if (!strcmp(a, "-alg")) {
      if (!(v = tf_value(&cli, argc, argv, &i))) return tr_exit_code(TR_EUSAGE);
      if (tf_parse_gradient_alg(v, &o.alg)) return tf_usage_error(&cli, "-alg: unknown algorithm '%s'", v);
    } else {
      return tf_usage_error(&cli, "unknown option '%s'", a);
    }
  }
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  int st = tr_aspect(&o, cli.positional[0], cli.positional[1], &err);
  return tf_report(&cli, st, &err);
}
