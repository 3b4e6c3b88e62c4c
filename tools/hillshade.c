/*
 * hillshade.c - `terrafort hillshade`: gdaldem hillshade's flags over
 * tr_hillshade(), with its aliases (-azimuth, --alt, ...) and the pairs it
 * refuses (two shading models, -multidirectional with -az).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort hillshade [options] DEM OUT\n"
    "Shaded relief of DEM, Byte 1..255, nodata 0.\n"
    "Accepts gdaldem hillshade's flags and gives its values.\n\n"
    "  -z ZFACTOR                    vertical exaggeration (default 1)\n"
    "  -s SCALE                      vertical / horizontal units (gdaldem -s); without it a\n"
    "                                geographic DEM gets metric cell sizes from its ellipsoid\n"
    "  -az AZIMUTH                   light from, degrees clockwise from north (default 315)\n"
    "  -alt ALTITUDE                 light above the horizon, degrees (default 45)\n"
    "  -alg Horn|ZevenbergenThorne   gradient (default Horn)\n"
    "  -combined                     shade darkened by the slope\n"
    "  -multidirectional             lights from 225, 270, 315 and 360 degrees\n"
    "  -igor                         Igor's shading: no shadows on slopes facing the light\n"
    "  -compute_edges                compute edge cells too\n";

typedef struct {
  tr_hillshade_opts o;
  int modes;    /* bit per shading flag given */
  int az_given;
} hs_cli;

static int named(const char *a, const char *name) {
  return !strcmp(a, name) || (a[0] == '-' && a[1] == '-' && !strcmp(a + 1, name));
}

static int number(tf_cli *cli, int argc, char **argv, int *i, const char *opt, double *out) {
  const char *v = tf_value(cli, argc, argv, i);
  return v && !tf_parse_double(cli, opt, v, out) ? TF_ARG_TAKEN : TF_ARG_ERROR;
}

static int hillshade_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  hs_cli *h = opts;
  tr_hillshade_opts *o = &h->o;
  const char *a = argv[*i];
  if (named(a, "-z")) return number(cli, argc, argv, i, "-z", &o->z);
  if (named(a, "-az") || named(a, "-azimuth")) {
    h->az_given = 1;
    return number(cli, argc, argv, i, "-az", &o->azimuth);
  }
  if (named(a, "-alt") || named(a, "-altitude")) return number(cli, argc, argv, i, "-alt", &o->altitude);
  if (named(a, "-s") || named(a, "-scale")) {
    const char *v = tf_value(cli, argc, argv, i);
    if (!v || tf_parse_double(cli, "-s", v, &o->scale)) return TF_ARG_ERROR;
    if (o->scale <= 0) {
      tf_usage_error(cli, "-s: scale must be positive, got %s", v);
      return TF_ARG_ERROR;
    }
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "-compute_edges")) {
    o->compute_edges = 1;
    return TF_ARG_TAKEN;
  }
  if (!strcmp(a, "-alg")) return tf_gradient_alg_flag(cli, argc, argv, i, &o->alg);
  tr_shade_mode m;
  if (named(a, "-combined")) m = TR_SHADE_COMBINED;
  else if (named(a, "-multidirectional")) m = TR_SHADE_MULTIDIRECTIONAL;
  else if (named(a, "-igor")) m = TR_SHADE_IGOR;
  else return TF_ARG_UNKNOWN;
  o->mode = m;
  h->modes |= 1 << m;
  return TF_ARG_TAKEN;
}

int tf_hillshade_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "hillshade", .usage = usage};
  hs_cli h = {.modes = 0, .az_given = 0};
  tr_hillshade_opts_init(&h.o);
  int code;
  if (tf_cli_parse(&cli, &h.o.run, hillshade_flag, &h, argc, argv, &code)) return code;
  if (h.modes & (h.modes - 1))
    return tf_usage_error(&cli, "only one of -multidirectional, -combined or -igor can be used");
  if (h.o.mode == TR_SHADE_MULTIDIRECTIONAL && h.az_given)
    return tf_usage_error(&cli, "-multidirectional and -az cannot be used together");
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &h.o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_hillshade(&h.o, cli.positional[0], cli.positional[1], &err), &err);
}
