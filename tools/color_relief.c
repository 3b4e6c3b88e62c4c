/*
 * color_relief.c - `terrafort color-relief`: gdaldem color-relief's flags
 * over tr_color_relief().
 */
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort color-relief [options] DEM COLOR_TEXT_FILE OUT\n"
    "Colours DEM through a gdaldem colour text file: RGB Byte (RGBA with -alpha), no nodata.\n"
    "Accepts gdaldem color-relief's flags and gives its colours.\n\n"
    "  -alpha                 add an alpha band (the entries' fourth component, default 255)\n"
    "  -exact_color_entry     no interpolation; as GDAL 3.6 does, only cells equal to the lowest\n"
    "                         entry get its colour, all others 0,0,0(,0) (see the man page)\n"
    "  -nearest_color_entry   no interpolation: the nearest entry's colour\n"
    "Colour file lines: 'elevation R G B [A]', 'elevation NAME [A]', 'N% ...', 'nv ...'\n"
    "(the nodata colour), '#' comments; see terrafort-color-relief(1).\n";

static int color_relief_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  tr_color_relief_opts *o = opts;
  const char *a = argv[*i];
  (void)cli;
  (void)argc;
  /* The last of -exact_color_entry and -nearest_color_entry wins, as in gdaldem. */
  if (!strcmp(a, "-alpha"))
    o->alpha = 1;
  else if (!strcmp(a, "-exact_color_entry"))
    o->mode = TR_COLOR_EXACT;
  else if (!strcmp(a, "-nearest_color_entry"))
    o->mode = TR_COLOR_NEAREST;
  else
    return TF_ARG_UNKNOWN;
  return TF_ARG_TAKEN;
}

int tf_color_relief_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "color-relief", .usage = usage};
  tr_color_relief_opts o;
  tr_color_relief_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o.run, color_relief_flag, &o, argc, argv, &code)) return code;
  if (cli.npositional != 3) return tf_usage_error(&cli, "expected DEM, COLOR_TEXT_FILE and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_color_relief(&o, cli.positional[0], cli.positional[1], cli.positional[2], &err), &err);
}
