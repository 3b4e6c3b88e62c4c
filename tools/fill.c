/*
 * fill.c - `terrafort fill`: depression filling over tr_fill_dem(), with
 * TauDEM pitremove's -z/-fel form accepted too.
 */
#include <gdal.h>
#include <math.h>
#include <stddef.h>

#include "cli.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort fill [options] DEM OUT\n"
    "       terrafort fill [options] -z DEM -fel OUT      (TauDEM pitremove form)\n"
    "Fills closed depressions: the lowest surface at or above DEM from which every cell\n"
    "has a non-ascending path to the DEM's edge or to a nodata cell (as TauDEM pitremove,\n"
    "RichDEM and SAGA's Wang & Liu fill give). Float32 by default, nodata kept.\n\n";

/* What fill parses besides the common options; -z and -fel land here too. */
typedef struct {
  tr_fill_dem_opts o;
  const char *z, *fel;
} fill_args;

static int out_type(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row;
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  GDALDataType t = GDALGetDataTypeByName(v);
  if (t == GDT_Unknown || GDALDataTypeIsComplex(t)) {
    tf_usage_error(cli, "-ot: '%s' is not a real GDAL data type (Byte, Int16, ..., Float64)", v);
    return TF_ARG_ERROR;
  }
  ((fill_args *)base)->o.out_type = (int)t;
  return TF_ARG_TAKEN;
}

/* --epsilon-step implies --epsilon */
static int epsilon_on(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)cli, (void)row, (void)argc, (void)argv, (void)i;
  ((fill_args *)base)->o.epsilon = 1;
  return TF_ARG_TAKEN;
}

#define O(f) offsetof(fill_args, f)
static const tf_opt rows[] = {
    {.kind = TF_STR,
     .names = "-z",
     .arg = "DEM",
     .off = O(z),
     .role = TF_ROLE_IN,
     .doc = "the DEM (TauDEM's spelling)"},
    {.kind = TF_STR,
     .names = "-fel",
     .arg = "OUT",
     .off = O(fel),
     .role = TF_ROLE_OUT,
     .doc = "the filled DEM written (TauDEM's spelling)"},
    {.kind = TF_CUSTOM,
     .names = "-ot",
     .arg = "TYPE",
     .fn = out_type,
     .doc = "output data type (Byte ... Float64; default Float32)"},
    {.kind = TF_FLAG,
     .names = "--epsilon",
     .off = O(o.epsilon),
     .doc = "no flats: every cell drains strictly downhill"},
    {.kind = TF_DOUBLE,
     .names = "--epsilon-step",
     .arg = "E",
     .off = O(o.epsilon_step),
     .lo = 0,
     .lo_open = 1,
     .hi = INFINITY,
     .fn = epsilon_on,
     .doc = "the increment of --epsilon (default: one float ulp)"},
    TF_OPT_END,
};

const tf_opt_set tf_fill_set = {
    .cmd = "fill",
    .head = head,
    .column = 25,
    .groups = {{rows, 0}, {tf_graph_opts_rows, O(o.graph)}, {tf_burn_opts_rows, O(o.burn)}, {tf_common_opts, O(o.run)}},
    .last_positional = 1};
#undef O

int tf_fill_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "fill", .set = &tf_fill_set};
  fill_args fa = {.z = NULL, .fel = NULL};
  tr_fill_dem_opts_init(&fa.o);
  int code;
  if (tf_cli_parse(&cli, &fa, argc, argv, &code)) return code;
  if (fa.z || fa.fel) {
    if (!fa.z || !fa.fel) return tf_usage_error(&cli, "-z and -fel go together");
    if (cli.npositional) return tf_usage_error(&cli, "give either -z DEM -fel OUT or DEM OUT, not both");
  } else if (cli.npositional != 2) {
    return tf_usage_error(&cli, "expected DEM and OUT file names");
  } else {
    fa.z = cli.positional[0];
    fa.fel = cli.positional[1];
  }
  tf_cli_finish(&cli, &fa.o.run);
  tr_error err = {{0}};
  return tf_report(&cli, tr_fill_dem(&fa.o, fa.z, fa.fel, &err), &err);
}
