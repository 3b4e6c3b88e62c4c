/*
 * aspect.c - `terrafort aspect`: gdaldem aspect's flags over tr_aspect().
 */
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort aspect [options] DEM OUT\n"
    "Aspect of DEM in degrees clockwise from north, Float32, nodata -9999.\n"
    "Accepts gdaldem aspect's flags and gives its values.\n\n";

#define O(f) offsetof(tr_aspect_opts, f)
static const tf_opt rows[] = {
    TF_ALG_ROW(O(alg)),
    {.kind = TF_FLAG, .names = "-trigonometric", .off = O(trigonometric), .doc = "counter-clockwise from east instead"},
    {.kind = TF_FLAG, .names = "-zero_for_flat", .off = O(zero_for_flat), .doc = "0 instead of nodata on flat cells"},
    TF_EDGES_ROW(O(compute_edges)),
    TF_OPT_END,
};

const tf_opt_set tf_aspect_set = {
    .cmd = "aspect", .head = head, .column = 32, .groups = {{rows, 0}, {tf_common_opts, O(run)}}, .last_positional = 1};
#undef O

int tf_aspect_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "aspect", .set = &tf_aspect_set};
  tr_aspect_opts o;
  tr_aspect_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_aspect(&o, cli.positional[0], cli.positional[1], &err), &err);
}
