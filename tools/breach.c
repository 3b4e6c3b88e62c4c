/*
 * breach.c - `terrafort breach`: --mode, --max-length, --max-depth, --fill,
 * --epsilon and stream burning over tr_breach(). Which combinations make
 * sense is the library's to say (tr_breach refuses the others before it
 * reads the DEM); here only each value's own form is checked.
 */
#include <string.h>

#include "cli.h"
#include "tools.h"

static const char *usage =
    "Usage: terrafort breach [--mode M] [--max-length N] [--max-depth D] [--fill] [--epsilon] [options] DEM OUT\n"
    "Depression breaching (Lindsay 2016, as RichDEM's rd_depressions_breach): from each pit\n"
    "a channel is cut along its least-cost outlet path down to the first cell lower than\n"
    "the pit, instead of filling the depression. Float32, the DEM's nodata. The whole DEM\n"
    "is held in memory: 26 bytes a cell at most, 4 more with --fill and 4 more in\n"
    "constrained mode with --max-depth.\n\n"
    "  --mode complete|selective|constrained\n"
    "                      complete (default): every path cut whole; selective: only paths\n"
    "                      within the limits, the other pits left; constrained: every path\n"
    "                      cut, but only its first --max-length cells and no cell deeper\n"
    "                      than --max-depth\n"
    "  --max-length N      cells of a path: the pit and each cell down to the first lower one\n"
    "  --max-depth D       the deepest cut, in the DEM's units (above 0)\n"
    "  --fill              then fill what the limits left (selective, constrained)\n"
    "  --epsilon           cut paths fall by one float step a cell, raised pits sit one step\n"
    "                      below their lowest neighbour, filled cells one step above the cell\n"
    "                      they drain to (RichDEM's EPS), so every cut and fill drains\n" TF_BURN_HELP;

static const char *const modes[] = {"complete", "selective", "constrained"};

/* The value of --name or --name=value, or NULL when argv[*i] is not it. */
static int br_is(tf_cli *cli, char **argv, int *i, const char *name) {
  const size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0 || (argv[*i][n] != '\0' && argv[*i][n] != '=')) return 0;
  if (argv[*i][n] == '=') cli->inline_value = argv[*i] + n + 1;
  return 1;
}

static int breach_flag(tf_cli *cli, void *opts, int argc, char **argv, int *i) {
  tr_breach_opts *o = opts;
  const char *v;
  if (!strcmp(argv[*i], "--epsilon")) {
    o->epsilon = 1;
  } else if (!strcmp(argv[*i], "--fill")) {
    o->fill = 1;
  } else if (br_is(cli, argv, i, "--mode")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    int m = 0;
    while (m < 3 && strcmp(v, modes[m]) != 0) m++;
    if (m == 3) {
      tf_usage_error(cli, "--mode: '%s' is not complete, selective or constrained", v);
      return TF_ARG_ERROR;
    }
    o->mode = (tr_breach_mode)m;
  } else if (br_is(cli, argv, i, "--max-length")) {
    long n;
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--max-length", v, 1, 4294967294L, &n))
      return TF_ARG_ERROR;
    o->max_length = n;
  } else if (br_is(cli, argv, i, "--max-depth")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, "--max-depth", v, &o->max_depth))
      return TF_ARG_ERROR;
    if (o->max_depth <= 0) {
      tf_usage_error(cli, "--max-depth: %s is not above 0 (a depth in the DEM's units)", v);
      return TF_ARG_ERROR;
    }
  } else {
    return tf_burn_flag(cli, &o->burn, argc, argv, i);
  }
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
