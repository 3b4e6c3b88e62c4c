/*
 * breach.c - `terrafort breach`: --mode, --max-length, --max-depth, --fill,
 * --epsilon and stream burning over tr_breach(). Which combinations make
 * sense is the library's to say (tr_breach refuses the others before it
 * reads the DEM); here only each value's own form is checked.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort breach [--mode M] [--max-length N] [--max-depth D] [--fill] [--epsilon] [options] DEM OUT\n"
    "Depression breaching (Lindsay 2016, as RichDEM's rd_depressions_breach): from each pit\n"
    "a channel is cut along its least-cost outlet path down to the first cell lower than\n"
    "the pit, instead of filling the depression. Float32, the DEM's nodata. The whole DEM\n"
    "is held in memory: 21 bytes a cell at most (5 and the flood's front, mostly), 4 more\n"
    "with --fill and 4 more in constrained mode with --max-depth.\n\n";

_Static_assert(sizeof(long) == sizeof(int64_t), "--max-length is read as a long");

#define O(f) offsetof(tr_breach_opts, f)
static const tf_opt rows[] = {
    {.kind = TF_CHOICE,
     .names = "--mode",
     .choices = "complete|selective|constrained",
     .off = O(mode),
     .left = "--mode complete|selective|constrained\n",
     .doc = "complete (default): every path cut whole; selective: only paths\n"
            "within the limits, the other pits left; constrained: every path\n"
            "cut, but only its first --max-length cells and no cell deeper\n"
            "than --max-depth"},
    {.kind = TF_LONG,
     .names = "--max-length",
     .arg = "N",
     .off = O(max_length),
     .lo = 1,
     .hi = 4294967294.0,
     .doc = "cells of a path: the pit and each cell down to the first lower one"},
    {.kind = TF_DOUBLE,
     .names = "--max-depth",
     .arg = "D",
     .off = O(max_depth),
     .lo = 0,
     .lo_open = 1,
     .hi = INFINITY,
     .doc = "the deepest cut, in the DEM's units (above 0)"},
    {.kind = TF_FLAG,
     .names = "--fill",
     .off = O(fill),
     .doc = "then fill what the limits left (selective, constrained)"},
    {.kind = TF_FLAG,
     .names = "--epsilon",
     .off = O(epsilon),
     .doc = "cut paths fall by one float step a cell, raised pits sit one step\n"
            "below their lowest neighbour, filled cells one step above the cell\n"
            "they drain to (RichDEM's EPS), so every cut and fill drains"},
    TF_OPT_END,
};

const tf_opt_set tf_breach_set = {.cmd = "breach",
                                  .head = head,
                                  .column = 22,
                                  .groups = {{rows, 0}, {tf_burn_opts_rows, O(burn)}, {tf_common_opts, O(run)}},
                                  .last_positional = 1};
#undef O

int tf_breach_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "breach", .set = &tf_breach_set};
  tr_breach_opts o;
  tr_breach_opts_init(&o);
  int code;
  if (tf_cli_parse(&cli, &o, argc, argv, &code)) return code;
  if (cli.npositional != 2) return tf_usage_error(&cli, "expected DEM and OUT file names");
  tf_cli_finish(&cli, &o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_breach(&o, cli.positional[0], cli.positional[1], &err), &err);
}
