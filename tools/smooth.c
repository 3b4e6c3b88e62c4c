/*
 * smooth.c - `terrafort smooth`: --passes over tr_smooth().
 */
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort smooth [--passes N] [options] DEM OUT\n"
    "Iterated 3x3 mean filter: each of N passes (1..8, default 2) replaces every cell by the\n"
    "mean of the valid cells around it. Float32, nodata -9999. Under --ft replay each pass is\n"
    "a tracked in-place launch (see --ft in terrafort(1)).\n\n";

#define O(f) offsetof(tr_smooth_opts, f)
static const tf_opt rows[] = {
    {.kind = TF_INT,
     .names = "--passes",
     .arg = "N",
     .off = O(passes),
     .lo = 1,
     .hi = TR_SMOOTH_MAX_PASSES,
     .doc = "passes of the filter"},
    TF_OPT_END,
};

const tf_opt_set tf_smooth_set = {
    .cmd = "smooth", .head = head, .column = 22, .groups = {{rows, 0}, {tf_common_opts, O(run)}}, .last_positional = 1};
#undef O

int tf_smooth_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "smooth", .set = &tf_smooth_set};
  tr_smooth_opts o;
  tr_smooth_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_smooth(&o, cli.positional[0], cli.positional[1], &err), &err);
}
