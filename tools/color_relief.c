/*
 * color_relief.c - `terrafort color-relief`: gdaldem color-relief's flags
 * over tr_color_relief(). The last of -exact_color_entry and
 * -nearest_color_entry wins, as in gdaldem.
 */
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort color-relief [options] DEM COLOR_TEXT_FILE OUT\n"
    "Colours DEM through a gdaldem colour text file: RGB Byte (RGBA with -alpha), no nodata.\n"
    "Accepts gdaldem color-relief's flags and gives its colours.\n\n";

static const char tail[] =
    "Colour file lines: 'elevation R G B [A]', 'elevation NAME [A]', 'N% ...', 'nv ...'\n"
    "(the nodata colour), '#' comments; see terrafort-color-relief(1).\n";

#define O(f) offsetof(tr_color_relief_opts, f)
static const tf_opt rows[] = {
    {.kind = TF_FLAG,
     .names = "-alpha",
     .off = O(alpha),
     .doc = "add an alpha band (the entries' fourth component, default 255)"},
    {.kind = TF_FLAG,
     .names = "-exact_color_entry",
     .off = O(mode),
     .set = TR_COLOR_EXACT,
     .doc = "no interpolation; as GDAL 3.6 does, only cells equal to the lowest\n"
            "entry get its colour, all others 0,0,0(,0) (see the man page)"},
    {.kind = TF_FLAG,
     .names = "-nearest_color_entry",
     .off = O(mode),
     .set = TR_COLOR_NEAREST,
     .doc = "no interpolation: the nearest entry's colour"},
    TF_OPT_END,
};

const tf_opt_set tf_color_relief_set = {.cmd = "color-relief",
                                        .head = head,
                                        .tail = tail,
                                        .column = 25,
                                        .groups = {{rows, 0}, {tf_common_opts, O(run)}},
                                        .last_positional = 1};
#undef O

int tf_color_relief_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "color-relief", .set = &tf_color_relief_set};
  tr_color_relief_opts o;
  tr_color_relief_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o, argc, argv, &code)) return code;
  if (cli.npositional != 3) return tf_usage_error(&cli, "expected DEM, COLOR_TEXT_FILE and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_color_relief(&o, cli.positional[0], cli.positional[1], cli.positional[2], &err), &err);
}
