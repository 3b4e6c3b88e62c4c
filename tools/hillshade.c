/*
 * hillshade.c - `terrafort hillshade`: gdaldem hillshade's flags over
 * tr_hillshade(), with its aliases (-azimuth, --alt, ...) and the pairs it
 * refuses (two shading models, -multidirectional with -az).
 */
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort hillshade [options] DEM OUT\n"
    "Shaded relief of DEM, Byte 1..255, nodata 0.\n"
    "Accepts gdaldem hillshade's flags and gives its values.\n\n";

typedef struct {
  tr_hillshade_opts o;
  int modes; /* bit per shading flag given */
  int az_given;
} hs_cli;

static int shading_given(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)cli, (void)row, (void)argc, (void)argv, (void)i;
  hs_cli *h = base;
  h->modes |= 1 << h->o.mode;
  return TF_ARG_TAKEN;
}

static int azimuth_given(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)cli, (void)row, (void)argc, (void)argv, (void)i;
  ((hs_cli *)base)->az_given = 1;
  return TF_ARG_TAKEN;
}

#define O(f) offsetof(hs_cli, f)
static const tf_opt rows[] = {
    {.kind = TF_DOUBLE, .names = "-z", .arg = "ZFACTOR", .off = O(o.z), .doc = "vertical exaggeration (default 1)"},
    TF_SCALE_ROW(O(o.scale)),
    {.kind = TF_DOUBLE,
     .names = "-az -azimuth",
     .arg = "AZIMUTH",
     .off = O(o.azimuth),
     .fn = azimuth_given,
     .doc = "light from, degrees clockwise from north (default 315)"},
    {.kind = TF_DOUBLE,
     .names = "-alt -altitude",
     .arg = "ALTITUDE",
     .off = O(o.altitude),
     .doc = "light above the horizon, degrees (default 45)"},
    TF_ALG_ROW(O(o.alg)),
    {.kind = TF_FLAG,
     .names = "-combined",
     .off = O(o.mode),
     .set = TR_SHADE_COMBINED,
     .fn = shading_given,
     .doc = "shade darkened by the slope"},
    {.kind = TF_FLAG,
     .names = "-multidirectional",
     .off = O(o.mode),
     .set = TR_SHADE_MULTIDIRECTIONAL,
     .fn = shading_given,
     .doc = "lights from 225, 270, 315 and 360 degrees"},
    {.kind = TF_FLAG,
     .names = "-igor",
     .off = O(o.mode),
     .set = TR_SHADE_IGOR,
     .fn = shading_given,
     .doc = "Igor's shading: no shadows on slopes facing the light"},
    TF_EDGES_ROW(O(o.compute_edges)),
    TF_OPT_END,
};

const tf_opt_set tf_hillshade_set = {.cmd = "hillshade",
                                     .head = head,
                                     .column = 32,
                                     .groups = {{rows, 0}, {tf_common_opts, O(o.run)}},
                                     .dashdash = 1,
                                     .last_positional = 1};
#undef O

int tf_hillshade_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "hillshade", .set = &tf_hillshade_set};
  hs_cli h = {.modes = 0, .az_given = 0};
  tr_hillshade_opts_init(&h.o);
  int code;
  if (tf_cli_parse(&cli, &h, argc, argv, &code)) return code;
  if (h.modes & (h.modes - 1))
    return tf_usage_error(&cli, "only one of -multidirectional, -combined or -igor can be used");
  if (h.o.mode == TR_SHADE_MULTIDIRECTIONAL && h.az_given)
    return tf_usage_error(&cli, "-multidirectional and -az cannot be used together");
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &h.o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_hillshade(&h.o, cli.positional[0], cli.positional[1], &err), &err);
}
