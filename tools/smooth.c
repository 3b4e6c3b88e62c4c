/*
 * smooth.c - `terrafort smooth`: --passes over tr_smooth().
 */
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort smooth [--passes N] [options] DEM OUT\n"
    "Iterated 3x3 mean filter: each of N passes (1..8, default 2) replaces every cell by the\n"
    "mean of the valid cells around it. Float32, nodata -9999. Under --ft replay each pass is\n"
    "a tracked in-place launch (see --ft in terrafort(1)).\n\n"
    "  --passes N          passes of the filter\n";

static int smooth_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  if (strcmp(argv[*i], "--passes") != 0 && strncmp(argv[*i], "--passes=", 9) != 0) return TF_ARG_UNKNOWN;
  if (argv[*i][8] == '=') cli->inline_value = argv[*i] + 9;
  const char *v = tf_value(cli, argc, argv, i);
  long n;
  if (!v || tf_parse_int(cli, "--passes", v, 1, TR_SMOOTH_MAX_PASSES, &n)) return TF_ARG_ERROR;
  ((tr_smooth_opts *)opts)->passes = (int)n;
  return TF_ARG_TAKEN;
}

int tf_smooth_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "smooth", .usage = usage};
  tr_smooth_opts o;
  tr_smooth_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o.run, smooth_flag, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_smooth(&o, cli.positional[0], cli.positional[1], &err), &err);
}
