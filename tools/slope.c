/*
 * slope.c - `terrafort slope`: gdaldem slope's flags over tr_slope().
 */
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort slope [options] DEM OUT\n"
    "Slope of DEM in degrees (or percent with -p), Float32, nodata -9999.\n"
    "Accepts gdaldem slope's flags and gives its values.\n\n";

#define O(f) offsetof(tr_slope_opts, f)
static const tf_opt rows[] = {
    TF_ALG_ROW(O(alg)),
    {.kind = TF_FLAG, .names = "-p", .off = O(percent), .doc = "percent rise instead of degrees"},
    TF_SCALE_ROW(O(scale)),
    TF_EDGES_ROW(O(compute_edges)),
    TF_OPT_END,
};

const tf_opt_set tf_slope_set = {
    .cmd = "slope", .head = head, .column = 32, .groups = {{rows, 0}, {tf_common_opts, O(run)}}, .last_positional = 1};
#undef O

int tf_slope_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "slope", .set = &tf_slope_set};
  tr_slope_opts o;
  tr_slope_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_slope(&o, cli.positional[0], cli.positional[1], &err), &err);
}
