/*
 * tpi.c - `terrafort tpi`: gdaldem TPI's flags over tr_tpi().
 */
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort tpi [options] DEM OUT\n"
    "Topographic Position Index of DEM (a cell minus the mean of its 8 neighbours),\n"
    "Float32, nodata -9999. Accepts gdaldem TPI's flags and gives its values.\n\n";

#define O(f) offsetof(tr_tpi_opts, f)
static const tf_opt rows[] = {
    TF_EDGES_ROW(O(compute_edges)),
    TF_OPT_END,
};

const tf_opt_set tf_tpi_set = {
    .cmd = "tpi", .head = head, .column = 22, .groups = {{rows, 0}, {tf_common_opts, O(run)}}, .last_positional = 1};
#undef O

int tf_tpi_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "tpi", .set = &tf_tpi_set};
  tr_tpi_opts o;
  tr_tpi_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_tpi(&o, cli.positional[0], cli.positional[1], &err), &err);
}
