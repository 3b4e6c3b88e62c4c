/*
 * fill.c - `terrafort fill`: depression filling over tr_fill_dem(), with
 * TauDEM pitremove's -z/-fel form accepted too.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort fill [options] DEM OUT\n"
    "       terrafort fill [options] -z DEM -fel OUT      (TauDEM pitremove form)\n"
    "Fills closed depressions: the lowest surface at or above DEM from which every cell\n"
    "has a non-ascending path to the DEM's edge or to a nodata cell (as TauDEM pitremove,\n"
    "RichDEM and SAGA's Wang & Liu fill give). Float32 by default, nodata kept.\n\n"
    "  -ot TYPE               output data type (Byte ... Float64; default Float32)\n"
    "  --epsilon              no flats: every cell drains strictly downhill\n"
    "  --epsilon-step E       the increment of --epsilon (default: one float ulp)\n"
    "  --schedule S           aap (default), bsp, ap, ssp, random: how fragments wait for messages\n"
    "  --staleness C          ssp: how many rounds a fragment may run ahead (default 1)\n"
    "  --ds-max MS            aap: longest delay stretch before a round\n"
    "  --l-bottom N, --l-up N aap: clamp of the messages a fragment waits for\n"
    "  --straggler-ratio R    aap: hold fragments to the round of a neighbour R times\n"
    "                         slower per cell (less work, not faster; off by default)\n"
    "  --z-cache-mb MB        elevation tiles kept in memory (default 16)\n"
    "  --mem SIZE             memory a run (each rank) may keep, e.g. 512M, 4G (default:\n"
    "                         3/4 of what it may have); beyond it, flat fill keeps only\n"
    "                         the tiles' perimeters and reads each tile twice\n"
    "  --tmp DIR              folder for the spilled state (default: the output's)\n"
    "  --aap-stats FILE       per-worker engine statistics as JSON (-: stdout)\n" TF_BURN_HELP;

/* What fill parses besides the common options; -z and -fel land here too. */
typedef struct {
  tr_fill_dem_opts o;
  const char *z, *fel;
} fill_args;

static int fill_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  fill_args *fa = opts;
  tr_fill_dem_opts *o = &fa->o;
  const char *a = argv[*i], *v;
  if (!strcmp(a, "-z") || !strcmp(a, "-fel")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (a[1] == 'z') fa->z = v;
    else fa->fel = v;
  } else if (!strcmp(a, "-ot")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    GDALDataType t = GDALGetDataTypeByName(v);
    if (t == GDT_Unknown || GDALDataTypeIsComplex(t)) {
      tf_usage_error(cli, "-ot: '%s' is not a real GDAL data type (Byte, Int16, ..., Float64)", v);
      return TF_ARG_ERROR;
    }
    o->out_type = (int)t;
  } else if (!strcmp(a, "--epsilon")) {
    o->epsilon = 1;
  } else if (!strcmp(a, "--epsilon-step")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, a, v, &o->epsilon_step)) return TF_ARG_ERROR;
    if (o->epsilon_step <= 0) {
      tf_usage_error(cli, "--epsilon-step must be positive, got %s", v);
      return TF_ARG_ERROR;
    }
    o->epsilon = 1;
  } else {
    const int r = tf_burn_flag(cli, &o->burn, argc, argv, i);
    return r != TF_ARG_UNKNOWN ? r : tf_graph_flag(cli, &o->graph, argc, argv, i);
  }
  return TF_ARG_TAKEN;
}

int tf_fill_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "fill", .usage = usage};
  fill_args fa = {.z = NULL, .fel = NULL};
  tr_fill_dem_opts_init(&fa.o);
  int code;
  if (tf_cli_parse(&cli, &fa.o.run, fill_flag, &fa, argc, argv, &code)) return code;
  if (fa.z || fa.fel) {
    if (!fa.z || !fa.fel) return tf_usage_error(&cli, "-z and -fel go together");
    if (cli.npositional) return tf_usage_error(&cli, "give either -z DEM -fel OUT or DEM OUT, not both");
  } else if (cli.npositional != 2) {
    return tf_usage_error(&cli, "expected DEM and OUT file names");
  } else {
    fa.z = cli.positional[0];
    fa.fel = cli.positional[1];
  }
  tf_cli_finish(&cli, &fa.o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_fill_dem(&fa.o, fa.z, fa.fel, &err), &err);
}
