/*
 * tri.c - `terrafort tri`: gdaldem TRI's flags over tr_tri().
 */
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort tri [options] DEM OUT\n"
    "Terrain Ruggedness Index of DEM, Float32, nodata -9999.\n"
    "Accepts gdaldem TRI's flags and gives its values.\n\n";

#define O(f) offsetof(tr_tri_opts, f)
static const tf_opt rows[] = {
    {.kind = TF_CHOICE,
     .names = "-alg",
     .choices = "Riley|Wilson",
     .nocase = 1,
     .off = O(alg),
     .doc = "Riley: root of the summed squared differences to the 8 neighbours\n"
            "(default, as gdaldem); Wilson: their mean absolute difference"},
    TF_EDGES_ROW(O(compute_edges)),
    TF_OPT_END,
};

const tf_opt_set tf_tri_set = {
    .cmd = "tri", .head = head, .column = 22, .groups = {{rows, 0}, {tf_common_opts, O(run)}}, .last_positional = 1};
#undef O

int tf_tri_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "tri", .set = &tf_tri_set};
  tr_tri_opts o;
  tr_tri_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_tri(&o, cli.positional[0], cli.positional[1], &err), &err);
}
