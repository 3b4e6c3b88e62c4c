/*
 * roughness.c - `terrafort roughness`: gdaldem roughness's flags over
 * tr_roughness().
 */
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort roughness [options] DEM OUT\n"
    "Roughness of DEM (largest minus smallest value of each 3x3 window),\n"
    "Float32, nodata -9999. Accepts gdaldem roughness's flags and gives its values.\n\n";

#define O(f) offsetof(tr_roughness_opts, f)
static const tf_opt rows[] = {
    TF_EDGES_ROW(O(compute_edges)),
    TF_OPT_END,
};

const tf_opt_set tf_roughness_set = {.cmd = "roughness",
                                     .head = head,
                                     .column = 22,
                                     .groups = {{rows, 0}, {tf_common_opts, O(run)}},
                                     .last_positional = 1};
#undef O

int tf_roughness_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "roughness", .set = &tf_roughness_set};
  tr_roughness_opts o;
  tr_roughness_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_roughness(&o, cli.positional[0], cli.positional[1], &err), &err);
}
