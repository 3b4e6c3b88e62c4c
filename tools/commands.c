/*
 * commands.c - the table of terrafort's commands: name, entry point, summary,
 * option table (options.h) and TauDEM forms (tools.h, tf_io_form).
 *
 * It is a file of its own, below main.c, because two readers need it: main.c
 * dispatches and lists the commands from it, and `terrafort batch`
 * (batch_jobs.c) reads a job's outputs from its row's option table. A new
 * command is its file (its options' table, options.h) and one row here.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tools.h"

static const tf_command commands[] = {
    {.name = "slope", .main = tf_slope_main, .summary = "slope in degrees or percent (gdaldem slope)", .opts = &tf_slope_set},
    {.name = "aspect", .main = tf_aspect_main, .summary = "aspect in degrees (gdaldem aspect)", .opts = &tf_aspect_set},
    {.name = "hillshade", .main = tf_hillshade_main, .summary = "shaded relief (gdaldem hillshade)", .opts = &tf_hillshade_set},
    {.name = "tri", .main = tf_tri_main, .summary = "terrain ruggedness index (gdaldem TRI)", .opts = &tf_tri_set},
    {.name = "tpi", .main = tf_tpi_main, .summary = "topographic position index (gdaldem TPI)", .opts = &tf_tpi_set},
    {.name = "roughness", .main = tf_roughness_main, .summary = "roughness (gdaldem roughness)", .opts = &tf_roughness_set},
    {.name = "color-relief",
     .main = tf_color_relief_main,
     .summary = "colour a DEM through a colour table (gdaldem color-relief)",
     .opts = &tf_color_relief_set},
    {.name = "fill",
     .main = tf_fill_main,
     .summary = "fill depressions (TauDEM pitremove)",
     .opts = &tf_fill_set,
     .graph_heap = 1},
    {.name = "breach", .main = tf_breach_main, .summary = "breach depressions (Lindsay 2016, RichDEM)", .opts = &tf_breach_set},
    {.name = "flowgraph",
     .main = tf_flowgraph_main,
     .summary = "D8, D-infinity and MFD accumulation, streams, order, basins, network, lengths, sca, twi, spi, HAND (TauDEM)",
     .opts = &tf_flowgraph_set,
     .forms = tf_flowgraph_forms,
     .graph_heap = 1},
    {.name = "interpolate", .main = tf_interpolate_main, .summary = "scattered points to a grid (gdal_grid)", .opts = &tf_interpolate_set},
    {.name = "smooth", .main = tf_smooth_main, .summary = "iterated 3x3 mean filter", .opts = &tf_smooth_set},
    {.name = "batch", .main = tf_batch_main, .summary = "run many terrafort jobs, dynamically over mpirun's ranks",
     .opts = &tf_batch_set,
     .not_a_job = 1},
};

/* By its name, in any case: gdaldem's own spellings (TRI, TPI) name the
 * same modes. */
const tf_command *tf_command_find(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcasecmp(name, commands[i].name)) return &commands[i];
  return NULL;
}

/* Edits (insert, delete, substitute, swap two neighbours) from a to b,
 * ignoring case; stops counting past 3. */
int tf_edits(const char *a, const char *b) {
  const size_t n = strlen(a), m = strlen(b);
  if (n > 32 || m > 32) return 4;
  int d[33][33];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      const int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
      int v = d[i - 1][j - 1] + !same;
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m] > 3 ? 4 : d[n][m];
}

const char *tf_command_suggest(const char *name) {
  const char *best = NULL;
  int bd = 3; /* at most 2 edits, and fewer than the name's own length */
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    const int e = tf_edits(name, commands[i].name);
    if (e < bd && (size_t)e < strlen(name)) bd = e, best = commands[i].name;
  }
  if (best) return best;
  /* a leading part of exactly one command ("flow", "interp") */
  const size_t n = strlen(name);
  for (size_t i = 0; n >= 3 && i < sizeof commands / sizeof commands[0]; i++)
    if (!strncasecmp(name, commands[i].name, n)) {
      if (best) return NULL;
      best = commands[i].name;
    }
  return best;
}

const tf_command *tf_commands(size_t *n) {
  *n = sizeof commands / sizeof commands[0];
  return commands;
}

const tf_io_form *tf_io_form_of(const tf_command *c, int argc, char *const *argv) {
  for (int f = 0; c->forms && f < TF_IO_FORMS && c->forms[f].name; f++)
    if (tr_argv_form(c->forms[f].all, c->forms[f].any, c->forms[f].none, argc, argv)) return &c->forms[f];
  return NULL;
}
