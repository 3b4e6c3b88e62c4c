/*
 * commands.c - the table of terrafort's commands: name, entry point, summary
 * and the files each writes (tools.h, tf_io).
 *
 * It is a file of its own, below main.c, because two readers need it: main.c
 * dispatches and lists the commands from it, and `terrafort batch`
 * (batch_jobs.c) reads a job's outputs from its row. A new command is its
 * file and one row here.
 */
#include <string.h>

#include "tools.h"

/* Own options taking values (NAME or NAME:COUNT; -clipsrc:box takes 4 when
 * its first value is a number), own output options (NAME? : an output only
 * when a DEM is given), whether the last of >= 2 file names is the output,
 * and whether the AAP engine's options apply (cli.c holds the common ones). */
#define TF_GRAPH_IO 1
static const tf_command commands[] = {
    {"slope", tf_slope_main, "slope in degrees or percent (gdaldem slope)", {"-s -scale -alg", "", 1, 0}},
    {"aspect", tf_aspect_main, "aspect in degrees (gdaldem aspect)", {"-alg", "", 1, 0}},
    {"hillshade", tf_hillshade_main, "shaded relief (gdaldem hillshade)",
     {"-z -s -scale -az -azimuth -alt -altitude -alg", "", 1, 0}},
    {"tri", tf_tri_main, "terrain ruggedness index (gdaldem TRI)", {"-alg", "", 1, 0}},
    {"tpi", tf_tpi_main, "topographic position index (gdaldem TPI)", {"", "", 1, 0}},
    {"roughness", tf_roughness_main, "roughness (gdaldem roughness)", {"", "", 1, 0}},
    {"color-relief", tf_color_relief_main, "colour a DEM through a colour table (gdaldem color-relief)", {"", "", 1, 0}},
    {"fill", tf_fill_main, "fill depressions (TauDEM pitremove)", {"-z -ot --epsilon-step", "-fel", 1, TF_GRAPH_IO}},
    {"flowgraph", tf_flowgraph_main, "D8 accumulation, streams, order, basins, network (TauDEM)",
     {"--dir-in --weights -wg --filled-in -fel -nf -z --outlets -o --dir-encoding --units --acc-type --basins-by "
      "--snap -md --threshold -thresh",
      "--dir --acc -ad8 --streams -src --order -ord --basins -w --network -net --slope -sd8 -p?", 0, TF_GRAPH_IO}},
    {"interpolate", tf_interpolate_main, "scattered points to a grid (gdal_grid)",
     {"-a -zfield -where -sql -a_srs -clipsrclayer -clipsrcwhere -clipsrcsql -z_increase -z_multiply -txe:2 -tye:2 "
      "-tr:2 -spat:4 -outsize:2 -clipsrc:box -ot -l -oo -md -si --tmp",
      "", 1, 0}},
    {"smooth", tf_smooth_main, "iterated 3x3 mean filter", {"--passes", "", 1, 0}},
    {"batch", tf_batch_main, "run many terrafort jobs, dynamically over mpirun's ranks", {NULL, NULL, 0, 0}},
};

const tf_command *tf_command_find(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(name, commands[i].name)) return &commands[i];
  return NULL;
}

const tf_command *tf_commands(size_t *n) {
  *n = sizeof commands / sizeof commands[0];
  return commands;
}

const tf_io *tf_command_io(const char *name) {
  const tf_command *c = tf_command_find(name);
  return c ? &c->io : NULL;
}
