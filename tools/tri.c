/*
 * tri.c - `terrafort tri`: gdaldem TRI's flags over tr_tri().
 */
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort tri [options] DEM OUT\n"
    "Terrain Ruggedness Index of DEM, Float32, nodata -9999.\n"
    "Accepts gdaldem TRI's flags and gives its values.\n\n"
    "  -alg Riley|Wilson   Riley: root of the summed squared differences to the 8 neighbours\n"
    "                      (default, as gdaldem); Wilson: their mean absolute difference\n"
    "  -compute_edges      compute edge cells too\n";

static int tri_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  tr_tri_opts *o = opts;
  const char *a = argv[*i];
  if (!strcmp(a, "-compute_edges")) {
    o->compute_edges = 1;
  } else if (!strcmp(a, "-alg")) {
    const char *v = tf_value(cli, argc, argv, i);
    if (!v) return TF_ARG_ERROR;
    if (!strcasecmp(v, "Riley")) o->alg = TR_TRI_RILEY;
    else if (!strcasecmp(v, "Wilson")) o->alg = TR_TRI_WILSON;
    else {
      tf_usage_error(cli, "-alg: unknown algorithm '%s' (Riley or Wilson)", v);
      return TF_ARG_ERROR;
    }
  } else {
    return TF_ARG_UNKNOWN;
  }
  return TF_ARG_TAKEN;
}

int tf_tri_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "tri", .usage = usage};
  tr_tri_opts o;
  tr_tri_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o.run, tri_flag, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_tri(&o, cli.positional[0], cli.positional[1], &err), &err);
}
