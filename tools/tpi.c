/*
 * tpi.c - `terrafort tpi`: gdaldem TPI's flags over tr_tpi().
 */
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort tpi [options] DEM OUT\n"
    "Topographic Position Index of DEM (a cell minus the mean of its 8 neighbours),\n"
    "Float32, nodata -9999. Accepts gdaldem TPI's flags and gives its values.\n\n"
    "  -compute_edges      compute edge cells too\n";

static int tpi_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  (void)cli;
  (void)argc;
  if (strcmp(argv[*i], "-compute_edges") != 0) return TF_ARG_UNKNOWN;
  ((tr_tpi_opts *)opts)->compute_edges = 1;
  return TF_ARG_TAKEN;
}

int tf_tpi_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "tpi", .usage = usage};
  tr_tpi_opts o;
  tr_tpi_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o.run, tpi_flag, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_tpi(&o, cli.positional[0], cli.positional[1], &err), &err);
}
