/*
 * fill.c - `terrafort fill`: depression filling over tr_fill_dem(), with
 * TauDEM pitremove's -z/-fel form accepted too.
 */
#include <gdal.h>
#include <stdio.h>
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
    "  --z-cache-mb MB        elevation tiles kept in memory (default 20% of the input)\n"
    "  --aap-stats FILE       per-worker engine statistics as JSON\n";

int tf_fill_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "fill", .usage = usage};
  tr_fill_dem_opts o;
  tr_fill_dem_opts_init(&o);
  const char *z = NULL, *fel = NULL;
  long n;
  double d;
  for (int i = 1; i < argc; i++) {
    int r = tf_cli_common(&cli, &o.run, argc, argv, &i);
    if (r == TF_ARG_EXIT) return 0;
    if (r == TF_ARG_ERROR) return tr_exit_code(TR_EUSAGE);
    if (r == TF_ARG_TAKEN) continue;
    const char *a = argv[i], *v;
    if (!strcmp(a, "-z") || !strcmp(a, "-fel")) {
      if (!(v = tf_value(&cli, argc, argv, &i))) return tr_exit_code(TR_EUSAGE);
      if (a[1] == 'z') z = v;
      else fel = v;
    } else if (!strcmp(a, "-ot")) {
      if (!(v = tf_value(&cli, argc, argv, &i))) return tr_exit_code(TR_EUSAGE);
      GDALDataType t = GDALGetDataTypeByName(v);
      if (t == GDT_Unknown || GDALDataTypeIsComplex(t))
        return tf_usage_error(&cli, "-ot: '%s' is not a real GDAL data type (Byte, Int16, ..., Float64)", v);
      o.out_type = (int)t;
    } else if (!strcmp(a, "--epsilon")) {
      o.epsilon = 1;
    } else if (!strcmp(a, "--epsilon-step")) {
      if (!(v = tf_value(&cli, argc, argv, &i)) || tf_parse_double(&cli, a, v, &o.epsilon_step))
        return tr_exit_code(TR_EUSAGE);
      if (o.epsilon_step <= 0) return tf_usage_error(&cli, "--epsilon-step must be positive, got %s", v);
      o.epsilon = 1;
    } else if (!strcmp(a, "--schedule")) {
      if (!(v = tf_value(&cli, argc, argv, &i))) return tr_exit_code(TR_EUSAGE);
      o.schedule = v;
    } else if (!strcmp(a, "--staleness")) {
      if (!(v = tf_value(&cli, argc, argv, &i)) || tf_parse_int(&cli, a, v, 0, 1000000, &n)) return tr_exit_code(TR_EUSAGE);
      o.staleness = (int)n;
    } else if (!strcmp(a, "--ds-max")) {
      if (!(v = tf_value(&cli, argc, argv, &i)) || tf_parse_double(&cli, a, v, &d)) return tr_exit_code(TR_EUSAGE);
      if (d <= 0) return tf_usage_error(&cli, "--ds-max must be positive, got %s", v);
      o.ds_max_ms = d;
    } else if (!strcmp(a, "--l-bottom") || !strcmp(a, "--l-up")) {
      if (!(v = tf_value(&cli, argc, argv, &i)) || tf_parse_int(&cli, a, v, 1, 1000000, &n)) return tr_exit_code(TR_EUSAGE);
      if (!strcmp(a, "--l-bottom")) o.l_bottom = (int)n;
      else o.l_up = (int)n;
    } else if (!strcmp(a, "--z-cache-mb")) {
      if (!(v = tf_value(&cli, argc, argv, &i)) || tf_parse_double(&cli, a, v, &d)) return tr_exit_code(TR_EUSAGE);
      if (d < 0) return tf_usage_error(&cli, "--z-cache-mb must be 0 or more, got %s", v);
      o.z_cache_mb = d;
    } else if (!strcmp(a, "--aap-stats")) {
      if (!(v = tf_value(&cli, argc, argv, &i))) return tr_exit_code(TR_EUSAGE);
      o.aap_stats = v;
    } else {
      return tf_usage_error(&cli, "unknown option '%s'", a);
    }
  }
  if (z || fel) {
    if (!z || !fel) return tf_usage_error(&cli, "-z and -fel go together");
    if (cli.npositional) return tf_usage_error(&cli, "give either -z DEM -fel OUT or DEM OUT, not both");
  } else if (cli.npositional != 2) {
    return tf_usage_error(&cli, "expected DEM and OUT file names");
  } else {
    z = cli.positional[0];
    fel = cli.positional[1];
  }
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  int st = tr_fill_dem(&o, z, fel, &err);
  return tf_report(&cli, st, &err);
}
