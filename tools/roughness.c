/*
 * roughness.c - `terrafort roughness`: gdaldem roughness's flags over
 * tr_roughness().
 */
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort roughness [options] DEM OUT\n"
    "Roughness of DEM (largest minus smallest value of each 3x3 window),\n"
    "Float32, nodata -9999. Accepts gdaldem roughness's flags and gives its values.\n\n"
    "  -compute_edges      compute edge cells too\n";

static int roughness_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  (void)cli;
  (void)argc;
  if (strcmp(argv[*i], "-compute_edges") != 0) return TF_ARG_UNKNOWN;
  ((tr_roughness_opts *)opts)->compute_edges = 1;
  return TF_ARG_TAKEN;
}

int tf_roughness_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "roughness", .usage = usage};
  tr_roughness_opts o;
  tr_roughness_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o.run, roughness_flag, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_roughness(&o, cli.positional[0], cli.positional[1], &err), &err);
}
