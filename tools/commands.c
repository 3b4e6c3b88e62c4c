/*
 * commands.c - the table of terrafort's commands: name, entry point, summary
 * and the files each writes (tools.h, tf_io).
 *
 * It is a file of its own, below main.c, because two readers need it: main.c
 * dispatches and lists the commands from it, and `terrafort batch`
 * (batch_jobs.c) reads a job's outputs from its row. A new command is its
 * file and one row here.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tools.h"

/* Own options taking values (NAME or NAME:COUNT; -clipsrc:box takes 4 when
 * its first value is a number), own output options (NAME? : an output only
 * when a DEM is given), whether the last of >= 2 file names is the output,
 * and whether the AAP engine's options apply (cli.c holds the common ones). */
#define TF_GRAPH_IO 1
static const tf_command commands[] = {
    {.name = "slope",
     .main = tf_slope_main,
     .summary = "slope in degrees or percent (gdaldem slope)",
     .io = {.values = "-s -scale -alg", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "aspect",
     .main = tf_aspect_main,
     .summary = "aspect in degrees (gdaldem aspect)",
     .io = {.values = "-alg", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "hillshade",
     .main = tf_hillshade_main,
     .summary = "shaded relief (gdaldem hillshade)",
     .io =
         {.values = "-z -s -scale -az -azimuth -alt -altitude -alg", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "tri",
     .main = tf_tri_main,
     .summary = "terrain ruggedness index (gdaldem TRI)",
     .io = {.values = "-alg", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "tpi",
     .main = tf_tpi_main,
     .summary = "topographic position index (gdaldem TPI)",
     .io = {.values = "", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "roughness",
     .main = tf_roughness_main,
     .summary = "roughness (gdaldem roughness)",
     .io = {.values = "", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "color-relief",
     .main = tf_color_relief_main,
     .summary = "colour a DEM through a colour table (gdaldem color-relief)",
     .io = {.values = "", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "fill",
     .main = tf_fill_main,
     .summary = "fill depressions (TauDEM pitremove)",
     .io = {.values = "-z -ot --epsilon-step --burn --burn-depth --burn-layer",
            .outputs = "-fel",
            .last_positional = 1,
            .graph = TF_GRAPH_IO}},
    {.name = "breach",
     .main = tf_breach_main,
     .summary = "breach depressions (Lindsay 2016, RichDEM)",
     .io = {.values = "--mode --max-length --max-depth --burn --burn-depth --burn-layer", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "flowgraph",
     .main = tf_flowgraph_main,
     .summary = "D8, D-infinity and MFD accumulation, streams, order, basins, network, lengths, sca, twi, spi, HAND (TauDEM)",
     .io = {.values = "--dir-in --ang-in --slp-in --sca-in --weights -wg --filled-in -fel -nf -z --outlets -o --dir-encoding --units --acc-type "
                      "--basins-by --snap -md --threshold -thresh --method --snap-distance --id-field --holmgren-x --freeman-p "
                      "--streams-in --acc-in -m:2 --seed "
                      "--burn --burn-depth --burn-layer",
            .outputs = "--dir --acc -ad8 --streams -src --order -ord --basins -w --network -net --slope -sd8 "
                       "--basin-stats --ang -ang --slp -slp --sca -sca --twi -twi --spi --moved-outlets -om --outlet-table -id -gw "
                       "--hand -dd --d8-dist -dist --plen -plen --tlen -tlen --gord -gord --tree -tree --coord -coord -p?",
            .last_positional = 0,
            .graph = TF_GRAPH_IO,
            .forms = {{.all = "-p -src -ad8", .any = "-ord -tree -coord -net -w", .none = "", .reads = "-src -ad8"},
                      {.all = "-ang",
                       .any = "-sca --sca",
                       .none = "-fel --filled-in -slp --slp -twi --twi -dd --hand -dist --d8-dist --ang-in --dir-in",
                       .reads = "-ang"},
                      {.all = "-slp -sca",
                       .any = "-twi --twi",
                       .none = "-z -fel --filled-in -ang --ang -dd --hand -dist --d8-dist --ang-in --dir-in --slp-in --sca-in",
                       .reads = "-slp -sca"},
                      {.all = "-ang -fel -src -dd",
                       .any = "-dd",
                       .none = "-z -p -ad8 -ord -net -w -slp --slp -sca --sca -twi --twi -dist --d8-dist --ang-in --dir-in "
                               "--streams-in",
                       .reads = "-ang -src"},
                      {.all = "-p -src -o", .any = "-om", .none = "-z -ad8 -ord -tree -coord -net", .reads = "-src"}}}},
    {.name = "interpolate",
     .main = tf_interpolate_main,
     .summary = "scattered points to a grid (gdal_grid)",
     .io = {.values = "-a -zfield -where -sql -a_srs -clipsrclayer -clipsrcwhere -clipsrcsql -z_increase -z_multiply "
                      "-txe:2 -tye:2 -tr:2 -spat:4 -outsize:2 -clipsrc:box -ot -l -oo -md -si --tmp",
            .outputs = "",
            .last_positional = 1,
            .graph = 0}},
    {.name = "smooth",
     .main = tf_smooth_main,
     .summary = "iterated 3x3 mean filter",
     .io = {.values = "--passes", .outputs = "", .last_positional = 1, .graph = 0}},
    {.name = "batch",
     .main = tf_batch_main,
     .summary = "run many terrafort jobs, dynamically over mpirun's ranks",
     .io = {.values = NULL, .outputs = NULL, .last_positional = 0, .graph = 0}},
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

const tf_io *tf_command_io(const char *name) {
  const tf_command *c = tf_command_find(name);
  return c ? &c->io : NULL;
}

const char *tf_option_suggest(const char *help, const char *opt, char *buf, size_t len) {
  int best = 3, ambiguous = 0;
  char prefix[64] = "";
  const size_t n = strlen(opt);
  buf[0] = '\0';
  for (const char *p = help; p && *p; p++) {
    /* a flag: a word starting with '-' wherever the help names one (option lines,
     * usage lines, "a, b, c" and "a | b" lists, "[-x]") */
    if (*p != '-' || (p != help && !strchr("\n ,|[(", p[-1]))) continue;
    size_t k = 0;
    char word[64];
    while (p[k] && (p[k] == '-' || p[k] == '_' || isalnum((unsigned char)p[k])) && k < sizeof word - 1) {
      word[k] = p[k];
      k++;
    }
    word[k] = '\0';
    if (k < 2 || !isalpha((unsigned char)word[k > 2 && word[1] == '-' ? 2 : 1])) continue;
    const int e = tf_edits(opt, word);
    if (e < best && (size_t)e + 1 < n) {
      best = e;
      snprintf(buf, len, "%s", word);
    }
    if (n >= 4 && !strncmp(word, opt, n)) {
      if (!prefix[0]) snprintf(prefix, sizeof prefix, "%s", word);
      else if (strcmp(word, prefix)) ambiguous = 1;
    }
    p += k - 1;
  }
  if (buf[0]) return buf;
  if (prefix[0] && !ambiguous) {
    snprintf(buf, len, "%s", prefix);
    return buf;
  }
  return NULL;
}
