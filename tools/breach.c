/*
 * breach.c - `terrafort breach`: --epsilon and stream burning over
 * tr_breach().
 */
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort breach [--epsilon] [options] DEM OUT\n"
    "Complete depression breaching (Lindsay 2016, as RichDEM's rd_depressions_breach COMPLETE):\n"
    "from each pit a channel is cut along the least-cost outlet path down to the first cell\n"
    "low enough, instead of filling the depression. Float32, the DEM's nodata. The whole DEM\n"
    "is held in memory (up to 26 bytes a cell).\n\n"
    "  --epsilon           cut paths fall by one float step a cell, raised pits sit one step\n"
    "                      below their lowest neighbour (RichDEM's EPS), so every cut drains\n" TF_BURN_HELP;

static int breach_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  if (strcmp(argv[*i], "--epsilon") != 0) return tf_burn_flag(cli, &((tr_breach_opts *)opts)->burn, argc, argv, i);
  ((tr_breach_opts *)opts)->epsilon = 1;
  return TF_ARG_TAKEN;
}

int tf_breach_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "breach", .usage = usage};
  tr_breach_opts o;
  tr_breach_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o.run, breach_flag, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_breach(&o, cli.positional[0], cli.positional[1], &err), &err);
}
